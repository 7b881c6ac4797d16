//! What toolsmith itself made or received: the annotated tags of the versions it approved (or
//! tagged after a `git merge` of a review branch, or deprecated) and the commits of the
//! proposals it made, each recorded when it was made — and those `toolsmith sync` brought from
//! the remote. A tag or a review branch made by hand with git is not in it: such a tag is not
//! an approval, and such a branch merged into `main` is not taken for a reviewed proposal.
//!
//! The ledger is a file in the git directory (`toolsmith-ledger`), one line per object:
//! `tag <oid> <name>` or `proposal <oid> <branch>`. A registry without one (made before the
//! ledger existed, or cloned with git) has it started from the tags and review branches it
//! holds when toolsmith first changes it: what was there is trusted once, what is made by hand
//! afterwards is not.
//!
//! It is a record, not a secret: anyone who can write the registry's git directory can append
//! to it. It catches a tag or a branch made with git, not someone editing toolsmith's own files.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::Oid;

/// The ledger's file name inside the git directory.
pub const FILE_NAME: &str = "toolsmith-ledger";

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An annotated tag object (an approval).
    Tag,
    /// A proposal's commit.
    Proposal,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Tag => "tag",
            Kind::Proposal => "proposal",
        }
    }
}

/// The objects the ledger vouches for.
#[derive(Debug, Clone)]
pub enum Known {
    /// No ledger yet: everything present is taken as toolsmith's (it is started, from what is
    /// present, by the next change).
    All,
    /// Only these objects.
    Only(HashSet<Oid>),
}

impl Known {
    /// Whether `oid` is vouched for.
    pub fn contains(&self, oid: Oid) -> bool {
        match self {
            Known::All => true,
            Known::Only(set) => set.contains(&oid),
        }
    }
}

/// The ledger of a registry.
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    /// The ledger of the repository whose git directory is `git_dir`.
    pub fn new(git_dir: &Path) -> Ledger {
        Ledger {
            path: git_dir.join(FILE_NAME),
        }
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it was started.
    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// What it vouches for. A line that does not read is skipped (it vouches for nothing).
    pub fn known(&self) -> std::io::Result<Known> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Known::All),
            Err(e) => return Err(e),
        };
        Ok(Known::Only(
            text.lines()
                .filter_map(|line| {
                    let mut words = line.split(' ');
                    let _kind = words.next()?;
                    Oid::from_str(words.next()?).ok()
                })
                .collect(),
        ))
    }

    /// Starts the ledger with `entries`: written whole to a temporary file, then renamed, so
    /// that a crash leaves either no ledger or a whole one. Called with the registry held.
    pub fn start(&self, entries: &[(Kind, Oid, String)]) -> std::io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let _ = std::fs::remove_file(&tmp);
        write_entries(&tmp, entries)?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Appends entries (one write, so that a reader never sees half of one; the file is made
    /// when it does not exist). Called with the registry held.
    pub fn record(&self, entries: &[(Kind, Oid, String)]) -> std::io::Result<()> {
        write_entries(&self.path, entries)
    }
}

/// Appends `entries` to `path` in one write. Not synced, as git's own refs are not: after a
/// power loss a tag whose entry was lost is refused (`toolsmith adopt` or a new approval
/// mends it), never trusted.
fn write_entries(path: &Path, entries: &[(Kind, Oid, String)]) -> std::io::Result<()> {
    let mut text = String::new();
    for (kind, oid, what) in entries {
        // A name never holds a newline; a hostile one must not make a second line.
        let what = what.replace(['\n', '\r'], " ");
        text.push_str(&format!("{} {oid} {what}\n", kind.as_str()));
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_vouches_for_everything_present_only_for_what_it_lists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger = Ledger::new(dir.path());
        let a = Oid::from_str("1111111111111111111111111111111111111111").expect("oid");
        let b = Oid::from_str("2222222222222222222222222222222222222222").expect("oid");
        assert!(ledger.known().expect("read").contains(a));
        ledger
            .record(&[(Kind::Tag, a, "x/v1.0.0\nproposal 2222".into())])
            .expect("record");
        let known = ledger.known().expect("read");
        assert!(known.contains(a));
        assert!(!known.contains(b), "a newline in a name makes no entry");
        ledger
            .record(&[(Kind::Proposal, b, "review/x/1.0.1".into())])
            .expect("record");
        assert!(ledger.known().expect("read").contains(b));
        std::fs::write(ledger.path(), "garbage\ntag nothex x\n").expect("write");
        assert!(!ledger.known().expect("read").contains(a));
        ledger
            .start(&[(Kind::Tag, b, "y/v1.0.0".into())])
            .expect("start");
        assert!(ledger.known().expect("read").contains(b), "started afresh");
        assert!(!ledger.known().expect("read").contains(a));
    }
}
