//! The SQLite state store: one file, WAL, versioned migrations, one writer.
//!
//! The daemon owns the only writing connection, held by a dedicated thread; every other part of
//! the daemon sends it closures through [`Store::call`]. SQLite allows one writer at a time
//! anyway: funnelling writes through one thread turns lock contention (`SQLITE_BUSY`) into a
//! queue, and keeps blocking I/O off the async runtime.
//!
//! A store is three files: `state.db`, and beside it, after a crash or while a connection is
//! open, `state.db-wal` (the latest writes, not yet copied into `state.db`) and `state.db-shm`
//! (the index of the WAL). Opening checks the store through a connection that writes none of
//! the three ([`check_untouched`]) before the writer's connection opens it: SQLite copies the WAL
//! into the database and deletes it when a writing connection closes, which on a damaged store
//! would mix the latest writes into the damage and leave nothing to restore.

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
    /// The file is not a SQLite database, or fails `PRAGMA integrity_check`. Nothing was
    /// written to the store's files on the way to this verdict.
    #[error(
        "the state store {path} is damaged: {detail}. Nothing was changed: the store is \
         {path}, {path}-wal (its latest writes) and {path}-shm, {}, left as they were. \
         Stop toolsmithd, then either move the store aside as a whole, the three files \
         together, to start with an empty one (mkdir {} && mv {} {}/), or restore all three \
         from the same backup; never keep or delete the -wal without its database",
        files.present, files.aside, files.move_args, files.aside
    )]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        detail: String,
        /// The store's files as they were found, for the message.
        files: Box<DamagedFiles>,
    },
    /// The file was written by a newer toolsmith with a schema this version does not know.
    #[error(
        "the state store {path} has schema version {found}, newer than the {known} this \
         toolsmith knows: upgrade toolsmith, or point --state at another directory (the store \
         was left as it was)"
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

/// Which of a damaged store's three files exist, and how to move them aside together.
#[derive(Debug)]
pub struct DamagedFiles {
    /// Which of the three exist, in words.
    present: String,
    /// Those that exist, as `mv` arguments.
    move_args: String,
    /// A directory beside them to move them into.
    aside: String,
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
    match schema_matches(&conn, path) {
        Ok(()) => Ok(conn),
        Err(err) => Err(refuse(conn, err)),
    }
}

/// Checks the schema version of a store just opened beside the daemon.
fn schema_matches(conn: &Connection, path: &Path) -> Result<(), StoreError> {
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
    Ok(())
}

/// Closes a connection to a store being refused without SQLite's checkpoint on close, which
/// would copy the `-wal` into `state.db` and delete it; returns `err`.
fn refuse(conn: Connection, err: StoreError) -> StoreError {
    use rusqlite::config::DbConfig;
    if let Err(e) = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true) {
        tracing::warn!(error = %e, "cannot keep SQLite from checkpointing a refused store");
    }
    drop(conn);
    err
}

/// Opens a connection with the store's pragmas, checks it and migrates it.
fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    if path.exists() {
        check_untouched(path)?;
    }
    let mut conn = Connection::open(path).map_err(|source| StoreError::Open {
        path: path.to_owned(),
        source,
    })?;
    match prepare_writer(&mut conn, path) {
        Ok(()) => Ok(conn),
        Err(err) => Err(refuse(conn, err)),
    }
}

/// Puts the writer's connection in WAL mode with the store's pragmas and migrates it.
fn prepare_writer(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    // A new file, or one changed since the check: its header shows itself here.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(|e| classify(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(damaged(
            path,
            format!("cannot switch to WAL mode (got {mode})"),
        ));
    }
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;",
    )
    .map_err(|e| classify(path, e))?;
    migrations::migrate(conn, path)
}

/// Runs `PRAGMA integrity_check` and the schema-version check on an existing store through a
/// connection that writes none of its three files, and refuses a damaged or newer store before
/// any writing connection has opened it.
///
/// How it reads depends on what is there, since SQLite writes on its own when it can:
/// - a `-wal` and its `-shm`: read-only, the `-shm` used read-only (`readonly_shm`; SQLite then
///   builds the WAL's index in its own memory when no other connection holds the store);
/// - a `-wal` without a `-shm` (a copy that left it out): read-only; SQLite creates a `-shm`,
///   the WAL's index, as any reader does, and reads the WAL; `state.db` and `-wal` stay;
/// - no `-wal`: no connection has the store open (each keeps the `-wal` while it does), and
///   nothing holds writes that are not in `state.db`: `immutable`, which creates no `-wal`.
///
/// A read-only connection never checkpoints, so closing it leaves the `-wal` where it is.
fn check_untouched(path: &Path) -> Result<(), StoreError> {
    let wal = companion(path, "-wal");
    let shm = companion(path, "-shm");
    if !wal.exists() {
        match check_with(path, "immutable=1") {
            // Someone opened the store meanwhile: what was read may have been mid-change.
            Err(StoreError::Damaged { .. }) if wal.exists() => check_with(path, "mode=ro"),
            other => other,
        }
    } else if shm.exists() {
        match check_with(path, "mode=ro&readonly_shm=1") {
            // A live connection elsewhere may leave no read mark a read-only index can use.
            Err(StoreError::Open { .. }) => check_with(path, "mode=ro"),
            other => other,
        }
    } else {
        check_with(path, "mode=ro")
    }
}

