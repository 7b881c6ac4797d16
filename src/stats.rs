//! Keep rate and use, measured (`toolsmith stats`), and every review decision as feedback
//! (`toolsmith export feedback`).
//!
//! - **Keep rate**: of the proposals made (candidates that reached review), how many were
//!   approved, rejected (with the reasons given) and are still waiting, and for how long —
//!   overall and per origin. From the store's candidates, which every command that opens the
//!   registry first brings up to what git says (`generate::review::catch_up`).
//! - **Use**: per approved tool, its runs since its first approval by each agent (the
//!   executions `run` records, with the agent an MCP client or the environment named), and its
//!   *missed uses*: the times since then that an agent still ran the habit's commands by hand,
//!   found by the miner's own matcher ([`crate::mine::miner::runs_by_hand`]) with the steps
//!   each took and the time from the logged actions.
//! - **Feedback**: each decision (spec, code, tests, decision, reason, reviewer, time) from the
//!   registry's history ([`Registry::decided`]) and, for what git does not hold (a branch
//!   deleted by hand), the store and the candidate's staging.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Value, json};

use crate::generate::candidates::{self, Candidate, State};
use crate::generate::staging::Staging;
use crate::health::executions::{self, Caller};
use crate::mine::miner::{Habit, HandRun, MineOptions, UserShell, runs_by_hand};
use crate::mine::pattern;
use crate::package::manifest;
use crate::registry::feedback::{Decided, Verdict};
use crate::registry::repo::{Registry, RegistryError};
use crate::store::StoreError;

/// What stats could not be made of.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The registry could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The candidates could not be read.
    #[error(transparent)]
    Candidate(#[from] candidates::CandidateError),
    /// The miner could not read the actions.
    #[error("the actions could not be read for missed uses: {0}")]
    Mine(#[from] crate::mine::miner::MineError),
}

/// The reason prefix a rejection at review leaves on its candidate.
const REJECTED_AT_REVIEW: &str = "rejected at review: ";

/// Proposals by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Proposals made: candidates that reached review (approved, rejected or waiting).
    pub proposed: u32,
    /// Approved.
    pub approved: u32,
    /// Rejected.
    pub rejected: u32,
    /// Still awaiting review.
    pub waiting: u32,
    /// Candidates that failed before review (not proposals).
    pub failed: u32,
    /// Candidates still being generated or validated.
    pub in_progress: u32,
    /// Approved of those decided (approved + rejected), 0–1; `None` before any decision.
    pub keep_rate: Option<f64>,
}

impl Counts {
    fn add(&mut self, state: State) {
        match state {
            State::Approved => self.approved += 1,
            State::Rejected => self.rejected += 1,
            State::AwaitingReview => self.waiting += 1,
            State::Failed => self.failed += 1,
            State::Proposed | State::SpecAwaitingReview | State::Generating | State::Validating => {
                self.in_progress += 1
            }
        }
        self.proposed = self.approved + self.rejected + self.waiting;
        let decided = self.approved + self.rejected;
        self.keep_rate = (decided > 0).then(|| f64::from(self.approved) / f64::from(decided));
    }
}

/// A rejection, with the reason the reviewer gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// The candidate.
    pub candidate: String,
    /// The tool.
    pub tool: String,
    /// The version proposed.
    pub version: Option<String>,
    /// Why it was made.
    pub origin: String,
    /// Why it was rejected.
    pub reason: String,
    /// When (Unix seconds).
    pub at: i64,
}

/// A proposal awaiting review.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waiting {
    /// The candidate.
    pub candidate: String,
    /// The tool.
    pub tool: String,
    /// The version proposed.
    pub version: Option<String>,
    /// Why it was made.
    pub origin: String,
    /// Since when it waits (Unix seconds: when it was proposed).
    pub since: i64,
    /// For how long, seconds.
    pub waited_s: i64,
}

