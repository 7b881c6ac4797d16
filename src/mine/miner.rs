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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::ControlFlow;
use std::time::Instant;

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::params::{AlignInput, Aligned, align};
use super::pattern::{
    CandidateOutcomes, Folded, Pattern, PatternKind, Replay, Trigger, apply_outcomes, pattern_id,
    replace_patterns,
};
use super::recovery::{
    AsAttempt, Attempt, RecoveryGroup, error_line, find_recoveries, group_recoveries,
};
use super::score::{SECONDS_PER_CALL, ScoreInput, score};
use super::sequences::{self, PatternRef, SequenceMiner, SequenceMinerConfig, SequenceMinerError};
use super::templates::{TemplateId, TemplateMiner, TemplateMinerConfig};
use super::token::{InternError, Interner, LineParse, NoiseRules, Token, TokenKind, Tokenizer};
use crate::action::stored as actions_table;
use crate::action::{Action, ActionResult, Source};
use crate::config::MineSettings;
use crate::store::{self, StoreError};

/// Programs a person drives by hand (editors, pagers, monitors, shells, REPLs without a
/// script): no tool can do their part, so no pattern goes through them. They still occupy
/// their place in the session, so the steps around them are not taken for neighbours.
pub const INTERACTIVE_PROGRAMS: &[&str] = &[
    "vim", "vi", "nvim", "nano", "emacs", "micro", "helix", "hx", "code", "htop", "top", "btop",
    "less", "more", "man", "ssh", "mosh", "tmux", "screen", "ranger", "yazi", "yy", "lf", "nnn",
    "mc", "lazygit", "tig", "fzf", "watch", "glow",
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

/// One action as mining keeps it (28 bytes: millions of them are held at once).
#[derive(Debug, Clone, Copy)]
struct Row {
    seq: u64,
    /// The command's key: its tokens' keys together.
    command: u32,
    /// Index of its first token in the session's token sequence.
    first_token: u32,
    error: Option<TemplateId>,
    /// Duration in ms (capped at about 49 days).
    duration_ms: Option<u32>,
    tokens: u16,
    ok: Option<bool>,
    /// Holds a step no tool can take ([`INTERACTIVE_PROGRAMS`]).
    by_hand: bool,
}

impl AsAttempt for Row {
    fn attempt(&self) -> Attempt {
        Attempt {
            key: self.command,
            ok: self.ok,
            error: self.error,
        }
    }
}

impl Row {
    /// Positions of its tokens in the session's sequence.
    fn token_range(&self) -> std::ops::Range<usize> {
        let first = self.first_token as usize;
        first..first + usize::from(self.tokens)
    }

    fn duration(&self) -> Option<u64> {
        self.duration_ms.map(u64::from)
    }
}

#[derive(Debug, Default)]
struct Session {
    id: String,
    /// Its index among the loaded sessions.
    index: u32,
    /// The session it counts with: its own index among the families, shared by a sub-agent's
    /// session and its parent's.
    family: u32,
    rows: Vec<Row>,
    symbols: Vec<u32>,
    /// For each token, the index of its row.
    token_row: Vec<u32>,
}

/// Everything loaded for a run.
struct Loaded {
    sessions: Vec<Session>,
    /// Family (a top-level session) names, by index.
    families: HashMap<String, u32>,
    interner: Interner,
    /// Per symbol: whether it is an agent's own tool call (`Read`, `Edit`, SWE-agent's `open`).
    agent_tool: Vec<bool>,
    commands: Interner,
    /// Per command key, its tokens' count and words: how complex one command is.
    command_words: Vec<(u32, u32)>,
    errors: TemplateMiner,
    actions: usize,
    /// Actions whose command line did not parse, and of those the foreign ones.
    unparsed: usize,
    foreign: usize,
    last_action: i64,
}

/// The columns of a stored action that tokenizing needs.
struct StoredCall {
    source: String,
    cwd: Option<String>,
    tool: String,
    input: String,
    ok: Option<bool>,
}

impl StoredCall {
    /// The action again, as the tokenizer takes it (a stored input that is not JSON, which
    /// ingest never writes, is kept as a string rather than failing the run).
    fn into_action(self, session: &str, seq: u64) -> Action {
        Action {
            session: session.to_owned(),
            seq,
            ts: None,
            source: Source::from_name(&self.source).unwrap_or(Source::Native),
            cwd: self.cwd,
            tool: self.tool,
            input: serde_json::from_str(&self.input).unwrap_or(Value::String(self.input)),
            call_id: None,
            parent_session: None,
            result: self.ok.map(|ok| ActionResult {
                ok,
                exit_code: None,
                output: String::new(),
                duration_ms: None,
            }),
        }
    }
}

/// An action read again for alignment: its tokens and its output.
type Refetched = (Vec<Token>, Option<String>);

/// What tokenizing one command gave, kept so that the same command is tokenized once a run.
#[derive(Debug, Clone)]
struct Abstracted {
    command: u32,
    /// Symbols of its tokens, [`BARRIER`] for a by-hand step.
    symbols: Box<[u32]>,
    by_hand: bool,
}

/// Distinct commands remembered per run before the cache starts over (bounds its memory).
const TOKEN_CACHE_ENTRIES: usize = 200_000;

/// Reads every action, session by session, keeping what mining needs of each (see the module
/// documentation, step 1).
fn load(conn: &Connection, tokenizer: &Tokenizer) -> Result<Loaded, MineError> {
    let mut loaded = Loaded::new();
    let mut current = Session::default();
    let mut cache = CommandCache::new(tokenizer);
    // A sub-agent's session counts with its parent's.
    let parents = actions_table::session_parents(conn)?;
    actions_table::for_each_action(conn, |row| -> Result<(), MineError> {
        loaded.actions += 1;
        loaded.last_action = loaded.last_action.max(row.id);
        if row.session != current.id {
            loaded.close_session(&mut current);
            current.id = row.session.to_owned();
            let family = parents.get(row.session).map_or(row.session, String::as_str);
            current.family = loaded.family(family);
        }
        let call = CallText {
            source: row.source,
            tool: row.tool,
            input: row.input,
            ok: row.ok,
        };
        let Some(abstracted) = cache.abstracted(&mut loaded, &call, &current.id, row.seq)? else {
            return Ok(());
        };
        let error = if row.ok == Some(false) {
            loaded.error_template(row.failed_output)
        } else {
            None
        };
        let duration_ms = row
            .duration_ms
            .map(|d| u32::try_from(d.max(0)).unwrap_or(u32::MAX));
        current.push(row.seq, row.ok, error, duration_ms, &abstracted);
        Ok(())
    })?;
    loaded.close_session(&mut current);
    loaded.own_barriers();
    Ok(loaded)
}

/// The columns of a stored action that say what it ran, borrowed from the row.
struct CallText<'r> {
    source: &'r str,
    tool: &'r str,
    input: &'r str,
    ok: Option<bool>,
}

/// Agents run the same commands again and again: each distinct one is tokenized once a run.
struct CommandCache<'t> {
    tokenizer: &'t Tokenizer,
    /// Per distinct call: its tokens interned, and what became of its command line.
    cache: HashMap<Box<str>, (Option<Abstracted>, LineParse)>,
    /// The key being looked up, kept to reuse its buffer.
    key: String,
}

impl<'t> CommandCache<'t> {
    fn new(tokenizer: &'t Tokenizer) -> Self {
        CommandCache {
            tokenizer,
            cache: HashMap::new(),
            key: String::new(),
        }
    }

    /// What `call` abstracts to (`None` for noise), interned into `loaded`.
    fn abstracted(
        &mut self,
        loaded: &mut Loaded,
        call: &CallText<'_>,
        session: &str,
        seq: u64,
    ) -> Result<Option<Abstracted>, MineError> {
        self.key.clear();
        for part in [call.source, "\0", call.tool, "\0", call.input] {
            self.key.push_str(part);
        }
        if let Some((hit, parse)) = self.cache.get(self.key.as_str()) {
            loaded.count_parse(*parse);
            return Ok(hit.clone());
        }
        let action = StoredCall {
            source: call.source.to_owned(),
            cwd: None,
            tool: call.tool.to_owned(),
            input: call.input.to_owned(),
            ok: call.ok,
        }
        .into_action(session, seq);
        let (tokens, parse) = self.tokenizer.tokens_and_parse(&action);
        loaded.count_parse(parse);
        let abstracted = loaded.abstract_tokens(&tokens)?;
        if self.cache.len() >= TOKEN_CACHE_ENTRIES {
            self.cache.clear();
        }
        self.cache
            .insert(self.key.as_str().into(), (abstracted.clone(), parse));
        Ok(abstracted)
    }
}

/// The error a run reports when the symbols run out.
fn symbols_full(_: InternError) -> MineError {
    MineError::Store(StoreError::Corrupt {
        what: "token table".into(),
        reason: "more than 2^32 distinct tokens".into(),
    })
}

impl Loaded {
    fn new() -> Self {
        Loaded {
            sessions: Vec::new(),
            families: HashMap::new(),
            interner: Interner::new(),
            agent_tool: Vec::new(),
            commands: Interner::new(),
            command_words: Vec::new(),
            errors: TemplateMiner::new(TemplateMinerConfig::default()),
            actions: 0,
            unparsed: 0,
            foreign: 0,
            last_action: 0,
        }
    }

    /// Counts an action whose command line did not parse.
    fn count_parse(&mut self, parse: LineParse) {
        match parse {
            LineParse::Unparsed => self.unparsed += 1,
            LineParse::Foreign => {
                self.unparsed += 1;
                self.foreign += 1;
            }
            LineParse::NoLine | LineParse::Parsed => {}
        }
    }

    /// One command's tokens interned: its command key, its symbols ([`BARRIER`] for a by-hand
    /// step) and, for a new command, how complex it is. `None` when it has no token.
    fn abstract_tokens(&mut self, tokens: &[Token]) -> Result<Option<Abstracted>, MineError> {
        if tokens.is_empty() {
            return Ok(None);
        }
        let key = tokens
            .iter()
            .map(|t| t.key.as_str())
            .collect::<Vec<_>>()
            .join(" ; ");
        let command = self.commands.intern(&key).map_err(symbols_full)?;
        if command as usize == self.command_words.len() {
            let words: usize = tokens.iter().map(|t| t.key.split(' ').count()).sum();
            self.command_words.push((
                tokens.len() as u32,
                u32::try_from(words).unwrap_or(u32::MAX),
            ));
        }
        let mut symbols = Vec::with_capacity(tokens.len());
        // A row counts its tokens in 16 bits; a longer command line is cut there.
        for token in tokens.iter().take(usize::from(u16::MAX)) {
            symbols.push(if interactive(token) {
                BARRIER
            } else {
                let symbol = self.interner.intern(&token.key).map_err(symbols_full)?;
                if symbol as usize == self.agent_tool.len() {
                    self.agent_tool.push(token.kind == TokenKind::Tool);
                }
                symbol
            });
        }
        Ok(Some(Abstracted {
            command,
            by_hand: symbols.contains(&BARRIER),
            symbols: symbols.into_boxed_slice(),
        }))
    }

