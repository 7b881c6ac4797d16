//! Logging: to journald when stderr is the journal, human-readable to stderr otherwise.
//!
//! `tracing-journald` would connect whenever the journal socket exists, even when the daemon runs
//! in a terminal; systemd's own rule is better: stderr is the journal when `$JOURNAL_STREAM`
//! names stderr's device and inode.

use std::os::fd::AsFd;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry, reload};

/// Where log lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogTarget {
    /// The systemd journal, with structured fields.
    Journald,
    /// Human-readable lines on stderr.
    Stderr,
}

/// A log filter that is not a valid `tracing` directive.
#[derive(Debug, thiserror::Error)]
#[error("invalid log filter `{directive}` (from {source_name}): {reason}")]
pub struct LogFilterError {
    directive: String,
    source_name: &'static str,
    reason: String,
}

/// The installed logger, and the means to change its level on reload.
pub struct Logging {
    handle: reload::Handle<EnvFilter, Registry>,
    /// Set when `--log-level` or `RUST_LOG` chose the filter: a config reload must not undo it.
    pinned_by: Option<&'static str>,
    target: LogTarget,
}

impl Logging {
    /// Where lines go.
    pub fn target(&self) -> LogTarget {
        self.target
    }

    /// Applies the config's level unless a flag or `RUST_LOG` pinned it. Returns whether it
    /// changed anything.
    pub fn apply_config_level(&self, directive: &str) -> Result<bool, LogFilterError> {
        if self.pinned_by.is_some() {
            return Ok(false);
        }
        let filter = parse(directive, "daemon.log_level")?;
        self.handle
            .reload(filter)
            .map_err(|e| LogFilterError {
                directive: directive.to_owned(),
                source_name: "daemon.log_level",
                reason: e.to_string(),
            })
            .map(|()| true)
    }
}

fn parse(directive: &str, source_name: &'static str) -> Result<EnvFilter, LogFilterError> {
    EnvFilter::builder()
        .parse(directive)
        .map_err(|e| LogFilterError {
            directive: directive.to_owned(),
            source_name,
            reason: e.to_string(),
        })
}

/// Whether stderr is connected to the journal, by systemd's rule.
pub fn stderr_is_journal() -> bool {
    let Some(value) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = value.to_str().and_then(|v| v.split_once(':')) else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    match nix::sys::stat::fstat(std::io::stderr().as_fd()) {
        Ok(stat) => stat.st_dev == dev && stat.st_ino == ino,
        Err(_) => false,
    }
}

/// Installs the global logger. Filter precedence: `flag_level`, then `RUST_LOG`, then the
/// config's `daemon.log_level`.
pub fn init(flag_level: Option<&str>, config_level: &str) -> Result<Logging, LogFilterError> {
    let rust_log = std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty());
    let (filter, pinned_by) = match (flag_level, rust_log.as_deref()) {
        (Some(level), _) => (parse(level, "--log-level")?, Some("--log-level")),
        (None, Some(level)) => (parse(level, "RUST_LOG")?, Some("RUST_LOG")),
        (None, None) => (parse(config_level, "daemon.log_level")?, None),
    };
    let (filter, handle) = reload::Layer::new(filter);
    let journald = if stderr_is_journal() {
        tracing_journald::layer().ok()
    } else {
        None
    };
    let target = if journald.is_some() {
        LogTarget::Journald
    } else {
        LogTarget::Stderr
    };
    let fmt = journald.is_none().then(|| {
        use std::io::IsTerminal;
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
    });
    // A second init (tests calling run twice in one process) keeps the first logger.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(journald)
        .with(fmt)
        .try_init();
    Ok(Logging {
        handle,
        pinned_by,
        target,
    })
}
