//! Parameter inference: the occurrences of a pattern are aligned step by step and slot by slot.
//! A slot whose value never changes is a literal; one that varies is a parameter, typed from its
//! values and named from its flag, its position or its values; a slot whose value an earlier
//! step printed, in every occurrence, is an internal variable; two slots that always hold the
//! same value are one parameter. A working directory that varies makes the tool work on its
//! workspace.
//!
//! The steps' words come from the first occurrence's token templates (`cargo test -p <package>`):
//! each `<name>` placeholder takes the next slot of the token, a variadic `<name>...` takes the
//! run of positional slots of one kind it stands for.

use std::collections::{BTreeMap, HashMap};

use super::pattern::{Evidence, Internal, Param, Piece, Replay, Step};
use super::token::{SlotKind, SlotValue, Token, TokenKind};
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

/// The values of one token's placeholders, in template order: one string per placeholder (a
/// variadic one joins its run with spaces), with the kind of its first slot. `None` when the
/// slots do not fit the template.
fn placeholder_values(
    template: &[Vec<Segment>],
    slots: &[SlotValue],
) -> Option<Vec<(String, SlotKind, Vec<String>)>> {
    let mut values = Vec::new();
    let mut next = 0;
    for word in template {
        for seg in word {
            let Segment::Slot { variadic, .. } = seg else {
                continue;
            };
            let first = slots.get(next)?;
            let mut run = vec![first.value.clone()];
            next += 1;
            if *variadic {
                while let Some(s) = slots.get(next) {
                    if s.flag.is_some() || s.kind != first.kind {
                        break;
                    }
                    run.push(s.value.clone());
                    next += 1;
                }
            }
            values.push((run.join(" "), first.kind, run));
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
}

/// A name fit for a parameter: snake_case ASCII, starting with a letter.
fn param_name(raw: &str) -> String {
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
fn param_kind(kinds: &[SlotKind], values: &[String]) -> &'static str {
    if values.iter().any(|v| v.contains(char::is_whitespace)) {
        return "text";
    }
    let first = kinds.first().copied().unwrap_or(SlotKind::String);
    if !kinds.iter().all(|k| *k == first) {
        return "string";
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

/// Aligns the occurrences of a pattern of `steps` steps. Occurrences whose tokens do not fit the
/// first one's templates are left out. `None` when none fits.
pub fn align(occurrences: &[AlignInput], max_evidence: usize) -> Option<Aligned> {
    let first = occurrences.first()?;
    let templates: Vec<Vec<Vec<Segment>>> = first
        .tokens
        .iter()
        .map(|t| {
            t.template
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(segments)
                .collect()
        })
        .collect();
    // values[occurrence][step][placeholder]
    let mut fitting = Vec::new();
    let mut values = Vec::new();
    for occ in occurrences {
        if occ.tokens.len() != templates.len() {
            continue;
        }
        let per_step: Option<Vec<_>> = occ
            .tokens
            .iter()
            .zip(&templates)
            .map(|(token, template)| placeholder_values(template, &token.slots))
            .collect();
        if let Some(per_step) = per_step {
            fitting.push(occ);
            values.push(per_step);
        }
    }
    if fitting.is_empty() {
        return None;
    }
    let n = fitting.len();

    // Roles: (step, placeholder index) with the values across occurrences.
    #[derive(Debug)]
    enum Role {
        Literal(String),
        Param(usize),
        Internal(usize),
    }
    let mut roles: HashMap<(usize, usize), Role> = HashMap::new();
    let mut params: Vec<Param> = Vec::new();
    let mut param_values: Vec<Vec<String>> = Vec::new();
    let mut internals: Vec<Internal> = Vec::new();
    let mut captures: BTreeMap<usize, String> = BTreeMap::new();
    let mut literal_or_typed = 0usize;
    let mut total_roles = 0usize;
    for (step, template) in templates.iter().enumerate() {
        let names: Vec<(&str, bool)> = template
            .iter()
            .flatten()
            .filter_map(|seg| match seg {
                Segment::Slot { name, variadic } => Some((name.as_str(), *variadic)),
                Segment::Text(_) => None,
            })
            .collect();
        for (index, (name, variadic)) in names.into_iter().enumerate() {
            total_roles += 1;
            let column: Vec<String> = values
                .iter()
                .map(|occ| occ[step][index].0.clone())
                .collect();
            let kinds: Vec<SlotKind> = values.iter().map(|occ| occ[step][index].1).collect();
            // A value redacted at ingest is a secret the tool must be given: a parameter of its
            // own, even when every occurrence shows the same placeholder.
            let secret = column.iter().any(|v| v.contains(PLACEHOLDER_START));
            if secret {
                literal_or_typed += 1;
            } else if column.iter().all(|v| *v == column[0]) {
                roles.insert((step, index), Role::Literal(column[0].clone()));
                literal_or_typed += 1;
                continue;
            }
            // The same values as an existing parameter: the same parameter.
            if !secret && let Some(p) = param_values.iter().position(|vals| *vals == column) {
                roles.insert((step, index), Role::Param(p));
                literal_or_typed += 1;
                continue;
            }
            // Printed by an earlier step in every occurrence: an internal variable.
            let source = (0..step).filter(|_| !secret).find(|&earlier| {
                fitting.iter().zip(&column).all(|(occ, v)| {
                    occ.outputs
                        .get(earlier)
                        .and_then(|o| o.as_deref())
                        .is_some_and(|o| printed(o, v))
                })
            });
            if let Some(from) = source {
                let var = captures
                    .entry(from)
                    .or_insert_with(|| format!("out_{}", from + 1))
                    .clone();
                internals.push(Internal {
                    name: var,
                    from_step: from,
                    to_step: step,
                });
                roles.insert((step, index), Role::Internal(internals.len() - 1));
                literal_or_typed += 1;
                continue;
            }
            let kind = param_kind(&kinds, &column);
            let distinct = {
                let mut d: Vec<&String> = column.iter().collect();
                d.sort();
                d.dedup();
                d.len()
            };
            if !secret && (kind != "string" && kind != "text" || distinct < n) {
                literal_or_typed += 1;
            }
            let mut base = param_name(name);
            if secret && (matches!(base.as_str(), "string" | "arg") || base.len() <= 1) {
                base = "secret".into();
            } else if base == "string" || base == "arg" {
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
            let mut counts: HashMap<&String, usize> = HashMap::new();
            for v in &column {
                *counts.entry(v).or_default() += 1;
            }
            let mut examples: Vec<(&String, usize)> = counts.into_iter().collect();
            examples.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            let flag = first.tokens[step]
                .slots
                .iter()
                .find(|s| s.value == values[0][step][index].2[0])
                .and_then(|s| s.flag.clone());
            params.push(Param {
                name: unique,
                kind: kind.to_owned(),
                named_from: match flag {
                    Some(f) => format!("flag {f}"),
                    None => format!(
                        "position {} of `{}`",
                        index + 1,
                        first.tokens[step].template
                    ),
                },
                examples: examples
                    .into_iter()
                    .take(5)
                    .map(|(v, _)| v.clone())
                    .collect(),
                variadic,
                secret,
            });
            param_values.push(column);
            roles.insert((step, index), Role::Param(params.len() - 1));
        }
    }

    let steps: Vec<Step> = templates
        .iter()
        .enumerate()
        .map(|(step, template)| {
            let words = fill_words(template, |index, lone_run| {
                match roles.get(&(step, index)) {
                    // A constant run of arguments (`git add a.rs b.rs` every time) stays a run
                    // of words, not one word holding them all.
                    Some(Role::Literal(_)) if lone_run => {
                        Filled::Spread(values[0][step][index].2.clone())
                    }
                    Some(Role::Literal(v)) => Filled::Piece(Piece::Literal(v.clone())),
                    Some(Role::Param(p)) => Filled::Piece(Piece::Param(params[*p].name.clone())),
                    Some(Role::Internal(i)) => {
                        Filled::Piece(Piece::Internal(internals[*i].name.clone()))
                    }
                    None => Filled::Piece(Piece::Literal(String::new())),
                }
            });
            let template_text = render(&words, |p| match p {
                Piece::Literal(t) => shell_quote(t),
                Piece::Param(n) | Piece::Internal(n) => format!("<{n}>"),
            });
            Step {
                template: template_text,
                words,
                key: first.tokens[step].key.clone(),
                agent_tool: first.tokens[step].kind == TokenKind::Tool,
                captures: captures.get(&step).cloned(),
                // Piped only when every occurrence piped it: the tool runs one way.
                piped: step > 0
                    && fitting
                        .iter()
                        .all(|occ| occ.piped.get(step).copied().unwrap_or(false)),
            }
        })
        .collect();
    let one_pipeline = steps.iter().skip(1).all(|s| s.piped);

    let evidence = fitting
        .iter()
        .enumerate()
        .take(max_evidence)
        .map(|(o, occ)| {
            let params_here: BTreeMap<String, String> = params
                .iter()
                .zip(&param_values)
                .map(|(p, vals)| (p.name.clone(), vals[o].clone()))
                .collect();
            let commands = occ
                .tokens
                .iter()
                .enumerate()
                .map(|(step, _)| {
                    let words = fill_words(&templates[step], |index, lone_run| {
                        let run = &values[o][step][index].2;
                        // Each argument of a run is a word of its own, as it was run.
                        if lone_run {
                            Filled::Spread(run.clone())
                        } else {
                            Filled::Piece(Piece::Literal(run.join(" ")))
                        }
                    });
                    render(&words, |p| match p {
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
            }
        })
        .collect();

    let cwds: Vec<Option<&str>> = fitting
        .iter()
        .map(|o| o.tokens.first().and_then(|t| t.cwd.as_deref()))
        .collect();
    let workspace_varies = cwds.iter().any(|c| *c != cwds[0]);
    Some(Aligned {
        steps,
        params,
        internals,
        evidence,
        consistency: if total_roles == 0 {
            1.0
        } else {
            literal_or_typed as f64 / total_roles as f64
        } * (n as f64 / occurrences.len() as f64),
        success_rate: fitting.iter().filter(|o| o.ok).count() as f64 / n as f64,
        workspace_varies,
    })
}

/// What fills one placeholder of a template.
enum Filled {
    /// A run of arguments, one word each (only for a placeholder that is a word of its own).
    Spread(Vec<String>),
    /// One piece of the word.
    Piece(Piece),
}

/// The words of one step's template, each placeholder filled by `fill(index, lone_run)`, where
/// `index` counts the step's placeholders and `lone_run` says the placeholder is a variadic one
/// standing alone in its word (so its run may be spread over several words).
fn fill_words(
    template: &[Vec<Segment>],
    mut fill: impl FnMut(usize, bool) -> Filled,
) -> Vec<Vec<Piece>> {
    let mut index = 0;
    let mut words = Vec::new();
    for word in template {
        let lone_run = matches!(word.as_slice(), [Segment::Slot { variadic: true, .. }]);
        let mut pieces = Vec::new();
        for seg in word {
            match seg {
                Segment::Text(t) => pieces.push(Piece::Literal(t.clone())),
                Segment::Slot { .. } => {
                    match fill(index, lone_run) {
                        Filled::Spread(items) if lone_run => {
                            words.extend(items.into_iter().map(|item| vec![Piece::Literal(item)]));
                        }
                        Filled::Spread(items) => pieces.push(Piece::Literal(items.join(" "))),
                        Filled::Piece(piece) => pieces.push(piece),
                    }
                    index += 1;
                }
            }
        }
        if !lone_run || !pieces.is_empty() {
            words.push(pieces);
        }
    }
    words
}

/// Renders words of pieces as a command line: pieces of a word concatenated (a word of several
/// pieces is quoted as a whole when one of them is a literal needing quotes).
fn render(words: &[Vec<Piece>], piece: impl Fn(&Piece) -> String) -> String {
    words
        .iter()
        .map(|w| w.iter().map(&piece).collect::<String>())
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
            a.steps[1].template, "mysql -e 'select 1' -p<secret_2> -u root shop",
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
}
