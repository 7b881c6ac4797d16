//! The daemon's lifecycle and control socket, tested through the real binaries.

use crate::common;

use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;

use common::{Conn, Daemon, TestEnv};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

fn start(env: &TestEnv) -> Daemon {
    Daemon::start(env, env.daemon_command())
}

fn code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error response, got {response}"))
}

#[test]
fn starts_answers_status_and_stops_cleanly_on_sigterm() {
    let env = TestEnv::new();
    let mut daemon = start(&env);
    // READY=1 promises a bound socket: connecting must work right away.
    let out = env.cli().args(["status", "--json"]).assert().success();
    let status: Value = serde_json::from_slice(&out.get_output().stdout).expect("status JSON");
    assert_eq!(status["pid"], json!(daemon.pid()));
    assert_eq!(status["state_dir"], json!(env.state()));
    assert_eq!(status["socket"], json!(env.socket()));
    assert_eq!(
        status["registry_dir"],
        json!(env.state().join("registry")),
        "with --state, the registry is beside the state"
    );
    assert_eq!(status["config_file"], Value::Null);
    assert_eq!(status["previous_run"], Value::Null);
    assert_eq!(status["version"], json!(env!("CARGO_PKG_VERSION")));

    let human = env.cli().arg("status").assert().success();
    let text = String::from_utf8_lossy(&human.get_output().stdout).into_owned();
    assert!(text.contains("running"), "{text}");
    assert!(text.contains(&env.socket().display().to_string()), "{text}");

    daemon.signal(Signal::SIGTERM);
    daemon.wait_notify("STOPPING=1");
    assert_eq!(daemon.wait_exit(), Some(0), "log:\n{}", daemon.log());
    assert!(!env.socket().exists(), "socket file left behind");
    assert!(daemon.log().contains("stopped cleanly"), "{}", daemon.log());

    // The next run knows the previous one ended cleanly.
    let _second = start(&env);
    let out = env.cli().args(["status", "--json"]).assert().success();
    let status: Value = serde_json::from_slice(&out.get_output().stdout).expect("status JSON");
    assert_eq!(status["previous_run"]["clean_stop"], json!(true));
}

#[test]
fn sigint_and_stop_command_also_exit_zero() {
    let env = TestEnv::new();
    let mut daemon = start(&env);
    daemon.signal(Signal::SIGINT);
    assert_eq!(daemon.wait_exit(), Some(0));

    let mut daemon = start(&env);
    env.cli().arg("stop").assert().success();
    assert_eq!(daemon.wait_exit(), Some(0));
}

#[test]
fn a_killed_daemon_is_reported_as_unclean_and_its_stale_socket_replaced() {
    let env = TestEnv::new();
    let mut daemon = start(&env);
    daemon.signal(Signal::SIGKILL);
    daemon.wait_exit();
    assert!(env.socket().exists(), "SIGKILL leaves the socket file");
    let _daemon = start(&env);
    let out = env.cli().args(["status", "--json"]).assert().success();
    let status: Value = serde_json::from_slice(&out.get_output().stdout).expect("status JSON");
    assert_eq!(status["previous_run"]["clean_stop"], json!(false));
}

#[test]
fn second_instance_is_refused_naming_the_holder() {
    let env = TestEnv::new();
    let daemon = start(&env);
    let out = env
        .daemon_command()
        .output()
        .expect("run a second toolsmithd");
    assert_eq!(out.status.code(), Some(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("pid {}", daemon.pid())),
        "stderr does not name the holder: {stderr}"
    );
    // The first one is unaffected.
    env.cli().arg("status").assert().success();
}

