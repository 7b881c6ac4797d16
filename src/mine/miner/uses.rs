//! After a habit's tool is approved: the times an agent still ran the habit's commands by hand
//! (its *missed uses*), found as mining finds a pattern's occurrences — the same tokenizer
//! (with the user's shell definitions), the same per-session token sequences with by-hand
//! steps as walls, the same count of occurrences that do not overlap
//! ([`sequences::counted_occurrences`]) within the gap limit, and the same rule that an
//! occurrence holds whole actions ([`step_positions`]).

use std::collections::HashMap;

use rusqlite::Connection;
use serde::Serialize;

use super::find::step_positions;
use super::load::load_where;
use super::{MineError, MineOptions, UserShell};
use crate::mine::sequences::{self, Occurrence};
use crate::mine::token::{NoiseRules, Tokenizer};

/// A habit to look for: the canonical keys of its steps (`Step::key`, as a pattern or a
/// tool's spec keeps them) and the time from which its runs count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Habit {
    /// What the caller calls it (a tool's name).
    pub name: String,
    /// Its steps' canonical keys, in order.
    pub keys: Vec<String>,
    /// Only occurrences starting at or after this time (Unix ms) count.
    pub since_ms: i64,
}

impl Habit {
    /// Whether the habit can be looked for: it has steps, and it is no recovery (whose keys
    /// start with `on-failure:`: a failure followed by a fix, not a run of commands).
    pub fn searchable(&self) -> bool {
        !self.keys.is_empty()
            && self
                .keys
                .iter()
                .all(|k| !k.is_empty() && !k.starts_with("on-failure:"))
    }
}

/// One time a habit was run by hand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandRun {
    /// The habit's name.
    pub name: String,
    /// The session.
    pub session: String,
    /// The agent (or shell history) whose session it is: `claude-code`, `codex`, `bash`, ….
    pub agent: String,
    /// Its first action's seq and its last's.
    pub first_seq: u64,
    /// See `first_seq`.
    pub last_seq: u64,
    /// The agent's calls it took (actions): what one tool call would have been.
    pub calls: u32,
    /// When its first action started (Unix ms).
    pub started_ms: i64,
    /// What it took, from its first action's start to its last's end (timestamps and the last
    /// action's duration; to its start when its duration is unknown); `None` for one action
    /// of unknown duration.
    pub took_ms: Option<u64>,
}

/// An action's time as the log gives it: when it started (Unix ms) and how long it ran.
#[derive(Debug, Clone, Copy)]
struct When {
    started_ms: i64,
    duration_ms: Option<u64>,
}

