//! What a person grants at approval: a proposal whose manifest lists `needs` (what the policy
//! asks a person for: programs of `ask` domains, hosts, host sockets, credential files) lands
//! only when the approval grants exactly those (`toolsmith approve ID --grant NEED`, each
//! need once). The approved manifest's `granted` then lists them — runs get those and nothing
//! more — and the approval commit records each in a `Granted:` trailer. `granted` lies outside
//! the digest (like `validation`), so the validated digest still holds; the approved tree is
//! sealed by its tag like any other.

use git2::{Oid, Tree};

use super::repo::{Registry, RegistryError, Review, tool_path};
use crate::package::manifest::{self, Manifest};
use crate::sandbox::Need;
use crate::sandbox::needs::list;

/// Why `grants` are not what a proposal whose manifest lists `needs` must be given: the
/// missing grants with the exact command that passes them, or the grants it does not need.
pub fn grant_problem(key: &str, needs: &[Need], grants: &[Need]) -> Option<String> {
    let missing: Vec<Need> = needs
        .iter()
        .filter(|n| !grants.contains(n))
        .cloned()
        .collect();
    let extra: Vec<Need> = grants
        .iter()
        .filter(|g| !needs.contains(g))
        .cloned()
        .collect();
    if !missing.is_empty() {
        let flags: Vec<String> = needs.iter().map(|n| format!("--grant {n}")).collect();
        return Some(format!(
            "{key} needs what the policy asks a person to grant, and the approval does not \
             grant {}: it was validated without them, and runs get only what is granted. \
             Approve it granting every need: toolsmith approve {key} {}",
            list(&missing),
            flags.join(" ")
        ));
    }
    if !extra.is_empty() {
        let needed = if needs.is_empty() {
            "it needs no grant".to_owned()
        } else {
            format!("its needs: {}", list(needs))
        };
        return Some(format!(
            "{key} does not need {} ({needed}): grant exactly what it needs",
            list(&extra)
        ));
    }
    None
}

impl Registry {
    /// Checks `grants` against the needs of the proposal's manifest (in `proposed`), and
    /// returns its tool's tree with the manifest's `granted` set to them, when that changes
    /// it (with the manifest); `None` when the proposal lands as it is.
    pub(super) fn granted_tool(
        &self,
        proposed: &Tree<'_>,
        review: &Review,
        key: &str,
        grants: &[Need],
    ) -> Result<Option<(Oid, Manifest)>, RegistryError> {
        let found = self.manifest_in(proposed, &review.name);
        let needs = found.as_ref().map(|m| m.needs.clone()).unwrap_or_default();
        if let Some(problem) = grant_problem(key, &needs, grants) {
            return Err(RegistryError::Conflict(problem));
        }
        let Some(mut manifest) = found else {
            return Ok(None);
        };
        let mut granted = grants.to_vec();
        granted.sort();
        granted.dedup();
        if manifest.granted == granted {
            return Ok(None);
        }
        manifest.granted = granted;
        let path = tool_path(&review.name);
        let invalid = |problem: String| RegistryError::Invalid {
            name: review.name.clone(),
            problem,
        };
        let tool = self
            .subtree_id(proposed, &path)
            .ok_or_else(|| invalid(format!("the proposal has no {path}")))?;
        let tool = self.git("read the proposal's tool", self.repo.find_tree(tool))?;
        let blob = self.git(
            "write the granted manifest",
            self.repo.blob(manifest.to_yaml().as_bytes()),
        )?;
        let mut builder = self.git("build the tool's tree", self.repo.treebuilder(Some(&tool)))?;
        self.git(
            "build the tool's tree",
            builder.insert(manifest::FILE_NAME, blob, 0o100644),
        )?;
        let id = self.git("write the tool's tree", builder.write())?;
        Ok(Some((id, manifest)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(texts: &[&str]) -> Vec<Need> {
        texts
            .iter()
            .map(|t| Need::parse(t).expect("need"))
            .collect()
    }

    #[test]
    fn every_need_must_be_granted_and_nothing_else() {
        let asked = needs(&["program:curl", "host:127.0.0.1:8080"]);
        let missing = grant_problem("c-1", &asked, &needs(&["program:curl"])).expect("missing");
        assert!(
            missing.contains("does not grant host:127.0.0.1:8080")
                && missing.ends_with(
                    "toolsmith approve c-1 --grant program:curl --grant host:127.0.0.1:8080"
                ),
            "{missing}"
        );
        assert_eq!(grant_problem("c-1", &asked, &asked), None);
        let extra = grant_problem(
            "c-1",
            &asked,
            &needs(&["program:curl", "host:127.0.0.1:8080", "socket:/run/x.sock"]),
        )
        .expect("extra");
        assert!(
            extra.contains("does not need socket:/run/x.sock"),
            "{extra}"
        );
        assert!(
            grant_problem("c-2", &[], &needs(&["program:curl"]))
                .is_some_and(|p| p.contains("it needs no grant"))
        );
        assert_eq!(grant_problem("c-2", &[], &[]), None);
    }
}
