//! What toolsmith itself made or received: the annotated tags of the versions it approved (or
//! tagged after a `git merge` of a review branch, or deprecated) and the commits of the
//! proposals it made, each recorded when it was made — and those `toolsmith sync` brought from
//! the remote. A tag or a review branch made by hand with git is not in it: such a tag is not
//! an approval, and such a branch merged into `main` is not taken for a reviewed proposal.
//!
//! The ledger is a file in the git directory (`toolsmith-ledger`), one line per object:
//! `tag <oid> <seal> <name>` or `proposal <oid> <seal> <name>`. The seal is an HMAC-SHA256 of
//! the line's kind and object, keyed with a secret kept outside the registry, in the state
//! directory ([`Seal`], `<state>/registry-seal.key`, mode 0600, made once). A line whose seal
//! does not check — written by hand, by an older toolsmith, or with another state directory's
//! key — vouches for nothing.
//!
//! A registry that holds tags `<name>/v<version>` and no ledger is not trusted at all: the
//! ledger was lost or removed, and no tag is taken for an approval until a person says which
//! are (`toolsmith reapprove`). Only a registry without such tags (a new one) starts a ledger
//! silently.
//!
//! The limit: the key is a file of the user's, readable by any process of that uid. The seal
//! stops a hand edit of the registry alone (a removed ledger, forged lines, recreated tags);
//! someone who also reads the state directory's key can seal lines too.

use std::collections::HashSet;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use git2::Oid;
use hmac::{KeyInit as _, Mac as _};

/// The ledger's file name inside the git directory.
pub const FILE_NAME: &str = "toolsmith-ledger";

/// The approval key's file name inside the state directory.
pub const KEY_FILE: &str = "registry-seal.key";

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

/// The key approvals are sealed with, kept outside the registry (in the state directory).
#[derive(Debug, Clone)]
pub struct Seal {
    path: PathBuf,
    key: Result<[u8; 32], String>,
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

impl Seal {
    /// The key of the state directory `state`: read, or made (32 random bytes, mode 0600) when
    /// there is none. A key that cannot be read or made seals nothing: every ledger line is
    /// then refused, with the reason (see [`Seal::problem`]).
    pub fn of_state(state: &Path) -> Seal {
        let path = state.join(KEY_FILE);
        let key = load_or_make(&path).map_err(|e| {
            format!(
                "the approval key {} cannot be read or made ({e}): no approval is trusted \
                 until it can (the state directory must be readable and writable by you)",
                path.display()
            )
        });
        Seal { path, key }
    }

    /// The key's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the key cannot seal, when it cannot.
    pub fn problem(&self) -> Option<&str> {
        self.key.as_ref().err().map(String::as_str)
    }

    /// The seal of an entry, as hex; `None` without a key.
    fn of(&self, kind: Kind, oid: Oid) -> Option<String> {
        let key = self.key.as_ref().ok()?;
        let mut mac = HmacSha256::new_from_slice(key).ok()?;
        mac.update(b"toolsmith-ledger-v1\0");
        mac.update(kind.as_str().as_bytes());
        mac.update(b"\0");
        mac.update(oid.as_bytes());
        let bytes = mac.finalize().into_bytes();
        Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Whether `seal` is the seal of the entry (compared in constant time).
    fn checks(&self, kind: Kind, oid: Oid, seal: &str) -> bool {
        let Ok(key) = self.key.as_ref() else {
            return false;
        };
        let Some(bytes) = from_hex(seal) else {
            return false;
        };
        let Ok(mut mac) = HmacSha256::new_from_slice(key) else {
            return false;
        };
        mac.update(b"toolsmith-ledger-v1\0");
        mac.update(kind.as_str().as_bytes());
        mac.update(b"\0");
        mac.update(oid.as_bytes());
        mac.verify_slice(&bytes).is_ok()
    }
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Reads the key at `path`, or makes it: created exclusively with mode 0600 (two processes
/// making it at once: one makes it, the other reads it).
fn load_or_make(path: &Path) -> std::io::Result<[u8; 32]> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let read = |path: &Path| -> std::io::Result<[u8; 32]> {
        let text = std::fs::read_to_string(path)?;
        from_hex(text.trim())
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "it does not hold 64 hex digits",
                )
            })
    };
    match read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let hex = key.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n";
    file.write_all(hex.as_bytes())?;
    file.sync_all()?;
    drop(file);
    // A hard link fails when the key exists: the first maker's key wins, and is read.
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(path),
        Err(e) => Err(e),
    }
}

