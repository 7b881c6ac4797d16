//! The landing journal: every move of `main` is written down
//! (`.git/toolsmith-landing.json`: old and new commit, the work-tree paths it brings along)
//! before the work tree changes and removed once `main` moved, so that a crash in between is
//! finished (when `main` moved) or undone (when it did not) by the next
//! [`Registry::reconcile`].

use git2::Oid;
use serde::Serialize;

use super::repo::{MAIN, Registry, RegistryError};

/// The journal of a move of `main` under way, inside the git directory.
pub(super) const JOURNAL: &str = "toolsmith-landing.json";

/// The journal of a move of `main`.
#[derive(Debug, Serialize, serde::Deserialize)]
struct Journal {
    old: String,
    new: String,
    paths: Vec<String>,
}

impl Registry {
    /// Moves `main` from `old` to `new`, bringing the work tree's `paths` along. Refused when
    /// those paths hold uncommitted changes; journaled so that a crash is finished or undone
    /// by [`Registry::reconcile`].
    pub(super) fn land(
        &self,
        old: Oid,
        new: Oid,
        paths: &[String],
        log: &str,
    ) -> Result<(), RegistryError> {
        let checked_out = self.main_is_checked_out();
        // A git lock file in the way (a git command at work, or one that died) would stop the
        // move half-way: refused before anything is written, naming it.
        if let Some(locks) = self.describe_git_locks(false) {
            return Err(RegistryError::Locked {
                path: self.root.clone(),
                what: "move main".into(),
                locks,
            });
        }
        if checked_out {
            self.check_clean(old, paths)?;
            let journal = Journal {
                old: old.to_string(),
                new: new.to_string(),
                paths: paths.to_vec(),
            };
            let file = self.repo.path().join(JOURNAL);
            let text = serde_json::to_string(&journal).unwrap_or_default();
            std::fs::write(&file, text).map_err(|source| RegistryError::Io {
                path: file.clone(),
                source,
            })?;
            self.checkout_paths(new, paths)?;
        }
        let moved = self.repo.reference_matching(MAIN, new, true, old, log);
        if let Err(e) = moved {
            if checked_out {
                // Put the work tree back as it was: main did not move.
                self.checkout_paths(old, paths)?;
                let _ = std::fs::remove_file(self.repo.path().join(JOURNAL));
            }
            return self.git("move main (it moved meanwhile; retry)", Err(e));
        }
        if checked_out {
            let _ = std::fs::remove_file(self.repo.path().join(JOURNAL));
        }
        Ok(())
    }

    /// Finishes or undoes the move of `main` a journal left by a crash records: the work
    /// tree's paths are made to hold `main` as it is (the new commit when `main` moved, the old
    /// one when it did not), and the journal goes. What was done, when there was a journal.
    pub(super) fn replay_journal(&self) -> Result<Option<String>, RegistryError> {
        let file = self.repo.path().join(JOURNAL);
        let Ok(text) = std::fs::read_to_string(&file) else {
            return Ok(None);
        };
        let mut done = None;
        if let Ok(journal) = serde_json::from_str::<Journal>(&text) {
            let main = self.main_commit()?.id().to_string();
            let target = if main == journal.new {
                done = Some(format!("finished moving main to {}", journal.new));
                &journal.new
            } else {
                done = Some(format!(
                    "undid an interrupted move of main to {} (main is {main})",
                    journal.new
                ));
                &main
            };
            let oid = self.git("read the journal", Oid::from_str(target))?;
            if self.main_is_checked_out() {
                self.checkout_paths(oid, &journal.paths)?;
            }
        }
        let _ = std::fs::remove_file(&file);
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git};
    use super::super::index;
    use super::*;

    const SCRIPT: &str = "#!/bin/sh\necho hello\n";

    /// A registry, `main`'s commit and a commit on top of it adding the tool `demo` (a proposal:
    /// written, not on `main`), with the paths a landing of it brings along.
    fn setup() -> (tempfile::TempDir, Registry, Oid, Oid, Vec<String>) {
        let (dir, registry) = fixture::registry();
        let old = registry.main_commit().expect("main").id();
        let review = fixture::propose(&registry, "c-1", "demo", SCRIPT);
        let new = Oid::from_str(&review.commit).expect("oid");
        let paths = vec!["tools/demo".to_owned(), index::FILE_NAME.to_owned()];
        (dir, registry, old, new, paths)
    }

    fn write_journal(registry: &Registry, old: Oid, new: Oid, paths: &[String]) {
        let journal = Journal {
            old: old.to_string(),
            new: new.to_string(),
            paths: paths.to_vec(),
        };
        std::fs::write(
            registry.repo.path().join(JOURNAL),
            serde_json::to_string(&journal).expect("json"),
        )
        .expect("write the journal");
    }

    fn status(registry: &Registry) -> String {
        git(registry.root(), &["status", "--porcelain"])
    }

