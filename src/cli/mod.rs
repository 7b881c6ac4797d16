//! `toolsmith`, the command-line interface: clap commands, each either a call to the daemon over
//! the control socket or a one-shot library call that needs no daemon.
//!
//! Every command takes `--json` for machine output; human output is plain text, coloured only
//! when stdout is a terminal.

mod demo;
mod doctor;
mod generate;
mod health;
mod ingest;
mod install;
mod mcp;
pub mod mine;
mod notices;
mod output;
mod progress;
mod registry;
mod sandbox;
mod stats;
mod ui;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};
use serde_json::{Value, json};

use crate::config::{self, Config, ConfigRequest};
use crate::control::{Client, ClientError};
use crate::exit::ExitCode;
use output::Style;

/// Command line of `toolsmith`.
#[derive(Debug, Parser)]
#[command(
    name = "toolsmith",
    version,
    about = "Turn what coding agents keep doing by hand into sandboxed, reviewed tools",
    after_help = "Exit codes: 0 success, 1 failure, 2 usage, 3 daemon not running, \
                  4 invalid config, 5 already running, 6 store damaged, 7 permission denied; \
                  `toolsmith sandbox` exits with the command's status (see its help)."
)]
pub struct Cli {
    /// The options every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command takes, before or after its name.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Configuration file (default: $TOOLSMITH_CONFIG, $XDG_CONFIG_HOME/toolsmith/config.toml,
    /// /etc/toolsmith/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// State directory to work on; the daemon's socket is then looked for in DIR/run.
    #[arg(long, global = true, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Control socket of the daemon (default: from the configuration; also $TOOLSMITH_SOCKET).
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The sub-commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show whether the daemon runs, where its files are, and its counters.
    Status,
    /// Check what this host offers the sandbox, and the configuration and daemon.
    Doctor,
    /// Show or check the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Ask the daemon to re-read its configuration (same as SIGHUP).
    Reload,
    /// Ask the daemon to stop cleanly.
    Stop,
    /// Read log files or directories into the store now, without the daemon.
    Ingest {
        /// The format of every file (default: recognised from each file's content).
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
        /// Files or directories (walked recursively).
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// List stored actions, most recent last.
    Actions {
        /// Only these actions, by id (as `toolsmith patterns ID` and `show` name them), each
        /// with the file and line it was read from.
        #[arg(value_name = "ID")]
        ids: Vec<i64>,
        /// Only this session.
        #[arg(long, value_name = "SESSION")]
        session: Option<String>,
        /// How many actions.
        #[arg(long, default_value_t = 20, value_name = "N")]
        limit: u64,
    },
    /// Show each log source: files, bytes read, actions, problems, lag.
    Sources,
    /// Mine the stored actions for patterns now (the daemon does it when it runs here).
    Mine,
    /// List the mined patterns, best first, or show one.
    Patterns {
        /// Only patterns of this kind: sequence, recovery or slow.
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// How many patterns.
        #[arg(long, default_value_t = 20, value_name = "N")]
        limit: u64,
        /// Show this pattern in full: steps, parameters, evidence.
        #[arg(value_name = "ID")]
        id: Option<String>,
    },
    /// Make candidate tools from the mined patterns now (the daemon does it after each mining
    /// pass): generated in staging, validated in the sandbox.
    Generate {
        /// Only this pattern, whatever its score.
        #[arg(long, value_name = "ID")]
        pattern: Option<String>,
    },
    /// Ask for a tool: say what it should do. With example commands it is written offline
    /// (examples of the same command with different values make those values parameters);
    /// without, it needs the LLM backend.
    New {
        /// What the tool should do.
        #[arg(value_name = "WHAT")]
        text: String,
        /// A command the tool should run (repeatable, in order).
        #[arg(long = "example", value_name = "CMD")]
        examples: Vec<String>,
    },
    /// List the candidate tools: id, tool, version, state and why.
    Candidates,
    /// Show a candidate (its spec, files, test results and, awaiting review, its diff against
    /// main) or an approved tool (its manifest and README).
    Show {
        /// The candidate's id (`toolsmith candidates` lists them) or a tool's name.
        #[arg(value_name = "CANDIDATE")]
        id: String,
        /// Every attempt's results and the diff from one attempt to the next.
        #[arg(long)]
        attempts: bool,
    },
    /// List the proposals awaiting review (branches `review/<name>/<version>` of the registry).
    Review,
    /// Approve a proposal: its commit lands on the registry's main with Approved-by, tagged
    /// `<name>/v<version>`.
    Approve {
        /// The candidate (or the branch, or the tool when it has one proposal).
        #[arg(value_name = "CANDIDATE")]
        id: String,
        /// A note kept in the commit message.
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Grant a need the policy asks a person for (`program:curl`, `host:HOST:PORT`,
        /// `socket:/PATH`, `credential:~/PATH`; `toolsmith show` lists them): repeat for each.
        /// The approval commit records each as `Granted:`, and runs get exactly these.
        #[arg(long = "grant", value_name = "NEED")]
        grants: Vec<String>,
    },
    /// Reject a proposal: its branch goes (the commit is kept under refs/toolsmith/rejected/)
    /// and its habit is not proposed again.
    Reject {
        /// The candidate (or the branch, or the tool when it has one proposal).
        #[arg(value_name = "CANDIDATE")]
        id: String,
        /// Why: kept with the candidate and its pattern.
        #[arg(long, required = true, value_name = "TEXT")]
        reason: String,
    },
    /// Accept the spec of a requested tool awaiting spec review (`[review] approve_specs`):
    /// its code is then generated, validated and proposed for review.
    #[command(name = "approve-spec")]
    ApproveSpec {
        /// The candidate.
        #[arg(value_name = "CANDIDATE")]
        id: String,
    },
    /// Reject the spec of a requested tool awaiting spec review: nothing of it is generated.
    #[command(name = "reject-spec")]
    RejectSpec {
        /// The candidate.
        #[arg(value_name = "CANDIDATE")]
        id: String,
        /// Why: kept with the candidate.
        #[arg(long, required = true, value_name = "TEXT")]
        reason: String,
    },
    /// Edit a tool by hand: prepares its review branch `review/<name>/<next version>` in a git
    /// worktree of the registry and prints the worktree's path (first line). A commit there (or
    /// on any `review/<name>/<version>` branch) is validated in the sandbox and proposed for
    /// review like any candidate (origin `edit`, its author kept).
    Edit {
        /// The tool.
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// List the approved tools on the registry's main.
    Tools,
    /// Run an approved tool in the sandbox, with its manifest's profile; exits with its status.
    Run(RunArgs),
    /// How the approved tools do in use: score, status, error classes and the most frequent
    /// errors, from their recorded runs (one tool: each version it was run at).
    Health {
        /// One tool.
        #[arg(value_name = "NAME")]
        name: Option<String>,
        /// Run the health check now, as the daemon does on its schedule: roll back regressions,
        /// make repairs of failing tools, propose deprecations and merges.
        #[arg(long, conflicts_with = "name")]
        check: bool,
    },
    /// Make a repair of a failing tool now: a new version, validated with regression cases
    /// from its failed runs, proposed for review.
    Heal {
        /// The tool.
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// The daemon's scheduled jobs: when each last ran, how that went, when it runs next.
    Schedule,
    /// The whole loop on demo logs that ship with toolsmith, in a directory of its own: ingest,
    /// mine, generate and validate, propose, approve, run, and the registry's git log.
    Demo {
        /// Where (default: a new directory under the temporary one); left for exploring.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Check every tag and every tool on main: its manifest and digest, and that main holds
    /// what its version's tag approved.
    Verify,
    /// Trust again the tags and review branches the registry's ledger does not vouch for (it
    /// was lost or removed, or its lines carry no valid seal): lists them, with who made each
    /// and what it holds; only `--yes` records them.
    Reapprove {
        /// Record them: a person checked the list and vouches for it.
        #[arg(long)]
        yes: bool,
    },
    /// Revert the commit that brought a tool's current version (a new commit on main).
    Rollback {
        /// The tool.
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Make a candidate of a tool whose files on main were changed without review (a commit by
    /// hand): validated in the sandbox as they are, then proposed for review, with the diff
    /// against the version approved last. Approving it makes main an approved version again.
    Adopt {
        /// The tool.
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Deprecate a tool: a new version whose manifest says so and names its replacement.
    Deprecate {
        /// The tool.
        #[arg(value_name = "NAME")]
        name: String,
        /// The tool to use instead.
        #[arg(long, value_name = "TOOL")]
        replaced_by: Option<String>,
        /// Why.
        #[arg(long, required = true, value_name = "TEXT")]
        reason: String,
    },
    /// Serve the approved tools to agents over the Model Context Protocol on stdin/stdout
    /// (`claude mcp add toolsmith -- toolsmith mcp`).
    Mcp {
        /// The directory tools work on, when their profile grants one (default: the directory
        /// the client starts the server in, normally the agent's project).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Write the approved tools out for agents that read files, or the review decisions.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Keep rate and use: proposals made, approved, rejected (with the reasons) and waiting
    /// (for how long), by origin; per approved tool its runs by each agent since approval, and
    /// the times an agent still ran the habit's commands by hand (missed uses), with the steps
    /// and time the tool would have saved.
    Stats,
    /// The line telling you that proposals await review — each proposal told once (`toolsmith
    /// install --agents` runs it at the start of each agent session).
    Notices {
        /// Record what is told, and answer as the agents' session-start hooks read (JSON with
        /// `systemMessage`); nothing is printed when nothing new waits.
        #[arg(long)]
        session_start: bool,
    },
    /// Share the registry: pull and push main, the tags and the review branches with its git
    /// remote (`origin`).
    Sync {
        /// Set the remote first (a URL or a path; stored as the registry's `origin`).
        #[arg(long, value_name = "URL")]
        remote: Option<String>,
    },
    /// Serve the review pages on 127.0.0.1 (review queue, candidates with Approve and
    /// Reject, tools, patterns; live with the daemon's events). The first line printed is the
    /// URL, with its random token; Ctrl-C stops.
    Ui {
        /// The port (0 picks a free one).
        #[arg(long, default_value_t = 0, value_name = "N")]
        port: u16,
        /// Open the URL in the desktop's browser (xdg-open).
        #[arg(long)]
        open: bool,
    },
    /// Print pipeline events as they happen.
    Watch {
        /// Only events whose kind starts with this prefix (repeatable).
        #[arg(long = "kind", value_name = "PREFIX")]
        kinds: Vec<String>,
    },
    /// Install toolsmith as a systemd user service, with a commented default configuration.
    Install {
        /// Install for the current user (the only kind: the system unit is installed by hand);
        /// prints the MCP set-up of each agent found here.
        #[arg(long, required_unless_present_any = ["agents", "apparmor"])]
        user: bool,
        /// Also run `systemctl --user daemon-reload` and `enable --now` the units.
        #[arg(long, requires = "user")]
        enable: bool,
        /// Write toolsmith's MCP server into the configuration of each agent found here (Claude
        /// Code, Codex, Gemini CLI, OpenCode, Cursor, Cline), keeping the rest of each file and
        /// a backup of it; a file that does not parse is left alone. Claude Code, Gemini CLI
        /// and Codex also get a session-start hook telling of proposals awaiting review
        /// (`toolsmith notices --session-start`).
        #[arg(long)]
        agents: bool,
        /// (root) Write an AppArmor profile letting the installed toolsmith-sandbox-helper create
        /// user namespaces, for Ubuntu's restriction of them, and say how to load it.
        #[arg(long, conflicts_with_all = ["user", "agents"])]
        apparmor: bool,
    },
    /// Stop and remove the user service installed by `toolsmith install --user`.
    Uninstall {
        /// Uninstall for the current user.
        #[arg(long, required = true)]
        user: bool,
    },
    /// Run a command in the sandbox generated tools run in, and report how it ended.
    #[command(after_help = sandbox::EXIT_CODES)]
    Sandbox(sandbox::SandboxArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page, or write every page to a directory.
    Man {
        /// Write toolsmith.1, toolsmith-<command>.1 and toolsmithd.8 into DIR.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// `toolsmith export …`.
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Each active tool as an Agent Skill (`DIR/<name>/SKILL.md`), for `~/.claude/skills`,
    /// `.agents/skills` and the like; re-running updates them and removes those whose tool is
    /// gone, and never touches a skill toolsmith did not write.
    Skills {
        /// The skills directory.
        #[arg(long, value_name = "DIR", required_unless_present = "agents")]
        to: Option<PathBuf>,
        /// Into the skills folder of each agent found here: `~/.claude/skills`,
        /// `$CODEX_HOME/skills`, `~/.gemini/skills`, `~/.config/opencode/skills` (one copy each
        /// where one agent reads another's folder).
        #[arg(long)]
        agents: bool,
    },
    /// Every review decision (spec, code, tests, decision, reason, reviewer, time) as JSON
    /// Lines, from the registry's history and the store: what a person kept and refused, for
    /// tuning generation or a model.
    Feedback {
        /// Write to FILE (replaced whole) instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// `toolsmith run`'s arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The tool.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// A parameter (repeatable; an array parameter takes one value per use).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Parameters as one JSON object (`--json` is the switch for machine output).
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// The directory the tool works on, when its profile grants one (default: here).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// `toolsmith config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where each value came from.
    Show,
    /// Print the built-in policy (what validation and the sandbox follow unless `policy` under
    /// [generate] names a file): the start of a policy of your own.
    Policy,
    /// Validate a configuration file without using it.
    Check {
        /// The file to check.
        file: PathBuf,
    },
}

/// A command's failure: what to print and which exit code to use.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: ExitCode,
    /// Message for stderr.
    pub message: String,
}

impl Failure {
    fn new(code: ExitCode, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

impl From<ClientError> for Failure {
    fn from(err: ClientError) -> Self {
        let code = match &err {
            ClientError::NotRunning { .. } | ClientError::NotAnswering { .. } => {
                ExitCode::DaemonNotRunning
            }
            ClientError::PermissionDenied { .. } => ExitCode::PermissionDenied,
            ClientError::Rpc(_) | ClientError::Protocol { .. } => ExitCode::Failure,
        };
        Failure::new(code, err.to_string())
    }
}

impl From<config::ConfigError> for Failure {
    fn from(err: config::ConfigError) -> Self {
        Failure::new(ExitCode::InvalidConfig, err.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        Failure::new(ExitCode::Failure, err.to_string())
    }
}

/// `toolsmith`'s whole `main`, after the binary dispatched the sandbox helper
/// ([`crate::sandbox::helper_main`]), which comes before anything else.
pub fn main() -> std::process::ExitCode {
    let cli = parse();
    // `toolsmith sandbox` exits with the command's own status.
    let status = match &cli.command {
        Command::Sandbox(args) => sandbox::run(&cli, args),
        Command::Run(args) => registry::run(&cli, args),
        // The MCP protocol owns stdout: `run` would hold its lock.
        Command::Mcp { workspace } => {
            mcp::serve(&cli, workspace.clone()).map(|()| ExitCode::Success as u8)
        }
        _ => run(&cli).map(|()| ExitCode::Success as u8),
    };
    match status {
        Ok(code) => std::process::ExitCode::from(code),
        // Nobody reads the output any more (`toolsmith … | head`): end quietly, like `rg`.
        Err(_) if output::stdout_closed() => std::process::ExitCode::SUCCESS,
        Err(failure) => {
            if cli.global.json {
                let body =
                    json!({"error": {"message": failure.message, "exit_code": failure.code as u8}});
                let _ = writeln!(std::io::stderr(), "{body}");
            } else {
                let _ = writeln!(std::io::stderr(), "toolsmith: {}", failure.message);
            }
            failure.code.into()
        }
    }
}

/// The command line, parsed as `Cli::parse` would. The command tree clap builds is leaked
/// rather than dropped: freeing its few thousand allocations is an eighth of a short command's
/// start-up (callgrind), and the process ends soon after anyway.
fn parse() -> Cli {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(cli) = parse_hot(&args) {
        return cli;
    }
    let mut command = Cli::command();
    let mut matches = command
        .try_get_matches_from_mut(args)
        .unwrap_or_else(|e| e.exit());
    let cli = clap::FromArgMatches::from_arg_matches_mut(&mut matches);
    let cli = cli.unwrap_or_else(|e: clap::Error| e.format(&mut command).exit());
    std::mem::forget(command);
    cli
}

/// The command line of the commands every tool call goes through (`sandbox`, `run`): the same
/// arguments as [`Cli`]'s (the same structs), under a tree of two commands. Building all of
/// [`Cli`]'s tree was a tenth of `toolsmith sandbox -- /bin/true`'s own time (issue 18).
#[derive(Debug, Parser)]
#[command(
    name = "toolsmith",
    disable_help_flag = true,
    disable_version_flag = true,
    disable_help_subcommand = true,
    allow_external_subcommands = true
)]
struct HotCli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: HotCommand,
}

/// [`HotCli`]'s commands. Help is left to the whole tree: `-h` or `--help` anywhere is an
/// error here, so [`parse`] parses again with [`Cli`], which prints it.
#[derive(Debug, Subcommand)]
enum HotCommand {
    #[command(disable_help_flag = true)]
    Sandbox(sandbox::SandboxArgs),
    #[command(disable_help_flag = true)]
    Run(RunArgs),
    /// Any other command, left to [`Cli`]; clap requires the words to be kept.
    #[command(external_subcommand)]
    #[allow(dead_code)]
    Other(Vec<OsString>),
}

/// `args` as [`Cli`] would parse them when they name a hot command and parse without error;
/// `None` for anything else (other commands, help, version, every error), which is then
/// [`Cli`]'s to parse and to explain.
fn parse_hot(args: &[OsString]) -> Option<Cli> {
    let mut command = HotCli::command();
    let matches = command.try_get_matches_from_mut(args).ok()?;
    std::mem::forget(command);
    let hot = <HotCli as clap::FromArgMatches>::from_arg_matches(&matches).ok()?;
    let command = match hot.command {
        HotCommand::Sandbox(args) => Command::Sandbox(args),
        HotCommand::Run(args) => Command::Run(args),
        HotCommand::Other(_) => return None,
    };
    Some(Cli {
        global: hot.global,
        command,
    })
}

/// Runs one parsed command line.
pub fn run(cli: &Cli) -> Result<(), Failure> {
    let mut out = output::stdout();
    let style = Style::for_stdout();
    let done = match &cli.command {
        Command::Status => status(cli, &mut out, style),
        Command::Doctor => doctor::run(cli, &mut out, style),
        Command::Config(ConfigCommand::Show) => config_show(cli, &mut out),
        Command::Config(ConfigCommand::Policy) => {
            let text = crate::validate::run::DEFAULT_POLICY;
            if cli.global.json {
                output::json(&mut out, &json!({ "policy": text }))
            } else {
                out.write_all(text.as_bytes()).map_err(Failure::from)
            }
        }
        Command::Config(ConfigCommand::Check { file }) => config_check(cli, file, &mut out),
        Command::Reload => {
            let result = connect(cli)?.call("config.reload", Value::Null)?;
            if cli.global.json {
                output::json(&mut out, &result)
            } else {
                let restart: Vec<String> = result["restart_required"]
                    .as_array()
                    .map(|keys| {
                        keys.iter()
                            .filter_map(|k| k.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                writeln!(out, "configuration reloaded")?;
                if !restart.is_empty() {
                    writeln!(
                        out,
                        "changed, effective after a restart: {}",
                        restart.join(", ")
                    )?;
                }
                Ok(())
            }
        }
        Command::Stop => {
            let result = connect(cli)?.call("daemon.shutdown", Value::Null)?;
            if cli.global.json {
                output::json(&mut out, &result)
            } else {
                writeln!(out, "toolsmithd is stopping")?;
                Ok(())
            }
        }
        Command::Watch { kinds } => watch(cli, kinds, &mut out),
        Command::Ui { port, open } => ui::serve(cli, *port, *open),
        Command::Ingest { format, paths } => {
            ingest::ingest(cli, format.as_deref(), paths, &mut out)
        }
        Command::Actions {
            ids,
            session,
            limit,
        } => ingest::actions(cli, ids, session.as_deref(), *limit, &mut out, style),
        Command::Sources => ingest::sources(cli, &mut out),
        Command::Mine => mine::mine(cli, &mut out, style),
        Command::Patterns { kind, limit, id } => {
            mine::patterns(cli, kind.as_deref(), *limit, id.as_deref(), &mut out, style)
        }
        Command::Generate { pattern } => {
            generate::generate(cli, pattern.as_deref(), &mut out, style)
        }
        Command::New { text, examples } => generate::new(cli, text, examples, &mut out, style),
        Command::Candidates => generate::list(cli, &mut out, style),
        Command::Show { id, attempts } => generate::show(cli, id, *attempts, &mut out, style),
        Command::Install { apparmor: true, .. } => {
            install::install_apparmor(cli.global.json, &mut out)
        }
        Command::Install {
            user,
            enable,
            agents,
            ..
        } => install::install(cli.global.json, *user, *enable, *agents, &mut out),
        Command::Uninstall { .. } => install::uninstall(cli.global.json, &mut out),
        Command::Completions { shell } => {
            // clap_complete panics when its writer fails: it writes to memory, we to stdout.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "toolsmith", &mut script);
            out.write_all(&script)?;
            Ok(())
        }
        Command::Man { out: dir } => man(dir.as_deref(), &mut out),
        Command::Sandbox(args) => sandbox::run(cli, args).map(drop),
        Command::Run(args) => registry::run(cli, args).map(drop),
        Command::Mcp { workspace } => mcp::serve(cli, workspace.clone()),
        Command::Review => registry::list_reviews(cli, &mut out, style),
        Command::Approve { id, note, grants } => {
            registry::approve(cli, id, note.as_deref(), grants, &mut out)
        }
        Command::Reject { id, reason } => registry::reject(cli, id, reason, &mut out),
        Command::Edit { name } => registry::edit(cli, name, &mut out),
        Command::ApproveSpec { id } => generate::approve_spec(cli, id, &mut out, style),
        Command::RejectSpec { id, reason } => {
            generate::reject_spec(cli, id, reason, &mut out, style)
        }
        Command::Tools => registry::tools(cli, &mut out, style),
        Command::Sync { remote } => registry::sync(cli, remote.as_deref(), &mut out),
        Command::Export(ExportCommand::Skills { to, agents }) => {
            registry::export_skills(cli, to.as_deref(), *agents, &mut out)
        }
        Command::Export(ExportCommand::Feedback { output }) => {
            stats::export_feedback(cli, output.as_deref(), &mut out)
        }
        Command::Stats => stats::stats(cli, &mut out, style),
        Command::Notices { session_start } => notices::notices(cli, *session_start, &mut out),
        Command::Verify => registry::verify(cli, &mut out, style),
        Command::Reapprove { yes } => registry::reapprove(cli, *yes, &mut out, style),
        Command::Health { check: true, .. } => health::check(cli, &mut out),
        Command::Health { name, .. } => health::health(cli, name.as_deref(), &mut out, style),
        Command::Heal { name } => generate::heal(cli, name, &mut out, style),
        Command::Schedule => health::schedule(cli, &mut out, style),
        Command::Demo { dir } => demo::demo(cli, dir.as_deref(), &mut out, style),
        Command::Rollback { name } => registry::rollback(cli, name, &mut out),
        Command::Adopt { name } => generate::adopt(cli, name, &mut out, style),
        Command::Deprecate {
            name,
            replaced_by,
            reason,
        } => registry::deprecate(cli, name, replaced_by.as_deref(), reason, &mut out),
    };
    // What is still buffered goes out now, where a failure to write it is seen.
    let flushed = out.flush();
    done?;
    Ok(flushed?)
}

/// The configuration as this command line resolves it.
fn load_config(cli: &Cli) -> Result<Config, Failure> {
    Ok(config_request(cli).load(&crate::daemon::checks::STAGES)?)
}

fn config_request(cli: &Cli) -> ConfigRequest {
    ConfigRequest {
        config_file: cli.global.config.clone(),
        state_dir: cli.global.state.clone(),
    }
}

/// The socket to talk to: `--socket`, `$TOOLSMITH_SOCKET`, or the configured one.
fn socket_path(cli: &Cli) -> Result<PathBuf, Failure> {
    if let Some(path) = &cli.global.socket {
        return Ok(path.clone());
    }
    if let Some(path) = std::env::var_os("TOOLSMITH_SOCKET").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    match load_config(cli) {
        Ok(config) => Ok(config.socket_path()),
        // A broken file must not keep `reload` from reaching the daemon, which reports the
        // error itself; the socket is then where it would be without the file.
        Err(failure) => ConfigRequest {
            config_file: None,
            state_dir: cli.global.state.clone(),
        }
        .load_without_file()
        .map(|config| config.socket_path())
        .map_err(|_| failure),
    }
}

/// toolsmith's own places for this command line, which no sandboxed run may see: the
/// configuration's, and the socket `--socket` or `$TOOLSMITH_SOCKET` names.
fn own_places(cli: &Cli, config: &Config) -> crate::sandbox::OwnPlaces {
    let mut own = config.own_places();
    let named = cli.global.socket.clone().or_else(|| {
        std::env::var_os("TOOLSMITH_SOCKET")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    });
    if let Some(socket) = named {
        own.add("control socket", socket);
    }
    own
}

/// [`own_places`] for a command that runs without a usable configuration too (`toolsmith
/// sandbox`, for debugging): a file that cannot be read leaves the places found without it,
/// plus the file itself.
fn own_places_without_config(cli: &Cli) -> crate::sandbox::OwnPlaces {
    let request = config_request(cli);
    if let Ok(config) = request.load(&crate::daemon::checks::STAGES) {
        return own_places(cli, &config);
    }
    let mut own = match request.load_without_file() {
        Ok(config) => own_places(cli, &config),
        Err(_) => crate::sandbox::OwnPlaces::none(),
    };
    let named = cli.global.config.clone().or_else(|| {
        std::env::var_os("TOOLSMITH_CONFIG")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    });
    if let Some(file) = named {
        own.add("configuration file", file);
    }
    own
}

fn connect(cli: &Cli) -> Result<Client, Failure> {
    Ok(Client::connect(&socket_path(cli)?)?)
}

/// The daemon's `status`, if one is running and answers.
fn daemon_status(cli: &Cli) -> Option<Value> {
    connect(cli).ok()?.call("status", Value::Null).ok()
}

fn status(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let status = connect(cli)?.call("status", Value::Null)?;
    if cli.global.json {
        return output::json(out, &status);
    }
    let s = |key: &str| status[key].as_str().unwrap_or("?").to_owned();
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    writeln!(
        out,
        "toolsmithd {} {} (pid {}, up {})",
        s("version"),
        style.good("running"),
        n(&status["pid"]),
        output::duration(n(&status["uptime_s"]))
    )?;
    let config = match status["config_file"].as_object() {
        Some(file) => format!(
            "{} (found by {})",
            file.get("path").and_then(Value::as_str).unwrap_or("?"),
            file.get("found_by").and_then(Value::as_str).unwrap_or("?")
        ),
        None => "embedded defaults (no file)".to_owned(),
    };
    let socket = if status["socket_activated"].as_bool() == Some(true) {
        format!("{} (socket-activated)", s("socket"))
    } else {
        s("socket")
    };
    let mut rows = vec![
        ("socket", socket),
        ("config", config),
        ("state", s("state_dir")),
        ("registry", s("registry_dir")),
        ("logs", s("log_target")),
    ];
    if let Some(kib) = status["memory_rss_kib"].as_u64() {
        rows.push(("memory", format!("{:.1} MiB resident", kib as f64 / 1024.0)));
    }
    if let Some(prev) = status["previous_run"].as_object() {
        let clean = prev.get("clean_stop").and_then(Value::as_bool) == Some(true);
        rows.push((
            "last run",
            if clean {
                "stopped cleanly".to_owned()
            } else {
                style.warn(&format!(
                    "did not stop cleanly (pid {})",
                    prev.get("pid").and_then(Value::as_u64).unwrap_or(0)
                ))
            },
        ));
    }
    let c = &status["counters"];
    rows.push((
        "requests",
        format!(
            "{} ({} errors), connections: {} open, {} accepted, {} refused (peer), {} refused (busy); \
             subscriptions: {} open, {} refused",
            n(&c["requests"]),
            n(&c["request_errors"]),
            n(&c["connections_open"]),
            n(&c["connections_accepted"]),
            n(&c["connections_refused_peer"]),
            n(&c["connections_refused_busy"]),
            n(&c["subscriptions_open"]),
            n(&c["subscriptions_refused"]),
        ),
    ));
    rows.push((
        "events",
        format!(
            "{} published, {} config reloads",
            n(&c["events_published"]),
            n(&c["config_reloads"])
        ),
    ));
    let ingest = &c["ingest"];
    let skipped = n(&ingest["skipped"]);
    rows.push((
        "ingest",
        format!(
            "{} actions from {} files, {} problems{}{}",
            n(&ingest["actions"]),
            n(&ingest["files"]),
            n(&ingest["problems"]),
            if skipped > 0 {
                style.warn(&format!(
                    ", {skipped} files not read (`toolsmith sources` says why)"
                ))
            } else {
                String::new()
            },
            crate::cli::ingest::write_failures(ingest)
                .map(|words| style.bad(&format!(", {words}")))
                .unwrap_or_default()
        ),
    ));
    output::table(out, &rows)?;
    Ok(())
}

fn config_show(cli: &Cli, out: &mut impl Write) -> Result<(), Failure> {
    let config = load_config(cli)?;
    if cli.global.json {
        let values: Vec<Value> = config
            .entries()
            .into_iter()
            .map(|(key, value, origin)| {
                json!({"key": key, "value": toml_to_json(&value), "origin": origin, "from": origin.to_string()})
            })
            .collect();
        return output::json(
            out,
            &json!({"file": config.file, "values": values, "sources": config.sources}),
        );
    }
    match &config.file {
        Some(file) => writeln!(
            out,
            "# config file: {} (found by {})",
            file.path.display(),
            file.found_by
        )?,
        None => writeln!(out, "# no config file: embedded defaults")?,
    }
    let mut table = "";
    for (key, value, origin) in config.entries() {
        let (section, name) = key.split_once('.').unwrap_or(("", key));
        if section != table {
            writeln!(out, "\n[{section}]")?;
            table = section;
        }
        let line = format!("{name} = {value}");
        writeln!(out, "{line:<50} # {origin}")?;
    }
    if config.sources.is_empty() {
        writeln!(
            out,
            "\n# no [[source]]: the standard locations of Claude Code, Codex, bash, zsh and fish \
             logs that exist are read"
        )?;
    }
    for source in &config.sources {
        writeln!(out, "\n[[source]]{:<40} # {}", "", source.origin)?;
        writeln!(out, "name = {:?}", source.name)?;
        writeln!(out, "format = {:?}", source.format)?;
        writeln!(out, "path = {:?}", source.path)?;
    }
    Ok(())
}

fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::from(s.as_str()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => Value::from(*f),
        toml::Value::Boolean(b) => Value::from(*b),
        other => Value::from(other.to_string()),
    }
}

fn config_check(cli: &Cli, file: &std::path::Path, out: &mut impl Write) -> Result<(), Failure> {
    config::check_file(file, &crate::daemon::checks::STAGES)?;
    if cli.global.json {
        output::json(out, &json!({"file": file, "valid": true}))
    } else {
        writeln!(out, "{}: valid", file.display())?;
        Ok(())
    }
}

fn watch(cli: &Cli, kinds: &[String], out: &mut impl Write) -> Result<(), Failure> {
    let mut client = connect(cli)?;
    client.call("events.subscribe", json!({"kinds": kinds}))?;
    while let Some(note) = client.next_notification()? {
        let event = note.params;
        if cli.global.json {
            writeln!(out, "{event}")?;
        } else {
            writeln!(
                out,
                "{}  {:<24} {}",
                event["ts"].as_str().unwrap_or("-"),
                event["kind"].as_str().unwrap_or("?"),
                event["data"]
            )?;
        }
        out.flush()?;
    }
    Ok(())
}

fn man(dir: Option<&std::path::Path>, out: &mut impl Write) -> Result<(), Failure> {
    let cli = Cli::command();
    let Some(dir) = dir else {
        clap_mangen::Man::new(cli).render(out)?;
        return Ok(());
    };
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut write_page = |name: String, man: clap_mangen::Man| -> Result<(), Failure> {
        let mut page = Vec::new();
        man.render(&mut page)?;
        let path = dir.join(name);
        std::fs::write(&path, page)?;
        written.push(path);
        Ok(())
    };
    for sub in cli.get_subcommands() {
        let name = format!("toolsmith-{}", sub.get_name());
        write_page(
            format!("{name}.1"),
            clap_mangen::Man::new(sub.clone().name(name)),
        )?;
    }
    write_page("toolsmith.1".into(), clap_mangen::Man::new(cli))?;
    write_page(
        "toolsmithd.8".into(),
        clap_mangen::Man::new(crate::daemon::Args::command()).section("8"),
    )?;
    for path in written {
        writeln!(out, "{}", path.display())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_is_well_formed() {
        Cli::command().debug_assert();
        crate::daemon::Args::command().debug_assert();
        HotCli::command().debug_assert();
    }

    fn hot(args: &[&str]) -> Option<Cli> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse_hot(&args)
    }

    #[test]
    fn the_hot_commands_parse_as_the_whole_tree_parses_them() {
        let lines: &[&[&str]] = &[
            &["toolsmith", "sandbox", "--", "/bin/true"],
            &[
                "toolsmith",
                "--json",
                "sandbox",
                "--timeout",
                "5",
                "--workspace",
                "write",
                "/tmp",
                "--env",
                "A=b",
                "--toolchain",
                "cargo",
                "--",
                "sh",
                "-c",
                "echo --help",
            ],
            &[
                "toolsmith",
                "sandbox",
                "--json",
                "--state",
                "/s",
                "--",
                "x",
                "-h",
            ],
            &[
                "toolsmith",
                "sandbox",
                "--allow-host",
                "h:443",
                "--policy",
                "p.toml",
                "--",
                "x",
            ],
            &[
                "toolsmith",
                "run",
                "fmt",
                "--param",
                "a=b",
                "--param",
                "c=d",
                "--json",
            ],
            &[
                "toolsmith",
                "--config",
                "/c",
                "--socket",
                "/s",
                "run",
                "t",
                "--input",
                "{}",
            ],
            &["toolsmith", "run", "t", "--workspace", "/w"],
        ];
        for line in lines {
            let whole = Cli::try_parse_from(*line).unwrap();
            let hot = hot(line).unwrap_or_else(|| panic!("{line:?} left to the whole tree"));
            assert_eq!(format!("{hot:?}"), format!("{whole:?}"), "{line:?}");
        }
    }

    #[test]
    fn help_version_errors_and_other_commands_are_left_to_the_whole_tree() {
        let lines: &[&[&str]] = &[
            &["toolsmith"],
            &["toolsmith", "--version"],
            &["toolsmith", "--help"],
            &["toolsmith", "help", "sandbox"],
            &["toolsmith", "sandbox", "--help"],
            &["toolsmith", "sandbox", "-h", "--", "x"],
            &["toolsmith", "run", "t", "--help"],
            &["toolsmith", "sandbox"],
            &["toolsmith", "sandbox", "--timeout", "soon", "--", "true"],
            &["toolsmith", "run"],
            &["toolsmith", "status"],
            &["toolsmith", "--json", "tools"],
            &["toolsmith", "sandbx", "--", "true"],
        ];
        for line in lines {
            assert!(hot(line).is_none(), "{line:?} parsed as a hot command");
        }
    }
}
