//! What the parent and the helper say to each other: the request the parent writes to the
//! helper's spec pipe (one JSON document), and the messages the helper writes back on its report
//! pipe (one JSON object per line, each shorter than `PIPE_BUF` so that the writes of the
//! supervisor and of the sandboxed process's first stage never interleave).

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::landlock::Rule;
use super::limits::CgroupBounds;
use super::profile::Limits;
use super::tool_files::ToolFiles;
use super::{Enforcement, Exit};

// The filesystem view the parent plans (`mounts::plan`) and the helper builds
// (`mounts::build`), entry by entry.

/// One thing placed in the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum What {
    /// A bind mount of a host path, read-only unless `writable`, recursive, nosuid, nodev.
    Bind {
        /// The host path.
        source: PathBuf,
        /// Writable.
        writable: bool,
    },
    /// A device node bound from the host's `/dev`.
    Device {
        /// The host path.
        source: PathBuf,
    },
    /// A symlink.
    Symlink {
        /// Its target.
        to: PathBuf,
    },
    /// A small file written into the root tmpfs.
    File {
        /// Its contents.
        contents: String,
    },
    /// A tmpfs.
    Tmpfs {
        /// Size limit, MiB.
        size_mb: u32,
        /// Mode of its root.
        mode: u32,
    },
    /// A tool's files, written into the root tmpfs (read-only once the view is built).
    Tree {
        /// The files.
        files: ToolFiles,
    },
    /// A new procfs.
    Proc,
    /// A path of the view (under `/proc`) bound onto itself read-only, when it exists.
    ReadOnly,
}

/// One entry of the plan: `what` at `target`, a path of the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The path inside the view.
    pub target: PathBuf,
    /// What goes there.
    pub what: What,
}

/// The whole view, in the order it is built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MountPlan {
    /// The entries.
    pub entries: Vec<Entry>,
    /// The command's working directory in the view.
    pub cwd: PathBuf,
    /// The hostname.
    pub hostname: String,
}

/// Largest request the helper reads: a request is a few KiB, plus a tool's files (at most
/// `MAX_TOOL_BYTES`, which JSON's escapes may inflate); more is not one.
pub(crate) const MAX_SPEC_BYTES: u64 = (4 << 20) + 6 * super::tool_files::MAX_TOOL_BYTES as u64;

/// Largest report line written or read. Writes up to `PIPE_BUF` (4096 on Linux) are atomic.
pub(crate) const MAX_MESSAGE_BYTES: usize = 4000;

/// The step of the helper's set-up that failed, in the order the helper runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// Reading the request from the parent.
    ReadSpec,
    /// Moving into the run's cgroup.
    JoinCgroup,
    /// `unshare` of the user, mount, pid, net, ipc and uts namespaces.
    Unshare,
    /// Writing `uid_map`, `gid_map` and `setgroups`.
    IdMaps,
    /// Bringing up `lo` and handing the proxy its listening socket (network grants only).
    Network,
    /// Forking the process that becomes pid 1 of the new pid namespace.
    Fork,
    /// Naming the new uts namespace.
    Hostname,
    /// Building the minimal filesystem view.
    Mount,
    /// Switching to the new root.
    PivotRoot,
    /// Entering the working directory.
    Chdir,
    /// `setsid`.
    Setsid,
    /// `PR_SET_PDEATHSIG`, and checking the supervisor is still alive.
    ParentDeathSignal,
    /// Closing inherited file descriptors.
    CloseFds,
    /// Setting resource limits.
    Rlimits,
    /// Applying the Landlock ruleset.
    Landlock,
    /// Emptying the capability bounding set.
    Capabilities,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// Installing the seccomp filters.
    Seccomp,
    /// `execve` of the command.
    Exec,
    /// Waiting for the sandboxed process.
    Supervise,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::ReadSpec => "reading the request",
            Step::JoinCgroup => "joining the run's cgroup",
            Step::Unshare => "creating namespaces",
            Step::IdMaps => "mapping uid and gid",
            Step::Network => "setting up the proxy's loopback listener",
            Step::Fork => "forking pid 1",
            Step::Hostname => "setting the hostname",
            Step::Mount => "building the filesystem view",
            Step::PivotRoot => "pivot_root",
            Step::Chdir => "entering the working directory",
            Step::Setsid => "setsid",
            Step::ParentDeathSignal => "parent-death signal",
            Step::CloseFds => "closing inherited file descriptors",
            Step::Rlimits => "setting rlimits",
            Step::Landlock => "applying Landlock",
            Step::Capabilities => "dropping capabilities",
            Step::NoNewPrivs => "setting no_new_privs",
            Step::Seccomp => "installing seccomp filters",
            Step::Exec => "execve",
            Step::Supervise => "supervising the command",
        })
    }
}

