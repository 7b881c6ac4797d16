//! Talking to a language model: an OpenAI-compatible chat-completions client (OpenAI, Ollama,
//! vLLM, llama.cpp server) and Anthropic's Messages API, over HTTPS with rustls.
//!
//! - [`LlmClient`]: one request and its retries: exponential backoff with jitter on timeouts,
//!   connection errors, 408, 429 and 5xx (honouring `Retry-After`), and a circuit breaker that
//!   stops calling a service that keeps failing.
//! - [`gateway::Gateway`]: what the generator uses: a response cache keyed by the prompt's hash
//!   and a daily token budget, with usage recorded per candidate in the store.
//! - [`wire`]: the two wire formats.
//!
//! The API key comes from an environment variable or from `$CREDENTIALS_DIRECTORY` (systemd's
//! `LoadCredential=`), never from the configuration file, and is never logged.

pub mod gateway;
pub mod retry;
pub mod wire;

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use retry::{Backoff, CircuitBreaker};

/// Which API a model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI's chat completions, as OpenAI, Ollama, vLLM and llama.cpp server offer it.
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
}

impl Provider {
    /// The name used in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The service's own base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable the key is read from unless configured otherwise.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The request.
    User,
    /// An earlier reply (for repair turns).
    Assistant,
}

impl Role {
    /// The role's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A model's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The reply's text.
    pub text: String,
    /// Tokens of the prompt, as the service counted them.
    pub input_tokens: u64,
    /// Tokens of the reply.
    pub output_tokens: u64,
    /// The model that answered.
    pub model: String,
    /// Whether it came from the response cache (and cost nothing).
    pub cached: bool,
}

/// An API key. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(…)")
    }
}

/// Where the key is looked for: `$CREDENTIALS_DIRECTORY/<credential>` first (systemd's
/// `LoadCredential=`), then the environment variable `env`. `None` when neither is set (local
/// servers such as Ollama need no key).
pub fn find_api_key(
    env: &str,
    credential: &str,
    credentials_dir: Option<&Path>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<ApiKey> {
    if let Some(dir) = credentials_dir
        && let Ok(text) = std::fs::read_to_string(dir.join(credential))
        && !text.trim().is_empty()
    {
        return Some(ApiKey::new(text.trim()));
    }
    lookup(env)
        .filter(|k| !k.trim().is_empty())
        .map(|k| ApiKey::new(k.trim()))
}

/// How to reach a model and how hard to try.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// The API spoken.
    pub provider: Provider,
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// The key, if the service needs one.
    pub api_key: Option<ApiKey>,
    /// Time allowed for one request, connection included.
    pub timeout: Duration,
    /// Retries after the first attempt, for retryable failures.
    pub max_retries: u32,
    /// Largest reply, in tokens.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// First backoff ceiling; doubles each retry.
    pub backoff_base: Duration,
    /// Largest backoff, and largest `Retry-After` honoured: longer ones give up at once.
    pub backoff_cap: Duration,
    /// Consecutive failed calls that open the circuit breaker.
    pub breaker_threshold: u32,
    /// How long an open breaker refuses calls.
    pub breaker_cooldown: Duration,
}

