//! Ingest's side of the store: checkpoints, and batches of items applied in one transaction with
//! the checkpoint that covers them — so a crash at any instant loses and duplicates nothing.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use super::adapters::Item;
use crate::action::{Action, ActionResult};
use crate::store::{Pending, Store, StoreError, unix_now};

/// How many problems are kept per file (all are counted).
pub const PROBLEMS_KEPT_PER_FILE: i64 = 5;

/// Where reading a file stands, as stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checkpoint {
    /// The source's name (a configured label, or the format's name).
    pub source: String,
    /// The format's name.
    pub format: String,
    /// The file.
    pub path: String,
    /// Device of the file that was read.
    pub dev: u64,
    /// Inode of the file that was read.
    pub inode: u64,
    /// FNV-1a hash of the file's first `fingerprint_len` bytes.
    pub fingerprint: u64,
    /// How many leading bytes the fingerprint covers.
    pub fingerprint_len: u64,
    /// Bytes consumed: reading resumes here.
    pub offset: u64,
    /// Line number at `offset`.
    pub line: u64,
    /// File size when last read.
    pub size_seen: u64,
    /// Modification time when last read (nanoseconds), for whole-file formats.
    pub mtime_ns: i64,
    /// The parser's state at `offset`.
    pub parser_state: Option<Value>,
}

/// What one read produced: items, problems, and the checkpoint after them.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The checkpoint once this batch is stored.
    pub checkpoint: Checkpoint,
    /// Items parsed from the bytes the checkpoint now covers (already redacted and capped).
    pub items: Vec<Item>,
    /// Problems: (line, reason).
    pub problems: Vec<(u64, String)>,
    /// Bytes consumed by this batch.
    pub bytes: u64,
    /// Records seen in this batch.
    pub records: u64,
    /// Whether the file was found truncated, rewritten or replaced, and is read from the start.
    pub reset: bool,
}

/// What applying a batch changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// New actions stored.
    pub inserted: u64,
    /// Results joined to stored calls.
    pub joined: u64,
    /// Items that were already stored (re-read bytes).
    pub duplicates: u64,
}

/// Hands batches to the store's writer one step ahead: while batch N is being written, the
/// caller reads and parses batch N+1. Batch N+1 is submitted only once batch N is stored, so a
/// failed batch stops everything after it (each checkpoint assumes the ones before it).
pub struct BatchWriter<'s> {
    store: &'s Store,
    in_flight: Option<Pending<Applied>>,
}

impl<'s> BatchWriter<'s> {
    /// A writer with nothing in flight.
    pub fn new(store: &'s Store) -> Self {
        BatchWriter {
            store,
            in_flight: None,
        }
    }

    /// Waits for the batch in flight, then submits `batch`. Returns what the waited-for batch
    /// changed (nothing for the first).
    pub fn push(&mut self, batch: Batch) -> Result<Applied, StoreError> {
        let done = self.finish()?;
        // Encoding the inputs here, on the reading thread, keeps that work off the writer.
        let inputs = encode_inputs(&batch);
        self.in_flight = Some(
            self.store
                .submit(move |conn| apply_encoded(conn, &batch, &inputs))?,
        );
        Ok(done)
    }

    /// Waits for the batch in flight, if any, and returns what it changed.
    pub fn finish(&mut self) -> Result<Applied, StoreError> {
        match self.in_flight.take() {
            Some(pending) => pending.wait(),
            None => Ok(Applied::default()),
        }
    }
}

impl Drop for BatchWriter<'_> {
    fn drop(&mut self) {
        // An early return (an error while reading) must not leave a batch half-known: wait for
        // it, so that whoever reads the checkpoint next sees it stored or not, never in flight.
        let _ = self.finish();
    }
}

/// The stored checkpoint of `path`, if it was read before.
pub fn checkpoint(conn: &Connection, path: &str) -> Result<Option<Checkpoint>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT source, format, path, dev, inode, fingerprint, fingerprint_len, offset, line,
                    size_seen, mtime_ns, parser_state
             FROM ingest_files WHERE path = ?1",
            [path],
            |row| {
                let state: Option<String> = row.get(11)?;
                Ok(Checkpoint {
                    source: row.get(0)?,
                    format: row.get(1)?,
                    path: row.get(2)?,
                    dev: row.get::<_, i64>(3)? as u64,
                    inode: row.get::<_, i64>(4)? as u64,
                    fingerprint: row.get::<_, i64>(5)? as u64,
                    fingerprint_len: row.get::<_, i64>(6)? as u64,
                    offset: row.get::<_, i64>(7)? as u64,
                    line: row.get::<_, i64>(8)? as u64,
                    size_seen: row.get::<_, i64>(9)? as u64,
                    mtime_ns: row.get(10)?,
                    parser_state: state.and_then(|s| serde_json::from_str(&s).ok()),
                })
            },
        )
        .optional()?)
}

