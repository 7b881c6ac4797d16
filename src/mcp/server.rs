//! `toolsmith mcp`: the registry's tools over the Model Context Protocol, on stdio, with the
//! official Rust SDK (`rmcp`) on a transport of our own ([`LineTransport`]) that answers lines
//! it cannot read with JSON-RPC errors instead of dropping them.
//!
//! - `tools/list`: the active tools (approved, not deprecated, valid, their files on disk
//!   those of `main`: what a call would refuse is not offered), ranked by
//!   [`catalog::rank`] and cut to the description budget by [`catalog::fit`], then the two fixed
//!   tools [`SEARCH_TOOL`] and [`RUN_TOOL`], which reach every tool however many there are and
//!   whether or not the client re-lists after a change.
//! - `tools/call`: runs the tool's version on `main` in the sandbox exactly as `toolsmith run`
//!   does ([`run::prepare`], [`run::PreparedRun::run`]), with the server's working directory
//!   (the agent's project) as the workspace when the profile grants one, and records the run
//!   ([`run::RunRecorder`]). The session keeps one registry handle, opened and reconciled once
//!   and again after each change the refs watch sees; a call reads `main` and checks the tool's
//!   files on disk, but a version already found valid (by its tree) is not validated again.
//!   Whatever goes wrong with a run — arguments that do not fit the schema, a tool that fails,
//!   times out or was tampered with — is an `isError` result the agent can read; only a name
//!   that is no tool at all is a protocol error, as the specification asks.
//! - The registry's refs are watched with inotify; when the set of active tools changes
//!   (approval, rollback, deprecation, a `git revert` by hand), `notifications/tools/list_changed`
//!   goes to the client, on the session (protocol versions with `initialize`) and on every
//!   `subscriptions/listen` subscription that asked for it (2026-07-28).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::catalog::{self, Usage};
use super::transport::LineTransport;
use crate::health::executions::{Caller, Execution};
use crate::package::manifest::{Manifest, OutputKind};
use crate::registry::repo::{Registry, RegistryError, ToolEntry};
use crate::run::{self, PreparedRun, RunError, RunRecorder, RunRequest, ToolRun};
use crate::sandbox::WorkspaceAccess;
use crate::sandbox::{Exit, LimitHit, OwnPlaces, SandboxPolicy};
use crate::store;

/// The fixed tool that finds registered tools by words.
pub const SEARCH_TOOL: &str = "toolsmith_search";

/// The fixed tool that runs a registered tool by name.
pub const RUN_TOOL: &str = "toolsmith_run";

/// Results `toolsmith_search` gives when the call does not say.
const SEARCH_DEFAULT_LIMIT: usize = 10;

/// Most results one search gives.
const SEARCH_MAX_LIMIT: usize = 50;

/// How long to let a burst of ref updates (a merge writes several) settle.
const SETTLE: Duration = Duration::from_millis(150);

/// What the server needs: where things are and how to run tools.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// The registry repository.
    pub registry: PathBuf,
    /// The state directory (the runs log is written under it).
    pub state_dir: PathBuf,
    /// The store, when it exists: runs are recorded in it and usage read from it.
    pub store: PathBuf,
    /// The sandbox policy runs follow.
    pub policy: SandboxPolicy,
    /// Characters the listed tools' descriptions may take together.
    pub description_budget: usize,
    /// The workspace tools that ask for one get (default: the server's working directory).
    pub workspace: Option<PathBuf>,
    /// toolsmith's own places, which the workspace must stay clear of (a server started in
    /// the home directory, say, runs no tool that wants a workspace).
    pub own: OwnPlaces,
}

/// Why the server stopped before serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The registry could not be opened.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The MCP session could not start (the client went away, or spoke something else).
    #[error("the MCP session did not start: {0}")]
    Session(String),
}

/// The MCP server: cheap to clone, every clone the same server.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    settings: ServerSettings,
    /// A writable connection to the store, opened on first use when the store exists.
    store: Mutex<Option<rusqlite::Connection>>,
    /// Open `subscriptions/listen` subscriptions to tool list changes.
    subscriptions: Mutex<Vec<SubscriptionSink>>,
    /// Tool definitions already built, by name, with the tree they were built from: a listing
    /// reads only the manifests that changed since the last one.
    definitions: Mutex<HashMap<String, (String, Tool)>>,
    /// Approval times already read, by tag object.
    approvals: Mutex<HashMap<git2::Oid, i64>>,
    /// The session's registry handle: opened and reconciled on first use, forgotten when the
    /// refs watch sees a change (the next use opens and reconciles it again). Held only while
    /// a call reads the registry, never while a tool runs.
    registry: Mutex<Option<Registry>>,
}

