//! What the shell history adapters (`bash`, `zsh`, `fish`) share: the stable file id, the way a
//! history is cut into sessions (and the state that carries across records), timestamps, and the
//! [`Action`] a history entry becomes.
//!
//! # Sessions
//!
//! History files have no session boundaries, but the miner counts a habit once per session, so
//! one giant session would give every habit a support of 1. A history is therefore cut into
//! sessions `<source>:<file id>:<n>` (`n` = 0, 1, 2, … in file order):
//!
//! * a new session starts when the time between two consecutive *timestamped* entries exceeds
//!   [`SESSION_GAP_SECS`] (30 minutes), in either direction (merged histories jump backwards);
//! * entries that carry no time information — no timestamp at all (plain bash), or the same
//!   timestamp as the entry before (zsh and fish stamp a whole imported history with one time) —
//!   are cut into runs of [`UNTIMED_RUN`] entries. That length is a stated convention, not a
//!   measurement of the user's sessions: in the timestamped histories of the corpus a real
//!   session holds a median of 13 and a 90th percentile of 69 commands with distinct times, so a
//!   run of 100 keeps most real command sequences whole while a habit repeated throughout an
//!   untimed history is still counted several times.
//!
//! The file id is a 64-bit FNV-1a hash of the path given to [`Format::parser`], so two history
//! files of the same shell never share a session.
//!
//! # Outcome
//!
//! History files record what was typed, not how it ended (zsh's duration is the only outcome
//! data any of them keeps). An unknown outcome must not look like a success to the error miner,
//! so every history action has `result: None`.
//!
//! [`Format::parser`]: crate::ingest::adapters::Format::parser

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::action::{Action, Source};
use crate::ingest::adapters::Position;

/// Time between two consecutive timestamped entries above which a new session starts.
pub const SESSION_GAP_SECS: u64 = 30 * 60;

/// How many consecutive entries without time information one session holds at most.
pub const UNTIMED_RUN: u64 = 100;

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The stable id of a history file: 16 hex digits of the FNV-1a hash of its path as given.
pub fn file_id(path: &Path) -> String {
    format!("{:016x}", fnv1a64(path.as_os_str().as_encoded_bytes()))
}

/// The ordering key of the `index`-th action of the record at `pos`: `offset << 8 | index`.
/// Callers keep `index` below 256.
pub fn seq(pos: Position, index: usize) -> u64 {
    (pos.offset << 8) | (index.min(255) as u64)
}

/// Epoch seconds written as ASCII digits (an optional leading `-`), if they fit an `i64`.
pub fn parse_epoch(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// The timestamp of `secs` seconds after the epoch, if jiff can represent it.
pub fn timestamp(secs: i64) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_second(secs).ok()
}

/// Whether `bytes` holds nothing but ASCII whitespace.
pub fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Cuts a history into sessions (see the module documentation). Its state is what the shell
/// parsers persist with the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sessions {
    prefix: String,
    /// Number of the current session.
    n: u64,
    /// Timestamp of the last timestamped entry.
    last_ts: Option<i64>,
    /// Entries of the current session since time last moved forward.
    run: u64,
}

impl Sessions {
    /// The sessions of the file at `path`, resuming from a parser state written by
    /// [`Sessions::save`] (fields of the wrong type or missing read as a fresh start).
    pub fn new(source: Source, path: &Path, state: Option<&Value>) -> Self {
        let field = |name: &str| state.and_then(|s| s.get(name));
        Sessions {
            prefix: format!("{}:{}", source.as_str(), file_id(path)),
            n: field("session").and_then(Value::as_u64).unwrap_or(0),
            last_ts: field("last_ts").and_then(Value::as_i64),
            run: field("run").and_then(Value::as_u64).unwrap_or(0),
        }
    }

