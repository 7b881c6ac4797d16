//! Healing end to end: a tool broken by a changed environment (a fake CLI on the sandbox's
//! `PATH` whose flag is renamed) is detected from its recorded runs, repaired — from the new
//! evidence in the agents' logs with templates, or by the (fake) model — validated with
//! regression cases from the failing runs, and proposed; a bad new version is rolled back by the
//! health check, or flagged REQUIRES_ATTENTION when the policy says so.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::TestEnv;
use common::llm_server::{LlmServer, Reply};
use serde_json::{Value, json};
use toolsmith::health::classify::ErrorClass;
use toolsmith::health::executions;

/// A fake command-line tool in `/usr/local/bin` (a directory of the sandbox's `PATH`), removed
/// when dropped. Its one option names the value it builds; the option's name can change.
struct FakeCli {
    path: PathBuf,
    name: String,
}

impl FakeCli {
    /// Installs it accepting `--{flag}`; `None` when `/usr/local/bin` is not writable (the
    /// test then says it is skipped: it needs root, as CI has).
    fn install(flag: &str) -> Option<FakeCli> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("tsfake-{}-{n}", std::process::id());
        let fake = FakeCli {
            path: Path::new("/usr/local/bin").join(&name),
            name,
        };
        fake.accept(flag).ok()?;
        Some(fake)
    }

    /// Rewrites it to accept `--{flag}` (and to reject any other option, as real CLIs do).
    fn accept(&self, flag: &str) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in\n  --{flag}) echo \"built $2\"; exit 0;;\n  *) echo \"{}: \
             unknown option '$1'\" >&2; exit 2;;\nesac\n",
            self.name
        );
        let temp = self.path.with_extension("new");
        std::fs::write(&temp, script)?;
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o755))?;
        std::fs::rename(&temp, &self.path)
    }
}

impl Drop for FakeCli {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn fake_or_skip(test: &str) -> Option<FakeCli> {
    let fake = FakeCli::install("target");
    if fake.is_none() {
        eprintln!(
            "{test}: skipped: needs write access to /usr/local/bin (run as root, as CI does)"
        );
    }
    fake
}

/// `toolsmith --json ARGS` with `config`; the JSON it prints (on success or failure).
fn json(env: &TestEnv, config: Option<&Path>, args: &[&str]) -> (bool, Value) {
    let mut cmd = env.cli();
    cmd.env("TOOLSMITH_TEST_KEY", "sk-test");
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    let out = cmd
        .arg("--json")
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("toolsmith runs");
    let text = if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    };
    let value = serde_json::from_slice(text).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), value)
}

/// Makes and approves the tool `<fake> --target <value>`; returns its name.
fn approved_tool(env: &TestEnv, config: Option<&Path>, fake: &FakeCli, flag: &str) -> String {
    let (ok, report) = json(
        env,
        config,
        &[
            "new",
            "Build one target",
            "--example",
            &format!("{} --{flag} core", fake.name),
            "--example",
            &format!("{} --{flag} cli", fake.name),
        ],
    );
    assert!(ok, "{report:#}");
    let made = &report["candidates"][0];
    let id = made["id"].as_str().expect("id");
    env.cli().args(["approve", id]).assert().success();
    made["tool"].as_str().expect("tool").to_owned()
}

/// Runs the tool through the CLI (recorded like every run) on a project directory (never one
/// holding toolsmith's own files, which is refused); whether it succeeded.
fn run(env: &TestEnv, tool: &str, value: &str) -> bool {
    let project = env.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    env.cli()
        .args(["run", tool, "--param", &format!("value={value}")])
        .arg("--workspace")
        .arg(&project)
        .output()
        .expect("toolsmith run")
        .status
        .success()
}

fn health(env: &TestEnv, tool: &str) -> Value {
    let (ok, h) = json(env, None, &["health", tool]);
    assert!(ok, "{h:#}");
    h
}

/// Agent sessions (native JSONL) in which the agent now runs the CLI with `--platform`.
fn ingest_new_evidence(env: &TestEnv, fake: &FakeCli) {
    let lines: Vec<String> = ["core", "web", "cli"]
        .iter()
        .enumerate()
        .map(|(i, v)| {
            json!({"v": 1, "session": format!("after-{i}"), "seq": 1, "tool": "Bash",
                   "input": {"command": format!("{} --platform {v}", fake.name)},
                   "ok": true, "exit_code": 0, "output": format!("built {v}"), "duration_ms": 20})
            .to_string()
        })
        .collect();
    let log = env.path().join("agent.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").expect("write log");
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
}

