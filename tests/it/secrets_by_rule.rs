//! Issue 32: secrets found by rule — a secret word anywhere in a name, files whose every value is
//! a secret, structured output that marks its secrets — in the records of Claude Code, Codex,
//! Gemini CLI and OpenCode alike. Each agent's session writes a `.env.production`, reads it back,
//! exports a `SECRET_KEY_BASE`, prints `terraform output -json` and a Kubernetes Secret; after the
//! real `toolsmith ingest`, no secret is in any file of the state directory, and the look-alikes
//! (`NODE_ENV=production`, `max_tokens=4096`, `auth_mode=oauth`) are stored as the agent ran them.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{TestEnv, oneshot, stored};
use crate::secrets::{ALNUM, contains, everything_written, fake};

/// What one session does: a file written, then commands with what they printed.
struct Session {
    env_path: &'static str,
    env_content: String,
    commands: Vec<(String, String)>,
    secrets: Vec<String>,
}

fn session(seed: u64) -> Session {
    let signature = fake(seed, ALNUM, 28);
    let webhook = fake(seed + 1, ALNUM, 24);
    let base = fake(seed + 2, "0123456789abcdef", 64);
    let sensitive = fake(seed + 3, ALNUM, 20);
    let k8s = fake(seed + 4, ALNUM, 32);
    let env_content =
        format!("APP_NAME=shop\nNODE_ENV=production\nSESSION_SIGNATURE={signature}\nPORT=3000\n");
    let commands = vec![
        (
            "cat .env.production".to_owned(),
            format!("NODE_ENV=production\nWEBHOOK_VALUE={webhook}\n"),
        ),
        (
            format!("export SECRET_KEY_BASE={base} && bin/rails runner 'puts 1'"),
            "1\n".to_owned(),
        ),
        (
            "terraform output -json".to_owned(),
            format!(
                "{{\n  \"db_pass\": {{\n    \"sensitive\": true,\n    \"type\": \"string\",\n    \
                 \"value\": \"{sensitive}\"\n  }}\n}}\n"
            ),
        ),
        (
            "cat deploy/db-secret.yaml".to_owned(),
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  dsn: {k8s}\n"
            ),
        ),
        (
            "llm -m local --option max_tokens=4096 --option auth_mode=oauth 'summarise'".to_owned(),
            "ok\n".to_owned(),
        ),
    ];
    Session {
        env_path: "/home/dev/app/.env.production",
        env_content,
        commands,
        secrets: vec![signature, webhook, base, sensitive, k8s],
    }
}

fn claude_code(dir: &Path, s: &Session) {
    let id = "7a1c0e52-4b1d-4f0e-9a51-1c2d3e4f5a61";
    let mut calls: Vec<(&str, Value, String)> = vec![(
        "Write",
        json!({"file_path": s.env_path, "content": s.env_content}),
        "File created successfully".to_owned(),
    )];
    for (command, output) in &s.commands {
        calls.push(("Bash", json!({"command": command}), output.clone()));
    }
    let mut text = String::new();
    for (i, (tool, input, output)) in calls.iter().enumerate() {
        let call_id = format!("toolu_01S{i:04}");
        let base = json!({"isSidechain": false, "userType": "external", "cwd": "/home/dev/app",
            "sessionId": id, "version": "2.1.97"});
        let mut call = base.clone();
        call["parentUuid"] = Value::Null;
        call["type"] = json!("assistant");
        call["uuid"] = json!(format!("a{i:07}-0000-4000-8000-000000000000"));
        call["timestamp"] = json!(format!("2026-11-20T10:{i:02}:00.000Z"));
        call["message"] = json!({"id": format!("msg_{i}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": input}]});
        let mut result = base;
        result["parentUuid"] = json!(format!("a{i:07}-0000-4000-8000-000000000000"));
        result["type"] = json!("user");
        result["uuid"] = json!(format!("u{i:07}-0000-4000-8000-000000000000"));
        result["timestamp"] = json!(format!("2026-11-20T10:{i:02}:01.000Z"));
        result["message"] = json!({"role": "user", "content": [{"tool_use_id": call_id,
            "type": "tool_result", "content": output, "is_error": false}]});
        text.push_str(&format!("{call}\n{result}\n"));
    }
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join(format!("{id}.jsonl")), text).expect("write");
}

/// A Codex rollout: the file added with `apply_patch`, the commands as `shell_command`.
fn codex(dir: &Path, s: &Session) {
    let id = "019c5526-3753-7dc1-84fb-8e88ea6ab0fc";
    let mut text = format!(
        "{}\n",
        json!({"timestamp": "2026-11-21T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": id, "timestamp": "2026-11-21T09:00:00.000Z",
                "cwd": "/home/dev/app", "originator": "codex_cli_rs", "cli_version": "0.122.0",
                "source": "cli", "model_provider": "openai"}})
    );
    let added: String = s.env_content.lines().map(|l| format!("+{l}\n")).collect();
    let patch = format!("*** Begin Patch\n*** Add File: .env.production\n{added}*** End Patch");
    text.push_str(&format!(
        "{}\n{}\n",
        json!({"timestamp": "2026-11-21T09:00:01.000Z", "type": "response_item",
            "payload": {"type": "custom_tool_call", "status": "completed", "call_id": "call_p",
                "name": "apply_patch", "input": patch}}),
        json!({"timestamp": "2026-11-21T09:00:02.000Z", "type": "response_item",
            "payload": {"type": "custom_tool_call_output", "call_id": "call_p",
                "output": "{\"output\":\"Success. Updated the following files:\\nA .env.production\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"}})
    ));
    for (i, (command, output)) in s.commands.iter().enumerate() {
        let call = format!("call_{i:03}");
        let args = json!({"command": command, "workdir": "/home/dev/app"}).to_string();
        text.push_str(&format!(
            "{}\n{}\n",
            json!({"timestamp": format!("2026-11-21T09:{:02}:00.000Z", i + 1),
                "type": "response_item",
                "payload": {"type": "function_call", "name": "shell_command",
                    "arguments": args, "call_id": call}}),
            json!({"timestamp": format!("2026-11-21T09:{:02}:01.000Z", i + 1),
                "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": call,
                    "output": format!("Exit code: 0\nWall time: 0.2 seconds\nOutput:\n{output}")}})
        ));
    }
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(
        dir.join(format!("rollout-2026-11-21T09-00-00-{id}.jsonl")),
        text,
    )
    .expect("write");
}

