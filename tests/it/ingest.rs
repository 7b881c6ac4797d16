//! Ingest through the real binaries: one-shot on the corpus, and the daemon tailing files that
//! grow, rotate, shrink and survive `kill -9` — always ending equal to a one-shot ingest.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Daemon, PATIENCE, TestEnv, append, corpus, oneshot, stored};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// Waits until the daemon's store holds exactly what a one-shot ingest of the same files holds.
fn wait_until_equal(env: &TestEnv, daemon_state: &Path, expected: &[Value], daemon: &Daemon) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let got = stored(env, daemon_state);
        if got == expected {
            return;
        }
        if Instant::now() > deadline {
            let missing: Vec<_> = expected
                .iter()
                .filter(|a| !got.contains(a))
                .take(3)
                .collect();
            let extra: Vec<_> = got
                .iter()
                .filter(|a| !expected.contains(a))
                .take(3)
                .collect();
            panic!(
                "daemon stored {} actions, one-shot {}; missing {missing:?}; extra {extra:?}; log:\n{}",
                got.len(),
                expected.len(),
                daemon.log()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A native-format call, with its result either on the same line or on a later one.
fn native_lines(session: &str, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for i in 0..n {
        let command = format!("cargo test -p crate{} -- --exact t{i}", i % 7);
        if i % 3 == 0 {
            lines.push(
                json!({"v": 1, "session": session, "tool": "shell", "call_id": format!("c{i}"),
                       "input": {"command": command}})
                .to_string(),
            );
            lines.push(
                json!({"v": 1, "session": session, "call_id": format!("c{i}"), "ok": i % 2 == 0,
                       "exit_code": i32::from(i % 2 != 0), "output": format!("output {i}\nline two")})
                .to_string(),
            );
        } else {
            lines.push(
                json!({"v": 1, "session": session, "tool": "shell", "input": {"command": command},
                       "ok": true, "exit_code": 0, "output": "ok", "duration_ms": i})
                .to_string(),
            );
        }
    }
    lines
}

fn daemon_with_sources(env: &TestEnv, sources: &str) -> Daemon {
    let config = env.write_config(sources);
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(config);
    Daemon::start(env, cmd)
}

#[test]
fn oneshot_ingest_of_the_corpus_counts_what_the_files_hold() {
    let Some(corpus) = corpus() else { return };
    let env = TestEnv::new();
    let state = env.path().join("oneshot");
    let report = oneshot(
        &env,
        &state,
        &[],
        &[
            &corpus.join("claude-code"),
            &corpus.join("codex"),
            &corpus.join("shell-history"),
            &corpus.join("swe-agent"),
            &corpus.join("openhands"),
        ],
    );
    let mut per_format = std::collections::BTreeMap::<String, u64>::new();
    for file in report["files"].as_array().expect("files") {
        *per_format
            .entry(file["format"].as_str().unwrap_or("skipped").to_owned())
            .or_default() += file["actions"].as_u64().unwrap_or(0);
    }
    // PROVENANCE.md: 59 + 7 + 167 + 21 + 39 + 13 tool calls.
    assert_eq!(per_format["claude-code"], 306, "{per_format:?}");
    // 125 function calls and 173 apply_patch calls.
    assert_eq!(per_format["codex"], 298, "{per_format:?}");
    // 12 + 5 + 11 + 21 + 18 steps.
    assert_eq!(per_format["swe-agent"], 67, "{per_format:?}");
    // 1435 + 182 fish entries; 298 entries in the smaller zsh file.
    assert!(per_format["fish"] == 1617, "{per_format:?}");

    // Re-running stores nothing twice.
    let again = oneshot(&env, &state, &[], &[&corpus.join("claude-code")]);
    let new: u64 = again["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["actions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(new, 0);

    let out = env
        .cli_at(&state)
        .args(["sources", "--json"])
        .assert()
        .success();
    let sources: Value = serde_json::from_slice(&out.get_output().stdout).expect("sources JSON");
    let claude = sources
        .as_array()
        .and_then(|s| s.iter().find(|s| s["format"] == "claude-code"))
        .expect("claude-code source");
    assert_eq!(claude["files"], 6);
    assert_eq!(claude["actions"], 306);
    assert_eq!(claude["lag_bytes"], 0);
}

#[test]
fn secrets_are_redacted_before_storage() {
    let env = TestEnv::new();
    let log = env.path().join("secrets.jsonl");
    let aws = "AKIAIOSFODNN7EXAMPLE";
    let github = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
    let lines = [
        json!({"v": 1, "session": "s", "tool": "shell",
               "input": {"command": format!("export AWS_ACCESS_KEY_ID={aws} && git push")},
               "ok": true, "output": format!("token {github} accepted")}),
        json!({"v": 1, "session": "s", "tool": "shell",
               "input": {"command": "git clone https://alice:hunter2pass@git.example.com/r.git"},
               "ok": true, "output": "commit 0123456789abcdef0123456789abcdef01234567"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, text).expect("write log");
    let state = env.path().join("s");
    oneshot(&env, &state, &["--format", "native"], &[&log]);
    let stored = serde_json::to_string(&stored(&env, &state)).expect("json");
    for secret in [aws, github, "hunter2pass"] {
        assert!(!stored.contains(secret), "{secret} was stored: {stored}");
    }
    assert!(stored.contains("[REDACTED:"), "{stored}");
    assert!(
        stored.contains("alice"),
        "user names in URLs are kept: {stored}"
    );
    assert!(
        stored.contains("0123456789abcdef0123456789abcdef01234567"),
        "git SHAs are kept: {stored}"
    );
}

#[test]
fn bad_input_is_counted_and_the_rest_goes_on() {
    let env = TestEnv::new();
    let log = env.path().join("bad.jsonl");
    let mut bytes = Vec::new();
    let good = native_lines("s", 4);
    bytes.extend(format!("{}\n", good[0]).as_bytes());
    bytes.extend(b"{not json\n");
    bytes.extend(b"\xff\xfe\x00binary\x00\n");
    bytes.extend(b"{\"v\":2,\"session\":\"s\",\"tool\":\"x\"}\n");
    // A 3 MiB line, over the 1 MiB limit set below: skipped without being buffered.
    bytes.extend(std::iter::repeat_n(b'x', 3 << 20));
    bytes.extend(b"\n");
    for line in &good[1..] {
        bytes.extend(format!("{line}\n").as_bytes());
    }
    std::fs::write(&log, &bytes).expect("write");
    let config = env.write_config("[ingest]\nmax_record_kib = 1024\n");
    let state = env.path().join("s");
    let out = env
        .cli_at(&state)
        .arg("--config")
        .arg(&config)
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("4 problems"), "{text}");
    let stored = stored(&env, &state);
    assert_eq!(stored.len(), 4, "every good line is stored: {stored:?}");

    let out = env.cli_at(&state).arg("sources").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("4 problems"), "{text}");
    assert!(
        text.contains("bad.jsonl:3:"),
        "examples name file and line: {text}"
    );
    assert!(
        text.contains("unsupported native record version 2"),
        "{text}"
    );
    assert!(text.contains("exceeds the 1048576 byte limit"), "{text}");
}

#[test]
fn the_daemon_follows_growth_rotation_truncation_and_new_directories() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let daemon = daemon_with_sources(
        &env,
        &format!(
            "[ingest]\ndebounce_ms = 20\n\n[[source]]\nformat = \"native\"\npath = \"{}\"\n",
            logs.display()
        ),
    );

    // Growth in random-sized pieces, cutting lines anywhere.
    let live = logs.join("live.jsonl");
    let text: String = native_lines("grow", 60)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let mut rest = text.as_bytes();
    let mut seed = 7u64;
    while !rest.is_empty() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = ((seed >> 33) as usize % 200 + 1).min(rest.len());
        append(&live, &rest[..n]);
        rest = &rest[n..];
        if seed.is_multiple_of(5) {
            std::thread::sleep(Duration::from_millis(3));
        }
    }
    // The growth is all read before the rotation below: a file renamed out of its source
    // before the daemon ever opened it cannot be followed (as with `tail -F`), and on a loaded
    // machine sixty appends can all land before the daemon's first look.
    let grown_state = env.path().join("expected-growth");
    std::fs::copy(&live, env.path().join("grown-copy.jsonl")).expect("copy");
    oneshot(
        &env,
        &grown_state,
        &["--format", "native"],
        &[&env.path().join("grown-copy.jsonl")],
    );
    let grown = stored(&env, &grown_state);
    assert_eq!(grown.len(), 60);
    wait_until_equal(&env, &env.state(), &grown, &daemon);
    // Rotation: the file is renamed out of the source and a new one starts.
    let rotated = env.path().join("live.jsonl.1");
    std::fs::rename(&live, &rotated).expect("rotate");
    let after: String = native_lines("after-rotation", 10)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    append(&live, after.as_bytes());
    // A new dated sub-directory, as Codex makes every day.
    let dated = logs.join("2026/11/22");
    std::fs::create_dir_all(&dated).expect("mkdir dated");
    let day: String = native_lines("new-dir", 5)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    append(&dated.join("day.jsonl"), day.as_bytes());

    let expected_state = env.path().join("expected");
    std::fs::copy(&rotated, env.path().join("rotated-copy.jsonl")).expect("copy");
    oneshot(
        &env,
        &expected_state,
        &["--format", "native"],
        &[&env.path().join("rotated-copy.jsonl"), &live, &dated],
    );
    let expected = stored(&env, &expected_state);
    assert_eq!(expected.len(), 75);
    wait_until_equal(&env, &env.state(), &expected, &daemon);

    // Truncation: the file is emptied and written anew; the new content is read from the start.
    std::fs::write(&live, "").expect("truncate");
    let fresh: String = native_lines("after-truncation", 3)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&live, fresh.as_bytes()).expect("rewrite");
    let truncated_state = env.path().join("expected-2");
    oneshot(
        &env,
        &truncated_state,
        &["--format", "native"],
        &[&env.path().join("rotated-copy.jsonl")],
    );
    let mut expected = stored(&env, &expected_state);
    let extra_state = env.path().join("expected-3");
    oneshot(&env, &extra_state, &["--format", "native"], &[&live]);
    expected.extend(stored(&env, &extra_state));
    expected.sort_by(|a, b| {
        (a["session"].as_str(), a["seq"].as_u64()).cmp(&(b["session"].as_str(), b["seq"].as_u64()))
    });
    expected.dedup();
    wait_until_equal(&env, &env.state(), &expected, &daemon);
}

