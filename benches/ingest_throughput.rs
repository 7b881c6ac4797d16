//! Ingest throughput and latency.
//!
//! 1. Throughput: ~200 MB of Claude Code JSONL, built by repeating the corpus sessions with fresh
//!    session and tool ids, ingested end to end into SQLite (framing, parsing, redaction,
//!    capping, storing), beside a bare `serde_json` parse of the same bytes — alternating the
//!    two in one run and quoting medians and their ratio.
//!    Then Kimi CLI, Cline and Cursor CLI sessions of the same volume (the corpus's real ones
//!    copied with fresh ids in each agent's layout), end to end, beside Claude Code's figure;
//!    likewise Gemini CLI's.
//! 2. Latency: the daemon tails a native log; a line is appended and the time until the action
//!    can be read from the store is measured, many times; p50 / p99 / max.
//! 3. Rules cost (issue 32's secret-redaction rules): with
//!    `TOOLSMITH_BENCH_BASELINE=<a release toolsmith built before the rules, or its directory>`,
//!    the same Claude Code input, and Codex and Gemini CLI corpus sessions copied to the same
//!    volume, are ingested through the CLI (`toolsmith ingest --format F FILES` into a fresh
//!    state directory) by that binary and by this build's, the two alternating, 5 rounds each;
//!    medians and the ratio after/before are printed against the goal (the rules cost at most
//!    10% of end-to-end throughput: ratio ≥ 0.90). Without the variable it says how to run it.
//!
//! `cargo bench --bench ingest_throughput` (set `TOOLSMITH_BENCH_MB` to change the size;
//! `TOOLSMITH_BENCH_ONLY=e2e`, `bare`, `latency` or `rules` runs one part alone, e.g. under a
//! profiler).

// A benchmark may panic on what it sets up itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use toolsmith::ingest::oneshot;
use toolsmith::ingest::reader::ReadOptions;
use toolsmith::store::Store;

fn corpus() -> Option<PathBuf> {
    let path = std::env::var_os("TOOLSMITH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if path.join("claude-code").is_dir() {
        return Some(path);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        eprintln!("corpus not found at {}", path.display());
        std::process::exit(1);
    }
    println!("corpus not found at {}: skipped", path.display());
    None
}

/// Writes copies of the corpus sessions, each with fresh session and tool ids, until `target`
/// bytes are written. Returns the files and their total size.
fn build_input(corpus: &Path, dir: &Path, target: u64) -> (Vec<PathBuf>, u64) {
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(corpus.join("claude-code")).expect("read corpus") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read session");
        let session = text
            .split("\"sessionId\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("none")
            .to_owned();
        sources.push((text, session));
    }
    sources.sort();
    let (mut files, mut total, mut copy) = (Vec::new(), 0u64, 0u64);
    while total < target {
        for (text, session) in &sources {
            let fresh = format!("{session:.24}-{copy:012}");
            let body = text
                .replace(session.as_str(), &fresh)
                .replace("\"toolu_", &format!("\"toolu_c{copy}_"));
            let path = dir.join(format!("{fresh}.jsonl"));
            std::fs::write(&path, &body).expect("write copy");
            total += body.len() as u64;
            files.push(path);
            copy += 1;
        }
    }
    (files, total)
}

fn bare_parse(files: &[PathBuf]) -> (Duration, u64) {
    let start = Instant::now();
    let mut values = 0u64;
    for file in files {
        let bytes = std::fs::read(file).expect("read");
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if serde_json::from_slice::<serde_json::Value>(line).is_ok() {
                values += 1;
            }
        }
    }
    (start.elapsed(), values)
}

fn end_to_end(files: &[PathBuf], scratch: &Path, round: usize, format: &str) -> (Duration, u64) {
    let db = scratch.join(format!("round-{round}.db"));
    let store = Store::open(&db).expect("open store");
    let options = ReadOptions {
        complete: true,
        ..ReadOptions::default()
    };
    let start = Instant::now();
    let reports = oneshot::ingest_paths(&store, files, Some(format), &options).expect("ingest");
    let elapsed = start.elapsed();
    drop(store);
    let _ = std::fs::remove_file(&db);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(scratch.join(format!("round-{round}.db{suffix}")));
    }
    (elapsed, reports.iter().map(|r| r.actions).sum())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