    /// How many times each symbol is run, over all sessions.
    fn symbol_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.interner.len()];
        for session in &self.sessions {
            for &s in &session.symbols {
                if let Some(n) = counts.get_mut(s as usize) {
                    *n = n.saturating_add(1);
                }
            }
        }
        counts
    }

    /// The index of the family (top-level session) `name`.
    fn family(&mut self, name: &str) -> u32 {
        let next = self.families.len() as u32;
        *self.families.entry(name.to_owned()).or_insert(next)
    }

    /// Distinct families among the sessions `indices`.
    fn support(&self, indices: impl IntoIterator<Item = usize>) -> u32 {
        indices
            .into_iter()
            .map(|s| self.sessions[s].family)
            .collect::<BTreeSet<_>>()
            .len() as u32
    }

    /// The template of a failure's error line, when its output has one.
    fn error_template(&mut self, output: Option<&str>) -> Option<TemplateId> {
        output
            .and_then(error_line)
            .map(|line| self.errors.add(line).id)
    }

    /// Keeps the session read so far, if it has a step, and empties `current` for the next.
    fn close_session(&mut self, current: &mut Session) {
        if current.symbols.is_empty() {
            current.rows.clear();
            current.token_row.clear();
        } else {
            current.index = self.sessions.len() as u32;
            self.sessions.push(std::mem::take(current));
        }
    }

    /// Each by-hand step becomes a symbol of its own, seen once: never frequent (by sessions or
    /// by occurrences), so no pattern holds it, yet it still counts as a gap.
    fn own_barriers(&mut self) {
        let mut next = self.interner.len() as u64;
        for session in &mut self.sessions {
            for symbol in &mut session.symbols {
                if *symbol == BARRIER {
                    *symbol = u32::try_from(next).unwrap_or(BARRIER - 1);
                    next += 1;
                }
            }
        }
    }
}

impl Session {
    /// Appends one action that has tokens.
    fn push(
        &mut self,
        seq: u64,
        ok: Option<bool>,
        error: Option<TemplateId>,
        duration_ms: Option<u32>,
        abstracted: &Abstracted,
    ) {
        let row_index = self.rows.len() as u32;
        self.rows.push(Row {
            seq,
            command: abstracted.command,
            ok,
            error,
            duration_ms,
            first_token: self.symbols.len() as u32,
            tokens: abstracted.symbols.len() as u16,
            by_hand: abstracted.by_hand,
        });
        self.symbols.extend_from_slice(&abstracted.symbols);
        self.token_row
            .extend(std::iter::repeat_n(row_index, abstracted.symbols.len()));
    }
}

/// Reads actions back for alignment, tokenized, with their outputs; cached within a run.
struct Refetch<'c> {
    calls: actions_table::CallLookup<'c>,
    tokenizer: &'c Tokenizer,
    cache: HashMap<(String, u64), Refetched>,
    /// About how many bytes the cache holds (outputs, inline inputs, keys).
    cached_bytes: usize,
}

/// Bytes of re-read actions kept per run before the cache starts over: a habit's repeats in
/// long sessions would otherwise keep thousands of outputs for the whole run.
const REFETCH_CACHE_BYTES: usize = 4 << 20;

impl<'c> Refetch<'c> {
    fn new(conn: &'c Connection, tokenizer: &'c Tokenizer) -> Result<Self, MineError> {
        Ok(Refetch {
            calls: actions_table::CallLookup::new(conn)?,
            tokenizer,
            cache: HashMap::new(),
            cached_bytes: 0,
        })
    }

    fn action(&mut self, session: &str, seq: u64) -> Result<Option<&Refetched>, MineError> {
        let key = (session.to_owned(), seq);
        if !self.cache.contains_key(&key) {
            let Some(row) = self.calls.get(session, seq)? else {
                return Ok(None);
            };
            let output = row.output;
            let action = StoredCall {
                source: row.source,
                cwd: row.cwd,
                tool: row.tool,
                input: row.input,
                ok: row.ok,
            }
            .into_action(session, seq);
            let tokens = self.tokenizer.tokens(&action);
            let bytes = output.as_ref().map_or(0, String::len)
                + tokens
                    .iter()
                    .map(|t| {
                        t.key.len()
                            + t.template.len()
                            + t.stdin.as_ref().map_or(0, String::len)
                            + t.slots.iter().map(|v| v.value.len() + 32).sum::<usize>()
                            + 128
                    })
                    .sum::<usize>()
                + session.len()
                + 64;
            if self.cached_bytes + bytes > REFETCH_CACHE_BYTES {
                self.cache = HashMap::new();
                self.cached_bytes = 0;
            }
            self.cached_bytes += bytes;
            self.cache.insert(key.clone(), (tokens, output));
        }
        Ok(self.cache.get(&key))
    }
}

/// Token positions of one occurrence in one session.
struct Occ<'s> {
    session: &'s Session,
    positions: Vec<usize>,
}

/// Aligns a pattern's occurrences. For a recovery (`trigger`), the first step is the failure:
/// an occurrence succeeded when the steps after it did.
fn align_occurrences(
    refetch: &mut Refetch<'_>,
    occs: &[Occ<'_>],
    trigger: bool,
    options: &MineOptions,
) -> Result<Option<(Aligned, Vec<u64>)>, MineError> {
    let mut inputs = Vec::new();
    let mut durations = Vec::new();
    for occ in occs.iter().take(options.max_occurrences) {
        let s = occ.session;
        let mut tokens: Vec<Token> = Vec::new();
        let mut outputs = Vec::new();
        let mut piped = Vec::new();
        let mut ok = true;
        let mut rows_seen = BTreeSet::new();
        let mut fits = true;
        for (i, &pos) in occ.positions.iter().enumerate() {
            let row = s.rows[s.token_row[pos] as usize];
            rows_seen.insert(s.token_row[pos]);
            if !(trigger && i == 0) {
                ok &= row.ok != Some(false);
            }
            let within = pos - row.first_token as usize;
            match refetch.action(&s.id, row.seq)? {
                Some((action_tokens, output)) if within < action_tokens.len() => {
                    let token = &action_tokens[within];
                    let same_action =
                        i > 0 && s.token_row[occ.positions[i - 1]] == s.token_row[pos];
                    piped.push(
                        same_action
                            && tokens
                                .last()
                                .is_some_and(|prev| token.pipe_from == Some(prev.step)),
                    );
                    tokens.push(token.clone());
                    outputs.push(output.clone());
                }
                _ => fits = false,
            }
        }
        if !fits {
            continue;
        }
        let total: Option<u64> = rows_seen
            .iter()
            .map(|&r| s.rows[r as usize].duration())
            .sum();
        durations.extend(total);
        let first = s.rows[s.token_row[occ.positions[0]] as usize].seq;
        let last =
            s.rows[s.token_row[*occ.positions.last().unwrap_or(&occ.positions[0])] as usize].seq;
        let replay = whole_pipeline_replay(s, occ, &tokens, &piped, &outputs);
        inputs.push(AlignInput {
            session: s.id.clone(),
            seqs: (first, last),
            tokens,
            outputs,
            piped,
            replay,
            ok,
        });
    }
    Ok(align(&inputs, options.max_evidence).map(|a| (a, durations)))
}

/// The input and output of an occurrence that is one whole action, a pipeline fed data
/// written out in its line, that succeeded with its output recorded in full.
fn whole_pipeline_replay(
    session: &Session,
    occ: &Occ<'_>,
    tokens: &[Token],
    piped: &[bool],
    outputs: &[Option<String>],
) -> Option<Replay> {
    let first_row = *session.token_row.get(*occ.positions.first()?)?;
    let row = session.rows.get(first_row as usize)?;
    let whole = occ.positions.len() == usize::from(row.tokens)
        && occ
            .positions
            .iter()
            .all(|&p| session.token_row.get(p) == Some(&first_row));
    let stdin = tokens.first()?.stdin.clone()?;
    let stdout = outputs.first()?.clone()?;
    // A cut or redacted output is not what the pipeline printed.
    let complete = !stdout.contains(" bytes omitted …]") && !stdout.contains("[REDACTED:");
    (whole && row.ok == Some(true) && piped.iter().skip(1).all(|&p| p) && complete)
        .then_some(Replay { stdin, stdout })
}

fn median(values: &mut [u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[values.len() / 2])
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
    /// Upper bound of the score, to choose what to align.
    bound: f64,
    /// How many of `occurrences`, from the first, are aligned.
    aligned: usize,
}

/// Mines the actions of `conn`. Reads only: see [`store_patterns`] to keep the result.
pub fn mine(conn: &Connection, options: &MineOptions) -> Result<MineReport, MineError> {
    let started = Instant::now();
    let tokenizer = Tokenizer::new(&NoiseRules::default());
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
    rank(&mut found);
    let mined_ms = elapsed_ms(started) - load_ms;
    let mut refetch = Refetch::new(conn, &tokenizer)?;
    let mut patterns = align_and_score(&mut refetch, &loaded, &found, options)?;
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
    let patterns: Vec<Pattern> = patterns.into_iter().map(|r| r.pattern).collect();
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
        patterns,
    })
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

/// How the sequence miner runs for `options`; `agent_tool` says which symbols are an agent's
/// own tool calls.
fn sequence_config(
    options: &MineOptions,
    needed: Needed,
    agent_tool: &[bool],
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
    }
}

/// The repeated sequences worth aligning, and what finding them cost.
struct SequencesFound<'s> {
    /// The best candidates (twice as many as a kind may report).
    found: Vec<Found<'s>>,
    /// Whether the miner hit its pattern cap.
    truncated: bool,
    /// Frequent sequences the miner explored.
    nodes: u64,
    /// Time spent mining and ranking while streaming.
    ms: u64,
}

/// Repeated token sequences across sessions, the best kept by their upper bound while the
/// miner streams them.
fn find_sequences<'s>(
    loaded: &'s Loaded,
    options: &MineOptions,
    needed: Needed,
) -> Result<SequencesFound<'s>, MineError> {
    let config = sequence_config(options, needed, &loaded.agent_tool);
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
    if !f.more.is_empty() {
        f.items = p.items.into();
    }
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
fn step_positions(
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
fn find_commands<'s>(loaded: &'s Loaded, options: &MineOptions, needed: Needed) -> Vec<Found<'s>> {
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
        bound: 0.0,
        aligned: usize::MAX,
    })
}

/// Error→recovery habits: a failure, the steps taken, the same command succeeding.
fn find_recovery_habits<'s>(
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
        bound: 0.0,
        aligned,
    }
}

