//! The search itself: depth-first over pseudo-projections, with the gap limit, the
//! closure and folding checks, and the occurrence counting ([`Search`], [`Tally`]).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{ControlFlow, Range};

use super::{MineStats, Occurrence, PatternRef, SequenceMinerConfig, SequenceMinerError};

/// Marks a position holding an infrequent symbol, and an item without a bucket.
const NONE: u32 = u32::MAX;
/// A wall ([`SequenceMinerConfig::walls_from`]): no occurrence runs across it. Items below it
/// are dense ids.
const WALL: u32 = u32::MAX - 1;
/// Marks an item without a bucket in the fill pass.
const NO_CURSOR: usize = usize::MAX;

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
pub(super) struct Search<'c> {
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
    pub(super) fn load<S: AsRef<[u32]>>(
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
        // Walls stop a gap-limited search only.
        let walls_from = match config.max_gap {
            Some(_) => config.walls_from.map_or(u64::MAX, u64::from),
            None => u64::MAX,
        };
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
                items.extend(seq.as_ref().iter().map(|&symbol| {
                    if u64::from(symbol) >= walls_from {
                        WALL
                    } else {
                        last[symbol as usize]
                    }
                }));
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
                items.extend(seq.as_ref().iter().map(|symbol| {
                    if u64::from(*symbol) >= walls_from {
                        WALL
                    } else {
                        dense.get(symbol).copied().unwrap_or(NONE)
                    }
                }));
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
    pub(super) fn run(
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
                        // Backwards from the start, up to a wall.
                        for &x in slice[to.saturating_sub(window).max(scanned)..to]
                            .iter()
                            .rev()
                        {
                            if x == WALL {
                                break;
                            }
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
        if x >= WALL {
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
                if x < WALL {
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
                if x == WALL {
                    break;
                }
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
            if x < WALL && first_mark[x as usize] != mark {
                first_mark[x as usize] = mark;
                visit(seq, if root { q as u32 } else { start }, q as u32, x);
            }
        }
    }
}
