//! OpenAI Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`.
//!
//! One JSON object per line, in one of two shapes:
//!
//! * **Envelope** (codex_cli_rs from about 0.4x on): `{"timestamp", "type", "payload"}` with
//!   `type` one of `session_meta`, `response_item`, `turn_context`, `event_msg`, `compacted`, …
//!   The first line is the `session_meta` (`payload.id`, `payload.cwd`).
//! * **Bare** (earlier, up to about September 2025): the first line is a bare session meta object
//!   `{"id", "timestamp", "instructions", "git"}`, then bare response items
//!   (`{"type": "function_call", …}`) and `{"record_type": "state"}` markers. Lines carry no
//!   timestamp, so those actions have `ts: None`; the cwd is taken from the `<cwd>` of the first
//!   `<environment_context>` user message.
//!
//! Calls: `function_call` (`name`, `arguments` — a JSON *string* — and `call_id`),
//! `custom_tool_call` (freeform tools such as `apply_patch`, whose `input` is the patch text: the
//! action's input is `{"patch": "…"}`) and `local_shell_call` (`action.command` argv). Their
//! outputs (`function_call_output`, `custom_tool_call_output`, `local_shell_call_output`) are
//! separate records joined by `call_id` through [`Item::Result`].
//!
//! Shell calls — `shell` and `container.exec` (`command` argv), `shell_command` (`command`
//! string), `exec_command` (`cmd` string, unified exec) and `local_shell_call` — get an input
//! whose `command` is the command line as one string: for `["bash", "-lc", X]` (any sh-like shell
//! with a `-c`-style flag, or PowerShell `-Command`, or `cmd /c`) it is `X`, otherwise the argv
//! joined with POSIX shell quoting (the argv itself is kept under `argv`). The other fields are
//! kept (`exec_command`'s `cmd` becomes `command`). A `workdir` (`working_directory` for
//! `local_shell_call`) also sets the action's cwd, resolved against the session cwd when
//! relative (`"."` is the session cwd itself).
//!
//! Results. An output is either a JSON string `{"output": "…", "metadata": {"exit_code": 0,
//! "duration_seconds": 1.2}}` (older `shell`, `apply_patch`), plain text with a header
//! (`Exit code: N` / `Wall time: 1.2 seconds` / `Output:` for `shell_command`; `Chunk ID`,
//! `Wall time`, `Process exited with code N` or `Process running with session ID N`, `Original
//! token count`, `Output:` for unified exec), plain text without a header (`Plan updated`, tool
//! errors), a list of content items (`[{"type": "input_text", "text": …}]`), or the old failure
//! object `{"content": "…", "success": false}`. The exit code comes from the metadata, else from
//! the header, else (no header) from [`exit_code_from_text`]; `ok` is `exit_code == 0` when there
//! is one, otherwise false for `success: false` or a known Codex tool-error text (such as
//! `apply_patch verification failed: …`), otherwise true. The duration is `duration_seconds` or
//! the `Wall time`. The output text is the inner `output` of the JSON form, or the text after the
//! header's `Output:` line (exit code and wall time are moved into their fields), or the text as
//! logged when there is no header.
//!
//! Unified exec: an `exec_command` whose first output says `Process running with session ID N`
//! has not finished; no result is emitted for it then. A later `write_stdin` poll (argument
//! `session_id: N`) whose output says `Process exited with code C` gives that poll its own result
//! and also emits the exec_command's result (exit code and the poll's output).
//!
//! Session and cwd: the session id is the first `session_meta`'s `payload.id` (or the bare meta's
//! `id`); before one is seen, the last UUID in the file name (`rollout-<ts>-<uuid>.jsonl`), else
//! the file stem. The cwd is the `session_meta` cwd, updated by each `turn_context` cwd. A
//! sub-agent's meta (`source.subagent.thread_spawn.parent_thread_id`, or `parent_thread_id`)
//! yields an [`Item::SessionLink`] and the parent on every action. Forked and sub-agent rollouts
//! replay the parent's history after their own meta, starting with the parent's `session_meta`:
//! from a second `session_meta` with another id, items are suppressed until a `turn_context`
//! whose `turn_id` (a UUIDv7) was minted at or after this session's creation (the UUIDv7 time of
//! its id, else its meta timestamp); when turn ids cannot tell (absent, not UUIDv7), the first
//! `turn_context` ends the replay, so old forks may count replayed calls twice rather than lose
//! their own. All of this state survives a restart through [`RecordParser::state`].
//!
//! `seq` is `pos.offset << 8`: each record carries at most one call, so the low byte (the index of
//! the action within its record) is always 0. `ts` is the envelope `timestamp`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::action::{Action, ActionResult, Source, exit_code_from_text, foreign_shell};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// The Codex CLI rollout format.
pub struct Codex;

/// Most unfinished unified-exec processes (and pending polls) remembered at once.
const MAX_PENDING: usize = 256;

/// Tool-error texts Codex returns to the model in place of a tool's output (no exit code).
const ERROR_PREFIXES: [&str; 10] = [
    "apply_patch verification failed",
    "failed to parse function arguments",
    "failed to parse exec_command arguments",
    "failed to parse write_stdin arguments",
    "unsupported call",
    "unsupported custom tool call",
    "exec_command failed",
    "write_stdin failed",
    "execution error",
    "err: ",
];

impl Format for Codex {
    fn source(&self) -> Source {
        Source::Codex
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(CodexParser::new(path, state))
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("rollout-") && name.ends_with(".jsonl") {
            return true;
        }
        let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(first) else {
            return false;
        };
        match obj.get("type") {
            Some(Value::String(t)) => {
                t == "session_meta" && obj.get("payload").is_some_and(Value::is_object)
            }
            Some(_) => false,
            None => {
                obj.get("id").is_some_and(Value::is_string)
                    && ["instructions", "originator", "cli_version"]
                        .iter()
                        .any(|k| obj.contains_key(*k))
            }
        }
    }
}

/// What the parser remembers between records (and, through `state()`, across restarts).
#[derive(Debug, Clone, PartialEq)]
struct CodexParser {
    /// The session id: from the first meta, or derived from the file name until then.
    session: String,
    /// Whether the file's own meta was seen (later metas belong to a replayed parent).
    meta_seen: bool,
    /// The session's current working directory.
    cwd: Option<String>,
    /// The parent session of a sub-agent.
    parent: Option<String>,
    /// When this session was created (Unix ms), to tell replayed turns from its own.
    created_ms: Option<i64>,
    /// Inside a replayed parent history.
    replaying: bool,
    /// Unified-exec processes still running: (process id, call_id of the `exec_command`).
    running: Vec<(String, String)>,
    /// `write_stdin` polls awaiting their output: (call_id, process id).
    polls: Vec<(String, String)>,
    /// Calls whose `exec_command_end` came before their output: the output, when it comes,
    /// gives no result (the end's is final).
    ended: Vec<String>,
    /// The session's shell when it is no POSIX shell (`powershell`, `cmd`), from the
    /// `<shell>` of its environment context: its string commands are marked with it.
    shell: Option<String>,
}

impl CodexParser {
    fn new(path: &Path, state: Option<Value>) -> Self {
        let mut parser = CodexParser {
            session: session_from_path(path),
            meta_seen: false,
            cwd: None,
            parent: None,
            created_ms: None,
            replaying: false,
            running: Vec::new(),
            polls: Vec::new(),
            ended: Vec::new(),
            shell: None,
        };
        if let Some(Value::Object(state)) = state {
            parser.restore(&state);
        }
        parser
    }