#[test]
fn kill_9_at_random_moments_loses_and_duplicates_nothing() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let config = format!(
        "[ingest]\ndebounce_ms = 5\n\n[[source]]\nformat = \"native\"\npath = \"{}\"\n\n\
         [[source]]\nformat = \"zsh\"\npath = \"{}/zsh_history\"\n",
        logs.display(),
        logs.display()
    );
    let native: Vec<String> = native_lines("k9", 400);
    let zsh: Vec<String> = (0..300)
        .map(|i| {
            if i % 10 == 0 {
                format!(
                    ": {}:0;for f in *.rs; do \\\n  rustfmt $f; done",
                    1_700_000_000 + i * 60
                )
            } else {
                format!(
                    ": {}:1;git diff --stat HEAD~{}",
                    1_700_000_000 + i * 60,
                    i % 4
                )
            }
        })
        .collect();
    std::fs::write(logs.join("zsh_history"), "").expect("create zsh history");
    let mut seed = 42u64;
    let mut next = |bound: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % bound
    };
    let (mut n_native, mut n_zsh) = (0usize, 0usize);
    let mut daemon = daemon_with_sources(&env, &config);
    for round in 0..20 {
        // Logs grow while the daemon reads them …
        for _ in 0..(5 + next(20)) {
            if n_native < native.len() {
                append(
                    &logs.join("agent.jsonl"),
                    format!("{}\n", native[n_native]).as_bytes(),
                );
                n_native += 1;
            }
            if n_zsh < zsh.len() {
                append(
                    &logs.join("zsh_history"),
                    format!("{}\n", zsh[n_zsh]).as_bytes(),
                );
                n_zsh += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(next(40)));
        // … and it dies without warning, at a random moment.
        daemon.signal(Signal::SIGKILL);
        daemon.wait_exit();
        if round < 19 {
            daemon = daemon_with_sources(&env, &config);
        }
    }
    for line in &native[n_native..] {
        append(&logs.join("agent.jsonl"), format!("{line}\n").as_bytes());
    }
    for line in &zsh[n_zsh..] {
        append(&logs.join("zsh_history"), format!("{line}\n").as_bytes());
    }
    let daemon = daemon_with_sources(&env, &config);
    let expected_state = env.path().join("expected");
    oneshot(
        &env,
        &expected_state,
        &["--format", "native"],
        &[&logs.join("agent.jsonl")],
    );
    oneshot(
        &env,
        &expected_state,
        &["--format", "zsh"],
        &[&logs.join("zsh_history")],
    );
    let expected = stored(&env, &expected_state);
    assert_eq!(expected.len(), 700);
    wait_until_equal(&env, &env.state(), &expected, &daemon);
}

