//! One adapter per log format. An adapter turns the *records* of one file into [`Item`]s.
//!
//! The tailer (not the adapter) reads bytes, cuts them into records with the format's
//! [`Framing`], and commits each batch of items in the same SQLite transaction as the file's new
//! checkpoint. Adapters are therefore pure: no I/O, no clocks, no randomness. The same bytes
//! always give the same items, which is what makes a crash-and-resume produce exactly what a
//! one-shot ingest of the final file produces.

pub mod aider;
pub mod bash;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod crush;
pub mod cursor;
pub mod fish;
pub mod gemini_cli;
pub mod kimi;
pub mod lenient;
pub mod native;
pub mod opencode;
pub mod opencode_json;
pub mod openhands;
mod shell_common;
pub mod swe_agent;
pub mod zsh;

use std::path::Path;

use serde_json::Value;

use crate::action::{Action, ActionResult, Source};

/// How a format's bytes are cut into records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One record per line (JSON Lines, plain bash history).
    Lines,
    /// bash with `HISTTIMEFORMAT`: a `#<epoch>` line belongs to the command line after it.
    BashTimestamped,
    /// zsh: a line ending in a backslash continues on the next line (zsh's own reading rule).
    ZshContinuation,
    /// fish: a record starts at a line beginning `- cmd:` and runs until the next such line.
    FishEntries,
    /// The whole file is one JSON document, read only when complete and re-read when changed.
    WholeFile,
    /// An SQLite database the agent writes: its records are rows, read by
    /// [`crate::ingest::database`] through the queries of [`Format::tables`], each handed to the
    /// parser as a JSON object of the row's columns.
    Database,
}

/// The first bytes of every SQLite database file.
pub const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

/// How a [`Framing::Database`] format's rows are queried. Each query's first column is the
/// row's `rowid` (where reading goes on from), the others its record's fields by column name.
/// The parser's state names the rows to read again (calls still running) as the keys of its
/// `open` object.
#[derive(Debug)]
pub struct Tables {
    /// The rows after a rowid (`?1`), at most `?2` of them, in rowid order.
    pub new_rows: &'static str,
    /// One row again, by its id (`?1`, the record's `id`).
    pub row: &'static str,
    /// The largest rowid there is (`SELECT max(rowid) FROM …`).
    pub last: &'static str,
}

/// Where a record starts in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Byte offset of the record's first byte.
    pub offset: u64,
    /// 1-based line number of the record's first line.
    pub line: u64,
}

/// The result of a call seen earlier (possibly in an earlier batch, or before a restart).
#[derive(Debug, Clone, PartialEq)]
pub struct LateResult {
    /// The call's session.
    pub session: String,
    /// The call's id.
    pub call_id: String,
    /// What it produced.
    pub result: ActionResult,
    /// This is the call's final word and replaces a result given before (Codex's
    /// `exec_command_end`: the exit code, duration and whole output of a command whose first
    /// answer was its output so far). An ordinary result never replaces one already joined.
    pub replaces: bool,
}

/// What a record yields.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A call, with its result when the same record carries it.
    Action(Action),
    /// A result for a call identified by (session, call_id).
    Result(LateResult),
    /// A session started by another one (a sub-agent): recorded so the link is kept even before
    /// the sub-agent's first call.
    SessionLink {
        /// The sub-agent's session.
        session: String,
        /// The session that started it.
        parent: String,
    },
}

/// A record the adapter could not use. The rest of the file goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Short reason, e.g. "invalid JSON: expected value at column 1".
    pub reason: String,
}

impl Problem {
    /// A problem with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Problem {
            reason: reason.into(),
        }
    }
}

/// A streaming parser for one file.
pub trait RecordParser: Send {
    /// Turns one complete record (without its final newline) into items.
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem>;

    /// State to persist with the checkpoint (e.g. the session id and cwd a Codex rollout
    /// declared in its first line), restored by [`Format::parser`] after a restart.
    fn state(&self) -> Value {
        Value::Null
    }
}

/// A log format: its framing and how to build a parser for one of its files.
pub trait Format: Sync {
    /// Which source the format belongs to.
    fn source(&self) -> Source;
    /// How records are cut.
    fn framing(&self) -> Framing;
    /// A parser for the file at `path`, resuming from `state` when a checkpoint had one.
    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser>;
    /// Whether `head` (the first bytes of a file, up to 64 KiB) and `path` look like this format.
    /// Used by `toolsmith ingest` when no format is given.
    fn sniff(&self, path: &Path, head: &[u8]) -> bool;
    /// What a file the agent keeps among its logs is, when it is not a log (a Claude Code
    /// sub-agent's `.meta.json`): a walk passes it by instead of calling it unrecognised.
    /// `None` for any other file.
    fn companion(&self, _path: &Path) -> Option<&'static str> {
        None
    }

    /// For a [`Framing::Database`] format, its queries.
    fn tables(&self) -> Option<&'static Tables> {
        None
    }
}
