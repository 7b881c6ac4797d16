//! The registry at scale: with 10,000 tools on `main`, the time to approve one candidate and the
//! time of `toolsmith tools --json` (goal: under 100 ms each, end to end through the CLI), and
//! how much the repository grows per tool version (loose objects as written, and packed by
//! `git gc` when git is installed).
//!
//! The 10,000 tools are written in one commit with git2 (valid manifests, digests and index);
//! each measured approval is a real proposal made with `Registry::propose` first (not timed).
//! In-process calls and the CLI alternate round by round; figures are medians and the 10th–90th
//! percentile spread.
//!
//! Also `toolsmith mcp` over its stdio protocol with every tool tagged as approved: a session's
//! first `tools/list` (process start and `initialize` included), then `tools/list` and a
//! `toolsmith_search` call on the open session, alternating with the rounds above.
//!
//! `cargo bench --bench registry_scale` (`TOOLSMITH_BENCH_TOOLS`, default 10000;
//! `TOOLSMITH_BENCH_ROUNDS`, default 15).

// A benchmark may panic on what it sets up itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use git2::{Repository, Signature};
use toolsmith::generate::spec::ToolSpec;
use toolsmith::generate::template;
use toolsmith::package::digest::digest;
use toolsmith::package::manifest::{Manifest, TestCounts, Validation};
use toolsmith::registry::index::{self, Row};
use toolsmith::registry::repo::{Proposal, Registry};

#[path = "support/mcp.rs"]
mod mcp;
use mcp::Mcp;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn summary(label: &str, mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    let median = percentile(&ms, 0.5);
    println!(
        "{label:<44} median {median:>8.2} ms  (p10 {:.2}, p90 {:.2}, n={})",
        percentile(&ms, 0.1),
        percentile(&ms, 0.9),
        ms.len()
    );
    median
}

