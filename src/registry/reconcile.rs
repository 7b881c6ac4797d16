//! Reconciling: what a crash interrupted or plain git did, made sense of whenever the registry
//! is opened — the landing journal replayed, and proposals found on `main` (a review branch
//! merged with git, an approval interrupted after `main` moved) tagged as approvals, only
//! those toolsmith proposed or received.

use git2::{Commit, Oid};
use serde::Serialize;

use super::proposals::{Landed, Review};
use super::repo::{MAIN, Registry, RegistryError, tool_path, trailer, trailers};

/// What reconciling found and did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Reconciled {
    /// Proposals found on `main` (merged with git, or an approval interrupted): tagged, their
    /// branches removed.
    pub landed: Vec<Landed>,
    /// Whether an interrupted move of `main` was finished or undone.
    pub journal: Option<String>,
}

impl Registry {
    /// Finishes or undoes an interrupted move of `main`, and recognises proposals that are on
    /// `main` already (merged with git, or an approval interrupted after `main` moved): each is
    /// tagged and its branch removed.
    pub fn reconcile(&self) -> Result<Reconciled, RegistryError> {
        let _turn = self.exclusive()?;
        self.reconcile_locked()
    }

    /// [`Registry::reconcile`], for a caller that holds [`Registry::exclusive`].
    pub(super) fn reconcile_locked(&self) -> Result<Reconciled, RegistryError> {
        let mut out = Reconciled {
            journal: self.replay_journal()?,
            ..Reconciled::default()
        };
        self.start_ledger()?;
        let known = self.known();
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        for review in self.reviews()? {
            let oid = self.git("read a proposal", Oid::from_str(&review.commit))?;
            if !known.contains(oid) {
                // A branch made with git: merging it approves nothing (the tool on main is
                // refused until its files are reviewed), and it stays for `toolsmith reject`.
                continue;
            }
            let merged = oid == main.id()
                || self
                    .repo
                    .graph_descendant_of(main.id(), oid)
                    .unwrap_or(false);
            if merged {
                let by = self.merger(&main, oid);
                out.landed
                    .push(self.finish_landing(&review, oid, &by, "git")?);
                continue;
            }
            // An approval interrupted after main moved: the same tool tree and version.
            let proposed = self.git("read a proposal", self.repo.find_commit(oid))?;
            let proposed_tree = self.git("read a proposal", proposed.tree())?;
            let path = tool_path(&review.name);
            let same_tree = self.subtree_id(&proposed_tree, &path).is_some()
                && self.subtree_id(&proposed_tree, &path) == self.subtree_id(&main_tree, &path);
            if same_tree && let Some((commit, approver)) = self.landing_commit(&main, &review) {
                out.landed
                    .push(self.finish_landing(&review, commit, &approver, "toolsmith")?);
            }
        }
        Ok(out)
    }

    /// Who merged `oid` into `main`: from `main`'s reflog (a fast-forward makes no commit of
    /// its own), else the committer of the first commit on `main` that contains it.
    pub(super) fn merger(&self, main: &Commit<'_>, oid: Oid) -> String {
        if let Ok(reflog) = self.repo.reflog(MAIN) {
            for entry in reflog.iter() {
                let new = entry.id_new();
                let contains =
                    new == oid || self.repo.graph_descendant_of(new, oid).unwrap_or(false);
                let old_contains = entry.id_old() == oid
                    || self
                        .repo
                        .graph_descendant_of(entry.id_old(), oid)
                        .unwrap_or(false);
                if contains && !old_contains {
                    let c = entry.committer();
                    if let (Ok(n), Ok(e)) = (c.name(), c.email()) {
                        return format!("{n} <{e}>");
                    }
                }
            }
        }
        let mut current = main.clone();
        loop {
            let Ok(parent) = current.parent(0) else {
                break;
            };
            let contains = parent.id() == oid
                || self
                    .repo
                    .graph_descendant_of(parent.id(), oid)
                    .unwrap_or(false);
            if !contains {
                break;
            }
            current = parent;
        }
        let c = current.committer();
        match (c.name(), c.email()) {
            (Ok(n), Ok(e)) => format!("{n} <{e}>"),
            _ => self.approver(),
        }
    }

    /// The commit on `main` whose message carries this proposal's `Candidate:`, with its
    /// `Approved-by:`.
    pub(super) fn landing_commit(
        &self,
        main: &Commit<'_>,
        review: &Review,
    ) -> Option<(Oid, String)> {
        self.landing_of(main, review.candidate.as_deref()?)
    }

    /// Where a candidate landed on `main`: the commit carrying its `Candidate:` trailer (the
    /// newest 10,000 commits are looked at), with its `Approved-by:`.
    pub fn landed_candidate(&self, candidate: &str) -> Option<(String, String)> {
        let main = self.main_commit().ok()?;
        self.landing_of(&main, candidate)
            .map(|(oid, by)| (oid.to_string(), by))
    }

