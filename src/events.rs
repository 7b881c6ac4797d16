//! Pipeline events: what happened, published by every stage, streamed to `events.subscribe`.
//!
//! The bus is a bounded broadcast channel: a subscriber that falls behind loses the oldest events
//! and is told how many, so a stuck client can never make the daemon's memory grow.

use serde::Serialize;
use tokio::sync::broadcast;

/// How many events a slow subscriber may fall behind before it starts losing them.
pub const EVENT_BUFFER: usize = 1024;

/// What happened: one variant per kind, its details typed. [`Event::kind`] names each kind and
/// [`Event::data`] gives its details as they go on the wire, both here and nowhere else.
///
/// The events sit below every stage, so a stage's whole report (mining, health, sync) travels as
/// the JSON its stage made of it; everything else is typed here.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `daemon.started`: the daemon is ready.
    DaemonStarted {
        /// Its pid.
        pid: u32,
        /// The toolsmith version.
        version: String,
    },
    /// `daemon.stopping`: the daemon is shutting down.
    DaemonStopping {
        /// Why (`SIGTERM`, `SIGINT`, a shutdown request).
        reason: String,
    },
    /// `config.reloaded`: a new configuration is in force.
    ConfigReloaded {
        /// The file it was read from, if any.
        config_file: Option<String>,
        /// Settings that changed but take effect only after a restart.
        restart_required: Vec<String>,
    },
    /// `config.reload_failed`: the new configuration was refused; the previous one stays.
    ConfigReloadFailed {
        /// Why.
        error: String,
    },
    /// `ingest.restarted`: log sources or ingest settings changed and ingest started again.
    IngestRestarted,
    /// `ingest.actions`: a batch of actions was stored.
    IngestActions {
        /// New actions stored.
        new: u64,
        /// Results joined to calls stored earlier.
        results: u64,
    },
    /// `pattern.found`: mining found a pattern for the first time.
    PatternFound {
        /// The pattern's id.
        id: String,
        /// Its kind (`sequence`, `recovery`, `slow`).
        kind: String,
        /// Sessions it was seen in.
        support: u32,
        /// Its score, 0–100.
        score: f64,
    },
    /// `mine.finished`: a mining run ended.
    MineFinished {
        /// The run's summary, as `toolsmith mine --json` prints it.
        summary: serde_json::Value,
    },
    /// `generate.finished`: a generation run ended.
    GenerateFinished {
        /// Candidates worked on.
        candidates: usize,
        /// Patterns or requests skipped.
        skipped: usize,
    },
    /// `health.finished`: a health check ended.
    HealthFinished {
        /// Its report, as `toolsmith health --check --json` prints it.
        report: serde_json::Value,
    },
    /// `registry.synced`: the registry was synced with its remote.
    RegistrySynced {
        /// The sync's report.
        report: serde_json::Value,
    },
    /// `registry.changed`: `main` moved.
    RegistryChanged {
        /// The new `main` commit.
        main: String,
        /// Tools whose tree changed.
        changed: Vec<String>,
        /// Tools removed.
        removed: Vec<String>,
        /// Tools invalid on `main`.
        invalid: Vec<String>,
    },
    /// `tool.approved`: a tool version landed on `main`.
    ToolApproved(Approval),
    /// `tool.invalid`: a tool on `main` is not valid.
    ToolInvalid {
        /// The tool.
        tool: String,
        /// What is wrong.
        problem: String,
    },
    /// `tool.rolled_back`: a regressed version was rolled back.
    ToolRolledBack {
        /// The tool.
        name: String,
        /// The version rolled back from.
        from: String,
        /// The version now active, if any.
        to: Option<String>,
        /// The commit on `main`.
        commit: String,
        /// Why.
        reason: String,
    },
    /// `tool.healing`: a repair of a failing or degraded version started.
    ToolHealing {
        /// The tool.
        name: String,
        /// Its version.
        version: String,
        /// Its health score.
        score: f64,
        /// Its health status.
        status: String,
    },
    /// `tool.deprecation_proposed`: an unused tool may be deprecated.
    ToolDeprecationProposed {
        /// The tool.
        name: String,
        /// Its version.
        version: String,
        /// Why.
        reason: String,
        /// The command that does it.
        command: String,
    },
    /// `tool.merge_proposed`: a tool does what another does.
    ToolMergeProposed {
        /// The tool.
        name: String,
        /// The tool to keep.
        into: String,
        /// The command that does it.
        command: String,
    },
    /// `tool.requires_attention`: a person must look at a tool version.
    ToolRequiresAttention {
        /// The tool.
        name: String,
        /// Its version.
        version: String,
        /// Why.
        reason: String,
    },
    /// `candidate.<state>`: a candidate moved to a state.
    CandidateMoved(CandidateInfo),
    /// `candidate.proposed`: a candidate was made, from `origin`.
    CandidateProposed {
        /// The candidate.
        candidate: CandidateInfo,
        /// Where it came from (a pattern, a request, an adopted tool).
        origin: String,
    },
    /// `candidate.proposed`, once more: its version was put up for review on a branch.
    CandidateOnBranch {
        /// The candidate.
        id: String,
        /// The tool.
        tool: String,
        /// The version proposed.
        version: String,
        /// The review branch.
        branch: String,
        /// The proposal's commit.
        commit: String,
    },
    /// `candidate.attempt`: a generation attempt was validated.
    CandidateAttempt {
        /// The candidate.
        id: String,
        /// The tool.
        tool: String,
        /// The attempt's number.
        attempt: u32,
        /// The generator that made it.
        generator: String,
        /// Whether validation passed.
        passed: bool,
        /// What validation said.
        summary: String,
    },
    /// `events.lagged`: a subscriber fell behind and lost events (sent to it alone).
    EventsLagged {
        /// How many it lost.
        missed: u64,
    },
}

