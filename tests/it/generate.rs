//! Generation end to end, through the real binaries: a mined pattern becomes a candidate whose
//! derived tests pass in the sandbox; requests with examples are written offline, without
//! examples they need a model; a model behind a local server speaking the OpenAI and Anthropic
//! wire formats answers well, with a syntax error then a fix, with code that tries the network,
//! with nonsense, with 429s, 500s and not at all — every case ends in a clear candidate state
//! and the daemon keeps running; a restart resumes interrupted candidates.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::llm_server::{LlmServer, Reply};
use common::{Daemon, PATIENCE, TestEnv, json_of};
use serde_json::{Value, json};
use toolsmith::validate::report::CheckLayer;

/// One action as a native log line.
fn call(session: &str, seq: u64, command: &str, ms: u64) -> String {
    json!({"v": 1, "session": session, "seq": seq, "cwd": format!("/work/{session}"),
           "tool": "Bash", "input": {"command": command}, "ok": true, "exit_code": 0,
           "output": "", "duration_ms": ms})
    .to_string()
}

/// Four sessions building then testing one package (the package varies; `make`, which the
/// sandbox's PATH has, as `runtime.requires` is checked there), with a
/// `git status` in between once; what comes before varies, so the pair is a habit of its own.
pub(crate) fn habit_log(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for (i, package) in ["core", "cli", "core", "web"].iter().enumerate() {
        let s = format!("s{i}");
        let mut seq = 0;
        let mut push = |command: &str| {
            seq += 1;
            lines.push(call(&s, seq, command, 2_000));
        };
        push(if i % 2 == 0 {
            "git log --oneline -n 5"
        } else {
            "git fetch origin"
        });
        push(&format!("make build -C {package}"));
        if i == 1 {
            push("git status");
        }
        push(&format!("make test -C {package}"));
    }
    let path = dir.join("agent.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write log");
    path
}

/// A validator under the built-in policy, running the sandbox through the `toolsmith` binary.
fn sandbox_validator(scratch: &Path) -> toolsmith::validate::run::Validator {
    let mut validator = toolsmith::validate::run::Validator::with_default_policy(scratch.into())
        .expect("default policy");
    validator.helper = Some(env!("CARGO_BIN_EXE_toolsmith").into());
    validator
}

