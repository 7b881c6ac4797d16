//! `toolsmith sandbox -- CMD…`: runs any command in the sandbox generated tools run in, for
//! debugging a tool. The command's output passes through (capped), a report follows on stderr,
//! and the exit code is the command's own.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::output::Style;
use super::{Cli, Failure};
use crate::exit::ExitCode;
use crate::sandbox::toolchain::{Resolution, UserEnv, resolve};
use crate::sandbox::{
    self, Exit, HostPort, Limits, Profile, RunReport, SandboxError, SandboxPolicy, SandboxSpec,
    Stdin, Verdict, WorkspaceAccess,
};

/// Exit codes of `toolsmith sandbox`, for its help.
pub(super) const EXIT_CODES: &str = "Exit status: the command's own; 128+N when signal N killed \
it (a limit that kills, like --timeout, gives 137). 125: toolsmith itself failed (a wrong \
option or policy file, a sandbox that could not be set up, a policy that refuses to run here); \
126: the command cannot be executed; 127: the command was not found inside the sandbox, which holds /usr, /bin, /lib*, /etc (a few files), /dev (a few devices), \
/proc, /tmp, /work (HOME, the default working directory), and /workspace with --workspace.";

/// `toolsmith sandbox`'s arguments.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// Show DIR at /workspace (the working directory), read-only (`read`) or writable (`write`).
    #[arg(long, num_args = 2, value_names = ["ACCESS", "DIR"])]
    pub workspace: Option<Vec<String>>,
    /// Wall-clock limit, seconds.
    #[arg(long, value_name = "S", default_value_t = Limits::default().wall_s)]
    pub timeout: u32,
    /// Memory limit, MiB.
    #[arg(long, value_name = "MB", default_value_t = Limits::default().memory_mb)]
    pub memory: u32,
    /// A tool's directory, shown read-only at /tool.
    #[arg(long, value_name = "DIR")]
    pub tool_dir: Option<PathBuf>,
    /// Set a variable in the command's environment (repeatable); the rest is an allow-list.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Bind the toolchain PROGRAM comes from (rustup, pyenv, a venv, nvm, ~/.local/bin), as
    /// your $PATH resolves it, read-only, with its bin directories first on the PATH
    /// (repeatable; the policy's [grants] toolchains must allow its kind).
    #[arg(long, value_name = "PROGRAM")]
    pub toolchain: Vec<String>,
    /// Policy file whose [sandbox] and [grants] tables apply (default: the built-in policy,
    /// which grants nothing).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Let the command reach HOST:PORT through toolsmith's filtering proxy (repeatable; each
    /// must be listed in the policy's [grants] hosts). HTTP_PROXY, HTTPS_PROXY and ALL_PROXY
    /// point at the proxy; every connection is in the report.
    #[arg(long = "allow-host", value_name = "HOST:PORT")]
    pub allow_host: Vec<String>,
    /// Bind the host socket PATH into the sandbox at the same path (repeatable; each must be
    /// listed in the policy's [grants] host_sockets). A container engine's socket gives
    /// root-equivalent power over the host.
    #[arg(long = "host-socket", value_name = "PATH")]
    pub host_socket: Vec<PathBuf>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn failure(err: &SandboxError) -> Failure {
    let code = match err {
        SandboxError::Exec {
            errno: libc::ENOENT,
            ..
        } => ExitCode::CommandNotFound,
        SandboxError::Exec { .. } => ExitCode::CannotExecute,
        _ => ExitCode::SandboxFailed,
    };
    Failure::new(code, err.to_string())
}

/// `--toolchain PROGRAM…`: each program's toolchain, resolved as the shell this runs from
/// would. The environment is read only when one is asked for: this is the sandbox's start-up
/// path.
fn toolchains(programs: &[String], writable: bool) -> Result<Vec<sandbox::Toolchain>, Failure> {
    let bad_option = |m: String| Failure::new(ExitCode::SandboxFailed, m);
    if programs.is_empty() {
        return Ok(Vec::new());
    }
    let mut user = UserEnv::from_process(None);
    user.cwd = std::env::current_dir().ok();
    let mut found = Vec::with_capacity(programs.len());
    for program in programs {
        match resolve(program, &user, writable) {
            Resolution::Toolchain { toolchain, .. } => found.push(toolchain),
            Resolution::System { found } => {
                return Err(bad_option(format!(
                    "--toolchain {program}: {} is a system program, which the sandbox shows \
                     without a toolchain",
                    found.display()
                )));
            }
            Resolution::NotFound => {
                return Err(bad_option(format!(
                    "--toolchain {program}: `{program}` is not on your PATH"
                )));
            }
            Resolution::Unusable { why, .. } => {
                return Err(bad_option(format!("--toolchain {program}: {why}")));
            }
        }
    }
    Ok(found)
}

