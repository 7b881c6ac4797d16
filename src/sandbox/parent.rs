//! The parent side of a run: decide the layers, plan the view, start the helper, feed it the
//! request, capture the output under its cap, enforce wall time, and turn what the helper
//! reports into a [`RunReport`].
//!
//! Wall time is enforced by `SIGTERM` to the supervisor, which kills pid 1 and so the whole pid
//! namespace, then reports pid 1's status and resource usage as usual; a supervisor that does
//! not end within [`KILL_GRACE`] gets `SIGKILL`, and pid 1's parent-death signal follows it.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::unistd::{Group, Pid, User, getgid, getuid, pipe2};

use super::grants::{Grants, HostPort};
use super::limits::{self, CgroupStats, RunCgroup};
use super::policy::{Layer, SandboxPolicy};
use super::profile::Limits;
use super::protocol::{
    HelperSpec, MAX_MESSAGE_BYTES, Message, Pid1Marks, ProxyPlan, Required, Step, SupervisorMarks,
    View, now_ns,
};
use super::proxy::{self, Connection, Proxy};
use super::{
    AppliedLayers, Enforcement, Exit, HELPER_ARG0, HelperStart, LimitHit, Output, RunReport,
    SandboxError, SandboxSpec, Stdin, Timings, WorkspaceAccess,
};
use super::{mounts, seccomp, toolchain};
use crate::host;

/// How long the supervisor has to end pid 1 and report after `SIGTERM`.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// How long output pipes may stay open after the supervisor is gone (only without a pid
/// namespace can a process outlive pid 1 and hold them).
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// How much of stderr the limit classification looks at.
const STDERR_TAIL: usize = 8 * 1024;

/// The helper to start when the caller names none: `toolsmith-sandbox-helper` beside this
/// process's executable, which links nothing but the helper and so starts fastest; else this
/// executable itself, whose `main` dispatches the helper first (see [`super::helper_main`]).
fn default_helper() -> Result<PathBuf, SandboxError> {
    static HELPER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = HELPER.get_or_init(|| {
        let me = std::env::current_exe().map_err(|e| e.to_string())?;
        let beside = me.with_file_name(HELPER_ARG0);
        Ok(if beside.is_file() { beside } else { me })
    });
    found.clone().map_err(|e| SandboxError::Io {
        what: "finding the toolsmith binary to start the sandbox helper".into(),
        source: std::io::Error::other(e),
    })
}

/// Whether the namespaces work here, once probed (a forked child tries them).
static NAMESPACES: OnceLock<host::Layer> = OnceLock::new();

/// Whether the namespaces work here, probed once per process.
fn namespaces() -> &'static host::Layer {
    NAMESPACES.get_or_init(host::sandbox_namespaces)
}

/// Whether a set-up failure may be the namespaces' (refused by the kernel's settings, a
/// seccomp policy or AppArmor, which lets `unshare` through but refuses the mounts after it).
fn namespace_failure(error: &SandboxError) -> bool {
    match error {
        SandboxError::Setup { step, errno, .. } => match step {
            Step::Unshare | Step::IdMaps => true,
            Step::Hostname | Step::Mount | Step::PivotRoot => {
                matches!(*errno, Some(libc::EPERM | libc::EACCES))
            }
            _ => false,
        },
        _ => false,
    }
}

pub(crate) fn run(spec: &SandboxSpec) -> Result<RunReport, SandboxError> {
    // Namespaces are assumed to work until a run fails at them, and only then probed: a process
    // that runs once (the CLI) does not pay for a probe where they work, which is nearly
    // everywhere. Nothing of the command runs before the namespaces are in place, so a run
    // that failed at them is made again, without them where the policy allows.
    let assumed = NAMESPACES.get().is_none();
    match run_once(spec, NAMESPACES.get().is_none_or(|ns| ns.available)) {
        Err(error) if assumed && namespace_failure(&error) && !namespaces().available => {
            run_once(spec, false)
        }
        done => done,
    }
}

fn run_once(spec: &SandboxSpec, isolated: bool) -> Result<RunReport, SandboxError> {
    let mut marks = RunMarks {
        start: now_ns(),
        ..RunMarks::default()
    };
    reap_lingering();
    let policy = &spec.policy;
    if spec.command.first().is_none_or(|c| c.is_empty()) {
        return Err(SandboxError::Invalid("no command given".into()));
    }
    let (limits, mut warnings) = policy.clamp(spec.profile.limits);
    let dirs = host_dirs(spec)?;
    refuse_missing_layers(policy, isolated)?;
    if !isolated && spec.tool_files.is_some() {
        return Err(SandboxError::Refused(format!(
            "a registry tool's approved files are shown only in the run's own mount namespace,              and there are no namespaces here ({})",
            namespaces_detail()
        )));
    }
    let granted = check_grants(spec, isolated)?;

    let root = nix::unistd::geteuid().is_root();
    let cgroup_started = now_ns();
    let cgroup = run_cgroup(&limits, policy, root, &mut warnings)?;
    marks.cgroup = (cgroup_started, now_ns());
    let (pids_bound, memory_bound) = RunCgroup::bound_by(cgroup.as_ref(), root);

    let (request, scratch) = request(spec, &dirs, &granted, &limits, cgroup.as_ref(), isolated)?;
    warnings.extend(request.warning);
    let helper = match &spec.helper {
        Some(path) => Some(path.clone()),
        None if single_threaded() => None,
        None => Some(default_helper()?),
    };
    marks.spawn = now_ns();
    let talk = converse(
        helper.as_deref(),
        spec.stdin,
        &request.bytes,
        &limits,
        cgroup.as_ref(),
        &granted.hosts,
    )?;
    // Teardown: the cgroup's counters are read before it goes, with the work directory.
    let stats = cgroup.as_ref().map(RunCgroup::stats);
    drop(cgroup);
    drop(scratch);
    marks.end = now_ns();
    let outcome = talk.outcome;
    warnings.extend(outcome.warnings);

    let reports = read_reports(outcome.messages, &spec.command)?;
    marks.pid1 = reports.pid1;
    marks.supervisor = reports.supervisor;
    let tail = stderr_tail(&outcome.stderr);
    let Some(ended) = ending(reports.exited, outcome.killed_for, talk.status, stats) else {
        return Err(SandboxError::Protocol(format!(
            "{} ended ({}) without reporting how the command ended (is it a binary whose main \
             calls toolsmith::sandbox::helper_main first?); its stderr: {}",
            helper.as_deref().map_or_else(
                || "the forked sandbox helper".into(),
                |h| h.display().to_string()
            ),
            talk.status
                .map_or_else(|| "still ending".to_string(), |s| s.to_string()),
            String::from_utf8_lossy(&tail).trim()
        )));
    };
    let (landlock, landlock_abi, seccomp) =
        reports.confined.unwrap_or((Enforcement::None, None, false));
    warnings.extend(layer_warnings(landlock, seccomp, isolated));
    let peak_memory_kb = stats.and_then(|s| s.peak_kb).or(ended.maxrss_kb);
    let limit = limits::classify(&limits::Evidence {
        killed_for: outcome.killed_for,
        exit: ended.exit,
        cpu_ms: ended.cpu_ms,
        peak_kb: peak_memory_kb,
        stderr_tail: &tail,
        cgroup: stats,
        limits: &limits,
    });
    warnings.extend(refused_forks(stats, limit, &limits));
    Ok(RunReport {
        exit: ended.exit,
        limit,
        runtime_ms: u64::try_from(talk.runtime.as_millis()).unwrap_or(u64::MAX),
        cpu_ms: ended.cpu_ms,
        peak_memory_kb,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
        limits,
        layers: AppliedLayers {
            namespaces: isolated,
            landlock,
            landlock_abi,
            seccomp,
            cgroup: stats.is_some(),
            pids: pids_bound,
            memory: memory_bound,
        },
        warnings,
        helper: if helper.is_some() {
            HelperStart::Executed
        } else {
            HelperStart::Forked
        },
        timings: timings(&marks),
        connections: talk.connections,
    })
}

/// What the run is granted beyond the defaults, each checked against the policy's `[grants]`.
#[derive(Debug, Default)]
struct Granted {
    /// The `host:port` pairs the proxy admits (none: no proxy).
    hosts: Vec<HostPort>,
    /// Host sockets to bind, as (where the run sees it, the socket on the host, canonical).
    sockets: Vec<(PathBuf, PathBuf)>,
    /// Credential files to bind read-only, as (where the run sees it, under its home; the
    /// file on the host, canonical).
    credentials: Vec<(PathBuf, PathBuf)>,
}