/// Sorts the candidates by the upper bound of their score, best first (ties by their steps).
fn rank(found: &mut [Found<'_>]) {
    for f in found.iter_mut() {
        f.bound = upper_bound(f);
    }
    found.sort_by(|a, b| {
        b.bound
            .total_cmp(&a.bound)
            .then_with(|| a.keys.cmp(&b.keys))
    });
}

/// A candidate aligned and scored: the pattern, where its occurrences lie (those looked at),
/// and the candidate it came from (its index in the ranked list).
struct Ranked {
    pattern: Pattern,
    spans: Vec<Span>,
    found: usize,
}

/// Aligns the ranked candidates, best first, up to [`MineOptions::max_patterns_per_kind`] of
/// each kind, and scores them; one pattern per id (the best supported), best score first, each
/// with the spans of all its occurrences held (the repeats not aligned yet too: a span is a few
/// positions, what the fold compares).
fn align_and_score(
    refetch: &mut Refetch<'_>,
    loaded: &Loaded,
    found: &[Found<'_>],
    options: &MineOptions,
) -> Result<Vec<Ranked>, MineError> {
    let mut per_kind: HashMap<PatternKind, usize> = HashMap::new();
    let mut patterns: HashMap<String, Ranked> = HashMap::new();
    for (index, f) in found.iter().enumerate() {
        let taken = per_kind.entry(f.kind).or_default();
        if *taken >= options.max_patterns_per_kind {
            continue;
        }
        let to_align = &f.occurrences[..f.aligned.min(f.occurrences.len())];
        let Some((aligned, durations)) =
            align_occurrences(refetch, to_align, f.trigger.is_some(), options)?
        else {
            continue;
        };
        // A single command is a habit only when its arguments vary.
        if f.single && aligned.params.is_empty() {
            continue;
        }
        *taken += 1;
        let pattern = scored_pattern(f, aligned, durations);
        match patterns.get(&pattern.id) {
            Some(existing) if existing.pattern.support >= pattern.support => {}
            _ => {
                let spans = spans_of(loaded, f, options);
                patterns.insert(
                    pattern.id.clone(),
                    Ranked {
                        pattern,
                        spans,
                        found: index,
                    },
                );
            }
        }
    }
    let mut patterns: Vec<Ranked> = patterns.into_values().collect();
    best_first(&mut patterns);
    Ok(patterns)
}

/// Where all the occurrences `f` holds lie: those it holds as steps, and its further repeats.
fn spans_of(loaded: &Loaded, f: &Found<'_>, options: &MineOptions) -> Vec<Span> {
    let more = f.more.iter().filter_map(|o| {
        let positions = step_positions(loaded, &f.items, o, Some(options.max_gap))?;
        Span::of(&Occ {
            session: loaded.sessions.get(o.seq as usize)?,
            positions,
        })
    });
    f.occurrences
        .iter()
        .filter_map(Span::of)
        .chain(more)
        .collect()
}

/// Best score first (ties by id).
fn best_first(patterns: &mut [Ranked]) {
    patterns.sort_by(|a, b| {
        b.pattern
            .score
            .total_cmp(&a.pattern.score)
            .then_with(|| a.pattern.id.cmp(&b.pattern.id))
    });
}

/// Each pattern that stands for its habit (the head of a group, see [`fold_groups`]) aligned
/// again over all its occurrences — one per session first, then every repeat within a session,
/// up to [`MineOptions::max_occurrences`] — so its evidence (up to
/// [`MineOptions::max_evidence`]) holds each time the habit was run, and its steps and
/// parameters are what all of them share; then scored again. Only the heads: they are few (a
/// habit's variants are folded into them), while aligning every repeat of every candidate read
/// a long repetitive session's actions again for patterns folded away.
///
/// A loop run several times over (`rm out → perl gen.pl → rm out → perl gen.pl`) is seen as
/// both its rotations; where they stand for habits of their own (the rotation also run apart:
/// `perl x.pl → rm x.pl`, a throwaway script), the loop's occurrences are the loop's, and its
/// middle ([`loop_middle`]) keeps only its own ([`loop_claimed`]). A middle whose own
/// occurrences no longer qualify it is the loop, met at another step: its group joins the
/// loop's.
///
/// Returns the groups, with those joins made.
fn complete_heads(
    refetch: &mut Refetch<'_>,
    loaded: &Loaded,
    found: &[Found<'_>],
    patterns: &mut [Ranked],
    mut groups: Vec<(usize, Vec<usize>)>,
    options: &MineOptions,
    needed: Needed,
) -> Result<Vec<(usize, Vec<usize>)>, MineError> {
    let max_gap = Some(options.max_gap);
    // Each head that is the middle of a loop another head runs: that one's spans, as found.
    let loops: HashMap<usize, (usize, Vec<Span>)> = (0..groups.len())
        .filter_map(|index| {
            let head = &patterns[groups[index].0];
            let owner = (0..groups.len()).find(|&other| {
                let theirs = &patterns[groups[other].0];
                other != index
                    && is_rotation(&theirs.pattern, &head.pattern)
                    && loop_middle(&head.spans, &theirs.spans)
            })?;
            Some((index, (owner, patterns[groups[owner].0].spans.clone())))
        })
        .collect();
    // Groups to join another (its index in `groups`, then the other's).
    let mut joins: HashMap<usize, usize> = HashMap::new();
    for (index, &(head, _)) in groups.iter().enumerate() {
        let Some(f) = patterns.get(head).and_then(|r| found.get(r.found)) else {
            continue;
        };
        let partner = loops.get(&index);
        let more = f.more.iter().filter_map(|o| {
            Some(Occ {
                session: loaded.sessions.get(o.seq as usize)?,
                positions: step_positions(loaded, &f.items, o, max_gap)?,
            })
        });
        let mut every: Vec<Occ<'_>> = f
            .occurrences
            .iter()
            .map(|o| Occ {
                session: o.session,
                positions: o.positions.clone(),
            })
            .chain(more)
            .take(options.max_occurrences)
            .collect();
        let mut claimed = None;
        if let Some((owner, theirs)) = partner {
            let before = every.len();
            let held = held_commands(theirs);
            every.retain(|o| !loop_claimed(o, &held));
            let taken = before - every.len();
            if taken > 0 {
                let support = loaded.support(every.iter().map(|o| o.session.index as usize));
                let count = (f.count as usize).saturating_sub(taken);
                if every.is_empty() || !needed.met(support, count) {
                    joins.insert(index, *owner);
                    continue;
                }
                claimed = Some((support, count as u32));
            }
        }
        if claimed.is_none() && f.aligned >= f.occurrences.len() && f.more.is_empty() {
            continue;
        }
        let Some((aligned, durations)) =
            align_occurrences(refetch, &every, f.trigger.is_some(), options)?
        else {
            continue;
        };
        patterns[head].pattern = match claimed {
            Some((support, count)) => {
                patterns[head].spans = every.iter().filter_map(Span::of).collect();
                let own = Found {
                    kind: f.kind,
                    keys: f.keys.clone(),
                    support,
                    count,
                    occurrences: Vec::new(),
                    more: Vec::new(),
                    items: Box::default(),
                    trigger: f.trigger.clone(),
                    calls_per_occurrence: f.calls_per_occurrence,
                    single: f.single,
                    bound: f.bound,
                    aligned: 0,
                };
                scored_pattern(&own, aligned, durations)
            }
            None => scored_pattern(f, aligned, durations),
        };
    }
    // Each joins the group its loop ends in (a middle's owner may itself be another's middle).
    let end = |mut g: usize| {
        for _ in 0..=joins.len() {
            match joins.get(&g) {
                Some(&into) => g = into,
                None => break,
            }
        }
        g
    };
    // Rotations of a longer loop could point at each other in a ring: those stay apart.
    let joins: HashMap<usize, usize> = joins
        .keys()
        .map(|&index| (index, end(index)))
        .filter(|(_, into)| !joins.contains_key(into))
        .collect();
    let mut moved: Vec<(usize, Vec<usize>)> = joins
        .iter()
        .map(|(&index, &into)| (into, std::mem::take(&mut groups[index].1)))
        .collect();
    moved.sort_by_key(|(into, members)| (*into, members.first().copied()));
    for (into, members) in moved {
        groups[into].1.extend(members);
    }
    Ok(groups
        .into_iter()
        .enumerate()
        .filter(|(index, _)| !joins.contains_key(index))
        .map(|(_, group)| group)
        .collect())
}

/// Whether `spans` are the middle of the loop `others` run, rather than the other way round:
/// more of them lie inside the other's occurrences (a loop `a b a b a b` holds `b a` twice,
/// both inside `a b`'s, and `a b` three times, one inside `b a`'s).
fn loop_middle(spans: &[Span], others: &[Span]) -> bool {
    let share = |a: &[Span], b: &[Span]| overlapping(a, b) as f64 / a.len().max(1) as f64;
    share(spans, others) > share(others, spans)
}

/// The commands of `spans`, as session and token position.
fn held_commands(spans: &[Span]) -> HashSet<(u32, u32)> {
    spans
        .iter()
        .flat_map(|s| s.tokens.iter().map(move |&t| (s.session, t)))
        .collect()
}

/// Whether `later`'s steps are `earlier`'s rotated (`perl → rm` for `rm → perl`): one loop
/// entered at another step.
fn is_rotation(earlier: &Pattern, later: &Pattern) -> bool {
    // Cheap tests first: the fold asks this of every pair of groups.
    if earlier.kind != later.kind
        || earlier.steps.len() != later.steps.len()
        || earlier.trigger.is_some() != later.trigger.is_some()
    {
        return false;
    }
    let (theirs, keys) = (step_keys(earlier), step_keys(later));
    keys.len() == theirs.len()
        && keys != theirs
        && (1..keys.len()).any(|r| keys[r..].iter().chain(&keys[..r]).eq(theirs.iter()))
}

/// Whether an occurrence of a loop's middle lies inside the loop, whose commands are `held`:
/// more than half its commands are the loop's (the end of one of the loop's occurrences and
/// the start of the next). The occurrence that leaves the loop is not: its last command is
/// its own.
fn loop_claimed(occ: &Occ<'_>, held: &HashSet<(u32, u32)>) -> bool {
    Span::of(occ).is_some_and(|span| span.inside(held))
}

/// The commands one occurrence's steps are: its session and their token positions (the
/// actions between them, allowed by the gap, are not its own).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    /// The session's index (a sub-agent's session is its own: its actions are apart).
    session: u32,
    /// Sorted, distinct.
    tokens: Vec<u32>,
}

impl Span {
    fn of(occ: &Occ<'_>) -> Option<Span> {
        let mut tokens: Vec<u32> = occ
            .positions
            .iter()
            .map(|&p| u32::try_from(p).ok())
            .collect::<Option<_>>()?;
        tokens.sort_unstable();
        tokens.dedup();
        (!tokens.is_empty()).then_some(Span {
            session: occ.session.index,
            tokens,
        })
    }

    /// Whether this occurrence lies inside `others`: more than half its commands are commands
    /// of theirs, in the same session. A sub-sequence lies inside its habit, and so does a stray
    /// step's variant (`uname -a → a → b` in `a → b`, and `git diff --stat` after the one action
    /// `git add … && git commit …`) or the end of one occurrence with the start of the next
    /// (`b → a` between two `a → b`); `git status → git diff` does not lie inside `git diff →
    /// git add → git commit`: they share a command, not a habit.
    /// (`held`: the commands of the others, as session and token position; [`fold_groups`]
    /// counts the same per group.)
    fn inside(&self, held: &HashSet<(u32, u32)>) -> bool {
        let shared = self
            .tokens
            .iter()
            .filter(|&&t| held.contains(&(self.session, t)))
            .count();
        2 * shared > self.tokens.len()
    }
}

/// How many of `spans` lie inside `others` (see [`Span::inside`]).
fn overlapping(spans: &[Span], others: &[Span]) -> usize {
    let held = held_commands(others);
    spans.iter().filter(|s| s.inside(&held)).count()
}

/// Patterns folded into one that its stored body lists, at most (each folded one names it).
const MAX_FOLDED_LISTED: usize = 20;

/// One habit, one candidate: a pattern whose occurrences mostly lie inside those of a better
/// one (or the better one's mostly inside its own) is the same habit: the stray step before
/// it, a sub-sequence, the same steps with the failure that starts them. Each such group keeps
/// one pattern, which lists the others ([`Pattern::folded`]); they say where they went
/// ([`Pattern::folded_into`]) and are not proposed.
///
/// Returns the groups: the index of the one standing for the habit, and every member's (itself
/// among them); [`mark_folded`] then writes it down.
///
/// Patterns are taken best first (one a tool can be made of before one with an agent's tool
/// call or only looking around, a recovery before a sequence, then by score); a later pattern takes the group over when
/// it has clearly more occurrences (the kept one has fewer than `ratio` of its count) and is
/// not a worse kind. Slow operations are another kind of habit and are left alone.
fn fold_groups(
    patterns: &[Ranked],
    ratio: f64,
    step_count: &dyn Fn(&str) -> u32,
) -> Vec<(usize, Vec<usize>)> {
    let proposable = |p: &Pattern| {
        !p.only_looks_around()
            && !p.only_shuffles_files()
            && p.retried_step().is_none()
            && p.one_command_looked_around().is_none()
            && !p
                .steps
                .iter()
                .chain(p.trigger.as_ref().map(|t| &t.step))
                .any(|s| s.agent_tool)
    };
    // Lower ranks first.
    let rank = |p: &Pattern| (!proposable(p), p.kind != PatternKind::Recovery);
    let mut order: Vec<usize> = (0..patterns.len())
        .filter(|&i| patterns[i].pattern.kind != PatternKind::Slow && !patterns[i].spans.is_empty())
        .collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&patterns[a].pattern, &patterns[b].pattern);
        rank(pa)
            .cmp(&rank(pb))
            .then_with(|| pb.score.total_cmp(&pa.score))
            .then_with(|| pa.id.cmp(&pb.id))
    });
    let mut groups = Groups::default();
    // Which groups' occurrences hold each command (session, token position): looking a
    // pattern's occurrences up costs their length, however many patterns came before.
    let mut owners: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    for i in order {
        let spans = &patterns[i].spans;
        // Per group: how many of this pattern's occurrences lie inside the group's (more than
        // half their commands are the group's), and how many of its commands are the group's;
        // and how many of its occurrences lie inside all the groups' together.
        let mut hits: HashMap<usize, usize> = HashMap::new();
        let mut shared: HashMap<usize, usize> = HashMap::new();
        let mut inside_all = 0;
        for span in spans {
            let mut per_group: Vec<(usize, usize)> = Vec::new();
            let mut covered = 0;
            for &t in &span.tokens {
                let Some(gs) = owners.get(&(span.session, t)) else {
                    continue;
                };
                covered += 1;
                let mut seen: Vec<usize> = gs.iter().map(|&g| groups.find(g)).collect();
                seen.sort_unstable();
                seen.dedup();
                for g in seen {
                    match per_group.iter_mut().find(|(h, _)| *h == g) {
                        Some((_, n)) => *n += 1,
                        None => per_group.push((g, 1)),
                    }
                }
            }
            if 2 * covered > span.tokens.len() {
                inside_all += 1;
            }
            for (g, n) in per_group {
                *shared.entry(g).or_default() += n;
                if 2 * n > span.tokens.len() {
                    *hits.entry(g).or_default() += 1;
                }
            }
        }
        let new = &patterns[i].pattern;
        // The groups this pattern is one habit with, and how much: most of its occurrences lie
        // inside the group's; or the group's head's occurrences mostly lie inside its own (a
        // sub-sequence of it); or most of its occurrences hold one of the head's whole, the
        // steps around it stray ones, run mostly elsewhere (`wc -l → a → b → python3
        // --version` around `a → b`).
        let mut joined: Vec<(usize, f64)> = shared
            .keys()
            .filter_map(|&g| {
                let head = &patterns[groups.head(g)];
                // Two rotations of one loop share their commands whether or not they are one
                // habit: the rotation rule below decides.
                if is_rotation(&head.pattern, new) {
                    return None;
                }
                let inside = hits.get(&g).copied().unwrap_or(0) as f64 / spans.len() as f64;
                let holds = overlapping(&head.spans, spans) as f64 / head.spans.len().max(1) as f64;
                let around = if strays_around(new, &head.pattern, step_count) {
                    containing(spans, &head.spans) as f64 / spans.len() as f64
                } else {
                    0.0
                };
                let share = inside.max(holds).max(around);
                (share > 0.5).then_some((g, share))
            })
            .collect();
        // Where a member's occurrences were only partly held (more than
        // `MineOptions::max_occurrences`), its spans miss most of its variants':
        // a pattern more than half of whose steps are that member's steps, in its order (a
        // stray step before or after it, or the end of one occurrence with the start of the
        // next), is taken to lie inside it; `mkdir → rm -rf → mkdir` does not lie inside
        // `mv → mkdir → mv`.
        let keys = step_keys(new);
        let structural = groups.roots().find(|&g| {
            groups.members(g).iter().any(|&m| {
                let (member, seen) = (&patterns[m].pattern, patterns[m].spans.len());
                if seen >= member.occurrences as usize {
                    return false;
                }
                let inner = step_keys(member);
                let shared: Vec<&str> =
                    keys.iter().copied().filter(|k| inner.contains(k)).collect();
                // In the member's order: a run of it, or its end then its start.
                let twice: Vec<&str> = inner.iter().chain(&inner).copied().collect();
                2 * shared.len() > keys.len()
                    && twice
                        .windows(shared.len())
                        .any(|run| run == shared.as_slice())
            })
        });
        // A loop met at another step: the steps of a group's head rotated (`perl → rm` for
        // `rm → perl`). Run over and over, a loop shows both: the rotation more of whose
        // occurrences lie inside the other's is its middle (each the end of one of the
        // other's occurrences and the start of the next). They are one habit when the
        // middle's own occurrences, those not inside the loop, are none or mostly in the
        // loop's sessions; run apart, elsewhere, the middle is a habit of its own, and the
        // loop's occurrences are left to the loop ([`complete_heads`]).
        let rotation = groups.roots().find(|&g| {
            let head = &patterns[groups.head(g)];
            if !is_rotation(&head.pattern, new) {
                return false;
            }
            let (middle, owner) = if loop_middle(&head.spans, spans) {
                (head.spans.as_slice(), spans.as_slice())
            } else {
                (spans.as_slice(), head.spans.as_slice())
            };
            let held = held_commands(owner);
            let sessions: HashSet<u32> = owner.iter().map(|s| s.session).collect();
            let own: Vec<&Span> = middle.iter().filter(|s| !s.inside(&held)).collect();
            own.is_empty()
                || 2 * own.iter().filter(|s| sessions.contains(&s.session)).count() > own.len()
        });
        for g in structural.into_iter().chain(rotation) {
            if !joined.iter().any(|(h, _)| *h == g) {
                joined.push((g, 1.0));
            }
        }
        // Two habits back to back (`make build → make test` then the `pytest` failure and its
        // fix), or the junction of two: most occurrences lie inside the groups' together. It
        // joins the one it shares most commands with.
        if joined.is_empty()
            && 2 * inside_all > spans.len()
            && let Some((&g, _)) = shared
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        {
            joined.push((g, 0.5));
        }
        joined.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let g = match joined.split_first() {
            Some((&(g, _), others)) => {
                groups.join(g, i, |head, strength| {
                    let head = &patterns[head].pattern;
                    (rank(new) <= rank(head))
                        .then(|| stands_for(new, head, strength, ratio, step_count))
                });
                // A pattern every step of which another group's head has, in order, makes that
                // group one with this (the habit, and two of its stray-step variants that
                // came first); two habits back to back are not made one by the pattern that
                // runs them both.
                for &(other, _) in others {
                    let theirs = step_keys(&patterns[groups.head(other)].pattern);
                    if !in_order(&keys, &theirs) {
                        continue;
                    }
                    groups.merge(g, other, |head, strength, candidate| {
                        let (head, candidate) =
                            (&patterns[head].pattern, &patterns[candidate].pattern);
                        (rank(candidate) <= rank(head))
                            .then(|| stands_for(candidate, head, strength, ratio, step_count))
                    });
                }
                g
            }
            None => groups.open(i, new.occurrences),
        };
        for span in spans {
            for &t in &span.tokens {
                let gs = owners.entry((span.session, t)).or_default();
                if !gs.contains(&g) {
                    gs.push(g);
                }
            }
        }
    }
    groups.into_groups()
}

