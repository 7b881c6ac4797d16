//! Running an approved tool: the version on `main`, checked against its digest, the tree its
//! version's tag approved and its files on disk, its parameters checked against its schema,
//! run in the sandbox with its manifest's profile — the files of the approved tree read from
//! git, never the work tree — and recorded as an execution for the health stage.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::RUNS_DIR;
use crate::health::classify::classify;
use crate::health::executions::{self, Caller, Execution};
use crate::invoke::{self, ParamError};
use crate::package::manifest::Manifest;
use crate::registry::repo::{Registry, RegistryError};
use crate::sandbox::WorkspaceAccess;
use crate::sandbox::{
    self, Exit, OwnPlaces, Profile, RunReport, SandboxError, SandboxPolicy, SandboxSpec,
};

/// A run to make.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The tool.
    pub name: String,
    /// Its parameters.
    pub params: Map<String, Value>,
    /// The directory the tool works on, when its profile grants a workspace (default: the
    /// current directory).
    pub workspace: Option<PathBuf>,
    /// toolsmith's own places (from the configuration), which the workspace must stay clear
    /// of; the registry's own directory is added whatever the caller gives.
    pub own: OwnPlaces,
    /// Who asks.
    pub caller: Caller,
    /// The agent asking, when known (an MCP client's name; for the CLI,
    /// [`crate::health::executions::agent_from_env`]).
    pub agent: Option<String>,
}

/// A run that happened.
#[derive(Debug)]
pub struct ToolRun {
    /// The manifest of the version run.
    pub manifest: Manifest,
    /// What the sandbox reported.
    pub report: RunReport,
    /// The execution as recorded for the health stage.
    pub execution: Execution,
    /// The workspace the tool was given, when its profile grants one.
    pub workspace: Option<PathBuf>,
}

/// Why a tool did not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The registry refused (no such tool, invalid, tampered).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The parameters do not fit the schema.
    #[error("{name}: {source}")]
    Params {
        /// The tool.
        name: String,
        /// What is wrong.
        source: ParamError,
    },
    /// The sandbox could not run it.
    #[error("{name}: {source}")]
    Sandbox {
        /// The tool.
        name: String,
        /// Why.
        source: SandboxError,
    },
}

/// Bytes of a run's parameters (as JSON) kept with its execution: enough for any real call,
/// bounded so that a huge argument does not bloat the store.
const MAX_KEPT_PARAMS: usize = 8192;

/// Runs the approved version of a tool in the sandbox.
pub fn run_tool(
    registry: &Registry,
    request: &RunRequest,
    policy: &SandboxPolicy,
    helper: Option<PathBuf>,
) -> Result<ToolRun, RunError> {
    prepare(registry, request, policy, helper)?.run(request)
}

/// A run checked and ready to start: the tool found runnable, its parameters checked, the
/// sandbox request made. Only this needs the registry: a caller that shares one handle (the
/// MCP server) lets go of it before [`PreparedRun::run`], so one long run never holds up the
/// calls after it.
#[derive(Debug)]
pub struct PreparedRun {
    manifest: Manifest,
    spec: SandboxSpec,
}