    fn restore(&mut self, state: &Map<String, Value>) {
        if let Some(session) = state.get("session").and_then(Value::as_str) {
            self.session = session.to_owned();
        }
        self.meta_seen = state
            .get("meta_seen")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.cwd = str_field(state, "cwd").map(str::to_owned);
        self.parent = str_field(state, "parent").map(str::to_owned);
        self.created_ms = state.get("created_ms").and_then(Value::as_i64);
        self.replaying = state
            .get("replaying")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.running = pairs(state.get("running"));
        self.polls = pairs(state.get("polls"));
        self.ended = match state.get("ended") {
            Some(Value::Array(ids)) => ids
                .iter()
                .filter_map(Value::as_str)
                .take(MAX_PENDING)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        self.shell = str_field(state, "shell")
            .and_then(foreign_shell)
            .map(str::to_owned);
    }

    fn handle(
        &mut self,
        obj: &Map<String, Value>,
        pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let ts = obj.get("timestamp").and_then(timestamp);
        if let Some(payload) = obj.get("payload") {
            let Some(kind) = obj.get("type").and_then(Value::as_str) else {
                return Err(Problem::new("record has a payload but no string \"type\""));
            };
            let known = matches!(kind, "session_meta" | "turn_context" | "response_item");
            let payload = match payload {
                Value::Object(payload) => payload,
                _ if known => return Err(Problem::new(format!("{kind} payload is not an object"))),
                _ => return Ok(()),
            };
            return match kind {
                "session_meta" => self.session_meta(payload, ts, out),
                "turn_context" => {
                    self.turn_context(payload);
                    Ok(())
                }
                "response_item" => self.response_item(payload, ts, pos, out),
                "event_msg" => {
                    self.event(payload, out);
                    Ok(())
                }
                _ => Ok(()),
            };
        }
        match obj.get("type") {
            Some(Value::String(_)) => self.response_item(obj, ts, pos, out),
            Some(_) => Err(Problem::new("\"type\" is not a string")),
            // The bare session meta, or a `{"record_type": "state"}` marker.
            None if obj.contains_key("record_type") => Ok(()),
            None if obj.contains_key("id") => self.session_meta(obj, ts, out),
            None => Ok(()),
        }
    }

    fn session_meta(
        &mut self,
        meta: &Map<String, Value>,
        envelope_ts: Option<jiff::Timestamp>,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let id = match meta.get("id") {
            Some(Value::String(id)) if !id.is_empty() => Some(id.as_str()),
            None | Some(Value::Null) => None,
            Some(_) => {
                return Err(Problem::new(
                    "session meta \"id\" is not a non-empty string",
                ));
            }
        };
        if self.meta_seen {
            // A later meta naming another session starts a replayed parent history.
            if id.is_some_and(|id| id != self.session) {
                self.replaying = true;
            }
            return Ok(());
        }
        self.meta_seen = true;
        if let Some(id) = id {
            self.session = id.to_owned();
        }
        if let Some(cwd) = str_field(meta, "cwd") {
            self.cwd = Some(cwd.to_owned());
        }
        let parent = str_field(meta, "parent_thread_id").or_else(|| {
            meta.get("source")
                .and_then(|s| s.get("subagent"))
                .and_then(|s| s.get("thread_spawn"))
                .and_then(|s| s.get("parent_thread_id"))
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
        });
        if let Some(parent) = parent {
            self.parent = Some(parent.to_owned());
            out.push(Item::SessionLink {
                session: self.session.clone(),
                parent: parent.to_owned(),
            });
        }
        self.created_ms = id.and_then(uuid_v7_ms).or_else(|| {
            meta.get("timestamp")
                .and_then(timestamp)
                .or(envelope_ts)
                .map(|ts| ts.as_millisecond())
        });
        Ok(())
    }

    fn turn_context(&mut self, payload: &Map<String, Value>) {
        if self.replaying {
            let turn_ms = payload
                .get("turn_id")
                .and_then(Value::as_str)
                .and_then(uuid_v7_ms);
            match (turn_ms, self.created_ms) {
                (Some(turn), Some(created)) if turn < created => return,
                _ => self.replaying = false,
            }
        }
        if let Some(cwd) = str_field(payload, "cwd") {
            self.cwd = Some(cwd.to_owned());
        }
    }

    fn response_item(
        &mut self,
        item: &Map<String, Value>,
        ts: Option<jiff::Timestamp>,
        pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        if self.replaying {
            return Ok(());
        }
        let kind = match item.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err(Problem::new("response item \"type\" is not a string")),
            None => return Ok(()),
        };
        match kind {
            "function_call" => {
                let name = required_str(item, "name", kind)?;
                let call_id = optional_str(item, "call_id", kind)?;
                let arguments = match item.get("arguments") {
                    Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
                        Ok(Value::Object(args)) => args,
                        Ok(other) => single("arguments", other),
                        Err(_) => single("arguments", Value::String(raw.clone())),
                    },
                    Some(Value::Object(args)) => args.clone(),
                    None | Some(Value::Null) => Map::new(),
                    Some(_) => {
                        return Err(Problem::new("function_call \"arguments\" is not a string"));
                    }
                };
                if name == "write_stdin"
                    && let (Some(call_id), Some(process)) =
                        (call_id, arguments.get("session_id").and_then(scalar_string))
                {
                    // A poll of (or input to) a running command belongs to that command: its
                    // answer finishes the command's result, it is no call of its own.
                    push_bounded(&mut self.polls, (call_id.to_owned(), process));
                    return Ok(());
                }
                let (mut input, workdir) = normalise_input(name, arguments);
                self.mark_shell(name, &mut input);
                out.push(Item::Action(
                    self.action(name, input, call_id, workdir, ts, pos),
                ));
            }
            "custom_tool_call" => {
                let name = required_str(item, "name", kind)?;
                let call_id = optional_str(item, "call_id", kind)?;
                let text = match item.get("input") {
                    Some(Value::String(text)) => text.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(_) => {
                        return Err(Problem::new("custom_tool_call \"input\" is not a string"));
                    }
                };
                let input = if name == "apply_patch" {
                    single("patch", Value::String(text))
                } else if is_shell_tool(name) {
                    single("command", Value::String(text.trim().to_owned()))
                } else {
                    single("input", Value::String(text))
                };
                let input = Value::Object(input);
                out.push(Item::Action(
                    self.action(name, input, call_id, None, ts, pos),
                ));
            }
            "local_shell_call" => {
                let call_id = match optional_str(item, "call_id", kind)? {
                    Some(id) => Some(id),
                    None => optional_str(item, "id", kind)?,
                };
                let exec = match item.get("action") {
                    Some(Value::Object(exec)) => exec.clone(),
                    None | Some(Value::Null) => Map::new(),
                    Some(_) => {
                        return Err(Problem::new("local_shell_call \"action\" is not an object"));
                    }
                };
                let (mut input, workdir) = normalise_input("local_shell", exec);
                self.mark_shell("local_shell", &mut input);
                out.push(Item::Action(self.action(
                    "local_shell",
                    input,
                    call_id,
                    workdir,
                    ts,
                    pos,
                )));
            }
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                let call_id = match optional_str(item, "call_id", kind)? {
                    Some(id) => id,
                    None => match optional_str(item, "id", kind)? {
                        Some(id) => id,
                        None => return Err(Problem::new(format!("{kind} without a call_id"))),
                    },
                };
                let output = parse_output(item.get("output").unwrap_or(&Value::Null))
                    .map_err(|why| Problem::new(format!("{kind}: {why}")))?;
                self.output(call_id, output, out);
            }
            // Bare rollouts have no meta cwd: it is in the first environment_context message.
            "message" if item.get("role").and_then(Value::as_str) == Some("user") => {
                if let Some(context) = environment_context(item.get("content")) {
                    if self.cwd.is_none() {
                        self.cwd = tag(context, "cwd").map(str::to_owned);
                    }
                    if let Some(shell) = tag(context, "shell") {
                        self.shell = foreign_shell(shell).map(str::to_owned);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Emits a call's result, handling unified-exec processes that outlive their first output.
    fn output(&mut self, call_id: &str, output: Output, out: &mut Vec<Item>) {
        if take(&mut self.ended, |id| id == call_id).is_some() {
            // Its `exec_command_end` came first and was final.
            return;
        }
        let polled = take(&mut self.polls, |(call, _)| call == call_id).map(|(_, p)| p);
        if let Some(process) = polled {
            // A poll's answer: the running command's result once it says the process exited.
            if output.result.exit_code.is_some()
                && let Some((_, exec_call)) = take(&mut self.running, |(p, _)| *p == process)
            {
                let result = ActionResult {
                    duration_ms: None,
                    ..output.result
                };
                out.push(self.result(&exec_call, result, false));
            }
            return;
        }
        if output.result.exit_code.is_none()
            && let Some(process) = output.running
        {
            // The exec_command's first output: the process is still running.
            push_bounded(&mut self.running, (process, call_id.to_owned()));
            return;
        }
        out.push(self.result(call_id, output.result, false));
    }

    /// An event of the session: `exec_command_end` is a command's final word — its exit code,
    /// duration and whole output — whenever it comes (before or after the call's output, or
    /// after the polls of a command that ran on).
    fn event(&mut self, payload: &Map<String, Value>, out: &mut Vec<Item>) {
        if self.replaying || payload.get("type").and_then(Value::as_str) != Some("exec_command_end")
        {
            return;
        }
        // A command the user ran themselves (`!cmd`) answers no call of the agent's.
        if payload.get("source").and_then(Value::as_str) == Some("user_shell") {
            return;
        }
        let Some(call_id) = str_field(payload, "call_id") else {
            return;
        };
        let Some(result) = exec_end_result(payload) else {
            return;
        };
        take(&mut self.running, |(_, call)| call == call_id);
        if !self.ended.iter().any(|id| id == call_id) {
            if self.ended.len() >= MAX_PENDING {
                self.ended.remove(0);
            }
            self.ended.push(call_id.to_owned());
        }
        out.push(self.result(call_id, result, true));
    }

    /// Marks a shell call's input with its shell when that is no POSIX shell (`"shell":
    /// "powershell"`): mining reads such lines as another language, never as sh.
    fn mark_shell(&self, tool: &str, input: &mut Value) {
        if !is_shell_tool(tool) {
            return;
        }
        let Value::Object(fields) = input else {
            return;
        };
        let named = fields.get("shell").and_then(Value::as_str);
        let argv_shell = match fields.get("argv") {
            Some(Value::Array(argv)) => argv.first().and_then(Value::as_str),
            _ => None,
        };
        let shell = match (named, argv_shell) {
            (None, None) => self.shell.as_deref(),
            (named, argv) => named.or(argv).and_then(foreign_shell),
        };
        if let Some(shell) = shell {
            fields.insert("shell".to_owned(), Value::String(shell.to_owned()));
        }
    }

    fn result(&self, call_id: &str, result: ActionResult, replaces: bool) -> Item {
        Item::Result(LateResult {
            session: self.session.clone(),
            call_id: call_id.to_owned(),
            result,
            replaces,
        })
    }

    fn action(
        &self,
        tool: &str,
        input: Value,
        call_id: Option<&str>,
        workdir: Option<String>,
        ts: Option<jiff::Timestamp>,
        pos: Position,
    ) -> Action {
        let cwd = match workdir {
            Some(dir) => resolve_dir(self.cwd.as_deref(), &dir),
            None => self.cwd.clone(),
        };
        Action {
            session: self.session.clone(),
            seq: pos.offset << 8,
            ts,
            source: Source::Codex,
            cwd,
            tool: tool.to_owned(),
            input,
            call_id: call_id.map(str::to_owned),
            parent_session: self.parent.clone(),
            result: None,
        }
    }
}

impl RecordParser for CodexParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        if record.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let value: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(Problem::new("record is not a JSON object"));
        };
        // Items are collected apart so that a problem leaves `out` untouched.
        let mut items = Vec::new();
        self.handle(&obj, pos, &mut items)?;
        out.append(&mut items);
        Ok(())
    }

