//! Gemini CLI sessions: `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl` (and
//! `$GEMINI_CLI_HOME/.gemini/…` when Gemini CLI's home is moved).
//!
//! The shapes are those google-gemini/gemini-cli writes in
//! `packages/core/src/services/chatRecordingService.ts` and `chatRecordingTypes.ts` (read at
//! 0.56.0-nightly, commit 5411f113; the JSONL form since v0.39):
//!
//! * [`GeminiCli`] (`gemini-cli`, one record per line). The first line is the session's metadata
//!   (`{sessionId, projectHash, startTime, lastUpdated, kind?, directories?}`); then every
//!   message is appended as a whole (`{id, timestamp, type, content, toolCalls?, …}`) each time it
//!   changes — tool calls, their results and tokens are added by writing the *same message again
//!   under its id*, and Gemini CLI's own loader keeps the last copy. `{"$set": {…}}` updates the
//!   metadata; a `$set` with `messages` is a checkpoint that replaces the whole history (its
//!   `updateMessagesFromHistory`, e.g. after masking tool outputs). `{"$rewindTo": id}` drops that
//!   message and all that follow it. The loader tells records apart by their fields, not by a
//!   type: a string `$rewindTo`, a string `id`, an object `$set`, or string `sessionId` and
//!   `projectHash` (the metadata, or a whole legacy record on one line, whose `messages` count).
//! * [`GeminiCliJson`] (`gemini-cli-json`, [`Framing::WholeFile`]): before v0.39 a session was one
//!   pretty-printed `session-*.json` document, `{sessionId, projectHash, …, messages: [...]}`,
//!   rewritten in place; it is read when complete. (Resuming such a session makes Gemini CLI copy
//!   it into a `.jsonl` beside it: the same session id and call ids, which the store keeps once.)
//!
//! Calls. A `gemini` message's `toolCalls` are `{id, name, args, result, status, timestamp, …}`
//! records (Gemini CLI records them when they complete: `recordCompletedToolCalls`, statuses
//! `success`, `error`, `cancelled`; the scheduler's other statuses — `validating`, `scheduled`,
//! `executing`, `awaiting_approval` — mean it has no outcome yet). The reader streams, so "the
//! last copy wins" is kept call by call: a call becomes an [`Item::Action`] the first time any
//! copy of its message shows it — with its result when that copy's status is final, otherwise
//! without, and its result follows as one [`Item::Result`] when a later copy shows a final
//! status. A call is never emitted twice: the ids of calls already emitted (and of those still
//! waiting for a result) are the parser's state, kept across restarts. Later copies after the
//! final one only repeat the call, or mask its output for the model (`$set.messages` after
//! masking), so the first final copy is the result the command gave. A message rewritten a
//! thousand times costs a parse per copy and nothing more.
//!
//! Rewinds. `$rewindTo` removes turns from the conversation the model sees, but the shell
//! commands those turns ran were executed: files were written, commands had effects. The calls
//! already read stay as actions (this is a record of what the agent ran, not of what the model
//! still remembers); a call rewound before any final copy keeps no result.
//!
//! Inputs. `tool` is the call's `name` and `input` its `args` as logged: `run_shell_command`'s
//! `{command, description?, dir_path?, is_background?}` keeps `command` exactly as the agent
//! issued it; `read_file`, `write_file`, `replace`, `grep_search`, … keep their own fields
//! (`file_path`, `content`, `old_string`/`new_string`, `pattern`, …). The cwd is the workspace's
//! first directory (`directories[0]`, which Gemini CLI's `WorkspaceContext` lists first: the
//! target dir) when the session recorded its directories (sub-agents always do, main sessions
//! after `/dir add`); a `dir_path` argument sets it — as is when absolute, resolved against that
//! root when relative, unknown when relative with no root known. Gemini CLI writes the project
//! root only beside the session (`.project_root`), which an adapter (pure: no I/O) cannot read.
//!
//! Results. The output is the text of the call's `functionResponse` parts (`response.output`,
//! then `response.error`, joined by a newline), as logged. For `run_shell_command` Gemini CLI's
//! `shell.ts` writes `Output: …`, then `Error: …`, `Exit Code: N` (only when non-zero),
//! `Signal: …`, `Background PIDs: …` and `Process Group PGID: N` lines (newer versions wrap it
//! in `<untrusted_context>`): the exit code is that `Exit Code` line, else 0 when the call
//! succeeded, else none (cancelled, failed before running, or moved to the background while
//! still running). `ok` is a `success` status with exit code 0 (or still running in the
//! background); other tools are `ok` when their status is `success`.
//!
//! Sessions and sub-agents. The session is the metadata's `sessionId` (a later `$set` may change
//! it), the file stem until the metadata is seen. A sub-agent (`kind: "subagent"`) writes
//! `chats/<parent session id>/<its session id>.jsonl`: its parent is that folder's name, given
//! as an [`Item::SessionLink`] and as every action's `parent_session`.
//!
//! `seq` is `pos.offset << 8` plus the number of actions emitted before it from the same record
//! (fewer than the record's length in bytes, so never reaching the next record's range). `ts` is
//! the message's `timestamp` (the model's turn), else the call's own (when it was recorded).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::action::{Action, ActionResult, Source};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// Gemini CLI's JSONL session files (v0.39 on).
pub struct GeminiCli;

