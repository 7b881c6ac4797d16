//! The control socket's server side: framing, peer checks, limits, dispatch and event streams.
//!
//! Shaped like mini-redis: an accept loop hands each connection to its own task; a watch channel
//! announces shutdown; every connection task holds a clone of a completion sender, so shutdown
//! knows when the last one has finished. Methods themselves live behind the [`Methods`] trait, so
//! this module knows the protocol and nothing of the pipeline.
//!
//! A connection holds one of `max_connections` slots, so none may hold it for nothing: an idle
//! connection (no request under way, not subscribed) is closed after the idle timeout, a request
//! line begun but not finished within the partial-line timeout is answered with an error and its
//! connection closed, and a peer that does not read what it is sent (a full socket buffer for
//! as long as the idle timeout) is dropped. A subscription is not idle: it may stay for as long
//! as its peer reads, so it may not stay in a request's slot. Subscribing moves the connection
//! into a pool of its own, `max_subscriptions` slots, and gives its request slot back; a
//! subscriber over that limit gets an error (its connection stays, as a request connection).
//! However many subscribers there are, `max_connections` slots stay for requests such as
//! `status` and `stop`.

use std::future::Future;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc, watch};

use super::protocol::{self, Notification, Response, RpcError};
use crate::events::EventBus;
use crate::host;

/// The methods a server offers. The daemon implements it; tests may implement small ones.
pub trait Methods: Send + Sync + 'static {
    /// Runs `method` with `params`. Unknown methods return [`protocol::METHOD_NOT_FOUND`].
    fn call(
        &self,
        method: &str,
        params: Value,
    ) -> impl Future<Output = Result<Value, RpcError>> + Send;
}

/// Limits that may change while the server runs (a config reload updates them).
#[derive(Debug)]
pub struct Limits {
    /// Connections open at once, not counting subscribed ones.
    pub max_connections: AtomicU32,
    /// Connections subscribed to events at once, in a pool of their own.
    pub max_subscriptions: AtomicU32,
    /// Largest request line in bytes.
    pub max_request_bytes: AtomicUsize,
    /// Milliseconds a connection may wait between requests (not counting subscriptions).
    pub idle_timeout_ms: AtomicU64,
    /// Milliseconds a request line may take to arrive once begun.
    pub partial_line_timeout_ms: AtomicU64,
}

impl Limits {
    /// Limits with the given values.
    pub fn new(
        max_connections: u32,
        max_subscriptions: u32,
        max_request_bytes: usize,
        idle_timeout: Duration,
        partial_line_timeout: Duration,
    ) -> Self {
        Limits {
            max_connections: AtomicU32::new(max_connections),
            max_subscriptions: AtomicU32::new(max_subscriptions),
            max_request_bytes: AtomicUsize::new(max_request_bytes),
            idle_timeout_ms: AtomicU64::new(millis(idle_timeout)),
            partial_line_timeout_ms: AtomicU64::new(millis(partial_line_timeout)),
        }
    }

    /// Puts new timeouts in force (a reload); connections use them from their next wait.
    pub fn set_timeouts(&self, idle: Duration, partial_line: Duration) {
        self.idle_timeout_ms.store(millis(idle), Ordering::Relaxed);
        self.partial_line_timeout_ms
            .store(millis(partial_line), Ordering::Relaxed);
    }

    fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms.load(Ordering::Relaxed))
    }

    fn partial_line_timeout(&self) -> Duration {
        Duration::from_millis(self.partial_line_timeout_ms.load(Ordering::Relaxed))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Counters of what the server has seen, reported by `status`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections currently open for requests (subscribed ones are counted in `subscribed`).
    pub open: AtomicU32,
    /// Connections currently subscribed to events.
    pub subscribed: AtomicU32,
    /// Subscriptions refused because `max_subscriptions` were open.
    pub refused_subscriptions: AtomicU64,
    /// Connections accepted and served.
    pub accepted: AtomicU64,
    /// Connections refused because the peer's uid was not allowed.
    pub refused_peer: AtomicU64,
    /// Connections refused because too many were open.
    pub refused_busy: AtomicU64,
    /// Requests handled (including failed ones).
    pub requests: AtomicU64,
    /// Requests answered with an error.
    pub errors: AtomicU64,
    /// Connections closed after the idle timeout.
    pub closed_idle: AtomicU64,
    /// Connections closed because a request line was not finished in time.
    pub closed_partial: AtomicU64,
    /// Connections dropped because their peer did not read what it was sent.
    pub closed_unread: AtomicU64,
}

