//! The `actions` table (and `pending_results`, results whose call is not stored yet): every
//! query of them. Ingest writes actions through [`insert_action`] and [`join_result`], inside
//! its batches' transactions; mining, health and the CLI read them through the functions here,
//! so the stages beside and above ingest share the table without importing ingest.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use super::{Action, ActionResult};
use crate::store::StoreError;

/// Bits of a stored `seq` below the file generation's rank: the adapter's ordering key within
/// its file (`offset << 8 | index`, so files up to 64 GiB; see [`stored_seq`] for larger).
pub const RANK_SHIFT: u32 = 44;

/// The largest rank a stored `seq` holds (ranks above share it: ordering between those
/// generations is then by place only).
pub const MAX_RANK: u64 = (1 << (63 - RANK_SHIFT)) - 1;

/// The stored ordering key of an action: its file generation's `rank` (generations are ranked
/// in the order they were first read, so a session spanning files stays in order) above its
/// `place` in that generation (the adapter's `seq`). With `rank`, two files never give two
/// actions the same key; within one generation the same bytes always give the same key, so a
/// re-read stores nothing twice. A place too large to have a rank above it is not a place in a
/// file but a key the log's writer gave (a native log's own `seq`, as `toolsmith run` writes
/// it: time-based, unique within its session across files and processes): it is kept as
/// written.
///
/// ```
/// use toolsmith::action::stored::{place_of, stored_seq};
/// let seq = stored_seq(3, 1000 << 8);
/// assert!(seq > stored_seq(2, 5_000_000 << 8));
/// assert_eq!(place_of(seq), 1000 << 8);
/// assert_eq!(stored_seq(3, 1_764_000_000_000_123), 1_764_000_000_000_123);
/// ```
pub fn stored_seq(rank: u64, place: u64) -> u64 {
    if place >> RANK_SHIFT != 0 {
        return place;
    }
    (rank.min(MAX_RANK) << RANK_SHIFT) | place
}

/// The place within its file generation of a stored `seq` (see [`stored_seq`]).
pub fn place_of(seq: u64) -> u64 {
    seq & ((1 << RANK_SHIFT) - 1)
}

/// The session an action's call id is unique within: its parent's for a source whose ids span
/// sessions (see [`crate::action::Source::call_ids_span_sessions`]), else its own.
pub fn call_root(action: &Action) -> &str {
    match &action.parent_session {
        Some(parent) if action.source.call_ids_span_sessions() => parent,
        _ => &action.session,
    }
}

/// What [`insert_action`] did with an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// It was stored before (a re-read, or a copy of a call already stored): nothing changed.
    Duplicate,
    /// It is stored now.
    New {
        /// Whether it is stored with its result: one the record carried, or one that arrived
        /// before the call and waited for it.
        with_result: bool,
    },
}

/// Where in its file an action was read: the `ingest_files` row and the 1-based line of the
/// record (`None` where lines mean nothing: a whole-file format).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadAt {
    /// The `ingest_files` row.
    pub file_id: i64,
    /// The record's first line.
    pub line: Option<u64>,
}

/// Inserts an action at `seq` (its stored key, see [`stored_seq`]) unless already stored —
/// the same place of the same file generation, or the same call id within its root session
/// (`root`, see [`call_root`]); `at`: the file and line it was read from. Joins a result that
/// arrived before its call. Ingest's batches call it in their transaction.
#[allow(clippy::too_many_arguments)]
pub fn insert_action(
    conn: &Connection,
    action: &Action,
    seq: u64,
    root: &str,
    input: &str,
    ts: Option<&str>,
    at: ReadAt,
) -> Result<Inserted, StoreError> {
    let result = action.result.as_ref();
    // The root is stored only where it differs from the session (the index reads it through
    // coalesce), which keeps most rows as small as before.
    let stored_root = (root != action.session).then_some(root);
    let inserted = conn.prepare_cached("INSERT OR IGNORE INTO actions (session, seq, ts, source, cwd, tool, input, call_id, ok,
                                        exit_code, output, duration_ms, file_id, root, line)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)")?.execute(
        params![
            action.session,
            seq as i64,
            ts,
            action.source.as_str(),
            action.cwd,
            action.tool,
            input,
            action.call_id,
            result.map(|r| r.ok),
            result.and_then(|r| r.exit_code),
            result.map(|r| r.output.as_str()),
            result.and_then(|r| r.duration_ms).map(|d| d as i64),
            at.file_id,
            stored_root,
            at.line.map(|l| i64::try_from(l).unwrap_or(i64::MAX))
        ],
    )? == 1;
    if !inserted {
        return Ok(Inserted::Duplicate);
    }
    let mut with_result = result.is_some();
    if let (Some(call_id), None) = (&action.call_id, result) {
        let pending = conn
            .prepare_cached(
                "DELETE FROM pending_results WHERE session = ?1 AND call_id = ?2
                 RETURNING ok, exit_code, output, duration_ms",
            )?
            .query_row(params![root, call_id], |row| {
                Ok(ActionResult {
                    ok: row.get(0)?,
                    exit_code: row.get(1)?,
                    output: row.get(2)?,
                    duration_ms: row.get::<_, Option<i64>>(3)?.map(|d| d as u64),
                })
            })
            .optional()?;
        if let Some(result) = pending {
            with_result = join_result(conn, root, call_id, &result, false)?;
        }
    }
    Ok(Inserted::New { with_result })
}