    /// The session of the next entry, whose timestamp (epoch seconds) is `ts`.
    pub fn next(&mut self, ts: Option<i64>) -> String {
        let progressed = ts.is_some_and(|t| self.last_ts != Some(t));
        if let (Some(t), Some(last)) = (ts, self.last_ts)
            && t.abs_diff(last) > SESSION_GAP_SECS
        {
            self.cut();
        }
        if progressed {
            self.run = 0;
        } else if self.run >= UNTIMED_RUN {
            self.cut();
        }
        self.run += 1;
        if ts.is_some() {
            self.last_ts = ts;
        }
        format!("{}:{}", self.prefix, self.n)
    }

    fn cut(&mut self) {
        self.n = self.n.saturating_add(1);
        self.run = 0;
    }

    /// Writes the state into `state` (an object).
    pub fn save(&self, state: &mut Map<String, Value>) {
        state.insert("session".into(), json!(self.n));
        state.insert("last_ts".into(), json!(self.last_ts));
        state.insert("run".into(), json!(self.run));
    }
}

/// The action a history entry becomes: tool `shell`, the command line in `input`, no cwd, and
/// an unknown outcome.
pub fn shell_action(
    source: Source,
    session: String,
    seq: u64,
    ts: Option<i64>,
    input: Map<String, Value>,
) -> Action {
    Action {
        session,
        seq,
        ts: ts.and_then(timestamp),
        source,
        cwd: None,
        tool: "shell".into(),
        input: Value::Object(input),
        call_id: None,
        parent_session: None,
        result: None,
    }
}

/// The `{"command": …}` input object.
pub fn command_input(command: String) -> Map<String, Value> {
    let mut input = Map::new();
    input.insert("command".into(), Value::String(command));
    input
}

/// The lines of a sniffed head: split at `\n`, a final `\r` removed. A head cut at 64 KiB may
/// end in a partial line.
pub fn head_lines(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    head.split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
}