/// A validated tool's files, named `name`.
fn tool_files(
    base: &BTreeMap<String, String>,
    manifest: &Manifest,
    name: &str,
) -> BTreeMap<String, String> {
    let mut files = base.clone();
    let mut m = manifest.clone();
    m.name = name.to_owned();
    files.insert(
        "README.md".into(),
        format!("# {name}\n\nBuilds one package.\n"),
    );
    m.validation = Some(Validation {
        checks: vec!["manifest".into(), "sh -n run.sh".into()],
        tests: TestCounts {
            passed: 4,
            failed: 0,
        },
        runtime_ms: 40,
        peak_memory_kb: None,
        digest: digest(&files),
    });
    files.insert("tool.yaml".into(), m.to_yaml());
    files
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn main() {
    let tools: usize = std::env::var("TOOLSMITH_BENCH_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let rounds: usize = std::env::var("TOOLSMITH_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let toolsmith = env!("CARGO_BIN_EXE_toolsmith");
    let tmp = tempfile::tempdir().expect("tempdir");
    // TOOLSMITH_BENCH_KEEP=DIR: build there and leave it (with one proposal, `c-profile`,
    // awaiting review) for profiling by hand.
    let keep = std::env::var_os("TOOLSMITH_BENCH_KEEP").map(PathBuf::from);
    let tmp_path = keep.clone().unwrap_or_else(|| tmp.path().to_owned());
    let data = tmp_path.join("data");
    // With --state, every command finds the registry beside the state.
    let dir: PathBuf = tmp_path.join("state/registry");
    let registry = Registry::open_or_init(&dir, &tmp_path.join("state")).expect("registry");

    // One real tool from the offline generator, copied under 10,000 names.
    let spec = ToolSpec::from_request(
        "Build one package",
        &[
            "make build -C core".to_owned(),
            "make build -C cli".to_owned(),
        ],
        &|_| false,
    )
    .expect("spec");
    let base = template::generate(&spec, semver::Version::new(1, 0, 0)).expect("files");
    let manifest = Manifest::parse(&base["tool.yaml"], "tool.yaml").expect("manifest");

    let started = Instant::now();
    let repo = Repository::open(&dir).expect("open");
    let write_tool = |files: &BTreeMap<String, String>| {
        let mut tests = repo.treebuilder(None).expect("tb");
        let cases = repo
            .blob(files["tests/cases.json"].as_bytes())
            .expect("blob");
        tests.insert("cases.json", cases, 0o100644).expect("insert");
        let tests = tests.write().expect("tests tree");
        let mut tb = repo.treebuilder(None).expect("tb");
        for (name, content) in files.iter().filter(|(n, _)| !n.contains('/')) {
            let blob = repo.blob(content.as_bytes()).expect("blob");
            let mode = if name == "run.sh" { 0o100755 } else { 0o100644 };
            tb.insert(name, blob, mode).expect("insert");
        }
        tb.insert("tests", tests, 0o040000).expect("insert");
        tb.write().expect("tool tree")
    };
    let mut tools_tb = repo.treebuilder(None).expect("tb");
    let mut rows = Vec::with_capacity(tools);
    for i in 0..tools {
        let name = format!("tool-{i:05}");
        let files = tool_files(&base, &manifest, &name);
        tools_tb
            .insert(&name, write_tool(&files), 0o040000)
            .expect("insert");
        rows.push(Row {
            name,
            version: "1.0.0".into(),
            description: manifest.description.clone(),
            deprecated: false,
        });
    }
    let tools_tree = tools_tb.write().expect("tools tree");
    let head = repo.head().expect("head").peel_to_commit().expect("commit");
    let mut root = repo
        .treebuilder(Some(&head.tree().expect("tree")))
        .expect("tb");
    root.insert("tools", tools_tree, 0o040000).expect("insert");
    let index_blob = repo.blob(index::render(&rows).as_bytes()).expect("blob");
    root.insert(index::FILE_NAME, index_blob, 0o100644)
        .expect("insert");
    let tree = repo.find_tree(root.write().expect("root")).expect("tree");
    let sig = Signature::now("bench", "bench@localhost").expect("sig");
    repo.commit(
        Some("HEAD"),
        &sig,
        &sig,
        &format!("{tools} tools"),
        &tree,
        &[&head],
    )
    .expect("commit");
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_head(Some(&mut checkout)).expect("checkout");
    // Every tool approved: its annotated tag, as `toolsmith approve` makes it.
    let head = repo
        .head()
        .expect("head")
        .peel(git2::ObjectType::Commit)
        .expect("commit");
    for i in 0..tools {
        repo.tag(
            &format!("tool-{i:05}/v1.0.0"),
            &head,
            &sig,
            "approved",
            false,
        )
        .expect("tag");
    }
    println!(
        "registry with {tools} tools written in {:.1} s ({:.1} MiB of objects, loose)",
        started.elapsed().as_secs_f64(),
        dir_bytes(&dir.join(".git/objects")) as f64 / 1048576.0
    );

    let cli = |args: &[&str]| {
        let mut cmd = Command::new(toolsmith);
        cmd.env("XDG_DATA_HOME", &data)
            .env("XDG_CONFIG_HOME", tmp_path.join("config"))
            .env("HOME", tmp_path.join("home"))
            .arg("--state")
            .arg(tmp_path.join("state"))
            .args(args);
        cmd
    };
    // Tags made outside toolsmith approve nothing until a person vouches for them: sealed in
    // the ledger with the state directory's key, as `toolsmith reapprove --yes` does.
    let out = cli(&["reapprove", "--yes"]).output().expect("reapprove");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Sanity: the CLI sees every tool.
    let out = cli(&["--json", "tools"]).output().expect("tools");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(tools),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A daemon on the same state and registry: `toolsmith approve` goes through it when it
    // runs. Its socket is what the CLI finds; `--socket` to a path without one makes the CLI
    // approve in process.
    let socket = tmp_path.join("state/run/control.sock");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_toolsmithd"))
        .env("XDG_DATA_HOME", &data)
        .env("XDG_CONFIG_HOME", tmp_path.join("config"))
        .env("HOME", tmp_path.join("home"))
        .arg("--state")
        .arg(tmp_path.join("state"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolsmithd");
    let waited = Instant::now();
    while !socket.exists() && waited.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(socket.exists(), "toolsmithd did not start");
    // Let its first look at the registry finish.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let no_socket = tmp_path.join("no-daemon.sock");
    let objects_before = dir_bytes(&dir.join(".git/objects"));
    let mcp_command = || cli(&["mcp"]);
    let mut mcp = Mcp::start(mcp_command());
    let mut mcp_first = Vec::new();
    let mut mcp_list = Vec::new();
    let mut mcp_search = Vec::new();
    let mut tools_cli = Vec::new();
    let mut tools_lib = Vec::new();
    let mut approve_cli = Vec::new();
    let mut approve_daemon = Vec::new();
    let mut approve_lib = Vec::new();
    for round in 0..rounds {
        // toolsmith tools --json, through the CLI and in process.
        let t = Instant::now();
        let out = cli(&["--json", "tools"]).output().expect("tools");
        assert!(out.status.success());
        tools_cli.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let listed = registry.tools().expect("tools");
        let json = serde_json::to_vec(&listed).expect("json");
        assert!(json.len() > tools);
        tools_lib.push(t.elapsed().as_secs_f64() * 1000.0);

        // MCP: a new session's first list, then a list and a search on the open session.
        let t = Instant::now();
        let mut fresh = Mcp::start(mcp_command());
        let listed = fresh.call("tools/list", serde_json::json!({}));
        mcp_first.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(
            listed["result"]["tools"].as_array().map_or(0, Vec::len) > 2,
            "{listed}"
        );
        drop(fresh);
        let t = Instant::now();
        let listed = mcp.call("tools/list", serde_json::json!({}));
        mcp_list.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(listed["result"]["tools"].is_array(), "{listed}");
        let t = Instant::now();
        let wanted = tools / 2;
        let found = mcp.call(
            "tools/call",
            serde_json::json!({
                "name": "toolsmith_search",
                "arguments": {"query": format!("tool {wanted:05}")}
            }),
        );
        mcp_search.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(
            found["result"]["structuredContent"]["tools"][0]["name"],
            format!("tool-{wanted:05}"),
            "{found}"
        );

        // One approval each way, of a fresh proposal (made first, not timed).
        for way in ["cli", "daemon", "lib"] {
            let name = format!("new-tool-{round:03}-{way}");
            let candidate = format!("c-bench{round:03}{way}");
            registry
                .propose(&Proposal {
                    candidate: candidate.clone(),
                    files: tool_files(&base, &manifest, &name),
                    why: "benchmark".into(),
                    trailers: Vec::new(),
                })
                .expect("propose");
            let t = Instant::now();
            match way {
                "cli" => {
                    let out = cli(&["--socket"])
                        .arg(&no_socket)
                        .args(["approve", &candidate])
                        .output()
                        .expect("approve");
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    approve_cli.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                "daemon" => {
                    let out = cli(&["approve", &candidate]).output().expect("approve");
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    approve_daemon.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                _ => {
                    registry
                        .approve(&candidate, "bench", None)
                        .expect("approve");
                    approve_lib.push(t.elapsed().as_secs_f64() * 1000.0);
                }
            }
        }
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    println!("with {tools} tools on main:");
    summary("toolsmith approve (CLI alone, end to end)", approve_cli);
    let a = summary("toolsmith approve (CLI, daemon running)", approve_daemon);
    summary("Registry::approve (in process)", approve_lib);
    let l = summary("toolsmith --json tools (CLI, end to end)", tools_cli);
    summary("Registry::tools + JSON (in process)", tools_lib);
    let listed_count = mcp.call("tools/list", serde_json::json!({}))["result"]["tools"]
        .as_array()
        .map_or(0, Vec::len);
    summary(
        &format!("toolsmith mcp: first tools/list of a session ({listed_count} tools listed)"),
        mcp_first,
    );
    summary("toolsmith mcp: tools/list on an open session", mcp_list);
    summary(
        "toolsmith mcp: toolsmith_search on an open session",
        mcp_search,
    );
    drop(mcp);
    println!(
        "goal < 100 ms each: approve (daemon running) {}, tools {}",
        if a < 100.0 { "met" } else { "NOT met" },
        if l < 100.0 { "met" } else { "NOT met" }
    );
    let versions = 3 * rounds;
    let objects_after = dir_bytes(&dir.join(".git/objects"));
    println!(
        "repository growth per tool version: {:.1} KiB loose ({versions} versions, {:.1} MiB)",
        (objects_after - objects_before) as f64 / versions as f64 / 1024.0,
        (objects_after - objects_before) as f64 / 1048576.0
    );
    if keep.is_some() {
        registry
            .propose(&Proposal {
                candidate: "c-profile".into(),
                files: tool_files(&base, &manifest, "profiled-tool"),
                why: "profiling".into(),
                trailers: Vec::new(),
            })
            .expect("propose");
        println!("kept in {}", tmp_path.display());
        return;
    }
    let gc = Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["gc", "-q"])
        .status();
    if matches!(gc, Ok(s) if s.success()) {
        let packed = dir_bytes(&dir.join(".git/objects"));
        println!(
            "after git gc: {:.1} MiB for {} tool versions: {:.2} KiB per version",
            packed as f64 / 1048576.0,
            tools + versions,
            packed as f64 / (tools + versions) as f64 / 1024.0
        );
    } else {
        println!("git not installed: packed size not measured");
    }
}
