//! The daemon: wires the stages together and runs the lifecycle.
//!
//! Start-up order matters and is the contract with systemd: configuration, logging, the
//! single-instance lock, the store, the socket — and only then `READY=1`. Shutdown (SIGTERM,
//! SIGINT or `daemon.shutdown`) announces `STOPPING=1`, lets in-flight requests finish, records a
//! clean stop in the store and exits 0. SIGHUP reloads the configuration; a bad new file keeps
//! the old one in force.

mod api;
pub mod checks;
mod jobs;
pub mod listener;
pub mod lock;
mod notify;
mod on_event;
mod registry_watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use sd_notify::NotifyState;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};

use crate::config::{Config, ConfigError, ConfigRequest};
use crate::control::server::{Limits, Server, Stats};
use crate::events::{Event, EventBus};
use crate::exit::ExitCode;
use crate::ingest;
use crate::logging::{self, LogFilterError};
use crate::store::{self, Store, StoreError};

use api::DaemonApi;

/// Command line of `toolsmithd`.
#[derive(Debug, Parser)]
#[command(
    name = "toolsmithd",
    version,
    about = "The toolsmith daemon: watches agent logs, \
    mines habits, builds sandboxed tools and keeps them healthy"
)]
pub struct Args {
    /// Configuration file (default: $TOOLSMITH_CONFIG, $CONFIGURATION_DIRECTORY/config.toml,
    /// $XDG_CONFIG_HOME/toolsmith/config.toml, /etc/toolsmith/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// State directory (SQLite store, lock); the control socket goes to DIR/run unless
    /// configured otherwise.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Log filter, overriding RUST_LOG and the config (e.g. `debug`, `toolsmith=trace`).
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
}

/// Why the daemon could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The log filter is invalid.
    #[error(transparent)]
    Logging(#[from] LogFilterError),
    /// Another daemon holds the state directory.
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    /// The store cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The control socket cannot be set up.
    #[error(transparent)]
    Listen(#[from] listener::ListenError),
    /// The async runtime or a signal handler could not be created.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

impl DaemonError {
    /// The documented exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            DaemonError::Config(_) | DaemonError::Logging(_) => ExitCode::InvalidConfig,
            DaemonError::Lock(lock::LockError::Held { .. }) => ExitCode::AlreadyRunning,
            DaemonError::Store(e) if e.is_damage() => ExitCode::StoreDamaged,
            _ => ExitCode::Failure,
        }
    }
}

/// `toolsmithd`'s whole `main`: parse the command line, run, map errors to exit codes.
pub fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::Success.into(),
        Err(err) => {
            // Plain stderr: logging may not be up yet (a config error comes first), and under
            // systemd stderr is the journal anyway.
            eprintln!("toolsmithd: {err}");
            let _ = sd_notify::notify(&[NotifyState::Status(&format!("failed: {err}"))]);
            err.exit_code().into()
        }
    }
}

