//! Candidates: tools on their way from an opportunity (a mined pattern, a request, a repair) to
//! review, with their state persisted so that a restart resumes or closes them, never leaves
//! them stuck.
//!
//! ```text
//! proposed ──▶ generating ──▶ validating ──▶ awaiting-review ──▶ approved | rejected
//!  │   ▲           │  ▲             │
//!  │   │           │  └── repair ───┘  (LLM only, up to max_attempts)
//!  │   │           ▼                ▼
//!  │   │         failed           failed          (the reason is kept)
//!  ▼   │ accepted
//! spec-awaiting-review ──▶ rejected   (a request, with `[review] approve_specs`)
//! ```
//!
//! With `[review] approve_specs = true`, a requested candidate stops after its spec is made,
//! `spec-awaiting-review`, until a person accepts the spec ([`accept_spec`]: who and when are
//! kept, and it goes back to `proposed` to be generated) or rejects it ([`reject_spec`]).
//!
//! The process working on a candidate holds its claim ([`Claim`](super::staging::Claim), a lock the kernel drops
//! however the process dies). A candidate found `generating` or `validating` with nobody holding
//! its claim was interrupted — the daemon stopped, or a one-shot `toolsmith new` was killed: the
//! next generation (a one-shot command, or the daemon at start and before each run) puts it back
//! to `proposed` (its finished attempts are kept) and generates it again; `toolsmith candidates`
//! shows it as interrupted meanwhile. One a live process holds is never taken from it.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::staging::Staging;
use crate::mine::pattern::{CandidateOutcomes, Rejection};
use crate::store::{StoreError, unix_now};

/// Where a candidate stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Waiting to be generated.
    Proposed,
    /// A request whose spec waits for a person to accept it before anything is generated
    /// (`[review] approve_specs`).
    SpecAwaitingReview,
    /// A generator is writing it.
    Generating,
    /// Its checks and tests are running.
    Validating,
    /// Validated, proposed as a commit on a review branch.
    AwaitingReview,
    /// Approved and registered.
    Approved,
    /// Rejected at review.
    Rejected,
    /// Given up, with the reason.
    Failed,
}

impl State {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Proposed => "proposed",
            State::SpecAwaitingReview => "spec-awaiting-review",
            State::Generating => "generating",
            State::Validating => "validating",
            State::AwaitingReview => "awaiting-review",
            State::Approved => "approved",
            State::Rejected => "rejected",
            State::Failed => "failed",
        }
    }

    /// Parses a stored name.
    pub fn from_name(name: &str) -> Option<State> {
        [
            State::Proposed,
            State::SpecAwaitingReview,
            State::Generating,
            State::Validating,
            State::AwaitingReview,
            State::Approved,
            State::Rejected,
            State::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }

    /// Whether the candidate is done with.
    pub fn is_final(self) -> bool {
        matches!(self, State::Approved | State::Rejected | State::Failed)
    }

    /// The states a candidate may move to from this one.
    fn may_become(self, next: State) -> bool {
        use State::*;
        matches!(
            (self, next),
            (Proposed, Generating)
                | (Proposed, Failed)
                | (Proposed, SpecAwaitingReview)
                | (SpecAwaitingReview, Proposed)
                | (SpecAwaitingReview, Rejected)
                | (SpecAwaitingReview, Failed)
                | (Generating, Validating)
                | (Generating, Failed)
                | (Generating, Proposed)
                | (Validating, Generating)
                | (Validating, AwaitingReview)
                | (Validating, Failed)
                | (Validating, Proposed)
                | (AwaitingReview, Approved)
                | (AwaitingReview, Rejected)
                | (AwaitingReview, Failed)
        )
    }
}

impl From<State> for crate::events::CandidateState {
    fn from(state: State) -> Self {
        use crate::events::CandidateState as S;
        match state {
            State::Proposed => S::Proposed,
            State::SpecAwaitingReview => S::SpecAwaitingReview,
            State::Generating => S::Generating,
            State::Validating => S::Validating,
            State::AwaitingReview => S::AwaitingReview,
            State::Approved => S::Approved,
            State::Rejected => S::Rejected,
            State::Failed => S::Failed,
        }
    }
}

