//! What starting things costs, with the contenders alternating within each round so that all
//! see the same machine load; the figures are the median and the spread (10th–90th percentile)
//! over the rounds, and ratios of the medians against the goals of issue 18:
//!
//! - `toolsmith::sandbox::run(/bin/true)` under every layer (user, mount, pid, net, ipc, uts
//!   namespaces, the minimal view, limits, Landlock, seccomp), as the daemon and the MCP server
//!   use it, against `bwrap --unshare-all --new-session --die-with-parent --ro-bind / / --dev
//!   /dev --proc /proc /bin/true` (Debian's `bubblewrap`; it does neither Landlock nor seccomp
//!   here): goal at most 1.0;
//! - `toolsmith sandbox -- /bin/true`, the CLI's own start included, against the same bwrap:
//!   goal at most 1.5;
//! - `toolsmith --version` against `/bin/true`: goal at most 4;
//! - an MCP `tools/call` of a trivial registered tool, the round trip on an open session
//!   (`toolsmith mcp`), against `toolsmith sandbox -- true`;
//! - `sandbox::run(/bin/true)` with the user's toolchains bound (those `cargo` and `python`
//!   resolve into on this machine's PATH: rustup's, pyenv's), against the same bwrap and
//!   against `sandbox::run` without them: what binding toolchains costs;
//! - `sandbox::run(/bin/true)` given a registry tool's approved files (issue 28: read from
//!   git by `Registry::runnable_files`, written into the run's root tmpfs at `/tool`) against
//!   the same run with the tool's directory bound at `/tool` (what runs did before) and
//!   against no tool at all: what the approved tree costs per run (goal at most 0.5 ms), and
//!   its ratio to bwrap; `Registry::runnable_files` against `Registry::runnable` (the check
//!   alone); and `toolsmith run` of that tool by the CLI against bwrap;
//! - the workspace guard (issue 28: toolsmith's places compared as files — the mount table,
//!   device and inode of the workspace and its ancestors): the `prepare` part of a run with a
//!   read-only workspace and toolsmith's places guarded against the same run guarding none;
//! - `rustc --version` from rustup's toolchain, in `sandbox::run` with the toolchain bound
//!   against bwrap (`--ro-bind / /`, so the toolchain is there too).
//! - `sandbox::run(/bin/true)` with a network grant (issue 21: `lo` brought up, the listener
//!   handed to the parent's filtering proxy, its thread started and stopped) against the same
//!   bwrap and against the run without a grant; `toolsmith sandbox --allow-host … -- /bin/true`
//!   likewise.
//!
//! It also prints one run's `timings` and the median of each part over the library's runs:
//! where a sandboxed run's time goes. Run as root on a host with the cgroup v1 `pids`
//! hierarchy, it compares what bounding a run's processes costs: a process joining a fresh v1
//! cgroup through `cgroup.procs` (a global lock that waits for an RCU grace period) and through
//! `tasks` (what the helper does), and the CLI as root (cgroups) against the CLI as uid 65534
//! (rlimits only, the strategy a per-run unprivileged uid would give root).
//!
//! `cargo bench --bench sandbox_startup` (`TOOLSMITH_BENCH_ROUNDS`, default 200).
//! `scripts/install-bench-peers.sh` installs bubblewrap.

