//! Parameter inference: the occurrences of a pattern are aligned step by step and slot by slot.
//! A slot whose value never changes is a literal; one that varies is a parameter, typed from its
//! values and named from its flag, its position or its values; a slot whose value an earlier
//! step printed, in every occurrence, is an internal variable; two slots that always hold the
//! same value are one parameter. A working directory that varies makes the tool work on its
//! workspace.
//!
//! The steps' words come from one occurrence's token templates (`cargo test -p <package>`), in
//! the order the agent wrote them: each `<name>` placeholder takes the next slot of the token, a
//! variadic `<name>...` takes the run of positional files it stands for (one or several: a
//! variadic parameter only where some occurrence had several). The occurrence is the one with
//! the most values among those of the first one's keys, so that one file and several never
//! split a habit. A value's kind never decides whether an occurrence fits: a parameter's type
//! is the join of its values' kinds.

use std::collections::{BTreeMap, HashMap};

use super::pattern::{Evidence, Internal, Param, Piece, Replay, Step};
use super::token::{Globbing, SlotKind, SlotValue, Token, TokenKind, joins_run, names_a_file};
use crate::action::placeholder::PLACEHOLDER_START;
use crate::quote::shell_quote;

/// One occurrence of a pattern, as the aligner needs it.
#[derive(Debug, Clone)]
pub struct AlignInput {
    /// The session.
    pub session: String,
    /// The first and last action's seq.
    pub seqs: (u64, u64),
    /// One token per step.
    pub tokens: Vec<Token>,
    /// Per step, the output of the action it belongs to, when known.
    pub outputs: Vec<Option<String>>,
    /// Per step, whether it read the previous step's output through a pipe.
    pub piped: Vec<bool>,
    /// When the occurrence was one whole pipeline of text filters fed data written out in the
    /// line: that data and the action's output.
    pub replay: Option<Replay>,
    /// Whether every action of the occurrence succeeded.
    pub ok: bool,
}

/// Per token of one command line (or of several lines, one after another), whether it reads
/// the previous token's output through a pipe.
pub fn piped_flags(tokens: &[Token]) -> Vec<bool> {
    (0..tokens.len())
        .map(|i| i > 0 && tokens[i].pipe_from == Some(tokens[i - 1].step))
        .collect()
}

/// A template word cut into literal text and placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Slot { name: String, variadic: bool },
}

fn segments(word: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = word;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            // Not a placeholder (`<<EOF`, `<` redirection): literal text.
            out.push(Segment::Text(rest[..=open].to_owned()));
            rest = &rest[open + 1..];
            continue;
        }
        if open > 0 {
            out.push(Segment::Text(rest[..open].to_owned()));
        }
        let after = &rest[close + 1..];
        let variadic = after.starts_with("...");
        out.push(Segment::Slot {
            name: name.to_owned(),
            variadic,
        });
        rest = if variadic { &after[3..] } else { after };
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest.to_owned()));
    }
    // Merge adjacent text pieces (left by skipped `<`).
    let mut merged: Vec<Segment> = Vec::new();
    for seg in out {
        match (merged.last_mut(), seg) {
            (Some(Segment::Text(prev)), Segment::Text(t)) => prev.push_str(&t),
            (_, seg) => merged.push(seg),
        }
    }
    merged
}

/// One placeholder's value in one occurrence: the value (a run joined with spaces), the kind of
/// its first slot, the run, and how the shell expanded each item of the run as a pathname
/// pattern (`None`: it reached the program as written).
type Placeholder = (String, SlotKind, Vec<String>, Vec<Option<Globbing>>);

/// The values of one token's placeholders, in template order: one per placeholder (a variadic
/// one joins its run with spaces). `None` when the slots do not fit the template.
fn placeholder_values(template: &[Vec<Segment>], slots: &[SlotValue]) -> Option<Vec<Placeholder>> {
    let mut values = Vec::new();
    let mut next = 0;
    for word in template {
        for seg in word {
            let Segment::Slot { variadic, .. } = seg else {
                continue;
            };
            let first = slots.get(next)?;
            let mut run = vec![first.value.clone()];
            let mut globs = vec![first.glob];
            next += 1;
            if *variadic {
                // The run the tokenizer wrote once: positional paths and globs, never a value
                // redacted at ingest.
                while let Some(s) = slots.get(next) {
                    if s.flag.is_some() || !joins_run(s.kind) || s.value.contains(PLACEHOLDER_START)
                    {
                        break;
                    }
                    run.push(s.value.clone());
                    globs.push(s.glob);
                    next += 1;
                }
            }
            values.push((run.join(" "), first.kind, run, globs));
        }
    }
    (next == slots.len()).then_some(values)
}

/// What alignment found.
#[derive(Debug, Clone, PartialEq)]
pub struct Aligned {
    /// The steps, with literals, parameters and internal variables.
    pub steps: Vec<Step>,
    /// The parameters.
    pub params: Vec<Param>,
    /// Values passed between steps.
    pub internals: Vec<Internal>,
    /// The occurrences that fit, with their values and commands.
    pub evidence: Vec<Evidence>,
    /// Share of the word slots that are literal or typed parameters (see [`super::score`]).
    pub consistency: f64,
    /// Share of the aligned occurrences whose actions all succeeded.
    pub success_rate: f64,
    /// Whether the working directory differed between occurrences.
    pub workspace_varies: bool,
    /// The habit as the lines the agent ran, with holes ([`super::line::attach`]); empty until
    /// then, and when they do not align.
    pub lines: Vec<Vec<Piece>>,
    /// The shell the lines ran in.
    pub shell: super::line::Shell,
}

/// A name fit for a parameter: snake_case ASCII, starting with a letter.
pub(super) fn param_name(raw: &str) -> String {
    let mut name: String = raw
        .trim_start_matches('-')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    while name.contains("__") {
        name = name.replace("__", "_");
    }
    let name = name.trim_matches('_').to_owned();
    match name.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => name,
        Some(_) => format!("arg_{name}"),
        None => "arg".to_owned(),
    }
}

/// The kind of a parameter from its values' slot kinds and the values themselves.
pub(super) fn param_kind(kinds: &[SlotKind], values: &[String]) -> &'static str {
    if values.iter().any(|v| v.contains(char::is_whitespace)) {
        return "text";
    }
    let first = kinds.first().copied().unwrap_or(SlotKind::String);
    if !kinds.iter().all(|k| *k == first) {
        // Files (`perl_1.pl`, `Gemfile`) with other bare names (`cpanfile`, `2nd`) or paths
        // are files: a name without an extension is a file too. Branches (`main`,
        // `feature/login`: a slash, no file name) stay strings.
        let files = values.iter().any(|v| names_a_file(v))
            && kinds
                .iter()
                .zip(values)
                .all(|(k, v)| *k == SlotKind::Path || (*k == SlotKind::String && bare_name(v)));
        return if files { "path" } else { "string" };
    }
    match first {
        SlotKind::Path => "path",
        SlotKind::Number if values.iter().all(|v| v.parse::<i64>().is_ok()) => "number",
        SlotKind::Number => "string",
        SlotKind::Hex => "sha",
        SlotKind::Url => "url",
        SlotKind::Glob => "glob",
        SlotKind::String => "string",
    }
}

