//! Step 2, **find**: the candidate patterns of each kind ([`Found`]): repeated sequences
//! ([`find_sequences`]), complex or slow single commands ([`find_commands`]) and error→recovery
//! habits ([`find_recovery_habits`]).

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;
use std::time::Instant;

use super::align::{median, score_input};
use super::load::{Loaded, Row, Session};
use super::{
    Found, MineError, MineOptions, Needed, Occ, elapsed_ms, only_content, repeats_a_block,
};
use crate::mine::pattern::PatternKind;
use crate::mine::recovery::{RecoveryGroup, find_recoveries, group_recoveries};
use crate::mine::score::score;
use crate::mine::sequences::{self, PatternRef, SequenceMiner, SequenceMinerConfig};

/// How the sequence miner runs for `options`; `agent_tool` says which symbols are an agent's
/// own tool calls.
fn sequence_config(
    options: &MineOptions,
    needed: Needed,
    agent_tool: &[bool],
    first_barrier: u32,
) -> SequenceMinerConfig {
    SequenceMinerConfig {
        // Sessions, counted apart: at least the families; the candidates are checked again.
        min_support: needed.support,
        // The by-hand barriers are each seen once: never frequent.
        min_occurrences: Some(needed.occurrences),
        max_gap: Some(options.max_gap),
        min_len: options.min_length.max(1),
        max_len: options.max_length.max(options.min_length.max(1)),
        closed: true,
        fold_ratio: Some(options.fold_ratio),
        // Memory is bounded by keeping only the best candidates while streaming; the cap only
        // guards time on pathological input.
        max_patterns: 2_000_000,
        // An agent's call that always follows (or precedes) a command habit does not hide it:
        // the habit is reported, and the longer pattern, which no tool can be made of, is
        // folded into it.
        never_dominate: (0..agent_tool.len() as u32)
            .filter(|&s| agent_tool[s as usize])
            .collect(),
        // A step driven by hand (an editor, a fuzzy finder, the user's `cd` alias) is a
        // boundary no habit crosses.
        walls_from: Some(first_barrier),
    }
}

/// The repeated sequences worth aligning, and what finding them cost.
pub(super) struct SequencesFound<'s> {
    /// The best candidates (twice as many as a kind may report).
    pub(super) found: Vec<Found<'s>>,
    /// Whether the miner hit its pattern cap.
    pub(super) truncated: bool,
    /// Frequent sequences the miner explored.
    pub(super) nodes: u64,
    /// Time spent mining and ranking while streaming.
    pub(super) ms: u64,
}

/// Repeated token sequences across sessions, the best kept by their upper bound while the
/// miner streams them.
pub(super) fn find_sequences<'s>(
    loaded: &'s Loaded,
    options: &MineOptions,
    needed: Needed,
) -> Result<SequencesFound<'s>, MineError> {
    let config = sequence_config(options, needed, &loaded.agent_tool, loaded.first_barrier);
    let miner = SequenceMiner::new(config.clone())?;
    let keep = options.max_patterns_per_kind.max(1);
    let symbols: Vec<&[u32]> = loaded
        .sessions
        .iter()
        .map(|s| s.symbols.as_slice())
        .collect();
    // Per symbol: whether it is a file-content tool call (see `CONTENT_TOOLS`).
    let content: Vec<bool> = (0..loaded.interner.len() as u32)
        .map(|s| only_content(&[loaded.interner.resolve(s).unwrap_or_default()]))
        .collect();
    let mut found: Vec<Found<'_>> = Vec::new();
    // The weakest bound still kept once the list is full: anything below it is skipped before
    // its occurrences are even looked at.
    let mut threshold = f64::NEG_INFINITY;
    let started = Instant::now();
    let stats = miner.mine_with(&symbols, |p| {
        // One command over and over is not a sequence (the single-command finder sees it), and a
        // retried run of steps is the same habit as the run once.
        if repeats_a_block(p.items)
            || p.items
                .iter()
                .all(|&s| content.get(s as usize).copied().unwrap_or(false))
        {
            return ControlFlow::Continue(());
        }
        let Some(f) = sequence_candidate(loaded, &p, &config, options, needed, threshold) else {
            return ControlFlow::Continue(());
        };
        found.push(f);
        // Only the best can be aligned: keep memory to a few times that many while streaming.
        if found.len() >= 4 * keep {
            prune(&mut found, 2 * keep);
            threshold = found.last().map_or(threshold, |f| f.bound);
        }
        ControlFlow::Continue(())
    })?;
    let ms = elapsed_ms(started);
    prune(&mut found, 2 * keep);
    Ok(SequencesFound {
        found,
        truncated: stats.truncated,
        nodes: stats.nodes,
        ms,
    })
}

