//! Reading an agent's SQLite database (OpenCode, Crush) while the agent writes it: the
//! [`Framing::Database`] counterpart of [`super::reader`]'s byte streams.
//!
//! - Read-only, never in the agent's way: the database is opened `mode=ro` through a URI, with
//!   its `-shm` opened read-only (`readonly_shm`) when the WAL is there — no lock that stops the
//!   agent writing, no byte written to its three files; a database without a WAL file (no
//!   connection has it open) is opened `immutable`; one in rollback-journal mode `mode=ro`.
//! - Short read transactions: each batch is one `SELECT` of at most [`BATCH_ROWS`] rows after the
//!   last rowid read, in its own read transaction, so the agent's checkpoints are never held off
//!   for long. Rows stored in the WAL are read like any other.
//! - Resume: the checkpoint's `offset` is the last rowid read, its parser state the adapter's
//!   (calls emitted, rows still *open* — a tool call still running, read again by id on every
//!   pass until it is finished). A database whose rows now end below that rowid, or another file
//!   at the path, is read again from its start as a new generation (its calls, keyed by id, are
//!   stored once).
//! - Trouble is a counted problem naming the file, never a crash or a wait: a database locked
//!   by another connection (busy) is read again on its next change; a damaged one or a file that
//!   is no database says so.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde_json::{Map, Value};

use super::adapters::{Format, Framing, Position, RecordParser, SQLITE_HEADER};
use super::reader::{ReadError, ReadOptions, ReadSummary, open_regular};
use super::redact::Redactor;
use super::sanitize::{FileKey, Sanitizer};
use super::store::{Batch, Checkpoint, Generation};

/// Rows read per batch (one read transaction).
pub const BATCH_ROWS: usize = 1000;

/// How long a read waits for a lock before the database counts as busy.
const BUSY_WAIT: Duration = Duration::from_millis(100);

/// Why a database could not be read now.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// Another connection holds a lock that keeps readers out.
    #[error(
        "{path} is locked by another connection: not read now, read again when it changes \
         ({detail})"
    )]
    Busy {
        /// The database.
        path: String,
        /// SQLite's words.
        detail: String,
    },
    /// The file is no SQLite database, or a damaged one.
    #[error(
        "{path} is not a readable SQLite database ({detail}); check it with \
         `sqlite3 '{path}' 'PRAGMA integrity_check'`"
    )]
    Damaged {
        /// The database.
        path: String,
        /// SQLite's words.
        detail: String,
    },
    /// Anything else SQLite refused.
    #[error("cannot read the database {path}: {detail}")]
    Other {
        /// The database.
        path: String,
        /// SQLite's words.
        detail: String,
    },
}

impl DbError {
    fn from_sqlite(path: &Path, err: &rusqlite::Error) -> Self {
        let path = path.display().to_string();
        let detail = err.to_string();
        match err.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                DbError::Busy { path, detail }
            }
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                DbError::Damaged { path, detail }
            }
            _ => DbError::Other { path, detail },
        }
    }
}

/// `path` with `suffix` appended to its name (`x.db-wal`).
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The database a path belongs to: `x.db` for its `x.db-wal`, `x.db-shm` and `x.db-journal`
/// (where an agent's writes land), the path itself otherwise. The tailer reads the database
/// when any of them changes.
pub fn main_file(path: &Path) -> std::borrow::Cow<'_, Path> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return path.into();
    };
    for suffix in ["-wal", "-shm", "-journal"] {
        if let Some(stem) = name.strip_suffix(suffix)
            && stem.ends_with(".db")
        {
            return path.with_file_name(stem).into();
        }
    }
    path.into()
}

/// Whether `path` is the WAL, shared-memory or journal file of a database beside it.
pub fn is_companion(path: &Path) -> bool {
    main_file(path) != path
}