/// The JSON text of each action's input, in item order.
fn encode_inputs(batch: &Batch) -> Vec<String> {
    batch
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Action(action) => Some(action.input.to_string()),
            _ => None,
        })
        .collect()
}

/// Stores a batch: its items, its problems and its checkpoint, in one transaction.
pub fn apply_batch(conn: &mut Connection, batch: &Batch) -> Result<Applied, StoreError> {
    apply_encoded(conn, batch, &encode_inputs(batch))
}

/// What a batch adds to one session's row.
struct SessionDelta<'b> {
    source: &'static str,
    parent: Option<&'b str>,
    first_ts: Option<String>,
    last_ts: Option<String>,
    actions: i64,
}

/// [`apply_batch`] with the inputs already encoded by [`encode_inputs`].
fn apply_encoded(
    conn: &mut Connection,
    batch: &Batch,
    inputs: &[String],
) -> Result<Applied, StoreError> {
    let tx = conn.transaction()?;
    let file_id = upsert_checkpoint(&tx, batch)?;
    let mut applied = Applied::default();
    let mut inputs = inputs.iter();
    // Session rows are updated once per batch, not once per action.
    let mut sessions: Vec<(&str, SessionDelta)> = Vec::new();
    let mut session_at: std::collections::HashMap<&str, usize> = Default::default();
    for item in &batch.items {
        match item {
            Item::Action(action) => {
                let encoded;
                let input = match inputs.next() {
                    Some(input) => input.as_str(),
                    None => {
                        encoded = action.input.to_string();
                        encoded.as_str()
                    }
                };
                let ts = action.ts.map(|t| t.to_string());
                if insert_action(&tx, action, input, ts.as_deref(), file_id)? {
                    applied.inserted += 1;
                    let at = *session_at.entry(&action.session).or_insert_with(|| {
                        sessions.push((
                            &action.session,
                            SessionDelta {
                                source: action.source.as_str(),
                                parent: None,
                                first_ts: None,
                                last_ts: None,
                                actions: 0,
                            },
                        ));
                        sessions.len() - 1
                    });
                    let delta = &mut sessions[at].1;
                    delta.actions += 1;
                    if action.parent_session.is_some() {
                        delta.parent = action.parent_session.as_deref();
                    }
                    if let Some(ts) = ts {
                        if delta.first_ts.as_ref().is_none_or(|f| ts < *f) {
                            delta.first_ts = Some(ts.clone());
                        }
                        if delta.last_ts.as_ref().is_none_or(|l| ts > *l) {
                            delta.last_ts = Some(ts);
                        }
                    }
                } else {
                    applied.duplicates += 1;
                }
            }
            Item::Result(late) => {
                if join_result(&tx, &late.session, &late.call_id, &late.result)? {
                    applied.joined += 1;
                }
            }
            Item::SessionLink { session, parent } => {
                tx.prepare_cached(
                    "INSERT INTO sessions (id, source, parent) VALUES (?1, ?2, ?3)
                     ON CONFLICT (id) DO UPDATE SET parent = excluded.parent",
                )?
                .execute(params![session, batch.checkpoint.format, parent])?;
            }
        }
    }
    for (session, delta) in &sessions {
        tx.prepare_cached(
            "INSERT INTO sessions (id, source, parent, first_ts, last_ts, actions)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (id) DO UPDATE SET
                actions = actions + excluded.actions,
                parent = coalesce(excluded.parent, parent),
                first_ts = CASE WHEN first_ts IS NULL OR excluded.first_ts < first_ts
                                THEN coalesce(excluded.first_ts, first_ts) ELSE first_ts END,
                last_ts = CASE WHEN last_ts IS NULL OR excluded.last_ts > last_ts
                               THEN coalesce(excluded.last_ts, last_ts) ELSE last_ts END",
        )?
        .execute(params![
            session,
            delta.source,
            delta.parent,
            delta.first_ts,
            delta.last_ts,
            delta.actions
        ])?;
    }
    for (line, reason) in &batch.problems {
        tx.prepare_cached(
            "INSERT INTO ingest_problems (file_id, line, reason, at)
             SELECT ?1, ?2, ?3, ?4
             WHERE (SELECT count(*) FROM ingest_problems WHERE file_id = ?1) < ?5",
        )?
        .execute(params![
            file_id,
            *line as i64,
            reason,
            unix_now(),
            PROBLEMS_KEPT_PER_FILE
        ])?;
    }
    tx.prepare_cached(
        "UPDATE ingest_files SET bytes_read = bytes_read + ?2, records = records + ?3,
                actions = actions + ?4, problems = problems + ?5, resets = resets + ?6
         WHERE id = ?1",
    )?
    .execute(params![
        file_id,
        batch.bytes as i64,
        batch.records as i64,
        applied.inserted as i64,
        batch.problems.len() as i64,
        i64::from(batch.reset)
    ])?;
    tx.commit()?;
    Ok(applied)
}

