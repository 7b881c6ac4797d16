//! OpenCode before v1.2: one JSON file per message part under
//! `~/.local/share/opencode/storage/part/<messageID>/<partID>.json` (sessions and messages in
//! `storage/session` and `storage/message`), written whole and rewritten as the part changes.
//!
//! A part file is the `MessageV2.Part` of the opencode repository's `message-v2.ts` with its ids:
//! `{"id", "sessionID", "messageID", "type": "tool", "tool", "callID", "state": {…}}`, the same
//! `state` as in the database ([`super::opencode`]). Whole-file framing: a file is read again
//! when it changes, so a tool part is an action from when it is `running` (its `call_id` the
//! part's `id`, as in the database, so a store holding both stores it once), and a finished
//! part also yields its result as an [`Item::Result`], which joins the action whether it was
//! stored just now or when the part was still running. A part file names no directory: its
//! actions have no `cwd`.

use std::path::Path;

use serde_json::Value;

use super::opencode::{millis, result_of};
use crate::action::{Action, Source};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// The format of OpenCode's JSON part files.
pub struct OpencodeJson;

impl Format for OpencodeJson {
    fn source(&self) -> Source {
        Source::Opencode
    }

    fn framing(&self) -> Framing {
        Framing::WholeFile
    }

    fn parser(&self, _path: &Path, _state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(PartFile)
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let in_parts = path
            .parent()
            .and_then(Path::parent)
            .is_some_and(|dir| dir.ends_with("storage/part"));
        let text = String::from_utf8_lossy(head);
        in_parts
            && path.extension().is_some_and(|e| e == "json")
            && text.contains("\"messageID\"")
            && text.contains("\"sessionID\"")
    }
}

/// The parser of one part file.
struct PartFile;

impl RecordParser for PartFile {
    fn record(
        &mut self,
        record: &[u8],
        _pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let part: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        if part.get("type").and_then(Value::as_str) != Some("tool") {
            return Ok(());
        }
        let field = |key: &str| part.get(key).and_then(Value::as_str);
        let (Some(id), Some(session), Some(tool)) =
            (field("id"), field("sessionID"), field("tool"))
        else {
            return Err(Problem::new("tool part without id, sessionID or tool"));
        };
        let state = part.get("state").unwrap_or(&Value::Null);
        let status = state.get("status").and_then(Value::as_str).unwrap_or("");
        let finished = match status {
            "pending" => return Ok(()),
            "running" => false,
            "completed" | "error" => true,
            other => {
                return Err(Problem::new(format!(
                    "tool part {id}: unknown status {other:?}"
                )));
            }
        };
        out.push(Item::Action(Action {
            session: session.to_owned(),
            seq: 0,
            ts: millis(state.pointer("/time/start")),
            source: Source::Opencode,
            cwd: None,
            tool: tool.to_owned(),
            input: state
                .get("input")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default())),
            call_id: Some(id.to_owned()),
            parent_session: None,
            result: None,
        }));
        if finished {
            out.push(Item::Result(LateResult {
                session: session.to_owned(),
                call_id: id.to_owned(),
                result: result_of(tool, state, status),
                replaces: false,
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_file_is_a_call_and_its_result() {
        // The shape of a part file as opencode (before v1.2) wrote it: MessageV2.ToolPart with
        // its ids (sst/opencode packages/opencode/src/session/message-v2.ts).
        let part = serde_json::json!({"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1",
            "type": "tool", "tool": "bash", "callID": "toolu_1",
            "state": {"status": "completed", "input": {"command": "npm test"},
                "output": "1 failing\n", "metadata": {"exit": 1},
                "time": {"start": 1750000000000_i64, "end": 1750000001500_i64}}});
        let mut out = Vec::new();
        PartFile
            .record(
                part.to_string().as_bytes(),
                Position { offset: 0, line: 1 },
                &mut out,
            )
            .expect("part");
        let [Item::Action(action), Item::Result(late)] = out.as_slice() else {
            panic!("an action and its result: {out:?}")
        };
        assert_eq!(action.input["command"], "npm test");
        assert_eq!(action.call_id.as_deref(), Some("prt_1"));
        assert_eq!(late.result.exit_code, Some(1));
        assert_eq!(late.result.duration_ms, Some(1500));
        let path = Path::new("/h/.local/share/opencode/storage/part/msg_1/prt_1.json");
        assert!(OpencodeJson.sniff(path, part.to_string().as_bytes()));
        assert!(!OpencodeJson.sniff(Path::new("/tmp/prt_1.json"), part.to_string().as_bytes()));
    }

    #[test]
    fn untrusted_part_files_never_panic() {
        for bad in [
            &b""[..],
            b"{",
            b"[]",
            b"{\"type\": \"tool\"}",
            b"{\"type\": \"text\", \"text\": \"hi\"}",
        ] {
            let _ = PartFile.record(bad, Position { offset: 0, line: 1 }, &mut Vec::new());
        }
    }
}
