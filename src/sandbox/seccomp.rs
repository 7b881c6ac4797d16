//! The seccomp layer: a deny-list of the system calls generated code has no business making,
//! compiled with `seccompiler` for the architecture this binary was built for. A system call
//! from another architecture (32-bit x86 through `int 0x80`, say) kills the process: each
//! filter starts with `seccompiler`'s architecture check.
//!
//! `seccompiler` gives a filter one action for its matches, so the deny-list is three filters
//! stacked (the kernel runs them all and keeps the strictest answer; each one allows what it
//! does not name, so for a given call at most one of them objects):
//! - `EPERM`: io_uring, ptrace and `process_vm_*`, bpf, perf_event_open, the key calls,
//!   userfaultfd, the mount family, kexec and module calls, unshare, setns, `clone` with any
//!   `CLONE_NEW*` flag, `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` compared on the low 32 bits
//!   (the kernel ignores the high ones), chroot, reboot, swap, clock setting, acct, quotas,
//!   file handles, `personality` other than the harmless values, and a few legacy calls;
//! - `ENOSYS`: `clone3`, whose flags live in memory a filter cannot read, so libc falls back to
//!   `clone`, whose flags it can;
//! - `EAFNOSUPPORT`: `socket` and `socketpair` with any domain but `AF_UNIX` (or every domain,
//!   when no mount namespace hides the host's unix sockets); with a network grant, `socket`
//!   also allows `AF_INET` stream sockets of plain TCP (the proxy is reached on the sandbox's
//!   loopback) — never UDP, raw or packet sockets, IPv6, or MPTCP.
//!
//! On x86_64 a fourth, four-instruction filter kills x32 system calls (numbers with bit 30
//! set): they share x86_64's audit architecture, `seccompiler` does not handle them
//! (rust-vmm/rust-vmm#93), and a deny-list keyed on x86_64 numbers would not see them.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The `CLONE_NEW*` flags `clone`'s first argument may carry (`CLONE_NEWTIME` shares its bit
/// with the exit signal in `clone`, so only `clone3` and `unshare` can pass it).
const CLONE_NEW_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// `personality` values that change nothing dangerous: query, Linux, 32-bit uname, and
/// `UNAME26`. Anything else (`ADDR_NO_RANDOMIZE`, `READ_IMPLIES_EXEC`, …) weakens the process.
const PERSONALITY_ALLOWED: [u64; 5] = [0, 0x0008, 0x0002_0000, 0x0002_0008, 0xffff_ffff];

/// System calls refused with `EPERM` whatever their arguments.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn denied() -> Vec<libc::c_long> {
    let mut calls = vec![
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_userfaultfd,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_chroot,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_quotactl_fd,
        libc::SYS_name_to_handle_at,
        libc::SYS_open_by_handle_at,
        libc::SYS_lookup_dcookie,
        libc::SYS_syslog,
        libc::SYS_vhangup,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_uselib]);
    calls
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn denied() -> Vec<libc::c_long> {
    Vec::new()
}

/// Which sockets the command may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// None at all (no mount namespace hides the host's unix sockets).
    None,
    /// `AF_UNIX` only: the default.
    Unix,
    /// `AF_UNIX`, and `AF_INET` TCP stream sockets: a run with a network grant, whose only
    /// reachable TCP port is the proxy's on the sandbox's own loopback.
    UnixAndTcp,
}

