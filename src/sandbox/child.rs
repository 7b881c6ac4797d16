//! The helper: the toolsmith binary re-executed under the name [`HELPER_ARG0`], dispatched at
//! the very top of `main` before any thread or runtime exists, so it is single-threaded and may
//! fork and change its process state freely.
//!
//! It runs as two processes:
//! - the **supervisor** reads the request, opens the run's cgroup files, unshares the user, mount,
//!   pid, net, ipc and uts namespaces, maps the caller's uid and gid, forks, and then only waits:
//!   for pid 1 to end (it then reports the exit status and resource usage) or for `SIGTERM` from
//!   the parent (it then kills pid 1, which takes the whole pid namespace with it);
//! - **pid 1** of the new pid namespace joins the run's cgroup, builds the filesystem view,
//!   then in this order: setsid,
//!   parent-death signal, closes inherited descriptors, rlimits, Landlock, capabilities,
//!   no_new_privs, seccomp, and `execve` of the command, which stays pid 1: when it exits, the
//!   kernel kills everything left in the namespace.
//!
//! Every failure is a typed message on the report pipe naming the step; nothing panics.

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::ExitCode;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::sys::prctl;
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::signal::{SigHandler, SigSet, Signal, kill, killpg, signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::{ForkResult, Pid, chdir, execve, fork, getgid, getuid, pipe2, setsid};

use super::protocol::{
    Failure, HelperSpec, MAX_SPEC_BYTES, Message, Pid1Marks, Step, SupervisorMarks, View, now_ns,
};
use super::{Enforcement, Exit, HELPER_ARG0, landlock, limits, mounts, seccomp};

/// Exit status of a helper whose set-up failed (the report pipe says why).
pub(super) const SETUP_FAILED: u8 = 125;

/// Runs the helper when this process was started as one.
pub(crate) fn main_if_helper() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let arg0 = args.next()?;
    if Path::new(&arg0).file_name()? != HELPER_ARG0 {
        return None;
    }
    Some(ExitCode::from(serve(&args.collect::<Vec<_>>())))
}

/// The report pipe.
struct Reporter {
    fd: OwnedFd,
}

impl Reporter {
    /// Writes one message; a line is shorter than `PIPE_BUF`, so one write is atomic. A parent
    /// that is gone cannot be told anything, so errors are ignored.
    fn send(&self, message: &Message) {
        let line = message.to_line();
        let _ = nix::unistd::write(self.fd.as_fd(), &line);
    }
}

/// Takes a descriptor number from the command line, checking it is open and not stdio.
fn inherited_fd(arg: Option<&OsString>) -> Option<OwnedFd> {
    let fd: RawFd = arg?.to_str()?.parse().ok()?;
    if fd <= 2 {
        return None;
    }
    // SAFETY: F_GETFD on any number only reads the descriptor table.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return None;
    }
    // SAFETY: the parent opened this descriptor for the helper alone and passes its number once;
    // it was checked to be open, and nothing else in this process owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // Kept out of every later execve: the command must never see the helper's pipes.
    fcntl(&owned, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).ok()?;
    Some(owned)
}

/// The helper's work, whichever way it started (re-executed under [`HELPER_ARG0`], or forked
/// from a single-threaded caller): `args` are the request's and the report's descriptor
/// numbers and the parent's pid. Returns the helper's exit status.
pub(super) fn serve(args: &[OsString]) -> u8 {
    // First: this process dies with the thread that started it (the parent's `run`), and that
    // process must still be there, or the signal was armed too late to ever come.
    let parent = args
        .get(2)
        .and_then(|a| a.to_str()?.parse::<libc::pid_t>().ok());
    if let Some(parent) = parent
        && (prctl::set_pdeathsig(Signal::SIGKILL).is_err()
            || nix::unistd::getppid().as_raw() != parent)
    {
        return SETUP_FAILED;
    }
    let (Some(spec_fd), Some(report_fd), Some(_)) = (
        inherited_fd(args.first()),
        inherited_fd(args.get(1)),
        parent,
    ) else {
        eprintln!(
            "{HELPER_ARG0}: toolsmith's sandbox helper is started by toolsmith with its request \
             on a pipe; it is not run by hand (try `toolsmith sandbox -- CMD`)"
        );
        return SETUP_FAILED;
    };
    // The proxy's channel, present only with a network grant.
    let proxy_channel = inherited_fd(args.get(3));
    let reporter = Reporter { fd: report_fd };
    let result = read_spec(spec_fd).and_then(|spec| {
        let spec_read = now_ns();
        supervisor(&spec, &reporter, spec_read, proxy_channel)
    });
    match result {
        Ok(()) => {
            // The report is complete: the parent sees the ends of its pipes now, not after this
            // process has torn down its memory and the namespaces, which it does on its own.
            drop(reporter);
            // SAFETY: nothing of this process writes to its stdout or stderr any more.
            unsafe {
                libc::close(1);
                libc::close(2);
            }
            0
        }
        Err(failure) => {
            reporter.send(&failure.into_message());
            SETUP_FAILED
        }
    }
}

