//! The user's own toolchains, end to end on this machine's real ones (cargo from rustup under
//! the home directory, python through pyenv's shims): habits planted as Claude Code sessions
//! become candidates through the daemon — which runs with a minimal PATH, the user's recorded
//! as `[sandbox] path` — are approved, and build and test real projects in the sandbox through
//! `toolsmith run` and MCP `tools/call`. A policy that does not grant the toolchain refuses the
//! candidate with the line that would allow it.
//!
//! A machine without the toolchain skips (saying so), except under `CI=true`, where CI is a
//! machine like the developers' and the absence fails.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Daemon, TestEnv, json_of};
use serde_json::{Value, json};

/// How long generation, validation and a real build may take on a loaded machine.
const SLOW: Duration = Duration::from_secs(240);

/// Writes Claude Code sessions, one per list of `(command, output)`, under `dir`, as the agent
/// writes them: an assistant's `Bash` tool use, then the user record with its result.
fn claude_sessions(dir: &Path, cwd: &Path, sessions: &[Vec<(String, String)>]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for (s, calls) in sessions.iter().enumerate() {
        let session = format!("7a1c0de0-0000-4000-8000-00000000000{s}");
        let mut lines = Vec::new();
        let mut parent = Value::Null;
        for (i, (command, output)) in calls.iter().enumerate() {
            let ts = |n: usize| format!("2026-11-2{s}T10:{:02}:{:02}.000Z", i, n * 10);
            let (call, result) = (
                format!("a{s}{i:03}-0000-4000-8000-000000000000"),
                format!("u{s}{i:03}-0000-4000-8000-000000000000"),
            );
            let tool_id = format!("toolu_{s}_{i}");
            lines.push(json!({
                "parentUuid": parent, "isSidechain": false, "userType": "external",
                "cwd": cwd, "sessionId": session, "version": "1.0.98", "type": "assistant",
                "message": {"id": format!("msg_{s}_{i}"), "type": "message", "role": "assistant",
                    "model": "claude-sonnet-4-20250514",
                    "content": [{"type": "tool_use", "id": tool_id, "name": "Bash",
                        "input": {"command": command, "description": command}}]},
                "uuid": call, "timestamp": ts(1)
            }));
            lines.push(json!({
                "parentUuid": call, "isSidechain": false, "userType": "external",
                "cwd": cwd, "sessionId": session, "version": "1.0.98", "type": "user",
                "message": {"role": "user", "content": [{"tool_use_id": tool_id,
                    "type": "tool_result", "content": output, "is_error": false}]},
                "uuid": result, "timestamp": ts(2),
                "toolUseResult": {"stdout": output, "stderr": "", "interrupted": false,
                    "isImage": false}
            }));
            parent = Value::String(result);
        }
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(dir.join(format!("{session}.jsonl")), text.join("\n") + "\n")
            .expect("write session");
    }
}

/// A daemon under systemd's kind of PATH, the user's recorded in the configuration, reading
/// the sessions under `logs`.
fn daemon(env: &TestEnv, logs: &Path, extra: &str) -> Daemon {
    let user_path = std::env::var("PATH").expect("PATH");
    let config = env.write_config(&format!(
        "[generate]\nmin_score = 10\n\n[sandbox]\npath = {}\n\n[[source]]\nformat = \
         \"claude-code\"\npath = {}\n{extra}",
        toml_str(&user_path),
        toml_str(&logs.display().to_string())
    ));
    let mut command = env.daemon_command();
    command.arg("--config").arg(&config);
    command.env("PATH", "/usr/bin:/bin");
    for var in [
        "PYENV_ROOT",
        "PYENV_VERSION",
        "RUSTUP_HOME",
        "CARGO_HOME",
        "VIRTUAL_ENV",
    ] {
        command.env_remove(var);
    }
    Daemon::start(env, command)
}

fn toml_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// `toolsmith ARGS…` against the daemon's state, with its configuration.
fn cli(env: &TestEnv) -> assert_cmd::Command {
    let mut cmd = env.cli();
    cmd.arg("--config").arg(env.path().join("config.toml"));
    cmd
}