/// What a call resolved to before running.
enum Resolved {
    /// Ready to run.
    Ready(Box<PreparedRun>),
    /// Refused: a result the agent reads.
    Refused(CallToolResult),
    /// No such tool, called by its own name: the protocol's "unknown tool".
    Unknown(McpError),
}

/// Locks a mutex, taking over one a panicked holder poisoned.
fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl McpServer {
    /// A server for `settings`; the registry is created on first use, as by any toolsmith
    /// command.
    pub fn new(settings: ServerSettings) -> McpServer {
        McpServer {
            inner: Arc::new(Inner {
                settings,
                store: Mutex::new(None),
                subscriptions: Mutex::new(Vec::new()),
                definitions: Mutex::new(HashMap::new()),
                approvals: Mutex::new(HashMap::new()),
                registry: Mutex::new(None),
            }),
        }
    }

    /// Runs blocking work (git, SQLite, the sandbox) off the protocol's task.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Inner) -> T + Send + 'static,
    ) -> Result<T, McpError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|e| McpError::internal_error(format!("toolsmith mcp: {e}"), None))
    }
}

impl Inner {
    /// Runs `work` with the store's connection, opening it the first time; `None` when there is
    /// no store (no daemon ever ran) or it cannot be opened (said once in the log).
    fn with_store<T>(&self, work: impl FnOnce(Option<&rusqlite::Connection>) -> T) -> T {
        let mut slot = match self.store.lock() {
            Ok(slot) => slot,
            Err(poisoned) => poisoned.into_inner(),
        };
        if slot.is_none() && self.settings.store.exists() {
            match store::open_for_update(&self.settings.store) {
                Ok(conn) => *slot = Some(conn),
                Err(e) => tracing::warn!("runs are not recorded in the store: {e}"),
            }
        }
        work(slot.as_ref())
    }

    /// Runs `work` with the session's registry, opening it the first time and after a change
    /// (finishing what a crash interrupted, as every toolsmith command does).
    fn with_registry<T>(
        &self,
        work: impl FnOnce(&Registry) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        let mut slot = locked(&self.registry);
        let registry = match slot.take() {
            Some(registry) => registry,
            None => {
                let registry =
                    Registry::open_or_init(&self.settings.registry, &self.settings.state_dir)?;
                // A read: never waits for a lock nor needs to write (a read-only registry, a
                // stale lock); what is committed is served, and only what was approved runs.
                for note in registry.reconcile_if_free().notes {
                    tracing::warn!("registry {}: {note}", self.settings.registry.display());
                }
                registry
            }
        };
        let result = work(&registry);
        *slot = Some(registry);
        result
    }

    /// Forgets the registry handle: the refs changed, so the next use reconciles again.
    fn forget_registry(&self) {
        *locked(&self.registry) = None;
    }

    /// The active tools, best first.
    fn ranked(&self, registry: &Registry) -> Result<Vec<ToolEntry>, RegistryError> {
        let tools = registry.tools()?;
        let approved = {
            let mut known = match self.approvals.lock() {
                Ok(k) => k,
                Err(poisoned) => poisoned.into_inner(),
            };
            registry.approval_times(&mut known)
        };
        let now_ms = jiff::Timestamp::now().as_millisecond();
        let usage = self.with_store(|conn| {
            conn.map(|c| Usage::load(c, now_ms))
                .transpose()
                .unwrap_or_else(|e| {
                    tracing::warn!("tool usage could not be read from the store: {e}");
                    None
                })
                .unwrap_or_default()
        });
        Ok(catalog::rank(&tools, &usage, &approved, now_ms)
            .into_iter()
            .cloned()
            .collect())
    }

    /// `tools/list`: the ranked tools that fit the budget, then the fixed tools.
    fn list(&self) -> Result<Vec<Tool>, RegistryError> {
        self.with_registry(|registry| self.list_from(registry))
    }

