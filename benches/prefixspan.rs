//! Speed and memory of the repeated-sequence miner (`toolsmith::mine::sequences`).
//!
//! 1. **Against Python `prefixspan`.** 20,000 synthetic sequences of 20–40 items over 500
//!    symbols, with 5 planted patterns of 4–7 items (each written, interleaved with noise, into
//!    3% of the sequences), minimum support 1% (200). The unconstrained mode and the peer
//!    (`benches/peers/prefixspan_peer.py`, timing `frequent()` alone, in its own process) run
//!    alternately, several times; medians and their ratio are printed, and the two outputs are
//!    compared pattern for pattern. Without `python3 -c 'import prefixspan'` the peer is skipped.
//! 2. **Agent-like sessions** with the daemon's defaults (gap 1, 2–8 items, closed, folded at
//!    90%, minimum support max(2, 1% of sessions)): 1,000 and 10,000 sessions of 10–500 actions
//!    (uniform), action types Zipf-distributed (exponent 1) over 300 types, and 4 workflows of
//!    3–6 actions from mid-ranked types each repeated 1–3 times in 10% of the sessions, a stray
//!    action slipped between two steps 20% of the time. Mining time (median), patterns, whether
//!    the workflows were found, heap peak during mining (a counting allocator) and the
//!    process's VmHWM. Then an incremental rerun after 100 new sessions.
//!
//! `cargo bench --bench prefixspan`. `TOOLSMITH_BENCH_REPS` changes the repetitions (default 3).

// A benchmark may panic on what it sets up itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use toolsmith::mine::sequences::{Mined, SequenceMiner, SequenceMinerConfig};

/// Counts heap bytes in use and their peak, to measure what mining allocates.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = IN_USE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the heap peak above what was in use before.
fn heap_peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = IN_USE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// SplitMix64: small, fast and deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    /// `k` distinct sorted positions below `n`.
    fn positions(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut picked = Vec::with_capacity(k);
        while picked.len() < k {
            let p = self.range(0, n - 1);
            if !picked.contains(&p) {
                picked.push(p);
            }
        }
        picked.sort_unstable();
        picked
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs[xs.len() / 2]
}

fn reps() -> usize {
    std::env::var("TOOLSMITH_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1)
}

// ---- 1. Against Python prefixspan ----

fn synthetic(rng: &mut Rng) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut db: Vec<Vec<u32>> = (0..20_000)
        .map(|_| {
            (0..rng.range(20, 40))
                .map(|_| rng.range(0, 499) as u32)
                .collect()
        })
        .collect();
    let planted: Vec<Vec<u32>> = (0..5)
        .map(|_| {
            (0..rng.range(4, 7))
                .map(|_| rng.range(0, 499) as u32)
                .collect()
        })
        .collect();
    for pattern in &planted {
        for _ in 0..db.len() * 3 / 100 {
            let seq = rng.range(0, db.len() - 1);
            let positions = rng.positions(db[seq].len(), pattern.len());
            for (&at, &item) in positions.iter().zip(pattern) {
                db[seq][at] = item;
            }
        }
    }
    (db, planted)
}

fn write_db(db: &[Vec<u32>], path: &Path) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for seq in db {
        let line: Vec<String> = seq.iter().map(u32::to_string).collect();
        writeln!(out, "{}", line.join(" "))?;
    }
    out.flush()
}

fn peer_available() -> bool {
    Command::new("python3")
        .args(["-c", "import prefixspan"])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// One timed run of the peer: `frequent()`'s own time, and the wall time with start-up.
fn run_peer(input: &Path, minsup: u32, out: &Path) -> Result<(Duration, Duration), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/prefixspan_peer.py");
    let started = Instant::now();
    let output = Command::new("python3")
        .arg(&script)
        .args(["--minsup", &minsup.to_string(), "--time", "1", "--out"])
        .arg(out)
        .arg(input)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    let wall = started.elapsed();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let seconds = stdout
        .lines()
        .find_map(|l| l.strip_prefix("seconds ")?.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("no timing in {stdout:?}"))?;
    Ok((Duration::from_secs_f64(seconds), wall))
}

fn read_peer_output(path: &Path) -> Result<BTreeMap<Vec<u32>, u32>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut patterns = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (support, items) = line
            .split_once('\t')
            .ok_or_else(|| format!("bad line {line}"))?;
        let items: Result<Vec<u32>, _> = items.split(' ').map(str::parse).collect();
        let support = support.parse().map_err(|e| format!("{line}: {e}"))?;
        patterns.insert(items.map_err(|e| format!("{line}: {e}"))?, support);
    }
    Ok(patterns)
}

