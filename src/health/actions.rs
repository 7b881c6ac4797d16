//! What the health stage did about each tool — heal attempts, rollbacks, calls for attention,
//! deprecation and merge proposals — kept in the store: `toolsmith health <name>` shows the
//! history, and the bounds (heal attempts per version, one proposal per tool) are counted here.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::store::StoreError;

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// A repair candidate was made (or the attempt failed).
    Heal,
    /// The version was rolled back (a revert commit on `main`).
    Rollback,
    /// A person must look: the status is REQUIRES_ATTENTION.
    Attention,
    /// The tool, unused, was proposed for deprecation.
    Deprecate,
    /// The tool does what another does: proposed for merging into it.
    Merge,
}

impl ActionKind {
    /// The name stored.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Heal => "heal",
            ActionKind::Rollback => "rollback",
            ActionKind::Attention => "attention",
            ActionKind::Deprecate => "deprecate",
            ActionKind::Merge => "merge",
        }
    }
}

/// What started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionTrigger {
    /// The scheduled health check.
    Schedule,
    /// A person (`toolsmith heal`).
    Manual,
}

impl ActionTrigger {
    /// The name stored.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionTrigger::Schedule => "schedule",
            ActionTrigger::Manual => "manual",
        }
    }
}

/// One recorded action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthAction {
    /// The tool.
    pub tool: String,
    /// The version it was about.
    pub version: String,
    /// When (Unix ms).
    pub at_ms: i64,
    /// What was done: `heal`, `rollback`, `attention`, `deprecate`, `merge`.
    pub action: String,
    /// `schedule` or `manual`.
    pub trigger: String,
    /// How it ended: `proposed`, `failed`, `done`, `raised`.
    pub outcome: String,
    /// The repair candidate, for a heal.
    pub candidate: Option<String>,
    /// What happened, in a sentence.
    pub detail: String,
}

/// Records an action (now).
#[allow(clippy::too_many_arguments)]
pub fn record(
    conn: &Connection,
    tool: &str,
    version: &str,
    kind: ActionKind,
    trigger: ActionTrigger,
    outcome: &str,
    candidate: Option<&str>,
    detail: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO health_actions (tool, version, at_ms, action, trigger, outcome, candidate,
                                     detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        tool,
        version,
        jiff::Timestamp::now().as_millisecond(),
        kind.as_str(),
        trigger.as_str(),
        outcome,
        candidate,
        detail
    ])?;
    Ok(())
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HealthAction> {
    Ok(HealthAction {
        tool: r.get(0)?,
        version: r.get(1)?,
        at_ms: r.get(2)?,
        action: r.get(3)?,
        trigger: r.get(4)?,
        outcome: r.get(5)?,
        candidate: r.get(6)?,
        detail: r.get(7)?,
    })
}

const COLUMNS: &str = "tool, version, at_ms, action, trigger, outcome, candidate, detail";

/// The tool's actions, newest first, at most `limit`.
pub fn history(conn: &Connection, tool: &str, limit: u32) -> Result<Vec<HealthAction>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM health_actions WHERE tool = ?1 ORDER BY id DESC LIMIT ?2"
    ))?;
    let rows = stmt
        .query_map(params![tool, limit], row)?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// How many actions of `kind` were recorded for a tool version.
pub fn count(
    conn: &Connection,
    tool: &str,
    version: &str,
    kind: ActionKind,
) -> Result<u32, StoreError> {
    let n: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM health_actions WHERE tool = ?1 AND version = ?2 AND action = ?3",
        )?
        .query_row(params![tool, version, kind.as_str()], |r| r.get(0))?;
    Ok(n as u32)
}

/// The newest action of `kind` for a tool (any version).
pub fn latest(
    conn: &Connection,
    tool: &str,
    kind: ActionKind,
) -> Result<Option<HealthAction>, StoreError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM health_actions WHERE tool = ?1 AND action = ?2
             ORDER BY id DESC LIMIT 1"
        ))?
        .query_row(params![tool, kind.as_str()], row)
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_kept_counted_and_listed_newest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("s.db")).expect("store");
        let (history, heals, latest) = store
            .call_blocking(|conn| {
                use ActionKind::*;
                let t = ActionTrigger::Schedule;
                record(
                    conn,
                    "lint",
                    "1.0.0",
                    Heal,
                    t,
                    "failed",
                    None,
                    "no evidence",
                )?;
                record(
                    conn,
                    "lint",
                    "1.0.0",
                    Heal,
                    t,
                    "proposed",
                    Some("c1"),
                    "llm",
                )?;
                record(conn, "lint", "1.1.0", Attention, t, "raised", None, "auth")?;
                record(conn, "other", "1.0.0", Heal, t, "proposed", None, "x")?;
                Ok((
                    history(conn, "lint", 10)?,
                    count(conn, "lint", "1.0.0", Heal)?,
                    latest(conn, "lint", Heal)?,
                ))
            })
            .expect("store");
        let actions: Vec<&str> = history.iter().map(|a| a.action.as_str()).collect();
        assert_eq!(actions, ["attention", "heal", "heal"]);
        assert_eq!(heals, 2);
        assert_eq!(
            latest.and_then(|a| a.candidate).as_deref(),
            Some("c1"),
            "the newest heal"
        );
    }
}
