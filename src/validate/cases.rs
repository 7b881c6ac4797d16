//! A tool's tests: `tests/cases.json`, the cases a candidate must pass in the sandbox, and the
//! comparison of each run with what the case expects.
//!
//! ```json
//! {"cases": [
//!   {"name": "dry run: occurrence in session s1, actions 4-6",
//!    "params": {"package": "core"}, "dry_run": true,
//!    "expect": {"exit_code": 0, "stdout": "cargo build -p core\ncargo test -p core\n"}},
//!   {"name": "--help lists every parameter", "args": ["--help"],
//!    "expect": {"exit_code": 0, "stdout_contains": ["--package"]}},
//!   {"name": "a missing required parameter fails cleanly", "params": {},
//!    "expect": {"exit_code": 2, "stderr_contains": ["package"]}}
//! ]}
//! ```
//!
//! A case gives either `params` (turned into options by [`crate::invoke`], unchecked so that
//! a case can pass bad parameters on purpose) or raw `args`; `dry_run` sets
//! `TOOLSMITH_DRY_RUN=1`; `stdin` is fed to the tool. `expect` may check the exit code, the
//! exact stdout, substrings of stdout and stderr, text that must not appear in either
//! (`output_excludes`, a heal's regression case), and (`stdout_matches_schema`) that stdout is
//! JSON valid against the manifest's output schema. The file comes from a generator or a model:
//! it is read strictly, unknown keys are errors.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::invoke;
use crate::package::manifest::Manifest;

/// Path of the cases inside a tool's directory.
pub const CASES_FILE: &str = "tests/cases.json";

/// Most cases a tool may have.
pub const MAX_CASES: usize = 200;

/// The test file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cases {
    /// The cases, run in order.
    pub cases: Vec<Case>,
}

/// One test case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// What it checks, for people.
    pub name: String,
    /// Parameters, passed as options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
    /// Raw arguments, instead of `params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Run with `TOOLSMITH_DRY_RUN=1`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Fed on stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// What the run must show.
    pub expect: Expect,
}

/// Expectations of a case; those absent are not checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The whole stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// Command lines, as the log recorded them, a dry run must print, one after another:
    /// compared with the shell grammar ([`crate::mine::line::same_line`]), so only the
    /// whitespace between words may differ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stdout_lines: Vec<String>,
    /// Substrings of stdout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stdout_contains: Vec<String>,
    /// Substrings of stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_contains: Vec<String>,
    /// Text the output (stdout or stderr) must not contain: the error a failing run showed,
    /// in a heal's regression case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_excludes: Vec<String>,
    /// Stdout is JSON valid against the manifest's output schema.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdout_matches_schema: bool,
}

/// Why a cases file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct CasesError {
    /// The file.
    pub file: String,
    /// What is wrong.
    pub problem: String,
}

impl Cases {
    /// Reads a cases file's text.
    pub fn parse(text: &str, file: &str) -> Result<Cases, CasesError> {
        let fail = |problem: String| CasesError {
            file: file.into(),
            problem,
        };
        let cases: Cases = serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
        if cases.cases.is_empty() {
            return Err(fail("has no cases: a tool needs at least one test".into()));
        }
        if cases.cases.len() > MAX_CASES {
            return Err(fail(format!(
                "has {} cases; at most {MAX_CASES}",
                cases.cases.len()
            )));
        }
        for (i, case) in cases.cases.iter().enumerate() {
            if case.params.is_some() && case.args.is_some() {
                return Err(fail(format!(
                    "case {} (`{}`) gives both `params` and `args`; give one",
                    i + 1,
                    case.name
                )));
            }
        }
        Ok(cases)
    }

    /// The file's text, as written into a tool's directory.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// What a case's run needs: arguments, environment, stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Arguments after the entry point.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Bytes for stdin.
    pub stdin: Vec<u8>,
}

