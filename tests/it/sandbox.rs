//! The sandbox's basic behaviours, through the real `toolsmith sandbox` binary (and once through
//! the library API, as the escape battery will use it).
//!
//! These tests run as whoever runs `cargo test`: root in CI. None needs an unprivileged user;
//! the one behaviour that differs for uid 0 (the kernel never applies `RLIMIT_NPROC` to root, so
//! the pids limit needs a cgroup) is the escape battery's to test, as root and as uid 65534.
//! They need user namespaces (or, where those are blocked, Landlock for the fallback), bash and
//! perl (`perl-base` is essential on Debian).

use std::net::{TcpListener, ToSocketAddrs};
use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

fn toolsmith() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    cmd.env("NO_COLOR", "1").env_remove("RUST_LOG");
    cmd
}

/// `toolsmith --json sandbox ARGS… -- COMMAND…`: the report, and the exit status.
fn run_json(args: &[&str], command: &[&str]) -> (Value, i32) {
    let out = toolsmith()
        .args(["--json", "sandbox"])
        .args(args)
        .arg("--")
        .args(command)
        .output()
        .expect("toolsmith runs");
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out.status.code().unwrap_or(-1))
}

fn text(report: &Value, stream: &str) -> String {
    report[stream]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn output_and_exit_code_come_back() {
    let out = toolsmith()
        .args([
            "sandbox",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ])
        .assert()
        .code(3);
    let output = out.get_output();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("err\n"), "{stderr}");
    assert!(stderr.contains("toolsmith sandbox: exited 3"), "{stderr}");
    assert!(stderr.contains("layers: "), "{stderr}");

    let (report, code) = run_json(&[], &["sh", "-c", "echo out; exit 5"]);
    assert_eq!(code, 5);
    assert_eq!(report["exit"]["code"], 5);
    assert_eq!(text(&report, "stdout"), "out\n");
    assert_eq!(report["limit"], Value::Null);
    assert_eq!(report["layers"]["seccomp"], true);
    assert!(report["runtime_ms"].is_u64() && report["peak_memory_kb"].is_u64());

    let out = toolsmith()
        .args(["sandbox", "--", "no-such-command-anywhere"])
        .assert()
        .code(127);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(stderr.contains("`no-such-command-anywhere`"), "{stderr}");
}

#[test]
fn a_run_reports_where_its_time_went() {
    let (report, code) = run_json(&[], &["sh", "-c", "sleep 0.2"]);
    assert_eq!(code, 0, "{report}");
    let timings = &report["timings"];
    let parts = [
        "prepare_us",
        "spawn_us",
        "limits_us",
        "namespaces_us",
        "view_us",
        "process_us",
        "landlock_us",
        "seccomp_us",
        "exec_us",
        "wait_us",
        "teardown_us",
    ];
    // Every part of a run that went through was reached, and they add up to the whole.
    let mut sum = 0;
    for part in parts {
        let us = timings[part]
            .as_u64()
            .unwrap_or_else(|| panic!("{part} missing: {timings}"));
        sum += us;
    }
    let total = timings["total_us"].as_u64().expect("total_us");
    assert_eq!(sum, total, "{timings}");
    // The CLI is single-threaded: it forks its helper rather than executing one.
    assert_eq!(report["helper"], "forked", "{report}");
    // The command's own run is `wait`: it slept 200 ms, which no part before `exec` holds.
    // `exec` ends when the supervisor sees the command's exec, so on a loaded machine it may
    // take a little of the sleep from `wait`, never the bulk of it.
    let wait = timings["wait_us"].as_u64().unwrap_or(0);
    let exec = timings["exec_us"].as_u64().unwrap_or(0);
    assert!(exec + wait >= 200_000 && wait >= 100_000, "{timings}");
    // The whole covers the runtime the report gives (ms, from the spawn).
    let runtime_ms = report["runtime_ms"].as_u64().expect("runtime_ms");
    assert!(
        total / 1000 + 1 >= runtime_ms,
        "{timings} vs {runtime_ms} ms"
    );
}

#[test]
fn work_dir_is_writable_and_workspace_honours_access() {
    let (report, code) = run_json(
        &[],
        &[
            "sh",
            "-c",
            "pwd; echo scratch > note && cat note && echo $HOME",
        ],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(text(&report, "stdout"), "/work\nscratch\n/work\n");

    let ws = tempfile::tempdir().expect("temp dir");
    std::fs::write(ws.path().join("input.txt"), "from the host\n").expect("write");
    let dir = ws.path().to_str().expect("UTF-8 temp dir");

    let (report, code) = run_json(
        &["--workspace", "read", dir],
        &[
            "sh",
            "-c",
            "pwd; cat input.txt; touch created || echo refused",
        ],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        text(&report, "stdout"),
        "/workspace\nfrom the host\nrefused\n"
    );
    assert!(
        !ws.path().join("created").exists(),
        "read-only workspace was written"
    );

    let (report, code) = run_json(
        &["--workspace", "write", dir],
        &["sh", "-c", "echo made > created && rm input.txt"],
    );
    assert_eq!(code, 0, "{report}");
    let made = std::fs::read_to_string(ws.path().join("created")).expect("created on the host");
    assert_eq!(made, "made\n");
    assert!(!ws.path().join("input.txt").exists());
}

/// Processes whose command line contains `marker`, outside the sandbox.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

#[test]
fn wall_timeout_kills_setsid_and_double_forks() {
    // A sleep length no other process uses marks the sandbox's processes.
    let marker = format!("31{}.5", std::process::id());
    let script = format!("setsid sh -c 'sleep {marker} &'; (sleep {marker} &); sleep {marker}");
    let started = Instant::now();
    let (report, code) = run_json(&["--timeout", "1"], &["sh", "-c", &script]);
    assert!(started.elapsed() < Duration::from_secs(10), "{report}");
    assert_eq!(code, 137, "{report}");
    assert_eq!(report["limit"], "wall");
    assert_eq!(report["exit"]["signal"], 9);
    // The kernel kills a pid namespace's processes before its pid 1 is reaped; allow a moment
    // anyway so a slow machine does not fail the test.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut survivors = processes_with(&marker);
    while !survivors.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        survivors = processes_with(&marker);
    }
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
}

