//! The sandbox every generated tool runs in: generated code is untrusted and never runs
//! anywhere else.
//!
//! [`run`] starts the toolsmith binary again as a single-threaded helper (see [`helper_main`],
//! which every `main` that may be the helper calls first). The helper creates user, mount, pid,
//! net, ipc and uts namespaces, builds a minimal filesystem view, and confines its pid 1 before
//! `execve`. The exact order, and what each layer denies:
//!
//! 1. **cgroup** (when a cgroup v2 subtree is delegated): pid 1 joins the run's cgroup,
//!    whose `memory.max`, `pids.max` and `cpu.max` bound the whole run. Running as root
//!    without one, it joins per-run cgroups of the v1 `pids` and `memory` hierarchies instead
//!    where the host mounts them (the kernel never applies `RLIMIT_NPROC` to uid 0).
//! 2. **namespaces**: `unshare(user | mount | pid | net | ipc | uts)`, the caller's own uid and
//!    gid mapped (no other id exists inside). The net namespace has only a downed loopback: no
//!    network at all. Host processes are invisible; signals cannot reach them. With a network
//!    grant (`Profile::hosts`), the supervisor brings `lo` up and hands a listener on
//!    `127.0.0.1:3128` to the parent's filtering proxy (`proxy.rs`), the only way out.
//! 3. fork: the child is pid 1 of the new pid namespace; the parent side supervises.
//! 4. **view** (`mounts.rs`): mounts private, a fresh tmpfs root with the system directories,
//!    selected `/etc` files, the tool's directory and the workspace bound (read-only unless the
//!    profile says the workspace is writable), private `/tmp` and `/work`, a minimal `/dev`, a
//!    new `/proc`; `pivot_root` and the old root detached. Home, `/run`, the daemon's socket and
//!    state are not there to be read or written.
//! 5. `setsid` (no controlling terminal) and `PR_SET_PDEATHSIG` (pid 1 dies with its
//!    supervisor), then every inherited descriptor above 2 is closed.
//! 6. **rlimits** (`limits.rs`): CPU time, file size, open files, no core dumps; data size and
//!    processes too when there is no cgroup.
//! 7. **Landlock** (`landlock.rs`, the kernel's highest ABI, fully enforced or refused): writes
//!    only under `/work`, `/tmp` and a writable workspace; reads only of the view; TCP bind and
//!    connect denied (ABI 4); abstract unix sockets and signals outside the sandbox denied (ABI
//!    6). Without namespaces, the same rules on host paths are the filesystem barrier.
//! 8. the capability bounding and ambient sets emptied, so even a uid-0 command gets no
//!    capability from `execve`; **no_new_privs** (setuid bits and file capabilities inert).
//! 9. **seccomp** (`seccomp.rs`): the deny-list of dangerous system calls (io_uring, ptrace,
//!    bpf, mount, namespaces, keyrings, module loading, TIOCSTI, non-unix sockets, …), and any
//!    foreign-architecture call kills the process. Without namespaces, every socket, and every
//!    change of a file's mode, owner, times or extended attributes (which Landlock does not
//!    cover) is refused too.
//! 10. `execve` with an allow-listed environment (`env.rs`).
//!
//! The parent (`parent.rs`) enforces the wall-clock limit by having the supervisor kill pid 1,
//! which ends the whole pid namespace (so `setsid` and double forks do not survive), caps the
//! captured output (marking truncation), and returns a [`RunReport`]: exit code or signal, the
//! limit hit, runtime, CPU time and peak memory, and which layers were in force.
//!
//! The policy's `[sandbox]` table ([`SandboxPolicy`]) names the layers untrusted code cannot run
//! without (by default Landlock, seccomp and rlimits) and the maxima of every limit.

mod child;
mod env;
pub mod grants;
mod landlock;
mod limits;
mod mounts;
pub mod needs;
mod own;
mod parent;
pub mod policy;
pub mod profile;
mod protocol;
pub mod proxy;
mod seccomp;
pub mod tool_files;
pub mod toolchain;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use grants::{Grants, HostPort};
pub use needs::{Level, Need};
pub use own::OwnPlaces;
pub use policy::{Layer, LayerPlan, SandboxPolicy, SandboxPolicyError};
pub use profile::{Limits, SandboxProfile, Toolchain, ToolchainKind, WorkspaceAccess};
pub use protocol::Step;
pub use proxy::{Connection, Verdict};
pub use tool_files::{ToolFile, ToolFiles};

/// The name (`argv[0]`) the helper is started under; [`helper_main`] recognises it.
pub const HELPER_ARG0: &str = "toolsmith-sandbox-helper";

