//! The sandbox profile a tool asks for: its access to the workspace, its resource limits, and
//! what of the host it may reach by grant (network hosts through the filtering proxy, host
//! sockets). The sandbox owns these types; the tool package's manifest (`package/manifest.rs`)
//! carries them, and the policy bounds them at run time (`grants.rs`).

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
            hosts: Vec::new(),
            host_sockets: Vec::new(),
            limits: Limits::default(),
        }
    }
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