/// Checks a run of the approved version of a tool and makes its sandbox request.
pub fn prepare(
    registry: &Registry,
    request: &RunRequest,
    policy: &SandboxPolicy,
    helper: Option<PathBuf>,
) -> Result<PreparedRun, RunError> {
    // The files run are the approved tree's, read from git by its id and shown in the run's
    // own mount namespace: never the work tree, which may change after the check.
    let (manifest, files) = registry.runnable_files(&request.name)?;
    let params_error = |source| RunError::Params {
        name: request.name.clone(),
        source,
    };
    invoke::validate(&manifest, &request.params).map_err(params_error)?;
    let args = invoke::argv(&manifest, &request.params).map_err(params_error)?;
    let mut command = vec![
        manifest.runtime.language.interpreter().to_owned(),
        format!("{}/{}", sandbox::TOOL_DIR, manifest.runtime.entrypoint),
    ];
    command.extend(args);
    let mut spec = SandboxSpec::new(command);
    spec.profile = Profile::try_from(&manifest.sandbox).map_err(|source| RunError::Sandbox {
        name: request.name.clone(),
        source,
    })?;
    spec.tool_files = Some(files);
    spec.policy = policy.clone();
    // What a person granted this tool at approval (its manifest's `granted`, sealed with the
    // approved tree) is admitted for its runs alone, unless the policy now denies it.
    spec.policy.grants = policy
        .grants
        .with_approved(&manifest.granted, &policy.file)
        .map_err(|why| RunError::Sandbox {
            name: request.name.clone(),
            source: SandboxError::Refused(why),
        })?;
    // The credential files granted at approval, from the home of the user toolsmith runs as.
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    for need in &manifest.granted {
        if let crate::sandbox::Need::Credential(written) = need {
            let Some(home) = &home else {
                return Err(RunError::Sandbox {
                    name: request.name.clone(),
                    source: SandboxError::Invalid(format!(
                        "the credential {written} was granted, but HOME is not set: there is \
                         no home directory to find it in"
                    )),
                });
            };
            let relative = written.strip_prefix("~/").unwrap_or(written);
            spec.credentials
                .push((written.clone(), PathBuf::from(home).join(relative)));
        }
    }
    spec.helper = helper;
    spec.own = request.own.clone();
    spec.own.add("registry", registry.root());
    if manifest.sandbox.workspace != WorkspaceAccess::None {
        spec.workspace = match &request.workspace {
            Some(w) => Some(w.clone()),
            None => std::env::current_dir().ok(),
        };
    }
    Ok(PreparedRun { manifest, spec })
}

impl PreparedRun {
    /// Runs it in the sandbox (blocking) and makes its execution record; `request` is the one
    /// it was prepared from.
    pub fn run(self, request: &RunRequest) -> Result<ToolRun, RunError> {
        let PreparedRun { manifest, spec } = self;
        let workspace = spec.workspace.clone();
        let started_ms = jiff::Timestamp::now().as_millisecond();
        let report = sandbox::run(&spec).map_err(|source| RunError::Sandbox {
            name: request.name.clone(),
            source,
        })?;
        for warning in &report.warnings {
            tracing::warn!("{}: {warning}", request.name);
        }
        let ok = matches!(report.exit, Exit::Code(0)) && report.limit.is_none();
        let stderr = String::from_utf8_lossy(&report.stderr.bytes).into_owned();
        let (exit_code, signal) = match report.exit {
            Exit::Code(c) => (Some(c), None),
            Exit::Signal(s) => (None, Some(s)),
        };
        let execution = Execution {
            tool: manifest.name.clone(),
            version: manifest.version.to_string(),
            caller: request.caller,
            started_ms,
            duration_ms: report.runtime_ms,
            ok,
            exit_code,
            signal,
            limit_hit: report.limit.map(|l| l.as_str().to_owned()),
            error_class: (!ok).then(|| classify(report.limit, signal, &stderr)),
            error_excerpt: (!ok).then(|| tail(&stderr, 2000)),
            peak_memory_kb: report.peak_memory_kb,
            params: serde_json::to_string(&request.params)
                .ok()
                .filter(|json| json.len() <= MAX_KEPT_PARAMS),
            agent: request.agent.clone(),
        };
        Ok(ToolRun {
            manifest,
            report,
            execution,
            workspace,
        })
    }
}

/// Where runs are recorded: the store's executions, for the health stage (when there is a
/// store), and the runs log under the state directory, for the miner.
#[derive(Debug, Clone, Copy)]
pub struct RunRecorder<'a> {
    /// The state directory, whose [`RUNS_DIR`] holds the runs log.
    pub state_dir: &'a Path,
    /// A writable connection to the store.
    pub store: Option<&'a rusqlite::Connection>,
}

