//! Resource limits: rlimits always, and a cgroup per run where one can be had: a cgroup v2
//! where a subtree is delegated to toolsmith (root, or a systemd unit with `Delegate=yes`),
//! else, running as root, per-run cgroups in the v1 `pids` and `memory` hierarchies of a hybrid
//! host. And, afterwards, which limit a run hit.
//!
//! Under rlimits, memory is `RLIMIT_DATA` (private writable memory: the heap, anonymous maps,
//! thread stacks — not address-space reservations, which runtimes make by gigabytes) and
//! processes are `RLIMIT_NPROC`, which counts only the sandbox's processes because the helper
//! is in a fresh user namespace. The kernel never applies `RLIMIT_NPROC` to uid 0, so a run as
//! root needs a cgroup for its pids limit (the report says when there is none). Under a cgroup
//! v2, `memory.max` (swap off), `pids.max` and `cpu.max` bound the whole run and `cgroup.kill`
//! ends it. The v1 fallback creates `toolsmith/run-…` beneath toolsmith's own cgroup of each
//! hierarchy (so that limits set above it, by a service manager or a test, still apply) with
//! `pids.max`, `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes`; v1 has no
//! `cgroup.kill`, so its members are killed one by one before the directory is removed, and
//! `toolsmith` itself goes too once no run of any toolsmith process is left in it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::profile::Limits;
use super::{Bound, Exit, LimitHit};
use crate::host::run_cgroup_owner as run_owner;

const MIB: u64 = 1024 * 1024;

/// Which limits a run's cgroup carries, so that rlimits leave them alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct CgroupBounds {
    /// Memory (`memory.max`, or `memory.limit_in_bytes` in v1).
    pub memory: bool,
    /// Processes and threads (`pids.max`).
    pub pids: bool,
}

/// The rlimits of a run: (resource, soft, hard). What a cgroup carries is left to it:
/// `RLIMIT_DATA` counts differently from the memory controller, and the cgroup counts better.
pub(crate) fn rlimits(limits: &Limits, cgroup: CgroupBounds) -> Vec<(Resource, u64, u64)> {
    let cpu = u64::from(limits.cpu_s);
    let mut plan = vec![
        // SIGXCPU at the soft limit, SIGKILL a second later for a process that ignores it.
        (Resource::RLIMIT_CPU, cpu, cpu + 1),
        (
            Resource::RLIMIT_FSIZE,
            u64::from(limits.file_size_mb) * MIB,
            u64::from(limits.file_size_mb) * MIB,
        ),
        (
            Resource::RLIMIT_NOFILE,
            u64::from(limits.open_files),
            u64::from(limits.open_files),
        ),
        // A core dump would be written by the host's core_pattern handler, outside the sandbox.
        (Resource::RLIMIT_CORE, 0, 0),
        (Resource::RLIMIT_RTPRIO, 0, 0),
    ];
    if !cgroup.memory {
        let memory = u64::from(limits.memory_mb) * MIB;
        plan.push((Resource::RLIMIT_DATA, memory, memory));
    }
    if !cgroup.pids {
        // The helper that supervises pid 1 is in the same user namespace and counts too.
        let pids = u64::from(limits.pids) + 1;
        plan.push((Resource::RLIMIT_NPROC, pids, pids));
    }
    plan
}

/// Sets the rlimits on this process, never above the current hard limits (raising one needs a
/// privilege the helper does not have, and lowering is the point).
pub(crate) fn apply_rlimits(plan: &[(Resource, u64, u64)]) -> Result<(), String> {
    for &(resource, soft, hard) in plan {
        let (_, current_hard) =
            getrlimit(resource).map_err(|e| format!("getrlimit({resource:?}): {e}"))?;
        let hard = hard.min(current_hard);
        let soft = soft.min(hard);
        setrlimit(resource, soft, hard)
            .map_err(|e| format!("setrlimit({resource:?}, {soft}, {hard}): {e}"))?;
    }
    Ok(())
}

/// What a run's cgroup counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CgroupStats {
    /// The limits the cgroup carried: only their counters are evidence.
    pub bounds: CgroupBounds,
    /// Peak memory, KiB: `memory.peak` (v2, Linux 5.19+) or `memory.max_usage_in_bytes` (v1).
    pub peak_kb: Option<u64>,
    /// Out-of-memory events: `oom` plus `oom_kill` of `memory.events` (v2); `oom_kill` plus
    /// `under_oom` of `memory.oom_control` (v1).
    pub ooms: u64,
    /// `pids.events`: forks refused at `pids.max`.
    pub pids_max: u64,
}

/// `/proc/self/mountinfo` and `/proc/self/cgroup`, read once per process for [`base`] and
/// [`v1_bases`] (three readings of each were a tenth of a run's preparation).
fn cgroup_files() -> &'static crate::host::CgroupFiles {
    static FILES: OnceLock<crate::host::CgroupFiles> = OnceLock::new();
    FILES.get_or_init(crate::host::CgroupFiles::read)
}

/// The delegated cgroup runs are created in, found (and prepared) once per process.
fn base() -> &'static Result<PathBuf, String> {
    static BASE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BASE.get_or_init(prepare_base)
}

