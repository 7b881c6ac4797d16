//! The health check: what the daemon does on its `[health]` schedule (and `toolsmith health
//! --check` does now) for every active tool on `main`.
//!
//! 1. **Regression**: a version run at least `regression.min_runs` times whose failure rate is
//!    higher than the previous version's by `regression.worse_by` is rolled back (a revert
//!    commit, as `toolsmith rollback`) when `regression.auto_rollback`, else REQUIRES_ATTENTION.
//! 2. **Healing**: a FAILING or DEGRADED version whose error classes are all auto-healable gets a
//!    repair candidate ([`super::repair::heal`]), within `max_heal_attempts`; otherwise, or once the
//!    attempts are used up, REQUIRES_ATTENTION.
//! 3. **Sprawl**: a tool unused for `unused_days` (and approved before that) is proposed for
//!    deprecation; two tools whose commands have the same canonical keys are proposed for
//!    merging (the less used into the other). Proposals are events and history entries with the
//!    command that carries them out; a person decides.
//!
//! Each action is recorded once per tool version (see [`super::actions`]) and published as an
//! event; nothing here runs generated code outside the sandbox.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::json;

use super::actions::{self, ActionKind, ActionTrigger};
use super::executions::{self, VersionHealth};
use super::score::{HealthPolicy, Status};
use crate::events::{Event, EventBus};
use crate::generate::candidates;
use crate::generate::pipeline::{GenerateError, Generator};
use crate::generate::staging::Staging;
use crate::registry::repo::{Registry, RegistryError};
use crate::store::{Store, StoreError};

/// What a health check did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CheckReport {
    /// Active tools looked at.
    pub checked: u32,
    /// `name version → version` rolled back.
    pub rolled_back: Vec<String>,
    /// Repair candidates made: `name: candidate (state)`.
    pub repairs: Vec<String>,
    /// Calls for attention raised: `name version: why`.
    pub attention: Vec<String>,
    /// Deprecation and merge proposals: `name: what`.
    pub proposals: Vec<String>,
    /// What could not be done (a repair that failed, a rollback refused): `name: why`.
    pub problems: Vec<String>,
}

impl CheckReport {
    /// The report as JSON, with its summary line (what `health.run` answers).
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = json!(self);
        value["summary"] = json!(self.summary());
        value
    }

    /// A line for `toolsmith schedule`.
    pub fn summary(&self) -> String {
        format!(
            "{} tools checked; {} rolled back, {} repairs, {} need attention, {} proposals",
            self.checked,
            self.rolled_back.len(),
            self.repairs.len(),
            self.attention.len(),
            self.proposals.len()
        )
    }
}

/// Why a check could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The registry failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A blocking task died.
    #[error("the health check's {0} task failed")]
    Task(&'static str),
}

/// One active tool, as the check sees it.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    version: String,
    health: VersionHealth,
    /// The previous version run, with its failure rate and runs counted.
    previous: Option<(String, f64, u32)>,
    /// This version's failure rate over the regression window.
    rate: (f64, u32),
    /// Newest run of any version (Unix ms).
    last_run_ms: Option<i64>,
    /// When this version was approved (Unix ms).
    approved_ms: Option<i64>,
    /// The canonical keys of the commands of the candidate that made this version.
    keys: Vec<String>,
    /// Runs of this version, all time.
    total_runs: u32,
    /// Actions already recorded for this version, by kind.
    done: Vec<String>,
    /// Heal attempts made for this version.
    heal_attempts: u32,
    /// Whether a repair is under way.
    repairing: bool,
}

/// Runs the health check once (see the module's documentation).
pub async fn check(
    store: &Store,
    registry_dir: PathBuf,
    state_dir: PathBuf,
    generator: &Generator,
    policy: &HealthPolicy,
    events: Option<&EventBus>,
) -> Result<CheckReport, CheckError> {
    let now = jiff::Timestamp::now();
    check_at(
        store,
        registry_dir,
        state_dir,
        generator,
        policy,
        events,
        now,
    )
    .await
}

