//! The model path against a real OpenAI-compatible server: llama.cpp's `llama-server` with
//! SmolLM2-135M-Instruct (`scripts/install-llm-peer.sh`), on 127.0.0.1. A model this small writes
//! poor tools; what is asserted is what toolsmith does with whatever comes back: validates it,
//! feeds the diagnostics into a repair turn, stops at `max_attempts`, falls back to templates
//! when the model cannot be used, keeps every prompt and reply in the attempt's trace, and
//! counts the server's `usage` against the budget; a paused server times out, a killed one
//! opens the circuit breaker and a restarted one closes it, the cache answers a repeated prompt
//! without a call, `doctor` says whether the endpoint answers, and an agent's request without
//! examples reaches the model.
//!
//! The Anthropic wire format has no real server here: it stays tested against the stand-in
//! (`tests/it/llm.rs`, `common/llm_server.rs`).
//!
//! Replies are kept short (`llm.max_tokens`) so that an attempt takes seconds on two cores; the
//! figures (seconds and tokens per attempt) are printed with `--nocapture`.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::llama_server::{LlamaServer, MODEL, peer};
use common::{TestEnv, json_of};
use serde_json::{Value, json};
use toolsmith::generate::llm::gateway::{Gateway, usage_of};
use toolsmith::generate::llm::{LlmClient, LlmError, LlmSettings, Message, Provider};
use toolsmith::store::Store;

/// The longest reply asked of the model.
const MAX_TOKENS: u32 = 256;

/// `[generate] backend = "llm"` with the real server, and `extra` lines for `[llm]`.
fn llm_config(
    env: &TestEnv,
    server: &LlamaServer,
    attempts: u32,
    extra: &str,
) -> std::path::PathBuf {
    env.write_config(&format!(
        "[generate]\nbackend = \"llm\"\nmax_attempts = {attempts}\n\n\
         [llm]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"{MODEL}\"\n\
         api_key_env = \"TOOLSMITH_TEST_NO_KEY\"\nmax_tokens = {MAX_TOKENS}\n{extra}",
        server.base_url()
    ))
}

/// `toolsmith --config C --json new TEXT [--example E]…`: the candidate it reports.
fn new(env: &TestEnv, config: &Path, text: &str, examples: &[&str]) -> Value {
    let mut cmd = env.cli();
    cmd.arg("--config")
        .arg(config)
        .args(["--json", "new", text])
        .timeout(Duration::from_secs(600));
    for example in examples {
        cmd.args(["--example", example]);
    }
    let out = cmd.output().expect("toolsmith new runs");
    let report = json_of(&out);
    report["candidates"][0].clone()
}

/// `toolsmith show --json ID`.
fn show(env: &TestEnv, config: &Path, id: &str) -> Value {
    json_of(
        env.cli()
            .arg("--config")
            .arg(config)
            .args(["--json", "show", id, "--attempts"])
            .assert()
            .success()
            .get_output(),
    )
}

/// The tokens the store counted for `candidate`.
fn usage(env: &TestEnv, candidate: &str) -> toolsmith::generate::llm::gateway::Usage {
    let conn = rusqlite::Connection::open(env.state().join("state.db")).expect("open store");
    usage_of(&conn, candidate).expect("usage")
}

fn settings(server: &LlamaServer) -> LlmSettings {
    let mut s = LlmSettings::new(Provider::OpenAi, MODEL);
    s.base_url = server.base_url();
    s.max_tokens = 48;
    s.timeout = Duration::from_secs(120);
    s.max_retries = 0;
    s
}

/// A prompt this model answers briefly and whole ("Hello! How can I help you today?").
fn short_prompt() -> Vec<Message> {
    vec![Message::user("Hi")]
}

