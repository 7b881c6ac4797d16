//! The daemon's control methods, behind the transport-agnostic [`Methods`] trait.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::config::{Config, ConfigRequest};
use crate::control::RpcError;
use crate::control::protocol;
use crate::control::server::{Limits, Methods, Stats};
use crate::events::{Event, EventBus};
use crate::generate::review;
use crate::logging::Logging;
use crate::registry::repo::Registry;
use crate::sandbox::Need;
use crate::store::{self, DaemonRun, Store};
use crate::validate::needs::Levels;

/// What the API is built from.
pub(super) struct Parts {
    pub config: Config,
    pub request: ConfigRequest,
    pub logging: Logging,
    pub store: Store,
    pub events: EventBus,
    pub stats: Arc<Stats>,
    pub limits: Arc<Limits>,
    pub stop: mpsc::Sender<&'static str>,
    pub jobs: mpsc::Sender<super::jobs::JobRequest>,
    pub socket_path: PathBuf,
    pub socket_activated: bool,
    pub previous_run: Option<DaemonRun>,
}

/// The daemon's state as the control methods see it.
pub(super) struct DaemonApi {
    /// The configuration in force; reloads send the new one, which restarts what depends on it.
    config: watch::Sender<Arc<Config>>,
    request: ConfigRequest,
    logging: Logging,
    store: Store,
    events: EventBus,
    stats: Arc<Stats>,
    limits: Arc<Limits>,
    stop: mpsc::Sender<&'static str>,
    jobs: mpsc::Sender<super::jobs::JobRequest>,
    socket_path: PathBuf,
    socket_activated: bool,
    previous_run: Option<DaemonRun>,
    tail_stats: Arc<crate::ingest::tail::TailStats>,
    started: Instant,
    started_at: jiff::Timestamp,
    reloads: AtomicU64,
    // Serialises reloads so two concurrent ones cannot interleave their half-applied changes.
    reload_lock: tokio::sync::Mutex<()>,
}

