//! Cline task histories:
//! `<editor global storage>/saoudrizwan.claude-dev/tasks/<task id>/api_conversation_history.json`
//! (the Cline CLI's `~/.cline/data/tasks/<task id>/…` likewise).
//!
//! The file is one JSON array of Anthropic-style messages, `{"role", "content", "ts"?}`, that
//! Cline rewrites whole as the task proceeds (WholeFile framing: read when complete, re-read
//! when changed, the same calls giving the same actions). `content` is a string or a list of
//! blocks. Calls come in two shapes:
//!
//! * native tool calling (Cline 3.3x on): an assistant block `{"type": "tool_use", "id", "name",
//!   "input"}`, e.g. `execute_command` with `{"command", "requires_approval"}`;
//! * the older XML in the assistant's text (cline/cline
//!   `src/core/assistant-message/parse-assistant-message.ts`): `<execute_command>
//!   <command>…</command><requires_approval>…</requires_approval></execute_command>`, each
//!   parameter's text trimmed as Cline trims it before running it.
//!
//! Results are text blocks of the next user message, one per call in order:
//! `[execute_command for '<command>'] Result:\n<body>` (`[<tool>] Result:` for tools without a
//! subject), or a `tool_result` block naming the call's id. For `execute_command` the body is
//! `Command executed successfully (exit code N).` / `Command failed with exit code N.` (older:
//! `Command executed.`) followed by `Output:\n<output>`; `Command timed out after N seconds.
//! Running in background.` and `Command is still running in the user's terminal.` leave the
//! result unknown (the process went on); `The user denied this operation.` is a failure. The
//! output is the text after `Output:`, else the body. Other tools' bodies are their output,
//! failed when the user denied them or Cline reported an error.
//!
//! A call with an id is emitted without its result, followed by the result as an
//! [`Item::Result`]: the store keeps the first copy of a re-read call, so a result Cline wrote
//! after the call was first read joins it that way. (An XML call has no id: its result is
//! carried on the action, so one first read before its result was written stays unknown.)
//!
//! Session: the task folder's name, else (a copy outside a task folder) the file stem. `ts` is
//! the message's `ts` (Unix ms) when Cline wrote one. The cwd is Cline's `# Current Working
//! Directory (<dir>)` from the environment details of the latest user message before the call.
//! `seq` is `message index << 8 | call index within the message`.

use std::path::Path;

use serde_json::{Map, Value};

use crate::action::{Action, ActionResult, Source};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// The Cline task history format.
pub struct Cline;

/// The file Cline keeps a task's conversation in.
const HISTORY_FILE: &str = "api_conversation_history.json";

/// Tool names Cline's XML form knows (its `toolUseNames`), for finding calls in text.
const XML_TOOLS: &[&str] = &[
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "plan_mode_respond",
    "attempt_completion",
    "new_task",
    "web_fetch",
];

impl Format for Cline {
    fn source(&self) -> Source {
        Source::Cline
    }

    fn framing(&self) -> Framing {
        Framing::WholeFile
    }

    fn parser(&self, path: &Path, _state: Option<Value>) -> Box<dyn RecordParser> {
        let named = path.file_name().is_some_and(|n| n == HISTORY_FILE);
        let folder = path
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned());
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Box::new(ClineParser {
            session: match folder {
                Some(folder) if named => folder,
                _ => stem,
            },
        })
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let name = path.file_name().map(|n| n.to_string_lossy());
        if name.as_deref().is_some_and(|n| n.ends_with(HISTORY_FILE)) {
            return true;
        }
        // The UI's log of the same task is not the conversation.
        if name.is_some_and(|n| n == "ui_messages.json") {
            return false;
        }
        let text = String::from_utf8_lossy(head);
        let Some(rest) = text.trim_start().strip_prefix('[') else {
            return false;
        };
        let rest = rest.trim_start();
        rest.starts_with('{')
            && rest.contains("\"role\"")
            && (rest.contains("<task>") || rest.contains("<environment_details>"))
    }
}

struct ClineParser {
    session: String,
}

/// A call waiting for its result in the next user message.
struct Call {
    action: Action,
    /// Index of the action in the output.
    at: usize,
}