/// A word that can name a file or directory as it stands: letters, digits and `. _ - + @`,
/// not starting with `-`.
fn bare_name(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('-')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '@'))
}

/// Whether `value` appears in `output` as a whole word or line (not inside a longer word).
fn printed(output: &str, value: &str) -> bool {
    if value.len() < 3 {
        return false;
    }
    output.match_indices(value).any(|(at, _)| {
        let before = output[..at].chars().next_back();
        let after = output[at + value.len()..].chars().next();
        let boundary =
            |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || "\"'`,;:()[]{}<>=".contains(c));
        boundary(before) && boundary(after)
    })
}

/// One occurrence's placeholder values: per step, per placeholder.
type OccurrenceValues = Vec<Vec<Placeholder>>;

/// How a word made of one placeholder's values is expanded, given each occurrence's value and
/// mark: by the shell whose rules every occurrence holding a pattern character was expanded
/// under, when each such occurrence was (a value without `*`, `?` or `[` expands to itself, so
/// it agrees with any). A word quoted in one occurrence and not in another, or expanded by
/// shells of different rules, stays literal: the tool can only do one thing, and passing the
/// word as written is what it did before it knew of patterns. `None` when nothing was expanded.
fn word_glob<'v>(items: impl IntoIterator<Item = (&'v str, Option<Globbing>)>) -> Option<Globbing> {
    let mut rules = None;
    for (value, mark) in items {
        match (mark, rules) {
            (None, _) if !value.contains(['*', '?', '[']) => {}
            (None, _) => return None,
            (Some(g), None) => rules = Some(g),
            (Some(g), Some(r)) if g == r => {}
            (Some(_), Some(_)) => return None,
        }
    }
    rules
}

/// Aligns the occurrences of a pattern of `steps` steps. Occurrences whose tokens do not fit the
/// templates (those of the first occurrence's key with the most values) are left out. `None`
/// when none fits.
pub fn align(occurrences: &[AlignInput], max_evidence: usize) -> Option<Aligned> {
    // An occurrence with a word its shell computed (`cat $dirfile`) is not known word for
    // word: the habit is what the others did, less consistent for it; none left, no habit.
    let known = |o: &AlignInput| o.tokens.iter().all(|t| !t.computed);
    if !occurrences.iter().all(known) {
        let kept: Vec<AlignInput> = occurrences.iter().filter(|o| known(o)).cloned().collect();
        if kept.is_empty() {
            return None;
        }
        let mut aligned = align(&kept, max_evidence)?;
        aligned.consistency *= kept.len() as f64 / occurrences.len() as f64;
        return Some(aligned);
    }
    // The templates come from the occurrence with the most values (the longest runs of files:
    // `git add a.rs b.rs` rather than `git add a.rs`), so every occurrence of the key fits.
    let same_keys = |o: &AlignInput| {
        o.tokens.len() == occurrences[0].tokens.len()
            && o.tokens
                .iter()
                .zip(&occurrences[0].tokens)
                .all(|(a, b)| a.key == b.key)
    };
    let model = (0..occurrences.len())
        .rev()
        .filter(|&i| same_keys(&occurrences[i]))
        .max_by_key(|&i| {
            occurrences[i]
                .tokens
                .iter()
                .map(|t| t.slots.len())
                .sum::<usize>()
        })?;
    let first = occurrences.get(model)?;
    let templates = step_templates(first);
    let (fitting, values) = fitting_occurrences(occurrences, &templates);
    if fitting.is_empty() {
        return None;
    }
    let n = fitting.len();
    let roles = assign_roles(&templates, &values, &fitting, first);
    let steps = fill_steps(&templates, &roles, &values, first, &fitting);
    let one_pipeline = steps.iter().skip(1).all(|s| s.piped);
    let evidence = fill_evidence(
        &templates,
        &roles,
        &values,
        &fitting,
        one_pipeline,
        max_evidence,
    );
    let cwds: Vec<Option<&str>> = fitting
        .iter()
        .map(|o| o.tokens.first().and_then(|t| t.cwd.as_deref()))
        .collect();
    let workspace_varies = cwds.iter().any(|c| *c != cwds[0]);
    Some(Aligned {
        steps,
        consistency: roles.consistency() * (n as f64 / occurrences.len() as f64),
        params: roles.params,
        internals: roles.internals,
        evidence,
        success_rate: fitting.iter().filter(|o| o.ok).count() as f64 / n as f64,
        workspace_varies,
        lines: Vec::new(),
        shell: super::line::Shell::default(),
    })
}

/// The first occurrence's token templates, each cut into words of text and placeholders.
fn step_templates(first: &AlignInput) -> Vec<Vec<Vec<Segment>>> {
    first
        .tokens
        .iter()
        .map(|t| {
            t.template
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(segments)
                .collect()
        })
        .collect()
}

/// The occurrences whose tokens fit `templates`, with their placeholder values.
fn fitting_occurrences<'a>(
    occurrences: &'a [AlignInput],
    templates: &[Vec<Vec<Segment>>],
) -> (Vec<&'a AlignInput>, Vec<OccurrenceValues>) {
    let mut fitting = Vec::new();
    let mut values = Vec::new();
    for occ in occurrences {
        if occ.tokens.len() != templates.len() {
            continue;
        }
        let per_step: Option<Vec<_>> = occ
            .tokens
            .iter()
            .zip(templates)
            .map(|(token, template)| placeholder_values(template, &token.slots))
            .collect();
        if let Some(per_step) = per_step {
            fitting.push(occ);
            values.push(per_step);
        }
    }
    (fitting, values)
}

/// What one placeholder is across the occurrences.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    /// The same value everywhere.
    Literal(String),
    /// A parameter, by index.
    Param(usize),
    /// A value an earlier step printed, by index of the internal variable.
    Internal(usize),
}

/// The roles of a pattern's placeholders, keyed by (step, placeholder index), with the
/// parameters and internal variables they make.
#[derive(Debug, Default)]
struct Roles {
    of: HashMap<(usize, usize), Role>,
    params: Vec<Param>,
    /// Per parameter, its value in each fitting occurrence.
    param_values: Vec<Vec<String>>,
    internals: Vec<Internal>,
    /// Per step whose output a later step reads, the variable holding it.
    captures: BTreeMap<usize, String>,
    /// Placeholders that are literals, typed parameters or internal variables.
    literal_or_typed: usize,
    /// Placeholders.
    total: usize,
}