impl Stats {
    /// The counters as a JSON object.
    pub fn to_json(&self) -> Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        json!({
            "connections_open": self.open.load(Ordering::Relaxed),
            "connections_accepted": get(&self.accepted),
            "connections_refused_peer": get(&self.refused_peer),
            "connections_refused_busy": get(&self.refused_busy),
            "subscriptions_open": self.subscribed.load(Ordering::Relaxed),
            "subscriptions_refused": get(&self.refused_subscriptions),
            "requests": get(&self.requests),
            "request_errors": get(&self.errors),
            "connections_closed_idle": get(&self.closed_idle),
            "connections_closed_partial_line": get(&self.closed_partial),
            "connections_closed_unread": get(&self.closed_unread),
        })
    }
}

/// Everything a connection task needs, shared by all of them.
struct Shared<M> {
    methods: Arc<M>,
    events: EventBus,
    limits: Arc<Limits>,
    stats: Arc<Stats>,
    shutdown: watch::Receiver<bool>,
    allowed_uid: u32,
}

/// A control server bound to a listening socket.
pub struct Server<M> {
    listener: UnixListener,
    shared: Arc<Shared<M>>,
    grace: Duration,
}

impl<M: Methods> Server<M> {
    /// A server that answers on `listener` until `shutdown` becomes true.
    pub fn new(
        listener: UnixListener,
        methods: Arc<M>,
        events: EventBus,
        limits: Arc<Limits>,
        stats: Arc<Stats>,
        shutdown: watch::Receiver<bool>,
        grace: Duration,
    ) -> Self {
        Server {
            listener,
            shared: Arc::new(Shared {
                methods,
                events,
                limits,
                stats,
                shutdown,
                allowed_uid: nix::unistd::geteuid().as_raw(),
            }),
            grace,
        }
    }

    /// Accepts connections until shutdown, then waits up to the grace period for open
    /// connections to finish their in-flight requests.
    pub async fn run(self) {
        let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
        let mut shutdown = self.shared.shutdown.clone();
        let mut backoff = Duration::from_millis(10);
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                _ = stopped(&mut shutdown) => break,
            };
            let stream = match accepted {
                Ok((stream, _)) => {
                    backoff = Duration::from_millis(10);
                    stream
                }
                Err(err) => {
                    // EMFILE and friends: wait instead of spinning; the listener stays usable.
                    tracing::warn!(error = %err, "control socket accept failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            // Counted here, in accept order, so that the connection refused as busy is always
            // the newest one.
            let open = self.shared.stats.open.fetch_add(1, Ordering::AcqRel) + 1;
            let slot = Slot {
                stats: Arc::clone(&self.shared.stats),
                subscribed: false,
            };
            let shared = Arc::clone(&self.shared);
            let done = done_tx.clone();
            tokio::spawn(async move {
                admit_and_serve(stream, open, slot, shared).await;
                drop(done);
            });
        }
        drop(done_tx);
        if tokio::time::timeout(self.grace, done_rx.recv())
            .await
            .is_err()
        {
            tracing::warn!(
                open = self.shared.stats.open.load(Ordering::Relaxed),
                "control connections still open after the shutdown grace period; closing them"
            );
        }
    }
}

/// Checks the peer and the connection limit, then serves the connection.
async fn admit_and_serve<M: Methods>(
    mut stream: UnixStream,
    open: u32,
    mut slot: Slot,
    shared: Arc<Shared<M>>,
) {
    let stats = &shared.stats;
    let cred = match stream.peer_cred() {
        Ok(cred) => cred,
        Err(err) => {
            tracing::warn!(error = %err, "cannot read the control peer's credentials; closing");
            return;
        }
    };
    if cred.uid() != shared.allowed_uid && cred.uid() != 0 {
        stats.refused_peer.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            peer_uid = cred.uid(),
            peer_pid = cred.pid(),
            daemon_uid = shared.allowed_uid,
            "refused a control connection from another user"
        );
        let error = RpcError::new(
            protocol::UNAUTHORIZED,
            format!(
                "permission denied: this toolsmithd serves uid {} and root only, not uid {}",
                shared.allowed_uid,
                cred.uid()
            ),
        );
        let _ = write_line(&mut stream, &Response::err(Value::Null, error)).await;
        return;
    }
    if let Some(why) = sandboxed_peer(&stream, cred.pid()) {
        stats.refused_peer.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            peer_uid = cred.uid(),
            peer_pid = cred.pid(),
            "refused a control connection from inside a sandbox: {why}"
        );
        let error = RpcError::new(
            protocol::UNAUTHORIZED,
            format!(
                "permission denied: this connection comes from inside a sandbox ({why}); \
                 toolsmithd takes no requests from sandboxed code, only from its user's own \
                 processes outside any sandbox"
            ),
        );
        let _ = write_line(&mut stream, &Response::err(Value::Null, error)).await;
        return;
    }
    let max = shared.limits.max_connections.load(Ordering::Relaxed);
    if open > max {
        stats.refused_busy.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(open, max, "refused a control connection: too many open");
        let error = RpcError::new(
            protocol::BUSY,
            format!(
                "busy: {max} control connections are open (daemon.max_connections); retry later"
            ),
        );
        let _ = write_line(&mut stream, &Response::err(Value::Null, error)).await;
        return;
    }
    stats.accepted.fetch_add(1, Ordering::Relaxed);
    serve(stream, &mut slot, &shared).await;
}

