//! A person's edit as a candidate. `toolsmith edit NAME` starts the review branch
//! `review/<name>/<next version>` (one empty commit on `main`, never in the ledger: it
//! approves nothing) in a git worktree of the registry; a commit made there, or by hand on any
//! `review/<name>/<version>` branch, is an *edit*: a review branch whose tip toolsmith did not
//! propose and whose `tools/<name>` differs from `main`'s. Generation validates the edit's
//! files, read from that commit by its id (what is validated is that commit, whatever the
//! branch does meanwhile), and [`Registry::propose_edit`] makes the proposal: toolsmith's
//! commit on `main` with those files, authored by the edit's author, put on the branch only if
//! the branch still points at the validated commit (a compare-and-swap). A branch moved
//! after that holds an edit again, which is validated again. The person's commit is kept under
//! `refs/toolsmith/edits/<candidate>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Signature};
use serde::Serialize;

use super::ledger::Kind;
use super::proposals::proposal_message;
use super::repo::{
    Proposal, REVIEW_PREFIX, Registry, RegistryError, Review, message, tag_name, tool_path,
    toolsmith_signature,
};
use super::versions;
use crate::package::manifest::{self, Manifest};

/// Where the person's edited commits are kept once proposed, by candidate.
pub const EDITS_PREFIX: &str = "refs/toolsmith/edits/";

/// A review branch holding a person's edit, not yet proposed by toolsmith.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditFound {
    /// `review/<name>/<version>`.
    pub branch: String,
    /// The tool.
    pub name: String,
    /// The version the branch names.
    pub version: String,
    /// The branch's tip: the commit to validate (40 hex digits).
    pub commit: String,
    /// The commit's author, `Name <email>`.
    pub author: String,
    /// The commit's subject line.
    pub subject: String,
}

/// What `toolsmith edit` prepared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Started {
    /// The review branch.
    pub branch: String,
    /// The tool.
    pub name: String,
    /// The version the branch names.
    pub version: String,
    /// The worktree the branch is checked out in.
    pub worktree: PathBuf,
}

/// `text` on one line: a commit's author and subject go into trailers and a proposal's body,
/// where a line break would start a line of git's choosing.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn invalid(name: &str, problem: String) -> RegistryError {
    RegistryError::Invalid {
        name: name.to_owned(),
        problem,
    }
}

impl Registry {
    /// Starts an edit of `name` as it is on `main`: the branch `review/<name>/<next version>`
    /// (an empty commit on `main`, which approves nothing) checked out in a new worktree under
    /// `worktrees`.
    pub fn start_edit(&self, name: &str, worktrees: &Path) -> Result<Started, RegistryError> {
        if !manifest::valid_name(name) {
            return Err(RegistryError::NoSuchTool(name.to_owned()));
        }
        let _turn = self.exclusive()?;
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        if self.subtree_id(&main_tree, &tool_path(name)).is_none() {
            return Err(RegistryError::NoSuchTool(name.to_owned()));
        }
        let current = self.manifest_in(&main_tree, name).ok_or_else(|| {
            invalid(
                name,
                format!("its manifest on main does not read: `toolsmith adopt {name}` first"),
            )
        })?;
        // The version an unchanged interface gets; a change that needs more is told so when
        // the edit is validated.
        let version = self.next_version(name, &current)?.version;
        let branch = format!("review/{name}/{version}");
        let sig = self.git("make a signature", toolsmith_signature())?;
        let msg = message(
            &format!("edit({name}): start {version}"),
            &[format!(
                "Commit your change to tools/{name}/ on this branch: toolsmith validates the \
                 commit in the sandbox and proposes it for review (`toolsmith show`, `toolsmith \
                 approve`)."
            )],
            &[],
        );
        let start = self.git(
            "write the edit's first commit",
            self.repo
                .commit(None, &sig, &sig, &msg, &main_tree, &[&main]),
        )?;
        let reference = self.git(
            &format!("create {branch}"),
            self.repo.reference(
                &format!("refs/heads/{branch}"),
                start,
                false,
                &format!("toolsmith: edit {name}"),
            ),
        )?;
        std::fs::create_dir_all(worktrees)
            .map_err(|e| invalid(name, format!("cannot create {}: {e}", worktrees.display())))?;
        let worktree = worktrees.join(format!("{name}-{version}"));
        let mut options = git2::WorktreeAddOptions::new();
        options.reference(Some(&reference));
        self.git(
            &format!("add the worktree {}", worktree.display()),
            self.repo
                .worktree(&format!("edit-{name}-{version}"), &worktree, Some(&options)),
        )?;
        Ok(Started {
            branch,
            name: name.to_owned(),
            version: version.to_string(),
            worktree,
        })
    }

