//! The approval binding: a tool on `main` is what a person approved (or a policy rule
//! auto-approved) only when its directory there, as a git tree — every file, mode, link and
//! submodule entry, and the manifest with its sandbox profile — is the tree of the commit its
//! version's annotated tag `<name>/v<version>` names. The tag must be one toolsmith made or
//! received (see [`super::ledger`]); `toolsmith sync` keeps the remote's tags under
//! `refs/remotes/origin/tags/`, and those approve too (a teammate's approval of the same
//! version, kept beside ours when the two differ).
//!
//! A change on `main` that did not come through review — a hand commit, even with its digest
//! recomputed, a widened manifest, a mode changed, a link or a submodule added — no longer
//! matches: the tool is refused everywhere (run, MCP, skills export), reported by `verify` and
//! the daemon, and [`Registry::unapproved`] gives its files to make a candidate of
//! (`toolsmith adopt`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

use git2::{ObjectType, Oid};

use super::ledger::{Kind, Known, Ledger};
use super::repo::{APPROVED_CACHE, REMOTE_TAGS, Registry, RegistryError, tag_name, tool_path};

/// The identity of the ledger's file when it was read (`None`: there was none).
type Stamp = Option<(u64, u64, i64, i64)>;

/// The ledger as a registry last read it.
#[derive(Debug, Default)]
pub struct KnownCache(Mutex<Option<(Stamp, Arc<Known>)>>);

/// What a tag approves of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tagged {
    /// The tool's tree in the tagged commit.
    Tree(Oid),
    /// The tagged commit has no such tool (or the tag names no commit).
    Missing,
    /// A lightweight tag: it approves nothing.
    Lightweight,
}

/// What a listing needs to check many tools at once: what tags approved, as far as already read
/// (see [`APPROVED_CACHE`]), and every tag ref's target, read in one pass over the refs rather
/// than looked up tool by tool.
#[derive(Debug, Default)]
pub(super) struct Memo {
    seen: HashMap<(Oid, String), Tagged>,
    fresh: String,
    refs: HashMap<String, Oid>,
}

impl Memo {
    /// The cache file's lines (a line that does not read is skipped) and the tag refs.
    pub(super) fn load(registry: &Registry) -> Memo {
        let git_dir = registry.repo.path();
        let mut refs = HashMap::new();
        for prefix in ["refs/tags/", REMOTE_TAGS] {
            refs.extend(registry.ref_targets(prefix));
        }
        let text = std::fs::read_to_string(git_dir.join(APPROVED_CACHE)).unwrap_or_default();
        let mut seen = HashMap::new();
        for line in text.lines() {
            let mut words = line.split(' ');
            let (Some(tag), Some(tool), Some(what)) = (words.next(), words.next(), words.next())
            else {
                continue;
            };
            let Ok(tag) = Oid::from_str(tag) else {
                continue;
            };
            let tagged = match what {
                "-" => Tagged::Missing,
                "lightweight" => Tagged::Lightweight,
                tree => match Oid::from_str(tree) {
                    Ok(t) => Tagged::Tree(t),
                    Err(_) => continue,
                },
            };
            seen.insert((tag, tool.to_owned()), tagged);
        }
        Memo {
            seen,
            fresh: String::new(),
            refs,
        }
    }

    /// Appends what was read since [`Memo::load`] (a cache: a failure only costs a re-read).
    pub(super) fn save(self, git_dir: &Path) {
        use std::io::Write as _;
        if self.fresh.is_empty() {
            return;
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(git_dir.join(APPROVED_CACHE))
        {
            let _ = f.write_all(self.fresh.as_bytes());
        }
    }
}

/// A tool on `main` that is not an approved version, as [`Registry::unapproved`] reads it.
#[derive(Debug, Clone)]
pub struct Unapproved {
    /// Its files on `main`, by path inside its directory.
    pub files: BTreeMap<String, String>,
    /// Why it is not approved, and how it differs from the version approved last.
    pub problem: String,
    /// The tag of the version approved last, when there is one.
    pub approved: Option<String>,
    /// `main`'s commit the files were read from.
    pub main: String,
}

/// What to do about a tool whose `main` is not what was approved.
fn remedy(name: &str) -> String {
    format!(
        "roll it back to the approved version (`toolsmith rollback {name}`, or `git revert` the \
         commit), or have these files validated and reviewed as a candidate (`toolsmith adopt \
         {name}`)"
    )
}

/// A tree's entries by path, recursively, with their ids and modes (every kind of entry).
fn flatten(repo: &git2::Repository, tree: Oid) -> BTreeMap<String, (Oid, i32)> {
    let mut out = BTreeMap::new();
    if let Ok(tree) = repo.find_tree(tree) {
        let _ = tree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
            if e.kind() != Some(ObjectType::Tree) {
                let name = String::from_utf8_lossy(e.name_bytes());
                out.insert(format!("{dir}{name}"), (e.id(), e.filemode()));
            }
            git2::TreeWalkResult::Ok
        });
    }
    out
}

