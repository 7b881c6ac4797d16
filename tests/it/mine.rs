//! Mining end to end: logs written in the native format (and the real corpus) are ingested by
//! the one-shot CLI, mined by `toolsmith mine`, and read back with `toolsmith patterns`; the
//! daemon mines on request and after enough new actions.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Daemon, TestEnv, json_of};
use serde_json::{Value, json};

/// One action as a native log line.
fn call(session: &str, seq: u64, command: &str, ok: bool, output: &str, ms: u64) -> String {
    json!({"v": 1, "session": session, "seq": seq, "cwd": format!("/work/{session}"),
           "tool": "Bash", "input": {"command": command}, "ok": ok,
           "exit_code": i32::from(!ok), "output": output, "duration_ms": ms})
    .to_string()
}

/// Five agent sessions with three habits:
/// - build then test one package (the package varies), with `git status` noise in between once;
/// - `pytest` failing on a missing module, `pip install requests`, `pytest` again;
/// - a slow `docker build` (90 s and more).
fn habits_log(dir: &Path) -> PathBuf {
    let packages = ["core", "cli", "core", "web", "store"];
    let mut lines = Vec::new();
    for (i, package) in packages.iter().enumerate() {
        let s = format!("s{i}");
        let mut seq = 0;
        let mut push = |command: &str, ok: bool, output: &str, ms: u64| {
            seq += 1;
            lines.push(call(&s, seq, command, ok, output, ms));
        };
        if i % 2 == 0 {
            push("git log --oneline -n 5", true, "abc123 fix", 40);
        } else {
            push("git fetch origin", true, "", 900);
        }
        push(
            &format!("cargo build -p {package}"),
            true,
            "Finished",
            4_000,
        );
        if i == 2 {
            push("git status", true, "clean", 30);
        }
        push(
            &format!("cargo test -p {package}"),
            true,
            "test result: ok",
            9_000,
        );
        push(&format!("rg -n TODO src/{package}"), true, "", 100);
        if i < 3 {
            push(
                "python -m pytest tests/",
                false,
                "ImportError while loading conftest\nE   ModuleNotFoundError: No module named 'requests'",
                1_200,
            );
            push(
                "pip install requests",
                true,
                "Successfully installed requests-2.32.3",
                3_000,
            );
            push("python -m pytest tests/", true, "12 passed in 0.80s", 1_100);
        }
        if i != 4 {
            push(
                "docker build -t app .",
                true,
                "Successfully built",
                90_000 + 1_000 * i as u64,
            );
        }
    }
    let path = dir.join("agent.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write log");
    path
}

fn patterns(env: &TestEnv, state: &Path) -> Vec<Value> {
    let out = env
        .cli_at(state)
        .args(["--json", "patterns", "--limit", "100"])
        .assert()
        .success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("a JSON array")
}

fn find<'a>(patterns: &'a [Value], kind: &str, first_step: &str) -> &'a Value {
    patterns
        .iter()
        .find(|p| {
            // The habit's own pattern, not a variant folded into it.
            p["kind"] == kind
                && p["status"] != "folded"
                && p["step_detail"][0]["template"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(first_step))
        })
        .unwrap_or_else(|| {
            panic!(
                "no {kind} pattern starting with `{first_step}` among {:#?}",
                patterns
                    .iter()
                    .map(|p| (&p["kind"], &p["steps"]))
                    .collect::<Vec<_>>()
            )
        })
}

