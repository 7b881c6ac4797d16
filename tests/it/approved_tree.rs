//! What a run executes is the tree that was approved, read from git — never the work tree,
//! which any process of the user can change or swap between the check and the run (issue 28).

use crate::common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::{PATIENCE, TestEnv, json_of};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::{Map, Value, json};

/// What the swapped-in code prints: never seen, whoever asks for the run.
const SWAPPED: &str = "SWAPPED-IN CODE RAN";

/// A workspace with a `core` package whose Makefile has a `build` target.
fn workspace(env: &TestEnv) -> PathBuf {
    let ws = env.path().join("ws");
    std::fs::create_dir_all(ws.join("core")).expect("mkdir");
    std::fs::write(
        ws.join("core/Makefile"),
        "build:\n\t@echo built $(notdir $(CURDIR))\n",
    )
    .expect("write Makefile");
    ws
}

/// Asks for and approves a tool running `make build -C <dir>`; its name.
fn approved_build_tool(env: &TestEnv) -> String {
    let out = env
        .cli()
        .args(["--json", "new", "Build one package"])
        .args(["--example", "make build -C core"])
        .args(["--example", "make build -C cli"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let id = made["id"].as_str().expect("id");
    env.cli().args(["approve", id]).assert().success();
    made["tool"].as_str().expect("tool").to_owned()
}

fn tool_dir(env: &TestEnv, name: &str) -> PathBuf {
    env.state().join("registry/tools").join(name)
}

/// A copy of the tool's directory, beside the registry on the same file system, whose entry
/// point prints [`SWAPPED`].
fn evil_copy(env: &TestEnv, name: &str) -> PathBuf {
    let evil = env.path().join("evil");
    std::fs::create_dir_all(&evil).expect("mkdir");
    for entry in walk(&tool_dir(env, name)) {
        let rel = entry.strip_prefix(tool_dir(env, name)).expect("inside");
        let to = evil.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&entry, &to).expect("copy");
    }
    std::fs::write(
        evil.join("run.sh"),
        format!("#!/bin/sh\necho '{SWAPPED}'\n"),
    )
    .expect("write");
    evil
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("no NUL")
}

/// Swaps `a` and `b` until `stop`, as an attacker would: `renameat2(RENAME_EXCHANGE)` (one
/// atomic step) when `exchange`, else three plain renames (`mv`). Returns how many swaps.
fn swap_loop(a: PathBuf, b: PathBuf, exchange: bool, stop: Arc<AtomicBool>) -> u64 {
    let (ca, cb) = (c_path(&a), c_path(&b));
    let tmp = a.with_extension("swap-tmp");
    let ct = c_path(&tmp);
    let mut swaps = 0;
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: valid C strings, alive for the calls.
        let ok = unsafe {
            if exchange {
                libc::renameat2(
                    libc::AT_FDCWD,
                    ca.as_ptr(),
                    libc::AT_FDCWD,
                    cb.as_ptr(),
                    libc::RENAME_EXCHANGE,
                ) == 0
            } else {
                libc::rename(ca.as_ptr(), ct.as_ptr()) == 0
                    && libc::rename(cb.as_ptr(), ca.as_ptr()) == 0
                    && libc::rename(ct.as_ptr(), cb.as_ptr()) == 0
            }
        };
        assert!(ok, "swap: {}", std::io::Error::last_os_error());
        swaps += 1;
        std::thread::yield_now();
    }
    swaps
}

/// Puts the approved directory back in place (the loop may stop with the copy there).
fn restore(env: &TestEnv, name: &str, evil: &Path) {
    let run = std::fs::read_to_string(tool_dir(env, name).join("run.sh")).expect("read");
    if run.contains(SWAPPED) {
        let tmp = evil.with_extension("back");
        std::fs::rename(tool_dir(env, name), &tmp).expect("rename");
        std::fs::rename(evil, tool_dir(env, name)).expect("rename");
        std::fs::rename(&tmp, evil).expect("rename");
    }
}