    /// The review branches holding a person's edit: a tip toolsmith did not propose (not in
    /// the ledger) whose `tools/<name>` differs from `main`'s. Oldest branch name first.
    pub fn edits(&self) -> Result<Vec<EditFound>, RegistryError> {
        let known = self.known();
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let mut out = Vec::new();
        let branches = self.git("list branches", self.repo.branches(Some(BranchType::Local)))?;
        for (branch, _) in branches.flatten() {
            let Ok(full) = branch.get().name() else {
                continue;
            };
            let Some(rest) = full.strip_prefix(REVIEW_PREFIX) else {
                continue;
            };
            let Some((name, version)) = rest.rsplit_once('/') else {
                continue;
            };
            if !manifest::valid_name(name) || semver::Version::parse(version).is_err() {
                continue;
            }
            let Ok(tip) = branch.get().peel_to_commit() else {
                continue;
            };
            if known.contains(tip.id()) {
                continue;
            }
            let Ok(tree) = tip.tree() else {
                continue;
            };
            let path = tool_path(name);
            let edited = self.subtree_id(&tree, &path);
            if edited.is_none() || edited == self.subtree_id(&main_tree, &path) {
                // Nothing to validate: an edit just started, or a tool removed.
                continue;
            }
            let author = tip.author();
            out.push(EditFound {
                branch: format!("review/{rest}"),
                name: name.to_owned(),
                version: version.to_owned(),
                commit: tip.id().to_string(),
                author: one_line(&format!(
                    "{} <{}>",
                    String::from_utf8_lossy(author.name_bytes()),
                    String::from_utf8_lossy(author.email_bytes())
                )),
                subject: one_line(tip.summary().ok().flatten().unwrap_or_default()),
            });
        }
        out.sort_by(|a, b| a.branch.cmp(&b.branch));
        Ok(out)
    }

    /// The files of `edit`'s tool in its commit (read by the commit's id, never from a branch
    /// or a work tree); refused as `toolsmith adopt` refuses (links, submodules, `.git…`
    /// files, text that is not UTF-8).
    pub fn edit_files(&self, edit: &EditFound) -> Result<BTreeMap<String, String>, RegistryError> {
        let oid = self.git("read the edit", Oid::from_str(&edit.commit))?;
        let commit = self.git("read the edit", self.repo.find_commit(oid))?;
        let tree = self.git("read the edit", commit.tree())?;
        let sub = self
            .subtree_id(&tree, &tool_path(&edit.name))
            .ok_or_else(|| RegistryError::NoSuchTool(edit.name.clone()))?;
        self.tool_files(&edit.name, sub)
    }