impl RecordParser for ClineParser {
    fn record(
        &mut self,
        record: &[u8],
        _pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let value: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Value::Array(messages) = value else {
            return Err(Problem::new("the history is not a JSON array of messages"));
        };
        let mut actions: Vec<Action> = Vec::new();
        let mut waiting: Vec<Call> = Vec::new();
        let mut cwd: Option<String> = None;
        for (index, message) in messages.iter().enumerate() {
            let Value::Object(message) = message else {
                continue;
            };
            let ts = message
                .get("ts")
                .and_then(Value::as_i64)
                .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
            match message.get("role").and_then(Value::as_str) {
                Some("assistant") => {
                    // Calls left without a result in the message after them stay unknown.
                    waiting.clear();
                    for (n, (tool, input, call_id)) in calls(message).into_iter().enumerate() {
                        let action = Action {
                            session: self.session.clone(),
                            seq: ((index as u64) << 8) | n.min(255) as u64,
                            ts,
                            source: Source::Cline,
                            cwd: cwd.clone(),
                            tool,
                            input: Value::Object(input),
                            call_id,
                            parent_session: None,
                            result: None,
                        };
                        waiting.push(Call {
                            action: action.clone(),
                            at: actions.len(),
                        });
                        actions.push(action);
                    }
                }
                Some("user") => {
                    if let Some(dir) = working_directory(message.get("content")) {
                        cwd = Some(dir);
                    }
                    for (target, result) in results(message.get("content"), &mut waiting) {
                        if let Some(action) = actions.get_mut(target) {
                            action.result = result;
                        }
                    }
                    waiting.clear();
                }
                _ => {}
            }
        }
        // A call with an id gets its result as a late result too: Cline rewrites the file as
        // the task goes on, and a call stored before its result was written (the store keeps
        // the first copy of an action) still gets it when the file is read again.
        for mut action in actions {
            let late = match (&action.call_id, action.result.take()) {
                (Some(call_id), Some(result)) => Some(LateResult {
                    session: action.session.clone(),
                    call_id: call_id.clone(),
                    result,
                    replaces: false,
                }),
                (_, result) => {
                    action.result = result;
                    None
                }
            };
            out.push(Item::Action(action));
            out.extend(late.map(Item::Result));
        }
        Ok(())
    }
}

/// The calls of an assistant message, in order: (tool, input, call id).
fn calls(message: &Map<String, Value>) -> Vec<(String, Map<String, Value>, Option<String>)> {
    let mut found = Vec::new();
    let blocks: Vec<&Value> = match message.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        Some(text @ Value::String(_)) => vec![text],
        _ => return found,
    };
    for block in blocks {
        let text = match block {
            Value::String(text) => Some(text.as_str()),
            Value::Object(b) if b.get("type").and_then(Value::as_str) == Some("text") => {
                b.get("text").and_then(Value::as_str)
            }
            _ => None,
        };
        if let Some(text) = text {
            found.extend(xml_calls(text).into_iter().map(|(t, i)| (t, i, None)));
            continue;
        }
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let Some(name) = block
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        let input = match block.get("input") {
            Some(Value::Object(input)) => input.clone(),
            Some(other) if !other.is_null() => {
                let mut input = Map::new();
                input.insert("input".to_owned(), other.clone());
                input
            }
            _ => Map::new(),
        };
        let id = block
            .get("id")
            .or_else(|| block.get("call_id"))
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        found.push((name.to_owned(), input, id));
    }
    found
}

/// Calls written as XML in the assistant's text: `<tool><param>value</param>…</tool>`. A call
/// cut off by the end of the text (the message was interrupted) was never run.
fn xml_calls(text: &str) -> Vec<(String, Map<String, Value>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some((at, tool)) = XML_TOOLS
        .iter()
        .filter_map(|t| rest.find(&format!("<{t}>")).map(|at| (at, *t)))
        .min_by_key(|(at, _)| *at)
    {
        let body_start = at + tool.len() + 2;
        let close = format!("</{tool}>");
        let Some(len) = rest[body_start..].find(&close) else {
            break;
        };
        let body = &rest[body_start..body_start + len];
        found.push((tool.to_owned(), xml_params(body)));
        rest = &rest[body_start + len + close.len()..];
    }
    found
}