/// Opens the agent's database at `path` read-only (see the module documentation) and checks
/// that it can be read.
pub fn open_agent_db(path: &Path) -> Result<Connection, DbError> {
    let damaged = |detail: String| DbError::Damaged {
        path: path.display().to_string(),
        detail,
    };
    let mut header = [0u8; 100];
    {
        use std::io::Read;
        let mut file = open_regular(path).map_err(|e| DbError::Other {
            path: path.display().to_string(),
            detail: ReadError::from(e).source.to_string(),
        })?;
        file.read_exact(&mut header)
            .map_err(|e| damaged(format!("{e} in its header")))?;
    }
    if !header.starts_with(SQLITE_HEADER) {
        return Err(damaged("no SQLite header".into()));
    }
    let wal_mode = header[18] == 2;
    let attempts: &[&str] = if !wal_mode {
        &["mode=ro"]
    } else if companion(path, "-wal").exists() || companion(path, "-shm").exists() {
        &["mode=ro&readonly_shm=1", "mode=ro"]
    } else {
        &["immutable=1"]
    };
    let mut last = None;
    for params in attempts {
        match open_with(path, params) {
            Ok(conn) => return Ok(conn),
            Err(err @ (DbError::Busy { .. } | DbError::Damaged { .. })) => return Err(err),
            Err(err) => last = Some(err),
        }
    }
    Err(last.unwrap_or_else(|| damaged("not opened".into())))
}

fn open_with(path: &Path, params: &str) -> Result<Connection, DbError> {
    let fail = |e: rusqlite::Error| DbError::from_sqlite(path, &e);
    let conn = Connection::open_with_flags(
        crate::store::sqlite_uri(path, params),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(fail)?;
    conn.busy_timeout(BUSY_WAIT).map_err(fail)?;
    // Reading the schema reads the WAL index: what fails here fails before any row.
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(fail)?;
    Ok(conn)
}

/// A row as its record: a JSON object of its columns but the first (the rowid).
fn record_of(row: &rusqlite::Row<'_>, names: &[String]) -> rusqlite::Result<(i64, Vec<u8>)> {
    let rowid: i64 = row.get(0)?;
    let mut object = Map::with_capacity(names.len());
    for (i, name) in names.iter().enumerate().skip(1) {
        let value = match row.get_ref(i)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(n) => Value::from(n),
            ValueRef::Real(x) => Value::from(x),
            ValueRef::Text(t) | ValueRef::Blob(t) => {
                Value::String(String::from_utf8_lossy(t).into_owned())
            }
        };
        object.insert(name.clone(), value);
    }
    Ok((rowid, serde_json::to_vec(&object).unwrap_or_default()))
}

/// Runs `sql` with `params`, handing each row's rowid and record to `each` until it says stop.
fn rows(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    mut each: impl FnMut(i64, Vec<u8>) -> bool,
) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(sql)?;
    let names: Vec<String> = statement.column_names().map(str::to_owned).collect();
    let mut found = statement.query(params)?;
    while let Some(row) = found.next()? {
        let (rowid, record) = record_of(row, &names)?;
        if !each(rowid, record) {
            break;
        }
    }
    Ok(())
}

