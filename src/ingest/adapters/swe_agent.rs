//! SWE-agent trajectories (`<instance>.traj`): one JSON object per file, read whole.
//!
//! The object holds `trajectory`, a list of steps. Every step is one command the agent ran:
//! `action` (the command line), `observation` (its output), `thought`/`response` (the model's
//! text), and from v1 on `execution_time` (seconds) and `state` (`{"working_dir", "open_file"}`,
//! a JSON object in v1 and a JSON-encoded string in v0). `history` repeats the conversation and,
//! in function-calling runs, the `tool_calls`; everything an [`Action`] needs is in the steps, so
//! `history` is not read.
//!
//! Mapping of one step:
//! - `tool`: the first word of the action when it is one of SWE-agent's own commands
//!   ([`SWE_AGENT_COMMANDS`]: `open`, `edit`, `create`, `submit`, `str_replace_editor`, the CTF
//!   tools, …), otherwise `shell` (the action is an ordinary shell command line run in the
//!   container: `python reproduce.py`, `curl …`). Either way `input` is
//!   `{"command": <the whole action>}` (surrounding whitespace trimmed), so the miner finds every
//!   command line under the same key.
//! - Steps with an empty action, and the autosubmission markers SWE-agent writes as actions
//!   (`exit_cost`, `exit_context`, `exit_api`, `exit_error`, `exit_format`), yield nothing.
//! - `ok`: SWE-agent records no exit codes. When the observation carries the old runtime's
//!   `///PROCESS-DONE:<n>:PROCESS-DONE///` marker, that is the exit code. Otherwise `ok` is true
//!   unless the observation clearly shows a failure ([`observation_failed`]): a timeout
//!   (`EXECUTION TIMED OUT`), an edit rejected by the linter, an uncaught Python exception (a
//!   `Traceback` whose last line is the exception), the shell's own "command not found" / "No such
//!   file or directory", a first line that is a tool's error message (`Error:`, `Usage:`,
//!   `No such file or directory` after `<prog>:`, …), or a CTF `Wrong flag!`.
//! - `duration_ms`: `execution_time` × 1000. `ts`: none (trajectories carry no clock times).
//! - `cwd`: `state.working_dir`. The state is recorded *after* the step ran, so the cwd of step
//!   `i` is the working_dir of step `i - 1`, and the step's own only for the first step.
//! - `session`: `<run directory>/<file stem>`, where the run directory is the nearest ancestor
//!   directory whose name differs from the stem (v0 keeps `<run>/<instance>.traj`, v1
//!   `<run>/<instance>/<instance>.traj`); just the stem when there is no such directory. The stem
//!   alone would merge two runs of the same instance.
//! - `seq`: the step's index in `trajectory` (the file is one record, read whole).

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::action::{Action, ActionResult, Source};
use crate::ingest::adapters::{Format, Framing, Item, Position, Problem, RecordParser};

/// SWE-agent trajectories (`.traj`).
pub struct SweAgent;

/// Commands provided by SWE-agent's tool bundles (v0 `config/commands`, v1 `tools/`, EnIGMA's CTF
/// tools). A step whose first word is one of these gets that word as its tool name.
pub const SWE_AGENT_COMMANDS: &[&str] = &[
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "edit",
    "insert",
    "submit",
    "search_dir",
    "search_file",
    "find_file",
    "str_replace_editor",
    "filemap",
    "set_cursors",
    "view_image",
    "decompile",
    "disassemble",
    "debug_start",
    "debug_add_breakpoint",
    "debug_continue",
    "debug_step",
    "debug_exec",
    "debug_stop",
    "connect_start",
    "connect_sendline",
    "connect_exec",
    "connect_stop",
    "exit_forfeit",
];

/// Actions SWE-agent writes when it ends a run by itself; they are not commands.
const AUTOSUBMIT_MARKERS: &[&str] = &[
    "exit_cost",
    "exit_context",
    "exit_api",
    "exit_error",
    "exit_format",
];

impl Format for SweAgent {
    fn source(&self) -> Source {
        Source::SweAgent
    }

    fn framing(&self) -> Framing {
        Framing::WholeFile
    }

