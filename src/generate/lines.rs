//! Tools whose steps are command lines with holes ([`StepSpec::line`]): the habit's lines run
//! as the agent typed them, in the shell it typed them in, each parameter written into its
//! hole as a value.
//!
//! **Running.** Each line runs in a subshell of its own, `( set +eu; LINE )`, from where the
//! tool was started: the line's own semantics are the shell's (no `set -e` the log did not
//! have, unset variables as the shell reads them), and the tool stops at the first line that
//! fails, with its status. A hole is written for the quoting it sits in, so a value is never
//! read again as code: `"${p_x}"` in a bare word, `${p_x}` inside double quotes or an expanding
//! here-document, `'"${p_x}"'` inside single quotes. A here-document whose delimiter was quoted
//! (`<<'EOF'`, Claude Code's commit messages) and holds a hole is written with the delimiter
//! unquoted and its fixed text escaped (`\$`, `` \` ``, `\\`), which the shell reads back as the
//! same text. A bare hole whose values were pathname patterns is written unquoted (with `IFS`
//! empty in that line, so it is expanded, never split), as the shell expanded it. Lines of a
//! zsh history run in `zsh -fc` and those of fish in `fish -c`, the values passed in the
//! environment.
//!
//! **Dry run.** `TOOLSMITH_DRY_RUN=1` prints each line as typed, its holes filled with the
//! values quoted for their place (a value needing no quotes printed as is), one per line. The
//! derived tests compare that with the lines the log recorded ([`Expect::stdout_lines`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::spec::{Piece, StepSpec, ToolSpec};
use super::template::var;
use crate::action::placeholder::replace_placeholders;
use crate::mine::line::{self, Line, Quoting, Shell};
use crate::mine::pattern;
use crate::mine::shell;
use crate::quote::shell_quote;

/// Shell builtins and keywords a line may use that are no program of the host.
const BUILTINS: &[&str] = &[
    "cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias", "eval", "exec",
    "exit", "return", "shift", "read", "local", "declare", "typeset", "trap", "wait", "true",
    "false", ":", "test", "[", "[[", "echo", "printf", "pwd", "type", "command", "builtin", "let",
    "ulimit", "umask", "jobs", "fg", "bg", "hash", "shopt",
];