fn read_spec(fd: OwnedFd) -> Result<HelperSpec, Failure> {
    let mut text = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_SPEC_BYTES)
        .read_to_end(&mut text)
        .map_err(|e| Failure::io(Step::ReadSpec, &e, "reading the request"))?;
    serde_json::from_slice(&text).map_err(|e| {
        Failure::other(
            Step::ReadSpec,
            format!("the request is not one this build understands: {e}"),
        )
    })
}

/// The supervisor's part: namespaces, the fork, and the wait.
fn supervisor(
    spec: &HelperSpec,
    reporter: &Reporter,
    spec_read: u64,
    proxy_channel: Option<OwnedFd>,
) -> Result<(), Failure> {
    // The run's cgroup files are opened here, before the namespaces (the permission to move a
    // process is checked against the opener), and written by pid 1 alone: the supervisor stays
    // out of the cgroup, so the parent can remove it as soon as pid 1 is reaped, without
    // waiting for the supervisor's own exit (its copy of the caller's memory and the
    // namespaces it tears down).
    let mut cgroup_files = Vec::with_capacity(spec.cgroup_join.len());
    for file in &spec.cgroup_join {
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .open(file)
            .map_err(|e| {
                Failure::io(
                    Step::JoinCgroup,
                    &e,
                    format!("opening {} to join the run's cgroup", file.display()),
                )
            })?;
        cgroup_files.push((opened, file.clone()));
    }
    let joined = now_ns();
    if let View::Isolated(_) = spec.view {
        let (uid, gid) = (getuid(), getgid());
        let flags = CloneFlags::CLONE_NEWUSER
            | CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWPID
            | CloneFlags::CLONE_NEWNET
            | CloneFlags::CLONE_NEWIPC
            | CloneFlags::CLONE_NEWUTS;
        unshare(flags).map_err(|e| {
            Failure::sys(
                Step::Unshare,
                e,
                "unshare(user, mount, pid, net, ipc, uts); `toolsmith doctor` says what is missing",
            )
        })?;
        // The caller's own ids, nothing else: no privilege the caller lacks outside.
        for (file, contents) in [
            ("/proc/self/setgroups", "deny".to_string()),
            ("/proc/self/uid_map", format!("{uid} {uid} 1\n")),
            ("/proc/self/gid_map", format!("{gid} {gid} 1\n")),
        ] {
            std::fs::write(file, &contents).map_err(|e| {
                Failure::io(
                    Step::IdMaps,
                    &e,
                    format!("writing {:?} to {file}", contents.trim()),
                )
            })?;
        }
    }
    // Only with a network grant, and only in the run's own network namespace: a run without
    // one shares the host's network, where this would listen on the host's loopback.
    match (&spec.proxy, &spec.view, proxy_channel) {
        (None, _, _) => {}
        (Some(plan), View::Isolated(_), Some(channel)) => proxy_listener(plan.port, &channel)?,
        (Some(_), View::Host { .. }, _) => {
            return Err(Failure::other(
                Step::Network,
                "a network grant needs the sandbox's own network namespace",
            ));
        }
        (Some(_), _, None) => {
            return Err(Failure::other(
                Step::Network,
                "the request asks for the proxy, but no channel to it was passed",
            ));
        }
    }
    // The supervisor holds the write end: pid 1 sees it close if the supervisor dies.
    let (lifeline_read, lifeline_write) = pipe2(OFlag::O_CLOEXEC)
        .map_err(|e| Failure::sys(Step::Fork, e, "creating the lifeline pipe"))?;
    // pid 1 holds the write end, close-on-exec: the supervisor sees it close when `execve`
    // succeeds, which times the exec apart from the command's own run.
    let (exec_read, exec_write) = pipe2(OFlag::O_CLOEXEC)
        .map_err(|e| Failure::sys(Step::Fork, e, "creating the exec pipe"))?;
    // Blocked before the fork so that no SIGCHLD or SIGTERM is lost; pid 1 unblocks them.
    let mut waited = SigSet::empty();
    waited.add(Signal::SIGCHLD);
    waited.add(Signal::SIGTERM);
    waited
        .thread_block()
        .map_err(|e| Failure::sys(Step::Fork, e, "blocking SIGCHLD and SIGTERM"))?;
    // SAFETY: the helper is single-threaded (dispatched before any thread starts), so the child
    // may allocate and do anything the parent could.
    match unsafe { fork() } {
        Err(e) => Err(Failure::sys(Step::Fork, e, "fork")),
        Ok(ForkResult::Child) => {
            let started = now_ns();
            drop(lifeline_write);
            drop(exec_read);
            let joined = join_cgroup(cgroup_files);
            let failure = match joined
                .and_then(|()| pid1(spec, reporter, lifeline_read, &exec_write, started))
            {
                Err(failure) => failure,
                Ok(never) => match never {},
            };
            let code = match (failure.step, failure.errno) {
                (Step::Exec, Some(libc::ENOENT)) => 127,
                (Step::Exec, _) => 126,
                _ => i32::from(SETUP_FAILED),
            };
            reporter.send(&failure.into_message());
            // SAFETY: `_exit` skips destructors and atexit handlers, which belong to the
            // supervisor's copy of this process.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(cgroup_files);
            drop(lifeline_read);
            drop(exec_write);
            let marks = SupervisorMarks {
                spec_read,
                joined,
                ..SupervisorMarks::default()
            };
            let result = supervise(child, &waited, exec_read, marks, reporter);
            drop(lifeline_write);
            result
        }
    }
}