/// The files of a candidate's last attempt.
fn files_of(env: &TestEnv, id: &str) -> Value {
    let (ok, shown) = json(env, None, &["show", id, "--attempts"]);
    assert!(ok, "{shown:#}");
    let attempts = shown["attempts"].as_array().expect("attempts");
    attempts.last().expect("an attempt")["files"].clone()
}

#[test]
fn a_renamed_flag_is_detected_and_repaired_from_new_evidence() {
    let Some(fake) = fake_or_skip("a_renamed_flag_is_detected_and_repaired_from_new_evidence")
    else {
        return;
    };
    let env = TestEnv::new();
    let tool = approved_tool(&env, None, &fake, "target");
    assert!(run(&env, &tool, "core"), "the tool works at first");

    // The CLI renames its flag: every run of the tool now fails.
    fake.accept("platform").expect("rewrite the fake CLI");
    for value in ["core", "cli", "web"] {
        assert!(!run(&env, &tool, value));
    }
    let h = health(&env, &tool);
    let current = &h["versions"][0];
    // 1 of 4 succeeded, one high issue: 100 − 0.75 × 50 − 20 = 42.5.
    assert_eq!(current["score"], 42.5, "{h:#}");
    assert_eq!(current["status"], "FAILING", "{h:#}");
    assert_eq!(current["issues"][0]["class"], "endpoint", "{h:#}");
    let error = format!("{}: unknown option '--target'", fake.name);
    assert_eq!(
        current["top_errors"][0]["examples"][0],
        error.as_str(),
        "{h:#}"
    );

    // Without new evidence, templates have nothing to repair from: said, and recorded.
    let (ok, refused) = json(&env, None, &["heal", &tool]);
    assert!(!ok);
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("templates cannot repair"), "{said}");
    assert!(said.contains("[llm]"), "{said}");

    // The agents meanwhile run the CLI the new way; the health check (as the daemon runs it on
    // its schedule) makes the repair on its own.
    ingest_new_evidence(&env, &fake);
    let (ok, report) = json(&env, None, &["health", "--check"]);
    assert!(ok, "{report:#}");
    assert_eq!(
        report["repairs"].as_array().map(Vec::len),
        Some(1),
        "{report:#}"
    );
    let (_, listed) = json(&env, None, &["candidates"]);
    let repair = listed
        .as_array()
        .and_then(|all| all.iter().find(|c| c["origin"] == "heal"))
        .expect("a repair candidate")
        .clone();
    assert_eq!(repair["state"], "awaiting-review", "{repair:#}");
    assert_eq!(repair["tool"], tool.as_str());
    // Same interface: a patch version, proposed on a review branch.
    assert_eq!(repair["version"], "1.0.1", "{repair:#}");
    let id = repair["id"].as_str().expect("id");
    let files = files_of(&env, id);
    let script = files["run.sh"].as_str().expect("run.sh");
    assert!(script.contains("--platform"), "{script}");
    assert!(!script.contains("--target"), "{script}");
    let cases = files["tests/cases.json"].as_str().expect("cases");
    assert!(cases.contains("regression: a run with"), "{cases}");
    assert!(
        cases.contains(&error),
        "the failure must not come back: {cases}"
    );

    let h = health(&env, &tool);
    assert_eq!(h["versions"][0]["status"], "HEALING", "{h:#}");
    let history = h["history"].as_array().expect("history");
    assert_eq!(history[0]["action"], "heal");
    assert_eq!(history[0]["trigger"], "schedule");
    assert_eq!(history[0]["outcome"], "proposed");
    assert_eq!(history[0]["candidate"], id);
    assert_eq!(
        history[1]["outcome"], "failed",
        "the refused attempt is kept: {h:#}"
    );

    // Approved, the repaired version runs, and the tool is HEALED.
    env.cli().args(["approve", id]).assert().success();
    assert!(run(&env, &tool, "core"));
    let h = health(&env, &tool);
    assert_eq!(h["current"], "1.0.1");
    assert_eq!(h["versions"][0]["status"], "HEALED", "{h:#}");
    // Nothing left to repair.
    let (ok, refused) = json(&env, None, &["heal", &tool]);
    assert!(!ok);
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nothing to repair")),
        "{refused:#}"
    );
}

