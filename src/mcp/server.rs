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
//! - Agents ask for the tools they lack ([`requests`](super::requests)): `toolsmith_request`
//!   starts a candidate of origin `request` (the session and the agent recorded) and answers
//!   its id at once, generation going on behind (one request at a time, in a worker thread,
//!   through [`Generation`]); `toolsmith_request_status` says how it is getting on;
//!   `toolsmith_proposals` lists the proposals awaiting review, and the server's
//!   `instructions` say how many there are and where a person reviews them. A session is told
//!   of each proposal once: the instructions and `toolsmith_proposals` mark what it was told.
//! - The registry's refs are watched with inotify; when the set of active tools changes
//!   (approval, rollback, deprecation, a `git revert` by hand), `notifications/tools/list_changed`
//!   goes to the client, on the session (protocol versions with `initialize`) and on every
//!   `subscriptions/listen` subscription that asked for it (2026-07-28).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

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
use super::requests::{
    self, Generation, PROPOSALS_TOOL, REQUEST_TOOL, RateLimit, Request, STATUS_TOOL,
};
use super::transport::LineTransport;
use crate::generate::candidates::{self, Asker, Candidate, State};
use crate::generate::pipeline::Job;
use crate::generate::spec::ToolSpec;
use crate::generate::staging::Staging;
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

/// Most proposals `toolsmith_proposals` lists (the newest); it says how many more there are.
const MAX_PROPOSALS: usize = 50;

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
    /// How requests are generated (`None`: `toolsmith_request` is not offered).
    pub generation: Option<Arc<dyn Generation>>,
    /// Requests one session may make in an hour (`mcp.requests_per_hour`; 0: none).
    pub requests_per_hour: u32,
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
    /// This session's id, recorded on its requests.
    session: String,
    /// This session's requests in the last hour.
    rate: Mutex<RateLimit>,
    /// This session's requests not yet in the store, or that never got there (and why).
    asked: Arc<Mutex<HashMap<String, Asked>>>,
    /// The proposals this session was told of (by the instructions or `toolsmith_proposals`).
    told: Mutex<HashSet<String>>,
    /// The instructions, made once (the protocol asks for them more than once).
    instructions: OnceLock<String>,
    /// Where requests queue for the worker that generates them, one at a time (started by the
    /// first request).
    queue: OnceLock<std::sync::mpsc::Sender<(String, Job)>>,
}

/// A request of this session that the store may not hold (yet).
#[derive(Debug, Clone)]
enum Asked {
    /// Waiting for generation.
    Queued,
    /// Generation ran; the candidate is in the store.
    Done,
    /// No candidate could be made.
    Failed(String),
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
        let settings_rate = settings.requests_per_hour;
        McpServer {
            inner: Arc::new(Inner {
                settings,
                store: Mutex::new(None),
                subscriptions: Mutex::new(Vec::new()),
                definitions: Mutex::new(HashMap::new()),
                approvals: Mutex::new(HashMap::new()),
                registry: Mutex::new(None),
                session: requests::session_id(),
                rate: Mutex::new(RateLimit::new(settings_rate)),
                asked: Arc::new(Mutex::new(HashMap::new())),
                told: Mutex::new(HashSet::new()),
                instructions: OnceLock::new(),
                queue: OnceLock::new(),
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
                // This session's request is making the store (no daemon ran here): it is
                // migrated as it is looked at, and opened once it is.
                Err(store::StoreError::Outdated { .. }) if self.generating() => {
                    tracing::debug!("the store is being made for a request");
                }
                Err(e) => tracing::warn!("runs are not recorded in the store: {e}"),
            }
        }
        work(slot.as_ref())
    }

