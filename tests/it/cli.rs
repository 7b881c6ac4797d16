//! The CLI's own commands (no daemon needed), with snapshots of what users read.

use crate::common;

use common::TestEnv;
use serde_json::Value;

/// Output with the temporary directory replaced and comment alignment (which depends on the
/// directory's length) collapsed, so snapshots are stable.
fn normalized(env: &TestEnv, bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .replace(&env.path().display().to_string(), "[TMP]")
        .lines()
        .map(|line| match line.split_once(" # ") {
            Some((code, comment)) => format!("{}  # {comment}", code.trim_end()),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn config_show_prints_values_and_their_origins() {
    let env = TestEnv::new();
    let config = env.write_config(
        "# mine\n[daemon]\nmax_connections = 12\n\n[paths]\nregistry = \"/srv/tools\"\n",
    );
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["config", "show"])
        .assert()
        .success();
    insta::assert_snapshot!(normalized(&env, &out.get_output().stdout), @r#"
    # config file: [TMP]/config.toml (found by --config)

    [daemon]
    log_level = "info"  # default
    max_connections = 12  # [TMP]/config.toml:3
    max_subscriptions = 16  # default
    max_request_kib = 1024  # default
    shutdown_grace_s = 10  # default
    idle_timeout_s = 60  # default
    partial_line_timeout_s = 10  # default

    [paths]
    state = "[TMP]/state"  # --state
    runtime = "[TMP]/state/run"  # derived from --state
    registry = "/srv/tools"  # [TMP]/config.toml:6

    [ingest]
    max_record_kib = 16384  # default
    output_cap_kib = 16  # default
    debounce_ms = 100  # default

    [mine]
    min_support = 3  # default
    min_occurrences = 4  # default
    min_support_percent = 1  # default
    max_gap = 1  # default
    min_length = 2  # default
    max_length = 8  # default
    fold_percent = 90  # default
    slow_ms = 30000  # default
    schedule = "*/15 * * * *"  # default
    after_new_actions = 500  # default
    shell_definitions = true  # default

    [generate]
    backend = "template"  # default
    min_score = 40  # default
    max_attempts = 3  # default
    max_per_run = 10  # default
    policy = ""  # default

    [llm]
    provider = "openai"  # default
    base_url = "https://api.openai.com/v1"  # default
    model = ""  # default
    api_key_env = "OPENAI_API_KEY"  # default
    timeout_s = 120  # default
    max_retries = 4  # default
    max_tokens = 8192  # default
    daily_token_budget = 2000000  # default

    [mcp]
    description_budget = 8000  # default
    requests_per_hour = 10  # default

    [events]
    on_event = []  # default
    on_event_kinds = ["candidate.proposed", "tool."]  # default

    [health]
    schedule = "0 */4 * * *"  # default

    [sync]
    schedule = "*/30 * * * *"  # default

    [sandbox]
    path = ""  # default

    [review]
    approve_specs = false  # default
    notify = false  # default

    # no [[source]]: the standard locations of Claude Code, Codex, bash, zsh and fish logs that exist are read
    "#);

    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["config", "show", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&out.get_output().stdout).expect("JSON");
    let max = json["values"]
        .as_array()
        .and_then(|v| v.iter().find(|e| e["key"] == "daemon.max_connections"))
        .expect("max_connections entry");
    assert_eq!(max["value"], 12);
    assert_eq!(max["origin"]["kind"], "file");
    assert_eq!(max["origin"]["line"], 3);
}

#[test]
fn config_is_found_in_xdg_config_home() {
    let env = TestEnv::new();
    let dir = env.path().join("config/toolsmith");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("config.toml"), "[daemon]\nlog_level = \"debug\"\n").expect("write");
    let out = env.cli().args(["config", "show"]).assert().success();
    let text = normalized(&env, &out.get_output().stdout);
    assert!(text.contains("found by $XDG_CONFIG_HOME"), "{text}");
    assert!(text.contains("log_level = \"debug\""), "{text}");
}

#[test]
fn config_check_accepts_good_files_and_names_the_line_of_bad_ones() {
    let env = TestEnv::new();
    let good = env.write_config(toolsmith::config::DEFAULT_CONFIG_TOML);
    env.cli()
        .args(["config", "check"])
        .arg(&good)
        .assert()
        .success();

    let bad = env.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[daemon]\nmax_connections = 64\n\n[paths]\nstate = \"relative\"\n",
    )
    .expect("write");
    let out = env
        .cli()
        .args(["config", "check"])
        .arg(&bad)
        .assert()
        .code(4);
    insta::assert_snapshot!(normalized(&env, &out.get_output().stderr), @"toolsmith: [TMP]/bad.toml:5:9: `relative` is a relative path: write an absolute path (key `paths.state`)");

    std::fs::write(&bad, "[daemon]\nmax_conections = 64\n").expect("write");
    let out = env
        .cli()
        .args(["config", "check"])
        .arg(&bad)
        .assert()
        .code(4);
    insta::assert_snapshot!(normalized(&env, &out.get_output().stderr), @"toolsmith: [TMP]/bad.toml:2:1: unknown field `max_conections`, expected one of `log_level`, `max_connections`, `max_subscriptions`, `max_request_kib`, `shutdown_grace_s`, `idle_timeout_s`, `partial_line_timeout_s` (key `daemon.max_conections`)");

    std::fs::write(
        &bad,
        "[[source]]\nformat = \"claude\"\npath = \"~/.claude/projects\"\n",
    )
    .expect("write");
    let out = env
        .cli()
        .args(["config", "check"])
        .arg(&bad)
        .assert()
        .code(4);
    let stderr = normalized(&env, &out.get_output().stderr);
    assert!(stderr.contains("bad.toml:2:"), "{stderr}");
    assert!(
        stderr.contains("unknown format `claude`; known formats: claude-code"),
        "{stderr}"
    );

    env.cli()
        .args(["config", "check"])
        .arg(env.path().join("missing.toml"))
        .assert()
        .code(4);
}

#[test]
fn usage_errors_exit_2() {
    let env = TestEnv::new();
    env.cli().arg("frobnicate").assert().code(2);
    env.cli()
        .args(["status", "--no-such-flag"])
        .assert()
        .code(2);
}

#[test]
fn completions_and_man_pages_are_generated() {
    let env = TestEnv::new();
    let out = env.cli().args(["completions", "bash"]).assert().success();
    let script = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        script.contains("complete") && script.contains("doctor"),
        "{script}"
    );

    let dir = env.path().join("man");
    env.cli()
        .args(["man", "--out"])
        .arg(&dir)
        .assert()
        .success();
    for page in [
        "toolsmith.1",
        "toolsmith-status.1",
        "toolsmith-doctor.1",
        "toolsmithd.8",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).expect(page);
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{page} is not a man page"
        );
    }
    let out = env.cli().arg("man").assert().success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains(".TH toolsmith 1"));
}

