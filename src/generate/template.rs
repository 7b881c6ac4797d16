//! The offline generator (`template/sh@1`): a POSIX sh tool from a [`ToolSpec`], and its tests
//! derived from the evidence.
//!
//! The code is strict: `set -eu`; every parameter is an option parsed in a loop, checked (a
//! missing required one, a bad number, an unknown option: a message and exit code 2); values
//! only ever appear double-quoted, so no value is re-read by the shell; `--help` lists every
//! parameter; `TOOLSMITH_DRY_RUN=1` prints each command, shell-quoted, instead of running it.
//! A recovery tool runs the command that used to fail, and when its output matches the error's
//! template, runs the recovery steps and the command again.
//!
//! **Pathname patterns.** A word the habit's shell expanded as a pattern (`grep -l foo **/*.h`
//! typed unquoted: [`StepSpec::glob`]) reached the program as the matching files, so the tool's
//! shell expands it too: a parameter is written unquoted (`${p_x}`, `$@`), with `IFS=` set at
//! the top so that it is never split (nothing else in the script relies on splitting), and a
//! literal with only its `*`, `?` and bracket expressions unquoted (`glob_code`). A dry run
//! sets `set -f`, so it prints the word as logged and the dry-run cases still compare with the
//! log. The source shell's rules are kept: under zsh's or fish's, a pattern that matches nothing
//! stops the tool before its command with that shell's message and status (`no matches found:
//! PATTERN`, 1; fish's `No matches for wildcard`, 124), where sh and bash pass it as written;
//! and a `**` zsh or fish matched at any depth makes the tool bash ([`Language::Bash`],
//! `#!/usr/bin/env bash`, `shopt -s globstar`; [`needs_globstar`]). The tool runs the command
//! once the pattern matched, as the shell did; it cannot give back the order of a locale other
//! than the sandbox's.
//!
//! The derived tests (`tests/cases.json`): for every observed occurrence, the dry run with its
//! parameter values must print exactly the commands that were run; `--help` lists every
//! parameter; a missing required parameter and an unknown option fail cleanly.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::spec::{
    Occurrence, ParamKind, Piece, StepSpec, TemplateError, ToolSpec, is_snake_case, needs_globstar,
};
use crate::invoke;
use crate::mine::token::Globbing;
use crate::package::manifest::{Language, Origin};
use crate::quote::shell_quote;
use crate::validate::cases::{Case, Cases, Expect};

/// The generator's name, recorded in provenance.
pub const GENERATOR: &str = "template/sh@1";

/// The generator writing `spec`'s tool: [`GENERATOR`] for POSIX sh, `template/py@1`
/// ([`super::template_py`]) for a Python data transformation.
pub fn generator_of(spec: &ToolSpec) -> &'static str {
    match spec.language {
        Language::Sh | Language::Bash => GENERATOR,
        Language::Python => super::template_py::GENERATOR,
    }
}

/// The entry point of `spec`'s tool.
fn entry_of(spec: &ToolSpec) -> &'static str {
    match spec.language {
        Language::Sh | Language::Bash => "run.sh",
        Language::Python => "run.py",
    }
}

/// Occurrences turned into dry-run tests, at most.
pub const MAX_OCCURRENCE_CASES: usize = 12;

/// The characters a dry run prints without quotes (as [`shell_quote`]).
const SAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,~-";

