//! `toolsmith generate`, `toolsmith new`, `toolsmith heal`, `toolsmith adopt`, `toolsmith
//! candidates` and `toolsmith show`: making candidates now, and looking at them.
//!
//! `generate` and `new` ask the daemon when one runs on this state directory (it is the
//! store's one writer); otherwise they run the generation loop in this process, on a small
//! runtime of their own (the model clients are asynchronous). `candidates` and `show` only
//! read: the store through a read-only connection, the staging area from disk.

use std::io::Write;

use serde_json::{Value, json};

use super::output::{self, Style};
use super::progress::Progress;
use super::{Cli, Failure, connect, load_config};
use crate::daemon::lock::{self, LockError};
use crate::exit::ExitCode;
use crate::generate::candidates::{self, Candidate, CandidateError, State};
use crate::generate::pipeline::{GenerateError, Job};
use crate::generate::staging::Staging;
use crate::store::{self, Store};

impl From<GenerateError> for Failure {
    fn from(err: GenerateError) -> Self {
        match err {
            GenerateError::Store(e) => e.into(),
            other => Failure::new(ExitCode::Failure, other.to_string()),
        }
    }
}

impl From<CandidateError> for Failure {
    fn from(err: CandidateError) -> Self {
        match err {
            CandidateError::Store(e) => e.into(),
            other => Failure::new(ExitCode::Failure, other.to_string()),
        }
    }
}

/// Runs `job` in the daemon when it holds the state directory, else in this process.
fn run_job(cli: &Cli, job: Job) -> Result<Value, Failure> {
    let config = load_config(cli)?;
    let progress = Progress::spinner(cli.global.json, "generating");
    run_job_with(&config, || connect(cli), job, &progress)
}

/// [`run_job`] with the configuration loaded, `connect` reaching the daemon when it holds the
/// state directory, and `progress` showing what each candidate is doing (the MCP server's
/// requests come this way, with a progress that draws nothing).
pub(super) fn run_job_with(
    config: &crate::config::Config,
    connect: impl FnOnce() -> Result<crate::control::client::Client, Failure>,
    job: Job,
    progress: &Progress,
) -> Result<Value, Failure> {
    crate::daemon::listener::ensure_private_dir(&config.paths.state.value)
        .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?;
    match lock::acquire(&config.lock_path()) {
        Ok(_lock) => {
            let store = Store::open(&config.store_path())?;
            let events = crate::events::EventBus::new();
            let generator = crate::health::repair::configured(config, store)
                .map_err(|e| Failure::new(ExitCode::InvalidConfig, e.to_string()))?
                .0
                .with_events(events.clone());
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    Failure::new(ExitCode::Failure, format!("cannot start a runtime: {e}"))
                })?;
            let report = runtime.block_on(async {
                // What each candidate is doing, on the progress line.
                let mut seen = events.subscribe();
                let line = progress.handle();
                let follow = tokio::spawn(async move {
                    while let Ok(event) = seen.recv().await {
                        line.say(progress_line(event.kind(), &event.data()));
                    }
                });
                // What a killed process left half-way is put back first (`run` does it).
                let report = generator.run(job).await;
                follow.abort();
                report
            });
            progress.done();
            Ok(json!(report?))
        }
        Err(LockError::Held { .. }) => {
            progress.say("the daemon is generating".into());
            // Params are an object (or nothing, for the pending work), as JSON-RPC wants.
            let params = match &job {
                Job::Pending => Value::Null,
                other => serde_json::to_value(other)
                    .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?,
            };
            let answer = connect()?.call_job("generate.run", params);
            progress.done();
            Ok(answer?)
        }
        Err(other) => Err(Failure::new(ExitCode::Failure, other.to_string())),
    }
}

/// The progress line for a generation event: which candidate is at which step.
fn progress_line(kind: &str, data: &Value) -> String {
    let id = data["id"].as_str().unwrap_or("?");
    let tool = data["tool"].as_str().unwrap_or("?");
    match kind {
        "candidate.attempt" => format!(
            "{tool} ({id}): attempt {} {}",
            data["attempt"],
            if data["passed"] == true {
                "passed"
            } else {
                "failed"
            }
        ),
        _ => format!(
            "{tool} ({id}): {}",
            kind.strip_prefix("candidate.")
                .unwrap_or(kind)
                .replace('_', " ")
        ),
    }
}