/// A mode as a reader knows it.
fn kind_of(mode: i32) -> String {
    match mode {
        0o100644 => "a file".into(),
        0o100755 => "an executable file".into(),
        0o120000 => "a symbolic link".into(),
        0o160000 => "a submodule".into(),
        other => format!("mode {other:o}"),
    }
}

impl Registry {
    /// The registry's ledger.
    fn ledger(&self) -> Ledger {
        Ledger::new(self.repo.path())
    }

    /// What the ledger vouches for: its lines whose seal checks with the state directory's key;
    /// nothing when it is missing or cannot be read (every tool is then refused, saying why,
    /// rather than any trusted). Read again only when
    /// the file changed (a registry held open answers many questions).
    pub(super) fn known(&self) -> Arc<Known> {
        let ledger = self.ledger();
        let stamp = std::fs::metadata(ledger.path()).ok().map(|m| {
            use std::os::unix::fs::MetadataExt as _;
            (m.ino(), m.len(), m.mtime(), m.mtime_nsec())
        });
        let mut cache = match self.known_cache.0.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((seen, known)) = cache.as_ref()
            && *seen == stamp
        {
            return Arc::clone(known);
        }
        let known = Arc::new(ledger.known(self.seal()));
        *cache = Some((stamp, Arc::clone(&known)));
        known
    }

    /// The direct targets of the refs under `prefix` (a tag ref's target is its tag object).
    fn ref_targets(&self, prefix: &str) -> Vec<(String, Oid)> {
        let Ok(refs) = self.repo.references_glob(&format!("{prefix}*")) else {
            return Vec::new();
        };
        refs.flatten()
            .filter_map(|r| Some((r.name().ok()?.to_owned(), r.target()?)))
            .collect()
    }

    /// Whether the registry holds tags of toolsmith's form (`<name>/v<version>`, its own or the
    /// remote's): a registry that does has approvals, and a ledger that vouches for them.
    pub(super) fn has_tool_tags(&self) -> bool {
        ["refs/tags/*/v*".to_owned(), format!("{REMOTE_TAGS}*/v*")]
            .iter()
            .any(|glob| {
                self.repo
                    .references_glob(glob)
                    .is_ok_and(|mut refs| refs.next().is_some())
            })
    }

    /// Starts the ledger, empty, when there is none and the registry holds no tags: a new
    /// registry. One that holds tags and no ledger lost it (or had it removed): nothing there
    /// is trusted until a person re-approves ([`Registry::reapprove`]), so it is not started.
    /// Called with the registry held.
    pub(super) fn start_ledger(&self) -> Result<(), RegistryError> {
        let ledger = self.ledger();
        if ledger.exists() || self.has_tool_tags() {
            return Ok(());
        }
        ledger
            .start(self.seal(), &[])
            .map_err(|source| RegistryError::Io {
                path: ledger.path().to_owned(),
                source,
            })
    }

    /// Records objects toolsmith made or received, each sealed with the state directory's key.
    /// Called with the registry held.
    pub(super) fn record(&self, entries: &[(Kind, Oid, String)]) -> Result<(), RegistryError> {
        let ledger = self.ledger();
        ledger
            .record(self.seal(), entries)
            .map_err(|source| RegistryError::Io {
                path: ledger.path().to_owned(),
                source,
            })
    }

    /// The refs under `refs/remotes/origin/` a fetch may bring tags and proposals to, with
    /// their targets: taken before a fetch, for [`Registry::record_fetched`].
    pub(super) fn fetched_refs(&self) -> HashMap<String, Oid> {
        let mut out = HashMap::new();
        for prefix in [REMOTE_TAGS, "refs/remotes/origin/review/"] {
            out.extend(self.ref_targets(prefix));
        }
        out
    }

