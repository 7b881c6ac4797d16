//! toolsmith's native log format: the `Action` record as JSON Lines, so that any agent can log
//! its tool calls for toolsmith to learn from.
//!
//! # Format (version 1)
//!
//! UTF-8 JSON Lines: one JSON object per line, each line terminated by `\n`. Empty lines are
//! ignored. Writers put `"v": 1` as the first field so a reader can tell the format and version
//! from the first bytes of a file; readers do not depend on field order. A line is either a
//! **call** (it has `tool`), optionally carrying its result, or a **late result** for a call
//! logged earlier (no `tool`, but `call_id` and result fields).
//!
//! | field            | type                    | call      | late result | meaning |
//! |------------------|-------------------------|-----------|-------------|---------|
//! | `v`              | integer                 | required  | required    | format version: `1` |
//! | `session`        | string, non-empty       | required  | required    | stable id of the agent or shell session |
//! | `tool`           | string, non-empty       | required  | absent      | the tool's name (`Bash`, `shell`, `Edit`, …) |
//! | `input`          | object                  | optional  | ignored     | the call's input (default `{}`); shell commands as `{"command": "…"}` |
//! | `seq`            | integer ≥ 0             | optional  | ignored     | order within the session, increasing in log order; default: the line's byte offset × 256 |
//! | `ts`             | string (RFC 3339) or integer (Unix seconds) | optional | ignored | when the call was made; an unreadable value is treated as absent |
//! | `cwd`            | string                  | optional  | ignored     | working directory of the call |
//! | `call_id`        | string                  | optional  | required    | the writer's id for the call, joining a later result |
//! | `parent_session` | string                  | optional  | ignored     | for a sub-agent, the session that started it |
//! | `ok`             | boolean                 | optional  | optional    | whether the call succeeded; default: `exit_code == 0` if there is one, else `true` |
//! | `exit_code`      | integer (32-bit)        | optional  | optional    | process exit code |
//! | `output`         | string                  | optional  | optional    | output text (toolsmith caps and redacts it before storing) |
//! | `duration_ms`    | integer ≥ 0             | optional  | optional    | how long the call took |
//! | `source`         | any                     | ignored   | ignored     | free for the writer (e.g. the agent's name); actions are stored with source `native` |
//!
//! A line carries a result when at least one of `ok`, `exit_code`, `output`, `duration_ms` is
//! present. The result fields may also be nested in a `"result"` object (as serde serializes
//! `Action`); top-level fields are then not read. A JSON `null` counts as absent. Unknown fields
//! are ignored, so version 1 can grow optional fields. A present field of the wrong type makes the
//! line a problem (reported, skipped; the rest of the file is read), as does any `v` other than
//! 1: "unsupported native record version 2; this toolsmith reads v1".
//!
//! A call and its result on one line:
//!
//! ```json
//! {"v":1,"session":"s-42","seq":1,"ts":"2026-11-20T10:00:00Z","source":"my-agent","cwd":"/src/app","tool":"shell","input":{"command":"cargo test -p foo"},"ok":false,"exit_code":101,"output":"test result: FAILED. 3 passed; 1 failed","duration_ms":5120}
//! ```
//!
//! A call logged before it finishes, then its result on a later line, joined by `call_id`:
//!
//! ```json
//! {"v":1,"session":"s-42","ts":"2026-11-20T10:01:00Z","tool":"shell","call_id":"c-7","input":{"command":"make"}}
//! {"v":1,"session":"s-42","call_id":"c-7","ok":true,"exit_code":0,"output":"done","duration_ms":812}
//! ```
//!
//! A line with `parent_session` also yields an [`Item::SessionLink`] (once per session and
//! parser). The parser keeps no state across restarts.

use std::path::Path;

use serde_json::{Map, Value};

use crate::action::{Action, ActionResult, Source};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// toolsmith's native JSON Lines format.
pub struct Native;

/// The format version this reader understands.
const VERSION: u64 = 1;

