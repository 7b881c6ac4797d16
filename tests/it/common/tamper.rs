//! Changing a registry by hand, as someone bypassing review would: plain git, with the tool's
//! `validation.digest` recomputed exactly as toolsmith computes it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use super::TestEnv;

/// The registry of a test environment.
pub fn registry_dir(env: &TestEnv) -> PathBuf {
    env.state().join("registry")
}

/// `git -C <registry> ARGS…` as a person with a name would run it; its stdout.
pub fn git(env: &TestEnv, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(registry_dir(env))
        .args(args)
        .env("GIT_AUTHOR_NAME", "Mallory Hand")
        .env("GIT_AUTHOR_EMAIL", "mallory@example.com")
        .env("GIT_COMMITTER_NAME", "Mallory Hand")
        .env("GIT_COMMITTER_EMAIL", "mallory@example.com")
        .env("HOME", env.path().join("home"))
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Which digest to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `sha256v2:`, the profile and the files (what validation writes).
    V2,
    /// `sha256:`, the files only (older registries).
    V1,
}

/// The files of `tools/<tool>/` as git's index holds them (a symbolic link is the text of its
/// target; a submodule is no file), by path inside the tool: what toolsmith digests.
fn indexed_files(env: &TestEnv, tool: &str) -> BTreeMap<String, String> {
    let repo = git2::Repository::open(registry_dir(env)).expect("open the registry");
    let index = repo.index().expect("index");
    let prefix = format!("tools/{tool}/");
    let mut files = BTreeMap::new();
    for entry in index.iter() {
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let Ok(blob) = repo.find_blob(entry.id) else {
            continue;
        };
        files.insert(
            rest.to_owned(),
            String::from_utf8_lossy(blob.content()).into_owned(),
        );
    }
    files
}

/// Stages everything in the work tree, rewrites `tools/<tool>/tool.yaml`'s digest to match the
/// staged files (in `form`), and commits by hand on `main`.
pub fn commit_by_hand(env: &TestEnv, tool: &str, form: Form, message: &str) {
    use toolsmith::package::digest;
    use toolsmith::package::manifest::Manifest;
    git(env, &["add", "-A"]);
    let files = indexed_files(env, tool);
    let path = registry_dir(env).join(format!("tools/{tool}/tool.yaml"));
    let text = std::fs::read_to_string(&path).expect("read tool.yaml");
    let manifest = Manifest::parse(&text, "tool.yaml").expect("the manifest reads");
    let recorded = manifest
        .validation
        .as_ref()
        .map(|v| v.digest.clone())
        .expect("a validation record");
    let fresh = match form {
        Form::V2 => digest::digest_v2(&files, &manifest),
        Form::V1 => digest::digest(&files),
    };
    std::fs::write(&path, text.replace(&recorded, &fresh)).expect("write tool.yaml");
    git(env, &["add", "-A"]);
    git(env, &["commit", "-q", "-m", message]);
}

/// Edits `tools/<tool>/<file>` on disk with `edit`.
pub fn edit(env: &TestEnv, tool: &str, file: &str, edit: impl FnOnce(String) -> String) {
    let path = registry_dir(env).join(format!("tools/{tool}/{file}"));
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, edit(text)).expect("write");
}
