//! Versioned schema migrations, applied in order at start-up inside one transaction each.
//!
//! The version lives in `PRAGMA user_version`. Migrations are append-only: a released migration
//! is never edited, because stores in the field have already run it.

use std::path::Path;

use rusqlite::Connection;

use super::StoreError;

/// Each entry upgrades the schema from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: the daemon's own runs, so a restart can tell whether the last one ended cleanly.
    "CREATE TABLE daemon_runs (
        id          INTEGER PRIMARY KEY,
        pid         INTEGER NOT NULL,
        version     TEXT NOT NULL,
        started_at  INTEGER NOT NULL,
        stopped_at  INTEGER
    );",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Applies every migration newer than the file's version.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_owned(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        let version = index as i64 + 1;
        let fail = |source| StoreError::Migrate {
            path: path.to_owned(),
            version,
            source,
        };
        let tx = conn.transaction().map_err(fail)?;
        tx.execute_batch(sql).map_err(fail)?;
        tx.pragma_update(None, "user_version", version)
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
    }
    Ok(())
}
