//! A mining run: the stored actions in, ranked patterns out.
//!
//! 1. **Load** every action, session by session, through a read-only connection (the daemon's
//!    writer keeps ingesting meanwhile). Each action is tokenized at once and only what mining
//!    needs is kept: its token symbols, its command's key, its outcome and duration, and for a
//!    failure the template of its error line (the output itself is dropped). Noise actions
//!    (`ls`, `TodoWrite`, …) leave no trace.
//! 2. **Mine** three kinds of patterns: repeated token sequences ([`super::sequences`]), single
//!    complex commands repeated with varying arguments, error→recovery habits
//!    ([`super::recovery`]) and slow operations.
//! 3. **Rank** them by an upper bound of the score (as if perfectly consistent), then **align**
//!    the best ones ([`super::params`]): only their occurrences' actions are read again and
//!    re-tokenized, so memory stays proportional to the symbols, not to the logs.
//! 4. **Score** the aligned patterns ([`super::score`]) and return them, best first.
//!
//! [`store_patterns`] then writes them in one transaction, keeping each known pattern's status
//! (a pattern whose candidate was rejected stays rejected, one already proposed or covered by an
//! approved tool is not proposed again).
//!
//! One file per step: `load.rs` (1), `find.rs` (2), `align.rs` (3 and 4: rank, align, score),
//! `fold.rs` (one habit, one pattern: the fold, and the heads completed), `report.rs` (what a
//! run returns), `words.rs` (the user's shell: the definitions each pattern was typed through,
//! its unknown short words).

use std::time::Instant;

use rusqlite::{Connection, params};

use super::chance::{Association, count_links};
use super::pattern::{CandidateOutcomes, Pattern, PatternKind, apply_outcomes, replace_patterns};
use super::sequences::{self, SequenceMinerError};
use super::token::{NoiseRules, Token, Tokenizer};
use crate::config::MineSettings;
use crate::store::{self, StoreError};

mod align;
mod find;
mod fold;
mod load;
mod report;
mod uses;
mod words;

use align::{align_and_score, best_first, rank};
use find::{find_commands, find_recovery_habits, find_sequences};
use fold::{complete_heads, fold_groups, mark_folded};
use load::{Refetch, Session, load};
pub use report::{KindCounts, MineReport, MineSummary, Phases, TopPattern};
pub use uses::{Habit, HandRun, runs_by_hand};
pub use words::{SHORT_WORD, UserShell};

/// Programs a person drives by hand (editors, pagers, monitors, shells, REPLs without a
/// script, a file opened in the desktop's application for it): no tool can do their part, so
/// no pattern goes through them, nor across them: each is a wall of the sequence search
/// (`SequenceMinerConfig::walls_from`).
pub const INTERACTIVE_PROGRAMS: &[&str] = &[
    "vim", "vi", "nvim", "nano", "emacs", "micro", "helix", "hx", "code", "htop", "top", "btop",
    "less", "more", "man", "ssh", "mosh", "tmux", "screen", "ranger", "yazi", "yy", "lf", "nnn",
    "mc", "lazygit", "tig", "fzf", "watch", "glow", "open", "xdg-open",
];

/// Programs that are interactive when run without arguments (a REPL), and scripts otherwise.
pub const REPL_PROGRAMS: &[&str] = &[
    "python",
    "python3",
    "ipython",
    "node",
    "irb",
    "ghci",
    "psql",
    "sqlite3",
    "mysql",
    "bash",
    "zsh",
    "fish",
    "sh",
    "redis-cli",
    "lua",
    "R",
];

