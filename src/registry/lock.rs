//! Taking turns at changing the registry: toolsmith processes (the CLI, the daemon, the MCP
//! server) hold `.git/toolsmith.lock` (an flock, released by the kernel however a holder
//! dies) for one change each; a marker left by a holder that died mid-change makes the next
//! one clear the git lock files it may have left.

use std::path::PathBuf;

use super::repo::{Registry, RegistryError};

/// The lock toolsmith processes take turns on, inside the git directory.
pub(super) const LOCK: &str = "toolsmith.lock";

/// Present in the git directory while a toolsmith process holds [`Registry::exclusive`]: found
/// by the next holder, it means the last one died mid-change.
pub(super) const BUSY: &str = "toolsmith-busy";

/// A turn at changing the registry; dropping it ends the turn.
pub(super) struct Turn {
    _flock: nix::fcntl::Flock<std::fs::File>,
    marker: PathBuf,
}

impl Drop for Turn {
    fn drop(&mut self) {
        // Before the flock is released (fields drop after this): the next holder must not see
        // a marker of a turn that ended well.
        let _ = std::fs::remove_file(&self.marker);
    }
}
/// How old a git lock file must be, with no toolsmith at work, to be taken as left by a crash.
pub(super) const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(3);

impl Registry {
    /// Holds the registry for one change: toolsmith processes (the CLI and the daemon) take
    /// turns; the kernel releases the lock when a holder dies, however it dies. A holder that
    /// died mid-change leaves the [`BUSY`] marker, and only then are the git lock files it may
    /// have left looked for (a walk of the refs, too costly for every command).
    pub(super) fn exclusive(&self) -> Result<Turn, RegistryError> {
        let flock = self.flock()?;
        let marker = self.repo.path().join(BUSY);
        if marker.exists() {
            self.clear_stale_locks();
        }
        if let Err(source) = std::fs::write(&marker, b"") {
            return Err(RegistryError::Io {
                path: marker,
                source,
            });
        }
        Ok(Turn {
            _flock: flock,
            marker,
        })
    }

    pub(super) fn flock(&self) -> Result<nix::fcntl::Flock<std::fs::File>, RegistryError> {
        let path = self.repo.path().join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| RegistryError::Io {
                path: path.clone(),
                source,
            })?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, errno)| {
            RegistryError::Io {
                path,
                source: std::io::Error::from(errno),
            }
        })
    }

    /// Removes git lock files a killed toolsmith left behind. Held under [`Self::exclusive`],
    /// so no other toolsmith writes; a lock younger than [`STALE_LOCK`] may be a git command
    /// of the user's at work, and is given that long to go away first.
    pub(super) fn clear_stale_locks(&self) {
        let git_dir = self.repo.path().to_owned();
        let mut locks = Vec::new();
        for name in ["HEAD.lock", "packed-refs.lock", "index.lock"] {
            let p = git_dir.join(name);
            if p.exists() {
                locks.push(p);
            }
        }
        let mut stack = vec![git_dir.join("refs")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(path),
                    Ok(_) if path.extension().is_some_and(|e| e == "lock") => locks.push(path),
                    _ => {}
                }
            }
        }
        for lock in locks {
            let age = std::fs::metadata(&lock)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .unwrap_or(STALE_LOCK);
            if age < STALE_LOCK {
                std::thread::sleep(STALE_LOCK - age);
            }
            if lock.exists() {
                tracing::warn!("removing {}, left by an interrupted change", lock.display());
                let _ = std::fs::remove_file(&lock);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::super::fixture;
    use super::*;

    /// Whether another process could take the lock now (a non-blocking try on its own open
    /// file, as a second toolsmith would hold it).
    fn free(registry: &Registry) -> bool {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(registry.repo.path().join(LOCK))
            .expect("open the lock");
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok()
    }

    #[test]
    fn a_turn_holds_the_lock_and_its_marker_until_it_ends() {
        let (_dir, registry) = fixture::registry();
        let marker = registry.repo.path().join(BUSY);
        let turn = registry.exclusive().expect("turn");
        assert!(
            !free(&registry),
            "a second holder is refused while the turn lasts"
        );
        assert!(marker.exists());
        drop(turn);
        assert!(!marker.exists(), "a turn that ended well leaves no marker");
        assert!(free(&registry));
    }

    #[test]
    fn a_second_holder_waits_for_the_first() {
        let (dir, registry) = fixture::registry();
        let root = registry.root().to_owned();
        let turn = registry.exclusive().expect("first turn");
        let released = Arc::new(AtomicBool::new(false));
        let (trying, tried) = std::sync::mpsc::channel();
        let second = std::thread::spawn({
            let released = released.clone();
            move || {
                let other = Registry::open(&root).expect("open again");
                trying.send(()).expect("send");
                let _turn = other.exclusive().expect("second turn");
                released.load(Ordering::SeqCst)
            }
        });
        tried.recv().expect("the second holder started");
        // Give it time to block on the lock (not an assertion: it must wait however long).
        std::thread::sleep(std::time::Duration::from_millis(50));
        released.store(true, Ordering::SeqCst);
        drop(turn);
        assert!(
            second.join().expect("second holder"),
            "the second holder had its turn only after the first ended"
        );
        drop(dir);
    }

    /// Sets a file's modification time `secs` seconds into the past.
    fn age(path: &std::path::Path, secs: u64) {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open");
        file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(secs))
            .expect("set mtime");
    }

    #[test]
    fn git_locks_left_by_a_holder_that_died_are_removed() {
        let (_dir, registry) = fixture::registry();
        let git_dir = registry.repo.path().to_owned();
        // A holder died mid-change: its marker, and the git lock files it left.
        std::fs::write(git_dir.join(BUSY), b"").expect("marker");
        let left = [
            git_dir.join("index.lock"),
            git_dir.join("refs/heads/main.lock"),
        ];
        for lock in &left {
            std::fs::write(lock, b"").expect("lock");
            age(lock, 60);
        }
        let turn = registry.exclusive().expect("turn");
        for lock in &left {
            assert!(!lock.exists(), "{} left behind", lock.display());
        }
        drop(turn);
        // With them gone, git can move main again.
        let main = registry.main_commit().expect("main");
        let sig = git2::Signature::now("User", "user@example.org").expect("sig");
        let tree = main.tree().expect("tree");
        registry
            .repo
            .commit(Some("refs/heads/main"), &sig, &sig, "next", &tree, &[&main])
            .expect("main moves");
    }

    #[test]
    fn git_locks_are_left_alone_when_no_holder_died() {
        let (_dir, registry) = fixture::registry();
        // A git command of the user's, at work (or a lock of theirs): no toolsmith died.
        let lock = registry.repo.path().join("refs/heads/main.lock");
        std::fs::write(&lock, b"").expect("lock");
        age(&lock, 60);
        drop(registry.exclusive().expect("turn"));
        assert!(lock.exists());
    }
}
