//! Auto-approval: off unless the policy file's `[review]` table has rules. A proposal is approved
//! without a person only when every condition of one rule holds; the approval names the rule
//! (`Approved-by: toolsmith policy rule <id>`).
//!
//! ```toml
//! [[review.auto_approve]]
//! id = "patches-of-read-only-tools"
//! origins = ["mined-sequence", "error-recovery"]   # default: any origin
//! max_bump = "patch"           # patch, minor or major: how far the version may move
//! new_tools = false            # whether a tool's first version qualifies (default false)
//! max_workspace = "read"       # none, read or write (default none)
//! generators = ["template/sh@1", "template/py@1"]  # default: any generator
//! ```

use serde::Deserialize;

use super::versions::Bump;
use crate::package::manifest::Manifest;
use crate::sandbox::WorkspaceAccess;

/// The auto-approval rules of a policy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AutoApproval {
    /// The rules; none means every proposal waits for a person.
    pub rules: Vec<Rule>,
}

/// One rule: all its conditions must hold.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Named in the approval.
    pub id: String,
    /// Origins that qualify; empty means any.
    #[serde(default)]
    pub origins: Vec<String>,
    /// How far the version may move.
    pub max_bump: Bump,
    /// Whether a tool's first version qualifies.
    #[serde(default)]
    pub new_tools: bool,
    /// The most workspace access the tool may have.
    #[serde(default = "no_workspace")]
    pub max_workspace: WorkspaceAccess,
    /// Generators that qualify; empty means any.
    #[serde(default)]
    pub generators: Vec<String>,
}

fn no_workspace() -> WorkspaceAccess {
    WorkspaceAccess::None
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReview {
    #[serde(default)]
    auto_approve: Vec<Rule>,
}

fn access_rank(a: WorkspaceAccess) -> u8 {
    match a {
        WorkspaceAccess::None => 0,
        WorkspaceAccess::Read => 1,
        WorkspaceAccess::Write => 2,
    }
}

/// A `[review]` table that cannot be used: which file, and what the parser said.
#[derive(Debug, thiserror::Error)]
pub enum AutoApprovalError {
    /// The file is not TOML.
    #[error("{file}: {reason}")]
    Toml {
        /// The file.
        file: String,
        /// The parser's message.
        reason: String,
    },
    /// The `[review]` table has an unknown key or a value of the wrong type.
    #[error("{file}: [review]: {reason}")]
    Review {
        /// The file.
        file: String,
        /// The parser's message.
        reason: String,
    },
}

impl AutoApproval {
    /// Reads the `[review]` table of a policy file's text; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<AutoApproval, AutoApprovalError> {
        let doc: toml::Table = toml::from_str(text).map_err(|e| AutoApprovalError::Toml {
            file: file.to_owned(),
            reason: e.message().to_owned(),
        })?;
        let Some(value) = doc.get("review") else {
            return Ok(AutoApproval::default());
        };
        let table = toml::to_string(value).unwrap_or_default();
        let raw: RawReview = toml::from_str(&table).map_err(|e| AutoApprovalError::Review {
            file: file.to_owned(),
            reason: e.message().to_owned(),
        })?;
        Ok(AutoApproval {
            rules: raw.auto_approve,
        })
    }

    /// The rule that approves this proposal, if one does. `bump` is `None` for a tool's first
    /// version.
    pub fn approving_rule(&self, manifest: &Manifest, bump: Option<Bump>) -> Option<&Rule> {
        // What needs a person's grant is never approved by a rule.
        if !manifest.needs.is_empty() {
            return None;
        }
        self.rules.iter().find(|rule| {
            let origin_ok = rule.origins.is_empty()
                || rule
                    .origins
                    .iter()
                    .any(|o| o == manifest.provenance.origin.as_str());
            let bump_ok = match bump {
                None => rule.new_tools,
                Some(b) => b <= rule.max_bump,
            };
            let workspace_ok =
                access_rank(manifest.sandbox.workspace) <= access_rank(rule.max_workspace);
            let generator_ok = rule.generators.is_empty()
                || rule.generators.contains(&manifest.provenance.generator);
            origin_ok && bump_ok && workspace_ok && generator_ok
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rules_no_auto_approval_and_every_condition_counts() {
        let default = include_str!("../../policies/default.toml");
        let none = AutoApproval::from_toml(default, "default.toml").expect("default policy");
        assert!(none.rules.is_empty(), "off by default");
        let text = r#"
[[review.auto_approve]]
id = "patches"
origins = ["mined-sequence"]
max_bump = "patch"
max_workspace = "read"
"#;
        let policy = AutoApproval::from_toml(text, "p.toml").expect("policy");
        let mut m = crate::package::manifest::tests_support::manifest();
        m.provenance.origin = crate::package::manifest::Origin::MinedSequence;
        m.sandbox.workspace = WorkspaceAccess::Read;
        assert_eq!(
            policy
                .approving_rule(&m, Some(Bump::Patch))
                .map(|r| r.id.as_str()),
            Some("patches")
        );
        assert!(policy.approving_rule(&m, Some(Bump::Minor)).is_none());
        assert!(
            policy.approving_rule(&m, None).is_none(),
            "new tools need new_tools"
        );
        m.needs = vec![crate::sandbox::Need::Program("curl".into())];
        assert!(
            policy.approving_rule(&m, Some(Bump::Patch)).is_none(),
            "a need waits for a person"
        );
        m.needs.clear();
        m.sandbox.workspace = WorkspaceAccess::Write;
        assert!(policy.approving_rule(&m, Some(Bump::Patch)).is_none());
        m.sandbox.workspace = WorkspaceAccess::None;
        m.provenance.origin = crate::package::manifest::Origin::Request;
        assert!(policy.approving_rule(&m, Some(Bump::Patch)).is_none());
        let bad = "[[review.auto_approve]]\nid = \"x\"\nmax_bump = \"patch\"\nanything = 1\n";
        let err = AutoApproval::from_toml(bad, "p.toml")
            .expect_err("unknown key")
            .to_string();
        assert!(err.contains("anything"), "{err}");
    }
}
