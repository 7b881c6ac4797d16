//! The filtering proxy: the only way a sandboxed command reaches the network, and only the
//! `host:port` pairs its profile was granted.
//!
//! How it is wired: the sandbox keeps its own network namespace, where the helper's supervisor
//! brings up `lo`, listens on `127.0.0.1:`[`PORT`] and hands that listening socket to the parent
//! over a unix socketpair (`SCM_RIGHTS`) before pid 1 exists. A socket stays in the namespace it
//! was made in whoever holds it, so the parent's proxy thread accepts the sandbox's connections
//! while its own connections go out through the host's network. Nothing is relayed twice, and
//! nothing of the host's network is visible inside: the command sees one loopback address with
//! one listening port (Landlock lets it connect to that port only; seccomp lets it make TCP
//! sockets only — no UDP, so no DNS of its own).
//!
//! The proxy speaks HTTP `CONNECT`, plain HTTP with an absolute URI (rewritten to origin form,
//! one request per connection), and SOCKS5 (`CONNECT`, no authentication). It admits a target
//! only when it equals a granted pair — an IP literal only when that literal is granted —,
//! resolves names itself, and answers everything else with `403` (SOCKS: "not allowed by
//! ruleset") and a reason. A granted name reaches public addresses only: an address it
//! resolves to that is loopback, private, link-local, shared or unspecified (IPv4 or IPv6,
//! IPv4-mapped included) is never connected to — DNS answers are not a grant (rebinding) —,
//! and a name resolving to nothing else is refused; only an IP literal granted as written
//! reaches such an address. Every connection is recorded ([`Connection`]): host, port, bytes each
//! way, verdict.
//!
//! Threads: one accepting, one per connection (two while relaying), at most [`MAX_LIVE`]
//! connections at once. The parent starts the proxy only after the helper is started (a forked
//! helper needs the caller single-threaded at the fork; an executed one never inherits a
//! thread's state) and stops it when the run is over — pid 1's end reported and every output
//! drained, not when the helper is reaped, which may be later and by another run: every live
//! socket is shut down, which ends every blocked read, and the threads are joined.

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use serde::Serialize;

use super::grants::HostPort;

/// The port the proxy listens on inside the sandbox's network namespace (its own namespace:
/// nothing else can hold it).
pub const PORT: u16 = 3128;

/// The proxy's address as the command's environment names it.
pub(crate) fn url() -> String {
    format!("http://127.0.0.1:{PORT}")
}

/// The environment variables that point clients at the proxy.
pub(crate) fn environment() -> Vec<(String, String)> {
    let url = url();
    [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .into_iter()
    .map(|name| (name.to_owned(), url.clone()))
    .collect()
}

/// Connections served at once; more are refused (the pids limit bounds the sandbox's
/// processes, not the parent's threads).
const MAX_LIVE: usize = 64;

/// Largest request head (request line and headers) read before a verdict.
const MAX_HEAD: usize = 16 * 1024;

/// How long a client has to send its request, and a connection to a host to be made.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the proxy did with a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Admitted and connected.
    Allowed,
    /// Refused: not granted, an IP literal, a name resolving only to internal addresses, not
    /// a proxy request, too many connections.
    Denied,
    /// Admitted, but the host could not be resolved or reached.
    Failed,
}

/// One connection the command made through the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Connection {
    /// The host asked for (empty when the request named none).
    pub host: String,
    /// The port asked for (0 when the request named none).
    pub port: u16,
    /// `connect`, `http` or `socks5`.
    pub protocol: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// Why it was denied or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bytes from the command to the host (after the request head for `connect`).
    pub bytes_up: u64,
    /// Bytes from the host to the command (the proxy's own answers not counted).
    pub bytes_down: u64,
}

impl Connection {
    fn new(protocol: &'static str) -> Self {
        Connection {
            host: String::new(),
            port: 0,
            protocol,
            verdict: Verdict::Denied,
            reason: None,
            bytes_up: 0,
            bytes_down: 0,
        }
    }
}

/// What the threads share: the records, and the live sockets to shut down at the end.
#[derive(Default)]
struct Shared {
    records: Mutex<Vec<Connection>>,
    live: Mutex<Vec<(u64, TcpStream)>>,
}

