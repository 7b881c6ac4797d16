//! The registry repository: approved tools on `main`, proposals on `review/<name>/<version>`,
//! rejected proposals under `refs/toolsmith/rejected/`, one annotated tag `<name>/v<version>`
//! per approved version, never moved.
//!
//! Every change to `main` goes through [`Registry::land`]: the commit is written first
//! (unreferenced), the work tree's paths of the change are checked clean, a journal records
//! the move, the paths are checked out, and only then does `main` move, compare-and-swap on its
//! old value. [`Registry::reconcile`], run whenever the registry is opened, finishes or undoes
//! what a crash interrupted and recognises what was done with plain git (a review branch merged
//! into `main`): a killed approval leaves no half-registered tool and no branch that
//! `toolsmith review` cannot explain.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use git2::{
    BranchType, Commit, ErrorCode, ObjectType, Oid, Repository, RepositoryInitOptions, Signature,
    Tree, build::CheckoutBuilder,
};

/// Removes the empty directories under `dir` (not `dir` itself).
fn remove_empty_dirs(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_dirs(&p);
            let _ = std::fs::remove_dir(&p);
        }
    }
}
use serde::Serialize;

use super::index::{self, Row};
use super::ledger::{Kind, Known};
use super::versions::{self, Bump};
use crate::package::manifest::{self, Manifest};

/// The format of registry this build reads and writes (`registry.toml`'s `format`).
pub const FORMAT: i64 = 1;
/// When format 1 was defined (2026-11-01T00:00:00Z): the time of every registry's first commit.
const FORMAT_EPOCH: i64 = 1_793_491_200;

const MAIN: &str = "refs/heads/main";
const REVIEW_PREFIX: &str = "refs/heads/review/";
/// Where rejected proposals are kept, one ref per candidate.
pub const REJECTED_PREFIX: &str = "refs/toolsmith/rejected/";
/// The journal of a move of `main` under way, inside the git directory.
const JOURNAL: &str = "toolsmith-landing.json";
/// The cache of `tools()`, inside the git directory: entries by tool name and tree id (what
/// depends on the tree alone: the manifest, the files' kinds, the digest). The name changed
/// when the digest joined the entry: lines of an older toolsmith are not read.
const LISTING_CACHE: &str = "toolsmith-tools-v2.cache";
/// The cache of the trees tags approved, inside the git directory: `<tag object> <tool>
/// <tree>` (`-` when the tag names no such tool, `lightweight` for a lightweight tag). A tag
/// object never changes, so neither does its line. Read by listings only: what runs and what
/// `verify` reports are read from git.
pub(super) const APPROVED_CACHE: &str = "toolsmith-approved.cache";
/// The remote whose tags approve too (`toolsmith sync` fetches its tags beside ours).
pub(super) const REMOTE_TAGS: &str = "refs/remotes/origin/tags/";
/// The lock toolsmith processes take turns on, inside the git directory.
const LOCK: &str = "toolsmith.lock";

/// Present in the git directory while a toolsmith process holds [`Registry::exclusive`]: found
/// by the next holder, it means the last one died mid-change.
const BUSY: &str = "toolsmith-busy";

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
const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(3);

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
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// A proposal to make: a validated candidate's files and why it was made.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The candidate's id.
    pub candidate: String,
    /// The tool's files, by path inside its directory (`tool.yaml`, `run.sh`, `tests/…`).
    pub files: BTreeMap<String, String>,
    /// Why it was made, for the commit body.
    pub why: String,
    /// Trailers (`Origin`, `Pattern`, `Support`, `Tests`, `Generator`), in order.
    pub trailers: Vec<(String, String)>,
}

/// A proposal awaiting review.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    /// `review/<name>/<version>`.
    pub branch: String,
    /// The tool.
    pub name: String,
    /// The version proposed.
    pub version: String,
    /// The candidate, from the `Candidate:` trailer.
    pub candidate: Option<String>,
    /// The proposal's commit.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// Whether `main` moved since it was proposed (approval re-applies it).
    pub behind_main: bool,
    /// How the version moved from what is on `main`; `None` for a tool's first version.
    pub bump: Option<Bump>,
}

/// What an approval (or a merge recognised) did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Landed {
    /// The tool.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The candidate.
    pub candidate: Option<String>,
    /// The commit on `main`.
    pub commit: String,
    /// The tag made.
    pub tag: String,
    /// Who approved.
    pub approved_by: String,
    /// `toolsmith` or `git` (merged by hand).
    pub via: String,
}

/// A tool on `main`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ToolEntry {
    /// Its directory's name.
    pub name: String,
    /// Its version, when the manifest reads.
    pub version: Option<String>,
    /// What it does.
    pub description: String,
    /// Whether it is deprecated.
    pub deprecated: bool,
    /// Why it cannot be run, when its manifest or files are invalid.
    pub problem: Option<String>,
    /// Its tree's id: changes whenever any of its files does.
    pub tree: String,
    /// Its parameters' JSON Schema, when the manifest reads (kept as text: listings pass it
    /// through without building it).
    pub params: Option<Box<serde_json::value::RawValue>>,
    /// What it prints, when the manifest reads.
    pub output: Option<manifest::OutputKind>,
    /// The whole manifest: read by [`Registry::tool`], not kept in listings.
    #[serde(skip)]
    pub manifest: Option<Manifest>,
}

/// The version a proposal gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextVersion {
    /// The version.
    pub version: semver::Version,
    /// How it moved from the highest version seen, and why; `None` for a new tool.
    pub bump: Option<(Bump, Vec<String>)>,
}

/// What `verify` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    /// Tags checked.
    pub tags: usize,
    /// Tools on `main` checked.
    pub tools: usize,
    /// Each problem: what, where, what to do.
    pub problems: Vec<String>,
}

/// What reconciling found and did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Reconciled {
    /// Proposals found on `main` (merged with git, or an approval interrupted): tagged, their
    /// branches removed.
    pub landed: Vec<Landed>,
    /// Whether an interrupted move of `main` was finished or undone.
    pub journal: Option<String>,
}

/// The journal of a move of `main`.
#[derive(Debug, Serialize, serde::Deserialize)]
struct Journal {
    old: String,
    new: String,
    paths: Vec<String>,
}

/// An open registry.
pub struct Registry {
    pub(super) repo: Repository,
    root: PathBuf,
    /// The ledger as last read, with the file's identity then (read again when it changed).
    pub(super) known_cache: super::approval::KnownCache,
    /// Tool versions found valid (manifest read, files matching the recorded digest), by name
    /// and tree: a long-lived handle (an MCP session, the daemon) checks a version once. The
    /// key is the tree's object id, so a changed tool is a new key, never a stale hit; only
    /// what is a function of the tree alone belongs here (what refs say, such as a tag, and
    /// what the disk holds are checked on every run).
    valid: RefCell<HashMap<(String, Oid), Manifest>>,
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

/// Tool versions a handle remembers as valid before it starts over (each a manifest of a few
/// KiB).
const MAX_REMEMBERED: usize = 1024;

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("root", &self.root)
            .finish()
    }
}

/// The identity toolsmith commits as.
fn toolsmith_signature() -> Result<Signature<'static>, git2::Error> {
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