impl DaemonApi {
    pub(super) fn new(parts: Parts) -> Self {
        DaemonApi {
            config: watch::Sender::new(Arc::new(parts.config)),
            request: parts.request,
            logging: parts.logging,
            store: parts.store,
            events: parts.events,
            stats: parts.stats,
            limits: parts.limits,
            stop: parts.stop,
            jobs: parts.jobs,
            socket_path: parts.socket_path,
            socket_activated: parts.socket_activated,
            previous_run: parts.previous_run,
            tail_stats: Arc::default(),
            started: Instant::now(),
            started_at: jiff::Timestamp::now(),
            reloads: AtomicU64::new(0),
            reload_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// The tailer's counters, shared with it.
    pub(super) fn tail_stats(&self) -> Arc<crate::ingest::tail::TailStats> {
        Arc::clone(&self.tail_stats)
    }

    /// A receiver that sees every configuration a reload puts in force.
    pub(super) fn config_changes(&self) -> watch::Receiver<Arc<Config>> {
        self.config.subscribe()
    }

    fn config(&self) -> Arc<Config> {
        Arc::clone(&self.config.borrow())
    }

    /// Re-reads the configuration the same way start-up did. On error the old one stays.
    pub(super) async fn reload(&self) -> Result<Value, RpcError> {
        let _serial = self.reload_lock.lock().await;
        let request = self.request.clone();
        let loaded =
            tokio::task::spawn_blocking(move || request.load(&crate::daemon::checks::STAGES))
                .await
                .map_err(|e| RpcError::new(protocol::INTERNAL_ERROR, e.to_string()))?;
        let new = match loaded {
            Ok(config) => config,
            Err(err) => {
                let message = format!("configuration not reloaded, the previous one stays: {err}");
                self.events.publish(Event::ConfigReloadFailed {
                    error: err.to_string(),
                });
                return Err(RpcError::new(protocol::FAILED, message));
            }
        };
        let old = self.config();
        let restart_required = old.restart_required(&new);
        if let Err(err) = self.logging.apply_config_level(&new.daemon.log_level.value) {
            return Err(RpcError::new(protocol::FAILED, err.to_string()));
        }
        self.limits
            .max_connections
            .store(new.daemon.max_connections.value, Ordering::Relaxed);
        self.limits
            .max_subscriptions
            .store(new.daemon.max_subscriptions.value, Ordering::Relaxed);
        self.limits
            .max_request_bytes
            .store(new.max_request_bytes(), Ordering::Relaxed);
        self.limits
            .set_timeouts(new.idle_timeout(), new.partial_line_timeout());
        for key in &restart_required {
            tracing::warn!(
                key,
                "changed in the configuration; takes effect after a restart"
            );
        }
        let file = new.file.as_ref().map(|f| f.path.display().to_string());
        self.config.send_replace(Arc::new(new));
        self.reloads.fetch_add(1, Ordering::Relaxed);
        let outcome = json!({
            "reloaded": true,
            "config_file": file,
            "restart_required": restart_required,
        });
        self.events.publish(Event::ConfigReloaded {
            config_file: file,
            restart_required: restart_required.iter().map(|k| (*k).to_owned()).collect(),
        });
        Ok(outcome)
    }

    async fn status(&self) -> Result<Value, RpcError> {
        let config = self.config();
        let counts = self
            .store
            .call(|conn| store::daemon_run_count(conn))
            .await
            .map_err(|e| RpcError::new(protocol::INTERNAL_ERROR, e.to_string()))?;
        let mut counters = self.stats.to_json();
        if let Value::Object(map) = &mut counters {
            map.insert("events_published".into(), self.events.published().into());
            map.insert("event_receivers".into(), self.events.receivers().into());
            map.insert(
                "config_reloads".into(),
                self.reloads.load(Ordering::Relaxed).into(),
            );
            map.insert("daemon_runs".into(), counts.into());
            let t = &self.tail_stats;
            let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
            map.insert(
                "ingest".into(),
                json!({
                    "files": get(&t.files),
                    "bytes": get(&t.bytes),
                    "actions": get(&t.actions),
                    "results": get(&t.results),
                    "problems": get(&t.problems),
                    "rounds": get(&t.rounds),
                    "rescans": get(&t.rescans),
                    "opens": get(&t.opens),
                    "skipped": get(&t.skipped),
                    "write_failures": get(&t.write_failures),
                    "retrying": get(&t.retrying),
                    "last_write_failure": t
                        .last_write_failure
                        .lock()
                        .ok()
                        .and_then(|last| last.clone()),
                }),
            );
        }
        Ok(json!({
            "version": env!("CARGO_PKG_VERSION"),
            "pid": std::process::id(),
            "started_at": self.started_at.to_string(),
            "uptime_s": self.started.elapsed().as_secs(),
            "memory_rss_kib": resident_kib(),
            "config_file": config.file,
            "state_dir": config.paths.state.value,
            "registry_dir": config.paths.registry.value,
            "socket": self.socket_path,
            "socket_activated": self.socket_activated,
            "store": self.store.path(),
            "schema_version": store::SCHEMA_VERSION,
            "log_target": self.logging.target(),
            "previous_run": self.previous_run.as_ref().map(|run| json!({
                "pid": run.pid,
                "version": run.version,
                "clean_stop": run.stopped_at.is_some(),
            })),
            "counters": counters,
        }))
    }
}

/// This process's resident memory from `/proc/self/status`, if readable.
fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn no_params(method: &str, params: &Value) -> Result<(), RpcError> {
    match params {
        Value::Null => Ok(()),
        Value::Object(map) if map.is_empty() => Ok(()),
        Value::Array(items) if items.is_empty() => Ok(()),
        _ => Err(RpcError::invalid_params(
            method,
            "this method takes no parameters",
        )),
    }
}

/// What `generate.run` is asked: nothing (the pending work), `"pending"`,
/// `{"pattern": ID}`, `{"request": {"text": …, "examples": […]}}`, `{"heal": {"tool": …,
/// "manual": …}}`, `{"adopt": {"tool": …}}`, `{"accept_spec": {"id": …}}` or
/// `{"reject_spec": {"id": …, "reason": …}}`.
fn generate_job(params: &Value) -> Result<crate::generate::pipeline::Job, RpcError> {
    use crate::generate::pipeline::Job;
    match params {
        Value::Null => Ok(Job::Pending),
        Value::Object(map) if map.is_empty() => Ok(Job::Pending),
        other => serde_json::from_value::<Job>(other.clone()).map_err(|e| {
            RpcError::invalid_params(
                "generate.run",
                format!(
                    "{e}; give nothing, {{\"pattern\": ID}}, {{\"request\": {{\"text\": \
                     WHAT, \"examples\": [CMD, …]}}}}, {{\"adopt\": {{\"tool\": NAME}}}}, \
                     {{\"accept_spec\": {{\"id\": ID}}}} or {{\"reject_spec\": {{\"id\": ID, \
                     \"reason\": WHY}}}}"
                ),
            )
        }),
    }
}

impl Methods for DaemonApi {
    async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "status" => {
                no_params(method, &params)?;
                self.status().await
            }
            "config.reload" => {
                no_params(method, &params)?;
                self.reload().await
            }
            "mine.run" => {
                no_params(method, &params)?;
                let (reply, answer) = tokio::sync::oneshot::channel();
                let request = super::jobs::JobRequest {
                    job: super::jobs::MINE,
                    generate: None,
                    reply,
                };
                self.jobs.send(request).await.map_err(|_| {
                    RpcError::new(protocol::FAILED, "the daemon is stopping: no mining now")
                })?;
                match answer.await {
                    Ok(Ok(summary)) => Ok(summary.to_json()),
                    Ok(Err(err)) => Err(RpcError::new(
                        protocol::FAILED,
                        format!("mining failed: {err}"),
                    )),
                    Err(_) => Err(RpcError::new(
                        protocol::FAILED,
                        "the daemon stopped before mining finished",
                    )),
                }
            }
            "health.run" => {
                no_params(method, &params)?;
                let (reply, answer) = tokio::sync::oneshot::channel();
                let request = super::jobs::JobRequest {
                    job: super::jobs::HEALTH,
                    generate: None,
                    reply,
                };
                self.jobs.send(request).await.map_err(|_| {
                    RpcError::new(
                        protocol::FAILED,
                        "the daemon is stopping: no health check now",
                    )
                })?;
                match answer.await {
                    Ok(Ok(report)) => Ok(report.to_json()),
                    Ok(Err(err)) => Err(RpcError::new(
                        protocol::FAILED,
                        format!("the health check failed: {err}"),
                    )),
                    Err(_) => Err(RpcError::new(
                        protocol::FAILED,
                        "the daemon stopped before the health check finished",
                    )),
                }
            }
            "generate.run" => {
                let job = generate_job(&params)?;
                let (reply, answer) = tokio::sync::oneshot::channel();
                let request = super::jobs::JobRequest {
                    job: super::jobs::GENERATE,
                    generate: Some(job),
                    reply,
                };
                self.jobs.send(request).await.map_err(|_| {
                    RpcError::new(
                        protocol::FAILED,
                        "the daemon is stopping: no generation now",
                    )
                })?;
                match answer.await {
                    Ok(Ok(report)) => Ok(report.to_json()),
                    Ok(Err(err)) => Err(RpcError::new(protocol::FAILED, err.to_string())),
                    Err(_) => Err(RpcError::new(
                        protocol::FAILED,
                        "the daemon stopped before generation finished",
                    )),
                }
            }
            "registry.approve" => {
                let key = params
                    .get("candidate")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        RpcError::new(
                            protocol::INVALID_PARAMS,
                            "registry.approve takes {\"candidate\": \"c-…\", \"note\": \"…\", \
                             \"grants\": [\"program:curl\", …]}",
                        )
                    })?
                    .to_owned();
                let note = params
                    .get("note")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let grants = params
                    .get("grants")
                    .and_then(Value::as_array)
                    .map(|all| {
                        all.iter()
                            .map(|g| Need::parse(g.as_str().unwrap_or_default()))
                            .collect::<Result<Vec<Need>, String>>()
                    })
                    .transpose()
                    .map_err(|e| RpcError::new(protocol::INVALID_PARAMS, e))?
                    .unwrap_or_default();
                let levels = Levels::load(self.config().generate.policy.value.as_deref())
                    .map_err(|e| RpcError::new(protocol::FAILED, e.to_string()))?;
                if let Some(why) = review::denied_grant(&levels, &grants) {
                    return Err(RpcError::new(protocol::FAILED, why));
                }
                let dir = self.config().paths.registry.value.clone();
                let state = self.config().paths.state.value.clone();
                let landed = tokio::task::spawn_blocking(move || {
                    let registry = Registry::open_or_init(&dir, &state)?;
                    let approver = registry.approver();
                    registry.approve_granting(&key, &approver, note.as_deref(), &grants)
                })
                .await
                .map_err(|e| RpcError::new(protocol::FAILED, e.to_string()))?
                .map_err(|e| RpcError::new(protocol::FAILED, e.to_string()))?;
                let recorded = landed.clone();
                self.store
                    .call(move |conn| review::record_landed(conn, &[recorded]))
                    .await
                    .map_err(|e| RpcError::new(protocol::FAILED, e.to_string()))?;
                self.events.publish(landed.event());
                Ok(json!(landed))
            }
            "daemon.shutdown" => {
                no_params(method, &params)?;
                // A full channel means a stop is already under way: the answer is the same.
                let _ = self.stop.try_send("daemon.shutdown request");
                Ok(json!({"stopping": true}))
            }
            _ => Err(RpcError::new(
                protocol::METHOD_NOT_FOUND,
                format!(
                    "unknown method `{method}`; available: status, config.reload, \
                     daemon.shutdown, mine.run, generate.run, health.run, registry.approve, \
                     events.subscribe"
                ),
            )),
        }
    }
}
