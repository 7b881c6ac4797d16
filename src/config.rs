//! Configuration: where the file is found, what it may say, and the directories the daemon uses.
//!
//! The file is TOML. Every key is optional; a machine with no file at all runs on the embedded
//! defaults. Unknown keys and bad values are errors that name the file, the line and the key,
//! because a typo that silently falls back to a default is worse than a refusal to start.
//!
//! Every effective value remembers its [`Origin`], so `toolsmith config show` can say why a value
//! is what it is.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// The name of the configuration file inside a configuration directory.
pub const CONFIG_FILE_NAME: &str = "config.toml";

/// The name of the control socket inside the runtime directory.
pub const SOCKET_FILE_NAME: &str = "control.sock";

/// The directory inside the state directory where validation makes its scratch workspaces.
pub const SCRATCH_DIR: &str = "scratch";

/// Where runs are logged as native JSONL actions, under the state directory; ingest reads it
/// like any agent's log, so the miner sees the tools in use among the commands still typed.
pub const RUNS_DIR: &str = "runs";

/// A configuration that could not be found, read or accepted.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file named explicitly (flag or `$TOOLSMITH_CONFIG`) does not exist or cannot be read.
    #[error("cannot read config file {path} (named by {named_by}): {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Which flag or variable named it.
        named_by: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML, has an unknown key, or a value of the wrong type or range.
    #[error("{path}:{line}:{column}: {message}{}", key_hint(.key))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending key or value.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The dotted key, when it could be determined.
        key: Option<String>,
        /// What is wrong and what would be accepted.
        message: String,
    },
    /// No directory could be derived for a path the daemon needs.
    #[error(
        "cannot decide where the {what} directory is: none of {tried} is set; \
         set one of them, pass --state DIR, or set paths.{what} in the config file"
    )]
    NoDirectory {
        /// Which directory (state, runtime, registry).
        what: &'static str,
        /// The variables that were tried.
        tried: &'static str,
    },
}

fn key_hint(key: &Option<String>) -> String {
    match key {
        Some(key) => format!(" (key `{key}`)"),
        None => String::new(),
    }
}

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Origin {
    /// The embedded default.
    Default,
    /// A line of the configuration file.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
    },
    /// An environment variable (systemd or XDG directory variables).
    Env {
        /// The variable's name.
        var: &'static str,
    },
    /// A command-line flag.
    Flag {
        /// The flag, e.g. `--state`.
        flag: &'static str,
    },
    /// Derived from another setting.
    Derived {
        /// What it was derived from, e.g. `paths.state`.
        from: &'static str,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Env { var } => write!(f, "${var}"),
            Origin::Flag { flag } => f.write_str(flag),
            Origin::Derived { from } => write!(f, "derived from {from}"),
        }
    }
}

/// An effective value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Setting<T> {
    /// The value in force.
    pub value: T,
    /// Why it is this value.
    pub origin: Origin,
}

impl<T> Setting<T> {
    fn default(value: T) -> Self {
        Setting {
            value,
            origin: Origin::Default,
        }
    }
}

/// How the configuration file was chosen.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConfigFile {
    /// The file that was read.
    pub path: PathBuf,
    /// What named it: `--config`, `$TOOLSMITH_CONFIG`, `$CONFIGURATION_DIRECTORY`, …
    pub found_by: &'static str,
}

/// The daemon's own settings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DaemonSettings {
    /// A `tracing` filter directive such as `info` or `toolsmith=debug`.
    pub log_level: Setting<String>,
    /// How many control connections may be open at once; more are refused with an error.
    pub max_connections: Setting<u32>,
    /// How many connections may be subscribed to events at once, in a pool of their own beside
    /// `max_connections` (so subscribers never take a request's slot); more are refused.
    pub max_subscriptions: Setting<u32>,
    /// The largest control request accepted, in KiB.
    pub max_request_kib: Setting<u32>,
    /// How long a shutdown waits for in-flight requests before closing them, in seconds.
    pub shutdown_grace_s: Setting<u32>,
    /// How long a control connection may stay idle (no request under way, not subscribed to
    /// events) before the daemon closes it, in seconds.
    pub idle_timeout_s: Setting<u32>,
    /// How long a request line may take to arrive once it has begun, in seconds.
    pub partial_line_timeout_s: Setting<u32>,
}

/// The directories the daemon works in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PathSettings {
    /// SQLite store, lock file, staging: the daemon's private state.
    pub state: Setting<PathBuf>,
    /// Where the control socket lives.
    pub runtime: Setting<PathBuf>,
    /// The git registry of approved tools: the user's data, not state.
    pub registry: Setting<PathBuf>,
}

/// The effective configuration: every value, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Config {
    /// The file that was read, if any.
    pub file: Option<ConfigFile>,
    /// Daemon settings.
    pub daemon: DaemonSettings,
    /// Directories.
    pub paths: PathSettings,
    /// How logs are read.
    pub ingest: IngestSettings,
    /// How patterns are mined.
    pub mine: MineSettings,
    /// How candidates are generated (`[generate]`).
    pub generate: GenerateSettings,
    /// The language model generation may use (`[llm]`).
    pub llm: LlmConfig,
    /// The MCP server.
    pub mcp: McpSettings,
    /// What runs on events.
    pub events: EventSettings,
    /// When the health stage checks, heals and rolls back (`[health]`; its judgments are the
    /// policy file's).
    pub health: HealthSettings,
    /// When the registry is synced with its remote (`[sync]`).
    pub sync: SyncSettings,
    /// Where the user's programs are looked up for tools (`[sandbox]`).
    pub sandbox: SandboxSettings,
    /// How the person reviews (`[review]`; auto-approval rules are the policy file's).
    pub review: ReviewSettings,
    /// `[[source]]` tables; empty means: the standard locations of known agents and shells.
    pub sources: Vec<SourceSetting>,
    /// The directories a configuration file is looked for in (whether or not one is there):
    /// `$CONFIGURATION_DIRECTORY`, `$XDG_CONFIG_HOME/toolsmith` (or `~/.config/toolsmith`),
    /// `/etc/toolsmith`. A file planted in one would be read by the next toolsmith.
    #[serde(skip)]
    pub config_dirs: Vec<PathBuf>,
}

/// How logs are read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IngestSettings {
    /// Records larger than this (KiB) are skipped and counted.
    pub max_record_kib: Setting<u32>,
    /// Output excerpts are capped to this many KiB (head and tail) before storage.
    pub output_cap_kib: Setting<u32>,
    /// How long the tailer waits after a change for more changes, in milliseconds.
    pub debounce_ms: Setting<u32>,
}

/// How patterns are mined from the stored actions (`[mine]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MineSettings {
    /// Sessions a pattern must be seen in before it is reported, at least (a sub-agent's
    /// session counts with its parent's)…
    pub min_support: Setting<u32>,
    /// …unless it occurs at least this many times, in two sessions at least (one for an
    /// error→recovery habit).
    pub min_occurrences: Setting<u32>,
    /// Share of the sessions (percent) a pattern must be seen in, when that is more.
    pub min_support_percent: Setting<u32>,
    /// Other actions allowed between two consecutive steps of a repeated sequence.
    pub max_gap: Setting<u32>,
    /// Fewest steps of a repeated sequence.
    pub min_length: Setting<u32>,
    /// Most steps of a repeated sequence.
    pub max_length: Setting<u32>,
    /// A pattern is dropped when a longer one keeps at least this share (percent) of its
    /// support; of two patterns of one habit, the better ranked gives way to one with clearly
    /// more occurrences (its count below this share of the other's).
    pub fold_percent: Setting<u32>,
    /// An action whose median duration is at least this many milliseconds is a slow operation.
    pub slow_ms: Setting<u32>,
    /// When the daemon mines (a 5-field crontab line).
    pub schedule: Setting<String>,
    /// The daemon also mines once this many new actions have been stored since the last run.
    pub after_new_actions: Setting<u32>,
    /// Whether mining reads the user's shell aliases and functions (their `.bashrc`, `.zshrc`,
    /// fish's config, Claude Code's shell snapshots: read, never run) so that a command typed
    /// through one is read as what the shell ran.
    pub shell_definitions: Setting<bool>,
}

/// A command run on events (`[events]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EventSettings {
    /// The program and its arguments, run with each chosen event as JSON on stdin (empty:
    /// nothing runs).
    pub on_event: Setting<Vec<String>>,
    /// The event kinds that run it, as prefixes (`tool.` is every tool event).
    pub on_event_kinds: Setting<Vec<String>>,
}

/// When the health stage runs (`[health]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HealthSettings {
    /// A 5-field crontab line.
    pub schedule: Setting<String>,
}

/// When the registry is synced (`[sync]`): only when it has a remote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SyncSettings {
    /// A 5-field crontab line.
    pub schedule: Setting<String>,
}

/// The MCP server (`[mcp]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct McpSettings {
    /// Characters the descriptions of the listed tools may take together: agents drop tools
    /// past their context budget, so the most used and most recent come first and the rest
    /// are found with `toolsmith_search`.
    pub description_budget: Setting<u32>,
    /// Tools one MCP session may ask for (`toolsmith_request`) in an hour: a request is
    /// untrusted input that costs a generation and a person's review (0: requests refused).
    pub requests_per_hour: Setting<u32>,
}

/// The user's side of the sandbox (`[sandbox]`; the policy file's `[sandbox]` table holds the
/// layers and limits).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SandboxSettings {
    /// The user's `PATH`, as their shell has it (written by `toolsmith install --user`): a
    /// tool's required programs are resolved on it, and those in the user's toolchains
    /// (rustup, pyenv, a venv, nvm, ~/.local/bin) bound into the sandbox. `None`: the daemon's
    /// own `$PATH`, which under systemd is minimal.
    pub path: Setting<Option<String>>,
}

/// How the person reviews (`[review]`): their preferences, where the policy file's `[review]`
/// table holds the rules that approve without them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReviewSettings {
    /// Whether a requested tool (origin `request`: an agent's `toolsmith_request`, or
    /// `toolsmith new`) waits with its spec until a person accepts it, before any code is
    /// generated.
    pub approve_specs: Setting<bool>,
    /// A desktop notification (over the session bus) when a proposal awaits review.
    pub notify: Setting<bool>,
}