/// Where the workspace appears inside the sandbox.
pub const WORKSPACE_DIR: &str = mounts::WORKSPACE;
/// The command's work and home directory inside the sandbox (a private tmpfs).
pub const WORK_DIR: &str = mounts::WORK;
/// Where the tool's own files appear inside the sandbox.
pub const TOOL_DIR: &str = mounts::TOOL;

/// Runs the sandbox helper and returns its exit code when this process was started as one;
/// `None` otherwise. Call it first thing in `main`, before any thread or async runtime starts:
/// the helper forks and unshares, which only a single-threaded process may do safely.
pub fn helper_main() -> Option<std::process::ExitCode> {
    child::main_if_helper()
}

/// What a run may use: workspace access, the user's toolchains, limits, and the grants, as a
/// manifest's `sandbox:` asks for them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Profile {
    /// Access to the workspace.
    pub workspace: WorkspaceAccess,
    /// Toolchains bound read-only (each checked, and granted by the policy, when the run
    /// starts).
    pub toolchains: Vec<Toolchain>,
    /// Resource limits (bounded by the policy's maxima when the run starts).
    pub limits: Limits,
    /// `host:port` pairs the proxy admits; empty: no proxy, no network (the run refuses a
    /// pair the policy's `[grants] hosts` does not list).
    pub hosts: Vec<HostPort>,
    /// Host sockets bound into the view at the same path (each must be named by the policy's
    /// `[grants] host_sockets`).
    pub host_sockets: Vec<PathBuf>,
}

impl TryFrom<&SandboxProfile> for Profile {
    type Error = SandboxError;

    /// A manifest's profile; `network: true` is refused, since no tool gets direct network
    /// access (hosts go through the proxy), and so is a host that is not `host:port`.
    fn try_from(profile: &SandboxProfile) -> Result<Self, SandboxError> {
        if profile.network {
            return Err(SandboxError::Invalid(
                "the profile asks for `network: true`, but tools never get direct network \
                 access: set `network: false` in the manifest's `sandbox:` (hosts a tool needs \
                 are listed in `sandbox.hosts` and reached through toolsmith's proxy)"
                    .into(),
            ));
        }
        let hosts = profile
            .hosts
            .iter()
            .map(|h| HostPort::parse(h, false).map_err(SandboxError::Invalid))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Profile {
            workspace: profile.workspace,
            toolchains: profile.toolchains.clone(),
            limits: profile.limits,
            hosts,
            host_sockets: profile.host_sockets.clone(),
        })
    }
}

/// The command's standard input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stdin {
    /// `/dev/null`.
    #[default]
    Null,
    /// The caller's own standard input (for `toolsmith sandbox` at a terminal).
    Inherit,
}

/// A run to make.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// The command and its arguments. A name without a slash is looked up in the sandbox's
    /// `PATH` (system directories); `/tool/run.sh` names a tool's entry point.
    pub command: Vec<String>,
    /// Workspace access and limits.
    pub profile: Profile,
    /// The workspace on the host, shown at [`WORKSPACE_DIR`] when the profile grants access.
    pub workspace: Option<PathBuf>,
    /// The tool's directory on the host, shown read-only at [`TOOL_DIR`] (a bind mount: a
    /// directory only toolsmith writes, such as a candidate's staging directory).
    pub tool_dir: Option<PathBuf>,
    /// The tool's files by value, written into the run's own root at [`TOOL_DIR`] inside its
    /// private mount namespace and made read-only before the command starts: what a registry
    /// run executes is exactly what was checked, whatever happens on disk meanwhile. Exclusive
    /// with `tool_dir`; needs the namespaces.
    pub tool_files: Option<ToolFiles>,
    /// Variables to set in the command's environment besides the allow-listed ones (e.g.
    /// `TOOLSMITH_DRY_RUN=1`); they replace allow-listed ones of the same name.
    pub env: Vec<(String, String)>,
    /// Standard input.
    pub stdin: Stdin,
    /// The policy: required layers and maxima.
    pub policy: SandboxPolicy,
    /// The binary that serves as the helper (it must call [`helper_main`] first). By default a
    /// single-threaded caller forks and runs the helper in place, and any other starts
    /// `toolsmith-sandbox-helper` beside its executable (else the executable itself).
    pub helper: Option<PathBuf>,
    /// toolsmith's own directories and files (state, runtime, registry, configuration): a
    /// workspace that is, holds or lies inside one is refused, whoever asks for the run.
    pub own: OwnPlaces,
    /// Credential files (or directories) a person granted the tool at approval, as
    /// (`~/…` as granted, the host path): each bound read-only at the same place under the
    /// run's home (`/work`), where the program that reads it looks. Only in the sandbox's own
    /// view (namespaces); never one of toolsmith's own places.
    pub credentials: Vec<(String, PathBuf)>,
}

