//! JSON-RPC 2.0 messages of the control socket: one JSON object per line.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The peer's uid is neither the daemon's nor root.
pub const UNAUTHORIZED: i64 = -32001;
/// Too many connections are open.
pub const BUSY: i64 = -32002;
/// The request line exceeds the configured maximum.
pub const REQUEST_TOO_LARGE: i64 = -32003;
/// The daemon is shutting down.
pub const SHUTTING_DOWN: i64 = -32004;
/// The method ran and failed (bad config on reload, a failed pipeline step, …).
pub const FAILED: i64 = -32010;

/// The method name of event notifications sent to subscribers.
pub const EVENT_NOTIFICATION: &str = "event";

/// A request as read from the wire, before validation.
#[derive(Debug, Clone, Deserialize)]
pub struct RawRequest {
    /// Must be "2.0".
    pub jsonrpc: Option<Value>,
    /// Absent for notifications, which get no response.
    #[serde(default, deserialize_with = "present")]
    pub id: Option<Value>,
    /// The method.
    pub method: Option<Value>,
    /// Parameters: an object, an array, or absent.
    pub params: Option<Value>,
}

/// Distinguishes `"id": null` (a request with a null id) from no id (a notification).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A validated request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification.
    pub id: Option<Value>,
    /// The method.
    pub method: String,
    /// Parameters (`Value::Null` when absent).
    pub params: Value,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct RpcError {
    /// One of the constants of this module.
    pub code: i64,
    /// A sentence for a person: what failed and what to do.
    pub message: String,
    /// Machine-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Bad parameters for `method`.
    pub fn invalid_params(method: &str, detail: impl std::fmt::Display) -> Self {
        Self::new(
            INVALID_PARAMS,
            format!("invalid params for {method}: {detail}"),
        )
    }
}

/// A response line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Always "2.0".
    pub jsonrpc: String,
    /// The request's id, or null when it could not be read.
    pub id: Value,
    /// Present on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Present on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl Response {
    /// A success.
    pub fn ok(id: Value, result: Value) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// A failure.
    pub fn err(id: Value, error: RpcError) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(error),
        }
    }
}

/// A notification sent by the daemon (event streams).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Notification {
    /// Always "2.0".
    pub jsonrpc: String,
    /// The notification's method, e.g. [`EVENT_NOTIFICATION`].
    pub method: String,
    /// The payload.
    pub params: Value,
}

/// Parses one request line. On failure, returns the response to send (with the id when known).
pub fn parse_request(line: &[u8]) -> Result<Request, Box<Response>> {
    let fail = |id: Value, code, message: String| {
        Box::new(Response::err(id, RpcError::new(code, message)))
    };
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        fail(
            Value::Null,
            PARSE_ERROR,
            format!("parse error: {e}; send one JSON-RPC 2.0 object per line"),
        )
    })?;
    if value.is_array() {
        return Err(fail(
            Value::Null,
            INVALID_REQUEST,
            "batch requests are not supported: send one request object per line".into(),
        ));
    }
    let raw: RawRequest = serde_json::from_value(value).map_err(|e| {
        fail(
            Value::Null,
            INVALID_REQUEST,
            format!("invalid request: {e}; expected {{\"jsonrpc\":\"2.0\",\"id\":…,\"method\":…}}"),
        )
    })?;
    let id = raw.id.clone();
    let reply_id = id.clone().unwrap_or(Value::Null);
    if !matches!(
        &id,
        None | Some(Value::Null | Value::Number(_) | Value::String(_))
    ) {
        return Err(fail(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: id must be a string, a number or null".into(),
        ));
    }
    if raw.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(fail(
            reply_id,
            INVALID_REQUEST,
            "invalid request: \"jsonrpc\" must be \"2.0\"".into(),
        ));
    }
    let Some(Value::String(method)) = raw.method else {
        return Err(fail(
            reply_id,
            INVALID_REQUEST,
            "invalid request: \"method\" must be a string".into(),
        ));
    };
    let params = raw.params.unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return Err(fail(
            reply_id,
            INVALID_REQUEST,
            "invalid request: \"params\" must be an object or an array".into(),
        ));
    }
    Ok(Request { id, method, params })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> i64 {
        match parse_request(line.as_bytes()) {
            Ok(req) => panic!("unexpectedly valid: {req:?}"),
            Err(resp) => resp.error.expect("error").code,
        }
    }

    #[test]
    fn valid_requests_and_notifications() {
        let req = parse_request(br#"{"jsonrpc":"2.0","id":7,"method":"status"}"#).expect("valid");
        assert_eq!(req.id, Some(Value::from(7)));
        assert_eq!(req.params, Value::Null);
        let note = parse_request(br#"{"jsonrpc":"2.0","method":"x","params":{}}"#).expect("valid");
        assert_eq!(note.id, None);
        let null_id = parse_request(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).expect("valid");
        assert_eq!(null_id.id, Some(Value::Null));
    }

    #[test]
    fn invalid_requests_get_the_right_codes() {
        assert_eq!(code("{not json"), PARSE_ERROR);
        assert_eq!(code("[]"), INVALID_REQUEST);
        assert_eq!(code("42"), INVALID_REQUEST);
        assert_eq!(code(r#"{"id":1,"method":"status"}"#), INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":1,"method":"status"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"a"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"a","params":3}"#),
            INVALID_REQUEST
        );
    }

    #[test]
    fn error_keeps_the_id_when_readable() {
        let resp = parse_request(br#"{"jsonrpc":"1.0","id":"abc","method":"status"}"#)
            .expect_err("invalid");
        assert_eq!(resp.id, Value::from("abc"));
    }
}
