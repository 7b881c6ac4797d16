//! Review decisions, recorded on both sides: the git registry (the source of truth for what is
//! approved) and the store (candidate states, and patterns that are not to be proposed again).

use rusqlite::Connection;

use super::candidates::{self, State};
use crate::mine::pattern::{self, PatternStatus};
use crate::registry::repo::{Landed, Registry, RegistryError, Review};
use crate::sandbox::Need;
use crate::store::StoreError;
use crate::validate::needs::Levels;

/// A review decision that could not be made or recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The registry refused.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The store could not record it (the registry has it: the daemon records it on its next
    /// look at the registry).
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The candidate could not change state.
    #[error("{0}")]
    Candidate(#[from] candidates::CandidateError),
    /// A grant the policy denies (the message names the line that denies it).
    #[error("{0}")]
    Denied(String),
}

impl From<rusqlite::Error> for ReviewError {
    fn from(e: rusqlite::Error) -> Self {
        ReviewError::Store(e.into())
    }
}

/// Marks the candidates of proposals found on `main` as approved. Candidates the store does not
/// know (proposals that came from another clone) are skipped.
pub fn record_landed(conn: &Connection, landed: &[Landed]) -> Result<(), StoreError> {
    for l in landed {
        let Some(id) = &l.candidate else {
            continue;
        };
        match candidates::get(conn, id) {
            Ok(c) if c.state == State::AwaitingReview => {
                let why = format!("approved by {} as {} ({})", l.approved_by, l.tag, l.via);
                if let Err(e) = candidates::transition(conn, id, State::Approved, Some(&why)) {
                    tracing::warn!("candidate {id} not marked approved: {e}");
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Why the policy refuses one of `grants` (it denies it), naming the line that does.
pub fn denied_grant(levels: &Levels, grants: &[Need]) -> Option<String> {
    grants.iter().find_map(|g| {
        levels
            .refusal(g)
            .map(|why| format!("--grant {g} is refused: {why}"))
    })
}

/// Approves a proposal in the registry granting `grants` (exactly its needs; none the policy
/// `levels` deny), then records it.
pub fn approve(
    registry: &Registry,
    conn: Option<&Connection>,
    key: &str,
    approver: &str,
    note: Option<&str>,
    grants: &[Need],
    levels: &Levels,
) -> Result<Landed, ReviewError> {
    if let Some(why) = denied_grant(levels, grants) {
        return Err(ReviewError::Denied(why));
    }
    let landed = registry.approve_granting(key, approver, note, grants)?;
    if let Some(conn) = conn {
        record_landed(conn, std::slice::from_ref(&landed))?;
    }
    Ok(landed)
}

/// Rejects a proposal in the registry, then records the reason on its candidate and its
/// pattern, which is not proposed again.
pub fn reject(
    registry: &Registry,
    conn: Option<&Connection>,
    key: &str,
    reason: &str,
) -> Result<Review, ReviewError> {
    let review = registry.reject(key, reason)?;
    if let (Some(conn), Some(id)) = (conn, &review.candidate)
        && let Ok(c) = candidates::get(conn, id)
    {
        let why = format!("rejected at review: {reason}");
        if c.state == State::AwaitingReview {
            candidates::transition(conn, id, State::Rejected, Some(&why))?;
        }
        if let Some(p) = &c.pattern {
            pattern::set_status(conn, p, PatternStatus::Rejected, Some(&why))?;
        }
    }
    Ok(review)
}

/// A decision git has about a candidate that the store may not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The candidate.
    pub candidate: String,
    /// Approved or rejected.
    pub state: State,
    /// What happened, for the candidate's reason.
    pub why: String,
}

/// What the registry says of `waiting` candidates (awaiting review in the store) whose proposal
/// branch is gone: approved (a commit on main carries their `Candidate:`), rejected (a rejected
/// ref), or rejected by hand (the branch deleted with git). Reads git only.
pub fn decisions(registry: &Registry, waiting: &[String]) -> Result<Vec<Decision>, RegistryError> {
    if waiting.is_empty() {
        return Ok(Vec::new());
    }
    let open: Vec<String> = registry
        .reviews()?
        .into_iter()
        .filter_map(|r| r.candidate)
        .collect();
    Ok(waiting
        .iter()
        .filter(|id| !open.contains(id))
        .map(|id| {
            let (state, why) = if let Some((commit, by)) = registry.landed_candidate(id) {
                (
                    State::Approved,
                    format!(
                        "approved by {by} (commit {})",
                        &commit[..12.min(commit.len())]
                    ),
                )
            } else if let Some(reason) = registry.rejection_of(id) {
                (State::Rejected, format!("rejected at review: {reason}"))
            } else {
                (
                    State::Rejected,
                    "its review branch was deleted with git: rejected by hand".to_owned(),
                )
            };
            Decision {
                candidate: id.clone(),
                state,
                why,
            }
        })
        .collect())
}

/// The ids of the candidates awaiting review, for [`decisions`].
pub fn waiting(conn: &Connection) -> Result<Vec<String>, ReviewError> {
    Ok(candidates::in_state(conn, State::AwaitingReview)?
        .into_iter()
        .map(|c| c.id)
        .collect())
}

/// Records [`decisions`] in the store (a rejected candidate's pattern is not proposed again).
/// An approval killed after git had it, before the store did, is recorded here.
pub fn apply(conn: &Connection, decisions: &[Decision]) -> Result<(), ReviewError> {
    for d in decisions {
        let c = candidates::get(conn, &d.candidate)?;
        if c.state != State::AwaitingReview {
            continue;
        }
        candidates::transition(conn, &d.candidate, d.state, Some(&d.why))?;
        if d.state == State::Rejected
            && let Some(p) = &c.pattern
        {
            pattern::set_status(conn, p, PatternStatus::Rejected, Some(&d.why))?;
        }
    }
    Ok(())
}

/// [`decisions`] then [`apply`], for a caller holding both the registry and the store.
pub fn catch_up(registry: &Registry, conn: &Connection) -> Result<(), ReviewError> {
    let found = decisions(registry, &waiting(conn)?)?;
    apply(conn, &found)
}