    /// Proposes a validated edit: one commit on `main` holding `proposal`'s files (the edit's,
    /// with validation's record), authored by the edit's author, put on the edit's branch only
    /// while the branch still points at the commit that was validated; the person's commit is
    /// kept under [`EDITS_PREFIX`]. The version is the branch's, refused when it is not above
    /// `main`'s by what the change needs (the interface diff, a wider sandbox).
    pub fn propose_edit(
        &self,
        proposal: &Proposal,
        edit: &EditFound,
    ) -> Result<Review, RegistryError> {
        let _turn = self.exclusive()?;
        let refname = format!("refs/heads/{}", edit.branch);
        let validated = self.git("read the edit", Oid::from_str(&edit.commit))?;
        let tip = self.repo.refname_to_id(&refname).ok();
        if tip != Some(validated) {
            return Err(RegistryError::Conflict(format!(
                "{} moved since commit {} was validated: its new commit is validated instead",
                edit.branch,
                &edit.commit[..12.min(edit.commit.len())]
            )));
        }
        let name = edit.name.clone();
        let text = proposal
            .files
            .get(manifest::FILE_NAME)
            .ok_or_else(|| invalid(&name, "the edit has no tool.yaml".into()))?;
        let mut manifest = Manifest::parse(text, manifest::FILE_NAME)
            .map_err(|e| invalid(&name, e.to_string()))?;
        let version = semver::Version::parse(&edit.version)
            .map_err(|e| invalid(&name, format!("{}: {e}", edit.branch)))?;
        let tag = tag_name(&name, &edit.version);
        if self.repo.refname_to_id(&format!("refs/tags/{tag}")).is_ok() {
            return Err(RegistryError::TagExists(tag));
        }
        let main = self.main_commit()?;
        let base = self.git("read main", main.tree())?;
        let current = self.manifest_in(&base, &name);
        let bump = current
            .as_ref()
            .map(|old| versions::bump_manifest(old, &manifest));
        if let (Some(old), Some((level, reasons))) = (&current, &bump) {
            let least = level.apply(&old.version);
            if version < least {
                return Err(invalid(
                    &name,
                    format!(
                        "{} names version {version}, but the change is a {} one ({}): it \
                         needs {least} at least; commit it on review/{name}/{least} instead",
                        edit.branch,
                        level.as_str(),
                        if reasons.is_empty() {
                            "the interface is unchanged".to_owned()
                        } else {
                            reasons.join("; ")
                        }
                    ),
                ));
            }
        }
        manifest.version = version.clone();
        let tree = self.tree_with_proposal(&base, &name, proposal, &manifest)?;
        let subject = format!("tool({name}): edit {version}");
        let msg = proposal_message(&subject, &manifest, proposal, bump.as_ref());
        let edited = self.git("read the edit", self.repo.find_commit(validated))?;
        let original = edited.author();
        let author = self.git(
            "make the edit's author",
            Signature::new(
                &String::from_utf8_lossy(original.name_bytes()),
                &String::from_utf8_lossy(original.email_bytes()),
                &original.when(),
            ),
        )?;
        let committer = self.git("make a signature", toolsmith_signature())?;
        let commit = self.git(
            "write the proposal",
            self.repo
                .commit(None, &author, &committer, &msg, &tree, &[&main]),
        )?;
        // Kept before the branch moves, so the person's commit is never lost.
        self.git(
            "keep the edited commit",
            self.repo.reference(
                &format!("{EDITS_PREFIX}{}", proposal.candidate),
                validated,
                true,
                &format!("toolsmith: edit {} validated", edit.branch),
            ),
        )?;
        self.record(&[(Kind::Proposal, commit, refname.clone())])?;
        // Only if the branch is still what was validated: a commit made meanwhile stays.
        self.git(
            &format!("propose on {}", edit.branch),
            self.repo.reference_matching(
                &refname,
                commit,
                true,
                validated,
                &format!("toolsmith: propose {}", proposal.candidate),
            ),
        )?;
        Ok(Review {
            branch: edit.branch.clone(),
            name,
            version: version.to_string(),
            candidate: Some(proposal.candidate.clone()),
            commit: commit.to_string(),
            subject,
            behind_main: false,
            bump: bump.map(|(b, _)| b),
            reach: crate::sandbox::grants::reach_lines(&manifest.sandbox),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git};
    use super::*;

    /// Commits `script` as `tools/<name>/run.sh` on `branch` in `worktree`, as Ann; its id.
    fn commit_script(worktree: &Path, name: &str, script: &str) -> String {
        std::fs::write(worktree.join(format!("tools/{name}/run.sh")), script).expect("write");
        git(
            worktree,
            &[
                "-c",
                "user.name=Ann Editor",
                "-c",
                "user.email=ann@example.org",
                "commit",
                "-qam",
                "an edit\nwith a second line",
            ],
        );
        git(worktree, &["rev-parse", "HEAD"]).trim().to_owned()
    }

    fn proposal(registry: &Registry, edit: &EditFound) -> Proposal {
        let mut files = registry.edit_files(edit).expect("files");
        // What validation records, as the pipeline's staging holds it.
        let fresh = fixture::tool(&edit.name, &files["run.sh"]);
        files.insert("tool.yaml".into(), fresh["tool.yaml"].clone());
        Proposal {
            candidate: "c-e".into(),
            files,
            why: "edited".into(),
            trailers: vec![("Origin".into(), "edit".into())],
        }
    }

    #[test]
    fn an_edit_is_the_commit_validated_proposed_only_while_the_branch_is_that_commit() {
        let (dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let started = registry
            .start_edit("demo", &dir.path().join("edits"))
            .expect("start");
        assert_eq!(started.branch, "review/demo/1.0.1");
        // Started, nothing changed: no edit, and nothing the ledger vouches for.
        assert_eq!(registry.edits().expect("edits"), []);
        assert!(
            registry
                .approve("review/demo/1.0.1", "R <r@example.org>", None)
                .is_err()
        );
        let first = commit_script(&started.worktree, "demo", "#!/bin/sh\necho 2\n");
        let found = registry.edits().expect("edits");
        assert_eq!(found.len(), 1);
        let edit = found[0].clone();
        assert_eq!(edit.commit, first);
        assert_eq!(edit.author, "Ann Editor <ann@example.org>");
        assert_eq!(edit.subject, "an edit with a second line", "one line");
        let p = proposal(&registry, &edit);
        assert_eq!(p.files["run.sh"], "#!/bin/sh\necho 2\n");
        // Reapproval never trusts an edit: it is validated, not vouched for.
        let listed = registry.unvouched().expect("unvouched");
        assert!(
            listed
                .unvouched
                .iter()
                .any(|u| u.reference == "refs/heads/review/demo/1.0.1"
                    && u.refused.as_deref().is_some_and(|r| r.contains("edit"))),
            "{listed:?}"
        );
        registry.reapprove().expect("reapprove");
        assert_eq!(
            registry.edits().expect("edits"),
            std::slice::from_ref(&edit)
        );

        // The branch moves after validation: the proposal is refused, the new commit stays.
        let second = commit_script(&started.worktree, "demo", "#!/bin/sh\necho 3\n");
        let err = registry.propose_edit(&p, &edit).expect_err("moved");
        assert!(err.to_string().contains("moved since commit"), "{err}");
        assert_eq!(
            git(registry.root(), &["rev-parse", "review/demo/1.0.1"]).trim(),
            second
        );
        // The new commit is the edit now; proposed, it is toolsmith's commit authored by Ann,
        // on the same branch, and her commit is kept.
        let edit = registry.edits().expect("edits")[0].clone();
        assert_eq!(edit.commit, second);
        let review = registry
            .propose_edit(&proposal(&registry, &edit), &edit)
            .expect("propose");
        assert_eq!(review.branch, "review/demo/1.0.1");
        assert_eq!(
            git(
                registry.root(),
                &["log", "-1", "--format=%an", &review.commit]
            )
            .trim(),
            "Ann Editor"
        );
        assert_eq!(
            git(registry.root(), &["rev-parse", "refs/toolsmith/edits/c-e"]).trim(),
            second
        );
        assert_eq!(registry.edits().expect("edits"), [], "proposed: no edit");
        let landed = registry
            .approve("c-e", "R <r@example.org>", None)
            .expect("approve");
        assert_eq!(landed.version, "1.0.1");
        let on_main = git(registry.root(), &["show", "main:tools/demo/run.sh"]);
        assert_eq!(on_main, "#!/bin/sh\necho 3\n");
    }

    #[test]
    fn an_edit_whose_branch_names_too_low_a_version_is_refused_naming_the_right_one() {
        let (dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let started = registry
            .start_edit("demo", &dir.path().join("edits"))
            .expect("start");
        commit_script(&started.worktree, "demo", "#!/bin/sh\necho 2\n");
        let edit = registry.edits().expect("edits")[0].clone();
        let mut p = proposal(&registry, &edit);
        // A wider sandbox is a major change, more than the branch's patch.
        let mut m = Manifest::parse(&p.files["tool.yaml"], "tool.yaml").expect("manifest");
        m.sandbox.hosts = vec!["example.org:443".into()];
        p.files.insert("tool.yaml".into(), m.to_yaml());
        let err = registry.propose_edit(&p, &edit).expect_err("too low");
        assert!(err.to_string().contains("review/demo/2.0.0"), "{err}");
    }
}