    fn parser(&self, path: &Path, _state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(SweAgentParser {
            session: session_for(path),
        })
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        let text = text.trim_start();
        if !text.starts_with('{') {
            return false;
        }
        if path.extension().is_some_and(|e| e == "traj") {
            return true;
        }
        // Without the extension: the top-level keys SWE-agent writes first.
        text.contains("\"trajectory\"") && text.contains("\"environment\":")
    }
}

/// The session id of a trajectory file: `<run directory>/<stem>`.
fn session_for(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let run = path
        .ancestors()
        .skip(1)
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy())
        .find(|n| *n != stem);
    match run {
        Some(run) => format!("{run}/{stem}"),
        None => stem,
    }
}

struct SweAgentParser {
    session: String,
}

impl RecordParser for SweAgentParser {
    fn record(
        &mut self,
        record: &[u8],
        _pos: Position,
        out: &mut Vec<Item>,
    ) -> Result<(), Problem> {
        let doc: Value = serde_json::from_slice(record)
            .map_err(|e| Problem::new(format!("invalid JSON: {e}")))?;
        let Some(obj) = doc.as_object() else {
            return Err(Problem::new(
                "not a SWE-agent trajectory: not a JSON object",
            ));
        };
        let Some(steps) = obj.get("trajectory").and_then(Value::as_array) else {
            return Err(Problem::new(
                "not a SWE-agent trajectory: no `trajectory` array",
            ));
        };
        let mut prev_dir: Option<String> = None;
        for (index, step) in steps.iter().enumerate() {
            let Some(step) = step.as_object() else {
                continue;
            };
            let own_dir = working_dir(step);
            let cwd = prev_dir.clone().or_else(|| own_dir.clone());
            if own_dir.is_some() {
                prev_dir = own_dir;
            }
            if let Some(action) = step_action(&self.session, index, step, cwd) {
                out.push(Item::Action(action));
            }
        }
        Ok(())
    }
}

/// `state.working_dir` of a step (`state` is an object in v1, a JSON string in v0).
fn working_dir(step: &Map<String, Value>) -> Option<String> {
    let state = step.get("state")?;
    let parsed;
    let state = match state {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).ok()?;
            &parsed
        }
        other => other,
    };
    let dir = state.get("working_dir")?.as_str()?.trim();
    (!dir.is_empty() && dir != "n/a").then(|| dir.to_string())
}

fn step_action(
    session: &str,
    index: usize,
    step: &Map<String, Value>,
    cwd: Option<String>,
) -> Option<Action> {
    let command = step.get("action")?.as_str()?.trim();
    if command.is_empty() {
        return None;
    }
    let first = command.split_whitespace().next().unwrap_or_default();
    if AUTOSUBMIT_MARKERS.contains(&first) && command == first {
        return None;
    }
    let tool = if SWE_AGENT_COMMANDS.contains(&first) {
        first.to_string()
    } else {
        "shell".to_string()
    };
    let output = match step.get("observation") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let exit_code = process_done_code(&output);
    let ok = match exit_code {
        Some(code) => code == 0,
        None => !observation_failed(&output),
    };
    let duration_ms = step
        .get("execution_time")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e12)
        .map(|s| (s * 1000.0).round() as u64);
    Some(Action {
        session: session.to_string(),
        seq: index as u64,
        ts: None,
        source: Source::SweAgent,
        cwd,
        tool,
        input: json!({ "command": command }),
        call_id: None,
        parent_session: None,
        result: Some(ActionResult {
            ok,
            exit_code,
            output,
            duration_ms,
        }),
    })
}

/// The exit code in the `///PROCESS-DONE:<n>:PROCESS-DONE///` marker of SWE-agent's old runtime.
fn process_done_code(output: &str) -> Option<i32> {
    const MARK: &str = "///PROCESS-DONE:";
    let at = output.rfind(MARK)?;
    let rest = output.get(at + MARK.len()..)?;
    let end = rest.find(":PROCESS-DONE///")?;
    rest.get(..end)?.trim().parse().ok()
}

