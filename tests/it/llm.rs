//! The model clients against a local server speaking the real OpenAI and Anthropic wire
//! formats: good replies, retries with backoff and `Retry-After`, timeouts, malformed replies,
//! the circuit breaker, the response cache and the daily token budget. The only tests of the
//! Anthropic wire format: no real server for it is reachable here (the OpenAI-compatible path is
//! also tested against a real llama.cpp server, in `llm_real.rs`).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::llm_server::{LlmServer, Reply};
use toolsmith::generate::llm::gateway::{Gateway, usage_of};
use toolsmith::generate::llm::{ApiKey, LlmClient, LlmError, LlmSettings, Message, Provider};
use toolsmith::store::Store;

fn settings(provider: Provider, server: &LlmServer) -> LlmSettings {
    let mut s = LlmSettings::new(provider, "test-model");
    s.base_url = match provider {
        Provider::OpenAi => format!("{}/v1", server.url),
        Provider::Anthropic => server.url.clone(),
    };
    s.api_key = Some(ApiKey::new("sk-test-key"));
    s.timeout = Duration::from_secs(2);
    s.max_retries = 3;
    s.backoff_base = Duration::from_millis(10);
    s.backoff_cap = Duration::from_secs(3);
    s
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You write small tools."),
        Message::user("A tool that lists failing tests."),
    ]
}

#[tokio::test]
async fn openai_wire_format_request_and_reply() {
    let server = LlmServer::start(vec![Reply::openai("```run.sh\necho hi\n```")]);
    let client = LlmClient::new(settings(Provider::OpenAi, &server)).expect("client");
    let reply = client.complete(&conversation()).await.expect("reply");
    assert_eq!(reply.text, "```run.sh\necho hi\n```");
    assert_eq!((reply.input_tokens, reply.output_tokens), (100, 50));
    let seen = server.received();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(seen[0].body["model"], "test-model");
    assert_eq!(seen[0].body["messages"][0]["role"], "system");
    assert_eq!(
        seen[0].body["messages"][1]["content"],
        "A tool that lists failing tests."
    );
}

#[tokio::test]
async fn anthropic_wire_format_request_and_reply() {
    let server = LlmServer::start(vec![Reply::anthropic("done")]);
    let client = LlmClient::new(settings(Provider::Anthropic, &server)).expect("client");
    let reply = client.complete(&conversation()).await.expect("reply");
    assert_eq!((reply.text.as_str(), reply.input_tokens), ("done", 120));
    let seen = server.received();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].header("x-api-key"), Some("sk-test-key"));
    assert_eq!(seen[0].header("anthropic-version"), Some("2023-06-01"));
    assert!(seen[0].header("authorization").is_none());
    assert_eq!(seen[0].body["system"], "You write small tools.");
    assert_eq!(seen[0].body["messages"][0]["role"], "user");
    assert!(seen[0].body["max_tokens"].as_u64().is_some());
}

