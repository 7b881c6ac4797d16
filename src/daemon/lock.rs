//! One daemon per state directory: an exclusive `flock` on a file holding the owner's pid.
//!
//! `flock` is released by the kernel when the process dies, however it dies, so a crash never
//! leaves a stale lock behind; the pid inside is only there to tell the user who holds it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "another toolsmithd (pid {}) already runs on this state directory (lock {path}); \
         stop it first (`toolsmith stop`), or use another --state directory",
        pid.map_or_else(|| "unknown".to_owned(), |p| p.to_string())
    )]
    Held {
        /// The lock file.
        path: PathBuf,
        /// The holder's pid, as it wrote it.
        pid: Option<u32>,
    },
    /// The lock file could not be opened or written.
    #[error("cannot use the lock file {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Held for the daemon's lifetime; dropping it releases the lock.
#[derive(Debug)]
pub struct InstanceLock {
    _lock: Flock<File>,
}

/// Takes the lock at `path` without waiting, and writes our pid into it.
pub fn acquire(path: &Path) -> Result<InstanceLock, LockError> {
    let io = |source| LockError::Io {
        path: path.to_owned(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => lock,
        Err((mut file, Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let pid = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse().ok());
            return Err(LockError::Held {
                path: path.to_owned(),
                pid,
            });
        }
        Err((_, errno)) => return Err(io(errno.into())),
    };
    lock.set_len(0).map_err(io)?;
    lock.rewind().map_err(io)?;
    writeln!(lock, "{}", std::process::id()).map_err(io)?;
    Ok(InstanceLock { _lock: lock })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_with_the_holders_pid() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("lock");
        let held = acquire(&path).expect("first lock");
        match acquire(&path) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        drop(held);
        acquire(&path).expect("lock is free again after drop");
    }
}