/// What the fake model answers: the tool calling the CLI with its new flag.
fn repaired_reply(fake: &str) -> String {
    let script = format!(
        r#"#!/bin/sh
set -eu
value=""
while [ $# -gt 0 ]; do
  case "$1" in
    --help) printf 'Usage: run.sh --value VALUE\n'; exit 0 ;;
    --value) value="$2"; shift 2 ;;
    *) printf 'unknown option: %s\n' "$1" >&2; exit 2 ;;
  esac
done
[ -n "$value" ] || {{ echo "--value is required" >&2; exit 2; }}
if [ "${{TOOLSMITH_DRY_RUN:-}}" = 1 ]; then
  printf '%s\n' "{fake} --platform $value"
  exit 0
fi
exec {fake} --platform "$value"
"#
    );
    let cases = json!({"cases": [
        {"name": "--help", "args": ["--help"], "expect": {"exit_code": 0, "stdout_contains": ["--value"]}},
        {"name": "dry run", "params": {"value": "core"}, "dry_run": true,
         "expect": {"exit_code": 0, "stdout": format!("{fake} --platform core\n")}}
    ]});
    format!(
        "````file run.sh\n{script}````\n\n````file tests/cases.json\n{cases}\n````\n\n\
         ````file README.md\n# build-one-target\n\nBuilds one target.\n````\n"
    )
}

#[test]
fn a_failing_tool_is_repaired_by_the_model_with_its_failures_as_context() {
    let Some(fake) = fake_or_skip("a_failing_tool_is_repaired_by_the_model_with_its_failures")
    else {
        return;
    };
    let env = TestEnv::new();
    let tool = approved_tool(&env, None, &fake, "target");
    fake.accept("platform").expect("rewrite the fake CLI");
    for value in ["core", "cli"] {
        assert!(!run(&env, &tool, value));
    }
    let server = LlmServer::start(vec![Reply::openai(&repaired_reply(&fake.name))]);
    let config = env.write_config(&format!(
        "[generate]\nbackend = \"llm\"\n\n[llm]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\n\
         model = \"test-model\"\napi_key_env = \"TOOLSMITH_TEST_KEY\"\ntimeout_s = 5\n\
         max_retries = 1\n",
        server.url
    ));
    let (ok, report) = json(&env, Some(&config), &["heal", &tool]);
    assert!(ok, "{report:#}");
    let repair = &report["candidates"][0];
    assert_eq!(repair["state"], "awaiting-review", "{report:#}");
    assert_eq!(repair["generator"], "llm:test-model");

    // The model was told what the tool is and how it fails.
    let seen = server.received();
    assert_eq!(seen.len(), 1);
    let prompt = seen[0].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        prompt.contains(&format!("Repair the tool `{tool}`")),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("{} --target", fake.name)),
        "the current code: {prompt}"
    );
    assert!(
        prompt.contains(&format!("{}: unknown option '--target'", fake.name)),
        "the failures: {prompt}"
    );
    // Its tests ran with the regression cases added.
    let files = files_of(&env, repair["id"].as_str().expect("id"));
    let cases = files["tests/cases.json"].as_str().expect("cases");
    assert!(cases.contains("regression:"), "{cases}");
    let h = health(&env, &tool);
    assert_eq!(h["versions"][0]["status"], "HEALING", "{h:#}");
}

/// Records runs of a version straight into the store, as the run recorder does.
fn feed(env: &TestEnv, tool: &str, version: &str, ok: u32, failed: u32) {
    let conn = rusqlite::Connection::open(env.state().join("state.db")).expect("store");
    let now = jiff::Timestamp::now().as_millisecond();
    for i in 0..ok + failed {
        let good = i < ok;
        let run = executions::Execution {
            tool: tool.to_owned(),
            version: version.to_owned(),
            caller: executions::Caller::Mcp,
            started_ms: now - 60_000,
            duration_ms: 12,
            ok: good,
            exit_code: Some(if good { 0 } else { 2 }),
            signal: None,
            limit_hit: None,
            error_class: (!good).then_some(ErrorClass::CodeError),
            error_excerpt: (!good).then(|| "run.sh: line 9: syntax error".to_owned()),
            peak_memory_kb: None,
            params: Some("{\"value\":\"core\"}".to_owned()),
            agent: None,
        };
        executions::record(&conn, &run).expect("insert");
    }
}

