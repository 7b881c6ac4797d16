//! One habit done in four agents — Claude Code, Codex, Gemini CLI and OpenCode — is one
//! pattern whose evidence names all four: ingest reads each agent's own format, mining sees
//! the same command lines whichever agent ran them.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{TestEnv, json_of};

/// The habit, with the package varying: the lines exactly as each agent ran them.
fn habit(package: &str) -> [String; 3] {
    [
        "cargo fmt --all".to_owned(),
        format!("cargo clippy -p {package} -- -D warnings"),
        format!("cargo test -p {package} 2>&1 | tail -n 20"),
    ]
}

/// What each session does: its own everyday commands around the habit, done twice.
fn session_lines(agent: usize) -> Vec<String> {
    let packages = [
        ["core", "cli"],
        ["store", "api"],
        ["parser", "web"],
        ["mine", "ingest"],
    ];
    let around = [
        ["git log --oneline -5", "cat Cargo.toml", "ls crates"],
        ["git diff HEAD~1", "wc -l src/lib.rs", "ls -la docs"],
        ["git branch -a", "head -n 40 README.md", "du -sh target"],
        [
            "git show --stat",
            "tail -n 30 CHANGELOG.md",
            "find . -name '*.toml'",
        ],
    ];
    let mut lines = Vec::new();
    for (i, package) in packages[agent].iter().enumerate() {
        lines.push(around[agent][i].to_owned());
        lines.extend(habit(package));
    }
    lines.push(around[agent][2].to_owned());
    lines
}

fn claude_code(dir: &Path, lines: &[String]) {
    let session = "7a1c0e52-4b1d-4f0e-9a51-1c2d3e4f5a60";
    let mut text = String::new();
    for (i, command) in lines.iter().enumerate() {
        let id = format!("toolu_01X{i:04}");
        let call = json!({"parentUuid": null, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/app", "sessionId": session, "version": "2.1.97", "type": "assistant",
            "message": {"id": format!("msg_{i}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": id, "name": "Bash",
                    "input": {"command": command}}]},
            "uuid": format!("a{i:07}-0000-4000-8000-000000000000"),
            "timestamp": format!("2026-11-20T10:{i:02}:00.000Z")});
        let result = json!({"parentUuid": format!("a{i:07}-0000-4000-8000-000000000000"),
            "isSidechain": false, "userType": "external", "cwd": "/home/dev/app",
            "sessionId": session, "version": "2.1.97", "type": "user",
            "message": {"role": "user", "content": [{"tool_use_id": id, "type": "tool_result",
                "content": "ok", "is_error": false}]},
            "uuid": format!("u{i:07}-0000-4000-8000-000000000000"),
            "timestamp": format!("2026-11-20T10:{i:02}:01.000Z")});
        text.push_str(&format!("{call}\n{result}\n"));
    }
    let projects = dir.join(".claude/projects/-home-dev-app");
    std::fs::create_dir_all(&projects).expect("mkdir");
    std::fs::write(projects.join(format!("{session}.jsonl")), text).expect("write");
}

/// A Codex rollout (codex-rs 0.122 envelope; `shell_command` with its text output).
fn codex(dir: &Path, lines: &[String]) {
    let session = "019c5526-3753-7dc1-84fb-8e88ea6ab0fb";
    let mut text = format!(
        "{}\n",
        json!({"timestamp": "2026-11-21T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": session, "timestamp": "2026-11-21T09:00:00.000Z",
                "cwd": "/home/dev/app", "originator": "codex_cli_rs", "cli_version": "0.122.0",
                "source": "cli", "model_provider": "openai"}})
    );
    for (i, command) in lines.iter().enumerate() {
        let call = format!("call_{i:03}");
        let args = json!({"command": command, "workdir": "/home/dev/app"}).to_string();
        text.push_str(&format!(
            "{}\n{}\n",
            json!({"timestamp": format!("2026-11-21T09:{i:02}:00.000Z"), "type": "response_item",
                "payload": {"type": "function_call", "name": "shell_command",
                    "arguments": args, "call_id": call}}),
            json!({"timestamp": format!("2026-11-21T09:{i:02}:01.000Z"), "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": call,
                    "output": "Exit code: 0\nWall time: 0.2 seconds\nOutput:\nok\n"}})
        ));
    }
    let day = dir.join(".codex/sessions/2026/11/21");
    std::fs::create_dir_all(&day).expect("mkdir");
    std::fs::write(
        day.join(format!("rollout-2026-11-21T09-00-00-{session}.jsonl")),
        text,
    )
    .expect("write");
}

