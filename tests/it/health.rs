//! `toolsmith health`: recorded executions fed into the real store give the documented scores
//! and statuses, error classes with their severities, and the most frequent errors.

use crate::common;

use std::time::Duration;

use common::{TestEnv, json_of};
use serde_json::Value;
use toolsmith::health::classify::ErrorClass;
use toolsmith::health::executions;

/// Approves a tool running `make build -C <dir>`; returns its name.
fn approved_tool(env: &TestEnv) -> String {
    let out = env
        .cli()
        .args([
            "--json",
            "new",
            "Build one package",
            "--example",
            "make build -C core",
            "--example",
            "make build -C cli",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    let id = made["id"].as_str().expect("id").to_owned();
    env.cli().args(["approve", &id]).assert().success();
    made["tool"].as_str().expect("tool").to_owned()
}

/// Records `ok` successes and one failure per `(class, stderr)` of `failures` for a version.
fn feed(env: &TestEnv, tool: &str, version: &str, ok: u32, failures: &[(&str, &str)]) {
    let conn = rusqlite::Connection::open(env.state().join("state.db")).expect("store");
    let now = jiff::Timestamp::now().as_millisecond();
    let insert = |ok: bool, class: Option<&str>, excerpt: Option<&str>| {
        let run = executions::Execution {
            tool: tool.to_owned(),
            version: version.to_owned(),
            caller: executions::Caller::Mcp,
            started_ms: now - 60_000,
            duration_ms: 12,
            ok,
            exit_code: Some(if ok { 0 } else { 1 }),
            signal: None,
            limit_hit: None,
            error_class: class.map(|c| ErrorClass::from_name(c).expect("a known error class")),
            error_excerpt: excerpt.map(str::to_owned),
            peak_memory_kb: None,
            params: None,
            agent: None,
        };
        executions::record(&conn, &run).expect("insert");
    };
    for _ in 0..ok {
        insert(true, None, None);
    }
    for (class, stderr) in failures {
        insert(false, Some(class), Some(stderr));
    }
}

#[test]
fn recorded_runs_give_the_documented_scores_and_statuses() {
    let env = TestEnv::new();
    let tool = approved_tool(&env);

    // Never run: nothing against it.
    let out = env.cli().args(["--json", "health"]).assert().success();
    let all = json_of(out.get_output());
    assert_eq!(all[0]["tool"], tool.as_str());
    assert_eq!(all[0]["runs"], 0);
    assert_eq!(all[0]["status"], "HEALTHY");

    // 1.0.0 (on main): 8 of 10 succeed, two timeouts (medium, 10):
    // 100 − 0.2 × 50 − 10 = 80, HEALTHY at the boundary.
    feed(
        &env,
        &tool,
        "1.0.0",
        8,
        &[
            ("timeout", "make: waiting\nerror: timed out after 30 s"),
            ("timeout", "error: timed out after 45 s"),
        ],
    );
    // 0.9.0: 6 of 10, four code errors (high, 20): 100 − 20 − 20 = 60, DEGRADED.
    let code_errors = [
        (
            "code_error",
            "make: entering\nerror: build of package core failed at step 3",
        ),
        (
            "code_error",
            "error: build of package core failed at step 7",
        ),
        (
            "code_error",
            "error: build of package core failed at step 12",
        ),
        ("code_error", "run.sh: line 3: syntax error"),
    ];
    feed(&env, &tool, "0.9.0", 6, &code_errors);
    // 0.8.0: 1 of 4, a code error and two missing dependencies (high + high):
    // 100 − 0.75 × 50 − 20 − 20 = 22.5, FAILING.
    feed(
        &env,
        &tool,
        "0.8.0",
        1,
        &[
            ("code_error", "KeyError: 'x'"),
            ("missing_dependency", "make: command not found"),
            ("missing_dependency", "make: command not found"),
        ],
    );

    let out = env
        .cli()
        .args(["--json", "health", &tool])
        .assert()
        .success();
    let report = json_of(out.get_output());
    assert_eq!(report["current"], "1.0.0");
    let versions = report["versions"].as_array().expect("versions");
    let by_version = |v: &str| -> &Value {
        versions
            .iter()
            .find(|h| h["version"] == v)
            .unwrap_or_else(|| panic!("{v} in {report:#}"))
    };
    let current = by_version("1.0.0");
    assert_eq!(
        (current["score"].as_f64(), &current["status"]),
        (Some(80.0), &Value::from("HEALTHY"))
    );
    assert_eq!(current["issues"][0]["class"], "timeout");
    assert_eq!(current["issues"][0]["severity"], "medium");
    assert_eq!(current["issues"][0]["auto_heal"], true);
    // The two timeouts are one error template, with both lines as examples.
    assert_eq!(current["top_errors"][0]["count"], 2);
    assert_eq!(
        current["top_errors"][0]["template"],
        "error: timed out after <*>"
    );
    let degraded = by_version("0.9.0");
    assert_eq!(degraded["score"].as_f64(), Some(60.0));
    assert_eq!(degraded["status"], "DEGRADED");
    assert_eq!(degraded["top_errors"][0]["count"], 3, "{degraded:#}");
    assert_eq!(
        degraded["top_errors"][0]["template"],
        "error: build of package core failed at step <*>"
    );
    let failing = by_version("0.8.0");
    assert_eq!(failing["score"].as_f64(), Some(22.5));
    assert_eq!(failing["status"], "FAILING");
    let classes: Vec<&str> = failing["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .filter_map(|i| i["class"].as_str())
        .collect();
    assert!(classes.contains(&"missing_dependency") && classes.contains(&"code_error"));
    assert!(
        failing["issues"]
            .as_array()
            .expect("issues")
            .iter()
            .any(|i| i["class"] == "missing_dependency" && i["auto_heal"] == false)
    );

    // The summary shows the version on main; the text form names status and errors.
    let out = env.cli().args(["--json", "health"]).assert().success();
    let all = json_of(out.get_output());
    assert_eq!(all[0]["version"], "1.0.0");
    assert_eq!(all[0]["runs"], 10);
    let out = env.cli().args(["health", &tool]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("1.0.0 (on main): HEALTHY"), "{text}");
    assert!(text.contains("8 of 10 runs succeeded"), "{text}");
    assert!(text.contains("error: timed out after <*>"), "{text}");
    assert!(text.contains("0.8.0: FAILING"), "{text}");

    // An unknown tool is an error that says so.
    let out = env
        .cli()
        .args(["health", "no-such-tool"])
        .assert()
        .failure();
    let said = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(said.contains("no-such-tool"), "{said}");
}

#[test]
fn watch_prints_the_daemons_events_as_they_happen() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let env = TestEnv::new();
    let daemon = common::Daemon::start(&env, env.daemon_command());
    // Subscribed before anything happens: the daemon counts one more event receiver.
    let mut conn = daemon.connect();
    let receivers = |conn: &mut common::Conn| {
        conn.call(1, "status", Value::Null)["result"]["counters"]["event_receivers"]
            .as_u64()
            .expect("event_receivers")
    };
    let before = receivers(&mut conn);
    let mut watch = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut watch);
    let mut watch = watch
        .arg("--state")
        .arg(env.state())
        .args(["--json", "watch", "--kind", "candidate.", "--kind", "tool."])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start toolsmith watch");
    let mut lines = std::io::BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while receivers(&mut conn) <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "watch did not subscribe"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let tool = approved_tool(&env);
    let mut kinds = Vec::new();
    while kinds.last().map(String::as_str) != Some("tool.approved") {
        let line = lines
            .next()
            .expect("an event line before the watch ends")
            .expect("read");
        let event: Value = serde_json::from_str(&line).expect("one JSON event per line");
        kinds.push(event["kind"].as_str().expect("kind").to_owned());
        if event["kind"] == "tool.approved" {
            assert_eq!(event["data"]["name"], tool.as_str(), "{event}");
        }
    }
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("candidate.proposed"),
        "{kinds:?}"
    );
    // The daemon stopping ends the watch.
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    let status = watch.wait().expect("watch ends");
    assert!(status.success(), "{status}");
}

