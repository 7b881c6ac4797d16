//! Sharing a registry through a git remote: `toolsmith sync` fetches `main`, the tags and the
//! review branches of the remote `origin`, brings `main` up to date (fast-forward, or a merge
//! commit when both sides added tools), and pushes `main`, the tags, the review branches and the
//! rejected proposals back.
//!
//! A merge is made only when the two sides changed different tools: `TOOLS.md` is rebuilt row
//! by row, anything else changed on both sides stops the sync with the tools named, and nothing
//! is lost — local `main` stays as it was, the remote's is kept in `refs/remotes/origin/main`.

use std::collections::BTreeSet;

use git2::{Oid, Tree};
use serde::Serialize;

use super::index;
use super::repo::{REJECTED_PREFIX, Registry, RegistryError};

/// The remote toolsmith syncs with.
pub const REMOTE: &str = "origin";

const REMOTE_MAIN: &str = "refs/remotes/origin/main";

/// What a sync did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    /// The remote's URL.
    pub remote: String,
    /// How `main` was brought up to date: `up to date`, `fast-forward`, `merged`, `pushed`.
    pub main: String,
    /// Tools that came from the remote (added or changed).
    pub received: Vec<String>,
    /// Review branches fetched from the remote that were not here.
    pub new_reviews: Vec<String>,
    /// Refs pushed.
    pub pushed: Vec<String>,
    /// Review branches deleted on the remote (approved or rejected here).
    pub deleted: Vec<String>,
    /// Tags that name different commits here and on the remote: each side keeps its own.
    pub tag_conflicts: Vec<String>,
    /// Proposals found approved on the merged `main` (their candidates are approved here too).
    pub landed: Vec<super::repo::Landed>,
}

/// What `git` printed when it failed, cut to what a person reads.
fn git_failure(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(6)..];
    if tail.is_empty() {
        "git printed nothing".to_owned()
    } else {
        tail.join("; ")
    }
}

/// Refs `git push --porcelain` reports rejected (`!` lines: `!<TAB><src>:<dst><TAB><reason>`).
fn rejected_refs(porcelain: &str) -> Vec<String> {
    porcelain
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("!\t")?;
            let mut fields = rest.split('\t');
            let refspec = fields.next()?;
            let reason = fields.next().unwrap_or("rejected");
            let dst = refspec.rsplit(':').next().unwrap_or(refspec);
            Some(format!("{dst}: {reason}"))
        })
        .collect()
}

impl Registry {
    /// Sets the remote (`origin`) to `url`, or returns the one set.
    pub fn remote_url(&self, set: Option<&str>) -> Result<Option<String>, RegistryError> {
        if let Some(url) = set {
            match self.repo.find_remote(REMOTE) {
                Ok(_) => self.git("set the remote", self.repo.remote_set_url(REMOTE, url))?,
                Err(_) => {
                    self.git("add the remote", self.repo.remote(REMOTE, url))?;
                }
            }
            return Ok(Some(url.to_owned()));
        }
        Ok(self
            .repo
            .find_remote(REMOTE)
            .ok()
            .and_then(|r| r.url().ok().map(str::to_owned)))
    }

