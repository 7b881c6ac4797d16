//! Ingest on a real machine: what is not a log file (a FIFO, a socket, a file of another format)
//! is skipped and shown by `toolsmith sources`, never blocks reading, reloading or stopping; and
//! an idle daemon with more sessions than it keeps open does no work.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Daemon, PATIENCE, TestEnv, append, json_of};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// A native-format line: one shell call with its result.
fn native(session: &str, i: usize) -> String {
    format!(
        "{}\n",
        json!({"v": 1, "session": session, "tool": "shell",
               "input": {"command": format!("make step-{i}")}, "ok": true, "exit_code": 0})
    )
}

/// One Bash call of a Claude Code session and its result (two lines).
fn claude_action(session: &str, n: usize) -> String {
    let common = json!({"isSidechain": false, "userType": "external", "cwd": "/home/dev/app",
                        "sessionId": session, "version": "1.0.98",
                        "timestamp": "2026-11-10T09:00:00.000Z"});
    let mut call = common.clone();
    let mut result = common;
    call["parentUuid"] = Value::Null;
    call["type"] = json!("assistant");
    call["uuid"] = json!(format!("a-{session}-{n}"));
    call["message"] = json!({"role": "assistant", "content": [{"type": "tool_use",
        "id": format!("toolu_{session}_{n}"), "name": "Bash",
        "input": {"command": format!("make test-{n}")}}]});
    result["parentUuid"] = json!(format!("a-{session}-{n}"));
    result["type"] = json!("user");
    result["uuid"] = json!(format!("u-{session}-{n}"));
    result["message"] = json!({"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": format!("toolu_{session}_{n}"), "content": "ok", "is_error": false}]});
    format!("{call}\n{result}\n")
}

fn start_with(env: &TestEnv, config: &str) -> Daemon {
    let path = env.write_config(config);
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(path);
    Daemon::start(env, cmd)
}

fn status(env: &TestEnv) -> Value {
    json_of(
        &env.cli()
            .args(["status", "--json"])
            .timeout(PATIENCE)
            .output()
            .expect("toolsmith status"),
    )
}