/// A tool version that landed on `main` (the registry's `Landed`, as events carry it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Approval {
    /// The tool.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The candidate.
    pub candidate: Option<String>,
    /// The commit on `main`.
    pub commit: String,
    /// The tag made.
    pub tag: String,
    /// Who approved.
    pub approved_by: String,
    /// `toolsmith` or `git` (merged by hand).
    pub via: String,
}

/// A candidate's state, as events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateState {
    /// Waiting to be generated.
    Proposed,
    /// A request's spec waits for a person to accept it.
    SpecAwaitingReview,
    /// A generator is writing it.
    Generating,
    /// Its checks and tests are running.
    Validating,
    /// Proposed as a commit on a review branch.
    AwaitingReview,
    /// Approved and registered.
    Approved,
    /// Rejected at review.
    Rejected,
    /// Given up.
    Failed,
}

impl CandidateState {
    /// The state's name (as the store and the CLI write it).
    pub fn as_str(self) -> &'static str {
        match self {
            CandidateState::Proposed => "proposed",
            CandidateState::SpecAwaitingReview => "spec-awaiting-review",
            CandidateState::Generating => "generating",
            CandidateState::Validating => "validating",
            CandidateState::AwaitingReview => "awaiting-review",
            CandidateState::Approved => "approved",
            CandidateState::Rejected => "rejected",
            CandidateState::Failed => "failed",
        }
    }
}

/// A candidate, as events describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateInfo {
    /// Its id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The version it targets, once known.
    pub version: Option<String>,
    /// Where it stands.
    pub state: CandidateState,
    /// Why it stands there.
    pub reason: Option<String>,
    /// Attempts made.
    pub attempts: u32,
}

impl CandidateInfo {
    fn data(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut map = serde_json::Map::new();
        map.insert("id".into(), self.id.clone().into());
        map.insert("tool".into(), self.tool.clone().into());
        map.insert("version".into(), self.version.clone().into());
        map.insert("state".into(), self.state.as_str().into());
        map.insert("reason".into(), self.reason.clone().into());
        map.insert("attempts".into(), self.attempts.into());
        map
    }
}

