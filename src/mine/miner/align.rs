//! Steps 3 and 4, **rank**, **align** and **score**: the candidates best first by an upper
//! bound, then their occurrences read again, aligned into literals and parameters, and scored.

use std::collections::{BTreeSet, HashMap};

use super::find::{step_positions, upper_bound};
use super::fold::Span;
use super::load::{Loaded, Refetch, Session};
use super::{Found, MineError, MineOptions, Occ};
use crate::mine::line::{self, RawOccurrence, Shell};
use crate::mine::params::{AlignInput, Aligned, align};
use crate::mine::pattern::{Pattern, PatternKind, Replay, Trigger, pattern_id};
use crate::mine::score::{SECONDS_PER_CALL, ScoreInput, score};
use crate::mine::token::{Token, TokenKind};

/// Aligns a pattern's occurrences. For a recovery (`trigger`), the first step is the failure:
/// an occurrence succeeded when the steps after it did.
pub(super) fn align_occurrences(
    refetch: &mut Refetch<'_>,
    occs: &[Occ<'_>],
    trigger: bool,
    options: &MineOptions,
    lines: bool,
) -> Result<Option<(Aligned, Vec<u64>)>, MineError> {
    let mut inputs = Vec::new();
    let mut raw = Vec::new();
    let mut durations = Vec::new();
    for occ in occs.iter().take(options.max_occurrences) {
        let s = occ.session;
        let mut tokens: Vec<Token> = Vec::new();
        let mut outputs = Vec::new();
        let mut piped = Vec::new();
        let mut ok = true;
        let mut rows_seen = BTreeSet::new();
        let mut fits = true;
        // The lines of its actions, each once, for [`line::attach`].
        let mut lines: Vec<String> = Vec::new();
        let mut all_lines = true;
        let mut shell = Shell::default();
        let mut agent = String::new();
        for (i, &pos) in occ.positions.iter().enumerate() {
            let row = s.rows[s.token_row[pos] as usize];
            rows_seen.insert(s.token_row[pos]);
            if !(trigger && i == 0) {
                ok &= row.ok != Some(false);
            }
            let within = pos - row.first_token as usize;
            match refetch.action(&s.id, row.seq)? {
                Some((action_tokens, output, line, source)) if within < action_tokens.len() => {
                    if rows_seen.len() > lines.len() {
                        match line {
                            Some(l) if action_tokens.iter().all(|t| t.kind == TokenKind::Shell) => {
                                lines.push(l.clone());
                            }
                            _ => all_lines = false,
                        }
                        shell = Shell::of(*source);
                        agent = source.as_str().to_owned();
                    }
                    let token = &action_tokens[within];
                    let same_action =
                        i > 0 && s.token_row[occ.positions[i - 1]] == s.token_row[pos];
                    piped.push(
                        same_action
                            && tokens
                                .last()
                                .is_some_and(|prev| token.pipe_from == Some(prev.step)),
                    );
                    tokens.push(token.clone());
                    outputs.push(output.clone());
                }
                _ => fits = false,
            }
        }
        if !fits {
            continue;
        }
        let total: Option<u64> = rows_seen
            .iter()
            .map(|&r| s.rows[r as usize].duration())
            .sum();
        durations.extend(total);
        let first = s.rows[s.token_row[occ.positions[0]] as usize].seq;
        let last =
            s.rows[s.token_row[*occ.positions.last().unwrap_or(&occ.positions[0])] as usize].seq;
        let replay = whole_pipeline_replay(s, occ, &tokens, &piped, &outputs);
        raw.push(RawOccurrence {
            session: s.id.clone(),
            seqs: (first, last),
            lines: all_lines.then_some(lines),
            shell,
            agent,
        });
        inputs.push(AlignInput {
            session: s.id.clone(),
            seqs: (first, last),
            tokens,
            outputs,
            piped,
            replay,
            ok,
        });
    }
    // A word its shell computed (`$(date +%F)`) is no value the log holds: the commands do not
    // align with it, but a line keeps it as it was typed.
    let aligned = align(&inputs, options.max_evidence).or_else(|| {
        let unknown = |r: &RawOccurrence| {
            r.lines.iter().flatten().any(|l| {
                refetch
                    .lines
                    .parse(l)
                    .is_none_or(|parsed| parsed.reads_variables())
            })
        };
        if trigger || raw.iter().any(unknown) {
            return None;
        }
        let typed: Vec<AlignInput> = inputs
            .iter()
            .map(|input| {
                let mut input = input.clone();
                for token in &mut input.tokens {
                    token.computed = false;
                }
                input
            })
            .collect();
        let mut aligned = align(&typed, options.max_evidence)?;
        line::attach(&mut aligned, &raw, options.max_evidence, &mut refetch.lines)
            .then_some(aligned)
    });
    let Some(mut aligned) = aligned else {
        return Ok(None);
    };
    // A habit of command lines is those lines, with holes: not a recovery (its failure is
    // matched by its error), not values passed between steps, not a text transformation the
    // log replays whole.
    if lines
        && !trigger
        && aligned.internals.is_empty()
        && aligned.evidence.iter().all(|e| e.replay.is_none())
    {
        line::attach(&mut aligned, &raw, options.max_evidence, &mut refetch.lines);
    }
    Ok(Some((aligned, durations)))
}

/// The input and output of an occurrence that is one whole action, a pipeline fed data
/// written out in its line, that succeeded with its output recorded in full.
fn whole_pipeline_replay(
    session: &Session,
    occ: &Occ<'_>,
    tokens: &[Token],
    piped: &[bool],
    outputs: &[Option<String>],
) -> Option<Replay> {
    let first_row = *session.token_row.get(*occ.positions.first()?)?;
    let row = session.rows.get(first_row as usize)?;
    let whole = occ.positions.len() == usize::from(row.tokens)
        && occ
            .positions
            .iter()
            .all(|&p| session.token_row.get(p) == Some(&first_row));
    let stdin = tokens.first()?.stdin.clone()?;
    let stdout = outputs.first()?.clone()?;
    // A cut or redacted output is not what the pipeline printed.
    let complete = !stdout.contains(" bytes omitted …]") && !stdout.contains("[REDACTED:");
    (whole && row.ok == Some(true) && piped.iter().skip(1).all(|&p| p) && complete)
        .then_some(Replay { stdin, stdout })
}

pub(super) fn median(values: &mut [u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[values.len() / 2])
}

/// Sorts the candidates by the upper bound of their score, best first (ties by their steps).
pub(super) fn rank(found: &mut [Found<'_>]) {
    for f in found.iter_mut() {
        f.bound = upper_bound(f);
    }
    found.sort_by(|a, b| {
        b.bound
            .total_cmp(&a.bound)
            .then_with(|| a.keys.cmp(&b.keys))
    });
}

/// A candidate aligned and scored: the pattern, where its occurrences lie (those looked at),
/// and the candidate it came from (its index in the ranked list).
pub(super) struct Ranked {
    pub(super) pattern: Pattern,
    pub(super) spans: Vec<Span>,
    pub(super) found: usize,
}

/// Aligns the ranked candidates, best first, up to [`MineOptions::max_patterns_per_kind`] of
/// each kind, and scores them; one pattern per id (the best supported), best score first, each
/// with the spans of all its occurrences held (the repeats not aligned yet too: a span is a few
/// positions, what the fold compares).
pub(super) fn align_and_score(
    refetch: &mut Refetch<'_>,
    loaded: &Loaded,
    found: &[Found<'_>],
    options: &MineOptions,
) -> Result<Vec<Ranked>, MineError> {
    let mut per_kind: HashMap<PatternKind, usize> = HashMap::new();
    let mut patterns: HashMap<String, Ranked> = HashMap::new();
    for (index, f) in found.iter().enumerate() {
        let taken = per_kind.entry(f.kind).or_default();
        if *taken >= options.max_patterns_per_kind {
            continue;
        }
        let to_align = &f.occurrences[..f.aligned.min(f.occurrences.len())];
        let Some((aligned, durations)) =
            align_occurrences(refetch, to_align, f.trigger.is_some(), options, false)?
        else {
            continue;
        };
        // A single command is a habit only when its arguments vary.
        if f.single && aligned.params.is_empty() {
            continue;
        }
        *taken += 1;
        let pattern = scored_pattern(f, aligned, durations);
        match patterns.get(&pattern.id) {
            Some(existing) if existing.pattern.support >= pattern.support => {}
            _ => {
                let spans = spans_of(loaded, f, options);
                patterns.insert(
                    pattern.id.clone(),
                    Ranked {
                        pattern,
                        spans,
                        found: index,
                    },
                );
            }
        }
    }
    let mut patterns: Vec<Ranked> = patterns.into_values().collect();
    best_first(&mut patterns);
    Ok(patterns)
}

/// Where all the occurrences `f` holds lie: those it holds as steps, and its further repeats.
fn spans_of(loaded: &Loaded, f: &Found<'_>, options: &MineOptions) -> Vec<Span> {
    let more = f.more.iter().filter_map(|o| {
        let positions = step_positions(loaded, &f.items, o, Some(options.max_gap))?;
        Span::of(&Occ {
            session: loaded.sessions.get(o.seq as usize)?,
            positions,
        })
    });
    f.occurrences
        .iter()
        .filter_map(Span::of)
        .chain(more)
        .collect()
}

/// Best score first (ties by id).
pub(super) fn best_first(patterns: &mut [Ranked]) {
    patterns.sort_by(|a, b| {
        b.pattern
            .score
            .total_cmp(&a.pattern.score)
            .then_with(|| a.pattern.id.cmp(&b.pattern.id))
    });
}

/// The pattern an aligned candidate becomes: its steps (a recovery's first one its trigger),
/// parameters and evidence, scored.
pub(super) fn scored_pattern(f: &Found<'_>, aligned: Aligned, mut durations: Vec<u64>) -> Pattern {
    let median_ms = median(&mut durations);
    let mut steps = aligned.steps;
    let trigger = match &f.trigger {
        Some(template) if !steps.is_empty() => Some(Trigger {
            step: steps.remove(0),
            error_template: template.clone(),
        }),
        _ => None,
    };
    let key_refs: Vec<&str> = f.keys.iter().map(String::as_str).collect();
    let id = pattern_id(f.kind, &key_refs, f.trigger.as_deref());
    let step_count = steps.len() as u32 + u32::from(trigger.is_some());
    let mut input = score_input(
        f,
        median_ms,
        aligned.consistency,
        aligned.success_rate,
        step_count,
        aligned.params.len() as u32,
    );
    input.links_passing = links_passing(&steps);
    let scored = score(&input);
    let mut pattern = Pattern {
        id,
        kind: f.kind,
        support: f.support,
        occurrences: f.count,
        score: scored.score,
        score_parts: scored,
        templates: Vec::new(),
        steps,
        params: aligned.params,
        internals: aligned.internals,
        lines: aligned.lines,
        shell: aligned.shell,
        workspace_varies: aligned.workspace_varies,
        trigger,
        median_ms,
        evidence: aligned.evidence,
        folded_into: None,
        folded: Vec::new(),
        expansions: Vec::new(),
        unknown_programs: Vec::new(),
    };
    pattern.templates = pattern.steps_text();
    pattern
}

/// How many links of a sequence (two consecutive steps) a value passes over: a parameter or a
/// printed value used on both sides of it, or a pipe.
pub(super) fn links_passing(steps: &[crate::mine::pattern::Step]) -> u32 {
    use crate::mine::pattern::Piece;
    let names = |s: &crate::mine::pattern::Step| -> BTreeSet<String> {
        s.words
            .iter()
            .flatten()
            .filter_map(|p| match p {
                Piece::Param(n) | Piece::Internal(n) => Some(n.clone()),
                _ => None,
            })
            .collect()
    };
    let per_step: Vec<BTreeSet<String>> = steps.iter().map(names).collect();
    (1..steps.len())
        .filter(|&at| {
            steps[at].piped
                || per_step[..at]
                    .iter()
                    .flatten()
                    .any(|n| per_step[at..].iter().any(|later| later.contains(n)))
        })
        .count() as u32
}

pub(super) fn score_input(
    f: &Found<'_>,
    median_ms: Option<u64>,
    consistency: f64,
    success_rate: f64,
    steps: u32,
    params: u32,
) -> ScoreInput {
    let n = f64::from(f.count);
    let (calls_saved, seconds_saved) = match f.kind {
        PatternKind::Sequence => {
            let calls = n * (f.calls_per_occurrence - 1.0).max(0.0);
            (calls, calls * SECONDS_PER_CALL)
        }
        PatternKind::Recovery => {
            let calls = n * f.calls_per_occurrence;
            (calls, calls * SECONDS_PER_CALL)
        }
        // A slow operation's time is what a tool (cached, incremental, in the background) can
        // give back; counted at half, since some of it is the work itself.
        PatternKind::Slow => (0.0, n * median_ms.unwrap_or(0) as f64 / 1000.0 * 0.5),
    };
    ScoreInput {
        support: f.support,
        occurrences: f.count,
        calls_saved,
        seconds_saved: if f.kind == PatternKind::Slow && median_ms.is_none() {
            // Before alignment: the bound assumes the slowest case.
            n * 3600.0
        } else {
            seconds_saved
        },
        steps,
        params,
        recovery: f.kind == PatternKind::Recovery,
        consistency,
        success_rate,
        association: f.association,
        links_passing: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::mine::miner::mine;

    #[test]
    fn candidates_are_ranked_by_their_upper_bound() {
        let candidate = |keys: &[&str], support, count| Found {
            kind: PatternKind::Sequence,
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            support,
            count,
            occurrences: Vec::new(),
            more: Vec::new(),
            items: Box::default(),
            trigger: None,
            calls_per_occurrence: keys.len() as f64,
            single: false,
            association: None,
            bound: 0.0,
            aligned: 0,
        };
        let mut found = vec![
            candidate(&["a", "b"], 3, 3),
            candidate(&["c", "d"], 30, 40),
            candidate(&["a", "a"], 3, 3),
        ];
        rank(&mut found);
        let order: Vec<String> = found.iter().map(|f| f.keys.join(" ")).collect();
        assert_eq!(order, ["c d", "a a", "a b"]);
        assert!(found[0].bound > found[1].bound);
        assert_eq!(found[1].bound, found[2].bound);
    }

    #[test]
    fn a_step_keeps_every_command_of_its_action() {
        // `git add X && git status --short`, then `git commit -m …`: the commit habit starts
        // with the `git add` run in the same action, or it commits nothing.
        let mut calls = Vec::new();
        for (i, (file, message)) in [
            ("src/a.rs", "Fix the race"),
            ("README.md", "Document env vars"),
            ("pyproject.toml", "Pin pytest"),
            ("src/b.rs", "Retry on timeout"),
        ]
        .iter()
        .enumerate()
        {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(ONE_OFFS[i].to_owned()));
            calls.push(run(format!("git add {file} && git status --short")));
            calls.push(run(format!("git commit -m '{message}'")));
            calls.push(run(ONE_OFFS[i + 1].to_owned()));
        }
        // One session stages apart, then checks and commits: `git status → git commit` is seen
        // in 5 sessions, more than the whole habit, so closure alone does not hide it.
        for (i, c) in [
            "git add src/c.rs",
            "cargo test",
            "git status --short",
            "git commit -m 'Bump deps'",
        ]
        .iter()
        .enumerate()
        {
            calls.push(("s9".into(), (*c).to_owned(), Some(true), None));
            calls.push(("s9".into(), ONE_OFFS[i].to_owned(), Some(true), None));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let commits: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.templates.iter().any(|t| t.starts_with("git commit")))
            .collect();
        assert!(!commits.is_empty(), "{summary:#?}");
        for p in commits {
            assert!(
                p.templates[0].starts_with("git add"),
                "a pattern lost the `git add` of its first action: {summary:#?}"
            );
        }
    }

    #[test]
    fn an_occurrence_with_a_value_its_shell_computed_is_left_out_of_the_habit() {
        // Six sessions build then archive; in two the archive's name is a shell variable of
        // the user's, whose value the log does not hold. A habit run only that way is none.
        let mut calls = Vec::new();
        for i in 0..6 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("make -C m{i}")));
            let archive = if i < 2 {
                "$out".to_owned()
            } else {
                format!("a{i}.tgz")
            };
            calls.push(run(format!("tar czf {archive} m{i}/build")));
            // Elsewhere: further than the gap from the habit.
            calls.push(run(format!("after{i} --check")));
            calls.push(run(format!("then{i} --check")));
            calls.push(run(format!("last{i} --check")));
            calls.push(run(format!("cmake -S d{i}")));
            calls.push(run("cpack -G TGZ $gen".to_owned()));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let habit = report
            .patterns
            .iter()
            .find(|p| p.templates.len() == 2 && p.templates[1].starts_with("tar czf"))
            .unwrap_or_else(|| panic!("{summary:#?}"));
        assert!(
            habit
                .evidence
                .iter()
                .all(|e| e.commands.iter().all(|c| !c.contains('$'))),
            "{habit:#?}"
        );
        assert_eq!(habit.evidence.len(), 4, "{habit:#?}");
        assert!(
            report
                .patterns
                .iter()
                .all(|p| p.templates.iter().all(|t| !t.contains("cpack"))),
            "{summary:#?}"
        );
    }

    #[test]
    fn a_value_used_on_both_sides_of_a_link_or_a_pipe_passes_over_it() {
        use crate::mine::pattern::{Piece, Step};
        let step = |words: &[&str], piped: bool| Step {
            template: String::new(),
            words: words
                .iter()
                .map(|w| match w.strip_prefix('$') {
                    Some(name) => vec![Piece::Param(name.to_owned())],
                    None => vec![Piece::Literal((*w).to_owned())],
                })
                .collect(),
            globs: Vec::new(),
            key: String::new(),
            captures: None,
            piped,
            agent_tool: false,
        };
        // `mkdir $dir → cp $file $dir → ls`, then `| wc -l`.
        let steps = [
            step(&["mkdir", "$dir"], false),
            step(&["cp", "$file", "$dir"], false),
            step(&["ls"], false),
            step(&["wc", "-l"], true),
        ];
        assert_eq!(links_passing(&steps), 2);
        assert_eq!(links_passing(&steps[..1]), 0);
        assert_eq!(
            links_passing(&[step(&["make"], false), step(&["open"], false)]),
            0
        );
    }

    #[test]
    fn a_consistent_habit_never_scores_zero() {
        // The commit message is free text: no slot of the habit is typed.
        let mut calls = Vec::new();
        for (i, message) in ["Fix the race", "Document env vars", "Pin pytest"]
            .iter()
            .enumerate()
        {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("git add src/f{i}.py")));
            calls.push(run(format!("git commit -m '{message}'")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let p = &starting_with(&report, "git add")[0];
        assert!(p.score > 20.0, "{p:#?}");
        assert!(p.score_parts.confidence > 0.0);
    }
}
