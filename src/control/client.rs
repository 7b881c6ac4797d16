//! The control socket's client side, used by the CLI: blocking, one request at a time.
//!
//! Nothing waits on the daemon without a limit unless the daemon has shown it answers:
//! connecting is bounded by [`Timeouts::connect`] (a daemon that stopped accepting leaves its
//! listen queue full), and each request by [`Timeouts::request`] — except the answer to a job
//! ([`Client::call_job`]: mining, generation, a health check, an approval), which takes as long
//! as the job does and is awaited once a `status` on the same connection has been answered, and
//! the events after `events.subscribe`, which come when they come.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::protocol::{self, Notification, Response, RpcError};

/// How long the client waits on the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// For the daemon to take the connection.
    pub connect: Duration,
    /// For the answer to a request that a working daemon answers at once.
    pub request: Duration,
}

impl Default for Timeouts {
    /// 5 s to connect, 10 s per request: a working daemon answers in milliseconds, and its
    /// slowest quick answer (`status` waits its turn at the store) in well under a second.
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(10),
        }
    }
}

/// Why a call to the daemon did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket.
    #[error(
        "toolsmithd is not running (no daemon at {socket}: {reason}). Start it with \
         `toolsmithd` in a terminal, or `systemctl --user start toolsmith` if it is installed \
         as a user service"
    )]
    NotRunning {
        /// The socket tried.
        socket: PathBuf,
        /// What connecting reported.
        reason: String,
    },
    /// The socket exists but this user may not use it.
    #[error(
        "permission denied on {socket}: the control socket admits only the daemon's own user \
         and root ({reason})"
    )]
    PermissionDenied {
        /// The socket tried.
        socket: PathBuf,
        /// The OS's or the daemon's words.
        reason: String,
    },
    /// The daemon did not take the connection or answer in time: it runs but is stuck.
    #[error(
        "toolsmithd at {socket} did not {what} within {} s: it is running but stuck or \
         overloaded. Look at its log (`journalctl --user -u toolsmith`, or the terminal it runs \
         in), and restart it (`systemctl --user restart toolsmith`, or stop the process and \
         start `toolsmithd`)",
        waited.as_secs_f64()
    )]
    NotAnswering {
        /// The socket.
        socket: PathBuf,
        /// What it did not do ("accept the connection", "answer `status`").
        what: String,
        /// How long the client waited.
        waited: Duration,
    },
    /// The daemon answered with an error.
    #[error("{0}")]
    Rpc(RpcError),
    /// The connection broke or the daemon sent something that is not the protocol.
    #[error("control connection to {socket} failed: {reason}")]
    Protocol {
        /// The socket.
        socket: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// A connection to the daemon's control socket.
pub struct Client {
    socket: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    timeouts: Timeouts,
}

impl Client {
    /// Connects to the daemon at `socket`, with the default [`Timeouts`].
    pub fn connect(socket: &Path) -> Result<Client, ClientError> {
        Client::connect_with(socket, Timeouts::default())
    }

    /// Connects to the daemon at `socket`, waiting on it no longer than `timeouts` say.
    pub fn connect_with(socket: &Path, timeouts: Timeouts) -> Result<Client, ClientError> {
        let stream = connect_within(socket, timeouts.connect)?;
        let setup = |err: std::io::Error| ClientError::Protocol {
            socket: socket.to_owned(),
            reason: err.to_string(),
        };
        stream
            .set_read_timeout(Some(timeouts.request))
            .map_err(setup)?;
        stream
            .set_write_timeout(Some(timeouts.request))
            .map_err(setup)?;
        let writer = stream.try_clone().map_err(setup)?;
        Ok(Client {
            socket: socket.to_owned(),
            reader: BufReader::new(stream),
            writer,
            next_id: 1,
            timeouts,
        })
    }

    fn broken(&self, reason: impl std::fmt::Display) -> ClientError {
        ClientError::Protocol {
            socket: self.socket.clone(),
            reason: reason.to_string(),
        }
    }

    fn stuck(&self, what: String) -> ClientError {
        ClientError::NotAnswering {
            socket: self.socket.clone(),
            what,
            waited: self.timeouts.request,
        }
    }

    /// Calls `method`, one a working daemon answers at once, and waits for its response
    /// (skipping any event notifications) no longer than the request timeout.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request(method, params)
    }

    /// Calls `method`, a job that takes as long as it takes (`mine.run`, `generate.run`,
    /// `health.run`, `registry.approve`). The daemon first shows that it answers (`status`,
    /// within the request timeout); then the answer is awaited without a limit — the job has
    /// its own bounds, and an interrupted client leaves it running in the daemon.
    pub fn call_job(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request("status", Value::Null)?;
        self.unbounded_reads()?;
        let answer = self.request(method, params);
        let restored = self
            .reader
            .get_ref()
            .set_read_timeout(Some(self.timeouts.request))
            .map_err(|e| self.broken(e));
        let answer = answer?;
        restored?;
        Ok(answer)
    }

    fn unbounded_reads(&mut self) -> Result<(), ClientError> {
        self.reader
            .get_ref()
            .set_read_timeout(None)
            .map_err(|e| self.broken(e))
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut line = serde_json::to_vec(&request).map_err(|e| self.broken(e))?;
        line.push(b'\n');
        // A refusing daemon writes its error and closes at once; a failed write must not hide
        // that error, so read whatever it said before giving up.
        let write_error = self.writer.write_all(&line).err();
        if let Some(e) = &write_error
            && timed_out(e)
        {
            return Err(self.stuck(format!("take the `{method}` request")));
        }
        loop {
            let mut text = String::new();
            match self.reader.read_line(&mut text) {
                Ok(0) => {
                    return Err(match write_error {
                        Some(e) => self.broken(format!("cannot send the request: {e}")),
                        None => self.broken("the daemon closed the connection without answering"),
                    });
                }
                Ok(_) => {}
                Err(e) if timed_out(&e) => {
                    return Err(self.stuck(format!("answer `{method}`")));
                }
                Err(e) => return Err(self.broken(e)),
            }
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| self.broken(format!("invalid JSON from the daemon: {e}")))?;
            if value.get("method").is_some() {
                continue;
            }
            let response: Response = serde_json::from_value(value)
                .map_err(|e| self.broken(format!("invalid response: {e}")))?;
            if let Some(error) = response.error {
                return Err(match error.code {
                    protocol::UNAUTHORIZED => ClientError::PermissionDenied {
                        socket: self.socket.clone(),
                        reason: error.message,
                    },
                    _ => ClientError::Rpc(error),
                });
            }
            if response.id != id {
                return Err(self.broken(format!(
                    "response for id {} while waiting for {id}",
                    response.id
                )));
            }
            return Ok(response.result.unwrap_or(Value::Null));
        }
    }

    /// Blocks for the next notification (as long as it takes: events come when they come);
    /// `None` when the daemon closed the connection.
    pub fn next_notification(&mut self) -> Result<Option<Notification>, ClientError> {
        self.unbounded_reads()?;
        loop {
            let mut text = String::new();
            match self.reader.read_line(&mut text) {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) => return Err(self.broken(e)),
            }
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| self.broken(format!("invalid JSON from the daemon: {e}")))?;
            if value.get("method").is_some() {
                return serde_json::from_value(value)
                    .map(Some)
                    .map_err(|e| self.broken(format!("invalid notification: {e}")));
            }
        }
    }
}

