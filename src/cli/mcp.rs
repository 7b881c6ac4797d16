//! `toolsmith mcp`: the MCP server on stdin/stdout. Its protocol owns stdout; everything said to
//! a person goes to stderr (clients keep it in their logs).

use std::path::PathBuf;
use std::sync::Arc;

use super::progress::Progress;
use super::{Cli, Failure, load_config};
use crate::config::Config;
use crate::control::client::Client;
use crate::exit::ExitCode;
use crate::generate::pipeline::Job;
use crate::mcp::requests::Generation;
use crate::mcp::server::{ServerSettings, serve_stdio};
use crate::sandbox::SandboxPolicy;

/// Requests made over MCP generated as `toolsmith new` generates: by the daemon when it holds
/// the state directory, else in this process (holding the state directory meanwhile).
#[derive(Debug)]
struct CliGeneration {
    config: Config,
    socket: PathBuf,
}

impl Generation for CliGeneration {
    fn without_examples(&self) -> Option<String> {
        let generate = &self.config.generate;
        if generate.backend.value != "llm" {
            return Some(format!(
                "generate.backend is \"{}\", not \"llm\"",
                generate.backend.value
            ));
        }
        if self.config.llm.model.value.trim().is_empty() {
            return Some("llm.model is not set".into());
        }
        None
    }

    fn generate(&self, job: Job) -> Result<(), String> {
        // Nothing is drawn: stderr is the client's log.
        let progress = Progress::spinner(true, "generating");
        let socket = self.socket.clone();
        super::generate::run_job_with(
            &self.config,
            move || Ok(Client::connect(&socket)?),
            job,
            &progress,
        )
        .map(|_| ())
        .map_err(|failure| match failure.code {
            // The directory was held, yet no daemon answers: another one-shot generation
            // (`toolsmith new`, another session's request) has it.
            ExitCode::DaemonNotRunning => format!(
                "another toolsmith process is generating in this state directory and no daemon                  runs to queue the request: ask again once it is done, or have toolsmithd                  running ({})",
                failure.message
            ),
            _ => failure.message,
        })
    }
}

/// Serves until the client closes the session.
pub(super) fn serve(cli: &Cli, workspace: Option<PathBuf>) -> Result<(), Failure> {
    let config = load_config(cli)?;
    // Warnings (a run not recorded, a registry that cannot be watched) reach the client's log.
    let _ = crate::logging::init(None, "warn");
    let policy = match &config.generate.policy.value {
        Some(path) => SandboxPolicy::load(path)
            .map_err(|e| Failure::new(ExitCode::InvalidConfig, e.to_string()))?,
        None => SandboxPolicy::default(),
    };
    let workspace = match workspace {
        Some(dir) if !dir.is_dir() => {
            return Err(Failure::new(
                ExitCode::Usage,
                format!("--workspace {}: not a directory", dir.display()),
            ));
        }
        Some(dir) => Some(dir),
        None => std::env::current_dir().ok(),
    };
    let settings = ServerSettings {
        registry: config.paths.registry.value.clone(),
        state_dir: config.paths.state.value.clone(),
        store: config.store_path(),
        policy,
        description_budget: config.mcp.description_budget.value as usize,
        workspace,
        own: super::own_places(cli, &config),
        generation: Some(Arc::new(CliGeneration {
            socket: super::socket_path(cli)?,
            config: config.clone(),
        })),
        requests_per_hour: config.mcp.requests_per_hour.value,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(ExitCode::Failure, format!("cannot start a runtime: {e}")))?;
    runtime
        .block_on(serve_stdio(settings))
        .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))
}
