//! Every review decision the registry keeps, for `toolsmith export feedback` and the keep rate:
//! each approval (the annotated tag `<name>/v<version>`, its tagger the approver, on the
//! commit that landed with its trailers and review note) and each rejection (the commit kept
//! as `refs/toolsmith/rejected/<candidate>`, the reason, who and when in that ref's log), with
//! the tool's files as they were decided on.

use std::collections::BTreeMap;

use git2::Oid;
use serde::Serialize;

use super::repo::{REJECTED_PREFIX, Registry, RegistryError, tool_path, trailer, trailers};

/// Approved or rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Landed on `main` and tagged.
    Approved,
    /// Its branch removed, its commit kept under `refs/toolsmith/rejected/`.
    Rejected,
}

/// One review decision, as git keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decided {
    /// What was decided.
    pub decision: Verdict,
    /// The tool.
    pub tool: String,
    /// The version proposed, when the commit's subject says (`tool(x): add 1.0.0`).
    pub version: Option<String>,
    /// The candidate, from the `Candidate:` trailer.
    pub candidate: Option<String>,
    /// For a rejection, its reason; for an approval, the review note, if one was given.
    pub reason: Option<String>,
    /// Who decided: the tag's tagger (`Approved-by:`), the rejected ref's log entry's author.
    pub reviewer: Option<String>,
    /// When (Unix seconds).
    pub time_s: i64,
    /// The commit decided on (the one on `main` for an approval, the proposal for a rejection).
    pub commit: String,
    /// The approval's tag.
    pub tag: Option<String>,
    /// The commit's trailers (`Origin`, `Pattern`, `Support`, `Tests`, `Generator`, …).
    pub trailers: Vec<(String, String)>,
    /// The tool's files in that commit, by path inside its directory.
    pub files: BTreeMap<String, String>,
}

/// `tool(<name>): <verb> <version>` → the name and the version.
fn subject_tool(subject: &str) -> Option<(String, Option<String>)> {
    let rest = subject.strip_prefix("tool(")?;
    let (name, rest) = rest.split_once("):")?;
    let version = rest
        .split_whitespace()
        .nth(1)
        .filter(|v| semver::Version::parse(v).is_ok())
        .map(str::to_owned);
    Some((name.to_owned(), version))
}

/// A signature as [`Registry::approver`] writes the person: `Name <email>`, or the name alone
/// for the `login@localhost` made from a login name; `None` for libgit2's `unknown <unknown>`
/// (a log entry written without an identity).
fn signer(who: &git2::Signature<'_>) -> Option<String> {
    let name = who.name().ok()?;
    let email = who.email().ok();
    match email {
        Some("unknown") if name == "unknown" => None,
        Some(email) if !email.is_empty() && email != format!("{name}@localhost") => {
            Some(format!("{name} <{email}>"))
        }
        _ => Some(name.to_owned()),
    }
}

/// The review note an approval added to the body (`Review note: …`).
fn review_note(message: &str) -> Option<String> {
    message
        .split("\n\n")
        .find_map(|p| p.trim().strip_prefix("Review note: "))
        .map(|n| n.trim().to_owned())
}