#[test]
fn sighup_with_a_broken_config_keeps_the_old_one() {
    let env = TestEnv::new();
    let config = env.write_config("[daemon]\nmax_connections = 8\n");
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(&config);
    let mut daemon = Daemon::start(&env, cmd);

    std::fs::write(&config, "[daemon]\nmax_connections = \"many\"\n").expect("break config");
    daemon.signal(Signal::SIGHUP);
    // The reload is asynchronous; the control command gives a synchronous answer too.
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .arg("reload")
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("config.toml:2:"), "{stderr}");
    assert!(stderr.contains("daemon.max_connections"), "{stderr}");
    assert!(daemon.is_running());
    let mut conn = daemon.connect();
    let status = conn.call(1, "status", Value::Null);
    assert_eq!(status["result"]["counters"]["config_reloads"], json!(0));
    let log = daemon.log();
    assert!(
        log.contains("reload failed, keeping the previous configuration"),
        "log:\n{log}"
    );

    // A good file is picked up, and its limits apply at once.
    std::fs::write(&config, "[daemon]\nmax_connections = 2\n").expect("fix config");
    daemon.signal(Signal::SIGHUP);
    let mut reloaded = false;
    for _ in 0..200 {
        let status = conn.call(2, "status", Value::Null);
        if status["result"]["counters"]["config_reloads"] == json!(1) {
            reloaded = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(
        reloaded,
        "SIGHUP reload did not happen; log:\n{}",
        daemon.log()
    );
    let _second = daemon.connect();
    let mut third = daemon.connect();
    let refused = third.read_or(|| daemon.log());
    assert_eq!(code(&refused), -32002, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("busy")
    );
}

#[test]
fn bad_requests_get_errors_and_the_connection_keeps_working() {
    let env = TestEnv::new();
    let daemon = start(&env);
    let mut conn = daemon.connect();

    conn.send_raw(b"{this is not json\n");
    assert_eq!(code(&conn.read()), -32700);

    conn.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}]\n");
    assert_eq!(code(&conn.read()), -32600);

    conn.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":2}\n");
    assert_eq!(code(&conn.read()), -32600);

    let unknown = conn.call(3, "frobnicate", Value::Null);
    assert_eq!(code(&unknown), -32601);
    assert_eq!(unknown["id"], json!(3));

    let bad_params = conn.call(4, "status", json!({"verbose": true}));
    assert_eq!(code(&bad_params), -32602);

    // Over 1 MiB, sent in pieces without a newline until the end: refused, not buffered whole.
    let chunk = vec![b'a'; 64 * 1024];
    for _ in 0..40 {
        conn.send_raw(&chunk);
    }
    conn.send_raw(b"\n");
    let too_large = conn.read();
    assert_eq!(code(&too_large), -32003, "{too_large}");

    // Invalid UTF-8 is a parse error, not a crash.
    conn.send_raw(b"\xff\xfe\xfd\n");
    assert_eq!(code(&conn.read()), -32700);

    // A notification (no id) gets no answer; the next request still does.
    conn.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\"}\n");
    let ok = conn.call(5, "status", Value::Null);
    assert_eq!(ok["id"], json!(5));
    assert!(ok["result"]["pid"].is_number(), "{ok}");
    assert!(
        ok["result"]["counters"]["request_errors"].as_u64() >= Some(7),
        "{ok}"
    );
}

#[test]
fn events_are_streamed_to_subscribers() {
    let env = TestEnv::new();
    let config = env.write_config("");
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(&config);
    let mut daemon = Daemon::start(&env, cmd);
    let mut sub = daemon.connect();
    let ack = sub.call(
        1,
        "events.subscribe",
        json!({"kinds": ["config.", "daemon.stopping"]}),
    );
    assert_eq!(ack["result"]["subscribed"], json!(true), "{ack}");

    let mut other = daemon.connect();
    let reload = other.call(1, "config.reload", Value::Null);
    assert_eq!(reload["result"]["reloaded"], json!(true), "{reload}");
    let event = sub.read();
    assert_eq!(event["method"], json!("event"));
    assert_eq!(event["params"]["kind"], json!("config.reloaded"));
    assert!(event["params"]["seq"].as_u64() > Some(0));

    daemon.signal(Signal::SIGTERM);
    let event = sub.read();
    assert_eq!(event["params"]["kind"], json!("daemon.stopping"));
    assert_eq!(daemon.wait_exit(), Some(0));
}

#[test]
fn watchdog_pings_come_from_the_main_loop() {
    let env = TestEnv::new();
    let mut cmd = env.daemon_command();
    cmd.env("WATCHDOG_USEC", "200000");
    let mut daemon = Daemon::start(&env, cmd);
    daemon.wait_notify("WATCHDOG=1");
    daemon.wait_notify("WATCHDOG=1");
}

#[test]
fn cli_says_when_the_daemon_is_not_running() {
    let env = TestEnv::new();
    let out = env.cli().arg("status").assert().code(3);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("toolsmithd is not running"), "{stderr}");
    assert!(stderr.contains("Start it with `toolsmithd`"), "{stderr}");
    let out = env.cli().args(["stop", "--json"]).assert().code(3);
    let body: Value =
        serde_json::from_slice(&out.get_output().stderr).expect("JSON error on stderr");
    assert_eq!(body["error"]["exit_code"], json!(3));
}