/// The check itself, on `path` opened with the URI parameters `params`.
fn check_with(path: &Path, params: &str) -> Result<(), StoreError> {
    use rusqlite::OpenFlags;
    let uri = sqlite_uri(path, params);
    let conn = Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|source| StoreError::Open {
        path: path.to_owned(),
        source,
    })?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // The first statement that reads the header is where a non-database file shows itself.
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
    let mut stmt = conn
        .prepare("PRAGMA integrity_check")
        .map_err(|e| classify(path, e))?;
    let problems: Vec<String> = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| classify(path, e))?;
    if problems.first().map(String::as_str) != Some("ok") {
        // SQLite may put its whole report in one row, a line per problem.
        let lines: Vec<&str> = problems
            .iter()
            .flat_map(|p| p.lines())
            .filter(|l| !l.trim().is_empty() && !l.starts_with("***"))
            .collect();
        let mut shown = lines.iter().take(3).copied().collect::<Vec<_>>().join("; ");
        // SQLite stops reporting at 100 problems.
        if lines.len() >= 100 {
            shown.push_str(" (and more: at least 100 problems)");
        } else if lines.len() > 3 {
            shown.push_str(&format!(" (and {} more)", lines.len() - 3));
        }
        return Err(damaged(path, format!("integrity check failed: {shown}")));
    }
    Ok(())
}

/// `path` as an SQLite `file:` URI with `params`: every byte but unreserved ones and `/`
/// percent-encoded, so that `?`, `#` and `%` in a directory name stay part of the path.
/// The `file:` URI of the database at `path` with query `params` (`mode=ro`, …), every byte
/// of the path that a URI would read otherwise percent-encoded.
pub fn sqlite_uri(path: &Path, params: &str) -> PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    // `file://` and an empty authority: a path beginning `//` is not taken for a host name.
    let mut uri = b"file://".to_vec();
    for &b in absolute.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b);
        } else {
            uri.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    uri.push(b'?');
    uri.extend_from_slice(params.as_bytes());
    PathBuf::from(std::ffi::OsString::from_vec(uri))
}

