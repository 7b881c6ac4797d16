//! Accuracy and throughput of the error-template miner on the Loghub 2k datasets.
//!
//! Prints, per dataset, grouping accuracy (GA), F1 grouping accuracy (FGA) and parsing accuracy
//! (PA) of `toolsmith::mine::templates` with its one default configuration, against the original
//! Loghub ground truth (with Drain's published GA beside it) and against the Loghub-2.0 corrected
//! ground truth, then the miner's throughput over all 32,000 lines.
//!
//! Run with `cargo bench --bench loghub_accuracy`. The corpus is looked up at
//! `$TOOLSMITH_CORPUS/loghub` if that variable is set, else at `../shared/corpus/loghub` next to
//! the crate; without it the program says so and exits 0 (1 when `CI=true`).
//!
//! Metrics, as in logpai's evaluators:
//! - GA: share of lines whose predicted group is exactly (as a set of lines) one ground-truth
//!   group. Predicted groups are keyed by template text, as logpai's Drain keys its output
//!   `EventId` by a hash of the template text.
//! - FGA: F1 of precision (correct groups / predicted groups) and recall (correct groups /
//!   ground-truth groups), a group being correct under the same exact-set rule.
//! - PA: share of lines whose predicted template equals the ground truth's. Loghub-2.0's
//!   evaluator compares the strings as they are, its corrected truth having been normalized by
//!   its template-correction rules; here both sides get the rules that concern rendering only:
//!   whitespace runs become one space (rule DS), then `<*>.<*>` (DV) and `<*><*>` (CV) are folded
//!   into `<*>` until nothing changes.

// A benchmark may panic on what it sets up itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use toolsmith::mine::templates::{TemplateId, TemplateMiner, TemplateMinerConfig};

/// The 16 datasets with Drain's published GA on the original ground truth (logparser README).
const DATASETS: [(&str, f64); 16] = [
    ("HDFS", 0.998),
    ("Hadoop", 0.948),
    ("Spark", 0.920),
    ("Zookeeper", 0.967),
    ("BGL", 0.963),
    ("HPC", 0.887),
    ("Thunderbird", 0.955),
    ("Windows", 0.997),
    ("Linux", 0.690),
    ("Android", 0.911),
    ("HealthApp", 0.780),
    ("Apache", 1.000),
    ("Proxifier", 0.527),
    ("OpenSSH", 0.788),
    ("OpenStack", 0.733),
    ("Mac", 0.787),
];

/// Repetitions of the throughput measurement; the best is reported.
const REPS: usize = 20;

/// One labelled line.
pub struct Labelled {
    /// The message part of the log line (the CSV's `Content` column).
    pub content: String,
    /// Ground-truth group key.
    pub group: String,
    /// Ground-truth template.
    pub template: String,
}

/// Scores of one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scores {
    /// Lines.
    pub lines: usize,
    /// Ground-truth groups.
    pub truth_groups: usize,
    /// Predicted groups.
    pub predicted_groups: usize,
    /// Grouping accuracy.
    pub ga: f64,
    /// F1 grouping accuracy.
    pub fga: f64,
    /// Parsing accuracy.
    pub pa: f64,
}

/// Parses CSV text (RFC 4180: quoted fields may hold commas, newlines and doubled quotes;
/// records end with LF or CRLF; a last record without a newline is kept).
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut in_quotes = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => in_quotes = true,
            ',' => row.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                any = false;
            }
            _ => field.push(c),
        }
    }
    if any {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// Reads a structured CSV, taking `Content`, the group column and `EventTemplate`.
pub fn load(path: &Path, group_col: &str) -> Result<Vec<Labelled>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rows = parse_csv(&text).into_iter();
    let header = rows
        .next()
        .ok_or_else(|| format!("{}: empty", path.display()))?;
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("{}: no column {name}", path.display()))
    };
    let (c, g, t) = (col("Content")?, col(group_col)?, col("EventTemplate")?);
    rows.map(|r| {
        let get = |i: usize| {
            r.get(i)
                .cloned()
                .ok_or_else(|| format!("{}: short row", path.display()))
        };
        Ok(Labelled {
            content: get(c)?,
            group: get(g)?,
            template: get(t)?,
        })
    })
    .collect()
}

/// The miner's final template for every line, as text.
pub fn mine(cfg: &TemplateMinerConfig, lines: &[Labelled]) -> Vec<String> {
    let mut miner = TemplateMiner::new(cfg.clone());
    let ids: Vec<TemplateId> = lines.iter().map(|l| miner.add(&l.content).id).collect();
    let mut text: HashMap<TemplateId, String> = HashMap::new();
    ids.iter()
        .map(|id| {
            text.entry(*id)
                .or_insert_with(|| miner.template(*id).unwrap_or_default())
                .clone()
        })
        .collect()
}

