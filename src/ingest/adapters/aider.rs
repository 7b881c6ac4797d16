//! aider chat history (`.aider.chat.history.md`), read line by line.
//!
//! aider appends markdown to this file as a session goes (`aider/io.py`):
//! - `# aider chat started at 2025-05-23 16:51:58` starts a session (a local time, no zone);
//! - `#### <text>` is the user's input, one `#### ` line per input line;
//! - `> <text>` is aider's own output (`tool_output`/`tool_error`/`confirm_ask`), with a trailing
//!   markdown line break (two spaces). A multi-line `tool_output` gets the `> ` on its first line
//!   only: the following lines are raw;
//! - anything else is the model's reply.
//!
//! What becomes an [`Action`]:
//! - `> Applied edit to <path>` → tool `Edit`, input `{"path"}`, ok, output that line. Complete.
//! - `> The LLM did not conform to the edit format.` → tool `Edit`, input `{}`, not ok, output
//!   the error lines that follow.
//! - A shell command: `#### /run <cmd>` or `#### !<cmd>` typed by the user, `#### /test <cmd>`,
//!   `#### /git <args>` (command `git <args>`), or `> Running <cmd>` after aider asked
//!   `Run shell command(s)?` for commands the model suggested → tool `shell`, input
//!   `{"command"}`. Only the first line of a multi-line input is the command.
//!
//! A shell command's output comes after it, on later lines (records), so the action is emitted
//! at its start, with `call_id` `<session>:<offset>` and no result, and its result follows as an
//! [`Item::Result`] when the output ends: at the next blank line, `#### ` input, session start or
//! command. The tailer's line framing drops whitespace-only lines, so a blank line is seen as a
//! jump in [`Position::line`] (a blank record, when one is passed, counts too). The output is the `> ` lines (prefix and line break removed) plus the raw lines
//! continuing a multi-line `tool_output`; a blank line inside a command's output therefore ends
//! it early. The pending command and its output so far (capped at [`MAX_PENDING_OUTPUT`]) are
//! kept in [`RecordParser::state`], so a restart between two lines loses nothing.
//!
//! aider does not log exit codes, and current versions (`aider/run_cmd.py`) print a command's
//! output to the terminal only: the log keeps "Add 0.1k tokens of command output to the chat?"
//! and "Added N lines of output to the chat." (older versions logged the output itself through
//! `tool_output`). So `exit_code` is always `None` and `ok` is true unless aider reported an
//! error running the command, or — for `/test`, which adds the output to the chat only when the
//! exit status is non-zero — the output was added. Tests aider runs by itself after an edit
//! (`--auto-test`) leave no command line in the log and yield nothing.
//!
//! `session`: `<path>@<start time>` (`<path>` before the first session header). `seq`:
//! `offset << 8`. `ts`: none (the only times are the zone-less session starts). `cwd`: the
//! directory holding the file when it has aider's default name (aider keeps it at the git root,
//! where it runs commands), else none. Not turned into actions: `/commit` and aider's own commits,
//! `/add`, `/ask`, … (no command runs). `.aider.input.history` needs no adapter: it holds the
//! user's inputs (the same `/run` lines this log has, without results) and zone-less times.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::action::{Action, ActionResult, Source};
use crate::ingest::adapters::{Format, Framing, Item, LateResult, Position, Problem, RecordParser};

/// aider's chat history markdown.
pub struct Aider;

/// The most output kept for a pending command (the tailer caps it further).
pub const MAX_PENDING_OUTPUT: usize = 64 * 1024;

const HEADER: &str = "# aider chat started at";
const DEFAULT_NAME: &str = ".aider.chat.history.md";

