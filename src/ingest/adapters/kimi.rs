//! Kimi CLI wire logs: `~/.kimi/sessions/<md5 of the work dir>/<session uuid>/wire.jsonl`
//! (`$KIMI_SHARE_DIR/sessions/…` when Kimi's share directory is moved; MoonshotAI/kimi-cli
//! `src/kimi_cli/share.py`).
//!
//! One JSON object per line: a first `{"type": "metadata", "protocol_version": "1.3"}`, then
//! `{"timestamp": <Unix seconds, float>, "message": {"type": T, "payload": {…}}}` for every wire
//! event (`src/kimi_cli/wire/types.py`). The ones read here:
//!
//! * `ToolCall` `{"id", "function": {"name", "arguments"}}`: a call. Its `arguments` (a JSON
//!   string) are streamed: the record holds what had arrived, and each following `ToolCallPart`
//!   `{"arguments_part"}` appends to the *latest* call (kosong's merge), even across records of
//!   calls already running (their `ToolResult`s, `ApprovalRequest`s) in between. The call is
//!   complete, and becomes an action, at its own `ToolResult` or `ApprovalRequest`, at the next
//!   `ToolCall`, or at an event that ends the model's message (`StatusUpdate`, `ContentPart`,
//!   `StepBegin`, `StepInterrupted`, `TurnBegin`, `TurnEnd`, `SteerInput`, `CompactionBegin`).
//!   The call being streamed is kept in [`RecordParser::state`], so a restart between its
//!   records loses nothing.
//! * `ToolResult` `{"tool_call_id", "return_value": {"is_error", "output", "message"}}`: the
//!   result. `Shell` says `Command executed successfully.` (exit code 0) or `Command failed
//!   with exit code: N.`; the exit code comes from that message. The output is `output` (text
//!   parts joined when it is a list); an error with no output (`Command killed by timeout
//!   (60s)`) gives its message as the output.
//!
//! The action's tool is the tool's name as Kimi names it (`Shell`, `ReadFile`, `WriteFile`,
//! `StrReplaceFile`, `Glob`, …) and its input the parsed arguments (`{"command": …}` for
//! `Shell`), or `{"arguments": <text>}` when they are not a JSON object. The wire log records
//! no working directory (the session folder is a hash of it), so `cwd` is unknown.
//!
//! Every other record (`TurnBegin`, `ContentPart`, `StatusUpdate`, approvals, sub-agent events,
//! unknown types) is bookkeeping and skipped quietly. Session: the session folder's name (the
//! last UUID in the file's path), else the file stem. `seq` is the `ToolCall` record's offset
//! `<< 8`; `ts` its timestamp.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::action::{Action, ActionResult, Source, exit_code_from_text};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// The Kimi CLI wire-log format.
pub struct KimiCli;

impl Format for KimiCli {
    fn source(&self) -> Source {
        Source::KimiCli
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        let open = state
            .and_then(|s| s.get("open").cloned())
            .and_then(|open| serde_json::from_value(open).ok());
        Box::new(KimiParser {
            session: session_of(path),
            open,
        })
    }

    /// Kimi CLI keeps a session's model context (`context.jsonl`, and `context_<n>.jsonl` as it
    /// rotates it) and its `state.json` beside `wire.jsonl` in the session's folder: the wire log
    /// holds every call, these none of their own.
    fn companion(&self, path: &Path) -> Option<&'static str> {
        let name = path.file_name()?.to_str()?;
        let folder = path.parent()?.file_name()?.to_str()?;
        if folder.len() != 36 || !is_uuid(folder.as_bytes()) {
            return None;
        }
        let context = name.starts_with("context") && name.ends_with(".jsonl");
        match name {
            "state.json" => Some("a Kimi CLI session's state"),
            _ if context => Some("a Kimi CLI session's model context (its wire.jsonl is the log)"),
            _ => None,
        }
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(first)
            && obj.get("type").and_then(Value::as_str) == Some("metadata")
        {
            return obj.contains_key("protocol_version");
        }
        // A wire log written before the metadata line existed starts with its first event,
        // which may be longer than the head (a long prompt): its start is enough.
        let text = String::from_utf8_lossy(&first[..first.len().min(256)]);
        path.file_name().is_some_and(|n| n == "wire.jsonl")
            && text.trim_start().starts_with('{')
            && text.contains("\"timestamp\"")
            && text.contains("\"message\"")
    }
}