/// Most sessions whose parent link is remembered (so it is emitted once), before forgetting.
const MAX_LINKS: usize = 1024;

impl Format for Native {
    fn source(&self) -> Source {
        Source::Native
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, _path: &Path, _state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(NativeParser::default())
    }

    /// The first line is an object with an integer `v` ≥ 1 (a later version is recognised so
    /// its lines are reported as unsupported rather than the file as unknown), a string
    /// `session`, and a string `tool` or `call_id`.
    fn sniff(&self, _path: &Path, head: &[u8]) -> bool {
        let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(first) else {
            return false;
        };
        obj.get("v").and_then(Value::as_u64).is_some_and(|v| v >= 1)
            && obj.get("session").is_some_and(Value::is_string)
            && (obj.get("tool").is_some_and(Value::is_string)
                || obj.get("call_id").is_some_and(Value::is_string))
    }
}

#[derive(Debug, Default)]
struct NativeParser {
    /// Sessions whose parent link was emitted.
    linked: Vec<String>,
}

impl RecordParser for NativeParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        if record.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let value: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(Problem::new("native record is not a JSON object"));
        };
        match get(&obj, "v") {
            None => {
                return Err(Problem::new(
                    "native record without \"v\" (expected \"v\": 1)",
                ));
            }
            Some(v) => match v.as_u64() {
                Some(VERSION) => {}
                Some(other) => {
                    return Err(Problem::new(format!(
                        "unsupported native record version {other}; this toolsmith reads v1"
                    )));
                }
                None => return Err(Problem::new(format!("\"v\" must be an integer, not {v}"))),
            },
        }
        let session = match get(&obj, "session") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err(Problem::new("\"session\" must be a non-empty string")),
            None => return Err(Problem::new("native record without \"session\"")),
        };
        let call_id = opt_str(&obj, "call_id")?;
        let result = read_result(&obj)?;
        let tool = match get(&obj, "tool") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err(Problem::new("\"tool\" must be a non-empty string")),
            None => {
                return match (call_id, result) {
                    (Some(call_id), Some(result)) => {
                        out.push(Item::Result(LateResult {
                            session,
                            call_id,
                            result,
                            replaces: false,
                        }));
                        Ok(())
                    }
                    (Some(_), None) => Err(Problem::new(
                        "native record with a \"call_id\" but neither a \"tool\" nor a result",
                    )),
                    (None, _) => Err(Problem::new(
                        "native record with neither \"tool\" (a call) nor \"call_id\" (a result)",
                    )),
                };
            }
        };
        let input = match get(&obj, "input") {
            None => Value::Object(Map::new()),
            Some(input @ Value::Object(_)) => input.clone(),
            Some(_) => return Err(Problem::new("\"input\" must be an object")),
        };
        let seq = match get(&obj, "seq") {
            None => pos.offset << 8,
            Some(seq) => seq
                .as_u64()
                .ok_or_else(|| Problem::new("\"seq\" must be a non-negative integer"))?,
        };
        let ts = get(&obj, "ts").and_then(|ts| match ts {
            Value::String(text) => text.parse().ok(),
            Value::Number(n) => jiff::Timestamp::from_second(n.as_i64()?).ok(),
            _ => None,
        });
        let cwd = opt_str(&obj, "cwd")?;
        let parent_session = opt_str(&obj, "parent_session")?;
        if let Some(parent) = &parent_session
            && !self.linked.contains(&session)
        {
            if self.linked.len() >= MAX_LINKS {
                self.linked.clear();
            }
            self.linked.push(session.clone());
            out.push(Item::SessionLink {
                session: session.clone(),
                parent: parent.clone(),
            });
        }
        out.push(Item::Action(Action {
            session,
            seq,
            ts,
            source: Source::Native,
            cwd,
            tool,
            input,
            call_id,
            parent_session,
            result,
        }));
        Ok(())
    }
}

/// A field, with `null` treated as absent.
fn get<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn opt_str(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, Problem> {
    match get(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Problem::new(format!("\"{key}\" must be a string"))),
    }
}