/// [`check`] as if the clock read `now` (for the unused-tool rule, which counts days).
pub async fn check_at(
    store: &Store,
    registry_dir: PathBuf,
    state_dir: PathBuf,
    generator: &Generator,
    policy: &HealthPolicy,
    events: Option<&EventBus>,
    now: jiff::Timestamp,
) -> Result<CheckReport, CheckError> {
    let mut report = CheckReport::default();
    let dir = registry_dir.clone();
    let (tools, approvals) = tokio::task::spawn_blocking(move || {
        let registry = Registry::open_or_init(&dir)?;
        let tools: Vec<(String, String)> = registry
            .tools()?
            .into_iter()
            .filter(|t| !t.deprecated && t.problem.is_none())
            .filter_map(|t| t.version.map(|v| (t.name, v)))
            .collect();
        let approvals = registry.approval_times(&mut HashMap::new());
        Ok::<_, RegistryError>((tools, approvals))
    })
    .await
    .map_err(|_| CheckError::Task("registry"))??;
    let p = policy.clone();
    let seen: Vec<Seen> = store
        .call(move |conn| {
            let mut seen = Vec::new();
            for (name, version) in tools {
                let health = executions::version_health(conn, &name, &version, &p)?;
                let rate = executions::failure_rate(conn, &name, &version, p.window_runs)?;
                let current = semver::Version::parse(&version).ok();
                let runs = executions::versions_run(conn, &name)?;
                let last_run_ms = runs.iter().map(|r| r.1).max();
                let previous = runs
                    .iter()
                    .filter(|(v, _)| {
                        v != &version
                            && semver::Version::parse(v)
                                .ok()
                                .zip(current.as_ref())
                                .is_some_and(|(v, c)| &v < c)
                    })
                    .max_by_key(|(v, _)| semver::Version::parse(v).ok());
                let previous = match previous {
                    Some((v, _)) => {
                        let (r, n) = executions::failure_rate(conn, &name, v, p.window_runs)?;
                        Some((v.clone(), r, n))
                    }
                    None => None,
                };
                let keys = candidates::made_version(conn, &name, &version)
                    .ok()
                    .flatten()
                    .and_then(|c| Staging::new(&state_dir, &c.id).spec())
                    .map(|s| s.keys)
                    .unwrap_or_default();
                let total_runs = executions::run_count(conn, &name, &version)?;
                let done = actions::history(conn, &name, 50)?
                    .into_iter()
                    .filter(|a| a.version == version)
                    .map(|a| a.action)
                    .collect();
                let heal_attempts = actions::count(conn, &name, &version, ActionKind::Heal)?;
                let repairing = crate::generate::candidates::open_repair(conn, &name)
                    .ok()
                    .flatten()
                    .is_some();
                seen.push(Seen {
                    approved_ms: approvals.get(&(name.clone(), version.clone())).copied(),
                    name,
                    version,
                    health,
                    previous,
                    rate,
                    last_run_ms,
                    keys,
                    total_runs: total_runs as u32,
                    done,
                    heal_attempts,
                    repairing,
                });
            }
            Ok(seen)
        })
        .await?;
    report.checked = seen.len() as u32;
    let publish = |event: Event| {
        if let Some(events) = events {
            events.publish(event);
        }
    };
    let now = now.as_millisecond();
    for tool in &seen {
        let (name, version) = (tool.name.as_str(), tool.version.as_str());
        let done = |kind: ActionKind| tool.done.iter().any(|d| d == kind.as_str());
        // 1. Regression.
        let r = &policy.regression;
        if let Some((prev, prev_rate, prev_runs)) = &tool.previous
            && tool.rate.1 >= r.min_runs
            && *prev_runs > 0
            && tool.rate.0 - prev_rate >= r.worse_by
        {
            let why = format!(
                "{name} {version} fails {:.0}% of {} runs against {:.0}% of {prev_runs} for {prev}",
                tool.rate.0 * 100.0,
                tool.rate.1,
                prev_rate * 100.0
            );
            if r.auto_rollback {
                let dir = registry_dir.clone();
                let n = name.to_owned();
                let rolled =
                    tokio::task::spawn_blocking(move || Registry::open(&dir)?.rollback(&n))
                        .await
                        .map_err(|_| CheckError::Task("rollback"))?;
                match rolled {
                    Ok((from, to, commit)) => {
                        let to_text = to.clone().unwrap_or_else(|| "nothing".into());
                        let detail = format!("{why}: rolled back to {to_text} ({commit:.12})");
                        record(store, name, version, ActionKind::Rollback, "done", &detail).await?;
                        publish(Event::ToolRolledBack {
                            name: name.to_owned(),
                            from: from.clone(),
                            to: to.clone(),
                            commit: commit.clone(),
                            reason: why.clone(),
                        });
                        report
                            .rolled_back
                            .push(format!("{name} {from} → {to_text}"));
                    }
                    Err(e) => {
                        let detail = format!("{why}, but the rollback failed: {e}");
                        raise_attention(store, events, name, version, &detail).await?;
                        report.problems.push(format!("{name}: {detail}"));
                    }
                }
            } else if !done(ActionKind::Attention) {
                let detail = format!("{why}; health.regression.auto_rollback is off");
                raise_attention(store, events, name, version, &detail).await?;
                report.attention.push(format!("{name} {version}: {detail}"));
            }
            continue;
        }
        // 2. Healing.
        let h = &tool.health;
        if matches!(h.status, Status::Failing | Status::Degraded) && !tool.repairing {
            let unhealable: Vec<&str> = h
                .issues
                .iter()
                .filter(|i| !i.auto_heal)
                .map(|i| i.class.as_str())
                .collect();
            let why = if !unhealable.is_empty() {
                Some(format!(
                    "{} (score {:.0}) with {} errors, which the policy does not repair \
                     automatically",
                    h.status.as_str(),
                    h.score,
                    unhealable.join(", ")
                ))
            } else if tool.heal_attempts >= policy.max_heal_attempts {
                Some(format!(
                    "{} (score {:.0}) after {} repair attempts (health.max_heal_attempts)",
                    h.status.as_str(),
                    h.score,
                    tool.heal_attempts
                ))
            } else {
                None
            };
            match why {
                Some(why) => {
                    if !done(ActionKind::Attention) {
                        raise_attention(store, events, name, version, &why).await?;
                        report.attention.push(format!("{name} {version}: {why}"));
                    }
                }
                None => {
                    publish(Event::ToolHealing {
                        name: name.to_owned(),
                        version: version.to_owned(),
                        score: h.score,
                        status: h.status.as_str().to_owned(),
                    });
                    match super::repair::heal(generator, policy, name, false).await {
                        Ok(c) => report
                            .repairs
                            .push(format!("{name}: {} ({})", c.id, c.state)),
                        Err(GenerateError::Cancelled) => return Ok(report),
                        Err(e) => report.problems.push(format!("{name}: {e}")),
                    }
                }
            }
        }
        // 3. Unused.
        let day_ms = 86_400_000_i64;
        let idle_since = now - i64::from(policy.unused_days) * day_ms;
        let unused = policy.unused_days > 0
            && tool.approved_ms.is_some_and(|t| t < idle_since)
            && tool.last_run_ms.is_none_or(|t| t < idle_since);
        if unused && !done(ActionKind::Deprecate) {
            let since = match tool.last_run_ms {
                Some(_) => format!("not run for over {} days", policy.unused_days),
                None => format!(
                    "never run in the {} days since its approval",
                    policy.unused_days
                ),
            };
            let command = format!("toolsmith deprecate {name} --reason 'unused: {since}'");
            let detail = format!("{since}; to deprecate it: {command}");
            record(
                store,
                name,
                version,
                ActionKind::Deprecate,
                "proposed",
                &detail,
            )
            .await?;
            publish(Event::ToolDeprecationProposed {
                name: name.to_owned(),
                version: version.to_owned(),
                reason: since.clone(),
                command,
            });
            report
                .proposals
                .push(format!("{name}: deprecate ({since})"));
        }
    }
    // 4. Duplicates: the same commands, made twice.
    let mut by_keys: BTreeMap<&[String], Vec<&Seen>> = BTreeMap::new();
    for tool in seen.iter().filter(|t| !t.keys.is_empty()) {
        by_keys.entry(tool.keys.as_slice()).or_default().push(tool);
    }
    for group in by_keys.values().filter(|g| g.len() > 1) {
        let keep = group
            .iter()
            .max_by_key(|t| (t.total_runs, std::cmp::Reverse(t.approved_ms)))
            .map(|t| t.name.as_str())
            .unwrap_or_default();
        for tool in group.iter().filter(|t| t.name != keep) {
            if tool.done.iter().any(|d| d == ActionKind::Merge.as_str()) {
                continue;
            }
            let command = format!(
                "toolsmith deprecate {} --replaced-by {keep} --reason 'does what {keep} does'",
                tool.name
            );
            let detail = format!(
                "runs the same commands as {keep} ({} runs against its {}); to merge: {command}",
                tool.total_runs,
                group
                    .iter()
                    .find(|t| t.name == keep)
                    .map_or(0, |t| t.total_runs)
            );
            record(
                store,
                &tool.name,
                &tool.version,
                ActionKind::Merge,
                "proposed",
                &detail,
            )
            .await?;
            publish(Event::ToolMergeProposed {
                name: tool.name.clone(),
                into: keep.to_owned(),
                command,
            });
            report
                .proposals
                .push(format!("{}: merge into {keep}", tool.name));
        }
    }
    Ok(report)
}

/// Records a call for attention on a tool version and announces it.
async fn raise_attention(
    store: &Store,
    events: Option<&EventBus>,
    tool: &str,
    version: &str,
    detail: &str,
) -> Result<(), StoreError> {
    record(
        store,
        tool,
        version,
        ActionKind::Attention,
        "raised",
        detail,
    )
    .await?;
    if let Some(events) = events {
        events.publish(Event::ToolRequiresAttention {
            name: tool.to_owned(),
            version: version.to_owned(),
            reason: detail.to_owned(),
        });
    }
    Ok(())
}

async fn record(
    store: &Store,
    tool: &str,
    version: &str,
    kind: ActionKind,
    outcome: &str,
    detail: &str,
) -> Result<(), StoreError> {
    let (t, v, o, d) = (
        tool.to_owned(),
        version.to_owned(),
        outcome.to_owned(),
        detail.to_owned(),
    );
    store
        .call(move |conn| {
            actions::record(conn, &t, &v, kind, ActionTrigger::Schedule, &o, None, &d)
        })
        .await
}