/// A Gemini CLI JSONL session (google-gemini/gemini-cli `chatRecordingService.ts`, 0.39+: a
/// metadata line, then messages; a tool call with its result in `toolCalls`).
fn gemini_cli(dir: &Path, lines: &[String]) {
    let session = "5d1e8f3a-0c2b-4e7a-9f61-2b3c4d5e6f70";
    let mut text = format!(
        "{}\n",
        json!({"sessionId": session, "projectHash": "9f8e", "startTime": "2026-11-22T08:00:00.000Z",
            "kind": "main", "directories": ["/home/dev/app"]})
    );
    for (i, command) in lines.iter().enumerate() {
        let call = format!("run_shell_command_{i}_0");
        text.push_str(&format!(
            "{}\n",
            json!({"id": format!("g{i}"), "timestamp": format!("2026-11-22T08:{i:02}:00.000Z"),
                "type": "gemini", "content": "",
                "toolCalls": [{"id": call, "name": "run_shell_command",
                    "args": {"command": command}, "status": "success",
                    "result": [{"functionResponse": {"id": call, "name": "run_shell_command",
                        "response": {"output": "ok"}}}]}]})
        ));
    }
    let chats = dir.join(".gemini/tmp/app/chats");
    std::fs::create_dir_all(&chats).expect("mkdir");
    std::fs::write(chats.join("session-2026-11-22T08-00-5d1e8f3a.jsonl"), text).expect("write");
}

/// OpenCode's database (sst/opencode `packages/opencode/src/session/session.sql.ts`, v1.2+):
/// a bash tool part per command, completed, with its exit.
fn opencode(dir: &Path, lines: &[String]) {
    let data = dir.join(".local/share/opencode");
    std::fs::create_dir_all(&data).expect("mkdir");
    let db = rusqlite::Connection::open(data.join("opencode.db")).expect("open");
    db.execute_batch(
        "PRAGMA journal_mode = wal;
         CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL, parent_id TEXT);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
             session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
             time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         INSERT INTO session VALUES ('ses_4f2a', '/home/dev/app', NULL);",
    )
    .expect("schema");
    for (i, command) in lines.iter().enumerate() {
        let start = 1_795_000_000_000_i64 + 60_000 * i as i64;
        let data = json!({"type": "tool", "tool": "bash", "callID": format!("call_{i}"),
            "state": {"status": "completed", "input": {"command": command},
                "output": "ok\n", "metadata": {"exit": 0},
                "time": {"start": start, "end": start + 200}}});
        db.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_4f2a', ?3, ?3, ?4)",
            rusqlite::params![
                format!("prt_{i:04}"),
                format!("msg_{i}"),
                start,
                data.to_string()
            ],
        )
        .expect("part");
    }
}

#[test]
fn one_habit_in_four_agents_is_one_pattern_naming_all_four() {
    let env = TestEnv::new();
    let home = env.path().join("home");
    claude_code(&home, &session_lines(0));
    codex(&home, &session_lines(1));
    gemini_cli(&home, &session_lines(2));
    opencode(&home, &session_lines(3));
    for dir in [
        ".claude/projects",
        ".codex/sessions",
        ".gemini/tmp",
        ".local/share/opencode/opencode.db",
    ] {
        let out = env
            .cli()
            .args(["--json", "ingest"])
            .arg(home.join(dir))
            .assert()
            .success();
        let report = json_of(out.get_output());
        let new: u64 = report["files"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| f["actions"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(new, 9, "{dir}: {report:#}");
    }
    env.cli().args(["--json", "mine"]).assert().success();
    let out = env
        .cli()
        .args(["--json", "patterns", "--limit", "100"])
        .assert()
        .success();
    let patterns: Vec<Value> = json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("patterns");
    let habit: Vec<&Value> = patterns
        .iter()
        .filter(|p| {
            p["status"] != "folded"
                && p["steps"].as_array().is_some_and(|s| {
                    s.iter()
                        .any(|t| t.as_str().is_some_and(|t| t.starts_with("cargo clippy")))
                })
        })
        .collect();
    assert_eq!(
        habit.len(),
        1,
        "one pattern for the habit: {:#?}",
        patterns
            .iter()
            .map(|p| (&p["status"], &p["steps"]))
            .collect::<Vec<_>>()
    );
    let habit = habit[0];
    let mut agents: Vec<&str> = habit["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .filter_map(|e| e["agent"].as_str())
        .collect();
    agents.sort_unstable();
    agents.dedup();
    assert_eq!(
        agents,
        ["claude-code", "codex", "gemini-cli", "opencode"],
        "{habit:#}"
    );
    // Its lines are the lines as run, the package one parameter.
    let evidence = &habit["evidence"][0];
    let commands: Vec<&str> = evidence["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        commands.iter().all(|c| habit_lines_contain(c)),
        "{commands:?}"
    );
}

fn habit_lines_contain(command: &str) -> bool {
    [
        "core", "cli", "store", "api", "parser", "web", "mine", "ingest",
    ]
    .iter()
    .any(|p| habit(p).iter().any(|line| line == command))
}
