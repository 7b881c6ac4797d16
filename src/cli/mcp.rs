//! `toolsmith mcp`: the MCP server on stdin/stdout. Its protocol owns stdout; everything said to
//! a person goes to stderr (clients keep it in their logs).

use std::path::PathBuf;

use super::{Cli, Failure, load_config};
use crate::exit::ExitCode;
use crate::mcp::server::{ServerSettings, serve_stdio};
use crate::sandbox::SandboxPolicy;

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
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(ExitCode::Failure, format!("cannot start a runtime: {e}")))?;
    runtime
        .block_on(serve_stdio(settings))
        .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))
}