/// Waits until the daemon has read `count` actions.
fn wait_ingested(env: &TestEnv, count: usize) {
    let deadline = Instant::now() + common::PATIENCE;
    loop {
        let out = cli(env).arg("sources").output().expect("sources");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains(&format!("{count} actions")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not {count} actions read:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Mines (the daemon generates after it) and waits for the candidate of the two-step habit
/// whose tool's name starts with `prefix` to settle; returns it.
fn mined_candidate(env: &TestEnv, prefix: &str) -> Value {
    cli(env).arg("mine").assert().success();
    let deadline = Instant::now() + SLOW;
    loop {
        let out = cli(env)
            .args(["--json", "candidates"])
            .output()
            .expect("candidates");
        let all: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let settled = all.as_array().into_iter().flatten().filter(|c| {
            c["tool"].as_str().is_some_and(|t| t.starts_with(prefix))
                && ["awaiting-review", "failed"].contains(&c["state"].as_str().unwrap_or(""))
        });
        for c in settled {
            let steps = &shown(env, c["id"].as_str().expect("id"))["spec"]["steps"];
            if steps.as_array().map(Vec::len) == Some(2) {
                return c.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "no settled {prefix}… candidate: {all:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The candidate's staged files and spec.
fn shown(env: &TestEnv, id: &str) -> Value {
    let out = cli(env)
        .args(["--json", "show", id, "--attempts"])
        .assert()
        .success();
    json_of(out.get_output())
}

/// The candidate awaiting review, its manifest binding `toolchain` and nothing of the home
/// directory around it; approved. Returns the tool's name and its one parameter's name.
fn review_and_approve(env: &TestEnv, candidate: &Value, toolchain: &Path) -> (String, String) {
    let id = candidate["id"].as_str().expect("id");
    let show = shown(env, id);
    assert_eq!(candidate["state"], "awaiting-review", "{show:#}");
    let attempt = show["attempts"]
        .as_array()
        .and_then(|a| a.last())
        .expect("an attempt");
    let manifest = attempt["files"]["tool.yaml"].as_str().expect("tool.yaml");
    assert!(manifest.contains("toolchains:"), "{manifest}");
    assert!(
        manifest.contains(&toolchain.display().to_string()),
        "the manifest binds {}:\n{manifest}",
        toolchain.display()
    );
    let home = std::env::var("HOME").expect("HOME");
    assert!(
        !manifest
            .lines()
            .any(|l| l.trim_start().trim_start_matches("- ") == home),
        "never the home directory:\n{manifest}"
    );
    // The review shows what the tool may reach.
    let review = cli(env).args(["show", id]).assert().success();
    let text = String::from_utf8_lossy(&review.get_output().stdout).into_owned();
    assert!(text.contains("+  toolchains:"), "{text}");
    cli(env).args(["approve", id]).assert().success();
    let name = candidate["tool"].as_str().expect("tool").to_owned();
    let param = show["spec"]["params"][0]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("one parameter: {:#}", show["spec"]))
        .to_owned();
    (name, param)
}

/// `tools/call` of `tool` with `arguments` through `toolsmith mcp` run in `workspace`.
fn mcp_call(env: &TestEnv, workspace: &Path, tool: &str, arguments: Value) -> Value {
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut server);
    let mut server = server
        .arg("--state")
        .arg(env.state())
        .arg("--config")
        .arg(env.path().join("config.toml"))
        .arg("mcp")
        .current_dir(workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolsmith mcp");
    let mut input = server.stdin.take().expect("stdin");
    let output = server.stdout.take().expect("stdout");
    let (lines, answers) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let answer = |id: u64| -> Value {
        loop {
            let line = answers
                .recv_timeout(SLOW)
                .unwrap_or_else(|_| panic!("no answer to request {id}"));
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["id"] == id {
                return message;
            }
        }
    };
    let mut send = |message: Value| {
        writeln!(input, "{message}").expect("write");
        input.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "toolchains-test", "version": "0"}}}),
    );
    answer(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}}));
    let result = answer(2);
    drop(input);
    let _ = server.wait();
    result
}

/// A command before the habit, different in every other session.
fn before(session: usize) -> String {
    if session.is_multiple_of(2) {
        "git status --short".to_owned()
    } else {
        "git log --oneline -n 3".to_owned()
    }
}