/// One placeholder's values across the fitting occurrences.
struct Column<'t> {
    step: usize,
    index: usize,
    /// Its name in the template.
    name: &'t str,
    variadic: bool,
    values: Vec<String>,
    kinds: Vec<SlotKind>,
    /// The first value of its run in the occurrence the templates come from.
    first_value: String,
}

/// Decides every placeholder's role, step by step.
fn assign_roles(
    templates: &[Vec<Vec<Segment>>],
    values: &[OccurrenceValues],
    fitting: &[&AlignInput],
    first: &AlignInput,
) -> Roles {
    let mut roles = Roles::default();
    // The occurrence the templates come from: it fits them.
    let model = fitting
        .iter()
        .position(|o| std::ptr::eq(*o, first))
        .unwrap_or(0);
    for (step, template) in templates.iter().enumerate() {
        let names = template.iter().flatten().filter_map(|seg| match seg {
            Segment::Slot { name, variadic } => Some((name.as_str(), *variadic)),
            Segment::Text(_) => None,
        });
        for (index, (name, variadic)) in names.enumerate() {
            let column = Column {
                step,
                index,
                name,
                variadic,
                values: values
                    .iter()
                    .map(|occ| occ[step][index].0.clone())
                    .collect(),
                kinds: values.iter().map(|occ| occ[step][index].1).collect(),
                first_value: values[model][step][index].2[0].clone(),
            };
            // A run of files is a variadic parameter only where some occurrence had several.
            let column = Column {
                variadic: variadic && values.iter().any(|occ| occ[step][index].2.len() > 1),
                ..column
            };
            let role = roles.role_of(column, fitting, &first.tokens[step]);
            roles.of.insert((step, index), role);
        }
    }
    roles
}

impl Roles {
    /// The role of one placeholder: a literal when its value never changes; an existing
    /// parameter when it always holds that one's values; an internal variable when an earlier
    /// step printed it in every occurrence; else a new parameter. A value redacted at ingest is
    /// a secret the tool must be given: always a parameter of its own, even when every
    /// occurrence shows the same placeholder.
    fn role_of(&mut self, column: Column<'_>, fitting: &[&AlignInput], token: &Token) -> Role {
        self.total += 1;
        let secret = column.values.iter().any(|v| v.contains(PLACEHOLDER_START));
        if !secret {
            if column.values.iter().all(|v| *v == column.values[0]) {
                self.literal_or_typed += 1;
                return Role::Literal(column.values[0].clone());
            }
            if let Some(p) = self.param_values.iter().position(|v| *v == column.values) {
                self.literal_or_typed += 1;
                return Role::Param(p);
            }
            if let Some(from) = printed_earlier(fitting, column.step, &column.values) {
                self.literal_or_typed += 1;
                return Role::Internal(self.internal(from, column.step));
            }
        }
        let param = new_param(&column, secret, token, &self.params);
        if secret || typed_or_repeating(&param.kind, &column.values, fitting.len()) {
            self.literal_or_typed += 1;
        }
        self.params.push(param);
        self.param_values.push(column.values);
        Role::Param(self.params.len() - 1)
    }

    /// A new internal variable carrying step `from`'s output to step `to`; its index.
    fn internal(&mut self, from: usize, to: usize) -> usize {
        let name = self
            .captures
            .entry(from)
            .or_insert_with(|| format!("out_{}", from + 1))
            .clone();
        self.internals.push(Internal {
            name,
            from_step: from,
            to_step: to,
        });
        self.internals.len() - 1
    }

    /// Share of the placeholders that are literal or typed (see [`super::score`]).
    fn consistency(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.literal_or_typed as f64 / self.total as f64
        }
    }
}

/// The first step before `step` whose output shows, in every occurrence, that occurrence's
/// value.
fn printed_earlier(fitting: &[&AlignInput], step: usize, values: &[String]) -> Option<usize> {
    (0..step).find(|&earlier| {
        fitting.iter().zip(values).all(|(occ, v)| {
            occ.outputs
                .get(earlier)
                .and_then(|o| o.as_deref())
                .is_some_and(|o| printed(o, v))
        })
    })
}

/// Whether a parameter says something of its own: a type more precise than a string, or a
/// value that repeats across the `n` occurrences.
fn typed_or_repeating(kind: &str, values: &[String], n: usize) -> bool {
    let mut distinct: Vec<&String> = values.iter().collect();
    distinct.sort();
    distinct.dedup();
    kind != "string" && kind != "text" || distinct.len() < n
}

/// The parameter a placeholder becomes: typed from its values, named from its flag, its
/// template name or its type (unique among `params`), with its most common values.
fn new_param(column: &Column<'_>, secret: bool, token: &Token, params: &[Param]) -> Param {
    // A run of several files (`git add a b`, `mkdir -p x y/z`) is paths: its values are joined
    // with spaces, which is no sign of free text, and a bare name has no slash.
    let kind = if column.variadic && column.kinds.contains(&SlotKind::Path) {
        "path"
    } else {
        param_kind(&column.kinds, &column.values)
    };
    let mut base = param_name(column.name);
    // A name the first occurrence's kind gave (`<path>` for `feature/login`) says nothing when
    // the values are of several kinds (`main`): the joined kind names it.
    let kinds_differ = column.kinds.iter().any(|k| *k != column.kinds[0]);
    let kind_name = column.kinds.iter().any(|k| k.as_str() == base);
    if secret && (matches!(base.as_str(), "string" | "arg") || base.len() <= 1) {
        base = "secret".into();
    } else if base == "string" || base == "arg" || (kinds_differ && kind_name) {
        base = match kind {
            "path" => "path".into(),
            "sha" => "commit".into(),
            "url" => "url".into(),
            "number" => "number".into(),
            "glob" => "pattern".into(),
            "text" => "message".into(),
            _ => "value".into(),
        };
    }
    let mut unique = base.clone();
    let mut k = 2;
    while params.iter().any(|p| p.name == unique) {
        unique = format!("{base}_{k}");
        k += 1;
    }
    let flag = token
        .slots
        .iter()
        .find(|s| s.value == column.first_value)
        .and_then(|s| s.flag.clone());
    Param {
        name: unique,
        kind: kind.to_owned(),
        named_from: match flag {
            Some(f) => format!("flag {f}"),
            None => format!("position {} of `{}`", column.index + 1, token.template),
        },
        examples: most_common(&column.values, 5),
        variadic: column.variadic,
        secret,
    }
}

/// Up to `max` distinct values, the most frequent first (ties in value order).
fn most_common(values: &[String], max: usize) -> Vec<String> {
    let mut counts: HashMap<&String, usize> = HashMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let mut examples: Vec<(&String, usize)> = counts.into_iter().collect();
    examples.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    examples
        .into_iter()
        .take(max)
        .map(|(v, _)| v.clone())
        .collect()
}

