//! The minimal filesystem view: what the command sees, planned by the parent (a pure function of
//! the request and of what exists on the host) and built by the helper's pid 1 in its private
//! mount namespace.
//!
//! The view is a fresh tmpfs root (read-only once built) holding:
//! - `/usr`, `/bin`, `/sbin`, `/lib*`: read-only bind mounts, or the same symlinks as on a
//!   merged-/usr host;
//! - `/etc`: only what programs need to start — the dynamic loader's cache and configuration,
//!   `nsswitch.conf`, the time zone, Debian's `alternatives`, CA certificates — read-only, plus
//!   a `passwd` and `group` naming only the caller, `hosts` and `hostname`;
//! - `/dev`: `null`, `zero`, `full`, `random`, `urandom` bound from the host, and the `fd`,
//!   `stdin`, `stdout`, `stderr` symlinks into `/proc/self/fd`;
//! - `/proc`: a new procfs for the new pid namespace, with `sys`, `sysrq-trigger`, `irq` and
//!   `bus` read-only (a process whose uid is root outside could otherwise write sysctls);
//! - `/tmp` and `/work` (the home and work directory): private tmpfs, size-limited;
//! - `/tool` (the tool's own files) read-only — a registry run's files written into the root
//!   tmpfs from the request, a candidate's staging directory bound —, and `/workspace`
//!   read-only or writable, when given.
//!
//! Nothing else: no home directory, no `/run`, no daemon socket or state, no `/sys`.

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sys::stat::{Mode, SFlag, fstat};
use nix::unistd::{chdir, pivot_root};

use super::landlock::{Access, Rule};
use super::profile::WorkspaceAccess;
use super::protocol::{Entry, Failure, MountPlan, Step, What};
use super::tool_files::{self, ToolFiles};

/// The work directory, `HOME`.
pub(crate) const WORK: &str = "/work";
/// The private temporary directory.
pub(crate) const TMP: &str = "/tmp";
/// Where the workspace appears.
pub(crate) const WORKSPACE: &str = "/workspace";
/// Where the tool's own files appear.
pub(crate) const TOOL: &str = "/tool";
/// The uts namespace's hostname.
pub(crate) const HOSTNAME: &str = "toolsmith";

/// System directories bound read-only (or re-created as the host's symlinks).
const SYSTEM_DIRS: [&str; 7] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What of `/etc` the view keeps, relative to `/etc`.
const ETC: [&str; 8] = [
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "alternatives",
    "ssl/certs",
];

/// Devices, and whether the command may write them.
const DEVICES: [(&str, bool); 5] = [
    ("null", true),
    ("zero", true),
    ("full", true),
    ("random", false),
    ("urandom", false),
];

/// Parts of the new procfs made read-only.
const PROC_READ_ONLY: [&str; 4] = ["sys", "sysrq-trigger", "irq", "bus"];

/// Where the new root is built: any existing directory does, since the tmpfs mounted on it is
/// only visible in the private mount namespace, and sources are opened before it hides them.
const BASE: &str = "/tmp";

/// Size of the root tmpfs, KiB: it holds mount points and a few small files, plus a
/// registry run's tool files ([`root_options`]).
const ROOT_KB: usize = 4096;

/// The root tmpfs's mount options: [`ROOT_KB`] and room for the tool files the plan writes.
fn root_options(plan: &MountPlan) -> String {
    let files: usize = plan
        .entries
        .iter()
        .map(|e| match &e.what {
            What::Tree { files } => files.tmpfs_bytes(),
            _ => 0,
        })
        .sum();
    format!("mode=0755,size={}k", ROOT_KB + files.div_ceil(1024))
}

/// What is on the host at a path (not following a final symlink).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostEntry {
    /// Nothing.
    Missing,
    /// A directory.
    Dir,
    /// A file, a device, anything that is neither a directory nor a symlink.
    File,
    /// A symlink, with its target.
    Symlink(PathBuf),
}