fn upsert_checkpoint(conn: &Connection, batch: &Batch) -> Result<i64, StoreError> {
    let c = &batch.checkpoint;
    let state = c.parser_state.as_ref().map(Value::to_string);
    conn.prepare_cached(
        "INSERT INTO ingest_files (source, format, path, dev, inode, fingerprint, fingerprint_len,
                                   offset, line, size_seen, mtime_ns, parser_state, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (path) DO UPDATE SET
            source = excluded.source, format = excluded.format, dev = excluded.dev,
            inode = excluded.inode, fingerprint = excluded.fingerprint,
            fingerprint_len = excluded.fingerprint_len, offset = excluded.offset,
            line = excluded.line, size_seen = excluded.size_seen, mtime_ns = excluded.mtime_ns,
            parser_state = excluded.parser_state, updated_at = excluded.updated_at",
    )?
    .execute(params![
        c.source,
        c.format,
        c.path,
        c.dev as i64,
        c.inode as i64,
        c.fingerprint as i64,
        c.fingerprint_len as i64,
        c.offset as i64,
        c.line as i64,
        c.size_seen as i64,
        c.mtime_ns,
        state,
        unix_now()
    ])?;
    Ok(conn
        .prepare_cached("SELECT id FROM ingest_files WHERE path = ?1")?
        .query_row([&c.path], |row| row.get(0))?)
}

/// Inserts an action unless already stored; joins a result that arrived before its call.
fn insert_action(
    conn: &Connection,
    action: &Action,
    input: &str,
    ts: Option<&str>,
    file_id: i64,
) -> Result<bool, StoreError> {
    let result = action.result.as_ref();
    let inserted = conn.prepare_cached("INSERT OR IGNORE INTO actions (session, seq, ts, source, cwd, tool, input, call_id, ok,
                                        exit_code, output, duration_ms, file_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)")?.execute(
        params![
            action.session,
            action.seq as i64,
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
            file_id
        ],
    )? == 1;
    if !inserted {
        return Ok(false);
    }
    if let (Some(call_id), None) = (&action.call_id, result) {
        let pending = conn
            .prepare_cached(
                "DELETE FROM pending_results WHERE session = ?1 AND call_id = ?2
                 RETURNING ok, exit_code, output, duration_ms",
            )?
            .query_row(params![action.session, call_id], |row| {
                Ok(ActionResult {
                    ok: row.get(0)?,
                    exit_code: row.get(1)?,
                    output: row.get(2)?,
                    duration_ms: row.get::<_, Option<i64>>(3)?.map(|d| d as u64),
                })
            })
            .optional()?;
        if let Some(result) = pending {
            join_result(conn, &action.session, call_id, &result)?;
        }
    }
    Ok(true)
}

/// Joins a result to its stored call; keeps it pending when the call is not stored yet.
fn join_result(
    conn: &Connection,
    session: &str,
    call_id: &str,
    result: &ActionResult,
) -> Result<bool, StoreError> {
    let updated = conn
        .prepare_cached(
            "UPDATE actions SET ok = ?3, exit_code = ?4, output = ?5, duration_ms = ?6
         WHERE session = ?1 AND call_id = ?2 AND ok IS NULL",
        )?
        .execute(params![
            session,
            call_id,
            result.ok,
            result.exit_code,
            result.output,
            result.duration_ms.map(|d| d as i64)
        ])?;
    if updated > 0 {
        return Ok(true);
    }
    let call_exists: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM actions WHERE session = ?1 AND call_id = ?2)",
        )?
        .query_row(params![session, call_id], |row| row.get(0))?;
    if !call_exists {
        conn.prepare_cached(
            "INSERT OR REPLACE INTO pending_results (session, call_id, ok, exit_code, output,
                                                     duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            session,
            call_id,
            result.ok,
            result.exit_code,
            result.output,
            result.duration_ms.map(|d| d as i64)
        ])?;
    }
    Ok(false)
}