fn throughput(corpus: &Path) {
    let mb: u64 = std::env::var("TOOLSMITH_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input");
    std::fs::create_dir_all(&input).expect("mkdir");
    let (files, bytes) = build_input(corpus, &input, mb << 20);
    let size_mb = bytes as f64 / 1e6;
    println!(
        "input: {} Claude Code sessions, {size_mb:.1} MB (corpus sessions with fresh ids)",
        files.len()
    );
    let only = std::env::var("TOOLSMITH_BENCH_ONLY").unwrap_or_default();
    if only == "rules" {
        rules_cost(corpus, &files, bytes, dir.path());
        return;
    }
    let (mut bare, mut e2e) = (Vec::new(), Vec::new());
    let mut actions = 0;
    for round in 0..3 {
        if only != "e2e" {
            let (t, _) = bare_parse(&files);
            bare.push(size_mb / t.as_secs_f64());
        }
        if only != "bare" {
            let (t, n) = end_to_end(&files, dir.path(), round, "claude-code");
            e2e.push(size_mb / t.as_secs_f64());
            actions = n;
        }
    }
    let (bare, e2e) = (median(bare), median(e2e));
    println!("bare serde_json::Value parse: {bare:>7.1} MB/s (median of 3)");
    println!(
        "end to end into SQLite:       {e2e:>7.1} MB/s (median of 3), {actions} actions per run"
    );
    println!(
        "ratio end-to-end / bare parse: {:.2} (goal ≥ 0.33; absolute goal ≥ 100 MB/s)",
        e2e / bare
    );
    if only != "bare" {
        gemini_throughput(corpus, dir.path(), bytes, e2e);
        readers_2026(corpus, bytes, dir.path(), e2e);
    }
    if only.is_empty() || only == "db" {
        databases(bytes, dir.path());
    }
    if only.is_empty() {
        rules_cost(corpus, &files, bytes, dir.path());
    }
}

/// Gemini CLI sessions of the same volume as the Claude Code input: the corpus sessions
/// (formats-2026/gemini-cli, with their messages written again as Gemini CLI does) copied with
/// fresh session ids, ingested end to end; printed beside Claude Code's figure.
fn gemini_throughput(corpus: &Path, scratch: &Path, target: u64, claude: f64) {
    let dir = scratch.join("gemini");
    let (files, total) = gemini_input(corpus, &dir, target);
    let size_mb = total as f64 / 1e6;
    let options = ReadOptions {
        complete: true,
        ..ReadOptions::default()
    };
    let (mut rates, mut actions) = (Vec::new(), 0);
    for round in 0..3 {
        let db = dir.join(format!("round-{round}.db"));
        let store = Store::open(&db).expect("open store");
        let start = Instant::now();
        let reports =
            oneshot::ingest_paths(&store, &files, Some("gemini-cli"), &options).expect("ingest");
        rates.push(size_mb / start.elapsed().as_secs_f64());
        actions = reports.iter().map(|r| r.actions).sum::<u64>();
        drop(store);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.join(format!("round-{round}.db{suffix}")));
        }
    }
    println!(
        "Gemini CLI end to end:        {:>7.1} MB/s (median of 3), {actions} actions per run, \
         {} sessions, {size_mb:.1} MB (Claude Code: {claude:.1} MB/s)",
        median(rates),
        files.len()
    );
}