#[test]
fn invalid_config_and_damaged_store_stop_start_up_with_their_codes() {
    let env = TestEnv::new();
    let config = env.write_config("[daemon]\nlog_levle = \"debug\"\n");
    let out = env
        .daemon_command()
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run toolsmithd");
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("config.toml:2:1"), "{stderr}");
    assert!(stderr.contains("log_levle"), "{stderr}");

    std::fs::create_dir_all(env.state()).expect("state dir");
    std::fs::write(env.state().join("state.db"), vec![7u8; 4096]).expect("damage store");
    let out = env.daemon_command().output().expect("run toolsmithd");
    assert_eq!(out.status.code(), Some(6));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is damaged"), "{stderr}");
}

/// The store's three files and their bytes (`None`: absent).
fn store_files(env: &TestEnv) -> Vec<(String, Option<Vec<u8>>)> {
    ["state.db", "state.db-wal", "state.db-shm"]
        .iter()
        .map(|name| (name.to_string(), std::fs::read(env.state().join(name)).ok()))
        .collect()
}

#[test]
fn a_damaged_store_is_refused_and_left_as_it_was_with_its_wal() {
    let env = TestEnv::new();
    // Pages in state.db: more actions than SQLite's WAL holds before it copies them into the
    // database (1000 pages), ingested one-shot.
    let log = env.path().join("session.jsonl");
    let mut lines = String::new();
    for i in 0..6000 {
        let line = json!({"v": 1, "session": "s1", "tool": "shell",
            "input": {"command": format!("cargo test -p crate{i} -- --exact t{i}")},
            "ok": true, "exit_code": 0, "output": format!("output {i} {}", "x".repeat(600))});
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(&log, lines).expect("write log");
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    assert!(
        std::fs::metadata(env.state().join("state.db")).map_or(0, |m| m.len()) > 1 << 20,
        "the actions reached state.db"
    );
    // Writes only in the WAL: a daemon records its start there, then dies without a checkpoint.
    let mut daemon = start(&env);
    daemon.signal(Signal::SIGKILL);
    daemon.wait_exit();
    let wal = std::fs::metadata(env.state().join("state.db-wal")).map_or(0, |m| m.len());
    assert!(wal > 0, "the daemon left writes in the WAL");
    assert!(env.state().join("state.db-shm").exists());
    // Damage the middle half of state.db: pages of actions, which the WAL does not hold.
    let db = env.state().join("state.db");
    let mut bytes = std::fs::read(&db).expect("read state.db");
    let len = bytes.len();
    bytes[len / 4..len * 3 / 4].fill(0x5a);
    std::fs::write(&db, bytes).expect("damage state.db");
    let before = store_files(&env);

    let log_arg = log.to_string_lossy().into_owned();
    let commands: [(&str, Vec<&str>); 3] = [
        ("toolsmithd", vec![]),
        ("toolsmith", vec!["ingest", "--format", "native", &log_arg]),
        ("toolsmith", vec!["mine"]),
    ];
    for (program, args) in commands {
        // Bounded: a daemon that took the store would serve forever.
        let mut cmd = if program == "toolsmithd" {
            assert_cmd::Command::from_std(env.daemon_command())
        } else {
            let mut cmd = env.cli();
            cmd.args(&args);
            cmd
        };
        let out = cmd
            .timeout(common::PATIENCE)
            .output()
            .expect("run the command");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{program} {args:?}: {stderr}");
        let after = store_files(&env);
        for ((name, was), (_, is)) in before.iter().zip(&after) {
            assert!(was == is, "{program} {args:?} changed {name}: {stderr}");
        }
        for said in [
            "is damaged",
            "Nothing was changed",
            "state.db-wal",
            "state.db-shm",
            "present: state.db, state.db-wal, state.db-shm",
            "mv ",
        ] {
            assert!(
                stderr.contains(said),
                "{program} {args:?} says {said:?}: {stderr}"
            );
        }
    }
}

/// Runs `toolsmith` as uid 65534 against a socket whose file permissions were loosened: the
/// daemon's SO_PEERCRED check must still refuse it.
#[test]
fn a_peer_with_another_uid_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: the other-uid test needs root to run a client as uid 65534");
        return;
    }
    let env = TestEnv::new();
    let daemon = start(&env);
    // Let uid 65534 reach the socket through the file system at all.
    let mut dir = Some(env.socket().parent().expect("socket dir").to_path_buf());
    while let Some(d) = dir {
        let mode = std::fs::metadata(&d).expect("stat").permissions().mode();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode | 0o711))
            .expect("chmod dir");
        dir = d
            .parent()
            .filter(|p| p != &std::path::Path::new("/"))
            .map(|p| p.to_path_buf());
    }
    std::fs::set_permissions(env.socket(), std::fs::Permissions::from_mode(0o666))
        .expect("chmod socket");

    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut cmd);
    cmd.arg("--socket")
        .arg(env.socket())
        .arg("status")
        .uid(65534)
        .gid(65534);
    let out = cmd.output().expect("run toolsmith as uid 65534");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "stderr: {stderr}");
    assert!(stderr.contains("permission denied"), "{stderr}");
    assert!(stderr.contains("uid 65534"), "{stderr}");
    let log = daemon.log();
    assert!(
        log.contains("refused a control connection from another user") && log.contains("65534"),
        "log:\n{log}"
    );
    let mut conn = daemon.connect();
    let status = conn.call(1, "status", Value::Null);
    assert_eq!(
        status["result"]["counters"]["connections_refused_peer"],
        json!(1)
    );
}

