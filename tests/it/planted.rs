//! Issue 20's check, end to end through the daemon: planted Claude Code sessions (written here,
//! the cases of `scripts/plant_sessions.py`) are read by `toolsmithd` from a `claude-code`
//! source, mined and generated through it; each planted habit must become exactly one candidate
//! awaiting review, holding every occurrence (the repeats within a session too) as a dry-run
//! case, whose dry run in the sandbox prints that occurrence's commands word for word —
//! compared with the argv this file wrote into the session (what the shell would run), never
//! with the miner's rendering. Nothing else is proposed: the agent reading around (`wc -l`
//! then `sed -n`, in many sessions) is no tool.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Daemon, TestEnv, json_of};
use serde_json::{Value, json};
use toolsmith::mine::line::same_line;
use toolsmith::validate::cases::dry_run_commands;

/// One planted command: the line as the agent ran it, the argv a shell runs for it, its output.
struct Cmd {
    line: String,
    argv: Vec<Vec<String>>,
    output: String,
    ok: bool,
}

/// A word as a shell line writes it: bare when it can be, else single-quoted.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A simple command from its words.
fn cmd(words: &[&str], output: &str) -> Cmd {
    Cmd {
        line: words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "),
        argv: vec![words.iter().map(|w| (*w).to_owned()).collect()],
        output: output.to_owned(),
        ok: true,
    }
}

const TRAILER: &str = "\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\n\
                       Co-Authored-By: Claude <noreply@anthropic.com>";

/// The planted habits: id, and per occurrence its commands (values vary, words never do); the
/// coverage habit when `coverage` is the user's (its tool requires it).
fn habits(with_coverage: bool) -> Vec<(&'static str, Vec<Vec<Cmd>>)> {
    let objdump = [
        ("build/agent", "0x4013b0", "0x402c60"),
        ("out/loader", "0x4064f0", "0x406850"),
        ("build/bin/relayd", "0x402000", "0x402400"),
        ("target/release/probe", "0x405a10", "0x405f00"),
        ("build/agentd", "0x401800", "0x401c40"),
    ]
    .iter()
    .map(|(bin, start, stop)| {
        vec![
            cmd(
                &[
                    "objdump",
                    "-d",
                    bin,
                    "--start-address",
                    start,
                    "--stop-address",
                    stop,
                ],
                &format!("{bin}:     file format elf64-x86-64\n"),
            ),
            cmd(
                &["addr2line", "-f", "-e", bin, start],
                "handle_frame\nsrc/frame.c:88",
            ),
        ]
    })
    .collect();
    let check = ["ingest", "router", "auth", "storage", "metrics", "cli"]
        .iter()
        .cycle()
        .take(10)
        .map(|m| {
            vec![
                cmd(
                    &["./scripts/check.sh", "--module", m],
                    &format!("check {m}: ok"),
                ),
                cmd(&["make", "-C", m, "test"], "12 passed"),
            ]
        })
        .collect();
    let commits = [
        (
            vec!["src/auth/token.py"],
            "Fix token refresh race on expiry",
        ),
        (
            vec!["src/relay/router.py", "tests/test_router.py"],
            "Route retries through the backoff queue",
        ),
        (
            vec!["README.md"],
            "Document the relay's environment variables",
        ),
        (
            vec!["src/storage/cache.py", "tests/test_cache.py"],
            "Expire cache entries after an hour\n\nThe TTL was read in minutes.",
        ),
        (vec!["pyproject.toml"], "Pin pytest below 9"),
    ]
    .iter()
    // One action already: a tool saves no call, so it takes more sessions to rank (9, as in
    // `scripts/plant_sessions.py`).
    .cycle()
    .take(9)
    .map(|(files, message)| {
        let body = format!("{message}{TRAILER}");
        let mut add = vec!["git".to_owned(), "add".to_owned()];
        add.extend(files.iter().map(|f| (*f).to_owned()));
        vec![Cmd {
            line: format!(
                "git add {} && git commit -m \"$(cat <<'EOF'\n{body}\nEOF\n)\"",
                files.join(" ")
            ),
            argv: vec![
                add,
                vec!["git".into(), "commit".into(), "-m".into(), body.clone()],
            ],
            output: "[main 1a2b3c4] done".into(),
            ok: true,
        }]
    })
    .collect();
    let branches = [
        "main",
        "feature/login",
        "fix-1432",
        "release/2.1",
        "hotfix-cache",
    ]
    .iter()
    .map(|b| {
        vec![
            cmd(
                &["git", "checkout", b],
                &format!("Switched to branch '{b}'"),
            ),
            cmd(
                &["git", "pull", "--rebase", "origin", b],
                "Successfully rebased",
            ),
        ]
    })
    .collect();
    let npm = ["dotenv", "chalk", "uuid", "express", "node-fetch"]
        .iter()
        .map(|m| {
            let failure = format!(
                "Exit code 1\n\n> relay-ui@0.4.0 test\n> jest\n\n FAIL  src/app.test.js\n  ● Test \
                 suite failed to run\n\n    Cannot find module '{m}' from 'src/app.js'\n"
            );
            let mut fail = cmd(&["npm", "test"], &failure);
            fail.ok = false;
            vec![
                fail,
                cmd(&["npm", "install", m], "added 1 package"),
                cmd(&["npm", "test"], "Tests: 12 passed"),
            ]
        })
        .collect();
    let openssl = [
        ("certs/api.pem", "certs/ca.pem"),
        ("certs/edge-01.pem", "certs/root-ca.pem"),
        ("tls/proxy.crt", "tls/ca-bundle.crt"),
        ("certs/internal/ldap.pem", "certs/ca.pem"),
        ("tls/mqtt-broker.pem", "certs/root-ca.pem"),
    ]
    .iter()
    .map(|(cert, ca)| {
        vec![
            cmd(
                &[
                    "openssl", "x509", "-in", cert, "-noout", "-subject", "-enddate",
                ],
                "subject=CN = relay.internal\nnotAfter=Mar 3 12:00:00 2027 GMT",
            ),
            cmd(
                &["openssl", "verify", "-CAfile", ca, cert],
                &format!("{cert}: OK"),
            ),
        ]
    })
    .collect();
    let coverage = ["api", "storage", "auth", "relay/core", "cli"]
        .iter()
        .map(|pkg| {
            let test = format!("tests/test_{}.py", pkg.replace('/', "_"));
            vec![
                cmd(
                    &["coverage", "run", "-m", "pytest", &test, "-q"],
                    "........ [100%]\n8 passed in 1.20s",
                ),
                cmd(
                    &[
                        "coverage",
                        "report",
                        "-m",
                        &format!("--include=src/{pkg}/*"),
                    ],
                    "Name    Stmts   Miss  Cover\nTOTAL     120      4    96%",
                ),
            ]
        })
        .collect();
    let mut all = vec![
        ("objdump-range", objdump),
        ("check-module", check),
        ("heredoc-commit", commits),
        ("branch-sync", branches),
        ("npm-missing-module", npm),
        ("openssl-verify", openssl),
    ];
    if with_coverage {
        all.push(("coverage-report", coverage));
    }
    all
}

