//! The whole mining run on agent-like sessions, with the daemon's defaults: time and peak memory
//! of `toolsmith mine` (load and tokenize every action, mine sequences, single commands,
//! recoveries and slow operations, align and score the best, store them).
//!
//! Sessions of 10–500 actions drawn from a Zipf-distributed vocabulary of 400 commands with
//! varying arguments, with planted habits (a build–test–lint workflow, a failure and its fix,
//! a slow build) in some sessions. They are written in the native log format, ingested (not
//! timed), then mined by the release `toolsmith` binary in a child process, three times; the
//! figures are the median wall time and the child's peak resident memory (`ru_maxrss`).
//!
//! `cargo bench --bench mine_pipeline` (`TOOLSMITH_BENCH_SESSIONS=1000,10000` by default).
//! With `TOOLSMITH_BENCH_BASELINE=/path/to/an/older/toolsmith`, each round runs that binary
//! and this one in turn on the same logs (each ingested into a store of its own by its own
//! binary, since an older one refuses a newer schema), and the ratio of the medians is printed:
//! the figure a change to mining is held to.

// A benchmark may panic on what it sets up itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use toolsmith::ingest::oneshot;
use toolsmith::ingest::reader::ReadOptions;
use toolsmith::store::Store;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic, no dependency.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Cumulative Zipf(1) weights over `n` ranks.
fn zipf_cdf(n: usize) -> Vec<f64> {
    let weights: Vec<f64> = (1..=n).map(|k| 1.0 / k as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect()
}

/// The command of vocabulary entry `k`, with this occurrence's arguments.
fn command(k: usize, rng: &mut Rng) -> String {
    let n = rng.below(20);
    match k % 10 {
        0 => format!("cargo test -p crate{} -- test_{n}", k / 10),
        1 => format!("git diff --stat HEAD~{}", n % 4),
        2 => format!("rg -n fn_{n} src/mod{}", k / 10),
        3 => format!("pytest tests/test_{}.py -k case{n}", k / 10),
        4 => format!("npm run build{} -- --mode m{n}", k / 10),
        5 => format!("docker compose logs svc{} --tail {}", k / 10, 10 + n),
        6 => format!("kubectl get pods -n ns{} -l app=a{n}", k / 10),
        7 => format!("make target{} JOBS={n}", k / 10),
        8 => format!("git log --oneline -n {} -- path{}/", 5 + n, k / 10),
        _ => format!("tool{} --input file{n}.json --verbose", k / 10),
    }
}

fn line(session: &str, seq: u64, command: &str, ok: bool, output: &str, ms: u64) -> String {
    serde_json::json!({"v": 1, "session": session, "seq": seq, "cwd": "/src/app", "tool": "Bash",
        "input": {"command": command}, "ok": ok, "exit_code": i32::from(!ok),
        "output": output, "duration_ms": ms})
    .to_string()
}

/// Writes `sessions` agent-like sessions as native logs under `dir`; returns the action count.
fn write_sessions(dir: &Path, sessions: usize, seed: u64) -> usize {
    let mut rng = Rng(seed);
    let cdf = zipf_cdf(400);
    let mut actions = 0;
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(dir.join("agent.jsonl")).expect("create log"),
    );
    for s in 0..sessions {
        let id = format!("bench-{seed}-{s}");
        let len = 10 + rng.below(491) as usize;
        let mut seq = 0u64;
        let mut emit = |seq: &mut u64, c: &str, ok: bool, out: &str, ms: u64| {
            *seq += 1;
            writeln!(file, "{}", line(&id, *seq, c, ok, out, ms)).expect("write");
        };
        while seq < len as u64 {
            let roll = rng.unit();
            if roll < 0.02 {
                let p = rng.below(8);
                emit(
                    &mut seq,
                    &format!("cargo build -p pkg{p}"),
                    true,
                    "Finished",
                    3000,
                );
                emit(&mut seq, &format!("cargo test -p pkg{p}"), true, "ok", 8000);
                emit(&mut seq, "cargo clippy --all-targets", true, "", 4000);
            } else if roll < 0.03 {
                let err = "E   ModuleNotFoundError: No module named 'requests'";
                emit(&mut seq, "python -m pytest tests/", false, err, 900);
                emit(
                    &mut seq,
                    "pip install requests",
                    true,
                    "Successfully installed",
                    2500,
                );
                emit(&mut seq, "python -m pytest tests/", true, "12 passed", 1000);
            } else if roll < 0.035 {
                let ms = 60_000 + rng.below(60_000);
                emit(&mut seq, "docker build -t app .", true, "built", ms);
            } else {
                let u = rng.unit();
                let k = cdf.partition_point(|&c| c < u).min(399);
                let c = command(k, &mut rng);
                let ok = rng.below(20) != 0;
                let ms = 50 + rng.below(2000);
                emit(
                    &mut seq,
                    &c,
                    ok,
                    if ok { "ok" } else { "error: failed" },
                    ms,
                );
            }
        }
        actions += seq as usize;
    }
    file.flush().expect("flush");
    actions
}