/// Whether what was approved is used: one approved tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolUse {
    /// The tool.
    pub tool: String,
    /// Its version on `main`.
    pub version: String,
    /// When its first version was approved (Unix ms, its tag's time).
    pub approved_ms: i64,
    /// Its runs since, by agents (the daemon's own runs left out).
    pub runs: u32,
    /// Those runs by agent (`unknown (cli)`/`unknown (mcp)` when the agent did not say).
    pub runs_by_agent: BTreeMap<String, u32>,
    /// The habit's commands (canonical keys) its missed uses are looked for by; empty when
    /// none is known (no pattern or spec of its candidates) or it is a recovery, whose runs by
    /// hand are not looked for (`missed_counted` false).
    pub habit: Vec<String>,
    /// Whether its missed uses were looked for.
    pub missed_counted: bool,
    /// The times since its approval an agent still ran the habit's commands by hand.
    pub missed: u32,
    /// Those by agent.
    pub missed_by_agent: BTreeMap<String, u32>,
    /// The agent calls those took (each one tool call would have been).
    pub missed_steps: u32,
    /// The time they took (ms), from the logged actions: what the tool would have saved.
    pub missed_ms: u64,
    /// Each missed use, oldest first.
    pub missed_uses: Vec<HandRun>,
}

/// `toolsmith stats`: the keep rate and the use of what was approved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Every candidate by outcome.
    pub total: Counts,
    /// By origin (`mined-sequence`, `request`, `heal`, …).
    pub by_origin: BTreeMap<String, Counts>,
    /// The rejections, newest first.
    pub rejections: Vec<Rejection>,
    /// The proposals waiting, oldest first.
    pub waiting: Vec<Waiting>,
    /// The longest wait, seconds.
    pub oldest_wait_s: Option<i64>,
    /// The median wait, seconds.
    pub median_wait_s: Option<i64>,
    /// The approved tools on `main`, by name.
    pub tools: Vec<ToolUse>,
}

/// The median of `values` (the lower middle of an even count); `None` for none.
fn median(mut values: Vec<i64>) -> Option<i64> {
    values.sort_unstable();
    let n = values.len();
    (n > 0).then(|| values[(n - 1) / 2])
}

/// What one stats run needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    /// The registry.
    pub registry: &'a Registry,
    /// The store, when there is one.
    pub conn: Option<&'a Connection>,
    /// The state directory (staging, for the candidates' specs).
    pub state_dir: &'a Path,
    /// The user's shell, as mining reads the logs.
    pub shell: &'a UserShell,
    /// The mining options (the gap limit of an occurrence).
    pub options: &'a MineOptions,
    /// Now (Unix seconds), for the waits.
    pub now_s: i64,
}

/// The keep rate and use, from the store, the registry and the logged actions.
pub fn stats(sources: Sources<'_>) -> Result<Stats, StatsError> {
    let all = match sources.conn {
        Some(conn) => candidates::list(conn)?,
        None => Vec::new(),
    };
    let mut total = Counts::default();
    let mut by_origin: BTreeMap<String, Counts> = BTreeMap::new();
    let mut rejections = Vec::new();
    let mut waiting = Vec::new();
    for c in &all {
        total.add(c.state);
        by_origin.entry(c.origin.clone()).or_default().add(c.state);
        match c.state {
            State::Rejected => rejections.push(Rejection {
                candidate: c.id.clone(),
                tool: c.tool.clone(),
                version: c.version.clone(),
                origin: c.origin.clone(),
                reason: c
                    .reason
                    .as_deref()
                    .map(|r| r.strip_prefix(REJECTED_AT_REVIEW).unwrap_or(r).to_owned())
                    .unwrap_or_default(),
                at: c.updated_at,
            }),
            State::AwaitingReview => waiting.push(Waiting {
                candidate: c.id.clone(),
                tool: c.tool.clone(),
                version: c.version.clone(),
                origin: c.origin.clone(),
                since: c.updated_at,
                waited_s: (sources.now_s - c.updated_at).max(0),
            }),
            _ => {}
        }
    }
    rejections.sort_by(|a, b| (b.at, &b.candidate).cmp(&(a.at, &a.candidate)));
    waiting.sort_by(|a, b| (a.since, &a.candidate).cmp(&(b.since, &b.candidate)));
    let waits: Vec<i64> = waiting.iter().map(|w| w.waited_s).collect();
    let tools = tool_uses(sources, &all)?;
    Ok(Stats {
        total,
        by_origin,
        rejections,
        oldest_wait_s: waits.iter().copied().max(),
        median_wait_s: median(waits),
        waiting,
        tools,
    })
}