impl SandboxSpec {
    /// A run of `command` with the default profile and policy, no workspace and no tool files.
    pub fn new(command: Vec<String>) -> Self {
        SandboxSpec {
            command,
            profile: Profile::default(),
            workspace: None,
            tool_dir: None,
            tool_files: None,
            env: Vec::new(),
            stdin: Stdin::Null,
            policy: SandboxPolicy::default(),
            helper: None,
            own: OwnPlaces::none(),
            credentials: Vec::new(),
        }
    }
}

/// Runs a command in the sandbox and waits for it: blocking, and to be called from a thread
/// that lives until it returns (the helper is bound to this thread with a parent-death signal),
/// e.g. `tokio::task::spawn_blocking` in the daemon.
pub fn run(spec: &SandboxSpec) -> Result<RunReport, SandboxError> {
    parent::run(spec)
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl Exit {
    /// The shell convention: the code, or 128 plus the signal.
    pub fn status(self) -> u8 {
        let value = match self {
            Exit::Code(code) => code,
            Exit::Signal(signal) => 128 + signal,
        };
        u8::try_from(value.rem_euclid(256)).unwrap_or(u8::MAX)
    }
}

/// The limit that ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    /// Wall-clock time.
    Wall,
    /// CPU time.
    Cpu,
    /// Memory.
    Memory,
    /// Processes and threads.
    Pids,
    /// Captured output.
    Output,
    /// Size of a written file.
    FileSize,
}

impl LimitHit {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitHit::Wall => "wall time",
            LimitHit::Cpu => "CPU time",
            LimitHit::Memory => "memory",
            LimitHit::Pids => "processes",
            LimitHit::Output => "output",
            LimitHit::FileSize => "file size",
        }
    }
}

/// How fully Landlock was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Every right of the kernel's ABI.
    Full,
    /// Some (only when the policy allows it).
    Partial,
    /// Not at all (only when the policy does not require Landlock).
    None,
}

/// What bounded one of a run's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The run's cgroup v2 (`pids.max`, `memory.max`).
    CgroupV2,
    /// The run's cgroups in the v1 hierarchies (`pids.max`, `memory.limit_in_bytes`): the
    /// fallback for root where no cgroup v2 subtree is delegated.
    CgroupV1,
    /// An rlimit (`RLIMIT_NPROC`, `RLIMIT_DATA`).
    Rlimit,
    /// Nothing: the pids limit of a run as root with no cgroup (the kernel exempts uid 0 from
    /// `RLIMIT_NPROC`); the report's warnings say why.
    Nothing,
}

impl Bound {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::CgroupV2 => "cgroup v2",
            Bound::CgroupV1 => "cgroup v1",
            Bound::Rlimit => "rlimits",
            Bound::Nothing => "nothing",
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The layers that were in force for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AppliedLayers {
    /// Namespaces and the minimal filesystem view.
    pub namespaces: bool,
    /// Landlock.
    pub landlock: Enforcement,
    /// The Landlock ABI used.
    pub landlock_abi: Option<u32>,
    /// The seccomp filters.
    pub seccomp: bool,
    /// A cgroup carried limits (v2: memory, pids and CPU; the v1 fallback: pids and memory
    /// where their hierarchies are usable); `pids` and `memory` say which did what.
    pub cgroup: bool,
    /// What bounded the number of processes and threads.
    pub pids: Bound,
    /// What bounded memory.
    pub memory: Bound,
}

/// One captured output stream.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Output {
    /// What was kept: at most the output limit.
    #[serde(rename = "text", serialize_with = "lossy")]
    pub bytes: Vec<u8>,
    /// Everything the command wrote, kept or not.
    pub total_bytes: u64,
    /// Whether `bytes` is shorter than what was written.
    pub truncated: bool,
}

fn lossy<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(bytes))
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// How the command ended.
    pub exit: Exit,
    /// The limit that ended it, if one did.
    pub limit: Option<LimitHit>,
    /// Wall-clock time from start to end, set-up included, ms.
    pub runtime_ms: u64,
    /// CPU time of the command and the children it waited for, ms (unknown when it was killed
    /// with its supervisor).
    pub cpu_ms: Option<u64>,
    /// Peak memory, KiB: the cgroup's peak, else the largest resident set of a process.
    pub peak_memory_kb: Option<u64>,
    /// Standard output.
    pub stdout: Output,
    /// Standard error.
    pub stderr: Output,
    /// The limits in force (the profile's, bounded by the policy).
    pub limits: Limits,
    /// The layers in force.
    pub layers: AppliedLayers,
    /// What the caller should know: limits lowered by the policy, a limit not enforceable here.
    pub warnings: Vec<String>,
    /// How the helper started: forked from this (single-threaded) process, or executed.
    pub helper: HelperStart,
    /// Where the run's time went.
    pub timings: Timings,
    /// Every connection made through the proxy (a run with a network grant), in the order
    /// they ended: host, port, bytes each way, verdict.
    pub connections: Vec<Connection>,
}