/// Runs the daemon until it is asked to stop.
pub fn run(args: Args) -> Result<(), DaemonError> {
    let request = ConfigRequest {
        config_file: args.config,
        state_dir: args.state,
    };
    let config = request.load(&crate::daemon::checks::STAGES)?;
    let logging = logging::init(args.log_level.as_deref(), &config.daemon.log_level.value)?;
    listener::ensure_private_dir(&config.paths.state.value)?;
    let _lock = lock::acquire(&config.lock_path())?;
    let socket = listener::take_or_bind(&config.socket_path())?;
    let store = Store::open(&config.store_path())?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("toolsmithd")
        .enable_all()
        .build()
        .map_err(DaemonError::Runtime)?;
    let result = runtime.block_on(serve(config, request, logging, socket, store));
    // Blocking jobs (store calls) get a moment to finish; nothing may hang the exit.
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

async fn serve(
    config: Config,
    request: ConfigRequest,
    logging: logging::Logging,
    socket: listener::BoundSocket,
    store: Store,
) -> Result<(), DaemonError> {
    let pid = std::process::id();
    let version = env!("CARGO_PKG_VERSION");
    let run_id = store
        .call(move |conn| store::record_start(conn, pid, version))
        .await?;
    let previous = store
        .call(move |conn| store::previous_run(conn, run_id))
        .await?;
    if let Some(prev) = previous.as_ref().filter(|p| p.stopped_at.is_none()) {
        tracing::warn!(
            previous_pid = prev.pid,
            "the previous toolsmithd run did not stop cleanly"
        );
    }

    let listener = tokio::net::UnixListener::from_std(
        socket.listener.try_clone().map_err(DaemonError::Runtime)?,
    )
    .map_err(DaemonError::Runtime)?;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let shutdown_rx_for_tail = shutdown_rx.clone();
    let (stop_tx, mut stop_rx) = mpsc::channel::<&'static str>(1);
    let (jobs_tx, jobs_rx) = mpsc::channel::<jobs::JobRequest>(16);
    let shutdown_rx_for_jobs = shutdown_rx.clone();
    let events = EventBus::new();
    let stats = Arc::new(Stats::default());
    let limits = Arc::new(Limits::new(
        config.daemon.max_connections.value,
        config.daemon.max_subscriptions.value,
        config.max_request_bytes(),
        config.idle_timeout(),
        config.partial_line_timeout(),
    ));
    let grace = Duration::from_secs(config.daemon.shutdown_grace_s.value.into());
    let api = Arc::new(DaemonApi::new(api::Parts {
        config,
        request,
        logging,
        store: store.clone(),
        events: events.clone(),
        stats: Arc::clone(&stats),
        limits: Arc::clone(&limits),
        stop: stop_tx,
        jobs: jobs_tx.clone(),
        socket_path: socket.path.clone(),
        socket_activated: socket.activated,
        previous_run: previous,
    }));
    let server = Server::new(
        listener,
        Arc::clone(&api),
        events.clone(),
        limits,
        stats,
        shutdown_rx,
        grace,
    );
    let mut server_task = tokio::spawn(server.run());

    let tail_task = tokio::spawn(supervise_ingest(
        store.clone(),
        events.clone(),
        api.tail_stats(),
        api.config_changes(),
        shutdown_rx_for_tail,
    ));

    let registry_task = tokio::spawn(registry_watch::run(
        store.clone(),
        events.clone(),
        jobs_tx,
        api.config_changes(),
        shutdown_rx_for_jobs.clone(),
    ));

    // Ends with the process: it only starts commands, which the timeout bounds.
    tokio::spawn(on_event::run(
        events.clone(),
        api.config_changes(),
        shutdown_rx_for_jobs.clone(),
    ));

    // Ends with the process too: each notification is one bounded program run.
    tokio::spawn(notify::run(
        store.clone(),
        events.clone(),
        api.config_changes(),
        shutdown_rx_for_jobs.clone(),
    ));

    let jobs_task = tokio::spawn(jobs::run(
        store.clone(),
        events.clone(),
        api.config_changes(),
        jobs_rx,
        shutdown_rx_for_jobs,
    ));

    let mut sigterm = signal(SignalKind::terminate()).map_err(DaemonError::Runtime)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(DaemonError::Runtime)?;
    let mut sighup = signal(SignalKind::hangup()).map_err(DaemonError::Runtime)?;
    let watchdog = sd_notify::watchdog_enabled();
    // Without a watchdog the timer never fires: no wake-ups at all when idle.
    let mut watchdog_tick =
        tokio::time::interval(watchdog.map_or(Duration::from_secs(86_400 * 365), |d| d / 2));
    watchdog_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    tracing::info!(
        socket = %socket.path.display(),
        activated = socket.activated,
        pid,
        "toolsmithd ready"
    );
    let _ = sd_notify::notify(&[
        NotifyState::Ready,
        NotifyState::Status(&format!("listening on {}", socket.path.display())),
    ]);
    events.publish(Event::DaemonStarted {
        pid,
        version: version.to_owned(),
    });

    let reason = loop {
        tokio::select! {
            _ = sigterm.recv() => break "SIGTERM",
            _ = sigint.recv() => break "SIGINT",
            Some(reason) = stop_rx.recv() => break reason,
            _ = sighup.recv() => {
                let _ = sd_notify::notify(&[NotifyState::Status("reloading configuration")]);
                match api.reload().await {
                    Ok(outcome) => tracing::info!(%outcome, "configuration reloaded (SIGHUP)"),
                    Err(err) => tracing::error!(
                        "configuration reload failed, keeping the previous configuration: {err}"
                    ),
                }
                let _ = sd_notify::notify(&[NotifyState::Status(&format!(
                    "listening on {}", socket.path.display()
                ))]);
            }
            _ = watchdog_tick.tick(), if watchdog.is_some() => {
                match healthy(&store, &server_task).await {
                    Ok(()) => { let _ = sd_notify::notify(&[NotifyState::Watchdog]); }
                    Err(problem) => tracing::error!(
                        "health check failed, withholding the watchdog ping: {problem}"
                    ),
                }
            }
            result = &mut server_task => {
                tracing::error!(?result, "the control server stopped unexpectedly");
                break "control server stopped";
            }
        }
    };

    tracing::info!(reason, "toolsmithd stopping");
    let _ = sd_notify::notify(&[
        NotifyState::Stopping,
        NotifyState::Status(&format!("stopping ({reason})")),
    ]);
    events.publish(Event::DaemonStopping {
        reason: reason.to_owned(),
    });
    let _ = shutdown_tx.send(true);
    if !server_task.is_finished() {
        let _ = server_task.await;
    }
    // The tailer stops between batches: what it stored is consistent with its checkpoints.
    let _ = tail_task.await;
    let _ = jobs_task.await;
    let _ = registry_task.await;
    socket.cleanup();
    store
        .call(move |conn| store::record_stop(conn, run_id))
        .await?;
    tracing::info!("toolsmithd stopped cleanly");
    Ok(())
}

/// Runs the log tailer, and restarts it when a reload changes the sources or the ingest
/// settings (what it read stays read: checkpoints carry over).
async fn supervise_ingest(
    store: Store,
    events: EventBus,
    stats: Arc<ingest::tail::TailStats>,
    mut configs: watch::Receiver<Arc<Config>>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let config = Arc::clone(&configs.borrow_and_update());
        let (mut specs, problems) = ingest::tail::resolve_sources(&config);
        if config.sources.is_empty() {
            // Crush keeps its log in each project: the projects agents were seen working in.
            match store
                .call(|conn| crate::action::stored::distinct_cwds(conn, 10_000))
                .await
            {
                Ok(projects) => specs.extend(ingest::tail::seen_project_sources(&projects)),
                Err(err) => tracing::warn!("cannot list the projects seen for Crush: {err}"),
            }
        }
        for problem in &problems {
            tracing::warn!(source = %problem.name, "log source not read: {}", problem.reason);
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let tailer = ingest::tail::Tailer::new(
            store.clone(),
            specs,
            ingest::reader::ReadOptions::from_settings(&config.ingest, false),
            Duration::from_millis(config.ingest.debounce_ms.value.into()),
            Duration::from_secs(config.daemon.shutdown_grace_s.value.into()),
            events.clone(),
            Arc::clone(&stats),
        );
        let mut task = tokio::spawn(tailer.run(stop_rx));
        let restart = loop {
            tokio::select! {
                _ = shutdown.wait_for(|stop| *stop) => break false,
                changed = configs.changed() => {
                    if changed.is_err() {
                        break false;
                    }
                    let new = Arc::clone(&configs.borrow_and_update());
                    if new.sources != config.sources || new.ingest != config.ingest {
                        break true;
                    }
                }
                ended = &mut task => {
                    if let Err(err) = ended {
                        tracing::error!("the log tailer stopped: {err}");
                    }
                    return;
                }
            }
        };
        let _ = stop_tx.send(true);
        let _ = task.await;
        if !restart {
            return;
        }
        tracing::info!("log sources or ingest settings changed: ingest restarted");
        events.publish(Event::IngestRestarted);
    }
}

/// The main loop's evidence that the daemon works: the store answers and the server runs.
async fn healthy(store: &Store, server: &tokio::task::JoinHandle<()>) -> Result<(), String> {
    if server.is_finished() {
        return Err("the control server is not running".into());
    }
    let ping = store.call(|conn| store::ping(conn));
    match tokio::time::timeout(Duration::from_secs(5), ping).await {
        Ok(Ok(1)) => Ok(()),
        Ok(Ok(other)) => Err(format!("the store answered its ping with {other}, not 1")),
        Ok(Err(e)) => Err(format!("the store failed: {e}")),
        Err(_) => Err("the store did not answer within 5 s".into()),
    }
}