/// An action as stored, for listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredAction {
    /// Row id.
    pub id: i64,
    /// Session.
    pub session: String,
    /// Ordering key within the session.
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
    let rows = stmt.query_map(params![session, limit as i64], |row| {
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
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One source's figures, for `toolsmith sources`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceSummary {
    /// The source's name.
    pub source: String,
    /// Its format.
    pub format: String,
    /// Files read.
    pub files: u64,
    /// Bytes consumed.
    pub bytes_read: u64,
    /// Actions stored.
    pub actions: u64,
    /// Problems met.
    pub problems: u64,
    /// Bytes between the checkpoints and the files' sizes when last looked at.
    pub lag_bytes: u64,
    /// The first few problems: (path, line, reason).
    pub examples: Vec<ProblemExample>,
    /// Files of this source that were not read (see [`SkippedFile`]).
    pub skipped: u64,
    /// The first [`SKIPPED_SHOWN`] of them.
    pub skipped_files: Vec<SkippedFile>,
}

/// How many skipped files a source summary names (all are counted).
pub const SKIPPED_SHOWN: i64 = 20;

/// A file a source holds but the tailer did not read, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedFile {
    /// The file.
    pub path: String,
    /// Why, and what to do.
    pub reason: String,
}

/// Records that `path`, of `source`, was not read, and why (replacing an earlier reason).
pub fn record_skipped(
    conn: &Connection,
    path: &str,
    source: &str,
    format: &str,
    reason: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO ingest_skipped (path, source, format, reason, at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (path) DO UPDATE SET source = excluded.source, format = excluded.format,
             reason = excluded.reason, at = excluded.at",
        params![path, source, format, reason, unix_now()],
    )?;
    Ok(())
}

/// Forgets that `path` was skipped (it was read, or is gone).
pub fn forget_skipped(conn: &Connection, path: &str) -> Result<(), StoreError> {
    conn.execute("DELETE FROM ingest_skipped WHERE path = ?1", params![path])?;
    Ok(())
}

/// Forgets every skipped file: the tailer finds them again when it starts.
pub fn forget_all_skipped(conn: &Connection) -> Result<(), StoreError> {
    conn.execute("DELETE FROM ingest_skipped", [])?;
    Ok(())
}

/// A problem met while reading a file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProblemExample {
    /// The file.
    pub path: String,
    /// 1-based line.
    pub line: u64,
    /// What was wrong.
    pub reason: String,
}