fn versus_python(scratch: &Path) {
    println!("== 1. unconstrained mode vs Python prefixspan ==");
    let mut rng = Rng(2024);
    let (db, planted) = synthetic(&mut rng);
    let items: usize = db.iter().map(Vec::len).sum();
    let minsup = (db.len() / 100) as u32;
    println!(
        "{} sequences, {items} items, 500 symbols, {} planted patterns ({} items), minsup {minsup}",
        db.len(),
        planted.len(),
        planted
            .iter()
            .map(|p| p.len().to_string())
            .collect::<Vec<_>>()
            .join("/"),
    );
    let miner = match SequenceMiner::new(SequenceMinerConfig::unconstrained(minsup)) {
        Ok(miner) => miner,
        Err(e) => panic!("config: {e}"),
    };
    let mine = || match miner.mine(&db) {
        Ok(mined) => mined,
        Err(e) => panic!("mining: {e}"),
    };
    let input = scratch.join("synthetic.txt");
    let peer_out = scratch.join("synthetic.out");
    let peer = peer_available();
    if peer {
        write_db(&db, &input).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    } else {
        println!("python3 prefixspan not importable (pip install prefixspan): peer skipped");
    }
    let mut ours = Vec::new();
    let mut python = Vec::new();
    let mut python_wall = Vec::new();
    let mut last: Option<Mined> = None;
    for rep in 0..reps() {
        // Several of ours per Python run: ours is short enough for the clock's noise to matter.
        for _ in 0..5 {
            let started = Instant::now();
            let mined = mine();
            ours.push(started.elapsed());
            last = Some(mined);
        }
        if peer {
            match run_peer(&input, minsup, &peer_out) {
                Ok((inside, wall)) => {
                    println!(
                        "  rep {}: ours {:.1} ms, python frequent() {:.2} s ({:.2} s with \
                         start-up)",
                        rep + 1,
                        ours[ours.len() - 1].as_secs_f64() * 1e3,
                        inside.as_secs_f64(),
                        wall.as_secs_f64()
                    );
                    python.push(inside);
                    python_wall.push(wall);
                }
                Err(e) => {
                    println!("  peer failed: {e}");
                    break;
                }
            }
        }
    }
    let Some(mined) = last else { return };
    let ours_median = median(ours);
    println!(
        "ours: median {:.1} ms, {} patterns (longest {}), {} nodes, peak {} projection entries",
        ours_median.as_secs_f64() * 1e3,
        mined.patterns.len(),
        mined
            .patterns
            .iter()
            .map(|p| p.items.len())
            .max()
            .unwrap_or(0),
        mined.stats.nodes,
        mined.stats.peak_entries
    );
    let found = planted
        .iter()
        .filter(|p| mined.patterns.iter().any(|m| &m.items == *p))
        .count();
    println!("planted patterns found: {found}/{}", planted.len());
    if python.is_empty() {
        return;
    }
    let python_median = median(python);
    println!(
        "python: median {:.2} s in frequent() ({:.2} s with start-up and reading)",
        python_median.as_secs_f64(),
        median(python_wall).as_secs_f64()
    );
    println!(
        "ratio: {:.0}x faster (goal: 50x)",
        python_median.as_secs_f64() / ours_median.as_secs_f64()
    );
    match read_peer_output(&peer_out) {
        Ok(theirs) => {
            let ours: BTreeMap<Vec<u32>, u32> = mined
                .patterns
                .iter()
                .map(|p| (p.items.clone(), p.support))
                .collect();
            if ours == theirs {
                println!(
                    "outputs identical: {} patterns with the same supports",
                    ours.len()
                );
            } else {
                let differ = ours
                    .iter()
                    .filter(|(p, s)| theirs.get(*p) != Some(s))
                    .count()
                    + theirs
                        .iter()
                        .filter(|(p, _)| !ours.contains_key(*p))
                        .count();
                println!(
                    "OUTPUTS DIFFER: {differ} patterns ({} vs {})",
                    ours.len(),
                    theirs.len()
                );
                std::process::exit(1);
            }
        }
        Err(e) => println!("peer output unreadable: {e}"),
    }
}

// ---- 2. Agent-like sessions with the daemon's defaults ----

/// Zipf(1) over `n` ranks: the cumulative weights, for inversion by binary search.
fn zipf_cdf(n: usize) -> Vec<f64> {
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (1..=n)
        .map(|k| {
            acc += 1.0 / k as f64;
            acc
        })
        .collect();
    for c in &mut cdf {
        *c /= acc;
    }
    cdf
}

fn sample(rng: &mut Rng, cdf: &[f64]) -> u32 {
    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    cdf.partition_point(|&c| c < u).min(cdf.len() - 1) as u32
}