/// The file name of `path`, lowercased (empty when it has none).
pub fn file_name_lower(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

/// Test support shared by the three shell adapters: a record cutter that follows each
/// framing's rule, a driver that feeds a [`Format`] exactly like the tailer does, and the
/// corpus location.
///
/// [`Format`]: crate::ingest::adapters::Format
#[cfg(test)]
pub mod testkit {
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use crate::action::Action;
    use crate::ingest::adapters::{Format, Framing, Item, Position, Problem};

    /// Which lines continue a zsh record.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ZshRule {
        /// The framing as `Framing::ZshContinuation` documents it: an odd number of trailing
        /// backslashes continues the record.
        OddBackslashes,
        /// zsh's own reader (`readhistline` in `Src/hist.c`): any trailing backslash continues.
        AnyBackslash,
    }

    /// Cuts `bytes` into records (without final newline, `\r\n` → `\n`, whitespace-only records
    /// dropped), as a one-shot ingest of a finished file does.
    pub fn cut(framing: Framing, zsh: ZshRule, bytes: &[u8]) -> Vec<(Vec<u8>, Position)> {
        let mut out = Vec::new();
        let mut record: Option<(Vec<u8>, Position)> = None;
        let mut emit = |record: &mut Option<(Vec<u8>, Position)>| {
            if let Some((bytes, pos)) = record.take()
                && !bytes.iter().all(u8::is_ascii_whitespace)
            {
                out.push((bytes, pos));
            }
        };
        let mut offset = 0u64;
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if bytes.ends_with(b"\n") {
            lines.pop();
        }
        for (i, raw) in lines.into_iter().enumerate() {
            let pos = Position {
                offset,
                line: i as u64 + 1,
            };
            offset += raw.len() as u64 + 1;
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            let starts = match framing {
                Framing::FishEntries => line.starts_with(b"- "),
                _ => record.is_none(),
            };
            if starts {
                emit(&mut record);
            }
            match (&mut record, starts) {
                (Some((bytes, _)), false) => {
                    bytes.push(b'\n');
                    bytes.extend_from_slice(line);
                }
                (_, true) => record = Some((line.to_vec(), pos)),
                (None, false) => continue,
            }
            let ends = match framing {
                Framing::BashTimestamped => !super::super::bash::is_timestamp_line(line),
                Framing::ZshContinuation => {
                    let trailing = line.iter().rev().take_while(|&&b| b == b'\\').count();
                    match zsh {
                        ZshRule::OddBackslashes => trailing % 2 == 0,
                        ZshRule::AnyBackslash => trailing == 0,
                    }
                }
                Framing::FishEntries => false,
                Framing::Lines | Framing::WholeFile | Framing::Database => true,
            };
            if ends {
                emit(&mut record);
            }
        }
        emit(&mut record);
        out
    }

    /// What a run produced.
    #[derive(Debug, Default)]
    pub struct Run {
        pub actions: Vec<Action>,
        pub problems: Vec<(Position, Problem)>,
        pub state: Value,
    }

    /// Feeds `records` to a parser of `format` for `path` (resuming from `state`), joins late
    /// results onto earlier actions, and returns the parser's final state.
    pub fn feed(
        format: &dyn Format,
        path: &Path,
        state: Option<Value>,
        records: &[(Vec<u8>, Position)],
    ) -> Run {
        let mut parser = format.parser(path, state);
        let mut run = Run::default();
        for (bytes, pos) in records {
            let mut items = Vec::new();
            match parser.record(bytes, *pos, &mut items) {
                Ok(()) => {}
                Err(problem) => {
                    assert!(items.is_empty(), "a failed record yielded items at {pos:?}");
                    run.problems.push((*pos, problem));
                }
            }
            for item in items {
                match item {
                    Item::Action(action) => run.actions.push(action),
                    Item::Result(late) => {
                        if let Some(action) = run.actions.iter_mut().rev().find(|a| {
                            a.session == late.session
                                && a.call_id.as_deref() == Some(late.call_id.as_str())
                        }) {
                            action.result = Some(late.result);
                        }
                    }
                    Item::SessionLink { .. } => {}
                }
            }
        }
        // The state goes through its persisted (text) form, as a checkpoint would keep it.
        let text = parser.state().to_string();
        run.state = serde_json::from_str(&text).expect("state is JSON");
        run
    }

    /// Cuts and feeds a whole file in one pass.
    pub fn run(format: &dyn Format, zsh: ZshRule, path: &Path, bytes: &[u8]) -> Run {
        feed(format, path, None, &cut(format.framing(), zsh, bytes))
    }

    /// Runs the file in two parts split after record `at`, the second parser resuming from the
    /// first one's state, and checks that this gives what one pass gives.
    pub fn assert_resume_equivalent(format: &dyn Format, zsh: ZshRule, path: &Path, bytes: &[u8]) {
        let records = cut(format.framing(), zsh, bytes);
        let whole = feed(format, path, None, &records);
        for at in [0, 1, records.len() / 3, records.len() / 2, records.len()] {
            let at = at.min(records.len());
            let first = feed(format, path, None, &records[..at]);
            let second = feed(format, path, Some(first.state.clone()), &records[at..]);
            let mut actions = first.actions;
            actions.extend(second.actions);
            assert_eq!(actions, whole.actions, "split after record {at}");
            assert_eq!(
                second.state, whole.state,
                "final state, split after record {at}"
            );
            assert_eq!(
                first.problems.len() + second.problems.len(),
                whole.problems.len(),
                "problems, split after record {at}"
            );
        }
    }

    /// The corpus file `relative` (under `corpus/`), or `None` (with a message) when the corpus
    /// is absent — a failure when `CI=true`.
    pub fn corpus(relative: &str) -> Option<(PathBuf, Vec<u8>)> {
        let root = corpus_root();
        let path = root.join(relative);
        match std::fs::read(&path) {
            Ok(bytes) => Some((path, bytes)),
            Err(_) => {
                let message = format!("skipped: corpus not found at {}", path.display());
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("{message}");
                }
                println!("{message}");
                None
            }
        }
    }

    /// `…/shared/corpus` next to the crate.
    pub fn corpus_root() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"))
    }

    /// Every file under the corpus root, sorted.
    pub fn corpus_files() -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut dirs = vec![corpus_root()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        files.sort();
        files
    }

    /// The first 64 KiB of a file, as the sniffer sees it.
    pub fn head(path: &Path) -> Vec<u8> {
        let mut bytes = std::fs::read(path).expect("read corpus file");
        bytes.truncate(64 * 1024);
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn file_ids_are_stable_and_distinct() {
        let a = file_id(Path::new("/home/u/.bash_history"));
        assert_eq!(a, file_id(Path::new("/home/u/.bash_history")));
        assert_ne!(a, file_id(Path::new("/home/v/.bash_history")));
        assert_eq!(a.len(), 16);
    }

    #[test]
    fn sessions_cut_at_gaps_and_untimed_runs() {
        let path = Path::new("/h");
        let mut s = Sessions::new(Source::Zsh, path, None);
        let id = |n: u64| format!("zsh:{}:{n}", file_id(path));
        assert_eq!(s.next(Some(1_000)), id(0));
        assert_eq!(
            s.next(Some(1_000 + 1_800)),
            id(0),
            "exactly 30 minutes is no gap"
        );
        assert_eq!(s.next(Some(1_000 + 3_601)), id(1));
        assert_eq!(s.next(Some(1_000)), id(2), "a backwards jump is a gap too");
        // 99 more entries with the same time fill the run of 100; the next one starts another.
        for _ in 0..99 {
            assert_eq!(s.next(Some(1_000)), id(2));
        }
        assert_eq!(s.next(Some(1_000)), id(3));
        assert_eq!(s.next(Some(1_001)), id(3), "time moved: the run restarts");
        for _ in 0..99 {
            assert_eq!(s.next(None), id(3));
        }
        assert_eq!(s.next(None), id(4));

        let mut plain = Sessions::new(Source::Bash, path, None);
        let sessions: Vec<String> = (0..250).map(|_| plain.next(None)).collect();
        assert_eq!(sessions[99], format!("bash:{}:0", file_id(path)));
        assert_eq!(sessions[100], format!("bash:{}:1", file_id(path)));
        assert_eq!(sessions[249], format!("bash:{}:2", file_id(path)));
    }

    #[test]
    fn sessions_resume_from_their_state_and_survive_bad_state() {
        let path = Path::new("/h");
        let mut a = Sessions::new(Source::Fish, path, None);
        for t in [10, 20, 5_000, 5_000] {
            a.next(Some(t));
        }
        let mut state = Map::new();
        a.save(&mut state);
        let mut b = Sessions::new(Source::Fish, path, Some(&Value::Object(state)));
        assert_eq!(a, b);
        assert_eq!(a.next(Some(9_000)), b.next(Some(9_000)));

        for bad in [
            json!(null),
            json!([1, 2]),
            json!("x"),
            json!({"session": "3", "last_ts": [], "run": -1}),
            json!({"session": u64::MAX, "last_ts": i64::MIN, "run": u64::MAX}),
        ] {
            let mut s = Sessions::new(Source::Fish, path, Some(&bad));
            s.next(Some(i64::MAX));
            s.next(None);
        }
    }

    #[test]
    fn epochs_parse_strictly() {
        assert_eq!(parse_epoch(b"1700000000"), Some(1_700_000_000));
        assert_eq!(parse_epoch(b"-5"), Some(-5));
        assert_eq!(parse_epoch(b""), None);
        assert_eq!(parse_epoch(b"-"), None);
        assert_eq!(parse_epoch(b"+5"), None);
        assert_eq!(parse_epoch(b"12a"), None);
        assert_eq!(parse_epoch(b"99999999999999999999999"), None);
        assert_eq!(timestamp(i64::MAX), None);
        assert_eq!(
            timestamp(1_700_000_000).map(|t| t.to_string()),
            Some("2023-11-14T22:13:20Z".into())
        );
    }
}
