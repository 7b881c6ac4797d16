//! Repeated-sequence mining: frequent sequential patterns over sessions' action sequences.
//!
//! The input is one sequence of interned symbols (`u32`) per session; the output is the patterns
//! (sequences of symbols) that occur in at least [`SequenceMinerConfig::min_support`] sessions,
//! each with its support and its leftmost occurrence in every supporting session.
//!
//! # Semantics
//! - **Occurrence.** A pattern `p₁ … pₖ` occurs in a sequence at positions `i₁ < … < iₖ` holding
//!   those symbols. With a maximum gap `g` ([`SequenceMinerConfig::max_gap`] = `Some(g)`), at most
//!   `g` other items may sit between two consecutive steps: `iⱼ₊₁ − iⱼ − 1 ≤ g`. With `None`, any
//!   number may (a plain subsequence, as in PrefixSpan).
//! - **Support** is the number of sequences (sessions) with at least one occurrence, however many
//!   they hold.
//! - **Count** is the number of occurrences that do not overlap, over all sequences: in each
//!   sequence, from left to right, the earliest-ending occurrence of each start that begins after
//!   the last one taken ends. With [`SequenceMinerConfig::min_occurrences`] = `Some(n)` and a gap
//!   limit, a pattern is also frequent when it occurs at `n` distinct starts, and reported when
//!   its count reaches `n`, whatever its support: a habit repeated often in few sessions. (The
//!   number of distinct starts only shrinks as a pattern grows, so the search prunes on it.)
//! - **Length range.** Only patterns of [`min_len`](SequenceMinerConfig::min_len) to
//!   [`max_len`](SequenceMinerConfig::max_len) items are reported, and only patterns in that
//!   range count as super-patterns below.
//! - **Super-pattern.** With a gap limit, `Q` is a super-pattern of `P` when `P` is a contiguous
//!   run of `Q`'s steps (`Q = X·P·Y`). Then every occurrence of `Q` contains one of `P`, so
//!   support can only shrink from `P` to `Q`. A step inserted *inside* `P` does not qualify:
//!   with `g = 1`, `a x b` can occur at positions 0, 2, 4, where `a b` (4 − 0 − 1 = 3 > 1)
//!   does not. Without a gap limit, `Q` is a super-pattern of `P` when `P` is a subsequence of
//!   `Q` (the usual definition).
//! - **Closed** ([`closed`](SequenceMinerConfig::closed)): `P` is dropped when a frequent
//!   super-pattern has the same support. Symbols listed in
//!   [`never_dominate`](SequenceMinerConfig::never_dominate) do not count as extending `P`:
//!   `P` is dropped only through a super-pattern one item longer whose extra item is not one of
//!   them (`a b` stays though `a b Read` or `Read a b` has its support, and `a b Read c` does
//!   not drop it either, but `a b c` with its support does). For a coding agent's sessions these are the agent's own
//!   tool calls: one that always follows a command habit would otherwise hide the habit behind
//!   a longer pattern no tool can be made of.
//! - **Folding** ([`fold_ratio`](SequenceMinerConfig::fold_ratio) = `Some(r)`): `P` is dropped
//!   when a frequent super-pattern has at least `r × support(P)` support (rounded up, so with
//!   `r = 0.9` a pattern of support 10 goes when a longer one keeps 9). With `r ≤ 1` this
//!   includes closure. A dropped pattern is always represented by a kept, longer one reached
//!   through a chain of such super-patterns.
//!
//! Both checks only need super-patterns one item longer: in either containment order, every
//! pattern between `P` and a super-pattern `Q` is frequent with a support between theirs, so if
//! some `Q` dominates `P`, the first step of the chain towards it does too. The forward check
//! (append) reads the counts the projection computes anyway. The backward check, with a gap
//! limit, scans the `g + 1` positions before each occurrence's start (prepend). Without one, it is
//! BIDE's backward-extension check: an item inserted before step `i` is supported by a sequence
//! iff it occurs between the end of the first instance of `p₁ … pᵢ₋₁` and the start of the
//! last instance of `pᵢ … pₖ`.
//!
//! [`SequenceMinerConfig::unconstrained`] (no gap limit, no closure, no folding, any length)
//! yields exactly the patterns and supports of Python `prefixspan`'s
//! `PrefixSpan(db).frequent(min_support)` (whose `maxlen` is 1000); `tests/it/prefixspan_golden.rs`
//! checks that against the package's committed outputs.
//!
//! # Algorithm
//! PrefixSpan with pseudo-projection, iterative depth-first. A pattern's projected database is a
//! list of `(sequence, start, end)` entries in one shared arena; no suffix is ever copied.
//! - Without a gap limit, one entry per sequence: the greedy leftmost instance, whose end is
//!   the earliest possible, which suffices for every extension.
//! - With a gap limit, the earliest end is not enough (in `a x x a b` with `g = 0`, `a b`
//!   extends only the second `a`), so the entries are *every* distinct `(start, end)` pair.
//!   Extending scans, for each start, the union of the windows `end + 1 ..= end + 1 + g` once,
//!   in order, so entries stay sorted and unique without sorting or hashing; starts are kept
//!   for the backward check and the evidence. The number of ends per start is bounded by
//!   `(k − 1)·g + 1` for a pattern of `k` items.
//!
//! A node is expanded in two passes over its entries: the first counts each item's support
//! (distinct sequences) and entries; the frequent items then get contiguous buckets at the end
//! of the arena, filled by the second pass. When a node's children are done, the arena is cut
//! back. The root's children (one per frequent symbol) are indexed as 4-byte positions instead,
//! and each becomes arena entries only while its subtree is mined. Symbols below the minimum
//! support are replaced by a marker before mining (they keep their position, since they count as
//! gap items) and the rest are renumbered densely, so the per-symbol counters are small flat
//! arrays. Patterns are emitted in depth-first order, which is lexicographic order of their
//! symbols, a prefix before its extensions.
//!
//! # Memory
//! Working memory is linear in the input and independent of the number of patterns: the
//! renumbered copy (4 bytes per item), the root index (4 bytes per item of a frequent symbol),
//! and the arena, which holds the projections along the current depth-first path: one symbol's
//! occurrences at the first level, then at most `g + 1` entries per parent entry at each level
//! below (12 bytes each), a level's buckets being freed when it is done. No allocation happens
//! per node. What grows with the output is the output: [`SequenceMiner::mine_with`] streams it,
//! [`SequenceMiner::mine`] collects it (12 bytes per occurrence), capped by
//! [`max_patterns`](SequenceMinerConfig::max_patterns): mining stops and says so
//! ([`MineStats::truncated`]) instead of growing without bound. Nothing is kept between runs.
//!
//! # Reruns
//! A full run on 10,000 agent-like sessions of 10–500 actions takes well under a second (see
//! `benches/prefixspan.rs`), so a full rerun is the baseline. [`SequenceMiner::mine_incremental`]
//! makes a rerun after appended sessions cheaper without changing the result: a pattern that
//! occurs in none of the new sessions keeps its support, its occurrences and (since all its
//! super-patterns occur in no new session either) its closed/folded status, so only patterns
//! occurring in a new session are re-mined (the search is pruned to them, their supports still
//! counted over all sessions) and merged with the rest of the previous result. The saving is
//! largest for small batches: frequent patterns are, by definition, in many sessions, so a batch
//! of a hundred new sessions holds most of them, and the most frequent symbols' large
//! projections are always re-scanned. It falls back to a full run when the configuration differs
//! (the default minimum support grows with the number of sessions) or the previous result was
//! truncated. Keeping per-pattern projections or counts between runs instead would cost memory
//! proportional to all frequent patterns, closed or not, for a saving a sub-second full run does
//! not call for.
//!
//! Symbols are `u32`; there must be fewer than 2³² − 1 sequences and items in all.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{ControlFlow, Range};

/// Default [`SequenceMinerConfig::max_gap`]: one stray action may sit between two steps.
pub const DEFAULT_MAX_GAP: u32 = 1;
/// Default [`SequenceMinerConfig::min_len`].
pub const DEFAULT_MIN_LEN: usize = 2;
/// Default [`SequenceMinerConfig::max_len`].
pub const DEFAULT_MAX_LEN: usize = 8;
/// Default [`SequenceMinerConfig::fold_ratio`].
pub const DEFAULT_FOLD_RATIO: f64 = 0.9;
/// Default [`SequenceMinerConfig::max_patterns`].
pub const DEFAULT_MAX_PATTERNS: usize = 100_000;

/// Marks a position holding an infrequent symbol, and an item without a bucket.
const NONE: u32 = u32::MAX;
/// Marks an item without a bucket in the fill pass.
const NO_CURSOR: usize = usize::MAX;

/// Settings of a [`SequenceMiner`]. [`Default`] is the daemon's configuration with a minimum
/// support of 2; [`SequenceMinerConfig::daemon`] takes the support.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceMinerConfig {
    /// Minimum number of sequences (sessions) a pattern must occur in. At least 1.
    pub min_support: u32,
    /// Most items allowed between two consecutive steps of an occurrence; `None` for no limit.
    /// Large gaps make the projections large (see the module documentation): prefer `None`
    /// over a gap longer than the sessions.
    pub max_gap: Option<u32>,
    /// Fewest items of a reported pattern. At least 1.
    pub min_len: usize,
    /// Most items of a reported pattern (and of the patterns explored). At least `min_len`.
    pub max_len: usize,
    /// Report closed patterns only: drop a pattern when a super-pattern has the same support.
    pub closed: bool,
    /// Drop a pattern when a super-pattern keeps at least this share of its support; in (0, 1].
    pub fold_ratio: Option<f64>,
    /// Also report a pattern seen in fewer than `min_support` sequences when it occurs this many
    /// times without overlapping (see the module documentation); `None`: support alone. Only
    /// with a gap limit. At least 1.
    pub min_occurrences: Option<u32>,
    /// Most patterns reported; mining stops at the next one and sets [`MineStats::truncated`].
    pub max_patterns: usize,
    /// Symbols that never drop a pattern by extending it (see the module documentation,
    /// *Closed*): the pattern is kept though it is always followed or preceded by one of them.
    /// The daemon passes the agents' own tool calls, so that `a b` is reported though `a b
    /// Read` has its support. Empty: every symbol can.
    pub never_dominate: Vec<u32>,
}

impl Default for SequenceMinerConfig {
    fn default() -> Self {
        Self::daemon(2)
    }
}

