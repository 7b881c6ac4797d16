//! What the log recorded for each occurrence of a spec, which its derived dry-run tests expect
//! word for word — not what the miner made of it.
//!
//! For an occurrence (a session and a range of action seqs), the actions the log holds in that
//! range are parsed as the shell would ([`crate::mine::shell`]: quotes removed, `a && b` two
//! commands, a `cd DIR &&` prefix the working directory; `$(cat <<'EOF' … EOF)` is its body).
//! The spec's steps, rendered with the occurrence's values, are matched to those commands in
//! order by their program and the words they share — only to find *which* commands the
//! occurrence ran, never to say what they were: the expectation is then every command of the
//! actions a step matched, as logged. A step reordered, a word dropped or added, a command of
//! the same action left out (`git add X && git status` made `git status`), a step that matches
//! nothing: the dry run differs, and the tool fails its own tests.
//!
//! A recovery's failing command counts alone (the miner takes the failing command of its
//! action); its recorded output is what the dry run replays, and the recovery's values taken
//! from it are located in the error's template ([`choose_captures`]) so the tool extracts them
//! at run time. A value a later step takes from an earlier step's output cannot be known in a
//! dry run, which prints `<name>`: in the expectation, a word equal to the first line that
//! step's output recorded shows as `<name>` too.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::spec::{Piece, StepSpec, ToolSpec};
use crate::action::Source;
use crate::action::placeholder::replace_placeholders;
use crate::action::stored::StoredAction;
use crate::mine::shell::{self, Dialect, Word};

/// One action as the log recorded it, as far as the expectation needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Its seq in the session.
    pub seq: u64,
    /// Its command line, for a shell action.
    pub line: Option<String>,
    /// The shell the line is in.
    pub dialect: Dialect,
    /// Its recorded output, when known.
    pub output: Option<String>,
}

impl Recorded {
    /// The same, its line as its shell ran it through the user's definitions (`gia x` is
    /// `git add x`), as mining read it; as logged when none applies.
    pub fn through(
        mut self,
        definitions: &crate::mine::defs::ShellDefinitions,
        source: &str,
    ) -> Self {
        let expanded = Source::from_name(source)
            .and_then(|source| definitions.expand_line(source, self.line.as_deref()?));
        if let Some(expanded) = expanded {
            self.line = Some(expanded.line);
        }
        self
    }

