//! Crush: `<project>/.crush/crush.db`, an SQLite database (WAL) that Crush writes while it runs.
//! Read through [`crate::ingest::database`].
//!
//! The calls are in the `messages` table (`id`, `session_id`, `role`, `parts` — a JSON array —,
//! `created_at`, `updated_at`, `finished_at`), as charmbracelet/crush's migrations declare it
//! (`internal/db/migrations/20250424200609_initial.sql`) and `internal/message/content.go`
//! shapes `parts`: `{"type": "tool_call", "data": {"id", "name", "input" (a JSON *string*),
//! "finished"}}` in an `assistant` message, `{"type": "tool_result", "data": {"tool_call_id",
//! "content", "metadata", "is_error"}}` in a `tool` message. The bash tool's result text says
//! `Exit code N` when the command failed; its `metadata` (a JSON string) holds `start_time` and
//! `end_time` in milliseconds.
//!
//! Each tool call with `finished: true` is an action (its `input` the parsed input object; the
//! bash tool's `command` is the command line), emitted once: an assistant message still being
//! written (`finished_at` null) is kept *open* in the parser's state with the calls emitted from
//! it, and read again on the next change. Each tool result is an [`Item::Result`] for its call:
//! `ok` is false for `is_error` or a non-zero exit code, the output the result's text as logged.
//! Text, reasoning and finish parts yield nothing. `session` is the message's `session_id`
//! (with its session's `parent_session_id` as parent), `cwd` the project the database belongs
//! to (the directory holding `.crush`), `ts` the message's `created_at` (seconds, as Crush
//! writes it; milliseconds accepted), `seq` counts the actions read from the database.

use std::path::Path;

use serde_json::{Map, Value};

use crate::action::{Action, ActionResult, Source, exit_code_from_text};
use crate::ingest::adapters::{
    Format, Framing, Item, LateResult, Position, Problem, RecordParser, Tables,
};

/// The Crush database format.
pub struct Crush;

/// How many messages are kept open (being written) at most.
pub const OPEN_CAP: usize = 64;

/// The queries of Crush's database: messages with their session's parent.
static TABLES: Tables = Tables {
    new_rows: "SELECT m.rowid, m.id, m.session_id, m.role, m.parts, m.created_at, \
               m.finished_at, s.parent_session_id FROM messages m \
               LEFT JOIN sessions s ON s.id = m.session_id \
               WHERE m.rowid > ?1 ORDER BY m.rowid LIMIT ?2",
    row: "SELECT m.rowid, m.id, m.session_id, m.role, m.parts, m.created_at, \
          m.finished_at, s.parent_session_id FROM messages m \
          LEFT JOIN sessions s ON s.id = m.session_id WHERE m.id = ?1",
    last: "SELECT max(rowid) FROM messages",
};

impl Format for Crush {
    fn source(&self) -> Source {
        Source::Crush
    }

    fn framing(&self) -> Framing {
        Framing::Database
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(CrushParser::new(project_of(path), state.as_ref()))
    }

    /// The database's `-wal`, `-shm` or `-journal` beside it: read through the database.
    fn companion(&self, path: &Path) -> Option<&'static str> {
        crate::ingest::database::is_companion(path)
            .then_some("a SQLite database's write-ahead log, shared memory or journal (read with the database)")
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name.ends_with("crush.db") && head.starts_with(super::SQLITE_HEADER)
    }

    fn tables(&self) -> Option<&'static Tables> {
        Some(&TABLES)
    }
}

/// The project a Crush database belongs to: the directory holding its `.crush` directory.
fn project_of(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    (dir.file_name()? == ".crush")
        .then(|| dir.parent().map(|p| p.display().to_string()))
        .flatten()
}

/// A message kept open: its id and the calls emitted from it.
#[derive(Debug, Clone, PartialEq)]
struct Open {
    id: String,
    emitted: Vec<String>,
}

/// The parser of Crush message rows.
pub struct CrushParser {
    cwd: Option<String>,
    seq: u64,
    open: Vec<Open>,
}