/// How candidates are generated (`[generate]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GenerateSettings {
    /// What writes the code: `template` (offline, the default) or `llm`.
    pub backend: Setting<String>,
    /// Mined patterns scoring at least this (0–100) become candidates after a mining pass.
    pub min_score: Setting<u32>,
    /// Attempts a model gets to pass validation (the template generator makes one).
    pub max_attempts: Setting<u32>,
    /// Most new candidates one generation pass makes from mined patterns.
    pub max_per_run: Setting<u32>,
    /// The policy file validation and the sandbox follow (`None`: the built-in
    /// `policies/default.toml`).
    pub policy: Setting<Option<PathBuf>>,
}

/// The language model (`[llm]`). The API key is never in the file: it comes from the
/// environment variable `api_key_env` or from `$CREDENTIALS_DIRECTORY/llm-api-key`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LlmConfig {
    /// The API spoken: `openai` (also Ollama, vLLM, llama.cpp server) or `anthropic`.
    pub provider: Setting<String>,
    /// The server's base URL (default: the provider's own).
    pub base_url: Setting<String>,
    /// The model's name; required with `generate.backend = "llm"`.
    pub model: Setting<String>,
    /// The environment variable holding the API key (default: the provider's usual one).
    pub api_key_env: Setting<String>,
    /// Time allowed for one request, seconds.
    pub timeout_s: Setting<u32>,
    /// Retries of a request that failed in a way worth retrying.
    pub max_retries: Setting<u32>,
    /// The longest reply asked for, in tokens (`max_tokens` on the wire): a small local model
    /// needs a small one to answer in time.
    pub max_tokens: Setting<u32>,
    /// Tokens the model may spend a day (0: no limit).
    pub daily_token_budget: Setting<u32>,
}

/// One `[[source]]` table: a file, directory or glob of one format.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceSetting {
    /// The source's name in `toolsmith sources` (default: the format's name).
    pub name: String,
    /// The format (`claude-code`, `codex`, `bash`, …).
    pub format: String,
    /// A file, a directory (read recursively) or a glob; `~/` means the home directory.
    pub path: String,
    /// Where it was written.
    pub origin: Origin,
}

impl Config {
    /// The control socket's path.
    pub fn socket_path(&self) -> PathBuf {
        self.paths.runtime.value.join(SOCKET_FILE_NAME)
    }

    /// The SQLite store's path.
    pub fn store_path(&self) -> PathBuf {
        self.paths.state.value.join("state.db")
    }

    /// The daemon's single-instance lock file.
    pub fn lock_path(&self) -> PathBuf {
        self.paths.state.value.join("toolsmithd.lock")
    }

    /// The user's environment a tool's programs are resolved in: `[sandbox] path` when set
    /// (its origin named), else this process's `PATH`; the home directory and the toolchains'
    /// variables from this process.
    pub fn user_env(&self) -> crate::sandbox::toolchain::UserEnv {
        let origin = format!("[sandbox] path ({})", self.sandbox.path.origin);
        crate::sandbox::toolchain::UserEnv::from_process(
            self.sandbox
                .path
                .value
                .as_deref()
                .map(|p| (p, origin.as_str())),
        )
    }

    /// toolsmith's own places, which no sandboxed run may see: the state, runtime and
    /// registry directories, the configuration's directories and file, and the policy file;
    /// validation's scratch workspaces (`<state>/scratch/…`) are the one exception.
    pub fn own_places(&self) -> crate::sandbox::OwnPlaces {
        let mut own = crate::sandbox::OwnPlaces::none();
        own.add("state directory", &self.paths.state.value);
        own.add("runtime directory", &self.paths.runtime.value);
        own.add("registry", &self.paths.registry.value);
        if let Some(file) = &self.file {
            own.add("configuration file", &file.path);
        }
        for dir in &self.config_dirs {
            own.add("configuration directory", dir);
        }
        if let Some(policy) = &self.generate.policy.value {
            own.add("policy file", policy);
        }
        own.with_scratch(self.paths.state.value.join(SCRATCH_DIR))
    }

    /// The largest accepted control request in bytes.
    pub fn max_request_bytes(&self) -> usize {
        self.daemon.max_request_kib.value as usize * 1024
    }

    /// How long a control connection may stay idle.
    pub fn idle_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.daemon.idle_timeout_s.value.into())
    }

    /// How long a request line may take to arrive once begun.
    pub fn partial_line_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.daemon.partial_line_timeout_s.value.into())
    }

    /// Every effective value as `(dotted key, value as TOML, origin)`, in file order.
    pub fn entries(&self) -> Vec<(&'static str, toml::Value, &Origin)> {
        let path = |p: &Path| toml::Value::String(p.display().to_string());
        fn int<'a>(
            key: &'static str,
            setting: &'a Setting<u32>,
        ) -> (&'static str, toml::Value, &'a Origin) {
            (
                key,
                toml::Value::Integer(setting.value.into()),
                &setting.origin,
            )
        }
        fn strings(values: &[String]) -> toml::Value {
            toml::Value::Array(values.iter().cloned().map(toml::Value::String).collect())
        }
        let d = &self.daemon;
        let p = &self.paths;
        vec![
            (
                "daemon.log_level",
                toml::Value::String(d.log_level.value.clone()),
                &d.log_level.origin,
            ),
            (
                "daemon.max_connections",
                toml::Value::Integer(d.max_connections.value.into()),
                &d.max_connections.origin,
            ),
            int("daemon.max_subscriptions", &d.max_subscriptions),
            (
                "daemon.max_request_kib",
                toml::Value::Integer(d.max_request_kib.value.into()),
                &d.max_request_kib.origin,
            ),
            (
                "daemon.shutdown_grace_s",
                toml::Value::Integer(d.shutdown_grace_s.value.into()),
                &d.shutdown_grace_s.origin,
            ),
            int("daemon.idle_timeout_s", &d.idle_timeout_s),
            int("daemon.partial_line_timeout_s", &d.partial_line_timeout_s),
            ("paths.state", path(&p.state.value), &p.state.origin),
            ("paths.runtime", path(&p.runtime.value), &p.runtime.origin),
            (
                "paths.registry",
                path(&p.registry.value),
                &p.registry.origin,
            ),
            (
                "ingest.max_record_kib",
                toml::Value::Integer(self.ingest.max_record_kib.value.into()),
                &self.ingest.max_record_kib.origin,
            ),
            (
                "ingest.output_cap_kib",
                toml::Value::Integer(self.ingest.output_cap_kib.value.into()),
                &self.ingest.output_cap_kib.origin,
            ),
            (
                "ingest.debounce_ms",
                toml::Value::Integer(self.ingest.debounce_ms.value.into()),
                &self.ingest.debounce_ms.origin,
            ),
            int("mine.min_support", &self.mine.min_support),
            int("mine.min_occurrences", &self.mine.min_occurrences),
            int("mine.min_support_percent", &self.mine.min_support_percent),
            int("mine.max_gap", &self.mine.max_gap),
            int("mine.min_length", &self.mine.min_length),
            int("mine.max_length", &self.mine.max_length),
            int("mine.fold_percent", &self.mine.fold_percent),
            int("mine.slow_ms", &self.mine.slow_ms),
            (
                "mine.schedule",
                toml::Value::String(self.mine.schedule.value.clone()),
                &self.mine.schedule.origin,
            ),
            int("mine.after_new_actions", &self.mine.after_new_actions),
            (
                "mine.shell_definitions",
                toml::Value::Boolean(self.mine.shell_definitions.value),
                &self.mine.shell_definitions.origin,
            ),
            (
                "generate.backend",
                toml::Value::String(self.generate.backend.value.clone()),
                &self.generate.backend.origin,
            ),
            int("generate.min_score", &self.generate.min_score),
            int("generate.max_attempts", &self.generate.max_attempts),
            int("generate.max_per_run", &self.generate.max_per_run),
            (
                "generate.policy",
                toml::Value::String(
                    self.generate
                        .policy
                        .value
                        .as_deref()
                        .map_or_else(String::new, |p| p.display().to_string()),
                ),
                &self.generate.policy.origin,
            ),
            (
                "llm.provider",
                toml::Value::String(self.llm.provider.value.clone()),
                &self.llm.provider.origin,
            ),
            (
                "llm.base_url",
                toml::Value::String(self.llm.base_url.value.clone()),
                &self.llm.base_url.origin,
            ),
            (
                "llm.model",
                toml::Value::String(self.llm.model.value.clone()),
                &self.llm.model.origin,
            ),
            (
                "llm.api_key_env",
                toml::Value::String(self.llm.api_key_env.value.clone()),
                &self.llm.api_key_env.origin,
            ),
            int("llm.timeout_s", &self.llm.timeout_s),
            int("llm.max_retries", &self.llm.max_retries),
            int("llm.max_tokens", &self.llm.max_tokens),
            int("llm.daily_token_budget", &self.llm.daily_token_budget),
            int("mcp.description_budget", &self.mcp.description_budget),
            int("mcp.requests_per_hour", &self.mcp.requests_per_hour),
            (
                "events.on_event",
                strings(&self.events.on_event.value),
                &self.events.on_event.origin,
            ),
            (
                "events.on_event_kinds",
                strings(&self.events.on_event_kinds.value),
                &self.events.on_event_kinds.origin,
            ),
            (
                "health.schedule",
                toml::Value::String(self.health.schedule.value.clone()),
                &self.health.schedule.origin,
            ),
            (
                "sync.schedule",
                toml::Value::String(self.sync.schedule.value.clone()),
                &self.sync.schedule.origin,
            ),
            (
                "sandbox.path",
                toml::Value::String(self.sandbox.path.value.clone().unwrap_or_default()),
                &self.sandbox.path.origin,
            ),
            (
                "review.approve_specs",
                toml::Value::Boolean(self.review.approve_specs.value),
                &self.review.approve_specs.origin,
            ),
            (
                "review.notify",
                toml::Value::Boolean(self.review.notify.value),
                &self.review.notify.origin,
            ),
        ]
    }

    /// Each scheduled job of the daemon (`mine`, `health`, `sync`) with its crontab line.
    pub fn job_schedules(&self) -> [(&'static str, &Setting<String>); 3] {
        [
            ("mine", &self.mine.schedule),
            ("health", &self.health.schedule),
            ("sync", &self.sync.schedule),
        ]
    }

    /// The settings that only take effect on restart and differ between `self` and `new`.
    pub fn restart_required(&self, new: &Config) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.paths.state.value != new.paths.state.value {
            keys.push("paths.state");
        }
        if self.paths.runtime.value != new.paths.runtime.value {
            keys.push("paths.runtime");
        }
        if self.paths.registry.value != new.paths.registry.value {
            keys.push("paths.registry");
        }
        keys
    }
}

