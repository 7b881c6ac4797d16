//! Cursor's CLI agent transcripts:
//! `~/.cursor/projects/<project slug>/agent-transcripts/<id>/<id>.jsonl`.
//!
//! One JSON object per line, `{"role": "user" | "assistant", "message": {"content": [blocks]}}`.
//! An assistant block `{"type": "tool_use", "name", "input"}` is a call: `Shell`
//! (`{"command", "description", "working_directory"?}`), `ReadFile`, `Glob`, `rg`, `Delete`,
//! `ApplyPatch` (whose `input` is the patch text itself: the action's input is
//! `{"patch": …}`), `AskQuestion`, … The transcript records no results and no timestamps: every
//! action has `result: None` (unknown, never guessed) and `ts: None`, and no call id unless a
//! block carries an `id`. A `Shell` call's `working_directory` is its cwd; others have none
//! (the project slug is the folder with its separators turned into dashes, which cannot be
//! turned back).
//!
//! Session: the transcript id (the file stem). `seq` is `offset << 8 | block index`. User
//! lines, text blocks and unknown block types are skipped quietly.

use std::path::Path;

use serde_json::{Value, json};

use crate::action::{Action, Source};
use crate::ingest::adapters::{Format, Framing, Item, Position, Problem, RecordParser};

/// The Cursor CLI agent transcript format.
pub struct Cursor;