#[test]
fn memory_limit_hit_is_reported() {
    let (report, code) = run_json(
        &["--memory", "48"],
        &[
            "perl",
            "-e",
            "$x = 'x' x (256 * 1024 * 1024); print length $x",
        ],
    );
    assert_ne!(code, 0, "{report}");
    assert_eq!(report["limit"], "memory", "{report}");
    assert_eq!(report["limits"]["memory_mb"], 48);
}

#[test]
fn output_is_capped_and_marked() {
    let (report, code) = run_json(&[], &["sh", "-c", "yes | head -c 3000000; sleep 30"]);
    assert_eq!(report["limit"], "output", "{report}");
    assert_eq!(code, 137);
    assert_eq!(report["stdout"]["truncated"], true);
    assert_eq!(text(&report, "stdout").len(), 1024 * 1024);
    assert!(report["stdout"]["total_bytes"].as_u64() > Some(1024 * 1024));
}

#[test]
fn network_connect_to_a_loopback_listener_fails() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("address").port();
    let (report, code) = run_json(
        &[],
        &[
            "bash",
            "-c",
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ],
    );
    assert_ne!(code, 0, "{report}");
    assert!(!text(&report, "stdout").contains("connected"), "{report}");
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the listener saw a connection: {other:?}"),
    }
}

/// A script that prints the proxy variables it sees, `lo`'s state (through an AF_UNIX socket,
/// which every run may make), and whether an AF_INET socket can be made.
const NETWORK_STATE: &str = r#"
import fcntl, os, socket, struct
print("env", sorted(k for k in os.environ if k.lower().endswith("_proxy")))
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
print("lo", "up" if flags & 1 else "down")
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    print("inet yes")
except OSError as e:
    print("inet", e.errno)
"#;

#[test]
fn a_run_granted_nothing_has_no_proxy_no_loopback_and_no_inet() {
    if !Path::new("/usr/bin/python3").exists() {
        println!("skipped: no /usr/bin/python3");
        return;
    }
    let (report, code) = run_json(&[], &["/usr/bin/python3", "-c", NETWORK_STATE]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        text(&report, "stdout"),
        format!("env []\nlo down\ninet {}\n", libc::EAFNOSUPPORT),
        "{report}"
    );
    assert_eq!(report["connections"], serde_json::json!([]), "{report}");

    // The same run with a grant: the proxy's variables, lo up, TCP sockets allowed.
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[grants]\nhosts = [\"127.0.0.1:9\"]\n").expect("write");
    let (report, code) = run_json(
        &[
            "--policy",
            policy.to_str().expect("utf-8"),
            "--allow-host",
            "127.0.0.1:9",
        ],
        &["/usr/bin/python3", "-c", NETWORK_STATE],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        text(&report, "stdout"),
        "env ['ALL_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY', 'all_proxy', 'http_proxy', \
         'https_proxy']\nlo up\ninet yes\n",
        "{report}"
    );
    // The proxy's thread starts after the helper is forked: the CLI stays single-threaded up
    // to the fork, grant or not.
    assert_eq!(report["helper"], "forked", "{report}");
}

