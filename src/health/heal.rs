//! What a repair of a failing tool version is made from, and the status the health stage's
//! own actions give a tool.
//!
//! - [`new_evidence`]: how the agents run the tool's commands *now*. The newest successful
//!   commands in the stored actions with the same program and sub-command as one of the tool's
//!   steps; when the newest of them is written differently from the step (a flag renamed, a
//!   sub-command moved), that is evidence the environment changed.
//! - [`patch_spec`]: the template generator's repair: the step's literal words replaced by the
//!   ones the evidence uses, the parameters kept (so the interface, and the regression cases,
//!   still fit), the dry-run cases rebuilt from the evidence.
//! - [`regression_cases`]: from the runs that failed in use: each failing run's parameters
//!   again, in a dry run (the parameters must still be accepted) and for real, where the error
//!   the run showed must not come back.
//! - [`overall_status`]: HEALING while a repair is in the works, HEALED once a repaired version
//!   runs clean, REQUIRES_ATTENTION when the health stage cannot act on its own.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde_json::{Map, Value};

use super::actions::{self, ActionKind};
use super::executions::VersionHealth;
use super::score::{HealthPolicy, Status};
use crate::action::stored::{self as actions_table, CallInput};
use crate::generate::logged;
use crate::generate::spec::{Occurrence, Piece, StepSpec, ToolSpec};
use crate::mine::shell;
use crate::package::manifest::Evidence;
use crate::store::StoreError;
use crate::validate::cases::{Case, Expect};

/// Successful actions looked at for evidence, newest first.
const EVIDENCE_WINDOW: u32 = 500;

/// Evidence commands kept.
const MAX_EVIDENCE: usize = 5;

/// Failing runs turned into regression cases.
const MAX_REGRESSION_RUNS: usize = 3;

/// A command an agent ran successfully, as evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceCommand {
    /// The session it was run in.
    pub session: String,
    /// Its action's position in the session.
    pub seq: u64,
    /// The simple command's words (quotes removed).
    pub words: Vec<String>,
    /// The command line as written.
    pub line: String,
}

/// The program word as the step compares it: its file name.
fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The step's literal word at `i`, if the whole word is literal.
fn literal(step: &StepSpec, i: usize) -> Option<&str> {
    match step.words.get(i)?.as_slice() {
        [Piece::Literal(t)] => Some(t.as_str()),
        _ => None,
    }
}

/// Whether `words` run the same program and sub-command as `step` (the first argument, when
/// the step's is a literal word that is not an option).
fn same_endpoint(step: &StepSpec, words: &[String]) -> bool {
    let (Some(program), Some(first)) = (literal(step, 0), words.first()) else {
        return false;
    };
    if base(program) != base(first) {
        return false;
    }
    match literal(step, 1) {
        Some(sub) if !sub.starts_with('-') => words.get(1).map(String::as_str) == Some(sub),
        _ => true,
    }
}

/// The options (`-x`, `--name`, without `=value`) among literal words.
fn options<'a>(words: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = words
        .filter(|w| w.starts_with('-') && *w != "-" && *w != "--")
        .map(|w| w.split('=').next().unwrap_or(w))
        .collect();
    out.sort_unstable();
    out
}

/// Whether `words` are written differently from `step`: other options, or (same length) another
/// literal word where the step has one.
fn differs(step: &StepSpec, words: &[String]) -> bool {
    let step_options = options((0..step.words.len()).filter_map(|i| literal(step, i)));
    let used = options(words.iter().map(String::as_str));
    if step_options != used {
        return true;
    }
    words.len() == step.words.len()
        && (0..words.len()).any(|i| literal(step, i).is_some_and(|l| l != words[i]))
}

/// The tool's steps, the failing command of a recovery included.
fn steps(spec: &ToolSpec) -> impl Iterator<Item = &StepSpec> {
    spec.trigger_step.iter().chain(spec.steps.iter())
}