/// Prints a run's report; fails when an explicitly asked-for candidate failed.
fn print_report(
    cli: &Cli,
    report: &Value,
    explicit: bool,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let made = report["candidates"].as_array().cloned().unwrap_or_default();
    if cli.global.json {
        output::json(out, report)?;
    } else {
        for c in &made {
            let state = c["state"].as_str().unwrap_or("?");
            writeln!(
                out,
                "{}  {} {}  {}",
                c["id"].as_str().unwrap_or("?"),
                c["tool"].as_str().unwrap_or("?"),
                c["version"].as_str().unwrap_or(""),
                paint(style, state)
            )?;
            if let Some(reason) = c["reason"].as_str() {
                writeln!(out, "    {reason}")?;
            }
        }
        for skipped in report["skipped"].as_array().into_iter().flatten() {
            writeln!(out, "skipped: {}", skipped.as_str().unwrap_or_default())?;
        }
        if made.is_empty() {
            writeln!(
                out,
                "no candidates made: no new pattern scores at least generate.min_score \
                 (`toolsmith patterns` lists them; `toolsmith generate --pattern ID` takes one \
                 whatever its score)"
            )?;
        } else {
            writeln!(
                out,
                "see a candidate with `toolsmith show ID` (`--attempts` for every attempt)"
            )?;
        }
    }
    let failed = made.iter().find(|c| c["state"] == "failed");
    match failed {
        Some(c) if explicit => Err(Failure::new(
            ExitCode::Failure,
            format!(
                "candidate {} failed: {}",
                c["id"].as_str().unwrap_or("?"),
                c["reason"].as_str().unwrap_or("no reason recorded")
            ),
        )),
        _ => Ok(()),
    }
}

fn paint(style: Style, state: &str) -> String {
    match state.trim_end() {
        "awaiting-review" | "approved" => style.good(state),
        "failed" | "rejected" => style.bad(state),
        _ => style.warn(state),
    }
}

/// `toolsmith generate [--pattern ID]`.
pub(super) fn generate(
    cli: &Cli,
    pattern: Option<&str>,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let job = match pattern {
        Some(id) => Job::Pattern(id.to_owned()),
        None => Job::Pending,
    };
    let report = run_job(cli, job)?;
    print_report(cli, &report, pattern.is_some(), out, style)
}

/// `toolsmith new "WHAT" [--example CMD]...`.
pub(super) fn new(
    cli: &Cli,
    text: &str,
    examples: &[String],
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let report = run_job(
        cli,
        Job::Request {
            text: text.to_owned(),
            examples: examples.to_vec(),
            id: None,
            asker: None,
        },
    )?;
    print_report(cli, &report, true, out, style)
}

/// `toolsmith heal NAME`.
pub(super) fn heal(
    cli: &Cli,
    name: &str,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let report = run_job(
        cli,
        Job::Heal {
            tool: name.to_owned(),
            manual: true,
        },
    )?;
    print_report(cli, &report, true, out, style)
}

/// `toolsmith approve-spec ID`: the candidate's spec accepted, then generated (by the daemon
/// when it runs, as every generation). The UI's Accept button calls this.
pub(super) fn approve_spec(
    cli: &Cli,
    id: &str,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let report = run_job(cli, Job::AcceptSpec { id: id.to_owned() })?;
    print_report(cli, &report, true, out, style)
}

/// `toolsmith reject-spec ID --reason TEXT`. The UI's Reject button on a spec calls this.
pub(super) fn reject_spec(
    cli: &Cli,
    id: &str,
    reason: &str,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    if reason.trim().is_empty() {
        return Err(Failure::new(
            ExitCode::Usage,
            "--reason must say why: it is kept with the candidate",
        ));
    }
    let report = run_job(
        cli,
        Job::RejectSpec {
            id: id.to_owned(),
            reason: reason.to_owned(),
        },
    )?;
    print_report(cli, &report, true, out, style)
}

/// `toolsmith adopt NAME`.
pub(super) fn adopt(
    cli: &Cli,
    name: &str,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let report = run_job(
        cli,
        Job::Adopt {
            tool: name.to_owned(),
        },
    )?;
    print_report(cli, &report, true, out, style)
}

