//! Background noise with the skew of a real history (issue 30): the commands a developer types
//! all day, drawn by a Zipf-like law over a vocabulary ranked by how common they are — a few
//! very frequent (`make`, `git status`, `open <file>`, `cargo build`, `ls`, `npm test`), many
//! rare — and interactive navigation (`cd X`, `vim X`, `less X`, `htop`, a pager) between
//! everything. Frequent commands then follow each other, and follow a habit's steps, often by
//! chance alone: a pair of them is a neighbour, never a habit, and no tool should come of it.
//!
//! Values come from the grammar's own kinds (paths, versions, idents, ports…), never a
//! placeholder. A vocabulary word is never an invented program ([`grammar::word`] skips them),
//! so a background line never reads as a habit's step.

use super::grammar::{Kind, Rng, value, word};

/// The background vocabulary, most frequent first: the rank is what the Zipf law weighs.
/// Each entry renders one command line with fresh values.
const VOCABULARY: &[fn(&mut Rng) -> String] = &[
    |_| "make".to_owned(),
    |_| "git status".to_owned(),
    |r| format!("open {}", value(Kind::Path, r)),
    |_| "cargo build".to_owned(),
    |_| "ls".to_owned(),
    |_| "npm test".to_owned(),
    |_| "git diff".to_owned(),
    |_| "make test".to_owned(),
    |_| "cargo test".to_owned(),
    |r| format!("hd {} | head -n 20", value(Kind::Path, r)),
    |_| "git pull".to_owned(),
    |_| "npm run dev".to_owned(),
    |_| "docker ps".to_owned(),
    |_| "cargo clippy".to_owned(),
    |r| format!("mv {} {}", value(Kind::Path, r), value(Kind::Path, r)),
    |_| "git fetch".to_owned(),
    |_| "make lint".to_owned(),
    |r| format!("grep -rn {} src/", word(r)),
    |_| "git stash".to_owned(),
    |_| "git stash pop".to_owned(),
    |_| "cargo fmt".to_owned(),
    |_| "git push".to_owned(),
    |_| "npm ci".to_owned(),
    |r| format!("python3 -m pytest -x {}", value(Kind::Path, r)),
    |_| "go test ./...".to_owned(),
    |_| "df -h".to_owned(),
    |_| "docker compose up -d".to_owned(),
    |_| "kubectl get pods".to_owned(),
    |r| format!("curl -s localhost:{}/health", value(Kind::Port, r)),
    |_| "make clean".to_owned(),
    |_| "tsc --noEmit".to_owned(),
    |_| "ruff check .".to_owned(),
    |_| "uptime".to_owned(),
    |r| format!("rm -rf {}", value(Kind::Path, r)),
    |_| "brew update".to_owned(),
    |_| "rustup update".to_owned(),
    |_| "node --version".to_owned(),
    |r| format!("journalctl -u {} -n {}", word(r), value(Kind::Count, r)),
    |_| "ps aux".to_owned(),
    |_| "free -m".to_owned(),
    |r| format!("touch {}", value(Kind::Path, r)),
    |_| "pip install -r requirements.txt".to_owned(),
    |r| format!("docker logs {}", word(r)),
    |_| "systemctl status nginx".to_owned(),
    |_| "yarn lint".to_owned(),
];

/// How many everyday commands the vocabulary holds.
pub const VOCABULARY_SIZE: usize = VOCABULARY.len();

/// Interactive navigation: a person moving around and looking, run by hand.
const NAVIGATION: &[fn(&mut Rng) -> String] = &[
    |r| format!("cd {}", word(r)),
    |_| "cd ..".to_owned(),
    |r| format!("vim {}", value(Kind::Path, r)),
    |r| format!("less {}", value(Kind::Path, r)),
    |_| "htop".to_owned(),
    |r| format!("man {}", word(r)),
    |_| "git log".to_owned(),
    |r| format!("nvim {}", value(Kind::Path, r)),
    |_| "cd -".to_owned(),
    |_| "tig".to_owned(),
];

