//! The sandbox profile a tool asks for: its access to the workspace and its resource limits.
//! The sandbox owns these types; the tool package's manifest (`package/manifest.rs`)
//! carries them, and the policy bounds them at run time.

use std::fmt;

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
    /// Always false: tools never get the network. Present so a manifest says so explicitly.
    #[serde(default)]
    pub network: bool,
    /// Resource limits.
    #[serde(default)]
    pub limits: Limits,
}

impl Default for SandboxProfile {
    fn default() -> Self {
        SandboxProfile {
            workspace: WorkspaceAccess::None,
            network: false,
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