/// Text from a log or a request as one line of plain text: control characters (a newline could
/// end a comment or the usage here-document and start code) become spaces.
fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_control())
        .filter(|part| !part.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a word is a shell redirection operator (`>`, `2>>`, `<<EOF`, `>&2`, …).
fn is_redirection(word: &str) -> bool {
    let op = word.trim_start_matches(|c: char| c.is_ascii_digit());
    matches!(op, ">" | ">>" | "<" | "&>" | "&>>" | ">|" | "<>")
        || op.starts_with("<<")
        || op.starts_with(">&")
        || op.starts_with("<&")
}

/// The shell variable holding a parameter or internal value.
pub(super) fn var(name: &str) -> String {
    format!("p_{name}")
}

/// A word as sh code: literals single-quoted where needed, values double-quoted; the variadic
/// parameter (a word of its own) is `"$@"`, where option parsing left its items. A word the
/// habit's shell expanded as a pathname pattern (`glob`) is written for the tool's shell to
/// expand: a parameter unquoted (`${p_x}`, `$@`; `IFS=` keeps it one field), a literal with
/// only its pattern characters unquoted.
fn word_code(word: &[Piece], variadic: Option<&str>, glob: Option<Globbing>) -> String {
    if let ([Piece::Param(name)], Some(v)) = (word, variadic)
        && name == v
    {
        return if glob.is_some() { "$@" } else { "\"$@\"" }.to_owned();
    }
    if glob.is_some() {
        match word {
            [Piece::Literal(text)] => return glob_code(text),
            [Piece::Param(name)] => return format!("${{{}}}", var(name)),
            _ => {}
        }
    }
    let mut out = String::new();
    for piece in word {
        match piece {
            Piece::Literal(text) => out.push_str(&shell_quote(text)),
            Piece::Param(name) | Piece::Internal(name) => {
                let _ = write!(out, "\"${{{}}}\"", var(name));
            }
        }
    }
    if out.is_empty() {
        out.push_str("''");
    }
    out
}

/// A pathname pattern as sh code the shell expands: `*`, `?` and whole bracket expressions
/// (`[ch]`, `[!0-9]`) unquoted, every other character quoted as [`shell_quote`] quotes, so
/// nothing but pathname expansion happens to it (`'~/src/'*.h`: no tilde, no brace expansion).
fn glob_code(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut plain = String::new();
    let flush = |plain: &mut String, out: &mut String| {
        if !plain.is_empty() {
            out.push_str(&shell_quote(plain));
            plain.clear();
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '*' || c == '?' {
            flush(&mut plain, &mut out);
            out.push(c);
            i += 1;
            continue;
        }
        if c == '[' {
            // A bracket expression made of characters sh reads as they are: written bare.
            let body_start = i + 1 + usize::from(matches!(chars.get(i + 1), Some('!' | '^')));
            let close = (body_start + 1..chars.len()).find(|&j| chars[j] == ']');
            if let Some(close) = close
                && chars[i + 1..close]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || "!^-_.,:+@%=".contains(*c))
            {
                flush(&mut plain, &mut out);
                out.extend(&chars[i..=close]);
                i = close + 1;
                continue;
            }
        }
        plain.push(c);
        i += 1;
    }
    flush(&mut plain, &mut out);
    out
}

fn step_code(step: &StepSpec, variadic: Option<&str>) -> String {
    step.words
        .iter()
        .enumerate()
        .map(|(i, w)| word_code(w, variadic, step.glob(i)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The checks before a step of the words its shell refuses to run with when they match nothing
/// (zsh, fish): `ts_glob PATTERN EXPANSION…`, one line each; none under sh's rules.
fn glob_checks(step: &StepSpec, variadic: Option<&str>) -> Vec<String> {
    (0..step.words.len())
        .filter(|&i| step.glob(i).is_some_and(Globbing::fails_unmatched))
        .map(|i| {
            let word = &step.words[i];
            let function = match step.glob(i) {
                Some(Globbing::Fish) => "ts_glob_fish",
                _ => "ts_glob_zsh",
            };
            match word.as_slice() {
                [Piece::Param(name)] if Some(name.as_str()) == variadic => {
                    format!("for ts_v do {function} \"$ts_v\" $ts_v; done")
                }
                _ => format!(
                    "{function} {} {}",
                    word_code(word, variadic, None),
                    word_code(word, variadic, step.glob(i))
                ),
            }
        })
        .collect()
}

/// Every step of `spec`, the failing command first.
fn all_steps(spec: &ToolSpec) -> impl Iterator<Item = &StepSpec> {
    spec.trigger_step.iter().chain(&spec.steps)
}

/// An extended regular expression matching the lines of an error template.
pub fn template_regex(template: &str) -> String {
    let mut parts = Vec::new();
    for token in template.split_whitespace() {
        let mut part = String::new();
        for (i, fixed) in token.split("<*>").enumerate() {
            if i > 0 {
                part.push_str(".*");
            }
            for c in fixed.chars() {
                if r"\.^$|?*+()[]{}".contains(c) {
                    part.push('\\');
                }
                part.push(c);
            }
        }
        parts.push(part);
    }
    parts.join("[[:space:]]+")
}

fn usage(spec: &ToolSpec) -> String {
    let mut synopsis = format!("Usage: {}", entry_of(spec));
    for p in &spec.params {
        let opt = invoke::option_name(&p.name);
        let arg = if p.kind == ParamKind::Boolean {
            opt
        } else {
            format!(
                "{opt} {}{}",
                p.kind.placeholder(),
                if p.variadic { "..." } else { "" }
            )
        };
        if p.required {
            let _ = write!(synopsis, " {arg}");
        } else {
            let _ = write!(synopsis, " [{arg}]");
        }
    }
    let mut text = format!(
        "{synopsis}\n\n{}\n\nOptions:\n",
        one_line(&spec.description)
    );
    for p in &spec.params {
        let opt = invoke::option_name(&p.name);
        let left = if p.kind == ParamKind::Boolean {
            opt
        } else {
            format!("{opt} {}", p.kind.placeholder())
        };
        let mut right = one_line(&p.description);
        if p.variadic {
            right.push_str(" (repeatable)");
        }
        if p.required {
            right.push_str(" (required)");
        }
        if !p.examples.is_empty() {
            let _ = write!(
                right,
                "; e.g. {}",
                p.examples
                    .iter()
                    .take(3)
                    .map(|e| one_line(e))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(text, "  {left:<24} {right}");
    }
    let _ = writeln!(text, "  {:<24} show this help", "--help");
    text.push_str("\nWith TOOLSMITH_DRY_RUN=1 it prints the commands instead of running them.\n");
    text
}

/// The tool's `run.sh`.
pub fn run_sh(spec: &ToolSpec) -> Result<String, TemplateError> {
    let fail = |why: &str| TemplateError {
        tool: spec.name.clone(),
        why: why.to_owned(),
    };
    let bash = needs_globstar(all_steps(spec));
    match spec.language {
        Language::Sh if bash => {
            return Err(fail(
                "a pattern's `**` matched any depth of directories where it was typed, which \
                 POSIX sh cannot do: the tool must be bash",
            ));
        }
        Language::Sh | Language::Bash => {}
        Language::Python => return Err(fail("it writes sh or bash only")),
    }
    if spec.steps.is_empty() && spec.trigger_step.is_none() {
        return Err(fail("the spec has no steps"));
    }
    if spec.params.iter().any(|p| !is_snake_case(&p.name)) {
        return Err(fail("a parameter name is not snake_case"));
    }
    let variadics: Vec<&str> = spec
        .params
        .iter()
        .filter(|p| p.variadic)
        .map(|p| p.name.as_str())
        .collect();
    if variadics.len() > 1 {
        return Err(fail(
            "it takes at most one variadic parameter (its items live in \"$@\")",
        ));
    }
    let variadic = variadics.first().copied();
    // A redirection the miner kept as a word would reach the program as an argument (a
    // command line keeps its redirections where they were typed).
    let redirection = spec
        .steps
        .iter()
        .chain(spec.trigger_step.as_ref())
        .flat_map(|step| &step.words)
        .find_map(|w| match w.as_slice() {
            [Piece::Literal(t)] if is_redirection(t) => Some(t.clone()),
            _ => None,
        });
    if let Some(op) = redirection.filter(|_| !spec.is_lines()) {
        return Err(fail(&format!(
            "a step redirects (`{op}`), which template/sh@1 does not write; use the LLM backend"
        )));
    }
    if let Some(v) = variadic {
        let composite = spec
            .steps
            .iter()
            .chain(spec.trigger_step.as_ref())
            .flat_map(|step| &step.words)
            .any(|w| w.len() > 1 && w.contains(&Piece::Param(v.to_owned())));
        if composite {
            return Err(fail(
                "a variadic parameter must be a word of its own, not part of a word",
            ));
        }
    }
    let mut s = String::new();
    if spec.language == Language::Bash {
        s.push_str("#!/usr/bin/env bash\n");
    } else {
        s.push_str("#!/bin/sh\n");
    }
    let _ = writeln!(s, "# {}: {}", spec.name, one_line(&spec.description));
    let source = match (&spec.pattern, spec.support) {
        (Some(p), Some(n)) => format!(" from pattern {p}, seen in {n} sessions"),
        (Some(p), None) => format!(" from pattern {p}"),
        _ => String::new(),
    };
    let _ = writeln!(s, "# Written by toolsmith ({GENERATOR}){source}.");
    let globbing: Vec<Globbing> = all_steps(spec)
        .flat_map(|step| (0..step.words.len()).filter_map(|i| step.glob(i)))
        .collect();
    if !globbing.is_empty() {
        // Before the first command, so it holds for the whole file: a repeated parameter's
        // patterns are `$@` unquoted on purpose, for the shell to expand each.
        s.push_str("# shellcheck disable=SC2068\n");
    }
    s.push_str("set -eu\n");
    if spec.language == Language::Bash && !spec.is_lines() {
        // zsh's `**/` (and fish's `**`): any depth of directories, hidden ones left out.
        s.push_str("shopt -s globstar\n");
    }
    s.push('\n');
    if !globbing.is_empty() {
        s.push_str(
            "# Words the habit's shell expanded as pathname patterns are written unquoted: with \
             IFS empty\n# they are never split, only expanded. A dry run prints them as \
             written.\nIFS=\nif [ \"${TOOLSMITH_DRY_RUN:-}\" = 1 ]; then set -f; fi\n\n",
        );
    }
    for rules in [Globbing::Zsh, Globbing::Fish] {
        if !globbing.contains(&rules) {
            continue;
        }
        let (shell, message, status) = match rules {
            Globbing::Fish => ("fish", "No matches for wildcard '%s'.", 124),
            _ => ("zsh", "no matches found: %s", 1),
        };
        let _ = writeln!(
            s,
            "# {shell} refuses to run a command whose pattern matches nothing: so does this tool.\n\
             ts_glob_{shell}() {{\n  [ \"${{TOOLSMITH_DRY_RUN:-}}\" != 1 ] || return 0\n  \
             ts_pattern=$1\n  shift\n  if [ \"$#\" -eq 1 ] && [ \"$1\" = \"$ts_pattern\" ] && \
             [ ! -e \"$1\" ] && [ ! -L \"$1\" ]; then\n    printf '%s: {message}\\n' {name} \
             \"$ts_pattern\" >&2\n    exit {status}\n  fi\n}}\n",
            name = shell_quote(&spec.name),
        );
    }
    let usage_text = usage(spec);
    // The here-document must not end early, whatever the description says.
    let mut end = String::from("TOOLSMITH_USAGE");
    while usage_text.lines().any(|l| l == end) {
        end.push('_');
    }
    let _ = writeln!(s, "ts_usage() {{\n  cat <<'{end}'\n{usage_text}{end}\n}}\n");
    let _ = writeln!(
        s,
        "ts_die() {{\n  printf '%s: %s\\n' {} \"$1\" >&2\n  printf 'Try --help.\\n' >&2\n  exit 2\n}}\n",
        shell_quote(&spec.name)
    );
    s.push_str(&format!(
        r#"# Prints a word as a dry run shows it: as is when safe, else in single quotes.
ts_quote() {{
  case $1 in
    '' | *[!{SAFE}]*) ;;
    *) printf '%s' "$1"; return 0 ;;
  esac
  ts_rest=$1
  ts_out=
  while :; do
    case $ts_rest in
      *\'*) ts_out="$ts_out${{ts_rest%%\'*}}'\\''"; ts_rest=${{ts_rest#*\'}} ;;
      *) ts_out="$ts_out$ts_rest"; break ;;
    esac
  done
  printf "'%s'" "$ts_out"
}}

# Runs a command, or prints it in a dry run.
ts_run() {{
  if [ "${{TOOLSMITH_DRY_RUN:-}}" = 1 ]; then
    ts_line=
    for ts_arg do
      ts_line="$ts_line${{ts_line:+ }}$(ts_quote "$ts_arg")"
    done
    printf '%s\n' "$ts_line"
  else
    "$@"
  fi
}}

"#
    ));
    // Option parsing. The loop counts the original arguments, so that the items of a
    // variadic parameter can be moved to the end of "$@" as they are read: after the loop,
    // "$@" holds exactly those items, each still one word.
    for p in &spec.params {
        if !p.variadic {
            let _ = writeln!(s, "{}=", var(&p.name));
        }
        let _ = writeln!(s, "ts_have_{}=0", p.name);
    }
    s.push_str(
        "ts_n=$#\nwhile [ \"$ts_n\" -gt 0 ]; do\n  ts_n=$((ts_n - 1))\n  case $1 in\n    --help | -h) ts_usage; exit 0 ;;\n",
    );
    for p in &spec.params {
        let opt = invoke::option_name(&p.name);
        let v = var(&p.name);
        let n = &p.name;
        if p.kind == ParamKind::Boolean {
            let _ = writeln!(s, "    {opt}) {v}=1; ts_have_{n}=1; shift ;;");
        } else if p.variadic {
            let _ = writeln!(
                s,
                "    {opt}) [ \"$ts_n\" -ge 1 ] || ts_die \"{opt} needs a value\"; ts_n=$((ts_n - 1)); set -- \"$@\" \"$2\"; ts_have_{n}=1; shift 2 ;;\n    {opt}=*) set -- \"$@\" \"${{1#{opt}=}}\"; ts_have_{n}=1; shift ;;"
            );
        } else {
            let _ = writeln!(
                s,
                "    {opt}) [ \"$ts_n\" -ge 1 ] || ts_die \"{opt} needs a value\"; ts_n=$((ts_n - 1)); {v}=$2; ts_have_{n}=1; shift 2 ;;\n    {opt}=*) {v}=${{1#{opt}=}}; ts_have_{n}=1; shift ;;"
            );
        }
    }
    s.push_str(
        "    --) [ \"$ts_n\" -eq 0 ] || ts_die \"unexpected argument: $2\"; shift ;;\n    *) ts_die \"unknown option: $1\" ;;\n  esac\ndone\n",
    );
    for p in &spec.params {
        let opt = invoke::option_name(&p.name);
        let v = var(&p.name);
        if p.required {
            let _ = writeln!(
                s,
                "[ \"$ts_have_{}\" = 1 ] || ts_die \"missing required option {opt}\"",
                p.name
            );
        }
        // Each value is checked; the items of a variadic parameter one by one.
        let (subject, value) = if p.variadic {
            ("$ts_v".to_owned(), "$ts_v".to_owned())
        } else {
            (format!("${v}"), format!("${v}"))
        };
        let check = match p.kind {
            ParamKind::Integer => Some((
                "'' | *[!0-9]*".to_owned(),
                format!("{opt} must be a whole number, got '{value}'"),
            )),
            ParamKind::Sha => Some((
                "'' | *[!0-9a-fA-F]*".to_owned(),
                format!("{opt} must be a commit id (hex), got '{value}'"),
            )),
            ParamKind::Url => Some((
                "*://*) ;; *".to_owned(),
                format!("{opt} must be a URL, got '{value}'"),
            )),
            ParamKind::Path | ParamKind::Glob | ParamKind::String | ParamKind::Text => {
                Some(("''".to_owned(), format!("{opt} must not be empty")))
            }
            ParamKind::Number | ParamKind::Boolean => None,
        };
        if let Some((pattern, message)) = check {
            // A value the command would take for an option, where the log never had one.
            let dash = if spec.refuses_dash(p) {
                format!(
                    " -*) ts_die \"{opt} must not begin with '-' (its command would take '{value}' for an option)\" ;;"
                )
            } else {
                String::new()
            };
            let test = format!("case {subject} in {pattern}) ts_die \"{message}\" ;;{dash} esac");
            if p.variadic {
                let _ = writeln!(
                    s,
                    "if [ \"$ts_have_{n}\" = 1 ]; then for ts_v do {test}; done; fi",
                    n = p.name
                );
            } else {
                let _ = writeln!(
                    s,
                    "if [ \"$ts_have_{n}\" = 1 ]; then {test}; fi",
                    n = p.name
                );
            }
        }
    }
    s.push('\n');
    // A run of piped steps is one pipeline; its status is its last command's, as in the
    // shell the commands were seen in.
    let captured_in_pipeline = spec
        .steps
        .windows(2)
        .any(|pair| pair[1].piped && (pair[0].captures.is_some() || pair[1].captures.is_some()));
    if captured_in_pipeline {
        return Err(fail(
            "a step of a pipeline keeps its output for a later step, which template/sh@1 \
             does not write; use the LLM backend",
        ));
    }
    let step_lines = |steps: &[StepSpec], out: &mut String| {
        let mut i = 0;
        while i < steps.len() {
            let end = (i + 1..steps.len())
                .find(|&j| !steps[j].piped)
                .unwrap_or(steps.len());
            if end - i > 1 {
                let group = &steps[i..end];
                let dry: Vec<String> = group
                    .iter()
                    .map(|step| format!("  ts_run {}", step_code(step, variadic)))
                    .collect();
                // A command of a pipeline whose pattern matches nothing fails alone, as in
                // zsh: its check runs in its own element, and the others still run.
                let real: Vec<String> = group
                    .iter()
                    .map(|step| {
                        let checks = glob_checks(step, variadic);
                        let code = step_code(step, variadic);
                        if checks.is_empty() {
                            code
                        } else {
                            format!("{{ {}; {code}; }}", checks.join("; "))
                        }
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "if [ \"${{TOOLSMITH_DRY_RUN:-}}\" = 1 ]; then\n{}\nelse\n  {}\nfi",
                    dry.join("\n"),
                    real.join(" | ")
                );
                i = end;
                continue;
            }
            let step = &steps[i];
            i += 1;
            for check in glob_checks(step, variadic) {
                let _ = writeln!(out, "{check}");
            }
            match &step.captures {
                Some(name) => {
                    let v = var(name);
                    let _ = writeln!(
                        out,
                        "if [ \"${{TOOLSMITH_DRY_RUN:-}}\" = 1 ]; then\n  ts_run {code}\n  {v}='<{name}>'\nelse\n  {v}=$({code})\n  {v}=${{{v}%%\"$ts_nl\"*}}\nfi",
                        code = step_code(step, variadic)
                    );
                }
                None => {
                    let _ = writeln!(out, "ts_run {}", step_code(step, variadic));
                }
            }
        }
    };
    // A captured value keeps its first line only; the newline to cut at, when one is needed.
    if spec
        .steps
        .iter()
        .chain(spec.trigger_step.as_ref())
        .any(|step| step.captures.is_some())
    {
        s.push_str("ts_nl='\n'\n");
    }
    if spec.is_lines() {
        super::lines::write_body(spec, &mut s).map_err(|why| fail(&why))?;
        return Ok(s);
    }
    match (&spec.trigger_step, &spec.trigger) {
        (Some(trigger), Some(t)) => {
            // Called with "$@" so that a variadic parameter's items reach the function.
            let checks: String = glob_checks(trigger, variadic)
                .iter()
                .map(|check| format!("  {check}\n"))
                .collect();
            let _ = writeln!(
                s,
                "ts_trigger() {{\n{checks}  ts_run {}\n}}\n",
                step_code(trigger, variadic)
            );
            let mut recovery = String::new();
            step_lines(&spec.steps, &mut recovery);
            // The values the recovery takes from the failure, extracted from its output.
            let mut extract = String::new();
            if let Some(name) = &trigger.captures {
                let Some(&hole) = t.captures.get(name) else {
                    return Err(fail(&format!(
                        "the recovery uses a value (`{name}`) of the failing command's output that \
                         is not where the error's template (`{}`) has a varying part; use the LLM \
                         backend",
                        one_line(&t.error_template)
                    )));
                };
                let v = var(name);
                let sed = format!(
                    "s/.*{}.*/\\1/p",
                    super::logged::capture_regex(&t.error_template, hole).replace('/', "\\/")
                );
                let _ = writeln!(
                    extract,
                    "{v}=$(printf '%s\\n' \"$ts_output\" | sed -nE {sed})\n{v}=${{{v}%%\"$ts_nl\"*}}\nif [ -z \"${v}\" ]; then\n  printf '%s\\n' {msg} >&2\n  exit \"$ts_status\"\nfi",
                    sed = shell_quote(&sed),
                    msg = shell_quote(&format!(
                        "{}: recognised the failure, but not the value <{name}> in it",
                        spec.name
                    )),
                );
            }
            // A dry run does not run the failing command: it prints it and reads the output
            // the command would have given on stdin (a test replays the recorded failure;
            // nothing is read from a terminal), then goes on as a real run would.
            let _ = writeln!(
                s,
                "ts_status=0\nif [ \"${{TOOLSMITH_DRY_RUN:-}}\" = 1 ]; then\n  ts_trigger \"$@\"\n  ts_output=\n  [ -t 0 ] || ts_output=$(cat)\n  ts_status=1\nelse\n  ts_output=$(ts_trigger \"$@\" 2>&1) || ts_status=$?\n  [ -z \"$ts_output\" ] || printf '%s\\n' \"$ts_output\"\n  [ \"$ts_status\" -ne 0 ] || exit 0\nfi\n\n# The failure this tool knows: {template}\nif printf '%s\\n' \"$ts_output\" | grep -Eq -- {regex}; then\n{extract}  printf '%s\\n' {notice} >&2\n{rec}  ts_trigger \"$@\"\nelif [ \"${{TOOLSMITH_DRY_RUN:-}}\" = 1 ]; then\n  exit 0\nelse\n  exit \"$ts_status\"\nfi",
                template = one_line(&t.error_template),
                regex = shell_quote(&template_regex(&t.error_template)),
                extract = indent(&extract),
                notice = shell_quote(&format!(
                    "{}: recognised the failure ({}); recovering",
                    spec.name, t.error_template
                )),
                rec = indent(&recovery)
            );
        }
        (None, None) => step_lines(&spec.steps, &mut s),
        _ => {
            return Err(fail(
                "a recovery needs both the failing command and the error's template",
            ));
        }
    }
    Ok(s)
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// An occurrence's parameter values, as a case passes them.
fn occurrence_params(spec: &ToolSpec, occ: &Occurrence) -> Map<String, Value> {
    let mut params = Map::new();
    for p in &spec.params {
        if let Some(value) = occ.params.get(&p.name) {
            params.insert(p.name.clone(), p.value_of(value));
        }
    }
    params
}

/// Commands (each an argv) as a dry run prints them: one line each, every word quoted as
/// [`shell_quote`] does.
pub fn dry_run_text(commands: &[Vec<String>]) -> String {
    let mut text = String::new();
    for argv in commands {
        let line: Vec<String> = argv.iter().map(|w| shell_quote(w)).collect();
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    text
}

/// The dry-run cases of every occurrence whose commands the log gives: with that occurrence's
/// own values, the tool prints exactly what was run (argv after shell parsing). Whoever wrote
/// the tool — the templates or a model — it is held to these, so a tool that reorders, drops
/// or adds a word fails validation, naming the first differing word.
pub fn logged_cases(spec: &ToolSpec) -> Vec<Case> {
    let mut cases = Vec::new();
    // What the log recorded, not what the miner made of it: an occurrence whose commands the
    // log does not give is no test. A recovery's dry run reads the recorded failure on stdin.
    let lines = spec.is_lines();
    for (i, occ) in spec
        .occurrences
        .iter()
        .filter(|occ| {
            if lines {
                occ.lines.len() == spec.steps.len()
            } else {
                !occ.logged.is_empty()
            }
        })
        .take(MAX_OCCURRENCE_CASES)
        .enumerate()
    {
        let params = occurrence_params(spec, occ);
        let (stdout, stdout_lines) = if lines {
            (None, occ.lines.clone())
        } else {
            (Some(dry_run_text(&occ.logged)), Vec::new())
        };
        cases.push(Case {
            name: format!(
                "occurrence {}: session {}, actions {}-{} — the dry run prints what was run",
                i + 1,
                occ.evidence.session,
                occ.evidence.first_seq,
                occ.evidence.last_seq
            ),
            params: Some(params),
            args: None,
            dry_run: true,
            stdin: spec.trigger_step.as_ref().and(occ.failure_output.clone()),
            expect: Expect {
                exit_code: Some(0),
                stdout,
                stdout_lines,
                ..Expect::default()
            },
        });
    }
    cases
}

/// The derived tests: per occurrence, the dry run prints what was run, and, for a text
/// transformation the log holds whole, the recorded input gives the recorded output; `--help`
/// lists every parameter; a missing required parameter and an unknown option fail cleanly.
pub fn derived_cases(spec: &ToolSpec) -> Cases {
    let mut cases = logged_cases(spec);
    // Where the log holds a text transformation whole, the tool must do it again: the same
    // input gives the output the log recorded. Only text filters are run for this.
    if super::template_py::fits(&spec.steps, spec.trigger_step.as_ref()) {
        for occ in spec.occurrences.iter().take(MAX_OCCURRENCE_CASES) {
            let Some(replay) = &occ.replay else {
                continue;
            };
            cases.push(Case {
                name: format!(
                    "replay: session {}, action {} — its input gives the output the log recorded",
                    occ.evidence.session, occ.evidence.first_seq
                ),
                params: Some(occurrence_params(spec, occ)),
                args: None,
                dry_run: false,
                stdin: Some(replay.stdin.clone()),
                expect: Expect {
                    exit_code: Some(0),
                    stdout: Some(replay.stdout.clone()),
                    ..Expect::default()
                },
            });
        }
    }
    cases.push(Case {
        name: "--help lists every parameter".into(),
        params: None,
        args: Some(vec!["--help".into()]),
        dry_run: false,
        stdin: None,
        expect: Expect {
            exit_code: Some(0),
            stdout_contains: spec
                .params
                .iter()
                .map(|p| invoke::option_name(&p.name))
                .collect(),
            ..Expect::default()
        },
    });
    // A value beginning with `-` where the log never had one is refused by the tool itself
    // (the schema refuses it too, but cases pass parameters unchecked).
    if let (Some(p), Some(occ)) = (
        spec.params.iter().find(|p| spec.refuses_dash(p)),
        spec.occurrences.first(),
    ) {
        let mut params = occurrence_params(spec, occ);
        let dashed = Value::String("--version".into());
        params.insert(
            p.name.clone(),
            if p.variadic {
                Value::Array(vec![dashed])
            } else {
                dashed
            },
        );
        cases.push(Case {
            name: format!(
                "a value beginning with `-` for {} is refused (the log never had one)",
                invoke::option_name(&p.name)
            ),
            params: Some(params),
            args: None,
            dry_run: true,
            stdin: None,
            expect: Expect {
                exit_code: Some(2),
                stderr_contains: vec![invoke::option_name(&p.name)],
                ..Expect::default()
            },
        });
    }
    if let Some(required) = spec.params.iter().find(|p| p.required) {
        cases.push(Case {
            name: format!(
                "a missing {} fails cleanly",
                invoke::option_name(&required.name)
            ),
            params: Some(Map::new()),
            args: None,
            dry_run: true,
            stdin: None,
            expect: Expect {
                exit_code: Some(2),
                stderr_contains: vec![invoke::option_name(&required.name)],
                ..Expect::default()
            },
        });
    }
    cases.push(Case {
        name: "an unknown option fails cleanly".into(),
        params: None,
        args: Some(vec!["--no-such-option".into()]),
        dry_run: true,
        stdin: None,
        expect: Expect {
            exit_code: Some(2),
            stderr_contains: vec!["unknown option".into()],
            ..Expect::default()
        },
    });
    Cases { cases }
}

/// The tool's `README.md`: what it does, how it is called, what it runs for the observed
/// occurrences, its limits and where it came from.
pub fn readme(spec: &ToolSpec) -> String {
    let mut text = format!(
        "# {}\n\n{}\n\n## Usage\n\n",
        spec.name,
        one_line(&spec.description)
    );
    let example: Vec<String> = spec
        .params
        .iter()
        .filter(|p| p.required)
        .map(|p| format!("--param {}=…", p.name))
        .collect();
    let _ = writeln!(
        text,
        "Through toolsmith, in the sandbox: `toolsmith run {}{}{}`\n\nThe script itself:\n",
        spec.name,
        if example.is_empty() { "" } else { " " },
        example.join(" ")
    );
    for line in usage(spec).lines() {
        let _ = writeln!(text, "    {line}");
    }
    let mut shown: Vec<&super::spec::Occurrence> = Vec::new();
    for occ in spec.occurrences.iter().filter(|o| !o.logged.is_empty()) {
        if shown.len() < 3 && !shown.iter().any(|s| s.logged == occ.logged) {
            shown.push(occ);
        }
    }
    if !shown.is_empty() {
        text.push_str("\n## Examples\n\nWhat it runs, as the dry run prints it, for occurrences seen in the logs:\n\n");
        for occ in shown {
            let options: Vec<String> = occ
                .params
                .iter()
                .map(|(k, v)| format!("{} {}", invoke::option_name(k), shell_quote(v)))
                .collect();
            let _ = writeln!(
                text,
                "    $ {}",
                one_line(&format!(
                    "TOOLSMITH_DRY_RUN=1 {} {}",
                    entry_of(spec),
                    options.join(" ")
                ))
            );
            for line in dry_run_text(&occ.logged).lines() {
                let _ = writeln!(text, "    {line}");
            }
            text.push('\n');
        }
    }
    let l = &spec.sandbox.limits;
    let _ = write!(
        text,
        "\n## Limits\n\nRuns in the sandbox without network, with {} access to the workspace; at most \
         {} s, {} MiB of memory, {} processes.\n",
        spec.sandbox.workspace, l.wall_s, l.memory_mb, l.pids
    );
    if !spec.requires.is_empty() {
        let _ = writeln!(text, "It calls: {}.", spec.requires.join(", "));
    }
    let _ = write!(text, "\n## Provenance\n\nOrigin: {}", spec.origin.as_str());
    if let Some(p) = &spec.pattern {
        let _ = write!(text, ", pattern {p}");
    }
    if let Some(n) = spec.support {
        let _ = write!(text, ", seen in {n} sessions");
    }
    let _ = writeln!(text, ". Written by toolsmith ({}).", generator_of(spec));
    text
}

/// Every file of a template tool: the manifest, `run.sh` (`run.py` for a Python text
/// transformation, by [`super::template_py`]), `tests/cases.json` and `README.md`.
pub fn generate(
    spec: &ToolSpec,
    version: semver::Version,
) -> Result<BTreeMap<String, String>, TemplateError> {
    // A request is a template tool only when its example commands gave it steps.
    if spec.origin == Origin::Request && spec.steps.is_empty() && spec.trigger_step.is_none() {
        return Err(TemplateError {
            tool: spec.name.clone(),
            why: "a request without example commands needs a language model (configure [llm] \
                  and set generate.backend = \"llm\"), or give the commands with --example"
                .into(),
        });
    }
    let manifest = spec.manifest(version, generator_of(spec));
    let mut files = BTreeMap::new();
    let code = match spec.language {
        Language::Sh | Language::Bash => run_sh(spec)?,
        Language::Python => super::template_py::run_py(spec, &usage(spec))?,
    };
    files.insert(entry_of(spec).to_owned(), code);
    files.insert(
        crate::validate::cases::CASES_FILE.to_owned(),
        derived_cases(spec).to_json(),
    );
    files.insert(
        crate::package::manifest::FILE_NAME.to_owned(),
        manifest.to_yaml(),
    );
    files.insert("README.md".to_owned(), readme(spec));
    Ok(files)
}

/// A spec shared by the generator's tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::generate::spec::{Occurrence, ParamSpec};
    use crate::package::manifest::{Evidence, OutputKind};

    fn lit(s: &str) -> Vec<Piece> {
        vec![Piece::Literal(s.into())]
    }

    fn param(s: &str) -> Vec<Piece> {
        vec![Piece::Param(s.into())]
    }

    pub(crate) fn sequence_spec() -> ToolSpec {
        ToolSpec {
            shell: Default::default(),
            name: "cargo-check-package".into(),
            description: "Format, lint and test one package.".into(),
            origin: Origin::MinedSequence,
            pattern: Some("p-0123456789ab".into()),
            support: Some(4),
            params: vec![
                ParamSpec {
                    name: "package".into(),
                    kind: ParamKind::String,
                    description: "the package".into(),
                    required: true,
                    examples: vec!["core".into(), "cli".into()],
                    variadic: false,
                },
                ParamSpec {
                    name: "message".into(),
                    kind: ParamKind::Text,
                    description: "commit message".into(),
                    required: false,
                    examples: vec![],
                    variadic: false,
                },
            ],
            steps: vec![
                StepSpec {
                    line: Default::default(),
                    words: vec![lit("cargo"), lit("fmt"), lit("-p"), param("package")],
                    globs: Vec::new(),
                    captures: None,
                    piped: false,
                },
                StepSpec {
                    line: Default::default(),
                    words: vec![
                        lit("cargo"),
                        lit("clippy"),
                        vec![
                            Piece::Literal("--package=".into()),
                            Piece::Param("package".into()),
                        ],
                    ],
                    globs: Vec::new(),
                    captures: None,
                    piped: false,
                },
                StepSpec {
                    line: Default::default(),
                    words: vec![lit("git"), lit("commit"), lit("-m"), param("message")],
                    globs: Vec::new(),
                    captures: None,
                    piped: false,
                },
            ],
            trigger_step: None,
            trigger: None,
            output: OutputKind::Text,
            output_schema: None,
            language: Language::Sh,
            sandbox: ToolSpec::default_profile(None),
            requires: vec!["cargo".into(), "git".into()],
            occurrences: vec![Occurrence {
                lines: Default::default(),
                evidence: Evidence {
                    session: "s1".into(),
                    first_seq: 10,
                    last_seq: 12,
                },
                params: [
                    ("package".to_owned(), "core".to_owned()),
                    ("message".to_owned(), "fix: it's done".to_owned()),
                ]
                .into_iter()
                .collect(),
                commands: vec![
                    "cargo fmt -p core".into(),
                    "cargo clippy --package=core".into(),
                    r"git commit -m 'fix: it'\''s done'".into(),
                ],
                replay: None,
                // As the log recorded them: `git commit -m "fix: it's done"`.
                logged: vec![
                    vec!["cargo".into(), "fmt".into(), "-p".into(), "core".into()],
                    vec!["cargo".into(), "clippy".into(), "--package=core".into()],
                    vec![
                        "git".into(),
                        "commit".into(),
                        "-m".into(),
                        "fix: it's done".into(),
                    ],
                ],
                failure_output: None,
            }],
            request: None,
            examples: vec![],
            median_ms: None,
            keys: vec![],
            heal: None,
            regression_cases: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::sequence_spec;
    use super::*;

    /// Static analysis of generated code (it is read, never run): shellcheck finds no error,
    /// as validation requires. Skipped where shellcheck is not installed, except under CI.
    fn shellcheck_passes(code: &str) {
        let Ok(mut child) = std::process::Command::new("shellcheck")
            .args(["--severity=error", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
        else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "shellcheck is not installed (.ci/run installs it)"
            );
            eprintln!("shellcheck is not installed: generated code not checked");
            return;
        };
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write as _;
            stdin
                .write_all(code.as_bytes())
                .expect("shellcheck reads the code");
        }
        let out = child.wait_with_output().expect("shellcheck runs");
        assert!(
            out.status.success(),
            "{}\n{code}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    use crate::generate::spec::TriggerSpec;
    use crate::package::manifest::Manifest;

    fn lit(s: &str) -> Vec<Piece> {
        vec![Piece::Literal(s.into())]
    }

    #[test]
    fn the_generated_tool_has_a_valid_manifest_and_its_derived_tests() {
        let files = generate(&sequence_spec(), semver::Version::new(1, 0, 0)).expect("generate");
        let manifest = Manifest::parse(&files["tool.yaml"], "tool.yaml").expect("manifest");
        assert_eq!(manifest.provenance.generator, GENERATOR);
        assert_eq!(manifest.required_params(), ["package"]);
        let cases = Cases::parse(&files["tests/cases.json"], "cases")
            .expect("cases")
            .cases;
        assert_eq!(
            cases.len(),
            5,
            "one occurrence, help, a leading dash, missing required, unknown option"
        );
        // No value of --package began with `-`: one that does is refused, by the schema and
        // by the script itself.
        assert_eq!(
            manifest.interface.params["properties"]["package"]["not"],
            serde_json::json!({"pattern": "^-"})
        );
        assert_eq!(
            cases[2].params.as_ref().map(|p| p["package"].clone()),
            Some("--version".into())
        );
        assert_eq!(cases[2].expect.exit_code, Some(2));
        assert!(
            files["run.sh"].contains(
                "-*) ts_die \"--package must not begin with '-' (its command would take '$p_package' for an option)\" ;;"
            ),
            "{}",
            files["run.sh"]
        );
        assert_eq!(
            cases[0].expect.stdout.as_deref(),
            Some(
                "cargo fmt -p core\ncargo clippy --package=core\ngit commit -m 'fix: it'\\''s done'\n"
            )
        );
        assert_eq!(cases[1].expect.stdout_contains, ["--package", "--message"]);
        let sh = &files["run.sh"];
        assert!(sh.starts_with("#!/bin/sh\n"));
        assert!(sh.contains("set -eu"));
        assert!(
            sh.contains(r#"ts_run cargo clippy --package="${p_package}""#),
            "{sh}"
        );
        assert!(sh.contains("missing required option --package"));
    }

    #[test]
    fn a_leading_dash_is_allowed_only_where_the_log_had_one() {
        let mut spec = sequence_spec();
        assert!(spec.refuses_dash(&spec.params[0]));
        spec.occurrences[0]
            .params
            .insert("package".into(), "-core".into());
        assert!(!spec.refuses_dash(&spec.params[0]), "an occurrence had one");
        let schema = spec.params_schema();
        assert!(schema["properties"]["package"].get("not").is_none());
        let mut spec = sequence_spec();
        spec.params[0].variadic = true;
        spec.params[0].examples = vec!["a -b".into()];
        assert!(
            !spec.refuses_dash(&spec.params[0]),
            "an item of a variadic one"
        );
        spec.params[0].examples = vec!["a b".into()];
        spec.occurrences.clear();
        let schema = spec.params_schema();
        assert_eq!(
            schema["properties"]["package"]["items"]["not"],
            serde_json::json!({"pattern": "^-"})
        );
    }

    #[test]
    fn a_request_needs_a_model_unless_it_has_example_commands() {
        let mut spec = sequence_spec();
        spec.origin = Origin::Request;
        assert!(generate(&spec, semver::Version::new(1, 0, 0)).is_ok());
        spec.steps.clear();
        let err = generate(&spec, semver::Version::new(1, 0, 0)).expect_err("refused");
        assert!(err.to_string().contains("[llm]"), "{err}");
        assert!(err.to_string().contains("--example"), "{err}");
    }

    #[test]
    fn error_templates_become_regexes() {
        assert_eq!(
            template_regex("error[E0425]: cannot find value `<*>` in this scope"),
            r"error\[E0425\]:[[:space:]]+cannot[[:space:]]+find[[:space:]]+value[[:space:]]+`.*`[[:space:]]+in[[:space:]]+this[[:space:]]+scope"
        );
        let mut spec = sequence_spec();
        spec.origin = Origin::ErrorRecovery;
        spec.trigger_step = Some(StepSpec {
            line: Default::default(),
            words: vec![lit("cargo"), lit("build")],
            globs: Vec::new(),
            captures: None,
            piped: false,
        });
        spec.trigger = Some(TriggerSpec {
            error_template: "error: could not find `Cargo.toml` in <*>".into(),
            captures: BTreeMap::new(),
        });
        let sh = run_sh(&spec).expect("recovery");
        assert!(sh.contains("ts_trigger() {"), "{sh}");
        assert!(sh.contains("grep -Eq --"), "{sh}");
        spec.trigger = None;
        assert!(run_sh(&spec).is_err());
    }

    #[test]
    fn issue_20_a_literal_pattern_is_written_with_only_its_pattern_characters_unquoted() {
        assert_eq!(glob_code("*.c"), "*.c");
        assert_eq!(glob_code("**/*.h"), "**/*.h");
        assert_eq!(glob_code("src dir/x?.[ch]"), "'src dir/x'?.[ch]");
        assert_eq!(glob_code("log[!0-9]*"), "log[!0-9]*");
        // Not a bracket expression sh reads as written: quoted, so it matches itself.
        assert_eq!(glob_code("a[$x]*"), "'a[$x]'*");
        assert_eq!(glob_code("~/{a,b}*"), "'~/{a,b}'*");
    }

    #[test]
    fn issue_20_words_the_shell_expanded_are_written_for_the_tool_s_shell_to_expand() {
        let mut spec = sequence_spec();
        spec.params[1].variadic = true;
        spec.params[1].kind = ParamKind::Glob;
        spec.steps = vec![
            StepSpec {
                line: Default::default(),
                words: vec![
                    lit("grep"),
                    lit("-l"),
                    vec![Piece::Param("package".into())],
                    lit("src dir/*.h"),
                ],
                globs: vec![None, None, None, Some(Globbing::Sh)],
                captures: None,
                piped: false,
            },
            StepSpec {
                line: Default::default(),
                words: vec![
                    lit("wc"),
                    lit("-l"),
                    vec![Piece::Param("package".into())],
                    vec![Piece::Param("message".into())],
                ],
                globs: vec![None, None, Some(Globbing::Zsh), Some(Globbing::Zsh)],
                captures: None,
                piped: false,
            },
        ];
        // A zsh `**` may come with a parameter's value: POSIX sh cannot match it.
        let refused = run_sh(&spec).unwrap_err();
        assert!(refused.why.contains("must be bash"), "{refused}");
        spec.language = Language::Bash;
        let code = run_sh(&spec).unwrap();
        assert!(code.starts_with("#!/usr/bin/env bash\n"), "{code}");
        assert!(code.contains("set -eu\nshopt -s globstar\n"), "{code}");
        assert!(code.contains("\nIFS=\nif [ \"${TOOLSMITH_DRY_RUN:-}\" = 1 ]; then set -f; fi\n"));
        assert!(
            code.contains("ts_run grep -l \"${p_package}\" 'src dir/'*.h\n"),
            "{code}"
        );
        // zsh's refusal before the step, for the single value and each item of the variadic.
        assert!(
            code.contains(
                "ts_glob_zsh \"${p_package}\" ${p_package}\nfor ts_v do ts_glob_zsh \"$ts_v\" \
                 $ts_v; done\nts_run wc -l ${p_package} $@\n"
            ),
            "{code}"
        );
        assert!(
            code.contains("printf '%s: no matches found: %s\\n'"),
            "{code}"
        );
        assert!(!code.contains("ts_glob_fish"), "{code}");
        // Under sh's rules alone: POSIX sh, no refusal, no globstar.
        spec.steps[1].globs = vec![None, None, Some(Globbing::Sh), Some(Globbing::Sh)];
        spec.language = Language::Sh;
        let code = run_sh(&spec).unwrap();
        assert!(
            code.starts_with("#!/bin/sh\n") && !code.contains("shopt"),
            "{code}"
        );
        assert!(!code.contains("ts_glob_"), "{code}");
        assert!(code.contains("ts_run wc -l ${p_package} $@\n"), "{code}");
        shellcheck_passes(&code);
        // A tool without patterns is as it was: nothing unquoted, no IFS.
        let plain = run_sh(&sequence_spec()).unwrap();
        assert!(
            !plain.contains("IFS=") && !plain.contains("set -f"),
            "{plain}"
        );
    }
}