pub(super) fn read_store(cli: &Cli) -> Result<(rusqlite::Connection, std::path::PathBuf), Failure> {
    let config = load_config(cli)?;
    let path = config.store_path();
    if !path.exists() {
        return Err(Failure::new(
            ExitCode::Failure,
            format!(
                "no state store at {} yet: run `toolsmith ingest PATH`, `toolsmith mine` and \
                 `toolsmith generate`, or start toolsmithd",
                path.display()
            ),
        ));
    }
    Ok((
        store::open_read_only(&path)?,
        config.paths.state.value.clone(),
    ))
}

/// What a person is told of a candidate a killed process left half-way.
fn interrupted_reason(c: &Candidate) -> String {
    format!(
        "interrupted while {}: the process generating it is gone; `toolsmith generate` \
         resumes it (so does toolsmithd when it starts)",
        c.state
    )
}

/// A candidate as `candidates` and `show` present it: one left `generating` or `validating`
/// by a process that is gone says so (JSON: `"interrupted": true`), with what to do, rather
/// than seeming to make progress. Nothing is written: these commands only read.
fn presented(c: Candidate, state_dir: &std::path::Path) -> (Candidate, bool) {
    if candidates::is_interrupted(&c, state_dir) {
        let reason = interrupted_reason(&c);
        (
            Candidate {
                reason: Some(reason),
                ..c
            },
            true,
        )
    } else {
        (c, false)
    }
}

fn candidate_json(c: &Candidate, interrupted: bool) -> Value {
    let mut value = json!(c);
    if interrupted && let Some(fields) = value.as_object_mut() {
        fields.insert("interrupted".into(), Value::Bool(true));
    }
    value
}

/// `toolsmith candidates`.
pub(super) fn list(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let (conn, state_dir) = read_store(cli)?;
    let all: Vec<(Candidate, bool)> = candidates::list(&conn)?
        .into_iter()
        .map(|c| presented(c, &state_dir))
        .collect();
    if cli.global.json {
        let listed: Vec<Value> = all.iter().map(|(c, i)| candidate_json(c, *i)).collect();
        return output::json(out, &listed);
    }
    if all.is_empty() {
        writeln!(
            out,
            "no candidates yet: `toolsmith generate` makes them from mined patterns, \
             `toolsmith new` from a request"
        )?;
        return Ok(());
    }
    let width = all
        .iter()
        .map(|(c, _)| c.tool.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:<14}  {:<width$}  {:<8}  {:<15}  reason",
        "id", "tool", "version", "state"
    )?;
    for (c, interrupted) in &all {
        // An interrupted candidate's reason is what to do: all of it is shown.
        let keep = if *interrupted { usize::MAX } else { 100 };
        let reason: String = c
            .reason
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(keep)
            .collect();
        let state = if *interrupted {
            format!("{:<15}", "interrupted")
        } else {
            format!("{:<15}", c.state.as_str())
        };
        writeln!(
            out,
            "{:<14}  {:<width$}  {:<8}  {}  {}",
            c.id,
            c.tool,
            c.version.as_deref().unwrap_or("-"),
            paint(style, &state),
            reason
        )?;
    }
    Ok(())
}

/// What the manifest staged in `attempt` says the tool needs a person to grant.
pub(super) fn staged_needs(staging: &Staging, attempt: u32) -> Vec<crate::sandbox::Need> {
    staging
        .files(attempt)
        .get(crate::package::manifest::FILE_NAME)
        .and_then(|text| {
            crate::package::manifest::Manifest::parse(text, crate::package::manifest::FILE_NAME)
                .ok()
        })
        .map(|m| m.needs)
        .unwrap_or_default()
}

/// How many of a candidate's occurrences `toolsmith show` says where they were read.
const SHOWN_OCCURRENCES: usize = 8;