/// Whether a token is a step no tool can take (see [`INTERACTIVE_PROGRAMS`]), looking through
/// `sudo`/`doas` and leading assignments.
fn interactive(token: &Token) -> bool {
    if token.by_hand {
        return true;
    }
    let mut words = token
        .key
        .split(' ')
        .skip_while(|w| matches!(*w, "sudo" | "doas") || w.contains('='));
    let Some(program) = words.next() else {
        return false;
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    INTERACTIVE_PROGRAMS.contains(&program)
        || (REPL_PROGRAMS.contains(&program) && words.next().is_none())
}

/// Whether some run of steps is immediately repeated (`a a`, `a b a b`): a retry or a loop,
/// which a tool would do once. The shorter pattern stands for the habit.
fn repeats_a_block(items: &[u32]) -> bool {
    (1..=items.len() / 2).any(|len| {
        (0..=items.len() - 2 * len).any(|at| items[at..at + len] == items[at + len..at + 2 * len])
    })
}

/// Agent tools that read or write file contents: the model's own work, which no tool can take
/// over. A pattern made of these alone is not proposed (one with a command among them is).
pub const CONTENT_TOOLS: &[&str] = &[
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "apply_patch",
    "str_replace_editor",
    "str_replace_based_edit_tool",
    "create",
    "edit",
    "insert",
    "open",
    "view",
    "append",
    "replace",
    "ReadFile",
    "WriteFile",
    "StrReplaceFile",
    "ApplyPatch",
    "read_file",
    "write_to_file",
    "replace_in_file",
];

/// Whether every step of a pattern is a [`CONTENT_TOOLS`] call.
fn only_content<S: AsRef<str>>(keys: &[S]) -> bool {
    keys.iter()
        .all(|k| CONTENT_TOOLS.contains(&k.as_ref().split(' ').next().unwrap_or_default()))
}

/// Marks a by-hand step while loading; replaced by a per-session symbol before mining.
const BARRIER: u32 = u32::MAX;

/// How a run mines; [`MineOptions::from_settings`] reads the `[mine]` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct MineOptions {
    /// Sessions a pattern must be seen in, at least (a sub-agent's count with its parent's)…
    pub min_support: u32,
    /// …unless it occurs at least this many times (occurrences that do not overlap; and at
    /// least the sessions needed) in two sessions at least (one for a recovery): a habit
    /// repeated often in few sessions. At least 2.
    pub min_occurrences: u32,
    /// Share of the sessions (percent) a pattern must be seen in, when that is more.
    pub min_support_percent: u32,
    /// Other actions allowed between two steps of a sequence.
    pub max_gap: u32,
    /// Fewest steps of a sequence.
    pub min_length: usize,
    /// Most steps of a sequence.
    pub max_length: usize,
    /// Folding ratio (0.5–1).
    pub fold_ratio: f64,
    /// Median duration (ms) from which an action is a slow operation.
    pub slow_ms: u64,
    /// Most actions between a failure and its successful re-run.
    pub max_recovery_steps: usize,
    /// Most patterns of each kind aligned and reported per run.
    pub max_patterns_per_kind: usize,
    /// Most occurrences held and aligned per pattern (one per session first, then the repeats
    /// within sessions): the bound on what a pattern costs however long its sessions are. 50 by
    /// default, far above what shows a habit (`min_occurrences`, 4).
    pub max_occurrences: usize,
    /// Occurrences kept as evidence per pattern (each one a dry-run test of its tool): 20 by
    /// default.
    pub max_evidence: usize,
}

impl Default for MineOptions {
    fn default() -> Self {
        MineOptions {
            min_support: 3,
            min_occurrences: 4,
            min_support_percent: 1,
            max_gap: 1,
            min_length: 2,
            max_length: 8,
            fold_ratio: 0.9,
            slow_ms: 30_000,
            max_recovery_steps: 8,
            max_patterns_per_kind: 200,
            max_occurrences: 50,
            max_evidence: 20,
        }
    }
}

impl MineOptions {
    /// The support a pattern needs among `sessions` sessions: `min_support`, or
    /// `min_support_percent` of the sessions when that is more; never below 2.
    pub fn effective_support(&self, sessions: usize) -> u32 {
        let share = (sessions as u64 * u64::from(self.min_support_percent)).div_ceil(100);
        u32::try_from(share)
            .unwrap_or(u32::MAX)
            .max(self.min_support)
            .max(2)
    }

