//! The escape battery of issue 5: real escape attempts made from inside `toolsmith sandbox`, each
//! judged on the host side — canary files unchanged, listeners that accepted nothing, no
//! surviving processes, a running `toolsmithd` still healthy, the outer guard never reached.
//!
//! Syscall-level attempts are made by a small C program (`tests/probe/probe.c`), compiled with
//! `cc` at test time into the tool directory (mounted read-only at `/tool`); the shell-level ones
//! by `/bin/sh`, `bash`, `python3` inside the sandbox. The probe prints `ALLOWED`/`DENIED` per
//! attempt, with the errno's name.
//!
//! The battery runs twice when the test runs as root: as root, then as uid/gid 65534 (the
//! `toolsmith` process switches ids in `pre_exec`, with the temporary files chowned to it), and
//! once, as the caller, otherwise. Before the sandboxed cases, *controls* run the same probe
//! unconfined with the same ids and check that it does reach the canaries and listeners: the
//! battery's observations can fail.
//!
//! The dangerous cases (fork and thread bombs, 8 GiB, disk fill, output flood, CPU spin) run one
//! at a time under an outer guard set up here: a cgroup (v1 `pids` and `memory` beneath the
//! test's own, or a delegated v2) that each spawned `toolsmith` joins before `exec`, plus
//! `RLIMIT_NPROC`/`RLIMIT_AS` when the sandbox runs unprivileged. A sandbox bug then fails the
//! case ("outer guard hit") instead of taking the machine down. A root pass with no cgroup to
//! guard it skips them, saying so.
//!
//! Then the same battery runs in the sandbox's *fallback* (issue 32): where namespaces are
//! refused, as Ubuntu 23.10+'s AppArmor refuses them to unprivileged users, toolsmith runs with
//! Landlock, seccomp and rlimits alone on the host's filesystem. A fallback pass gives every
//! process it spawns a seccomp filter, installed before `exec` and inherited, that plays the
//! refusal without touching the machine: `fallback-*` passes answer the first mount a run's view
//! makes (`mount --make-rprivate /`) with `EPERM`, as AppArmor does inside the user namespace
//! it let through; the `no-userns-*` pass answers the `unshare` of the sandbox's namespaces
//! with `EPERM`, as a kernel without unprivileged user namespaces does. The filter matches only
//! those calls exactly as toolsmith makes them, so the probe's own mount and namespace attempts
//! meet toolsmith's layers alone and those cases can still fail. The policy of a fallback pass
//! does not require namespaces, and its first run must report `namespaces: false` with the
//! fallback's note, or the pass fails: it would not be a fallback pass. Paths of the view the
//! cases name (`/tool`, `/workspace`, `/work` as `$HOME`) are given as their host paths there.
//!
//! Each case says whether it needs namespaces, and which (network, pid, mount namespace): in a
//! fallback pass such a case prints `N/A (needs …)` and is counted apart, never as held, while
//! every other case must hold as in a normal pass — observed through the fallback's view where
//! the view differs (no `/proc`, `/dev` or home to list: the listing must be refused). A case
//! that needs a namespace *or* a run cgroup (survivors outside the session) holds in a fallback
//! pass with a cgroup (root's v1 fallback here) and is N/A without one. One case runs only in
//! fallback passes: a network or socket grant is refused there, never run without its
//! namespace.
//!
//! Every case prints `pass/case | tried | host observed | ok`, and each pass a summary line,
//! `<pass>: N held, M not applicable (needs namespaces), K failed`; the test fails listing
//! every case that did not hold. Run with `-- --nocapture` to see the table.
//!
//! A test binary of its own, apart from `tests/it`: its cases aim at this test process (ptrace,
//! kill, `/proc/<pid>/environ`), open a terminal whose descriptors every child spawned meanwhile
//! would inherit, and run fork bombs and floods that must not share the process, or the two
//! cores, with the rest of the suite.

// Tests may panic on what they set up themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "it/common/mod.rs"]
mod common;

use std::ffi::CString;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{SocketAddr, UnixListener};
use std::os::unix::process::CommandExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Daemon, TestEnv};
use serde_json::Value;

/// The battery's `[sandbox.max]`: every run is clamped to these small limits.
const PIDS: u64 = 64;
const MEMORY_MB: u64 = 256;
const OUTPUT_KB: u64 = 256;
const FILE_MB: u64 = 32;
const OPEN_FILES: u64 = 64;
const CPU_S: u64 = 1;

/// The outer guard: far above one run's limits, far below what hurts a shared machine.
const GUARD_PIDS: u64 = 400;
const GUARD_MEMORY: u64 = 1536 << 20;
const GUARD_AS: u64 = 4 << 30;

/// The unprivileged pass's ids.
const NOBODY: (u32, u32) = (65534, 65534);

/// Workers running cases in parallel (the dangerous ones run alone).
const WORKERS: usize = 3;

/// The battery's policy: a normal pass requires the namespaces, a fallback pass cannot.
fn policy_toml(mode: Mode) -> String {
    let namespaces = if mode.fallback() {
        ""
    } else {
        "\"namespaces\", "
    };
    format!(
        "[sandbox]\nrequire = [{namespaces}\"landlock\", \"seccomp\", \"rlimits\"]\n\n\
         [sandbox.max]\nwall_s = 10\ncpu_s = {CPU_S}\nmemory_mb = {MEMORY_MB}\npids = {PIDS}\n\
         output_kb = {OUTPUT_KB}\nfile_size_mb = {FILE_MB}\nopen_files = {OPEN_FILES}\n"
    )
}

/// Whether a pass leaves the sandbox its namespaces, and how it takes them away if not.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Nothing refused: runs have their namespaces.
    Normal,
    /// Ubuntu 23.10+'s AppArmor refusal: the user namespace is created, its mounts refused.
    MountsRefused,
    /// No namespaces at all: their `unshare` is refused.
    NoUserns,
}

impl Mode {
    fn fallback(self) -> bool {
        self != Mode::Normal
    }

    /// The host refusal a fallback pass plays, as a seccomp filter every process of the pass
    /// inherits: `EPERM` for the one call toolsmith makes first, matched on its exact
    /// arguments, so that the probe's own mounts and namespaces (other arguments) meet
    /// toolsmith's layers alone.
    fn refusal(self) -> Option<seccompiler::BpfProgram> {
        use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
        let (call, arg, len, value) = match self {
            Mode::Normal => return None,
            // `mount --make-rprivate /`: the first mount of a run's view, and of the probe
            // toolsmith makes when a run fails at its namespaces (`host::sandbox_namespaces`).
            Mode::MountsRefused => (
                libc::SYS_mount,
                3,
                SeccompCmpArgLen::Qword,
                libc::MS_REC | libc::MS_PRIVATE,
            ),
            // The sandbox's one `unshare`, of all six namespaces at once.
            Mode::NoUserns => (
                libc::SYS_unshare,
                0,
                SeccompCmpArgLen::Dword,
                (libc::CLONE_NEWUSER
                    | libc::CLONE_NEWNS
                    | libc::CLONE_NEWPID
                    | libc::CLONE_NEWNET
                    | libc::CLONE_NEWIPC
                    | libc::CLONE_NEWUTS) as u64,
            ),
        };
        let condition =
            SeccompCondition::new(arg, len, SeccompCmpOp::Eq, value).expect("condition");
        let rule = SeccompRule::new(vec![condition]).expect("rule");
        let filter = seccompiler::SeccompFilter::new(
            [(call, vec![rule])].into_iter().collect(),
            seccompiler::SeccompAction::Allow,
            seccompiler::SeccompAction::Errno(libc::EPERM as u32),
            std::env::consts::ARCH
                .try_into()
                .expect("a seccomp architecture"),
        )
        .expect("filter");
        Some(filter.try_into().expect("BPF"))
    }
}

// ---------------------------------------------------------------------------------------------
// Host helpers
// ---------------------------------------------------------------------------------------------

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// What a file looks like: contents (small files), mode, owner, times.
fn snapshot(path: &Path) -> String {
    match fs::symlink_metadata(path) {
        Err(e) => format!("missing ({e})"),
        Ok(m) => {
            let content = if m.is_file() && m.len() < 1 << 20 {
                fs::read(path).unwrap_or_default()
            } else {
                Vec::new()
            };
            format!(
                "{:o} {}:{} {} m{}.{} c{}.{} {:?}",
                m.mode(),
                m.uid(),
                m.gid(),
                m.len(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
                String::from_utf8_lossy(&content)
            )
        }
    }
}

/// Processes whose command line contains `marker`, on the host.
fn processes_with(marker: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == me || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!("{name}: {}", cmdline.trim()));
        }
    }
    found
}

/// Survivors carrying `marker`, allowing the kernel a moment to finish killing a namespace.
fn survivors(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let found = processes_with(marker);
        if found.is_empty() || Instant::now() >= deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn tracer_of(pid: i32) -> String {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:").map(|v| v.trim().to_string()))
        .unwrap_or_else(|| "?".into())
}

/// Recursively gives a tree to `ids` (symlinks themselves, not their targets).
fn chown_tree(path: &Path, (uid, gid): (u32, u32)) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).expect("lchown");
    let meta = fs::symlink_metadata(path).expect("metadata");
    if meta.is_dir() {
        for entry in fs::read_dir(path).expect("read_dir").flatten() {
            chown_tree(&entry.path(), (uid, gid));
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

fn free_bytes(path: &Path) -> u64 {
    nix::sys::statvfs::statvfs(path)
        .map(|s| s.blocks_available() * s.fragment_size())
        .unwrap_or(0)
}

fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn processes_of(uid: u32) -> u64 {
    let mut n = 0;
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let status = fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let owner = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| {
                v.split_whitespace()
                    .next()
                    .and_then(|u| u.parse::<u32>().ok())
            });
        if owner == Some(uid) {
            n += 1;
        }
    }
    n
}

/// A TCP listener on loopback that counts the connections it got.
struct Tcp(TcpListener);

impl Tcp {
    fn new() -> Tcp {
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        l.set_nonblocking(true).expect("non-blocking");
        Tcp(l)
    }

    fn port(&self) -> String {
        self.0.local_addr().expect("address").port().to_string()
    }

    fn accepted(&self) -> usize {
        let mut n = 0;
        while self.0.accept().is_ok() {
            n += 1;
        }
        n
    }
}

/// A UDP socket on loopback that counts the datagrams it got.
struct Udp(UdpSocket);

impl Udp {
    fn new() -> Udp {
        let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
        s.set_nonblocking(true).expect("non-blocking");
        Udp(s)
    }

    fn port(&self) -> String {
        self.0.local_addr().expect("address").port().to_string()
    }

    fn received(&self) -> usize {
        let mut buf = [0u8; 64];
        let mut n = 0;
        while self.0.recv(&mut buf).is_ok() {
            n += 1;
        }
        n
    }
}

/// A unix listener (a path anyone may connect to, or an abstract name).
struct Unix(UnixListener);

impl Unix {
    fn path(path: &Path) -> Unix {
        let _ = fs::remove_file(path);
        let l = UnixListener::bind(path).expect("bind unix socket");
        set_mode(path, 0o777);
        l.set_nonblocking(true).expect("non-blocking");
        Unix(l)
    }

    fn abstract_name(name: &str) -> Unix {
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract address");
        let l = UnixListener::bind_addr(&addr).expect("bind abstract socket");
        l.set_nonblocking(true).expect("non-blocking");
        Unix(l)
    }

    fn accepted(&self) -> usize {
        let mut n = 0;
        while self.0.accept().is_ok() {
            n += 1;
        }
        n
    }
}

/// A pseudo-terminal: the slave is given as stdin; what is pushed into its input queue can be
/// read back from it.
struct Pty {
    _master: OwnedFd,
    slave: OwnedFd,
}

impl Pty {
    fn open() -> Pty {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: openpty writes two descriptors into the integers given; name, termios and
        // window size are optional and passed as null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", io::Error::last_os_error());
        // SAFETY: both descriptors were just opened by openpty and are owned here alone.
        unsafe {
            Pty {
                _master: OwnedFd::from_raw_fd(master),
                slave: OwnedFd::from_raw_fd(slave),
            }
        }
    }

    fn stdin(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().expect("dup slave"))
    }

    /// What is waiting in the terminal's input queue (canonical mode: whole lines).
    fn pending_input(&self) -> String {
        let fd = self.slave.as_raw_fd();
        // SAFETY: fcntl and read on a descriptor this struct owns; the buffer outlives the call.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            let mut buf = [0u8; 256];
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n > 0 {
                String::from_utf8_lossy(&buf[..n as usize]).into_owned()
            } else {
                String::new()
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The outer guard
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Rlimit {
    Nproc,
    AddressSpace,
}

/// Bounds on everything a pass spawns, set up by the test itself.
struct Guard {
    /// `cgroup.procs` files the spawned process joins, as C strings (written before exec).
    procs: Vec<CString>,
    /// Rlimits set before exec.
    rlimits: Vec<(Rlimit, u64)>,
    /// The cgroup directories (v1 pids, v1 memory, or one v2), for counters and clean-up.
    dirs: Vec<PathBuf>,
    v2: bool,
    /// What guards the dangerous cases; `None`: nothing can, so they are skipped.
    description: Option<String>,
    why_none: String,
}

/// Our own directory in the v1 hierarchy holding `controller` (mounted at its root).
fn own_v1_dir(controller: &str) -> Option<PathBuf> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let point = mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let mut fs = fs.split(' ');
        let v1 = fs.next()? == "cgroup" && fs.nth(1)?.split(',').any(|o| o == controller);
        let mut fields = mount.split(' ').skip(3);
        let (root, point) = (fields.next()?, fields.next()?);
        (v1 && root == "/").then(|| point.to_string())
    })?;
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
        list.split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })?;
    Some(Path::new(&point).join(path.trim_start_matches('/')))
}

/// Our own cgroup v2 directory, when the v2 hierarchy is mounted at its root.
fn own_v2_dir() -> Option<PathBuf> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let point = mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let mut fields = mount.split(' ').skip(3);
        let (root, point) = (fields.next()?, fields.next()?);
        (fs.starts_with("cgroup2 ") && root == "/").then(|| point.to_string())
    })?;
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))?
        .to_string();
    Some(Path::new(&point).join(path.trim_start_matches('/')))
}

impl Guard {
    fn new(label: &str, unprivileged_sandbox: bool) -> Guard {
        let name = format!("toolsmith-battery-{}-{label}", std::process::id());
        let mut guard = Guard {
            procs: Vec::new(),
            rlimits: Vec::new(),
            dirs: Vec::new(),
            v2: false,
            description: None,
            why_none: String::new(),
        };
        if is_root() {
            match guard.cgroup_v1(&name).or_else(|v1| {
                guard
                    .cgroup_v2(&name)
                    .map_err(|v2| format!("cgroup v1: {v1}; cgroup v2: {v2}"))
            }) {
                Ok(description) => guard.description = Some(description),
                Err(why) => guard.why_none = why,
            }
        }
        if unprivileged_sandbox || !is_root() {
            // RLIMIT_NPROC counts every process of the user on the host.
            let uid = if is_root() {
                NOBODY.0
            } else {
                nix::unistd::getuid().as_raw()
            };
            let nproc = processes_of(uid) + GUARD_PIDS;
            guard.rlimits = vec![(Rlimit::Nproc, nproc), (Rlimit::AddressSpace, GUARD_AS)];
            let rl = format!(
                "RLIMIT_NPROC {nproc} (the user's processes + {GUARD_PIDS}), RLIMIT_AS {} GiB",
                GUARD_AS >> 30
            );
            guard.description = Some(match guard.description.take() {
                Some(cgroup) => format!("{cgroup}; {rl}"),
                None => rl,
            });
        }
        guard
    }