/// Why the peer must be refused as a sandboxed process, or `None` (see
/// [`host::sandboxed_process`]). `SO_PEERCRED` names the process that connected, by a pid that
/// could be reused once it is gone: a pidfd (`SO_PEERPIDFD`, Linux 6.5) shows after the
/// inspection that it was still that process, and a process already gone is refused (whoever
/// holds its connection now is unknown). A pid of 0 is a process outside the daemon's pid
/// namespace (a daemon in a container reached from the host): above it, not in one of its
/// sandboxes.
fn sandboxed_peer(stream: &UnixStream, pid: Option<i32>) -> Option<String> {
    let pid = match pid {
        Some(0) => return None,
        Some(pid) => pid,
        None => return Some("its process cannot be named (no SO_PEERCRED pid)".into()),
    };
    let pidfd = peer_pidfd(stream);
    let verdict = match host::sandboxed_process(pid) {
        Ok(verdict) => verdict,
        Err(e) => return Some(format!("its process {pid} cannot be inspected ({e})")),
    };
    if verdict.is_none()
        && let Some(fd) = &pidfd
        && !alive(fd)
    {
        return Some(format!("its process {pid} is gone"));
    }
    verdict
}

/// `SO_PEERPIDFD` where the kernel (6.5+) and the architecture's socket options have it.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "loongarch64",
    target_arch = "s390x",
    target_arch = "powerpc64"
))]
fn peer_pidfd(stream: &UnixStream) -> Option<OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    /// The generic value (`asm-generic/socket.h`), which these architectures use.
    const SO_PEERPIDFD: libc::c_int = 77;
    let mut fd: libc::c_int = -1;
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).ok()?;
    // SAFETY: getsockopt writes at most `len` bytes into `fd`, a c_int of that size.
    let ret = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            (&raw mut fd).cast(),
            &raw mut len,
        )
    };
    // SAFETY: on success the kernel gave us a new descriptor, owned by nothing else.
    (ret == 0 && fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "loongarch64",
    target_arch = "s390x",
    target_arch = "powerpc64"
)))]
fn peer_pidfd(_stream: &UnixStream) -> Option<OwnedFd> {
    None
}

