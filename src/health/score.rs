//! Health scores and statuses of tool versions, from their recent executions and the policy's
//! `[health]` table.
//!
//! ```text
//! score = 100 − (1 − success rate) × 50 − Σ penalties of the issues
//! ```
//!
//! An *issue* is an error class seen among the failures of the window; its penalty comes from
//! the class's severity in the policy (critical 30, high 20, medium 10, low 5). The score is
//! clamped to 0–100. Status: HEALTHY at 80 and above, DEGRADED from 60 to 79, FAILING below 60;
//! HEALING while a repair is in review, HEALED once a repaired version runs clean, and
//! REQUIRES_ATTENTION when a person must look (a regression that may not be rolled back
//! automatically, or a failing tool whose errors are not auto-healable).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::classify::ErrorClass;

/// How bad an error class is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// 5 points.
    Low,
    /// 10 points.
    Medium,
    /// 20 points.
    High,
    /// 30 points.
    Critical,
}

impl Severity {
    /// The score penalty of an issue of this severity.
    pub fn penalty(self) -> f64 {
        match self {
            Severity::Critical => 30.0,
            Severity::High => 20.0,
            Severity::Medium => 10.0,
            Severity::Low => 5.0,
        }
    }
}

/// What the policy says about one error class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClassPolicy {
    /// Its severity.
    pub severity: Severity,
    /// Whether a repair may be generated automatically.
    pub auto_heal: bool,
}

/// When a new version counts as a regression of the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegressionPolicy {
    /// Runs of the new version needed before judging it.
    pub min_runs: u32,
    /// How much higher its failure rate must be (absolute, 0–1).
    pub worse_by: f64,
    /// Whether the daemon rolls back on its own (else: REQUIRES_ATTENTION).
    pub auto_rollback: bool,
}

impl Default for RegressionPolicy {
    fn default() -> Self {
        RegressionPolicy {
            min_runs: 10,
            worse_by: 0.25,
            auto_rollback: true,
        }
    }
}

/// The `[health]` table of the policy.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HealthPolicy {
    /// The last this many runs of a version are scored.
    pub window_runs: u32,
    /// Each class's severity and healability.
    pub classes: BTreeMap<ErrorClass, ClassPolicy>,
    /// Regression detection.
    pub regression: RegressionPolicy,
    /// Heal attempts per tool version before giving up (REQUIRES_ATTENTION).
    pub max_heal_attempts: u32,
    /// Days without use after which a tool is proposed for deprecation.
    pub unused_days: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHealth {
    window_runs: Option<u32>,
    #[serde(default)]
    classes: BTreeMap<String, ClassPolicy>,
    #[serde(default)]
    regression: Option<RegressionPolicy>,
    max_heal_attempts: Option<u32>,
    unused_days: Option<u32>,
}

impl Default for HealthPolicy {
    fn default() -> Self {
        use ErrorClass::*;
        use Severity::*;
        let class = |severity, auto_heal| ClassPolicy {
            severity,
            auto_heal,
        };
        let classes = [
            (Timeout, class(Medium, true)),
            (Network, class(High, false)),
            (Auth, class(High, false)),
            (Permission, class(Medium, true)),
            (Endpoint, class(High, true)),
            (RateLimit, class(Low, false)),
            (Parsing, class(Medium, true)),
            (CodeError, class(High, true)),
            (MissingDependency, class(High, false)),
            (SandboxDenial, class(Medium, true)),
            (MemoryLimit, class(Medium, true)),
            (PidsLimit, class(Medium, true)),
            (OutputLimit, class(Low, true)),
            (Other, class(Medium, true)),
        ]
        .into_iter()
        .collect();
        HealthPolicy {
            window_runs: 50,
            classes,
            regression: RegressionPolicy::default(),
            max_heal_attempts: 3,
            unused_days: 60,
        }
    }
}

/// A `[health]` table that cannot be used: which file, what is wrong, what to fix.
#[derive(Debug, thiserror::Error)]
pub enum HealthPolicyError {
    /// The policy file cannot be read.
    #[error("cannot read the policy file {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("{file}: {reason}")]
    Toml {
        /// The file.
        file: String,
        /// The parser's message.
        reason: String,
    },
    /// The `[health]` table has an unknown key or a value of the wrong type.
    #[error("{file}: [health]: {reason}")]
    Table {
        /// The file.
        file: String,
        /// The parser's message.
        reason: String,
    },
    /// `health.window_runs` is 0.
    #[error("{file}: health.window_runs must be at least 1")]
    WindowRuns {
        /// The file.
        file: String,
    },
    /// `health.classes` names an error class that does not exist.
    #[error("{file}: health.classes.{name}: unknown error class; known: {known}")]
    UnknownClass {
        /// The file.
        file: String,
        /// The name given.
        name: String,
        /// The classes there are, comma-separated.
        known: String,
    },
    /// `health.regression.worse_by` is outside 0–1.
    #[error("{file}: health.regression.worse_by must be between 0 and 1")]
    WorseBy {
        /// The file.
        file: String,
    },
}