    fn cgroup_v1(&mut self, name: &str) -> Result<String, String> {
        let pids = own_v1_dir("pids").ok_or("no v1 pids hierarchy")?.join(name);
        fs::create_dir(&pids).map_err(|e| format!("mkdir {}: {e}", pids.display()))?;
        self.dirs.push(pids.clone());
        fs::write(pids.join("pids.max"), GUARD_PIDS.to_string())
            .map_err(|e| format!("pids.max: {e}"))?;
        let mut description = format!("cgroup v1 {} (pids.max {GUARD_PIDS})", pids.display());
        if let Some(own) = own_v1_dir("memory") {
            let memory = own.join(name);
            if fs::create_dir(&memory).is_ok() {
                self.dirs.push(memory.clone());
                fs::write(
                    memory.join("memory.limit_in_bytes"),
                    GUARD_MEMORY.to_string(),
                )
                .map_err(|e| format!("memory.limit_in_bytes: {e}"))?;
                let _ = fs::write(
                    memory.join("memory.memsw.limit_in_bytes"),
                    GUARD_MEMORY.to_string(),
                );
                description.push_str(&format!(
                    " and {} ({} MiB)",
                    memory.display(),
                    GUARD_MEMORY >> 20
                ));
            }
        }
        self.procs = self
            .dirs
            .iter()
            .map(|d| CString::new(d.join("cgroup.procs").into_os_string().into_encoded_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        Ok(description)
    }

    fn cgroup_v2(&mut self, name: &str) -> Result<String, String> {
        self.remove();
        self.dirs.clear();
        let dir = own_v2_dir().ok_or("no cgroup2 mount")?.join(name);
        fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        self.dirs.push(dir.clone());
        self.v2 = true;
        fs::write(dir.join("pids.max"), GUARD_PIDS.to_string())
            .map_err(|e| format!("pids.max (pids not delegated?): {e}"))?;
        fs::write(dir.join("memory.max"), GUARD_MEMORY.to_string())
            .map_err(|e| format!("memory.max: {e}"))?;
        let procs = dir
            .join("cgroup.procs")
            .into_os_string()
            .into_encoded_bytes();
        self.procs = vec![CString::new(procs).map_err(|e| e.to_string())?];
        Ok(format!(
            "cgroup v2 {} (pids.max {GUARD_PIDS})",
            dir.display()
        ))
    }

    /// The guard's own limits reached so far, as counters (a sandbox limit failed when they
    /// grow during a case).
    fn hits(&self) -> Vec<String> {
        let read = |d: &Path, f: &str| fs::read_to_string(d.join(f)).unwrap_or_default();
        let counter = |text: &str, key: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        let mut hits = Vec::new();
        for dir in &self.dirs {
            let pids = counter(&read(dir, "pids.events"), "max ");
            if pids > 0 {
                hits.push(format!("guard pids.max hit {pids} times"));
            }
            let oom = if self.v2 {
                counter(&read(dir, "memory.events"), "oom_kill ")
                    + counter(&read(dir, "memory.events"), "max ")
            } else {
                counter(&read(dir, "memory.oom_control"), "oom_kill ")
                    + read(dir, "memory.failcnt")
                        .trim()
                        .parse::<u64>()
                        .unwrap_or(0)
            };
            if oom > 0 {
                hits.push(format!("guard memory limit hit ({oom})"));
            }
        }
        hits
    }

    fn peak_pids(&self) -> Option<u64> {
        self.dirs
            .iter()
            .find_map(|d| fs::read_to_string(d.join("pids.peak")).ok())
            .and_then(|s| s.trim().parse().ok())
    }

    fn remove(&self) {
        for dir in self.dirs.iter().rev() {
            for _ in 0..100 {
                let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                // The sandbox's own run cgroups beneath (toolsmith/run-*), then ours.
                remove_cgroup_tree(dir);
                if !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn remove_cgroup_tree(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup_tree(&entry.path());
            }
        }
    }
    let _ = fs::remove_dir(dir);
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.remove();
    }
}

// ---------------------------------------------------------------------------------------------
// Passes and runs
// ---------------------------------------------------------------------------------------------

/// What all passes share.
struct Shared {
    dir: PathBuf,
    toolsmith: PathBuf,
    probe: PathBuf,
    daemon_pid: i32,
    daemon_socket: PathBuf,
    daemon_secret: String,
    test_pid: i32,
    python: bool,
}

/// One pass of the battery: its ids, its files, its guard, its mode.
struct Pass {
    index: u32,
    label: String,
    mode: Mode,
    /// [`Mode::refusal`], built once: every process of the pass installs it before `exec`.
    refusal: Option<seccompiler::BpfProgram>,
    /// The ids the toolsmith process switches to (`None`: stays the caller).
    ids: Option<(u32, u32)>,
    home: PathBuf,
    tool: PathBuf,
    ws_ro: PathBuf,
    ws_rw: PathBuf,
    runtime: PathBuf,
    agent: PathBuf,
    outside_secret: PathBuf,
    stdin_canary: PathBuf,
    policy: PathBuf,
    host_tmp_name: PathBuf,
    via_symlink: PathBuf,
    key: String,
    outside_text: String,
    token: String,
    aws: String,
    victim: Mutex<Child>,
    victim_pid: i32,
    victim_secret: String,
    guard: Guard,
    /// Opened read-only; every toolsmith process inherits it as descriptor 7.
    secret_file: fs::File,
    suid: bool,
    /// A real virtual environment inside the pass's home (the caller's), bound as a toolchain
    /// (`None`: no python3 here to make one).
    venv: Option<PathBuf>,
    /// A virtual environment of another user (uid [`OTHER_UID`]; root passes only).
    other_venv: Option<PathBuf>,
}

/// The owner of the other user's toolchain.
const OTHER_UID: u32 = 4242;

/// A virtual environment at `dir`, made by the system's python3 (no pip: fast).
fn make_venv(dir: &Path) -> Option<PathBuf> {
    let made = Command::new("/usr/bin/python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(dir)
        .output()
        .ok()?;
    assert!(
        made.status.success(),
        "python3 -m venv {}: {}",
        dir.display(),
        String::from_utf8_lossy(&made.stderr)
    );
    dir.canonicalize().ok()
}

fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{what}-{}-{nanos:09}", std::process::id())
}

impl Pass {
    fn new(shared: &Shared, index: u32, label: &str, ids: Option<(u32, u32)>, mode: Mode) -> Pass {
        let root = shared.dir.join(label);
        let mk = |p: &Path| fs::create_dir_all(p).expect("mkdir");
        let home = root.join("home");
        let (tool, ws_ro, ws_rw) = (root.join("tool"), root.join("ws-ro"), root.join("ws-rw"));
        let (runtime, outside) = (root.join("runtime"), root.join("outside"));
        for dir in [
            &home.join(".ssh"),
            &home.join(".config/gh"),
            &tool,
            &ws_ro,
            &ws_rw,
        ]
        .into_iter()
        .chain([&runtime, &outside])
        {
            mk(dir);
        }
        let key = unique("SECRET-ssh-key");
        let token = unique("SECRET-github-token");
        let aws = unique("SECRET-aws");
        let outside_text = unique("SECRET-outside-workspace");
        fs::write(home.join(".ssh/id_rsa"), &key).expect("write key");
        fs::write(home.join(".bashrc"), "# canary bashrc\n").expect("write");
        fs::write(
            home.join(".config/gh/hosts.yml"),
            format!("oauth_token: {token}\n"),
        )
        .expect("write");
        fs::write(home.join("control-target"), "control\n").expect("write");
        let outside_secret = outside.join("secret.txt");
        fs::write(&outside_secret, &outside_text).expect("write");
        fs::copy(&shared.probe, tool.join("probe")).expect("copy probe");
        fs::write(ws_ro.join("canary.txt"), "read-only workspace canary\n").expect("write");
        fs::write(ws_rw.join("keep.txt"), "keep me\n").expect("write");
        fs::hard_link(&outside_secret, ws_ro.join("hard-secret")).expect("hard link");
        let host_tmp_name = PathBuf::from(format!("/tmp/{}", unique("toolsmith-battery-host")));
        let via_symlink = PathBuf::from(format!("/tmp/{}", unique("toolsmith-battery-symlink")));
        for ws in [&ws_ro, &ws_rw] {
            std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), ws.join("link-to-key"))
                .expect("symlink");
        }
        std::os::unix::fs::symlink(&via_symlink, ws_rw.join("link-to-host-tmp")).expect("symlink");
        let stdin_canary = root.join("stdin-canary");
        fs::write(&stdin_canary, "stdin canary\n").expect("write");
        let policy = root.join("policy.toml");
        fs::write(&policy, policy_toml(mode)).expect("write policy");
        let venv = if shared.python {
            make_venv(&home.join("proj/.venv"))
        } else {
            None
        };
        if let Some(ids) = ids {
            chown_tree(&root, ids);
        }
        // Another user's toolchain, where this pass could reach it: only root can make one.
        let other_venv = if shared.python && is_root() {
            let other = root.join("other-home");
            let made = make_venv(&other.join(".venv"));
            chown_tree(&other, (OTHER_UID, OTHER_UID));
            made
        } else {
            None
        };
        set_mode(&home, 0o700);
        set_mode(&home.join(".ssh"), 0o700);
        set_mode(&home.join(".ssh/id_rsa"), 0o600);
        // A setuid-root copy of the probe: only root can make one.
        let suid = is_root();
        if suid {
            let path = ws_ro.join("suid-probe");
            fs::copy(&shared.probe, &path).expect("copy");
            std::os::unix::fs::chown(&path, Some(0), Some(0)).expect("chown");
            set_mode(&path, 0o4755);
        }
        let victim_secret = unique("SECRET-victim-environ");
        let mut victim = Command::new("sleep");
        victim
            .arg("600")
            .env_clear()
            .env("VICTIM_SECRET", &victim_secret)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = ids {
            victim.uid(uid).gid(gid);
        }
        let victim = victim.spawn().expect("spawn the victim sleep");
        let victim_pid = victim.id() as i32;
        let secret_file = fs::File::open(&outside_secret).expect("open secret");
        Pass {
            index,
            label: label.into(),
            mode,
            refusal: mode.refusal(),
            ids,
            agent: root.join("agent.sock"),
            home,
            tool,
            ws_ro,
            ws_rw,
            runtime,
            outside_secret,
            stdin_canary,
            policy,
            host_tmp_name,
            via_symlink,
            key,
            outside_text,
            token,
            aws,
            victim: Mutex::new(victim),
            victim_pid,
            victim_secret,
            guard: Guard::new(label, ids.is_some()),
            secret_file,
            suid,
            venv,
            other_venv,
        }
    }

