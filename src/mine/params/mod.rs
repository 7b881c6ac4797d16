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

use std::collections::{BTreeMap, BTreeSet, HashMap};

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
    Slot {
        name: String,
        variadic: bool,
        /// The operands a command ends with, whose number varies between occurrences
        /// (`brew upgrade <string>...`): the values left once every later placeholder has
        /// its own ([`with_operand_lists`]).
        list: bool,
    },
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
            list: false,
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
    let mut left = template
        .iter()
        .flatten()
        .filter(|s| matches!(s, Segment::Slot { .. }))
        .count();
    for word in template {
        for seg in word {
            let Segment::Slot { variadic, list, .. } = seg else {
                continue;
            };
            left -= 1;
            let first = slots.get(next)?;
            let mut run = vec![first.value.clone()];
            let mut globs = vec![first.glob];
            next += 1;
            if *list {
                // Every slot but those the later placeholders take: operands, one at least.
                let end = slots.len().checked_sub(left)?;
                if end < next || first.flag.is_some() {
                    return None;
                }
                for s in slots.get(next..end)? {
                    if s.flag.is_some() || s.value.contains(PLACEHOLDER_START) {
                        return None;
                    }
                    run.push(s.value.clone());
                    globs.push(s.glob);
                }
                next = end;
            } else if *variadic {
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
    let templates = with_operand_lists(step_templates(first), first, occurrences, same_keys);
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

/// `templates` (the model occurrence's) with the operands each step ends with as one list
/// placeholder, in the steps where the number of values varies between occurrences of the same
/// keys (`brew upgrade wget`, `brew upgrade wget jq`: issue 30), so that every occurrence fits;
/// elsewhere each operand stays a placeholder of its own.
fn with_operand_lists(
    mut templates: Vec<Vec<Vec<Segment>>>,
    model: &AlignInput,
    occurrences: &[AlignInput],
    same_keys: impl Fn(&AlignInput) -> bool,
) -> Vec<Vec<Vec<Segment>>> {
    for (step, template) in templates.iter_mut().enumerate() {
        let counts: BTreeSet<usize> = occurrences
            .iter()
            .filter(|o| same_keys(o))
            .filter_map(|o| o.tokens.get(step).map(|t| t.slots.len()))
            .collect();
        if counts.len() < 2 {
            continue;
        }
        let Some(token) = model.tokens.get(step) else {
            continue;
        };
        // Which slot each word's placeholder takes first (a word of one placeholder only).
        let mut next = 0;
        let mut lone: Vec<Option<usize>> = Vec::with_capacity(template.len());
        for word in template.iter() {
            let slots = word
                .iter()
                .filter(|s| matches!(s, Segment::Slot { .. }))
                .count();
            let plain = matches!(
                word.as_slice(),
                [Segment::Slot {
                    variadic: false,
                    ..
                }]
            );
            lone.push(plain.then_some(next));
            next += slots;
        }
        // The last run of words that are each one operand (no flag), followed by no operand.
        let operand = |w: usize| {
            lone[w].is_some_and(|k| token.slots.get(k).is_some_and(|s| s.flag.is_none()))
        };
        let Some(last) = (0..template.len()).rev().find(|&w| operand(w)) else {
            continue;
        };
        // After them, only placeholders of flags (a redirection's file): else the words are
        // no operands the command ends with.
        let flagged = |w: usize| {
            lone[w].is_some_and(|k| token.slots.get(k).is_some_and(|s| s.flag.is_some()))
        };
        let later_operand = (last + 1..template.len()).any(|w| {
            template[w]
                .iter()
                .any(|s| matches!(s, Segment::Slot { .. }))
                && !flagged(w)
        });
        if later_operand {
            continue;
        }
        let mut first = last;
        while first > 0 && operand(first - 1) {
            first -= 1;
        }
        let name = match template[first].first() {
            Some(Segment::Slot { name, .. }) => name.clone(),
            _ => continue,
        };
        template.splice(
            first..=last,
            [vec![Segment::Slot {
                name,
                variadic: true,
                list: true,
            }]],
        );
    }
    templates
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
            Segment::Slot { name, variadic, .. } => Some((name.as_str(), *variadic)),
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
    } else if column.variadic {
        // A list of operands (`wget jq`): its items' kind, the spaces between them no text.
        let items: Vec<String> = column
            .values
            .iter()
            .flat_map(|v| v.split_whitespace().map(str::to_owned))
            .collect();
        param_kind(&column.kinds, &items)
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
mod tests;