/// Brings up `lo` in the run's network namespace (the supervisor holds every capability of
/// its user namespace, which owns it), listens on `127.0.0.1:port`, and sends the listening
/// socket to the parent's proxy; neither stays open here, so pid 1 never holds them.
fn proxy_listener(port: u16, channel: &OwnedFd) -> Result<(), Failure> {
    loopback_up().map_err(|e| Failure::io(Step::Network, &e, "bringing up lo"))?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| Failure::io(Step::Network, &e, format!("listening on 127.0.0.1:{port}")))?;
    let listener = OwnedFd::from(listener);
    super::proxy::send_listener(channel, &listener)
        .map_err(|e| Failure::io(Step::Network, &e, "sending the listener to the proxy"))
}

/// `ip link set lo up`, by `SIOCSIFFLAGS`.
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: socket() with constant arguments; the result is checked and owned at once.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new descriptor nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = libc::c_char::from_ne_bytes([*byte]);
    }
    // SAFETY: ioctl on our socket with a valid ifreq naming `lo`; the kernel fills the flags.
    if unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &raw mut request) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: reading the union member SIOCGIFFLAGS just wrote.
    let flags = unsafe { request.ifr_ifru.ifru_flags };
    let up = libc::c_short::try_from(libc::IFF_UP | libc::IFF_RUNNING).unwrap_or(1);
    request.ifr_ifru.ifru_flags = flags | up;
    // SAFETY: as above; SIOCSIFFLAGS reads the flags.
    if unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &raw const request) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// pid 1 joins the run's cgroups, first thing: everything it starts is born inside. `0` is
/// the writer itself; in v1 the file is `tasks`, which moves this (only) thread without the
/// global lock `cgroup.procs` takes (see `RunCgroup::procs`).
fn join_cgroup(files: Vec<(std::fs::File, std::path::PathBuf)>) -> Result<(), Failure> {
    use std::io::Write;
    for (mut file, path) in files {
        file.write_all(b"0").map_err(|e| {
            Failure::io(
                Step::JoinCgroup,
                &e,
                format!("writing 0 to {}", path.display()),
            )
        })?;
    }
    Ok(())
}