    fn list_from(&self, registry: &Registry) -> Result<Vec<Tool>, RegistryError> {
        let mut ranked = self.ranked(registry)?;
        let budget = self.settings.description_budget;
        offer_runnable(registry, &mut ranked, |r| catalog::fit(r, budget).listed)?;
        let ranked: Vec<&ToolEntry> = ranked.iter().collect();
        let listing = catalog::fit(&ranked, budget);
        let mut tools = Vec::with_capacity(listing.listed.len() + 2);
        let mut definitions = match self.definitions.lock() {
            Ok(d) => d,
            Err(poisoned) => poisoned.into_inner(),
        };
        for entry in &listing.listed {
            if let Some((tree, tool)) = definitions.get(&entry.name)
                && *tree == entry.tree
            {
                tools.push(tool.clone());
                continue;
            }
            // The entry was checked (digest, approval) by the listing; a call checks again.
            match registry.listed_manifest(entry) {
                Some(manifest) => {
                    let tool = mcp_tool(&manifest);
                    definitions.insert(entry.name.clone(), (entry.tree.clone(), tool.clone()));
                    tools.push(tool);
                }
                None => tracing::warn!("{} is not listed: its manifest does not read", entry.name),
            }
        }
        tools.push(search_tool(ranked.len(), listing.hidden));
        tools.push(run_tool_definition());
        Ok(tools)
    }

    /// `toolsmith_search`.
    fn search(&self, args: &JsonObject) -> CallToolResult {
        let query = match args.get("query") {
            None | Some(Value::Null) => "",
            Some(Value::String(q)) => q.as_str(),
            Some(_) => return tool_error("toolsmith_search: `query` must be a string of words"),
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => SEARCH_DEFAULT_LIMIT,
            Some(v) => match v.as_u64() {
                Some(n @ 1..) => (n as usize).min(SEARCH_MAX_LIMIT),
                _ => {
                    return tool_error(&format!(
                        "toolsmith_search: `limit` must be a whole number from 1 to {SEARCH_MAX_LIMIT}"
                    ));
                }
            },
        };
        if let Some(key) = args.keys().find(|k| *k != "query" && *k != "limit") {
            return tool_error(&format!(
                "toolsmith_search: unknown argument `{key}`; it takes `query` and `limit`"
            ));
        }
        let found = self.with_registry(|registry| {
            let mut ranked = self.ranked(registry)?;
            offer_runnable(registry, &mut ranked, |r| catalog::search(r, query, limit))?;
            let ranked: Vec<&ToolEntry> = ranked.iter().collect();
            let found: Vec<Manifest> = catalog::search(&ranked, query, limit)
                .into_iter()
                .filter_map(|entry| registry.listed_manifest(entry))
                .collect();
            Ok((found, ranked.len()))
        });
        let (found, registered) = match found {
            Ok(found) => found,
            Err(e) => return tool_error(&format!("the registry cannot be read: {e}")),
        };
        let found: Vec<Value> = found
            .into_iter()
            .map(|m| {
                json!({
                    "name": m.name,
                    "version": m.version.to_string(),
                    "description": m.description,
                    "input_schema": m.interface.params,
                    "output": m.interface.output,
                    "workspace": m.sandbox.workspace.to_string(),
                })
            })
            .collect();
        CallToolResult::structured(json!({
            "tools": found,
            "registered": registered,
            "how_to_run": format!(
                "call {RUN_TOOL} with {{\"name\": <name>, \"arguments\": {{...}}}}, the arguments \
                 following the tool's input_schema"
            ),
        }))
    }

    /// Runs a registered tool. `Err` only when `direct` (called by its own name) and the name is
    /// no registered tool: that is the protocol's "unknown tool".
    fn run(
        &self,
        name: &str,
        params: Map<String, Value>,
        direct: bool,
        agent: Option<String>,
    ) -> Result<CallToolResult, McpError> {
        let request = RunRequest {
            name: name.to_owned(),
            params,
            workspace: self.settings.workspace.clone(),
            own: self.settings.own.clone(),
            caller: Caller::Mcp,
            agent,
        };
        let resolved = self.with_registry(|registry| Ok(self.resolve(registry, &request, direct)));
        let prepared = match resolved {
            Ok(Resolved::Ready(prepared)) => prepared,
            Ok(Resolved::Refused(result)) => return Ok(result),
            Ok(Resolved::Unknown(error)) => return Err(error),
            Err(e) => return Ok(tool_error(&format!("the registry cannot be read: {e}"))),
        };
        // The registry is let go of: a long run holds up no other call.
        Ok(match prepared.run(&request) {
            Ok(done) => {
                self.with_store(|conn| {
                    RunRecorder {
                        state_dir: &self.settings.state_dir,
                        store: conn,
                    }
                    .record(&request, &done)
                });
                run_result(&done)
            }
            Err(e) => tool_error(&e.to_string()),
        })
    }

