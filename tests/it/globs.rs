//! Issue 20, a pathname pattern typed unquoted: the shell expanded it before the program ran
//! (`grep -l foo **/*.h` in zsh gives grep the matching files), so the tool made of the habit
//! must give the program the same files. Through the real binaries: a zsh (then a bash)
//! history holding the habit is ingested, mined and generated; the candidate's tool runs in the
//! sandbox on a workspace with files at several depths, and its output is compared with what the
//! logged command prints when the logged shell runs it in a copy of the same workspace (the
//! log, never generated code, runs outside the sandbox). A pattern that matches nothing and a
//! quoted pattern (it stays as written) are compared the same way.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{TestEnv, json_of};
use serde_json::Value;
use toolsmith::package::manifest::Language;

/// The shell a history was typed in, when it is installed here; `None` (the test skips) when it
/// is not, except under `CI=true`, where `.ci/run` installs it.
fn shell(name: &str) -> Option<PathBuf> {
    let found = ["/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{name} is missing: `.ci/run` installs it (apt-get install {name})"
        );
        eprintln!("skipped: {name} is not installed, so the logged command cannot be replayed");
    }
    found
}

/// A history of four sessions (two hours apart) each running `mkdir -p out`, then `line` with
/// the session's word in place of `WORD`, in `format` (`zsh` extended history or `bash` with
/// timestamps).
fn history(format: &str, line: &str) -> String {
    let mut text = String::new();
    for (i, word) in ["foo", "bar", "baz", "foo"].iter().enumerate() {
        let ts = 1_700_000_000 + i as u64 * 7_200;
        for (k, command) in ["mkdir -p out".to_owned(), line.replace("WORD", word)]
            .iter()
            .enumerate()
        {
            let ts = ts + k as u64 * 5;
            match format {
                "zsh" => text.push_str(&format!(": {ts}:0;{command}\n")),
                _ => text.push_str(&format!("#{ts}\n{command}\n")),
            }
        }
    }
    text
}

/// The files of the workspace: headers at three depths, a C file, a header without the word.
fn workspace(dir: &Path, with_headers: bool) -> PathBuf {
    let files: &[(&str, &str)] = if with_headers {
        &[
            ("a.h", "int foo;\n"),
            ("sub/b.h", "int foo;\n"),
            ("sub/deep/c.h", "int foo;\n"),
            ("sub/d.h", "int bar;\n"),
            ("x.c", "int foo;\n"),
        ]
    } else {
        &[("x.c", "int foo;\n")]
    };
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir.to_owned()
}

