//! `toolsmith mcp` end to end with real MCP clients: the official Rust SDK's client over a
//! child process here (both lifecycles: the `initialize` session of 2025-11-25 and the
//! subscriptions of 2026-07-28), and the official Python SDK in `tests/mcp_client.py`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::{PATIENCE, TestEnv, json_of};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion, ServerNotification,
    SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

/// A workspace whose packages have a Makefile with `build` and `test` targets.
pub(crate) fn workspace(env: &TestEnv) -> PathBuf {
    let ws = env.path().join("ws");
    for package in ["core", "cli"] {
        std::fs::create_dir_all(ws.join(package)).expect("mkdir");
        std::fs::write(
            ws.join(package).join("Makefile"),
            "build:\n\t@echo built $(notdir $(CURDIR))\ntest:\n\t@echo tested $(notdir $(CURDIR))\n",
        )
        .expect("write Makefile");
    }
    ws
}

/// Asks for a tool running `make TARGET -C <dir>`; returns (candidate, tool).
fn request(env: &TestEnv, what: &str, target: &str) -> (String, String) {
    let out = env
        .cli()
        .args(["--json", "new", what, "--example"])
        .arg(format!("make {target} -C core"))
        .arg("--example")
        .arg(format!("make {target} -C cli"))
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let s = |v: &Value| v.as_str().expect("string").to_owned();
    (s(&made["id"]), s(&made["tool"]))
}

fn approve(env: &TestEnv, candidate: &str) {
    env.cli().args(["approve", candidate]).assert().success();
}

/// The client side: counts `notifications/tools/list_changed` on an `initialize` session.
#[derive(Clone)]
pub(crate) struct Client {
    protocol: ProtocolVersion,
    changed: Arc<Notify>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(self.protocol.clone())
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

/// `toolsmith [--config FILE] mcp` started by an MCP client in `dir`, as an agent would start
/// it: with the `initialize` handshake (`protocol` 2025-11-25 and before), or with
/// `server/discover` (2026-07-28).
pub(crate) async fn connect(
    env: &TestEnv,
    dir: &Path,
    protocol: ProtocolVersion,
    config: Option<&Path>,
) -> (RunningService<RoleClient, Client>, Arc<Notify>) {
    connect_with(env, dir, protocol, config, &[]).await
}

/// [`connect`] with `vars` set in the server's environment.
pub(crate) async fn connect_with(
    env: &TestEnv,
    dir: &Path,
    protocol: ProtocolVersion,
    config: Option<&Path>,
    vars: &[(&str, &str)],
) -> (RunningService<RoleClient, Client>, Arc<Notify>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut command);
    command.envs(vars.iter().copied());
    if let Some(file) = config {
        command.arg("--config").arg(file);
    }
    command
        .arg("--state")
        .arg(env.state())
        .arg("mcp")
        .current_dir(dir);
    let transport =
        TokioChildProcess::new(tokio::process::Command::from(command)).expect("spawn server");
    let changed = Arc::new(Notify::new());
    let client = Client {
        protocol: protocol.clone(),
        changed: Arc::clone(&changed),
    };
    let lifecycle = if protocol.has_initialize() {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![protocol],
        }
    };
    let service = tokio::time::timeout(PATIENCE, client.serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("the session starts in time")
        .expect("the session starts");
    (service, changed)
}

async fn list(service: &RunningService<RoleClient, Client>) -> Vec<Tool> {
    tokio::time::timeout(PATIENCE, service.list_all_tools())
        .await
        .expect("tools/list in time")
        .expect("tools/list")
}

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

pub(crate) async fn call(
    service: &RunningService<RoleClient, Client>,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, rmcp::ServiceError> {
    let arguments: Map<String, Value> = match arguments {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    };
    tokio::time::timeout(
        Duration::from_secs(60),
        service.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)),
    )
    .await
    .expect("tools/call in time")
}

/// All the text of a result.
pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn wait_changed(changed: &Notify, what: &str) {
    tokio::time::timeout(PATIENCE, changed.notified())
        .await
        .unwrap_or_else(|_| panic!("no tools/list_changed after {what}"));
}