impl Candidate {
    /// The candidate as events describe it.
    pub fn event_info(&self) -> crate::events::CandidateInfo {
        crate::events::CandidateInfo {
            id: self.id.clone(),
            tool: self.tool.clone(),
            version: self.version.clone(),
            state: self.state.into(),
            reason: self.reason.clone(),
            attempts: self.attempts,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A candidate as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// `c-` and 12 hex digits.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// Why it is made: `mined-sequence`, `error-recovery`, `slow-operation`, `request`, `heal`,
    /// `adopt`.
    pub origin: String,
    /// The pattern it comes from, for mined ones.
    pub pattern: Option<String>,
    /// The request's text, for requested ones.
    pub request: Option<String>,
    /// Where it stands.
    pub state: State,
    /// Why it failed, or what the last step said.
    pub reason: Option<String>,
    /// Attempts made so far.
    pub attempts: u32,
    /// The generator that wrote the last attempt.
    pub generator: Option<String>,
    /// The version it would become.
    pub version: Option<String>,
    /// When it was created (Unix seconds).
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
    /// Who asked for it, for one an agent requested (`toolsmith_request`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asker: Option<Asker>,
    /// Who accepted its spec before generation, and when (`[review] approve_specs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_accepted: Option<SpecAccepted>,
    /// The commit a person's edit made, for one of origin `edit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit: Option<Edit>,
}

/// A person's edit that a candidate is made of: the commit (by its id: what is validated and
/// proposed is that commit's files, whatever the branch does after) and its author.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Edit {
    /// The commit's id (40 hex digits).
    pub commit: String,
    /// Its author, `Name <email>`, as git recorded it.
    pub author: String,
}

/// A person's acceptance of a requested candidate's spec, before its code was generated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SpecAccepted {
    /// Who accepted it (as approvals name the approver: the registry's git identity).
    pub by: String,
    /// When (Unix seconds).
    pub at: i64,
}

/// Who asked for a requested candidate: the MCP session the request came on and the agent, as
/// its client named itself in `initialize` (untrusted words, kept only to be shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Asker {
    /// The MCP session (an id the server gives each session).
    pub session: String,
    /// The agent: the client's name and version, or `unknown`.
    pub agent: String,
}

/// A state change that is not allowed, or a candidate that does not exist.
#[derive(Debug, thiserror::Error)]
pub enum CandidateError {
    /// No such candidate.
    #[error("no candidate `{0}`; `toolsmith candidates` lists them")]
    Unknown(String),
    /// The change is not allowed from the current state.
    #[error("candidate `{id}` is {from}; it cannot become {to}")]
    Transition {
        /// The candidate.
        id: String,
        /// Its state.
        from: State,
        /// The state asked for.
        to: State,
    },
    /// A requested candidate's id is not shaped as toolsmith makes them.
    #[error("`{0}` is not a candidate id (`c-` and 12 hex digits)")]
    BadId(String),
    /// A requested candidate's id is taken already.
    #[error("candidate `{0}` exists already; a request is made once")]
    Taken(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for CandidateError {
    fn from(e: rusqlite::Error) -> Self {
        CandidateError::Store(e.into())
    }
}

/// What a new candidate is.
#[derive(Debug, Clone, Default)]
pub struct NewCandidate {
    /// The tool's name.
    pub tool: String,
    /// Why it is made.
    pub origin: String,
    /// Its pattern.
    pub pattern: Option<String>,
    /// Its request text.
    pub request: Option<String>,
}

/// A fresh candidate id.
pub fn new_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = nanos ^ (u128::from(std::process::id()) << 64);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in seed.to_le_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("c-{:012x}", h >> 16)
}

const COLUMNS: &str =
    "id, tool, origin, pattern, request, state, reason, attempts, generator, version,
                       created_at, updated_at, asker_session, asker_agent, spec_accepted_by,
                       spec_accepted_at, edit_commit, edit_author";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Candidate> {
    let state: String = r.get(5)?;
    Ok(Candidate {
        id: r.get(0)?,
        tool: r.get(1)?,
        origin: r.get(2)?,
        pattern: r.get(3)?,
        request: r.get(4)?,
        // A state written by a newer build reads as failed rather than breaking the listing.
        state: State::from_name(&state).unwrap_or(State::Failed),
        reason: r.get(6)?,
        attempts: r.get::<_, i64>(7)? as u32,
        generator: r.get(8)?,
        version: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        asker: match (
            r.get::<_, Option<String>>(12)?,
            r.get::<_, Option<String>>(13)?,
        ) {
            (Some(session), agent) => Some(Asker {
                session,
                agent: agent.unwrap_or_else(|| "unknown".into()),
            }),
            (None, _) => None,
        },
        spec_accepted: match (
            r.get::<_, Option<String>>(14)?,
            r.get::<_, Option<i64>>(15)?,
        ) {
            (Some(by), at) => Some(SpecAccepted {
                by,
                at: at.unwrap_or_default(),
            }),
            (None, _) => None,
        },
        edit: match (
            r.get::<_, Option<String>>(16)?,
            r.get::<_, Option<String>>(17)?,
        ) {
            (Some(commit), author) => Some(Edit {
                commit,
                author: author.unwrap_or_else(|| "unknown".into()),
            }),
            (None, _) => None,
        },
    })
}