/// Gemini CLI's whole-file JSON session documents (before v0.39).
pub struct GeminiCliJson;

/// The tool Gemini CLI runs shell commands with.
const SHELL_TOOL: &str = "run_shell_command";

/// Statuses of a call that has its outcome (Gemini CLI's `CoreToolCallStatus`).
const FINAL: [&str; 3] = ["success", "error", "cancelled"];

impl Format for GeminiCli {
    fn source(&self) -> Source {
        Source::GeminiCli
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(GeminiParser::new(path, state))
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        match serde_json::from_slice::<Value>(first) {
            Ok(Value::Object(obj)) => is_metadata(&obj),
            // A first line longer than the head (a legacy record on one line): the file's name
            // and place say it.
            _ => {
                first.len() == head.len()
                    && in_chats(path)
                    && path.extension().is_some_and(|e| e == "jsonl")
                    && head.starts_with(b"{\"sessionId\"")
            }
        }
    }
}

impl Format for GeminiCliJson {
    fn source(&self) -> Source {
        Source::GeminiCli
    }

    fn framing(&self) -> Framing {
        Framing::WholeFile
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(GeminiParser::new(path, state))
    }

    fn sniff(&self, _path: &Path, head: &[u8]) -> bool {
        // A pretty-printed document: `{` alone on its first line, then its fields, the two
        // Gemini CLI's loader requires among them.
        let text = String::from_utf8_lossy(head);
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        lines.next() == Some("{")
            && text.contains("\"sessionId\"")
            && text.contains("\"projectHash\"")
            && text.contains("\"messages\"")
    }
}

/// Whether the file is under a `chats` folder (or a sub-agent's folder inside one).
fn in_chats(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .take(2)
        .any(|dir| dir.file_name().is_some_and(|n| n == "chats"))
}

/// Gemini CLI's own test for the metadata record (`isPartialMetadataRecord`).
fn is_metadata(obj: &Map<String, Value>) -> bool {
    obj.get("sessionId").is_some_and(Value::is_string)
        && obj.get("projectHash").is_some_and(Value::is_string)
}

/// What the parser remembers between records (and, through `state()`, across restarts).
#[derive(Debug, Clone, PartialEq)]
struct GeminiParser {
    /// The session id: the metadata's, the file stem until it is seen.
    session: String,
    /// The name of the folder the file is in (a sub-agent's parent session).
    folder: Option<String>,
    /// The parent session, once the metadata said this is a sub-agent.
    parent: Option<String>,
    /// The workspace's first directory, when recorded.
    root: Option<String>,
    /// Calls emitted with their final result (or whose result was emitted later).
    done: HashSet<String>,
    /// Calls emitted without a result yet, with their session.
    pending: HashMap<String, String>,
}