impl LlmSettings {
    /// Settings with the usual limits for `provider` and `model`.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        LlmSettings {
            provider,
            base_url: provider.default_base_url().to_owned(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            max_tokens: 8192,
            temperature: 0.2,
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(60),
            breaker_threshold: 5,
            breaker_cooldown: Duration::from_secs(300),
        }
    }
}

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// The service could not be reached.
    #[error("cannot reach the model server at {url}: {detail}")]
    Transport {
        /// The endpoint.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// No answer within the timeout.
    #[error("the model server at {url} did not answer within {} s", after.as_secs())]
    Timeout {
        /// The endpoint.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// The service answered with an error status.
    #[error("the model server answered {status}: {message}{}", hint(*status))]
    Http {
        /// HTTP status.
        status: u16,
        /// The service's message.
        message: String,
    },
    /// Asked to wait longer than this client waits.
    #[error(
        "the model server is rate limiting (429) and asks to wait {} s, longer than the {} s \
         this client waits; try again later",
        wait.as_secs(), cap.as_secs()
    )]
    RateLimited {
        /// What `Retry-After` asked.
        wait: Duration,
        /// The longest wait honoured.
        cap: Duration,
    },
    /// A 2xx answer that is not a usable completion.
    #[error("the model's reply is unusable: {what}")]
    Malformed {
        /// What is wrong with it.
        what: String,
    },
    /// The reply stopped at the token limit (`max_tokens`): its text is partial, and its tokens
    /// were spent all the same.
    #[error(
        "the reply was cut off at the token limit, after {} tokens ({reason}); llm.max_tokens \
         sets the limit",
        partial.output_tokens
    )]
    CutOff {
        /// What came back, with the usage the service reported.
        partial: Completion,
        /// The service's stop reason.
        reason: String,
    },
    /// The model declined the request.
    #[error("the model declined: {reason}")]
    Refused {
        /// Its explanation.
        reason: String,
    },
    /// The circuit breaker is open after repeated failures.
    #[error(
        "the model server failed repeatedly; calls resume in {} s (circuit breaker)",
        retry_in.as_secs()
    )]
    CircuitOpen {
        /// Time until a trial call is allowed.
        retry_in: Duration,
    },
    /// The daily token budget is spent.
    #[error(
        "today's LLM token budget is spent ({used} of {limit} tokens); it resets at midnight UTC, \
         or raise llm.daily_token_budget"
    )]
    Budget {
        /// Tokens used today.
        used: u64,
        /// The budget.
        limit: u64,
    },
    /// The cache or usage records could not be used.
    #[error("LLM bookkeeping failed: {0}")]
    Store(String),
}

fn hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (the API key was refused: check llm.api_key_env or the credential file)",
        404 => " (check llm.base_url and llm.model)",
        _ => "",
    }
}

impl LlmError {
    /// Whether trying the same request again may succeed.
    pub fn retryable(&self) -> bool {
        match self {
            LlmError::Transport { .. } | LlmError::Timeout { .. } => true,
            LlmError::Http { status, .. } => {
                matches!(status, 408 | 409 | 425 | 429 | 500..=599)
            }
            _ => false,
        }
    }
}

/// A client for one model server. Safe to share between tasks.
pub struct LlmClient {
    settings: LlmSettings,
    url: String,
    http: reqwest::Client,
    breaker: Mutex<CircuitBreaker>,
    backoff: Mutex<Backoff>,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("provider", &self.settings.provider)
            .field("url", &self.url)
            .field("model", &self.settings.model)
            .finish()
    }
}

