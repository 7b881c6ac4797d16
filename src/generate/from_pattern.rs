//! From an opportunity to a [`ToolSpec`]: a mined [`Pattern`] (`ToolSpec::from_pattern`) or a
//! person's request with example commands (`ToolSpec::from_request`).
//!
//! What is decided here, in small steps, each from what the miner already found:
//! - the **name**, kebab-case from the steps' program and sub-command words (`cargo build`,
//!   `cargo test` → `cargo-build-test`), or from the request's words, made unique against the
//!   names already taken;
//! - a one-line **description** (no `<` or `>`: agents read it as markup);
//! - the **parameters**, typed with [`ParamKind::from_mined`], all required (every occurrence
//!   had a value);
//! - the **steps** and, for a recovery, the failing command and its error's template;
//! - the **occurrences** the derived tests replay: their values, the steps rendered with them
//!   (for people and models), and for a request the examples as logged (a pattern's occurrences
//!   get theirs from the store: [`super::logged`]);
//! - the **sandbox profile**: limits from the median duration, the workspace read-only when
//!   every step only looks, writable otherwise;
//! - the host programs it **requires**;
//! - the **language**: Python when every step is a pure text filter
//!   ([`super::template_py::fits`]), POSIX sh otherwise.

use serde_json::json;

use super::logged::Recorded;
use super::spec::{
    Occurrence, ParamKind, ParamSpec, Piece, StepSpec, ToolSpec, TriggerSpec, needs_globstar,
};
use crate::action::placeholder::{PLACEHOLDER_START, placeholder_kinds, replace_placeholders};
use crate::action::{Action, Source};
use crate::mine::params::{AlignInput, align, piped_flags};
use crate::mine::pattern::{self, Pattern, PatternKind};
use crate::mine::token::{UNPARSED, tokens_of};
use crate::package::manifest::{Evidence, Language, Origin, OutputKind, valid_name};
use crate::quote::shell_quote;
use crate::sandbox::WorkspaceAccess;

/// Most example commands a request may give.
pub const MAX_EXAMPLES: usize = 20;

/// Longest request text accepted, in characters.
pub const MAX_REQUEST_CHARS: usize = 2000;

/// Why no spec could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The pattern cannot become a tool.
    #[error("pattern {id} cannot become a tool: {why}")]
    Pattern {
        /// The pattern.
        id: String,
        /// Why, and what to do.
        why: String,
    },
    /// The request cannot become a tool.
    #[error("the request cannot become a tool: {why}")]
    Request {
        /// Why, and what to do.
        why: String,
    },
}

/// Programs (with the sub-commands, where it matters) that only read: a tool made of these
/// alone gets the workspace read-only.
const READ_ONLY: &[&[&str]] = &[
    &["git", "status"],
    &["git", "log"],
    &["git", "diff"],
    &["git", "show"],
    &["git", "blame"],
    &["git", "rev-parse"],
    &["git", "ls-files"],
    &["git", "grep"],
    &["git", "describe"],
    &["git", "shortlog"],
    &["rg"],
    &["grep"],
    &["find"],
    &["ls"],
    &["cat"],
    &["wc"],
    &["head"],
    &["tail"],
    &["jq"],
    &["tree"],
    &["du"],
    &["stat"],
    &["file"],
    &["diff"],
    &["sort"],
    &["uniq"],
    &["cut"],
];

/// Words that say nothing about what a request's tool does.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "for", "and", "or", "in", "on", "at", "by", "with", "that",
    "which", "it", "its", "this", "these", "those", "my", "our", "me", "us", "all", "every",
    "each", "some", "any", "then", "when", "from", "into", "is", "are", "be", "should", "would",
    "could", "can", "please", "tool", "script", "i", "we", "want", "need", "make", "write",
];

/// A name made of `words`: lowercase letters, digits and single hyphens, at most 64 characters
/// (cut at a hyphen), starting with a letter. `None` when nothing usable is left.
pub fn kebab(words: &[String]) -> Option<String> {
    let joined = words.join("-").to_ascii_lowercase();
    let mut name = String::new();
    for c in joined.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    let mut name = name.trim_matches('-').to_owned();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "run-");
    }
    while name.len() > 64 {
        match name.rfind('-') {
            Some(at) => name.truncate(at),
            None => name.truncate(64),
        }
    }
    valid_name(&name).then_some(name)
}

/// `base`, or `base-2`, `base-3`, … : the first that `taken` does not claim.
pub fn unique_name(base: &str, taken: &dyn Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    let with_suffix = |suffix: String| {
        let mut cut = 64usize.saturating_sub(suffix.len()).min(base.len());
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}{suffix}", base[..cut].trim_end_matches('-'))
    };
    (2u32..10_000)
        .map(|n| with_suffix(format!("-{n}")))
        .find(|name| !taken(name))
        .unwrap_or_else(|| {
            // Ten thousand namesakes: a suffix from the clock rather than a longer search.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            with_suffix(format!("-{:x}", nanos & 0xffff_ffff))
        })
}

/// The words that say what a step does: its program and sub-commands, up to the first flag or
/// value (`python -m MODULE` keeps the module).
fn step_words(step: &StepSpec) -> Vec<String> {
    let mut words = Vec::new();
    let mut iter = step.words.iter().peekable();
    while let Some(word) = iter.next() {
        let [Piece::Literal(text)] = word.as_slice() else {
            break;
        };
        let text = if words.is_empty() {
            text.rsplit('/').next().unwrap_or(text)
        } else {
            text.as_str()
        };
        if text == "-m" && words.len() == 1 {
            if let Some([Piece::Literal(module)]) = iter.peek().map(|w| w.as_slice()) {
                words.push(module.clone());
                iter.next();
            }
            break;
        }
        let plain = text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !text.starts_with('-');
        if !plain || words.len() == 3 {
            break;
        }
        words.push(text.to_owned());
    }
    words
}