/// A Gemini CLI JSONL session: `write_file`, then `run_shell_command`s.
fn gemini_cli(dir: &Path, s: &Session) {
    let mut text = format!(
        "{}\n",
        json!({"sessionId": "5d1e8f3a-0c2b-4e7a-9f61-2b3c4d5e6f71", "projectHash": "9f8e",
            "startTime": "2026-11-22T08:00:00.000Z", "kind": "main",
            "directories": ["/home/dev/app"]})
    );
    let mut calls = vec![(
        "write_file",
        json!({"file_path": s.env_path, "content": s.env_content}),
        "Successfully created and wrote to new file.".to_owned(),
    )];
    for (command, output) in &s.commands {
        calls.push((
            "run_shell_command",
            json!({"command": command}),
            output.clone(),
        ));
    }
    for (i, (tool, args, output)) in calls.iter().enumerate() {
        let call = format!("{tool}_{i}_0");
        text.push_str(&format!(
            "{}\n",
            json!({"id": format!("g{i}"), "timestamp": format!("2026-11-22T08:{i:02}:00.000Z"),
                "type": "gemini", "content": "",
                "toolCalls": [{"id": call, "name": tool, "args": args, "status": "success",
                    "result": [{"functionResponse": {"id": call, "name": tool,
                        "response": {"output": output}}}]}]})
        ));
    }
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join("session-2026-11-22T08-00-5d1e8f3a.jsonl"), text).expect("write");
}

/// OpenCode's database: a `write` part, then `bash` parts.
fn opencode(db_path: &Path, s: &Session) {
    std::fs::create_dir_all(db_path.parent().expect("parent")).expect("mkdir");
    let db = rusqlite::Connection::open(db_path).expect("open");
    db.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL, parent_id TEXT);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
             session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
             time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         INSERT INTO session VALUES ('ses_4f2b', '/home/dev/app', NULL);",
    )
    .expect("schema");
    let mut parts = vec![(
        "write",
        json!({"filePath": s.env_path, "content": s.env_content}),
        String::new(),
    )];
    for (command, output) in &s.commands {
        parts.push(("bash", json!({"command": command}), output.clone()));
    }
    for (i, (tool, input, output)) in parts.iter().enumerate() {
        let start = 1_795_000_000_000_i64 + 60_000 * i as i64;
        let data = json!({"type": "tool", "tool": tool, "callID": format!("call_{i}"),
            "state": {"status": "completed", "input": input, "output": output,
                "metadata": {"exit": 0}, "time": {"start": start, "end": start + 200}}});
        db.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_4f2b', ?3, ?3, ?4)",
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
fn secrets_found_by_rule_stay_out_for_every_agent_and_look_alikes_stay_as_run() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    type Writer = fn(&Path, &Session);
    let agents: [(&str, &str, Writer); 4] = [
        ("claude-code", "claude", claude_code),
        ("codex", "codex", codex),
        ("gemini-cli", "gemini", gemini_cli),
        ("opencode", "opencode/opencode.db", opencode),
    ];
    for (n, (agent, place, write)) in agents.iter().enumerate() {
        let s = session(100 * (n as u64 + 1));
        let path = logs.join(place);
        write(&path, &s);
        let state = env.path().join(format!("state-{agent}"));
        let report = oneshot(&env, &state, &[], &[&path]);
        let actions = stored(&env, &state);
        assert_eq!(actions.len(), 6, "{agent}: {report:#}\n{actions:#?}");
        for (file, bytes) in everything_written(&state, &logs) {
            for (i, secret) in s.secrets.iter().enumerate() {
                assert!(
                    !contains(&bytes, secret),
                    "{agent}: secret #{i} found in {file}"
                );
            }
        }
        let all = serde_json::to_string(&actions).expect("json");
        for kept in [
            "NODE_ENV=production",
            "max_tokens=4096 --option auth_mode=oauth",
            "export SECRET_KEY_BASE=[REDACTED:secret-assignment] && bin/rails runner",
            "PORT=3000",
        ] {
            assert!(
                all.contains(kept),
                "{agent}: {kept:?} not stored as run:\n{all}"
            );
        }
        for kind in ["secret-file", "sensitive-output", "kubernetes-secret"] {
            assert!(
                all.contains(&format!("[REDACTED:{kind}]")),
                "{agent}: no {kind} placeholder:\n{all}"
            );
        }
    }
}
