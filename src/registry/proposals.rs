//! Proposals and their review: a validated candidate proposed as one commit on
//! `review/<name>/<version>` (its version from the interface diff), the proposals awaiting
//! review, a proposal's diff, its approval (landed on `main`, tagged) and its rejection (kept
//! under `refs/toolsmith/rejected/`).

use std::collections::BTreeMap;

use git2::{BranchType, ErrorCode, Oid};
use serde::Serialize;

use super::index;
use super::ledger::Kind;
use super::repo::{
    REJECTED_PREFIX, REVIEW_PREFIX, Registry, RegistryError, message, tag_name, tool_path,
    toolsmith_signature, trailer, trailers,
};
use super::versions::{self, Bump};

/// How a proposal's message starts the line of what a person must grant at approval.
const NEEDS_LINE: &str = "Grants needed at approval: ";

/// A proposal's commit message, whoever wrote the tool (generation or a person's edit): the
/// subject; the description and why; the version bump and its reasons; what the tool may reach
/// and the grants it needs (read back by [`Registry::reviews`]); the proposal's trailers and its
/// candidate.
pub(super) fn proposal_message(
    subject: &str,
    manifest: &Manifest,
    proposal: &Proposal,
    bump: Option<&(Bump, Vec<String>)>,
) -> String {
    let mut body = vec![manifest.description.clone(), proposal.why.clone()];
    if let Some((bump, reasons)) = bump {
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
    body.extend(crate::sandbox::grants::reach_lines(&manifest.sandbox));
    if !manifest.needs.is_empty() {
        body.push(format!(
            "{NEEDS_LINE}{} (`toolsmith approve {} --grant NEED` for each).",
            crate::sandbox::needs::list(&manifest.needs),
            proposal.candidate
        ));
    }
    let mut trailers = proposal.trailers.clone();
    trailers.push(("Candidate".into(), proposal.candidate.clone()));
    message(subject, &body, &trailers)
}
use crate::package::manifest::{self, Manifest};

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
    /// What the tool may reach beyond the sandbox's defaults, as its commit message says
    /// (network hosts; host sockets with their warning).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reach: Vec<String>,
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

impl From<&Landed> for crate::events::Approval {
    fn from(l: &Landed) -> Self {
        crate::events::Approval {
            name: l.name.clone(),
            version: l.version.clone(),
            candidate: l.candidate.clone(),
            commit: l.commit.clone(),
            tag: l.tag.clone(),
            approved_by: l.approved_by.clone(),
            via: l.via.clone(),
        }
    }
}

impl Landed {
    /// The `tool.approved` event announcing it.
    pub fn event(&self) -> crate::events::Event {
        crate::events::Event::ToolApproved(self.into())
    }
}

/// The version a proposal gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextVersion {
    /// The version.
    pub version: semver::Version,
    /// How it moved from the highest version seen, and why; `None` for a new tool.
    pub bump: Option<(Bump, Vec<String>)>,
}