/// The `<name>value</name>` parameters of a call's body, each value trimmed as Cline trims it;
/// a `content` runs to its last closing tag (a file's content may hold the tag's own text), as
/// Cline reads `write_to_file` (cline/cline `src/core/assistant-message/parse-assistant-message.ts`,
/// `parseAssistantMessageV1`/`V2`, commit 031561ead134).
fn xml_params(body: &str) -> Map<String, Value> {
    let mut params = Map::new();
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let Some(end) = after.find('>') else { break };
        let name = &after[..end];
        let valid =
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            rest = after;
            continue;
        }
        let value_start = &after[end + 1..];
        let close = format!("</{name}>");
        let Some(len) = (if name == "content" {
            value_start.rfind(&close)
        } else {
            value_start.find(&close)
        }) else {
            rest = value_start;
            continue;
        };
        let value = value_start[..len].trim();
        params.insert(name.to_owned(), Value::String(value.to_owned()));
        rest = &value_start[len + close.len()..];
    }
    params
}

/// Cline's `# Current Working Directory (<dir>)` in a user message's environment details.
fn working_directory(content: Option<&Value>) -> Option<String> {
    const MARK: &str = "# Current Working Directory (";
    let texts: Vec<&str> = match content {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => return None,
    };
    texts.into_iter().rev().find_map(|text| {
        let at = text.rfind(MARK)?;
        let rest = &text[at + MARK.len()..];
        let line = rest.lines().next()?;
        // `(<dir>) Files` on newer Cline, `(<dir>)` alone before.
        let end = line.rfind(')')?;
        Some(line[..end].to_owned()).filter(|d| !d.is_empty())
    })
}

/// The results in a user message, each with the index of the action it belongs to (taken from
/// `waiting`, the calls of the assistant message before it).
fn results(content: Option<&Value>, waiting: &mut Vec<Call>) -> Vec<(usize, Option<ActionResult>)> {
    let mut found = Vec::new();
    let blocks: Vec<&Value> = match content {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        Some(text @ Value::String(_)) => vec![text],
        _ => return found,
    };
    let mut blocks = blocks.into_iter().peekable();
    while let Some(block) = blocks.next() {
        // A native result names its call.
        if block.get("type").and_then(Value::as_str) == Some("tool_result") {
            let id = block.get("tool_use_id").and_then(Value::as_str);
            let Some(pos) = waiting
                .iter()
                .position(|c| id.is_some() && c.action.call_id.as_deref() == id)
            else {
                continue;
            };
            let call = waiting.remove(pos);
            let text = match block.get("content") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            let body = result_head(&text).map_or(text.as_str(), |(_, body)| body);
            found.push((call.at, parse_result(&call.action.tool, body)));
            continue;
        }
        let text = match block {
            Value::String(text) => text.as_str(),
            _ => match block.get("text").and_then(Value::as_str) {
                Some(text) => text,
                None => continue,
            },
        };
        let Some((tool, mut body)) = result_head(text) else {
            continue;
        };
        // Older Cline writes the head and the body as two blocks.
        if body.trim().is_empty()
            && let Some(next) = blocks
                .peek()
                .and_then(|b| b.get("text"))
                .and_then(Value::as_str)
            && result_head(next).is_none()
        {
            body = next;
            blocks.next();
        }
        // The first waiting call of that tool; Cline answers calls in order.
        let Some(pos) = waiting.iter().position(|c| c.action.tool == tool) else {
            continue;
        };
        let call = waiting.remove(pos);
        found.push((call.at, parse_result(tool, body)));
    }
    found
}

/// `[<tool> for '…'] Result:<body>` or `[<tool>] Result:<body>` → (tool, body).
fn result_head(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('[')?;
    let name_end = rest.find([' ', ']'])?;
    let tool = &rest[..name_end];
    if tool.is_empty() || !tool.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    // The head ends at the first `] Result:` (the subject may hold `]`).
    let at = rest.find("] Result:")?;
    let body = &rest[at + "] Result:".len()..];
    Some((
        tool,
        body.strip_prefix('\n')
            .unwrap_or(body.trim_start_matches(' ')),
    ))
}