/// Joins a result to its stored call, found by its root session (see [`call_root`]) and id;
/// keeps it pending (`pending_results`, by root) when the call is not stored yet. A result that
/// `replaces` (a call's final word) overwrites one already joined; the answer is whether the
/// call had no result before, so a replaced result is not counted as joined twice.
pub fn join_result(
    conn: &Connection,
    root: &str,
    call_id: &str,
    result: &ActionResult,
    replaces: bool,
) -> Result<bool, StoreError> {
    let set = |sql: &str| -> Result<usize, StoreError> {
        Ok(conn.prepare_cached(sql)?.execute(params![
            root,
            call_id,
            result.ok,
            result.exit_code,
            result.output,
            result.duration_ms.map(|d| d as i64)
        ])?)
    };
    // The same update, only where the call has no result yet, then (a final answer) anyway.
    const UNJOINED: &str =
        "UPDATE actions SET ok = ?3, exit_code = ?4, output = ?5, duration_ms = ?6
                            WHERE coalesce(root, session) = ?1 AND call_id = ?2 AND ok IS NULL";
    const SET: &str = "UPDATE actions SET ok = ?3, exit_code = ?4, output = ?5, duration_ms = ?6
                       WHERE coalesce(root, session) = ?1 AND call_id = ?2";
    if set(UNJOINED)? > 0 {
        return Ok(true);
    }
    if replaces && set(SET)? > 0 {
        return Ok(false);
    }
    let call_exists: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM actions
                            WHERE coalesce(root, session) = ?1 AND call_id = ?2)",
        )?
        .query_row(params![root, call_id], |row| row.get(0))?;
    if !call_exists {
        conn.prepare_cached(
            "INSERT OR REPLACE INTO pending_results (session, call_id, ok, exit_code, output,
                                                     duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            root,
            call_id,
            result.ok,
            result.exit_code,
            result.output,
            result.duration_ms.map(|d| d as i64)
        ])?;
    }
    Ok(false)
}

/// The distinct working directories of stored actions (at most `limit`): the projects agents
/// worked in, where the daemon looks for per-project agent logs (Crush's `.crush/crush.db`).
pub fn distinct_cwds(conn: &Connection, limit: usize) -> Result<Vec<String>, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT DISTINCT cwd FROM actions WHERE cwd IS NOT NULL AND cwd != '' LIMIT ?1",
    )?;
    let cwds = statement
        .query_map([limit as i64], |row| row.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(cwds)
}

/// An action as stored, for listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredAction {
    /// Row id.
    pub id: i64,
    /// Session.
    pub session: String,
    /// Ordering key within the session, as stored: the file generation's rank above the place
    /// in the file (see [`stored_seq`]).
    pub seq: u64,
    /// RFC 3339 time.
    pub ts: Option<String>,
    /// Source format name.
    pub source: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Tool name.
    pub tool: String,
    /// Input object.
    pub input: Value,
    /// Call id.
    pub call_id: Option<String>,
    /// `None` while the result is unknown.
    pub ok: Option<bool>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Output excerpt.
    pub output: Option<String>,
    /// Duration.
    pub duration_ms: Option<u64>,
}

/// The most recent `limit` actions (of one session, if given), oldest first.
pub fn recent_actions(
    conn: &Connection,
    session: Option<&str>,
    limit: u64,
) -> Result<Vec<StoredAction>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT * FROM (
            SELECT id, session, seq, ts, source, cwd, tool, input, call_id, ok, exit_code, output,
                   duration_ms
            FROM actions WHERE ?1 IS NULL OR session = ?1
            ORDER BY id DESC LIMIT ?2
         ) ORDER BY session, seq",
    )?;
    let rows = stmt.query_map(params![session, limit as i64], stored_action)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The actions of `session` whose seq lies in `first..=last`, in order: what one occurrence