/// A multi-threaded caller (the daemon, this harness) executes the helper binary: its
/// supervisor hands the listener to the proxy over the channel at descriptor 5 all the same,
/// a granted connection reaches the host, and the report records it once pid 1 has ended.
#[test]
fn an_executed_helper_hands_its_listener_to_the_proxy() {
    use std::io::Write;
    use toolsmith::sandbox::{self, Exit, HelperStart, HostPort, SandboxPolicy, SandboxSpec};
    if !Path::new("/usr/bin/python3").exists() {
        println!("skipped: no /usr/bin/python3");
        return;
    }
    let server = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = server.local_addr().expect("address").port();
    let serving = std::thread::spawn(move || {
        let (mut stream, _) = server.accept().expect("accept");
        stream.write_all(b"hello from the host\n").expect("write");
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!("[grants]\nhosts = [\"127.0.0.1:{port}\"]\n"),
    )
    .expect("write policy");
    let script = format!(
        "import socket\n\
         s = socket.create_connection(('127.0.0.1', {proxy}))\n\
         s.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n')\n\
         data = b''\n\
         while not data.endswith(b'host\\n'):\n    \
             chunk = s.recv(4096)\n    \
             if not chunk:\n        break\n    \
             data += chunk\n\
         print(data.split(b'\\r\\n\\r\\n', 1)[-1].decode(), end='')\n",
        proxy = sandbox::proxy::PORT
    );
    let mut spec = SandboxSpec::new(vec!["/usr/bin/python3".into(), "-c".into(), script]);
    spec.policy = SandboxPolicy::load(&policy).expect("policy");
    spec.profile.hosts = vec![HostPort::parse(&format!("127.0.0.1:{port}"), false).expect("host")];
    spec.helper = Some(env!("CARGO_BIN_EXE_toolsmith-sandbox-helper").into());
    let report = sandbox::run(&spec).expect("runs");
    serving.join().expect("server");
    assert_eq!(report.helper, HelperStart::Executed);
    assert_eq!(report.exit, Exit::Code(0), "{report:?}");
    assert_eq!(
        String::from_utf8_lossy(&report.stdout.bytes),
        "hello from the host\n",
        "{report:?}"
    );
    assert_eq!(report.connections.len(), 1, "{:?}", report.connections);
    let seen = &report.connections[0];
    assert_eq!(
        (seen.host.as_str(), seen.port, seen.verdict),
        ("127.0.0.1", port, sandbox::Verdict::Allowed),
        "{seen:?}"
    );
    assert_eq!(seen.bytes_down, 20, "{seen:?}");
}

/// A granted name that resolves to a loopback address is not connected to (DNS rebinding: an
/// answer is not a grant); the same listener granted as an IP literal, as written, is.
#[test]
fn a_granted_name_resolving_to_loopback_is_refused_and_a_granted_literal_is_not() {
    if !Path::new("/usr/bin/python3").exists() {
        println!("skipped: no /usr/bin/python3");
        return;
    }
    let loopback = ("localhost", 0)
        .to_socket_addrs()
        .map(|mut a| a.any(|a| a.ip().is_loopback()))
        .unwrap_or(false);
    if !loopback {
        println!("skipped: localhost does not resolve to a loopback address here");
        return;
    }
    let server = TcpListener::bind("127.0.0.1:0").expect("bind");
    server.set_nonblocking(true).expect("nonblocking");
    let port = server.local_addr().expect("address").port();
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.toml");
    let (name, literal) = (format!("localhost:{port}"), format!("127.0.0.1:{port}"));
    std::fs::write(
        &policy,
        format!("[grants]\nhosts = [{name:?}, {literal:?}]\n"),
    )
    .expect("write policy");
    // Asks the proxy for each target in turn; prints the status line of each answer.
    let script = format!(
        "import socket\n\
         for host in ['localhost', '127.0.0.1']:\n    \
             s = socket.create_connection(('127.0.0.1', {proxy}))\n    \
             s.sendall(f'CONNECT {{host}}:{port} HTTP/1.1\\r\\nHost: {{host}}:{port}\\r\\n\\r\\n'.encode())\n    \
             print(host, s.recv(4096).split(b'\\r\\n')[0].decode())\n    \
             s.close()\n",
        proxy = toolsmith::sandbox::proxy::PORT
    );
    let (report, code) = run_json(
        &[
            "--policy",
            policy.to_str().expect("utf-8"),
            "--allow-host",
            &name,
            "--allow-host",
            &literal,
        ],
        &["/usr/bin/python3", "-c", &script],
    );
    assert_eq!(code, 0, "{report}");
    let stdout = text(&report, "stdout");
    assert!(
        stdout.starts_with("localhost HTTP/1.1 403"),
        "the name reached the loopback listener: {report}"
    );
    assert!(
        stdout.contains("127.0.0.1 HTTP/1.1 200"),
        "the literal did not: {report}"
    );
    let connections = report["connections"].as_array().expect("connections");
    assert_eq!(connections.len(), 2, "{report}");
    assert_eq!(connections[0]["host"], "localhost", "{report}");
    assert_eq!(connections[0]["verdict"], "denied", "{report}");
    let reason = connections[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("localhost resolves to") && reason.contains("a granted name never reaches"),
        "{reason}"
    );
    assert_eq!(connections[1]["verdict"], "allowed", "{report}");
    // Only the literal's connection reached the listener.
    let mut reached = 0;
    while server.accept().is_ok() {
        reached += 1;
    }
    assert_eq!(reached, 1);
}

/// A registry run's files are given by value: written at /tool inside the run's own root with
/// the modes git records, read-only, and nothing of the host's directory is there.
#[test]
fn tool_files_given_by_value_are_read_only_with_their_modes() {
    use toolsmith::sandbox::{self, Exit, SandboxSpec, ToolFiles};
    let mut files = ToolFiles::new();
    files
        .add(
            "run.sh",
            true,
            "#!/bin/sh\necho from the approved tree\n".into(),
        )
        .expect("add");
    files
        .add("tests/cases.json", false, "[]\n".into())
        .expect("add");
    let script = "stat -c '%a %n' /tool/run.sh /tool/tests/cases.json; \
                  (echo x > /tool/run.sh) 2>/dev/null || echo read-only; \
                  (echo x > /tool/new) 2>/dev/null || echo no-new-file; \
                  /tool/run.sh";
    let mut spec = SandboxSpec::new(vec!["sh".into(), "-c".into(), script.into()]);
    spec.tool_files = Some(files.clone());
    spec.helper = Some(env!("CARGO_BIN_EXE_toolsmith-sandbox-helper").into());
    let report = sandbox::run(&spec).expect("runs");
    assert_eq!(report.exit, Exit::Code(0), "{report:?}");
    assert_eq!(
        String::from_utf8_lossy(&report.stdout.bytes),
        "755 /tool/run.sh\n644 /tool/tests/cases.json\nread-only\nno-new-file\nfrom the approved tree\n",
        "{report:?}"
    );
    // A directory and files for one run are refused: it shows one.
    spec.tool_dir = Some(std::env::temp_dir());
    let err = sandbox::run(&spec).expect_err("both");
    assert!(err.to_string().contains("a run shows one"), "{err}");
}

/// A credential file granted at approval is bound read-only where its program looks under the
/// run's home, and nothing else of the home comes with it.
#[test]
fn a_granted_credential_is_read_only_under_the_run_s_home() {
    let home = tempfile::tempdir().expect("home");
    let kube = home.path().join(".kube");
    std::fs::create_dir_all(&kube).expect("mkdir");
    std::fs::write(kube.join("config"), "server: https://127.0.0.1:6443\n").expect("write");
    std::fs::write(kube.join("other"), "not granted\n").expect("write");
    let script = "cat \"$HOME/.kube/config\"; \
                  (echo x >> \"$HOME/.kube/config\") 2>/dev/null || echo read-only; \
                  cat \"$HOME/.kube/other\" 2>/dev/null || echo no-other";
    let mut spec =
        toolsmith::sandbox::SandboxSpec::new(vec!["sh".into(), "-c".into(), script.into()]);
    spec.helper = Some(env!("CARGO_BIN_EXE_toolsmith-sandbox-helper").into());
    spec.credentials = vec![("~/.kube/config".into(), kube.join("config"))];
    let report = toolsmith::sandbox::run(&spec).expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&report.stdout.bytes),
        "server: https://127.0.0.1:6443\nread-only\nno-other\n",
        "{report:?}"
    );
    assert_eq!(
        std::fs::read_to_string(kube.join("config")).expect("read"),
        "server: https://127.0.0.1:6443\n",
        "the host's file is unchanged"
    );
    // A path out of the home is refused.
    spec.credentials = vec![("~/../etc/shadow".into(), "/etc/shadow".into())];
    let err = toolsmith::sandbox::run(&spec).expect_err("refused");
    assert!(
        err.to_string().contains("not a path under the home"),
        "{err}"
    );
}