    /// Records the tags and review branches the fetch brought under `refs/remotes/origin/`
    /// that the ledger does not hold yet: those that are new or moved since `before` (what
    /// [`Registry::fetched_refs`] said before it). A ref planted there by hand that the fetch
    /// left alone is not the remote's, and is not recorded.
    pub(super) fn record_fetched(
        &self,
        before: &HashMap<String, Oid>,
    ) -> Result<(), RegistryError> {
        let known = self.known();
        let mut entries = Vec::new();
        for (prefix, kind) in [
            (REMOTE_TAGS, Kind::Tag),
            ("refs/remotes/origin/review/", Kind::Proposal),
        ] {
            for (name, oid) in self.ref_targets(prefix) {
                if !known.contains(oid) && before.get(&name) != Some(&oid) {
                    entries.push((kind, oid, name));
                }
            }
        }
        if entries.is_empty() {
            return Ok(());
        }
        self.record(&entries)
    }

    /// What the tag object (or commit, for a lightweight tag) `target` approves of `name`.
    fn tagged(&self, target: Oid, name: &str, memo: Option<&mut Memo>) -> Tagged {
        let key = (target, name.to_owned());
        if let Some(memo) = &memo
            && let Some(t) = memo.seen.get(&key)
        {
            return *t;
        }
        let read = || -> Tagged {
            let Ok(object) = self.repo.find_object(target, None) else {
                return Tagged::Missing;
            };
            if object.kind() != Some(ObjectType::Tag) {
                return Tagged::Lightweight;
            }
            let tree = object.peel_to_commit().and_then(|c| c.tree());
            match tree
                .ok()
                .and_then(|t| self.subtree_id(&t, &tool_path(name)))
            {
                Some(id) => Tagged::Tree(id),
                None => Tagged::Missing,
            }
        };
        let tagged = read();
        if let Some(memo) = memo {
            let what = match tagged {
                Tagged::Tree(id) => id.to_string(),
                Tagged::Missing => "-".into(),
                Tagged::Lightweight => "lightweight".into(),
            };
            memo.fresh.push_str(&format!("{target} {name} {what}\n"));
            memo.seen.insert(key, tagged);
        }
        tagged
    }

    /// How tree `new` differs from tree `old`, one phrase per path (the first few).
    pub(super) fn tree_differences(&self, old: Oid, new: Oid) -> Vec<String> {
        let (a, b) = (flatten(&self.repo, old), flatten(&self.repo, new));
        let mut out = Vec::new();
        for (path, (id, mode)) in &b {
            match a.get(path) {
                None => out.push(format!("{path} added ({})", kind_of(*mode))),
                Some((_, old_mode)) if old_mode != mode => out.push(format!(
                    "{path} changed from {} to {}",
                    kind_of(*old_mode),
                    kind_of(*mode)
                )),
                Some((old_id, _)) if old_id != id => out.push(format!("{path} changed")),
                Some(_) => {}
            }
        }
        for path in a.keys().filter(|p| !b.contains_key(*p)) {
            out.push(format!("{path} removed"));
        }
        const SHOWN: usize = 8;
        if out.len() > SHOWN {
            let more = out.len() - SHOWN;
            out.truncate(SHOWN);
            out.push(format!("and {more} more"));
        }
        out
    }

    /// Whether `tree`, `name`'s directory on `main` at `version`, is what that version's tag
    /// approved: `Err` says what is wrong (see [`Registry::bind`] for what to do too). `memo`
    /// (listings) caches what tags approved; without it, git is read.
    pub(super) fn check_approved(
        &self,
        name: &str,
        version: &str,
        tree: Oid,
        known: &Known,
        mut memo: Option<&mut Memo>,
    ) -> Result<(), String> {
        let tag = tag_name(name, version);
        let mut problems = Vec::new();
        let mut approved = None;
        let mut tagged_at_all = false;
        for (refname, whose) in [
            (format!("refs/tags/{tag}"), ""),
            (format!("{REMOTE_TAGS}{tag}"), " (the remote's)"),
        ] {
            let target = match &memo {
                Some(m) => m.refs.get(&refname).copied(),
                None => self.repo.refname_to_id(&refname).ok(),
            };
            let Some(target) = target else {
                continue;
            };
            tagged_at_all = true;
            match self.tagged(target, name, memo.as_deref_mut()) {
                Tagged::Lightweight => problems.push(format!(
                    "tag {tag}{whose} is a lightweight tag, which approves nothing (toolsmith \
                     approves with annotated tags)"
                )),
                Tagged::Missing => problems.push(format!(
                    "tag {tag}{whose} names a commit without tools/{name}"
                )),
                Tagged::Tree(_) if !known.contains(target) => {
                    let why = known.why_not(target);
                    problems.push(if why.by_hand {
                        format!("tag {tag}{whose} was not made by toolsmith: {}", why.reason)
                    } else {
                        format!("tag {tag}{whose} is not trusted: {}", why.reason)
                    })
                }
                Tagged::Tree(id) if id == tree => return Ok(()),
                Tagged::Tree(id) => approved = approved.or(Some((format!("{tag}{whose}"), id))),
            }
        }
        let what = match approved {
            Some((tag, id)) => format!(
                "its files on main differ from what was approved as {tag} ({}): they were \
                 changed without review",
                self.tree_differences(id, tree).join("; ")
            ),
            None if !tagged_at_all => format!(
                "version {version} on main was never approved: there is no tag {tag} (a change \
                 committed without review)"
            ),
            None => problems.join("; "),
        };
        Err(what)
    }