impl Shared {
    fn record(&self, connection: Connection) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(connection);
    }

    /// Registers a socket to be shut down when the proxy stops.
    fn hold(&self, id: u64, stream: &TcpStream) {
        if let Ok(clone) = stream.try_clone() {
            self.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((id, clone));
        }
    }

    fn release(&self, id: u64) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(held, _)| *held != id);
    }

    fn shut_all(&self) {
        for (_, stream) in self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// A running proxy.
pub(crate) struct Proxy {
    /// Dropping it wakes the accepting thread (its read end sees the hang-up).
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<Vec<Connection>>>,
}

impl Proxy {
    /// Starts the proxy: its thread waits for the helper's listening socket on `channel`, then
    /// serves until [`Proxy::finish`].
    pub(crate) fn start(channel: OwnedFd, granted: Vec<HostPort>) -> std::io::Result<Proxy> {
        let (stop_read, stop_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let thread = std::thread::Builder::new()
            .name("toolsmith-proxy".into())
            .spawn(move || serve(channel, stop_read, granted))?;
        Ok(Proxy {
            stop: Some(stop_write),
            thread: Some(thread),
        })
    }

    /// Stops the proxy and returns every connection it saw, in the order they ended.
    pub(crate) fn finish(mut self) -> Vec<Connection> {
        self.stop.take();
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Whether `fd` is readable (or hung up) among `fds`, waiting without a limit.
fn wait_readable(fds: &[&OwnedFd]) -> std::io::Result<Vec<bool>> {
    loop {
        let mut polled: Vec<PollFd<'_>> = fds
            .iter()
            .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
            .collect();
        match poll(&mut polled, PollTimeout::NONE) {
            Ok(_) => {
                return Ok(polled
                    .iter()
                    .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
                    .collect());
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Receives the listening socket the helper sends (`None`: the helper ended without one).
pub(crate) fn receive_listener(channel: &OwnedFd) -> std::io::Result<Option<OwnedFd>> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = loop {
        match recvmsg::<()>(
            channel.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => break msg,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    };
    let mut received = None;
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            for fd in fds {
                // SAFETY: the kernel just installed this descriptor in this process for us.
                let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                if received.is_none() {
                    received = Some(owned);
                }
            }
        }
    }
    Ok(received)
}

/// Sends the listening socket to the parent (the helper's side).
pub(crate) fn send_listener(channel: &OwnedFd, listener: &OwnedFd) -> std::io::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let fds = [listener.as_raw_fd()];
    let iov = [std::io::IoSlice::new(b"L")];
    sendmsg::<()>(
        channel.as_raw_fd(),
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )?;
    Ok(())
}

/// A connected pair of unix stream sockets, close-on-exec: the parent's end and the helper's.
pub(crate) fn channel() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (a, b) = UnixStream::pair()?;
    Ok((a.into(), b.into()))
}

/// The accepting thread.
fn serve(channel: OwnedFd, stop: OwnedFd, granted: Vec<HostPort>) -> Vec<Connection> {
    let Ok(ready) = wait_readable(&[&channel, &stop]) else {
        return Vec::new();
    };
    if ready.get(1) == Some(&true) && ready.first() != Some(&true) {
        return Vec::new();
    }
    let listener = match receive_listener(&channel) {
        Ok(Some(fd)) => TcpListener::from(fd),
        Ok(None) | Err(_) => return Vec::new(),
    };
    drop(channel);
    let listener_fd: OwnedFd = match listener.try_clone() {
        Ok(l) => l.into(),
        Err(_) => return Vec::new(),
    };
    let shared = Arc::new(Shared::default());
    let granted = Arc::new(granted);
    let mut handlers: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    while let Ok(ready) = wait_readable(&[&listener_fd, &stop]) {
        if ready.get(1) == Some(&true) {
            break;
        }
        let Ok((client, _)) = listener.accept() else {
            continue;
        };
        handlers.retain(|h| !h.is_finished());
        if handlers.len() >= MAX_LIVE {
            let mut refused = Connection::new("connect");
            refused.reason = Some(format!(
                "more than {MAX_LIVE} connections at once through the proxy"
            ));
            let _ = refuse_http(&client, 503, refused.reason.as_deref().unwrap_or(""));
            shared.record(refused);
            continue;
        }
        next_id += 1;
        let id = next_id;
        let (shared, granted) = (Arc::clone(&shared), Arc::clone(&granted));
        shared.hold(id, &client);
        let spawned = std::thread::Builder::new()
            .name("toolsmith-proxy-conn".into())
            .spawn(move || {
                let record = handle(&client, id, &granted, &shared);
                shared.release(id);
                shared.record(record);
            });
        if let Ok(handle) = spawned {
            handlers.push(handle);
        }
    }
    drop(listener);
    shared.shut_all();
    for handle in handlers {
        let _ = handle.join();
    }
    // Connections that arrive while stopping are shut down by the loop above; any left are
    // shut here (a handler that registered after `shut_all`).
    shared.shut_all();
    std::mem::take(
        &mut *shared
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    )
}

/// A parsed request: what it asks for and what to send the host first.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    protocol: &'static str,
    target: HostPort,
    /// For plain HTTP: the head rewritten to origin form, then any body bytes read with it.
    forward: Vec<u8>,
}

/// Serves one connection: request, verdict, connection, relay. Returns its record.
fn handle(client: &TcpStream, id: u64, granted: &[HostPort], shared: &Shared) -> Connection {
    let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let mut reader = client;
    // The first byte tells SOCKS5 (5) from HTTP.
    let n = match reader.read(&mut buf) {
        Ok(0) | Err(_) => {
            let mut c = Connection::new("connect");
            c.reason = Some("the client sent nothing".into());
            return c;
        }
        Ok(n) => n,
    };
    head.extend_from_slice(&buf[..n]);
    let request = if head[0] == 5 {
        socks_request(client, head)
    } else {
        http_request(client, head)
    };
    let request = match request {
        Ok(r) => r,
        Err((protocol, why)) => {
            let mut c = Connection::new(protocol);
            c.reason = Some(why.clone());
            if protocol == "socks5" {
                let _ = socks_reply(client, 0x07);
            } else {
                let _ = refuse_http(client, 400, &why);
            }
            return c;
        }
    };
    let mut record = Connection::new(request.protocol);
    record.host = request.target.host.clone();
    record.port = request.target.port;
    let socks = request.protocol == "socks5";
    if let Err(why) = admit(&request.target, granted) {
        record.reason = Some(why.clone());
        let _ = if socks {
            socks_reply(client, 0x02)
        } else {
            refuse_http(client, 403, &why)
        };
        return record;
    }
    let upstream = match connect(&request.target) {
        Ok(s) => s,
        Err(Unreached::Internal(why)) => {
            record.reason = Some(why.clone());
            let _ = if socks {
                socks_reply(client, 0x02)
            } else {
                refuse_http(client, 403, &why)
            };
            return record;
        }
        Err(Unreached::Failed(why)) => {
            record.verdict = Verdict::Failed;
            record.reason = Some(why.clone());
            let _ = if socks {
                socks_reply(client, 0x04)
            } else {
                refuse_http(client, 502, &why)
            };
            return record;
        }
    };
    record.verdict = Verdict::Allowed;
    shared.hold(id, &upstream);
    let answered = match request.protocol {
        "connect" => (&*client).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n"),
        "socks5" => socks_reply(client, 0x00),
        _ => (&upstream).write_all(&request.forward),
    };
    if answered.is_err() {
        return record;
    }
    if request.protocol == "http" {
        record.bytes_up = u64::try_from(request.forward.len()).unwrap_or(u64::MAX);
    }
    let _ = client.set_read_timeout(None);
    let (up, down) = relay(client, &upstream);
    record.bytes_up += up;
    record.bytes_down = down;
    record
}

/// Whether `target` is granted; the reason when it is not.
fn admit(target: &HostPort, granted: &[HostPort]) -> Result<(), String> {
    if granted.iter().any(|g| g == target) {
        return Ok(());
    }
    let list = granted
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if granted.iter().any(|g| g.host == target.host) {
        return Err(format!(
            "toolsmith's proxy refuses {target}: port {} of {} is not granted to this tool \
             (granted: {list})",
            target.port, target.host
        ));
    }
    if target.is_ip_literal() {
        return Err(format!(
            "toolsmith's proxy refuses {target}: an IP address is admitted only when it is \
             granted as written (this tool is granted {list})"
        ));
    }
    Err(format!(
        "toolsmith's proxy refuses {target}: the host is not granted to this tool (granted: \
         {list}); a reviewer grants hosts through the tool's manifest and the policy's [grants] \
         hosts"
    ))
}

/// Why a target was not connected to.
#[derive(Debug)]
enum Unreached {
    /// A granted name resolved only to internal addresses: refused.
    Internal(String),
    /// It could not be resolved or reached.
    Failed(String),
}

/// Whether `ip` is an address of this host or of a network behind it — loopback, private,
/// link-local, shared (carrier-grade NAT), unspecified, broadcast or multicast, an IPv4
/// address inside an IPv6 one (mapped, compatible, NAT64) judged as that IPv4 address —,
/// which a granted name must not lead to.
fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            let embedded = matches!(
                segments,
                [0, 0, 0, 0, 0, 0xffff, ..]
                    | [0, 0, 0, 0, 0, 0, ..]
                    | [0x64, 0xff9b, 0, 0, 0, 0, ..]
            );
            if embedded && !v6.is_loopback() && !v6.is_unspecified() {
                let [.., g, h] = segments;
                let v4 = std::net::Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
                return is_internal(IpAddr::V4(v4));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (segments[0] & 0xfe00) == 0xfc00
                || (segments[0] & 0xffc0) == 0xfe80
                || (segments[0] & 0xffc0) == 0xfec0
        }
    }
}

/// Resolves the target (in the host's network) and connects to the first address that answers.
/// An IP literal (granted as written) is connected to whatever it is; a name only at its public
/// addresses.
fn connect(target: &HostPort) -> Result<TcpStream, Unreached> {
    let addrs: Vec<SocketAddr> = match target.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, target.port)],
        Err(_) => {
            let resolved: Vec<SocketAddr> = (target.host.as_str(), target.port)
                .to_socket_addrs()
                .map_err(|e| Unreached::Failed(format!("cannot resolve {}: {e}", target.host)))?
                .collect();
            let (internal, public): (Vec<SocketAddr>, Vec<SocketAddr>) =
                resolved.into_iter().partition(|a| is_internal(a.ip()));
            if public.is_empty()
                && let Some(first) = internal.first()
            {
                return Err(Unreached::Internal(format!(
                    "toolsmith's proxy refuses {target}: {} resolves to {}, a loopback, private                      or link-local address, which a granted name never reaches (DNS answers are                      not grants); a reviewer who means that address grants it as an IP literal                      ({}:{})",
                    target.host,
                    first.ip(),
                    match first.ip() {
                        IpAddr::V6(v6) => format!("[{v6}]"),
                        IpAddr::V4(v4) => v4.to_string(),
                    },
                    target.port
                )));
            }
            public
        }
    };
    let mut last = format!("{} has no address", target.host);
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("cannot connect to {target} ({addr}): {e}"),
        }
    }
    Err(Unreached::Failed(last))
}

