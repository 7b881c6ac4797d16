//! The offline Python generator (`template/py@1`), for tools whose steps are a pure data
//! transformation: every step a text filter (`jq`, `sed`, `awk`, `grep`, `sort`, `uniq`, `cut`,
//! `tr`, `head`, `tail`, `wc`) reading its stdin or one file, writing only its stdout.
//!
//! The tool follows the calling convention of [`crate::invoke`] exactly as `template/sh@1`
//! does: `--name VALUE` options (an array repeats its option), `--help`, exit code 2 with a
//! message on a missing, bad or unknown parameter, and `TOOLSMITH_DRY_RUN=1` printing each
//! command, quoted as [`crate::quote::shell_quote`] quotes, instead of running it. Commands run
//! with argument lists (`subprocess`, never a shell; piped steps joined by real pipes), so no value is re-read as code. The
//! spec is embedded as data (JSON literals, which are Python literals too), never spliced
//! into code. Its tests are the ones `template::derived_cases` derives.
//!
//! A step with a pathname pattern the habit's shell expanded (`grep -l foo **/*.h`) is not
//! written here: the pattern stands for any number of files, found by that shell's rules (its
//! `**`, what it does when nothing matches, its order), which the sh template reproduces with a
//! shell of the same rules; this one reads one file at most.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::spec::{ParamKind, Piece, StepSpec, TemplateError, ToolSpec, is_snake_case};
use crate::invoke;
use crate::package::manifest::Language;

/// The generator's name, recorded in provenance.
pub const GENERATOR: &str = "template/py@1";

pub use crate::mine::token::TEXT_FILTERS;

/// Whether `step` is a pure text filter: a [`TEXT_FILTERS`] program, no value from an earlier
/// step, no redirection, at most one file (a parameter or a path-like literal), and none of
/// the options that write files (`sed -i`, `sort -o`).
pub fn is_text_filter(step: &StepSpec) -> bool {
    let Some(program) = step.program() else {
        return false;
    };
    if !TEXT_FILTERS.contains(&program) || step.captures.is_some() {
        return false;
    }
    // A pathname pattern the shell expanded (`grep -l foo **/*.h`) stands for any number of
    // files, found by the rules of the shell the habit ran in: the sh template reproduces that
    // expansion with a shell; this template reads one file at most.
    if step.globs.iter().any(Option::is_some) {
        return false;
    }
    let mut literal_args = Vec::new();
    let mut params = 0;
    for word in step.words.iter().skip(1) {
        if word.iter().any(|p| matches!(p, Piece::Internal(_))) {
            return false;
        }
        match word.as_slice() {
            [Piece::Literal(t)] => literal_args.push(t.as_str()),
            _ => params += 1,
        }
    }
    let writes = literal_args.iter().any(|t| {
        // A redirection kept as a word (`>`, `2>>`, `<`, `&>`); a program text such as jq's
        // `.[] | .a` or awk's `$1 > 5` is one word that does not start with one.
        let op = t.trim_start_matches(|c: char| c.is_ascii_digit());
        op.starts_with('>')
            || op.starts_with('<')
            || op.starts_with("&>")
            || (program == "sed" && (t.starts_with("-i") || t.starts_with("--in-place")))
            || (program == "sort" && (t.starts_with("-o") || t.starts_with("--output")))
            || (program == "awk" && t.starts_with("-i"))
    });
    // Only the file is a parameter: what varies between occurrences is what is read.
    !writes && params <= 1
}

/// Whether a tool with these steps is a data transformation the Python template writes: at
/// least one step, every one a text filter, nothing to recover from.
pub fn fits(steps: &[StepSpec], trigger: Option<&StepSpec>) -> bool {
    trigger.is_none() && !steps.is_empty() && steps.iter().all(is_text_filter)
}

/// The step's words as data: each word a list of `["l", text]` and `["p", name]` pieces.
fn step_data(step: &StepSpec) -> Value {
    Value::Array(
        step.words
            .iter()
            .map(|word| {
                Value::Array(
                    word.iter()
                        .map(|piece| match piece {
                            Piece::Literal(t) => json!(["l", t]),
                            Piece::Param(n) | Piece::Internal(n) => json!(["p", n]),
                        })
                        .collect(),
                )
            })
            .collect(),
    )
}

/// A JSON value as a Python literal: only strings, integers and lists are written, which both
/// languages spell alike.
fn literal(value: &Value) -> String {
    value.to_string()
}

