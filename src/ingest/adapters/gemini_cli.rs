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
//! in `<untrusted_context>`; versions before about 0.2x always wrote `Exit Code: N` or
//! `Exit Code: (none)`, after `Command:` and `Directory:` lines): the exit code is that
//! `Exit Code` line (none for `(none)`), else 0 when the call succeeded, else none (cancelled,
//! failed before running, or moved to the background while still running). `ok` is a `success` status with exit code 0 (or still running in the
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
                        replaces: false,
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
            Some(code) => code,
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

/// The `Exit Code: N` line among the trailer lines `shell.ts` writes after the output: `None`
/// when there is none, `Some(None)` for one without a number (`Exit Code: (none)`, as older
/// versions wrote for a command killed by a signal).
fn shell_exit_code(output: &str) -> Option<Option<i32>> {
    let text = unwrap_untrusted(output);
    for line in text.lines().rev() {
        if let Some(code) = line.strip_prefix("Exit Code: ") {
            return Some(code.trim().parse().ok());
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const DIR: &str = "gemini-cli/";
    const SHORT: &str = "AnthonyontheHub__TP-Tutor__session-2026-04-24T23-16-c8b2cbd9.jsonl";
    const MID: &str = "AnthonyontheHub__TP-Tutor__session-2026-04-25T02-41-ab395b98.jsonl";
    const LONG: &str = "AnthonyontheHub__TP-Tutor__session-2026-04-25T06-41-8dddde09.jsonl";
    const HISTORY: &str =
        "1919114514yasenpai-maker__focus-quest__session-2026-08-13T04-43-a2a-serv.jsonl";

    /// What a tailer and store would make of a file: actions with their results joined.
    #[derive(Debug, Default, PartialEq)]
    struct Run {
        actions: Vec<Action>,
        orphans: Vec<LateResult>,
        links: Vec<(String, String)>,
        problems: Vec<(u64, String)>,
        /// Results that arrived for a call that had one already.
        overwritten: usize,
    }

    impl Run {
        /// Feeds the complete lines of `bytes`, which start at `pos`; returns where they end.
        fn feed(
            &mut self,
            parser: &mut dyn RecordParser,
            bytes: &[u8],
            mut pos: Position,
        ) -> Position {
            let mut rest = bytes;
            while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
                let line = &rest[..nl];
                let mut items = Vec::new();
                match parser.record(line, pos, &mut items) {
                    Ok(()) => items.into_iter().for_each(|item| self.add(item)),
                    Err(problem) => {
                        assert!(items.is_empty(), "a problem record yielded items");
                        self.problems.push((pos.line, problem.reason));
                    }
                }
                pos = Position {
                    offset: pos.offset + nl as u64 + 1,
                    line: pos.line + 1,
                };
                rest = &rest[nl + 1..];
            }
            pos
        }

        fn add(&mut self, item: Item) {
            match item {
                Item::Action(action) => self.actions.push(action),
                Item::Result(late) => {
                    let call = self.actions.iter_mut().find(|a| {
                        a.session == late.session && a.call_id.as_deref() == Some(&late.call_id)
                    });
                    match call {
                        Some(action) => {
                            self.overwritten += usize::from(action.result.is_some());
                            action.result = Some(late.result);
                        }
                        None => self.orphans.push(late),
                    }
                }
                Item::SessionLink { session, parent } => self.links.push((session, parent)),
            }
        }

        fn shell(&self) -> Vec<&Action> {
            self.actions
                .iter()
                .filter(|a| a.tool == SHELL_TOOL)
                .collect()
        }
    }

    const START: Position = Position { offset: 0, line: 1 };

    fn read(path: &str, bytes: &[u8]) -> Run {
        let mut parser = GeminiCli.parser(Path::new(path), None);
        let mut run = Run::default();
        run.feed(&mut *parser, bytes, START);
        run
    }

    /// Parses up to line `split`, saves the state as a checkpoint would, resumes from it.
    fn run_split(path: &str, bytes: &[u8], split: usize) -> Run {
        let cut = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(split.saturating_sub(1))
            .map_or(0, |(i, _)| if split == 0 { 0 } else { i + 1 });
        let mut run = Run::default();
        let mut first = GeminiCli.parser(Path::new(path), None);
        let pos = run.feed(&mut *first, &bytes[..cut], START);
        let saved = serde_json::to_string(&first.state()).expect("state serializes");
        let state = serde_json::from_str(&saved).expect("state parses");
        let mut second = GeminiCli.parser(Path::new(path), Some(state));
        run.feed(&mut *second, &bytes[cut..], pos);
        run
    }

    fn corpus_root() -> PathBuf {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/corpus/formats-2026"
        ))
    }

    fn corpus(rel: &str) -> Option<Vec<u8>> {
        let path = corpus_root().join(rel);
        match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(_) if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("corpus not found at {}", path.display())
            }
            Err(_) => {
                eprintln!("skipped: corpus not found at {}", path.display());
                None
            }
        }
    }

    fn command(action: &Action) -> &str {
        action.input["command"].as_str().unwrap_or("")
    }

    fn result(action: &Action) -> &ActionResult {
        action.result.as_ref().expect("action has a result")
    }

    fn ts(text: &str) -> Option<jiff::Timestamp> {
        Some(text.parse().expect("valid timestamp"))
    }

    /// Real sessions (formats-2026/PROVENANCE.md): shell calls per file as counted there, every
    /// call once though its message is written again up to 46 times, every result present.
    #[test]
    fn corpus_counts_match_provenance() {
        for (file, session, shell, all) in [
            (SHORT, "c8b2cbd9-67d4-4f6f-9272-108ab4868b29", 3, 3),
            (MID, "ab395b98-93f1-4d48-8618-ba473d55ce63", 10, 35),
            (LONG, "8dddde09-1f20-4ea8-9520-f66861de1b44", 11, 54),
            (HISTORY, "a2a-server", 0, 0),
        ] {
            let Some(bytes) = corpus(&format!("{DIR}{file}")) else {
                return;
            };
            let run = read(&format!("/c/{file}"), &bytes);
            assert_eq!(run.problems, [], "{file}");
            assert_eq!(run.shell().len(), shell, "{file}");
            assert_eq!(run.actions.len(), all, "{file}");
            assert!(run.orphans.is_empty() && run.links.is_empty(), "{file}");
            let mut ids: Vec<_> = run.actions.iter().map(|a| a.call_id.clone()).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), all, "{file}: a call emitted twice");
            let mut seqs: Vec<_> = run.actions.iter().map(|a| a.seq).collect();
            assert!(seqs.is_sorted(), "{file}: seq goes back");
            seqs.dedup();
            assert_eq!(seqs.len(), all, "{file}: seq repeated");
            for action in &run.actions {
                assert_eq!(action.session, session);
                assert_eq!(action.source, Source::GeminiCli);
                assert!(action.result.is_some(), "{file}: {action:?}");
                assert!(action.ts.is_some());
            }
        }
    }

    #[test]
    fn corpus_commands_and_exit_codes() {
        let Some(bytes) = corpus(&format!("{DIR}{SHORT}")) else {
            return;
        };
        let run = read(&format!("/c/{SHORT}"), &bytes);
        let shell = run.shell();
        assert_eq!(
            shell.iter().map(|a| command(a)).collect::<Vec<_>>(),
            [
                "echo 'export COLORTERM=truecolor' >> ~/.bashrc && source ~/.bashrc",
                "gemini",
                "git clone https://github.com/anthonyguera/TP-Tutor.git",
            ]
        );
        let first = shell[0];
        assert_eq!(
            first.call_id.as_deref(),
            Some("run_shell_command_1777072669373_0")
        );
        assert_eq!(first.ts, ts("2026-04-24T23:17:49.407Z"));
        assert_eq!(
            first.input["description"],
            "Appending COLORTERM export to .bashrc and sourcing it."
        );
        assert_eq!((result(first).ok, result(first).exit_code), (true, Some(0)));
        assert_eq!(
            result(first).output,
            "Output: (empty)\nProcess Group PGID: 8597"
        );
        // Cancelled by the user: no exit code, not ok, and the output and error both kept.
        let clone = result(shell[2]);
        assert_eq!((clone.ok, clone.exit_code), (false, None));
        assert!(clone.output.contains("Username for 'https://github.com': "));
        assert!(
            clone
                .output
                .ends_with("\n[Operation Cancelled] User cancelled tool execution.")
        );

        let Some(bytes) = corpus(&format!("{DIR}{MID}")) else {
            return;
        };
        let run = read(&format!("/c/{MID}"), &bytes);
        let by = |cmd: &str| {
            run.shell()
                .into_iter()
                .find(|a| command(a) == cmd)
                .unwrap_or_else(|| panic!("no `{cmd}`"))
        };
        // `status: success` with `Exit Code: 2` in the text: the command failed.
        let lint = result(by("npm run lint"));
        assert_eq!((lint.ok, lint.exit_code), (false, Some(2)));
        // Moved to the background while running: no exit code yet.
        let dev = by("npm run dev");
        assert_eq!(dev.input["is_background"], true);
        assert_eq!((result(dev).ok, result(dev).exit_code), (true, None));
        assert_eq!(result(by("git push")).exit_code, Some(0));
        let tools: Vec<&str> = run.actions.iter().map(|a| a.tool.as_str()).collect();
        assert_eq!(tools.iter().filter(|t| **t == "read_file").count(), 10);
        assert_eq!(tools.iter().filter(|t| **t == "replace").count(), 2);

        let Some(bytes) = corpus(&format!("{DIR}{LONG}")) else {
            return;
        };
        let run = read(&format!("/c/{LONG}"), &bytes);
        let builds: Vec<_> = run
            .shell()
            .into_iter()
            .filter(|a| command(a) == "npm run build")
            .collect();
        assert_eq!(builds.len(), 4);
        assert_eq!(result(builds[0]).exit_code, Some(254));
        assert!(!result(builds[0]).ok);
        assert_eq!(builds[1].input["dir_path"], "TP-Tutor");
        assert_eq!(result(builds[1]).exit_code, Some(0));
        // A relative dir_path with no recorded root: the cwd is not guessed.
        assert_eq!(builds[1].cwd, None);
        let failed_edit = run
            .actions
            .iter()
            .find(|a| a.call_id.as_deref() == Some("replace_1777099482120_0"))
            .expect("the failed replace");
        assert!(!result(failed_edit).ok);
        assert!(
            result(failed_edit)
                .output
                .starts_with("Failed to edit, 0 occurrences")
        );
        let write = run
            .actions
            .iter()
            .find(|a| a.tool == "write_file")
            .expect("a write_file");
        assert!(write.input["file_path"].is_string() && write.input["content"].is_string());
    }

    #[test]
    fn corpus_state_survives_a_restart_after_any_line() {
        for file in [SHORT, MID] {
            let Some(bytes) = corpus(&format!("{DIR}{file}")) else {
                return;
            };
            let path = format!("/c/{file}");
            let whole = read(&path, &bytes);
            for split in 0..=bytes.iter().filter(|b| **b == b'\n').count() {
                assert_eq!(
                    run_split(&path, &bytes, split),
                    whole,
                    "{file}: split {split}"
                );
            }
        }
    }

    /// A session as `chatRecordingService.ts` (google-gemini/gemini-cli 0.56.0-nightly, commit
    /// 5411f113) writes it: metadata, messages appended whole and again under their id as calls
    /// and tokens are added (`pushMessage`), `$set` updates, a `$rewindTo` (`rewindTo`), and a
    /// `$set.messages` checkpoint (`updateMessagesFromHistory`) masking an earlier output. The
    /// first copy of `g1` shows its call still `executing` (a `ToolCallRecord.status` the
    /// scheduler's `Status` type allows); its result comes with the next copy.
    const LIVE: &str = r#"{"sessionId":"5d1e8f3a-0c2b-4e7a-9f61-2b3c4d5e6f70","projectHash":"9f8e","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"main"}
{"$set":{"directories":["/home/u/proj","/home/u/lib"]}}
{"id":"u1","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":[{"text":"build it"}]}
{"$set":{"lastUpdated":"2026-05-01T10:00:01.000Z"}}
{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_1_0","name":"run_shell_command","args":{"command":"cargo  build --release 2>&1 | tail -3","dir_path":"crates/core"},"status":"executing","timestamp":"2026-05-01T10:00:02.100Z"}],"thoughts":[],"model":"gemini-3-flash-preview"}
{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_1_0","name":"run_shell_command","args":{"command":"cargo  build --release 2>&1 | tail -3","dir_path":"crates/core"},"result":[{"functionResponse":{"id":"run_shell_command_1_0","name":"run_shell_command","response":{"output":"<untrusted_context>\nOutput: error[E0425]: cannot find value `x`\nExit Code: 101\nProcess Group PGID: 4242\n</untrusted_context>"}}}],"status":"success","timestamp":"2026-05-01T10:00:09.000Z","displayName":"Shell"}],"thoughts":[],"model":"gemini-3-flash-preview"}
{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_1_0","name":"run_shell_command","args":{"command":"cargo  build --release 2>&1 | tail -3","dir_path":"crates/core"},"result":[{"functionResponse":{"id":"run_shell_command_1_0","name":"run_shell_command","response":{"output":"<untrusted_context>\nOutput: error[E0425]: cannot find value `x`\nExit Code: 101\nProcess Group PGID: 4242\n</untrusted_context>"}}}],"status":"success","timestamp":"2026-05-01T10:00:09.000Z","displayName":"Shell"},{"id":"read_file_2_1","name":"read_file","args":{"file_path":"src/lib.rs"},"result":[{"functionResponse":{"id":"read_file_2_1","name":"read_file","response":{"output":"pub fn x() {}"}}}],"status":"success","timestamp":"2026-05-01T10:00:10.000Z"}],"thoughts":[],"tokens":{"input":10,"output":2,"cached":0,"total":12},"model":"gemini-3-flash-preview"}
{"$set":{"lastUpdated":"2026-05-01T10:00:10.000Z"}}
{"id":"u2","timestamp":"2026-05-01T10:01:00.000Z","type":"user","content":[{"text":"clean up"}]}
{"id":"g2","timestamp":"2026-05-01T10:01:01.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_3_0","name":"run_shell_command","args":{"command":"rm -rf target/debug","dir_path":"/tmp/scratch"},"result":[{"functionResponse":{"id":"run_shell_command_3_0","name":"run_shell_command","response":{"output":"Output: (empty)\nProcess Group PGID: 4300"}}}],"status":"success","timestamp":"2026-05-01T10:01:02.000Z"},{"id":"run_shell_command_4_1","name":"run_shell_command","args":{"command":"sleep 100"},"status":"executing","timestamp":"2026-05-01T10:01:02.000Z"}]}
{"$rewindTo":"u2"}
{"id":"u3","timestamp":"2026-05-01T10:02:00.000Z","type":"user","content":[{"text":"just test"}]}
{"id":"g3","timestamp":"2026-05-01T10:02:01.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_5_0","name":"run_shell_command","args":{"command":"cargo test"},"result":[{"functionResponse":{"id":"run_shell_command_5_0","name":"run_shell_command","response":{"output":"Command was cancelled by user before it could complete. There was no output before it was cancelled.","error":"[Operation Cancelled] User cancelled tool execution."}}}],"status":"cancelled","timestamp":"2026-05-01T10:02:05.000Z"},{"id":"replace_6_1","name":"replace","args":{"file_path":"src/lib.rs","old_string":"x","new_string":"y"},"result":[{"functionResponse":{"id":"replace_6_1","name":"replace","response":{"error":"Failed to edit, 0 occurrences found"}}}],"status":"error","timestamp":"2026-05-01T10:02:06.000Z"}]}
{"$set":{"messages":[{"id":"u1","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":[{"text":"build it"}]},{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_1_0","name":"run_shell_command","args":{"command":"cargo  build --release 2>&1 | tail -3","dir_path":"crates/core"},"result":[{"functionResponse":{"id":"run_shell_command_1_0","name":"run_shell_command","response":{"output":"[tool output masked]"}}}],"status":"success","timestamp":"2026-05-01T10:00:09.000Z"}]},{"id":"u3","timestamp":"2026-05-01T10:02:00.000Z","type":"user","content":[{"text":"just test"}]},{"id":"g4","timestamp":"2026-05-01T10:03:00.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_7_0","name":"run_shell_command","args":{"command":"git status --short"},"result":[{"functionResponse":{"id":"run_shell_command_7_0","name":"run_shell_command","response":{"output":"Output:  M src/lib.rs\nProcess Group PGID: 4400"}}}],"status":"success","timestamp":"2026-05-01T10:03:01.000Z"}]}],"lastUpdated":"2026-05-01T10:03:01.000Z"}}
"#;

    #[test]
    fn last_copy_wins_call_by_call() {
        let run = read(
            "/h/.gemini/tmp/proj/chats/session-2026-05-01T10-00-5d1e8f3a.jsonl",
            LIVE.as_bytes(),
        );
        assert_eq!(run.problems, []);
        assert_eq!(run.overwritten, 0, "a result delivered twice");
        let calls: Vec<(&str, &str)> = run
            .actions
            .iter()
            .map(|a| (a.call_id.as_deref().unwrap_or(""), a.tool.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("run_shell_command_1_0", "run_shell_command"),
                ("read_file_2_1", "read_file"),
                ("run_shell_command_3_0", "run_shell_command"),
                ("run_shell_command_4_1", "run_shell_command"),
                ("run_shell_command_5_0", "run_shell_command"),
                ("replace_6_1", "replace"),
                ("run_shell_command_7_0", "run_shell_command"),
            ]
        );
        let build = &run.actions[0];
        // Exactly as issued, double space included.
        assert_eq!(command(build), "cargo  build --release 2>&1 | tail -3");
        assert_eq!(build.session, "5d1e8f3a-0c2b-4e7a-9f61-2b3c4d5e6f70");
        assert_eq!(build.ts, ts("2026-05-01T10:00:02.000Z"));
        // The workspace's first directory is the root a relative dir_path is taken from.
        assert_eq!(build.cwd.as_deref(), Some("/home/u/proj/crates/core"));
        // The result came with the second copy, inside the untrusted_context wrapper, and is
        // the command's own output, not the later masked one.
        let built = result(build);
        assert_eq!((built.ok, built.exit_code), (false, Some(101)));
        assert!(built.output.contains("cannot find value"));
        let read = &run.actions[1];
        assert_eq!(read.input, json!({"file_path": "src/lib.rs"}));
        assert_eq!(read.cwd.as_deref(), Some("/home/u/proj"));
        assert_eq!(result(read).output, "pub fn x() {}");
        // Rewound, but run: the actions stay; the one never finished has no result.
        let rm = &run.actions[2];
        assert_eq!(command(rm), "rm -rf target/debug");
        assert_eq!(rm.cwd.as_deref(), Some("/tmp/scratch"));
        assert_eq!(result(rm).exit_code, Some(0));
        assert_eq!(run.actions[3].result, None);
        let cancelled = result(&run.actions[4]);
        assert_eq!((cancelled.ok, cancelled.exit_code), (false, None));
        let edit = result(&run.actions[5]);
        assert_eq!((edit.ok, edit.exit_code), (false, None));
        assert_eq!(edit.output, "Failed to edit, 0 occurrences found");
        // A call first seen in a checkpoint is a call too.
        assert_eq!(command(&run.actions[6]), "git status --short");
        assert_eq!(result(&run.actions[6]).exit_code, Some(0));
        let mut seqs: Vec<u64> = run.actions.iter().map(|a| a.seq).collect();
        assert!(seqs.is_sorted());
        seqs.dedup();
        assert_eq!(seqs.len(), 7);
    }

    #[test]
    fn a_result_arriving_later_is_a_result_item() {
        let lines: Vec<&str> = LIVE.lines().collect();
        let mut parser = GeminiCli.parser(Path::new("/x/session-a.jsonl"), None);
        let mut items = Vec::new();
        for (i, line) in lines[..5].iter().enumerate() {
            let pos = Position {
                offset: i as u64 * 1000,
                line: i as u64 + 1,
            };
            parser
                .record(line.as_bytes(), pos, &mut items)
                .expect("record");
        }
        assert!(matches!(&items[..], [Item::Action(a)] if a.result.is_none()));
        items.clear();
        let pos = Position {
            offset: 5000,
            line: 6,
        };
        parser
            .record(lines[5].as_bytes(), pos, &mut items)
            .expect("record");
        let [Item::Result(late)] = &items[..] else {
            panic!("expected one result, got {items:?}");
        };
        assert_eq!(late.call_id, "run_shell_command_1_0");
        assert_eq!(late.result.exit_code, Some(101));
        // The same copy again tells nothing new.
        items.clear();
        parser
            .record(lines[5].as_bytes(), pos, &mut items)
            .expect("record");
        assert!(items.is_empty());
    }

    /// A sub-agent's file, where `chatRecordingService.ts` `initialize` puts it
    /// (`chats/<parent session id>/<session id>.jsonl`, `kind: "subagent"`, the workspace's
    /// directories in the metadata).
    const SUBAGENT: &str = r#"{"sessionId":"codebase_investigator-x7k2","projectHash":"9f8e","startTime":"2026-05-01T11:00:00.000Z","lastUpdated":"2026-05-01T11:00:00.000Z","kind":"subagent","directories":["/home/u/proj"]}
{"id":"s1","timestamp":"2026-05-01T11:00:01.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_8_0","name":"run_shell_command","args":{"command":"git log --oneline -3"},"result":[{"functionResponse":{"id":"run_shell_command_8_0","name":"run_shell_command","response":{"output":"Output: abc123 init\nProcess Group PGID: 5000"}}}],"status":"success","timestamp":"2026-05-01T11:00:02.000Z"}]}
"#;

    #[test]
    fn subagents_are_linked_to_their_parent() {
        let parent = "5d1e8f3a-0c2b-4e7a-9f61-2b3c4d5e6f70";
        let path = format!("/h/.gemini/tmp/proj/chats/{parent}/codebase_investigator-x7k2.jsonl");
        let run = read(&path, SUBAGENT.as_bytes());
        assert_eq!(
            run.links,
            [("codebase_investigator-x7k2".to_owned(), parent.to_owned())]
        );
        let [action] = &run.actions[..] else {
            panic!("one action expected: {:?}", run.actions);
        };
        assert_eq!(action.parent_session.as_deref(), Some(parent));
        assert_eq!(action.cwd.as_deref(), Some("/home/u/proj"));
        assert_eq!(command(action), "git log --oneline -3");
        // A main session in `chats/` has no parent.
        let main = read(
            "/h/.gemini/tmp/proj/chats/session-2026-05-01T10-00-5d1e8f3a.jsonl",
            LIVE.as_bytes(),
        );
        assert!(main.links.is_empty());
        assert!(main.actions.iter().all(|a| a.parent_session.is_none()));
    }

    #[test]
    fn fixture_state_survives_a_restart_after_any_line() {
        for (path, text) in [
            (
                "/h/.gemini/tmp/p/chats/session-2026-05-01T10-00-5d1e8f3a.jsonl",
                LIVE,
            ),
            (
                "/h/.gemini/tmp/p/chats/5d1e8f3a/codebase_investigator-x7k2.jsonl",
                SUBAGENT,
            ),
        ] {
            let whole = read(path, text.as_bytes());
            for split in 0..=text.lines().count() {
                assert_eq!(
                    run_split(path, text.as_bytes(), split),
                    whole,
                    "{path}: split {split}"
                );
            }
        }
    }

    /// A session before v0.39: one document, as `chatRecordingService.ts` at v0.20.0 wrote it
    /// (`JSON.stringify(conversation, null, 2)`), its shell output with `Command:`,
    /// `Directory:` and an `Exit Code:` line always present (`shell.ts` at v0.20.0).
    const LEGACY: &str = r#"{
  "sessionId": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
  "projectHash": "77aa",
  "startTime": "2025-12-01T09:00:00.000Z",
  "lastUpdated": "2025-12-01T09:05:00.000Z",
  "messages": [
    {
      "id": "m1",
      "timestamp": "2025-12-01T09:00:01.000Z",
      "type": "user",
      "content": "run the tests"
    },
    {
      "id": "m2",
      "timestamp": "2025-12-01T09:00:02.000Z",
      "type": "gemini",
      "content": "",
      "toolCalls": [
        {
          "id": "run_shell_command-1764579602000-a1",
          "name": "run_shell_command",
          "args": {
            "command": "npm test -- --watch=false",
            "description": "Run the tests"
          },
          "result": [
            {
              "functionResponse": {
                "id": "run_shell_command-1764579602000-a1",
                "name": "run_shell_command",
                "response": {
                  "output": "Command: npm test -- --watch=false\nDirectory: (root)\nOutput: 1 failing\nError: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 812"
                }
              }
            }
          ],
          "status": "success",
          "timestamp": "2025-12-01T09:00:30.000Z"
        },
        {
          "id": "run_shell_command-1764579640000-b2",
          "name": "run_shell_command",
          "args": {
            "command": "ls"
          },
          "result": [
            {
              "functionResponse": {
                "id": "run_shell_command-1764579640000-b2",
                "name": "run_shell_command",
                "response": {
                  "output": "Command: ls\nDirectory: (root)\nOutput: a\nError: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 813"
                }
              }
            }
          ],
          "status": "success",
          "timestamp": "2025-12-01T09:00:41.000Z"
        }
      ]
    }
  ]
}
"#;

    #[test]
    fn legacy_documents_are_read_whole() {
        let path = Path::new("/h/.gemini/tmp/77aa/chats/session-2025-12-01T09-00-0a1b2c3d.json");
        assert_eq!(GeminiCliJson.framing(), Framing::WholeFile);
        assert!(GeminiCliJson.sniff(path, LEGACY.as_bytes()));
        assert!(!GeminiCli.sniff(path, LEGACY.as_bytes()));
        let mut parser = GeminiCliJson.parser(path, None);
        let mut items = Vec::new();
        parser
            .record(LEGACY.as_bytes(), START, &mut items)
            .expect("a whole document");
        let actions: Vec<&Action> = items
            .iter()
            .filter_map(|i| match i {
                Item::Action(a) => Some(a),
                _ => None,
            })
            .collect();
        assert_eq!(items.len(), 2);
        assert_eq!(command(actions[0]), "npm test -- --watch=false");
        assert_eq!(actions[0].session, "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d");
        assert_eq!(result(actions[0]).exit_code, Some(1));
        assert!(!result(actions[0]).ok);
        assert_eq!(result(actions[1]).exit_code, Some(0));
        assert_eq!((actions[0].seq, actions[1].seq), (0, 1));
    }

    #[test]
    fn shell_outputs() {
        let code = |text: &str| shell_exit_code(text);
        assert_eq!(
            code("Output: x\nExit Code: 2\nProcess Group PGID: 1"),
            Some(Some(2))
        );
        assert_eq!(
            code("Output: x\nExit Code: 2\nSignal: 9\nBackground PIDs: 3, 4"),
            Some(Some(2))
        );
        assert_eq!(code("Output: (empty)\nProcess Group PGID: 1"), None);
        // The command's own output saying it is not the trailer.
        assert_eq!(code("Output: Exit Code: 7\nlater line"), None);
        assert_eq!(
            code("Output: x\nExit Code: (none)\nSignal: SIGKILL"),
            Some(None)
        );
        assert_eq!(
            code("<untrusted_context>\nOutput: x\nExit Code: 3\n</untrusted_context>"),
            Some(Some(3))
        );
        assert!(is_backgrounded(
            "Command moved to background (PID: 1). Output hidden."
        ));
    }

    #[test]
    fn untrusted_records_never_panic() {
        let long = "x".repeat(1 << 20);
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let records: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"   ".to_vec(),
            // A line cut short (a crash while appending).
            br#"{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","toolCalls":[{"id":"c","na"#.to_vec(),
            b"\xff\xfe\x00\x01binary".to_vec(),
            b"[1,2,3]".to_vec(),
            b"null".to_vec(),
            deep.into_bytes(),
            long.into_bytes(),
        ];
        let fields = [
            r#"{"type":"compaction","summary":"x"}"#,
            r#"{"id":5,"type":"gemini"}"#,
            r#"{"$set":5}"#,
            r#"{"$rewindTo":7}"#,
            r#"{"sessionId":5,"projectHash":"p"}"#,
            r#"{"id":"g","type":"gemini","toolCalls":5}"#,
            r#"{"id":"g","type":"gemini","toolCalls":[5]}"#,
            r#"{"id":"g","type":"gemini","toolCalls":[{"id":5,"name":"run_shell_command"}]}"#,
            r#"{"id":"g","type":"gemini","toolCalls":[{"id":"c","name":[]}]}"#,
            r#"{"id":"g","type":"gemini","toolCalls":[{"id":"c","name":"x","args":"ls"}]}"#,
            r#"{"$set":{"messages":[{"id":"g","toolCalls":{}}]}}"#,
        ];
        let handled = [
            r#"{"$set":{"messages":5,"directories":[5],"kind":7,"sessionId":[]}}"#,
            r#"{"id":"g","type":"gemini","timestamp":5,"toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":5,"dir_path":[]},"result":7,"status":"success"}]}"#,
            r#"{"id":"g","type":"gemini","toolCalls":[{"id":"c2","name":"run_shell_command","status":9,"result":[5,{"functionResponse":7},{"functionResponse":{"response":"x"}}]}]}"#,
            r#"{"id":"g","type":"user","toolCalls":null}"#,
        ];
        let mut parser = GeminiCli.parser(
            Path::new("/x/s.jsonl"),
            Some(json!({"done": 5, "pending": [[1, 2], "x"], "root": []})),
        );
        let mut problems = 0;
        for (i, record) in records
            .iter()
            .map(Vec::as_slice)
            .chain(fields.iter().map(|f| f.as_bytes()))
            .enumerate()
        {
            let mut out = Vec::new();
            let pos = Position {
                offset: i as u64 * 100,
                line: i as u64 + 1,
            };
            if parser.record(record, pos, &mut out).is_err() {
                assert!(out.is_empty());
                problems += 1;
            }
        }
        assert_eq!(
            problems,
            records.len() - 2 + fields.len(),
            "each bad record is a problem"
        );
        let mut out = Vec::new();
        for (i, record) in handled.iter().enumerate() {
            let pos = Position {
                offset: 10_000 + i as u64 * 100,
                line: 100 + i as u64,
            };
            parser
                .record(record.as_bytes(), pos, &mut out)
                .expect("handled");
        }
        assert_eq!(out.len(), 2, "{out:?}");
        // Garbage state is ignored, not trusted.
        let parser = GeminiCli.parser(Path::new("/x/s.jsonl"), Some(json!(5)));
        assert_eq!(parser.state()["session"], "s");
    }

    /// One message written again a thousand times (Gemini CLI rewrites a message per call,
    /// token count and result): one action, one result, and state that does not grow.
    #[test]
    fn a_message_rewritten_a_thousand_times() {
        let mut text = String::from(
            "{\"sessionId\":\"s\",\"projectHash\":\"p\",\"startTime\":\"2026-05-01T10:00:00Z\"}\n",
        );
        let pending = r#"{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command_1_0","name":"run_shell_command","args":{"command":"make"},"status":"executing"}]}"#;
        let done = pending.replace(
            r#""status":"executing""#,
            r#""status":"success","result":[{"functionResponse":{"id":"run_shell_command_1_0","response":{"output":"Output: ok\nProcess Group PGID: 9"}}}]"#,
        );
        for i in 0..1000 {
            text.push_str(if i < 500 { pending } else { &done });
            text.push('\n');
        }
        let path = "/x/chats/session-a.jsonl";
        let run = read(path, text.as_bytes());
        assert_eq!(run.problems, []);
        assert_eq!(run.actions.len(), 1);
        assert_eq!(run.overwritten, 0);
        assert_eq!(result(&run.actions[0]).exit_code, Some(0));
        let mut parser = GeminiCli.parser(Path::new(path), None);
        let mut sink = Run::default();
        sink.feed(&mut *parser, text.as_bytes(), START);
        assert_eq!(parser.state()["done"], json!(["run_shell_command_1_0"]));
        assert_eq!(parser.state()["pending"], json!([]));
    }

    #[test]
    fn sniff_recognises_gemini_files_only() {
        let path = Path::new("/tmp/some.jsonl");
        assert!(GeminiCli.sniff(path, LIVE.as_bytes()));
        assert!(GeminiCli.sniff(path, SUBAGENT.as_bytes()));
        assert!(!GeminiCli.sniff(path, b"{\"sessionId\":\"s\"}\n"));
        assert!(!GeminiCli.sniff(path, b""));
        assert!(!GeminiCliJson.sniff(path, LIVE.as_bytes()));
        if corpus("PROVENANCE.md").is_none() {
            return;
        }
        let mut seen = 0;
        for dir in std::fs::read_dir(corpus_root())
            .expect("corpus readable")
            .flatten()
        {
            if !dir.path().is_dir() {
                continue;
            }
            for entry in std::fs::read_dir(dir.path())
                .expect("dir readable")
                .flatten()
            {
                let path = entry.path();
                let bytes = std::fs::read(&path).expect("corpus file readable");
                let head = &bytes[..bytes.len().min(64 * 1024)];
                let expected = dir.file_name() == "gemini-cli";
                assert_eq!(GeminiCli.sniff(&path, head), expected, "{}", path.display());
                assert!(!GeminiCliJson.sniff(&path, head), "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen > 20, "only {seen} corpus files");
    }
}