/// Whether runs get a cgroup here, and if not why.
pub(crate) fn cgroup_available() -> Result<(), String> {
    base().as_ref().map(drop).map_err(Clone::clone)
}

/// Finds our own cgroup and makes it a parent of run cgroups: enabling controllers for children
/// needs a cgroup without processes of its own, so when toolsmith is alone in it (a unit with
/// `Delegate=yes`), it moves itself into a `supervisor` leaf first. A cgroup shared with other
/// processes (a login session) is left alone: rlimits are used instead.
fn prepare_base() -> Result<PathBuf, String> {
    let own = crate::host::own_cgroup_dir(cgroup_files()).map_err(|e| e.to_string())?;
    let read = |name: &str| fs::read_to_string(own.join(name)).unwrap_or_default();
    let controllers = read("cgroup.controllers");
    let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
    if !has("memory") || !has("pids") {
        return Err(format!(
            "cgroup {} offers no memory and pids controllers",
            own.display()
        ));
    }
    if nix::unistd::access(&own, nix::unistd::AccessFlags::W_OK).is_err() {
        return Err(format!(
            "cgroup {} is not delegated to this user: run toolsmithd as a systemd unit with \
             Delegate=yes",
            own.display()
        ));
    }
    let me = std::process::id().to_string();
    let procs = read("cgroup.procs");
    let others = procs
        .lines()
        .any(|p| p.trim() != me && !p.trim().is_empty());
    let wanted: Vec<&str> = ["memory", "pids", "cpu"]
        .into_iter()
        .filter(|c| has(c))
        .collect();
    let enabled = read("cgroup.subtree_control");
    let missing: Vec<String> = wanted
        .iter()
        .filter(|c| !enabled.split_whitespace().any(|x| x == **c))
        .map(|c| format!("+{c}"))
        .collect();
    if missing.is_empty() {
        return Ok(own);
    }
    let enable = || fs::write(own.join("cgroup.subtree_control"), missing.join(" "));
    match enable() {
        Ok(()) => return Ok(own),
        // EBUSY: the cgroup holds processes, ours at least.
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) && !others => {}
        Err(e) => {
            return Err(format!(
                "cannot enable {} in {}: {e}{}",
                missing.join(" "),
                own.display(),
                if others {
                    " (other processes share this cgroup: give toolsmith a cgroup of its own, \
                     e.g. a systemd unit with Delegate=yes)"
                } else {
                    ""
                }
            ));
        }
    }
    let leaf = own.join("supervisor");
    match fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", leaf.display())),
    }
    fs::write(leaf.join("cgroup.procs"), &me)
        .map_err(|e| format!("cannot move toolsmith into {}: {e}", leaf.display()))?;
    enable().map_err(|e| {
        format!(
            "cannot enable {} in {}: {e}",
            missing.join(" "),
            own.display()
        )
    })?;
    Ok(own)
}

/// The contents of `cpu.max` for `cpus` CPUs' worth of bandwidth.
pub(crate) fn cpu_max(cpus: u32) -> String {
    format!("{} 100000", u64::from(cpus.max(1)) * 100_000)
}

/// The name of the v1 cgroup run cgroups are made in, beneath toolsmith's own.
const V1_BASE: &str = "toolsmith";

/// The v1 hierarchies' bases (`<own cgroup>/toolsmith`), found and created once per process:
/// `pids`, then `memory`.
fn v1_bases() -> &'static [Result<PathBuf, String>; 2] {
    static BASES: OnceLock<[Result<PathBuf, String>; 2]> = OnceLock::new();
    BASES.get_or_init(|| [prepare_v1_base("pids"), prepare_v1_base("memory")])
}

/// The mount point of the v1 hierarchy holding `controller`, and the hierarchy's path mounted
/// there (`/` unless in a cgroup namespace or a bind mount), from `/proc/self/mountinfo`.
fn v1_mount(mountinfo: &str, controller: &str) -> Option<(String, String)> {
    mountinfo.lines().find_map(|line| {
        // Optional fields end at " - "; then the filesystem type, the source, the options.
        let (mount, fs) = line.split_once(" - ")?;
        let mut fs = fs.split(' ');
        if fs.next()? != "cgroup" {
            return None;
        }
        let options = fs.nth(1)?;
        if !options.split(',').any(|o| o == controller) {
            return None;
        }
        let mut fields = mount.split(' ').skip(3);
        let (root, point) = (fields.next()?, fields.next()?);
        Some((
            crate::host::unescape_mountinfo(root),
            crate::host::unescape_mountinfo(point),
        ))
    })
}

/// Our cgroup in the v1 hierarchy holding `controller`, from `/proc/self/cgroup` (`8:pids:/a`,
/// or `2:cpu,cpuacct:/a` for controllers mounted together).
fn v1_path(cgroups: &str, controller: &str) -> Option<String> {
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
        (list.split(',').any(|c| c == controller) && path.starts_with('/')).then(|| path.into())
    })
}