/// A pattern's lines as steps: each line's pieces, and words describing it (the first
/// occurrence's main command, for the name and the checks that read words).
pub fn line_steps(pattern: &pattern::Pattern) -> Vec<StepSpec> {
    // A secret the log held redacted describes the line as its stand-in.
    let values: BTreeMap<String, String> = pattern
        .evidence
        .first()
        .map(|e| {
            e.params
                .iter()
                .map(|(k, v)| {
                    let v = replace_placeholders(v, |kind| format!("example-{kind}"))
                        .unwrap_or_else(|| v.clone());
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default();
    pattern
        .lines
        .iter()
        .map(|pieces| {
            let line: Vec<Piece> = pieces
                .iter()
                .map(|p| match p {
                    pattern::Piece::Literal(t) => Piece::Literal(t.clone()),
                    pattern::Piece::Param(n) => Piece::Param(n.clone()),
                    pattern::Piece::Internal(n) => Piece::Internal(n.clone()),
                })
                .collect();
            let rendered = line::align::render(pieces, &values);
            let words = shell::parse(&rendered)
                .ok()
                .and_then(|commands| {
                    commands
                        .into_iter()
                        .find(|c| c.program().is_some_and(|p| !BUILTINS.contains(&p)))
                })
                .map(|c| {
                    c.words
                        .iter()
                        .map(|w| vec![Piece::Literal(w.text.clone())])
                        .collect()
                })
                .unwrap_or_default();
            StepSpec {
                words,
                globs: Vec::new(),
                captures: None,
                piped: false,
                line,
            }
        })
        .collect()
}

/// The host programs a line runs (the builtins and the project's own `./x` left out), in
/// order, each once.
pub fn programs(rendered: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Ok(commands) = shell::parse(rendered) else {
        return out;
    };
    for c in commands {
        let Some(word) = c.words.first() else {
            continue;
        };
        if word.expanded || (word.text.contains('/') && !word.text.starts_with('/')) {
            continue;
        }
        let name = word.text.rsplit('/').next().unwrap_or(&word.text);
        if BUILTINS.contains(&name)
            || name.is_empty()
            || name.len() > 64
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
            || out.iter().any(|p| p == name)
        {
            continue;
        }
        out.push(name.to_owned());
    }
    out
}

/// Whether a line may write a file (a redirection to one, other than a descriptor or
/// `/dev/null`), by its text: a tool of it then writes its workspace.
pub fn writes_files(step: &StepSpec) -> bool {
    step.line.iter().any(|p| match p {
        Piece::Literal(t) => t
            .replace("2>&1", "")
            .replace(">&2", "")
            .replace(">/dev/null", "")
            .replace("> /dev/null", "")
            .contains('>'),
        _ => false,
    })
}

/// A hole's bytes in a logged line, and its quoting.
type Placed = (usize, usize, Quoting);

/// Where each hole of a step sits: its quoting, found by parsing the line an occurrence
/// typed and locating the hole's bytes in it.
fn hole_quotings(
    step: &StepSpec,
    raw: &str,
    values: &BTreeMap<String, String>,
) -> Result<(Line, Vec<Placed>), String> {
    let parsed = line::parse(raw).map_err(|e| format!("the logged line `{raw}`: {e}"))?;
    let mut at = 0;
    let mut holes = Vec::new();
    for piece in &step.line {
        match piece {
            Piece::Literal(t) => at += t.len(),
            Piece::Param(n) | Piece::Internal(n) => {
                let len = values.get(n).map_or(0, String::len);
                let unit = parsed
                    .units
                    .iter()
                    .find(|u| u.range.start <= at && at + len <= u.range.end)
                    .and_then(|u| u.value)
                    .or_else(|| list_quoting(&parsed, at, at + len))
                    .ok_or_else(|| {
                        format!("the parameter <{n}> is not inside one value of `{raw}`")
                    })?;
                holes.push((at, at + len, unit));
                at += len;
            }
        }
    }
    Ok((parsed, holes))
}

/// The quoting of a list's hole (`brew upgrade wget jq`, a variadic parameter): bare values
/// one after another exactly spanning `start..end`; `None` for anything else.
fn list_quoting(parsed: &Line, start: usize, end: usize) -> Option<Quoting> {
    let within: Vec<&line::Unit> = parsed
        .units
        .iter()
        .filter(|u| u.range.start < end && u.range.end > start)
        .collect();
    let spans = within.first().is_some_and(|u| u.range.start == start)
        && within.last().is_some_and(|u| u.range.end == end);
    (within.len() > 1 && spans && within.iter().all(|u| u.value == Some(Quoting::Bare)))
        .then_some(Quoting::Bare)
}

/// The code of one line: the logged line with each hole written for its quoting.
fn line_code(
    spec: &ToolSpec,
    step: &StepSpec,
    raw: &str,
    values: &BTreeMap<String, String>,
) -> Result<String, String> {
    let rendered = spec
        .dry_run_lines(values)
        .into_iter()
        .find(|l| l == raw)
        .ok_or_else(|| format!("the step does not render back to the logged line `{raw}`"))?;
    let (parsed, holes) = hole_quotings(step, &rendered, values)?;
    let names: Vec<&str> = step
        .line
        .iter()
        .filter_map(|p| match p {
            Piece::Param(n) | Piece::Internal(n) => Some(n.as_str()),
            Piece::Literal(_) => None,
        })
        .collect();
    let globbed = |name: &str| {
        spec.params.iter().any(|p| {
            p.name == name
                && p.examples
                    .iter()
                    .chain(spec.occurrences.iter().filter_map(|o| o.params.get(name)))
                    .any(|v| v.contains(['*', '?', '[']))
        })
    };
    // Quoted here-documents holding a hole: their delimiter, and their body's bytes.
    let starts: Vec<usize> = (0..parsed.units.len())
        .filter(|&i| parsed.units[i].kind == "heredoc_start")
        .collect();
    let bodies: Vec<usize> = (0..parsed.units.len())
        .filter(|&i| parsed.units[i].kind == "heredoc_body")
        .collect();
    let mut reopened: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::new();
    for (k, &b) in bodies.iter().enumerate() {
        let body = &parsed.units[b];
        if body.value == Some(Quoting::HereDoc { expands: false })
            && holes
                .iter()
                .any(|(s, e, _)| *s >= body.range.start && *e <= body.range.end)
            && let Some(&start) = starts.get(k)
        {
            reopened.push((parsed.units[start].range.clone(), body.range.clone()));
        }
    }
    let mut code = String::new();
    let mut at = 0;
    let mut ifs_empty = false;
    let escape_body = |text: &str| {
        text.replace('\\', "\\\\")
            .replace('$', "\\$")
            .replace('`', "\\`")
    };
    let in_reopened = |pos: usize| reopened.iter().any(|(_, b)| b.contains(&pos));
    let push_fixed = |code: &mut String, from: usize, to: usize| {
        let mut pos = from;
        while pos < to {
            if let Some((d, _)) = reopened.iter().find(|(d, _)| d.start == pos) {
                code.push_str(&rendered[d.clone()].replace(['\'', '"', '\\'], ""));
                pos = d.end;
                continue;
            }
            let next = reopened
                .iter()
                .map(|(d, _)| d.start)
                .filter(|&s| s > pos && s < to)
                .min()
                .unwrap_or(to);
            let text = &rendered[pos..next];
            if in_reopened(pos) {
                code.push_str(&escape_body(text));
            } else {
                code.push_str(text);
            }
            pos = next;
        }
    };
    let variadic = |name: &str| spec.params.iter().any(|p| p.name == name && p.variadic);
    for ((start, end, quoting), name) in holes.iter().zip(&names) {
        push_fixed(&mut code, at, *start);
        let v = var(name);
        let written = match (spec.shell, quoting) {
            // A run of files: the option's items, which the option parsing left in "$@".
            (Shell::Fish, Quoting::Bare) if variadic(name) => {
                return Err(format!(
                    "the run of files <{name}> cannot be passed to fish"
                ));
            }
            (_, Quoting::Bare) if variadic(name) => "\"$@\"".to_owned(),
            // fish never splits a variable, and reads `"$x"` between two quoted parts as one
            // word with them.
            (Shell::Fish, Quoting::Bare) => format!("${v}"),
            (Shell::Fish, Quoting::Double) => format!("\"${v}\""),
            (Shell::Fish, Quoting::Single) => format!("'${v}'"),
            (Shell::Fish, _) => {
                return Err(format!(
                    "the parameter <{name}> sits where fish has no way to write a value"
                ));
            }
            (Shell::Zsh, Quoting::Bare) if globbed(name) => format!("${{~{v}}}"),
            (_, Quoting::Bare) if globbed(name) => {
                ifs_empty = true;
                format!("${{{v}}}")
            }
            (_, Quoting::Bare) => format!("\"${{{v}}}\""),
            (_, Quoting::Double | Quoting::HereDoc { .. }) => format!("${{{v}}}"),
            (_, Quoting::Single) => format!("'\"${{{v}}}\"'"),
            (_, Quoting::AnsiC) => format!("'\"${{{v}}}\"$'"),
        };
        code.push_str(&written);
        at = *end;
    }
    push_fixed(&mut code, at, rendered.len());
    if ifs_empty {
        code.insert_str(0, "IFS=\n");
    }
    Ok(code)
}

/// The shell function printing a value for a quoting, in a dry run.
fn printer(quoting: Quoting, globbed: bool) -> &'static str {
    match quoting {
        Quoting::Bare if globbed => "ts_raw",
        Quoting::Bare => "ts_quote",
        Quoting::Double | Quoting::HereDoc { expands: true } => "ts_dq",
        Quoting::Single => "ts_sq",
        Quoting::AnsiC => "ts_ansi",
        Quoting::HereDoc { expands: false } => "ts_raw",
    }
}

/// The body of a tool of command lines: after the option parsing `run_sh` writes, the
/// printers a dry run uses, then each line, printed or run.
pub fn write_body(spec: &ToolSpec, s: &mut String) -> Result<(), String> {
    let occurrence = spec
        .occurrences
        .iter()
        .find(|o| o.lines.len() == spec.steps.len())
        .ok_or("no occurrence holds the lines the log recorded")?;
    let values = &occurrence.params;
    s.push_str(
        r#"# A value as a dry run prints it in its place in the line.
ts_raw() { printf '%s' "$1"; }
ts_words() {
  ts_sep=
  for ts_w do printf '%s%s' "$ts_sep" "$(ts_quote "$ts_w")"; ts_sep=' '; done
}
ts_dq() {
  ts_v=$1
  ts_v=${ts_v//\\/\\\\}; ts_v=${ts_v//\"/\\\"}; ts_v=${ts_v//\$/\\\$}; ts_v=${ts_v//\`/\\\`}
  printf '%s' "$ts_v"
}
ts_sq() { printf '%s' "${1//\'/\'\\\'\'}"; }
ts_ansi() { ts_v=${1//\\/\\\\}; printf '%s' "${ts_v//\'/\\\'}"; }

"#,
    );
    let shell = spec.shell;
    for (i, (step, raw)) in spec.steps.iter().zip(&occurrence.lines).enumerate() {
        let code = line_code(spec, step, raw, values)?;
        let (_, holes) = hole_quotings(step, raw, values)?;
        let mut dry = String::new();
        let mut k = 0;
        for piece in &step.line {
            match piece {
                Piece::Literal(t) => dry.push_str(&always_quoted(t)),
                Piece::Param(n) | Piece::Internal(n) => {
                    let quoting = holes.get(k).map_or(Quoting::Bare, |h| h.2);
                    k += 1;
                    let globbed = spec.params.iter().any(|p| {
                        &p.name == n && p.examples.iter().any(|v| v.contains(['*', '?', '[']))
                    });
                    if spec.params.iter().any(|p| &p.name == n && p.variadic) {
                        dry.push_str("\"$(ts_words \"$@\")\"");
                    } else {
                        let _ = write!(
                            dry,
                            "\"$({} \"${{{}}}\")\"",
                            printer(quoting, globbed),
                            var(n)
                        );
                    }
                }
            }
        }
        let _ = writeln!(
            s,
            "# Line {} as logged: {}",
            i + 1,
            one_line(&step.display())
        );
        let run = match shell {
            Shell::Bash => format!("(\n  set +eu\n{code}\n)"),
            Shell::Zsh | Shell::Fish => {
                let exported: Vec<String> = step
                    .line
                    .iter()
                    .filter_map(|p| match p {
                        Piece::Param(n) => Some(var(n)),
                        _ => None,
                    })
                    .collect();
                let program = if shell == Shell::Zsh {
                    "zsh -fc"
                } else {
                    "fish -c"
                };
                let export = if exported.is_empty() {
                    String::new()
                } else {
                    format!("export {}; ", exported.join(" "))
                };
                format!(
                    "({export}{program} {} {} \"$@\")",
                    shell_quote(&code),
                    shell.as_str()
                )
            }
        };
        let _ = writeln!(
            s,
            "if [ \"${{TOOLSMITH_DRY_RUN:-}}\" = 1 ]; then\n  printf '%s\\n' {dry}\nelse\n  {run} || exit $?\nfi\n"
        );
    }
    Ok(())
}

/// Text single-quoted for a `printf` argument (an empty text as nothing).
fn always_quoted(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Text as one comment line.
fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_control())
        .filter(|p| !p.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ⏎ ")
}

/// The programs every step of `spec` needs, with the shell its lines run in.
pub fn requires(
    spec_steps: &[StepSpec],
    shell: Shell,
    values: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut out = vec![shell.as_str().to_owned()];
    if shell != Shell::Bash {
        out.push("bash".to_owned());
    }
    for step in spec_steps {
        for program in programs(&step.typed_line(values)) {
            if !out.contains(&program) {
                out.push(program);
            }
        }
    }
    out
}
