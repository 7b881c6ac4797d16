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
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::actions::{self, ActionKind, ActionTrigger};
use super::executions::{self, VersionHealth};
use super::score::{HealthPolicy, RegressionPolicy, Status};
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
    let (tools, approvals) = active_tools(registry_dir.clone(), state_dir.clone()).await?;
    let p = policy.clone();
    let seen_state = state_dir.clone();
    let seen: Vec<Seen> = store
        .call(move |conn| {
            tools
                .into_iter()
                .map(|(name, version)| {
                    let approved_ms = approvals.get(&(name.clone(), version.clone())).copied();
                    see(conn, name, version, approved_ms, &seen_state, &p)
                })
                .collect()
        })
        .await?;
    report.checked = seen.len() as u32;
    let steps = Steps {
        store,
        registry_dir: &registry_dir,
        state_dir: &state_dir,
        generator,
        policy,
        events,
    };
    let now = now.as_millisecond();
    for tool in &seen {
        // 1. Regression.
        if let Some(why) = regression(tool, &policy.regression) {
            steps.roll_back(tool, why, &mut report).await?;
            continue;
        }
        // 2. Healing.
        if steps.heal(tool, &mut report).await?.is_break() {
            return Ok(report);
        }
        // 3. Unused.
        if let Some(since) = unused(tool, policy.unused_days, now)
            && !tool.done(ActionKind::Deprecate)
        {
            steps.propose_deprecation(tool, &since, &mut report).await?;
        }
    }
    // 4. Duplicates: the same commands, made twice.
    for merge in merges(&seen) {
        steps.propose_merge(&merge, &mut report).await?;
    }
    Ok(report)
}