impl CrushParser {
    fn new(cwd: Option<String>, state: Option<&Value>) -> Self {
        let seq = state
            .and_then(|s| s.get("seq"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let open = state
            .and_then(|s| s.get("open"))
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(id, emitted)| Open {
                        id: id.clone(),
                        emitted: emitted
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        CrushParser { cwd, seq, open }
    }
}

fn timestamp(value: Option<&Value>) -> Option<jiff::Timestamp> {
    let n = value.and_then(Value::as_i64)?;
    // Crush's schema says milliseconds; the versions seen write seconds.
    if n > 100_000_000_000 {
        jiff::Timestamp::from_millisecond(n).ok()
    } else {
        jiff::Timestamp::from_second(n).ok()
    }
}

/// A tool result part's result.
fn result_of(data: &Value) -> ActionResult {
    let output = data
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let exit_code = exit_code_from_text(output);
    let is_error = data
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let metadata: Option<Value> = data
        .get("metadata")
        .and_then(Value::as_str)
        .and_then(|m| serde_json::from_str(m).ok());
    let time = |key: &str| {
        metadata
            .as_ref()
            .and_then(|m| m.get(key))
            .and_then(Value::as_u64)
    };
    let duration_ms = match (time("start_time"), time("end_time")) {
        (Some(start), Some(end)) if end >= start => Some(end - start),
        _ => None,
    };
    ActionResult {
        ok: !is_error && exit_code.is_none_or(|c| c == 0),
        exit_code,
        output: output.to_owned(),
        duration_ms,
    }
}

impl RecordParser for CrushParser {
    fn record(
        &mut self,
        record: &[u8],
        _pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let row: Map<String, Value> = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("unreadable row: {e}")))?;
        let text = |key: &str| row.get(key).and_then(Value::as_str);
        let id = text("id").ok_or_else(|| Problem::new("message row without an id"))?;
        let session = text("session_id")
            .ok_or_else(|| Problem::new(format!("message {id} without a session")))?;
        let parts: Vec<Value> = serde_json::from_str(text("parts").unwrap_or("[]"))
            .map_err(|e| Problem::new(format!("message {id}: parts are not a JSON list: {e}")))?;
        let at = self.open.iter().position(|o| o.id == id);
        let mut emitted = at
            .map(|at| self.open.remove(at).emitted)
            .unwrap_or_default();
        let mut problems = Vec::new();
        for part in &parts {
            let data = part.get("data").unwrap_or(&Value::Null);
            match part.get("type").and_then(Value::as_str) {
                Some("tool_call") => {
                    let finished = data.get("finished").and_then(Value::as_bool) == Some(true);
                    let Some(call_id) = data.get("id").and_then(Value::as_str) else {
                        problems.push("a tool call without an id".to_owned());
                        continue;
                    };
                    if !finished || emitted.iter().any(|e| e == call_id) {
                        continue;
                    }
                    let raw = data.get("input").and_then(Value::as_str).unwrap_or("{}");
                    let input = match serde_json::from_str::<Value>(raw) {
                        Ok(input @ Value::Object(_)) => input,
                        _ => {
                            problems.push(format!("tool call {call_id}: input is not an object"));
                            continue;
                        }
                    };
                    let tool = data.get("name").and_then(Value::as_str).unwrap_or("");
                    out.push(Item::Action(Action {
                        session: session.to_owned(),
                        seq: self.seq,
                        ts: timestamp(row.get("created_at")),
                        source: Source::Crush,
                        cwd: self.cwd.clone(),
                        tool: tool.to_owned(),
                        input,
                        call_id: Some(call_id.to_owned()),
                        parent_session: text("parent_session_id").map(str::to_owned),
                        result: None,
                    }));
                    self.seq += 1;
                    emitted.push(call_id.to_owned());
                }
                Some("tool_result") => {
                    let Some(call_id) = data.get("tool_call_id").and_then(Value::as_str) else {
                        problems.push("a tool result without a call id".to_owned());
                        continue;
                    };
                    out.push(Item::Result(LateResult {
                        session: session.to_owned(),
                        call_id: call_id.to_owned(),
                        result: result_of(data),
                        replaces: false,
                    }));
                }
                _ => {}
            }
        }
        let writing =
            text("role") == Some("assistant") && row.get("finished_at").is_none_or(Value::is_null);
        if writing {
            if self.open.len() >= OPEN_CAP {
                self.open.remove(0);
            }
            self.open.push(Open {
                id: id.to_owned(),
                emitted,
            });
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(Problem::new(format!(
                "message {id}: {}",
                problems.join("; ")
            ))),
        }
    }

    fn state(&self) -> Value {
        let open: Map<String, Value> = self
            .open
            .iter()
            .map(|o| (o.id.clone(), serde_json::json!(o.emitted)))
            .collect();
        serde_json::json!({"seq": self.seq, "open": open})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_databases_wal_shm_and_journal_are_companions() {
        for name in ["crush.db-wal", "crush.db-shm", "crush.db-journal"] {
            let path = Path::new("/w/app/.crush").join(name);
            assert!(Crush.companion(&path).is_some(), "{name}");
        }
        assert!(
            Crush
                .companion(Path::new("/w/app/.crush/crush.db"))
                .is_none()
        );
        assert!(Crush.companion(Path::new("/w/app/notes-wal")).is_none());
    }

    /// A message row as the database reader hands it over; parts in the shape of
    /// charmbracelet/crush `internal/message/content.go` (ToolCall, ToolResult, Finish).
    fn message(id: &str, role: &str, parts: Value, finished: Option<i64>) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "rowid": 1, "id": id, "session_id": "s1", "role": role,
            "parts": parts.to_string(), "created_at": 1754457380, "finished_at": finished,
            "parent_session_id": null
        }))
        .expect("row")
    }

    fn call(id: &str, command: &str, finished: bool) -> Value {
        serde_json::json!({"type": "tool_call", "data": {"id": id, "name": "bash",
            "input": serde_json::json!({"command": command, "timeout": 600000}).to_string(),
            "type": "function", "finished": finished}})
    }

    fn parse(parser: &mut CrushParser, record: &[u8]) -> Result<Vec<Item>, Problem> {
        let mut out = Vec::new();
        parser
            .record(record, Position { offset: 0, line: 1 }, &mut out)
            .map(|()| out)
    }

    #[test]
    fn calls_are_emitted_once_as_their_message_is_written_and_results_join_them() {
        let mut parser = CrushParser::new(Some("/p".into()), None);
        let streaming = message(
            "m1",
            "assistant",
            serde_json::json!([call("c1", "pnpm te", false)]),
            None,
        );
        assert!(
            parse(&mut parser, &streaming)
                .expect("streaming")
                .is_empty()
        );
        let one = message(
            "m1",
            "assistant",
            serde_json::json!([call("c1", "pnpm test", true), call("c2", "ls", false)]),
            None,
        );
        let items = parse(&mut parser, &one).expect("one");
        let [Item::Action(action)] = items.as_slice() else {
            panic!("one action: {items:?}")
        };
        assert_eq!(action.input["command"], "pnpm test");
        assert_eq!(action.cwd.as_deref(), Some("/p"));
        assert_eq!(action.ts.map(|t| t.as_second()), Some(1754457380));
        let mut resumed = CrushParser::new(Some("/p".into()), Some(&parser.state()));
        let both = message(
            "m1",
            "assistant",
            serde_json::json!([call("c1", "pnpm test", true), call("c2", "ls", true), {"type": "finish", "data": {"reason": "tool_use"}}]),
            Some(1754457384),
        );
        let items = parse(&mut resumed, &both).expect("both");
        let [Item::Action(action)] = items.as_slice() else {
            panic!("only the new call: {items:?}")
        };
        assert_eq!(action.input["command"], "ls");
        assert_eq!(resumed.state()["open"], serde_json::json!({}));
        let result = message(
            "m2",
            "tool",
            serde_json::json!([{"type": "tool_result", "data": {
            "tool_call_id": "c1", "name": "", "content": "FAIL tests/draw.test.tsx\n\nExit code 1\n\n<cwd>/p</cwd>",
            "metadata": "{\"start_time\":1754457409922,\"end_time\":1754457411128}", "is_error": false}}]),
            None,
        );
        let items = parse(&mut resumed, &result).expect("result");
        let [Item::Result(late)] = items.as_slice() else {
            panic!("one result: {items:?}")
        };
        assert_eq!(late.call_id, "c1");
        assert_eq!(late.result.exit_code, Some(1));
        assert!(!late.result.ok);
        assert_eq!(late.result.duration_ms, Some(1206));
        assert!(late.result.output.starts_with("FAIL tests/draw.test.tsx"));
    }

    #[test]
    fn untrusted_rows_never_panic() {
        let mut parser = CrushParser::new(None, None);
        let bad: &[&[u8]] = &[
            b"",
            b"garbage",
            b"{}",
            br#"{"id": "m", "session_id": "s", "parts": "not json"}"#,
            br#"{"id": "m", "session_id": "s", "parts": "{}"}"#,
            br#"{"id": "m", "session_id": "s", "parts": "[1, null, {\"type\": \"tool_call\"}]"}"#,
        ];
        for record in bad {
            let _ = parse(&mut parser, record);
        }
        let unknown = message(
            "m",
            "assistant",
            serde_json::json!([{"type": "hologram", "data": {}}]),
            Some(1),
        );
        assert!(
            parse(&mut parser, &unknown)
                .expect("unknown part")
                .is_empty()
        );
        let no_id = message(
            "m",
            "assistant",
            serde_json::json!([{"type": "tool_call", "data": {"finished": true}}]),
            Some(1),
        );
        assert!(parse(&mut parser, &no_id).is_err());
    }

    #[test]
    fn the_project_is_the_directory_holding_dot_crush() {
        assert_eq!(
            project_of(Path::new("/home/u/app/.crush/crush.db")).as_deref(),
            Some("/home/u/app")
        );
        assert_eq!(project_of(Path::new("/tmp/crush.db")), None);
    }
}