/// Whether an I/O error is a socket timeout (`SO_RCVTIMEO`/`SO_SNDTIMEO` expired).
fn timed_out(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Connects to `socket`, waiting at most `timeout` for the daemon to take the connection. A
/// Unix socket's `connect` waits only when the listener's queue is full (a daemon that stopped
/// accepting), and that wait is bounded by the send timeout set before it.
fn connect_within(socket: &Path, timeout: Duration) -> Result<UnixStream, ClientError> {
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, UnixAddr, sockopt};
    let not_running = |reason: String| ClientError::NotRunning {
        socket: socket.to_owned(),
        reason,
    };
    let fd: OwnedFd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| not_running(format!("cannot create a socket: {e}")))?;
    let addr = UnixAddr::new(socket).map_err(|e| not_running(e.to_string()))?;
    let limit = nix::sys::time::TimeVal::new(
        i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        i64::from(timeout.subsec_micros()),
    );
    socket::setsockopt(&fd, sockopt::SendTimeout, &limit)
        .map_err(|e| not_running(format!("cannot set a timeout: {e}")))?;
    match socket::connect(fd.as_raw_fd(), &addr) {
        Ok(()) => Ok(UnixStream::from(fd)),
        Err(nix::errno::Errno::EAGAIN) => Err(ClientError::NotAnswering {
            socket: socket.to_owned(),
            what: "accept the connection (its queue of waiting connections is full)".into(),
            waited: timeout,
        }),
        Err(e @ (nix::errno::Errno::EACCES | nix::errno::Errno::EPERM)) => {
            Err(ClientError::PermissionDenied {
                socket: socket.to_owned(),
                reason: std::io::Error::from(e).to_string(),
            })
        }
        Err(e) => Err(not_running(std::io::Error::from(e).to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Timeouts {
        Timeouts {
            connect: Duration::from_millis(200),
            request: Duration::from_millis(200),
        }
    }

    #[test]
    fn a_listener_that_never_answers_is_reported_as_stuck() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("control.sock");
        // Bound and listening, never accepting: the kernel queues the connection.
        let _listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let mut client = Client::connect_with(&path, quick()).expect("queued connection");
        let err = client.call("status", Value::Null).expect_err("no answer");
        assert!(
            matches!(&err, ClientError::NotAnswering { what, .. } if what.contains("`status`")),
            "{err}"
        );
        assert!(err.to_string().contains("stuck"), "{err}");
        let err = client
            .call_job("mine.run", Value::Null)
            .expect_err("a job is not awaited from a daemon that does not answer");
        assert!(matches!(err, ClientError::NotAnswering { .. }), "{err}");
    }

    #[test]
    fn a_full_listen_queue_is_reported_as_stuck_not_waited_on() {
        use nix::sys::socket::{self, AddressFamily, Backlog, SockFlag, SockType, UnixAddr};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("control.sock");
        let listener = socket::socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .expect("socket");
        socket::bind(
            listener.as_raw_fd(),
            &UnixAddr::new(&path).expect("address"),
        )
        .expect("bind");
        socket::listen(&listener, Backlog::new(0).expect("backlog")).expect("listen");
        // Fill the queue (a backlog of 0 still admits one), then the next connect must wait.
        let mut queued = Vec::new();
        let err = loop {
            match Client::connect_with(&path, quick()) {
                Ok(client) => queued.push(client),
                Err(err) => break err,
            }
            assert!(queued.len() < 64, "the listen queue never filled");
        };
        assert!(
            matches!(&err, ClientError::NotAnswering { what, .. } if what.contains("accept")),
            "{err}"
        );
    }

    #[test]
    fn nothing_listening_is_not_running() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Client::connect_with(&dir.path().join("none.sock"), quick())
            .err()
            .expect("no daemon");
        assert!(matches!(err, ClientError::NotRunning { .. }), "{err}");
    }
}