/// A mined sequence as a candidate, with its occurrences' token positions (one per session
/// first); `None` when it is not seen in enough sessions (a sub-agent's counted with its
/// parent's) nor often enough, or when even its upper bound is below `threshold` (its
/// occurrences are then never looked at).
fn sequence_candidate<'s>(
    loaded: &'s Loaded,
    p: &PatternRef<'_>,
    config: &SequenceMinerConfig,
    options: &MineOptions,
    needed: Needed,
    threshold: f64,
) -> Option<Found<'s>> {
    let support = loaded.support(p.occurrences.iter().map(|o| o.seq as usize));
    if !needed.met(support, p.every.len()) {
        return None;
    }
    let mut f = Found {
        kind: PatternKind::Sequence,
        keys: vec![String::new(); p.items.len()],
        support,
        count: p.every.len() as u32,
        occurrences: Vec::new(),
        more: Vec::new(),
        items: Box::default(),
        trigger: None,
        // At most one call per step: the bound stays an upper bound.
        calls_per_occurrence: p.items.len() as f64,
        single: false,
        association: None,
        bound: 0.0,
        aligned: 0,
    };
    f.bound = upper_bound(&f);
    if f.bound < threshold {
        return None;
    }
    f.keys = p
        .items
        .iter()
        .map(|&s| loaded.interner.resolve(s).unwrap_or_default().to_owned())
        .collect();
    let positions = |o: &sequences::Occurrence| step_positions(loaded, p.items, o, config.max_gap);
    // In a session of one command per action (most), every occurrence holds whole actions.
    let fits = |o: &sequences::Occurrence| {
        let session = &loaded.sessions[o.seq as usize];
        session.symbols.len() == session.rows.len() || positions(o).is_some()
    };
    let every: Vec<&sequences::Occurrence> = p.every.iter().filter(|o| fits(o)).collect();
    // One per session: the leftmost, else the first of the session's others that fits.
    let firsts: Vec<&sequences::Occurrence> = p
        .occurrences
        .iter()
        .filter_map(|o| {
            if fits(o) {
                return Some(o);
            }
            let from = every.partition_point(|e| e.seq < o.seq);
            every.get(from).copied().filter(|e| e.seq == o.seq)
        })
        .collect();
    let support = loaded.support(firsts.iter().map(|o| o.seq as usize));
    if !needed.met(support, every.len()) {
        return None;
    }
    f.support = support;
    f.count = every.len() as u32;
    // Aligned now: one per session (the leftmost); for a habit qualified by its occurrences,
    // then others, in order, up to the occurrences that qualify it: enough to rank it, fold it
    // and show it. The other repeats are kept compactly and aligned only if the pattern comes
    // to stand for its habit ([`complete_heads`]): aligning every repeat of every candidate
    // read thousands of actions again for patterns folded away (long repetitive sessions, see
    // tests/it/soak.rs).
    let repeats = if support < needed.support {
        (needed.occurrences as usize).saturating_sub(firsts.len())
    } else {
        0
    };
    let mut others = every.iter().copied().filter(|o| {
        firsts
            .binary_search_by_key(&(o.seq, o.start), |f| (f.seq, f.start))
            .is_err()
    });
    f.occurrences = firsts
        .iter()
        .copied()
        .chain(others.by_ref().take(repeats))
        .take(options.max_occurrences)
        .filter_map(|o| {
            Some(Occ {
                session: &loaded.sessions[o.seq as usize],
                positions: positions(o)?,
            })
        })
        .collect();
    f.aligned = f.occurrences.len();
    f.more = others
        .take(options.max_occurrences.saturating_sub(f.occurrences.len()))
        .copied()
        .collect();
    // Its symbols place `more`'s steps and name its links for the test against chance.
    f.items = p.items.into();
    f.calls_per_occurrence = f
        .occurrences
        .first()
        .map(|o| distinct_rows(o) as f64)
        .unwrap_or(1.0);
    f.bound = upper_bound(&f);
    Some(f)
}