/// Copies of the corpus's Gemini CLI sessions (formats-2026/gemini-cli) with fresh session ids,
/// written into `dir` until `target` bytes; the files and their total size.
fn gemini_input(corpus: &Path, dir: &Path, target: u64) -> (Vec<PathBuf>, u64) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(corpus.join("formats-2026/gemini-cli")).expect("read corpus") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read session");
        let session = text
            .split("\"sessionId\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("none")
            .to_owned();
        sources.push((text, session));
    }
    sources.sort();
    let (mut files, mut total, mut copy) = (Vec::new(), 0u64, 0u64);
    while total < target {
        for (text, session) in &sources {
            let fresh = format!("{session:.24}-{copy:012}");
            let body = text.replace(&format!("\"{session}\""), &format!("\"{fresh}\""));
            let path = dir.join(format!("session-{fresh}.jsonl"));
            std::fs::write(&path, &body).expect("write copy");
            total += body.len() as u64;
            files.push(path);
            copy += 1;
        }
    }
    (files, total)
}

/// Kimi CLI, Cline and Cursor CLI on the same volume as the Claude Code case: the corpus's real
/// session of each, copied with fresh ids into its agent's own layout until as many bytes, each
/// ingested end to end; printed beside Claude Code's figure.
fn readers_2026(corpus: &Path, target: u64, scratch: &Path, claude_code: f64) {
    let dir = corpus.join("formats-2026");
    let cases = [
        (
            "kimi-cli",
            "kimi-cli/youngstunners88__ihhashi__3951a8af-d393-44a8-a19f-057bbdf8cb1c__wire.jsonl",
            // The ids' values (`"id": "tool_…"`, `"tool_call_id": "tool_…"`), not the key.
            ": \"tool_",
        ),
        (
            "cline",
            "cline/mike4567__MRA04242026__api_conversation_history.json",
            "\"tooluse_",
        ),
        (
            "cursor",
            "cursor/LAF-US__IDAHO-VAULT__35a82dfe-d4ab-4238-8135-22c978781bca.jsonl",
            "",
        ),
    ];
    for (format, file, id_prefix) in cases {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
            println!("{format}: {file} not in the corpus: skipped");
            continue;
        };
        let input = scratch.join(format);
        let (mut files, mut total, mut copy) = (Vec::new(), 0u64, 0u64);
        while total < target {
            let id = format!("{copy:08x}-0000-4000-8000-{copy:012x}");
            let body = if id_prefix.is_empty() {
                text.clone()
            } else {
                text.replace(id_prefix, &format!("{id_prefix}c{copy}_"))
            };
            let path = match format {
                "kimi-cli" => input.join("sessions/0a1b2c3d").join(&id).join("wire.jsonl"),
                "cline" => input
                    .join("tasks")
                    .join(&id)
                    .join("api_conversation_history.json"),
                _ => input
                    .join("agent-transcripts")
                    .join(&id)
                    .join(format!("{id}.jsonl")),
            };
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, &body).expect("write copy");
            total += body.len() as u64;
            files.push(path);
            copy += 1;
        }
        let size_mb = total as f64 / 1e6;
        let (mut rates, mut actions) = (Vec::new(), 0);
        for round in 0..3 {
            let (t, n) = end_to_end(&files, scratch, round, format);
            rates.push(size_mb / t.as_secs_f64());
            actions = n;
        }
        println!(
            "{format:<9} end to end into SQLite: {:>7.1} MB/s (median of 3) on {size_mb:.1} MB, \
             {} files, {actions} actions per run; Claude Code {claude_code:.1} MB/s",
            median(rates),
            files.len()
        );
        let _ = std::fs::remove_dir_all(&input);
    }
}

/// An output of a shell call, of the size agents' outputs run to (about 1.5 KB).
fn output_text(n: u64) -> String {
    (0..24)
        .map(|i| format!("line {i} of call {n}: compiling crate-{i} v0.{n}.0 (/work/app)\n"))
        .collect()
}