/// of a pattern ran, as the log recorded it (a pattern's evidence names the range).
pub fn actions_between(
    conn: &Connection,
    session: &str,
    first: u64,
    last: u64,
) -> Result<Vec<StoredAction>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, session, seq, ts, source, cwd, tool, input, call_id, ok, exit_code, output,
                duration_ms
         FROM actions WHERE session = ?1 AND seq BETWEEN ?2 AND ?3
         ORDER BY seq",
    )?;
    let rows = stmt.query_map(
        params![
            session,
            i64::try_from(first).unwrap_or(i64::MAX),
            i64::try_from(last).unwrap_or(i64::MAX)
        ],
        stored_action,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// An action's id and where it was read: what a person looks up to check a pattern's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ActionPlace {
    /// The action's id (what `toolsmith actions` lists).
    pub id: i64,
    /// The `ingest_files` row it was read from (`None` once that row is gone).
    pub file_id: Option<i64>,
    /// The line its record starts at (`None`: stored by an older build, or a whole-file
    /// format).
    pub line: Option<u64>,
}

/// The id and place of each action of `session` whose seq lies in `first..=last`, in order.
pub fn places_between(
    conn: &Connection,
    session: &str,
    first: u64,
    last: u64,
) -> Result<Vec<ActionPlace>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, file_id, line FROM actions WHERE session = ?1 AND seq BETWEEN ?2 AND ?3
         ORDER BY seq",
    )?;
    let rows = stmt.query_map(
        params![
            session,
            i64::try_from(first).unwrap_or(i64::MAX),
            i64::try_from(last).unwrap_or(i64::MAX)
        ],
        |row| {
            Ok(ActionPlace {
                id: row.get(0)?,
                file_id: row.get(1)?,
                line: row.get::<_, Option<i64>>(2)?.map(|l| l as u64),
            })
        },
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The actions with these ids, in id order (ids not stored are left out).
pub fn actions_by_id(conn: &Connection, ids: &[i64]) -> Result<Vec<StoredAction>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, session, seq, ts, source, cwd, tool, input, call_id, ok, exit_code, output,
                duration_ms
         FROM actions WHERE id = ?1",
    )?;
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut found = Vec::with_capacity(sorted.len());
    for id in sorted {
        if let Some(action) = stmt.query_row([id], stored_action).optional()? {
            found.push(action);
        }
    }
    Ok(found)
}