/// Checks the profile's grants against the policy: a host or socket the policy does not list
/// is refused, naming the line that would allow it; a network grant needs the namespaces; a
/// socket must exist, be a socket and lie clear of toolsmith's own places; a credential file
/// (granted at approval) must lie under the home, exist, lie clear of toolsmith's own places,
/// and is bound only in the sandbox's own view.
fn check_grants(spec: &SandboxSpec, isolated: bool) -> Result<Granted, SandboxError> {
    let policy = &spec.policy;
    let mut granted = Granted::default();
    for host in &spec.profile.hosts {
        if !policy.grants.allows_host(host) {
            return Err(SandboxError::Refused(format!(
                "the run asks for the network host {host}, which the policy does not grant: {}",
                Grants::host_line(host, &policy.file)
            )));
        }
        if !granted.hosts.contains(host) {
            granted.hosts.push(host.clone());
        }
    }
    if !granted.hosts.is_empty() && !isolated {
        return Err(SandboxError::Refused(format!(
            "the run asks for network hosts, which go through toolsmith's proxy from the \
             sandbox's own network namespace, but there are no namespaces here ({})",
            namespaces_detail()
        )));
    }
    for socket in &spec.profile.host_sockets {
        if !socket.is_absolute() {
            return Err(SandboxError::Invalid(format!(
                "the host socket {} is not an absolute path",
                socket.display()
            )));
        }
        if !policy.grants.allows_socket(socket) {
            return Err(SandboxError::Refused(format!(
                "the run asks for the host socket {}, which the policy does not grant: {}",
                socket.display(),
                Grants::socket_line(socket, &policy.file)
            )));
        }
        if !isolated {
            return Err(SandboxError::Refused(
                "a host socket is bound into the sandbox's own view, but there are no \
                 namespaces here"
                    .into(),
            ));
        }
        let real = socket.canonicalize().map_err(|e| {
            SandboxError::Invalid(format!(
                "the host socket {} cannot be used: {e}",
                socket.display()
            ))
        })?;
        let is_socket = std::fs::metadata(&real)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
        if !is_socket {
            return Err(SandboxError::Invalid(format!(
                "{} is not a socket",
                socket.display()
            )));
        }
        // toolsmith's own control socket is never granted, whatever the policy says.
        if spec.own.covers(&real) {
            return Err(SandboxError::Refused(format!(
                "the host socket {} is one of toolsmith's own places; no run may reach it",
                socket.display()
            )));
        }
        granted.sockets.push((socket.clone(), real));
    }
    for (written, host) in &spec.credentials {
        let relative = written
            .strip_prefix("~/")
            .map(Path::new)
            .filter(|r| {
                r.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
            })
            .ok_or_else(|| {
                SandboxError::Invalid(format!(
                    "the credential {written} is not a path under the home directory (~/…)"
                ))
            })?;
        if !isolated {
            return Err(SandboxError::Refused(format!(
                "the credential {written} is bound into the sandbox's own view, but there are \
                 no namespaces here ({})",
                namespaces_detail()
            )));
        }
        let real = host.canonicalize().map_err(|e| {
            SandboxError::Invalid(format!(
                "the credential {written} ({}) cannot be used: {e}",
                host.display()
            ))
        })?;
        if spec.own.covers(&real) {
            return Err(SandboxError::Refused(format!(
                "the credential {written} ({}) is one of toolsmith's own places; no run may \
                 reach it",
                host.display()
            )));
        }
        granted
            .credentials
            .push((Path::new(mounts::WORK).join(relative), real));
    }
    Ok(granted)
}

/// The run's directories on the host, canonical: the workspace (when the profile grants
/// access to one) and the tool directory, both checked clear of toolsmith's own places.
fn host_dirs(spec: &SandboxSpec) -> Result<HostDirs, SandboxError> {
    let access = spec.profile.workspace;
    let workspace = match (&spec.workspace, access) {
        (Some(dir), WorkspaceAccess::Read | WorkspaceAccess::Write) => {
            Some(canonical_dir(dir, "workspace")?)
        }
        (None, WorkspaceAccess::Read | WorkspaceAccess::Write) => {
            return Err(SandboxError::Invalid(format!(
                "the profile grants {access} access to the workspace, but no workspace \
                 directory was given"
            )));
        }
        (_, WorkspaceAccess::None) => None,
    };
    let tool_dir = match &spec.tool_dir {
        Some(_) if spec.tool_files.is_some() => {
            return Err(SandboxError::Invalid(
                "both a tool directory and the tool's files were given: a run shows one".into(),
            ));
        }
        Some(dir) => Some(canonical_dir(dir, "tool directory")?),
        None => None,
    };
    // First of all: nothing of toolsmith's own may be shown to the run.
    spec.own.check(workspace.as_deref(), tool_dir.as_deref())?;
    let toolchains = toolchain_paths(spec)?;
    Ok(HostDirs {
        workspace,
        access,
        tool_dir,
        toolchains,
    })
}

/// The run's directories on the host, from [`host_dirs`].
struct HostDirs {
    workspace: Option<PathBuf>,
    access: WorkspaceAccess,
    tool_dir: Option<PathBuf>,
    /// The toolchains' paths, checked, each once.
    toolchains: Vec<PathBuf>,
}

/// The profile's toolchain paths, once each, after checking every toolchain: granted by the
/// policy's `[grants]`, shaped like its kind, the caller's or root's, never the home directory,
/// clear of toolsmith's own places.
fn toolchain_paths(spec: &SandboxSpec) -> Result<Vec<PathBuf>, SandboxError> {
    let toolchains = &spec.profile.toolchains;
    if toolchains.is_empty() {
        return Ok(Vec::new());
    }
    let uid = getuid();
    // The home directory as the account names it, and as the environment does.
    let homes: Vec<PathBuf> = User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.dir)
        .into_iter()
        .chain(std::env::var_os("HOME").map(PathBuf::from))
        .filter(|h| h.is_absolute() && h != Path::new("/"))
        .collect();
    let mut paths: Vec<PathBuf> = Vec::new();
    for t in toolchains {
        if let Some(why) = spec.policy.grants.toolchain_refusal(t, &spec.policy.file) {
            return Err(SandboxError::Refused(why));
        }
        let checked = if homes.is_empty() {
            toolchain::check(t, uid.as_raw(), None)
        } else {
            homes
                .iter()
                .try_for_each(|h| toolchain::check(t, uid.as_raw(), Some(h)))
        };
        checked.map_err(|why| {
            SandboxError::Refused(format!(
                "the {} toolchain of `{}` is refused: {why}",
                t.kind, t.program
            ))
        })?;
        for path in &t.paths {
            spec.own.check_toolchain(path)?;
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
    }
    Ok(paths)
}

