//! Kimi CLI, Cline and Cursor CLI logs through the real binaries: `toolsmith ingest` of the
//! real sessions of the corpus, and the daemon finding Kimi's sessions where `KIMI_SHARE_DIR`
//! puts them with no source configured.

use crate::common;

use std::time::Instant;

use common::{Daemon, PATIENCE, TestEnv, corpus, oneshot, stored};
use serde_json::{Value, json};

const KIMI_SESSION: &str = "3951a8af-d393-44a8-a19f-057bbdf8cb1c";

fn shell<'a>(actions: &'a [Value], source: &str, tool: &str) -> Vec<&'a Value> {
    actions
        .iter()
        .filter(|a| a["source"] == source && a["tool"] == tool)
        .collect()
}

#[test]
fn oneshot_ingest_reads_the_real_kimi_cline_and_cursor_sessions() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("formats-2026");
    let env = TestEnv::new();
    let state = env.path().join("oneshot");
    let report = oneshot(
        &env,
        &state,
        &[],
        &[
            &dir.join("kimi-cli"),
            &dir.join("cline"),
            &dir.join("cursor"),
        ],
    );
    let mut per_format = std::collections::BTreeMap::<String, u64>::new();
    let mut skipped = Vec::new();
    for file in report["files"].as_array().expect("files") {
        match file["format"].as_str() {
            Some(format) => {
                assert_eq!(file["problems"], 0, "{file}");
                *per_format.entry(format.to_owned()).or_default() +=
                    file["actions"].as_u64().unwrap_or(0);
            }
            None => skipped.push(file["path"].as_str().unwrap_or("").to_owned()),
        }
    }
    // PROVENANCE.md: 42 Shell of 77 Kimi calls, 105 execute_command of 231 Cline calls, 127
    // Shell of 222 Cursor calls.
    assert_eq!(per_format["kimi-cli"], 77, "{per_format:?}");
    assert_eq!(per_format["cline"], 231, "{per_format:?}");
    assert_eq!(per_format["cursor"], 222, "{per_format:?}");
    // Kimi's context.jsonl and state.json beside the wire log are not read as actions.
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .all(|p| p.ends_with("context.jsonl") || p.ends_with("state.json"))
    );

    let actions = stored(&env, &state);
    let kimi = shell(&actions, "kimi-cli", "Shell");
    assert_eq!(kimi.len(), 42);
    assert!(kimi.iter().all(|a| a["session"] == KIMI_SESSION));
    let failed_128 = kimi
        .iter()
        .find(|a| a["exit_code"] == 128)
        .expect("the failed checkout");
    assert_eq!(failed_128["ok"], false);
    assert!(
        failed_128["output"]
            .as_str()
            .is_some_and(|o| o.contains("fatal: a branch named 'main' already exists"))
    );

    let cline = shell(&actions, "cline", "execute_command");
    assert_eq!(cline.len(), 105);
    let first = cline
        .iter()
        .find(|a| a["call_id"] == "tooluse_1NrzzRucNkDJDf51sO5eaG")
        .expect("the first command");
    assert_eq!(
        first["input"]["command"],
        "cd c:\\Apps\\MRA04242026 && npm install @google-cloud/storage"
    );
    assert_eq!(
        (&first["ok"], &first["exit_code"]),
        (&true.into(), &0.into())
    );
    assert_eq!(first["cwd"], "c:/Apps/MRA04242026");
    assert_eq!(
        cline
            .iter()
            .filter(|a| a["exit_code"].as_i64() > Some(0))
            .count(),
        25
    );

    // Cursor records no results: unknown, never guessed.
    let cursor = shell(&actions, "cursor", "Shell");
    assert_eq!(cursor.len(), 127);
    assert!(
        cursor
            .iter()
            .all(|a| a["ok"].is_null() && a["exit_code"].is_null())
    );
    assert!(
        cursor
            .iter()
            .any(|a| a["input"]["command"] == "bash --version | head -n 1")
    );

    // Re-reading stores nothing twice.
    let again = oneshot(
        &env,
        &state,
        &[],
        &[
            &dir.join("kimi-cli"),
            &dir.join("cline"),
            &dir.join("cursor"),
        ],
    );
    let new: u64 = again["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["actions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(new, 0);
    assert_eq!(stored(&env, &state).len(), actions.len());
}