impl Event {
    /// The event's dotted kind, e.g. `config.reloaded`, `candidate.awaiting-review`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::DaemonStarted { .. } => "daemon.started",
            Event::DaemonStopping { .. } => "daemon.stopping",
            Event::ConfigReloaded { .. } => "config.reloaded",
            Event::ConfigReloadFailed { .. } => "config.reload_failed",
            Event::IngestRestarted => "ingest.restarted",
            Event::IngestActions { .. } => "ingest.actions",
            Event::PatternFound { .. } => "pattern.found",
            Event::MineFinished { .. } => "mine.finished",
            Event::GenerateFinished { .. } => "generate.finished",
            Event::HealthFinished { .. } => "health.finished",
            Event::RegistrySynced { .. } => "registry.synced",
            Event::RegistryChanged { .. } => "registry.changed",
            Event::ToolApproved(_) => "tool.approved",
            Event::ToolInvalid { .. } => "tool.invalid",
            Event::ToolRolledBack { .. } => "tool.rolled_back",
            Event::ToolHealing { .. } => "tool.healing",
            Event::ToolDeprecationProposed { .. } => "tool.deprecation_proposed",
            Event::ToolMergeProposed { .. } => "tool.merge_proposed",
            Event::ToolRequiresAttention { .. } => "tool.requires_attention",
            Event::CandidateMoved(c) => match c.state {
                CandidateState::Proposed => "candidate.proposed",
                CandidateState::SpecAwaitingReview => "candidate.spec-awaiting-review",
                CandidateState::Generating => "candidate.generating",
                CandidateState::Validating => "candidate.validating",
                CandidateState::AwaitingReview => "candidate.awaiting-review",
                CandidateState::Approved => "candidate.approved",
                CandidateState::Rejected => "candidate.rejected",
                CandidateState::Failed => "candidate.failed",
            },
            Event::CandidateProposed { .. } | Event::CandidateOnBranch { .. } => {
                "candidate.proposed"
            }
            Event::CandidateAttempt { .. } => "candidate.attempt",
            Event::EventsLagged { .. } => "events.lagged",
        }
    }

    /// The event's details, as they go on the wire (an object; keys in serde_json's order).
    pub fn data(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Event::DaemonStarted { pid, version } => json!({"pid": pid, "version": version}),
            Event::DaemonStopping { reason } => json!({"reason": reason}),
            Event::ConfigReloaded {
                config_file,
                restart_required,
            } => json!({
                "reloaded": true,
                "config_file": config_file,
                "restart_required": restart_required,
            }),
            Event::ConfigReloadFailed { error } => json!({"error": error}),
            Event::IngestRestarted => json!({}),
            Event::IngestActions { new, results } => json!({"new": new, "results": results}),
            Event::PatternFound {
                id,
                kind,
                support,
                score,
            } => json!({"id": id, "kind": kind, "support": support, "score": score}),
            Event::MineFinished { summary } => summary.clone(),
            Event::GenerateFinished {
                candidates,
                skipped,
            } => json!({"candidates": candidates, "skipped": skipped}),
            Event::HealthFinished { report } | Event::RegistrySynced { report } => report.clone(),
            Event::RegistryChanged {
                main,
                changed,
                removed,
                invalid,
            } => json!({"main": main, "changed": changed, "removed": removed, "invalid": invalid}),
            Event::ToolApproved(approval) => json!(approval),
            Event::ToolInvalid { tool, problem } => json!({"tool": tool, "problem": problem}),
            Event::ToolRolledBack {
                name,
                from,
                to,
                commit,
                reason,
            } => json!({"name": name, "from": from, "to": to, "commit": commit,
                        "reason": reason}),
            Event::ToolHealing {
                name,
                version,
                score,
                status,
            } => json!({"name": name, "version": version, "score": score, "status": status}),
            Event::ToolDeprecationProposed {
                name,
                version,
                reason,
                command,
            } => json!({"name": name, "version": version, "reason": reason, "command": command}),
            Event::ToolMergeProposed {
                name,
                into,
                command,
            } => json!({"name": name, "into": into, "command": command}),
            Event::ToolRequiresAttention {
                name,
                version,
                reason,
            } => json!({"name": name, "version": version, "reason": reason}),
            Event::CandidateMoved(c) => serde_json::Value::Object(c.data()),
            Event::CandidateProposed { candidate, origin } => {
                let mut map = candidate.data();
                map.insert("origin".into(), origin.clone().into());
                serde_json::Value::Object(map)
            }
            Event::CandidateOnBranch {
                id,
                tool,
                version,
                branch,
                commit,
            } => json!({"id": id, "tool": tool, "version": version, "branch": branch,
                        "commit": commit}),
            Event::CandidateAttempt {
                id,
                tool,
                attempt,
                generator,
                passed,
                summary,
            } => json!({"id": id, "tool": tool, "attempt": attempt, "generator": generator,
                        "passed": passed, "summary": summary}),
            Event::EventsLagged { missed } => json!({"missed": missed}),
        }
    }
}

/// One published event: its number, time and what happened. On the wire (subscriptions,
/// `toolsmith watch`, `on_event` commands) it is `{"seq", "ts", "kind", "data"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// Increasing number within one daemon run.
    pub seq: u64,
    /// RFC 3339 time, UTC.
    pub ts: String,
    /// What happened.
    pub event: Event,
}

impl Published {
    /// The event's dotted kind.
    pub fn kind(&self) -> &'static str {
        self.event.kind()
    }

    /// The event's details.
    pub fn data(&self) -> serde_json::Value {
        self.event.data()
    }
}

