//! The registry's work tree: `main`'s files under a tool's directory (or a root file) compared
//! with what is on disk, and checked out path by path — a registry of ten thousand tools is
//! never scanned for one change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid};

#[cfg(test)]
use super::index;
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

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git};
    use super::*;

    #[test]
    fn a_checkout_makes_the_paths_hold_the_commit_and_nothing_else() {
        let (_dir, registry) = fixture::registry();
        let review = fixture::propose(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let new = Oid::from_str(&review.commit).expect("oid");
        let root = registry.root().to_owned();
        let dir = root.join("tools/demo");
        std::fs::create_dir_all(dir.join("tests/old")).expect("mkdir");
        std::fs::write(dir.join("tests/old/stale.txt"), "x").expect("write");
        std::fs::write(dir.join("run.sh"), "stale\n").expect("write");
        let paths = ["tools/demo".to_owned()];
        registry.checkout_paths(new, &paths).expect("checkout");
        let mut on_disk: Vec<String> = registry
            .disk_files_under("tools/demo")
            .into_iter()
            .map(|(f, plain)| {
                assert!(plain, "{f}");
                f
            })
            .collect();
        on_disk.sort();
        assert_eq!(
            on_disk,
            [
                "tools/demo/README.md",
                "tools/demo/run.sh",
                "tools/demo/tool.yaml"
            ]
        );
        assert!(!dir.join("tests").exists(), "emptied directories go");
        assert_eq!(
            std::fs::read_to_string(dir.join("run.sh")).expect("run.sh"),
            "#!/bin/sh\necho 1\n"
        );
        let expected = registry.files_under(new, "tools/demo").expect("files");
        assert!(
            registry
                .disk_differences(&expected, "tools/demo")
                .is_empty()
        );
        // The index holds them too: to git, the work tree is the proposal's there.
        let staged = git(
            &root,
            &[
                "diff",
                "--cached",
                "--name-only",
                &review.commit,
                "--",
                "tools/demo",
            ],
        );
        assert_eq!(staged, "");
        // Back to main: the directory goes.
        let main = registry.main_commit().expect("main").id();
        registry.checkout_paths(main, &paths).expect("checkout");
        assert!(!dir.exists());
        assert_eq!(git(&root, &["status", "--porcelain"]), "");
    }

    #[test]
    fn each_difference_from_the_commit_is_named() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let main = registry.main_commit().expect("main").id();
        let expected = registry.files_under(main, "tools/demo").expect("files");
        assert!(
            registry
                .disk_differences(&expected, "tools/demo")
                .is_empty()
        );
        assert_eq!(registry.disk_problem("demo", main).expect("problem"), None);
        let dir = registry.root().join("tools/demo");
        std::fs::write(dir.join("run.sh"), "changed\n").expect("write");
        std::fs::remove_file(dir.join("README.md")).expect("rm");
        std::fs::write(dir.join("extra.sh"), "new\n").expect("write");
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).expect("link");
        let mut found = registry.disk_differences(&expected, "tools/demo");
        found.sort();
        assert_eq!(
            found,
            [
                ("tools/demo/README.md".to_owned(), "is missing"),
                ("tools/demo/extra.sh".to_owned(), "is not on main"),
                ("tools/demo/link".to_owned(), "is not a plain file"),
                ("tools/demo/run.sh".to_owned(), "was changed"),
            ]
        );
        match registry.check_clean(main, &["tools/demo".to_owned()]) {
            Err(RegistryError::Dirty { paths, .. }) => assert_eq!(
                paths,
                "tools/demo/README.md, tools/demo/extra.sh, tools/demo/link, tools/demo/run.sh"
            ),
            other => panic!("a dirty tool passed as clean: {other:?}"),
        }
        // Other paths are not looked at.
        registry
            .check_clean(main, &[index::FILE_NAME.to_owned()])
            .expect("TOOLS.md is clean");
    }

    #[test]
    fn a_change_staged_in_the_index_is_not_clean() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let main = registry.main_commit().expect("main").id();
        let run = registry.root().join("tools/demo/run.sh");
        std::fs::write(&run, "staged\n").expect("write");
        git(registry.root(), &["add", "tools/demo/run.sh"]);
        std::fs::write(&run, "#!/bin/sh\necho 1\n").expect("write back");
        match registry.check_clean(main, &["tools/demo".to_owned()]) {
            Err(RegistryError::Dirty { paths, .. }) => assert_eq!(paths, "tools/demo/run.sh"),
            other => panic!("a staged change passed as clean: {other:?}"),
        }
    }
}