/// The toolchains' variables and `PATH` (their `bin` directories first, then the system's),
/// set before the caller's explicit variables; a cache under the view's work directory goes to
/// `home`, the run's work directory wherever it is. Two toolchains setting one variable
/// differently are refused.
fn toolchain_env(spec: &SandboxSpec, home: &str) -> Result<Vec<(String, String)>, SandboxError> {
    let toolchains = &spec.profile.toolchains;
    if toolchains.is_empty() {
        return Ok(Vec::new());
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut env: Vec<(String, String)> = Vec::new();
    for t in toolchains {
        for dir in toolchain::bin_dirs(t) {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        for (name, value) in &t.env {
            let value = match value.strip_prefix(mounts::WORK) {
                Some(rest) if rest.starts_with('/') => format!("{home}{rest}"),
                _ => value.clone(),
            };
            match env.iter().find(|(n, _)| n == name) {
                Some((_, v)) if *v != value => {
                    return Err(SandboxError::Invalid(format!(
                        "two toolchains set {name} differently ({v} and {value}): give the \
                         tool one toolchain of each kind"
                    )));
                }
                Some(_) => {}
                None => env.push((name.clone(), value)),
            }
        }
    }
    let mut path: Vec<String> = Vec::new();
    for dir in dirs {
        path.push(path_str(&dir)?);
    }
    path.push(super::env::PATH.to_owned());
    env.insert(0, ("PATH".to_owned(), path.join(":")));
    Ok(env)
}

/// Why namespaces are unavailable, as the probe found it.
fn namespaces_detail() -> String {
    NAMESPACES
        .get()
        .map_or_else(|| "not probed".to_owned(), |ns| ns.detail.clone())
}

/// Refuses a run the policy requires a missing layer for: namespaces (when the run is not
/// isolated) or Landlock (when the kernel has none). The cgroup is refused where it is made.
fn refuse_missing_layers(policy: &SandboxPolicy, isolated: bool) -> Result<(), SandboxError> {
    if !isolated && policy.requires(Layer::Namespaces) {
        return Err(SandboxError::Refused(
            policy.refusal(Layer::Namespaces, &namespaces_detail()),
        ));
    }
    if policy.requires(Layer::Landlock) && host::landlock_abi().is_none() {
        let why = "this kernel offers no Landlock (`toolsmith doctor` says why)";
        return Err(SandboxError::Refused(policy.refusal(Layer::Landlock, why)));
    }
    Ok(())
}

/// The run's cgroup: a delegated cgroup v2 where there is one; for root without it, the
/// cgroup v1 fallback (only a cgroup bounds root's processes); else none, with a warning
/// where that leaves the pids limit unenforced. Refused when the policy requires a cgroup.
fn run_cgroup(
    limits: &Limits,
    policy: &SandboxPolicy,
    root: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<RunCgroup>, SandboxError> {
    match limits::cgroup_available().and_then(|()| RunCgroup::create(limits, policy.cpus)) {
        Ok(cgroup) => Ok(Some(cgroup)),
        Err(why) if policy.requires(Layer::Cgroup) => {
            Err(SandboxError::Refused(policy.refusal(Layer::Cgroup, &why)))
        }
        // Root is exempt from RLIMIT_NPROC: only a cgroup bounds its processes.
        Err(_) if root => match RunCgroup::create_v1(limits) {
            Ok((cgroup, notes)) => {
                warnings.extend(notes);
                Ok(Some(cgroup))
            }
            Err(why) => {
                warnings.push(format!(
                    "the pids limit is not enforced: the kernel exempts uid 0 from \
                     RLIMIT_NPROC, there is no delegated cgroup v2, and the cgroup v1 \
                     fallback is unavailable ({why}); run as another user, or under a \
                     systemd unit with Delegate=yes"
                ));
                Ok(None)
            }
        },
        Err(_) => Ok(None),
    }
}

/// The encoded request for the helper, and the warning the view carries.
struct Request {
    bytes: Vec<u8>,
    /// Without namespaces: what is not guarded.
    warning: Option<String>,
}

/// The request for the helper: the view (a planned mount namespace, or the host with a
/// scratch directory, which is returned to be removed after the run), the Landlock rules,
/// the environment, the limits and the layers required.
fn request(
    spec: &SandboxSpec,
    dirs: &HostDirs,
    granted: &Granted,
    limits: &Limits,
    cgroup: Option<&RunCgroup>,
    isolated: bool,
) -> Result<(Request, Option<Scratch>), SandboxError> {
    let policy = &spec.policy;
    let (passwd, group) = identity().clone();
    let inputs = mounts::Inputs {
        workspace: dirs.workspace.as_deref().map(|w| (w, dirs.access)),
        tool_dir: dirs.tool_dir.as_deref(),
        tool_files: spec.tool_files.as_ref(),
        scratch_mb: limits.file_size_mb,
        passwd,
        group,
        host_sockets: &granted.sockets,
        credentials: &granted.credentials,
        toolchains: dirs.toolchains.clone(),
    };
    let mut scratch = None;
    let mut warning = None;
    let (view, rules, home, tmpdir) = if isolated {
        let plan = mounts::plan(&inputs, &mounts::inspect);
        let rules = mounts::landlock_rules(&plan);
        (
            View::Isolated(plan),
            rules,
            mounts::WORK.into(),
            mounts::TMP.into(),
        )
    } else {
        let dir = Scratch::create()?;
        let rules = mounts::host_rules(&inputs, &mounts::inspect, &dir.path);
        let cwd = dirs.workspace.clone().unwrap_or_else(|| dir.path.clone());
        let home = path_str(&dir.path)?;
        let tmp = path_str(&dir.path.join("tmp"))?;
        scratch = Some(dir);
        warning = Some(format!(
            "no namespaces ({}): {}",
            namespaces_detail(),
            super::policy::WITHOUT_NAMESPACES
        ));
        (View::Host { cwd }, rules, home, tmp)
    };
    let host_env = |n: &str| std::env::var(n).ok();
    let mut explicit = toolchain_env(spec, &home)?;
    explicit.extend(spec.env.iter().cloned());
    let mut env = super::env::environment(&host_env, &home, &tmpdir, &explicit)
        .map_err(SandboxError::Invalid)?;
    let network = !granted.hosts.is_empty();
    if network {
        // The package indexes the caller's package managers are configured with, when granted;
        // then the proxy's address, which nothing else may replace.
        let extra = super::env::index_variables(&host_env, &granted.hosts);
        let proxy = proxy::environment();
        env.retain(|(n, _)| {
            !extra.iter().chain(&proxy).any(|(e, _)| e == n) && !n.eq_ignore_ascii_case("no_proxy")
        });
        env.extend(extra);
        env.extend(proxy);
    }
    let (sockets, files) = match (isolated, network) {
        (false, _) => (seccomp::Sockets::None, seccomp::Files::Host),
        (true, false) => (seccomp::Sockets::Unix, seccomp::Files::View),
        (true, true) => (seccomp::Sockets::UnixAndTcp, seccomp::Files::View),
    };
    let request = HelperSpec {
        argv: spec.command.clone(),
        env,
        view,
        landlock: rules,
        limits: *limits,
        cgroup_limits: cgroup.map(RunCgroup::bounds).unwrap_or_default(),
        cgroup_join: cgroup.map(RunCgroup::procs).unwrap_or_default(),
        required: Required {
            landlock: policy.requires(Layer::Landlock),
            seccomp: policy.requires(Layer::Seccomp),
            allow_partial_landlock: policy.allow_partial_landlock,
        },
        seccomp: seccomp::packed(sockets, files),
        proxy: network.then_some(ProxyPlan { port: proxy::PORT }),
    };
    let bytes = serde_json::to_vec(&request).map_err(|e| {
        SandboxError::Invalid(format!(
            "the request cannot be encoded: {e} (paths must be UTF-8)"
        ))
    })?;
    Ok((Request { bytes, warning }, scratch))
}

/// What the parent saw of the helper: what it read, how the helper ended, how long it ran,
/// and the connections its proxy served.
struct Conversation {
    outcome: Outcome,
    /// How the helper ended; `None` when it had reported pid 1's end and was left to finish
    /// on its own (see [`Helper::reap_later`]).
    status: Option<ExitStatus>,
    runtime: Duration,
    connections: Vec<Connection>,
}

/// Starts the helper, feeds it the request, watches the run to its end and reaps the helper.
fn converse(
    helper: Option<&Path>,
    stdin: Stdin,
    request: &[u8],
    limits: &Limits,
    cgroup: Option<&RunCgroup>,
    hosts: &[HostPort],
) -> Result<Conversation, SandboxError> {
    let started = Instant::now();
    let channel = if hosts.is_empty() {
        None
    } else {
        Some(proxy::channel().map_err(|source| SandboxError::Io {
            what: "creating the proxy's channel to the helper".into(),
            source,
        })?)
    };
    let (mut child, pipes) = spawn(helper, stdin, channel.as_ref())?;
    // The proxy's thread starts only once the helper is started: a forked helper needs this
    // process single-threaded when it forks (`single_threaded` was asked before), and an
    // executed one never shares a thread's state. The thread waits for the listener the
    // helper's supervisor sends.
    let proxy = match channel {
        Some((ours, theirs)) => {
            drop(theirs);
            Some(
                Proxy::start(ours, hosts.to_vec()).map_err(|source| SandboxError::Io {
                    what: "starting the proxy".into(),
                    source,
                })?,
            )
        }
        None => None,
    };
    // A helper that dies before reading says why on the report pipe; a failed write is not
    // the error to show.
    let _ = std::fs::File::from(pipes.request).write_all(request);

    let cap = usize::try_from(limits.output_kb)
        .unwrap_or(usize::MAX)
        .saturating_mul(1024);
    let outputs = [pipes.stdout, pipes.stderr];
    let outcome = watch(&child, outputs, pipes.report, cap, limits.wall_s, cgroup)?;
    let runtime = started.elapsed();
    // The run is over: pid 1's end was reported (or the helper failed) and every output and
    // the report are drained. Whatever ran inside died with pid 1's namespace, so the proxy
    // stops now, not when the helper is reaped (which may be later, by another run).
    let connections = proxy.map(Proxy::finish).unwrap_or_default();
    let reported = outcome
        .messages
        .iter()
        .any(|m| matches!(m, Message::Exited { .. }));
    let status = if reported {
        child.reap_later()
    } else {
        Some(child.wait().map_err(|source| SandboxError::Io {
            what: "waiting for the sandbox helper".into(),
            source,
        })?)
    };
    Ok(Conversation {
        outcome,
        status,
        runtime,
        connections,
    })
}

/// What the helper reported: the layers in place, how pid 1 ended, and the marks of both.
#[derive(Debug, Default, PartialEq)]
struct Reports {
    /// Landlock's state, its ABI, and whether seccomp is installed.
    confined: Option<(Enforcement, Option<u32>, bool)>,
    /// How pid 1 ended, its peak resident set (KiB) and CPU time (µs).
    exited: Option<(Exit, u64, u64)>,
    pid1: Option<Pid1Marks>,
    supervisor: Option<SupervisorMarks>,
}

/// Reads the helper's messages in order; the first failure is the run's error (an exec that
/// failed names the command).
fn read_reports(messages: Vec<Message>, command: &[String]) -> Result<Reports, SandboxError> {
    let mut reports = Reports::default();
    for message in messages {
        match message {
            Message::Failed {
                step: Step::Exec,
                errno,
                detail,
            } => {
                return Err(SandboxError::Exec {
                    command: command.first().cloned().unwrap_or_default(),
                    errno: errno.unwrap_or(libc::ENOENT),
                    detail,
                });
            }
            Message::Failed {
                step,
                errno,
                detail,
            } => {
                return Err(SandboxError::Setup {
                    step,
                    errno,
                    detail,
                });
            }
            Message::Confined {
                landlock,
                landlock_abi,
                seccomp,
                marks,
            } => {
                reports.confined = Some((landlock, landlock_abi, seccomp));
                reports.pid1 = Some(marks);
            }
            Message::Exited {
                exit,
                maxrss_kb,
                cpu_us,
                marks,
            } => {
                reports.exited = Some((exit, maxrss_kb, cpu_us));
                reports.supervisor = Some(marks);
            }
        }
    }
    Ok(reports)
}

/// How the command ended, with its peak resident set (KiB) and CPU time (ms) when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ended {
    exit: Exit,
    maxrss_kb: Option<u64>,
    cpu_ms: Option<u64>,
}

/// How the command ended: as the supervisor reported, or, when it could not report, killed
/// along with it by a limit. `None`: the helper ended without a report, and nothing explains
/// why (a protocol fault).
fn ending(
    exited: Option<(Exit, u64, u64)>,
    killed_for: Option<LimitHit>,
    status: Option<ExitStatus>,
    stats: Option<CgroupStats>,
) -> Option<Ended> {
    let killed = Ended {
        exit: Exit::Signal(Signal::SIGKILL as i32),
        maxrss_kb: None,
        cpu_ms: None,
    };
    match exited {
        Some((exit, maxrss, cpu_us)) => Some(Ended {
            exit,
            maxrss_kb: Some(maxrss),
            cpu_ms: Some(cpu_us / 1000),
        }),
        // The supervisor itself was killed (the SIGKILL after the grace, or a SIGTERM before it
        // could block the signal): pid 1 died with it.
        None if killed_for.is_some() && status.and_then(|s| s.signal()).is_some() => Some(killed),
        // The out-of-memory killer took the supervisor (pid 1 followed it): the run's memory
        // was full of what no process holds, such as tmpfs pages. That is the memory limit,
        // not a fault of the helper.
        None if status.and_then(|s| s.signal()) == Some(Signal::SIGKILL as i32)
            && stats.is_some_and(|s| s.bounds.memory && s.ooms > 0) =>
        {
            Some(killed)
        }
        None => None,
    }
}

/// The last [`STDERR_TAIL`] bytes of stderr: what the limit classification looks at.
fn stderr_tail(output: &Output) -> Vec<u8> {
    output.bytes[output.bytes.len().saturating_sub(STDERR_TAIL)..].to_vec()
}

/// Warnings for the layers the policy let go: Landlock not enforced, seccomp not installed.
fn layer_warnings(landlock: Enforcement, seccomp: bool, isolated: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    if landlock == Enforcement::None {
        warnings.push(if isolated {
            "Landlock was not enforced (the policy does not require it): only the filesystem \
             view limits what the command can read and write"
                .into()
        } else {
            "Landlock was not enforced (the policy does not require it) and there are no \
             namespaces: only file permissions limit what the command can read and write"
                .into()
        });
    }
    if !seccomp {
        warnings.push(
            "the seccomp filters were not installed (the policy does not require them)".into(),
        );
    }
    warnings
}

/// Only one limit ended the run; a pids limit that refused forks on the way is worth a
/// warning when it was not that one.
fn refused_forks(
    stats: Option<CgroupStats>,
    limit: Option<LimitHit>,
    limits: &Limits,
) -> Option<String> {
    let stats = stats?;
    (stats.bounds.pids && stats.pids_max > 0 && limit != Some(LimitHit::Pids)).then(|| {
        format!(
            "the pids limit ({}) refused {} fork(s) or thread(s) during the run",
            limits.pids, stats.pids_max
        )
    })
}

/// A run's marks on the monotonic clock ([`now_ns`]), in nanoseconds.
#[derive(Debug, Clone, Copy, Default)]
struct RunMarks {
    /// [`run`] began.
    start: u64,
    /// The parent made the run's cgroup: from, to.
    cgroup: (u64, u64),
    /// The helper is about to be started.
    spawn: u64,
    /// The supervisor's marks, when it reported.
    supervisor: Option<SupervisorMarks>,
    /// pid 1's, when it reported.
    pid1: Option<Pid1Marks>,
    /// The helper reaped, the cgroup and the work directory removed.
    end: u64,
}

/// The parts of a run's time, from its marks: each part ends at its mark and starts at the
/// last mark reached before it, so the parts add up to the total.
fn timings(m: &RunMarks) -> Timings {
    let us = |ns: u64| ns / 1000;
    let (s, p) = (m.supervisor, m.pid1);
    // pid 1 closes the exec pipe by dying too: an exec only counts after `Confined`.
    let exec_done = p.and(s.and_then(|s| s.exec_done));
    let ends = [
        s.map(|s| s.spec_read),
        s.map(|s| s.joined),
        p.map(|p| p.started),
        p.map(|p| p.view),
        p.map(|p| p.prepared),
        p.map(|p| p.rlimits),
        p.map(|p| p.landlock),
        p.map(|p| p.exec),
        exec_done,
        s.map(|s| s.exited),
        Some(m.end),
    ];
    let mut last = us(m.spawn);
    let mut parts = [None; 11];
    for (part, end) in parts.iter_mut().zip(ends) {
        if let Some(end) = end.map(us) {
            *part = Some(end.saturating_sub(last));
            last = last.max(end);
        }
    }
    let [
        spawn,
        join,
        namespaces,
        view,
        process,
        rlimits,
        landlock,
        seccomp,
        exec,
        wait,
        teardown,
    ] = parts;
    let cgroup = us(m.cgroup.1).saturating_sub(us(m.cgroup.0));
    let limits = match (join, rlimits) {
        (None, None) => None,
        (join, rlimits) => Some(join.unwrap_or(0) + rlimits.unwrap_or(0)),
    };
    Timings {
        prepare_us: us(m.spawn)
            .saturating_sub(us(m.start))
            .saturating_sub(cgroup),
        spawn_us: spawn,
        limits_us: Some(cgroup + limits.unwrap_or(0)),
        namespaces_us: namespaces,
        view_us: view,
        process_us: process,
        landlock_us: landlock,
        seccomp_us: seccomp,
        exec_us: exec,
        wait_us: wait,
        teardown_us: teardown,
        total_us: last.saturating_sub(us(m.start)),
    }
}

fn canonical_dir(dir: &Path, what: &str) -> Result<PathBuf, SandboxError> {
    let canonical = dir.canonicalize().map_err(|e| {
        SandboxError::Invalid(format!("the {what} {} cannot be used: {e}", dir.display()))
    })?;
    if !canonical.is_dir() {
        return Err(SandboxError::Invalid(format!(
            "the {what} {} is not a directory",
            dir.display()
        )));
    }
    Ok(canonical)
}

fn path_str(path: &Path) -> Result<String, SandboxError> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| SandboxError::Invalid(format!("{} is not UTF-8", path.display())))
}

