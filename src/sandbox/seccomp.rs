//! The seccomp layer: a deny-list of the system calls generated code has no business making,
//! as one classic BPF program for the architecture this binary was built for. A system call
//! from another architecture (32-bit x86 through `int 0x80`, say) kills the process, and so
//! does, on x86_64, an x32 system call (a number with bit 30 set: x32 shares x86_64's audit
//! architecture, and a deny-list keyed on x86_64 numbers would not see it).
//!
//! What the program answers:
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
//!   loopback) — never UDP, raw or packet sockets, IPv6, or MPTCP;
//! - `EPERM`, when the command sees the host's files (no mount namespace, [`Files::Host`]):
//!   every call that changes a file's mode, owner, times or extended attributes, and the
//!   `ioctl`s that set its flags. Landlock does not cover them, and without a view of read-only
//!   binds they reach every file the command can name: as root, the system's own (`chmod u+s`
//!   on a shell, a `chown` that clears a setuid bit), and anyone's read-only workspace.
//!
//! The program is assembled here rather than by `seccompiler`'s rule compiler, whose output
//! gives every system call five instructions and every answer a filter of its own: the four
//! filters it made (306 instructions for the `EPERM` one) cost 0.2 ms to install in every
//! run, since the kernel translates and JIT-compiles each one, and the command then paid all
//! four on each of its system calls. One program with a comparison per denied call is a
//! quarter of that size. `seccompiler` still installs it.

use seccompiler::BpfProgram;

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

/// The system calls that change a file's metadata without opening it for writing, refused
/// when the command sees the host's files ([`Files::Host`]).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn metadata_calls() -> Vec<libc::c_long> {
    // Numbers of the generic table, shared by both architectures, that libc does not name on
    // each of them: fchmodat2 (Linux 6.6), setxattrat and removexattrat (Linux 6.13).
    const SYS_FCHMODAT2: libc::c_long = 452;
    const SYS_SETXATTRAT: libc::c_long = 463;
    const SYS_REMOVEXATTRAT: libc::c_long = 466;
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        SYS_FCHMODAT2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_REMOVEXATTRAT,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    calls
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn metadata_calls() -> Vec<libc::c_long> {
    Vec::new()
}

/// `FS_IOC_SETFLAGS` (`chattr`), its 32-bit twin, and `FS_IOC_FSSETXATTR`: the `ioctl`s that
/// set a file's flags on a descriptor opened only for reading (`_IOW` numbers, the same on
/// x86_64 and aarch64).
const SET_FLAGS_IOCTLS: [u32; 3] = [0x4008_6602, 0x4004_6602, 0x401c_5820];

/// Which files the command sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Files {
    /// Its own view (a mount namespace): what it may not change is bound read-only.
    View,
    /// The host's, narrowed by Landlock alone, which does not cover metadata: the calls that
    /// change it are refused.
    Host,
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

/// `seccomp_data.arch` of this architecture (`AUDIT_ARCH_X86_64`, `AUDIT_ARCH_AARCH64`:
/// `EM_*` | 64-bit | little-endian).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: u32 = 0;

/// Offsets in `struct seccomp_data`: the call's number, its architecture, and the low 32 bits
/// of argument `n` (little-endian).
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_low(n: u32) -> u32 {
    16 + 8 * n
}

/// What the program answers, placed once each at its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Allow,
    Errno(libc::c_int),
    Kill,
}

impl Answer {
    fn ret(self) -> u32 {
        match self {
            Answer::Allow => libc::SECCOMP_RET_ALLOW,
            Answer::Errno(e) => libc::SECCOMP_RET_ERRNO | (e.unsigned_abs() & 0xffff),
            Answer::Kill => libc::SECCOMP_RET_KILL_PROCESS,
        }
    }
}

/// Where a conditional jump goes: on to the next instruction, over `n` instructions, or to an
/// answer.
#[derive(Debug, Clone, Copy)]
enum To {
    Next,
    Skip(usize),
    Answer(Answer),
}

/// One instruction before its jumps to answers are resolved.
#[derive(Debug, Clone, Copy)]
struct Insn {
    code: u32,
    k: u32,
    jt: To,
    jf: To,
}

fn load(offset: u32) -> Insn {
    Insn {
        code: libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
        k: offset,
        jt: To::Next,
        jf: To::Next,
    }
}