    fn secrets<'a>(&'a self, shared: &'a Shared) -> [(&'static str, &'a str); 6] {
        [
            ("ssh key", &self.key),
            ("secret outside the workspace", &self.outside_text),
            ("GITHUB_TOKEN", &self.token),
            ("AWS_SECRET_ACCESS_KEY", &self.aws),
            ("victim's environment", &self.victim_secret),
            ("daemon's environment", &shared.daemon_secret),
        ]
    }

    /// The ids, outer guard, inherited descriptor 7 and (a fallback pass) the host's refusal
    /// of every process spawned for this pass.
    fn launch(&self, cmd: &mut Command, guarded: bool) {
        let procs = if guarded {
            self.guard.procs.clone()
        } else {
            Vec::new()
        };
        let rlimits = if guarded {
            self.guard.rlimits.clone()
        } else {
            Vec::new()
        };
        let ids = self.ids;
        let secret = self.secret_file.as_raw_fd();
        let refusal = self.refusal.clone();
        // Root installs the filter without no_new_privs, which would make the setuid control
        // inert; anyone else must set it first.
        let root = is_root();
        // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
        // system calls on data prepared before the fork (no allocation): it joins the guard's
        // cgroups, sets the guard's rlimits, leaves a secret open as fd 7 without close-on-exec
        // (dup2 clears the flag), installs the refusal filter (a program built before, read by
        // the kernel during the call), and drops to the pass's ids.
        unsafe {
            cmd.pre_exec(move || {
                for path in &procs {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 || libc::write(fd, c"0".as_ptr().cast(), 1) != 1 {
                        return Err(io::Error::last_os_error());
                    }
                    libc::close(fd);
                }
                for &(which, value) in &rlimits {
                    let limit = libc::rlimit {
                        rlim_cur: value,
                        rlim_max: value,
                    };
                    let resource = match which {
                        Rlimit::Nproc => libc::RLIMIT_NPROC,
                        Rlimit::AddressSpace => libc::RLIMIT_AS,
                    };
                    if libc::setrlimit(resource, &limit) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                if libc::dup2(secret, 7) != 7 {
                    return Err(io::Error::last_os_error());
                }
                if let Some(program) = &refusal {
                    let fprog = libc::sock_fprog {
                        len: program.len() as u16,
                        filter: program.as_ptr() as *mut libc::sock_filter,
                    };
                    if !root && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    let mode = libc::SECCOMP_SET_MODE_FILTER;
                    if libc::syscall(libc::SYS_seccomp, mode, 0, &raw const fprog) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                if let Some((uid, gid)) = ids
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0)
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .env("GITHUB_TOKEN", &self.token)
            .env("AWS_SECRET_ACCESS_KEY", &self.aws)
            .env("AWS_ACCESS_KEY_ID", "AKIABATTERYTEST")
            .env("SSH_AUTH_SOCK", &self.agent)
            .env("XDG_RUNTIME_DIR", &self.runtime);
    }

    fn home_path(&self, rel: &str) -> String {
        self.home.join(rel).display().to_string()
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        if let Ok(mut victim) = self.victim.lock() {
            let _ = victim.kill();
            let _ = victim.wait();
        }
        let _ = fs::remove_file(&self.host_tmp_name);
        let _ = fs::remove_file(&self.via_symlink);
    }
}

/// The standard input of a run.
#[derive(Default)]
enum Input {
    /// A host file opened read-only (the reopen-for-writing target).
    #[default]
    Canary,
    /// A pseudo-terminal's slave.
    Pty(Stdio),
}

/// How to run a case.
struct Opts {
    workspace: Option<(&'static str, PathBuf)>,
    timeout: u32,
    stdin: Input,
    /// A policy file in place of the pass's (one with `[grants]`).
    policy: Option<PathBuf>,
    /// `--allow-host` values.
    allow_hosts: Vec<String>,
    /// `--host-socket` values.
    host_sockets: Vec<PathBuf>,
    /// `--toolchain python`, with this virtual environment's `bin` first on toolsmith's PATH.
    toolchain: Option<PathBuf>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            workspace: None,
            timeout: 5,
            stdin: Input::Canary,
            policy: None,
            allow_hosts: Vec::new(),
            host_sockets: Vec::new(),
            toolchain: None,
        }
    }
}

/// What a run produced, as the host saw it.
struct Run {
    /// The sandbox's JSON report (`None` for unconfined control runs, or when toolsmith failed).
    report: Option<Value>,
    sandboxed: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    cli_stderr: String,
    timed_out: bool,
}

impl Run {
    fn lines(&self, prefix: &str) -> Vec<&str> {
        self.stdout
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .collect()
    }

    fn allowed(&self) -> Vec<&str> {
        self.lines("ALLOWED ")
    }

    fn denied(&self) -> Vec<&str> {
        self.lines("DENIED ")
    }

    fn info(&self) -> Vec<&str> {
        self.lines("INFO ")
    }

    fn limit(&self) -> String {
        self.report
            .as_ref()
            .and_then(|r| r["limit"].as_str())
            .unwrap_or("none")
            .to_string()
    }

    fn field(&self, pointer: &str) -> Value {
        self.report
            .as_ref()
            .and_then(|r| r.pointer(pointer).cloned())
            .unwrap_or(Value::Null)
    }

    fn exit(&self) -> String {
        match self.report.as_ref().map(|r| &r["exit"]) {
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .next()
                .unwrap_or_default(),
            _ => format!("{:?}", self.code),
        }
    }

    /// Why the run says nothing about the sandbox, if it does not.
    fn failure(&self) -> Option<String> {
        if self.timed_out {
            return Some("toolsmith did not return: killed by the test's watchdog".into());
        }
        if self.sandboxed && self.report.is_none() {
            let why: String = self.cli_stderr.trim().chars().take(300).collect();
            return Some(format!("toolsmith failed (exit {:?}): {why}", self.code));
        }
        None
    }

    /// The errno names of the DENIED lines, counted: `ENOENT×3, EROFS`.
    fn errnos(&self) -> String {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for line in self.denied() {
            let name = line.rsplit(": ").next().unwrap_or(line).trim().to_string();
            match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => *c += 1,
                None => counts.push((name, 1)),
            }
        }
        counts
            .iter()
            .map(|(n, c)| {
                if *c > 1 {
                    format!("{n}×{c}")
                } else {
                    n.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A case's outcome as the table shows it.
struct Verdict {
    observed: String,
    ok: bool,
}

/// What a pass's first run showed about all its runs.
#[derive(Clone, Copy, Default)]
struct Facts {
    /// The runs have a cgroup, which kills whatever is left of a run when it ends.
    cgroup: bool,
    /// toolsmith runs as root.
    root: bool,
}

/// The context a case runs in.
struct Ctx<'a> {
    shared: &'a Shared,
    pass: &'a Pass,
    tag: u32,
    /// The outer guard's counters before the case.
    guard_before: Vec<String>,
}

/// `text` with every `from` that starts a word (at the start, or after a space, quote, `=`,
/// `;` or `(`) replaced by `to`.
fn replace_words(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let starts_word = out
            .chars()
            .chain(rest[..at].chars())
            .last()
            .is_none_or(|c| matches!(c, ' ' | '\'' | '"' | '=' | ';' | '('));
        out.push_str(&rest[..at]);
        out.push_str(if starts_word { to } else { from });
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

impl Ctx<'_> {
    /// A fallback pass: no namespaces, no view.
    fn fallback(&self) -> bool {
        self.pass.mode.fallback()
    }

    /// A word of a command as the sandbox must be given it: in a fallback pass there is no
    /// view, and its `/tool` and `/workspace` are the host directories they show.
    fn in_view(&self, word: &str, workspace: Option<&Path>) -> String {
        if !self.fallback() {
            return word.to_string();
        }
        let tool = format!("{}/", self.pass.tool.display());
        let word = replace_words(word, "/tool/", &tool);
        match workspace {
            Some(dir) => replace_words(&word, "/workspace/", &format!("{}/", dir.display())),
            None => word,
        }
    }

    /// A marker unique to this case and pass: a valid `sleep` duration.
    fn sleep_marker(&self) -> String {
        format!(
            "7{:05}{}.{}",
            std::process::id() % 100_000,
            self.pass.index,
            self.tag
        )
    }

    /// `toolsmith --json sandbox … -- command…` as this pass.
    fn sandbox(&self, opts: Opts, command: &[&str]) -> Run {
        let p = self.pass;
        let mut cmd = Command::new(&self.shared.toolsmith);
        p.env(&mut cmd);
        cmd.args(["--json", "sandbox", "--policy"])
            .arg(opts.policy.as_ref().unwrap_or(&p.policy))
            .arg("--tool-dir")
            .arg(&p.tool)
            .args(["--memory", &MEMORY_MB.to_string()])
            .args(["--timeout", &opts.timeout.to_string()]);
        if let Some((access, dir)) = &opts.workspace {
            cmd.args(["--workspace", access]).arg(dir);
        }
        for host in &opts.allow_hosts {
            cmd.args(["--allow-host", host]);
        }
        for socket in &opts.host_sockets {
            cmd.arg("--host-socket").arg(socket);
        }
        if let Some(venv) = &opts.toolchain {
            cmd.args(["--toolchain", "python"]).env(
                "PATH",
                format!("{}/bin:/usr/local/bin:/usr/bin:/bin", venv.display()),
            );
        }
        let workspace = opts.workspace.as_ref().map(|(_, dir)| dir.as_path());
        cmd.arg("--")
            .args(command.iter().map(|w| self.in_view(w, workspace)));
        p.launch(&mut cmd, true);
        let stdin = match opts.stdin {
            Input::Canary => Stdio::from(fs::File::open(&p.stdin_canary).expect("open canary")),
            Input::Pty(stdio) => stdio,
        };
        let (code, out, err, timed_out) = spawn_and_wait(cmd, stdin, opts.timeout + 20);
        let report: Option<Value> = serde_json::from_slice(&out).ok();
        let text = |stream: &str| {
            report
                .as_ref()
                .and_then(|r| r[stream]["text"].as_str())
                .unwrap_or_default()
                .to_string()
        };
        Run {
            stdout: text("stdout"),
            stderr: text("stderr"),
            report,
            sandboxed: true,
            code,
            cli_stderr: String::from_utf8_lossy(&err).into_owned(),
            timed_out,
        }
    }

    /// The probe, with default options.
    fn probe(&self, args: &[&str]) -> Run {
        let mut command = vec!["/tool/probe"];
        command.extend_from_slice(args);
        self.sandbox(Opts::default(), &command)
    }

    /// The probe unconfined (a control), with this pass's ids and guard.
    fn unconfined(&self, args: &[&str], stdin: Stdio) -> Run {
        let mut cmd = Command::new(self.pass.tool.join("probe"));
        self.pass.env(&mut cmd);
        cmd.args(args);
        self.pass.launch(&mut cmd, true);
        let (code, out, err, timed_out) = spawn_and_wait(cmd, stdin, 20);
        Run {
            report: None,
            sandboxed: false,
            code,
            stdout: String::from_utf8_lossy(&out).into_owned(),
            stderr: String::from_utf8_lossy(&err).into_owned(),
            cli_stderr: String::new(),
            timed_out,
        }
    }

    fn leaks(&self, run: &Run) -> Vec<&'static str> {
        self.pass
            .secrets(self.shared)
            .iter()
            .filter(|(_, secret)| run.stdout.contains(secret) || run.stderr.contains(secret))
            .map(|(name, _)| *name)
            .collect()
    }

    /// Every attempt refused, nothing leaked, and every host check holding.
    fn refused(&self, runs: &[&Run], host: Vec<(String, bool)>) -> Verdict {
        let mut notes = Vec::new();
        let mut ok = true;
        for run in runs {
            if let Some(failure) = run.failure() {
                return Verdict {
                    observed: failure,
                    ok: false,
                };
            }
            let allowed = run.allowed();
            if allowed.is_empty() {
                if run.denied().is_empty() {
                    ok = false;
                    notes.push(format!(
                        "the probe reported nothing (stdout {:?}, stderr {:?})",
                        run.stdout.chars().take(200).collect::<String>(),
                        run.stderr.chars().take(200).collect::<String>()
                    ));
                } else {
                    notes.push(format!("refused: {}", run.errnos()));
                }
            } else {
                ok = false;
                notes.push(format!("ALLOWED: {}", allowed.join(" | ")));
            }
            let leaks = self.leaks(run);
            if !leaks.is_empty() {
                ok = false;
                notes.push(format!("LEAKED: {}", leaks.join(", ")));
            }
        }
        for (what, holds) in host {
            ok &= holds;
            notes.push(if holds {
                what
            } else {
                format!("NOT HELD: {what}")
            });
        }
        Verdict {
            observed: notes.join("; "),
            ok,
        }
    }
}

/// Spawns, feeds nothing, collects stdout and stderr, and kills the process after `limit_s`.
fn spawn_and_wait(
    mut cmd: Command,
    stdin: Stdio,
    limit_s: u32,
) -> (Option<i32>, Vec<u8>, Vec<u8>, bool) {
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return (None, Vec::new(), format!("spawn: {e}").into_bytes(), false),
    };
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("stdout")));
    let err = reader(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + Duration::from_secs(u64::from(limit_s));
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    (status.and_then(|s| s.code()), out, err, timed_out)
}

// ---------------------------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Unconfined: shows the battery's observation would catch an escape.
    Control,
    /// A sandboxed attempt, run in parallel with others.
    Normal,
    /// A resource attack, run alone under the outer guard.
    Dangerous,
}

/// What a case needs beyond Landlock, seccomp and rlimits, which every pass has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Nothing more: it holds in every pass.
    Nothing,
    /// This namespace: not applicable in a fallback pass.
    Namespace(&'static str),
    /// This namespace, or else a run cgroup (which kills what is left of a run when it ends):
    /// not applicable in a fallback pass whose runs have no cgroup.
    NamespaceOrCgroup(&'static str),
    /// This namespace, or else root (which holds the capabilities to give up): not applicable
    /// in a fallback pass whose toolsmith runs as another user.
    NamespaceOrRoot(&'static str),
    /// No namespaces: what a fallback pass must refuse; not a case of a normal pass.
    Fallback,
}

struct Case {
    name: &'static str,
    tried: &'static str,
    kind: Kind,
    needs: Needs,
    run: fn(&Ctx) -> Verdict,
}

impl Case {
    fn needs(self, needs: Needs) -> Case {
        Case { needs, ..self }
    }

    /// Whether the case is one of this pass's, and if so, what it needs that the pass lacks.
    fn in_pass(&self, mode: Mode, facts: Facts) -> Option<Option<String>> {
        match (self.needs, mode.fallback()) {
            (Needs::Fallback, false) => None,
            (Needs::Namespace(what), true) => Some(Some(what.to_string())),
            (Needs::NamespaceOrCgroup(what), true) if !facts.cgroup => {
                Some(Some(format!("{what}, or a run cgroup")))
            }
            (Needs::NamespaceOrRoot(what), true) if !facts.root => {
                Some(Some(format!("{what}, or root")))
            }
            _ => Some(None),
        }
    }
}

fn cases() -> Vec<Case> {
    use Kind::*;
    let c = |name, tried, kind, run| Case {
        name,
        tried,
        kind,
        needs: Needs::Nothing,
        run,
    };
    let network = Needs::Namespace("network namespace");
    vec![
        // Controls: the probe, unconfined, reaches what the sandbox must keep it from.
        c(
            "control: read ~/.ssh/id_rsa",
            "the unconfined probe reads the canary key",
            Control,
            control_read,
        ),
        c(
            "control: TCP listener",
            "the unconfined probe connects to the loopback listener",
            Control,
            control_tcp,
        ),
        c(
            "control: UDP socket",
            "the unconfined probe sends to the host UDP socket",
            Control,
            control_udp,
        ),
        c(
            "control: abstract socket",
            "the unconfined probe connects to the abstract listener",
            Control,
            control_abstract,
        ),
        c(
            "control: $XDG_RUNTIME_DIR/bus",
            "the unconfined probe connects to the bus listener",
            Control,
            control_bus,
        ),
        c(
            "control: /proc/<victim>/environ",
            "the unconfined probe reads the victim's environment",
            Control,
            control_environ,
        ),
        c(
            "control: setuid binary",
            "the unconfined setuid-root probe copy (or root) holds privilege",
            Control,
            control_setuid,
        ),
        c(
            "control: TIOCSTI",
            "the unconfined probe pushes a command into the pty's input",
            Control,
            control_tiocsti,
        ),
        // Files.
        c(
            "read home secrets",
            "read ~/.ssh/id_rsa, ~/.config/gh/hosts.yml, ~/.bashrc, /root/.ssh/id_rsa, /etc/shadow; list ~, /root, /home",
            Normal,
            read_home,
        ),
        c(
            "write host /tmp",
            "create a file at a host /tmp path",
            Normal,
            write_host_tmp,
        ),
        c(
            "write ~/.bashrc",
            "append to ~/.bashrc, create ~/.ssh/authorized_keys and a file outside by host paths",
            Normal,
            write_home,
        ),
        c(
            "symlink read",
            "read a planted symlink to ~/.ssh/id_rsa (ro and rw workspace) and one made in /work",
            Normal,
            symlink_read,
        ),
        c(
            "symlink write",
            "write through planted symlinks to ~/.ssh/id_rsa and to a host /tmp path",
            Normal,
            symlink_write,
        ),
        c(
            "hard link write",
            "write through a hard link (ro workspace) to a secret outside it",
            Normal,
            hardlink_write,
        ),
        c(
            "hard link make",
            "link ~/.ssh/id_rsa, /tool/probe and /usr/bin/passwd into the rw workspace",
            Normal,
            hardlink_make,
        ),
        c(
            "rename out",
            "rename a workspace file to /tmp, /work, / and ~",
            Normal,
            rename_out,
        ),
        c(
            "chmod/chown/utime",
            "chmod, chown and utimensat a ro-workspace file, /tool/probe, /usr/bin/passwd",
            Normal,
            metadata,
        ),
        c(
            "/proc of host processes",
            "read /proc/1/root/~/.ssh/id_rsa, /proc/<test|daemon|victim>/environ, list their cwd and root",
            Normal,
            proc_host,
        ),
        c(
            "host pids visible",
            "list /proc and `ps -e` inside",
            Normal,
            host_pids,
        ),
        c(
            "devices",
            "read /dev/mem, /dev/kmem, /dev/port, /dev/kmsg, block devices, /dev/kvm, /dev/tty; mknod",
            Normal,
            devices,
        ),
        c(
            "reopen inherited fd",
            "reopen stdin (a host file opened read-only) and fd 7 for writing via /proc/self/fd",
            Normal,
            reopen_fd,
        ),
        c(
            "overwrite via /proc/self/exe",
            "open /proc/self/exe, /proc/1/exe and the toolsmith helper binary for writing",
            Normal,
            self_exe,
        ),
        c(
            "cgroup escape",
            "write to /sys/fs/cgroup/{pids,memory,unified}/cgroup.procs",
            Normal,
            cgroup_escape,
        ),
        c(
            "sysctl and sysrq",
            "write /proc/sys/kernel/pid_max (its own value) and /proc/sysrq-trigger",
            Normal,
            sysctl,
        ),
        // Namespaces and privileges.
        c(
            "mount",
            "mount a tmpfs, remount / rw, umount /proc, fsopen; `mount -t tmpfs`",
            Normal,
            mount,
        ),
        c("pivot_root", "pivot_root(/tmp, /tmp)", Normal, pivot_root),
        c("chroot", "chroot(/tmp)", Normal, chroot),
        c(
            "nested user namespaces",
            "unshare/clone/clone3 with CLONE_NEWUSER, setns; `unshare -U`, `unshare -r`",
            Normal,
            userns,
        ),
        c(
            "sethostname",
            "sethostname(pwned), write /proc/sys/kernel/hostname",
            Normal,
            sethostname,
        ),
        c(
            "setuid binary",
            "exec a setuid-root binary from the workspace, read its ids and capabilities",
            Normal,
            setuid,
        ),
        c(
            "nosuid view",
            "statvfs(/usr/bin) in the view: mounted nosuid",
            Normal,
            nosuid_view,
        )
        .needs(Needs::Namespace("mount namespace")),
        c(
            "capabilities",
            "read NoNewPrivs, Seccomp and the effective, permitted, inheritable and ambient sets in /proc/self/status",
            Normal,
            capabilities,
        ),
        c(
            "capability bounding set",
            "read CapBnd in /proc/self/status",
            Normal,
            bounding_set,
        )
        .needs(Needs::NamespaceOrRoot("user namespace")),
        c("bpf", "bpf(BPF_MAP_CREATE, array)", Normal, bpf),
        c(
            "perf_event_open",
            "perf_event_open(task clock, self)",
            Normal,
            perf,
        ),
        c(
            "userfaultfd",
            "userfaultfd(UFFD_USER_MODE_ONLY)",
            Normal,
            userfaultfd,
        ),
        c(
            "keyctl",
            "keyctl(GET_KEYRING_ID, session), add_key(user)",
            Normal,
            keyctl,
        ),
        c(
            "TIOCSTI",
            "TIOCSCTTY on the pty given as stdin, then TIOCSTI (also with high bits), TIOCLINUX; open /dev/ptmx",
            Normal,
            tiocsti,
        ),
        // Processes.
        c(
            "ptrace daemon",
            "PTRACE_ATTACH/SEIZE, process_vm_readv/writev of toolsmithd and the victim",
            Normal,
            ptrace,
        ),
        c(
            "kill host processes",
            "kill(SIGKILL) the victim, toolsmithd and the test; kill(-1, SIGKILL)",
            Normal,
            kill_host,
        ),
        // Network by grant: the proxy is the only way out, to the granted pair only.
        c(
            "grant: the granted pair is reached",
            "with --allow-host 127.0.0.1:<granted>: CONNECT, plain HTTP and SOCKS5 through the proxy (the control of the grant cases)",
            Normal,
            grant_reached,
        )
        .needs(network),
        c(
            "grant: direct connection",
            "with a grant: connect straight to the granted listener, to 1.1.1.1:80, and bind a port",
            Normal,
            grant_direct,
        )
        .needs(network),
        c(
            "grant: another host",
            "with 127.0.0.1:<granted> granted: ask the proxy for localhost:<granted> and example.org:443 (CONNECT, HTTP, SOCKS5)",
            Normal,
            grant_other_host,
        )
        .needs(network),
        c(
            "grant: IP literal",
            "with localhost:<granted> granted: ask the proxy for 127.0.0.1:<granted> and [::1]:<granted>",
            Normal,
            grant_ip_literal,
        )
        .needs(network),
        c(
            "grant: a name resolving to loopback",
            "with localhost:<granted> granted: ask the proxy for localhost:<granted> (CONNECT, HTTP, SOCKS5 by name): DNS rebinding, a granted name never reaches a loopback or private address",
            Normal,
            grant_name_to_loopback,
        )
        .needs(network),
        c(
            "grant: another port",
            "with 127.0.0.1:<granted> granted: ask the proxy for 127.0.0.1:<other listener> (CONNECT, HTTP, SOCKS5)",
            Normal,
            grant_other_port,
        )
        .needs(network),
        c(
            "grant: DNS from inside",
            "with a grant: getaddrinfo, getent, a UDP socket to 127.0.0.1:53 and to 8.8.8.8:53",
            Normal,
            grant_dns,
        )
        .needs(network),
        c(
            "grant: the proxy's socket to a denied host",
            "with a grant: raw requests to 127.0.0.1:3128 for a denied listener (CONNECT, absolute URI with a granted Host header, SOCKS5 by address)",
            Normal,
            grant_proxy_denied,
        )
        .needs(network),
        c(
            "grant: a host nobody granted",
            "--allow-host for a pair the policy's [grants] hosts does not list; --host-socket for a socket it does not list",
            Normal,
            grant_not_in_policy,
        ),
        c(
            "grant: host socket",
            "with one host socket granted: connect to it, and to another socket beside it on the host",
            Normal,
            grant_host_socket,
        )
        .needs(Needs::Namespace("mount namespace")),
        c(
            "grant: refused without namespaces",
            "in a fallback pass, --allow-host and --host-socket granted by the policy",
            Normal,
            grants_refused,
        )
        .needs(Needs::Fallback),
        // Network.
        c(
            "TCP to loopback",
            "connect to a host listener on 127.0.0.1 (and ::1)",
            Normal,
            tcp,
        ),
        c(
            "bash /dev/tcp",
            "bash: echo > /dev/tcp/127.0.0.1/<listener>",
            Normal,
            bash_dev_tcp,
        ),
        c(
            "python connect",
            "python3 socket.create_connection to the listener",
            Normal,
            python_connect,
        ),
        c(
            "UDP send",
            "sendto a host UDP socket on 127.0.0.1",
            Normal,
            udp,
        ),
        c(
            "DNS",
            "getaddrinfo(example.com), `getent hosts example.com`",
            Normal,
            dns,
        ),
        c(
            "raw/packet/netlink/vsock",
            "socket() for AF_INET raw, AF_INET6 raw, AF_PACKET, AF_NETLINK, AF_VSOCK, AF_ALG, TCP, UDP",
            Normal,
            sockets,
        ),
        c(
            "io_uring",
            "io_uring_setup (its SOCKET/CONNECT ops would bypass socket())",
            Normal,
            io_uring,
        ),
        c(
            "abstract unix socket",
            "connect to an abstract socket the host listens on",
            Normal,
            abstract_socket,
        ),
        c(
            "daemon control socket",
            "connect to toolsmithd's control socket by its host path",
            Normal,
            daemon_socket,
        ),
        c(
            "$XDG_RUNTIME_DIR/bus",
            "connect to a listener at the host's $XDG_RUNTIME_DIR/bus",
            Normal,
            bus,
        ),
        c(
            "SSH_AUTH_SOCK",
            "read SSH_AUTH_SOCK and connect to the host's agent socket",
            Normal,
            ssh_agent,
        ),
        // Environment and descriptors.
        c(
            "environment secrets",
            "print the environment (GITHUB_TOKEN, AWS_* set in toolsmith's)",
            Normal,
            env_secrets,
        ),
        // The user's toolchains, bound read-only.
        c(
            "toolchain: write into it",
            "with a venv bound as python's toolchain, write into its bin/, lib/ and pyvenv.cfg",
            Normal,
            toolchain_write,
        ),
        c(
            "toolchain: rest of home",
            "with a venv under ~/proj bound, read ~/.ssh, ~/.bashrc, ~/.config; list ~ and ~/proj",
            Normal,
            toolchain_home,
        ),
        c(
            "toolchain: another user's",
            "bind a venv owned by another uid (found first on toolsmith's PATH)",
            Normal,
            toolchain_other_user,
        ),
        c(
            "inherited fds",
            "list /proc/self/fd (toolsmith inherited fd 7 without CLOEXEC)",
            Normal,
            fds_inherited,
        ),
        c(
            "fd exhaustion",
            "open /dev/null until it fails",
            Normal,
            fd_exhaustion,
        ),
        // Resources, one at a time under the outer guard.
        c("fork bomb", "bash: f(){ f|f& }; f", Dangerous, fork_bomb),
        c(
            "thread bomb",
            "pthread_create until it fails",
            Dangerous,
            thread_bomb,
        ),
        c(
            "setsid/double-fork survivors",
            "setsid sleep and a double-forked sleep, then pid 1 exits",
            Dangerous,
            survivors_exit,
        )
        .needs(Needs::NamespaceOrCgroup("pid namespace")),
        c(
            "survivors of a wall kill",
            "setsid sleep & (sleep &); sleep, killed by --timeout 1",
            Dangerous,
            survivors_wall,
        )
        .needs(Needs::NamespaceOrCgroup("pid namespace")),
        c(
            "trap '' TERM loop",
            "sh: trap '' TERM; while :; do sleep 1; done (--timeout 2)",
            Dangerous,
            trap_term,
        ),
        c(
            "8 GiB allocation",
            "malloc(8 GiB) and touch every page",
            Dangerous,
            alloc,
        ),
        c("CPU spin", "for (;;) with --timeout 5", Dangerous, cpu_spin),
        c(
            "disk fill: one file",
            "write /work/fill until it fails",
            Dangerous,
            fill_file,
        ),
        c(
            "disk fill: tmpfs",
            "write 4 MiB files into /tmp until it fails",
            Dangerous,
            fill_tmpfs,
        )
        // The private /tmp is a tmpfs of FILE_MB: the fallback's is a host directory, bounded
        // per file (RLIMIT_FSIZE) but not in total, and is not filled here.
        .needs(Needs::Namespace("mount namespace")),
        c(
            "output flood",
            "64 KiB writes of 'x' to stdout, no newline, forever",
            Dangerous,
            flood,
        ),
    ]
}

// Controls --------------------------------------------------------------------------------------

fn control_read(ctx: &Ctx) -> Verdict {
    let run = ctx.unconfined(&["read", &ctx.pass.home_path(".ssh/id_rsa")], Stdio::null());
    let ok = run.stdout.contains(&ctx.pass.key);
    Verdict {
        observed: format!("key read unconfined: {ok}"),
        ok,
    }
}

fn control_tcp(ctx: &Ctx) -> Verdict {
    let l = Tcp::new();
    let _ = ctx.unconfined(&["tcp", "127.0.0.1", &l.port()], Stdio::null());
    let n = l.accepted();
    Verdict {
        observed: format!("listener accepted {n}"),
        ok: n == 1,
    }
}

fn control_udp(ctx: &Ctx) -> Verdict {
    let s = Udp::new();
    let _ = ctx.unconfined(&["udp", "127.0.0.1", &s.port()], Stdio::null());
    std::thread::sleep(Duration::from_millis(20));
    let n = s.received();
    Verdict {
        observed: format!("socket received {n}"),
        ok: n == 1,
    }
}

fn control_abstract(ctx: &Ctx) -> Verdict {
    let name = unique("toolsmith-battery-control");
    let l = Unix::abstract_name(&name);
    let _ = ctx.unconfined(&["abstract", &name], Stdio::null());
    let n = l.accepted();
    Verdict {
        observed: format!("listener accepted {n}"),
        ok: n == 1,
    }
}

fn control_bus(ctx: &Ctx) -> Verdict {
    let path = ctx.pass.runtime.join("bus");
    let l = Unix::path(&path);
    let _ = ctx.unconfined(&["unix", &path.display().to_string()], Stdio::null());
    let n = l.accepted();
    Verdict {
        observed: format!("listener accepted {n}"),
        ok: n == 1,
    }
}

fn control_environ(ctx: &Ctx) -> Verdict {
    let path = format!("/proc/{}/environ", ctx.pass.victim_pid);
    let run = ctx.unconfined(&["read", &path], Stdio::null());
    let ok = run.stdout.contains(&ctx.pass.victim_secret);
    Verdict {
        observed: format!("victim's secret read unconfined: {ok}"),
        ok,
    }
}

fn control_setuid(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    if p.ids.is_none() && is_root() {
        let run = ctx.unconfined(&["ids"], Stdio::null());
        let caps = run.info().into_iter().find(|l| l.starts_with("CapEff:"));
        let ok = caps.is_some_and(|c| !c.ends_with("0000000000000000"));
        return Verdict {
            observed: format!("unconfined root: {}", caps.unwrap_or("no CapEff")),
            ok,
        };
    }
    if !p.suid {
        return Verdict {
            observed: "skipped: only root can make a setuid-root copy".into(),
            ok: true,
        };
    }
    let nosuid = nix::sys::statvfs::statvfs(&p.ws_ro)
        .is_ok_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_NOSUID));
    if nosuid {
        return Verdict {
            observed: "n/a: the host mounts the test's directory nosuid".into(),
            ok: true,
        };
    }
    let mut cmd = Command::new(p.ws_ro.join("suid-probe"));
    cmd.arg("ids");
    p.launch(&mut cmd, true);
    let (_, out, _, _) = spawn_and_wait(cmd, Stdio::null(), 10);
    let out = String::from_utf8_lossy(&out);
    let ok = out.contains("ALLOWED execve(setuid binary)");
    Verdict {
        observed: format!(
            "unconfined: {}",
            out.lines()
                .find(|l| l.contains("euid="))
                .unwrap_or("no ids")
        ),
        ok,
    }
}

fn control_tiocsti(ctx: &Ctx) -> Verdict {
    if fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|v| v.trim() == "0") {
        return Verdict {
            observed: "n/a: the kernel refuses TIOCSTI (dev.tty.legacy_tiocsti = 0)".into(),
            ok: true,
        };
    }
    let pty = Pty::open();
    let mut cmd = Command::new(ctx.pass.tool.join("probe"));
    cmd.arg("tiocsti");
    ctx.pass.launch(&mut cmd, true);
    // The probe must lead a session to take the pty as its controlling terminal.
    // SAFETY: setsid in the child between fork and exec is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let _ = spawn_and_wait(cmd, pty.stdin(), 10);
    let pending = pty.pending_input();
    let ok = pending.contains("PWNED-BY-TIOCSTI");
    Verdict {
        observed: format!("pty input after the run: {:?}", pending.trim()),
        ok,
    }
}

