//! The registry repository: approved tools on `main`, proposals on `review/<name>/<version>`,
//! rejected proposals under `refs/toolsmith/rejected/`, one annotated tag `<name>/v<version>`
//! per approved version, never moved.
//!
//! Every change to `main` goes through [`Registry::land`]: the commit is written first
//! (unreferenced), the work tree's paths of the change are checked clean, a journal records
//! the move, the paths are checked out, and only then does `main` move, compare-and-swap on its
//! old value. [`Registry::reconcile`], run before every change (and by reads when the registry
//! is free and writable: [`Registry::reconcile_if_free`]), finishes or undoes
//! what a crash interrupted and recognises what was done with plain git (a review branch merged
//! into `main`): a killed approval leaves no half-registered tool and no branch that
//! `toolsmith review` cannot explain.
//!
//! This file holds [`Registry`] itself (open, init, the format check), its errors and the
//! plumbing every part shares (trees written and read, commit messages and trailers); the
//! parts are beside it: `proposals.rs` (propose, review, approve, reject), `journal.rs`
//! (the landing journal), `lock.rs` (turns), `checkout.rs` (the work tree), `reconcile.rs`,
//! `listing.rs`, `verify.rs` (what may run) and `history.rs` (rollback, deprecation).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use git2::{
    Commit, ErrorCode, ObjectType, Oid, Repository, RepositoryInitOptions, Signature, Tree,
    build::CheckoutBuilder,
};

use super::index::{self, Row};
use super::lock::{BUSY, LOCK};
use crate::package::manifest::{self, Manifest};

pub use super::listing::ToolEntry;
pub use super::lock::Settled;
pub use super::proposals::{Landed, NextVersion, Proposal, Review};
pub use super::reconcile::Reconciled;
pub use super::verify::VerifyReport;

/// The format of registry this build reads and writes (`registry.toml`'s `format`).
pub const FORMAT: i64 = 1;
/// When format 1 was defined (2026-11-01T00:00:00Z): the time of every registry's first commit.
const FORMAT_EPOCH: i64 = 1_793_491_200;

pub(super) const MAIN: &str = "refs/heads/main";
pub(super) const REVIEW_PREFIX: &str = "refs/heads/review/";
/// Where rejected proposals are kept, one ref per candidate.
pub const REJECTED_PREFIX: &str = "refs/toolsmith/rejected/";
/// The cache of `tools()`, inside the git directory: entries by tool name and tree id (what
/// depends on the tree alone: the manifest, the files' kinds, the digest). The name changed
/// when the digest joined the entry: lines of an older toolsmith are not read.
pub(super) const LISTING_CACHE: &str = "toolsmith-tools-v2.cache";
/// The cache of the trees tags approved, inside the git directory: `<tag object> <tool>
/// <tree>` (`-` when the tag names no such tool, `lightweight` for a lightweight tag). A tag
/// object never changes, so neither does its line. Read by listings only: what runs and what
/// `verify` reports are read from git.
pub(super) const APPROVED_CACHE: &str = "toolsmith-approved.cache";
/// The remote whose tags approve too (`toolsmith sync` fetches its tags beside ours).
pub(super) const REMOTE_TAGS: &str = "refs/remotes/origin/tags/";

/// The files a new registry starts with: `registry-template/`.
const TEMPLATE: [(&str, &str); 4] = [
    (
        "README.md",
        include_str!("../../registry-template/README.md"),
    ),
    (
        "registry.toml",
        include_str!("../../registry-template/registry.toml"),
    ),
    (
        ".gitattributes",
        include_str!("../../registry-template/.gitattributes"),
    ),
    ("tools/.gitkeep", ""),
];

