//! Resource limits: rlimits always, and a cgroup v2 per run where a subtree is delegated to
//! toolsmith (root, or a systemd unit with `Delegate=yes`). And, afterwards, which limit a run
//! hit.
//!
//! Under rlimits, memory is `RLIMIT_DATA` (private writable memory: the heap, anonymous maps,
//! thread stacks — not address-space reservations, which runtimes make by gigabytes) and
//! processes are `RLIMIT_NPROC`, which counts only the sandbox's processes because the helper
//! is in a fresh user namespace. The kernel never applies `RLIMIT_NPROC` to uid 0, so a run as
//! root needs the cgroup for its pids limit (the report says so). Under a cgroup, `memory.max`
//! (swap off), `pids.max` and `cpu.max` bound the whole run and `cgroup.kill` ends it.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::Signal;

use super::{Exit, LimitHit};
use crate::registry::manifest::Limits;

const MIB: u64 = 1024 * 1024;

/// The rlimits of a run: (resource, soft, hard). With a cgroup, memory and processes are left
/// to it: `RLIMIT_DATA` counts differently from `memory.max`, and the cgroup counts better.
pub(crate) fn rlimits(limits: &Limits, cgroup: bool) -> Vec<(Resource, u64, u64)> {
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
    if !cgroup {
        let memory = u64::from(limits.memory_mb) * MIB;
        plan.push((Resource::RLIMIT_DATA, memory, memory));
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
    /// `memory.peak`, KiB (Linux 5.19+).
    pub peak_kb: Option<u64>,
    /// `memory.events`: `oom` plus `oom_kill`.
    pub ooms: u64,
    /// `pids.events`: forks refused at `pids.max`.
    pub pids_max: u64,
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
    let own = crate::host::own_cgroup_dir()?;
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

/// One run's cgroup: created with the limits, killed and removed when dropped.
#[derive(Debug)]
pub(crate) struct RunCgroup {
    dir: PathBuf,
}

impl RunCgroup {
    /// Creates the run's cgroup under the delegated base, with its limits written.
    pub(crate) fn create(limits: &Limits, cpus: u32) -> Result<RunCgroup, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = base().as_ref().map_err(Clone::clone)?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("run-{}-{n}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let run = RunCgroup { dir };
        let memory = u64::from(limits.memory_mb) * MIB;
        // The supervising helper joins the cgroup too.
        let pids = u64::from(limits.pids) + 1;
        let mut files = vec![
            ("memory.max", memory.to_string()),
            ("pids.max", pids.to_string()),
        ];
        if run.dir.join("memory.swap.max").exists() {
            files.push(("memory.swap.max", "0".into()));
        }
        if run.dir.join("cpu.max").exists() {
            files.push(("cpu.max", cpu_max(cpus)));
        }
        for (name, value) in files {
            let path = run.dir.join(name);
            fs::write(&path, &value)
                .map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))?;
        }
        Ok(run)
    }

    /// The file the helper writes itself into.
    pub(crate) fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Kills every process in the cgroup (`cgroup.kill`, Linux 5.14+; else one by one).
    pub(crate) fn kill(&self) {
        if fs::write(self.dir.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        let procs = fs::read_to_string(self.procs()).unwrap_or_default();
        for pid in procs.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
    }

    /// What the cgroup counted.
    pub(crate) fn stats(&self) -> CgroupStats {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        let peak_kb = read("memory.peak")
            .trim()
            .parse::<u64>()
            .ok()
            .map(|b| b / 1024);
        let memory = read("memory.events");
        let pids = read("pids.events");
        CgroupStats {
            peak_kb,
            ooms: event(&memory, "oom") + event(&memory, "oom_kill"),
            pids_max: event(&pids, "max"),
        }
    }

    fn remove(&self) {
        self.kill();
        // The killed processes leave the cgroup asynchronously; a few short retries suffice.
        for _ in 0..50 {
            match fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Ok(()) | Err(_) => return,
            }
        }
        tracing::warn!(cgroup = %self.dir.display(), "could not remove a run's cgroup");
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.remove();
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

/// Which limit ended the run, if any: the parent's own kills first, then the cgroup's counters,
/// then the rlimit signals, then (under rlimits) what the program said as it failed.
pub(crate) fn classify(e: &Evidence<'_>) -> Option<LimitHit> {
    if let Some(limit) = e.killed_for {
        return Some(limit);
    }
    if e.exit == Exit::Code(0) {
        return None;
    }
    if let Some(stats) = e.cgroup {
        if stats.ooms > 0 {
            return Some(LimitHit::Memory);
        }
        if stats.pids_max > 0 {
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
    if e.cgroup.is_none() {
        let memory_kb = u64::from(e.limits.memory_mb) * 1024;
        let near_limit = e.peak_kb.is_some_and(|p| p * 10 >= memory_kb * 9);
        if near_limit || said(&OUT_OF_MEMORY) {
            return Some(LimitHit::Memory);
        }
        if said(&NO_PROCESSES) {
            return Some(LimitHit::Pids);
        }
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
        let plan = rlimits(&limits, false);
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
        let with_cgroup = rlimits(&limits, true);
        assert!(
            with_cgroup
                .iter()
                .all(|(r, _, _)| *r != Resource::RLIMIT_DATA && *r != Resource::RLIMIT_NPROC)
        );
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
        let cgroup = Evidence {
            cgroup: Some(CgroupStats {
                peak_kb: None,
                ooms: 1,
                pids_max: 0,
            }),
            ..evidence(Exit::Signal(9), b"", &limits)
        };
        assert_eq!(classify(&cgroup), Some(LimitHit::Memory));
        let cgroup_pids = Evidence {
            cgroup: Some(CgroupStats {
                peak_kb: None,
                ooms: 0,
                pids_max: 4,
            }),
            ..evidence(Exit::Code(1), b"", &limits)
        };
        assert_eq!(classify(&cgroup_pids), Some(LimitHit::Pids));
        let cgroup_no_guess = Evidence {
            cgroup: Some(CgroupStats::default()),
            ..evidence(Exit::Code(1), b"MemoryError", &limits)
        };
        assert_eq!(
            classify(&cgroup_no_guess),
            None,
            "with a cgroup, its counters are the evidence"
        );
    }
}