    /// [`Registry::check_approved`], its problem followed by what to do.
    pub(super) fn bind(
        &self,
        name: &str,
        version: &str,
        tree: Oid,
        known: &Known,
        memo: Option<&mut Memo>,
    ) -> Result<(), String> {
        self.check_approved(name, version, tree, known, memo)
            .map_err(|what| format!("{what}; {}", remedy(name)))
    }

    /// The version of `name` approved last, to compare `main` with when `main` is not an
    /// approved version: the tag of `main`'s version when it is a trusted annotated tag, else
    /// the highest version whose tag is.
    pub(super) fn approved_base(&self, name: &str, version: Option<&str>) -> Option<(String, Oid)> {
        let known = self.known();
        let usable = |tag: &str| -> Option<Oid> {
            let target = self.repo.refname_to_id(&format!("refs/tags/{tag}")).ok()?;
            match self.tagged(target, name, None) {
                Tagged::Tree(id) if known.contains(target) => Some(id),
                _ => None,
            }
        };
        if let Some(v) = version {
            let tag = tag_name(name, v);
            if let Some(id) = usable(&tag) {
                return Some((tag, id));
            }
        }
        let names = self.repo.tag_names(Some(&format!("{name}/v*"))).ok()?;
        let mut versions: Vec<semver::Version> = names
            .iter()
            .flatten()
            .flatten()
            .filter_map(|t| t.strip_prefix(&format!("{name}/v")))
            .filter_map(|v| semver::Version::parse(v).ok())
            .collect();
        versions.sort();
        versions.into_iter().rev().find_map(|v| {
            let tag = tag_name(name, &v.to_string());
            usable(&tag).map(|id| (tag, id))
        })
    }

    /// A tool on `main` that is not an approved version: its files, to make a candidate of
    /// (`toolsmith adopt`), and how it differs from the version approved last. Refused when
    /// `main` holds an approved version (nothing to adopt), and when a file cannot be a tool's
    /// (a link, a submodule, a `.git…` file, not UTF-8 text).
    pub fn unapproved(&self, name: &str) -> Result<Unapproved, RegistryError> {
        if !crate::package::manifest::valid_name(name) {
            return Err(RegistryError::NoSuchTool(name.to_owned()));
        }
        let main = self.main_commit()?;
        let main_tree = self.git("read main", main.tree())?;
        let tree = self
            .subtree_id(&main_tree, &tool_path(name))
            .ok_or_else(|| RegistryError::NoSuchTool(name.to_owned()))?;
        let invalid = |problem: String| RegistryError::Invalid {
            name: name.to_owned(),
            problem,
        };
        let manifest = self.manifest_in(&main_tree, name);
        let version = manifest.as_ref().map(|m| m.version.to_string());
        let problem = match &version {
            Some(v) => match self.check_approved(name, v, tree, &self.known(), None) {
                Ok(()) => {
                    return Err(invalid(format!(
                        "{name} {v} on main is the version approved as {}: there is nothing to \
                         adopt",
                        tag_name(name, v)
                    )));
                }
                Err(p) => p,
            },
            None => format!("its manifest on main does not read as version {name}'s"),
        };
        let files = self.tool_files(name, tree).map_err(|e| match e {
            RegistryError::Invalid { problem, .. } => invalid(format!(
                "its files on main cannot be made a candidate: {problem}; replace them with \
                 regular text files, or roll it back (`toolsmith rollback {name}`)"
            )),
            other => other,
        })?;
        let approved = self.approved_base(name, version.as_deref()).map(|(t, _)| t);
        Ok(Unapproved {
            files,
            problem,
            approved,
            main: main.id().to_string(),
        })
    }
}

