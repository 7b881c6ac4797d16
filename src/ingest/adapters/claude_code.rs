//! Claude Code session transcripts: `~/.claude/projects/<dir>/<session>.jsonl`.
//!
//! One JSON record per line. What matters here:
//!
//! - `assistant` records carry `tool_use` blocks (usually one content block per record; the
//!   records of one API message share `message.id` and `requestId`). Each becomes an
//!   [`Item::Action`] with `call_id` = the block's `id`, `tool` = its `name`, `input` = its
//!   `input` object as logged (Bash's has `command`).
//! - `user` records carry `tool_result` blocks. Each becomes an [`Item::Result`] joined by
//!   `tool_use_id`; `ok` is false for `is_error`, an `interrupted` command, a non-zero exit code
//!   or a `success: false` / `status: "failed"` in the record's structured `toolUseResult`. The
//!   exit code comes from `toolUseResult.exitCode` (BashOutput), else from an error text that
//!   starts with "Exit code N" (what Claude Code writes for a failed Bash command). The duration
//!   comes from `toolUseResult.durationMs` / `totalDurationMs` / `durationSeconds` when present.
//! - Everything else (`summary`, `queue-operation`, `file-history-snapshot`, `system`,
//!   `progress`, text and thinking blocks, …) yields nothing and is not a problem.
//!
//! Sessions. A record belongs to its `sessionId` (the file stem when missing). Sub-agents are
//! sessions of their own, linked to the parent with one [`Item::SessionLink`]:
//! - 1.0.x writes Task sub-agents inline, with `isSidechain: true`: each run starts at a record
//!   whose `parentUuid` is null and continues along `parentUuid`. Its session is
//!   `<sessionId>:sidechain:<uuid of the run's first record>`.
//! - 2.x writes them to `agent-<id>.jsonl` beside the session file or to
//!   `<session>/subagents/agent-<id>.jsonl`; their records carry `isSidechain: true`, `agentId`
//!   and the parent's `sessionId`. Their session is `<sessionId>:agent:<agentId>`.
//!
//! State (persisted through [`RecordParser::state`]): the last [`SEEN_CAP`] tool_use ids and
//! tool_result ids emitted (streaming can repeat a content block on several lines: each call and
//! each result is emitted once), the sub-agent sessions already linked, and a map from the uuids
//! of the latest [`SIDECHAIN_CAP`] inline sidechain records to their run. All bounded, so the
//! checkpoint stays small; a repeat further back than the window would be emitted again (the
//! store's UNIQUE (session, call_id) still holds).
//!
//! `seq` = `pos.offset << 8 | index`, where `index` is the number of the action within its
//! record (capped at 255), so it increases in file order within every session of the file.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::action::{Action, ActionResult, Source, exit_code_from_text};
use crate::ingest::adapters::lenient::{Bool, ListOr, Num, Number, Obj, Str};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// The Claude Code transcript format.
pub struct ClaudeCode;

/// How many recent tool_use ids (and, separately, tool_result ids) are remembered for dedupe.
const SEEN_CAP: usize = 512;
/// How many recent inline sidechain record uuids are remembered to find their run.
const SIDECHAIN_CAP: usize = 2048;
/// How many linked sub-agent sessions are remembered.
const LINKS_CAP: usize = 256;
/// Version of the persisted state's layout.
const STATE_VERSION: u64 = 1;
/// How many lines of the head `sniff` looks at.
const SNIFF_LINES: usize = 64;

impl Format for ClaudeCode {
    fn source(&self) -> Source {
        Source::ClaudeCode
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(ClaudeParser::new(path, state.as_ref()))
    }

    /// Claude Code 2.1 writes `<session>/subagents/agent-<id>.meta.json` (`agentType`,
    /// `description`) beside each sub-agent's transcript: the transcript is linked to its parent
    /// by its folder, and the meta holds no call.
    fn companion(&self, path: &Path) -> Option<&'static str> {
        let name = path.file_name()?.to_str()?;
        let in_subagents = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|dir| dir == "subagents");
        (in_subagents && name.starts_with("agent-") && name.ends_with(".meta.json"))
            .then_some("a Claude Code sub-agent's description (agentType, description)")
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        sniff(path, head)
    }
}

/// Whether `head` looks like a Claude Code transcript: a `.jsonl` file whose first records
/// include a `user`/`assistant` record with `sessionId`, `uuid`, `parentUuid` and `message`, or
/// only Claude Code's bookkeeping records (`summary`, `queue-operation`,
/// `file-history-snapshot`) so far.
fn sniff(path: &Path, head: &[u8]) -> bool {
    let is_jsonl = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
    if !is_jsonl {
        return false;
    }
    let text = String::from_utf8_lossy(head);
    let mut parsed_any = false;
    let mut saw_bookkeeping = false;
    for line in text.lines().take(SNIFF_LINES) {
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        parsed_any = true;
        if is_message_record(&obj) {
            return true;
        }
        if is_bookkeeping_record(&obj) {
            saw_bookkeeping = true;
        } else if obj.get("type").and_then(Value::as_str).is_none() {
            // An object without a `type`: some other JSON Lines format.
            return false;
        }
    }
    if parsed_any {
        return saw_bookkeeping;
    }
    // No complete line in the head (a first record over 64 KiB): look for the field names that
    // come before `message` in Claude Code's records.
    text.trim_start().starts_with('{')
        && ["\"parentUuid\"", "\"sessionId\"", "\"isSidechain\""]
            .iter()
            .all(|key| text.contains(key))
}

/// A `user` or `assistant` record as Claude Code writes them.
fn is_message_record(obj: &Map<String, Value>) -> bool {
    matches!(
        obj.get("type").and_then(Value::as_str),
        Some("user" | "assistant")
    ) && obj.get("sessionId").is_some_and(Value::is_string)
        && obj.get("uuid").is_some_and(Value::is_string)
        && obj.contains_key("parentUuid")
        && obj.get("message").is_some_and(Value::is_object)
}

/// Claude Code's records that are not messages but identify the format.
fn is_bookkeeping_record(obj: &Map<String, Value>) -> bool {
    match obj.get("type").and_then(Value::as_str) {
        Some("summary") => obj.contains_key("leafUuid"),
        Some("queue-operation") => {
            obj.contains_key("operation") && obj.get("sessionId").is_some_and(Value::is_string)
        }
        Some("file-history-snapshot") => {
            obj.contains_key("messageId") && obj.contains_key("snapshot")
        }
        _ => false,
    }
}

/// A set of strings that remembers only the latest `cap` insertions.
#[derive(Debug)]
struct RecentSet {
    order: VecDeque<String>,
    set: HashSet<String>,
    cap: usize,
}

impl RecentSet {
    fn new(cap: usize) -> Self {
        RecentSet {
            order: VecDeque::new(),
            set: HashSet::new(),
            cap,
        }
    }

    /// Inserts `key`; false when it was already there.
    fn insert(&mut self, key: &str) -> bool {
        if self.set.contains(key) {
            return false;
        }
        self.order.push_back(key.to_owned());
        self.set.insert(key.to_owned());
        while self.order.len() > self.cap {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }

    fn to_value(&self) -> Value {
        Value::Array(self.order.iter().cloned().map(Value::String).collect())
    }

    fn from_value(value: Option<&Value>, cap: usize) -> Self {
        let mut set = RecentSet::new(cap);
        for key in value.and_then(Value::as_array).into_iter().flatten() {
            if let Some(key) = key.as_str() {
                set.insert(key);
            }
        }
        set
    }
}

/// Which inline sidechain run (named by the uuid of its first record) each recent sidechain
/// record belongs to.
#[derive(Debug, Default)]
struct Sidechains {
    order: VecDeque<String>,
    run_of: HashMap<String, String>,
    last_run: Option<String>,
}

impl Sidechains {
    /// The run of a sidechain record, remembering it for the records that follow.
    fn resolve(&mut self, uuid: Option<&str>, parent: Option<&str>) -> String {
        let run = match parent {
            Some(parent) => match (self.run_of.get(parent), &self.last_run) {
                (Some(run), _) => run.clone(),
                // The parent was forgotten or never seen: the latest run is the best guess.
                (None, Some(last)) => last.clone(),
                (None, None) => uuid.unwrap_or("unknown").to_owned(),
            },
            None => uuid.unwrap_or("unknown").to_owned(),
        };
        if let Some(uuid) = uuid {
            self.remember(uuid, &run);
        }
        self.last_run = Some(run.clone());
        run
    }