#[test]
fn one_shot_mining_finds_sequences_recoveries_and_slow_operations() {
    let env = TestEnv::new();
    let log = habits_log(env.path());
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    let out = env.cli().args(["--json", "mine"]).assert().success();
    let summary = json_of(out.get_output());
    assert_eq!(summary["sessions"], 5, "{summary:#}");
    assert!(
        summary["kinds"]["recovery"].as_u64() >= Some(1),
        "{summary:#}"
    );

    let all = patterns(&env, &env.state());
    // Build then test, the package a parameter, seen in all five sessions (one with a stray
    // `git status` between the steps: the default gap allows it), then the search of the
    // package's sources: one value, `src/<package>`, in three lines.
    let build = find(&all, "sequence", "cargo build -p <package>");
    assert_eq!(build["support"], 5, "{build:#}");
    let steps: Vec<&str> = build["step_detail"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["template"].as_str())
        .collect();
    assert_eq!(
        steps[..2],
        ["cargo build -p <package>", "cargo test -p <package>"]
    );
    // `steps` is the readable form: one template per step.
    assert_eq!(build["steps"][0], "cargo build -p <package>");
    assert_eq!(build["steps"][1], "cargo test -p <package>");
    let package = &build["params"][0];
    assert_eq!(package["name"], "package");
    assert_eq!(package["type"], "string");
    assert_eq!(package["examples"][0], "core");
    assert!(build["id"].as_str().is_some_and(|id| id.starts_with("p-")));
    let evidence = build["evidence"].as_array().expect("evidence");
    assert_eq!(evidence.len(), 5);
    let s2 = evidence
        .iter()
        .find(|e| e["session"] == "s2")
        .expect("session s2");
    // Evidence names actions by their stored key: the file generation's rank above the place
    // in the file (here the log's own seq).
    let place = |key: &Value| key.as_u64().map(toolsmith::action::stored::place_of);
    assert_eq!(place(&s2["first_seq"]), Some(2), "{s2:#}");
    assert!(place(&s2["last_seq"]) >= Some(4), "{s2:#}");
    assert_eq!(s2["params"]["package"], "core");
    assert_eq!(s2["commands"][0], "cargo build -p core");
    assert!(build["score"].as_f64() > Some(0.0));
    assert_eq!(build["status"], "new");

    // The error→recovery habit: the failing command, its error's template, the fix.
    let recovery = all
        .iter()
        .find(|p| p["kind"] == "recovery")
        .expect("a recovery pattern");
    assert_eq!(recovery["support"], 3, "{recovery:#}");
    assert_eq!(
        recovery["trigger"]["step"]["template"],
        "python -m pytest tests/"
    );
    assert!(
        recovery["trigger"]["error_template"]
            .as_str()
            .is_some_and(|t| t.contains("No module named")),
        "{recovery:#}"
    );
    assert_eq!(
        recovery["step_detail"][0]["template"],
        "pip install requests"
    );
    assert!(
        recovery["steps"][0]
            .as_str()
            .is_some_and(|s| s.starts_with("python -m pytest tests/  (fails: ")),
        "{recovery:#}"
    );
    assert_eq!(recovery["steps"][1], "pip install requests");

    // The slow operation, with its median duration.
    let slow = find(&all, "slow", "docker build");
    assert_eq!(slow["support"], 4);
    assert!(slow["median_ms"].as_u64() >= Some(90_000), "{slow:#}");

    // Noise is no step: no pattern holds `git status`.
    assert!(
        all.iter().all(|p| !p.to_string().contains("git status")),
        "noise in a pattern"
    );

    // The human listing and the detail of one pattern.
    let out = env
        .cli()
        .args(["patterns", "--kind", "slow"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("docker build"), "{text}");
    assert!(
        !text.contains("cargo build"),
        "--kind slow lists only slow ones:\n{text}"
    );
    let id = build["id"].as_str().expect("id");
    let out = env.cli().args(["patterns", id]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("package") && text.contains("cargo test -p web"),
        "{text}"
    );
    env.cli()
        .args(["patterns", "--kind", "nonsense"])
        .assert()
        .code(2);
    env.cli().args(["patterns", "p-00000000"]).assert().code(1);
}

/// `./scripts/check.sh --module X` then `make -C X test`: six times in session `long-1`, four in
/// `long-2` and two in a sub-agent `long-1` started; a stray `uname -a` before every other one,
/// and a one-off command after each.
fn repeated_habit_log(dir: &Path) -> PathBuf {
    let modules = ["ingest", "router", "auth", "storage", "metrics", "cli"];
    let one_offs = [
        "git diff",
        "cargo fmt",
        "rg -n TODO",
        "git stash list",
        "du -sh .",
        "python3 --version",
    ];
    let mut lines = Vec::new();
    let mut n = 0;
    for (session, parent, times) in [
        ("long-1", None, 6),
        ("long-2", None, 4),
        ("long-1-agent", Some("long-1"), 2),
    ] {
        let mut seq = 0;
        let mut push = |command: &str| {
            seq += 1;
            let mut record = json!({"v": 1, "session": session, "seq": seq, "cwd": "/work/relay",
                "tool": "Bash", "input": {"command": command}, "ok": true, "exit_code": 0,
                "output": "ok", "duration_ms": 500});
            if let Some(parent) = parent {
                record["parent_session"] = json!(parent);
            }
            lines.push(record.to_string());
        };
        for i in 0..times {
            if n % 2 == 0 {
                push("uname -a");
            }
            n += 1;
            push(&format!("./scripts/check.sh --module {}", modules[i]));
            push(&format!("make -C {} test", modules[i]));
            push(one_offs[i]);
        }
    }
    let path = dir.join("repeated.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write log");
    path
}

#[test]
fn a_habit_repeated_in_few_sessions_qualifies_and_says_why_it_ranks() {
    let env = TestEnv::new();
    let log = repeated_habit_log(env.path());
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    // Four occurrences suffice (the default, said explicitly).
    let config = env.write_config("[mine]\nmin_occurrences = 4\n");
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["--json", "mine"])
        .assert()
        .success();
    let summary = json_of(out.get_output());
    // The sub-agent's session counts with its parent's.
    assert_eq!(summary["sessions"], 2, "{summary:#}");
    assert_eq!(summary["min_occurrences"], 4, "{summary:#}");
    let all = patterns(&env, &env.state());
    let holding: Vec<&Value> = all
        .iter()
        .filter(|p| p["steps"].to_string().contains("check.sh"))
        .collect();
    let habit = holding
        .iter()
        .find(|p| p["status"] == "new" && p["steps"].as_array().map(Vec::len) == Some(2))
        .unwrap_or_else(|| {
            panic!(
                "the habit among {:#?}",
                holding
                    .iter()
                    .map(|p| (&p["status"], &p["steps"]))
                    .collect::<Vec<_>>()
            )
        });
    // Seen in two sessions only, twelve times: it qualifies by its occurrences.
    assert_eq!(
        (habit["support"].as_u64(), habit["occurrences"].as_u64()),
        (Some(2), Some(12))
    );
    assert!(
        habit["steps"][0]
            .as_str()
            .is_some_and(|s| s.contains("check.sh"))
    );
    assert!(habit["score"].as_f64() > Some(0.0), "{habit:#}");
    let id = habit["id"].as_str().expect("id");
    // The detail shows the score's terms.
    let out = env.cli().args(["patterns", id]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("from 2 sessions and 12 occurrences"),
        "{text}"
    );
    assert!(
        text.contains("confidence = (0.25 + 0.75 × consistency"),
        "{text}"
    );

    // With more occurrences required, the habit is not one.
    let config = env.write_config("[mine]\nmin_occurrences = 13\n");
    env.cli()
        .arg("--config")
        .arg(&config)
        .arg("mine")
        .assert()
        .success();
    let all = patterns(&env, &env.state());
    assert!(
        all.iter()
            .all(|p| !p["steps"].to_string().contains("check.sh")),
        "{all:#?}"
    );
}