/// What went wrong with the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A git operation failed.
    #[error("registry {}: {what}: {}", path.display(), source.message())]
    Git {
        /// The repository.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// git's error.
        source: git2::Error,
    },
    /// A fetch or a push (`git` itself) failed.
    #[error("registry {}: {what}: {why}", path.display())]
    Transfer {
        /// The repository.
        path: PathBuf,
        /// What was being done (`fetch from URL`).
        what: String,
        /// What git said, and what to do.
        why: String,
        /// What git printed on stdout (a push's per-ref report).
        stdout: String,
    },
    /// The directory holds something else.
    #[error("{} is not a toolsmith registry: {why}", path.display())]
    NotARegistry {
        /// The directory.
        path: PathBuf,
        /// Why not.
        why: String,
    },
    /// Written by a newer toolsmith.
    #[error(
        "registry {} is in format {found}; this toolsmith reads format {FORMAT}: upgrade toolsmith",
        path.display()
    )]
    NewerFormat {
        /// The repository.
        path: PathBuf,
        /// Its format.
        found: i64,
    },
    /// No proposal matches.
    #[error("nothing awaits review as `{0}`; `toolsmith review` lists what does")]
    NoSuchReview(String),
    /// Several proposals match.
    #[error("`{0}` matches several proposals ({1}); name the candidate")]
    Ambiguous(String, String),
    /// No such tool on `main`.
    #[error("no tool `{0}` on main; `toolsmith tools` lists them")]
    NoSuchTool(String),
    /// The version's tag exists.
    #[error(
        "tag {0} exists already: a version is tagged once and never moved; propose a new version"
    )]
    TagExists(String),
    /// The change cannot be applied to `main` as it is now.
    #[error("{0}")]
    Conflict(String),
    /// Uncommitted changes where the change would write.
    #[error(
        "the registry's work tree has uncommitted changes in {paths}: commit or discard them \
         (`git -C {} status`), then retry",
        root.display()
    )]
    Dirty {
        /// The work tree.
        root: PathBuf,
        /// The paths.
        paths: String,
    },
    /// A tool's files are not usable.
    #[error("tool `{name}`: {problem}")]
    Invalid {
        /// The tool.
        name: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A git lock file stands in the way of a change: git's own (`index.lock`, a ref's
    /// `.lock`), left by a git command at work or by one that died.
    #[error("registry {}: {what}: {locks}", path.display())]
    Locked {
        /// The repository.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// Each lock file with its age, and what to do.
        locks: String,
    },
    /// Another toolsmith process held the registry longer than a change waits for it.
    #[error("{}: {holder}", path.display())]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// Who holds it, since when, and what to do.
        holder: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// An open registry.
pub struct Registry {
    pub(super) repo: Repository,
    pub(super) root: PathBuf,
    /// The state directory, where the key approvals are sealed with is kept.
    pub(super) state: PathBuf,
    /// That key, read (or made) when first needed.
    pub(super) seal: std::cell::OnceCell<super::ledger::Seal>,
    /// The ledger as last read, with the file's identity then (read again when it changed).
    pub(super) known_cache: super::approval::KnownCache,
    /// Tool versions found valid (manifest read, files matching the recorded digest), by name
    /// and tree: a long-lived handle (an MCP session, the daemon) checks a version once. The
    /// key is the tree's object id, so a changed tool is a new key, never a stale hit; only
    /// what is a function of the tree alone belongs here (what refs say, such as a tag, and
    /// what the disk holds are checked on every run).
    pub(super) valid: RefCell<HashMap<(String, Oid), Manifest>>,
}

/// Whether a filesystem event from a watch on the registry's git directory (and its `refs`)
/// may be a change to the registry: not a file merely opened or closed (inotify reports opens,
/// and looking at the registry opens its refs: a watcher that reacted to them would wake itself
/// forever), and not only toolsmith's own bookkeeping there (the turn lock, the busy marker,
/// the listing cache), which reading and reconciling write.
pub fn is_registry_change(event: &notify::Event) -> bool {
    if matches!(event.kind, notify::EventKind::Access(_)) {
        return false;
    }
    let listing_tmp = Path::new(LISTING_CACHE).with_extension("tmp");
    let bookkeeping = |path: &PathBuf| {
        path.file_name().is_some_and(|name| {
            name == LOCK
                || name == BUSY
                || name == LISTING_CACHE
                || name == listing_tmp
                || name == APPROVED_CACHE
        })
    };
    event.paths.is_empty() || !event.paths.iter().all(bookkeeping)
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("root", &self.root)
            .finish()
    }
}

/// The identity toolsmith commits as.
pub(super) fn toolsmith_signature() -> Result<Signature<'static>, git2::Error> {
    Signature::now("toolsmith", "toolsmith@localhost")
}