/// The habit a tool was made of: the canonical keys of the pattern or the spec of its newest
/// approved candidate that has them (for the version on `main` first).
fn habit_of(
    conn: &Connection,
    state_dir: &Path,
    tool: &str,
    version: &str,
    all: &[Candidate],
) -> Result<Vec<String>, StatsError> {
    let mut approved: Vec<&Candidate> = all
        .iter()
        .filter(|c| c.tool == tool && c.state == State::Approved)
        .collect();
    approved.sort_by_key(|c| (c.version.as_deref() != Some(version), -c.updated_at));
    for c in approved {
        if let Some(id) = &c.pattern
            && let Some(stored) = pattern::get_pattern(conn, id)?
        {
            let p = &stored.pattern;
            let mut keys: Vec<String> = p.trigger.iter().map(|t| t.step.key.clone()).collect();
            if let Some(first) = keys.first_mut() {
                first.insert_str(0, "on-failure:");
            }
            keys.extend(p.steps.iter().map(|s| s.key.clone()));
            return Ok(keys);
        }
        if let Some(spec) = Staging::new(state_dir, &c.id).spec()
            && !spec.keys.is_empty()
        {
            return Ok(spec.keys);
        }
    }
    Ok(Vec::new())
}

/// Each approved tool's runs and missed uses since its first approval.
fn tool_uses(sources: Sources<'_>, all: &[Candidate]) -> Result<Vec<ToolUse>, StatsError> {
    let approved_at = sources
        .registry
        .approval_times(&mut HashMap::new())
        .into_iter()
        .fold(
            BTreeMap::<String, i64>::new(),
            |mut first, ((name, _), ms)| {
                let at = first.entry(name).or_insert(ms);
                *at = (*at).min(ms);
                first
            },
        );
    let mut uses = Vec::new();
    let mut habits = Vec::new();
    for entry in sources.registry.tools()? {
        let (Some(version), Some(&approved_ms)) = (&entry.version, approved_at.get(&entry.name))
        else {
            continue;
        };
        let mut runs_by_agent: BTreeMap<String, u32> = BTreeMap::new();
        let mut habit = Vec::new();
        if let Some(conn) = sources.conn {
            for run in executions::list(conn, Some(&entry.name))? {
                if run.caller == Caller::Daemon || run.started_ms < approved_ms {
                    continue;
                }
                let agent = run
                    .agent
                    .clone()
                    .unwrap_or_else(|| format!("unknown ({})", run.caller.as_str()));
                *runs_by_agent.entry(agent).or_default() += 1;
            }
            habit = habit_of(conn, sources.state_dir, &entry.name, version, all)?;
        }
        let looked_for = Habit {
            name: entry.name.clone(),
            keys: habit.clone(),
            since_ms: approved_ms,
        };
        let missed_counted = sources.conn.is_some() && looked_for.searchable();
        if missed_counted {
            habits.push(looked_for);
        }
        uses.push(ToolUse {
            tool: entry.name.clone(),
            version: version.clone(),
            approved_ms,
            runs: runs_by_agent.values().sum(),
            runs_by_agent,
            habit,
            missed_counted,
            missed: 0,
            missed_by_agent: BTreeMap::new(),
            missed_steps: 0,
            missed_ms: 0,
            missed_uses: Vec::new(),
        });
    }
    if let Some(conn) = sources.conn
        && !habits.is_empty()
    {
        for run in runs_by_hand(conn, sources.shell, &habits, sources.options)? {
            let Some(tool) = uses.iter_mut().find(|u| u.tool == run.name) else {
                continue;
            };
            tool.missed += 1;
            *tool.missed_by_agent.entry(run.agent.clone()).or_default() += 1;
            tool.missed_steps += run.calls;
            tool.missed_ms += run.took_ms.unwrap_or(0);
            tool.missed_uses.push(run);
        }
        for tool in &mut uses {
            tool.missed_uses
                .sort_by(|a, b| (a.started_ms, &a.session).cmp(&(b.started_ms, &b.session)));
        }
    }
    Ok(uses)
}

