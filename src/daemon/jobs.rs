//! The daemon's scheduled jobs: mining, on its crontab schedule, after enough new actions, and
//! on request (`mine.run`).
//!
//! One task owns the [`Timetable`] and sleeps on a [`WallAlarm`] set to the next due job, on the
//! event bus (to count new actions) and on requests: no polling. A job runs on a blocking thread
//! through its own read-only connection, so ingest keeps writing meanwhile; only its result goes
//! through the store's writer. A job never overlaps itself: a demand while it runs makes it run
//! once more afterwards, and every request waiting for it gets the result of a run that started
//! after the request came.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::config::Config;
use crate::events::EventBus;
use crate::mine::miner::{self, MineOptions};
use crate::schedule::{Outcome, Schedule, Timetable, WallAlarm, local_time_zone};
use crate::store::{self, Store};

/// The name of the mining job.
pub const MINE: &str = "mine";

/// A request to run a job now, answered when a run that started after it ends.
pub(super) struct JobRequest {
    /// The job.
    pub job: &'static str,
    /// Where the run's summary, or why it failed, goes.
    pub reply: oneshot::Sender<Result<Value, String>>,
}

/// Runs the jobs until `shutdown`.
pub(super) async fn run(
    store: Store,
    events: EventBus,
    mut configs: watch::Receiver<Arc<Config>>,
    mut requests: mpsc::Receiver<JobRequest>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut bus = events.subscribe();
    let mut alarm = match WallAlarm::new() {
        Ok(alarm) => Some(alarm),
        Err(err) => {
            tracing::error!(
                "no wall-clock timer ({err}): mining runs on demand and on new actions only"
            );
            None
        }
    };
    let mut config = Arc::clone(&configs.borrow_and_update());
    let last_started = store
        .call(|conn| {
            Ok(
                conn.query_row("SELECT MAX(started_at) FROM mine_runs", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })?,
            )
        })
        .await
        .ok()
        .flatten()
        .and_then(|s| jiff::Timestamp::from_second(s).ok());
    let mut timetable = Timetable::new(local_time_zone());
    let add_job = |timetable: &mut Timetable, config: &Config, last: Option<jiff::Timestamp>| {
        match Schedule::parse(&config.mine.schedule.value) {
            Ok(schedule) => timetable.add(MINE, schedule, last, jiff::Timestamp::now()),
            // The configuration was validated; this only guards a change in the parser.
            Err(err) => tracing::error!("mine.schedule not usable: {err}"),
        }
    };
    add_job(&mut timetable, &config, last_started);
    let mut new_actions: u64 = 0;
    let mut waiting: Vec<oneshot::Sender<Result<Value, String>>> = Vec::new();
    let mut after_waiting: Vec<oneshot::Sender<Result<Value, String>>> = Vec::new();
    let mut running: Option<tokio::task::JoinHandle<Result<Value, String>>> = None;

    loop {
        let next_wake = timetable.next_wake();
        let sleep = async {
            match (alarm.as_mut(), next_wake) {
                (Some(alarm), Some(at)) => {
                    let _ = alarm.sleep_until(at).await;
                }
                _ => std::future::pending::<()>().await,
            }
        };
        let start = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            () = sleep => !timetable.take_due(jiff::Timestamp::now()).is_empty(),
            Some(request) = requests.recv() => {
                if request.job != MINE {
                    let _ = request.reply.send(Err(format!("no job `{}`", request.job)));
                    continue;
                }
                if running.is_some() {
                    after_waiting.push(request.reply);
                } else {
                    waiting.push(request.reply);
                }
                timetable.demand(MINE, jiff::Timestamp::now())
            }
            event = bus.recv() => match event {
                Ok(event) if event.kind == "ingest.actions" => {
                    new_actions += event.data["new"].as_u64().unwrap_or(0);
                    new_actions >= u64::from(config.mine.after_new_actions.value)
                        && timetable.demand(MINE, jiff::Timestamp::now())
                }
                Ok(_) => false,
                Err(broadcast::error::RecvError::Lagged(_)) => false,
                Err(broadcast::error::RecvError::Closed) => break,
            },
            changed = configs.changed() => {
                if changed.is_err() {
                    break;
                }
                let new = Arc::clone(&configs.borrow_and_update());
                if new.mine.schedule != config.mine.schedule {
                    let last = timetable.jobs().iter().find(|j| j.name == MINE).and_then(|j| j.last_started);
                    add_job(&mut timetable, &new, last);
                }
                config = new;
                false
            }
            joined = async {
                match running.as_mut() {
                    Some(handle) => handle.await,
                    None => std::future::pending().await,
                }
            } => {
                running = None;
                let result = joined.unwrap_or_else(|e| Err(format!("the mining task failed: {e}")));
                let outcome = match &result {
                    Ok(summary) => Outcome {
                        ok: true,
                        summary: format!("{} patterns", summary["patterns"].as_u64().unwrap_or(0)),
                    },
                    Err(err) => Outcome { ok: false, summary: err.clone() },
                };
                for reply in waiting.drain(..) {
                    let _ = reply.send(result.clone());
                }
                waiting.append(&mut after_waiting);
                timetable.finish(MINE, jiff::Timestamp::now(), outcome)
            }
        };
        if start && running.is_none() {
            new_actions = 0;
            running = Some(tokio::spawn(mine_once(
                store.clone(),
                events.clone(),
                MineOptions::from_settings(&config.mine),
            )));
        }
    }
    if let Some(handle) = running {
        // A run in progress finishes: its result is one transaction, never half-written.
        let _ = handle.await;
    }
}

/// One mining run: read through a read-only connection, store through the writer, announce.
async fn mine_once(store: Store, events: EventBus, options: MineOptions) -> Result<Value, String> {
    let path = store.path().to_owned();
    let report = tokio::task::spawn_blocking(move || {
        let conn = store::open_read_only(&path).map_err(|e| e.to_string())?;
        miner::mine(&conn, &options).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("the mining task failed: {e}"))??;
    let report = Arc::new(report);
    let stored = Arc::clone(&report);
    let fresh = store
        .call(move |conn| miner::store_patterns(conn, &stored))
        .await
        .map_err(|e| e.to_string())?;
    for id in &fresh {
        if let Some(p) = report.patterns.iter().find(|p| &p.id == id) {
            events.publish(
                "pattern.found",
                json!({"id": p.id, "kind": p.kind, "support": p.support, "score": p.score}),
            );
        }
    }
    let summary = report.summary();
    tracing::info!(
        patterns = report.patterns.len(),
        new = fresh.len(),
        ms = report.duration_ms,
        "mining done"
    );
    drop(report);
    release_freed_memory();
    events.publish("mine.finished", summary.clone());
    Ok(summary)
}

/// Gives the memory a mining run freed back to the system: glibc keeps freed heap in its arenas,
/// which would leave an idle daemon holding a run's peak.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and trims the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}
