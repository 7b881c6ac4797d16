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