const WORKFLOWS: [&[u32]; 4] = [
    &[40, 41, 42],
    &[50, 43, 51, 44],
    &[60, 61, 40, 62, 63],
    &[70, 71, 72, 73, 74, 75],
];

fn agent_sessions(rng: &mut Rng, sessions: usize) -> Vec<Vec<u32>> {
    let cdf = zipf_cdf(300);
    (0..sessions)
        .map(|_| {
            let mut session: Vec<u32> =
                (0..rng.range(10, 500)).map(|_| sample(rng, &cdf)).collect();
            for workflow in WORKFLOWS {
                if !rng.chance(0.10) {
                    continue;
                }
                for _ in 0..rng.range(1, 3) {
                    let mut run = workflow.to_vec();
                    if rng.chance(0.2) {
                        let at = rng.range(1, run.len() - 1);
                        run.insert(at, sample(rng, &cdf));
                    }
                    let at = rng.range(0, session.len());
                    session.splice(at..at, run);
                }
            }
            session
        })
        .collect()
}

fn daemon_sessions() {
    println!("== 2. agent-like sessions, daemon defaults ==");
    for sessions in [1_000, 10_000] {
        let mut rng = Rng(sessions as u64);
        let db = agent_sessions(&mut rng, sessions);
        let items: usize = db.iter().map(Vec::len).sum();
        let minsup = SequenceMinerConfig::default_min_support(db.len());
        let miner = match SequenceMiner::new(SequenceMinerConfig::daemon(minsup)) {
            Ok(miner) => miner,
            Err(e) => panic!("config: {e}"),
        };
        let mut times = Vec::new();
        let mut peak = 0;
        let mut last = None;
        for _ in 0..reps() {
            let started = Instant::now();
            let (mined, heap) = heap_peak(|| miner.mine(&db));
            times.push(started.elapsed());
            peak = peak.max(heap);
            last = Some(mined.unwrap_or_else(|e| panic!("mining: {e}")));
        }
        let Some(mined) = last else { return };
        let (_, working) = heap_peak(|| miner.mine_with(&db, |_| ControlFlow::Continue(())));
        let found = WORKFLOWS
            .iter()
            .filter(|w| {
                mined
                    .patterns
                    .iter()
                    .any(|p| p.items.windows(w.len()).any(|x| x == **w))
            })
            .count();
        let by_len = (2..=8)
            .map(|k| {
                mined
                    .patterns
                    .iter()
                    .filter(|p| p.items.len() == k)
                    .count()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("/");
        let occurrences: usize = mined.patterns.iter().map(|p| p.occurrences.len()).sum();
        println!(
            "{sessions} sessions, {items} actions, minsup {minsup}: median {:.0} ms; {} patterns \
             (by length 2..8: {by_len}){}; {} nodes; workflows found {found}/{}",
            median(times).as_secs_f64() * 1e3,
            mined.patterns.len(),
            if mined.stats.truncated {
                " TRUNCATED"
            } else {
                ""
            },
            mined.stats.nodes,
            WORKFLOWS.len(),
        );
        println!(
            "  memory: input {:.1} MiB; heap peak while mining {:.1} MiB streaming the patterns \
             ({} projection entries at most), {:.1} MiB collecting them ({occurrences} \
             occurrences); process VmHWM {} MiB",
            mib(items * 4),
            mib(working),
            mined.stats.peak_entries,
            mib(peak),
            vm_hwm_kib().map_or("?".to_owned(), |k| (k / 1024).to_string())
        );
        // Reruns after new sessions: incremental vs full. The incremental path needs the same
        // minimum support, which 1% keeps over these few sessions.
        for new in [10, 100] {
            let base = &db[..db.len() - new];
            let previous = miner.mine(base).unwrap_or_else(|e| panic!("mining: {e}"));
            let started = Instant::now();
            let after = miner.mine_incremental(&db, previous);
            let incremental = started.elapsed();
            let after = after.unwrap_or_else(|e| panic!("mining: {e}"));
            assert_eq!(after.patterns, mined.patterns, "incremental result differs");
            println!(
                "  rerun after {new} new sessions: incremental {:.0} ms ({} nodes), same result",
                incremental.as_secs_f64() * 1e3,
                after.stats.nodes
            );
        }
    }
}

fn main() {
    let scratch: PathBuf =
        std::env::temp_dir().join(format!("toolsmith-prefixspan-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap_or_else(|e| panic!("{}: {e}", scratch.display()));
    let started = Instant::now();
    versus_python(&scratch);
    daemon_sessions();
    let _ = std::fs::remove_dir_all(&scratch);
    println!("total {:.1} s", started.elapsed().as_secs_f64());
}
