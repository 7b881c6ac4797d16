//! A local HTTP server that answers like OpenAI's chat completions or Anthropic's Messages API,
//! with scripted replies: the stand-in for a model server (none is reachable from tests).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering (a hang when longer than the client's timeout).
    pub delay: Duration,
}

impl Reply {
    /// A 200 with a chat completion whose message content is `text` (OpenAI wire format).
    pub fn openai(text: &str) -> Reply {
        Reply::ok(
            json!({
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 1_763_800_000,
                "model": "test-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
            })
            .to_string(),
        )
    }

    /// A 200 with a message whose text is `text` (Anthropic wire format).
    pub fn anthropic(text: &str) -> Reply {
        Reply::ok(
            json!({
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": "test-model",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": null,
                "usage": {"input_tokens": 120, "output_tokens": 60}
            })
            .to_string(),
        )
    }

    /// A 200 with this raw body.
    pub fn ok(body: String) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body,
            delay: Duration::ZERO,
        }
    }

    /// An error status with an error body in the services' shape.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: json!({"error": {"message": message, "type": "test_error"}}).to_string(),
            delay: Duration::ZERO,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Answers after `delay`.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The server: answers with the scripted replies in order, repeating the last one.
pub struct LlmServer {
    pub url: String,
    script: Arc<Mutex<Vec<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl LlmServer {
    pub fn start(replies: Vec<Reply>) -> LlmServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind test LLM server");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let script = Arc::new(Mutex::new(replies));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (Arc::clone(&script), Arc::clone(&received));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, r) = (Arc::clone(&s), Arc::clone(&r));
                std::thread::spawn(move || serve(stream, &s, &r));
            }
        });
        LlmServer {
            url,
            script,
            received,
        }
    }

    /// Replaces the remaining script.
    pub fn script(&self, replies: Vec<Reply>) {
        *self.script.lock().expect("script") = replies;
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("received").clone()
    }
}

fn serve(stream: TcpStream, script: &Mutex<Vec<Reply>>, received: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    received.lock().expect("received").push(Received {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: Instant::now(),
    });
    let reply = {
        let mut script = script.lock().expect("script");
        if script.len() > 1 {
            script.remove(0)
        } else {
            script
                .first()
                .cloned()
                .unwrap_or_else(|| Reply::error(500, "no scripted reply"))
        }
    };
    std::thread::sleep(reply.delay);
    let mut out = stream;
    let mut head = format!("HTTP/1.1 {} Test\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        reply.body.len()
    ));
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(reply.body.as_bytes());
    let _ = out.flush();
}
