//! The line transport `toolsmith mcp` serves on: newline-delimited JSON-RPC over stdin/stdout,
//! answering what it cannot read instead of dropping it.
//!
//! rmcp's own stdio transport ignores a line that is not JSON (or nests deeper than
//! `serde_json`'s recursion limit) without a word, so a client that sent one waits forever.
//! JSON-RPC 2.0 wants a Parse error (−32700) with `id: null` for those, and an Invalid Request
//! (−32600) for JSON that is no JSON-RPC message; this transport gives both and keeps serving.
//! Non-standard notifications (an LSP message sent to the wrong server) are still ignored, as
//! rmcp and the other official SDKs do: notifications get no answer.
//!
//! Every outgoing line — rmcp's messages and these errors — goes through one writer task, in
//! order, a whole line at a time, so lines never interleave and a cancelled `receive` (rmcp
//! polls it in a `select!`) never leaves half a line on stdout.

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The longest line read; a longer one is skipped as it streams past (never buffered) and
/// answered with a Parse error. rmcp's own limit, so what it accepted is accepted here.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC 2.0: invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;

/// JSON-RPC 2.0: the JSON sent is not a valid Request object.
pub const INVALID_REQUEST: i64 = -32600;

/// A line for the writer, with where to say how writing it went.
type Outgoing = (Vec<u8>, Option<oneshot::Sender<std::io::Result<()>>>);

/// Newline-delimited JSON-RPC on a reader and a writer, for the server side of a session.
pub struct LineTransport<R> {
    read: BufReader<R>,
    /// The line being read; a cancelled read leaves its first bytes here for the next call.
    line: Vec<u8>,
    /// Set while the rest of an oversized line is skipped.
    discarding: bool,
    max_line: usize,
    lines: Option<mpsc::UnboundedSender<Outgoing>>,
    writer: Option<JoinHandle<()>>,
}

/// What one read line is.
#[derive(Debug)]
enum Read {
    /// A message for the service.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to do (a blank line, a non-standard notification).
    Ignore,
    /// An error object to send back.
    Answer(Value),
}

enum LineRead {
    Line,
    Oversized,
    Eof,
}

impl<R: AsyncRead + Send + Unpin + 'static> LineTransport<R> {
    /// Reads from `read`, writes to `write`. Must be called inside a Tokio runtime (the writer
    /// is a task of its own).
    pub fn new<W: AsyncWrite + Send + Unpin + 'static>(read: R, write: W) -> Self {
        let (lines, mut queue) = mpsc::unbounded_channel::<Outgoing>();
        let writer = tokio::spawn(async move {
            let mut write = write;
            while let Some((line, done)) = queue.recv().await {
                let written = match write.write_all(&line).await {
                    Ok(()) => write.flush().await,
                    Err(e) => Err(e),
                };
                let failed = written.is_err();
                if let Err(e) = &written {
                    tracing::debug!("MCP output closed: {e}");
                }
                if let Some(done) = done {
                    let _ = done.send(written);
                }
                if failed {
                    break;
                }
            }
        });
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            max_line: MAX_LINE_BYTES,
            lines: Some(lines),
            writer: Some(writer),
        }
    }

    /// The same with another line limit (tests).
    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// Reads one line into `self.line` without letting it grow past the limit. Cancel-safe:
    /// bytes are moved from the reader's buffer to `self.line` with no await in between.
    async fn read_line(&mut self) -> std::io::Result<LineRead> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(LineRead::Eof);
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |at| at + 1);
            let mut outcome = None;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.line.len().saturating_add(take) > self.max_line {
                self.line.clear();
                self.discarding = newline.is_none();
                outcome = Some(LineRead::Oversized);
            } else {
                self.line.extend_from_slice(&available[..take]);
                if newline.is_some() {
                    outcome = Some(LineRead::Line);
                }
            }
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
    }

    /// Queues `line` (a whole JSON text, without its newline) for the writer.
    fn queue(&self, mut line: Vec<u8>, done: Option<oneshot::Sender<std::io::Result<()>>>) -> bool {
        line.push(b'\n');
        self.lines
            .as_ref()
            .is_some_and(|lines| lines.send((line, done)).is_ok())
    }
}

/// An error response without an id to answer with (`id: null`, as JSON-RPC 2.0 asks when the
/// id could not be read), or with the one the request carried.
fn error_response(code: i64, message: String, id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The methods MCP defines (rmcp's list): a notification naming another is ignored.
fn is_standard_notification(method: &str) -> bool {
    matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    )
}

/// What a line (without its newline) is.
fn read_message(line: &[u8]) -> Read {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // RFC 8259 §8.1 lets a parser ignore a byte order mark.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Read::Ignore;
    }
    let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => return Read::Message(Box::new(message)),
        Err(e) => e,
    };
    let value = match error.classify() {
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            serde_json::from_slice::<Value>(line).ok()
        }
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => None,
    };
    let Some(value) = value else {
        return Read::Answer(error_response(
            PARSE_ERROR,
            format!("Parse error: not a JSON text ({error})"),
            Value::Null,
        ));
    };
    let method = value.get("method").and_then(Value::as_str);
    let notification = value.get("id").is_none();
    if let Some(method) = method
        && notification
        && !is_standard_notification(method)
    {
        tracing::debug!("ignoring the non-standard notification `{method}`");
        return Read::Ignore;
    }
    // The request's own id when it has a valid one, so the client can match the answer.
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    Read::Answer(error_response(
        INVALID_REQUEST,
        format!("Invalid Request: not a JSON-RPC 2.0 message MCP accepts ({error})"),
        id,
    ))
}