    /// The checks of a call before it runs: the tool exists, is not deprecated, is runnable, and
    /// takes these parameters.
    fn resolve(&self, registry: &Registry, request: &RunRequest, direct: bool) -> Resolved {
        let name = request.name.as_str();
        match registry.tool(name) {
            Ok(entry) if entry.deprecated => {
                let why = entry
                    .manifest
                    .as_ref()
                    .and_then(|m| m.deprecated.as_ref())
                    .map(|d| {
                        let mut text = d.reason.clone();
                        if let Some(by) = &d.replaced_by {
                            text.push_str(&format!("; use {by} instead"));
                        }
                        text
                    })
                    .unwrap_or_default();
                return Resolved::Refused(tool_error(&format!("{name} is deprecated: {why}")));
            }
            Ok(_) => {}
            Err(RegistryError::NoSuchTool(_)) => {
                let message = format!(
                    "no tool named {name} in the registry (never approved, or rolled back); \
                     {SEARCH_TOOL} finds the registered tools"
                );
                return if direct {
                    Resolved::Unknown(McpError::invalid_params(message, None))
                } else {
                    Resolved::Refused(tool_error(&message))
                };
            }
            Err(e) => return Resolved::Refused(tool_error(&e.to_string())),
        }
        match run::prepare(registry, request, &self.settings.policy, None) {
            Ok(prepared) => Resolved::Ready(Box::new(prepared)),
            Err(RunError::Params { name, source }) => {
                let schema = registry
                    .tool(&name)
                    .ok()
                    .and_then(|e| e.manifest)
                    .map(|m| m.interface.params.to_string())
                    .unwrap_or_default();
                Resolved::Refused(tool_error(&format!(
                    "{source}. The input schema of {name}: {schema}"
                )))
            }
            Err(e) => Resolved::Refused(tool_error(&e.to_string())),
        }
    }

    /// What the active tools are: changes when one is approved, updated, rolled back,
    /// deprecated, broken or removed.
    fn fingerprint(&self) -> Result<Vec<(String, String)>, RegistryError> {
        self.with_registry(|registry| {
            Ok(registry
                .tools()?
                .into_iter()
                .filter(catalog::is_active)
                .map(|t| (t.name, t.tree))
                .collect())
        })
    }
}

/// Leaves out of `ranked` the tools `pick` would offer whose files on disk differ from `main`
/// (a call would refuse them), picking again until what it picks is runnable: only the tools
/// offered are checked, each once, so a registry of thousands is not hashed for a list.
fn offer_runnable(
    registry: &Registry,
    ranked: &mut Vec<ToolEntry>,
    pick: impl for<'a> Fn(&[&'a ToolEntry]) -> Vec<&'a ToolEntry>,
) -> Result<(), RegistryError> {
    let mut checked = std::collections::HashSet::new();
    loop {
        let refs: Vec<&ToolEntry> = ranked.iter().collect();
        let mut changed = Vec::new();
        for entry in pick(&refs) {
            if checked.insert(entry.name.clone())
                && let Some(problem) = registry.disk_problem_now(&entry.name)?
            {
                tracing::info!("{} is not offered: {problem}", entry.name);
                changed.push(entry.name.clone());
            }
        }
        if changed.is_empty() {
            return Ok(());
        }
        ranked.retain(|e| !changed.contains(&e.name));
    }
}