#[test]
fn proc_shows_the_sandbox_not_the_host() {
    let (report, code) = run_json(&[], &["cat", "/proc/1/cmdline"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        text(&report, "stdout"),
        "cat\0/proc/1/cmdline\0",
        "pid 1 is the command itself"
    );
    let (report, _) = run_json(&[], &["sh", "-c", "ls /proc | grep -c '^[0-9]'"]);
    let pids: u32 = text(&report, "stdout").trim().parse().expect("a count");
    assert!(pids <= 4, "host processes visible: {report}");
}

#[test]
fn home_is_absent() {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let (report, code) = run_json(
        &[],
        &[
            "sh",
            "-c",
            "for p in \"$1\" /home /root /run /sys /var; do test -e \"$p\" && echo \"$p\"; done; \
             echo HOME=$HOME",
            "sh",
            &home,
        ],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(text(&report, "stdout"), "HOME=/work\n", "{report}");
}

#[test]
fn no_new_privs_seccomp_and_no_capabilities() {
    let (report, code) = run_json(&[], &["cat", "/proc/self/status"]);
    assert_eq!(code, 0, "{report}");
    let status = text(&report, "stdout");
    for line in ["NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000"] {
        assert!(
            status.lines().any(|l| l == line),
            "{line} missing:\n{status}"
        );
    }
}

#[test]
fn environment_secrets_are_not_visible() {
    let out = toolsmith()
        .env("GITHUB_TOKEN", "ghp_sandboxtestsecret")
        .env("AWS_SECRET_ACCESS_KEY", "awssandboxtestsecret")
        .args([
            "--json",
            "sandbox",
            "--env",
            "TOOLSMITH_DRY_RUN=1",
            "--",
            "env",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let env = text(&report, "stdout");
    assert!(!env.contains("sandboxtestsecret"), "{env}");
    assert!(
        !env.contains("GITHUB_TOKEN") && !env.contains("AWS_"),
        "{env}"
    );
    assert!(env.lines().any(|l| l == "TOOLSMITH_DRY_RUN=1"), "{env}");
    assert!(env.lines().any(|l| l == "TMPDIR=/tmp"), "{env}");
}

#[test]
fn policies_are_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[sandbox]\nrequire = [\"magic\"]\n").expect("write");
    let out = toolsmith()
        .args(["sandbox", "--policy"])
        .arg(&bad)
        .args(["--", "true"])
        .assert()
        .code(125);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(stderr.contains("unknown variant"), "{stderr}");

    // Requiring a cgroup: refused with the fix named where none is delegated, run where one is.
    let strict = dir.path().join("strict.toml");
    std::fs::write(&strict, "[sandbox]\nrequire = [\"cgroup\", \"landlock\"]\n").expect("write");
    let out = toolsmith()
        .args(["sandbox", "--policy"])
        .arg(&strict)
        .args(["--", "true"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => assert!(stderr.contains("cgroup"), "{stderr}"),
        Some(125) => assert!(
            stderr.contains("requires cgroup") && stderr.contains("from `require`"),
            "{stderr}"
        ),
        other => panic!("unexpected exit {other:?}: {stderr}"),
    }
}

#[test]
fn the_library_api_runs_commands() {
    use toolsmith::sandbox::{self, Exit, SandboxSpec, WorkspaceAccess};
    let ws = tempfile::tempdir().expect("temp dir");
    let mut spec = SandboxSpec::new(vec!["sh".into(), "-c".into(), "ls; echo $MODE".into()]);
    spec.helper = Some(Path::new(env!("CARGO_BIN_EXE_toolsmith")).to_path_buf());
    spec.workspace = Some(ws.path().to_path_buf());
    spec.profile.workspace = WorkspaceAccess::Read;
    spec.env.push(("MODE".into(), "library".into()));
    std::fs::write(ws.path().join("seen"), "").expect("write");
    let report = sandbox::run(&spec).expect("runs");
    assert_eq!(report.exit, Exit::Code(0), "{report:?}");
    assert_eq!(
        String::from_utf8_lossy(&report.stdout.bytes),
        "seen\nlibrary\n"
    );
    assert!(report.layers.seccomp);
    // A named helper binary is executed (so is any helper of a multi-threaded caller).
    assert_eq!(report.helper, sandbox::HelperStart::Executed);
}

/// A multi-threaded caller (this test harness, like the daemon, whose validation runs take this
/// path) executes the lean helper binary, and its command gets the same sandbox as the CLI's
/// forked helper gives.
#[test]
fn a_multi_threaded_caller_executes_the_helper_binary_and_gets_the_same_sandbox() {
    use toolsmith::sandbox::{self, Exit, HelperStart, SandboxSpec};
    // Another thread alive for the whole run, whatever the harness does.
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let other = std::thread::spawn(move || stopped.recv());
    let mut spec = SandboxSpec::new(vec![
        "sh".into(),
        "-c".into(),
        "echo $$; cat /proc/self/status | grep -c '^NoNewPrivs:.*1'".into(),
    ]);
    // A test binary has no helper beside it (the daemon's does): name the one cargo built.
    spec.helper = Some(env!("CARGO_BIN_EXE_toolsmith-sandbox-helper").into());
    let report = sandbox::run(&spec);
    drop(stop);
    let _ = other.join();
    let report = report.expect("runs");
    assert_eq!(report.exit, Exit::Code(0), "{report:?}");
    assert_eq!(report.helper, HelperStart::Executed);
    // The same sandbox as the CLI's: the shell is pid 1 of its own namespace, no new privileges.
    assert_eq!(String::from_utf8_lossy(&report.stdout.bytes), "1\n1\n");
    assert!(report.layers.seccomp && report.layers.namespaces);
}

/// `toolsmith sandbox -- CMD | head` once `head` has gone: the command's status and its report
/// still come back, without a word about the pipe.
#[test]
fn a_reader_that_went_away_does_not_change_the_status() {
    use std::io::Read;
    use std::process::Stdio;
    let (reader, writer) = nix::unistd::pipe().expect("pipe");
    drop(reader);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .args(["sandbox", "--", "sh", "-c", "seq 20000; exit 3"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolsmith");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("exited 3"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

/// An isolated set of toolsmith's directories: `toolsmith --state <dir>/state` with HOME and
/// the XDG directories under `dir`, so runtime = `state/run`, configuration =
/// `config/toolsmith`, and the registry `state/registry` unless the configuration file there
/// names another.
fn isolated(dir: &Path) -> Command {
    let mut cmd = toolsmith();
    for var in [
        "TOOLSMITH_CONFIG",
        "TOOLSMITH_SOCKET",
        "STATE_DIRECTORY",
        "RUNTIME_DIRECTORY",
        "CONFIGURATION_DIRECTORY",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_RUNTIME_DIR", dir.join("runtime"))
        .arg("--state")
        .arg(dir.join("state"));
    cmd
}

#[test]
fn workspaces_that_reach_toolsmiths_own_files_are_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    for sub in [
        "home",
        "state/run",
        "state/staging",
        "data/toolsmith/registry",
        "config/toolsmith",
        "project",
    ] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    // The registry apart from the state, as a configuration may place it.
    std::fs::write(
        dir.join("config/toolsmith/config.toml"),
        format!(
            "[paths]\nregistry = {:?}\n",
            dir.join("data/toolsmith/registry").display().to_string()
        ),
    )
    .expect("write the configuration");
    std::os::unix::fs::symlink(dir.join("data/toolsmith/registry"), dir.join("project/reg"))
        .expect("symlink");
    let cases: [(&str, &str); 9] = [
        ("state", "is toolsmith's state directory"),
        ("state/run", "is toolsmith's runtime directory"),
        ("data/toolsmith/registry", "is toolsmith's registry"),
        ("config/toolsmith", "is toolsmith's configuration directory"),
        (".", "contains toolsmith's state directory"),
        ("data", "contains toolsmith's registry"),
        ("state/staging", "lies inside toolsmith's state directory"),
        ("project/reg", "is toolsmith's registry"),
        ("project/reg/..", "contains toolsmith's registry"),
    ];
    for (sub, says) in cases {
        for access in ["read", "write"] {
            let out = isolated(dir)
                .args(["sandbox", "--workspace", access])
                .arg(dir.join(sub))
                .args(["--", "sh", "-c", "echo ran"])
                .output()
                .expect("toolsmith runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(125), "{sub}: {stderr}");
            assert!(out.stdout.is_empty(), "{sub}: the command ran");
            assert!(stderr.contains(says), "{sub} ({access}): {stderr}");
            assert!(stderr.contains("give a directory"), "{stderr}");
        }
    }
    // A tool directory holding the registry is refused too.
    let out = isolated(dir)
        .args(["sandbox", "--tool-dir"])
        .arg(dir.join("data"))
        .args(["--", "true"])
        .output()
        .expect("toolsmith runs");
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the tool directory"));
    // A project beside them is fine.
    let out = isolated(dir)
        .args(["sandbox", "--workspace", "write"])
        .arg(dir.join("project"))
        .args(["--", "sh", "-c", "ls"])
        .output()
        .expect("toolsmith runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "reg\n");
}

/// `toolsmith sandbox --workspace write WS -- sh -c …` after `mount --bind SOURCE TARGET`, in a
/// private mount namespace of its own (`unshare -m --propagation private`: the mount never
/// reaches the host). Its exit code, stdout and stderr.
fn sandbox_after_bind(
    dir: &Path,
    source: &Path,
    target: &Path,
    workspace: &Path,
) -> (Option<i32>, String, String) {
    let mut cmd = std::process::Command::new("unshare");
    cmd.env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .env_remove("TOOLSMITH_CONFIG")
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_RUNTIME_DIR", dir.join("runtime"))
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("set -e; mount --bind \"$1\" \"$2\"; shift 2; exec \"$@\"")
        .arg("sh")
        .arg(source)
        .arg(target)
        .arg(env!("CARGO_BIN_EXE_toolsmith"))
        .arg("--state")
        .arg(dir.join("state"))
        .args(["sandbox", "--workspace", "write"])
        .arg(workspace)
        .args(["--", "sh", "-c", "echo pwned > /workspace/pwned; echo ran"]);
    let out = cmd.output().expect("unshare runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_hard_link_to_a_file_of_toolsmiths_state_in_the_workspace_is_refused() {
    // A hard link shows one file of the state in a workspace: no mount, no path in common.
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().canonicalize().expect("canonical");
    for sub in ["home", "state", "project"] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    std::fs::write(dir.join("state/state.db"), "a row").expect("write");
    std::fs::hard_link(dir.join("state/state.db"), dir.join("project/db")).expect("link");
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .env_remove("TOOLSMITH_CONFIG")
            .env("HOME", dir.join("home"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_RUNTIME_DIR", dir.join("runtime"))
            .arg("--state")
            .arg(dir.join("state"))
            .args(["sandbox", "--workspace", "write"])
            .arg(dir.join("project"))
            .args(["--", "sh", "-c", "echo pwned > /workspace/db; echo ran"])
            .output()
            .expect("toolsmith runs")
    };
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(out.stdout.is_empty(), "the command ran");
    assert!(stderr.contains("hard links"), "{stderr}");
    assert!(stderr.contains("state.db"), "names the file: {stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("state/state.db")).expect("read"),
        "a row"
    );
    // With the extra link gone, the same workspace runs.
    std::fs::remove_file(dir.join("project/db")).expect("unlink");
    let out = run();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
}

#[test]
fn bind_mount_aliases_of_toolsmiths_places_are_refused() {
    // Issue 28: `mount --bind $STATE /tmp/x`, then `--workspace write /tmp/x` let the run
    // rewrite state.db. The guard compares the files, not their paths.
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: bind mounts need root (CI runs as root)");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().canonicalize().expect("canonical");
    for sub in [
        "home",
        "state/run",
        "state/staging",
        "aliases/x",
        "aliases/y",
        "project/sub",
    ] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    std::fs::write(dir.join("state/state.db"), "a row").expect("write");
    let cases: [(&str, &str, &str, &str); 4] = [
        // The state directory itself under another path.
        (
            "state",
            "aliases/x",
            "aliases/x",
            "is toolsmith's state directory",
        ),
        // A part of it.
        (
            "state/staging",
            "aliases/y",
            "aliases/y",
            "lies inside toolsmith's state directory",
        ),
        // A project that holds a mount of it.
        (
            "state",
            "project/sub",
            "project",
            "contains toolsmith's state directory",
        ),
        // A mount of what holds it: the state directory is seen inside at `aliases/x/state`.
        (
            ".",
            "aliases/x",
            "aliases/x/state",
            "is toolsmith's state directory",
        ),
    ];
    for (source, target, workspace, says) in cases {
        let (code, stdout, stderr) = sandbox_after_bind(
            &dir,
            &dir.join(source),
            &dir.join(target),
            &dir.join(workspace),
        );
        assert!(
            !dir.join("state/pwned").exists() && !dir.join("state/staging/pwned").exists(),
            "{source} at {target}: the run wrote into toolsmith's state: {stdout}{stderr}"
        );
        assert_eq!(code, Some(125), "{source} at {target}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{source} at {target}: the command ran");
        assert!(stderr.contains(says), "{source} at {target}: {stderr}");
        assert!(stderr.contains("shows again"), "{stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("state/state.db")).expect("read"),
        "a row"
    );
    // A bind mount of a project is fine.
    std::fs::create_dir_all(dir.join("elsewhere")).expect("mkdir");
    let (code, stdout, stderr) = sandbox_after_bind(
        &dir,
        &dir.join("elsewhere"),
        &dir.join("aliases/x"),
        &dir.join("aliases/x"),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "ran\n");
    assert!(dir.join("elsewhere/pwned").exists());
}

#[test]
fn a_memory_limit_filled_by_tmpfs_pages_is_the_memory_limit() {
    // Files in the private /tmp and /work count against the run's memory cgroup but belong to
    // no process: the kernel must kill the command, and the report must say which limit.
    let (report, code) = run_json(
        &["--memory", "256"],
        &[
            "sh",
            "-c",
            "dd if=/dev/zero of=/tmp/f bs=1M count=250; dd if=/dev/zero of=/work/f bs=1M count=250",
        ],
    );
    let memory = report["layers"]["memory"].as_str().unwrap_or_default();
    if !memory.starts_with("cgroup") {
        eprintln!(
            "skipped: memory is bounded by {memory} here, which does not count tmpfs pages \
             (run as root, or with a delegated cgroup)"
        );
        return;
    }
    assert_eq!(code, 137, "{report}");
    assert_eq!(report["limit"], "memory", "{report}");
    // The first file was written whole: the second is what met the limit.
    assert!(
        text(&report, "stderr").contains("250+0 records out"),
        "{report}"
    );
    let out = toolsmith()
        .args(["sandbox", "--memory", "256", "--"])
        .args([
            "sh",
            "-c",
            "dd if=/dev/zero of=/tmp/f bs=1M count=250; dd if=/dev/zero of=/work/f bs=1M count=250",
        ])
        .output()
        .expect("toolsmith runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(137), "{stderr}");
    assert!(stderr.contains("memory limit hit"), "{stderr}");
    assert!(!stderr.contains("helper_main"), "{stderr}");
}

/// The cgroup v1 directory of this process in `controller`'s hierarchy, when the host mounts
/// that hierarchy at `/sys/fs/cgroup/<controller>`.
fn own_v1_cgroup(controller: &str) -> Option<std::path::PathBuf> {
    let mount = Path::new("/sys/fs/cgroup").join(controller);
    if !mount.join("cgroup.procs").exists() {
        return None;
    }
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
        list.split(',')
            .any(|c| c == controller)
            .then(|| path.to_owned())
    })?;
    Some(mount.join(path.trim_start_matches('/')))
}

#[test]
fn runs_leave_no_cgroup_behind() {
    // Root without a delegated cgroup v2 uses v1 `toolsmith/run-…` cgroups beneath its own.
    // The run happens in a cgroup of this test's own, so that other toolsmith processes on
    // the machine (whose runs share the same `toolsmith` directory) cannot interfere.
    let (report, _) = run_json(&[], &["true"]);
    if report["layers"]["pids"] != "cgroup_v1" {
        eprintln!(
            "skipped: runs here are not bounded by cgroup v1 ({}); the v1 fallback is root's",
            report["layers"]
        );
        return;
    }
    let name = format!("toolsmith-test-{}", std::process::id());
    let mut made = Vec::new();
    for controller in ["pids", "memory"] {
        let own = own_v1_cgroup(controller).expect("own v1 cgroup");
        let dir = own.join(&name);
        std::fs::create_dir(&dir).expect("make a test cgroup");
        made.push(dir);
    }
    let join: String = made
        .iter()
        .map(|d| format!("echo $$ > '{}/cgroup.procs' && ", d.display()))
        .collect();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{join}exec \"$0\" sandbox -- true"))
        .arg(env!("CARGO_BIN_EXE_toolsmith"))
        .env("NO_COLOR", "1")
        .output()
        .expect("toolsmith runs");
    let left: Vec<String> = made
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .filter(|e| e.path().is_dir())
        .map(|e| e.path().display().to_string())
        .collect();
    for dir in &made {
        let _ = std::fs::remove_dir(dir);
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A helper that has reported its command's end is left to tear down its namespaces on its own
/// (off the run's path) and reaped by a later run: many runs leave no pile of zombies behind.
#[test]
fn helpers_left_to_finish_are_reaped_by_later_runs() {
    use toolsmith::sandbox::{self, Exit, SandboxSpec};
    let mut spec = SandboxSpec::new(vec!["/bin/true".into()]);
    spec.helper = Some(env!("CARGO_BIN_EXE_toolsmith-sandbox-helper").into());
    for _ in 0..30 {
        let report = sandbox::run(&spec).expect("runs");
        assert_eq!(report.exit, Exit::Code(0), "{report:?}");
    }
    // This process's children that have ended and not been reaped (other tests of this binary
    // run helpers at the same time, so a few may be between two runs).
    let mut zombies = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")
        .expect("tasks")
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in children.split_whitespace() {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            if state.is_some_and(|s| s.starts_with('Z')) {
                zombies.push(stat);
            }
        }
    }
    assert!(zombies.len() < 5, "{} zombies: {zombies:#?}", zombies.len());
}

/// A run with rustup's toolchain bound: cargo and rustc run from it, nothing of it can be
/// written, and the rest of the home directory is not there.
#[test]
fn a_toolchain_is_bound_read_only_and_alone() {
    use toolsmith::sandbox::{self, Exit, SandboxSpec};
    let Some(cargo) = crate::common::machine_toolchain("cargo") else {
        return;
    };
    let tc = cargo.paths[0].display().to_string();
    let home = cargo.paths[0]
        .ancestors()
        .nth(3)
        .expect("the toolchain lies in a home")
        .display()
        .to_string();
    let script = format!(
        "cargo --version && rustc --version && echo \"CARGO_HOME=$CARGO_HOME\" && \
         (touch {tc}/bin/planted 2>/dev/null && echo WROTE-TOOLCHAIN || echo toolchain-ro) && \
         ls -A {home}"
    );
    let mut spec = SandboxSpec::new(vec!["sh".into(), "-c".into(), script]);
    spec.helper = Some(Path::new(env!("CARGO_BIN_EXE_toolsmith")).to_path_buf());
    spec.profile.toolchains = vec![cargo.clone()];
    let report = sandbox::run(&spec).expect("runs");
    let out = String::from_utf8_lossy(&report.stdout.bytes).into_owned();
    let err = String::from_utf8_lossy(&report.stderr.bytes).into_owned();
    assert_eq!(report.exit, Exit::Code(0), "{out}\n{err}");
    assert!(
        out.starts_with("cargo 1.") && out.contains("\nrustc 1."),
        "{out}"
    );
    assert!(out.contains("CARGO_HOME=/work/.cargo"), "{out}");
    assert!(
        out.contains("toolchain-ro") && !out.contains("WROTE"),
        "{out}"
    );
    let listed: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "toolchain-ro")
        .skip(1)
        .collect();
    for name in &listed {
        assert!(
            cargo
                .paths
                .iter()
                .any(|p| p.starts_with(format!("{home}/{name}"))),
            "{home}/{name} is shown, but only the toolchain's paths are bound: {listed:?}"
        );
    }
}

/// Every run checks the grants, not only validation: a toolchain the policy does not grant is
/// refused before anything runs, with the line that would allow it.
#[test]
fn an_ungranted_toolchain_is_refused_before_anything_runs() {
    if crate::common::machine_toolchain("cargo").is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[grants]\ntoolchains = []\n").expect("write policy");
    let out = toolsmith()
        .args(["sandbox", "--policy"])
        .arg(&policy)
        .args(["--toolchain", "cargo", "--", "cargo", "--version"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(125));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "add \"rustup\" to [grants] toolchains in {} (toolchains = [\"rustup\"])",
            policy.display()
        )),
        "{said}"
    );
    assert!(out.stdout.is_empty(), "nothing ran: {:?}", out.stdout);
}

/// Ubuntu 23.10 on (AppArmor's `apparmor_restrict_unprivileged_userns`) lets `unshare` create a
/// user namespace but gives it no capabilities, so the mounts after it fail with EPERM. That
/// refusal is made here without touching the machine's settings: a seccomp filter, inherited by
/// `toolsmith` and its helper, answers the mount calls with EPERM while `unshare` succeeds. The
/// run falls back to the sandbox without namespaces (Landlock, seccomp, rlimits), says so, and
/// the command runs.
/// `toolsmith ARGS…` under a seccomp filter, inherited, that answers the mount family with
/// `EPERM`: the refusal Ubuntu's AppArmor makes inside the unprivileged user namespace it lets
/// through, made without touching the machine.
fn with_mounts_refused(args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let refused: std::collections::BTreeMap<i64, Vec<seccompiler::SeccompRule>> = [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_mount_setattr,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
    ]
    .into_iter()
    .map(|call| (call, Vec::new()))
    .collect();
    let filter = seccompiler::SeccompFilter::new(
        refused,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(libc::EPERM as u32),
        std::env::consts::ARCH
            .try_into()
            .expect("a seccomp architecture"),
    )
    .expect("filter");
    let program: seccompiler::BpfProgram = filter.try_into().expect("BPF");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    cmd.env("NO_COLOR", "1").env_remove("RUST_LOG").args(args);
    // SAFETY: between fork and exec only prctl and seccomp run, on a program built before.
    unsafe {
        cmd.pre_exec(move || {
            seccompiler::apply_filter(&program).map_err(|e| std::io::Error::other(e.to_string()))
        });
    }
    cmd.output().expect("toolsmith runs")
}

#[test]
fn namespaces_created_but_refused_their_mounts_fall_back_with_a_note() {
    let out = with_mounts_refused(&["--json", "sandbox", "--", "/bin/echo", "still runs"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(text(&report, "stdout"), "still runs\n", "{report:#}");
    assert_eq!(report["layers"]["namespaces"], false, "{report:#}");
    let said = report.to_string();
    assert!(said.contains("no namespaces"), "{report:#}");
    assert!(said.contains("are refused (EPERM"), "{report:#}");
    // How to lift it for toolsmith alone.
    assert!(said.contains("toolsmith install --apparmor"), "{report:#}");
}

/// Landlock does not cover a file's mode, owner or times, and without a view of read-only binds
/// the host's files are only as far as their names: the fallback's seccomp refuses the calls.
#[test]
fn without_namespaces_the_hosts_files_keep_their_metadata() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("canary.txt");
    std::fs::write(&file, "canary\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let looks = |path: &Path| {
        let m = std::fs::metadata(path).expect("metadata");
        (m.mode(), m.uid(), m.mtime(), m.ctime(), m.ctime_nsec())
    };
    let before = looks(&file);
    let path = file.display().to_string();
    let script = format!(
        "chmod 0666 {path}; echo chmod $?; chown \"$(id -u)\" {path}; echo chown $?; \
         touch -d @0 {path}; echo touch $?"
    );
    let workspace = dir.path().display().to_string();
    let out = with_mounts_refused(&[
        "--json",
        "sandbox",
        "--workspace",
        "read",
        &workspace,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(report["layers"]["namespaces"], false, "{report:#}");
    assert_eq!(
        text(&report, "stdout"),
        "chmod 1\nchown 1\ntouch 1\n",
        "{report:#}"
    );
    assert_eq!(looks(&file), before, "{report:#}");
    // The note says what the fallback refuses.
    assert!(
        report
            .to_string()
            .contains("changing a file's mode, owner, times"),
        "{report:#}"
    );
}
