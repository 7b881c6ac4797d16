//! What this host offers the sandbox. Every layer is really exercised (in a forked child when the
//! test changes process state), so `toolsmith doctor` and the sandbox policy decide from facts
//! rather than from guesses about the kernel configuration. Pure library: nothing is printed.

use std::fs;
use std::io::ErrorKind;
use std::mem::MaybeUninit;
use std::path::Path;
use std::process::Command;
use std::ptr;

use libc::c_long;
use nix::errno::Errno;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{AccessFlags, ForkResult, access, fork, geteuid};
use serde::Serialize;

/// What the host offers the sandbox, layer by layer.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    /// Kernel release, as `uname -r` prints it.
    pub kernel: String,
    /// Whether the probe ran with effective uid 0 (which hides some unprivileged restrictions).
    pub running_as_root: bool,
    /// Landlock: the detail names the ABI and what it can restrict.
    pub landlock: Layer,
    /// The Landlock ABI version, when Landlock is available.
    pub landlock_abi: Option<u32>,
    /// `unshare(CLONE_NEWUSER)`, the base every other namespace is created from.
    pub user_namespace: Layer,
    /// Mount namespace inside a user namespace, with mounts allowed in it.
    pub mount_namespace: Layer,
    /// PID namespace inside a user namespace.
    pub pid_namespace: Layer,
    /// Network namespace inside a user namespace.
    pub net_namespace: Layer,
    /// IPC namespace inside a user namespace.
    pub ipc_namespace: Layer,
    /// UTS namespace inside a user namespace.
    pub uts_namespace: Layer,
    /// A seccomp filter can be installed.
    pub seccomp: Layer,
    /// `PR_SET_NO_NEW_PRIVS` can be set.
    pub no_new_privs: Layer,
    /// A delegated cgroup v2 with memory and pids controllers (else rlimits stand in).
    pub cgroup_v2: Layer,
    /// Which of memory, pids and cpu the delegated cgroup offers (empty unless `cgroup_v2` is).
    pub cgroup_controllers: Vec<String>,
    /// `git --version`.
    pub git: Layer,
    /// The bundled SQLite: always available, the detail is its version.
    pub sqlite: Layer,
}

/// One layer or program: whether the host offers it, and what was found or what to fix.
#[derive(Debug, Clone, Serialize)]
pub struct Layer {
    /// Whether the layer works on this host.
    pub available: bool,
    /// What was found, or exactly what is missing and how to fix it.
    pub detail: String,
}

impl Layer {
    fn new(available: bool, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        Layer { available, detail }
    }
}

/// How well untrusted code can be confined here; the sandbox policy keys on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IsolationLevel {
    /// Every namespace, Landlock, seccomp and no_new_privs.
    Full,
    /// Landlock, seccomp and no_new_privs, but some namespace is missing.
    Reduced,
    /// Landlock, seccomp or no_new_privs is missing: untrusted code must not run.
    Insufficient,
}

/// A layer with the name the verdict or `toolsmith doctor` gives it.
type Named<'a> = (&'static str, &'a Layer);

fn names(layers: &[Named]) -> String {
    layers
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

fn details(layers: &[Named]) -> String {
    let each: Vec<_> = layers
        .iter()
        .map(|(n, l)| format!("{n}: {}", l.detail))
        .collect();
    each.join("; ")
}

impl HostReport {
    /// The isolation level the sandbox can reach. A missing cgroup never lowers it: rlimits
    /// stand in for cgroup limits.
    pub fn isolation_level(&self) -> IsolationLevel {
        // Landlock's restrict_self needs no_new_privs too, so all three are the floor.
        if !self.floor().iter().all(|(_, l)| l.available) {
            IsolationLevel::Insufficient
        } else if self.namespaces().iter().all(|(_, l)| l.available) {
            IsolationLevel::Full
        } else {
            IsolationLevel::Reduced
        }
    }

    /// One line for the user: the level, what enforces it, and what is missing and how to fix it.
    pub fn verdict(&self) -> String {
        if self.isolation_level() == IsolationLevel::Insufficient {
            let lack: Vec<_> = self
                .floor()
                .into_iter()
                .filter(|(_, l)| !l.available)
                .collect();
            return format!(
                "insufficient isolation, untrusted code must not run: {}",
                details(&lack)
            );
        }
        let limits = if self.cgroup_v2.available {
            format!(
                "limits by cgroup v2 ({})",
                self.cgroup_controllers.join(", ")
            )
        } else {
            "limits by rlimits (no delegated cgroup v2)".to_string()
        };
        let landlock = match self.landlock_abi {
            Some(abi) => format!("Landlock ABI {abi}"),
            None => "Landlock".to_string(),
        };
        let (have, lack): (Vec<_>, Vec<_>) = self
            .namespaces()
            .into_iter()
            .partition(|(_, l)| l.available);
        let have = match names(&have) {
            all if lack.is_empty() => {
                return format!(
                    "full isolation: namespaces ({all}), {landlock}, seccomp, no_new_privs; {limits}"
                );
            }
            none if none.is_empty() => none,
            some => format!("namespaces ({some}), "),
        };
        // Every namespace is created inside the user namespace, so its fix comes first.
        let fix = match self.user_namespace.available {
            true => details(&lack),
            false => format!(
                "user namespaces are unavailable: {}",
                self.user_namespace.detail
            ),
        };
        let plural = if lack.len() == 1 { "" } else { "s" };
        format!(
            "reduced isolation: no {} namespace{plural} ({fix}); still enforced: {have}{landlock}, \
             seccomp, no_new_privs; {limits}",
            names(&lack)
        )
    }

    /// Names of the layers (and programs) this host lacks, as `toolsmith doctor` labels them.
    pub fn missing(&self) -> Vec<&'static str> {
        let layers = self.layers().into_iter();
        layers
            .filter(|(_, l)| !l.available)
            .map(|(n, _)| n)
            .collect()
    }

    fn floor(&self) -> [Named<'_>; 3] {
        [
            ("Landlock", &self.landlock),
            ("seccomp", &self.seccomp),
            ("no_new_privs", &self.no_new_privs),
        ]
    }

    fn namespaces(&self) -> [Named<'_>; 6] {
        [
            ("user", &self.user_namespace),
            ("mount", &self.mount_namespace),
            ("pid", &self.pid_namespace),
            ("net", &self.net_namespace),
            ("ipc", &self.ipc_namespace),
            ("uts", &self.uts_namespace),
        ]
    }

    fn layers(&self) -> [Named<'_>; 12] {
        [
            ("landlock", &self.landlock),
            ("user namespace", &self.user_namespace),
            ("mount namespace", &self.mount_namespace),
            ("pid namespace", &self.pid_namespace),
            ("net namespace", &self.net_namespace),
            ("ipc namespace", &self.ipc_namespace),
            ("uts namespace", &self.uts_namespace),
            ("seccomp", &self.seccomp),
            ("no_new_privs", &self.no_new_privs),
            ("cgroup v2", &self.cgroup_v2),
            ("git", &self.git),
            ("sqlite", &self.sqlite),
        ]
    }
}