    fn state(&self) -> Value {
        let pairs = |list: &[(String, String)]| -> Value {
            list.iter().map(|(a, b)| json!([a, b])).collect()
        };
        json!({
            "session": self.session,
            "meta_seen": self.meta_seen,
            "cwd": self.cwd,
            "parent": self.parent,
            "created_ms": self.created_ms,
            "replaying": self.replaying,
            "running": pairs(&self.running),
            "polls": pairs(&self.polls),
            "ended": self.ended,
            "shell": self.shell,
        })
    }
}

/// A parsed tool output.
#[derive(Debug, Clone, PartialEq)]
struct Output {
    result: ActionResult,
    /// The unified-exec process id when the output says the process is still running.
    running: Option<String>,
}

fn parse_output(output: &Value) -> Result<Output, &'static str> {
    match output {
        Value::String(text) => {
            if text.trim_start().starts_with('{')
                && let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text)
                && is_structured(&obj)
            {
                return Ok(structured(&obj));
            }
            Ok(plain(text, None))
        }
        Value::Array(items) => {
            let texts: Vec<&str> = items
                .iter()
                .filter_map(|item| item.get("text").and_then(Value::as_str))
                .collect();
            Ok(plain(&texts.join("\n"), None))
        }
        Value::Object(obj) if is_structured(obj) => Ok(structured(obj)),
        Value::Object(obj) => match obj.get("content") {
            Some(Value::String(text)) => {
                Ok(plain(text, obj.get("success").and_then(Value::as_bool)))
            }
            _ => Err("output object has no string \"content\""),
        },
        Value::Null => Err("missing \"output\""),
        _ => Err("\"output\" is not a string"),
    }
}

/// `{"output": "...", "metadata": {...}}` as the older shell and apply_patch write it.
fn is_structured(obj: &Map<String, Value>) -> bool {
    obj.get("metadata").is_some_and(Value::is_object)
        || (obj.get("output").is_some_and(Value::is_string)
            && obj
                .keys()
                .all(|k| matches!(k.as_str(), "output" | "metadata" | "success")))
}

fn structured(obj: &Map<String, Value>) -> Output {
    let metadata = obj.get("metadata");
    let exit_code = metadata
        .and_then(|m| m.get("exit_code"))
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let duration_ms = metadata
        .and_then(|m| m.get("duration_seconds"))
        .and_then(Value::as_f64)
        .and_then(seconds_to_ms);
    let text = obj.get("output").and_then(Value::as_str).unwrap_or("");
    let success = obj.get("success").and_then(Value::as_bool);
    let ok = match exit_code {
        Some(code) => code == 0 && success != Some(false),
        None => success.unwrap_or_else(|| !looks_like_error(text)),
    };
    Output {
        result: ActionResult {
            ok,
            exit_code,
            output: text.to_owned(),
            duration_ms,
        },
        running: None,
    }
}

/// Plain-text output, with or without the `Exit code:` / `Wall time:` / `Output:` header.
fn plain(text: &str, success: Option<bool>) -> Output {
    let header = Header::parse(text);
    let (exit_code, body) = match &header {
        Some(h) => (h.exit_code, h.body),
        None => (exit_code_from_text(text), text),
    };
    let ok = match exit_code {
        Some(code) => code == 0 && success != Some(false),
        None => success.unwrap_or_else(|| !looks_like_error(body)),
    };
    Output {
        result: ActionResult {
            ok,
            exit_code,
            output: body.to_owned(),
            duration_ms: header.as_ref().and_then(|h| h.duration_ms),
        },
        running: header.and_then(|h| h.running),
    }
}

fn looks_like_error(text: &str) -> bool {
    let text = text.trim_start();
    ERROR_PREFIXES.iter().any(|p| text.starts_with(p)) || text == "aborted"
}

/// The header Codex puts above a command's output.
struct Header<'a> {
    exit_code: Option<i32>,
    duration_ms: Option<u64>,
    running: Option<String>,
    body: &'a str,
}