/// A request without examples goes to the model; every attempt keeps the prompt it was made
/// from, the reply, and the tokens the server counted; a failed attempt's diagnostics are the
/// next prompt's repair turn; the model gets at most `max_attempts`.
#[test]
fn a_model_backed_request_is_validated_repaired_within_max_attempts_and_traced() {
    let Some(peer) = peer() else { return };
    let server = LlamaServer::start(&peer);
    let env = TestEnv::new();
    let config = llm_config(&env, &server, 2, "timeout_s = 300\nmax_retries = 0\n");
    let started = Instant::now();
    let made = new(&env, &config, "print a greeting", &[]);
    let took = started.elapsed();
    let id = made["id"].as_str().expect("id").to_owned();
    let shown = show(&env, &config, &id);
    let attempts = shown["attempts"].as_array().expect("attempts").clone();
    let state = made["state"].as_str().unwrap_or_default();
    let reason = made["reason"].as_str().unwrap_or_default();
    eprintln!(
        "figures: `toolsmith new` took {:.1} s for {} attempt(s), ended {state}: {reason}",
        took.as_secs_f64(),
        attempts.len()
    );
    assert!(
        !attempts.is_empty() && attempts.len() <= 2,
        "between one attempt and max_attempts: {shown:#}"
    );
    match state {
        "awaiting-review" => assert_eq!(made["generator"], format!("llm:{MODEL}")),
        "failed" => assert!(
            reason.contains("gave up after 2 attempt(s)") && attempts.len() == 2,
            "a model's failed tool is repaired until max_attempts, then given up: {made:#}"
        ),
        other => panic!("the candidate ended {other}: {made:#}"),
    }

    let mut previous: Option<(Vec<Value>, String, Value)> = None;
    let (mut input, mut output) = (0, 0);
    for attempt in &attempts {
        let trace = &attempt["prompt"];
        let messages = trace["messages"]
            .as_array()
            .expect("the prompt is kept")
            .clone();
        let reply = attempt["reply"]
            .as_str()
            .expect("the reply is kept")
            .to_owned();
        let (i, o) = (
            trace["input_tokens"].as_u64().expect("input tokens"),
            trace["output_tokens"].as_u64().expect("output tokens"),
        );
        eprintln!(
            "figures: attempt {}: {:.2} s waiting for the model, {i} prompt + {o} completion tokens",
            attempt["attempt"],
            trace["seconds"].as_f64().unwrap_or_default()
        );
        assert!(i > 0 && o > 0, "the server's usage is kept: {trace:#}");
        assert_eq!(trace["cached"], false);
        input += i;
        output += o;
        assert!(
            messages.iter().any(|m| m["content"]
                .as_str()
                .is_some_and(|c| c.contains("print a greeting"))),
            "{messages:#?}"
        );
        if let Some((before, last_reply, diagnostics)) = previous.take() {
            // The repair turn: the conversation so far, the model's reply, then what failed.
            assert_eq!(messages.len(), before.len() + 2, "{messages:#?}");
            assert_eq!(messages[..before.len()], before[..]);
            assert_eq!(messages[before.len()]["role"], "assistant");
            assert_eq!(messages[before.len()]["content"], last_reply.as_str());
            let repair = messages[before.len() + 1]["content"]
                .as_str()
                .unwrap_or_default();
            assert!(
                repair.contains("That attempt failed validation"),
                "{repair}"
            );
            let failed = diagnostics["checks"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["passed"] == false)
                .expect("the earlier attempt failed a check");
            let name = failed["name"].as_str().unwrap_or_default();
            assert!(
                repair.contains(name),
                "{name:?} missing from the repair turn: {repair}"
            );
            for detail in failed["details"].as_array().into_iter().flatten() {
                let line = detail
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default();
                assert!(
                    repair.contains(line),
                    "{line:?} missing from the repair turn: {repair}"
                );
            }
        }
        previous = Some((messages, reply, attempt["diagnostics"].clone()));
    }
    // What the store counts against the budget is what the server reported, call by call.
    let counted = usage(&env, &id);
    assert_eq!(counted.calls, attempts.len() as u64, "{counted:?}");
    assert_eq!(
        (counted.input_tokens, counted.output_tokens),
        (input, output)
    );

    // The same first prompt sent again to the server: it counts the same prompt tokens, so the
    // trace holds exactly what was sent.
    let first = &attempts[0]["prompt"];
    let messages: Vec<Message> = first["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let content = m["content"].as_str().unwrap_or_default();
            match m["role"].as_str() {
                Some("system") => Message::system(content),
                Some("assistant") => Message::assistant(content),
                _ => Message::user(content),
            }
        })
        .collect();
    let mut s = settings(&server);
    s.max_tokens = MAX_TOKENS;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let again =
        runtime.block_on(async { LlmClient::new(s).expect("client").complete(&messages).await });
    // A model this small usually talks until the limit: a cut-off reply carries its usage too.
    match again {
        Ok(c) | Err(LlmError::CutOff { partial: c, .. }) => assert_eq!(
            c.input_tokens,
            first["input_tokens"].as_u64().unwrap_or_default()
        ),
        Err(e) => panic!("the server answers the traced prompt again: {e}"),
    }
}