/// The pattern's steps: each template with literals, parameters and internal variables.
fn fill_steps(
    templates: &[Vec<Vec<Segment>>],
    roles: &Roles,
    values: &[OccurrenceValues],
    first: &AlignInput,
    fitting: &[&AlignInput],
) -> Vec<Step> {
    templates
        .iter()
        .enumerate()
        .map(|(step, template)| {
            // How each placeholder was expanded as a pathname pattern: the whole run, or
            // each item of a constant run spread over words.
            let column = |index: usize| values.iter().map(move |occ| &occ[step][index]);
            let run_glob = |index: usize| {
                word_glob(
                    column(index)
                        .flat_map(|v| v.2.iter().map(String::as_str).zip(v.3.iter().copied())),
                )
            };
            let (words, globs) = fill_words(template, |index, lone_run| {
                match roles.of.get(&(step, index)) {
                    // A constant run of arguments (`git add a.rs b.rs` every time) stays a run
                    // of words, not one word holding them all.
                    Some(Role::Literal(_)) if lone_run => {
                        let run = &values[0][step][index].2;
                        let globs = (0..run.len())
                            .map(|i| word_glob(column(index).map(|v| (v.2[i].as_str(), v.3[i]))))
                            .collect();
                        Filled::Spread(run.clone(), globs)
                    }
                    Some(Role::Literal(v)) => {
                        Filled::Piece(Piece::Literal(v.clone()), run_glob(index))
                    }
                    Some(Role::Param(p)) => {
                        Filled::Piece(Piece::Param(roles.params[*p].name.clone()), run_glob(index))
                    }
                    Some(Role::Internal(i)) => {
                        Filled::Piece(Piece::Internal(roles.internals[*i].name.clone()), None)
                    }
                    None => Filled::Piece(Piece::Literal(String::new()), None),
                }
            });
            let template_text = render(&words, &globs, |p| match p {
                Piece::Literal(t) => shell_quote(t),
                Piece::Param(n) | Piece::Internal(n) => format!("<{n}>"),
            });
            let globs = if globs.iter().all(Option::is_none) {
                Vec::new()
            } else {
                globs
            };
            Step {
                template: template_text,
                words,
                globs,
                key: first.tokens[step].key.clone(),
                agent_tool: first.tokens[step].kind == TokenKind::Tool,
                captures: roles.captures.get(&step).cloned(),
                // Piped only when every occurrence piped it: the tool runs one way.
                piped: step > 0
                    && fitting
                        .iter()
                        .all(|occ| occ.piped.get(step).copied().unwrap_or(false)),
            }
        })
        .collect()
}

/// The evidence: up to `max_evidence` occurrences with their parameters' values and their
/// commands as they were run; a replay only when the pattern is one pipeline.
fn fill_evidence(
    templates: &[Vec<Vec<Segment>>],
    roles: &Roles,
    values: &[OccurrenceValues],
    fitting: &[&AlignInput],
    one_pipeline: bool,
    max_evidence: usize,
) -> Vec<Evidence> {
    fitting
        .iter()
        .enumerate()
        .take(max_evidence)
        .map(|(o, occ)| {
            let params_here: BTreeMap<String, String> = roles
                .params
                .iter()
                .zip(&roles.param_values)
                .map(|(p, vals)| (p.name.clone(), vals[o].clone()))
                .collect();
            let commands = (0..occ.tokens.len())
                .map(|step| {
                    let (words, globs) = fill_words(&templates[step], |index, lone_run| {
                        let (_, _, run, marks) = &values[o][step][index];
                        // Each argument of a run is a word of its own, as it was run.
                        if lone_run {
                            Filled::Spread(run.clone(), marks.clone())
                        } else {
                            let glob = marks
                                .iter()
                                .all(Option::is_some)
                                .then(|| marks[0])
                                .flatten();
                            Filled::Piece(Piece::Literal(run.join(" ")), glob)
                        }
                    });
                    render(&words, &globs, |p| match p {
                        Piece::Literal(t) => shell_quote(t),
                        Piece::Param(n) | Piece::Internal(n) => n.clone(),
                    })
                })
                .collect();
            Evidence {
                session: occ.session.clone(),
                first_seq: occ.seqs.0,
                last_seq: occ.seqs.1,
                params: params_here,
                commands,
                replay: occ.replay.clone().filter(|_| one_pipeline),
                agent: None,
            }
        })
        .collect()
}

/// What fills one placeholder of a template, with how the shell expanded it as a pathname
/// pattern (`None`: as written).
enum Filled {
    /// A run of arguments, one word each (only for a placeholder that is a word of its own),
    /// each item's expansion.
    Spread(Vec<String>, Vec<Option<Globbing>>),
    /// One piece of the word.
    Piece(Piece, Option<Globbing>),
}

/// The words of one step's template, each placeholder filled by `fill(index, lone_run)`, where
/// `index` counts the step's placeholders and `lone_run` says the placeholder is a variadic one
/// standing alone in its word (so its run may be spread over several words); with each word's
/// pathname expansion (only a word that is one placeholder's value can be a pattern).
fn fill_words(
    template: &[Vec<Segment>],
    mut fill: impl FnMut(usize, bool) -> Filled,
) -> (Vec<Vec<Piece>>, Vec<Option<Globbing>>) {
    let mut index = 0;
    let mut words = Vec::new();
    let mut globs = Vec::new();
    for word in template {
        let lone_run = matches!(word.as_slice(), [Segment::Slot { variadic: true, .. }]);
        let alone = matches!(word.as_slice(), [Segment::Slot { .. }]);
        let mut pieces = Vec::new();
        let mut word_glob = None;
        for seg in word {
            match seg {
                Segment::Text(t) => pieces.push(Piece::Literal(t.clone())),
                Segment::Slot { .. } => {
                    match fill(index, lone_run) {
                        Filled::Spread(items, marks) if lone_run => {
                            let n = items.len();
                            words.extend(items.into_iter().map(|item| vec![Piece::Literal(item)]));
                            globs.extend((0..n).map(|i| marks.get(i).copied().flatten()));
                        }
                        Filled::Spread(items, _) => pieces.push(Piece::Literal(items.join(" "))),
                        Filled::Piece(piece, glob) => {
                            pieces.push(piece);
                            word_glob = glob.filter(|_| alone);
                        }
                    }
                    index += 1;
                }
            }
        }
        if !lone_run || !pieces.is_empty() {
            words.push(pieces);
            globs.push(word_glob);
        }
    }
    (words, globs)
}

