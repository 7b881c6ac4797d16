//! Error classes of failed tool runs: what kind of failure it was, from the sandbox's report
//! (a limit hit, a denied operation) and from the run's error output.

use std::fmt;

/// What kind of failure a run was.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Ran out of wall or CPU time.
    Timeout,
    /// Tried the network (always denied) or could not resolve or reach a host.
    Network,
    /// Credentials missing or refused.
    Auth,
    /// A file or directory it may not touch.
    Permission,
    /// Something it calls is not where it expected: a sub-command, flag, URL or file renamed or
    /// removed.
    Endpoint,
    /// Told to slow down.
    RateLimit,
    /// Could not read its input or another program's output.
    Parsing,
    /// A bug in the tool: syntax error, unbound variable, traceback.
    CodeError,
    /// A program or module it needs is not installed.
    MissingDependency,
    /// The sandbox refused an operation (seccomp, Landlock, a read-only mount).
    SandboxDenial,
    /// Hit its memory limit.
    MemoryLimit,
    /// Hit its process limit.
    PidsLimit,
    /// Wrote more output than allowed.
    OutputLimit,
    /// None of the above.
    Other,
}

impl ErrorClass {
    /// Every class, in a stable order.
    pub const ALL: [ErrorClass; 14] = [
        ErrorClass::Timeout,
        ErrorClass::Network,
        ErrorClass::Auth,
        ErrorClass::Permission,
        ErrorClass::Endpoint,
        ErrorClass::RateLimit,
        ErrorClass::Parsing,
        ErrorClass::CodeError,
        ErrorClass::MissingDependency,
        ErrorClass::SandboxDenial,
        ErrorClass::MemoryLimit,
        ErrorClass::PidsLimit,
        ErrorClass::OutputLimit,
        ErrorClass::Other,
    ];

