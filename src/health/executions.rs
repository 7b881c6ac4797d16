//! Recorded tool runs, whichever way they came (CLI, MCP, the daemon, validation), and the
//! health of each tool version computed from them.

use std::collections::BTreeMap;

use rusqlite::{Connection, params};
use serde::Serialize;

use super::classify::ErrorClass;
use super::score::{HealthPolicy, Issue, Status, score};
use crate::mine::templates::{TemplateMiner, TemplateMinerConfig};
use crate::store::StoreError;

/// Who ran a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Caller {
    /// `toolsmith run`.
    Cli,
    /// An agent through the MCP server.
    Mcp,
    /// The daemon (a health probe, a heal's regression case).
    Daemon,
}

impl Caller {
    /// The name stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Caller::Cli => "cli",
            Caller::Mcp => "mcp",
            Caller::Daemon => "daemon",
        }
    }

    /// Parses a stored name.
    pub fn from_name(name: &str) -> Option<Caller> {
        [Caller::Cli, Caller::Mcp, Caller::Daemon]
            .into_iter()
            .find(|c| c.as_str() == name)
    }
}

/// Longest agent name kept with a run: a name is a word or two, and it comes from outside (an
/// MCP client's `clientInfo`, the environment).
pub const MAX_AGENT_NAME: usize = 64;

/// An agent's name as kept with a run: trimmed, control characters dropped, at most
/// [`MAX_AGENT_NAME`] bytes; `None` when nothing is left.
pub fn agent_name(raw: &str) -> Option<String> {
    let clean: String = raw.trim().chars().filter(|c| !c.is_control()).collect();
    let mut end = clean.len().min(MAX_AGENT_NAME);
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    let kept = clean[..end].trim();
    (!kept.is_empty()).then(|| kept.to_owned())
}

/// The agent whose shell runs this process, from what agents set in the environment of the
/// commands they run: `TOOLSMITH_AGENT` (set by hand or by a wrapper) first, then Claude
/// Code's `CLAUDECODE=1` and Gemini CLI's `GEMINI_CLI=1`. `None` when none says: a person at
/// a terminal, or an agent that marks nothing. `var` reads the environment (a closure, so the
/// rules are tested without touching the process's own).
pub fn agent_from_env(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(named) = var("TOOLSMITH_AGENT").as_deref().and_then(agent_name) {
        return Some(named);
    }
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty() && v != "0");
    [("CLAUDECODE", "claude-code"), ("GEMINI_CLI", "gemini-cli")]
        .into_iter()
        .find(|(variable, _)| set(variable))
        .map(|(_, agent)| agent.to_owned())
}

/// One run of a registered tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Execution {
    /// The tool.
    pub tool: String,
    /// Its version.
    pub version: String,
    /// Who ran it.
    pub caller: Caller,
    /// When it started (Unix milliseconds).
    pub started_ms: i64,
    /// How long it took.
    pub duration_ms: u64,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// The limit it hit, if any (`wall`, `cpu`, `memory`, `pids`, `output`, `file_size`).
    pub limit_hit: Option<String>,
    /// For a failure, its class.
    pub error_class: Option<ErrorClass>,
    /// For a failure, the end of its error output (redacted).
    pub error_excerpt: Option<String>,
    /// Peak memory, KiB.
    pub peak_memory_kb: Option<u64>,
    /// The parameters it was given, as JSON (absent when too large to keep).
    pub params: Option<String>,
    /// The agent that ran it, when known: an MCP client's name, or the agent whose shell ran
    /// `toolsmith run` ([`crate::health::executions::agent_from_env`]).
    pub agent: Option<String>,
}

/// Stores an execution; returns its id.
pub fn record(conn: &Connection, e: &Execution) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO executions (tool, version, caller, started_ms, duration_ms, ok, exit_code,
                                 signal, limit_hit, error_class, error_excerpt, peak_memory_kb,
                                 params, agent)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        e.tool,
        e.version,
        e.caller.as_str(),
        e.started_ms,
        e.duration_ms as i64,
        e.ok,
        e.exit_code,
        e.signal,
        e.limit_hit,
        e.error_class.map(ErrorClass::as_str),
        e.error_excerpt,
        e.peak_memory_kb.map(|k| k as i64),
        e.params,
        e.agent,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A recurring error of a tool version, as a template with examples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorTemplate {
    /// The template, variable parts as `<*>`.
    pub template: String,
    /// Its class.
    pub class: ErrorClass,
    /// How many failures it covers.
    pub count: u32,
    /// Up to three examples.
    pub examples: Vec<String>,
}