/// `toolsmith show <candidate> [--attempts]`.
pub(super) fn show(
    cli: &Cli,
    id: &str,
    attempts: bool,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let store = read_store(cli);
    let found = store
        .as_ref()
        .ok()
        .and_then(|(conn, _)| candidates::get(conn, id).ok());
    let Some(c) = found else {
        // Not a candidate: perhaps an approved tool.
        if super::registry::show_tool(cli, id, out)? {
            return Ok(());
        }
        store?;
        return Err(Failure::new(
            ExitCode::Failure,
            format!(
                "no candidate or tool `{id}`: `toolsmith candidates` and `toolsmith tools` list \
                 them"
            ),
        ));
    };
    let (conn, state_dir) = store?;
    let (c, interrupted) = presented(c, &state_dir);
    let staging = Staging::new(&state_dir, &c.id);
    // Where the first occurrences were read: the ids `toolsmith actions` looks up, files, lines.
    let read_from = staging
        .spec()
        .map(|spec| {
            spec.occurrences
                .iter()
                .take(SHOWN_OCCURRENCES)
                .map(|o| {
                    let e = &o.evidence;
                    crate::ingest::store::provenance(&conn, &e.session, e.first_seq, e.last_seq)
                        .map(|p| (e.session.clone(), p))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    let numbers = staging.attempts();
    let proposal = if c.state == candidates::State::AwaitingReview {
        super::registry::proposal_of(cli, &c.id)
    } else {
        None
    };
    let needs = numbers
        .last()
        .map(|&n| staged_needs(&staging, n))
        .unwrap_or_default();
    if cli.global.json {
        let attempt_json: Vec<Value> = numbers
            .iter()
            .map(|&n| {
                json!({
                    "attempt": n,
                    "diagnostics": staging.diagnostics(n),
                    "files": staging.files(n),
                    "reply": staging.reply(n),
                    "prompt": staging.prompt(n),
                })
            })
            .collect();
        let diffs: Vec<Value> = if attempts {
            numbers
                .windows(2)
                .map(|w| json!({"from": w[0], "to": w[1], "diff": staging.diff(w[0], w[1])}))
                .collect()
        } else {
            Vec::new()
        };
        return output::json(
            out,
            &json!({
                "candidate": candidate_json(&c, interrupted),
                "spec": staging.spec(),
                "attempts": attempt_json,
                "diffs": diffs,
                "proposal": proposal,
                "needs": needs,
                "read_from": read_from.iter().map(|(session, p)| json!({"session": session, "read_from": p})).collect::<Vec<_>>(),
            }),
        );
    }
    header(&c, interrupted, out, style)?;
    if !needs.is_empty() {
        writeln!(
            out,
            "{}",
            style.warn(&format!(
                "needs (the policy asks a person to grant them at approval): {}",
                crate::sandbox::needs::list(&needs)
            ))
        )?;
    }
    if let Some(spec) = staging.spec() {
        writeln!(out, "{}", spec.description)?;
        for line in crate::sandbox::grants::reach_lines(&spec.sandbox) {
            writeln!(out, "{}", style.warn(&line))?;
        }
        if !spec.params.is_empty() {
            writeln!(out, "parameters:")?;
            for p in &spec.params {
                writeln!(
                    out,
                    "  {:<16} {:<7}{}  {}",
                    crate::invoke::option_name(&p.name),
                    format!("{:?}", p.kind).to_lowercase(),
                    if p.variadic { " (repeatable)" } else { "" },
                    p.description
                )?;
            }
        }
        if let (Some(trigger), Some(t)) = (&spec.trigger_step, &spec.trigger) {
            writeln!(out, "when   {}", trigger.display())?;
            writeln!(out, "fails  {}", t.error_template)?;
        }
        if !spec.steps.is_empty() {
            writeln!(out, "steps:")?;
            for (i, s) in spec.steps.iter().enumerate() {
                let pipe = if s.piped { "| " } else { "" };
                writeln!(out, "  {}. {pipe}{}", i + 1, s.display())?;
            }
        }
        if !spec.occurrences.is_empty() {
            writeln!(out, "evidence:")?;
            for (session, place) in &read_from {
                writeln!(out, "  session {session}: {place}")?;
            }
            let more = spec.occurrences.len().saturating_sub(read_from.len());
            if more > 0 {
                writeln!(out, "  and {more} more")?;
            }
        }
    }
    if c.state == State::SpecAwaitingReview {
        writeln!(
            out,
            "\nits spec awaits your review before any code is written: `toolsmith approve-spec \
             {id}` accepts it, `toolsmith reject-spec {id} --reason …` rejects it",
            id = c.id
        )?;
        return Ok(());
    }
    let Some(&last) = numbers.last() else {
        writeln!(out, "no attempt staged yet")?;
        return Ok(());
    };
    if attempts {
        for &n in &numbers {
            attempt_summary(&staging, n, out, style)?;
        }
        for w in numbers.windows(2) {
            let diff = staging.diff(w[0], w[1]);
            writeln!(out, "\n── diff attempt-{} → attempt-{} ──", w[0], w[1])?;
            if diff.is_empty() {
                writeln!(out, "(the files are the same)")?;
            } else {
                out.write_all(diff.as_bytes())?;
            }
        }
        return Ok(());
    }
    if let Some(p) = &proposal {
        writeln!(
            out,
            "\nproposed on {} ({}); the change to main:",
            p["review"]["branch"].as_str().unwrap_or_default(),
            p["review"]["subject"].as_str().unwrap_or_default()
        )?;
        out.write_all(p["diff"].as_str().unwrap_or_default().as_bytes())?;
        let grants: String = needs.iter().map(|n| format!(" --grant {n}")).collect();
        writeln!(
            out,
            "\n`toolsmith approve {id}{grants}` or `toolsmith reject {id} --reason …`",
            id = c.id
        )?;
        return attempt_summary(&staging, last, out, style);
    }
    writeln!(
        out,
        "\nattempt {last} of {} in {}",
        numbers.len(),
        staging.attempt_dir(last).display()
    )?;
    let files = staging.files(last);
    if files.is_empty()
        && let Some(reply) = staging.reply(last)
    {
        // A reply that broke the output contract left no files: what the model said instead.
        writeln!(out, "\n── the model's reply ──")?;
        for line in reply.lines().take(60) {
            writeln!(out, "{line}")?;
        }
    }
    for (name, content) in files {
        writeln!(out, "\n── {name} ──")?;
        let lines: Vec<&str> = content.lines().collect();
        for line in lines.iter().take(200) {
            writeln!(out, "{line}")?;
        }
        if lines.len() > 200 {
            writeln!(out, "… {} more lines", lines.len() - 200)?;
        }
    }
    attempt_summary(&staging, last, out, style)
}

fn header(
    c: &Candidate,
    interrupted: bool,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let state = if interrupted {
        "interrupted"
    } else {
        c.state.as_str()
    };
    writeln!(
        out,
        "{}  {} {}  [{}]",
        c.id,
        c.tool,
        c.version.as_deref().unwrap_or(""),
        paint(style, state)
    )?;
    if let Some(reason) = &c.reason {
        writeln!(out, "  {reason}")?;
    }
    let from = match (&c.pattern, &c.request) {
        (Some(p), _) => format!(" from pattern {p}"),
        (None, Some(r)) => format!(": \u{201c}{r}\u{201d}"),
        _ => String::new(),
    };
    writeln!(
        out,
        "origin: {}{from}; generator: {}; attempts: {}",
        c.origin,
        c.generator.as_deref().unwrap_or("-"),
        c.attempts
    )?;
    if let Some(edit) = &c.edit {
        writeln!(out, "edited by: {} (commit {})", edit.author, edit.commit)?;
    }
    if let Some(asker) = &c.asker {
        writeln!(
            out,
            "requested by: {} (MCP session {})",
            asker.agent, asker.session
        )?;
    }
    if c.state == State::Failed {
        writeln!(
            out,
            "{}",
            style.warn("failed: `toolsmith show ID --attempts` says what each attempt did")
        )?;
    }
    Ok(())
}

fn attempt_summary(
    staging: &Staging,
    n: u32,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let Some(d) = staging.diagnostics(n) else {
        writeln!(out, "\nattempt {n}: no diagnostics (interrupted)")?;
        return Ok(());
    };
    writeln!(
        out,
        "\nattempt {n} ({}): {}",
        d.generator,
        if d.passed {
            style.good("passed")
        } else {
            style.bad("failed")
        }
    )?;
    for c in &d.checks {
        let mark = if c.passed {
            style.good("ok  ")
        } else {
            style.bad("FAIL")
        };
        writeln!(out, "  {mark} [{}] {}", c.layer, c.name)?;
        for detail in &c.details {
            for line in detail.lines().take(12) {
                writeln!(out, "         {line}")?;
            }
        }
    }
    Ok(())
}
