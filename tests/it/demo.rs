//! `toolsmith demo`: the whole loop on the shipped demo logs, end to end, as a new user runs it.

use crate::common;

use std::time::Duration;

use common::{TestEnv, json_of};

#[test]
fn the_demo_runs_the_whole_loop_and_leaves_its_directory() {
    let env = TestEnv::new();
    let dir = env.path().join("demo");
    let out = env
        .cli()
        .args(["--json", "demo", "--dir"])
        .arg(&dir)
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    let report = json_of(out.get_output());
    // Both habits of the logs became validated candidates; the sequence was approved and run.
    assert_eq!(report["candidates_awaiting_review"], 2, "{report:#}");
    assert_eq!(report["tool"], "make-build-test", "{report:#}");
    let steps = report["steps"].as_array().expect("steps");
    assert!(steps.iter().all(|s| s["ok"] == true), "{report:#}");
    let commands: Vec<&str> = steps.iter().filter_map(|s| s["command"].as_str()).collect();
    for wanted in [
        "toolsmith ingest",
        "toolsmith mine",
        "toolsmith --json generate",
        "toolsmith approve",
        "toolsmith run make-build-test --param dir=core",
        "git -C",
    ] {
        assert!(
            commands.iter().any(|c| c.starts_with(wanted)),
            "{wanted} in {commands:?}"
        );
    }
    assert!(report["first_log_line_to_candidate_awaiting_review_ms"].as_u64() > Some(0));

    // What it leaves is a working set-up: the tool is approved in the registry, and runs —
    // with the demo's configuration, as it tells a user to, whose state directory (keeping
    // the key the registry's approvals are sealed with) is the demo's.
    let config = dir.join("config.toml");
    let demo_state = dir.join("state");
    let tools = env
        .cli_at(&demo_state)
        .arg("--config")
        .arg(&config)
        .args(["--json", "tools"])
        .assert()
        .success();
    let tools = json_of(tools.get_output());
    assert_eq!(tools[0]["name"], "make-build-test", "{tools:#}");
    assert_eq!(tools[0]["version"], "1.0.0");
    let ran = env
        .cli_at(&demo_state)
        .arg("--config")
        .arg(&config)
        .args([
            "run",
            "make-build-test",
            "--param",
            "dir=web",
            "--workspace",
        ])
        .arg(dir.join("project"))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&ran.get_output().stdout).into_owned();
    assert!(stdout.contains("12 passed (web)"), "{stdout}");
    let tags = std::process::Command::new("git")
        .arg("-C")
        .arg(dir.join("registry"))
        .args(["tag", "--list"])
        .output()
        .expect("git tag");
    assert_eq!(
        String::from_utf8_lossy(&tags.stdout).trim(),
        "make-build-test/v1.0.0"
    );

    // A directory in use is refused, not overwritten.
    let again = env.cli().args(["demo", "--dir"]).arg(&dir).assert().code(2);
    let said = String::from_utf8_lossy(&again.get_output().stderr).into_owned();
    assert!(said.contains("is not empty"), "{said}");
}

#[test]
fn the_demo_says_what_happens_at_each_step() {
    let env = TestEnv::new();
    let out = env
        .cli()
        .args(["demo", "--dir"])
        .arg(env.path().join("demo"))
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for step in [
        "1. Read five Claude Code sessions",
        "2. Mine them",
        "3. Generate a tool for each habit",
        "validated candidate(s) awaiting review",
        "4. Review",
        "5. Run the new tool in the sandbox",
        "built core",
        "6. The registry is a git repository",
        "tag: make-build-test/v1.0.0",
        "export TOOLSMITH_CONFIG=",
    ] {
        assert!(text.contains(step), "missing {step:?} in:\n{text}");
    }
}

#[test]
fn the_daemon_on_embedded_defaults_finds_the_agents_logs_and_proposes_tools() {
    // A new user's machine: Claude Code's sessions and a bash history where they always are, no
    // configuration file at all.
    let env = TestEnv::new();
    let projects = env.path().join("home/.claude/projects/-home-dev-webshop");
    std::fs::create_dir_all(&projects).expect("mkdir");
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/claude-code");
    for entry in std::fs::read_dir(&demo).expect("demo logs").flatten() {
        std::fs::copy(entry.path(), projects.join(entry.file_name())).expect("copy");
    }
    std::fs::write(
        env.path().join("home/.bash_history"),
        "git status\nmake build -C core\nmake test -C core\n",
    )
    .expect("write history");
    let _daemon = common::Daemon::start(&env, env.daemon_command());

    // It finds both, reads them, and its registry exists.
    let deadline = std::time::Instant::now() + common::PATIENCE;
    loop {
        let out = env.cli().args(["sources"]).output().expect("sources");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("31 actions") && text.contains("bash") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(env.state().join("registry/.git").is_dir());

    // Mining (on schedule, after enough new actions, or asked for) is followed by generation:
    // the build-then-test habit becomes a validated candidate awaiting review; the `pip
    // install` recovery needs PyPI, which the built-in policy asks a person to grant: it awaits
    // review too, its hosts listed as needs.
    env.cli().args(["mine"]).assert().success();
    let deadline = std::time::Instant::now() + common::PATIENCE;
    loop {
        let out = env
            .cli()
            .args(["--json", "candidates"])
            .output()
            .expect("candidates");
        let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let list = all.as_array().cloned().unwrap_or_default();
        let make = list
            .iter()
            .any(|c| c["state"] == "awaiting-review" && c["tool"] == "make-build-test");
        let pip = list.iter().find(|c| {
            c["tool"]
                .as_str()
                .is_some_and(|t| t.contains("pip-install"))
                && c["state"] != "proposed"
                && c["state"] != "generating"
                && c["state"] != "validating"
        });
        if let (true, Some(pip)) = (make, pip) {
            let reason = pip["reason"].as_str().unwrap_or_default();
            assert!(
                pip["state"] == "awaiting-review"
                    && reason.contains("needs a grant at review: host:")
                    && reason.contains(":443"),
                "{pip:#}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{all:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let review = env.cli().args(["review"]).assert().success();
    let text = String::from_utf8_lossy(&review.get_output().stdout).into_owned();
    assert!(text.contains("review/make-build-test/1.0.0"), "{text}");
}