impl SequenceMinerConfig {
    /// The daemon's configuration: gap 1, 2 to 8 items, closed, folded at 90%.
    pub const fn daemon(min_support: u32) -> Self {
        Self {
            min_support,
            max_gap: Some(DEFAULT_MAX_GAP),
            min_len: DEFAULT_MIN_LEN,
            max_len: DEFAULT_MAX_LEN,
            closed: true,
            fold_ratio: Some(DEFAULT_FOLD_RATIO),
            min_occurrences: None,
            max_patterns: DEFAULT_MAX_PATTERNS,
            never_dominate: Vec::new(),
        }
    }

    /// Plain PrefixSpan: no gap limit, no closure, no folding, every length, no pattern cap.
    /// Its output equals Python `prefixspan`'s `frequent(min_support)`.
    pub const fn unconstrained(min_support: u32) -> Self {
        Self {
            min_support,
            max_gap: None,
            min_len: 1,
            max_len: usize::MAX,
            closed: false,
            fold_ratio: None,
            min_occurrences: None,
            max_patterns: usize::MAX,
            never_dominate: Vec::new(),
        }
    }

    /// The daemon's default minimum support for `sessions` sessions: 1% of them, at least 2.
    pub fn default_min_support(sessions: usize) -> u32 {
        let one_percent = sessions.div_ceil(100);
        u32::try_from(one_percent).unwrap_or(u32::MAX).max(2)
    }

    fn validate(&self) -> Result<(), SequenceMinerError> {
        if self.min_support == 0 || self.min_occurrences == Some(0) {
            return Err(SequenceMinerError::ZeroSupport);
        }
        if self.min_len == 0 || self.max_len < self.min_len {
            return Err(SequenceMinerError::LengthRange {
                min: self.min_len,
                max: self.max_len,
            });
        }
        if let Some(ratio) = self.fold_ratio
            && !(ratio > 0.0 && ratio <= 1.0)
        {
            return Err(SequenceMinerError::FoldRatio(ratio));
        }
        Ok(())
    }

    /// The support a super-pattern needs to drop a pattern of support `support`, if any can.
    fn dominance_threshold(&self, support: u32) -> Option<u32> {
        let by_closure = self.closed.then_some(support);
        // The epsilon keeps 0.9 × 30 = 27.000000000000004 from needing 28.
        let by_folding = self
            .fold_ratio
            .map(|ratio| ((ratio * f64::from(support)) - 1e-9).ceil().max(1.0) as u32);
        let threshold = match (by_closure, by_folding) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(threshold.max(self.min_support))
    }

    /// The distinct starts a super-pattern needs, besides the support, to drop a pattern with
    /// `starts` distinct starts when occurrences are counted: a habit repeated within sessions
    /// is not dropped for a longer pattern seen in as many sessions but fewer times.
    fn start_threshold(&self, starts: u32) -> u32 {
        let by_closure = self.closed.then_some(starts);
        let by_folding = self
            .fold_ratio
            .map(|ratio| ((ratio * f64::from(starts)) - 1e-9).ceil().max(1.0) as u32);
        match (by_closure, by_folding) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(u32::MAX),
        }
    }
}

/// Why mining could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SequenceMinerError {
    /// [`SequenceMinerConfig::min_support`] or `min_occurrences` is 0.
    #[error("the minimum support and the minimum occurrences must be at least 1")]
    ZeroSupport,
    /// The length range is empty or starts at 0.
    #[error("the pattern length range {min}..={max} is empty or starts at 0")]
    LengthRange {
        /// The configured minimum length.
        min: usize,
        /// The configured maximum length.
        max: usize,
    },
    /// [`SequenceMinerConfig::fold_ratio`] is outside (0, 1].
    #[error("the fold ratio {0} is not in (0, 1]")]
    FoldRatio(f64),
    /// Too many sequences or items for 32-bit positions.
    #[error("the input is too large: {0}")]
    TooLarge(&'static str),
}

/// Where a pattern occurs: a sequence and the positions of its first and last steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Occurrence {
    /// Index of the sequence in the mined database.
    pub seq: u32,
    /// Position of the first step.
    pub start: u32,
    /// Position of the last step (inclusive).
    pub end: u32,
}

/// A pattern as handed to the [`SequenceMiner::mine_with`] callback, borrowing the miner's
/// buffers.
#[derive(Debug, Clone, Copy)]
pub struct PatternRef<'a> {
    /// The pattern's symbols, in order.
    pub items: &'a [u32],
    /// Number of sequences it occurs in.
    pub support: u32,
    /// One occurrence per supporting sequence, in sequence order: the leftmost one. With a gap
    /// limit, the earliest start and, for it, the earliest end; without one, the greedy
    /// leftmost instance (earliest start, each later step as early as possible).
    pub occurrences: &'a [Occurrence],
    /// Every occurrence counted (see the module documentation: they do not overlap), in
    /// sequence order; without a gap limit, the same as `occurrences`.
    pub every: &'a [Occurrence],
}

impl PatternRef<'_> {
    /// An owned copy.
    pub fn to_pattern(&self) -> Pattern {
        Pattern {
            items: self.items.to_vec(),
            support: self.support,
            count: self.every.len() as u32,
            occurrences: self.occurrences.to_vec(),
        }
    }
}

/// A mined pattern (see [`PatternRef`] for the fields' meaning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The pattern's symbols, in order.
    pub items: Vec<u32>,
    /// Number of sequences it occurs in.
    pub support: u32,
    /// Occurrences that do not overlap, over all sequences (see the module documentation).
    pub count: u32,
    /// The leftmost occurrence in each supporting sequence, in sequence order.
    pub occurrences: Vec<Occurrence>,
}

/// Figures about one mining run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MineStats {
    /// Frequent patterns explored (in the length range or on the way to it).
    pub nodes: u64,
    /// Patterns reported.
    pub emitted: usize,
    /// Mining stopped early: [`SequenceMinerConfig::max_patterns`] was reached with more to
    /// report, or the callback asked to stop.
    pub truncated: bool,
    /// Symbols that reached the minimum support.
    pub frequent_symbols: usize,
    /// Most projection entries held at once (12 bytes each).
    pub peak_entries: usize,
}

/// The result of [`SequenceMiner::mine`]: the patterns, in lexicographic order of their symbols.
#[derive(Debug, Clone, PartialEq)]
pub struct Mined {
    /// The patterns.
    pub patterns: Vec<Pattern>,
    /// Figures about the run. After [`SequenceMiner::mine_incremental`], `nodes` and
    /// `peak_entries` describe the re-mining of the new sessions' patterns while `emitted` and
    /// `truncated` describe the merged result.
    pub stats: MineStats,
    /// The configuration it was mined with.
    pub config: SequenceMinerConfig,
    /// How many sequences were mined.
    pub sequences: usize,
}

/// Mines repeated sequences; see the module documentation.
#[derive(Debug, Clone)]
pub struct SequenceMiner {
    config: SequenceMinerConfig,
}

impl SequenceMiner {
    /// A miner with `config`, once it is checked.
    pub fn new(config: SequenceMinerConfig) -> Result<Self, SequenceMinerError> {
        config.validate()?;
        Ok(Self { config })
    }

    /// The configuration.
    pub fn config(&self) -> &SequenceMinerConfig {
        &self.config
    }

    /// Mines `db` (one sequence per session) and collects the patterns.
    pub fn mine<S: AsRef<[u32]>>(&self, db: &[S]) -> Result<Mined, SequenceMinerError> {
        let mut patterns = Vec::new();
        let stats = self.mine_with(db, |pattern| {
            patterns.push(pattern.to_pattern());
            ControlFlow::Continue(())
        })?;
        Ok(Mined {
            patterns,
            stats,
            config: self.config.clone(),
            sequences: db.len(),
        })
    }

    /// Mines `db` and hands each pattern to `emit` as it is found, in lexicographic order,
    /// without collecting them. `emit` may return [`ControlFlow::Break`] to stop early.
    pub fn mine_with<S, F>(&self, db: &[S], mut emit: F) -> Result<MineStats, SequenceMinerError>
    where
        S: AsRef<[u32]>,
        F: FnMut(PatternRef<'_>) -> ControlFlow<()>,
    {
        let mut search = Search::load(db, &self.config, 0)?;
        Ok(search.run(&mut emit, &mut |_| {}))
    }

    /// Mines `db` after sessions were appended to the database `previous` was mined from
    /// (`db[..previous.sequences]` must be those sequences, unchanged), reusing `previous`'s
    /// patterns. The result equals [`mine`](Self::mine)`(db)`, but only the patterns occurring
    /// in the new sessions are re-mined. Falls back to a full run when `previous` was mined
    /// with another configuration or was truncated, or when `db` is shorter than it.
    pub fn mine_incremental<S: AsRef<[u32]>>(
        &self,
        db: &[S],
        previous: Mined,
    ) -> Result<Mined, SequenceMinerError> {
        if previous.config != self.config
            || previous.stats.truncated
            || previous.sequences > db.len()
        {
            return self.mine(db);
        }
        let new_from = previous.sequences;
        if new_from == db.len() {
            return Ok(previous);
        }
        // An old pattern occurs in a new session iff the pruned search visits it: it is frequent,
        // and so are all its prefixes, which occur in that session too.
        let index: HashMap<&[u32], usize> = previous
            .patterns
            .iter()
            .enumerate()
            .map(|(i, p)| (p.items.as_slice(), i))
            .collect();
        let mut superseded = vec![false; previous.patterns.len()];
        let mut patterns = Vec::new();
        let mut search = Search::load(db, &self.config, new_from)?;
        let mut stats = search.run(
            &mut |pattern: PatternRef<'_>| {
                patterns.push(pattern.to_pattern());
                ControlFlow::Continue(())
            },
            &mut |items: &[u32]| {
                if let Some(&i) = index.get(items) {
                    superseded[i] = true;
                }
            },
        );
        drop(search);
        drop(index);
        let kept = previous
            .patterns
            .into_iter()
            .zip(superseded)
            .filter(|(_, gone)| !gone);
        patterns.extend(kept.map(|(pattern, _)| pattern));
        patterns.sort_unstable_by(|a, b| a.items.cmp(&b.items));
        // The re-mined patterns come first in lexicographic order up to where a truncated run
        // stopped, so the first `max_patterns` of the merge are those of a full run.
        stats.truncated |= patterns.len() > self.config.max_patterns;
        patterns.truncate(self.config.max_patterns);
        stats.emitted = patterns.len();
        Ok(Mined {
            patterns,
            stats,
            config: self.config.clone(),
            sequences: db.len(),
        })
    }
}