#[test]
fn doctor_reports_every_layer_and_a_verdict() {
    let env = TestEnv::new();
    let out = env.cli().args(["doctor", "--json"]).assert().success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).expect("JSON");
    for layer in [
        "landlock",
        "user_namespace",
        "mount_namespace",
        "pid_namespace",
        "net_namespace",
        "seccomp",
        "cgroup_v2",
        "git",
        "sqlite",
    ] {
        assert!(
            report["host"][layer]["available"].is_boolean(),
            "{layer} missing from {report}"
        );
        assert!(
            report["host"][layer]["detail"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
    }
    assert!(
        ["full", "reduced", "insufficient"].contains(&report["isolation"].as_str().unwrap_or(""))
    );
    assert!(report["verdict"].as_str().is_some_and(|v| !v.is_empty()));
    assert_eq!(report["daemon"]["available"], false);
    assert_eq!(report["config"]["available"], true);

    let out = env.cli().arg("doctor").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("verdict: "), "{text}");
    assert!(text.contains("toolsmithd is not running"), "{text}");
}

#[test]
fn progress_shows_on_a_terminal_only() {
    let env = TestEnv::new();
    let log = env.path().join("agent.jsonl");
    let lines: Vec<String> = (0..50)
        .map(|i| {
            serde_json::json!({"v": 1, "session": "s1", "seq": i + 1, "tool": "shell",
                               "input": {"command": format!("make test -C pkg{i}")},
                               "ok": true, "exit_code": 0, "output": "ok"})
            .to_string()
        })
        .collect();
    std::fs::write(&log, lines.join("\n") + "\n").expect("write log");
    // Piped: stdout has the report, stderr nothing at all.
    let piped = env
        .cli_at(&env.path().join("piped"))
        .arg("ingest")
        .arg(&log)
        .assert()
        .success();
    assert!(piped.get_output().stderr.is_empty(), "{piped:?}");
    // On a terminal (`script` gives the command one): the progress line is drawn, then cleared.
    let Ok(script) = which("script") else {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    };
    let command = format!(
        "{} --state {} ingest {}",
        env!("CARGO_BIN_EXE_toolsmith"),
        env.path().join("tty").display(),
        log.display()
    );
    let mut cmd = std::process::Command::new(script);
    env.apply(&mut cmd);
    let out = cmd
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1/1 files, 50 new actions"), "{text}");
    assert!(text.contains("1 files, 0.0 MiB: 50 new actions"), "{text}");
}

