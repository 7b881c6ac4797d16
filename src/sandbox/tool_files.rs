//! A tool's files carried to the helper by value: the helper writes them into the run's own
//! root tmpfs at `/tool` inside its private mount namespace, and the root is made read-only
//! before anything of the command runs. Nothing on the host is shown, so no other process can
//! change what the run executes between the check of the files and their use.

use serde::{Deserialize, Serialize};

use super::SandboxError;

/// Largest total size of a tool's files, in bytes: a generated tool is a few KiB; the cap
/// keeps the request (and the run's root tmpfs) small.
pub const MAX_TOOL_BYTES: usize = 2 << 20;

/// Most files a tool may have.
pub const MAX_TOOL_FILES: usize = 512;

/// One file of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFile {
    /// Its path inside the tool directory (`/`-separated, relative, no `.` or `..` part).
    pub path: String,
    /// Whether it is executable (git's mode 100755), else 100644.
    pub executable: bool,
    /// Its contents.
    pub contents: String,
}

/// A tool's files, shown read-only at [`super::TOOL_DIR`] (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFiles {
    files: Vec<ToolFile>,
    bytes: usize,
}

impl ToolFiles {
    /// No files yet.
    pub fn new() -> Self {
        ToolFiles::default()
    }

    /// Adds a file; a path that is not a plain relative one, or a tool over
    /// [`MAX_TOOL_BYTES`] or [`MAX_TOOL_FILES`], is refused, saying which.
    pub fn add(
        &mut self,
        path: &str,
        executable: bool,
        contents: String,
    ) -> Result<(), SandboxError> {
        check_path(path).map_err(SandboxError::Invalid)?;
        if self.files.len() >= MAX_TOOL_FILES {
            return Err(SandboxError::Invalid(format!(
                "the tool has more than {MAX_TOOL_FILES} files, more than a run shows"
            )));
        }
        let bytes = self.bytes.saturating_add(contents.len());
        if bytes > MAX_TOOL_BYTES {
            return Err(SandboxError::Invalid(format!(
                "the tool's files are over {} KiB (at {path}), more than a run shows: keep \
                 data out of the tool's directory",
                MAX_TOOL_BYTES / 1024
            )));
        }
        self.bytes = bytes;
        self.files.push(ToolFile {
            path: path.to_owned(),
            executable,
            contents,
        });
        Ok(())
    }

    /// The files, in the order they were added.
    pub fn files(&self) -> &[ToolFile] {
        &self.files
    }

    /// Their total size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes of tmpfs the files take: whole pages each, and one page per directory.
    pub(crate) fn tmpfs_bytes(&self) -> usize {
        const PAGE: usize = 4096;
        self.files
            .iter()
            .map(|f| f.contents.len().div_ceil(PAGE).max(1) * PAGE + PAGE)
            .sum()
    }
}

/// Why `path` is not a plain relative path of a tool's file.
pub(crate) fn check_path(path: &str) -> Result<(), String> {
    let plain = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\0')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if plain {
        Ok(())
    } else {
        Err(format!(
            "the tool file path {path:?} is not a plain relative path"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_and_size_is_bounded() {
        let mut files = ToolFiles::new();
        files
            .add("run.sh", true, "#!/bin/sh\n".into())
            .expect("a plain file");
        files
            .add("tests/cases.json", false, "[]".into())
            .expect("a nested file");
        for bad in ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\0b"] {
            let err = files.add(bad, false, String::new()).expect_err(bad);
            assert!(
                err.to_string().contains("not a plain relative path"),
                "{err}"
            );
        }
        let err = files
            .add("big", false, "x".repeat(MAX_TOOL_BYTES))
            .expect_err("too big");
        assert!(err.to_string().contains("over 2048 KiB (at big)"), "{err}");
        assert_eq!(files.files().len(), 2);
        assert_eq!(files.bytes(), 12);
    }
}
