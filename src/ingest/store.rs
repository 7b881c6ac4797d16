//! Ingest's side of the store: checkpoints, and batches of items applied in one transaction with
//! the checkpoint that covers them — so a crash at any instant loses and duplicates nothing.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use super::adapters::Item;
use crate::action::Action;
use crate::action::Source;
use crate::action::stored::{Inserted, ReadAt, call_root, insert_action, join_result, stored_seq};
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
    /// The rank of the file generation read (see [`crate::action::stored::stored_seq`]): given
    /// by the store when the generation is first stored.
    pub rank: u64,
    /// FNV-1a hash of the `tail_len` bytes before `offset`: the same bytes there mean the
    /// content read is still the file's (a rewrite in place shows here whatever the size).
    pub tail_hash: u64,
    /// How many bytes `tail_hash` covers (0: unknown, as for a checkpoint of an older build).
    pub tail_len: u64,
}

/// Which file generation a batch's checkpoint belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Generation {
    /// The one the path's checkpoint names (a new one when the path has none).
    #[default]
    Continue,
    /// A new one: the file was truncated, rewritten or replaced; the path's former generation
    /// is kept for a rotated copy of it to resume.
    New,
    /// A known one, by rank: the file is a rotated (renamed or copied) generation read before.
    Adopt(u64),
}

/// What one read produced: items, problems, and the checkpoint after them.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The checkpoint once this batch is stored.
    pub checkpoint: Checkpoint,
    /// Items parsed from the bytes the checkpoint now covers (already redacted and capped).
    pub items: Vec<Item>,
    /// The line of its file each item's record starts at, by index in `items` (an item past
    /// its end, as from a whole-file format, has no line).
    pub lines: Vec<u64>,
    /// Problems: (line, reason).
    pub problems: Vec<(u64, String)>,
    /// Bytes consumed by this batch.
    pub bytes: u64,
    /// Records seen in this batch.
    pub records: u64,
    /// Whether the file was found truncated, rewritten or replaced, and is read from the start.
    pub reset: bool,
    /// The generation the checkpoint belongs to (only a read's first batch says other than
    /// [`Generation::Continue`]).
    pub generation: Generation,
}

/// What applying a batch changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// New actions stored.
    pub inserted: u64,
    /// Results stored with their call: carried by the call's own record, joined to a call
    /// stored before (an earlier batch or file), or waiting for the call and joined as it is
    /// stored. A result whose call is not stored yet is counted when it is joined.
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
                    size_seen, mtime_ns, parser_state, rank, tail_hash, tail_len
             FROM ingest_files WHERE path = ?1",
            [path],
            checkpoint_row,
        )
        .optional()?)
}

/// A row of `SELECT source, format, path, dev, inode, fingerprint, fingerprint_len, offset,
/// line, size_seen, mtime_ns, parser_state, rank, tail_hash, tail_len`.
fn checkpoint_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Checkpoint> {
    let state: Option<String> = row.get(11)?;
    let int = |i: usize| row.get::<_, i64>(i).map(|v| v as u64);
    Ok(Checkpoint {
        source: row.get(0)?,
        format: row.get(1)?,
        path: row.get(2)?,
        dev: int(3)?,
        inode: int(4)?,
        fingerprint: int(5)?,
        fingerprint_len: int(6)?,
        offset: int(7)?,
        line: int(8)?,
        size_seen: int(9)?,
        mtime_ns: row.get(10)?,
        parser_state: state.and_then(|s| serde_json::from_str(&s).ok()),
        rank: int(12)?,
        tail_hash: int(13)?,
        tail_len: int(14)?,
    })
}

/// What a file is, for finding the generation it may be a rotated or copied form of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe<'p> {
    /// The file's path (its own checkpoint is not a candidate).
    pub path: &'p str,
    /// Device.
    pub dev: u64,
    /// Inode.
    pub inode: u64,
    /// FNV-1a of its first [`crate::ingest::reader::FINGERPRINT_BYTES`] bytes (or all, if
    /// shorter).
    pub fingerprint: u64,
}