impl Registry {
    /// Every version of `name` tagged so far.
    pub(super) fn tagged_versions(
        &self,
        name: &str,
    ) -> Result<Vec<semver::Version>, RegistryError> {
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

    /// The version a new proposal of `name` with this manifest gets, and the bump with its
    /// reasons when an earlier version exists: the interface diff against `main`, and the
    /// sandbox profile's widening (major), move the highest version seen (on `main`, tagged,
    /// or awaiting review), so no two proposals and no tag share a version.
    pub fn next_version(
        &self,
        name: &str,
        manifest: &Manifest,
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
            Some(m) => versions::bump_manifest(m, manifest),
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
    /// `base` with the directory of tool `name` replaced by `proposal`'s files and `manifest` (its
    /// version settled), and the tool's index row updated: the tree a proposal commits.
    pub(super) fn tree_with_proposal(
        &self,
        base: &git2::Tree<'_>,
        name: &str,
        proposal: &Proposal,
        manifest: &Manifest,
    ) -> Result<git2::Tree<'_>, RegistryError> {
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
        let tree = self.with_tool(base, name, Some(tool_tree), Some(&Self::row_of(manifest)))?;
        self.git("read the new tree", self.repo.find_tree(tree))
    }

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
        let NextVersion { version, bump } = self.next_version(&name, &manifest)?;
        manifest.version = version.clone();
        let main = self.main_commit()?;
        let base = self.git("read main", main.tree())?;
        let on_main = self.subtree_id(&base, &tool_path(&name)).is_some();
        let tree = self.tree_with_proposal(&base, &name, proposal, &manifest)?;
        let verb = if on_main { "update" } else { "add" };
        let subject = format!("tool({name}): {verb} {version}");
        let msg = proposal_message(&subject, &manifest, proposal, bump.as_ref());
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
            reach: crate::sandbox::grants::reach_lines(&manifest.sandbox),
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
                    reach: msg
                        .lines()
                        .filter(|l| {
                            l.starts_with("Network: ")
                                || l.starts_with("WARNING: ")
                                || l.starts_with(NEEDS_LINE)
                        })
                        .map(str::to_owned)
                        .collect(),
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

    /// Approves a proposal: its commit lands on `main` with `Approved-by:` (on top of `main`
    /// as it is now: re-applied when `main` moved, refused when `main` changed the same tool
    /// since), the annotated tag `<name>/v<version>` is made, and the branch goes.
    pub fn approve(
        &self,
        key: &str,
        approver: &str,
        note: Option<&str>,
    ) -> Result<Landed, RegistryError> {
        self.approve_granting(key, approver, note, &[])
    }

    /// [`Registry::approve`] granting `grants`: exactly the needs the proposal's manifest lists
    /// (else refused, naming the missing grants and the command that passes them). The approved
    /// manifest's `granted` lists them, and the commit has a `Granted:` trailer for each.
    pub fn approve_granting(
        &self,
        key: &str,
        approver: &str,
        note: Option<&str>,
        grants: &[crate::sandbox::Need],
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
        let shown_key = review.candidate.clone().unwrap_or_else(|| key.to_owned());
        let granted = self.granted_tool(&proposed_tree, &review, &shown_key, grants)?;
        let moved = base.id() != main.id();
        if moved && self.subtree_id(&main_tree, &path) != self.subtree_id(&base_tree, &path) {
            return Err(RegistryError::Conflict(format!(
                "main changed {path} since {} was proposed: approve or reject what is on \
                 main first, or reject this proposal and let toolsmith propose it again",
                review.branch
            )));
        }
        let tree = match granted {
            None if !moved => proposed_tree.id(),
            granted => {
                let (tool, manifest) = match granted {
                    Some((tool, manifest)) => (Some(tool), Some(manifest)),
                    None => (
                        self.subtree_id(&proposed_tree, &path),
                        self.manifest_in(&proposed_tree, &review.name),
                    ),
                };
                self.with_tool(
                    &main_tree,
                    &review.name,
                    tool,
                    manifest.as_ref().map(Self::row_of).as_ref(),
                )?
            }
        };
        let tree = self.git("read the tree", self.repo.find_tree(tree))?;
        let original = proposed.message().unwrap_or_default();
        let mut t = trailers(original);
        let mut sorted = grants.to_vec();
        sorted.sort();
        sorted.dedup();
        t.extend(sorted.iter().map(|g| ("Granted".to_owned(), g.to_string())));
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
    pub(super) fn finish_landing(
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
    pub(super) fn tag_version(
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
    pub(super) fn prune_empty_tag_dirs(&self) {
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
        // The reason lives in the ref's log, which git keeps by default only for branches,
        // remotes, notes and HEAD: asked for, so that `rejection_of` can read it back.
        self.git(
            &format!("keep {keep}"),
            self.repo.reference_ensure_log(&keep),
        )?;
        let logged = format!("toolsmith: rejected: {}", reason.replace('\n', " "));
        self.git(
            &format!("keep {keep}"),
            self.repo.reference(&keep, oid, true, &logged),
        )?;
        // libgit2 signs the log entry with the repository's configured identity, else
        // `unknown`: it is written again signed by who rejects, as an approval's tag is by its
        // approver, so the decision says who made it (`decided`).
        if let Err(e) = self.sign_rejection(&keep, oid, &logged) {
            tracing::warn!("{keep}: who rejected is not recorded: {e}");
        }
        let mut branch = self.git(
            "find the branch",
            self.repo
                .find_reference(&format!("refs/heads/{}", review.branch)),
        )?;
        self.git(&format!("delete {}", review.branch), branch.delete())?;
        Ok(review)
    }

    /// Signs the newest entry of `refname`'s log (written for `oid` with `message`) with
    /// [`Registry::approver`].
    fn sign_rejection(&self, refname: &str, oid: Oid, message: &str) -> Result<(), RegistryError> {
        let who = self.tagger(&self.approver())?;
        let what = format!("sign {refname}'s log");
        let mut log = self.git(&what, self.repo.reflog(refname))?;
        if !log.is_empty() {
            self.git(&what, log.remove(0, false))?;
        }
        self.git(&what, log.append(oid, &who, Some(message)))?;
        self.git(&what, log.write())
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
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git, has_ref};
    use super::*;

    const REVIEWER: &str = "Reviewer <r@example.org>";

    #[test]
    fn a_proposal_makes_a_review_branch_that_awaits_review() {
        let (_dir, registry) = fixture::registry();
        let main = registry.main_id().expect("main");
        let review = fixture::propose(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        assert_eq!(review.branch, "review/demo/1.0.0");
        assert_eq!(review.version, "1.0.0");
        assert_eq!(review.candidate.as_deref(), Some("c-1"));
        assert_eq!(review.subject, "tool(demo): add 1.0.0");
        assert_eq!(review.bump, None, "a first version");
        assert!(has_ref(&registry, "refs/heads/review/demo/1.0.0"));
        assert_eq!(
            registry.main_id().expect("main"),
            main,
            "main does not move"
        );
        assert!(!registry.root().join("tools/demo").exists());
        assert_eq!(registry.reviews().expect("reviews"), vec![review.clone()]);
        // The commit says why, and carries the trailers and the candidate.
        let message = git(
            registry.root(),
            &["log", "-1", "--format=%B", &review.branch],
        );
        assert!(message.contains("seen in 3 sessions"), "{message}");
        assert_eq!(
            trailers(&message),
            [
                ("Origin".to_owned(), "mined-sequence".to_owned()),
                ("Candidate".to_owned(), "c-1".to_owned())
            ]
        );
        // Proposing the same candidate again is the same proposal.
        assert_eq!(
            fixture::propose(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n"),
            review
        );
        assert_eq!(registry.reviews().expect("reviews").len(), 1);
    }

    #[test]
    fn a_proposal_is_found_by_candidate_branch_or_tool() {
        let (_dir, registry) = fixture::registry();
        let first = fixture::propose(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        assert_eq!(registry.review("c-1").expect("by candidate"), first);
        assert_eq!(registry.review("demo").expect("by tool"), first);
        assert_eq!(registry.review("demo/1.0.0").expect("by branch"), first);
        assert_eq!(registry.review("review/demo/1.0.0").expect("branch"), first);
        // A second proposal of the same tool gets a version of its own.
        let second = fixture::propose(&registry, "c-2", "demo", "#!/bin/sh\necho 2\n");
        assert_eq!(second.version, "1.1.0");
        assert!(matches!(
            registry.review("demo"),
            Err(RegistryError::Ambiguous(_, ref which))
                if which == "review/demo/1.0.0, review/demo/1.1.0"
        ));
        assert!(matches!(
            registry.review("c-3"),
            Err(RegistryError::NoSuchReview(_))
        ));
    }

    #[test]
    fn a_file_outside_the_tool_is_refused() {
        let (_dir, registry) = fixture::registry();
        for bad in ["../escape", ".gitattributes", "tests/../../x", ""] {
            let mut files = fixture::tool("demo", "#!/bin/sh\n");
            files.insert(bad.to_owned(), "x\n".to_owned());
            let result = registry.propose(&Proposal {
                candidate: "c-1".into(),
                files,
                why: String::new(),
                trailers: Vec::new(),
            });
            match result {
                Err(RegistryError::Invalid { problem, .. }) => {
                    assert!(problem.contains("is not allowed"), "{problem}")
                }
                other => panic!("`{bad}` accepted: {other:?}"),
            }
        }
        assert_eq!(registry.reviews().expect("reviews"), vec![]);
    }

    #[test]
    fn approval_lands_the_tool_on_main_tags_it_and_removes_the_branch() {
        let (_dir, registry) = fixture::registry();
        let review = fixture::propose(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let landed = registry
            .approve("c-1", REVIEWER, Some("looks right"))
            .expect("approve");
        assert_eq!(landed.tag, "demo/v1.0.0");
        assert_eq!(landed.via, "toolsmith");
        assert_eq!(landed.commit, registry.main_id().expect("main"));
        assert!(!has_ref(&registry, "refs/heads/review/demo/1.0.0"));
        assert!(registry.reviews().expect("reviews").is_empty());
        let tag = git(registry.root(), &["cat-file", "-t", "demo/v1.0.0"]);
        assert_eq!(tag.trim(), "tag", "an annotated tag");
        let message = git(registry.root(), &["log", "-1", "--format=%B", "main"]);
        assert!(message.contains("Review note: looks right"), "{message}");
        assert!(
            message
                .trim_end()
                .ends_with(&format!("Approved-by: {REVIEWER}")),
            "{message}"
        );
        assert_eq!(
            std::fs::read_to_string(registry.root().join("tools/demo/run.sh")).expect("run.sh"),
            "#!/bin/sh\necho 1\n"
        );
        assert_eq!(git(registry.root(), &["status", "--porcelain"]), "");
        assert_eq!(
            registry.landed_candidate("c-1"),
            Some((landed.commit.clone(), REVIEWER.to_owned()))
        );
        // The next proposal of it is a patch on top of it.
        let next = fixture::propose(&registry, "c-2", "demo", "#!/bin/sh\necho 2\n");
        assert_eq!(next.version, "1.0.1");
        assert_eq!(next.bump, Some(Bump::Patch));
        assert_eq!(next.subject, "tool(demo): update 1.0.1");
        assert_ne!(next.commit, review.commit);
    }

    #[test]
    fn a_proposal_behind_main_is_reapplied_on_it() {
        let (_dir, registry) = fixture::registry();
        fixture::propose(&registry, "c-1", "one", "#!/bin/sh\necho 1\n");
        fixture::propose(&registry, "c-2", "two", "#!/bin/sh\necho 2\n");
        registry
            .approve("c-1", REVIEWER, None)
            .expect("approve one");
        let behind = registry.review("c-2").expect("two");
        assert!(behind.behind_main);
        registry
            .approve("c-2", REVIEWER, None)
            .expect("approve two");
        let names: Vec<String> = registry
            .tools()
            .expect("tools")
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["one", "two"]);
        let index = std::fs::read_to_string(registry.root().join(index::FILE_NAME)).expect("md");
        assert!(index.contains("one") && index.contains("two"), "{index}");
    }

    #[test]
    fn a_branch_made_with_git_is_not_approved() {
        let (_dir, registry) = fixture::registry();
        // As every command does first: the ledger starts from what the registry holds.
        registry.reconcile().expect("reconcile");
        let root = registry.root();
        git(root, &["checkout", "-q", "-b", "review/hand/1.0.0"]);
        std::fs::create_dir_all(root.join("tools/hand")).expect("mkdir");
        std::fs::write(root.join("tools/hand/run.sh"), "echo hand\n").expect("write");
        git(root, &["add", "tools/hand"]);
        git(root, &["commit", "-q", "-m", "tool(hand): add 1.0.0"]);
        git(root, &["checkout", "-q", "main"]);
        let err = registry
            .approve("hand", REVIEWER, None)
            .expect_err("not proposed by toolsmith");
        assert!(
            err.to_string().contains("was not proposed by toolsmith"),
            "{err}"
        );
        assert!(!has_ref(&registry, "refs/tags/hand/v1.0.0"));
        assert!(!root.join("tools/hand").exists());
    }

    #[test]
    fn a_rejected_proposal_is_kept_with_its_reason() {
        let (_dir, registry) = fixture::registry();
        let review = fixture::propose(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        assert_eq!(registry.rejection_of("c-1"), None);
        registry
            .reject("c-1", "too narrow\nfor anyone")
            .expect("reject");
        assert!(!has_ref(&registry, "refs/heads/review/demo/1.0.0"));
        assert_eq!(
            registry
                .repo
                .refname_to_id("refs/toolsmith/rejected/c-1")
                .expect("kept")
                .to_string(),
            review.commit
        );
        assert_eq!(
            registry.rejection_of("c-1").as_deref(),
            Some("too narrow for anyone")
        );
        assert!(matches!(
            registry.review("c-1"),
            Err(RegistryError::NoSuchReview(_))
        ));
    }

    #[test]
    fn a_diff_shows_what_a_proposal_changes() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let review = fixture::propose(&registry, "c-2", "demo", "#!/bin/sh\necho 2\n");
        let diff = registry.review_diff(&review).expect("diff");
        assert!(diff.contains("-echo 1\n+echo 2\n"), "{diff}");
        assert!(!diff.contains("TOOLS.md"), "only the tool's files: {diff}");
        // A tool changed on main without review: the diff is against what was approved.
        std::fs::write(registry.root().join("tools/demo/run.sh"), "echo sneaky\n").expect("w");
        git(registry.root(), &["commit", "-q", "-am", "by hand"]);
        let diff = registry.review_diff(&review).expect("diff");
        assert!(
            diff.starts_with(
                "# tools/demo on main was changed without review: the diff is against the \
                 version approved as demo/v1.0.0\n"
            ),
            "{diff}"
        );
        assert!(diff.contains("-echo 1\n+echo 2\n"), "{diff}");
    }
}
