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
//!
//! The search itself is in `search.rs`; `tests.rs` checks it against the published examples and
//! a brute-force oracle of these definitions.

use std::collections::HashMap;
use std::ops::ControlFlow;

mod search;
#[cfg(test)]
mod tests;

use search::Search;

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
    /// Symbols from this one on are walls: no occurrence runs across one (with a gap limit;
    /// without one, they are only infrequent). The daemon passes its by-hand steps (an editor,
    /// the user's `cd` alias): a habit never crosses them. `None`: no walls.
    pub walls_from: Option<u32>,
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
            walls_from: None,
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
            walls_from: None,
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

/// The occurrences of `pattern` in `sequence` that the miner counts (see "Count" in the module
/// documentation): from left to right, each start's earliest-ending occurrence, taken when it
/// begins after the last one taken ends. The miner finds them for every frequent pattern at
/// once; this finds them for one known pattern (a habit's uses after its tool was approved).
/// `seq` is left 0 in each.
pub fn counted_occurrences(
    sequence: &[u32],
    pattern: &[u32],
    max_gap: Option<u32>,
) -> Vec<Occurrence> {
    let Some((&first, rest)) = pattern.split_first() else {
        return Vec::new();
    };
    let window = max_gap.map_or(usize::MAX, |gap| gap as usize + 1);
    let mut found = Vec::new();
    let mut last_end: Option<usize> = None;
    let mut reached: Vec<usize> = Vec::new();
    for start in 0..sequence.len() {
        if sequence[start] != first || last_end.is_some_and(|end| start <= end) {
            continue;
        }
        // The positions each step can be at, from this start; the earliest of the last step's
        // is the earliest end.
        reached.clear();
        reached.push(start);
        for &step in rest {
            let mut next = Vec::new();
            let from = reached[0] + 1;
            for (q, &item) in sequence.iter().enumerate().skip(from) {
                if item == step && reached.iter().any(|&p| p < q && q - p <= window) {
                    next.push(q);
                }
                if reached
                    .last()
                    .is_some_and(|&p| q >= p.saturating_add(window))
                {
                    break;
                }
            }
            reached = next;
            if reached.is_empty() {
                break;
            }
        }
        if let Some(&end) = reached.first() {
            found.push(Occurrence {
                seq: 0,
                start: start as u32,
                end: end as u32,
            });
            last_end = Some(end);
        }
    }
    found
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
