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
use crate::events::{Event, EventBus, Published};
use crate::generate::candidates::{self, State};
use crate::generate::pipeline::{self, GenerateError, Job};
use crate::health::check::{CheckError, CheckReport};
use crate::mine::miner::{self, MineError, MineOptions, MineSummary};
use crate::registry::repo::RegistryError;
use crate::registry::sync::SyncReport;
use crate::schedule::{self, Outcome, Schedule, Timetable, Trigger, WallAlarm, local_time_zone};
use crate::store::StoreError;
use crate::store::{self, Store};
use crate::validate::run::ValidatorError;

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

/// What a job run reports: each job's own report, answered to whoever asked as the JSON it
/// always was ([`JobReport::to_json`]).
#[derive(Debug, Clone)]
pub(super) enum JobReport {
    /// A mining run's summary.
    Mine(MineSummary),
    /// A health check's report.
    Health(CheckReport),
    /// A sync's report; `None` when the registry has no remote.
    Sync(Option<SyncReport>),
    /// A generation run's report.
    Generate(pipeline::Report),
}

/// What `sync` reports when the registry has no remote.
const NO_REMOTE: &str = "no remote: nothing to sync (`toolsmith sync --remote URL` sets one)";

impl JobReport {
    /// The line `job_runs` keeps (and `toolsmith schedule` shows).
    pub(super) fn summary_line(&self) -> String {
        match self {
            JobReport::Mine(summary) => format!("{} patterns", summary.patterns),
            JobReport::Health(report) => report.summary(),
            JobReport::Sync(None) => NO_REMOTE.to_owned(),
            JobReport::Sync(Some(report)) => format!(
                "{} with {}: {} tools received, {} refs pushed",
                report.main,
                report.remote,
                report.received.len(),
                report.pushed.len()
            ),
            JobReport::Generate(report) => format!(
                "{} candidates, {} skipped",
                report.candidates.len(),
                report.skipped.len()
            ),
        }
    }

    /// The report as the job's request is answered with it.
    pub(super) fn to_json(&self) -> Value {
        match self {
            JobReport::Mine(summary) => json!(summary),
            JobReport::Health(report) => report.to_json(),
            JobReport::Sync(None) => json!({ "summary": NO_REMOTE }),
            JobReport::Sync(Some(report)) => {
                let mut value = json!(report);
                value["summary"] = json!(self.summary_line());
                value
            }
            JobReport::Generate(report) => json!(report),
        }
    }
}