impl Format for Cursor {
    fn source(&self) -> Source {
        Source::Cursor
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, path: &Path, _state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(CursorParser {
            session: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let in_transcripts = path.extension().is_some_and(|e| e == "jsonl")
            && path
                .parent()
                .and_then(Path::parent)
                .and_then(Path::file_name)
                .is_some_and(|n| n == "agent-transcripts");
        let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(first) else {
            return false;
        };
        // Exactly a role and a message holding content blocks: Claude Code's lines also have a
        // `type`, a `uuid` and a `sessionId`.
        let shaped = obj.len() == 2
            && obj.get("role").is_some_and(Value::is_string)
            && obj
                .get("message")
                .and_then(|m| m.get("content"))
                .is_some_and(Value::is_array);
        shaped || (in_transcripts && obj.contains_key("role") && obj.contains_key("message"))
    }
}

struct CursorParser {
    session: String,
}

impl RecordParser for CursorParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        let value: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(Problem::new("record is not a JSON object"));
        };
        if obj.get("role").and_then(Value::as_str) != Some("assistant") {
            return Ok(());
        }
        let blocks = match obj.get("message").and_then(|m| m.get("content")) {
            Some(Value::Array(blocks)) => blocks,
            // Plain text content, or none.
            _ => return Ok(()),
        };
        let mut actions = Vec::new();
        for (index, block) in blocks.iter().enumerate() {
            if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            let Some(name) = block
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            else {
                return Err(Problem::new("tool_use block without a string \"name\""));
            };
            let input = match block.get("input") {
                Some(Value::Object(input)) => Value::Object(input.clone()),
                Some(Value::String(text)) if name == "ApplyPatch" => json!({ "patch": text }),
                Some(Value::String(text)) => json!({ "input": text }),
                None | Some(Value::Null) => json!({}),
                Some(other) => json!({ "input": other }),
            };
            let cwd = input
                .get("working_directory")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
                .map(str::to_owned);
            actions.push(Item::Action(Action {
                session: self.session.clone(),
                seq: (pos.offset << 8) | index.min(255) as u64,
                ts: None,
                source: Source::Cursor,
                cwd,
                tool: name.to_owned(),
                input,
                call_id: block
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty())
                    .map(str::to_owned),
                parent_session: None,
                result: None,
            }));
        }
        out.extend(actions);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::ingest::adapters::shell_common::testkit::{self, ZshRule};

    const CORPUS_FILE: &str =
        "formats-2026/cursor/LAF-US__IDAHO-VAULT__35a82dfe-d4ab-4238-8135-22c978781bca.jsonl";

    #[test]
    fn the_real_transcript_gives_its_127_shell_calls_without_results() {
        let Some((path, bytes)) = testkit::corpus(CORPUS_FILE) else {
            return;
        };
        let run = testkit::run(&Cursor, ZshRule::OddBackslashes, &path, &bytes);
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        let shell: Vec<&Action> = run.actions.iter().filter(|a| a.tool == "Shell").collect();
        // PROVENANCE.md: 127 shell calls; 222 tool calls in all.
        assert_eq!(shell.len(), 127);
        assert_eq!(run.actions.len(), 222);
        assert!(
            run.actions
                .iter()
                .all(|a| a.result.is_none() && a.ts.is_none())
        );
        assert_eq!(
            shell[0].input["command"],
            "pwsh -NoProfile -Command \"Test-Path 'C:\\Users\\loganf\\Documents\\IDAHO-VAULT\\debug-35a82d.log'\""
        );
        assert_eq!(
            shell[0].session,
            "LAF-US__IDAHO-VAULT__35a82dfe-d4ab-4238-8135-22c978781bca"
        );
        let in_dir = shell
            .iter()
            .find(|a| {
                a.input["command"] == "ls -la \"debug-35a82d.log\" 2>/dev/null || echo \"missing\""
            })
            .expect("the call with a working directory");
        assert_eq!(
            in_dir.cwd.as_deref(),
            Some("C:/Users/loganf/Documents/IDAHO-VAULT")
        );
        let patch = run
            .actions
            .iter()
            .find(|a| a.tool == "ApplyPatch")
            .expect("a patch");
        assert!(
            patch.input["patch"]
                .as_str()
                .is_some_and(|p| p.starts_with("*** Begin Patch\n*** Update File: !/agent.sh\n"))
        );
        assert!(run.actions.windows(2).all(|w| w[0].seq < w[1].seq));
        testkit::assert_resume_equivalent(&Cursor, ZshRule::OddBackslashes, &path, &bytes);
        assert_eq!(
            crate::ingest::formats::sniff(&path, &testkit::head(&path)).map(|(n, _)| n),
            Some("cursor")
        );
    }

    #[test]
    fn sessions_are_the_transcript_id_and_bad_lines_are_problems() {
        let path = PathBuf::from("/h/.cursor/projects/p/agent-transcripts/abc/abc.jsonl");
        let lines = [
            r#"{"role":"user","message":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"role":"assistant","message":{"content":[{"type":"text","text":"ok"},{"type":"tool_use","name":"Shell","input":{"command":"cargo  test -p x"}},{"type":"tool_use","name":"ReadFile","input":{"path":"a.rs"}}]}}"#,
            r#"{"role":"assistant","message":{"content":[{"type":"tool_use","name":"Shell","inp"#,
            "garbage",
            r#"{"role":"assistant","message":{"content":[{"type":"tool_use","name":7}]}}"#,
            r#"{"role":"system","message":{"content":"x"}}"#,
            r#"{"role":"assistant","message":{"content":[{"type":"image"},{"type":"tool_use","id":"c1","name":"Delete","input":{"path":"b"}}]}}"#,
        ];
        let text = lines.join("\n") + "\n";
        let run = testkit::run(&Cursor, ZshRule::OddBackslashes, &path, text.as_bytes());
        let tools: Vec<(&str, &str)> = run
            .actions
            .iter()
            .map(|a| (a.session.as_str(), a.tool.as_str()))
            .collect();
        assert_eq!(
            tools,
            [("abc", "Shell"), ("abc", "ReadFile"), ("abc", "Delete")]
        );
        assert_eq!(run.actions[0].input["command"], "cargo  test -p x");
        assert_eq!(run.actions[2].call_id.as_deref(), Some("c1"));
        let lines: Vec<u64> = run.problems.iter().map(|(p, _)| p.line).collect();
        assert_eq!(lines, [3, 4, 5]);
        assert!(Cursor.sniff(&path, text.as_bytes()));
    }

    /// Kimi CLI, Cline and Cursor claim their own files of the corpus and no other.
    #[test]
    fn the_2026_readers_claim_only_their_own_corpus_files() {
        if testkit::corpus("formats-2026/PROVENANCE.md").is_none() {
            return;
        }
        for path in testkit::corpus_files() {
            let sniffed = crate::ingest::formats::sniff(&path, &testkit::head(&path));
            let folder = path
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = path.to_string_lossy();
            for format in ["kimi-cli", "cline", "cursor"] {
                let mine = path.to_string_lossy().contains("formats-2026")
                    && folder == format
                    && (format != "kimi-cli" || name.ends_with("wire.jsonl"));
                assert_eq!(
                    sniffed.is_some_and(|(n, _)| n == format),
                    mine,
                    "{format}: {name}"
                );
            }
        }
    }

    #[test]
    fn untrusted_records_never_panic() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let mut parser = Cursor.parser(Path::new("/x/y.jsonl"), None);
        for (i, record) in [
            "",
            "null",
            &deep,
            r#"{"role":"assistant","message":5}"#,
            r#"{"role":"assistant","message":{"content":[5,{"type":"tool_use","name":"Shell","input":[1]}]}}"#,
            r#"{"role":"assistant","message":{"content":[{"type":"tool_use","name":"Shell","input":{"working_directory":5}}]}}"#,
        ]
        .iter()
        .enumerate()
        {
            let pos = Position {
                offset: u64::MAX - i as u64,
                line: 1,
            };
            let _ = parser.record(record.as_bytes(), pos, &mut Vec::new());
        }
    }
}
