//! OpenHands trajectories: event lists.
//!
//! Two formats, both [`Source::Openhands`]:
//! - [`OpenHands`] (WholeFile): an exported trajectory, a JSON array of events. An action event
//!   has `id`, `timestamp`, `source` (agent/user/environment), `action` (`run`, `run_ipython`,
//!   `read`, `edit`, `write`, `browse`, `message`, `finish`, …) and `args`; an observation event
//!   has `observation`, `cause` (the id of the action it answers), `content` and `extras`
//!   (`metadata.exit_code`, `metadata.working_dir`, …). A wrapper object holding the list under
//!   `trajectory` or `events` is accepted too.
//! - [`OpenHandsResolver`] (Lines): the resolver's `output.jsonl`, one object per issue whose
//!   `history` is a list of events of an older shape: no `id`/`cause`/`source`, the args merged
//!   into the event (`{"action": "run", "command": …}`) and each action directly followed by its
//!   observation (`{"observation": "run", "exit_code": 0, "content": …}`). A history made of
//!   `[action, observation]` pairs (older still) is flattened into the same sequence.
//!
//! Mapping: one [`Action`] per action event, joined with its observation (by `cause`, or the next
//! event when the events carry no ids) into a complete action; no [`Item::Result`] is needed.
//! - Skipped (no item): `message`, `system`, `finish`, `reject`, `recall`, `think`,
//!   `change_agent_state`, `delegate`, `condensation`, `condensation_request`, `null`, and actions
//!   marked `hidden` (commands the runtime ran for itself). A `run` with an empty command (a poll
//!   of a running process) is skipped too.
//! - `tool`: the action name. `input`: `run` → `{"command"}` (plus `"is_input": true` when the
//!   command was keyboard input to a running process), `run_ipython` → `{"code"}`, anything else
//!   → its args minus bookkeeping keys (`thought`, `impl_source`, `translated_ipython_code`,
//!   `confirmation_state`, `security_risk`, …), e.g. `{"path", "start", "end"}` for `read`.
//! - `ok`: false for an `error` observation, a non-zero exit code (`extras.metadata.exit_code`,
//!   `extras.exit_code`, or the resolver's top-level `exit_code`; -1 is OpenHands' timeout and
//!   stays -1), `success: false`, or — when there is no exit code — output that clearly shows a
//!   failure: an agentskills edit rejected by the linter or not matching, an `ERROR:` from the
//!   file editor, or an uncaught Python/IPython traceback. Without an observation, no result.
//! - `ts`: the action's `timestamp` when it carries an offset (RFC 3339). OpenHands writes naive
//!   local times (`2025-01-20T20:29:35.040676`, `datetime.now()`), whose zone is unknown: `None`.
//!   `duration_ms` is still computed from the action's and the observation's timestamps, which
//!   share that zone.
//! - `cwd`: the working directory reported by the latest earlier observation
//!   (`extras.metadata.working_dir`, or IPython's `[Jupyter current working directory: …]`
//!   footer), i.e. the directory the command started in; without one, its own observation's.
//! - `session`: the file stem for an exported list (or the wrapper's `id`/`conversation_id`/
//!   `session_id`); `<file stem>:<instance_id>` or `<file stem>:<owner>/<repo>#<number>` for a
//!   resolver line (`<file stem>:line<N>` without either).
//! - `seq`: the event's index in its list (in `history` for the resolver: each line is its own
//!   session, so the index alone orders it).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::action::{Action, ActionResult, Source, exit_code_from_text};
use crate::ingest::adapters::{Format, Framing, Item, Position, Problem, RecordParser};

/// OpenHands exported trajectories (a JSON array of events).
pub struct OpenHands;

/// OpenHands resolver output (`output.jsonl`, one issue's run per line).
pub struct OpenHandsResolver;

/// Actions that are not tool calls.
const SKIPPED_ACTIONS: &[&str] = &[
    "message",
    "system",
    "finish",
    "reject",
    "recall",
    "think",
    "change_agent_state",
    "delegate",
    "condensation",
    "condensation_request",
    "null",
    "",
];

