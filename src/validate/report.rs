//! What validation found: each check's verdict, as written beside an attempt
//! (`diagnostics.json`) and shown to a person or, in the repair loop, to the model.

use serde::{Deserialize, Serialize};

/// How an attempt went: each check's verdict and the details a person (or the model, in the
/// repair loop) needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// The generator that wrote the attempt.
    pub generator: String,
    /// Whether every check passed.
    pub passed: bool,
    /// Each check, in the order run.
    pub checks: Vec<CheckReport>,
    /// When the attempt finished (RFC 3339).
    pub finished: String,
}

/// A validation layer: which kind of check a [`CheckReport`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckLayer {
    /// What the generator handed back is a tool at all (the pipeline's own check).
    Contract,
    /// The manifest and the test cases parse and agree.
    Manifest,
    /// Static checkers (`sh -n`, shellcheck, …).
    Static,
    /// The runtime's requirements are met.
    Requires,
    /// The policy rules.
    Policy,
    /// The test cases, run in the sandbox.
    Tests,
    /// The output matches the declared schema.
    Schema,
    /// Validation itself could not run.
    Validate,
    /// A layer this build does not know (written by another version).
    #[serde(other)]
    Other,
}

impl CheckLayer {
    /// The layer's name, as diagnostics and `toolsmith show` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckLayer::Contract => "contract",
            CheckLayer::Manifest => "manifest",
            CheckLayer::Static => "static",
            CheckLayer::Requires => "requires",
            CheckLayer::Policy => "policy",
            CheckLayer::Tests => "tests",
            CheckLayer::Schema => "schema",
            CheckLayer::Validate => "validate",
            CheckLayer::Other => "other",
        }
    }
}

impl std::fmt::Display for CheckLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validation layer's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The layer.
    pub layer: CheckLayer,
    /// The check within it, e.g. `sh -n`, `shellcheck`, a rule id, a test's name.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What it found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl Diagnostics {
    /// The failed checks as text, for the repair prompt and `toolsmith show`.
    pub fn failures(&self) -> String {
        let mut out = String::new();
        for c in self.checks.iter().filter(|c| !c.passed) {
            out.push_str(&format!("- [{}] {}\n", c.layer, c.name));
            for d in &c.details {
                for line in d.lines() {
                    out.push_str(&format!("    {line}\n"));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_layers_are_written_by_name_and_unknown_ones_still_read() {
        let report = CheckReport {
            layer: CheckLayer::Requires,
            name: "runtime.requires".into(),
            passed: true,
            details: Vec::new(),
        };
        let text = serde_json::to_string(&report).expect("json");
        assert_eq!(
            text,
            r#"{"layer":"requires","name":"runtime.requires","passed":true}"#
        );
        assert_eq!(
            serde_json::from_str::<CheckReport>(&text).expect("read"),
            report
        );
        let newer: CheckReport =
            serde_json::from_str(r#"{"layer":"fuzz","name":"x","passed":false}"#).expect("read");
        assert_eq!(newer.layer, CheckLayer::Other);
        assert_eq!(format!("[{}]", CheckLayer::Static), "[static]");
    }
}
