//! The SQLite state store: one file, WAL, versioned migrations, one writer.
//!
//! The daemon owns the only writing connection, held by a dedicated thread; every other part of
//! the daemon sends it closures through [`Store::call`]. SQLite allows one writer at a time
//! anyway: funnelling writes through one thread turns lock contention (`SQLITE_BUSY`) into a
//! queue, and keeps blocking I/O off the async runtime.

mod migrations;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

use rusqlite::Connection;

pub use migrations::SCHEMA_VERSION;

/// A state store that cannot be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file could not be opened or created.
    #[error("cannot open the state store {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file is not a SQLite database, or fails `PRAGMA integrity_check`.
    #[error(
        "the state store {path} is damaged: {detail}. Stop toolsmithd, move the file aside \
         (mv {path} {path}.damaged) to start with an empty store, or restore it from a backup"
    )]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        detail: String,
    },
    /// The file was written by a newer toolsmith with a schema this version does not know.
    #[error(
        "the state store {path} has schema version {found}, newer than the {known} this \
         toolsmith knows: upgrade toolsmith, or point --state at another directory"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version in the file.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// A read-only user found a store not yet migrated to this build's schema.
    #[error(
        "the state store {path} has schema version {found}, older than this toolsmith's {known}: \
         start toolsmithd (or run `toolsmith ingest`) once to migrate it"
    )]
    Outdated {
        /// The database file.
        path: PathBuf,
        /// The schema version in the file.
        found: i64,
        /// The version this build writes.
        known: i64,
    },
    /// A migration failed; the transaction was rolled back and the file is unchanged.
    #[error("cannot migrate the state store {path} to schema version {version}: {source}")]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// The version that failed.
        version: i64,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A query failed.
    #[error("state store query failed: {0}")]
    Query(#[from] rusqlite::Error),
    /// The writer thread is gone (the daemon is shutting down).
    #[error("the state store is closed")]
    Closed,
    /// A stored JSON document could not be read back (or written).
    #[error(
        "the state store holds an unreadable {what}: {reason}. Run `toolsmith mine` again to \
         rewrite it"
    )]
    Corrupt {
        /// What it was.
        what: String,
        /// serde_json's error.
        reason: String,
    },
}

impl StoreError {
    /// Whether the error means the file itself is unusable (as opposed to a failed query).
    pub fn is_damage(&self) -> bool {
        matches!(self, StoreError::Damaged { .. } | StoreError::TooNew { .. })
    }
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A handle to the store's writer thread. Cloning it is cheap; the thread ends when the last
/// handle is dropped.
#[derive(Clone)]
pub struct Store {
    jobs: mpsc::Sender<Job>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) the store at `path`, checks its integrity, applies pending
    /// migrations and starts the writer thread.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = open_connection(path)?;
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || {
                let mut conn = conn;
                for job in queue {
                    job(&mut conn);
                }
            })
            .map_err(|e| StoreError::Open {
                path: path.to_owned(),
                source: rusqlite::Error::ToSqlConversionFailure(Box::new(e)),
            })?;
        Ok(Store {
            jobs,
            path: path.to_owned(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the writer connection and returns its result, without blocking the runtime.
    pub async fn call<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move |conn| {
                let _ = tx.send(f(conn));
            }))
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `f` on the writer connection, blocking the calling thread (for one-shot commands).
    pub fn call_blocking<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        self.submit(f)?.wait()
    }

    /// Queues `f` on the writer connection and returns at once, so that the caller can prepare
    /// the next piece of work while this one is written (jobs run in the order submitted).
    pub fn submit<R, F>(&self, f: F) -> Result<Pending<R>, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        self.jobs
            .send(Box::new(move |conn| {
                let _ = tx.send(f(conn));
            }))
            .map_err(|_| StoreError::Closed)?;
        Ok(Pending(rx))
    }
}

/// The result of a job given to [`Store::submit`], delivered when the writer has run it.
#[must_use = "a submitted job's result says whether it was stored"]
pub struct Pending<R>(mpsc::Receiver<Result<R, StoreError>>);

impl<R> Pending<R> {
    /// Blocks until the job has run and returns its result.
    pub fn wait(self) -> Result<R, StoreError> {
        self.0.recv().map_err(|_| StoreError::Closed)?
    }
}

/// Opens an existing store for reading only, beside a running daemon (WAL allows it). Refuses a
/// store whose schema differs from this build's: its tables would not be what the queries expect.
pub fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    use rusqlite::OpenFlags;
    open_checked(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// Opens an existing store to record a few changes beside a running daemon (a review decision,
/// a tool run): WAL lets both write, each waiting its turn. No migration and no integrity check
/// (the daemon or [`Store::open`] does those); a store of another schema is refused.
pub fn open_for_update(path: &Path) -> Result<Connection, StoreError> {
    use rusqlite::OpenFlags;
    let conn = open_checked(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    Ok(conn)
}

fn open_checked(path: &Path, flags: rusqlite::OpenFlags) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags).map_err(|source| StoreError::Open {
        path: path.to_owned(),
        source,
    })?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| classify(path, e))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_owned(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    if found < SCHEMA_VERSION {
        return Err(StoreError::Outdated {
            path: path.to_owned(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    Ok(conn)
}

/// Opens a connection with the store's pragmas, checks it and migrates it.
fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let damaged = |detail: String| StoreError::Damaged {
        path: path.to_owned(),
        detail,
    };
    let conn = Connection::open(path).map_err(|source| StoreError::Open {
        path: path.to_owned(),
        source,
    })?;
    // The first statement that reads the header is where a non-database file shows itself.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(|e| classify(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(damaged(format!("cannot switch to WAL mode (got {mode})")));
    }
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;",
    )
    .map_err(|e| classify(path, e))?;
    let mut stmt = conn
        .prepare("PRAGMA integrity_check")
        .map_err(|e| classify(path, e))?;
    let problems: Vec<String> = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| classify(path, e))?;
    drop(stmt);
    if problems.first().map(String::as_str) != Some("ok") {
        let shown: Vec<_> = problems.iter().take(3).cloned().collect();
        return Err(damaged(format!(
            "integrity check failed: {}",
            shown.join("; ")
        )));
    }
    let mut conn = conn;
    migrations::migrate(&mut conn, path)?;
    Ok(conn)
}

