//! What may run and what is wrong: a tool made ready to run (checked from git on every run,
//! never from a listing's cache) and `verify`, which checks every tag and every tool on
//! `main`.

use std::path::PathBuf;

use git2::{ObjectType, Oid};
use serde::Serialize;

use super::ledger::Known;
use super::repo::{Registry, RegistryError, tool_path};
use crate::package::manifest::{self, Manifest};

/// What `verify` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    /// Tags checked.
    pub tags: usize,
    /// Tools on `main` checked.
    pub tools: usize,
    /// Each problem: what, where, what to do.
    pub problems: Vec<String>,
}

/// Tool versions a handle remembers as valid before it starts over (each a manifest of a few
/// KiB).
pub(super) const MAX_REMEMBERED: usize = 1024;

impl Registry {
    /// A tool ready to run: its manifest read and checked, its files regular files matching
    /// the digest it was validated with, its directory on `main` the tree its version's tag
    /// approved, and its directory on disk holding exactly those files.
    pub fn runnable(&self, name: &str) -> Result<(Manifest, PathBuf), RegistryError> {
        if !manifest::valid_name(name) {
            return Err(RegistryError::NoSuchTool(name.to_owned()));
        }
        let invalid = |problem: String| RegistryError::Invalid {
            name: name.to_owned(),
            problem,
        };
        // main is read once: the version checked is the version whose files are compared.
        let path = tool_path(name);
        let main = self.main_commit()?;
        let tree_id = self
            .subtree_id(&self.git("read main", main.tree())?, &path)
            .ok_or_else(|| RegistryError::NoSuchTool(name.to_owned()))?;
        let refuse = |problem: String| {
            invalid(format!(
                "{problem}; it is not run until main holds a valid version (`toolsmith verify`)"
            ))
        };
        // What is a function of the tree alone (the manifest read and checked, the files
        // matching its digest) is remembered per (name, tree); what refs say (the tag that
        // approved it) is checked on every run, from git.
        let key = (name.to_owned(), tree_id);
        let known = self.valid.borrow().get(&key).cloned();
        let manifest = match known {
            Some(manifest) => manifest,
            None => {
                let manifest = self.validated(name, tree_id).map_err(refuse)?;
                let mut valid = self.valid.borrow_mut();
                if valid.len() >= MAX_REMEMBERED {
                    valid.clear();
                }
                valid.insert(key, manifest.clone());
                manifest
            }
        };
        self.bind(
            name,
            &manifest.version.to_string(),
            tree_id,
            &self.known(),
            None,
        )
        .map_err(refuse)?;
        if self.repo.is_bare() {
            return Err(invalid(
                "the registry has no work tree to run tools from".into(),
            ));
        }
        if let Some(problem) = self.disk_problem(name, main.id())? {
            return Err(invalid(problem));
        }
        Ok((manifest, self.root.join(tool_path(name))))
    }

    /// Checks every tag (an annotated tag toolsmith made or received, whose tree holds a valid
    /// version of that name and version) and every tool on `main` (valid, the tree its
    /// version's tag approved, and its files on disk the same).
    pub fn verify(&self) -> Result<VerifyReport, RegistryError> {
        let mut report = VerifyReport::default();
        let known = self.known();
        let tags = self.git("list tags", self.repo.tag_names(Some("*/v*")))?;
        for tag in tags.iter().flatten().flatten() {
            report.tags += 1;
            let Some((name, version)) = tag.rsplit_once("/v") else {
                continue;
            };
            let problem = (|| -> Result<Option<String>, RegistryError> {
                let refname = format!("refs/tags/{tag}");
                let target = self.git(
                    &format!("read tag {tag}"),
                    self.repo.refname_to_id(&refname),
                )?;
                let object = self.git(
                    &format!("read tag {tag}"),
                    self.repo.find_object(target, None),
                )?;
                if object.kind() != Some(ObjectType::Tag) {
                    return Ok(Some(format!(
                        "a lightweight tag, which approves nothing (toolsmith approves with \
                         annotated tags): delete it (`git tag -d {tag}`)"
                    )));
                }
                if !known.contains(target) {
                    return Ok(Some(format!(
                        "{} (`git tag -d {tag}` deletes it)",
                        known.why_not(target)
                    )));
                }
                let commit = self.git(&format!("read tag {tag}"), object.peel_to_commit())?;
                let tree = self.git(&format!("read tag {tag}"), commit.tree())?;
                let Some(id) = self.subtree_id(&tree, &tool_path(name)) else {
                    return Ok(Some(format!("its commit has no tools/{name}")));
                };
                Ok(self.check_version(name, Some(version), id).err())
            })();
            match problem {
                Ok(Some(p)) => report.problems.push(format!("tag {tag}: {p}")),
                Ok(None) => {}
                Err(e) => report.problems.push(format!("tag {tag}: {e}")),
            }
        }
        let main = self.main_commit()?.id();
        for entry in self.tools()? {
            report.tools += 1;
            let tree = self.git("read a tool", Oid::from_str(&entry.tree))?;
            let problem = match self.approved(&entry.name, tree, &known) {
                Err(p) => Some(p),
                Ok(_) if self.main_is_checked_out() => self.disk_problem(&entry.name, main)?,
                Ok(_) => None,
            };
            if let Some(p) = problem {
                report
                    .problems
                    .push(format!("main: tools/{}: {p}", entry.name));
            }
        }
        Ok(report)
    }