/// How a run's helper started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HelperStart {
    /// Forked from the caller and run in place, without an `execve`: a single-threaded caller
    /// that named no helper (the CLI, an MCP server) saves the helper's start-up.
    Forked,
    /// Started with `posix_spawn` from the helper binary (a multi-threaded caller, such as the
    /// daemon, may not fork and go on, or the caller named the binary).
    Executed,
}

/// Where a run's time went, in microseconds, measured on the monotonic clock by the parent,
/// the supervising helper and pid 1 (see [`RunReport::timings`]). The parts follow one another
/// and add up to `total_us`; a part the run never reached (the command killed with its
/// supervisor, say) is `None`, and its time goes to the next part that was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Timings {
    /// The parent's checks and plan before starting the helper (without the cgroup, counted
    /// in `limits_us`).
    pub prepare_us: u64,
    /// Starting the helper (fork, `execve` of the toolsmith binary, its start-up) until it read
    /// the request.
    pub spawn_us: Option<u64>,
    /// Limits: the run's cgroup made by the parent and its files opened by the helper (pid 1
    /// joins it), and the rlimits
    /// set by pid 1.
    pub limits_us: Option<u64>,
    /// The namespaces (`unshare`, uid and gid maps) and the fork of pid 1.
    pub namespaces_us: Option<u64>,
    /// The filesystem view (mounts, `pivot_root`, hostname).
    pub view_us: Option<u64>,
    /// `setsid`, the parent-death signal, inherited descriptors closed, the command prepared.
    pub process_us: Option<u64>,
    /// The Landlock ruleset.
    pub landlock_us: Option<u64>,
    /// Capabilities dropped, no_new_privs, and the seccomp filters.
    pub seccomp_us: Option<u64>,
    /// pid 1's `execve` of the command.
    pub exec_us: Option<u64>,
    /// The command's own run, from its `execve` to its end.
    pub wait_us: Option<u64>,
    /// From the command's end to the report: the helper's report and exit, the output
    /// drained, the cgroup read and removed.
    pub teardown_us: Option<u64>,
    /// The whole run, as the caller of [`run`] waited for it.
    pub total_us: u64,
}

/// Why a run could not happen (a command that ran and failed is a [`RunReport`], not this).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The request is wrong; the message says what to change.
    #[error("invalid sandbox request: {0}")]
    Invalid(String),
    /// The policy forbids running here: a required layer is missing.
    #[error("{0}")]
    Refused(String),
    /// The helper could not be started.
    #[error("cannot start the sandbox helper {}: {source}", helper.display())]
    Spawn {
        /// The helper binary.
        helper: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The helper failed while setting the sandbox up; nothing of the command ran.
    #[error("sandbox set-up failed while {step}: {detail}")]
    Setup {
        /// The step.
        step: Step,
        /// The errno, when a system call failed.
        errno: Option<i32>,
        /// What failed and what to do.
        detail: String,
    },
    /// The command could not be executed inside the sandbox.
    #[error("cannot run `{command}` in the sandbox: {detail}")]
    Exec {
        /// The command name.
        command: String,
        /// The errno (`ENOENT`: not found; `EACCES`: not executable).
        errno: i32,
        /// What failed and what to do.
        detail: String,
    },
    /// The helper did not follow the protocol: a bug, or a helper binary of another build.
    #[error("the sandbox helper {0}")]
    Protocol(String),
    /// An I/O error of the parent side.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_follow_the_shell() {
        assert_eq!(Exit::Code(3).status(), 3);
        assert_eq!(Exit::Signal(9).status(), 137);
        assert_eq!(Exit::Code(-1).status(), 255);
        assert_eq!(
            serde_json::to_value(Exit::Signal(9)).expect("json"),
            serde_json::json!({"signal": 9})
        );
    }

    #[test]
    fn profiles_from_manifests() {
        let asked = SandboxProfile {
            workspace: WorkspaceAccess::Read,
            network: false,
            toolchains: Vec::new(),
            hosts: vec!["pypi.org:443".into()],
            host_sockets: Vec::new(),
            limits: Limits::default(),
        };
        let profile = Profile::try_from(&asked).expect("valid");
        assert_eq!(profile.workspace, WorkspaceAccess::Read);
        assert_eq!(profile.hosts[0].to_string(), "pypi.org:443");
        let bad_host = SandboxProfile {
            hosts: vec!["pypi.org".into()],
            ..asked.clone()
        };
        assert!(Profile::try_from(&bad_host).is_err());
        let network = SandboxProfile {
            network: true,
            ..asked.clone()
        };
        let err = Profile::try_from(&network)
            .expect_err("refused")
            .to_string();
        assert!(err.contains("never get direct network access"), "{err}");
    }
}