/// Renders words of pieces as a command line: pieces of a word concatenated (a word of several
/// pieces is quoted as a whole when one of them is a literal needing quotes); a literal word
/// the shell expanded as a pathname pattern is written as it was typed, unquoted (it held no
/// quote, no space and no operator, or the shell would not have expanded it).
fn render(
    words: &[Vec<Piece>],
    globs: &[Option<Globbing>],
    piece: impl Fn(&Piece) -> String,
) -> String {
    words
        .iter()
        .enumerate()
        .map(|(i, w)| match (w.as_slice(), globs.get(i)) {
            ([Piece::Literal(t)], Some(Some(_))) => t.clone(),
            _ => w.iter().map(&piece).collect::<String>(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{Action, ActionResult, Source};
    use crate::mine::token::tokens_of;
    use serde_json::json;

    fn occurrence(session: &str, commands: &[&str], outputs: &[&str], cwd: &str) -> AlignInput {
        let mut tokens = Vec::new();
        for (i, c) in commands.iter().enumerate() {
            let action = Action {
                session: session.into(),
                seq: i as u64,
                ts: None,
                source: Source::ClaudeCode,
                cwd: Some(cwd.into()),
                tool: "Bash".into(),
                input: json!({ "command": c }),
                call_id: None,
                parent_session: None,
                result: Some(ActionResult {
                    ok: true,
                    exit_code: Some(0),
                    output: String::new(),
                    duration_ms: None,
                }),
            };
            tokens.extend(tokens_of(&action));
        }
        AlignInput {
            session: session.into(),
            seqs: (0, commands.len() as u64 - 1),
            outputs: outputs.iter().map(|o| Some((*o).to_owned())).collect(),
            piped: piped_flags(&tokens),
            tokens,
            replay: None,
            ok: true,
        }
    }

    /// An occurrence of `commands` (each one action) typed in the shell of `source`.
    fn typed_in(source: Source, session: &str, commands: &[&str]) -> AlignInput {
        let tokens: Vec<Token> = commands
            .iter()
            .flat_map(|c| {
                tokens_of(&Action {
                    session: session.into(),
                    seq: 0,
                    ts: None,
                    source,
                    cwd: Some("/w".into()),
                    tool: "shell".into(),
                    input: json!({ "command": c }),
                    call_id: None,
                    parent_session: None,
                    result: None,
                })
            })
            .collect();
        AlignInput {
            session: session.into(),
            seqs: (0, commands.len() as u64 - 1),
            outputs: vec![None; tokens.len()],
            piped: piped_flags(&tokens),
            tokens,
            replay: None,
            ok: true,
        }
    }

    #[test]
    fn issue_20_a_word_every_occurrence_expanded_as_a_pattern_is_marked_on_its_step() {
        let zsh = |s: &str, c: &[&str]| typed_in(Source::Zsh, s, c);
        let bash = |s: &str, c: &[&str]| typed_in(Source::Bash, s, c);
        // The same pattern every time: a literal word, expanded by zsh's rules.
        let a = align(
            &[
                zsh("s1", &["git grep foo", "grep -l bar **/*.h"]),
                zsh("s2", &["git grep baz", "grep -l qux **/*.h"]),
            ],
            10,
        )
        .unwrap();
        assert_eq!(a.steps[1].globs, [None, None, None, Some(Globbing::Zsh)]);
        assert_eq!(a.steps[1].words[3], [Piece::Literal("**/*.h".into())]);
        // Written as typed, never quoted, where the pattern shows it.
        assert_eq!(a.steps[1].template, "grep -l <value_2> **/*.h");
        assert_eq!(a.evidence[0].commands[1], "grep -l bar **/*.h");
        assert!(a.steps[0].globs.is_empty());
        // A varying pattern: a parameter, expanded. A value without pattern characters
        // expands to itself, so it agrees.
        let a = align(
            &[
                bash("s1", &["wc -l *.c"]),
                bash("s2", &["wc -l *.h"]),
                bash("s3", &["wc -l main.c"]),
            ],
            10,
        )
        .unwrap();
        assert_eq!(a.steps[0].words[2], [Piece::Param("value".into())]);
        assert_eq!(a.steps[0].globs, [None, None, Some(Globbing::Sh)]);
        // Quoted once: the tool cannot both expand it and not; it passes it as written.
        let a = align(
            &[bash("s1", &["wc -l '*.c'"]), bash("s2", &["wc -l *.h"])],
            10,
        )
        .unwrap();
        assert!(a.steps[0].globs.is_empty());
        // Expanded by shells of different rules: as written too.
        let a = align(&[bash("s1", &["wc -l *.c"]), zsh("s2", &["wc -l *.h"])], 10).unwrap();
        assert!(a.steps[0].globs.is_empty());
        // A constant run of files spread over words: each word marked by itself.
        let a = align(
            &[
                bash("s1", &["git add *.md src/a.rs", "git commit -m one"]),
                bash("s2", &["git add *.md src/a.rs", "git commit -m two"]),
            ],
            10,
        )
        .unwrap();
        assert_eq!(a.steps[0].globs, [None, None, Some(Globbing::Sh), None]);
    }

    #[test]
    fn constant_slots_are_literals_and_varying_ones_parameters() {
        let occs = vec![
            occurrence(
                "s1",
                &["cargo build -p core", "cargo test -p core --lib"],
                &["", ""],
                "/a",
            ),
            occurrence(
                "s2",
                &["cargo build -p cli", "cargo test -p cli --lib"],
                &["", ""],
                "/a",
            ),
            occurrence(
                "s3",
                &["cargo build -p core", "cargo test -p core --lib"],
                &["", ""],
                "/b",
            ),
        ];
        let a = align(&occs, 10).expect("aligned");
        assert_eq!(a.params.len(), 1, "{:?}", a.params);
        let p = &a.params[0];
        assert_eq!((p.name.as_str(), p.kind.as_str()), ("package", "string"));
        assert_eq!(p.examples, ["core", "cli"]);
        assert_eq!(a.steps[0].template, "cargo build -p <package>");
        assert!(
            a.steps[1].template.starts_with("cargo test"),
            "{}",
            a.steps[1].template
        );
        assert!(a.steps[1].template.contains("-p <package>"));
        assert!(a.workspace_varies);
        assert_eq!(a.evidence.len(), 3);
        assert_eq!(a.evidence[1].params["package"], "cli");
        assert_eq!(a.evidence[1].commands[0], "cargo build -p cli");
        assert_eq!(a.success_rate, 1.0);
    }

    #[test]
    fn a_value_printed_by_an_earlier_step_is_internal() {
        let occs = vec![
            occurrence(
                "s1",
                &["git rev-parse HEAD", "git show 3f2a9c1b7d"],
                &["3f2a9c1b7d\n", ""],
                "/r",
            ),
            occurrence(
                "s2",
                &["git rev-parse HEAD", "git show 9e8d7c6b5a"],
                &["9e8d7c6b5a\n", ""],
                "/r",
            ),
        ];
        let a = align(&occs, 10).expect("aligned");
        assert!(a.params.is_empty(), "{:?}", a.params);
        assert_eq!(a.internals.len(), 1);
        assert_eq!((a.internals[0].from_step, a.internals[0].to_step), (0, 1));
        assert_eq!(a.steps[0].captures.as_deref(), Some("out_1"));
        assert_eq!(a.steps[1].template, "git show <out_1>");
        assert!(!a.workspace_varies);
    }

    #[test]
    fn messages_are_text_and_numbers_are_typed() {
        let occs = vec![
            occurrence(
                "s1",
                &["git commit -m 'fix the parser'", "git log -n 3"],
                &["", ""],
                "/r",
            ),
            occurrence(
                "s2",
                &["git commit -m 'add a test'", "git log -n 5"],
                &["", ""],
                "/r",
            ),
        ];
        let a = align(&occs, 10).expect("aligned");
        let kinds: Vec<(&str, &str)> = a
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.kind.as_str()))
            .collect();
        assert!(
            kinds.contains(&("message", "text")) || kinds.iter().any(|(_, k)| *k == "text"),
            "{kinds:?}"
        );
        assert!(kinds.iter().any(|(_, k)| *k == "number"), "{kinds:?}");
        assert_eq!(a.evidence[0].commands[0], "git commit -m 'fix the parser'");
    }

    #[test]
    fn a_run_of_arguments_stays_a_run_of_words() {
        let occs = vec![
            occurrence(
                "s1",
                &["git add src/a.rs src/b.rs", "cargo build -p core"],
                &["", ""],
                "/r",
            ),
            occurrence(
                "s2",
                &["git add src/a.rs src/b.rs", "cargo build -p cli"],
                &["", ""],
                "/r",
            ),
        ];
        let a = align(&occs, 10).expect("aligned");
        assert_eq!(
            a.steps[0].words,
            [
                vec![Piece::Literal("git".into())],
                vec![Piece::Literal("add".into())],
                vec![Piece::Literal("src/a.rs".into())],
                vec![Piece::Literal("src/b.rs".into())],
            ]
        );
        assert_eq!(a.steps[0].template, "git add src/a.rs src/b.rs");
        let occs = vec![
            occurrence(
                "s1",
                &["git add src/a.rs src/b.rs", "git status"],
                &["", ""],
                "/r",
            ),
            occurrence("s2", &["git add README.md", "git status"], &["", ""], "/r"),
        ];
        let a = align(&occs, 10).expect("aligned");
        assert!(a.params[0].variadic, "{:?}", a.params);
        assert_eq!(a.evidence[0].commands[0], "git add src/a.rs src/b.rs");
        assert_eq!(a.evidence[0].params["path"], "src/a.rs src/b.rs");
    }

    #[test]
    fn a_value_redacted_at_ingest_is_a_parameter_never_a_literal() {
        // Every occurrence shows the same placeholders (the secrets differed, their kinds do
        // not): without the rule, these columns would be literals, replayed as arguments.
        let commands = [
            "aws configure set aws_secret_access_key [REDACTED:aws-secret-key]",
            "mysql -uroot -p[REDACTED:password-flag] shop -e 'select 1'",
            "DEPLOY_TOKEN=[REDACTED:secret-assignment] make deploy",
            "curl -u admin:[REDACTED:password-flag] https://ci.example.com/api",
        ];
        let occs: Vec<AlignInput> = ["s1", "s2", "s3"]
            .iter()
            .map(|s| occurrence(s, &commands, &["", "", "", ""], "/r"))
            .collect();
        let a = align(&occs, 10).expect("aligned");
        let secrets: Vec<&Param> = a.params.iter().filter(|p| p.secret).collect();
        assert_eq!(secrets.len(), 4, "{:?}", a.params);
        assert!(a.params.iter().all(|p| p.secret), "{:?}", a.params);
        for step in &a.steps {
            for piece in step.words.iter().flatten() {
                if let Piece::Literal(t) = piece {
                    assert!(!t.contains(PLACEHOLDER_START), "literal {t:?} in {step:?}");
                }
            }
            assert!(
                !step.template.contains(PLACEHOLDER_START),
                "{}",
                step.template
            );
        }
        assert_eq!(
            a.steps[1].template, "mysql -uroot -p<secret_2> shop -e 'select 1'",
            "{:?}",
            a.steps[1]
        );
        // Two secrets with the same placeholder in every occurrence are two parameters.
        let names: std::collections::HashSet<&str> =
            a.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 4, "{:?}", a.params);
        // The evidence keeps the placeholders: mining shows where a secret was.
        assert!(
            a.evidence[0].commands[0].contains("[REDACTED:aws-secret-key]"),
            "{:?}",
            a.evidence[0]
        );
        assert_eq!(
            a.steps[0].template,
            "aws configure set aws_secret_access_key <secret>"
        );
    }

    #[test]
    fn template_words_are_cut_into_placeholders() {
        assert_eq!(
            segments("--features=<features>"),
            vec![
                Segment::Text("--features=".into()),
                Segment::Slot {
                    name: "features".into(),
                    variadic: false
                }
            ]
        );
        assert_eq!(
            segments("<path>..."),
            vec![Segment::Slot {
                name: "path".into(),
                variadic: true
            }]
        );
        assert_eq!(segments("<<EOF"), vec![Segment::Text("<<EOF".into())]);
        assert_eq!(segments("<"), vec![Segment::Text("<".into())]);
        assert_eq!(param_name("--test-threads"), "test_threads");
        assert_eq!(param_name("2nd"), "arg_2nd");
        assert_eq!(param_name("--"), "arg");
    }

    #[test]
    fn occurrences_that_do_not_fit_the_first_ones_templates_are_left_out() {
        let occs = vec![
            occurrence("s1", &["cargo test -p core", "git push"], &["", ""], "/r"),
            occurrence("s2", &["cargo test -p cli", "git push"], &["", ""], "/r"),
            // One step short.
            occurrence("s3", &["cargo test -p web"], &[""], "/r"),
            // Two packages where the template has one.
            occurrence("s4", &["cargo test -p a -p b", "git push"], &["", ""], "/r"),
            occurrence("s5", &["cargo test -p core", "git push"], &["", ""], "/r"),
        ];
        let templates = step_templates(&occs[0]);
        assert_eq!(templates.len(), 2);
        assert_eq!(
            templates[0].last(),
            Some(&vec![Segment::Slot {
                name: "package".into(),
                variadic: false
            }])
        );
        let (fitting, values) = fitting_occurrences(&occs, &templates);
        let sessions: Vec<&str> = fitting.iter().map(|o| o.session.as_str()).collect();
        assert_eq!(sessions, ["s1", "s2", "s5"]);
        assert_eq!(values[1][0][0].0, "cli");
        assert_eq!(values[1][1].len(), 0);
        // Three of five fit (the package repeats, so it is a parameter worth its name).
        let a = align(&occs, 10).expect("aligned");
        assert_eq!(a.consistency, 0.6);
        assert_eq!(a.evidence.len(), 3);
        assert!(align(&[], 10).is_none());
    }

    #[test]
    fn each_placeholder_gets_one_role() {
        let occs = vec![
            occurrence(
                "s1",
                &[
                    "git rev-parse HEAD",
                    "git show 3f2a9c1b7d",
                    "git tag v1 -m one",
                    "git push -f",
                ],
                &["3f2a9c1b7d\n", "", "", ""],
                "/r",
            ),
            occurrence(
                "s2",
                &[
                    "git rev-parse HEAD",
                    "git show 9e8d7c6b5a",
                    "git tag v2 -m two",
                    "git push -f",
                ],
                &["9e8d7c6b5a\n", "", "", ""],
                "/r",
            ),
        ];
        let templates = step_templates(&occs[0]);
        let (fitting, values) = fitting_occurrences(&occs, &templates);
        let roles = assign_roles(&templates, &values, &fitting, &occs[0]);
        // `HEAD` never changes; the sha was printed by step 0; the tag and message vary.
        assert_eq!(roles.of[&(0, 0)], Role::Literal("HEAD".into()));
        assert_eq!(roles.of[&(1, 0)], Role::Internal(0));
        assert_eq!(roles.captures.get(&0).map(String::as_str), Some("out_1"));
        let names: Vec<(&str, &str)> = roles
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.named_from.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("value", "position 1 of `git tag <string> -m <message>`"),
                ("message", "flag -m")
            ]
        );
        assert_eq!(roles.param_values[1], ["one", "two"]);
        // Two placeholders always varying as plain strings: the literal, the internal, and no
        // more.
        assert_eq!((roles.literal_or_typed, roles.total), (2, 4));
        assert_eq!(roles.consistency(), 0.5);
    }

    #[test]
    fn a_placeholder_holding_a_parameters_values_is_that_parameter() {
        let occs = vec![
            occurrence(
                "s1",
                &["cargo build -p core", "cargo test -p core"],
                &["", ""],
                "/r",
            ),
            occurrence(
                "s2",
                &["cargo build -p cli", "cargo test -p cli"],
                &["", ""],
                "/r",
            ),
        ];
        let templates = step_templates(&occs[0]);
        let (fitting, values) = fitting_occurrences(&occs, &templates);
        let roles = assign_roles(&templates, &values, &fitting, &occs[0]);
        assert_eq!(roles.params.len(), 1);
        assert_eq!(roles.of[&(0, 0)], Role::Param(0));
        assert_eq!(roles.of[&(1, 0)], Role::Param(0));
    }

    #[test]
    fn parameter_names_types_and_examples() {
        let values = |vs: &[&str]| vs.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            most_common(&values(&["b", "a", "b", "c", "a", "b"]), 2),
            ["b", "a"]
        );
        assert!(typed_or_repeating("path", &values(&["a", "b"]), 2));
        assert!(typed_or_repeating("string", &values(&["a", "a", "b"]), 3));
        assert!(!typed_or_repeating("string", &values(&["a", "b"]), 2));
        assert!(!typed_or_repeating("text", &values(&["a b", "c d"]), 2));
        assert_eq!(
            param_kind(&[SlotKind::Number; 2], &values(&["1", "2"])),
            "number"
        );
        assert_eq!(
            param_kind(&[SlotKind::Number; 2], &values(&["1.5", "2"])),
            "string"
        );
        assert_eq!(
            param_kind(&[SlotKind::Path, SlotKind::String], &values(&["a", "b"])),
            "string"
        );
        // Files with bare names among them are files; branches with slashes are not.
        let kinds = [
            SlotKind::Path,
            SlotKind::Path,
            SlotKind::String,
            SlotKind::String,
        ];
        assert_eq!(
            param_kind(
                &kinds,
                &values(&["perl_1.pl", "Gemfile", "cpanfile", "2nd"])
            ),
            "path"
        );
        assert_eq!(
            param_kind(
                &kinds,
                &values(&["feature/login", "release/2.1", "main", "fix-1432"])
            ),
            "string"
        );
        assert_eq!(
            param_kind(&kinds[1..], &values(&["a.rs", "b", "--all"])),
            "string"
        );
        assert_eq!(
            param_kind(&[SlotKind::Hex; 2], &values(&["a1b2c3d", "b"])),
            "sha"
        );
        // A name already taken gets a number; a secret without a better name is `secret`.
        let token = &occurrence("s", &["git add a.rs b.rs"], &[""], "/r").tokens[0];
        let column = |name: &'static str, kinds, vs: &[&str]| Column {
            step: 0,
            index: 0,
            name,
            variadic: true,
            values: values(vs),
            kinds,
            first_value: "a.rs".into(),
        };
        let paths = column("path", vec![SlotKind::Path; 2], &["a.rs b.rs", "c.rs"]);
        let first = new_param(&paths, false, token, &[]);
        // A run of several files is paths, not the text its joined values look like.
        assert_eq!((first.name.as_str(), first.kind.as_str()), ("path", "path"));
        assert_eq!(first.named_from, "position 1 of `git add <path>...`");
        assert!(first.variadic && !first.secret);
        let second = new_param(&paths, false, token, std::slice::from_ref(&first));
        assert_eq!(second.name, "path_2");
        let secret = column(
            "string",
            vec![SlotKind::String; 2],
            &["[REDACTED:x]", "[REDACTED:x]"],
        );
        assert_eq!(new_param(&secret, true, token, &[]).name, "secret");
        let plain = column(
            "string",
            vec![SlotKind::Url; 2],
            &["http://a.b/c", "http://d.e/f"],
        );
        assert_eq!(new_param(&plain, false, token, &[]).name, "url");
    }

    #[test]
    fn a_value_printed_earlier_is_found_by_its_step() {
        let occs = [
            occurrence(
                "s1",
                &["make id", "make tag", "deploy abc123x"],
                &["id abc123x", "x", ""],
                "/r",
            ),
            occurrence(
                "s2",
                &["make id", "make tag", "deploy def456y"],
                &["def456y\n", "y", ""],
                "/r",
            ),
        ];
        let fitting: Vec<&AlignInput> = occs.iter().collect();
        let values = vec!["abc123x".to_owned(), "def456y".to_owned()];
        assert_eq!(printed_earlier(&fitting, 2, &values), Some(0));
        assert_eq!(printed_earlier(&fitting, 0, &values), None);
        // Inside a longer word is not printed.
        assert!(!printed("xabc123x", "abc123x"));
        assert!(printed("(abc123x)", "abc123x"));
    }

    /// The words a command line gives its program, as the shell splits them.
    fn argv(line: &str) -> Vec<String> {
        crate::mine::shell::parse(line)
            .expect("the line parses")
            .iter()
            .flat_map(|c| c.words.iter().map(|w| w.text.clone()))
            .collect()
    }

    /// Aligns one-step occurrences of `lines` and checks what issue 20 asks: the step's words
    /// in the order they were logged, each occurrence's command word for word, and a flag's
    /// value next to its flag. Returns the alignment.
    fn faithful(lines: &[&str], template: &str) -> Aligned {
        let occs: Vec<AlignInput> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| occurrence(&format!("s{i}"), &[l], &[""], "/w"))
            .collect();
        let a = align(&occs, 20).expect("aligned");
        assert_eq!(a.evidence.len(), lines.len(), "every occurrence fits");
        assert_eq!(a.steps[0].template, template);
        for (line, evidence) in lines.iter().zip(&a.evidence) {
            assert_eq!(argv(&evidence.commands[0]), argv(line), "{line}");
        }
        a
    }

    fn names(a: &Aligned) -> Vec<(&str, &str)> {
        a.params
            .iter()
            .map(|p| (p.name.as_str(), p.kind.as_str()))
            .collect()
    }

    #[test]
    fn issue_20_objdump_keeps_its_order_and_each_flag_its_value() {
        let a = faithful(
            &[
                "objdump -d build/agent --start-address 0x4013b0 --stop-address 0x402c60",
                "objdump -d build/agent --start-address 0x4064f0 --stop-address 0x406850",
                "objdump -d out/loader --start-address 0x401000 --stop-address 0x401200",
            ],
            "objdump -d <path> --start-address <number> --stop-address <number_2>",
        );
        assert_eq!(
            names(&a),
            [
                ("path", "path"),
                ("number", "string"),
                ("number_2", "string")
            ]
        );
    }

    #[test]
    fn issue_20_openssl_x509_keeps_its_order() {
        faithful(
            &[
                "openssl x509 -in certs/relay.example.com.pem -noout -subject -enddate",
                "openssl x509 -in tls/mqtt-broker.pem -noout -subject -enddate",
            ],
            "openssl x509 -in <in> -noout -subject -enddate",
        );
    }

    #[test]
    fn issue_20_an_unknown_cli_keeps_its_sub_command_first_and_its_flag_values() {
        // `coverage` has no table entry: the sub-command is the same in every occurrence, so
        // it is a literal, in its place; `--include=…` stays one word.
        faithful(
            &[
                "coverage report -m --include=src/storage/*",
                "coverage report -m --include=src/cli/*",
            ],
            "coverage report -m --include=<include>",
        );
        faithful(
            &[
                "coverage run -m pytest tests/test_cli.py -q",
                "coverage run -m pytest tests/test_storage.py -q",
            ],
            "coverage run -m pytest <path> -q",
        );
    }

    #[test]
    fn issue_20_a_project_script_keeps_its_path() {
        let a = faithful(
            &[
                "./scripts/check.sh --module auth",
                "./scripts/check.sh --module billing",
            ],
            "./scripts/check.sh --module <value>",
        );
        assert_eq!(names(&a), [("value", "string")]);
        faithful(
            &["./gradlew test --tests Foo", "./gradlew test --tests Bar"],
            "./gradlew test --tests <tests>",
        );
    }

    #[test]
    fn issue_20_the_heredoc_commit_message_is_the_value() {
        let commit = |subject: &str| {
            format!(
                "git add src/cache.py && git commit -m \"$(cat <<'EOF'\n{subject}\n\nThe TTL was wrong.\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\nEOF\n)\""
            )
        };
        let lines = [commit("Expire cache entries"), commit("Fix the parser")];
        let occs: Vec<AlignInput> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| occurrence(&format!("s{i}"), &[l], &[""], "/w"))
            .collect();
        let a = align(&occs, 20).expect("aligned");
        // `a && b` keeps both.
        let templates: Vec<&str> = a.steps.iter().map(|s| s.template.as_str()).collect();
        assert_eq!(
            templates,
            ["git add src/cache.py", "git commit -m <message>"]
        );
        assert_eq!(names(&a), [("message", "text")]);
        let message = &a.evidence[1].params["message"];
        assert!(
            message.starts_with("Fix the parser\n\nThe TTL"),
            "{message}"
        );
        assert!(
            message.ends_with("(https://claude.com/claude-code)"),
            "{message}"
        );
        assert!(
            !message.contains("EOF") && !message.contains("$("),
            "{message}"
        );
        assert_eq!(
            argv(&a.evidence[1].commands[1]),
            ["git", "commit", "-m", message.as_str()]
        );
    }

    #[test]
    fn issue_20_one_file_or_several_is_one_habit() {
        let a = faithful(
            &[
                "git add README.md",
                "git add src/a.py tests/test_a.py",
                "git add pyproject.toml",
            ],
            "git add <path>",
        );
        assert!(a.params[0].variadic, "{:?}", a.params);
        // Never more than one file: a plain parameter.
        let a = faithful(&["git add README.md", "git add src/a.py"], "git add <path>");
        assert!(!a.params[0].variadic, "{:?}", a.params);
    }

    #[test]
    fn a_run_of_files_is_a_path_parameter_whatever_its_values_look_like() {
        // Seen in a Claude Code session: the directories a `mkdir -p` makes, one or several,
        // with or without a slash, are paths (a run's values are joined with spaces, which is
        // no sign of free text).
        let a = faithful(
            &[
                "mkdir -p components",
                "mkdir -p src/auth src/socket src/claude",
                "mkdir -p types",
            ],
            "mkdir -p <path>",
        );
        assert_eq!(names(&a), [("path", "path")], "{:?}", a.params);
        assert!(a.params[0].variadic);
    }

    #[test]
    fn issue_20_branch_values_of_any_shape_are_one_parameter() {
        let a = faithful(
            &[
                "git pull --rebase origin main",
                "git pull --rebase origin feature/login",
                "git pull --rebase origin fix-1432",
                "git pull --rebase origin deps/bump-tokio",
            ],
            "git pull --rebase origin <value>",
        );
        assert_eq!(names(&a), [("value", "string")]);
        assert_eq!(
            a.params[0].examples,
            ["deps/bump-tokio", "feature/login", "fix-1432", "main"]
        );
        // The first occurrence's value a path, the others not: still one parameter of the
        // joined kind, named by it.
        let a = faithful(
            &["git checkout feature/login", "git checkout fix-1432"],
            "git checkout <value>",
        );
        assert_eq!(names(&a), [("value", "string")]);
    }
}