/// The tool's `run.py`.
pub fn run_py(spec: &ToolSpec, usage: &str) -> Result<String, TemplateError> {
    let fail = |why: &str| TemplateError {
        tool: spec.name.clone(),
        why: why.to_owned(),
    };
    if spec.language != Language::Python {
        return Err(fail("template/py@1 writes Python tools only"));
    }
    if !fits(&spec.steps, spec.trigger_step.as_ref()) {
        return Err(fail(
            "template/py@1 writes pure text transformations only (every step a text filter: \
             jq, sed, awk, grep, sort, uniq, cut, tr, head, tail, wc)",
        ));
    }
    if spec.params.iter().filter(|p| p.variadic).count() > 1 {
        return Err(fail("it takes at most one variadic parameter"));
    }
    if spec.params.iter().any(|p| !is_snake_case(&p.name)) {
        return Err(fail("a parameter name is not snake_case"));
    }
    let params = Value::Array(
        spec.params
            .iter()
            .map(|p| {
                let kind = match p.kind {
                    ParamKind::Integer => "integer",
                    ParamKind::Sha => "sha",
                    ParamKind::Url => "url",
                    ParamKind::Boolean => "boolean",
                    ParamKind::Number => "number",
                    ParamKind::Path | ParamKind::Glob | ParamKind::String | ParamKind::Text => {
                        "text"
                    }
                };
                json!([
                    p.name,
                    invoke::option_name(&p.name),
                    kind,
                    i32::from(p.required),
                    i32::from(p.variadic),
                    i32::from(spec.refuses_dash(p))
                ])
            })
            .collect(),
    );
    let steps = Value::Array(spec.steps.iter().map(step_data).collect());
    let piped = Value::Array(
        spec.steps
            .iter()
            .map(|step| Value::from(i32::from(step.piped)))
            .collect(),
    );
    let description: String = spec
        .description
        .split(|c: char| c.is_control())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut s = String::new();
    let _ = writeln!(s, "#!/usr/bin/env python3");
    let _ = writeln!(
        s,
        "\"\"\"{}: {}\n\nWritten by toolsmith ({GENERATOR}){}.\n\"\"\"\n",
        spec.name,
        description.replace('\\', "/").replace("\"\"\"", "'''"),
        spec.pattern
            .as_deref()
            .map(|p| {
                // Only the id's plain characters: nothing can close the docstring.
                let id: String = p
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                format!(" from pattern {id}")
            })
            .unwrap_or_default()
    );
    s.push_str("import os\nimport subprocess\nimport sys\n\n");
    let _ = writeln!(s, "NAME = {}", literal(&Value::String(spec.name.clone())));
    let _ = writeln!(s, "USAGE = {}", literal(&Value::String(usage.to_owned())));
    let _ = writeln!(
        s,
        "# (name, option, kind, required, variadic, no value beginning with '-')\nPARAMS = {}",
        literal(&params)
    );
    let _ = writeln!(
        s,
        "# Each step's words; each word's pieces: [\"l\", text] or [\"p\", parameter].\nSTEPS = {}",
        literal(&steps)
    );
    let _ = writeln!(
        s,
        "# 1 where a step reads the previous step's output through a pipe.\nPIPED = {}",
        literal(&piped)
    );
    s.push_str(PY_BODY);
    Ok(s)
}

/// The code shared by every `template/py@1` tool; it reads only `NAME`, `USAGE`, `PARAMS`,
/// `STEPS` and `PIPED`.
const PY_BODY: &str = r#"SAFE = set(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,~-"
)
HEX = set("0123456789abcdefABCDEF")
DIGITS = set("0123456789")