/// Whether `pattern` occurs in `sequence` with at most `max_gap` items between consecutive
/// steps (`None`: as a subsequence). The empty pattern occurs everywhere.
pub fn contains(sequence: &[u32], pattern: &[u32], max_gap: Option<u32>) -> bool {
    let Some((&first, rest)) = pattern.split_first() else {
        return true;
    };
    let Some(gap) = max_gap else {
        let mut steps = pattern.iter().peekable();
        for item in sequence {
            if steps.next_if_eq(&item).is_some() && steps.peek().is_none() {
                return true;
            }
        }
        return false;
    };
    // The end positions of the occurrences of the pattern's prefix, as flags.
    let mut ends: Vec<bool> = sequence.iter().map(|&item| item == first).collect();
    let window = gap as usize + 1;
    for &step in rest {
        let mut last_end: Option<usize> = None;
        let mut any = false;
        for (q, &item) in sequence.iter().enumerate() {
            // The nearest previous end gives the smallest gap.
            let reachable = last_end.is_some_and(|p| q - p <= window);
            if ends[q] {
                last_end = Some(q);
            }
            ends[q] = reachable && item == step;
            any |= ends[q];
        }
        if !any {
            return false;
        }
    }
    ends.iter().any(|&end| end)
}

/// The positions of each step of `pattern` in `sequence` for an occurrence reported by the
/// miner (its `start` and `end`), so the caller can align the occurrences' values. Each step
/// is placed as early as the gap limit allows while the pattern still ends at `end`. `None`
/// when the occurrence does not fit the sequence or pattern.
pub fn steps(
    sequence: &[u32],
    pattern: &[u32],
    occurrence: &Occurrence,
    max_gap: Option<u32>,
) -> Option<Vec<u32>> {
    let (start, end) = (occurrence.start as usize, occurrence.end as usize);
    let (&first, &last) = (pattern.first()?, pattern.last()?);
    if start > end || end >= sequence.len() || sequence[start] != first || sequence[end] != last {
        return None;
    }
    let span = &sequence[start..=end];
    let window = max_gap.map_or(usize::MAX, |gap| gap as usize + 1);
    // feasible[k][p]: steps k.. can be placed with step k at span position p, ending at `end`.
    let width = span.len();
    let mut feasible = vec![false; pattern.len() * width];
    let k_last = pattern.len() - 1;
    feasible[k_last * width + width - 1] = true;
    for k in (0..k_last).rev() {
        let mut next_feasible: Option<usize> = None;
        for p in (0..width).rev() {
            let ok = span[p] == pattern[k] && next_feasible.is_some_and(|n| n - p <= window);
            feasible[k * width + p] = ok;
            // The nearest feasible next step gives the smallest gap.
            if feasible[(k + 1) * width + p] {
                next_feasible = Some(p);
            }
        }
    }
    if !feasible[0] {
        return None;
    }
    let mut positions = Vec::with_capacity(pattern.len());
    let mut p = 0usize;
    positions.push(start as u32);
    for k in 1..pattern.len() {
        let limit = p.saturating_add(window).min(width - 1);
        p = (p + 1..=limit).find(|&q| feasible[k * width + q])?;
        positions.push((start + p) as u32);
    }
    Some(positions)
}

/// One projection entry: an occurrence of the current pattern, `after` being one past its end.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    seq: u32,
    start: u32,
    after: u32,
}

/// A frequent extension of the current pattern and its bucket in the arena.
#[derive(Debug, Clone)]
struct Child {
    item: u32,
    support: u32,
    /// Distinct starts (with `min_occurrences`; else the support).
    starts: u32,
    entries: Range<usize>,
}

/// A node of the depth-first path whose children are being visited.
#[derive(Debug, Clone)]
struct Frame {
    children: Range<usize>,
    next: usize,
    /// The arena's length before the children's buckets.
    arena_mark: usize,
    /// The children's buckets are in `root_index`, materialized one at a time.
    streamed: bool,
}

/// The state of one mining run.
struct Search<'c> {
    config: &'c SequenceMinerConfig,
    /// Sessions at or after this index are new: only patterns occurring in one are explored.
    new_from: usize,
    /// The database, renumbered: dense item ids, [`NONE`] for infrequent symbols.
    items: Vec<u32>,
    offsets: Vec<usize>,
    /// Dense item id → symbol.
    symbols: Vec<u32>,
    /// Per-item counters, all zero between passes; `touched` lists the non-zero ones.
    count: Vec<u32>,
    count_new: Vec<u32>,
    n_entries: Vec<usize>,
    /// Per-item distinct starts, counted only with `min_occurrences` (else empty);
    /// `start_mark` stamps the start last counted.
    starts: Vec<u32>,
    start_mark: Vec<u64>,
    /// Distinct starts that make an item frequent (`u32::MAX`: support alone).
    min_occurrences: u32,
    /// Per item: whether it never drops a pattern it extends (empty when none is).
    weak: Vec<bool>,
    touched: Vec<u32>,
    /// Per-item stamps: `seq_mark` for "already counted in this sequence", `first_mark` for
    /// "already extended from this entry" (first occurrence only, without a gap limit).
    seq_mark: Vec<u64>,
    first_mark: Vec<u64>,
    stamp: u64,
    first_stamp: u64,
    /// Per-item write position in the fill pass.
    cursor: Vec<usize>,
    /// The root's children's buckets as positions in `items`: 4 bytes per item rather than 12,
    /// and only one child's bucket is an arena at a time.
    root_index: Vec<u32>,
    arena: Vec<Entry>,
    children: Vec<Child>,
    frames: Vec<Frame>,
    pattern: Vec<u32>,
    pattern_symbols: Vec<u32>,
    occurrences: Vec<Occurrence>,
    every: Vec<Occurrence>,
    stats: MineStats,
}

/// A multiplicative hasher for `u32` keys (FxHash's constant): SipHash's resistance to chosen
/// keys is not needed for symbols, and sparse symbols are hashed twice per item while loading.
#[derive(Default)]
struct SymbolHasher(u64);