/// Peak resident memory of the largest child waited for so far, in KiB.
fn children_max_rss_kib() -> i64 {
    // SAFETY: getrusage only writes into the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid pointer to a rusage struct.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    if rc == 0 { usage.ru_maxrss } else { -1 }
}

fn main() {
    let counts: Vec<usize> = std::env::var("TOOLSMITH_BENCH_SESSIONS")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let bin = env!("CARGO_BIN_EXE_toolsmith");
    println!("mining pipeline, daemon defaults (`toolsmith mine`), agent-like sessions");
    for sessions in counts {
        let dir = tempfile::tempdir().expect("temp dir");
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).expect("mkdir");
        let actions = write_sessions(&logs, sessions, 7 + sessions as u64);
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).expect("mkdir state");
        let store = Store::open(&state.join("state.db")).expect("store");
        let started = Instant::now();
        oneshot::ingest_paths(
            &store,
            std::slice::from_ref(&logs),
            Some("native"),
            &ReadOptions::default(),
        )
        .expect("ingest");
        let ingest_s = started.elapsed().as_secs_f64();
        drop(store);
        let baseline = std::env::var("TOOLSMITH_BENCH_BASELINE").ok();
        let baseline_state = dir.path().join("baseline-state");
        if let Some(older) = &baseline {
            // The baseline ingests the same logs itself: a store this build wrote may carry a
            // newer schema, which an older binary rightly refuses to open.
            std::fs::create_dir_all(&baseline_state).expect("mkdir");
            let out = Command::new(older)
                .arg("--state")
                .arg(&baseline_state)
                .args(["ingest", "--format", "native"])
                .arg(&logs)
                .output()
                .expect("run the baseline's toolsmith ingest");
            assert!(out.status.success(), "the baseline's ingest failed");
        }
        let mut times = Vec::new();
        let mut baseline_times = Vec::new();
        let mut baseline_phases = serde_json::Value::Null;
        let mut summary = serde_json::Value::Null;
        for _ in 0..3 {
            if let Some(older) = &baseline {
                let started = Instant::now();
                let out = Command::new(older)
                    .arg("--state")
                    .arg(&baseline_state)
                    .args(["--json", "mine"])
                    .env("HOME", dir.path())
                    .env("XDG_CONFIG_HOME", dir.path().join("config"))
                    .env("XDG_DATA_HOME", dir.path().join("data"))
                    .env("XDG_RUNTIME_DIR", dir.path().join("run"))
                    .output()
                    .expect("run the baseline's toolsmith mine");
                baseline_times.push(started.elapsed().as_secs_f64());
                assert!(out.status.success(), "the baseline's mine failed");
                let summary: serde_json::Value =
                    serde_json::from_slice(&out.stdout).unwrap_or_default();
                baseline_phases = summary["phases_ms"].clone();
            }
            let started = Instant::now();
            let out = Command::new(bin)
                .arg("--state")
                .arg(&state)
                .args(["--json", "mine"])
                .env("HOME", dir.path())
                .env("XDG_CONFIG_HOME", dir.path().join("config"))
                .env("XDG_DATA_HOME", dir.path().join("data"))
                .env("XDG_RUNTIME_DIR", dir.path().join("run"))
                .output()
                .expect("run toolsmith mine");
            times.push(started.elapsed().as_secs_f64());
            assert!(
                out.status.success(),
                "toolsmith mine failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            summary = serde_json::from_slice(&out.stdout).expect("summary JSON");
        }
        times.sort_by(f64::total_cmp);
        if !baseline_times.is_empty() {
            baseline_times.sort_by(f64::total_cmp);
            println!(
                "{sessions:>6} sessions: this build {:.2} s, baseline {:.2} s (medians of 3, \
                 alternating): ratio {:.2}; the baseline's phases {baseline_phases}",
                times[1],
                baseline_times[1],
                times[1] / baseline_times[1]
            );
        }
        let planted = summary["top"]
            .as_array()
            .map(|top| {
                top.iter()
                    .any(|p| p.to_string().contains("cargo build -p <package>"))
            })
            .unwrap_or(false);
        println!(
            "{sessions:>6} sessions, {actions:>8} actions (ingested in {ingest_s:.1} s): mined in \
             {:.2} s (median of 3; in-process {} ms: {}), peak RSS so far {:.1} MiB; min support {}, \
             {} patterns ({} sequences, {} recoveries, {} slow){}; planted build→test found: {}",
            times[1],
            summary["duration_ms"],
            summary["phases_ms"],
            children_max_rss_kib() as f64 / 1024.0,
            summary["min_support"],
            summary["patterns"],
            summary["kinds"]["sequence"],
            summary["kinds"]["recovery"],
            summary["kinds"]["slow"],
            if summary["truncated"] == true {
                ", truncated"
            } else {
                ""
            },
            planted
        );
    }
}