    /// Whether a request of this session is waiting for or under generation.
    fn generating(&self) -> bool {
        locked(&self.asked)
            .values()
            .any(|a| matches!(a, Asked::Queued))
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
        if self.takes_requests() {
            tools.push(request_tool_definition());
        }
        tools.push(status_tool_definition());
        tools.push(proposals_tool_definition());
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

    /// Whether `toolsmith_request` is offered: generation is reachable and the rate allows some.
    fn takes_requests(&self) -> bool {
        self.settings.generation.is_some() && self.settings.requests_per_hour > 0
    }

    /// `toolsmith_request`: checks the request (caps, the session's rate, examples or a model,
    /// the spec the examples make) and queues it, answering with the candidate's id at once.
    /// A refused request makes no candidate.
    fn request(&self, args: &JsonObject, agent: String) -> CallToolResult {
        let Some(generation) = self.settings.generation.clone() else {
            return tool_error(&format!(
                "{REQUEST_TOOL}: this server makes no tools (it was started without                  generation); ask your user to run `toolsmith new`"
            ));
        };
        let request = match Request::parse(args) {
            Ok(request) => request,
            Err(e) => return tool_error(&e),
        };
        if request.examples.is_empty()
            && let Some(why) = generation.without_examples()
        {
            return tool_error(&format!(
                "{REQUEST_TOOL}: a request without examples needs a model to write the tool,                  and none is configured here ({why}). Give `examples`: the command lines the                  tool should run, as you would type them (two or more with the parts that vary                  differing); toolsmith then writes it from them offline."
            ));
        }
        let text = request.text();
        // What the examples make is checked now, so the agent hears at once what is wrong.
        if let Err(e) = ToolSpec::from_request(&text, &request.examples, &|_| false) {
            return tool_error(&format!("{REQUEST_TOOL}: {e}"));
        }
        {
            let mut rate = locked(&self.rate);
            if let Err(wait) = rate.take(Instant::now()) {
                return tool_error(&rate.refusal(wait));
            }
        }
        let id = candidates::new_id();
        let job = Job::Request {
            text,
            examples: request.examples.clone(),
            id: Some(id.clone()),
            asker: Some(Asker {
                session: self.session.clone(),
                agent: agent.clone(),
            }),
        };
        locked(&self.asked).insert(id.clone(), Asked::Queued);
        if self.queue(generation).send((id.clone(), job)).is_err() {
            let why = "the request worker stopped".to_owned();
            locked(&self.asked).insert(id.clone(), Asked::Failed(why.clone()));
            return tool_error(&format!("{REQUEST_TOOL}: {why}; try again"));
        }
        CallToolResult::structured(json!({
            "id": id,
            "state": "queued",
            "session": self.session,
            "agent": agent,
            "examples": request.examples.len(),
            "next": format!(
                "toolsmith writes and validates the tool in its sandbox, then a person reviews                  it; ask {STATUS_TOOL} with this id how it is getting on. Once approved, the                  tool list changes and you can call it."
            ),
        }))
    }

    /// The queue of this session's requests, with its worker started the first time: requests
    /// are generated one at a time, in order.
    fn queue(&self, generation: Arc<dyn Generation>) -> &std::sync::mpsc::Sender<(String, Job)> {
        self.queue.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<(String, Job)>();
            let asked = Arc::clone(&self.asked);
            let spawned = std::thread::Builder::new()
                .name("toolsmith-requests".into())
                .spawn(move || {
                    for (id, job) in rx {
                        let done = match generation.generate(job) {
                            Ok(()) => Asked::Done,
                            Err(why) => {
                                tracing::warn!(candidate = %id, "request not generated: {why}");
                                Asked::Failed(why)
                            }
                        };
                        locked(&asked).insert(id, done);
                    }
                });
            if let Err(e) = spawned {
                // The receiver is gone with the closure: sends fail and each request says so.
                tracing::warn!("the request worker did not start: {e}");
            }
            tx
        })
    }

    /// A candidate from the store, `None` when there is no store or no such candidate.
    fn candidate(&self, id: &str) -> Option<Candidate> {
        self.with_store(|conn| conn.and_then(|c| candidates::get(c, id).ok()))
    }

    /// `toolsmith_request_status`.
    fn status(&self, args: &JsonObject) -> CallToolResult {
        let id = match args.get("id") {
            Some(Value::String(id)) if candidates::is_id(id) => id.clone(),
            _ => {
                return tool_error(&format!(
                    "{STATUS_TOOL}: `id` must be a candidate id (`c-` and 12 hex digits), as                      {REQUEST_TOOL} answered"
                ));
            }
        };
        if let Some(key) = args.keys().find(|k| *k != "id") {
            return tool_error(&format!(
                "{STATUS_TOOL}: unknown argument `{key}`; it takes `id`"
            ));
        }
        if let Some(c) = self.candidate(&id) {
            let interrupted = candidates::is_interrupted(&c, &self.settings.state_dir);
            if c.state == State::AwaitingReview {
                locked(&self.told).insert(c.id.clone());
            }
            let mut progress = requests::progress(&c, interrupted);
            if c.state == State::SpecAwaitingReview
                && let Some(spec) = Staging::new(&self.settings.state_dir, &c.id).spec()
            {
                progress["spec"] = requests::spec_summary(&spec);
            }
            return CallToolResult::structured(progress);
        }
        let asked = locked(&self.asked).get(&id).cloned();
        match asked {
            Some(Asked::Queued) => CallToolResult::structured(json!({
                "id": id,
                "state": "queued",
                "next": "waiting for generation to take it",
            })),
            Some(Asked::Failed(reason)) => CallToolResult::structured(json!({
                "id": id,
                "state": "failed",
                "reason": reason,
                "next": "no candidate was made; the reason says why",
            })),
            Some(Asked::Done) | None => tool_error(&format!(
                "{STATUS_TOOL}: no candidate {id} (`toolsmith candidates` lists them)"
            )),
        }
    }

    /// The proposals awaiting review, newest first; none without a store (nothing was ever
    /// proposed).
    fn awaiting(&self) -> Result<Vec<Candidate>, String> {
        self.with_store(|conn| match conn {
            None => Ok(Vec::new()),
            Some(conn) => candidates::in_state(conn, State::AwaitingReview)
                .map(|mut list| {
                    list.reverse();
                    list
                })
                .map_err(|e| e.to_string()),
        })
    }

    /// `toolsmith_proposals`: what awaits review, each marked with whether this session hears
    /// of it for the first time.
    fn proposals(&self, args: &JsonObject) -> CallToolResult {
        if let Some(key) = args.keys().next() {
            return tool_error(&format!(
                "{PROPOSALS_TOOL}: unknown argument `{key}`; it takes none"
            ));
        }
        let awaiting = match self.awaiting() {
            Ok(list) => list,
            Err(e) => return tool_error(&format!("the candidates cannot be read: {e}")),
        };
        let mut told = locked(&self.told);
        let more = awaiting.len().saturating_sub(MAX_PROPOSALS);
        let awaiting = &awaiting[..awaiting.len() - more];
        let listed: Vec<Value> = awaiting
            .iter()
            .map(|c| {
                let summary = Staging::new(&self.settings.state_dir, &c.id)
                    .spec()
                    .map(|s| one_line(&s.description))
                    .or_else(|| c.request.as_deref().map(one_line))
                    .unwrap_or_default();
                let mut item = json!({
                    "id": c.id,
                    "name": c.tool,
                    "version": c.version,
                    "origin": c.origin,
                    "summary": summary,
                    "new": !told.contains(&c.id),
                });
                if let Some(asker) = &c.asker {
                    item["requested_by"] = json!(asker.agent);
                    item["this_session"] = json!(asker.session == self.session);
                }
                item
            })
            .collect();
        told.extend(awaiting.iter().map(|c| c.id.clone()));
        CallToolResult::structured(json!({
            "awaiting_review": listed,
            "not_listed": more,
            "review": "a person reviews them with `toolsmith ui` (the review page) or                        `toolsmith review` and `toolsmith show ID`; tell your user about the new                        ones once",
        }))
    }

    /// The server's instructions: what it offers, and how many proposals await review (those
    /// are then told to this session).
    fn instructions(&self) -> String {
        self.instructions
            .get_or_init(|| {
                let mut text = format!(
                    "Tools made from the commands repeated in this codebase, reviewed and                      versioned in a git registry; each runs in a sandbox. Prefer one over                      retyping the commands it replaces. {SEARCH_TOOL} finds tools not listed;                      {RUN_TOOL} runs any by name."
                );
                if self.takes_requests() {
                    text.push_str(&format!(
                        " Missing a tool you would use again? Ask for it with {REQUEST_TOOL}                          (what it should do and example command lines); a person reviews it                          before it runs."
                    ));
                }
                match self.awaiting() {
                    Ok(awaiting) if !awaiting.is_empty() => {
                        let n = awaiting.len();
                        text.push_str(&format!(
                            " {n} proposed tool{} await{} your user's review: tell them once                              that `toolsmith ui` (or `toolsmith review`) is where to review;                              {PROPOSALS_TOOL} lists them.",
                            if n == 1 { "" } else { "s" },
                            if n == 1 { "s" } else { "" },
                        ));
                        locked(&self.told).extend(awaiting.into_iter().map(|c| c.id));
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!("the proposals could not be read: {e}"),
                }
                text
            })
            .clone()
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

/// The first line of `text`, at most 200 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    let mut short: String = line.chars().take(200).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
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

fn request_tool_definition() -> Tool {
    Tool::new(
        REQUEST_TOOL,
        format!(
            "Asks toolsmith for a tool you lack and would use again: it writes the tool from              your description and example command lines, validates it in its sandbox, and a              person reviews it before it can run. Answers at once with the request's id              ({STATUS_TOOL} follows it); once approved, the tool list changes. Without examples              a configured model writes it, or the answer says examples are needed."
        ),
        object_schema(json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "maxLength": requests::MAX_DESCRIPTION_CHARS,
                    "description": "What the tool should do, in a sentence or two"
                },
                "examples": {
                    "type": "array",
                    "maxItems": crate::generate::from_pattern::MAX_EXAMPLES,
                    "items": {"type": "string", "maxLength": requests::MAX_EXAMPLE_CHARS},
                    "description": "Command lines the tool should run, as typed; give two or                                     more differing in the parts that vary"
                },
                "inputs": {
                    "type": "array",
                    "maxItems": requests::MAX_INPUTS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "maxLength": requests::MAX_INPUT_NAME_CHARS},
                            "description": {
                                "type": "string",
                                "maxLength": requests::MAX_INPUT_DESCRIPTION_CHARS
                            }
                        },
                        "required": ["name"],
                        "additionalProperties": false
                    },
                    "description": "The inputs the tool takes"
                }
            },
            "required": ["description"],
            "additionalProperties": false
        })),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(false),
    )
}