/// The generations, read before under other paths (current or moved on from), that `probe`
/// may hold: same first bytes, or same inode. The caller checks their content.
pub fn known_generations(conn: &Connection, probe: &Probe) -> Result<Vec<Checkpoint>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT source, format, path, dev, inode, fingerprint, fingerprint_len, offset, line,
                size_seen, mtime_ns, parser_state, rank, tail_hash, tail_len
         FROM ingest_files
         WHERE path <> ?1 AND offset > 0
           AND (fingerprint = ?4 OR (inode = ?3 AND dev = ?2))
         UNION ALL
         SELECT source, format, path, dev, inode, fingerprint, fingerprint_len, offset, line,
                offset, 0, parser_state, rank, tail_hash, tail_len
         FROM ingest_generations
         WHERE offset > 0 AND (fingerprint = ?4 OR (inode = ?3 AND dev = ?2))
         LIMIT 64",
    )?;
    let rows = stmt.query_map(
        params![
            probe.path,
            probe.dev as i64,
            probe.inode as i64,
            probe.fingerprint as i64
        ],
        checkpoint_row,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
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
    let (file_id, rank) = upsert_checkpoint(&tx, batch)?;
    let spans = Source::from_name(&batch.checkpoint.format)
        .is_some_and(|source| source.call_ids_span_sessions());
    // Each session's parent, as this batch or the store says: a late result's call is keyed
    // by its root session.
    let mut parents: std::collections::HashMap<String, Option<String>> = Default::default();
    let mut applied = Applied::default();
    let mut inputs = inputs.iter();
    // Session rows are updated once per batch, not once per action.
    let mut sessions: Vec<(&str, SessionDelta)> = Vec::new();
    let mut session_at: std::collections::HashMap<&str, usize> = Default::default();
    for (index, item) in batch.items.iter().enumerate() {
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
                if spans && let Some(parent) = &action.parent_session {
                    parents.insert(action.session.clone(), Some(parent.clone()));
                }
                let seq = stored_seq(rank, action.seq);
                let root = call_root(action);
                let at = ReadAt {
                    file_id,
                    line: batch.lines.get(index).copied(),
                };
                if let Inserted::New { with_result } =
                    insert_action(&tx, action, seq, root, input, ts.as_deref(), at)?
                {
                    applied.inserted += 1;
                    applied.joined += u64::from(with_result);
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
                let root = if spans {
                    if !parents.contains_key(&late.session) {
                        let parent: Option<String> = tx
                            .prepare_cached("SELECT parent FROM sessions WHERE id = ?1")?
                            .query_row([&late.session], |row| row.get(0))
                            .optional()?
                            .flatten();
                        parents.insert(late.session.clone(), parent);
                    }
                    parents
                        .get(&late.session)
                        .and_then(Option::as_deref)
                        .unwrap_or(&late.session)
                } else {
                    &late.session
                };
                if join_result(&tx, root, &late.call_id, &late.result, late.replaces)? {
                    applied.joined += 1;
                }
            }
            Item::SessionLink { session, parent } => {
                if spans {
                    parents.insert(session.clone(), Some(parent.clone()));
                }
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

/// Stores the batch's checkpoint under its path, in the generation the batch names; returns
/// the row's id and the generation's rank. A path that moves on to another generation keeps
/// the one it leaves in `ingest_generations`, for a rotated or copied file holding it.
fn upsert_checkpoint(conn: &Connection, batch: &Batch) -> Result<(i64, u64), StoreError> {
    let c = &batch.checkpoint;
    let existing: Option<(i64, i64)> = conn
        .prepare_cached("SELECT id, rank FROM ingest_files WHERE path = ?1")?
        .query_row([&c.path], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let rank = match (batch.generation, existing) {
        (Generation::Continue, Some((_, rank))) => rank,
        (Generation::Adopt(rank), _) => rank as i64,
        (Generation::Continue | Generation::New, _) => next_rank(conn)?,
    };
    if let Some((id, old)) = existing
        && old != rank
    {
        conn.prepare_cached(
            "INSERT INTO ingest_generations (rank, source, format, path, dev, inode, fingerprint,
                 fingerprint_len, offset, line, tail_hash, tail_len, parser_state, retired_at)
             SELECT rank, source, format, path, dev, inode, fingerprint, fingerprint_len, offset,
                    line, tail_hash, tail_len, parser_state, ?2
             FROM ingest_files WHERE id = ?1 AND offset > 0
             ON CONFLICT (rank) DO UPDATE SET
                source = excluded.source, format = excluded.format, path = excluded.path,
                dev = excluded.dev, inode = excluded.inode, fingerprint = excluded.fingerprint,
                fingerprint_len = excluded.fingerprint_len, offset = excluded.offset,
                line = excluded.line, tail_hash = excluded.tail_hash,
                tail_len = excluded.tail_len, parser_state = excluded.parser_state,
                retired_at = excluded.retired_at
             WHERE excluded.offset > ingest_generations.offset",
        )?
        .execute(params![id, unix_now()])?;
    }
    let state = c.parser_state.as_ref().map(Value::to_string);
    conn.prepare_cached(
        "INSERT INTO ingest_files (source, format, path, dev, inode, fingerprint, fingerprint_len,
                                   offset, line, size_seen, mtime_ns, parser_state, updated_at,
                                   rank, tail_hash, tail_len)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
         ON CONFLICT (path) DO UPDATE SET
            source = excluded.source, format = excluded.format, dev = excluded.dev,
            inode = excluded.inode, fingerprint = excluded.fingerprint,
            fingerprint_len = excluded.fingerprint_len, offset = excluded.offset,
            line = excluded.line, size_seen = excluded.size_seen, mtime_ns = excluded.mtime_ns,
            parser_state = excluded.parser_state, updated_at = excluded.updated_at,
            rank = excluded.rank, tail_hash = excluded.tail_hash, tail_len = excluded.tail_len",
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
        unix_now(),
        rank,
        c.tail_hash as i64,
        c.tail_len as i64
    ])?;
    let id = match existing {
        Some((id, _)) => id,
        None => conn
            .prepare_cached("SELECT id FROM ingest_files WHERE path = ?1")?
            .query_row([&c.path], |row| row.get(0))?,
    };
    Ok((id, rank.max(0) as u64))
}

/// A rank above every generation's: generations are ranked in the order they are first read.
fn next_rank(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT max(coalesce((SELECT max(rank) FROM ingest_files), 0),
                        coalesce((SELECT max(rank) FROM ingest_generations), 0)) + 1",
        )?
        .query_row([], |row| row.get(0))?)
}