fn jump(op: u32, k: u32, jt: To, jf: To) -> Insn {
    Insn {
        code: libc::BPF_JMP | op | libc::BPF_K,
        k,
        jt,
        jf,
    }
}

fn answer(a: Answer) -> Insn {
    Insn {
        code: libc::BPF_RET | libc::BPF_K,
        k: a.ret(),
        jt: To::Next,
        jf: To::Next,
    }
}

/// `if A == k goto then`, else on.
fn when(k: u32, then: Answer) -> Insn {
    jump(libc::BPF_JEQ, k, To::Answer(then), To::Next)
}

/// Low 32 bits of a constant, as the program compares them.
fn low(v: impl TryInto<i64>) -> u32 {
    v.try_into().map_or(u32::MAX, |v: i64| v as u32)
}

/// Lays out `body` followed by the answers it jumps to, resolving every jump.
fn assemble(body: Vec<Insn>) -> Result<BpfProgram, String> {
    let answers = [
        Answer::Allow,
        Answer::Errno(libc::EPERM),
        Answer::Errno(libc::ENOSYS),
        Answer::Errno(libc::EAFNOSUPPORT),
        Answer::Kill,
    ];
    // The body falls through to the first answer, Allow.
    let at = |i: usize, to: To| -> Result<u8, String> {
        let offset = match to {
            To::Next => 0,
            To::Skip(n) => n,
            To::Answer(a) => {
                let slot = answers.iter().position(|x| *x == a).unwrap_or(0);
                body.len() + slot - (i + 1)
            }
        };
        u8::try_from(offset).map_err(|_| format!("seccomp jump of {offset} at {i}"))
    };
    let op = |code: u32| u16::try_from(code).map_err(|_| format!("BPF code {code:#x}"));
    let mut program = Vec::with_capacity(body.len() + answers.len());
    for (i, insn) in body.iter().enumerate() {
        program.push(seccompiler::sock_filter {
            code: op(insn.code)?,
            jt: at(i, insn.jt)?,
            jf: at(i, insn.jf)?,
            k: insn.k,
        });
    }
    for a in answers {
        program.push(seccompiler::sock_filter {
            code: op(libc::BPF_RET | libc::BPF_K)?,
            jt: 0,
            jf: 0,
            k: a.ret(),
        });
    }
    Ok(program)
}

/// `if nr == call { block }`: the block must end in an answer.
fn for_call(call: libc::c_long, block: Vec<Insn>, body: &mut Vec<Insn>) {
    body.push(jump(
        libc::BPF_JEQ,
        low(call),
        To::Next,
        To::Skip(block.len()),
    ));
    body.extend(block);
}

