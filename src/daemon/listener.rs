//! The control socket's listening end: handed over by systemd (socket activation), or bound here
//! in a private directory.

use std::fs;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// A directory or file operation failed.
    #[error("cannot prepare the control socket at {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The runtime directory belongs to someone else: using it would expose the socket.
    #[error(
        "the runtime directory {path} belongs to uid {owner}, not to this daemon (uid {uid}); \
         set paths.runtime to a directory of your own"
    )]
    ForeignDirectory {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our uid.
        uid: u32,
    },
    /// A live daemon already answers on the socket.
    #[error(
        "another daemon already listens on {path}; stop it (`toolsmith stop`) or set \
         paths.runtime to another directory"
    )]
    InUse {
        /// The socket.
        path: PathBuf,
    },
    /// Something that is not a socket sits where the socket should go.
    #[error("{path} exists and is not a socket; remove it or set paths.runtime elsewhere")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// systemd passed a descriptor that is not a listening Unix stream socket.
    #[error(
        "socket activation passed fd {fd}, which is not a listening Unix stream socket: {reason}"
    )]
    BadActivation {
        /// The descriptor.
        fd: RawFd,
        /// What is wrong with it.
        reason: String,
    },
}

/// A listening socket ready for the server.
#[derive(Debug)]
pub struct BoundSocket {
    /// The listener (non-blocking).
    pub listener: UnixListener,
    /// Its path in the file system.
    pub path: PathBuf,
    /// Whether systemd passed it (then systemd, not we, owns the file).
    pub activated: bool,
}

impl BoundSocket {
    /// Removes the socket file if we created it.
    pub fn cleanup(&self) {
        if !self.activated {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Takes the socket passed by systemd, if any; otherwise binds `path`.
pub fn take_or_bind(path: &Path) -> Result<BoundSocket, ListenError> {
    let activated = sd_notify::listen_fds().ok().and_then(|mut fds| fds.next());
    match activated {
        Some(fd) => adopt(fd, path),
        None => bind(path),
    }
}

fn adopt(fd: RawFd, configured: &Path) -> Result<BoundSocket, ListenError> {
    use nix::sys::socket::{SockType, UnixAddr, getsockname, getsockopt, sockopt};
    let bad = |reason: String| ListenError::BadActivation { fd, reason };
    // SAFETY: systemd passed this descriptor to us (LISTEN_PID matched our pid) and nothing
    // else in the process owns it.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    match getsockopt(&borrowed, sockopt::SockType) {
        Ok(SockType::Stream) => {}
        Ok(other) => return Err(bad(format!("socket type {other:?}"))),
        Err(e) => return Err(bad(e.to_string())),
    }
    match getsockopt(&borrowed, sockopt::AcceptConn) {
        Ok(true) => {}
        Ok(false) => return Err(bad("not listening".into())),
        Err(e) => return Err(bad(e.to_string())),
    }
    let addr: UnixAddr = getsockname(fd).map_err(|e| bad(format!("not a Unix socket: {e}")))?;
    let path = addr
        .path()
        .map_or_else(|| configured.to_owned(), Path::to_owned);
    // SAFETY: as above; from here on the listener owns the descriptor.
    let listener = unsafe { UnixListener::from_raw_fd(fd) };
    listener
        .set_nonblocking(true)
        .map_err(|source| ListenError::Io {
            path: path.clone(),
            source,
        })?;
    Ok(BoundSocket {
        listener,
        path,
        activated: true,
    })
}

/// Creates `dir` (mode 0700) if needed and makes sure it is ours and private.
pub fn ensure_private_dir(dir: &Path) -> Result<(), ListenError> {
    let io = |source| ListenError::Io {
        path: dir.to_owned(),
        source,
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io)?;
    let meta = fs::metadata(dir).map_err(io)?;
    let uid = nix::unistd::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(ListenError::ForeignDirectory {
            path: dir.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    if meta.mode() & 0o777 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

fn bind(path: &Path) -> Result<BoundSocket, ListenError> {
    let io = |source| ListenError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        ensure_private_dir(dir)?;
    }
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(ListenError::InUse {
                    path: path.to_owned(),
                });
            }
            // Nobody answers: a previous daemon died without removing it.
            fs::remove_file(path).map_err(io)?;
        }
        Ok(_) => {
            return Err(ListenError::NotASocket {
                path: path.to_owned(),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let listener = UnixListener::bind(path).map_err(io)?;
    // The directory is already 0700; the mode is a second fence for when it is not.
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(io)?;
    listener.set_nonblocking(true).map_err(io)?;
    Ok(BoundSocket {
        listener,
        path: path.to_owned(),
        activated: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_privately_and_replaces_a_stale_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run/control.sock");
        let first = bind(&path).expect("bind");
        let mode = fs::metadata(&path).expect("socket").mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(dir.path().join("run")).expect("dir").mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert!(matches!(bind(&path), Err(ListenError::InUse { .. })));
        drop(first);
        // The file is still there but nobody listens: it is replaced.
        bind(&path).expect("rebind over a stale socket");
    }

    #[test]
    fn refuses_a_regular_file_in_the_way() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("control.sock");
        fs::write(&path, b"not a socket").expect("write");
        assert!(matches!(bind(&path), Err(ListenError::NotASocket { .. })));
    }
}