fn executions(env: &TestEnv, tool: &str) -> Vec<(String, bool)> {
    let conn = rusqlite::Connection::open(env.state().join("state.db")).expect("open store");
    toolsmith::health::executions::list(&conn, Some(tool))
        .expect("the runs are read")
        .into_iter()
        .map(|run| (run.caller.as_str().to_owned(), run.ok))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_list_call_and_search_tools_and_see_the_registry_change() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    let (b, test) = request(&env, "Test one package", "test");
    approve(&env, &a);
    let (service, changed) =
        connect(&env, &ws, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
    let info = service.peer_info().expect("server info");
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true),
        "the server advertises tools.listChanged"
    );

    // The approved tool, with its manifest's description and schema, then the fixed tools.
    let tools = list(&service).await;
    assert_eq!(
        names(&tools),
        [
            build.as_str(),
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let listed = json_of(
        env.cli()
            .args(["--json", "tools"])
            .assert()
            .success()
            .get_output(),
    );
    assert_eq!(
        Value::Object((*tools[0].input_schema).clone()),
        listed[0]["params"]
    );
    assert_eq!(tools[0].description.as_deref(), Some("Build one package"));

    // A call runs it in the sandbox on the client's directory.
    let ok = call(&service, &build, json!({"dir": "core"}))
        .await
        .expect("call");
    assert_eq!(ok.is_error, Some(false), "{}", text(&ok));
    assert!(text(&ok).contains("built core"), "{}", text(&ok));

    // A failed run is a result the agent reads, not a protocol error.
    let failed = call(&service, &build, json!({"dir": "no-such-package"}))
        .await
        .expect("a failed run is still a result");
    assert_eq!(failed.is_error, Some(true));
    let said = text(&failed);
    assert!(
        said.contains("failed with exit status 2") && said.contains("no-such-package"),
        "{said}"
    );

    // Arguments that do not fit the schema: rejected, saying why, nothing run.
    for (arguments, expected) in [
        (json!({}), "dir"),
        (json!({"dir": 3}), "not of type \"string\""),
        (json!({"dir": "core", "verbose": true}), "verbose"),
    ] {
        let bad = call(&service, &build, arguments.clone())
            .await
            .expect("bad arguments are a result");
        assert_eq!(bad.is_error, Some(true), "{arguments}");
        assert!(text(&bad).contains(expected), "{arguments}: {}", text(&bad));
        assert!(text(&bad).contains("input schema"), "{}", text(&bad));
    }

    // A name that is no tool at all is the protocol's unknown-tool error.
    let unknown = call(&service, "no-such-tool", json!({})).await;
    match unknown {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert!(e.message.contains("no tool named no-such-tool"), "{e:?}")
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }

    // The fixed tools: search by words, run by name.
    let found = call(
        &service,
        "toolsmith_search",
        json!({"query": "build package"}),
    )
    .await
    .expect("search");
    let found = found.structured_content.expect("structured search result");
    assert_eq!(found["tools"][0]["name"], build.as_str(), "{found:#}");
    assert_eq!(found["tools"][0]["input_schema"], listed[0]["params"]);
    let ran = call(
        &service,
        "toolsmith_run",
        json!({"name": build, "arguments": {"dir": "cli"}}),
    )
    .await
    .expect("toolsmith_run");
    assert!(text(&ran).contains("built cli"), "{}", text(&ran));
    let not_there = call(&service, "toolsmith_run", json!({"name": "nothing-here"}))
        .await
        .expect("toolsmith_run of an unknown tool is a result");
    assert_eq!(not_there.is_error, Some(true));

    // Every run was recorded for the health stage and logged for the miner.
    assert_eq!(
        executions(&env, &build),
        [
            ("mcp".to_owned(), true),
            ("mcp".to_owned(), false),
            ("mcp".to_owned(), true)
        ]
    );
    let log =
        std::fs::read_to_string(env.state().join("runs/toolsmith-runs.jsonl")).expect("runs log");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines.iter().all(|l| l["source"] == "toolsmith-mcp"));
    assert_eq!(
        lines[0]["input"]["command"],
        format!("toolsmith run {build} --param dir=core")
    );
    assert_eq!(lines[0]["cwd"], ws.display().to_string());

    // The registry changes under the running server: approval, rollback, deprecation.
    approve(&env, &b);
    wait_changed(&changed, "an approval").await;
    assert_eq!(
        names(&list(&service).await),
        [
            build.as_str(),
            test.as_str(),
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ],
        "the tool in use first, then the new one"
    );
    env.cli().args(["rollback", &test]).assert().success();
    wait_changed(&changed, "a rollback").await;
    assert!(!names(&list(&service).await).contains(&test));
    env.cli()
        .args(["deprecate", &build, "--reason", "use make all"])
        .assert()
        .success();
    wait_changed(&changed, "a deprecation").await;
    assert_eq!(
        names(&list(&service).await),
        [
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let deprecated = call(&service, &build, json!({"dir": "core"}))
        .await
        .expect("a deprecated tool is a result");
    assert_eq!(deprecated.is_error, Some(true));
    assert!(
        text(&deprecated).contains("deprecated: use make all"),
        "{}",
        text(&deprecated)
    );
    // A `git revert` by hand of the deprecation brings the tool back.
    let reverted = Command::new("git")
        .arg("-C")
        .arg(env.state().join("registry"))
        .args(["revert", "--no-edit", "HEAD"])
        .env("GIT_AUTHOR_NAME", "Ada Reviewer")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada Reviewer")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("HOME", env.path().join("home"))
        .output()
        .expect("git revert");
    assert!(
        reverted.status.success(),
        "{}",
        String::from_utf8_lossy(&reverted.stderr)
    );
    wait_changed(&changed, "a git revert by hand").await;
    assert_eq!(
        names(&list(&service).await),
        [
            build.as_str(),
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    service.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_hears_of_changes_on_its_subscription() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    let (service, _) = connect(&env, &ws, ProtocolVersion::V_2026_07_28, None).await;
    assert_eq!(
        names(&list(&service).await),
        [
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let mut subscription = tokio::time::timeout(
        PATIENCE,
        service
            .peer()
            .listen(SubscriptionFilter::builder().tools_list_changed().build()),
    )
    .await
    .expect("listen in time")
    .expect("listen");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    approve(&env, &a);
    let note = tokio::time::timeout(PATIENCE, subscription.next())
        .await
        .expect("a notification after the approval")
        .expect("subscription open")
        .expect("a notification");
    assert!(
        matches!(note, ServerNotification::ToolListChangedNotification(_)),
        "{note:?}"
    );
    assert_eq!(
        names(&list(&service).await),
        [
            build.as_str(),
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let ok = call(&service, &build, json!({"dir": "cli"}))
        .await
        .expect("call");
    assert!(text(&ok).contains("built cli"), "{}", text(&ok));
    service.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_description_budget_keeps_the_most_used_tools() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    let (b, test) = request(&env, "Test one package", "test");
    approve(&env, &a);
    approve(&env, &b);
    // Room for one description ("Build one package" and "Test one package" are 17 and 16).
    let config = env.write_config("[mcp]\ndescription_budget = 17\n");
    // The build tool is the one in use: three runs through the CLI.
    for _ in 0..3 {
        env.cli()
            .arg("run")
            .arg(&build)
            .args(["--param", "dir=core", "--workspace"])
            .arg(&ws)
            .assert()
            .success();
    }
    let (service, _) = connect(
        &env,
        &ws,
        ProtocolVersion::LATEST_WITH_INITIALIZE,
        Some(&config),
    )
    .await;
    let tools = list(&service).await;
    assert_eq!(
        names(&tools),
        [
            build.as_str(),
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let search = tools[1].description.as_deref().unwrap_or_default();
    assert!(
        search.contains("Registered tools: 2, 1 of them not listed"),
        "{search}"
    );
    // The one left out is found and run through the fixed tools.
    let found = call(&service, "toolsmith_search", json!({"query": "test"}))
        .await
        .expect("search")
        .structured_content
        .expect("structured");
    assert_eq!(found["tools"][0]["name"], test.as_str());
    let ran = call(
        &service,
        "toolsmith_run",
        json!({"name": test, "arguments": {"dir": "core"}}),
    )
    .await
    .expect("run");
    assert!(text(&ran).contains("tested core"), "{}", text(&ran));
    service.cancel().await.expect("close");
}

/// Whether the official Python SDK is installed; outside CI its absence skips the test, saying
/// so.
fn python_sdk() -> bool {
    let probe = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !probe {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the Python `mcp` package is missing: `.ci/run` installs it (pip install -r tests/requirements-mcp.txt)"
        );
        eprintln!(
            "skipped: the Python `mcp` package is not installed (pip install -r tests/requirements-mcp.txt)"
        );
    }
    probe
}

/// The official Python SDK (`mcp`, pinned in `tests/requirements-mcp.txt`, installed by
/// `.ci/run`) drives the server from `tests/mcp_client.py`.
#[test]
fn the_official_python_sdk_lists_calls_and_hears_of_an_approval() {
    if !python_sdk() {
        return;
    }
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    let (b, test) = request(&env, "Test one package", "test");
    approve(&env, &a);
    let mut command = Command::new("python3");
    env.apply(&mut command);
    let out = command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py"))
        .args([
            env!("CARGO_BIN_EXE_toolsmith"),
            &env.state().display().to_string(),
            &build,
            &test,
            &b,
        ])
        .current_dir(&ws)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "initialized",
        "listed",
        "called",
        "failed as a result",
        "list changed",
        "listed the new tool",
    ] {
        assert!(stdout.contains(&format!("ok: {step}")), "{stdout}");
    }
}

/// Every candidate's (id, origin), newest first, as `toolsmith candidates --json` lists them.
fn candidates(env: &TestEnv) -> Vec<(String, String)> {
    let out = env.cli().args(["--json", "candidates"]).assert().success();
    json_of(out.get_output())
        .as_array()
        .expect("a list")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id").to_owned(),
                c["origin"].as_str().expect("origin").to_owned(),
            )
        })
        .collect()
}

/// An agent asks for a tool with `toolsmith_request` over the official Python SDK
/// (`tests/mcp_request_client.py`): a request without examples is refused (no model here) and
/// makes no candidate; one with examples is a candidate of origin `request` recording the
/// agent and the session, which reaches review; a person approves it with `toolsmith approve`,
/// the client hears `tools/list_changed` and calls the new tool.
#[test]
fn an_agent_asks_for_a_tool_and_calls_it_once_a_person_approved_it() {
    if !python_sdk() {
        return;
    }
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (other, _) = request(&env, "Test one package", "test");
    let mut command = Command::new("python3");
    env.apply(&mut command);
    let out = command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_request_client.py"))
        .args([
            env!("CARGO_BIN_EXE_toolsmith"),
            &env.state().display().to_string(),
            &other,
        ])
        .current_dir(&ws)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "instructions tell of 1 proposal",
        "listed",
        "no examples, no model",
        "requested",
        "status went",
        "proposals listed, each told once",
        "list changed",
        "called the new tool",
        "status approved",
    ] {
        assert!(stdout.contains(&format!("ok: {step}")), "{stdout}");
    }
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
            .to_owned()
    };
    let (id, tool) = (field("candidate"), field("tool"));
    // The refused request made nothing: the other proposal and the request are all there is.
    assert_eq!(
        candidates(&env),
        [
            (id.clone(), "request".to_owned()),
            (other, "request".to_owned())
        ]
    );
    let shown = json_of(
        env.cli()
            .args(["--json", "show", &id])
            .assert()
            .success()
            .get_output(),
    );
    let c = &shown["candidate"];
    assert_eq!(c["origin"], "request");
    assert_eq!(c["state"], "approved");
    assert_eq!(c["asker"]["agent"], "pytest-agent 7.0");
    let session = c["asker"]["session"].as_str().expect("session");
    assert!(session.starts_with("mcp-"), "{session}");
    let human = env.cli().args(["show", &id]).assert().success();
    let human = String::from_utf8_lossy(&human.get_output().stdout).into_owned();
    assert!(
        human.contains(&format!(
            "requested by: pytest-agent 7.0 (MCP session {session})"
        )),
        "{human}"
    );
    // The commit on main says who asked, beside the usual trailers.
    let message = common::tamper::git(
        &env,
        &[
            "log",
            "-1",
            "--format=%B",
            "main",
            "--",
            &format!("tools/{tool}"),
        ],
    );
    assert!(message.contains("Origin: request"), "{message}");
    assert!(
        message.contains(&format!(
            "Requested-by: pytest-agent 7.0 (MCP session {session})"
        )),
        "{message}"
    );
}

/// Asks `toolsmith_request_status` about `id` until its request settles (awaits review, or
/// ended), as an agent following it would; its last answer.
pub(crate) async fn settled(service: &RunningService<RoleClient, Client>, id: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..600 {
        let status = call(service, "toolsmith_request_status", json!({"id": id}))
            .await
            .expect("status");
        last = status.structured_content.clone().expect("structured");
        if !matches!(
            last["state"].as_str(),
            Some("queued" | "generating" | "validating")
        ) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the request did not settle: {last}");
}

/// With the daemon holding the state directory, the daemon generates a request (the server
/// cannot take the directory), and the candidate is the one whose id the agent was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_daemon_running_the_daemon_generates_the_request() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    // The registry is made first: a server starting while the daemon makes it finds a
    // directory that is not a repository yet.
    env.cli().arg("tools").assert().success();
    let mut daemon = common::Daemon::start(&env, env.daemon_command());
    let (service, _) = connect(&env, &ws, ProtocolVersion::LATEST, None).await;
    let asked = call(
        &service,
        "toolsmith_request",
        json!({"description": "Build one package",
               "examples": ["make build -C core", "make build -C cli"]}),
    )
    .await
    .expect("call");
    assert_eq!(asked.is_error, Some(false), "{}", text(&asked));
    let id = asked.structured_content.as_ref().expect("structured")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let status = settled(&service, &id).await;
    assert_eq!(status["state"], "awaiting-review", "{status}");
    assert!(
        status["next"]
            .as_str()
            .is_some_and(|n| n.contains("toolsmith ui")),
        "{status}"
    );
    service.cancel().await.expect("close");
    assert!(daemon.is_running(), "{}", daemon.log());
    assert_eq!(candidates(&env), [(id, "request".to_owned())]);
}

/// A request without examples goes to the model when one is configured: the candidate is the
/// model's, validated in the sandbox like any other, awaiting review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_examples_is_written_by_the_configured_model() {
    use crate::generate::{GOOD_SCRIPT, greeting_reply};
    use common::llm_server::{LlmServer, Reply};
    let env = TestEnv::new();
    let ws = workspace(&env);
    let server = LlmServer::start(vec![Reply::openai(&greeting_reply(GOOD_SCRIPT))]);
    let config = env.write_config(&format!(
        "[generate]\nbackend = \"llm\"\nmax_attempts = 1\n\n\
         [llm]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"test-model\"\n\
         api_key_env = \"TOOLSMITH_TEST_KEY\"\nmax_retries = 0\n",
        server.url
    ));
    let (service, _) = connect_with(
        &env,
        &ws,
        ProtocolVersion::LATEST,
        Some(&config),
        &[("TOOLSMITH_TEST_KEY", "sk-test")],
    )
    .await;
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
    let status = settled(&service, &id).await;
    assert_eq!(status["state"], "awaiting-review", "{status}");
    service.cancel().await.expect("close");
    assert_eq!(server.received().len(), 1, "the model was asked once");
    let shown = json_of(
        env.cli()
            .arg("--config")
            .arg(&config)
            .args(["--json", "show", &id])
            .assert()
            .success()
            .get_output(),
    );
    assert_eq!(shown["candidate"]["origin"], "request");
    assert_eq!(shown["candidate"]["generator"], "llm:test-model");
}

/// With the state directory held by another one-shot process and no daemon to queue it, the
/// request fails saying so (its status), rather than waiting for ever or seeming queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_while_another_process_generates_fails_saying_so() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    env.cli().arg("tools").assert().success();
    let held = toolsmith::daemon::lock::acquire(&env.state().join("toolsmithd.lock"))
        .expect("the test holds the state directory");
    let (service, _) = connect(&env, &ws, ProtocolVersion::LATEST, None).await;
    let asked = call(
        &service,
        "toolsmith_request",
        json!({"description": "Build one package",
               "examples": ["make build -C core", "make build -C cli"]}),
    )
    .await
    .expect("call");
    let id = asked.structured_content.as_ref().expect("structured")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let status = settled(&service, &id).await;
    assert_eq!(status["state"], "failed", "{status}");
    assert!(
        status["reason"]
            .as_str()
            .is_some_and(|r| r.contains("another toolsmith process is generating")),
        "{status}"
    );
    service.cancel().await.expect("close");
    drop(held);
}

/// Requests are untrusted: a request past a cap or past the session's hourly rate is refused
/// with the reason and makes no candidate; with the rate at 0 the tool is not offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_their_caps_or_the_sessions_rate_make_no_candidate() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let config = env.write_config("[mcp]\nrequests_per_hour = 1\n");
    let (service, _) = connect(&env, &ws, ProtocolVersion::LATEST, Some(&config)).await;
    let too_long = call(
        &service,
        "toolsmith_request",
        json!({"description": "x".repeat(2001), "examples": ["make build -C core"]}),
    )
    .await
    .expect("call");
    assert_eq!(too_long.is_error, Some(true));
    assert!(
        text(&too_long).contains("`description` is 2001 characters long; at most 2000"),
        "{}",
        text(&too_long)
    );
    let example = call(
        &service,
        "toolsmith_request",
        json!({"description": "Build", "examples": [format!("make {}", "b".repeat(1000))]}),
    )
    .await
    .expect("call");
    assert!(
        text(&example).contains("example 1 is 1005 characters long; at most 1000"),
        "{}",
        text(&example)
    );
    let asked = call(
        &service,
        "toolsmith_request",
        json!({"description": "Build one package",
               "examples": ["make build -C core", "make build -C cli"]}),
    )
    .await
    .expect("call");
    assert_eq!(asked.is_error, Some(false), "{}", text(&asked));
    let id = asked.structured_content.as_ref().expect("structured")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let again = call(
        &service,
        "toolsmith_request",
        json!({"description": "Test one package",
               "examples": ["make test -C core", "make test -C cli"]}),
    )
    .await
    .expect("call");
    assert_eq!(again.is_error, Some(true));
    assert!(
        text(&again)
            .contains("made 1 requests in the last hour, the most mcp.requests_per_hour allows"),
        "{}",
        text(&again)
    );
    // The one request taken is generated; the session waits for it before closing.
    assert_eq!(settled(&service, &id).await["state"], "awaiting-review");
    service.cancel().await.expect("close");
    assert_eq!(candidates(&env), [(id, "request".to_owned())]);

    let off = env.write_config("[mcp]\nrequests_per_hour = 0\n");
    let (service, _) = connect(&env, &ws, ProtocolVersion::LATEST, Some(&off)).await;
    let listed = names(&list(&service).await);
    assert!(
        !listed.contains(&"toolsmith_request".to_owned()),
        "{listed:?}"
    );
    assert!(
        listed.contains(&"toolsmith_proposals".to_owned()),
        "{listed:?}"
    );
    let refused = call(
        &service,
        "toolsmith_request",
        json!({"description": "Build", "examples": ["make build -C core"]}),
    )
    .await
    .expect("call");
    assert!(
        text(&refused).contains("requests are turned off here"),
        "{}",
        text(&refused)
    );
    service.cancel().await.expect("close");
    assert_eq!(candidates(&env).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_changed_on_main_without_review_is_neither_listed_nor_run() {
    use common::tamper::{Form, commit_by_hand, edit, git};
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    approve(&env, &a);
    let (service, changed) =
        connect(&env, &ws, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
    assert_eq!(
        names(&list(&service).await),
        [
            build.as_str(),
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    // Each way of changing it by hand, its digest recomputed as toolsmith computes it.
    type Change = Box<dyn Fn(String) -> String>;
    let changes: [(&str, Form, Change); 3] = [
        (
            "run.sh",
            Form::V2,
            Box::new(|t| format!("{t}\necho injected\n")),
        ),
        (
            "run.sh",
            Form::V1,
            Box::new(|t| format!("{t}\necho injected\n")),
        ),
        (
            "tool.yaml",
            Form::V2,
            Box::new(|t| {
                t.replace("memory_mb: 512", "memory_mb: 4096")
                    .replace("workspace: read", "workspace: write")
            }),
        ),
    ];
    for (file, form, change) in changes {
        edit(&env, &build, file, change);
        commit_by_hand(&env, &build, form, "a change by hand");
        wait_changed(&changed, "a commit by hand").await;
        assert_eq!(
            names(&list(&service).await),
            [
                "toolsmith_search",
                "toolsmith_run",
                "toolsmith_request",
                "toolsmith_request_status",
                "toolsmith_proposals"
            ],
            "{file} {form:?}"
        );
        let refused = call(&service, &build, json!({"dir": "core"}))
            .await
            .expect("a refused tool is a result");
        assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
        let said = text(&refused);
        assert!(
            said.contains(&format!("differ from what was approved as {build}/v1.0.0"))
                && said.contains(&format!("{file} changed"))
                && said.contains(&format!("toolsmith adopt {build}")),
            "{said}"
        );
        let via_run = call(
            &service,
            "toolsmith_run",
            json!({"name": build, "arguments": {"dir": "core"}}),
        )
        .await
        .expect("toolsmith_run");
        assert_eq!(via_run.is_error, Some(true), "{}", text(&via_run));
        let found = call(&service, "toolsmith_search", json!({"query": "build"}))
            .await
            .expect("search")
            .structured_content
            .expect("structured");
        assert_eq!(found["tools"], json!([]), "{found:#}");
        git(&env, &["revert", "--no-edit", "HEAD"]);
        wait_changed(&changed, "a revert").await;
        assert_eq!(
            names(&list(&service).await),
            [
                build.as_str(),
                "toolsmith_search",
                "toolsmith_run",
                "toolsmith_request",
                "toolsmith_request_status",
                "toolsmith_proposals"
            ]
        );
    }
    assert!(executions(&env, &build).is_empty(), "nothing ran");
    service.cancel().await.expect("close");
}

/// Lines a client cannot have meant — not JSON, an array nested 100,000 deep, JSON that is no
/// JSON-RPC message — are answered as JSON-RPC 2.0 asks (−32700 Parse error, −32600 Invalid
/// Request, `id: null`), and the session goes on: `tools/list` still answers, on plain stdio.
#[test]
fn unreadable_lines_get_json_rpc_errors_and_the_session_goes_on() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let env = TestEnv::new();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut command);
    let mut server = command
        .arg("--state")
        .arg(env.state())
        .arg("mcp")
        .current_dir(env.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolsmith mcp");
    let mut input = server.stdin.take().expect("stdin");
    let output = server.stdout.take().expect("stdout");
    // Lines are read on a thread of their own, so a server that never answers fails the test
    // instead of hanging it.
    let (lines, answers) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let answer = |after: &str| -> Value {
        loop {
            let line = answers
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("no answer to {after}"));
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            // Notifications are not answers.
            if message.get("method").is_none() {
                return message;
            }
        }
    };
    let mut send = |line: &[u8]| {
        input.write_all(line).expect("write");
        input.write_all(b"\n").expect("write");
        input.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string()
        .as_bytes(),
    );
    let initialized = answer("initialize");
    assert_eq!(initialized["id"], 1, "{initialized}");
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    send(b"this is not JSON {");
    let garbage = answer("a line that is not JSON");
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
    assert!(
        garbage.as_object().is_some_and(|o| o["id"].is_null()),
        "JSON-RPC 2.0 wants `id: null`: {garbage}"
    );

    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    send(deep.as_bytes());
    let nested = answer("an array nested 100,000 deep");
    assert_eq!(nested["error"]["code"], -32700, "{nested}");
    assert!(nested["id"].is_null(), "{nested}");

    send(br#"{"hello":"world"}"#);
    let invalid = answer("JSON that is no JSON-RPC message");
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    assert!(invalid["id"].is_null(), "{invalid}");

    send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let listed = answer("tools/list");
    assert_eq!(listed["id"], 2, "{listed}");
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"toolsmith_search"), "{listed}");

    // The client closes the session: the server ends, successfully.
    drop(input);
    let status = server.wait().expect("wait");
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_refuse_workspaces_with_toolsmiths_files_and_values_like_options() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    approve(&env, &a);
    std::fs::create_dir_all(env.path().join("config/toolsmith")).expect("mkdir");
    // The server's directory is the workspace: one that holds, is or lies inside one of
    // toolsmith's own directories is refused, as a result the agent reads.
    for (dir, says) in [
        (
            env.path().to_path_buf(),
            "contains toolsmith's state directory",
        ),
        (env.state(), "is toolsmith's state directory"),
        (env.state().join("registry"), "is toolsmith's registry"),
        (
            env.path().join("config/toolsmith"),
            "is toolsmith's configuration directory",
        ),
    ] {
        let (service, _) = connect(&env, &dir, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
        let refused = call(&service, &build, json!({"dir": "core"}))
            .await
            .expect("a refusal is a result");
        assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
        assert!(
            text(&refused).contains(says),
            "{}: {}",
            dir.display(),
            text(&refused)
        );
        service.cancel().await.expect("close");
    }
    // In a project, a value beginning with `-` (never seen in the log) is refused by name.
    let (service, _) = connect(&env, &ws, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
    let dashed = call(&service, &build, json!({"dir": "--version"}))
        .await
        .expect("a refusal is a result");
    assert_eq!(dashed.is_error, Some(true));
    assert!(
        text(&dashed).contains("parameter `dir`") && text(&dashed).contains("begins with `-`"),
        "{}",
        text(&dashed)
    );
    let ok = call(&service, &build, json!({"dir": "core"}))
        .await
        .expect("call");
    assert!(text(&ok).contains("built core"), "{}", text(&ok));
    service.cancel().await.expect("close");
    assert_eq!(executions(&env, &build), [("mcp".to_owned(), true)]);
}

/// The tool names a fresh session lists.
async fn listed_now(env: &TestEnv, ws: &Path) -> Vec<String> {
    let (service, _) = connect(env, ws, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
    let names = names(&list(&service).await);
    service.cancel().await.expect("close");
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_changed_in_the_work_tree_is_not_listed() {
    use common::tamper::edit;
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    approve(&env, &a);
    assert_eq!(
        listed_now(&env, &ws).await,
        [
            build.as_str(),
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    // Changed on disk, not committed: a call is refused, so it is not offered.
    edit(&env, &build, "run.sh", |t| format!("{t}\necho injected\n"));
    let (service, _) = connect(&env, &ws, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
    assert_eq!(
        names(&list(&service).await),
        [
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let refused = call(&service, &build, json!({"dir": "core"}))
        .await
        .expect("a refused tool is a result");
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    let found = call(&service, "toolsmith_search", json!({"query": "build"}))
        .await
        .expect("search")
        .structured_content
        .expect("structured");
    assert_eq!(found["tools"], json!([]), "{found:#}");
    service.cancel().await.expect("close");
    // `toolsmith verify` names what is wrong with it.
    let out = env.cli().args(["--json", "verify"]).assert().code(1);
    let report = json_of(out.get_output());
    assert!(
        report["problems"][0]
            .as_str()
            .is_some_and(|p| p.contains("its files on disk differ from main")),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_whose_ledger_was_removed_serves_nothing_it_cannot_vouch_for() {
    use common::tamper::{Form, commit_by_hand, edit, git};
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    approve(&env, &a);
    let tag = format!("{build}/v1.0.0");
    edit(&env, &build, "run.sh", |t| format!("{t}\necho injected\n"));
    commit_by_hand(&env, &build, Form::V2, "a change by hand");
    git(&env, &["tag", "-d", &tag]);
    git(&env, &["tag", "-a", "-m", "approved", &tag]);
    std::fs::remove_file(env.state().join("registry/.git/toolsmith-ledger")).expect("rm");
    let (service, _) = connect(&env, &ws, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
    assert_eq!(
        names(&list(&service).await),
        [
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let refused = call(&service, &build, json!({"dir": "core"}))
        .await
        .expect("a refused tool is a result");
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(
        text(&refused).contains("toolsmith reapprove"),
        "{}",
        text(&refused)
    );
    service.cancel().await.expect("close");
    assert!(executions(&env, &build).is_empty(), "nothing ran");
}

/// A fresh session lists `build` and runs it.
async fn serves(env: &TestEnv, ws: &Path, build: &str) {
    let (service, _) = connect(env, ws, ProtocolVersion::LATEST_WITH_INITIALIZE, None).await;
    assert_eq!(
        names(&list(&service).await),
        [
            build,
            "toolsmith_search",
            "toolsmith_run",
            "toolsmith_request",
            "toolsmith_request_status",
            "toolsmith_proposals"
        ]
    );
    let ran = call(&service, build, json!({"dir": "core"}))
        .await
        .expect("call");
    assert_ne!(ran.is_error, Some(true), "{}", text(&ran));
    assert!(text(&ran).contains("built core"), "{}", text(&ran));
    service.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_registry_and_a_stale_lock_still_serve_tools() {
    let env = TestEnv::new();
    let ws = workspace(&env);
    let (a, build) = request(&env, "Build one package", "build");
    approve(&env, &a);
    let (b, _) = request(&env, "Test one package", "test");
    // A stale git lock, and the approval it made fail half-way.
    let lock = env.state().join("registry/.git/index.lock");
    std::fs::write(&lock, b"").expect("lock");
    env.cli().args(["approve", &b]).assert().code(1);
    serves(&env, &ws, &build).await;
    std::fs::remove_file(&lock).expect("rm the lock");
    // Read-only: a read-only bind mount, as a shared checkout would be.
    let Some(_ro) = common::ReadOnlyMount::new(&env.state().join("registry")) else {
        return;
    };
    serves(&env, &ws, &build).await;
}