impl GeminiParser {
    fn new(path: &Path, state: Option<Value>) -> Self {
        let session = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let folder = path
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n != "chats");
        let mut parser = GeminiParser {
            session,
            folder,
            parent: None,
            root: None,
            done: HashSet::new(),
            pending: HashMap::new(),
        };
        if let Some(Value::Object(state)) = state {
            parser.restore(&state);
        }
        parser
    }

    /// Takes what a checkpoint saved; fields of the wrong shape are ignored, not trusted.
    fn restore(&mut self, state: &Map<String, Value>) {
        if let Some(session) = state.get("session").and_then(Value::as_str) {
            self.session = session.to_owned();
        }
        self.parent = state
            .get("parent")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.root = state.get("root").and_then(Value::as_str).map(str::to_owned);
        if let Some(Value::Array(done)) = state.get("done") {
            self.done = done
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
        }
        if let Some(Value::Array(pending)) = state.get("pending") {
            self.pending = pending
                .iter()
                .filter_map(|pair| match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(call), Value::String(session)]) => {
                        Some((call.clone(), session.clone()))
                    }
                    _ => None,
                })
                .collect();
        }
    }

    fn handle(
        &mut self,
        obj: &Map<String, Value>,
        pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        // In the order Gemini CLI's `loadConversationRecord` tests them.
        if obj.get("$rewindTo").is_some_and(Value::is_string) {
            // The rewound turns' commands were run: their actions stay (see the module doc).
            return Ok(());
        }
        if obj.get("id").is_some_and(Value::is_string) {
            return self.message(obj, pos, out);
        }
        if let Some(Value::Object(set)) = obj.get("$set") {
            return self.metadata(set, pos, out);
        }
        if is_metadata(obj) {
            return self.metadata(obj, pos, out);
        }
        Err(Problem::new(
            "not a Gemini CLI session record (no `id`, `$set`, `$rewindTo`, or `sessionId` and \
             `projectHash`)",
        ))
    }

    /// The metadata line, a `$set` update, or a whole legacy record.
    fn metadata(
        &mut self,
        fields: &Map<String, Value>,
        pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let messages = match fields.get("messages") {
            Some(Value::Array(messages)) => messages.as_slice(),
            _ => &[],
        };
        // Checked before any state changes, so a problem leaves the parser as it was.
        let calls = messages
            .iter()
            .filter_map(Value::as_object)
            .filter(|m| m.get("id").is_some_and(Value::is_string))
            .map(calls_of)
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(session) = fields.get("sessionId").and_then(Value::as_str) {
            self.session = session.to_owned();
        }
        if let Some(Value::Array(dirs)) = fields.get("directories") {
            self.root = dirs.first().and_then(Value::as_str).map(str::to_owned);
        }
        if fields.get("kind").and_then(Value::as_str) == Some("subagent")
            && let Some(folder) = &self.folder
            && self.parent.as_ref() != Some(folder)
        {
            self.parent = Some(folder.clone());
            out.push(Item::SessionLink {
                session: self.session.clone(),
                parent: folder.clone(),
            });
        }
        let mut emitted = 0;
        for message in calls {
            self.calls(&message, pos, &mut emitted, out);
        }
        Ok(())
    }

    /// One copy of a message.
    fn message(
        &mut self,
        obj: &Map<String, Value>,
        pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let message = calls_of(obj)?;
        self.calls(&message, pos, &mut 0, out);
        Ok(())
    }

    /// Emits what this copy of a message tells of its calls that was not told before.
    fn calls(
        &mut self,
        message: &Message<'_>,
        pos: Position,
        emitted: &mut u64,
        out: &mut Vec<Item>,
    ) {
        for call in &message.calls {
            if self.done.contains(call.id) {
                continue;
            }
            let waiting = self.pending.contains_key(call.id);
            let result = call.result();
            match (waiting, result) {
                (true, None) => {}
                (true, Some(result)) => {
                    let (call_id, session) = self
                        .pending
                        .remove_entry(call.id)
                        .unwrap_or_else(|| (call.id.to_owned(), self.session.clone()));
                    self.done.insert(call_id.clone());
                    out.push(Item::Result(LateResult {
                        session,
                        call_id,
                        result,
                    }));
                }
                (false, result) => {
                    let action = self.action(message, call, result, pos, *emitted);
                    *emitted += 1;
                    if action.result.is_some() {
                        self.done.insert(call.id.to_owned());
                    } else {
                        self.pending
                            .insert(call.id.to_owned(), self.session.clone());
                    }
                    out.push(Item::Action(action));
                }
            }
        }
    }

    fn action(
        &self,
        message: &Message<'_>,
        call: &Call<'_>,
        result: Option<ActionResult>,
        pos: Position,
        index: u64,
    ) -> Action {
        let dir = call
            .args
            .and_then(|a| a.get("dir_path"))
            .and_then(Value::as_str);
        let cwd = match dir {
            Some(dir) if Path::new(dir).is_absolute() => Some(dir.to_owned()),
            Some(dir) => self
                .root
                .as_deref()
                .map(|root| Path::new(root).join(dir).display().to_string()),
            None => self.root.clone(),
        };
        Action {
            session: self.session.clone(),
            seq: (pos.offset << 8) + index,
            ts: message.ts.or(call.ts),
            source: Source::GeminiCli,
            cwd,
            tool: call.name.to_owned(),
            input: Value::Object(call.args.cloned().unwrap_or_default()),
            call_id: Some(call.id.to_owned()),
            parent_session: self.parent.clone(),
            result,
        }
    }
}

/// A message's timestamp and calls, validated.
struct Message<'a> {
    ts: Option<jiff::Timestamp>,
    calls: Vec<Call<'a>>,
}

/// One entry of a message's `toolCalls`.
struct Call<'a> {
    id: &'a str,
    name: &'a str,
    args: Option<&'a Map<String, Value>>,
    status: &'a str,
    result: Option<&'a Value>,
    ts: Option<jiff::Timestamp>,
}

