//! OpenCode (v1.2 and later): `~/.local/share/opencode/opencode.db` (`$XDG_DATA_HOME/opencode`;
//! other release channels write `opencode-<channel>.db` beside it), an SQLite database in WAL
//! mode that OpenCode writes while it runs. Read through [`crate::ingest::database`].
//!
//! The calls are the `part` table's rows (`id`, `message_id`, `session_id`, `time_created`,
//! `time_updated`, `data` — a JSON document), as the opencode repository declares it
//! (`packages/opencode/src/session/session.sql.ts`, drizzle) and `message-v2.ts` shapes `data`:
//! a tool part is `{"type": "tool", "tool": "bash", "callID", "state": {…}}` whose `state` goes
//! `pending` (input still streaming) → `running` (`input`, `time.start`) → `completed`
//! (`input`, `output`, `metadata`, `time.start`/`end`) or `error` (`error` text). The row is
//! updated in place as it goes. A bash call's `state.input.command` is the command line, its
//! `state.metadata.exit` the exit status; other tools (`read`, `edit`, `write`, `grep`, `glob`,
//! …) keep their `input` as logged (`filePath`, `oldString`, …).
//!
//! Each call is one action, emitted once: when first seen `running` (without result: its
//! result comes as an [`Item::Result`] once the row is `completed` or `error`), or with its
//! result when first seen finished. A part seen `pending` or `running` is kept *open* in the
//! parser's state, so the database reader reads that row again on the next change; the open set
//! is bounded ([`OPEN_CAP`], oldest dropped: a call whose agent died mid-run stays open until
//! then). Text, reasoning and step parts yield nothing.
//!
//! The action's `call_id` is the part's `id` (`prt_…`), unique in the database: the model's
//! `callID` (`functions.bash:7`) is a per-response counter for some providers. `session` is the
//! part's `session_id`, `cwd` the session's `directory`, a sub-agent session's parent its
//! `parent_id`; `seq` counts the actions read from the database.

use std::path::Path;

use serde_json::{Map, Value};

use crate::action::{Action, ActionResult, Source};
use crate::ingest::adapters::{
    Format, Framing, Item, LateResult, Position, Problem, RecordParser, Tables,
};

/// The OpenCode database format.
pub struct Opencode;

/// How many rows are kept open (calls not finished) at most.
pub const OPEN_CAP: usize = 256;

/// The queries of OpenCode's database: parts with their session's directory and parent.
static TABLES: Tables = Tables {
    new_rows: "SELECT p.rowid, p.id, p.session_id, p.time_created, p.data, s.directory, \
               s.parent_id FROM part p LEFT JOIN session s ON s.id = p.session_id \
               WHERE p.rowid > ?1 ORDER BY p.rowid LIMIT ?2",
    row: "SELECT p.rowid, p.id, p.session_id, p.time_created, p.data, s.directory, \
          s.parent_id FROM part p LEFT JOIN session s ON s.id = p.session_id WHERE p.id = ?1",
    last: "SELECT max(rowid) FROM part",
};

impl Format for Opencode {
    fn source(&self) -> Source {
        Source::Opencode
    }

    fn framing(&self) -> Framing {
        Framing::Database
    }

    fn parser(&self, _path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(OpencodeParser::new(state.as_ref()))
    }

    /// The database's `-wal`, `-shm` or `-journal` beside it: read through the database.
    fn companion(&self, path: &Path) -> Option<&'static str> {
        crate::ingest::database::is_companion(path)
            .then_some("a SQLite database's write-ahead log, shared memory or journal (read with the database)")
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let named = name.ends_with("opencode.db")
            || (name.starts_with("opencode-") && name.ends_with(".db"));
        named && head.starts_with(super::SQLITE_HEADER)
    }

    fn tables(&self) -> Option<&'static Tables> {
        Some(&TABLES)
    }
}

/// A row kept open: its id and whether its action was emitted already.
#[derive(Debug, Clone, PartialEq)]
struct Open {
    id: String,
    emitted: bool,
}

/// The parser of OpenCode part rows.
pub struct OpencodeParser {
    /// Actions emitted so far (the next one's `seq`).
    seq: u64,
    /// Rows to read again, oldest first.
    open: Vec<Open>,
}