/// Builds the filters for this architecture, in the order they are installed.
pub(crate) fn filters(sockets: Sockets) -> Result<Vec<BpfProgram>, String> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return Err(format!(
            "no seccomp deny-list for {}: toolsmith's filters cover x86_64 and aarch64",
            std::env::consts::ARCH
        ));
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let cond = |arg, op, value| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
    };
    let rule = |conditions| SeccompRule::new(conditions).map_err(|e| e.to_string());

    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> =
        denied().into_iter().map(|nr| (nr, Vec::new())).collect();
    let clone_rules = CLONE_NEW_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag.unsigned_abs());
            rule(vec![cond(0, SeccompCmpOp::MaskedEq(flag), flag)?])
        })
        .collect::<Result<_, _>>()?;
    eperm.insert(libc::SYS_clone, clone_rules);
    // Dword comparisons load only the low 32 bits: `TIOCSTI | 1 << 32` is still TIOCSTI to the
    // kernel, whose ioctl command is an unsigned int.
    let ioctl_rules = [libc::TIOCSTI, libc::TIOCLINUX]
        .into_iter()
        .map(|request| rule(vec![cond(1, SeccompCmpOp::Eq, request)?]))
        .collect::<Result<_, _>>()?;
    eperm.insert(libc::SYS_ioctl, ioctl_rules);
    let personality = PERSONALITY_ALLOWED
        .iter()
        .map(|&value| cond(0, SeccompCmpOp::Ne, value))
        .collect::<Result<_, _>>()?;
    eperm.insert(libc::SYS_personality, vec![rule(personality)?]);

    let enosys = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);

    let unix = u64::from(libc::AF_UNIX.unsigned_abs());
    let inet = u64::from(libc::AF_INET.unsigned_abs());
    let only_unix = || -> Result<Vec<SeccompRule>, String> {
        Ok(vec![rule(vec![cond(0, SeccompCmpOp::Ne, unix)?])?])
    };
    let socket_rules = match sockets {
        Sockets::None => Vec::new(),
        Sockets::Unix => only_unix()?,
        Sockets::UnixAndTcp => {
            // Denied: a domain neither unix nor inet; inet of any type but SOCK_STREAM (the
            // type's low four bits; the high ones are SOCK_NONBLOCK and SOCK_CLOEXEC); inet
            // stream of a protocol other than 0 or IPPROTO_TCP.
            let mut rules = vec![rule(vec![
                cond(0, SeccompCmpOp::Ne, unix)?,
                cond(0, SeccompCmpOp::Ne, inet)?,
            ])?];
            let stream = u64::from(libc::SOCK_STREAM.unsigned_abs());
            for kind in (0..16u64).filter(|k| *k != stream) {
                rules.push(rule(vec![
                    cond(0, SeccompCmpOp::Eq, inet)?,
                    cond(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
                ])?);
            }
            rules.push(rule(vec![
                cond(0, SeccompCmpOp::Eq, inet)?,
                cond(2, SeccompCmpOp::Ne, 0)?,
                cond(
                    2,
                    SeccompCmpOp::Ne,
                    u64::from(libc::IPPROTO_TCP.unsigned_abs()),
                )?,
            ])?);
            rules
        }
    };
    let pair_rules = match sockets {
        Sockets::None => Vec::new(),
        Sockets::Unix | Sockets::UnixAndTcp => only_unix()?,
    };
    let sockets = BTreeMap::from([
        (libc::SYS_socket, socket_rules),
        (libc::SYS_socketpair, pair_rules),
    ]);

    let errno = |e: libc::c_int| SeccompAction::Errno(e.unsigned_abs());
    let mut programs = Vec::new();
    for (rules, action) in [
        (eperm, errno(libc::EPERM)),
        (enosys, errno(libc::ENOSYS)),
        (sockets, errno(libc::EAFNOSUPPORT)),
    ] {
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
            .map_err(|e| e.to_string())?;
        programs.push(BpfProgram::try_from(filter).map_err(|e| e.to_string())?);
    }
    if cfg!(target_arch = "x86_64") {
        programs.push(x32_guard());
    }
    Ok(programs)
}

/// The filters as they travel in the helper's request: each instruction packed into a `u64`
/// (`code` in the top 16 bits, then `jt`, `jf`, and `k` in the low 32). Built once per process
/// and per kind (compiling them costs more than installing them), by the parent, which sends
/// them with every run.
pub(crate) fn packed(sockets: Sockets) -> Result<Vec<Vec<u64>>, String> {
    static PACKED: [std::sync::OnceLock<Result<Vec<Vec<u64>>, String>>; 3] = [
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
    ];
    let kind = match sockets {
        Sockets::None => 0,
        Sockets::Unix => 1,
        Sockets::UnixAndTcp => 2,
    };
    PACKED[kind]
        .get_or_init(|| {
            let pack = |i: &seccompiler::sock_filter| {
                u64::from(i.code) << 48
                    | u64::from(i.jt) << 40
                    | u64::from(i.jf) << 32
                    | u64::from(i.k)
            };
            filters(sockets).map(|programs| {
                programs
                    .iter()
                    .map(|p| p.iter().map(pack).collect())
                    .collect()
            })
        })
        .clone()
}