fn ingest_counter(status: &Value, key: &str) -> u64 {
    status["counters"]["ingest"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no ingest counter {key} in status: {status}"))
}

/// Waits until the daemon has stored `n` actions in all.
fn wait_for_actions(env: &TestEnv, daemon: &Daemon, n: u64) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let got = ingest_counter(&status(env), "actions");
        if got >= n {
            assert_eq!(got, n, "more actions stored than written");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the daemon stored {got} actions, not {n}; log:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `toolsmith sources` (text), once it satisfies `ready`.
fn sources_once(env: &TestEnv, daemon: &Daemon, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let out = env
            .cli()
            .arg("sources")
            .timeout(PATIENCE)
            .output()
            .expect("sources");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if ready(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "`toolsmith sources` never showed what was expected:\n{text}\nlog:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn source_table(dir: &Path, format: &str) -> String {
    format!(
        "[[source]]\nformat = \"{format}\"\npath = \"{}\"\n",
        dir.display()
    )
}

#[test]
fn a_fifo_and_a_socket_in_a_source_are_reported_and_block_nothing() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    let more = env.path().join("more");
    std::fs::create_dir_all(&logs).expect("mkdir");
    std::fs::create_dir_all(&more).expect("mkdir");
    let head = "[daemon]\nshutdown_grace_s = 2\n\n[ingest]\ndebounce_ms = 20\n\n";
    append(&logs.join("m-first.jsonl"), native("first", 0).as_bytes());
    let mut daemon = start_with(&env, &format!("{head}{}", source_table(&logs, "native")));
    wait_for_actions(&env, &daemon, 1);

    // Created while the daemon watches, and sorted before the logs written next: reading them
    // would block the round (a FIFO's open waits for a writer) before it reaches the others.
    nix::unistd::mkfifo(
        &logs.join("a-pipe.jsonl"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    let _socket =
        std::os::unix::net::UnixListener::bind(logs.join("b-sock.jsonl")).expect("bind socket");
    append(&logs.join("z-next.jsonl"), native("next", 1).as_bytes());
    wait_for_actions(&env, &daemon, 2);
    append(&logs.join("m-first.jsonl"), native("first", 2).as_bytes());
    wait_for_actions(&env, &daemon, 3);

    let text = sources_once(&env, &daemon, |t| t.contains("2 files not read"));
    let pipe = logs.join("a-pipe.jsonl").display().to_string();
    let socket = logs.join("b-sock.jsonl").display().to_string();
    assert!(
        text.contains(&format!("{pipe}: a FIFO (named pipe), not a regular file")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{socket}: a unix socket, not a regular file")),
        "{text}"
    );
    assert!(
        text.contains("move it out of the source's directory"),
        "{text}"
    );
    let json = json_of(
        &env.cli()
            .args(["sources", "--json"])
            .output()
            .expect("sources"),
    );
    let native_source = json
        .as_array()
        .and_then(|all| all.iter().find(|s| s["source"] == "native"))
        .unwrap_or_else(|| panic!("no native source: {json}"));
    assert_eq!(native_source["skipped"], json!(2), "{json}");
    let skipped: Vec<&str> = native_source["skipped_files"]
        .as_array()
        .expect("skipped files")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(skipped, [pipe.as_str(), socket.as_str()], "{json}");
    assert!(ingest_counter(&status(&env), "skipped") >= 2);
    // A one-shot ingest of the same directory says so too, and reads the rest.
    let oneshot = json_of(
        &env.cli_at(&env.path().join("oneshot"))
            .args(["ingest", "--json"])
            .arg(&logs)
            .timeout(PATIENCE)
            .output()
            .expect("toolsmith ingest"),
    );
    let files = oneshot["files"].as_array().expect("files");
    let skipped_by_oneshot: Vec<&str> = files
        .iter()
        .filter(|f| f["skipped"].is_string())
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(
        skipped_by_oneshot,
        [pipe.as_str(), socket.as_str()],
        "{oneshot}"
    );
    assert_eq!(files.len(), 4, "{oneshot}");

    // A reload that adds a source works while the bad files are still there.
    append(&more.join("other.jsonl"), native("other", 3).as_bytes());
    env.write_config(&format!(
        "{head}{}\n[[source]]\nname = \"more\"\nformat = \"native\"\npath = \"{}\"\n",
        source_table(&logs, "native"),
        more.display()
    ));
    env.cli().arg("reload").timeout(PATIENCE).assert().success();
    wait_for_actions(&env, &daemon, 4);
    // The restarted tailer finds them again.
    sources_once(&env, &daemon, |t| t.contains("2 files not read"));

    env.cli().arg("stop").timeout(PATIENCE).assert().success();
    assert_eq!(daemon.wait_exit(), Some(0), "log:\n{}", daemon.log());
    assert!(daemon.log().contains("stopped cleanly"), "{}", daemon.log());
}

#[test]
fn sigterm_stops_a_daemon_whose_source_holds_a_fifo() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let mut daemon = start_with(
        &env,
        &format!(
            "[daemon]\nshutdown_grace_s = 2\n\n[ingest]\ndebounce_ms = 20\n\n{}",
            source_table(&logs, "native")
        ),
    );
    // Once a first log is read, the directory is watched: what follows is seen as it happens.
    append(&logs.join("m-first.jsonl"), native("first", 0).as_bytes());
    wait_for_actions(&env, &daemon, 1);
    nix::unistd::mkfifo(
        &logs.join("a-pipe.jsonl"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    // A log sorted after it is read: the round that met the FIFO went on.
    append(&logs.join("z-next.jsonl"), native("next", 1).as_bytes());
    wait_for_actions(&env, &daemon, 2);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit(), Some(0), "log:\n{}", daemon.log());
    assert!(daemon.log().contains("stopped cleanly"), "{}", daemon.log());
}

#[test]
fn files_the_format_does_not_recognise_are_listed_with_why() {
    let env = TestEnv::new();
    let projects = env.path().join("projects");
    std::fs::create_dir_all(projects.join("app")).expect("mkdir");
    append(
        &projects.join("app/session.jsonl"),
        claude_action("s1", 0).as_bytes(),
    );
    append(&projects.join("app/notes.txt"), b"remember the milk\n");
    append(
        &projects.join("app/other.jsonl"),
        b"{\"event\": \"not a transcript\"}\n",
    );
    // Empty: a session not written yet is not reported.
    append(&projects.join("app/new.jsonl"), b"");
    let daemon = start_with(
        &env,
        &format!(
            "[ingest]\ndebounce_ms = 20\n\n{}",
            source_table(&projects, "claude-code")
        ),
    );
    wait_for_actions(&env, &daemon, 1);
    let text = sources_once(&env, &daemon, |t| t.contains("2 files not read"));
    for name in ["notes.txt", "other.jsonl"] {
        let path = projects.join("app").join(name).display().to_string();
        assert!(
            text.contains(&format!(
                "{path}: not recognised as a claude-code log: no claude-code record in its \
                 first 64 KiB"
            )),
            "{name}: {text}"
        );
    }
    assert!(!text.contains("new.jsonl"), "{text}");
    assert!(text.contains("[[source]]"), "says what to do: {text}");

    // A rejected file that becomes a transcript is read, and no longer listed.
    std::fs::write(projects.join("app/other.jsonl"), claude_action("s2", 0)).expect("rewrite");
    wait_for_actions(&env, &daemon, 2);
    let text = sources_once(&env, &daemon, |t| t.contains("1 files not read"));
    assert!(!text.contains("other.jsonl"), "{text}");
}

#[test]
fn an_idle_daemon_past_the_open_files_cap_opens_nothing() {
    let env = TestEnv::new();
    let projects = env.path().join("projects");
    let dir = projects.join("-home-dev-app");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // More sessions than the 256 files the tailer keeps open.
    let sessions = 300;
    for i in 0..sessions {
        let id = format!("s-{i:04}");
        std::fs::write(dir.join(format!("{id}.jsonl")), claude_action(&id, 0)).expect("write");
    }
    let daemon = start_with(
        &env,
        &format!(
            "[ingest]\ndebounce_ms = 20\n\n{}",
            source_table(&projects, "claude-code")
        ),
    );
    wait_for_actions(&env, &daemon, sessions);

    // Each step writes one action to a session read last (so still open) and waits for it to
    // be stored: whatever the tailer does in between is what an idle daemon does.
    let last = format!("s-{:04}", sessions - 1);
    let log = dir.join(format!("{last}.jsonl"));
    append(&log, claude_action(&last, 1).as_bytes());
    wait_for_actions(&env, &daemon, sessions + 1);
    let before = status(&env);
    append(&log, claude_action(&last, 2).as_bytes());
    wait_for_actions(&env, &daemon, sessions + 2);
    let after = status(&env);

    let opens = ingest_counter(&after, "opens") - ingest_counter(&before, "opens");
    let rounds = ingest_counter(&after, "rounds") - ingest_counter(&before, "rounds");
    assert_eq!(
        opens, 0,
        "files were opened again while only one open file changed: {before}\n{after}"
    );
    assert!(
        (1..=2).contains(&rounds),
        "one write should take one round (two if its events straddle the debounce), took \
         {rounds}: {before}\n{after}"
    );
}
