//! Process exit codes, shared by `toolsmith` and `toolsmithd` and listed in the README.

/// Exit codes. The numbers are part of the interface: scripts depend on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitCode {
    /// Success.
    Success = 0,
    /// The operation failed; the message says why.
    Failure = 1,
    /// The command line is wrong (unknown flag, missing argument).
    Usage = 2,
    /// The daemon is not running (or its socket cannot be reached).
    DaemonNotRunning = 3,
    /// The configuration is invalid.
    InvalidConfig = 4,
    /// Another toolsmithd already holds the state directory.
    AlreadyRunning = 5,
    /// The state store is damaged or from a newer toolsmith.
    StoreDamaged = 6,
    /// The control socket refused this user.
    PermissionDenied = 7,
    /// `toolsmith sandbox`: toolsmith itself failed (options, policy, set-up, a refusal); the
    /// command's own codes pass through, so these follow `env(1)` and `timeout(1)`.
    SandboxFailed = 125,
    /// `toolsmith sandbox`: the command was found but could not be executed.
    CannotExecute = 126,
    /// `toolsmith sandbox`: the command was not found inside the sandbox.
    CommandNotFound = 127,
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code as u8)
    }
}