/// Why a job run failed (or was not run).
#[derive(Debug, thiserror::Error)]
pub(super) enum JobError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Mining failed.
    #[error(transparent)]
    Mine(#[from] MineError),
    /// Generation failed.
    #[error(transparent)]
    Generate(#[from] GenerateError),
    /// The generator could not be configured (its validator is not usable).
    #[error(transparent)]
    Validator(#[from] ValidatorError),
    /// The health check failed.
    #[error(transparent)]
    Health(#[from] CheckError),
    /// The registry failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The task running the job died.
    #[error("the {what} task failed: {source}")]
    Task {
        /// Which task: `mining`, `sync`, `generation`.
        what: &'static str,
        /// How it died.
        source: tokio::task::JoinError,
    },
    /// No job has this name.
    #[error("no job `{0}`")]
    Unknown(String),
    /// The daemon stopped before the job could run.
    #[error("the daemon is stopping")]
    Stopping,
    /// The daemon stopped before a queued generation could run.
    #[error("the daemon is stopping: no generation now")]
    StoppingGeneration,
}

/// A job run's result, shared with everyone waiting for it.
pub(super) type JobResult = Result<JobReport, Arc<JobError>>;

/// How a run ended, for `job_runs`: its summary line, or why it failed.
fn outcome_of(result: &JobResult) -> Outcome {
    match result {
        Ok(report) => Outcome {
            ok: true,
            summary: report.summary_line(),
        },
        Err(err) => Outcome {
            ok: false,
            summary: err.to_string(),
        },
    }
}

/// A finished run of one of [`OTHERS`]: the job, its `job_runs` id, its result.
type OtherDone = (&'static str, Option<i64>, JobResult);

/// A request to run a job now, answered when a run that started after it ends.
pub(super) struct JobRequest {
    /// The job.
    pub job: &'static str,
    /// For [`GENERATE`]: what to generate.
    pub generate: Option<Job>,
    /// Where the run's summary, or why it failed, goes.
    pub reply: oneshot::Sender<JobResult>,
}

/// Where a run's summary, or why it failed, goes.
type Reply = oneshot::Sender<JobResult>;

/// Generation runs waiting, in order, with whoever waits for each.
type GenerateQueue = VecDeque<(Job, Option<Reply>)>;

/// The generation run under way, with whoever waits for it.
type Running = (tokio::task::JoinHandle<JobResult>, Option<Reply>);

/// When `job` last started, as the store remembers it: mining from `mine_runs`, the other
/// scheduled jobs from `job_runs`; `None` when it never ran (or the store cannot say).
async fn last_started(store: &Store, job: &'static str) -> Option<jiff::Timestamp> {
    if job == MINE {
        return store
            .call(|conn| miner::last_run_started(conn))
            .await
            .ok()
            .flatten();
    }
    store
        .call(move |conn| schedule::last_started(conn, job))
        .await
        .ok()
        .flatten()
}

/// Puts `job` on `timetable` with its schedule in `config`, anchored at when it last started.
fn add_job(
    timetable: &mut Timetable,
    job: &'static str,
    config: &Config,
    last: Option<jiff::Timestamp>,
) {
    match Schedule::parse(&schedule_of(config, job).value) {
        Ok(schedule) => timetable.add(job, schedule, last, jiff::Timestamp::now()),
        // The configuration was validated; this only guards a change in the parser.
        Err(err) => tracing::error!("{job}.schedule not usable: {err}"),
    }
}

/// The timetable of the scheduled jobs (mining and [`OTHERS`]), each anchored at when it last
/// started.
async fn timetable(store: &Store, config: &Config) -> Timetable {
    let mut timetable = Timetable::new(local_time_zone());
    for job in [MINE, HEALTH, SYNC] {
        let last = last_started(store, job).await;
        add_job(&mut timetable, job, config, last);
    }
    timetable
}

/// Puts candidates a stopped daemon (or a killed one-shot command) left half-done back to
/// `proposed`, so they are resumed, never left stuck; whether any candidate waits for
/// generation.
async fn resume_interrupted(store: &Store, state_dir: std::path::PathBuf) -> bool {
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
        Ok(Ok(0)) => false,
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            tracing::error!("cannot resume interrupted candidates: {e}");
            false
        }
        Err(e) => {
            tracing::error!("cannot resume interrupted candidates: {e}");
            false
        }
    }
}

/// Queues a generation pass after a successful mining run, unless one queued after mining
/// (by nobody's request) already waits.
fn queue_pass_after_mining(queue: &mut GenerateQueue) {
    if !queue
        .iter()
        .any(|(job, reply)| *job == Job::Pending && reply.is_none())
    {
        queue.push_back((Job::Pending, None));
    }
}

/// The mining job's state between runs.
struct Mining {
    /// The run under way.
    running: Option<tokio::task::JoinHandle<JobResult>>,
    /// Its `job_runs` id.
    run: Option<i64>,
    /// What the next run is started by.
    trigger: Trigger,
    /// Actions ingested since the last run started.
    new_actions: u64,
    /// Requests the run under way answers (or the next, when none is).
    waiting: Vec<Reply>,
    /// Requests that came while a run was under way: the next run answers them.
    after_waiting: Vec<Reply>,
}

/// The jobs' state, owned by [`run`]'s loop: each step of the loop is one method.
struct Jobs {
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    /// Given to the jobs started, which stop at their next step on shutdown.
    stop_signal: watch::Receiver<bool>,
    timetable: Timetable,
    mining: Mining,
    /// Runs of [`OTHERS`] under way.
    others: tokio::task::JoinSet<OtherDone>,
    /// Requests each run of [`OTHERS`] under way answers.
    other_waiting: std::collections::HashMap<&'static str, Vec<Reply>>,
    /// Requests that came while a run was under way: its next run answers them.
    other_after: std::collections::HashMap<&'static str, Vec<Reply>>,
    generate_queue: GenerateQueue,
    generating: Option<Running>,
}

impl Jobs {
    /// Starts the next generation run queued, when none is under way.
    fn start_generation(&mut self) {
        if self.generating.is_none()
            && let Some((job, reply)) = self.generate_queue.pop_front()
        {
            let task = tokio::spawn(generate_once(
                self.store.clone(),
                self.events.clone(),
                Arc::clone(&self.config),
                job,
                self.stop_signal.clone(),
            ));
            self.generating = Some((task, reply));
        }
    }

    /// The wall-clock alarm rang: starts the jobs of [`OTHERS`] that are due; whether mining
    /// is.
    async fn on_due(&mut self) -> bool {
        let due = self.timetable.take_due(jiff::Timestamp::now());
        for job in OTHERS.iter().filter(|j| due.iter().any(|d| d == *j)) {
            self.start_other(job, Trigger::Schedule).await;
        }
        self.mining.trigger = Trigger::Schedule;
        due.iter().any(|d| d == MINE)
    }

    /// A request to run a job now; whether mining starts.
    async fn on_request(&mut self, request: JobRequest) -> bool {
        if request.job == GENERATE {
            let job = request.generate.unwrap_or(Job::Pending);
            self.generate_queue.push_back((job, Some(request.reply)));
            false
        } else if let Some(job) = OTHERS.iter().find(|j| **j == request.job) {
            if self.timetable.demand(job, jiff::Timestamp::now()) {
                self.other_waiting
                    .entry(job)
                    .or_default()
                    .push(request.reply);
                self.start_other(job, Trigger::Demand).await;
            } else {
                self.other_after.entry(job).or_default().push(request.reply);
            }
            false
        } else if request.job != MINE {
            let _ = request
                .reply
                .send(Err(Arc::new(JobError::Unknown(request.job.to_owned()))));
            false
        } else {
            self.mining.trigger = Trigger::Demand;
            if self.mining.running.is_some() {
                self.mining.after_waiting.push(request.reply);
            } else {
                self.mining.waiting.push(request.reply);
            }
            self.timetable.demand(MINE, jiff::Timestamp::now())
        }
    }

    /// `new` actions were ingested; whether mining starts (enough of them since the last run).
    fn on_new_actions(&mut self, new: u64) -> bool {
        self.mining.new_actions += new;
        self.mining.trigger = Trigger::Demand;
        self.mining.new_actions >= u64::from(self.config.mine.after_new_actions.value)
            && self.timetable.demand(MINE, jiff::Timestamp::now())
    }

    /// The configuration changed: the jobs whose schedule changed are put on the timetable
    /// again (keeping when they last started).
    fn on_config(&mut self, new: Arc<Config>) {
        for job in [MINE, HEALTH, SYNC] {
            if schedule_of(&new, job) != schedule_of(&self.config, job) {
                let last = self
                    .timetable
                    .jobs()
                    .iter()
                    .find(|j| j.name == job)
                    .and_then(|j| j.last_started);
                add_job(&mut self.timetable, job, &new, last);
            }
        }
        self.config = new;
    }

    /// A mining run ended: a generation pass is queued after a success, the requests it
    /// answers get its result, the end is recorded; whether mining runs again at once (it was
    /// asked for meanwhile).
    async fn on_mined(&mut self, result: JobResult) -> bool {
        self.mining.running = None;
        if result.is_ok() {
            queue_pass_after_mining(&mut self.generate_queue);
        }
        let outcome = outcome_of(&result);
        for reply in self.mining.waiting.drain(..) {
            let _ = reply.send(result.clone());
        }
        self.mining.waiting.append(&mut self.mining.after_waiting);
        record_end(&self.store, self.mining.run.take(), outcome.clone()).await;
        let again = self.timetable.finish(MINE, jiff::Timestamp::now(), outcome);
        if again {
            self.mining.trigger = Trigger::Pending;
        }
        again
    }

    /// A run of one of [`OTHERS`] ended: recorded, answered, and started again when it was
    /// asked for meanwhile.
    async fn on_other_done(&mut self, (job, run, result): OtherDone) {
        if let Err(err) = &result {
            tracing::error!("{job} failed: {err}");
        }
        let outcome = outcome_of(&result);
        record_end(&self.store, run, outcome.clone()).await;
        for reply in self.other_waiting.remove(job).unwrap_or_default() {
            let _ = reply.send(result.clone());
        }
        if self.timetable.finish(job, jiff::Timestamp::now(), outcome) {
            let after = self.other_after.remove(job).unwrap_or_default();
            self.other_waiting.insert(job, after);
            self.start_other(job, Trigger::Pending).await;
        }
    }

    /// The generation run under way ended: whoever asked for it gets its result.
    fn on_generated(&mut self, result: JobResult) {
        if let Some((_, Some(reply))) = self.generating.take() {
            let _ = reply.send(result);
        } else if let Err(e) = result {
            tracing::error!("generation failed: {e}");
        }
    }

    /// Starts a mining run, recorded, unless one is under way.
    async fn start_mining(&mut self) {
        if self.mining.running.is_some() {
            return;
        }
        self.mining.new_actions = 0;
        self.mining.run = record_start(&self.store, MINE, self.mining.trigger).await;
        self.mining.running = Some(tokio::spawn(mine_once(
            self.store.clone(),
            self.events.clone(),
            MineOptions::from_settings(&self.config.mine),
            self.config.clone(),
        )));
    }

    /// Starts a run of `job` (one of [`OTHERS`]), recorded.
    async fn start_other(&mut self, job: &'static str, trigger: Trigger) {
        start_other(
            &mut self.others,
            job,
            trigger,
            &self.store,
            &self.events,
            &self.config,
            &self.stop_signal,
        )
        .await;
    }

    /// At shutdown: the runs under way end (a mining run finishes, its result one
    /// transaction; the others saw the shutdown and stop at their next step), are recorded and
    /// answered; requests still waiting are told the daemon is stopping.
    async fn stop(mut self) {
        if let Some(handle) = self.mining.running.take() {
            let result = handle.await.unwrap_or_else(|source| {
                Err(Arc::new(JobError::Task {
                    what: "mining",
                    source,
                }))
            });
            let outcome = outcome_of(&result);
            record_end(&self.store, self.mining.run.take(), outcome).await;
        }
        // The health check saw the shutdown and stops at its next step; a sync finishes.
        while let Some(joined) = self.others.join_next().await {
            if let Ok((job, run, result)) = joined {
                record_end(&self.store, run, outcome_of(&result)).await;
                for reply in self.other_waiting.remove(job).unwrap_or_default() {
                    let _ = reply.send(result.clone());
                }
            }
        }
        for reply in self.other_after.into_values().flatten() {
            let _ = reply.send(Err(Arc::new(JobError::Stopping)));
        }
        if let Some((handle, reply)) = self.generating {
            // It saw the shutdown too and stops at its next step.
            let result = handle.await.unwrap_or_else(|source| {
                Err(Arc::new(JobError::Task {
                    what: "generation",
                    source,
                }))
            });
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        }
        for (_, reply) in self.generate_queue {
            if let Some(reply) = reply {
                let _ = reply.send(Err(Arc::new(JobError::StoppingGeneration)));
            }
        }
    }
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
    let config = Arc::clone(&configs.borrow_and_update());
    let timetable = timetable(&store, &config).await;
    let mut generate_queue = GenerateQueue::new();
    if resume_interrupted(&store, config.paths.state.value.clone()).await {
        generate_queue.push_back((Job::Pending, None));
    }
    let mut jobs = Jobs {
        store,
        events,
        config,
        // A copy for the jobs started inside the loop, which waits on `shutdown` itself.
        stop_signal: shutdown.clone(),
        timetable,
        mining: Mining {
            running: None,
            run: None,
            trigger: Trigger::Schedule,
            new_actions: 0,
            waiting: Vec::new(),
            after_waiting: Vec::new(),
        },
        others: tokio::task::JoinSet::new(),
        other_waiting: Default::default(),
        other_after: Default::default(),
        generate_queue,
        generating: None,
    };

    loop {
        jobs.start_generation();
        let next_wake = jobs.timetable.next_wake();
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
            () = sleep => jobs.on_due().await,
            Some(request) = requests.recv() => jobs.on_request(request).await,
            event = bus.recv() => match event {
                Ok(Published { event: Event::IngestActions { new, .. }, .. }) => {
                    jobs.on_new_actions(new)
                }
                Ok(_) => false,
                Err(broadcast::error::RecvError::Lagged(_)) => false,
                Err(broadcast::error::RecvError::Closed) => break,
            },
            changed = configs.changed() => {
                if changed.is_err() {
                    break;
                }
                jobs.on_config(Arc::clone(&configs.borrow_and_update()));
                false
            }
            joined = async {
                match jobs.mining.running.as_mut() {
                    Some(handle) => handle.await,
                    None => std::future::pending().await,
                }
            } => {
                let result = joined.unwrap_or_else(|source| {
                    Err(Arc::new(JobError::Task { what: "mining", source }))
                });
                jobs.on_mined(result).await
            }
            Some(joined) = jobs.others.join_next(), if !jobs.others.is_empty() => {
                match joined {
                    Ok(done) => jobs.on_other_done(done).await,
                    Err(_) => tracing::error!("a scheduled job's task failed"),
                }
                false
            }
            joined = async {
                match jobs.generating.as_mut() {
                    Some((handle, _)) => handle.await,
                    None => std::future::pending().await,
                }
            } => {
                jobs.on_generated(joined.unwrap_or_else(|source| {
                    Err(Arc::new(JobError::Task { what: "generation", source }))
                }));
                false
            }
        };
        if start {
            jobs.start_mining().await;
        }
    }
    jobs.stop().await;
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

/// One health check with the configuration in force.
async fn health_once(
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    shutdown: watch::Receiver<bool>,
) -> JobResult {
    Ok(health_report(store, events, config, shutdown).await?)
}

async fn health_report(
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    shutdown: watch::Receiver<bool>,
) -> Result<JobReport, JobError> {
    let (generator, policy) = crate::health::repair::configured(&config, store.clone())?;
    let generator = generator.with_events(events.clone()).with_cancel(shutdown);
    let report = crate::health::check::check(
        &store,
        config.paths.registry.value.clone(),
        config.paths.state.value.clone(),
        &generator,
        &policy,
        Some(&events),
    )
    .await?;
    tracing::info!("health check: {}", report.summary());
    let report = JobReport::Health(report);
    events.publish(Event::HealthFinished {
        report: report.to_json(),
    });
    Ok(report)
}

/// One sync of the registry with its remote, when it has one.
async fn sync_once(events: EventBus, config: Arc<Config>) -> JobResult {
    Ok(sync_report(events, config).await?)
}

async fn sync_report(events: EventBus, config: Arc<Config>) -> Result<JobReport, JobError> {
    let dir = config.paths.registry.value.clone();
    let state = config.paths.state.value.clone();
    let synced = tokio::task::spawn_blocking(move || {
        let registry = crate::registry::repo::Registry::open_or_init(&dir, &state)?;
        if registry.remote_url(None)?.is_none() {
            return Ok(None);
        }
        registry.sync().map(Some)
    })
    .await
    .map_err(|source| JobError::Task {
        what: "sync",
        source,
    })?
    .map_err(JobError::Registry)?;
    if let Some(report) = &synced {
        for landed in &report.landed {
            events.publish(landed.event());
        }
        events.publish(Event::RegistrySynced {
            report: json!(report),
        });
    }
    Ok(JobReport::Sync(synced))
}

/// One generation run with the configuration in force.
async fn generate_once(
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    job: Job,
    shutdown: watch::Receiver<bool>,
) -> JobResult {
    Ok(generate_report(store, events, config, job, shutdown).await?)
}

async fn generate_report(
    store: Store,
    events: EventBus,
    config: Arc<Config>,
    job: Job,
    shutdown: watch::Receiver<bool>,
) -> Result<JobReport, JobError> {
    let generator = crate::health::repair::configured(&config, store)?
        .0
        .with_events(events.clone())
        .with_cancel(shutdown);
    let report = generator.run(job).await?;
    events.publish(Event::GenerateFinished {
        candidates: report.candidates.len(),
        skipped: report.skipped.len(),
    });
    tracing::info!(
        candidates = report.candidates.len(),
        skipped = report.skipped.len(),
        "generation done"
    );
    Ok(JobReport::Generate(report))
}

/// One mining run: read through a read-only connection, store through the writer, announce.
async fn mine_once(
    store: Store,
    events: EventBus,
    options: MineOptions,
    config: Arc<Config>,
) -> JobResult {
    Ok(mine_report(store, events, options, config).await?)
}

async fn mine_report(
    store: Store,
    events: EventBus,
    options: MineOptions,
    config: Arc<Config>,
) -> Result<JobReport, JobError> {
    let path = store.path().to_owned();
    let report = tokio::task::spawn_blocking(move || {
        // The user's shell files are read once a run: they may have changed since the last.
        let user = miner::UserShell::from_config(&config);
        let conn = store::open_read_only(&path)?;
        Ok::<_, JobError>(miner::mine_for(&conn, &options, &user)?)
    })
    .await
    .map_err(|source| JobError::Task {
        what: "mining",
        source,
    })??;
    let report = Arc::new(report);
    let stored = Arc::clone(&report);
    let fresh = store
        .call(move |conn| {
            let outcomes = candidates::pattern_outcomes(conn)?;
            miner::store_patterns(conn, &stored, &outcomes)
        })
        .await?;
    for id in &fresh {
        if let Some(p) = report.patterns.iter().find(|p| &p.id == id) {
            events.publish(Event::PatternFound {
                id: p.id.clone(),
                kind: p.kind.as_str().to_owned(),
                support: p.support,
                score: p.score,
            });
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
    let report = JobReport::Mine(summary);
    events.publish(Event::MineFinished {
        summary: report.to_json(),
    });
    Ok(report)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigRequest, Env};

    /// A home directory and nothing else: the configuration's defaults.
    struct Home(std::path::PathBuf);

    impl Env for Home {
        fn var(&self, name: &str) -> Option<String> {
            (name == "HOME").then(|| self.0.to_string_lossy().into_owned())
        }
        fn is_root(&self) -> bool {
            false
        }
    }

    /// The default configuration with its state in `dir`, and its store.
    fn setup(dir: &std::path::Path) -> (Config, Store) {
        let config = ConfigRequest {
            config_file: None,
            state_dir: Some(dir.join("state")),
        }
        .load_with(&crate::daemon::checks::STAGES, &Home(dir.to_owned()))
        .expect("config");
        std::fs::create_dir_all(&config.paths.state.value).expect("state dir");
        let store = Store::open(&config.store_path()).expect("store");
        (config, store)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn each_job_is_anchored_at_its_last_run_in_the_store() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (config, store) = setup(dir.path());
        for job in [MINE, HEALTH, SYNC] {
            assert_eq!(last_started(&store, job).await, None, "{job}");
        }
        let health = jiff::Timestamp::from_millisecond(1_790_000_000_123).expect("time");
        store
            .call(move |conn| schedule::record_start(conn, HEALTH, "demand", health))
            .await
            .expect("record");
        let before = jiff::Timestamp::now();
        let path = store.path().to_owned();
        let options = MineOptions::from_settings(&config.mine);
        let report = tokio::task::spawn_blocking(move || {
            let conn = store::open_read_only(&path).expect("read-only");
            miner::mine(&conn, &options).expect("mine")
        })
        .await
        .expect("mining task");
        store
            .call(move |conn| {
                let outcomes = candidates::pattern_outcomes(conn)?;
                miner::store_patterns(conn, &report, &outcomes)
            })
            .await
            .expect("store the run");

        assert_eq!(last_started(&store, HEALTH).await, Some(health));
        assert_eq!(last_started(&store, SYNC).await, None);
        let mined = last_started(&store, MINE).await.expect("mined");
        // `mine_runs` keeps seconds.
        assert!(
            mined.as_second() >= before.as_second(),
            "{mined} < {before}"
        );
        let timetable = timetable(&store, &config).await;
        let last: Vec<(&str, Option<jiff::Timestamp>)> = timetable
            .jobs()
            .iter()
            .map(|j| (j.name.as_str(), j.last_started))
            .collect();
        assert_eq!(
            last,
            [(MINE, Some(mined)), (HEALTH, Some(health)), (SYNC, None)]
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn candidates_left_half_done_are_resumed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (config, store) = setup(dir.path());
        let state = config.paths.state.value.clone();
        assert!(
            !resume_interrupted(&store, state.clone()).await,
            "nothing waits"
        );
        let id = store
            .call(|conn| {
                let left = || -> Result<String, candidates::CandidateError> {
                    let c = candidates::create(
                        conn,
                        &candidates::NewCandidate {
                            tool: "demo".into(),
                            origin: "request".into(),
                            pattern: None,
                            request: Some("Build one package".into()),
                        },
                    )?;
                    candidates::transition(conn, &c.id, State::Generating, None)?;
                    Ok(c.id)
                };
                Ok(left())
            })
            .await
            .expect("store")
            .expect("a candidate left generating");
        assert!(resume_interrupted(&store, state).await, "a pass resumes it");
        let resumed = store
            .call(move |conn| Ok(candidates::get(conn, &id)))
            .await
            .expect("store")
            .expect("get");
        assert_eq!(resumed.state, State::Proposed);
        assert_eq!(
            resumed.reason.as_deref(),
            Some("interrupted while generating; resumed")
        );
    }

    #[test]
    fn a_pass_after_mining_is_queued_once() {
        let mut queue = GenerateQueue::new();
        let (asked, _answer) = oneshot::channel();
        // A pass somebody asked for is theirs: it does not stand for the pass after mining.
        queue.push_back((Job::Pending, Some(asked)));
        queue_pass_after_mining(&mut queue);
        queue_pass_after_mining(&mut queue);
        let passes: Vec<(bool, bool)> = queue
            .iter()
            .map(|(job, reply)| (*job == Job::Pending, reply.is_some()))
            .collect();
        assert_eq!(passes, [(true, true), (true, false)]);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn requests_are_answered_and_runs_recorded() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (config, store) = setup(dir.path());
        let events = EventBus::new();
        let mut published = events.subscribe();
        let (_config_tx, configs) = watch::channel(Arc::new(config));
        let (requests, requests_rx) = mpsc::channel(4);
        let (stop, shutdown) = watch::channel(false);
        let task = tokio::spawn(run(
            store.clone(),
            events.clone(),
            configs,
            requests_rx,
            shutdown,
        ));
        let ask = |job: &'static str| {
            let requests = requests.clone();
            async move {
                let (reply, answer) = oneshot::channel();
                requests
                    .send(JobRequest {
                        job,
                        generate: None,
                        reply,
                    })
                    .await
                    .expect("send");
                answer.await.expect("answered")
            }
        };
        assert_eq!(
            ask("nope").await.map_err(|e| e.to_string()).err(),
            Some("no job `nope`".to_owned())
        );
        let mined = ask(MINE).await.expect("mined").to_json();
        assert_eq!(mined["patterns"], 0, "{mined}");
        loop {
            let event = published.recv().await.expect("event");
            if event.kind() == "mine.finished" {
                assert_eq!(event.data(), mined);
                break;
            }
        }
        stop.send(true).expect("stop");
        task.await.expect("the jobs stop");
        let runs = store
            .call(|conn| schedule::last_runs(conn))
            .await
            .expect("job runs");
        let mine = runs
            .iter()
            .find(|r| r.job == MINE)
            .expect("mining recorded");
        assert_eq!(mine.trigger, "demand");
        assert_eq!(mine.ok, Some(true));
        assert_eq!(mine.summary.as_deref(), Some("0 patterns"));
    }

    #[test]
    fn job_reports_answer_with_their_json_and_record_a_line() {
        let none = JobReport::Sync(None);
        assert_eq!(none.to_json(), json!({ "summary": NO_REMOTE }));
        assert_eq!(none.summary_line(), NO_REMOTE);
        let synced = JobReport::Sync(Some(SyncReport {
            remote: "/remote.git".into(),
            main: "fast-forward".into(),
            received: vec!["lint-fix".into()],
            ..SyncReport::default()
        }));
        let line = "fast-forward with /remote.git: 1 tools received, 0 refs pushed";
        assert_eq!(synced.summary_line(), line);
        let value = synced.to_json();
        assert_eq!(value["summary"], line);
        assert_eq!(value["received"], json!(["lint-fix"]));
        let health = JobReport::Health(CheckReport {
            checked: 2,
            ..CheckReport::default()
        });
        assert_eq!(health.to_json()["summary"], health.summary_line());
        assert_eq!(health.to_json()["checked"], 2);
        let generated = JobReport::Generate(pipeline::Report::default());
        assert_eq!(
            generated.to_json(),
            json!({"candidates": [], "skipped": []})
        );
        assert_eq!(generated.summary_line(), "0 candidates, 0 skipped");
    }

    #[test]
    fn job_errors_say_what_failed() {
        assert_eq!(
            JobError::Unknown("nope".into()).to_string(),
            "no job `nope`"
        );
        assert_eq!(
            JobError::StoppingGeneration.to_string(),
            "the daemon is stopping: no generation now"
        );
        let failed = outcome_of(&Err(Arc::new(JobError::Stopping)));
        assert_eq!(
            (failed.ok, failed.summary.as_str()),
            (false, "the daemon is stopping")
        );
    }
}