impl RunRecorder<'_> {
    /// Records a run in both places. Recording never fails a run that happened: a failure is
    /// logged, and the run's result stands.
    pub fn record(&self, request: &RunRequest, run: &ToolRun) {
        tracing::debug!(
            tool = %request.name,
            caller = ?request.caller,
            timings = ?run.report.timings,
            "tool run"
        );
        if let Some(conn) = self.store
            && let Err(e) = executions::record(conn, &run.execution)
        {
            tracing::warn!("the run of {} was not recorded: {e}", request.name);
        }
        if let Err(e) = log_run(self.state_dir, request, run) {
            tracing::warn!(
                "the run of {} was not logged in {}: {e}",
                request.name,
                self.state_dir.join(RUNS_DIR).display()
            );
        }
    }
}

/// Runs a tool as [`run_tool`] does, and records the run with `recorder`: every way a tool is
/// run (the CLI, the MCP server, the daemon) goes through here, so every run is seen.
pub fn run_recorded(
    registry: &Registry,
    request: &RunRequest,
    policy: &SandboxPolicy,
    helper: Option<PathBuf>,
    recorder: RunRecorder<'_>,
) -> Result<ToolRun, RunError> {
    let run = run_tool(registry, request, policy, helper)?;
    recorder.record(request, &run);
    Ok(run)
}

/// The last `max` bytes of `text`, on a character boundary.
fn tail(text: &str, max: usize) -> String {
    let text = text.trim_end();
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

/// The file runs are appended to, in [`RUNS_DIR`].
pub const RUNS_FILE: &str = "toolsmith-runs.jsonl";

/// Bytes of a run's output kept in its logged action.
const LOGGED_OUTPUT: usize = 4096;

/// The command line that runs `name` with `params`, as a person would type it.
pub fn command_line(name: &str, params: &Map<String, Value>) -> String {
    let mut words = vec!["toolsmith".to_owned(), "run".to_owned(), name.to_owned()];
    for (key, value) in params {
        let values: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for v in values {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            words.push("--param".into());
            words.push(crate::quote::shell_quote(&format!("{key}={text}")));
        }
    }
    words.join(" ")
}

/// Appends a run to `<state>/runs/toolsmith-runs.jsonl` as a native action (`"v": 1`): a shell
/// action whose command is the `toolsmith run` line, with the outcome and a redacted excerpt of
/// the output. The session is `$TOOLSMITH_SESSION` when the caller sets it, else one per day.
pub fn log_run(state_dir: &Path, request: &RunRequest, run: &ToolRun) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = state_dir.join(RUNS_DIR);
    std::fs::create_dir_all(&dir)?;
    let started = jiff::Timestamp::from_millisecond(run.execution.started_ms)
        .unwrap_or_else(|_| jiff::Timestamp::now());
    let session = std::env::var("TOOLSMITH_SESSION")
        .ok()
        .filter(|s| !s.is_empty() && s.len() <= 200)
        .unwrap_or_else(|| format!("toolsmith-runs-{}", started.strftime("%Y-%m-%d")));
    let mut output = String::from_utf8_lossy(&run.report.stdout.bytes).into_owned();
    output.push_str(&String::from_utf8_lossy(&run.report.stderr.bytes));
    let output =
        crate::ingest::reader::cap_excerpt(&crate::ingest::redact::redact(&output), LOGGED_OUTPUT);
    // Unique within the session across processes: the start in ms, then the pid.
    let seq = (run.execution.started_ms.max(0) as u64)
        .saturating_mul(1000)
        .saturating_add(u64::from(std::process::id() % 1000));
    let line = serde_json::json!({
        "v": 1,
        "session": session,
        "seq": seq,
        "ts": started.to_string(),
        "source": format!("toolsmith-{}", request.caller.as_str()),
        "cwd": run.workspace.as_ref().map(|w| w.display().to_string()),
        "tool": "shell",
        "input": {"command": command_line(&request.name, &request.params)},
        "ok": run.execution.ok,
        "exit_code": run.execution.exit_code,
        "output": output,
        "duration_ms": run.execution.duration_ms,
    });
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(RUNS_FILE))?;
    // One write per line: appends from several processes do not interleave.
    file.write_all(format!("{line}\n").as_bytes())
}