/// The registry's active tools on `main` (not deprecated, not broken) with their versions,
/// and when each version was approved.
async fn active_tools(
    registry_dir: PathBuf,
    state_dir: PathBuf,
) -> Result<(Vec<(String, String)>, BTreeMap<(String, String), i64>), CheckError> {
    tokio::task::spawn_blocking(move || {
        let registry = Registry::open_or_init(&registry_dir, &state_dir)?;
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
    .map_err(|_| CheckError::Task("registry"))?
    .map_err(CheckError::from)
}

/// Scores one active tool version from the store: its health, failure rates (its own and its
/// previous version's), runs, the keys of the commands it was made from, and what has been
/// done about it.
fn see(
    conn: &rusqlite::Connection,
    name: String,
    version: String,
    approved_ms: Option<i64>,
    state_dir: &Path,
    p: &HealthPolicy,
) -> Result<Seen, StoreError> {
    let health = executions::version_health(conn, &name, &version, p)?;
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
        .and_then(|c| Staging::new(state_dir, &c.id).spec())
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
    Ok(Seen {
        approved_ms,
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
    })
}

impl Seen {
    /// Whether an action of `kind` is already recorded for this version.
    fn done(&self, kind: ActionKind) -> bool {
        self.done.iter().any(|d| d == kind.as_str())
    }
}

/// Why `tool` counts as a regression of its previous version, if it does: enough runs, and a
/// failure rate worse than the previous version's by the policy's margin.
fn regression(tool: &Seen, r: &RegressionPolicy) -> Option<String> {
    let (prev, prev_rate, prev_runs) = tool.previous.as_ref()?;
    (tool.rate.1 >= r.min_runs && *prev_runs > 0 && tool.rate.0 - prev_rate >= r.worse_by).then(
        || {
            format!(
                "{} {} fails {:.0}% of {} runs against {:.0}% of {prev_runs} for {prev}",
                tool.name,
                tool.version,
                tool.rate.0 * 100.0,
                tool.rate.1,
                prev_rate * 100.0
            )
        },
    )
}

/// Whether a FAILING or DEGRADED tool is left to a person: `Some(why)` when some of its error
/// classes are not auto-healable or its repair attempts are used up; `None` when it is healthy,
/// already under repair, or to be repaired now.
fn heal_decision(tool: &Seen, max_heal_attempts: u32) -> Option<Option<String>> {
    let h = &tool.health;
    if !matches!(h.status, Status::Failing | Status::Degraded) || tool.repairing {
        return None;
    }
    let unhealable: Vec<&str> = h
        .issues
        .iter()
        .filter(|i| !i.auto_heal)
        .map(|i| i.class.as_str())
        .collect();
    Some(if !unhealable.is_empty() {
        Some(format!(
            "{} (score {:.0}) with {} errors, which the policy does not repair \
             automatically",
            h.status.as_str(),
            h.score,
            unhealable.join(", ")
        ))
    } else if tool.heal_attempts >= max_heal_attempts {
        Some(format!(
            "{} (score {:.0}) after {} repair attempts (health.max_heal_attempts)",
            h.status.as_str(),
            h.score,
            tool.heal_attempts
        ))
    } else {
        None
    })
}

/// Why `tool` counts as unused at `now_ms` (approved and not run for `unused_days`), if it
/// does; 0 days turns the rule off.
fn unused(tool: &Seen, unused_days: u32, now_ms: i64) -> Option<String> {
    let day_ms = 86_400_000_i64;
    let idle_since = now_ms - i64::from(unused_days) * day_ms;
    let unused = unused_days > 0
        && tool.approved_ms.is_some_and(|t| t < idle_since)
        && tool.last_run_ms.is_none_or(|t| t < idle_since);
    unused.then(|| match tool.last_run_ms {
        Some(_) => format!("not run for over {unused_days} days"),
        None => format!("never run in the {unused_days} days since its approval"),
    })
}

/// A tool to merge into another that runs the same commands.
#[derive(Debug)]
struct Merge<'a> {
    tool: &'a Seen,
    /// The tool kept: the most run of the group (of equals, the first approved).
    keep: &'a str,
    keep_runs: u32,
}

/// The merges to propose: in each group of tools made from the same commands, every tool but
/// the one kept, unless a merge is already proposed for it.
fn merges(seen: &[Seen]) -> Vec<Merge<'_>> {
    let mut by_keys: BTreeMap<&[String], Vec<&Seen>> = BTreeMap::new();
    for tool in seen.iter().filter(|t| !t.keys.is_empty()) {
        by_keys.entry(tool.keys.as_slice()).or_default().push(tool);
    }
    let mut merges = Vec::new();
    for group in by_keys.values().filter(|g| g.len() > 1) {
        let kept = group
            .iter()
            .max_by_key(|t| (t.total_runs, std::cmp::Reverse(t.approved_ms)));
        let keep = kept.map(|t| t.name.as_str()).unwrap_or_default();
        let keep_runs = group
            .iter()
            .find(|t| t.name == keep)
            .map_or(0, |t| t.total_runs);
        for tool in group.iter().filter(|t| t.name != keep) {
            if !tool.done(ActionKind::Merge) {
                merges.push(Merge {
                    tool,
                    keep,
                    keep_runs,
                });
            }
        }
    }
    merges
}

/// What the check's acting steps share.
struct Steps<'a> {
    store: &'a Store,
    registry_dir: &'a Path,
    state_dir: &'a Path,
    generator: &'a Generator,
    policy: &'a HealthPolicy,
    events: Option<&'a EventBus>,
}