/// A tag or a review branch the ledger does not vouch for, as `toolsmith reapprove` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unvouched {
    /// Its ref (`refs/tags/<name>/v<version>`, a review branch, or the remote's).
    pub reference: String,
    /// The object the ledger would record (a tag object, a proposal's commit).
    pub object: String,
    /// Who made it and when, and what it holds (what a person checks before trusting it).
    pub detail: String,
    /// Why it cannot be trusted at all, when it cannot (a lightweight tag, an invalid version).
    pub refused: Option<String>,
}

/// What `toolsmith reapprove` found: what the ledger does not vouch for, and why.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Reapproval {
    /// Why the ledger vouches for less than the registry holds (missing, lines unsealed, …).
    pub why: Vec<String>,
    /// The tags and review branches it does not vouch for.
    pub unvouched: Vec<Unvouched>,
    /// Whether they were recorded (`toolsmith reapprove --yes`).
    pub trusted: bool,
}

impl Registry {
    /// What the ledger does not vouch for: every tag and review branch (ours and the remote's)
    /// it does not list with a valid seal, each with who made it, when, and what it holds —
    /// what a person looks at before trusting them again ([`Registry::reapprove`]). A tag that
    /// cannot approve anything (lightweight, not of toolsmith's form, an invalid version) is
    /// listed as refused.
    pub fn unvouched(&self) -> Result<Reapproval, RegistryError> {
        let known = self.known();
        let mut out = Reapproval::default();
        for prefix in ["refs/tags/", REMOTE_TAGS] {
            for (reference, target) in self.ref_targets(prefix) {
                if known.contains(target) {
                    continue;
                }
                let tag = reference.trim_start_matches(prefix).to_owned();
                let (detail, refused) = self.describe_tag(&tag, target);
                out.why.push(known.why_not(target).reason);
                out.unvouched.push(Unvouched {
                    reference,
                    object: target.to_string(),
                    detail,
                    refused,
                });
            }
        }
        for prefix in ["refs/heads/review/", "refs/remotes/origin/review/"] {
            for (reference, target) in self.ref_targets(prefix) {
                if known.contains(target) {
                    continue;
                }
                let commit = self.repo.find_commit(target);
                let detail = match &commit {
                    Ok(c) => format!(
                        "proposal commit {:.12} by {} \"{}\"",
                        c.id(),
                        c.author(),
                        c.summary().ok().flatten().unwrap_or_default()
                    ),
                    Err(e) => format!("does not name a commit ({})", e.message()),
                };
                // Every proposal toolsmith makes names its candidate; a commit that names none
                // is a person's edit (`toolsmith edit`, or by hand), which is validated as a
                // candidate of its own and never trusted unvalidated.
                let refused = commit
                    .as_ref()
                    .ok()
                    .filter(|c| {
                        super::repo::trailer(
                            &super::repo::trailers(c.message().unwrap_or_default()),
                            "Candidate",
                        )
                        .is_none()
                    })
                    .map(|_| {
                        "a person's edit, not a proposal (no Candidate: trailer): toolsmith \
                         validates it as a candidate of origin edit"
                            .to_owned()
                    });
                out.why.push(known.why_not(target).reason);
                out.unvouched.push(Unvouched {
                    reference,
                    object: target.to_string(),
                    detail,
                    refused,
                });
            }
        }
        out.why.sort();
        out.why.dedup();
        out.unvouched.sort_by(|a, b| a.reference.cmp(&b.reference));
        Ok(out)
    }