/// Waits for pid 1, killing it on `SIGTERM`; then reports how it ended. The signals come
/// through a signalfd, so that the same wait also sees the exec pipe close.
fn supervise(
    pid1: Pid,
    waited: &SigSet,
    exec_pipe: OwnedFd,
    mut marks: SupervisorMarks,
    reporter: &Reporter,
) -> Result<(), Failure> {
    let signals = SignalFd::with_flags(waited, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| Failure::sys(Step::Supervise, e, "signalfd"))?;
    let mut exec_pipe = Some(exec_pipe);
    'wait: loop {
        let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
        if let Some(pipe) = &exec_pipe {
            fds.push(PollFd::new(pipe.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(Failure::sys(Step::Supervise, e, "poll")),
        }
        let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
        let (signalled, pipe_closed) = (ready(&fds[0]), fds.get(1).is_some_and(ready));
        drop(fds);
        if pipe_closed {
            // Nobody writes to it: readiness is its end (or an error, equally final).
            marks.exec_done = Some(now_ns());
            exec_pipe = None;
        }
        if !signalled {
            continue;
        }
        loop {
            let signal = match signals.read_signal() {
                Ok(Some(info)) => info.ssi_signo,
                Ok(None) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Failure::sys(Step::Supervise, e, "reading the signalfd")),
            };
            if signal == Signal::SIGTERM as u32 {
                // pid 1 is not reaped yet, so this pid is still ours to signal.
                let _ = kill(pid1, Signal::SIGKILL);
                continue;
            }
            // Peek without reaping: the pid and its process group stay reserved while
            // stragglers are killed below.
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
            match waitid(Id::Pid(pid1), flags) {
                Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => {}
                Ok(_) => break 'wait,
                Err(e) => return Err(Failure::sys(Step::Supervise, e, "waitid on pid 1")),
            }
        }
    }
    marks.exited = now_ns();
    // With a pid namespace everything is already gone; without one, this ends what is left of
    // pid 1's session (a process that called setsid itself escapes it: the policy says whether
    // that is acceptable).
    let _ = killpg(pid1, Signal::SIGKILL);
    let exit = loop {
        match waitpid(pid1, None) {
            Ok(WaitStatus::Exited(_, code)) => break Exit::Code(code),
            Ok(WaitStatus::Signaled(_, signal, _)) => break Exit::Signal(signal as i32),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(Failure::sys(Step::Supervise, e, "waitpid on pid 1")),
        }
    };
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)
        .map_err(|e| Failure::sys(Step::Supervise, e, "getrusage"))?;
    let micros = |t: nix::sys::time::TimeVal| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_usec()).unwrap_or(0)
    };
    reporter.send(&Message::Exited {
        exit,
        maxrss_kb: u64::try_from(usage.max_rss()).unwrap_or(0),
        cpu_us: micros(usage.user_time()) + micros(usage.system_time()),
        marks,
    });
    Ok(())
}