impl HealthPolicy {
    /// The `[health]` table of the policy file at `path`, or of the built-in policy.
    pub fn configured(path: Option<&std::path::Path>) -> Result<HealthPolicy, HealthPolicyError> {
        match path {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| HealthPolicyError::Read {
                        path: path.to_owned(),
                        source,
                    })?;
                HealthPolicy::from_toml(&text, &path.display().to_string())
            }
            None => HealthPolicy::from_toml(
                crate::validate::run::DEFAULT_POLICY,
                crate::sandbox::policy::DEFAULT_FILE,
            ),
        }
    }

    /// Reads the `[health]` table of a policy file's text; what it leaves out keeps the defaults.
    pub fn from_toml(text: &str, file: &str) -> Result<HealthPolicy, HealthPolicyError> {
        let doc: toml::Table = toml::from_str(text).map_err(|e| HealthPolicyError::Toml {
            file: file.to_owned(),
            reason: e.to_string(),
        })?;
        let mut policy = HealthPolicy::default();
        let Some(table) = doc.get("health") else {
            return Ok(policy);
        };
        let raw: RawHealth =
            table
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| HealthPolicyError::Table {
                    file: file.to_owned(),
                    reason: e.message().to_owned(),
                })?;
        if let Some(w) = raw.window_runs {
            if w == 0 {
                return Err(HealthPolicyError::WindowRuns {
                    file: file.to_owned(),
                });
            }
            policy.window_runs = w;
        }
        for (name, class) in raw.classes {
            let Some(key) = ErrorClass::from_name(&name) else {
                let known: Vec<_> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
                return Err(HealthPolicyError::UnknownClass {
                    file: file.to_owned(),
                    name,
                    known: known.join(", "),
                });
            };
            policy.classes.insert(key, class);
        }
        if let Some(r) = raw.regression {
            if !(0.0..=1.0).contains(&r.worse_by) {
                return Err(HealthPolicyError::WorseBy {
                    file: file.to_owned(),
                });
            }
            policy.regression = r;
        }
        if let Some(n) = raw.max_heal_attempts {
            policy.max_heal_attempts = n;
        }
        if let Some(d) = raw.unused_days {
            policy.unused_days = d;
        }
        Ok(policy)
    }

    /// The policy for a class.
    pub fn class(&self, class: ErrorClass) -> ClassPolicy {
        self.classes.get(&class).copied().unwrap_or(ClassPolicy {
            severity: Severity::Medium,
            auto_heal: false,
        })
    }
}

/// A tool version's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Score 80–100.
    Healthy,
    /// Score 60–79.
    Degraded,
    /// Score 0–59.
    Failing,
    /// A repair is being generated or is in review.
    Healing,
    /// A repaired version runs clean.
    Healed,
    /// A person must look.
    RequiresAttention,
}

impl Status {
    /// The status's name as shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Healthy => "HEALTHY",
            Status::Degraded => "DEGRADED",
            Status::Failing => "FAILING",
            Status::Healing => "HEALING",
            Status::Healed => "HEALED",
            Status::RequiresAttention => "REQUIRES_ATTENTION",
        }
    }

    /// The status a score alone gives.
    pub fn from_score(score: f64) -> Status {
        if score >= 80.0 {
            Status::Healthy
        } else if score >= 60.0 {
            Status::Degraded
        } else {
            Status::Failing
        }
    }
}

/// An error class seen among a version's failures.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Issue {
    /// The class.
    pub class: ErrorClass,
    /// Its severity.
    pub severity: Severity,
    /// Failed runs of this class in the window.
    pub count: u32,
    /// Points taken off the score.
    pub penalty: f64,
    /// Whether the policy lets it be repaired automatically.
    pub auto_heal: bool,
}