/// Whether an observation clearly shows that the command failed (see the module docs). Meant to
/// be conservative: ordinary output that merely mentions an error does not count.
pub fn observation_failed(output: &str) -> bool {
    let lines: Vec<&str> = output.lines().map(str::trim_end).collect();
    let first = lines
        .iter()
        .map(|l| l.trim_start())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if first.starts_with("EXECUTION TIMED OUT")
        || first.starts_with("Your proposed edit has introduced new syntax error(s)")
        || first.starts_with("Error:")
        || first.starts_with("ERROR:")
        || first.starts_with("Usage:")
        || first.starts_with("No replacement was performed")
        || first.starts_with("No file open.")
        || first == "Wrong flag!"
    {
        return true;
    }
    if looks_like_tool_error(first, "No such file or directory") {
        return true;
    }
    // The shell itself complaining about a command or a path.
    if lines.iter().any(|l| {
        let shell = ["bash: ", "/bin/bash: ", "sh: ", "/bin/sh: ", "zsh: "]
            .iter()
            .any(|p| l.starts_with(p));
        shell && (l.ends_with("command not found") || l.ends_with("No such file or directory"))
    }) {
        return true;
    }
    uncaught_python_exception(&lines)
}

/// `<prog>: … <suffix>` on one line, e.g. `cat: x: No such file or directory`.
fn looks_like_tool_error(line: &str, suffix: &str) -> bool {
    let Some((prog, _)) = line.split_once(": ") else {
        return false;
    };
    line.ends_with(suffix) && !prog.is_empty() && !prog.contains(char::is_whitespace)
}