/// Builds the filter for this architecture, as the list of programs to install (one).
pub(crate) fn filters(sockets: Sockets, files: Files) -> Result<Vec<BpfProgram>, String> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return Err(format!(
            "no seccomp deny-list for {}: toolsmith's filters cover x86_64 and aarch64",
            std::env::consts::ARCH
        ));
    }
    let eperm = Answer::Errno(libc::EPERM);
    let eafnosupport = Answer::Errno(libc::EAFNOSUPPORT);
    let mut body = vec![
        load(ARCH),
        jump(
            libc::BPF_JEQ,
            AUDIT_ARCH,
            To::Next,
            To::Answer(Answer::Kill),
        ),
        load(NR),
    ];
    if cfg!(target_arch = "x86_64") {
        const X32_SYSCALL_BIT: u32 = 0x4000_0000;
        body.push(jump(
            libc::BPF_JGE,
            X32_SYSCALL_BIT,
            To::Answer(Answer::Kill),
            To::Next,
        ));
    }
    body.extend(denied().into_iter().map(|nr| when(low(nr), eperm)));
    if files == Files::Host {
        body.extend(metadata_calls().into_iter().map(|nr| when(low(nr), eperm)));
    }
    body.push(when(low(libc::SYS_clone3), Answer::Errno(libc::ENOSYS)));

    let mut clone = vec![load(arg_low(0))];
    clone.extend(
        CLONE_NEW_FLAGS
            .iter()
            .map(|&flag| jump(libc::BPF_JSET, low(flag), To::Answer(eperm), To::Next)),
    );
    clone.push(answer(Answer::Allow));
    for_call(libc::SYS_clone, clone, &mut body);

    let mut ioctl = vec![
        load(arg_low(1)),
        when(low(libc::TIOCSTI), eperm),
        when(low(libc::TIOCLINUX), eperm),
    ];
    if files == Files::Host {
        ioctl.extend(SET_FLAGS_IOCTLS.iter().map(|&request| when(request, eperm)));
    }
    ioctl.push(answer(Answer::Allow));
    for_call(libc::SYS_ioctl, ioctl, &mut body);

    let mut personality = vec![load(arg_low(0))];
    personality.extend(
        PERSONALITY_ALLOWED
            .iter()
            .map(|&v| when(low(v as i64), Answer::Allow)),
    );
    personality.push(answer(eperm));
    for_call(libc::SYS_personality, personality, &mut body);

    let unix_only = || {
        vec![
            load(arg_low(0)),
            when(low(libc::AF_UNIX), Answer::Allow),
            answer(eafnosupport),
        ]
    };
    let socket = match sockets {
        Sockets::None => vec![answer(eafnosupport)],
        Sockets::Unix => unix_only(),
        Sockets::UnixAndTcp => vec![
            load(arg_low(0)),
            when(low(libc::AF_UNIX), Answer::Allow),
            jump(
                libc::BPF_JEQ,
                low(libc::AF_INET),
                To::Next,
                To::Answer(eafnosupport),
            ),
            // The type's low four bits (flags like SOCK_CLOEXEC sit above them).
            load(arg_low(1)),
            Insn {
                code: libc::BPF_ALU | libc::BPF_AND | libc::BPF_K,
                k: 0xf,
                jt: To::Next,
                jf: To::Next,
            },
            jump(
                libc::BPF_JEQ,
                low(libc::SOCK_STREAM),
                To::Next,
                To::Answer(eafnosupport),
            ),
            load(arg_low(2)),
            when(0, Answer::Allow),
            when(low(libc::IPPROTO_TCP), Answer::Allow),
            answer(eafnosupport),
        ],
    };
    for_call(libc::SYS_socket, socket, &mut body);
    let socketpair = match sockets {
        Sockets::None => vec![answer(eafnosupport)],
        Sockets::Unix | Sockets::UnixAndTcp => unix_only(),
    };
    for_call(libc::SYS_socketpair, socketpair, &mut body);
    Ok(vec![assemble(body)?])
}