    fn remember(&mut self, uuid: &str, run: &str) {
        if self
            .run_of
            .insert(uuid.to_owned(), run.to_owned())
            .is_none()
        {
            self.order.push_back(uuid.to_owned());
        }
        while self.order.len() > SIDECHAIN_CAP {
            if let Some(old) = self.order.pop_front() {
                self.run_of.remove(&old);
            }
        }
    }

    fn to_value(&self) -> Value {
        let pairs = self
            .order
            .iter()
            .filter_map(|uuid| {
                let run = self.run_of.get(uuid)?;
                Some(Value::Array(vec![
                    Value::String(uuid.clone()),
                    Value::String(run.clone()),
                ]))
            })
            .collect();
        Value::Array(pairs)
    }

    fn from_value(pairs: Option<&Value>, last_run: Option<&Value>) -> Self {
        let mut chains = Sidechains::default();
        for pair in pairs.and_then(Value::as_array).into_iter().flatten() {
            if let Some([Value::String(uuid), Value::String(run)]) =
                pair.as_array().map(Vec::as_slice)
            {
                chains.remember(uuid, run);
            }
        }
        chains.last_run = last_run.and_then(Value::as_str).map(str::to_owned);
        chains
    }
}

/// The parser for one transcript file.
struct ClaudeParser {
    /// Session id for records without `sessionId`.
    fallback_session: String,
    /// The sub-agent id in the file name (`agent-<id>.jsonl`), if any.
    file_agent: Option<String>,
    calls: RecentSet,
    results: RecentSet,
    links: RecentSet,
    sidechains: Sidechains,
}

impl ClaudeParser {
    fn new(path: &Path, state: Option<&Value>) -> Self {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file_agent = stem
            .strip_prefix("agent-")
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        // `<session>/subagents/agent-<id>.jsonl`: the session is the folder above `subagents`.
        let parent_dir = path.parent();
        let in_subagents = parent_dir
            .and_then(Path::file_name)
            .is_some_and(|name| name == "subagents");
        let fallback_session = match parent_dir.and_then(Path::parent).and_then(Path::file_name) {
            Some(session) if in_subagents && file_agent.is_some() => {
                session.to_string_lossy().into_owned()
            }
            _ => stem,
        };
        let state = state
            .and_then(Value::as_object)
            .filter(|s| s.get("v").and_then(Value::as_u64) == Some(STATE_VERSION));
        let field = |name: &str| state.and_then(|s| s.get(name));
        ClaudeParser {
            fallback_session,
            file_agent,
            calls: RecentSet::from_value(field("calls"), SEEN_CAP),
            results: RecentSet::from_value(field("results"), SEEN_CAP),
            links: RecentSet::from_value(field("links"), LINKS_CAP),
            sidechains: Sidechains::from_value(field("sidechains"), field("last_run")),
        }
    }
}

/// The fields of a record that matter, borrowed from the line. Everything else (message text,
/// thinking, usage, file contents in `toolUseResult`) is skipped without being allocated.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawRecord<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    message: Obj<RawMessage<'a>>,
    #[serde(rename = "sessionId", borrow)]
    session_id: Str<'a>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Bool,
    #[serde(rename = "agentId", borrow)]
    agent_id: Str<'a>,
    #[serde(borrow)]
    uuid: Str<'a>,
    #[serde(rename = "parentUuid", borrow)]
    parent_uuid: Str<'a>,
    #[serde(borrow)]
    timestamp: Str<'a>,
    #[serde(borrow)]
    cwd: Str<'a>,
    #[serde(rename = "toolUseResult", borrow)]
    tool_use_result: Obj<ToolUseResult<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMessage<'a> {
    #[serde(borrow)]
    content: ListOr<'a, Obj<RawBlock<'a>>>,
}

/// A content block: `tool_use`, `tool_result`, or another kind that is skipped.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_use_id: Str<'a>,
    #[serde(borrow)]
    content: ListOr<'a, Obj<TextPart<'a>>>,
    is_error: Bool,
}

/// A part of a tool_result's content list; only `text` parts are kept.
#[derive(Deserialize, Default)]
#[serde(default)]
struct TextPart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
}

/// The structured result Claude Code records beside a tool_result (its other fields, such as
/// file contents and patches, are skipped).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolUseResult<'a> {
    #[serde(borrow)]
    stdout: Str<'a>,
    #[serde(borrow)]
    stderr: Str<'a>,
    #[serde(rename = "exitCode")]
    exit_code: Num,
    interrupted: Bool,
    success: Bool,
    #[serde(borrow)]
    status: Str<'a>,
    #[serde(rename = "durationMs")]
    duration_ms: Num,
    #[serde(rename = "totalDurationMs")]
    total_duration_ms: Num,
    #[serde(rename = "durationSeconds")]
    duration_seconds: Num,
}

/// A content block worth an item, checked before anything is emitted.
enum Block<'r, 'a> {
    Call {
        id: &'r str,
        name: &'r str,
        input: Value,
    },
    Result {
        call_id: &'r str,
        block: &'r RawBlock<'a>,
    },
}

/// Picks the tool_use and tool_result blocks of a message's content.
fn blocks_of<'r, 'a>(content: &'r [Obj<RawBlock<'a>>]) -> Result<Vec<Block<'r, 'a>>, Problem> {
    let mut blocks = Vec::new();
    for block in content {
        let Some(block) = &block.0 else {
            continue;
        };
        match block.kind.0.as_deref() {
            Some("tool_use") => {
                let id = block
                    .id
                    .get()
                    .ok_or_else(|| Problem::new("tool_use block without a string id"))?;
                let name = block
                    .name
                    .get()
                    .ok_or_else(|| Problem::new("tool_use block without a string name"))?;
                let input = match block.input {
                    None => Value::Object(Map::new()),
                    Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
                        Ok(input @ Value::Object(_)) => input,
                        Ok(Value::Null) => Value::Object(Map::new()),
                        _ => return Err(Problem::new("tool_use input is not an object")),
                    },
                };
                blocks.push(Block::Call { id, name, input });
            }
            Some("tool_result") => {
                let call_id = block.tool_use_id.get().ok_or_else(|| {
                    Problem::new("tool_result block without a string tool_use_id")
                })?;
                blocks.push(Block::Result { call_id, block });
            }
            _ => {}
        }
    }
    Ok(blocks)
}

/// The text of a tool_result's `content`: a string, or the text blocks of a list joined.
fn content_text(content: &ListOr<'_, Obj<TextPart<'_>>>) -> String {
    match content {
        ListOr::Text(text) => text.clone().into_owned(),
        ListOr::List(parts) => {
            let mut text = String::new();
            let texts = parts
                .iter()
                .filter_map(|part| part.0.as_ref())
                .filter(|part| part.kind.0.as_deref() == Some("text"))
                .filter_map(|part| part.text.0.as_deref());
            for (i, part) in texts.enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                text.push_str(part);
            }
            text
        }
        ListOr::Absent | ListOr::Other => String::new(),
    }
}

/// A duration in milliseconds from a JSON number, if it is a sane one.
fn millis(value: Num, scale: f64) -> Option<u64> {
    let value = value.0?;
    if let Number::Unsigned(ms) = value {
        return u64::try_from(u128::from(ms) * scale as u128).ok();
    }
    let ms = value.as_f64() * scale;
    if ms.is_finite() && (0.0..1e15).contains(&ms) {
        Some(ms.round() as u64)
    } else {
        None
    }
}