/// A failed step of the helper, as it is reported to the parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The step.
    pub step: Step,
    /// The errno, when a system call failed.
    pub errno: Option<i32>,
    /// What failed, on which input, and what to do.
    pub detail: String,
}

impl Failure {
    /// A failed system call.
    pub(crate) fn sys(step: Step, errno: nix::errno::Errno, detail: impl fmt::Display) -> Self {
        Failure {
            step,
            errno: Some(errno as i32),
            detail: format!("{detail}: {}", errno.desc()),
        }
    }

    /// A failure without an errno.
    pub(crate) fn other(step: Step, detail: impl Into<String>) -> Self {
        Failure {
            step,
            errno: None,
            detail: detail.into(),
        }
    }

    /// A failed I/O operation.
    pub(crate) fn io(step: Step, error: &std::io::Error, detail: impl fmt::Display) -> Self {
        Failure {
            step,
            errno: error.raw_os_error(),
            detail: format!("{detail}: {error}"),
        }
    }

    pub(crate) fn into_message(self) -> Message {
        Message::Failed {
            step: self.step,
            errno: self.errno,
            detail: self.detail,
        }
    }
}

/// Which layers the helper must fail without (the policy's `require`); the others it applies
/// when the kernel offers them and reports when it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct Required {
    /// Landlock must be enforced.
    pub landlock: bool,
    /// Seccomp must be installed.
    pub seccomp: bool,
    /// A partially enforced Landlock ruleset is acceptable.
    pub allow_partial_landlock: bool,
}

/// The filesystem the command sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum View {
    /// Namespaces and a fresh root built from the plan.
    Isolated(MountPlan),
    /// No namespaces: the host's filesystem, narrowed by Landlock only; `cwd` is a host path.
    Host {
        /// Working directory on the host.
        cwd: PathBuf,
    },
}

/// The request the parent sends the helper. A field this build does not know is refused: a
/// helper binary of another build must fail, never run with less than it was asked to apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HelperSpec {
    /// The command; `argv[0]` is looked up in the sandbox's `PATH` when it has no slash.
    pub argv: Vec<String>,
    /// The complete environment of the command.
    pub env: Vec<(String, String)>,
    /// The filesystem view.
    pub view: View,
    /// Landlock rules, on the paths the command sees.
    pub landlock: Vec<Rule>,
    /// The run's limits.
    pub limits: Limits,
    /// Which limits the run's cgroup carries: rlimits leave those alone.
    pub cgroup_limits: CgroupBounds,
    /// The files the helper writes `0` into to join the run's cgroup first: `cgroup.procs` of
    /// a v2 cgroup, `tasks` of each v1 hierarchy's (see `RunCgroup::procs`).
    pub cgroup_join: Vec<PathBuf>,
    /// What must not be missing.
    pub required: Required,
    /// The seccomp filters to install, compiled by the parent (`seccomp::packed`), or why they
    /// could not be: every socket domain denied, `AF_UNIX` included, when no mount view hides
    /// the host's sockets.
    pub seccomp: Result<Vec<Vec<u64>>, String>,
    /// With a network grant: the supervisor brings up `lo` in the run's network namespace,
    /// listens on `127.0.0.1:port` and sends that socket to the parent's proxy over the
    /// descriptor named on its command line; pid 1's Landlock lets TCP connect to this port
    /// only. `None`: `lo` stays down and no socket but a unix one can be made.
    pub proxy: Option<ProxyPlan>,
}

/// Where the proxy listens inside the run's network namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProxyPlan {
    /// The port on `127.0.0.1`.
    pub port: u16,
}

/// A message from the helper to the parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Message {
    /// Set-up failed; nothing of the command ran.
    Failed {
        /// The step.
        step: Step,
        /// The errno, when a system call failed.
        errno: Option<i32>,
        /// What failed, on which input, and what to do.
        detail: String,
    },
    /// Every layer is in place; `execve` comes next.
    Confined {
        /// Landlock's state.
        landlock: Enforcement,
        /// The Landlock ABI used.
        landlock_abi: Option<u32>,
        /// Whether the seccomp filters are installed.
        seccomp: bool,
        /// When pid 1 reached each step.
        marks: Pid1Marks,
    },
    /// The command's pid 1 ended; its resource usage includes the children it waited for.
    Exited {
        /// How it ended.
        exit: Exit,
        /// Largest resident set size, KiB.
        maxrss_kb: u64,
        /// User plus system CPU time, microseconds.
        cpu_us: u64,
        /// When the supervisor reached each step.
        marks: SupervisorMarks,
    },
}