/// A paused server (SIGSTOP) does not answer: the request times out after `llm.timeout_s`, and
/// a mined pattern is written from templates instead, the reason naming the timeout. Once
/// resumed, the server answers again.
#[test]
fn a_paused_server_times_out_and_a_pattern_falls_back_to_templates() {
    use crate::generate::{build_test_pattern, mine};
    let Some(peer) = peer() else { return };
    let server = LlamaServer::start(&peer);
    let env = TestEnv::new();
    let pattern = build_test_pattern(&mine(&env))["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let config = llm_config(&env, &server, 2, "timeout_s = 1\nmax_retries = 0\n");
    server.pause();
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["--json", "generate", "--pattern", &pattern])
        .timeout(Duration::from_secs(300))
        .output()
        .expect("toolsmith generate runs");
    server.resume();
    let made = json_of(&out)["candidates"][0].clone();
    assert_eq!(made["state"], "awaiting-review", "{made:#}");
    assert_eq!(made["generator"], "template/sh@1", "{made:#}");
    let reason = made["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("did not answer within 1 s")
            && reason.contains("written from templates instead")
            && reason.contains(&server.base_url()),
        "{reason}"
    );
    assert_eq!(usage(&env, made["id"].as_str().expect("id")).calls, 0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let reply = runtime.block_on(async {
        LlmClient::new(settings(&server))
            .expect("client")
            .complete(&short_prompt())
            .await
    });
    assert!(reply.is_ok(), "the resumed server answers: {reply:?}");
}

/// The daily budget counts the tokens the server reported: once spent, the next request does
/// not reach the model, and its mined-or-exemplified steps are written from templates, the
/// reason giving the tokens spent.
#[test]
fn the_budget_counts_the_server_s_usage_and_then_templates_take_over() {
    let Some(peer) = peer() else { return };
    let server = LlamaServer::start(&peer);
    let env = TestEnv::new();
    let config = llm_config(
        &env,
        &server,
        1,
        "timeout_s = 300\nmax_retries = 0\ndaily_token_budget = 1\n",
    );
    let first = new(&env, &config, "print a greeting", &[]);
    let id = first["id"].as_str().expect("id");
    let spent = usage(&env, id);
    assert_eq!(
        spent.calls, 1,
        "the first call is within the budget: {first:#}"
    );
    let total = spent.input_tokens + spent.output_tokens;
    assert!(total > 1, "{spent:?}");

    let second = new(
        &env,
        &config,
        "build one package",
        &["make build -C core", "make build -C cli"],
    );
    assert_eq!(second["state"], "awaiting-review", "{second:#}");
    assert_eq!(second["generator"], "template/sh@1", "{second:#}");
    let reason = second["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!("budget is spent ({total} of 1 tokens)"))
            && reason.contains("written from templates instead"),
        "{reason}"
    );
    assert_eq!(usage(&env, second["id"].as_str().expect("id")).calls, 0);
}

/// Calls to a killed server fail; after `breaker_threshold` of them the breaker opens and calls
/// fail at once without trying; once the server is back and the cooldown is over, a trial call
/// goes through and the breaker closes.
#[tokio::test]
async fn the_breaker_opens_when_the_server_is_killed_and_closes_when_it_is_back() {
    let Some(peer) = peer() else { return };
    let mut server = LlamaServer::start(&peer);
    let mut s = settings(&server);
    s.breaker_threshold = 2;
    s.breaker_cooldown = Duration::from_secs(2);
    let client = LlmClient::new(s).expect("client");
    client
        .complete(&short_prompt())
        .await
        .expect("the server answers");

    server.kill();
    for _ in 0..2 {
        let err = client.complete(&short_prompt()).await.expect_err("killed");
        assert!(matches!(err, LlmError::Transport { .. }), "{err}");
    }
    let err = client.complete(&short_prompt()).await.expect_err("open");
    assert!(matches!(err, LlmError::CircuitOpen { .. }), "{err}");

    let port = server.port;
    let _server = LlamaServer::start_on(&peer, port);
    // Back, but the breaker is still open until its cooldown ends.
    let err = client
        .complete(&short_prompt())
        .await
        .expect_err("still open");
    assert!(matches!(err, LlmError::CircuitOpen { .. }), "{err}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let reply = client
        .complete(&short_prompt())
        .await
        .expect("the trial call");
    assert!(reply.output_tokens > 0);
    // Closed: calls go through again.
    client.complete(&short_prompt()).await.expect("closed");
}

/// A repeated prompt is answered from the cache without a call: the second answer comes while
/// the server is dead, costs nothing, and the store counts the first call's tokens once.
#[tokio::test]
async fn the_cache_answers_a_repeated_prompt_without_a_call() {
    let Some(peer) = peer() else { return };
    let mut server = LlamaServer::start(&peer);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("state.db")).expect("store");
    let client = Arc::new(LlmClient::new(settings(&server)).expect("client"));
    let gateway = Gateway::new(client, store.clone(), 0);
    let first = gateway
        .complete("c-1", &short_prompt())
        .await
        .expect("answer");
    assert!(!first.cached && first.input_tokens > 0 && first.output_tokens > 0);
    server.kill();
    let again = gateway
        .complete("c-2", &short_prompt())
        .await
        .expect("cached");
    assert!(again.cached);
    assert_eq!(again.text, first.text);
    let spent = first.input_tokens + first.output_tokens;
    assert_eq!(gateway.used_today().await.expect("used"), spent);
    let cached = store
        .call(|conn| usage_of(conn, "c-2"))
        .await
        .expect("usage");
    assert_eq!(
        (cached.calls, cached.cached_calls, cached.input_tokens),
        (0, 1, 0)
    );
    // A different prompt does need the (dead) server.
    let mut other = short_prompt();
    other.push(Message::user("What is 2+2?"));
    let err = gateway
        .complete("c-3", &other)
        .await
        .expect_err("no server");
    assert!(matches!(err, LlmError::Transport { .. }), "{err}");
}

/// `toolsmith doctor` shows the configured model's endpoint and whether it answers.
#[test]
fn doctor_shows_the_model_endpoint_and_whether_it_answers() {
    let Some(peer) = peer() else { return };
    let mut server = LlamaServer::start(&peer);
    let env = TestEnv::new();
    let config = llm_config(&env, &server, 1, "");
    let doctor = |json: bool| {
        let mut cmd = env.cli();
        cmd.arg("--config").arg(&config).arg("doctor");
        if json {
            cmd.arg("--json");
        }
        cmd.assert().success().get_output().clone()
    };
    let model = json_of(&doctor(true))["model"].clone();
    assert_eq!(model["available"], true, "{model:#}");
    let detail = model["detail"].as_str().unwrap_or_default();
    let endpoint = format!("{}/chat/completions", server.base_url());
    assert!(
        detail.contains(&endpoint)
            && detail.contains(MODEL)
            && detail.contains("answers, and lists the model"),
        "{detail}"
    );
    let text = String::from_utf8_lossy(&doctor(false).stdout).into_owned();
    assert!(
        text.lines()
            .any(|l| l.contains("ok") && l.contains("model") && l.contains(&endpoint)),
        "{text}"
    );

    server.kill();
    let model = json_of(&doctor(true))["model"].clone();
    assert_eq!(model["available"], false, "{model:#}");
    let detail = model["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("does not answer") && detail.contains("cannot reach the model server"),
        "{detail}"
    );

    // Without a model configured, doctor says generation is offline.
    let plain = env.write_config("[generate]\nbackend = \"template\"\n");
    let out = env
        .cli()
        .arg("--config")
        .arg(&plain)
        .args(["doctor", "--json"])
        .assert()
        .success();
    let model = json_of(out.get_output())["model"].clone();
    assert!(
        model["detail"]
            .as_str()
            .is_some_and(|d| d.contains("none: generate.backend is \"template\"")),
        "{model:#}"
    );
}

/// An agent's `toolsmith_request` without examples goes to the configured model: the candidate
/// it is told of is the model's, with its attempts traced, whatever the model wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_s_request_without_examples_reaches_the_real_model() {
    use crate::mcp::{call, connect_with, text, workspace};
    use rmcp::model::ProtocolVersion;
    let Some(peer) = peer() else { return };
    let server = LlamaServer::start(&peer);
    let env = TestEnv::new();
    let ws = workspace(&env);
    let config = llm_config(&env, &server, 1, "timeout_s = 300\nmax_retries = 0\n");
    let (service, _) = connect_with(&env, &ws, ProtocolVersion::LATEST, Some(&config), &[]).await;
    let asked = call(
        &service,
        "toolsmith_request",
        json!({"description": "print a greeting"}),
    )
    .await
    .expect("call");
    assert_eq!(asked.is_error, Some(false), "{}", text(&asked));
    let id = asked.structured_content.as_ref().expect("structured")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // Followed as an agent would, with the patience a model on two cores needs.
    let mut status = Value::Null;
    for _ in 0..1200 {
        let answer = call(&service, "toolsmith_request_status", json!({"id": id}))
            .await
            .expect("status");
        status = answer.structured_content.clone().expect("structured");
        if !matches!(
            status["state"].as_str(),
            Some("queued" | "generating" | "validating")
        ) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        status["state"] == "awaiting-review" || status["state"] == "failed",
        "{status}"
    );
    service.cancel().await.expect("close");
    let shown = show(&env, &config, &id);
    assert_eq!(shown["candidate"]["origin"], "request");
    let spent = usage(&env, &id);
    assert_eq!(spent.calls, 1, "the model was asked once: {shown:#}");
    let trace = &shown["attempts"][0]["prompt"];
    assert_eq!(
        trace["input_tokens"].as_u64(),
        Some(spent.input_tokens),
        "{trace:#}"
    );
    assert!(
        trace["messages"].to_string().contains("print a greeting"),
        "{trace:#}"
    );
}