/// Stores a new candidate in state `proposed`.
pub fn create(conn: &Connection, new: &NewCandidate) -> Result<Candidate, CandidateError> {
    insert(conn, new, &new_id(), None)
}

/// Stores a new requested candidate in state `proposed` under `id` (given to the asker before
/// generation began, see [`is_id`]), recording who asked.
pub fn create_requested(
    conn: &Connection,
    new: &NewCandidate,
    id: &str,
    asker: &Asker,
) -> Result<Candidate, CandidateError> {
    if !is_id(id) {
        return Err(CandidateError::BadId(id.to_owned()));
    }
    if get(conn, id).is_ok() {
        return Err(CandidateError::Taken(id.to_owned()));
    }
    insert(conn, new, id, Some(asker))
}

/// Whether `id` is shaped as [`new_id`] makes them (`c-` and 12 hex digits).
pub fn is_id(id: &str) -> bool {
    id.strip_prefix("c-").is_some_and(|hex| {
        hex.len() == 12
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

fn insert(
    conn: &Connection,
    new: &NewCandidate,
    id: &str,
    asker: Option<&Asker>,
) -> Result<Candidate, CandidateError> {
    let now = unix_now();
    conn.prepare_cached(
        "INSERT INTO candidates (id, tool, origin, pattern, request, state, attempts, created_at,
                                 updated_at, asker_session, asker_agent)
         VALUES (?1, ?2, ?3, ?4, ?5, 'proposed', 0, ?6, ?6, ?7, ?8)",
    )?
    .execute(params![
        id,
        new.tool,
        new.origin,
        new.pattern,
        new.request,
        now,
        asker.map(|a| a.session.as_str()),
        asker.map(|a| a.agent.as_str()),
    ])?;
    get(conn, id)
}

/// The candidate `id`.
pub fn get(conn: &Connection, id: &str) -> Result<Candidate, CandidateError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM candidates WHERE id = ?1"))?
        .query_row([id], row)
        .optional()?
        .ok_or_else(|| CandidateError::Unknown(id.to_owned()))
}

/// Every candidate, newest first.
pub fn list(conn: &Connection) -> Result<Vec<Candidate>, CandidateError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM candidates ORDER BY rowid DESC"
    ))?;
    let rows = stmt.query_map([], row)?.collect::<Result<_, _>>()?;
    Ok(rows)
}

/// The open (not final) candidate for a pattern, if any: a pattern is worked on once at a time.
pub fn open_for_pattern(
    conn: &Connection,
    pattern: &str,
) -> Result<Option<Candidate>, CandidateError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM candidates WHERE pattern = ?1
             AND state NOT IN ('approved', 'rejected', 'failed') ORDER BY rowid DESC LIMIT 1"
        ))?
        .query_row([pattern], row)
        .optional()?)
}

/// The approved candidate that made `tool` at `version`, if toolsmith made it here.
pub fn made_version(
    conn: &Connection,
    tool: &str,
    version: &str,
) -> Result<Option<Candidate>, CandidateError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM candidates WHERE tool = ?1 AND version = ?2
             AND state = 'approved' ORDER BY updated_at DESC LIMIT 1"
        ))?
        .query_row([tool, version], row)
        .optional()?)
}

/// The open (not final) repair of a tool, if any: a tool is repaired once at a time.
pub fn open_repair(conn: &Connection, tool: &str) -> Result<Option<Candidate>, CandidateError> {
    open_for_tool(conn, tool, "heal")
}

/// The open (not final) candidate of `origin` for a tool, if any.
pub fn open_for_tool(
    conn: &Connection,
    tool: &str,
    origin: &str,
) -> Result<Option<Candidate>, CandidateError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM candidates WHERE tool = ?1 AND origin = ?2
             AND state NOT IN ('approved', 'rejected', 'failed') ORDER BY rowid DESC LIMIT 1"
        ))?
        .query_row([tool, origin], row)
        .optional()?)
}

