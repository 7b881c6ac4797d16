//! The sandbox profile a tool asks for: its access to the workspace, the user's toolchains it
//! needs, its resource limits, and what of the host it may reach by grant (network hosts through
//! the filtering proxy, host sockets). The sandbox owns these types; the tool package's manifest
//! (`package/manifest.rs`) carries them, and the policy bounds them at run time (`grants.rs`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Access a tool gets to the directory it is run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceAccess {
    /// No access.
    #[default]
    None,
    /// Read-only.
    Read,
    /// Read and write.
    Write,
}

impl fmt::Display for WorkspaceAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkspaceAccess::None => "none",
            WorkspaceAccess::Read => "read",
            WorkspaceAccess::Write => "write",
        })
    }
}

/// The sandbox profile a tool asks for (bounded at run time by the policy's maxima).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxProfile {
    /// Access to the workspace.
    #[serde(default)]
    pub workspace: WorkspaceAccess,
    /// Always false: tools never get direct network access. Present so a manifest says so
    /// explicitly; what a tool may reach goes through the proxy (`hosts`).
    #[serde(default)]
    pub network: bool,
    /// The user's toolchains the tool's programs come from, bound read-only at their own
    /// paths. Derived from where the programs resolve and the policy's `[grants]`, never
    /// written by a model; omitted when empty, so a manifest without them (and its digest) is
    /// what it was before toolchains existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub toolchains: Vec<Toolchain>,
    /// `host:port` pairs the filtering proxy admits for this tool (empty: no proxy, no
    /// network at all). Derived from the evidence and the policy's `[grants] hosts`, never
    /// written by a model; omitted from the YAML when empty, so older manifests and their
    /// digests are unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Host sockets (absolute paths) bound into the sandbox, each named by the policy's
    /// `[grants] host_sockets`. A container engine's socket gives root-equivalent power over
    /// the host. Omitted from the YAML when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_sockets: Vec<PathBuf>,
    /// Resource limits.
    #[serde(default)]
    pub limits: Limits,
}

impl Default for SandboxProfile {
    fn default() -> Self {
        SandboxProfile {
            workspace: WorkspaceAccess::None,
            network: false,
            toolchains: Vec::new(),
            hosts: Vec::new(),
            host_sockets: Vec::new(),
            limits: Limits::default(),
        }
    }
}

/// The kinds of toolchain a user installs under a home directory, as the policy's `[grants]
/// toolchains` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolchainKind {
    /// rustup's toolchains and cargo's `bin` (`~/.rustup`, `~/.cargo`).
    Rustup,
    /// A pyenv Python version (`~/.pyenv/versions/<v>`).
    Pyenv,
    /// A Python virtual environment (a directory with `pyvenv.cfg`) and its base Python.
    Venv,
    /// An nvm Node.js version (`~/.nvm/versions/node/<v>`).
    Nvm,
    /// A program in `~/.local/bin` (pip's `--user` and pipx's programs).
    LocalBin,
}

impl ToolchainKind {
    /// Every kind, in the order the policy lists them.
    pub const ALL: [ToolchainKind; 5] = [
        ToolchainKind::Rustup,
        ToolchainKind::Pyenv,
        ToolchainKind::Venv,
        ToolchainKind::Nvm,
        ToolchainKind::LocalBin,
    ];

    /// The name written in manifests and the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolchainKind::Rustup => "rustup",
            ToolchainKind::Pyenv => "pyenv",
            ToolchainKind::Venv => "venv",
            ToolchainKind::Nvm => "nvm",
            ToolchainKind::LocalBin => "local-bin",
        }
    }

    /// The kind named `name` in a policy.
    pub fn from_name(name: &str) -> Option<ToolchainKind> {
        ToolchainKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for ToolchainKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One toolchain a tool needs: the program that resolved into it, its kind, the host paths
/// bound read-only (at the same paths, Landlock read and execute on exactly them; their `bin`
/// directories, in this order, go first on the sandbox's `PATH`), and the environment the
/// toolchain needs inside the sandbox (its caches pointed at the run's work directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// The program of `runtime.requires` that resolves into it.
    pub program: String,
    /// What kind of toolchain it is (what the policy grants).
    pub kind: ToolchainKind,
    /// Host paths bound read-only, in `PATH` order.
    pub paths: Vec<PathBuf>,
    /// Variables set in the command's environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// Resource limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock time, seconds.
    pub wall_s: u32,
    /// CPU time, seconds.
    pub cpu_s: u32,
    /// Memory, MiB.
    pub memory_mb: u32,
    /// Processes and threads.
    pub pids: u32,
    /// Captured stdout and stderr, KiB each.
    pub output_kb: u32,
    /// Largest file written, MiB.
    pub file_size_mb: u32,
    /// Open files.
    pub open_files: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_s: 60,
            cpu_s: 60,
            memory_mb: 512,
            pids: 128,
            output_kb: 1024,
            file_size_mb: 256,
            open_files: 256,
        }
    }
}

impl Limits {
    /// Each limit, with its key and the largest value a manifest may ask for.
    pub fn bounds(&self) -> [(&'static str, u32, u32); 7] {
        [
            ("wall_s", self.wall_s, 24 * 3600),
            ("cpu_s", self.cpu_s, 24 * 3600),
            ("memory_mb", self.memory_mb, 64 * 1024),
            ("pids", self.pids, 4096),
            ("output_kb", self.output_kb, 64 * 1024),
            ("file_size_mb", self.file_size_mb, 64 * 1024),
            ("open_files", self.open_files, 65_536),
        ]
    }
}
