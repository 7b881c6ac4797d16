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

/// One validation layer's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The layer: `contract`, `manifest`, `static`, `policy`, `tests`, `schema`.
    pub layer: String,
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