/// Copies both ways until both directions end; returns the bytes (up, down).
fn relay(client: &TcpStream, upstream: &TcpStream) -> (u64, u64) {
    let (Ok(client_read), Ok(upstream_write)) = (client.try_clone(), upstream.try_clone()) else {
        return (0, 0);
    };
    let up = std::thread::Builder::new()
        .name("toolsmith-proxy-up".into())
        .spawn(move || copy(&client_read, &upstream_write));
    let down = copy(upstream, client);
    let up = match up {
        Ok(handle) => handle.join().unwrap_or(0),
        Err(_) => 0,
    };
    (up, down)
}

/// Copies `from` to `to` until `from` ends, then ends `to`'s writing side.
fn copy(from: &TcpStream, to: &TcpStream) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    let (mut reader, mut writer) = (from, to);
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if writer.write_all(&buf[..n]).is_err() {
                    let _ = from.shutdown(Shutdown::Read);
                    break;
                }
                total += u64::try_from(n).unwrap_or(0);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    total
}

/// Writes an HTTP error with the reason as its body, and closes.
fn refuse_http(client: &TcpStream, status: u16, reason: &str) -> std::io::Result<()> {
    let phrase = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Service Unavailable",
    };
    let body = format!("{reason}\n");
    let response = format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nX-Toolsmith-Proxy: refused\r\n\r\n{body}",
        body.len()
    );
    (&*client).write_all(response.as_bytes())?;
    client.shutdown(Shutdown::Both)
}