/// A `Traceback (most recent call last):` block that ends the output with the exception line
/// (SWE-agent's `(Open file: …)` / `(Current directory: …)` / prompt footer ignored).
fn uncaught_python_exception(lines: &[&str]) -> bool {
    if !lines
        .iter()
        .any(|l| l.starts_with("Traceback (most recent call last):"))
    {
        return false;
    }
    let last = lines
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("(Open file:")
                && !l.starts_with("(Current directory:")
                && !l.starts_with("bash-$")
        })
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

    /// Runs a WholeFile format the way the tailer does: the whole file is one record.
    fn run(path: &Path, bytes: &[u8]) -> (Vec<Action>, Vec<Problem>) {
        let mut parser = SweAgent.parser(path, None);
        let mut items = Vec::new();
        let mut problems = Vec::new();
        let pos = Position { offset: 0, line: 1 };
        if let Err(p) = parser.record(bytes, pos, &mut items) {
            problems.push(p);
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

    fn count(actions: &[Action], tool: &str) -> usize {
        actions.iter().filter(|a| a.tool == tool).count()
    }

    fn command(a: &Action) -> &str {
        a.input["command"].as_str().expect("command")
    }

    #[test]
    fn pydicom_v0_has_twelve_steps() {
        let Some((path, bytes)) = corpus_file("swe-agent/pydicom__pydicom-1458.traj") else {
            return;
        };
        let (actions, problems) = run(&path, &bytes);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(actions.len(), 12);
        assert_eq!(actions[0].session, "swe-agent/pydicom__pydicom-1458");
        assert_eq!(count(&actions, "edit"), 5);
        assert_eq!(count(&actions, "shell"), 3);
        assert_eq!(count(&actions, "create"), 1);
        assert_eq!(count(&actions, "find_file"), 1);
        assert_eq!(count(&actions, "open"), 1);
        assert_eq!(count(&actions, "submit"), 1);
        // v0: no execution_time, state is a JSON string.
        assert!(
            actions
                .iter()
                .all(|a| a.result.as_ref().unwrap().duration_ms.is_none())
        );
        assert!(
            actions
                .iter()
                .all(|a| a.cwd.as_deref() == Some("/pydicom__pydicom"))
        );
        assert_eq!(command(&actions[2]), "python reproduce_bug.py");
        let r = actions[2].result.as_ref().unwrap();
        assert!(r.output.starts_with("Traceback (most recent call last):"));
        assert!(!r.ok, "the reproduction script died with an AttributeError");
        // Three edits rejected by the linter, then one accepted.
        let edits: Vec<bool> = actions
            .iter()
            .filter(|a| a.tool == "edit")
            .map(|a| a.result.as_ref().unwrap().ok)
            .collect();
        assert_eq!(edits, [true, false, false, false, true]);
        let second_run = &actions[9];
        assert_eq!(command(second_run), "python reproduce_bug.py");
        assert!(second_run.result.as_ref().unwrap().ok);
        assert_eq!(
            actions.iter().map(|a| a.seq).collect::<Vec<_>>(),
            (0..12).collect::<Vec<_>>()
        );
        assert!(
            actions
                .iter()
                .all(|a| a.ts.is_none() && a.source == Source::SweAgent)
        );
    }

    #[test]
    fn v1_has_five_steps_with_execution_time_and_state() {
        let Some((path, bytes)) = corpus_file("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj")
        else {
            return;
        };
        let (actions, problems) = run(&path, &bytes);
        assert!(problems.is_empty(), "{problems:?}");
        let tools: Vec<&str> = actions.iter().map(|a| a.tool.as_str()).collect();
        assert_eq!(tools, ["find_file", "open", "edit", "shell", "submit"]);
        let run = &actions[3];
        assert_eq!(
            command(run),
            "python3 /SWE-agent__test-repo/tests/missing_colon.py"
        );
        let r = run.result.as_ref().unwrap();
        assert_eq!(r.output, "8.2");
        assert!(r.ok);
        assert_eq!(r.exit_code, None);
        assert_eq!(r.duration_ms, Some(293));
        assert_eq!(run.cwd.as_deref(), Some("/SWE-agent__test-repo"));
        assert_eq!(actions[0].result.as_ref().unwrap().duration_ms, Some(281));
        assert!(actions.iter().all(|a| a.result.as_ref().unwrap().ok));
    }

    #[test]
    fn marshmallow_function_calling_has_eleven_steps() {
        let Some((path, bytes)) = corpus_file(
            "swe-agent/function_calling_replace__marshmallow-code__marshmallow-1867.traj",
        ) else {
            return;
        };
        let (actions, problems) = run(&path, &bytes);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(actions.len(), 11);
        assert_eq!(count(&actions, "shell"), 4); // python ×2, ls -F, rm
        assert_eq!(count(&actions, "edit"), 2);
        assert_eq!(count(&actions, "insert"), 1);
        assert_eq!(count(&actions, "create"), 1);
        let failed: Vec<usize> = actions
            .iter()
            .filter(|a| !a.result.as_ref().unwrap().ok)
            .map(|a| a.seq as usize)
            .collect();
        assert_eq!(
            failed,
            [6],
            "only the edit that introduced a syntax error failed"
        );
        assert_eq!(command(&actions[3]), "ls -F");
        assert!(actions.iter().all(|a| a.cwd.as_deref() == Some("/testbed")));
        assert!(
            actions
                .iter()
                .all(|a| a.result.as_ref().unwrap().duration_ms.is_some())
        );
    }

    #[test]
    fn ctf_web_has_eighteen_curls_with_exit_codes() {
        let Some((path, bytes)) = corpus_file("swe-agent/ctf_web__i_got_id_demo.traj") else {
            return;
        };
        let (actions, problems) = run(&path, &bytes);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(actions.len(), 21);
        let curls: Vec<&Action> = actions
            .iter()
            .filter(|a| command(a).starts_with("curl "))
            .collect();
        // PROVENANCE's "curl ×10" undercounts: the file has 18 curl steps (10 of them after the
        // printenv.pl upload). See the report.
        assert_eq!(curls.len(), 18);
        assert!(curls.iter().all(|a| a.tool == "shell"));
        assert_eq!(count(&actions, "create"), 1);
        assert_eq!(count(&actions, "edit"), 1);
        assert_eq!(count(&actions, "submit"), 1);
        let first = &actions[0];
        assert_eq!(command(first), "curl http://web.chal.csaw.io:8000");
        assert_eq!(first.result.as_ref().unwrap().exit_code, None);
        let hello = &actions[1];
        let r = hello.result.as_ref().unwrap();
        assert_eq!(r.exit_code, Some(0));
        assert!(r.ok);
        assert!(r.output.contains("Hello World from Perl!"));
        let marked = curls
            .iter()
            .filter(|a| a.result.as_ref().unwrap().exit_code == Some(0))
            .count();
        assert_eq!(marked, 17);
        assert_eq!(
            hello.cwd.as_deref(),
            Some("/__Users__talora__LLM_CTF_Dataset_Dev__2016__CSAW-Quals__web__I-Got-Id")
        );
        assert_eq!(
            command(&actions[20]),
            "submit FLAG{p3rl_6_iz_EVEN_BETTER!!1}"
        );
    }

    #[test]
    fn ctf_crypto_has_eighteen_steps() {
        let Some((path, bytes)) = corpus_file("swe-agent/ctf_crypto__katy.traj") else {
            return;
        };
        let (actions, problems) = run(&path, &bytes);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(actions.len(), 18);
        assert_eq!(count(&actions, "decompile"), 3);
        assert_eq!(count(&actions, "create"), 3);
        assert_eq!(count(&actions, "edit"), 5);
        assert_eq!(count(&actions, "submit"), 2);
        assert_eq!(count(&actions, "shell"), 5); // file + python ×4
        assert_eq!(command(&actions[0]), "file release");
        assert_eq!(
            command(&actions[2]),
            "decompile release --function_name _hash"
        );
        // The wrong flag and the timed-out script are failures.
        assert!(!actions[14].result.as_ref().unwrap().ok);
        assert_eq!(actions[14].result.as_ref().unwrap().output, "Wrong flag!");
        assert!(!actions[16].result.as_ref().unwrap().ok);
        let failures = actions
            .iter()
            .filter(|a| !a.result.as_ref().unwrap().ok)
            .count();
        assert_eq!(failures, 2);
    }

    #[test]
    fn failure_heuristics() {
        assert!(observation_failed("\nEXECUTION TIMED OUT"));
        assert!(observation_failed(
            "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n\
             ValueError: bad\n(Open file: /x.py)\n(Current directory: /repo)\nbash-$"
        ));
        assert!(observation_failed(
            "Traceback (most recent call last):\n  File \"x\"\nKeyboardInterrupt"
        ));
        assert!(observation_failed(
            "Traceback (most recent call last):\n  File \"x\"\nrequests.exceptions.HTTPError: 404"
        ));
        assert!(observation_failed("bash: foo: command not found"));
        assert!(observation_failed(
            "/bin/sh: 1: cd: can't cd to x: No such file or directory"
        ));
        assert!(observation_failed(
            "cat: missing.txt: No such file or directory"
        ));
        assert!(observation_failed(
            "python: can't open file '/r/x.py': [Errno 2] No such file or directory"
        ));
        assert!(observation_failed("Error: File 'nope.py' not found"));
        assert!(observation_failed("Usage: open \"<file>\" [<line_number>]"));
        assert!(observation_failed(
            "No file open. Use the open command first."
        ));
        assert!(observation_failed(
            "No replacement was performed, old_str `x` did not appear verbatim in /a.py."
        ));
        // Ordinary output that mentions errors is not a failure.
        assert!(!observation_failed(""));
        assert!(!observation_failed("8.2"));
        assert!(!observation_failed(
            "Found 3 matches for \"Error:\" in /repo"
        ));
        assert!(!observation_failed(
            "Traceback (most recent call last):\n  File \"x\"\nValueError: caught\nretrying... ok"
        ));
        assert!(!observation_failed(
            "log: warning: No such file or directory, using defaults\nok"
        ));
        assert!(!observation_failed(
            "grep found: No such file or directory in two files and more"
        ));
        assert_eq!(
            process_done_code("x///PROCESS-DONE:0:PROCESS-DONE///"),
            Some(0)
        );
        assert_eq!(
            process_done_code("x///PROCESS-DONE:2:PROCESS-DONE///"),
            Some(2)
        );
        assert_eq!(process_done_code("x///PROCESS-DONE:oops"), None);
    }

    #[test]
    fn fixture_variants() {
        let traj = r#"{
          "environment": "swe_main",
          "trajectory": [
            {"action": "search_dir \"TODO\" src\n", "observation": "No matches found", "thought": "t",
             "state": "{\"open_file\": \"n/a\", \"working_dir\": \"/repo\"}"},
            {"action": "cd sub && make\n", "observation": "make: *** No rule\n///PROCESS-DONE:2:PROCESS-DONE///",
             "state": "{\"open_file\": \"n/a\", \"working_dir\": \"/repo/sub\"}", "execution_time": 1.5},
            {"action": "ls", "observation": "a b", "state": {"working_dir": "/repo/sub"}},
            {"action": "", "observation": "format error"},
            {"action": "exit_cost", "observation": "Exited (autosubmitted)"},
            {"action": "str_replace_editor view /repo/a.py", "observation": "Here's the result"},
            {"action": 42, "observation": "wrong type"},
            "not a step",
            {"action": "true", "observation": null, "execution_time": "fast", "state": 7}
          ],
          "info": {"exit_status": "submitted"}
        }"#;
        let path = Path::new("/runs/my-run/repo__x-1/repo__x-1.traj");
        let (actions, problems) = run(path, traj.as_bytes());
        assert!(problems.is_empty());
        assert_eq!(actions.len(), 5);
        assert_eq!(actions[0].session, "my-run/repo__x-1");
        assert_eq!(actions[0].tool, "search_dir");
        assert_eq!(command(&actions[0]), "search_dir \"TODO\" src");
        assert_eq!(actions[0].cwd.as_deref(), Some("/repo"));
        let make = &actions[1];
        assert_eq!(make.tool, "shell");
        assert_eq!(
            make.cwd.as_deref(),
            Some("/repo"),
            "the state before the step"
        );
        let r = make.result.as_ref().unwrap();
        assert_eq!(
            (r.ok, r.exit_code, r.duration_ms),
            (false, Some(2), Some(1500))
        );
        assert_eq!(actions[2].cwd.as_deref(), Some("/repo/sub"));
        assert_eq!(actions[3].tool, "str_replace_editor");
        assert_eq!(actions[3].seq, 5);
        let last = &actions[4];
        assert_eq!((last.seq, last.tool.as_str()), (8, "shell"));
        assert_eq!(last.result.as_ref().unwrap().output, "");
        assert_eq!(last.result.as_ref().unwrap().duration_ms, None);
    }

    #[test]
    fn session_from_path() {
        assert_eq!(
            session_for(Path::new("/t/run-a/inst-1.traj")),
            "run-a/inst-1"
        );
        assert_eq!(
            session_for(Path::new("/t/run-a/inst-1/inst-1.traj")),
            "run-a/inst-1"
        );
        assert_eq!(session_for(Path::new("inst-1.traj")), "inst-1");
        assert_eq!(session_for(Path::new("/")), "");
    }

    #[test]
    fn robustness() {
        let path = Path::new("/r/x.traj");
        for bad in [
            &b""[..],
            b"{\"trajectory\": [{\"action\": \"ls\"",
            b"\xff\xfe{}",
            b"[]",
            b"{}",
            b"{\"trajectory\": {}}",
            b"null",
        ] {
            let (actions, problems) = run(path, bad);
            assert!(actions.is_empty());
            assert_eq!(problems.len(), 1, "{:?}", String::from_utf8_lossy(bad));
        }
        // Every field of a step with the wrong type.
        let wrong = br#"{"trajectory": [{"action": ["ls"], "observation": 1, "execution_time": [],
            "state": [], "thought": 3}, {"action": "ls", "observation": {"a": 1},
            "execution_time": -4, "state": "{not json"}]}"#;
        let (actions, problems) = run(path, wrong);
        assert!(problems.is_empty());
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0].result.as_ref().unwrap().duration_ms, None);
        assert_eq!(actions[0].cwd, None);
        // A 1 MB observation.
        let big = format!(
            "{{\"trajectory\": [{{\"action\": \"cat big\", \"observation\": \"{}\"}}]}}",
            "x".repeat(1 << 20)
        );
        let (actions, _) = run(path, big.as_bytes());
        assert_eq!(actions[0].result.as_ref().unwrap().output.len(), 1 << 20);
        // Invalid UTF-8 inside a string is invalid JSON: a problem, not a panic.
        let (_, problems) = run(path, b"{\"trajectory\": [{\"action\": \"\xff\"}]}");
        assert_eq!(problems.len(), 1);
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
    fn sniff_accepts_only_trajectories() {
        if corpus_file("PROVENANCE.md").is_none() {
            return;
        }
        let mut files = Vec::new();
        all_corpus_files(Path::new(CORPUS), &mut files);
        assert!(files.len() > 20);
        for file in files {
            let bytes = std::fs::read(&file).expect("read");
            let head = &bytes[..bytes.len().min(64 * 1024)];
            let expected = file.extension().is_some_and(|e| e == "traj");
            assert_eq!(SweAgent.sniff(&file, head), expected, "{}", file.display());
            // Renamed: recognised by content alone.
            if expected {
                assert!(SweAgent.sniff(Path::new("/x/trajectory.json"), head));
            }
        }
    }
}