fn status_tool_definition() -> Tool {
    Tool::new(
        STATUS_TOOL,
        format!(
            "How a tool asked for with {REQUEST_TOOL} is getting on: queued, generating,              validating, awaiting-review, approved, rejected or failed, with the reason."
        ),
        object_schema(json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": format!("The id {REQUEST_TOOL} answered")}
            },
            "required": ["id"],
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

fn proposals_tool_definition() -> Tool {
    Tool::new(
        PROPOSALS_TOOL,
        "Lists the tools toolsmith proposed that await a person's review (name, origin,          summary), each marked new when this session hears of it for the first time, so you          can tell your user once; they review with `toolsmith ui`."
            .to_owned(),
        object_schema(json!({
            "type": "object",
            "properties": {},
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
        .with_instructions(self.inner.instructions())
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
            REQUEST_TOOL => {
                let info = context.peer.peer_info();
                let agent = requests::agent_name(
                    info.as_ref().map(|i| i.client_info.name.as_str()),
                    info.as_ref().map(|i| i.client_info.version.as_str()),
                );
                self.blocking(move |inner| Ok(inner.request(&args, agent)))
                    .await?
            }
            STATUS_TOOL => self.blocking(move |inner| Ok(inner.status(&args))).await?,
            PROPOSALS_TOOL => {
                self.blocking(move |inner| Ok(inner.proposals(&args)))
                    .await?
            }
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