/// A row of `SELECT id, session, seq, ts, source, cwd, tool, input, call_id, ok, exit_code,
/// output, duration_ms FROM actions`.
fn stored_action(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredAction> {
    let input: String = row.get(7)?;
    Ok(StoredAction {
        id: row.get(0)?,
        session: row.get(1)?,
        seq: row.get::<_, i64>(2)? as u64,
        ts: row.get(3)?,
        source: row.get(4)?,
        cwd: row.get(5)?,
        tool: row.get(6)?,
        input: serde_json::from_str(&input).unwrap_or(Value::String(input)),
        call_id: row.get(8)?,
        ok: row.get(9)?,
        exit_code: row.get(10)?,
        output: row.get(11)?,
        duration_ms: row.get::<_, Option<i64>>(12)?.map(|d| d as u64),
    })
}

/// How many actions are stored (of `session`, if given).
pub fn count_actions(conn: &Connection, session: Option<&str>) -> Result<u64, StoreError> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM actions WHERE ?1 IS NULL OR session = ?1")?
        .query_row([session], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// A stored action as mining reads it, borrowed from the row (mining reads every action: no
/// copy per row).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActionView<'r> {
    /// Row id: increasing in storage order.
    pub id: i64,
    /// Session.
    pub session: &'r str,
    /// Ordering key within the session, as stored (see [`stored_seq`]; a stored negative reads
    /// as 0).
    pub seq: u64,
    /// Source format name.
    pub source: &'r str,
    /// Tool name.
    pub tool: &'r str,
    /// Input object, as JSON text.
    pub input: &'r str,
    /// `None` while the result is unknown.
    pub ok: Option<bool>,
    /// The output excerpt, of failed calls only.
    pub failed_output: Option<&'r str>,
    /// Duration as stored (an overflowed one can read negative).
    pub duration_ms: Option<i64>,
    /// When it started (RFC 3339), when the log said.
    pub ts: Option<&'r str>,
}

/// Each sub-agent's session and the session that started it, as ingest recorded them in the
/// `sessions` table (a link only: the sessions' rows are ingest's), so that mining counts a
/// sub-agent's session with its parent's.
pub fn session_parents(
    conn: &Connection,
) -> Result<std::collections::HashMap<String, String>, StoreError> {
    let mut stmt = conn.prepare("SELECT id, parent FROM sessions WHERE parent IS NOT NULL")?;
    let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Calls `each` with every stored action, in session order (session, then seq), stopping at
/// the first error `each` returns.
pub fn for_each_action<E: From<StoreError>>(
    conn: &Connection,
    mut each: impl FnMut(ActionView<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let query = |e: rusqlite::Error| E::from(StoreError::Query(e));
    let mut stmt = conn
        .prepare(
            "SELECT id, session, seq, source, tool, input, ok,
                    CASE WHEN ok = 0 THEN output END, duration_ms, ts
             FROM actions ORDER BY session, seq",
        )
        .map_err(query)?;
    let mut rows = stmt.query([]).map_err(query)?;
    while let Some(row) = rows.next().map_err(query)? {
        let str_at = |i: usize| -> rusqlite::Result<&str> {
            row.get_ref(i)?.as_str().map_err(rusqlite::Error::from)
        };
        let view = ActionView {
            id: row.get(0).map_err(query)?,
            session: str_at(1).map_err(query)?,
            seq: row.get::<_, i64>(2).map_err(query)?.max(0) as u64,
            source: str_at(3).map_err(query)?,
            tool: str_at(4).map_err(query)?,
            input: str_at(5).map_err(query)?,
            ok: row.get(6).map_err(query)?,
            failed_output: row
                .get_ref(7)
                .and_then(|v| v.as_str_or_null().map_err(rusqlite::Error::from))
                .map_err(query)?,
            duration_ms: row.get(8).map_err(query)?,
            ts: row
                .get_ref(9)
                .and_then(|v| v.as_str_or_null().map_err(rusqlite::Error::from))
                .map_err(query)?,
        };
        each(view)?;
    }
    Ok(())
}

/// A stored call looked up by its place in a session.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    /// Source format name.
    pub source: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Tool name.
    pub tool: String,
    /// Input object, as JSON text.
    pub input: String,
    /// `None` while the result is unknown.
    pub ok: Option<bool>,
    /// Output excerpt.
    pub output: Option<String>,
}

/// Looks stored calls up by (session, seq) with one prepared statement, for callers that look
/// up many.
pub struct CallLookup<'c> {
    stmt: rusqlite::Statement<'c>,
}

impl<'c> CallLookup<'c> {
    /// Prepares the lookup on `conn`.
    pub fn new(conn: &'c Connection) -> Result<Self, StoreError> {
        Ok(CallLookup {
            stmt: conn.prepare(
                "SELECT source, cwd, tool, input, ok, output FROM actions
                 WHERE session = ?1 AND seq = ?2",
            )?,
        })
    }

    /// The call at `seq` in `session`, if stored.
    pub fn get(&mut self, session: &str, seq: u64) -> Result<Option<StoredCall>, StoreError> {
        Ok(self
            .stmt
            .query_row(params![session, seq as i64], |row| {
                Ok(StoredCall {
                    source: row.get(0)?,
                    cwd: row.get(1)?,
                    tool: row.get(2)?,
                    input: row.get(3)?,
                    ok: row.get(4)?,
                    output: row.get(5)?,
                })
            })
            .optional()?)
    }
}

/// A successful call's input, with where it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct CallInput {
    /// Session.
    pub session: String,
    /// Ordering key within the session, as stored: the file generation's rank above the place
    /// in the file (see [`stored_seq`]).
    pub seq: i64,
    /// Input object, as JSON text.
    pub input: String,
}

/// The newest `limit` successful calls whose input text contains `needle`, newest first.
pub fn recent_successes_mentioning(
    conn: &Connection,
    needle: &str,
    limit: u32,
) -> Result<Vec<CallInput>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT session, seq, input FROM actions
         WHERE ok = 1 AND instr(input, ?1) > 0 ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![needle, limit], |r| {
        Ok(CallInput {
            session: r.get(0)?,
            seq: r.get(1)?,
            input: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_projects_seen_are_the_distinct_working_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("state.db")).expect("store");
        let cwds = store
            .call_blocking(|conn| {
                for (seq, cwd) in [
                    (1, Some("/w/a")),
                    (2, Some("/w/a")),
                    (3, Some("/w/b")),
                    (4, None),
                ] {
                    conn.execute(
                        "INSERT INTO actions (session, seq, source, cwd, tool, input)
                         VALUES ('s', ?1, 'crush', ?2, 'bash', '{}')",
                        params![seq, cwd],
                    )?;
                }
                distinct_cwds(conn, 10)
            })
            .expect("cwds");
        let mut cwds = cwds;
        cwds.sort();
        assert_eq!(cwds, ["/w/a", "/w/b"]);
    }
}