    /// Whether a tool tree holds a valid version: its manifest reads and passes its checks,
    /// names the tool (and `version`, when given) and its files match its digest.
    pub(super) fn check_version(
        &self,
        name: &str,
        version: Option<&str>,
        tree: Oid,
    ) -> Result<(), String> {
        let m = self.validated(name, tree)?;
        match version {
            Some(v) if m.version.to_string() != v => {
                Err(format!("the manifest says version {}", m.version))
            }
            _ => Ok(()),
        }
    }

    /// The manifest of a tool tree, read and checked as [`Registry::entry`] does: its files
    /// regular files matching the digest it was validated with.
    pub(super) fn validated(&self, name: &str, tree: Oid) -> Result<Manifest, String> {
        let entry = self.entry(name, tree);
        match entry.manifest {
            Some(m) => Ok(m),
            None => Err(entry.problem.unwrap_or_default()),
        }
    }

    /// [`Registry::validated`], and the tree is what the version's tag approved (read from
    /// git, never from a cache: this decides what runs).
    pub(super) fn approved(
        &self,
        name: &str,
        tree: Oid,
        known: &Known,
    ) -> Result<Manifest, String> {
        let m = self.validated(name, tree)?;
        self.bind(name, &m.version.to_string(), tree, known, None)?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git};
    use super::*;

    #[test]
    fn an_approved_tool_is_runnable_from_its_directory() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let (manifest, dir) = registry.runnable("demo").expect("runnable");
        assert_eq!(manifest.name, "demo");
        assert_eq!(manifest.version.to_string(), "1.0.0");
        assert_eq!(dir, registry.root().join("tools/demo"));
        let report = registry.verify().expect("verify");
        assert_eq!((report.tags, report.tools), (1, 1));
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert!(matches!(
            registry.runnable("../etc"),
            Err(RegistryError::NoSuchTool(_))
        ));
        assert!(matches!(
            registry.runnable("absent"),
            Err(RegistryError::NoSuchTool(_))
        ));
    }

    #[test]
    fn a_tool_changed_on_disk_is_not_run_and_verify_says_so() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        registry
            .runnable("demo")
            .expect("runnable, and remembered valid");
        std::fs::write(registry.root().join("tools/demo/run.sh"), "rm -rf ~\n").expect("w");
        match registry.runnable("demo") {
            Err(RegistryError::Invalid { problem, .. }) => assert!(
                problem.contains(
                    "its files on disk differ from main (tools/demo/run.sh was \
                                  changed)"
                ),
                "{problem}"
            ),
            other => panic!("ran a changed file: {other:?}"),
        }
        let report = registry.verify().expect("verify");
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(
            report.problems[0].starts_with("main: tools/demo: its files on disk differ"),
            "{:?}",
            report.problems
        );
    }

    #[test]
    fn a_tool_without_its_approval_is_not_run() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        registry
            .runnable("demo")
            .expect("runnable, and remembered valid");
        registry
            .repo
            .tag_delete("demo/v1.0.0")
            .expect("delete the tag");
        let err = registry.runnable("demo").expect_err("its tag is gone");
        assert!(
            err.to_string()
                .contains("it is not run until main holds a valid version"),
            "{err}"
        );
    }

    #[test]
    fn verify_names_tags_that_approve_nothing() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        git(registry.root(), &["tag", "demo/v7.0.0"]);
        git(
            registry.root(),
            &["tag", "-a", "-m", "by hand", "demo/v8.0.0"],
        );
        let report = registry.verify().expect("verify");
        assert_eq!(report.tags, 3);
        let problems = report.problems.join("\n");
        assert!(
            problems.contains("tag demo/v7.0.0: a lightweight tag, which approves nothing"),
            "{problems}"
        );
        assert!(
            problems.contains("tag demo/v8.0.0: not made or received by toolsmith"),
            "{problems}"
        );
        assert_eq!(report.problems.len(), 2, "{problems}");
    }
}