/// `openssl x509` then `openssl verify` in ten sessions, after a stray `uname -a` in five.
fn stray_step_log(dir: &Path) -> PathBuf {
    let one_offs = [
        "git diff",
        "cargo fmt",
        "rg -n TODO",
        "git stash list",
        "du -sh .",
        "python3 --version",
    ];
    let mut lines = Vec::new();
    for i in 0..10 {
        let session = format!("s{i}");
        let mut seq = 0;
        let mut push = |command: &str| {
            seq += 1;
            lines.push(call(&session, seq, command, true, "ok", 50));
        };
        push(one_offs[i % 6]);
        if i % 2 == 0 {
            push("uname -a");
        }
        push(&format!("openssl x509 -in certs/c{i}.pem -noout -subject"));
        push(&format!("openssl verify -CAfile ca.pem certs/c{i}.pem"));
        push("cargo build");
    }
    let path = dir.join("stray.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write log");
    path
}

#[test]
fn one_habit_is_one_pattern_and_says_what_was_folded_where() {
    let env = TestEnv::new();
    let log = stray_step_log(env.path());
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    env.cli().arg("mine").assert().success();
    let all = patterns(&env, &env.state());
    let holding: Vec<&Value> = all
        .iter()
        .filter(|p| p["steps"].to_string().contains("openssl"))
        .collect();
    let new: Vec<&&Value> = holding.iter().filter(|p| p["status"] == "new").collect();
    assert_eq!(
        new.len(),
        1,
        "one habit, one pattern: {:#?}",
        holding
            .iter()
            .map(|p| (&p["status"], &p["steps"]))
            .collect::<Vec<_>>()
    );
    let habit = new[0];
    let id = habit["id"].as_str().expect("id");
    assert_eq!(habit["support"], 10, "{habit:#}");
    // Every other pattern of it is folded into it, and says so.
    for p in holding.iter().filter(|p| p["id"] != id) {
        assert_eq!(p["status"], "folded", "{p:#}");
        assert_eq!(p["folded_into"]["id"], id, "{p:#}");
    }
    let stray = holding
        .iter()
        .find(|p| p["steps"][0] == "uname -a")
        .expect("the stray step's variant");
    let stray_id = stray["id"].as_str().expect("id");
    let out = env.cli().args(["patterns", id]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("folded into this one"), "{text}");
    assert!(text.contains(stray_id), "{text}");
    let out = env.cli().args(["patterns", stray_id]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("[folded]"), "{text}");
    assert!(text.contains(&format!("folded into {id}")), "{text}");
    assert!(text.contains("5 of its 5 occurrences"), "{text}");
}