/// A call whose arguments are still being streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OpenCall {
    id: String,
    name: String,
    arguments: String,
    /// The `ToolCall` record's timestamp, in Unix nanoseconds.
    ts_ns: Option<i128>,
    /// The `ToolCall` record's offset.
    offset: u64,
}

struct KimiParser {
    session: String,
    open: Option<OpenCall>,
}

impl RecordParser for KimiParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        let value: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(Problem::new("record is not a JSON object"));
        };
        let Some(message) = obj.get("message") else {
            // The metadata line, or a record of a later protocol: nothing to act on.
            return Ok(());
        };
        let Some(kind) = message.get("type").and_then(Value::as_str) else {
            return Err(Problem::new("wire message without a string \"type\""));
        };
        let empty = Map::new();
        let payload = match message.get("payload") {
            Some(Value::Object(payload)) => payload,
            None | Some(Value::Null) => &empty,
            Some(_) => return Err(Problem::new(format!("{kind} payload is not an object"))),
        };
        let ts_ns = obj.get("timestamp").and_then(Value::as_f64).and_then(|s| {
            let ns = s * 1e9;
            (ns.is_finite() && ns.abs() < 1e20).then_some(ns as i128)
        });
        match kind {
            "ToolCall" => {
                let call = tool_call(payload, ts_ns, pos)?;
                self.close(out);
                self.open = Some(call);
            }
            "ToolCallPart" => {
                let part = match payload.get("arguments_part") {
                    Some(Value::String(part)) => part.as_str(),
                    None | Some(Value::Null) => "",
                    Some(_) => {
                        return Err(Problem::new("ToolCallPart arguments_part is not a string"));
                    }
                };
                match &mut self.open {
                    Some(open) => open.arguments.push_str(part),
                    None => {
                        return Err(Problem::new(
                            "ToolCallPart with no tool call being streamed before it",
                        ));
                    }
                }
            }
            "ToolResult" => {
                let Some(call_id) = payload.get("tool_call_id").and_then(Value::as_str) else {
                    return Err(Problem::new("ToolResult without a string \"tool_call_id\""));
                };
                let result = tool_result(payload)?;
                match self.open.take() {
                    Some(open) if open.id == call_id => {
                        let mut action = self.action(open);
                        action.result = Some(result);
                        out.push(Item::Action(action));
                    }
                    other => {
                        self.open = other;
                        out.push(Item::Result(LateResult {
                            session: self.session.clone(),
                            call_id: call_id.to_owned(),
                            result,
                            replaces: false,
                        }));
                    }
                }
            }
            "ApprovalRequest"
                if self.open.as_ref().is_some_and(|open| {
                    payload.get("tool_call_id").and_then(Value::as_str) == Some(open.id.as_str())
                }) =>
            {
                self.close(out);
            }
            "StatusUpdate" | "ContentPart" | "StepBegin" | "StepInterrupted" | "TurnBegin"
            | "TurnEnd" | "SteerInput" | "CompactionBegin" => self.close(out),
            _ => {}
        }
        Ok(())
    }

    fn state(&self) -> Value {
        match &self.open {
            Some(open) => serde_json::json!({ "open": open }),
            None => Value::Null,
        }
    }
}

impl KimiParser {
    /// Ends the call being streamed: its arguments are complete.
    fn close(&mut self, out: &mut Vec<Item>) {
        if let Some(open) = self.open.take() {
            let action = self.action(open);
            out.push(Item::Action(action));
        }
    }