/// The filters as they travel in the helper's request: each instruction packed into a `u64`
/// (`code` in the top 16 bits, then `jt`, `jf`, and `k` in the low 32). Built once per process
/// and per kind (compiling them costs more than installing them), by the parent, which sends
/// them with every run.
pub(crate) fn packed(sockets: Sockets, files: Files) -> Result<Vec<Vec<u64>>, String> {
    static PACKED: [std::sync::OnceLock<Result<Vec<Vec<u64>>, String>>; 6] =
        [const { std::sync::OnceLock::new() }; 6];
    let kind = match sockets {
        Sockets::None => 0,
        Sockets::Unix => 1,
        Sockets::UnixAndTcp => 2,
    } + match files {
        Files::View => 0,
        Files::Host => 3,
    };
    PACKED[kind]
        .get_or_init(|| {
            let pack = |i: &seccompiler::sock_filter| {
                u64::from(i.code) << 48
                    | u64::from(i.jt) << 40
                    | u64::from(i.jf) << 32
                    | u64::from(i.k)
            };
            filters(sockets, files).map(|programs| {
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

    /// Every kind of filter a run may get.
    const KINDS: [(Sockets, Files); 6] = [
        (Sockets::Unix, Files::View),
        (Sockets::UnixAndTcp, Files::View),
        (Sockets::None, Files::Host),
        (Sockets::None, Files::View),
        (Sockets::Unix, Files::Host),
        (Sockets::UnixAndTcp, Files::Host),
    ];

    #[test]
    fn filters_travel_packed_unchanged() {
        for (sockets, files) in KINDS {
            let programs = filters(sockets, files).expect("filters build");
            let packed = packed(sockets, files).expect("packed");
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
    fn one_short_program_checks_the_architecture_first() {
        for (sockets, files) in KINDS {
            let programs = filters(sockets, files).expect("filters build");
            assert_eq!(programs.len(), 1);
            let program = &programs[0];
            assert_eq!(
                program[0].k, ARCH,
                "first instruction loads the architecture"
            );
            assert_eq!(program[1].k, AUDIT_ARCH);
            // seccompiler's four filters held 339 instructions and more; the kernel translates
            // and JIT-compiles every one of them in every run. Only a run on the host's files
            // pays one more comparison per metadata call and flags ioctl.
            let bound = match files {
                Files::View => 100,
                Files::Host => 100 + metadata_calls().len() + SET_FLAGS_IOCTLS.len(),
            };
            assert!(program.len() < bound, "{} instructions", program.len());
        }
        let narrow = filters(Sockets::Unix, Files::View).expect("builds");
        let wide = filters(Sockets::None, Files::View).expect("builds");
        assert!(
            narrow[0].len() > wide[0].len(),
            "the AF_UNIX exception costs instructions"
        );
    }

    #[test]
    fn every_denied_call_fails_with_eperm_before_it_runs() {
        let programs = filters(Sockets::Unix, Files::View).expect("filters build");
        let calls = denied();
        // SAFETY: the child installs prebuilt filters, makes raw system calls on the list built
        // before the fork (no allocation) and `_exit`s. It leaves the session first, so that a
        // `vhangup` let through would hang up no terminal of ours.
        match unsafe { fork() }.expect("fork") {
            ForkResult::Child => {
                let _ = nix::unistd::setsid();
                let code = match install(&programs) {
                    Ok(()) => calls
                        .iter()
                        .position(|&nr| {
                            // SAFETY: a denied call never runs; null arguments besides.
                            let r = unsafe { libc::syscall(nr, 0, 0, 0, 0, 0, 0) };
                            r != -1 || errno() != libc::EPERM
                        })
                        .map_or(0, |i| i32::try_from(i + 1).unwrap_or(255)),
                    Err(_) => 255,
                };
                // SAFETY: `_exit` skips the parent's atexit handlers and buffers.
                unsafe { libc::_exit(code) }
            }
            ForkResult::Parent { child } => match waitpid(child, None).expect("waitpid") {
                WaitStatus::Exited(_, 0) => {}
                WaitStatus::Exited(_, code) => {
                    let nr = calls.get((code - 1) as usize);
                    panic!("system call {nr:?} was not refused with EPERM (exit {code})");
                }
                other => panic!("child ended with {other:?}"),
            },
        }
    }

    /// Runs `probe` in a forked child under the filters and returns its exit code. The child
    /// only makes raw system calls, so forking the multi-threaded test process is sound.
    fn in_filtered_child(sockets: Sockets, files: Files, probe: fn() -> i32) -> i32 {
        let programs = filters(sockets, files).expect("filters build");
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
        let code = in_filtered_child(Sockets::Unix, Files::View, || {
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
        let code = in_filtered_child(Sockets::None, Files::Host, || {
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
        let code = in_filtered_child(Sockets::UnixAndTcp, Files::View, || {
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

    #[test]
    fn the_hosts_files_keep_their_metadata() {
        // Every call with -1 for each argument: one the filter let through would fail on the
        // bad descriptor or address, never with EPERM, and change nothing.
        let code = in_filtered_child(Sockets::None, Files::Host, || {
            let calls = metadata_calls();
            let refused = |nr: libc::c_long| {
                // SAFETY: a refused call never runs; a call let through fails on -1.
                let r = unsafe { libc::syscall(nr, -1, -1, -1, -1, -1, -1) };
                r == -1 && errno() == libc::EPERM
            };
            if let Some(i) = calls.iter().position(|&nr| !refused(nr)) {
                return i32::try_from(i + 1).unwrap_or(99);
            }
            for (i, request) in SET_FLAGS_IOCTLS.into_iter().enumerate() {
                // SAFETY: as above; the descriptor -1 fails if the call runs.
                let r = unsafe { libc::syscall(libc::SYS_ioctl, -1, request, -1) };
                if r != -1 || errno() != libc::EPERM {
                    return 50 + i32::try_from(i).unwrap_or(0);
                }
            }
            0
        });
        assert_eq!(code, 0, "metadata call {code} was not refused with EPERM");
        // The control: with a view, the same call reaches the kernel (which refuses -1).
        let code = in_filtered_child(Sockets::Unix, Files::View, || {
            // SAFETY: fchmod on descriptor -1 changes nothing.
            let r = unsafe { libc::fchmod(-1, 0o600) };
            if r == -1 && errno() == libc::EBADF {
                0
            } else {
                1
            }
        });
        assert_eq!(code, 0, "fchmod is refused with a view too");
    }
}
