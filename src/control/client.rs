//! The control socket's client side, used by the CLI: blocking, one request at a time.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::protocol::{self, Notification, Response, RpcError};

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
}

impl Client {
    /// Connects to the daemon at `socket`.
    pub fn connect(socket: &Path) -> Result<Client, ClientError> {
        let stream = UnixStream::connect(socket).map_err(|err| match err.kind() {
            std::io::ErrorKind::PermissionDenied => ClientError::PermissionDenied {
                socket: socket.to_owned(),
                reason: err.to_string(),
            },
            _ => ClientError::NotRunning {
                socket: socket.to_owned(),
                reason: err.to_string(),
            },
        })?;
        let writer = stream.try_clone().map_err(|err| ClientError::Protocol {
            socket: socket.to_owned(),
            reason: err.to_string(),
        })?;
        Ok(Client {
            socket: socket.to_owned(),
            reader: BufReader::new(stream),
            writer,
            next_id: 1,
        })
    }

    fn broken(&self, reason: impl std::fmt::Display) -> ClientError {
        ClientError::Protocol {
            socket: self.socket.clone(),
            reason: reason.to_string(),
        }
    }

    /// Calls `method` and waits for its response, skipping any event notifications.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut line = serde_json::to_vec(&request).map_err(|e| self.broken(e))?;
        line.push(b'\n');
        // A refusing daemon writes its error and closes at once; a failed write must not hide
        // that error, so read whatever it said before giving up.
        let write_error = self.writer.write_all(&line).err();
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

    /// Blocks for the next notification; `None` when the daemon closed the connection.
    pub fn next_notification(&mut self) -> Result<Option<Notification>, ClientError> {
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
