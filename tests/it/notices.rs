//! Review at the moment (issue 33, item 3): `toolsmith install --agents` adds a session-start
//! hook to Claude Code, Gemini CLI and Codex, keeping the user's own hooks and changing nothing
//! the second time; the hook's command, run as the agent runs it (`sh -c`, the command read
//! from the agent's file), tells of the proposals awaiting review once, and nothing at the
//! next session start.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{TestEnv, json_of};
use serde_json::{Value, json};

/// Asks for a tool with examples; it is validated and proposed offline. Its name.
fn propose(env: &TestEnv, what: &str, examples: &[&str]) -> String {
    let mut cmd = env.cli();
    cmd.args(["--json", "new", what]);
    for e in examples {
        cmd.args(["--example", e]);
    }
    let out = cmd.timeout(Duration::from_secs(120)).assert().success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    made["tool"].as_str().expect("tool").to_owned()
}

/// The SessionStart commands in an agent's file.
fn session_start_commands(file: &Path) -> Vec<String> {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("json");
    doc["hooks"]["SessionStart"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["hooks"].as_array())
        .flatten()
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .collect()
}

/// Runs a hook's command as the agents do: a shell line, in the user's environment.
fn run_hook(env: &TestEnv, command: &str) -> String {
    let mut cmd = Command::new("sh");
    env.apply(&mut cmd);
    // The daemon's state directory, as systemd gives it (the hook takes no --state).
    cmd.env("STATE_DIRECTORY", env.state())
        .args(["-c", command]);
    let out = cmd.output().expect("run the hook");
    assert!(
        out.status.success(),
        "the hook fails: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn session_start_hooks_are_installed_once_and_tell_each_proposal_once() {
    let env = TestEnv::new();
    let home = env.path().join("home");
    let codex = env.path().join("codex-home");
    std::fs::create_dir_all(home.join(".claude")).expect("claude");
    std::fs::create_dir_all(home.join(".gemini")).expect("gemini");
    std::fs::create_dir_all(&codex).expect("codex");
    // The user's own settings and hooks, one of them at session start.
    let theirs = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"SessionStart\": [\n      {\n        \"matcher\": \"startup\",\n        \"hooks\": [{\"type\": \"command\", \"command\": \"cat ~/notes.md\"}]\n      }\n    ],\n    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"audit\"}]}]\n  }\n}\n";
    let claude = home.join(".claude/settings.json");
    std::fs::write(&claude, theirs).expect("write");

    let install = || {
        let out = env
            .cli()
            .env("CODEX_HOME", &codex)
            .args(["--json", "install", "--agents"])
            .assert()
            .success();
        json_of(out.get_output())
    };
    let report = install();
    let hooks: Vec<(String, String)> = report["hooks"]
        .as_array()
        .expect("hooks")
        .iter()
        .map(|h| {
            (
                h["agent"].as_str().expect("agent").to_owned(),
                h["status"].as_str().expect("status").to_owned(),
            )
        })
        .collect();
    let as_pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, s)| ((*a).to_owned(), (*s).to_owned()))
            .collect()
    };
    assert_eq!(
        hooks,
        as_pairs(&[
            ("claude-code", "updated"),
            ("codex", "created"),
            // Its settings.json was created a moment before, by the MCP entry.
            ("gemini-cli", "updated"),
        ])
    );
    let toolsmith = env!("CARGO_BIN_EXE_toolsmith");
    let ours = format!("{toolsmith} notices --session-start");
    // Claude Code: the user's hooks and keys kept, ours added beside theirs.
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&claude).expect("read")).expect("json");
    assert_eq!(doc["model"], "opus");
    assert_eq!(
        doc["hooks"]["PreToolUse"],
        json!([{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}])
    );
    assert_eq!(
        session_start_commands(&claude),
        ["cat ~/notes.md".to_owned(), ours.clone()]
    );
    assert_eq!(doc["hooks"]["SessionStart"][0]["matcher"], "startup");
    assert_eq!(
        session_start_commands(&codex.join("hooks.json")),
        std::slice::from_ref(&ours)
    );
    assert_eq!(
        session_start_commands(&home.join(".gemini/settings.json")),
        std::slice::from_ref(&ours)
    );

    // Again: nothing changes, byte for byte.
    let files = [
        claude.clone(),
        codex.join("hooks.json"),
        home.join(".gemini/settings.json"),
    ];
    let before: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("read"))
        .collect();
    let report = install();
    let statuses: Vec<&str> = report["hooks"]
        .as_array()
        .expect("hooks")
        .iter()
        .filter_map(|h| h["status"].as_str())
        .collect();
    assert_eq!(statuses, ["unchanged"; 3]);
    let after: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("read"))
        .collect();
    assert_eq!(before, after);

    // Before anything is proposed (no store yet): the hook says nothing.
    assert_eq!(run_hook(&env, &ours), "");

    let du = propose(
        &env,
        "Show the disk use of a folder",
        &["du -sh src", "du -sh tests"],
    );
    let wc = propose(
        &env,
        "Count the lines of the sources",
        &["wc -l src/main.rs", "wc -l src/lib.rs"],
    );
    // The first session start tells of both, in the agents' hook answer.
    let said = run_hook(&env, &ours);
    let answer: Value = serde_json::from_str(said.trim()).expect("one JSON answer");
    let line = format!("toolsmith: 2 tools await your review ({du}, {wc}) — toolsmith ui");
    assert_eq!(answer["systemMessage"], line.as_str(), "{said}");
    assert_eq!(
        answer["hookSpecificOutput"],
        json!({"hookEventName": "SessionStart", "additionalContext": line})
    );
    // The next session start, from any agent: nothing more.
    assert_eq!(run_hook(&env, &ours), "");
    // Still waiting, and still listed by the command without the hook's flag.
    let out = env.cli().args(["--json", "notices"]).assert().success();
    let listed = json_of(out.get_output());
    assert_eq!(listed["waiting"], 2);
    assert_eq!(listed["line"], Value::Null, "told already: {listed:#}");
}