/// A tool-level error: the agent reads `message`.
fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A registered tool as MCP describes it.
fn mcp_tool(m: &Manifest) -> Tool {
    let input = match &m.interface.params {
        Value::Object(schema) => schema.clone(),
        _ => JsonObject::new(),
    };
    let mut tool = Tool::new(m.name.clone(), m.description.clone(), input)
        .with_title(format!("{} {}", m.name, m.version))
        .with_annotations(
            ToolAnnotations::new()
                .read_only(m.sandbox.workspace != WorkspaceAccess::Write)
                .destructive(false)
                .open_world(false),
        );
    // Structured content is given for a JSON object; a schema is promised only for one.
    if m.interface.output == OutputKind::Json
        && let Some(Value::Object(schema)) = &m.interface.output_schema
        && schema.get("type").and_then(Value::as_str) == Some("object")
    {
        tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
    }
    tool
}

fn search_tool(registered: usize, hidden: usize) -> Tool {
    let mut description = format!(
        "Finds the tools registered in toolsmith (tools made from this codebase's own repeated \
         work, reviewed and sandboxed) by words in their names and descriptions, with each \
         one's input schema; run one with {RUN_TOOL}. Registered tools: {registered}"
    );
    if hidden > 0 {
        description.push_str(&format!(
            ", {hidden} of them not listed here (the list is cut to fit the context budget)"
        ));
    }
    description.push('.');
    Tool::new(
        SEARCH_TOOL,
        description,
        object_schema(json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words to look for, e.g. \"test coverage\"; empty lists the most used tools"
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": SEARCH_MAX_LIMIT,
                    "default": SEARCH_DEFAULT_LIMIT,
                    "description": "Most tools to return"
                }
            },
            "additionalProperties": false
        })),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .open_world(false),
    )
}

fn run_tool_definition() -> Tool {
    Tool::new(
        RUN_TOOL,
        format!(
            "Runs a toolsmith tool by name in its sandbox, with arguments following the input \
             schema {SEARCH_TOOL} gives; the same as calling the tool itself, for tools not \
             listed here or approved since the list was read."
        ),
        object_schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name"},
                "arguments": {
                    "type": "object",
                    "description": "The tool's arguments",
                    "additionalProperties": true
                }
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    )
    .with_annotations(ToolAnnotations::new().open_world(false))
}