impl Case {
    /// The invocation of this case for `manifest`'s tool.
    pub fn invocation(&self) -> Invocation {
        let args = match (&self.args, &self.params) {
            (Some(args), _) => args.clone(),
            (None, Some(params)) => params_to_args(params),
            (None, None) => Vec::new(),
        };
        let mut env = Vec::new();
        if self.dry_run {
            env.push((invoke::DRY_RUN_ENV.to_owned(), "1".to_owned()));
        }
        Invocation {
            args,
            env,
            stdin: self.stdin.clone().unwrap_or_default().into_bytes(),
        }
    }
}

/// The options for parameters, without the schema check (cases may pass bad ones on purpose).
fn params_to_args(params: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<&String> = params.keys().collect();
    names.sort();
    let mut args = Vec::new();
    for name in names {
        let option = invoke::option_name(name);
        match &params[name] {
            Value::Bool(true) => args.push(option),
            Value::Bool(false) | Value::Null => {}
            Value::Array(items) => {
                for item in items {
                    args.push(option.clone());
                    args.push(match item {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
                }
            }
            Value::String(s) => {
                args.push(option);
                args.push(s.clone());
            }
            other => {
                args.push(option);
                args.push(other.to_string());
            }
        }
    }
    args
}

/// What a run of a case showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// Exit code, when the tool exited.
    pub exit_code: Option<i32>,
    /// What ended it otherwise (a signal, a limit), for the diagnosis.
    pub ended_by: Option<String>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// Whether every expectation held.
    pub passed: bool,
    /// For a failure, what differed (read by people and, in the repair loop, by the model).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(400).collect();
    if text.chars().count() > 400 {
        format!("{t}…")
    } else {
        t
    }
}

/// The commands a dry run printed, each its words: one command a line, words separated by
/// spaces, a word in single quotes where it needs them (`'it'\''s'`, which may span lines).
/// `None` for text not in that form.
pub fn dry_run_commands(text: &str) -> Option<Vec<Vec<String>>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => w.push(other),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            ' ' | '\n' => {
                words.extend(word.take());
                if c == '\n' && !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(word);
    if !words.is_empty() {
        commands.push(words);
    }
    Some(commands)
}

fn short(word: Option<&String>) -> String {
    word.map_or_else(|| "nothing".to_owned(), |w| format!("`{}`", excerpt(w)))
}

/// Where the commands a dry run printed first differ from those expected: the command, the
/// word, and both commands. `None` when they do not differ as commands or do not read as such.
pub fn first_difference(expected: &str, got: &str) -> Option<String> {
    let (want, have) = (dry_run_commands(expected)?, dry_run_commands(got)?);
    let line = |argv: &[String]| excerpt(&argv.join(" ").replace('\n', "\\n"));
    for i in 0..want.len().max(have.len()) {
        match (want.get(i), have.get(i)) {
            (Some(w), Some(h)) if w == h => {}
            (Some(w), Some(h)) => {
                let j = (0..w.len().max(h.len())).find(|&j| w.get(j) != h.get(j))?;
                return Some(format!(
                    "command {} word {}: expected {}, got {} — expected `{}`, got `{}`",
                    i + 1,
                    j + 1,
                    short(w.get(j)),
                    short(h.get(j)),
                    line(w),
                    line(h)
                ));
            }
            (Some(w), None) => {
                return Some(format!("command {} missing: `{}`", i + 1, line(w)));
            }
            (None, Some(h)) => {
                return Some(format!("extra command {}: `{}`", i + 1, line(h)));
            }
            (None, None) => {}
        }
    }
    None
}

/// Compares a run with its case.
pub fn check(case: &Case, manifest: &Manifest, observed: &Observed) -> CaseResult {
    let e = &case.expect;
    let mut problems = Vec::new();
    if let Some(by) = &observed.ended_by {
        problems.push(format!("the run was ended by {by}"));
    }
    if let Some(want) = e.exit_code
        && observed.exit_code != Some(want)
    {
        problems.push(format!(
            "exit code {} where {want} was expected; stderr: {}",
            observed
                .exit_code
                .map_or_else(|| "none".to_owned(), |c| c.to_string()),
            excerpt(observed.stderr.trim())
        ));
    }
    if let Some(want) = &e.stdout
        && observed.stdout.trim_end() != want.trim_end()
    {
        // A dry run prints commands: say where they first differ, word by word.
        let first = case
            .dry_run
            .then(|| first_difference(want, &observed.stdout))
            .flatten()
            .map(|d| format!("{d}\n"))
            .unwrap_or_default();
        problems.push(format!(
            "stdout differs.\n{first}--- expected\n{}\n--- got\n{}",
            excerpt(want.trim_end()),
            excerpt(observed.stdout.trim_end())
        ));
    }
    if !e.stdout_lines.is_empty() {
        let want = e.stdout_lines.join("\n");
        let got = observed.stdout.trim_end();
        if let Some(at) = crate::mine::line::first_difference(want.trim_end(), got) {
            problems.push(format!(
                "the dry run does not print the lines as logged: {at}\n--- logged\n{}\n--- \
                 printed\n{}",
                excerpt(want.trim_end()),
                excerpt(got)
            ));
        }
    }
    for want in &e.stdout_contains {
        if !observed.stdout.contains(want.as_str()) {
            problems.push(format!(
                "stdout lacks `{want}`; got: {}",
                excerpt(&observed.stdout)
            ));
        }
    }
    for want in &e.stderr_contains {
        if !observed.stderr.contains(want.as_str()) {
            problems.push(format!(
                "stderr lacks `{want}`; got: {}",
                excerpt(&observed.stderr)
            ));
        }
    }
    for unwanted in &e.output_excludes {
        if observed.stdout.contains(unwanted.as_str())
            || observed.stderr.contains(unwanted.as_str())
        {
            problems.push(format!(
                "the output still shows `{unwanted}`; stderr: {}",
                excerpt(observed.stderr.trim())
            ));
        }
    }
    if e.stdout_matches_schema {
        match serde_json::from_str::<Value>(&observed.stdout) {
            Err(err) => problems.push(format!("stdout is not JSON: {err}")),
            Ok(doc) => {
                if let Some(schema) = &manifest.interface.output_schema {
                    match jsonschema::validator_for(schema) {
                        Err(err) => problems.push(format!("the output schema is invalid: {err}")),
                        Ok(v) => {
                            problems.extend(v.iter_errors(&doc).take(5).map(|err| {
                                format!("stdout does not match the output schema: {err}")
                            }))
                        }
                    }
                }
            }
        }
    }
    CaseResult {
        name: case.name.clone(),
        passed: problems.is_empty(),
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        let text = r#"apiVersion: toolsmith/v1
name: crate-sizes
version: 1.0.0
description: Print the size of each crate as JSON.
interface:
  params: { type: object, properties: { package: { type: string } } }
  output: json
  output_schema: { type: object, required: [sizes], properties: { sizes: { type: array } } }
runtime: { language: sh, entrypoint: run.sh }
provenance: { origin: request, generator: human, created: 2026-11-22T10:00:00Z }
"#;
        Manifest::parse(text, "t").expect("manifest")
    }

    fn observed(code: i32, stdout: &str, stderr: &str) -> Observed {
        Observed {
            exit_code: Some(code),
            ended_by: None,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    const FILE: &str = r#"{"cases": [
      {"name": "dry run", "params": {"package": "core", "all": true, "n": 3},
       "dry_run": true, "expect": {"exit_code": 0, "stdout": "cargo build -p core\n"}},
      {"name": "help", "args": ["--help"], "expect": {"exit_code": 0, "stdout_contains": ["--package"]}},
      {"name": "json", "params": {}, "expect": {"stdout_matches_schema": true}}
    ]}"#;

    #[test]
    fn cases_become_invocations() {
        let cases = Cases::parse(FILE, "tests/cases.json").expect("valid");
        let inv = cases.cases[0].invocation();
        assert_eq!(inv.args, ["--all", "--n", "3", "--package", "core"]);
        assert_eq!(inv.env, [("TOOLSMITH_DRY_RUN".to_owned(), "1".to_owned())]);
        assert_eq!(cases.cases[1].invocation().args, ["--help"]);
        let again = Cases::parse(&cases.to_json(), "t").expect("round trip");
        assert_eq!(again, cases);
    }

    #[test]
    fn runs_are_compared_with_their_case() {
        let m = manifest();
        let cases = Cases::parse(FILE, "t").expect("valid").cases;
        assert!(check(&cases[0], &m, &observed(0, "cargo build -p core\n", "")).passed);
        let r = check(&cases[0], &m, &observed(0, "cargo build -p cor\n", ""));
        assert!(!r.passed);
        assert!(r.problems[0].contains("stdout differs"), "{:?}", r.problems);
        // A dry run's commands are compared word for word: the first difference is named.
        let r = check(&cases[0], &m, &observed(0, "cargo -p build core\n", ""));
        assert!(
            r.problems[0].contains(
                "command 1 word 2: expected `build`, got `-p` — expected `cargo build -p core`, \
                 got `cargo -p build core`"
            ),
            "{:?}",
            r.problems
        );
        let r = check(&cases[1], &m, &observed(2, "", "sh: 1: bad"));
        assert!(
            r.problems[0].contains("exit code 2 where 0"),
            "{:?}",
            r.problems
        );
        assert!(r.problems[0].contains("sh: 1: bad"));
        assert!(check(&cases[2], &m, &observed(0, r#"{"sizes": []}"#, "")).passed);
        let r = check(&cases[2], &m, &observed(0, r#"{"size": 3}"#, ""));
        assert!(r.problems[0].contains("output schema"), "{:?}", r.problems);
        let r = check(&cases[2], &m, &observed(0, "sizes: none", ""));
        assert!(r.problems[0].contains("not JSON"), "{:?}", r.problems);
        let regression = Case {
            name: "regression".into(),
            params: None,
            args: None,
            dry_run: false,
            stdin: None,
            expect: Expect {
                output_excludes: vec!["unknown option '--target'".into()],
                ..Expect::default()
            },
        };
        assert!(check(&regression, &m, &observed(127, "", "./x: not found")).passed);
        let r = check(
            &regression,
            &m,
            &observed(2, "", "x: unknown option '--target'"),
        );
        assert!(r.problems[0].contains("still shows"), "{:?}", r.problems);
        let mut killed = observed(0, "", "");
        killed.exit_code = None;
        killed.ended_by = Some("the wall-time limit (10 s)".into());
        let r = check(&cases[1], &m, &killed);
        assert!(
            r.problems[0].contains("wall-time limit"),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn dry_runs_read_as_commands() {
        assert_eq!(
            dry_run_commands("git commit -m 'it'\\''s\ndone'\nnpm test\n"),
            Some(vec![
                vec![
                    "git".to_owned(),
                    "commit".into(),
                    "-m".into(),
                    "it's\ndone".into()
                ],
                vec!["npm".to_owned(), "test".into()],
            ])
        );
        assert_eq!(dry_run_commands("echo 'open"), None);
        assert_eq!(
            first_difference("npm test\nnpm install x\n", "npm test\n").as_deref(),
            Some("command 2 missing: `npm install x`")
        );
        assert_eq!(
            first_difference("a b\n", "a b\nc\n").as_deref(),
            Some("extra command 2: `c`")
        );
        assert_eq!(
            first_difference("x -a\n", "x -a -b\n").as_deref(),
            Some("command 1 word 3: expected nothing, got `-b` — expected `x -a`, got `x -a -b`")
        );
        assert_eq!(first_difference("a  b\n", "a b\n"), None);
    }

    #[test]
    fn bad_files_are_refused() {
        for (text, expect) in [
            ("{\"cases\": []}", "no cases"),
            ("{\"cases\": [{\"name\": \"x\"}]}", "missing field `expect`"),
            (
                "{\"cases\": [{\"name\": \"x\", \"expect\": {}, \"cmd\": 1}]}",
                "unknown field",
            ),
            (
                "{\"cases\": [{\"name\": \"x\", \"params\": {}, \"args\": [], \"expect\": {}}]}",
                "both",
            ),
            ("[]", "expected struct Cases"),
        ] {
            let err = Cases::parse(text, "tests/cases.json")
                .expect_err(text)
                .to_string();
            assert!(err.contains(expect), "{text}: {err}");
        }
    }
}