/// A tool version's health.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionHealth {
    /// The tool.
    pub tool: String,
    /// The version.
    pub version: String,
    /// Runs in the window.
    pub runs: u32,
    /// Successful runs in the window.
    pub successes: u32,
    /// 0–100.
    pub score: f64,
    /// The status the score gives (the health stage may overrule it: HEALING, HEALED, …).
    pub status: Status,
    /// Error classes seen.
    pub issues: Vec<Issue>,
    /// The most frequent error templates.
    pub top_errors: Vec<ErrorTemplate>,
    /// When the tool was last run (Unix ms).
    pub last_run_ms: Option<i64>,
}

/// The last line of an error excerpt worth templating: the last non-empty line.
pub fn key_line(excerpt: &str) -> &str {
    excerpt
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// The health of `tool` at `version` over its last `policy.window_runs` runs.
pub fn version_health(
    conn: &Connection,
    tool: &str,
    version: &str,
    policy: &HealthPolicy,
) -> Result<VersionHealth, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT ok, error_class, error_excerpt, started_ms FROM executions
         WHERE tool = ?1 AND version = ?2 ORDER BY id DESC LIMIT ?3",
    )?;
    let rows: Vec<(bool, Option<String>, Option<String>, i64)> = stmt
        .query_map(params![tool, version, policy.window_runs], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<_, _>>()?;
    let runs = rows.len() as u32;
    let successes = rows.iter().filter(|r| r.0).count() as u32;
    let mut failures: BTreeMap<ErrorClass, u32> = BTreeMap::new();
    let mut miner = TemplateMiner::new(TemplateMinerConfig::default());
    let mut seen = Vec::new();
    for (ok, class, excerpt, _) in &rows {
        if *ok {
            continue;
        }
        let class = class
            .as_deref()
            .and_then(ErrorClass::from_name)
            .unwrap_or(ErrorClass::Other);
        *failures.entry(class).or_default() += 1;
        let line = key_line(excerpt.as_deref().unwrap_or(""));
        seen.push((miner.add(line).id, line, class));
    }
    // Grouped once every line is in: a template generalized by a later line takes in the
    // earlier ones too.
    let mut templates: BTreeMap<String, ErrorTemplate> = BTreeMap::new();
    for (id, line, class) in seen {
        let text = miner
            .template(miner.resolve(id).unwrap_or(id))
            .unwrap_or_else(|| line.to_owned());
        let entry = templates.entry(text.clone()).or_insert(ErrorTemplate {
            template: text,
            class,
            count: 0,
            examples: Vec::new(),
        });
        entry.count += 1;
        if entry.examples.len() < 3 && !entry.examples.iter().any(|e| e == line) {
            entry.examples.push(line.to_owned());
        }
    }
    let (score, issues) = score(runs, successes, &failures, policy);
    let mut top_errors: Vec<ErrorTemplate> = templates.into_values().collect();
    top_errors.sort_by(|a, b| b.count.cmp(&a.count).then(a.template.cmp(&b.template)));
    top_errors.truncate(5);
    Ok(VersionHealth {
        tool: tool.to_owned(),
        version: version.to_owned(),
        runs,
        successes,
        score,
        status: Status::from_score(score),
        issues,
        top_errors,
        last_run_ms: rows.first().map(|r| r.3),
    })
}

/// Failure rate of a version over its last `n` runs, with the number of runs counted.
pub fn failure_rate(
    conn: &Connection,
    tool: &str,
    version: &str,
    n: u32,
) -> Result<(f64, u32), StoreError> {
    let (runs, failed): (i64, i64) = conn
        .prepare_cached(
            "SELECT count(*), coalesce(sum(NOT ok), 0) FROM (
                SELECT ok FROM executions WHERE tool = ?1 AND version = ?2
                ORDER BY id DESC LIMIT ?3)",
        )?
        .query_row(params![tool, version, n], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if runs == 0 {
        return Ok((0.0, 0));
    }
    Ok((failed as f64 / runs as f64, runs as u32))
}