#[test]
fn a_reload_that_adds_a_source_starts_reading_it() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    append(
        &logs.join("agent.jsonl"),
        native_lines("reloaded", 6)
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .as_bytes(),
    );
    // Start with an ingest table but no source of ours: nothing of the log is read.
    let config = env.write_config("[ingest]\ndebounce_ms = 20\n");
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(&config);
    let daemon = Daemon::start(&env, cmd);
    assert!(stored(&env, &env.state()).is_empty());

    env.write_config(&format!(
        "[ingest]\ndebounce_ms = 20\n\n[[source]]\nformat = \"native\"\npath = \"{}\"\n",
        logs.display()
    ));
    env.cli().arg("reload").assert().success();
    let expected_state = env.path().join("expected");
    oneshot(
        &env,
        &expected_state,
        &["--format", "native"],
        &[&logs.join("agent.jsonl")],
    );
    let expected = stored(&env, &expected_state);
    assert_eq!(expected.len(), 6);
    wait_until_equal(&env, &env.state(), &expected, &daemon);
}

// ---------------------------------------------------------------------------------------------
// An action's identity (issue 28): where it was read — the file generation and the place in
// it — or the agent's own call id; never (session, byte offset), which two files share.

/// One Bash call of a Claude Code session and its result (two lines), as the agent writes
/// them. Every `tag` of the same length gives lines of the same lengths, so two files written
/// with different tags put their calls at the same byte offsets. `agent`: a sub-agent's (or a
/// compaction's) transcript, whose records carry the parent's session id.
fn claude_call(session: &str, agent: Option<&str>, tag: &str, i: usize) -> String {
    let tool_id = format!("toolu_{tag}_{i:04}");
    let command = format!("cargo test -p {tag} -- case_{i:04}");
    let mut call = json!({
        "parentUuid": null, "isSidechain": agent.is_some(), "userType": "external",
        "cwd": "/home/dev/app", "sessionId": session, "version": "2.1.81", "type": "assistant",
        "message": {"id": format!("msg_{tag}_{i:04}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "tool_use", "id": tool_id, "name": "Bash",
                "input": {"command": command}}]},
        "uuid": format!("a{tag}{i:04}-0000-4000-8000-000000000000"),
        "timestamp": format!("2026-11-20T10:{:02}:{:02}.000Z", i / 60 % 60, i % 60)
    });
    let mut result = json!({
        "parentUuid": format!("a{tag}{i:04}-0000-4000-8000-000000000000"),
        "isSidechain": agent.is_some(), "userType": "external", "cwd": "/home/dev/app",
        "sessionId": session, "version": "2.1.81", "type": "user",
        "message": {"role": "user", "content": [{"tool_use_id": tool_id,
            "type": "tool_result", "content": "test result: ok", "is_error": false}]},
        "uuid": format!("u{tag}{i:04}-0000-4000-8000-000000000000"),
        "timestamp": format!("2026-11-20T10:{:02}:{:02}.500Z", i / 60 % 60, i % 60)
    });
    if let Some(agent) = agent {
        call["agentId"] = json!(agent);
        result["agentId"] = json!(agent);
    }
    format!("{call}\n{result}\n")
}