    pub(super) fn landing_of(&self, main: &Commit<'_>, candidate: &str) -> Option<(Oid, String)> {
        let mut walk = self.repo.revwalk().ok()?;
        walk.push(main.id()).ok()?;
        walk.simplify_first_parent().ok()?;
        for oid in walk.take(10_000).flatten() {
            let commit = self.repo.find_commit(oid).ok()?;
            let t = trailers(commit.message().unwrap_or_default());
            if trailer(&t, "Candidate") == Some(candidate) {
                let by = trailer(&t, "Approved-by").unwrap_or("unknown").to_owned();
                return Some((oid, by));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git, has_ref};
    use super::*;

    #[test]
    fn a_review_branch_merged_with_git_is_an_approval() {
        let (_dir, registry) = fixture::registry();
        registry.reconcile().expect("start the ledger");
        let review = fixture::propose(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        git(
            registry.root(),
            &["merge", "-q", "--ff-only", &review.branch],
        );
        let done = registry.reconcile().expect("reconcile");
        assert_eq!(done.journal, None);
        assert_eq!(done.landed.len(), 1, "{:?}", done.landed);
        let landed = &done.landed[0];
        assert_eq!(landed.via, "git");
        assert_eq!(landed.tag, "demo/v1.0.0");
        assert_eq!(landed.commit, review.commit);
        assert_eq!(landed.approved_by, "User <user@example.org>");
        assert!(!has_ref(
            &registry,
            &format!("refs/heads/{}", review.branch)
        ));
        registry.runnable("demo").expect("approved, it runs");
        assert!(registry.reconcile().expect("again").landed.is_empty());
    }

    #[test]
    fn a_branch_made_with_git_and_merged_approves_nothing() {
        let (_dir, registry) = fixture::registry();
        registry.reconcile().expect("start the ledger");
        let root = registry.root();
        git(root, &["checkout", "-q", "-b", "review/hand/1.0.0"]);
        let files = fixture::tool("hand", "#!/bin/sh\necho hand\n");
        std::fs::create_dir_all(root.join("tools/hand")).expect("mkdir");
        for (name, text) in &files {
            std::fs::write(root.join("tools/hand").join(name), text).expect("write");
        }
        git(root, &["add", "tools/hand"]);
        git(root, &["commit", "-q", "-m", "tool(hand): add 1.0.0"]);
        git(root, &["checkout", "-q", "main"]);
        git(root, &["merge", "-q", "--ff-only", "review/hand/1.0.0"]);
        let done = registry.reconcile().expect("reconcile");
        assert!(done.landed.is_empty(), "{:?}", done.landed);
        assert!(!has_ref(&registry, "refs/tags/hand/v1.0.0"));
        assert!(
            has_ref(&registry, "refs/heads/review/hand/1.0.0"),
            "kept for reject"
        );
        assert!(registry.runnable("hand").is_err());
    }

    #[test]
    fn an_approval_interrupted_after_main_moved_is_tagged() {
        let (_dir, registry) = fixture::registry();
        registry.reconcile().expect("start the ledger");
        fixture::propose(&registry, "c-1", "one", "#!/bin/sh\necho 1\n");
        fixture::approved(&registry, "c-0", "zero", "#!/bin/sh\necho 0\n");
        // Killed between the move of main and the tag: main holds the re-applied commit (the
        // proposal was behind main), the tag is missing and the branch is still there.
        let review = registry.review("c-1").expect("review");
        let main = registry.main_commit().expect("main");
        let proposed = registry
            .repo
            .find_commit(Oid::from_str(&review.commit).expect("oid"))
            .expect("proposal");
        let path = tool_path("one");
        let tool = registry.subtree_id(&proposed.tree().expect("tree"), &path);
        let tree = registry
            .with_tool(&main.tree().expect("tree"), "one", tool, None)
            .expect("tree");
        let tree = registry.repo.find_tree(tree).expect("tree");
        let sig = git2::Signature::now("Reviewer", "r@example.org").expect("sig");
        let message = format!(
            "{}\n\nCandidate: c-1\nApproved-by: Reviewer <r@example.org>\n",
            review.subject
        );
        let commit = registry
            .repo
            .commit(None, &sig, &sig, &message, &tree, &[&main])
            .expect("commit");
        registry
            .land(main.id(), commit, &[path], "test: approve")
            .expect("land");

        let done = registry.reconcile().expect("reconcile");
        assert_eq!(done.landed.len(), 1, "{:?}", done.landed);
        let landed = &done.landed[0];
        assert_eq!(landed.via, "toolsmith");
        assert_eq!(landed.commit, commit.to_string());
        assert_eq!(landed.approved_by, "Reviewer <r@example.org>");
        assert!(has_ref(&registry, "refs/tags/one/v1.0.0"));
        assert!(!has_ref(&registry, "refs/heads/review/one/1.0.0"));
        assert_eq!(
            registry.landed_candidate("c-1"),
            Some((commit.to_string(), "Reviewer <r@example.org>".to_owned()))
        );
    }
}