#[test]
fn on_event_runs_the_configured_command_with_the_event_on_stdin() {
    let env = TestEnv::new();
    let received = env.path().join("received");
    std::fs::create_dir(&received).expect("mkdir");
    // Each event the command sees is written to its own file, named by its kind.
    let script = format!("cat > \"{}/$TOOLSMITH_EVENT-$$.json\"", received.display());
    let config = env.write_config(&format!(
        "[events]\non_event = [\"sh\", \"-c\", {script:?}]\non_event_kinds = [\"tool.approved\"]\n"
    ));
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(&config);
    let _daemon = common::Daemon::start(&env, cmd);
    let tool = approved_tool(&env);

    let deadline = std::time::Instant::now() + common::PATIENCE;
    let file = loop {
        let found: Vec<_> = std::fs::read_dir(&received)
            .expect("read dir")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| std::fs::read_to_string(p).is_ok_and(|text| text.ends_with('\n')))
            .collect();
        if let Some(file) = found.first() {
            break file.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the on_event command never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let name = file
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("tool.approved-"), "{name}");
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
    assert_eq!(event["kind"], "tool.approved", "{event}");
    assert_eq!(event["data"]["name"], tool.as_str(), "{event}");
    // candidate.proposed happened too, but was not chosen.
    std::thread::sleep(Duration::from_millis(300));
    let kinds: Vec<String> = std::fs::read_dir(&received)
        .expect("read dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        kinds.iter().all(|k| k.starts_with("tool.approved-")),
        "{kinds:?}"
    );
}
