//! Taking turns at changing the registry: toolsmith processes (the CLI, the daemon, the MCP
//! server) hold `.git/toolsmith.lock` (an flock, released by the kernel however a holder
//! dies) for one change each; a marker left by a holder that died mid-change makes the next
//! one clear the git lock files it may have left.
//!
//! Only changes take turns. A change waits [`TURN_WAIT`] for the turn, then says who holds it
//! and since when. A read (`run`, `verify`, `tools`, MCP) never waits and never needs to write:
//! it reconciles only when the turn is free and the git directory writable
//! ([`Registry::reconcile_if_free`]), and otherwise reads what is committed — which runs only
//! what was approved, whatever state a change was left in, since a tool runs only when its
//! files on `main`, on disk and in its version's tag are the same.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::reconcile::Reconciled;
use super::repo::{Registry, RegistryError};

/// The lock toolsmith processes take turns on, inside the git directory.
pub(super) const LOCK: &str = "toolsmith.lock";

/// Present in the git directory while a toolsmith process holds [`Registry::exclusive`]: found
/// by the next holder, it means the last one died mid-change. It holds the holder's process id
/// and command, for whoever waits.
pub(super) const BUSY: &str = "toolsmith-busy";

/// How long a change waits for another toolsmith process's turn before saying why it cannot
/// proceed.
pub(super) const TURN_WAIT: Duration = Duration::from_secs(10);

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
pub(super) const STALE_LOCK: Duration = Duration::from_secs(3);

/// What a read found when it looked at reconciling: what was done, and why it read the
/// registry as committed instead, when it did.
#[derive(Debug, Clone, Default)]
pub struct Settled {
    /// What reconciling found and did (nothing, when it did not reconcile).
    pub reconciled: Reconciled,
    /// Why the registry was read as committed, or a lock a change would stop at: each says
    /// what, where and what to do.
    pub notes: Vec<String>,
}

/// A duration as a person reads it.
fn age_text(age: Duration) -> String {
    let s = age.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

/// How long ago `path` was last modified.
fn age_of(path: &Path) -> Option<Duration> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
}

/// Whether an error means the directory cannot be written (a read-only mount, permissions).
fn cannot_write(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM)
    )
}

impl Registry {
    /// Holds the registry for one change: toolsmith processes (the CLI and the daemon) take
    /// turns; the kernel releases the lock when a holder dies, however it dies. A holder that
    /// died mid-change leaves the [`BUSY`] marker, and only then are the git lock files it may
    /// have left looked for (a walk of the refs, too costly for every command). Waits
    /// [`TURN_WAIT`] for another holder, then says who it is.
    pub(super) fn exclusive(&self) -> Result<Turn, RegistryError> {
        let flock = self.flock_within(TURN_WAIT)?;
        self.start_turn(flock)
    }