/// Probes every layer on this host: a few milliseconds, mostly short-lived children.
pub fn probe() -> HostReport {
    let sysctls = Sysctls {
        unprivileged_userns_clone: read_number("/proc/sys/kernel/unprivileged_userns_clone"),
        apparmor_restrict: read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
    };
    let user = probe_namespace(&NAMESPACES[0], &sysctls, None);
    let ns = |i: usize| probe_namespace(&NAMESPACES[i], &sysctls, Some(&user));
    let (mount, pid, net, ipc, uts) = (ns(1), ns(2), ns(3), ns(4), ns(5));
    let (landlock, landlock_abi) = probe_landlock();
    let (no_new_privs, seccomp) = probe_seccomp();
    let (cgroup_v2, cgroup_controllers) =
        probe_cgroup().unwrap_or_else(|why| (Layer::new(false, why), Vec::new()));
    HostReport {
        kernel: kernel_release(),
        running_as_root: geteuid().is_root(),
        landlock,
        landlock_abi,
        user_namespace: user,
        mount_namespace: mount,
        pid_namespace: pid,
        net_namespace: net,
        ipc_namespace: ipc,
        uts_namespace: uts,
        seccomp,
        no_new_privs,
        cgroup_v2,
        cgroup_controllers,
        git: probe_git(),
        sqlite: Layer::new(true, rusqlite::version()),
    }
}

fn read_number(path: &str) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn kernel_release() -> String {
    let mut uts = MaybeUninit::<libc::utsname>::zeroed();
    // SAFETY: uname fills the struct it is given; it was zeroed, so every byte is initialised.
    let uts = unsafe {
        libc::uname(uts.as_mut_ptr());
        uts.assume_init()
    };
    // c_char is i8 or u8 depending on the architecture: to_ne_bytes suits both.
    let release = uts
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .flat_map(|c| c.to_ne_bytes());
    String::from_utf8_lossy(&release.collect::<Vec<u8>>()).into_owned()
}

/// How a probe child ended.
#[derive(Debug)]
enum ChildOutcome {
    Succeeded,
    Failed { step: usize, errno: Errno },
    Broken(String),
}

/// Runs `steps` (raw syscalls, negative on failure) in a forked child, so the state they change
/// (namespaces, filters) never touches this process.
fn run_in_child(steps: &[&dyn Fn() -> c_long]) -> ChildOutcome {
    // SAFETY: the child only makes raw syscalls, reads errno and `_exit`s — no allocation and no
    // lock — which is all that is sound after forking a possibly multi-threaded process.
    match unsafe { fork() } {
        Err(e) => ChildOutcome::Broken(format!("could not fork a probe child: {e}")),
        Ok(ForkResult::Child) => {
            let failed = steps.iter().position(|run| run() < 0);
            let code = failed.map_or(0, |step| exit_code(step, Errno::last_raw()));
            // SAFETY: `_exit` skips the atexit handlers and stdio buffers owned by the parent.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => loop {
            return match waitpid(child, None) {
                Err(Errno::EINTR) => continue,
                Err(e) => ChildOutcome::Broken(format!("waiting for the probe child failed: {e}")),
                Ok(WaitStatus::Exited(_, 0)) => ChildOutcome::Succeeded,
                Ok(WaitStatus::Exited(_, code)) => {
                    let (step, errno) = if code > 128 {
                        (1, code - 128)
                    } else {
                        (0, code)
                    };
                    ChildOutcome::Failed {
                        step,
                        errno: Errno::from_raw(errno),
                    }
                }
                Ok(other) => ChildOutcome::Broken(format!("probe child ended oddly: {other:?}")),
            };
        },
    }
}

/// Packs the failing step (0 or 1) and its errno into an exit status. errno values past 127 are
/// clamped: none a probe can meet matters.
fn exit_code(step: usize, errno: i32) -> i32 {
    errno.clamp(1, 127) + if step == 0 { 0 } else { 128 }
}