/// The result fields, top-level or in a nested `result` object; `None` when there are none.
fn read_result(obj: &Map<String, Value>) -> Result<Option<ActionResult>, Problem> {
    let fields = match get(obj, "result") {
        Some(Value::Object(nested)) => nested,
        Some(_) => return Err(Problem::new("\"result\" must be an object")),
        None => obj,
    };
    let ok = match get(fields, "ok") {
        None => None,
        Some(ok) => Some(
            ok.as_bool()
                .ok_or_else(|| Problem::new("\"ok\" must be a boolean"))?,
        ),
    };
    let exit_code = match get(fields, "exit_code") {
        None => None,
        Some(code) => Some(
            code.as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .ok_or_else(|| Problem::new("\"exit_code\" must be a 32-bit integer"))?,
        ),
    };
    let output = opt_str(fields, "output")?;
    let duration_ms = match get(fields, "duration_ms") {
        None => None,
        Some(ms) => Some(
            ms.as_u64()
                .ok_or_else(|| Problem::new("\"duration_ms\" must be a non-negative integer"))?,
        ),
    };
    if ok.is_none() && exit_code.is_none() && output.is_none() && duration_ms.is_none() {
        return Ok(None);
    }
    Ok(Some(ActionResult {
        ok: ok.unwrap_or(exit_code.is_none_or(|c| c == 0)),
        exit_code,
        output: output.unwrap_or_default(),
        duration_ms,
    }))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    /// What a tailer and store would make of a file: actions with their results joined.
    #[derive(Debug, Default, PartialEq)]
    struct Run {
        actions: Vec<Action>,
        orphans: Vec<LateResult>,
        links: Vec<(String, String)>,
        problems: Vec<(u64, String)>,
    }

    fn run(bytes: &[u8]) -> Run {
        let mut parser = Native.parser(Path::new("/x/log.jsonl"), None);
        let mut run = Run::default();
        let mut pos = Position { offset: 0, line: 1 };
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let line = &rest[..nl];
            let mut items = Vec::new();
            match parser.record(line.strip_suffix(b"\r").unwrap_or(line), pos, &mut items) {
                Ok(()) => {
                    for item in items {
                        match item {
                            Item::Action(action) => run.actions.push(action),
                            Item::Result(late) => {
                                let call = run.actions.iter_mut().rev().find(|a| {
                                    a.session == late.session
                                        && a.call_id.as_deref() == Some(&late.call_id)
                                });
                                match call {
                                    Some(action) => action.result = Some(late.result),
                                    None => run.orphans.push(late),
                                }
                            }
                            Item::SessionLink { session, parent } => {
                                run.links.push((session, parent))
                            }
                        }
                    }
                }
                Err(problem) => {
                    assert!(items.is_empty(), "a problem record yielded items");
                    run.problems.push((pos.line, problem.reason));
                }
            }
            pos = Position {
                offset: pos.offset + nl as u64 + 1,
                line: pos.line + 1,
            };
            rest = &rest[nl + 1..];
        }
        run
    }

    const LOG: &str = r#"{"v":1,"session":"s-42","seq":1,"ts":"2026-11-20T10:00:00Z","source":"my-agent","cwd":"/src/app","tool":"shell","input":{"command":"cargo test -p foo"},"ok":false,"exit_code":101,"output":"test result: FAILED","duration_ms":5120}
{"v":1,"session":"s-42","ts":"2026-11-20T10:01:00Z","tool":"shell","call_id":"c-7","input":{"command":"make"}}