/// What a call's result body says; `None` when the outcome is unknown.
fn parse_result(tool: &str, body: &str) -> Option<ActionResult> {
    let denied = body.starts_with("The user denied this operation");
    if tool != "execute_command" {
        let failed = denied
            || body.starts_with("[ERROR]")
            || body.starts_with("Error")
            || body.starts_with("The tool execution failed");
        return Some(ActionResult {
            ok: !failed,
            exit_code: None,
            output: body.to_owned(),
            duration_ms: None,
        });
    }
    let (head, output) = match body.find("\nOutput:\n") {
        Some(at) => (&body[..at], &body[at + "\nOutput:\n".len()..]),
        None => (body, body),
    };
    if head.starts_with("Command timed out after") || head.starts_with("Command is still running") {
        return None;
    }
    let exit_code = ["(exit code ", "failed with exit code "]
        .iter()
        .find_map(|marker| {
            let at = head.find(marker)?;
            let digits: String = head[at + marker.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            digits.parse::<i32>().ok()
        });
    let ok = !denied
        && match exit_code {
            Some(code) => code == 0,
            None => head.starts_with("Command executed"),
        };
    Some(ActionResult {
        ok,
        exit_code,
        output: output.to_owned(),
        duration_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;
    use crate::ingest::adapters::shell_common::testkit;

    const CORPUS_FILE: &str =
        "formats-2026/cline/mike4567__MRA04242026__api_conversation_history.json";

    fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Action>, Problem> {
        let mut out = Vec::new();
        Cline
            .parser(path, None)
            .record(bytes, Position { offset: 0, line: 1 }, &mut out)?;
        let mut actions: Vec<Action> = Vec::new();
        for item in out {
            match item {
                Item::Action(action) => actions.push(action),
                Item::Result(late) => {
                    let call = actions.iter_mut().rev().find(|a| {
                        a.session == late.session && a.call_id.as_deref() == Some(&late.call_id)
                    });
                    let call = call.expect("a late result follows its call");
                    assert!(call.result.is_none(), "one result per call");
                    call.result = Some(late.result);
                }
                Item::SessionLink { .. } => panic!("no session links in Cline"),
            }
        }
        Ok(actions)
    }

    #[test]
    fn the_real_task_gives_its_105_commands_with_exit_codes() {
        let Some((path, bytes)) = testkit::corpus(CORPUS_FILE) else {
            return;
        };
        let actions = parse(&path, &bytes).expect("parses");
        let commands: Vec<&Action> = actions
            .iter()
            .filter(|a| a.tool == "execute_command")
            .collect();
        // PROVENANCE.md: 105 execute_command calls; 231 tool calls in all.
        assert_eq!(commands.len(), 105);
        assert_eq!(actions.len(), 231);
        assert!(
            actions
                .iter()
                .all(|a| a.session == "mike4567__MRA04242026__api_conversation_history")
        );
        let first = commands[0];
        assert_eq!(
            first.input["command"],
            "cd c:\\Apps\\MRA04242026 && npm install @google-cloud/storage"
        );
        assert_eq!(
            first.call_id.as_deref(),
            Some("tooluse_1NrzzRucNkDJDf51sO5eaG")
        );
        assert_eq!(
            first.ts.map(|t| t.as_millisecond()),
            Some(1_777_345_511_398)
        );
        assert_eq!(first.cwd.as_deref(), Some("c:/Apps/MRA04242026"));
        let result = first.result.as_ref().expect("result");
        assert_eq!((result.ok, result.exit_code), (true, Some(0)));
        assert!(
            result
                .output
                .starts_with("up to date, audited 662 packages in 1m\n")
        );
        // 73 succeeded, 25 failed with an exit code, 5 timed out (unknown), 1 denied, and the
        // last one has no result yet.
        let by = |ok: bool, coded: bool| {
            commands
                .iter()
                .filter_map(|a| a.result.as_ref())
                .filter(|r| r.ok == ok && r.exit_code.is_some() == coded)
                .count()
        };
        assert_eq!(by(true, true), 73);
        assert_eq!(by(false, true), 25);
        assert_eq!(by(false, false), 1);
        assert_eq!(commands.iter().filter(|a| a.result.is_none()).count(), 6);
        assert!(
            commands
                .iter()
                .filter_map(|a| a.result.as_ref())
                .all(|r| r.exit_code.is_none_or(|c| (c == 0) == r.ok))
        );
        // Seq follows the log.
        assert!(actions.windows(2).all(|w| w[0].seq < w[1].seq));
        // The same bytes give the same actions (the file is re-read whole when it changes).
        assert_eq!(parse(&path, &bytes).expect("parses"), actions);
        assert_eq!(
            crate::ingest::formats::sniff(&path, &testkit::head(&path)).map(|(n, _)| n),
            Some("cline")
        );
    }

    /// The XML-in-text form of Cline before native tool calling, as cline/cline
    /// `src/core/assistant-message/parse-assistant-message.ts` (commit 031561ead134) reads it,
    /// answered as older Cline's `executeCommandTool` (`src/core/Cline.ts`) answers:
    /// `Command executed.` with `\nOutput:\n…`, and the head and body as two text blocks.
    #[test]
    fn the_older_xml_calls_are_read_too() {
        let history = json!([
            {"role": "user", "content": [
                {"type": "text", "text": "<task>\nbuild it\n</task>"},
                {"type": "text", "text": "<environment_details>\n# Current Working Directory (/home/u/app) Files\nsrc/\n</environment_details>"}
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "<thinking>build</thinking>\n\n<execute_command>\n<command>cargo  build --release</command>\n<requires_approval>false</requires_approval>\n</execute_command>"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "[execute_command for 'cargo  build --release'] Result:"},
                {"type": "text", "text": "Command executed.\nOutput:\nerror: could not find `Cargo.toml`"}
            ]},
            {"role": "assistant", "content": "<read_file>\n<path>src/main.rs</path>\n</read_file>"},
            {"role": "user", "content": [{"type": "text", "text": "[read_file for 'src/main.rs'] Result:\nfn main() {}"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "<write_to_file>\n<path>a.txt</path>\n<content>\nline </content> inside\n</content>\n</write_to_file>"}]},
            {"role": "user", "content": [{"type": "text", "text": "[write_to_file for 'a.txt'] Result:\nThe user denied this operation."}]},
            {"role": "assistant", "content": [{"type": "text", "text": "<execute_command>\n<command>make"}]}
        ]);
        let path =
            PathBuf::from("/h/.cline/data/tasks/1714000000000/api_conversation_history.json");
        let actions = parse(&path, history.to_string().as_bytes()).expect("parses");
        let calls: Vec<(&str, &Value)> = actions
            .iter()
            .map(|a| (a.tool.as_str(), &a.input))
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "execute_command",
                    &json!({"command": "cargo  build --release", "requires_approval": "false"})
                ),
                ("read_file", &json!({"path": "src/main.rs"})),
                (
                    "write_to_file",
                    &json!({"path": "a.txt", "content": "line </content> inside"})
                ),
            ]
        );
        assert!(actions.iter().all(|a| a.session == "1714000000000"));
        assert!(
            actions
                .iter()
                .all(|a| a.cwd.as_deref() == Some("/home/u/app"))
        );
        // "Command executed." without an exit code (older Cline): a success, code unknown. The
        // result text block comes after the head block here.
        let build = actions[0].result.as_ref().expect("build result");
        assert_eq!((build.ok, build.exit_code), (true, None));
        let read = actions[1].result.as_ref().expect("read result");
        assert_eq!((read.ok, read.output.as_str()), (true, "fn main() {}"));
        assert!(!actions[2].result.as_ref().expect("write result").ok);
    }

    #[test]
    fn bad_documents_are_problems_and_odd_messages_are_skipped() {
        let path = Path::new("/t/x/api_conversation_history.json");
        assert!(parse(path, b"[{\"role\": \"user\", \"content\": [").is_err());
        assert!(parse(path, b"{\"role\": \"user\"}").is_err());
        assert!(parse(path, b"\xff\xfegarbage").is_err());
        let odd = json!([
            5,
            {"role": "assistant", "content": [{"type": "tool_use", "name": 5}, {"type": "mystery"}, {"type": "tool_use", "id": "a", "name": "execute_command", "input": {"command": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "Command failed with exit code 2.\nOutput:\nnope"}]}]},
            {"role": "tool", "content": "x"}
        ]);
        let actions = parse(path, odd.to_string().as_bytes()).expect("parses");
        assert_eq!(actions.len(), 1);
        let result = actions[0].result.as_ref().expect("result");
        assert_eq!(
            (result.ok, result.exit_code, result.output.as_str()),
            (false, Some(2), "nope")
        );
    }

    #[test]
    fn untrusted_documents_never_panic() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for doc in [
            deep.as_str(),
            "[]",
            r#"[{"role":"assistant","content":"<execute_command><command>"}]"#,
            r#"[{"role":"assistant","content":"<read_file><<>></read_file>"}]"#,
            r#"[{"role":"user","content":"[execute_command] Result:"},{"role":"user","content":[{"text":"["}]}]"#,
            r##"[{"role":"user","content":[{"type":"text","text":"# Current Working Directory ("}]}]"##,
            r#"[{"role":"assistant","ts":1e300,"content":[{"type":"tool_use","name":"x","input":[]}]}]"#,
        ] {
            let _ = parse(Path::new("/a.json"), doc.as_bytes());
        }
        assert!(
            parse_result(
                "execute_command",
                "Command failed with exit code 99999999999."
            )
            .is_some_and(|r| r.exit_code.is_none())
        );
    }
}