/// The sysctls that explain why unprivileged user namespaces fail.
#[derive(Debug, Default, Clone, Copy)]
struct Sysctls {
    unprivileged_userns_clone: Option<u64>,
    apparmor_restrict: Option<u64>,
}

/// One namespace kind: its clone flag and name, `user.max_<x>_namespaces`' x, and its Kconfig.
struct NsKind(libc::c_int, &'static str, &'static str, &'static str);

const NAMESPACES: [NsKind; 6] = [
    NsKind(0, "CLONE_NEWUSER", "user", "CONFIG_USER_NS"),
    NsKind(libc::CLONE_NEWNS, "CLONE_NEWNS", "mnt", ""),
    NsKind(libc::CLONE_NEWPID, "CLONE_NEWPID", "pid", "CONFIG_PID_NS"),
    NsKind(libc::CLONE_NEWNET, "CLONE_NEWNET", "net", "CONFIG_NET_NS"),
    NsKind(libc::CLONE_NEWIPC, "CLONE_NEWIPC", "ipc", "CONFIG_IPC_NS"),
    NsKind(libc::CLONE_NEWUTS, "CLONE_NEWUTS", "uts", "CONFIG_UTS_NS"),
];

const USERNS_FIX: &str = "sysctl kernel.unprivileged_userns_clone=1, \
    or Ubuntu's kernel.apparmor_restrict_unprivileged_userns=0, or for toolsmith alone \
    `sudo toolsmith install --apparmor`";

/// Tries the namespace the way the unprivileged sandbox will: inside a fresh user namespace.
fn probe_namespace(kind: &NsKind, sys: &Sysctls, user: Option<&Layer>) -> Layer {
    let &NsKind(flag, flag_name, sysctl, _) = kind;
    // SAFETY: raw syscalls on plain arguments; they only affect the child they run in.
    let unshare = || c_long::from(unsafe { libc::unshare(libc::CLONE_NEWUSER | flag) });
    // Making `/` private is the sandbox's first mount, and what AppArmor's userns restriction
    // refuses even when the unshare itself succeeds.
    let (none, slash, private) = (ptr::null(), c"/".as_ptr(), libc::MS_REC | libc::MS_PRIVATE);
    // SAFETY: as above; the pointers are null or a static C string.
    let mount = || c_long::from(unsafe { libc::mount(none, slash, none, private, none.cast()) });
    let mounts = flag == libc::CLONE_NEWNS;
    let steps: &[&dyn Fn() -> c_long] = if mounts {
        &[&unshare, &mount]
    } else {
        &[&unshare]
    };
    let call = match flag {
        0 => "unshare(CLONE_NEWUSER)".to_string(),
        _ => format!("unshare(CLONE_NEWUSER | {flag_name})"),
    };
    let detail = match run_in_child(steps) {
        ChildOutcome::Succeeded if mounts => {
            return Layer::new(true, format!("{call} works, mounting inside it too"));
        }
        ChildOutcome::Succeeded => return Layer::new(true, format!("{call} works")),
        ChildOutcome::Failed { step: 0, .. } if user.is_some_and(|u| !u.available) => {
            "needs a user namespace, which is unavailable".to_string()
        }
        ChildOutcome::Failed { step: 0, errno } => {
            let max = read_number(&format!("/proc/sys/user/max_{sysctl}_namespaces"));
            unshare_error(kind, errno, sys, max)
        }
        ChildOutcome::Failed { errno, .. } => {
            format!(
                "created, but mounts in it are refused ({errno}), likely by AppArmor: {USERNS_FIX}"
            )
        }
        ChildOutcome::Broken(why) => why,
    };
    Layer::new(false, detail)
}

/// Explains a failed `unshare` and names the fix, using the sysctls behind each errno.
fn unshare_error(kind: &NsKind, errno: Errno, sys: &Sysctls, max: Option<u64>) -> String {
    let &NsKind(_, _, sysctl, config) = kind;
    match errno {
        Errno::EPERM if sys.unprivileged_userns_clone == Some(0) => {
            "blocked (EPERM) by kernel.unprivileged_userns_clone=0: set it to 1".to_string()
        }
        Errno::EPERM if sys.apparmor_restrict == Some(1) => "blocked (EPERM) by AppArmor: \
            `sudo toolsmith install --apparmor` (a profile allowing userns to toolsmith's sandbox \
            helper alone), or sysctl kernel.apparmor_restrict_unprivileged_userns=0"
            .to_string(),
        Errno::EPERM => format!(
            "blocked (EPERM), e.g. by kernel.unprivileged_userns_clone=0, \
             user.max_user_namespaces=0 or AppArmor's restriction: {USERNS_FIX}"
        ),
        Errno::EINVAL if !config.is_empty() => {
            format!("not supported by this kernel (EINVAL): build it with {config}=y")
        }
        Errno::ENOSPC => {
            let max = max.map_or_else(|| "unknown".to_string(), |m| m.to_string());
            format!(
                "limit reached (ENOSPC): user.max_{sysctl}_namespaces is {max}: raise it with sysctl"
            )
        }
        Errno::EUSERS => "too deeply nested (EUSERS): 32 levels of user namespaces".to_string(),
        _ => format!("unshare failed: {errno}"),
    }
}

/// What each Landlock ABI adds, from ABI 1 on.
const LANDLOCK_FEATURES: [&str; 7] = [
    "filesystem",
    "refer",
    "truncate",
    "TCP bind/connect",
    "device ioctl",
    "abstract unix socket and signal scoping",
    "audit logging flags",
];

/// The Landlock ABI the running kernel offers, or `None` without Landlock. One system call.
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    let (attr, size) = (ptr::null::<libc::c_void>(), 0usize);
    // SAFETY: with the VERSION flag the kernel reads nothing and returns the ABI number.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            attr,
            size,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(ret).ok().filter(|&abi| abi > 0)
}

