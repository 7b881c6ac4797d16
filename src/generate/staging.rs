//! The staging area: `<state>/staging/<candidate>/attempt-N/` holds each attempt's files and its
//! diagnostics, never overwritten, so that `toolsmith show <candidate> --attempts` can say what
//! changed from one attempt to the next and why.
//!
//! File names come from generators and models: each is checked to be a plain relative path
//! (no `..`, no absolute path, no hidden component) before anything is written, and files are
//! written with `create_new`, never through a symlink.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use crate::validate::report::Diagnostics;

/// Largest file written to staging.
pub const MAX_FILE_BYTES: usize = 512 * 1024;

/// The file beside an attempt's files that says how it went.
pub const DIAGNOSTICS_FILE: &str = "diagnostics.json";

/// The directory of an attempt's tool files, inside the attempt directory.
pub const TOOL_DIR: &str = "tool";

/// The candidate's spec, beside its attempts: what a resumed candidate is generated from.
pub const SPEC_FILE: &str = "spec.json";

/// A model's raw reply, beside an attempt's files.
pub const REPLY_FILE: &str = "reply.txt";

/// What a model was sent for an attempt (every message of the conversation) and what the answer
/// cost (tokens as the server counted them, whether the cache answered, seconds waited): the
/// attempt's trace, beside [`REPLY_FILE`].
pub const PROMPT_FILE: &str = "prompt.json";

/// The file whose lock a process holds while it works on the candidate (see [`Claim`]).
pub const OWNER_FILE: &str = "owner.lock";

/// A staging operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum StagingError {
    /// A file name that is not a plain relative path.
    #[error("refusing to stage `{name}`: {why}")]
    BadName {
        /// The name given.
        name: String,
        /// Why.
        why: &'static str,
    },
    /// A file over the size limit.
    #[error("refusing to stage `{name}`: {size} bytes, over the {MAX_FILE_BYTES} byte limit")]
    TooBig {
        /// The name.
        name: String,
        /// Its size.
        size: usize,
    },
    /// An I/O error.
    #[error("staging {path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StagingError + '_ {
    move |source| StagingError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Checks that `name` is a plain relative path.
pub fn check_name(name: &str) -> Result<(), StagingError> {
    let bad = |why| StagingError::BadName {
        name: name.to_owned(),
        why,
    };
    if name.is_empty() || name.len() > 200 {
        return Err(bad("empty or too long"));
    }
    if name.contains('\\') || name.contains('\0') {
        return Err(bad("contains a backslash or NUL"));
    }
    let path = Path::new(name);
    let mut parts = 0;
    for component in path.components() {
        match component {
            Component::Normal(part) => {
                let part = part.to_string_lossy();
                if part.starts_with('.') {
                    return Err(bad("has a hidden component"));
                }
                if !part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                {
                    return Err(bad(
                        "has characters other than letters, digits, `.`, `_`, `-`",
                    ));
                }
                parts += 1;
            }
            _ => return Err(bad("is not a plain relative path")),
        }
    }
    if parts == 0 || parts > 4 {
        return Err(bad("is too deep"));
    }
    Ok(())
}

/// A candidate claimed by this process: an open-file-description (OFD) write lock on the
/// candidate's [`OWNER_FILE`], held for as long as the candidate is generated and validated.
///
/// The kernel drops the lock however the process ends (SIGKILL included), so a candidate left
/// `generating` or `validating` whose lock nobody holds was interrupted and may be resumed, and
/// one whose lock is held belongs to a live process and is never taken from it — whoever
/// worked on it (the daemon or a one-shot `toolsmith new`). OFD locks rather than `flock` so
/// that [`Staging::claimed`] can ask without taking the lock (`F_OFD_GETLK`): a look never
/// gets in a worker's way. The file is opened close-on-exec, so no child keeps the lock alive.
#[derive(Debug)]
pub struct Claim {
    _file: std::fs::File,
}