/// Looks at a host path.
pub(crate) fn inspect(path: &Path) -> HostEntry {
    match fs::symlink_metadata(path) {
        Err(_) => HostEntry::Missing,
        Ok(m) if m.file_type().is_symlink() => match fs::read_link(path) {
            Ok(target) => HostEntry::Symlink(target),
            Err(_) => HostEntry::Missing,
        },
        Ok(m) if m.is_dir() => HostEntry::Dir,
        Ok(_) => HostEntry::File,
    }
}

/// What the parent knows when it plans the view.
#[derive(Debug, Clone)]
pub(crate) struct Inputs<'a> {
    /// The workspace on the host (canonical) and the access to it.
    pub workspace: Option<(&'a Path, WorkspaceAccess)>,
    /// The tool's directory on the host (canonical).
    pub tool_dir: Option<&'a Path>,
    /// The tool's files by value (a registry run), written at [`TOOL`] in the root tmpfs.
    pub tool_files: Option<&'a ToolFiles>,
    /// Size of each of `/tmp` and `/work`, MiB.
    pub scratch_mb: u32,
    /// The synthesized `/etc/passwd`.
    pub passwd: String,
    /// The synthesized `/etc/group`.
    pub group: String,
    /// Granted host sockets: (the path the run sees, the socket on the host, canonical).
    pub host_sockets: &'a [(PathBuf, PathBuf)],
    /// Granted credential files: (the path the run sees, under [`WORK`]; the file on the
    /// host, canonical), bound read-only.
    pub credentials: &'a [(PathBuf, PathBuf)],
    /// The user's toolchain paths (checked, canonical where they were resolved), bound
    /// read-only at their own paths.
    pub toolchains: Vec<PathBuf>,
}

fn entry(target: impl Into<PathBuf>, what: What) -> Entry {
    Entry {
        target: target.into(),
        what,
    }
}

fn bind(source: impl Into<PathBuf>, writable: bool) -> What {
    What::Bind {
        source: source.into(),
        writable,
    }
}

/// Plans the view. `inspect` tells what exists on the host, so this is tested with a fake host.
pub(crate) fn plan(inputs: &Inputs<'_>, inspect: &dyn Fn(&Path) -> HostEntry) -> MountPlan {
    let mut entries = Vec::new();
    for dir in SYSTEM_DIRS {
        match inspect(Path::new(dir)) {
            HostEntry::Dir => entries.push(entry(dir, bind(dir, false))),
            HostEntry::Symlink(to) => entries.push(entry(dir, What::Symlink { to })),
            HostEntry::File | HostEntry::Missing => {}
        }
    }
    for name in ETC {
        let path = Path::new("/etc").join(name);
        match inspect(&path) {
            HostEntry::Dir | HostEntry::File => entries.push(entry(&path, bind(&path, false))),
            HostEntry::Symlink(to) => entries.push(entry(&path, What::Symlink { to })),
            HostEntry::Missing => {}
        }
    }
    let hosts = format!("127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost {HOSTNAME}\n");
    for (name, contents) in [
        ("passwd", inputs.passwd.clone()),
        ("group", inputs.group.clone()),
        ("hosts", hosts),
        ("hostname", format!("{HOSTNAME}\n")),
    ] {
        entries.push(entry(Path::new("/etc").join(name), What::File { contents }));
    }
    for (name, _) in DEVICES {
        let source = Path::new("/dev").join(name);
        if inspect(&source) == HostEntry::File {
            entries.push(entry(
                &source,
                What::Device {
                    source: source.clone(),
                },
            ));
        }
    }
    for (name, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        let to = PathBuf::from(to);
        entries.push(entry(Path::new("/dev").join(name), What::Symlink { to }));
    }
    entries.push(entry("/proc", What::Proc));
    for name in PROC_READ_ONLY {
        entries.push(entry(Path::new("/proc").join(name), What::ReadOnly));
    }
    let size_mb = inputs.scratch_mb;
    entries.push(entry(
        TMP,
        What::Tmpfs {
            size_mb,
            mode: 0o1777,
        },
    ));
    entries.push(entry(
        WORK,
        What::Tmpfs {
            size_mb,
            mode: 0o700,
        },
    ));
    if let Some(tool) = inputs.tool_dir {
        entries.push(entry(TOOL, bind(tool, false)));
    }
    if let Some(files) = inputs.tool_files {
        entries.push(entry(
            TOOL,
            What::Tree {
                files: files.clone(),
            },
        ));
    }
    // A granted socket, at the path the grant names (connecting needs no write access to the
    // mount: sockets are exempt from read-only mounts).
    for (shown, real) in inputs.host_sockets {
        entries.push(entry(shown, bind(real, false)));
    }
    // A granted credential file, read-only, where its program looks under the run's home (the
    // private tmpfs at WORK, placed above).
    for (shown, real) in inputs.credentials {
        entries.push(entry(shown, bind(real, false)));
    }
    // Last, so a toolchain's mount points are made in the root tmpfs, at the paths the
    // toolchain's own files (scripts' `#!` lines, a venv's links) name.
    for path in &inputs.toolchains {
        match inspect(path) {
            HostEntry::Dir | HostEntry::File => entries.push(entry(path, bind(path, false))),
            HostEntry::Symlink(_) | HostEntry::Missing => {}
        }
    }
    let mut cwd = PathBuf::from(WORK);
    if let Some((dir, access)) = inputs.workspace
        && access != WorkspaceAccess::None
    {
        entries.push(entry(
            WORKSPACE,
            bind(dir, access == WorkspaceAccess::Write),
        ));
        cwd = PathBuf::from(WORKSPACE);
    }
    MountPlan {
        entries,
        cwd,
        hostname: HOSTNAME.into(),
    }
}