impl<R: AsyncRead + Send + Unpin + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (done, written) = oneshot::channel();
        let queued = match serde_json::to_vec(&item) {
            Ok(line) => self.queue(line, Some(done)),
            Err(e) => {
                let _ = done.send(Err(std::io::Error::other(e)));
                true
            }
        };
        async move {
            if !queued {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the MCP output is closed",
                ));
            }
            written.await.unwrap_or_else(|_| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the MCP output is closed",
                ))
            })
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let read = match self.read_line().await {
                Ok(LineRead::Line) => {
                    let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                    let read = read_message(line);
                    self.line.clear();
                    read
                }
                Ok(LineRead::Oversized) => Read::Answer(error_response(
                    PARSE_ERROR,
                    format!(
                        "Parse error: a message longer than {} bytes was skipped",
                        self.max_line
                    ),
                    Value::Null,
                )),
                Ok(LineRead::Eof) => return None,
                Err(e) => {
                    tracing::warn!("reading MCP input failed: {e}");
                    return None;
                }
            };
            match read {
                Read::Message(message) => return Some(*message),
                Read::Ignore => {}
                Read::Answer(answer) => {
                    tracing::debug!("answered an unreadable MCP message: {answer}");
                    // Queued, not awaited: a cancelled `receive` cannot cut the line short.
                    if !self.queue(answer.to_string().into_bytes(), None) {
                        return None;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer finishes the lines already queued, then ends.
        drop(self.lines.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    /// A transport on in-memory pipes: the client's writer and reader.
    fn pair(
        max_line: usize,
    ) -> (
        LineTransport<tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
        tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    ) {
        let (client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        let transport = LineTransport::new(server_in, server_out).with_max_line(max_line);
        (transport, client_in, BufReader::new(client_out).lines())
    }

    async fn answer(lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>) -> Value {
        let line = lines.next_line().await.expect("read").expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    #[tokio::test]
    async fn unreadable_lines_are_answered_and_the_next_message_still_arrives() {
        let (mut transport, mut input, mut output) = pair(1 << 20);
        let deep = format!("{}{}\n", "[".repeat(5000), "]".repeat(5000));
        let mut sent = b"not json\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":7}\n\n".to_vec();
        sent.extend_from_slice(deep.as_bytes());
        sent.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"$/lsp\"}\n");
        sent.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n");
        let writer = tokio::spawn(async move {
            input.write_all(&sent).await.expect("write");
            input
        });
        // A notification MCP does not define reaches the service, which ignores it.
        let custom = transport.receive().await.expect("the notification");
        assert!(format!("{custom:?}").contains("$/lsp"), "{custom:?}");
        let message = transport.receive().await.expect("the ping");
        assert!(
            serde_json::to_string(&message)
                .expect("json")
                .contains("\"ping\""),
            "{message:?}"
        );
        let parse = answer(&mut output).await;
        assert_eq!(parse["error"]["code"], PARSE_ERROR, "{parse}");
        assert_eq!(parse["id"], Value::Null);
        assert!(parse.as_object().expect("object").contains_key("id"));
        let invalid = answer(&mut output).await;
        assert_eq!(invalid["error"]["code"], INVALID_REQUEST, "{invalid}");
        assert_eq!(invalid["id"], 3);
        let deep = answer(&mut output).await;
        assert_eq!(deep["error"]["code"], PARSE_ERROR, "{deep}");
        assert!(
            deep["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("recursion limit")),
            "{deep}"
        );
        drop(writer.await);
    }

    #[tokio::test]
    async fn an_oversized_line_is_skipped_and_answered() {
        let (mut transport, mut input, mut output) = pair(64);
        let writer = tokio::spawn(async move {
            let long = format!("{{\"x\":\"{}\"}}\n", "a".repeat(500));
            input.write_all(long.as_bytes()).await.expect("write");
            input
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
                .await
                .expect("write");
            input
        });
        transport.receive().await.expect("the ping");
        let skipped = answer(&mut output).await;
        assert_eq!(skipped["error"]["code"], PARSE_ERROR, "{skipped}");
        drop(writer.await);
    }

    #[tokio::test]
    async fn sent_messages_are_whole_lines_in_order_and_close_flushes_them() {
        let (mut transport, _input, mut output) = pair(1024);
        for id in 0..50 {
            let message = TxJsonRpcMessage::<RoleServer>::error(
                rmcp::ErrorData::internal_error(format!("n{id}"), None),
                Some(rmcp::model::RequestId::Number(id)),
            );
            transport.send(message).await.expect("send");
        }
        transport.close().await.expect("close");
        for id in 0..50 {
            assert_eq!(answer(&mut output).await["id"], id);
        }
    }
}