/// The whole-file write lock request for `fcntl`.
fn whole_file(kind: libc::c_int) -> libc::flock {
    libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// A candidate's staging directory.
#[derive(Debug, Clone)]
pub struct Staging {
    dir: PathBuf,
}

impl Staging {
    /// The staging directory of `candidate` under the state directory.
    pub fn new(state_dir: &Path, candidate: &str) -> Self {
        Staging {
            dir: state_dir.join("staging").join(candidate),
        }
    }

    /// The candidate's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Claims the candidate for this process; `None` when a live process holds it already.
    pub fn try_claim(&self) -> Result<Option<Claim>, StagingError> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let path = self.dir.join(OWNER_FILE);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(io(&path))?;
        let lock = whole_file(libc::F_WRLCK);
        match nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_OFD_SETLK(&lock)) {
            Ok(_) => Ok(Some(Claim { _file: file })),
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EACCES) => Ok(None),
            Err(errno) => Err(io(&path)(errno.into())),
        }
    }

    /// Whether a live process holds the candidate's claim. Looks without taking the lock.
    /// When the lock cannot be asked about (an unreadable file), says it is held: a candidate
    /// is never called interrupted on a guess.
    pub fn claimed(&self) -> bool {
        let path = self.dir.join(OWNER_FILE);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            // Never claimed (or its staging is gone): nobody works on it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
            Err(_) => return true,
        };
        let mut lock = whole_file(libc::F_WRLCK);
        match nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_OFD_GETLK(&mut lock)) {
            Ok(_) => lock.l_type != libc::F_UNLCK as libc::c_short,
            Err(_) => true,
        }
    }

    /// The numbers of the attempts made, in order.
    pub fn attempts(&self) -> Vec<u32> {
        let mut found: Vec<u32> = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()?
                            .strip_prefix("attempt-")?
                            .parse()
                            .ok()
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort_unstable();
        found
    }

    /// The directory of attempt `n`.
    pub fn attempt_dir(&self, n: u32) -> PathBuf {
        self.dir.join(format!("attempt-{n}"))
    }

    /// The directory of attempt `n`'s tool files.
    pub fn tool_dir(&self, n: u32) -> PathBuf {
        self.attempt_dir(n).join(TOOL_DIR)
    }

    /// Creates the next attempt's directory (never one that exists) and writes `files` into
    /// its tool directory. Returns the attempt's number.
    pub fn new_attempt(&self, files: &BTreeMap<String, String>) -> Result<u32, StagingError> {
        for (name, content) in files {
            check_name(name)?;
            if content.len() > MAX_FILE_BYTES {
                return Err(StagingError::TooBig {
                    name: name.clone(),
                    size: content.len(),
                });
            }
        }
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let mut n = self.attempts().last().copied().unwrap_or(0) + 1;
        // `create_dir` fails if it exists: a concurrent or earlier attempt is never overwritten.
        let dir = loop {
            let dir = self.attempt_dir(n);
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(io(&dir)(e)),
            }
        };
        let tool = dir.join(TOOL_DIR);
        std::fs::create_dir(&tool).map_err(io(&tool))?;
        for (name, content) in files {
            let path = tool.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(io(&path))?;
            file.write_all(content.as_bytes()).map_err(io(&path))?;
        }
        Ok(n)
    }

    /// Writes attempt `n`'s diagnostics.
    pub fn write_diagnostics(&self, n: u32, d: &Diagnostics) -> Result<(), StagingError> {
        let path = self.attempt_dir(n).join(DIAGNOSTICS_FILE);
        let text = serde_json::to_string_pretty(d).unwrap_or_default();
        replace(&path, &text)
    }

    /// Writes the candidate's spec (replacing an earlier one: a resumed candidate keeps it).
    pub fn write_spec(&self, spec: &super::spec::ToolSpec) -> Result<(), StagingError> {
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let text = serde_json::to_string_pretty(spec).unwrap_or_default();
        replace(&self.dir.join(SPEC_FILE), &text)
    }

    /// The candidate's spec, if written and readable.
    pub fn spec(&self) -> Option<super::spec::ToolSpec> {
        let text = std::fs::read_to_string(self.dir.join(SPEC_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Keeps a model's raw reply beside attempt `n`'s files.
    pub fn write_reply(&self, n: u32, reply: &str) -> Result<(), StagingError> {
        let path = self.attempt_dir(n).join(REPLY_FILE);
        replace(&path, reply)
    }

    /// Keeps the trace of the model call that made attempt `n` ([`PROMPT_FILE`]).
    pub fn write_prompt(&self, n: u32, trace: &serde_json::Value) -> Result<(), StagingError> {
        let path = self.attempt_dir(n).join(PROMPT_FILE);
        let text = serde_json::to_string_pretty(trace).unwrap_or_else(|_| trace.to_string());
        replace(&path, &text)
    }

    /// Attempt `n`'s model call trace, if a model made it.
    pub fn prompt(&self, n: u32) -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(self.attempt_dir(n).join(PROMPT_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Attempt `n`'s model reply, if it had one.
    pub fn reply(&self, n: u32) -> Option<String> {
        std::fs::read_to_string(self.attempt_dir(n).join(REPLY_FILE)).ok()
    }

    /// Replaces attempt `n`'s manifest: validation writes its result into `validation:`
    /// (the files it covers, and their digest, do not change).
    pub fn write_manifest(
        &self,
        n: u32,
        manifest: &crate::package::manifest::Manifest,
    ) -> Result<(), StagingError> {
        let path = self.tool_dir(n).join(crate::package::manifest::FILE_NAME);
        replace(&path, &manifest.to_yaml())
    }

    /// Attempt `n`'s diagnostics, if written.
    pub fn diagnostics(&self, n: u32) -> Option<Diagnostics> {
        let text = std::fs::read_to_string(self.attempt_dir(n).join(DIAGNOSTICS_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Attempt `n`'s files, by name.
    pub fn files(&self, n: u32) -> BTreeMap<String, String> {
        let mut files = BTreeMap::new();
        collect(&self.tool_dir(n), "", &mut files);
        files
    }

    /// A unified diff of attempt `a`'s files against attempt `b`'s.
    pub fn diff(&self, a: u32, b: u32) -> String {
        let (old, new) = (self.files(a), self.files(b));
        let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        let mut out = String::new();
        for name in names {
            let before = old.get(name).map_or("", String::as_str);
            let after = new.get(name).map_or("", String::as_str);
            if before == after {
                continue;
            }
            let diff = similar::TextDiff::from_lines(before, after);
            out.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    .header(
                        &format!("attempt-{a}/{name}"),
                        &format!("attempt-{b}/{name}"),
                    )
                    .to_string(),
            );
        }
        out
    }
}

/// Writes `text` to `path` through a new file renamed over it: a reader never sees half of it,
/// and a symlink at `path` is replaced, never followed.
fn replace(path: &Path, text: &str) -> Result<(), StagingError> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(io(&tmp))?;
    file.write_all(text.as_bytes()).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

fn collect(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect(&entry.path(), &rel, out),
            Ok(t) if t.is_file() => {
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    out.insert(rel, text);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::report::{CheckLayer, CheckReport};

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(n, c)| ((*n).to_owned(), (*c).to_owned()))
            .collect()
    }

    #[test]
    fn a_claim_is_held_once_seen_by_others_and_released_with_its_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let staging = Staging::new(dir.path(), "c-000000000001");
        assert!(!staging.claimed(), "never claimed");
        let claim = staging.try_claim().expect("claim").expect("free");
        // Another open of the file (another worker, here or in another process) sees it held.
        assert!(staging.claimed());
        assert!(staging.try_claim().expect("ask").is_none(), "taken twice");
        assert!(staging.claimed(), "looking does not take it");
        drop(claim);
        assert!(!staging.claimed(), "released with its holder");
        assert!(staging.try_claim().expect("claim").is_some());
        assert!(staging.attempts().is_empty(), "the lock file is no attempt");
    }

    #[test]
    fn attempts_are_kept_and_diffed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let staging = Staging::new(dir.path(), "c-000000000001");
        let one = staging
            .new_attempt(&files(&[
                ("run.sh", "echo one\n"),
                ("tests/cases.json", "{}\n"),
            ]))
            .expect("first");
        let two = staging
            .new_attempt(&files(&[
                ("run.sh", "echo two\n"),
                ("tests/cases.json", "{}\n"),
            ]))
            .expect("second");
        assert_eq!((one, two), (1, 2));
        assert_eq!(staging.attempts(), [1, 2]);
        assert_eq!(staging.files(1)["run.sh"], "echo one\n");
        assert_eq!(staging.files(2)["tests/cases.json"], "{}\n");
        let diff = staging.diff(1, 2);
        assert!(
            diff.contains("-echo one") && diff.contains("+echo two"),
            "{diff}"
        );
        assert!(!diff.contains("cases.json"), "unchanged files are left out");
        let d = Diagnostics {
            generator: "template/sh@1".into(),
            passed: false,
            checks: vec![CheckReport {
                layer: CheckLayer::Static,
                name: "sh -n".into(),
                passed: false,
                details: vec!["run.sh: 3: Syntax error".into()],
            }],
            finished: "2026-11-22T10:00:00Z".into(),
        };
        staging.write_diagnostics(2, &d).expect("write");
        assert_eq!(staging.diagnostics(2), Some(d.clone()));
        assert!(d.failures().contains("[static] sh -n"));
        assert_eq!(staging.diagnostics(1), None);
    }

    #[test]
    fn names_from_a_model_are_checked() {
        for bad in [
            "../x",
            "/etc/passwd",
            "a/../../b",
            ".git/config",
            "tests/.hidden",
            "",
            "a b",
            "a\\b",
            "a/b/c/d/e",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        for good in ["run.sh", "tests/cases.json", "README.md", "lib/util_2.py"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let staging = Staging::new(dir.path(), "c-1");
        assert!(staging.new_attempt(&files(&[("../escape", "x")])).is_err());
        assert!(!dir.path().join("staging/escape").exists());
        let big = "x".repeat(MAX_FILE_BYTES + 1);
        assert!(matches!(
            staging.new_attempt(&files(&[("run.sh", &big)])),
            Err(StagingError::TooBig { .. })
        ));
    }
}
