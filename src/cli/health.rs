//! `toolsmith health [NAME]`: how the registered tools do in use, from their recorded runs, and
//! what the health stage did about them; `toolsmith health --check`: the health check now;
//! `toolsmith schedule`: the daemon's scheduled jobs.

use std::io::Write;

use serde_json::json;

use super::output::{self, Style};
use super::registry::open_for_reading as open;
use super::{Cli, Failure, connect, load_config};
use crate::config::Config;
use crate::daemon::lock::{self, LockError};
use crate::exit::ExitCode;
use crate::health::actions::{self, HealthAction};
use crate::health::executions::{self, VersionHealth};
use crate::health::heal::overall_status;
use crate::health::score::{HealthPolicy, Status};
use crate::mcp::catalog::is_active;
use crate::schedule::{self, JobRun, Schedule, Timetable};
use crate::store;

/// The `[health]` table of the configured policy file (the built-in one by default).
pub(super) fn health_policy(config: &Config) -> Result<HealthPolicy, Failure> {
    HealthPolicy::configured(config.generate.policy.value.as_deref())
        .map_err(|e| Failure::new(ExitCode::InvalidConfig, e.to_string()))
}

/// The health of a version that was never run: nothing against it yet.
fn unrun(tool: &str, version: &str) -> VersionHealth {
    VersionHealth {
        tool: tool.to_owned(),
        version: version.to_owned(),
        runs: 0,
        successes: 0,
        score: 100.0,
        status: Status::Healthy,
        issues: Vec::new(),
        top_errors: Vec::new(),
        last_run_ms: None,
    }
}

/// `toolsmith health [NAME] [--json]`.
pub(super) fn health(
    cli: &Cli,
    name: Option<&str>,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let opened = open(cli)?;
    let policy = health_policy(&opened.config)?;
    let path = opened.config.store_path();
    let conn = if path.exists() {
        Some(store::open_read_only(&path)?)
    } else {
        None
    };
    // The version on main gets the status the health stage's actions give it (HEALING, …),
    // with why; older versions keep their score's, as history.
    let of = |tool: &str,
              version: &str,
              on_main: bool|
     -> Result<(VersionHealth, Option<String>), Failure> {
        match &conn {
            Some(c) => {
                let mut h = executions::version_health(c, tool, version, &policy)?;
                let mut why = None;
                if on_main {
                    (h.status, why) = overall_status(c, &h, &policy)?;
                }
                Ok((h, why))
            }
            None => Ok((unrun(tool, version), None)),
        }
    };
    let registry = &opened.registry;
    let Some(name) = name else {
        let mut all = Vec::new();
        for entry in registry.tools()?.iter().filter(|e| is_active(e)) {
            if let Some(version) = &entry.version {
                all.push(of(&entry.name, version, true)?.0);
            }
        }
        if cli.global.json {
            return output::json(out, &all);
        }
        if all.is_empty() {
            writeln!(out, "no approved tools yet")?;
            return Ok(());
        }
        let width = all.iter().map(|h| h.tool.len()).max().unwrap_or(4).max(4);
        writeln!(
            out,
            "{:<width$}  {:<8}  {:>5}  {:<18}  {:>5}  LAST RUN",
            "TOOL", "VERSION", "SCORE", "STATUS", "RUNS"
        )?;
        for h in &all {
            writeln!(
                out,
                "{:<width$}  {:<8}  {:>5.1}  {:<18}  {:>5}  {}",
                h.tool,
                h.version,
                h.score,
                paint(style, h.status),
                h.runs,
                last_run(h.last_run_ms)
            )?;
        }
        return Ok(());
    };
    let entry = registry.tool(name)?;
    let current = entry.version.clone();
    let mut versions: Vec<String> = current.iter().cloned().collect();
    if let Some(c) = &conn {
        for (version, _) in executions::versions_run(c, name)? {
            if !versions.contains(&version) {
                versions.push(version);
            }
        }
    }
    let mut why = None;
    let mut healths: Vec<VersionHealth> = Vec::with_capacity(versions.len());
    for v in &versions {
        let (h, reason) = of(name, v, Some(v) == current.as_ref())?;
        why = why.or(reason);
        healths.push(h);
    }
    let history: Vec<HealthAction> = match &conn {
        Some(c) => actions::history(c, name, 20)?,
        None => Vec::new(),
    };
    if cli.global.json {
        return output::json(
            out,
            &json!({
                "tool": name,
                "current": current,
                "deprecated": entry.deprecated,
                "problem": entry.problem,
                "status_reason": why,
                "versions": healths,
                "history": history,
            }),
        );
    }
    if let Some(problem) = &entry.problem {
        writeln!(out, "{name}: {}", style.bad(&format!("invalid: {problem}")))?;
    }
    for (i, h) in healths.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let which = if Some(&h.version) == current.as_ref() {
            " (on main)"
        } else {
            ""
        };
        writeln!(
            out,
            "{} {}{which}: {} {:.1}/100 — {} of {} runs succeeded, last run {}",
            h.tool,
            h.version,
            paint(style, h.status),
            h.score,
            h.successes,
            h.runs,
            last_run(h.last_run_ms)
        )?;
        if i == 0
            && let Some(why) = &why
        {
            writeln!(out, "  why: {why}")?;
        }
        for issue in &h.issues {
            writeln!(
                out,
                "  {:<18} {:>3} failed  {:<8} −{:<4} {}",
                issue.class.as_str(),
                issue.count,
                format!("{:?}", issue.severity).to_lowercase(),
                issue.penalty,
                if issue.auto_heal {
                    "auto-healable"
                } else {
                    "needs a person"
                }
            )?;
        }
        if !h.top_errors.is_empty() {
            writeln!(out, "  top errors:")?;
            for t in &h.top_errors {
                writeln!(
                    out,
                    "    {}× [{}] {}",
                    t.count,
                    t.class.as_str(),
                    t.template
                )?;
                for example in &t.examples {
                    writeln!(out, "        e.g. {example}")?;
                }
            }
        }
    }
    if !history.is_empty() {
        writeln!(out, "\nhistory (newest first):")?;
        for a in &history {
            writeln!(
                out,
                "  {}  {} {:<9} {:<8} {}{} — {}",
                when(a.at_ms),
                a.version,
                a.action,
                a.outcome,
                a.candidate
                    .as_deref()
                    .map(|c| format!("candidate {c}, "))
                    .unwrap_or_default(),
                a.trigger,
                a.detail
            )?;
        }
    }
    Ok(())
}

