//! What the binaries start up with, observed from outside: the files every process of a
//! command opens, traced with `strace -f`. A sandboxed run (the CLI and the helper it forks,
//! down to the command's `execve`) and the commands that need no registry
//! (`--version`, `status`) never open the registry; no command loads OpenSSL's configuration
//! or the system's CA certificates (libgit2 is built without TLS; a sync runs `git` itself).
//! A command that opens the registry shows the trace sees such opens when they happen.
//!
//! Needs `strace` (`.ci/run` installs it) and permission to trace: skipped with a message when
//! either is missing, except under `CI=true`, where that is a failure.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::TestEnv;

/// What TLS and OpenSSL loading opens: OpenSSL's configuration, the CA bundle and directory.
const TLS_FILES: [&str; 5] = [
    "openssl.cnf",
    "/etc/ssl/",
    "/usr/lib/ssl/",
    "cert.pem",
    "ca-certificates",
];

/// Whether `strace` can trace here; why not otherwise.
fn strace_works() -> Result<(), String> {
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=execve",
            "-o",
            "/dev/null",
            "/bin/true",
        ])
        .output()
        .map_err(|e| {
            format!("strace cannot be started ({e}); install it (apt-get install strace)")
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "strace cannot trace here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Skips the test (or fails it under `CI=true`) when strace cannot be used.
fn can_trace() -> bool {
    match strace_works() {
        Ok(()) => true,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{why}: CI must run this test")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// `toolsmith ARGS…` under `strace -f`: the trace (one system call a line, with its pid), and
/// the command's exit code.
fn traced(env: &TestEnv, args: &[&str]) -> (String, Option<i32>) {
    let file = env
        .path()
        .join(format!("trace-{}", args.join("-").replace('/', "_")));
    let mut cmd = Command::new("strace");
    env.apply(&mut cmd);
    cmd.args([
        "-f",
        "-qq",
        "-s",
        "256",
        "-e",
        "trace=open,openat,execve",
        "-o",
    ])
    .arg(&file)
    .arg(env!("CARGO_BIN_EXE_toolsmith"))
    .arg("--state")
    .arg(env.state())
    .args(args);
    let out = cmd.output().expect("strace runs");
    let trace = std::fs::read_to_string(&file).expect("the trace");
    (trace, out.status.code())
}

/// The trace's opens of TLS files that could read them (an `O_PATH` open reads nothing: the
/// sandbox's view opens `/etc/ssl/certs` so to bind it for the command).
fn tls_opens(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| l.contains(" open(") || l.contains(" openat("))
        .filter(|l| !l.contains("O_PATH"))
        .filter(|l| TLS_FILES.iter().any(|f| l.contains(f)))
        .collect()
}

#[test]
fn a_sandboxed_run_never_loads_tls_or_initialises_libgit2() {
    if !can_trace() {
        return;
    }
    let env = TestEnv::new();
    let (trace, code) = traced(&env, &["sandbox", "--", "/bin/true"]);
    assert_eq!(code, Some(0), "{trace}");
    // The trace covers the helper the CLI forked and pid 1 down to the command: the
    // observation is real (three processes at least: the CLI, the helper, pid 1).
    let pids: std::collections::BTreeSet<&str> = trace
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(pids.len() >= 3, "fewer than 3 processes traced:\n{trace}");
    assert!(
        trace
            .lines()
            .any(|l| l.contains("execve(\"/bin/true\"") && l.contains("= 0")),
        "no execve of the command in the trace:\n{trace}"
    );
    let loaded = tls_opens(&trace);
    assert!(
        loaded.is_empty(),
        "a sandboxed run loaded TLS files (libgit2 or a TLS client initialised on its path):\n{}",
        loaded.join("\n")
    );
}

#[test]
fn no_command_loads_tls_and_only_one_that_needs_the_registry_opens_it() {
    if !can_trace() {
        return;
    }
    let env = TestEnv::new();
    // libgit2 is built without a TLS or SSH backend (a sync runs `git` itself), so no command
    // loads OpenSSL's configuration or the CA certificates; the commands that need no registry
    // do not open one either.
    for args in [&["--version"][..], &["status"]] {
        let (trace, _) = traced(&env, args);
        let loaded = tls_opens(&trace);
        assert!(
            loaded.is_empty(),
            "toolsmith {args:?} loaded TLS files:\n{}",
            loaded.join("\n")
        );
        assert!(
            !trace.contains("registry/.git"),
            "toolsmith {args:?} opened the registry:\n{trace}"
        );
    }
    // The control: a command that needs the registry opens it, and the trace sees that.
    let (trace, code) = traced(&env, &["tools"]);
    assert_eq!(code, Some(0), "{trace}");
    assert!(Path::new(&env.state().join("registry/.git")).is_dir());
    assert!(
        trace.contains("registry/.git"),
        "opening the registry opened none of its files: the trace would not see it either:\n{trace}"
    );
    let loaded = tls_opens(&trace);
    assert!(
        loaded.is_empty(),
        "opening the registry loaded TLS files:\n{}",
        loaded.join("\n")
    );
}