/// What the agent does between habits: its own tool calls (agent built-ins, never tools), each
/// a file of its own.
fn noise(n: usize) -> Value {
    json!({"name": "Read", "input": {"file_path": format!("/home/dev/relay/src/m{n}.py")}})
}

/// A stray command right before some occurrences.
fn stray(n: usize) -> Cmd {
    match n % 3 {
        0 => cmd(&["uname", "-a"], "Linux devbox 6.12"),
        1 => cmd(&["sed", "-n", "1,40p", "Makefile"], "# ..."),
        _ => cmd(&["grep", "-rn", "TODO", "src/"], "src/a.py:1: # TODO"),
    }
}

/// Writes one Claude Code transcript; returns, per planted occurrence it holds, the seqs of its
/// commands (the ingest's `seq`: the byte offset of the call's record, shifted left by 8).
struct Transcript {
    sid: String,
    lines: Vec<String>,
    offset: usize,
    parent: Option<String>,
    n: usize,
}

impl Transcript {
    fn new(sid: &str) -> Self {
        Transcript {
            sid: sid.to_owned(),
            lines: Vec::new(),
            offset: 0,
            parent: None,
            n: 0,
        }
    }

    fn record(&mut self, kind: &str, message: Value, extra: Value) -> usize {
        self.n += 1;
        let uuid = format!("{}-{:04}", self.sid, self.n);
        let mut r = json!({
            "parentUuid": self.parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/relay", "sessionId": self.sid, "version": "2.0.14",
            "gitBranch": "main", "type": kind, "message": message, "uuid": uuid,
            "timestamp": format!("2026-11-10T08:{:02}:{:02}.000Z", self.n / 60 % 60, self.n % 60),
        });
        if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
            r.extend(extra.clone());
        }
        self.parent = Some(uuid);
        let line = r.to_string() + "\n";
        let at = self.offset;
        self.offset += line.len();
        self.lines.push(line);
        at
    }

    /// A tool call and its result; the call's seq.
    fn call(&mut self, name: &str, input: Value, output: &str, ok: bool) -> u64 {
        let id = format!("toolu_{}_{}", self.sid, self.n);
        let at = self.record(
            "assistant",
            json!({"id": format!("msg_{}", self.n), "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5-20250929",
                   "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
            json!({}),
        );
        self.record(
            "user",
            json!({"role": "user", "content": [{"tool_use_id": id, "type": "tool_result",
                                                "content": output, "is_error": !ok}]}),
            json!({"toolUseResult": {"stdout": if ok { output } else { "" },
                                     "stderr": if ok { "" } else { output },
                                     "interrupted": false, "isImage": false}}),
        );
        (at as u64) << 8
    }

    fn bash(&mut self, c: &Cmd) -> u64 {
        self.call(
            "Bash",
            json!({"command": c.line, "description": "run"}),
            &c.output,
            c.ok,
        )
    }
}

/// A planted occurrence: its session, its commands' seqs, what the shell runs, and for a
/// recovery the failing command's output.
struct Planted {
    habit: &'static str,
    session: String,
    seqs: Vec<u64>,
    argv: Vec<Vec<String>>,
    /// The command lines as this file wrote them into the session.
    lines: Vec<String>,
    failure: Option<String>,
}

/// Writes the sessions into `dir`: `check-module` 6 and 4 times in two long sessions, every other
/// habit in sessions of its own (five, nine for the commit), a stray command before some
/// occurrences (never most of a habit's), the agent's own calls between some — a `Read` after
/// every `objdump-range` — and, apart from the habits in half the sessions, the agent reading
/// around (`wc -l` then `sed -n`). Returns the occurrences and the actions.
fn plant(dir: &Path, with_coverage: bool) -> (Vec<Planted>, usize) {
    let mut habits = habits(with_coverage);
    let mut planted = Vec::new();
    let mut actions = 0;
    let write = |t: Transcript| {
        std::fs::write(dir.join(format!("{}.jsonl", t.sid)), t.lines.concat()).expect("write");
    };
    let mut noise_n = 0;
    let mut occurrence = |t: &mut Transcript,
                          habit: &'static str,
                          cmds: Vec<Cmd>,
                          stray_n: Option<usize>,
                          with_noise: bool,
                          actions: &mut usize| {
        if with_noise {
            // Two of the agent's own calls: no sequence (at most one other action between two
            // steps) spans two habits.
            noise_n += 1;
            t.call(
                "Read",
                noise(noise_n)["input"].clone(),
                "1\t\"\"\"x\"\"\"",
                true,
            );
            t.call(
                "Grep",
                json!({"pattern": format!("p{noise_n}"), "path": "src"}),
                "",
                true,
            );
            *actions += 2;
        }
        if let Some(n) = stray_n {
            t.bash(&stray(n));
            *actions += 1;
        }
        let mut seqs = Vec::new();
        for c in &cmds {
            seqs.push(t.bash(c));
            *actions += 1;
        }
        planted.push(Planted {
            habit,
            session: t.sid.clone(),
            seqs,
            argv: cmds.iter().flat_map(|c| c.argv.clone()).collect(),
            lines: cmds.iter().map(|c| c.line.clone()).collect(),
            failure: cmds.iter().find(|c| !c.ok).map(|c| c.output.clone()),
        });
    };
    let check = habits.remove(1).1;
    let mut check = check.into_iter();
    for (s, times) in [("long-a", 6), ("long-b", 4)] {
        let mut t = Transcript::new(&format!("{s}-0000-4000-8000-000000000000"));
        for _ in 0..times {
            let cmds = check.next().expect("an occurrence");
            // The agent's own calls in one of the two sessions only: between the occurrences of
            // both, `Read → Grep → habit` would be the same habit with a longer name.
            occurrence(
                &mut t,
                "check-module",
                cmds,
                None,
                s == "long-a",
                &mut actions,
            );
        }
        write(t);
    }
    let mut per_habit: Vec<(&'static str, std::vec::IntoIter<Vec<Cmd>>)> = habits
        .into_iter()
        .map(|(h, occs)| (h, occs.into_iter()))
        .collect();
    // Each other habit in sessions of its own (five each), so no sequence spans two habits:
    // a stray command before some occurrences, the agent's own call after some.
    for (k, (habit, occs)) in per_habit.iter_mut().enumerate() {
        for (i, cmds) in occs.by_ref().enumerate() {
            let mut t = Transcript::new(&format!("5e55{k:02}{i:02}-0000-4000-8000-000000000000"));
            let stray_n = ((i + k) % 3 == 0).then_some(i + k);
            occurrence(&mut t, habit, cmds, stray_n, false, &mut actions);
            // After every objdump: the agent reads the source line it found. The longer
            // pattern with the `Read` has the habit's support; the habit is still the one
            // proposed.
            if i % 2 == 0 || *habit == "objdump-range" {
                t.call("Read", noise(k * 10 + i)["input"].clone(), "x", true);
                actions += 1;
            }
            if i % 2 == 1 {
                // The agent's own calls, then reading around: a file count, some lines.
                for (name, input) in [
                    (
                        "Grep",
                        json!({"pattern": format!("q{k}{i}"), "path": "src"}),
                    ),
                    ("Read", noise(100 + k * 10 + i)["input"].clone()),
                ] {
                    t.call(name, input, "x", true);
                }
                let module = ["ingest", "router", "auth", "storage", "metrics"][i % 5];
                t.bash(&cmd(
                    &["wc", "-l", &format!("src/{module}/*.py")],
                    "  120 total",
                ));
                t.bash(&cmd(
                    &["sed", "-n", "1,40p", &format!("src/{module}/core.py")],
                    "import os",
                ));
                actions += 4;
            }
            write(t);
        }
    }
    (planted, actions)
}

/// Parameters as the validation passes them: `--name-with-dashes VALUE`, an array's option
/// once per item, a true boolean bare.
fn args_of(params: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut args = Vec::new();
    for (name, value) in params {
        let option = format!("--{}", name.replace('_', "-"));
        let items = match value {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for item in items {
            match item {
                Value::Bool(true) => args.push(option.clone()),
                Value::Bool(false) | Value::Null => {}
                Value::String(s) => args.extend([option.clone(), s]),
                other => args.extend([option.clone(), other.to_string()]),
            }
        }
    }
    args
}

/// A staged candidate: its tool directory (latest attempt) and dry-run cases by the occurrence
/// (session, first seq, last seq) they stand for.
struct Staged {
    tool_dir: PathBuf,
    cases: Vec<((String, u64, u64), Value)>,
}

fn staged(state: &Path, id: &str) -> Staged {
    let stage = state.join("staging").join(id);
    let latest = std::fs::read_dir(&stage)
        .expect("staging")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("attempt-")?.parse::<u32>().ok()
        })
        .max()
        .expect("an attempt");
    let tool_dir = stage.join(format!("attempt-{latest}")).join("tool");
    let text = std::fs::read_to_string(tool_dir.join("tests/cases.json")).expect("cases");
    let all: Value = serde_json::from_str(&text).expect("cases json");
    let mut cases = Vec::new();
    for case in all["cases"].as_array().into_iter().flatten() {
        let name = case["name"].as_str().unwrap_or_default();
        let parsed = name.split_once("session ").and_then(|(_, rest)| {
            let (session, rest) = rest.split_once(", actions ")?;
            let range = rest.split_whitespace().next()?;
            let (first, last) = range.split_once('-')?;
            // Actions are named by their stored keys: the place in the transcript is below.
            let place = toolsmith::action::stored::place_of;
            Some((
                session.to_owned(),
                place(first.parse().ok()?),
                place(last.parse().ok()?),
            ))
        });
        if let Some(key) = parsed
            && case["dry_run"] == true
        {
            cases.push((key, case.clone()));
        }
    }
    Staged { tool_dir, cases }
}

/// What the candidate's dry run prints for `params` (and a recovery's failure on stdin), run in
/// the sandbox.
fn dry_run(env: &TestEnv, tool_dir: &Path, params: &Value, stdin: Option<&str>) -> String {
    let workspace = tempfile::tempdir_in(env.path()).expect("workspace");
    let args = args_of(params.as_object().expect("params"));
    // The interpreter the tool names (a tool of command lines keeps bash's semantics).
    let script = std::fs::read_to_string(tool_dir.join("run.sh")).unwrap_or_default();
    let shell = if script.starts_with("#!/usr/bin/env bash") {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    let mut cli = env.cli();
    cli.args(["sandbox", "--env", "TOOLSMITH_DRY_RUN=1", "--env"])
        .arg(format!("FAILURE={}", stdin.unwrap_or_default()))
        .arg("--tool-dir")
        .arg(tool_dir)
        .args(["--workspace", "write"])
        .arg(workspace.path())
        .args(["--timeout", "30", "--", "/bin/sh", "-c"]);
    if stdin.is_some() {
        cli.arg(format!(
            "printf '%s' \"$FAILURE\" | {shell} /tool/run.sh \"$@\""
        ));
    } else {
        cli.arg(format!("{shell} /tool/run.sh \"$@\""));
    }
    let out = cli
        .arg("sh")
        .args(&args)
        .timeout(Duration::from_secs(90))
        .output()
        .expect("toolsmith sandbox runs");
    assert!(
        out.status.success(),
        "the dry run with {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn each_planted_habit_is_one_candidate_whose_dry_run_is_the_log_word_for_word() {
    let env = TestEnv::new();
    let logs = env.path().join("projects").join("-home-dev-relay");
    std::fs::create_dir_all(&logs).expect("mkdir");
    // The npm recovery installs a package: its tool needs npm's registry, which a user grants
    // in the policy (a policy granting nothing refuses it, with the line to add).
    let policy = env.path().join("policy.toml");
    std::fs::write(
        &policy,
        toolsmith::validate::run::default_policy_granting(&["registry.npmjs.org:443".into()]),
    )
    .expect("write policy");
    // The coverage habit's tool requires `coverage`: planted where it is the user's (CI has
    // it), found on the user's PATH as the daemon is told it.
    let with_coverage = common::machine_toolchain("coverage").is_some();
    let user_path = std::env::var("PATH").unwrap_or_default();
    let config = env.write_config(&format!(
        "[ingest]\ndebounce_ms = 10\n\n[mine]\nafter_new_actions = 100000\n\n\
         [generate]\npolicy = \"{}\"\n\n[sandbox]\npath = {}\n\n\
         [[source]]\nname = \"planted\"\nformat = \"claude-code\"\npath = \"{}\"\n",
        policy.display(),
        Value::String(user_path),
        logs.parent().expect("projects").display()
    ));
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(&config);
    let daemon = Daemon::start(&env, cmd);
    let mut events = daemon.connect();
    let subscribed = events.call(1, "events.subscribe", json!({"kinds": ["ingest."]}));
    assert!(subscribed.get("error").is_none(), "{subscribed}");
    let (planted, actions) = plant(&logs, with_coverage);
    // Every planted action stored (each has its result in the same file).
    let mut stored = 0u64;
    while stored < actions as u64 {
        let message = events.read_or(|| daemon.log());
        if message["params"]["kind"] == "ingest.actions" {
            stored += message["params"]["data"]["new"].as_u64().unwrap_or(0);
        }
    }
    assert_eq!(stored, actions as u64);
    let cli = || {
        let mut c = env.cli();
        c.arg("--config")
            .arg(&config)
            .timeout(Duration::from_secs(300));
        c
    };
    let out = cli().args(["--json", "mine"]).assert().success();
    let mined = json_of(out.get_output());
    let out = cli()
        .args(["--json", "patterns", "--limit", "200"])
        .assert()
        .success();
    let patterns = json_of(out.get_output());
    let out = cli().args(["--json", "generate"]).assert().success();
    let generated = json_of(out.get_output());
    let out = cli().args(["--json", "candidates"]).assert().success();
    let candidates = json_of(out.get_output());
    let out = cli()
        .args(["--json", "patterns", "--limit", "200"])
        .assert()
        .success();
    let after = json_of(out.get_output());
    let awaiting: Vec<&Value> = candidates
        .as_array()
        .expect("candidates")
        .iter()
        .filter(|c| c["state"] == "awaiting-review")
        .collect();

    // Each candidate's evidence, from its saved spec.
    let held = |c: &Value| -> Vec<(String, u64, u64)> {
        let id = c["id"].as_str().expect("id");
        let text = std::fs::read_to_string(env.state().join("staging").join(id).join("spec.json"))
            .expect("spec.json");
        let spec: Value = serde_json::from_str(&text).expect("spec");
        spec["occurrences"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                let e = &o["evidence"];
                // The place in the transcript, below the rank the store keys it with.
                let place =
                    |key: &Value| toolsmith::action::stored::place_of(key.as_u64().unwrap_or(0));
                (
                    e["session"].as_str().unwrap_or_default().to_owned(),
                    place(&e["first_seq"]),
                    place(&e["last_seq"]),
                )
            })
            .collect()
    };
    let overlaps = |(s, first, last): &(String, u64, u64), p: &Planted| {
        *s == p.session
            && *first <= *p.seqs.iter().max().unwrap_or(&0)
            && *last >= *p.seqs.iter().min().unwrap_or(&0)
    };
    let mut report = BTreeMap::new();
    let mut habit_ids = vec![
        "objdump-range",
        "check-module",
        "heredoc-commit",
        "branch-sync",
        "npm-missing-module",
        "openssl-verify",
    ];
    if with_coverage {
        habit_ids.push("coverage-report");
    }
    // Nothing but the habits is proposed: each candidate awaiting review holds a planted
    // occurrence.
    let strays: Vec<&Value> = awaiting
        .iter()
        .copied()
        .filter(|c| {
            !held(c)
                .iter()
                .any(|e| planted.iter().any(|p| overlaps(e, p)))
        })
        .collect();
    assert!(
        strays.is_empty(),
        "candidates of no planted habit: {:#?}\n(patterns: {after:#})",
        strays.iter().map(|c| &c["tool"]).collect::<Vec<_>>()
    );
    // Reading around is mined, and never proposed: refused as a tool with the reason, or
    // folded into a pattern of the agent's own calls.
    let reading = after
        .as_array()
        .expect("patterns")
        .iter()
        .find(|p| {
            p["steps"][0]
                .as_str()
                .is_some_and(|s| s.starts_with("wc -l"))
                && p["steps"][1]
                    .as_str()
                    .is_some_and(|s| s.starts_with("sed -n"))
        })
        .unwrap_or_else(|| panic!("`wc -l → sed -n` among {after:#}"));
    assert!(
        reading["status"] == "rejected" || reading["status"] == "folded",
        "{reading:#}"
    );
    for habit in habit_ids {
        let occurrences: Vec<&Planted> = planted.iter().filter(|p| p.habit == habit).collect();
        let mine: Vec<&&Value> = awaiting
            .iter()
            .filter(|c| {
                held(c)
                    .iter()
                    .any(|e| occurrences.iter().any(|p| overlaps(e, p)))
            })
            .collect();
        assert_eq!(
            mine.len(),
            1,
            "{habit}: one candidate awaiting review, not {:#?}\n(mine: {mined:#}\ngenerate: \
             {generated:#}\npatterns: {patterns:#})",
            mine.iter().map(|c| &c["tool"]).collect::<Vec<_>>()
        );
        let id = mine[0]["id"].as_str().expect("id");
        let stage = staged(&env.state(), id);
        let mut reproduced = 0;
        for p in &occurrences {
            // Every occurrence is the candidate's own case, repeats within a session too.
            let params = stage
                .cases
                .iter()
                .find(|(e, _)| overlaps(e, p))
                .map(|(_, case)| case["params"].clone())
                .unwrap_or_else(|| {
                    panic!(
                        "{habit}: {id} holds no case of the occurrence {:?} in {} (its cases: \
                         {:?})",
                        p.argv,
                        p.session,
                        stage.cases.iter().map(|(e, _)| e).collect::<Vec<_>>()
                    )
                });
            let printed = dry_run(&env, &stage.tool_dir, &params, p.failure.as_deref());
            if p.failure.is_some() {
                // A recovery runs the failing command and its fix, each an argv.
                let got = dry_run_commands(&printed).unwrap_or_default();
                assert_eq!(
                    got, p.argv,
                    "{habit}: the dry run of {id} with {params} is not what was run"
                );
            } else {
                // A habit of command lines prints each line as this file typed it.
                let typed = p.lines.join("\n");
                assert!(
                    same_line(printed.trim_end(), &typed),
                    "{habit}: the dry run of {id} with {params} is not what was typed\n--- \
                     typed\n{typed}\n--- printed\n{printed}\n--- the tool\n{}",
                    std::fs::read_to_string(stage.tool_dir.join("run.sh")).unwrap_or_default()
                );
            }
            reproduced += 1;
        }
        report.insert(habit, (reproduced, occurrences.len()));
    }
    eprintln!("planted habits reproduced word for word: {report:?}");
}