/// The Landlock rules of a planned view, on the paths the command sees.
pub(crate) fn landlock_rules(plan: &MountPlan) -> Vec<Rule> {
    let mut rules = vec![
        Rule::new("/", Access::List),
        Rule::new("/etc", Access::Read),
    ];
    for e in &plan.entries {
        let access = match &e.what {
            What::Bind { writable: true, .. } | What::Tmpfs { .. } => Access::Write,
            What::Bind { .. } if e.target.starts_with("/etc") => continue,
            What::Bind { .. } | What::Tree { .. } => Access::ReadExec,
            What::Device { source } => device_access(source),
            What::Proc => Access::Read,
            What::Symlink { .. } | What::File { .. } | What::ReadOnly => continue,
        };
        rules.push(Rule::new(&e.target, access));
    }
    rules
}

fn device_access(source: &Path) -> Access {
    let writable = DEVICES
        .iter()
        .any(|(name, w)| *w && source.file_name().is_some_and(|f| f == *name));
    if writable {
        Access::Device
    } else {
        Access::DeviceRead
    }
}

/// The Landlock rules when there are no namespaces: the same rights on the host's paths, a host
/// work directory (with its `tmp`) in place of the private tmpfs, and no `/proc` at all (host
/// processes' command lines would be readable).
pub(crate) fn host_rules(
    inputs: &Inputs<'_>,
    inspect: &dyn Fn(&Path) -> HostEntry,
    work: &Path,
) -> Vec<Rule> {
    // No rule on `/`: beneath it is the whole host, and even listing it would show names.
    let mut rules = Vec::new();
    for dir in SYSTEM_DIRS {
        if inspect(Path::new(dir)) == HostEntry::Dir {
            rules.push(Rule::new(dir, Access::ReadExec));
        }
    }
    let etc = ETC.iter().copied().chain(["passwd", "group", "hosts"]);
    for name in etc {
        let path = Path::new("/etc").join(name);
        if matches!(inspect(&path), HostEntry::Dir | HostEntry::File) {
            rules.push(Rule::new(path, Access::Read));
        }
    }
    for (name, _) in DEVICES {
        let path = Path::new("/dev").join(name);
        if inspect(&path) == HostEntry::File {
            let access = device_access(&path);
            rules.push(Rule::new(path, access));
        }
    }
    rules.push(Rule::new(work, Access::Write));
    if let Some(tool) = inputs.tool_dir {
        rules.push(Rule::new(tool, Access::ReadExec));
    }
    for path in &inputs.toolchains {
        if matches!(inspect(path), HostEntry::Dir | HostEntry::File) {
            rules.push(Rule::new(path, Access::ReadExec));
        }
    }
    if let Some((dir, access)) = inputs.workspace {
        match access {
            WorkspaceAccess::None => {}
            WorkspaceAccess::Read => rules.push(Rule::new(dir, Access::ReadExec)),
            WorkspaceAccess::Write => rules.push(Rule::new(dir, Access::Write)),
        }
    }
    rules
}