/// Stores `actions` as read from `path` in one batch (the checkpoint names `path`, with the
/// first action's source as source and format): for actions that come from elsewhere than a
/// tailed file, such as an import or a test.
pub fn store_actions(
    conn: &mut Connection,
    path: &str,
    actions: Vec<Action>,
) -> Result<Applied, StoreError> {
    let format = actions
        .first()
        .map_or("native", |a| a.source.as_str())
        .to_owned();
    let batch = Batch {
        checkpoint: Checkpoint {
            source: format.clone(),
            format,
            path: path.to_owned(),
            ..Checkpoint::default()
        },
        records: actions.len() as u64,
        items: actions.into_iter().map(Item::Action).collect(),
        ..Batch::default()
    };
    apply_batch(conn, &batch)
}

/// Where reading one file stands, as `toolsmith sources` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileOffset {
    /// The source's name.
    pub source: String,
    /// The format's name.
    pub format: String,
    /// The file.
    pub path: String,
    /// Bytes consumed.
    pub offset: u64,
}

/// Where one occurrence of a pattern was read, for a person to check it: the actions' ids and
/// each file's lines.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Provenance {
    /// The actions' ids, in log order.
    pub actions: Vec<i64>,
    /// The files they were read from, in the order first met, with the lines of their records
    /// (lines unknown are left out: actions stored by an older build, whole-file formats).
    pub files: Vec<FileLines>,
}

/// A file and the lines of it an occurrence's actions were read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileLines {
    /// The file's path (as it was read).
    pub path: String,
    /// 1-based lines, in log order.
    pub lines: Vec<u64>,
}

/// Where the actions of `session` with seqs in `first..=last` (a pattern's evidence) were read.
pub fn provenance(
    conn: &Connection,
    session: &str,
    first: u64,
    last: u64,
) -> Result<Provenance, StoreError> {
    let places = crate::action::stored::places_between(conn, session, first, last)?;
    let mut found = Provenance::default();
    let mut paths: std::collections::HashMap<i64, Option<usize>> = Default::default();
    for place in places {
        found.actions.push(place.id);
        let Some(file_id) = place.file_id else {
            continue;
        };
        let at = match paths.get(&file_id) {
            Some(at) => *at,
            None => {
                let path: Option<String> = conn
                    .prepare_cached("SELECT path FROM ingest_files WHERE id = ?1")?
                    .query_row([file_id], |row| row.get(0))
                    .optional()?;
                let at = path.map(|path| {
                    found.files.push(FileLines {
                        path,
                        lines: Vec::new(),
                    });
                    found.files.len() - 1
                });
                paths.insert(file_id, at);
                at
            }
        };
        if let (Some(at), Some(line)) = (at, place.line) {
            found.files[at].lines.push(line);
        }
    }
    Ok(found)
}