// A benchmark may panic on what it sets up itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mcp.rs"]
mod mcp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use mcp::Mcp;
use toolsmith::generate::spec::ToolSpec;
use toolsmith::generate::template;
use toolsmith::package::digest::digest;
use toolsmith::package::manifest::{Manifest, TestCounts, Validation};
use toolsmith::registry::repo::{Proposal, Registry};
use toolsmith::sandbox::toolchain::{Resolution, UserEnv, resolve};
use toolsmith::sandbox::{self, SandboxSpec, Toolchain};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn run_quiet(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Milliseconds `work` took.
fn timed(work: impl FnOnce()) -> f64 {
    let t = Instant::now();
    work();
    t.elapsed().as_secs_f64() * 1e3
}

/// Approves a tool that runs `touch /tmp/ok` (its private `/tmp`) in a registry at `dir`: a real template tool, validated as
/// `toolsmith approve` would find it. Returns its name.
fn register_trivial_tool(dir: &Path) -> String {
    // The registry lies in the state directory, which keeps the approval key.
    let state = dir.parent().expect("the state directory");
    let registry = Registry::open_or_init(dir, state).expect("registry");
    let spec = ToolSpec::from_request("Touch a file", &["touch /tmp/ok".to_owned()], &|_| false)
        .expect("spec");
    let mut files = template::generate(&spec, semver::Version::new(1, 0, 0)).expect("files");
    let mut manifest = Manifest::parse(&files["tool.yaml"], "tool.yaml").expect("manifest");
    let rest: BTreeMap<String, String> = files
        .iter()
        .filter(|(name, _)| name.as_str() != "tool.yaml")
        .map(|(n, c)| (n.clone(), c.clone()))
        .collect();
    manifest.validation = Some(Validation {
        checks: vec!["manifest".into(), "sh -n run.sh".into()],
        tests: TestCounts {
            passed: 1,
            failed: 0,
        },
        runtime_ms: 5,
        peak_memory_kb: None,
        digest: digest(&rest),
    });
    files.insert("tool.yaml".into(), manifest.to_yaml());
    registry
        .propose(&Proposal {
            candidate: "c-bench".into(),
            files,
            why: "benchmark".into(),
            trailers: Vec::new(),
        })
        .expect("propose");
    registry.approve("c-bench", "bench", None).expect("approve");
    manifest.name
}

/// The v1 `pids` hierarchy's directory of this process's cgroup, when there is one to write.
fn own_v1_pids() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "pids")
            .then(|| path.to_owned())
    })?;
    let dir = Path::new("/sys/fs/cgroup/pids").join(path.trim_start_matches('/'));
    (dir.join("pids.max").exists() || dir.join("cgroup.procs").exists()).then_some(dir)
}