    /// Marks the turn taken (the marker names this process), clearing what a holder that died
    /// left first.
    fn start_turn(&self, flock: nix::fcntl::Flock<std::fs::File>) -> Result<Turn, RegistryError> {
        let marker = self.repo.path().join(BUSY);
        if marker.exists() {
            self.clear_stale_locks();
        }
        let command: Vec<String> = std::env::args().take(4).collect();
        let text = format!("{} {}\n", std::process::id(), command.join(" "));
        if let Err(source) = std::fs::write(&marker, text) {
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

    /// The turn, when it is free now and the git directory can be written: `Ok(None)` when
    /// another process holds it, `Err` (why, for a note) when the registry cannot be written.
    fn try_turn(&self) -> Result<Option<Turn>, String> {
        let path = self.repo.path().join(LOCK);
        let file = match self.open_lock(&path) {
            Ok(f) => f,
            Err(e) if cannot_write(&e) => {
                return Err(format!(
                    "the registry's git directory {} cannot be written ({e}): it was read as \
                     committed, and nothing a crash or plain git left was reconciled; a change \
                     (approve, sync) needs it writable",
                    self.repo.path().display()
                ));
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(flock) => match self.start_turn(flock) {
                Ok(turn) => Ok(Some(turn)),
                Err(RegistryError::Io { source, path }) if cannot_write(&source) => Err(format!(
                    "{} cannot be written ({source}): the registry was read as committed",
                    path.display()
                )),
                Err(e) => Err(e.to_string()),
            },
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, errno)) => Err(format!("{}: {errno}", path.display())),
        }
    }

    /// Reconciles (see [`Registry::reconcile`]) when no other toolsmith process holds the
    /// registry and its git directory can be written; otherwise changes nothing and reads what
    /// is committed. Never waits and never fails: for reads (`run`, `verify`, `tools`, MCP),
    /// which must work beside a stale lock and on a read-only registry. The notes say why
    /// nothing was reconciled, and name git lock files a change would stop at.
    pub fn reconcile_if_free(&self) -> Settled {
        let mut settled = Settled::default();
        match self.try_turn() {
            Ok(Some(turn)) => {
                match self.reconcile_locked() {
                    Ok(r) => settled.reconciled = r,
                    Err(e) => settled.notes.push(format!(
                        "the registry was read as committed: reconciling it failed ({e})"
                    )),
                }
                drop(turn);
            }
            // Another process is changing it, and reconciles what it leaves.
            Ok(None) => {}
            Err(note) => settled.notes.push(note),
        }
        if let Some(locks) = self.describe_git_locks(false) {
            // Only when it was not named already.
            if !settled.notes.iter().any(|n| n.contains(&locks)) {
                settled
                    .notes
                    .push(format!("a change to the registry would stop here: {locks}"));
            }
        }
        settled
    }

    fn open_lock(&self, path: &Path) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
    }