/// A Unix-ms instant in local time, to the minute.
fn when(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| {
            t.to_zoned(schedule::local_time_zone())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| "?".into())
}

/// `toolsmith health --check`: through the daemon when it runs (it records the run), else here.
pub(super) fn check(cli: &Cli, out: &mut impl Write) -> Result<(), Failure> {
    let config = load_config(cli)?;
    crate::daemon::listener::ensure_private_dir(&config.paths.state.value)
        .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?;
    let report = match lock::acquire(&config.lock_path()) {
        Ok(_lock) => {
            let store = store::Store::open(&config.store_path())?;
            let (generator, policy) = crate::health::repair::configured(&config, store.clone())
                .map_err(|e| Failure::new(ExitCode::InvalidConfig, e.to_string()))?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    Failure::new(ExitCode::Failure, format!("cannot start a runtime: {e}"))
                })?;
            let started = jiff::Timestamp::now();
            let run = store.call_blocking(move |conn| {
                schedule::record_start(conn, "health", "demand", started)
            })?;
            let report = runtime.block_on(crate::health::check::check(
                &store,
                config.paths.registry.value.clone(),
                config.paths.state.value.clone(),
                &generator,
                &policy,
                None,
            ));
            let outcome = match &report {
                Ok(r) => schedule::Outcome {
                    ok: true,
                    summary: r.summary(),
                },
                Err(e) => schedule::Outcome {
                    ok: false,
                    summary: e.to_string(),
                },
            };
            store.call_blocking(move |conn| {
                schedule::record_end(conn, run, jiff::Timestamp::now(), &outcome)
            })?;
            report
                .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?
                .to_json()
        }
        Err(LockError::Held { .. }) => {
            connect(cli)?.call_job("health.run", serde_json::Value::Null)?
        }
        Err(other) => return Err(Failure::new(ExitCode::Failure, other.to_string())),
    };
    if cli.global.json {
        return output::json(out, &report);
    }
    writeln!(out, "{}", report["summary"].as_str().unwrap_or("done"))?;
    for (key, label) in [
        ("rolled_back", "rolled back"),
        ("repairs", "repair"),
        ("attention", "needs attention"),
        ("proposals", "proposed"),
        ("problems", "not done"),
    ] {
        for line in report[key].as_array().into_iter().flatten() {
            writeln!(out, "  {label}: {}", line.as_str().unwrap_or_default())?;
        }
    }
    Ok(())
}