impl Serialize for Published {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Event", 4)?;
        out.serialize_field("seq", &self.seq)?;
        out.serialize_field("ts", &self.ts)?;
        out.serialize_field("kind", self.kind())?;
        out.serialize_field("data", &self.data())?;
        out.end()
    }
}

/// The publishing side of the event stream. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<Published>,
    next_seq: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    /// A bus with no subscribers yet.
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(EVENT_BUFFER);
        EventBus {
            sender,
            next_seq: Default::default(),
        }
    }

    /// Publishes an event to every current subscriber; without subscribers it is dropped.
    pub fn publish(&self, event: Event) -> Published {
        let seq = self
            .next_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let published = Published {
            seq,
            ts: jiff::Timestamp::now().to_string(),
            event,
        };
        // An error only means nobody listens, which is normal.
        let _ = self.sender.send(published.clone());
        published
    }

    /// A new subscription receiving events published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Published> {
        self.sender.subscribe()
    }

    /// How many events were published so far.
    pub fn published(&self) -> u64 {
        self.next_seq.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many receivers listen: the daemon's own stages and each subscribed connection.
    pub fn receivers(&self) -> usize {
        self.sender.receiver_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_receive_in_order_and_lag_is_bounded() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        bus.publish(Event::IngestActions { new: 1, results: 0 });
        bus.publish(Event::IngestRestarted);
        let first = rx.recv().await.expect("first");
        assert_eq!((first.seq, first.kind()), (1, "ingest.actions"));
        assert_eq!(rx.recv().await.expect("second").kind(), "ingest.restarted");
        for _ in 0..EVENT_BUFFER + 10 {
            bus.publish(Event::IngestRestarted);
        }
        match rx.recv().await {
            Err(broadcast::error::RecvError::Lagged(n)) => assert_eq!(n, 10),
            other => panic!("expected lag, got {other:?}"),
        }
        assert_eq!(bus.published(), EVENT_BUFFER as u64 + 12);
    }

    fn candidate(state: CandidateState) -> CandidateInfo {
        CandidateInfo {
            id: "c-1".into(),
            tool: "lint-fix".into(),
            version: None,
            state,
            reason: Some("why".into()),
            attempts: 2,
        }
    }

    #[test]
    fn events_go_on_the_wire_as_seq_ts_kind_and_data() {
        let published = Published {
            seq: 7,
            ts: "2026-03-01T10:00:00Z".into(),
            event: Event::CandidateProposed {
                candidate: candidate(CandidateState::Proposed),
                origin: "pattern".into(),
            },
        };
        assert_eq!(
            serde_json::to_string(&published).expect("json"),
            r#"{"seq":7,"ts":"2026-03-01T10:00:00Z","kind":"candidate.proposed","data":{"attempts":2,"id":"c-1","origin":"pattern","reason":"why","state":"proposed","tool":"lint-fix","version":null}}"#
        );
        let approved = Event::ToolApproved(Approval {
            name: "t".into(),
            version: "1.0.0".into(),
            candidate: None,
            commit: "abc".into(),
            tag: "t/v1.0.0".into(),
            approved_by: "me".into(),
            via: "git".into(),
        });
        assert_eq!(
            approved.data().to_string(),
            r#"{"approved_by":"me","candidate":null,"commit":"abc","name":"t","tag":"t/v1.0.0","version":"1.0.0","via":"git"}"#
        );
    }

    #[test]
    fn a_candidates_kind_follows_its_state() {
        let kinds: Vec<&str> = [
            CandidateState::Proposed,
            CandidateState::SpecAwaitingReview,
            CandidateState::Generating,
            CandidateState::Validating,
            CandidateState::AwaitingReview,
            CandidateState::Approved,
            CandidateState::Rejected,
            CandidateState::Failed,
        ]
        .into_iter()
        .map(|s| Event::CandidateMoved(candidate(s)).kind())
        .collect();
        assert_eq!(
            kinds,
            [
                "candidate.proposed",
                "candidate.spec-awaiting-review",
                "candidate.generating",
                "candidate.validating",
                "candidate.awaiting-review",
                "candidate.approved",
                "candidate.rejected",
                "candidate.failed"
            ]
        );
        for state in [CandidateState::Generating, CandidateState::AwaitingReview] {
            let event = Event::CandidateMoved(candidate(state));
            assert_eq!(
                event.kind(),
                format!(
                    "candidate.{}",
                    event.data()["state"].as_str().expect("state")
                )
            );
        }
        assert_eq!(
            Event::EventsLagged { missed: 3 }.data(),
            serde_json::json!({"missed": 3})
        );
    }
}