    /// A stored action: its command line when it has one (`command`, or `cmd`, as text).
    pub fn from_stored(action: &StoredAction) -> Recorded {
        let line = action
            .input
            .get("command")
            .or_else(|| action.input.get("cmd"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Recorded {
            seq: action.seq,
            line,
            dialect: if Source::from_name(&action.source) == Some(Source::Fish) {
                Dialect::Fish
            } else {
                Dialect::Posix
            },
            output: action.output.clone(),
        }
    }

    /// A command line given as an example (seq is its 1-based position).
    pub fn example(seq: u64, line: &str) -> Recorded {
        Recorded {
            seq,
            line: Some(line.to_owned()),
            dialect: Dialect::Posix,
            output: None,
        }
    }
}

/// A word's value as the shell gives it, where it can be known: quotes removed, and a
/// `$(cat <<'EOF' … EOF)` replaced by the here-document's body without its trailing newlines
/// (what command substitution yields). Other expansions stay as written.
fn word_value(word: &Word) -> String {
    let mut text = word.text.clone();
    for sub in &word.substitutions {
        let written = format!("$({sub})");
        if !text.contains(&written) {
            continue;
        }
        let Ok(commands) = shell::parse(sub) else {
            continue;
        };
        let [cat] = commands.as_slice() else {
            continue;
        };
        let is_cat = cat.words.len() == 1 && cat.program() == Some("cat");
        let body = match cat.redirections.as_slice() {
            [r] if matches!(r.op, shell::RedirOp::HereDoc { .. }) => r.body.as_deref(),
            _ => None,
        };
        if let (true, Some(body)) = (is_cat, body) {
            text = text.replacen(&written, body.trim_end_matches('\n'), 1);
        }
    }
    text
}

/// The argv of each simple command of a line, as the shell would run it; `None` when the line
/// does not parse.
pub fn commands_of(line: &str, dialect: Dialect) -> Option<Vec<Vec<String>>> {
    Some(parsed(line, dialect)?.into_iter().map(|c| c.argv).collect())
}

/// A logged command, and whether it only writes out data into a pipe.
struct Command {
    argv: Vec<String>,
    /// `printf 'b\na\n' | sort`, `echo x | jq .`, `cat <<'EOF' | …`: the data a text filter
    /// reads, written out in the line — a tool's input (a replay case feeds it), not a step.
    feeds_pipe: bool,
}

fn parsed(line: &str, dialect: Dialect) -> Option<Vec<Command>> {
    let commands = shell::parse_dialect(line, dialect).ok()?;
    let mut reads_pipe = false;
    let mut out = Vec::new();
    for c in &commands {
        let from_pipe = reads_pipe;
        reads_pipe = c.connector == Some(shell::Connector::Pipe);
        if c.words.is_empty() {
            continue;
        }
        let writes_data = matches!(c.program(), Some("echo" | "printf"))
            || (c.program() == Some("cat") && c.words.len() == 1);
        out.push(Command {
            argv: c.words.iter().map(word_value).collect(),
            feeds_pipe: writes_data && reads_pipe && !from_pipe,
        });
    }
    Some(out)
}

/// A step's words for one occurrence's values: a variadic parameter spread into its items, a
/// value an earlier step prints as `<name>`.
fn step_words(spec: &ToolSpec, step: &StepSpec, params: &BTreeMap<String, String>) -> Vec<String> {
    let mut words = Vec::new();
    for word in &step.words {
        if let [Piece::Param(name)] = word.as_slice()
            && spec.params.iter().any(|p| &p.name == name && p.variadic)
        {
            words.extend(
                params
                    .get(name)
                    .map(String::as_str)
                    .unwrap_or("")
                    .split_whitespace()
                    .map(str::to_owned),
            );
            continue;
        }
        words.push(
            word.iter()
                .map(|piece| match piece {
                    Piece::Literal(t) => t.clone(),
                    Piece::Param(n) => params.get(n).cloned().unwrap_or_default(),
                    Piece::Internal(n) => format!("<{n}>"),
                })
                .collect(),
        );
    }
    words
}

/// The argv of each command a tool following `spec` runs for `params`, as its steps render
/// them (a recovery's failing command first and last): for a repair, whose evidence shows one
/// command, the others as the repaired tool runs them.
pub fn rendered_argv(spec: &ToolSpec, params: &BTreeMap<String, String>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = spec
        .trigger_step
        .iter()
        .chain(&spec.steps)
        .map(|s| step_words(spec, s, params))
        .collect();
    if let Some(trigger) = &spec.trigger_step {
        out.push(step_words(spec, trigger, params));
    }
    out
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// How well a step's words fit a logged command: nothing unless they run the same program
/// (the same last path component), else one more than the words they share, in any order.
fn fit(step: &[String], command: &[String]) -> u32 {
    let (Some(a), Some(b)) = (step.first(), command.first()) else {
        return 0;
    };
    if basename(a) != basename(b) {
        return 0;
    }
    let mut left: Vec<&String> = command.iter().collect();
    let mut shared = 0;
    for w in step {
        if let Some(i) = left.iter().position(|c| *c == w) {
            left.swap_remove(i);
            shared += 1;
        }
    }
    1 + shared
}

/// For each step, the command it ran (an index into `commands`), by the order-keeping
/// assignment that fits best; `None` for a step nothing fits.
fn assign(steps: &[Vec<String>], commands: &[Vec<String>]) -> Vec<Option<usize>> {
    let (n, m) = (steps.len(), commands.len());
    // best[i][j]: the best total fit of steps[i..] on commands[j..].
    let mut best = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let f = fit(&steps[i], &commands[j]);
            let take = if f > 0 { f + best[i + 1][j + 1] } else { 0 };
            best[i][j] = take.max(best[i + 1][j]).max(best[i][j + 1]);
        }
    }
    let mut out = vec![None; n];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        let f = fit(&steps[i], &commands[j]);
        if f > 0 && best[i][j] == f + best[i + 1][j + 1] {
            out[i] = Some(j);
            i += 1;
            j += 1;
        } else if best[i][j] == best[i][j + 1] {
            j += 1;
        } else {
            i += 1;
        }
    }
    out
}

/// What the log holds of one occurrence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Logged {
    /// The commands the dry run must print, each an argv.
    pub commands: Vec<Vec<String>>,
    /// For a recovery: the failing command's recorded output.
    pub failure_output: Option<String>,
}