/// Every occurrence of each searchable habit among the actions stored, each counted from its
/// habit's `since_ms`. Actions without a timestamp are left out (nothing says they came after
/// the approval). Reads only.
pub fn runs_by_hand(
    conn: &Connection,
    user: &UserShell,
    habits: &[Habit],
    options: &MineOptions,
) -> Result<Vec<HandRun>, MineError> {
    let habits: Vec<&Habit> = habits.iter().filter(|h| h.searchable()).collect();
    let Some(since) = habits.iter().map(|h| h.since_ms).min() else {
        return Ok(Vec::new());
    };
    let tokenizer =
        Tokenizer::new(&NoiseRules::default()).with_definitions(user.definitions.clone());
    let mut times: HashMap<(String, u64), When> = HashMap::new();
    let mut agents: HashMap<String, String> = HashMap::new();
    let loaded = load_where(conn, &tokenizer, |row| {
        let Some(started_ms) = row
            .ts
            .and_then(|ts| ts.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_millisecond())
        else {
            return false;
        };
        if started_ms < since {
            return false;
        }
        times.insert(
            (row.session.to_owned(), row.seq),
            When {
                started_ms,
                duration_ms: row.duration_ms.map(|d| d.max(0) as u64),
            },
        );
        if !agents.contains_key(row.session) {
            agents.insert(row.session.to_owned(), row.source.to_owned());
        }
        true
    })?;
    let max_gap = Some(options.max_gap);
    let mut found = Vec::new();
    for habit in habits {
        let Some(items) = habit
            .keys
            .iter()
            .map(|k| loaded.interner.get(k))
            .collect::<Option<Vec<u32>>>()
        else {
            // A step never run since: the habit was not either.
            continue;
        };
        for session in &loaded.sessions {
            for o in sequences::counted_occurrences(&session.symbols, &items, max_gap) {
                let o = Occurrence {
                    seq: session.index,
                    ..o
                };
                let Some(positions) = step_positions(&loaded, &items, &o, max_gap) else {
                    continue;
                };
                let mut rows: Vec<u64> = positions
                    .iter()
                    .filter_map(|&p| session.token_row.get(p))
                    .filter_map(|&r| session.rows.get(r as usize))
                    .map(|row| row.seq)
                    .collect();
                rows.dedup();
                let whens: Vec<When> = rows
                    .iter()
                    .filter_map(|&seq| times.get(&(session.id.clone(), seq)).copied())
                    .collect();
                let (Some(first), Some(last)) = (whens.first(), whens.last()) else {
                    continue;
                };
                if first.started_ms < habit.since_ms {
                    continue;
                }
                // From the first call's start to the last's end; a last call of unknown
                // duration counts from its start (a lower bound).
                let span = (last.started_ms - first.started_ms).max(0) as u64;
                let took_ms = match (span, last.duration_ms) {
                    (span, Some(d)) => Some(span + d),
                    (0, None) => None,
                    (span, None) => Some(span),
                };
                found.push(HandRun {
                    name: habit.name.clone(),
                    session: session.id.clone(),
                    agent: agents.get(&session.id).cloned().unwrap_or_default(),
                    first_seq: rows.first().copied().unwrap_or_default(),
                    last_seq: rows.last().copied().unwrap_or_default(),
                    calls: rows.len() as u32,
                    started_ms: first.started_ms,
                    took_ms,
                });
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{ran, store};
    use super::*;

    fn habit(keys: &[&str], since_ms: i64) -> Habit {
        Habit {
            name: "build-and-test".into(),
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            since_ms,
        }
    }

    #[test]
    fn a_recovery_or_an_empty_habit_is_not_looked_for() {
        assert!(!habit(&[], 0).searchable());
        assert!(!habit(&["on-failure:cargo build", "cargo clean"], 0).searchable());
        assert!(habit(&["cargo build", "cargo test"], 0).searchable());
    }

    /// A store of Bash calls `(session, minute, command, duration ms)`, each at its minute
    /// after the epoch.
    fn dated(calls: &[(&str, i64, &str, Option<u64>)]) -> (tempfile::TempDir, Connection) {
        use crate::action::{Action, ActionResult, Source};
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("state.db");
        drop(crate::store::Store::open(&path).expect("the store opens"));
        let mut conn = crate::store::open_for_update(&path).expect("a connection");
        let actions = calls
            .iter()
            .enumerate()
            .map(|(i, (session, minute, command, ms))| Action {
                session: (*session).to_owned(),
                seq: i as u64 + 1,
                ts: Some(jiff::Timestamp::from_second(minute * 60).expect("a time")),
                source: Source::Codex,
                cwd: None,
                tool: "Bash".into(),
                input: serde_json::json!({ "command": command }),
                call_id: None,
                parent_session: None,
                result: Some(ActionResult {
                    ok: true,
                    exit_code: Some(0),
                    output: String::new(),
                    duration_ms: *ms,
                }),
            })
            .collect();
        crate::ingest::store::store_actions(&mut conn, "/logs/s.jsonl", actions).expect("stored");
        (dir, conn)
    }

    #[test]
    fn the_runs_after_the_approval_are_found_with_their_calls_and_time() {
        let (_dir, conn) = dated(&[
            // Before the approval (minute 10): not counted.
            ("s1", 1, "cargo build -p core", Some(1000)),
            ("s1", 2, "cargo test -p core", Some(2000)),
            // After it: twice in one session, a stray call between the steps of the first.
            ("s1", 11, "cargo build -p core", Some(1000)),
            ("s1", 12, "git status", Some(10)),
            ("s1", 13, "cargo test -p core", Some(2000)),
            ("s1", 20, "cargo build -p cli", Some(500)),
            ("s1", 21, "cargo test -p cli", None),
            // Two stray calls: past the gap limit, no run of the habit.
            ("s2", 30, "cargo build -p core", Some(1000)),
            ("s2", 31, "git status", Some(10)),
            ("s2", 32, "git diff", Some(10)),
            ("s2", 33, "cargo test -p core", Some(2000)),
        ]);
        let runs = runs_by_hand(
            &conn,
            &UserShell::default(),
            &[habit(
                &["cargo build -p <arg>", "cargo test -p <arg>"],
                10 * 60_000,
            )],
            &MineOptions::default(),
        )
        .expect("runs");
        let seen: Vec<(&str, &str, u32, i64, Option<u64>)> = runs
            .iter()
            .map(|r| {
                (
                    r.session.as_str(),
                    r.agent.as_str(),
                    r.calls,
                    r.started_ms / 60_000,
                    r.took_ms,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("s1", "codex", 2, 11, Some(2 * 60_000 + 2000)),
                ("s1", "codex", 2, 20, Some(60_000)),
            ]
        );
    }

    #[test]
    fn undated_actions_are_never_counted_as_after_an_approval() {
        // The test store's actions carry no timestamps.
        let (_dir, conn) = store(&[
            ran("s1", "cargo build --release"),
            ran("s1", "cargo test --release"),
        ]);
        let runs = runs_by_hand(
            &conn,
            &UserShell::default(),
            &[habit(&["cargo build <arg>", "cargo test <arg>"], 0)],
            &MineOptions::default(),
        )
        .expect("runs");
        assert_eq!(runs, []);
    }
}