/// An OpenCode database (the `part` and `session` tables of sst/opencode
/// `packages/opencode/src/session/session.sql.ts`) holding about `target` bytes of part data,
/// in OpenCode's ratio of parts (per call: step-start, text, the tool part, step-finish),
/// every tool part a completed bash call. The agent's connection is returned open, as when
/// OpenCode runs: the rows stay in the WAL.
fn opencode_db(path: &Path, target: u64) -> (rusqlite::Connection, u64, u64) {
    let conn = rusqlite::Connection::open(path).expect("create db");
    conn.execute_batch(
        "PRAGMA journal_mode = wal; PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL, parent_id TEXT);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
             session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
             time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         BEGIN;",
    )
    .expect("schema");
    let (mut bytes, mut rows, mut n) = (0u64, 0u64, 0u64);
    while bytes < target {
        let session = format!("ses_{:08}", n / 50);
        if n % 50 == 0 {
            conn.execute(
                "INSERT INTO session VALUES (?1, '/work/app', NULL)",
                [&session],
            )
            .expect("session");
        }
        let out = output_text(n);
        let parts = [
            serde_json::json!({"type": "step-start", "snapshot": "4b825dc642cb6eb9a060e54bf8d69288fbee4904"}),
            serde_json::json!({"type": "text", "text": format!("Let me build the project and look at the result of step {n}."), "time": {"start": 1, "end": 2}}),
            serde_json::json!({"type": "tool", "tool": "bash", "callID": format!("functions.bash:{n}"),
                "state": {"status": "completed", "input": {"command": format!("cargo build -p crate-{n} 2>&1 | tail -n 40"), "description": "Build"},
                    "output": out, "metadata": {"output": out, "exit": 0, "description": "Build", "truncated": false},
                    "title": "Build", "time": {"start": 1781676298179_i64, "end": 1781676298190_i64}}}),
            serde_json::json!({"type": "step-finish", "reason": "tool-calls", "cost": 0.001, "tokens": {"input": 8280, "output": 9, "reasoning": 0, "cache": {"write": 0, "read": 0}}}),
        ];
        for (i, part) in parts.iter().enumerate() {
            let data = part.to_string();
            bytes += data.len() as u64;
            rows += 1;
            conn.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, 1, 1, ?4)",
                rusqlite::params![
                    format!("prt_{n:010}_{i}"),
                    format!("msg_{n:010}"),
                    session,
                    data
                ],
            )
            .expect("part");
        }
        n += 1;
    }
    conn.execute_batch("COMMIT").expect("commit");
    (conn, bytes, rows)
}

/// A Crush database (`sessions` and `messages` of charmbracelet/crush
/// `internal/db/migrations`) holding about `target` bytes of message parts: per call an
/// assistant message with its tool_call and a tool message with its result. Open, as above.
fn crush_db(path: &Path, target: u64) -> (rusqlite::Connection, u64, u64) {
    let conn = rusqlite::Connection::open(path).expect("create db");
    conn.execute_batch(
        "PRAGMA journal_mode = wal; PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT);
         CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
             parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL,
             updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT);
         BEGIN;",
    )
    .expect("schema");
    let (mut bytes, mut rows, mut n) = (0u64, 0u64, 0u64);
    while bytes < target {
        let session = format!("s{:08}", n / 50);
        if n % 50 == 0 {
            conn.execute("INSERT INTO sessions VALUES (?1, NULL)", [&session])
                .expect("session");
        }
        let call = format!("call-{n:010}");
        let input = serde_json::json!({"command": format!("pnpm test -- tests/t{n}.test.tsx"), "timeout": 600000}).to_string();
        let assistant = serde_json::json!([
            {"type": "text", "data": {"text": format!("Running the tests of step {n}.")}},
            {"type": "tool_call", "data": {"id": call, "name": "bash", "input": input, "type": "function", "finished": true}},
            {"type": "finish", "data": {"reason": "tool_use", "time": 1754457384}}
        ]);
        let result = serde_json::json!([{"type": "tool_result", "data": {"tool_call_id": call, "name": "",
            "content": format!("{}\nExit code 1\n\n<cwd>/work/app</cwd>", output_text(n)),
            "metadata": "{\"start_time\":1754457409922,\"end_time\":1754457411128}", "is_error": false}}]);
        for (i, (role, parts, finished)) in [
            ("assistant", assistant.to_string(), Some(1754457384)),
            ("tool", result.to_string(), None),
        ]
        .into_iter()
        .enumerate()
        {
            bytes += parts.len() as u64;
            rows += 1;
            conn.execute(
                "INSERT INTO messages VALUES (?1, ?2, ?3, ?4, 'm', 1754457380, 1754457384, ?5, 'p')",
                rusqlite::params![format!("{n:010}-{i}"), session, role, parts, finished],
            )
            .expect("message");
        }
        n += 1;
    }
    conn.execute_batch("COMMIT").expect("commit");
    (conn, bytes, rows)
}