/// systemd-style socket activation: the listening socket arrives as fd 3 with LISTEN_FDS=1.
#[test]
fn uses_a_socket_passed_by_systemd() {
    let env = TestEnv::new();
    let path = env.path().join("activated.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let fd = listener.as_raw_fd();
    let mut cmd = std::process::Command::new("/bin/sh");
    env.apply(&mut cmd);
    // $$ is the shell's pid, which `exec` hands on to toolsmithd: LISTEN_PID matches.
    cmd.arg("-c")
        .arg("LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\" --state \"$1\"")
        .arg(env!("CARGO_BIN_EXE_toolsmithd"))
        .arg(env.state());
    // SAFETY: dup2 and fcntl are async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let flags = libc::fcntl(3, libc::F_GETFD);
            libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            Ok(())
        });
    }
    let mut daemon = Daemon::start(&env, cmd);
    drop(listener);
    let mut conn = Conn::open(&path);
    let status = conn.call(1, "status", Value::Null);
    assert_eq!(
        status["result"]["socket_activated"],
        json!(true),
        "{status}"
    );
    assert_eq!(status["result"]["socket"], json!(path));
    assert!(
        !env.socket().exists(),
        "bound its own socket despite activation"
    );
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit(), Some(0));
    assert!(
        path.exists(),
        "the activated socket belongs to systemd and must stay"
    );
}

#[test]
fn sandboxed_processes_cannot_use_the_control_socket() {
    let env = TestEnv::new();
    let mut daemon = start(&env);
    // First line: the runtime directory (or anything holding it) is no workspace.
    let runtime = env.state().join("run");
    let out = env
        .cli()
        .args(["sandbox", "--workspace", "read"])
        .arg(&runtime)
        .args(["--", "true"])
        .assert()
        .code(125);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(
        stderr.contains("is toolsmith's runtime directory"),
        "{stderr}"
    );
    // Second line: the socket reached by another name (a hard link in a directory that is
    // allowed) from inside a sandbox; `toolsmith stop` there is refused by the daemon itself.
    let ws = env.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    std::fs::hard_link(&daemon.socket, ws.join("sock")).expect("hard link to the socket");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_toolsmith"));
    let out = env
        .cli()
        .args(["sandbox", "--workspace", "read"])
        .arg(&ws)
        .arg("--tool-dir")
        .arg(bin.parent().expect("bin dir"))
        .args([
            "--",
            "/tool/toolsmith",
            "--socket",
            "/workspace/sock",
            "stop",
        ])
        .output()
        .expect("toolsmith sandbox runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("inside a sandbox"), "{stderr}");
    assert!(!stderr.contains("toolsmithd is stopping"), "{stderr}");
    assert!(daemon.is_running(), "the daemon was stopped from a sandbox");
    let status = daemon.connect().call(1, "status", Value::Null);
    assert_eq!(
        status["result"]["counters"]["connections_refused_peer"],
        json!(1),
        "{status:#}"
    );
    assert!(
        daemon
            .log()
            .contains("refused a control connection from inside a sandbox"),
        "{}",
        daemon.log()
    );
}
