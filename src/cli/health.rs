//! `toolsmith health [NAME]`: how the registered tools do in use, from their recorded runs.

use std::io::Write;

use serde_json::json;

use super::output::{self, Style};
use super::registry::open;
use super::{Cli, Failure};
use crate::config::Config;
use crate::exit::ExitCode;
use crate::health::executions::{self, VersionHealth};
use crate::health::score::{HealthPolicy, Status};
use crate::mcp::catalog::is_active;
use crate::store;

/// The `[health]` table of the configured policy file (the built-in one by default).
fn health_policy(config: &Config) -> Result<HealthPolicy, Failure> {
    match &config.generate.policy.value {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Failure::new(
                    ExitCode::InvalidConfig,
                    format!("cannot read the policy file {}: {e}", path.display()),
                )
            })?;
            HealthPolicy::from_toml(&text, &path.display().to_string())
                .map_err(|e| Failure::new(ExitCode::InvalidConfig, e))
        }
        None => HealthPolicy::from_toml(
            include_str!("../../policies/default.toml"),
            crate::sandbox::policy::DEFAULT_FILE,
        )
        .map_err(|e| Failure::new(ExitCode::Failure, e)),
    }
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
    let of = |tool: &str, version: &str| -> Result<VersionHealth, Failure> {
        match &conn {
            Some(c) => Ok(executions::version_health(c, tool, version, &policy)?),
            None => Ok(unrun(tool, version)),
        }
    };
    let registry = &opened.registry;
    let Some(name) = name else {
        let mut all = Vec::new();
        for entry in registry.tools()?.iter().filter(|e| is_active(e)) {
            if let Some(version) = &entry.version {
                all.push(of(&entry.name, version)?);
            }
        }
        if cli.json {
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
    let healths: Vec<VersionHealth> = versions
        .iter()
        .map(|v| of(name, v))
        .collect::<Result<_, _>>()?;
    if cli.json {
        return output::json(
            out,
            &json!({
                "tool": name,
                "current": current,
                "deprecated": entry.deprecated,
                "problem": entry.problem,
                "versions": healths,
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