/// How the agents now run the commands of `spec`'s steps, when that changed: the newest
/// successful commands (at most five) with a step's program and sub-command, if the newest of
/// them is written differently from the step. Empty when the newest ones agree with the tool.
pub fn new_evidence(
    conn: &Connection,
    spec: &ToolSpec,
) -> Result<Vec<EvidenceCommand>, StoreError> {
    // Each program once, in step order: every step is matched against each command found.
    let mut programs: Vec<&str> = Vec::new();
    for program in steps(spec).filter_map(|s| literal(s, 0)).map(base) {
        if !programs.contains(&program) {
            programs.push(program);
        }
    }
    let mut found = Vec::new();
    // Each step's newest matching command decides whether that step changed.
    let mut decided: Vec<Option<bool>> = vec![None; steps(spec).count()];
    for program in programs {
        let rows = actions_table::recent_successes_mentioning(conn, program, EVIDENCE_WINDOW)?;
        for CallInput {
            session,
            seq,
            input,
        } in rows
        {
            let Ok(input) = serde_json::from_str::<Value>(&input) else {
                continue;
            };
            let Some(line) = input
                .get("command")
                .or_else(|| input.get("cmd"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let Ok(commands) = shell::parse(line) else {
                continue;
            };
            for command in commands {
                let words: Vec<String> = command.words.iter().map(|w| w.text.clone()).collect();
                for (i, step) in steps(spec).enumerate() {
                    if !same_endpoint(step, &words) {
                        continue;
                    }
                    let changed = differs(step, &words);
                    if decided[i].is_none() {
                        decided[i] = Some(changed);
                    }
                    if decided[i] == Some(true)
                        && changed
                        && found.len() < MAX_EVIDENCE
                        && !found.iter().any(|f: &EvidenceCommand| f.words == words)
                    {
                        found.push(EvidenceCommand {
                            session: session.clone(),
                            seq: seq.max(0) as u64,
                            line: line.to_owned(),
                            words: words.clone(),
                        });
                    }
                }
            }
        }
    }
    Ok(found)
}

/// A spec repaired from evidence, with what changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Patched {
    /// The repaired spec (same name, parameters and interface).
    pub spec: ToolSpec,
    /// Each change, for the proposal: `` `--target` → `--platform` in `fakecli build …` ``.
    pub changes: Vec<String>,
}

/// The template generator's repair: each step that an evidence command matches word for word
/// in length gets the evidence's literal words, keeping its parameters; the dry-run cases are
/// rebuilt from the evidence's values. `None` when no step could be patched this way (a flag
/// added or removed needs a model).
pub fn patch_spec(spec: &ToolSpec, evidence: &[EvidenceCommand]) -> Option<Patched> {
    let mut patched = spec.clone();
    let mut changes = Vec::new();
    let mut renamed: Vec<(String, String)> = Vec::new();
    let mut occurrences = Vec::new();
    let n_trigger = usize::from(spec.trigger_step.is_some());
    for (index, step) in steps(spec).enumerate() {
        let Some(ev) = evidence
            .iter()
            .find(|e| e.words.len() == step.words.len() && same_endpoint(step, &e.words))
        else {
            continue;
        };
        let mut new_step = step.clone();
        let mut step_changes = Vec::new();
        let mut values = BTreeMap::new();
        for (i, word) in step.words.iter().enumerate() {
            match word.as_slice() {
                [Piece::Literal(old)] if *old != ev.words[i] => {
                    step_changes.push(format!("`{old}` → `{}`", ev.words[i]));
                    renamed.push((old.clone(), ev.words[i].clone()));
                    new_step.words[i] = vec![Piece::Literal(ev.words[i].clone())];
                }
                [Piece::Param(name)] => {
                    values.insert(name.clone(), ev.words[i].clone());
                }
                _ => {}
            }
        }
        if step_changes.is_empty() {
            continue;
        }
        changes.push(format!(
            "{} in `{}`",
            step_changes.join(", "),
            step.display()
        ));
        if index < n_trigger {
            patched.trigger_step = Some(new_step);
        } else {
            patched.steps[index - n_trigger] = new_step;
        }
        for e in evidence
            .iter()
            .filter(|e| e.words.len() == step.words.len())
        {
            let mut params = values.clone();
            for (i, word) in step.words.iter().enumerate() {
                if let [Piece::Param(name)] = word.as_slice() {
                    params.insert(name.clone(), e.words[i].clone());
                }
            }
            occurrences.push((e, params, index));
        }
    }
    if changes.is_empty() {
        return None;
    }
    // Parameter descriptions quote the steps (`position 1 of `x --target ‹string›``).
    for p in &mut patched.params {
        for (old, new) in &renamed {
            p.description = p
                .description
                .replace(&format!(" {old} "), &format!(" {new} "));
        }
    }
    let complete: Vec<Occurrence> = occurrences
        .into_iter()
        .filter(|(_, params, _)| patched.params.iter().all(|p| params.contains_key(&p.name)))
        .map(|(e, params, index)| {
            // The evidence's command as logged, the other steps as the repaired tool runs
            // them (the evidence shows one command, not a whole occurrence).
            let mut logged = logged::rendered_argv(&patched, &params);
            let last = logged.len().saturating_sub(1);
            for (i, argv) in logged.iter_mut().enumerate() {
                let step = if n_trigger == 1 && i == last { 0 } else { i };
                if step == index {
                    argv.clone_from(&e.words);
                }
            }
            Occurrence {
                evidence: Evidence {
                    session: e.session.clone(),
                    first_seq: e.seq,
                    last_seq: e.seq,
                },
                commands: patched.dry_run_lines(&params),
                params,
                replay: None,
                logged,
                lines: Vec::new(),
                failure_output: None,
            }
        })
        .collect();
    if !complete.is_empty() {
        patched.occurrences = complete;
    } else {
        // No evidence gave every parameter: the old occurrences' values, run the new way.
        let lines: Vec<Vec<String>> = patched
            .occurrences
            .iter()
            .map(|o| patched.dry_run_lines(&o.params))
            .collect();
        let argvs: Vec<Vec<Vec<String>>> = patched
            .occurrences
            .iter()
            .map(|o| logged::rendered_argv(&patched, &o.params))
            .collect();
        for ((occ, commands), argv) in patched.occurrences.iter_mut().zip(lines).zip(argvs) {
            occ.commands = commands;
            occ.logged = argv;
        }
    }
    Some(Patched {
        spec: patched,
        changes,
    })
}

/// Regression cases from the version's failing runs (distinct parameters, newest first, at
/// most three runs): each run's parameters in a dry run, which must succeed, and for real,
/// where the error the run showed must not come back.
pub fn regression_cases(
    conn: &Connection,
    tool: &str,
    version: &str,
) -> Result<Vec<Case>, StoreError> {
    let rows = super::executions::failed_runs_with_params(conn, tool, version, 200)?;
    let mut seen: Vec<Map<String, Value>> = Vec::new();
    let mut cases = Vec::new();
    for run in rows {
        let excerpt = run.error_excerpt;
        let Ok(Value::Object(params)) = serde_json::from_str::<Value>(&run.params) else {
            continue;
        };
        if seen.contains(&params) {
            continue;
        }
        let error = super::executions::key_line(excerpt.as_deref().unwrap_or("")).to_owned();
        let shown: String = serde_json::to_string(&params).unwrap_or_default();
        cases.push(Case {
            name: format!(
                "regression: the parameters of a run that failed in use ({shown}) are accepted"
            ),
            params: Some(params.clone()),
            args: None,
            dry_run: true,
            stdin: None,
            expect: Expect {
                exit_code: Some(0),
                ..Expect::default()
            },
        });
        if !error.is_empty() {
            cases.push(Case {
                name: format!("regression: a run with {shown} no longer fails with `{error}`"),
                params: Some(params.clone()),
                args: None,
                dry_run: false,
                stdin: None,
                expect: Expect {
                    output_excludes: vec![error],
                    ..Expect::default()
                },
            });
        }
        seen.push(params);
        if seen.len() >= MAX_REGRESSION_RUNS {
            break;
        }
    }
    Ok(cases)
}

/// A tool's status, the health stage's own actions considered: HEALING while a repair of the
/// tool is being made or awaits review; REQUIRES_ATTENTION when a call for attention was raised
/// for this version, or it fails with an error that is not auto-healable, or its heal attempts
/// are used up; HEALED when this version is a repair and scores HEALTHY; else the score's.
pub fn overall_status(
    conn: &Connection,
    health: &VersionHealth,
    policy: &HealthPolicy,
) -> Result<(Status, Option<String>), crate::generate::candidates::CandidateError> {
    if let Some(c) = crate::generate::candidates::open_repair(conn, &health.tool)? {
        return Ok((
            Status::Healing,
            Some(format!(
                "repair {} is {}",
                c.id,
                c.state.as_str().replace('-', " ")
            )),
        ));
    }
    let by_score = health.status;
    let attention = actions::history(conn, &health.tool, 20)?
        .into_iter()
        .find(|a| a.version == health.version && a.action == ActionKind::Attention.as_str());
    if let Some(a) = attention
        && by_score != Status::Healthy
    {
        return Ok((Status::RequiresAttention, Some(a.detail)));
    }
    if matches!(by_score, Status::Failing | Status::Degraded) {
        if let Some(issue) = health.issues.iter().find(|i| !i.auto_heal) {
            return Ok((
                Status::RequiresAttention,
                Some(format!(
                    "{} errors are not repaired automatically (policy)",
                    issue.class.as_str()
                )),
            ));
        }
        let attempts = actions::count(conn, &health.tool, &health.version, ActionKind::Heal)?;
        if attempts >= policy.max_heal_attempts {
            return Ok((
                Status::RequiresAttention,
                Some(format!(
                    "{attempts} heal attempts made (health.max_heal_attempts)"
                )),
            ));
        }
    }
    if by_score == Status::Healthy && health.runs > 0 {
        let repaired =
            crate::generate::candidates::made_version(conn, &health.tool, &health.version)?
                .is_some_and(|c| c.origin == "heal");
        if repaired {
            return Ok((
                Status::Healed,
                Some("a repaired version that runs clean".into()),
            ));
        }
    }
    Ok((by_score, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{Action, ActionResult, Source};
    use crate::generate::spec::{ParamKind, ParamSpec};

    fn lit(t: &str) -> Vec<Piece> {
        vec![Piece::Literal(t.into())]
    }

    fn spec() -> ToolSpec {
        let mut spec = crate::generate::template::tests_support::sequence_spec();
        spec.params = vec![ParamSpec {
            name: "target".into(),
            kind: ParamKind::String,
            description: "the target".into(),
            required: true,
            examples: vec!["core".into()],
            variadic: false,
        }];
        spec.steps = vec![StepSpec {
            line: Default::default(),
            words: vec![
                lit("./fakecli"),
                lit("build"),
                lit("--target"),
                vec![Piece::Param("target".into())],
            ],
            globs: Vec::new(),
            captures: None,
            piped: false,
        }];
        spec.trigger_step = None;
        spec
    }

    fn evidence(line: &str, seq: u64) -> EvidenceCommand {
        EvidenceCommand {
            session: "s".into(),
            seq,
            words: line.split(' ').map(str::to_owned).collect(),
            line: line.into(),
        }
    }

    #[test]
    fn a_renamed_flag_is_patched_and_the_parameters_kept() {
        let s = spec();
        let ev = [
            evidence("./fakecli build --platform web", 9),
            evidence("./fakecli build --platform core", 7),
        ];
        let p = patch_spec(&s, &ev).expect("patched");
        assert_eq!(
            p.spec.steps[0].display(),
            "./fakecli build --platform <target>"
        );
        assert_eq!(p.spec.params.len(), s.params.len());
        assert_eq!(p.spec.params[0].name, "target");
        assert_eq!(
            p.changes,
            ["`--target` → `--platform` in `./fakecli build --target <target>`"]
        );
        let commands: Vec<_> = p
            .spec
            .occurrences
            .iter()
            .map(|o| o.commands.join(";"))
            .collect();
        assert_eq!(
            commands,
            [
                "./fakecli build --platform web",
                "./fakecli build --platform core"
            ]
        );
        // A flag added changes the length: templates cannot say where it goes.
        assert!(patch_spec(&s, &[evidence("./fakecli build --release --target x", 3)]).is_none());
    }

    #[test]
    fn evidence_is_the_newest_way_the_commands_are_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("s.db")).expect("store");
        let add = |conn: &mut Connection, seq: u64, command: &str, ok: bool| {
            let action = Action {
                session: "s".into(),
                seq,
                ts: None,
                source: Source::ClaudeCode,
                cwd: None,
                tool: "Bash".into(),
                input: serde_json::json!({"command": command}),
                call_id: None,
                parent_session: None,
                result: Some(ActionResult {
                    ok,
                    exit_code: None,
                    output: String::new(),
                    duration_ms: None,
                }),
            };
            crate::ingest::store::store_actions(conn, "/logs/s.jsonl", vec![action]).map(|_| ())
        };
        let s = spec();
        let (before, after) = store
            .call_blocking(move |conn| {
                add(conn, 1, "./fakecli build --target core", true)?;
                add(conn, 2, "cd x && ./fakecli build --target cli", true)?;
                let before = new_evidence(conn, &s)?;
                add(conn, 3, "./fakecli build --platform core", true)?;
                add(conn, 4, "./fakecli test --platform core", true)?;
                add(conn, 5, "./fakecli build --platfrm core", false)?;
                add(conn, 6, "./fakecli build --platform cli && echo ok", true)?;
                Ok((before, new_evidence(conn, &s)?))
            })
            .expect("store");
        assert!(
            before.is_empty(),
            "the tool's own form is no evidence: {before:?}"
        );
        let lines: Vec<_> = after.iter().map(|e| e.words.join(" ")).collect();
        assert_eq!(
            lines,
            [
                "./fakecli build --platform cli",
                "./fakecli build --platform core"
            ]
        );
    }
}