#[tokio::test]
async fn a_429_is_retried_after_what_retry_after_asks() {
    let server = LlmServer::start(vec![
        Reply::error(429, "Rate limit reached").header("retry-after", "1"),
        Reply::openai("finally"),
    ]);
    let client = LlmClient::new(settings(Provider::OpenAi, &server)).expect("client");
    let reply = client
        .complete(&conversation())
        .await
        .expect("reply after retry");
    assert_eq!(reply.text, "finally");
    let seen = server.received();
    assert_eq!(seen.len(), 2);
    assert!(
        seen[1].at.duration_since(seen[0].at) >= Duration::from_secs(1),
        "the retry came before Retry-After allowed"
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_the_cap_gives_up_at_once() {
    let server = LlmServer::start(vec![
        Reply::error(429, "slow down").header("retry-after", "3600"),
    ]);
    let client = LlmClient::new(settings(Provider::OpenAi, &server)).expect("client");
    let err = client
        .complete(&conversation())
        .await
        .expect_err("gives up");
    assert!(matches!(err, LlmError::RateLimited { .. }), "{err}");
    assert!(err.to_string().contains("3600"), "{err}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = LlmServer::start(vec![
        Reply::error(500, "boom"),
        Reply::error(503, "overloaded"),
        Reply::anthropic("ok now"),
    ]);
    let client = LlmClient::new(settings(Provider::Anthropic, &server)).expect("client");
    assert_eq!(
        client.complete(&conversation()).await.expect("reply").text,
        "ok now"
    );
    assert_eq!(server.received().len(), 3);

    let server = LlmServer::start(vec![Reply::error(502, "bad gateway")]);
    let client = LlmClient::new(settings(Provider::Anthropic, &server)).expect("client");
    let err = client.complete(&conversation()).await.expect_err("fails");
    assert!(err.to_string().contains("502"), "{err}");
    assert!(err.to_string().contains("bad gateway"), "{err}");
    assert_eq!(server.received().len(), 4, "one try and three retries");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = LlmServer::start(vec![Reply::error(401, "invalid x-api-key")]);
    let client = LlmClient::new(settings(Provider::Anthropic, &server)).expect("client");
    let err = client.complete(&conversation()).await.expect_err("fails");
    assert!(err.to_string().contains("API key was refused"), "{err}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_hang_times_out() {
    let server = LlmServer::start(vec![Reply::openai("late").after(Duration::from_secs(30))]);
    let mut s = settings(Provider::OpenAi, &server);
    s.timeout = Duration::from_millis(300);
    s.max_retries = 1;
    let client = LlmClient::new(s).expect("client");
    let err = client
        .complete(&conversation())
        .await
        .expect_err("times out");
    assert!(matches!(err, LlmError::Timeout { .. }), "{err}");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn malformed_replies_are_diagnosed_not_retried() {
    for (body, expect) in [
        ("<html>oops</html>", "not an OpenAI chat completion"),
        (r#"{"choices": []}"#, "no choices"),
        (r#"{"choices": [{"message": {"content": ""}}]}"#, "empty"),
    ] {
        let server = LlmServer::start(vec![Reply::ok(body.into())]);
        let client = LlmClient::new(settings(Provider::OpenAi, &server)).expect("client");
        let err = client
            .complete(&conversation())
            .await
            .expect_err("malformed");
        assert!(err.to_string().contains(expect), "{body}: {err}");
        assert_eq!(server.received().len(), 1);
    }
}

#[tokio::test]
async fn the_breaker_opens_after_repeated_failures() {
    let server = LlmServer::start(vec![Reply::error(500, "down")]);
    let mut s = settings(Provider::OpenAi, &server);
    s.max_retries = 0;
    s.breaker_threshold = 2;
    s.breaker_cooldown = Duration::from_secs(600);
    let client = LlmClient::new(s).expect("client");
    for _ in 0..2 {
        let err = client.complete(&conversation()).await.expect_err("down");
        assert!(matches!(err, LlmError::Http { status: 500, .. }), "{err}");
    }
    let err = client.complete(&conversation()).await.expect_err("open");
    assert!(matches!(err, LlmError::CircuitOpen { .. }), "{err}");
    assert_eq!(server.received().len(), 2, "an open breaker sends nothing");
}

#[tokio::test]
async fn unreachable_servers_are_named() {
    // A port nobody listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let mut s = LlmSettings::new(Provider::OpenAi, "m");
    s.base_url = url.clone();
    s.max_retries = 1;
    s.backoff_base = Duration::from_millis(5);
    let err = LlmClient::new(s)
        .expect("client")
        .complete(&conversation())
        .await
        .expect_err("refused");
    assert!(matches!(err, LlmError::Transport { .. }), "{err}");
    assert!(err.to_string().contains(&url), "{err}");
}

#[tokio::test]
async fn the_gateway_caches_replies_and_keeps_to_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("state.db")).expect("store");
    let server = LlmServer::start(vec![Reply::openai("first"), Reply::openai("second")]);
    let client = Arc::new(LlmClient::new(settings(Provider::OpenAi, &server)).expect("client"));
    let gateway = Gateway::new(Arc::clone(&client), store.clone(), 400);

    let a = gateway
        .complete("c-1", &conversation())
        .await
        .expect("first");
    assert_eq!((a.text.as_str(), a.cached), ("first", false));
    let again = gateway
        .complete("c-2", &conversation())
        .await
        .expect("cached");
    assert_eq!((again.text.as_str(), again.cached), ("first", true));
    assert_eq!(
        server.received().len(),
        1,
        "the same prompt is answered from the cache"
    );
    assert_eq!(gateway.used_today().await.expect("used"), 150);

    let mut other = conversation();
    other.push(Message::user("And make it faster."));
    let b = gateway.complete("c-1", &other).await.expect("second");
    assert_eq!(b.text, "second");
    assert_eq!(gateway.used_today().await.expect("used"), 300);
    // Within budget still (300 < 400); the next spends past it, after which calls stop.
    other.push(Message::user("Again."));
    gateway.complete("c-1", &other).await.expect("third");
    other.push(Message::user("Once more."));
    let err = gateway.complete("c-1", &other).await.expect_err("budget");
    assert!(
        matches!(
            err,
            LlmError::Budget {
                used: 450,
                limit: 400
            }
        ),
        "{err}"
    );
    assert_eq!(server.received().len(), 3);

    let usage = store
        .call(|conn| usage_of(conn, "c-1"))
        .await
        .expect("usage");
    assert_eq!((usage.calls, usage.cached_calls), (3, 0));
    assert_eq!((usage.input_tokens, usage.output_tokens), (300, 150));
    let usage = store
        .call(|conn| usage_of(conn, "c-2"))
        .await
        .expect("usage");
    assert_eq!(
        (usage.calls, usage.cached_calls, usage.input_tokens),
        (0, 1, 0)
    );
}

/// A reply cut off at the token limit is not used, but its tokens were spent: the gateway counts
/// them against the budget and does not cache it, so the same prompt asks again.
#[tokio::test]
async fn a_cut_off_reply_counts_against_the_budget_and_is_not_cached() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("state.db")).expect("store");
    let cut = serde_json::json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "````file run.sh\necho"},
                     "finish_reason": "length"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
    });
    let server = LlmServer::start(vec![Reply::ok(cut.to_string()), Reply::openai("whole")]);
    let client = Arc::new(LlmClient::new(settings(Provider::OpenAi, &server)).expect("client"));
    let gateway = Gateway::new(client, store.clone(), 0);
    match gateway.complete("c-1", &conversation()).await {
        Err(LlmError::CutOff { partial, .. }) => assert_eq!(partial.text, "````file run.sh\necho"),
        other => panic!("{other:?}"),
    }
    assert_eq!(gateway.used_today().await.expect("used"), 150);
    let again = gateway
        .complete("c-1", &conversation())
        .await
        .expect("asked again");
    assert_eq!((again.text.as_str(), again.cached), ("whole", false));
    assert_eq!(server.received().len(), 2);
    let usage = store
        .call(|conn| usage_of(conn, "c-1"))
        .await
        .expect("usage");
    assert_eq!(
        (usage.calls, usage.input_tokens, usage.output_tokens),
        (2, 200, 100)
    );
}

