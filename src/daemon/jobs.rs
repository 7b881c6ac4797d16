//! The daemon's scheduled jobs: mining, on its crontab schedule, after enough new actions, and
//! on request (`mine.run`); generation, after each successful mining run (for the new
//! patterns above `generate.min_score`) and on request (`generate.run`); the health check
//! (`[health] schedule`, and `health.run`); and the registry's sync with its remote
//! (`[sync] schedule`, only when a remote is set). Every run of a scheduled job is recorded
//! (`job_runs`) for `toolsmith schedule`.
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
use crate::generate::pipeline::Job;
use crate::mine::miner::{self, MineOptions};
use crate::schedule::{self, Outcome, Schedule, Timetable, Trigger, WallAlarm, local_time_zone};
use crate::store::{self, Store};

/// The name of the mining job.
pub const MINE: &str = "mine";

/// The name of the generation job.
pub const GENERATE: &str = "generate";

/// The name of the health-check job.
pub const HEALTH: &str = "health";

/// The name of the registry-sync job.
pub const SYNC: &str = "sync";

/// The scheduled jobs other than mining: they run beside it, each never beside itself.
const OTHERS: [&str; 2] = [HEALTH, SYNC];

/// A job's schedule in the configuration.
fn schedule_of<'a>(config: &'a Config, job: &str) -> &'a crate::config::Setting<String> {
    config
        .job_schedules()
        .into_iter()
        .find(|(name, _)| *name == job)
        .map_or(&config.mine.schedule, |(_, schedule)| schedule)
}

/// Records the start of a run in `job_runs`; a failure to record never stops the job.
async fn record_start(store: &Store, job: &'static str, trigger: Trigger) -> Option<i64> {
    let trigger = match trigger {
        Trigger::Schedule => "schedule",
        Trigger::Demand => "demand",
        Trigger::Pending => "pending",
    };
    store
        .call(move |conn| schedule::record_start(conn, job, trigger, jiff::Timestamp::now()))
        .await
        .inspect_err(|e| tracing::warn!("the start of a {job} run was not recorded: {e}"))
        .ok()
}

async fn record_end(store: &Store, id: Option<i64>, outcome: Outcome) {
    if let Some(id) = id {
        let _ = store
            .call(move |conn| schedule::record_end(conn, id, jiff::Timestamp::now(), &outcome))
            .await
            .inspect_err(|e| tracing::warn!("the end of a job run was not recorded: {e}"));
    }
}

/// How a run ended, for `job_runs`: its summary line, or why it failed.
fn outcome_of(result: &Result<Value, String>, summary: fn(&Value) -> String) -> Outcome {
    match result {
        Ok(value) => Outcome {
            ok: true,
            summary: summary(value),
        },
        Err(err) => Outcome {
            ok: false,
            summary: err.clone(),
        },
    }
}

/// A mining run's summary line.
fn mine_summary(summary: &Value) -> String {
    format!("{} patterns", summary["patterns"].as_u64().unwrap_or(0))
}

/// The summary line a health check or a sync reports.
fn other_summary(summary: &Value) -> String {
    summary["summary"].as_str().unwrap_or("done").to_owned()
}