/// What the command line says about configuration, kept so that a reload repeats the same lookup.
#[derive(Debug, Clone, Default)]
pub struct ConfigRequest {
    /// `--config FILE`.
    pub config_file: Option<PathBuf>,
    /// `--state DIR`.
    pub state_dir: Option<PathBuf>,
}

/// The process environment, read through a function so tests can supply their own.
pub trait Env {
    /// The variable's value, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;
    /// Whether the process runs as root.
    fn is_root(&self) -> bool;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    fn is_root(&self) -> bool {
        nix::unistd::geteuid().is_root()
    }
}

/// The checks of a configuration file that belong to the stages above config: config names
/// them and the stages answer (`daemon::checks::StageChecks` wires them), so that config
/// imports no stage it configures.
pub trait Checks {
    /// The source formats ingest reads, by the names `format = "…"` accepts.
    fn format_names(&self) -> Vec<&'static str>;
    /// Whether a policy file's text (`name` in messages) is usable by validation and the
    /// sandbox; what is wrong with it when not.
    fn policy(&self, text: &str, name: &str) -> Result<(), String>;
}

impl ConfigRequest {
    /// Finds, reads and validates the configuration from the real environment, the stages'
    /// parts of it with `checks`.
    pub fn load(&self, checks: &dyn Checks) -> Result<Config, ConfigError> {
        self.load_with(checks, &ProcessEnv)
    }

    /// Finds, reads and validates the configuration (the stages' parts with `checks`), reading
    /// variables from `env`.
    pub fn load_with(&self, checks: &dyn Checks, env: &dyn Env) -> Result<Config, ConfigError> {
        let file = self.find_file(env)?;
        let raw = match &file {
            Some(found) => {
                let text =
                    std::fs::read_to_string(&found.path).map_err(|source| ConfigError::Read {
                        path: found.path.clone(),
                        named_by: found.found_by,
                        source,
                    })?;
                Some((parse(&found.path, &text)?, found.path.clone(), text))
            }
            None => None,
        };
        if let Some((raw, path, text)) = &raw {
            validate(raw, path, text, checks)?;
        }
        resolve(self, env, file, raw)
    }

    /// The configuration as it would be with no file at all (defaults and the environment).
    pub fn load_without_file(&self) -> Result<Config, ConfigError> {
        resolve(self, &ProcessEnv, None, None)
    }

    /// The first configuration file found, in the documented order.
    fn find_file(&self, env: &dyn Env) -> Result<Option<ConfigFile>, ConfigError> {
        // Files named explicitly must exist: a typo there must not silently mean "defaults".
        let explicit = [
            (self.config_file.clone(), "--config"),
            (
                env.var("TOOLSMITH_CONFIG").map(PathBuf::from),
                "$TOOLSMITH_CONFIG",
            ),
        ];
        for (path, found_by) in explicit {
            if let Some(path) = path {
                if let Err(source) = std::fs::metadata(&path) {
                    return Err(ConfigError::Read {
                        path,
                        named_by: found_by,
                        source,
                    });
                }
                return Ok(Some(ConfigFile { path, found_by }));
            }
        }
        Ok(config_dirs(env)
            .into_iter()
            .map(|(dir, found_by)| (dir.join(CONFIG_FILE_NAME), found_by))
            .find(|(path, _)| path.is_file())
            .map(|(path, found_by)| ConfigFile { path, found_by }))
    }
}

/// The directories a configuration file is looked for in, in order, with what names each.
fn config_dirs(env: &dyn Env) -> Vec<(PathBuf, &'static str)> {
    let mut dirs = Vec::new();
    if let Some(dir) = env.var("CONFIGURATION_DIRECTORY") {
        // systemd may pass several directories separated by ':'; ours is the first.
        let first = dir.split(':').next().unwrap_or_default().to_owned();
        dirs.push((PathBuf::from(first), "$CONFIGURATION_DIRECTORY"));
    }
    if let Some(dir) = env.var("XDG_CONFIG_HOME") {
        dirs.push((PathBuf::from(dir).join("toolsmith"), "$XDG_CONFIG_HOME"));
    } else if let Some(home) = env.var("HOME") {
        dirs.push((
            PathBuf::from(home).join(".config/toolsmith"),
            "$HOME/.config",
        ));
    }
    dirs.push((PathBuf::from("/etc/toolsmith"), "/etc/toolsmith"));
    dirs
}

