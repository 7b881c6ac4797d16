//! `toolsmith stats` and `toolsmith export feedback` end to end: proposals made from requests,
//! one approved (with a note), one rejected with a reason, one left waiting; the approved tool
//! run through `toolsmith run` from agents' shells and over MCP; Claude Code and Codex sessions
//! written after the approval, some typing the habit's lines by hand. The counts are the ones
//! this test wrote.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{PATIENCE, TestEnv, json_of};
use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

/// A workspace whose packages have a Makefile with `build` and `test` targets.
pub(crate) fn workspace(env: &TestEnv) -> PathBuf {
    let ws = env.path().join("ws");
    for package in ["core", "cli"] {
        std::fs::create_dir_all(ws.join(package)).expect("mkdir");
        std::fs::write(
            ws.join(package).join("Makefile"),
            "build:\n\t@echo built\ntest:\n\t@echo tested\nlint:\n\t@echo linted\ndocs:\n\t@echo docs\n",
        )
        .expect("write Makefile");
    }
    ws
}

/// Asks for a tool running `examples` in order; returns (candidate, tool).
pub(crate) fn request(env: &TestEnv, what: &str, examples: &[&str]) -> (String, String) {
    let mut cmd = env.cli();
    cmd.args(["--json", "new", what]);
    for e in examples {
        cmd.arg("--example").arg(e);
    }
    let out = cmd.timeout(Duration::from_secs(60)).assert().success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let s = |v: &Value| v.as_str().expect("string").to_owned();
    (s(&made["id"]), s(&made["tool"]))
}

/// `toolsmith run TOOL` in `ws` from a shell whose environment names `agent` as it would
/// (`None`: a person's terminal).
pub(crate) fn run_from(env: &TestEnv, ws: &Path, tool: &str, agent: &[(&str, &str)]) {
    let mut cmd = env.cli();
    cmd.current_dir(ws);
    for var in ["CLAUDECODE", "GEMINI_CLI", "TOOLSMITH_AGENT"] {
        cmd.env_remove(var);
    }
    for (k, v) in agent {
        cmd.env(k, v);
    }
    cmd.args(["run", tool])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
}

/// An MCP client naming itself `name`.
#[derive(Clone)]
struct Named(&'static str);

impl ClientHandler for Named {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new(self.0, "1.0.0");
        info
    }
}

/// Calls `tool` once over MCP from a client named `name`.
async fn call_over_mcp(env: &TestEnv, ws: &Path, tool: &str, name: &'static str) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut command);
    command
        .arg("--state")
        .arg(env.state())
        .arg("mcp")
        .current_dir(ws);
    let transport =
        TokioChildProcess::new(tokio::process::Command::from(command)).expect("spawn server");
    let service = tokio::time::timeout(
        PATIENCE,
        Named(name).serve_with_lifecycle(transport, ClientLifecycleMode::Initialize),
    )
    .await
    .expect("the session starts in time")
    .expect("the session starts");
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        service.call_tool(CallToolRequestParams::new(tool.to_owned())),
    )
    .await
    .expect("tools/call in time")
    .expect("tools/call");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let _ = service.cancel().await;
}

/// RFC 3339 of `base` plus `s` seconds.
fn at(base: i64, s: i64) -> String {
    jiff::Timestamp::from_second(base + s)
        .expect("a time")
        .to_string()
}