/// The fold's groups as they form: each with the pattern standing for it, its members, and the
/// occurrences its head stands for (its own, or more where it stands for a shorter pattern
/// whose steps it extends); a group merged into another points to it.
#[derive(Default)]
struct Groups {
    heads: Vec<usize>,
    members: Vec<Vec<usize>>,
    strength: Vec<u32>,
    parent: Vec<usize>,
}

impl Groups {
    /// The group `g` was merged into, if any (else itself).
    fn find(&self, mut g: usize) -> usize {
        while self.parent[g] != g {
            g = self.parent[g];
        }
        g
    }

    fn head(&self, g: usize) -> usize {
        self.heads[self.find(g)]
    }

    fn members(&self, g: usize) -> &[usize] {
        &self.members[self.find(g)]
    }

    /// The groups not merged into another.
    fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.parent.len()).filter(|&g| self.parent[g] == g)
    }

    /// A group of pattern `i` alone; its index.
    fn open(&mut self, i: usize, occurrences: u32) -> usize {
        self.heads.push(i);
        self.members.push(vec![i]);
        self.strength.push(occurrences);
        self.parent.push(self.parent.len());
        self.parent.len() - 1
    }

    /// Pattern `i` joins group `g`; `stands` says, from the head and its strength, whether it
    /// takes the group over (`None`: a worse kind, it does not).
    fn join(&mut self, g: usize, i: usize, stands: impl Fn(usize, u32) -> Option<Stands>) {
        let g = self.find(g);
        match stands(self.heads[g], self.strength[g]) {
            Some(Stands::New(n)) => {
                self.heads[g] = i;
                self.strength[g] = n;
            }
            Some(Stands::Head(n)) => self.strength[g] = n,
            None => {}
        }
        self.members[g].push(i);
    }

    /// Group `other` merges into `g`; its head takes `g` over as a pattern joining it would.
    fn merge(
        &mut self,
        g: usize,
        other: usize,
        stands: impl Fn(usize, u32, usize) -> Option<Stands>,
    ) {
        let (g, other) = (self.find(g), self.find(other));
        if g == other {
            return;
        }
        let candidate = self.heads[other];
        match stands(self.heads[g], self.strength[g], candidate) {
            Some(Stands::New(n)) => {
                self.heads[g] = candidate;
                self.strength[g] = n.max(self.strength[other]);
            }
            Some(Stands::Head(n)) => self.strength[g] = n.max(self.strength[other]),
            None => {}
        }
        let moved = std::mem::take(&mut self.members[other]);
        self.members[g].extend(moved);
        self.parent[other] = g;
    }

    /// The groups: the index of the pattern standing for each, and its members (itself among
    /// them), best first.
    fn into_groups(self) -> Vec<(usize, Vec<usize>)> {
        let roots: Vec<usize> = self.roots().collect();
        let Groups {
            heads, mut members, ..
        } = self;
        roots
            .into_iter()
            .map(|g| (heads[g], std::mem::take(&mut members[g])))
            .collect()
    }
}