/// The trailers of a commit message: `Key: value` lines of its last paragraph.
pub fn trailers(message: &str) -> Vec<(String, String)> {
    let last = message.trim_end().rsplit("\n\n").next().unwrap_or("");
    last.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(": ")?;
            let is_key =
                !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
            is_key.then(|| (key.to_owned(), value.trim().to_owned()))
        })
        .collect()
}

pub(super) fn trailer<'a>(trailers: &'a [(String, String)], key: &str) -> Option<&'a str> {
    trailers
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A commit message: subject, body paragraphs, trailers.
pub(super) fn message(subject: &str, body: &[String], trailers: &[(String, String)]) -> String {
    let mut text = format!("{subject}\n");
    for paragraph in body.iter().filter(|p| !p.trim().is_empty()) {
        text.push('\n');
        text.push_str(paragraph.trim_end());
        text.push('\n');
    }
    if !trailers.is_empty() {
        text.push('\n');
        for (k, v) in trailers {
            let v = v.replace('\n', " ");
            text.push_str(&format!("{k}: {v}\n"));
        }
    }
    text
}

pub(super) fn tag_name(name: &str, version: &str) -> String {
    format!("{name}/v{version}")
}

pub(super) fn tool_path(name: &str) -> String {
    format!("tools/{name}")
}