/// A Claude Code session: each `(seconds after base, command, duration ms)` a Bash call with
/// its result (and `toolUseResult.durationMs`).
pub(crate) fn claude_code(
    dir: &Path,
    session: &str,
    base: i64,
    calls: &[(i64, &str, u64)],
) -> PathBuf {
    let mut text = String::new();
    for (i, (s, command, ms)) in calls.iter().enumerate() {
        let id = format!("toolu_01{session}{i:04}");
        let uuid = format!("a{i:07}-0000-4000-8000-{session:0>12}");
        let call = json!({"parentUuid": null, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/app", "sessionId": session, "version": "2.1.97", "type": "assistant",
            "message": {"id": format!("msg_{i}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": id, "name": "Bash",
                    "input": {"command": command}}]},
            "uuid": uuid, "timestamp": at(base, *s)});
        let result = json!({"parentUuid": uuid,
            "isSidechain": false, "userType": "external", "cwd": "/home/dev/app",
            "sessionId": session, "version": "2.1.97", "type": "user",
            "message": {"role": "user", "content": [{"tool_use_id": id, "type": "tool_result",
                "content": "ok", "is_error": false}]},
            "toolUseResult": {"stdout": "ok", "stderr": "", "interrupted": false,
                "durationMs": ms},
            "uuid": format!("u{i:07}-0000-4000-8000-{session:0>12}"),
            "timestamp": at(base, *s + 1)});
        text.push_str(&format!("{call}\n{result}\n"));
    }
    let projects = dir.join(".claude/projects/-home-dev-app");
    std::fs::create_dir_all(&projects).expect("mkdir");
    let file = projects.join(format!("{session}.jsonl"));
    std::fs::write(&file, text).expect("write");
    file
}

/// A Codex rollout (`shell_command` with its text output and wall time).
fn codex(dir: &Path, session: &str, base: i64, calls: &[(i64, &str, u64)]) -> PathBuf {
    let mut text = format!(
        "{}\n",
        json!({"timestamp": at(base, 0), "type": "session_meta",
            "payload": {"id": session, "timestamp": at(base, 0),
                "cwd": "/home/dev/app", "originator": "codex_cli_rs", "cli_version": "0.122.0",
                "source": "cli", "model_provider": "openai"}})
    );
    for (i, (s, command, ms)) in calls.iter().enumerate() {
        let call = format!("call_{i:03}");
        let args = json!({"command": command, "workdir": "/home/dev/app"}).to_string();
        let wall = *ms as f64 / 1000.0;
        text.push_str(&format!(
            "{}\n{}\n",
            json!({"timestamp": at(base, *s), "type": "response_item",
                "payload": {"type": "function_call", "name": "shell_command",
                    "arguments": args, "call_id": call}}),
            json!({"timestamp": at(base, *s + 1), "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": call,
                    "output": format!("Exit code: 0\nWall time: {wall} seconds\nOutput:\nok\n")}})
        ));
    }
    let day = dir.join(".codex/sessions/2026/11/28");
    std::fs::create_dir_all(&day).expect("mkdir");
    let file = day.join(format!("rollout-2026-11-28T09-00-00-{session}.jsonl"));
    std::fs::write(&file, text).expect("write");
    file
}