    /// The turn's flock, waiting at most `wait` for another holder (blocking in a thread of
    /// its own, so that the wait ends without polling; one that outlives the wait takes the
    /// lock and lets go of it at once).
    fn flock_within(
        &self,
        wait: Duration,
    ) -> Result<nix::fcntl::Flock<std::fs::File>, RegistryError> {
        use nix::fcntl::{Flock, FlockArg};
        let path = self.repo.path().join(LOCK);
        let io = |source: std::io::Error| RegistryError::Io {
            path: path.clone(),
            source,
        };
        let file = self.open_lock(&path).map_err(io)?;
        let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(flock) => return Ok(flock),
            Err((file, nix::errno::Errno::EWOULDBLOCK)) => file,
            Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e));
        });
        match rx.recv_timeout(wait) {
            Ok(Ok(flock)) => Ok(flock),
            Ok(Err(errno)) => Err(io(std::io::Error::from(errno))),
            Err(_) => Err(RegistryError::Busy {
                path: path.clone(),
                holder: self.holder(wait),
            }),
        }
    }

    /// Who holds the turn, since when, and what to do (from the [`BUSY`] marker).
    fn holder(&self, waited: Duration) -> String {
        let marker = self.repo.path().join(BUSY);
        let who = std::fs::read_to_string(&marker).ok().and_then(|text| {
            let text = text.trim().to_owned();
            let (pid, command) = text.split_once(' ').unwrap_or((text.as_str(), ""));
            let pid: u32 = pid.parse().ok()?;
            Some((pid, command.to_owned()))
        });
        let since = age_of(&marker).map(age_text);
        match who {
            Some((pid, command)) => format!(
                "held by toolsmith process {pid} (`{command}`){}; waited {}: retry when it is \
                 done, or stop it (`kill {pid}`) if it is stuck",
                since.map(|s| format!(" for {s}")).unwrap_or_default(),
                age_text(waited)
            ),
            None => format!(
                "held by another toolsmith process (the daemon or a command reading the \
                 registry); waited {}: retry in a moment (`fuser {}` shows who holds it)",
                age_text(waited),
                self.repo.path().join(LOCK).display()
            ),
        }
    }

    /// git's lock files in the registry's git directory (`HEAD.lock`, `packed-refs.lock`,
    /// `index.lock`, `config.lock`, `main`'s); with `every_ref`, any ref's too (a walk of the
    /// refs: for a change that failed on one, or a holder that died, not for every read).
    pub(super) fn git_locks(&self, every_ref: bool) -> Vec<PathBuf> {
        let git_dir = self.repo.path().to_owned();
        let mut names = vec!["HEAD.lock", "packed-refs.lock", "index.lock", "config.lock"];
        if !every_ref {
            // The walk below finds it otherwise.
            names.push("refs/heads/main.lock");
        }
        let mut locks: Vec<PathBuf> = names
            .into_iter()
            .map(|name| git_dir.join(name))
            .filter(|p| p.exists())
            .collect();
        if !every_ref {
            return locks;
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
        locks
    }

    /// Each git lock file (see [`Registry::git_locks`]) with its age and how to clear it;
    /// `None` when there is none.
    pub(super) fn describe_git_locks(&self, every_ref: bool) -> Option<String> {
        let locks = self.git_locks(every_ref);
        if locks.is_empty() {
            return None;
        }
        let each: Vec<String> = locks
            .iter()
            .map(|lock| match age_of(lock) {
                Some(age) => format!("{} exists (made {} ago)", lock.display(), age_text(age)),
                None => format!("{} exists", lock.display()),
            })
            .collect();
        let rm: Vec<String> = locks.iter().map(|l| l.display().to_string()).collect();
        Some(format!(
            "{}: git's lock, left by a git command at work or by one (or a toolsmith change) \
             that was interrupted; if no git command is running in {}, remove it (`rm {}`) and \
             retry",
            each.join(", "),
            self.root.display(),
            rm.join(" ")
        ))
    }

    /// Removes git lock files a killed toolsmith left behind. Held under [`Self::exclusive`],
    /// so no other toolsmith writes; a lock younger than [`STALE_LOCK`] may be a git command
    /// of the user's at work, and is given that long to go away first.
    pub(super) fn clear_stale_locks(&self) {
        for lock in self.git_locks(true) {
            let age = age_of(&lock).unwrap_or(STALE_LOCK);
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
        let state = fixture::state(dir.path());
        let turn = registry.exclusive().expect("first turn");
        let released = Arc::new(AtomicBool::new(false));
        let (trying, tried) = std::sync::mpsc::channel();
        let second = std::thread::spawn({
            let released = released.clone();
            move || {
                let other = Registry::open(&root, &state).expect("open again");
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

    #[test]
    fn a_change_waits_briefly_then_names_who_holds_the_turn() {
        let (dir, registry) = fixture::registry();
        let other = Registry::open(registry.root(), &fixture::state(dir.path())).expect("open");
        let _turn = registry.exclusive().expect("turn");
        match other.flock_within(std::time::Duration::from_millis(50)) {
            Err(RegistryError::Busy { path, holder }) => {
                assert_eq!(path, registry.repo.path().join(LOCK));
                assert!(
                    holder.contains(&format!("toolsmith process {}", std::process::id()))
                        && holder.contains(&format!("kill {}", std::process::id())),
                    "{holder}"
                );
            }
            other => panic!("took a held turn: {}", other.is_ok()),
        }
    }

    #[test]
    fn a_read_never_waits_for_the_turn_and_names_a_stale_git_lock() {
        let (dir, registry) = fixture::registry();
        let other = Registry::open(registry.root(), &fixture::state(dir.path())).expect("open");
        let turn = registry.exclusive().expect("turn");
        // Held elsewhere: the read goes on, reconciling nothing, with nothing to say.
        let settled = other.reconcile_if_free();
        assert!(settled.notes.is_empty(), "{:?}", settled.notes);
        drop(turn);
        let lock = registry.repo.path().join("index.lock");
        std::fs::write(&lock, b"").expect("lock");
        age(&lock, 180);
        let settled = other.reconcile_if_free();
        let notes = settled.notes.join("\n");
        assert!(
            notes.contains(&format!("{} exists (made 3 min ago)", lock.display()))
                && notes.contains(&format!("rm {}", lock.display())),
            "{notes}"
        );
        assert!(lock.exists(), "a read removes nothing");
    }
}