impl Hasher for SymbolHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u32(&mut self, value: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(value)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type SymbolMap<V> = HashMap<u32, V, BuildHasherDefault<SymbolHasher>>;

impl<'c> Search<'c> {
    /// Copies `db` renumbered, with the symbols below the minimum support masked.
    fn load<S: AsRef<[u32]>>(
        db: &[S],
        config: &'c SequenceMinerConfig,
        new_from: usize,
    ) -> Result<Self, SequenceMinerError> {
        if db.len() >= NONE as usize {
            return Err(SequenceMinerError::TooLarge("2^32 - 1 sequences or more"));
        }
        let mut total = 0usize;
        let mut max_symbol = 0u32;
        for seq in db {
            let seq = seq.as_ref();
            total += seq.len();
            // Positions, one past them (`after`) and root index entries must fit in a u32.
            if total >= NONE as usize {
                return Err(SequenceMinerError::TooLarge(
                    "2^32 - 1 items or more in all",
                ));
            }
            max_symbol = seq.iter().copied().fold(max_symbol, u32::max);
        }
        let min_support = config.min_support;
        // Without a gap limit a sequence holds one entry per pattern: occurrences are not counted.
        let min_occurrences = match config.max_gap {
            Some(_) => config.min_occurrences.unwrap_or(u32::MAX),
            None => u32::MAX,
        };
        let mut items = Vec::with_capacity(total);
        let mut symbols = Vec::new();
        // Interned symbols are dense: flat arrays. Arbitrary ones (hashes): a map.
        if (max_symbol as usize) <= total.saturating_mul(2).saturating_add(4096) {
            let size = max_symbol as usize + 1;
            let mut support = vec![0u32; size];
            let mut last = vec![NONE; size];
            // Occurrences of each symbol, only when they can make it frequent.
            let mut occurrences = vec![0u32; if min_occurrences < u32::MAX { size } else { 0 }];
            for (s, seq) in db.iter().enumerate() {
                for &symbol in seq.as_ref() {
                    let i = symbol as usize;
                    if last[i] != s as u32 {
                        last[i] = s as u32;
                        support[i] += 1;
                    }
                    if let Some(n) = occurrences.get_mut(i) {
                        *n += 1;
                    }
                }
            }
            // `last` becomes the symbol → dense id map.
            for (symbol, (&n, dense)) in support.iter().zip(last.iter_mut()).enumerate() {
                let often = occurrences
                    .get(symbol)
                    .is_some_and(|&o| o >= min_occurrences);
                *dense = if n >= min_support || often {
                    symbols.push(symbol as u32);
                    (symbols.len() - 1) as u32
                } else {
                    NONE
                };
            }
            for seq in db {
                items.extend(seq.as_ref().iter().map(|&symbol| last[symbol as usize]));
            }
        } else {
            // Per symbol: support, last sequence seen, occurrences.
            let mut support: SymbolMap<(u32, u32, u32)> = SymbolMap::default();
            for (s, seq) in db.iter().enumerate() {
                for &symbol in seq.as_ref() {
                    let slot = support.entry(symbol).or_insert((0, NONE, 0));
                    slot.2 = slot.2.saturating_add(1);
                    if slot.1 != s as u32 {
                        (slot.0, slot.1) = (slot.0 + 1, s as u32);
                    }
                }
            }
            symbols.extend(
                support
                    .iter()
                    .filter(|(_, v)| v.0 >= min_support || v.2 >= min_occurrences)
                    .map(|(&k, _)| k),
            );
            symbols.sort_unstable();
            let dense: SymbolMap<u32> = symbols
                .iter()
                .enumerate()
                .map(|(i, &symbol)| (symbol, i as u32))
                .collect();
            for seq in db {
                items.extend(
                    seq.as_ref()
                        .iter()
                        .map(|symbol| dense.get(symbol).copied().unwrap_or(NONE)),
                );
            }
        }
        let mut offsets = Vec::with_capacity(db.len() + 1);
        offsets.push(0);
        for seq in db {
            offsets.push(offsets[offsets.len() - 1] + seq.as_ref().len());
        }
        let n = symbols.len();
        let weak = if config.never_dominate.is_empty() {
            Vec::new()
        } else {
            let mut never = config.never_dominate.clone();
            never.sort_unstable();
            symbols
                .iter()
                .map(|s| never.binary_search(s).is_ok())
                .collect()
        };
        Ok(Self {
            config,
            new_from,
            items,
            offsets,
            count: vec![0; n],
            count_new: vec![0; n],
            n_entries: vec![0; n],
            starts: vec![0; if min_occurrences < u32::MAX { n } else { 0 }],
            start_mark: vec![0; if min_occurrences < u32::MAX { n } else { 0 }],
            min_occurrences,
            weak,
            touched: Vec::new(),
            seq_mark: vec![0; n],
            first_mark: vec![0; n],
            stamp: 0,
            first_stamp: 0,
            cursor: vec![NO_CURSOR; n],
            root_index: Vec::new(),
            arena: Vec::new(),
            children: Vec::new(),
            frames: Vec::new(),
            pattern: Vec::new(),
            pattern_symbols: Vec::new(),
            occurrences: Vec::new(),
            every: Vec::new(),
            stats: MineStats {
                frequent_symbols: n,
                ..MineStats::default()
            },
            symbols,
        })
    }

    /// Mines, handing the reported patterns to `emit` and every pattern explored in the length
    /// range, reported or not, to `visited`.
    fn run(
        &mut self,
        emit: &mut dyn FnMut(PatternRef<'_>) -> ControlFlow<()>,
        visited: &mut dyn FnMut(&[u32]),
    ) -> MineStats {
        let sequences = self.offsets.len() - 1;
        // The root's entries: the empty pattern, once per sequence, before position 0.
        self.arena.extend((0..sequences as u32).map(|seq| Entry {
            seq,
            start: 0,
            after: 0,
        }));
        self.count_children(0..sequences, true, 0);
        if self.children.is_empty() {
            return self.stats;
        }
        self.index_root_children(0..sequences);
        self.arena.clear();
        let children = 0..self.children.len();
        self.frames.push(Frame {
            children,
            next: 0,
            arena_mark: 0,
            streamed: true,
        });
        let config = self.config;
        while let Some(frame) = self.frames.last_mut() {
            if frame.next == frame.children.end {
                let (start, mark) = (frame.children.start, frame.arena_mark);
                self.frames.pop();
                self.children.truncate(start);
                self.arena.truncate(mark);
                self.pattern.pop();
                self.pattern_symbols.pop();
                continue;
            }
            let mut child = self.children[frame.next].clone();
            frame.next += 1;
            if frame.streamed {
                // The previous sibling's subtree is done: its bucket goes, this one's comes.
                let mark = frame.arena_mark;
                self.arena.truncate(mark);
                child.entries = self.materialize_root_child(child.entries);
            }
            self.pattern.push(child.item);
            self.pattern_symbols.push(self.symbols[child.item as usize]);
            self.stats.nodes += 1;
            let depth = self.pattern.len();
            let first_child = self.children.len();
            let start_threshold = config.start_threshold(child.starts);
            let best_extension = if depth < config.max_len {
                self.count_children(child.entries.clone(), false, start_threshold)
            } else {
                0
            };
            if depth >= config.min_len {
                visited(&self.pattern_symbols);
                let dominated = match config.dominance_threshold(child.support) {
                    Some(threshold) if depth < config.max_len => {
                        best_extension >= threshold
                            || self.best_backward_extension(
                                child.entries.clone(),
                                threshold,
                                start_threshold,
                            ) >= threshold
                    }
                    _ => false,
                };
                if !dominated && self.emit(&child, emit).is_break() {
                    self.stats.truncated = true;
                    break;
                }
            }
            if self.children.len() > first_child {
                let arena_mark = self.arena.len();
                self.fill_children(child.entries, false, first_child);
                let children = first_child..self.children.len();
                self.frames.push(Frame {
                    children,
                    next: first_child,
                    arena_mark,
                    streamed: false,
                });
            } else {
                self.pattern.pop();
                self.pattern_symbols.pop();
            }
        }
        self.stats
    }

    /// Reports the current pattern, unless the cap is reached.
    fn emit(
        &mut self,
        child: &Child,
        emit: &mut dyn FnMut(PatternRef<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.stats.emitted >= self.config.max_patterns {
            return ControlFlow::Break(());
        }
        self.occurrences.clear();
        self.every.clear();
        let mut last = NONE;
        // Entries are sorted by (sequence, start, end): the first of a sequence is its leftmost,
        // the first of a start its earliest end.
        for entry in &self.arena[child.entries.clone()] {
            let occurrence = Occurrence {
                seq: entry.seq,
                start: entry.start,
                end: entry.after - 1,
            };
            if entry.seq != last {
                last = entry.seq;
                self.occurrences.push(occurrence);
                self.every.push(occurrence);
            } else if self
                .every
                .last()
                .is_some_and(|taken| taken.end < entry.start)
            {
                self.every.push(occurrence);
            }
        }
        if child.support < self.config.min_support
            && (self.every.len() as u64) < u64::from(self.min_occurrences)
        {
            // Frequent by its distinct starts, but they overlap: too few occurrences to report.
            return ControlFlow::Continue(());
        }
        self.stats.emitted += 1;
        emit(PatternRef {
            items: &self.pattern_symbols,
            support: child.support,
            occurrences: &self.occurrences,
            every: &self.every,
        })
    }

    /// First pass over a node's entries: pushes its frequent extensions (sorted by item, their
    /// `entries` holding only the bucket size for now) and returns the best extension support
    /// among those with at least `start_threshold` distinct starts (when they are counted).
    fn count_children(&mut self, entries: Range<usize>, root: bool, start_threshold: u32) -> u32 {
        let Self {
            config,
            new_from,
            items,
            offsets,
            count,
            count_new,
            n_entries,
            starts,
            start_mark,
            min_occurrences,
            weak,
            touched,
            seq_mark,
            first_mark,
            stamp,
            first_stamp,
            arena,
            children,
            ..
        } = self;
        let new_from = *new_from;
        let min_occurrences = *min_occurrences;
        let count_starts = !starts.is_empty();
        let entries = &arena[entries];
        match config.max_gap {
            Some(gap) => {
                let mut last_seq = NONE;
                let mut last_start = NONE;
                let mut seq_stamp = 0u64;
                let mut start_stamp = 0u64;
                let mut is_new = false;
                let mut visit = |seq: u32, start: u32, _q: u32, x: u32| {
                    let new_seq = seq != last_seq;
                    if new_seq {
                        last_seq = seq;
                        *stamp += 1;
                        seq_stamp = *stamp;
                        is_new = seq as usize >= new_from;
                    }
                    let x = x as usize;
                    if n_entries[x] == 0 {
                        touched.push(x as u32);
                    }
                    n_entries[x] += 1;
                    if seq_mark[x] != seq_stamp {
                        seq_mark[x] = seq_stamp;
                        count[x] += 1;
                        count_new[x] += u32::from(is_new);
                    }
                    if count_starts {
                        // A sequence's starts come in order (the root's: every position).
                        if new_seq || start != last_start {
                            last_start = start;
                            *stamp += 1;
                            start_stamp = *stamp;
                        }
                        if start_mark[x] != start_stamp {
                            start_mark[x] = start_stamp;
                            starts[x] += 1;
                        }
                    }
                };
                extend_gapped(items, offsets, entries, root, gap, &mut visit);
            }
            None => {
                // One entry per sequence, one call per item and entry: each call is a
                // supporting sequence and a child entry.
                let mut visit = |seq: u32, _start: u32, _q: u32, x: u32| {
                    let x = x as usize;
                    if count[x] == 0 {
                        touched.push(x as u32);
                    }
                    count[x] += 1;
                    count_new[x] += u32::from(seq as usize >= new_from);
                };
                extend_free(
                    items,
                    offsets,
                    entries,
                    root,
                    first_mark,
                    first_stamp,
                    &mut visit,
                );
                for &x in touched.iter() {
                    n_entries[x as usize] = count[x as usize] as usize;
                }
            }
        }
        let first_child = children.len();
        let mut best = 0;
        for &x in touched.iter() {
            let x = x as usize;
            let often = starts.get(x).is_some_and(|&n| n >= min_occurrences);
            if starts.get(x).is_none_or(|&n| n >= start_threshold)
                && !weak.get(x).is_some_and(|&w| w)
            {
                best = best.max(count[x]);
            }
            if (count[x] >= config.min_support || often) && count_new[x] > 0 {
                let size = n_entries[x];
                children.push(Child {
                    item: x as u32,
                    support: count[x],
                    starts: starts.get(x).copied().unwrap_or(count[x]),
                    entries: 0..size,
                });
            }
            (count[x], count_new[x], n_entries[x]) = (0, 0, 0);
            if let Some(n) = starts.get_mut(x) {
                *n = 0;
            }
        }
        touched.clear();
        // Depth-first order by item is lexicographic order; only the frequent need sorting.
        children[first_child..].sort_unstable_by_key(|child| child.item);
        best
    }

    /// Second pass for the root: the buckets of all its children, as positions in `items`.
    fn index_root_children(&mut self, entries: Range<usize>) {
        let Self {
            config,
            items,
            offsets,
            first_mark,
            first_stamp,
            cursor,
            root_index,
            arena,
            children,
            ..
        } = self;
        let mut end = 0;
        for child in children.iter_mut() {
            let size = child.entries.end;
            cursor[child.item as usize] = end;
            child.entries = end..end + size;
            end += size;
        }
        root_index.resize(end, 0);
        let mut visit = |seq: u32, _start: u32, q: u32, x: u32| {
            let at = cursor[x as usize];
            if at != NO_CURSOR {
                root_index[at] = (offsets[seq as usize] + q as usize) as u32;
                cursor[x as usize] = at + 1;
            }
        };
        let parents = &arena[entries];
        match config.max_gap {
            Some(gap) => extend_gapped(items, offsets, parents, true, gap, &mut visit),
            None => extend_free(
                items,
                offsets,
                parents,
                true,
                first_mark,
                first_stamp,
                &mut visit,
            ),
        }
        for child in children.iter() {
            cursor[child.item as usize] = NO_CURSOR;
        }
    }

    /// Appends a root child's entries, from its positions in `root_index`, to the arena.
    fn materialize_root_child(&mut self, bucket: Range<usize>) -> Range<usize> {
        let Self {
            offsets,
            root_index,
            arena,
            stats,
            ..
        } = self;
        let lo = arena.len();
        let mut seq = 0usize;
        for &at in &root_index[bucket] {
            let at = at as usize;
            if at >= offsets[seq + 1] {
                // Usually the next sequence holding the item is near; otherwise search.
                seq = if at < offsets[seq + 2] {
                    seq + 1
                } else {
                    offsets.partition_point(|&o| o <= at) - 1
                };
            }
            let q = (at - offsets[seq]) as u32;
            arena.push(Entry {
                seq: seq as u32,
                start: q,
                after: q + 1,
            });
        }
        stats.peak_entries = stats.peak_entries.max(arena.len());
        lo..arena.len()
    }

    /// Second pass: gives the children pushed from `first_child` on their buckets at the end of
    /// the arena and fills them.
    fn fill_children(&mut self, entries: Range<usize>, root: bool, first_child: usize) {
        let Self {
            config,
            items,
            offsets,
            first_mark,
            first_stamp,
            cursor,
            arena,
            children,
            stats,
            ..
        } = self;
        let base = arena.len();
        let mut end = base;
        for child in &mut children[first_child..] {
            let size = child.entries.end;
            cursor[child.item as usize] = end - base;
            child.entries = end..end + size;
            end += size;
        }
        arena.resize(end, Entry::default());
        stats.peak_entries = stats.peak_entries.max(end);
        let (parents, buckets) = arena.split_at_mut(base);
        let parents = &parents[entries];
        let mut visit = |seq: u32, start: u32, q: u32, x: u32| {
            let at = cursor[x as usize];
            if at != NO_CURSOR {
                buckets[at] = Entry {
                    seq,
                    start,
                    after: q + 1,
                };
                cursor[x as usize] = at + 1;
            }
        };
        match config.max_gap {
            Some(gap) => extend_gapped(items, offsets, parents, root, gap, &mut visit),
            None => extend_free(
                items,
                offsets,
                parents,
                root,
                first_mark,
                first_stamp,
                &mut visit,
            ),
        }
        for child in &children[first_child..] {
            cursor[child.item as usize] = NO_CURSOR;
        }
    }

    /// The best support of a pattern made of the current one with one item inserted before one
    /// of its steps: before the first (prepended) with a gap limit, before any without one.
    /// Without a gap limit, stops once `threshold` is reached.
    fn best_backward_extension(
        &mut self,
        entries: Range<usize>,
        threshold: u32,
        start_threshold: u32,
    ) -> u32 {
        let Self {
            config,
            items,
            offsets,
            count,
            starts,
            weak,
            touched,
            seq_mark,
            stamp,
            arena,
            pattern,
            ..
        } = self;
        let entries = &arena[entries];
        let mut best = 0;
        let mut tally = Tally {
            count,
            starts,
            start_threshold,
            weak,
            touched,
            seq_mark,
        };
        match config.max_gap {
            Some(gap) => {
                let window = gap as usize + 1;
                let mut i = 0;
                while i < entries.len() {
                    let seq = entries[i].seq;
                    let slice = &items[offsets[seq as usize]..offsets[seq as usize + 1]];
                    *stamp += 1;
                    let mut scanned = 0usize;
                    while i < entries.len() && entries[i].seq == seq {
                        let start = entries[i].start;
                        let to = start as usize;
                        for &x in &slice[to.saturating_sub(window).max(scanned)..to] {
                            tally.add(*stamp, x);
                        }
                        scanned = scanned.max(to);
                        while i < entries.len()
                            && entries[i].seq == seq
                            && entries[i].start == start
                        {
                            i += 1;
                        }
                    }
                }
                best = tally.take_best();
            }
            None => {
                for slot in 0..pattern.len() {
                    for entry in entries {
                        let seq = entry.seq as usize;
                        let slice = &items[offsets[seq]..offsets[seq + 1]];
                        // After the first instance of the steps before the slot...
                        let mut from = 0usize;
                        for &step in &pattern[..slot] {
                            let rest = slice.get(from..).unwrap_or(&[]);
                            from += rest
                                .iter()
                                .position(|&x| x == step)
                                .map_or(rest.len(), |p| p + 1);
                        }
                        // ...and before the last instance of the steps from the slot on.
                        let mut to = slice.len();
                        for &step in pattern[slot..].iter().rev() {
                            to = slice[..to].iter().rposition(|&x| x == step).unwrap_or(0);
                        }
                        *stamp += 1;
                        for &x in slice.get(from..to).unwrap_or(&[]) {
                            tally.add(*stamp, x);
                        }
                    }
                    best = best.max(tally.take_best());
                    if best >= threshold {
                        break;
                    }
                }
            }
        }
        best
    }
}

/// Counts items once per sequence (the sequence's stamp tells), for the backward check, and
/// each position once (when occurrences are counted, `starts` is not empty): with a gap limit
/// every position before an occurrence is scanned once, so each is a distinct start of the
/// longer pattern.
struct Tally<'a> {
    count: &'a mut [u32],
    starts: &'a mut [u32],
    /// Distinct starts an item needs to count in [`Tally::take_best`].
    start_threshold: u32,
    /// Items that never count in [`Tally::take_best`] (see `Search::weak`).
    weak: &'a [bool],
    touched: &'a mut Vec<u32>,
    seq_mark: &'a mut [u64],
}

impl Tally<'_> {
    fn add(&mut self, seq_stamp: u64, x: u32) {
        let i = x as usize;
        if x == NONE {
            return;
        }
        if let Some(n) = self.starts.get_mut(i) {
            *n += 1;
        }
        if self.seq_mark[i] != seq_stamp {
            self.seq_mark[i] = seq_stamp;
            if self.count[i] == 0 {
                self.touched.push(x);
            }
            self.count[i] += 1;
        }
    }

    /// The highest count of an item with enough starts (and not weak), leaving all counts at
    /// zero.
    fn take_best(&mut self) -> u32 {
        let mut best = 0;
        for &x in self.touched.iter() {
            let i = x as usize;
            if self
                .starts
                .get(i)
                .is_none_or(|&n| n >= self.start_threshold)
                && !self.weak.get(i).is_some_and(|&w| w)
            {
                best = best.max(self.count[i]);
            }
            self.count[i] = 0;
            if let Some(n) = self.starts.get_mut(i) {
                *n = 0;
            }
        }
        self.touched.clear();
        best
    }
}

/// Calls `visit(sequence, start, position, item)` for each occurrence of each one-item
/// extension of `entries` under a gap limit: every position within `gap + 1` after an end, each
/// once per start, in order (the root's entry extends to every position, each its own start).
#[inline(always)]
fn extend_gapped(
    items: &[u32],
    offsets: &[usize],
    entries: &[Entry],
    root: bool,
    gap: u32,
    visit: &mut impl FnMut(u32, u32, u32, u32),
) {
    let window = (gap as usize).saturating_add(1);
    let mut i = 0;
    while i < entries.len() {
        let Entry { seq, start, .. } = entries[i];
        let slice = &items[offsets[seq as usize]..offsets[seq as usize + 1]];
        if root {
            for (q, &x) in slice.iter().enumerate() {
                if x != NONE {
                    visit(seq, q as u32, q as u32, x);
                }
            }
            i += 1;
            continue;
        }
        // Windows of the same start overlap: scan their union once.
        let mut scanned = 0usize;
        while i < entries.len() && entries[i].seq == seq && entries[i].start == start {
            let after = entries[i].after as usize;
            let to = after.saturating_add(window).min(slice.len());
            let from = after.max(scanned).min(to);
            for (q, &x) in (from..).zip(&slice[from..to]) {
                if x != NONE {
                    visit(seq, start, q as u32, x);
                }
            }
            scanned = scanned.max(to);
            i += 1;
        }
    }
}

/// Calls `visit(sequence, start, position, item)` for the first occurrence of each item after
/// each entry's end (no gap limit: the earliest end extends to everything later ones do).
#[inline(always)]
fn extend_free(
    items: &[u32],
    offsets: &[usize],
    entries: &[Entry],
    root: bool,
    first_mark: &mut [u64],
    stamp: &mut u64,
    visit: &mut impl FnMut(u32, u32, u32, u32),
) {
    for &Entry { seq, start, after } in entries {
        let slice = &items[offsets[seq as usize]..offsets[seq as usize + 1]];
        *stamp += 1;
        let mark = *stamp;
        for (q, &x) in slice.iter().enumerate().skip(after as usize) {
            if x != NONE && first_mark[x as usize] != mark {
                first_mark[x as usize] = mark;
                visit(seq, if root { q as u32 } else { start }, q as u32, x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(min_support: u32, max_gap: Option<u32>) -> SequenceMinerConfig {
        SequenceMinerConfig {
            min_support,
            max_gap,
            min_len: 1,
            max_len: usize::MAX,
            closed: false,
            fold_ratio: None,
            min_occurrences: None,
            max_patterns: usize::MAX,
            never_dominate: Vec::new(),
        }
    }

    fn mine(db: &[Vec<u32>], config: SequenceMinerConfig) -> Vec<(Vec<u32>, u32)> {
        let mined = SequenceMiner::new(config).and_then(|m| m.mine(db));
        let mined = mined.unwrap_or_else(|e| panic!("mining failed: {e}"));
        mined
            .patterns
            .into_iter()
            .map(|p| (p.items, p.support))
            .collect()
    }

    fn support_of(found: &[(Vec<u32>, u32)], items: &[u32]) -> Option<u32> {
        found.iter().find(|(p, _)| p == items).map(|&(_, s)| s)
    }

    #[test]
    fn python_readme_example() {
        // prefixspan's README database; expected output from its frequent(2), checked by hand.
        let db = vec![
            vec![0, 1, 2, 3, 4],
            vec![1, 1, 1, 3, 4],
            vec![2, 1, 2, 2, 0],
            vec![1, 1, 1, 2, 2],
        ];
        let expected: Vec<(Vec<u32>, u32)> = vec![
            (vec![0], 2),
            (vec![1], 4),
            (vec![1, 1], 2),
            (vec![1, 1, 1], 2),
            (vec![1, 2], 3),
            (vec![1, 2, 2], 2),
            (vec![1, 3], 2),
            (vec![1, 3, 4], 2),
            (vec![1, 4], 2),
            (vec![2], 3),
            (vec![2, 2], 2),
            (vec![3], 2),
            (vec![3, 4], 2),
            (vec![4], 2),
        ];
        assert_eq!(mine(&db, SequenceMinerConfig::unconstrained(2)), expected);
    }

    #[test]
    fn prefixspan_paper_example_flattened() {
        // Pei et al. 2001, Table 1, each itemset written out in order (a=0 … g=6):
        // <a(abc)(ac)d(cf)>, <(ad)c(bc)(ae)>, <(ef)(ab)(df)cb>, <eg(af)cbc>.
        let db = vec![
            vec![0, 0, 1, 2, 0, 2, 3, 2, 5],
            vec![0, 3, 2, 1, 2, 0, 4],
            vec![4, 5, 0, 1, 3, 5, 2, 1],
            vec![4, 6, 0, 5, 2, 1, 2],
        ];
        let found = mine(&db, SequenceMinerConfig::unconstrained(2));
        // Length 1 as in the paper: a:4, b:4, c:4, d:3, e:3, f:3; g (support 1) is not frequent.
        for (item, support) in [(0, 4), (1, 4), (2, 4), (3, 3), (4, 3), (5, 3)] {
            assert_eq!(support_of(&found, &[item]), Some(support), "item {item}");
        }
        assert_eq!(support_of(&found, &[6]), None);
        // Prefix <a>: the paper's <aa>:2, <ab>:4, <ac>:4 hold; flattening turns the itemsets
        // (ad) and (af) into a-then-d and a-then-f, so <ad> and <af> gain a sequence (3, not 2),
        // and <ae> (only in the second sequence) stays infrequent.
        assert_eq!(support_of(&found, &[0, 0]), Some(2));
        assert_eq!(support_of(&found, &[0, 1]), Some(4));
        assert_eq!(support_of(&found, &[0, 2]), Some(4));
        assert_eq!(support_of(&found, &[0, 3]), Some(3));
        assert_eq!(support_of(&found, &[0, 5]), Some(3));
        assert_eq!(support_of(&found, &[0, 4]), None);
        // <abc>: a, then b, then c in all four; <acb> in all but the first (its only b precedes
        // every c after an a); <abcb> only in the third.
        assert_eq!(support_of(&found, &[0, 1, 2]), Some(4));
        assert_eq!(support_of(&found, &[0, 2, 1]), Some(3));
        assert_eq!(support_of(&found, &[0, 1, 2, 1]), None);
        assert_eq!(found, oracle(&db, &SequenceMinerConfig::unconstrained(2)));
    }

    #[test]
    fn gap_limits_stray_items() {
        let (a, b, x, y) = (1, 2, 8, 9);
        let db = vec![vec![a, x, b], vec![a, x, y, b], vec![a, b]];
        for (gap, support) in [(Some(0), 1), (Some(1), 2), (Some(2), 3), (None, 3)] {
            let found = mine(&db, config(1, gap));
            assert_eq!(support_of(&found, &[a, b]), Some(support), "gap {gap:?}");
        }
    }

    #[test]
    fn gapped_projection_keeps_later_occurrences() {
        // The first `a` cannot be followed by `b` without a gap; the second one can.
        let (a, b, x) = (1, 2, 9);
        let db = vec![vec![a, x, x, a, b], vec![a, x, a, b, x]];
        let miner = SequenceMiner::new(config(2, Some(0))).unwrap_or_else(|e| panic!("{e}"));
        let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
        let ab = mined.patterns.iter().find(|p| p.items == [a, b]);
        let ab = ab.unwrap_or_else(|| panic!("a b not found in {:?}", mined.patterns));
        assert_eq!(ab.support, 2);
        assert_eq!(
            ab.occurrences,
            vec![
                Occurrence {
                    seq: 0,
                    start: 3,
                    end: 4
                },
                Occurrence {
                    seq: 1,
                    start: 2,
                    end: 3
                }
            ]
        );
    }

    #[test]
    fn closure_uses_contiguous_super_patterns_with_a_gap_limit() {
        let (a, b, c) = (1, 2, 3);
        let db = vec![vec![a, b, c], vec![a, b, c], vec![a, b, c], vec![a, b]];
        let closed = SequenceMinerConfig {
            closed: true,
            fold_ratio: None,
            ..SequenceMinerConfig::daemon(2)
        };
        // a b (4) is closed; b c (3) is a suffix of a b c (3): dropped. a c (3) is not a
        // contiguous part of a b c, whose occurrences need not contain one of it with gap 1.
        assert_eq!(
            mine(&db, closed.clone()),
            vec![(vec![a, b], 4), (vec![a, b, c], 3), (vec![a, c], 3)]
        );
        // Without a gap limit, a c is a subsequence of a b c with the same support.
        let ungapped = SequenceMinerConfig {
            max_gap: None,
            ..closed
        };
        assert_eq!(
            mine(&db, ungapped),
            vec![(vec![a, b], 4), (vec![a, b, c], 3)]
        );
    }

    #[test]
    fn an_item_that_never_dominates_does_not_hide_the_pattern_it_always_extends() {
        // `a b` then the agent's `r` in every session, `r` before it in two; `c d` then `e`,
        // two one-off items (`f`, `g`, …) apart.
        let (a, b, c, d, e, r) = (1, 2, 3, 4, 5, 9);
        let db = vec![
            vec![r, a, b, r, 20, 21, c, d, e],
            vec![r, a, b, r, 22, 23, c, d, e],
            vec![a, b, r, 24, 25, c, d, e],
        ];
        let daemon = SequenceMinerConfig::daemon(3);
        let two_or_more = |found: Vec<(Vec<u32>, u32)>| -> Vec<Vec<u32>> {
            found
                .into_iter()
                .filter(|(p, _)| p.len() >= 2)
                .map(|(p, _)| p)
                .collect()
        };
        // Closed as usual: `a b r` has `a b`'s support, so `a b` is not reported.
        let found = two_or_more(mine(&db, daemon.clone()));
        assert!(!found.contains(&vec![a, b]), "{found:?}");
        assert!(found.contains(&vec![a, b, r]), "{found:?}");
        // With `r` never dominating: `a b` is reported, and so is `a b r`; `c d`, always
        // followed by `e` (not listed), is still dropped for `c d e`.
        let found = two_or_more(mine(
            &db,
            SequenceMinerConfig {
                never_dominate: vec![r],
                ..daemon
            },
        ));
        assert!(found.contains(&vec![a, b]), "{found:?}");
        assert!(found.contains(&vec![a, b, r]), "{found:?}");
        assert!(!found.contains(&vec![c, d]), "{found:?}");
        assert!(found.contains(&vec![c, d, e]), "{found:?}");
    }

    #[test]
    fn closure_checks_prepended_items() {
        // x a b everywhere: a b has the support of its prefix extension x a b.
        let (a, b, x, y) = (1, 2, 9, 7);
        let db = vec![vec![x, a, b], vec![x, y, a, b], vec![x, a, b, a]];
        let closed = SequenceMinerConfig {
            closed: true,
            fold_ratio: None,
            max_gap: Some(1),
            ..SequenceMinerConfig::daemon(3)
        };
        let found = mine(&db, closed);
        assert_eq!(support_of(&found, &[x, a, b]), Some(3));
        assert_eq!(support_of(&found, &[a, b]), None, "{found:?}");
        assert_eq!(support_of(&found, &[x, a]), None, "{found:?}");
    }

    /// Mines with `min_occurrences`: (items, support, count) of each pattern.
    fn mine_counted(db: &[Vec<u32>], config: SequenceMinerConfig) -> Vec<(Vec<u32>, u32, u32)> {
        let mined = SequenceMiner::new(config).and_then(|m| m.mine(db));
        let mined = mined.unwrap_or_else(|e| panic!("mining failed: {e}"));
        mined
            .patterns
            .into_iter()
            .map(|p| (p.items, p.support, p.count))
            .collect()
    }

    #[test]
    fn a_habit_repeated_in_few_sequences_is_found_by_its_occurrences() {
        // `check → make` (1 2) five times over two sessions, strays (7, 8, 9) between.
        let db = vec![vec![1, 2, 7, 1, 2, 8, 1, 2], vec![9, 1, 2, 7, 1, 2]];
        let by_support = SequenceMinerConfig {
            min_len: 2,
            ..config(3, Some(1))
        };
        assert!(mine_counted(&db, by_support.clone()).is_empty());
        let counted = SequenceMinerConfig {
            min_occurrences: Some(4),
            ..by_support.clone()
        };
        let found = mine_counted(&db, counted.clone());
        assert_eq!(found, [(vec![1, 2], 2, 5)]);
        // The callback sees every occurrence counted, the leftmost of each sequence first.
        let miner = SequenceMiner::new(counted).expect("a valid configuration");
        let mut every = Vec::new();
        miner
            .mine_with(&db, |p| {
                every = p.every.iter().map(|o| (o.seq, o.start, o.end)).collect();
                assert_eq!(p.occurrences.len(), 2);
                ControlFlow::Continue(())
            })
            .expect("mining runs");
        assert_eq!(
            every,
            [(0, 0, 1), (0, 3, 4), (0, 6, 7), (1, 1, 2), (1, 4, 5)]
        );
        // Five is not six.
        let six = SequenceMinerConfig {
            min_occurrences: Some(6),
            ..by_support
        };
        assert!(mine_counted(&db, six).is_empty());
    }

    #[test]
    fn overlapping_occurrences_count_once() {
        // `a a b b` with a gap of 1: `a b` starts at 0 and 1, both ending at 2 or 3; they overlap.
        let db = vec![vec![1, 1, 2, 2], vec![5, 6]];
        let counted = SequenceMinerConfig {
            min_support: 3,
            min_occurrences: Some(2),
            ..config(3, Some(1))
        };
        let found = mine_counted(&db, counted);
        assert!(
            found.iter().all(|(items, _, _)| items != &[1, 2]),
            "{found:?}"
        );
        // Without a gap limit occurrences are not counted: support alone.
        let free = SequenceMinerConfig {
            min_support: 2,
            min_occurrences: Some(1),
            ..config(2, None)
        };
        assert!(mine_counted(&[vec![1, 2, 1, 2]], free).is_empty());
    }

    #[test]
    fn a_repeated_habit_is_not_dropped_for_a_longer_pattern_seen_less_often() {
        // `a b` twice per session, once after `x`: `x a b` has the same support (3 sessions)
        // but half the occurrences.
        let db = vec![
            vec![9, 1, 2, 5, 1, 2],
            vec![9, 1, 2, 6, 1, 2],
            vec![9, 1, 2, 7, 1, 2],
        ];
        let closed = SequenceMinerConfig {
            closed: true,
            ..config(3, Some(1))
        };
        // By support alone, closure drops `a b` for `x a b`.
        let plain = mine_counted(&db, closed.clone());
        assert!(
            plain.iter().all(|(items, _, _)| items != &[1, 2]),
            "{plain:?}"
        );
        let counted = mine_counted(
            &db,
            SequenceMinerConfig {
                min_occurrences: Some(10),
                ..closed
            },
        );
        assert!(counted.contains(&(vec![1, 2], 3, 6)), "{counted:?}");
    }

    /// Occurrences that do not overlap, per the module documentation.
    fn oracle_count(seq: &[u32], pattern: &[u32], gap: Option<u32>) -> u32 {
        let mut count = 0;
        let mut last_end: Option<usize> = None;
        let mut last_start: Option<usize> = None;
        for (start, end) in oracle_spans(seq, pattern, gap) {
            if last_start == Some(start) {
                continue;
            }
            last_start = Some(start);
            if last_end.is_none_or(|e| e < start) {
                count += 1;
                last_end = Some(end);
            }
        }
        count
    }

    #[test]
    fn counted_occurrences_match_the_brute_force_definition() {
        let mut rng = Rng(11);
        let mut by_count = 0;
        for round in 0..6 {
            let db = random_db(&mut rng, 3 + round % 3, 14, 3 + round as u64 % 2);
            for gap in [0, 1, 2] {
                for min_occurrences in [3, 4] {
                    let config = SequenceMinerConfig {
                        min_support: 3,
                        max_gap: Some(gap),
                        min_len: 1,
                        max_len: 4,
                        closed: false,
                        fold_ratio: None,
                        min_occurrences: Some(min_occurrences),
                        max_patterns: usize::MAX,
                        never_dominate: Vec::new(),
                    };
                    let found = mine_counted(&db, config.clone());
                    // Every pattern of up to 4 items over the alphabet, checked directly.
                    let mut alphabet: Vec<u32> = db.iter().flatten().copied().collect();
                    alphabet.sort_unstable();
                    alphabet.dedup();
                    let mut expected = Vec::new();
                    let mut level: Vec<Vec<u32>> = vec![vec![]];
                    for _ in 0..4 {
                        let mut next = Vec::new();
                        for prefix in &level {
                            for &item in &alphabet {
                                let mut p = prefix.clone();
                                p.push(item);
                                let spans: Vec<_> =
                                    db.iter().map(|s| oracle_spans(s, &p, Some(gap))).collect();
                                let support = spans.iter().filter(|s| !s.is_empty()).count() as u32;
                                if support == 0 {
                                    continue;
                                }
                                let count: u32 =
                                    db.iter().map(|s| oracle_count(s, &p, Some(gap))).sum();
                                if support >= 3 || count >= min_occurrences {
                                    by_count += usize::from(support < 3);
                                    expected.push((p.clone(), support, count));
                                }
                                next.push(p);
                            }
                        }
                        level = next;
                    }
                    expected.sort();
                    let mut found = found;
                    found.sort();
                    assert_eq!(found, expected, "gap {gap}, {min_occurrences} on {db:?}");
                }
            }
        }
        assert!(
            by_count > 20,
            "few patterns found by their count alone: {by_count}"
        );
    }

    #[test]
    fn folding_drops_patterns_a_longer_one_mostly_covers() {
        let (a, b, c) = (1, 2, 3);
        let db_with = |with_c: usize| {
            (0..10)
                .map(|i| {
                    if i < with_c {
                        vec![a, b, c]
                    } else {
                        vec![a, b]
                    }
                })
                .collect::<Vec<_>>()
        };
        let daemon = SequenceMinerConfig::daemon(2);
        // 9 of 10 keep going with c: a b (10) is folded into a b c (9 ≥ 90% of 10).
        let found = mine(&db_with(9), daemon.clone());
        assert_eq!(found, vec![(vec![a, b, c], 9), (vec![a, c], 9)]);
        // 8 of 10: a b stays.
        let found = mine(&db_with(8), daemon.clone());
        assert_eq!(
            found,
            vec![(vec![a, b], 10), (vec![a, b, c], 8), (vec![a, c], 8)]
        );
        // Without folding, closure alone keeps a b at 9 of 10.
        let found = mine(
            &db_with(9),
            SequenceMinerConfig {
                fold_ratio: None,
                ..daemon
            },
        );
        assert_eq!(
            found,
            vec![(vec![a, b], 10), (vec![a, b, c], 9), (vec![a, c], 9)]
        );
    }

    #[test]
    fn fold_threshold_rounds_up_without_float_noise() {
        let config = SequenceMinerConfig::daemon(1);
        assert_eq!(config.dominance_threshold(10), Some(9));
        assert_eq!(config.dominance_threshold(30), Some(27));
        assert_eq!(config.dominance_threshold(11), Some(10));
        let closed_only = SequenceMinerConfig {
            fold_ratio: None,
            ..config.clone()
        };
        assert_eq!(closed_only.dominance_threshold(11), Some(11));
        let neither = SequenceMinerConfig {
            closed: false,
            ..closed_only
        };
        assert_eq!(neither.dominance_threshold(11), None);
        // A super-pattern must be frequent to count.
        assert_eq!(
            SequenceMinerConfig::daemon(5).dominance_threshold(4),
            Some(5)
        );
    }

    #[test]
    fn occurrences_are_leftmost_and_steps_align_them() {
        let (a, b, c, x) = (1, 2, 3, 9);
        let db = vec![
            vec![x, a, x, b, x],
            vec![a, b],
            vec![x, x, a, x, b, a, b],
            vec![a, b, b, x, c],
        ];
        let miner = SequenceMiner::new(config(1, Some(1))).unwrap_or_else(|e| panic!("{e}"));
        let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
        let find = |items: &[u32]| {
            let found = mined.patterns.iter().find(|p| p.items == items);
            found
                .unwrap_or_else(|| panic!("{items:?} not found"))
                .clone()
        };
        let ab = find(&[a, b]);
        assert_eq!(ab.support, 4);
        assert_eq!(
            ab.occurrences,
            vec![
                Occurrence {
                    seq: 0,
                    start: 1,
                    end: 3
                },
                Occurrence {
                    seq: 1,
                    start: 0,
                    end: 1
                },
                Occurrence {
                    seq: 2,
                    start: 2,
                    end: 4
                },
                Occurrence {
                    seq: 3,
                    start: 0,
                    end: 1
                },
            ]
        );
        for occurrence in &ab.occurrences {
            let seq = &db[occurrence.seq as usize];
            let positions = steps(seq, &[a, b], occurrence, Some(1));
            assert_eq!(positions, Some(vec![occurrence.start, occurrence.end]));
        }
        // a b c in [a b b x c]: the first b leaves c out of reach, the second does not.
        let abc = find(&[a, b, c]);
        assert_eq!(
            abc.occurrences,
            vec![Occurrence {
                seq: 3,
                start: 0,
                end: 4
            }]
        );
        assert_eq!(
            steps(&db[3], &[a, b, c], &abc.occurrences[0], Some(1)),
            Some(vec![0, 2, 4])
        );
        assert_eq!(
            steps(&db[3], &[a, b, c], &abc.occurrences[0], Some(0)),
            None
        );
        assert_eq!(
            steps(&db[3], &[a, b, c], &abc.occurrences[0], None),
            Some(vec![0, 1, 4])
        );
        let past_end = Occurrence {
            seq: 3,
            start: 0,
            end: 9,
        };
        assert_eq!(steps(&db[3], &[a, b, c], &past_end, Some(1)), None);
    }

    #[test]
    fn contains_follows_the_gap_limit() {
        let seq = [1, 9, 2, 9, 9, 3];
        assert!(contains(&seq, &[1, 2], Some(1)));
        assert!(!contains(&seq, &[1, 2], Some(0)));
        assert!(!contains(&seq, &[1, 2, 3], Some(1)));
        assert!(contains(&seq, &[1, 2, 3], Some(2)));
        assert!(contains(&seq, &[1, 2, 3], None));
        assert!(!contains(&seq, &[3, 1], None));
        assert!(contains(&seq, &[], Some(0)));
        assert!(!contains(&[], &[1], None));
    }

    #[test]
    fn max_patterns_truncates_in_lexicographic_order() {
        let db = vec![
            vec![0, 1, 2, 3, 4],
            vec![1, 1, 1, 3, 4],
            vec![2, 1, 2, 2, 0],
        ];
        let capped = SequenceMinerConfig {
            max_patterns: 3,
            ..SequenceMinerConfig::unconstrained(2)
        };
        let miner = SequenceMiner::new(capped).unwrap_or_else(|e| panic!("{e}"));
        let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
        let items: Vec<_> = mined.patterns.iter().map(|p| p.items.clone()).collect();
        assert_eq!(items, vec![vec![0], vec![1], vec![1, 2]]);
        assert!(mined.stats.truncated);
        // Exactly at the cap is not truncated.
        let all = mine(&db, SequenceMinerConfig::unconstrained(2)).len();
        let exact = SequenceMinerConfig {
            max_patterns: all,
            ..SequenceMinerConfig::unconstrained(2)
        };
        let mined = SequenceMiner::new(exact).and_then(|m| m.mine(&db));
        let mined = mined.unwrap_or_else(|e| panic!("{e}"));
        assert!(!mined.stats.truncated);
        assert_eq!(mined.patterns.len(), all);
    }

    #[test]
    fn callback_can_stop_mining() {
        let db = vec![vec![0, 1, 2], vec![0, 1, 2]];
        let miner = SequenceMiner::new(SequenceMinerConfig::unconstrained(1));
        let miner = miner.unwrap_or_else(|e| panic!("{e}"));
        let mut seen = 0;
        let stats = miner.mine_with(&db, |_| {
            seen += 1;
            if seen == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let stats = stats.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(seen, 2);
        assert!(stats.truncated);
    }

    #[test]
    fn sparse_symbols_mine_like_dense_ones() {
        let db = vec![
            vec![0, 1, 2, 3, 4],
            vec![1, 1, 1, 3, 4],
            vec![2, 1, 2, 2, 0],
        ];
        let sparse_symbol = |s: u32| u32::MAX - s * 1_000_003;
        let sparse: Vec<Vec<u32>> = db
            .iter()
            .map(|seq| seq.iter().map(|&s| sparse_symbol(s)).collect())
            .collect();
        for config in [
            SequenceMinerConfig::unconstrained(2),
            SequenceMinerConfig::daemon(2),
        ] {
            let mut expected: Vec<(Vec<u32>, u32)> = mine(&db, config.clone())
                .into_iter()
                .map(|(p, s)| (p.into_iter().map(sparse_symbol).collect(), s))
                .collect();
            expected.sort();
            assert_eq!(mine(&sparse, config), expected);
        }
    }

    #[test]
    fn empty_inputs_yield_nothing() {
        let none: Vec<Vec<u32>> = Vec::new();
        assert!(mine(&none, SequenceMinerConfig::unconstrained(1)).is_empty());
        let empties = vec![vec![], vec![], vec![5]];
        assert_eq!(
            mine(&empties, SequenceMinerConfig::unconstrained(1)),
            vec![(vec![5], 1)]
        );
        assert!(mine(&empties, SequenceMinerConfig::daemon(1)).is_empty());
    }

    #[test]
    fn invalid_configurations_are_refused() {
        let base = SequenceMinerConfig::daemon(2);
        let check = |config: SequenceMinerConfig| SequenceMiner::new(config).err();
        assert_eq!(
            check(SequenceMinerConfig {
                min_support: 0,
                ..base.clone()
            }),
            Some(SequenceMinerError::ZeroSupport)
        );
        assert_eq!(
            check(SequenceMinerConfig {
                min_len: 0,
                ..base.clone()
            }),
            Some(SequenceMinerError::LengthRange { min: 0, max: 8 })
        );
        assert_eq!(
            check(SequenceMinerConfig {
                min_len: 3,
                max_len: 2,
                ..base.clone()
            }),
            Some(SequenceMinerError::LengthRange { min: 3, max: 2 })
        );
        for ratio in [0.0, 1.5, f64::NAN] {
            let refused = check(SequenceMinerConfig {
                fold_ratio: Some(ratio),
                ..base.clone()
            });
            assert!(
                matches!(refused, Some(SequenceMinerError::FoldRatio(_))),
                "{ratio}"
            );
        }
        assert_eq!(
            check(SequenceMinerConfig {
                fold_ratio: Some(1.0),
                ..base
            }),
            None
        );
    }

    #[test]
    fn default_min_support_is_one_percent_at_least_two() {
        assert_eq!(SequenceMinerConfig::default_min_support(0), 2);
        assert_eq!(SequenceMinerConfig::default_min_support(150), 2);
        assert_eq!(SequenceMinerConfig::default_min_support(1_000), 10);
        assert_eq!(SequenceMinerConfig::default_min_support(10_001), 101);
    }

    // ---- Brute force, straight from the definitions in the module documentation. ----

    /// Every embedding's end, for each start: (start, end) pairs of the occurrences.
    fn oracle_spans(seq: &[u32], pattern: &[u32], gap: Option<u32>) -> Vec<(usize, usize)> {
        fn ends(seq: &[u32], rest: &[u32], prev: usize, gap: Option<u32>, out: &mut Vec<usize>) {
            let Some((&step, rest)) = rest.split_first() else {
                out.push(prev);
                return;
            };
            let last = gap.map_or(seq.len(), |g| (prev + g as usize + 2).min(seq.len()));
            for q in prev + 1..last {
                if seq[q] == step {
                    ends(seq, rest, q, gap, out);
                }
            }
        }
        let mut spans = Vec::new();
        for start in 0..seq.len() {
            if seq[start] == pattern[0] {
                let mut out = Vec::new();
                ends(seq, &pattern[1..], start, gap, &mut out);
                spans.extend(out.into_iter().map(|end| (start, end)));
            }
        }
        spans.sort_unstable();
        spans
    }

    fn is_factor(small: &[u32], big: &[u32]) -> bool {
        big.windows(small.len()).any(|w| w == small)
    }

    fn is_subsequence(small: &[u32], big: &[u32]) -> bool {
        let mut it = big.iter();
        small.iter().all(|s| it.any(|b| b == s))
    }

    /// All frequent patterns by breadth-first growth, then the length range, closure and
    /// folding checked against every longer frequent pattern (not just one item longer).
    fn oracle(db: &[Vec<u32>], config: &SequenceMinerConfig) -> Vec<(Vec<u32>, u32)> {
        let mut alphabet: Vec<u32> = db.iter().flatten().copied().collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        let longest = db.iter().map(Vec::len).max().unwrap_or(0);
        let max_len = config.max_len.min(longest);
        let support = |p: &[u32]| {
            db.iter()
                .filter(|s| !oracle_spans(s, p, config.max_gap).is_empty())
                .count() as u32
        };
        let mut frequent: Vec<(Vec<u32>, u32)> = Vec::new();
        let mut level: Vec<Vec<u32>> = vec![vec![]];
        while let Some(len) = level.first().map(Vec::len)
            && len < max_len
        {
            let mut next = Vec::new();
            for prefix in &level {
                for &item in &alphabet {
                    let mut p = prefix.clone();
                    p.push(item);
                    let s = support(&p);
                    if s >= config.min_support {
                        frequent.push((p.clone(), s));
                        next.push(p);
                    }
                }
            }
            level = next;
        }
        let contained = |small: &[u32], big: &[u32]| match config.max_gap {
            Some(_) => is_factor(small, big),
            None => is_subsequence(small, big),
        };
        // With `never_dominate`: only a super-pattern one item longer whose extra item (at an
        // end with a gap limit, anywhere without) is not one of them.
        let weak = |x: u32| config.never_dominate.contains(&x);
        let dominates = |small: &[u32], big: &[u32]| {
            if config.never_dominate.is_empty() {
                return big.len() > small.len() && contained(small, big);
            }
            big.len() == small.len() + 1
                && (0..big.len()).any(|i| {
                    let ends = i == 0 || i == small.len();
                    let mut rest = big.to_vec();
                    let extra = rest.remove(i);
                    rest == small && !weak(extra) && (config.max_gap.is_none() || ends)
                })
        };
        let mut kept: Vec<(Vec<u32>, u32)> = frequent
            .iter()
            .filter(|(p, s)| {
                p.len() >= config.min_len
                    && config
                        .dominance_threshold(*s)
                        .is_none_or(|t| !frequent.iter().any(|(q, qs)| *qs >= t && dominates(p, q)))
            })
            .cloned()
            .collect();
        kept.sort();
        kept
    }

    /// Leftmost occurrence per the `PatternRef::occurrences` documentation.
    fn oracle_leftmost(seq: &[u32], pattern: &[u32], gap: Option<u32>) -> Option<(u32, u32)> {
        if gap.is_some() {
            return oracle_spans(seq, pattern, gap)
                .first()
                .map(|&(s, e)| (s as u32, e as u32));
        }
        let mut positions = Vec::new();
        let mut from = 0;
        for &step in pattern {
            let at = from + seq[from..].iter().position(|&x| x == step)?;
            positions.push(at as u32);
            from = at + 1;
        }
        Some((positions[0], positions[positions.len() - 1]))
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_db(rng: &mut Rng, sequences: usize, max_len: u64, alphabet: u64) -> Vec<Vec<u32>> {
        (0..sequences)
            .map(|_| {
                let len = rng.below(max_len + 1);
                (0..len)
                    .map(|_| rng.below(alphabet) as u32 * 3 + 1)
                    .collect()
            })
            .collect()
    }

    fn configs() -> Vec<SequenceMinerConfig> {
        let mut out = Vec::new();
        for gap in [Some(0), Some(1), Some(2), None] {
            for (closed, fold_ratio) in [
                (false, None),
                (true, None),
                (true, Some(0.9)),
                (false, Some(0.6)),
            ] {
                for (min_len, max_len) in [(1, 4), (2, 5), (1, usize::MAX)] {
                    for min_support in [2, 3] {
                        out.push(SequenceMinerConfig {
                            min_support,
                            max_gap: gap,
                            min_len,
                            max_len,
                            closed,
                            fold_ratio,
                            min_occurrences: None,
                            max_patterns: usize::MAX,
                            never_dominate: Vec::new(),
                        });
                    }
                }
                // Symbols that never drop a pattern (`1`, and `4` with `10`, which no
                // database holds).
                for never in [vec![1], vec![4, 10]] {
                    out.push(SequenceMinerConfig {
                        min_support: 2,
                        max_gap: gap,
                        min_len: 1,
                        max_len: 4,
                        closed,
                        fold_ratio,
                        min_occurrences: None,
                        max_patterns: usize::MAX,
                        never_dominate: never,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn random_databases_match_the_brute_force_definitions() {
        let mut rng = Rng(7);
        let (mut checked, mut dropped, mut long) = (0, 0, 0);
        for round in 0..4 {
            let db = random_db(&mut rng, 9 + round, 9, 3 + round as u64 % 3);
            for config in configs() {
                let miner = SequenceMiner::new(config.clone()).unwrap_or_else(|e| panic!("{e}"));
                let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
                let got: Vec<(Vec<u32>, u32)> = mined
                    .patterns
                    .iter()
                    .map(|p| (p.items.clone(), p.support))
                    .collect();
                assert_eq!(
                    got,
                    oracle(&db, &config),
                    "round {round}, {config:?}, db {db:?}"
                );
                if config.closed || config.fold_ratio.is_some() {
                    let all = SequenceMinerConfig {
                        closed: false,
                        fold_ratio: None,
                        ..config.clone()
                    };
                    dropped += oracle(&db, &all).len() - got.len();
                }
                long += got.iter().filter(|(p, _)| p.len() >= 3).count();
                for pattern in &mined.patterns {
                    let expected: Vec<Occurrence> = db
                        .iter()
                        .enumerate()
                        .filter_map(|(i, seq)| {
                            let (start, end) =
                                oracle_leftmost(seq, &pattern.items, config.max_gap)?;
                            Some(Occurrence {
                                seq: i as u32,
                                start,
                                end,
                            })
                        })
                        .collect();
                    assert_eq!(
                        pattern.occurrences, expected,
                        "{config:?} {:?}",
                        pattern.items
                    );
                    for occurrence in &pattern.occurrences {
                        let seq = &db[occurrence.seq as usize];
                        let positions = steps(seq, &pattern.items, occurrence, config.max_gap);
                        let positions = positions.unwrap_or_else(|| panic!("no steps"));
                        let at: Vec<u32> = positions.iter().map(|&p| seq[p as usize]).collect();
                        assert_eq!(at, pattern.items);
                    }
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 4 * configs().len());
        // The databases are not trivial: long patterns, and patterns closure or folding drop.
        assert!(
            long > 100 && dropped > 100,
            "long {long}, dropped {dropped}"
        );
    }

    #[test]
    fn incremental_mining_equals_a_full_run() {
        let mut rng = Rng(11);
        for round in 0..3 {
            let db = random_db(&mut rng, 16, 10, 4);
            for config in configs().into_iter().step_by(5) {
                let miner = SequenceMiner::new(config.clone()).unwrap_or_else(|e| panic!("{e}"));
                let full = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
                for split in [0, 5, 12, 16] {
                    let before = miner.mine(&db[..split]).unwrap_or_else(|e| panic!("{e}"));
                    let after = miner.mine_incremental(&db, before);
                    let after = after.unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(
                        after.patterns, full.patterns,
                        "round {round} split {split} {config:?}"
                    );
                    assert_eq!(after.sequences, db.len());
                }
            }
        }
    }

    #[test]
    fn incremental_mining_respects_the_cap_and_other_configurations() {
        let mut rng = Rng(5);
        let db = random_db(&mut rng, 20, 10, 3);
        let capped = SequenceMinerConfig {
            max_patterns: 7,
            ..SequenceMinerConfig::unconstrained(2)
        };
        let miner = SequenceMiner::new(capped).unwrap_or_else(|e| panic!("{e}"));
        let full = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
        assert!(full.stats.truncated);
        let uncapped = SequenceMiner::new(SequenceMinerConfig::unconstrained(2));
        let uncapped = uncapped.unwrap_or_else(|e| panic!("{e}"));
        let before = uncapped.mine(&db[..10]).unwrap_or_else(|e| panic!("{e}"));
        // Another configuration: a full run, with this miner's cap.
        let after = miner
            .mine_incremental(&db, before)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(after.patterns, full.patterns);
        assert!(after.stats.truncated);
        let before = miner.mine(&db[..10]).unwrap_or_else(|e| panic!("{e}"));
        let after = miner
            .mine_incremental(&db, before)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(after.patterns, full.patterns);
        // Nothing new: the previous result as it is.
        let again = miner
            .mine_incremental(&db, after.clone())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, after);
    }
}
