//! What a run is given of a tool: the files of the tree [`Registry::runnable`] found approved,
//! read from git's object database by that tree's id — never from the work tree, which any
//! process of the user can change (or swap with `renameat2`) between the check and the run.

use git2::{ObjectType, Oid};

use super::repo::{Registry, RegistryError, tool_path};
use crate::package::manifest::Manifest;
use crate::sandbox::ToolFiles;

impl Registry {
    /// A tool ready to run, as [`Registry::runnable`] checks it (digest, approval, the work
    /// tree the same as `main`), with the files of the approved tree by value, each with the
    /// mode git records, for the sandbox to show read-only in the run's own mount namespace.
    pub fn runnable_files(&self, name: &str) -> Result<(Manifest, ToolFiles), RegistryError> {
        let before = self.main_tool_tree(name)?;
        let (checked, _) = self.runnable(name)?;
        // `runnable` reads main itself: the tree given is the one it checked only when main
        // did not move meanwhile, and that tree's approval is checked again on its id.
        let tree = self.main_tool_tree(name)?;
        let invalid = |problem: String| RegistryError::Invalid {
            name: name.to_owned(),
            problem,
        };
        if tree != before {
            return Err(invalid(
                "main moved while the tool was being checked; run it again".into(),
            ));
        }
        // What the tree alone decides was just checked and remembered by `runnable` (under
        // the same key); what the tags say is checked again, on this tree id.
        let remembered = self.valid.borrow().get(&(name.to_owned(), tree)).cloned();
        let manifest = match remembered {
            Some(m) => m,
            None => self
                .validated(name, tree)
                .map_err(|problem| invalid(format!("{problem}; it is not run")))?,
        };
        self.bind(
            name,
            &manifest.version.to_string(),
            tree,
            &self.known(),
            None,
        )
        .map_err(|problem| invalid(format!("{problem}; it is not run")))?;
        if manifest != checked {
            return Err(invalid(
                "main moved while the tool was being checked; run it again".into(),
            ));
        }
        let files = self.tree_files(name, tree)?;
        Ok((manifest, files))
    }

    /// The id of `tools/<name>` on `main`.
    fn main_tool_tree(&self, name: &str) -> Result<Oid, RegistryError> {
        let main = self.main_commit()?;
        let root = self.git("read main", main.tree())?;
        self.subtree_id(&root, &tool_path(name))
            .ok_or_else(|| RegistryError::NoSuchTool(name.to_owned()))
    }

    /// The files of a tool's tree by value. The tree was checked (regular UTF-8 files only,
    /// matching the digest); anything else met here is refused all the same.
    fn tree_files(&self, name: &str, tree: Oid) -> Result<ToolFiles, RegistryError> {
        let invalid = |problem: String| RegistryError::Invalid {
            name: name.to_owned(),
            problem,
        };
        let tree = self.git("read a tool's tree", self.repo.find_tree(tree))?;
        let mut entries: Vec<(String, bool, Oid)> = Vec::new();
        let mut problem: Option<String> = None;
        self.git(
            "walk a tool's tree",
            tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                let path = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
                match (entry.kind(), entry.filemode()) {
                    (Some(ObjectType::Tree), _) => {}
                    (Some(ObjectType::Blob), mode @ (0o100644 | 0o100755)) => {
                        entries.push((path, mode == 0o100755, entry.id()));
                    }
                    (_, mode) => {
                        problem.get_or_insert(format!(
                            "{path} is not a regular file (mode {mode:o}): a tool's files must \
                             be regular files"
                        ));
                        return git2::TreeWalkResult::Abort;
                    }
                }
                git2::TreeWalkResult::Ok
            }),
        )
        .or_else(|e| if problem.is_some() { Ok(()) } else { Err(e) })?;
        if let Some(p) = problem {
            return Err(invalid(p));
        }
        let mut files = ToolFiles::new();
        for (path, executable, id) in entries {
            let blob = self.git(&format!("read {path}"), self.repo.find_blob(id))?;
            let text = String::from_utf8(blob.content().to_vec())
                .map_err(|_| invalid(format!("{path} is not UTF-8 text")))?;
            files
                .add(&path, executable, text)
                .map_err(|e| invalid(e.to_string()))?;
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;

    #[test]
    fn the_files_run_are_the_approved_tree_with_its_modes() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let (manifest, files) = registry.runnable_files("demo").expect("runnable");
        assert_eq!(manifest.name, "demo");
        let run = files
            .files()
            .iter()
            .find(|f| f.path == "run.sh")
            .expect("run.sh");
        assert_eq!(run.contents, "#!/bin/sh\necho 1\n");
        assert!(run.executable, "git's 100755 is kept");
        let yaml = files
            .files()
            .iter()
            .find(|f| f.path == "tool.yaml")
            .expect("tool.yaml");
        assert!(!yaml.executable);
    }

    #[test]
    fn a_changed_work_tree_is_still_refused() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        std::fs::write(registry.root().join("tools/demo/run.sh"), "echo 2\n").expect("w");
        let err = registry
            .runnable_files("demo")
            .expect_err("changed on disk");
        assert!(
            err.to_string()
                .contains("its files on disk differ from main"),
            "{err}"
        );
    }
}