impl<'a> Header<'a> {
    /// Parses the header lines up to `Output:`; `None` unless every line before it is a known
    /// header line (so ordinary text is never mistaken for one).
    fn parse(text: &'a str) -> Option<Header<'a>> {
        let mut header = Header {
            exit_code: None,
            duration_ms: None,
            running: None,
            body: "",
        };
        let mut rest = text;
        let mut lines = 0;
        while !rest.is_empty() {
            let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
            let line = line.trim_end_matches('\r');
            if line == "Output:" {
                header.body = after;
                return (lines > 0).then_some(header);
            }
            if let Some(code) = line.strip_prefix("Exit code: ") {
                header.exit_code = Some(code.trim().parse().ok()?);
            } else if let Some(code) = line.strip_prefix("Process exited with code ") {
                header.exit_code = Some(code.trim().parse().ok()?);
            } else if let Some(process) = line.strip_prefix("Process running with session ID ") {
                header.running = Some(process.trim().to_owned());
            } else if let Some(wall) = line.strip_prefix("Wall time: ") {
                let seconds = wall.trim().trim_end_matches("seconds").trim_end();
                header.duration_ms = seconds.parse().ok().and_then(seconds_to_ms);
            } else if !(line.starts_with("Chunk ID: ")
                || line.starts_with("Original token count: ")
                || line.starts_with("Total output lines: "))
            {
                return None;
            }
            lines += 1;
            rest = after;
        }
        // Header lines only, no `Output:` line: an empty output.
        (lines > 0).then_some(header)
    }
}

fn seconds_to_ms(seconds: f64) -> Option<u64> {
    // Up to ~31 years; anything else is not a duration.
    (seconds.is_finite() && (0.0..1e9).contains(&seconds))
        .then(|| (seconds * 1000.0).round() as u64)
}

fn is_shell_tool(name: &str) -> bool {
    matches!(
        name,
        "shell" | "container.exec" | "shell_command" | "exec_command" | "local_shell"
    )
}

/// The call's input: shell calls get a string `command`; returns the workdir, if any.
fn normalise_input(tool: &str, mut args: Map<String, Value>) -> (Value, Option<String>) {
    if tool == "apply_patch"
        && !args.contains_key("patch")
        && let Some(patch) = args.remove("input")
    {
        args.insert("patch".to_owned(), patch);
    }
    if !is_shell_tool(tool) {
        return (Value::Object(args), None);
    }
    if !args.contains_key("command")
        && let Some(cmd) = args.remove("cmd")
    {
        args.insert("command".to_owned(), cmd);
    }
    if let Some(Value::Array(argv)) = args.get("command") {
        let argv: Option<Vec<&str>> = argv.iter().map(Value::as_str).collect();
        if let Some(argv) = argv {
            let line = argv_to_command(&argv);
            if let Some(original) = args.insert("command".to_owned(), Value::String(line)) {
                args.insert("argv".to_owned(), original);
            }
        }
    }
    let workdir = ["workdir", "working_directory"]
        .iter()
        .find_map(|k| str_field(&args, k))
        .map(str::to_owned);
    (Value::Object(args), workdir)
}

/// The command line an argv runs: the script of `sh -c SCRIPT`-like argvs, else the argv quoted.
fn argv_to_command(argv: &[&str]) -> String {
    if let [program, .., flag, script] = argv {
        let base = program
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(program)
            .to_ascii_lowercase();
        let base = base.strip_suffix(".exe").unwrap_or(&base);
        let sh_flag = flag.len() >= 2
            && flag.starts_with('-')
            && flag[1..].bytes().all(|b| b.is_ascii_lowercase())
            && flag.contains('c');
        let direct = match base {
            "bash" | "sh" | "zsh" | "dash" | "ksh" | "fish" => argv.len() == 3 && sh_flag,
            "powershell" | "pwsh" => {
                flag.eq_ignore_ascii_case("-command") || flag.eq_ignore_ascii_case("-c")
            }
            "cmd" => flag.eq_ignore_ascii_case("/c"),
            _ => false,
        };
        if direct {
            return (*script).to_owned();
        }
    }
    argv.iter()
        .map(|arg| shell_quote(arg))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(arg: &str) -> String {
    let safe = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if safe {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// `dir` resolved against `base` when relative.
fn resolve_dir(base: Option<&str>, dir: &str) -> Option<String> {
    let bytes = dir.as_bytes();
    let absolute = dir.starts_with(['/', '\\', '~'])
        || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':');
    if absolute {
        return Some(dir.to_owned());
    }
    let base = base?;
    let mut rel = dir;
    while let Some(stripped) = rel.strip_prefix("./").or_else(|| rel.strip_prefix(".\\")) {
        rel = stripped;
    }
    if rel.is_empty() || rel == "." {
        return Some(base.to_owned());
    }
    let sep = if base.contains('\\') && !base.contains('/') {
        '\\'
    } else {
        '/'
    };
    Some(format!("{}{sep}{rel}", base.trim_end_matches(sep)))
}

/// The text of an `<environment_context>` user message, which names the session's `<cwd>`
/// (bare rollouts have no meta cwd) and `<shell>`.
fn environment_context(content: Option<&Value>) -> Option<&str> {
    let parts = content?.as_array()?;
    parts.iter().find_map(|part| {
        let text = part.get("text")?.as_str()?;
        text.contains("<environment_context>").then_some(text)
    })
}

/// The trimmed text of the first `<name>…</name>` element of `text`, when not empty.
fn tag<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let len = text.get(start..)?.find(&close)?;
    let value = text.get(start..start + len)?.trim();
    (!value.is_empty()).then_some(value)
}

/// The final result an `exec_command_end` event holds: exit code, duration (`{secs, nanos}`)
/// and the whole output (`aggregated_output`, else stdout then stderr).
fn exec_end_result(payload: &Map<String, Value>) -> Option<ActionResult> {
    let exit_code = payload
        .get("exit_code")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let status = payload.get("status").and_then(Value::as_str);
    if exit_code.is_none() && status.is_none() {
        return None;
    }
    let duration_ms = payload.get("duration").and_then(|d| {
        let secs = d.get("secs")?.as_u64()?;
        let nanos = d.get("nanos").and_then(Value::as_u64).unwrap_or(0);
        secs.checked_mul(1000)?.checked_add(nanos / 1_000_000)
    });
    let output = match str_field(payload, "aggregated_output") {
        Some(all) if !all.is_empty() => all.to_owned(),
        _ => {
            let stdout = str_field(payload, "stdout").unwrap_or("");
            let stderr = str_field(payload, "stderr").unwrap_or("");
            match (stdout.is_empty(), stderr.is_empty()) {
                (_, true) => stdout.to_owned(),
                (true, false) => stderr.to_owned(),
                (false, false) => format!("{stdout}\n{stderr}"),
            }
        }
    };
    let ok = match exit_code {
        Some(code) => code == 0,
        None => status == Some("completed"),
    };
    Some(ActionResult {
        ok,
        exit_code,
        output,
        duration_ms,
    })
}

/// The session id a file name implies: its last UUID, else its stem.
fn session_from_path(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    last_uuid(stem).unwrap_or(stem).to_owned()
}

fn last_uuid(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    (0..=bytes.len().checked_sub(36)?)
        .rev()
        .find(|&at| is_uuid(&bytes[at..at + 36]))
        .and_then(|at| text.get(at..at + 36))
}

fn is_uuid(bytes: &[u8]) -> bool {
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// The creation time (Unix ms) a version-7 UUID carries.
fn uuid_v7_ms(id: &str) -> Option<i64> {
    let bytes = id.as_bytes();
    if !is_uuid(bytes) || bytes[14] != b'7' {
        return None;
    }
    let hex = format!("{}{}", id.get(0..8)?, id.get(9..13)?);
    i64::from_str_radix(&hex, 16).ok()
}

fn timestamp(value: &Value) -> Option<jiff::Timestamp> {
    match value {
        Value::String(text) => text.parse().ok(),
        Value::Number(n) => jiff::Timestamp::from_second(n.as_i64()?).ok(),
        _ => None,
    }
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn required_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    kind: &str,
) -> Result<&'a str, Problem> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(Problem::new(format!("{kind} without a string \"{key}\""))),
    }
}

fn optional_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    kind: &str,
) -> Result<Option<&'a str>, Problem> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(_)) => Ok(None),
        Some(_) => Err(Problem::new(format!("{kind} \"{key}\" is not a string"))),
    }
}

/// A string or an integer as a string (unified-exec process ids are logged as both).
fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn single(key: &str, value: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    map
}

fn pairs(value: Option<&Value>) -> Vec<(String, String)> {
    let Some(Value::Array(list)) = value else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|pair| {
            let a = pair.get(0)?.as_str()?;
            let b = pair.get(1)?.as_str()?;
            Some((a.to_owned(), b.to_owned()))
        })
        .take(MAX_PENDING)
        .collect()
}

fn push_bounded(list: &mut Vec<(String, String)>, pair: (String, String)) {
    if list.len() >= MAX_PENDING {
        list.remove(0);
    }
    list.push(pair);
}