/// The view's `/etc/passwd` and `/etc/group`: the caller alone. Looked up once per process:
/// the name service (nscd, `/etc/passwd`, LDAP…) costs more than the rest of a run's planning.
fn identity() -> &'static (String, String) {
    static IDENTITY: OnceLock<(String, String)> = OnceLock::new();
    IDENTITY.get_or_init(look_up_identity)
}

fn look_up_identity() -> (String, String) {
    let (uid, gid) = (getuid(), getgid());
    // A name with a colon or newline would corrupt the file: such names are replaced.
    let clean = |name: String| -> Option<String> {
        (!name.is_empty() && !name.contains([':', '\n'])).then_some(name)
    };
    let user = User::from_uid(uid)
        .ok()
        .flatten()
        .and_then(|u| clean(u.name))
        .unwrap_or_else(|| "sandbox".into());
    let group = Group::from_gid(gid)
        .ok()
        .flatten()
        .and_then(|g| clean(g.name))
        .unwrap_or_else(|| "sandbox".into());
    (
        format!("{user}:x:{uid}:{gid}:{user}:{}:/bin/sh\n", mounts::WORK),
        format!("{group}:x:{gid}:\n"),
    )
}

/// A host work directory for runs without namespaces, removed afterwards.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn create() -> Result<Scratch, SandboxError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("toolsmith-run-{}-{n}", std::process::id()));
        let io = |source| SandboxError::Io {
            what: format!("creating the work directory {}", path.display()),
            source,
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(io)?;
        let scratch = Scratch { path };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(scratch.path.join("tmp"))
            .map_err(|source| SandboxError::Io {
                what: format!("creating {}/tmp", scratch.path.display()),
                source,
            })?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // std's remove_dir_all does not follow symlinks the command may have planted.
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), "could not remove a run's work directory: {e}");
        }
    }
}

