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
    // 2: ingest — files with their checkpoints, the actions read from them, sessions, results
    // whose call has not been seen yet, and the first problems met in each file.
    "CREATE TABLE ingest_files (
        id            INTEGER PRIMARY KEY,
        source        TEXT NOT NULL,
        format        TEXT NOT NULL,
        path          TEXT NOT NULL UNIQUE,
        dev           INTEGER NOT NULL DEFAULT 0,
        inode         INTEGER NOT NULL DEFAULT 0,
        fingerprint   INTEGER NOT NULL DEFAULT 0,
        fingerprint_len INTEGER NOT NULL DEFAULT 0,
        offset        INTEGER NOT NULL DEFAULT 0,
        line          INTEGER NOT NULL DEFAULT 1,
        size_seen     INTEGER NOT NULL DEFAULT 0,
        mtime_ns      INTEGER NOT NULL DEFAULT 0,
        parser_state  TEXT,
        bytes_read    INTEGER NOT NULL DEFAULT 0,
        records       INTEGER NOT NULL DEFAULT 0,
        actions       INTEGER NOT NULL DEFAULT 0,
        problems      INTEGER NOT NULL DEFAULT 0,
        resets        INTEGER NOT NULL DEFAULT 0,
        updated_at    INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE ingest_problems (
        id       INTEGER PRIMARY KEY,
        file_id  INTEGER NOT NULL REFERENCES ingest_files(id) ON DELETE CASCADE,
        line     INTEGER NOT NULL,
        reason   TEXT NOT NULL,
        at       INTEGER NOT NULL
    );
    CREATE TABLE sessions (
        id        TEXT PRIMARY KEY,
        source    TEXT NOT NULL,
        parent    TEXT,
        first_ts  TEXT,
        last_ts   TEXT,
        actions   INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE actions (
        id           INTEGER PRIMARY KEY,
        session      TEXT NOT NULL,
        seq          INTEGER NOT NULL,
        ts           TEXT,
        source       TEXT NOT NULL,
        cwd          TEXT,
        tool         TEXT NOT NULL,
        input        TEXT NOT NULL,
        call_id      TEXT,
        ok           INTEGER,
        exit_code    INTEGER,
        output       TEXT,
        duration_ms  INTEGER,
        file_id      INTEGER REFERENCES ingest_files(id) ON DELETE SET NULL,
        UNIQUE (session, seq)
    );
    CREATE UNIQUE INDEX actions_by_call ON actions(session, call_id) WHERE call_id IS NOT NULL;
    CREATE TABLE pending_results (
        session      TEXT NOT NULL,
        call_id      TEXT NOT NULL,
        ok           INTEGER NOT NULL,
        exit_code    INTEGER,
        output       TEXT NOT NULL,
        duration_ms  INTEGER,
        PRIMARY KEY (session, call_id)
    );",
    // 3: LLM calls — replies cached by a hash of the prompt, and tokens spent per candidate and
    // day (the daily budget).
    "CREATE TABLE llm_cache (
        key            TEXT PRIMARY KEY,
        text           TEXT NOT NULL,
        model          TEXT NOT NULL,
        input_tokens   INTEGER NOT NULL,
        output_tokens  INTEGER NOT NULL,
        created_at     INTEGER NOT NULL
    );
    CREATE TABLE llm_usage (
        id             INTEGER PRIMARY KEY,
        day            TEXT NOT NULL,
        candidate      TEXT NOT NULL,
        model          TEXT NOT NULL,
        input_tokens   INTEGER NOT NULL,
        output_tokens  INTEGER NOT NULL,
        cached         INTEGER NOT NULL,
        at             INTEGER NOT NULL
    );
    CREATE INDEX llm_usage_by_day ON llm_usage(day);
    CREATE INDEX llm_usage_by_candidate ON llm_usage(candidate);",
    // 4: runs of registered tools, for health scores, regressions and the MCP tool order.
    "CREATE TABLE executions (
        id              INTEGER PRIMARY KEY,
        tool            TEXT NOT NULL,
        version         TEXT NOT NULL,
        caller          TEXT NOT NULL,
        started_ms      INTEGER NOT NULL,
        duration_ms     INTEGER NOT NULL,
        ok              INTEGER NOT NULL,
        exit_code       INTEGER,
        signal          INTEGER,
        limit_hit       TEXT,
        error_class     TEXT,
        error_excerpt   TEXT,
        peak_memory_kb  INTEGER
    );
    CREATE INDEX executions_by_tool ON executions(tool, version, id);",
    // 5: candidates: tools on their way to review, with their state.
    "CREATE TABLE candidates (
        id          TEXT PRIMARY KEY,
        tool        TEXT NOT NULL,
        origin      TEXT NOT NULL,
        pattern     TEXT,
        request     TEXT,
        state       TEXT NOT NULL,
        reason      TEXT,
        attempts    INTEGER NOT NULL DEFAULT 0,
        generator   TEXT,
        version     TEXT,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
    );
    CREATE INDEX candidates_by_pattern ON candidates(pattern);
    CREATE INDEX candidates_by_state ON candidates(state);",
    // 6: mined patterns (the JSON of each, with its status across runs) and the mining runs.
    "CREATE TABLE patterns (
        id          TEXT PRIMARY KEY,
        kind        TEXT NOT NULL,
        support     INTEGER NOT NULL,
        score       REAL NOT NULL,
        body        TEXT NOT NULL,
        status      TEXT NOT NULL DEFAULT 'new',
        reason      TEXT,
        first_seen  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL
    );
    CREATE INDEX patterns_by_score ON patterns(score DESC);
    CREATE TABLE mine_runs (
        id           INTEGER PRIMARY KEY,
        started_at   INTEGER NOT NULL,
        duration_ms  INTEGER NOT NULL,
        last_action  INTEGER NOT NULL,
        sessions     INTEGER NOT NULL,
        actions      INTEGER NOT NULL,
        patterns     INTEGER NOT NULL
    );",
    // 7: the health stage — each run's parameters (regression cases of a heal are built from
    // failing runs), what the health stage did about each tool (heal attempts, rollbacks,
    // proposals, calls for attention), and every run of a scheduled job.
    "ALTER TABLE executions ADD COLUMN params TEXT;
    CREATE TABLE health_actions (
        id          INTEGER PRIMARY KEY,
        tool        TEXT NOT NULL,
        version     TEXT NOT NULL,
        at_ms       INTEGER NOT NULL,
        action      TEXT NOT NULL,
        trigger     TEXT NOT NULL,
        outcome     TEXT NOT NULL,
        candidate   TEXT,
        detail      TEXT NOT NULL
    );
    CREATE INDEX health_actions_by_tool ON health_actions(tool, id);
    CREATE TABLE job_runs (
        id           INTEGER PRIMARY KEY,
        job          TEXT NOT NULL,
        trigger      TEXT NOT NULL,
        started_ms   INTEGER NOT NULL,
        finished_ms  INTEGER,
        ok           INTEGER,
        summary      TEXT
    );
    CREATE INDEX job_runs_by_job ON job_runs(job, id);",
    // 8: files of a source that the tailer did not read, and why (not a regular file, not of
    // the source's format, unreadable), so `toolsmith sources` shows them instead of hiding them.
    "CREATE TABLE ingest_skipped (
        path    TEXT PRIMARY KEY,
        source  TEXT NOT NULL,
        format  TEXT NOT NULL,
        reason  TEXT NOT NULL,
        at      INTEGER NOT NULL
    );",
    // 9: an action's identity is where it was read, not (session, byte offset). Every file
    // generation (a file's content from its start: a new file, or one truncated, rewritten or
    // replaced) gets a rank, stored in the high bits of its actions' `seq` (a session spanning
    // files stays ordered, and one file's bytes never collide with another's); a checkpoint
    // also keeps a hash of the bytes just before it (a rewrite is seen by content, not size);
    // the generations a path moved on from are kept so that a rotated or copied file resumes
    // where its content was read up to. A call with an id is one action per id within its root
    // session (a compaction copy repeats its parent's tool-use ids). Existing files keep their
    // actions: each existing file becomes a generation ranked by its row id.
    "ALTER TABLE ingest_files ADD COLUMN rank INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE ingest_files ADD COLUMN tail_hash INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE ingest_files ADD COLUMN tail_len INTEGER NOT NULL DEFAULT 0;
    UPDATE ingest_files SET rank = id;
    CREATE INDEX ingest_files_by_fingerprint ON ingest_files(fingerprint);
    CREATE INDEX ingest_files_by_inode ON ingest_files(inode, dev);
    CREATE INDEX ingest_files_by_rank ON ingest_files(rank);
    CREATE TABLE ingest_generations (
        rank            INTEGER PRIMARY KEY,
        source          TEXT NOT NULL,
        format          TEXT NOT NULL,
        path            TEXT NOT NULL,
        dev             INTEGER NOT NULL,
        inode           INTEGER NOT NULL,
        fingerprint     INTEGER NOT NULL,
        fingerprint_len INTEGER NOT NULL,
        offset          INTEGER NOT NULL,
        line            INTEGER NOT NULL,
        tail_hash       INTEGER NOT NULL,
        tail_len        INTEGER NOT NULL,
        parser_state    TEXT,
        retired_at      INTEGER NOT NULL
    );
    CREATE INDEX ingest_generations_by_fingerprint ON ingest_generations(fingerprint);
    CREATE INDEX ingest_generations_by_inode ON ingest_generations(inode, dev);
    ALTER TABLE actions ADD COLUMN root TEXT;
    DROP INDEX actions_by_call;
    CREATE UNIQUE INDEX actions_by_call ON actions(coalesce(root, session), call_id)
        WHERE call_id IS NOT NULL;
    UPDATE OR REPLACE pending_results SET session = (
        SELECT parent FROM sessions WHERE sessions.id = pending_results.session)
    WHERE EXISTS (SELECT 1 FROM sessions WHERE sessions.id = pending_results.session
                  AND parent IS NOT NULL AND source IN ('claude-code', 'codex'));",
    // 10: the line of its file each action was read from (with `file_id`, where a person finds
    // it); NULL for actions stored before, and for whole-file formats (one record per file).
    "ALTER TABLE actions ADD COLUMN line INTEGER;",
    // 11: who asked for a requested candidate (an agent over MCP's `toolsmith_request`): the
    // MCP session and the agent as its client named itself. NULL for every other candidate.
    "ALTER TABLE candidates ADD COLUMN asker_session TEXT;
    ALTER TABLE candidates ADD COLUMN asker_agent TEXT;",
    // 12: the agent that ran a tool (an MCP client's name, or the agent `toolsmith run` was
    // called from), so `toolsmith stats` counts each tool's runs by agent; NULL when unknown
    // and for runs recorded before.
    "ALTER TABLE executions ADD COLUMN agent TEXT;",
    // 13: the notices given of proposals awaiting review, one per proposal per channel (a
    // desktop notification, the line at an agent session's start), so none is given twice —
    // not by a second session start, not by a daemon restart. Owned by `generate::notices`.
    "CREATE TABLE notices (
        candidate   TEXT NOT NULL,
        channel     TEXT NOT NULL,
        noticed_at  INTEGER NOT NULL,
        PRIMARY KEY (candidate, channel)
    ) WITHOUT ROWID;",
    // 14: a requested candidate's spec accepted by a person before generation (`[review]
    // approve_specs`): who accepted it and when. NULL for every other candidate.
    "ALTER TABLE candidates ADD COLUMN spec_accepted_by TEXT;
    ALTER TABLE candidates ADD COLUMN spec_accepted_at INTEGER;",
    // 15: a person's edit made a candidate (origin `edit`, `toolsmith edit` or a commit by hand
    // on a review branch): the commit validated (the candidate is of that commit, by its id, not
    // of a branch that may move) and its author. NULL for every other candidate.
    "ALTER TABLE candidates ADD COLUMN edit_commit TEXT;
    ALTER TABLE candidates ADD COLUMN edit_author TEXT;",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A store as the build before migration 9 left it: two files of one session, the second's
    /// actions at offsets of its own, a call with its result pending.
    fn store_at_version_8(path: &Path) -> Connection {
        let conn = Connection::open(path).expect("open");
        for sql in &MIGRATIONS[..8] {
            conn.execute_batch(sql).expect("old migration");
        }
        conn.execute_batch(
            "INSERT INTO ingest_files (id, source, format, path, fingerprint, fingerprint_len,
                                       offset)
             VALUES (1, 'claude-code', 'claude-code', '/l/a.jsonl', 7, 1024, 5000),
                    (2, 'claude-code', 'claude-code', '/l/b.jsonl', 8, 1024, 9000);
             INSERT INTO sessions (id, source, parent) VALUES ('s:agent:x', 'claude-code', 's');
             INSERT INTO actions (session, seq, source, tool, input, call_id, file_id)
             VALUES ('s', 256, 'claude-code', 'Bash', '{}', 'toolu_1', 1),
                    ('s', 512, 'claude-code', 'Bash', '{}', NULL, 2),
                    ('s:agent:x', 256, 'claude-code', 'Bash', '{}', 'toolu_1', 2);
             INSERT INTO pending_results (session, call_id, ok, output)
             VALUES ('s:agent:x', 'toolu_9', 1, 'done');
             PRAGMA user_version = 8;",
        )
        .expect("old rows");
        conn
    }

    #[test]
    fn migration_9_keeps_every_action_and_ranks_existing_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        let mut conn = store_at_version_8(&path);
        migrate(&mut conn, &path).expect("migrate");
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("version");
        assert_eq!(version, SCHEMA_VERSION);
        let seqs: Vec<(String, i64)> = conn
            .prepare("SELECT session, seq FROM actions ORDER BY id")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(
            seqs,
            [
                ("s".into(), 256),
                ("s".into(), 512),
                ("s:agent:x".into(), 256)
            ],
            "every action kept, under its key"
        );
        // Each existing file is a generation of its own, ranked above the keys stored before.
        let ranks: Vec<i64> = conn
            .prepare("SELECT rank FROM ingest_files ORDER BY id")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(ranks, [1, 2]);
        // A sub-agent's pending result waits under its root session, where its call will look.
        let pending: String = conn
            .query_row("SELECT session FROM pending_results", [], |r| r.get(0))
            .expect("pending");
        assert_eq!(pending, "s");
        // The same call id again in the root session is refused; another session's is not.
        let insert = |session: &str, root: Option<&str>, seq: i64| {
            conn.execute(
                "INSERT OR IGNORE INTO actions (session, seq, source, tool, input, call_id, root)
                 VALUES (?1, ?2, 'claude-code', 'Bash', '{}', 'toolu_2', ?3)",
                rusqlite::params![session, seq, root],
            )
            .expect("insert")
        };
        assert_eq!(insert("s", None, 1 << 44), 1);
        assert_eq!(insert("s:agent:y", Some("s"), 2 << 44), 0);
        assert_eq!(insert("t", None, 1 << 44), 1);
    }
}
