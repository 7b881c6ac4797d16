//! What the registry's unit tests share: a real registry in a temp dir, a validated tool's
//! files, proposals of them, and the `git` program for what a user does by hand.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::repo::{Proposal, Registry, Review};
use crate::package::digest;
use crate::package::manifest::tests_support::manifest;
use crate::package::manifest::{TestCounts, Validation};

/// A registry made from the template in a temp dir (kept alive by the first element), its
/// state directory (the approval key's) beside it.
pub(super) fn registry() -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry =
        Registry::open_or_init(&dir.path().join("registry"), &state(dir.path())).expect("registry");
    (dir, registry)
}

/// The state directory of a registry [`registry`] made in `dir`.
pub(super) fn state(dir: &Path) -> std::path::PathBuf {
    dir.join("state")
}

/// A validated tool named `name` whose `run.sh` is `script`: the design's example manifest
/// with a validation record whose digest matches the files.
pub(super) fn tool(name: &str, script: &str) -> BTreeMap<String, String> {
    let mut m = manifest();
    m.name = name.to_owned();
    let mut files = BTreeMap::from([
        ("run.sh".to_owned(), script.to_owned()),
        ("README.md".to_owned(), format!("# {name}\n")),
    ]);
    m.validation = Some(Validation {
        checks: vec!["manifest".into()],
        tests: TestCounts {
            passed: 1,
            failed: 0,
        },
        runtime_ms: 1,
        peak_memory_kb: None,
        digest: digest::digest_v2(&files, &m),
    });
    files.insert("tool.yaml".to_owned(), m.to_yaml());
    files
}

/// Proposes `tool(name, script)` as `candidate`.
pub(super) fn propose(registry: &Registry, candidate: &str, name: &str, script: &str) -> Review {
    registry
        .propose(&Proposal {
            candidate: candidate.to_owned(),
            files: tool(name, script),
            why: "seen in 3 sessions".to_owned(),
            trailers: vec![("Origin".to_owned(), "mined-sequence".to_owned())],
        })
        .expect("propose")
}

/// Proposes and approves `tool(name, script)` as `candidate`.
pub(super) fn approved(registry: &Registry, candidate: &str, name: &str, script: &str) {
    propose(registry, candidate, name, script);
    registry
        .approve(candidate, "Reviewer <r@example.org>", None)
        .expect("approve");
}

/// Runs `git` in the registry's work tree as a user would; its stdout.
pub(super) fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=User", "-c", "user.email=user@example.org"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", root)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `refname` exists.
pub(super) fn has_ref(registry: &Registry, refname: &str) -> bool {
    registry.repo.refname_to_id(refname).is_ok()
}