/// The token positions of the steps `items` of a sequence's occurrence `o`, `None` when they do
/// not hold whole actions: an occurrence that holds some commands of an action but not all of
/// them is no occurrence (`git status --short → git commit` inside `git add x && git status
/// --short`, then `git commit`, would make a tool that commits nothing).
pub(super) fn step_positions(
    loaded: &Loaded,
    items: &[u32],
    o: &sequences::Occurrence,
    max_gap: Option<u32>,
) -> Option<Vec<usize>> {
    let session = loaded.sessions.get(o.seq as usize)?;
    sequences::steps(&session.symbols, items, o, max_gap)
        .map(|steps| steps.into_iter().map(|x| x as usize).collect::<Vec<_>>())
        .filter(|steps| whole_actions(session, steps))
}

/// Whether the steps at token `positions` (ascending) hold every command of each action they
/// touch: a habit's step never loses a command the agent ran in the same action.
fn whole_actions(session: &Session, positions: &[usize]) -> bool {
    let mut i = 0;
    while let Some(&first) = positions.get(i) {
        let Some(row) = session
            .token_row
            .get(first)
            .and_then(|&r| session.rows.get(r as usize))
        else {
            return false;
        };
        let range = row.token_range();
        let n = range.len();
        if !positions
            .get(i..i + n)
            .is_some_and(|held| held.iter().copied().eq(range))
        {
            return false;
        }
        i += n;
    }
    true
}

/// Single complex commands repeated with varying arguments, and slow operations.
pub(super) fn find_commands<'s>(
    loaded: &'s Loaded,
    options: &MineOptions,
    needed: Needed,
) -> Vec<Found<'s>> {
    let sessions = &loaded.sessions;
    let mut found = Vec::new();
    let by_command = command_places(sessions, loaded.commands.len(), needed);
    for (&command, places) in &by_command {
        let support = loaded.support(places.iter().map(|p| p.0 as usize));
        if !needed.met(support, places.len()) {
            continue;
        }
        let keys: Vec<String> = loaded
            .commands
            .resolve(command)
            .unwrap_or_default()
            .split(" ; ")
            .map(str::to_owned)
            .collect();
        let (tokens, words) = loaded.command_words[command as usize];
        if words >= 6 || tokens >= 2 {
            found.push(Found {
                kind: PatternKind::Sequence,
                keys: keys.clone(),
                support,
                count: places.len() as u32,
                occurrences: command_occurrences(sessions, places.iter(), options.max_occurrences),
                more: Vec::new(),
                items: Box::default(),
                trigger: None,
                calls_per_occurrence: 1.5,
                single: true,
                association: None,
                bound: 0.0,
                aligned: usize::MAX,
            });
        }
        found.extend(slow_command(loaded, keys, places, options, needed));
    }
    found
}