/// Per-source figures over every file read.
pub fn source_summaries(conn: &Connection) -> Result<Vec<SourceSummary>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT source, format, count(*), sum(bytes_read), sum(actions), sum(problems),
                sum(max(size_seen - offset, 0))
         FROM ingest_files GROUP BY source, format ORDER BY source, format",
    )?;
    let mut summaries: Vec<SourceSummary> = stmt
        .query_map([], |row| {
            Ok(SourceSummary {
                source: row.get(0)?,
                format: row.get(1)?,
                files: row.get::<_, i64>(2)? as u64,
                bytes_read: row.get::<_, i64>(3)? as u64,
                actions: row.get::<_, i64>(4)? as u64,
                problems: row.get::<_, i64>(5)? as u64,
                lag_bytes: row.get::<_, i64>(6)? as u64,
                examples: Vec::new(),
                skipped: 0,
                skipped_files: Vec::new(),
            })
        })?
        .collect::<Result<_, _>>()?;
    // A source whose every file was skipped is shown too.
    let mut skipped_sources = conn.prepare(
        "SELECT source, format, count(*) FROM ingest_skipped GROUP BY source, format
         ORDER BY source, format",
    )?;
    let counts: Vec<(String, String, i64)> = skipped_sources
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (source, format, count) in counts {
        let at = summaries
            .iter()
            .position(|s| s.source == source && s.format == format);
        let i = match at {
            Some(i) => i,
            None => {
                summaries.push(SourceSummary {
                    source,
                    format,
                    files: 0,
                    bytes_read: 0,
                    actions: 0,
                    problems: 0,
                    lag_bytes: 0,
                    examples: Vec::new(),
                    skipped: 0,
                    skipped_files: Vec::new(),
                });
                summaries.len() - 1
            }
        };
        summaries[i].skipped = count as u64;
    }
    summaries.sort_by(|a, b| (&a.source, &a.format).cmp(&(&b.source, &b.format)));
    let mut skipped_files = conn.prepare(
        "SELECT path, reason FROM ingest_skipped WHERE source = ?1 AND format = ?2
         ORDER BY path LIMIT ?3",
    )?;
    for summary in summaries.iter_mut().filter(|s| s.skipped > 0) {
        summary.skipped_files = skipped_files
            .query_map(
                params![summary.source, summary.format, SKIPPED_SHOWN],
                |row| {
                    Ok(SkippedFile {
                        path: row.get(0)?,
                        reason: row.get(1)?,
                    })
                },
            )?
            .collect::<Result<_, _>>()?;
    }
    let mut examples = conn.prepare(
        "SELECT f.path, p.line, p.reason FROM ingest_problems p
         JOIN ingest_files f ON f.id = p.file_id
         WHERE f.source = ?1 AND f.format = ?2 ORDER BY p.id LIMIT 5",
    )?;
    for summary in &mut summaries {
        summary.examples = examples
            .query_map(params![summary.source, summary.format], |row| {
                Ok(ProblemExample {
                    path: row.get(0)?,
                    line: row.get::<_, i64>(1)? as u64,
                    reason: row.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
    }
    Ok(summaries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Source;
    use crate::ingest::adapters::LateResult;

    fn action(seq: u64, call: &str, result: Option<ActionResult>) -> Item {
        Item::Action(Action {
            session: "s1".into(),
            seq,
            ts: None,
            source: Source::Native,
            cwd: Some("/w".into()),
            tool: "Bash".into(),
            input: serde_json::json!({"command": format!("echo {seq}")}),
            call_id: Some(call.into()),
            parent_session: None,
            result,
        })
    }

    fn late(call: &str, ok: bool) -> Item {
        Item::Result(LateResult {
            session: "s1".into(),
            call_id: call.into(),
            result: ActionResult {
                ok,
                exit_code: Some(i32::from(!ok)),
                output: "out".into(),
                duration_ms: Some(5),
            },
        })
    }

    fn batch(offset: u64, items: Vec<Item>) -> Batch {
        Batch {
            checkpoint: Checkpoint {
                source: "native".into(),
                format: "native".into(),
                path: "/logs/a.jsonl".into(),
                offset,
                line: 1,
                ..Checkpoint::default()
            },
            items,
            problems: vec![(3, "invalid JSON".into())],
            bytes: 10,
            records: 2,
            reset: false,
        }
    }

    #[test]
    fn batches_store_actions_join_results_and_move_the_checkpoint_together() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("s.db")).expect("open");
        store
            .call_blocking(|conn| {
                // A result can arrive before its call (another batch, another file).
                let first = apply_batch(conn, &batch(10, vec![late("c2", false)]))?;
                assert_eq!(first, Applied::default());
                let second = apply_batch(
                    conn,
                    &batch(
                        20,
                        vec![
                            action(1, "c1", None),
                            action(2, "c2", None),
                            late("c1", true),
                        ],
                    ),
                )?;
                assert_eq!((second.inserted, second.joined), (2, 1));
                // Re-reading the same bytes stores nothing twice.
                let again = apply_batch(conn, &batch(20, vec![action(1, "c1", None)]))?;
                assert_eq!((again.inserted, again.duplicates), (0, 1));

                let actions = recent_actions(conn, Some("s1"), 10)?;
                assert_eq!(actions.len(), 2);
                assert_eq!((actions[0].ok, actions[0].exit_code), (Some(true), Some(0)));
                assert_eq!(
                    (actions[1].ok, actions[1].exit_code),
                    (Some(false), Some(1))
                );
                let cp = checkpoint(conn, "/logs/a.jsonl")?.expect("checkpoint");
                assert_eq!(cp.offset, 20);
                let summary = source_summaries(conn)?;
                assert_eq!(summary.len(), 1);
                assert_eq!((summary[0].actions, summary[0].problems), (2, 3));
                assert_eq!(summary[0].examples.len(), 3);
                let pending: i64 =
                    conn.query_row("SELECT count(*) FROM pending_results", [], |r| r.get(0))?;
                assert_eq!(pending, 0);
                Ok(())
            })
            .expect("store operations");
    }
}