/// Folds what Loghub-2.0's template correction calls DS, DV and CV (see the file comment).
pub fn normalize_template(t: &str) -> String {
    let mut s = t.split_whitespace().collect::<Vec<_>>().join(" ");
    loop {
        let next = s.replace("<*>.<*>", "<*>").replace("<*><*>", "<*>");
        if next == s {
            return s;
        }
        s = next;
    }
}

/// GA, FGA and PA of predicted templates against labelled lines.
pub fn score(lines: &[Labelled], predicted: &[String]) -> Scores {
    let n = lines.len();
    let mut pred_size: HashMap<&str, usize> = HashMap::new();
    for p in predicted {
        *pred_size.entry(p.as_str()).or_default() += 1;
    }
    // For each truth group: its size and the predicted groups its lines went to.
    let mut truth: HashMap<&str, (usize, HashMap<&str, usize>)> = HashMap::new();
    for (l, p) in lines.iter().zip(predicted) {
        let e = truth.entry(l.group.as_str()).or_default();
        e.0 += 1;
        *e.1.entry(p.as_str()).or_default() += 1;
    }
    let mut good_lines = 0;
    let mut good_groups = 0;
    for (size, preds) in truth.values() {
        if preds.len() == 1 {
            let (p, _) = preds.iter().next().map_or(("", &0), |(k, v)| (*k, v));
            if pred_size.get(p) == Some(size) {
                good_lines += size;
                good_groups += 1;
            }
        }
    }
    let precision = good_groups as f64 / pred_size.len().max(1) as f64;
    let recall = good_groups as f64 / truth.len().max(1) as f64;
    let fga = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let mut norm: HashMap<&str, String> = HashMap::new();
    let mut parsed_ok = 0;
    for (l, p) in lines.iter().zip(predicted) {
        let np = norm
            .entry(p.as_str())
            .or_insert_with(|| normalize_template(p))
            .clone();
        let nt = norm
            .entry(l.template.as_str())
            .or_insert_with(|| normalize_template(&l.template))
            .clone();
        if np == nt {
            parsed_ok += 1;
        }
    }
    Scores {
        lines: n,
        truth_groups: truth.len(),
        predicted_groups: pred_size.len(),
        ga: good_lines as f64 / n.max(1) as f64,
        fga,
        pa: parsed_ok as f64 / n.max(1) as f64,
    }
}

/// Where the corpus is, from `$TOOLSMITH_CORPUS` or next to the crate.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("TOOLSMITH_CORPUS") {
        Some(dir) => PathBuf::from(dir).join("loghub"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/loghub"),
    }
}

/// The original ground truth of a dataset (grouped by `EventId`).
pub fn original(dir: &Path, name: &str) -> Result<Vec<Labelled>, String> {
    load(
        &dir.join(name).join(format!("{name}_2k.log_structured.csv")),
        "EventId",
    )
}

/// The Loghub-2.0 corrected ground truth of a dataset (grouped by `EventTemplate`), if any.
pub fn loghub2(dir: &Path, name: &str) -> Option<Result<Vec<Labelled>, String>> {
    let path = dir
        .join(name)
        .join("loghub2")
        .join(format!("{name}_2k.log_structured_corrected.csv"));
    path.exists().then(|| load(&path, "EventTemplate"))
}

fn print_header(with_drain: bool) {
    print!(
        "{:<12} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7}",
        "dataset", "lines", "truth", "pred", "GA", "FGA", "PA"
    );
    if with_drain {
        print!(" {:>9} {:>7}", "Drain GA", "diff");
    }
    println!();
}

fn print_row(name: &str, s: &Scores, drain: Option<f64>) {
    print!(
        "{:<12} {:>6} {:>6} {:>6} {:>7.3} {:>7.3} {:>7.3}",
        name, s.lines, s.truth_groups, s.predicted_groups, s.ga, s.fga, s.pa
    );
    if let Some(d) = drain {
        print!(" {:>9.3} {:>+7.3}", d, s.ga - d);
    }
    println!();
}