/// The programs the vocabulary runs: an invented word is never one of them.
pub const PROGRAMS: &[&str] = &[
    "make",
    "git",
    "open",
    "cargo",
    "ls",
    "npm",
    "hd",
    "head",
    "docker",
    "mv",
    "grep",
    "python3",
    "go",
    "df",
    "kubectl",
    "curl",
    "tsc",
    "ruff",
    "uptime",
    "rm",
    "brew",
    "rustup",
    "node",
    "journalctl",
    "ps",
    "free",
    "touch",
    "pip",
    "systemctl",
    "yarn",
    "cd",
    "vim",
    "less",
    "htop",
    "man",
    "nvim",
    "tig",
];

/// The Zipf exponent: with it the first command is about a fifth of the background, the first
/// six about half, and the last ones are seen a few times in a corpus.
const ZIPF_S: f64 = 1.1;

/// Draws background lines from a stream of its own, so the habits planted and their values
/// are the same with or without it.
pub struct Background {
    rng: Rng,
    /// Cumulative Zipf weights of [`VOCABULARY`], the last one the total.
    cumulative: Vec<f64>,
}

impl Background {
    /// A background for `seed`.
    pub fn new(seed: u64) -> Background {
        let mut total = 0.0;
        let cumulative = (1..=VOCABULARY.len())
            .map(|rank| {
                total += 1.0 / (rank as f64).powf(ZIPF_S);
                total
            })
            .collect();
        Background {
            rng: Rng::new(seed ^ 0x00ba_c6f0_u64.rotate_left(40)),
            cumulative,
        }
    }

    /// The rank (0 first) of the next everyday command, by the Zipf law.
    fn rank(&mut self) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = (self.rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        self.cumulative
            .iter()
            .position(|&c| x < c)
            .unwrap_or(VOCABULARY.len() - 1)
    }

    /// One everyday command, drawn by its frequency.
    pub fn command(&mut self) -> String {
        let rank = self.rank();
        VOCABULARY[rank](&mut self.rng)
    }

    /// One of the few most frequent commands (the first six ranks, by frequency): what a
    /// person runs between two steps of a piece of work.
    pub fn frequent(&mut self) -> String {
        loop {
            let rank = self.rank();
            if rank < 6 {
                return VOCABULARY[rank](&mut self.rng);
            }
        }
    }

    /// One of the most frequent commands that is no step by hand (`open FILE` hands a file to
    /// the desktop, a wall the miner never crosses): what a person runs between two steps of
    /// a piece of work.
    pub fn frequent_work(&mut self) -> String {
        loop {
            let line = self.frequent();
            if !line.starts_with("open ") {
                return line;
            }
        }
    }

    /// An interactive move, or none: between any two things, with a fair chance.
    pub fn navigation(&mut self) -> Option<String> {
        if self.rng.chance(0.3) {
            let i = self.rng.below(NAVIGATION.len());
            Some(NAVIGATION[i](&mut self.rng))
        } else {
            None
        }
    }

    /// A stretch of `lo..=hi` everyday commands with navigation between them.
    pub fn stretch(&mut self, lo: usize, hi: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for _ in 0..self.rng.range(lo, hi) {
            lines.extend(self.navigation());
            lines.push(self.command());
        }
        lines
    }

    /// The background's own stream (for the outputs of its commands).
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// True with probability `p`, from the background's own stream.
    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.chance(p)
    }

    /// A number in `lo..=hi`, from the background's own stream.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        self.rng.range(lo, hi)
    }
}

#[test]
fn the_background_is_skewed_like_a_history() {
    use std::collections::BTreeMap;

    let mut bg = Background::new(30);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let n = 20_000;
    for _ in 0..n {
        let line = bg.command();
        let program = line.split(' ').take(2).collect::<Vec<_>>().join(" ");
        *counts.entry(program).or_default() += 1;
    }
    let share = |k: &str| counts.get(k).copied().unwrap_or(0) as f64 / n as f64;
    // A few very frequent, many rare.
    assert!(share("make") > 0.15, "{counts:?}");
    assert!(share("make") > 3.0 * share("npm test"), "{counts:?}");
    let rare = counts
        .values()
        .filter(|&&c| (c as f64) < 0.01 * n as f64)
        .count();
    assert!(rare >= 15, "{rare} rare commands: {counts:?}");
    // Every vocabulary line is one a person types: no placeholder left in it.
    for _ in 0..2000 {
        let line = bg.command();
        assert!(!line.contains('{') && !line.contains('<'), "{line}");
    }
}