    /// The options the `[mine]` table sets; the rest at their defaults.
    pub fn from_settings(settings: &MineSettings) -> MineOptions {
        MineOptions {
            min_support: settings.min_support.value,
            min_occurrences: settings.min_occurrences.value.max(2),
            min_support_percent: settings.min_support_percent.value,
            max_gap: settings.max_gap.value,
            min_length: settings.min_length.value as usize,
            max_length: settings.max_length.value as usize,
            fold_ratio: f64::from(settings.fold_percent.value) / 100.0,
            slow_ms: u64::from(settings.slow_ms.value),
            ..MineOptions::default()
        }
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The options are not usable.
    #[error("mining options: {0}; check the [mine] table of the configuration")]
    Options(#[from] SequenceMinerError),
}

impl From<rusqlite::Error> for MineError {
    fn from(err: rusqlite::Error) -> Self {
        MineError::Store(StoreError::Query(err))
    }
}

/// Token positions of one occurrence in one session.
struct Occ<'s> {
    session: &'s Session,
    positions: Vec<usize>,
}

/// A pattern before alignment: its kind, its steps' symbols and where it occurs.
struct Found<'s> {
    kind: PatternKind,
    keys: Vec<String>,
    support: u32,
    /// Occurrences counted (at most one per session for sequences).
    count: u32,
    /// Some occurrences, one per session first: the first `aligned` are aligned.
    occurrences: Vec<Occ<'s>>,
    /// A sequence's further occurrences (its repeats within sessions), held compactly (12
    /// bytes each) until the pattern stands for its habit ([`complete_heads`]): with
    /// `occurrences`, at most [`MineOptions::max_occurrences`].
    more: Vec<sequences::Occurrence>,
    /// A sequence's symbols (empty for the other kinds), to place `more`'s steps.
    items: Box<[u32]>,
    /// Recovery: the failed action's duration total, and the error template.
    trigger: Option<String>,
    /// The agent calls an occurrence takes.
    calls_per_occurrence: f64,
    /// A single command line (a habit only when its arguments vary).
    single: bool,
    /// A sequence's weakest link against chance ([`super::chance`]); `None` for the other
    /// kinds.
    association: Option<Association>,
    /// Upper bound of the score, to choose what to align.
    bound: f64,
    /// How many of `occurrences`, from the first, are aligned.
    aligned: usize,
}

/// Mines the actions of `conn`, knowing nothing of the user's shell. Reads only: see
/// [`store_patterns`] to keep the result.
pub fn mine(conn: &Connection, options: &MineOptions) -> Result<MineReport, MineError> {
    mine_for(conn, options, &UserShell::default())
}

/// Mines the actions of `conn` as `user`'s shell ran them: their aliases and functions read
/// (`gia x` is `git add x`; an interactive or opaque one a boundary) and, when their programs
/// are known, a pattern holding a short word that names nothing there marked
/// ([`Pattern::unknown_programs`]). Reads only.
pub fn mine_for(
    conn: &Connection,
    options: &MineOptions,
    user: &UserShell,
) -> Result<MineReport, MineError> {
    let started = Instant::now();
    let tokenizer =
        Tokenizer::new(&NoiseRules::default()).with_definitions(user.definitions.clone());
    let loaded = load(conn, &tokenizer)?;
    let load_ms = elapsed_ms(started);
    let min_support = options.effective_support(loaded.families.len());
    // Never fewer occurrences than the sessions a pattern would need: with many sessions the
    // support grows (`min_support_percent`), and so must the occurrences that stand in for it.
    let needed = Needed {
        support: min_support,
        occurrences: options.min_occurrences.max(2).max(min_support),
    };
    let sequences = find_sequences(&loaded, options, needed)?;
    let mut found = sequences.found;
    found.extend(find_commands(&loaded, options, needed));
    found.extend(find_recovery_habits(&loaded, options, needed));
    test_against_chance(&loaded, &mut found, options);
    rank(&mut found);
    let mined_ms = elapsed_ms(started) - load_ms;
    let mut refetch = Refetch::new(conn, &tokenizer)?;
    let mut patterns = align_and_score(&mut refetch, &loaded, &found, options)?;
    // Before the fold: a pattern holding an unknown word does not stand for its habit.
    let mut programs = words::Programs::new(user);
    for ranked in &mut patterns {
        programs.mark(&mut ranked.pattern);
    }
    let counts = loaded.symbol_counts();
    let step_count = |key: &str| {
        loaded
            .interner
            .get(key)
            .and_then(|s| counts.get(s as usize).copied())
            .unwrap_or(u32::MAX)
    };
    let groups = fold_groups(&patterns, options.fold_ratio, &step_count);
    let groups = complete_heads(
        &mut refetch,
        &loaded,
        &found,
        &mut patterns,
        groups,
        options,
        needed,
    )?;
    mark_folded(&mut patterns, groups);
    best_first(&mut patterns);
    let mut patterns: Vec<Pattern> = patterns.into_iter().map(|r| r.pattern).collect();
    words::record_expansions(&mut patterns, &refetch.used, &user.definitions);
    // The heads were aligned again.
    for pattern in &mut patterns {
        programs.mark(pattern);
    }
    let total_ms = elapsed_ms(started);
    Ok(MineReport {
        phases_ms: Phases {
            load: load_ms,
            mine: mined_ms,
            sequences: sequences.ms,
            sequence_nodes: sequences.nodes,
            align: total_ms - load_ms - mined_ms,
        },
        sessions: loaded.families.len(),
        actions: loaded.actions,
        tokens: loaded.sessions.iter().map(|s| s.symbols.len()).sum(),
        unparsed: loaded.unparsed,
        foreign: loaded.foreign,
        symbols: loaded.interner.len(),
        last_action: loaded.last_action,
        duration_ms: elapsed_ms(started),
        truncated: sequences.truncated,
        min_support,
        min_occurrences: needed.occurrences,
        shell_definitions: user.definitions.definitions().len(),
        shell_notes: user.definitions.notes.clone(),
        patterns,
    })
}