// `mount_setattr(2)` (Linux 5.12), which nix does not wrap: it sets attributes on a whole
// mount tree at once, and only the ones asked for, so locked flags inherited from the host's
// mounts need not be repeated as a classic read-only remount requires.
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// `struct mount_attr` of `<linux/mount.h>`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn set_attr(target: &Path, set: u64, recursive: bool) -> Result<(), Failure> {
    let path = std::ffi::CString::new(target.as_os_str().as_encoded_bytes()).map_err(|_| {
        Failure::other(
            Step::Mount,
            format!("{} contains a NUL byte", target.display()),
        )
    })?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags: libc::c_uint = if recursive {
        libc::AT_RECURSIVE.unsigned_abs()
    } else {
        0
    };
    // SAFETY: `path` is a valid C string and `attr` a properly sized `struct mount_attr`, both
    // alive for the whole call; the kernel only reads them.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    Errno::result(ret).map(drop).map_err(|e| {
        Failure::sys(
            Step::Mount,
            e,
            format!("mount_setattr on {} (needs Linux 5.12+)", target.display()),
        )
    })
}

fn sys(e: Errno, detail: impl std::fmt::Display) -> Failure {
    Failure::sys(Step::Mount, e, detail)
}

fn io(e: &std::io::Error, detail: impl std::fmt::Display) -> Failure {
    Failure::io(Step::Mount, e, detail)
}

/// Builds the planned view and enters it. Runs in pid 1 of the new namespaces, single-threaded.
pub(crate) fn build(plan: &MountPlan) -> Result<(), Failure> {
    let none = None::<&str>;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| sys(e, "making every mount private (mount --make-rprivate /)"))?;
    // Opened before the new root hides anything: a workspace may live under BASE.
    let mut sources: Vec<Option<OwnedFd>> = Vec::with_capacity(plan.entries.len());
    for e in &plan.entries {
        sources.push(match &e.what {
            What::Bind { source, .. } | What::Device { source } => Some(
                open(
                    source.as_path(),
                    OFlag::O_PATH | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|err| sys(err, format!("opening {}", source.display())))?,
            ),
            _ => None,
        });
    }
    let base = Path::new(BASE);
    let nosuid_nodev = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let root_options = root_options(plan);
    mount(
        Some("tmpfs"),
        base,
        Some("tmpfs"),
        nosuid_nodev,
        Some(root_options.as_str()),
    )
    .map_err(|e| sys(e, format!("mounting the new root's tmpfs on {BASE}")))?;
    for (e, source) in plan.entries.iter().zip(&sources) {
        let relative = e.target.strip_prefix("/").unwrap_or(&e.target);
        place(&base.join(relative), &e.target, &e.what, source.as_ref())?;
    }
    drop(sources);
    // Only the root tmpfs: the mounts on it keep their own flags (/tmp and /work stay writable).
    set_attr(base, MOUNT_ATTR_RDONLY, false)?;
    chdir(base).map_err(|e| Failure::sys(Step::PivotRoot, e, format!("chdir {BASE}")))?;
    // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves the
    // new root alone, with no path back to the host's tree.
    pivot_root(".", ".").map_err(|e| Failure::sys(Step::PivotRoot, e, "pivot_root"))?;
    umount2(".", MntFlags::MNT_DETACH)
        .map_err(|e| Failure::sys(Step::PivotRoot, e, "detaching the old root"))?;
    chdir("/").map_err(|e| Failure::sys(Step::PivotRoot, e, "chdir /"))?;
    chdir(plan.cwd.as_path())
        .map_err(|e| Failure::sys(Step::Chdir, e, format!("chdir {}", plan.cwd.display())))
}