/// Moves a candidate to `to`, recording `reason`; refuses a change the state machine does not
/// allow.
pub fn transition(
    conn: &Connection,
    id: &str,
    to: State,
    reason: Option<&str>,
) -> Result<Candidate, CandidateError> {
    let current = get(conn, id)?;
    if !current.state.may_become(to) {
        return Err(CandidateError::Transition {
            id: id.to_owned(),
            from: current.state,
            to,
        });
    }
    conn.prepare_cached(
        "UPDATE candidates SET state = ?2, reason = ?3, updated_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, to.as_str(), reason, unix_now()])?;
    get(conn, id)
}

/// Accepts the spec of a candidate awaiting spec review: records who (`by`) and when, and puts
/// it back to `proposed`, where generation takes it. Refused from any other state.
pub fn accept_spec(conn: &Connection, id: &str, by: &str) -> Result<Candidate, CandidateError> {
    let current = get(conn, id)?;
    if current.state != State::SpecAwaitingReview {
        return Err(CandidateError::Transition {
            id: id.to_owned(),
            from: current.state,
            to: State::Proposed,
        });
    }
    let now = unix_now();
    let why = format!("spec accepted by {by}; to be generated");
    conn.prepare_cached(
        "UPDATE candidates SET state = 'proposed', reason = ?2, spec_accepted_by = ?3,
                spec_accepted_at = ?4, updated_at = ?4
         WHERE id = ?1 AND state = 'spec-awaiting-review'",
    )?
    .execute(params![id, why, by, now])?;
    get(conn, id)
}

/// Rejects the spec of a candidate awaiting spec review, keeping the reason; nothing of it is
/// generated. Refused from any other state.
pub fn reject_spec(conn: &Connection, id: &str, reason: &str) -> Result<Candidate, CandidateError> {
    let current = get(conn, id)?;
    if current.state != State::SpecAwaitingReview {
        return Err(CandidateError::Transition {
            id: id.to_owned(),
            from: current.state,
            to: State::Rejected,
        });
    }
    transition(
        conn,
        id,
        State::Rejected,
        Some(&format!("{SPEC_REJECTED}{reason}")),
    )
}

/// How the reason of a candidate whose spec was rejected begins.
pub const SPEC_REJECTED: &str = "spec rejected at review: ";

/// Records the edit a candidate of origin `edit` is made of.
pub fn set_edit(conn: &Connection, id: &str, edit: &Edit) -> Result<(), CandidateError> {
    let n = conn
        .prepare_cached(
            "UPDATE candidates SET edit_commit = ?2, edit_author = ?3, updated_at = ?4
             WHERE id = ?1",
        )?
        .execute(params![id, edit.commit, edit.author, unix_now()])?;
    if n == 0 {
        return Err(CandidateError::Unknown(id.to_owned()));
    }
    Ok(())
}

/// The newest candidate made of the edit `commit`, if any: a commit is validated once.
pub fn for_edit_commit(
    conn: &Connection,
    commit: &str,
) -> Result<Option<Candidate>, CandidateError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM candidates WHERE edit_commit = ?1 ORDER BY rowid DESC LIMIT 1"
        ))?
        .query_row([commit], row)
        .optional()?)
}

/// Records a finished attempt: its number, the generator, the version it targets.
pub fn record_attempt(
    conn: &Connection,
    id: &str,
    attempt: u32,
    generator: &str,
    version: &str,
) -> Result<(), CandidateError> {
    conn.prepare_cached(
        "UPDATE candidates SET attempts = ?2, generator = ?3, version = ?4, updated_at = ?5
         WHERE id = ?1",
    )?
    .execute(params![id, attempt, generator, version, unix_now()])?;
    Ok(())
}

/// Sets the version a candidate would become (decided when it is created).
pub fn set_version(conn: &Connection, id: &str, version: &str) -> Result<(), CandidateError> {
    let n = conn
        .prepare_cached("UPDATE candidates SET version = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, version, unix_now()])?;
    if n == 0 {
        return Err(CandidateError::Unknown(id.to_owned()));
    }
    Ok(())
}

/// The candidates in `state`, oldest first.
pub fn in_state(conn: &Connection, state: State) -> Result<Vec<Candidate>, CandidateError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM candidates WHERE state = ?1 ORDER BY rowid"
    ))?;
    let rows = stmt
        .query_map([state.as_str()], row)?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// What the candidates made from patterns came to, per pattern, for mining to keep the
