//! Gemini CLI sessions through the real binaries: `toolsmith ingest` on the real sessions of the
//! corpus (formats-2026/gemini-cli, PROVENANCE.md there), and the daemon finding a growing
//! session where Gemini CLI writes it (`$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/`) with no
//! source configured.

use crate::common;

use std::time::{Duration, Instant};

use common::{Daemon, PATIENCE, TestEnv, append, corpus, oneshot, stored};
use serde_json::{Value, json};

#[test]
fn oneshot_ingest_of_the_gemini_corpus() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("formats-2026/gemini-cli");
    let env = TestEnv::new();
    let state = env.path().join("state");
    // No --format: each file is recognised as a Gemini CLI session.
    let report = oneshot(&env, &state, &[], &[&dir]);
    let files = report["files"].as_array().expect("files");
    assert_eq!(files.len(), 4, "{report}");
    for file in files {
        assert_eq!(file["format"], "gemini-cli", "{file}");
        assert_eq!(file["problems"], 0, "{file}");
    }
    let actions = stored(&env, &state);
    // PROVENANCE.md: 0 + 3 + 10 + 11 shell calls; 92 calls of all tools, each once though
    // their messages are written again up to 46 times.
    assert_eq!(actions.len(), 92);
    let shell: Vec<&Value> = actions
        .iter()
        .filter(|a| a["tool"] == "run_shell_command")
        .collect();
    assert_eq!(shell.len(), 24);
    let mut ids: Vec<&str> = actions
        .iter()
        .filter_map(|a| a["call_id"].as_str())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 92);
    let lint = shell
        .iter()
        .find(|a| a["input"]["command"] == "npm run lint")
        .expect("npm run lint");
    assert_eq!(
        (&lint["exit_code"], &lint["ok"]),
        (&json!(2), &json!(false))
    );
    let clone = shell
        .iter()
        .find(|a| a["input"]["command"] == "git clone https://github.com/anthonyguera/TP-Tutor.git")
        .expect("the cancelled clone");
    assert_eq!(
        (&clone["exit_code"], &clone["ok"]),
        (&Value::Null, &json!(false))
    );
    assert!(
        shell
            .iter()
            .all(|a| a["session"].is_string() && a["ts"].is_string())
    );

    // Read again: nothing is stored twice.
    let again = oneshot(&env, &state, &[], &[&dir]);
    let new: u64 = again["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["actions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(new, 0, "{again}");
}

/// A message as `chatRecordingService.ts` (google-gemini/gemini-cli 0.56.0-nightly, commit
/// 5411f113) appends it, with one shell call in `status` and, when final, its result.
fn message(call: &str, command: &str, status: &str, output: Option<&str>) -> String {
    let mut record = json!({"id": "g1", "timestamp": "2026-05-01T10:00:02.000Z", "type": "gemini",
        "content": "", "toolCalls": [{"id": call, "name": "run_shell_command",
        "args": {"command": command}, "status": status}]});
    if let Some(output) = output {
        record["toolCalls"][0]["result"] = json!([{"functionResponse": {"id": call,
            "name": "run_shell_command", "response": {"output": output}}}]);
    }
    format!("{record}\n")
}

fn wait_for(env: &TestEnv, daemon: &Daemon, what: &str, ok: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let got = stored(env, &env.state());
        if ok(&got) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: stored {got:?}; log:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_daemon_reads_gemini_sessions_under_gemini_cli_home_by_default() {
    let env = TestEnv::new();
    let home = env.path().join("gemini-home");
    let project = home.join(".gemini/tmp/proj");
    let chats = project.join("chats");
    std::fs::create_dir_all(&chats).expect("mkdir");
    // Gemini CLI's other files beside the sessions are not read.
    std::fs::write(
        project.join("logs.json"),
        "[{\"sessionId\":\"s\",\"message\":\"x\"}]",
    )
    .expect("logs.json");
    let parent = "5d1e8f3a-0c2b-4e7a-9f61-2b3c4d5e6f70";
    let session = chats.join("session-2026-05-01T10-00-5d1e8f3a.jsonl");
    append(
        &session,
        format!(
            "{}\n{}",
            json!({"sessionId": parent, "projectHash": "9f8e",
                   "startTime": "2026-05-01T10:00:00.000Z", "kind": "main",
                   "directories": ["/home/u/proj"]}),
            message("run_shell_command_1_0", "cargo build", "executing", None)
        )
        .as_bytes(),
    );
    let config = env.write_config("[ingest]\ndebounce_ms = 20\n");
    let mut cmd = env.daemon_command();
    cmd.arg("--config")
        .arg(&config)
        .env("GEMINI_CLI_HOME", &home);
    let daemon = Daemon::start(&env, cmd);
    wait_for(&env, &daemon, "the running call", |got| {
        got.len() == 1 && got[0]["input"]["command"] == "cargo build" && got[0]["ok"].is_null()
    });

    // The message written again with the call's outcome; a sub-agent starts in its folder.
    append(
        &session,
        message(
            "run_shell_command_1_0",
            "cargo build",
            "success",
            Some("Output: error\nExit Code: 101\nProcess Group PGID: 7"),
        )
        .as_bytes(),
    );
    let sub = chats.join(parent).join("investigator-x7k2.jsonl");
    std::fs::create_dir_all(sub.parent().expect("parent")).expect("mkdir");
    append(
        &sub,
        format!(
            "{}\n{}",
            json!({"sessionId": "investigator-x7k2", "projectHash": "9f8e",
                   "startTime": "2026-05-01T10:01:00.000Z", "kind": "subagent",
                   "directories": ["/home/u/proj"]}),
            message(
                "run_shell_command_2_0",
                "git log --oneline -3",
                "success",
                Some("Output: abc init\nProcess Group PGID: 8")
            )
        )
        .as_bytes(),
    );
    wait_for(&env, &daemon, "the result and the sub-agent", |got| {
        let build = got.iter().find(|a| a["input"]["command"] == "cargo build");
        let sub = got
            .iter()
            .find(|a| a["input"]["command"] == "git log --oneline -3");
        got.len() == 2
            && build.is_some_and(|b| b["exit_code"] == 101 && b["ok"] == false)
            && sub.is_some_and(|s| s["cwd"] == "/home/u/proj")
    });
    let out = env
        .cli()
        .args(["sources", "--json"])
        .output()
        .expect("toolsmith sources");
    let sources = String::from_utf8_lossy(&out.stdout);
    assert!(!sources.contains("logs.json"), "{sources}");
}