/// The command of every stored action, in the store's order (session, then seq).
fn stored_commands(env: &TestEnv, state: &Path) -> Vec<String> {
    stored(env, state)
        .iter()
        .map(|a| a["input"]["command"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Panics unless `got` holds each of `expected` exactly once (and nothing else).
fn assert_each_once(got: &[String], expected: &[String]) {
    let mut sorted = got.to_vec();
    sorted.sort();
    let mut dups: Vec<&String> = sorted
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| &w[0])
        .collect();
    dups.dedup();
    let missing: Vec<&String> = expected.iter().filter(|c| !got.contains(c)).collect();
    let extra: Vec<&String> = got.iter().filter(|c| !expected.contains(c)).collect();
    assert!(
        dups.is_empty() && missing.is_empty() && extra.is_empty() && got.len() == expected.len(),
        "stored {} actions for {} commands: {} missing (first {:?}), {} stored twice (first \
         {:?}), {} unexpected (first {:?})",
        got.len(),
        expected.len(),
        missing.len(),
        missing.first(),
        dups.len(),
        dups.first(),
        extra.len(),
        extra.first()
    );
}

fn report_of<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["files"]
        .as_array()
        .and_then(|files| {
            files.iter().find(|f| {
                f["path"]
                    .as_str()
                    .is_some_and(|p| Path::new(p).file_name() == Some(name.as_ref()))
            })
        })
        .unwrap_or_else(|| panic!("no report for {name}: {report}"))
}

#[test]
fn a_session_in_two_files_keeps_both_files_calls_and_a_compaction_copy_counts_once() {
    let env = TestEnv::new();
    let logs = env.path().join("projects/-home-dev-app");
    let session = "6ec78367-c548-4d6d-b80c-ec1d30cc5bb2";
    std::fs::create_dir_all(logs.join(session).join("subagents")).expect("mkdir");
    // The session's transcript, and the same session carried on in a second file (a resumed
    // or rotated log) whose calls sit at the very byte offsets of the first file's.
    let first: String = (0..20)
        .map(|i| claude_call(session, None, "aa", i))
        .collect();
    let second: String = (0..20)
        .map(|i| claude_call(session, None, "bb", i))
        .collect();
    std::fs::write(logs.join(format!("{session}.jsonl")), &first).expect("write");
    std::fs::write(logs.join("resumed.jsonl"), &second).expect("write");
    // Its compaction transcript: the first ten calls again, under their tool-use ids, then
    // five of its own.
    let compact = "acompact-daddd852fc06500e";
    let copy: String = (0..10)
        .map(|i| claude_call(session, Some(compact), "aa", i))
        .chain((0..5).map(|i| claude_call(session, Some(compact), "cc", i)))
        .collect();
    let copy_path = logs
        .join(session)
        .join("subagents")
        .join(format!("agent-{compact}.jsonl"));
    std::fs::write(&copy_path, &copy).expect("write");

    let state = env.path().join("state-a");
    let report = oneshot(&env, &state, &[], &[&logs]);
    assert_eq!(
        report_of(&report, "resumed.jsonl")["actions"],
        20,
        "{report}"
    );
    let expected: Vec<String> = ["aa", "bb"]
        .iter()
        .flat_map(|tag| (0..20).map(move |i| format!("cargo test -p {tag} -- case_{i:04}")))
        .chain((0..5).map(|i| format!("cargo test -p cc -- case_{i:04}")))
        .collect();
    assert_each_once(&stored_commands(&env, &state), &expected);
    // Every call's result is joined, whichever file stored the call.
    let unknown = stored(&env, &state)
        .iter()
        .filter(|a| a["ok"] != json!(true))
        .count();
    assert_eq!(unknown, 0, "calls without their result");
    // Read again: nothing new.
    let again = oneshot(&env, &state, &[], &[&logs]);
    let new: u64 = again["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["actions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(new, 0, "{again}");
    assert_each_once(&stored_commands(&env, &state), &expected);
}

#[test]
fn a_compaction_transcript_of_the_corpus_repeats_no_call() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("formats-2026/claude-code");
    let parent = dir.join("adrianstanca1__vps-config__6ec78367-c548-4d6d-b80c-ec1d30cc5bb2.jsonl");
    let copy = dir.join("adrianstanca1__vps-config__agent-acompact-daddd852fc06500e.jsonl");
    if !parent.is_file() || !copy.is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "corpus compaction pair missing under {} (required under CI=true)",
            dir.display()
        );
        eprintln!(
            "skipped: corpus compaction pair missing under {}",
            dir.display()
        );
        return;
    }
    // The distinct tool-use ids of the two files: one call, one action.
    let mut ids = std::collections::BTreeSet::new();
    for file in [&parent, &copy] {
        let text = std::fs::read_to_string(file).expect("read corpus file");
        for line in text.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            for block in record["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if block["type"] == "tool_use"
                    && let Some(id) = block["id"].as_str()
                {
                    ids.insert(id.to_owned());
                }
            }
        }
    }
    let env = TestEnv::new();
    let state = env.path().join("state");
    oneshot(
        &env,
        &state,
        &["--format", "claude-code"],
        &[&parent, &copy],
    );
    let actions = stored(&env, &state);
    let stored_ids: std::collections::BTreeSet<String> = actions
        .iter()
        .filter_map(|a| a["call_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(stored_ids, ids);
    assert_eq!(actions.len(), ids.len(), "a call stored twice");
}

/// Claude Code 2.1.81 lays a compaction transcript out as
/// `<project>/<session>/subagents/agent-acompact-<id>.jsonl` beside `agent-<id>.meta.json`: the
/// corpus pair is linked into that layout (read in place, through symlinks). Every call is the
/// parent session's, once; the meta is no log; the new record types are no problem.
#[test]
fn claude_code_2_1_layout_stores_each_call_once_as_the_parents() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("formats-2026/claude-code");
    let session = "6ec78367-c548-4d6d-b80c-ec1d30cc5bb2";
    let parent = dir.join(format!("adrianstanca1__vps-config__{session}.jsonl"));
    let copy = dir.join("adrianstanca1__vps-config__agent-acompact-daddd852fc06500e.jsonl");
    let newer = dir.join("4thehalibit__omarchy-backup__1fb5e404-604d-4a2b-baf1-3beb42a67371.jsonl");
    let env = TestEnv::new();
    let project = env.path().join("projects/-root");
    let subagents = project.join(session).join("subagents");
    std::fs::create_dir_all(&subagents).expect("mkdir");
    std::os::unix::fs::symlink(&parent, project.join(format!("{session}.jsonl"))).expect("link");
    std::os::unix::fs::symlink(
        &copy,
        subagents.join("agent-acompact-daddd852fc06500e.jsonl"),
    )
    .expect("link");
    std::fs::write(
        subagents.join("agent-acompact-daddd852fc06500e.meta.json"),
        r#"{"agentType":"general-purpose","description":"Compact the conversation"}"#,
    )
    .expect("meta");
    std::os::unix::fs::symlink(
        &newer,
        project.join("1fb5e404-604d-4a2b-baf1-3beb42a67371.jsonl"),
    )
    .expect("link");
    let state = env.path().join("state");
    let report = oneshot(&env, &state, &[], &[&env.path().join("projects")]);
    let files = report["files"].as_array().expect("files");
    let problems: u64 = files
        .iter()
        .map(|f| f["problems"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(problems, 0, "{report:#}");
    let meta = files
        .iter()
        .find(|f| {
            f["path"]
                .as_str()
                .is_some_and(|p| p.ends_with(".meta.json"))
        })
        .expect("the meta is listed");
    assert!(
        meta["skipped"]
            .as_str()
            .is_some_and(|why| why.contains("not a log")),
        "{meta:#}"
    );
    let actions = stored(&env, &state);
    let of_session: Vec<&Value> = actions.iter().filter(|a| a["session"] == session).collect();
    // Every call of the pair is the parent session's, stored once.
    let ids: std::collections::BTreeSet<&str> = of_session
        .iter()
        .filter_map(|a| a["call_id"].as_str())
        .collect();
    assert_eq!(ids.len(), of_session.len(), "a call stored twice");
    // 80 Bash calls and 94 others in the parent; the transcript repeats 170 of them.
    assert_eq!(of_session.len(), 174);
    assert!(
        actions
            .iter()
            .all(|a| a["session"] == session
                || a["session"] == "1fb5e404-604d-4a2b-baf1-3beb42a67371"),
        "a call stored under the compaction transcript's own session"
    );
    // The same pair read in the other order (the transcript first) stores the same calls.
    let state2 = env.path().join("state2");
    oneshot(&env, &state2, &["--format", "claude-code"], &[&copy]);
    oneshot(&env, &state2, &["--format", "claude-code"], &[&parent]);
    let again: std::collections::BTreeSet<String> = stored(&env, &state2)
        .iter()
        .filter_map(|a| a["call_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        again,
        ids.iter().map(|s| (*s).to_owned()).collect(),
        "the other order stores other calls"
    );
}

#[test]
fn rotated_files_are_read_as_their_log_and_compressed_ones_are_skipped_with_a_reason() {
    let env = TestEnv::new();
    let logs = env.path().join("projects/-home-dev-app");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let session = "1fb5e404-604d-4a2b-baf1-3beb42a67371";
    let older: String = (0..10)
        .map(|i| claude_call(session, None, "r1", i))
        .collect();
    let newer: String = (0..10)
        .map(|i| claude_call(session, None, "r2", i))
        .collect();
    std::fs::write(logs.join(format!("{session}.jsonl.1")), &older).expect("write");
    std::fs::write(logs.join(format!("{session}.jsonl")), &newer).expect("write");
    std::fs::write(
        logs.join(format!("{session}.jsonl.2.gz")),
        b"\x1f\x8b\x08\x00",
    )
    .expect("gz");

    let state = env.path().join("state");
    let report = oneshot(&env, &state, &[], &[&logs]);
    let rotated = report_of(&report, &format!("{session}.jsonl.1"));
    assert_eq!(rotated["format"], "claude-code", "{report}");
    assert_eq!(rotated["actions"], 10, "{report}");
    let gz = report_of(&report, &format!("{session}.jsonl.2.gz"));
    assert!(
        gz["skipped"]
            .as_str()
            .is_some_and(|why| why.contains("compressed")),
        "{report}"
    );
    // One session, in the order it was written: the rotated file's calls first.
    let commands = stored_commands(&env, &state);
    let expected: Vec<String> = ["r1", "r2"]
        .iter()
        .flat_map(|tag| (0..10).map(move |i| format!("cargo test -p {tag} -- case_{i:04}")))
        .collect();
    assert_eq!(commands, expected);
}

/// Native-format lines without call ids (their identity is their place in the file).
fn native_plain(tag: &str, range: std::ops::Range<usize>) -> String {
    range
        .map(|i| {
            format!(
                "{}\n",
                json!({"v": 1, "session": "build", "tool": "shell",
                       "input": {"command": format!("make {tag}-{i:05}")}, "ok": true})
            )
        })
        .collect()
}

fn native_commands(tag: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("make {tag}-{i:05}")).collect()
}

/// What logrotate's `copytruncate` does: copies the log to `<log>.1`, then truncates it.
fn copytruncate(log: &Path) {
    let rotated = log.with_file_name(format!(
        "{}.1",
        log.file_name().and_then(|n| n.to_str()).expect("name")
    ));
    std::fs::copy(log, &rotated).expect("copy");
    std::fs::OpenOptions::new()
        .write(true)
        .open(log)
        .and_then(|f| f.set_len(0))
        .expect("truncate");
}

#[test]
fn a_log_rotated_by_copytruncate_right_after_a_write_loses_and_repeats_nothing() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let log = logs.join("agent.jsonl");
    let state = env.path().join("state");
    append(&log, native_plain("a", 0..100).as_bytes());
    oneshot(&env, &state, &[], &[&logs]);
    assert_eq!(stored(&env, &state).len(), 100);
    // Written, rotated before it was read, and written again.
    append(&log, native_plain("a", 100..2100).as_bytes());
    copytruncate(&log);
    append(&log, native_plain("b", 0..10).as_bytes());
    oneshot(&env, &state, &[], &[&logs]);
    let mut expected = native_commands("a", 0..2100);
    expected.extend(native_commands("b", 0..10));
    let commands = stored_commands(&env, &state);
    assert_each_once(&commands, &expected);
    // In the order they were written.
    assert_eq!(commands, expected);
}

#[test]
fn a_history_rewritten_in_place_at_the_same_size_keeps_its_new_commands() {
    let env = TestEnv::new();
    let home = env.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    let history = home.join(".bash_history");
    let lines = |range: std::ops::Range<usize>| -> String {
        range
            .map(|i| format!("git log --oneline -n {i:05}\n"))
            .collect()
    };
    std::fs::write(&history, lines(0..100)).expect("write");
    let state = env.path().join("state");
    oneshot(&env, &state, &[], &[&history]);
    assert_eq!(stored(&env, &state).len(), 100);
    // HISTFILESIZE=100: the shell drops the 30 oldest lines and appends its 30 new ones,
    // rewriting the file in place; it keeps its size.
    let before = std::fs::metadata(&history).expect("stat").len();
    {
        use std::io::{Seek, Write};
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&history)
            .expect("open");
        file.seek(std::io::SeekFrom::Start(0)).expect("seek");
        file.write_all(lines(30..130).as_bytes()).expect("rewrite");
    }
    assert_eq!(std::fs::metadata(&history).expect("stat").len(), before);
    let report = oneshot(&env, &state, &[], &[&history]);
    assert_eq!(
        report_of(&report, ".bash_history")["actions"],
        30,
        "{report}"
    );
    let expected: Vec<String> = (0..130)
        .map(|i| format!("git log --oneline -n {i:05}"))
        .collect();
    assert_each_once(&stored_commands(&env, &state), &expected);
}