/// Writes a tool's files into `tool` and validates them.
fn validate_in(
    validator: &toolsmith::validate::run::Validator,
    tool: &Path,
    files: &std::collections::BTreeMap<String, String>,
) -> toolsmith::validate::run::Outcome {
    std::fs::create_dir_all(tool.join("tests")).expect("mkdir");
    for (name, content) in files {
        std::fs::write(tool.join(name), content).expect("write");
    }
    validator.validate(tool, files)
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The candidate in a run's report whose pattern (or tool) is `id`.
fn candidates(env: &TestEnv) -> Vec<Value> {
    let out = env.cli().args(["--json", "candidates"]).assert().success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("a JSON array")
}

fn show(env: &TestEnv, id: &str) -> Value {
    let out = env
        .cli()
        .args(["--json", "show", id, "--attempts"])
        .assert()
        .success();
    json_of(out.get_output())
}

pub(crate) fn mine(env: &TestEnv) -> Vec<Value> {
    let log = habit_log(env.path());
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    env.cli().arg("mine").assert().success();
    let out = env
        .cli()
        .args(["--json", "patterns", "--limit", "100"])
        .assert()
        .success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("patterns")
}

pub(crate) fn build_test_pattern(patterns: &[Value]) -> Value {
    patterns
        .iter()
        .find(|p| {
            p["steps"][0] == "make build -C <dir>" && p["steps"].as_array().map(Vec::len) == Some(2)
        })
        .cloned()
        .unwrap_or_else(|| panic!("no build → test pattern in {patterns:#?}"))
}

#[test]
fn a_mined_pattern_becomes_a_candidate_whose_derived_tests_pass_in_the_sandbox() {
    let env = TestEnv::new();
    let patterns = mine(&env);
    let pattern = build_test_pattern(&patterns);
    let pattern_id = pattern["id"].as_str().expect("id").to_owned();

    let out = env
        .cli()
        .args(["--json", "generate", "--pattern", &pattern_id])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    assert_eq!(made["tool"], "make-build-test", "{report:#}");
    assert_eq!(made["version"], "1.0.0");
    assert_eq!(made["generator"], "template/sh@1");
    let id = made["id"].as_str().expect("id").to_owned();

    // What was staged: the files, the diagnostics of every layer, the validation written back.
    let shown = show(&env, &id);
    let attempt = &shown["attempts"][0];
    assert_eq!(attempt["attempt"], 1);
    let diagnostics = &attempt["diagnostics"];
    assert_eq!(diagnostics["passed"], true, "{diagnostics:#}");
    let layers: Vec<&str> = diagnostics["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["layer"].as_str())
        .collect();
    let first = |layer: &str| layers.iter().position(|l| *l == layer);
    assert!(
        first("manifest") < first("static")
            && first("static") < first("policy")
            && first("policy") < first("requires")
            && first("requires") < first("tests"),
        "layers out of order: {layers:?}"
    );
    assert!(
        diagnostics["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .any(|c| c["name"] == "bash -n run.sh" && c["passed"] == true),
        "{diagnostics:#}"
    );
    // One dry-run case per occurrence (four sessions), --help, a --dir beginning with `-`
    // (refused: no occurrence had one), a missing --dir, an unknown option: all passed in
    // the sandbox.
    let tests: Vec<&Value> = diagnostics["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["layer"] == "tests")
        .collect();
    assert_eq!(tests.len(), 8, "{diagnostics:#}");
    assert!(tests.iter().all(|t| t["passed"] == true));
    let files = &attempt["files"];
    let cases = files["tests/cases.json"].as_str().expect("cases");
    assert!(cases.contains("make build -C web"), "{cases}");
    let manifest = files["tool.yaml"].as_str().expect("manifest");
    assert!(manifest.contains("validation:"), "{manifest}");
    // The digest covers the profile too (`sha256v2:`), not the files alone.
    assert!(manifest.contains("digest: sha256v2:"), "{manifest}");
    assert!(manifest.contains("passed: 8"), "{manifest}");
    assert!(manifest.contains("pattern: p-"), "{manifest}");
    assert!(
        files["README.md"]
            .as_str()
            .is_some_and(|r| r.contains("## Usage"))
    );
    assert_eq!(shown["spec"]["params"][0]["name"], "dir");

    // The pattern is now proposed: another pass does not make it again, nor does --pattern.
    let out = env
        .cli()
        .args(["--json", "patterns", &pattern_id])
        .assert()
        .success();
    assert_eq!(json_of(out.get_output())["status"], "proposed");
    let out = env
        .cli()
        .args(["--json", "generate", "--pattern", &pattern_id])
        .assert()
        .success();
    let again = json_of(out.get_output());
    assert_eq!(again["candidates"], json!([]), "{again:#}");
    assert!(
        again["skipped"][0]
            .as_str()
            .is_some_and(|s| s.contains(&id)),
        "{again:#}"
    );

    // The listing and the human views.
    let listed = candidates(&env);
    assert!(
        listed
            .iter()
            .any(|c| c["id"] == id.as_str() && c["state"] == "awaiting-review")
    );
    let out = env.cli().arg("candidates").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains(&id) && text.contains("awaiting-review"),
        "{text}"
    );
    let out = env.cli().args(["show", &id]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    // Awaiting review: the proposal's diff against the registry's main.
    assert!(
        text.contains("+++ b/tools/make-build-test/run.sh") && text.contains("+set -eu"),
        "{text}"
    );
    assert!(
        text.contains("[tests] --help lists every parameter"),
        "{text}"
    );
    env.cli().args(["show", "c-000000000000"]).assert().code(1);

    // A request whose commands are the pattern's (the same canonical keys, other values) does
    // what that candidate does: a new version of it, not a second tool.
    let out = env
        .cli()
        .args([
            "--json",
            "new",
            "Build one directory, then run its tests",
            "--example",
            "make build -C api",
            "--example",
            "make test -C api",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let same = json_of(out.get_output());
    assert_eq!(same["candidates"][0]["tool"], "make-build-test", "{same:#}");
    assert_eq!(same["candidates"][0]["version"], "1.1.0", "{same:#}");
    let spec = &show(&env, same["candidates"][0]["id"].as_str().expect("id"))["spec"];
    assert_eq!(spec["keys"], shown["spec"]["keys"], "{spec:#}");
    assert_eq!(spec["keys"].as_array().map(Vec::len), Some(2), "{spec:#}");

    // A pass over everything pending makes the other patterns above the threshold.
    let out = env
        .cli()
        .args(["--json", "generate"])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let pass = json_of(out.get_output());
    for c in pass["candidates"].as_array().expect("candidates") {
        assert!(
            c["state"] == "awaiting-review" || c["state"] == "failed",
            "{c:#}"
        );
        assert_ne!(c["tool"], "make-build-test", "one tool per name: {pass:#}");
    }
}

#[test]
fn requests_are_written_offline_from_examples_and_say_when_they_need_a_model() {
    let env = TestEnv::new();
    let out = env
        .cli()
        .args([
            "--json",
            "new",
            "Run the library tests of one package",
            "--example",
            "make test -C core",
            "--example",
            "make test -C cli",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let name = made["tool"].as_str().expect("tool").to_owned();
    let shown = show(&env, made["id"].as_str().expect("id"));
    assert_eq!(shown["spec"]["origin"], "request");
    assert_eq!(shown["spec"]["params"][0]["name"], "dir", "{shown:#}");

    // The same request again: a new version of the same tool, not a second tool.
    let out = env
        .cli()
        .args([
            "--json",
            "new",
            "run the library tests of one  package",
            "--example",
            "make test -C core",
            "--example",
            "make test -C web",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let again = json_of(out.get_output());
    assert_eq!(again["candidates"][0]["tool"], name.as_str(), "{again:#}");
    assert_eq!(again["candidates"][0]["version"], "1.1.0", "{again:#}");

    // Without examples, a model is needed, and the message says how to get one.
    let out = env
        .cli()
        .args(["new", "list my stale branches"])
        .assert()
        .code(1);
    let err = stderr_of(out.get_output());
    assert!(
        err.contains("generate.backend") && err.contains("--example"),
        "{err}"
    );
    assert_eq!(candidates(&env).len(), 2, "no candidate was made");
}

#[test]
fn the_policy_file_of_generate_policy_rules_validation_and_the_sandbox() {
    let env = TestEnv::new();
    let default = toolsmith::validate::run::DEFAULT_POLICY;
    let at = default.find("[[validate.rule]]").expect("a rule");
    let text = format!(
        "{}[[validate.rule]]\nid = \"local.no-make\"\nlanguage = \"sh\"\n\
         pattern = '\\bmake\\b'\nreason = \"make is not used on this host\"\n\n{}",
        &default[..at],
        default[at..].replace("wall_s = 600", "wall_s = 30")
    );
    let policy = env.path().join("policy.toml");
    std::fs::write(&policy, &text).expect("write policy");
    let config = env.write_config(&format!("[generate]\npolicy = \"{}\"\n", policy.display()));

    // Both halves come from the file.
    let validator =
        toolsmith::validate::run::Validator::from_file(&policy, env.path().join("scratch"))
            .expect("policy");
    assert_eq!(validator.sandbox_policy.file, policy.display().to_string());
    assert_eq!(validator.sandbox_policy.max.wall_s, 30);
    assert!(
        validator
            .code_policy
            .rules()
            .iter()
            .any(|r| r.id == "local.no-make")
    );

    // Generation follows it: the rule rejects what the built-in policy lets through.
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args([
            "--json",
            "new",
            "Run the tests in one directory",
            "--example",
            "make test -C core",
            "--example",
            "make test -C cli",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(1);
    let err = stderr_of(out.get_output());
    assert!(err.contains("[policy] local.no-make"), "{err}");
    let listed = candidates(&env);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["state"], "failed", "{listed:#?}");

    // A policy file that is not there is refused with the config's line.
    let missing = env.write_config("[generate]\npolicy = \"/nonexistent/policy.toml\"\n");
    let out = env
        .cli()
        .arg("--config")
        .arg(&missing)
        .args(["config", "show"])
        .assert()
        .failure();
    let err = stderr_of(out.get_output());
    assert!(
        err.contains("config.toml:2:") && err.contains("generate.policy"),
        "{err}"
    );
}

/// A tool a model could write for "print a greeting": the calling convention, a dry run, tests.
pub(crate) fn greeting_reply(script: &str) -> String {
    let cases = json!({"cases": [
        {"name": "prints hello", "args": [], "expect": {"exit_code": 0, "stdout": "hello\n"}},
        {"name": "--help", "args": ["--help"], "expect": {"exit_code": 0, "stdout_contains": ["Usage"]}},
        {"name": "an unknown option fails", "args": ["--nope"], "expect": {"exit_code": 2}}
    ]});
    format!(
        "````file run.sh\n{script}````\n\n````file tests/cases.json\n{cases}\n````\n\n\
         ````file README.md\n# greeting\n\nPrints a greeting.\n````\n"
    )
}

/// A greeting script that passes its checks and tests.
pub(crate) const GOOD_SCRIPT: &str = r#"#!/bin/sh
set -eu
case "${1:-}" in
  --help | -h) printf 'Usage: run.sh\nPrints a greeting.\n'; exit 0 ;;
  '') ;;
  *) printf 'unknown option: %s\n' "$1" >&2; exit 2 ;;
esac
if [ "${TOOLSMITH_DRY_RUN:-}" = 1 ]; then
  printf '%s\n' "printf hello"
  exit 0
fi
printf 'hello\n'
"#;

/// The same with an `if` that never ends.
const BROKEN_SCRIPT: &str = r#"#!/bin/sh
set -eu
if [ "${1:-}" = --help ]; then
  printf 'Usage: run.sh\n'
printf 'hello\n'
"#;

fn network_script(port: u16) -> String {
    format!("#!/bin/sh\nset -eu\ncurl -fsS --max-time 5 http://127.0.0.1:{port}/greeting\n")
}

fn llm_config(env: &TestEnv, server: &LlmServer, provider: &str, extra: &str) -> PathBuf {
    let base = match provider {
        "anthropic" => server.url.clone(),
        _ => format!("{}/v1", server.url),
    };
    env.write_config(&format!(
        "[generate]\nbackend = \"llm\"\nmax_attempts = 3\nmax_per_run = 2\nmin_score = 20\n\n\
         [llm]\nprovider = \"{provider}\"\nbase_url = \"{base}\"\nmodel = \"test-model\"\n\
         api_key_env = \"TOOLSMITH_TEST_KEY\"\ntimeout_s = 2\nmax_retries = 1\n{extra}"
    ))
}

/// `toolsmith --config C --json new TEXT`: the report (also when the candidate failed).
fn request(env: &TestEnv, config: &Path, text: &str) -> Value {
    let out = env
        .cli()
        .env("TOOLSMITH_TEST_KEY", "sk-test")
        .arg("--config")
        .arg(config)
        .args(["--json", "new", text])
        .timeout(Duration::from_secs(120))
        .output()
        .expect("toolsmith new runs");
    if out.stdout.is_empty() {
        panic!("no report: {}", stderr_of(&out));
    }
    let report = json_of(&out);
    let failed = report["candidates"][0]["state"] == "failed";
    assert_eq!(
        out.status.code(),
        Some(if failed { 1 } else { 0 }),
        "{report:#}\n{}",
        stderr_of(&out)
    );
    report["candidates"][0].clone()
}

/// A model's tool for the mined `make build -C <dir> → make test -C <dir>` habit whose dry run
/// prints `second` as the second command, with tests of its own that expect just that.
fn make_reply(second: &str) -> String {
    let script = format!(
        r#"#!/bin/sh
set -eu
dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --help | -h) printf 'Usage: run.sh --dir DIR\n  --dir DIR  the package directory\n'; exit 0 ;;
    --dir) [ $# -ge 2 ] || {{ echo 'missing value for --dir' >&2; exit 2; }}; dir=$2; shift 2 ;;
    *) printf 'unknown option: %s\n' "$1" >&2; exit 2 ;;
  esac
done
[ -n "$dir" ] || {{ echo 'missing --dir' >&2; exit 2; }}
if [ "${{TOOLSMITH_DRY_RUN:-}}" = 1 ]; then
  printf 'make build -C %s\n' "$dir"
  printf '{second}\n' "$dir"
  exit 0
fi
make build -C "$dir"
{run}
"#,
        run = second.replace("%s", "\"$dir\""),
    );
    let mine = second.replace("%s", "core");
    let cases = json!({"cases": [
        {"name": "the dry run for core", "params": {"dir": "core"}, "dry_run": true,
         "expect": {"exit_code": 0, "stdout": format!("make build -C core\n{mine}\n")}},
        {"name": "--help", "args": ["--help"], "expect": {"exit_code": 0, "stdout_contains": ["--dir"]}},
        {"name": "--dir is required", "args": [], "expect": {"exit_code": 2}}
    ]});
    format!(
        "````file run.sh\n{script}````\n\n````file tests/cases.json\n{cases}\n````\n\n\
         ````file README.md\n# make-build-test\n\nBuilds then tests a package.\n````\n"
    )
}

/// A model's tool is held to the log like a template's: one that drops a word of what was run
/// (`make test core` for `make test -C core`) fails validation though its own tests pass, the
/// first differing word named — to the reviewer and to the model, whose faithful repair is
/// then accepted.
#[test]
fn a_model_s_tool_that_drops_a_logged_word_is_refused() {
    let env = TestEnv::new();
    let patterns = mine(&env);
    let pattern_id = build_test_pattern(&patterns)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let server = LlmServer::start(vec![
        Reply::openai(&make_reply("make test %s")),
        Reply::openai(&make_reply("make test -C %s")),
    ]);
    let config = llm_config(&env, &server, "openai", "");
    let out = env
        .cli()
        .env("TOOLSMITH_TEST_KEY", "sk-test")
        .arg("--config")
        .arg(&config)
        .args(["--json", "generate", "--pattern", &pattern_id])
        .timeout(Duration::from_secs(180))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    assert_eq!(made["generator"], "llm:test-model", "{report:#}");
    let shown = show(&env, made["id"].as_str().expect("id"));
    let checks = |attempt: usize| -> Vec<Value> {
        shown["attempts"][attempt]["diagnostics"]["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|c| c["layer"] == "tests")
            .cloned()
            .collect()
    };
    // The first attempt: its own dry run passed, every occurrence's failed, naming the word.
    let first = checks(0);
    assert!(
        first
            .iter()
            .any(|c| c["name"] == "the dry run for core" && c["passed"] == true),
        "{first:#?}"
    );
    let logged: Vec<&Value> = first
        .iter()
        .filter(|c| {
            c["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("occurrence "))
        })
        .collect();
    assert_eq!(logged.len(), 4, "one per occurrence: {first:#?}");
    for case in &logged {
        assert_eq!(case["passed"], false, "{case:#}");
        let details = case["details"].to_string();
        assert!(
            details.contains("line 2 word 3: expected `-C`, got `"),
            "{details}"
        );
    }
    // The model was told where its tool differs from the log.
    let asked = server.received();
    assert_eq!(asked.len(), 2);
    let repair = asked[1].body.to_string();
    assert!(repair.contains("line 2 word 3: expected"), "{repair}");
    // The repair prints what was run: accepted.
    let second = checks(1);
    assert!(second.iter().all(|c| c["passed"] == true), "{second:#?}");
    assert_eq!(
        second
            .iter()
            .filter(|c| c["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("occurrence ")))
            .count(),
        4
    );
}

#[test]
fn one_shot_with_the_anthropic_wire_format() {
    let env = TestEnv::new();
    let server = LlmServer::start(vec![Reply::anthropic(&greeting_reply(GOOD_SCRIPT))]);
    let config = llm_config(&env, &server, "anthropic", "");
    let made = request(&env, &config, "print a greeting");
    assert_eq!(made["state"], "awaiting-review", "{made:#}");
    assert_eq!(made["generator"], "llm:test-model");
    let seen = server.received();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].header("x-api-key"), Some("sk-test"));
    let prompt = seen[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(prompt.contains("print a greeting"), "{prompt}");
    assert!(prompt.contains("````file run.sh"), "{prompt}");
    let shown = show(&env, made["id"].as_str().expect("id"));
    let files = &shown["attempts"][0]["files"];
    assert_eq!(files["run.sh"], GOOD_SCRIPT);
    // The manifest is the spec's, written by toolsmith, never by the model.
    assert!(
        files["tool.yaml"]
            .as_str()
            .is_some_and(|m| m.contains("generator: llm:test-model") && m.contains("validation:")),
        "{files:#}"
    );
    assert!(shown["attempts"][0]["reply"].as_str().is_some());
}

#[test]
fn model_replies_good_and_bad_all_end_in_a_clear_state_and_the_daemon_stays_up() {
    let env = TestEnv::new();
    let server = LlmServer::start(vec![Reply::error(500, "not yet")]);
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let config = llm_config(
        &env,
        &server,
        "openai",
        &format!(
            "\n[ingest]\ndebounce_ms = 10\n\n[mine]\nafter_new_actions = 5\n\n\
             [[source]]\nformat = \"native\"\npath = \"{}\"\n",
            logs.display()
        ),
    );
    let mut cmd = env.daemon_command();
    cmd.arg("--config")
        .arg(&config)
        .env("TOOLSMITH_TEST_KEY", "sk-test");
    let mut daemon = Daemon::start(&env, cmd);
    let mut events = daemon.connect();
    let subscribed = events.call(
        1,
        "events.subscribe",
        json!({"kinds": ["candidate.", "generate.", "mine."]}),
    );
    assert!(subscribed.get("error").is_none(), "{subscribed}");

    // Mining runs on new actions, generation after it; the model answers 500, so the mined
    // sequence is written from templates instead, and says so.
    std::fs::copy(habit_log(env.path()), logs.join("agent.jsonl")).expect("copy log");
    let mut kinds = Vec::new();
    loop {
        let message = events.read_or(|| daemon.log());
        let kind = message["params"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        // A first mining run may see only part of the log, and make nothing.
        if kind == "generate.finished" && message["params"]["data"]["candidates"].as_u64() > Some(0)
        {
            break;
        }
        kinds.push(kind);
    }
    for wanted in [
        "mine.finished",
        "candidate.proposed",
        "candidate.generating",
        "candidate.validating",
        "candidate.attempt",
        "candidate.awaiting-review",
    ] {
        assert!(
            kinds.iter().any(|k| k == wanted),
            "no {wanted} in {kinds:?}"
        );
    }
    let mined: Vec<Value> = candidates(&env);
    assert!(!mined.is_empty());
    for c in &mined {
        assert_eq!(c["state"], "awaiting-review", "{c:#}");
        assert_eq!(c["generator"], "template/sh@1", "{c:#}");
        assert!(
            c["reason"]
                .as_str()
                .is_some_and(|r| r.contains("written from templates instead")),
            "{c:#}"
        );
    }

    // A good reply.
    server.script(vec![Reply::openai(&greeting_reply(GOOD_SCRIPT))]);
    let made = request(&env, &config, "print a greeting");
    assert_eq!(made["state"], "awaiting-review", "{made:#}");
    assert_eq!(made["attempts"], 1);

    // A syntax error, then the fix: two attempts kept, the second prompt carries the failure.
    let before = server.received().len();
    server.script(vec![
        Reply::openai(&greeting_reply(BROKEN_SCRIPT)),
        Reply::openai(&greeting_reply(GOOD_SCRIPT)),
    ]);
    let made = request(&env, &config, "print a friendly greeting");
    assert_eq!(made["state"], "awaiting-review", "{made:#}");
    assert_eq!(made["attempts"], 2, "{made:#}");
    let seen = server.received();
    let repair = &seen[before + 1].body["messages"];
    assert_eq!(repair.as_array().map(Vec::len), Some(4), "{repair:#}");
    assert!(
        repair[3]["content"]
            .as_str()
            .is_some_and(|c| c.contains("sh -n run.sh")),
        "{repair:#}"
    );
    let shown = show(&env, made["id"].as_str().expect("id"));
    assert_eq!(shown["attempts"].as_array().map(Vec::len), Some(2));
    assert_eq!(shown["attempts"][0]["diagnostics"]["passed"], false);
    let diff = shown["diffs"][0]["diff"].as_str().unwrap_or_default();
    assert!(diff.contains("+case"), "{diff}");
    let out = env
        .cli()
        .args(["show", made["id"].as_str().expect("id"), "--attempts"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("diff attempt-1 → attempt-2") && text.contains("FAIL [static] sh -n run.sh"),
        "{text}"
    );

    // Code that tries the network: `curl` is a program the policy asks a person to grant
    // (the policy layer lists it as a need, not a failure), but a host a model wrote is never
    // derived from the evidence, so no grant reaches it: the sandbox stops it, every attempt.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    server.script(vec![Reply::openai(&greeting_reply(&network_script(port)))]);
    let made = request(&env, &config, "fetch the greeting from the server");
    assert_eq!(made["state"], "failed", "{made:#}");
    assert_eq!(made["attempts"], 3, "{made:#}");
    let reason = made["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("gave up after 3")
            && reason.contains(&format!("Failed to connect to 127.0.0.1 port {port}")),
        "{reason}"
    );
    let shown = show(&env, made["id"].as_str().expect("id"));
    let policy_check = shown["attempts"][0]["diagnostics"]["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["layer"] == "policy"))
        .cloned()
        .unwrap_or_default();
    assert!(
        policy_check["passed"] == true
            && policy_check["details"]
                .to_string()
                .contains("[domain.network] run.sh:3: `curl`"),
        "{policy_check:#}"
    );
    // The staged code, run in the sandbox, reaches nothing.
    let tool_dir = env
        .state()
        .join("staging")
        .join(made["id"].as_str().expect("id"))
        .join("attempt-1/tool");
    assert!(tool_dir.join("run.sh").is_file(), "{shown:#}");
    let mut spec =
        toolsmith::sandbox::SandboxSpec::new(vec!["/bin/sh".into(), "/tool/run.sh".into()]);
    spec.tool_dir = Some(tool_dir);
    spec.helper = Some(env!("CARGO_BIN_EXE_toolsmith").into());
    let report = toolsmith::sandbox::run(&spec).expect("the sandbox runs it");
    assert_ne!(
        report.exit,
        toolsmith::sandbox::Exit::Code(0),
        "{report:#?}"
    );
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(
        listener.accept().is_err(),
        "the sandboxed code reached the host's loopback"
    );

    // Replies that are not file blocks: diagnosed, repaired, given up with the reason.
    server.script(vec![Reply::openai(
        "Sure! Here is a script that prints a greeting:\n\necho hello\n",
    )]);
    let made = request(&env, &config, "say hello politely");
    assert_eq!(made["state"], "failed", "{made:#}");
    assert!(
        made["reason"]
            .as_str()
            .is_some_and(|r| r.contains("output contract")),
        "{made:#}"
    );
    // A 200 that is not a completion at all.
    server.script(vec![Reply::ok("<html>gateway</html>".into())]);
    let made = request(&env, &config, "say hello loudly");
    assert_eq!(made["state"], "failed", "{made:#}");
    assert!(
        made["reason"]
            .as_str()
            .is_some_and(|r| r.contains("unusable")),
        "{made:#}"
    );

    // 429 with Retry-After, then an answer: the retry waits and succeeds.
    server.script(vec![
        Reply::error(429, "slow down").header("retry-after", "1"),
        Reply::openai(&greeting_reply(GOOD_SCRIPT)),
    ]);
    let started = Instant::now();
    let made = request(&env, &config, "print a greeting after waiting");
    assert_eq!(made["state"], "awaiting-review", "{made:#}");
    assert!(started.elapsed() >= Duration::from_secs(1));

    // 500s until the retries run out.
    server.script(vec![Reply::error(500, "internal trouble")]);
    let made = request(&env, &config, "print a greeting despite errors");
    assert_eq!(made["state"], "failed", "{made:#}");
    let reason = made["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("500") && reason.contains("internal trouble"),
        "{reason}"
    );

    // A server that never answers: the timeout ends it.
    server.script(vec![
        Reply::openai(&greeting_reply(GOOD_SCRIPT)).after(Duration::from_secs(30)),
    ]);
    let made = request(&env, &config, "print a greeting eventually");
    assert_eq!(made["state"], "failed", "{made:#}");
    assert!(
        made["reason"]
            .as_str()
            .is_some_and(|r| r.contains("did not answer within 2 s")),
        "{made:#}"
    );

    // `toolsmith generate` asks the daemon, which holds the store: nothing new is pending.
    let out = env
        .cli()
        .env("TOOLSMITH_TEST_KEY", "sk-test")
        .arg("--config")
        .arg(&config)
        .args(["--json", "generate"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    assert_eq!(json_of(out.get_output())["candidates"], json!([]));

    // Through all of it the daemon kept serving.
    assert!(daemon.is_running(), "{}", daemon.log());
    let status = daemon.connect().call(9, "status", Value::Null);
    assert!(status.get("result").is_some(), "{status}");
    assert!(!daemon.log().contains("panicked"), "{}", daemon.log());
    // Bad parameters are an error, not a crash.
    let bad = daemon
        .connect()
        .call(10, "generate.run", json!({"pattern": 5}));
    assert!(bad.get("error").is_some(), "{bad}");
    let final_states: Vec<Value> = candidates(&env)
        .iter()
        .map(|c| c["state"].clone())
        .collect();
    assert!(
        final_states
            .iter()
            .all(|s| s == "awaiting-review" || s == "failed"),
        "{final_states:?}"
    );
}

#[test]
fn a_restart_resumes_interrupted_candidates_or_fails_them_never_leaves_them_stuck() {
    use toolsmith::generate::candidates::{self, NewCandidate, State};
    let env = TestEnv::new();
    let patterns = mine(&env);
    let pattern_id = build_test_pattern(&patterns)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // A daemon died with one candidate mid-validation and one mid-generation (a request whose
    // spec was never saved).
    let store = toolsmith::store::Store::open(&env.state().join("state.db")).expect("store");
    let pid = pattern_id.clone();
    let ids = store
        .call_blocking(move |conn| {
            let make = || -> Result<(String, String), candidates::CandidateError> {
                let mined = candidates::create(
                    conn,
                    &NewCandidate {
                        tool: "make-build-test".into(),
                        origin: "mined-sequence".into(),
                        pattern: Some(pid),
                        request: None,
                    },
                )?;
                candidates::transition(conn, &mined.id, State::Generating, None)?;
                candidates::transition(conn, &mined.id, State::Validating, None)?;
                let asked = candidates::create(
                    conn,
                    &NewCandidate {
                        tool: "stale-branches".into(),
                        origin: "request".into(),
                        pattern: None,
                        request: Some("list stale branches".into()),
                    },
                )?;
                candidates::transition(conn, &asked.id, State::Generating, None)?;
                Ok((mined.id, asked.id))
            };
            Ok(make().map_err(|e| e.to_string()))
        })
        .expect("store")
        .expect("candidates");
    drop(store);

    let daemon = Daemon::start(&env, env.daemon_command());
    let deadline = Instant::now() + PATIENCE * 3;
    let states = loop {
        let all = candidates(&env);
        let state = |id: &str| {
            all.iter()
                .find(|c| c["id"] == id)
                .map(|c| c["state"].as_str().unwrap_or_default().to_owned())
                .unwrap_or_default()
        };
        let states = (state(&ids.0), state(&ids.1));
        if (states.0 == "awaiting-review" || states.0 == "failed") && states.1 == "failed" {
            break (states, all);
        }
        assert!(
            Instant::now() < deadline,
            "still {states:?}; log:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let ((mined, asked), all) = states;
    assert_eq!(mined, "awaiting-review", "{all:#?}\n{}", daemon.log());
    assert_eq!(asked, "failed");
    let reason = all
        .iter()
        .find(|c| c["id"] == ids.1.as_str())
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(reason.contains("spec was lost"), "{reason}");
}

/// A one-shot `toolsmith new` killed mid-way (SIGKILL, while the model is thinking) leaves no
/// stuck candidate, with no daemon ever started: while it runs, `toolsmith candidates` shows its
/// candidate generating (a live process's work is never called interrupted); once it is dead,
/// `candidates` and `show` say the candidate was interrupted and what to do, and
/// `toolsmith generate` resumes it to review.
#[test]
fn a_killed_one_shot_new_leaves_its_candidate_to_the_next_command() {
    let env = TestEnv::new();
    // The first answer comes after the test is over; the next one at once.
    let server = LlmServer::start(vec![
        Reply::openai(&greeting_reply(GOOD_SCRIPT)).after(Duration::from_secs(120)),
        Reply::openai(&greeting_reply(GOOD_SCRIPT)),
    ]);
    let config = env.write_config(&format!(
        "[generate]\nbackend = \"llm\"\nmax_attempts = 3\n\n\
         [llm]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"test-model\"\n\
         api_key_env = \"TOOLSMITH_TEST_KEY\"\ntimeout_s = 300\nmax_retries = 1\n",
        server.url
    ));
    let cli = || {
        let mut cmd = env.cli();
        cmd.env("TOOLSMITH_TEST_KEY", "sk-test")
            .arg("--config")
            .arg(&config);
        cmd
    };
    let mut one_shot = std::process::Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut one_shot);
    let mut one_shot = one_shot
        .env("TOOLSMITH_TEST_KEY", "sk-test")
        .arg("--state")
        .arg(env.state())
        .arg("--config")
        .arg(&config)
        .args(["--json", "new", "print a greeting"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn toolsmith new");
    let deadline = Instant::now() + PATIENCE;
    while server.received().is_empty() {
        assert!(Instant::now() < deadline, "the model was never asked");
        assert!(
            one_shot.try_wait().expect("wait").is_none(),
            "toolsmith new ended before asking the model"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let listed = |cmd: &mut assert_cmd::Command| -> Value {
        let out = cmd.args(["--json", "candidates"]).assert().success();
        let all = json_of(out.get_output());
        assert_eq!(all.as_array().map(Vec::len), Some(1), "{all:#}");
        all[0].clone()
    };
    let running = listed(&mut cli());
    assert_eq!(running["state"], "generating", "{running:#}");
    assert!(running.get("interrupted").is_none(), "{running:#}");
    let id = running["id"].as_str().expect("id").to_owned();

    one_shot.kill().expect("SIGKILL toolsmith new");
    one_shot.wait().expect("reap");

    let left = listed(&mut cli());
    assert_eq!(left["id"], id.as_str());
    assert_eq!(left["interrupted"], true, "{left:#}");
    assert!(
        left["reason"]
            .as_str()
            .is_some_and(|r| r.contains("toolsmith generate")),
        "{left:#}"
    );
    let text = cli().arg("candidates").assert().success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(text.contains("interrupted"), "{text}");
    let shown = cli().args(["--json", "show", &id]).assert().success();
    assert_eq!(
        json_of(shown.get_output())["candidate"]["interrupted"],
        true
    );

    // The next command resumes it from its saved spec: the model is asked again, it passes.
    let out = cli()
        .args(["--json", "generate"])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let resumed = report["candidates"]
        .as_array()
        .and_then(|made| made.iter().find(|c| c["id"] == id.as_str()))
        .unwrap_or_else(|| panic!("not resumed: {report:#}"));
    assert_eq!(resumed["state"], "awaiting-review", "{report:#}");
    assert_eq!(server.received().len(), 2);
    let done = listed(&mut cli());
    assert_eq!(done["state"], "awaiting-review", "{done:#}");
    assert!(done.get("interrupted").is_none(), "{done:#}");
}

/// A JSON tool's files: it counts the lines of its stdin; `broken` prints the wrong shape.
fn json_tool(broken: bool) -> std::collections::BTreeMap<String, String> {
    let manifest = r#"apiVersion: toolsmith/v1
name: count-lines
version: 1.0.0
description: Count the lines of the input, as JSON.
interface:
  params: { type: object, properties: {} }
  output: json
  output_schema: { type: object, required: [lines], properties: { lines: { type: integer } } }
runtime: { language: sh, entrypoint: run.sh, requires: [wc] }
sandbox: { workspace: read }
provenance: { origin: request, generator: human, created: 2026-11-22T10:00:00Z }
"#;
    let field = if broken { "count" } else { "lines" };
    let script = format!(
        "#!/bin/sh\nset -eu\nif [ \"${{1:-}}\" = --help ]; then printf 'Usage: run.sh\\n'; exit 0; fi\n\
         n=$(wc -l | tr -d ' ')\nprintf '{{\"{field}\": %s}}\\n' \"$n\"\n"
    );
    let cases = json!({"cases": [
        {"name": "counts stdin", "stdin": "a\nb\nc\n", "args": [],
         "expect": {"exit_code": 0, "stdout_matches_schema": true}},
        {"name": "--help", "args": ["--help"], "expect": {"exit_code": 0}}
    ]});
    [
        ("tool.yaml", manifest.to_owned()),
        ("run.sh", script),
        ("tests/cases.json", cases.to_string()),
    ]
    .into_iter()
    .map(|(n, c)| (n.to_owned(), c))
    .collect()
}

#[test]
fn the_validator_feeds_stdin_and_checks_json_output_against_its_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let validator = sandbox_validator(&dir.path().join("scratch"));
    for broken in [false, true] {
        let files = json_tool(broken);
        let tool = dir.path().join(format!("tool-{broken}"));
        let outcome = validate_in(&validator, &tool, &files);
        let schema = outcome
            .checks
            .iter()
            .find(|c| c.layer == CheckLayer::Schema)
            .unwrap_or_else(|| panic!("no schema check: {:#?}", outcome.checks));
        if broken {
            assert!(!outcome.passed());
            assert!(!schema.passed, "{schema:#?}");
            assert!(
                schema.details[0].contains("does not match the output schema"),
                "{schema:#?}"
            );
            assert!(
                outcome.summary().contains("[schema] output"),
                "{}",
                outcome.summary()
            );
        } else {
            assert!(outcome.passed(), "{:#?}", outcome.checks);
            let v = outcome.validation.expect("validation");
            assert_eq!((v.tests.passed, v.tests.failed), (2, 0));
            assert!(v.digest.starts_with("sha256v2:"));
            assert!(v.runtime_ms > 0);
            assert!(v.peak_memory_kb.is_some());
            // shellcheck joins the checks where it is installed.
            let shellcheck = ["/usr/local/bin", "/usr/bin", "/bin"]
                .iter()
                .any(|d| Path::new(d).join("shellcheck").is_file());
            assert_eq!(
                v.checks.iter().any(|c| c == "shellcheck run.sh"),
                shellcheck,
                "{:?}",
                v.checks
            );
            let others: Vec<&String> = v
                .checks
                .iter()
                .filter(|c| !c.starts_with("shellcheck"))
                .collect();
            assert_eq!(
                others,
                [
                    "manifest",
                    "sh -n run.sh",
                    "policy",
                    "requires",
                    "schema",
                    "tests"
                ]
            );
        }
    }
    // A program the sandbox cannot find fails the tool before its tests, named, with what
    // to do; it is looked up inside the sandbox, so a program only the host has (in a home
    // directory) fails too.
    let mut files = json_tool(false);
    let manifest = files["tool.yaml"].replace(
        "requires: [wc]",
        "requires: [wc, toolsmith-no-such-program]",
    );
    files.insert("tool.yaml".into(), manifest);
    let tool = dir.path().join("tool-requires");
    let outcome = validate_in(&validator, &tool, &files);
    assert!(!outcome.passed());
    let requires = outcome
        .checks
        .iter()
        .find(|c| c.layer == CheckLayer::Requires)
        .unwrap_or_else(|| panic!("no requires check: {:#?}", outcome.checks));
    assert!(!requires.passed, "{requires:#?}");
    assert_eq!(requires.details.len(), 1, "wc is found: {requires:#?}");
    let detail = &requires.details[0];
    assert!(
        detail.contains("`toolsmith-no-such-program`")
            && detail.contains("an alias, function or builtin of your shell")
            && detail.contains("/usr/bin")
            && detail.contains("install it")
            && detail.contains("sandbox.toolchains"),
        "{detail}"
    );
    assert!(
        outcome
            .checks
            .iter()
            .any(|c| c.layer == CheckLayer::Tests && c.name == "not run" && !c.passed),
        "{:#?}",
        outcome.checks
    );
    assert_eq!(outcome.tests.passed + outcome.tests.failed, 0);
    assert!(
        outcome.summary().contains("[requires] runtime.requires"),
        "{}",
        outcome.summary()
    );

    // Nothing was left in the scratch area.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("scratch"))
        .expect("scratch")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A spec with what the simplest tools lack: a variadic parameter, a value passed from one
/// step to the next, a number, and (for `recovery`) a failing command to recover from.
fn variant_spec(recovery: bool) -> toolsmith::generate::spec::ToolSpec {
    use std::collections::BTreeMap;
    use toolsmith::generate::logged::Recorded;
    use toolsmith::generate::spec::{
        Occurrence, ParamKind, ParamSpec, Piece, StepSpec, ToolSpec, TriggerSpec,
    };
    use toolsmith::mine::shell::Dialect;
    use toolsmith::package::manifest::{Evidence, Language, Origin, OutputKind};
    let lit = |s: &str| vec![Piece::Literal(s.into())];
    let param = |s: &str| vec![Piece::Param(s.into())];
    let p = |name: &str, kind, variadic| ParamSpec {
        name: name.into(),
        kind,
        description: format!("the {name}"),
        required: true,
        examples: Vec::new(),
        variadic,
    };
    let mut spec = ToolSpec {
        shell: Default::default(),
        name: "variant-tool".into(),
        description: "Stages files, commits, shows the commit.".into(),
        origin: Origin::MinedSequence,
        pattern: Some("p-00000001".into()),
        support: Some(3),
        params: vec![
            p("path", ParamKind::Path, true),
            p("count", ParamKind::Integer, false),
        ],
        steps: vec![
            StepSpec {
                line: Default::default(),
                words: vec![lit("git"), lit("add"), lit("--"), param("path")],
                globs: Vec::new(),
                captures: None,
                piped: false,
            },
            StepSpec {
                line: Default::default(),
                words: vec![lit("git"), lit("rev-parse"), lit("HEAD")],
                globs: Vec::new(),
                captures: Some("out_2".into()),
                piped: false,
            },
            StepSpec {
                line: Default::default(),
                words: vec![
                    lit("git"),
                    lit("log"),
                    vec![Piece::Literal("-n".into()), Piece::Param("count".into())],
                    vec![Piece::Internal("out_2".into())],
                ],
                globs: Vec::new(),
                captures: None,
                piped: false,
            },
        ],
        trigger_step: None,
        trigger: None,
        output: OutputKind::Text,
        output_schema: None,
        language: Language::Sh,
        sandbox: ToolSpec::default_profile(None),
        requires: vec!["git".into()],
        occurrences: Vec::new(),
        request: None,
        examples: Vec::new(),
        median_ms: None,
        keys: Vec::new(),
        heal: None,
        regression_cases: Vec::new(),
    };
    if recovery {
        spec.origin = Origin::ErrorRecovery;
        spec.trigger_step = Some(StepSpec {
            line: Default::default(),
            words: vec![lit("make"), lit("check"), param("path")],
            globs: Vec::new(),
            captures: None,
            piped: false,
        });
        spec.trigger = Some(TriggerSpec {
            error_template: "error: <*> is out of date (run 'make deps')".into(),
            captures: BTreeMap::new(),
        });
    }
    // What the log recorded for each occurrence, read as the pipeline reads the store.
    let mut recorded = Vec::new();
    for (session, path, count, logged_path) in [
        (
            "s1",
            "src/a.rs src/it's b.rs",
            "3",
            r#"src/a.rs "src/it's" b.rs"#,
        ),
        ("s2", "README.md", "10", "README.md"),
    ] {
        let line = |seq: u64, line: String, output: &str| Recorded {
            seq,
            line: Some(line),
            dialect: Dialect::Posix,
            output: Some(output.to_owned()),
        };
        let mut actions = Vec::new();
        if recovery {
            actions.push(line(
                1,
                format!("make check {logged_path}"),
                "error: src/a.rs is out of date (run 'make deps')\n",
            ));
        }
        actions.extend([
            line(2, format!("git add -- {logged_path}"), ""),
            line(3, "git rev-parse HEAD".into(), "9fceb02\n"),
            line(4, format!("git log -n{count} 9fceb02"), "commit 9fceb02"),
        ]);
        recorded.push(actions);
        let params: BTreeMap<String, String> = [
            ("path".to_owned(), path.to_owned()),
            ("count".to_owned(), count.to_owned()),
        ]
        .into_iter()
        .collect();
        let commands = spec.dry_run_lines(&params);
        spec.occurrences.push(Occurrence {
            lines: Default::default(),
            evidence: Evidence {
                session: session.into(),
                first_seq: 1,
                last_seq: 3,
            },
            params,
            commands,
            replay: None,
            logged: Vec::new(),
            failure_output: None,
        });
    }
    toolsmith::generate::logged::attach(&mut spec, &recorded);
    spec
}

#[test]
fn template_variants_pass_their_own_tests_in_the_sandbox() {
    let dir = tempfile::tempdir().expect("tempdir");
    let validator = sandbox_validator(&dir.path().join("scratch"));
    for recovery in [false, true] {
        let spec = variant_spec(recovery);
        let files = toolsmith::generate::template::generate(&spec, semver::Version::new(1, 0, 0))
            .expect("template");
        let tool = dir.path().join(format!("tool-{recovery}"));
        let outcome = validate_in(&validator, &tool, &files);
        assert!(
            outcome.passed(),
            "recovery {recovery}: {:#?}\n{}",
            outcome.checks,
            files["run.sh"]
        );
        // Every static check passed without a word to say (shellcheck too, when installed).
        for c in outcome
            .checks
            .iter()
            .filter(|c| c.layer == CheckLayer::Static)
        {
            assert!(c.details.is_empty(), "{c:#?}\n{}", files["run.sh"]);
        }
        let cases = &files["tests/cases.json"];
        assert!(
            cases.contains(r#"git add -- src/a.rs 'src/it'\\''s' b.rs"#),
            "{cases}"
        );
        assert!(cases.contains("git log -n3 '<out_2>'"), "{cases}");
    }
}

#[test]
fn pure_text_transformations_become_python_tools_that_pass_in_the_sandbox() {
    use toolsmith::generate::spec::ToolSpec;
    use toolsmith::package::manifest::Language;
    use toolsmith::validate::cases::{Case, Cases, Expect};
    let dir = tempfile::tempdir().expect("tempdir");
    let validator = sandbox_validator(&dir.path().join("scratch"));
    let count = ToolSpec::from_request(
        "Count the error lines of a log",
        &[
            "grep -c error app.log".to_owned(),
            "grep -c error web.log".to_owned(),
        ],
        &|_| false,
    )
    .expect("spec");
    let unique = ToolSpec::from_request(
        "Sort lines and drop repeats",
        &["sort -u".to_owned(), "tr -d x".to_owned()],
        &|_| false,
    )
    .expect("spec");
    // Not a pure transformation: stays POSIX sh.
    let mixed = ToolSpec::from_request(
        "Count then commit",
        &[
            "grep -c error app.log".to_owned(),
            "git commit -a".to_owned(),
        ],
        &|_| false,
    )
    .expect("spec");
    assert_eq!(mixed.language, Language::Sh);
    for (spec, real) in [(count, false), (unique, true)] {
        assert_eq!(spec.language, Language::Python, "{spec:#?}");
        assert!(spec.requires.iter().any(|r| r == "python3"));
        let mut files =
            toolsmith::generate::template::generate(&spec, semver::Version::new(1, 0, 0))
                .expect("template");
        assert!(files.contains_key("run.py") && !files.contains_key("run.sh"));
        assert!(
            files["tool.yaml"].contains("template/py@1"),
            "{}",
            files["tool.yaml"]
        );
        if real {
            // A real run in the sandbox: stdin through both filters, in order.
            let mut cases = Cases::parse(&files["tests/cases.json"], "cases").expect("cases");
            cases.cases.push(Case {
                name: "sorts and drops x".into(),
                params: None,
                args: Some(Vec::new()),
                dry_run: false,
                stdin: Some("b\na\nb\n".into()),
                expect: Expect {
                    exit_code: Some(0),
                    stdout: Some("a\nb\n".into()),
                    ..Expect::default()
                },
            });
            files.insert("tests/cases.json".into(), cases.to_json());
        } else {
            // A value the dry run must quote as the shell template does.
            let mut cases = Cases::parse(&files["tests/cases.json"], "cases").expect("cases");
            let name = spec.params[0].name.clone();
            let mut params = serde_json::Map::new();
            params.insert(name, json!("it's a.log"));
            cases.cases.push(Case {
                name: "quotes a value".into(),
                params: Some(params),
                args: None,
                dry_run: true,
                stdin: None,
                expect: Expect {
                    exit_code: Some(0),
                    stdout: Some("grep -c error 'it'\\''s a.log'\n".into()),
                    ..Expect::default()
                },
            });
            files.insert("tests/cases.json".into(), cases.to_json());
        }
        let tool = dir.path().join(&spec.name);
        let outcome = validate_in(&validator, &tool, &files);
        assert!(
            outcome.passed(),
            "{}: {:#?}\n{}",
            spec.name,
            outcome.checks,
            files["run.py"]
        );
        let v = outcome.validation.expect("validation");
        assert!(
            v.checks.iter().any(|c| c == "py_compile run.py"),
            "{:?}",
            v.checks
        );
        assert!(v.checks.iter().any(|c| c == "requires"), "{:?}", v.checks);
        // The dry run of each occurrence, --help, an unknown option (and a missing --path).
        assert!(
            v.tests.passed >= 4 && v.tests.failed == 0,
            "{:?}\n{}",
            v.tests,
            files["tests/cases.json"]
        );
    }
}

/// One action with its recorded output, as a native log line.
fn call_with_output(session: &str, seq: u64, command: &str, output: &str) -> String {
    json!({"v": 1, "session": session, "seq": seq, "cwd": format!("/work/{session}"),
           "tool": "Bash", "input": {"command": command}, "ok": true, "exit_code": 0,
           "output": output, "duration_ms": 40})
    .to_string()
}

#[test]
fn a_text_transformation_the_log_holds_whole_is_replayed_as_a_test() {
    let env = TestEnv::new();
    // Four sessions count repeated lines of data written out in the command line; the log
    // keeps what `sort | uniq -c` printed (without the last newline, as agents' logs do).
    let runs = [
        (
            "printf 'b\\na\\nb\\n' | sort | uniq -c",
            "      1 a\n      2 b",
        ),
        (
            "printf '%s\\n' x y x x | sort | uniq -c",
            "      3 x\n      1 y",
        ),
        (
            "sort <<'EOF' | uniq -c\nkiwi\napple\nkiwi\nEOF",
            "      1 apple\n      2 kiwi",
        ),
        ("echo one | sort | uniq -c", "      1 one"),
    ];
    // What comes before differs every time: the counting is the habit.
    let before = ["git fetch", "make all", "npm test", "python3 x.py"];
    let mut lines = Vec::new();
    for (i, (command, output)) in runs.iter().enumerate() {
        let s = format!("t{i}");
        lines.push(call(&s, 1, before[i], 100));
        lines.push(call_with_output(&s, 2, command, output));
    }
    let log = env.path().join("counts.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").expect("write log");
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    env.cli().arg("mine").assert().success();
    let out = env
        .cli()
        .args(["--json", "patterns", "--limit", "100"])
        .assert()
        .success();
    let patterns = json_of(out.get_output());
    let pattern = patterns
        .as_array()
        .expect("patterns")
        .iter()
        .find(|p| p["steps"] == json!(["sort", "| uniq -c"]))
        .cloned()
        .unwrap_or_else(|| panic!("no sort | uniq -c pattern in {patterns:#}"));
    assert_eq!(pattern["step_detail"][1]["piped"], true, "{pattern:#}");
    let replays: Vec<&Value> = pattern["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .filter_map(|e| e.get("replay"))
        .collect();
    assert_eq!(replays.len(), 4, "{pattern:#}");
    assert!(replays.contains(&&json!({"stdin": "kiwi\napple\nkiwi\n",
                                     "stdout": "      1 apple\n      2 kiwi"})));

    let out = env
        .cli()
        .args(["--json", "generate", "--pattern"])
        .arg(pattern["id"].as_str().expect("id"))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    assert_eq!(made["generator"], "template/py@1", "{report:#}");
    let shown = show(&env, made["id"].as_str().expect("id"));
    let diagnostics = &shown["attempts"][0]["diagnostics"];
    let replayed: Vec<&Value> = diagnostics["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| {
            c["layer"] == "tests" && c["name"].as_str().is_some_and(|n| n.starts_with("replay:"))
        })
        .collect();
    assert_eq!(replayed.len(), 4, "{diagnostics:#}");
    // ruff checked the code when it is installed; `.ci/run` installs it.
    if std::env::var("CI").as_deref() == Ok("true") || Path::new("/usr/local/bin/ruff").exists() {
        assert!(
            diagnostics["checks"]
                .as_array()
                .expect("checks")
                .iter()
                .any(|c| c["name"] == "ruff run.py" && c["passed"] == true),
            "{diagnostics:#}"
        );
    }
    assert!(
        replayed.iter().all(|c| c["passed"] == true),
        "{diagnostics:#}"
    );
    let files = &shown["attempts"][0]["files"];
    let run = files["run.py"].as_str().expect("run.py");
    assert!(run.contains("PIPED = [0,1]"), "{run}");

    // A recorded output the tool does not reproduce fails that case, with both texts shown.
    use toolsmith::validate::cases::Cases;
    let mut file_map: std::collections::BTreeMap<String, String> = files
        .as_object()
        .expect("files")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect();
    let mut cases = Cases::parse(&file_map["tests/cases.json"], "cases").expect("cases");
    let case = cases
        .cases
        .iter_mut()
        .find(|c| c.name.starts_with("replay:"))
        .expect("a replay case");
    case.expect.stdout = Some("      9 nothing like it".into());
    file_map.insert("tests/cases.json".into(), cases.to_json());
    let tool = env.path().join("edited");
    let validator = sandbox_validator(&env.path().join("scratch"));
    let outcome = validate_in(&validator, &tool, &file_map);
    assert!(!outcome.passed());
    let failed: Vec<_> = outcome.checks.iter().filter(|c| !c.passed).collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let detail = failed[0].details.join("\n");
    assert!(
        detail.contains("9 nothing like it") && detail.contains("--- got"),
        "{detail}"
    );
}

#[test]
fn pipelines_run_as_pipelines_in_both_templates() {
    use toolsmith::generate::spec::ToolSpec;
    use toolsmith::package::manifest::Language;
    use toolsmith::validate::cases::{Case, Cases, Expect};
    let dir = tempfile::tempdir().expect("tempdir");
    let validator = sandbox_validator(&dir.path().join("scratch"));
    let python = ToolSpec::from_request(
        "Count repeated lines",
        &["sort | uniq -c".to_owned()],
        &|_| false,
    )
    .expect("spec");
    assert_eq!(python.language, Language::Python);
    assert!(
        python.steps[1].piped && !python.steps[0].piped,
        "{python:#?}"
    );
    let mut shell = python.clone();
    shell.language = Language::Sh;
    shell.name = "count-repeated-lines-sh".into();
    for spec in [python, shell] {
        let mut files =
            toolsmith::generate::template::generate(&spec, semver::Version::new(1, 0, 0))
                .expect("template");
        let mut cases = Cases::parse(&files["tests/cases.json"], "cases").expect("cases");
        // Both commands run, the second reading the first; the dry run lists both.
        cases.cases.push(Case {
            name: "counts through the pipe".into(),
            params: None,
            args: Some(Vec::new()),
            dry_run: false,
            stdin: Some("b\na\nb\n".into()),
            expect: Expect {
                exit_code: Some(0),
                stdout: Some("      1 a\n      2 b\n".into()),
                ..Expect::default()
            },
        });
        cases.cases.push(Case {
            name: "the dry run prints each command".into(),
            params: None,
            args: Some(Vec::new()),
            dry_run: true,
            stdin: None,
            expect: Expect {
                exit_code: Some(0),
                stdout: Some("sort\nuniq -c\n".into()),
                ..Expect::default()
            },
        });
        files.insert("tests/cases.json".into(), cases.to_json());
        let tool = dir.path().join(&spec.name);
        let outcome = validate_in(&validator, &tool, &files);
        assert!(outcome.passed(), "{}: {:#?}", spec.name, outcome.checks);
        for c in outcome
            .checks
            .iter()
            .filter(|c| c.layer == CheckLayer::Static)
        {
            assert!(c.details.is_empty(), "{c:#?}");
        }
    }
}

/// A sequence tool's spec, its steps as given, and what the log recorded for its one
/// occurrence (`line`), attached as the pipeline attaches it.
fn logged_spec(steps: Vec<Vec<&str>>, lines: &[&str]) -> toolsmith::generate::spec::ToolSpec {
    use toolsmith::generate::logged::Recorded;
    use toolsmith::generate::spec::{Occurrence, Piece, StepSpec, ToolSpec};
    use toolsmith::mine::shell::Dialect;
    use toolsmith::package::manifest::{Evidence, Language, Origin, OutputKind};
    let steps: Vec<StepSpec> = steps
        .into_iter()
        .map(|words| StepSpec {
            line: Default::default(),
            words: words
                .into_iter()
                .map(|w| vec![Piece::Literal(w.into())])
                .collect(),
            globs: Vec::new(),
            captures: None,
            piped: false,
        })
        .collect();
    let mut spec = ToolSpec {
        shell: Default::default(),
        name: "openssl-x509-verify".into(),
        description: "Shows a certificate and verifies it.".into(),
        origin: Origin::MinedSequence,
        pattern: Some("p-00000002".into()),
        support: Some(3),
        params: Vec::new(),
        steps,
        trigger_step: None,
        trigger: None,
        output: OutputKind::Text,
        output_schema: None,
        language: Language::Sh,
        sandbox: ToolSpec::default_profile(None),
        requires: Vec::new(),
        occurrences: vec![Occurrence {
            lines: Default::default(),
            evidence: Evidence {
                session: "s1".into(),
                first_seq: 1,
                last_seq: lines.len() as u64,
            },
            params: Default::default(),
            commands: Vec::new(),
            replay: None,
            logged: Vec::new(),
            failure_output: None,
        }],
        request: None,
        examples: Vec::new(),
        median_ms: None,
        keys: Vec::new(),
        heal: None,
        regression_cases: Vec::new(),
    };
    spec.occurrences[0].commands = spec.dry_run_lines(&Default::default());
    let recorded: Vec<Recorded> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| Recorded {
            seq: i as u64 + 1,
            line: Some((*l).into()),
            dialect: Dialect::Posix,
            output: Some(String::new()),
        })
        .collect();
    toolsmith::generate::logged::attach(&mut spec, &[recorded]);
    spec
}

#[test]
fn a_tool_that_reorders_a_logged_command_fails_its_own_tests_and_a_faithful_one_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let validator = sandbox_validator(&dir.path().join("scratch"));
    let log = [
        "openssl x509 -in certs/api.pem -noout -subject -enddate",
        "ls -la",
        "openssl verify -CAfile certs/ca.pem certs/api.pem",
    ];
    let verify = vec![
        "openssl",
        "verify",
        "-CAfile",
        "certs/ca.pem",
        "certs/api.pem",
    ];
    // What the miner once made of it: the flags sorted, whatever the agent ran.
    let reordered = logged_spec(
        vec![
            vec![
                "openssl",
                "x509",
                "-enddate",
                "-in",
                "certs/api.pem",
                "-noout",
                "-subject",
            ],
            verify.clone(),
        ],
        &log,
    );
    let faithful = logged_spec(
        vec![
            vec![
                "openssl",
                "x509",
                "-in",
                "certs/api.pem",
                "-noout",
                "-subject",
                "-enddate",
            ],
            verify,
        ],
        &log,
    );
    // The miner's rendering agrees with its own steps: only the log can tell them apart.
    assert_eq!(
        reordered.occurrences[0].commands[0],
        "openssl x509 -enddate -in certs/api.pem -noout -subject"
    );
    for (spec, passes) in [(&reordered, false), (&faithful, true)] {
        let files = toolsmith::generate::template::generate(spec, semver::Version::new(1, 0, 0))
            .expect("template");
        let tool = dir.path().join(format!("tool-{passes}"));
        let outcome = validate_in(&validator, &tool, &files);
        assert_eq!(outcome.passed(), passes, "{:#?}", outcome.checks);
        let dry_run = outcome
            .checks
            .iter()
            .find(|c| {
                c.layer == CheckLayer::Tests && c.name.contains("the dry run prints what was run")
            })
            .expect("the occurrence's dry-run case");
        assert_eq!(dry_run.passed, passes, "{dry_run:#?}");
        if !passes {
            let details = dry_run.details.join("\n");
            assert!(
                details.contains(
                    "command 1 word 3: expected `-in`, got `-enddate` — expected `openssl x509 \
                     -in certs/api.pem -noout -subject -enddate`, got `openssl x509 -enddate -in \
                     certs/api.pem -noout -subject`"
                ),
                "{details}"
            );
        }
    }
}

/// Four sessions in which `npm test` fails because jest cannot find a module (another one
/// each time), `npm install` of that module fixes it, and `npm test` passes.
fn npm_recovery_log(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for (i, module) in ["left-pad", "node-fetch", "chalk", "dotenv"]
        .iter()
        .enumerate()
    {
        let s = format!("s{i}");
        let failure = format!(
            "Exit code 1\n\n> ui@0.4.0 test\n> jest\n\n FAIL  src/app.test.js\n  ● Test suite \
             failed to run\n\n    Cannot find module '{module}' from 'src/app.js'\n\n    \
             Require stack:\n      src/app.js\n"
        );
        let mut push = |seq: u64, command: &str, ok: bool, output: &str| {
            lines.push(
                json!({"v": 1, "session": s, "seq": seq, "cwd": "/work/ui", "tool": "Bash",
                       "input": {"command": command}, "ok": ok,
                       "exit_code": if ok { 0 } else { 1 }, "output": output,
                       "duration_ms": 2000})
                .to_string(),
            );
        };
        push(1, "git status --short", true, " M src/app.js");
        push(2, "npm test", false, &failure);
        push(3, &format!("npm install {module}"), true, "added 1 package");
        push(4, "npm test", true, "Tests: 12 passed");
    }
    let path = dir.join("npm.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write log");
    path
}

#[test]
fn a_recovery_tool_takes_the_fix_s_value_from_the_failure_it_replays() {
    let env = TestEnv::new();
    let log = npm_recovery_log(env.path());
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    env.cli().arg("mine").assert().success();
    let out = env
        .cli()
        .args(["--json", "patterns", "--limit", "100"])
        .assert()
        .success();
    let patterns = json_of(out.get_output());
    let recovery = patterns
        .as_array()
        .expect("patterns")
        .iter()
        .find(|p| p["kind"] == "recovery")
        .cloned()
        .unwrap_or_else(|| panic!("no recovery in {patterns:#}"));
    // The line that names what the fix installs, not jest's summary above it (the template
    // miner takes the quoted module name whole: `<*>`).
    assert!(
        recovery["trigger"]["error_template"]
            .as_str()
            .is_some_and(|t| t.starts_with("Cannot find module <*>")),
        "{recovery:#}"
    );
    let id = recovery["id"].as_str().expect("id");
    // `npm install` fetches from npm's registry (the default here): the policy must grant it.
    let policy = env.path().join("policy.toml");
    std::fs::write(
        &policy,
        toolsmith::validate::run::default_policy_granting(&["registry.npmjs.org:443".into()]),
    )
    .expect("write policy");
    let config = env.write_config(&format!("[generate]\npolicy = \"{}\"\n", policy.display()));
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["--json", "generate", "--pattern", id])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let shown = show(&env, made["id"].as_str().expect("id"));
    let attempt = &shown["attempts"][0];
    assert_eq!(
        attempt["diagnostics"]["passed"], true,
        "{:#}",
        attempt["diagnostics"]
    );
    // `sh -n` and shellcheck (when installed) had nothing to say about the extraction.
    let statics: Vec<&Value> = attempt["diagnostics"]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["layer"] == "static")
        .collect();
    assert!(!statics.is_empty(), "{:#}", attempt["diagnostics"]);
    for c in statics {
        assert!(
            c["details"].as_array().is_none_or(Vec::is_empty),
            "{c:#}\n{}",
            attempt["files"]["run.sh"]
        );
    }
    // Each occurrence's dry run replays its own recorded failure and must print its own fix.
    let files = &attempt["files"];
    // What it may reach was derived from the evidence, not written by a generator.
    let manifest = files["tool.yaml"].as_str().expect("manifest");
    assert!(
        manifest.contains("hosts:") && manifest.contains("registry.npmjs.org:443"),
        "{manifest}"
    );
    let cases: Value =
        serde_json::from_str(files["tests/cases.json"].as_str().expect("cases")).expect("json");
    let replayed: Vec<&Value> = cases["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["stdin"].is_string())
        .collect();
    assert_eq!(replayed.len(), 4, "{cases:#}");
    for case in replayed {
        let stdin = case["stdin"].as_str().expect("stdin");
        let module = ["left-pad", "node-fetch", "chalk", "dotenv"]
            .into_iter()
            .find(|m| stdin.contains(&format!("module '{m}'")))
            .expect("a module named");
        assert_eq!(
            case["expect"]["stdout"],
            format!("npm test\nnpm install {module}\nnpm test\n"),
            "{case:#}"
        );
    }

    // The value is read from the output at run time: a module no log named is installed too.
    let tool = env.path().join("tool");
    std::fs::create_dir_all(tool.join("tests")).expect("mkdir");
    for (name, text) in files.as_object().expect("files") {
        std::fs::write(tool.join(name), text.as_str().expect("text")).expect("write");
    }
    let workspace = env.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("mkdir");
    let out = env
        .cli()
        .args(["sandbox", "--env", "TOOLSMITH_DRY_RUN=1", "--env"])
        .arg("FAILURE=FAIL src/x.test.js\n    Cannot find module 'is-odd' from 'src/app.js'\n")
        .arg("--tool-dir")
        .arg(&tool)
        .args(["--workspace", "write"])
        .arg(&workspace)
        .args([
            "--",
            "/bin/sh",
            "-c",
            "printf '%s' \"$FAILURE\" | /bin/sh /tool/run.sh",
        ])
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout),
        "npm test\nnpm install is-odd\nnpm test\n",
        "{}",
        stderr_of(out.get_output())
    );
}

/// A candidate made of a mined pattern says where its occurrences were read — action ids, the
/// log file and its lines — in `toolsmith show` and in the review commit's `Evidence` trailers.
#[test]
fn show_and_the_review_commit_name_the_actions_and_lines_of_the_evidence() {
    let env = TestEnv::new();
    let patterns = mine(&env);
    let pattern = build_test_pattern(&patterns);
    let pattern_id = pattern["id"].as_str().expect("id").to_owned();
    let out = env
        .cli()
        .args(["--json", "generate", "--pattern", &pattern_id])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let id = made["id"].as_str().expect("id").to_owned();
    let log = env.path().join("agent.jsonl");
    let log_text = std::fs::read_to_string(&log).expect("log");
    let log_lines: Vec<&str> = log_text.lines().collect();

    let out = env.cli().args(["show", &id]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    // `  session s1: actions 5–8 (/…/agent.jsonl lines 5, 6, 7, 8)`
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "evidence:")
        .skip(1)
        .take_while(|l| l.starts_with("  session "))
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    let s1 = rows
        .iter()
        .find(|r| r.starts_with("  session s1: actions "))
        .unwrap_or_else(|| panic!("no s1 row in\n{text}"));
    let lines = s1
        .split_once(&format!("({} lines ", log.display()))
        .map(|(_, l)| l.trim_end_matches(')'))
        .unwrap_or_else(|| panic!("no file and lines in {s1}"));
    let lines: Vec<usize> = lines
        .split(", ")
        .map(|l| l.parse().expect("line"))
        .collect();
    // make build, git status, make test: what s1 ran, at those lines of the log.
    let commands: Vec<String> = lines
        .iter()
        .map(|l| {
            let record: Value = serde_json::from_str(log_lines[l - 1]).expect("record");
            record["input"]["command"].as_str().unwrap_or("").to_owned()
        })
        .collect();
    assert_eq!(
        commands,
        ["make build -C cli", "git status", "make test -C cli"],
        "{s1}"
    );

    // The review commit carries the same, one trailer per occurrence.
    let branch = format!("review/{}/1.0.0", made["tool"].as_str().expect("tool"));
    let message = common::tamper::git(&env, &["log", "-1", "--format=%B", &branch]);
    let evidence: Vec<&str> = message
        .lines()
        .filter_map(|l| l.strip_prefix("Evidence: "))
        .collect();
    assert_eq!(evidence.len(), 4, "{message}");
    assert!(
        evidence.contains(&s1.trim_start()),
        "{s1} not among the trailers:\n{message}"
    );
}