/// Validates one file on its own, as `toolsmith config check FILE` does (the stages' parts
/// with `checks`).
pub fn check_file(path: &Path, checks: &dyn Checks) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        named_by: "the command line",
        source,
    })?;
    let raw = parse(path, &text)?;
    validate(&raw, path, &text, checks)?;
    Ok(())
}

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    daemon: RawDaemon,
    #[serde(default)]
    paths: RawPaths,
    #[serde(default)]
    ingest: RawIngest,
    #[serde(default)]
    mine: RawMine,
    #[serde(default)]
    generate: RawGenerate,
    #[serde(default)]
    llm: RawLlm,
    #[serde(default)]
    mcp: RawMcp,
    #[serde(default)]
    events: RawEvents,
    #[serde(default)]
    health: RawSchedule,
    #[serde(default)]
    sync: RawSchedule,
    #[serde(default)]
    sandbox: RawSandbox,
    #[serde(default)]
    review: RawReview,
    #[serde(default, rename = "source")]
    sources: Vec<Spanned<RawSource>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIngest {
    max_record_kib: Option<Spanned<u32>>,
    output_cap_kib: Option<Spanned<u32>>,
    debounce_ms: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMine {
    min_support: Option<Spanned<u32>>,
    min_occurrences: Option<Spanned<u32>>,
    min_support_percent: Option<Spanned<u32>>,
    max_gap: Option<Spanned<u32>>,
    min_length: Option<Spanned<u32>>,
    max_length: Option<Spanned<u32>>,
    fold_percent: Option<Spanned<u32>>,
    slow_ms: Option<Spanned<u32>>,
    schedule: Option<Spanned<String>>,
    after_new_actions: Option<Spanned<u32>>,
    shell_definitions: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGenerate {
    backend: Option<Spanned<String>>,
    min_score: Option<Spanned<u32>>,
    max_attempts: Option<Spanned<u32>>,
    max_per_run: Option<Spanned<u32>>,
    policy: Option<Spanned<PathBuf>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    path: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReview {
    approve_specs: Option<Spanned<bool>>,
    notify: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLlm {
    provider: Option<Spanned<String>>,
    base_url: Option<Spanned<String>>,
    model: Option<Spanned<String>>,
    api_key_env: Option<Spanned<String>>,
    timeout_s: Option<Spanned<u32>>,
    max_retries: Option<Spanned<u32>>,
    max_tokens: Option<Spanned<u32>>,
    daily_token_budget: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvents {
    on_event: Option<Spanned<Vec<String>>>,
    on_event_kinds: Option<Spanned<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchedule {
    schedule: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    description_budget: Option<Spanned<u32>>,
    requests_per_hour: Option<Spanned<u32>>,
}

/// The providers `llm.provider` names.
pub const LLM_PROVIDERS: [&str; 2] = ["openai", "anthropic"];

/// The generators `generate.backend` names.
pub const GENERATE_BACKENDS: [&str; 2] = ["template", "llm"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    name: Option<Spanned<String>>,
    format: Spanned<String>,
    path: Spanned<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDaemon {
    log_level: Option<Spanned<String>>,
    max_connections: Option<Spanned<u32>>,
    max_subscriptions: Option<Spanned<u32>>,
    max_request_kib: Option<Spanned<u32>>,
    shutdown_grace_s: Option<Spanned<u32>>,
    idle_timeout_s: Option<Spanned<u32>>,
    partial_line_timeout_s: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPaths {
    state: Option<Spanned<PathBuf>>,
    runtime: Option<Spanned<PathBuf>>,
    registry: Option<Spanned<PathBuf>>,
}

fn parse(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    toml::from_str::<RawConfig>(text).map_err(|err| {
        let span = err.span().unwrap_or(0..0);
        let (line, column) = line_column(text, span.start);
        ConfigError::Invalid {
            path: path.to_owned(),
            line,
            column,
            key: key_at(text, span.start),
            message: err.message().trim().to_owned(),
        }
    })
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// The dotted key written on the line holding `offset`, qualified by the nearest table header.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let line = text[line_start..line_end].trim();
    let header = |l: &str| {
        let l = l.trim();
        (l.starts_with('[') && l.ends_with(']'))
            .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned())
    };
    if let Some(table) = header(line) {
        return Some(table);
    }
    let key = line.split('=').next()?.trim().trim_matches('"');
    if key.is_empty() {
        return None;
    }
    let table = text[..line_start].lines().rev().find_map(header);
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_owned(),
    })
}

fn invalid<T>(
    path: &Path,
    text: &str,
    value: &Spanned<T>,
    key: &str,
    message: String,
) -> ConfigError {
    let (line, column) = line_column(text, value.span().start);
    ConfigError::Invalid {
        path: path.to_owned(),
        line,
        column,
        key: Some(key.to_owned()),
        message,
    }
}

/// Range checks that the types alone do not express.
fn validate(
    raw: &RawConfig,
    path: &Path,
    text: &str,
    checks: &dyn Checks,
) -> Result<(), ConfigError> {
    // Always in this order, so that of several errors the same one is reported first.
    check_daemon(&raw.daemon, path, text)?;
    check_ingest(&raw.ingest, path, text)?;
    check_mine(&raw.mine, path, text)?;
    check_schedules(raw, path, text)?;
    check_generate_limits(&raw.generate, path, text)?;
    check_events(&raw.events, path, text)?;
    check_mcp(&raw.mcp, path, text)?;
    check_generate_backend(&raw.generate, checks, path, text)?;
    check_llm(&raw.llm, path, text)?;
    check_llm_backend_has_model(raw, path, text)?;
    check_sources(&raw.sources, checks, path, text)?;
    check_paths(&raw.paths, path, text)?;
    check_sandbox(&raw.sandbox, path, text)
}

/// `[sandbox] path`: a `PATH` of absolute directories, as a shell's.
fn check_sandbox(s: &RawSandbox, path: &Path, text: &str) -> Result<(), ConfigError> {
    if let Some(value) = &s.path {
        let dirs: Vec<&str> = value.get_ref().split(':').collect();
        if let Some(bad) = dirs.iter().find(|d| !d.starts_with('/')) {
            return Err(invalid(
                path,
                text,
                value,
                "sandbox.path",
                format!(
                    "`{}` is not an absolute directory: write your shell's PATH (`echo $PATH`), \
                     absolute directories separated by `:`",
                    bad.escape_debug()
                ),
            ));
        }
    }
    Ok(())
}

/// `[daemon]`: the log filter parses; the limits are in range.
fn check_daemon(d: &RawDaemon, path: &Path, text: &str) -> Result<(), ConfigError> {
    if let Some(level) = &d.log_level
        && let Err(err) = tracing_subscriber::EnvFilter::builder().parse(level.get_ref())
    {
        return Err(invalid(
            path,
            text,
            level,
            "daemon.log_level",
            format!(
                "`{}` is not a log filter ({err}); use error, warn, info, debug, trace \
                     or a directive such as `toolsmith=debug`",
                level.get_ref()
            ),
        ));
    }
    check_ranges(
        path,
        text,
        &[
            (&d.max_connections, "daemon.max_connections", 1, 4096),
            (&d.max_subscriptions, "daemon.max_subscriptions", 1, 4096),
            (&d.max_request_kib, "daemon.max_request_kib", 1, 65536),
            (&d.shutdown_grace_s, "daemon.shutdown_grace_s", 0, 3600),
            (&d.idle_timeout_s, "daemon.idle_timeout_s", 1, 86_400),
            (
                &d.partial_line_timeout_s,
                "daemon.partial_line_timeout_s",
                1,
                3600,
            ),
        ],
    )?;
    Ok(())
}

/// `[ingest]`: the limits are in range.
fn check_ingest(i: &RawIngest, path: &Path, text: &str) -> Result<(), ConfigError> {
    check_ranges(
        path,
        text,
        &[
            (&i.max_record_kib, "ingest.max_record_kib", 1, 1 << 20),
            (&i.output_cap_kib, "ingest.output_cap_kib", 1, 1 << 16),
            (&i.debounce_ms, "ingest.debounce_ms", 0, 60_000),
        ],
    )?;
    Ok(())
}

/// `[mine]`: the numbers are in range, and `max_length` is at least `min_length`.
fn check_mine(m: &RawMine, path: &Path, text: &str) -> Result<(), ConfigError> {
    check_ranges(
        path,
        text,
        &[
            (&m.min_support, "mine.min_support", 2, 1_000_000),
            (&m.min_occurrences, "mine.min_occurrences", 2, 1_000_000),
            (&m.min_support_percent, "mine.min_support_percent", 0, 100),
            (&m.max_gap, "mine.max_gap", 0, 16),
            (&m.min_length, "mine.min_length", 1, 32),
            (&m.max_length, "mine.max_length", 1, 32),
            (&m.fold_percent, "mine.fold_percent", 50, 100),
            (&m.slow_ms, "mine.slow_ms", 100, 86_400_000),
            (
                &m.after_new_actions,
                "mine.after_new_actions",
                1,
                100_000_000,
            ),
        ],
    )?;
    if let (Some(min), Some(max)) = (&m.min_length, &m.max_length)
        && min.get_ref() > max.get_ref()
    {
        return Err(invalid(
            path,
            text,
            max,
            "mine.max_length",
            format!(
                "{} is below mine.min_length ({}): make max_length at least min_length",
                max.get_ref(),
                min.get_ref()
            ),
        ));
    }
    Ok(())
}

/// `mine.schedule`, `health.schedule`, `sync.schedule`: each is a crontab schedule.
fn check_schedules(raw: &RawConfig, path: &Path, text: &str) -> Result<(), ConfigError> {
    for (schedule, key) in [
        (&raw.mine.schedule, "mine.schedule"),
        (&raw.health.schedule, "health.schedule"),
        (&raw.sync.schedule, "sync.schedule"),
    ] {
        if let Some(schedule) = schedule
            && let Err(err) = crate::schedule::Schedule::parse(schedule.get_ref())
        {
            return Err(invalid(
                path,
                text,
                schedule,
                key,
                format!("{err}; write 5 crontab fields, e.g. \"*/15 * * * *\""),
            ));
        }
    }
    Ok(())
}

/// `[generate]`'s numbers are in range.
fn check_generate_limits(g: &RawGenerate, path: &Path, text: &str) -> Result<(), ConfigError> {
    check_ranges(
        path,
        text,
        &[
            (&g.min_score, "generate.min_score", 0, 100),
            (&g.max_attempts, "generate.max_attempts", 1, 10),
            (&g.max_per_run, "generate.max_per_run", 1, 1000),
        ],
    )?;
    Ok(())
}

/// `events.on_event` names a program.
fn check_events(events: &RawEvents, path: &Path, text: &str) -> Result<(), ConfigError> {
    if let Some(command) = &events.on_event
        && command
            .get_ref()
            .first()
            .is_some_and(|p| p.trim().is_empty())
    {
        return Err(invalid(
            path,
            text,
            command,
            "events.on_event",
            "the program is empty: write it as a list, e.g. [\"logger\", \"-t\", \"toolsmith\"]"
                .to_owned(),
        ));
    }
    Ok(())
}

/// `[mcp]`: the description budget and the request rate are in range.
fn check_mcp(mcp: &RawMcp, path: &Path, text: &str) -> Result<(), ConfigError> {
    check_ranges(
        path,
        text,
        &[
            (
                &mcp.description_budget,
                "mcp.description_budget",
                0,
                10_000_000,
            ),
            (&mcp.requests_per_hour, "mcp.requests_per_hour", 0, 1000),
        ],
    )?;
    Ok(())
}

/// `generate.backend` is one of [`GENERATE_BACKENDS`]; `generate.policy` names a policy
/// file that exists and parses (the sandbox's check, handed in).
fn check_generate_backend(
    g: &RawGenerate,
    checks: &dyn Checks,
    path: &Path,
    text: &str,
) -> Result<(), ConfigError> {
    if let Some(backend) = &g.backend
        && !GENERATE_BACKENDS.contains(&backend.get_ref().as_str())
    {
        return Err(invalid(
            path,
            text,
            backend,
            "generate.backend",
            format!(
                "unknown backend `{}`; use \"template\" (offline) or \"llm\"",
                backend.get_ref()
            ),
        ));
    }
    if let Some(policy) = &g.policy {
        check_policy(path, text, policy, checks)?;
    }
    Ok(())
}

/// `[llm]`: the numbers are in range, the provider known, the URL http(s), the model named,
/// and `api_key_env` an environment variable's name.
fn check_llm(l: &RawLlm, path: &Path, text: &str) -> Result<(), ConfigError> {
    check_ranges(
        path,
        text,
        &[
            (&l.timeout_s, "llm.timeout_s", 1, 3600),
            (&l.max_retries, "llm.max_retries", 0, 10),
            (&l.max_tokens, "llm.max_tokens", 16, 1_000_000),
            (&l.daily_token_budget, "llm.daily_token_budget", 0, u32::MAX),
        ],
    )?;
    if let Some(provider) = &l.provider
        && !LLM_PROVIDERS.contains(&provider.get_ref().as_str())
    {
        return Err(invalid(
            path,
            text,
            provider,
            "llm.provider",
            format!(
                "unknown provider `{}`; use \"openai\" (also for Ollama, vLLM, llama.cpp \
                 server) or \"anthropic\"",
                provider.get_ref()
            ),
        ));
    }
    if let Some(url) = &l.base_url {
        let u = url.get_ref();
        if !(u.starts_with("http://") || u.starts_with("https://"))
            || u.contains(char::is_whitespace)
        {
            return Err(invalid(
                path,
                text,
                url,
                "llm.base_url",
                format!("`{u}` is not an http:// or https:// URL"),
            ));
        }
    }
    if let Some(model) = &l.model
        && model.get_ref().trim().is_empty()
    {
        return Err(invalid(
            path,
            text,
            model,
            "llm.model",
            "is empty: name the model, e.g. \"gpt-4.1\" or \"claude-sonnet-4-5\"".into(),
        ));
    }
    if let Some(var) = &l.api_key_env {
        let name = var.get_ref();
        let mut bytes = name.bytes();
        let ok = bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err(invalid(
                path,
                text,
                var,
                "llm.api_key_env",
                format!(
                    "`{name}` is not an environment variable name; name the variable that holds \
                     the key (the key itself never goes in this file)"
                ),
            ));
        }
    }
    Ok(())
}

/// The `llm` backend needs `llm.model`.
fn check_llm_backend_has_model(
    raw: &RawConfig,
    path: &Path,
    text: &str,
) -> Result<(), ConfigError> {
    if let Some(backend) = &raw.generate.backend
        && backend.get_ref() == "llm"
        && raw.llm.model.is_none()
    {
        return Err(invalid(
            path,
            text,
            backend,
            "generate.backend",
            "\"llm\" needs a model: set llm.model (and llm.provider, llm.base_url for a \
             server other than OpenAI's)"
                .into(),
        ));
    }
    Ok(())
}

/// Each `[[source]]`: a known format (the ingest stage's names, handed in) and a path that is
/// absolute or under `~/`.
fn check_sources(
    sources: &[Spanned<RawSource>],
    checks: &dyn Checks,
    path: &Path,
    text: &str,
) -> Result<(), ConfigError> {
    for source in sources {
        let source = source.get_ref();
        let format = source.format.get_ref();
        let known = checks.format_names();
        if !known.contains(&format.as_str()) {
            return Err(invalid(
                path,
                text,
                &source.format,
                "source.format",
                format!(
                    "unknown format `{format}`; known formats: {}",
                    known.join(", ")
                ),
            ));
        }
        let written = source.path.get_ref();
        if !(written.starts_with('/') || written.starts_with("~/")) {
            return Err(invalid(
                path,
                text,
                &source.path,
                "source.path",
                format!("`{written}` must be absolute or start with ~/"),
            ));
        }
    }
    Ok(())
}

/// `[paths]`: each is absolute.
fn check_paths(p: &RawPaths, path: &Path, text: &str) -> Result<(), ConfigError> {
    for (value, key) in [
        (&p.state, "paths.state"),
        (&p.runtime, "paths.runtime"),
        (&p.registry, "paths.registry"),
    ] {
        if let Some(value) = value
            && !value.get_ref().is_absolute()
        {
            return Err(invalid(
                path,
                text,
                value,
                key,
                format!(
                    "`{}` is a relative path: write an absolute path",
                    value.get_ref().display()
                ),
            ));
        }
    }
    Ok(())
}

/// `generate.policy`: an absolute path to a policy file that exists and whose `[validate]` and
/// `[sandbox]` tables are usable.
/// Each `(value, key, min, max)`: a value written in the file must lie in `min..=max`; the first
/// that does not is the error.
fn check_ranges(
    path: &Path,
    text: &str,
    ranges: &[(&Option<Spanned<u32>>, &str, u32, u32)],
) -> Result<(), ConfigError> {
    for &(value, key, min, max) in ranges {
        if let Some(value) = value {
            let v = *value.get_ref();
            if !(min..=max).contains(&v) {
                return Err(invalid(
                    path,
                    text,
                    value,
                    key,
                    format!("{v} is out of range: use a value from {min} to {max}"),
                ));
            }
        }
    }
    Ok(())
}

fn check_policy(
    path: &Path,
    text: &str,
    policy: &Spanned<PathBuf>,
    checks: &dyn Checks,
) -> Result<(), ConfigError> {
    let file = policy.get_ref();
    let fail = |message: String| invalid(path, text, policy, "generate.policy", message);
    if !file.is_absolute() {
        return Err(fail(format!(
            "`{}` is a relative path: write the absolute path of a policy file",
            file.display()
        )));
    }
    let policy_text = std::fs::read_to_string(file).map_err(|e| {
        fail(format!(
            "cannot read the policy file `{}`: {e}; write the path of an existing policy file \
             (policies/default.toml in the source shows the format), or remove the key to use \
             the built-in policy",
            file.display()
        ))
    })?;
    let name = file.display().to_string();
    checks
        .policy(&policy_text, &name)
        .map_err(|e| fail(format!("the policy file is not usable: {e}")))
}

fn resolve(
    request: &ConfigRequest,
    env: &dyn Env,
    file: Option<ConfigFile>,
    raw: Option<(RawConfig, PathBuf, String)>,
) -> Result<Config, ConfigError> {
    let (raw, path, text) = raw.unwrap_or_default();
    let from_file = |span: std::ops::Range<usize>| Origin::File {
        path: path.clone(),
        line: line_column(&text, span.start).0,
    };
    fn pick<T: Clone>(
        value: &Option<Spanned<T>>,
        default: T,
        from_file: &dyn Fn(std::ops::Range<usize>) -> Origin,
    ) -> Setting<T> {
        match value {
            Some(v) => Setting {
                value: v.get_ref().clone(),
                origin: from_file(v.span()),
            },
            None => Setting::default(default),
        }
    }
    let d = &raw.daemon;
    let daemon = DaemonSettings {
        log_level: pick(&d.log_level, "info".to_owned(), &from_file),
        max_connections: pick(&d.max_connections, 64, &from_file),
        max_subscriptions: pick(&d.max_subscriptions, 16, &from_file),
        max_request_kib: pick(&d.max_request_kib, 1024, &from_file),
        shutdown_grace_s: pick(&d.shutdown_grace_s, 10, &from_file),
        idle_timeout_s: pick(&d.idle_timeout_s, 60, &from_file),
        partial_line_timeout_s: pick(&d.partial_line_timeout_s, 10, &from_file),
    };
    let paths = resolve_paths(request, env, &raw.paths, &from_file)?;
    let i = &raw.ingest;
    let ingest = IngestSettings {
        max_record_kib: pick(&i.max_record_kib, 16 * 1024, &from_file),
        output_cap_kib: pick(&i.output_cap_kib, 16, &from_file),
        debounce_ms: pick(&i.debounce_ms, 100, &from_file),
    };
    let m = &raw.mine;
    let mine = MineSettings {
        min_support: pick(&m.min_support, 3, &from_file),
        min_occurrences: pick(&m.min_occurrences, 4, &from_file),
        min_support_percent: pick(&m.min_support_percent, 1, &from_file),
        max_gap: pick(&m.max_gap, 1, &from_file),
        min_length: pick(&m.min_length, 2, &from_file),
        max_length: pick(&m.max_length, 8, &from_file),
        fold_percent: pick(&m.fold_percent, 90, &from_file),
        slow_ms: pick(&m.slow_ms, 30_000, &from_file),
        schedule: pick(&m.schedule, "*/15 * * * *".to_owned(), &from_file),
        after_new_actions: pick(&m.after_new_actions, 500, &from_file),
        shell_definitions: pick(&m.shell_definitions, true, &from_file),
    };
    let g = &raw.generate;
    let generate = GenerateSettings {
        backend: pick(&g.backend, "template".to_owned(), &from_file),
        min_score: pick(&g.min_score, 40, &from_file),
        max_attempts: pick(&g.max_attempts, 3, &from_file),
        max_per_run: pick(&g.max_per_run, 10, &from_file),
        policy: match &g.policy {
            Some(v) => Setting {
                value: Some(v.get_ref().clone()),
                origin: from_file(v.span()),
            },
            None => Setting::default(None),
        },
    };
    let l = &raw.llm;
    let provider = pick(&l.provider, "openai".to_owned(), &from_file);
    let (default_url, default_key) = match provider.value.as_str() {
        "anthropic" => ("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
        _ => ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    };
    let derived = |value: &str| Setting {
        value: value.to_owned(),
        origin: if l.provider.is_some() {
            Origin::Derived {
                from: "llm.provider",
            }
        } else {
            Origin::Default
        },
    };
    let llm = LlmConfig {
        base_url: l.base_url.as_ref().map_or_else(
            || derived(default_url),
            |v| Setting {
                value: v.get_ref().clone(),
                origin: from_file(v.span()),
            },
        ),
        api_key_env: l.api_key_env.as_ref().map_or_else(
            || derived(default_key),
            |v| Setting {
                value: v.get_ref().clone(),
                origin: from_file(v.span()),
            },
        ),
        provider,
        model: pick(&l.model, String::new(), &from_file),
        timeout_s: pick(&l.timeout_s, 120, &from_file),
        max_retries: pick(&l.max_retries, 4, &from_file),
        max_tokens: pick(&l.max_tokens, 8192, &from_file),
        daily_token_budget: pick(&l.daily_token_budget, 2_000_000, &from_file),
    };
    let mcp = McpSettings {
        description_budget: pick(&raw.mcp.description_budget, 8000, &from_file),
        requests_per_hour: pick(&raw.mcp.requests_per_hour, 10, &from_file),
    };
    let events = EventSettings {
        on_event: pick(&raw.events.on_event, Vec::new(), &from_file),
        on_event_kinds: pick(
            &raw.events.on_event_kinds,
            vec!["candidate.proposed".to_owned(), "tool.".to_owned()],
            &from_file,
        ),
    };
    let health = HealthSettings {
        schedule: pick(&raw.health.schedule, "0 */4 * * *".to_owned(), &from_file),
    };
    let sync = SyncSettings {
        schedule: pick(&raw.sync.schedule, "*/30 * * * *".to_owned(), &from_file),
    };
    let sandbox = SandboxSettings {
        path: match &raw.sandbox.path {
            Some(v) => Setting {
                value: Some(v.get_ref().clone()),
                origin: from_file(v.span()),
            },
            None => Setting::default(None),
        },
    };
    let sources = raw
        .sources
        .iter()
        .map(|spanned| {
            let source = spanned.get_ref();
            SourceSetting {
                name: source
                    .name
                    .as_ref()
                    .map_or_else(|| source.format.get_ref().clone(), |n| n.get_ref().clone()),
                format: source.format.get_ref().clone(),
                path: source.path.get_ref().clone(),
                origin: from_file(spanned.span()),
            }
        })
        .collect();
    Ok(Config {
        file,
        daemon,
        paths,
        ingest,
        mine,
        generate,
        llm,
        mcp,
        events,
        health,
        sync,
        sandbox,
        review: ReviewSettings {
            approve_specs: pick(&raw.review.approve_specs, false, &from_file),
            notify: pick(&raw.review.notify, false, &from_file),
        },
        sources,
        config_dirs: config_dirs(env).into_iter().map(|(dir, _)| dir).collect(),
    })
}

fn env_dir(env: &dyn Env, var: &'static str, suffix: &str) -> Option<Setting<PathBuf>> {
    // systemd's *_DIRECTORY variables may list several directories; ours is the first.
    let value = env.var(var)?;
    let first = value.split(':').next().filter(|s| !s.is_empty())?;
    Some(Setting {
        value: PathBuf::from(first).join(suffix),
        origin: Origin::Env { var },
    })
}

fn resolve_paths(
    request: &ConfigRequest,
    env: &dyn Env,
    raw: &RawPaths,
    from_file: &dyn Fn(std::ops::Range<usize>) -> Origin,
) -> Result<PathSettings, ConfigError> {
    let configured = |value: &Option<Spanned<PathBuf>>| {
        value.as_ref().map(|v| Setting {
            value: v.get_ref().clone(),
            origin: from_file(v.span()),
        })
    };
    let home = |suffix: &str| {
        env.var("HOME").map(|h| Setting {
            value: PathBuf::from(h).join(suffix),
            origin: Origin::Env { var: "HOME" },
        })
    };

    let state_flag = request.state_dir.as_ref().map(|dir| Setting {
        value: dir.clone(),
        origin: Origin::Flag { flag: "--state" },
    });
    let state = state_flag
        .clone()
        .or_else(|| configured(&raw.state))
        .or_else(|| env_dir(env, "STATE_DIRECTORY", ""))
        .or_else(|| env_dir(env, "XDG_STATE_HOME", "toolsmith"))
        .or_else(|| home(".local/state/toolsmith"))
        .ok_or(ConfigError::NoDirectory {
            what: "state",
            tried: "$STATE_DIRECTORY, $XDG_STATE_HOME, $HOME",
        })?;
    let under_state = |suffix: &str, from: &'static str| Setting {
        value: state.value.join(suffix),
        origin: Origin::Derived { from },
    };

    // With an explicit --state, the socket goes beside the state so that several daemons (tests,
    // experiments) on different state directories never meet on one socket.
    let runtime = configured(&raw.runtime)
        .or_else(|| env_dir(env, "RUNTIME_DIRECTORY", ""))
        .or_else(|| state_flag.as_ref().map(|_| under_state("run", "--state")))
        .or_else(|| env_dir(env, "XDG_RUNTIME_DIR", "toolsmith"))
        .or_else(|| {
            env.is_root().then(|| Setting {
                value: PathBuf::from("/run/toolsmith"),
                origin: Origin::Default,
            })
        })
        .unwrap_or_else(|| under_state("run", "paths.state"));

    // An explicit --state is a world of its own (a scratch run, a test, an experiment): its
    // registry is beside it, never the user's real one found through $XDG_DATA_HOME or $HOME.
    let registry = configured(&raw.registry)
        .or_else(|| {
            state_flag
                .as_ref()
                .map(|_| under_state("registry", "--state"))
        })
        .or_else(|| env_dir(env, "XDG_DATA_HOME", "toolsmith/registry"))
        .or_else(|| env_dir(env, "STATE_DIRECTORY", "registry"))
        .or_else(|| home(".local/share/toolsmith/registry"))
        .unwrap_or_else(|| under_state("registry", "paths.state"));

    Ok(PathSettings {
        state,
        runtime,
        registry,
    })
}

/// The commented default configuration, written by `toolsmith install` and shown in the README.
pub const DEFAULT_CONFIG_TOML: &str = r#"# toolsmith configuration. Every key is optional; the values shown are the defaults.
# Check a file with `toolsmith config check FILE`; see the effective values with `toolsmith config show`.

[daemon]
# Log filter: error, warn, info, debug, trace, or directives such as "toolsmith=debug".
# --log-level and RUST_LOG take precedence. Reloaded on SIGHUP.
# log_level = "info"

# Control connections open at once; further clients get a "busy" error. Reloaded on SIGHUP.
# max_connections = 64

# Connections subscribed to events (`toolsmith watch`) at once, beside max_connections: a
# subscription gives its slot back to requests, so subscribers never lock out `status` or `stop`.
# A subscriber over this limit gets an error. Reloaded on SIGHUP.
# max_subscriptions = 16

# Largest control request accepted, in KiB. Reloaded on SIGHUP.
# max_request_kib = 1024

# Seconds a shutdown waits for in-flight requests.
# shutdown_grace_s = 10

# Seconds a control connection may stay idle (no request under way) before it is closed, so
# forgotten connections cannot take every slot. Event subscriptions are not idle. Reloaded on
# SIGHUP.
# idle_timeout_s = 60

# Seconds a request line may take to arrive once begun; a half-sent line is dropped with an
# error and its connection closed. Reloaded on SIGHUP.
# partial_line_timeout_s = 10

[paths]
# Private state (SQLite store, lock, staging). Default: $STATE_DIRECTORY, else
# $XDG_STATE_HOME/toolsmith, else ~/.local/state/toolsmith.
# state = "/var/lib/toolsmith"

# Control socket directory. Default: $RUNTIME_DIRECTORY, else $XDG_RUNTIME_DIR/toolsmith,
# else /run/toolsmith for root.
# runtime = "/run/toolsmith"

# The git registry of approved tools. Default: <state>/registry with --state, else
# $XDG_DATA_HOME/toolsmith/registry, else ~/.local/share/toolsmith/registry.
# registry = "/home/me/.local/share/toolsmith/registry"

[ingest]
# Records (log lines, history entries) larger than this many KiB are skipped and counted.
# max_record_kib = 16384

# Tool output is stored as an excerpt of this many KiB (head and tail), after redaction.
# output_cap_kib = 16

# After a log file changes, wait this long (ms) for more changes before reading it.
# debounce_ms = 100

[mine]
# Sessions a pattern must be seen in before it is reported: at least min_support, and at least
# min_support_percent of all sessions when that is more. A sub-agent's session counts with its
# parent's.
# min_support = 3
# min_support_percent = 1

# ...unless it occurs at least min_occurrences times (occurrences that do not overlap; never
# fewer than the sessions needed): a habit repeated often in few sessions (two at least; one for
# an error fixed the same way each time).
# min_occurrences = 4

# Other actions allowed between two consecutive steps of a repeated sequence.
# max_gap = 1

# Fewest and most steps of a repeated sequence.
# min_length = 2
# max_length = 8

# A pattern is dropped when a longer one keeps at least this share (percent) of its support,
# and, when patterns are the same habit (the occurrences of one mostly lie inside the other's),
# a pattern stands for the habit in place of a better-ranked one when that one has fewer than
# this share of its occurrences. Only one pattern per habit is proposed.
# fold_percent = 90

# Actions whose median duration reaches this many milliseconds are slow operations.
# slow_ms = 30000

# When the daemon mines (5 crontab fields, local time), and after how many new actions.
# schedule = "*/15 * * * *"
# after_new_actions = 500

# Read your shell's aliases and functions (~/.bashrc, ~/.zshrc and oh-my-zsh's plugins, fish's
# config, Claude Code's shell snapshots; read as text, never run), so `gia x` is the `git add x`
# it ran and an alias to `cd` or an editor is a step no habit crosses.
# shell_definitions = true

[generate]
# What writes a candidate's code: "template" (offline: POSIX sh from the mined steps) or "llm"
# (the model in [llm]; mined sequences and recoveries fall back to templates when it fails).
# backend = "template"

# After each mining pass, new patterns scoring at least this (0-100) become candidates, at most
# max_per_run of them per pass.
# min_score = 40
# max_per_run = 10

# Attempts a model gets to pass validation, each told what failed before.
# max_attempts = 3

# The policy file validation and the sandbox follow: capability domains, forbidden commands and
# imports ([validate]), required sandbox layers and maximum limits ([sandbox]). It must exist and
# parse. Default: the built-in policies/default.toml.
# policy = "/etc/toolsmith/policy.toml"

[llm]
# The API spoken: "openai" (OpenAI, Ollama, vLLM, llama.cpp server) or "anthropic".
# provider = "openai"
# Default: the provider's own, https://api.openai.com/v1 or https://api.anthropic.com.
# base_url = "http://localhost:11434/v1"
# model = "gpt-4.1"

# The key is never written here: it is read from this environment variable, or from the file
# llm-api-key in $CREDENTIALS_DIRECTORY (systemd's LoadCredential=). Default: OPENAI_API_KEY
# or ANTHROPIC_API_KEY.
# api_key_env = "OPENAI_API_KEY"

# Seconds one request may take, and retries of timeouts, 429s and 5xx (with backoff).
# timeout_s = 120
# max_retries = 4

# The longest reply asked for, in tokens. A reply cut off at it is not used.
# max_tokens = 8192

# Tokens the model may spend a day (0: no limit).
# daily_token_budget = 2000000

[mcp]
# `toolsmith mcp` lists the most used and most recently approved tools first, with as many
# whole descriptions as fit in this many characters; the others are found and run through its
# two fixed tools, toolsmith_search and toolsmith_run.
# description_budget = 8000

# Tools one MCP session may ask for with toolsmith_request in an hour (0: none). Each request
# becomes a candidate that a person reviews; nothing it asks for runs outside the sandbox.
# requests_per_hour = 10

[events]
# A command run for each event of the chosen kinds, with the event as JSON on its stdin (and its
# kind in $TOOLSMITH_EVENT); at most 4 at once, each killed after 30 s. `toolsmith watch` shows
# the events as they happen.
# on_event = ["sh", "-c", "notify-send toolsmith \"$TOOLSMITH_EVENT\""]
# on_event_kinds = ["candidate.proposed", "tool."]

[health]
# When the daemon checks the tools in use (5 crontab fields, local time): scores each, rolls back
# a new version that fails clearly more than the one before, generates repairs of failing tools,
# and proposes deprecating unused tools and merging duplicates. What counts as failing, which
# errors are healed and whether rollback is automatic are in the policy file's [health] table.
# schedule = "0 */4 * * *"

[sync]
# When the daemon syncs the registry with its git remote, if it has one (`toolsmith sync
# --remote URL` sets it).
# schedule = "*/30 * * * *"

[sandbox]
# Your shell's PATH: the programs a tool requires are looked up on it as your shell would
# (`toolsmith install --user` writes the PATH of the shell it runs in here). A program found in
# one of your own toolchains (rustup, pyenv, a venv, nvm, ~/.local/bin) is bound read-only into
# the sandbox when the policy's [grants] toolchains allows that kind; `toolsmith doctor` shows
# what is found. Without it: the daemon's own PATH, which is minimal under systemd.
# path = "/home/you/.cargo/bin:/usr/local/bin:/usr/bin:/bin"

[review]
# Whether a requested tool (an agent's toolsmith_request, or `toolsmith new`) waits with its
# spec until you accept it (`toolsmith approve-spec ID`, or the page of `toolsmith ui`) before
# any code is generated; `toolsmith reject-spec ID --reason …` drops it.
# approve_specs = false
# A desktop notification when a proposal awaits review, once per proposal, sent by the daemon
# over your session bus (with `notify-send`, else `gdbus`, whichever is installed) when there is
# one. (The line at an agent session's start is `toolsmith install --agents`'s hook.)
# notify = false

# Log sources. Without any [[source]] table, the standard locations that exist are read:
# ~/.claude/projects (claude-code), ~/.codex/sessions (codex), ~/.gemini/tmp/*/chats/ (gemini-cli,
# and gemini-cli-json for sessions before Gemini CLI 0.39; $GEMINI_CLI_HOME/.gemini/tmp when
# set), ~/.bash_history (bash), ~/.zsh_history (zsh), ~/.local/share/fish/fish_history (fish).
# toolsmith's own log of tool runs (<state>/runs, native) is always read.
# Formats: claude-code, codex, native, swe-agent, openhands, openhands-resolver, aider,
# gemini-cli, gemini-cli-json, zsh, fish, bash. `path` is a file, a directory (read recursively) or a glob.
#
# [[source]]
# name = "claude"
# format = "claude-code"
# path = "~/.claude/projects"
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::checks::STAGES;
    use std::collections::HashMap;

    struct FakeEnv {
        vars: HashMap<&'static str, String>,
        root: bool,
    }

    impl Env for FakeEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn is_root(&self) -> bool {
            self.root
        }
    }

    fn env(vars: &[(&'static str, &str)]) -> FakeEnv {
        FakeEnv {
            vars: vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
            root: false,
        }
    }

    fn load_text(text: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().map_err(|e| ConfigError::Read {
            path: PathBuf::new(),
            named_by: "test",
            source: e,
        })?;
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).map_err(|e| ConfigError::Read {
            path: path.clone(),
            named_by: "test",
            source: e,
        })?;
        ConfigRequest {
            config_file: Some(path),
            state_dir: None,
        }
        .load_with(&STAGES, &env(&[("HOME", "/home/u")]))
    }

    #[test]
    fn no_file_means_defaults_under_xdg() {
        let config = ConfigRequest::default()
            .load_with(
                &STAGES,
                &env(&[
                    ("HOME", "/home/u"),
                    ("XDG_CONFIG_HOME", "/nonexistent/config"),
                    ("XDG_RUNTIME_DIR", "/run/user/1000"),
                ]),
            )
            .expect("defaults load");
        assert_eq!(config.file, None);
        assert_eq!(config.daemon.max_connections.value, 64);
        assert_eq!(config.daemon.max_connections.origin, Origin::Default);
        assert_eq!(config.daemon.max_subscriptions.value, 16);
        assert_eq!(
            config.paths.state.value,
            PathBuf::from("/home/u/.local/state/toolsmith")
        );
        assert_eq!(
            config.socket_path(),
            PathBuf::from("/run/user/1000/toolsmith/control.sock")
        );
        assert_eq!(
            config.paths.registry.value,
            PathBuf::from("/home/u/.local/share/toolsmith/registry")
        );
    }

    #[test]
    fn systemd_directories_win_over_xdg() {
        let config = ConfigRequest::default()
            .load_with(
                &STAGES,
                &env(&[
                    ("HOME", "/root"),
                    ("XDG_CONFIG_HOME", "/nonexistent"),
                    ("STATE_DIRECTORY", "/var/lib/toolsmith:/var/lib/other"),
                    ("RUNTIME_DIRECTORY", "/run/toolsmith"),
                    ("XDG_STATE_HOME", "/xdg/state"),
                    ("XDG_RUNTIME_DIR", "/run/user/0"),
                ]),
            )
            .expect("load");
        assert_eq!(
            config.paths.state.value,
            PathBuf::from("/var/lib/toolsmith")
        );
        assert_eq!(
            config.paths.state.origin,
            Origin::Env {
                var: "STATE_DIRECTORY"
            }
        );
        assert_eq!(config.paths.runtime.value, PathBuf::from("/run/toolsmith"));
        // A system service has no XDG data directory: the registry goes beside the state.
        assert_eq!(
            config.paths.registry.value,
            PathBuf::from("/var/lib/toolsmith/registry")
        );
    }

    #[test]
    fn state_flag_puts_the_socket_beside_the_state() {
        let config = ConfigRequest {
            config_file: None,
            state_dir: Some(PathBuf::from("/tmp/s")),
        }
        .load_with(
            &STAGES,
            &env(&[
                ("HOME", "/home/u"),
                ("XDG_CONFIG_HOME", "/nonexistent"),
                ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ]),
        )
        .expect("load");
        assert_eq!(
            config.socket_path(),
            PathBuf::from("/tmp/s/run/control.sock")
        );
        assert_eq!(config.store_path(), PathBuf::from("/tmp/s/state.db"));
    }

    #[test]
    fn state_flag_puts_the_registry_beside_the_state() {
        let request = |config_file: Option<PathBuf>| ConfigRequest {
            config_file,
            state_dir: Some(PathBuf::from("/tmp/s")),
        };
        let vars = env(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/nonexistent"),
            ("XDG_DATA_HOME", "/home/u/.data"),
            ("STATE_DIRECTORY", "/var/lib/toolsmith"),
        ]);
        // Never the user's real registry: a scratch run must not write into it.
        let config = request(None).load_with(&STAGES, &vars).expect("load");
        assert_eq!(
            config.paths.registry.value,
            PathBuf::from("/tmp/s/registry")
        );
        assert_eq!(
            config.paths.registry.origin,
            Origin::Derived { from: "--state" }
        );
        let shown = config
            .entries()
            .into_iter()
            .find(|(key, _, _)| *key == "paths.registry")
            .map(|(_, value, origin)| format!("{value} # {origin}"));
        assert_eq!(
            shown.as_deref(),
            Some("\"/tmp/s/registry\" # derived from --state")
        );
        // A registry the configuration names still wins.
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "[paths]\nregistry = \"/srv/registry\"\n").expect("write");
        let config = request(Some(file)).load_with(&STAGES, &vars).expect("load");
        assert_eq!(config.paths.registry.value, PathBuf::from("/srv/registry"));
        assert!(
            matches!(config.paths.registry.origin, Origin::File { line: 2, .. }),
            "{:?}",
            config.paths.registry.origin
        );
    }

    #[test]
    fn values_from_the_file_carry_their_line() {
        let config = load_text("# comment\n[daemon]\nmax_connections = 8\nlog_level = \"debug\"\n")
            .expect("valid file");
        assert_eq!(config.daemon.max_connections.value, 8);
        match &config.daemon.max_connections.origin {
            Origin::File { line, .. } => assert_eq!(*line, 3),
            other => panic!("unexpected origin {other:?}"),
        }
        assert_eq!(config.daemon.log_level.value, "debug");
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let err = load_text("[daemon]\nmax_connections = 8\nmax_conections = 9\n")
            .expect_err("unknown key refused");
        let text = err.to_string();
        assert!(text.contains("config.toml:3:1"), "{text}");
        assert!(text.contains("unknown field `max_conections`"), "{text}");
        assert!(text.contains("key `daemon.max_conections`"), "{text}");
    }

    #[test]
    fn spec_approval_is_a_review_preference_off_by_default() {
        let off = load_text("").expect("defaults");
        assert!(!off.review.approve_specs.value);
        let on = load_text("[review]\napprove_specs = true\n").expect("read");
        assert!(on.review.approve_specs.value);
        assert!(matches!(
            on.review.approve_specs.origin,
            Origin::File { line: 2, .. }
        ));
        let err = load_text("[review]\napprove_spec = true\n").expect_err("unknown key");
        assert!(err.to_string().contains("review.approve_spec"), "{err}");
    }

    #[test]
    fn unknown_table_is_refused() {
        let err = load_text("[deamon]\n").expect_err("unknown table refused");
        assert!(err.to_string().contains(":1:"), "{err}");
        assert!(err.to_string().contains("deamon"), "{err}");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let err = load_text("[daemon]\n\nmax_connections = \"lots\"\n").expect_err("refused");
        let text = err.to_string();
        assert!(text.contains(":3:"), "{text}");
        assert!(text.contains("daemon.max_connections"), "{text}");
    }

    #[test]
    fn out_of_range_and_bad_filter_and_relative_path() {
        let err = load_text("[daemon]\nmax_connections = 0\n").expect_err("refused");
        assert!(err.to_string().contains("from 1 to 4096"), "{err}");
        let err = load_text("[daemon]\nlog_level = \"info,,=[\"\n").expect_err("refused");
        assert!(err.to_string().contains("daemon.log_level"), "{err}");
        let err = load_text("[paths]\nstate = \"relative/dir\"\n").expect_err("refused");
        assert!(err.to_string().contains("absolute path"), "{err}");
        assert!(err.to_string().contains(":2:"), "{err}");
    }

    #[test]
    fn review_notify_is_off_unless_the_person_turns_it_on() {
        assert!(!load_text("").expect("valid").review.notify.value);
        let config = load_text("[review]\nnotify = true\n").expect("valid");
        assert!(config.review.notify.value);
        let err = load_text("[review]\nnotify = \"yes\"\n").expect_err("refused");
        assert!(err.to_string().contains("review.notify"), "{err}");
        let err = load_text("[review]\nnotfy = true\n").expect_err("refused");
        assert!(err.to_string().contains("notfy"), "{err}");
    }

    #[test]
    fn on_event_is_a_program_with_arguments() {
        let config = load_text(
            "[events]\non_event = [\"notify-send\", \"toolsmith\"]\non_event_kinds = [\"tool.\"]\n",
        )
        .expect("valid");
        assert_eq!(config.events.on_event.value, ["notify-send", "toolsmith"]);
        assert_eq!(config.events.on_event_kinds.value, ["tool."]);
        let err = load_text("[events]\non_event = [\" \"]\n").expect_err("refused");
        assert!(err.to_string().contains("events.on_event"), "{err}");
        assert!(err.to_string().contains(":2:"), "{err}");
        let err =
            load_text("[events]\non_event = \"notify-send toolsmith\"\n").expect_err("refused");
        assert!(err.to_string().contains("events.on_event"), "{err}");
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        let err = ConfigRequest {
            config_file: Some(PathBuf::from("/nonexistent/toolsmith.toml")),
            state_dir: None,
        }
        .load_with(&STAGES, &env(&[("HOME", "/h")]))
        .expect_err("missing explicit file refused");
        assert!(err.to_string().contains("--config"), "{err}");
    }

    #[test]
    fn default_config_text_is_valid_and_means_defaults() {
        let config = load_text(DEFAULT_CONFIG_TOML).expect("shipped default config is valid");
        assert!(
            config
                .entries()
                .iter()
                .all(|(_, _, origin)| !matches!(origin, Origin::File { .. }))
        );
    }

    #[test]
    fn generate_and_llm_tables_are_read_and_checked() {
        let config = load_text(
            "[generate]\nbackend = \"llm\"\nmin_score = 55\n\n[llm]\nprovider = \"anthropic\"\n\
             model = \"m\"\n",
        )
        .expect("valid");
        assert_eq!(config.generate.backend.value, "llm");
        assert_eq!(config.generate.min_score.value, 55);
        assert_eq!(config.generate.max_attempts.value, 3);
        assert_eq!(config.llm.base_url.value, "https://api.anthropic.com");
        assert_eq!(
            config.llm.base_url.origin,
            Origin::Derived {
                from: "llm.provider"
            }
        );
        assert_eq!(config.llm.api_key_env.value, "ANTHROPIC_API_KEY");
        let defaults = load_text("").expect("defaults");
        assert_eq!(defaults.generate.backend.value, "template");
        assert_eq!(defaults.llm.base_url.origin, Origin::Default);
        for (text, expect) in [
            ("[generate]\nbackend = \"magic\"\n", "generate.backend"),
            ("[generate]\nbackend = \"llm\"\n", "llm.model"),
            ("[generate]\nmax_attempts = 0\n", "from 1 to 10"),
            ("[llm]\nbase_url = \"ftp://x\"\n", "llm.base_url"),
            (
                "[llm]\napi_key_env = \"sk-123 x\"\n",
                "never goes in this file",
            ),
            ("[llm]\nprovider = \"gemini\"\n", "llm.provider"),
            ("[llm]\napi_key = \"sk-123\"\n", "unknown field `api_key`"),
        ] {
            let err = load_text(text).expect_err(text).to_string();
            assert!(err.contains(expect), "{text}: {err}");
            assert!(err.contains("config.toml:"), "{text}: {err}");
        }
    }

    #[test]
    fn generate_policy_names_a_policy_file_that_exists_and_parses() {
        let defaults = load_text("").expect("defaults");
        assert_eq!(defaults.generate.policy.value, None);
        assert!(
            defaults
                .entries()
                .iter()
                .any(|(k, v, o)| *k == "generate.policy"
                    && v.as_str() == Some("")
                    && **o == Origin::Default)
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("policy.toml");
        std::fs::write(&good, crate::validate::run::DEFAULT_POLICY).expect("write");
        let config = load_text(&format!(
            "[generate]\nmin_score = 50\npolicy = \"{}\"\n",
            good.display()
        ))
        .expect("valid");
        assert_eq!(
            config.generate.policy.value.as_deref(),
            Some(good.as_path())
        );
        assert!(matches!(
            config.generate.policy.origin,
            Origin::File { line: 3, .. }
        ));
        let broken = dir.path().join("broken.toml");
        std::fs::write(&broken, "[sandbox]\nrequire = [\"magic\"]\n").expect("write");
        let missing = dir.path().join("missing.toml");
        for (file, expect) in [
            (missing.display().to_string(), "cannot read the policy file"),
            (broken.display().to_string(), "not usable"),
            ("relative.toml".to_owned(), "relative path"),
        ] {
            let err = load_text(&format!("[generate]\n\npolicy = \"{file}\"\n"))
                .expect_err(&file)
                .to_string();
            assert!(err.contains(expect), "{file}: {err}");
            assert!(err.contains("config.toml:3:"), "{file}: {err}");
            assert!(err.contains("generate.policy"), "{file}: {err}");
        }
    }

    /// Loads `text`, which must be refused, and checks that the error names `key`, says
    /// `what`, and points into the file.
    fn refused_naming(text: &str, key: &str, what: &str) {
        let err = load_text(text).expect_err(text).to_string();
        assert!(err.contains(key), "{text}: the error names no {key}: {err}");
        assert!(err.contains(what), "{text}: {err}");
        assert!(err.contains("config.toml:"), "{text}: {err}");
    }

    #[test]
    fn daemon_section_checks() {
        refused_naming(
            "[daemon]\nlog_level = \"=[\"\n",
            "daemon.log_level",
            "log filter",
        );
        refused_naming(
            "[daemon]\nmax_request_kib = 0\n",
            "daemon.max_request_kib",
            "from 1",
        );
        refused_naming(
            "[daemon]\nshutdown_grace_s = 3601\n",
            "daemon.shutdown_grace_s",
            "3600",
        );
        refused_naming(
            "[daemon]\nmax_subscriptions = 0\n",
            "daemon.max_subscriptions",
            "from 1",
        );
        refused_naming(
            "[daemon]\nidle_timeout_s = 0\n",
            "daemon.idle_timeout_s",
            "from 1",
        );
        refused_naming(
            "[daemon]\npartial_line_timeout_s = 0\n",
            "daemon.partial_line_timeout_s",
            "from 1",
        );
    }

    #[test]
    fn ingest_section_checks() {
        refused_naming(
            "[ingest]\nmax_record_kib = 0\n",
            "ingest.max_record_kib",
            "from 1",
        );
        refused_naming(
            "[ingest]\noutput_cap_kib = 0\n",
            "ingest.output_cap_kib",
            "from 1",
        );
        refused_naming(
            "[ingest]\ndebounce_ms = 60001\n",
            "ingest.debounce_ms",
            "60000",
        );
    }

    #[test]
    fn mine_section_checks() {
        refused_naming("[mine]\nmin_support = 1\n", "mine.min_support", "from 2");
        refused_naming(
            "[mine]\nmin_support_percent = 101\n",
            "mine.min_support_percent",
            "100",
        );
        refused_naming("[mine]\nmax_gap = 17\n", "mine.max_gap", "16");
        refused_naming(
            "[mine]\nfold_percent = 49\n",
            "mine.fold_percent",
            "from 50",
        );
        refused_naming("[mine]\nslow_ms = 99\n", "mine.slow_ms", "from 100");
        refused_naming(
            "[mine]\nafter_new_actions = 0\n",
            "mine.after_new_actions",
            "from 1",
        );
        refused_naming(
            "[mine]\nmin_length = 4\nmax_length = 3\n",
            "mine.max_length",
            "below mine.min_length (4)",
        );
        load_text("[mine]\nmin_length = 3\nmax_length = 3\n").expect("equal lengths");
    }

    #[test]
    fn schedules_are_crontab_schedules() {
        for table in ["mine", "health", "sync"] {
            refused_naming(
                &format!("[{table}]\nschedule = \"every hour\"\n"),
                &format!("{table}.schedule"),
                "5 crontab fields",
            );
            load_text(&format!("[{table}]\nschedule = \"*/15 * * * *\"\n")).expect(table);
        }
    }

    #[test]
    fn generate_section_checks() {
        refused_naming("[generate]\nmin_score = 101\n", "generate.min_score", "100");
        refused_naming(
            "[generate]\nmax_per_run = 0\n",
            "generate.max_per_run",
            "from 1",
        );
        refused_naming(
            "[generate]\nbackend = \"magic\"\n",
            "generate.backend",
            "unknown backend",
        );
        refused_naming(
            "[generate]\nbackend = \"llm\"\n",
            "generate.backend",
            "set llm.model",
        );
    }

    #[test]
    fn mcp_and_llm_section_checks() {
        refused_naming(
            "[mcp]\ndescription_budget = 10000001\n",
            "mcp.description_budget",
            "10000000",
        );
        refused_naming("[llm]\ntimeout_s = 0\n", "llm.timeout_s", "from 1");
        refused_naming("[llm]\nmax_retries = 11\n", "llm.max_retries", "10");
        refused_naming(
            "[llm]\nbase_url = \"https://a b\"\n",
            "llm.base_url",
            "not an http",
        );
        refused_naming("[llm]\nmodel = \" \"\n", "llm.model", "is empty");
        refused_naming(
            "[llm]\napi_key_env = \"1KEY\"\n",
            "llm.api_key_env",
            "variable name",
        );
        load_text("[llm]\napi_key_env = \"_MY_KEY2\"\n").expect("a variable name");
    }

    #[test]
    fn source_and_paths_section_checks() {
        let format = STAGES.format_names()[0];
        refused_naming(
            "[[source]]\nformat = \"nope\"\npath = \"/var/log/x\"\n",
            "source.format",
            &format!("known formats: {format}"),
        );
        refused_naming(
            &format!("[[source]]\nformat = \"{format}\"\npath = \"logs/x\"\n"),
            "source.path",
            "absolute or start with ~/",
        );
        load_text(&format!(
            "[[source]]\nformat = \"{format}\"\npath = \"~/logs\"\n"
        ))
        .expect("a path under ~/");
        for key in ["state", "runtime", "registry"] {
            refused_naming(
                &format!("[paths]\n{key} = \"rel\"\n"),
                &format!("paths.{key}"),
                "relative path",
            );
        }
    }

    #[test]
    fn of_several_errors_the_earlier_section_is_reported() {
        let err = load_text("[paths]\nstate = \"rel\"\n\n[daemon]\nmax_connections = 0\n")
            .expect_err("refused")
            .to_string();
        assert!(err.contains("daemon.max_connections"), "{err}");
    }

    #[test]
    fn key_and_position_helpers() {
        let text = "a = 1\n[t]\nk = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, text.find("k =").unwrap_or(0)), (3, 1));
        assert_eq!(
            key_at(text, text.find('2').unwrap_or(0)),
            Some("t.k".into())
        );
        assert_eq!(key_at(text, 2), Some("a".into()));
        assert_eq!(key_at(text, 999), None);
    }
}