/// Whether the process a pidfd refers to still runs (signal 0 checks without sending).
fn alive(pidfd: &OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal with signal 0 and no info only checks the target exists and
    // may be signalled.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            0,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    ret == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The slot a connection holds: a request slot (counted in `Stats::open`) or, once subscribed,
/// a subscription slot (`Stats::subscribed`). Gives it back when the connection's task ends,
/// however it ends.
struct Slot {
    stats: Arc<Stats>,
    subscribed: bool,
}

impl Slot {
    /// Moves the connection from its request slot to a subscription slot, when one of `max` is
    /// free; how many are taken otherwise.
    fn subscribe(&mut self, max: u32) -> Result<(), u32> {
        if self.subscribed {
            return Ok(());
        }
        self.stats
            .subscribed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })?;
        self.stats.open.fetch_sub(1, Ordering::AcqRel);
        self.subscribed = true;
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.subscribed {
            self.stats.subscribed.fetch_sub(1, Ordering::AcqRel);
        } else {
            self.stats.open.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

async fn write_line<T: serde::Serialize>(stream: &mut UnixStream, msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line).await
}

/// Serves requests on one connection until the peer closes it, the daemon shuts down, or a
/// timeout ends it (idle, a half-sent line, a peer that does not read).
async fn serve<M: Methods>(stream: UnixStream, slot: &mut Slot, shared: &Shared<M>) {
    let (read, mut write) = stream.into_split();
    // Responses and events share one ordered, bounded queue to the socket.
    let (out_tx, mut out_rx) = mpsc::channel::<Vec<u8>>(256);
    let limits = Arc::clone(&shared.limits);
    let stats = Arc::clone(&shared.stats);
    let writer = tokio::spawn(async move {
        while let Some(line) = out_rx.recv().await {
            // A peer that lets its socket buffer fill and stay full for the idle timeout is
            // not reading: it loses the connection rather than holding it (and what is queued
            // for it) forever.
            match tokio::time::timeout(limits.idle_timeout(), write.write_all(&line)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => break,
                Err(_) => {
                    stats.closed_unread.fetch_add(1, Ordering::Relaxed);
                    tracing::info!("closed a control connection whose peer does not read");
                    break;
                }
            }
        }
        let _ = write.shutdown().await;
    });
    let mut reader = FrameReader::new(read);
    let mut shutdown = shared.shutdown.clone();
    let mut forwarder: Option<tokio::task::JoinHandle<()>> = None;
    // Since when the connection has waited for a request with nothing under way.
    let mut idle_since = Instant::now();
    loop {
        let max = shared.limits.max_request_bytes.load(Ordering::Relaxed);
        let partial = shared.limits.partial_line_timeout();
        // A subscriber waits for events, not requests; a line under way has its own deadline.
        let idle_deadline = (forwarder.is_none() && !reader.in_progress())
            .then(|| idle_since + shared.limits.idle_timeout());
        let frame = tokio::select! {
            frame = reader.next_frame(max, partial) => frame,
            _ = stopped(&mut shutdown) => break,
            // The writer gave up on the peer.
            _ = out_tx.closed() => break,
            _ = sleep_until(idle_deadline) => {
                if reader.in_progress() {
                    // A line began meanwhile: its own deadline applies from now on.
                    continue;
                }
                shared.stats.closed_idle.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("closed an idle control connection");
                break;
            }
        };
        let reply = match frame {
            Ok(Frame::Eof) | Err(_) => break,
            Ok(Frame::Unfinished { bytes }) => {
                shared.stats.closed_partial.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    bytes,
                    "closed a control connection whose request line stalled"
                );
                let error = RpcError::new(
                    protocol::INVALID_REQUEST,
                    format!(
                        "request line not finished within {} s ({bytes} bytes without a newline; \
                         daemon.partial_line_timeout_s): closing the connection. Send each \
                         request as one line ending in a newline",
                        partial.as_secs_f64()
                    ),
                );
                let _ = out_tx
                    .send(encode(&Response::err(Value::Null, error)))
                    .await;
                break;
            }
            Ok(Frame::TooLarge { bytes }) => Some(Response::err(
                Value::Null,
                RpcError::new(
                    protocol::REQUEST_TOO_LARGE,
                    format!(
                        "request too large: {bytes} bytes, the limit is {max} \
                         (daemon.max_request_kib); the connection stays open"
                    ),
                ),
            )),
            Ok(Frame::Line(line)) => match protocol::parse_request(&line) {
                Err(response) => Some(*response),
                Ok(request) if request.method == "events.subscribe" => {
                    let result = subscribe(&request.params, shared, slot, &out_tx, &mut forwarder);
                    request.id.map(|id| match result {
                        Ok(value) => Response::ok(id, value),
                        Err(error) => Response::err(id, error),
                    })
                }
                Ok(request) => {
                    let result = shared.methods.call(&request.method, request.params).await;
                    request.id.map(|id| match result {
                        Ok(value) => Response::ok(id, value),
                        Err(error) => Response::err(id, error),
                    })
                }
            },
        };
        shared.stats.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(reply) = reply {
            if reply.error.is_some() {
                shared.stats.errors.fetch_add(1, Ordering::Relaxed);
            }
            if out_tx.send(encode(&reply)).await.is_err() {
                break;
            }
        }
        // Idle from the end of the answer: a long request is not idleness.
        idle_since = Instant::now();
    }
    if let Some(forwarder) = forwarder {
        // It drains what was already published (such as daemon.stopping) and ends on shutdown;
        // on a plain disconnect there is nothing left worth sending.
        if *shared.shutdown.borrow() {
            let _ = tokio::time::timeout(Duration::from_secs(1), forwarder).await;
        } else {
            forwarder.abort();
        }
    }
    drop(out_tx);
    let _ = writer.await;
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Resolves once shutdown has been announced. (Holding `wait_for`'s guard across an await would
/// make the task `!Send`.)
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

fn encode<T: serde::Serialize>(msg: &T) -> Vec<u8> {
    // Our own types always serialize; the fallback keeps the stream line-framed regardless.
    let mut line = serde_json::to_vec(msg).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

/// Starts forwarding events to this connection. Params: `{"kinds": ["prefix", …]}` (optional):
/// only events whose kind starts with one of the prefixes are sent.
fn subscribe<M>(
    params: &Value,
    shared: &Shared<M>,
    slot: &mut Slot,
    out: &mpsc::Sender<Vec<u8>>,
    forwarder: &mut Option<tokio::task::JoinHandle<()>>,
) -> Result<Value, RpcError> {
    let kinds: Vec<String> = match params.get("kinds") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|k| k.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| RpcError::invalid_params("events.subscribe", "kinds must be strings"))?,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "events.subscribe",
                "kinds must be an array of kind prefixes",
            ));
        }
    };
    if !matches!(params, Value::Null | Value::Object(_)) {
        return Err(RpcError::invalid_params(
            "events.subscribe",
            "params must be an object",
        ));
    }
    if forwarder.is_some() {
        return Err(RpcError::new(
            protocol::INVALID_REQUEST,
            "this connection is already subscribed",
        ));
    }
    let max = shared.limits.max_subscriptions.load(Ordering::Relaxed);
    if let Err(open) = slot.subscribe(max) {
        shared
            .stats
            .refused_subscriptions
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(open, max, "refused an event subscription: too many open");
        return Err(RpcError::new(
            protocol::BUSY,
            format!(
                "busy: {open} event subscriptions are open, the limit is {max} \
                 (daemon.max_subscriptions); this connection stays open for requests. Close \
                 another subscriber (`toolsmith watch`), raise the limit, or retry later"
            ),
        ));
    }
    let mut rx = shared.events.subscribe();
    let out = out.clone();
    let mut shutdown = shared.shutdown.clone();
    *forwarder = Some(tokio::spawn(async move {
        loop {
            let received = tokio::select! {
                biased;
                received = rx.recv() => received,
                _ = stopped(&mut shutdown) => {
                    // Flush what is already queued, then stop.
                    while let Ok(event) = rx.try_recv() {
                        if !forward(&out, &kinds, &event).await { break; }
                    }
                    break;
                }
            };
            let keep_going = match received {
                Ok(event) => forward(&out, &kinds, &event).await,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    let lagged = crate::events::Event::EventsLagged { missed };
                    let note = Notification {
                        jsonrpc: "2.0".into(),
                        method: protocol::EVENT_NOTIFICATION.into(),
                        params: json!({"kind": lagged.kind(), "data": lagged.data()}),
                    };
                    out.send(encode(&note)).await.is_ok()
                }
                Err(broadcast::error::RecvError::Closed) => false,
            };
            if !keep_going {
                break;
            }
        }
    }));
    Ok(json!({"subscribed": true}))
}