/// Tests every sequence's links against chance ([`super::chance`]), in one pass over the
/// sessions. A link is two consecutive lines (actions) of the habit, each as its whole command
/// line's key: the commands of one line (a pipeline, `a && b`) were typed together, which is no
/// question of chance, and a line is more particular than any of its commands (`… | sed …`
/// ends many lines).
fn test_against_chance(loaded: &load::Loaded, found: &mut [Found<'_>], options: &MineOptions) {
    // Per candidate, by its first occurrence: its links (the step each starts at, and the
    // command keys of the two actions).
    let crossing = |f: &Found<'_>| -> Vec<(u32, (u32, u32))> {
        let Some(occ) = f.occurrences.first() else {
            return Vec::new();
        };
        let rows = &occ.session.rows;
        let row = |at: usize| occ.positions.get(at).map(|&p| occ.session.token_row[p]);
        (0..f.items.len().saturating_sub(1))
            .filter_map(|i| {
                let (from, to) = (row(i)?, row(i + 1)?);
                (from != to).then(|| {
                    let command = |r: u32| rows.get(r as usize).map_or(u32::MAX, |r| r.command);
                    (i as u32, (command(from), command(to)))
                })
            })
            .collect()
    };
    let links: Vec<Vec<(u32, (u32, u32))>> = found.iter().map(crossing).collect();
    let mut pairs: Vec<(u32, u32)> = links.iter().flatten().map(|l| l.1).collect();
    pairs.sort_unstable();
    pairs.dedup();
    if pairs.is_empty() {
        return;
    }
    let sessions: Vec<Vec<u32>> = loaded
        .sessions
        .iter()
        .map(|s| s.rows.iter().map(|r| r.command).collect())
        .collect();
    let sessions: Vec<&[u32]> = sessions.iter().map(Vec::as_slice).collect();
    let window = options.max_gap as usize + 1;
    let counts = count_links(&sessions, &pairs, window);
    for (f, links) in found.iter_mut().zip(links) {
        let counted: Vec<(u32, _)> = links
            .iter()
            .filter_map(|(step, pair)| Some((*step, *counts.get(pairs.binary_search(pair).ok()?)?)))
            .collect();
        let only: Vec<_> = counted.iter().map(|c| c.1).collect();
        f.association = Association::weakest(&only).map(|mut a| {
            a.link = counted.get(a.link as usize).map_or(a.link, |c| c.0);
            a
        });
    }
}

/// What qualifies a pattern: the sessions it is seen in (sub-agents with their parents), or
/// failing that its occurrences.
#[derive(Debug, Clone, Copy)]
struct Needed {
    support: u32,
    occurrences: u32,
}

impl Needed {
    /// For a sequence or a command: its occurrences qualify it when they are in two sessions
    /// at least (one long session repeats its own loop; two show a habit).
    fn met(&self, support: u32, occurrences: usize) -> bool {
        support >= self.support || (support >= 2 && occurrences >= self.occurrences as usize)
    }