fn print_average(rows: &[Scores], drain: Option<f64>) {
    let k = rows.len().max(1) as f64;
    let avg = |f: fn(&Scores) -> f64| rows.iter().map(f).sum::<f64>() / k;
    let ga = avg(|s| s.ga);
    print!(
        "{:<12} {:>6} {:>6} {:>6} {:>7.3} {:>7.3} {:>7.3}",
        "average",
        "",
        "",
        "",
        ga,
        avg(|s| s.fga),
        avg(|s| s.pa)
    );
    if let Some(d) = drain {
        print!(" {:>9.3} {:>+7.3}", d, ga - d);
    }
    println!();
}

fn main() -> ExitCode {
    let dir = corpus_dir();
    if !dir.is_dir() {
        println!("corpus not found at {}: skipped", dir.display());
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        return if ci {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    match run(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loghub_accuracy: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &Path) -> Result<(), String> {
    let cfg = TemplateMinerConfig::default();
    println!("toolsmith template miner on Loghub 2k ({})", dir.display());
    println!("config: {cfg:?}");
    println!(
        "input: the structured CSV's Content column (the message after the per-dataset header,\n\
         which is what Drain's log-format regex extracts in the benchmark); one config for all.\n\
         GA/FGA: predicted groups keyed by template text, as logpai's Drain keys EventId.\n\
         PA: template strings equal after whitespace runs -> one space and `<*>.<*>`, `<*><*>`\n\
         -> `<*>` (Loghub-2.0's correction rules DS, DV, CV), applied to both sides."
    );

    println!("\n== original ground truth (<D>_2k.log_structured.csv, grouped by EventId) ==");
    print_header(true);
    let mut rows = Vec::new();
    let mut all_content: Vec<Vec<Labelled>> = Vec::new();
    for (name, drain) in DATASETS {
        let lines = original(dir, name)?;
        let s = score(&lines, &mine(&cfg, &lines));
        print_row(name, &s, Some(drain));
        rows.push(s);
        all_content.push(lines);
    }
    let drain_avg = DATASETS.iter().map(|d| d.1).sum::<f64>() / DATASETS.len() as f64;
    print_average(&rows, Some(drain_avg));

    println!(
        "\n== Loghub-2.0 corrected ground truth (loghub2/<D>_2k.log_structured_corrected.csv, \
         grouped by EventTemplate) =="
    );
    print_header(false);
    let mut rows2 = Vec::new();
    for (name, _) in DATASETS {
        let Some(lines) = loghub2(dir, name) else {
            continue;
        };
        let lines = lines?;
        let s = score(&lines, &mine(&cfg, &lines));
        print_row(name, &s, None);
        rows2.push(s);
    }
    print_average(&rows2, None);

    let total: usize = all_content.iter().map(Vec::len).sum();
    let rust_run = || {
        let mut best = f64::INFINITY;
        for _ in 0..REPS {
            let start = Instant::now();
            let mut templates = 0;
            for lines in &all_content {
                let mut miner = TemplateMiner::new(cfg.clone());
                for l in lines {
                    std::hint::black_box(miner.add(&l.content));
                }
                templates += miner.len();
            }
            std::hint::black_box(templates);
            best = best.min(start.elapsed().as_secs_f64());
        }
        total as f64 / best
    };
    // The peer runs between two runs of ours, so both see the same machine load.
    let ours_before = rust_run();
    let peer = drain3_peer(dir);
    let ours_after = rust_run();
    let ours = ours_before.max(ours_after);
    println!(
        "\nthroughput: {total} lines (a fresh miner per dataset), best of {REPS}, before and \
         after the peer: {ours_before:.0} and {ours_after:.0} lines/s"
    );
    match peer {
        Some(figures) => {
            for (name, rate) in figures {
                println!(
                    "  Python drain3 ({name}): {rate:.0} lines/s; toolsmith is {:.1}x faster \
                     (goal: 20x)",
                    ours / rate
                );
            }
        }
        None => println!(
            "  Python drain3 not available (pip install drain3, or scripts/install-bench-peers.sh): \
             peer skipped"
        ),
    }
    Ok(())
}

/// Runs `benches/peers/drain3_throughput.py` on the same datasets and returns its figures
/// (configuration, lines per second), or `None` when Python or drain3 is missing.
fn drain3_peer(loghub: &Path) -> Option<Vec<(String, f64)>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/drain3_throughput.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(loghub)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let figures: Vec<(String, f64)> = text
        .lines()
        .filter_map(|line| {
            let name = line.split_once('(')?.1.split_once(')')?.0.to_owned();
            let rate = line.split(": ").last()?.split(' ').next()?.parse().ok()?;
            Some((name, rate))
        })
        .collect();
    (!figures.is_empty()).then_some(figures)
}