/// What the log recorded for an occurrence of `spec` with `params`, from the actions in its
/// range; `None` when no action of the range is a command line that parses.
pub fn logged_occurrence(
    spec: &ToolSpec,
    params: &BTreeMap<String, String>,
    actions: &[Recorded],
) -> Option<Logged> {
    // Every command of the range, with the action it belongs to.
    let mut commands: Vec<Vec<String>> = Vec::new();
    let mut feeds: Vec<bool> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (a, action) in actions.iter().enumerate() {
        let Some(found) = action
            .line
            .as_deref()
            .and_then(|l| parsed(l, action.dialect))
        else {
            continue;
        };
        for c in found {
            commands.push(c.argv);
            feeds.push(c.feeds_pipe);
            owner.push(a);
        }
    }
    if commands.is_empty() {
        return None;
    }
    let steps: Vec<&StepSpec> = spec.trigger_step.iter().chain(&spec.steps).collect();
    let words: Vec<Vec<String>> = steps.iter().map(|s| step_words(spec, s, params)).collect();
    let matched = assign(&words, &commands);
    let recovery = spec.trigger_step.is_some();
    let mut logged = Logged::default();
    let mut first_step = 0;
    if recovery {
        first_step = 1;
        // The failing command alone: the tool runs it first and again after recovering.
        if let Some(c) = matched[0] {
            logged.commands.push(commands[c].clone());
            logged.failure_output = actions[owner[c]].output.clone();
        }
    }
    let step_actions: BTreeSet<usize> = matched[first_step..]
        .iter()
        .flatten()
        .map(|&c| owner[c])
        .collect();
    // Values printed by a step and used by a later one: (from command index, name, value).
    let mut printed: Vec<(usize, String, String)> = Vec::new();
    for (s, m) in steps.iter().zip(&matched).skip(first_step) {
        if let (Some(name), Some(c)) = (&s.captures, m)
            && let Some(value) = actions[owner[*c]]
                .output
                .as_deref()
                .and_then(|o| o.lines().map(str::trim).find(|l| !l.is_empty()))
        {
            printed.push((*c, name.clone(), value.to_owned()));
        }
    }
    let is_matched = |c: usize| matched.contains(&Some(c));
    for (c, argv) in commands.iter().enumerate() {
        if !step_actions.contains(&owner[c]) {
            continue;
        }
        // Data written out for the next command, which a step runs: the tool's input.
        if feeds[c] && !is_matched(c) && is_matched(c + 1) && owner.get(c + 1) == Some(&owner[c]) {
            continue;
        }
        let argv = argv
            .iter()
            .map(|w| {
                printed
                    .iter()
                    .find(|(from, _, value)| *from < c && value == w)
                    .map_or_else(|| w.clone(), |(_, name, _)| format!("<{name}>"))
            })
            .collect();
        logged.commands.push(argv);
    }
    if recovery && let Some(c) = matched[0] {
        logged.commands.push(commands[c].clone());
    }
    Some(logged)
}

/// Fills every occurrence's [`Occurrence::logged`](super::spec::Occurrence::logged) (and a
/// recovery's failure output) from the actions of its range, `per_occurrence[i]` for
/// `spec.occurrences[i]`; then locates the recovery's captured values in the error's template.
pub fn attach(spec: &mut ToolSpec, per_occurrence: &[Vec<Recorded>]) {
    let found: Vec<Option<Logged>> = spec
        .occurrences
        .iter()
        .zip(per_occurrence)
        .map(|(occ, actions)| logged_occurrence(spec, &occ.params, actions))
        .collect();
    for (occ, logged) in spec.occurrences.iter_mut().zip(found) {
        if let Some(logged) = logged {
            // A secret the log held redacted has the stand-in its parameter's value has.
            occ.logged = logged
                .commands
                .into_iter()
                .map(|argv| {
                    argv.into_iter()
                        .map(|w| {
                            replace_placeholders(&w, |kind| format!("example-{kind}")).unwrap_or(w)
                        })
                        .collect()
                })
                .collect();
            occ.failure_output = logged.failure_output;
        }
    }
    choose_captures(spec);
}