impl Registry {
    /// Every review decision the registry keeps: approvals by their tags, rejections by their
    /// kept refs; oldest first. A tag or ref that cannot be read is left out with a warning.
    pub fn decided(&self) -> Result<Vec<Decided>, RegistryError> {
        let mut all = Vec::new();
        let tags = self.git("list tags", self.repo.references_glob("refs/tags/*/v*"))?;
        for reference in tags.flatten() {
            let Ok(short) = reference.shorthand().map(str::to_owned) else {
                continue;
            };
            let Some((name, version)) = short.split_once("/v") else {
                continue;
            };
            let Ok(tag) = reference.peel_to_tag() else {
                // A lightweight tag approves nothing (see `approval`).
                continue;
            };
            let Ok(commit) = tag.target().and_then(|t| t.peel_to_commit()) else {
                tracing::warn!("the tag {short} names no commit: left out of the decisions");
                continue;
            };
            let message = commit.message().unwrap_or_default();
            let found = trailers(message);
            let reviewer = tag
                .tagger()
                .and_then(|s| signer(&s))
                .or_else(|| trailer(&found, "Approved-by").map(str::to_owned));
            let time_s = tag
                .tagger()
                .map_or(commit.time().seconds(), |s| s.when().seconds());
            all.push(Decided {
                decision: Verdict::Approved,
                tool: name.to_owned(),
                version: Some(version.to_owned()),
                candidate: trailer(&found, "Candidate").map(str::to_owned),
                reason: review_note(message),
                reviewer,
                time_s,
                commit: commit.id().to_string(),
                tag: Some(short.clone()),
                files: self.files_at(name, commit.id()),
                trailers: found,
            });
        }
        let rejected = self.git(
            "list rejections",
            self.repo.references_glob(&format!("{REJECTED_PREFIX}*")),
        )?;
        for reference in rejected.flatten() {
            let (Ok(refname), Ok(commit)) = (
                reference.name().map(str::to_owned),
                reference.peel_to_commit(),
            ) else {
                continue;
            };
            let message = commit.message().unwrap_or_default();
            let Some((name, version)) =
                subject_tool(commit.summary().ok().flatten().unwrap_or_default())
            else {
                tracing::warn!("{refname} is no tool's proposal: left out of the decisions");
                continue;
            };
            let found = trailers(message);
            // The log entry that kept it says why, who and when.
            let entry = self.repo.reflog(&refname).ok().and_then(|log| {
                log.iter().find_map(|e| {
                    let reason = e
                        .message()
                        .ok()
                        .flatten()?
                        .strip_prefix("toolsmith: rejected: ")?
                        .to_owned();
                    let who = e.committer();
                    Some((reason, signer(&who), who.when().seconds()))
                })
            });
            let (reason, reviewer, time_s) = match entry {
                Some((reason, reviewer, at)) => (Some(reason), reviewer, at),
                None => (None, None, commit.time().seconds()),
            };
            all.push(Decided {
                decision: Verdict::Rejected,
                candidate: trailer(&found, "Candidate")
                    .map(str::to_owned)
                    .or_else(|| refname.strip_prefix(REJECTED_PREFIX).map(str::to_owned)),
                files: self.files_at(&name, commit.id()),
                tool: name,
                version,
                reason,
                reviewer,
                time_s,
                commit: commit.id().to_string(),
                tag: None,
                trailers: found,
            });
        }
        all.sort_by(|a, b| (a.time_s, &a.tool, &a.version).cmp(&(b.time_s, &b.tool, &b.version)));
        Ok(all)
    }

    /// A tool's files in `commit`; empty when they cannot be read (shown as such, never an
    /// error: the decision stands whatever its files became).
    fn files_at(&self, name: &str, commit: Oid) -> BTreeMap<String, String> {
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .ok()
            .and_then(|t| self.subtree_id(&t, &tool_path(name)));
        match tree.map(|t| self.tool_files(name, t)) {
            Some(Ok(files)) => files,
            Some(Err(e)) => {
                tracing::warn!("the files of {name} in {commit} are not read: {e}");
                BTreeMap::new()
            }
            None => BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    #[test]
    fn approvals_and_rejections_are_read_back_with_their_reason_reviewer_and_files() {
        let (_dir, registry) = fixture::registry();
        fixture::propose(&registry, "c-1", "one", "#!/bin/sh\necho 1\n");
        fixture::propose(&registry, "c-2", "two", "#!/bin/sh\necho 2\n");
        registry
            .approve("c-1", "Ann <ann@example.org>", Some("good one"))
            .expect("approve");
        registry.reject("c-2", "too narrow").expect("reject");
        let decided = registry.decided().expect("decisions");
        type Seen<'a> = (
            Verdict,
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let seen: Vec<Seen<'_>> = decided
            .iter()
            .map(|d| {
                (
                    d.decision,
                    d.tool.as_str(),
                    d.version.as_deref(),
                    d.candidate.as_deref(),
                    d.reason.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    Verdict::Approved,
                    "one",
                    Some("1.0.0"),
                    Some("c-1"),
                    Some("good one")
                ),
                (
                    Verdict::Rejected,
                    "two",
                    Some("1.0.0"),
                    Some("c-2"),
                    Some("too narrow")
                ),
            ]
        );
        assert_eq!(
            decided[0].reviewer.as_deref(),
            Some("Ann <ann@example.org>")
        );
        assert_eq!(decided[0].tag.as_deref(), Some("one/v1.0.0"));
        assert_eq!(decided[0].commit, registry.main_id().expect("main"));
        assert_eq!(
            decided[1].reviewer.as_deref(),
            Some(registry.approver().as_str()),
            "the rejection's log names who rejected"
        );
        assert_eq!(
            decided[1].files.get("run.sh").map(String::as_str),
            Some("#!/bin/sh\necho 2\n")
        );
        assert!(
            decided[0].files.contains_key("tool.yaml"),
            "{:?}",
            decided[0].files
        );
    }

    #[test]
    fn a_subject_names_the_tool_and_its_version() {
        assert_eq!(
            subject_tool("tool(demo): add 1.0.0"),
            Some(("demo".into(), Some("1.0.0".into())))
        );
        assert_eq!(
            subject_tool("tool(demo): deprecate"),
            Some(("demo".into(), None))
        );
        assert_eq!(subject_tool("merge"), None);
    }
}