/// The calls of a message record (none for other message types).
fn calls_of(obj: &Map<String, Value>) -> Result<Message<'_>, Problem> {
    let ts = obj.get("timestamp").and_then(timestamp);
    // Gemini CLI gives calls to `gemini` messages only; any message's list is read.
    let calls = match obj.get("toolCalls") {
        Some(Value::Array(calls)) => calls,
        None | Some(Value::Null) => {
            return Ok(Message {
                ts,
                calls: Vec::new(),
            });
        }
        Some(_) => return Err(Problem::new("a message's `toolCalls` is not a list")),
    };
    let mut out = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        let Value::Object(call) = call else {
            return Err(Problem::new(format!("tool call {i} is not an object")));
        };
        let field = |key: &str| {
            call.get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| Problem::new(format!("tool call {i} has no string `{key}`")))
        };
        let args = match call.get("args") {
            Some(Value::Object(args)) => Some(args),
            None | Some(Value::Null) => None,
            Some(_) => {
                return Err(Problem::new(format!(
                    "tool call {i}'s `args` is not an object"
                )));
            }
        };
        out.push(Call {
            id: field("id")?,
            name: field("name")?,
            args,
            status: call.get("status").and_then(Value::as_str).unwrap_or(""),
            result: call.get("result"),
            ts: call.get("timestamp").and_then(timestamp),
        });
    }
    Ok(Message { ts, calls: out })
}

impl Call<'_> {
    /// The call's outcome, when its status is final.
    fn result(&self) -> Option<ActionResult> {
        if !FINAL.contains(&self.status) {
            return None;
        }
        let output = response_text(self.id, self.result);
        let succeeded = self.status == "success";
        if self.name != SHELL_TOOL {
            return Some(ActionResult {
                ok: succeeded,
                exit_code: None,
                output,
                duration_ms: None,
            });
        }
        let exit_code = match shell_exit_code(&output) {
            Some(code) => Some(code),
            None if succeeded && !is_backgrounded(&output) => Some(0),
            None => None,
        };
        Some(ActionResult {
            ok: succeeded && exit_code.is_none_or(|c| c == 0),
            exit_code,
            output,
            duration_ms: None,
        })
    }
}

/// The text of a call's `functionResponse` parts (`response.output`, then `response.error`).
fn response_text(call_id: &str, result: Option<&Value>) -> String {
    let parts: &[Value] = match result {
        Some(Value::Array(parts)) => parts,
        Some(part @ Value::Object(_)) => std::slice::from_ref(part),
        _ => &[],
    };
    let mut texts: Vec<&str> = Vec::new();
    for part in parts {
        let Some(response) = part.get("functionResponse") else {
            continue;
        };
        // Parts of another call (a batch's sibling) are not this call's output.
        if response
            .get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| id != call_id)
        {
            continue;
        }
        let Some(Value::Object(body)) = response.get("response") else {
            continue;
        };
        for key in ["output", "error"] {
            if let Some(text) = body.get(key).and_then(Value::as_str) {
                texts.push(text);
            }
        }
    }
    texts.join("\n")
}

/// The `Exit Code: N` line among the trailer lines `shell.ts` writes after the output.
fn shell_exit_code(output: &str) -> Option<i32> {
    let text = unwrap_untrusted(output);
    for line in text.lines().rev() {
        if let Some(code) = line.strip_prefix("Exit Code: ") {
            return code.trim().parse().ok();
        }
        let trailer = ["Signal: ", "Background PIDs: ", "Process Group PGID: "]
            .iter()
            .any(|p| line.starts_with(p));
        if !trailer {
            return None;
        }
    }
    None
}

/// Whether the command was moved to the background, still running (`shell.ts`).
fn is_backgrounded(output: &str) -> bool {
    unwrap_untrusted(output).starts_with("Command moved to background")
}

/// The text inside newer versions' `<untrusted_context>` wrapper (`textUtils.ts`).
fn unwrap_untrusted(text: &str) -> &str {
    text.strip_prefix("<untrusted_context>\n")
        .and_then(|t| t.strip_suffix("\n</untrusted_context>"))
        .unwrap_or(text)
}

fn timestamp(value: &Value) -> Option<jiff::Timestamp> {
    value.as_str()?.parse().ok()
}

impl RecordParser for GeminiParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        if record.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let value: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(Problem::new("record is not a JSON object"));
        };
        let mut items = Vec::new();
        self.handle(&obj, pos, &mut items)?;
        out.append(&mut items);
        Ok(())
    }

    fn state(&self) -> Value {
        let mut done: Vec<&String> = self.done.iter().collect();
        done.sort();
        let mut pending: Vec<_> = self.pending.iter().collect();
        pending.sort();
        json!({
            "session": self.session,
            "parent": self.parent,
            "root": self.root,
            "done": done,
            "pending": pending.iter().map(|(c, s)| json!([c, s])).collect::<Vec<_>>(),
        })
    }
}