impl Steps<'_> {
    fn publish(&self, event: Event) {
        if let Some(events) = self.events {
            events.publish(event);
        }
    }

    /// A regression: rolled back when the policy says so (a failed rollback is a problem and
    /// a call for attention), else a call for attention, once.
    async fn roll_back(
        &self,
        tool: &Seen,
        why: String,
        report: &mut CheckReport,
    ) -> Result<(), CheckError> {
        let (name, version) = (tool.name.as_str(), tool.version.as_str());
        let (store, events) = (self.store, self.events);
        if self.policy.regression.auto_rollback {
            let dir = self.registry_dir.to_path_buf();
            let state = self.state_dir.to_path_buf();
            let n = name.to_owned();
            let rolled =
                tokio::task::spawn_blocking(move || Registry::open(&dir, &state)?.rollback(&n))
                    .await
                    .map_err(|_| CheckError::Task("rollback"))?;
            match rolled {
                Ok((from, to, commit)) => {
                    let to_text = to.clone().unwrap_or_else(|| "nothing".into());
                    let detail = format!("{why}: rolled back to {to_text} ({commit:.12})");
                    record(store, name, version, ActionKind::Rollback, "done", &detail).await?;
                    self.publish(Event::ToolRolledBack {
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
        } else if !tool.done(ActionKind::Attention) {
            let detail = format!("{why}; health.regression.auto_rollback is off");
            raise_attention(store, events, name, version, &detail).await?;
            report.attention.push(format!("{name} {version}: {detail}"));
        }
        Ok(())
    }

    /// Healing: a repair candidate, or a call for attention (once) for what is not repaired
    /// automatically. `Break` when the generator was cancelled: the check ends there.
    async fn heal(
        &self,
        tool: &Seen,
        report: &mut CheckReport,
    ) -> Result<ControlFlow<()>, CheckError> {
        let (name, version) = (tool.name.as_str(), tool.version.as_str());
        match heal_decision(tool, self.policy.max_heal_attempts) {
            Some(Some(why)) if !tool.done(ActionKind::Attention) => {
                raise_attention(self.store, self.events, name, version, &why).await?;
                report.attention.push(format!("{name} {version}: {why}"));
            }
            // Healthy, under repair, or attention already raised.
            None | Some(Some(_)) => {}
            Some(None) => {
                let h = &tool.health;
                self.publish(Event::ToolHealing {
                    name: name.to_owned(),
                    version: version.to_owned(),
                    score: h.score,
                    status: h.status.as_str().to_owned(),
                });
                match super::repair::heal(self.generator, self.policy, name, false).await {
                    Ok(c) => report
                        .repairs
                        .push(format!("{name}: {} ({})", c.id, c.state)),
                    Err(GenerateError::Cancelled) => return Ok(ControlFlow::Break(())),
                    Err(e) => report.problems.push(format!("{name}: {e}")),
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Proposes deprecating an unused tool (`since` says how long), with the command.
    async fn propose_deprecation(
        &self,
        tool: &Seen,
        since: &str,
        report: &mut CheckReport,
    ) -> Result<(), CheckError> {
        let (name, version) = (tool.name.as_str(), tool.version.as_str());
        let command = format!("toolsmith deprecate {name} --reason 'unused: {since}'");
        let detail = format!("{since}; to deprecate it: {command}");
        record(
            self.store,
            name,
            version,
            ActionKind::Deprecate,
            "proposed",
            &detail,
        )
        .await?;
        self.publish(Event::ToolDeprecationProposed {
            name: name.to_owned(),
            version: version.to_owned(),
            reason: since.to_owned(),
            command,
        });
        report
            .proposals
            .push(format!("{name}: deprecate ({since})"));
        Ok(())
    }

    /// Proposes merging a tool into one that runs the same commands, with the command.
    async fn propose_merge(
        &self,
        merge: &Merge<'_>,
        report: &mut CheckReport,
    ) -> Result<(), CheckError> {
        let (tool, keep) = (merge.tool, merge.keep);
        let command = format!(
            "toolsmith deprecate {} --replaced-by {keep} --reason 'does what {keep} does'",
            tool.name
        );
        let detail = format!(
            "runs the same commands as {keep} ({} runs against its {}); to merge: {command}",
            tool.total_runs, merge.keep_runs
        );
        record(
            self.store,
            &tool.name,
            &tool.version,
            ActionKind::Merge,
            "proposed",
            &detail,
        )
        .await?;
        self.publish(Event::ToolMergeProposed {
            name: tool.name.clone(),
            into: keep.to_owned(),
            command,
        });
        report
            .proposals
            .push(format!("{}: merge into {keep}", tool.name));
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::classify::ErrorClass;
    use crate::health::score::{Issue, Severity};

    fn seen(name: &str, status: Status, issues: Vec<Issue>) -> Seen {
        Seen {
            name: name.into(),
            version: "1.1.0".into(),
            health: VersionHealth {
                tool: name.into(),
                version: "1.1.0".into(),
                runs: 10,
                successes: 4,
                score: 40.0,
                status,
                issues,
                top_errors: Vec::new(),
                last_run_ms: None,
            },
            previous: None,
            rate: (0.0, 0),
            last_run_ms: None,
            approved_ms: None,
            keys: Vec::new(),
            total_runs: 0,
            done: Vec::new(),
            heal_attempts: 0,
            repairing: false,
        }
    }

    fn issue(class: ErrorClass, auto_heal: bool) -> Issue {
        Issue {
            class,
            severity: Severity::High,
            count: 3,
            penalty: 20.0,
            auto_heal,
        }
    }

    #[test]
    fn a_regression_needs_runs_and_a_worse_rate_than_the_previous_version() {
        let r = RegressionPolicy {
            min_runs: 5,
            worse_by: 0.2,
            auto_rollback: true,
        };
        let mut tool = seen("fmt", Status::Failing, Vec::new());
        tool.rate = (0.6, 10);
        assert_eq!(regression(&tool, &r), None, "no previous version");
        tool.previous = Some(("1.0.0".into(), 0.1, 8));
        assert_eq!(
            regression(&tool, &r).as_deref(),
            Some("fmt 1.1.0 fails 60% of 10 runs against 10% of 8 for 1.0.0")
        );
        tool.rate = (0.6, 4);
        assert_eq!(regression(&tool, &r), None, "too few runs");
        tool.rate = (0.25, 10);
        assert_eq!(regression(&tool, &r), None, "not worse by enough");
        tool.rate = (0.6, 10);
        tool.previous = Some(("1.0.0".into(), 0.0, 0));
        assert_eq!(
            regression(&tool, &r),
            None,
            "the previous version never ran"
        );
    }

    #[test]
    fn only_auto_healable_failures_within_the_attempts_are_repaired() {
        let healthy = seen("a", Status::Healthy, Vec::new());
        assert_eq!(heal_decision(&healthy, 3), None);
        let mut failing = seen("a", Status::Failing, vec![issue(ErrorClass::Timeout, true)]);
        assert_eq!(heal_decision(&failing, 3), Some(None), "repair it");
        failing.heal_attempts = 3;
        let why = heal_decision(&failing, 3).flatten().unwrap_or_default();
        assert!(why.contains("after 3 repair attempts"), "{why}");
        failing.repairing = true;
        assert_eq!(heal_decision(&failing, 3), None, "a repair is under way");
        let auth = seen("a", Status::Degraded, vec![issue(ErrorClass::Auth, false)]);
        let why = heal_decision(&auth, 3).flatten().unwrap_or_default();
        assert!(why.contains("with auth errors"), "{why}");
    }

    #[test]
    fn a_tool_is_unused_when_approved_and_not_run_for_the_days() {
        let day = 86_400_000_i64;
        let now = 100 * day;
        let mut tool = seen("a", Status::Healthy, Vec::new());
        assert_eq!(unused(&tool, 30, now), None, "never approved");
        tool.approved_ms = Some(now - 31 * day);
        assert_eq!(
            unused(&tool, 30, now).as_deref(),
            Some("never run in the 30 days since its approval")
        );
        assert_eq!(unused(&tool, 0, now), None, "the rule is off");
        tool.last_run_ms = Some(now - 40 * day);
        assert_eq!(
            unused(&tool, 30, now).as_deref(),
            Some("not run for over 30 days")
        );
        tool.last_run_ms = Some(now - day);
        assert_eq!(unused(&tool, 30, now), None, "run yesterday");
    }

    #[test]
    fn duplicates_merge_into_the_most_run() {
        let keys = vec!["git status".to_owned()];
        let mut a = seen("a", Status::Healthy, Vec::new());
        let mut b = seen("b", Status::Healthy, Vec::new());
        let mut c = seen("c", Status::Healthy, Vec::new());
        let lone = seen("lone", Status::Healthy, Vec::new());
        (a.keys, a.total_runs) = (keys.clone(), 3);
        (b.keys, b.total_runs) = (keys.clone(), 9);
        (c.keys, c.total_runs) = (keys, 1);
        let all = [a, b, c, lone];
        let found: Vec<_> = merges(&all)
            .iter()
            .map(|m| (m.tool.name.clone(), m.keep.to_owned(), m.keep_runs))
            .collect();
        assert_eq!(
            found,
            [("a".into(), "b".into(), 9), ("c".into(), "b".into(), 9)]
        );
        let mut all = all;
        all[0].done.push(ActionKind::Merge.as_str().into());
        let found: Vec<_> = merges(&all).iter().map(|m| m.tool.name.clone()).collect();
        assert_eq!(found, ["c"], "a merge is proposed once");
    }
}