#[derive(Default)]
struct Tally {
    ran: AtomicU64,
    refused: AtomicU64,
    swapped: AtomicU64,
    /// Refusals that are not the work tree found different from main.
    odd: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    fn count(&self, ok: bool, output: &str) {
        if output.contains(SWAPPED) {
            self.swapped.fetch_add(1, Ordering::Relaxed);
        } else if ok && output.contains("built core") {
            self.ran.fetch_add(1, Ordering::Relaxed);
        } else {
            if !output.contains("differ from main") {
                self.odd.lock().expect("lock").push(output.to_owned());
            }
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// `tools/call`s of `name` on one open `toolsmith mcp` session in `ws`.
async fn mcp_calls(env: &TestEnv, ws: &Path, name: &str, calls: usize, tally: &Tally) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut command);
    command
        .arg("--state")
        .arg(env.state())
        .arg("mcp")
        .current_dir(ws);
    let transport =
        TokioChildProcess::new(tokio::process::Command::from(command)).expect("spawn server");
    let service = tokio::time::timeout(
        PATIENCE,
        Client.serve_with_lifecycle(transport, ClientLifecycleMode::Initialize),
    )
    .await
    .expect("the session starts in time")
    .expect("the session starts");
    for _ in 0..calls {
        let Value::Object(arguments) = json!({"dir": "core"}) else {
            unreachable!()
        };
        let arguments: Map<String, Value> = arguments;
        let result = tokio::time::timeout(
            Duration::from_secs(60),
            service
                .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)),
        )
        .await
        .expect("tools/call in time")
        .expect("a refusal is a result");
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        tally.count(result.is_error != Some(true), &text);
    }
    service.cancel().await.expect("close");
}

fn cli_run(env: &TestEnv, ws: &Path, name: &str, tally: &Tally) {
    let out = env
        .cli()
        .args(["run", name, "--param", "dir=core", "--workspace"])
        .arg(ws)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    tally.count(out.status.success(), &text);
}

/// Runs while a loop swaps the tool's directory with a copy whose entry point was replaced:
/// of ≥ 100 runs by the CLI and ≥ 60 by MCP, under both kinds of swap, none runs the copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_directory_swapped_in_a_loop_never_runs_the_swapped_code() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let name = approved_build_tool(&env);
    let evil = evil_copy(&env, &name);
    let tally = Tally::default();
    for exchange in [true, false] {
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (a, b, stop) = (tool_dir(&env, &name), evil.clone(), Arc::clone(&stop));
            std::thread::spawn(move || swap_loop(a, b, exchange, stop))
        };
        for _ in 0..50 {
            cli_run(&env, &ws, &name, &tally);
        }
        mcp_calls(&env, &ws, &name, 30, &tally).await;
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().expect("the swap loop");
        assert!(swaps > 100, "the loop swapped only {swaps} times");
        restore(&env, &name, &evil);
    }
    let (ran, refused, swapped) = (
        tally.ran.load(Ordering::Relaxed),
        tally.refused.load(Ordering::Relaxed),
        tally.swapped.load(Ordering::Relaxed),
    );
    eprintln!("{ran} ran the approved code, {refused} refused, {swapped} ran the swapped code");
    assert_eq!(ran + refused + swapped, 160);
    assert_eq!(
        swapped, 0,
        "{swapped} of 160 runs ran the swapped-in code ({ran} ran the approved code, {refused} \
         were refused)"
    );
    assert!(ran > 0, "no run ran at all ({refused} refused)");
    let odd = tally.odd.lock().expect("lock");
    assert!(odd.is_empty(), "refused for another reason: {odd:?}");
    // Without the swap, the tool runs as approved.
    let calm = Tally::default();
    cli_run(&env, &ws, &name, &calm);
    assert_eq!(calm.ran.load(Ordering::Relaxed), 1);
}

/// Deleting the tool's files from the work tree after approval: `run` and MCP refuse, naming
/// the file and how to restore it (what runs comes from git, but a work tree that differs
/// from main is a change someone made, which `toolsmith verify` reports too); restored, it
/// runs the approved code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_deleted_from_the_work_tree_is_refused_with_how_to_restore_it() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let name = approved_build_tool(&env);
    let run = tool_dir(&env, &name).join("run.sh");
    std::fs::remove_file(&run).expect("delete run.sh");
    let out = env
        .cli()
        .args(["run", &name, "--param", "dir=core", "--workspace"])
        .arg(&ws)
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains(&format!("tools/{name}/run.sh")) && err.contains("git checkout --"),
        "{err}"
    );
    let tally = Tally::default();
    mcp_calls(&env, &ws, &name, 1, &tally).await;
    assert_eq!(tally.refused.load(Ordering::Relaxed), 1);
    common::tamper::git(&env, &["checkout", "--", &format!("tools/{name}")]);
    let tally = Tally::default();
    cli_run(&env, &ws, &name, &tally);
    mcp_calls(&env, &ws, &name, 1, &tally).await;
    assert_eq!(tally.ran.load(Ordering::Relaxed), 2);
}