/// For a recovery whose failing command's output gives a value to the recovery steps
/// (`npm install <out_1>` after `Cannot find module 'left-pad'`): which `<*>` of the error's
/// template holds it — the one whose value, extracted from each occurrence's recorded output as
/// the tool will extract it, is a word of that occurrence's logged recovery commands in most
/// occurrences. A value found in none is left out: the generator then refuses the recovery.
pub fn choose_captures(spec: &mut ToolSpec) {
    let (Some(trigger_step), Some(trigger)) = (&spec.trigger_step, &mut spec.trigger) else {
        return;
    };
    let Some(name) = trigger_step.captures.clone() else {
        return;
    };
    let holes = trigger.error_template.matches("<*>").count();
    let mut best: Option<(usize, usize)> = None;
    for k in 0..holes {
        let Ok(re) = regex::Regex::new(&capture_regex(&trigger.error_template, k)) else {
            continue;
        };
        let hits = spec
            .occurrences
            .iter()
            .filter(|occ| {
                let (Some(output), Some(steps)) = (
                    occ.failure_output.as_deref(),
                    occ.logged.get(1..occ.logged.len().saturating_sub(1)),
                ) else {
                    return false;
                };
                let value = output
                    .lines()
                    .find_map(|l| re.captures(l).and_then(|c| c.get(1)))
                    .map(|m| m.as_str());
                value.is_some_and(|v| !v.is_empty() && steps.iter().flatten().any(|w| w == v))
            })
            .count();
        if hits > 0 && best.is_none_or(|(_, h)| hits > h) {
            best = Some((k, hits));
        }
    }
    trigger.captures.clear();
    if let Some((k, _)) = best {
        trigger.captures.insert(name, k);
    }
}

/// The template miner's wildcard.
const WILDCARD: &str = "<*>";

/// A whole word's value, without the quotes around it, if any.
const QUOTED_VALUE: &str = "['\"`]?([^[:space:]'\"`]+)['\"`]?";

/// Characters escaped in a template's fixed text to make it an extended regular expression.
const ERE_SPECIAL: &str = r"\.^$|?*+()[]{}";