/// Our own directory in the v1 hierarchy holding `controller`.
fn v1_own_dir(mountinfo: &str, cgroups: &str, controller: &str) -> Result<PathBuf, String> {
    let (root, point) = v1_mount(mountinfo, controller)
        .ok_or_else(|| format!("no cgroup v1 hierarchy with the {controller} controller"))?;
    let path = v1_path(cgroups, controller)
        .ok_or_else(|| format!("/proc/self/cgroup names no {controller} cgroup"))?;
    let relative = if root == "/" {
        Some(path.as_str())
    } else {
        path.strip_prefix(root.as_str())
    };
    let relative = relative
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .ok_or_else(|| {
            format!("own {controller} cgroup {path} lies outside its mount at {point}")
        })?;
    Ok(Path::new(&point).join(relative.trim_start_matches('/')))
}

/// Creates `toolsmith` beneath our own cgroup of the v1 hierarchy holding `controller` (beneath
/// it, not at the hierarchy's root, so that limits set above toolsmith still apply), and
/// removes the empty run cgroups of toolsmith processes that died without removing theirs.
fn prepare_v1_base(controller: &str) -> Result<PathBuf, String> {
    let files = cgroup_files();
    for (text, file) in [
        (&files.mountinfo, "/proc/self/mountinfo"),
        (&files.cgroups, "/proc/self/cgroup"),
    ] {
        if text.is_empty() {
            return Err(format!("cannot read {file}"));
        }
    }
    let own = v1_own_dir(&files.mountinfo, &files.cgroups, controller)?;
    let base = own.join(V1_BASE);
    let limit = match controller {
        "pids" => "pids.max",
        _ => "memory.limit_in_bytes",
    };
    // Another toolsmith process removes the base once its last run is over (see
    // `RunCgroup::remove_v1_bases`): it may vanish between our making it and looking inside.
    let mut attempts = 0;
    loop {
        match fs::create_dir(&base) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
        }
        if base.join(limit).exists() {
            break;
        }
        if base.exists() || attempts >= 8 {
            return Err(format!("{} has no {limit}", base.display()));
        }
        attempts += 1;
    }
    if let Ok(entries) = fs::read_dir(&base) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let owner = name.to_str().and_then(run_owner);
            let dead = owner.is_some_and(|pid| {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                    == Err(nix::errno::Errno::ESRCH)
            });
            if dead {
                // Fails harmlessly on a cgroup that still has members.
                let _ = fs::remove_dir(entry.path());
            }
        }
    }
    Ok(base)
}

/// A fresh run cgroup name: `run-<pid>-<n>` (which [`run_owner`] reads, and the control socket
/// recognises in a peer's cgroups).
fn run_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("run-{}-{n}", std::process::id())
}

/// The contents of `pids.max` for a run: the supervising helper joins the cgroup too.
fn pids_max(limits: &Limits) -> String {
    (u64::from(limits.pids) + 1).to_string()
}

/// `memory.oom_control`'s out-of-memory evidence: `oom_kill` (Linux 4.13+) plus `under_oom`;
/// on an older kernel, `memory.failcnt` (the limit was reached).
fn v1_ooms(oom_control: &str, failcnt: &str) -> u64 {
    let has_kill = oom_control
        .lines()
        .any(|l| l.split_once(' ').is_some_and(|(k, _)| k == "oom_kill"));
    if has_kill {
        event(oom_control, "oom_kill") + event(oom_control, "under_oom")
    } else {
        failcnt.trim().parse().unwrap_or(0)
    }
}

/// Whether the host has swap in use (`/proc/swaps` lists a device or file).
fn has_swap() -> bool {
    fs::read_to_string("/proc/swaps").is_ok_and(|s| s.lines().count() > 1)
}