/// The objects the ledger vouches for, and why others are not.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// The objects whose lines carry a valid seal.
    vouched: HashSet<Oid>,
    /// Objects named by lines whose seal does not check.
    unsealed: HashSet<Oid>,
    /// The ledger's file.
    path: PathBuf,
    /// Whether the ledger is missing.
    missing: bool,
    /// Why nothing can be vouched for at all (the ledger or the key cannot be read).
    problem: Option<String>,
}

impl Known {
    /// Whether `oid` is vouched for.
    pub fn contains(&self, oid: Oid) -> bool {
        self.vouched.contains(&oid)
    }

    /// Why `oid` is not vouched for, with what to do (for a tag or a proposal that is not):
    /// whether it was ever toolsmith's is unknown when the ledger is missing, unreadable, or
    /// lists it without a valid seal (`by_hand` false), known not when the ledger simply does not
    /// list it (`by_hand` true: a tag made with git).
    pub fn why_not(&self, oid: Oid) -> WhyNot {
        let reapprove = "if a person approved it here, `toolsmith reapprove` shows what would be \
                         trusted again";
        let unknown = |reason: String| WhyNot {
            by_hand: false,
            reason,
        };
        if let Some(problem) = &self.problem {
            return unknown(format!("{problem}; {reapprove}"));
        }
        if self.missing {
            return unknown(format!(
                "the registry's ledger {} is missing although the registry holds approvals \
                 (tags): no tag is trusted until a person re-approves (`toolsmith reapprove`)",
                self.path.display()
            ));
        }
        if self.unsealed.contains(&oid) {
            return unknown(format!(
                "its line in the ledger {} carries no valid seal (written by hand, by an older \
                 toolsmith, or with another state directory's key), so it vouches for nothing; \
                 {reapprove}",
                self.path.display()
            ));
        }
        WhyNot {
            by_hand: true,
            reason: format!(
                "a tag made with git is not an approval, and the ledger {} does not list it: \
                 delete it, or {reapprove}",
                self.path.display()
            ),
        }
    }

    /// Whether the ledger is missing.
    pub fn missing(&self) -> bool {
        self.missing
    }
}

/// Why the ledger does not vouch for an object.
#[derive(Debug, Clone)]
pub struct WhyNot {
    /// The ledger is there and does not list it: made with git, not by toolsmith.
    pub by_hand: bool,
    /// Why, and what to do.
    pub reason: String,
}

impl std::fmt::Display for WhyNot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.by_hand {
            write!(f, "not made or received by toolsmith: {}", self.reason)
        } else {
            write!(f, "not trusted: {}", self.reason)
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

    /// What it vouches for, each line's seal checked with `seal`. A line that does not read, or
    /// whose seal does not check, vouches for nothing.
    pub fn known(&self, seal: &Seal) -> Known {
        let mut known = Known {
            path: self.path.clone(),
            ..Known::default()
        };
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                known.missing = true;
                return known;
            }
            Err(e) => {
                known.problem = Some(format!(
                    "the registry's ledger {} cannot be read ({e})",
                    self.path.display()
                ));
                return known;
            }
        };
        if let Some(problem) = seal.problem() {
            known.problem = Some(problem.to_owned());
            return known;
        }
        for line in text.lines() {
            let mut words = line.split(' ');
            let kind = match words.next() {
                Some("tag") => Kind::Tag,
                Some("proposal") => Kind::Proposal,
                _ => continue,
            };
            let Some(Ok(oid)) = words.next().map(Oid::from_str) else {
                continue;
            };
            match words.next() {
                Some(s) if seal.checks(kind, oid, s) => {
                    known.vouched.insert(oid);
                }
                _ => {
                    known.unsealed.insert(oid);
                }
            }
        }
        // An object with a sealed line is vouched for, whatever other lines say of it.
        known.unsealed.retain(|oid| !known.vouched.contains(oid));
        known
    }

    /// Starts the ledger with `entries`: written whole to a temporary file, then renamed, so
    /// that a crash leaves either no ledger or a whole one. Called with the registry held.
    pub fn start(&self, seal: &Seal, entries: &[(Kind, Oid, String)]) -> std::io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let _ = std::fs::remove_file(&tmp);
        write_entries(&tmp, seal, entries)?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Appends entries, each sealed (one write, so that a reader never sees half of one; the
    /// file is made when it does not exist). Called with the registry held.
    pub fn record(&self, seal: &Seal, entries: &[(Kind, Oid, String)]) -> std::io::Result<()> {
        write_entries(&self.path, seal, entries)
    }
}