/// The ids of the rows the parser's state keeps open.
fn open_ids(state: &Value) -> Vec<String> {
    state
        .get("open")
        .and_then(Value::as_object)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Reads the database at `path` from `previous` (its stored checkpoint) to its last row, handing
/// batches to `sink` — the [`super::reader::read_file`] of a [`Framing::Database`] format. A
/// database that cannot be read now gives one batch holding the problem and the checkpoint as
/// it was.
#[allow(clippy::too_many_arguments)]
pub fn read_database<E: From<ReadError>>(
    path: &Path,
    source: &str,
    format: &dyn Format,
    previous: Option<&Checkpoint>,
    options: &ReadOptions,
    redactor: &Redactor,
    mut sink: impl FnMut(Batch) -> Result<(), E>,
) -> Result<ReadSummary, E> {
    let name = path.display().to_string();
    let fail = |source| ReadError {
        path: name.clone(),
        source,
    };
    let Some(tables) = format
        .tables()
        .filter(|_| format.framing() == Framing::Database)
    else {
        return Err(fail(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a database format",
        ))
        .into());
    };
    let meta = std::fs::metadata(path).map_err(fail)?;
    let wal = std::fs::metadata(companion(path, "-wal")).ok();
    let mtime = |m: &std::fs::Metadata| m.mtime() * 1_000_000_000 + m.mtime_nsec();
    let fresh = Checkpoint {
        source: source.to_owned(),
        format: format.source().as_str().to_owned(),
        path: name.clone(),
        dev: meta.dev(),
        inode: meta.ino(),
        line: 1,
        // Rows, not bytes: `offset` and `size_seen` are rowids (all read: no lag).
        size_seen: 0,
        mtime_ns: wal
            .as_ref()
            .map_or(mtime(&meta), |w| mtime(w).max(mtime(&meta))),
        ..Checkpoint::default()
    };
    let same_file = previous.is_some_and(|p| (p.dev, p.inode) == (fresh.dev, fresh.inode));
    let problem = |checkpoint: Checkpoint, err: DbError| Batch {
        checkpoint,
        problems: vec![(0, err.to_string())],
        ..Batch::default()
    };
    let kept = |p: &Checkpoint| Checkpoint {
        mtime_ns: fresh.mtime_ns,
        ..p.clone()
    };
    let conn = match open_agent_db(path) {
        Ok(conn) => conn,
        Err(err) => {
            let checkpoint = match previous {
                Some(p) if same_file => kept(p),
                _ => fresh.clone(),
            };
            sink(problem(checkpoint, err))?;
            return Ok(ReadSummary {
                batches: 1,
                ..ReadSummary::default()
            });
        }
    };
    // Rows that now end below where reading stood mean another database (re-created, or
    // vacuumed with its rowids renumbered): read it all again, as a new generation.
    let resume = match previous {
        Some(p) if same_file => {
            let end: Result<i64, DbError> = conn
                .query_row(tables.last, [], |r| r.get::<_, Option<i64>>(0))
                .map(|n| n.unwrap_or(0))
                .map_err(|e| DbError::from_sqlite(path, &e));
            match end {
                Ok(end) if end >= p.offset as i64 => Some(p.clone()),
                Ok(_) => None,
                Err(err) => {
                    sink(problem(kept(p), err))?;
                    return Ok(ReadSummary {
                        batches: 1,
                        ..ReadSummary::default()
                    });
                }
            }
        }
        _ => None,
    };
    let reset = previous.is_some() && resume.is_none();
    let generation = if reset {
        Generation::New
    } else {
        Generation::Continue
    };
    let mut sanitizer = Sanitizer::new(redactor, options.output_cap);
    let file_key = FileKey {
        path: name.clone(),
        dev: fresh.dev,
        inode: fresh.inode,
    };
    let mut checkpoint = fresh.clone();
    let mut state = None;
    if let Some(prev) = &resume {
        checkpoint.offset = prev.offset;
        checkpoint.line = prev.line;
        let (adapter_state, secrets) = sanitizer.unwrap_state(prev.parser_state.clone());
        state = adapter_state;
        if secrets > 0 && !sanitizer.resume(&file_key, prev.offset) {
            // The secrets seen before the checkpoint are found again by reading up to it.
            let mut replayed = Sanitizer::new(redactor, options.output_cap);
            let mut parser = format.parser(path, None);
            let mut items = Vec::new();
            // In batches, each its own short read transaction, like the read itself.
            let mut after = 0_i64;
            loop {
                let mut got = 0usize;
                let read = rows(
                    &conn,
                    tables.new_rows,
                    (after, BATCH_ROWS as i64),
                    |rowid, record| {
                        got += 1;
                        after = rowid;
                        if rowid as u64 > prev.offset {
                            return false;
                        }
                        items.clear();
                        let pos = Position {
                            offset: rowid as u64,
                            line: 0,
                        };
                        let _ = parser.record(&record, pos, &mut items);
                        replayed.replay(&mut items);
                        true
                    },
                );
                if read.is_err() || got < BATCH_ROWS || after as u64 >= prev.offset {
                    break;
                }
            }
            sanitizer.take_memory(replayed);
        }
    }
    let mut parser: Box<dyn RecordParser> = format.parser(path, state);
    let mut summary = ReadSummary {
        reset,
        ..ReadSummary::default()
    };
    let mut batch = Batch {
        reset,
        generation,
        ..Batch::default()
    };
    let take = |parser: &mut Box<dyn RecordParser>,
                batch: &mut Batch,
                sanitizer: &mut Sanitizer<'_>,
                rowid: i64,
                record: &[u8],
                line: u64| {
        batch.records += 1;
        batch.bytes += record.len() as u64;
        if record.len() > options.max_record {
            batch.problems.push((
                line,
                format!(
                    "row {rowid} of {} bytes exceeds the {} byte limit; skipped",
                    record.len(),
                    options.max_record
                ),
            ));
            return;
        }
        let before = batch.items.len();
        let pos = Position {
            offset: rowid as u64,
            line,
        };
        if let Err(problem) = parser.record(record, pos, &mut batch.items) {
            batch
                .problems
                .push((line, format!("row {rowid}: {}", problem.reason)));
        }
        for item in &mut batch.items[before..] {
            sanitizer.item(item);
        }
    };
    // Rows still open (calls running when last read) first: their finish joins them.
    let mut failure = None;
    for id in open_ids(&parser.state()) {
        let found = rows(&conn, tables.row, [&id], |rowid, record| {
            take(
                &mut parser,
                &mut batch,
                &mut sanitizer,
                rowid,
                &record,
                checkpoint.line,
            );
            false
        });
        if let Err(err) = found {
            failure = Some(DbError::from_sqlite(path, &err));
            break;
        }
    }
    let mut last = checkpoint.offset as i64;
    while failure.is_none() {
        let mut got = 0usize;
        let mut line = checkpoint.line;
        let read = rows(
            &conn,
            tables.new_rows,
            (last, BATCH_ROWS as i64),
            |rowid, record| {
                got += 1;
                take(
                    &mut parser,
                    &mut batch,
                    &mut sanitizer,
                    rowid,
                    &record,
                    line,
                );
                line += 1;
                last = rowid;
                batch.bytes < options.batch_bytes
            },
        );
        if let Err(err) = read {
            failure = Some(DbError::from_sqlite(path, &err));
        }
        let more = failure.is_none()
            && got > 0
            && (got == BATCH_ROWS || batch.bytes >= options.batch_bytes);
        checkpoint.offset = last as u64;
        checkpoint.size_seen = checkpoint.offset;
        checkpoint.line = line;
        checkpoint.parser_state =
            Some(sanitizer.wrap_state(parser.state())).filter(|s| !s.is_null());
        let mut done = std::mem::take(&mut batch);
        done.checkpoint = checkpoint.clone();
        if let Some(err) = failure.take() {
            done.problems.push((line, err.to_string()));
        }
        summary.bytes += done.bytes;
        summary.batches += 1;
        sink(done)?;
        sanitizer.keep_for_resume(&file_key, checkpoint.offset);
        if !more {
            break;
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::adapters::Item;
    use crate::ingest::formats::by_name;

    fn corpus(rel: &str) -> Option<PathBuf> {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus")).join(rel);
        if path.exists() {
            return Some(path);
        }
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("corpus not found at {}", path.display())
        }
        eprintln!("skipped: corpus not found at {}", path.display());
        None
    }

    fn sha256(path: &Path) -> Option<String> {
        use sha2::Digest;
        let bytes = std::fs::read(path).ok()?;
        Some(
            sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// Reads `path` as `format` from `previous`, returning the batches.
    fn read(path: &Path, format: &str, previous: Option<&Checkpoint>) -> Vec<Batch> {
        let format = by_name(format).expect("format");
        let mut batches = Vec::new();
        read_database::<ReadError>(
            path,
            "test",
            format,
            previous,
            &ReadOptions::default(),
            &Redactor::new(),
            |b| {
                batches.push(b);
                Ok(())
            },
        )
        .expect("read");
        batches
    }

    fn actions(batches: &[Batch]) -> Vec<&crate::action::Action> {
        batches
            .iter()
            .flat_map(|b| &b.items)
            .filter_map(|i| match i {
                Item::Action(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    fn problems(batches: &[Batch]) -> Vec<String> {
        batches
            .iter()
            .flat_map(|b| b.problems.iter().map(|(_, p)| p.clone()))
            .collect()
    }

    #[test]
    fn corpus_databases_are_read_in_place_without_changing_a_byte() {
        for (rel, format, shell_calls, sessions) in [
            (
                "formats-2026/opencode/richardaiand__aiand-portfolio-web__opencode.db",
                "opencode",
                34,
                3,
            ),
            (
                "formats-2026/crush/jsanchezdaza__conecta4__crush.db",
                "crush",
                21,
                1,
            ),
        ] {
            let Some(db) = corpus(rel) else { return };
            let set = [db.clone(), companion(&db, "-wal"), companion(&db, "-shm")];
            let before: Vec<_> = set.iter().map(|p| sha256(p)).collect();
            let batches = read(&db, format, None);
            let after: Vec<_> = set.iter().map(|p| sha256(p)).collect();
            assert_eq!(
                before, after,
                "{rel}: not a byte of the three files changes"
            );
            assert!(problems(&batches).is_empty(), "{:?}", problems(&batches));
            let all = actions(&batches);
            let bash: Vec<_> = all.iter().filter(|a| a.tool == "bash").collect();
            assert_eq!(bash.len(), shell_calls, "{rel}");
            let ids: std::collections::HashSet<_> = all.iter().map(|a| &a.call_id).collect();
            assert_eq!(ids.len(), all.len(), "{rel}: every call once");
            let session_ids: std::collections::HashSet<_> =
                all.iter().map(|a| &a.session).collect();
            assert_eq!(session_ids.len(), sessions, "{rel}");
            assert!(
                bash.iter()
                    .all(|a| a.input["command"].as_str().is_some_and(|c| !c.is_empty()))
            );
            // Read again from its checkpoint: nothing new.
            let last = batches.last().map(|b| b.checkpoint.clone());
            let again = read(&db, format, last.as_ref());
            assert!(actions(&again).is_empty(), "{rel}: nothing twice");
        }
    }

    #[test]
    fn opencode_corpus_calls_carry_what_the_agent_ran() {
        let Some(db) =
            corpus("formats-2026/opencode/richardaiand__aiand-portfolio-web__opencode.db")
        else {
            return;
        };
        let batches = read(&db, "opencode", None);
        let all = actions(&batches);
        let first = all
            .iter()
            .find(|a| a.call_id.as_deref() == Some("prt_ed42ece89001rZ19GJnm8Xmznw"))
            .expect("the first ls");
        assert_eq!(first.input["command"], "ls -la *.html *.css *.js");
        assert_eq!(first.cwd.as_deref(), Some("/home/build"));
        let result = first.result.as_ref().expect("result");
        assert_eq!(result.exit_code, Some(0));
        assert!(result.output.contains("index.html"));
        assert_eq!(result.duration_ms, Some(11));
        // The commit the agent was running when the copy was taken has no result.
        let commit = "git add -A && git commit -m \"Initial portfolio commit\"";
        assert!(
            all.iter()
                .any(|a| a.input["command"] == commit && a.result.is_none())
        );
        let state = batches
            .last()
            .and_then(|b| b.checkpoint.parser_state.clone());
        assert!(state.is_some_and(|s| s.to_string().contains("open")));
    }

    /// A WAL database in OpenCode's shape (the columns toolsmith reads of
    /// sst/opencode `packages/opencode/src/session/session.sql.ts`).
    fn opencode_db(path: &Path, journal: &str) -> Connection {
        let conn = Connection::open(path).expect("open");
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = {journal};
             CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL, parent_id TEXT);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
                 session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
                 time_updated INTEGER NOT NULL, data TEXT NOT NULL);
             INSERT INTO session VALUES ('ses_1', '/work/app', NULL);"
        ))
        .expect("schema");
        conn
    }

    fn bash_part(command: &str, status: &str) -> String {
        let mut state = serde_json::json!({"status": status, "input": {"command": command},
            "time": {"start": 1781676298179_i64}});
        if status == "completed" {
            state["output"] = "ok\n".into();
            state["metadata"] = serde_json::json!({"exit": 0});
            state["time"]["end"] = 1781676298190_i64.into();
        }
        serde_json::json!({"type": "tool", "tool": "bash", "callID": "c", "state": state})
            .to_string()
    }

    fn put(conn: &Connection, id: &str, data: &str) {
        conn.execute(
            "INSERT INTO part VALUES (?1, 'msg_1', 'ses_1', 1, 1, ?2)
             ON CONFLICT (id) DO UPDATE SET data = excluded.data, time_updated = 2",
            [id, data],
        )
        .expect("insert");
    }

    #[test]
    fn reading_resumes_after_a_restart_with_new_rows_and_finished_calls() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("opencode.db");
        let writer = opencode_db(&db, "wal");
        put(&writer, "prt_1", &bash_part("ls", "completed"));
        put(&writer, "prt_2", &bash_part("cargo build", "running"));
        put(&writer, "prt_3", r#"{"type": "text", "text": "hello"}"#);
        put(
            &writer,
            "prt_4",
            r#"{"type": "a-part-type-from-the-future"}"#,
        );
        let first = read(&db, "opencode", None);
        assert_eq!(actions(&first).len(), 2);
        assert!(problems(&first).is_empty(), "{:?}", problems(&first));
        let checkpoint = first
            .last()
            .map(|b| b.checkpoint.clone())
            .expect("checkpoint");
        put(&writer, "prt_2", &bash_part("cargo build", "completed"));
        put(&writer, "prt_5", &bash_part("cargo test", "completed"));
        let second = read(&db, "opencode", Some(&checkpoint));
        let new = actions(&second);
        assert_eq!(new.len(), 1, "only the new call: {new:?}");
        assert_eq!(new[0].input["command"], "cargo test");
        let results: Vec<_> = second
            .iter()
            .flat_map(|b| &b.items)
            .filter_map(|i| match i {
                Item::Result(r) => Some(r.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(results, ["prt_2"], "the running call's result joins it");
        let checkpoint = second
            .last()
            .map(|b| b.checkpoint.clone())
            .expect("checkpoint");
        let third = read(&db, "opencode", Some(&checkpoint));
        assert!(third.iter().all(|b| b.items.is_empty()), "nothing twice");
    }

    #[test]
    fn a_database_no_connection_has_open_is_read_without_creating_files_beside_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("opencode.db");
        let writer = opencode_db(&db, "wal");
        put(&writer, "prt_1", &bash_part("ls", "completed"));
        // The agent quits: its last connection checkpoints the WAL and deletes it and the -shm.
        drop(writer);
        assert!(!companion(&db, "-wal").exists());
        let before = sha256(&db);
        let batches = read(&db, "opencode", None);
        assert_eq!(actions(&batches).len(), 1);
        assert!(problems(&batches).is_empty(), "{:?}", problems(&batches));
        assert_eq!(sha256(&db), before);
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["opencode.db"], "no -wal or -shm made by the reader");
    }

    #[test]
    fn another_database_at_the_path_is_read_from_its_start_as_a_new_generation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("opencode.db");
        let writer = opencode_db(&db, "wal");
        for n in 0..3 {
            put(&writer, &format!("prt_{n}"), &bash_part("ls", "completed"));
        }
        drop(writer);
        let first = read(&db, "opencode", None);
        let checkpoint = first
            .last()
            .map(|b| b.checkpoint.clone())
            .expect("checkpoint");
        assert_eq!(checkpoint.offset, 3);
        std::fs::remove_file(&db).expect("remove");
        let writer = opencode_db(&db, "wal");
        put(&writer, "prt_new", &bash_part("make", "completed"));
        let second = read(&db, "opencode", Some(&checkpoint));
        assert!(second[0].reset);
        assert_eq!(second[0].generation, Generation::New);
        let new = actions(&second);
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].input["command"], "make");
    }

    #[test]
    fn a_resumed_read_still_knows_the_secrets_seen_before_its_checkpoint() {
        let secret = "Qm7xK2vL9pR4tW8zN3sB";
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("opencode.db");
        let writer = opencode_db(&db, "wal");
        put(
            &writer,
            "prt_1",
            &bash_part(&format!("export DB_PASSWORD={secret}"), "completed"),
        );
        let first = read(&db, "opencode", None);
        let checkpoint = first
            .last()
            .map(|b| b.checkpoint.clone())
            .expect("checkpoint");
        let mut later: Value =
            serde_json::from_str(&bash_part("./probe", "completed")).expect("json");
        later["state"]["output"] = format!("password is {secret}").into();
        put(&writer, "prt_2", &later.to_string());
        // A new redactor: a restarted daemon, which has only the checkpoint to go on.
        let second = read(&db, "opencode", Some(&checkpoint));
        let outputs: Vec<_> = actions(&second)
            .iter()
            .filter_map(|a| a.result.as_ref().map(|r| r.output.clone()))
            .collect();
        assert_eq!(outputs.len(), 1);
        assert!(!outputs[0].contains(secret), "{outputs:?}");
    }

    #[test]
    fn a_locked_database_is_a_problem_and_no_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("opencode.db");
        let writer = opencode_db(&db, "delete");
        put(&writer, "prt_1", &bash_part("ls", "completed"));
        writer
            .execute_batch("BEGIN EXCLUSIVE; UPDATE part SET time_updated = 3;")
            .expect("exclusive lock");
        let started = std::time::Instant::now();
        let batches = read(&db, "opencode", None);
        let waited = started.elapsed();
        assert!(actions(&batches).is_empty());
        let problems = problems(&batches);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("is locked by another connection"),
            "{problems:?}"
        );
        assert!(problems[0].contains(&db.display().to_string()));
        assert_eq!(batches[0].checkpoint.offset, 0, "nothing counted as read");
        writer.execute_batch("COMMIT").expect("commit");
        let batches = read(&db, "opencode", Some(&batches[0].checkpoint));
        assert_eq!(actions(&batches).len(), 1, "read once the lock is gone");
        // No stall: the reader gave up at once rather than waiting for the lock.
        assert!(waited < std::time::Duration::from_secs(5), "{waited:?}");
    }

    #[test]
    fn a_damaged_database_is_a_problem_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, bytes) in [
            (
                "garbage.db",
                b"this is no database at all, just text".repeat(200),
            ),
            ("opencode.db", {
                let mut b = SQLITE_HEADER.to_vec();
                b.extend(std::iter::repeat_n(0xA5u8, 8192));
                b
            }),
        ] {
            let db = dir.path().join(name);
            std::fs::write(&db, &bytes).expect("write");
            let batches = read(&db, "opencode", None);
            let problems = problems(&batches);
            assert_eq!(problems.len(), 1, "{name}: {problems:?}");
            assert!(
                problems[0].contains(&db.display().to_string()),
                "{problems:?}"
            );
            assert!(
                problems[0].contains("not a readable SQLite database"),
                "{problems:?}"
            );
            assert_eq!(
                std::fs::read(&db).expect("read back"),
                bytes,
                "left as it was"
            );
        }
    }

    #[test]
    fn a_database_being_written_is_read_whole_and_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("opencode.db");
        drop(opencode_db(&db, "wal"));
        const ROWS: usize = 400;
        // A real writer process: OpenCode's pattern of a row inserted running, then updated.
        let script = format!(
            r#"
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
for n in range({ROWS}):
    state = {{"status": "running", "input": {{"command": "echo %d" % n}}, "time": {{"start": 1}}}}
    part = {{"type": "tool", "tool": "bash", "callID": "c", "state": state}}
    conn.execute("INSERT INTO part VALUES (?, 'm', 'ses_1', 1, 1, ?)", ("prt_%05d" % n, json.dumps(part)))
    state["status"] = "completed"; state["output"] = "%d\n" % n; state["metadata"] = {{"exit": 0}}
    conn.execute("UPDATE part SET data = ?, time_updated = 2 WHERE id = ?", (json.dumps(part), "prt_%05d" % n))
"#
        );
        let mut child = std::process::Command::new("python3")
            .arg("-c")
            .arg(&script)
            .arg(&db)
            .spawn()
            .expect("python3 with its sqlite3 module (apt-get install python3)");
        let mut checkpoint: Option<Checkpoint> = None;
        let mut seen = Vec::new();
        let mut finished = std::collections::HashSet::new();
        let mut read_all = |checkpoint: &mut Option<Checkpoint>| {
            let batches = read(&db, "opencode", checkpoint.as_ref());
            for problem in problems(&batches) {
                assert!(
                    problem.contains("is locked"),
                    "only a busy moment: {problem}"
                );
            }
            for item in batches.iter().flat_map(|b| &b.items) {
                match item {
                    Item::Action(a) => {
                        if a.result.is_some() {
                            finished.insert(a.call_id.clone().expect("id"));
                        }
                        seen.push(a.call_id.clone().expect("id"));
                    }
                    Item::Result(r) => {
                        finished.insert(r.call_id.clone());
                    }
                    Item::SessionLink { .. } => {}
                }
            }
            if let Some(last) = batches.last() {
                *checkpoint = Some(last.checkpoint.clone());
            }
        };
        let mut rounds = 0;
        while child.try_wait().expect("wait").is_none() {
            read_all(&mut checkpoint);
            rounds += 1;
        }
        read_all(&mut checkpoint);
        assert!(child.wait().expect("wait").success());
        assert!(rounds > 0);
        let distinct: std::collections::HashSet<_> = seen.iter().collect();
        assert_eq!(
            seen.len(),
            ROWS,
            "every call once ({} distinct)",
            distinct.len()
        );
        assert_eq!(distinct.len(), ROWS);
        assert_eq!(finished.len(), ROWS, "every result joined");
    }

    #[test]
    fn a_databases_companions_name_it() {
        assert_eq!(
            main_file(Path::new("/d/opencode.db-wal")),
            Path::new("/d/opencode.db")
        );
        assert_eq!(
            main_file(Path::new("/d/crush.db-shm")),
            Path::new("/d/crush.db")
        );
        assert_eq!(
            main_file(Path::new("/d/x.db-journal")),
            Path::new("/d/x.db")
        );
        assert_eq!(main_file(Path::new("/d/log-wal")), Path::new("/d/log-wal"));
        assert!(is_companion(Path::new("/d/opencode.db-wal")));
        assert!(!is_companion(Path::new("/d/opencode.db")));
    }
}