/// Milliseconds a new single-threaded process takes to move itself into a fresh cgroup under
/// `parent` by writing `0` to `file` (`cgroup.procs` or `tasks`).
fn attach_ms(parent: &Path, file: &str, n: usize) -> f64 {
    let dir = parent.join(format!("bench-attach-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir).expect("make a cgroup");
    let target =
        std::ffi::CString::new(dir.join(file).into_os_string().into_encoded_bytes()).expect("path");
    let (read, write) = nix::unistd::pipe().expect("pipe");
    // SAFETY: this benchmark is single-threaded; the child only opens, writes and exits.
    match unsafe { nix::unistd::fork() }.expect("fork") {
        nix::unistd::ForkResult::Child => {
            let t = Instant::now();
            // SAFETY: plain system calls on a valid C string and buffer.
            let ok = unsafe {
                let fd = libc::open(target.as_ptr(), libc::O_WRONLY);
                fd >= 0 && libc::write(fd, c"0".as_ptr().cast(), 1) == 1
            };
            let ns: u64 = if ok { t.elapsed().as_nanos() as u64 } else { 0 };
            let _ = nix::unistd::write(&write, &ns.to_ne_bytes());
            // SAFETY: leaves the forked copy at once.
            unsafe { libc::_exit(0) }
        }
        nix::unistd::ForkResult::Parent { child } => {
            drop(write);
            let mut bytes = [0u8; 8];
            let got = nix::unistd::read(&read, &mut bytes).unwrap_or(0);
            let _ = nix::sys::wait::waitpid(child, None);
            let _ = std::fs::remove_dir(&dir);
            assert_eq!(got, 8, "the child did not report");
            let ns = u64::from_ne_bytes(bytes);
            assert!(ns > 0, "writing 0 to {file} failed");
            ns as f64 / 1e6
        }
    }
}

/// Samples of one contender.
struct Samples {
    name: &'static str,
    ms: Vec<f64>,
}

impl Samples {
    fn new(name: &'static str, rounds: usize) -> Samples {
        Samples {
            name,
            ms: Vec::with_capacity(rounds),
        }
    }

    /// Prints the median and spread; returns the median.
    fn report(&mut self) -> f64 {
        self.ms.sort_by(f64::total_cmp);
        let median = percentile(&self.ms, 0.5);
        println!(
            "{:<50} median {median:7.2} ms   p10 {:7.2}   p90 {:7.2}",
            self.name,
            percentile(&self.ms, 0.1),
            percentile(&self.ms, 0.9)
        );
        median
    }
}

fn ratio(what: &str, a: f64, b: f64, goal: Option<f64>) {
    let r = a / b;
    match goal {
        Some(goal) => println!(
            "ratio {what}: {r:.2} (goal: at most {goal}: {})",
            if r <= goal { "met" } else { "NOT met" }
        ),
        None => println!("ratio {what}: {r:.2}"),
    }
}

fn main() {
    let rounds: usize = std::env::var("TOOLSMITH_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let toolsmith = env!("CARGO_BIN_EXE_toolsmith");
    let bwrap_args = [
        "--unshare-all",
        "--new-session",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "/bin/true",
    ];
    let have_bwrap = run_quiet(Command::new("bwrap").args(bwrap_args));
    if !have_bwrap {
        println!("bwrap not available (scripts/install-bench-peers.sh installs it): peer skipped");
    }
    let mut spec = SandboxSpec::new(vec!["/bin/true".into()]);
    // As the daemon runs it: the helper binary beside it, executed.
    spec.helper = Some(env!("CARGO_BIN_EXE_toolsmith-sandbox-helper").into());
    // As the CLI and MCP server run it: this single-threaded process forks its helper.
    let forked_spec = SandboxSpec::new(vec!["/bin/true".into()]);
    // One run first: it must work, and it says which layers are in force and where its time
    // went.
    let first = match sandbox::run(&spec) {
        Ok(report) => report,
        Err(err) => {
            println!("the sandbox cannot run here ({err}): nothing to measure");
            return;
        }
    };
    println!(
        "layers in force: {}",
        serde_json::to_string(&first.layers).unwrap_or_default()
    );
    println!(
        "one run's timings (µs): {}",
        serde_json::to_string(&first.timings).unwrap_or_default()
    );

    // An MCP session on a registry holding one trivial approved tool.
    let tmp = tempfile::tempdir().expect("temp dir");
    let state = tmp.path().join("state");
    let workspace = tmp.path().join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let tool = register_trivial_tool(&state.join("registry"));
    let mut mcp_command = Command::new(toolsmith);
    mcp_command
        .env("HOME", tmp.path().join("home"))
        .env("XDG_CONFIG_HOME", tmp.path().join("config"))
        .env("XDG_DATA_HOME", tmp.path().join("data"))
        .env_remove("TOOLSMITH_CONFIG")
        .env_remove("RUST_LOG")
        .arg("--state")
        .arg(&state)
        .arg("mcp")
        .arg("--workspace")
        .arg(&workspace);
    let mut session = Mcp::start(mcp_command);
    let call = serde_json::json!({"name": tool, "arguments": {}});
    let mut call_tool = || {
        let answer = session.call("tools/call", call.clone());
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    };
    call_tool();

    // A registry run's tool: its approved files by value (now), its directory bound (before).
    let registry = Registry::open(&state.join("registry"), &state).expect("registry");
    let (_, tool_files) = registry.runnable_files(&tool).expect("the approved files");
    println!(
        "approved tree: {} files, {} bytes",
        tool_files.files().len(),
        tool_files.bytes()
    );
    let mut tree_spec = spec.clone();
    tree_spec.tool_files = Some(tool_files);
    let mut bound_spec = spec.clone();
    bound_spec.tool_dir = Some(state.join("registry/tools").join(&tool));
    let cli_run_args = [
        "--state",
        state.to_str().expect("utf-8"),
        "run",
        tool.as_str(),
    ];
    assert!(run_quiet(Command::new(toolsmith).args(cli_run_args)));
    let mut lib_tree = Samples::new("sandbox::run(/bin/true), approved tree at /tool", rounds);
    let mut lib_bound = Samples::new(
        "sandbox::run(/bin/true), tool directory bound at /tool (before)",
        rounds,
    );
    let mut check_files = Samples::new("Registry::runnable_files (check + files from git)", rounds);
    let mut check_only = Samples::new("Registry::runnable (the check alone, before)", rounds);
    let mut cli_run = Samples::new("toolsmith run <trivial tool> (CLI)", rounds);
    // A run with a workspace, guarding toolsmith's places (as every CLI, MCP and daemon run
    // does) or none.
    let mut ws_spec = spec.clone();
    ws_spec.workspace = Some(workspace.clone());
    ws_spec.profile.workspace = sandbox::WorkspaceAccess::Read;
    let mut guarded_spec = ws_spec.clone();
    for (what, dir) in [
        ("state directory", state.clone()),
        ("runtime directory", tmp.path().join("runtime")),
        ("registry", state.join("registry")),
        (
            "configuration directory",
            tmp.path().join("config/toolsmith"),
        ),
    ] {
        guarded_spec.own.add(what, dir);
    }
    let mut prepare_guarded = Vec::with_capacity(rounds);
    let mut prepare_unguarded = Vec::with_capacity(rounds);

    // The same run with a network grant: the proxy starts and stops around it.
    let grant_dir = tempfile::tempdir().expect("temp dir");
    let grant_policy = grant_dir.path().join("policy.toml");
    std::fs::write(&grant_policy, "[grants]\nhosts = [\"127.0.0.1:9\"]\n").expect("policy");
    let mut proxied = spec.clone();
    proxied.policy = sandbox::SandboxPolicy::load(&grant_policy).expect("policy");
    proxied.profile.hosts = vec![sandbox::HostPort::parse("127.0.0.1:9", false).expect("host")];
    let proxied_first = sandbox::run(&proxied).expect("a run with the proxy");
    assert_eq!(proxied_first.exit.status(), 0);
    let grant_args = [
        "sandbox",
        "--policy",
        grant_policy.to_str().expect("utf-8"),
        "--allow-host",
        "127.0.0.1:9",
        "--",
        "/bin/true",
    ];
    let mut lib_proxy = Samples::new("sandbox::run(/bin/true), with the proxy", rounds);
    let mut cli_proxy = Samples::new("toolsmith sandbox --allow-host … (CLI)", rounds);
    let mut plain = Samples::new("plain /bin/true", rounds);
    let mut lib = Samples::new(
        "toolsmith::sandbox::run(/bin/true), all layers, helper executed",
        rounds,
    );
    let mut lib_forked = Samples::new(
        "toolsmith::sandbox::run(/bin/true), all layers, helper forked",
        rounds,
    );
    let mut cli = Samples::new("toolsmith sandbox -- /bin/true (CLI)", rounds);
    let mut cli_true = Samples::new("toolsmith sandbox -- true (CLI)", rounds);
    let mut bwrap = Samples::new("bwrap --unshare-all … /bin/true", rounds);
    let mut version = Samples::new("toolsmith --version", rounds);
    let mut mcp = Samples::new("MCP tools/call of a trivial tool, open session", rounds);
    let mut parts: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    // The user's toolchains, as generation would bind them for `cargo` and `python`.
    let user = UserEnv::from_process(None);
    let toolchains: Vec<Toolchain> = ["cargo", "python"]
        .iter()
        .filter_map(|p| match resolve(p, &user, true) {
            Resolution::Toolchain { toolchain, .. } => Some(toolchain),
            _ => None,
        })
        .collect();
    let mut with_tc = spec.clone();
    with_tc.profile.toolchains = toolchains.clone();
    let rustc = toolchains
        .iter()
        .find(|t| t.program == "cargo")
        .map(|t| t.paths[0].join("bin/rustc"));
    let mut rustc_tc = rustc.as_ref().map(|r| {
        let mut s = with_tc.clone();
        s.command = vec![r.display().to_string(), "--version".into()];
        s
    });
    let bwrap_rustc: Vec<String> = rustc
        .iter()
        .flat_map(|r| {
            bwrap_args[..bwrap_args.len() - 1]
                .iter()
                .map(|a| (*a).to_owned())
                .chain([r.display().to_string(), "--version".into()])
        })
        .collect();
    if toolchains.is_empty() {
        println!("no user toolchain for cargo or python on this PATH: toolchain figures skipped");
    } else {
        let bound: Vec<String> = toolchains
            .iter()
            .flat_map(|t| t.paths.iter().map(|p| p.display().to_string()))
            .collect();
        println!("toolchains bound: {}", bound.join(", "));
        if let Some(spec) = &mut rustc_tc {
            let report = sandbox::run(spec).expect("rustc in the sandbox");
            assert_eq!(report.exit.status(), 0, "{report:?}");
        }
    }
    let mut lib_tc = Samples::new("sandbox::run(/bin/true), toolchains bound", rounds);
    let mut rustc_ours = Samples::new("sandbox::run(rustc --version), toolchain bound", rounds);
    let mut rustc_bwrap = Samples::new("bwrap … rustc --version", rounds);
    let v1_pids = if nix::unistd::geteuid().is_root() {
        own_v1_pids()
    } else {
        None
    };
    let mut procs = Samples::new("join a v1 cgroup: cgroup.procs (before)", rounds);
    let mut tasks = Samples::new("join a v1 cgroup: tasks (the helper now)", rounds);
    let mut as_root = Samples::new("toolsmith sandbox -- /bin/true, root: cgroups", rounds);
    let mut as_nobody = Samples::new("toolsmith sandbox -- /bin/true, uid 65534: rlimits", rounds);
    // Both through setpriv, so both pay its start.
    let setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    let setpriv_root = ["--reuid=0", "--regid=0", "--clear-groups"];
    let have_setpriv =
        v1_pids.is_some() && run_quiet(Command::new("setpriv").args(setpriv).arg("/bin/true"));
    for round in 0..rounds {
        plain
            .ms
            .push(timed(|| assert!(run_quiet(&mut Command::new("/bin/true")))));
        let mut report = None;
        lib.ms.push(timed(|| {
            report = Some(sandbox::run(&spec).expect("sandboxed /bin/true"));
        }));
        if let Some(report) = report {
            assert_eq!(report.exit.status(), 0);
            let t = report.timings;
            for (part, us) in [
                ("prepare", Some(t.prepare_us)),
                ("spawn", t.spawn_us),
                ("limits", t.limits_us),
                ("namespaces", t.namespaces_us),
                ("view", t.view_us),
                ("process", t.process_us),
                ("landlock", t.landlock_us),
                ("seccomp", t.seccomp_us),
                ("exec", t.exec_us),
                ("wait", t.wait_us),
                ("teardown", t.teardown_us),
                ("total", Some(t.total_us)),
            ] {
                if let Some(us) = us {
                    parts.entry(part).or_default().push(us as f64 / 1e3);
                }
            }
        }
        lib_forked.ms.push(timed(|| {
            let report = sandbox::run(&forked_spec).expect("sandboxed /bin/true, forked");
            assert_eq!(report.helper, sandbox::HelperStart::Forked);
        }));
        cli.ms.push(timed(|| {
            assert!(run_quiet(Command::new(toolsmith).args([
                "sandbox",
                "--",
                "/bin/true"
            ])))
        }));
        lib_proxy.ms.push(timed(|| {
            let report = sandbox::run(&proxied).expect("sandboxed /bin/true with the proxy");
            assert_eq!(report.exit.status(), 0);
        }));
        cli_proxy.ms.push(timed(|| {
            assert!(run_quiet(Command::new(toolsmith).args(grant_args)))
        }));
        if have_bwrap {
            bwrap.ms.push(timed(|| {
                assert!(run_quiet(Command::new("bwrap").args(bwrap_args)))
            }));
        }
        version.ms.push(timed(|| {
            assert!(run_quiet(Command::new(toolsmith).arg("--version")))
        }));
        mcp.ms.push(timed(&mut call_tool));
        lib_tree.ms.push(timed(|| {
            let report = sandbox::run(&tree_spec).expect("sandboxed with the approved tree");
            assert_eq!(report.exit.status(), 0);
        }));
        lib_bound.ms.push(timed(|| {
            let report = sandbox::run(&bound_spec).expect("sandboxed with the tool bound");
            assert_eq!(report.exit.status(), 0);
        }));
        check_files.ms.push(timed(|| {
            registry.runnable_files(&tool).expect("runnable");
        }));
        check_only.ms.push(timed(|| {
            registry.runnable(&tool).expect("runnable");
        }));
        cli_run.ms.push(timed(|| {
            assert!(run_quiet(Command::new(toolsmith).args(cli_run_args)))
        }));
        for (spec, into) in [
            (&guarded_spec, &mut prepare_guarded),
            (&ws_spec, &mut prepare_unguarded),
        ] {
            let report = sandbox::run(spec).expect("sandboxed with a workspace");
            assert_eq!(report.exit.status(), 0);
            into.push(report.timings.prepare_us as f64 / 1e3);
        }
        if !toolchains.is_empty() {
            lib_tc.ms.push(timed(|| {
                let report = sandbox::run(&with_tc).expect("sandboxed with toolchains");
                assert_eq!(report.exit.status(), 0);
            }));
        }
        if let Some(spec) = &rustc_tc {
            rustc_ours.ms.push(timed(|| {
                let report = sandbox::run(spec).expect("sandboxed rustc");
                assert_eq!(report.exit.status(), 0);
            }));
            if have_bwrap {
                rustc_bwrap.ms.push(timed(|| {
                    assert!(run_quiet(Command::new("bwrap").args(&bwrap_rustc)))
                }));
            }
        }
        cli_true.ms.push(timed(|| {
            assert!(run_quiet(
                Command::new(toolsmith).args(["sandbox", "--", "true"])
            ))
        }));
        if let Some(dir) = &v1_pids {
            procs.ms.push(attach_ms(dir, "cgroup.procs", round));
            tasks.ms.push(attach_ms(dir, "tasks", round));
        }
        if have_setpriv {
            as_root.ms.push(timed(|| {
                assert!(run_quiet(
                    Command::new("setpriv").args(setpriv_root).args([
                        toolsmith,
                        "sandbox",
                        "--",
                        "/bin/true"
                    ])
                ))
            }));
            as_nobody.ms.push(timed(|| {
                assert!(run_quiet(Command::new("setpriv").args(setpriv).args([
                    toolsmith,
                    "sandbox",
                    "--",
                    "/bin/true"
                ])))
            }));
        }
    }
    println!("{rounds} rounds, contenders alternating within each round");
    let plain_m = plain.report();
    let lib_m = lib.report();
    let lib_forked_m = lib_forked.report();
    let cli_m = cli.report();
    let version_m = version.report();
    let cli_true_m = cli_true.report();
    let mcp_m = mcp.report();
    let lib_proxy_m = lib_proxy.report();
    let cli_proxy_m = cli_proxy.report();
    println!("sandbox overhead over plain: {:.2} ms", lib_m - plain_m);
    println!(
        "the proxy's cost per run: {:.2} ms (library), {:.2} ms (CLI)",
        lib_proxy_m - lib_m,
        cli_proxy_m - cli_m
    );
    ratio(
        "sandbox::run with the proxy / without",
        lib_proxy_m,
        lib_m,
        None,
    );
    if have_bwrap {
        let bwrap_m = bwrap.report();
        ratio("sandbox::run / bwrap", lib_m, bwrap_m, Some(1.0));
        ratio(
            "sandbox::run, helper forked / bwrap",
            lib_forked_m,
            bwrap_m,
            Some(1.0),
        );
        ratio("CLI sandbox / bwrap", cli_m, bwrap_m, Some(1.5));
        ratio(
            "sandbox::run with the proxy / bwrap",
            lib_proxy_m,
            bwrap_m,
            None,
        );
        ratio(
            "CLI sandbox with the proxy / bwrap",
            cli_proxy_m,
            bwrap_m,
            None,
        );
    }
    let tree_m = lib_tree.report();
    let bound_m = lib_bound.report();
    let files_m = check_files.report();
    let check_m = check_only.report();
    let cli_run_m = cli_run.report();
    println!(
        "the approved tree per run: {:.3} ms over no tool, {:.3} ms over the bind mount; \
         reading its files from git: {:.3} ms over the check alone; in all {:.3} ms over \
         before (goal at most 0.5)",
        tree_m - lib_m,
        tree_m - bound_m,
        files_m - check_m,
        (tree_m - bound_m) + (files_m - check_m),
    );
    if have_bwrap {
        let bwrap_m = percentile(&bwrap.ms, 0.5);
        ratio(
            "sandbox::run with the approved tree / bwrap",
            tree_m,
            bwrap_m,
            Some(1.0),
        );
        ratio(
            "sandbox::run with the tool directory bound (before) / bwrap",
            bound_m,
            bwrap_m,
            None,
        );
        ratio(
            "CLI run of a registry tool / bwrap",
            cli_run_m,
            bwrap_m,
            None,
        );
    }
    prepare_guarded.sort_by(f64::total_cmp);
    prepare_unguarded.sort_by(f64::total_cmp);
    let (guarded_m, unguarded_m) = (
        percentile(&prepare_guarded, 0.5),
        percentile(&prepare_unguarded, 0.5),
    );
    println!(
        "the workspace guard per run: prepare {guarded_m:.3} ms with toolsmith's places \
         guarded, {unguarded_m:.3} ms with none: {:.3} ms",
        guarded_m - unguarded_m
    );
    if !toolchains.is_empty() {
        let tc_m = lib_tc.report();
        println!("toolchain binds over none: {:.2} ms", tc_m - lib_m);
        if have_bwrap {
            ratio(
                "sandbox::run with toolchains / bwrap",
                tc_m,
                percentile(&bwrap.ms, 0.5),
                Some(1.0),
            );
        }
    }
    if rustc_tc.is_some() {
        let ours = rustc_ours.report();
        if have_bwrap {
            let theirs = rustc_bwrap.report();
            ratio("rustc --version: sandbox::run / bwrap", ours, theirs, None);
        }
    }
    ratio(
        "toolsmith --version / /bin/true",
        version_m,
        plain_m,
        Some(4.0),
    );
    ratio(
        "MCP tools/call / toolsmith sandbox -- true",
        mcp_m,
        cli_true_m,
        None,
    );
    if v1_pids.is_some() {
        println!("what bounding a run's processes costs (root, cgroup v1 host):");
        procs.report();
        tasks.report();
    }
    if have_setpriv {
        let root_m = as_root.report();
        let nobody_m = as_nobody.report();
        println!(
            "cgroups over rlimits alone, end to end: {:.2} ms",
            root_m - nobody_m
        );
    }
    println!("sandbox::run's parts, median ms over the rounds:");
    for (part, mut ms) in parts {
        ms.sort_by(f64::total_cmp);
        println!("  {part:<11} {:7.3}", percentile(&ms, 0.5));
    }
}