fn parent_dirs(target: &Path) -> Result<(), Failure> {
    match target.parent() {
        Some(parent) => {
            fs::create_dir_all(parent).map_err(|e| io(&e, format!("mkdir {}", parent.display())))
        }
        None => Ok(()),
    }
}

/// Creates what a bind mount needs to land on: a directory for a directory, a file otherwise.
fn mount_point(target: &Path, is_dir: bool) -> Result<(), Failure> {
    parent_dirs(target)?;
    let made = if is_dir {
        fs::create_dir(target)
    } else {
        fs::File::create(target).map(drop)
    };
    match made {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(io(
            &e,
            format!("creating the mount point {}", target.display()),
        )),
        _ => Ok(()),
    }
}

fn place(
    target: &Path,
    shown: &Path,
    what: &What,
    source: Option<&OwnedFd>,
) -> Result<(), Failure> {
    let none = None::<&str>;
    let from_fd = |fd: &OwnedFd| format!("/proc/self/fd/{}", fd.as_raw_fd());
    match what {
        What::Bind {
            source: path,
            writable,
        } => {
            let fd = source.ok_or_else(|| {
                Failure::other(Step::Mount, format!("{} was not opened", path.display()))
            })?;
            let stat = fstat(fd).map_err(|e| sys(e, format!("fstat {}", path.display())))?;
            let is_dir = SFlag::from_bits_truncate(stat.st_mode & libc::S_IFMT) == SFlag::S_IFDIR;
            mount_point(target, is_dir)?;
            let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
            mount(Some(from_fd(fd).as_str()), target, none, flags, none).map_err(|e| {
                sys(
                    e,
                    format!("bind-mounting {} at {}", path.display(), shown.display()),
                )
            })?;
            let mut attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            if !writable {
                attrs |= MOUNT_ATTR_RDONLY;
            }
            set_attr(target, attrs, true)
        }
        What::Device { source: path } => {
            let fd = source.ok_or_else(|| {
                Failure::other(Step::Mount, format!("{} was not opened", path.display()))
            })?;
            mount_point(target, false)?;
            mount(
                Some(from_fd(fd).as_str()),
                target,
                none,
                MsFlags::MS_BIND,
                none,
            )
            .map_err(|e| {
                sys(
                    e,
                    format!("bind-mounting {} at {}", path.display(), shown.display()),
                )
            })?;
            // Read-only still lets a device be written: only the inode is protected.
            set_attr(
                target,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                false,
            )
        }
        What::Symlink { to } => {
            parent_dirs(target)?;
            std::os::unix::fs::symlink(to, target).map_err(|e| {
                io(
                    &e,
                    format!("symlink {} -> {}", shown.display(), to.display()),
                )
            })
        }
        What::File { contents } => {
            parent_dirs(target)?;
            fs::write(target, contents)
                .and_then(|()| fs::set_permissions(target, fs::Permissions::from_mode(0o644)))
                .map_err(|e| io(&e, format!("writing {}", shown.display())))
        }
        What::Tmpfs { size_mb, mode } => {
            fs::create_dir_all(target).map_err(|e| io(&e, format!("mkdir {}", shown.display())))?;
            let options = format!("size={size_mb}m,mode={mode:o}");
            mount(
                Some("tmpfs"),
                target,
                Some("tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some(options.as_str()),
            )
            .map_err(|e| sys(e, format!("mounting a tmpfs at {}", shown.display())))
        }
        What::Tree { files } => write_tree(target, shown, files),
        What::Proc => {
            fs::create_dir_all(target).map_err(|e| io(&e, format!("mkdir {}", shown.display())))?;
            let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
            mount(Some("proc"), target, Some("proc"), flags, none).map_err(|e| {
                sys(
                    e,
                    format!(
                        "mounting a procfs at {} (refused when the host's /proc is partly \
                         hidden, as in some containers)",
                        shown.display()
                    ),
                )
            })
        }
        What::ReadOnly => {
            if fs::symlink_metadata(target).is_err() {
                return Ok(());
            }
            let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
            mount(Some(target), target, none, flags, none)
                .map_err(|e| sys(e, format!("binding {} onto itself", shown.display())))?;
            let attrs =
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
            set_attr(target, attrs, true)
        }
    }
}

/// Writes a tool's files under `target` in the root tmpfs (made read-only with the root once
/// the view is built), each with the mode git records; paths are checked again here, so none
/// leaves `target` whatever the request says.
fn write_tree(target: &Path, shown: &Path, files: &ToolFiles) -> Result<(), Failure> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let mkdir = |dir: &Path| {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| io(&e, format!("mkdir {}", dir.display())))
    };
    mkdir(target)?;
    for file in files.files() {
        tool_files::check_path(&file.path).map_err(|why| Failure::other(Step::Mount, why))?;
        let path = target.join(&file.path);
        let view = shown.join(&file.path);
        if let Some(parent) = path.parent() {
            mkdir(parent)?;
        }
        let mode = if file.executable { 0o755 } else { 0o644 };
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| io(&e, format!("creating {}", view.display())))?;
        out.write_all(file.contents.as_bytes())
            // The umask must not take the executable bit git records.
            .and_then(|()| out.set_permissions(fs::Permissions::from_mode(mode)))
            .map_err(|e| io(&e, format!("writing {}", view.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A merged-/usr Debian host.
    fn debian(path: &Path) -> HostEntry {
        let p = path.to_str().unwrap_or("");
        match p {
            "/usr" | "/etc/ld.so.conf.d" | "/etc/alternatives" | "/etc/ssl/certs" => HostEntry::Dir,
            "/bin" => HostEntry::Symlink("usr/bin".into()),
            "/sbin" => HostEntry::Symlink("usr/sbin".into()),
            "/lib" => HostEntry::Symlink("usr/lib".into()),
            "/lib64" => HostEntry::Symlink("usr/lib64".into()),
            "/etc/localtime" => HostEntry::Symlink("/usr/share/zoneinfo/Etc/UTC".into()),
            "/etc/ld.so.cache" | "/etc/ld.so.conf" | "/etc/nsswitch.conf" => HostEntry::File,
            "/dev/null" | "/dev/zero" | "/dev/full" | "/dev/random" | "/dev/urandom" => {
                HostEntry::File
            }
            "/etc/passwd" | "/etc/group" | "/etc/hosts" => HostEntry::File,
            _ => HostEntry::Missing,
        }
    }

    fn inputs<'a>(workspace: Option<(&'a Path, WorkspaceAccess)>) -> Inputs<'a> {
        Inputs {
            workspace,
            tool_dir: Some(Path::new("/srv/registry/tools/t")),
            tool_files: None,
            scratch_mb: 64,
            passwd: "alice:x:1000:1000::/work:/bin/sh\n".into(),
            group: "alice:x:1000:\n".into(),
            host_sockets: &[],
            credentials: &[],
            toolchains: Vec::new(),
        }
    }

    #[test]
    fn toolchains_are_bound_read_only_at_their_paths_and_nothing_else_of_home() {
        let tc = "/home/alice/.rustup/toolchains/stable-x86_64-unknown-linux-gnu";
        let mut with = inputs(None);
        with.toolchains = vec![tc.into(), "/home/alice/.cargo/bin".into()];
        let fake = |p: &Path| match p.to_str() {
            Some(t) if t.starts_with("/home/alice/") => HostEntry::Dir,
            _ => debian(p),
        };
        let plan = plan(&with, &fake);
        assert_eq!(find(&plan, tc), Some(&bind(tc, false)));
        assert_eq!(
            find(&plan, "/home/alice/.cargo/bin"),
            Some(&bind("/home/alice/.cargo/bin", false))
        );
        let home: Vec<&Path> = plan
            .entries
            .iter()
            .map(|e| e.target.as_path())
            .filter(|t| t.starts_with("/home"))
            .collect();
        assert_eq!(home.len(), 2, "only the toolchain's paths: {home:?}");
        // After the tmpfs mounts, so nothing made later hides them.
        let position = |t: &str| plan.entries.iter().position(|e| e.target == Path::new(t));
        assert!(position("/work") < position(tc));
        let rules = landlock_rules(&plan);
        assert!(
            rules.contains(&Rule::new(tc, Access::ReadExec)),
            "read and execute, never write: {rules:?}"
        );
    }

    #[test]
    fn a_granted_credential_is_bound_read_only_under_the_run_s_home() {
        let granted = [(
            PathBuf::from("/work/.kube/config"),
            PathBuf::from("/home/alice/.kube/config"),
        )];
        let mut with = inputs(None);
        with.credentials = &granted;
        let plan = plan(&with, &debian);
        assert_eq!(
            find(&plan, "/work/.kube/config"),
            Some(&bind("/home/alice/.kube/config", false))
        );
        // Placed after the home's tmpfs, so the tmpfs does not hide it.
        let position = |t: &str| plan.entries.iter().position(|e| e.target == Path::new(t));
        assert!(position("/work") < position("/work/.kube/config"));
        assert!(
            landlock_rules(&plan).contains(&Rule::new("/work/.kube/config", Access::ReadExec)),
            "read, never write"
        );
        let without = super::plan(&inputs(None), &debian);
        assert_eq!(find(&without, "/work/.kube/config"), None);
    }

    fn find<'a>(plan: &'a MountPlan, target: &str) -> Option<&'a What> {
        plan.entries
            .iter()
            .find(|e| e.target == Path::new(target))
            .map(|e| &e.what)
    }

    #[test]
    fn the_view_is_minimal() {
        let ws = Path::new("/home/alice/project");
        let plan = plan(&inputs(Some((ws, WorkspaceAccess::Read))), &debian);
        assert_eq!(find(&plan, "/usr"), Some(&bind("/usr", false)));
        assert_eq!(
            find(&plan, "/bin"),
            Some(&What::Symlink {
                to: "usr/bin".into()
            })
        );
        assert_eq!(
            find(&plan, "/lib32"),
            None,
            "missing on the host, absent in the view"
        );
        assert_eq!(
            find(&plan, "/etc/localtime"),
            Some(&What::Symlink {
                to: "/usr/share/zoneinfo/Etc/UTC".into()
            })
        );
        assert_eq!(
            find(&plan, "/etc/ssl/certs"),
            Some(&bind("/etc/ssl/certs", false))
        );
        assert!(
            matches!(find(&plan, "/etc/passwd"), Some(What::File { contents }) if contents.starts_with("alice:")),
            "passwd names only the caller"
        );
        assert_eq!(
            find(&plan, "/dev/null"),
            Some(&What::Device {
                source: "/dev/null".into()
            })
        );
        assert_eq!(find(&plan, "/proc"), Some(&What::Proc));
        assert_eq!(find(&plan, "/proc/sys"), Some(&What::ReadOnly));
        assert_eq!(
            find(&plan, "/work"),
            Some(&What::Tmpfs {
                size_mb: 64,
                mode: 0o700
            })
        );
        assert_eq!(
            find(&plan, "/tmp"),
            Some(&What::Tmpfs {
                size_mb: 64,
                mode: 0o1777
            })
        );
        assert_eq!(
            find(&plan, "/tool"),
            Some(&bind("/srv/registry/tools/t", false))
        );
        assert_eq!(find(&plan, "/workspace"), Some(&bind(ws, false)));
        assert_eq!(plan.cwd, Path::new("/workspace"));
        // Nothing of the host's home, /run, /sys or other /etc files.
        for absent in [
            "/home",
            "/root",
            "/run",
            "/sys",
            "/etc/shadow",
            "/etc/ssl/private",
            "/var",
        ] {
            assert!(
                plan.entries.iter().all(|e| !e.target.starts_with(absent)),
                "{absent} is in the view"
            );
        }
        // The proc mount comes before the parts of it made read-only.
        let position = |t: &str| plan.entries.iter().position(|e| e.target == Path::new(t));
        assert!(position("/proc") < position("/proc/sys"));
    }

    #[test]
    fn workspace_access_decides_the_mount_and_the_cwd() {
        let ws = Path::new("/w");
        let write = plan(&inputs(Some((ws, WorkspaceAccess::Write))), &debian);
        assert_eq!(find(&write, "/workspace"), Some(&bind(ws, true)));
        let none = plan(&inputs(Some((ws, WorkspaceAccess::None))), &debian);
        assert_eq!(find(&none, "/workspace"), None);
        assert_eq!(none.cwd, Path::new("/work"));
        let absent = plan(&inputs(None), &debian);
        assert_eq!(absent.cwd, Path::new("/work"));
    }

    #[test]
    fn landlock_rules_follow_the_view() {
        let ws = Path::new("/w");
        let plan = plan(&inputs(Some((ws, WorkspaceAccess::Read))), &debian);
        let rules = landlock_rules(&plan);
        let access = |p: &str| {
            rules
                .iter()
                .find(|r| r.path == Path::new(p))
                .map(|r| r.access)
        };
        assert_eq!(access("/"), Some(Access::List));
        assert_eq!(access("/usr"), Some(Access::ReadExec));
        assert_eq!(access("/etc"), Some(Access::Read));
        assert_eq!(access("/etc/ssl/certs"), None, "covered by /etc");
        assert_eq!(access("/bin"), None, "a symlink into /usr");
        assert_eq!(access("/dev/null"), Some(Access::Device));
        assert_eq!(access("/dev/urandom"), Some(Access::DeviceRead));
        assert_eq!(access("/proc"), Some(Access::Read));
        assert_eq!(access("/work"), Some(Access::Write));
        assert_eq!(access("/tmp"), Some(Access::Write));
        assert_eq!(access("/tool"), Some(Access::ReadExec));
        assert_eq!(access("/workspace"), Some(Access::ReadExec));
        let writable = plan_rules_for(WorkspaceAccess::Write);
        assert!(writable.contains(&Rule::new("/workspace", Access::Write)));
    }

    #[test]
    fn a_registry_runs_files_are_written_in_the_root_not_bound_from_the_host() {
        let mut files = ToolFiles::new();
        files
            .add("run.sh", true, "#!/bin/sh\necho hi\n".into())
            .expect("add");
        let mut with = inputs(None);
        with.tool_dir = None;
        with.tool_files = Some(&files);
        let plan = plan(&with, &debian);
        assert_eq!(
            find(&plan, "/tool"),
            Some(&What::Tree {
                files: files.clone()
            })
        );
        assert!(
            plan.entries.iter().all(|e| !matches!(
                &e.what,
                What::Bind { source, .. } if source.starts_with("/srv")
            )),
            "nothing of the registry's work tree is bound"
        );
        assert!(landlock_rules(&plan).contains(&Rule::new("/tool", Access::ReadExec)));
        // The root tmpfs has room for them: 4 MiB, plus a page for the contents and one more.
        assert_eq!(root_options(&plan), "mode=0755,size=4104k");
    }

    fn plan_rules_for(access: WorkspaceAccess) -> Vec<Rule> {
        landlock_rules(&plan(&inputs(Some((Path::new("/w"), access))), &debian))
    }

    #[test]
    fn host_rules_without_namespaces() {
        let ws = Path::new("/home/alice/project");
        let rules = host_rules(
            &inputs(Some((ws, WorkspaceAccess::Write))),
            &debian,
            Path::new("/tmp/toolsmith-work-1"),
        );
        assert!(rules.contains(&Rule::new("/usr", Access::ReadExec)));
        assert!(rules.contains(&Rule::new("/etc/passwd", Access::Read)));
        assert!(rules.contains(&Rule::new("/tmp/toolsmith-work-1", Access::Write)));
        assert!(rules.contains(&Rule::new(ws, Access::Write)));
        assert!(
            rules.iter().all(|r| !r.path.starts_with("/proc")
                && r.path != Path::new("/tmp")
                && r.path != Path::new("/")),
            "no /proc, no shared /tmp and nothing on / without namespaces"
        );
        assert!(
            !rules.iter().any(|r| r.path == Path::new("/bin")),
            "symlinks are not rules"
        );
    }
}