    /// The name used in the store, the policy and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Network => "network",
            ErrorClass::Auth => "auth",
            ErrorClass::Permission => "permission",
            ErrorClass::Endpoint => "endpoint",
            ErrorClass::RateLimit => "rate_limit",
            ErrorClass::Parsing => "parsing",
            ErrorClass::CodeError => "code_error",
            ErrorClass::MissingDependency => "missing_dependency",
            ErrorClass::SandboxDenial => "sandbox_denial",
            ErrorClass::MemoryLimit => "memory_limit",
            ErrorClass::PidsLimit => "pids_limit",
            ErrorClass::OutputLimit => "output_limit",
            ErrorClass::Other => "other",
        }
    }

    /// Parses a name written by [`ErrorClass::as_str`].
    pub fn from_name(name: &str) -> Option<ErrorClass> {
        ErrorClass::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The limit a run hit, as the sandbox reports it.
pub use crate::sandbox::LimitHit;

/// Text patterns, checked in order: the first that matches the error output names the class.
/// Lower-cased text is searched; each entry is (class, any of these substrings).
const PATTERNS: &[(ErrorClass, &[&str])] = &[
    (
        ErrorClass::MissingDependency,
        &[
            "command not found",
            ": not found",
            "no such file or directory: '",
            "modulenotfounderror",
            "no module named",
            "importerror: cannot import",
            "cannot find module",
            "is not installed",
            "executable file not found",
        ],
    ),
    (
        ErrorClass::RateLimit,
        &["rate limit", "too many requests", "429", "throttl"],
    ),
    (
        ErrorClass::Auth,
        &[
            "authentication failed",
            "unauthorized",
            "401",
            "403 forbidden",
            "invalid token",
            "bad credentials",
            "permission denied (publickey",
            "could not read username",
        ],
    ),
    (
        ErrorClass::Network,
        &[
            "could not resolve host",
            "name or service not known",
            "temporary failure in name resolution",
            "network is unreachable",
            "connection refused",
            "connection timed out",
            "failed to connect",
            "could not connect",
            "no route to host",
        ],
    ),
    (
        ErrorClass::SandboxDenial,
        &[
            "operation not permitted",
            "read-only file system",
            "bad system call",
            "function not implemented",
        ],
    ),
    (ErrorClass::Permission, &["permission denied", "eacces"]),
    (
        ErrorClass::Endpoint,
        &[
            "unrecognized option",
            "unknown option",
            "unrecognized arguments",
            "unexpected argument",
            "unknown flag",
            "unknown command",
            "unknown subcommand",
            "no such subcommand",
            "is not a git command",
            "invalid choice",
            "no such file or directory",
            "not found",
            "404",
            "does not exist",
        ],
    ),
    (
        ErrorClass::CodeError,
        &[
            "syntax error",
            "unbound variable",
            "parameter not set",
            "traceback (most recent call last)",
            "nameerror",
            "typeerror",
            "attributeerror",
            "indentationerror",
            "bad substitution",
            "unexpected eof",
        ],
    ),
    (
        ErrorClass::Parsing,
        &[
            "jsondecodeerror",
            "parse error",
            "invalid json",
            "expected value",
            "unexpected token",
            "could not parse",
            "invalid input",
        ],
    ),
    (ErrorClass::Timeout, &["timed out", "timeout"]),
];

/// Classifies a failed run from what the sandbox observed and its error output.
pub fn classify(limit: Option<LimitHit>, signal: Option<i32>, stderr: &str) -> ErrorClass {
    match limit {
        Some(LimitHit::Wall | LimitHit::Cpu) => return ErrorClass::Timeout,
        Some(LimitHit::Memory) => return ErrorClass::MemoryLimit,
        Some(LimitHit::Pids) => return ErrorClass::PidsLimit,
        Some(LimitHit::Output | LimitHit::FileSize) => return ErrorClass::OutputLimit,
        None => {}
    }
    // SIGSYS is seccomp's answer to a forbidden system call.
    if signal == Some(libc::SIGSYS) {
        return ErrorClass::SandboxDenial;
    }
    let text = stderr.to_lowercase();
    PATTERNS
        .iter()
        .find(|(_, needles)| needles.iter().any(|n| text.contains(n)))
        .map_or(ErrorClass::Other, |(class, _)| *class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_signals_come_first() {
        assert_eq!(
            classify(Some(LimitHit::Wall), None, "x"),
            ErrorClass::Timeout
        );
        assert_eq!(classify(Some(LimitHit::Cpu), None, ""), ErrorClass::Timeout);
        assert_eq!(
            classify(Some(LimitHit::Memory), Some(9), ""),
            ErrorClass::MemoryLimit
        );
        assert_eq!(
            classify(Some(LimitHit::Pids), None, ""),
            ErrorClass::PidsLimit
        );
        assert_eq!(
            classify(Some(LimitHit::Output), None, ""),
            ErrorClass::OutputLimit
        );
        assert_eq!(
            classify(None, Some(libc::SIGSYS), ""),
            ErrorClass::SandboxDenial
        );
    }

    #[test]
    fn error_output_names_the_class() {
        let cases = [
            ("sh: 1: jq: not found", ErrorClass::MissingDependency),
            (
                "run.sh: line 3: cargo: command not found",
                ErrorClass::MissingDependency,
            ),
            (
                "ModuleNotFoundError: No module named 'yaml'",
                ErrorClass::MissingDependency,
            ),
            (
                "error: unexpected argument '--all-targets' found",
                ErrorClass::Endpoint,
            ),
            (
                "git: 'stauts' is not a git command. See 'git --help'.",
                ErrorClass::Endpoint,
            ),
            (
                "error: unrecognized option '--frobnicate'",
                ErrorClass::Endpoint,
            ),
            (
                "curl: (6) Could not resolve host: example.com",
                ErrorClass::Network,
            ),
            (
                "fatal: Authentication failed for 'https://x'",
                ErrorClass::Auth,
            ),
            (
                "mkdir: cannot create directory '/x': Permission denied",
                ErrorClass::Permission,
            ),
            (
                "touch: cannot touch 'a': Read-only file system",
                ErrorClass::SandboxDenial,
            ),
            (
                "run.sh: 4: Syntax error: \"fi\" unexpected",
                ErrorClass::CodeError,
            ),
            (
                "run.sh: line 7: name: unbound variable",
                ErrorClass::CodeError,
            ),
            (
                "Traceback (most recent call last):\n  File ...\nKeyError: 'x'",
                ErrorClass::CodeError,
            ),
            (
                "parse error: Invalid numeric literal at line 1",
                ErrorClass::Parsing,
            ),
            ("HTTP 429 Too Many Requests", ErrorClass::RateLimit),
            ("the operation timed out", ErrorClass::Timeout),
            ("it just did not work", ErrorClass::Other),
        ];
        for (text, class) in cases {
            assert_eq!(classify(None, None, text), class, "{text}");
        }
    }

    #[test]
    fn names_round_trip() {
        for class in ErrorClass::ALL {
            assert_eq!(ErrorClass::from_name(class.as_str()), Some(class));
        }
    }
}