/// Builds a result from a tool_result block and the record's structured `toolUseResult`.
fn result_of(block: &RawBlock<'_>, structured: Option<&ToolUseResult<'_>>) -> ActionResult {
    let is_error = block.is_error.0 == Some(true);
    let mut output = content_text(&block.content);
    let empty = ToolUseResult::default();
    let s = structured.unwrap_or(&empty);
    if output.is_empty() {
        let stdout = s.stdout.0.as_deref().unwrap_or("");
        let stderr = s.stderr.0.as_deref().unwrap_or("");
        output = match (stdout.is_empty(), stderr.is_empty()) {
            (_, true) => stdout.to_owned(),
            (true, false) => stderr.to_owned(),
            (false, false) => format!("{stdout}\n{stderr}"),
        };
    }
    let mut exit_code = s
        .exit_code
        .0
        .and_then(Number::as_i64)
        .and_then(|code| i32::try_from(code).ok());
    if exit_code.is_none() && is_error {
        // Claude Code starts a failed Bash result with "Exit code N"; only that line is read,
        // so a number in the command's own output is never taken for its exit code.
        let first_line = output.lines().next().unwrap_or("");
        if first_line.starts_with("Exit code") {
            exit_code = exit_code_from_text(first_line);
        }
    }
    let interrupted = s.interrupted.0 == Some(true);
    let failed = s.success.0 == Some(false) || s.status.0.as_deref() == Some("failed");
    let duration_ms = millis(s.duration_ms, 1.0)
        .or_else(|| millis(s.total_duration_ms, 1.0))
        .or_else(|| millis(s.duration_seconds, 1000.0));
    ActionResult {
        ok: !is_error && !interrupted && !failed && exit_code.is_none_or(|code| code == 0),
        exit_code,
        output,
        duration_ms,
    }
}