/// patterns' statuses up to date: rejected ones with the newest rejection's reason, approved
/// ones, and those with a candidate under way.
pub fn pattern_outcomes(conn: &Connection) -> Result<CandidateOutcomes, StoreError> {
    let mut outcomes = CandidateOutcomes::default();
    let mut stmt = conn.prepare_cached(
        "SELECT pattern, state, reason FROM candidates WHERE pattern IS NOT NULL
         AND state IN ('rejected', 'approved', 'proposed', 'generating', 'validating',
                       'awaiting-review', 'spec-awaiting-review')
         ORDER BY updated_at DESC, rowid DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        let state: String = r.get(1)?;
        Ok((r.get::<_, String>(0)?, State::from_name(&state), r.get(2)?))
    })?;
    for row in rows {
        let (pattern, state, reason): (String, Option<State>, Option<String>) = row?;
        // Newest first: a pattern's first rejection met is its newest.
        let list = match state {
            Some(State::Rejected) => {
                if !outcomes.rejected.iter().any(|r| r.pattern == pattern) {
                    outcomes.rejected.push(Rejection { pattern, reason });
                }
                continue;
            }
            Some(State::Approved) => &mut outcomes.approved,
            Some(_) => &mut outcomes.under_way,
            None => continue,
        };
        if !list.contains(&pattern) {
            list.push(pattern);
        }
    }
    Ok(outcomes)
}

/// Whether `c` was interrupted: left `generating` or `validating` by a process that is gone
/// (nobody holds its claim under `state_dir`).
pub fn is_interrupted(c: &Candidate, state_dir: &Path) -> bool {
    matches!(c.state, State::Generating | State::Validating)
        && !Staging::new(state_dir, &c.id).claimed()
}

