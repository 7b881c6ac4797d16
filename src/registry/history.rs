//! A tool's history on `main`: rollback (a revert of the commit that brought its current
//! version) and deprecation (a new patch version whose manifest says so, tagged).

use std::collections::BTreeMap;

use git2::{Commit, Oid};

use super::index;
use super::proposals::Landed;
use super::repo::{Registry, RegistryError, message, tag_name, tool_path};
use super::versions::Bump;
use crate::package::manifest;

impl Registry {
    /// The commit on `main` that brought the tool's current files: the newest first-parent
    /// commit whose parent had other files (or none) there.
    pub(super) fn introducing_commit(
        &self,
        name: &str,
    ) -> Result<Option<Commit<'_>>, RegistryError> {
        let path = tool_path(name);
        let main = self.main_commit()?;
        let current = self.subtree_id(&self.git("read main", main.tree())?, &path);
        if current.is_none() {
            return Ok(None);
        }
        let mut commit = main;
        loop {
            let parent = match commit.parent(0) {
                Ok(p) => p,
                Err(_) => return Ok(Some(commit)),
            };
            let there = self.subtree_id(&self.git("read history", parent.tree())?, &path);
            if there != current {
                return Ok(Some(commit));
            }
            commit = parent;
        }
    }

    /// Rolls a tool back: a new commit on `main` reverting the one that brought its current
    /// version — the commit its version's tag names, else the newest commit that changed its
    /// files — so the tool returns to what it was before (or goes, when it was new).
    pub fn rollback(&self, name: &str) -> Result<(String, Option<String>, String), RegistryError> {
        let _turn = self.exclusive()?;
        let path = tool_path(name);
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let current_manifest = self.manifest_in(&main_tree, name);
        let current = current_manifest
            .as_ref()
            .map(|m| m.version.to_string())
            .unwrap_or_else(|| "?".into());
        let tagged = current_manifest.as_ref().and_then(|m| {
            let tag = format!("refs/tags/{}", tag_name(name, &m.version.to_string()));
            let commit = self
                .repo
                .revparse_single(&tag)
                .ok()?
                .peel_to_commit()
                .ok()?;
            // Only when main still holds what the tag does.
            let same =
                self.subtree_id(&commit.tree().ok()?, &path) == self.subtree_id(&main_tree, &path);
            same.then_some(commit)
        });
        let commit = match tagged {
            Some(c) => c,
            None => match self.introducing_commit(name)? {
                Some(c) => c,
                None => return Err(RegistryError::NoSuchTool(name.to_owned())),
            },
        };
        let parent = self.git("read the version before", commit.parent(0))?;
        let parent_tree = self.git("read the version before", parent.tree())?;
        let before = self.subtree_id(&parent_tree, &path);
        let before_manifest = self.manifest_in(&parent_tree, name);
        let tree = self.with_tool(
            &main_tree,
            name,
            before,
            before_manifest.as_ref().map(Self::row_of).as_ref(),
        )?;
        let tree = self.git("read the tree", self.repo.find_tree(tree))?;
        let to = before_manifest.as_ref().map(|m| m.version.to_string());
        let what = match &to {
            Some(v) => format!("back to {v}"),
            None => "removed: it had no earlier version".to_owned(),
        };
        let msg = message(
            &format!("tool({name}): revert {current}"),
            &[
                format!("This reverts commit {}.", commit.id()),
                format!("{name} {current} rolled back; {what}."),
            ],
            &[("Rolled-back-by".into(), self.approver())],
        );
        let sig = self.tagger(&self.approver())?;
        let new = self.git(
            "write the revert",
            self.repo.commit(None, &sig, &sig, &msg, &tree, &[&main]),
        )?;
        self.land(
            main.id(),
            new,
            &[path, index::FILE_NAME.to_owned()],
            &format!("toolsmith: rollback {name}"),
        )?;
        Ok((current, to, new.to_string()))
    }

    /// Deprecates a tool: a new patch version on `main` whose manifest says so (and what
    /// replaces it), tagged like any version.
    pub fn deprecate(
        &self,
        name: &str,
        replaced_by: Option<&str>,
        reason: &str,
    ) -> Result<Landed, RegistryError> {
        let _turn = self.exclusive()?;
        let entry = self.tool(name)?;
        let Some(mut manifest) = entry.manifest else {
            return Err(RegistryError::Invalid {
                name: name.to_owned(),
                problem: entry.problem.unwrap_or_default(),
            });
        };
        if let Some(other) = replaced_by {
            self.tool(other)?;
        }
        let mut versions = self.tagged_versions(name)?;
        versions.push(manifest.version.clone());
        let highest = versions
            .into_iter()
            .max()
            .unwrap_or(manifest.version.clone());
        let version = Bump::Patch.apply(&highest);
        let tag = tag_name(name, &version.to_string());
        if self.repo.refname_to_id(&format!("refs/tags/{tag}")).is_ok() {
            return Err(RegistryError::TagExists(tag));
        }
        manifest.version = version.clone();
        manifest.deprecated = Some(manifest::Deprecation {
            since: version.clone(),
            replaced_by: replaced_by.map(str::to_owned),
            reason: reason.to_owned(),
        });
        let tree_id = self.git("read the tool", Oid::from_str(&entry.tree))?;
        let mut files: BTreeMap<String, Vec<u8>> = self
            .tool_files(name, tree_id)?
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect();
        files.insert(manifest::FILE_NAME.into(), manifest.to_yaml().into_bytes());
        let readme = files
            .get("README.md")
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        let notice = match replaced_by {
            Some(other) => {
                format!("> **Deprecated** since {version}: {reason} Use `{other}` instead.\n\n")
            }
            None => format!("> **Deprecated** since {version}: {reason}\n\n"),
        };
        files.insert("README.md".into(), format!("{notice}{readme}").into_bytes());
        let tool = self.write_tree(&files, Some(&manifest.runtime.entrypoint))?;
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let tree = self.with_tool(&main_tree, name, Some(tool), Some(&Self::row_of(&manifest)))?;
        let tree = self.git("read the tree", self.repo.find_tree(tree))?;
        let approver = self.approver();
        let mut t = vec![("Deprecated-by".to_owned(), approver.clone())];
        if let Some(other) = replaced_by {
            t.push(("Replaced-by".into(), other.to_owned()));
        }
        let msg = message(
            &format!("tool({name}): deprecate {version}"),
            &[reason.to_owned()],
            &t,
        );
        let sig = self.tagger(&approver)?;
        let new = self.git(
            "write the deprecation",
            self.repo.commit(None, &sig, &sig, &msg, &tree, &[&main]),
        )?;
        self.land(
            main.id(),
            new,
            &[tool_path(name), index::FILE_NAME.to_owned()],
            &format!("toolsmith: deprecate {name}"),
        )?;
        let version = version.to_string();
        let tag = self.tag_version(name, &version, new, &approver)?;
        Ok(Landed {
            name: name.to_owned(),
            version,
            candidate: None,
            commit: new.to_string(),
            tag,
            approved_by: approver,
            via: "toolsmith".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git};
    use super::*;

    const V1: &str = "#!/bin/sh\necho 1\n";
    const V2: &str = "#!/bin/sh\necho 2\n";

    #[test]
    fn rolling_back_returns_to_the_version_before() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", V1);
        fixture::approved(&registry, "c-2", "demo", V2);
        let (from, to, commit) = registry.rollback("demo").expect("rollback");
        assert_eq!((from.as_str(), to.as_deref()), ("1.0.1", Some("1.0.0")));
        assert_eq!(registry.main_id().expect("main"), commit);
        let script = registry.root().join("tools/demo/run.sh");
        assert_eq!(std::fs::read_to_string(script).expect("run.sh"), V1);
        assert_eq!(git(registry.root(), &["status", "--porcelain"]), "");
        let message = git(registry.root(), &["log", "-1", "--format=%B"]);
        assert!(
            message.starts_with("tool(demo): revert 1.0.1\n"),
            "{message}"
        );
        // What it went back to is the approved 1.0.0: it runs.
        let (manifest, _) = registry.runnable("demo").expect("runnable");
        assert_eq!(manifest.version.to_string(), "1.0.0");
        let index = std::fs::read_to_string(registry.root().join(index::FILE_NAME)).expect("md");
        assert!(
            index.contains("1.0.0") && !index.contains("1.0.1"),
            "{index}"
        );
    }

    #[test]
    fn rolling_back_a_first_version_removes_the_tool() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", V1);
        let (from, to, _) = registry.rollback("demo").expect("rollback");
        assert_eq!((from.as_str(), to), ("1.0.0", None));
        assert!(registry.tools().expect("tools").is_empty());
        assert!(!registry.root().join("tools/demo").exists());
        assert!(matches!(
            registry.rollback("demo"),
            Err(RegistryError::NoSuchTool(_))
        ));
    }

    #[test]
    fn a_change_made_with_git_is_what_a_rollback_undoes() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", V1);
        std::fs::write(registry.root().join("tools/demo/run.sh"), "echo hand\n").expect("w");
        git(registry.root(), &["commit", "-q", "-am", "by hand"]);
        assert!(registry.runnable("demo").is_err());
        let (from, to, _) = registry.rollback("demo").expect("rollback");
        assert_eq!((from.as_str(), to.as_deref()), ("1.0.0", Some("1.0.0")));
        assert_eq!(
            std::fs::read_to_string(registry.root().join("tools/demo/run.sh")).expect("run"),
            V1
        );
        registry
            .runnable("demo")
            .expect("the approved version runs again");
    }

    #[test]
    fn deprecation_is_a_tagged_patch_version_that_says_so() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", V1);
        fixture::approved(&registry, "c-2", "other", V2);
        assert!(matches!(
            registry.deprecate("demo", Some("absent"), "gone"),
            Err(RegistryError::NoSuchTool(_))
        ));
        let landed = registry
            .deprecate("demo", Some("other"), "Superseded.")
            .expect("deprecate");
        assert_eq!(landed.version, "1.0.1");
        assert_eq!(landed.tag, "demo/v1.0.1");
        assert_eq!(landed.commit, registry.main_id().expect("main"));
        let entry = registry.tool("demo").expect("demo");
        assert!(entry.deprecated);
        assert_eq!(entry.problem, None, "a deprecated version is still valid");
        let readme = registry.tool_readme("demo").expect("readme").expect("some");
        assert!(
            readme.starts_with("> **Deprecated** since 1.0.1: Superseded. Use `other` instead.\n"),
            "{readme}"
        );
        let manifest = registry.runnable("demo").expect("runnable").0;
        let deprecation = manifest.deprecated.expect("in the manifest");
        assert_eq!(deprecation.replaced_by.as_deref(), Some("other"));
        assert_eq!(git(registry.root(), &["status", "--porcelain"]), "");
    }
}