impl RecordParser for ClaudeParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        if record.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let parsed: Obj<RawRecord<'_>> = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Some(rec) = parsed.0 else {
            return Err(Problem::new("record is not a JSON object"));
        };
        let kind = match rec.kind.0.as_deref() {
            Some(kind @ ("user" | "assistant")) => kind,
            // summary, queue-operation, file-history-snapshot, system, progress, new kinds.
            _ => return Ok(()),
        };
        let message = rec
            .message
            .0
            .as_ref()
            .ok_or_else(|| Problem::new(format!("{kind} record without a message object")))?;
        let content: &[Obj<RawBlock<'_>>] = match &message.content {
            ListOr::List(content) => content,
            ListOr::Text(_) | ListOr::Absent => &[],
            ListOr::Other => {
                return Err(Problem::new(
                    "message content is neither text nor a list of blocks",
                ));
            }
        };
        let blocks = blocks_of(content)?;

        // The session, and for a sub-agent the session that started it.
        let base = rec.session_id.get().unwrap_or(&self.fallback_session);
        let (session, parent) = if rec.is_sidechain.0 == Some(true) {
            let agent = rec.agent_id.get().or(self.file_agent.as_deref());
            let session = match agent {
                Some(agent) => format!("{base}:agent:{agent}"),
                None => {
                    let run = self
                        .sidechains
                        .resolve(rec.uuid.get(), rec.parent_uuid.get());
                    format!("{base}:sidechain:{run}")
                }
            };
            (session, Some(base.to_owned()))
        } else {
            (base.to_owned(), None)
        };
        if let Some(parent) = &parent
            && self.links.insert(&session)
        {
            out.push(Item::SessionLink {
                session: session.clone(),
                parent: parent.clone(),
            });
        }
        if blocks.is_empty() {
            return Ok(());
        }

        let ts = rec
            .timestamp
            .get()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        let cwd = rec.cwd.get().map(str::to_owned);
        let result_count = blocks
            .iter()
            .filter(|b| matches!(b, Block::Result { .. }))
            .count();
        // The structured result describes the record's tool_result only when there is one.
        let structured = rec.tool_use_result.0.as_ref().filter(|_| result_count == 1);
        let mut index: u64 = 0;
        for block in blocks {
            match block {
                Block::Call { id, name, input } => {
                    if !self.calls.insert(id) {
                        continue;
                    }
                    out.push(Item::Action(Action {
                        session: session.clone(),
                        seq: (pos.offset << 8) | index.min(255),
                        ts,
                        source: Source::ClaudeCode,
                        cwd: cwd.clone(),
                        tool: name.to_owned(),
                        input,
                        call_id: Some(id.to_owned()),
                        parent_session: parent.clone(),
                        result: None,
                    }));
                    index += 1;
                }
                Block::Result { call_id, block } => {
                    if !self.results.insert(call_id) {
                        continue;
                    }
                    out.push(Item::Result(LateResult {
                        session: session.clone(),
                        call_id: call_id.to_owned(),
                        result: result_of(block, structured),
                        replaces: false,
                    }));
                }
            }
        }
        Ok(())
    }

    fn state(&self) -> Value {
        let mut state = Map::new();
        state.insert("v".into(), Value::from(STATE_VERSION));
        state.insert("calls".into(), self.calls.to_value());
        state.insert("results".into(), self.results.to_value());
        state.insert("links".into(), self.links.to_value());
        state.insert("sidechains".into(), self.sidechains.to_value());
        if let Some(run) = &self.sidechains.last_run {
            state.insert("last_run".into(), Value::String(run.clone()));
        }
        Value::Object(state)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// What a run over some bytes produced, with results joined onto their actions.
    #[derive(Default)]
    struct Run {
        actions: Vec<Action>,
        by_call: HashMap<(String, String), usize>,
        links: Vec<(String, String)>,
        results: usize,
        errors: usize,
        orphans: Vec<String>,
        problems: Vec<(u64, String)>,
        records: u64,
    }

    impl Run {
        fn take(&mut self, item: Item) {
            match item {
                Item::Action(action) => {
                    if let Some(call_id) = &action.call_id {
                        let key = (action.session.clone(), call_id.clone());
                        self.by_call.insert(key, self.actions.len());
                    }
                    self.actions.push(action);
                }
                Item::Result(late) => {
                    self.results += 1;
                    if !late.result.ok {
                        self.errors += 1;
                    }
                    match self
                        .by_call
                        .get(&(late.session.clone(), late.call_id.clone()))
                    {
                        Some(&at) => self.actions[at].result = Some(late.result),
                        None => self.orphans.push(late.call_id),
                    }
                }
                Item::SessionLink { session, parent } => self.links.push((session, parent)),
            }
        }

        fn tools(&self) -> BTreeMap<String, usize> {
            let mut tools = BTreeMap::new();
            for action in &self.actions {
                *tools.entry(action.tool.clone()).or_insert(0) += 1;
            }
            tools
        }

        fn sessions(&self) -> BTreeMap<String, usize> {
            let mut sessions = BTreeMap::new();
            for action in &self.actions {
                *sessions.entry(action.session.clone()).or_insert(0) += 1;
            }
            sessions
        }

        fn command(&self, prefix: &str) -> Vec<&Action> {
            self.actions
                .iter()
                .filter(|a| {
                    a.input
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| c.starts_with(prefix))
                })
                .collect()
        }
    }

    /// Cuts `bytes` into lines as the tailer does for `Framing::Lines` (a final line without a
    /// newline counts, as in a one-shot ingest) and feeds them from byte `offset`, line `line`.
    fn feed(parser: &mut dyn RecordParser, bytes: &[u8], offset: u64, line: u64, run: &mut Run) {
        let (mut offset, mut line, mut rest) = (offset, line, bytes);
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let mut items = Vec::new();
            run.records += 1;
            if let Err(problem) = parser.record(&rest[..end], Position { offset, line }, &mut items)
            {
                run.problems.push((line, problem.reason));
            }
            for item in items {
                run.take(item);
            }
            offset += end as u64 + 1;
            line += 1;
            rest = &rest[(end + 1).min(rest.len())..];
        }
    }

    fn run_at(path: &str, bytes: &[u8]) -> Run {
        let mut parser = ClaudeCode.parser(Path::new(path), None);
        let mut run = Run::default();
        feed(parser.as_mut(), bytes, 0, 1, &mut run);
        run
    }

    fn run(bytes: &str) -> Run {
        run_at(
            "/home/u/.claude/projects/-home-u-proj/s1.jsonl",
            bytes.as_bytes(),
        )
    }

    const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

    /// A corpus file, or None (after saying so) when the corpus is absent outside CI.
    fn corpus(name: &str) -> Option<Vec<u8>> {
        let path = format!("{CORPUS}/claude-code/{name}");
        match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(_) => {
                let message = format!("skipped: corpus not found at {path}");
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("{message}");
                }
                eprintln!("{message}");
                None
            }
        }
    }

    /// Runs a corpus file and checks what holds for every file.
    fn corpus_run(name: &str) -> Option<Run> {
        let bytes = corpus(name)?;
        let run = run_at(&format!("/c/{name}"), &bytes);
        assert!(run.problems.is_empty(), "{name}: {:?}", run.problems);
        assert!(
            run.orphans.is_empty(),
            "{name}: orphan results {:?}",
            run.orphans
        );
        let mut last_seq: HashMap<&str, u64> = HashMap::new();
        for action in &run.actions {
            assert_eq!(action.source, Source::ClaudeCode);
            assert!(
                action.ts.is_some() && action.cwd.is_some(),
                "{name}: {action:?}"
            );
            assert!(action.input.is_object());
            if action.tool == "Bash" {
                assert!(action.input.get("command").is_some_and(Value::is_string));
            }
            if let Some(before) = last_seq.insert(&action.session, action.seq) {
                assert!(
                    before < action.seq,
                    "{name}: seq goes back in {}",
                    action.session
                );
            }
        }
        Some(run)
    }

    fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    struct Expect {
        file: &'static str,
        records: u64,
        tools: &'static [(&'static str, usize)],
        results: usize,
        errors: usize,
        sidechains: usize,
    }

    /// PROVENANCE.md's counts per file (its list for fe5e1c67 omits Glob 2, but its total of
    /// 167 calls includes them).
    const EXPECTED: [Expect; 6] = [
        Expect {
            file: "sniffly__d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl",
            records: 137,
            tools: &[
                ("Edit", 17),
                ("TodoWrite", 13),
                ("Bash", 12),
                ("Write", 8),
                ("Read", 4),
                ("NotebookEdit", 4),
                ("WebSearch", 1),
            ],
            // The last record is a Bash call whose result was never written.
            results: 58,
            errors: 4,
            sidechains: 0,
        },
        Expect {
            file: "sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl",
            records: 21,
            tools: &[("Bash", 7)],
            results: 7,
            errors: 2,
            sidechains: 0,
        },
        Expect {
            file: "ccviewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
            records: 438,
            tools: &[
                ("Bash", 61),
                ("Write", 33),
                ("Read", 28),
                ("TodoWrite", 19),
                ("Edit", 8),
                ("Task", 5),
                ("BashOutput", 5),
                ("KillBash", 3),
                ("MultiEdit", 3),
                ("Glob", 2),
            ],
            results: 167,
            errors: 23,
            sidechains: 5,
        },
        Expect {
            file: "ccviewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
            records: 53,
            tools: &[
                ("Bash", 5),
                ("TodoWrite", 5),
                ("Glob", 3),
                ("Task", 3),
                ("Read", 3),
                ("MultiEdit", 1),
                ("Edit", 1),
            ],
            results: 21,
            errors: 3,
            sidechains: 2,
        },
        Expect {
            file: "claude-reliability__python-to-rust-port.jsonl",
            records: 97,
            tools: &[
                ("Bash", 16),
                ("TodoWrite", 10),
                ("Write", 7),
                ("Read", 3),
                ("Task", 1),
                ("Edit", 1),
                ("Glob", 1),
            ],
            results: 39,
            errors: 0,
            sidechains: 0,
        },
        Expect {
            file: "claude-reliability__coverage-test-fix.jsonl",
            records: 38,
            tools: &[("Bash", 5), ("Read", 3), ("Edit", 3), ("Glob", 2)],
            results: 13,
            errors: 1,
            sidechains: 0,
        },
    ];

    #[test]
    fn corpus_counts_match_provenance() {
        for expect in &EXPECTED {
            let Some(run) = corpus_run(expect.file) else {
                return;
            };
            let name = expect.file;
            assert_eq!(run.records, expect.records, "{name}: records");
            assert_eq!(run.tools(), counts(expect.tools), "{name}: calls per tool");
            let calls: usize = expect.tools.iter().map(|(_, n)| n).sum();
            assert_eq!(run.actions.len(), calls, "{name}: calls");
            assert_eq!(run.results, expect.results, "{name}: results");
            assert_eq!(run.errors, expect.errors, "{name}: failed results");
            let joined = run.actions.iter().filter(|a| a.result.is_some()).count();
            assert_eq!(joined, expect.results, "{name}: results joined");
            // The session is the file's: its stem after the `repo__` prefix, or the harness's.
            let sessions = run.sessions();
            let main: BTreeSet<&str> = sessions
                .keys()
                .map(|s| s.split(':').next().unwrap_or(s))
                .collect();
            assert_eq!(main.len(), 1, "{name}: {sessions:?}");
            assert_eq!(
                run.links.len(),
                expect.sidechains,
                "{name}: {:?}",
                run.links
            );
            assert_eq!(
                sessions.len(),
                1 + expect.sidechains,
                "{name}: {sessions:?}"
            );
        }
    }

    #[test]
    fn corpus_is_error_results_are_failures() {
        // Every is_error result is a failure, and every failure is an is_error result.
        for expect in &EXPECTED {
            let Some(bytes) = corpus(expect.file) else {
                return;
            };
            let text = String::from_utf8_lossy(&bytes);
            let flagged = text.matches("\"is_error\":true").count()
                + text.matches("\"is_error\": true").count();
            assert_eq!(flagged, expect.errors, "{}", expect.file);
        }
    }

    #[test]
    fn corpus_coverage_test_fix_actions() {
        let Some(run) = corpus_run("claude-reliability__coverage-test-fix.jsonl") else {
            return;
        };
        let session = "c64cc478-3430-40fe-8e9c-4ee9986e9754";
        let failed = run.command("git add .gitignore && git commit -m");
        assert_eq!(failed.len(), 1);
        let failed = failed[0];
        assert_eq!(failed.session, session);
        assert_eq!(failed.tool, "Bash");
        assert_eq!(
            failed.call_id.as_deref(),
            Some("toolu_01LZHfE3DNUh3HBws9z8uhN2")
        );
        assert_eq!(failed.cwd.as_deref(), Some("/tmp/tmpw6sk2trg"));
        assert_eq!(
            failed.ts,
            Some("2026-01-21T06:20:25.178Z".parse().expect("timestamp"))
        );
        assert_eq!(
            failed.input.get("description").and_then(Value::as_str),
            Some("Commit the gitignore update")
        );
        assert_eq!(failed.parent_session, None);
        let result = failed.result.as_ref().expect("joined result");
        assert!(!result.ok);
        assert_eq!(result.exit_code, Some(1));
        assert_eq!(
            result.output,
            "Exit code 1\nOn branch master\nnothing to commit, working tree clean"
        );

        let commit = run.command("git add src/math_utils.py tests/test_math_utils.py");
        let result = commit[0].result.as_ref().expect("joined result");
        assert!(result.ok);
        assert_eq!(result.exit_code, None);
        assert!(
            result
                .output
                .starts_with("[master 6322cf4] Add multiply_numbers")
        );

        let bash = run.actions.iter().filter(|a| a.tool == "Bash").count();
        assert_eq!(bash, 5);
        assert_eq!(run.command("git status").len(), 2);
        // Glob's structured result says how long it took.
        let glob = run
            .actions
            .iter()
            .find(|a| a.call_id.as_deref() == Some("toolu_01TAfbCDMjSPkBZ7Kq5G2NLL"))
            .expect("Glob call");
        assert_eq!(glob.result.as_ref().and_then(|r| r.duration_ms), Some(270));
    }

    #[test]
    fn corpus_bash_counts_per_file() {
        let bash = [
            ("sniffly__d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl", 12),
            ("sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl", 7),
            ("ccviewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", 61),
            ("ccviewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", 5),
            ("claude-reliability__python-to-rust-port.jsonl", 16),
            ("claude-reliability__coverage-test-fix.jsonl", 5),
        ];
        for (file, expected) in bash {
            let Some(run) = corpus_run(file) else {
                return;
            };
            let count = run.actions.iter().filter(|a| a.tool == "Bash").count();
            assert_eq!(count, expected, "{file}");
        }
    }

    #[test]
    fn corpus_sniffly_results() {
        let Some(run) = corpus_run("sniffly__fed8ce56-bc79-401f-a83e-af084253362f.jsonl") else {
            return;
        };
        // Both is_error results are user rejections (of `git commit` and of `git push`).
        let rejected: Vec<&str> = run
            .actions
            .iter()
            .filter(|a| a.result.as_ref().is_some_and(|r| !r.ok))
            .filter_map(|a| a.input.get("command").and_then(Value::as_str))
            .collect();
        assert_eq!(rejected.len(), 2);
        assert!(rejected[0].starts_with("git commit -m"));
        assert_eq!(rejected[1], "git push origin main");
        let remote = run.command("git remote -v")[0];
        assert_eq!(remote.cwd.as_deref(), Some("/Users/chip/dev/ai-music"));
        assert_eq!(remote.session, "fed8ce56-bc79-401f-a83e-af084253362f");
        let result = remote.result.as_ref().expect("result");
        assert!(
            result.ok
                && result
                    .output
                    .starts_with("origin\tgit@github.com:chiphuyen")
        );

        let Some(run) = corpus_run("sniffly__d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl") else {
            return;
        };
        let unanswered: Vec<&Action> = run.actions.iter().filter(|a| a.result.is_none()).collect();
        assert_eq!(unanswered.len(), 1);
        assert_eq!(
            unanswered[0].call_id.as_deref(),
            Some("toolu_012VXnBYGCQT1B47QH1zPGpC")
        );
        assert_eq!(
            unanswered[0].input.get("command").and_then(Value::as_str),
            Some("python radical_musical_ai.py")
        );
        let edit = run
            .actions
            .iter()
            .filter(|a| a.tool == "Edit")
            .filter_map(|a| a.result.as_ref())
            .find(|r| !r.ok)
            .expect("the failed Edit");
        assert!(
            edit.output
                .starts_with("String to replace not found in file.")
        );
    }

    #[test]
    fn corpus_inline_sidechains_of_fe5e1c67() {
        let Some(run) = corpus_run("ccviewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl") else {
            return;
        };
        let parent = "fe5e1c67-53e7-4862-81ae-d0e013e3270b";
        let runs = [
            ("6690d10e-f521-4ac0-800d-e5eb7a2d8072", 8, 3),
            ("60dade70-20bb-4edb-9dad-9f08267e0cc2", 33, 12),
            ("f4546a51-ea10-47e0-b4e0-76802974f8a9", 39, 20),
            ("0d692b0f-17cb-4fd0-94fb-215dabcef803", 24, 8),
            ("f4ab2bf6-d642-431a-85cb-66691f24c404", 52, 18),
        ];
        let expected_links: Vec<(String, String)> = runs
            .iter()
            .map(|(root, _, _)| (format!("{parent}:sidechain:{root}"), parent.to_owned()))
            .collect();
        assert_eq!(run.links, expected_links);
        let sessions = run.sessions();
        assert_eq!(sessions.get(parent), Some(&11));
        for (root, calls, bash) in runs {
            let session = format!("{parent}:sidechain:{root}");
            assert_eq!(sessions.get(&session), Some(&calls), "{session}");
            let in_run: Vec<&Action> = run
                .actions
                .iter()
                .filter(|a| a.session == session)
                .collect();
            assert_eq!(in_run.iter().filter(|a| a.tool == "Bash").count(), bash);
            assert!(
                in_run
                    .iter()
                    .all(|a| a.parent_session.as_deref() == Some(parent))
            );
            assert!(in_run.iter().all(|a| a.result.is_some()), "{session}");
        }
        // The five Task calls stay in the main session, with the sub-agents' run times.
        let tasks: Vec<&Action> = run.actions.iter().filter(|a| a.tool == "Task").collect();
        assert!(
            tasks
                .iter()
                .all(|a| a.session == parent && a.parent_session.is_none())
        );
        let durations: Vec<Option<u64>> = tasks
            .iter()
            .map(|a| a.result.as_ref().and_then(|r| r.duration_ms))
            .collect();
        let expected = [174655, 210145, 45626, 173228, 271604].map(Some);
        assert_eq!(durations, expected);
        // The first sub-agent's first command.
        let first = run
            .actions
            .iter()
            .find(|a| a.session == expected_links[0].0 && a.tool == "Bash")
            .expect("a Bash call in the first sub-agent");
        assert_eq!(
            first.input.get("command").and_then(Value::as_str),
            Some("ls -la")
        );
        assert_eq!(first.cwd.as_deref(), Some("/path/to/Demo/todo-app"));
        assert_eq!(
            first.ts,
            Some("2025-09-03T00:52:57.001Z".parse().expect("timestamp"))
        );
        // Background shells: BashOutput of a running shell has no exit code yet.
        let output = run
            .actions
            .iter()
            .find(|a| a.tool == "BashOutput")
            .expect("BashOutput");
        let result = output.result.as_ref().expect("result");
        assert!(result.ok);
        assert_eq!(result.exit_code, None);
    }

    #[test]
    fn corpus_sidechains_of_5c0375b4() {
        let Some(run) = corpus_run("ccviewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl") else {
            return;
        };
        let parent = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";
        let sessions = run.sessions();
        let first = format!("{parent}:sidechain:6340ddef-f656-4b72-a065-82390f637678");
        let second = format!("{parent}:sidechain:83e2917c-8940-4df6-a5a5-f2514f0d08c5");
        assert_eq!(sessions.get(parent), Some(&13));
        assert_eq!(sessions.get(&first), Some(&2));
        assert_eq!(sessions.get(&second), Some(&6));
        // Three Task calls, two sub-agents: one call failed input validation.
        let invalid = run
            .actions
            .iter()
            .find(|a| a.call_id.as_deref() == Some("toolu_018t5jce2ZNoGr2ADsHGQife"))
            .and_then(|a| a.result.as_ref())
            .expect("the invalid Task call's result");
        assert!(!invalid.ok);
        assert!(invalid.output.contains("InputValidationError"));
        let tree = run.command("tree /path/to/Demo")[0];
        assert_eq!(tree.session, second);
        assert!(!tree.result.as_ref().expect("result").ok);
    }

    /// Feeding a file in two parts, with a parser rebuilt from the state between them, gives
    /// what one pass gives.
    fn assert_resumes(path: &str, bytes: &[u8], cuts: &[usize]) {
        let whole = run_at(path, bytes);
        for &cut in cuts {
            let cut = bytes
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1)
                .nth(cut)
                .unwrap_or(bytes.len());
            let lines = bytes[..cut].iter().filter(|&&b| b == b'\n').count() as u64;
            let mut first = ClaudeCode.parser(Path::new(path), None);
            let mut run = Run::default();
            feed(first.as_mut(), &bytes[..cut], 0, 1, &mut run);
            let state = first.state();
            let state: Value =
                serde_json::from_str(&state.to_string()).expect("state round-trips as JSON");
            let mut second = ClaudeCode.parser(Path::new(path), Some(state));
            feed(
                second.as_mut(),
                &bytes[cut..],
                cut as u64,
                lines + 1,
                &mut run,
            );
            assert_eq!(run.actions, whole.actions, "{path} cut at byte {cut}");
            assert_eq!(run.links, whole.links, "{path} cut at byte {cut}");
            assert_eq!(run.results, whole.results);
            assert_eq!(run.orphans, whole.orphans);
        }
    }

    #[test]
    fn corpus_resumes_from_state() {
        for expect in &EXPECTED {
            let Some(bytes) = corpus(expect.file) else {
                return;
            };
            let lines = expect.records as usize;
            let cuts: Vec<usize> = (1..8).map(|k| k * lines / 8).collect();
            assert_resumes(&format!("/c/{}", expect.file), &bytes, &cuts);
        }
    }

    #[test]
    fn corpus_sniffs_only_claude_code_files() {
        let root = Path::new(CORPUS);
        if !root.exists() {
            let message = format!("skipped: corpus not found at {CORPUS}");
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
            eprintln!("{message}");
            return;
        }
        let mut stack = vec![root.to_path_buf()];
        let mut seen = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read corpus dir") {
                let path = entry.expect("corpus entry").path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let bytes = std::fs::read(&path).expect("read corpus file");
                let head = &bytes[..bytes.len().min(64 * 1024)];
                let mine = path.parent().and_then(Path::file_name) == Some("claude-code".as_ref());
                assert_eq!(ClaudeCode.sniff(&path, head), mine, "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen > 6);
    }

    const SID: &str = "7a1e0c52-0f7b-4c1e-9d2b-3f5a8e6c1d90";

    /// Claude Code 2.0.x: a sub-agent written to `agent-<id>.jsonl` beside the session file.
    const AGENT_BESIDE: &str = r#"{"parentUuid":null,"isSidechain":true,"userType":"external","cwd":"/home/u/proj","sessionId":"7a1e0c52-0f7b-4c1e-9d2b-3f5a8e6c1d90","version":"2.0.30","gitBranch":"main","agentId":"a3f9c21","type":"user","message":{"role":"user","content":"Find where the config is parsed"},"uuid":"0b6d5f0e-5a8c-4b8f-9d9c-1c2e3f4a5b6c","timestamp":"2025-11-02T10:00:00.000Z"}
{"parentUuid":"0b6d5f0e-5a8c-4b8f-9d9c-1c2e3f4a5b6c","isSidechain":true,"userType":"external","cwd":"/home/u/proj","sessionId":"7a1e0c52-0f7b-4c1e-9d2b-3f5a8e6c1d90","version":"2.0.30","gitBranch":"main","agentId":"a3f9c21","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01AgentA","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_01AgentGrep","name":"Bash","input":{"command":"rg -n 'fn parse_config' src","description":"Find the parser"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":5}},"requestId":"req_01AgentA","type":"assistant","uuid":"1c7e6a1f-6b9d-4c90-8ead-2d3f4a5b6c7d","timestamp":"2025-11-02T10:00:02.000Z"}
{"parentUuid":"1c7e6a1f-6b9d-4c90-8ead-2d3f4a5b6c7d","isSidechain":true,"userType":"external","cwd":"/home/u/proj","sessionId":"7a1e0c52-0f7b-4c1e-9d2b-3f5a8e6c1d90","version":"2.0.30","gitBranch":"main","agentId":"a3f9c21","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01AgentGrep","type":"tool_result","content":"src/config.rs:12:pub fn parse_config(text: &str) -> Config {","is_error":false}]},"uuid":"2d8f7b20-7cae-4da1-9fbe-3e4f5a6b7c8e","timestamp":"2025-11-02T10:00:03.000Z","toolUseResult":{"stdout":"src/config.rs:12:pub fn parse_config(text: &str) -> Config {","stderr":"","interrupted":false,"isImage":false}}
"#;

    #[test]
    fn agent_file_beside_the_session() {
        let path = "/home/u/.claude/projects/-home-u-proj/agent-a3f9c21.jsonl";
        assert!(ClaudeCode.sniff(Path::new(path), AGENT_BESIDE.as_bytes()));
        let run = run_at(path, AGENT_BESIDE.as_bytes());
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        let session = format!("{SID}:agent:a3f9c21");
        assert_eq!(run.links, vec![(session.clone(), SID.to_owned())]);
        assert_eq!(run.actions.len(), 1);
        let action = &run.actions[0];
        assert_eq!(action.session, session);
        assert_eq!(action.parent_session.as_deref(), Some(SID));
        assert_eq!(action.tool, "Bash");
        assert_eq!(
            action.input.get("command").and_then(Value::as_str),
            Some("rg -n 'fn parse_config' src")
        );
        let offset = AGENT_BESIDE.find('\n').expect("two lines") as u64 + 1;
        assert_eq!(action.seq, offset << 8);
        let result = action.result.as_ref().expect("joined");
        assert!(result.ok);
        assert!(result.output.starts_with("src/config.rs:12"));
        assert!(run.orphans.is_empty());
    }

    /// Claude Code 2.1.x: `<session>/subagents/agent-<id>.jsonl`, with a progress record, a
    /// record that lost its `sessionId` and `agentId`, and a failed command.
    const AGENT_SUBDIR: &str = r#"{"parentUuid":null,"isSidechain":true,"userType":"external","cwd":"/home/u/proj","sessionId":"7a1e0c52-0f7b-4c1e-9d2b-3f5a8e6c1d90","version":"2.1.14","gitBranch":"main","agentId":"ab81802","slug":"steady-stirring-dragon","type":"user","message":{"role":"user","content":"Run the tests and report failures"},"uuid":"3e9a8c31-8dbf-4eb2-a0cf-4f5a6b7c8d9f","timestamp":"2026-01-21T06:20:51.100Z"}
{"parentUuid":"3e9a8c31-8dbf-4eb2-a0cf-4f5a6b7c8d9f","isSidechain":true,"userType":"external","cwd":"/home/u/proj","sessionId":"7a1e0c52-0f7b-4c1e-9d2b-3f5a8e6c1d90","version":"2.1.14","gitBranch":"main","agentId":"ab81802","slug":"steady-stirring-dragon","message":{"model":"claude-haiku-4-5-20251001","id":"msg_01SubB","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_01SubTest","name":"Bash","input":{"command":"cargo test 2>&1 | tail -5","description":"Run the tests"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":5}},"requestId":"req_01SubB","type":"assistant","uuid":"4fab9d42-9ec0-4fc3-b1d0-5a6b7c8d9e0a","timestamp":"2026-01-21T06:20:53.000Z"}
{"parentUuid":"4fab9d42-9ec0-4fc3-b1d0-5a6b7c8d9e0a","isSidechain":true,"userType":"external","cwd":"/home/u/proj","sessionId":"7a1e0c52-0f7b-4c1e-9d2b-3f5a8e6c1d90","version":"2.1.14","gitBranch":"main","agentId":"ab81802","slug":"steady-stirring-dragon","type":"progress","data":{"type":"bash_progress","output":"running 4 tests","elapsedTimeSeconds":2},"toolUseID":"bash-progress-0","parentToolUseID":"toolu_01SubTest","uuid":"5abcae53-af1d-4ad4-82e1-6b7c8d9e0f1b","timestamp":"2026-01-21T06:20:55.000Z"}
{"parentUuid":"4fab9d42-9ec0-4fc3-b1d0-5a6b7c8d9e0a","isSidechain":true,"userType":"external","cwd":"/home/u/proj","type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Exit code 101\ntest result: FAILED. 3 passed; 1 failed","is_error":true,"tool_use_id":"toolu_01SubTest"}]},"uuid":"6bcdbf64-b02e-4be5-93f2-7c8d9e0f1a2c","timestamp":"2026-01-21T06:21:01.000Z","toolUseResult":"Error: Exit code 101\ntest result: FAILED. 3 passed; 1 failed","sourceToolAssistantUUID":"4fab9d42-9ec0-4fc3-b1d0-5a6b7c8d9e0a"}
"#;

    #[test]
    fn agent_file_under_subagents() {
        let path =
            format!("/home/u/.claude/projects/-home-u-proj/{SID}/subagents/agent-ab81802.jsonl");
        assert!(ClaudeCode.sniff(Path::new(&path), AGENT_SUBDIR.as_bytes()));
        let run = run_at(&path, AGENT_SUBDIR.as_bytes());
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        let session = format!("{SID}:agent:ab81802");
        assert_eq!(run.links, vec![(session.clone(), SID.to_owned())]);
        assert_eq!(run.actions.len(), 1);
        assert!(run.orphans.is_empty(), "{:?}", run.orphans);
        let action = &run.actions[0];
        assert_eq!(action.session, session);
        let result = action
            .result
            .as_ref()
            .expect("joined through the file's names");
        assert!(!result.ok);
        assert_eq!(result.exit_code, Some(101));
    }

    /// Streaming duplicates: one API message written as several lines, blocks repeated.
    const STREAMED: &str = r#"{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"1.0.98","type":"user","message":{"role":"user","content":"build it"},"uuid":"u1","timestamp":"2025-09-01T00:00:00Z"}
{"parentUuid":"u1","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"1.0.98","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Building."}]},"requestId":"req_1","type":"assistant","uuid":"a1","timestamp":"2025-09-01T00:00:01Z"}
{"parentUuid":"a1","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"1.0.98","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_A","name":"Bash","input":{"command":"make"}}]},"requestId":"req_1","type":"assistant","uuid":"a2","timestamp":"2025-09-01T00:00:01Z"}
{"parentUuid":"a2","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"1.0.98","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_A","name":"Bash","input":{"command":"make"}}]},"requestId":"req_1","type":"assistant","uuid":"a3","timestamp":"2025-09-01T00:00:01Z"}
{"parentUuid":"a3","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"1.0.98","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Building."},{"type":"tool_use","id":"toolu_A","name":"Bash","input":{"command":"make"}},{"type":"tool_use","id":"toolu_B","name":"Read","input":{"file_path":"/w/Makefile"}}]},"requestId":"req_1","type":"assistant","uuid":"a4","timestamp":"2025-09-01T00:00:01Z"}
{"parentUuid":"a4","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"1.0.98","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_A","type":"tool_result","content":[{"type":"text","text":"cc -o app main.c"},{"type":"text","text":"done"}]},{"tool_use_id":"toolu_B","type":"tool_result","content":"all: app","is_error":false}]},"uuid":"r1","timestamp":"2025-09-01T00:00:02Z","toolUseResult":{"stdout":"ignored: two results share this record","interrupted":true}}
{"parentUuid":"r1","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"1.0.98","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_A","type":"tool_result","content":"cc -o app main.c\ndone"}]},"uuid":"r2","timestamp":"2025-09-01T00:00:02Z"}
"#;

    #[test]
    fn streaming_duplicates_are_emitted_once() {
        let run = run(STREAMED);
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        assert_eq!(run.actions.len(), 2);
        assert_eq!(run.results, 2);
        let [make, read] = [&run.actions[0], &run.actions[1]];
        assert_eq!(make.call_id.as_deref(), Some("toolu_A"));
        assert_eq!(read.call_id.as_deref(), Some("toolu_B"));
        // toolu_B is the first new action of the fifth line: index 0 there.
        let fifth: usize = STREAMED.lines().take(4).map(|l| l.len() + 1).sum();
        assert_eq!(read.seq, (fifth as u64) << 8);
        let output = &make.result.as_ref().expect("result").output;
        assert_eq!(output, "cc -o app main.c\ndone");
        // The structured result is not applied when a record holds two results.
        assert!(make.result.as_ref().is_some_and(|r| r.ok));
        // And the same bytes resume to the same items wherever they are cut.
        assert_resumes("/p/s1.jsonl", STREAMED.as_bytes(), &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn two_calls_in_one_record_get_distinct_seqs() {
        let line = r#"{"type":"assistant","sessionId":"s1","uuid":"a","parentUuid":null,"message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}},{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"b"}}]}}"#;
        let mut items = Vec::new();
        let mut parser = ClaudeCode.parser(Path::new("/p/s1.jsonl"), None);
        let pos = Position {
            offset: 1000,
            line: 7,
        };
        parser
            .record(line.as_bytes(), pos, &mut items)
            .expect("valid record");
        let seqs: Vec<u64> = items
            .iter()
            .filter_map(|i| match i {
                Item::Action(a) => Some(a.seq),
                _ => None,
            })
            .collect();
        assert_eq!(seqs, vec![1000 << 8, (1000 << 8) | 1]);
    }

    fn result_line(result: &str, structured: &str) -> String {
        format!(
            r#"{{"type":"user","sessionId":"s1","uuid":"r","parentUuid":"a","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1",{result}}}]}},"toolUseResult":{structured}}}"#
        )
    }

    fn only_result(line: &str) -> ActionResult {
        let mut items = Vec::new();
        let mut parser = ClaudeCode.parser(Path::new("/p/s1.jsonl"), None);
        let pos = Position { offset: 0, line: 1 };
        parser
            .record(line.as_bytes(), pos, &mut items)
            .expect("valid record");
        match items.as_slice() {
            [Item::Result(late)] => late.result.clone(),
            other => panic!("expected one result, got {other:?}"),
        }
    }

    #[test]
    fn structured_results() {
        // BashOutput of a finished background shell: the exit code is in the JSON.
        let r = only_result(&result_line(
            r#""content":"<status>failed</status>""#,
            r#"{"shellId":"bash_1","command":"pnpm build","status":"failed","exitCode":2,"stdout":"","stderr":"boom"}"#,
        ));
        assert_eq!((r.ok, r.exit_code), (false, Some(2)));
        // KillBash that failed.
        let r = only_result(&result_line(
            r#""content":"no such shell""#,
            r#"{"success":false,"message":"no such shell","shell_id":"bash_9"}"#,
        ));
        assert!(!r.ok);
        // An interrupted command, with its output only in the structured result.
        let r = only_result(&result_line(
            r#""content":"""#,
            r#"{"stdout":"partial","stderr":"killed","interrupted":true,"isImage":false}"#,
        ));
        assert_eq!((r.ok, r.output.as_str()), (false, "partial\nkilled"));
        // WebSearch reports seconds.
        let r = only_result(&result_line(
            r#""content":"results""#,
            r#"{"query":"q","results":[],"durationSeconds":1.25}"#,
        ));
        assert_eq!((r.ok, r.duration_ms), (true, Some(1250)));
        // "Exit code" is read only from an error's first line.
        let r = only_result(&result_line(
            r#""content":"exit code 3 was printed""#,
            "null",
        ));
        assert_eq!((r.ok, r.exit_code), (true, None));
        let r = only_result(&result_line(
            r#""content":"Traceback\nExit code 3","is_error":true"#,
            r#""Error: Traceback""#,
        ));
        assert_eq!((r.ok, r.exit_code), (false, None));
        let r = only_result(&result_line(
            r#""content":"Exit code 127\nbash: foo: command not found","is_error":true"#,
            r#""Error: Exit code 127""#,
        ));
        assert_eq!((r.ok, r.exit_code), (false, Some(127)));
    }

    #[test]
    fn other_records_yield_nothing() {
        let lines = [
            r#"{"type":"summary","summary":"Fix the build","leafUuid":"x"}"#,
            r#"{"type":"queue-operation","operation":"dequeue","timestamp":"2026-01-21T06:19:38.048Z","sessionId":"s1"}"#,
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}"#,
            r#"{"type":"system","subtype":"compact_boundary","sessionId":"s1","uuid":"y","parentUuid":null,"content":"Conversation compacted"}"#,
            r#"{"type":"brand-new-kind","sessionId":"s1","whatever":[1,2,3]}"#,
            r#"{"no_type":true}"#,
            r#"{"type":"user","sessionId":"s1","uuid":"u","parentUuid":null,"message":{"role":"user","content":"hello"}}"#,
            r#"{"type":"assistant","sessionId":"s1","uuid":"v","parentUuid":"u","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"hi"}]}}"#,
            "",
            "   ",
        ];
        let run = run(&lines.join("\n"));
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        assert!(run.actions.is_empty() && run.links.is_empty() && run.results == 0);
    }

    #[test]
    fn unknown_versions_are_parsed() {
        let line = r#"{"type":"assistant","version":"9.0.0","sessionId":"s1","uuid":"a","parentUuid":null,"newField":{"x":1},"message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"caller":{"type":"direct"}}]}}"#;
        let run = run(line);
        assert_eq!(run.actions.len(), 1);
        assert_eq!(run.actions[0].ts, None);
        assert_eq!(run.actions[0].cwd, None);
    }

    #[test]
    fn missing_session_id_falls_back_to_the_file_stem() {
        let line = r#"{"type":"assistant","uuid":"a","parentUuid":null,"message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#;
        let run = run_at("/p/abc-123.jsonl", line.as_bytes());
        assert_eq!(run.actions[0].session, "abc-123");
    }

    #[test]
    fn bad_records_are_problems_and_the_file_goes_on() {
        let good = r#"{"type":"assistant","sessionId":"s1","uuid":"a","parentUuid":null,"message":{"role":"assistant","content":[{"type":"tool_use","id":"t9","name":"Bash","input":{"command":"ls"}}]}}"#;
        let bad = [
            r#"{"type":"assistant","sessionId":"s1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","na"#,
            r#"[1,2,3]"#,
            r#"{"type":"assistant","message":"text"}"#,
            r#"{"type":"user","message":{"content":42}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{}}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","input":{}}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"Bash","input":"ls"}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"x"}]}}"#,
        ];
        let mut text = bad.join("\n");
        text.push('\n');
        text.push_str(good);
        let mut bytes = b"\xff\xfe{\"type\":\"user\"}\n".to_vec();
        bytes.extend_from_slice(text.as_bytes());
        let run = run_at("/p/s1.jsonl", &bytes);
        let lines: Vec<u64> = run.problems.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, (1..=9).collect::<Vec<u64>>(), "{:?}", run.problems);
        assert_eq!(run.actions.len(), 1);
        assert_eq!(run.actions[0].call_id.as_deref(), Some("t9"));
    }

    /// Every path in a JSON value, as a list of keys and indexes.
    fn paths(value: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
        out.push(prefix.clone());
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    prefix.push(Value::String(key.clone()));
                    paths(child, prefix, out);
                    prefix.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    prefix.push(Value::from(i));
                    paths(child, prefix, out);
                    prefix.pop();
                }
            }
            _ => {}
        }
    }

    fn replace(value: &mut Value, path: &[Value], with: Value) {
        let Some((first, rest)) = path.split_first() else {
            *value = with;
            return;
        };
        let child = match (value, first) {
            (Value::Object(map), Value::String(key)) => map.get_mut(key),
            (Value::Array(items), Value::Number(i)) => {
                i.as_u64().and_then(|i| items.get_mut(i as usize))
            }
            _ => None,
        };
        if let Some(child) = child {
            replace(child, rest, with);
        }
    }

    #[test]
    fn wrong_types_in_every_field_do_not_panic() {
        // Every field of a 2.1.x sub-agent file and of a 1.0.x streamed exchange, in turn.
        let records: Vec<Value> = [AGENT_SUBDIR, AGENT_BESIDE, STREAMED]
            .iter()
            .flat_map(|text| text.lines())
            .map(|line| serde_json::from_str::<Value>(line).expect("fixture"))
            .collect();
        let candidates = [
            Value::Null,
            Value::Bool(true),
            Value::from(-1),
            Value::from(1e300),
            Value::from("x"),
            Value::Array(vec![Value::Null]),
            serde_json::json!({"k": 1}),
        ];
        let mut tried = 0;
        for record in &records {
            let mut all = Vec::new();
            paths(record, &mut Vec::new(), &mut all);
            for path in &all {
                for candidate in &candidates {
                    let mut mutated = record.clone();
                    replace(&mut mutated, path, candidate.clone());
                    let bytes = serde_json::to_vec(&mutated).expect("serialize");
                    for file in ["/p/s1.jsonl", "/p/s1/subagents/agent-x.jsonl"] {
                        let mut parser = ClaudeCode.parser(Path::new(file), None);
                        let mut items = Vec::new();
                        let pos = Position {
                            offset: u64::MAX,
                            line: u64::MAX,
                        };
                        let _ = parser.record(&bytes, pos, &mut items);
                        let _ = parser.state();
                    }
                    tried += 1;
                }
            }
        }
        assert!(tried > 500);
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let mut parser = ClaudeCode.parser(Path::new(""), Some(Value::from("garbage state")));
        let mut items = Vec::new();
        let pos = Position { offset: 0, line: 1 };
        assert!(parser.record(b"", pos, &mut items).is_ok());
        assert!(parser.record(b"\xc3\x28\xa0\xa1", pos, &mut items).is_err());
        assert!(
            parser
                .record(b"{\"type\":\"assistant\",\"mess", pos, &mut items)
                .is_err()
        );
        assert!(parser.record(b"null", pos, &mut items).is_err());
        // A 1 MB record: a tool result with a huge output, and a huge garbage line.
        let big = "x".repeat(1 << 20);
        let line = result_line(&format!(r#""content":"{big}""#), "null");
        assert!(parser.record(line.as_bytes(), pos, &mut items).is_ok());
        assert!(matches!(&items[..], [Item::Result(r)] if r.result.output.len() == 1 << 20));
        assert!(parser.record(big.as_bytes(), pos, &mut items).is_err());
        let deep = "[".repeat(1 << 20);
        assert!(parser.record(deep.as_bytes(), pos, &mut items).is_err());
        // States of the wrong shape are ignored.
        for state in [
            serde_json::json!({"v": 1, "calls": "x", "links": [1, 2], "sidechains": [[1, 2], "x"]}),
            serde_json::json!({"v": 99}),
            serde_json::json!([]),
        ] {
            let parser = ClaudeCode.parser(Path::new("/p/s.jsonl"), Some(state));
            assert_eq!(parser.state()["calls"], serde_json::json!([]));
        }
        assert!(!ClaudeCode.sniff(Path::new("/p/x.jsonl"), b""));
        assert!(!ClaudeCode.sniff(Path::new("/p/x.jsonl"), b"\xff\xfe\x00garbage"));
        assert!(!ClaudeCode.sniff(Path::new("/p/x.json"), STREAMED.as_bytes()));
    }

    #[test]
    fn sniff_reads_bookkeeping_and_long_first_records() {
        let queue = r#"{"type":"queue-operation","operation":"dequeue","timestamp":"2026-01-21T06:19:38.048Z","sessionId":"c64cc478"}"#;
        assert!(ClaudeCode.sniff(Path::new("/p/s.jsonl"), queue.as_bytes()));
        // A first record longer than the head: cut mid-line.
        let long = format!(
            r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s1","version":"2.1.14","type":"user","message":{{"role":"user","content":"{}"#,
            "y".repeat(70_000)
        );
        let head = &long.as_bytes()[..64 * 1024];
        assert!(ClaudeCode.sniff(Path::new("/p/s.jsonl"), head));
        // Codex and native records are not Claude Code's.
        let codex = r#"{"timestamp":"2025-11-20T10:00:00.000Z","type":"session_meta","payload":{"id":"019a","cwd":"/w"}}"#;
        assert!(!ClaudeCode.sniff(Path::new("/p/rollout.jsonl"), codex.as_bytes()));
        let native = r#"{"v":1,"session":"s","seq":1,"source":"native","tool":"shell","input":{}}"#;
        assert!(!ClaudeCode.sniff(Path::new("/p/n.jsonl"), native.as_bytes()));
    }

    #[test]
    fn inline_sidechains_interleaved_and_bounded() {
        // Two sub-agent runs written interleaved: each record follows its own parentUuid.
        let rec = |uuid: &str, parent: &str, call: &str| {
            let parent = if parent.is_empty() {
                "null".to_owned()
            } else {
                format!("\"{parent}\"")
            };
            format!(
                r#"{{"type":"assistant","isSidechain":true,"sessionId":"m","uuid":"{uuid}","parentUuid":{parent},"message":{{"role":"assistant","content":[{{"type":"tool_use","id":"{call}","name":"Bash","input":{{"command":"true"}}}}]}}}}"#
            )
        };
        let text = [
            rec("a1", "", "c1"),
            rec("b1", "", "c2"),
            rec("a2", "a1", "c3"),
            rec("b2", "b1", "c4"),
            rec("a3", "a2", "c5"),
        ]
        .join("\n");
        let run = run(&text);
        let sessions = run.sessions();
        assert_eq!(sessions.get("m:sidechain:a1"), Some(&3));
        assert_eq!(sessions.get("m:sidechain:b1"), Some(&2));
        assert_eq!(run.links.len(), 2);
        // The state stays bounded however long the file.
        let mut parser = ClaudeCode.parser(Path::new("/p/m.jsonl"), None);
        let mut items = Vec::new();
        let mut parent = String::new();
        for i in 0..(SIDECHAIN_CAP + SEEN_CAP) * 2 {
            let uuid = format!("u{i}");
            let line = rec(&uuid, &parent, &format!("call{i}"));
            let pos = Position {
                offset: i as u64 * 1000,
                line: i as u64 + 1,
            };
            parser
                .record(line.as_bytes(), pos, &mut items)
                .expect("valid");
            parent = uuid;
        }
        let state = parser.state();
        assert_eq!(state["calls"].as_array().map(Vec::len), Some(SEEN_CAP));
        assert_eq!(
            state["sidechains"].as_array().map(Vec::len),
            Some(SIDECHAIN_CAP)
        );
        let actions = items
            .iter()
            .filter(|i| matches!(i, Item::Action(_)))
            .count();
        assert_eq!(actions, (SIDECHAIN_CAP + SEEN_CAP) * 2);
        // All in one run, found through the chain even past the window's start.
        let runs: BTreeSet<&str> = items
            .iter()
            .filter_map(|i| match i {
                Item::Action(a) => Some(a.session.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(runs, BTreeSet::from(["m:sidechain:u0"]));
    }
}