{"v":1,"session":"s-42","seq":5,"ts":1763632920,"tool":"Edit","input":{"file_path":"a.rs"},"exit_code":0}
{"v":1,"session":"s-42","call_id":"c-7","ok":true,"exit_code":0,"output":"done","duration_ms":812}
{"v":1,"session":"sub-1","parent_session":"s-42","tool":"Read","input":{"file_path":"b.rs"},"ts":"yesterday","cwd":null,"result":{"ok":true,"output":"fn b() {}"}}
{"v":1,"session":"sub-1","parent_session":"s-42","tool":"Read","call_id":"c-9"}
{"v":2,"session":"s-42","tool":"shell","input":{"command":"ls"}}
{"v":1,"session":"s-42","call_id":"nowhere","exit_code":3}
"#;

    #[test]
    fn calls_results_and_late_results() {
        let run = run(LOG.as_bytes());
        assert_eq!(
            run.problems,
            vec![(
                8,
                "unsupported native record version 2; this toolsmith reads v1".into()
            )]
        );
        assert_eq!(run.links, vec![("sub-1".to_owned(), "s-42".to_owned())]);
        assert_eq!(run.orphans.len(), 1);
        assert_eq!(run.orphans[0].result.exit_code, Some(3));
        assert!(!run.orphans[0].result.ok);
        let a = &run.actions;
        assert_eq!(a.len(), 5);
        assert_eq!(
            a[0],
            Action {
                session: "s-42".into(),
                seq: 1,
                ts: Some("2026-11-20T10:00:00Z".parse().expect("ts")),
                source: Source::Native,
                cwd: Some("/src/app".into()),
                tool: "shell".into(),
                input: json!({"command": "cargo test -p foo"}),
                call_id: None,
                parent_session: None,
                result: Some(ActionResult {
                    ok: false,
                    exit_code: Some(101),
                    output: "test result: FAILED".into(),
                    duration_ms: Some(5120),
                }),
            }
        );
        // No seq on the wire: the line's offset << 8.
        let second_offset = LOG.find('\n').expect("line") as u64 + 1;
        assert_eq!(a[1].seq, second_offset << 8);
        assert_eq!(
            a[1].result,
            Some(ActionResult {
                ok: true,
                exit_code: Some(0),
                output: "done".into(),
                duration_ms: Some(812),
            })
        );
        assert_eq!(
            a[2].ts,
            Some(jiff::Timestamp::from_second(1763632920).expect("ts"))
        );
        assert_eq!(
            a[2].result.as_ref().map(|r| (r.ok, r.output.as_str())),
            Some((true, ""))
        );
        assert_eq!((a[3].ts, a[3].cwd.as_deref()), (None, None));
        assert_eq!(a[3].parent_session.as_deref(), Some("s-42"));
        assert_eq!(
            a[3].result.as_ref().map(|r| r.output.as_str()),
            Some("fn b() {}")
        );
        assert_eq!((a[4].input.clone(), a[4].result.clone()), (json!({}), None));
    }

    #[test]
    fn wrong_types_are_problems() {
        let cases = [
            (r#"{"session":"s","tool":"t"}"#, "without \"v\""),
            (
                r#"{"v":"1","session":"s","tool":"t"}"#,
                "\"v\" must be an integer",
            ),
            (
                r#"{"v":1.5,"session":"s","tool":"t"}"#,
                "\"v\" must be an integer",
            ),
            (
                r#"{"v":0,"session":"s","tool":"t"}"#,
                "unsupported native record version 0",
            ),
            (r#"{"v":1,"tool":"t"}"#, "without \"session\""),
            (r#"{"v":1,"session":"","tool":"t"}"#, "\"session\" must be"),
            (r#"{"v":1,"session":5,"tool":"t"}"#, "\"session\" must be"),
            (r#"{"v":1,"session":"s","tool":5}"#, "\"tool\" must be"),
            (
                r#"{"v":1,"session":"s","tool":"t","input":"ls"}"#,
                "\"input\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","seq":-1}"#,
                "\"seq\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","seq":"1"}"#,
                "\"seq\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","cwd":5}"#,
                "\"cwd\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","call_id":5}"#,
                "\"call_id\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","parent_session":[]}"#,
                "\"parent_session\"",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","ok":"yes"}"#,
                "\"ok\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","exit_code":1e12}"#,
                "\"exit_code\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","exit_code":4294967296}"#,
                "\"exit_code\"",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","output":7}"#,
                "\"output\" must be",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","duration_ms":-3}"#,
                "\"duration_ms\"",
            ),
            (
                r#"{"v":1,"session":"s","tool":"t","result":true}"#,
                "\"result\" must be",
            ),
            (
                r#"{"v":1,"session":"s","call_id":"c"}"#,
                "neither a \"tool\" nor a result",
            ),
            (r#"{"v":1,"session":"s","ok":true}"#, "neither \"tool\""),
            (r#"[1]"#, "not a JSON object"),
            (r#"{"v":1,"session":"s","tool":"t""#, "invalid JSON"),
        ];
        for (line, why) in cases {
            let run = run(format!("{line}\n").as_bytes());
            assert_eq!(run.actions.len() + run.orphans.len(), 0, "{line}");
            assert!(
                run.problems.len() == 1 && run.problems[0].1.contains(why),
                "{line}: {:?}",
                run.problems
            );
        }
        // A timestamp of the wrong type is no timestamp, not a problem; `source` is free.
        let run =
            run(b"{\"v\":1,\"session\":\"s\",\"tool\":\"t\",\"ts\":true,\"source\":{\"a\":1}}\n");
        assert_eq!(
            (run.problems.len(), run.actions.len(), run.actions[0].ts),
            (0, 1, None)
        );
    }

    #[test]
    fn untrusted_records_never_panic() {
        let long = "x".repeat(1 << 20);
        let big = json!({"v": 1, "session": "s", "tool": "t", "output": long}).to_string();
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let records: [&[u8]; 8] = [
            b"",
            b" \t",
            b"{\"v\":1,\"session\":\"s\",\"to",
            b"{\"v\":1,\"session\":\"\xff\",\"tool\":\"t\"}",
            b"\xff\xfe\x00binary",
            deep.as_bytes(),
            big.as_bytes(),
            long.as_bytes(),
        ];
        let mut parser = Native.parser(Path::new("/x/n.jsonl"), Some(json!("garbage")));
        let mut oks = 0;
        for (i, record) in records.iter().enumerate() {
            let mut out = Vec::new();
            let pos = Position {
                offset: i as u64,
                line: i as u64 + 1,
            };
            match parser.record(record, pos, &mut out) {
                Ok(()) => oks += 1,
                Err(_) => assert!(out.is_empty()),
            }
            if i == 6 {
                let Some(Item::Action(action)) = out.first() else {
                    panic!("1 MB record")
                };
                assert_eq!(
                    action.result.as_ref().map(|r| r.output.len()),
                    Some(1 << 20)
                );
            }
        }
        assert_eq!(oks, 3);
        assert_eq!(parser.state(), Value::Null);
    }

    #[test]
    fn sniff_recognises_native_files_only() {
        let path = Path::new("/x/agent.jsonl");
        assert!(Native.sniff(path, LOG.as_bytes()));
        assert!(Native.sniff(
            path,
            b"{\"v\":1,\"session\":\"s\",\"call_id\":\"c\",\"ok\":true}"
        ));
        assert!(Native.sniff(path, b"{\"v\":2,\"session\":\"s\",\"tool\":\"t\"}\n"));
        assert!(!Native.sniff(path, b"{\"v\":0,\"session\":\"s\",\"tool\":\"t\"}\n"));
        assert!(!Native.sniff(path, b"{\"v\":1,\"session\":\"s\"}\n"));
        assert!(!Native.sniff(path, b"{\"session\":\"s\",\"tool\":\"t\"}\n"));
        assert!(!Native.sniff(path, b"\xff\xfe"));
        assert!(!Native.sniff(path, b""));
        let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
        if !root.is_dir() {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("corpus not found at {}", root.display());
            }
            eprintln!("skipped: corpus not found at {}", root.display());
            return;
        }
        let mut dirs = vec![root];
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
                assert!(!Native.sniff(&path, head), "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen > 40, "only {seen} corpus files");
    }
}