#[test]
fn a_rejected_pattern_stays_rejected_across_runs() {
    use toolsmith::generate::candidates::{self, NewCandidate, State};
    let env = TestEnv::new();
    let log = habits_log(env.path());
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    env.cli().arg("mine").assert().success();
    let all = patterns(&env, &env.state());
    let id = find(&all, "sequence", "cargo build")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // Reject a candidate made from it, as review does.
    let store = toolsmith::store::Store::open(&env.state().join("state.db")).expect("store");
    let pattern = id.clone();
    let rejected = store
        .call_blocking(move |conn| {
            let reject = || -> Result<(), candidates::CandidateError> {
                let c = candidates::create(
                    conn,
                    &NewCandidate {
                        tool: "cargo-build-test".into(),
                        origin: "mined-sequence".into(),
                        pattern: Some(pattern),
                        request: None,
                    },
                )?;
                for to in [State::Generating, State::Validating, State::AwaitingReview] {
                    candidates::transition(conn, &c.id, to, None)?;
                }
                candidates::transition(conn, &c.id, State::Rejected, Some("we run tests in CI"))?;
                Ok(())
            };
            Ok(reject().map_err(|e| e.to_string()))
        })
        .expect("store");
    assert_eq!(rejected, Ok(()));
    drop(store);
    // More of the same habit arrives and mining runs again.
    env.cli().arg("mine").assert().success();
    let all = patterns(&env, &env.state());
    let again = all
        .iter()
        .find(|p| p["id"] == id.as_str())
        .expect("still listed");
    assert_eq!(again["status"], "rejected");
    assert_eq!(again["reason"], "we run tests in CI");
    // The others are new, or the same habit as another pattern and folded into it (a habit
    // rejected at review is not proposed again through a variant of it).
    let others: Vec<&Value> = all.iter().filter(|p| p["id"] != id.as_str()).collect();
    assert!(
        others.iter().all(|p| p["status"] == "new"
            || (p["status"] == "folded" && p["folded_into"]["id"].is_string())),
        "{others:#?}"
    );
}