impl Registry {
    /// Opens the registry at `dir`, creating it from the template when the directory does not
    /// exist or is empty. An existing repository is checked, never overwritten. `state` is the
    /// state directory, which keeps the key approvals are sealed with (see
    /// [`super::ledger::Seal`]).
    pub fn open_or_init(dir: &Path, state: &Path) -> Result<Registry, RegistryError> {
        let empty = match std::fs::read_dir(dir) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(source) => {
                return Err(RegistryError::Io {
                    path: dir.to_owned(),
                    source,
                });
            }
        };
        if empty {
            Self::init(dir, state)
        } else {
            Self::open(dir, state)
        }
    }

    /// Opens an existing registry and checks its format (changing nothing: see
    /// [`Registry::reconcile`] and [`Registry::reconcile_if_free`]). `state` is the state
    /// directory, which keeps the key approvals are sealed with.
    pub fn open(dir: &Path, state: &Path) -> Result<Registry, RegistryError> {
        super::tune_git();
        let repo = Repository::open(dir).map_err(|e| RegistryError::NotARegistry {
            path: dir.to_owned(),
            why: format!(
                "not a git repository ({}); point paths.registry at a registry or an empty \
                 directory",
                e.message()
            ),
        })?;
        let registry = Registry {
            repo,
            root: dir.to_owned(),
            state: state.to_owned(),
            seal: Default::default(),
            known_cache: Default::default(),
            valid: RefCell::default(),
        };
        registry.check_format()?;
        Ok(registry)
    }

    pub(super) fn init(dir: &Path, state: &Path) -> Result<Registry, RegistryError> {
        super::tune_git();
        std::fs::create_dir_all(dir).map_err(|source| RegistryError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let git = |what: &str, e: git2::Error| RegistryError::Git {
            path: dir.to_owned(),
            what: what.to_owned(),
            source: e,
        };
        let repo = Repository::init_opts(
            dir,
            RepositoryInitOptions::new()
                .initial_head("main")
                .mkdir(true),
        )
        .map_err(|e| git("cannot create the repository", e))?;
        let registry = Registry {
            repo,
            root: dir.to_owned(),
            state: state.to_owned(),
            seal: Default::default(),
            known_cache: Default::default(),
            valid: RefCell::default(),
        };
        let mut files: BTreeMap<String, Vec<u8>> = TEMPLATE
            .iter()
            .map(|(p, c)| ((*p).to_owned(), c.as_bytes().to_vec()))
            .collect();
        files.insert(
            index::FILE_NAME.to_owned(),
            index::update("", "", None).into_bytes(),
        );
        let tree = registry.write_tree(&files, None)?;
        {
            let tree = registry.git("read the first tree", registry.repo.find_tree(tree))?;
            // The same first commit in every registry of this format: registries made apart
            // share a root, so `toolsmith sync` can merge them.
            let sig = registry.git(
                "make a signature",
                Signature::new(
                    "toolsmith",
                    "toolsmith@localhost",
                    &git2::Time::new(FORMAT_EPOCH, 0),
                ),
            )?;
            let msg = message(
                "registry: start from the toolsmith template",
                &["The layout, the review workflow and how to roll back are in README.md.".into()],
                &[],
            );
            registry.git(
                "write the first commit",
                registry
                    .repo
                    .commit(Some("HEAD"), &sig, &sig, &msg, &tree, &[]),
            )?;
        }
        let mut checkout = CheckoutBuilder::new();
        checkout.force();
        registry.git(
            "check out the first commit",
            registry.repo.checkout_head(Some(&mut checkout)),
        )?;
        Ok(registry)
    }

    /// The work tree's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(super) fn git<T>(
        &self,
        what: &str,
        result: Result<T, git2::Error>,
    ) -> Result<T, RegistryError> {
        result.map_err(|source| {
            if source.code() == ErrorCode::Locked
                && let Some(locks) = self.describe_git_locks(true)
            {
                return RegistryError::Locked {
                    path: self.root.clone(),
                    what: what.to_owned(),
                    locks,
                };
            }
            RegistryError::Git {
                path: self.root.clone(),
                what: what.to_owned(),
                source,
            }
        })
    }

    /// The key approvals are sealed with (the state directory's; read or made once).
    pub(super) fn seal(&self) -> &super::ledger::Seal {
        self.seal
            .get_or_init(|| super::ledger::Seal::of_state(&self.state))
    }

    pub(super) fn check_format(&self) -> Result<(), RegistryError> {
        let not = |why: &str| RegistryError::NotARegistry {
            path: self.root.clone(),
            why: why.to_owned(),
        };
        let main = self.main_commit().map_err(|_| {
            not("it has no `main` branch; point paths.registry at a registry or an empty directory")
        })?;
        let tree = self.git("read main", main.tree())?;
        let text = self
            .blob_text(&tree, "registry.toml")?
            .ok_or_else(|| not("`main` has no registry.toml"))?;
        let doc: toml::Table = text
            .parse()
            .map_err(|e| not(&format!("registry.toml does not parse: {e}")))?;
        let format = doc
            .get("format")
            .and_then(toml::Value::as_integer)
            .ok_or_else(|| not("registry.toml has no integer `format`"))?;
        if format > FORMAT {
            return Err(RegistryError::NewerFormat {
                path: self.root.clone(),
                found: format,
            });
        }
        Ok(())
    }

    pub(super) fn main_commit(&self) -> Result<Commit<'_>, RegistryError> {
        let reference = self.git("find main", self.repo.find_reference(MAIN))?;
        self.git("read main", reference.peel_to_commit())
    }

    /// The id of `main`'s commit.
    pub fn main_id(&self) -> Result<String, RegistryError> {
        Ok(self.main_commit()?.id().to_string())
    }

    pub(super) fn blob_text(
        &self,
        tree: &Tree<'_>,
        path: &str,
    ) -> Result<Option<String>, RegistryError> {
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(self.git(&format!("read {path}"), Err(e))?),
        };
        let object = self.git(&format!("read {path}"), entry.to_object(&self.repo))?;
        let Some(blob) = object.as_blob() else {
            return Ok(None);
        };
        Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
    }

    pub(super) fn subtree_id(&self, tree: &Tree<'_>, path: &str) -> Option<Oid> {
        tree.get_path(Path::new(path))
            .ok()
            .filter(|e| e.kind() == Some(ObjectType::Tree))
            .map(|e| e.id())
    }

    /// The files of a tool's tree, by path inside it. Every entry must be a regular file (mode
    /// 100644 or 100755) of UTF-8 text, or a directory of them: a symbolic link (it could point
    /// anywhere on the host), a submodule (a gitlink names another repository's commit) or a
    /// `.git…` file (attributes that would change the bytes git checks out, modules, ignore
    /// rules) is refused, wherever it is in the tool.
    pub(super) fn tool_files(
        &self,
        name: &str,
        tree: Oid,
    ) -> Result<BTreeMap<String, String>, RegistryError> {
        let tree = self.git("read a tool's tree", self.repo.find_tree(tree))?;
        let mut files = BTreeMap::new();
        let mut problems: Vec<String> = Vec::new();
        self.git(
            "walk a tool's tree",
            tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                let path = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
                let base = String::from_utf8_lossy(entry.name_bytes()).into_owned();
                if base.starts_with(".git") {
                    problems.push(format!(
                        "{path} is a git control file, which is never part of a tool (it would \
                         change what git checks out or where it looks)"
                    ));
                    return git2::TreeWalkResult::Skip;
                }
                let mode = entry.filemode();
                match entry.kind() {
                    Some(ObjectType::Tree) => return git2::TreeWalkResult::Ok,
                    Some(ObjectType::Blob) if mode == 0o100644 || mode == 0o100755 => {}
                    Some(ObjectType::Blob) if mode == 0o120000 => {
                        problems.push(format!(
                            "{path} is a symbolic link: a tool's files must be regular files (a \
                             link could point anywhere on the host)"
                        ));
                        return git2::TreeWalkResult::Ok;
                    }
                    Some(ObjectType::Commit) => {
                        problems.push(format!(
                            "{path} is a submodule (a gitlink to commit {}): a tool's files must \
                             be regular files",
                            entry.id()
                        ));
                        return git2::TreeWalkResult::Ok;
                    }
                    _ => {
                        problems.push(format!(
                            "{path} is not a regular file (mode {mode:o}): a tool's files must be \
                             regular files"
                        ));
                        return git2::TreeWalkResult::Ok;
                    }
                }
                match entry
                    .to_object(&self.repo)
                    .ok()
                    .and_then(|o| o.as_blob().map(|b| b.content().to_vec()))
                    .map(String::from_utf8)
                {
                    Some(Ok(text)) => {
                        files.insert(path, text);
                    }
                    _ => problems.push(format!("{path} is not UTF-8 text")),
                }
                git2::TreeWalkResult::Ok
            }),
        )?;
        if !problems.is_empty() {
            return Err(RegistryError::Invalid {
                name: name.to_owned(),
                problem: problems.join("; "),
            });
        }
        Ok(files)
    }

    /// Writes nested trees for `files` (paths with `/`); `exec` names the file made executable.
    pub(super) fn write_tree(
        &self,
        files: &BTreeMap<String, Vec<u8>>,
        exec: Option<&str>,
    ) -> Result<Oid, RegistryError> {
        let mut here: BTreeMap<&str, (Oid, i32)> = BTreeMap::new();
        let mut dirs: BTreeMap<&str, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
        for (path, content) in files {
            match path.split_once('/') {
                Some((dir, rest)) => {
                    dirs.entry(dir)
                        .or_default()
                        .insert(rest.to_owned(), content.clone());
                }
                None => {
                    let oid = self.git("write a file", self.repo.blob(content))?;
                    let mode = if Some(path.as_str()) == exec {
                        0o100755
                    } else {
                        0o100644
                    };
                    here.insert(path, (oid, mode));
                }
            }
        }
        for (dir, inner) in &dirs {
            let oid = self.write_tree(inner, None)?;
            here.insert(dir, (oid, 0o040000));
        }
        let mut builder = self.git("build a tree", self.repo.treebuilder(None))?;
        for (name, (oid, mode)) in here {
            self.git("build a tree", builder.insert(name, oid, mode))?;
        }
        self.git("write a tree", builder.write())
    }

    /// `base` with `tools/<name>` set to `tool` (or removed) and its index row updated.
    pub(super) fn with_tool(
        &self,
        base: &Tree<'_>,
        name: &str,
        tool: Option<Oid>,
        row: Option<&Row>,
    ) -> Result<Oid, RegistryError> {
        let tools = self.subtree_id(base, "tools");
        let tools_tree = match tools {
            Some(id) => Some(self.git("read tools/", self.repo.find_tree(id))?),
            None => None,
        };
        let mut builder = self.git("build tools/", self.repo.treebuilder(tools_tree.as_ref()))?;
        match tool {
            Some(oid) => {
                self.git("build tools/", builder.insert(name, oid, 0o040000))?;
            }
            None => {
                if builder.get(name).ok().flatten().is_some() {
                    self.git("build tools/", builder.remove(name))?;
                }
            }
        }
        let tools_id = self.git("write tools/", builder.write())?;
        let current_index = self.blob_text(base, index::FILE_NAME)?.unwrap_or_default();
        let index_text = index::update(&current_index, name, row);
        let index_id = self.git("write TOOLS.md", self.repo.blob(index_text.as_bytes()))?;
        let mut root = self.git("build the root tree", self.repo.treebuilder(Some(base)))?;
        self.git(
            "build the root tree",
            root.insert("tools", tools_id, 0o040000),
        )?;
        self.git(
            "build the root tree",
            root.insert(index::FILE_NAME, index_id, 0o100644),
        )?;
        self.git("write the root tree", root.write())
    }

    pub(super) fn row_of(manifest: &Manifest) -> Row {
        Row {
            name: manifest.name.clone(),
            version: manifest.version.to_string(),
            description: manifest.description.clone(),
            deprecated: manifest.deprecated.is_some(),
        }
    }

    /// The manifest of `name` in `tree`, if it is there and reads.
    pub(super) fn manifest_in(&self, tree: &Tree<'_>, name: &str) -> Option<Manifest> {
        let text = self
            .blob_text(tree, &format!("tools/{name}/{}", manifest::FILE_NAME))
            .ok()
            .flatten()?;
        Manifest::parse(&text, manifest::FILE_NAME).ok()
    }

    /// The name git would sign with here: the repository's `user.name <user.email>`, else the
    /// login name.
    pub fn approver(&self) -> String {
        let config = self.repo.config().ok();
        let get = |key: &str| config.as_ref().and_then(|c| c.get_string(key).ok());
        match (get("user.name"), get("user.email")) {
            (Some(n), Some(e)) => format!("{n} <{e}>"),
            (Some(n), None) => n,
            _ => std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "unknown".into()),
        }
    }

    pub(super) fn tagger(&self, approver: &str) -> Result<Signature<'static>, RegistryError> {
        let (name, email) = match approver.split_once(" <") {
            Some((n, e)) => (n.to_owned(), e.trim_end_matches('>').to_owned()),
            None => (approver.to_owned(), format!("{approver}@localhost")),
        };
        self.git("make a signature", Signature::now(&name, &email))
    }
}

