//! The Landlock layer: filesystem rights on the paths the command sees, TCP bind and connect
//! denied (ABI 4+; connect allowed to the proxy's port alone with a network grant), abstract unix sockets and signals scoped to the sandbox (ABI 6+).
//!
//! The ruleset asks for everything the running kernel's ABI can restrict, so the kernel
//! enforces it fully or the run fails (unless the policy accepts a partial ruleset). The crate
//! prefers a fixed, tested ABI; this layer deliberately follows the kernel instead, because the
//! issue's contract is "the highest ABI available, fully enforced", and every ABI only adds
//! restrictions.

use std::path::PathBuf;

use landlock::{
    ABI, Access as _, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use serde::{Deserialize, Serialize};

use super::Enforcement;

/// What the command may do beneath a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Access {
    /// List directories only (the root of the view, so `ls /` works).
    List,
    /// Read, list and execute: system directories, the tool's files, a read-only workspace.
    ReadExec,
    /// Read and list, no execution: `/proc`.
    Read,
    /// Everything but creating device nodes: the work directory, `/tmp`, a writable workspace.
    Write,
    /// Read, write and ioctl of a device: `/dev/null`, `/dev/zero`, `/dev/full`.
    Device,
    /// Read and ioctl of a device: `/dev/random`, `/dev/urandom`.
    DeviceRead,
}

/// One rule: `access` beneath `path` (a directory's hierarchy, or one file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Rule {
    /// The path, as the command sees it.
    pub path: PathBuf,
    /// What is allowed there.
    pub access: Access,
}

impl Rule {
    pub(crate) fn new(path: impl Into<PathBuf>, access: Access) -> Self {
        Rule {
            path: path.into(),
            access,
        }
    }
}

/// The filesystem rights of `access` under `abi`, for a directory or a file.
pub(crate) fn rights(access: Access, abi: ABI, is_dir: bool) -> BitFlags<AccessFs> {
    let all = AccessFs::from_all(abi);
    let wanted = match access {
        Access::List => BitFlags::from(AccessFs::ReadDir),
        Access::ReadExec => AccessFs::from_read(abi),
        Access::Read => AccessFs::ReadFile | AccessFs::ReadDir,
        Access::Write => all & !(AccessFs::MakeChar | AccessFs::MakeBlock),
        Access::Device => AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev,
        Access::DeviceRead => AccessFs::ReadFile | AccessFs::IoctlDev,
    };
    // A right the ABI does not know, or a directory right on a file, would make the kernel
    // refuse the rule or the crate report a partial ruleset.
    let wanted = wanted & all;
    if is_dir {
        wanted
    } else {
        wanted & AccessFs::from_file(abi)
    }
}

/// Applies the ruleset to this process (and, through `execve`, to the command). Sets
/// no_new_privs first, as the kernel requires of a process without `CAP_SYS_ADMIN`.
/// `connect_ports` are the TCP ports the command may connect to (the proxy's, with a network
/// grant; ABI 4+); every other TCP bind and connect is denied.
pub(crate) fn restrict(
    rules: &[Rule],
    connect_ports: &[u16],
    kernel_abi: u32,
    allow_partial: bool,
) -> Result<(Enforcement, Option<u32>), String> {
    if kernel_abi == 0 {
        return Ok((Enforcement::None, None));
    }
    let abi = ABI::from(i32::try_from(kernel_abi).unwrap_or(i32::MAX));
    let fs = AccessFs::from_all(abi);
    let err = |what: &str, e: landlock::RulesetError| format!("{what}: {e}");
    let mut ruleset = Ruleset::default()
        .handle_access(fs)
        .map_err(|e| err("handling filesystem rights", e))?;
    if abi >= ABI::V4 {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| err("handling TCP rights", e))?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| err("scoping abstract unix sockets and signals", e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| err("creating the ruleset", e))?;
    for rule in rules {
        let fd = PathFd::new(&rule.path)
            .map_err(|e| format!("opening {} for a rule: {e}", rule.path.display()))?;
        let is_dir = std::fs::metadata(&rule.path).is_ok_and(|m| m.is_dir());
        let access = rights(rule.access, abi, is_dir);
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| err(&format!("adding the rule for {}", rule.path.display()), e))?;
    }
    if abi >= ABI::V4 {
        for &port in connect_ports {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(|e| err(&format!("adding the rule for TCP port {port}"), e))?;
        }
    }
    let status = created
        .restrict_self()
        .map_err(|e| err("restricting the process", e))?;
    // The crate's ABI may be older than the kernel's: report the one really used.
    let version = abi.to_string().parse().ok();
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok((Enforcement::Full, version)),
        RulesetStatus::PartiallyEnforced if allow_partial => Ok((Enforcement::Partial, version)),
        RulesetStatus::PartiallyEnforced => Err(format!(
            "the kernel (Landlock ABI {kernel_abi}) enforces the ruleset only partially; set \
             `allow_partial_landlock = true` in the policy's [sandbox] table to accept that"
        )),
        RulesetStatus::NotEnforced => Ok((Enforcement::None, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_follow_the_abi_and_the_file_kind() {
        let rw = rights(Access::Write, ABI::V7, true);
        assert!(rw.contains(AccessFs::WriteFile | AccessFs::Refer | AccessFs::Truncate));
        assert!(!rw.intersects(AccessFs::MakeChar | AccessFs::MakeBlock));
        assert!(!rights(Access::Write, ABI::V1, true).contains(AccessFs::Refer));
        let ro = rights(Access::ReadExec, ABI::V7, true);
        assert_eq!(
            ro,
            AccessFs::Execute | AccessFs::ReadFile | AccessFs::ReadDir
        );
        let dev = rights(Access::Device, ABI::V7, false);
        assert_eq!(
            dev,
            AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev
        );
        assert_eq!(
            rights(Access::Device, ABI::V4, false),
            AccessFs::ReadFile | AccessFs::WriteFile,
            "ioctl rights arrive with ABI 5"
        );
        assert!(!rights(Access::ReadExec, ABI::V7, false).contains(AccessFs::ReadDir));
        assert!(!rights(Access::Read, ABI::V7, true).contains(AccessFs::Execute));
    }
}