/// Now on `CLOCK_MONOTONIC`, in nanoseconds: one clock for every process of a run (no time
/// namespace is made), so the marks of the parent, the supervisor and pid 1 compare.
pub(crate) fn now_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_nsec()).unwrap_or(0)
    })
}

/// When the supervisor reached each step of a run ([`now_ns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct SupervisorMarks {
    /// The request was read.
    pub spec_read: u64,
    /// The run's cgroup was joined (or there was none to join).
    pub joined: u64,
    /// pid 1's `execve` succeeded: the descriptor only pid 1 held, close-on-exec, closed. Also
    /// set when pid 1 died before `execve`, which a missing `Confined` message tells apart.
    pub exec_done: Option<u64>,
    /// pid 1 was seen to have ended.
    pub exited: u64,
}

/// When pid 1 reached each step of its set-up ([`now_ns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct Pid1Marks {
    /// pid 1 began, just after the fork.
    pub started: u64,
    /// The filesystem view was built (hostname included).
    pub view: u64,
    /// `setsid`, the parent-death signal, inherited descriptors closed, the command's argv,
    /// environment and path candidates prepared.
    pub prepared: u64,
    /// The rlimits were set.
    pub rlimits: u64,
    /// Landlock was applied (or found missing).
    pub landlock: u64,
    /// Capabilities dropped, no_new_privs and the seccomp filters in place: `execve` next.
    pub exec: u64,
}

impl Message {
    /// The message as one line, shortened so the write stays atomic.
    pub(crate) fn to_line(&self) -> Vec<u8> {
        let mut message = self.clone();
        loop {
            let mut line = serde_json::to_vec(&message).unwrap_or_else(|_| b"{}".to_vec());
            line.push(b'\n');
            match &mut message {
                Message::Failed { detail, .. } if line.len() > MAX_MESSAGE_BYTES => {
                    let keep = detail
                        .len()
                        .saturating_sub(line.len() - MAX_MESSAGE_BYTES + 16);
                    let mut cut = keep;
                    while !detail.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    detail.truncate(cut);
                    detail.push('…');
                }
                _ => return line,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_failures_fit_one_atomic_write() {
        let failed = Message::Failed {
            step: Step::Mount,
            errno: Some(2),
            detail: "é".repeat(10_000),
        };
        let line = failed.to_line();
        assert!(line.len() <= MAX_MESSAGE_BYTES, "{}", line.len());
        assert_eq!(line.last(), Some(&b'\n'));
        let back: Message = serde_json::from_slice(&line).expect("parses");
        assert!(
            matches!(back, Message::Failed { step: Step::Mount, errno: Some(2), detail } if detail.ends_with('…'))
        );
        let exited = Message::Exited {
            exit: Exit::Signal(9),
            maxrss_kb: 1,
            cpu_us: 2,
            marks: SupervisorMarks {
                spec_read: u64::MAX,
                joined: u64::MAX,
                exec_done: Some(u64::MAX),
                exited: u64::MAX,
            },
        };
        let line = exited.to_line();
        assert!(line.len() < MAX_MESSAGE_BYTES, "{}", line.len());
        let back: Message = serde_json::from_slice(&exited.to_line()).expect("parses");
        assert_eq!(back, exited);
        let confined = Message::Confined {
            landlock: Enforcement::Partial,
            landlock_abi: Some(u32::MAX),
            seccomp: true,
            marks: Pid1Marks {
                started: u64::MAX,
                view: u64::MAX,
                prepared: u64::MAX,
                rlimits: u64::MAX,
                landlock: u64::MAX,
                exec: u64::MAX,
            },
        };
        let line = confined.to_line();
        assert!(line.len() < MAX_MESSAGE_BYTES, "{}", line.len());
        let back: Message = serde_json::from_slice(&line).expect("parses");
        assert_eq!(back, confined);
    }

    #[test]
    fn the_clock_is_monotonic() {
        let (a, b) = (now_ns(), now_ns());
        assert!(a > 0 && b >= a, "{a} {b}");
    }
}