/// pid 1's part: confine, then become the command. Returns only on failure.
fn pid1(
    spec: &HelperSpec,
    reporter: &Reporter,
    lifeline: OwnedFd,
    exec_pipe: &OwnedFd,
    started: u64,
) -> Result<Infallible, Failure> {
    let mut marks = Pid1Marks {
        started,
        ..Pid1Marks::default()
    };
    // A blocked mask and ignored signals survive execve: the command gets the defaults.
    SigSet::empty()
        .thread_set_mask()
        .map_err(|e| Failure::sys(Step::Fork, e, "unblocking signals"))?;
    for sig in Signal::iterator().filter(|s| !matches!(s, Signal::SIGKILL | Signal::SIGSTOP)) {
        // SAFETY: SIG_DFL installs no handler, so no code of ours can run in a signal context.
        let _ = unsafe { signal(sig, SigHandler::SigDfl) };
    }
    // An out-of-memory kill must pick the command, never its supervisor, which holds the
    // report: tmpfs pages (`/tmp`, `/work`) count against the run's memory but belong to no
    // process, so once they fill the limit the supervisor can be the largest process left.
    // The highest score makes every process of the command (it is inherited) go first; raising
    // one's own score needs no privilege. Should the write fail, the parent still reports a
    // supervisor killed during an out-of-memory event as the memory limit.
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
    match &spec.view {
        View::Isolated(plan) => {
            nix::unistd::sethostname(&plan.hostname)
                .map_err(|e| Failure::sys(Step::Hostname, e, "sethostname"))?;
            mounts::build(plan)?;
        }
        View::Host { cwd } => chdir(cwd.as_path())
            .map_err(|e| Failure::sys(Step::Chdir, e, format!("chdir {}", cwd.display())))?,
    }
    marks.view = now_ns();
    setsid().map_err(|e| Failure::sys(Step::Setsid, e, "setsid"))?;
    prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| Failure::sys(Step::ParentDeathSignal, e, "prctl(PR_SET_PDEATHSIG)"))?;
    // The supervisor may have died before the parent-death signal was armed.
    let mut fds = [PollFd::new(lifeline.as_fd(), PollFlags::POLLIN)];
    let ready = poll(&mut fds, PollTimeout::ZERO)
        .map_err(|e| Failure::sys(Step::ParentDeathSignal, e, "polling the lifeline"))?;
    if ready > 0 {
        return Err(Failure::other(
            Step::ParentDeathSignal,
            "the supervising helper died during set-up",
        ));
    }
    drop(lifeline);
    close_inherited_fds(&[reporter.fd.as_raw_fd(), exec_pipe.as_raw_fd()])?;

    // Everything execve needs is prepared before the filters, so nothing after them can fail
    // for want of a system call.
    let argv = c_strings(spec.argv.iter().map(String::as_str), "the command")?;
    let env = c_strings(
        spec.env.iter().map(|(n, v)| format!("{n}={v}")),
        "the environment",
    )?;
    let path = spec
        .env
        .iter()
        .find(|(n, _)| n == "PATH")
        .map_or(super::env::PATH, |(_, v)| v.as_str());
    let name = spec.argv.first().map_or("", String::as_str);
    let programs = exec_candidates(name, path)?;
    marks.prepared = now_ns();

    limits::apply_rlimits(&limits::rlimits(&spec.limits, spec.cgroup_limits))
        .map_err(|e| Failure::other(Step::Rlimits, e))?;
    marks.rlimits = now_ns();

    let abi = crate::host::landlock_abi().unwrap_or(0);
    let required = spec.required;
    let ports: Vec<u16> = spec.proxy.iter().map(|p| p.port).collect();
    let (landlock, landlock_abi) =
        match landlock::restrict(&spec.landlock, &ports, abi, required.allow_partial_landlock) {
            Ok((Enforcement::None, _)) if required.landlock => {
                return Err(Failure::other(
                    Step::Landlock,
                    "this kernel does not enforce Landlock, which the policy requires",
                ));
            }
            Ok(applied) => applied,
            Err(e) if required.landlock => return Err(Failure::other(Step::Landlock, e)),
            Err(_) => (Enforcement::None, None),
        };
    marks.landlock = now_ns();

    drop_capabilities()?;

    prctl::set_no_new_privs()
        .map_err(|e| Failure::sys(Step::NoNewPrivs, e, "prctl(PR_SET_NO_NEW_PRIVS)"))?;
    if !prctl::get_no_new_privs().unwrap_or(false) {
        return Err(Failure::other(
            Step::NoNewPrivs,
            "no_new_privs reads back as unset",
        ));
    }

    let filters = match &spec.seccomp {
        Ok(packed) => Ok(seccomp::unpacked(packed)),
        Err(why) => Err(why.clone()),
    };
    let seccomp = match filters.and_then(|f| seccomp::install(&f)) {
        Ok(()) => true,
        Err(e) if required.seccomp => return Err(Failure::other(Step::Seccomp, e)),
        Err(_) => false,
    };

    marks.exec = now_ns();
    reporter.send(&Message::Confined {
        landlock,
        landlock_abi,
        seccomp,
        marks,
    });
    Err(exec(name, &programs, &argv, &env))
}

fn c_strings<I, S>(items: I, what: &str) -> Result<Vec<CString>, Failure>
where
    I: IntoIterator<Item = S>,
    S: Into<Vec<u8>>,
{
    items
        .into_iter()
        .map(|s| {
            CString::new(s)
                .map_err(|_| Failure::other(Step::Exec, format!("{what} contains a NUL byte")))
        })
        .collect()
}

/// The paths `execve` tries: the name itself when it has a slash, else each `PATH` entry.
fn exec_candidates(name: &str, path: &str) -> Result<Vec<CString>, Failure> {
    if name.is_empty() {
        return Err(Failure::other(Step::Exec, "the command is empty"));
    }
    if name.contains('/') {
        return c_strings([name], "the command");
    }
    let dirs = path.split(':').filter(|d| !d.is_empty());
    c_strings(dirs.map(|d| format!("{d}/{name}")), "PATH")
}

/// `execve` of the first candidate that exists; returns why none could run.
fn exec(name: &str, programs: &[CString], argv: &[CString], env: &[CString]) -> Failure {
    let mut denied = None;
    for program in programs {
        match execve(program, argv, env) {
            Err(Errno::ENOENT | Errno::ENOTDIR) => {}
            Err(Errno::EACCES) => denied = Some(Errno::EACCES),
            Err(e) => {
                return Failure::sys(
                    Step::Exec,
                    e,
                    format!("execve {}", program.to_string_lossy()),
                );
            }
            Ok(never) => match never {},
        }
    }
    let errno = denied.unwrap_or(Errno::ENOENT);
    let place = if name.contains('/') {
        "inside the sandbox"
    } else {
        "on the sandbox's PATH"
    };
    Failure::sys(
        Step::Exec,
        errno,
        format!(
            "looking for `{name}` {place} (the sandbox sees /usr, /bin, /lib*, /tool, \
             /workspace and /work, not your home)"
        ),
    )
}