/// Whether the sandbox can create all its namespaces at once (user, mount, pid, net, ipc, uts)
/// and mount inside them, tried in a forked child exactly as a run does.
pub fn sandbox_namespaces() -> Layer {
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    // SAFETY: raw syscalls on plain arguments; they only affect the child they run in.
    let unshare = || c_long::from(unsafe { libc::unshare(flags) });
    let (none, slash, private) = (ptr::null(), c"/".as_ptr(), libc::MS_REC | libc::MS_PRIVATE);
    // SAFETY: as above; the pointers are null or a static C string.
    let mount = || c_long::from(unsafe { libc::mount(none, slash, none, private, none.cast()) });
    match run_in_child(&[&unshare, &mount]) {
        ChildOutcome::Succeeded => Layer::new(true, "all six namespaces, with mounts"),
        ChildOutcome::Failed { step: 0, errno } => {
            let sys = Sysctls {
                unprivileged_userns_clone: read_number(
                    "/proc/sys/kernel/unprivileged_userns_clone",
                ),
                apparmor_restrict: read_number(
                    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
                ),
            };
            let max = read_number("/proc/sys/user/max_user_namespaces");
            Layer::new(false, unshare_error(&NAMESPACES[0], errno, &sys, max))
        }
        ChildOutcome::Failed { errno, .. } => Layer::new(
            false,
            format!(
                "mounts in a new namespace are refused ({errno}), likely by AppArmor: {USERNS_FIX}"
            ),
        ),
        ChildOutcome::Broken(why) => Layer::new(false, why),
    }
}

/// Why our own cgroup v2 directory cannot be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CgroupError {
    /// No cgroup2 filesystem is mounted.
    #[error("no cgroup2 filesystem mounted: boot with systemd.unified_cgroup_hierarchy=1")]
    NotMounted,
    /// `/proc/self/cgroup` has no cgroup v2 line.
    #[error("cgroup2 at {point}, but /proc/self/cgroup has no 0:: line")]
    NoV2Line {
        /// The cgroup2 mount point.
        point: String,
    },
    /// Our cgroup is not under the cgroup2 mount (a cgroup namespace showing another subtree).
    #[error("own cgroup {path} lies outside the cgroup2 mount at {point}")]
    Outside {
        /// Our cgroup's path.
        path: String,
        /// The cgroup2 mount point.
        point: String,
    },
}

/// What the kernel says of our cgroups: `/proc/self/mountinfo` and `/proc/self/cgroup`, read
/// together so that the v2 and v1 lookups of one process share one reading.
pub(crate) struct CgroupFiles {
    /// `/proc/self/mountinfo` (empty if unreadable).
    pub mountinfo: String,
    /// `/proc/self/cgroup` (empty if unreadable).
    pub cgroups: String,
}

impl CgroupFiles {
    /// Reads both files now.
    pub(crate) fn read() -> CgroupFiles {
        CgroupFiles {
            mountinfo: fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
            cgroups: fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
        }
    }
}

/// Our own cgroup v2 directory (under the cgroup2 mount), for the sandbox's run cgroups.
pub(crate) fn own_cgroup_dir(files: &CgroupFiles) -> Result<std::path::PathBuf, CgroupError> {
    own_cgroup(files).map(|own| own.dir)
}

/// Where we sit in the cgroup v2 hierarchy.
struct OwnCgroup {
    /// The cgroup2 mount point.
    point: String,
    /// Our cgroup's path, as `/proc/self/cgroup` names it.
    path: String,
    /// Our cgroup's directory under the mount.
    dir: std::path::PathBuf,
}

fn own_cgroup(files: &CgroupFiles) -> Result<OwnCgroup, CgroupError> {
    let (root, point) = files
        .mountinfo
        .lines()
        .find_map(cgroup2_mount)
        .ok_or(CgroupError::NotMounted)?;
    let Some(path) = cgroup_v2_path(&files.cgroups) else {
        return Err(CgroupError::NoV2Line { point });
    };
    // In a cgroup namespace the mount may show a subtree only, and our path is inside it.
    let relative = if root == "/" {
        Some(path.as_str())
    } else {
        path.strip_prefix(&root)
    };
    let Some(relative) = relative.filter(|r| r.is_empty() || r.starts_with('/')) else {
        return Err(CgroupError::Outside { path, point });
    };
    let dir = Path::new(&point).join(relative.trim_start_matches('/'));
    Ok(OwnCgroup { point, path, dir })
}

fn probe_landlock() -> (Layer, Option<u32>) {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    let (attr, size, flags) = (
        ptr::null::<libc::c_void>(),
        0usize,
        LANDLOCK_CREATE_RULESET_VERSION,
    );
    // SAFETY: with the VERSION flag the kernel reads nothing and returns the ABI number.
    let ret = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, attr, size, flags) };
    let errno = Errno::last();
    match u32::try_from(ret) {
        Ok(abi) if abi > 0 => (Layer::new(true, landlock_description(abi)), Some(abi)),
        _ => {
            let lsm = fs::read_to_string("/sys/kernel/security/lsm").ok();
            (
                Layer::new(false, landlock_error(errno, lsm.as_deref())),
                None,
            )
        }
    }
}