    fn action(&self, call: OpenCall) -> Action {
        let input = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(Value::Object(args)) => Value::Object(args),
            _ => serde_json::json!({ "arguments": call.arguments }),
        };
        Action {
            session: self.session.clone(),
            seq: call.offset << 8,
            ts: call
                .ts_ns
                .and_then(|ns| jiff::Timestamp::from_nanosecond(ns).ok()),
            source: Source::KimiCli,
            cwd: None,
            tool: call.name,
            input,
            call_id: Some(call.id),
            parent_session: None,
            result: None,
        }
    }
}

fn tool_call(
    payload: &Map<String, Value>,
    ts_ns: Option<i128>,
    pos: Position,
) -> Result<OpenCall, Problem> {
    let id = match payload.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err(Problem::new("ToolCall without a string \"id\"")),
    };
    let function = payload.get("function");
    let name = match function.and_then(|f| f.get("name")) {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(Problem::new("ToolCall without a string function \"name\"")),
    };
    let arguments = match function.and_then(|f| f.get("arguments")) {
        Some(Value::String(arguments)) => arguments.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => {
            return Err(Problem::new(
                "ToolCall function \"arguments\" is not a string",
            ));
        }
    };
    Ok(OpenCall {
        id,
        name,
        arguments,
        ts_ns,
        offset: pos.offset,
    })
}

fn tool_result(payload: &Map<String, Value>) -> Result<ActionResult, Problem> {
    // `return_value` as protocol 1.3 writes it; a `result` object is read alike (no real log
    // seen here names it so: a guard, not a known shape).
    let value = match payload
        .get("return_value")
        .or_else(|| payload.get("result"))
    {
        Some(Value::Object(value)) => value,
        _ => return Err(Problem::new("ToolResult without a \"return_value\" object")),
    };
    let is_error = match value.get("is_error") {
        Some(Value::Bool(b)) => *b,
        None | Some(Value::Null) => false,
        Some(_) => return Err(Problem::new("ToolResult \"is_error\" is not a boolean")),
    };
    let message = value.get("message").and_then(Value::as_str).unwrap_or("");
    let mut output = match value.get("output") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if output.is_empty() && is_error {
        output = message.to_owned();
    }
    let exit_code = if message.starts_with("Command executed successfully") {
        Some(0)
    } else if message.starts_with("Command failed with exit code") {
        exit_code_from_text(message)
    } else {
        None
    };
    Ok(ActionResult {
        ok: !is_error && exit_code.is_none_or(|c| c == 0),
        exit_code,
        output,
        duration_ms: None,
    })
}

/// The session folder's name: the last UUID in the path (`…/<uuid>/wire.jsonl`, or a copy named
/// after it), else the file stem.
fn session_of(path: &Path) -> String {
    let text = path.to_string_lossy();
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(35))
        .rev()
        .find(|&i| is_uuid(&bytes[i..i + 36]))
        .and_then(|i| text.get(i..i + 36))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
}