/// OpenCode's and Crush's databases of the same volume as the Claude Code input, each read end
/// to end into SQLite while its writer's connection is open: rows/s and MB/s of row data.
fn databases(bytes: u64, scratch: &Path) {
    let options = ReadOptions {
        complete: true,
        ..ReadOptions::default()
    };
    type Build = fn(&Path, u64) -> (rusqlite::Connection, u64, u64);
    for (format, file, build) in [
        ("opencode", "opencode.db", opencode_db as Build),
        ("crush", "crush.db", crush_db as Build),
    ] {
        let dir = scratch.join(format);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let db = dir.join(file);
        let (writer, data, rows) = build(&db, bytes);
        let mut rates = Vec::new();
        let mut actions = 0;
        for round in 0..3 {
            let state = dir.join(format!("state-{round}.db"));
            let store = Store::open(&state).expect("open store");
            let start = Instant::now();
            let reports =
                oneshot::ingest_paths(&store, std::slice::from_ref(&db), Some(format), &options)
                    .expect("ingest");
            rates.push(start.elapsed().as_secs_f64());
            actions = reports.iter().map(|r| r.actions).sum::<u64>();
        }
        drop(writer);
        let secs = median(rates);
        println!(
            "{format:<8} db read end to end:  {:>7.1} MB/s, {:>9.0} rows/s (median of 3; {:.1} MB of row data in {rows} rows, {actions} actions per run)",
            data as f64 / 1e6 / secs,
            rows as f64 / secs,
            data as f64 / 1e6
        );
    }
}

/// Copies of the corpus's Codex rollouts (codex/, recent/codex/, formats-2026/codex/) with
/// fresh session ids, written into `dir` as Codex names them until `target` bytes; the files
/// and their total size. A fresh id keeps the original's first 24 characters: a UUIDv7's time,
/// which the reader compares with its turn ids, stays the same.
fn codex_input(corpus: &Path, dir: &Path, target: u64) -> (Vec<PathBuf>, u64) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut sources = Vec::new();
    for folder in ["codex", "recent/codex", "formats-2026/codex"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(folder)) else {
            continue;
        };
        for entry in entries {
            let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
            let first: serde_json::Value = text
                .lines()
                .next()
                .and_then(|l| serde_json::from_str(l).ok())
                .unwrap_or_default();
            if let Some(id) = first.pointer("/payload/id").and_then(|v| v.as_str())
                && id.len() == 36
            {
                let id = id.to_owned();
                sources.push((text, id));
            }
        }
    }
    sources.sort();
    let (mut files, mut total, mut copy) = (Vec::new(), 0u64, 0u64);
    while total < target && !sources.is_empty() {
        for (text, session) in &sources {
            let fresh = format!("{}{copy:012x}", &session[..24]);
            let body = text.replace(session.as_str(), &fresh);
            let path = dir.join(format!("rollout-2026-01-01T00-00-00-{fresh}.jsonl"));
            std::fs::write(&path, &body).expect("write copy");
            total += body.len() as u64;
            files.push(path);
            copy += 1;
        }
    }
    (files, total)
}

/// The binary `TOOLSMITH_BENCH_BASELINE` names: the file, or `toolsmith` in the directory.
fn baseline_binary() -> Option<PathBuf> {
    let named = PathBuf::from(std::env::var_os("TOOLSMITH_BENCH_BASELINE")?);
    let bin = if named.is_dir() {
        named.join("toolsmith")
    } else {
        named
    };
    assert!(
        bin.is_file(),
        "TOOLSMITH_BENCH_BASELINE: no toolsmith binary at {}",
        bin.display()
    );
    Some(bin)
}

