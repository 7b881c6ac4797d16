//! The two wire formats: OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp
//! server, …) and Anthropic's Messages API. Building requests and reading responses, as pure
//! functions; the transport is in [`super::LlmClient`].

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Completion, LlmError, Message, Provider, Role};

/// Anthropic's API version header value this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The URL path appended to the configured base URL.
pub fn endpoint(provider: Provider, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match provider {
        Provider::OpenAi => format!("{base}/chat/completions"),
        Provider::Anthropic => format!("{base}/v1/messages"),
    }
}

/// The URL of the list of models a server offers (`GET`, both APIs), which answers without
/// spending tokens: what `toolsmith doctor` asks to see that the server answers.
pub fn models_endpoint(provider: Provider, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match provider {
        Provider::OpenAi => format!("{base}/models"),
        Provider::Anthropic => format!("{base}/v1/models"),
    }
}

/// The model ids of a models list (`{"data": [{"id": …}, …]}` in both APIs); `None` when the
/// body is not such a list.
pub fn model_ids(body: &[u8]) -> Option<Vec<String>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let ids = v
        .get("data")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    Some(ids)
}

/// The JSON body of a request.
pub fn request_body(
    provider: Provider,
    base_url: &str,
    model: &str,
    messages: &[Message],
    max_tokens: u32,
    temperature: f32,
) -> Value {
    match provider {
        Provider::OpenAi => {
            let msgs: Vec<Value> = messages
                .iter()
                .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
                .collect();
            // OpenAI's own newer models refuse `max_tokens`; the servers that copy its API (Ollama,
            // vLLM, llama.cpp) read `max_tokens` and not always the newer name.
            let limit_field = if base_url.contains("api.openai.com") {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            json!({
                "model": model,
                "messages": msgs,
                "temperature": temperature,
                limit_field: max_tokens,
                "stream": false,
            })
        }
        Provider::Anthropic => {
            let system: Vec<&str> = messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str())
                .collect();
            let msgs: Vec<Value> = messages
                .iter()
                .filter(|m| m.role != Role::System)
                .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
                .collect();
            let mut body = json!({
                "model": model,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "messages": msgs,
            });
            if !system.is_empty() {
                body["system"] = Value::String(system.join("\n\n"));
            }
            body
        }
    }
}

#[derive(Deserialize)]
struct OpenAiResponse {
    choices: Vec<OpenAiChoice>,
    #[serde(default)]
    usage: Option<OpenAiUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct OpenAiChoice {
    message: OpenAiMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct OpenAiMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct OpenAiUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct AnthropicResponse {
    content: Vec<AnthropicBlock>,
    #[serde(default)]
    usage: Option<AnthropicUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct AnthropicBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct AnthropicUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// Reads a successful (2xx) response body.
pub fn parse_response(
    provider: Provider,
    model: &str,
    body: &[u8],
) -> Result<Completion, LlmError> {
    let malformed = |what: String| LlmError::Malformed { what };
    match provider {
        Provider::OpenAi => {
            let r: OpenAiResponse = serde_json::from_slice(body).map_err(|e| {
                malformed(format!(
                    "not an OpenAI chat completion ({e}): {}",
                    excerpt(body)
                ))
            })?;
            let Some(choice) = r.choices.into_iter().next() else {
                return Err(malformed("the completion has no choices".into()));
            };
            if let Some(refusal) = choice.message.refusal.filter(|r| !r.is_empty()) {
                return Err(LlmError::Refused { reason: refusal });
            }
            let text = choice.message.content.unwrap_or_default();
            let usage = r.usage.unwrap_or(OpenAiUsage {
                prompt_tokens: 0,
                completion_tokens: 0,
            });
            let completion = Completion {
                text,
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                model: r.model.unwrap_or_else(|| model.to_owned()),
                cached: false,
            };
            if choice.finish_reason.as_deref() == Some("length") {
                return Err(LlmError::CutOff {
                    partial: completion,
                    reason: "finish_reason: length".into(),
                });
            }
            if completion.text.trim().is_empty() {
                return Err(malformed("the reply is empty".into()));
            }
            Ok(completion)
        }
        Provider::Anthropic => {
            let r: AnthropicResponse = serde_json::from_slice(body).map_err(|e| {
                malformed(format!("not an Anthropic message ({e}): {}", excerpt(body)))
            })?;
            if r.stop_reason.as_deref() == Some("refusal") {
                return Err(LlmError::Refused {
                    reason: "the model declined (stop_reason: refusal)".into(),
                });
            }
            let text: String = r
                .content
                .iter()
                .filter(|b| b.kind == "text")
                .filter_map(|b| b.text.as_deref())
                .collect::<Vec<_>>()
                .join("");
            let usage = r.usage.unwrap_or(AnthropicUsage {
                input_tokens: 0,
                output_tokens: 0,
            });
            let completion = Completion {
                text,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                model: r.model.unwrap_or_else(|| model.to_owned()),
                cached: false,
            };
            if r.stop_reason.as_deref() == Some("max_tokens") {
                return Err(LlmError::CutOff {
                    partial: completion,
                    reason: "stop_reason: max_tokens".into(),
                });
            }
            if completion.text.trim().is_empty() {
                return Err(malformed("the reply has no text".into()));
            }
            Ok(completion)
        }
    }
}

/// The service's own error message from an error body, when it has the usual shape
/// (`{"error": {"message": …}}` for both APIs), else an excerpt of the body.
pub fn error_message(body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_owned)
    });
    from_json.unwrap_or_else(|| excerpt(body))
}

