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