/// Every review decision as one JSON object each (for JSON Lines), oldest first: the
/// registry's (approvals by their tags, rejections by their kept refs), then the store's that
/// git does not hold (a review branch deleted by hand), each with the candidate's spec from
/// staging when it is kept, the tool's code and tests, the decision, reason, reviewer, time.
pub fn feedback(
    registry: &Registry,
    conn: Option<&Connection>,
    state_dir: &Path,
) -> Result<Vec<Value>, StatsError> {
    let all = match conn {
        Some(conn) => candidates::list(conn)?,
        None => Vec::new(),
    };
    let by_id: HashMap<&str, &Candidate> = all.iter().map(|c| (c.id.as_str(), c)).collect();
    let decided = registry.decided()?;
    let mut lines: Vec<(i64, Value)> = Vec::new();
    for d in &decided {
        let candidate = d.candidate.as_deref().and_then(|id| by_id.get(id).copied());
        lines.push((d.time_s, decision_line(d, candidate, state_dir)));
    }
    // What the store decided that git does not hold.
    for c in &all {
        if !matches!(c.state, State::Approved | State::Rejected)
            || decided
                .iter()
                .any(|d| d.candidate.as_deref() == Some(c.id.as_str()))
        {
            continue;
        }
        let staging = Staging::new(state_dir, &c.id);
        let files = staging
            .attempts()
            .last()
            .map(|&n| staging.files(n))
            .unwrap_or_default();
        let (code, tests, manifest) = split_files(&files);
        lines.push((
            c.updated_at,
            json!({
                "candidate": c.id,
                "tool": c.tool,
                "version": c.version,
                "origin": c.origin,
                "pattern": c.pattern,
                "decision": c.state.as_str(),
                "reason": c.reason,
                "reviewer": Value::Null,
                "time": rfc3339(c.updated_at),
                "commit": Value::Null,
                "tag": Value::Null,
                "from": "store",
                "spec": staging.spec(),
                "manifest": manifest,
                "code": code,
                "tests": tests,
                "trailers": {},
            }),
        ));
    }
    lines.sort_by_key(|(at, _)| *at);
    Ok(lines.into_iter().map(|(_, line)| line).collect())
}

/// Unix seconds as RFC 3339.
fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A tool's files as code, tests (`tests/…`) and its manifest; the README (generated from the
/// manifest) is neither.
fn split_files(
    files: &BTreeMap<String, String>,
) -> (BTreeMap<&str, &str>, BTreeMap<&str, &str>, Option<&str>) {
    let mut code = BTreeMap::new();
    let mut tests = BTreeMap::new();
    let mut manifest = None;
    for (path, text) in files {
        if path == manifest::FILE_NAME {
            manifest = Some(text.as_str());
        } else if path.starts_with("tests/") {
            tests.insert(path.as_str(), text.as_str());
        } else if path != "README.md" {
            code.insert(path.as_str(), text.as_str());
        }
    }
    (code, tests, manifest)
}

/// One decision git holds, as a feedback line.
fn decision_line(d: &Decided, candidate: Option<&Candidate>, state_dir: &Path) -> Value {
    let (code, tests, manifest) = split_files(&d.files);
    let trailer = |key: &str| {
        d.trailers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let spec = d
        .candidate
        .as_deref()
        .and_then(|id| Staging::new(state_dir, id).spec());
    json!({
        "candidate": d.candidate,
        "tool": d.tool,
        "version": d.version,
        "origin": candidate.map(|c| c.origin.clone()).or_else(|| trailer("Origin")),
        "pattern": candidate.and_then(|c| c.pattern.clone()).or_else(|| trailer("Pattern")),
        "decision": match d.decision {
            Verdict::Approved => "approved",
            Verdict::Rejected => "rejected",
        },
        "reason": d.reason,
        "reviewer": d.reviewer,
        "time": rfc3339(d.time_s),
        "commit": d.commit,
        "tag": d.tag,
        "from": "registry",
        "spec": spec,
        "manifest": manifest,
        "code": code,
        "tests": tests,
        "trailers": d.trailers.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keep_rate_counts_decisions_and_proposals_reach_review() {
        let mut c = Counts::default();
        assert_eq!(c.keep_rate, None);
        for s in [
            State::Approved,
            State::Approved,
            State::Approved,
            State::Rejected,
            State::AwaitingReview,
            State::Failed,
            State::Generating,
        ] {
            c.add(s);
        }
        assert_eq!(
            (
                c.proposed,
                c.approved,
                c.rejected,
                c.waiting,
                c.failed,
                c.in_progress
            ),
            (5, 3, 1, 1, 1, 1)
        );
        assert_eq!(c.keep_rate, Some(0.75));
    }

    #[test]
    fn the_median_wait_is_the_lower_middle() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![5]), Some(5));
        assert_eq!(median(vec![9, 1, 5]), Some(5));
        assert_eq!(median(vec![9, 1, 5, 7]), Some(5));
    }
}