/// A cut-off reply is the model's attempt all the same: kept with its trace, diagnosed, and
/// answered with a repair turn asking for shorter files; the whole reply that follows is used.
#[test]
fn a_cut_off_reply_is_an_attempt_the_model_is_asked_to_shorten() {
    use crate::generate::{GOOD_SCRIPT, greeting_reply};
    let env = common::TestEnv::new();
    let cut = serde_json::json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "````file run.sh\necho"},
                     "finish_reason": "length"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
    });
    let server = LlmServer::start(vec![
        Reply::ok(cut.to_string()),
        Reply::openai(&greeting_reply(GOOD_SCRIPT)),
    ]);
    let config = env.write_config(&format!(
        "[generate]\nbackend = \"llm\"\nmax_attempts = 2\n\n\
         [llm]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"test-model\"\n\
         api_key_env = \"TOOLSMITH_TEST_KEY\"\nmax_tokens = 50\nmax_retries = 0\n",
        server.url
    ));
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["--json", "new", "print a greeting"])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let made = common::json_of(out.get_output())["candidates"][0].clone();
    assert_eq!(made["state"], "awaiting-review", "{made:#}");
    assert_eq!(made["attempts"], 2, "{made:#}");
    let seen = server.received();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body["max_tokens"], 50);
    let repair = &seen[1].body["messages"];
    assert_eq!(repair[2]["content"], "````file run.sh\necho", "{repair:#}");
    assert!(
        repair[3]["content"]
            .as_str()
            .is_some_and(|c| c.contains("cut off at the token limit after 50 tokens")),
        "{repair:#}"
    );
    let shown = common::json_of(
        env.cli()
            .args(["--json", "show", made["id"].as_str().expect("id")])
            .assert()
            .success()
            .get_output(),
    );
    let first = &shown["attempts"][0];
    assert_eq!(first["reply"], "````file run.sh\necho");
    assert_eq!(first["prompt"]["output_tokens"], 50, "{first:#}");
    assert_eq!(first["diagnostics"]["passed"], false);
    assert_eq!(
        shown["attempts"][1]["prompt"]["messages"], *repair,
        "the trace holds what was sent"
    );
}