impl Format for Aider {
    fn source(&self) -> Source {
        Source::Aider
    }

    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        let state = state
            .and_then(|s| serde_json::from_value::<State>(s).ok())
            .unwrap_or_default();
        let cwd = (path.file_name().is_some_and(|n| n == DEFAULT_NAME))
            .then(|| path.parent())
            .flatten()
            .map(|p| p.display().to_string())
            .filter(|p| !p.is_empty());
        Box::new(AiderParser {
            file: path.display().to_string(),
            cwd,
            state,
        })
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(DEFAULT_NAME))
        {
            return true;
        }
        let text = String::from_utf8_lossy(head);
        text.lines()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.starts_with(HEADER))
    }
}

/// What the previous line was.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Prev {
    #[default]
    Blank,
    /// A `#### ` line.
    User,
    /// A `> ` line.
    Tool,
    /// A raw line continuing a multi-line tool output.
    Continued,
    /// The model's text, or a session header.
    Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    /// `/run`, `!`, `/git`, or a suggested command.
    Shell,
    /// `/test`: output is added to the chat only on a non-zero exit.
    Test,
    /// An edit aider could not apply.
    EditFailure,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Pending {
    call_id: String,
    kind: Kind,
    output: String,
    failed: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    /// The current session's start time, as written.
    #[serde(default)]
    started: Option<String>,
    #[serde(default)]
    pending: Option<Pending>,
    #[serde(default)]
    prev: Prev,
    /// Inside a `> ` block that asked `Run shell command(s)?`.
    #[serde(default)]
    shell_block: bool,
    /// The line number of the last record: a gap means blank lines the framing skipped.
    #[serde(default)]
    last_line: u64,
}

struct AiderParser {
    file: String,
    cwd: Option<String>,
    state: State,
}

impl RecordParser for AiderParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        let text = String::from_utf8_lossy(record);
        let line = text.strip_suffix('\r').unwrap_or(&text);
        // The tailer does not pass whitespace-only lines: a jump in line numbers is one.
        if pos.line > self.state.last_line.saturating_add(1) {
            self.blank(out);
        }
        self.state.last_line = pos.line;

        if let Some(started) = line.strip_prefix(HEADER) {
            self.close(out);
            self.state.started = Some(started.trim().to_string());
            self.state.prev = Prev::Text;
            self.state.shell_block = false;
            return Ok(());
        }

        if line == "####" || line.starts_with("#### ") {
            let input = line.get(5..).unwrap_or_default().trim_end();
            if self.state.prev == Prev::User {
                // The next line of the same multi-line input.
                return Ok(());
            }
            self.close(out);
            self.state.prev = Prev::User;
            self.state.shell_block = false;
            if let Some((kind, command)) = user_command(input) {
                self.start(kind, json!({ "command": command }), pos, out);
            }
            return Ok(());
        }

        if line == ">" || line.starts_with("> ") {
            let body = line.get(2..).unwrap_or_default().trim_end();
            self.state.prev = Prev::Tool;
            if body.starts_with("Run shell command") {
                self.close(out);
                self.state.shell_block = true;
            } else if let Some(command) = body.strip_prefix("Running ")
                && self.state.shell_block
                && !command.trim().is_empty()
            {
                self.close(out);
                let command = command.trim();
                self.start(Kind::Shell, json!({ "command": command }), pos, out);
            } else if let Some(path) = body.strip_prefix("Applied edit to ") {
                self.close(out);
                let mut action = self.action(pos, "Edit", json!({ "path": path.trim() }));
                action.result = Some(ActionResult {
                    ok: true,
                    exit_code: None,
                    output: body.to_string(),
                    duration_ms: None,
                });
                out.push(Item::Action(action));
            } else if body == "The LLM did not conform to the edit format." {
                self.close(out);
                self.start(Kind::EditFailure, json!({}), pos, out);
                self.append(body);
            } else {
                self.append(body);
            }
            return Ok(());
        }

        if line.trim().is_empty() {
            self.blank(out);
            return Ok(());
        }

        if matches!(self.state.prev, Prev::Tool | Prev::Continued) {
            self.append(line.trim_end());
            self.state.prev = Prev::Continued;
        } else {
            self.state.prev = Prev::Text;
        }
        Ok(())
    }

    fn state(&self) -> Value {
        serde_json::to_value(&self.state).unwrap_or(Value::Null)
    }
}