    #[test]
    fn a_landing_moves_main_and_its_paths_and_leaves_no_journal() {
        let (_dir, registry, old, new, paths) = setup();
        registry.land(old, new, &paths, "test: land").expect("land");
        assert_eq!(registry.main_commit().expect("main").id(), new);
        let script = registry.root().join("tools/demo/run.sh");
        assert_eq!(std::fs::read_to_string(&script).expect("run.sh"), SCRIPT);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&script).expect("stat").permissions(),
        );
        assert_eq!(mode & 0o111, 0o111, "the entry point is executable");
        assert!(!registry.repo.path().join(JOURNAL).exists());
        assert_eq!(status(&registry), "", "work tree and index hold main");
    }

    #[test]
    fn a_landing_over_uncommitted_changes_is_refused_and_moves_nothing() {
        let (_dir, registry, old, new, paths) = setup();
        let notes = registry.root().join("tools/demo/notes.txt");
        std::fs::create_dir_all(notes.parent().expect("dir")).expect("mkdir");
        std::fs::write(&notes, "mine\n").expect("write");
        match registry.land(old, new, &paths, "test: land") {
            Err(RegistryError::Dirty { paths, .. }) => {
                assert_eq!(paths, "tools/demo/notes.txt")
            }
            other => panic!("landed over a user's file: {other:?}"),
        }
        assert_eq!(registry.main_commit().expect("main").id(), old);
        assert_eq!(std::fs::read_to_string(&notes).expect("kept"), "mine\n");
        assert!(!registry.repo.path().join(JOURNAL).exists());
    }

    #[test]
    fn a_landing_on_a_main_that_moved_meanwhile_puts_the_work_tree_back() {
        let (_dir, registry, old, new, paths) = setup();
        // Someone else moves main first (a commit of the same tree: the paths stay clean).
        let main = registry.main_commit().expect("main");
        let sig = git2::Signature::now("User", "user@example.org").expect("sig");
        let tree = main.tree().expect("tree");
        let other = registry
            .repo
            .commit(Some(MAIN), &sig, &sig, "elsewhere", &tree, &[&main])
            .expect("commit");
        let err = registry
            .land(old, new, &paths, "test: land")
            .expect_err("main moved");
        assert!(err.to_string().contains("moved meanwhile"), "{err}");
        assert_eq!(registry.main_commit().expect("main").id(), other);
        assert!(!registry.root().join("tools/demo").exists());
        assert!(!registry.repo.path().join(JOURNAL).exists());
        assert_eq!(status(&registry), "");
    }

    #[test]
    fn a_landing_interrupted_after_main_moved_is_finished() {
        let (_dir, registry, old, new, paths) = setup();
        // Killed after the journal and the move of main, before the paths were checked out.
        write_journal(&registry, old, new, &paths);
        registry
            .repo
            .reference_matching(MAIN, new, true, old, "test: moved")
            .expect("move main");
        assert!(!registry.root().join("tools/demo").exists());

        let done = registry.reconcile().expect("reconcile");
        assert_eq!(
            done.journal.as_deref(),
            Some(format!("finished moving main to {new}").as_str())
        );
        assert_eq!(
            std::fs::read_to_string(registry.root().join("tools/demo/run.sh")).expect("run.sh"),
            SCRIPT
        );
        assert!(!registry.repo.path().join(JOURNAL).exists());
        assert_eq!(status(&registry), "", "work tree and index hold main");
        // Nothing left to do the next time.
        assert_eq!(registry.reconcile().expect("again").journal, None);
    }

    #[test]
    fn a_landing_interrupted_before_main_moved_is_undone() {
        let (_dir, registry, old, new, paths) = setup();
        // Killed after the journal and the checkout of the paths, before main moved.
        write_journal(&registry, old, new, &paths);
        registry.checkout_paths(new, &paths).expect("checkout");
        assert!(registry.root().join("tools/demo/run.sh").exists());

        let done = registry.reconcile().expect("reconcile");
        let said = done.journal.expect("the journal was read");
        assert!(
            said.starts_with("undid an interrupted move of main"),
            "{said}"
        );
        assert_eq!(registry.main_commit().expect("main").id(), old);
        assert!(!registry.root().join("tools/demo").exists());
        assert!(!registry.repo.path().join(JOURNAL).exists());
        assert_eq!(status(&registry), "", "work tree and index hold main");
        assert!(done.landed.is_empty(), "{:?}", done.landed);
    }

    #[test]
    fn an_unreadable_journal_is_dropped_and_the_work_tree_left_alone() {
        let (_dir, registry, old, ..) = setup();
        std::fs::write(registry.repo.path().join(JOURNAL), "{ half").expect("write");
        assert_eq!(registry.replay_journal().expect("replay"), None);
        assert!(!registry.repo.path().join(JOURNAL).exists());
        assert_eq!(registry.main_commit().expect("main").id(), old);
        assert_eq!(status(&registry), "");
    }

    #[test]
    fn a_read_beside_a_journal_it_cannot_replay_runs_only_what_was_approved() {
        let (dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-0", "zero", "#!/bin/sh\necho 0\n");
        let old = registry.main_commit().expect("main").id();
        let review = fixture::propose(&registry, "c-1", "demo", SCRIPT);
        let new = Oid::from_str(&review.commit).expect("oid");
        let paths = vec!["tools/demo".to_owned(), index::FILE_NAME.to_owned()];
        // A move of main that stopped half-way (its files written, main not moved), and a git
        // lock left beside it.
        write_journal(&registry, old, new, &paths);
        registry.checkout_paths(new, &paths).expect("half-way");
        let lock = registry.repo.path().join("index.lock");
        std::fs::write(&lock, b"").expect("lock");
        let reader = Registry::open(registry.root(), &fixture::state(dir.path())).expect("open");
        let settled = reader.reconcile_if_free();
        let notes = settled.notes.join("\n");
        assert!(
            notes.contains("read as committed") && notes.contains(&lock.display().to_string()),
            "{notes}"
        );
        assert!(
            registry.repo.path().join(JOURNAL).exists(),
            "left for a change"
        );
        reader.runnable("zero").expect("the approved tool runs");
        assert!(matches!(
            reader.runnable("demo"),
            Err(RegistryError::NoSuchTool(_))
        ));
        let report = reader.verify().expect("verify");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        // With the lock gone, the next change undoes the half-done move first.
        std::fs::remove_file(&lock).expect("rm");
        let done = registry.reconcile().expect("reconcile");
        assert!(done.journal.is_some_and(|j| j.starts_with("undid")));
        assert!(!registry.root().join("tools/demo").exists());
    }
}