/// A name from the steps: each step's words, a program repeated from the step before dropped.
fn name_from_steps(steps: &[&StepSpec], suffix: Option<&str>) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    let mut previous_program: Option<String> = None;
    for step in steps {
        let mut these = step_words(step);
        let program = these.first().cloned();
        if program.is_some() && program == previous_program {
            these.remove(0);
        }
        previous_program = program;
        for w in these {
            if words.last() != Some(&w) && words.len() < 6 {
                words.push(w);
            }
        }
    }
    words.extend(suffix.map(str::to_owned));
    kebab(&words)
}

/// A name from a request's words, stop words left out.
fn name_from_request(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .take(4)
        .collect();
    kebab(&words)
}

/// Text fit for a manifest's description: one line, angle brackets as `‹ ›`, at most `max`
/// characters.
fn plain(text: &str, max: usize) -> String {
    let one: String = text
        .split(|c: char| c.is_control() || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .replace('<', "‹")
        .replace('>', "›");
    if one.chars().count() > max {
        let cut: String = one.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        one
    }
}

/// A step as a person reads it in a description: parameters in capitals.
fn step_text(step: &StepSpec) -> String {
    // A command line as typed, its parameters named (on one line: a description is one).
    if !step.line.is_empty() {
        let text: String = step
            .line
            .iter()
            .map(|p| match p {
                Piece::Literal(t) => t.clone(),
                Piece::Param(n) | Piece::Internal(n) => n.to_ascii_uppercase(),
            })
            .collect();
        return text.split('\n').collect::<Vec<_>>().join(" ⏎ ");
    }
    step.words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            // A pathname pattern the shell expanded, as it was typed.
            if let (Some(_), [Piece::Literal(t)]) = (step.glob(i), word.as_slice()) {
                return t.clone();
            }
            word.iter()
                .map(|p| match p {
                    Piece::Literal(t) => shell_quote(t),
                    Piece::Param(n) | Piece::Internal(n) => n.to_ascii_uppercase(),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn convert_piece(piece: &pattern::Piece) -> Piece {
    match piece {
        pattern::Piece::Literal(t) => Piece::Literal(t.clone()),
        pattern::Piece::Param(n) => Piece::Param(n.clone()),
        pattern::Piece::Internal(n) => Piece::Internal(n.clone()),
    }
}

fn convert_step(step: &pattern::Step) -> StepSpec {
    StepSpec {
        words: step
            .words
            .iter()
            .map(|w| w.iter().map(convert_piece).collect())
            .collect(),
        globs: step.globs.clone(),
        captures: step.captures.clone(),
        piped: step.piped,
        line: Vec::new(),
    }
}

/// Whether a step only reads, by [`READ_ONLY`].
fn reads_only(step: &StepSpec) -> bool {
    let words: Vec<&str> = step
        .words
        .iter()
        .map_while(|w| match w.as_slice() {
            [Piece::Literal(t)] => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let writes_a_file = step.words.iter().any(
        |w| matches!(w.as_slice(), [Piece::Literal(t)] if t.contains('>') && !t.starts_with('-')),
    );
    !writes_a_file
        && READ_ONLY.iter().any(|entry| {
            entry.len() <= words.len()
                && entry
                    .iter()
                    .zip(&words)
                    .all(|(want, got)| got.rsplit('/').next() == Some(want))
        })
}

/// The steps' canonical keys, in order; none when a step has none (a key missing would make
/// different tools look alike).
fn canonical_keys<'a>(steps: impl Iterator<Item = &'a pattern::Step>) -> Vec<String> {
    let keys: Vec<String> = steps.map(|s| s.key.clone()).collect();
    if keys.iter().any(String::is_empty) {
        Vec::new()
    } else {
        keys
    }
}

/// What both builders share: the mined parts of a spec.
struct Parts<'a> {
    origin: Origin,
    steps: Vec<StepSpec>,
    trigger_step: Option<StepSpec>,
    params: &'a [pattern::Param],
    evidence: &'a [pattern::Evidence],
    median_ms: Option<u64>,
    /// The shell a habit of command lines ran in.
    shell: crate::mine::line::Shell,
}

/// The parameters, with at most one variadic one, and only where it is a word of its own (the
/// template keeps its items in `"$@"`); any other is one value.
fn params_of(parts: &Parts<'_>) -> Vec<ParamSpec> {
    let mut variadic_taken = false;
    parts
        .params
        .iter()
        .map(|p| {
            let alone = parts
                .steps
                .iter()
                .chain(parts.trigger_step.as_ref())
                .flat_map(|s| &s.words)
                .all(|w| w.len() == 1 || !w.contains(&Piece::Param(p.name.clone())));
            let variadic = p.variadic && alone && !variadic_taken;
            variadic_taken |= variadic;
            let description = match p.named_from.strip_prefix("flag ") {
                Some(flag) => format!("the value given to {flag}"),
                None => plain(&p.named_from, 200),
            };
            if p.secret {
                // The log held it redacted: the tool asks for it, and nothing shows a value.
                let mut kinds: Vec<String> = p
                    .examples
                    .iter()
                    .flat_map(|e| placeholder_kinds(e))
                    .collect();
                kinds.dedup();
                return ParamSpec {
                    name: p.name.clone(),
                    kind: ParamKind::from_mined(&p.kind),
                    description: format!(
                        "{description}: a secret ({}) that the logs held redacted; give it when \
                         running the tool",
                        if kinds.is_empty() {
                            "redacted".to_owned()
                        } else {
                            kinds.join(", ")
                        }
                    ),
                    required: true,
                    examples: Vec::new(),
                    variadic,
                };
            }
            ParamSpec {
                name: p.name.clone(),
                kind: ParamKind::from_mined(&p.kind),
                description,
                required: true,
                examples: p.examples.iter().take(5).cloned().collect(),
                variadic,
            }
        })
        .collect()
}

/// The spec from the parts; `name` and `description` are the caller's.
fn build(parts: Parts<'_>, name: String, description: String) -> ToolSpec {
    let params = params_of(&parts);
    let lines = !parts.steps.is_empty() && parts.steps.iter().all(|s| !s.line.is_empty());
    let first_values = parts
        .evidence
        .first()
        .map(|e| e.params.clone())
        .unwrap_or_default();
    let mut requires: Vec<String> = if lines {
        super::lines::requires(&parts.steps, parts.shell, &first_values)
    } else {
        Vec::new()
    };
    for step in parts
        .trigger_step
        .iter()
        .chain(&parts.steps)
        .filter(|_| !lines)
    {
        // `./gradlew`, `bin/rails`: the project's own programs, found in the workspace when the
        // tool runs, not on the host (nor in a validation's scratch workspace).
        let in_project = matches!(
            step.words.first().map(Vec::as_slice),
            Some([Piece::Literal(word)]) if word.contains('/') && !word.starts_with('/')
        );
        if in_project {
            continue;
        }
        if let Some(program) = step.program()
            && !program.is_empty()
            && program.len() <= 64
            && program
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
            && !requires.iter().any(|r| r == program)
        {
            requires.push(program.to_owned());
        }
    }
    // A pure text transformation is written in Python, which needs its interpreter; a pattern
    // whose `**` the habit's shell matched at any depth, in bash.
    let language = if lines {
        Language::Bash
    } else if super::template_py::fits(&parts.steps, parts.trigger_step.as_ref()) {
        requires.push("python3".to_owned());
        Language::Python
    } else if needs_globstar(parts.trigger_step.iter().chain(&parts.steps)) {
        requires.push("bash".to_owned());
        Language::Bash
    } else {
        Language::Sh
    };
    let mut sandbox = ToolSpec::default_profile(parts.median_ms);
    if parts
        .steps
        .iter()
        .chain(parts.trigger_step.as_ref())
        .all(|s| reads_only(s) && !super::lines::writes_files(s))
    {
        sandbox.workspace = WorkspaceAccess::Read;
    }
    let mut spec = ToolSpec {
        name,
        description,
        origin: parts.origin,
        pattern: None,
        support: None,
        params,
        steps: parts.steps,
        trigger_step: parts.trigger_step,
        trigger: None,
        output: OutputKind::Text,
        output_schema: None,
        language,
        sandbox,
        requires,
        occurrences: Vec::new(),
        request: None,
        examples: Vec::new(),
        median_ms: parts.median_ms,
        keys: Vec::new(),
        shell: parts.shell,
        heal: None,
        regression_cases: Vec::new(),
    };
    // The steps rendered with each occurrence's values, for people and models; what the tests
    // expect is what the log recorded (`Occurrence::logged`, filled by `super::logged`). A
    // secret the log held redacted is given a stand-in (`example-<kind>`), never the
    // placeholder.
    spec.occurrences = parts
        .evidence
        .iter()
        .filter(|e| spec.params.iter().all(|p| e.params.contains_key(&p.name)))
        .map(|e| {
            let params: std::collections::BTreeMap<String, String> = e
                .params
                .iter()
                .map(|(k, v)| {
                    let v = replace_placeholders(v, |kind| format!("example-{kind}"))
                        .unwrap_or_else(|| v.clone());
                    (k.clone(), v)
                })
                .collect();
            Occurrence {
                evidence: Evidence {
                    session: e.session.clone(),
                    first_seq: e.first_seq,
                    last_seq: e.last_seq,
                },
                commands: spec.dry_run_lines(&params),
                params,
                replay: e.replay.clone().filter(|r| {
                    !r.stdin.contains(PLACEHOLDER_START) && !r.stdout.contains(PLACEHOLDER_START)
                }),
                logged: Vec::new(),
                // The lines as the log holds them, a redacted secret as its stand-in.
                lines: if lines {
                    e.commands
                        .iter()
                        .map(|l| {
                            replace_placeholders(l, |kind| format!("example-{kind}"))
                                .unwrap_or_else(|| l.clone())
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                failure_output: None,
            }
        })
        .collect();
    spec
}

/// The first step whose fixed words hold a value redacted at ingest: such a step cannot be run
/// without the secret, and its placeholder must never be replayed as an argument.
fn step_with_redacted_literal<'a>(steps: impl Iterator<Item = &'a StepSpec>) -> Option<String> {
    steps
        .filter(|s| {
            s.words
                .iter()
                .flatten()
                .any(|p| matches!(p, Piece::Literal(t) if t.contains(PLACEHOLDER_START)))
        })
        .map(StepSpec::display)
        .next()
}

impl ToolSpec {
    /// The spec of a tool doing what `pattern` shows, named so that `taken` does not claim the
    /// name (a new version of an existing tool passes that tool's name in with a `taken` that
    /// lets it through).
    pub fn from_pattern(
        pattern: &Pattern,
        taken: &dyn Fn(&str) -> bool,
    ) -> Result<ToolSpec, SpecError> {
        let fail = |why: &str| SpecError::Pattern {
            id: pattern.id.clone(),
            why: why.to_owned(),
        };
        if pattern.steps.is_empty() && pattern.trigger.is_none() {
            return Err(fail("it has no steps"));
        }
        for p in &pattern.params {
            let ok = !p.name.is_empty()
                && p.name.len() <= 64
                && p.name.as_bytes()[0].is_ascii_lowercase()
                && p.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !ok {
                return Err(fail(&format!(
                    "its parameter `{}` is not a snake_case name; mine again with this build",
                    p.name.escape_debug()
                )));
            }
        }
        let agent_step = pattern
            .steps
            .iter()
            .chain(pattern.trigger.as_ref().map(|t| &t.step))
            .find(|s| s.agent_tool);
        if let Some(step) = agent_step {
            return Err(fail(&format!(
                "its step `{}` is an agent's tool call, not a command a tool can run",
                step.template
            )));
        }
        if pattern.only_looks_around() {
            let steps = pattern.steps_text().join(" → ");
            return Err(fail(&format!(
                "its steps only look around (`{steps}`): the agent reading files and the \
                 machine's state, each command on its own, which no tool takes off its hands"
            )));
        }
        if pattern.only_shuffles_files() {
            let steps = pattern.steps_text().join(" → ");
            return Err(fail(&format!(
                "its steps only create, move or remove files and share no value (`{steps}`): \
                 common commands seen together, not one piece of work a tool could take over"
            )));
        }
        if let Some(step) = pattern.one_command_looked_around() {
            let steps = pattern.steps_text().join(" → ");
            return Err(fail(&format!(
                "its steps (`{steps}`) are one command, `{}`, and a fixed look around it \
                 (status, log, diff): a tool of it would be that command",
                step.template
            )));
        }
        if let Some(word) = pattern.unknown_program() {
            return Err(fail(&format!(
                "its command word `{word}` is no program on your PATH, no shell builtin and none \
                 of your shell's aliases or functions that toolsmith read: a short word typed \
                 through a definition it cannot see is never guessed; define it where your \
                 shell reads it (~/.zshrc, ~/.bashrc, fish's config) and mine again"
            )));
        }
        if let Some(step) = pattern.retried_step() {
            return Err(fail(&format!(
                "its step `{}` is run again at once for the same target (with flags added, \
                 with sudo, or through another program): a command that failed, tried again; \
                 a tool would stop at the failure or do the work twice",
                step.template
            )));
        }
        // A command line the shell parser could not read (an unbalanced quote, syntax it does
        // not know) is one opaque step: its words are not known, so no tool can run them.
        let unparsed_step = pattern
            .steps
            .iter()
            .chain(pattern.trigger.as_ref().map(|t| &t.step))
            .find(|s| s.key.ends_with(UNPARSED));
        if let Some(step) = unparsed_step {
            return Err(fail(&format!(
                "its step `{}` is a command line the shell parser could not read, so its words \
                 are not known; a tool is made only from commands that parse",
                step.key
            )));
        }
        // A habit of command lines is its lines, run as typed; the others (a recovery, values
        // passed between steps) are their commands.
        let steps: Vec<StepSpec> = if pattern.lines.is_empty() {
            pattern.steps.iter().map(convert_step).collect()
        } else {
            super::lines::line_steps(pattern)
        };
        let trigger_step = pattern.trigger.as_ref().map(|t| convert_step(&t.step));
        if let Some(step) = step_with_redacted_literal(trigger_step.iter().chain(&steps)) {
            return Err(fail(&format!(
                "its step `{step}` holds a secret redacted from the logs as a fixed word, which \
                 a tool would replay as is; mine again with this build to make it a parameter"
            )));
        }
        // A placeholder in an error's template stands for any value.
        let error_template = pattern.trigger.as_ref().map(|t| {
            replace_placeholders(&t.error_template, |_| "<*>".to_owned())
                .unwrap_or_else(|| t.error_template.clone())
        });
        let (origin, suffix) = match pattern.kind {
            PatternKind::Sequence => (Origin::MinedSequence, None),
            PatternKind::Recovery => (Origin::ErrorRecovery, Some("recover")),
            PatternKind::Slow => (Origin::SlowOperation, None),
        };
        if origin == Origin::ErrorRecovery && trigger_step.is_none() {
            return Err(fail("a recovery without its failing command"));
        }
        let named: Vec<&StepSpec> = trigger_step.iter().chain(&steps).collect();
        let base = name_from_steps(&named, suffix).unwrap_or_else(|| {
            format!(
                "tool-{}",
                pattern.id.trim_start_matches("p-").to_ascii_lowercase()
            )
        });
        let name = unique_name(&base, taken);
        let described: Vec<String> = steps
            .iter()
            .map(|s| format!("`{}`", step_text(s)))
            .collect();
        let description = match (&trigger_step, &error_template) {
            (Some(trigger), Some(t)) => format!(
                "Runs `{}`; when it fails with \u{201c}{}\u{201d}, recovers with {} and runs it \
                 again (seen in {} sessions).",
                step_text(trigger),
                t.replace("<*>", "…"),
                described.join(", then "),
                pattern.support
            ),
            _ if pattern.kind == PatternKind::Slow => format!(
                "Runs {}, which took {} each time (seen in {} sessions).",
                described.join(", then "),
                pattern
                    .median_ms
                    .map_or_else(|| "long".to_owned(), |ms| format!("about {} s", ms / 1000)),
                pattern.support
            ),
            _ => format!(
                "Runs {} (a sequence seen in {} sessions).",
                described.join(", then "),
                pattern.support
            ),
        };
        // What the user typed it as: the review shows each expansion and where it is defined.
        let description = if pattern.expansions.is_empty() {
            description
        } else {
            let typed: Vec<String> = pattern
                .expansions
                .iter()
                .map(|e| {
                    format!(
                        "`{}` is `{}` ({} at {})",
                        e.name, e.text, e.kind, e.defined_at
                    )
                })
                .collect();
            format!(
                "{description} Typed through the shell's {}.",
                typed.join("; ")
            )
        };
        let mut spec = build(
            Parts {
                origin,
                steps,
                trigger_step,
                params: &pattern.params,
                evidence: &pattern.evidence,
                median_ms: pattern.median_ms,
                shell: pattern.shell,
            },
            name,
            plain(&description, 1000),
        );
        spec.pattern = Some(pattern.id.clone());
        spec.support = Some(pattern.support);
        spec.keys = canonical_keys(
            pattern
                .trigger
                .iter()
                .map(|t| &t.step)
                .chain(&pattern.steps),
        );
        if pattern.trigger.is_some()
            && let Some(first) = spec.keys.first_mut()
        {
            first.insert_str(0, "on-failure:");
        }
        spec.trigger = error_template.map(|error_template| TriggerSpec {
            error_template,
            captures: Default::default(),
        });
        Ok(spec)
    }

    /// The spec of a tool a person asked for. With example commands, the steps come from them:
    /// examples of the same shape are occurrences of one command sequence (what varies between
    /// them becomes a parameter); examples of different shapes are its steps, in order. Without
    /// examples the spec has no steps, and only a language model can write it.
    pub fn from_request(
        request: &str,
        examples: &[String],
        taken: &dyn Fn(&str) -> bool,
    ) -> Result<ToolSpec, SpecError> {
        let fail = |why: String| SpecError::Request { why };
        let text = plain(request, MAX_REQUEST_CHARS);
        if text.trim().is_empty() {
            return Err(fail("say what the tool should do".into()));
        }
        if examples.len() > MAX_EXAMPLES {
            return Err(fail(format!(
                "{} examples given; at most {MAX_EXAMPLES}",
                examples.len()
            )));
        }
        let mut per_example = Vec::new();
        for (i, example) in examples.iter().enumerate() {
            let action = Action {
                session: "request".into(),
                seq: i as u64 + 1,
                ts: None,
                source: Source::Native,
                cwd: None,
                tool: "Bash".into(),
                input: json!({ "command": example }),
                call_id: None,
                parent_session: None,
                result: None,
            };
            let tokens = tokens_of(&action);
            if tokens.is_empty() {
                return Err(fail(format!(
                    "the example `{}` only looks around (or is empty); give the commands the \
                     tool should run",
                    plain(example, 80)
                )));
            }
            per_example.push(tokens);
        }
        let base = name_from_request(&text).unwrap_or_else(|| "requested-tool".to_owned());
        let name = unique_name(&base, taken);
        let description = plain(&text, 1000);
        let mut spec = if per_example.is_empty() {
            let mut spec = build(
                Parts {
                    origin: Origin::Request,
                    steps: Vec::new(),
                    trigger_step: None,
                    params: &[],
                    evidence: &[],
                    median_ms: None,
                    shell: Default::default(),
                },
                name,
                description,
            );
            spec.sandbox.workspace = WorkspaceAccess::Write;
            spec
        } else {
            let keys = |tokens: &[crate::mine::token::Token]| -> Vec<String> {
                tokens.iter().map(|t| t.key.clone()).collect()
            };
            let same_shape = per_example.len() > 1
                && per_example.iter().all(|t| keys(t) == keys(&per_example[0]));
            let inputs: Vec<AlignInput> = if same_shape {
                per_example
                    .iter()
                    .enumerate()
                    .map(|(i, tokens)| AlignInput {
                        session: "example".into(),
                        seqs: (i as u64 + 1, i as u64 + 1),
                        outputs: vec![None; tokens.len()],
                        piped: piped_flags(tokens),
                        tokens: tokens.clone(),
                        replay: None,
                        ok: true,
                    })
                    .collect()
            } else {
                let tokens: Vec<_> = per_example.into_iter().flatten().collect();
                vec![AlignInput {
                    session: "example".into(),
                    seqs: (1, examples.len() as u64),
                    outputs: vec![None; tokens.len()],
                    piped: piped_flags(&tokens),
                    tokens,
                    replay: None,
                    ok: true,
                }]
            };
            let aligned = align(&inputs, MAX_EXAMPLES).ok_or_else(|| {
                fail("the examples could not be read as commands; check their quoting".into())
            })?;
            let steps: Vec<StepSpec> = aligned.steps.iter().map(convert_step).collect();
            if let Some(step) = step_with_redacted_literal(steps.iter()) {
                return Err(fail(format!(
                    "the step `{step}` holds a redaction placeholder as a fixed word; give the \
                     commands with their real options"
                )));
            }
            let keys = canonical_keys(aligned.steps.iter());
            let mut spec = build(
                Parts {
                    origin: Origin::Request,
                    steps,
                    trigger_step: None,
                    params: &aligned.params,
                    evidence: &aligned.evidence,
                    median_ms: None,
                    shell: Default::default(),
                },
                name,
                description,
            );
            spec.keys = keys;
            // The examples are what was run: each occurrence's range names its examples.
            let recorded: Vec<Vec<Recorded>> = spec
                .occurrences
                .iter()
                .map(|o| {
                    (o.evidence.first_seq..=o.evidence.last_seq)
                        .filter_map(|seq| {
                            let line = examples.get(usize::try_from(seq).ok()?.checked_sub(1)?)?;
                            Some(Recorded::example(seq, line))
                        })
                        .collect()
                })
                .collect();
            super::logged::attach(&mut spec, &recorded);
            spec
        };
        spec.request = Some(text);
        spec.examples = examples.to_vec();
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mine::pattern::{Evidence as MinedEvidence, Param, Step, Trigger};
    use crate::mine::score::Score;

    fn lit(s: &str) -> Vec<pattern::Piece> {
        vec![pattern::Piece::Literal(s.into())]
    }

    fn param(s: &str) -> Vec<pattern::Piece> {
        vec![pattern::Piece::Param(s.into())]
    }

    fn step(words: Vec<Vec<pattern::Piece>>) -> Step {
        Step {
            template: String::new(),
            words,
            key: String::new(),
            globs: Vec::new(),
            captures: None,
            piped: false,
            agent_tool: false,
        }
    }

    fn evidence(session: &str, params: &[(&str, &str)]) -> MinedEvidence {
        MinedEvidence {
            agent: Default::default(),
            session: session.into(),
            first_seq: 1,
            last_seq: 2,
            params: params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            commands: Vec::new(),
            replay: None,
        }
    }

    fn sequence() -> Pattern {
        Pattern {
            lines: Default::default(),
            shell: Default::default(),
            id: "p-0a1b2c3d".into(),
            kind: PatternKind::Sequence,
            support: 5,
            occurrences: 5,
            score: 60.0,
            score_parts: Score {
                score: 60.0,
                frequency: 0.5,
                impact: 0.5,
                complexity: 0.5,
                confidence: 0.5,
                ..Score::default()
            },
            templates: Vec::new(),
            steps: vec![
                step(vec![
                    lit("cargo"),
                    lit("build"),
                    lit("-p"),
                    param("package"),
                ]),
                step(vec![lit("cargo"), lit("test"), lit("-p"), param("package")]),
                step(vec![lit("git"), lit("add"), param("path")]),
            ],
            params: vec![
                Param {
                    name: "package".into(),
                    kind: "string".into(),
                    named_from: "flag -p".into(),
                    examples: vec!["core".into(), "cli".into()],
                    variadic: false,
                    secret: false,
                },
                Param {
                    name: "path".into(),
                    kind: "path".into(),
                    named_from: "position 1 of `git add <path>...`".into(),
                    examples: vec!["a.rs b.rs".into()],
                    variadic: true,
                    secret: false,
                },
            ],
            internals: Vec::new(),
            workspace_varies: true,
            trigger: None,
            median_ms: Some(400_000),
            evidence: vec![
                evidence(
                    "s1",
                    &[("package", "core"), ("path", "src/a.rs src/b c.rs")],
                ),
                evidence("s2", &[("package", "cli"), ("path", "x.rs")]),
            ],
            folded_into: None,
            folded: Vec::new(),
            expansions: Vec::new(),
            unknown_programs: Vec::new(),
        }
    }

    #[test]
    fn a_sequence_becomes_a_spec() {
        let spec = ToolSpec::from_pattern(&sequence(), &|_| false).expect("spec");
        assert_eq!(spec.name, "cargo-build-test-git-add");
        assert_eq!(spec.origin, Origin::MinedSequence);
        assert_eq!(spec.pattern.as_deref(), Some("p-0a1b2c3d"));
        assert!(!spec.description.contains('<'), "{}", spec.description);
        assert!(
            spec.description
                .contains("`cargo build -p PACKAGE`, then `cargo test -p PACKAGE`"),
            "{}",
            spec.description
        );
        assert_eq!(spec.params[0].kind, ParamKind::String);
        assert_eq!(spec.params[0].description, "the value given to -p");
        assert!(spec.params[1].variadic && spec.params[1].required);
        assert_eq!(spec.requires, ["cargo", "git"]);
        assert_eq!(spec.sandbox.workspace, WorkspaceAccess::Write);
        assert_eq!(spec.sandbox.limits.wall_s, 1200);
        assert_eq!(
            spec.occurrences[0].commands,
            [
                "cargo build -p core",
                "cargo test -p core",
                "git add src/a.rs src/b c.rs"
            ]
        );
        let schema = spec.params_schema();
        assert_eq!(schema["properties"]["path"]["type"], "array");
        assert_eq!(schema["required"], json!(["package", "path"]));
        // Taken names get a suffix.
        let again = ToolSpec::from_pattern(&sequence(), &|n| n == "cargo-build-test-git-add")
            .expect("spec");
        assert_eq!(again.name, "cargo-build-test-git-add-2");
    }

    #[test]
    fn a_secret_the_logs_held_redacted_is_asked_for_never_replayed() {
        let mut p = sequence();
        p.steps = vec![
            step(vec![
                lit("aws"),
                lit("configure"),
                lit("set"),
                lit("aws_secret_access_key"),
                param("secret"),
            ]),
            step(vec![
                lit("mysql"),
                vec![
                    pattern::Piece::Literal("-p".into()),
                    pattern::Piece::Param("secret_2".into()),
                ],
                lit("shop"),
            ]),
        ];
        p.params = vec![
            Param {
                name: "secret".into(),
                kind: "string".into(),
                named_from: "position 4 of `aws configure set <string> <secret>`".into(),
                examples: vec!["[REDACTED:aws-secret-key]".into()],
                variadic: false,
                secret: true,
            },
            Param {
                name: "secret_2".into(),
                kind: "string".into(),
                named_from: "flag -p".into(),
                examples: vec!["[REDACTED:password-flag]".into()],
                variadic: false,
                secret: true,
            },
        ];
        p.evidence = vec![
            evidence(
                "s1",
                &[
                    ("secret", "[REDACTED:aws-secret-key]"),
                    ("secret_2", "[REDACTED:password-flag]"),
                ],
            ),
            evidence(
                "s2",
                &[
                    ("secret", "[REDACTED:aws-secret-key]"),
                    ("secret_2", "[REDACTED:password-flag]"),
                ],
            ),
        ];
        let spec = ToolSpec::from_pattern(&p, &|_| false).expect("spec");
        for param in &spec.params {
            assert!(param.required, "{param:?}");
            assert!(param.examples.is_empty(), "{param:?}");
            assert!(param.description.contains("a secret ("), "{param:?}");
        }
        assert!(spec.params[0].description.contains("aws-secret-key"));
        assert_eq!(
            spec.occurrences[0].commands,
            [
                "aws configure set aws_secret_access_key example-aws-secret-key",
                "mysql -pexample-password-flag shop",
            ]
        );
        let files = crate::generate::template::generate(&spec, semver::Version::new(1, 0, 0))
            .expect("files");
        let spec_json = serde_json::to_string(&spec).expect("json");
        assert!(!spec_json.contains(PLACEHOLDER_START), "{spec_json}");
        for (name, text) in &files {
            assert!(!text.contains(PLACEHOLDER_START), "{name}:\n{text}");
        }
        let run = &files["run.sh"];
        assert!(run.contains("--secret-2"), "{run}");

        // Mined by an older build, the placeholder is a fixed word: no tool replays it.
        p.steps[1] = step(vec![
            lit("mysql"),
            lit("-p[REDACTED:password-flag]"),
            lit("shop"),
        ]);
        let err = ToolSpec::from_pattern(&p, &|_| false).expect_err("refused");
        assert!(err.to_string().contains("mine again"), "{err}");

        // In a recovery's error, a placeholder stands for any value.
        let mut r = sequence();
        r.kind = PatternKind::Recovery;
        r.steps = vec![step(vec![lit("git"), lit("status")])];
        r.params.clear();
        r.trigger = Some(Trigger {
            step: step(vec![lit("git"), lit("push")]),
            error_template: "remote: invalid token [REDACTED:github-token] for <*>".into(),
        });
        r.evidence = vec![evidence("s1", &[])];
        let spec = ToolSpec::from_pattern(&r, &|_| false).expect("spec");
        assert_eq!(
            spec.trigger.map(|t| t.error_template).as_deref(),
            Some("remote: invalid token <*> for <*>")
        );
        assert!(!spec.description.contains(PLACEHOLDER_START));
    }

    #[test]
    fn a_habit_with_an_agents_tool_call_is_no_tool() {
        let mut p = sequence();
        p.steps[0] = Step {
            template: "Read <path>".into(),
            agent_tool: true,
            ..step(vec![lit("Read"), param("path")])
        };
        let err = ToolSpec::from_pattern(&p, &|_| false).expect_err("refused");
        assert!(
            err.to_string()
                .contains("`Read <path>` is an agent's tool call"),
            "{err}"
        );
    }

    #[test]
    fn steps_that_only_look_around_are_no_tool() {
        // The planted sessions' stray `wc -l GLOB` then `sed -n RANGE FILE`, seen together in
        // 4 sessions of 20: the agent reading.
        let mut p = sequence();
        p.steps = vec![
            Step {
                template: "wc -l <glob>".into(),
                key: "wc -l <arg>".into(),
                ..step(vec![lit("wc"), lit("-l"), param("glob")])
            },
            Step {
                template: "sed -n <value> <path>".into(),
                key: "sed -n <arg> <arg>".into(),
                ..step(vec![lit("sed"), lit("-n"), param("value"), param("path")])
            },
        ];
        let err = ToolSpec::from_pattern(&p, &|_| false).expect_err("refused");
        assert!(
            err.to_string()
                .contains("only look around (`wc -l <glob> → sed -n <value> <path>`)"),
            "{err}"
        );
        // A pipeline of them is a text filter, and a step that changes something is work.
        for (i, key, words) in [
            (1, "wc -l", vec![lit("wc"), lit("-l")]),
            (
                1,
                "sed -i <arg> <arg>",
                vec![lit("sed"), lit("-i"), param("value")],
            ),
            (
                0,
                "make -C <arg> test",
                vec![lit("make"), lit("-C"), param("dir")],
            ),
        ] {
            let mut q = p.clone();
            q.steps[i] = Step {
                key: key.into(),
                piped: key == "wc -l",
                ..step(words)
            };
            let made = ToolSpec::from_pattern(&q, &|_| false);
            assert!(
                made.as_ref()
                    .err()
                    .is_none_or(|e| !e.to_string().contains("only look around")),
                "{key}: {made:?}"
            );
        }
    }

    #[test]
    fn unrelated_file_shuffling_a_look_around_one_command_and_a_retry_are_no_tool() {
        let mut p = sequence();
        p.steps = vec![
            Step {
                template: "rm -rf <value>".into(),
                key: "rm -rf <arg>".into(),
                ..step(vec![lit("rm"), lit("-rf"), param("value")])
            },
            Step {
                template: "mkdir <value_2>".into(),
                key: "mkdir <arg>".into(),
                ..step(vec![lit("mkdir"), param("value_2")])
            },
        ];
        let err = ToolSpec::from_pattern(&p, &|_| false).expect_err("refused");
        assert!(
            err.to_string().contains(
                "only create, move or remove files and share no value (`rm -rf <value> → mkdir <value_2>`)"
            ),
            "{err}"
        );
        // The directory it removed, made again: one value through both, a piece of work.
        let mut shared = p.clone();
        shared.steps[1].words = vec![lit("mkdir"), param("value")];
        let made = ToolSpec::from_pattern(&shared, &|_| false);
        assert!(
            made.as_ref()
                .err()
                .is_none_or(|e| !e.to_string().contains("share no value")),
            "{made:?}"
        );
        let mut looked = sequence();
        looked.steps = vec![
            Step {
                template: "git status".into(),
                key: "git status".into(),
                ..step(vec![lit("git"), lit("status")])
            },
            Step {
                template: "git checkout <value>".into(),
                key: "git checkout <arg>".into(),
                ..step(vec![lit("git"), lit("checkout"), param("value")])
            },
        ];
        let err = ToolSpec::from_pattern(&looked, &|_| false).expect_err("refused");
        assert!(
            err.to_string().contains(
                "(`git status → git checkout <value>`) are one command, `git checkout <value>`, and a fixed look around it"
            ),
            "{err}"
        );
        let mut retry = sequence();
        retry.steps = vec![
            Step {
                template: "cp <path> <value>".into(),
                key: "cp <arg> <arg>".into(),
                ..step(vec![lit("cp"), param("path"), param("value")])
            },
            Step {
                template: "cp <path> <value> -r".into(),
                key: "cp <arg> <arg> -r".into(),
                ..step(vec![lit("cp"), param("path"), param("value"), lit("-r")])
            },
        ];
        let err = ToolSpec::from_pattern(&retry, &|_| false).expect_err("refused");
        assert!(
            err.to_string()
                .contains("`cp <path> <value>` is run again at once for the same target"),
            "{err}"
        );
    }

    #[test]
    fn a_command_line_that_does_not_parse_is_never_a_tool() {
        let mut p = sequence();
        p.steps[0] = Step {
            template: "git <unparsed>".into(),
            key: "git <unparsed>".into(),
            ..step(vec![lit("git"), param("unparsed")])
        };
        let err = ToolSpec::from_pattern(&p, &|_| false).expect_err("refused");
        assert!(
            err.to_string()
                .contains("`git <unparsed>` is a command line the shell parser could not read"),
            "{err}"
        );
    }

    #[test]
    fn a_recovery_runs_its_command_around_the_fix_and_reads_only_when_it_can() {
        let mut p = sequence();
        p.kind = PatternKind::Recovery;
        p.steps = vec![step(vec![lit("git"), lit("status")])];
        p.params.clear();
        p.trigger = Some(Trigger {
            step: step(vec![lit("python"), lit("-m"), lit("pytest"), lit("tests/")]),
            error_template: "E ModuleNotFoundError: No module named <*>".into(),
        });
        p.evidence = vec![evidence("s1", &[])];
        let spec = ToolSpec::from_pattern(&p, &|_| false).expect("spec");
        assert_eq!(spec.name, "python-pytest-git-status-recover");
        assert_eq!(spec.origin, Origin::ErrorRecovery);
        assert_eq!(
            spec.occurrences[0].commands,
            [
                "python -m pytest tests/",
                "git status",
                "python -m pytest tests/"
            ]
        );
        assert!(
            spec.description.contains("No module named …"),
            "{}",
            spec.description
        );
        assert_eq!(spec.sandbox.workspace, WorkspaceAccess::Write);
        p.trigger = None;
        p.kind = PatternKind::Sequence;
        assert_eq!(
            ToolSpec::from_pattern(&p, &|_| false)
                .expect("spec")
                .sandbox
                .workspace,
            WorkspaceAccess::Read
        );
    }

    #[test]
    fn requests_take_their_steps_from_examples() {
        let examples = vec![
            "cargo test -p core --lib".to_owned(),
            "cargo test -p cli --lib".to_owned(),
        ];
        let spec =
            ToolSpec::from_request("Run the library tests of one package", &examples, &|_| {
                false
            })
            .expect("spec");
        assert_eq!(spec.name, "run-library-tests-one");
        assert_eq!(spec.origin, Origin::Request);
        assert_eq!(spec.params.len(), 1, "{:?}", spec.params);
        assert_eq!(spec.occurrences.len(), 2);
        assert_eq!(spec.occurrences[1].commands, ["cargo test -p cli --lib"]);
        // Different shapes: one sequence, all literal.
        let spec = ToolSpec::from_request(
            "format then lint",
            &["cargo fmt".to_owned(), "cargo clippy".to_owned()],
            &|_| false,
        )
        .expect("spec");
        assert_eq!(spec.steps.len(), 2);
        assert!(spec.params.is_empty());
        // Without examples: no steps (a model must write it).
        let spec = ToolSpec::from_request("list my stale branches\nrm -rf ~", &[], &|_| false)
            .expect("spec");
        assert!(spec.steps.is_empty());
        assert!(!spec.description.contains('\n'));
        for (text, examples, expect) in [
            ("  ", vec![], "say what"),
            ("x", vec!["ls -la".to_owned()], "only looks around"),
        ] {
            let err = ToolSpec::from_request(text, &examples, &|_| false).expect_err(text);
            assert!(err.to_string().contains(expect), "{err}");
        }
    }

    #[test]
    fn specs_carry_the_canonical_keys_of_their_commands() {
        let mut p = sequence();
        // A step without a key: no keys at all, rather than a partial match.
        assert!(
            ToolSpec::from_pattern(&p, &|_| false)
                .expect("spec")
                .keys
                .is_empty()
        );
        for (i, s) in p.steps.iter_mut().enumerate() {
            s.key = format!("key-{i}");
        }
        let spec = ToolSpec::from_pattern(&p, &|_| false).expect("spec");
        assert_eq!(spec.keys, ["key-0", "key-1", "key-2"]);
        assert!(spec.same_keys(&spec.keys.clone()));
        assert!(!spec.same_keys(&["key-0".to_owned()]));
        // A request's examples give the keys the tokenizer gives the same commands; the values
        // do not matter.
        let one = ToolSpec::from_request(
            "build and test",
            &["make build -C core".into(), "make test -C core".into()],
            &|_| false,
        )
        .expect("spec");
        let other = ToolSpec::from_request(
            "something else",
            &["make build -C web".into(), "make test -C web".into()],
            &|_| false,
        )
        .expect("spec");
        assert_eq!(one.keys.len(), 2, "{:?}", one.keys);
        assert!(
            one.same_keys(&other.keys),
            "{:?} {:?}",
            one.keys,
            other.keys
        );
        let without = ToolSpec::from_request("list stale branches", &[], &|_| false).expect("spec");
        assert!(without.keys.is_empty() && !without.same_keys(&[]));
        // A recovery is not the sequence of its commands.
        p.kind = PatternKind::Recovery;
        p.trigger = Some(Trigger {
            step: Step {
                key: "key-t".into(),
                ..step(vec![lit("make"), lit("check")])
            },
            error_template: "E <*>".into(),
        });
        let recovery = ToolSpec::from_pattern(&p, &|_| false).expect("spec");
        assert_eq!(
            recovery.keys,
            ["on-failure:key-t", "key-0", "key-1", "key-2"]
        );
    }

    #[test]
    fn names_are_valid_whatever_the_words() {
        assert_eq!(
            kebab(&["Hello World!".into()]).as_deref(),
            Some("hello-world")
        );
        assert_eq!(kebab(&["2to3".into()]).as_deref(), Some("run-2to3"));
        assert_eq!(kebab(&["---".into()]), None);
        let long = kebab(&["word".repeat(30)]).expect("cut");
        assert!(long.len() <= 64);
        let base = "a".repeat(64);
        let name = unique_name(&base, &|n| n == base);
        assert!(valid_name(&name) && name.ends_with("-2"), "{name}");
        let name = unique_name("ab", &|n| n != "zz");
        assert!(valid_name(&name), "{name}");
    }
}