/// The filters [`packed`] made.
pub(crate) fn unpacked(programs: &[Vec<u64>]) -> Vec<BpfProgram> {
    let unpack = |i: &u64| seccompiler::sock_filter {
        code: (i >> 48) as u16,
        jt: (i >> 40) as u8,
        jf: (i >> 32) as u8,
        k: *i as u32,
    };
    programs
        .iter()
        .map(|p| p.iter().map(unpack).collect())
        .collect()
}

/// Kills a process making an x32 system call: load the number, compare with bit 30, kill or
/// allow. Only installed on x86_64, after filters whose architecture check ran first.
fn x32_guard() -> BpfProgram {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let op = |code: u32| u16::try_from(code).unwrap_or(u16::MAX);
    let stmt = |code, k| seccompiler::sock_filter {
        code: op(code),
        jt: 0,
        jf: 0,
        k,
    };
    vec![
        // seccomp_data.nr is at offset 0.
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        seccompiler::sock_filter {
            code: op(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K),
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Installs the filters on the calling thread (the helper is single-threaded). Sets
/// no_new_privs, which the kernel requires of an unprivileged filter.
pub(crate) fn install(programs: &[BpfProgram]) -> Result<(), String> {
    for program in programs {
        seccompiler::apply_filter(program).map_err(|e| e.to_string())?;
    }
    Ok(())
}

// Two attributes, not `cfg(all(test, …))`: clippy only sees a plain `cfg(test)` as test code.
#[cfg(test)]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod tests {
    use super::*;
    use nix::sys::wait::{WaitStatus, waitpid};
    use nix::unistd::{ForkResult, fork};

    #[test]
    fn filters_travel_packed_unchanged() {
        for sockets in [Sockets::Unix, Sockets::None, Sockets::UnixAndTcp] {
            let programs = filters(sockets).expect("filters build");
            let packed = packed(sockets).expect("packed");
            let back = unpacked(&packed);
            assert_eq!(back.len(), programs.len());
            for (a, b) in back.iter().zip(&programs) {
                assert_eq!(a.len(), b.len());
                for (x, y) in a.iter().zip(b) {
                    assert_eq!((x.code, x.jt, x.jf, x.k), (y.code, y.jt, y.jf, y.k));
                }
            }
        }
    }

    #[test]
    fn filters_build_for_this_architecture() {
        for sockets in [Sockets::Unix, Sockets::None, Sockets::UnixAndTcp] {
            let programs = filters(sockets).expect("filters build");
            let expected = if cfg!(target_arch = "x86_64") { 4 } else { 3 };
            assert_eq!(programs.len(), expected);
            for program in &programs[..3] {
                // seccompiler's preamble: load seccomp_data.arch, kill on a mismatch.
                assert_eq!(program[0].k, 4, "first instruction loads the architecture");
                assert_eq!(program[2].k, libc::SECCOMP_RET_KILL_PROCESS);
                assert!(program.len() < 4096);
            }
        }
        let narrow = filters(Sockets::Unix).expect("builds");
        let wide = filters(Sockets::None).expect("builds");
        assert!(
            narrow[2].len() > wide[2].len(),
            "the AF_UNIX exception costs instructions"
        );
    }

    /// Runs `probe` in a forked child under the filters and returns its exit code. The child
    /// only makes raw system calls, so forking the multi-threaded test process is sound.
    fn in_filtered_child(sockets: Sockets, probe: fn() -> i32) -> i32 {
        let programs = filters(sockets).expect("filters build");
        // SAFETY: the child installs prebuilt filters (no allocation: the programs are built),
        // makes raw system calls and `_exit`s.
        match unsafe { fork() }.expect("fork") {
            ForkResult::Child => {
                let code = match install(&programs) {
                    Ok(()) => probe(),
                    Err(_) => 100,
                };
                // SAFETY: `_exit` skips the parent's atexit handlers and buffers.
                unsafe { libc::_exit(code) }
            }
            ForkResult::Parent { child } => match waitpid(child, None).expect("waitpid") {
                WaitStatus::Exited(_, code) => code,
                other => panic!("child ended with {other:?}"),
            },
        }
    }

    fn errno() -> i32 {
        nix::errno::Errno::last_raw()
    }

    #[test]
    fn denied_calls_fail_with_their_errno() {
        // Each probe returns 0 when every expectation holds, else the number of the failed one.
        let code = in_filtered_child(Sockets::Unix, || {
            // SAFETY: raw system calls on plain arguments; failures only set errno.
            unsafe {
                if libc::unshare(libc::CLONE_NEWUSER) != -1 || errno() != libc::EPERM {
                    return 1;
                }
                let args = [0u64; 11];
                let r = libc::syscall(libc::SYS_clone3, args.as_ptr(), 88usize);
                if r != -1 || errno() != libc::ENOSYS {
                    return 2;
                }
                if libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) != -1
                    || errno() != libc::EAFNOSUPPORT
                {
                    return 3;
                }
                let unix = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                if unix < 0 {
                    return 4;
                }
                libc::close(unix);
                let high_bits = libc::TIOCSTI | (1 << 32);
                let r = libc::syscall(libc::SYS_ioctl, 0, high_bits, c"x".as_ptr());
                if r != -1 || errno() != libc::EPERM {
                    return 5;
                }
                if libc::personality(0x0040000) != -1 || errno() != libc::EPERM {
                    return 6;
                }
                if libc::personality(0xffff_ffff) == -1 {
                    return 7;
                }
                let r = libc::syscall(libc::SYS_clone, libc::CLONE_NEWNET | libc::SIGCHLD, 0);
                if r != -1 || errno() != libc::EPERM {
                    return 8;
                }
                if libc::syscall(libc::SYS_ptrace, libc::PTRACE_TRACEME, 0, 0, 0) != -1
                    || errno() != libc::EPERM
                {
                    return 9;
                }
            }
            0
        });
        assert_eq!(code, 0, "expectation {code} failed");
        let code = in_filtered_child(Sockets::None, || {
            // SAFETY: as above.
            let unix = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
            if unix == -1 && errno() == libc::EAFNOSUPPORT {
                0
            } else {
                1
            }
        });
        assert_eq!(code, 0, "every socket domain is denied");
    }

    #[test]
    fn a_network_grant_allows_tcp_sockets_and_nothing_else() {
        let code = in_filtered_child(Sockets::UnixAndTcp, || {
            let denied = |domain, kind, protocol| {
                // SAFETY: socket() on plain arguments; a success is closed at once.
                let fd = unsafe { libc::socket(domain, kind, protocol) };
                if fd >= 0 {
                    // SAFETY: closing the descriptor just made.
                    unsafe { libc::close(fd) };
                    return false;
                }
                errno() == libc::EAFNOSUPPORT
            };
            let cloexec = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
            if denied(libc::AF_INET, libc::SOCK_STREAM, 0)
                || denied(libc::AF_INET, cloexec, libc::IPPROTO_TCP)
                || denied(libc::AF_UNIX, libc::SOCK_DGRAM, 0)
            {
                return 1;
            }
            if !denied(libc::AF_INET, libc::SOCK_DGRAM, 0) {
                return 2;
            }
            if !denied(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) {
                return 3;
            }
            if !denied(libc::AF_INET6, libc::SOCK_STREAM, 0) {
                return 4;
            }
            if !denied(libc::AF_PACKET, libc::SOCK_RAW, 0) || !denied(libc::AF_NETLINK, 3, 0) {
                return 5;
            }
            if !denied(libc::AF_INET, libc::SOCK_STREAM, 262) {
                return 6;
            }
            0
        });
        assert_eq!(code, 0, "expectation {code} failed");
    }
}