/// What a Landlock ABI lets the sandbox restrict (each ABI adds to the previous ones).
fn landlock_description(abi: u32) -> String {
    let abi_len = usize::try_from(abi).unwrap_or(usize::MAX);
    let known = LANDLOCK_FEATURES
        .get(..abi_len)
        .unwrap_or(&LANDLOCK_FEATURES);
    let newer = if abi_len > known.len() {
        ", and newer features"
    } else {
        ""
    };
    format!("ABI {abi} ({}{newer})", known.join(", "))
}

fn landlock_error(errno: Errno, lsm: Option<&str>) -> String {
    let lsm = lsm.map(str::trim).filter(|l| !l.is_empty());
    match errno {
        Errno::ENOSYS => "kernel without Landlock (ENOSYS): needs Linux 5.13+ built with \
            CONFIG_SECURITY_LANDLOCK=y"
            .to_string(),
        Errno::EOPNOTSUPP => format!(
            "built in but disabled at boot (EOPNOTSUPP): add landlock to the lsm= kernel \
             parameter{}",
            lsm.map(|l| format!(", e.g. lsm=landlock,{l}"))
                .unwrap_or_default()
        ),
        Errno::EPERM => "blocked (EPERM), likely by a container's seccomp profile: allow the \
            landlock_* syscalls"
            .to_string(),
        _ => format!("landlock_create_ruleset failed: {errno}"),
    }
}

/// Sets no_new_privs, then installs an allow-all filter, in a child: (no_new_privs, seccomp).
fn probe_seccomp() -> (Layer, Layer) {
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let filter = [libc::sock_filter {
        code: ret,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: filter.as_ptr().cast_mut(),
    };
    // The kernel rejects PR_SET_NO_NEW_PRIVS unless the unused arguments are zero, so they go
    // as full-width longs, not ints whose upper register halves are undefined.
    let (one, zero): (libc::c_ulong, libc::c_ulong) = (1, 0);
    // SAFETY: a raw syscall on plain arguments, run only in the forked child.
    let nnp =
        || c_long::from(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, one, zero, zero, zero) });
    let (mode, flags, prog) = (libc::SECCOMP_SET_MODE_FILTER, 0u32, &raw const prog);
    // SAFETY: `prog` points at `filter`, both alive for the whole call.
    let install = || unsafe { libc::syscall(libc::SYS_seccomp, mode, flags, prog) };
    let nnp_ok = Layer::new(true, "prctl(PR_SET_NO_NEW_PRIVS) works");
    let seccomp = match run_in_child(&[&nnp, &install]) {
        ChildOutcome::Succeeded => {
            let actions = fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail");
            let actions = actions.unwrap_or_default();
            let actions: Vec<_> = actions.split_whitespace().collect();
            return (
                nnp_ok,
                Layer::new(
                    true,
                    format!("filters work; actions: {}", actions.join(" ")),
                ),
            );
        }
        ChildOutcome::Failed { step: 0, errno } => {
            let nnp = format!("prctl(PR_SET_NO_NEW_PRIVS) failed ({errno}): needs Linux 3.5+");
            let untested = "not tested: an unprivileged filter needs no_new_privs";
            return (Layer::new(false, nnp), Layer::new(false, untested));
        }
        ChildOutcome::Failed {
            errno: Errno::EINVAL,
            ..
        } => {
            "no filter support (EINVAL): build the kernel with CONFIG_SECCOMP_FILTER=y".to_string()
        }
        ChildOutcome::Failed { errno, .. } => format!("installing a filter failed: {errno}"),
        ChildOutcome::Broken(why) => return (Layer::new(false, &*why), Layer::new(false, why)),
    };
    (nnp_ok, Layer::new(false, seccomp))
}

/// The cgroup2 mount of one `/proc/self/mountinfo` line: (root in the hierarchy, mount point).
fn cgroup2_mount(line: &str) -> Option<(String, String)> {
    // Optional fields end at " - "; spaces inside paths are escaped, so splitting is safe.
    let (mount, fs) = line.split_once(" - ")?;
    if fs.split(' ').next()? != "cgroup2" {
        return None;
    }
    let mut fields = mount.split(' ').skip(3);
    let (root, point) = (fields.next()?, fields.next()?);
    Some((unescape_mountinfo(root), unescape_mountinfo(point)))
}

/// Undoes mountinfo's octal escapes; the backslash goes last so `\134040` stays `\040`.
pub(crate) fn unescape_mountinfo(s: &str) -> String {
    let s = s
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n");
    s.replace("\\134", "\\")
}

/// Our cgroup v2 path from `/proc/self/cgroup`: the `0::<path>` line.
fn cgroup_v2_path(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| match line.splitn(3, ':').collect::<Vec<_>>()[..] {
            ["0", "", path] if path.starts_with('/') => Some(path.to_string()),
            _ => None,
        })
}

fn probe_cgroup() -> Result<(Layer, Vec<String>), String> {
    let OwnCgroup { point, path, dir } =
        own_cgroup(&CgroupFiles::read()).map_err(|e| e.to_string())?;
    let controllers = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let writable = access(&dir, AccessFlags::W_OK).is_ok();
    Ok(cgroup_layer(&point, &path, &controllers, writable))
}