// Toolchains ------------------------------------------------------------------------------------

/// The case's verdict when this pass has no virtual environment to bind.
fn no_venv() -> Verdict {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI has /usr/bin/python3 (python3-venv) to make the toolchain cases' venv"
    );
    Verdict {
        observed: "skipped: no /usr/bin/python3 to make a virtual environment".into(),
        ok: true,
    }
}

fn toolchain_write(ctx: &Ctx) -> Verdict {
    let Some(venv) = ctx.pass.venv.clone() else {
        return no_venv();
    };
    let cfg = venv.join("pyvenv.cfg");
    let before = snapshot(&cfg);
    let targets = [
        venv.join("bin/planted"),
        venv.join("lib/planted"),
        cfg.clone(),
        venv.join("bin/python"),
    ];
    let mut command = vec!["/tool/probe".to_owned(), "write".to_owned()];
    command.extend(targets.iter().map(|t| t.display().to_string()));
    let words: Vec<&str> = command.iter().map(String::as_str).collect();
    let run = ctx.sandbox(
        Opts {
            toolchain: Some(venv.clone()),
            ..Opts::default()
        },
        &words,
    );
    ctx.refused(
        &[&run],
        vec![
            ("pyvenv.cfg unchanged".into(), snapshot(&cfg) == before),
            (
                "nothing planted in the venv".into(),
                !venv.join("bin/planted").exists() && !venv.join("lib/planted").exists(),
            ),
        ],
    )
}

fn toolchain_home(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let Some(venv) = p.venv.clone() else {
        return no_venv();
    };
    let opts = || Opts {
        toolchain: Some(venv.clone()),
        ..Opts::default()
    };
    let read = ctx.sandbox(
        opts(),
        &[
            "/tool/probe",
            "read",
            &p.home_path(".ssh/id_rsa"),
            &p.home_path(".bashrc"),
            &p.home_path(".config/gh/hosts.yml"),
            "/etc/shadow",
        ],
    );
    let hidden = ctx.sandbox(
        opts(),
        &[
            "/tool/probe",
            "list",
            &p.home_path(".ssh"),
            &p.home_path(".config"),
        ],
    );
    // The way down to the toolchain is all of the home the view holds.
    let home = p.home_path("");
    let proj = p.home_path("proj");
    let shown = ctx.sandbox(opts(), &["/tool/probe", "list", &home, &proj]);
    let listed = shown.allowed().join(" | ");
    let only_the_way = listed.contains(&format!("opendir({home}): 1 entries: proj "))
        && listed.contains(&format!("opendir({proj}): 1 entries: .venv "));
    // And the toolchain works: its python runs, as the venv.
    let python = ctx.sandbox(
        opts(),
        &[
            "python",
            "-c",
            "import sys; print('INFO prefix', sys.prefix)",
        ],
    );
    let prefix = python
        .info()
        .first()
        .map(|l| l.to_string())
        .unwrap_or_default();
    // Without a view, the home around the venv cannot be listed at all.
    let (shown_what, shown_holds) = if ctx.fallback() {
        (
            format!("~ and ~/proj not listed: {}", shown.errnos()),
            shown.allowed().is_empty() && shown.denied().len() == 2,
        )
    } else {
        (
            format!("~ lists only the way to the venv ({listed})"),
            only_the_way,
        )
    };
    let mut verdict = ctx.refused(
        &[&read, &hidden],
        vec![
            (shown_what, shown_holds),
            (
                format!(
                    "the venv's python runs ({prefix:?}; {})",
                    python.stderr.trim()
                ),
                prefix == format!("prefix {}", venv.display()),
            ),
        ],
    );
    if let Some(failure) = shown.failure().or(python.failure()) {
        verdict = Verdict {
            observed: failure,
            ok: false,
        };
    }
    verdict
}