/// The human report with what changes from run to run (candidate ids, tool names, times)
/// replaced by stable names.
fn normalized(text: &str, names: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    for (from, to) in names {
        text = text.replace(from, to);
    }
    text.lines()
        .map(|line| {
            if let Some(at) = line.find("(approved ") {
                format!("{}(approved [TIME])", &line[..at])
            } else if let Some(at) = line.find(": oldest ") {
                format!("{}: oldest [AGE], median [AGE]", &line[..at])
            } else if let Some(at) = line.find("  waiting ") {
                format!("{}  waiting [AGE]", &line[..at])
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_runs_by_agent_missed_uses_and_the_keep_rate_and_feedback_holds_each_decision()
{
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (kept, tool) = request(
        &env,
        "Build then test one package",
        &["make build -C core", "make test -C core"],
    );
    let (refused, refused_tool) = request(
        &env,
        "Lint one package",
        &["make lint -C core", "make lint -C cli"],
    );
    let (waits, waiting_tool) = request(
        &env,
        "Make the docs of one package",
        &["make docs -C core", "make docs -C cli"],
    );
    let before = jiff::Timestamp::now().as_second();
    // The reviewer: the registry has no git identity, so the login name.
    env.cli()
        .env("USER", "ann")
        .args(["approve", &kept, "--note", "saves a round trip"])
        .assert()
        .success();
    env.cli()
        .env("USER", "ann")
        .args(["reject", &refused, "--reason", "lint runs in CI, not here"])
        .assert()
        .success();
    let approved = jiff::Timestamp::now().as_second();

    // Runs: two from Claude Code's shell, one named by TOOLSMITH_AGENT, one from a person's
    // terminal, one over MCP from a client calling itself `test-agent`.
    run_from(&env, &ws, &tool, &[("CLAUDECODE", "1")]);
    run_from(&env, &ws, &tool, &[("CLAUDECODE", "1")]);
    run_from(&env, &ws, &tool, &[("TOOLSMITH_AGENT", "codex")]);
    run_from(&env, &ws, &tool, &[]);
    call_over_mcp(&env, &ws, &tool, "test-agent").await;

    // Sessions: the habit typed by hand before the approval (not counted), and after it by
    // Claude Code once and Codex once (one stray call between its steps: within the gap the
    // miner allows); half the habit, and the habit with two stray calls between its steps
    // (past that gap), are no uses.
    let logs = env.path().join("logs");
    let files = [
        claude_code(
            &logs,
            "c0",
            approved - 3600,
            &[
                (0, "make build -C core", 1000),
                (10, "make test -C core", 2000),
            ],
        ),
        claude_code(
            &logs,
            "c1",
            approved + 60,
            &[
                (0, "make build -C cli", 1000),
                (10, "make test -C cli", 3000),
                (300, "make test -C core", 1000),
            ],
        ),
        codex(
            &logs,
            "019c5526-3753-7dc1-84fb-8e88ea6ab0fb",
            approved + 120,
            &[
                (0, "make build -C core", 1000),
                (5, "git status", 100),
                (10, "make test -C core", 2000),
                (100, "make build -C core", 1000),
                (105, "git status", 100),
                (110, "git diff", 100),
                (120, "make test -C core", 2000),
            ],
        ),
    ];
    let mut ingest = env.cli();
    ingest.args(["--json", "ingest"]);
    for f in &files {
        ingest.arg(f);
    }
    ingest.assert().success();

    let stats = json_of(
        env.cli()
            .args(["--json", "stats"])
            .assert()
            .success()
            .get_output(),
    );
    // The keep rate: three proposals, one approved, one rejected with its reason, one waiting.
    let total = &stats["total"];
    assert_eq!(
        (
            &total["proposed"],
            &total["approved"],
            &total["rejected"],
            &total["waiting"],
            &total["keep_rate"]
        ),
        (&json!(3), &json!(1), &json!(1), &json!(1), &json!(0.5)),
        "{stats:#}"
    );
    assert_eq!(stats["by_origin"]["request"]["proposed"], 3, "{stats:#}");
    assert_eq!(stats["rejections"].as_array().map(Vec::len), Some(1));
    assert_eq!(stats["rejections"][0]["candidate"], refused.as_str());
    assert_eq!(
        stats["rejections"][0]["reason"],
        "lint runs in CI, not here"
    );
    assert_eq!(stats["waiting"][0]["candidate"], waits.as_str());
    assert!(stats["oldest_wait_s"].as_i64().is_some(), "{stats:#}");
    // Use: the runs by agent, the missed uses by agent, their steps and time.
    let tools = stats["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 1, "{stats:#}");
    let used = &tools[0];
    assert_eq!(used["tool"], tool.as_str());
    assert_eq!(
        used["runs_by_agent"],
        json!({"claude-code": 2, "codex": 1, "test-agent": 1, "unknown (cli)": 1}),
        "{stats:#}"
    );
    assert_eq!(used["runs"], 5);
    assert_eq!(used["missed_counted"], true, "{stats:#}");
    assert_eq!(used["missed"], 2, "{stats:#}");
    assert_eq!(
        used["missed_by_agent"],
        json!({"claude-code": 1, "codex": 1}),
        "{stats:#}"
    );
    assert_eq!(used["missed_steps"], 4, "{stats:#}");
    // Claude Code: 10 s between the calls, then 3 s; Codex: 10 s, then 2 s.
    assert_eq!(used["missed_ms"], 13_000 + 12_000, "{stats:#}");
    let sessions: Vec<&str> = used["missed_uses"]
        .as_array()
        .expect("missed uses")
        .iter()
        .map(|m| m["agent"].as_str().expect("agent"))
        .collect();
    assert_eq!(sessions, ["claude-code", "codex"], "{stats:#}");

    // The human report.
    let human = env.cli().arg("stats").assert().success();
    let text = String::from_utf8_lossy(&human.get_output().stdout).into_owned();
    insta::assert_snapshot!(normalized(&text, &[
        (&refused, "[REJECTED]"),
        (&waits, "[WAITING]"),
        (&refused_tool, "[LINT]"),
        (&waiting_tool, "[DOCS]"),
        (&tool, "[TOOL]"),
    ]), @"
    Keep rate: 50% (1 approved of 2 decided); 3 proposals made, 1 waiting, 0 failed before review
      ORIGIN            MADE  APPROVED  REJECTED  WAITING  FAILED  KEEP
      request              3         1         1        1       0   50%

    Rejected (1):
      [REJECTED]  [LINT] 1.0.0  request: lint runs in CI, not here

    Waiting (1): oldest [AGE], median [AGE]
      [WAITING]  [DOCS] 1.0.0  request  waiting [AGE]

    Use since approval:
      [TOOL] 1.0.0 (approved [TIME])
        runs          5  (claude-code 2, codex 1, test-agent 1, unknown (cli) 1)
        missed uses   2  (claude-code 1, codex 1)
        by hand       4 steps, 25s the tool would have saved
    ");

    // Feedback: one line per decision, oldest first, field by field.
    let file = env.path().join("feedback.jsonl");
    env.cli()
        .args(["export", "feedback", "--output"])
        .arg(&file)
        .assert()
        .success();
    let text = std::fs::read_to_string(&file).expect("feedback written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    let main = String::from_utf8(
        Command::new("git")
            .arg("-C")
            .arg(env.state().join("registry"))
            .args([
                "log",
                "-1",
                "--format=%H%n%(trailers:key=Approved-by,valueonly)",
                "main",
            ])
            .output()
            .expect("git log")
            .stdout,
    )
    .expect("utf-8");
    let mut main = main.lines();
    let (commit, approver) = (main.next().expect("commit"), main.next().expect("trailer"));
    let yes = &lines[0];
    assert_eq!(yes["decision"], "approved", "{yes:#}");
    assert_eq!(yes["candidate"], kept.as_str());
    assert_eq!(yes["tool"], tool.as_str());
    assert_eq!(yes["version"], "1.0.0");
    assert_eq!(yes["origin"], "request");
    assert_eq!(yes["reason"], "saves a round trip");
    assert_eq!(approver, "ann");
    assert_eq!(yes["reviewer"], approver);
    assert_eq!(yes["commit"], commit);
    assert_eq!(yes["tag"], format!("{tool}/v1.0.0"));
    assert_eq!(yes["spec"]["name"], tool.as_str(), "the spec: {yes:#}");
    assert!(
        yes["manifest"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("name: {tool}"))),
        "{yes:#}"
    );
    let code: String = yes["code"]
        .as_object()
        .expect("code")
        .values()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        code.contains("make build -C") && code.contains("make test -C"),
        "{yes:#}"
    );
    assert!(yes["tests"]["tests/cases.json"].is_string(), "{yes:#}");
    let no = &lines[1];
    assert_eq!(no["decision"], "rejected", "{no:#}");
    assert_eq!(no["candidate"], refused.as_str());
    assert_eq!(no["tool"], refused_tool.as_str());
    assert_eq!(no["reason"], "lint runs in CI, not here");
    assert_eq!(no["reviewer"], approver);
    assert_eq!(no["tag"], Value::Null);
    assert!(
        no["code"].as_object().is_some_and(|c| !c.is_empty()),
        "{no:#}"
    );
    for line in &lines {
        let time: jiff::Timestamp = line["time"]
            .as_str()
            .expect("time")
            .parse()
            .expect("RFC 3339");
        assert!(
            (before..=approved).contains(&time.as_second()),
            "decided between {before} and {approved}: {line:#}"
        );
    }
}