#[test]
fn the_daemon_mines_on_request_and_after_enough_new_actions() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let config = env.write_config(&format!(
        "[ingest]\ndebounce_ms = 10\n\n[mine]\nafter_new_actions = 20\n\n\
         [[source]]\nformat = \"native\"\npath = \"{}\"\n",
        logs.display()
    ));
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(&config);
    let daemon = Daemon::start(&env, cmd);
    let mut events = daemon.connect();
    let subscribed = events.call(
        1,
        "events.subscribe",
        json!({"kinds": ["mine.", "pattern."]}),
    );
    assert!(subscribed.get("error").is_none(), "{subscribed}");

    // Appending the sessions (over 20 actions) makes the daemon mine by itself.
    let source = habits_log(env.path());
    std::fs::copy(&source, logs.join("agent.jsonl")).expect("copy log");
    let mut found = Vec::new();
    let finished = loop {
        let message = events.read_or(|| daemon.log());
        let kind = message["params"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if kind == "pattern.found" {
            found.push(message["params"]["data"]["id"].clone());
        }
        if kind == "mine.finished" {
            break message["params"]["data"].clone();
        }
    };
    assert_eq!(finished["sessions"], 5, "{finished:#}");
    assert_eq!(
        found.len() as u64,
        finished["patterns"].as_u64().unwrap_or(0)
    );

    // While the daemon runs here, `toolsmith mine` asks it (it is the store's one writer).
    let out = env
        .cli()
        .args(["--config"])
        .arg(&config)
        .args(["--json", "mine"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let summary = json_of(out.get_output());
    assert_eq!(summary["patterns"], finished["patterns"]);
    // The patterns are read beside the running daemon.
    let listed = patterns(&env, &env.state());
    assert_eq!(
        listed.len() as u64,
        finished["patterns"].as_u64().unwrap_or(0)
    );
    // The same connection also gets a proper error for bad params.
    let bad = events.call(2, "mine.run", json!({"now": true}));
    assert!(bad.get("error").is_some(), "{bad}");
}

#[test]
fn a_bad_mine_table_is_refused_with_its_line() {
    let env = TestEnv::new();
    let file = env.write_config("[mine]\nmin_support = 3\nschedule = \"*/15 * *\"\n");
    let out = env
        .cli()
        .args(["config", "check"])
        .arg(&file)
        .assert()
        .code(4);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("mine.schedule") && err.contains(":3"), "{err}");
    let file = env.write_config("[mine]\nmin_length = 5\nmax_length = 3\n");
    let out = env
        .cli()
        .args(["config", "check"])
        .arg(&file)
        .assert()
        .code(4);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("mine.max_length"), "{err}");
}

#[test]
fn the_corpus_shell_histories_yield_their_commit_habit() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !corpus.is_dir() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "corpus not found at {} (required under CI=true)",
            corpus.display()
        );
        eprintln!("skipped: corpus not found at {}", corpus.display());
        return;
    }
    let env = TestEnv::new();
    env.cli()
        .arg("ingest")
        .arg(corpus.join("shell-history"))
        .arg(corpus.join("claude-code"))
        .arg(corpus.join("codex"))
        .assert()
        .success();
    env.cli().arg("mine").assert().success();
    let all = patterns(&env, &env.state());
    // zsh__AnaTofuZ's history: `gia <file>`, `gc`, `gp` (git add -p, commit, push aliases) over
    // and over, in many sessions.
    let commit = find(&all, "sequence", "gia <path>");
    assert!(commit["support"].as_u64() >= Some(20), "{commit:#}");
    assert_eq!(commit["params"][0]["type"], "path");
    // Editors and pagers are never steps.
    for p in &all {
        for step in p["steps"].as_array().into_iter().flatten() {
            let t = step.as_str().unwrap_or_default();
            assert!(!t.starts_with("vim ") && !t.starts_with("htop"), "{t}");
        }
    }
}