/// Sends `SIGKILL` to every member of a cgroup (v1 has no `cgroup.kill`).
fn kill_members(dir: &Path) {
    let mut members = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    if members.trim().is_empty() {
        members = fs::read_to_string(dir.join("tasks")).unwrap_or_default();
    }
    let pids: Vec<i32> = members
        .lines()
        .filter_map(|p| p.trim().parse::<i32>().ok())
        .filter(|&p| p > 0)
        .collect();
    for pid in pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Where a run's cgroup lives.
#[derive(Debug)]
enum Dirs {
    /// The delegated cgroup v2's child.
    V2(PathBuf),
    /// A child in each usable v1 hierarchy.
    V1 {
        pids: Option<PathBuf>,
        memory: Option<PathBuf>,
    },
}

/// One run's cgroup: created with the limits, killed and removed when dropped.
#[derive(Debug)]
pub(crate) struct RunCgroup {
    dirs: Dirs,
}

impl RunCgroup {
    /// Creates the run's cgroup under the delegated base, with its limits written.
    pub(crate) fn create(limits: &Limits, cpus: u32) -> Result<RunCgroup, String> {
        let base = base().as_ref().map_err(Clone::clone)?;
        let dir = base.join(run_name());
        fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let run = RunCgroup {
            dirs: Dirs::V2(dir.clone()),
        };
        let memory = u64::from(limits.memory_mb) * MIB;
        let mut files = vec![
            ("memory.max", memory.to_string()),
            ("pids.max", pids_max(limits)),
        ];
        if dir.join("memory.swap.max").exists() {
            files.push(("memory.swap.max", "0".into()));
        }
        if dir.join("cpu.max").exists() {
            files.push(("cpu.max", cpu_max(cpus)));
        }
        write_files(&dir, &files)?;
        Ok(run)
    }

    /// The fallback for root without a delegated cgroup v2: a run cgroup in the v1 `pids`
    /// hierarchy (`pids.max`) and one in the v1 `memory` hierarchy (`memory.limit_in_bytes`,
    /// and `memory.memsw.limit_in_bytes` so that swap does not extend it). Either one may be
    /// unusable (the warnings returned say why and what bounds that limit instead); an error
    /// when both are.
    pub(crate) fn create_v1(limits: &Limits) -> Result<(RunCgroup, Vec<String>), String> {
        let [pids_base, memory_base] = v1_bases();
        let name = run_name();
        let mut run = RunCgroup {
            dirs: Dirs::V1 {
                pids: None,
                memory: None,
            },
        };
        let mut warnings = Vec::new();
        let pids = pids_base.as_ref().map_err(Clone::clone).and_then(|base| {
            let dir = base.join(&name);
            make_run_dir(&dir, |_| Ok(vec![("pids.max", pids_max(limits))]))
        });
        let memory = memory_base.as_ref().map_err(Clone::clone).and_then(|base| {
            let dir = base.join(&name);
            let bytes = (u64::from(limits.memory_mb) * MIB).to_string();
            make_run_dir(&dir, |dir| {
                // memsw (memory plus swap) may never be below the memory limit: written second.
                let mut files = vec![("memory.limit_in_bytes", bytes.clone())];
                if dir.join("memory.memsw.limit_in_bytes").exists() {
                    files.push(("memory.memsw.limit_in_bytes", bytes.clone()));
                } else if has_swap() {
                    warnings.push(
                        "the cgroup v1 memory controller does not account swap (no \
                         memory.memsw.limit_in_bytes; boot with swapaccount=1): a run may \
                         swap beyond its memory limit"
                            .to_string(),
                    );
                }
                Ok(files)
            })
        });
        if let Dirs::V1 {
            pids: pids_dir,
            memory: memory_dir,
        } = &mut run.dirs
        {
            *pids_dir = pids.as_ref().ok().cloned();
            *memory_dir = memory.as_ref().ok().cloned();
        }
        match (pids, memory) {
            (Err(p), Err(m)) => return Err(format!("cgroup v1 pids: {p}; cgroup v1 memory: {m}")),
            (Err(why), Ok(_)) => warnings.push(format!(
                "the pids limit is not enforced: the kernel exempts uid 0 from RLIMIT_NPROC, \
                 there is no delegated cgroup v2, and the cgroup v1 pids controller cannot be \
                 used ({why})"
            )),
            (Ok(_), Err(why)) => warnings.push(format!(
                "memory is bounded by RLIMIT_DATA: there is no delegated cgroup v2, and the \
                 cgroup v1 memory controller cannot be used ({why})"
            )),
            (Ok(_), Ok(_)) => {}
        }
        Ok((run, warnings))
    }

    /// Which limits the cgroup carries.
    pub(crate) fn bounds(&self) -> CgroupBounds {
        match &self.dirs {
            Dirs::V2(_) => CgroupBounds {
                memory: true,
                pids: true,
            },
            Dirs::V1 { pids, memory } => CgroupBounds {
                memory: memory.is_some(),
                pids: pids.is_some(),
            },
        }
    }

    /// What bounds the run's pids and memory: (pids, memory). A limit the cgroup does not
    /// carry falls to its rlimit, except pids for root, which nothing bounds then.
    pub(crate) fn bound_by(cgroup: Option<&RunCgroup>, root: bool) -> (Bound, Bound) {
        let (version, carried) = match cgroup {
            Some(RunCgroup {
                dirs: Dirs::V2(_), ..
            }) => (
                Bound::CgroupV2,
                CgroupBounds {
                    memory: true,
                    pids: true,
                },
            ),
            Some(run) => (Bound::CgroupV1, run.bounds()),
            None => (Bound::Rlimit, CgroupBounds::default()),
        };
        let pids = match (carried.pids, root) {
            (true, _) => version,
            (false, true) => Bound::Nothing,
            (false, false) => Bound::Rlimit,
        };
        let memory = if carried.memory {
            version
        } else {
            Bound::Rlimit
        };
        (pids, memory)
    }

    fn dirs(&self) -> Vec<&Path> {
        match &self.dirs {
            Dirs::V2(dir) => vec![dir.as_path()],
            Dirs::V1 { pids, memory } => pids
                .iter()
                .chain(memory.iter())
                .map(PathBuf::as_path)
                .collect(),
        }
    }

    /// The files the helper writes itself (`0`) into, one per hierarchy: `cgroup.procs` in v2;
    /// in v1, `tasks`, which moves the writing thread alone. The helper is single-threaded, so
    /// that is the whole process, and the kernel then skips the global write lock
    /// (`cgroup_threadgroup_rwsem`) that `cgroup.procs` takes: that lock waits for an RCU grace
    /// period, 7–35 ms on a loaded host when no other cgroup move happened just before, where
    /// `tasks` costs about 0.1 ms (measured on Linux 6.18; a kernel that takes the lock for a
    /// thread moving itself too costs what `cgroup.procs` does, no more).
    pub(crate) fn procs(&self) -> Vec<PathBuf> {
        let file = match self.dirs {
            Dirs::V2(_) => "cgroup.procs",
            Dirs::V1 { .. } => "tasks",
        };
        self.dirs().iter().map(|d| d.join(file)).collect()
    }

    /// Kills every process in the cgroup (`cgroup.kill`, Linux 5.14+; else one by one).
    pub(crate) fn kill(&self) {
        match &self.dirs {
            Dirs::V2(dir) => {
                if fs::write(dir.join("cgroup.kill"), "1").is_err() {
                    kill_members(dir);
                }
            }
            Dirs::V1 { .. } => {
                for dir in self.dirs() {
                    kill_members(dir);
                }
            }
        }
    }

    /// What the cgroup counted.
    pub(crate) fn stats(&self) -> CgroupStats {
        let read = |dir: &Path, name: &str| fs::read_to_string(dir.join(name)).unwrap_or_default();
        let kb = |text: String| text.trim().parse::<u64>().ok().map(|b| b / 1024);
        match &self.dirs {
            Dirs::V2(dir) => {
                let memory = read(dir, "memory.events");
                CgroupStats {
                    bounds: self.bounds(),
                    peak_kb: kb(read(dir, "memory.peak")),
                    ooms: event(&memory, "oom") + event(&memory, "oom_kill"),
                    pids_max: event(&read(dir, "pids.events"), "max"),
                }
            }
            Dirs::V1 { pids, memory } => CgroupStats {
                bounds: self.bounds(),
                peak_kb: memory
                    .as_deref()
                    .and_then(|d| kb(read(d, "memory.max_usage_in_bytes"))),
                ooms: memory.as_deref().map_or(0, |d| {
                    v1_ooms(&read(d, "memory.oom_control"), &read(d, "memory.failcnt"))
                }),
                pids_max: pids
                    .as_deref()
                    .map_or(0, |d| event(&read(d, "pids.events"), "max")),
            },
        }
    }

    fn remove(&self) {
        // The killed processes leave the cgroup asynchronously; a few short retries suffice.
        // Without cgroup.kill (v1), members are killed again each round: a process that forked
        // while the list was read is caught by the next.
        let v1 = matches!(self.dirs, Dirs::V1 { .. });
        let rounds = if v1 { 100 } else { 50 };
        let mut left = self.dirs();
        for round in 0..rounds {
            if round == 0 || v1 {
                self.kill();
            }
            left.retain(|dir| match fs::remove_dir(dir) {
                Err(e) => e.raw_os_error() == Some(libc::EBUSY),
                Ok(()) => false,
            });
            if left.is_empty() {
                if v1 {
                    self.remove_v1_bases();
                }
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        for dir in left {
            tracing::warn!(cgroup = %dir.display(), "could not remove a run's cgroup");
        }
    }
}

impl RunCgroup {
    /// Removes the v1 `toolsmith` cgroups this run's directories were made in, once empty: the
    /// kernel refuses (`EBUSY`) while another run of any toolsmith process still has its
    /// directory there, and a run starting meanwhile makes the base again
    /// ([`make_run_dir`]), so concurrent runs never lose theirs.
    fn remove_v1_bases(&self) {
        for dir in self.dirs() {
            if let Some(base) = dir.parent()
                && base.file_name().is_some_and(|n| n == V1_BASE)
            {
                // EBUSY (another run is there) and ENOENT (another process removed it first)
                // both leave nothing to do.
                let _ = fs::remove_dir(base);
            }
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Writes a cgroup's limit files, in order.
fn write_files(dir: &Path, files: &[(&str, String)]) -> Result<(), String> {
    for (name, value) in files {
        let path = dir.join(name);
        fs::write(&path, value)
            .map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Creates a v1 run cgroup and writes the files `files` names for it; removes it again when a
/// write fails.
fn make_run_dir(
    dir: &Path,
    files: impl FnOnce(&Path) -> Result<Vec<(&'static str, String)>, String>,
) -> Result<PathBuf, String> {
    let mut attempts = 0;
    loop {
        match fs::create_dir(dir) {
            Ok(()) => break,
            // Another toolsmith process removed the empty base after its own run, between our
            // finding it and this: make it again (it may go again before we are in it, hence
            // a few turns).
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < 8 => {
                attempts += 1;
                if let Some(base) = dir.parent() {
                    match fs::create_dir(base) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
                    }
                }
            }
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    let written = files(dir).and_then(|files| write_files(dir, &files));
    match written {
        Ok(()) => Ok(dir.to_path_buf()),
        Err(why) => {
            let _ = fs::remove_dir(dir);
            Err(why)
        }
    }
}

/// The counter `key` of a flat-keyed cgroup file (`memory.events`, `pids.events`).
fn event(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|line| {
            let (k, v) = line.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0)
}

/// What is known about how a run ended, to tell which limit (if any) ended it.
#[derive(Debug, Clone)]
pub(crate) struct Evidence<'a> {
    /// The limit the parent itself enforced by killing the run (wall time, output).
    pub killed_for: Option<LimitHit>,
    /// How pid 1 ended.
    pub exit: Exit,
    /// CPU time, ms.
    pub cpu_ms: Option<u64>,
    /// Peak memory, KiB.
    pub peak_kb: Option<u64>,
    /// The end of the captured stderr.
    pub stderr_tail: &'a [u8],
    /// The cgroup's counters, when the run had one.
    pub cgroup: Option<CgroupStats>,
    /// The run's limits.
    pub limits: &'a Limits,
}

/// What programs print when an allocation fails (under rlimits, a failed allocation is only
/// visible through the program's reaction): glibc, coreutils, Python, Rust, C++, Go, Node, Perl.
const OUT_OF_MEMORY: [&str; 9] = [
    "out of memory",
    "memory exhausted",
    "cannot allocate memory",
    "memoryerror",
    "memory allocation of",
    "bad_alloc",
    "failed to allocate",
    "allocation failed",
    "xmalloc: cannot allocate",
];

/// What programs print when `fork` or thread creation meets `RLIMIT_NPROC`.
const NO_PROCESSES: [&str; 5] = [
    "fork: resource temporarily unavailable",
    "fork: retry",
    "cannot fork",
    "can't fork",
    "pthread_create",
];

/// Which limit ended the run, if any: the parent's own kills first, then the counters of the
/// limits a cgroup carried, then the rlimit signals, then (for the limits rlimits carried) what
/// the program said as it failed.
pub(crate) fn classify(e: &Evidence<'_>) -> Option<LimitHit> {
    if let Some(limit) = e.killed_for {
        return Some(limit);
    }
    if e.exit == Exit::Code(0) {
        return None;
    }
    let carried = e.cgroup.map(|stats| stats.bounds).unwrap_or_default();
    if let Some(stats) = e.cgroup {
        if carried.memory && stats.ooms > 0 {
            return Some(LimitHit::Memory);
        }
        if carried.pids && stats.pids_max > 0 {
            return Some(LimitHit::Pids);
        }
    }
    let cpu_limit_ms = u64::from(e.limits.cpu_s) * 1000;
    match e.exit {
        Exit::Signal(s) if s == Signal::SIGXCPU as i32 => return Some(LimitHit::Cpu),
        Exit::Signal(s) if s == Signal::SIGXFSZ as i32 => return Some(LimitHit::FileSize),
        Exit::Signal(s)
            if s == Signal::SIGKILL as i32 && e.cpu_ms.is_some_and(|c| c >= cpu_limit_ms) =>
        {
            return Some(LimitHit::Cpu);
        }
        _ => {}
    }
    let tail = String::from_utf8_lossy(e.stderr_tail).to_lowercase();
    let said = |markers: &[&str]| markers.iter().any(|m| tail.contains(m));
    // What rlimits bound is known only from the program's reaction.
    if !carried.memory {
        let memory_kb = u64::from(e.limits.memory_mb) * 1024;
        let near_limit = e.peak_kb.is_some_and(|p| p * 10 >= memory_kb * 9);
        if near_limit || said(&OUT_OF_MEMORY) {
            return Some(LimitHit::Memory);
        }
    }
    if !carried.pids && said(&NO_PROCESSES) {
        return Some(LimitHit::Pids);
    }
    if said(&["file too large"]) {
        return Some(LimitHit::FileSize);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence<'a>(exit: Exit, stderr: &'a [u8], limits: &'a Limits) -> Evidence<'a> {
        Evidence {
            killed_for: None,
            exit,
            cpu_ms: Some(10),
            peak_kb: Some(1000),
            stderr_tail: stderr,
            cgroup: None,
            limits,
        }
    }

    #[test]
    fn rlimit_plans() {
        let limits = Limits::default();
        let plan = rlimits(&limits, CgroupBounds::default());
        let get = |r| {
            plan.iter()
                .find(|(x, _, _)| *x == r)
                .map(|&(_, s, h)| (s, h))
        };
        assert_eq!(get(Resource::RLIMIT_CPU), Some((60, 61)));
        assert_eq!(get(Resource::RLIMIT_DATA), Some((512 * MIB, 512 * MIB)));
        assert_eq!(get(Resource::RLIMIT_NPROC), Some((129, 129)));
        assert_eq!(get(Resource::RLIMIT_FSIZE), Some((256 * MIB, 256 * MIB)));
        assert_eq!(get(Resource::RLIMIT_NOFILE), Some((256, 256)));
        assert_eq!(get(Resource::RLIMIT_CORE), Some((0, 0)));
        let both = CgroupBounds {
            memory: true,
            pids: true,
        };
        let with_cgroup = rlimits(&limits, both);
        assert!(
            with_cgroup
                .iter()
                .all(|(r, _, _)| *r != Resource::RLIMIT_DATA && *r != Resource::RLIMIT_NPROC)
        );
        // A v1 fallback with the pids hierarchy only: memory stays with RLIMIT_DATA.
        let pids_only = rlimits(
            &limits,
            CgroupBounds {
                memory: false,
                pids: true,
            },
        );
        assert!(
            pids_only
                .iter()
                .any(|(r, _, _)| *r == Resource::RLIMIT_DATA)
        );
        assert!(
            pids_only
                .iter()
                .all(|(r, _, _)| *r != Resource::RLIMIT_NPROC)
        );
        assert_eq!(pids_max(&limits), "129");
        assert_eq!(cpu_max(2), "200000 100000");
        assert_eq!(cpu_max(0), "100000 100000");
    }

    #[test]
    fn cgroup_event_files() {
        let memory = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(event(memory, "oom"), 1);
        assert_eq!(event(memory, "oom_kill"), 1);
        assert_eq!(event(memory, "max"), 12);
        assert_eq!(event("max 3", "max"), 3);
        assert_eq!(event("", "max"), 0);
        assert_eq!(event("max x", "max"), 0);
    }

    #[test]
    fn limits_hit() {
        let limits = Limits::default();
        let none = evidence(Exit::Code(0), b"out of memory", &limits);
        assert_eq!(classify(&none), None, "a success hit nothing");
        let wall = Evidence {
            killed_for: Some(LimitHit::Wall),
            ..evidence(Exit::Signal(9), b"", &limits)
        };
        assert_eq!(classify(&wall), Some(LimitHit::Wall));
        let xcpu = evidence(Exit::Signal(Signal::SIGXCPU as i32), b"", &limits);
        assert_eq!(classify(&xcpu), Some(LimitHit::Cpu));
        let hard_cpu = Evidence {
            cpu_ms: Some(61_000),
            ..evidence(Exit::Signal(9), b"", &limits)
        };
        assert_eq!(classify(&hard_cpu), Some(LimitHit::Cpu));
        let fsize = evidence(Exit::Signal(Signal::SIGXFSZ as i32), b"", &limits);
        assert_eq!(classify(&fsize), Some(LimitHit::FileSize));
        let python = evidence(Exit::Code(1), b"Traceback...\nMemoryError\n", &limits);
        assert_eq!(classify(&python), Some(LimitHit::Memory));
        let perl = evidence(Exit::Code(1), b"Out of memory!\n", &limits);
        assert_eq!(classify(&perl), Some(LimitHit::Memory));
        let near = Evidence {
            peak_kb: Some(500 * 1024),
            ..evidence(Exit::Signal(11), b"", &limits)
        };
        assert_eq!(classify(&near), Some(LimitHit::Memory));
        let bash = evidence(
            Exit::Code(254),
            b"bash: fork: Resource temporarily unavailable\n",
            &limits,
        );
        assert_eq!(classify(&bash), Some(LimitHit::Pids));
        let plain = evidence(Exit::Code(1), b"error: no such file\n", &limits);
        assert_eq!(classify(&plain), None);
        let both = CgroupBounds {
            memory: true,
            pids: true,
        };
        let cgroup = Evidence {
            cgroup: Some(CgroupStats {
                bounds: both,
                peak_kb: None,
                ooms: 1,
                pids_max: 0,
            }),
            ..evidence(Exit::Signal(9), b"", &limits)
        };
        assert_eq!(classify(&cgroup), Some(LimitHit::Memory));
        let cgroup_pids = Evidence {
            cgroup: Some(CgroupStats {
                bounds: both,
                peak_kb: None,
                ooms: 0,
                pids_max: 4,
            }),
            ..evidence(Exit::Code(1), b"", &limits)
        };
        assert_eq!(classify(&cgroup_pids), Some(LimitHit::Pids));
        let cgroup_no_guess = Evidence {
            cgroup: Some(CgroupStats {
                bounds: both,
                ..CgroupStats::default()
            }),
            ..evidence(Exit::Code(1), b"MemoryError", &limits)
        };
        assert_eq!(
            classify(&cgroup_no_guess),
            None,
            "with a cgroup, its counters are the evidence"
        );
        // A v1 fallback with pids only: memory is still read from the program's reaction, and
        // the memory counters (absent) are no evidence.
        let pids_only = CgroupStats {
            bounds: CgroupBounds {
                memory: false,
                pids: true,
            },
            ..CgroupStats::default()
        };
        let v1_python = Evidence {
            cgroup: Some(pids_only),
            ..evidence(Exit::Code(1), b"MemoryError", &limits)
        };
        assert_eq!(classify(&v1_python), Some(LimitHit::Memory));
        let v1_bash = Evidence {
            cgroup: Some(pids_only),
            ..evidence(
                Exit::Code(254),
                b"bash: fork: retry: Resource temporarily",
                &limits,
            )
        };
        assert_eq!(classify(&v1_bash), None, "pids.events is the evidence");
        let stray_oom = Evidence {
            cgroup: Some(CgroupStats {
                ooms: 3,
                ..pids_only
            }),
            ..evidence(Exit::Code(1), b"", &limits)
        };
        assert_eq!(classify(&stray_oom), None);
    }

    /// The hybrid host this was written on: v1 controllers, an empty v2 `unified`.
    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const CGROUPS: &str = "\
9:name=systemd:/
8:pids:/
4:memory:/process_api/17ab
2:cpu,cpuacct:/
0::/
";

    #[test]
    fn v1_hierarchies_and_own_cgroups() {
        assert_eq!(
            v1_mount(MOUNTINFO, "pids"),
            Some(("/".into(), "/sys/fs/cgroup/pids".into()))
        );
        assert_eq!(
            v1_mount(MOUNTINFO, "cpuacct"),
            Some(("/".into(), "/sys/fs/cgroup/cpu,cpuacct".into()))
        );
        assert_eq!(v1_mount(MOUNTINFO, "freezer"), None);
        assert_eq!(
            v1_mount(MOUNTINFO, "cgroup2"),
            None,
            "v2 is not a v1 hierarchy"
        );
        assert_eq!(v1_path(CGROUPS, "memory"), Some("/process_api/17ab".into()));
        assert_eq!(v1_path(CGROUPS, "cpuacct"), Some("/".into()));
        assert_eq!(v1_path(CGROUPS, "blkio"), None);
        assert_eq!(
            v1_own_dir(MOUNTINFO, CGROUPS, "pids"),
            Ok(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            v1_own_dir(MOUNTINFO, CGROUPS, "memory"),
            Ok(PathBuf::from("/sys/fs/cgroup/memory/process_api/17ab"))
        );
        let missing = v1_own_dir(MOUNTINFO, CGROUPS, "freezer").expect_err("not mounted");
        assert!(missing.contains("freezer"), "{missing}");
        // In a cgroup namespace or a bind mount, only a subtree is mounted.
        let nested = "50 31 0:36 /lxc/c1 /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
        assert_eq!(
            v1_own_dir(nested, "8:pids:/lxc/c1/job\n", "pids"),
            Ok(PathBuf::from("/sys/fs/cgroup/pids/job"))
        );
        let outside = v1_own_dir(nested, "8:pids:/lxc/c10\n", "pids").expect_err("outside");
        assert!(outside.contains("outside"), "{outside}");
        let spaced = "50 31 0:36 / /sys/fs/cg\\040v1/pids rw - cgroup cgroup rw,pids\n";
        assert_eq!(
            v1_own_dir(spaced, "8:pids:/\n", "pids"),
            Ok(PathBuf::from("/sys/fs/cg v1/pids"))
        );
    }

    #[test]
    fn v1_counters_and_names() {
        let oom_control = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(
            v1_ooms(oom_control, "57\n"),
            2,
            "failcnt alone is reclaim, not OOM"
        );
        assert_eq!(
            v1_ooms("oom_kill_disable 0\nunder_oom 1\noom_kill 0\n", "1"),
            1
        );
        assert_eq!(
            v1_ooms("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", "9"),
            0
        );
        assert_eq!(
            v1_ooms("oom_kill_disable 0\nunder_oom 0\n", "9\n"),
            9,
            "before Linux 4.13, failcnt"
        );
        assert_eq!(v1_ooms("", ""), 0);
        assert_eq!(run_owner("run-1234-0"), Some(1234));
        assert_eq!(run_owner("run-1234-x"), None);
        assert_eq!(run_owner("run-0-1"), None);
        assert_eq!(run_owner("supervisor"), None);
        let name = run_name();
        assert_eq!(run_owner(&name), i32::try_from(std::process::id()).ok());
        assert_ne!(run_name(), name, "names are unique within a process");
    }

    #[test]
    fn what_bounds_pids_and_memory() {
        use Bound::*;
        assert_eq!(RunCgroup::bound_by(None, false), (Rlimit, Rlimit));
        assert_eq!(RunCgroup::bound_by(None, true), (Nothing, Rlimit));
        let v2 = RunCgroup {
            dirs: Dirs::V2(PathBuf::from("/nonexistent/run")),
        };
        assert_eq!(RunCgroup::bound_by(Some(&v2), true), (CgroupV2, CgroupV2));
        let pids_only = RunCgroup {
            dirs: Dirs::V1 {
                pids: Some(PathBuf::from("/nonexistent/pids/run")),
                memory: None,
            },
        };
        assert_eq!(
            RunCgroup::bound_by(Some(&pids_only), true),
            (CgroupV1, Rlimit)
        );
        assert_eq!(
            pids_only.procs(),
            [PathBuf::from("/nonexistent/pids/run/tasks")]
        );
        let memory_only = RunCgroup {
            dirs: Dirs::V1 {
                pids: None,
                memory: Some(PathBuf::from("/nonexistent/memory/run")),
            },
        };
        assert_eq!(
            RunCgroup::bound_by(Some(&memory_only), true),
            (Nothing, CgroupV1)
        );
        assert_eq!(
            memory_only.stats(),
            CgroupStats {
                bounds: CgroupBounds {
                    memory: true,
                    pids: false
                },
                ..CgroupStats::default()
            },
            "unreadable counters count nothing"
        );
    }
}