def quote(word):
    """A word as a dry run prints it: as is when safe, else in single quotes."""
    if word and all(c in SAFE for c in word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def die(message):
    sys.stderr.write(NAME + ": " + message + "\n")
    sys.stderr.write("Try --help.\n")
    sys.exit(2)


def check(option, kind, value, no_dash):
    if kind == "integer" and (not value or not all(c in DIGITS for c in value)):
        die(option + " must be a whole number, got '" + value + "'")
    if kind == "sha" and (not value or not all(c in HEX for c in value)):
        die(option + " must be a commit id (hex), got '" + value + "'")
    if kind == "url" and "://" not in value:
        die(option + " must be a URL, got '" + value + "'")
    if kind == "text" and not value:
        die(option + " must not be empty")
    if no_dash and value.startswith("-"):
        die(option + " must not begin with '-' (its command would take '" + value
            + "' for an option)")


def parse(args):
    options = {}
    for name, option, kind, required, variadic, no_dash in PARAMS:
        options[option] = (name, kind, variadic)
    values = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--help", "-h"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        if arg == "--":
            if i + 1 < len(args):
                die("unexpected argument: " + args[i + 1])
            break
        option, eq, inline = arg.partition("=")
        if option not in options:
            die("unknown option: " + arg)
        name, kind, variadic = options[option]
        if kind == "boolean":
            if eq:
                die("unknown option: " + arg)
            values[name] = "1"
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        elif i + 1 < len(args):
            value = args[i + 1]
            i += 2
        else:
            die(option + " needs a value")
        if variadic:
            values.setdefault(name, []).append(value)
        else:
            values[name] = value
    for name, option, kind, required, variadic, no_dash in PARAMS:
        if name not in values:
            if required:
                die("missing required option " + option)
            continue
        for value in values[name] if variadic else [values[name]]:
            check(option, kind, value, no_dash)
    return values


def render(step, values):
    """The step's argument list for these values."""
    variadic = [p[0] for p in PARAMS if p[4]]
    argv = []
    for word in step:
        if len(word) == 1 and word[0][0] == "p" and word[0][1] in variadic:
            argv.extend(values.get(word[0][1], []))
            continue
        text = ""
        for kind, piece in word:
            if kind == "l":
                text += piece
            else:
                text += values.get(piece, "")
        argv.append(text)
    return argv


def status(code):
    return code if code >= 0 else 128 - code


def run_pipeline(argvs):
    """Runs commands joined by pipes; the status is the last one's, as in the shell."""
    sys.stdout.flush()
    procs = []
    upstream = None
    for i, argv in enumerate(argvs):
        last = i == len(argvs) - 1
        try:
            proc = subprocess.Popen(
                argv, stdin=upstream, stdout=None if last else subprocess.PIPE
            )
        except OSError as e:
            sys.stderr.write(NAME + ": cannot run " + argv[0] + ": " + str(e) + "\n")
            if upstream is not None:
                upstream.close()
            for started in procs:
                started.wait()
            return 127
        if upstream is not None:
            upstream.close()
        upstream = proc.stdout
        procs.append(proc)
    for proc in procs:
        proc.wait()
    return status(procs[-1].returncode)


def main():
    values = parse(sys.argv[1:])
    dry_run = os.environ.get("TOOLSMITH_DRY_RUN") == "1"
    pipelines = []
    for step, piped in zip(STEPS, PIPED):
        argv = render(step, values)
        if piped and pipelines:
            pipelines[-1].append(argv)
        else:
            pipelines.append([argv])
    for argvs in pipelines:
        if dry_run:
            for argv in argvs:
                sys.stdout.write(" ".join(quote(a) for a in argv) + "\n")
            continue
        code = run_pipeline(argvs)
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::template;

    fn lit(s: &str) -> Vec<Piece> {
        vec![Piece::Literal(s.into())]
    }

    fn step(words: Vec<Vec<Piece>>) -> StepSpec {
        StepSpec {
            line: Default::default(),
            words,
            globs: Vec::new(),
            captures: None,
            piped: false,
        }
    }

    #[test]
    fn only_pure_text_filters_fit() {
        let file = vec![Piece::Param("path".into())];
        let good = [
            step(vec![lit("jq"), lit(".name"), file.clone()]),
            step(vec![lit("/usr/bin/sort"), lit("-u")]),
            step(vec![lit("grep"), lit("-c"), lit("error")]),
            step(vec![lit("jq"), lit(".[] | .name")]),
            step(vec![lit("awk"), lit("$1 > 5 { print $2 }")]),
        ];
        assert!(good.iter().all(is_text_filter));
        assert!(fits(&good, None));
        let bad = [
            step(vec![lit("git"), lit("log")]),
            step(vec![lit("sed"), lit("-i"), lit("s/a/b/"), file.clone()]),
            step(vec![lit("sort"), lit("-o"), lit("out.txt")]),
            step(vec![lit("grep"), lit("x"), lit(">"), lit("out")]),
            step(vec![lit("grep"), lit("x"), lit("2>>"), lit("err")]),
            step(vec![lit("cut"), file.clone(), file.clone()]),
            step(vec![lit("wc"), vec![Piece::Internal("out_1".into())]]),
            StepSpec {
                line: Default::default(),
                words: vec![lit("wc"), lit("-l")],
                globs: Vec::new(),
                captures: Some("out_1".into()),
                piped: false,
            },
        ];
        for s in &bad {
            assert!(!is_text_filter(s), "{}", s.display());
        }
        assert!(!fits(&[], None));
        assert!(!fits(&good, Some(&good[0])));
    }

    #[test]
    fn the_spec_is_embedded_as_data_never_as_code() {
        let mut spec = template::tests_support::sequence_spec();
        // The shell template's spec is not a transformation: refused.
        assert!(run_py(&spec, "usage").is_err());
        spec.language = Language::Python;
        assert!(run_py(&spec, "usage").is_err());
        spec.trigger_step = None;
        spec.trigger = None;
        spec.steps = vec![step(vec![
            lit("sed"),
            lit("s/\"\"\"/x'\\n/"),
            vec![Piece::Param("package".into())],
        ])];
        spec.description = "Tricky \"\"\" text\nimport os".into();
        let code = run_py(&spec, "Usage: run.py\n\"\"\"\n").expect("python");
        assert!(
            code.contains(
                r#"STEPS = [[[["l","sed"]],[["l","s/\"\"\"/x'\\n/"]],[["p","package"]]]]"#
            ),
            "{code}"
        );
        assert!(
            code.contains(r#"USAGE = "Usage: run.py\n\"\"\"\n""#),
            "{code}"
        );
        assert!(code.contains("Tricky ''' text import os"), "{code}");
        // --package never began with `-` in the log; --message has no evidence either.
        assert!(
            code.contains(r#"PARAMS = [["package","--package","text",1,0,1],["message","--message","text",0,0,1]]"#),
            "{code}"
        );
        assert!(!code.contains("shell=True") && !code.contains("os.system"));
        let files = template::generate(&spec, semver::Version::new(1, 0, 0)).expect("files");
        assert!(files.contains_key("run.py"));
        assert!(files["README.md"].contains("template/py@1"));
        assert!(files["README.md"].contains("Usage: run.py"));
    }
}