/// A finished run of one of [`OTHERS`]: the job, its `job_runs` id, its result.
type OtherDone = (&'static str, Option<i64>, Result<Value, String>);

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
    let add_job = |timetable: &mut Timetable,
                   job: &'static str,
                   config: &Config,
                   last: Option<jiff::Timestamp>| {
        match Schedule::parse(&schedule_of(config, job).value) {
            Ok(schedule) => timetable.add(job, schedule, last, jiff::Timestamp::now()),
            // The configuration was validated; this only guards a change in the parser.
            Err(err) => tracing::error!("{job}.schedule not usable: {err}"),
        }
    };
    add_job(&mut timetable, MINE, &config, last_started);
    for job in OTHERS {
        let last = store
            .call(move |conn| {
                Ok(conn.query_row(
                    "SELECT max(started_ms) FROM job_runs WHERE job = ?1",
                    [job],
                    |r| r.get::<_, Option<i64>>(0),
                )?)
            })
            .await
            .ok()
            .flatten()
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
        add_job(&mut timetable, job, &config, last);
    }
    let mut others: tokio::task::JoinSet<OtherDone> = tokio::task::JoinSet::new();
    let mut other_waiting: std::collections::HashMap<&'static str, Vec<Reply>> = Default::default();
    let mut other_after: std::collections::HashMap<&'static str, Vec<Reply>> = Default::default();
    let mut mine_run: Option<i64> = None;
    // A copy for the jobs started inside the loop, which waits on `shutdown` itself.
    let stop_signal = shutdown.clone();
    let mut mine_trigger = Trigger::Schedule;
    let mut new_actions: u64 = 0;
    let mut waiting: Vec<oneshot::Sender<Result<Value, String>>> = Vec::new();
    let mut after_waiting: Vec<oneshot::Sender<Result<Value, String>>> = Vec::new();
    let mut running: Option<tokio::task::JoinHandle<Result<Value, String>>> = None;
    let mut generate_queue: GenerateQueue = VecDeque::new();
    let mut generating: Option<Running> = None;
    // Work a stopped daemon (or a killed one-shot command) left half-done is resumed, never
    // left stuck.
    let state_dir = config.paths.state.value.clone();
    let proposed = store
        .call(move |conn| {
            let recover = || -> Result<usize, candidates::CandidateError> {
                let resumed = candidates::recover_interrupted(conn, &state_dir)?;
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
            // The guard `wait_for` returns is not `Send`: dropped before any branch awaits.
            () = async { let _ = shutdown.wait_for(|stop| *stop).await; } => break,
            () = sleep => {
                let due = timetable.take_due(jiff::Timestamp::now());
                for job in OTHERS.iter().filter(|j| due.iter().any(|d| d == *j)) {
                    start_other(&mut others, job, Trigger::Schedule, &store, &events, &config, &stop_signal).await;
                }
                mine_trigger = Trigger::Schedule;
                due.iter().any(|d| d == MINE)
            }
            Some(request) = requests.recv() => {
                if request.job == GENERATE {
                    let job = request.generate.unwrap_or(Job::Pending);
                    generate_queue.push_back((job, Some(request.reply)));
                    false
                } else if let Some(job) = OTHERS.iter().find(|j| **j == request.job) {
                    if timetable.demand(job, jiff::Timestamp::now()) {
                        other_waiting.entry(job).or_default().push(request.reply);
                        start_other(&mut others, job, Trigger::Demand, &store, &events, &config, &stop_signal).await;
                    } else {
                        other_after.entry(job).or_default().push(request.reply);
                    }
                    false
                } else if request.job != MINE {
                    let _ = request.reply.send(Err(format!("no job `{}`", request.job)));
                    continue;
                } else {
                mine_trigger = Trigger::Demand;
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
                    mine_trigger = Trigger::Demand;
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
                for job in [MINE, HEALTH, SYNC] {
                    if schedule_of(&new, job) != schedule_of(&config, job) {
                        let last = timetable.jobs().iter().find(|j| j.name == job).and_then(|j| j.last_started);
                        add_job(&mut timetable, job, &new, last);
                    }
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
                let outcome = outcome_of(&result, mine_summary);
                for reply in waiting.drain(..) {
                    let _ = reply.send(result.clone());
                }
                waiting.append(&mut after_waiting);
                record_end(&store, mine_run.take(), outcome.clone()).await;
                let again = timetable.finish(MINE, jiff::Timestamp::now(), outcome);
                if again {
                    mine_trigger = Trigger::Pending;
                }
                again
            }
            Some(joined) = others.join_next(), if !others.is_empty() => {
                let Ok((job, run, result)) = joined else {
                    tracing::error!("a scheduled job's task failed");
                    continue;
                };
                if let Err(err) = &result {
                    tracing::error!("{job} failed: {err}");
                }
                let outcome = outcome_of(&result, other_summary);
                record_end(&store, run, outcome.clone()).await;
                for reply in other_waiting.remove(job).unwrap_or_default() {
                    let _ = reply.send(result.clone());
                }
                if timetable.finish(job, jiff::Timestamp::now(), outcome) {
                    other_waiting.insert(job, other_after.remove(job).unwrap_or_default());
                    start_other(&mut others, job, Trigger::Pending, &store, &events, &config, &stop_signal).await;
                }
                false
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
            mine_run = record_start(&store, MINE, mine_trigger).await;
            running = Some(tokio::spawn(mine_once(
                store.clone(),
                events.clone(),
                MineOptions::from_settings(&config.mine),
            )));
        }
    }
    if let Some(handle) = running {
        // A run in progress finishes: its result is one transaction, never half-written.
        let result = handle
            .await
            .unwrap_or_else(|e| Err(format!("the mining task failed: {e}")));
        let outcome = outcome_of(&result, mine_summary);
        record_end(&store, mine_run.take(), outcome).await;
    }
    // The health check saw the shutdown and stops at its next step; a sync finishes.
    while let Some(joined) = others.join_next().await {
        if let Ok((job, run, result)) = joined {
            record_end(&store, run, outcome_of(&result, other_summary)).await;
            for reply in other_waiting.remove(job).unwrap_or_default() {
                let _ = reply.send(result.clone());
            }
        }
    }
    for reply in other_after.into_values().flatten() {
        let _ = reply.send(Err("the daemon is stopping".into()));
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

/// Starts a run of `job` (one of [`OTHERS`]), recorded, on `others`.
async fn start_other(
    others: &mut tokio::task::JoinSet<OtherDone>,
    job: &'static str,
    trigger: Trigger,
    store: &Store,
    events: &EventBus,
    config: &Arc<Config>,
    shutdown: &watch::Receiver<bool>,
) {
    let run = record_start(store, job, trigger).await;
    let (store, events, config, shutdown) = (
        store.clone(),
        events.clone(),
        Arc::clone(config),
        shutdown.clone(),
    );
    others.spawn(async move {
        let result = match job {
            HEALTH => health_once(store, events, config, shutdown).await,
            _ => sync_once(events, config).await,
        };
        (job, run, result)
    });
}

/// One health check with the configuration in force; its report as JSON, with a `summary`.
async fn health_once(
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    shutdown: watch::Receiver<bool>,
) -> Result<Value, String> {
    let (generator, policy) =
        crate::health::repair::configured(&config, store.clone()).map_err(|e| e.to_string())?;
    let generator = generator.with_events(events.clone()).with_cancel(shutdown);
    let report = crate::health::check::check(
        &store,
        config.paths.registry.value.clone(),
        config.paths.state.value.clone(),
        &generator,
        &policy,
        Some(&events),
    )
    .await
    .map_err(|e| e.to_string())?;
    tracing::info!("health check: {}", report.summary());
    let value = report.to_json();
    events.publish("health.finished", value.clone());
    Ok(value)
}

/// One sync of the registry with its remote, when it has one.
async fn sync_once(events: EventBus, config: Arc<Config>) -> Result<Value, String> {
    let dir = config.paths.registry.value.clone();
    let synced = tokio::task::spawn_blocking(move || {
        let registry = crate::registry::repo::Registry::open_or_init(&dir)?;
        if registry.remote_url(None)?.is_none() {
            return Ok(None);
        }
        registry.sync().map(Some)
    })
    .await
    .map_err(|e| format!("the sync task failed: {e}"))?
    .map_err(|e: crate::registry::repo::RegistryError| e.to_string())?;
    let Some(report) = synced else {
        return Ok(
            json!({"summary": "no remote: nothing to sync (`toolsmith sync --remote URL` sets one)"}),
        );
    };
    let summary = format!(
        "{} with {}: {} tools received, {} refs pushed",
        report.main,
        report.remote,
        report.received.len(),
        report.pushed.len()
    );
    for landed in &report.landed {
        events.publish("tool.approved", json!(landed));
    }
    events.publish("registry.synced", json!(report));
    let mut value = json!(report);
    value["summary"] = json!(summary);
    Ok(value)
}

/// One generation run with the configuration in force; its report as JSON.
async fn generate_once(
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    job: Job,
    shutdown: watch::Receiver<bool>,
) -> Result<Value, String> {
    let generator = crate::health::repair::configured(&config, store)
        .map_err(|e| e.to_string())?
        .0
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