/// CPU time (user and system) of the children waited for so far, in seconds.
fn children_cpu_secs() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid pointer to a rusage struct.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// What one CLI ingest took: wall time, the child's CPU time, and the actions it reported.
struct Run {
    wall: f64,
    cpu: f64,
    actions: u64,
}

/// One `toolsmith ingest --format FORMAT FILES` by `bin` into a fresh state directory.
fn cli_ingest(bin: &Path, format: &str, files: &[PathBuf], scratch: &Path) -> Run {
    let state = scratch.join("rules-state");
    let _ = std::fs::remove_dir_all(&state);
    let cpu = children_cpu_secs();
    let start = Instant::now();
    let out = Command::new(bin)
        .arg("--state")
        .arg(&state)
        .args(["--json", "ingest", "--format", format])
        .args(files)
        .env("HOME", scratch)
        .env("XDG_CONFIG_HOME", scratch.join("config"))
        .env("XDG_DATA_HOME", scratch.join("data"))
        .env("XDG_RUNTIME_DIR", scratch.join("run"))
        .env_remove("TOOLSMITH_CONFIG")
        .output()
        .expect("run toolsmith ingest");
    let wall = start.elapsed().as_secs_f64();
    let cpu = children_cpu_secs() - cpu;
    assert!(
        out.status.success(),
        "{} ingest --format {format} failed: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let actions = report["files"]
        .as_array()
        .map(|files| files.iter().filter_map(|f| f["actions"].as_u64()).sum())
        .unwrap_or(0);
    let _ = std::fs::remove_dir_all(&state);
    Run { wall, cpu, actions }
}

/// Issue 32's rules cost: the same inputs ingested through the CLI by a binary built before the
/// rules and by this build's, alternating, 5 rounds; medians and the ratio after/before.
fn rules_cost(corpus: &Path, claude_files: &[PathBuf], claude_bytes: u64, scratch: &Path) {
    let Some(before) = baseline_binary() else {
        println!(
            "rules cost: skipped; to measure it, build a release toolsmith before the rules and \
             run `TOOLSMITH_BENCH_BASELINE=<its directory or path> TOOLSMITH_BENCH_ONLY=rules \
             cargo bench --bench ingest_throughput`"
        );
        return;
    };
    let after = PathBuf::from(env!("CARGO_BIN_EXE_toolsmith"));
    let (codex, codex_bytes) = codex_input(corpus, &scratch.join("rules-codex"), claude_bytes);
    let (gemini, gemini_bytes) = gemini_input(corpus, &scratch.join("rules-gemini"), claude_bytes);
    let inputs = [
        ("claude-code", claude_files, claude_bytes),
        ("codex", codex.as_slice(), codex_bytes),
        ("gemini-cli", gemini.as_slice(), gemini_bytes),
    ];
    println!(
        "rules cost (issue 32): `toolsmith ingest --format F FILES` into fresh state dirs, \
         before = {}, after = {}, alternating, 5 rounds",
        before.display(),
        after.display()
    );
    const ROUNDS: usize = 5;
    // runs[side][input]: side 0 is the binary before the rules, 1 this build.
    let mut runs: Vec<Vec<Vec<Run>>> = (0..2)
        .map(|_| (0..inputs.len()).map(|_| Vec::new()).collect())
        .collect();
    for round in 0..ROUNDS {
        for (i, (format, files, _)) in inputs.iter().enumerate() {
            if files.is_empty() {
                continue;
            }
            // The two run back to back on each input, and which goes first alternates, so
            // that a change in the machine's load or a warmer cache falls on both alike.
            let order = if (round + i) % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                let bin = if side == 0 { &before } else { &after };
                runs[side][i].push(cli_ingest(bin, format, files, scratch));
            }
        }
    }
    let rate = |mb: f64, runs: &[Run], cpu: bool| {
        mb / median(
            runs.iter()
                .map(|r| if cpu { r.cpu } else { r.wall })
                .collect(),
        )
    };
    for (i, (format, files, bytes)) in inputs.iter().enumerate() {
        if files.is_empty() {
            println!("  {format:<11} no sessions in the corpus: skipped");
            continue;
        }
        let mb = *bytes as f64 / 1e6;
        let (b, a) = (rate(mb, &runs[0][i], false), rate(mb, &runs[1][i], false));
        let (bc, ac) = (rate(mb, &runs[0][i], true), rate(mb, &runs[1][i], true));
        let (nb, na) = (runs[0][i][0].actions, runs[1][i][0].actions);
        let same = if nb == na {
            String::new()
        } else {
            format!(" (NOT the same actions: before {nb})")
        };
        println!(
            "  {format:<11} {mb:>6.1} MB, {:>4} files: before {b:>6.1} MB/s, after {a:>6.1} MB/s \
             (medians of {ROUNDS}): ratio {:.2}; per CPU second {bc:.1} → {ac:.1} MB: ratio \
             {:.2}; {na} actions per run{same}",
            files.len(),
            a / b,
            ac / bc,
        );
    }
    // Each round's total over the inputs, per side.
    let total = |side: usize, cpu: bool| -> Vec<f64> {
        (0..ROUNDS)
            .map(|round| {
                runs[side]
                    .iter()
                    .filter_map(|r| r.get(round))
                    .map(|r| if cpu { r.cpu } else { r.wall })
                    .sum()
            })
            .collect()
    };
    let mb = inputs.iter().map(|(_, _, b)| *b).sum::<u64>() as f64 / 1e6;
    let (b, a) = (mb / median(total(0, false)), mb / median(total(1, false)));
    let cpu_ratio = median(total(0, true)) / median(total(1, true));
    let ratio = a / b;
    println!(
        "  all         {mb:>6.1} MB: before {b:>6.1} MB/s, after {a:>6.1} MB/s (median round \
         totals): ratio after/before {ratio:.2}, per CPU second {cpu_ratio:.2} (goal: rules \
         cost ≤ 10% of end-to-end throughput, ratio ≥ 0.90: {})",
        if ratio >= 0.90 { "met" } else { "NOT met" }
    );
}