impl OpencodeParser {
    fn new(state: Option<&Value>) -> Self {
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
                        emitted: emitted.as_bool().unwrap_or(false),
                    })
                    .collect()
            })
            .unwrap_or_default();
        OpencodeParser { seq, open }
    }

    fn keep_open(&mut self, id: &str, emitted: bool) {
        match self.open.iter_mut().find(|o| o.id == id) {
            Some(open) => open.emitted |= emitted,
            None => {
                if self.open.len() >= OPEN_CAP {
                    self.open.remove(0);
                }
                self.open.push(Open {
                    id: id.to_owned(),
                    emitted,
                });
            }
        }
    }

    /// Whether the row's action was emitted before; the row is no longer open.
    fn close(&mut self, id: &str) -> bool {
        match self.open.iter().position(|o| o.id == id) {
            Some(at) => self.open.remove(at).emitted,
            None => false,
        }
    }
}

fn text<'v>(row: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
    row.get(key).and_then(Value::as_str)
}

pub(super) fn millis(value: Option<&Value>) -> Option<jiff::Timestamp> {
    value
        .and_then(Value::as_i64)
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
}

/// The result a finished tool state holds.
pub(super) fn result_of(tool: &str, state: &Value, status: &str) -> ActionResult {
    let time = state.get("time");
    let duration_ms = match (
        time.and_then(|t| t.get("start")).and_then(Value::as_u64),
        time.and_then(|t| t.get("end")).and_then(Value::as_u64),
    ) {
        (Some(start), Some(end)) if end >= start => Some(end - start),
        _ => None,
    };
    if status == "error" {
        return ActionResult {
            ok: false,
            exit_code: None,
            output: state
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            duration_ms,
        };
    }
    let exit_code = (tool == "bash")
        .then(|| state.pointer("/metadata/exit").and_then(Value::as_i64))
        .flatten()
        .and_then(|c| i32::try_from(c).ok());
    ActionResult {
        ok: exit_code.is_none_or(|c| c == 0),
        exit_code,
        output: state
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        duration_ms,
    }
}

