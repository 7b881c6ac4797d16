//! Step 1, **load**: every action read once, session by session, tokenized and reduced to what
//! mining needs ([`Loaded`]); and [`Refetch`], which reads a pattern's occurrences again for
//! alignment.

use std::collections::{BTreeSet, HashMap};

use rusqlite::Connection;
use serde_json::Value;

use super::{BARRIER, MineError, interactive};
use crate::action::{Action, ActionResult, Source, stored as actions_table};
use crate::mine::recovery::{AsAttempt, Attempt, error_line};
use crate::mine::templates::{TemplateId, TemplateMiner, TemplateMinerConfig};
use crate::mine::token::{self, InternError, Interner, LineParse, Token, TokenKind, Tokenizer};
use crate::store::StoreError;

/// One action as mining keeps it (28 bytes: millions of them are held at once).
#[derive(Debug, Clone, Copy)]
pub(super) struct Row {
    pub(super) seq: u64,
    /// The command's key: its tokens' keys together.
    pub(super) command: u32,
    /// Index of its first token in the session's token sequence.
    pub(super) first_token: u32,
    error: Option<TemplateId>,
    /// Duration in ms (capped at about 49 days).
    pub(super) duration_ms: Option<u32>,
    pub(super) tokens: u16,
    pub(super) ok: Option<bool>,
    /// Holds a step no tool can take ([`INTERACTIVE_PROGRAMS`]).
    pub(super) by_hand: bool,
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
    pub(super) fn token_range(&self) -> std::ops::Range<usize> {
        let first = self.first_token as usize;
        first..first + usize::from(self.tokens)
    }

    pub(super) fn duration(&self) -> Option<u64> {
        self.duration_ms.map(u64::from)
    }
}

#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) id: String,
    /// Its index among the loaded sessions.
    pub(super) index: u32,
    /// The session it counts with: its own index among the families, shared by a sub-agent's
    /// session and its parent's.
    family: u32,
    pub(super) rows: Vec<Row>,
    pub(super) symbols: Vec<u32>,
    /// For each token, the index of its row.
    pub(super) token_row: Vec<u32>,
}

/// Everything loaded for a run.
pub(super) struct Loaded {
    pub(super) sessions: Vec<Session>,
    /// Family (a top-level session) names, by index.
    pub(super) families: HashMap<String, u32>,
    pub(super) interner: Interner,
    /// Per symbol: whether it is an agent's own tool call (`Read`, `Edit`, SWE-agent's `open`).
    pub(super) agent_tool: Vec<bool>,
    pub(super) commands: Interner,
    /// Per command key, its tokens' count and words: how complex one command is.
    pub(super) command_words: Vec<(u32, u32)>,
    pub(super) errors: TemplateMiner,
    pub(super) actions: usize,
    /// Actions whose command line did not parse, and of those the foreign ones.
    pub(super) unparsed: usize,
    pub(super) foreign: usize,
    pub(super) last_action: i64,
    /// The first symbol given to a by-hand step: those from it on are barriers.
    pub(super) first_barrier: u32,
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
/// An action read back: its tokens, its output, its command line (for a shell action) and
/// where it came from.
pub(super) type Refetched = (Vec<Token>, Option<String>, Option<String>, Source);

/// What tokenizing one command gave, kept so that the same command is tokenized once a run.
#[derive(Debug, Clone)]
pub(super) struct Abstracted {
    command: u32,
    /// Symbols of its tokens, [`BARRIER`] for a by-hand step.
    symbols: Box<[u32]>,
    by_hand: bool,
}

/// Distinct commands remembered per run before the cache starts over (bounds its memory).
const TOKEN_CACHE_ENTRIES: usize = 200_000;

/// Reads every action, session by session, keeping what mining needs of each (see the module
/// documentation, step 1).
pub(super) fn load(conn: &Connection, tokenizer: &Tokenizer) -> Result<Loaded, MineError> {
    load_where(conn, tokenizer, |_| true)
}

/// [`load`] of the actions `keep` takes (the others are as if never logged).
pub(super) fn load_where(
    conn: &Connection,
    tokenizer: &Tokenizer,
    mut keep: impl FnMut(&actions_table::ActionView<'_>) -> bool,
) -> Result<Loaded, MineError> {
    let mut loaded = Loaded::new();
    let mut current = Session::default();
    let mut cache = CommandCache::new(tokenizer);
    // A sub-agent's session counts with its parent's.
    let parents = actions_table::session_parents(conn)?;
    actions_table::for_each_action(conn, |row| -> Result<(), MineError> {
        if !keep(&row) {
            return Ok(());
        }
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
    pub(super) fn new(tokenizer: &'t Tokenizer) -> Self {
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
    pub(super) fn new() -> Self {
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
            first_barrier: BARRIER,
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
            // `cd web && make build` is two commands of the line, the `cd` no token of its own.
            let moved = tokens.iter().filter(|t| t.moved).count();
            self.command_words.push((
                (tokens.len() + moved) as u32,
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
    pub(super) fn symbol_counts(&self) -> Vec<u32> {
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
    pub(super) fn support(&self, indices: impl IntoIterator<Item = usize>) -> u32 {
        indices
            .into_iter()
            .map(|s| self.sessions[s].family)
            .collect::<BTreeSet<_>>()
            .len() as u32
    }

    /// The template of a failure's error line, when its output has one.
    pub(super) fn error_template(&mut self, output: Option<&str>) -> Option<TemplateId> {
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
    /// by occurrences), so no pattern holds it, and no occurrence runs across it.
    fn own_barriers(&mut self) {
        self.first_barrier = u32::try_from(self.interner.len()).unwrap_or(BARRIER);
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
    pub(super) fn push(
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
pub(super) struct Refetch<'c> {
    calls: actions_table::CallLookup<'c>,
    tokenizer: &'c Tokenizer,
    cache: HashMap<(String, u64), Refetched>,
    /// About how many bytes the cache holds (outputs, inline inputs, keys).
    cached_bytes: usize,
    /// The occurrences' command lines, cut once a run.
    pub(super) lines: crate::mine::line::ParseCache,
    /// The user's definitions each action read back was expanded with.
    pub(super) used: super::words::Used,
}

/// Bytes of re-read actions kept per run before the cache starts over: a habit's repeats in
/// long sessions would otherwise keep thousands of outputs for the whole run.
const REFETCH_CACHE_BYTES: usize = 4 << 20;

impl<'c> Refetch<'c> {
    pub(super) fn new(conn: &'c Connection, tokenizer: &'c Tokenizer) -> Result<Self, MineError> {
        Ok(Refetch {
            calls: actions_table::CallLookup::new(conn)?,
            tokenizer,
            cache: HashMap::new(),
            cached_bytes: 0,
            lines: crate::mine::line::ParseCache::default(),
            used: super::words::Used::new(),
        })
    }

    pub(super) fn action(
        &mut self,
        session: &str,
        seq: u64,
    ) -> Result<Option<&Refetched>, MineError> {
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
            // The line as its shell ran it: the habit's lines are what a tool runs.
            let line = match self.tokenizer.expanded_line(&action) {
                Some(expanded) => {
                    self.used
                        .entry(session.to_owned())
                        .or_default()
                        .insert(seq, expanded.used);
                    Some(expanded.line)
                }
                None => token::command_line(&action).map(str::to_owned),
            };
            let source = action.source;
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
            self.cache
                .insert(key.clone(), (tokens, output, line, source));
        }
        Ok(self.cache.get(&key))
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::params;

    use super::super::test_support::*;
    use super::*;
    use crate::mine::miner::{MineOptions, mine};
    use crate::store::{Store, open_for_update};

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