/// Argument keys that describe the call's bookkeeping, not its input.
const BOOKKEEPING_ARGS: &[&str] = &[
    "thought",
    "impl_source",
    "translated_ipython_code",
    "confirmation_state",
    "security_risk",
    "is_confirmed",
    "action_risk",
    "hidden",
    "blocking",
    "keep_prompt",
    "kernel_init_code",
    "wait_for_response",
    "images_urls",
    "image_urls",
    "timeout",
];

/// Event-level keys of the resolver's flat events (everything else is an argument).
const EVENT_KEYS: &[&str] = &[
    "id",
    "action",
    "observation",
    "timestamp",
    "source",
    "message",
    "cause",
    "content",
    "tool_call_metadata",
    "llm_metrics",
    "extras",
];

impl Format for OpenHands {
    fn source(&self) -> Source {
        Source::Openhands
    }

    fn framing(&self) -> Framing {
        Framing::WholeFile
    }

    fn parser(&self, path: &Path, _state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(EventListParser { stem: stem(path) })
    }

    fn sniff(&self, _path: &Path, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        let Some(rest) = text.trim_start().strip_prefix('[') else {
            return false;
        };
        rest.trim_start().starts_with('{')
            && (text.contains("\"action\":") || text.contains("\"observation\":"))
            && (text.contains("\"source\":")
                || text.contains("\"timestamp\":")
                || text.contains("\"cause\":"))
    }
}

impl Format for OpenHandsResolver {
    fn source(&self) -> Source {
        Source::Openhands
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, path: &Path, _state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(ResolverParser { stem: stem(path) })
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if path.extension().is_none_or(|e| e != "jsonl") {
            return false;
        }
        let text = String::from_utf8_lossy(head);
        let first = text.lines().next().unwrap_or_default();
        first.trim_start().starts_with('{')
            && !first.contains("\"trajectory\"")
            && ((first.contains("\"history\":")
                && (first.contains("\"instance_id\":") || first.contains("\"issue\":")))
                || (first.contains("\"instance_id\":") && first.contains("\"instruction\":")))
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

struct EventListParser {
    stem: String,
}

impl RecordParser for EventListParser {
    fn record(
        &mut self,
        record: &[u8],
        _pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let doc: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let (events, session) = match &doc {
            Value::Array(events) => (events, self.stem.clone()),
            Value::Object(obj) => {
                let Some(events) = ["trajectory", "events"]
                    .iter()
                    .find_map(|k| obj.get(*k).and_then(Value::as_array))
                else {
                    return Err(Problem::new("not an OpenHands event list"));
                };
                let session = ["conversation_id", "session_id", "id"]
                    .iter()
                    .find_map(|k| obj.get(*k).and_then(Value::as_str))
                    .filter(|s| !s.is_empty())
                    .map_or_else(|| self.stem.clone(), str::to_string);
                (events, session)
            }
            _ => return Err(Problem::new("not an OpenHands event list")),
        };
        let events: Vec<&Value> = events.iter().collect();
        convert(&session, &events, out);
        Ok(())
    }
}

struct ResolverParser {
    stem: String,
}

impl RecordParser for ResolverParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        if record.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let doc: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Some(obj) = doc.as_object() else {
            return Err(Problem::new("resolver output line is not a JSON object"));
        };
        let Some(history) = obj.get("history").and_then(Value::as_array) else {
            return Ok(());
        };
        let key = resolver_key(obj).unwrap_or_else(|| format!("line{}", pos.line));
        let session = format!("{}:{key}", self.stem);
        // Flatten `[action, observation]` pairs into one sequence.
        let mut events = Vec::with_capacity(history.len());
        for entry in history {
            match entry {
                Value::Array(pair) => events.extend(pair.iter()),
                other => events.push(other),
            }
        }
        convert(&session, &events, out);
        Ok(())
    }
}