    /// For a recovery: the same failure fixed the same way, often, qualifies it even in one
    /// session (`npm run lint` failing, then `npm run lint -- --fix`, four times).
    fn met_by_recovery(&self, support: u32, occurrences: usize) -> bool {
        support >= self.support || occurrences >= self.occurrences as usize
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    since.elapsed().as_millis() as u64
}

/// Stores a run's patterns and the run itself, and brings the statuses up to date with what the
/// candidates came to (`outcomes`, from the stage that owns candidates): a pattern whose candidate
/// was rejected is `rejected` (with the reason), one with a candidate under way is `proposed`, one
/// whose candidate was approved is `covered`.
///
/// Returns the ids of the patterns found for the first time.
pub fn store_patterns(
    conn: &mut Connection,
    report: &MineReport,
    outcomes: &CandidateOutcomes,
) -> Result<Vec<String>, StoreError> {
    let now = store::unix_now();
    let fresh = replace_patterns(conn, &report.patterns, now)?;
    let tx = conn.transaction()?;
    apply_outcomes(&tx, outcomes)?;
    tx.execute(
        "INSERT INTO mine_runs (started_at, duration_ms, last_action, sessions, actions, patterns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            now,
            report.duration_ms as i64,
            report.last_action,
            report.sessions as i64,
            report.actions as i64,
            report.patterns.len() as i64
        ],
    )?;
    tx.commit()?;
    Ok(fresh)
}

/// The highest action id the last run read (0 before any run): actions above it are new.
pub fn last_mined_action(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(last_action), 0) FROM mine_runs",
        [],
        |row| row.get(0),
    )?)
}

/// When the last run started (`None` before any run).
pub fn last_run_started(conn: &Connection) -> Result<Option<jiff::Timestamp>, StoreError> {
    let seconds: Option<i64> =
        conn.query_row("SELECT MAX(started_at) FROM mine_runs", [], |r| r.get(0))?;
    Ok(seconds.and_then(|s| jiff::Timestamp::from_second(s).ok()))
}

#[cfg(test)]
mod test_support {
    //! What the steps' tests share: a real store holding the calls of a case, and readers of
    //! a report.

    use std::collections::HashMap;

    use serde_json::Value;
    use tempfile::TempDir;

    use super::load::Loaded;
    use super::*;
    use crate::action::{Action, ActionResult, Source};
    use crate::ingest::store as ingest_store;
    use crate::store::{Store, open_for_update};

