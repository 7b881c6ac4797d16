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

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;
use std::time::Instant;

use rusqlite::{Connection, params};
use serde::Serialize;
use serde_json::Value;

use super::params::{AlignInput, Aligned, align};
use super::pattern::{Pattern, PatternKind, Replay, Trigger, pattern_id, replace_patterns};
use super::recovery::{AsAttempt, Attempt, error_line, find_recoveries, group_recoveries};
use super::score::{SECONDS_PER_CALL, ScoreInput, score};
use super::sequences::{self, SequenceMiner, SequenceMinerConfig, SequenceMinerError};
use super::templates::{TemplateId, TemplateMiner, TemplateMinerConfig};
use super::token::{Interner, NoiseRules, Token, Tokenizer};
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
    /// Sessions a pattern must be seen in, at least.
    pub min_support: u32,
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
    /// Most occurrences aligned per pattern (one per session first).
    pub max_occurrences: usize,
    /// Occurrences kept as evidence per pattern.
    pub max_evidence: usize,
}

impl Default for MineOptions {
    fn default() -> Self {
        MineOptions {
            min_support: 3,
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
    /// The patterns, best first.
    pub patterns: Vec<Pattern>,
}

impl MineReport {
    /// Patterns of one kind.
    pub fn count(&self, kind: PatternKind) -> usize {
        self.patterns.iter().filter(|p| p.kind == kind).count()
    }

    /// The summary `toolsmith mine --json` prints and the daemon's `mine.run` returns.
    pub fn summary(&self) -> Value {
        serde_json::json!({
            "sessions": self.sessions,
            "actions": self.actions,
            "tokens": self.tokens,
            "symbols": self.symbols,
            "duration_ms": self.duration_ms,
            "truncated": self.truncated,
            "phases_ms": self.phases_ms,
            "min_support": self.min_support,
            "patterns": self.patterns.len(),
            "kinds": {
                "sequence": self.count(PatternKind::Sequence),
                "recovery": self.count(PatternKind::Recovery),
                "slow": self.count(PatternKind::Slow),
            },
            "top": self.patterns.iter().take(10).map(|p| serde_json::json!({
                "id": p.id, "kind": p.kind, "support": p.support, "score": p.score,
                "steps": p.steps_text(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Milliseconds spent in each phase of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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
    rows: Vec<Row>,
    symbols: Vec<u32>,
    /// For each token, the index of its row.
    token_row: Vec<u32>,
}

/// Everything loaded for a run.
struct Loaded {
    sessions: Vec<Session>,
    interner: Interner,
    commands: Interner,
    /// Per command key, its tokens' count and words: how complex one command is.
    command_words: Vec<(u32, u32)>,
    errors: TemplateMiner,
    actions: usize,
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

fn load(conn: &Connection, tokenizer: &Tokenizer) -> Result<Loaded, MineError> {
    let mut stmt = conn.prepare(
        "SELECT id, session, seq, source, cwd, tool, input, ok,
                CASE WHEN ok = 0 THEN output END, duration_ms
         FROM actions ORDER BY session, seq",
    )?;
    let mut rows = stmt.query([])?;
    let mut loaded = Loaded {
        sessions: Vec::new(),
        interner: Interner::new(),
        commands: Interner::new(),
        command_words: Vec::new(),
        errors: TemplateMiner::new(TemplateMinerConfig::default()),
        actions: 0,
        last_action: 0,
    };
    let mut current = Session::default();
    let full = |_| {
        MineError::Store(StoreError::Corrupt {
            what: "token table".into(),
            reason: "more than 2^32 distinct tokens".into(),
        })
    };
    // Agents run the same commands again and again: tokenize each distinct one once.
    let mut cache: HashMap<Box<str>, Option<Abstracted>> = HashMap::new();
    let mut cache_key = String::new();
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let seq = row.get::<_, i64>(2)?.max(0) as u64;
        let ok: Option<bool> = row.get(7)?;
        loaded.actions += 1;
        loaded.last_action = loaded.last_action.max(id);
        let session = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        if session != current.id {
            if !current.symbols.is_empty() {
                loaded.sessions.push(std::mem::take(&mut current));
            }
            current.id = session.to_owned();
            current.rows.clear();
            current.symbols.clear();
            current.token_row.clear();
        }
        let source = row.get_ref(3)?.as_str().map_err(rusqlite::Error::from)?;
        let tool = row.get_ref(5)?.as_str().map_err(rusqlite::Error::from)?;
        let input = row.get_ref(6)?.as_str().map_err(rusqlite::Error::from)?;
        cache_key.clear();
        for part in [source, "\0", tool, "\0", input] {
            cache_key.push_str(part);
        }
        let abstracted = match cache.get(cache_key.as_str()) {
            Some(hit) => hit.clone(),
            None => {
                let action = StoredCall {
                    source: source.to_owned(),
                    cwd: None,
                    tool: tool.to_owned(),
                    input: input.to_owned(),
                    ok,
                }
                .into_action(&current.id, seq);
                let tokens = tokenizer.tokens(&action);
                let abstracted = if tokens.is_empty() {
                    None
                } else {
                    let key = tokens
                        .iter()
                        .map(|t| t.key.as_str())
                        .collect::<Vec<_>>()
                        .join(" ; ");
                    let command = loaded.commands.intern(&key).map_err(full)?;
                    if command as usize == loaded.command_words.len() {
                        let words: usize = tokens.iter().map(|t| t.key.split(' ').count()).sum();
                        loaded.command_words.push((
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
                            loaded.interner.intern(&token.key).map_err(full)?
                        });
                    }
                    Some(Abstracted {
                        command,
                        by_hand: symbols.contains(&BARRIER),
                        symbols: symbols.into_boxed_slice(),
                    })
                };
                if cache.len() >= TOKEN_CACHE_ENTRIES {
                    cache.clear();
                }
                cache.insert(cache_key.as_str().into(), abstracted.clone());
                abstracted
            }
        };
        let Some(abstracted) = abstracted else {
            continue;
        };
        let error = if ok == Some(false) {
            let output = row
                .get_ref(8)?
                .as_str_or_null()
                .map_err(rusqlite::Error::from)?;
            output
                .and_then(error_line)
                .map(|line| loaded.errors.add(line).id)
        } else {
            None
        };
        let row_index = current.rows.len() as u32;
        current.rows.push(Row {
            seq,
            command: abstracted.command,
            ok,
            error,
            duration_ms: row
                .get::<_, Option<i64>>(9)?
                .map(|d| u32::try_from(d.max(0)).unwrap_or(u32::MAX)),
            first_token: current.symbols.len() as u32,
            tokens: abstracted.symbols.len() as u16,
            by_hand: abstracted.by_hand,
        });
        current.symbols.extend_from_slice(&abstracted.symbols);
        current
            .token_row
            .extend(std::iter::repeat_n(row_index, abstracted.symbols.len()));
    }
    if !current.symbols.is_empty() {
        loaded.sessions.push(current);
    }
    // A by-hand step becomes a symbol of its session alone: with a minimum support of 2 or more
    // it is never frequent, so no pattern holds it, yet it still counts as a gap.
    let base = loaded.interner.len() as u64;
    for (i, session) in loaded.sessions.iter_mut().enumerate() {
        let own = u32::try_from(base + i as u64).unwrap_or(BARRIER - 1);
        for symbol in &mut session.symbols {
            if *symbol == BARRIER {
                *symbol = own;
            }
        }
    }
    Ok(loaded)
}

/// Reads actions back for alignment, tokenized, with their outputs; cached within a run.
struct Refetch<'c> {
    stmt: rusqlite::Statement<'c>,
    tokenizer: &'c Tokenizer,
    cache: HashMap<(String, u64), Refetched>,
}

impl<'c> Refetch<'c> {
    fn new(conn: &'c Connection, tokenizer: &'c Tokenizer) -> Result<Self, MineError> {
        Ok(Refetch {
            stmt: conn.prepare(
                "SELECT source, cwd, tool, input, ok, output FROM actions
                 WHERE session = ?1 AND seq = ?2",
            )?,
            tokenizer,
            cache: HashMap::new(),
        })
    }

    fn action(&mut self, session: &str, seq: u64) -> Result<Option<&Refetched>, MineError> {
        let key = (session.to_owned(), seq);
        if !self.cache.contains_key(&key) {
            let mut rows = self.stmt.query(params![session, seq as i64])?;
            let Some(row) = rows.next()? else {
                return Ok(None);
            };
            let output: Option<String> = row.get(5)?;
            let action = StoredCall {
                source: row.get(0)?,
                cwd: row.get(1)?,
                tool: row.get(2)?,
                input: row.get(3)?,
                ok: row.get(4)?,
            }
            .into_action(session, seq);
            let tokens = self.tokenizer.tokens(&action);
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
    /// Some occurrences, one per session first: those aligned.
    occurrences: Vec<Occ<'s>>,
    /// Recovery: the failed action's duration total, and the error template.
    trigger: Option<String>,
    /// The agent calls an occurrence takes.
    calls_per_occurrence: f64,
    /// A single command line (a habit only when its arguments vary).
    single: bool,
    /// Upper bound of the score, to choose what to align.
    bound: f64,
}

/// Mines the actions of `conn`. Reads only: see [`store_patterns`] to keep the result.
pub fn mine(conn: &Connection, options: &MineOptions) -> Result<MineReport, MineError> {
    let started = Instant::now();
    let tokenizer = Tokenizer::new(&NoiseRules::default());
    let loaded = load(conn, &tokenizer)?;
    let load_ms = started.elapsed().as_millis() as u64;
    let sessions = &loaded.sessions;
    let symbols: Vec<&[u32]> = sessions.iter().map(|s| s.symbols.as_slice()).collect();
    let mut found: Vec<Found<'_>> = Vec::new();
    let min_support = options.effective_support(sessions.len());

    // Repeated sequences.
    let config = SequenceMinerConfig {
        // The by-hand barriers rely on the support being at least 2.
        min_support,
        max_gap: Some(options.max_gap),
        min_len: options.min_length.max(1),
        max_len: options.max_length.max(options.min_length.max(1)),
        closed: true,
        fold_ratio: Some(options.fold_ratio),
        // Memory is bounded by keeping only the best candidates while streaming; the cap only
        // guards time on pathological input.
        max_patterns: 2_000_000,
    };
    let miner = SequenceMiner::new(config.clone())?;
    let mut truncated = false;
    let keep = options.max_patterns_per_kind.max(1);
    let mut sequences_found: Vec<Found<'_>> = Vec::new();
    // Per symbol: whether it is a file-content tool call (see `CONTENT_TOOLS`).
    let content: Vec<bool> = (0..loaded.interner.len() as u32)
        .map(|s| only_content(&[loaded.interner.resolve(s).unwrap_or_default()]))
        .collect();
    // The weakest bound still kept once the list is full: anything below it is skipped before
    // its occurrences are even looked at.
    let mut threshold = f64::NEG_INFINITY;
    let sequences_started = Instant::now();
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
        let mut f = Found {
            kind: PatternKind::Sequence,
            keys: Vec::new(),
            support: p.support,
            count: p.occurrences.len() as u32,
            occurrences: Vec::new(),
            trigger: None,
            // At most one call per step: the bound stays an upper bound.
            calls_per_occurrence: p.items.len() as f64,
            single: false,
            bound: 0.0,
        };
        f.keys = vec![String::new(); p.items.len()];
        f.bound = upper_bound(&f);
        if f.bound < threshold {
            return ControlFlow::Continue(());
        }
        f.keys = p
            .items
            .iter()
            .map(|&s| loaded.interner.resolve(s).unwrap_or_default().to_owned())
            .collect();
        f.occurrences = p
            .occurrences
            .iter()
            .take(options.max_occurrences)
            .filter_map(|o| {
                let session = &sessions[o.seq as usize];
                let positions = sequences::steps(&session.symbols, p.items, o, config.max_gap)?;
                Some(Occ {
                    session,
                    positions: positions.into_iter().map(|x| x as usize).collect(),
                })
            })
            .collect();
        f.calls_per_occurrence = f
            .occurrences
            .first()
            .map(|o| distinct_rows(o) as f64)
            .unwrap_or(1.0);
        f.bound = upper_bound(&f);
        sequences_found.push(f);
        // Only the best can be aligned: keep memory to a few times that many while streaming.
        if sequences_found.len() >= 4 * keep {
            prune(&mut sequences_found, 2 * keep);
            threshold = sequences_found.last().map_or(threshold, |f| f.bound);
        }
        ControlFlow::Continue(())
    })?;
    truncated |= stats.truncated;
    let sequences_ms = sequences_started.elapsed().as_millis() as u64;
    let sequence_nodes = stats.nodes;
    prune(&mut sequences_found, 2 * keep);
    found.append(&mut sequences_found);

    // Single complex commands repeated with varying arguments, and slow operations.
    // First the sessions each command is seen in (two flat arrays), then the places of only
    // those with the support: millions of actions, a few hundred commands worth a look.
    let commands = loaded.commands.len();
    let mut command_support = vec![0u32; commands];
    let mut last_session = vec![u32::MAX; commands];
    for (s, session) in sessions.iter().enumerate() {
        for row in session.rows.iter().filter(|row| !row.by_hand) {
            let c = row.command as usize;
            if last_session[c] != s as u32 {
                last_session[c] = s as u32;
                command_support[c] += 1;
            }
        }
    }
    drop(last_session);
    let mut by_command: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    for (s, session) in sessions.iter().enumerate() {
        for (r, row) in session.rows.iter().enumerate() {
            if !row.by_hand && command_support[row.command as usize] >= min_support {
                by_command
                    .entry(row.command)
                    .or_default()
                    .push((s as u32, r as u32));
            }
        }
    }
    for (&command, places) in &by_command {
        let support = places.iter().map(|p| p.0).collect::<BTreeSet<_>>().len() as u32;
        if support < min_support {
            continue;
        }
        let (tokens, words) = loaded.command_words[command as usize];
        let keys: Vec<String> = loaded
            .commands
            .resolve(command)
            .unwrap_or_default()
            .split(" ; ")
            .map(str::to_owned)
            .collect();
        if words >= 6 || tokens >= 2 {
            found.push(Found {
                kind: PatternKind::Sequence,
                keys: keys.clone(),
                support,
                count: places.len() as u32,
                occurrences: command_occurrences(sessions, places.iter(), options.max_occurrences),
                trigger: None,
                calls_per_occurrence: 1.5,
                single: true,
                bound: 0.0,
            });
        }
        let mut durations: Vec<u64> = places
            .iter()
            .filter_map(|&(s, r)| sessions[s as usize].rows[r as usize].duration())
            .collect();
        let timed_sessions = places
            .iter()
            .filter(|&&(s, r)| sessions[s as usize].rows[r as usize].duration_ms.is_some())
            .map(|p| p.0)
            .collect::<BTreeSet<_>>()
            .len() as u32;
        if timed_sessions >= min_support
            && median(&mut durations).is_some_and(|m| m >= options.slow_ms)
        {
            let timed = places
                .iter()
                .filter(|&&(s, r)| sessions[s as usize].rows[r as usize].duration_ms.is_some());
            found.push(Found {
                kind: PatternKind::Slow,
                keys,
                support: timed_sessions,
                count: durations.len() as u32,
                occurrences: command_occurrences(sessions, timed, options.max_occurrences),
                trigger: None,
                calls_per_occurrence: 1.0,
                single: false,
                bound: 0.0,
            });
        }
    }

    // Error→recovery habits.
    let attempts: Vec<&[Row]> = sessions.iter().map(|s| s.rows.as_slice()).collect();
    let recoveries = find_recoveries(&attempts, options.max_recovery_steps);
    for group in group_recoveries(&attempts, recoveries, &loaded.errors, min_support) {
        let mut occurrences = Vec::new();
        let mut seen = BTreeSet::new();
        for r in &group.occurrences {
            if !seen.insert(r.session) || occurrences.len() >= options.max_occurrences {
                continue;
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
        let mut keys = vec![
            loaded
                .commands
                .resolve(group.failed_key)
                .unwrap_or_default()
                .to_owned(),
        ];
        keys.extend(
            group
                .step_keys
                .iter()
                .map(|&k| loaded.commands.resolve(k).unwrap_or_default().to_owned()),
        );
        let calls = 1.0 + group.step_keys.len() as f64;
        found.push(Found {
            kind: PatternKind::Recovery,
            keys,
            support: group.support,
            count: group.occurrences.len() as u32,
            occurrences,
            trigger: Some(group.error_template),
            calls_per_occurrence: calls,
            single: false,
            bound: 0.0,
        });
    }

    // Rank by an upper bound, align the best of each kind, score them.
    for f in &mut found {
        f.bound = upper_bound(f);
    }
    found.sort_by(|a, b| {
        b.bound
            .total_cmp(&a.bound)
            .then_with(|| a.keys.cmp(&b.keys))
    });
    let mined_ms = started.elapsed().as_millis() as u64 - load_ms;
    let mut refetch = Refetch::new(conn, &tokenizer)?;
    let mut per_kind: HashMap<PatternKind, usize> = HashMap::new();
    let mut patterns: HashMap<String, Pattern> = HashMap::new();
    for f in &found {
        let taken = per_kind.entry(f.kind).or_default();
        if *taken >= options.max_patterns_per_kind {
            continue;
        }
        let Some((aligned, mut durations)) =
            align_occurrences(&mut refetch, &f.occurrences, f.trigger.is_some(), options)?
        else {
            continue;
        };
        // A single command is a habit only when its arguments vary.
        if f.single && aligned.params.is_empty() {
            continue;
        }
        *taken += 1;
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
            id: id.clone(),
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
        };
        pattern.templates = pattern.steps_text();
        match patterns.get(&id) {
            Some(existing) if existing.support >= pattern.support => {}
            _ => {
                patterns.insert(id, pattern);
            }
        }
    }
    let mut patterns: Vec<Pattern> = patterns.into_values().collect();
    patterns.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    let total_ms = started.elapsed().as_millis() as u64;
    Ok(MineReport {
        phases_ms: Phases {
            load: load_ms,
            mine: mined_ms,
            sequences: sequences_ms,
            sequence_nodes,
            align: total_ms - load_ms - mined_ms,
        },
        sessions: sessions.len(),
        actions: loaded.actions,
        tokens: sessions.iter().map(|s| s.symbols.len()).sum(),
        symbols: loaded.interner.len(),
        last_action: loaded.last_action,
        duration_ms: started.elapsed().as_millis() as u64,
        truncated,
        min_support,
        patterns,
    })
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

/// Stores a run's patterns and the run itself, and brings the statuses up to date with the
/// candidates: a pattern whose candidate was rejected is `rejected` (with the reason), one with a
/// candidate under way is `proposed`, one whose candidate was approved is `covered`.
///
/// Returns the ids of the patterns found for the first time.
pub fn store_patterns(
    conn: &mut Connection,
    report: &MineReport,
) -> Result<Vec<String>, StoreError> {
    let now = store::unix_now();
    let fresh = replace_patterns(conn, &report.patterns, now)?;
    let tx = conn.transaction()?;
    tx.execute(
        "UPDATE patterns SET status = 'rejected',
             reason = (SELECT reason FROM candidates c WHERE c.pattern = patterns.id
                       AND c.state = 'rejected' ORDER BY updated_at DESC LIMIT 1)
         WHERE id IN (SELECT pattern FROM candidates WHERE state = 'rejected')",
        [],
    )?;
    tx.execute(
        "UPDATE patterns SET status = 'covered', reason = 'an approved tool does it'
         WHERE status != 'rejected'
           AND id IN (SELECT pattern FROM candidates WHERE state = 'approved')",
        [],
    )?;
    tx.execute(
        "UPDATE patterns SET status = 'proposed', reason = NULL
         WHERE status = 'new' AND id IN (SELECT pattern FROM candidates
             WHERE state IN ('proposed', 'generating', 'validating', 'awaiting-review'))",
        [],
    )?;
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