/// Builds the run from the command line.
fn spec(cli: &Cli, args: &SandboxArgs) -> Result<SandboxSpec, Failure> {
    // 125 for every failure of toolsmith's own: the command's codes stay unambiguous.
    let bad_option = |m: String| Failure::new(ExitCode::SandboxFailed, m);
    let mut spec = SandboxSpec::new(args.command.clone());
    let mut profile = Profile::default();
    if let Some([access, dir]) = args.workspace.as_deref() {
        profile.workspace = match access.as_str() {
            "read" => WorkspaceAccess::Read,
            "write" => WorkspaceAccess::Write,
            other => {
                return Err(bad_option(format!(
                    "--workspace {other} {dir}: the access is `read` or `write`"
                )));
            }
        };
        spec.workspace = Some(PathBuf::from(dir));
    }
    profile.limits = Limits {
        wall_s: args.timeout,
        memory_mb: args.memory,
        ..Limits::default()
    };
    let writable = profile.workspace == WorkspaceAccess::Write;
    profile.toolchains = toolchains(&args.toolchain, writable)?;
    for host in &args.allow_host {
        let parsed = HostPort::parse(host, false)
            .map_err(|e| bad_option(format!("--allow-host {host}: {e}")))?;
        profile.hosts.push(parsed);
    }
    profile.host_sockets.clone_from(&args.host_socket);
    spec.profile = profile;
    spec.tool_dir = args.tool_dir.clone();
    for pair in &args.env {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| bad_option(format!("--env {pair}: expected NAME=VALUE")))?;
        spec.env.push((name.to_owned(), value.to_owned()));
    }
    if let Some(path) = &args.policy {
        spec.policy = SandboxPolicy::load(path)
            .map_err(|e| Failure::new(ExitCode::SandboxFailed, e.to_string()))?;
    }
    spec.stdin = Stdin::Inherit;
    spec.own = super::own_places_without_config(cli);
    Ok(spec)
}

/// Runs the command and prints what happened; returns the command's exit status.
pub(super) fn run(cli: &Cli, args: &SandboxArgs) -> Result<u8, Failure> {
    let spec = spec(cli, args)?;
    let report = sandbox::run(&spec).map_err(|e| failure(&e))?;
    let mut out = super::output::stdout();
    // Buffered: the summary is a dozen small writes, one system call each on bare stderr.
    let mut err = std::io::BufWriter::new(std::io::stderr().lock());
    if cli.global.json {
        super::output::json(&mut out, &json!(report))?;
    } else {
        // A reader that stopped reading (`| head`) does not change the command's status.
        super::output::pass_through(&mut out, &report.stdout.bytes)?;
        err.write_all(&report.stderr.bytes)?;
        summary(&report, &mut err, Style::for_stdout())?;
        err.flush()?;
    }
    Ok(report.exit.status())
}

/// The report after the command's output: one line for how it ended, notes for the rest.
fn summary(report: &RunReport, err: &mut impl Write, style: Style) -> std::io::Result<()> {
    for (name, stream) in [("stdout", &report.stdout), ("stderr", &report.stderr)] {
        if stream.truncated {
            writeln!(
                err,
                "toolsmith sandbox: {name} truncated: {} of {} bytes kept",
                stream.bytes.len(),
                stream.total_bytes
            )?;
        }
    }
    let ended = match report.exit {
        Exit::Code(0) => style.good("exited 0"),
        Exit::Code(code) => style.warn(&format!("exited {code}")),
        Exit::Signal(signal) => {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map(|s| s.as_str().to_owned())
                .unwrap_or_else(|_| format!("signal {signal}"));
            style.bad(&format!("killed by {name}"))
        }
    };
    let limit = match report.limit {
        Some(limit) => format!(", {} limit hit", limit.as_str()),
        None => String::new(),
    };
    let memory = match report.peak_memory_kb {
        Some(kb) => format!(", peak memory {:.1} MiB", kb as f64 / 1024.0),
        None => String::new(),
    };
    let cpu = match report.cpu_ms {
        Some(ms) => format!(", CPU {ms} ms"),
        None => String::new(),
    };
    writeln!(
        err,
        "toolsmith sandbox: {ended}{limit} after {} ms{cpu}{memory}",
        report.runtime_ms
    )?;
    let l = &report.layers;
    let mut layers = Vec::new();
    if l.namespaces {
        layers.push("namespaces".to_string());
    }
    match (l.landlock, l.landlock_abi) {
        (sandbox::Enforcement::Full, Some(abi)) => layers.push(format!("Landlock ABI {abi}")),
        (sandbox::Enforcement::Partial, Some(abi)) => {
            layers.push(format!("Landlock ABI {abi} (partial)"));
        }
        _ => {}
    }
    if l.seccomp {
        layers.push("seccomp".into());
    }
    layers.push(if l.pids == l.memory {
        l.pids.to_string()
    } else {
        format!("pids by {}, memory by {}", l.pids, l.memory)
    });
    writeln!(err, "toolsmith sandbox: layers: {}", layers.join(", "))?;
    for c in &report.connections {
        let what = match c.verdict {
            Verdict::Allowed => style.good("allowed"),
            Verdict::Denied => style.bad("denied"),
            Verdict::Failed => style.warn("failed"),
        };
        let target = HostPort {
            host: c.host.clone(),
            port: c.port,
        };
        let reason = c
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        writeln!(
            err,
            "toolsmith sandbox: connection {target} via {}: {what}, {} bytes up, {} down{reason}",
            c.protocol, c.bytes_up, c.bytes_down
        )?;
    }
    for warning in &report.warnings {
        writeln!(err, "toolsmith sandbox: note: {warning}")?;
    }
    Ok(())
}