/// `toolsmith schedule`: each job's schedule, last run and next run.
pub(super) fn schedule(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let config = load_config(cli)?;
    let path = config.store_path();
    let runs: Vec<JobRun> = if path.exists() {
        schedule::last_runs(&store::open_read_only(&path)?)?
    } else {
        Vec::new()
    };
    let daemon = matches!(
        lock::acquire(&config.lock_path()),
        Err(LockError::Held { .. })
    );
    let now = jiff::Timestamp::now();
    let mut timetable = Timetable::new(schedule::local_time_zone());
    let mut rows = Vec::new();
    for (job, setting) in config.job_schedules() {
        let last = runs.iter().find(|r| r.job == job);
        let anchor = last.and_then(|r| jiff::Timestamp::from_millisecond(r.started_ms).ok());
        let parsed = Schedule::parse(&setting.value)
            .map_err(|e| Failure::new(ExitCode::InvalidConfig, format!("{job}.schedule: {e}")))?;
        timetable.add(job, parsed, anchor, now);
        let next = timetable.next_run(job, now);
        let running = last.is_some_and(|r| r.finished_ms.is_none()) && daemon;
        rows.push(json!({
            "job": job,
            "schedule": setting.value,
            "last": last,
            "running": running,
            "next_ms": next.map(|t| t.as_millisecond()),
        }));
    }
    if cli.global.json {
        return output::json(out, &json!({"daemon_running": daemon, "jobs": rows}));
    }
    if !daemon {
        writeln!(
            out,
            "{}",
            style.warn("toolsmithd is not running: nothing runs on schedule until it starts")
        )?;
    }
    writeln!(
        out,
        "{:<7} {:<14} {:<17} {:<8} {:<17} LAST OUTCOME",
        "JOB", "SCHEDULE", "LAST RUN", "", "NEXT RUN"
    )?;
    for row in &rows {
        let last: Option<JobRun> = serde_json::from_value(row["last"].clone()).ok().flatten();
        let (last_at, state, outcome) = match &last {
            None => ("never".to_owned(), String::new(), String::new()),
            Some(r) => {
                let state = match (r.finished_ms, r.ok) {
                    (None, _) if row["running"] == true => style.warn("running"),
                    (None, _) => style.bad("stopped"),
                    (Some(_), Some(true)) => style.good("ok"),
                    (Some(_), _) => style.bad("failed"),
                };
                let outcome = match (r.finished_ms, &r.summary) {
                    (None, _) if row["running"] == true => "under way".to_owned(),
                    (None, _) => "the daemon stopped during the run".to_owned(),
                    (Some(_), Some(s)) => s.clone(),
                    (Some(_), None) => String::new(),
                };
                (when(r.started_ms), state, outcome)
            }
        };
        let next = row["next_ms"]
            .as_i64()
            .map(when)
            .unwrap_or_else(|| "—".into());
        writeln!(
            out,
            "{:<7} {:<14} {:<17} {:<8} {:<17} {}",
            row["job"].as_str().unwrap_or("?"),
            row["schedule"].as_str().unwrap_or("?"),
            last_at,
            state,
            next,
            outcome
        )?;
    }
    Ok(())
}

fn paint(style: Style, status: Status) -> String {
    let name = format!("{:<18}", status.as_str());
    match status {
        Status::Healthy | Status::Healed => style.good(&name),
        Status::Degraded | Status::Healing => style.warn(&name),
        Status::Failing | Status::RequiresAttention => style.bad(&name),
    }
}

fn last_run(ms: Option<i64>) -> String {
    match ms {
        None => "never".into(),
        Some(ms) => {
            let now = jiff::Timestamp::now().as_millisecond();
            format!(
                "{} ago",
                output::duration(((now - ms).max(0) / 1000) as u64)
            )
        }
    }
}