fn trailer<'a>(trailers: &'a [(String, String)], key: &str) -> Option<&'a str> {
    trailers
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A commit message: subject, body paragraphs, trailers.
fn message(subject: &str, body: &[String], trailers: &[(String, String)]) -> String {
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
    /// exist or is empty. An existing repository is checked, never overwritten.
    pub fn open_or_init(dir: &Path) -> Result<Registry, RegistryError> {
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
            Self::init(dir)
        } else {
            Self::open(dir)
        }
    }

    /// Opens an existing registry and checks its format; finishes what a crash interrupted.
    pub fn open(dir: &Path) -> Result<Registry, RegistryError> {
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
            known_cache: Default::default(),
            valid: RefCell::default(),
        };
        registry.check_format()?;
        Ok(registry)
    }

    fn init(dir: &Path) -> Result<Registry, RegistryError> {
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
        result.map_err(|source| RegistryError::Git {
            path: self.root.clone(),
            what: what.to_owned(),
            source,
        })
    }

    fn check_format(&self) -> Result<(), RegistryError> {
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
    fn write_tree(
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

    /// Every version of `name` tagged so far.
    fn tagged_versions(&self, name: &str) -> Result<Vec<semver::Version>, RegistryError> {
        let pattern = format!("{name}/v*");
        let tags = self.git("list tags", self.repo.tag_names(Some(&pattern)))?;
        Ok(tags
            .iter()
            .flatten()
            .flatten()
            .filter_map(|t| t.strip_prefix(&format!("{name}/v")))
            .filter_map(|v| semver::Version::parse(v).ok())
            .collect())
    }

    /// The version a new proposal of `name` with this interface gets, and the bump with its
    /// reasons when an earlier version exists: the interface diff against `main` moves the
    /// highest version seen (on `main`, tagged, or awaiting review), so no two proposals and no
    /// tag share a version.
    pub fn next_version(
        &self,
        name: &str,
        interface: &manifest::Interface,
    ) -> Result<NextVersion, RegistryError> {
        let main = self.main_commit()?;
        let tree = self.git("read main", main.tree())?;
        let current = self.manifest_in(&tree, name);
        let mut seen: Vec<semver::Version> = self.tagged_versions(name)?;
        seen.extend(current.as_ref().map(|m| m.version.clone()));
        for review in self.reviews()? {
            if review.name == name
                && let Ok(v) = semver::Version::parse(&review.version)
            {
                seen.push(v);
            }
        }
        let Some(highest) = seen.into_iter().max() else {
            return Ok(NextVersion {
                version: semver::Version::new(1, 0, 0),
                bump: None,
            });
        };
        let (bump, reasons) = match &current {
            Some(m) => versions::bump(&m.interface, interface),
            None => (Bump::Minor, vec!["no version of it is on main".to_owned()]),
        };
        Ok(NextVersion {
            version: bump.apply(&highest),
            bump: Some((bump, reasons)),
        })
    }

    /// Proposes a validated candidate: one commit on `review/<name>/<version>` on top of
    /// `main`. The version comes from [`Registry::next_version`] and is written into the
    /// manifest. Proposing the same candidate again returns its existing proposal.
    pub fn propose(&self, proposal: &Proposal) -> Result<Review, RegistryError> {
        let _turn = self.exclusive()?;
        if let Some(existing) = self
            .reviews()?
            .into_iter()
            .find(|r| r.candidate.as_deref() == Some(proposal.candidate.as_str()))
        {
            return Ok(existing);
        }
        let text =
            proposal
                .files
                .get(manifest::FILE_NAME)
                .ok_or_else(|| RegistryError::Invalid {
                    name: proposal.candidate.clone(),
                    problem: "the candidate has no tool.yaml".into(),
                })?;
        let mut manifest =
            Manifest::parse(text, manifest::FILE_NAME).map_err(|e| RegistryError::Invalid {
                name: proposal.candidate.clone(),
                problem: e.to_string(),
            })?;
        let name = manifest.name.clone();
        for path in proposal.files.keys() {
            let safe = !path.is_empty()
                && path.split('/').all(|part| {
                    !part.is_empty() && part != "." && part != ".." && !part.starts_with(".git")
                });
            if !safe {
                return Err(RegistryError::Invalid {
                    name,
                    problem: format!("file name `{path}` is not allowed in a tool's directory"),
                });
            }
        }
        let NextVersion { version, bump } = self.next_version(&name, &manifest.interface)?;
        manifest.version = version.clone();
        let mut files: BTreeMap<String, Vec<u8>> = proposal
            .files
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect();
        files.insert(
            manifest::FILE_NAME.to_owned(),
            manifest.to_yaml().into_bytes(),
        );
        let tool_tree = self.write_tree(&files, Some(&manifest.runtime.entrypoint))?;
        let main = self.main_commit()?;
        let base = self.git("read main", main.tree())?;
        let on_main = self.subtree_id(&base, &tool_path(&name)).is_some();
        let tree = self.with_tool(
            &base,
            &name,
            Some(tool_tree),
            Some(&Self::row_of(&manifest)),
        )?;
        let tree = self.git("read the new tree", self.repo.find_tree(tree))?;
        let verb = if on_main { "update" } else { "add" };
        let subject = format!("tool({name}): {verb} {version}");
        let mut body = vec![manifest.description.clone(), proposal.why.clone()];
        if let Some((bump, reasons)) = &bump {
            body.push(format!(
                "Version: {} ({}).",
                bump.as_str(),
                if reasons.is_empty() {
                    "the interface is unchanged".to_owned()
                } else {
                    reasons.join("; ")
                }
            ));
        }
        let mut trailers = proposal.trailers.clone();
        trailers.push(("Candidate".into(), proposal.candidate.clone()));
        let msg = message(&subject, &body, &trailers);
        let sig = self.git("make a signature", toolsmith_signature())?;
        let commit = self.git(
            "write the proposal",
            self.repo.commit(None, &sig, &sig, &msg, &tree, &[&main]),
        )?;
        let branch = format!("review/{name}/{version}");
        // In the ledger before the branch exists: a branch merged into main is taken for an
        // approval only when toolsmith made (or received) its proposal.
        self.record(&[(Kind::Proposal, commit, format!("refs/heads/{branch}"))])?;
        self.git(
            &format!("create {branch}"),
            self.repo.reference(
                &format!("refs/heads/{branch}"),
                commit,
                false,
                &format!("toolsmith: propose {}", proposal.candidate),
            ),
        )?;
        Ok(Review {
            branch,
            name,
            version: version.to_string(),
            candidate: Some(proposal.candidate.clone()),
            commit: commit.to_string(),
            subject,
            behind_main: false,
            bump: bump.map(|(b, _)| b),
        })
    }

    /// The proposals awaiting review, oldest first.
    pub fn reviews(&self) -> Result<Vec<Review>, RegistryError> {
        let main = self.main_commit()?.id();
        let mut out = Vec::new();
        let branches = self.git("list branches", self.repo.branches(Some(BranchType::Local)))?;
        for branch in branches.flatten() {
            let (branch, _) = branch;
            let Ok(full) = branch.get().name() else {
                continue;
            };
            let Some(rest) = full.strip_prefix(REVIEW_PREFIX) else {
                continue;
            };
            let Some((name, version)) = rest.rsplit_once('/') else {
                continue;
            };
            let Ok(commit) = branch.get().peel_to_commit() else {
                continue;
            };
            let msg = commit.message().unwrap_or_default().to_owned();
            let t = trailers(&msg);
            let bump = msg
                .lines()
                .find_map(|l| l.strip_prefix("Version: "))
                .and_then(|l| l.split_whitespace().next())
                .and_then(Bump::from_name);
            out.push((
                commit.time().seconds(),
                Review {
                    branch: format!("review/{rest}"),
                    name: name.to_owned(),
                    version: version.to_owned(),
                    candidate: trailer(&t, "Candidate").map(str::to_owned),
                    commit: commit.id().to_string(),
                    subject: commit
                        .summary()
                        .ok()
                        .flatten()
                        .unwrap_or_default()
                        .to_owned(),
                    behind_main: commit.parent_id(0).ok() != Some(main),
                    bump,
                },
            ));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.branch.cmp(&b.1.branch)));
        Ok(out.into_iter().map(|(_, r)| r).collect())
    }

    /// The proposal `key` names: a candidate id, a branch, or a tool with one proposal.
    pub fn review(&self, key: &str) -> Result<Review, RegistryError> {
        let reviews = self.reviews()?;
        let matches: Vec<&Review> = reviews
            .iter()
            .filter(|r| {
                r.candidate.as_deref() == Some(key)
                    || r.branch == key
                    || r.branch == format!("review/{key}")
                    || r.name == key
            })
            .collect();
        match matches.as_slice() {
            [] => Err(RegistryError::NoSuchReview(key.to_owned())),
            [one] => Ok((*one).clone()),
            many => Err(RegistryError::Ambiguous(
                key.to_owned(),
                many.iter()
                    .map(|r| r.branch.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        }
    }

    /// The diff a proposal makes against `main`, as a unified patch. When the tool on `main`
    /// is not an approved version (changed without review), the diff is against the version
    /// approved last instead — so that what was never reviewed is shown — after a line saying
    /// so.
    pub fn review_diff(&self, review: &Review) -> Result<String, RegistryError> {
        let oid = self.git("read the proposal", Oid::from_str(&review.commit))?;
        let commit = self.git("read the proposal", self.repo.find_commit(oid))?;
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let new = self.git("read the proposal", commit.tree())?;
        let path = tool_path(&review.name);
        let mut text = String::new();
        let old = match self.subtree_id(&main_tree, &path) {
            Some(on_main) => {
                let version = self
                    .manifest_in(&main_tree, &review.name)
                    .map(|m| m.version.to_string());
                let approved = version.as_deref().is_some_and(|v| {
                    self.check_approved(&review.name, v, on_main, &self.known(), None)
                        .is_ok()
                });
                if approved {
                    main_tree
                } else {
                    let base = self.approved_base(&review.name, version.as_deref());
                    text.push_str(&match &base {
                        Some((tag, _)) => format!(
                            "# {path} on main was changed without review: the diff is against \
                             the version approved as {tag}\n"
                        ),
                        None => format!(
                            "# {path} on main was never approved: the diff is against no tool \
                             at all\n"
                        ),
                    });
                    let id = self.with_tool(&main_tree, &review.name, base.map(|b| b.1), None)?;
                    self.git("read the approved version", self.repo.find_tree(id))?
                }
            }
            None => main_tree,
        };
        let mut opts = git2::DiffOptions::new();
        opts.pathspec(path);
        let diff = self.git(
            "diff the proposal",
            self.repo
                .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts)),
        )?;
        self.git(
            "print the diff",
            diff.print(git2::DiffFormat::Patch, |_, _, line| {
                let prefix = match line.origin() {
                    '+' | '-' | ' ' => line.origin().to_string(),
                    _ => String::new(),
                };
                text.push_str(&prefix);
                text.push_str(&String::from_utf8_lossy(line.content()));
                true
            }),
        )?;
        Ok(text)
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

    /// Approves a proposal: its commit lands on `main` with `Approved-by:` (on top of `main`
    /// as it is now: re-applied when `main` moved, refused when `main` changed the same tool
    /// since), the annotated tag `<name>/v<version>` is made, and the branch goes.
    pub fn approve(
        &self,
        key: &str,
        approver: &str,
        note: Option<&str>,
    ) -> Result<Landed, RegistryError> {
        let _turn = self.exclusive()?;
        let review = self.review(key)?;
        let tag = tag_name(&review.name, &review.version);
        if self.repo.refname_to_id(&format!("refs/tags/{tag}")).is_ok() {
            return Err(RegistryError::TagExists(tag));
        }
        let oid = self.git("read the proposal", Oid::from_str(&review.commit))?;
        if !self.known().contains(oid) {
            return Err(RegistryError::Invalid {
                name: review.name.clone(),
                problem: format!(
                    "{} was not proposed by toolsmith (its commit was made with git, and never \
                     validated): reject it (`toolsmith reject {} --reason …`); toolsmith \
                     proposes only what passed validation (`toolsmith adopt {}` makes a \
                     candidate of files committed on main)",
                    review.branch, review.branch, review.name
                ),
            });
        }
        let proposed = self.git("read the proposal", self.repo.find_commit(oid))?;
        let proposed_tree = self.git("read the proposal", proposed.tree())?;
        let base = self.git("read the proposal's base", proposed.parent(0))?;
        let base_tree = self.git("read the proposal's base", base.tree())?;
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let path = tool_path(&review.name);
        let tree = if base.id() == main.id() {
            proposed_tree.id()
        } else {
            if self.subtree_id(&main_tree, &path) != self.subtree_id(&base_tree, &path) {
                return Err(RegistryError::Conflict(format!(
                    "main changed {path} since {} was proposed: approve or reject what is on \
                     main first, or reject this proposal and let toolsmith propose it again",
                    review.branch
                )));
            }
            let tool = self.subtree_id(&proposed_tree, &path);
            let manifest = self.manifest_in(&proposed_tree, &review.name);
            self.with_tool(
                &main_tree,
                &review.name,
                tool,
                manifest.as_ref().map(Self::row_of).as_ref(),
            )?
        };
        let tree = self.git("read the tree", self.repo.find_tree(tree))?;
        let original = proposed.message().unwrap_or_default();
        let mut t = trailers(original);
        t.push(("Approved-by".into(), approver.to_owned()));
        let subject = proposed
            .summary()
            .ok()
            .flatten()
            .unwrap_or_default()
            .to_owned();
        let mut body: Vec<String> = original
            .trim_end()
            .split("\n\n")
            .skip(1)
            .map(str::to_owned)
            .collect();
        if !trailers(original).is_empty() {
            body.pop();
        }
        if let Some(note) = note.filter(|n| !n.trim().is_empty()) {
            body.push(format!("Review note: {}", note.trim()));
        }
        let msg = message(&subject, &body, &t);
        let author = proposed.author().to_owned();
        let committer = self.tagger(approver)?;
        let commit = self.git(
            "write the approved commit",
            self.repo
                .commit(None, &author, &committer, &msg, &tree, &[&main]),
        )?;
        self.land(
            main.id(),
            commit,
            &[path, index::FILE_NAME.to_owned()],
            &format!("toolsmith: approve {}", review.branch),
        )?;
        let landed = self.finish_landing(&review, commit, approver, "toolsmith")?;
        Ok(landed)
    }

    /// Tags a proposal found on `main` and removes its branch.
    fn finish_landing(
        &self,
        review: &Review,
        commit: Oid,
        approver: &str,
        via: &str,
    ) -> Result<Landed, RegistryError> {
        let tag = self.tag_version(&review.name, &review.version, commit, approver)?;
        if let Ok(mut reference) = self
            .repo
            .find_reference(&format!("refs/heads/{}", review.branch))
        {
            self.git(&format!("delete {}", review.branch), reference.delete())?;
            // Deleting a packed branch rewrites packed-refs, which leaves the new tag's
            // directory behind again.
            self.prune_empty_tag_dirs();
        }
        Ok(Landed {
            name: review.name.clone(),
            version: review.version.clone(),
            candidate: review.candidate.clone(),
            commit: commit.to_string(),
            tag,
            approved_by: approver.to_owned(),
            via: via.to_owned(),
        })
    }

    /// Makes the annotated tag `<name>/v<version>` on `commit` unless it exists; its name.
    fn tag_version(
        &self,
        name: &str,
        version: &str,
        commit: Oid,
        approver: &str,
    ) -> Result<String, RegistryError> {
        let tag = tag_name(name, version);
        if self
            .repo
            .refname_to_id(&format!("refs/tags/{tag}"))
            .is_err()
        {
            let object = self.git("read the commit", self.repo.find_object(commit, None))?;
            let tagger = self.tagger(approver)?;
            let msg = format!("{name} {version}\n\nApproved-by: {approver}\n");
            // The tag object first, then the ledger, then the ref: a tag ref toolsmith made is
            // always in the ledger (a crash in between leaves an unreferenced object).
            let tag_object = self.git(
                &format!("create tag {tag}"),
                self.repo
                    .tag_annotation_create(&tag, &object, &tagger, &msg),
            )?;
            let refname = format!("refs/tags/{tag}");
            self.record(&[(Kind::Tag, tag_object, refname.clone())])?;
            match self.repo.reference(
                &refname,
                tag_object,
                false,
                &format!("toolsmith: tag {tag}"),
            ) {
                Ok(_) => {}
                Err(e) if e.code() == ErrorCode::Exists => {}
                Err(e) => return Err(self.git(&format!("create tag {tag}"), Err(e))?),
            }
            // One loose file per tag makes every walk of the refs cost as many files as there
            // are tool versions; packed, they are one file (as `git pack-refs` leaves them).
            if let Err(e) = self.repo.refdb_compress() {
                tracing::warn!("the registry's refs were not packed: {e}");
            }
            self.prune_empty_tag_dirs();
        }
        Ok(tag)
    }

    /// Removes the empty directories libgit2 leaves under `refs/tags` (`refs/tags/<name>/`
    /// once its tags are packed): with one per tool, every walk of the refs would still open
    /// ten thousand directories. `git pack-refs` removes them; so do we (`remove_dir` leaves a
    /// directory that still holds a ref). Once done, this reads one small directory.
    fn prune_empty_tag_dirs(&self) {
        if let Ok(entries) = std::fs::read_dir(self.repo.path().join("refs/tags")) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
    }

    /// Rejects a proposal: the branch goes, its commit stays reachable as
    /// `refs/toolsmith/rejected/<candidate>`.
    pub fn reject(&self, key: &str, reason: &str) -> Result<Review, RegistryError> {
        let _turn = self.exclusive()?;
        let review = self.review(key)?;
        let oid = self.git("read the proposal", Oid::from_str(&review.commit))?;
        let keep = review
            .candidate
            .clone()
            .unwrap_or_else(|| review.branch.replace('/', "-"));
        let keep = format!("{REJECTED_PREFIX}{keep}");
        self.git(
            &format!("keep {keep}"),
            self.repo.reference(
                &keep,
                oid,
                true,
                &format!("toolsmith: rejected: {}", reason.replace('\n', " ")),
            ),
        )?;
        let mut branch = self.git(
            "find the branch",
            self.repo
                .find_reference(&format!("refs/heads/{}", review.branch)),
        )?;
        self.git(&format!("delete {}", review.branch), branch.delete())?;
        Ok(review)
    }

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

    fn flock(&self) -> Result<nix::fcntl::Flock<std::fs::File>, RegistryError> {
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
    fn clear_stale_locks(&self) {
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

    fn main_is_checked_out(&self) -> bool {
        !self.repo.is_bare()
            && self
                .repo
                .find_reference("HEAD")
                .ok()
                .and_then(|h| h.symbolic_target().ok().flatten().map(|t| t == MAIN))
                .unwrap_or(false)
    }

    /// The files under `path` (a tool's directory or a root file) in a commit's tree, by path
    /// from the root, with their ids and modes.
    fn files_under(
        &self,
        commit: Oid,
        path: &str,
    ) -> Result<BTreeMap<String, (Oid, i32)>, RegistryError> {
        let commit = self.git("read a commit", self.repo.find_commit(commit))?;
        let tree = self.git("read a commit", commit.tree())?;
        let mut out = BTreeMap::new();
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(out);
        };
        match entry.kind() {
            Some(ObjectType::Blob) => {
                out.insert(path.to_owned(), (entry.id(), entry.filemode()));
            }
            Some(ObjectType::Tree) => {
                let sub = self.git("read a tree", self.repo.find_tree(entry.id()))?;
                self.git(
                    "walk a tree",
                    sub.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
                        if e.kind() == Some(ObjectType::Blob) {
                            out.insert(
                                format!("{path}/{dir}{}", e.name().unwrap_or_default()),
                                (e.id(), e.filemode()),
                            );
                        }
                        git2::TreeWalkResult::Ok
                    }),
                )?;
            }
            _ => {}
        }
        Ok(out)
    }

    /// The files on disk under `path` (a directory or a file), by path from the root.
    fn disk_files_under(&self, path: &str) -> Vec<(String, bool)> {
        let full = self.root.join(path);
        if let Ok(meta) = std::fs::symlink_metadata(&full)
            && !meta.is_dir()
        {
            return vec![(path.to_owned(), meta.is_file())];
        }
        let mut out = Vec::new();
        let mut stack = vec![full];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = entry.path();
                let kind = entry.file_type();
                if kind.as_ref().is_ok_and(|t| t.is_dir()) {
                    stack.push(p);
                } else if let Ok(rel) = p.strip_prefix(&self.root) {
                    let plain = kind.is_ok_and(|t| t.is_file());
                    out.push((rel.to_string_lossy().into_owned(), plain));
                }
            }
        }
        out
    }

    /// How the work tree differs from `expected` (see [`Self::files_under`]) under `path`: each
    /// differing file, by path from the root, with what is wrong with it.
    fn disk_differences(
        &self,
        expected: &BTreeMap<String, (Oid, i32)>,
        path: &str,
    ) -> Vec<(String, &'static str)> {
        let on_disk = self.disk_files_under(path);
        let mut out = Vec::new();
        for (f, plain) in &on_disk {
            let what = match expected.get(f) {
                _ if !plain => "is not a plain file",
                None => "is not on main",
                Some((want, _)) => {
                    if Oid::hash_file(ObjectType::Blob, self.root.join(f)).ok() == Some(*want) {
                        continue;
                    }
                    "was changed"
                }
            };
            out.push((f.clone(), what));
        }
        for f in expected.keys() {
            if !on_disk.iter().any(|(d, _)| d == f) {
                out.push((f.clone(), "is missing"));
            }
        }
        out
    }

    /// Refuses when the work tree or the index differ from `base` under `paths`. Looks only at
    /// those paths: a registry of ten thousand tools is not scanned for one change.
    fn check_clean(&self, base: Oid, paths: &[String]) -> Result<(), RegistryError> {
        let mut index = self.git("read the index", self.repo.index())?;
        // Another process (git, another toolsmith) may have written it since it was loaded.
        self.git("read the index", index.read(false))?;
        let mut dirty = Vec::new();
        for p in paths {
            let expected = self.files_under(base, p)?;
            dirty.extend(
                self.disk_differences(&expected, p)
                    .into_iter()
                    .map(|(f, _)| f),
            );
            let prefix = format!("{p}/");
            for entry in index.iter() {
                let path = String::from_utf8_lossy(&entry.path).into_owned();
                if path != *p && !path.starts_with(&prefix) {
                    continue;
                }
                if expected.get(&path).map(|(id, _)| *id) != Some(entry.id) {
                    dirty.push(path);
                }
            }
        }
        dirty.sort();
        dirty.dedup();
        if dirty.is_empty() {
            Ok(())
        } else {
            Err(RegistryError::Dirty {
                root: self.root.clone(),
                paths: dirty.join(", "),
            })
        }
    }

    /// Makes the work tree and the index hold `commit`'s files under `paths`, and nothing else
    /// there.
    fn checkout_paths(&self, commit: Oid, paths: &[String]) -> Result<(), RegistryError> {
        let mut index = self.git("read the index", self.repo.index())?;
        self.git("read the index", index.read(false))?;
        let io = |path: PathBuf| move |source| RegistryError::Io { path, source };
        for p in paths {
            let wanted = self.files_under(commit, p)?;
            for (f, _) in self.disk_files_under(p) {
                if !wanted.contains_key(&f) {
                    let full = self.root.join(&f);
                    std::fs::remove_file(&full).map_err(io(full))?;
                }
            }
            let prefix = format!("{p}/");
            let stale: Vec<String> = index
                .iter()
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .filter(|path| {
                    (path == p || path.starts_with(&prefix)) && !wanted.contains_key(path)
                })
                .collect();
            for path in stale {
                self.git("update the index", index.remove_path(Path::new(&path)))?;
            }
            for (f, (id, mode)) in &wanted {
                let full = self.root.join(f);
                if let Some(dir) = full.parent() {
                    std::fs::create_dir_all(dir).map_err(io(dir.to_owned()))?;
                }
                let blob = self.git("read a file", self.repo.find_blob(*id))?;
                let tmp = full.with_file_name(format!(
                    ".{}.toolsmith-tmp",
                    full.file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default()
                ));
                std::fs::write(&tmp, blob.content()).map_err(io(tmp.clone()))?;
                let perm = if *mode == 0o100755 { 0o755 } else { 0o644 };
                std::fs::set_permissions(
                    &tmp,
                    <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(perm),
                )
                .map_err(io(tmp.clone()))?;
                std::fs::rename(&tmp, &full).map_err(io(full.clone()))?;
                self.git("update the index", index.add_path(Path::new(f)))?;
            }
            // Directories left empty go too.
            let top = self.root.join(p);
            if wanted.is_empty() && top.is_dir() {
                std::fs::remove_dir_all(&top).map_err(io(top.clone()))?;
            } else if top.is_dir() {
                remove_empty_dirs(&top);
            }
        }
        self.git("write the index", index.write())
    }

    /// Finishes or undoes an interrupted move of `main`, and recognises proposals that are on
    /// `main` already (merged with git, or an approval interrupted after `main` moved): each is
    /// tagged and its branch removed.
    pub fn reconcile(&self) -> Result<Reconciled, RegistryError> {
        let _turn = self.exclusive()?;
        self.reconcile_locked()
    }

    /// [`Registry::reconcile`], for a caller that holds [`Registry::exclusive`].
    pub(super) fn reconcile_locked(&self) -> Result<Reconciled, RegistryError> {
        let mut out = Reconciled::default();
        let file = self.repo.path().join(JOURNAL);
        if let Ok(text) = std::fs::read_to_string(&file) {
            if let Ok(journal) = serde_json::from_str::<Journal>(&text) {
                let main = self.main_commit()?.id().to_string();
                let target = if main == journal.new {
                    out.journal = Some(format!("finished moving main to {}", journal.new));
                    &journal.new
                } else {
                    out.journal = Some(format!(
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
        }
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
    fn merger(&self, main: &Commit<'_>, oid: Oid) -> String {
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
    fn landing_commit(&self, main: &Commit<'_>, review: &Review) -> Option<(Oid, String)> {
        self.landing_of(main, review.candidate.as_deref()?)
    }

    /// Where a candidate landed on `main`: the commit carrying its `Candidate:` trailer (the
    /// newest 10,000 commits are looked at), with its `Approved-by:`.
    pub fn landed_candidate(&self, candidate: &str) -> Option<(String, String)> {
        let main = self.main_commit().ok()?;
        self.landing_of(&main, candidate)
            .map(|(oid, by)| (oid.to_string(), by))
    }

    /// Why a candidate was rejected, when it was: the reason kept with its rejected ref.
    pub fn rejection_of(&self, candidate: &str) -> Option<String> {
        let name = format!("{REJECTED_PREFIX}{candidate}");
        self.repo.refname_to_id(&name).ok()?;
        let reason = self.repo.reflog(&name).ok().and_then(|log| {
            log.iter().find_map(|e| {
                e.message()
                    .ok()
                    .flatten()
                    .and_then(|m| m.strip_prefix("toolsmith: rejected: "))
                    .map(str::to_owned)
            })
        });
        Some(reason.unwrap_or_else(|| "rejected".to_owned()))
    }

    fn landing_of(&self, main: &Commit<'_>, candidate: &str) -> Option<(Oid, String)> {
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

    /// The tools on `main`, by name; a tool that cannot be run — its manifest does not read,
    /// a file is not a regular file, its files do not match its digest, or its directory is not
    /// what its version's tag approved — is listed with its problem.
    pub fn tools(&self) -> Result<Vec<ToolEntry>, RegistryError> {
        let main = self.main_commit()?;
        let tree = self.git("read main", main.tree())?;
        let Some(tools) = self.subtree_id(&tree, "tools") else {
            return Ok(Vec::new());
        };
        let tools = self.git("read tools/", self.repo.find_tree(tools))?;
        // A tool's entry depends only on its name and its tree: entries are cached by both, one
        // line each (`<name> <tree>\t<entry JSON>`), new ones appended, so listing ten thousand
        // tools parses only the manifests that changed and writes only their lines.
        let cache_path = self.repo.path().join(LISTING_CACHE);
        let text = std::fs::read_to_string(&cache_path).unwrap_or_default();
        let mut cache: std::collections::HashMap<&str, &str> = text
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .collect();
        let lines = text.lines().count();
        let mut out = Vec::with_capacity(tools.len());
        let mut fresh_lines = String::new();
        for entry in tools.iter() {
            if entry.kind() != Some(ObjectType::Tree) {
                continue;
            }
            let Ok(name) = entry.name() else {
                continue;
            };
            let key = format!("{name} {}", entry.id());
            let hit = cache
                .remove(key.as_str())
                .and_then(|json| serde_json::from_str::<ToolEntry>(json).ok());
            match hit {
                Some(hit) => out.push(hit),
                None => {
                    let mut fresh = self.entry(name, entry.id());
                    fresh.manifest = None;
                    if let Ok(json) = serde_json::to_string(&fresh) {
                        fresh_lines.push_str(&format!("{key}\t{json}\n"));
                    }
                    out.push(fresh);
                }
            }
        }
        // Lines for trees no longer on main pile up as tools change: rewritten when they
        // outnumber the live ones.
        if lines > 2 * out.len() + 64 {
            let mut all = String::new();
            for e in &out {
                if let Ok(json) = serde_json::to_string(e) {
                    all.push_str(&format!("{} {}\t{json}\n", e.name, e.tree));
                }
            }
            let tmp = cache_path.with_extension("tmp");
            if std::fs::write(&tmp, all).is_ok() {
                let _ = std::fs::rename(&tmp, &cache_path);
            }
        } else if !fresh_lines.is_empty() {
            use std::io::Write as _;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&cache_path)
            {
                let _ = f.write_all(fresh_lines.as_bytes());
            }
        }
        // Then what depends on more than the tree, never cached with it: whether main's tree is
        // what the version's tag approved (what a tag approved is remembered, by tag object).
        let known = self.known();
        let mut memo = super::approval::Memo::load(self);
        for e in out.iter_mut().filter(|e| e.problem.is_none()) {
            let (Some(version), Ok(tree)) = (e.version.clone(), Oid::from_str(&e.tree)) else {
                continue;
            };
            if let Err(problem) = self.bind(&e.name, &version, tree, &known, Some(&mut memo)) {
                e.problem = Some(problem);
                e.params = None;
            }
        }
        memo.save(self.repo.path());
        Ok(out)
    }

    /// A tool's entry from its tree alone: its manifest read and checked, its files' kinds and
    /// its digest. Whether the tree is an approved version is not in it (see
    /// [`Registry::bind`]).
    fn entry(&self, name: &str, tree: Oid) -> ToolEntry {
        let read = || -> Result<Manifest, String> {
            let t = self
                .repo
                .find_tree(tree)
                .map_err(|e| e.message().to_owned())?;
            let entry = t
                .get_name(manifest::FILE_NAME)
                .ok_or_else(|| "it has no tool.yaml".to_owned())?;
            let blob = self
                .repo
                .find_blob(entry.id())
                .map_err(|e| e.message().to_owned())?;
            let text = std::str::from_utf8(blob.content())
                .map_err(|_| "tool.yaml is not UTF-8".to_owned())?;
            let file = format!("tools/{name}/{}", manifest::FILE_NAME);
            let m = Manifest::parse(text, &file).map_err(|e| e.to_string())?;
            m.check(&file).map_err(|e| e.to_string())?;
            if m.name != name {
                return Err(format!(
                    "its manifest names it `{}`; a tool's directory and name must match",
                    m.name
                ));
            }
            let Some(validation) = &m.validation else {
                return Err("its manifest has no validation record: it was never validated".into());
            };
            let files = self.tool_files(name, tree).map_err(|e| match e {
                RegistryError::Invalid { problem, .. } => problem,
                other => other.to_string(),
            })?;
            // `check` accepted the recorded digest's form, so there is one to compare with.
            let found = crate::package::digest::recompute(&validation.digest, &files, &m)
                .unwrap_or_default();
            if found != validation.digest {
                return Err(format!(
                    "its files do not match the digest it was validated with ({} recorded, \
                     {found} found): they were changed after validation; roll back \
                     (`toolsmith rollback {name}`) or have it reviewed as a candidate \
                     (`toolsmith adopt {name}`)",
                    validation.digest
                ));
            }
            Ok(m)
        };
        match read() {
            Ok(m) => ToolEntry {
                name: name.to_owned(),
                version: Some(m.version.to_string()),
                description: m.description.clone(),
                deprecated: m.deprecated.is_some(),
                problem: None,
                tree: tree.to_string(),
                params: serde_json::value::to_raw_value(&m.interface.params).ok(),
                output: Some(m.interface.output),
                manifest: Some(m),
            },
            Err(problem) => ToolEntry {
                name: name.to_owned(),
                version: None,
                description: String::new(),
                deprecated: false,
                problem: Some(problem),
                tree: tree.to_string(),
                params: None,
                output: None,
                manifest: None,
            },
        }
    }

    /// One tool on `main`, checked as [`Registry::tools`] lists it (read from git, no cache).
    pub fn tool(&self, name: &str) -> Result<ToolEntry, RegistryError> {
        let main = self.main_commit()?;
        let tree = self.git("read main", main.tree())?;
        let id = self
            .subtree_id(&tree, &tool_path(name))
            .ok_or_else(|| RegistryError::NoSuchTool(name.to_owned()))?;
        let mut entry = self.entry(name, id);
        if entry.problem.is_none()
            && let Some(version) = entry.version.clone()
            && let Err(problem) = self.bind(name, &version, id, &self.known(), None)
        {
            entry.problem = Some(problem);
            entry.manifest = None;
            entry.params = None;
        }
        Ok(entry)
    }

    /// The manifest of an entry [`Registry::tools`] listed without a problem, read from its
    /// tree as it is: for what a listing shows (MCP definitions, search results, skills), not
    /// for running — [`Registry::runnable`] checks everything again, from git.
    pub fn listed_manifest(&self, entry: &ToolEntry) -> Option<Manifest> {
        if entry.problem.is_some() {
            return None;
        }
        let tree = self.repo.find_tree(Oid::from_str(&entry.tree).ok()?).ok()?;
        let blob = self
            .repo
            .find_blob(tree.get_name(manifest::FILE_NAME)?.id())
            .ok()?;
        Manifest::parse(
            std::str::from_utf8(blob.content()).ok()?,
            manifest::FILE_NAME,
        )
        .ok()
    }

    /// The `README.md` of a tool on `main`.
    pub fn tool_readme(&self, name: &str) -> Result<Option<String>, RegistryError> {
        let main = self.main_commit()?;
        let tree = self.git("read main", main.tree())?;
        self.blob_text(&tree, &format!("tools/{name}/README.md"))
    }

    /// When each approved version was tagged: `(name, version)` → Unix milliseconds of its
    /// annotated tag (lightweight or unreadable tags are left out). `known` keeps the times
    /// read before, by tag object: a long-lived caller peels only the tags made since.
    pub fn approval_times(
        &self,
        known: &mut std::collections::HashMap<Oid, i64>,
    ) -> BTreeMap<(String, String), i64> {
        let mut times = BTreeMap::new();
        let Ok(refs) = self.repo.references_glob("refs/tags/*/v*") else {
            return times;
        };
        for reference in refs.flatten() {
            let (Ok(short), Some(target)) = (reference.shorthand(), reference.target()) else {
                continue;
            };
            let Some((name, version)) = short.split_once("/v") else {
                continue;
            };
            let time = match known.get(&target) {
                Some(t) => Some(*t),
                None => {
                    let t = self
                        .repo
                        .find_tag(target)
                        .ok()
                        .and_then(|t| t.tagger().map(|s| s.when().seconds() * 1000));
                    if let Some(t) = t {
                        known.insert(target, t);
                    }
                    t
                }
            };
            if let Some(t) = time {
                times.insert((name.to_owned(), version.to_owned()), t);
            }
        }
        times
    }

    /// A tool ready to run: its manifest read and checked, its files regular files matching
    /// the digest it was validated with, its directory on `main` the tree its version's tag
    /// approved, and its directory on disk holding exactly those files.
    pub fn runnable(&self, name: &str) -> Result<(Manifest, PathBuf), RegistryError> {
        if !manifest::valid_name(name) {
            return Err(RegistryError::NoSuchTool(name.to_owned()));
        }
        let invalid = |problem: String| RegistryError::Invalid {
            name: name.to_owned(),
            problem,
        };
        // main is read once: the version checked is the version whose files are compared.
        let path = tool_path(name);
        let main = self.main_commit()?;
        let tree_id = self
            .subtree_id(&self.git("read main", main.tree())?, &path)
            .ok_or_else(|| RegistryError::NoSuchTool(name.to_owned()))?;
        let refuse = |problem: String| {
            invalid(format!(
                "{problem}; it is not run until main holds a valid version (`toolsmith verify`)"
            ))
        };
        // What is a function of the tree alone (the manifest read and checked, the files
        // matching its digest) is remembered per (name, tree); what refs say (the tag that
        // approved it) is checked on every run, from git.
        let key = (name.to_owned(), tree_id);
        let known = self.valid.borrow().get(&key).cloned();
        let manifest = match known {
            Some(manifest) => manifest,
            None => {
                let manifest = self.validated(name, tree_id).map_err(refuse)?;
                let mut valid = self.valid.borrow_mut();
                if valid.len() >= MAX_REMEMBERED {
                    valid.clear();
                }
                valid.insert(key, manifest.clone());
                manifest
            }
        };
        self.bind(
            name,
            &manifest.version.to_string(),
            tree_id,
            &self.known(),
            None,
        )
        .map_err(refuse)?;
        if self.repo.is_bare() {
            return Err(invalid(
                "the registry has no work tree to run tools from".into(),
            ));
        }
        if let Some(problem) = self.disk_problem(name, main.id())? {
            return Err(invalid(problem));
        }
        Ok((manifest, self.root.join(tool_path(name))))
    }

    /// How a tool's directory on disk differs from `main`'s (`commit`), when it does: the
    /// bytes are compared as they are, so a checkout that changed them (an eol conversion, a
    /// filter or `ident` set in `.gitattributes`) differs too.
    fn disk_problem(&self, name: &str, commit: Oid) -> Result<Option<String>, RegistryError> {
        let path = tool_path(name);
        let differs = self.disk_differences(&self.files_under(commit, &path)?, &path);
        Ok(differs.first().map(|(file, what)| {
            format!(
                "its files on disk differ from main ({file} {what}): refusing to run them; \
                 `git -C {} status` shows the change, `git checkout -- {path}` restores main's \
                 (a `.gitattributes` that converts or filters tool files must go)",
                self.root.display(),
            )
        }))
    }

    /// The commit on `main` that brought the tool's current files: the newest first-parent
    /// commit whose parent had other files (or none) there.
    fn introducing_commit(&self, name: &str) -> Result<Option<Commit<'_>>, RegistryError> {
        let path = tool_path(name);
        let main = self.main_commit()?;
        let current = self.subtree_id(&self.git("read main", main.tree())?, &path);
        if current.is_none() {
            return Ok(None);
        }
        let mut commit = main;
        loop {
            let parent = match commit.parent(0) {
                Ok(p) => p,
                Err(_) => return Ok(Some(commit)),
            };
            let there = self.subtree_id(&self.git("read history", parent.tree())?, &path);
            if there != current {
                return Ok(Some(commit));
            }
            commit = parent;
        }
    }

    /// Rolls a tool back: a new commit on `main` reverting the one that brought its current
    /// version — the commit its version's tag names, else the newest commit that changed its
    /// files — so the tool returns to what it was before (or goes, when it was new).
    pub fn rollback(&self, name: &str) -> Result<(String, Option<String>, String), RegistryError> {
        let _turn = self.exclusive()?;
        let path = tool_path(name);
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let current_manifest = self.manifest_in(&main_tree, name);
        let current = current_manifest
            .as_ref()
            .map(|m| m.version.to_string())
            .unwrap_or_else(|| "?".into());
        let tagged = current_manifest.as_ref().and_then(|m| {
            let tag = format!("refs/tags/{}", tag_name(name, &m.version.to_string()));
            let commit = self
                .repo
                .revparse_single(&tag)
                .ok()?
                .peel_to_commit()
                .ok()?;
            // Only when main still holds what the tag does.
            let same =
                self.subtree_id(&commit.tree().ok()?, &path) == self.subtree_id(&main_tree, &path);
            same.then_some(commit)
        });
        let commit = match tagged {
            Some(c) => c,
            None => match self.introducing_commit(name)? {
                Some(c) => c,
                None => return Err(RegistryError::NoSuchTool(name.to_owned())),
            },
        };
        let parent = self.git("read the version before", commit.parent(0))?;
        let parent_tree = self.git("read the version before", parent.tree())?;
        let before = self.subtree_id(&parent_tree, &path);
        let before_manifest = self.manifest_in(&parent_tree, name);
        let tree = self.with_tool(
            &main_tree,
            name,
            before,
            before_manifest.as_ref().map(Self::row_of).as_ref(),
        )?;
        let tree = self.git("read the tree", self.repo.find_tree(tree))?;
        let to = before_manifest.as_ref().map(|m| m.version.to_string());
        let what = match &to {
            Some(v) => format!("back to {v}"),
            None => "removed: it had no earlier version".to_owned(),
        };
        let msg = message(
            &format!("tool({name}): revert {current}"),
            &[
                format!("This reverts commit {}.", commit.id()),
                format!("{name} {current} rolled back; {what}."),
            ],
            &[("Rolled-back-by".into(), self.approver())],
        );
        let sig = self.tagger(&self.approver())?;
        let new = self.git(
            "write the revert",
            self.repo.commit(None, &sig, &sig, &msg, &tree, &[&main]),
        )?;
        self.land(
            main.id(),
            new,
            &[path, index::FILE_NAME.to_owned()],
            &format!("toolsmith: rollback {name}"),
        )?;
        Ok((current, to, new.to_string()))
    }

    /// Deprecates a tool: a new patch version on `main` whose manifest says so (and what
    /// replaces it), tagged like any version.
    pub fn deprecate(
        &self,
        name: &str,
        replaced_by: Option<&str>,
        reason: &str,
    ) -> Result<Landed, RegistryError> {
        let _turn = self.exclusive()?;
        let entry = self.tool(name)?;
        let Some(mut manifest) = entry.manifest else {
            return Err(RegistryError::Invalid {
                name: name.to_owned(),
                problem: entry.problem.unwrap_or_default(),
            });
        };
        if let Some(other) = replaced_by {
            self.tool(other)?;
        }
        let mut versions = self.tagged_versions(name)?;
        versions.push(manifest.version.clone());
        let highest = versions
            .into_iter()
            .max()
            .unwrap_or(manifest.version.clone());
        let version = Bump::Patch.apply(&highest);
        let tag = tag_name(name, &version.to_string());
        if self.repo.refname_to_id(&format!("refs/tags/{tag}")).is_ok() {
            return Err(RegistryError::TagExists(tag));
        }
        manifest.version = version.clone();
        manifest.deprecated = Some(manifest::Deprecation {
            since: version.clone(),
            replaced_by: replaced_by.map(str::to_owned),
            reason: reason.to_owned(),
        });
        let tree_id = self.git("read the tool", Oid::from_str(&entry.tree))?;
        let mut files: BTreeMap<String, Vec<u8>> = self
            .tool_files(name, tree_id)?
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect();
        files.insert(manifest::FILE_NAME.into(), manifest.to_yaml().into_bytes());
        let readme = files
            .get("README.md")
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        let notice = match replaced_by {
            Some(other) => {
                format!("> **Deprecated** since {version}: {reason} Use `{other}` instead.\n\n")
            }
            None => format!("> **Deprecated** since {version}: {reason}\n\n"),
        };
        files.insert("README.md".into(), format!("{notice}{readme}").into_bytes());
        let tool = self.write_tree(&files, Some(&manifest.runtime.entrypoint))?;
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let tree = self.with_tool(&main_tree, name, Some(tool), Some(&Self::row_of(&manifest)))?;
        let tree = self.git("read the tree", self.repo.find_tree(tree))?;
        let approver = self.approver();
        let mut t = vec![("Deprecated-by".to_owned(), approver.clone())];
        if let Some(other) = replaced_by {
            t.push(("Replaced-by".into(), other.to_owned()));
        }
        let msg = message(
            &format!("tool({name}): deprecate {version}"),
            &[reason.to_owned()],
            &t,
        );
        let sig = self.tagger(&approver)?;
        let new = self.git(
            "write the deprecation",
            self.repo.commit(None, &sig, &sig, &msg, &tree, &[&main]),
        )?;
        self.land(
            main.id(),
            new,
            &[tool_path(name), index::FILE_NAME.to_owned()],
            &format!("toolsmith: deprecate {name}"),
        )?;
        let version = version.to_string();
        let tag = self.tag_version(name, &version, new, &approver)?;
        Ok(Landed {
            name: name.to_owned(),
            version,
            candidate: None,
            commit: new.to_string(),
            tag,
            approved_by: approver,
            via: "toolsmith".to_owned(),
        })
    }

    /// Checks every tag (an annotated tag toolsmith made or received, whose tree holds a valid
    /// version of that name and version) and every tool on `main` (valid, the tree its
    /// version's tag approved, and its files on disk the same).
    pub fn verify(&self) -> Result<VerifyReport, RegistryError> {
        let mut report = VerifyReport::default();
        let known = self.known();
        let tags = self.git("list tags", self.repo.tag_names(Some("*/v*")))?;
        for tag in tags.iter().flatten().flatten() {
            report.tags += 1;
            let Some((name, version)) = tag.rsplit_once("/v") else {
                continue;
            };
            let problem = (|| -> Result<Option<String>, RegistryError> {
                let refname = format!("refs/tags/{tag}");
                let target = self.git(
                    &format!("read tag {tag}"),
                    self.repo.refname_to_id(&refname),
                )?;
                let object = self.git(
                    &format!("read tag {tag}"),
                    self.repo.find_object(target, None),
                )?;
                if object.kind() != Some(ObjectType::Tag) {
                    return Ok(Some(format!(
                        "a lightweight tag, which approves nothing (toolsmith approves with \
                         annotated tags): delete it (`git tag -d {tag}`)"
                    )));
                }
                if !known.contains(target) {
                    return Ok(Some(format!(
                        "not made or received by toolsmith (a tag made with git is not an \
                         approval): delete it (`git tag -d {tag}`)"
                    )));
                }
                let commit = self.git(&format!("read tag {tag}"), object.peel_to_commit())?;
                let tree = self.git(&format!("read tag {tag}"), commit.tree())?;
                let Some(id) = self.subtree_id(&tree, &tool_path(name)) else {
                    return Ok(Some(format!("its commit has no tools/{name}")));
                };
                Ok(self.check_version(name, Some(version), id).err())
            })();
            match problem {
                Ok(Some(p)) => report.problems.push(format!("tag {tag}: {p}")),
                Ok(None) => {}
                Err(e) => report.problems.push(format!("tag {tag}: {e}")),
            }
        }
        let main = self.main_commit()?.id();
        for entry in self.tools()? {
            report.tools += 1;
            let tree = self.git("read a tool", Oid::from_str(&entry.tree))?;
            let problem = match self.approved(&entry.name, tree, &known) {
                Err(p) => Some(p),
                Ok(_) if self.main_is_checked_out() => self.disk_problem(&entry.name, main)?,
                Ok(_) => None,
            };
            if let Some(p) = problem {
                report
                    .problems
                    .push(format!("main: tools/{}: {p}", entry.name));
            }
        }
        Ok(report)
    }

    /// Whether a tool tree holds a valid version: its manifest reads and passes its checks,
    /// names the tool (and `version`, when given) and its files match its digest.
    fn check_version(&self, name: &str, version: Option<&str>, tree: Oid) -> Result<(), String> {
        let m = self.validated(name, tree)?;
        match version {
            Some(v) if m.version.to_string() != v => {
                Err(format!("the manifest says version {}", m.version))
            }
            _ => Ok(()),
        }
    }

    /// The manifest of a tool tree, read and checked as [`Registry::entry`] does: its files
    /// regular files matching the digest it was validated with.
    fn validated(&self, name: &str, tree: Oid) -> Result<Manifest, String> {
        let entry = self.entry(name, tree);
        match entry.manifest {
            Some(m) => Ok(m),
            None => Err(entry.problem.unwrap_or_default()),
        }
    }

    /// [`Registry::validated`], and the tree is what the version's tag approved (read from
    /// git, never from a cache: this decides what runs).
    fn approved(&self, name: &str, tree: Oid, known: &Known) -> Result<Manifest, String> {
        let m = self.validated(name, tree)?;
        self.bind(name, &m.version.to_string(), tree, known, None)?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
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