/// Where each command with the support (sessions, counted apart: an upper bound of the
/// families) or the occurrences is run, as (session, row). First the sessions each command is
/// seen in and how often (flat arrays), then the places of only those that qualify: millions
/// of actions, a few hundred commands worth a look. By-hand steps are left out.
fn command_places(
    sessions: &[Session],
    commands: usize,
    needed: Needed,
) -> HashMap<u32, Vec<(u32, u32)>> {
    let mut command_support = vec![0u32; commands];
    let mut command_count = vec![0u32; commands];
    let mut last_session = vec![u32::MAX; commands];
    for (s, session) in sessions.iter().enumerate() {
        for row in session.rows.iter().filter(|row| !row.by_hand) {
            let c = row.command as usize;
            command_count[c] = command_count[c].saturating_add(1);
            if last_session[c] != s as u32 {
                last_session[c] = s as u32;
                command_support[c] += 1;
            }
        }
    }
    drop(last_session);
    let qualifies: Vec<bool> = command_support
        .iter()
        .zip(&command_count)
        .map(|(&support, &count)| needed.met(support, count as usize))
        .collect();
    let mut by_command: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    for (s, session) in sessions.iter().enumerate() {
        for (r, row) in session.rows.iter().enumerate() {
            if !row.by_hand && qualifies[row.command as usize] {
                by_command
                    .entry(row.command)
                    .or_default()
                    .push((s as u32, r as u32));
            }
        }
    }
    by_command
}

/// A command whose median duration, over the sessions that timed it, is slow.
fn slow_command<'s>(
    loaded: &'s Loaded,
    keys: Vec<String>,
    places: &[(u32, u32)],
    options: &MineOptions,
    needed: Needed,
) -> Option<Found<'s>> {
    let sessions = &loaded.sessions;
    let row = |&(s, r): &(u32, u32)| sessions[s as usize].rows[r as usize];
    let mut durations: Vec<u64> = places.iter().filter_map(|p| row(p).duration()).collect();
    let timed_sessions = loaded.support(
        places
            .iter()
            .filter(|p| row(p).duration_ms.is_some())
            .map(|p| p.0 as usize),
    );
    if !needed.met(timed_sessions, durations.len())
        || median(&mut durations).is_none_or(|m| m < options.slow_ms)
    {
        return None;
    }
    let timed = places.iter().filter(|p| row(p).duration_ms.is_some());
    Some(Found {
        kind: PatternKind::Slow,
        keys,
        support: timed_sessions,
        count: durations.len() as u32,
        occurrences: command_occurrences(sessions, timed, options.max_occurrences),
        more: Vec::new(),
        items: Box::default(),
        trigger: None,
        calls_per_occurrence: 1.0,
        single: false,
        association: None,
        bound: 0.0,
        aligned: usize::MAX,
    })
}

/// Error→recovery habits: a failure, the steps taken, the same command succeeding.
pub(super) fn find_recovery_habits<'s>(
    loaded: &'s Loaded,
    options: &MineOptions,
    needed: Needed,
) -> Vec<Found<'s>> {
    let attempts: Vec<&[Row]> = loaded.sessions.iter().map(|s| s.rows.as_slice()).collect();
    let recoveries = find_recoveries(&attempts, options.max_recovery_steps);
    // Grouped whatever their support; kept by their families or their occurrences.
    group_recoveries(&attempts, recoveries, &loaded.errors, 1)
        .into_iter()
        .filter_map(|mut group| {
            group.support = loaded.support(group.occurrences.iter().map(|r| r.session));
            needed
                .met_by_recovery(group.support, group.occurrences.len())
                .then(|| {
                    let max = if group.support < needed.support {
                        needed.occurrences as usize
                    } else {
                        0
                    };
                    recovery_candidate(loaded, group, options.max_occurrences, max)
                })
        })
        .collect()
}