/// At most 300 characters of a body, for messages.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("You write tools."),
            Message::user("Write one."),
        ]
    }

    #[test]
    fn openai_requests_follow_the_chat_completions_shape() {
        let body = request_body(
            Provider::OpenAi,
            "http://localhost:11434/v1",
            "llama3",
            &conversation(),
            2000,
            0.2,
        );
        assert_eq!(body["model"], "llama3");
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["content"], "Write one.");
        assert_eq!(body["max_tokens"], 2000);
        assert_eq!(body["stream"], false);
        let body = request_body(
            Provider::OpenAi,
            "https://api.openai.com/v1",
            "gpt-4.1",
            &conversation(),
            2000,
            0.2,
        );
        assert_eq!(body["max_completion_tokens"], 2000);
        assert!(body.get("max_tokens").is_none());
        assert_eq!(
            endpoint(Provider::OpenAi, "https://api.openai.com/v1/"),
            "https://api.openai.com/v1/chat/completions"
        );
    }

    #[test]
    fn anthropic_requests_put_the_system_prompt_apart() {
        let body = request_body(
            Provider::Anthropic,
            "https://api.anthropic.com",
            "claude-sonnet-4-5",
            &conversation(),
            4096,
            0.0,
        );
        assert_eq!(body["system"], "You write tools.");
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(
            endpoint(Provider::Anthropic, "https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
    }

    #[test]
    fn responses_are_read_with_their_usage() {
        let openai = br#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x",
            "choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;
        let c = parse_response(Provider::OpenAi, "m", openai).expect("parses");
        assert_eq!(
            (c.text.as_str(), c.input_tokens, c.output_tokens),
            ("hello", 12, 3)
        );
        assert_eq!(c.model, "gpt-x");
        let anthropic = br#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
            "content":[{"type":"text","text":"hel"},{"type":"text","text":"lo"}],
            "stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":4}}"#;
        let c = parse_response(Provider::Anthropic, "m", anthropic).expect("parses");
        assert_eq!(
            (c.text.as_str(), c.input_tokens, c.output_tokens),
            ("hello", 20, 4)
        );
    }

    #[test]
    fn bad_responses_are_diagnosed() {
        let cases: [(Provider, &[u8], &str); 7] = [
            (
                Provider::OpenAi,
                b"<html>502</html>",
                "not an OpenAI chat completion",
            ),
            (Provider::OpenAi, br#"{"choices":[]}"#, "no choices"),
            (
                Provider::OpenAi,
                br#"{"choices":[{"message":{"content":"abc"},"finish_reason":"length"}]}"#,
                "cut off",
            ),
            (
                Provider::OpenAi,
                br#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#,
                "declined",
            ),
            (
                Provider::OpenAi,
                br#"{"choices":[{"message":{"content":"  "}}]}"#,
                "empty",
            ),
            (Provider::Anthropic, br#"{"content":[]}"#, "no text"),
            (
                Provider::Anthropic,
                br#"{"content":[{"type":"text","text":"x"}],"stop_reason":"max_tokens"}"#,
                "cut off",
            ),
        ];
        for (provider, body, expect) in cases {
            let err = parse_response(provider, "m", body).expect_err("refused");
            assert!(err.to_string().contains(expect), "{err}");
        }
    }

    #[test]
    fn a_cut_off_reply_keeps_its_text_and_the_tokens_it_cost() {
        let body = br#"{"choices":[{"message":{"content":"````file run.sh\necho"},
            "finish_reason":"length"}],"usage":{"prompt_tokens":700,"completion_tokens":64}}"#;
        match parse_response(Provider::OpenAi, "m", body) {
            Err(LlmError::CutOff { partial, reason }) => {
                assert_eq!(partial.text, "````file run.sh\necho");
                assert_eq!((partial.input_tokens, partial.output_tokens), (700, 64));
                assert_eq!(reason, "finish_reason: length");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_bodies_give_the_service_message() {
        assert_eq!(
            error_message(br#"{"error":{"message":"Rate limit reached","type":"requests"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            error_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(error_message(b"Bad Gateway"), "Bad Gateway");
    }
}