/// Decides whether the cgroup is delegated: writable, with memory and pids controllers.
fn cgroup_layer(
    point: &str,
    path: &str,
    controllers: &str,
    writable: bool,
) -> (Layer, Vec<String>) {
    let base = format!("cgroup2 at {point}, own cgroup {path}");
    let present: Vec<&str> = controllers.split_whitespace().collect();
    let has = |c: &&str| present.contains(c);
    let lacking: Vec<&str> = ["memory", "pids"].into_iter().filter(|c| !has(c)).collect();
    let delegated: Vec<String> = ["memory", "pids", "cpu"]
        .into_iter()
        .filter(has)
        .map(String::from)
        .collect();
    let why = if !lacking.is_empty() {
        let only = if present.is_empty() {
            "none".to_string()
        } else {
            present.join(" ")
        };
        format!(
            "{base}: no {} controller here (only: {only}); a hybrid cgroup v1 setup keeps them \
             in v1: boot with systemd.unified_cgroup_hierarchy=1",
            lacking.join(", ")
        )
    } else if !writable {
        format!("{base}: not writable: run toolsmithd as a systemd user unit with Delegate=yes")
    } else {
        return (
            Layer::new(true, format!("{base}, delegated: {}", delegated.join(", "))),
            delegated,
        );
    };
    (Layer::new(false, why), Vec::new())
}

fn probe_git() -> Layer {
    match Command::new("git").arg("--version").output() {
        Ok(out) if out.status.success() => {
            Layer::new(true, String::from_utf8_lossy(&out.stdout).trim())
        }
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            Layer::new(
                false,
                format!("`git --version` failed ({}): {}", out.status, stderr.trim()),
            )
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Layer::new(
            false,
            "git not found on PATH: install git (apt install git)",
        ),
        Err(e) => Layer::new(false, format!("could not run git: {e}")),
    }
}

/// The pid of the toolsmith process a run cgroup's name (`run-<pid>-<n>`) belongs to; `None`
/// for any other name. Run cgroups are made by the sandbox (`sandbox::limits`).
pub fn run_cgroup_owner(name: &str) -> Option<i32> {
    let (pid, n) = name.strip_prefix("run-")?.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// How deep a process's pid namespace is, as `/proc/<pid>/status` shows it: the number of
/// `NSpid` entries (one per namespace from the procfs's own down to the process's); 1 on a
/// kernel without the line (before 4.1).
fn pid_ns_depth(status: &str) -> usize {
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map_or(1, |ids| ids.split_whitespace().count().max(1))
}

/// A toolsmith run cgroup among the paths of a `/proc/<pid>/cgroup` text, if any.
fn run_cgroup(cgroups: &str) -> Option<&str> {
    cgroups.lines().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        path.split('/')
            .any(|part| run_cgroup_owner(part).is_some())
            .then_some(path)
    })
}