/// Closes every descriptor above 2 except `keep` (the report pipe and the exec pipe, both
/// close-on-exec, so `execve` closes them).
fn close_inherited_fds(keep: &[RawFd]) -> Result<(), Failure> {
    let mut kept = Vec::with_capacity(keep.len());
    for &fd in keep {
        let fd = libc::c_uint::try_from(fd)
            .map_err(|_| Failure::other(Step::CloseFds, "bad descriptor to keep"))?;
        kept.push(fd);
    }
    for (first, last) in ranges_between(kept) {
        // SAFETY: close_range only closes descriptors; nothing in this process holds any of them
        // but the kept ones, which lie outside every range.
        let ret = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
        Errno::result(ret).map_err(|e| {
            Failure::sys(
                Step::CloseFds,
                e,
                format!("close_range({first}, {last}) (Linux 5.9+)"),
            )
        })?;
    }
    Ok(())
}

/// The ranges of descriptors from 3 up that hold none of `kept`.
fn ranges_between(mut kept: Vec<libc::c_uint>) -> Vec<(libc::c_uint, libc::c_uint)> {
    kept.sort_unstable();
    let mut first: libc::c_uint = 3;
    let mut ranges = Vec::with_capacity(kept.len() + 1);
    for fd in kept {
        if fd >= first {
            if fd > first {
                ranges.push((first, fd - 1));
            }
            first = fd + 1;
        }
    }
    ranges.push((first, libc::c_uint::MAX));
    ranges
}

/// Empties the capability bounding set and the ambient set: a command running as uid 0 (root
/// outside, or root in the user namespace) then gets no capability from `execve`.
fn drop_capabilities() -> Result<(), Failure> {
    let zero: libc::c_ulong = 0;
    let clear_all = libc::c_ulong::try_from(libc::PR_CAP_AMBIENT_CLEAR_ALL).unwrap_or(4);
    // SAFETY: prctl on integer arguments; it only changes this process's capability sets.
    let ret = unsafe { libc::prctl(libc::PR_CAP_AMBIENT, clear_all, zero, zero, zero) };
    Errno::result(ret)
        .map_err(|e| Failure::sys(Step::Capabilities, e, "clearing ambient capabilities"))?;
    for cap in 0..64 as libc::c_ulong {
        // SAFETY: as above.
        let ret = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, zero, zero, zero) };
        match Errno::result(ret) {
            Ok(_) => {}
            // Past the kernel's last capability.
            Err(Errno::EINVAL) => break,
            // Without CAP_SETPCAP there is nothing to drop unless we are root.
            Err(Errno::EPERM) if !nix::unistd::geteuid().is_root() => break,
            Err(e) => {
                return Err(Failure::sys(
                    Step::Capabilities,
                    e,
                    format!("dropping capability {cap} from the bounding set"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lookup_candidates() {
        let names = |v: Vec<CString>| -> Vec<String> {
            v.into_iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect()
        };
        let found = exec_candidates("sh", "/usr/bin::/bin").expect("ok");
        assert_eq!(names(found), ["/usr/bin/sh", "/bin/sh"]);
        let direct = exec_candidates("./run.sh", "/usr/bin").expect("ok");
        assert_eq!(names(direct), ["./run.sh"]);
        assert!(exec_candidates("", "/usr/bin").is_err());
        assert!(exec_candidates("a\0b", "/usr/bin").is_err());
    }

    #[test]
    fn descriptors_closed_around_the_kept_ones() {
        let max = libc::c_uint::MAX;
        assert_eq!(ranges_between(vec![]), [(3, max)]);
        assert_eq!(ranges_between(vec![3]), [(4, max)]);
        assert_eq!(ranges_between(vec![9, 5]), [(3, 4), (6, 8), (10, max)]);
        assert_eq!(ranges_between(vec![5, 6]), [(3, 4), (7, max)]);
    }

    #[test]
    fn not_a_helper_without_the_name() {
        // The test binary's arg0 is not the helper's.
        assert!(main_if_helper().is_none());
    }
}