/// A workspace of three crates without dependencies (nothing to fetch), one test each.
fn cargo_workspace(dir: &Path) {
    let members = ["alpha", "beta", "gamma"];
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(
        dir.join("Cargo.toml"),
        "[workspace]\nmembers = [\"alpha\", \"beta\", \"gamma\"]\nresolver = \"2\"\n",
    )
    .expect("write");
    for (i, name) in members.iter().enumerate() {
        let src = dir.join(name).join("src");
        std::fs::create_dir_all(&src).expect("mkdir");
        std::fs::write(
            dir.join(name).join("Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        )
        .expect("write");
        std::fs::write(
            src.join("lib.rs"),
            format!(
                "pub fn value() -> u32 {{ {i} }}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    \
                 fn {name}_value() {{\n        assert_eq!(super::value(), {i});\n    }}\n}}\n"
            ),
        )
        .expect("write");
    }
}

/// The cargo habit: four sessions building then testing one package of the workspace.
#[test]
fn a_cargo_build_then_test_habit_builds_and_tests_a_workspace_in_the_sandbox() {
    let Some(cargo) = common::machine_toolchain("cargo") else {
        return;
    };
    let env = TestEnv::new();
    let ws = env.path().join("shop");
    cargo_workspace(&ws);
    let logs = env.path().join("home/.claude/projects/-shop");
    // What comes before varies, so the build-then-test pair is a habit of its own.
    let sessions: Vec<Vec<(String, String)>> = ["alpha", "beta", "alpha", "gamma"]
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![
                (before(i), String::new()),
                (
                    format!("cargo build -p {p}"),
                    format!("   Compiling {p} v0.1.0\n    Finished `dev` profile"),
                ),
                (
                    format!("cargo test -p {p}"),
                    "test result: ok. 1 passed; 0 failed".to_owned(),
                ),
            ]
        })
        .collect();
    claude_sessions(&logs, &ws, &sessions);
    let _daemon = daemon(&env, &logs, "");
    wait_ingested(&env, 12);
    let candidate = mined_candidate(&env, "cargo-build");
    let (tool, param) = review_and_approve(&env, &candidate, &cargo.paths[0]);

    // `toolsmith run`: a real build and test of one package, in the sandbox.
    let out = cli(&env)
        .args([
            "run",
            &tool,
            "--param",
            &format!("{param}=beta"),
            "--workspace",
        ])
        .arg(&ws)
        .timeout(SLOW)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stdout.contains("test tests::beta_value ... ok") && stdout.contains("test result: ok"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("Compiling beta"), "{stderr}");
    // The build's output is where the user's own build puts it: the workspace was granted.
    assert!(ws.join("target/debug").is_dir());

    // MCP `tools/call`: the same tool, another package.
    let called = mcp_call(&env, &ws, &tool, json!({ param.as_str(): "gamma" }));
    let result = &called["result"];
    assert_eq!(result["isError"], false, "{called:#}");
    let text = result["content"].to_string();
    assert!(
        text.contains("gamma_value ... ok") && text.contains("test result: ok"),
        "{called:#}"
    );
}

/// pytest and coverage in pyenv's python, or why not (CI installs them: `.ci/run`).
fn pyenv_python_with_pytest() -> Option<toolsmith::sandbox::Toolchain> {
    let python = common::machine_toolchain("python")?;
    let has = Command::new("python")
        .args(["-c", "import pytest, coverage"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "pytest and coverage are missing from pyenv's python: `.ci/run` installs them"
        );
        eprintln!("skipped: pytest and coverage are not installed in the user's python");
        return None;
    }
    Some(python)
}

/// The pytest-then-coverage habit, with pyenv's python.
#[test]
fn a_pytest_then_coverage_habit_runs_with_pyenvs_python_in_the_sandbox() {
    let Some(python) = pyenv_python_with_pytest() else {
        return;
    };
    let env = TestEnv::new();
    let ws = env.path().join("calc");
    for (dir, file, body) in [
        (
            "tests/unit",
            "test_add.py",
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        ),
        (
            "tests/api",
            "test_twice.py",
            "from calc import twice\n\n\ndef test_twice():\n    assert twice(4) == 8\n",
        ),
    ] {
        std::fs::create_dir_all(ws.join(dir)).expect("mkdir");
        std::fs::write(ws.join(dir).join(file), body).expect("write");
    }
    std::fs::write(
        ws.join("calc.py"),
        "def add(a, b):\n    return a + b\n\n\ndef twice(x):\n    return add(x, x)\n",
    )
    .expect("write");
    std::fs::write(ws.join("conftest.py"), "").expect("write");
    let logs = env.path().join("home/.claude/projects/-calc");
    let sessions: Vec<Vec<(String, String)>> =
        ["tests/unit", "tests/api", "tests/unit", "tests/api"]
            .iter()
            .enumerate()
            .map(|(i, dir)| {
                vec![
                    (before(i), String::new()),
                    (
                        format!("python -m coverage run -m pytest -q {dir}"),
                        "1 passed in 0.01s".to_owned(),
                    ),
                    (
                        "python -m coverage report".to_owned(),
                        "Name  Stmts  Miss  Cover\nTOTAL     4     0   100%".to_owned(),
                    ),
                ]
            })
            .collect();
    claude_sessions(&logs, &ws, &sessions);
    let _daemon = daemon(&env, &logs, "");
    wait_ingested(&env, 12);
    let candidate = mined_candidate(&env, "python");
    let (tool, param) = review_and_approve(&env, &candidate, &python.paths[0]);

    let out = cli(&env)
        .args([
            "run",
            &tool,
            "--param",
            // The habit is `pytest -q tests/<tests>`: the part that varied.
            &format!("{param}=api"),
            "--workspace",
        ])
        .arg(&ws)
        .timeout(SLOW)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("1 passed"), "{stdout}");
    assert!(
        stdout.contains("TOTAL"),
        "coverage reported: {stdout}\n{}",
        String::from_utf8_lossy(&out.get_output().stderr)
    );
    assert!(
        ws.join(".coverage").is_file(),
        "coverage's data in the workspace"
    );

    let called = mcp_call(&env, &ws, &tool, json!({ param.as_str(): "unit" }));
    assert_eq!(called["result"]["isError"], false, "{called:#}");
    let text = called["result"]["content"].to_string();
    assert!(
        text.contains("1 passed") && text.contains("TOTAL"),
        "{called:#}"
    );
}