/// Reads more of the request into `head` until `done` says it is whole.
fn read_more(
    client: &TcpStream,
    head: &mut Vec<u8>,
    protocol: &'static str,
    done: &dyn Fn(&[u8]) -> bool,
) -> Result<(), (&'static str, String)> {
    let mut buf = [0u8; 4096];
    let mut reader = client;
    while !done(head) {
        if head.len() > MAX_HEAD {
            return Err((
                protocol,
                format!("the request is longer than {MAX_HEAD} bytes"),
            ));
        }
        match reader.read(&mut buf) {
            Ok(0) => {
                return Err((
                    protocol,
                    "the client closed before its request ended".into(),
                ));
            }
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((protocol, format!("reading the request: {e}"))),
        }
    }
    Ok(())
}

fn end_of_head(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
}

/// Reads and parses an HTTP proxy request.
fn http_request(client: &TcpStream, mut head: Vec<u8>) -> Result<Request, (&'static str, String)> {
    read_more(client, &mut head, "http", &|h| end_of_head(h).is_some())?;
    parse_http(&head).map_err(|why| ("http", why))
}

/// Parses a request head (and what followed it): `CONNECT host:port` or an absolute-URI
/// `http://` request.
fn parse_http(bytes: &[u8]) -> Result<Request, String> {
    let end = end_of_head(bytes).ok_or("the request head does not end")?;
    let text = std::str::from_utf8(&bytes[..end]).map_err(|_| "the request head is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(format!("`{first}` is not an HTTP request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("{version} is not HTTP/1.x"));
    }
    if method == "CONNECT" {
        let target = HostPort::parse(uri, false)?;
        return Ok(Request {
            protocol: "connect",
            target,
            forward: Vec::new(),
        });
    }
    let Some(rest) = uri.strip_prefix("http://") else {
        return Err(format!(
            "`{uri}` is not an absolute http:// URI: send HTTPS through CONNECT"
        ));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err("credentials in the URI are not passed through the proxy".into());
    }
    let with_port = if authority.ends_with(']') || !authority.contains(':') {
        format!("{authority}:80")
    } else {
        authority.to_owned()
    };
    let target = HostPort::parse(&with_port, false)?;
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let mut forward = format!("{method} {path} {version}\r\n").into_bytes();
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
        ) {
            continue;
        }
        forward.extend_from_slice(line.as_bytes());
        forward.extend_from_slice(b"\r\n");
    }
    // One request per connection: a second one on it could name another host.
    forward.extend_from_slice(b"Connection: close\r\n\r\n");
    forward.extend_from_slice(&bytes[end..]);
    Ok(Request {
        protocol: "http",
        target,
        forward,
    })
}