/// Waits until the daemon has stored each of `expected` once (and nothing else).
fn wait_for_each_once(env: &TestEnv, daemon: &Daemon, expected: &[String]) {
    let deadline = Instant::now() + PATIENCE;
    let mut want = expected.to_vec();
    want.sort();
    loop {
        let mut got = stored_commands(env, &env.state());
        got.sort();
        if got == want {
            return;
        }
        if Instant::now() > deadline {
            eprintln!("daemon log:\n{}", daemon.log());
            assert_each_once(&got, expected);
            panic!("stored what was expected only after the deadline");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_daemon_follows_a_copytruncate_right_after_a_write_and_names_compressed_rotations() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let daemon = daemon_with_sources(
        &env,
        &format!(
            "[ingest]\ndebounce_ms = 20\n\n[[source]]\nformat = \"native\"\npath = \"{}\"\n",
            logs.display()
        ),
    );
    let log = logs.join("agent.jsonl");
    append(&log, native_plain("a", 0..100).as_bytes());
    wait_for_each_once(&env, &daemon, &native_commands("a", 0..100));
    // A burst of writes, rotated by copytruncate before the daemon has read it, and the log
    // written on at once; logrotate's `compress` left an older rotation beside it.
    append(&log, native_plain("a", 100..2100).as_bytes());
    copytruncate(&log);
    append(&log, native_plain("b", 0..10).as_bytes());
    std::fs::write(logs.join("agent.jsonl.2.gz"), b"\x1f\x8b\x08\x00\x00\x00").expect("gz");
    let mut expected = native_commands("a", 0..2100);
    expected.extend(native_commands("b", 0..10));
    wait_for_each_once(&env, &daemon, &expected);
    // In the order they were written.
    assert_eq!(stored_commands(&env, &env.state()), expected);

    let sources = env
        .cli()
        .args(["sources"])
        .output()
        .expect("toolsmith sources");
    let text = String::from_utf8_lossy(&sources.stdout);
    assert!(
        text.contains("agent.jsonl.2.gz") && text.contains("compressed"),
        "{text}"
    );
}

#[test]
fn a_full_disk_while_the_daemon_ingests_is_shown_and_nothing_is_lost_once_space_is_back() {
    if !nix::unistd::Uid::effective().is_root() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "a full disk is made with a tmpfs of its own, which needs root (CI runs as root)"
        );
        eprintln!("skipped: a full disk is made with a tmpfs of its own, which needs root");
        return;
    }
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let config = env.write_config(&format!(
        "[ingest]\ndebounce_ms = 20\n\n[[source]]\nformat = \"native\"\npath = \"{}\"\n",
        logs.display()
    ));
    // The state directory is a small file system of its own (a tmpfs, in a mount namespace of
    // the daemon's own), so that filling it fills nothing else.
    let mut cmd = std::process::Command::new("unshare");
    env.apply(&mut cmd);
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        "mount -t tmpfs -o size=16m toolsmith-full \"$1\" && shift && exec \"$@\"",
        "sh",
    ])
    .arg(env.state())
    .arg(env!("CARGO_BIN_EXE_toolsmithd"))
    .arg("--state")
    .arg(env.state())
    .arg("--config")
    .arg(&config);
    let daemon = Daemon::start(&env, cmd);
    let pid = daemon.pid().to_string();
    // Commands run where the daemon's state directory is.
    let inside = |program: &Path, args: &[&str]| {
        let mut cmd = std::process::Command::new("nsenter");
        env.apply(&mut cmd);
        cmd.args(["-t", &pid, "-m", "--"]).arg(program).args(args);
        cmd.output().expect("nsenter")
    };
    let cli = Path::new(env!("CARGO_BIN_EXE_toolsmith"));
    let state = env.state().display().to_string();
    let commands = || -> Vec<String> {
        let out = inside(
            cli,
            &["--state", &state, "actions", "--json", "--limit", "100000"],
        );
        serde_json::from_slice::<Vec<Value>>(&out.stdout)
            .unwrap_or_default()
            .iter()
            .map(|a| a["input"]["command"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + PATIENCE;
        while !done() {
            assert!(
                Instant::now() < deadline,
                "{what} did not happen; daemon log:\n{}",
                daemon.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let lines = |tag: &str, range: std::ops::Range<usize>| -> String {
        range
            .map(|i| {
                format!(
                    "{}\n",
                    json!({"v": 1, "session": "build", "tool": "shell",
                           "input": {"command": format!("make {tag}-{i:05}")}, "ok": false,
                           "output": format!("error {i}: {}", "x".repeat(600))})
                )
            })
            .collect()
    };
    let log = logs.join("agent.jsonl");
    append(&log, lines("a", 0..100).as_bytes());
    wait_for("the first 100 actions stored", &|| commands().len() == 100);

    // The disk fills up; the agent goes on writing.
    let filler = env.state().join("filler");
    let fill = format!("cat /dev/zero > '{}'", filler.display());
    inside(Path::new("/bin/sh"), &["-c", &fill]);
    append(&log, lines("a", 100..1100).as_bytes());
    let status = || {
        let out = inside(cli, &["--state", &state, "status", "--json"]);
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    wait_for("a write failure counted by status", &|| {
        status()["counters"]["ingest"]["write_failures"]
            .as_u64()
            .is_some_and(|n| n > 0)
    });
    let ingest = status()["counters"]["ingest"].clone();
    assert!(
        ingest["last_write_failure"]
            .as_str()
            .is_some_and(|words| words.contains("full")),
        "{ingest}"
    );
    let text = |args: &[&str]| {
        let mut all = vec!["--state", state.as_str()];
        all.extend_from_slice(args);
        String::from_utf8_lossy(&inside(cli, &all).stdout).into_owned()
    };
    let shown = text(&["status"]);
    assert!(shown.contains("batches not stored"), "{shown}");
    let shown = text(&["sources"]);
    assert!(shown.contains("batches not stored"), "{shown}");

    // Space comes back: everything is read, once, without another write to the log.
    inside(Path::new("/bin/rm"), &["-f", &filler.display().to_string()]);
    let mut expected = native_commands_of(&lines("a", 0..1100));
    expected.sort();
    wait_for("every action stored once space was back", &|| {
        let mut got = commands();
        got.sort();
        got == expected
    });
    assert_eq!(status()["counters"]["ingest"]["retrying"], 0);
}

/// The commands of native-format lines.
fn native_commands_of(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["input"]["command"].as_str().map(str::to_owned))
        .collect()
}

/// Each file's `results` and the total count every result stored with its call: one its call's
/// record carries, one joined to a call stored before, and one that waited (in an earlier file)
/// for its call — the last two were missed, and a result on its call's own line never counted.
#[test]
fn every_result_stored_is_counted_once_whichever_record_or_file_brings_it() {
    let env = TestEnv::new();
    let state = env.path().join("counted");
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("logs dir");
    // Read first (sorted): c1's result, before its call.
    std::fs::write(
        logs.join("a.jsonl"),
        json!({"v": 1, "session": "s", "call_id": "c1", "ok": true, "exit_code": 0,
               "output": "built"})
        .to_string()
            + "\n",
    )
    .expect("write a");
    let b = [
        json!({"v": 1, "session": "s", "tool": "shell", "call_id": "c1",
               "input": {"command": "cargo build"}}),
        json!({"v": 1, "session": "s", "tool": "shell", "input": {"command": "cargo test"},
               "ok": false, "exit_code": 101, "output": "1 failed"}),
        json!({"v": 1, "session": "s", "tool": "shell", "call_id": "c2",
               "input": {"command": "git status"}}),
        json!({"v": 1, "session": "s", "call_id": "c2", "ok": true, "exit_code": 0,
               "output": "clean"}),
        json!({"v": 1, "session": "s", "tool": "shell", "call_id": "c3",
               "input": {"command": "sleep 100"}}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect::<String>();
    std::fs::write(logs.join("b.jsonl"), b).expect("write b");
    let report = oneshot(&env, &state, &["--format", "native"], &[&logs]);
    let counts = |name: &str| {
        let file = report_of(&report, name);
        (file["actions"].as_u64(), file["results"].as_u64())
    };
    assert_eq!(counts("a.jsonl"), (Some(0), Some(0)), "{report}");
    // c1's (waited in a.jsonl), the failed test's (its own line) and c2's (a later line); c3
    // has none yet.
    assert_eq!(counts("b.jsonl"), (Some(4), Some(3)), "{report}");
    let with_result = stored(&env, &state)
        .iter()
        .filter(|a| !a["ok"].is_null())
        .count();
    assert_eq!(with_result, 3);

    // The words say the same.
    std::fs::remove_dir_all(&state).expect("fresh store");
    let out = env
        .cli_at(&state)
        .args(["ingest", "--format", "native"])
        .arg(&logs)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("2 files, 0.0 MiB: 4 new actions, 3 results stored, 0 problems"),
        "{text}"
    );
    let b_row: Vec<&str> = text
        .lines()
        .find(|l| l.ends_with("b.jsonl"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(
        b_row[..8],
        [
            "native", "4", "new", "actions", "3", "results", "0", "problems"
        ],
        "{text}"
    );

    // c3's result, in a file read later, joins the call stored before: counted there.
    std::fs::write(
        logs.join("c.jsonl"),
        json!({"v": 1, "session": "s", "call_id": "c3", "ok": true, "exit_code": 0,
               "output": ""})
        .to_string()
            + "\n",
    )
    .expect("write c");
    let report = oneshot(&env, &state, &["--format", "native"], &[&logs]);
    let file = report_of(&report, "c.jsonl");
    assert_eq!(
        (file["actions"].as_u64(), file["results"].as_u64()),
        (Some(0), Some(1))
    );
}

/// On real logs whose results ride on their calls' records (SWE-agent's steps), every action
/// read with its result is a result counted.
#[test]
fn results_carried_by_their_calls_records_are_counted_on_the_corpus() {
    let Some(corpus) = corpus() else { return };
    let env = TestEnv::new();
    let state = env.path().join("swe");
    let report = oneshot(&env, &state, &[], &[&corpus.join("swe-agent")]);
    let results: u64 = report["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["results"].as_u64().unwrap_or(0))
        .sum();
    let with_result = stored(&env, &state)
        .iter()
        .filter(|a| !a["ok"].is_null())
        .count() as u64;
    assert!(with_result > 0);
    assert_eq!(results, with_result, "{report}");
}

// ---------------------------------------------------------------------------------------------
// Agents that keep their sessions in SQLite (issue 31): OpenCode and Crush.

#[test]
fn oneshot_ingest_reads_the_corpus_databases_in_place() {
    let Some(corpus) = corpus() else { return };
    let opencode =
        corpus.join("formats-2026/opencode/richardaiand__aiand-portfolio-web__opencode.db");
    let crush = corpus.join("formats-2026/crush/jsanchezdaza__conecta4__crush.db");
    let set: Vec<_> = [&opencode, &crush]
        .iter()
        .flat_map(|db| ["", "-wal", "-shm"].map(|s| format!("{}{s}", db.display())))
        .collect();
    let bytes = |set: &[String]| -> Vec<Vec<u8>> {
        set.iter()
            .map(|p| std::fs::read(p).expect("corpus file"))
            .collect()
    };
    let before = bytes(&set);
    let env = TestEnv::new();
    let state = env.path().join("dbs");
    let report = oneshot(&env, &state, &[], &[&opencode, &crush]);
    assert_eq!(
        before,
        bytes(&set),
        "the corpus databases are left as they were"
    );
    let files = report["files"].as_array().expect("files");
    assert_eq!(files.len(), 2, "{report}");
    assert!(files.iter().all(|f| f["problems"] == 0), "{report}");
    let actions = stored(&env, &state);
    let bash = |source: &str| {
        actions
            .iter()
            .filter(|a| a["source"] == source && a["tool"] == "bash")
            .count()
    };
    // PROVENANCE.md: 34 shell calls of OpenCode, 21 of Crush.
    assert_eq!(bash("opencode"), 34);
    assert_eq!(bash("crush"), 21);
    let failed = actions
        .iter()
        .find(|a| a["source"] == "crush" && a["exit_code"] == 1)
        .expect("a failed pnpm test");
    assert_eq!(
        failed["input"]["command"],
        "pnpm test -- tests/draw.test.tsx"
    );
    assert_eq!(failed["ok"], false);

    // Again: nothing twice. `sources` shows both databases.
    let again = oneshot(&env, &state, &[], &[&opencode, &crush]);
    let new: u64 = again["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["actions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(new, 0);
    let out = env
        .cli_at(&state)
        .args(["sources", "--json"])
        .assert()
        .success();
    let sources: Value = serde_json::from_slice(&out.get_output().stdout).expect("sources JSON");
    for (format, total) in [("opencode", 77), ("crush", 52)] {
        let source = sources
            .as_array()
            .and_then(|s| s.iter().find(|s| s["format"] == format))
            .unwrap_or_else(|| panic!("{format} source in {sources}"));
        assert_eq!(source["files"], 1);
        assert_eq!(source["actions"], total);
        assert_eq!(source["lag_bytes"], 0);
    }
}

#[test]
fn the_daemon_follows_an_opencode_database_as_the_agent_writes_it() {
    let env = TestEnv::new();
    let dir = env.path().join("opencode");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let db = dir.join("opencode.db");
    // OpenCode's tables as toolsmith reads them (sst/opencode
    // packages/opencode/src/session/session.sql.ts), in WAL mode as OpenCode opens them.
    let agent = rusqlite::Connection::open(&db).expect("agent's connection");
    agent
        .execute_batch(
            "PRAGMA journal_mode = wal;
             CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL, parent_id TEXT);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
                 session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
                 time_updated INTEGER NOT NULL, data TEXT NOT NULL);
             INSERT INTO session VALUES ('ses_1', '/work/app', NULL);",
        )
        .expect("schema");
    let part = |id: &str, command: &str, status: &str| {
        let mut state = json!({"status": status, "input": {"command": command},
            "time": {"start": 1781676298179_i64}});
        if status == "completed" {
            state["output"] = "done\n".into();
            state["metadata"] = json!({"exit": 0});
        }
        let data = json!({"type": "tool", "tool": "bash", "callID": "c", "state": state});
        agent
            .execute(
                "INSERT INTO part VALUES (?1, 'msg_1', 'ses_1', 1, 1, ?2)
                 ON CONFLICT (id) DO UPDATE SET data = excluded.data",
                [id, &data.to_string()],
            )
            .expect("write a part");
    };
    part("prt_1", "cargo build", "completed");
    let daemon = daemon_with_sources(
        &env,
        &format!(
            "[ingest]\ndebounce_ms = 20\n\n[[source]]\nformat = \"opencode\"\npath = \"{}\"\n",
            db.display()
        ),
    );
    let wait_for = |what: &dyn Fn(&[Value]) -> bool| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let got = stored(&env, &env.state());
            if what(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "daemon stored {got:?}; log:\n{}",
                daemon.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for(&|got| got.len() == 1);
    // The agent goes on (its writes land in the -wal): a call starts, then finishes.
    part("prt_2", "cargo test", "running");
    wait_for(&|got| got.len() == 2);
    part("prt_2", "cargo test", "completed");
    let got = wait_for(&|got| got.iter().all(|a| a["ok"] == true));
    let commands: Vec<_> = got.iter().map(|a| a["input"]["command"].clone()).collect();
    assert_eq!(commands, [json!("cargo build"), json!("cargo test")]);
    assert!(got.iter().all(|a| a["cwd"] == "/work/app"));
}

#[test]
fn opencode_json_part_files_are_read_and_a_finished_part_joins_its_call() {
    // OpenCode before v1.2: storage/part/<messageID>/<partID>.json, rewritten as the part
    // changes (sst/opencode packages/opencode/src/session/message-v2.ts, ToolPart).
    let env = TestEnv::new();
    let dir = env.path().join("opencode/storage/part/msg_1");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("prt_1.json");
    let part = |state: Value| {
        json!({"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
            "tool": "bash", "callID": "toolu_1", "state": state})
        .to_string()
    };
    std::fs::write(
        &file,
        part(
            json!({"status": "running", "input": {"command": "npm test"},
            "time": {"start": 1750000000000_i64}}),
        ),
    )
    .expect("write");
    let state = env.path().join("state-json");
    let storage = env.path().join("opencode/storage");
    let report = oneshot(&env, &state, &[], &[&storage]);
    assert_eq!(
        report_of(&report, "prt_1.json")["format"],
        "opencode-json",
        "{report}"
    );
    let running = stored(&env, &state);
    assert_eq!(running.len(), 1);
    assert_eq!(running[0]["input"]["command"], "npm test");
    assert!(running[0]["ok"].is_null(), "{running:?}");
    std::fs::write(
        &file,
        part(
            json!({"status": "completed", "input": {"command": "npm test"},
            "output": "1 failing\n", "metadata": {"exit": 1},
            "time": {"start": 1750000000000_i64, "end": 1750000001500_i64}}),
        ),
    )
    .expect("rewrite");
    oneshot(&env, &state, &[], &[&storage]);
    let done = stored(&env, &state);
    assert_eq!(done.len(), 1, "one call: {done:?}");
    assert_eq!(done[0]["ok"], false);
    assert_eq!(done[0]["exit_code"], 1);
}

#[test]
fn the_daemon_reads_the_crush_database_of_a_project_it_has_seen() {
    let env = TestEnv::new();
    let project = env.path().join("project");
    std::fs::create_dir_all(project.join(".crush")).expect("mkdir");
    // Crush's tables as toolsmith reads them (charmbracelet/crush internal/db/migrations).
    let agent = rusqlite::Connection::open(project.join(".crush/crush.db")).expect("crush db");
    agent
        .execute_batch(
            "PRAGMA journal_mode = wal;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT);
             CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
                 role TEXT NOT NULL, parts TEXT NOT NULL default '[]', model TEXT,
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                 finished_at INTEGER, provider TEXT);
             INSERT INTO sessions VALUES ('s1', NULL);",
        )
        .expect("schema");
    let call = json!([{"type": "tool_call", "data": {"id": "c1", "name": "bash",
        "input": json!({"command": "go test ./..."}).to_string(), "finished": true}}]);
    let result = json!([{"type": "tool_result", "data": {"tool_call_id": "c1",
        "content": "ok  \tapp\t0.2s", "is_error": false}}]);
    agent
        .execute(
            "INSERT INTO messages VALUES ('m1', 's1', 'assistant', ?1, 'm', 1754457380,
                 1754457380, 1754457384, 'p'),
             ('m2', 's1', 'tool', ?2, NULL, 1754457390, 1754457390, NULL, NULL)",
            [call.to_string(), result.to_string()],
        )
        .expect("messages");
    // toolsmith has seen an agent work in the project (any agent's action there).
    let seed = env.path().join("seed.jsonl");
    std::fs::write(
        &seed,
        format!(
            "{}\n",
            json!({"v": 1, "session": "seen", "tool": "shell", "cwd": project.display().to_string(),
                   "input": {"command": "ls"}, "ok": true})
        ),
    )
    .expect("seed");
    oneshot(&env, &env.state(), &["--format", "native"], &[&seed]);
    let daemon = daemon_with_sources(&env, "[ingest]\ndebounce_ms = 20\n");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let got = stored(&env, &env.state());
        if let Some(crush) = got.iter().find(|a| a["source"] == "crush") {
            assert_eq!(crush["input"]["command"], "go test ./...");
            assert_eq!(crush["cwd"], project.display().to_string());
            assert_eq!(crush["ok"], true);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no crush action: {got:?}; log:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