/// Whether `longer` is `shorter` with stray steps around it: it has every step of `shorter`,
/// in order, and each of its other steps is run mostly elsewhere (fewer than half of its runs,
/// `step_count`, are `longer`'s occurrences) — unlike a habit's own steps ([`extra_steps_belong`]).
fn strays_around(longer: &Pattern, shorter: &Pattern, step_count: &dyn Fn(&str) -> u32) -> bool {
    let (long, short) = (step_keys(longer), step_keys(shorter));
    if long.len() <= short.len() {
        return false;
    }
    // `short` is a sub-sequence of `long`: its steps in order, others between or around.
    let mut at = 0;
    let mut extra = Vec::new();
    for k in &long {
        if short.get(at) == Some(k) {
            at += 1;
        } else {
            extra.push(*k);
        }
    }
    let n = u64::from(longer.occurrences);
    at == short.len() && extra.iter().all(|k| 2 * n <= u64::from(step_count(k)))
}

/// Whether every one of `short` is in `long`, in the same order (others between or around).
fn in_order(short: &[&str], long: &[&str]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|k| rest.any(|l| l == k))
}

/// How many of `spans` hold one of `others` whole, or nearly (more than half its commands).
fn containing(spans: &[Span], others: &[Span]) -> usize {
    let mut by_session: HashMap<u32, Vec<&Span>> = HashMap::new();
    for o in others {
        by_session.entry(o.session).or_default().push(o);
    }
    spans
        .iter()
        .filter(|s| {
            by_session.get(&s.session).is_some_and(|os| {
                os.iter().any(|o| {
                    let held = o
                        .tokens
                        .iter()
                        .filter(|t| s.tokens.binary_search(t).is_ok())
                        .count();
                    2 * held > o.tokens.len()
                })
            })
        })
        .count()
}

/// Writes the groups of [`fold_groups`] down: each member says where it went
/// ([`Pattern::folded_into`]) and the one standing for the habit lists them ([`Pattern::folded`]).
fn mark_folded(patterns: &mut [Ranked], groups: Vec<(usize, Vec<usize>)>) {
    for (head, members) in groups {
        for &m in members.iter().filter(|&&m| m != head) {
            let (member_spans, head_spans) = (&patterns[m].spans, &patterns[head].spans);
            let into = Folded {
                id: patterns[head].pattern.id.clone(),
                steps: patterns[head].pattern.steps_text(),
                overlapping: overlapping(member_spans, head_spans) as u32,
                of: member_spans.len() as u32,
            };
            let here = Folded {
                id: patterns[m].pattern.id.clone(),
                steps: patterns[m].pattern.steps_text(),
                overlapping: into.overlapping,
                of: into.of,
            };
            patterns[m].pattern.folded_into = Some(into);
            // The best ones are listed (members come best first); each says where it went.
            if patterns[head].pattern.folded.len() < MAX_FOLDED_LISTED {
                patterns[head].pattern.folded.push(here);
            }
        }
    }
}

/// Which of a group's head and a pattern joining it stands for their habit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stands {
    /// The joining pattern, for this many occurrences.
    New(u32),
    /// The head still, for this many.
    Head(u32),
}

/// Whether `new` rather than `head` (standing for `strength` occurrences) stands for their
/// habit, of a kind as good: the one with clearly more occurrences (the head stands for fewer
/// than `ratio` of the new one's count), except where one is the other with steps before or
/// after it. Then the longer one stands for the habit when those steps are part of it
/// ([`extra_steps_belong`]) — `gia → gc → gp` rather than `gc → gp`, though `gc → gp` is also
/// run alone — and for the shorter one's occurrences too; never when they are stray steps.
fn stands_for(
    new: &Pattern,
    head: &Pattern,
    strength: u32,
    ratio: f64,
    step_count: &dyn Fn(&str) -> u32,
) -> Stands {
    let (new_keys, head_keys) = (step_keys(new), step_keys(head));
    if let Some(extra) = extra_steps(&new_keys, &head_keys)
        && extra_steps_belong(new, head, &extra, step_count)
    {
        return Stands::New(strength.max(new.occurrences));
    }
    if let Some(extra) = extra_steps(&head_keys, &new_keys)
        && extra_steps_belong(head, new, &extra, step_count)
    {
        return Stands::Head(strength.max(new.occurrences));
    }
    let longer = extra_steps(&new_keys, &head_keys).is_some();
    if !longer && f64::from(strength) < ratio * f64::from(new.occurrences) {
        Stands::New(new.occurrences)
    } else {
        Stands::Head(strength)
    }
}

/// The steps `longer` has besides `shorter`, when `shorter`'s steps are a run of `longer`'s
/// (`X · shorter · Y`, `X` or `Y` not empty).
fn extra_steps<'k>(longer: &[&'k str], shorter: &[&str]) -> Option<Vec<&'k str>> {
    if shorter.is_empty() || longer.len() <= shorter.len() {
        return None;
    }
    let at = longer.windows(shorter.len()).position(|w| w == shorter)?;
    Some(
        longer[..at]
            .iter()
            .chain(&longer[at + shorter.len()..])
            .copied()
            .collect(),
    )
}

/// Share of a shorter pattern's occurrences a longer one must hold for its extra steps to be
/// part of the habit (three in four), see [`extra_steps_belong`].
const BELONG_SHARE: f64 = 0.75;

/// Whether the steps `extra` that `longer` adds to `shorter` are part of the habit rather than
/// stray steps next to it: they are there in nearly every occurrence of `shorter` (`longer`
/// holds [`BELONG_SHARE`] of its count), and most of each one's own runs (`step_count`, over
/// all sessions) are `longer`'s — a stray look-around (`uname -a`, `sed -n`) is run before many
/// things, a habit's own first step (`gia`, adding the files `gc` commits) mostly before it.
fn extra_steps_belong(
    longer: &Pattern,
    shorter: &Pattern,
    extra: &[&str],
    step_count: &dyn Fn(&str) -> u32,
) -> bool {
    let n = u64::from(longer.occurrences);
    n as f64 >= BELONG_SHARE * f64::from(shorter.occurrences)
        && extra.iter().all(|k| 2 * n > u64::from(step_count(k)))
}

/// A pattern's step keys in order, a recovery's failing command first.
fn step_keys(p: &Pattern) -> Vec<&str> {
    p.trigger
        .as_ref()
        .map(|t| t.step.key.as_str())
        .into_iter()
        .chain(p.steps.iter().map(|s| s.key.as_str()))
        .collect()
}