fn is_uuid(bytes: &[u8]) -> bool {
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;
    use crate::ingest::adapters::shell_common::testkit::{self, ZshRule};

    const CORPUS_FILE: &str = "formats-2026/kimi-cli/youngstunners88__ihhashi__3951a8af-d393-44a8-a19f-057bbdf8cb1c__wire.jsonl";
    const SESSION: &str = "3951a8af-d393-44a8-a19f-057bbdf8cb1c";

    fn run(bytes: &[u8]) -> testkit::Run {
        let path = PathBuf::from(format!("/h/.kimi/sessions/0a1b/{SESSION}/wire.jsonl"));
        testkit::run(&KimiCli, ZshRule::OddBackslashes, &path, bytes)
    }

    #[test]
    fn the_real_session_gives_its_42_shell_calls_with_their_results() {
        let Some((path, bytes)) = testkit::corpus(CORPUS_FILE) else {
            return;
        };
        let run = testkit::run(&KimiCli, ZshRule::OddBackslashes, &path, &bytes);
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        let shell: Vec<&Action> = run.actions.iter().filter(|a| a.tool == "Shell").collect();
        // PROVENANCE.md: 42 shell calls; 77 tool calls in all.
        assert_eq!(shell.len(), 42);
        assert_eq!(run.actions.len(), 77);
        assert!(run.actions.iter().all(|a| a.session == SESSION));
        assert!(
            run.actions.iter().all(|a| a.result.is_some()),
            "every call has a result"
        );
        // Every call's streamed arguments were put together whole.
        assert!(
            run.actions
                .iter()
                .all(|a| a.input.get("arguments").is_none()),
            "{:?}",
            run.actions
                .iter()
                .find(|a| a.input.get("arguments").is_some())
        );
        // The first call is streamed whole in its ToolCall record.
        let first = shell[0];
        assert_eq!(
            first.input["command"],
            "which railway && railway --version 2>/dev/null || echo \"Railway CLI not installed\""
        );
        assert_eq!(
            first.call_id.as_deref(),
            Some("tool_zdChf5UzSznlO3gn8L7pEzPy")
        );
        assert_eq!(
            first.ts.map(|t| t.as_millisecond()),
            Some(1_772_668_013_641)
        );
        // A call whose ToolCall record has empty arguments, completed by a ToolCallPart after
        // another call's ToolResult.
        let streamed = shell
            .iter()
            .find(|a| a.call_id.as_deref() == Some("tool_LG3Y5wFrDleoQ9RDyAZPQxIA"))
            .expect("streamed call");
        assert_eq!(streamed.input, json!({"command": "ls -la backend/"}));
        let result = streamed.result.as_ref().expect("result");
        assert_eq!((result.ok, result.exit_code), (true, Some(0)));
        assert!(result.output.starts_with("total 80\n"), "{}", result.output);
        // Failures: exit codes from the message, a timeout without one.
        let codes: Vec<Option<i32>> = shell
            .iter()
            .filter_map(|a| a.result.as_ref())
            .filter(|r| !r.ok)
            .map(|r| r.exit_code)
            .collect();
        assert_eq!(codes.len(), 8, "{codes:?}");
        assert_eq!(codes.iter().filter(|c| **c == Some(1)).count(), 5);
        assert!(codes.contains(&Some(128)) && codes.contains(&Some(127)));
        let timeout = shell
            .iter()
            .find(|a| a.call_id.as_deref() == Some("tool_Ai9KRsa5za9EuqJyMTR2gjPw"))
            .and_then(|a| a.result.as_ref())
            .expect("timed-out call");
        assert_eq!(
            (timeout.ok, timeout.exit_code, timeout.output.as_str()),
            (false, None, "Command killed by timeout (60s)")
        );
        // Other tools, streamed in parts too.
        let glob = run
            .actions
            .iter()
            .find(|a| a.call_id.as_deref() == Some("tool_euFgESRBWgYlEvZCQUGx8BOw"))
            .expect("glob");
        assert_eq!(
            (glob.tool.as_str(), &glob.input),
            ("Glob", &json!({"pattern": "backend/.env*"}))
        );
        // Log order.
        assert!(run.actions.windows(2).all(|w| w[0].seq < w[1].seq));
        // Resuming after any line gives the same actions.
        let records = testkit::cut(Framing::Lines, ZshRule::OddBackslashes, &bytes);
        for at in 0..=records.len() {
            let first = testkit::feed(&KimiCli, &path, None, &records[..at]);
            let second = testkit::feed(&KimiCli, &path, Some(first.state), &records[at..]);
            let mut actions = first.actions;
            actions.extend(second.actions);
            assert_eq!(actions.len(), 77, "split after line {at}");
            let commands =
                |list: &[Action]| -> Vec<Value> { list.iter().map(|a| a.input.clone()).collect() };
            assert_eq!(
                commands(&actions),
                commands(&run.actions),
                "split after line {at}"
            );
        }
    }

    #[test]
    fn only_the_wire_log_is_sniffed() {
        let Some((path, bytes)) = testkit::corpus(CORPUS_FILE) else {
            return;
        };
        assert!(KimiCli.sniff(&path, &bytes[..bytes.len().min(65536)]));
        for other in ["context.jsonl", "state.json"] {
            let path = PathBuf::from(path.to_string_lossy().replace("wire.jsonl", other));
            let head = testkit::head(&path);
            assert!(!KimiCli.sniff(&path, &head), "{other}");
            assert!(
                crate::ingest::formats::sniff(&path, &head).is_none(),
                "{other}"
            );
        }
        assert_eq!(
            crate::ingest::formats::sniff(&path, &testkit::head(&path)).map(|(n, _)| n),
            Some("kimi-cli")
        );
    }

    #[test]
    fn a_call_still_streaming_survives_a_restart() {
        let lines = [
            r#"{"type": "metadata", "protocol_version": "1.3"}"#,
            r#"{"timestamp": 1.5, "message": {"type": "ToolCall", "payload": {"type": "function", "id": "t1", "function": {"name": "Shell", "arguments": "{\"comm"}}}}"#,
            r#"{"timestamp": 1.6, "message": {"type": "ToolResult", "payload": {"tool_call_id": "t0", "return_value": {"is_error": false, "output": "x", "message": ""}}}}"#,
            r#"{"timestamp": 1.7, "message": {"type": "ToolCallPart", "payload": {"arguments_part": "and\": \"cargo  test\"}"}}}"#,
            r#"{"timestamp": 1.8, "message": {"type": "StatusUpdate", "payload": {}}}"#,
            r#"{"timestamp": 2.0, "message": {"type": "ToolResult", "payload": {"tool_call_id": "t1", "return_value": {"is_error": true, "output": "boom\n", "message": "Command failed with exit code: 101."}}}}"#,
        ];
        let text = lines.join("\n") + "\n";
        let whole = run(text.as_bytes());
        assert_eq!(whole.actions.len(), 1);
        let action = &whole.actions[0];
        assert_eq!(action.input, json!({"command": "cargo  test"}));
        assert_eq!(action.ts.map(|t| t.as_millisecond()), Some(1500));
        let result = action.result.as_ref().expect("result");
        assert_eq!(
            (result.ok, result.exit_code, result.output.as_str()),
            (false, Some(101), "boom\n")
        );
        let path = PathBuf::from(format!("/h/.kimi/sessions/0a1b/{SESSION}/wire.jsonl"));
        let records = testkit::cut(Framing::Lines, ZshRule::OddBackslashes, text.as_bytes());
        for at in 0..=records.len() {
            let first = testkit::feed(&KimiCli, &path, None, &records[..at]);
            let second = testkit::feed(&KimiCli, &path, Some(first.state), &records[at..]);
            let mut actions = first.actions;
            actions.extend(second.actions);
            // The result may arrive in the second part, joined by the store: compare the calls.
            assert_eq!(actions.len(), 1, "split after line {at}");
            assert_eq!(actions[0].input, action.input, "split after line {at}");
            assert_eq!(actions[0].seq, action.seq, "split after line {at}");
        }
    }

    #[test]
    fn bad_records_are_problems_and_unknown_ones_are_skipped() {
        let lines = [
            r#"{"timestamp": 1.0, "message": {"type": "ToolCall", "payload": {"id": "t1", "function": {"name": "Shell", "arguments": "{\"command\": \"ls\"}"}}}}"#,
            r#"{"timestamp": 1.1, "message": {"type": "ToolCall", "payload": {"id": "t2", "functi"#,
            r#"{"timestamp": 1.2, "message": {"type": "SomethingNew", "payload": {"x": 1}}}"#,
            "\u{1}garbage\u{2}",
            r#"{"timestamp": 1.3, "message": {"type": "ToolCall", "payload": {"id": 5, "function": {"name": "Shell"}}}}"#,
            r#"{"timestamp": 1.4, "message": {"type": "ToolResult", "payload": {"tool_call_id": "t1", "return_value": {"is_error": false, "output": "a\n", "message": "Command executed successfully."}}}}"#,
            r#"{"timestamp": 1.5, "message": {"type": "ToolCallPart", "payload": {"arguments_part": "x"}}}"#,
        ];
        let run = run((lines.join("\n") + "\n").as_bytes());
        assert_eq!(run.actions.len(), 1);
        assert_eq!(run.actions[0].input, json!({"command": "ls"}));
        let result = run.actions[0].result.as_ref().expect("result");
        assert_eq!((result.ok, result.exit_code), (true, Some(0)));
        let lines: Vec<u64> = run.problems.iter().map(|(p, _)| p.line).collect();
        assert_eq!(lines, [2, 4, 5, 7], "{:?}", run.problems);
    }

    #[test]
    fn untrusted_records_never_panic() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let records: Vec<String> = vec![
            String::new(),
            "null".into(),
            "[1,2]".into(),
            deep,
            r#"{"message": 5}"#.into(),
            r#"{"message": {"type": 5}}"#.into(),
            r#"{"message": {"type": "ToolCall", "payload": 7}}"#.into(),
            r#"{"timestamp": 1e308, "message": {"type": "ToolCall", "payload": {"id": "a", "function": {"name": "Shell", "arguments": []}}}}"#.into(),
            r#"{"timestamp": -1e308, "message": {"type": "ToolCall", "payload": {"id": "a", "function": {"name": "Shell", "arguments": "{"}}}}"#.into(),
            r#"{"message": {"type": "ToolCallPart", "payload": {"arguments_part": 5}}}"#.into(),
            r#"{"message": {"type": "ToolResult", "payload": {"tool_call_id": "a", "return_value": {"is_error": "yes"}}}}"#.into(),
            r#"{"message": {"type": "ToolResult", "payload": {"tool_call_id": "a", "return_value": {"output": [1, {"text": 2}], "message": "Command failed with exit code: 99999999999"}}}}"#.into(),
            r#"{"message": {"type": "ToolResult", "payload": {"tool_call_id": 1}}}"#.into(),
            r#"{"message": {"type": "ApprovalRequest", "payload": {"tool_call_id": []}}}"#.into(),
        ];
        let mut parser = KimiCli.parser(Path::new("/x/wire.jsonl"), Some(json!({"open": 5})));
        for (i, record) in records.iter().enumerate() {
            let pos = Position {
                offset: i as u64,
                line: i as u64 + 1,
            };
            let mut out = Vec::new();
            let _ = parser.record(record.as_bytes(), pos, &mut out);
        }
        let _ = parser.state();
    }

    #[test]
    fn sessions_come_from_the_session_folder() {
        assert_eq!(
            session_of(Path::new(&format!(
                "/h/.kimi/sessions/0a1b/{SESSION}/wire.jsonl"
            ))),
            SESSION
        );
        assert_eq!(session_of(Path::new("/tmp/wire.jsonl")), "wire");
    }

    #[test]
    fn a_sessions_context_and_state_are_companions_not_logs() {
        let session = "/h/.kimi/sessions/697a0ebec3147bb421a9dd6a0531906f/3951a8af-d393-44a8-a19f-057bbdf8cb1c";
        for name in ["context.jsonl", "context_1.jsonl", "state.json"] {
            let path = Path::new(session).join(name);
            assert!(KimiCli.companion(&path).is_some(), "{name}");
        }
        assert!(
            KimiCli
                .companion(&Path::new(session).join("wire.jsonl"))
                .is_none()
        );
        assert!(
            KimiCli
                .companion(Path::new("/srv/app/state.json"))
                .is_none()
        );
    }

    #[test]
    fn an_older_wire_log_without_metadata_is_sniffed_by_its_name() {
        let path = Path::new("/h/.kimi/sessions/a/b/wire.jsonl");
        let long = format!(
            "{{\"timestamp\": 1.0, \"message\": {{\"type\": \"TurnBegin\", \"payload\": {{\"user_input\": \"{}",
            "x".repeat(70_000)
        );
        assert!(KimiCli.sniff(path, &long.as_bytes()[..65536]));
        assert!(!KimiCli.sniff(Path::new("/h/x/other.jsonl"), &long.as_bytes()[..65536]));
        assert!(!KimiCli.sniff(path, b"{\"role\": \"_checkpoint\", \"id\": 0}\n"));
    }
}