/// Turns SQLite's "not a database" and "malformed" errors into [`StoreError::Damaged`].
fn classify(path: &Path, err: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode;
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Damaged {
            path: path.to_owned(),
            detail: err.to_string(),
        },
        _ => StoreError::Open {
            path: path.to_owned(),
            source: err,
        },
    }
}

/// The current time as Unix seconds, for timestamps stored as integers.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A daemon run recorded in the store: when it started and whether it stopped cleanly.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DaemonRun {
    /// Row id.
    pub id: i64,
    /// The daemon's pid.
    pub pid: u32,
    /// toolsmith version.
    pub version: String,
    /// Unix seconds.
    pub started_at: i64,
    /// Unix seconds, if it stopped cleanly.
    pub stopped_at: Option<i64>,
}

/// Records the start of a daemon run and returns its id.
pub fn record_start(conn: &Connection, pid: u32, version: &str) -> Result<i64, StoreError> {
    conn.execute(
        "INSERT INTO daemon_runs (pid, version, started_at) VALUES (?1, ?2, ?3)",
        rusqlite::params![pid, version, unix_now()],
    )?;
    Ok(conn.last_insert_rowid())
}

/// How many daemon runs the store has seen.
pub fn daemon_run_count(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT count(*) FROM daemon_runs", [], |r| r.get(0))?)
}

/// Whether the connection answers a query: `SELECT 1` gives 1.
pub fn ping(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT 1", [], |r| r.get(0))?)
}

/// Marks a daemon run as stopped cleanly.
pub fn record_stop(conn: &Connection, run_id: i64) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE daemon_runs SET stopped_at = ?1 WHERE id = ?2",
        rusqlite::params![unix_now(), run_id],
    )?;
    Ok(())
}

/// The run before `run_id`, if any: whether the previous daemon stopped cleanly or crashed.
pub fn previous_run(conn: &Connection, run_id: i64) -> Result<Option<DaemonRun>, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .query_row(
            "SELECT id, pid, version, started_at, stopped_at FROM daemon_runs
             WHERE id < ?1 ORDER BY id DESC LIMIT 1",
            [run_id],
            |row| {
                Ok(DaemonRun {
                    id: row.get(0)?,
                    pid: row.get(1)?,
                    version: row.get(2)?,
                    started_at: row.get(3)?,
                    stopped_at: row.get(4)?,
                })
            },
        )
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_migrates_and_records_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        let store = Store::open(&path).expect("open new store");
        let (first, second) = store
            .call_blocking(|conn| {
                let first = record_start(conn, 10, "0.1.0")?;
                record_stop(conn, first)?;
                let second = record_start(conn, 11, "0.1.0")?;
                Ok((first, second))
            })
            .expect("record runs");
        let previous = store
            .call_blocking(move |conn| previous_run(conn, second))
            .expect("query")
            .expect("a previous run");
        assert_eq!(previous.id, first);
        assert_eq!(previous.pid, 10);
        assert!(previous.stopped_at.is_some());
        let version: i64 = store
            .call_blocking(|conn| Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?))
            .expect("user_version");
        assert_eq!(version, SCHEMA_VERSION);
        drop(store);
        // Reopening an up-to-date store applies nothing and keeps the data.
        let store = Store::open(&path).expect("reopen");
        let runs: i64 = store
            .call_blocking(|conn| {
                Ok(conn.query_row("SELECT count(*) FROM daemon_runs", [], |r| r.get(0))?)
            })
            .expect("count");
        assert_eq!(runs, 2);
    }

    #[test]
    fn garbage_file_is_reported_as_damaged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        std::fs::write(&path, vec![0x42u8; 8192]).expect("write garbage");
        let err = Store::open(&path).expect_err("garbage refused");
        assert!(err.is_damage(), "{err}");
        assert!(err.to_string().contains("is damaged"), "{err}");
        assert!(err.to_string().contains("mv "), "{err}");
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        {
            let conn = Connection::open(&path).expect("create");
            conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 5))
                .expect("set version");
        }
        let err = Store::open(&path).expect_err("newer schema refused");
        assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
    }

    #[tokio::test]
    async fn async_calls_reach_the_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("s.db")).expect("open");
        let one: i64 = store
            .call(|conn| Ok(conn.query_row("SELECT 1", [], |r| r.get(0))?))
            .await
            .expect("select 1");
        assert_eq!(one, 1);
    }

    #[test]
    fn daemon_runs_are_counted_and_a_ping_answers_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("state.db")).expect("open");
        let (before, after, ping) = store
            .call_blocking(|conn| {
                let before = daemon_run_count(conn)?;
                record_start(conn, 10, "0.1.0")?;
                record_start(conn, 11, "0.1.0")?;
                Ok((before, daemon_run_count(conn)?, ping(conn)?))
            })
            .expect("query");
        assert_eq!((before, after, ping), (0, 2, 1));
    }
}