/// A tool with two approved versions, 1.0.0 and 1.0.1; returns its name.
fn two_versions(env: &TestEnv, fake: &FakeCli) -> String {
    let tool = approved_tool(env, None, fake, "target");
    let second = approved_tool(env, None, fake, "platform");
    assert_eq!(tool, second, "the same request makes the next version");
    let (_, tools) = json(env, None, &["tools"]);
    assert_eq!(tools[0]["version"], "1.0.1", "{tools:#}");
    tool
}

#[test]
fn a_regression_is_rolled_back_by_the_daemons_health_check() {
    let Some(fake) = fake_or_skip("a_regression_is_rolled_back_by_the_daemons_health_check") else {
        return;
    };
    let env = TestEnv::new();
    let tool = two_versions(&env, &fake);
    feed(&env, &tool, "1.0.0", 12, 0);
    feed(&env, &tool, "1.0.1", 2, 10);
    let _daemon = common::Daemon::start(&env, env.daemon_command());
    let (ok, report) = json(&env, None, &["health", "--check"]);
    assert!(ok, "{report:#}");
    assert_eq!(
        report["rolled_back"],
        json!([format!("{tool} 1.0.1 → 1.0.0")]),
        "{report:#}"
    );
    let (_, tools) = json(&env, None, &["tools"]);
    assert_eq!(tools[0]["version"], "1.0.0", "{tools:#}");
    // A revert commit, as `toolsmith rollback` makes.
    let log = std::process::Command::new("git")
        .arg("-C")
        .arg(env.state().join("registry"))
        .args(["log", "-1", "--format=%s%n%b", "main"])
        .output()
        .expect("git log");
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(
        log.contains(&format!("tool({tool}): revert 1.0.1")),
        "{log}"
    );
    let h = health(&env, &tool);
    assert_eq!(h["history"][0]["action"], "rollback", "{h:#}");
    assert!(
        h["history"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("83%") && d.contains("0% of 12")),
        "{h:#}"
    );
    // The run was the daemon's, recorded for `toolsmith schedule`.
    let (ok, schedule) = json(&env, None, &["schedule"]);
    assert!(ok, "{schedule:#}");
    assert_eq!(schedule["daemon_running"], true);
    let health_job = schedule["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["job"] == "health"))
        .expect("the health job");
    assert_eq!(health_job["schedule"], "0 */4 * * *");
    assert_eq!(health_job["last"]["trigger"], "demand", "{schedule:#}");
    assert_eq!(health_job["last"]["ok"], true, "{schedule:#}");
    assert!(
        health_job["last"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("1 rolled back")),
        "{schedule:#}"
    );
    assert!(health_job["next_ms"].as_i64() > health_job["last"]["started_ms"].as_i64());
}

#[test]
fn without_auto_rollback_a_regression_requires_attention() {
    let Some(fake) = fake_or_skip("without_auto_rollback_a_regression_requires_attention") else {
        return;
    };
    let env = TestEnv::new();
    let policy = env.path().join("policy.toml");
    let text = toolsmith::validate::run::DEFAULT_POLICY
        .replace("auto_rollback = true", "auto_rollback = false");
    std::fs::write(&policy, text).expect("write policy");
    let config = env.write_config(&format!("[generate]\npolicy = \"{}\"\n", policy.display()));
    let tool = two_versions(&env, &fake);
    feed(&env, &tool, "1.0.0", 12, 0);
    feed(&env, &tool, "1.0.1", 2, 10);
    let (ok, report) = json(&env, Some(&config), &["health", "--check"]);
    assert!(ok, "{report:#}");
    assert_eq!(report["rolled_back"], json!([]), "{report:#}");
    assert_eq!(
        report["attention"].as_array().map(Vec::len),
        Some(1),
        "{report:#}"
    );
    let (_, h) = json(&env, Some(&config), &["health", &tool]);
    assert_eq!(h["current"], "1.0.1", "not rolled back: {h:#}");
    assert_eq!(h["versions"][0]["status"], "REQUIRES_ATTENTION", "{h:#}");
    assert!(
        h["status_reason"]
            .as_str()
            .is_some_and(|r| r.contains("auto_rollback is off")),
        "{h:#}"
    );
    // Raised once, not at every check.
    json(&env, Some(&config), &["health", "--check"]);
    let (_, h) = json(&env, Some(&config), &["health", &tool]);
    let raised = h["history"].as_array().map_or(0, |a| {
        a.iter().filter(|x| x["action"] == "attention").count()
    });
    assert_eq!(raised, 1, "{h:#}");
}

/// Approves a tool made from a request with `make` examples; returns its name and candidate.
fn make_tool(env: &TestEnv, what: &str, target: &str) -> (String, String) {
    let (ok, report) = json(
        env,
        None,
        &[
            "new",
            what,
            "--example",
            &format!("make {target} -C core"),
            "--example",
            &format!("make {target} -C cli"),
        ],
    );
    assert!(ok, "{report:#}");
    let made = &report["candidates"][0];
    let id = made["id"].as_str().expect("id").to_owned();
    env.cli().args(["approve", &id]).assert().success();
    (made["tool"].as_str().expect("tool").to_owned(), id)
}

#[test]
fn unused_and_duplicate_tools_are_proposed_for_deprecation_and_merging() {
    use toolsmith::generate::pipeline::{Backend, Generator, Settings};
    let env = TestEnv::new();
    let (build, build_id) = make_tool(&env, "Build one package", "build");
    let (check, check_id) = make_tool(&env, "Check one package", "check");
    // A second tool that runs the same commands as the first (as a teammate's tool synced in,
    // or one written by hand, would): its spec says so.
    let spec_of = |id: &str| env.state().join("staging").join(id).join("spec.json");
    let build_spec: Value =
        serde_json::from_slice(&std::fs::read(spec_of(&build_id)).expect("spec")).expect("JSON");
    let mut check_spec: Value =
        serde_json::from_slice(&std::fs::read(spec_of(&check_id)).expect("spec")).expect("JSON");
    check_spec["keys"] = build_spec["keys"].clone();
    std::fs::write(spec_of(&check_id), check_spec.to_string()).expect("write spec");
    feed(&env, &build, "1.0.0", 5, 0);

    let store = toolsmith::store::Store::open(&env.state().join("state.db")).expect("store");
    let validator =
        toolsmith::validate::run::Validator::with_default_policy(env.state().join("scratch"))
            .expect("validator");
    let settings = Settings {
        backend: Backend::Template,
        min_score: 40.0,
        max_attempts: 1,
        max_per_run: 1,
    };
    let registry = env.state().join("registry");
    let generator = Generator::new(store.clone(), env.state(), settings, validator)
        .with_registry(registry.clone());
    let policy = toolsmith::health::score::HealthPolicy::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let check_at = |days: i64| {
        let now = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_hours(24 * days))
            .expect("time");
        runtime
            .block_on(toolsmith::health::check::check_at(
                &store,
                registry.clone(),
                env.state(),
                &generator,
                &policy,
                None,
                now,
            ))
            .expect("check")
    };
    // Today: nothing is unused yet; the duplicate is proposed for merging into the used one.
    let today = check_at(0);
    assert_eq!(
        today.proposals,
        [format!("{check}: merge into {build}")],
        "{today:#?}"
    );
    // Two months on (policy: 60 days), nothing was run since: both are proposed for
    // deprecation, once; the merge is not proposed again.
    let later = check_at(61);
    let mut proposals = later.proposals.clone();
    proposals.sort();
    assert_eq!(
        proposals,
        [
            format!("{build}: deprecate (not run for over 60 days)"),
            format!("{check}: deprecate (never run in the 60 days since its approval)"),
        ],
        "{later:#?}"
    );
    assert!(check_at(62).proposals.is_empty(), "proposed once");
    let h = health(&env, &check);
    let commands: Vec<&str> = h["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|a| a["detail"].as_str())
        .collect();
    assert!(
        commands.iter().any(|d| d.contains(&format!(
            "toolsmith deprecate {check} --replaced-by {build}"
        ))),
        "{h:#}"
    );
}