/// `path` with `suffix` appended to its file name: `state.db-wal`, `state.db-shm`.
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A [`StoreError::Damaged`] for `path`, naming which of its three files exist and how to move
/// them aside together.
fn damaged(path: &Path, detail: String) -> StoreError {
    let files = [
        path.to_owned(),
        companion(path, "-wal"),
        companion(path, "-shm"),
    ];
    let existing: Vec<&PathBuf> = files.iter().filter(|f| f.exists()).collect();
    let name = |f: &PathBuf| {
        f.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let present = match existing.as_slice() {
        [] => "none of them present".to_owned(),
        found => format!(
            "present: {}",
            found.iter().map(|f| name(f)).collect::<Vec<_>>().join(", ")
        ),
    };
    let move_args = existing
        .iter()
        .map(|f| shell_word(&f.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    let aside = companion(path, &format!(".damaged-{}", unix_now()));
    StoreError::Damaged {
        path: path.to_owned(),
        detail,
        files: Box::new(DamagedFiles {
            present,
            move_args,
            aside: shell_word(&aside.to_string_lossy()),
        }),
    }
}

/// `word` as one shell word: as it is when plain, else single-quoted. (`quote` has the full
/// rules but sits in this layer; a path needs only these.)
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-._~+,:=@".contains(&b))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Turns SQLite's "not a database" and "malformed" errors into [`StoreError::Damaged`].
fn classify(path: &Path, err: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode;
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            damaged(path, err.to_string())
        }
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

    /// The store's three files and their bytes (`None`: absent).
    fn snapshot(path: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        ["", "-wal", "-shm"]
            .iter()
            .map(|suffix| {
                let file = companion(path, suffix);
                let bytes = std::fs::read(&file).ok();
                (file, bytes)
            })
            .collect()
    }

    /// Closes the store's connection before returning (dropping the handle lets the writer
    /// thread close it some time later), so that SQLite's checkpoint on close is done.
    fn close(store: Store) {
        store
            .call_blocking(|conn| {
                let old = std::mem::replace(conn, Connection::open_in_memory()?);
                old.close().map_err(|(_, e)| e)?;
                Ok(())
            })
            .expect("close");
    }

    /// A store as a crash leaves it: `state.db` with many pages, and a `-wal` and `-shm` holding
    /// writes not yet copied into it (copied while the writer's connection is open).
    fn crashed_store(dir: &Path) -> PathBuf {
        let live = dir.join("live.db");
        let store = Store::open(&live).expect("open");
        store
            .call_blocking(|conn| {
                for pid in 0..3000 {
                    record_start(conn, pid, "a version string long enough to fill pages")?;
                }
                Ok(())
            })
            .expect("fill");
        close(store);
        assert!(!companion(&live, "-wal").exists(), "checkpointed on close");
        let store = Store::open(&live).expect("reopen");
        store
            .call_blocking(|conn| record_start(conn, 1, "after the checkpoint").map(drop))
            .expect("write to the WAL");
        let copy = dir.join("state.db");
        for suffix in ["", "-wal", "-shm"] {
            std::fs::copy(companion(&live, suffix), companion(&copy, suffix)).expect("copy");
        }
        drop(store);
        assert!(
            std::fs::metadata(companion(&copy, "-wal"))
                .expect("wal")
                .len()
                > 0,
            "the copy holds a WAL"
        );
        copy
    }

    /// Overwrites the middle half of `state.db` (pages the WAL does not hold) with garbage.
    fn damage(path: &Path) {
        let mut bytes = std::fs::read(path).expect("read");
        let len = bytes.len();
        for b in &mut bytes[len / 4..len * 3 / 4] {
            *b = 0x5a;
        }
        std::fs::write(path, bytes).expect("write");
    }

    #[test]
    fn a_damaged_store_with_a_wal_is_refused_untouched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = crashed_store(dir.path());
        damage(&path);
        let before = snapshot(&path);
        let err = Store::open(&path).expect_err("damage refused");
        assert!(err.is_damage(), "{err}");
        assert!(
            snapshot(&path) == before,
            "the store's files changed: {err}"
        );
        let text = err.to_string();
        for name in [
            "state.db-wal",
            "state.db-shm",
            "present: state.db, state.db-wal",
        ] {
            assert!(text.contains(name), "{name} in {text}");
        }
        assert!(text.contains("Nothing was changed"), "{text}");
    }

    #[test]
    fn a_damaged_store_without_a_shm_keeps_its_database_and_wal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = crashed_store(dir.path());
        std::fs::remove_file(companion(&path, "-shm")).expect("rm shm");
        damage(&path);
        let before = snapshot(&path);
        let err = Store::open(&path).expect_err("damage refused");
        assert!(err.is_damage(), "{err}");
        // SQLite builds the WAL's index anew, as any reader does; the data files stay.
        assert!(
            snapshot(&path)[..2] == before[..2],
            "state.db or -wal changed"
        );
    }

    #[test]
    fn a_damaged_store_opened_beside_the_daemon_keeps_its_wal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = crashed_store(dir.path());
        damage_header(&path);
        let before = snapshot(&path);
        let err = open_for_update(&path).expect_err("damage refused");
        assert!(err.is_damage(), "{err}");
        // Closing the refused connection copied nothing into state.db and kept the -wal.
        assert!(
            snapshot(&path)[..2] == before[..2],
            "state.db or -wal changed"
        );
    }

    #[test]
    fn a_crashed_healthy_store_opens_with_its_wal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = crashed_store(dir.path());
        let store = Store::open(&path).expect("a healthy store opens");
        let runs = store
            .call_blocking(|conn| daemon_run_count(conn))
            .expect("count");
        assert_eq!(runs, 3001, "the write in the WAL is there");
    }

    #[test]
    fn paths_become_uris_that_keep_every_byte() {
        let uri = sqlite_uri(Path::new("/a b/x?y#z%/s.db"), "mode=ro");
        assert_eq!(
            uri,
            PathBuf::from("file:///a%20b/x%3Fy%23z%25/s.db?mode=ro")
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let odd = dir.path().join("a ?#%'dir");
        std::fs::create_dir(&odd).expect("mkdir");
        let path = odd.join("state.db");
        close(Store::open(&path).expect("create"));
        close(Store::open(&path).expect("reopen, checked through its URI"));
        damage_header(&path);
        let err = Store::open(&path).expect_err("damage refused");
        assert!(err.is_damage(), "{err}");
        assert!(
            err.to_string().contains(r"'\''"),
            "quoted for the shell: {err}"
        );
    }

    fn damage_header(path: &Path) {
        let mut bytes = std::fs::read(path).expect("read");
        bytes[..16].copy_from_slice(b"not a database!\0");
        std::fs::write(path, bytes).expect("write");
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
