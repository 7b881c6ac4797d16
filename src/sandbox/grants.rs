//! The `[grants]` table of the policy: what a reviewer may let a tool reach beyond the system
//! directories — which kinds of the user's toolchains may be bound into the sandbox.
//!
//! ```toml
//! [grants]
//! # Kinds of toolchain under the home directory a tool may use (read-only): rustup, pyenv,
//! # venv, nvm, local-bin. Default: all of them; [] keeps tools to the system directories.
//! toolchains = ["rustup", "pyenv", "venv", "nvm", "local-bin"]
//! ```
//!
//! A tool whose manifest needs a kind the policy does not grant is refused by validation and by
//! every run, with the line that would allow it ([`Grants::toolchain_refusal`]).

use std::collections::BTreeSet;

use serde::Deserialize;

use super::profile::{Toolchain, ToolchainKind};

/// What the policy lets tools reach.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grants {
    /// Kinds of toolchain that may be bound into the sandbox.
    pub toolchains: BTreeSet<ToolchainKind>,
}

impl Default for Grants {
    /// Every kind of toolchain; nothing else.
    fn default() -> Self {
        Grants {
            toolchains: ToolchainKind::ALL.into_iter().collect(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrants {
    toolchains: Option<Vec<String>>,
}

impl Grants {
    /// Reads the `[grants]` table (`None`: the table is absent, the defaults apply). The error
    /// names the key and what to write.
    pub fn from_table(table: Option<&toml::Value>) -> Result<Grants, (String, String)> {
        let mut grants = Grants::default();
        let Some(table) = table else {
            return Ok(grants);
        };
        let raw: RawGrants = table
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| ("grants".to_owned(), e.message().to_owned()))?;
        if let Some(kinds) = raw.toolchains {
            let mut set = BTreeSet::new();
            for name in kinds {
                let kind = ToolchainKind::from_name(&name).ok_or_else(|| {
                    (
                        "grants.toolchains".to_owned(),
                        format!(
                            "`{}` is not a kind of toolchain: use {}",
                            name.escape_debug(),
                            kind_list(ToolchainKind::ALL)
                        ),
                    )
                })?;
                set.insert(kind);
            }
            grants.toolchains = set;
        }
        Ok(grants)
    }

    /// Whether the policy grants `kind`.
    pub fn allows(&self, kind: ToolchainKind) -> bool {
        self.toolchains.contains(&kind)
    }

    /// Why `toolchain` is refused under the policy `file`, with the exact line that would allow
    /// it; `None` when the policy grants it.
    pub fn toolchain_refusal(&self, toolchain: &Toolchain, file: &str) -> Option<String> {
        if self.allows(toolchain.kind) {
            return None;
        }
        let mut wanted = self.toolchains.clone();
        wanted.insert(toolchain.kind);
        let place = toolchain
            .paths
            .first()
            .map(|p| format!(" at {}", p.display()))
            .unwrap_or_default();
        Some(format!(
            "`{}` comes from the user's {} toolchain{place}, which the policy {file} does not \
             grant: add \"{}\" to [grants] toolchains in {file} (toolchains = [{}])",
            toolchain.program,
            toolchain.kind,
            toolchain.kind,
            kind_list(wanted)
        ))
    }
}

/// `"a", "b"`: kinds as the policy writes them.
fn kind_list(kinds: impl IntoIterator<Item = ToolchainKind>) -> String {
    kinds
        .into_iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Value {
        let doc: toml::Table = toml::from_str(text).expect("toml");
        doc.get("grants").cloned().expect("a [grants] table")
    }

    #[test]
    fn every_kind_by_default_and_narrowed_by_the_policy() {
        let all = Grants::from_table(None).expect("default");
        assert!(ToolchainKind::ALL.iter().all(|k| all.allows(*k)));
        let some = Grants::from_table(Some(&table("[grants]\ntoolchains = [\"rustup\"]\n")))
            .expect("valid");
        assert!(some.allows(ToolchainKind::Rustup));
        assert!(!some.allows(ToolchainKind::Pyenv));
        let none = Grants::from_table(Some(&table("[grants]\ntoolchains = []\n"))).expect("ok");
        assert!(none.toolchains.is_empty());
    }

    #[test]
    fn unknown_kinds_and_keys_are_named() {
        let (key, message) =
            Grants::from_table(Some(&table("[grants]\ntoolchains = [\"conda\"]\n")))
                .expect_err("unknown kind");
        assert_eq!(key, "grants.toolchains");
        assert!(message.contains("`conda`") && message.contains("\"local-bin\""));
        let (key, message) =
            Grants::from_table(Some(&table("[grants]\ntoolchain = []\n"))).expect_err("typo");
        assert_eq!(key, "grants");
        assert!(message.contains("toolchain"), "{message}");
    }

    #[test]
    fn a_refusal_gives_the_line_that_allows_it() {
        let grants = Grants::from_table(Some(&table("[grants]\ntoolchains = [\"rustup\"]\n")))
            .expect("valid");
        let python = Toolchain {
            program: "python".into(),
            kind: ToolchainKind::Pyenv,
            paths: vec!["/home/a/.pyenv/versions/3.11.7".into()],
            env: Default::default(),
        };
        let why = grants
            .toolchain_refusal(&python, "/etc/toolsmith/policy.toml")
            .expect("refused");
        assert!(
            why.contains(
                "add \"pyenv\" to [grants] toolchains in /etc/toolsmith/policy.toml \
                 (toolchains = [\"rustup\", \"pyenv\"])"
            ),
            "{why}"
        );
        assert!(why.contains("/home/a/.pyenv/versions/3.11.7"), "{why}");
        let cargo = Toolchain {
            kind: ToolchainKind::Rustup,
            ..python
        };
        assert_eq!(grants.toolchain_refusal(&cargo, "p.toml"), None);
    }
}