/// The path of a program on `PATH`.
fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or(())
}

/// `toolsmith ARGS` with its stdout a pipe nobody reads any more, as in `toolsmith … | head`
/// once `head` has exited: its exit status and its stderr.
fn with_stdout_closed(env: &TestEnv, args: &[&str]) -> (Option<i32>, String) {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let (reader, writer) = nix::unistd::pipe().expect("pipe");
    // The reader is gone before the first write: every write finds the pipe broken.
    drop(reader);
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut command);
    let mut child = command
        .arg("--state")
        .arg(env.state())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolsmith");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    (child.wait().expect("wait").code(), stderr)
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let env = TestEnv::new();
    for args in [
        &["man"][..],
        &["completions", "bash"],
        &["config", "show"],
        &["--json", "config", "show"],
        &["--help"],
    ] {
        let (code, stderr) = with_stdout_closed(&env, args);
        assert_eq!(code, Some(0), "toolsmith {args:?}: {stderr}");
        assert!(stderr.is_empty(), "toolsmith {args:?} said: {stderr}");
    }
}

/// `toolsmith completions bash | head -1`: one line read, then the pipe closed under a writer
/// that has more to say than the pipe holds (71 KB; a pipe holds 64 KiB).
#[test]
fn head_reads_one_line_and_toolsmith_ends_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let env = TestEnv::new();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut command);
    let mut child = command
        .args(["completions", "bash"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolsmith");
    // Byte by byte, as `head` might: all the rest stays in the pipe or in toolsmith.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = Vec::new();
    let mut byte = [0u8];
    while stdout.read(&mut byte).expect("read") == 1 && byte[0] != b'\n' {
        first.push(byte[0]);
    }
    assert!(!first.is_empty());
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    assert!(
        !stderr.contains("Broken pipe") && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[test]
fn the_built_in_policy_is_printed_and_a_refusal_under_it_says_how_to_start_one() {
    let env = TestEnv::new();
    let out = env.cli().args(["config", "policy"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default.toml"),
    )
    .unwrap();
    assert_eq!(text, shipped);

    // The printed policy is one the sandbox takes, and grants no host.
    let file = env.path().join("policy.toml");
    std::fs::write(&file, &text).unwrap();
    env.cli()
        .args(["sandbox", "--policy"])
        .arg(&file)
        .args(["--", "/bin/true"])
        .assert()
        .success();
    let refused = env
        .cli()
        .args(["sandbox", "--allow-host", "pypi.org:443", "--", "/bin/true"])
        .assert()
        .code(125);
    let err = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        err.contains("add \"pypi.org:443\" to [grants] hosts in a policy file of your own"),
        "{err}"
    );
    assert!(
        err.contains("toolsmith config policy > policy.toml"),
        "{err}"
    );
    assert!(!err.contains("in policies/default.toml"), "{err}");
    let refused = env
        .cli()
        .args(["sandbox", "--policy"])
        .arg(&file)
        .args(["--allow-host", "pypi.org:443", "--", "/bin/true"])
        .assert()
        .code(125);
    let err = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        err.contains(&format!("to [grants] hosts in {}", file.display())),
        "{err}"
    );
}