/// The started helper, reaped on drop if nobody waited for it.
struct Helper {
    pid: Pid,
    reaped: bool,
}

/// Helpers that had reported their run's end and were still ending when the run returned:
/// reaped by a later run (or, when the caller exits first, by whoever inherits them).
static LINGERING: std::sync::Mutex<Vec<Pid>> = std::sync::Mutex::new(Vec::new());

/// Reaps the lingering helpers that have ended.
fn reap_lingering() {
    let Ok(mut lingering) = LINGERING.lock() else {
        return;
    };
    lingering.retain(|pid| {
        // SAFETY: waitpid on our own child, without a status pointer.
        let ret = unsafe { libc::waitpid(pid.as_raw(), std::ptr::null_mut(), libc::WNOHANG) };
        ret == 0
    });
}

impl Helper {
    /// For a helper that has reported pid 1's end, closed its pipes and left the run's cgroup
    /// (pid 1 alone joined it): its status if it has ended already; else it is left to finish
    /// tearing down its memory and the namespaces on its own, off this run's path, and reaped
    /// by a later run. Its pid stays ours (a zombie's pid is never reused), so nothing else can
    /// be signalled by mistake.
    fn reap_later(&mut self) -> Option<ExitStatus> {
        let mut status = 0;
        // SAFETY: waitpid on our own child, with a valid pointer to an int.
        let ret = unsafe { libc::waitpid(self.pid.as_raw(), &raw mut status, libc::WNOHANG) };
        self.reaped = true;
        if ret == self.pid.as_raw() {
            return Some(ExitStatus::from_raw(status));
        }
        if ret == 0
            && let Ok(mut lingering) = LINGERING.lock()
        {
            lingering.push(self.pid);
        }
        None
    }

    /// `SIGKILL`, while it is not reaped (its pid is still its own).
    fn kill(&self) {
        if !self.reaped {
            let _ = kill(self.pid, Signal::SIGKILL);
        }
    }

    /// Waits for it to end.
    fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let mut status = 0;
        loop {
            // SAFETY: waitpid on our own child, with a valid pointer to an int.
            let ret = unsafe { libc::waitpid(self.pid.as_raw(), &raw mut status, 0) };
            if ret == self.pid.as_raw() {
                self.reaped = true;
                return Ok(ExitStatus::from_raw(status));
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.wait();
        }
    }
}

/// Forks the helper (this process must be single-threaded): the child places `placed` at
/// their descriptors, closes every other one, takes default signal dispositions, an empty
/// mask and an empty environment, as a fresh `posix_spawn` would give it, serves the request
/// and exits without running anything of this process's exit path (no buffer is flushed
/// twice). `ours` are the parent's ends, which the child must not keep: a request pipe whose
/// write end it held would never end.
fn fork_helper(
    stdin: Stdin,
    placed: &[(OwnedFd, RawFd)],
    ours: &[RawFd],
    args: &[String],
) -> Result<Pid, SandboxError> {
    let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    // SAFETY: the caller checked that this process is single-threaded, so the child may run
    // any code the parent could; it leaves only through `_exit`.
    match unsafe { nix::unistd::fork() } {
        Err(e) => Err(SandboxError::Spawn {
            helper: PathBuf::from("(forked)"),
            source: e.into(),
        }),
        Ok(nix::unistd::ForkResult::Parent { child }) => Ok(child),
        Ok(nix::unistd::ForkResult::Child) => {
            let code = if become_helper(stdin, placed, ours) {
                super::child::serve(&args)
            } else {
                super::child::SETUP_FAILED
            };
            // SAFETY: ends this process at once, as an exec'ed helper's exit would.
            unsafe { libc::_exit(i32::from(code)) }
        }
    }
}