    /// One stored Bash call: session, command line, outcome, output, duration (ms).
    pub(super) type Call<'a> = (&'a str, &'a str, Option<bool>, Option<&'a str>, Option<i64>);

    pub(super) fn ran<'a>(session: &'a str, command: &'a str) -> Call<'a> {
        (session, command, Some(true), None, None)
    }

    /// A real store (migrated by [`Store::open`]) holding `calls`, numbered in order within
    /// each session, and a connection to it.
    /// Every pattern's templates, occurrences and what it folded into, for assertion messages.
    pub(super) fn fold_summary(report: &MineReport) -> Vec<String> {
        report
            .patterns
            .iter()
            .map(|p| {
                let into = p.folded_into.as_ref().map(|f| &f.id);
                format!("{:?} ×{} → {into:?}", p.templates, p.occurrences)
            })
            .collect()
    }

    pub(super) fn store(calls: &[Call<'_>]) -> (TempDir, Connection) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("state.db");
        drop(Store::open(&path).expect("the store opens"));
        let mut conn = open_for_update(&path).expect("a connection");
        let mut seqs: HashMap<&str, u64> = HashMap::new();
        let mut actions = Vec::new();
        for (session, command, ok, output, ms) in calls {
            let seq = seqs.entry(session).or_default();
            *seq += 1;
            actions.push(Action {
                session: (*session).to_owned(),
                seq: *seq,
                ts: None,
                source: Source::ClaudeCode,
                cwd: None,
                tool: "Bash".into(),
                input: serde_json::json!({ "command": command }),
                call_id: None,
                parent_session: None,
                result: ok.map(|ok| ActionResult {
                    ok,
                    exit_code: None,
                    output: output.unwrap_or_default().to_owned(),
                    // Stored as i64 again: a negative duration reads back as it was given.
                    duration_ms: ms.map(|ms| ms as u64),
                }),
            });
        }
        ingest_store::store_actions(&mut conn, "/logs/session.jsonl", actions)
            .expect("the actions are stored");
        (dir, conn)
    }

    /// `support` sessions, or the default occurrences.
    pub(super) fn needed(support: u32) -> Needed {
        Needed {
            support,
            occurrences: MineOptions::default().min_occurrences,
        }
    }

    pub(super) fn loaded(conn: &Connection) -> Loaded {
        load(conn, &Tokenizer::default()).expect("the actions load")
    }

    /// The same calls in sessions `s1`, `s2`, …
    pub(super) fn in_sessions<'a>(sessions: &[&'a str], calls: &[Call<'a>]) -> Vec<Call<'a>> {
        sessions
            .iter()
            .flat_map(|s| calls.iter().map(move |c| (*s, c.1, c.2, c.3, c.4)))
            .collect()
    }

    /// Owned calls as [`Call`]s.
    pub(super) fn calls_of(
        calls: &[(String, String, Option<bool>, Option<String>)],
    ) -> Vec<Call<'_>> {
        calls
            .iter()
            .map(|(s, c, ok, o)| (s.as_str(), c.as_str(), *ok, o.as_deref(), None))
            .collect()
    }

    /// The patterns of a run whose first step's template starts with `first` (the program's
    /// directory aside: `./scripts/check.sh` is `check.sh` or itself, by the tokenizer).
    pub(super) fn starting_with<'r>(report: &'r MineReport, first: &str) -> Vec<&'r Pattern> {
        report
            .patterns
            .iter()
            .filter(|p| {
                p.templates.first().is_some_and(|t| {
                    t.starts_with(first)
                        || t.rsplit_once('/')
                            .is_some_and(|(_, t)| t.starts_with(first))
                        || first
                            .rsplit_once('/')
                            .is_some_and(|(_, f)| t.starts_with(f))
                })
            })
            .collect()
    }

    /// Distinct one-off commands: neither noise nor a habit.
    pub(super) const ONE_OFFS: [&str; 6] = [
        "git diff",
        "cargo fmt",
        "rg -n TODO",
        "git stash list",
        "du -sh .",
        "python3 --version",
    ];

    /// Stores `(session, tool, input)` calls, numbered in order within each session, all
    /// succeeding, as Claude Code's.
    pub(super) fn store_calls(calls: &[(String, &str, Value)]) -> (TempDir, Connection) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("state.db");
        drop(Store::open(&path).expect("the store opens"));
        let conn = open_for_update(&path).expect("a connection");
        let mut seqs: HashMap<&str, u64> = HashMap::new();
        for (session, tool, input) in calls {
            let seq = seqs.entry(session).or_default();
            *seq += 1;
            conn.execute(
                "INSERT INTO actions (session, seq, source, tool, input, ok)
                 VALUES (?1, ?2, 'claude-code', ?3, ?4, 1)",
                params![session, *seq as i64, tool, input.to_string()],
            )
            .expect("the action is stored");
        }
        (dir, conn)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn a_run_aligns_scores_and_stores_its_patterns() {
        let mut calls = Vec::new();
        for (session, package) in [("s1", "core"), ("s2", "cli"), ("s3", "web")] {
            calls.push((session, format!("cargo build -p {package}")));
            calls.push((session, format!("cargo test -p {package}")));
            calls.push((session, "git push".to_owned()));
        }
        let calls: Vec<Call<'_>> = calls.iter().map(|(s, c)| ran(s, c)).collect();
        let (_dir, mut conn) = store(&calls);
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        assert_eq!((report.sessions, report.actions, report.tokens), (3, 9, 9));
        assert_eq!((report.min_support, report.last_action), (3, 9));
        let best = &report.patterns[0];
        assert_eq!(best.kind, PatternKind::Sequence);
        assert_eq!(
            best.templates,
            [
                "cargo build -p <package>",
                "cargo test -p <package>",
                "git push"
            ]
        );
        assert_eq!(best.params.len(), 1);
        assert_eq!(best.evidence.len(), 3);
        assert_eq!(report.summary().patterns, report.patterns.len());
        assert_eq!(last_mined_action(&conn).expect("read"), 0);
        assert_eq!(last_run_started(&conn).expect("read"), None);
        let fresh =
            store_patterns(&mut conn, &report, &CandidateOutcomes::default()).expect("stored");
        assert_eq!(fresh.len(), report.patterns.len());
        assert_eq!(last_mined_action(&conn).expect("read"), 9);
        assert!(last_run_started(&conn).expect("read").is_some());
        // The same patterns again are not new.
        assert!(
            store_patterns(&mut conn, &report, &CandidateOutcomes::default())
                .expect("stored")
                .is_empty()
        );
    }
}