/// The recorded runs (of `tool`, if given), oldest first.
pub fn list(conn: &Connection, tool: Option<&str>) -> Result<Vec<Execution>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT tool, version, caller, started_ms, duration_ms, ok, exit_code, signal, limit_hit,
                error_class, error_excerpt, peak_memory_kb, params, agent
         FROM executions WHERE ?1 IS NULL OR tool = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([tool], |r| {
        let caller: String = r.get(2)?;
        let class: Option<String> = r.get(9)?;
        Ok(Execution {
            tool: r.get(0)?,
            version: r.get(1)?,
            // A caller written by a newer build reads as the daemon's rather than failing.
            caller: Caller::from_name(&caller).unwrap_or(Caller::Daemon),
            started_ms: r.get(3)?,
            duration_ms: r.get::<_, i64>(4)?.max(0) as u64,
            ok: r.get(5)?,
            exit_code: r.get(6)?,
            signal: r.get(7)?,
            limit_hit: r.get(8)?,
            error_class: class.as_deref().and_then(ErrorClass::from_name),
            error_excerpt: r.get(10)?,
            peak_memory_kb: r.get::<_, Option<i64>>(11)?.map(|k| k.max(0) as u64),
            params: r.get(12)?,
            agent: r.get(13)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many runs of `tool` at `version` were recorded.
pub fn run_count(conn: &Connection, tool: &str, version: &str) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM executions WHERE tool = ?1 AND version = ?2")?
        .query_row(params![tool, version], |r| r.get(0))?)
}

/// A failed run that kept its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedRun {
    /// The parameters it was given, as JSON text.
    pub params: String,
    /// The end of its error output.
    pub error_excerpt: Option<String>,
}

/// The newest `limit` failed runs of `tool` at `version` that kept their parameters, newest
/// first.
pub fn failed_runs_with_params(
    conn: &Connection,
    tool: &str,
    version: &str,
    limit: u32,
) -> Result<Vec<FailedRun>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT params, error_excerpt FROM executions
         WHERE tool = ?1 AND version = ?2 AND NOT ok AND params IS NOT NULL
         ORDER BY id DESC LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![tool, version, limit], |r| {
        Ok(FailedRun {
            params: r.get(0)?,
            error_excerpt: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The runs of one tool within one hour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourlyRuns {
    /// The tool.
    pub tool: String,
    /// The hour's start (Unix ms, a multiple of 3,600,000).
    pub hour_ms: i64,
    /// Runs started in that hour.
    pub runs: i64,
    /// The last of them (Unix ms).
    pub last_ms: i64,
}

/// The runs started at or after `since_ms`, counted per tool and hour (a handful of rows per
/// tool, however many runs).
pub fn runs_by_hour(conn: &Connection, since_ms: i64) -> Result<Vec<HourlyRuns>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT tool, started_ms / 3600000, COUNT(*), MAX(started_ms) FROM executions
         WHERE started_ms >= ?1 GROUP BY tool, started_ms / 3600000",
    )?;
    let rows = stmt.query_map([since_ms], |r| {
        Ok(HourlyRuns {
            tool: r.get(0)?,
            hour_ms: r.get::<_, i64>(1)? * 3_600_000,
            runs: r.get(2)?,
            last_ms: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The versions of `tool` that were run, most recent first, with their last run (Unix ms).
pub fn versions_run(conn: &Connection, tool: &str) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT version, max(started_ms) FROM executions WHERE tool = ?1
         GROUP BY version ORDER BY max(id) DESC",
    )?;
    let rows = stmt
        .query_map([tool], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_is_named_by_toolsmith_agent_then_by_the_agents_own_markers() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(agent_from_env(env(&[])), None);
        assert_eq!(
            agent_from_env(env(&[("CLAUDECODE", "1")])).as_deref(),
            Some("claude-code")
        );
        assert_eq!(
            agent_from_env(env(&[("GEMINI_CLI", "1")])).as_deref(),
            Some("gemini-cli")
        );
        assert_eq!(agent_from_env(env(&[("CLAUDECODE", "0")])), None);
        assert_eq!(
            agent_from_env(env(&[("CLAUDECODE", "1"), ("TOOLSMITH_AGENT", " codex ")])).as_deref(),
            Some("codex")
        );
        assert_eq!(agent_name("\u{1b}[31mx\ny"), Some("[31mxy".to_owned()));
        assert_eq!(agent_name(&"é".repeat(100)).map(|n| n.len()), Some(64));
        assert_eq!(agent_name(" \t "), None);
    }

    fn run(tool: &str, version: &str, ok: bool, class: Option<ErrorClass>, err: &str) -> Execution {
        Execution {
            tool: tool.into(),
            version: version.into(),
            caller: Caller::Cli,
            started_ms: 1_763_800_000_000,
            duration_ms: 40,
            ok,
            exit_code: Some(if ok { 0 } else { 2 }),
            signal: None,
            limit_hit: None,
            error_class: class,
            error_excerpt: (!err.is_empty()).then(|| err.to_owned()),
            peak_memory_kb: Some(2048),
            params: None,
            agent: None,
        }
    }

    fn store() -> (tempfile::TempDir, crate::store::Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("s.db")).expect("store");
        (dir, store)
    }

    #[test]
    fn executions_give_the_documented_scores_and_statuses() {
        let (_dir, store) = store();
        let health = store
            .call_blocking(|conn| {
                for _ in 0..8 {
                    record(conn, &run("t", "1.0.0", true, None, ""))?;
                }
                for line in [12, 31] {
                    let err =
                        format!("run.sh: line {line}: cargo: unexpected argument '--all' found");
                    record(
                        conn,
                        &run("t", "1.0.0", false, Some(ErrorClass::Endpoint), &err),
                    )?;
                }
                for _ in 0..5 {
                    record(
                        conn,
                        &run(
                            "t",
                            "2.0.0",
                            false,
                            Some(ErrorClass::CodeError),
                            "x: unbound variable",
                        ),
                    )?;
                }
                let p = HealthPolicy::default();
                Ok((
                    version_health(conn, "t", "1.0.0", &p)?,
                    version_health(conn, "t", "2.0.0", &p)?,
                    version_health(conn, "t", "3.0.0", &p)?,
                    failure_rate(conn, "t", "2.0.0", 10)?,
                ))
            })
            .expect("health");
        let (v1, v2, v3, rate) = health;
        // 80% success, one high issue: 100 - 10 - 20 = 70.
        assert_eq!((v1.runs, v1.successes, v1.score), (10, 8, 70.0));
        assert_eq!(v1.status, Status::Degraded);
        assert_eq!(v1.top_errors.len(), 1, "{:?}", v1.top_errors);
        assert_eq!(v1.top_errors[0].count, 2);
        assert_eq!(v1.top_errors[0].examples.len(), 2);
        // All failing with a high issue: 100 - 50 - 20 = 30.
        assert_eq!((v2.score, v2.status), (30.0, Status::Failing));
        // No runs: no evidence against it.
        assert_eq!((v3.runs, v3.status), (0, Status::Healthy));
        assert_eq!(rate, (1.0, 5));
    }

    #[test]
    fn runs_are_listed_counted_and_grouped_by_hour() {
        let (_dir, store) = store();
        let (all, of_u, count, failed, hours) = store
            .call_blocking(|conn| {
                let mut with_params = run("t", "1.0.0", false, Some(ErrorClass::CodeError), "boom");
                with_params.params = Some(r#"{"x":"1"}"#.into());
                record(conn, &run("t", "1.0.0", true, None, ""))?;
                record(conn, &with_params)?;
                record(conn, &run("t", "1.0.0", false, None, "no params kept"))?;
                let mut later = run("u", "2.0.0", true, None, "");
                later.started_ms += 3_600_000;
                later.caller = Caller::Mcp;
                record(conn, &later)?;
                Ok((
                    list(conn, None)?,
                    list(conn, Some("u"))?,
                    run_count(conn, "t", "1.0.0")?,
                    failed_runs_with_params(conn, "t", "1.0.0", 10)?,
                    runs_by_hour(conn, 1_763_800_000_000)?,
                ))
            })
            .expect("store");
        assert_eq!(all.len(), 4);
        assert_eq!(all[1].error_class, Some(ErrorClass::CodeError));
        assert_eq!(all[1].params.as_deref(), Some(r#"{"x":"1"}"#));
        assert_eq!(of_u.len(), 1);
        assert_eq!((of_u[0].caller, of_u[0].ok), (Caller::Mcp, true));
        assert_eq!(count, 3);
        assert_eq!(
            failed,
            [FailedRun {
                params: r#"{"x":"1"}"#.into(),
                error_excerpt: Some("boom".into())
            }]
        );
        let mut hours: Vec<(String, i64, i64)> = hours
            .into_iter()
            .map(|h| (h.tool, h.runs, h.last_ms - h.hour_ms))
            .collect();
        hours.sort();
        // 1_763_800_000_000 is 1_600_000 ms into its hour.
        assert_eq!(
            hours,
            [("t".into(), 3, 1_600_000), ("u".into(), 1, 1_600_000)]
        );
        assert_eq!(Caller::from_name("mcp"), Some(Caller::Mcp));
        assert_eq!(Caller::from_name("robot"), None);
    }
}