fn toolchain_other_user(ctx: &Ctx) -> Verdict {
    let Some(other) = ctx.pass.other_venv.clone() else {
        return Verdict {
            observed: "skipped: only root can make another user's files".into(),
            ok: true,
        };
    };
    let run = ctx.sandbox(
        Opts {
            toolchain: Some(other.clone()),
            ..Opts::default()
        },
        &["/tool/probe", "hello"],
    );
    let refused = run.report.is_none()
        && run.code == Some(125)
        && run
            .cli_stderr
            .contains(&format!("belongs to uid {OTHER_UID}"));
    Verdict {
        observed: format!(
            "exit {:?}: {}",
            run.code,
            run.cli_stderr.trim().chars().take(240).collect::<String>()
        ),
        ok: refused && run.info().is_empty(),
    }
}

// Files -----------------------------------------------------------------------------------------

fn read_home(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let read = ctx.probe(&[
        "read",
        &p.home_path(".ssh/id_rsa"),
        &p.home_path(".config/gh/hosts.yml"),
        &p.home_path(".bashrc"),
        "/root/.ssh/id_rsa",
        "/root/.bash_history",
        "/etc/shadow",
    ]);
    let list = ctx.probe(&["list", &p.home_path(""), "/root", "/home", "/run", "/sys"]);
    ctx.refused(&[&read, &list], Vec::new())
}

fn write_host_tmp(ctx: &Ctx) -> Verdict {
    let target = ctx.pass.host_tmp_name.display().to_string();
    let run = ctx.probe(&["write", &target]);
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    // The sandbox has a private /tmp: writing there works by design.
    let exists = ctx.pass.host_tmp_name.exists();
    Verdict {
        observed: format!(
            "inside: {}; host {target}: {}",
            run.stdout.lines().next().unwrap_or("nothing"),
            if exists { "CREATED" } else { "absent" }
        ),
        ok: !exists && run.allowed().len() + run.denied().len() == 1,
    }
}

fn write_home(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let bashrc = p.home.join(".bashrc");
    let before = snapshot(&bashrc);
    let outside = p.outside_secret.with_file_name("planted");
    let run = ctx.probe(&[
        "write",
        &p.home_path(".bashrc"),
        &p.home_path(".ssh/authorized_keys"),
        &outside.display().to_string(),
    ]);
    let unchanged = snapshot(&bashrc) == before;
    let keys = p.home.join(".ssh/authorized_keys").exists();
    ctx.refused(
        &[&run],
        vec![
            ("~/.bashrc unchanged".into(), unchanged),
            ("~/.ssh/authorized_keys absent".into(), !keys),
            ("nothing planted outside".into(), !outside.exists()),
        ],
    )
}

fn symlink_read(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let ro = ctx.sandbox(
        Opts {
            workspace: Some(("read", p.ws_ro.clone())),
            ..Opts::default()
        },
        &["/tool/probe", "read", "/workspace/link-to-key"],
    );
    // Made in the run's home: /work, or the fallback's host work directory.
    let made = format!(
        "ln -s {} \"$HOME/k\" && exec /tool/probe read \"$HOME/k\" /workspace/link-to-key",
        p.home_path(".ssh/id_rsa")
    );
    let rw = ctx.sandbox(
        Opts {
            workspace: Some(("write", p.ws_rw.clone())),
            ..Opts::default()
        },
        &["sh", "-c", &made],
    );
    ctx.refused(&[&ro, &rw], vec![("key not in any output".into(), true)])
}

fn symlink_write(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let key = p.home.join(".ssh/id_rsa");
    let before = snapshot(&key);
    let rw = || Opts {
        workspace: Some(("write", p.ws_rw.clone())),
        ..Opts::default()
    };
    let run = ctx.sandbox(rw(), &["/tool/probe", "write", "/workspace/link-to-key"]);
    // A symlink to a host /tmp path lands in the sandbox's private /tmp: the write works there
    // by design, and the host must not see it.
    let tmp = ctx.sandbox(
        rw(),
        &["/tool/probe", "write", "/workspace/link-to-host-tmp"],
    );
    let mut v = ctx.refused(
        &[&run],
        vec![
            ("~/.ssh/id_rsa unchanged".into(), snapshot(&key) == before),
            (
                format!("host {} absent", p.via_symlink.display()),
                !p.via_symlink.exists(),
            ),
        ],
    );
    let inside = tmp.stdout.lines().next().unwrap_or("nothing").to_string();
    v.observed
        .push_str(&format!("; via the /tmp symlink, inside: {inside}"));
    v.ok &= tmp.failure().is_none() && ctx.leaks(&tmp).is_empty();
    v
}

fn hardlink_write(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let before = snapshot(&p.outside_secret);
    let run = ctx.sandbox(
        Opts {
            workspace: Some(("read", p.ws_ro.clone())),
            ..Opts::default()
        },
        &["/tool/probe", "write", "/workspace/hard-secret"],
    );
    ctx.refused(
        &[&run],
        vec![(
            "the linked secret unchanged".into(),
            snapshot(&p.outside_secret) == before,
        )],
    )
}

fn hardlink_make(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let run = ctx.sandbox(
        Opts {
            workspace: Some(("write", p.ws_rw.clone())),
            ..Opts::default()
        },
        &[
            "/tool/probe",
            "link",
            &p.home_path(".ssh/id_rsa"),
            "/workspace/stolen-key",
            "/tool/probe",
            "/workspace/probe-link",
            "/usr/bin/passwd",
            "/workspace/passwd-link",
        ],
    );
    let made: Vec<&str> = ["stolen-key", "probe-link", "passwd-link"]
        .into_iter()
        .filter(|n| p.ws_rw.join(n).exists())
        .collect();
    ctx.refused(
        &[&run],
        vec![(
            format!("no link in the workspace {made:?}"),
            made.is_empty(),
        )],
    )
}

fn rename_out(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let keep = p.ws_rw.join("keep.txt");
    let before = snapshot(&keep);
    let home_keep = p.home_path("keep.txt");
    let run = ctx.sandbox(
        Opts {
            workspace: Some(("write", p.ws_rw.clone())),
            ..Opts::default()
        },
        &[
            "/tool/probe",
            "rename",
            "/workspace/keep.txt",
            "/tmp/keep.txt",
            "/work/keep.txt",
            "/keep.txt",
            &home_keep,
        ],
    );
    ctx.refused(
        &[&run],
        vec![
            (
                "workspace file still there".into(),
                snapshot(&keep) == before,
            ),
            ("nothing in ~".into(), !Path::new(&home_keep).exists()),
        ],
    )
}

fn metadata(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let files = [
        p.ws_ro.join("canary.txt"),
        p.tool.join("probe"),
        PathBuf::from("/usr/bin/passwd"),
    ];
    let before: Vec<String> = files.iter().map(|f| snapshot(f)).collect();
    let saved: Vec<fs::Metadata> = files
        .iter()
        .map(|f| fs::metadata(f).expect("metadata"))
        .collect();
    let run = ctx.sandbox(
        Opts {
            workspace: Some(("read", p.ws_ro.clone())),
            ..Opts::default()
        },
        &[
            "/tool/probe",
            "metadata",
            "/workspace/canary.txt",
            "/tool/probe",
            "/usr/bin/passwd",
        ],
    );
    let after: Vec<String> = files.iter().map(|f| snapshot(f)).collect();
    let mut v = ctx.refused(
        &[&run],
        vec![(
            "mode, owner, mtime and ctime of all three unchanged".into(),
            before == after,
        )],
    );
    // A hole here changes a system file: put back what can be put back (owner, mode, times;
    // not the ctime), so that a failing battery leaves no setuid bit lost, no file writable.
    for ((file, saved), was) in files.iter().zip(&saved).zip(&before) {
        if snapshot(file) != *was {
            restore(file, saved);
            v.observed
                .push_str(&format!("; {} restored by the test", file.display()));
        }
    }
    v
}

/// Puts a file's owner, mode and times back as `saved` held them.
fn restore(path: &Path, saved: &fs::Metadata) {
    std::os::unix::fs::chown(path, Some(saved.uid()), Some(saved.gid())).expect("chown back");
    fs::set_permissions(path, saved.permissions()).expect("chmod back");
    let times = fs::FileTimes::new()
        .set_accessed(saved.accessed().expect("atime"))
        .set_modified(saved.modified().expect("mtime"));
    fs::File::open(path)
        .and_then(|f| f.set_times(times))
        .expect("times back");
}

fn proc_host(ctx: &Ctx) -> Verdict {
    let s = ctx.shared;
    let p = ctx.pass;
    let key_via_root = format!("/proc/1/root{}", p.home_path(".ssh/id_rsa"));
    let pids = [s.test_pid, s.daemon_pid, p.victim_pid];
    let mut read = vec!["read".to_string(), key_via_root];
    let mut list = vec!["list".to_string()];
    for pid in pids {
        read.push(format!("/proc/{pid}/environ"));
        read.push(format!("/proc/{pid}/cmdline"));
        list.push(format!("/proc/{pid}/cwd"));
        list.push(format!("/proc/{pid}/root"));
    }
    let as_str = |v: &[String]| v.iter().map(String::as_str).collect::<Vec<_>>().join(" ");
    let script = format!(
        "/tool/probe {}; /tool/probe {}",
        as_str(&read),
        as_str(&list)
    );
    let run = ctx.sandbox(Opts::default(), &["sh", "-c", &script]);
    ctx.refused(&[&run], Vec::new())
}

fn host_pids(ctx: &Ctx) -> Verdict {
    let run = ctx.sandbox(
        Opts::default(),
        &[
            "sh",
            "-c",
            "/tool/probe ps; ps -e -o pid= | tr -s ' \\n' ' ' | sed 's/^/INFO ps:/'; echo",
        ],
    );
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    let seen: Vec<i32> = run
        .info()
        .iter()
        .flat_map(|l| {
            l.trim_start_matches("pids")
                .trim_start_matches("ps:")
                .split_whitespace()
        })
        .filter_map(|p| p.parse().ok())
        .collect();
    let host = [
        ctx.shared.test_pid,
        ctx.shared.daemon_pid,
        ctx.pass.victim_pid,
    ];
    // Without a pid namespace there is no /proc of the run's own: the host's must not be
    // listed at all (Landlock).
    let listing = if ctx.fallback() {
        let refused = run.denied().iter().any(|l| l.starts_with("opendir(/proc)"));
        (format!("/proc not listed: {}", run.errnos()), refused)
    } else {
        ("only the run's pids".to_string(), !seen.is_empty())
    };
    let ok = listing.1 && seen.iter().all(|p| *p < 16 && !host.contains(p));
    Verdict {
        observed: format!(
            "pids seen inside: {seen:?}; host pids {host:?} absent: {}; {}",
            seen.iter().all(|p| !host.contains(p)),
            listing.0
        ),
        ok,
    }
}

fn devices(ctx: &Ctx) -> Verdict {
    let read = ctx.probe(&[
        "read",
        "/dev/mem",
        "/dev/kmem",
        "/dev/port",
        "/dev/kmsg",
        "/dev/sda",
        "/dev/vda",
        "/dev/nvme0n1",
        "/dev/loop0",
        "/dev/kvm",
        "/dev/tty",
        "/dev/console",
    ]);
    let mknod = ctx.probe(&["mknod", "/tmp/sda", "/work/sda"]);
    let list = ctx.probe(&["list", "/dev"]);
    let dev = list.allowed().join(" ");
    let expected = [
        "full", "null", "random", "urandom", "zero", "fd", "stdin", "stdout", "stderr",
    ];
    let extra: Vec<&str> = dev
        .split_once("entries: ")
        .map(|(_, names)| names.split_whitespace().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|n| !expected.contains(n))
        .collect();
    if ctx.fallback() {
        // The host's /dev, which Landlock lets the run open a few files of, but not list.
        return ctx.refused(&[&read, &mknod, &list], Vec::new());
    }
    let mut verdict = ctx.refused(
        &[&read, &mknod],
        vec![(
            format!("/dev holds nothing else {extra:?}"),
            extra.is_empty(),
        )],
    );
    verdict.ok &= !dev.is_empty();
    verdict
}

fn reopen_fd(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let (stdin_before, secret_before) = (snapshot(&p.stdin_canary), snapshot(&p.outside_secret));
    let run = ctx.probe(&["reopen", "0", "7"]);
    ctx.refused(
        &[&run],
        vec![
            (
                "stdin's host file unchanged".into(),
                snapshot(&p.stdin_canary) == stdin_before,
            ),
            (
                "fd 7's file unchanged".into(),
                snapshot(&p.outside_secret) == secret_before,
            ),
        ],
    )
}

fn self_exe(ctx: &Ctx) -> Verdict {
    let helper = ctx.shared.toolsmith.display().to_string();
    let before = (
        snapshot(&ctx.shared.toolsmith),
        snapshot(&ctx.pass.tool.join("probe")),
    );
    let run = ctx.probe(&["exe", "/proc/self/exe", "/proc/1/exe", &helper]);
    let after = (
        snapshot(&ctx.shared.toolsmith),
        snapshot(&ctx.pass.tool.join("probe")),
    );
    ctx.refused(
        &[&run],
        vec![(
            "the toolsmith helper binary and the probe unchanged".into(),
            before == after,
        )],
    )
}

fn cgroup_escape(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&[
        "write",
        "/sys/fs/cgroup/pids/cgroup.procs",
        "/sys/fs/cgroup/memory/cgroup.procs",
        "/sys/fs/cgroup/unified/cgroup.procs",
        "/sys/fs/cgroup/cgroup.procs",
    ]);
    ctx.refused(&[&run], Vec::new())
}

fn sysctl(ctx: &Ctx) -> Verdict {
    let before = fs::read_to_string("/proc/sys/kernel/pid_max").unwrap_or_default();
    let run = ctx.probe(&["rewrite", "/proc/sys/kernel/pid_max", "/proc/sysrq-trigger"]);
    let after = fs::read_to_string("/proc/sys/kernel/pid_max").unwrap_or_default();
    ctx.refused(&[&run], vec![("pid_max unchanged".into(), before == after)])
}

// Namespaces and privileges ---------------------------------------------------------------------

fn mount(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["mount"]);
    let shell = ctx.sandbox(
        Opts::default(),
        &[
            "sh",
            "-c",
            "mount -t tmpfs none /tmp 2>/dev/null && echo 'ALLOWED mount: tmpfs' \
             || echo 'DENIED mount -t tmpfs: failed'",
        ],
    );
    ctx.refused(&[&run, &shell], Vec::new())
}

fn pivot_root(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["pivot_root"]);
    ctx.refused(&[&run], Vec::new())
}

fn chroot(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["chroot"]);
    ctx.refused(&[&run], Vec::new())
}

fn userns(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["userns"]);
    let shell = ctx.sandbox(
        Opts::default(),
        &[
            "sh",
            "-c",
            "for o in -U -r; do unshare $o true 2>/dev/null && echo \"ALLOWED unshare $o: ok\" \
             || echo \"DENIED unshare $o: failed\"; done",
        ],
    );
    ctx.refused(&[&run, &shell], Vec::new())
}

