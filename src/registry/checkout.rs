//! The registry's work tree: `main`'s files under a tool's directory (or a root file) compared
//! with what is on disk, and checked out path by path — a registry of ten thousand tools is
//! never scanned for one change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid};

use super::repo::{MAIN, Registry, RegistryError, tool_path};

/// Removes the empty directories under `dir` (not `dir` itself).
fn remove_empty_dirs(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_dirs(&p);
            let _ = std::fs::remove_dir(&p);
        }
    }
}

impl Registry {
    pub(super) fn main_is_checked_out(&self) -> bool {
        !self.repo.is_bare()
            && self
                .repo
                .find_reference("HEAD")
                .ok()
                .and_then(|h| h.symbolic_target().ok().flatten().map(|t| t == MAIN))
                .unwrap_or(false)
    }

    /// The files under `path` (a tool's directory or a root file) in a commit's tree, by path
    /// from the root, with their ids and modes.
    pub(super) fn files_under(
        &self,
        commit: Oid,
        path: &str,
    ) -> Result<BTreeMap<String, (Oid, i32)>, RegistryError> {
        let commit = self.git("read a commit", self.repo.find_commit(commit))?;
        let tree = self.git("read a commit", commit.tree())?;
        let mut out = BTreeMap::new();
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(out);
        };
        match entry.kind() {
            Some(ObjectType::Blob) => {
                out.insert(path.to_owned(), (entry.id(), entry.filemode()));
            }
            Some(ObjectType::Tree) => {
                let sub = self.git("read a tree", self.repo.find_tree(entry.id()))?;
                self.git(
                    "walk a tree",
                    sub.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
                        if e.kind() == Some(ObjectType::Blob) {
                            out.insert(
                                format!("{path}/{dir}{}", e.name().unwrap_or_default()),
                                (e.id(), e.filemode()),
                            );
                        }
                        git2::TreeWalkResult::Ok
                    }),
                )?;
            }
            _ => {}
        }
        Ok(out)
    }

    /// The files on disk under `path` (a directory or a file), by path from the root.
    pub(super) fn disk_files_under(&self, path: &str) -> Vec<(String, bool)> {
        let full = self.root.join(path);
        if let Ok(meta) = std::fs::symlink_metadata(&full)
            && !meta.is_dir()
        {
            return vec![(path.to_owned(), meta.is_file())];
        }
        let mut out = Vec::new();
        let mut stack = vec![full];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = entry.path();
                let kind = entry.file_type();
                if kind.as_ref().is_ok_and(|t| t.is_dir()) {
                    stack.push(p);
                } else if let Ok(rel) = p.strip_prefix(&self.root) {
                    let plain = kind.is_ok_and(|t| t.is_file());
                    out.push((rel.to_string_lossy().into_owned(), plain));
                }
            }
        }
        out
    }

    /// How the work tree differs from `expected` (see [`Self::files_under`]) under `path`: each
    /// differing file, by path from the root, with what is wrong with it.
    pub(super) fn disk_differences(
        &self,
        expected: &BTreeMap<String, (Oid, i32)>,
        path: &str,
    ) -> Vec<(String, &'static str)> {
        let on_disk = self.disk_files_under(path);
        let mut out = Vec::new();
        for (f, plain) in &on_disk {
            let what = match expected.get(f) {
                _ if !plain => "is not a plain file",
                None => "is not on main",
                Some((want, _)) => {
                    if Oid::hash_file(ObjectType::Blob, self.root.join(f)).ok() == Some(*want) {
                        continue;
                    }
                    "was changed"
                }
            };
            out.push((f.clone(), what));
        }
        for f in expected.keys() {
            if !on_disk.iter().any(|(d, _)| d == f) {
                out.push((f.clone(), "is missing"));
            }
        }
        out
    }

    /// Refuses when the work tree or the index differ from `base` under `paths`. Looks only at
    /// those paths: a registry of ten thousand tools is not scanned for one change.
    pub(super) fn check_clean(&self, base: Oid, paths: &[String]) -> Result<(), RegistryError> {
        let mut index = self.git("read the index", self.repo.index())?;
        // Another process (git, another toolsmith) may have written it since it was loaded.
        self.git("read the index", index.read(false))?;
        let mut dirty = Vec::new();
        for p in paths {
            let expected = self.files_under(base, p)?;
            dirty.extend(
                self.disk_differences(&expected, p)
                    .into_iter()
                    .map(|(f, _)| f),
            );
            let prefix = format!("{p}/");
            for entry in index.iter() {
                let path = String::from_utf8_lossy(&entry.path).into_owned();
                if path != *p && !path.starts_with(&prefix) {
                    continue;
                }
                if expected.get(&path).map(|(id, _)| *id) != Some(entry.id) {
                    dirty.push(path);
                }
            }
        }
        dirty.sort();
        dirty.dedup();
        if dirty.is_empty() {
            Ok(())
        } else {
            Err(RegistryError::Dirty {
                root: self.root.clone(),
                paths: dirty.join(", "),
            })
        }
    }

    /// Makes the work tree and the index hold `commit`'s files under `paths`, and nothing else
    /// there.
    pub(super) fn checkout_paths(
        &self,
        commit: Oid,
        paths: &[String],
    ) -> Result<(), RegistryError> {
        let mut index = self.git("read the index", self.repo.index())?;
        self.git("read the index", index.read(false))?;
        let io = |path: PathBuf| move |source| RegistryError::Io { path, source };
        for p in paths {
            let wanted = self.files_under(commit, p)?;
            for (f, _) in self.disk_files_under(p) {
                if !wanted.contains_key(&f) {
                    let full = self.root.join(&f);
                    std::fs::remove_file(&full).map_err(io(full))?;
                }
            }
            let prefix = format!("{p}/");
            let stale: Vec<String> = index
                .iter()
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .filter(|path| {
                    (path == p || path.starts_with(&prefix)) && !wanted.contains_key(path)
                })
                .collect();
            for path in stale {
                self.git("update the index", index.remove_path(Path::new(&path)))?;
            }
            for (f, (id, mode)) in &wanted {
                let full = self.root.join(f);
                if let Some(dir) = full.parent() {
                    std::fs::create_dir_all(dir).map_err(io(dir.to_owned()))?;
                }
                let blob = self.git("read a file", self.repo.find_blob(*id))?;
                let tmp = full.with_file_name(format!(
                    ".{}.toolsmith-tmp",
                    full.file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default()
                ));
                std::fs::write(&tmp, blob.content()).map_err(io(tmp.clone()))?;
                let perm = if *mode == 0o100755 { 0o755 } else { 0o644 };
                std::fs::set_permissions(
                    &tmp,
                    <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(perm),
                )
                .map_err(io(tmp.clone()))?;
                std::fs::rename(&tmp, &full).map_err(io(full.clone()))?;
                self.git("update the index", index.add_path(Path::new(f)))?;
            }
            // Directories left empty go too.
            let top = self.root.join(p);
            if wanted.is_empty() && top.is_dir() {
                std::fs::remove_dir_all(&top).map_err(io(top.clone()))?;
            } else if top.is_dir() {
                remove_empty_dirs(&top);
            }
        }
        self.git("write the index", index.write())
    }

    /// How a tool's directory on disk differs from `main`'s (`commit`), when it does: the
    /// bytes are compared as they are, so a checkout that changed them (an eol conversion, a
    /// filter or `ident` set in `.gitattributes`) differs too.
    pub(super) fn disk_problem(
        &self,
        name: &str,
        commit: Oid,
    ) -> Result<Option<String>, RegistryError> {
        let path = tool_path(name);
        let differs = self.disk_differences(&self.files_under(commit, &path)?, &path);
        Ok(differs.first().map(|(file, what)| {
            format!(
                "its files on disk differ from main ({file} {what}): refusing to run them; \
                 `git -C {} status` shows the change, `git checkout -- {path}` restores main's \
                 (a `.gitattributes` that converts or filters tool files must go)",
                self.root.display(),
            )
        }))
    }
}
