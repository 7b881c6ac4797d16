//! The notices given of proposals awaiting review, where the person is: a desktop notification
//! (the daemon, `[review] notify`) and a line at the start of an agent's session (`toolsmith
//! notices --session-start`, run by the agents' session-start hooks). Each proposal is told at
//! most once per channel: what was told is recorded in the `notices` table, which this module
//! owns, so a second session start or a daemon restart does not tell it again.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::candidates::{self, Candidate, CandidateError, State};

/// Where a notice is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A desktop notification over the session bus.
    Desktop,
    /// A line at the start of an agent's session.
    SessionStart,
}

impl Channel {
    /// Its name in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Desktop => "desktop",
            Channel::SessionStart => "session-start",
        }
    }
}

/// What a notice tells: the proposals not yet told on its channel, and how many wait in all.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// Awaiting review and not yet told on the channel, oldest first.
    pub new: Vec<Candidate>,
    /// Every proposal awaiting review.
    pub waiting: usize,
}

impl Notice {
    /// The one line a person reads — `toolsmith: 2 tools await your review (a, b) — toolsmith
    /// ui` — or `None` when nothing new waits.
    pub fn line(&self) -> Option<String> {
        let n = self.new.len();
        if n == 0 {
            return None;
        }
        const NAMED: usize = 3;
        let names: Vec<&str> = self
            .new
            .iter()
            .take(NAMED)
            .map(|c| c.tool.as_str())
            .collect();
        let more = n.saturating_sub(NAMED);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let (tools, verb) = if n == 1 {
            ("tool", "awaits")
        } else {
            ("tools", "await")
        };
        let fresh = if self.waiting > n { " new" } else { "" };
        let all = if self.waiting > n {
            format!("; {} in all", self.waiting)
        } else {
            String::new()
        };
        Some(format!(
            "toolsmith: {n}{fresh} {tools} {verb} your review ({}{more}{all}) — toolsmith ui",
            names.join(", ")
        ))
    }
}

/// The proposals awaiting review that `channel` has not told yet, without recording anything.
pub fn pending(conn: &Connection, channel: Channel) -> Result<Notice, CandidateError> {
    let waiting = candidates::in_state(conn, State::AwaitingReview)?;
    let mut told =
        conn.prepare_cached("SELECT 1 FROM notices WHERE candidate = ?1 AND channel = ?2")?;
    let mut new = Vec::new();
    for c in &waiting {
        let seen: Option<i64> = told
            .query_row(params![c.id, channel.as_str()], |r| r.get(0))
            .optional()?;
        if seen.is_none() {
            new.push(c.clone());
        }
    }
    Ok(Notice {
        new,
        waiting: waiting.len(),
    })
}

/// Records that `channel` told of `ids` at `now` (Unix seconds); telling again is a no-op.
pub fn record(
    conn: &Connection,
    channel: Channel,
    ids: &[&str],
    now: i64,
) -> Result<(), CandidateError> {
    let mut insert = conn.prepare_cached(
        "INSERT OR IGNORE INTO notices (candidate, channel, noticed_at) VALUES (?1, ?2, ?3)",
    )?;
    for id in ids {
        insert.execute(params![id, channel.as_str(), now])?;
    }
    Ok(())
}

/// Takes back what [`claim`] recorded for `ids` on `channel`, when the notice could not be
/// given after all (the desktop's notification program failed): they are told next time.
pub fn forget(conn: &Connection, channel: Channel, ids: &[&str]) -> Result<(), CandidateError> {
    let mut delete =
        conn.prepare_cached("DELETE FROM notices WHERE candidate = ?1 AND channel = ?2")?;
    for id in ids {
        delete.execute(params![id, channel.as_str()])?;
    }
    Ok(())
}

/// [`pending`] and [`record`] in one immediate transaction: two agents' sessions starting at
/// once tell each proposal once between them.
pub fn claim(conn: &Connection, channel: Channel, now: i64) -> Result<Notice, CandidateError> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let notice = pending(&tx, channel)?;
    let ids: Vec<&str> = notice.new.iter().map(|c| c.id.as_str()).collect();
    record(&tx, channel, &ids, now)?;
    tx.commit()?;
    Ok(notice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::candidates::NewCandidate;

    fn conn() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        drop(crate::store::Store::open(&path).expect("migrate"));
        let conn = Connection::open(&path).expect("open");
        (dir, conn)
    }

    fn awaiting(conn: &Connection, tool: &str) -> String {
        let c = candidates::create(
            conn,
            &NewCandidate {
                tool: tool.into(),
                origin: "request".into(),
                ..NewCandidate::default()
            },
        )
        .expect("create");
        for to in [State::Generating, State::Validating, State::AwaitingReview] {
            candidates::transition(conn, &c.id, to, None).expect("transition");
        }
        c.id
    }

    #[test]
    fn each_proposal_is_told_once_per_channel() {
        let (_dir, conn) = conn();
        let conn = &conn;
        awaiting(conn, "du-sh");
        awaiting(conn, "curl-health");
        let first = claim(conn, Channel::SessionStart, 1).expect("claim");
        assert_eq!(
            first.line().as_deref(),
            Some("toolsmith: 2 tools await your review (du-sh, curl-health) — toolsmith ui")
        );
        let again = claim(conn, Channel::SessionStart, 2).expect("claim");
        assert_eq!(again.line(), None, "told already");
        assert_eq!(again.waiting, 2);
        // Another channel has told nothing yet.
        let desktop = pending(conn, Channel::Desktop).expect("pending");
        assert_eq!(desktop.new.len(), 2);
        assert_eq!(
            pending(conn, Channel::Desktop).expect("pending").new.len(),
            2,
            "pending records nothing"
        );
        // Taken back (the notification failed): told next time.
        let ids: Vec<&str> = first.new.iter().map(|c| c.id.as_str()).collect();
        forget(conn, Channel::SessionStart, &ids[..1]).expect("forget");
        assert_eq!(
            claim(conn, Channel::SessionStart, 3).expect("claim").new,
            first.new[..1]
        );
        awaiting(conn, "git-sync");
        let third = claim(conn, Channel::SessionStart, 3).expect("claim");
        assert_eq!(
            third.line().as_deref(),
            Some("toolsmith: 1 new tool awaits your review (git-sync; 3 in all) — toolsmith ui")
        );
    }
}