/// A group of recoveries as a candidate: the failed command then the recovery steps, one
/// occurrence per session, then repeats up to `max_with_repeats` occurrences in all (for one
/// qualified by its occurrences).
fn recovery_candidate(
    loaded: &Loaded,
    group: RecoveryGroup,
    max_occurrences: usize,
    max_with_repeats: usize,
) -> Found<'_> {
    let sessions = &loaded.sessions;
    let mut occurrences = Vec::new();
    let mut seen = BTreeSet::new();
    // One per session first, then (for a habit qualified by its occurrences) the others.
    let (first, rest): (Vec<_>, Vec<_>) = group
        .occurrences
        .iter()
        .partition(|r| seen.insert(r.session));
    // All of them (up to `max_occurrences`) say where the habit lies; the first `aligned` are
    // aligned.
    let aligned = max_with_repeats.max(first.len());
    for r in first.into_iter().chain(rest) {
        if occurrences.len() >= max_occurrences {
            break;
        }
        let s = &sessions[r.session];
        let failed = s.rows[r.failed];
        // The failing command is the failed action's last token; then every recovery token.
        let mut positions = vec![failed.token_range().end - 1];
        for row in &s.rows[r.steps.clone()] {
            positions.extend(row.token_range());
        }
        occurrences.push(Occ {
            session: s,
            positions,
        });
    }
    let command = |k: u32| loaded.commands.resolve(k).unwrap_or_default().to_owned();
    let mut keys = vec![command(group.failed_key)];
    keys.extend(group.step_keys.iter().map(|&k| command(k)));
    Found {
        kind: PatternKind::Recovery,
        keys,
        support: group.support,
        count: group.occurrences.len() as u32,
        occurrences,
        more: Vec::new(),
        items: Box::default(),
        trigger: Some(group.error_template),
        calls_per_occurrence: 1.0 + group.step_keys.len() as f64,
        single: false,
        association: None,
        bound: 0.0,
        aligned,
    }
}

/// The occurrences of one command line at `places` (session, row): one per session first.
fn command_occurrences<'s, 'p>(
    sessions: &'s [Session],
    places: impl Iterator<Item = &'p (u32, u32)>,
    max: usize,
) -> Vec<Occ<'s>> {
    let mut seen = BTreeSet::new();
    let mut first = Vec::new();
    let mut rest = Vec::new();
    for &(s, r) in places {
        let (s, r) = (s as usize, r as usize);
        let row = sessions[s].rows[r];
        let occ = Occ {
            session: &sessions[s],
            positions: row.token_range().collect(),
        };
        if seen.insert(s) {
            first.push(occ);
        } else {
            rest.push(occ);
        }
    }
    first.extend(rest);
    first.truncate(max);
    first
}

/// The score a pattern would have if its occurrences were perfectly consistent.
pub(super) fn upper_bound(f: &Found<'_>) -> f64 {
    score(&score_input(f, None, 1.0, 1.0, f.keys.len() as u32, 0)).score
}

/// Keeps the `keep` patterns with the best upper bound.
fn prune(found: &mut Vec<Found<'_>>, keep: usize) {
    if found.len() > keep {
        found.sort_by(|a, b| {
            b.bound
                .total_cmp(&a.bound)
                .then_with(|| a.keys.cmp(&b.keys))
        });
        found.truncate(keep);
    }
}