#[cfg(test)]
mod tests {
    use super::super::journal::JOURNAL;
    use super::*;
    use notify::event::{AccessKind, AccessMode, CreateKind, EventKind, ModifyKind, RemoveKind};

    fn event(kind: EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(PathBuf::from("/r/.git").join(path))
    }

    #[test]
    fn only_changes_wake_a_registry_watch() {
        let opened = EventKind::Access(AccessKind::Open(AccessMode::Any));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Read));
        let created = EventKind::Create(CreateKind::File);
        let renamed = EventKind::Modify(ModifyKind::Name(notify::event::RenameMode::Any));
        // Looking at the registry: opens of refs, and the bookkeeping a read or a reconcile
        // writes.
        assert!(!is_registry_change(&event(opened, "refs/heads/main")));
        assert!(!is_registry_change(&event(closed, "HEAD")));
        assert!(!is_registry_change(&event(created, BUSY)));
        assert!(!is_registry_change(&event(
            EventKind::Remove(RemoveKind::File),
            BUSY
        )));
        assert!(!is_registry_change(&event(created, LOCK)));
        assert!(!is_registry_change(&event(
            EventKind::Modify(ModifyKind::Any),
            LISTING_CACHE
        )));
        assert!(!is_registry_change(&event(
            renamed,
            &Path::new(LISTING_CACHE)
                .with_extension("tmp")
                .to_string_lossy()
        )));
        assert!(!is_registry_change(&event(
            EventKind::Modify(ModifyKind::Any),
            APPROVED_CACHE
        )));
        // Changes: a ref moved by git, a landing journal, a new packed-refs.
        assert!(is_registry_change(&event(renamed, "refs/heads/main")));
        assert!(is_registry_change(&event(created, "refs/heads/main.lock")));
        assert!(is_registry_change(&event(created, JOURNAL)));
        assert!(is_registry_change(&event(renamed, "packed-refs")));
        // An event naming no path (a rescan) may hide anything.
        assert!(is_registry_change(&notify::Event::new(EventKind::Any)));
    }
}