fn sethostname(ctx: &Ctx) -> Verdict {
    let before = hostname();
    let run = ctx.probe(&["sethostname", "pwned"]);
    let sysctl = ctx.probe(&["write", "/proc/sys/kernel/hostname"]);
    let after = hostname();
    ctx.refused(
        &[&run, &sysctl],
        vec![(format!("host name still {after:?}"), before == after)],
    )
}

fn setuid(ctx: &Ctx) -> Verdict {
    let p = ctx.pass;
    let program = if p.suid {
        "/workspace/suid-probe"
    } else {
        "/tool/probe"
    };
    let run = ctx.sandbox(
        Opts {
            workspace: Some(("read", p.ws_ro.clone())),
            ..Opts::default()
        },
        &[program, "ids"],
    );
    let info = run.info();
    let caps: Vec<&&str> = info
        .iter()
        .filter(|l| l.starts_with("CapEff:") || l.starts_with("CapPrm:"))
        .collect();
    let caps_zero = caps.len() == 2 && caps.iter().all(|l| l.ends_with("0000000000000000"));
    let mut v = ctx.refused(
        &[&run],
        vec![(format!("CapEff and CapPrm empty {caps:?}"), caps_zero)],
    );
    if !p.suid {
        v.observed.push_str(" (no setuid-root copy: not root)");
    }
    v
}

/// The view's system directories are mounted nosuid: a setuid binary there is inert even
/// before no_new_privs (which the setuid case checks).
fn nosuid_view(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["ids"]);
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    let line = run
        .info()
        .into_iter()
        .find(|l| l.starts_with("/usr/bin nosuid="))
        .unwrap_or("no statvfs line");
    Verdict {
        observed: format!("in the view: {line}"),
        ok: line == "/usr/bin nosuid=1",
    }
}

fn capabilities(ctx: &Ctx) -> Verdict {
    let zero = "0000000000000000";
    status_fields(
        ctx,
        &[
            ("NoNewPrivs:", "1"),
            ("Seccomp:", "2"),
            ("CapEff:", zero),
            ("CapPrm:", zero),
            ("CapInh:", zero),
            ("CapAmb:", zero),
        ],
    )
}

/// The bounding set, emptied so that nothing an `execve` could grant is left. Only a process
/// holding `CAP_SETPCAP` can empty it: root, or any caller inside its own user namespace; a
/// caller that is neither keeps a full bounding set in the fallback, harmless under
/// no_new_privs (setuid bits and file capabilities grant nothing: the setuid case).
fn bounding_set(ctx: &Ctx) -> Verdict {
    status_fields(ctx, &[("CapBnd:", "0000000000000000")])
}

/// The probe's status lines (`/proc/self/status`, or the same from the system calls where there
/// is no `/proc`), each field as it must read.
fn status_fields(ctx: &Ctx, checks: &[(&str, &str)]) -> Verdict {
    let run = ctx.probe(&["status"]);
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    let info = run.info();
    let field = |name: &str| -> String {
        info.iter()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or("?")
            .trim()
            .to_string()
    };
    let ok = checks.iter().all(|(n, want)| field(n) == *want);
    Verdict {
        observed: checks
            .iter()
            .map(|(n, _)| format!("{n} {}", field(n)))
            .collect::<Vec<_>>()
            .join(", "),
        ok,
    }
}

fn bpf(ctx: &Ctx) -> Verdict {
    ctx.refused(&[&ctx.probe(&["bpf"])], Vec::new())
}

fn perf(ctx: &Ctx) -> Verdict {
    ctx.refused(&[&ctx.probe(&["perf"])], Vec::new())
}

fn userfaultfd(ctx: &Ctx) -> Verdict {
    ctx.refused(&[&ctx.probe(&["userfaultfd"])], Vec::new())
}

fn keyctl(ctx: &Ctx) -> Verdict {
    ctx.refused(&[&ctx.probe(&["keyctl"])], Vec::new())
}

fn tiocsti(ctx: &Ctx) -> Verdict {
    let pty = Pty::open();
    let run = ctx.sandbox(
        Opts {
            stdin: Input::Pty(pty.stdin()),
            ..Opts::default()
        },
        &["/tool/probe", "tiocsti"],
    );
    let pending = pty.pending_input();
    ctx.refused(
        &[&run],
        vec![(
            format!("pty input after the run: {:?}", pending.trim()),
            pending.is_empty(),
        )],
    )
}

// Processes -------------------------------------------------------------------------------------

fn ptrace(ctx: &Ctx) -> Verdict {
    let (d, v) = (ctx.shared.daemon_pid, ctx.pass.victim_pid);
    let run = ctx.probe(&["ptrace", &d.to_string(), &v.to_string()]);
    ctx.refused(
        &[&run],
        vec![
            (
                format!("toolsmithd alive, TracerPid {}", tracer_of(d)),
                alive(d) && tracer_of(d) == "0",
            ),
            (
                format!("victim alive, TracerPid {}", tracer_of(v)),
                alive(v) && tracer_of(v) == "0",
            ),
        ],
    )
}

fn kill_host(ctx: &Ctx) -> Verdict {
    let (d, v, t) = (
        ctx.shared.daemon_pid,
        ctx.pass.victim_pid,
        ctx.shared.test_pid,
    );
    let run = ctx.probe(&["kill", &v.to_string(), &d.to_string(), &t.to_string()]);
    std::thread::sleep(Duration::from_millis(50));
    let victim_alive = ctx
        .pass
        .victim
        .lock()
        .map(|mut c| matches!(c.try_wait(), Ok(None)))
        .unwrap_or(false);
    ctx.refused(
        &[&run],
        vec![
            ("the victim sleep survives".into(), victim_alive),
            ("toolsmithd survives".into(), alive(d)),
        ],
    )
}

// Network ---------------------------------------------------------------------------------------

fn tcp(ctx: &Ctx) -> Verdict {
    let l = Tcp::new();
    let v4 = ctx.probe(&["tcp", "127.0.0.1", &l.port()]);
    let v6 = ctx.probe(&["tcp6", "::1", &l.port()]);
    let n = l.accepted();
    ctx.refused(
        &[&v4, &v6],
        vec![(format!("listener accepted {n}"), n == 0)],
    )
}

/// A policy file with the pass's `[sandbox]` table and `[grants]`, readable by the pass.
fn grant_policy(ctx: &Ctx, hosts: &[String], sockets: &[&Path]) -> PathBuf {
    let list = |items: Vec<String>| {
        items
            .iter()
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "{}\n[grants]\nhosts = [{}]\nhost_sockets = [{}]\n",
        policy_toml(ctx.pass.mode),
        list(hosts.to_vec()),
        list(sockets.iter().map(|s| s.display().to_string()).collect())
    );
    let path = ctx
        .pass
        .policy
        .with_file_name(format!("policy-grant-{}.toml", ctx.tag));
    fs::write(&path, text).expect("write policy");
    if let Some(ids) = ctx.pass.ids {
        chown_tree(&path, ids);
    }
    path
}