/// Issue 29's bad input: a line the shell grammar rejects, and a line in another shell's language
/// (PowerShell, as Codex runs on Windows), are counted by `toolsmith mine` and stay one opaque
/// step each: the PowerShell line is never read as POSIX words.
#[test]
fn lines_that_do_not_parse_are_counted_and_stay_opaque() {
    let env = TestEnv::new();
    let mut lines = Vec::new();
    for i in 0..5 {
        let s = format!("s{i}");
        lines.push(call(&s, 1, "Get-ChildItem -Force", true, "", 50));
        lines.push(call(&s, 2, &format!("cargo build -p p{i}"), true, "", 50));
        lines.push(call(&s, 3, "git commit -m 'unterminated", false, "", 50));
        lines.push(call(&s, 4, "cargo test", true, "", 50));
    }
    let log = env.path().join("agent.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").expect("write log");
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    let out = env.cli().args(["--json", "mine"]).assert().success();
    let summary = json_of(out.get_output());
    assert_eq!(summary["actions"], 20, "{summary:#}");
    assert_eq!(summary["unparsed"], 10, "{summary:#}");
    assert_eq!(summary["foreign"], 5, "{summary:#}");
    let out = env.cli().arg("mine").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("lines not parsed: 10 (5 in another shell's language)"),
        "{text}"
    );
    // Each is one opaque step: the PowerShell line never as a command with a flag.
    let all = patterns(&env, &env.state());
    let templates: Vec<&str> = all
        .iter()
        .flat_map(|p| p["step_detail"].as_array().into_iter().flatten())
        .filter_map(|s| s["template"].as_str())
        .collect();
    assert!(
        templates.iter().all(|t| !t.starts_with("Get-ChildItem -")),
        "{templates:?}"
    );
    // The whole line is the step's one value.
    assert!(
        templates.contains(&"Get-ChildItem 'Get-ChildItem -Force'"),
        "{templates:?}"
    );
}

/// A pattern's evidence names what a person can check: action ids `toolsmith actions` looks up,
/// and the file and line of the log each was read from — not the store's internal keys.
#[test]
fn pattern_evidence_names_action_ids_and_the_lines_of_the_log() {
    let env = TestEnv::new();
    let log = habits_log(env.path());
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    env.cli().args(["mine"]).assert().success();
    let all = patterns(&env, &env.state());
    let build = find(&all, "sequence", "cargo build -p <package>");
    let id = build["id"].as_str().expect("id");
    let out = env.cli().args(["patterns", id]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let log_text = std::fs::read_to_string(&log).expect("log");
    let log_lines: Vec<&str> = log_text.lines().collect();
    // `  session s2 (native) actions 9–12 (/…/agent.jsonl lines 9, 10, 11, 12)`
    let row = text
        .lines()
        .find(|l| l.starts_with("  session s2 "))
        .unwrap_or_else(|| panic!("no evidence row for s2 in:\n{text}"));
    assert!(
        !row.contains(&format!(
            "{}",
            build["evidence"][0]["first_seq"].as_u64().unwrap_or(0)
        )),
        "no internal key: {row}"
    );
    let (ids, place) = row
        .split_once(" actions ")
        .and_then(|(_, rest)| rest.split_once(" ("))
        .unwrap_or_else(|| panic!("no `actions A–B (file lines …)` in {row}"));
    let (first, last) = ids.split_once('–').expect("a range of ids");
    let (first, last): (i64, i64) = (
        first.parse().expect("first id"),
        last.parse().expect("last id"),
    );
    let (path, lines) = place
        .trim_end_matches(')')
        .split_once(" lines ")
        .expect("file and lines");
    assert_eq!(Path::new(path), log.as_path(), "{row}");
    let lines: Vec<usize> = lines
        .split(", ")
        .map(|l| l.parse().expect("a line number"))
        .collect();
    assert_eq!(lines.len() as i64, last - first + 1, "{row}");
    // Each id is the action read at its line: the same command, as the log holds it.
    let ids: Vec<String> = (first..=last).map(|i| i.to_string()).collect();
    let out = env
        .cli()
        .args(["--json", "actions"])
        .args(&ids)
        .assert()
        .success();
    let actions = json_of(out.get_output());
    let actions = actions.as_array().expect("actions");
    assert_eq!(actions.len(), lines.len());
    for (action, line) in actions.iter().zip(&lines) {
        let record: Value = serde_json::from_str(log_lines[line - 1]).expect("a log record");
        assert_eq!(
            action["input"]["command"], record["input"]["command"],
            "line {line}"
        );
        assert_eq!(action["read_from"][0]["lines"][0], *line as u64);
    }
    assert_eq!(actions[0]["input"]["command"], "cargo build -p core");
    // Asked by id in words: where it was read.
    let out = env.cli().args(["actions", &ids[0]]).assert().success();
    let words = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        words.contains(&format!(
            "action {} ({}:{})",
            ids[0],
            log.display(),
            lines[0]
        )),
        "{words}"
    );
}