/// Reads and parses a SOCKS5 greeting and `CONNECT` request, answering the greeting.
fn socks_request(client: &TcpStream, mut head: Vec<u8>) -> Result<Request, (&'static str, String)> {
    let p = "socks5";
    read_more(client, &mut head, p, &|h| {
        h.len() >= 2 && h.len() >= 2 + usize::from(h[1])
    })?;
    let methods = &head[2..2 + usize::from(head[1])];
    if !methods.contains(&0) {
        let _ = (&*client).write_all(&[5, 0xff]);
        return Err((
            p,
            "the client offers no SOCKS5 method without authentication".into(),
        ));
    }
    (&*client)
        .write_all(&[5, 0])
        .map_err(|e| (p, format!("answering the greeting: {e}")))?;
    let mut request = head.split_off(2 + usize::from(head[1]));
    read_more(client, &mut request, p, &|r| {
        socks_length(r).is_some_and(|n| r.len() >= n)
    })?;
    parse_socks(&request).map_err(|why| (p, why))
}

/// The length of a SOCKS5 request, once its address type is known.
fn socks_length(r: &[u8]) -> Option<usize> {
    match r.get(3)? {
        1 => Some(4 + 4 + 2),
        4 => Some(4 + 16 + 2),
        3 => Some(4 + 1 + usize::from(*r.get(4)?) + 2),
        _ => Some(4),
    }
}