/// `instance_id`, or `<owner>/<repo>#<number>` of the resolver's `issue`.
fn resolver_key(obj: &Map<String, Value>) -> Option<String> {
    if let Some(id) = obj.get("instance_id").and_then(Value::as_str) {
        return Some(id.to_string());
    }
    let issue = obj.get("issue")?.as_object()?;
    let owner = issue.get("owner")?.as_str()?;
    let repo = issue.get("repo")?.as_str()?;
    let number = issue.get("number")?.as_u64()?;
    Some(format!("{owner}/{repo}#{number}"))
}

/// An event's id or cause as a map key (OpenHands writes integers; strings are tolerated).
fn id_key(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn convert(session: &str, events: &[&Value], out: &mut Vec<Item>) {
    // Observations by the id of the action they answer (the first one wins).
    let mut by_cause: HashMap<String, usize> = HashMap::new();
    for (i, ev) in events.iter().enumerate() {
        if ev.get("observation").is_some()
            && let Some(cause) = id_key(ev.get("cause"))
        {
            by_cause.entry(cause).or_insert(i);
        }
    }
    let mut last_dir: Option<String> = None;
    for (i, ev) in events.iter().enumerate() {
        let Some(ev) = ev.as_object() else {
            continue;
        };
        if ev.contains_key("observation") {
            if let Some(dir) = working_dir(ev) {
                last_dir = Some(dir);
            }
            continue;
        }
        let Some(name) = ev.get("action").and_then(Value::as_str) else {
            continue;
        };
        if SKIPPED_ACTIONS.contains(&name) {
            continue;
        }
        let args = match ev.get("args") {
            Some(Value::Object(args)) => args.clone(),
            Some(_) => Map::new(),
            // The resolver's flat events: the arguments are the event's other keys.
            None => ev
                .iter()
                .filter(|(k, _)| !EVENT_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        if args.get("hidden").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let Some(input) = input_for(name, &args) else {
            continue;
        };
        let obs = match id_key(ev.get("id")) {
            Some(id) => by_cause.get(&id).and_then(|&j| events.get(j)),
            None => events
                .get(i + 1)
                .filter(|next| next.get("observation").is_some() && next.get("cause").is_none()),
        }
        .and_then(|o| o.as_object());
        let cwd = last_dir.clone().or_else(|| obs.and_then(working_dir));
        let call_id = ev
            .get("tool_call_metadata")
            .and_then(|m| m.get("tool_call_id"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let result = obs.map(|o| result_of(name, ev, o));
        out.push(Item::Action(Action {
            session: session.to_string(),
            seq: i as u64,
            ts: ev
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<jiff::Timestamp>().ok()),
            source: Source::Openhands,
            cwd,
            tool: name.to_string(),
            input,
            call_id,
            parent_session: None,
            result,
        }));
    }
}

fn input_for(name: &str, args: &Map<String, Value>) -> Option<Value> {
    match name {
        "run" => {
            let command = args.get("command")?.as_str()?;
            if command.trim().is_empty() {
                return None;
            }
            let mut input = json!({ "command": command });
            if args.get("is_input").and_then(Value::as_bool) == Some(true) {
                input["is_input"] = Value::Bool(true);
            }
            Some(input)
        }
        "run_ipython" => {
            let code = args.get("code")?.as_str()?;
            Some(json!({ "code": code }))
        }
        _ => Some(Value::Object(
            args.iter()
                .filter(|(k, _)| !BOOKKEEPING_ARGS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )),
    }
}

/// The working directory an observation reports: `extras.metadata.working_dir`, or IPython's
/// `[Jupyter current working directory: …]` footer.
fn working_dir(obs: &Map<String, Value>) -> Option<String> {
    let from_metadata = obs
        .get("extras")
        .and_then(|e| e.get("metadata"))
        .and_then(|m| m.get("working_dir"))
        .and_then(Value::as_str);
    let dir = from_metadata.or_else(|| {
        let content = obs.get("content")?.as_str()?;
        content.lines().rev().find_map(|l| {
            l.trim()
                .strip_prefix("[Jupyter current working directory:")?
                .strip_suffix(']')
                .map(str::trim)
        })
    })?;
    (!dir.is_empty()).then(|| dir.to_string())
}

fn exit_code(obs: &Map<String, Value>) -> Option<i32> {
    let extras = obs.get("extras");
    [
        extras
            .and_then(|e| e.get("metadata"))
            .and_then(|m| m.get("exit_code")),
        extras.and_then(|e| e.get("exit_code")),
        obs.get("exit_code"),
    ]
    .into_iter()
    .flatten()
    .find_map(|v| v.as_i64().and_then(|c| i32::try_from(c).ok()))
}

fn result_of(name: &str, action: &Map<String, Value>, obs: &Map<String, Value>) -> ActionResult {
    let output = match obs.get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let kind = obs
        .get("observation")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut exit = exit_code(obs);
    if exit.is_none() && name == "run" && kind == "run" {
        exit = exit_code_from_text(&output);
    }
    let ok = if kind == "error" {
        false
    } else if let Some(code) = exit {
        code == 0
    } else if obs.get("success").and_then(Value::as_bool) == Some(false) {
        false
    } else {
        !output_failed(&output)
    };
    ActionResult {
        ok,
        exit_code: exit,
        output,
        duration_ms: duration_ms(action.get("timestamp"), obs.get("timestamp")),
    }
}

/// Milliseconds between two timestamps, both with an offset or both naive (same unknown zone).
fn duration_ms(start: Option<&Value>, end: Option<&Value>) -> Option<u64> {
    let (start, end) = (start?.as_str()?, end?.as_str()?);
    let millis = match (
        start.parse::<jiff::Timestamp>(),
        end.parse::<jiff::Timestamp>(),
    ) {
        (Ok(a), Ok(b)) => b.duration_since(a).as_millis(),
        _ => {
            let a: jiff::civil::DateTime = start.parse().ok()?;
            let b: jiff::civil::DateTime = end.parse().ok()?;
            b.duration_since(a).as_millis()
        }
    };
    u64::try_from(millis).ok()
}

/// Output that clearly shows a failure when no exit code says so (see the module docs).
fn output_failed(output: &str) -> bool {
    let first = output.trim_start();
    if first.starts_with("[Your proposed edit has introduced new syntax error(s)")
        || first.starts_with("[No exact match found in")
        || first.starts_with("ERROR:")
    {
        return true;
    }
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    if !lines
        .iter()
        .any(|l| l.contains("Traceback (most recent call last)"))
    {
        return false;
    }
    // The exception line ends the output (IPython's `[Jupyter …]` footer ignored).
    let last = lines
        .iter()
        .rev()
        .find(|l| !l.is_empty() && !l.starts_with("[Jupyter"))
        .copied()
        .unwrap_or_default();
    let name = last.split(':').next().unwrap_or_default();
    let base = name.rsplit('.').next().unwrap_or_default();
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && ["Error", "Exception", "Interrupt", "Exit"]
            .iter()
            .any(|s| base.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

    fn corpus_file(rel: &str) -> Option<(PathBuf, Vec<u8>)> {
        let root = Path::new(CORPUS);
        if !root.is_dir() {
            let msg = format!("skipped: corpus not found at {CORPUS}");
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{msg}");
            }
            eprintln!("{msg}");
            return None;
        }
        let path = root.join(rel);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Some((path, bytes))
    }

    /// Runs a format over a file the way the tailer does: the whole file as one record
    /// (WholeFile), or one record per line without its newline (Lines).
    fn run(format: &dyn Format, path: &Path, bytes: &[u8]) -> (Vec<Action>, Vec<Problem>) {
        let mut parser = format.parser(path, None);
        let mut items = Vec::new();
        let mut problems = Vec::new();
        match format.framing() {
            Framing::WholeFile => {
                let pos = Position { offset: 0, line: 1 };
                if let Err(p) = parser.record(bytes, pos, &mut items) {
                    problems.push(p);
                }
            }
            Framing::Lines => {
                let mut offset = 0u64;
                for (n, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
                    let pos = Position {
                        offset,
                        line: n as u64 + 1,
                    };
                    offset += line.len() as u64;
                    let line = line.strip_suffix(b"\n").unwrap_or(line);
                    if let Err(p) = parser.record(line, pos, &mut items) {
                        problems.push(p);
                    }
                }
            }
            other => panic!("unexpected framing {other:?}"),
        }
        let actions = items
            .into_iter()
            .map(|i| match i {
                Item::Action(a) => a,
                other => panic!("unexpected item {other:?}"),
            })
            .collect();
        (actions, problems)
    }

    fn tools(actions: &[Action]) -> Vec<&str> {
        actions.iter().map(|a| a.tool.as_str()).collect()
    }

    fn res(a: &Action) -> &ActionResult {
        a.result.as_ref().expect("result")
    }

    #[test]
    fn basic_gui_mode() {
        let Some((path, bytes)) = corpus_file("openhands/trajs__basic_gui_mode.json") else {
            return;
        };
        let (actions, problems) = run(&OpenHands, &path, &bytes);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(tools(&actions), ["run", "edit", "edit", "run"]);
        assert!(actions.iter().all(|a| a.session == "trajs__basic_gui_mode"));
        let mkdir = &actions[0];
        assert_eq!(
            mkdir.input,
            json!({"command": "mkdir -p /workspace/todo-app"})
        );
        assert_eq!(mkdir.seq, 7);
        assert_eq!(mkdir.cwd.as_deref(), Some("/workspace"));
        assert_eq!(
            mkdir.call_id.as_deref(),
            Some("toolu_01W9Z8jBctr8X2frZV9p1RYs")
        );
        assert_eq!(mkdir.ts, None, "naive local timestamps have no zone");
        let r = res(mkdir);
        assert_eq!(
            (r.ok, r.exit_code, r.duration_ms),
            (true, Some(0), Some(658))
        );
        let server = &actions[3];
        assert_eq!(
            server.input["command"],
            "cd /workspace/todo-app && python3 -m http.server 8000"
        );
        let r = res(server);
        assert_eq!((r.ok, r.exit_code), (false, Some(-1)));
        assert_eq!(
            r.output,
            "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ..."
        );
        assert_eq!(r.duration_ms, Some(30580));
        assert_eq!(server.cwd.as_deref(), Some("/workspace"));
        let edit = &actions[1];
        assert_eq!(edit.input["path"], "/workspace/todo-app/index.html");
        assert!(edit.input.get("thought").is_none());
        assert!(edit.input.get("translated_ipython_code").is_none());
        assert!(res(edit).ok);
        assert!(
            res(edit)
                .output
                .starts_with("--- /workspace/todo-app/index.html")
        );
    }

    #[test]
    fn basic_and_wrong_initial_state_and_interactions() {
        let Some((path, bytes)) = corpus_file("openhands/trajs__basic.json") else {
            return;
        };
        let (actions, problems) = run(&OpenHands, &path, &bytes);
        assert!(problems.is_empty());
        assert_eq!(tools(&actions), ["edit"]);
        assert_eq!(actions[0].input["path"], "/workspace/game_2048.py");
        assert!(res(&actions[0]).ok);

        let Some((path, bytes)) = corpus_file("openhands/trajs__wrong_initial_state.json") else {
            return;
        };
        let (actions, problems) = run(&OpenHands, &path, &bytes);
        assert!(problems.is_empty());
        assert_eq!(tools(&actions), ["read", "run", "read"]);
        assert_eq!(
            actions[0].input,
            json!({"path": "/workspace", "start": 0, "end": -1})
        );
        let mv = &actions[1];
        assert_eq!(
            mv.input["command"],
            "mv /workspace/game_2048.py /workspace/2048.py"
        );
        assert_eq!((res(mv).ok, res(mv).exit_code), (true, Some(0)));
        assert!(
            res(&actions[2])
                .output
                .starts_with("Here's the files and directories")
        );

        let Some((path, bytes)) = corpus_file("openhands/trajs__basic_interactions.json") else {
            return;
        };
        let (actions, problems) = run(&OpenHands, &path, &bytes);
        assert!(problems.is_empty());
        assert!(actions.is_empty());
    }

    #[test]
    fn resolver_output() {
        let Some((path, bytes)) = corpus_file("openhands/resolver_mock_output__output.jsonl")
        else {
            return;
        };
        let (actions, problems) = run(&OpenHandsResolver, &path, &bytes);
        assert!(problems.is_empty(), "{problems:?}");
        let first: Vec<&Action> = actions
            .iter()
            .filter(|a| a.session == "resolver_mock_output__output:neubig/pr-viewer#5")
            .collect();
        let second: Vec<&Action> = actions
            .iter()
            .filter(|a| a.session == "resolver_mock_output__output:neubig/pr-viewer#1")
            .collect();
        assert_eq!(first.len() + second.len(), actions.len());
        let names = |v: &[&Action]| v.iter().map(|a| a.tool.clone()).collect::<Vec<_>>();
        assert_eq!(names(&first), ["run", "run_ipython", "run"]);
        assert_eq!(second.len(), 21);
        assert_eq!(
            second.iter().filter(|a| a.tool == "run_ipython").count(),
            20
        );
        assert_eq!(
            actions.iter().filter(|a| a.tool == "run_ipython").count(),
            21
        );
        assert_eq!(actions.iter().filter(|a| a.tool == "run").count(), 3);
        let touch = first[0];
        assert_eq!(touch.input, json!({"command": "touch LICENSE"}));
        assert_eq!(
            (touch.seq, res(touch).exit_code, res(touch).ok),
            (1, Some(0), true)
        );
        let cat = first[2];
        assert!(res(cat).output.starts_with("MIT License\r\n"));
        // The resolver's run observations have no metadata; IPython's footer gives the cwd.
        assert_eq!(touch.cwd, None);
        assert_eq!(first[1].cwd.as_deref(), Some("/workspace"));
        assert_eq!(cat.cwd.as_deref(), Some("/workspace"));
        assert!(
            first[1].input["code"]
                .as_str()
                .unwrap()
                .starts_with("mit_license = ")
        );
        // 8 edits rejected by the linter, 3 with no exact match.
        let failed = second.iter().filter(|a| !res(a).ok).count();
        assert_eq!(failed, 11);
        assert!(actions.iter().all(|a| a.result.is_some() && a.ts.is_none()));
        assert_eq!(
            second.iter().map(|a| a.seq).collect::<Vec<_>>(),
            (0..21).map(|k| 1 + 2 * k).collect::<Vec<_>>()
        );
    }

    #[test]
    fn fixtures() {
        // Offsets, string ids, an error observation, an ipython traceback, a hidden command,
        // an observation that arrives after another action, a browse action.
        let list = r#"[
          {"id": 1, "timestamp": "2025-03-01T10:00:00Z", "source": "agent", "action": "run",
           "args": {"command": "pytest -q", "thought": "x", "hidden": false}},
          {"id": 2, "timestamp": "2025-03-01T10:00:01Z", "source": "agent", "action": "run",
           "args": {"command": "git config user.name x", "hidden": true}},
          {"id": 3, "timestamp": "2025-03-01T10:00:02Z", "source": "agent", "action": "run_ipython",
           "args": {"code": "1/0"}},
          {"id": 4, "timestamp": "2025-03-01T10:00:04.5Z", "source": "agent", "cause": 1,
           "observation": "run", "content": "1 failed",
           "extras": {"command": "pytest -q", "metadata": {"exit_code": 1, "working_dir": "/w/sub"}}},
          {"id": 5, "timestamp": "2025-03-01T10:00:05Z", "source": "agent", "cause": 3,
           "observation": "run_ipython",
           "content": "---------------------------------------------------------------------------\nZeroDivisionError                         Traceback (most recent call last)\nCell In[1], line 1\n----> 1 1/0\n\nZeroDivisionError: division by zero\n[Jupyter current working directory: /w]"},
          {"id": "6", "timestamp": "bad", "source": "agent", "action": "write",
           "args": {"path": "/w/a.txt", "content": "hi", "security_risk": 0}},
          {"id": 7, "timestamp": "2025-03-01T10:00:06Z", "source": "agent", "cause": "6",
           "observation": "error", "content": "Permission denied", "extras": {}},
          {"id": 8, "source": "agent", "action": "browse", "args": {"url": "http://localhost:3000"}},
          {"id": 9, "source": "user", "action": "run", "args": {"command": ""}},
          {"id": 10, "source": "agent", "action": "run", "args": {"command": "sleep 99", "is_input": false}},
          {"id": 11, "cause": 10, "observation": "run", "content": "",
           "extras": {"exit_code": -1}},
          {"id": 12, "source": "agent", "action": "run", "args": {"command": "C-c", "is_input": true}},
          {"id": 13, "source": "agent", "action": "mystery_tool", "args": {"x": 1}}
        ]"#;
        let (actions, problems) = run(&OpenHands, Path::new("/d/conv-1.json"), list.as_bytes());
        assert!(problems.is_empty());
        assert_eq!(
            tools(&actions),
            [
                "run",
                "run_ipython",
                "write",
                "browse",
                "run",
                "run",
                "mystery_tool"
            ]
        );
        let pytest = &actions[0];
        assert_eq!(pytest.ts, Some("2025-03-01T10:00:00Z".parse().unwrap()));
        let r = res(pytest);
        assert_eq!(
            (r.ok, r.exit_code, r.duration_ms),
            (false, Some(1), Some(4500))
        );
        assert_eq!(pytest.cwd.as_deref(), Some("/w/sub"));
        let ipy = &actions[1];
        assert!(!res(ipy).ok);
        assert_eq!(res(ipy).exit_code, None);
        // No earlier observation reported a directory: its own (IPython's footer).
        assert_eq!(ipy.cwd.as_deref(), Some("/w"));
        assert_eq!(
            actions[2].cwd.as_deref(),
            Some("/w"),
            "the latest earlier working_dir"
        );
        let write = &actions[2];
        assert_eq!(write.input, json!({"path": "/w/a.txt", "content": "hi"}));
        assert_eq!(write.ts, None);
        assert!(!res(write).ok);
        assert_eq!(res(write).duration_ms, None);
        assert_eq!(actions[3].input, json!({"url": "http://localhost:3000"}));
        assert!(actions[3].result.is_none());
        assert_eq!(res(&actions[4]).exit_code, Some(-1));
        assert!(!res(&actions[4]).ok);
        assert_eq!(
            actions[5].input,
            json!({"command": "C-c", "is_input": true})
        );

        // Wrapper object with a conversation id.
        let wrapped = r#"{"conversation_id": "abc123", "trajectory": [
          {"id": 0, "action": "read", "args": {"path": "/a"}},
          {"id": 1, "cause": 0, "observation": "read", "content": "ERROR:\nInvalid `path` parameter: /a"}]}"#;
        let (actions, _) = run(&OpenHands, Path::new("/d/x.json"), wrapped.as_bytes());
        assert_eq!(actions[0].session, "abc123");
        assert!(!res(&actions[0]).ok);

        // Resolver: [action, observation] pairs, instance_id, and exit code only in the text.
        let resolver = concat!(
            r#"{"instance_id": "django__django-1", "history": [[{"action": "run", "command": "ls", "thought": "t"}, {"observation": "run", "content": "a\n[Command finished with exit code 2]"}], [{"action": "message", "content": "hi"}, {"observation": "null", "content": ""}]]}"#,
            "\n",
            "\n",
            r#"{"history": [{"action": "run", "command": "make"}, {"observation": "run", "exit_code": 0, "content": "ok"}]}"#,
            "\n",
            r#"{"no_history": true}"#,
            "\n",
        );
        let path = Path::new("/out/output.jsonl");
        let (actions, problems) = run(&OpenHandsResolver, path, resolver.as_bytes());
        assert!(problems.is_empty());
        assert_eq!(actions.len(), 2);
        assert_eq!(actions[0].session, "output:django__django-1");
        assert_eq!(actions[0].input, json!({"command": "ls"}));
        assert_eq!(
            (res(&actions[0]).ok, res(&actions[0]).exit_code),
            (false, Some(2))
        );
        assert_eq!(actions[1].session, "output:line3");
        assert!(res(&actions[1]).ok);
    }

    #[test]
    fn robustness() {
        let path = Path::new("/d/t.json");
        for bad in [
            &b""[..],
            b"[{\"id\": 1, \"action\": \"run\"",
            b"\xff\xfe[]",
            b"7",
            b"{}",
        ] {
            let (actions, problems) = run(&OpenHands, path, bad);
            assert!(actions.is_empty());
            assert_eq!(problems.len(), 1, "{:?}", String::from_utf8_lossy(bad));
        }
        // Wrong types in every field read.
        let wrong = br#"[1, "x", null, [],
          {"id": [], "action": 5, "args": {"command": 1}},
          {"id": {}, "action": "run", "args": "nope", "timestamp": 3, "tool_call_metadata": 1},
          {"id": 1.5, "action": "run", "args": {"command": ["ls"]}},
          {"id": 2, "action": "run_ipython", "args": {"code": null}},
          {"id": 3, "action": "read", "args": []},
          {"id": 4, "cause": 3, "observation": 9, "content": {"a": 1},
           "extras": {"metadata": {"exit_code": "zero", "working_dir": 5}, "exit_code": 99999999999},
           "success": "no", "timestamp": []}
        ]"#;
        let (actions, problems) = run(&OpenHands, path, wrong);
        assert!(problems.is_empty());
        assert_eq!(tools(&actions), ["read"]);
        let r = res(&actions[0]);
        assert_eq!((r.ok, r.exit_code, r.output.as_str()), (true, None, ""));
        // A 1 MB observation.
        let big = format!(
            r#"[{{"id": 1, "action": "run", "args": {{"command": "cat big"}}}},
               {{"id": 2, "cause": 1, "observation": "run", "content": "{}"}}]"#,
            "x".repeat(1 << 20)
        );
        let (actions, _) = run(&OpenHands, path, big.as_bytes());
        assert_eq!(res(&actions[0]).output.len(), 1 << 20);

        let rpath = Path::new("/d/output.jsonl");
        let lines =
            b"{\"history\": 5}\n[1,2]\n{\"history\": [1, [2], {\"action\": 3}]}\n\xff\n{\"hist";
        let (actions, problems) = run(&OpenHandsResolver, rpath, lines);
        assert!(actions.is_empty());
        assert_eq!(problems.len(), 3);
    }

    fn all_corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                all_corpus_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }

    #[test]
    fn sniff_against_the_corpus() {
        if corpus_file("PROVENANCE.md").is_none() {
            return;
        }
        let mut files = Vec::new();
        all_corpus_files(Path::new(CORPUS), &mut files);
        assert!(files.len() > 20);
        for file in files {
            let bytes = std::fs::read(&file).expect("read");
            let head = &bytes[..bytes.len().min(64 * 1024)];
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let list = name.starts_with("trajs__");
            let resolver = name == "resolver_mock_output__output.jsonl";
            assert_eq!(OpenHands.sniff(&file, head), list, "{name}");
            assert_eq!(OpenHandsResolver.sniff(&file, head), resolver, "{name}");
        }
    }
}