/// Puts interrupted work back in the queue: candidates left `generating` or `validating` by a
/// process that is gone (the daemon stopped, a one-shot command was killed). A candidate whose
/// claim a live process holds is left to it. Returns the ids put back.
pub fn recover_interrupted(
    conn: &Connection,
    state_dir: &Path,
) -> Result<Vec<String>, CandidateError> {
    let in_flight: Vec<String> = conn
        .prepare_cached(
            "SELECT id FROM candidates WHERE state IN ('generating', 'validating') ORDER BY rowid",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut resumed = Vec::new();
    for id in in_flight {
        // Held while the state changes, so no worker starts on it half-way.
        let claim = match Staging::new(state_dir, &id).try_claim() {
            Ok(Some(claim)) => Some(claim),
            Ok(None) => {
                tracing::debug!(candidate = %id, "worked on by a live process, left to it");
                continue;
            }
            Err(e) => {
                // Nobody could have claimed it through a file that cannot be opened.
                tracing::warn!(candidate = %id, "its claim cannot be checked ({e}); resumed");
                None
            }
        };
        let changed = conn
            .prepare_cached(
                "UPDATE candidates SET state = 'proposed',
                        reason = 'interrupted while ' || state || '; resumed', updated_at = ?2
                 WHERE id = ?1 AND state IN ('generating', 'validating')",
            )?
            .execute(params![id, unix_now()])?;
        drop(claim);
        if changed == 1 {
            resumed.push(id);
        }
    }
    Ok(resumed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        drop(crate::store::Store::open(&path).expect("migrate"));
        let conn = Connection::open(&path).expect("open");
        (dir, conn)
    }

    #[test]
    fn the_state_machine_is_enforced_and_persisted() {
        let (_dir, conn) = conn();
        let c = create(
            &conn,
            &NewCandidate {
                tool: "cargo-check-all".into(),
                origin: "mined-sequence".into(),
                pattern: Some("p-000000000001".into()),
                request: None,
            },
        )
        .expect("create");
        assert_eq!(c.state, State::Proposed);
        assert!(c.id.starts_with("c-") && c.id.len() == 14);
        let err = transition(&conn, &c.id, State::AwaitingReview, None).expect_err("skip");
        assert!(
            err.to_string()
                .contains("is proposed; it cannot become awaiting-review")
        );
        transition(&conn, &c.id, State::Generating, None).expect("generate");
        transition(&conn, &c.id, State::Validating, None).expect("validate");
        transition(&conn, &c.id, State::Generating, Some("repair")).expect("repair");
        transition(&conn, &c.id, State::Validating, None).expect("validate");
        record_attempt(&conn, &c.id, 2, "llm:test", "1.0.0").expect("attempt");
        let done = transition(&conn, &c.id, State::AwaitingReview, Some("passed 4 tests"))
            .expect("review");
        assert_eq!(done.attempts, 2);
        assert_eq!(done.reason.as_deref(), Some("passed 4 tests"));
        assert!(
            open_for_pattern(&conn, "p-000000000001")
                .expect("q")
                .is_some()
        );
        transition(&conn, &c.id, State::Approved, None).expect("approve");
        assert!(
            open_for_pattern(&conn, "p-000000000001")
                .expect("q")
                .is_none()
        );
        assert!(
            transition(&conn, &c.id, State::Proposed, None).is_err(),
            "final"
        );
        assert!(matches!(
            get(&conn, "c-nope"),
            Err(CandidateError::Unknown(_))
        ));
    }

    #[test]
    fn a_requested_candidate_takes_the_id_it_was_given_and_keeps_who_asked() {
        let (_dir, conn) = conn();
        let new = NewCandidate {
            tool: "build-one".into(),
            origin: "request".into(),
            pattern: None,
            request: Some("Build one package".into()),
        };
        let asker = Asker {
            session: "mcp-0123456789ab".into(),
            agent: "claude-code 2.1.0".into(),
        };
        let id = new_id();
        let c = create_requested(&conn, &new, &id, &asker).expect("create");
        assert_eq!(c.id, id);
        assert_eq!(get(&conn, &id).expect("get").asker.as_ref(), Some(&asker));
        let json = serde_json::to_value(&c).expect("json");
        assert_eq!(json["asker"]["agent"], "claude-code 2.1.0");
        assert!(matches!(
            create_requested(&conn, &new, &id, &asker),
            Err(CandidateError::Taken(_))
        ));
        for bad in ["c-../../etc", "c-0123456789AB", "x-0123456789ab", "c-0123"] {
            assert!(
                matches!(
                    create_requested(&conn, &new, bad, &asker),
                    Err(CandidateError::BadId(_))
                ),
                "{bad}"
            );
        }
        // Another candidate records nobody, and says nothing of it.
        let mined = create(
            &conn,
            &NewCandidate {
                request: None,
                ..new
            },
        )
        .expect("create");
        assert_eq!(mined.asker, None);
        assert!(
            serde_json::to_value(&mined)
                .expect("json")
                .get("asker")
                .is_none()
        );
    }

    #[test]
    fn a_spec_awaiting_review_is_accepted_once_with_who_and_when_or_rejected_with_why() {
        let (_dir, conn) = conn();
        let new = NewCandidate {
            tool: "build-one".into(),
            origin: "request".into(),
            pattern: None,
            request: Some("Build one package".into()),
        };
        let a = create(&conn, &new).expect("a");
        // Only a spec awaiting review can be accepted or rejected.
        assert!(matches!(
            accept_spec(&conn, &a.id, "Ann <ann@example.org>"),
            Err(CandidateError::Transition { .. })
        ));
        assert!(reject_spec(&conn, &a.id, "no").is_err());
        transition(&conn, &a.id, State::SpecAwaitingReview, Some("waits")).expect("waits");
        assert_eq!(
            in_state(&conn, State::SpecAwaitingReview).expect("q").len(),
            1
        );
        let accepted = accept_spec(&conn, &a.id, "Ann <ann@example.org>").expect("accept");
        assert_eq!(accepted.state, State::Proposed);
        let by = accepted.spec_accepted.clone().expect("recorded");
        assert_eq!(by.by, "Ann <ann@example.org>");
        assert!(by.at > 0);
        assert_eq!(
            serde_json::to_value(&accepted).expect("json")["spec_accepted"]["by"],
            "Ann <ann@example.org>"
        );
        // Accepted once: a second acceptance is refused, the first kept.
        assert!(accept_spec(&conn, &a.id, "Bob").is_err());
        assert_eq!(
            get(&conn, &a.id)
                .expect("a")
                .spec_accepted
                .expect("kept")
                .by,
            "Ann <ann@example.org>"
        );

        let b = create(&conn, &new).expect("b");
        transition(&conn, &b.id, State::SpecAwaitingReview, None).expect("waits");
        let rejected = reject_spec(&conn, &b.id, "does too much").expect("reject");
        assert_eq!(rejected.state, State::Rejected);
        assert_eq!(
            rejected.reason.as_deref(),
            Some("spec rejected at review: does too much")
        );
        assert_eq!(rejected.spec_accepted, None);
        assert!(
            transition(&conn, &b.id, State::Proposed, None).is_err(),
            "final"
        );
    }

    #[test]
    fn interrupted_work_is_resumed_not_stuck() {
        let (_dir, conn) = conn();
        let new = |tool: &str| NewCandidate {
            tool: tool.into(),
            origin: "request".into(),
            request: Some("x".into()),
            pattern: None,
        };
        let a = create(&conn, &new("tool-a")).expect("a");
        let b = create(&conn, &new("tool-b")).expect("b");
        let c = create(&conn, &new("tool-c")).expect("c");
        transition(&conn, &a.id, State::Generating, None).expect("gen");
        transition(&conn, &b.id, State::Generating, None).expect("gen");
        transition(&conn, &b.id, State::Validating, None).expect("val");
        let state_dir = tempfile::tempdir().expect("state");
        // A live process works on this one: it is never taken from it.
        let d = create(&conn, &new("tool-d")).expect("d");
        transition(&conn, &d.id, State::Generating, None).expect("gen");
        let held = Staging::new(state_dir.path(), &d.id)
            .try_claim()
            .expect("claim")
            .expect("free");
        assert!(is_interrupted(
            &get(&conn, &a.id).expect("a"),
            state_dir.path()
        ));
        assert!(!is_interrupted(
            &get(&conn, &d.id).expect("d"),
            state_dir.path()
        ));
        let mut resumed = recover_interrupted(&conn, state_dir.path()).expect("recover");
        resumed.sort();
        let mut want = vec![a.id.clone(), b.id.clone()];
        want.sort();
        assert_eq!(resumed, want);
        let a = get(&conn, &a.id).expect("a");
        assert_eq!(a.state, State::Proposed);
        assert_eq!(
            a.reason.as_deref(),
            Some("interrupted while generating; resumed")
        );
        assert_eq!(get(&conn, &c.id).expect("c").state, State::Proposed);
        assert_eq!(get(&conn, &d.id).expect("d").state, State::Generating);
        assert_eq!(list(&conn).expect("list").len(), 4);
        // Its holder gone, it is interrupted too.
        drop(held);
        assert_eq!(
            recover_interrupted(&conn, state_dir.path()).expect("recover"),
            vec![d.id.clone()]
        );
        assert!(!is_interrupted(
            &get(&conn, &d.id).expect("d"),
            state_dir.path()
        ));
    }

    #[test]
    fn pattern_outcomes_name_each_patterns_newest_rejection_approval_and_work_under_way() {
        let (_dir, conn) = conn();
        let make = |pattern: Option<&str>, path: &[State], reason: Option<&str>| {
            let c = create(
                &conn,
                &NewCandidate {
                    tool: "t".into(),
                    origin: "pattern".into(),
                    pattern: pattern.map(str::to_owned),
                    request: None,
                },
            )
            .expect("created");
            for (i, to) in path.iter().enumerate() {
                let why = (i + 1 == path.len()).then_some(reason).flatten();
                transition(&conn, &c.id, *to, why).expect("allowed");
            }
        };
        let reviewed = [State::Generating, State::Validating, State::AwaitingReview];
        let rejected = [&reviewed[..], &[State::Rejected]].concat();
        let approved = [&reviewed[..], &[State::Approved]].concat();
        make(Some("p-1"), &rejected, Some("older"));
        make(Some("p-1"), &rejected, Some("newest"));
        make(Some("p-2"), &approved, None);
        make(Some("p-2"), &approved, None);
        make(Some("p-3"), &[], None);
        make(Some("p-4"), &reviewed, None);
        make(Some("p-5"), &[State::Failed], Some("gave up"));
        make(None, &approved, None);
        let outcomes = pattern_outcomes(&conn).expect("read");
        assert_eq!(
            outcomes.rejected,
            [Rejection {
                pattern: "p-1".into(),
                reason: Some("newest".into())
            }]
        );
        assert_eq!(outcomes.approved, ["p-2"]);
        let mut under_way = outcomes.under_way;
        under_way.sort();
        assert_eq!(under_way, ["p-3", "p-4"]);
    }
}