async fn forward(
    out: &mpsc::Sender<Vec<u8>>,
    kinds: &[String],
    event: &crate::events::Published,
) -> bool {
    if !kinds.is_empty() && !kinds.iter().any(|k| event.kind().starts_with(k.as_str())) {
        return true;
    }
    let note = Notification {
        jsonrpc: "2.0".into(),
        method: protocol::EVENT_NOTIFICATION.into(),
        params: serde_json::to_value(event).unwrap_or(Value::Null),
    };
    out.send(encode(&note)).await.is_ok()
}

/// One unit read from a connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its newline.
    Line(Vec<u8>),
    /// A line longer than the limit; it was skipped without being buffered whole.
    TooLarge {
        /// Its length in bytes.
        bytes: usize,
    },
    /// A line began but its end did not come within the partial-line timeout.
    Unfinished {
        /// The bytes received of it.
        bytes: usize,
    },
    /// The peer closed the connection.
    Eof,
}

/// Reads newline-framed requests with a length limit, never holding more than the limit in
/// memory. Cancel-safe: all progress lives in the struct, and the only await is `fill_buf`.
pub struct FrameReader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    /// Bytes skipped of an over-long line, while skipping it.
    skipped: Option<usize>,
    /// When the first bytes of the line under way were seen.
    line_started: Option<Instant>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Wraps a reader.
    pub fn new(inner: R) -> Self {
        FrameReader {
            inner: BufReader::with_capacity(16 * 1024, inner),
            line: Vec::new(),
            skipped: None,
            line_started: None,
        }
    }

    /// Whether part of a line has arrived (a line is under way).
    pub fn in_progress(&self) -> bool {
        self.line_started.is_some() || !self.inner.buffer().is_empty()
    }

    /// The next non-empty line, or an over-long line's length, or end of stream; or
    /// [`Frame::Unfinished`] when a line began more than `partial` ago and has not ended.
    pub async fn next_frame(&mut self, max: usize, partial: Duration) -> std::io::Result<Frame> {
        loop {
            if let Some(started) = self.line_started {
                match tokio::time::timeout_at(started + partial, self.inner.fill_buf()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(e),
                    Err(_) => {
                        let bytes = self.line.len() + self.skipped.unwrap_or(0);
                        self.line = Vec::new();
                        self.skipped = None;
                        self.line_started = None;
                        return Ok(Frame::Unfinished { bytes });
                    }
                }
            }
            // Returns at once when the wait above filled the buffer.
            let buf = self.inner.fill_buf().await?;
            if !buf.is_empty() && self.line_started.is_none() {
                self.line_started = Some(Instant::now());
            }
            if buf.is_empty() {
                if let Some(bytes) = self.skipped.take() {
                    return Ok(Frame::TooLarge { bytes });
                }
                if self.line.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Ok(Frame::Line(std::mem::take(&mut self.line)));
                }
                return Ok(Frame::Eof);
            }
            let (chunk, complete) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            let used = chunk.len() + usize::from(complete);
            if let Some(skipped) = self.skipped.as_mut() {
                *skipped += chunk.len();
            } else if self.line.len() + chunk.len() > max {
                self.skipped = Some(self.line.len() + chunk.len());
                self.line = Vec::new();
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.inner.consume(used);
            if complete {
                self.line_started = None;
                if let Some(bytes) = self.skipped.take() {
                    return Ok(Frame::TooLarge { bytes });
                }
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Ok(Frame::Line(line));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = FrameReader::new(input);
        let mut out = Vec::new();
        loop {
            let frame = reader
                .next_frame(max, Duration::from_secs(10))
                .await
                .expect("read");
            let eof = frame == Frame::Eof;
            out.push(frame);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn frames_lines_skips_blank_and_oversized() {
        let mut input = b"{\"a\":1}\r\n\n  \n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100_000));
        input.extend(b"\nlast");
        let got = frames(&input, 1000).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::TooLarge { bytes: 100_000 },
                Frame::Line(b"last".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[test]
    fn a_subscription_gives_its_request_slot_back_and_has_a_pool_of_its_own() {
        let stats = Arc::new(Stats::default());
        let slot = |stats: &Arc<Stats>| {
            stats.open.fetch_add(1, Ordering::AcqRel);
            Slot {
                stats: Arc::clone(stats),
                subscribed: false,
            }
        };
        let mut first = slot(&stats);
        let mut second = slot(&stats);
        let plain = slot(&stats);
        assert_eq!(first.subscribe(1), Ok(()));
        assert_eq!(stats.open.load(Ordering::Acquire), 2);
        assert_eq!(second.subscribe(1), Err(1), "the pool of one is full");
        assert_eq!(
            stats.open.load(Ordering::Acquire),
            2,
            "the refused one keeps its slot"
        );
        drop(first);
        assert_eq!(stats.subscribed.load(Ordering::Acquire), 0);
        assert_eq!(second.subscribe(1), Ok(()));
        drop(second);
        drop(plain);
        assert_eq!(stats.open.load(Ordering::Acquire), 0);
        assert_eq!(stats.subscribed.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn line_exactly_at_the_limit_passes() {
        let got = frames(b"12345\n123456\n", 5).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"12345".to_vec()),
                Frame::TooLarge { bytes: 6 },
                Frame::Eof
            ]
        );
    }
}