/// A loopback listener that answers each connection with one HTTP response.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Server {
    fn new() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("address").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&hits);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut buf = [0u8; 4096];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nserver-reply",
                    );
                });
            }
        });
        Server { port, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A Python client of the proxy: each `KIND HOST PORT [HOSTHEADER]` argument is one request
/// (`connect`, `http`, `socks-name`, `socks-ip`), reported as ALLOWED (the host answered
/// through the proxy) or DENIED (with the proxy's answer).
const PROXY_CLIENT: &str = r#"
import socket, sys, struct, ipaddress
for spec in sys.argv[1:]:
    kind, host, port, *rest = spec.split(' ')
    port = int(port)
    label = kind + ' ' + host + ':' + str(port)
    try:
        s = socket.create_connection(('127.0.0.1', 3128), 5)
        s.settimeout(5)
        if kind == 'connect':
            s.sendall(('CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (host, port, host, port)).encode())
            head = s.recv(4096)
            if head.startswith(b'HTTP/1.1 200'):
                s.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
                body = s.recv(4096)
                print(('ALLOWED ' if b'server-reply' in body else 'DENIED ') + label + ': tunnel ' + repr(body[:40]))
            else:
                print('DENIED ' + label + ': ' + head.split(b'\r\n')[0].decode('latin1'))
        elif kind == 'http':
            hostheader = rest[0] if rest else '%s:%d' % (host, port)
            s.sendall(('GET http://%s:%d/ HTTP/1.1\r\nHost: %s\r\n\r\n' % (host, port, hostheader)).encode())
            head = s.recv(4096)
            if b'server-reply' in head:
                print('ALLOWED ' + label + ': ' + head.split(b'\r\n')[0].decode('latin1'))
            else:
                print('DENIED ' + label + ': ' + head.split(b'\r\n')[0].decode('latin1'))
        else:
            s.sendall(b'\x05\x01\x00')
            if s.recv(2) != b'\x05\x00':
                print('DENIED ' + label + ': no method'); continue
            if kind == 'socks-ip':
                ip = ipaddress.ip_address(host)
                addr = (b'\x01' if ip.version == 4 else b'\x04') + ip.packed
            else:
                addr = b'\x03' + bytes([len(host)]) + host.encode()
            s.sendall(b'\x05\x01\x00' + addr + struct.pack('>H', port))
            reply = s.recv(10)
            if len(reply) > 1 and reply[1] == 0:
                s.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
                body = s.recv(4096)
                print(('ALLOWED ' if b'server-reply' in body else 'DENIED ') + label + ': socks tunnel')
            else:
                print('DENIED ' + label + ': SOCKS5 reply ' + str(reply[1] if len(reply) > 1 else None))
    except OSError as e:
        print('DENIED ' + label + ': ' + type(e).__name__ + ' ' + str(e))
"#;

/// Runs the proxy client in the sandbox under a grant.
fn through_proxy(ctx: &Ctx, policy: &Path, allow: &str, requests: &[String]) -> Run {
    let mut command = vec!["/usr/bin/python3", "-c", PROXY_CLIENT];
    command.extend(requests.iter().map(String::as_str));
    ctx.sandbox(
        Opts {
            policy: Some(policy.to_path_buf()),
            allow_hosts: vec![allow.to_owned()],
            timeout: 8,
            ..Opts::default()
        },
        &command,
    )
}

/// The report's connections: (host:port, verdict).
fn connections(run: &Run) -> Vec<(String, String)> {
    run.field("/connections")
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| {
                    (
                        format!("{}:{}", c["host"].as_str().unwrap_or(""), c["port"]),
                        c["verdict"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every connection the report lists was denied, and there were `n` of them.
fn all_denied(run: &Run, n: usize) -> (String, bool) {
    let seen = connections(run);
    let holds = seen.len() == n && seen.iter().all(|(_, v)| v == "denied");
    (format!("report: {seen:?}"), holds)
}

fn no_python() -> Option<Verdict> {
    (!Path::new("/usr/bin/python3").exists()).then(|| Verdict {
        observed: "skipped: no /usr/bin/python3".into(),
        ok: true,
    })
}

fn grant_reached(ctx: &Ctx) -> Verdict {
    if let Some(v) = no_python() {
        return v;
    }
    let server = Server::new();
    let granted = format!("127.0.0.1:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let port = server.port.to_string();
    let run = through_proxy(
        ctx,
        &policy,
        &granted,
        &[
            format!("connect 127.0.0.1 {port}"),
            format!("http 127.0.0.1 {port}"),
            format!("socks-ip 127.0.0.1 {port}"),
        ],
    );
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    let seen = connections(&run);
    let bytes = run.field("/connections/0/bytes_down").as_u64().unwrap_or(0);
    // The CLI forks its helper with a grant too: the proxy's thread starts after the fork.
    let helper = run.field("/helper");
    let ok = run.allowed().len() == 3
        && server.hits() == 3
        && seen.len() == 3
        && seen.iter().all(|(_, v)| v == "allowed")
        && bytes > 0
        && helper == "forked";
    Verdict {
        observed: format!(
            "allowed {:?}, denied {:?}; server got {}; report {seen:?}, {bytes} bytes down; \
             helper {helper}",
            run.allowed(),
            run.denied(),
            server.hits()
        ),
        ok,
    }
}

fn grant_direct(ctx: &Ctx) -> Verdict {
    let server = Server::new();
    let granted = format!("127.0.0.1:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let port = server.port.to_string();
    let opts = || Opts {
        policy: Some(policy.clone()),
        allow_hosts: vec![granted.clone()],
        ..Opts::default()
    };
    let direct = ctx.sandbox(opts(), &["/tool/probe", "tcp", "127.0.0.1", &port]);
    let outside = ctx.sandbox(opts(), &["/tool/probe", "tcp", "1.1.1.1", "80"]);
    let v6 = ctx.sandbox(opts(), &["/tool/probe", "tcp6", "::1", &port]);
    let script = format!(
        "echo hi 2>/dev/null >/dev/tcp/127.0.0.1/{port} && echo 'ALLOWED /dev/tcp: connected' \
         || echo 'DENIED bash /dev/tcp: failed'"
    );
    let bash = ctx.sandbox(opts(), &["bash", "-c", &script]);
    let n = server.hits();
    ctx.refused(
        &[&direct, &outside, &v6, &bash],
        vec![(
            format!("granted listener got {n} direct connections"),
            n == 0,
        )],
    )
}

fn grant_other_host(ctx: &Ctx) -> Verdict {
    if let Some(v) = no_python() {
        return v;
    }
    let server = Server::new();
    let granted = format!("127.0.0.1:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let port = server.port.to_string();
    let run = through_proxy(
        ctx,
        &policy,
        &granted,
        &[
            format!("connect localhost {port}"),
            format!("http localhost {port}"),
            format!("socks-name localhost {port}"),
            "connect example.org 443".into(),
            "http example.org 80".into(),
        ],
    );
    let n = server.hits();
    ctx.refused(
        &[&run],
        vec![
            (format!("granted listener got {n}"), n == 0),
            all_denied(&run, 5),
        ],
    )
}

fn grant_ip_literal(ctx: &Ctx) -> Verdict {
    if let Some(v) = no_python() {
        return v;
    }
    let server = Server::new();
    let granted = format!("localhost:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let port = server.port.to_string();
    let run = through_proxy(
        ctx,
        &policy,
        &granted,
        &[
            format!("connect 127.0.0.1 {port}"),
            format!("http 127.0.0.1 {port}"),
            format!("socks-ip 127.0.0.1 {port}"),
            format!("socks-ip ::1 {port}"),
        ],
    );
    let n = server.hits();
    ctx.refused(
        &[&run],
        vec![
            (format!("listener behind the granted name got {n}"), n == 0),
            all_denied(&run, 4),
        ],
    )
}

fn grant_name_to_loopback(ctx: &Ctx) -> Verdict {
    if let Some(v) = no_python() {
        return v;
    }
    let server = Server::new();
    let granted = format!("localhost:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let port = server.port.to_string();
    let run = through_proxy(
        ctx,
        &policy,
        &granted,
        &[
            format!("connect localhost {port}"),
            format!("http localhost {port}"),
            format!("socks-name localhost {port}"),
        ],
    );
    let n = server.hits();
    ctx.refused(
        &[&run],
        vec![
            (
                format!("loopback listener behind the granted name got {n}"),
                n == 0,
            ),
            all_denied(&run, 3),
        ],
    )
}

fn grant_other_port(ctx: &Ctx) -> Verdict {
    if let Some(v) = no_python() {
        return v;
    }
    let (server, other) = (Server::new(), Server::new());
    let granted = format!("127.0.0.1:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let port = other.port.to_string();
    let run = through_proxy(
        ctx,
        &policy,
        &granted,
        &[
            format!("connect 127.0.0.1 {port}"),
            format!("http 127.0.0.1 {port}"),
            format!("socks-ip 127.0.0.1 {port}"),
        ],
    );
    let n = server.hits() + other.hits();
    ctx.refused(
        &[&run],
        vec![(format!("listeners got {n}"), n == 0), all_denied(&run, 3)],
    )
}

fn grant_dns(ctx: &Ctx) -> Verdict {
    let server = Server::new();
    let granted = format!("127.0.0.1:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let opts = || Opts {
        policy: Some(policy.clone()),
        allow_hosts: vec![granted.clone()],
        ..Opts::default()
    };
    let lookup = ctx.sandbox(
        opts(),
        &["/tool/probe", "dns", "example.com", "localhost.localdomain"],
    );
    let getent = ctx.sandbox(
        opts(),
        &[
            "sh",
            "-c",
            "getent hosts example.com >/dev/null && echo 'ALLOWED getent: resolved' \
             || echo 'DENIED getent hosts example.com: failed'",
        ],
    );
    let udp_local = ctx.sandbox(opts(), &["/tool/probe", "udp", "127.0.0.1", "53"]);
    let udp_out = ctx.sandbox(opts(), &["/tool/probe", "udp", "8.8.8.8", "53"]);
    ctx.refused(&[&lookup, &getent, &udp_local, &udp_out], Vec::new())
}

fn grant_proxy_denied(ctx: &Ctx) -> Verdict {
    if let Some(v) = no_python() {
        return v;
    }
    let (server, denied) = (Server::new(), Server::new());
    let granted = format!("127.0.0.1:{}", server.port);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[]);
    let port = denied.port.to_string();
    let run = through_proxy(
        ctx,
        &policy,
        &granted,
        &[
            format!("connect 127.0.0.1 {port}"),
            // The Host header names the granted pair: the request line decides.
            format!("http 127.0.0.1 {port} {granted}"),
            format!("socks-ip 127.0.0.1 {port}"),
            format!("socks-name 127.0.0.1 {port}"),
        ],
    );
    let n = denied.hits() + server.hits();
    ctx.refused(
        &[&run],
        vec![(format!("listeners got {n}"), n == 0), all_denied(&run, 4)],
    )
}

fn grant_not_in_policy(ctx: &Ctx) -> Verdict {
    let server = Server::new();
    let socket_dir = ctx.pass.home.with_file_name(format!("sockets-{}", ctx.tag));
    fs::create_dir_all(&socket_dir).expect("mkdir");
    set_mode(&socket_dir, 0o755);
    let listener = Unix::path(&socket_dir.join("engine.sock"));
    // The pass's policy grants nothing.
    let host = ctx.sandbox(
        Opts {
            allow_hosts: vec![format!("127.0.0.1:{}", server.port)],
            ..Opts::default()
        },
        &["/tool/probe", "tcp", "127.0.0.1", &server.port.to_string()],
    );
    let socket = ctx.sandbox(
        Opts {
            host_sockets: vec![socket_dir.join("engine.sock")],
            ..Opts::default()
        },
        &[
            "/tool/probe",
            "unix",
            &socket_dir.join("engine.sock").display().to_string(),
        ],
    );
    // `--json`: the refusal is a JSON error on stderr.
    let hint = |run: &Run, line: &str| {
        let error: Value = serde_json::from_str(run.cli_stderr.trim()).unwrap_or(Value::Null);
        run.report.is_none()
            && run.code == Some(125)
            && error["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(line))
    };
    let host_line = format!("add \"127.0.0.1:{}\" to [grants] hosts in", server.port);
    let socket_line = format!(
        "add \"{}\" to [grants] host_sockets in",
        socket_dir.join("engine.sock").display()
    );
    let (n, m) = (server.hits(), listener.accepted());
    let ok = hint(&host, &host_line) && hint(&socket, &socket_line) && n == 0 && m == 0;
    Verdict {
        observed: format!(
            "host: exit {:?}, {:?}; socket: exit {:?}, {:?}; listeners got {n} and {m}",
            host.code,
            host.cli_stderr.trim(),
            socket.code,
            socket.cli_stderr.trim()
        ),
        ok,
    }
}

fn grant_host_socket(ctx: &Ctx) -> Verdict {
    let socket_dir = ctx.pass.home.with_file_name(format!("sockets-{}", ctx.tag));
    fs::create_dir_all(&socket_dir).expect("mkdir");
    set_mode(&socket_dir, 0o755);
    let (granted_path, other_path) = (
        socket_dir.join("engine.sock"),
        socket_dir.join("other.sock"),
    );
    let granted = Unix::path(&granted_path);
    let other = Unix::path(&other_path);
    let policy = grant_policy(ctx, &[], &[&granted_path]);
    let opts = || Opts {
        policy: Some(policy.clone()),
        host_sockets: vec![granted_path.clone()],
        ..Opts::default()
    };
    let reach = ctx.sandbox(
        opts(),
        &["/tool/probe", "unix", &granted_path.display().to_string()],
    );
    let beside = ctx.sandbox(
        opts(),
        &["/tool/probe", "unix", &other_path.display().to_string()],
    );
    let (a, b) = (granted.accepted(), other.accepted());
    let mut v = ctx.refused(
        &[&beside],
        vec![(format!("the socket beside it got {b}"), b == 0)],
    );
    let reached = reach.allowed().len() == 1 && a == 1;
    v.ok &= reached;
    v.observed.push_str(&format!(
        "; the granted socket: {:?} / {:?}, accepted {a}",
        reach.allowed(),
        reach.denied()
    ));
    v
}

/// Without namespaces a grant cannot be given as it was asked: the run must be refused, saying
/// so, and never run on the host's network or filesystem instead.
fn grants_refused(ctx: &Ctx) -> Verdict {
    let server = Server::new();
    let granted = format!("127.0.0.1:{}", server.port);
    let socket_dir = ctx.pass.home.with_file_name(format!("sockets-{}", ctx.tag));
    fs::create_dir_all(&socket_dir).expect("mkdir");
    set_mode(&socket_dir, 0o755);
    let socket_path = socket_dir.join("engine.sock");
    let listener = Unix::path(&socket_path);
    let policy = grant_policy(ctx, std::slice::from_ref(&granted), &[&socket_path]);
    let host = ctx.sandbox(
        Opts {
            policy: Some(policy.clone()),
            allow_hosts: vec![granted.clone()],
            ..Opts::default()
        },
        &["/tool/probe", "tcp", "127.0.0.1", &server.port.to_string()],
    );
    let socket = ctx.sandbox(
        Opts {
            policy: Some(policy),
            host_sockets: vec![socket_path.clone()],
            ..Opts::default()
        },
        &["/tool/probe", "unix", &socket_path.display().to_string()],
    );
    let refused = |run: &Run| {
        let error: Value = serde_json::from_str(run.cli_stderr.trim()).unwrap_or(Value::Null);
        run.report.is_none()
            && run.code == Some(125)
            && error["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("there are no namespaces here"))
    };
    let (n, m) = (server.hits(), listener.accepted());
    Verdict {
        observed: format!(
            "host: exit {:?}, {:?}; socket: exit {:?}, {:?}; listeners got {n} and {m}",
            host.code,
            host.cli_stderr.trim(),
            socket.code,
            socket.cli_stderr.trim()
        ),
        ok: refused(&host) && refused(&socket) && n == 0 && m == 0,
    }
}

fn bash_dev_tcp(ctx: &Ctx) -> Verdict {
    let l = Tcp::new();
    let script = format!(
        "echo hi 2>/dev/null >/dev/tcp/127.0.0.1/{} && echo 'ALLOWED /dev/tcp: connected' \
         || echo 'DENIED bash /dev/tcp: failed'",
        l.port()
    );
    let run = ctx.sandbox(Opts::default(), &["bash", "-c", &script]);
    let n = l.accepted();
    ctx.refused(&[&run], vec![(format!("listener accepted {n}"), n == 0)])
}

fn python_connect(ctx: &Ctx) -> Verdict {
    if !ctx.shared.python {
        return Verdict {
            observed: "skipped: no /usr/bin/python3".into(),
            ok: true,
        };
    }
    let l = Tcp::new();
    let script = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {}), 2)\n    \
         print('ALLOWED connect: connected')\nexcept OSError as e:\n    \
         print('DENIED connect: ' + type(e).__name__ + ' ' + str(e.errno))\n",
        l.port()
    );
    let run = ctx.sandbox(Opts::default(), &["/usr/bin/python3", "-c", &script]);
    let n = l.accepted();
    ctx.refused(&[&run], vec![(format!("listener accepted {n}"), n == 0)])
}

fn udp(ctx: &Ctx) -> Verdict {
    let s = Udp::new();
    let run = ctx.probe(&["udp", "127.0.0.1", &s.port()]);
    std::thread::sleep(Duration::from_millis(20));
    let n = s.received();
    ctx.refused(&[&run], vec![(format!("socket received {n}"), n == 0)])
}

fn dns(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["dns", "example.com", "github.com"]);
    let shell = ctx.sandbox(
        Opts::default(),
        &[
            "sh",
            "-c",
            "getent hosts example.com >/dev/null && echo 'ALLOWED getent: resolved' \
             || echo 'DENIED getent hosts example.com: failed'",
        ],
    );
    let mut v = ctx.refused(&[&run, &shell], Vec::new());
    v.observed.push_str(&format!(
        " (in {} ms)",
        run.field("/runtime_ms").as_u64().unwrap_or(0)
    ));
    v
}

fn sockets(ctx: &Ctx) -> Verdict {
    ctx.refused(&[&ctx.probe(&["sockets"])], Vec::new())
}

fn io_uring(ctx: &Ctx) -> Verdict {
    ctx.refused(&[&ctx.probe(&["io_uring"])], Vec::new())
}

fn abstract_socket(ctx: &Ctx) -> Verdict {
    let name = unique("toolsmith-battery-abstract");
    let l = Unix::abstract_name(&name);
    let run = ctx.probe(&["abstract", &name]);
    let n = l.accepted();
    ctx.refused(&[&run], vec![(format!("listener accepted {n}"), n == 0)])
}

fn daemon_socket(ctx: &Ctx) -> Verdict {
    let path = ctx.shared.daemon_socket.display().to_string();
    let run = ctx.probe(&["unix", &path]);
    ctx.refused(
        &[&run],
        vec![("toolsmithd alive".into(), alive(ctx.shared.daemon_pid))],
    )
}

fn bus(ctx: &Ctx) -> Verdict {
    let path = ctx.pass.runtime.join("bus");
    let l = Unix::path(&path);
    let run = ctx.probe(&["unix", &path.display().to_string()]);
    let n = l.accepted();
    ctx.refused(&[&run], vec![(format!("listener accepted {n}"), n == 0)])
}

fn ssh_agent(ctx: &Ctx) -> Verdict {
    let l = Unix::path(&ctx.pass.agent);
    let run = ctx.probe(&["ssh-agent", &ctx.pass.agent.display().to_string()]);
    let n = l.accepted();
    ctx.refused(&[&run], vec![(format!("agent accepted {n}"), n == 0)])
}

// Environment and descriptors -------------------------------------------------------------------

fn env_secrets(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["env"]);
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    let names: Vec<&str> = run
        .info()
        .iter()
        .filter_map(|l| l.strip_prefix("env "))
        .filter_map(|l| l.split_once('=').map(|(n, _)| n))
        .collect();
    let forbidden = ["GITHUB_TOKEN", "AWS_", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR"];
    let present: Vec<&&str> = names
        .iter()
        .filter(|n| forbidden.iter().any(|f| n.starts_with(f)))
        .collect();
    let leaks = ctx.leaks(&run);
    // The run's own home: /work, or the fallback's host work directory (never the caller's).
    let home = if ctx.fallback() {
        run.info()
            .iter()
            .any(|l| l.starts_with("env HOME=/tmp/toolsmith-run-"))
    } else {
        run.info().contains(&"env HOME=/work")
    };
    Verdict {
        observed: format!(
            "variables inside: {}; forbidden present: {present:?}; leaked: {leaks:?}",
            names.join(" ")
        ),
        ok: !names.is_empty() && present.is_empty() && leaks.is_empty() && home,
    }
}

fn fds_inherited(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["fdlist"]);
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    let fds: Vec<&str> = run
        .info()
        .iter()
        .filter_map(|l| l.strip_prefix("fd "))
        .collect();
    let numbers: Vec<&str> = fds.iter().filter_map(|l| l.split(" -> ").next()).collect();
    Verdict {
        observed: format!("descriptors inside: {}", fds.join(", ")),
        ok: numbers == ["0", "1", "2"],
    }
}

fn fd_exhaustion(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["fds"]);
    let count: Option<u64> = run.denied().first().and_then(|l| {
        l.split("after ")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    });
    let mut v = ctx.refused(
        &[&run],
        vec![(
            format!("stopped after {count:?} descriptors (limit {OPEN_FILES})"),
            count.is_some_and(|c| c < OPEN_FILES),
        )],
    );
    v.ok &= run.errnos() == "EMFILE";
    v
}

// Resources -------------------------------------------------------------------------------------

/// What the outer guard saw, and whether it held untouched.
fn guard_check(ctx: &Ctx, notes: &mut Vec<(String, bool)>) {
    let hits: Vec<String> = ctx
        .pass
        .guard
        .hits()
        .into_iter()
        .filter(|h| !ctx.guard_before.contains(h))
        .collect();
    let peak = ctx
        .pass
        .guard
        .peak_pids()
        .map(|p| format!(", guard pids.peak {p}"))
        .unwrap_or_default();
    notes.push((
        if hits.is_empty() {
            format!("outer guard untouched{peak}")
        } else {
            format!("OUTER GUARD HIT: {}{peak}", hits.join(", "))
        },
        hits.is_empty(),
    ));
}

fn no_survivors(marker: &str, notes: &mut Vec<(String, bool)>) {
    let left = survivors(marker);
    notes.push((
        format!("survivors on the host: {}", left.len()),
        left.is_empty(),
    ));
    for pid in left
        .iter()
        .filter_map(|l| l.split(':').next()?.parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// A dangerous case's verdict: it ran, no ALLOWED, leaks or guard hits; the host checks.
fn resource_verdict(ctx: &Ctx, run: &Run, mut host: Vec<(String, bool)>) -> Verdict {
    if let Some(failure) = run.failure() {
        return Verdict {
            observed: failure,
            ok: false,
        };
    }
    guard_check(ctx, &mut host);
    let allowed = run.allowed();
    let mut notes = vec![format!(
        "ended: {}, limit {}, {} ms",
        run.exit(),
        run.limit(),
        run.field("/runtime_ms")
    )];
    let mut ok = allowed.is_empty() && ctx.leaks(run).is_empty();
    if !allowed.is_empty() {
        notes.push(format!("ALLOWED: {}", allowed.join(" | ")));
    }
    for (what, holds) in host {
        ok &= holds;
        notes.push(if holds {
            what
        } else {
            format!("NOT HELD: {what}")
        });
    }
    Verdict {
        observed: notes.join("; "),
        ok,
    }
}

fn bound(run: &Run, which: &str) -> String {
    run.field(&format!("/layers/{which}"))
        .as_str()
        .unwrap_or("?")
        .to_string()
}

fn fork_bomb(ctx: &Ctx) -> Verdict {
    let marker = ctx.sleep_marker();
    let script = format!("f(){{ f|f& }}; f; sleep {marker}");
    let run = ctx.sandbox(
        Opts {
            timeout: 3,
            ..Opts::default()
        },
        &["bash", "-c", &script],
    );
    let pids = bound(&run, "pids");
    let mut host = vec![(format!("pids bounded by {pids}"), pids != "nothing")];
    let warning = run
        .field("/warnings")
        .as_array()
        .and_then(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .find(|w| w.contains("refused"))
                .map(String::from)
        })
        .unwrap_or_default();
    if !warning.is_empty() {
        host.push((warning, true));
    }
    no_survivors(&marker, &mut host);
    resource_verdict(ctx, &run, host)
}

fn thread_bomb(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["threads", "100000"]);
    let count: Option<u64> = run.denied().first().and_then(|l| {
        l.split("after ")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    });
    let pids = bound(&run, "pids");
    resource_verdict(
        ctx,
        &run,
        vec![
            (
                format!(
                    "pthread_create failed after {count:?} threads (pids limit {PIDS}, by {pids})"
                ),
                count.is_some_and(|c| c <= PIDS),
            ),
            (
                format!("limit reported: {}", run.limit()),
                run.limit() == "pids",
            ),
        ],
    )
}

fn survivors_exit(ctx: &Ctx) -> Verdict {
    let marker = ctx.sleep_marker();
    let run = ctx.probe(&["survivors", &marker]);
    let mut host = vec![(
        "the probe started both".into(),
        run.info().iter().any(|l| l.contains("double-forked")),
    )];
    no_survivors(&marker, &mut host);
    resource_verdict(ctx, &run, host)
}

fn survivors_wall(ctx: &Ctx) -> Verdict {
    let marker = ctx.sleep_marker();
    let script = format!("setsid sh -c 'sleep {marker} &'; (sleep {marker} &); sleep {marker}");
    let run = ctx.sandbox(
        Opts {
            timeout: 1,
            ..Opts::default()
        },
        &["sh", "-c", &script],
    );
    let mut host = vec![(format!("limit {}", run.limit()), run.limit() == "wall")];
    no_survivors(&marker, &mut host);
    resource_verdict(ctx, &run, host)
}

fn trap_term(ctx: &Ctx) -> Verdict {
    let marker = ctx.sleep_marker();
    // A loop that sleeps: one that spins would meet the CPU limit (1 s here) as soon as the
    // wall limit, whichever the scheduler lets come first; the CPU spin has its own case.
    let script = format!("trap '' TERM; : {marker}; while :; do sleep 1; done");
    let run = ctx.sandbox(
        Opts {
            timeout: 2,
            ..Opts::default()
        },
        &["sh", "-c", &script],
    );
    let mut host = vec![(
        format!("killed by the wall limit ({})", run.exit()),
        run.limit() == "wall" && run.field("/exit/signal") == 9,
    )];
    no_survivors(&marker, &mut host);
    resource_verdict(ctx, &run, host)
}

fn alloc(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["alloc", "8"]);
    let peak = run.field("/peak_memory_kb").as_u64();
    let memory = bound(&run, "memory");
    resource_verdict(
        ctx,
        &run,
        vec![
            (
                format!("limit {} (memory by {memory})", run.limit()),
                run.limit() == "memory",
            ),
            (
                format!("peak {} MiB ≤ {MEMORY_MB} MiB", peak.unwrap_or(0) / 1024),
                peak.is_some_and(|p| p <= MEMORY_MB * 1024 + 1024),
            ),
        ],
    )
}

fn cpu_spin(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["spin"]);
    let cpu = run.field("/cpu_ms").as_u64();
    resource_verdict(
        ctx,
        &run,
        vec![(
            format!("limit {}, CPU {cpu:?} ms (limit {CPU_S} s)", run.limit()),
            run.limit() == "cpu",
        )],
    )
}

fn fill_file(ctx: &Ctx) -> Verdict {
    let name = unique("fill");
    let free = free_bytes(&ctx.shared.dir);
    // In the run's home: /work, or the fallback's host work directory.
    let script = format!("exec /tool/probe fill-file \"$HOME/{name}\"");
    let run = ctx.sandbox(Opts::default(), &["sh", "-c", &script]);
    let written = run.denied().first().and_then(|l| {
        l.split("after ")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
    });
    let drop_mib = free.saturating_sub(free_bytes(&ctx.shared.dir)) >> 20;
    resource_verdict(
        ctx,
        &run,
        vec![
            (
                format!(
                    "stopped at {written:?} MiB with {} (file size limit {FILE_MB} MiB), limit {}",
                    run.errnos(),
                    run.limit()
                ),
                written.is_some_and(|w| w <= FILE_MB) && run.errnos() == "EFBIG",
            ),
            (
                format!("nothing named {name} in host /tmp"),
                !Path::new("/tmp").join(&name).exists(),
            ),
            (
                format!("host disk free space moved by {drop_mib} MiB (info)"),
                true,
            ),
        ],
    )
}

fn fill_tmpfs(ctx: &Ctx) -> Verdict {
    let name = unique("fill");
    let run = ctx.probe(&["fill-dir", "/tmp", &name]);
    let written = run.denied().first().and_then(|l| {
        l.split("after ")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse::<u64>()
            .ok()
    });
    resource_verdict(
        ctx,
        &run,
        vec![
            (
                format!(
                    "stopped at {written:?} MiB with {} (tmpfs size {FILE_MB} MiB)",
                    run.errnos()
                ),
                written.is_some_and(|w| w <= FILE_MB) && run.errnos() == "ENOSPC",
            ),
            (
                format!("no {name}-0 in host /tmp"),
                !Path::new("/tmp").join(format!("{name}-0")).exists(),
            ),
        ],
    )
}

fn flood(ctx: &Ctx) -> Verdict {
    let run = ctx.probe(&["flood"]);
    let kept = run.stdout.len() as u64;
    let total = run.field("/stdout/total_bytes").as_u64().unwrap_or(0);
    let truncated = run.field("/stdout/truncated") == true;
    resource_verdict(
        ctx,
        &run,
        vec![
            (
                format!("limit {}, {}", run.limit(), run.exit()),
                run.limit() == "output" && run.field("/exit/signal") == 9,
            ),
            (
                format!("kept {kept} of {total} bytes, truncated: {truncated}"),
                truncated && kept == OUTPUT_KB * 1024 && total > kept,
            ),
        ],
    )
}

// ---------------------------------------------------------------------------------------------
// The battery
// ---------------------------------------------------------------------------------------------

/// How a case came out.
#[derive(Clone, PartialEq, Eq)]
enum Outcome {
    Held,
    /// Not run: the pass lacks what it needs.
    NotApplicable,
    Failed,
}

struct Row {
    /// The pass's label (`daemon` for the final check).
    pass: String,
    case: String,
    tried: &'static str,
    observed: String,
    outcome: Outcome,
}

impl Row {
    fn new(pass: &str, case: &str, tried: &'static str, verdict: Verdict) -> Row {
        Row {
            pass: pass.to_string(),
            case: format!("{pass}/{case}"),
            tried,
            observed: verdict.observed,
            outcome: if verdict.ok {
                Outcome::Held
            } else {
                Outcome::Failed
            },
        }
    }
}

fn run_case(ctx: &Ctx, case: &Case) -> Row {
    let verdict =
        std::panic::catch_unwind(AssertUnwindSafe(|| (case.run)(ctx))).unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Verdict {
                observed: format!("the case panicked: {message}"),
                ok: false,
            }
        });
    Row::new(&ctx.pass.label, case.name, case.tried, verdict)
}

fn run_pass(shared: &Shared, pass: &Pass) -> Vec<Row> {
    let cases = cases();
    let first = Ctx {
        shared,
        pass,
        tag: 0,
        guard_before: Vec::new(),
    };
    // A fallback pass whose runs have their namespaces after all tests nothing of the fallback.
    // Asked of a command that names no path of the view, which a fallback pass rewrites.
    let layers = first.sandbox(Opts::default(), &["/bin/true"]);
    let namespaces = layers.field("/layers/namespaces");
    let note = layers.field("/warnings").to_string();
    if pass.mode.fallback() {
        assert!(
            namespaces == false && note.contains("no namespaces"),
            "{}: not a fallback pass: its first run reports namespaces {namespaces} and the \
             warnings {note} ({})",
            pass.label,
            layers.failure().unwrap_or_default()
        );
    } else {
        assert!(
            namespaces == true,
            "{}: the run has no namespaces: warnings {note} ({})",
            pass.label,
            layers.failure().unwrap_or_default()
        );
    }
    // A first probe that must work: otherwise nothing below means anything.
    let sanity = first.probe(&["hello"]);
    assert!(
        sanity.info().iter().any(|l| l.starts_with("hello")),
        "{}: the sandbox does not run the probe at all: {}\nreport: {:?}",
        pass.label,
        sanity.failure().unwrap_or_default(),
        sanity.report
    );
    let facts = Facts {
        cgroup: sanity.field("/layers/cgroup") == true,
        root: pass.ids.is_none() && is_root(),
    };
    println!(
        "pass {}: namespaces {namespaces}, run cgroup {}; warnings {note}",
        pass.label, facts.cgroup
    );
    let mut rows: Vec<(usize, Row)> = Vec::new();
    let mut runnable = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        match case.in_pass(pass.mode, facts) {
            None => {}
            Some(None) => runnable.push(i),
            Some(Some(what)) => rows.push((
                i,
                Row {
                    pass: pass.label.clone(),
                    case: format!("{}/{}", pass.label, case.name),
                    tried: case.tried,
                    observed: format!("N/A (needs {what})"),
                    outcome: Outcome::NotApplicable,
                },
            )),
        }
    }
    let parallel: Vec<usize> = runnable
        .iter()
        .copied()
        .filter(|&i| cases[i].kind != Kind::Dangerous)
        .collect();
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = parallel.get(n) else { break };
                    let ctx = Ctx {
                        shared,
                        pass,
                        tag: u32::try_from(i).unwrap_or(0) + 1,
                        guard_before: Vec::new(),
                    };
                    let row = run_case(&ctx, &cases[i]);
                    done.lock().expect("rows").push((i, row));
                }
            });
        }
    });
    rows.extend(done.into_inner().expect("rows"));
    for &i in &runnable {
        let case = &cases[i];
        if case.kind != Kind::Dangerous {
            continue;
        }
        let ctx = Ctx {
            shared,
            pass,
            tag: u32::try_from(i).unwrap_or(0) + 1,
            guard_before: pass.guard.hits(),
        };
        let row = if pass.guard.description.is_some() {
            run_case(&ctx, case)
        } else {
            let observed = format!(
                "SKIPPED: no outer guard can be set up ({})",
                pass.guard.why_none
            );
            Row::new(
                &pass.label,
                case.name,
                case.tried,
                Verdict { observed, ok: true },
            )
        };
        rows.push((i, row));
    }
    rows.sort_by_key(|(i, _)| *i);
    rows.into_iter().map(|(_, row)| row).collect()
}