/// Why process `pid` (a peer of the control socket, as `SO_PEERCRED` names it in our pid
/// namespace) runs inside a sandbox, or `None` when it does not look like it.
///
/// A toolsmith sandbox (any sandbox made the same way) puts its processes in a pid namespace
/// nested below the one it was started from and in a user namespace of its own: a process
/// whose pid namespace lies below ours and whose user namespace is not ours is in one. The
/// comparison is relative, so a daemon that itself runs in a container serves the clients
/// beside it; a container without a user namespace of its own (the socket bound into it) is
/// not refused. Without namespaces a run's processes are in a run cgroup (root's v1 fallback,
/// a delegated v2), which is checked too (and they cannot open sockets at all: seccomp).
/// An error when the process cannot be inspected (it is gone).
pub fn sandboxed_process(pid: i32) -> std::io::Result<Option<String>> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    let own = fs::read_to_string("/proc/self/status")?;
    if pid_ns_depth(&status) > pid_ns_depth(&own) {
        let user = fs::read_link(format!("/proc/{pid}/ns/user")).ok();
        let own_user = fs::read_link("/proc/self/ns/user").ok();
        if user.is_none() || user != own_user {
            return Ok(Some(
                "it runs in a pid namespace below the daemon's and in a user namespace of its \
                 own, as sandboxed processes do"
                    .into(),
            ));
        }
    }
    let cgroups = fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
    Ok(run_cgroup(&cgroups).map(|path| format!("it runs in a sandboxed run's cgroup ({path})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandboxed_peers_are_told_apart() {
        assert_eq!(run_cgroup_owner("run-1234-0"), Some(1234));
        assert_eq!(run_cgroup_owner("run-1234-x"), None);
        assert_eq!(run_cgroup_owner("run-0-1"), None);
        assert_eq!(run_cgroup_owner("run-u12.scope"), None);
        assert_eq!(pid_ns_depth("Name:\tsh\nNSpid:\t4242\t1\n"), 2);
        assert_eq!(pid_ns_depth("Name:\tsh\nNSpid:\t4242\n"), 1);
        assert_eq!(pid_ns_depth("Name:\tsh\n"), 1);
        let v1 = "8:pids:/toolsmith/run-77-3\n4:memory:/a/toolsmith/run-77-3\n0::/\n";
        assert_eq!(run_cgroup(v1), Some("/toolsmith/run-77-3"));
        assert_eq!(run_cgroup("0::/user.slice/run-u5.scope\n"), None);
        // This process is in no sandbox.
        let me = i32::try_from(std::process::id()).expect("pid");
        assert_eq!(sandboxed_process(me).expect("readable"), None);
        assert!(sandboxed_process(i32::MAX).is_err(), "no such process");
    }

    fn full_report() -> HostReport {
        let ok = |d: &str| Layer::new(true, d);
        HostReport {
            kernel: "6.18.0".into(),
            running_as_root: false,
            landlock: ok(&landlock_description(7)),
            landlock_abi: Some(7),
            user_namespace: ok("works"),
            mount_namespace: ok("works"),
            pid_namespace: ok("works"),
            net_namespace: ok("works"),
            ipc_namespace: ok("works"),
            uts_namespace: ok("works"),
            seccomp: ok("filters work"),
            no_new_privs: ok("works"),
            cgroup_v2: ok("delegated"),
            cgroup_controllers: vec!["memory".into(), "pids".into()],
            git: ok("git version 2.47.3"),
            sqlite: ok("3.50.0"),
        }
    }

    #[test]
    fn probe_on_this_host_is_consistent() {
        let r = probe();
        eprintln!(
            "{}\nverdict: {}",
            serde_json::to_string_pretty(&r).unwrap(),
            r.verdict()
        );
        assert!(!r.kernel.is_empty());
        assert!(
            r.sqlite.available && r.sqlite.detail.starts_with("3."),
            "{}",
            r.sqlite.detail
        );
        assert_eq!(r.landlock.available, r.landlock_abi.is_some());
        assert!(!r.seccomp.available || r.no_new_privs.available);
        assert_eq!(r.cgroup_v2.available, !r.cgroup_controllers.is_empty());
        if !r.user_namespace.available {
            assert!(!r.mount_namespace.available && !r.net_namespace.available);
        }
        let prefix = match r.isolation_level() {
            IsolationLevel::Full => "full isolation",
            IsolationLevel::Reduced => "reduced isolation",
            IsolationLevel::Insufficient => "insufficient isolation",
        };
        assert!(r.verdict().starts_with(prefix), "{}", r.verdict());
        let missing = r.missing();
        for (name, layer) in r.layers() {
            assert_eq!(missing.contains(&name), !layer.available, "{name}");
            assert!(!layer.detail.is_empty(), "{name} has no detail");
        }
        let floor_missing = ["landlock", "seccomp", "no_new_privs"]
            .iter()
            .any(|n| missing.contains(n));
        assert_eq!(
            r.isolation_level() == IsolationLevel::Insufficient,
            floor_missing
        );
        assert!(serde_json::to_value(&r).unwrap()["landlock"]["available"].is_boolean());
    }

    #[test]
    fn levels_and_verdicts_of_built_reports() {
        let full = full_report();
        assert_eq!(full.isolation_level(), IsolationLevel::Full);
        assert!(full.missing().is_empty());
        assert_eq!(
            full.verdict(),
            "full isolation: namespaces (user, mount, pid, net, ipc, uts), Landlock ABI 7, \
             seccomp, no_new_privs; limits by cgroup v2 (memory, pids)"
        );
        assert_eq!(
            serde_json::to_value(IsolationLevel::Insufficient).unwrap(),
            "insufficient"
        );

        let mut no_cgroup = full_report();
        no_cgroup.cgroup_v2 = Layer::new(false, "not delegated");
        no_cgroup.cgroup_controllers.clear();
        assert_eq!(no_cgroup.isolation_level(), IsolationLevel::Full);
        assert!(
            no_cgroup
                .verdict()
                .ends_with("limits by rlimits (no delegated cgroup v2)")
        );
        assert_eq!(no_cgroup.missing(), ["cgroup v2"]);

        let mut no_userns = full_report();
        let blocked = unshare_error(&NAMESPACES[0], Errno::EPERM, &Sysctls::default(), None);
        no_userns.user_namespace = Layer::new(false, blocked);
        no_userns.mount_namespace = Layer::new(false, "needs a user namespace");
        no_userns.net_namespace = Layer::new(false, "needs a user namespace");
        assert_eq!(no_userns.isolation_level(), IsolationLevel::Reduced);
        let v = no_userns.verdict();
        assert!(v.starts_with("reduced isolation: no user, mount, net namespaces (user namespaces are unavailable: blocked"), "{v}");
        assert!(
            v.contains(USERNS_FIX)
                && v.contains("still enforced: namespaces (pid, ipc, uts), Landlock ABI 7"),
            "{v}"
        );
        assert_eq!(
            no_userns.missing(),
            ["user namespace", "mount namespace", "net namespace"]
        );

        let mut no_net = full_report();
        let unsupported = unshare_error(&NAMESPACES[3], Errno::EINVAL, &Sysctls::default(), None);
        no_net.net_namespace = Layer::new(false, unsupported);
        let v = no_net.verdict();
        assert!(
            v.starts_with("reduced isolation: no net namespace (net: not supported"),
            "{v}"
        );
        assert!(v.contains("CONFIG_NET_NS=y"), "{v}");

        let mut no_landlock = full_report();
        no_landlock.no_new_privs = Layer::new(true, "works");
        no_landlock.landlock = Layer::new(false, landlock_error(Errno::ENOSYS, None));
        no_landlock.landlock_abi = None;
        assert_eq!(no_landlock.isolation_level(), IsolationLevel::Insufficient);
        let v = no_landlock.verdict();
        assert!(
            v.starts_with(
                "insufficient isolation, untrusted code must not run: Landlock: kernel without"
            ),
            "{v}"
        );
        assert_eq!(no_landlock.missing(), ["landlock"]);

        no_userns.seccomp = Layer::new(false, "no filter support");
        assert_eq!(no_userns.isolation_level(), IsolationLevel::Insufficient);
        assert!(no_userns.verdict().ends_with("seccomp: no filter support"));
    }

    #[test]
    fn mountinfo_lines() {
        let hybrid = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(("/".into(), "/sys/fs/cgroup/unified".into()))
        );
        let unified =
            "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 master:1 - cgroup2 cgroup2 rw";
        assert_eq!(
            cgroup2_mount(unified),
            Some(("/".into(), "/sys/fs/cgroup".into()))
        );
        let escaped = "7 1 0:9 /sub /mnt/my\\040cg\\134040 rw - cgroup2 none rw";
        assert_eq!(
            cgroup2_mount(escaped),
            Some(("/sub".into(), "/mnt/my cg\\040".into()))
        );
        let v1 = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory";
        for bad in [
            v1,
            "",
            "garbage",
            "1 2 - cgroup2 cgroup2 rw",
            " - cgroup2",
            "1 2 3 4 5 -cgroup2",
        ] {
            assert_eq!(cgroup2_mount(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn proc_self_cgroup() {
        assert_eq!(
            cgroup_v2_path("9:name=systemd:/\n4:memory:/x\n0::/\n").as_deref(),
            Some("/")
        );
        assert_eq!(
            cgroup_v2_path("0::/user.slice/a:b.scope").as_deref(),
            Some("/user.slice/a:b.scope")
        );
        for bad in [
            "",
            "4:memory:/x\n1:cpu:/",
            "0::",
            "0::relative",
            "0:x:/a",
            "garbage\n::\n0",
        ] {
            assert_eq!(cgroup_v2_path(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cgroup_delegation() {
        let (hybrid, ctl) = cgroup_layer("/sys/fs/cgroup/unified", "/", "hugetlb\n", true);
        assert!(!hybrid.available && ctl.is_empty());
        assert!(
            hybrid
                .detail
                .contains("no memory, pids controller here (only: hugetlb)")
        );
        assert!(
            cgroup_layer("/c", "/", "", true)
                .0
                .detail
                .contains("(only: none)")
        );
        let (locked, _) = cgroup_layer("/c", "/user.slice", "cpu memory pids", false);
        assert!(
            !locked.available && locked.detail.contains("Delegate=yes"),
            "{}",
            locked.detail
        );
        let (ok, ctl) = cgroup_layer("/c", "/user.slice", "cpuset cpu io memory pids", true);
        assert!(ok.available, "{}", ok.detail);
        assert_eq!(ctl, ["memory", "pids", "cpu"]);
    }

    #[test]
    fn errno_messages() {
        let (user, none) = (&NAMESPACES[0], Sysctls::default());
        let generic = unshare_error(user, Errno::EPERM, &none, None);
        assert!(
            generic.contains("blocked (EPERM)") && generic.contains(USERNS_FIX),
            "{generic}"
        );
        let debian = Sysctls {
            unprivileged_userns_clone: Some(0),
            apparmor_restrict: None,
        };
        assert!(unshare_error(user, Errno::EPERM, &debian, None).contains("clone=0: set it to 1"));
        let ubuntu = Sysctls {
            unprivileged_userns_clone: Some(1),
            apparmor_restrict: Some(1),
        };
        assert!(unshare_error(user, Errno::EPERM, &ubuntu, None).contains("userns=0"));
        let full = unshare_error(&NAMESPACES[3], Errno::ENOSPC, &none, Some(0));
        assert!(full.contains("user.max_net_namespaces is 0"), "{full}");
        assert!(unshare_error(&NAMESPACES[2], Errno::ENOSPC, &none, None).contains("is unknown"));
        assert!(
            unshare_error(&NAMESPACES[2], Errno::EINVAL, &none, None).contains("CONFIG_PID_NS=y")
        );
        assert!(unshare_error(&NAMESPACES[1], Errno::EINVAL, &none, None).contains("EINVAL"));
        assert!(unshare_error(user, Errno::ENOMEM, &none, None).contains("ENOMEM"));

        assert!(landlock_error(Errno::ENOSYS, None).contains("CONFIG_SECURITY_LANDLOCK"));
        let off = landlock_error(Errno::EOPNOTSUPP, Some("lockdown,capability,yama\n"));
        assert!(
            off.ends_with("lsm=landlock,lockdown,capability,yama"),
            "{off}"
        );
        assert!(landlock_error(Errno::EOPNOTSUPP, Some("  ")).ends_with("kernel parameter"));
        assert!(landlock_error(Errno::EFAULT, None).contains("EFAULT"));
    }

    #[test]
    fn landlock_abi_descriptions() {
        assert_eq!(landlock_description(1), "ABI 1 (filesystem)");
        assert_eq!(
            landlock_description(4),
            "ABI 4 (filesystem, refer, truncate, TCP bind/connect)"
        );
        assert!(landlock_description(7).ends_with("signal scoping, audit logging flags)"));
        assert!(landlock_description(9).ends_with("audit logging flags, and newer features)"));
        assert_eq!(landlock_description(0), "ABI 0 ()");
    }

    #[test]
    fn probe_children_report_the_failing_step() {
        assert_eq!(exit_code(0, 22), 22);
        assert_eq!(exit_code(1, 300), 255);
        assert_eq!(exit_code(0, 0), 1);
        assert!(matches!(run_in_child(&[&|| 0]), ChildOutcome::Succeeded));
        // SAFETY: closing an invalid descriptor only sets errno.
        let fails = || c_long::from(unsafe { libc::close(-1) });
        let outcome = run_in_child(&[&|| 0, &fails]);
        assert!(
            matches!(
                outcome,
                ChildOutcome::Failed {
                    step: 1,
                    errno: Errno::EBADF
                }
            ),
            "{outcome:?}"
        );
    }
}