impl std::fmt::Display for Provenance {
    /// `actions 12–14, 20 (/logs/s.jsonl lines 120, 125, 131)`: ids a person passes to
    /// `toolsmith actions`, and where to open the log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.actions.is_empty() {
            return f.write_str("no stored actions (ingested again since?)");
        }
        let mut ids = self.actions.clone();
        ids.sort_unstable();
        let mut runs: Vec<String> = Vec::new();
        let mut i = 0;
        while i < ids.len() {
            let mut j = i;
            while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
                j += 1;
            }
            runs.push(if j == i {
                ids[i].to_string()
            } else {
                format!("{}–{}", ids[i], ids[j])
            });
            i = j + 1;
        }
        let noun = if ids.len() == 1 { "action" } else { "actions" };
        write!(f, "{noun} {}", runs.join(", "))?;
        let files: Vec<String> = self
            .files
            .iter()
            .map(|file| match file.lines.as_slice() {
                [] => file.path.clone(),
                [one] => format!("{}:{one}", file.path),
                lines => {
                    let shown: Vec<String> = lines.iter().take(8).map(u64::to_string).collect();
                    let more = if lines.len() > 8 { ", …" } else { "" };
                    format!("{} lines {}{more}", file.path, shown.join(", "))
                }
            })
            .collect();
        if !files.is_empty() {
            write!(f, " ({})", files.join("; "))?;
        }
        Ok(())
    }
}