/// A process of the test's own (the session bus, the notification server), killed at the end.
struct Spawned(std::process::Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether the desktop's parts are here: a D-Bus daemon, a program that sends notifications,
/// and GLib's Python binding the notification server is written with (`.ci/run` installs them).
fn desktop_parts() -> bool {
    let on_path = |p: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let gi = Command::new("/usr/bin/python3")
        .args(["-c", "import gi"])
        .output()
        .is_ok_and(|o| o.status.success());
    let here = on_path("dbus-daemon") && (on_path("gdbus") || on_path("notify-send")) && gi;
    assert!(
        here || std::env::var("CI").as_deref() != Ok("true"),
        "CI must have dbus-daemon, gdbus or notify-send and python3-gi (.ci/run installs them)"
    );
    here
}

/// The tools a notification names: `… your review (a, b) — …` or `(a; 3 in all)`.
fn named(body: &str) -> Vec<String> {
    let inside = body
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(inside, _)| inside)
        .unwrap_or_else(|| panic!("no names in {body:?}"));
    let names = inside.split(';').next().unwrap_or_default();
    names.split(", ").map(str::to_owned).collect()
}

#[test]
fn the_daemon_tells_the_desktop_once_per_proposal_across_a_restart() {
    use std::io::{BufRead, BufReader};
    if !desktop_parts() {
        eprintln!("skipped: no dbus-daemon, gdbus/notify-send or python3-gi here");
        return;
    }
    let env = TestEnv::new();
    // A real session bus of the test's own, and a real notification server on it.
    let socket = env.path().join("bus");
    let mut bus = Command::new("dbus-daemon");
    bus.args(["--session", "--nofork", "--print-address=1"])
        .arg(format!("--address=unix:path={}", socket.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut bus = Spawned(bus.spawn().expect("dbus-daemon"));
    let mut address = String::new();
    BufReader::new(bus.0.stdout.take().expect("stdout"))
        .read_line(&mut address)
        .expect("the bus's address");
    let address = address.trim().to_owned();
    assert!(address.starts_with("unix:path="), "{address}");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/notification_server.py");
    let mut server = Command::new("/usr/bin/python3");
    server
        .arg(&script)
        .env("DBUS_SESSION_BUS_ADDRESS", &address)
        .stdout(std::process::Stdio::piped());
    let mut server = Spawned(server.spawn().expect("notification server"));
    let mut lines = BufReader::new(server.0.stdout.take().expect("stdout")).lines();
    assert_eq!(
        lines.next().and_then(Result::ok).as_deref(),
        Some("ready"),
        "the server owns org.freedesktop.Notifications"
    );
    let (tx, told) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = tx.send(serde_json::from_str(&line).expect("a JSON line"));
        }
    });

    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let config = env.write_config(&format!(
        "[generate]\nbackend = \"template\"\nmin_score = 20\nmax_per_run = 2\n\n[ingest]\ndebounce_ms = 10\n\n[mine]\n\
         after_new_actions = 5\n\n[review]\nnotify = true\n\n[[source]]\nformat = \"native\"\n\
         path = \"{}\"\n",
        logs.display()
    ));
    let daemon = |env: &TestEnv| {
        let mut cmd = env.daemon_command();
        cmd.arg("--config")
            .arg(&config)
            .env("DBUS_SESSION_BUS_ADDRESS", &address);
        common::Daemon::start(env, cmd)
    };
    let running = daemon(&env);
    let mut events = running.connect();
    let subscribed = events.call(1, "events.subscribe", json!({"kinds": ["generate."]}));
    assert!(subscribed.get("error").is_none(), "{subscribed}");
    // Mining runs on the new actions and generation after it; each proposal is told.
    std::fs::copy(
        crate::generate::habit_log(env.path()),
        logs.join("agent.jsonl"),
    )
    .expect("copy log");
    loop {
        let message = events.read_or(|| running.log());
        if message["params"]["kind"] == "generate.finished"
            && message["params"]["data"]["candidates"].as_u64() > Some(0)
        {
            break;
        }
    }
    let out = env.cli().args(["--json", "candidates"]).assert().success();
    let mut awaiting: Vec<String> = json_of(out.get_output())
        .as_array()
        .expect("candidates")
        .iter()
        .filter(|c| c["state"] == "awaiting-review")
        .filter_map(|c| c["tool"].as_str().map(str::to_owned))
        .collect();
    awaiting.sort();
    assert!(!awaiting.is_empty());
    let mut seen: Vec<String> = Vec::new();
    while seen.len() < awaiting.len() {
        let note = told
            .recv_timeout(common::PATIENCE)
            .unwrap_or_else(|_| panic!("told {seen:?} of {awaiting:?}:\n{}", running.log()));
        assert_eq!(note["app"], "toolsmith");
        assert_eq!(note["summary"], "toolsmith");
        let body = note["body"].as_str().expect("body");
        assert!(
            body.contains("your review (") && body.ends_with(") — toolsmith ui"),
            "{body}"
        );
        seen.extend(named(body));
    }
    seen.sort();
    assert_eq!(seen, awaiting, "each proposal told once");
    drop(events);
    drop(running);

    // Proposed while the daemon is away; after the restart only that one is told.
    let du = propose(
        &env,
        "Show the disk use of a folder",
        &["du -sh src", "du -sh tests"],
    );
    let running = daemon(&env);
    let note = told
        .recv_timeout(common::PATIENCE)
        .unwrap_or_else(|_| panic!("nothing told after the restart:\n{}", running.log()));
    let body = note["body"].as_str().expect("body");
    assert_eq!(
        body,
        format!(
            "1 new tool awaits your review ({du}; {} in all) — toolsmith ui",
            awaiting.len() + 1
        )
    );
    drop(running);
    drop(server);
    drop(bus);
}
