//! The daemon's scheduled jobs: mining, on its crontab schedule, after enough new actions, and
//! on request (`mine.run`); and generation, after each successful mining run (for the new
//! patterns above `generate.min_score`) and on request (`generate.run`).
//!
//! One task owns the [`Timetable`] and sleeps on a [`WallAlarm`] set to the next due job, on the
//! event bus (to count new actions) and on requests: no polling. A job runs on a blocking thread
//! through its own read-only connection, so ingest keeps writing meanwhile; only its result goes
//! through the store's writer. A job never overlaps itself: a demand while it runs makes it run
//! once more afterwards, and every request waiting for it gets the result of a run that started
//! after the request came.
//!
//! Generation runs beside mining, one run at a time, in request order; passes after mining
//! that are already queued are not queued twice. At start, candidates a stopped daemon left
//! `generating` or `validating` are put back to `proposed` and a pass resumes them. On shutdown
//! a running pass stops at its next step (a model call is abandoned), leaving its candidate to
//! be resumed by the next start.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::config::Config;
use crate::events::EventBus;
use crate::generate::candidates::{self, State};
use crate::generate::pipeline::{self, Job};
use crate::mine::miner::{self, MineOptions};
use crate::schedule::{Outcome, Schedule, Timetable, WallAlarm, local_time_zone};
use crate::store::{self, Store};

/// The name of the mining job.
pub const MINE: &str = "mine";

/// The name of the generation job.
pub const GENERATE: &str = "generate";

/// A request to run a job now, answered when a run that started after it ends.
pub(super) struct JobRequest {
    /// The job.
    pub job: &'static str,
    /// For [`GENERATE`]: what to generate.
    pub generate: Option<Job>,
    /// Where the run's summary, or why it failed, goes.
    pub reply: oneshot::Sender<Result<Value, String>>,
}

/// Where a run's summary, or why it failed, goes.
type Reply = oneshot::Sender<Result<Value, String>>;

/// Generation runs waiting, in order, with whoever waits for each.
type GenerateQueue = VecDeque<(Job, Option<Reply>)>;

/// The generation run under way, with whoever waits for it.
type Running = (
    tokio::task::JoinHandle<Result<Value, String>>,
    Option<Reply>,
);

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
    let mut generate_queue: GenerateQueue = VecDeque::new();
    let mut generating: Option<Running> = None;
    // Work a stopped daemon left half-done is resumed, never left stuck.
    let proposed = store
        .call(|conn| {
            let recover = || -> Result<usize, candidates::CandidateError> {
                let resumed = candidates::recover_interrupted(conn)?;
                if !resumed.is_empty() {
                    tracing::info!(
                        candidates = ?resumed,
                        "interrupted candidates put back to proposed"
                    );
                }
                Ok(candidates::in_state(conn, State::Proposed)?.len())
            };
            Ok(recover().map_err(|e| e.to_string()))
        })
        .await;
    match proposed {
        Ok(Ok(0)) => {}
        Ok(Ok(_)) => generate_queue.push_back((Job::Pending, None)),
        Ok(Err(e)) => tracing::error!("cannot resume interrupted candidates: {e}"),
        Err(e) => tracing::error!("cannot resume interrupted candidates: {e}"),
    }

    loop {
        if generating.is_none()
            && let Some((job, reply)) = generate_queue.pop_front()
        {
            let task = tokio::spawn(generate_once(
                store.clone(),
                events.clone(),
                Arc::clone(&config),
                job,
                shutdown.clone(),
            ));
            generating = Some((task, reply));
        }
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
                if request.job == GENERATE {
                    let job = request.generate.unwrap_or(Job::Pending);
                    generate_queue.push_back((job, Some(request.reply)));
                    false
                } else if request.job != MINE {
                    let _ = request.reply.send(Err(format!("no job `{}`", request.job)));
                    continue;
                } else {
                if running.is_some() {
                    after_waiting.push(request.reply);
                } else {
                    waiting.push(request.reply);
                }
                timetable.demand(MINE, jiff::Timestamp::now())
                }
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
                if result.is_ok()
                    && !generate_queue.iter().any(|(job, reply)| *job == Job::Pending && reply.is_none())
                {
                    generate_queue.push_back((Job::Pending, None));
                }
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
            joined = async {
                match generating.as_mut() {
                    Some((handle, _)) => handle.await,
                    None => std::future::pending().await,
                }
            } => {
                let result = joined
                    .unwrap_or_else(|e| Err(format!("the generation task failed: {e}")));
                if let Some((_, Some(reply))) = generating.take() {
                    let _ = reply.send(result);
                } else if let Err(e) = result {
                    tracing::error!("generation failed: {e}");
                }
                false
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
    if let Some((handle, reply)) = generating {
        // It saw the shutdown too and stops at its next step.
        let result = handle
            .await
            .unwrap_or_else(|e| Err(format!("the generation task failed: {e}")));
        if let Some(reply) = reply {
            let _ = reply.send(result);
        }
    }
    for (_, reply) in generate_queue {
        if let Some(reply) = reply {
            let _ = reply.send(Err("the daemon is stopping: no generation now".into()));
        }
    }
}

/// One generation run with the configuration in force; its report as JSON.
async fn generate_once(
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    job: Job,
    shutdown: watch::Receiver<bool>,
) -> Result<Value, String> {
    let generator = pipeline::configured(&config, store)
        .map_err(|e| e.to_string())?
        .with_events(events.clone())
        .with_cancel(shutdown);
    let report = generator.run(job).await.map_err(|e| e.to_string())?;
    let summary = json!(report);
    events.publish(
        "generate.finished",
        json!({"candidates": report.candidates.len(), "skipped": report.skipped.len()}),
    );
    tracing::info!(
        candidates = report.candidates.len(),
        skipped = report.skipped.len(),
        "generation done"
    );
    Ok(summary)
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