/// Appends `entries` to `path` in one write, each with its seal. Not synced, as git's own refs
/// are not: after a power loss a tag whose entry was lost is refused (`toolsmith reapprove`,
/// `toolsmith adopt` or a new approval mends it), never trusted.
fn write_entries(path: &Path, seal: &Seal, entries: &[(Kind, Oid, String)]) -> std::io::Result<()> {
    if let Some(problem) = seal.problem() {
        return Err(std::io::Error::other(problem.to_owned()));
    }
    let mut text = String::new();
    // One line per object: a name given twice in one call is written once.
    let mut seen = HashSet::new();
    for (kind, oid, what) in entries {
        if !seen.insert(*oid) {
            continue;
        }
        // A name never holds a newline; a hostile one must not make a second line.
        let what = what.replace(['\n', '\r'], " ");
        let sealed = seal.of(*kind, *oid).unwrap_or_default();
        text.push_str(&format!("{} {oid} {sealed} {what}\n", kind.as_str()));
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
    fn only_sealed_lines_vouch_and_a_missing_ledger_vouches_for_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let seal = Seal::of_state(&dir.path().join("state"));
        assert_eq!(seal.problem(), None);
        let ledger = Ledger::new(dir.path());
        let a = Oid::from_str("1111111111111111111111111111111111111111").expect("oid");
        let b = Oid::from_str("2222222222222222222222222222222222222222").expect("oid");
        let missing = ledger.known(&seal);
        assert!(missing.missing() && !missing.contains(a));
        assert!(
            missing
                .why_not(a)
                .to_string()
                .contains("toolsmith reapprove")
        );
        ledger
            .record(&seal, &[(Kind::Tag, a, "x/v1.0.0\nproposal 2222".into())])
            .expect("record");
        let known = ledger.known(&seal);
        assert!(known.contains(a));
        assert!(!known.contains(b), "a newline in a name makes no entry");
        // Lines written by hand: the old format, and a made-up seal.
        let mut text = std::fs::read_to_string(ledger.path()).expect("read");
        text.push_str(&format!(
            "tag {b} y/v1.0.0\ntag {b} {} y/v1.0.0\n",
            "ab".repeat(32)
        ));
        std::fs::write(ledger.path(), text).expect("write");
        let known = ledger.known(&seal);
        assert!(known.contains(a));
        assert!(!known.contains(b), "an unsealed line vouches for nothing");
        assert!(
            known.why_not(b).reason.contains("no valid seal"),
            "{}",
            known.why_not(b)
        );
        // Another state directory's key seals nothing here.
        let other = Seal::of_state(&dir.path().join("other"));
        assert!(!ledger.known(&other).contains(a));
        ledger
            .record(&seal, &[(Kind::Proposal, b, "review/x/1.0.1".into())])
            .expect("record");
        assert!(ledger.known(&seal).contains(b));
        ledger
            .start(&seal, &[(Kind::Tag, b, "y/v1.0.0".into())])
            .expect("start");
        assert!(ledger.known(&seal).contains(b), "started afresh");
        assert!(!ledger.known(&seal).contains(a));
    }

    #[test]
    fn the_key_is_made_once_private_and_read_again() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let first = Seal::of_state(dir.path());
        let mode = std::fs::metadata(first.path())
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Seal::of_state(dir.path());
        let oid = Oid::from_str("1111111111111111111111111111111111111111").expect("oid");
        let sealed = first.of(Kind::Tag, oid).expect("seal");
        assert!(again.checks(Kind::Tag, oid, &sealed), "the same key");
        assert!(
            !again.checks(Kind::Proposal, oid, &sealed),
            "bound to its kind"
        );
        std::fs::write(first.path(), "short\n").expect("write");
        let broken = Seal::of_state(dir.path());
        assert!(
            broken
                .problem()
                .is_some_and(|p| p.contains("registry-seal.key"))
        );
    }
}