    /// Pulls and pushes `main`, the tags, the review branches and the rejected proposals.
    pub fn sync(&self) -> Result<SyncReport, RegistryError> {
        let Some(url) = self.remote_url(None)? else {
            return Err(RegistryError::Conflict(
                "no remote to sync with: `toolsmith sync --remote URL` sets one (or `git -C \
                 <registry> remote add origin URL`)"
                    .into(),
            ));
        };
        let _turn = self.exclusive()?;
        let mut report = SyncReport {
            remote: url.clone(),
            ..SyncReport::default()
        };
        let before: BTreeSet<String> = self.review_branch_names();
        let fetched_before = self.fetched_refs();
        // The transfer is git's own: the user's credential helpers, ssh configuration and
        // proxies apply as they do to every other repository, and toolsmith links no TLS or
        // ssh library. Tags come through the refspec below, beside ours: never straight over
        // them.
        let mut fetch = vec![
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            REMOTE,
            "+refs/heads/main:refs/remotes/origin/main",
            "+refs/heads/review/*:refs/remotes/origin/review/*",
            "+refs/tags/*:refs/remotes/origin/tags/*",
            "+refs/toolsmith/rejected/*:refs/toolsmith/rejected/*",
        ];
        let what = format!("fetch from {url}");
        match self.transfer(&what, &fetch) {
            // A remote nobody pushed to yet has no main: what else it holds is fetched, and
            // the push below gives it ours.
            Err(RegistryError::Transfer { why, .. })
                if why.contains("couldn't find remote ref refs/heads/main") =>
            {
                fetch.retain(|arg| !arg.starts_with("+refs/heads/main:"));
                self.transfer(&what, &fetch)?;
            }
            other => other?,
        }
        // What came is the remote's: its tags approve and its proposals are proposals, as
        // ours are (the ledger records them before anything here uses them).
        self.record_fetched(&fetched_before)?;
        // main.
        let ours = self.main_commit()?.id();
        let theirs = self.repo.refname_to_id(REMOTE_MAIN).ok();
        report.main = match theirs {
            None => "pushed".into(),
            Some(theirs) if theirs == ours => "up to date".into(),
            Some(theirs) if self.repo.graph_descendant_of(ours, theirs).unwrap_or(false) => {
                "pushed".into()
            }
            Some(theirs) => {
                let base = self.git(
                    "find the common history",
                    self.repo.merge_base(ours, theirs),
                );
                match base {
                    Ok(base) if base == ours => {
                        report.received = self.changed_tools(ours, theirs)?;
                        let paths = self.changed_paths(ours, theirs)?;
                        self.land(ours, theirs, &paths, "toolsmith: sync (fast-forward)")?;
                        "fast-forward".into()
                    }
                    Ok(base) => {
                        report.received = self.changed_tools(base, theirs)?;
                        let merged = self.merge(base, ours, theirs, &url, &report.received)?;
                        let paths = self.changed_paths(ours, merged)?;
                        self.land(ours, merged, &paths, "toolsmith: sync (merge)")?;
                        "merged".into()
                    }
                    Err(_) => {
                        return Err(RegistryError::Conflict(format!(
                            "{url}'s main shares no history with this registry's: it is \
                             not a toolsmith registry of this format; point the remote elsewhere"
                        )));
                    }
                }
            }
        };
        // Tags: the remote's that are new here are made here; one that names another commit
        // on each side is kept as it is on both, and reported (tags are never moved).
        let mut theirs_tags = BTreeSet::new();
        for (remote_ref, _) in self.refs_under("refs/remotes/origin/tags/") {
            let tag = remote_ref.trim_start_matches("refs/remotes/origin/tags/");
            let local = format!("refs/tags/{tag}");
            let theirs = self.repo.refname_to_id(&remote_ref).ok();
            theirs_tags.insert(local.clone());
            match (self.repo.refname_to_id(&local).ok(), theirs) {
                (None, Some(id)) => {
                    self.git(
                        &format!("create {local}"),
                        self.repo
                            .reference(&local, id, false, "toolsmith: sync (a remote tag)"),
                    )?;
                }
                (Some(ours), Some(theirs)) if ours != theirs => {
                    report.tag_conflicts.push(tag.to_owned());
                }
                _ => {}
            }
        }
        // Review branches: the remote's that are new here become local; proposals already on
        // main or rejected here are removed there.
        let landed_or_rejected = |name: &str, version: &str, commit: Oid| -> bool {
            let tag = format!("refs/tags/{name}/v{version}");
            self.repo.refname_to_id(&tag).is_ok() || self.is_rejected(commit)
        };
        let mut deletions = Vec::new();
        for (branch, commit) in self.refs_under("refs/remotes/origin/review/") {
            let rest = branch.trim_start_matches("refs/remotes/origin/review/");
            let local = format!("refs/heads/review/{rest}");
            let Some((name, version)) = rest.rsplit_once('/') else {
                continue;
            };
            if landed_or_rejected(name, version, commit) {
                deletions.push(format!(":refs/heads/review/{rest}"));
                report.deleted.push(format!("review/{rest}"));
                continue;
            }
            if self.repo.refname_to_id(&local).is_err() && !before.contains(&local) {
                self.git(
                    &format!("create {local}"),
                    self.repo.reference(
                        &local,
                        commit,
                        false,
                        "toolsmith: sync (a teammate's proposal)",
                    ),
                )?;
                report.new_reviews.push(format!("review/{rest}"));
            }
        }
        // Proposals that arrived on main (approved on the other side) are tagged and their
        // branches go here before anything is pushed back.
        report.landed = self.reconcile_locked()?.landed;
        for l in &report.landed {
            let branch = format!("refs/remotes/origin/review/{}/{}", l.name, l.version);
            if self.repo.refname_to_id(&branch).is_ok() {
                let spec = format!(":refs/heads/review/{}/{}", l.name, l.version);
                if !deletions.contains(&spec) {
                    deletions.push(spec);
                    report
                        .deleted
                        .push(format!("review/{}/{}", l.name, l.version));
                }
            }
        }
        // Push.
        let mut refspecs: Vec<String> = vec!["refs/heads/main:refs/heads/main".into()];
        for (name, _) in self.refs_under("refs/tags/") {
            if !theirs_tags.contains(&name) {
                refspecs.push(format!("{name}:{name}"));
            }
        }
        for (name, _) in self.refs_under("refs/heads/review/") {
            refspecs.push(format!("+{name}:{name}"));
        }
        for (name, _) in self.refs_under(REJECTED_PREFIX) {
            refspecs.push(format!("+{name}:{name}"));
        }
        refspecs.extend(deletions);
        let mut args = vec![
            "push".to_owned(),
            "--porcelain".to_owned(),
            REMOTE.to_owned(),
        ];
        args.extend(refspecs.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Err(e) = self.transfer(&format!("push to {url}"), &args) {
            let refused = match &e {
                RegistryError::Transfer { stdout, .. } => rejected_refs(stdout),
                _ => Vec::new(),
            };
            if refused.is_empty() {
                return Err(e);
            }
            return Err(RegistryError::Conflict(format!(
                "{url} refused {}; run `toolsmith sync` again (someone pushed meanwhile)",
                refused.join(", ")
            )));
        }
        report.pushed = refspecs;
        Ok(report)
    }

    /// Runs `git ARGS…` in the registry for a fetch or a push, never prompting: a daemon has
    /// no terminal, so a remote that wants a password it has no helper for fails and says so.
    fn transfer(&self, what: &str, args: &[&str]) -> Result<(), RegistryError> {
        let failed = |why: String, stdout: String| RegistryError::Transfer {
            path: self.root().to_owned(),
            what: what.to_owned(),
            why,
            stdout,
        };
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(self.root())
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            // Its messages are read (an empty remote), so they are not translated.
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                failed(
                    format!("`git` could not be started ({e}): sync uses git; install it"),
                    String::new(),
                )
            })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(())
        } else {
            Err(failed(git_failure(&out.stderr), stdout))
        }
    }

    fn review_branch_names(&self) -> BTreeSet<String> {
        self.refs_under("refs/heads/review/")
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    fn refs_under(&self, prefix: &str) -> Vec<(String, Oid)> {
        let Ok(refs) = self.repo.references_glob(&format!("{prefix}*")) else {
            return Vec::new();
        };
        refs.flatten()
            .filter_map(|r| {
                let name = r.name().ok()?.to_owned();
                let id = r.peel_to_commit().ok()?.id();
                Some((name, id))
            })
            .collect()
    }

    fn is_rejected(&self, commit: Oid) -> bool {
        self.refs_under(REJECTED_PREFIX)
            .iter()
            .any(|(_, id)| *id == commit)
    }

    fn trees(&self, a: Oid, b: Oid) -> Result<(Tree<'_>, Tree<'_>), RegistryError> {
        let ta = self.git(
            "read history",
            self.repo.find_commit(a).and_then(|c| c.tree()),
        )?;
        let tb = self.git(
            "read history",
            self.repo.find_commit(b).and_then(|c| c.tree()),
        )?;
        Ok((ta, tb))
    }

    /// The tools whose directories differ between two commits.
    fn changed_tools(&self, a: Oid, b: Oid) -> Result<Vec<String>, RegistryError> {
        Ok(self
            .changed_paths(a, b)?
            .into_iter()
            .filter_map(|p| p.strip_prefix("tools/").map(str::to_owned))
            .collect())
    }

    /// The paths that differ between two commits: `tools/<name>` for a tool, else the file.
    fn changed_paths(&self, a: Oid, b: Oid) -> Result<Vec<String>, RegistryError> {
        let (ta, tb) = self.trees(a, b)?;
        let diff = self.git(
            "compare trees",
            self.repo.diff_tree_to_tree(Some(&ta), Some(&tb), None),
        )?;
        let mut paths = BTreeSet::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                let Some(path) = file.path().and_then(|p| p.to_str()) else {
                    continue;
                };
                let key = match path.strip_prefix("tools/") {
                    Some(rest) => format!("tools/{}", rest.split('/').next().unwrap_or(rest)),
                    None => path.to_owned(),
                };
                paths.insert(key);
            }
        }
        Ok(paths.into_iter().collect())
    }

    /// A merge commit of `ours` and `theirs`, when they changed different tools (`received`:
    /// the tools `theirs` changed since `base`).
    fn merge(
        &self,
        base: Oid,
        ours: Oid,
        theirs: Oid,
        url: &str,
        received: &[String],
    ) -> Result<Oid, RegistryError> {
        let (base_tree, ours_tree) = self.trees(base, ours)?;
        let (_, theirs_tree) = self.trees(base, theirs)?;
        let mut merged = self.git(
            "merge",
            self.repo
                .merge_trees(&base_tree, &ours_tree, &theirs_tree, None),
        )?;
        let mut conflicts = BTreeSet::new();
        if merged.has_conflicts() {
            let list = self.git("read the conflicts", merged.conflicts())?;
            for c in list.flatten() {
                let entry = c.our.as_ref().or(c.their.as_ref()).or(c.ancestor.as_ref());
                if let Some(e) = entry {
                    conflicts.insert(String::from_utf8_lossy(&e.path).into_owned());
                }
            }
        }
        let real: Vec<&String> = conflicts
            .iter()
            .filter(|p| p.as_str() != index::FILE_NAME)
            .collect();
        if !real.is_empty() {
            let tools: BTreeSet<String> = real
                .iter()
                .map(|p| match p.strip_prefix("tools/") {
                    Some(rest) => format!("tool {}", rest.split('/').next().unwrap_or(rest)),
                    None => (*p).clone(),
                })
                .collect();
            return Err(RegistryError::Conflict(format!(
                "this registry and {url} both changed {}: nothing was merged; local main is as \
                 it was and the remote's is in refs/remotes/origin/main — keep one side (e.g. \
                 `toolsmith rollback` here, or `git -C <registry> merge origin/main` and resolve \
                 by hand), then sync again",
                tools.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        if conflicts.contains(index::FILE_NAME) {
            self.git(
                "resolve TOOLS.md",
                merged.conflict_remove(std::path::Path::new(index::FILE_NAME)),
            )?;
        }
        let tree = self.git("write the merge", merged.write_tree_to(&self.repo))?;
        let tree = self.git("read the merge", self.repo.find_tree(tree))?;
        // TOOLS.md: ours, with a row for every tool the remote changed.
        let mut text = self
            .blob_text(&ours_tree, index::FILE_NAME)?
            .unwrap_or_default();
        for name in received {
            let row = self.manifest_in(&tree, name).map(|m| Self::row_of(&m));
            text = index::update(&text, name, row.as_ref());
        }
        let blob = self.git("write TOOLS.md", self.repo.blob(text.as_bytes()))?;
        let mut root = self.git("build the merge", self.repo.treebuilder(Some(&tree)))?;
        self.git(
            "build the merge",
            root.insert(index::FILE_NAME, blob, 0o100644),
        )?;
        let tree = self.git("write the merge", root.write())?;
        let tree = self.git("read the merge", self.repo.find_tree(tree))?;
        let ours_commit = self.git("read main", self.repo.find_commit(ours))?;
        let theirs_commit = self.git("read the remote", self.repo.find_commit(theirs))?;
        let sig = self.tagger(&self.approver())?;
        let msg = format!(
            "registry: merge {url}\n\nTools from the remote: {}.\n",
            received.join(", ")
        );
        self.git(
            "write the merge",
            self.repo.commit(
                None,
                &sig,
                &sig,
                &msg,
                &tree,
                &[&ours_commit, &theirs_commit],
            ),
        )
    }
}