/// Every file read, with how far.
pub fn file_offsets(conn: &Connection) -> Result<Vec<FileOffset>, StoreError> {
    let mut stmt = conn.prepare("SELECT source, format, path, offset FROM ingest_files")?;
    let rows = stmt.query_map([], |r| {
        Ok(FileOffset {
            source: r.get(0)?,
            format: r.get(1)?,
            path: r.get(2)?,
            offset: r.get::<_, i64>(3)?.max(0) as u64,
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
    use crate::action::stored::*;
    use crate::action::{ActionResult, Source};
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
            replaces: false,
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
            lines: Vec::new(),
            problems: vec![(3, "invalid JSON".into())],
            bytes: 10,
            records: 2,
            reset: false,
            generation: Generation::Continue,
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
                // Both results are stored with their calls, and counted: c2's waited for its
                // call, c1's came after it.
                assert_eq!((second.inserted, second.joined), (2, 2));
                // A result the call's own record carries is a result stored too.
                let done = ActionResult {
                    ok: true,
                    exit_code: Some(0),
                    output: "same record".into(),
                    duration_ms: None,
                };
                let mut third = batch(30, vec![action(3, "c3", Some(done)), late("c9", true)]);
                third.lines = vec![7, 8];
                let third = apply_batch(conn, &third)?;
                assert_eq!((third.inserted, third.joined), (1, 1), "c9 waits: not yet");
                // Where each action was read: its id, its file and the line of its record.
                let found = provenance(conn, "s1", stored_seq(1, 1), stored_seq(1, 3))?;
                assert_eq!(found.actions.len(), 3);
                assert_eq!(
                    found.files,
                    [FileLines {
                        path: "/logs/a.jsonl".into(),
                        lines: vec![7]
                    }]
                );
                assert_eq!(
                    found.to_string(),
                    format!(
                        "actions {}–{} (/logs/a.jsonl:7)",
                        found.actions[0], found.actions[2]
                    )
                );
                // Re-reading the same bytes stores nothing twice.
                let again = apply_batch(conn, &batch(20, vec![action(1, "c1", None)]))?;
                assert_eq!((again.inserted, again.duplicates), (0, 1));

                let actions = recent_actions(conn, Some("s1"), 10)?;
                assert_eq!(actions.len(), 3);
                assert_eq!((actions[0].ok, actions[0].exit_code), (Some(true), Some(0)));
                assert_eq!(
                    (actions[1].ok, actions[1].exit_code),
                    (Some(false), Some(1))
                );
                // An occurrence's range, as a pattern's evidence names it.
                // The file's first generation is ranked 1, above the places in it.
                let key = |place| stored_seq(1, place);
                let between = crate::action::stored::actions_between(conn, "s1", key(2), key(2))?;
                assert_eq!(between.len(), 1);
                assert_eq!(between[0].input["command"], "echo 2");
                assert_eq!(between[0].output.as_deref(), Some("out"));
                assert!(
                    crate::action::stored::actions_between(conn, "s2", key(0), key(9))?.is_empty()
                );
                let cp = checkpoint(conn, "/logs/a.jsonl")?.expect("checkpoint");
                assert_eq!(cp.offset, 20);
                let summary = source_summaries(conn)?;
                assert_eq!(summary.len(), 1);
                assert_eq!((summary[0].actions, summary[0].problems), (3, 4));
                assert_eq!(summary[0].examples.len(), 4);
                Ok(())
            })
            .expect("store operations");
    }

    fn call(session: &str, seq: u64, command: &str, result: Option<(bool, &str)>) -> Action {
        Action {
            session: session.into(),
            seq,
            ts: None,
            source: Source::Bash,
            cwd: Some("/w".into()),
            tool: "shell".into(),
            input: serde_json::json!({ "command": command }),
            call_id: None,
            parent_session: None,
            result: result.map(|(ok, output)| ActionResult {
                ok,
                exit_code: None,
                output: output.into(),
                duration_ms: Some(7),
            }),
        }
    }

    #[test]
    fn stored_actions_read_back_typed_in_session_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("s.db")).expect("open");
        let checks = store
            .call_blocking(|conn| {
                let applied = store_actions(
                    conn,
                    "/logs/history",
                    vec![
                        call("s2", 1, "make", Some((true, "built"))),
                        call("s1", 2, "cargo test", Some((false, "error: boom"))),
                        call("s1", 1, "cargo build", None),
                    ],
                )?;
                let mut seen = Vec::new();
                for_each_action(conn, |a| -> Result<(), StoreError> {
                    seen.push((
                        a.session.to_owned(),
                        place_of(a.seq),
                        a.source.to_owned(),
                        a.ok,
                        a.failed_output.map(str::to_owned),
                        a.duration_ms,
                    ));
                    Ok(())
                })?;
                let mut first_only = 0;
                let stopped = for_each_action(conn, |_| {
                    first_only += 1;
                    Err(StoreError::Closed)
                });
                let mut lookup = CallLookup::new(conn)?;
                Ok((
                    applied,
                    seen,
                    (first_only, stopped.is_err()),
                    (
                        lookup.get("s2", stored_seq(1, 1))?,
                        lookup.get("s9", stored_seq(1, 1))?,
                    ),
                    (count_actions(conn, None)?, count_actions(conn, Some("s1"))?),
                    recent_successes_mentioning(conn, "make", 10)?,
                    recent_successes_mentioning(conn, "cargo", 10)?,
                    file_offsets(conn)?,
                ))
            })
            .expect("store");
        let (applied, seen, stopped, lookups, counts, make, cargo, files) = checks;
        assert_eq!(applied.inserted, 3);
        let bash = || "bash".to_owned();
        assert_eq!(
            seen,
            [
                ("s1".into(), 1, bash(), None, None, None),
                (
                    "s1".into(),
                    2,
                    bash(),
                    Some(false),
                    Some("error: boom".into()),
                    Some(7)
                ),
                ("s2".into(), 1, bash(), Some(true), None, Some(7)),
            ]
        );
        assert_eq!(stopped, (1, true));
        let found = lookups.0.expect("s2's call");
        assert_eq!(found.input, r#"{"command":"make"}"#);
        assert_eq!(
            (found.cwd.as_deref(), found.ok, found.output.as_deref()),
            (Some("/w"), Some(true), Some("built"))
        );
        assert_eq!(lookups.1, None);
        assert_eq!(counts, (3, 2));
        assert_eq!(
            make,
            [CallInput {
                session: "s2".into(),
                seq: stored_seq(1, 1) as i64,
                input: r#"{"command":"make"}"#.into()
            }]
        );
        assert!(cargo.is_empty(), "neither cargo call succeeded: {cargo:?}");
        assert_eq!(
            files,
            [FileOffset {
                source: "bash".into(),
                format: "bash".into(),
                path: "/logs/history".into(),
                offset: 0
            }]
        );
    }
}