impl RecordParser for OpencodeParser {
    fn record(
        &mut self,
        record: &[u8],
        _pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let row: Map<String, Value> = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("unreadable row: {e}")))?;
        let id = text(&row, "id").ok_or_else(|| Problem::new("part row without an id"))?;
        let data = text(&row, "data").unwrap_or("");
        let data: Value = serde_json::from_str(data)
            .map_err(|e| Problem::new(format!("part {id}: data is not JSON: {e}")))?;
        if data.get("type").and_then(Value::as_str) != Some("tool") {
            return Ok(());
        }
        let tool = data
            .get("tool")
            .and_then(Value::as_str)
            .ok_or_else(|| Problem::new(format!("tool part {id} without a tool name")))?;
        let state = data.get("state").unwrap_or(&Value::Null);
        let status = state.get("status").and_then(Value::as_str).unwrap_or("");
        let session = text(&row, "session_id")
            .ok_or_else(|| Problem::new(format!("part {id} without a session")))?
            .to_owned();
        let finished = match status {
            "pending" => {
                self.keep_open(id, false);
                return Ok(());
            }
            "running" => false,
            "completed" | "error" => true,
            other => {
                self.close(id);
                return Err(Problem::new(format!(
                    "tool part {id}: unknown status {other:?}"
                )));
            }
        };
        let result = finished.then(|| result_of(tool, state, status));
        if finished && self.close(id) {
            if let Some(result) = result {
                out.push(Item::Result(LateResult {
                    session,
                    call_id: id.to_owned(),
                    result,
                    replaces: false,
                }));
            }
            return Ok(());
        }
        if !finished {
            if self.open.iter().any(|o| o.id == id && o.emitted) {
                return Ok(());
            }
            self.keep_open(id, true);
        }
        let ts = millis(state.pointer("/time/start")).or_else(|| millis(row.get("time_created")));
        out.push(Item::Action(Action {
            session,
            seq: self.seq,
            ts,
            source: Source::Opencode,
            cwd: text(&row, "directory").map(str::to_owned),
            tool: tool.to_owned(),
            input: state
                .get("input")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
            call_id: Some(id.to_owned()),
            parent_session: text(&row, "parent_id").map(str::to_owned),
            result,
        }));
        self.seq += 1;
        Ok(())
    }

    fn state(&self) -> Value {
        let open: Map<String, Value> = self
            .open
            .iter()
            .map(|o| (o.id.clone(), Value::Bool(o.emitted)))
            .collect();
        serde_json::json!({"seq": self.seq, "open": open})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, data: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "rowid": 1, "id": id, "session_id": "ses_1", "time_created": 1781676297865_i64,
            "data": data.to_string(), "directory": "/home/build", "parent_id": null
        }))
        .expect("row")
    }

    fn parse(parser: &mut OpencodeParser, record: &[u8]) -> Result<Vec<Item>, Problem> {
        let mut out = Vec::new();
        parser
            .record(record, Position { offset: 0, line: 1 }, &mut out)
            .map(|()| out)
    }

    fn bash(status: &str) -> Value {
        // The shape of message-v2.ts's ToolState* (sst/opencode, packages/opencode/src/session/
        // message-v2.ts, v1.2): a running state has input and time.start; a completed one adds
        // output, metadata (exit) and time.end.
        let mut state = serde_json::json!({
            "status": status,
            "input": {"command": "cargo test -p foo", "description": "Run tests"},
            "time": {"start": 1781676298179_i64}
        });
        if status == "completed" {
            state["output"] = "error: 1 failed\n".into();
            state["metadata"] = serde_json::json!({"exit": 101, "output": "error: 1 failed\n"});
            state["time"]["end"] = 1781676298190_i64.into();
        }
        serde_json::json!({"type": "tool", "tool": "bash", "callID": "functions.bash:7", "state": state})
    }

    #[test]
    fn a_call_is_emitted_once_and_its_result_joins_it_when_it_completes() {
        let mut parser = OpencodeParser::new(None);
        assert!(
            parse(&mut parser, &row("prt_1", bash("pending")))
                .expect("pending")
                .is_empty()
        );
        let running = parse(&mut parser, &row("prt_1", bash("running"))).expect("running");
        let [Item::Action(action)] = running.as_slice() else {
            panic!("one action: {running:?}")
        };
        assert_eq!(action.input["command"], "cargo test -p foo");
        assert_eq!(action.call_id.as_deref(), Some("prt_1"));
        assert_eq!(action.cwd.as_deref(), Some("/home/build"));
        assert!(action.result.is_none());
        // Read again while still running (a restart in between): nothing new.
        let mut resumed = OpencodeParser::new(Some(&parser.state()));
        assert!(
            parse(&mut resumed, &row("prt_1", bash("running")))
                .expect("again")
                .is_empty()
        );
        let done = parse(&mut resumed, &row("prt_1", bash("completed"))).expect("completed");
        let [Item::Result(late)] = done.as_slice() else {
            panic!("one result: {done:?}")
        };
        assert_eq!(late.call_id, "prt_1");
        assert_eq!(late.result.exit_code, Some(101));
        assert!(!late.result.ok);
        assert_eq!(late.result.output, "error: 1 failed\n");
        assert_eq!(late.result.duration_ms, Some(11));
        assert_eq!(resumed.state()["open"], serde_json::json!({}));
    }

    #[test]
    fn a_call_first_seen_finished_carries_its_result() {
        let mut parser = OpencodeParser::new(None);
        let items = parse(&mut parser, &row("prt_2", bash("completed"))).expect("completed");
        let [Item::Action(action)] = items.as_slice() else {
            panic!("one action: {items:?}")
        };
        assert_eq!(action.result.as_ref().and_then(|r| r.exit_code), Some(101));
        assert_eq!(action.seq, 0);
    }

    #[test]
    fn untrusted_rows_never_panic() {
        let mut parser = OpencodeParser::new(None);
        let bad: &[&[u8]] = &[
            b"",
            b"garbage",
            b"{}",
            br#"{"id": "p", "data": "not json"}"#,
            br#"{"id": "p", "data": "{\"type\": \"tool\"}"}"#,
            br#"{"id": "p", "session_id": "s", "data": "{\"type\": \"tool\", \"tool\": \"bash\", \"state\": {\"status\": \"weird\"}}"}"#,
            br#"{"id": "p", "session_id": "s", "data": "{\"type\": \"tool\", \"tool\": \"bash\", \"state\": 3}"}"#,
        ];
        for record in bad {
            let _ = parse(&mut parser, record);
        }
        let unknown = row("prt_3", serde_json::json!({"type": "new-kind-of-part"}));
        assert!(
            parse(&mut parser, &unknown)
                .expect("unknown part type")
                .is_empty()
        );
        let weird = row(
            "prt_4",
            serde_json::json!({"type": "tool", "tool": "bash", "state": {"status": "weird"}}),
        );
        assert!(
            parse(&mut parser, &weird).is_err(),
            "an unknown status is a problem"
        );
    }

    #[test]
    fn the_open_set_is_bounded() {
        let mut parser = OpencodeParser::new(None);
        for n in 0..OPEN_CAP + 10 {
            let _ = parse(&mut parser, &row(&format!("prt_{n}"), bash("running")));
        }
        let state = parser.state();
        let open = state["open"].as_object().expect("open");
        assert_eq!(open.len(), OPEN_CAP);
        assert!(!open.contains_key("prt_0"), "the oldest went first");
    }
}