    /// Who made a tag, when, what it tags; and why it cannot approve, when it cannot.
    fn describe_tag(&self, tag: &str, target: Oid) -> (String, Option<String>) {
        let Ok(object) = self.repo.find_object(target, None) else {
            return ("names no object".into(), Some("it names no object".into()));
        };
        let Some(annotated) = object.as_tag() else {
            return (
                format!("lightweight tag of {:.12}", target),
                Some("a lightweight tag approves nothing".into()),
            );
        };
        let tagger = annotated
            .tagger()
            .map(|t| {
                let when = jiff::Timestamp::from_second(t.when().seconds())
                    .map(|ts| ts.to_string())
                    .unwrap_or_default();
                format!("{} at {when}", t)
            })
            .unwrap_or_else(|| "no tagger".into());
        let commit = object.peel_to_commit().ok();
        let detail = format!(
            "tagged by {tagger}: commit {} \"{}\"",
            commit
                .as_ref()
                .map(|c| format!("{:.12}", c.id()))
                .unwrap_or_else(|| "?".into()),
            commit
                .as_ref()
                .and_then(|c| c.summary().ok().flatten().map(str::to_owned))
                .unwrap_or_default()
        );
        let refused = match tag.rsplit_once("/v") {
            None => Some("not a tag of toolsmith's form <name>/v<version>".to_owned()),
            Some((name, version)) => {
                let tree = commit
                    .as_ref()
                    .and_then(|c| c.tree().ok())
                    .and_then(|t| self.subtree_id(&t, &tool_path(name)));
                match tree {
                    None => Some(format!("its commit has no tools/{name}")),
                    Some(id) => self.check_version(name, Some(version), id).err(),
                }
            }
        };
        (detail, refused)
    }

    /// Trusts again what [`Registry::unvouched`] lists (but what it refuses): each recorded in
    /// the ledger, sealed with the state directory's key — the ledger is started when it is
    /// missing. For a person who checked the list (`toolsmith reapprove --yes`), never done
    /// on its own. Returns what was trusted.
    pub fn reapprove(&self) -> Result<Reapproval, RegistryError> {
        let _turn = self.exclusive()?;
        let mut found = self.unvouched()?;
        let entries: Vec<(Kind, Oid, String)> = found
            .unvouched
            .iter()
            .filter(|u| u.refused.is_none())
            .filter_map(|u| {
                let oid = Oid::from_str(&u.object).ok()?;
                let kind = if u.reference.starts_with("refs/heads/review/")
                    || u.reference.starts_with("refs/remotes/origin/review/")
                {
                    Kind::Proposal
                } else {
                    Kind::Tag
                };
                Some((kind, oid, u.reference.clone()))
            })
            .collect();
        if !self.ledger().exists() {
            let ledger = self.ledger();
            ledger
                .start(self.seal(), &entries)
                .map_err(|source| RegistryError::Io {
                    path: ledger.path().to_owned(),
                    source,
                })?;
        } else if !entries.is_empty() {
            self.record(&entries)?;
        }
        found.trusted = true;
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git};
    use super::*;

    #[test]
    fn tags_without_a_ledger_are_trusted_only_when_a_person_reapproves() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        registry.runnable("demo").expect("approved, it runs");
        std::fs::remove_file(registry.ledger().path()).expect("rm the ledger");
        let err = registry
            .runnable("demo")
            .expect_err("no ledger, no approval");
        assert!(err.to_string().contains("toolsmith reapprove"), "{err}");
        registry.reconcile().expect("reconcile");
        assert!(
            !registry.ledger().exists(),
            "a ledger is not started over tags"
        );
        git(registry.root(), &["tag", "hand/v1.0.0"]);
        let found = registry.unvouched().expect("unvouched");
        let refs: Vec<(&str, bool)> = found
            .unvouched
            .iter()
            .map(|u| (u.reference.as_str(), u.refused.is_none()))
            .collect();
        assert_eq!(
            refs,
            [
                ("refs/tags/demo/v1.0.0", true),
                ("refs/tags/hand/v1.0.0", false)
            ]
        );
        assert!(!found.trusted);
        registry
            .runnable("demo")
            .expect_err("listing trusts nothing");
        let done = registry.reapprove().expect("reapprove");
        assert!(done.trusted);
        registry.runnable("demo").expect("re-approved, it runs");
        let left = registry.unvouched().expect("unvouched");
        assert_eq!(
            left.unvouched.len(),
            1,
            "the lightweight tag stays untrusted"
        );
    }

    #[test]
    fn a_new_registry_starts_its_ledger_and_another_key_vouches_for_nothing() {
        let (dir, registry) = fixture::registry();
        registry.reconcile().expect("reconcile");
        assert!(registry.ledger().exists(), "no tags: started, empty");
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let elsewhere = Registry::open(registry.root(), &dir.path().join("other-state"))
            .expect("open with another state directory");
        let err = elsewhere.runnable("demo").expect_err("another key");
        assert!(err.to_string().contains("no valid seal"), "{err}");
    }
}