fn latency() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let log = logs.join("agent.jsonl");
    std::fs::write(&log, "").expect("create log");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[source]]\nformat = \"native\"\npath = \"{}\"\n",
            logs.display()
        ),
    )
    .expect("config");
    let state = dir.path().join("state");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_toolsmithd"))
        .arg("--state")
        .arg(&state)
        .arg("--config")
        .arg(&config)
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stderr(Stdio::null())
        .spawn()
        .expect("start toolsmithd");
    let db = state.join("state.db");
    let deadline = Instant::now() + Duration::from_secs(20);
    let conn = loop {
        if let Ok(conn) = toolsmith::store::open_read_only(&db) {
            break conn;
        }
        assert!(Instant::now() < deadline, "daemon did not create its store");
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut samples = Vec::new();
    for i in 0..200u64 {
        let line = format!(
            "{{\"v\":1,\"session\":\"lat\",\"tool\":\"shell\",\"input\":{{\"command\":\"echo {i}\"}},\"ok\":true}}\n"
        );
        let start = Instant::now();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .expect("append");
        loop {
            let n = toolsmith::action::stored::count_actions(&conn, Some("lat")).unwrap_or(0);
            if n > i {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "line {i} never stored"
            );
            std::thread::sleep(Duration::from_micros(500));
        }
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(5 + (i % 7) * 3));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    samples.sort_by(f64::total_cmp);
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize];
    println!(
        "append → queryable (daemon, debounce 100 ms): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms over {} lines (goal p99 < 1000 ms)",
        pct(0.5),
        pct(0.99),
        pct(1.0),
        samples.len()
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let only = std::env::var("TOOLSMITH_BENCH_ONLY").unwrap_or_default();
    if only != "latency"
        && let Some(corpus) = corpus()
    {
        throughput(&corpus);
    }
    if only.is_empty() || only == "latency" {
        latency();
    }
}