/// The score of a window of runs: `failures` maps each error class to its count.
pub fn score(
    runs: u32,
    successes: u32,
    failures: &BTreeMap<ErrorClass, u32>,
    policy: &HealthPolicy,
) -> (f64, Vec<Issue>) {
    if runs == 0 {
        return (100.0, Vec::new());
    }
    let success_rate = f64::from(successes.min(runs)) / f64::from(runs);
    let issues: Vec<Issue> = failures
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(class, n)| {
            let p = policy.class(*class);
            Issue {
                class: *class,
                severity: p.severity,
                count: *n,
                penalty: p.severity.penalty(),
                auto_heal: p.auto_heal,
            }
        })
        .collect();
    let penalties: f64 = issues.iter().map(|i| i.penalty).sum();
    let raw = 100.0 - (1.0 - success_rate) * 50.0 - penalties;
    ((raw.clamp(0.0, 100.0) * 10.0).round() / 10.0, issues)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failures(list: &[(ErrorClass, u32)]) -> BTreeMap<ErrorClass, u32> {
        list.iter().copied().collect()
    }

    #[test]
    fn the_documented_formula() {
        let p = HealthPolicy::default();
        // All good.
        assert_eq!(score(20, 20, &failures(&[]), &p).0, 100.0);
        // 90% success, one medium issue: 100 - 5 - 10.
        let (s, issues) = score(20, 18, &failures(&[(ErrorClass::Timeout, 2)]), &p);
        assert_eq!(s, 85.0);
        assert_eq!(issues.len(), 1);
        assert_eq!(Status::from_score(s), Status::Healthy);
        // 70% success, a high (code error) and a low (output limit): 100 - 15 - 20 - 5 = 60.
        let (s, _) = score(
            10,
            7,
            &failures(&[(ErrorClass::CodeError, 2), (ErrorClass::OutputLimit, 1)]),
            &p,
        );
        assert_eq!(s, 60.0);
        assert_eq!(Status::from_score(s), Status::Degraded);
        // Everything fails with two high issues: 100 - 50 - 40 = 10.
        let (s, _) = score(
            4,
            0,
            &failures(&[(ErrorClass::Endpoint, 2), (ErrorClass::Auth, 2)]),
            &p,
        );
        assert_eq!(s, 10.0);
        assert_eq!(Status::from_score(s), Status::Failing);
        // Clamped at zero.
        let many = failures(&[
            (ErrorClass::Endpoint, 1),
            (ErrorClass::Auth, 1),
            (ErrorClass::Network, 1),
            (ErrorClass::CodeError, 1),
        ]);
        assert_eq!(score(4, 0, &many, &p).0, 0.0);
        // Thresholds.
        assert_eq!(Status::from_score(80.0), Status::Healthy);
        assert_eq!(Status::from_score(79.9), Status::Degraded);
        assert_eq!(Status::from_score(59.9), Status::Failing);
    }

    #[test]
    fn the_default_policy_file_says_what_the_defaults_say() {
        let text = include_str!("../../policies/default.toml");
        let p = HealthPolicy::from_toml(text, "policies/default.toml").expect("valid");
        assert_eq!(p, HealthPolicy::default());
    }

    #[test]
    fn the_policy_sets_severities_and_healability() {
        let text = r#"
[health]
window_runs = 20
[health.classes]
timeout = { severity = "critical", auto_heal = false }
[health.regression]
min_runs = 5
worse_by = 0.1
auto_rollback = false
"#;
        let p = HealthPolicy::from_toml(text, "p.toml").expect("valid");
        assert_eq!(p.window_runs, 20);
        assert_eq!(p.class(ErrorClass::Timeout).severity, Severity::Critical);
        assert!(!p.class(ErrorClass::Timeout).auto_heal);
        assert!(
            p.class(ErrorClass::CodeError).auto_heal,
            "others keep defaults"
        );
        assert!(!p.regression.auto_rollback);
        let (s, _) = score(10, 10, &failures(&[]), &p);
        assert_eq!(s, 100.0);
        for (bad, expect) in [
            (
                "[health.classes]\nhiccup = { severity = \"low\", auto_heal = true }",
                "unknown error class",
            ),
            ("[health]\nwindow = 3", "unknown field"),
            ("[health]\nwindow_runs = 0", "at least 1"),
            (
                "[health.classes]\ntimeout = { severity = \"dire\", auto_heal = true }",
                "unknown variant",
            ),
        ] {
            let err = HealthPolicy::from_toml(bad, "p.toml")
                .expect_err(bad)
                .to_string();
            assert!(err.contains(expect), "{bad}: {err}");
        }
    }
}