/// The shell command a user input runs, if any.
fn user_command(input: &str) -> Option<(Kind, String)> {
    if let Some(command) = input.strip_prefix('!') {
        let command = command.trim();
        return (!command.is_empty()).then(|| (Kind::Shell, command.to_string()));
    }
    let (word, rest) = input.split_once(char::is_whitespace).unwrap_or((input, ""));
    let rest = rest.trim();
    match word {
        "/run" if !rest.is_empty() => Some((Kind::Shell, rest.to_string())),
        "/test" if !rest.is_empty() => Some((Kind::Test, rest.to_string())),
        "/git" if rest.is_empty() => Some((Kind::Shell, "git".to_string())),
        "/git" => Some((Kind::Shell, format!("git {rest}"))),
        _ => None,
    }
}

impl AiderParser {
    fn session(&self) -> String {
        match &self.state.started {
            Some(started) => format!("{}@{started}", self.file),
            None => self.file.clone(),
        }
    }

    fn action(&self, pos: Position, tool: &str, input: Value) -> Action {
        Action {
            session: self.session(),
            seq: pos.offset << 8,
            ts: None,
            source: Source::Aider,
            cwd: self.cwd.clone(),
            tool: tool.to_string(),
            input,
            call_id: None,
            parent_session: None,
            result: None,
        }
    }

    /// Emits an action whose result comes with later lines.
    fn start(&mut self, kind: Kind, input: Value, pos: Position, out: &mut Vec<Item>) {
        let tool = if kind == Kind::EditFailure {
            "Edit"
        } else {
            "shell"
        };
        let mut action = self.action(pos, tool, input);
        let call_id = format!("{}:{}", action.session, pos.offset);
        action.call_id = Some(call_id.clone());
        out.push(Item::Action(action));
        self.state.pending = Some(Pending {
            call_id,
            kind,
            output: String::new(),
            failed: kind == Kind::EditFailure,
        });
    }

    /// Adds a line to the pending command's output.
    fn append(&mut self, line: &str) {
        let Some(pending) = self.state.pending.as_mut() else {
            return;
        };
        if line.starts_with("Error occurred while running command")
            || line.starts_with("Error running command")
            || line.starts_with("Error running /git command")
            || (pending.kind == Kind::Test
                && line.starts_with("Added ")
                && line.ends_with(" of output to the chat."))
        {
            pending.failed = true;
        }
        if is_aider_notice(line) {
            // aider's own question or notice about the command, not what the command printed.
            return;
        }
        let extra = line.len() + usize::from(!pending.output.is_empty());
        if pending.output.len() + extra <= MAX_PENDING_OUTPUT {
            if !pending.output.is_empty() {
                pending.output.push('\n');
            }
            pending.output.push_str(line);
        }
    }

    /// A blank line: ends a pending command's output, a `> ` block and a multi-line input.
    fn blank(&mut self, out: &mut Vec<Item>) {
        self.close(out);
        self.state.prev = Prev::Blank;
        self.state.shell_block = false;
    }

    /// Emits the pending command's result.
    fn close(&mut self, out: &mut Vec<Item>) {
        let Some(pending) = self.state.pending.take() else {
            return;
        };
        out.push(Item::Result(LateResult {
            session: self.session(),
            call_id: pending.call_id,
            result: ActionResult {
                ok: !pending.failed,
                exit_code: None,
                output: pending.output,
                duration_ms: None,
            },
            replaces: false,
        }));
    }
}