/// In the forked child: the descriptors, signals and environment a spawned helper starts
/// with. False when one could not be set (the helper then exits 125 without a report, and
/// the parent says the helper ended without one).
fn become_helper(stdin: Stdin, placed: &[(OwnedFd, RawFd)], ours: &[RawFd]) -> bool {
    // SAFETY: plain system calls on descriptors, signal dispositions and the environment of
    // this single-threaded child; every pointer is a valid NUL-terminated string or set.
    unsafe {
        if stdin == Stdin::Null || ours.contains(&0) {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
            if null < 0 || (null != 0 && libc::dup2(null, 0) != 0) {
                return false;
            }
        }
        for (fd, at) in placed {
            if libc::dup2(fd.as_raw_fd(), *at) != *at {
                return false;
            }
        }
        // Everything above the placed descriptors goes, the parent's ends among them (a fork
        // inherits every descriptor, close-on-exec or not).
        let last = placed.iter().map(|(_, at)| *at).max().unwrap_or(REPORT_FD);
        let first_free = libc::c_uint::try_from(last + 1).unwrap_or(libc::c_uint::MAX);
        if libc::syscall(libc::SYS_close_range, first_free, libc::c_uint::MAX, 0) != 0 {
            return false;
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
        // SIGKILL and SIGSTOP refuse a disposition; every other returns to its default.
        for signal in 1..=libc::SIGRTMAX() {
            libc::signal(signal, libc::SIG_DFL);
        }
        libc::clearenv() == 0
    }
}

/// The parent's ends of the helper's pipes.
struct Pipes {
    request: OwnedFd,
    report: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// Descriptor numbers the helper finds its request and report pipes at, and the proxy's
/// channel (with a network grant).
const REQUEST_FD: RawFd = 3;
const REPORT_FD: RawFd = 4;
const PROXY_FD: RawFd = 5;

/// Whether this process has a single thread, read from `/proc/self/stat`: only then may it
/// fork and go on running Rust code in the child (after a fork of a multi-threaded process,
/// only async-signal-safe calls are allowed until `execve`). Unknown counts as no.
fn single_threaded() -> bool {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return false;
    };
    // The fields after the command name, which is in parentheses and may hold anything;
    // `num_threads` is the 20th field, the 18th after the name.
    stat.rsplit_once(')')
        .and_then(|(_, fields)| fields.split_ascii_whitespace().nth(17))
        == Some("1")
}

/// Starts the helper with its stdout and stderr and the request and report pipes at
/// descriptors 1 to 4 (and the helper's end of the proxy's channel, `proxy_channel`'s second,
/// at 5), an empty environment, default signal dispositions and mask: executed
/// from `helper` with `posix_spawn` (glibc's is a `vfork`: nothing of a large parent, such as
/// the daemon, is copied), or, when `helper` is `None`, forked from this single-threaded
/// process and run in place, which saves the helper's `execve` and start-up. The helper ties
/// its life to this thread itself (a parent-death signal, armed first thing, then a check
/// that this process is still its parent).
fn spawn(
    helper: Option<&Path>,
    stdin: Stdin,
    proxy_channel: Option<&(OwnedFd, OwnedFd)>,
) -> Result<(Helper, Pipes), SandboxError> {
    let io = |what: String, source: std::io::Error| SandboxError::Io { what, source };
    let pipe = |what: &str| {
        pipe2(OFlag::O_CLOEXEC).map_err(|e| io(format!("creating the {what} pipe"), e.into()))
    };
    // The child's ends are moved to 5 and up, so that placing them at 1 to 4 never overwrites
    // one still to be placed (a parent with closed standard descriptors gets low ones).
    let high = |fd: OwnedFd| -> Result<OwnedFd, SandboxError> {
        if fd.as_raw_fd() > PROXY_FD {
            return Ok(fd);
        }
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(PROXY_FD + 1))
            // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
            .map(|new| unsafe { OwnedFd::from_raw_fd(new) })
            .map_err(|e| {
                io(
                    "moving a pipe above the helper's descriptors".into(),
                    e.into(),
                )
            })
    };
    let (request_read, request_write) = pipe("request")?;
    let (report_read, report_write) = pipe("report")?;
    let (stdout_read, stdout_write) = pipe("stdout")?;
    let (stderr_read, stderr_write) = pipe("stderr")?;
    let mut placed = vec![
        (high(stdout_write)?, 1),
        (high(stderr_write)?, 2),
        (high(request_read)?, REQUEST_FD),
        (high(report_write)?, REPORT_FD),
    ];
    if let Some((_, theirs)) = proxy_channel {
        let copy = theirs
            .try_clone()
            .map_err(|e| io("duplicating the proxy's channel".into(), e))?;
        placed.push((high(copy)?, PROXY_FD));
    }
    // The helper's arguments, whichever way it starts: the request's and the report's
    // descriptors, this process's pid, and the proxy's channel when there is one.
    let mut args = vec![
        REQUEST_FD.to_string(),
        REPORT_FD.to_string(),
        std::process::id().to_string(),
    ];
    if proxy_channel.is_some() {
        args.push(PROXY_FD.to_string());
    }
    let pid = match helper {
        None => {
            let mut ours = vec![
                request_write.as_raw_fd(),
                report_read.as_raw_fd(),
                stdout_read.as_raw_fd(),
                stderr_read.as_raw_fd(),
            ];
            // The proxy's end stays the parent's alone: the proxy sees the channel hang up
            // when the helper's end closes without a listener.
            ours.extend(proxy_channel.map(|(ours, _)| ours.as_raw_fd()));
            fork_helper(stdin, &placed, &ours, &args)?
        }
        Some(helper) => exec_helper(helper, stdin, &placed, &args)?,
    };
    drop(placed);
    Ok((
        Helper { pid, reaped: false },
        Pipes {
            request: request_write,
            report: report_read,
            stdout: stdout_read,
            stderr: stderr_read,
        },
    ))
}

/// Starts `helper` with `posix_spawn`: `placed` at their descriptors, stdin `/dev/null`
/// unless inherited, an empty environment, default signal dispositions and mask.
fn exec_helper(
    helper: &Path,
    stdin: Stdin,
    placed: &[(OwnedFd, RawFd)],
    args: &[String],
) -> Result<Pid, SandboxError> {
    let io = |what: String, source: std::io::Error| SandboxError::Io { what, source };
    let c = |text: &str| {
        CString::new(text).map_err(|_| SandboxError::Invalid(format!("{text:?} contains NUL")))
    };
    let program = CString::new(helper.as_os_str().as_bytes()).map_err(|_| {
        SandboxError::Invalid(format!("the helper path {} contains NUL", helper.display()))
    })?;
    let args = std::iter::once(HELPER_ARG0)
        .chain(args.iter().map(String::as_str))
        .map(c)
        .collect::<Result<Vec<_>, _>>()?;
    let mut argv: Vec<*mut libc::c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let envp: [*mut libc::c_char; 1] = [std::ptr::null_mut()];
    let dev_null = c"/dev/null";
    let spawned = {
        let failed = |what: &str, ret: libc::c_int| {
            io(
                format!("preparing the sandbox helper's start ({what})"),
                std::io::Error::from_raw_os_error(ret),
            )
        };
        // SAFETY: the file actions and attributes are initialised before use and destroyed on
        // every path; every pointer passed lives until posix_spawn returns (argv and envp are
        // NULL-terminated arrays of NUL-terminated strings); the descriptors are ours.
        unsafe {
            let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
            let mut attributes: libc::posix_spawnattr_t = std::mem::zeroed();
            let ret = libc::posix_spawn_file_actions_init(&raw mut actions);
            if ret != 0 {
                return Err(failed("file actions", ret));
            }
            let ret = libc::posix_spawnattr_init(&raw mut attributes);
            if ret != 0 {
                libc::posix_spawn_file_actions_destroy(&raw mut actions);
                return Err(failed("attributes", ret));
            }
            let mut result = 0;
            if stdin == Stdin::Null {
                result |= libc::posix_spawn_file_actions_addopen(
                    &raw mut actions,
                    0,
                    dev_null.as_ptr(),
                    libc::O_RDONLY,
                    0,
                );
            }
            for (fd, at) in placed {
                result |=
                    libc::posix_spawn_file_actions_adddup2(&raw mut actions, fd.as_raw_fd(), *at);
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut none);
            libc::sigfillset(&raw mut all);
            // A mask or an ignored signal (SIGPIPE, by Rust) would pass to the helper: none does.
            let flags = libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF;
            result |= libc::posix_spawnattr_setflags(
                &raw mut attributes,
                libc::c_short::try_from(flags).unwrap_or(0),
            );
            result |= libc::posix_spawnattr_setsigmask(&raw mut attributes, &raw const none);
            result |= libc::posix_spawnattr_setsigdefault(&raw mut attributes, &raw const all);
            let mut pid: libc::pid_t = 0;
            let ret = if result != 0 {
                result
            } else {
                libc::posix_spawn(
                    &raw mut pid,
                    program.as_ptr(),
                    &raw const actions,
                    &raw const attributes,
                    argv.as_ptr(),
                    envp.as_ptr(),
                )
            };
            libc::posix_spawnattr_destroy(&raw mut attributes);
            libc::posix_spawn_file_actions_destroy(&raw mut actions);
            if ret == 0 { Ok(pid) } else { Err(ret) }
        }
    };
    spawned
        .map(Pid::from_raw)
        .map_err(|ret| SandboxError::Spawn {
            helper: helper.to_path_buf(),
            source: std::io::Error::from_raw_os_error(ret),
        })
}

/// Output kept up to a cap.
struct Capture {
    output: Output,
    cap: usize,
}

impl Capture {
    fn new(cap: usize) -> Self {
        Capture {
            output: Output::default(),
            cap,
        }
    }

    /// Keeps what fits; returns whether the stream went over the cap.
    fn push(&mut self, data: &[u8]) -> bool {
        let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
        self.output.total_bytes = self.output.total_bytes.saturating_add(len);
        let room = self.cap.saturating_sub(self.output.bytes.len());
        self.output
            .bytes
            .extend_from_slice(&data[..room.min(data.len())]);
        if data.len() > room {
            self.output.truncated = true;
        }
        self.output.truncated
    }
}

/// What watching a run produced.
struct Outcome {
    stdout: Output,
    stderr: Output,
    messages: Vec<Message>,
    killed_for: Option<LimitHit>,
    warnings: Vec<String>,
}

/// One of the pipes read while the run goes on.
enum Source {
    Stdout,
    Stderr,
    Report,
}