fn distinct_rows(occ: &Occ<'_>) -> usize {
    occ.positions
        .iter()
        .map(|&p| occ.session.token_row[p])
        .collect::<BTreeSet<_>>()
        .len()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::mine::miner::{mine, store_patterns};
    use crate::mine::pattern::{CandidateOutcomes, Pattern};

    #[test]
    fn a_workflow_seen_in_enough_sessions_is_a_sequence() {
        let workflow = [
            ran("", "cargo build"),
            ran("", "git diff"),
            ran("", "cargo test"),
            ran("", "cargo clippy"),
        ];
        let mut calls = in_sessions(&["s1", "s2", "s3"], &workflow);
        calls.push(ran("s4", "cargo build"));
        let (_dir, conn) = store(&calls);
        let loaded = loaded(&conn);
        let options = MineOptions::default();
        let sequences = find_sequences(&loaded, &options, needed(3)).expect("mining runs");
        assert!(!sequences.truncated);
        let whole = ["cargo build", "git diff", "cargo test", "cargo clippy"];
        let f = sequences
            .found
            .iter()
            .find(|f| f.keys == whole)
            .expect("the whole workflow");
        assert_eq!((f.support, f.count, f.occurrences.len()), (3, 3, 3));
        assert_eq!(f.occurrences[0].positions, [0, 1, 2, 3]);
        assert!(f.bound > 0.0);
        // The other candidates are the workflow with a step skipped (a gap of one is allowed);
        // `cargo build` alone, seen in a fourth session too, is one step: not a sequence.
        for f in &sequences.found {
            assert_eq!(f.support, 3, "{:?}", f.keys);
            assert!(f.keys.len() >= 3, "{:?}", f.keys);
            assert!(f.keys.iter().all(|k| whole.contains(&k.as_str())));
        }
    }

    #[test]
    fn complex_commands_with_varying_arguments_and_slow_ones_are_found() {
        let mut calls = Vec::new();
        for (session, service) in [("s1", "web"), ("s2", "api"), ("s3", "db")] {
            let up = ["docker compose -f dev.yml up -d --build ", service].concat();
            calls.push((session, up, Some(true), None, Some(2_000)));
            calls.push((
                session,
                "cargo build --release".into(),
                Some(true),
                None,
                Some(90_000),
            ));
            calls.push((session, "git status".into(), Some(true), None, Some(100)));
        }
        let calls: Vec<Call<'_>> = calls
            .iter()
            .map(|(s, c, ok, o, ms)| (*s, c.as_str(), *ok, *o, *ms))
            .collect();
        let (_dir, conn) = store(&calls);
        let loaded = loaded(&conn);
        let found = find_commands(&loaded, &MineOptions::default(), needed(3));
        let mut shapes: Vec<(PatternKind, String, u32, bool)> = found
            .iter()
            .map(|f| (f.kind, f.keys.join(" ; "), f.support, f.single))
            .collect();
        shapes.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            shapes,
            [
                (PatternKind::Slow, "cargo build --release".into(), 3, false),
                (
                    PatternKind::Sequence,
                    "docker compose -f <arg> up -d --build <arg>".into(),
                    3,
                    true
                ),
            ]
        );
        // Seen in two sessions only: not enough.
        assert!(find_commands(&loaded, &MineOptions::default(), needed(4)).is_empty());
    }

    #[test]
    fn a_failure_fixed_the_same_way_in_each_session_is_a_recovery() {
        let output = "error[E0425]: cannot find value `x` in this scope";
        let fix = [
            ("", "cargo build", Some(false), Some(output), None),
            ran("", "cargo fix --allow-dirty"),
            ran("", "cargo build"),
        ];
        let (_dir, conn) = store(&in_sessions(&["s1", "s2", "s3"], &fix));
        let loaded = loaded(&conn);
        let found = find_recovery_habits(&loaded, &MineOptions::default(), needed(3));
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!(f.kind, PatternKind::Recovery);
        assert_eq!(f.keys, ["cargo build", "cargo fix --allow-dirty"]);
        assert_eq!((f.support, f.count, f.calls_per_occurrence), (3, 3, 2.0));
        assert!(
            f.trigger
                .as_deref()
                .is_some_and(|t| t.contains("cannot find value")),
            "{:?}",
            f.trigger
        );
        // The failed command's token, then the recovery's.
        assert_eq!(f.occurrences[0].positions, [0, 1]);
    }

    #[test]
    fn a_habit_repeated_in_two_sessions_qualifies_by_its_occurrences() {
        // `./scripts/check.sh --module X` then `make -C X test`, 6 times in one session and 4
        // in another; a third session does something else.
        let mut calls = Vec::new();
        for (session, times) in [("s1", 6), ("s2", 4)] {
            for i in 0..times {
                let module = ["ingest", "router", "auth", "storage", "metrics", "cli"][i];
                let run = |c: String| (session.to_owned(), c, Some(true), None);
                calls.push(run(format!("./scripts/check.sh --module {module}")));
                calls.push(run(format!("make -C {module} test")));
                calls.push(run(ONE_OFFS[i].to_owned()));
            }
        }
        calls.push(("s3".into(), "cargo build".into(), Some(true), None));
        let (_dir, mut conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        assert_eq!((report.min_support, report.min_occurrences), (3, 4));
        let found = starting_with(&report, "./scripts/check.sh");
        let habit = found
            .iter()
            .find(|p| p.folded_into.is_none())
            .unwrap_or_else(|| panic!("the habit among {:#?}", report.patterns));
        assert_eq!(habit.templates.len(), 2, "{:?}", habit.templates);
        assert!(habit.templates[1].starts_with("make") && habit.templates[1].contains("-C"));
        assert_eq!((habit.support, habit.occurrences), (2, 10));
        assert_eq!(
            (habit.score_parts.sessions, habit.score_parts.occurrences),
            (2, 10)
        );
        assert!(habit.score > 0.0);
        // Every repeat is evidence, not only one per session nor only as many as qualify it:
        // each time the habit was run, with its own module.
        assert_eq!(habit.evidence.len(), 10, "{:#?}", habit.evidence);
        let mut runs: Vec<(&str, &[String])> = habit
            .evidence
            .iter()
            .map(|e| (e.session.as_str(), e.commands.as_slice()))
            .collect();
        runs.sort();
        let modules = ["ingest", "router", "auth", "storage", "metrics", "cli"];
        let mut expected: Vec<(&str, Vec<String>)> = [("s1", 6), ("s2", 4)]
            .into_iter()
            .flat_map(|(session, times)| {
                modules[..times].iter().map(move |m| {
                    (
                        session,
                        vec![
                            format!("./scripts/check.sh --module {m}"),
                            format!("make -C {m} test"),
                        ],
                    )
                })
            })
            .collect();
        expected.sort();
        let runs: Vec<(&str, Vec<String>)> =
            runs.into_iter().map(|(s, c)| (s, c.to_vec())).collect();
        assert_eq!(runs, expected);
        // One habit, one pattern proposed: what runs from one occurrence into the next
        // (`make → check`, `check → make → check`) lies inside it.
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.contains("check.sh")))
            .collect();
        assert_eq!(proposed.len(), 1, "{:#?}", report.patterns);
        store_patterns(&mut conn, &report, &CandidateOutcomes::default()).expect("stored");
        // Ten occurrences are not eleven.
        let stricter = MineOptions {
            min_occurrences: 11,
            ..MineOptions::default()
        };
        let report = mine(&conn, &stricter).expect("the run");
        assert!(
            starting_with(&report, "./scripts/check.sh").is_empty(),
            "{:#?}",
            report.patterns
        );
    }

    #[test]
    fn a_sub_agents_session_counts_with_its_parents() {
        let habit = [
            ran("", "cargo build -p core"),
            ran("", "cargo test -p core"),
        ];
        let sessions = ["main", "main:agent:a1", "other"];
        let (_dir, conn) = store(&in_sessions(&sessions, &habit));
        conn.execute(
            "INSERT INTO sessions (id, source, parent) VALUES ('main:agent:a1', 'claude-code', 'main')
             ON CONFLICT (id) DO UPDATE SET parent = excluded.parent",
            [],
        )
        .expect("the link is stored");
        let options = MineOptions {
            min_occurrences: 100,
            ..MineOptions::default()
        };
        let report = mine(&conn, &options).expect("the run");
        // Two sessions, not three: not enough.
        assert_eq!(report.sessions, 2);
        assert!(report.patterns.is_empty(), "{:#?}", report.patterns);
        let two = MineOptions {
            min_support: 2,
            ..options
        };
        let report = mine(&conn, &two).expect("the run");
        let p = &starting_with(&report, "cargo build")[0];
        assert_eq!((p.support, p.occurrences), (2, 3));
    }

    #[test]
    fn file_shuffling_that_shares_nothing_and_a_retry_are_no_habit_a_tool_takes() {
        // Each of five sessions: two common commands one after the other, on unrelated files;
        // a directory made and a file moved into it; a removal tried again with `-r`.
        let mut calls = Vec::new();
        for i in 0..5 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("rm -rf old{i}")));
            calls.push(run(format!("mkdir new{i}")));
            calls.push(run(format!("first{i} --check")));
            calls.push(run(format!("second{i} --check")));
            calls.push(run(format!("mkdir dir{i}")));
            calls.push(run(format!("mv f{i}.txt dir{i}")));
            calls.push(run(format!("third{i} --check")));
            calls.push(run(format!("fourth{i} --check")));
            calls.push(run(format!("rm tree{i}/")));
            calls.push(run(format!("rm tree{i}/ -r")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let find = |steps: &[&str]| {
            report
                .patterns
                .iter()
                .find(|p| p.templates == steps)
                .unwrap_or_else(|| panic!("{steps:?} in {summary:#?}"))
        };
        let unrelated = find(&["rm -rf <value>", "mkdir <value_2>"]);
        assert!(unrelated.only_shuffles_files());
        assert_eq!(unrelated.retried_step(), None);
        let into = find(&["mkdir <value>", "mv <value_2>.txt <value>"]);
        assert!(!into.only_shuffles_files(), "{into:#?}");
        assert_eq!(into.retried_step(), None);
        assert_eq!(unrelated.one_command_looked_around(), None);
        let retry = find(&["rm <value>/", "rm <value>/ -r"]);
        assert_eq!(
            retry.retried_step().map(|s| s.template.as_str()),
            Some("rm <path>")
        );
    }

    #[test]
    fn an_agent_call_that_always_follows_a_habit_does_not_hide_it() {
        // `cargo build -p X → cargo test -p X`, then the agent reads a file, in every session:
        // the pattern with the `Read` has the habit's support, yet the habit is what is
        // proposed and the longer one is folded into it.
        let mut calls = Vec::new();
        for i in 0..5 {
            let session = format!("s{i}");
            let bash = |c: String| (session.clone(), "Bash", serde_json::json!({ "command": c }));
            calls.push(bash(ONE_OFFS[i].to_owned()));
            calls.push(bash(format!("cargo build -p crate{i}")));
            calls.push(bash(format!("cargo test -p crate{i}")));
            calls.push((
                session.clone(),
                "Read",
                serde_json::json!({ "file_path": format!("/src/crate{i}/lib.rs") }),
            ));
            calls.push(bash(ONE_OFFS[i + 1].to_owned()));
        }
        let (_dir, conn) = store_calls(&calls);
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let habit = report
            .patterns
            .iter()
            .find(|p| {
                p.templates.len() == 2
                    && p.templates[0].starts_with("cargo build")
                    && p.templates[1].starts_with("cargo test")
            })
            .unwrap_or_else(|| panic!("the habit among {summary:#?}"));
        assert!(habit.folded_into.is_none(), "{summary:#?}");
        assert!(habit.steps.iter().all(|s| !s.agent_tool));
        assert_eq!((habit.support, habit.evidence.len()), (5, 5));
        let with_read = starting_with(&report, "cargo build")
            .into_iter()
            .find(|p| p.steps.iter().any(|s| s.agent_tool))
            .unwrap_or_else(|| panic!("the longer pattern among {summary:#?}"));
        assert_eq!(
            with_read.folded_into.as_ref().map(|f| &f.id),
            Some(&habit.id),
            "{summary:#?}"
        );
    }
}