fn take<T>(list: &mut Vec<T>, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
    let at = list.iter().position(&mut pred)?;
    Some(list.remove(at))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const CORPUS_FILE: &str = "codex/rtchess__019aad50-a7e6-7422-b7a8-0b384290624f_rtchess_1.jsonl";
    const CORPUS_SESSION: &str = "019aad50-a7e6-7422-b7a8-0b384290624f";

    /// What a tailer and store would make of a file: actions with their results joined.
    #[derive(Debug, Default, PartialEq)]
    struct Run {
        actions: Vec<Action>,
        orphans: Vec<LateResult>,
        links: Vec<(String, String)>,
        problems: Vec<(u64, String)>,
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
                match parser.record(line.strip_suffix(b"\r").unwrap_or(line), pos, &mut items) {
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
                    let call = self.actions.iter_mut().rev().find(|a| {
                        a.session == late.session && a.call_id.as_deref() == Some(&late.call_id)
                    });
                    // As the store joins: a result fills a call without one; a final one
                    // replaces what is there.
                    match call {
                        Some(action) if action.result.is_none() || late.replaces => {
                            action.result = Some(late.result)
                        }
                        Some(_) => {}
                        None => self.orphans.push(late),
                    }
                }
                Item::SessionLink { session, parent } => self.links.push((session, parent)),
            }
        }
    }

    const START: Position = Position { offset: 0, line: 1 };

    fn run(path: &str, bytes: &[u8]) -> Run {
        let mut parser = Codex.parser(Path::new(path), None);
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
        let mut first = Codex.parser(Path::new(path), None);
        let pos = run.feed(&mut *first, &bytes[..cut], START);
        let saved = serde_json::to_string(&first.state()).expect("state serializes");
        let state = serde_json::from_str(&saved).expect("state parses");
        let mut second = Codex.parser(Path::new(path), Some(state));
        run.feed(&mut *second, &bytes[cut..], pos);
        run
    }

    fn corpus_root() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"))
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

    fn ts(text: &str) -> Option<jiff::Timestamp> {
        Some(text.parse().expect("valid timestamp"))
    }

    fn command(action: &Action) -> &str {
        action.input["command"].as_str().unwrap_or("")
    }

    fn result(action: &Action) -> &ActionResult {
        action.result.as_ref().expect("action has a result")
    }

    #[test]
    fn corpus_counts_match_provenance() {
        let Some(bytes) = corpus(CORPUS_FILE) else {
            return;
        };
        let run = run(CORPUS_FILE, &bytes);
        assert_eq!(run.problems, vec![]);
        assert_eq!(run.orphans, vec![]);
        assert_eq!(run.links, vec![]);
        let of = |tool: &str| {
            run.actions
                .iter()
                .filter(|a| a.tool == tool)
                .collect::<Vec<_>>()
        };
        let (shell, plan, patch) = (of("shell_command"), of("update_plan"), of("apply_patch"));
        assert_eq!((shell.len(), plan.len(), patch.len()), (121, 4, 173));
        assert_eq!(run.actions.len(), 121 + 4 + 173);
        assert!(
            run.actions.iter().all(|a| a.result.is_some()),
            "every call has its output"
        );
        assert!(
            run.actions
                .iter()
                .all(|a| a.session == CORPUS_SESSION && a.ts.is_some())
        );
        assert!(
            run.actions
                .iter()
                .all(|a| a.cwd.as_deref() == Some("/Users/pinouchon/code/rtchess"))
        );
        assert!(run.actions.windows(2).all(|w| w[0].seq < w[1].seq));

        // PROVENANCE counts 113 "Exit code: 0" and 9 "Exit code: 1": 113 is the number of
        // occurrences of the string; one output (a `cat` of this very rollout) holds it twice.
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(text.matches("Exit code: 0").count(), 113);
        let code = |c| {
            shell
                .iter()
                .filter(|a| result(a).exit_code == Some(c))
                .count()
        };
        assert_eq!((code(0), code(1)), (112, 9));
        assert_eq!(shell.iter().filter(|a| result(a).ok).count(), 112);
        // The 4 remaining function_call outputs are update_plan's.
        for action in &plan {
            assert_eq!(
                result(action),
                &ActionResult {
                    ok: true,
                    exit_code: None,
                    output: "Plan updated".into(),
                    duration_ms: None
                }
            );
        }
        // apply_patch: 165 JSON outputs with exit_code 0, 8 verification failures (plain text).
        let patched = patch
            .iter()
            .filter(|a| result(a).exit_code == Some(0) && result(a).ok);
        assert_eq!(patched.count(), 165);
        let failed: Vec<_> = patch.iter().filter(|a| !result(a).ok).collect();
        assert_eq!(failed.len(), 8);
        assert!(failed.iter().all(|a| {
            result(a).exit_code.is_none()
                && result(a)
                    .output
                    .starts_with("apply_patch verification failed")
        }));
        assert!(patch.iter().all(|a| {
            a.input["patch"]
                .as_str()
                .is_some_and(|p| p.starts_with("*** Begin Patch"))
        }));
    }

    #[test]
    fn corpus_specific_actions() {
        let Some(bytes) = corpus(CORPUS_FILE) else {
            return;
        };
        let run = run(CORPUS_FILE, &bytes);
        let first = &run.actions[0];
        assert_eq!(first.tool, "shell_command");
        assert_eq!(
            first.input,
            json!({"command": "ls", "workdir": ".", "timeout_ms": 120000})
        );
        assert_eq!(
            first.call_id.as_deref(),
            Some("call_KLyTWxCoVwf4p9s4u1x5YS1b")
        );
        assert_eq!(first.ts, ts("2025-11-22T20:48:46.593Z"));
        assert_eq!(first.source, Source::Codex);
        let out = result(first);
        assert_eq!(
            (out.ok, out.exit_code, out.duration_ms),
            (true, Some(0), Some(0))
        );
        assert_eq!(
            out.output,
            "/opt/homebrew/Library/Homebrew/cmd/shellenv.sh: line 18: /bin/ps: Operation not permitted\n"
        );

        let ls = run
            .actions
            .iter()
            .find(|a| command(a) == "ls exported-session.jsonl")
            .expect("ls");
        assert_eq!(ls.ts, ts("2025-11-23T11:29:26.344Z"));
        assert_eq!(ls.cwd.as_deref(), Some("/Users/pinouchon/code/rtchess"));
        let out = result(ls);
        assert_eq!(
            (out.ok, out.exit_code, out.duration_ms),
            (false, Some(1), Some(100))
        );
        assert!(
            out.output
                .ends_with("ls: exported-session.jsonl: No such file or directory\n")
        );
        assert!(
            run.actions
                .iter()
                .any(|a| a.result.as_ref().and_then(|r| r.duration_ms) == Some(2100))
        );

        let patch = run
            .actions
            .iter()
            .find(|a| a.tool == "apply_patch")
            .expect("apply_patch");
        assert!(
            patch.input["patch"]
                .as_str()
                .is_some_and(|p| p.starts_with("*** Begin Patch\n*** Add File: index.html\n"))
        );
        let out = result(patch);
        assert_eq!(
            (out.ok, out.exit_code, out.duration_ms),
            (true, Some(0), Some(0))
        );
        assert_eq!(
            out.output,
            "Success. Updated the following files:\nA index.html\n"
        );
    }

    #[test]
    fn corpus_state_survives_a_restart() {
        let Some(bytes) = corpus(CORPUS_FILE) else {
            return;
        };
        // A file name whose UUID differs from the meta's: a lost state would show.
        let path = "/s/rollout-2025-11-22T21-45-35-00000000-0000-0000-0000-000000000000.jsonl";
        let whole = run(path, &bytes);
        assert!(whole.actions.iter().all(|a| a.session == CORPUS_SESSION));
        let lines = bytes.iter().filter(|b| **b == b'\n').count();
        for split in [1, 2, lines / 2, lines - 1] {
            assert_eq!(
                run_split(path, &bytes, split),
                whole,
                "split after line {split}"
            );
        }
    }

    /// The bare form, before the envelope: meta, `record_type` markers, bare items.
    const BARE: &str = r#"{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-08-18T01:16:13.522Z","instructions":null,"git":{"commit_hash":"abc123","branch":"main"}}
{"record_type":"state"}
{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/dev/proj</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"}]}
{"record_type":"state"}
{"type":"reasoning","id":"rs_1","summary":[],"content":null,"encrypted_content":"x"}
{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cargo test -p foo\"],\"workdir\":\"/home/dev/proj/crates/foo\",\"timeout_ms\":120000}","call_id":"call_1"}
{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"test result: FAILED\\n\",\"metadata\":{\"exit_code\":101,\"duration_seconds\":3.25}}"}
{"type":"function_call","id":"fc_2","name":"shell","arguments":"{\"command\":[\"rg\",\"-n\",\"fn main\",\"src\"]}","call_id":"call_2"}
{"type":"function_call_output","call_id":"call_2","output":"{\"output\":\"src/main.rs:1:fn main() {}\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"}
{"type":"function_call","name":"shell","arguments":"{\"command\":\"apply_patch\"","call_id":"call_3"}
{"type":"function_call_output","call_id":"call_3","output":{"content":"failed to parse function arguments: EOF while parsing","success":false}}
{"type":"local_shell_call","id":"lsc_1","call_id":"call_4","status":"completed","action":{"type":"exec","command":["bash","-lc","ls -la"],"timeout_ms":10000,"working_directory":"./sub","env":null,"user":null}}
{"type":"function_call_output","call_id":"call_4","output":"{\"output\":\"total 0\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0104}}"}
{"record_type":"state"}
"#;

    #[test]
    fn bare_rollouts_are_read() {
        let run = run(
            "/h/.codex/sessions/2025/08/18/rollout-2025-08-18T01-16-13-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl",
            BARE.as_bytes(),
        );
        assert_eq!(
            (run.problems.clone(), run.orphans.len(), run.actions.len()),
            (vec![], 0, 4)
        );
        let a = &run.actions;
        assert!(
            a.iter()
                .all(|a| a.session == "5973b6c0-94b8-487b-a530-2aeb6098ae0e" && a.ts.is_none())
        );
        assert_eq!(
            a[0].input,
            json!({"command": "cargo test -p foo", "argv": ["bash", "-lc", "cargo test -p foo"], "workdir": "/home/dev/proj/crates/foo", "timeout_ms": 120000})
        );
        assert_eq!(a[0].cwd.as_deref(), Some("/home/dev/proj/crates/foo"));
        assert_eq!(
            result(&a[0]),
            &ActionResult {
                ok: false,
                exit_code: Some(101),
                output: "test result: FAILED\n".into(),
                duration_ms: Some(3250)
            }
        );
        assert_eq!(command(&a[1]), "rg -n 'fn main' src");
        assert_eq!(a[1].cwd.as_deref(), Some("/home/dev/proj"));
        assert!(result(&a[1]).ok);
        // Arguments that are not JSON are kept as logged; the failure object says success: false.
        assert_eq!(
            a[2].input,
            json!({"arguments": "{\"command\":\"apply_patch\""})
        );
        assert_eq!((result(&a[2]).ok, result(&a[2]).exit_code), (false, None));
        assert_eq!(
            (a[3].tool.as_str(), command(&a[3])),
            ("local_shell", "ls -la")
        );
        assert_eq!(a[3].cwd.as_deref(), Some("/home/dev/proj/sub"));
        assert_eq!(result(&a[3]).duration_ms, Some(10));
    }

    /// Envelope with unified exec (a process outliving its first output), a turn_context cwd,
    /// an MCP tool with content items, and record types this adapter does not know.
    const UNIFIED: &str = r#"{"timestamp":"2026-02-01T10:00:00.000Z","type":"session_meta","payload":{"id":"019c1a2b-3c4d-7e5f-8a9b-0123456789ab","timestamp":"2026-02-01T10:00:00.000Z","cwd":"/repo","originator":"codex-tui","cli_version":"0.98.0","source":"cli","model_provider":"openai"}}
{"timestamp":"2026-02-01T10:00:01.000Z","type":"turn_context","payload":{"cwd":"/repo/app","approval_policy":"on-request","model":"gpt-5.2-codex"}}
{"timestamp":"2026-02-01T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cargo build\",\"workdir\":\"/repo/app\",\"yield_time_ms\":10000}","call_id":"call_a"}}
{"timestamp":"2026-02-01T10:00:12.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_a","output":"Chunk ID: 1a2b\nWall time: 10.0021 seconds\nProcess running with session ID 7\nOriginal token count: 12\nOutput:\n   Compiling app v0.1.0\n"}}
{"timestamp":"2026-02-01T10:00:13.000Z","type":"response_item","payload":{"type":"function_call","name":"write_stdin","arguments":"{\"session_id\":7,\"chars\":\"\",\"yield_time_ms\":30000}","call_id":"call_b"}}
{"timestamp":"2026-02-01T10:00:20.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_b","output":"Chunk ID: 3c4d\nWall time: 6.5000 seconds\nProcess exited with code 101\nOriginal token count: 30\nOutput:\nerror[E0425]: cannot find value `x`\n"}}
{"timestamp":"2026-02-01T10:00:21.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"git status --short\"}","call_id":"call_c"}}
{"timestamp":"2026-02-01T10:00:21.500Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_c","output":"Chunk ID: 5e6f\nWall time: 0.0500 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\n M src/lib.rs\n"}}
{"timestamp":"2026-02-01T10:00:22.000Z","type":"response_item","payload":{"type":"function_call","name":"mcp__docs__search","arguments":"{\"query\":\"tokio\"}","call_id":"call_d"}}
{"timestamp":"2026-02-01T10:00:23.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_d","output":[{"type":"input_text","text":"tokio 1.48"},{"type":"input_text","text":"docs.rs/tokio"}]}}
{"timestamp":"2026-02-01T10:00:24.000Z","type":"event_msg","payload":{"type":"brand_new_event","x":1}}
{"timestamp":"2026-02-01T10:00:25.000Z","type":"world_state","payload":{"full":true,"state":{}}}
{"timestamp":"2026-02-01T10:00:26.000Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"function_call","name":"shell","arguments":"{}","call_id":"old"}]}}
"#;

    #[test]
    fn unified_exec_results_arrive_with_the_exit() {
        let run = run("unified.jsonl", UNIFIED.as_bytes());
        assert_eq!(
            (run.problems.clone(), run.orphans.len(), run.actions.len()),
            (vec![], 0, 3)
        );
        let a = &run.actions;
        assert!(
            a.iter()
                .all(|a| a.session == "019c1a2b-3c4d-7e5f-8a9b-0123456789ab")
        );
        assert_eq!(
            a[0].input,
            json!({"command": "cargo build", "workdir": "/repo/app", "yield_time_ms": 10000})
        );
        assert_eq!(a[0].ts, ts("2026-02-01T10:00:02Z"));
        assert_eq!(
            result(&a[0]),
            &ActionResult {
                ok: false,
                exit_code: Some(101),
                output: "error[E0425]: cannot find value `x`\n".into(),
                duration_ms: None
            }
        );
        // The poll belongs to the command it waited on: no action of its own.
        assert!(a.iter().all(|a| a.tool != "write_stdin"));
        assert_eq!(
            (command(&a[1]), a[1].cwd.as_deref()),
            ("git status --short", Some("/repo/app"))
        );
        assert_eq!(
            result(&a[1]),
            &ActionResult {
                ok: true,
                exit_code: Some(0),
                output: " M src/lib.rs\n".into(),
                duration_ms: Some(50)
            }
        );
        assert_eq!(a[2].input, json!({"query": "tokio"}));
        assert_eq!(result(&a[2]).output, "tokio 1.48\ndocs.rs/tokio");
        assert!(result(&a[2]).ok);
    }

    /// codex-rs 0.122 (`codex-rs/protocol/src/protocol.rs`, `ExecCommandEndEvent`): an
    /// `exec_command_end` event holds a command's exit code, duration and whole output. It comes
    /// after the call's output (most often), before it, or after a running command's polls.
    const ENDS: &str = r#"{"timestamp":"2026-04-20T09:00:00.000Z","type":"session_meta","payload":{"id":"019db04b-0000-7000-8000-00000000e0d5","timestamp":"2026-04-20T09:00:00.000Z","cwd":"/w","originator":"codex-tui","cli_version":"0.122.0","source":"cli","model_provider":"openai"}}
{"timestamp":"2026-04-20T09:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"rg -n vault src\",\"max_output_tokens\":10}","call_id":"call_after"}}
{"timestamp":"2026-04-20T09:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_after","output":"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 900\nOutput:\nTotal output lines: 3\n\nsrc/a.rs:1: vault\n…"}}
{"timestamp":"2026-04-20T09:00:02.100Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_after","process_id":"11","command":["/bin/zsh","-lc","rg -n vault src"],"cwd":"/w","source":"unified_exec_startup","stdout":"","stderr":"","aggregated_output":"src/a.rs:1: vault\nsrc/b.rs:2: vault\nsrc/c.rs:3: vault\n","exit_code":0,"duration":{"secs":0,"nanos":120000000},"formatted_output":"","status":"completed"}}
{"timestamp":"2026-04-20T09:00:03.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"sed -n 1,5p missing.txt\"}","call_id":"call_before"}}
{"timestamp":"2026-04-20T09:00:03.100Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_before","source":"unified_exec_startup","stdout":"","stderr":"sed: missing.txt: No such file or directory\n","aggregated_output":"","exit_code":1,"duration":{"secs":0,"nanos":3000000},"status":"failed"}}
{"timestamp":"2026-04-20T09:00:03.200Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_before","output":"Chunk ID: 2\nWall time: 0.0 seconds\nProcess exited with code 1\nOriginal token count: 9\nOutput:\nsed: missing.txt: No such file or directory\n"}}
{"timestamp":"2026-04-20T09:00:04.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"npm run dev -- --port 3001\"}","call_id":"call_long"}}
{"timestamp":"2026-04-20T09:00:05.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_long","output":"Chunk ID: 3\nWall time: 1.0 seconds\nProcess running with session ID 2909\nOriginal token count: 5\nOutput:\n> next dev\n"}}
{"timestamp":"2026-04-20T09:00:06.000Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_long","process_id":"2909","source":"unified_exec_startup","aggregated_output":"> next dev\nError: port 3001 in use\n","exit_code":1,"duration":{"secs":2,"nanos":5000000},"status":"failed"}}
{"timestamp":"2026-04-20T09:00:07.000Z","type":"response_item","payload":{"type":"function_call","name":"write_stdin","arguments":"{\"session_id\":2909,\"chars\":\"\",\"yield_time_ms\":1000}","call_id":"call_poll"}}
{"timestamp":"2026-04-20T09:00:08.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_poll","output":"Chunk ID: 4\nWall time: 0.0 seconds\nProcess exited with code 1\nOriginal token count: 4\nOutput:\nError: port 3001 in use\n"}}
{"timestamp":"2026-04-20T09:00:09.000Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"user_1","source":"user_shell","aggregated_output":"hi\n","exit_code":0,"duration":{"secs":0,"nanos":1},"status":"completed"}}
{"timestamp":"2026-04-20T09:00:10.000Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_x","exit_code":"zero"}}
"#;

    #[test]
    fn exec_command_end_is_the_final_word() {
        for split in 0..=ENDS.lines().count() {
            let run = run_split("r.jsonl", ENDS.as_bytes(), split);
            assert_eq!(run.problems, vec![], "split {split}");
            let a = &run.actions;
            let commands: Vec<&str> = a.iter().map(command).collect();
            assert_eq!(
                commands,
                [
                    "rg -n vault src",
                    "sed -n 1,5p missing.txt",
                    "npm run dev -- --port 3001"
                ],
                "split {split}: polls are no actions"
            );
            // After the output: the end's whole output and duration replace the truncated text.
            assert_eq!(
                result(&a[0]),
                &ActionResult {
                    ok: true,
                    exit_code: Some(0),
                    output: "src/a.rs:1: vault\nsrc/b.rs:2: vault\nsrc/c.rs:3: vault\n".into(),
                    duration_ms: Some(120),
                },
                "split {split}"
            );
            // Before the output: the output that follows changes nothing.
            assert_eq!(
                result(&a[1]),
                &ActionResult {
                    ok: false,
                    exit_code: Some(1),
                    output: "sed: missing.txt: No such file or directory\n".into(),
                    duration_ms: Some(3),
                },
                "split {split}"
            );
            // A command that ran on: the end gives its result, the later poll does not undo it.
            assert_eq!(
                result(&a[2]),
                &ActionResult {
                    ok: false,
                    exit_code: Some(1),
                    output: "> next dev\nError: port 3001 in use\n".into(),
                    duration_ms: Some(2005),
                },
                "split {split}"
            );
            // The user's own `!cmd` and an end without an exit are no results of any call.
            assert!(run.orphans.is_empty(), "split {split}: {:?}", run.orphans);
        }
    }

    /// Windows sessions run PowerShell: the environment context says `<shell>powershell</shell>`
    /// and the commands are PowerShell (`recent/codex/Solsmile__codex-session.jsonl`, 0.142.5);
    /// an argv names its shell itself; `shell {command: [argv]}` is how other providers call.
    const SHELLS: &str = r#"{"timestamp":"2026-07-02T10:00:00.000Z","type":"session_meta","payload":{"id":"019f2242-0000-7000-8000-000000000001","timestamp":"2026-07-02T10:00:00.000Z","cwd":"C:\\Users\\y\\Coding\\S","originator":"codex_vscode","cli_version":"0.142.5","source":"vscode","model_provider":"openai"}}
{"timestamp":"2026-07-02T10:00:00.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>C:\\Users\\y\\Coding\\S</cwd>\n  <shell>powershell</shell>\n</environment_context>"}]}}
{"timestamp":"2026-07-02T10:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"shell_command","arguments":"{\"command\":\"Get-ChildItem -Force\",\"workdir\":\"C:\\\\Users\\\\y\\\\Coding\\\\S\"}","call_id":"call_ps"}}
{"timestamp":"2026-07-02T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls -la\"]}","call_id":"call_sh"}}
{"timestamp":"2026-07-02T10:00:03.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"pwsh.exe\",\"-Command\",\"Get-Content a.txt\"]}","call_id":"call_pwsh"}}
{"timestamp":"2026-07-02T10:00:04.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"dir\",\"shell\":\"cmd.exe\"}","call_id":"call_cmd"}}
"#;

    #[test]
    fn commands_say_which_shell_ran_them() {
        for split in 0..=SHELLS.lines().count() {
            let run = run_split("r.jsonl", SHELLS.as_bytes(), split);
            assert_eq!(run.problems, vec![], "split {split}");
            let shells: Vec<(&str, Option<&str>)> = run
                .actions
                .iter()
                .map(|a| (command(a), a.input.get("shell").and_then(Value::as_str)))
                .collect();
            assert_eq!(
                shells,
                [
                    ("Get-ChildItem -Force", Some("powershell")),
                    ("ls -la", None),
                    ("Get-Content a.txt", Some("powershell")),
                    ("dir", Some("cmd")),
                ],
                "split {split}"
            );
        }
    }

    /// The real 0.122 session with 134 `exec_command_end` events and 9 polls.
    #[test]
    fn corpus_exec_command_ends_finish_running_commands() {
        let Some(bytes) = corpus("recent/codex/soulpass__codex-session.jsonl") else {
            return;
        };
        let run = run("soulpass.jsonl", &bytes);
        assert_eq!(run.problems, vec![]);
        assert!(run.actions.iter().all(|a| a.tool != "write_stdin"));
        // 136 exec_command and 12 apply_patch calls; the 9 polls are not calls.
        assert_eq!(run.actions.len(), 148);
        let of = |line: &str| {
            run.actions
                .iter()
                .find(|a| command(a) == line)
                .and_then(|a| a.result.clone())
        };
        // Answered "Process running"; the end says it failed.
        let register = of("sed -n '1,280p' ../Civitas/frontend/app/register/page.tsx")
            .expect("the running sed has its result");
        assert_eq!((register.ok, register.exit_code), (false, Some(1)));
        let dev = of("npm run dev -- --port 3001").expect("the dev server has its result");
        assert_eq!((dev.ok, dev.exit_code), (false, Some(1)));
        // The two without an end event are answered by their output's text: one was aborted.
        let lsof = of("lsof -nP -iTCP:3000 -sTCP:LISTEN").expect("lsof has its result");
        assert_eq!(
            (lsof.exit_code, lsof.output.as_str()),
            (None, "aborted by user after 31.2s")
        );
        assert!(run.actions.iter().all(|a| a.result.is_some()));
    }

    /// A fork: its own meta, then the parent's meta and history replayed, then its own turn.
    const FORK: &str = r#"{"timestamp":"2026-07-01T12:00:00.000Z","type":"session_meta","payload":{"id":"0197c6a0-0000-7000-8000-000000000002","forked_from_id":"0197c0a0-0000-7000-8000-000000000001","timestamp":"2026-07-01T12:00:00.000Z","cwd":"/b","originator":"codex-tui","cli_version":"0.140.0","source":"cli"}}
{"timestamp":"2026-07-01T12:00:00.010Z","type":"session_meta","payload":{"id":"0197c0a0-0000-7000-8000-000000000001","timestamp":"2026-06-30T09:00:00.000Z","cwd":"/a","originator":"codex-tui","cli_version":"0.140.0","source":"cli"}}
{"timestamp":"2026-07-01T12:00:00.020Z","type":"turn_context","payload":{"turn_id":"0197c0a0-1000-7000-8000-000000000003","cwd":"/a","model":"m"}}
{"timestamp":"2026-07-01T12:00:00.030Z","type":"response_item","payload":{"type":"function_call","name":"shell_command","arguments":"{\"command\":\"make old\"}","call_id":"call_old"}}
{"timestamp":"2026-07-01T12:00:00.040Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_old","output":"Exit code: 0\nWall time: 1 seconds\nOutput:\n"}}
{"timestamp":"2026-07-01T12:05:00.000Z","type":"turn_context","payload":{"turn_id":"0197c6a1-0000-7000-8000-000000000004","cwd":"/b","model":"m"}}
{"timestamp":"2026-07-01T12:05:01.000Z","type":"response_item","payload":{"type":"function_call","name":"shell_command","arguments":"{\"command\":\"make new\"}","call_id":"call_new"}}
{"timestamp":"2026-07-01T12:05:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_new","output":"Exit code: 2\nWall time: 0.5 seconds\nOutput:\nmake: *** [new] Error 2\n"}}
"#;

    #[test]
    fn replayed_parent_history_is_skipped() {
        let run = run("fork.jsonl", FORK.as_bytes());
        assert_eq!(
            (run.problems.clone(), run.orphans.len(), run.links.len()),
            (vec![], 0, 0)
        );
        assert_eq!(run.actions.len(), 1);
        let new = &run.actions[0];
        assert_eq!(
            (new.session.as_str(), command(new)),
            ("0197c6a0-0000-7000-8000-000000000002", "make new")
        );
        assert_eq!(new.cwd.as_deref(), Some("/b"));
        assert_eq!(
            result(new),
            &ActionResult {
                ok: false,
                exit_code: Some(2),
                output: "make: *** [new] Error 2\n".into(),
                duration_ms: Some(500)
            }
        );
    }

    /// A sub-agent's rollout names its parent; `shell` argv that is not `sh -c` is quoted.
    const SUBAGENT: &str = r#"{"timestamp":"2026-03-10T08:00:00.000Z","type":"session_meta","payload":{"id":"019cd6f0-0000-7000-8000-00000000000a","timestamp":"2026-03-10T08:00:00.000Z","cwd":"/w","originator":"codex-tui","cli_version":"0.110.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"019cd6e0-0000-7000-8000-000000000009","depth":1}}}}}
{"timestamp":"2026-03-10T08:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"python3\",\"-c\",\"print('hi there')\"]}","call_id":"call_s"}}
{"timestamp":"2026-03-10T08:00:02.000Z","type":"response_item","payload":{"type":"custom_tool_call","status":"completed","call_id":"call_p","name":"apply_patch","input":"*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"}}
{"timestamp":"2026-03-10T08:00:03.000Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"call_p","output":"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA a.txt\n"}}
"#;

    #[test]
    fn subagents_are_linked_to_their_parent() {
        let run = run("sub.jsonl", SUBAGENT.as_bytes());
        let (child, parent) = (
            "019cd6f0-0000-7000-8000-00000000000a",
            "019cd6e0-0000-7000-8000-000000000009",
        );
        assert_eq!(run.links, vec![(child.to_owned(), parent.to_owned())]);
        assert_eq!(run.actions.len(), 2);
        assert!(
            run.actions
                .iter()
                .all(|a| a.parent_session.as_deref() == Some(parent))
        );
        assert_eq!(
            command(&run.actions[0]),
            r#"python3 -c 'print('\''hi there'\'')'"#
        );
        assert_eq!(run.actions[0].result, None);
        assert_eq!(
            run.actions[1].input,
            json!({"patch": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"})
        );
        let out = result(&run.actions[1]);
        assert_eq!(
            (out.ok, out.exit_code, out.output.as_str()),
            (
                true,
                Some(0),
                "Success. Updated the following files:\nA a.txt\n"
            )
        );
    }

    #[test]
    fn fixture_state_survives_a_restart_after_any_line() {
        for (name, text) in [
            ("bare", BARE),
            ("unified", UNIFIED),
            ("fork", FORK),
            ("sub", SUBAGENT),
        ] {
            let whole = run(
                "/x/rollout-2026-01-01T00-00-00-aaaaaaaa-0000-0000-0000-000000000000.jsonl",
                text.as_bytes(),
            );
            for split in 0..=text.lines().count() {
                let path =
                    "/x/rollout-2026-01-01T00-00-00-aaaaaaaa-0000-0000-0000-000000000000.jsonl";
                assert_eq!(
                    run_split(path, text.as_bytes(), split),
                    whole,
                    "{name}: split after {split}"
                );
            }
        }
    }

    #[test]
    fn session_ids_fall_back_to_the_file_name() {
        let line = b"{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":\"{}\",\"call_id\":\"c\"}\n";
        let path = "/h/.codex/sessions/2025/09/01/rollout-2025-09-01T10-00-00-0199a0b1-1111-7222-8333-444455556666.jsonl";
        assert_eq!(
            run(path, line).actions[0].session,
            "0199a0b1-1111-7222-8333-444455556666"
        );
        assert_eq!(
            run("/tmp/odd-name.jsonl", line).actions[0].session,
            "odd-name"
        );
        // A session_meta without an id keeps the fallback.
        let meta = b"{\"timestamp\":\"2026-01-01T00:00:00Z\",\"type\":\"session_meta\",\"payload\":{\"cwd\":\"/r\"}}\n";
        let run = run("/tmp/odd-name.jsonl", &[&meta[..], line].concat());
        assert_eq!(
            (
                run.actions[0].session.as_str(),
                run.actions[0].cwd.as_deref()
            ),
            ("odd-name", Some("/r"))
        );
    }

    #[test]
    fn command_lines_from_argv() {
        assert_eq!(
            argv_to_command(&["bash", "-lc", "cargo test"]),
            "cargo test"
        );
        assert_eq!(
            argv_to_command(&["/bin/zsh", "-c", "ls | wc -l"]),
            "ls | wc -l"
        );
        assert_eq!(
            argv_to_command(&["powershell.exe", "-NoProfile", "-Command", "dir"]),
            "dir"
        );
        assert_eq!(argv_to_command(&["cmd.exe", "/c", "dir /s"]), "dir /s");
        assert_eq!(
            argv_to_command(&["bash", "script.sh", "-c", "x"]),
            "bash script.sh -c x"
        );
        assert_eq!(
            argv_to_command(&["git", "commit", "-m", "it's done", ""]),
            r#"git commit -m 'it'\''s done' ''"#
        );
        assert_eq!(argv_to_command(&[]), "");
        assert_eq!(resolve_dir(Some("/r"), "."), Some("/r".into()));
        assert_eq!(resolve_dir(Some("/r/"), "./a/b"), Some("/r/a/b".into()));
        assert_eq!(resolve_dir(Some(r"C:\r"), "a"), Some(r"C:\r\a".into()));
        assert_eq!(resolve_dir(None, "a"), None);
        assert_eq!(resolve_dir(None, "/abs"), Some("/abs".into()));
        assert_eq!(
            uuid_v7_ms("019aad50-a7e6-7422-b7a8-0b384290624f"),
            Some(0x019aad50a7e6)
        );
        assert_eq!(uuid_v7_ms("5973b6c0-94b8-487b-a530-2aeb6098ae0e"), None);
    }

    #[test]
    fn output_forms() {
        let parse = |v: Value| parse_output(&v).expect("parses").result;
        let r = parse(json!(
            "Exit code: 0\nWall time: 1.25 seconds\nTotal output lines: 2\nOutput:\na\nb"
        ));
        assert_eq!(
            (r.ok, r.exit_code, r.duration_ms, r.output.as_str()),
            (true, Some(0), Some(1250), "a\nb")
        );
        // Not a header: kept whole, exit code read from the text.
        let r = parse(json!("something\nExit code: 3\nOutput:\nx"));
        assert_eq!(
            (r.ok, r.exit_code, r.output.as_str()),
            (false, Some(3), "something\nExit code: 3\nOutput:\nx")
        );
        let r = parse(json!("Exit code: 7\nWall time: 0 seconds"));
        assert_eq!((r.ok, r.exit_code, r.output.as_str()), (false, Some(7), ""));
        let r = parse(json!(
            "{\"output\":\"hi\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":-1}}"
        ));
        assert_eq!((r.ok, r.duration_ms, r.output.as_str()), (true, None, "hi"));
        // JSON that is a tool's own output, not Codex's wrapper, stays text.
        let r = parse(json!("{\"items\":[1,2]}"));
        assert_eq!((r.ok, r.output.as_str()), (true, "{\"items\":[1,2]}"));
        assert!(!parse(json!("aborted")).ok);
        assert!(!parse(json!("err: ToolError(\"boom\")")).ok);
        assert!(!parse(json!({"output": "x", "metadata": {"exit_code": 0}, "success": false})).ok);
        assert!(parse_output(&json!(5)).is_err());
        assert!(parse_output(&json!({"x": 1})).is_err());
        assert!(parse_output(&Value::Null).is_err());
    }

    #[test]
    fn untrusted_records_never_panic() {
        let long = "x".repeat(1 << 20);
        let big_output = json!({"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c", "output": long}}).to_string();
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let records: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"   ".to_vec(),
            b"{\"timestamp\":\"2026-01-01T00:00:00Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"function_ca".to_vec(),
            b"{\"type\":\"\xff\xfe\"}".to_vec(),
            b"\xff\xfe\x00\x01binary".to_vec(),
            b"[1,2,3]".to_vec(),
            b"null".to_vec(),
            deep.into_bytes(),
            big_output.into_bytes(),
            long.clone().into_bytes(),
        ];
        let fields = [
            r#"{"type":5,"payload":{}}"#,
            r#"{"type":"response_item","payload":7}"#,
            r#"{"type":"session_meta","payload":"x"}"#,
            r#"{"type":"session_meta","payload":{"id":5,"cwd":7,"timestamp":[],"source":{"subagent":3}}}"#,
            r#"{"type":"session_meta","payload":{"id":"a","parent_thread_id":9,"source":{"subagent":{"thread_spawn":{"parent_thread_id":[]}}}}}"#,
            r#"{"type":"turn_context","payload":{"cwd":5,"turn_id":{}}}"#,
            r#"{"timestamp":12,"type":"response_item","payload":{"type":7}}"#,
            r#"{"timestamp":{},"type":"response_item","payload":{"type":"function_call","name":5,"arguments":"{}","call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":5,"call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":5}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[1,{}],\"workdir\":5}","call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell_command","arguments":"{\"command\":5}","call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"write_stdin","arguments":"{\"session_id\":[]}","call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"[1,2]","call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":5,"call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"local_shell_call","call_id":"c","action":"ls"}}"#,
            r#"{"type":"response_item","payload":{"type":"local_shell_call","call_id":[],"action":{}}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":5,"output":"x"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","output":"x"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":5}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"{\"output\":5,\"metadata\":{\"exit_code\":\"0\",\"duration_seconds\":\"1\"}}"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"{\"metadata\":7}"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"Exit code: 99999999999\nOutput:\n"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"Wall time: 1e308 seconds\nOutput:\n"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":[5,{"text":7}]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":"<environment_context><cwd>"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"text":"<environment_context><cwd>/x"}]}}"#,
            r#"{"id":5,"instructions":null}"#,
            r#"{"record_type":5}"#,
        ];
        let mut parser = Codex.parser(
            Path::new("/x/rollout-bad.jsonl"),
            Some(json!({"running": 5, "polls": [[1, 2], "x"]})),
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
        assert!(problems >= 20, "only {problems} problems");
        // Garbage state is ignored, not trusted.
        for state in [
            json!(5),
            json!({"session": 5, "cwd": [], "replaying": "yes", "running": [["a"]]}),
        ] {
            let parser = Codex.parser(Path::new("/x/s.jsonl"), Some(state));
            assert_eq!(parser.state()["session"], "s");
        }
    }

    #[test]
    fn sniff_recognises_codex_files_only() {
        let path = Path::new("/tmp/some.jsonl");
        assert!(Codex.sniff(path, BARE.as_bytes()));
        assert!(Codex.sniff(path, UNIFIED.as_bytes()));
        assert!(Codex.sniff(Path::new("/s/rollout-2025-01-01T00-00-00-x.jsonl"), b""));
        assert!(!Codex.sniff(path, b"{\"v\":1,\"session\":\"s\",\"tool\":\"shell\"}\n"));
        assert!(!Codex.sniff(
            path,
            b"{\"id\":\"x\",\"timestamp\":\"2025-01-01T00:00:00Z\"}\n"
        ));
        assert!(!Codex.sniff(path, b"\xff\xfe"));
        assert!(!Codex.sniff(path, b""));
        let root = corpus_root();
        if corpus("PROVENANCE.md").is_none() {
            return;
        }
        let mut dirs = vec![root.clone()];
        let mut seen = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("corpus dir readable") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let bytes = std::fs::read(&path).expect("corpus file readable");
                let head = &bytes[..bytes.len().min(64 * 1024)];
                let expected = path.parent().and_then(|p| p.file_name()) == Some("codex".as_ref());
                assert_eq!(Codex.sniff(&path, head), expected, "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen > 40, "only {seen} corpus files");
    }
}