fn parse_socks(r: &[u8]) -> Result<Request, String> {
    if r.first() != Some(&5) || r.get(1) != Some(&1) {
        return Err("only SOCKS5 CONNECT is supported".into());
    }
    let n = socks_length(r).ok_or("the SOCKS5 request is short")?;
    let port_at = n - 2;
    let port = u16::from_be_bytes([r[port_at], r[port_at + 1]]);
    let host = match r[3] {
        1 => IpAddr::from([r[4], r[5], r[6], r[7]]).to_string(),
        4 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&r[4..20]);
            IpAddr::from(octets).to_string()
        }
        3 => String::from_utf8(r[5..port_at].to_vec())
            .map_err(|_| "the SOCKS5 host name is not UTF-8")?,
        other => return Err(format!("SOCKS5 address type {other} is not known")),
    };
    // Checked as any other request's target is.
    let text = HostPort { host, port }.to_string();
    Ok(Request {
        protocol: "socks5",
        target: HostPort::parse(&text, false)?,
        forward: Vec::new(),
    })
}

/// A SOCKS5 reply with `code` (0 success, 2 not allowed, 4 unreachable, 7 not supported).
fn socks_reply(client: &TcpStream, code: u8) -> std::io::Result<()> {
    (&*client).write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0])?;
    if code != 0 {
        client.shutdown(Shutdown::Both)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_told_from_public_ones() {
        for internal in [
            "127.0.0.1",
            "127.8.9.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::7f00:1",
        ] {
            let ip: IpAddr = internal.parse().expect(internal);
            assert!(is_internal(ip), "{internal} is internal");
        }
        for public in [
            "1.1.1.1",
            "151.101.0.223",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            let ip: IpAddr = public.parse().expect(public);
            assert!(!is_internal(ip), "{public} is public");
        }
    }

    fn hp(s: &str) -> HostPort {
        HostPort::parse(s, false).unwrap()
    }

    #[test]
    fn http_requests_parse_into_targets() {
        let r = parse_http(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
        assert_eq!((r.protocol, r.target), ("connect", hp("pypi.org:443")));
        let r = parse_http(
            b"GET http://127.0.0.1:8080/simple/?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\
              Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\r\nBODY",
        )
        .unwrap();
        assert_eq!(r.target, hp("127.0.0.1:8080"));
        assert_eq!(
            String::from_utf8(r.forward).unwrap(),
            "GET /simple/?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\nBODY"
        );
        let r = parse_http(b"GET http://example.org HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(r.target, hp("example.org:80"));
        assert!(
            String::from_utf8(r.forward)
                .unwrap()
                .starts_with("GET / HTTP/1.0\r\n")
        );
        for bad in [
            &b"GET /local HTTP/1.1\r\n\r\n"[..],
            b"GET https://x.org/ HTTP/1.1\r\n\r\n",
            b"CONNECT x.org HTTP/1.1\r\n\r\n",
            b"GET http://u:p@x.org/ HTTP/1.1\r\n\r\n",
            b"BREW coffee HTCPCP/1.0\r\n\r\n",
        ] {
            assert!(parse_http(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn socks_requests_parse_into_targets() {
        let mut name = vec![5, 1, 0, 3, 8];
        name.extend_from_slice(b"pypi.org");
        name.extend_from_slice(&443u16.to_be_bytes());
        assert_eq!(parse_socks(&name).unwrap().target, hp("pypi.org:443"));
        let v4 = [5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90];
        assert_eq!(parse_socks(&v4).unwrap().target, hp("127.0.0.1:8080"));
        assert!(
            parse_socks(&[5, 2, 0, 1, 1, 1, 1, 1, 0, 80]).is_err(),
            "BIND"
        );
    }

    #[test]
    fn only_granted_pairs_are_admitted_with_a_reason_otherwise() {
        let granted = vec![hp("pypi.org:443"), hp("127.0.0.1:8080")];
        assert!(admit(&hp("pypi.org:443"), &granted).is_ok());
        assert!(admit(&hp("127.0.0.1:8080"), &granted).is_ok());
        let other_port = admit(&hp("pypi.org:80"), &granted).unwrap_err();
        assert!(
            other_port.contains("port 80 of pypi.org is not granted"),
            "{other_port}"
        );
        let literal = admit(&hp("151.101.0.223:443"), &granted).unwrap_err();
        assert!(
            literal.contains("an IP address is admitted only"),
            "{literal}"
        );
        let other = admit(&hp("evil.example:443"), &granted).unwrap_err();
        assert!(other.contains("the host is not granted"), "{other}");
    }
}