/// Reads stdout, stderr and the report pipe until the supervisor is gone, enforcing the wall
/// time and the output cap.
fn watch(
    child: &Helper,
    [stdout, stderr]: [OwnedFd; 2],
    report: OwnedFd,
    cap: usize,
    wall_s: u32,
    cgroup: Option<&RunCgroup>,
) -> Result<Outcome, SandboxError> {
    let io = |what: &str, source: std::io::Error| SandboxError::Io {
        what: what.into(),
        source,
    };
    let helper = child.pid;
    let mut stdout_pipe = Some(stdout);
    let mut stderr_pipe = Some(stderr);
    let mut report_pipe = Some(report);
    let (mut stdout, mut stderr) = (Capture::new(cap), Capture::new(cap));
    let mut report_buf: Vec<u8> = Vec::new();
    let mut messages = Vec::new();
    let mut warnings = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(u64::from(wall_s));
    let mut stop = Stop {
        helper,
        cgroup,
        killed_for: None,
        terminated_at: None,
        sigkilled: false,
    };
    let mut report_closed_at: Option<Instant> = None;
    let mut buf = vec![0u8; 64 * 1024];

    loop {
        if stdout_pipe.is_none() && stderr_pipe.is_none() && report_pipe.is_none() {
            break;
        }
        let now = Instant::now();
        if let Some(closed) = report_closed_at
            && now >= closed + DRAIN_GRACE
        {
            warnings.push(
                "a process outlived the run and kept its output open; the rest of its output \
                 was not read"
                    .into(),
            );
            break;
        }
        if now >= deadline {
            stop.terminate(LimitHit::Wall);
        }
        if let Some(at) = stop.terminated_at
            && !stop.sigkilled
            && now >= at + KILL_GRACE
        {
            // pid 1's parent-death signal takes the namespace down with the supervisor.
            child.kill();
            stop.sigkilled = true;
        }
        let mut wake = Vec::new();
        if stop.killed_for.is_none() {
            wake.push(deadline);
        }
        if let (Some(at), false) = (stop.terminated_at, stop.sigkilled) {
            wake.push(at + KILL_GRACE);
        }
        if let Some(closed) = report_closed_at {
            wake.push(closed + DRAIN_GRACE);
        }
        let timeout = match wake.into_iter().min() {
            Some(at) => {
                let left = at.saturating_duration_since(now) + Duration::from_millis(1);
                PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX)
            }
            None => PollTimeout::NONE,
        };

        let mut sources = Vec::new();
        let mut fds = Vec::new();
        for (pipe, source) in [
            (&stdout_pipe, Source::Stdout),
            (&stderr_pipe, Source::Stderr),
            (&report_pipe, Source::Report),
        ] {
            if let Some(fd) = pipe {
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
                sources.push(source);
            }
        }
        match poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(io("waiting for the sandboxed command's output", e.into())),
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|fd| fd.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        drop(fds);
        for (source, ready) in sources.into_iter().zip(ready) {
            if !ready {
                continue;
            }
            let pipe = match source {
                Source::Stdout => &mut stdout_pipe,
                Source::Stderr => &mut stderr_pipe,
                Source::Report => &mut report_pipe,
            };
            let n = match pipe.as_ref().map(|fd| read_some(fd, &mut buf)) {
                Some(Ok(n)) => n,
                Some(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Some(Err(e)) => return Err(io("reading from the sandbox", e)),
                None => continue,
            };
            if n == 0 {
                *pipe = None;
                if matches!(source, Source::Report) {
                    report_closed_at = Some(Instant::now());
                }
                continue;
            }
            let data = &buf[..n];
            let over = match source {
                Source::Stdout => stdout.push(data),
                Source::Stderr => stderr.push(data),
                Source::Report => {
                    report_buf.extend_from_slice(data);
                    while let Some(end) = report_buf.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = report_buf.drain(..=end).collect();
                        let message = serde_json::from_slice(&line).map_err(|e| {
                            SandboxError::Protocol(format!("sent an unreadable message ({e})"))
                        })?;
                        messages.push(message);
                    }
                    if report_buf.len() > MAX_MESSAGE_BYTES * 4 {
                        return Err(SandboxError::Protocol("sent an overlong message".into()));
                    }
                    false
                }
            };
            if over {
                stop.terminate(LimitHit::Output);
            }
        }
    }
    Ok(Outcome {
        stdout: stdout.output,
        stderr: stderr.output,
        messages,
        killed_for: stop.killed_for,
        warnings,
    })
}

/// Ending a run early.
struct Stop<'a> {
    helper: Pid,
    cgroup: Option<&'a RunCgroup>,
    killed_for: Option<LimitHit>,
    terminated_at: Option<Instant>,
    sigkilled: bool,
}

impl Stop<'_> {
    /// Asks the supervisor to kill pid 1 (and the cgroup to kill everything), once.
    fn terminate(&mut self, reason: LimitHit) {
        if self.killed_for.is_some() {
            return;
        }
        self.killed_for = Some(reason);
        // Not reaped yet, so the pid is still the helper's.
        let _ = kill(self.helper, Signal::SIGTERM);
        if let Some(cgroup) = self.cgroup {
            cgroup.kill();
        }
        self.terminated_at = Some(Instant::now());
    }
}