/// Whether a `> ` line after a command is aider's own question or notice (`aider/io.py`
/// `confirm_ask`, `aider/coders/base_coder.py` `handle_shell_commands` and the commit notices
/// after it) rather than what the command printed: a question offering choices (`(Y)es/(N)o`),
/// "Added N lines of output to the chat.", the `/undo` hint, the token and cost report, a commit
/// aider made, an edit applied, an interrupt. Errors aider reports running the command are kept:
/// they are what is known of its failure.
fn is_aider_notice(line: &str) -> bool {
    let line = line.trim_end();
    let commit = line.strip_prefix("Commit ").is_some_and(|rest| {
        let hash = rest.split(' ').next().unwrap_or("");
        hash.len() >= 7 && hash.bytes().all(|b| b.is_ascii_hexdigit())
    });
    line.contains("(Y)es/(N)o")
        || (line.starts_with("Added ") && line.ends_with(" of output to the chat."))
        || line.starts_with("You can use /undo to undo")
        || line.starts_with("Tokens: ")
        || line.starts_with("Applied edit to ")
        || line.starts_with("^C ")
        || commit
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

    /// Feeds complete lines from `start` on as the tailer's `Lines` framing does (without the
    /// newline or a final `\r`, whitespace-only lines skipped — unless `blanks`), with a parser
    /// restored from `state`; returns the raw items, the problems and the final state.
    fn feed_with(
        path: &Path,
        bytes: &[u8],
        start: usize,
        state: Option<Value>,
        blanks: bool,
    ) -> (Vec<Item>, Vec<Problem>, Value) {
        let mut parser = Aider.parser(path, state);
        let mut items = Vec::new();
        let mut problems = Vec::new();
        let mut offset = start;
        let first_line = 1 + bytes[..start].iter().filter(|&&b| b == b'\n').count() as u64;
        let chunks = bytes[start..].split_inclusive(|&b| b == b'\n');
        for (line_no, chunk) in (first_line..).zip(chunks) {
            let Some(line) = chunk.strip_suffix(b"\n") else {
                break; // an unfinished last line waits for its newline
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !blanks && line.iter().all(u8::is_ascii_whitespace) {
                offset += chunk.len();
                continue;
            }
            let pos = Position {
                offset: offset as u64,
                line: line_no,
            };
            if let Err(p) = parser.record(line, pos, &mut items) {
                problems.push(p);
            }
            offset += chunk.len();
        }
        (items, problems, parser.state())
    }

    fn feed(
        path: &Path,
        bytes: &[u8],
        start: usize,
        state: Option<Value>,
    ) -> (Vec<Item>, Vec<Problem>, Value) {
        feed_with(path, bytes, start, state, false)
    }

    /// Joins results onto their actions by (session, call_id).
    fn join(items: Vec<Item>) -> Vec<Action> {
        let mut actions: Vec<Action> = Vec::new();
        for item in items {
            match item {
                Item::Action(a) => actions.push(a),
                Item::Result(r) => {
                    let target = actions.iter_mut().find(|a| {
                        a.session == r.session && a.call_id.as_deref() == Some(&r.call_id)
                    });
                    let target = target.unwrap_or_else(|| panic!("orphan result {r:?}"));
                    assert!(target.result.is_none(), "two results for {:?}", r.call_id);
                    target.result = Some(r.result);
                }
                Item::SessionLink { .. } => panic!("unexpected session link"),
            }
        }
        actions
    }

    fn run(path: &Path, bytes: &[u8]) -> Vec<Action> {
        let (items, problems, _) = feed(path, bytes, 0, None);
        assert!(problems.is_empty(), "{problems:?}");
        join(items)
    }

    fn res(a: &Action) -> &ActionResult {
        a.result.as_ref().expect("result")
    }

    /// aider v0.85 (`recent/aider`, line 122): after `chmod +x …` aider logs only its `/undo`
    /// hint, which is not what `chmod` printed (it printed nothing).
    #[test]
    fn corpus_commands_output_is_not_aiders_notices() {
        let Some((path, bytes)) =
            corpus_file("recent/aider/aider__afi-core__.aider.chat.history.md")
        else {
            return;
        };
        let actions = run(&path, &bytes);
        let shell: Vec<&Action> = actions.iter().filter(|a| a.tool == "shell").collect();
        let chmod = shell
            .iter()
            .find(|a| a.input["command"] == "chmod +x sync-afi.sh aider-afi.sh")
            .expect("the chmod aider ran");
        assert_eq!(res(chmod).output, "");
        for a in &shell {
            if let Some(result) = &a.result {
                assert!(
                    !result.output.lines().any(is_aider_notice),
                    "{}: {:?}",
                    a.input["command"],
                    result.output
                );
            }
        }
    }

    #[test]
    fn corpus_chat_history() {
        let Some((path, bytes)) = corpus_file("other/aider__doc_processor__.aider.chat.history.md")
        else {
            return;
        };
        let actions = run(&path, &bytes);
        let paths: Vec<&str> = actions
            .iter()
            .map(|a| a.input["path"].as_str().expect("path"))
            .collect();
        assert_eq!(
            paths,
            [
                "task.md",
                "doc_processor.py",
                "requirements.txt",
                "doc_processor.py",
                "doc_processor.py",
                "doc_processor.py"
            ]
        );
        let session = format!("{}@2025-05-23 16:51:58", path.display());
        for a in &actions {
            assert_eq!(a.tool, "Edit");
            assert_eq!(a.session, session);
            assert_eq!(a.source, Source::Aider);
            assert_eq!(
                (a.ts.as_ref(), a.call_id.as_ref(), a.cwd.as_ref()),
                (None, None, None)
            );
            assert!(res(a).ok);
            assert_eq!(
                res(a).output,
                format!("Applied edit to {}", a.input["path"].as_str().unwrap())
            );
        }
        // The first edit is on line 735: seq is its byte offset << 8.
        let offset = bytes
            .split_inclusive(|&b| b == b'\n')
            .take(734)
            .map(<[u8]>::len)
            .sum::<usize>() as u64;
        assert_eq!(actions[0].seq, offset << 8);
        assert!(actions.windows(2).all(|w| w[0].seq < w[1].seq));
        assert_eq!(
            bytes
                .windows(16)
                .filter(|w| w == b"Applied edit to ")
                .count(),
            actions.len()
        );
    }

    const FIXTURE: &str = "
# aider chat started at 2025-06-01 09:00:00

> Aider v0.84.0  
> Main model: sonnet with diff edit format  

#### /run cargo test -p foo  
> Add 2.3k tokens of command output to the chat? (Y)es/(N)o [Yes]: y  
> Added 120 lines of output to the chat.  

#### !ls -la  
> Add 0.1k tokens of command output to the chat? (Y)es/(N)o [Yes]: n  

#### /test pytest -q  
> Added 12 lines of output to the chat.  

#### /test pytest -q tests/test_ok.py  

#### /run  

#### fix the failing test, then show me  
#### /run make  
#### as a second line  

Here is the fix.

tests/test_x.py
```python
<<<<<<< SEARCH
=======
>>>>>>> REPLACE
```

> Tokens: 2.1k sent, 300 received. Cost: $0.01 message, $0.05 session.  
> Applied edit to tests/test_x.py  
> Commit 1a2b3c4 fix: failing test  
> pytest -q  
> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  
> Running pytest -q  
> Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: y  
> Added 3 lines of output to the chat.  

> cargo build  
cargo test  
> Run shell commands? (Y)es/(N)o/(D)on't ask again [Yes]: y  
> Running cargo build  
> Running cargo test  

#### /git status  
> On branch main
Changes not staged for commit:
  modified:   src/lib.rs  

#### /run nosuchcmd  
> Error occurred while running command 'nosuchcmd': [Errno 2] No such file or directory  

Sure.

> Tokens: 1k sent, 10 received.  
> The LLM did not conform to the edit format.  
> https://aider.chat/docs/troubleshooting/edit-errors.html  
> # 1 SEARCH/REPLACE block failed to match!
## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in src/a.py  

> Running tests for task: not a shell command  

# aider chat started at 2025-06-02 10:00:00

#### /run echo second session  
";

    #[test]
    fn fixture_shell_commands_and_edits() {
        let path = Path::new("/home/u/proj/.aider.chat.history.md");
        let actions = run(path, FIXTURE.as_bytes());
        let s1 = "/home/u/proj/.aider.chat.history.md@2025-06-01 09:00:00";
        let s2 = "/home/u/proj/.aider.chat.history.md@2025-06-02 10:00:00";
        let summary: Vec<(&str, String, Option<bool>)> = actions
            .iter()
            .map(|a| {
                let what = a.input.get("command").or(a.input.get("path"));
                let what = what.and_then(Value::as_str).unwrap_or("").to_string();
                (a.tool.as_str(), what, a.result.as_ref().map(|r| r.ok))
            })
            .collect();
        let expected: Vec<(&str, String, Option<bool>)> = vec![
            ("shell", "cargo test -p foo".into(), Some(true)),
            ("shell", "ls -la".into(), Some(true)),
            ("shell", "pytest -q".into(), Some(false)),
            ("shell", "pytest -q tests/test_ok.py".into(), Some(true)),
            ("Edit", "tests/test_x.py".into(), Some(true)),
            ("shell", "pytest -q".into(), Some(true)),
            ("shell", "cargo build".into(), Some(true)),
            ("shell", "cargo test".into(), Some(true)),
            ("shell", "git status".into(), Some(true)),
            ("shell", "nosuchcmd".into(), Some(false)),
            ("Edit", "".into(), Some(false)),
            // Nothing after it yet: the result is still pending.
            ("shell", "echo second session".into(), None),
        ];
        // Not commands: the empty `/run`, the `#### /run make` continuing a multi-line input,
        // and a `> Running …` line outside a `Run shell command?` block.
        assert_eq!(summary, expected);
        assert!(actions[..11].iter().all(|a| a.session == s1));
        assert_eq!(actions[11].session, s2);
        assert!(
            actions
                .iter()
                .all(|a| a.cwd.as_deref() == Some("/home/u/proj"))
        );
        let first = &actions[0];
        let offset = FIXTURE.find("#### /run cargo").unwrap() as u64;
        assert_eq!(first.seq, offset << 8);
        assert_eq!(first.call_id, Some(format!("{s1}:{offset}")));
        // aider's questions and notices are not what the command printed (it printed to the
        // terminal only).
        assert_eq!(res(first).output, "");
        assert_eq!(res(first).exit_code, None);
        // `/test` whose output was not added passed.
        assert_eq!(res(&actions[3]).output, "");
        assert_eq!(
            actions[4].call_id, None,
            "an applied edit is complete at once"
        );
        assert_eq!(res(&actions[5]).output, "");
        assert_eq!(res(&actions[6]).output, "");
        assert_eq!(
            res(&actions[8]).output,
            "On branch main\nChanges not staged for commit:\n  modified:   src/lib.rs"
        );
        assert_eq!(
            res(&actions[9]).output,
            "Error occurred while running command 'nosuchcmd': [Errno 2] No such file or directory"
        );
        assert_eq!(actions[10].input, json!({}));
        assert!(
            res(&actions[10])
                .output
                .starts_with("The LLM did not conform")
        );
        assert!(
            res(&actions[10])
                .output
                .ends_with("failed to exactly match lines in src/a.py")
        );
    }

    #[test]
    fn blank_lines_passed_or_skipped_give_the_same_items() {
        let path = Path::new("/home/u/proj/.aider.chat.history.md");
        let (skipped, _, _) = feed_with(path, FIXTURE.as_bytes(), 0, None, false);
        let (passed, _, _) = feed_with(path, FIXTURE.as_bytes(), 0, None, true);
        assert_eq!(skipped, passed);
    }

    #[test]
    fn multi_line_input_continuation_is_not_a_command() {
        let text = "\n#### please look  \n#### /run rm -rf /  \n\n#### /run true  \n";
        let actions = run(Path::new("/p/.aider.chat.history.md"), text.as_bytes());
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0].input["command"], "true");
        // Its result is still pending (no line after it yet).
        assert!(actions[0].result.is_none());
    }

    #[test]
    fn resume_from_state_gives_the_same_items() {
        let path = Path::new("/home/u/proj/.aider.chat.history.md");
        let bytes = FIXTURE.as_bytes();
        let (whole, _, _) = feed(path, bytes, 0, None);
        // Cut after every line: the second parser starts from the first one's state.
        let mut cut = 0;
        while let Some(next) = bytes[cut..].iter().position(|&b| b == b'\n') {
            cut += next + 1;
            let (mut a, _, state) = feed(path, &bytes[..cut], 0, None);
            let state = serde_json::from_str(&state.to_string()).expect("state round-trips");
            let (b, _, _) = feed(path, bytes, cut, Some(state));
            a.extend(b);
            assert_eq!(a, whole, "cut at {cut}");
        }
        // A pending command is part of the state.
        let head = "# aider chat started at x\n\n#### /run ls  \n> Add 0.1k";
        let (_, _, state) = feed(path, head.as_bytes(), 0, None);
        assert_eq!(state["pending"]["kind"], "shell");
        assert_eq!(state["started"], "x");
    }

    #[test]
    fn crlf_and_other_names() {
        let text = "# aider chat started at 2025-01-01 00:00:00\r\n\r\n#### !make\r\n> make: Nothing to be done for 'all'.\r\n\r\n#### thanks\r\n";
        let actions = run(Path::new("/x/chat.md"), text.as_bytes());
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0].input["command"], "make");
        assert_eq!(actions[0].session, "/x/chat.md@2025-01-01 00:00:00");
        assert_eq!(actions[0].cwd, None, "not aider's default file name");
        assert_eq!(
            res(&actions[0]).output,
            "make: Nothing to be done for 'all'."
        );
        // A blank line at the end of the file is not passed on: the result waits for the next
        // line.
        let actions = run(Path::new("/x/chat.md"), b"#### !make\n> Added 1 line\n\n");
        assert!(actions[0].result.is_none());
        // Before any session header: the file is the session.
        let actions = run(Path::new("/x/.aider.chat.history.md"), b"#### /run ls\n\n");
        assert_eq!(actions[0].session, "/x/.aider.chat.history.md");
        assert_eq!(actions[0].cwd.as_deref(), Some("/x"));
    }

    #[test]
    fn robustness() {
        let path = Path::new("/x/.aider.chat.history.md");
        let mut parser = Aider.parser(path, Some(json!({"pending": 5, "prev": "nope"})));
        let mut items = Vec::new();
        let pos = Position { offset: 0, line: 1 };
        for record in [
            &b""[..],
            b"\xff\xfe#### /run \xff",
            b">",
            b"> ",
            b"####",
            b"#### ",
            b"#### !",
            b"> Running ",
            b"> Applied edit to ",
            b"# aider chat started at",
        ] {
            parser
                .record(record, pos, &mut items)
                .expect("never a problem");
        }
        let big = format!("> {}", "y".repeat(1 << 20));
        let mut parser = Aider.parser(path, None);
        parser
            .record(b"#### /run cat big", pos, &mut items)
            .unwrap();
        for _ in 0..3 {
            parser.record(big.as_bytes(), pos, &mut items).unwrap();
        }
        let state = parser.state();
        let kept = state["pending"]["output"].as_str().unwrap().len();
        assert!(kept <= MAX_PENDING_OUTPUT);
        // Wrong types in the restored state: a fresh state.
        for bad in [json!(null), json!([1]), json!({"started": 3}), json!("x")] {
            let _ = Aider.parser(path, Some(bad));
        }
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
            let expected = name.ends_with(".aider.chat.history.md");
            assert_eq!(Aider.sniff(&file, head), expected, "{name}");
            if expected {
                assert!(Aider.sniff(Path::new("/x/renamed.md"), head), "by content");
            }
        }
    }
}