/// The pattern an aligned candidate becomes: its steps (a recovery's first one its trigger),
/// parameters and evidence, scored.
fn scored_pattern(f: &Found<'_>, aligned: Aligned, mut durations: Vec<u64>) -> Pattern {
    let median_ms = median(&mut durations);
    let mut steps = aligned.steps;
    let trigger = match &f.trigger {
        Some(template) if !steps.is_empty() => Some(Trigger {
            step: steps.remove(0),
            error_template: template.clone(),
        }),
        _ => None,
    };
    let key_refs: Vec<&str> = f.keys.iter().map(String::as_str).collect();
    let id = pattern_id(f.kind, &key_refs, f.trigger.as_deref());
    let step_count = steps.len() as u32 + u32::from(trigger.is_some());
    let scored = score(&score_input(
        f,
        median_ms,
        aligned.consistency,
        aligned.success_rate,
        step_count,
        aligned.params.len() as u32,
    ));
    let mut pattern = Pattern {
        id,
        kind: f.kind,
        support: f.support,
        occurrences: f.count,
        score: scored.score,
        score_parts: scored,
        templates: Vec::new(),
        steps,
        params: aligned.params,
        internals: aligned.internals,
        workspace_varies: aligned.workspace_varies,
        trigger,
        median_ms,
        evidence: aligned.evidence,
        folded_into: None,
        folded: Vec::new(),
    };
    pattern.templates = pattern.steps_text();
    pattern
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
fn upper_bound(f: &Found<'_>) -> f64 {
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

fn score_input(
    f: &Found<'_>,
    median_ms: Option<u64>,
    consistency: f64,
    success_rate: f64,
    steps: u32,
    params: u32,
) -> ScoreInput {
    let n = f64::from(f.count);
    let (calls_saved, seconds_saved) = match f.kind {
        PatternKind::Sequence => {
            let calls = n * (f.calls_per_occurrence - 1.0).max(0.0);
            (calls, calls * SECONDS_PER_CALL)
        }
        PatternKind::Recovery => {
            let calls = n * f.calls_per_occurrence;
            (calls, calls * SECONDS_PER_CALL)
        }
        // A slow operation's time is what a tool (cached, incremental, in the background) can
        // give back; counted at half, since some of it is the work itself.
        PatternKind::Slow => (0.0, n * median_ms.unwrap_or(0) as f64 / 1000.0 * 0.5),
    };
    ScoreInput {
        support: f.support,
        occurrences: f.count,
        calls_saved,
        seconds_saved: if f.kind == PatternKind::Slow && median_ms.is_none() {
            // Before alignment: the bound assumes the slowest case.
            n * 3600.0
        } else {
            seconds_saved
        },
        steps,
        params,
        recovery: f.kind == PatternKind::Recovery,
        consistency,
        success_rate,
    }
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
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::ingest::store as ingest_store;
    use crate::store::{Store, open_for_update};

    /// One stored Bash call: session, command line, outcome, output, duration (ms).
    type Call<'a> = (&'a str, &'a str, Option<bool>, Option<&'a str>, Option<i64>);

    fn ran<'a>(session: &'a str, command: &'a str) -> Call<'a> {
        (session, command, Some(true), None, None)
    }

    /// A real store (migrated by [`Store::open`]) holding `calls`, numbered in order within
    /// each session, and a connection to it.
    /// Every pattern's templates, occurrences and what it folded into, for assertion messages.
    fn fold_summary(report: &MineReport) -> Vec<String> {
        report
            .patterns
            .iter()
            .map(|p| {
                let into = p.folded_into.as_ref().map(|f| &f.id);
                format!("{:?} ×{} → {into:?}", p.templates, p.occurrences)
            })
            .collect()
    }

    fn store(calls: &[Call<'_>]) -> (TempDir, Connection) {
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
    fn needed(support: u32) -> Needed {
        Needed {
            support,
            occurrences: MineOptions::default().min_occurrences,
        }
    }

    fn loaded(conn: &Connection) -> Loaded {
        load(conn, &Tokenizer::default()).expect("the actions load")
    }

    /// The same calls in sessions `s1`, `s2`, …
    fn in_sessions<'a>(sessions: &[&'a str], calls: &[Call<'a>]) -> Vec<Call<'a>> {
        sessions
            .iter()
            .flat_map(|s| calls.iter().map(move |c| (*s, c.1, c.2, c.3, c.4)))
            .collect()
    }

    #[test]
    fn load_keeps_each_sessions_tokens_and_leaves_noise_out() {
        let (_dir, conn) = store(&[
            ran("a", "cargo build"),
            ran("a", "ls -la"),
            ran("a", "cargo test -p core && git status"),
            ran("b", "pwd"),
            ran("c", "vim src/main.rs"),
            ran("c", "cargo build"),
        ]);
        let loaded = loaded(&conn);
        assert_eq!((loaded.actions, loaded.last_action), (6, 6));
        // `b` ran only noise: no session.
        let ids: Vec<&str> = loaded.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        let a = &loaded.sessions[0];
        assert_eq!(a.rows.len(), 2);
        assert_eq!(a.token_row, [0, 1, 1]);
        let keys: Vec<&str> = a
            .symbols
            .iter()
            .map(|&s| loaded.interner.resolve(s).unwrap_or("?"))
            .collect();
        assert_eq!(keys, ["cargo build", "cargo test -p <arg>", "git status"]);
        let command = loaded.commands.resolve(a.rows[1].command);
        assert_eq!(command, Some("cargo test -p <arg> ; git status"));
        assert_eq!(loaded.command_words[a.rows[1].command as usize], (2, 6));
        // Its stored key: the file generation's rank above the place in the file.
        let place = crate::action::stored::place_of(a.rows[1].seq);
        assert_eq!((place, a.rows[1].token_range()), (3, 1..3));
        // The editor is a by-hand step: a symbol of its own, past the interned ones.
        let c = &loaded.sessions[1];
        assert!(c.rows[0].by_hand && !c.rows[1].by_hand);
        assert_eq!(c.symbols[0], loaded.interner.len() as u32);
        assert_eq!(c.symbols[1], a.symbols[0]);
    }

    #[test]
    fn a_failure_keeps_its_error_template_and_every_call_its_duration() {
        let output = "error[E0425]: cannot find value `x` in this scope\n --> src/a.rs:1:1";
        let (_dir, conn) = store(&[
            ("a", "cargo build", Some(false), Some(output), Some(1200)),
            ("a", "cargo build", Some(true), Some("Finished"), Some(-5)),
        ]);
        let loaded = loaded(&conn);
        let rows = &loaded.sessions[0].rows;
        let error = rows[0].error.expect("the failure's error template");
        let template = loaded.errors.template(error).expect("a stored template");
        assert!(template.contains("cannot find value"), "{template}");
        assert_eq!(rows[0].duration(), Some(1200));
        // A success keeps no error; a negative duration is read as 0.
        assert_eq!((rows[1].error, rows[1].duration()), (None, Some(0)));
        assert_eq!(rows[0].command, rows[1].command);
    }

    #[test]
    fn a_repeated_command_is_tokenized_once() {
        let tokenizer = Tokenizer::default();
        let mut cache = CommandCache::new(&tokenizer);
        let mut loaded = Loaded::new();
        let call = |input| CallText {
            source: "claude-code",
            tool: "Bash",
            input,
            ok: Some(true),
        };
        let command = |a: Result<Option<Abstracted>, MineError>| {
            a.expect("no error").expect("a command").command
        };
        let line = r#"{"command":"cargo test -p a"}"#;
        let first = command(cache.abstracted(&mut loaded, &call(line), "s", 1));
        let again = command(cache.abstracted(&mut loaded, &call(line), "s", 2));
        assert_eq!((first, again), (0, 0));
        // Another value is another line, tokenized again: the same command.
        let line = r#"{"command":"cargo test -p b"}"#;
        assert_eq!(
            command(cache.abstracted(&mut loaded, &call(line), "s", 3)),
            0
        );
        assert_eq!(cache.cache.len(), 2);
        assert_eq!(loaded.commands.len(), 1);
        let noise = cache.abstracted(&mut loaded, &call(r#"{"command":"ls"}"#), "s", 4);
        assert!(noise.expect("no error").is_none());
    }

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
    fn candidates_are_ranked_by_their_upper_bound() {
        let candidate = |keys: &[&str], support, count| Found {
            kind: PatternKind::Sequence,
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            support,
            count,
            occurrences: Vec::new(),
            more: Vec::new(),
            items: Box::default(),
            trigger: None,
            calls_per_occurrence: keys.len() as f64,
            single: false,
            bound: 0.0,
            aligned: 0,
        };
        let mut found = vec![
            candidate(&["a", "b"], 3, 3),
            candidate(&["c", "d"], 30, 40),
            candidate(&["a", "a"], 3, 3),
        ];
        rank(&mut found);
        let order: Vec<String> = found.iter().map(|f| f.keys.join(" ")).collect();
        assert_eq!(order, ["c d", "a a", "a b"]);
        assert!(found[0].bound > found[1].bound);
        assert_eq!(found[1].bound, found[2].bound);
    }

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

    /// Owned calls as [`Call`]s.
    fn calls_of(calls: &[(String, String, Option<bool>, Option<String>)]) -> Vec<Call<'_>> {
        calls
            .iter()
            .map(|(s, c, ok, o)| (s.as_str(), c.as_str(), *ok, o.as_deref(), None))
            .collect()
    }

    /// The patterns of a run whose first step's template starts with `first` (the program's
    /// directory aside: `./scripts/check.sh` is `check.sh` or itself, by the tokenizer).
    fn starting_with<'r>(report: &'r MineReport, first: &str) -> Vec<&'r Pattern> {
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
    const ONE_OFFS: [&str; 6] = [
        "git diff",
        "cargo fmt",
        "rg -n TODO",
        "git stash list",
        "du -sh .",
        "python3 --version",
    ];

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
    fn stray_step_variants_fold_into_the_habit() {
        // `openssl x509 → openssl verify` in ten sessions, after a stray `uname -a` in five.
        let mut calls = Vec::new();
        for i in 0..10 {
            let session = format!("s{i}");
            let run = |c: &str| (session.clone(), c.to_owned(), Some(true), None);
            calls.push(run(ONE_OFFS[i % 6]));
            if i % 2 == 0 {
                calls.push(run("uname -a"));
            }
            calls.push(run(&format!(
                "openssl x509 -in certs/c{i}.pem -noout -subject"
            )));
            calls.push(run(&format!(
                "openssl verify -CAfile ca.pem certs/c{i}.pem"
            )));
            calls.push(run("cargo build"));
        }
        let (_dir, mut conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let with_verify: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.templates.iter().any(|t| t.starts_with("openssl verify")))
            .collect();
        assert!(with_verify.len() >= 2, "{:#?}", report.patterns);
        let proposed: Vec<&&Pattern> = with_verify
            .iter()
            .filter(|p| p.folded_into.is_none())
            .collect();
        assert_eq!(proposed.len(), 1, "{:#?}", with_verify);
        let habit = proposed[0];
        assert_eq!(habit.occurrences, 10);
        assert!(habit.templates[0].starts_with("openssl x509"), "{habit:#?}");
        let stray = starting_with(&report, "uname -a");
        assert!(!stray.is_empty());
        for p in &stray {
            let into = p.folded_into.as_ref().expect("folded");
            assert_eq!(into.id, habit.id);
            assert_eq!((into.overlapping, into.of), (5, 5));
            assert!(habit.folded.iter().any(|f| f.id == p.id));
        }
        // Stored: the variant is `folded`, with where to; the habit is new.
        store_patterns(&mut conn, &report, &CandidateOutcomes::default()).expect("stored");
        let stored = crate::mine::pattern::get_pattern(&conn, &stray[0].id)
            .expect("read")
            .expect("stored");
        assert_eq!(stored.status, crate::mine::pattern::PatternStatus::Folded);
        assert!(
            stored
                .reason
                .as_deref()
                .is_some_and(|r| r.contains(&habit.id)),
            "{:?}",
            stored.reason
        );
        let head = crate::mine::pattern::get_pattern(&conn, &habit.id)
            .expect("read")
            .expect("stored");
        assert_eq!(head.status, crate::mine::pattern::PatternStatus::New);
    }

    #[test]
    fn an_occurrence_lies_inside_when_most_of_its_actions_are_anothers() {
        let span = |session, tokens: &[u32]| Span {
            session,
            tokens: tokens.to_vec(),
        };
        // `a → b` at rows 3–4 and 7–8.
        let habit = [span(0, &[3, 4]), span(0, &[7, 8])];
        let inside = |s: Span| overlapping(&[s], &habit) == 1;
        // A stray step before, or after with a gap: two of three actions.
        assert!(inside(span(0, &[2, 3, 4])));
        assert!(inside(span(0, &[3, 4, 6])));
        // `b → a`, from one occurrence into the next.
        assert!(inside(span(0, &[4, 7])));
        // Sharing one action of two is not a habit; another session is not this one.
        assert!(!inside(span(0, &[1, 3])));
        assert!(!inside(span(1, &[3, 4])));
        assert_eq!(
            overlapping(&[span(0, &[2, 3, 4]), span(0, &[5, 6])], &habit),
            1
        );
    }

    #[test]
    fn two_habits_back_to_back_are_not_a_third() {
        // `make build -C X → make test -C X` in eight sessions; in three of them the `pytest`
        // failure on a missing module and its fix follow. The five steps together are seen
        // in three sessions (a `git log` between the two habits in one), but they are the two
        // habits one after the other: folded, not proposed (the `toolsmith demo` logs).
        let failure = "E   ModuleNotFoundError: No module named 'requests'";
        let mut calls = Vec::new();
        for (i, dir) in ["core", "cli", "web", "store", "api", "ui", "db", "auth"]
            .iter()
            .enumerate()
        {
            let session = format!("s{i}");
            let run = |c: &str, ok, o: Option<&str>| {
                (
                    session.clone(),
                    c.to_owned(),
                    Some(ok),
                    o.map(str::to_owned),
                )
            };
            calls.push(run(&format!("before{i} --check"), true, None));
            calls.push(run(&format!("make build -C {dir}"), true, None));
            calls.push(run(&format!("make test -C {dir}"), true, None));
            if i == 1 {
                calls.push(run("git log --oneline -n 5", true, None));
            }
            if i < 3 {
                calls.push(run("python3 -m pytest tests/", false, Some(failure)));
                calls.push(run("pip install requests", true, None));
                calls.push(run("python3 -m pytest tests/", true, Some("12 passed")));
            }
            calls.push(run(&format!("after{i} --check"), true, None));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary: Vec<_> = report
            .patterns
            .iter()
            .map(|p| (p.kind, &p.templates, p.folded_into.as_ref().map(|f| &f.id)))
            .collect();
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .collect();
        assert_eq!(proposed.len(), 2, "{summary:#?}");
        assert!(
            proposed
                .iter()
                .any(|p| p.kind == PatternKind::Sequence && p.templates.len() == 2),
            "{summary:#?}"
        );
        assert!(
            proposed.iter().any(|p| p.kind == PatternKind::Recovery),
            "{summary:#?}"
        );
        let both = report
            .patterns
            .iter()
            .find(|p| p.templates.len() == 5)
            .unwrap_or_else(|| panic!("the five steps among {summary:#?}"));
        assert!(both.folded_into.is_some(), "{summary:#?}");
    }

    #[test]
    fn a_recovery_and_the_sequence_it_makes_are_one_habit() {
        let failure = "FAIL  src/app.test.js\n  ● Test suite failed to run\n\n    \
                       Cannot find module 'dotenv' from 'src/app.js'\n";
        let mut calls = Vec::new();
        for (i, module) in ["dotenv", "chalk", "uuid"].iter().enumerate() {
            let session = format!("s{i}");
            let run = |c: &str, ok, o: Option<&str>| {
                (
                    session.clone(),
                    c.to_owned(),
                    Some(ok),
                    o.map(str::to_owned),
                )
            };
            calls.push(run(ONE_OFFS[i], true, None));
            calls.push(run(
                "npm test",
                false,
                Some(&failure.replace("dotenv", module)),
            ));
            calls.push(run(&format!("npm install {module}"), true, None));
            calls.push(run("npm test", true, Some("PASS")));
            calls.push(run(ONE_OFFS[i + 3], true, None));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.starts_with("npm install")))
            .collect();
        let summary: Vec<_> = report
            .patterns
            .iter()
            .map(|p| {
                (
                    p.kind,
                    &p.templates,
                    p.score,
                    p.folded_into.as_ref().map(|f| &f.id),
                    &p.id,
                )
            })
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].kind, PatternKind::Recovery, "{summary:#?}");
        // The sequence of the same steps was found, and is folded into the recovery.
        let sequence = report
            .patterns
            .iter()
            .find(|p| p.kind == PatternKind::Sequence && p.templates[0] == "npm test")
            .expect("the sequence");
        assert_eq!(
            sequence.folded_into.as_ref().map(|f| f.id.as_str()),
            Some(proposed[0].id.as_str())
        );
        // Its tests fail in every occurrence (the first `npm test`): it still scores.
        assert!(sequence.score > 0.0, "{sequence:#?}");
    }

    #[test]
    fn a_step_keeps_every_command_of_its_action() {
        // `git add X && git status --short`, then `git commit -m …`: the commit habit starts
        // with the `git add` run in the same action, or it commits nothing.
        let mut calls = Vec::new();
        for (i, (file, message)) in [
            ("src/a.rs", "Fix the race"),
            ("README.md", "Document env vars"),
            ("pyproject.toml", "Pin pytest"),
            ("src/b.rs", "Retry on timeout"),
        ]
        .iter()
        .enumerate()
        {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(ONE_OFFS[i].to_owned()));
            calls.push(run(format!("git add {file} && git status --short")));
            calls.push(run(format!("git commit -m '{message}'")));
            calls.push(run(ONE_OFFS[i + 1].to_owned()));
        }
        // One session stages apart, then checks and commits: `git status → git commit` is seen
        // in 5 sessions, more than the whole habit, so closure alone does not hide it.
        for (i, c) in [
            "git add src/c.rs",
            "cargo test",
            "git status --short",
            "git commit -m 'Bump deps'",
        ]
        .iter()
        .enumerate()
        {
            calls.push(("s9".into(), (*c).to_owned(), Some(true), None));
            calls.push(("s9".into(), ONE_OFFS[i].to_owned(), Some(true), None));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let commits: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.templates.iter().any(|t| t.starts_with("git commit")))
            .collect();
        assert!(!commits.is_empty(), "{summary:#?}");
        for p in commits {
            assert!(
                p.templates[0].starts_with("git add"),
                "a pattern lost the `git add` of its first action: {summary:#?}"
            );
        }
    }

    #[test]
    fn a_stray_step_after_a_one_action_habit_folds_into_it() {
        // `git add F && git commit -m M` is one action of two commands; `git diff --stat` follows
        // it in 4 sessions of 9. Counted by actions, the variant shares one action of two with
        // the habit; by commands, two of three: it is the habit with a stray step.
        let mut calls = Vec::new();
        for i in 0..9 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(ONE_OFFS[i % 6].to_owned()));
            calls.push(run(format!(
                "git add src/m{i}.rs && git commit -m 'Change {i}'"
            )));
            if i % 2 == 1 {
                calls.push(run("git diff --stat".into()));
            }
            calls.push(run(ONE_OFFS[(i + 1) % 6].to_owned()));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.starts_with("git commit")))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 2, "{summary:#?}");
        assert!(
            proposed[0].folded.iter().any(|f| f.steps.len() == 3),
            "{summary:#?}"
        );
    }

    #[test]
    fn stray_variants_of_a_habit_repeated_in_few_sessions_fold_into_it() {
        // `./scripts/check.sh --module X` then `make -C X test`, 6 and 4 times in two sessions,
        // `uname -a` before four of them and `wc -l` after four others: only some repeats of
        // the habit are aligned, which its variants' occurrences mostly miss.
        let mut calls = Vec::new();
        let mut n = 0;
        for (session, times) in [("s1", 6), ("s2", 4)] {
            for i in 0..times {
                let module = ["ingest", "router", "auth", "storage", "metrics", "cli"][i];
                let run = |c: String| (session.to_owned(), c, Some(true), None);
                n += 1;
                if n % 5 == 3 || n % 5 == 4 {
                    calls.push(run("uname -a".into()));
                }
                calls.push(run(format!("./scripts/check.sh --module {module}")));
                calls.push(run(format!("make -C {module} test")));
                if n % 5 == 0 || n % 5 == 1 {
                    calls.push(run(format!("wc -l src/{module}/*.py")));
                }
                calls.push(run(ONE_OFFS[i].to_owned()));
            }
        }
        calls.push(("s3".into(), "cargo build".into(), Some(true), None));
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.contains("check.sh")))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 2, "{summary:#?}");
    }

    #[test]
    fn a_habits_first_step_is_not_dropped_for_the_shorter_pattern_with_more_occurrences() {
        // From a zsh history (52 of 64 on the corpus): `gia FILE → gc → gp` (add, commit, push)
        // in twelve sessions, and `gc → gp` alone in three more. `gc → gp` has more occurrences
        // (15 against 12), but `gia` is part of the habit: it is in nearly all of `gc → gp`'s
        // occurrences, and all of `gia`'s own are in the habit. The longer pattern stands for
        // it.
        let mut calls = Vec::new();
        for i in 0..15 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            // One-off commands of their own around each occurrence.
            calls.push(run(format!("before{i} --check")));
            if i < 12 {
                calls.push(run(format!("gia src/m{i}.rs")));
            }
            calls.push(run("gc".into()));
            calls.push(run("gp".into()));
            calls.push(run(format!("after{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t == "gp"))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(
            proposed[0].templates,
            ["gia <path>", "gc", "gp"],
            "{summary:#?}"
        );
        let shorter = report
            .patterns
            .iter()
            .find(|p| p.templates == ["gc", "gp"])
            .unwrap_or_else(|| panic!("`gc → gp` among {summary:#?}"));
        assert_eq!(shorter.occurrences, 15);
        assert_eq!(
            shorter.folded_into.as_ref().map(|f| &f.id),
            Some(&proposed[0].id)
        );
    }

    #[test]
    fn a_stray_step_before_most_occurrences_of_a_habit_does_not_take_it_over() {
        // `uname -a` right before 8 of 10 occurrences of `openssl x509 → openssl verify`, and
        // once in every session elsewhere: it is in nearly all of the habit's occurrences, but
        // most of its own runs are not the habit's. The habit stands alone.
        let mut calls = Vec::new();
        for i in 0..10 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            // One-off commands of their own between.
            calls.push(run(format!("before{i} --check")));
            if i < 8 {
                calls.push(run("uname -a".into()));
            }
            calls.push(run(format!(
                "openssl x509 -in certs/c{i}.pem -noout -subject"
            )));
            calls.push(run(format!("openssl verify -CAfile ca.pem certs/c{i}.pem")));
            // Elsewhere: further than the gap from the habit.
            calls.push(run(format!("after{i} --check")));
            calls.push(run(format!("then{i} --check")));
            calls.push(run("uname -a".into()));
            calls.push(run(format!("last{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.starts_with("openssl verify")))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 2, "{summary:#?}");
        assert_eq!(proposed[0].occurrences, 10, "{summary:#?}");
    }

    /// A pattern of `keys` scored `score`, seen `occurrences` times, at `spans` (session, token
    /// positions), as the fold takes it.
    fn ranked(keys: &[&str], score: f64, occurrences: u32, spans: &[(u32, &[u32])]) -> Ranked {
        let steps = keys
            .iter()
            .map(|k| crate::mine::pattern::Step {
                template: (*k).to_owned(),
                words: Vec::new(),
                key: (*k).to_owned(),
                globs: Vec::new(),
                captures: None,
                piped: false,
                agent_tool: false,
            })
            .collect();
        Ranked {
            pattern: Pattern {
                id: pattern_id(PatternKind::Sequence, keys, None),
                kind: PatternKind::Sequence,
                support: 2,
                occurrences,
                score,
                score_parts: Default::default(),
                templates: keys.iter().map(|k| (*k).to_owned()).collect(),
                steps,
                params: Vec::new(),
                internals: Vec::new(),
                workspace_varies: false,
                trigger: None,
                median_ms: None,
                evidence: Vec::new(),
                folded_into: None,
                folded: Vec::new(),
            },
            spans: spans
                .iter()
                .map(|(session, tokens)| Span {
                    session: *session,
                    tokens: tokens.to_vec(),
                })
                .collect(),
            found: 0,
        }
    }

    #[test]
    fn a_habit_stands_for_its_stray_variants_even_when_they_came_first() {
        // `check → make` ten times in two sessions; `grep` before four of them, `python3`
        // before four others. Both variants score above the habit, so each opens a group of
        // its own first; the habit lies under both, and makes them one group it stands for.
        let (check, make) = ("./scripts/check.sh --module <arg>", "make -C <arg> test");
        let habit_at: Vec<(u32, [u32; 2])> = (0..6)
            .map(|k| (0, [4 * k + 1, 4 * k + 2]))
            .chain((0..4).map(|k| (1, [4 * k + 1, 4 * k + 2])))
            .collect();
        let habit: Vec<(u32, &[u32])> = habit_at.iter().map(|(s, t)| (*s, &t[..])).collect();
        let with_stray = |at: &[usize]| -> Vec<(u32, Vec<u32>)> {
            at.iter()
                .map(|&i| {
                    let (s, [a, b]) = habit_at[i];
                    (s, vec![a - 1, a, b])
                })
                .collect()
        };
        let grep = with_stray(&[0, 1, 6, 7]);
        let python = with_stray(&[2, 3, 8, 9]);
        let grep: Vec<(u32, &[u32])> = grep.iter().map(|(s, t)| (*s, &t[..])).collect();
        let python: Vec<(u32, &[u32])> = python.iter().map(|(s, t)| (*s, &t[..])).collect();
        let patterns = [
            ranked(&["grep -rn <arg> src/", check, make], 47.0, 4, &grep),
            ranked(&["python3 --version", check, make], 46.0, 4, &python),
            ranked(&[check, make], 45.0, 10, &habit),
        ];
        // The strays are run everywhere.
        let groups = fold_groups(&patterns, 0.9, &|_| 1000);
        assert_eq!(groups.len(), 1, "{groups:?}");
        let (head, mut members) = groups[0].clone();
        assert_eq!(head, 2);
        members.sort_unstable();
        assert_eq!(members, [0, 1, 2]);
        // The pattern that runs two groups' habits back to back does not make them one.
        let pytest = ["python3 -m pytest <arg>", "pip install <arg>"];
        let both = [
            ranked(
                &["make build -C <arg>", "make test -C <arg>"],
                50.0,
                5,
                &[
                    (0, &[1, 2]),
                    (1, &[1, 2]),
                    (2, &[1, 2]),
                    (3, &[1, 2]),
                    (4, &[1, 2]),
                ],
            ),
            ranked(
                &pytest,
                49.0,
                3,
                &[(0, &[3, 4]), (1, &[3, 4]), (2, &[3, 4])],
            ),
            ranked(
                &[
                    "make build -C <arg>",
                    "make test -C <arg>",
                    pytest[0],
                    pytest[1],
                ],
                48.0,
                3,
                &[(0, &[1, 2, 3, 4]), (1, &[1, 2, 3, 4]), (2, &[1, 2, 3, 4])],
            ),
        ];
        let groups = fold_groups(&both, 0.9, &|_| 1000);
        assert_eq!(groups.len(), 2, "{groups:?}");
    }

    #[test]
    fn stray_steps_around_a_habit_fold_into_it() {
        // `coverage run → coverage report` in nine sessions, with `wc -l` before and
        // `python3 --version` after three of them — both also run elsewhere, as noise is: half
        // the variant's commands are the habit's, and it holds the habit's whole.
        let mut calls = Vec::new();
        for i in 0..9 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("before{i} --check")));
            if i < 3 {
                calls.push(run(format!("wc -l src/m{i}/*.py")));
            }
            calls.push(run(format!("coverage run -m pytest tests/test_{i}.py -q")));
            calls.push(run(format!("coverage report -m --include=src/m{i}/*")));
            if i < 3 {
                calls.push(run("python3 --version".into()));
            }
            calls.push(run(format!("after{i} --check")));
            calls.push(run(format!("then{i} --check")));
            calls.push(run(format!("wc -l docs/d{i}.md")));
            calls.push(run(format!("next{i} --check")));
            calls.push(run(format!("more{i} --check")));
            calls.push(run("python3 --version".into()));
            calls.push(run(format!("last{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.starts_with("coverage")))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 2, "{summary:#?}");
        assert!(
            report
                .patterns
                .iter()
                .any(|p| p.templates.len() == 4 && p.folded_into.is_some()),
            "{summary:#?}"
        );
    }

    #[test]
    fn a_loop_met_at_another_step_is_one_habit() {
        // `rm out/*.txt → perl run.pl` early in each session, `perl run.pl → rm out/*.txt`
        // later in the same one: the same loop, entered at either step.
        let mut calls = Vec::new();
        for i in 0..6 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("rm out/r{i}.txt")));
            calls.push(run(format!("perl run{i}.pl")));
            calls.push(run(format!("between{i} --check")));
            calls.push(run(format!("again{i} --check")));
            calls.push(run(format!("perl run{i}.pl")));
            calls.push(run(format!("rm out/r{i}.txt")));
            calls.push(run(format!("last{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let pairs: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.templates.len() == 2 && p.templates.iter().any(|t| t.starts_with("perl")))
            .collect();
        assert_eq!(pairs.len(), 2, "{summary:#?}");
        assert_eq!(
            pairs.iter().filter(|p| p.folded_into.is_none()).count(),
            1,
            "{summary:#?}"
        );
    }

    #[test]
    fn a_loop_s_occurrences_are_its_own_and_a_rotation_run_apart_keeps_its() {
        // Three sessions run `rm out/gen.txt → perl gen.pl` three times over: the loop, whose
        // middle also reads `perl gen.pl → rm out/gen.txt`. Four others run a throwaway script
        // and delete it: `perl tN.pl → rm tN.pl`, a habit of its own.
        let mut calls = Vec::new();
        for i in 0..3 {
            let session = format!("loop{i}");
            let run = |c: &str| (session.clone(), c.to_owned(), Some(true), None);
            calls.push(run(&format!("make -C m{i}")));
            for _ in 0..3 {
                calls.push(run("rm out/gen.txt"));
                calls.push(run("perl gen.pl"));
            }
        }
        for i in 0..4 {
            let session = format!("scratch{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("ls d{i}")));
            calls.push(run(format!("perl t{i}.pl")));
            calls.push(run(format!("rm t{i}.pl")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let pair = |first: &str| {
            *starting_with(&report, first)
                .iter()
                .find(|p| p.templates.len() == 2)
                .expect("the pair")
        };
        let (regenerate, scratch) = (pair("rm"), pair("perl"));
        assert_eq!(regenerate.folded_into, None, "{summary:#?}");
        assert_eq!(scratch.folded_into, None, "{summary:#?}");
        assert_eq!((regenerate.support, regenerate.occurrences), (3, 9));
        // Only its own: the loop's middles are the loop's.
        assert_eq!(
            (scratch.support, scratch.occurrences),
            (4, 4),
            "{scratch:#?}"
        );
        let shown: Vec<&str> = scratch
            .evidence
            .iter()
            .flat_map(|e| e.commands.iter().map(String::as_str))
            .collect();
        assert!(shown.iter().all(|c| !c.contains("gen")), "{shown:?}");
        assert_eq!(shown.len(), 8, "{shown:?}");
    }

    #[test]
    fn a_loop_s_middle_is_folded_into_the_loop_whichever_comes_first() {
        // `rm → perl` three times over in sessions 0 to 3 (tokens 1 to 6): `perl → rm` (2–3,
        // 4–5) is only its middle, even scored first. Seen also in sessions 4 to 7, run apart
        // (`perl t.pl → rm t.pl`), it is a habit of its own.
        let (rm, perl) = ("rm <path>", "perl <path>");
        let loop_at: Vec<(u32, [u32; 2])> = (0..4)
            .flat_map(|s| [(s, [1, 2]), (s, [3, 4]), (s, [5, 6])])
            .collect();
        let middle_at: Vec<(u32, [u32; 2])> =
            (0..4).flat_map(|s| [(s, [2, 3]), (s, [4, 5])]).collect();
        let apart_at: Vec<(u32, [u32; 2])> = (4..8).map(|s| (s, [1, 2])).collect();
        let owned = |at: &[(u32, [u32; 2])]| -> Vec<(u32, Vec<u32>)> {
            at.iter().map(|(s, t)| (*s, t.to_vec())).collect()
        };
        for apart in [false, true] {
            let mut middle = owned(&middle_at);
            if apart {
                middle.extend(owned(&apart_at));
            }
            let a: Vec<(u32, &[u32])> = loop_at.iter().map(|(s, t)| (*s, &t[..])).collect();
            let b: Vec<(u32, &[u32])> = middle.iter().map(|(s, t)| (*s, &t[..])).collect();
            let patterns = [
                ranked(&[perl, rm], 60.0, b.len() as u32, &b),
                ranked(&[rm, perl], 50.0, a.len() as u32, &a),
            ];
            let groups = fold_groups(&patterns, 0.9, &|_| 1000);
            if apart {
                assert_eq!(groups.len(), 2, "{groups:?}");
            } else {
                // The loop stands for it.
                assert_eq!(groups, [(1, vec![0, 1])]);
            }
        }
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
        let into = find(&["mkdir <value>", "mv <path> <value>"]);
        assert!(!into.only_shuffles_files(), "{into:#?}");
        assert_eq!(into.retried_step(), None);
        assert_eq!(unrelated.one_command_looked_around(), None);
        let retry = find(&["rm <path>", "rm <path> -r"]);
        assert_eq!(
            retry.retried_step().map(|s| s.template.as_str()),
            Some("rm <path>")
        );
    }

    #[test]
    fn an_occurrence_with_a_value_its_shell_computed_is_left_out_of_the_habit() {
        // Six sessions build then archive; in two the archive's name is a shell variable of
        // the user's, whose value the log does not hold. A habit run only that way is none.
        let mut calls = Vec::new();
        for i in 0..6 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("make -C m{i}")));
            let archive = if i < 2 {
                "$out".to_owned()
            } else {
                format!("a{i}.tgz")
            };
            calls.push(run(format!("tar czf {archive} m{i}/build")));
            // Elsewhere: further than the gap from the habit.
            calls.push(run(format!("after{i} --check")));
            calls.push(run(format!("then{i} --check")));
            calls.push(run(format!("last{i} --check")));
            calls.push(run(format!("cmake -S d{i}")));
            calls.push(run("cpack -G TGZ $gen".to_owned()));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let habit = report
            .patterns
            .iter()
            .find(|p| p.templates.len() == 2 && p.templates[1].starts_with("tar czf"))
            .unwrap_or_else(|| panic!("{summary:#?}"));
        assert!(
            habit
                .evidence
                .iter()
                .all(|e| e.commands.iter().all(|c| !c.contains('$'))),
            "{habit:#?}"
        );
        assert_eq!(habit.evidence.len(), 4, "{habit:#?}");
        assert!(
            report
                .patterns
                .iter()
                .all(|p| p.templates.iter().all(|t| !t.contains("cpack"))),
            "{summary:#?}"
        );
    }

    #[test]
    fn a_consistent_habit_never_scores_zero() {
        // The commit message is free text: no slot of the habit is typed.
        let mut calls = Vec::new();
        for (i, message) in ["Fix the race", "Document env vars", "Pin pytest"]
            .iter()
            .enumerate()
        {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("git add src/f{i}.py")));
            calls.push(run(format!("git commit -m '{message}'")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let p = &starting_with(&report, "git add")[0];
        assert!(p.score > 20.0, "{p:#?}");
        assert!(p.score_parts.confidence > 0.0);
    }

    /// Stores `(session, tool, input)` calls, numbered in order within each session, all
    /// succeeding, as Claude Code's.
    fn store_calls(calls: &[(String, &str, Value)]) -> (TempDir, Connection) {
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

    #[test]
    fn swe_agents_own_commands_are_agent_tool_steps() {
        // SWE-agent's `edit` (the adapter names the action after it) then a shell command.
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("state.db");
        drop(Store::open(&path).expect("the store opens"));
        let conn = open_for_update(&path).expect("a connection");
        for session in ["t1", "t2", "t3"] {
            for (seq, tool, command) in [
                (1, "edit", "edit 15:15\n    return x\nend_of_edit"),
                (2, "shell", "python reproduce.py"),
            ] {
                conn.execute(
                    "INSERT INTO actions (session, seq, source, tool, input, ok)
                     VALUES (?1, ?2, 'swe-agent', ?3, ?4, 1)",
                    params![
                        session,
                        seq,
                        tool,
                        serde_json::json!({ "command": command }).to_string()
                    ],
                )
                .expect("the action is stored");
            }
        }
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let p = starting_with(&report, "edit")
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("the pattern among {:#?}", report.patterns));
        // Kept as a pattern, its `edit` an agent's tool call: no tool is made of it.
        assert!(p.steps[0].agent_tool, "{p:#?}");
        assert!(!p.steps[1].agent_tool, "{p:#?}");
    }
}