fn read_some(fd: &OwnedFd, buf: &mut [u8]) -> std::io::Result<usize> {
    nix::unistd::read(fd, buf).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two toolchains: their `bin` directories first on the `PATH`, in order, each once; their
    /// caches under the run's work directory wherever that is; a variable two of them set
    /// differently refused.
    #[test]
    fn toolchain_env_orders_the_path_and_rebases_caches() {
        use super::super::{Toolchain, ToolchainKind};
        let dir = tempfile::tempdir().expect("tmp");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir_all(d.join("bin")).expect("mkdir");
        }
        let tc = |path: &Path, env: &[(&str, &str)]| Toolchain {
            program: "x".into(),
            kind: ToolchainKind::Venv,
            paths: vec![path.to_path_buf()],
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        let mut spec = SandboxSpec::new(vec!["true".into()]);
        spec.profile.toolchains = vec![
            tc(&a, &[("CARGO_HOME", "/work/.cargo")]),
            tc(&b, &[]),
            tc(&a, &[("CARGO_HOME", "/work/.cargo")]),
        ];
        let env = toolchain_env(&spec, "/scratch/run-1").expect("env");
        let path = format!(
            "{}:{}:{}",
            a.join("bin").display(),
            b.join("bin").display(),
            super::super::env::PATH
        );
        assert_eq!(
            env,
            [
                ("PATH".to_owned(), path),
                ("CARGO_HOME".to_owned(), "/scratch/run-1/.cargo".to_owned()),
            ]
        );
        spec.profile
            .toolchains
            .push(tc(&b, &[("CARGO_HOME", "/elsewhere")]));
        let err = toolchain_env(&spec, "/work").expect_err("conflict");
        assert!(err.to_string().contains("CARGO_HOME"), "{err}");
        spec.profile.toolchains.clear();
        assert!(toolchain_env(&spec, "/work").expect("none").is_empty());
    }

    #[test]
    fn captures_keep_up_to_the_cap() {
        let mut c = Capture::new(5);
        assert!(!c.push(b"abc"));
        assert!(!c.push(b"de"));
        assert!(c.push(b"fgh"));
        assert_eq!(c.output.bytes, b"abcde");
        assert_eq!(c.output.total_bytes, 8);
        assert!(c.output.truncated);
    }

    #[test]
    fn timings_add_up() {
        let ms = |n: u64| n * 1_000_000;
        let whole = RunMarks {
            start: ms(100),
            cgroup: (ms(101), ms(103)),
            spawn: ms(104),
            supervisor: Some(SupervisorMarks {
                spec_read: ms(106),
                joined: ms(107),
                exec_done: Some(ms(116)),
                exited: ms(120),
            }),
            pid1: Some(Pid1Marks {
                started: ms(108),
                view: ms(111),
                prepared: ms(112),
                rlimits: ms(113),
                landlock: ms(114),
                exec: ms(115),
            }),
            end: ms(125),
        };
        let t = timings(&whole);
        assert_eq!(
            t.prepare_us, 2000,
            "4 ms before the spawn, 2 of them the cgroup"
        );
        assert_eq!(t.limits_us, Some(2000 + 1000 + 1000));
        assert_eq!(t.spawn_us, Some(2000));
        assert_eq!(t.namespaces_us, Some(1000));
        assert_eq!(t.view_us, Some(3000));
        assert_eq!(t.process_us, Some(1000));
        assert_eq!(t.landlock_us, Some(1000));
        assert_eq!(t.seccomp_us, Some(1000));
        assert_eq!(t.exec_us, Some(1000));
        assert_eq!(t.wait_us, Some(4000));
        assert_eq!(t.teardown_us, Some(5000));
        assert_eq!(t.total_us, 25_000);
        let parts = |t: &Timings| {
            t.prepare_us
                + [
                    t.spawn_us,
                    t.limits_us,
                    t.namespaces_us,
                    t.view_us,
                    t.process_us,
                    t.landlock_us,
                    t.seccomp_us,
                    t.exec_us,
                    t.wait_us,
                    t.teardown_us,
                ]
                .iter()
                .flatten()
                .sum::<u64>()
        };
        assert_eq!(parts(&t), t.total_us);
        // Killed with its supervisor after `Confined`: no exec, wait or supervisor marks past
        // pid 1's; the rest of the time is teardown's, and the parts still add up.
        let killed = RunMarks {
            supervisor: None,
            ..whole
        };
        let t = timings(&killed);
        assert_eq!((t.spawn_us, t.exec_us, t.wait_us), (None, None, None));
        assert_eq!(t.namespaces_us, Some(4000), "from the spawn to pid 1");
        assert_eq!(t.teardown_us, Some(10_000));
        assert_eq!(parts(&t), t.total_us);
    }

    #[test]
    fn a_run_without_a_command_or_a_granted_workspace_is_invalid() {
        let err = run_once(&SandboxSpec::new(vec![]), true).unwrap_err();
        assert!(
            matches!(&err, SandboxError::Invalid(m) if m == "no command given"),
            "{err}"
        );
        let mut spec = SandboxSpec::new(vec!["true".into()]);
        spec.profile.workspace = WorkspaceAccess::Read;
        let err = host_dirs(&spec).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|m| m.contains("no workspace directory was given")),
            "{err:?}"
        );
    }

    #[test]
    fn host_dirs_are_canonical_and_only_granted_workspaces_are_shown() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let mut spec = SandboxSpec::new(vec!["true".into()]);
        spec.workspace = Some(dir.path().join("."));
        spec.tool_dir = Some(dir.path().join("."));
        let dirs = host_dirs(&spec).unwrap();
        assert_eq!(dirs.workspace, None, "the profile grants no access");
        assert_eq!(dirs.tool_dir.as_deref(), Some(real.as_path()));
        spec.profile.workspace = WorkspaceAccess::Write;
        let dirs = host_dirs(&spec).unwrap();
        assert_eq!(dirs.workspace.as_deref(), Some(real.as_path()));
        spec.tool_dir = Some(dir.path().join("missing"));
        let err = host_dirs(&spec).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|m| m.contains("tool directory")),
            "{err:?}"
        );
    }

    #[test]
    fn a_policy_requiring_namespaces_refuses_a_run_without_them() {
        let mut policy = SandboxPolicy::default();
        policy.require.remove(&Layer::Landlock);
        assert!(refuse_missing_layers(&policy, false).is_ok());
        policy.require.insert(Layer::Namespaces);
        assert!(refuse_missing_layers(&policy, true).is_ok());
        let err = refuse_missing_layers(&policy, false).unwrap_err();
        assert!(matches!(err, SandboxError::Refused(_)), "{err}");
    }

    fn marks() -> (Pid1Marks, SupervisorMarks) {
        (
            Pid1Marks {
                started: 1,
                view: 2,
                prepared: 3,
                rlimits: 4,
                landlock: 5,
                exec: 6,
            },
            SupervisorMarks {
                spec_read: 1,
                joined: 2,
                exec_done: Some(7),
                exited: 8,
            },
        )
    }

    #[test]
    fn reports_are_read_in_order_and_the_first_failure_is_the_error() {
        let (pid1, supervisor) = marks();
        let confined = Message::Confined {
            landlock: Enforcement::Full,
            landlock_abi: Some(4),
            seccomp: true,
            marks: pid1,
        };
        let exited = Message::Exited {
            exit: Exit::Code(3),
            maxrss_kb: 2048,
            cpu_us: 5500,
            marks: supervisor,
        };
        let command = vec!["grep".to_owned(), "x".to_owned()];
        let reports = read_reports(vec![confined.clone(), exited.clone()], &command).unwrap();
        assert_eq!(
            reports,
            Reports {
                confined: Some((Enforcement::Full, Some(4), true)),
                exited: Some((Exit::Code(3), 2048, 5500)),
                pid1: Some(pid1),
                supervisor: Some(supervisor),
            }
        );
        let exec = Message::Failed {
            step: Step::Exec,
            errno: None,
            detail: "not found".into(),
        };
        let err = read_reports(vec![confined.clone(), exec, exited.clone()], &command).unwrap_err();
        assert!(
            matches!(&err, SandboxError::Exec { command, errno, .. }
                if command == "grep" && *errno == libc::ENOENT),
            "{err}"
        );
        let setup = Message::Failed {
            step: Step::Landlock,
            errno: Some(libc::EPERM),
            detail: "refused".into(),
        };
        let err = read_reports(vec![setup, exited], &command).unwrap_err();
        assert!(matches!(
            err,
            SandboxError::Setup {
                step: Step::Landlock,
                errno: Some(libc::EPERM),
                ..
            }
        ));
    }

    #[test]
    fn the_ending_comes_from_the_report_or_a_limit_that_killed_the_supervisor() {
        // Wait statuses as the kernel encodes them: exit code in the high byte, or the signal.
        let exited_0 = ExitStatus::from_raw(0);
        let sigkill = ExitStatus::from_raw(libc::SIGKILL);
        let killed = Some(Ended {
            exit: Exit::Signal(libc::SIGKILL),
            maxrss_kb: None,
            cpu_ms: None,
        });
        assert_eq!(
            ending(Some((Exit::Code(1), 300, 2999)), None, Some(exited_0), None),
            Some(Ended {
                exit: Exit::Code(1),
                maxrss_kb: Some(300),
                cpu_ms: Some(2),
            })
        );
        assert_eq!(
            ending(None, Some(LimitHit::Wall), Some(sigkill), None),
            killed
        );
        assert_eq!(
            ending(None, Some(LimitHit::Wall), Some(exited_0), None),
            None
        );
        let oom = CgroupStats {
            bounds: limits::CgroupBounds {
                memory: true,
                pids: true,
            },
            ooms: 1,
            ..CgroupStats::default()
        };
        assert_eq!(ending(None, None, Some(sigkill), Some(oom)), killed);
        assert_eq!(
            ending(None, None, Some(sigkill), Some(CgroupStats::default())),
            None
        );
        assert_eq!(
            ending(None, None, Some(sigkill), None),
            None,
            "a helper that died unexplained"
        );
    }

    #[test]
    fn layers_let_go_and_refused_forks_are_warned_about() {
        assert!(layer_warnings(Enforcement::Full, true, true).is_empty());
        assert!(layer_warnings(Enforcement::Partial, true, false).is_empty());
        let w = layer_warnings(Enforcement::None, false, true);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("only the filesystem view limits"), "{w:?}");
        assert!(w[1].contains("seccomp filters were not installed"), "{w:?}");
        let w = layer_warnings(Enforcement::None, true, false);
        assert!(w[0].contains("there are no namespaces"), "{w:?}");

        let limits = Limits {
            pids: 64,
            ..Limits::default()
        };
        let stats = CgroupStats {
            bounds: limits::CgroupBounds {
                memory: false,
                pids: true,
            },
            pids_max: 3,
            ..CgroupStats::default()
        };
        assert_eq!(
            refused_forks(Some(stats), None, &limits).as_deref(),
            Some("the pids limit (64) refused 3 fork(s) or thread(s) during the run")
        );
        assert_eq!(
            refused_forks(Some(stats), Some(LimitHit::Pids), &limits),
            None
        );
        assert_eq!(refused_forks(None, None, &limits), None);
        let unbound = CgroupStats {
            pids_max: 3,
            ..CgroupStats::default()
        };
        assert_eq!(refused_forks(Some(unbound), None, &limits), None);
    }

    #[test]
    fn passwd_names_only_the_caller() {
        let (passwd, group) = identity();
        assert_eq!(passwd.lines().count(), 1, "{passwd}");
        assert_eq!(
            identity(),
            &look_up_identity(),
            "the same after the first look-up"
        );
        assert!(passwd.contains(&format!(":{}:{}:", getuid(), getgid())));
        assert!(passwd.contains(":/work:"));
        assert_eq!(group.lines().count(), 1);
    }
}