#[test]
fn the_daemon_finds_kimi_sessions_under_kimi_share_dir_by_default() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("formats-2026/kimi-cli");
    let env = TestEnv::new();
    // Kimi's layout: <share>/sessions/<md5 of the work dir>/<session>/{wire,context}.jsonl,
    // state.json. The corpus files are copied, never touched.
    let share = env.path().join("kimi-share");
    let session_dir = share
        .join("sessions/697a0ebec3147bb421a9dd6a0531906f")
        .join(KIMI_SESSION);
    std::fs::create_dir_all(&session_dir).expect("session dir");
    for name in ["wire.jsonl", "context.jsonl", "state.json"] {
        let from = dir.join(format!("youngstunners88__ihhashi__{KIMI_SESSION}__{name}"));
        std::fs::copy(&from, session_dir.join(name)).expect("copy corpus file");
    }
    let mut cmd = env.daemon_command();
    cmd.env("KIMI_SHARE_DIR", &share);
    let daemon = Daemon::start(&env, cmd);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let actions = stored(&env, &env.state());
        let kimi: Vec<&Value> = actions
            .iter()
            .filter(|a| a["source"] == "kimi-cli")
            .collect();
        if kimi.len() == 77 {
            assert!(kimi.iter().all(|a| a["session"] == KIMI_SESSION));
            assert_eq!(shell(&actions, "kimi-cli", "Shell").len(), 42);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the daemon stored {} Kimi actions, not 77; log:\n{}",
            kimi.len(),
            daemon.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // context.jsonl and state.json are not the source's files: nothing read from them.
    let out = env
        .cli()
        .args(["sources", "--json"])
        .output()
        .expect("toolsmith sources");
    let sources: Value = serde_json::from_slice(&out.stdout).expect("sources JSON");
    let kimi = sources
        .as_array()
        .and_then(|s| s.iter().find(|s| s["format"] == "kimi-cli"))
        .expect("the kimi-cli default source");
    assert_eq!(kimi["files"], 1, "{kimi}");
    assert_eq!(kimi["actions"], 77, "{kimi}");
}

/// Cline rewrites a task's history as the task goes on: a call read before its result was
/// written gets the result when the file is read again. The shapes are the corpus file's
/// (native `tool_use`, text results).
#[test]
fn a_cline_result_written_after_its_call_was_read_joins_it() {
    let env = TestEnv::new();
    let task = env.path().join("tasks/1777345000000");
    std::fs::create_dir_all(&task).expect("task dir");
    let history = task.join("api_conversation_history.json");
    let mut messages = vec![
        json!({"role": "user", "ts": 1_777_345_000_000_i64, "content": [
            {"type": "text", "text": "<task>\nbuild\n</task>"},
            {"type": "text", "text": "<environment_details>\n# Current Working Directory (/home/u/app) Files\n</environment_details>"}]}),
        json!({"role": "assistant", "ts": 1_777_345_001_000_i64, "content": [
            {"type": "tool_use", "id": "tooluse_A", "name": "execute_command",
             "input": {"command": "npm run  build", "requires_approval": false}}]}),
    ];
    std::fs::write(&history, Value::Array(messages.clone()).to_string()).expect("write");
    let state = env.path().join("state");
    let first = oneshot(&env, &state, &[], &[&task]);
    assert_eq!(first["files"][0]["actions"], 1, "{first}");
    let stored_first = stored(&env, &state);
    assert_eq!(stored_first.len(), 1);
    assert!(stored_first[0]["ok"].is_null());

    messages.push(json!({"role": "user", "ts": 1_777_345_002_000_i64, "content": [
        {"type": "text", "text": "[execute_command for 'npm run  build'] Result:\nCommand failed with exit code 2.\nOutput:\nerror TS2304"}]}));
    std::fs::write(&history, Value::Array(messages).to_string()).expect("rewrite");
    oneshot(&env, &state, &[], &[&task]);
    let actions = stored(&env, &state);
    assert_eq!(actions.len(), 1, "{actions:?}");
    let action = &actions[0];
    assert_eq!(action["input"]["command"], "npm run  build");
    assert_eq!(action["session"], "1777345000000");
    assert_eq!(action["cwd"], "/home/u/app");
    assert_eq!(
        (&action["ok"], &action["exit_code"]),
        (&false.into(), &2.into())
    );
    assert_eq!(action["output"], "error TS2304");
}