/// What one run printed and how it ended.
#[derive(Debug, PartialEq)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// The logged line run by the logged shell (no start-up files), in `dir`.
fn run_logged(shell: &Path, line: &str, dir: &Path) -> Ran {
    let mut command = Command::new(shell);
    if shell.ends_with("zsh") {
        command.arg("-f");
    }
    let out = command
        .args(["-c", &format!("mkdir -p out\n{line}")])
        .current_dir(dir)
        .env("LC_ALL", "C")
        .output()
        .expect("run the logged shell");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The tool staged at `tool` (of `shown`), run in the sandbox on `dir` with `args`, by its
/// manifest's interpreter.
fn run_tool(env: &TestEnv, shown: &Value, tool: &Path, dir: &Path, args: &[String]) -> Ran {
    let language: Language =
        serde_json::from_value(shown["spec"]["language"].clone()).expect("language");
    let out = env
        .cli()
        .args(["sandbox", "--env", "LC_ALL=C", "--tool-dir"])
        .arg(tool)
        .args(["--workspace", "write"])
        .arg(dir)
        .args(["--", language.interpreter(), "/tool/run.sh"])
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run the sandbox");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Ingests `history` in `format`, mines it and generates the habit's tool: the candidate, which
/// must await review (its dry-run cases passed in the sandbox), and its staged directory.
fn generate(env: &TestEnv, format: &str, history: &str) -> (Value, PathBuf) {
    let file = env.path().join(format!("{format}_history"));
    std::fs::write(&file, history).expect("write history");
    env.cli()
        .args(["ingest", "--format", format])
        .arg(&file)
        .assert()
        .success();
    env.cli().arg("mine").assert().success();
    let out = env
        .cli()
        .args(["--json", "patterns", "--limit", "100"])
        .assert()
        .success();
    let patterns = json_of(out.get_output());
    let pattern = patterns
        .as_array()
        .expect("patterns")
        .iter()
        .find(|p| p["steps"].as_array().is_some_and(|s| s.len() == 2))
        .unwrap_or_else(|| panic!("no two-step habit in {patterns:#}"))
        .clone();
    let out = env
        .cli()
        .args(["--json", "generate", "--pattern"])
        .arg(pattern["id"].as_str().expect("id"))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = report["candidates"][0].clone();
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let id = made["id"].as_str().expect("id");
    let out = env
        .cli()
        .args(["--json", "show", id, "--attempts"])
        .assert()
        .success();
    let shown = json_of(out.get_output());
    let tool = env.state().join("staging").join(id).join("attempt-1/tool");
    assert!(tool.join("run.sh").is_file(), "{shown:#}");
    (shown, tool)
}

/// The option of the tool's one parameter, with `value`.
fn word_arg(shown: &Value, value: &str) -> Vec<String> {
    let params = shown["spec"]["params"].as_array().expect("params");
    assert_eq!(params.len(), 1, "{shown:#}");
    let name = params[0]["name"].as_str().expect("name");
    vec![toolsmith::invoke::option_name(name), value.to_owned()]
}

/// Compares the tool with the logged line, on a workspace with headers and on one without.
fn compare(env: &TestEnv, shell: &Path, line: &str, shown: &Value, tool: &Path) -> [Ran; 2] {
    let mut last = Vec::new();
    for (n, headers) in [true, false].into_iter().enumerate() {
        let logged_dir = workspace(&env.path().join(format!("logged-{n}")), headers);
        let tool_dir = workspace(&env.path().join(format!("tool-{n}")), headers);
        let logged = run_logged(shell, &line.replace("WORD", "foo"), &logged_dir);
        let ran = run_tool(env, shown, tool, &tool_dir, &word_arg(shown, "foo"));
        assert_eq!(
            ran.code, logged.code,
            "{line}: tool {ran:#?} logged {logged:#?}"
        );
        assert_eq!(ran.stdout, logged.stdout, "{line}: tool {ran:#?}");
        last.push((ran, logged));
    }
    let mut both = last.into_iter().map(|(ran, _)| ran);
    [both.next().expect("run"), both.next().expect("run")]
}

#[test]
fn a_zsh_pattern_reaches_the_program_as_zsh_expanded_it() {
    let Some(zsh) = shell("zsh") else {
        return;
    };
    let env = TestEnv::new();
    let line = "grep -l WORD **/*.h";
    let (shown, tool) = generate(&env, "zsh", &history("zsh", line));
    // The line runs as zsh ran it: in zsh, whose `**/` descends into directories.
    assert_eq!(shown["spec"]["language"], "bash", "{shown:#}");
    let code = std::fs::read_to_string(tool.join("run.sh")).expect("run.sh");
    assert!(
        code.starts_with("#!/usr/bin/env bash\n")
            && code.contains("zsh -fc")
            && code.contains(" **/*.h"),
        "{code}"
    );
    let [found, none] = compare(&env, &zsh, line, &shown, &tool);
    // zsh's `**/` descends: every header holding the word, at any depth.
    assert_eq!(found.stdout, "a.h\nsub/b.h\nsub/deep/c.h\n");
    // zsh refuses a command whose pattern matches nothing; so does the tool.
    assert_eq!(none.code, Some(1));
    assert!(
        none.stderr.contains("no matches found: **/*.h"),
        "{none:#?}"
    );
    assert_eq!(none.stdout, "");
}

#[test]
fn a_bash_pattern_reaches_the_program_as_bash_expanded_it() {
    let Some(bash) = shell("bash") else {
        return;
    };
    let env = TestEnv::new();
    let line = "grep -l WORD **/*.h";
    let (shown, tool) = generate(&env, "bash", &history("bash", line));
    assert_eq!(shown["spec"]["language"], "bash", "{shown:#}");
    let [found, none] = compare(&env, &bash, line, &shown, &tool);
    // bash's `**` is `*` (no globstar in an interactive bash by default).
    assert_eq!(found.stdout, "sub/b.h\n");
    // A pattern matching nothing reaches grep as written, which finds no such file.
    assert_eq!(none.code, Some(2));
    assert!(none.stderr.contains("**/*.h: No such file"), "{none:#?}");
}

#[test]
fn a_quoted_pattern_stays_as_written() {
    let Some(zsh) = shell("zsh") else {
        return;
    };
    let env = TestEnv::new();
    // `grep -r --include` takes the pattern itself: quoted, zsh leaves it to grep.
    let line = "grep -rl --include '*.h' WORD .";
    let (shown, tool) = generate(&env, "zsh", &history("zsh", line));
    let code = std::fs::read_to_string(tool.join("run.sh")).expect("run.sh");
    assert!(code.contains("'*.h'") && !code.contains("IFS="), "{code}");
    let [found, none] = compare(&env, &zsh, line, &shown, &tool);
    let mut files: Vec<&str> = found.stdout.lines().collect();
    files.sort_unstable();
    assert_eq!(files, ["./a.h", "./sub/b.h", "./sub/deep/c.h"]);
    assert_eq!(none.code, Some(1));
    assert_eq!(none.stdout, "");
}

#[test]
fn a_zsh_pattern_in_a_pipeline_fails_only_its_command() {
    let Some(zsh) = shell("zsh") else {
        return;
    };
    let env = TestEnv::new();
    let line = "grep -l WORD **/*.h | sort";
    let (shown, tool) = generate(&env, "zsh", &history("zsh", line));
    let [found, none] = compare(&env, &zsh, line, &shown, &tool);
    assert_eq!(found.stdout, "a.h\nsub/b.h\nsub/deep/c.h\n");
    // zsh fails the grep alone; sort still runs and the line ends with sort's status.
    assert_eq!(none.code, Some(0), "{none:#?}");
    assert!(
        none.stderr.contains("no matches found: **/*.h"),
        "{none:#?}"
    );
}