/// Compiles the probe, or says why the battery cannot run here.
fn compile_probe(dir: &Path) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe/probe.c");
    let out = dir.join("probe");
    match Command::new("cc")
        .args(["-O1", "-Wall", "-pthread", "-o"])
        .arg(&out)
        .arg(&source)
        .output()
    {
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "cc is missing on CI ({e}): install build-essential"
            );
            eprintln!("SKIPPED: the escape battery needs a C compiler (cc: {e})");
            None
        }
        Ok(o) => {
            assert!(
                o.status.success(),
                "cc failed on {}:\n{}",
                source.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            Some(out)
        }
    }
}

#[test]
fn escape_battery() {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("battery-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp dir");
    set_mode(dir.path(), 0o755);
    let Some(probe) = compile_probe(dir.path()) else {
        return;
    };
    set_mode(&probe, 0o755);
    // A copy of toolsmith serves as the binary and the helper: the battery tries to overwrite it.
    let toolsmith = dir.path().join("toolsmith");
    fs::copy(env!("CARGO_BIN_EXE_toolsmith"), &toolsmith).expect("copy toolsmith");
    set_mode(&toolsmith, 0o755);

    let env = TestEnv::new();
    let daemon_secret = unique("SECRET-daemon-environ");
    let mut command = env.daemon_command();
    command.env("TOOLSMITH_BATTERY_SECRET", &daemon_secret);
    let mut daemon = Daemon::start(&env, command);
    let shared = Shared {
        dir: dir.path().to_path_buf(),
        toolsmith,
        probe,
        daemon_pid: daemon.pid(),
        daemon_socket: env.socket(),
        daemon_secret,
        test_pid: std::process::id() as i32,
        python: Path::new("/usr/bin/python3").exists(),
    };

    /// A pass: its label, the ids toolsmith switches to, its mode.
    type PassSpec = (&'static str, Option<(u32, u32)>, Mode);
    let mut passes: Vec<PassSpec> = Vec::new();
    if is_root() {
        passes.push(("root", None, Mode::Normal));
        passes.push(("uid65534", Some(NOBODY), Mode::Normal));
        passes.push(("fallback-root", None, Mode::MountsRefused));
        passes.push(("fallback-uid65534", Some(NOBODY), Mode::MountsRefused));
        passes.push(("no-userns-uid65534", Some(NOBODY), Mode::NoUserns));
    } else {
        println!(
            "root passes skipped: the test runs as uid {} (run it as root for all passes)",
            nix::unistd::getuid()
        );
        passes.push(("user", None, Mode::Normal));
        passes.push(("fallback-user", None, Mode::MountsRefused));
        passes.push(("no-userns-user", None, Mode::NoUserns));
    }
    let labels: Vec<&str> = passes.iter().map(|(label, _, _)| *label).collect();
    let mut rows = Vec::new();
    for (index, (label, ids, mode)) in passes.into_iter().enumerate() {
        let index = u32::try_from(index).unwrap_or(0) + 1;
        let pass = Pass::new(&shared, index, label, ids, mode);
        println!(
            "pass {label}: outer guard: {}",
            pass.guard
                .description
                .clone()
                .unwrap_or_else(|| format!("none ({})", pass.guard.why_none))
        );
        let pass_started = Instant::now();
        rows.extend(run_pass(&shared, &pass));
        println!(
            "pass {label}: {:.1} s",
            pass_started.elapsed().as_secs_f64()
        );
    }

    // The daemon lived through it all and still answers.
    let status = env
        .cli()
        .args(["status", "--json"])
        .output()
        .expect("status");
    let answer: Value = serde_json::from_slice(&status.stdout).unwrap_or(Value::Null);
    let healthy = status.status.success() && answer["pid"] == daemon.pid() && daemon.is_running();
    let observed = format!(
        "`toolsmith status`: exit {:?}, pid {} (daemon {}), running {}",
        status.status.code(),
        answer["pid"],
        daemon.pid(),
        daemon.is_running()
    );
    rows.push(Row::new(
        "daemon",
        "healthy",
        "every case above aimed at toolsmithd (socket, ptrace, kill, /proc)",
        Verdict {
            observed,
            ok: healthy,
        },
    ));

    println!("case | tried | host observed | ok");
    for row in &rows {
        println!(
            "{} | {} | {} | {}",
            row.case,
            row.tried,
            row.observed.replace('\n', " "),
            match row.outcome {
                Outcome::Held => "ok",
                Outcome::NotApplicable => "n/a",
                Outcome::Failed => "FAILED",
            }
        );
    }
    for label in labels.into_iter().chain(["daemon"]) {
        let count = |outcome: Outcome| {
            rows.iter()
                .filter(|r| r.pass == label && r.outcome == outcome)
                .count()
        };
        println!(
            "{label}: {} held, {} not applicable (needs namespaces), {} failed",
            count(Outcome::Held),
            count(Outcome::NotApplicable),
            count(Outcome::Failed)
        );
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.outcome == Outcome::Failed)
        .map(|r| format!("{}: {}", r.case, r.observed))
        .collect();
    println!(
        "{} cases, {} failed, {:.1} s",
        rows.len(),
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failed.is_empty(),
        "{} case(s) did not hold:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