/// One action as a native log line.
fn native(session: &str, seq: u64, command: &str) -> String {
    json!({"v": 1, "session": session, "seq": seq, "cwd": "/work/shop", "tool": "Bash",
           "input": {"command": command}, "ok": true, "exit_code": 0, "output": "",
           "duration_ms": 1500})
    .to_string()
}

/// A policy that does not grant rustup: the cargo habit's candidate fails validation with the
/// reason and the exact line that would allow it.
#[test]
fn a_toolchain_the_policy_does_not_grant_is_refused_with_the_line_that_allows_it() {
    let Some(cargo) = common::machine_toolchain("cargo") else {
        return;
    };
    let env = TestEnv::new();
    let default = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default.toml"),
    )
    .expect("default policy");
    let granted = "toolchains = [\"rustup\", \"pyenv\", \"venv\", \"nvm\", \"local-bin\"]";
    assert!(default.contains(granted));
    let policy: PathBuf = env.path().join("policy.toml");
    std::fs::write(
        &policy,
        default.replace(granted, "toolchains = [\"pyenv\"]"),
    )
    .expect("write policy");
    let config = env.write_config(&format!(
        "[generate]\nmin_score = 10\npolicy = {}\n\n[sandbox]\npath = {}\n",
        toml_str(&policy.display().to_string()),
        toml_str(&std::env::var("PATH").expect("PATH"))
    ));
    let mut lines = Vec::new();
    for (i, p) in ["alpha", "beta", "alpha", "gamma"].iter().enumerate() {
        let s = format!("s{i}");
        lines.push(native(&s, 1, &format!("cargo build -p {p}")));
        lines.push(native(&s, 2, &format!("cargo test -p {p}")));
    }
    let log = env.path().join("cargo.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").expect("write log");
    let with_config = |cmd: &mut assert_cmd::Command| {
        cmd.arg("--config").arg(&config);
    };
    let mut ingest = env.cli();
    with_config(&mut ingest);
    ingest
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    let mut mine = env.cli();
    with_config(&mut mine);
    mine.arg("mine").assert().success();
    let mut generate = env.cli();
    with_config(&mut generate);
    let out = generate
        .args(["--json", "generate"])
        .timeout(SLOW)
        .assert()
        .success();
    let report = json_of(out.get_output());
    let candidate = report["candidates"]
        .as_array()
        .and_then(|a| {
            a.iter().find(|c| {
                c["tool"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("cargo-build"))
            })
        })
        .unwrap_or_else(|| panic!("a cargo candidate: {report:#}"));
    assert_eq!(candidate["state"], "failed", "{candidate:#}");
    let id = candidate["id"].as_str().expect("id");
    let mut show = env.cli();
    with_config(&mut show);
    let out = show
        .args(["--json", "show", id, "--attempts"])
        .assert()
        .success();
    let checks = json_of(out.get_output())["attempts"][0]["diagnostics"]["checks"].clone();
    let manifest = checks
        .as_array()
        .and_then(|c| {
            c.iter()
                .find(|c| c["layer"] == "manifest" && c["passed"] == false)
        })
        .unwrap_or_else(|| panic!("the manifest check failed: {checks:#}"));
    let details = manifest["details"].to_string();
    let line = format!(
        "add \\\"rustup\\\" to [grants] toolchains in {} (toolchains = [\\\"rustup\\\", \\\"pyenv\\\"])",
        policy.display()
    );
    assert!(details.contains(&line), "{line}\nnot in: {details}");
    assert!(
        details.contains(&cargo.paths[0].display().to_string()),
        "{details}"
    );
    // Nothing of it ran: the tests did not run while the manifest was refused.
    assert!(
        !checks
            .as_array()
            .expect("checks")
            .iter()
            .any(|c| c["layer"] == "tests" && c["passed"] == true),
        "{checks:#}"
    );
}