impl LlmClient {
    /// A client with `settings`.
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        // reqwest is built without a default crypto provider; ring is the one linked in. A second
        // install (another client) is refused harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = wire::endpoint(settings.provider, &settings.base_url);
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(15)))
            // An API never redirects; following one could send the key elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("toolsmith/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Transport {
                url: url.clone(),
                detail: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(LlmClient {
            breaker: Mutex::new(CircuitBreaker::new(
                settings.breaker_threshold,
                settings.breaker_cooldown,
            )),
            backoff: Mutex::new(Backoff::from_clock(
                settings.backoff_base,
                settings.backoff_cap,
            )),
            url,
            http,
            settings,
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    /// Sends the conversation and returns the reply, retrying what is worth retrying.
    pub async fn complete(&self, messages: &[Message]) -> Result<Completion, LlmError> {
        {
            let mut breaker = self.breaker.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            if let Err(until) = breaker.allow(now) {
                return Err(LlmError::CircuitOpen {
                    retry_in: until.saturating_duration_since(now),
                });
            }
        }
        let mut attempt = 0;
        let result = loop {
            let (result, retry_after) = self.attempt(messages).await;
            match result {
                Ok(completion) => break Ok(completion),
                Err(err) if err.retryable() && attempt < self.settings.max_retries => {
                    let backoff = self
                        .backoff
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .delay(attempt);
                    let wait = match retry_after {
                        Some(asked) if asked > self.settings.backoff_cap => {
                            break Err(LlmError::RateLimited {
                                wait: asked,
                                cap: self.settings.backoff_cap,
                            });
                        }
                        Some(asked) => asked.max(backoff),
                        None => backoff,
                    };
                    tracing::info!(
                        attempt = attempt + 1,
                        wait_ms = wait.as_millis() as u64,
                        "model call failed, retrying: {err}"
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(err) => break Err(err),
            }
        };
        let mut breaker = self.breaker.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            Ok(_) => breaker.success(),
            // Only trouble with the service counts; a refused key or a bad reply does not.
            Err(err) if err.retryable() || matches!(err, LlmError::RateLimited { .. }) => {
                breaker.failure(Instant::now())
            }
            Err(_) => {}
        }
        result
    }

    /// The chat endpoint requests go to.
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// Asks the server for its list of models, once (no retry, no breaker: a check, not a
    /// generation), and returns the ids it lists; it costs no tokens. An error says what failed
    /// as a generation would.
    pub async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let s = &self.settings;
        let url = wire::models_endpoint(s.provider, &s.base_url);
        let mut request = self.http.get(&url);
        match (s.provider, &s.api_key) {
            (Provider::OpenAi, Some(key)) => request = request.bearer_auth(key.expose()),
            (Provider::Anthropic, key) => {
                request = request.header("anthropic-version", wire::ANTHROPIC_VERSION);
                if let Some(key) = key {
                    request = request.header("x-api-key", key.expose());
                }
            }
            (Provider::OpenAi, None) => {}
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_error(&url, &e))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(&url, &e))?;
        if !status.is_success() {
            return Err(LlmError::Http {
                status: status.as_u16(),
                message: wire::error_message(&bytes),
            });
        }
        wire::model_ids(&bytes).ok_or_else(|| LlmError::Malformed {
            what: format!("{url} did not answer with a list of models"),
        })
    }

    /// One HTTP exchange, with the server's `Retry-After` when it gave one.
    async fn attempt(
        &self,
        messages: &[Message],
    ) -> (Result<Completion, LlmError>, Option<Duration>) {
        let s = &self.settings;
        let body = wire::request_body(
            s.provider,
            &s.base_url,
            &s.model,
            messages,
            s.max_tokens,
            s.temperature,
        );
        let mut request = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        match (s.provider, &s.api_key) {
            (Provider::OpenAi, Some(key)) => {
                request = request.bearer_auth(key.expose());
            }
            (Provider::Anthropic, key) => {
                request = request.header("anthropic-version", wire::ANTHROPIC_VERSION);
                if let Some(key) = key {
                    request = request.header("x-api-key", key.expose());
                }
            }
            (Provider::OpenAi, None) => {}
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return (Err(self.transport_error(&self.url, &e)), None),
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry::retry_after(v, jiff::Timestamp::now().as_second()));
        let bytes = match response.bytes().await {
            Ok(b) => b,
            Err(e) => return (Err(self.transport_error(&self.url, &e)), None),
        };
        if !status.is_success() {
            let err = LlmError::Http {
                status: status.as_u16(),
                message: wire::error_message(&bytes),
            };
            return (Err(err), retry_after);
        }
        (wire::parse_response(s.provider, &s.model, &bytes), None)
    }

    fn transport_error(&self, url: &str, e: &reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout {
                url: url.to_owned(),
                after: self.settings.timeout,
            }
        } else {
            // The chain of sources says what actually failed (refused, DNS, TLS).
            let mut detail = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                detail = format!("{detail}: {inner}");
                source = inner.source();
            }
            LlmError::Transport {
                url: url.to_owned(),
                detail,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_credentials_then_the_environment_and_never_show() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("llm-api-key"), "sk-from-file\n").expect("write");
        let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-from-env".to_owned());
        let key = find_api_key("OPENAI_API_KEY", "llm-api-key", Some(dir.path()), env);
        assert_eq!(key, Some(ApiKey::new("sk-from-file")));
        let key = find_api_key("OPENAI_API_KEY", "other", Some(dir.path()), env);
        assert_eq!(key, Some(ApiKey::new("sk-from-env")));
        assert_eq!(find_api_key("NOPE", "other", None, env), None);
        assert_eq!(format!("{key:?}"), "Some(ApiKey(…))");
    }

    #[test]
    fn what_is_retried() {
        let http = |status| LlmError::Http {
            status,
            message: String::new(),
        };
        for status in [408, 429, 500, 502, 503, 529] {
            assert!(http(status).retryable(), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!http(status).retryable(), "{status}");
        }
        assert!(http(401).to_string().contains("API key was refused"));
        assert!(
            !LlmError::Malformed {
                what: String::new()
            }
            .retryable()
        );
    }
}