fn object_schema(schema: Value) -> JsonObject {
    match schema {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

/// A finished run as a tool result.
fn run_result(done: &ToolRun) -> CallToolResult {
    result_of(&Finished {
        output: done.manifest.interface.output,
        execution: &done.execution,
        exit: done.report.exit,
        limit: done.report.limit,
        stdout: &done.report.stdout.bytes,
        stderr: &done.report.stderr.bytes,
    })
}

/// What a result is made of.
struct Finished<'a> {
    output: OutputKind,
    execution: &'a Execution,
    exit: Exit,
    limit: Option<LimitHit>,
    stdout: &'a [u8],
    stderr: &'a [u8],
}

/// The output, structured when the tool prints a JSON object; a failed run an error result
/// that says how it failed and shows what it printed.
fn result_of(run: &Finished<'_>) -> CallToolResult {
    let stdout = String::from_utf8_lossy(run.stdout);
    let stderr = String::from_utf8_lossy(run.stderr);
    let e = run.execution;
    if e.ok {
        if run.output == OutputKind::Json
            && let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(&stdout)
        {
            return CallToolResult::structured(value);
        }
        let mut content = vec![ContentBlock::text(if stdout.is_empty() {
            "(no output)".to_owned()
        } else {
            stdout.into_owned()
        })];
        if !stderr.trim().is_empty() {
            content.push(ContentBlock::text(format!("stderr:\n{stderr}")));
        }
        return CallToolResult::success(content);
    }
    let how = match (run.limit, run.exit) {
        (Some(limit), _) => format!("was stopped: its {} limit was hit", limit.as_str()),
        (None, Exit::Code(code)) => format!("failed with exit status {code}"),
        (None, Exit::Signal(signal)) => format!("was killed by signal {signal}"),
    };
    let mut text = format!("{} {} {how} after {} ms", e.tool, e.version, e.duration_ms);
    if let Some(class) = e.error_class {
        text.push_str(&format!(" (error class: {})", class.as_str()));
    }
    text.push('.');
    if !stderr.trim().is_empty() {
        text.push_str(&format!("\n\nstderr:\n{}", stderr.trim_end()));
    }
    if !stdout.trim().is_empty() {
        text.push_str(&format!("\n\nstdout:\n{}", stdout.trim_end()));
    }
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The calling agent's name, as its client gives it: `clientInfo` of the session's `initialize`,
/// or of the request's `_meta` (sessions without `initialize`, 2026-07-28).
fn client_name(context: &RequestContext<RoleServer>) -> Option<String> {
    let name = match context.peer.peer_info() {
        Some(info) => info.client_info.name.clone(),
        None => context.meta.client_info()?.name,
    };
    crate::health::executions::agent_name(&name)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new("toolsmith", env!("CARGO_PKG_VERSION")).with_title("toolsmith"),
        )
        .with_instructions(format!(
            "Tools made from the commands repeated in this codebase, reviewed and versioned in a \
             git registry; each runs in a sandbox. Prefer one over retyping the commands it \
             replaces. {SEARCH_TOOL} finds tools not listed; {RUN_TOOL} runs any by name."
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        match self.blocking(|inner| inner.list()).await? {
            Ok(tools) => Ok(ListToolsResult::with_all_items(tools)),
            Err(e) => Err(McpError::internal_error(
                format!("the registry cannot be read: {e}"),
                None,
            )),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let agent = client_name(&context);
        let args = request.arguments.unwrap_or_default();
        let result = match name.as_str() {
            SEARCH_TOOL => self.blocking(move |inner| Ok(inner.search(&args))).await?,
            RUN_TOOL => {
                let tool = match args.get("name") {
                    Some(Value::String(n)) => n.clone(),
                    _ => {
                        return Ok(tool_error(&format!(
                            "{RUN_TOOL}: `name` must be the name of a registered tool ({SEARCH_TOOL} finds them)"
                        ))
                        .into());
                    }
                };
                let params = match args.get("arguments") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(a)) => a.clone(),
                    Some(_) => {
                        return Ok(tool_error(&format!(
                            "{RUN_TOOL}: `arguments` must be an object of {tool}'s parameters"
                        ))
                        .into());
                    }
                };
                if let Some(key) = args.keys().find(|k| *k != "name" && *k != "arguments") {
                    return Ok(tool_error(&format!(
                        "{RUN_TOOL}: unknown argument `{key}`; it takes `name` and `arguments`"
                    ))
                    .into());
                }
                self.blocking(move |inner| inner.run(&tool, params, false, agent))
                    .await?
            }
            _ => {
                self.blocking(move |inner| inner.run(&name, args, true, agent))
                    .await?
            }
        };
        result.map(CallToolResponse::from)
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        if context.accepted().tools_list_changed == Some(true) {
            let sink = context.sink().clone();
            if let Ok(mut subscriptions) = self.inner.subscriptions.lock() {
                subscriptions.push(sink);
            }
        }
        context.cancelled().await;
        Ok(())
    }
}

/// Serves MCP on stdin/stdout until the client closes the session.
pub async fn serve_stdio(settings: ServerSettings) -> Result<(), ServeError> {
    // Fail before the handshake when the registry cannot be used: the client shows why.
    Registry::open_or_init(&settings.registry, &settings.state_dir)?;
    let server = McpServer::new(settings);
    let service = server
        .clone()
        .serve(LineTransport::new(tokio::io::stdin(), tokio::io::stdout()))
        .await
        .map_err(|e| ServeError::Session(e.to_string()))?;
    let watcher = tokio::spawn(watch_registry(server, service.peer().clone()));
    let _ = service.waiting().await;
    watcher.abort();
    Ok(())
}

/// Sends `notifications/tools/list_changed` whenever the active tools change, watching the
/// registry's refs (inotify, no polling).
async fn watch_registry(server: McpServer, peer: Peer<RoleServer>) {
    let dir = server.inner.settings.registry.clone();
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // An error (a lost event, an overflow) may hide a change: looked at too.
        if event
            .as_ref()
            .map_or(true, crate::registry::repo::is_registry_change)
        {
            let _ = tx.try_send(());
        }
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("cannot watch the registry, the tool list is not refreshed live: {e}");
            return;
        }
    };
    let git_dir = dir.join(".git");
    for (path, mode) in [
        (git_dir.clone(), RecursiveMode::NonRecursive),
        (git_dir.join("refs"), RecursiveMode::Recursive),
    ] {
        if let Err(e) = watcher.watch(&path, mode) {
            tracing::warn!("cannot watch {}: {e}", path.display());
        }
    }
    let mut seen = server
        .blocking(|inner| inner.fingerprint().ok())
        .await
        .ok()
        .flatten();
    while rx.recv().await.is_some() {
        tokio::time::sleep(SETTLE).await;
        while rx.try_recv().is_ok() {}
        // What changed is read, and reconciled, through a handle opened anew.
        server.inner.forget_registry();
        let now = match server.blocking(|inner| inner.fingerprint()).await {
            Ok(Ok(now)) => Some(now),
            Ok(Err(e)) => {
                tracing::warn!("the registry cannot be read: {e}");
                continue;
            }
            Err(_) => continue,
        };
        if now == seen {
            continue;
        }
        seen = now;
        if peer.peer_info().is_some()
            && let Err(e) = peer.notify_tool_list_changed().await
        {
            tracing::debug!("tool list change not sent on the session: {e}");
        }
        let sinks: Vec<SubscriptionSink> = match server.inner.subscriptions.lock() {
            Ok(s) => s.clone(),
            Err(_) => Vec::new(),
        };
        let mut closed = Vec::new();
        for sink in &sinks {
            if sink.notify_tool_list_changed().await.is_err() {
                closed.push(sink.id().clone());
            }
        }
        if !closed.is_empty()
            && let Ok(mut subscriptions) = server.inner.subscriptions.lock()
        {
            subscriptions.retain(|s| !closed.contains(s.id()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::classify::ErrorClass;

    fn execution(ok: bool) -> Execution {
        Execution {
            tool: "lint-fix".into(),
            version: "1.2.0".into(),
            caller: Caller::Mcp,
            started_ms: 0,
            duration_ms: 42,
            ok,
            exit_code: Some(if ok { 0 } else { 1 }),
            signal: None,
            limit_hit: None,
            error_class: (!ok).then_some(ErrorClass::CodeError),
            error_excerpt: None,
            peak_memory_kb: None,
            params: None,
            agent: None,
        }
    }

    fn text(result: &CallToolResult) -> String {
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_json_tool_gives_structured_content_and_a_text_tool_its_text() {
        let ok = execution(true);
        let object = result_of(&Finished {
            output: OutputKind::Json,
            execution: &ok,
            exit: Exit::Code(0),
            limit: None,
            stdout: br#"{"failing": ["a", "b"]}"#,
            stderr: b"",
        });
        assert_eq!(object.is_error, Some(false));
        assert_eq!(
            object.structured_content,
            Some(json!({"failing": ["a", "b"]}))
        );
        // MCP's structured content is an object: an array stays text.
        let array = result_of(&Finished {
            output: OutputKind::Json,
            execution: &ok,
            exit: Exit::Code(0),
            limit: None,
            stdout: b"[1, 2]",
            stderr: b"",
        });
        assert_eq!(array.structured_content, None);
        assert_eq!(text(&array), "[1, 2]");
        let plain = result_of(&Finished {
            output: OutputKind::Text,
            execution: &ok,
            exit: Exit::Code(0),
            limit: None,
            stdout: b"",
            stderr: b"warning: slow\n",
        });
        assert_eq!(text(&plain), "(no output)\nstderr:\nwarning: slow\n");
    }

    #[test]
    fn a_failed_run_says_how_it_failed_and_shows_its_output() {
        let failed = execution(false);
        let exited = result_of(&Finished {
            output: OutputKind::Text,
            execution: &failed,
            exit: Exit::Code(1),
            limit: None,
            stdout: b"partial\n",
            stderr: b"error: no such file\n",
        });
        assert_eq!(exited.is_error, Some(true));
        assert_eq!(
            text(&exited),
            "lint-fix 1.2.0 failed with exit status 1 after 42 ms (error class: code_error).\n\n\
             stderr:\nerror: no such file\n\nstdout:\npartial"
        );
        let stopped = result_of(&Finished {
            output: OutputKind::Json,
            execution: &failed,
            exit: Exit::Signal(9),
            limit: Some(LimitHit::Memory),
            stdout: b"",
            stderr: b"",
        });
        assert!(
            text(&stopped).starts_with("lint-fix 1.2.0 was stopped: its memory limit was hit"),
            "{}",
            text(&stopped)
        );
    }
}