/// An extended regular expression (POSIX ERE, also read by the `regex` crate) matching a line of
/// an error template, with the `k`-th `<*>` (0-based) as its only group: the value there, up to
/// the whitespace or the fixed character after it. Words are separated by any whitespace.
pub fn capture_regex(template: &str, k: usize) -> String {
    let mut parts = Vec::new();
    let mut hole = 0;
    for token in template.split_whitespace() {
        let mut part = String::new();
        let pieces: Vec<&str> = token.split("<*>").collect();
        for (i, fixed) in pieces.iter().enumerate() {
            if i > 0 {
                if hole == k && token == WILDCARD {
                    // A whole word: a value the template miner took with its quotes
                    // (`'left-pad'`, `'chalk'` → `<*>`) is the text inside them.
                    part.push_str(QUOTED_VALUE);
                } else if hole == k {
                    let stop = pieces[i]
                        .chars()
                        .next()
                        .filter(|c| !"]\\^-".contains(*c))
                        .map(String::from)
                        .unwrap_or_default();
                    part.push_str(&format!("([^[:space:]{stop}]+)"));
                } else {
                    part.push_str(".*");
                }
                hole += 1;
            }
            for c in fixed.chars() {
                if ERE_SPECIAL.contains(c) {
                    part.push('\\');
                }
                part.push(c);
            }
        }
        parts.push(part);
    }
    parts.join("[[:space:]]+")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::spec::{Occurrence, ParamKind, ParamSpec, TriggerSpec};
    use crate::package::manifest::{Evidence, Language, Origin, OutputKind};

    fn lit(s: &str) -> Vec<Piece> {
        vec![Piece::Literal(s.into())]
    }

    fn param(s: &str) -> Vec<Piece> {
        vec![Piece::Param(s.into())]
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

    fn spec(steps: Vec<StepSpec>, params: &[&str]) -> ToolSpec {
        ToolSpec {
            shell: Default::default(),
            name: "t".into(),
            description: "t".into(),
            origin: Origin::MinedSequence,
            pattern: None,
            support: None,
            params: params
                .iter()
                .map(|n| ParamSpec {
                    name: (*n).into(),
                    kind: ParamKind::String,
                    description: String::new(),
                    required: true,
                    examples: vec![],
                    variadic: false,
                })
                .collect(),
            steps,
            trigger_step: None,
            trigger: None,
            output: OutputKind::Text,
            output_schema: None,
            language: Language::Sh,
            sandbox: ToolSpec::default_profile(None),
            requires: vec![],
            occurrences: vec![],
            request: None,
            examples: vec![],
            median_ms: None,
            keys: vec![],
            heal: None,
            regression_cases: vec![],
        }
    }

    fn occurrence(params: &[(&str, &str)]) -> Occurrence {
        Occurrence {
            lines: Default::default(),
            evidence: Evidence {
                session: "s".into(),
                first_seq: 1,
                last_seq: 9,
            },
            params: params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            commands: vec![],
            replay: None,
            logged: vec![],
            failure_output: None,
        }
    }

    fn recorded(seq: u64, line: &str, output: &str) -> Recorded {
        Recorded {
            seq,
            line: Some(line.into()),
            dialect: Dialect::Posix,
            output: Some(output.into()),
        }
    }

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn the_expectation_is_the_log_whatever_the_steps_say() {
        // The miner moved the sub-command last; the log did not.
        let s = spec(
            vec![step(vec![
                lit("coverage"),
                lit("-m"),
                lit("-q"),
                lit("run"),
                lit("pytest"),
                param("path"),
            ])],
            &["path"],
        );
        let params = occurrence(&[("path", "tests/a.py")]).params;
        let actions = [
            recorded(1, "ls -la", ""),
            recorded(2, "coverage run -m pytest 'tests/a.py' -q", "ok"),
            recorded(3, "uname -a", ""),
        ];
        let logged = logged_occurrence(&s, &params, &actions).expect("logged");
        assert_eq!(
            logged.commands,
            [argv("coverage run -m pytest tests/a.py -q")]
        );
    }

    #[test]
    fn every_command_of_a_matched_action_is_expected_and_heredocs_are_their_body() {
        let s = spec(
            vec![step(vec![lit("git"), lit("commit"), lit("-m"), param("m")])],
            &["m"],
        );
        let params = occurrence(&[("m", "Fix it\n\nfor good")]).params;
        let line =
            "git add src/a.rs && git commit -m \"$(cat <<'EOF'\nFix it\n\nfor good\nEOF\n)\"";
        let logged = logged_occurrence(&s, &params, &[recorded(5, line, "")]).expect("logged");
        assert_eq!(
            logged.commands,
            vec![
                argv("git add src/a.rs"),
                vec![
                    "git".to_owned(),
                    "commit".into(),
                    "-m".into(),
                    "Fix it\n\nfor good".into()
                ],
            ]
        );
    }

    #[test]
    fn a_secret_the_log_held_redacted_gets_its_parameter_s_stand_in() {
        let mut s = spec(
            vec![step(vec![lit("make"), lit("deploy"), {
                vec![
                    Piece::Literal("TOKEN=".into()),
                    Piece::Param("token".into()),
                ]
            }])],
            &["token"],
        );
        s.occurrences = vec![occurrence(&[("token", "example-github-token")])];
        attach(
            &mut s,
            &[vec![recorded(
                1,
                "make deploy TOKEN=[REDACTED:github-token]",
                "",
            )]],
        );
        assert_eq!(
            s.occurrences[0].logged,
            [argv("make deploy TOKEN=example-github-token")]
        );
    }

    #[test]
    fn data_written_out_for_a_filter_is_its_input_not_a_command() {
        let mut uniq = step(vec![lit("uniq"), lit("-c")]);
        uniq.piped = true;
        let s = spec(vec![step(vec![lit("sort")]), uniq], &[]);
        let none = BTreeMap::new();
        for line in [
            "printf 'b\\na\\n' | sort | uniq -c",
            "echo one | sort | uniq -c",
        ] {
            let logged = logged_occurrence(&s, &none, &[recorded(1, line, "")]).expect(line);
            assert_eq!(logged.commands, [argv("sort"), argv("uniq -c")], "{line}");
        }
        // Anything else before the pipe is a command the tool must run too.
        let logged = logged_occurrence(&s, &none, &[recorded(1, "git log | sort | uniq -c", "")]);
        assert_eq!(
            logged.expect("logged").commands,
            [argv("git log"), argv("sort"), argv("uniq -c")]
        );
    }

    #[test]
    fn a_step_nothing_fits_adds_nothing_and_strays_are_left_out() {
        let s = spec(
            vec![
                step(vec![lit("git"), lit("checkout"), param("b")]),
                step(vec![lit("make"), lit("test")]),
            ],
            &["b"],
        );
        let params = occurrence(&[("b", "main")]).params;
        let actions = [
            recorded(1, "git status --short", ""),
            recorded(2, "git checkout main", ""),
            recorded(3, "grep -rn TODO src/", ""),
        ];
        let logged = logged_occurrence(&s, &params, &actions).expect("logged");
        // `git status` fits `git checkout` worse than `git checkout main` does.
        assert_eq!(logged.commands, [argv("git checkout main")]);
        assert_eq!(
            logged_occurrence(&s, &params, &[recorded(1, "echo 'unbalanced", "")]),
            None
        );
    }

    #[test]
    fn a_value_printed_by_an_earlier_step_shows_as_its_name() {
        let mut first = step(vec![lit("git"), lit("rev-parse"), lit("HEAD")]);
        first.captures = Some("out_1".into());
        let second = step(vec![
            lit("git"),
            lit("show"),
            vec![Piece::Internal("out_1".into())],
        ]);
        let s = spec(vec![first, second], &[]);
        let actions = [
            recorded(1, "git rev-parse HEAD", "abc123\n"),
            recorded(2, "git show abc123", "commit abc123"),
        ];
        let logged = logged_occurrence(&s, &BTreeMap::new(), &actions).expect("logged");
        assert_eq!(
            logged.commands,
            [argv("git rev-parse HEAD"), argv("git show <out_1>")]
        );
    }

    const FAILURE: &str = "Exit code 1\n\n> ui@0.4.0 test\n> jest\n\n FAIL  src/app.test.js\n  ● Test suite failed to run\n\n    Cannot find module 'left-pad' from 'src/app.js'\n";

    #[test]
    fn a_recovery_replays_its_failure_and_finds_what_the_fix_takes_from_it() {
        let mut trigger = step(vec![lit("npm"), lit("test")]);
        trigger.captures = Some("out_1".into());
        let mut s = spec(
            vec![step(vec![
                lit("npm"),
                lit("install"),
                vec![Piece::Internal("out_1".into())],
            ])],
            &[],
        );
        s.origin = Origin::ErrorRecovery;
        s.trigger_step = Some(trigger);
        s.trigger = Some(TriggerSpec {
            error_template: "Cannot find module '<*>' from '<*>'".into(),
            captures: BTreeMap::new(),
        });
        s.occurrences = vec![occurrence(&[]), occurrence(&[])];
        let other = FAILURE.replace("left-pad", "@scope/x");
        attach(
            &mut s,
            &[
                vec![
                    recorded(1, "cd ui && npm test", FAILURE),
                    recorded(2, "npm install left-pad", "added 1 package"),
                ],
                vec![
                    recorded(7, "npm test", &other),
                    recorded(8, "npm install @scope/x", "added 1 package"),
                ],
            ],
        );
        assert_eq!(
            s.occurrences[0].logged,
            [
                argv("npm test"),
                argv("npm install left-pad"),
                argv("npm test")
            ]
        );
        assert_eq!(s.occurrences[1].failure_output.as_deref(), Some(&*other));
        let trigger = s.trigger.as_ref().expect("trigger");
        assert_eq!(trigger.captures.get("out_1"), Some(&0), "the module's name");
        let re = regex::Regex::new(&capture_regex(&trigger.error_template, 1)).expect("re");
        let from = FAILURE.lines().find_map(|l| re.captures(l)).expect("match");
        assert_eq!(&from[1], "src/app.js");
    }

    #[test]
    fn capture_regexes_stop_at_the_fixed_text_after_the_value() {
        assert_eq!(
            capture_regex("Cannot find module '<*>' (<*>)", 0),
            r"Cannot[[:space:]]+find[[:space:]]+module[[:space:]]+'([^[:space:]']+)'[[:space:]]+\(.*\)"
        );
        assert_eq!(
            capture_regex("No module named x<*>", 0),
            r"No[[:space:]]+module[[:space:]]+named[[:space:]]+x([^[:space:]]+)"
        );
        // A whole word's value is read inside its quotes, if it has any.
        let re =
            regex::Regex::new(&capture_regex("Cannot find module <*> from <*>", 0)).expect("regex");
        for (line, value) in [
            (
                "Cannot find module 'left-pad' from 'src/app.js'",
                "left-pad",
            ),
            ("  Cannot find module \"@scope/x\" from x", "@scope/x"),
            ("Cannot find module chalk from x", "chalk"),
        ] {
            assert_eq!(&re.captures(line).expect(line)[1], value);
        }
    }
}
