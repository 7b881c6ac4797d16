//! What a run reports: the patterns found, the figures of each phase, and a summary for the
//! command line and the daemon's log.

use serde::{Deserialize, Serialize};

use crate::mine::pattern::{Pattern, PatternKind};

/// What a run found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MineReport {
    /// Sessions read.
    pub sessions: usize,
    /// Actions read.
    pub actions: usize,
    /// Tokens (steps) they became, noise left out.
    pub tokens: usize,
    /// Actions whose command line the shell grammar rejected, or that are in another shell's
    /// language: each is one opaque step (never a tool), or none.
    pub unparsed: usize,
    /// Of those, the lines in another shell's language (PowerShell, `cmd.exe`).
    pub foreign: usize,
    /// Distinct token keys.
    pub symbols: usize,
    /// Highest action row id read: actions stored later are new to the next run.
    pub last_action: i64,
    /// How long the run took.
    pub duration_ms: u64,
    /// Whether the sequence miner hit its pattern cap.
    pub truncated: bool,
    /// Where the time went.
    pub phases_ms: Phases,
    /// The support patterns needed (see [`MineOptions::effective_support`]).
    pub min_support: u32,
    /// The occurrences that qualify a pattern seen in fewer sessions.
    pub min_occurrences: u32,
    /// The user's shell definitions (aliases, abbreviations, functions) commands were read
    /// through.
    pub shell_definitions: usize,
    /// What could not be read of the user's shell files, one note each.
    pub shell_notes: Vec<String>,
    /// The patterns, best first.
    pub patterns: Vec<Pattern>,
}

impl MineReport {
    /// Patterns of one kind.
    pub fn count(&self, kind: PatternKind) -> usize {
        self.patterns.iter().filter(|p| p.kind == kind).count()
    }

    /// The summary `toolsmith mine --json` prints and the daemon's `mine.run` returns.
    pub fn summary(&self) -> MineSummary {
        MineSummary {
            sessions: self.sessions,
            actions: self.actions,
            tokens: self.tokens,
            unparsed: self.unparsed,
            foreign: self.foreign,
            symbols: self.symbols,
            duration_ms: self.duration_ms,
            truncated: self.truncated,
            phases_ms: self.phases_ms,
            min_support: self.min_support,
            min_occurrences: self.min_occurrences,
            shell_definitions: self.shell_definitions,
            shell_notes: self.shell_notes.clone(),
            patterns: self.patterns.len(),
            folded: self
                .patterns
                .iter()
                .filter(|p| p.folded_into.is_some())
                .count(),
            kinds: KindCounts {
                sequence: self.count(PatternKind::Sequence),
                recovery: self.count(PatternKind::Recovery),
                slow: self.count(PatternKind::Slow),
            },
            top: self
                .patterns
                .iter()
                .take(10)
                .map(|p| TopPattern {
                    id: p.id.clone(),
                    kind: p.kind,
                    support: p.support,
                    score: p.score,
                    steps: p.steps_text(),
                })
                .collect(),
        }
    }
}

/// What a run did, in short: what `toolsmith mine --json` prints and the daemon's `mine.run`
/// answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MineSummary {
    /// Sessions read.
    pub sessions: usize,
    /// Actions read.
    pub actions: usize,
    /// Tokens (steps) they became.
    pub tokens: usize,
    /// Actions whose command line did not parse (one opaque step each, never a tool).
    #[serde(default)]
    pub unparsed: usize,
    /// Of those, the lines in another shell's language (PowerShell, `cmd.exe`).
    #[serde(default)]
    pub foreign: usize,
    /// Distinct token keys.
    pub symbols: usize,
    /// How long the run took.
    pub duration_ms: u64,
    /// Whether the sequence miner hit its pattern cap.
    pub truncated: bool,
    /// Where the time went.
    pub phases_ms: Phases,
    /// The support patterns needed.
    pub min_support: u32,
    /// The occurrences that qualify a pattern seen in fewer sessions.
    #[serde(default)]
    pub min_occurrences: u32,
    /// The user's shell definitions commands were read through.
    #[serde(default)]
    pub shell_definitions: usize,
    /// What could not be read of the user's shell files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shell_notes: Vec<String>,
    /// Patterns found.
    pub patterns: usize,
    /// Of which folded into another (the same habit).
    #[serde(default)]
    pub folded: usize,
    /// Patterns found, per kind.
    pub kinds: KindCounts,
    /// The ten best.
    pub top: Vec<TopPattern>,
}

/// Patterns found, per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    /// Sequences.
    pub sequence: usize,
    /// Error→recovery habits.
    pub recovery: usize,
    /// Slow operations.
    pub slow: usize,
}

/// One of a run's best patterns, in short.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopPattern {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: PatternKind,
    /// Sessions it was seen in.
    pub support: u32,
    /// Its score, 0–100.
    pub score: f64,
    /// Its steps as readable templates.
    pub steps: Vec<String>,
}

/// Milliseconds spent in each phase of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Phases {
    /// Reading and tokenizing the actions.
    pub load: u64,
    /// Mining sequences, single commands, recoveries and slow operations.
    pub mine: u64,
    /// Of which the sequence miner (with the ranking of what it streams).
    pub sequences: u64,
    /// Frequent sequences the miner explored.
    pub sequence_nodes: u64,
    /// Re-reading, aligning and scoring the best candidates.
    pub align: u64,
}
