//! The `[sandbox]` table of the policy (and, through `grants.rs`, its `[grants]` table): which
//! layers untrusted code needs before it may run at all, and the largest limits a tool may ask
//! for.
//!
//! ```toml
//! [sandbox]
//! require = ["landlock", "seccomp", "rlimits"]
//! allow_partial_landlock = false
//! cpus = 2
//!
//! [sandbox.max]
//! wall_s = 600
//! memory_mb = 4096
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::grants::Grants;
use super::profile::Limits;
use crate::host::HostReport;

/// A layer of the sandbox the policy can require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// User, mount, pid, net, ipc and uts namespaces, and with them the minimal filesystem view.
    Namespaces,
    /// A Landlock ruleset.
    Landlock,
    /// The seccomp filters.
    Seccomp,
    /// Resource limits by rlimits (always available).
    Rlimits,
    /// A cgroup v2 per run (needs a delegated subtree).
    Cgroup,
}

impl Layer {
    /// Every layer, in the order the helper applies them.
    pub const ALL: [Layer; 5] = [
        Layer::Namespaces,
        Layer::Rlimits,
        Layer::Cgroup,
        Layer::Landlock,
        Layer::Seccomp,
    ];

    /// The name written in the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Namespaces => "namespaces",
            Layer::Landlock => "landlock",
            Layer::Seccomp => "seccomp",
            Layer::Rlimits => "rlimits",
            Layer::Cgroup => "cgroup",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy file whose `[sandbox]` table cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SandboxPolicyError {
    /// The file could not be read.
    #[error("cannot read the policy {file}: {source}")]
    Io {
        /// The policy file.
        file: String,
        /// The error.
        source: std::io::Error,
    },
    /// The TOML is malformed, or `[sandbox]` has unknown keys or wrong types.
    #[error("{file}: invalid [sandbox] table: {message}")]
    Syntax {
        /// The policy file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A value makes no sense.
    #[error("{file}: {key}: {message}")]
    Invalid {
        /// The policy file.
        file: String,
        /// The dotted key (`sandbox.cpus`, `grants.toolchains`).
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// The sandbox policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxPolicy {
    /// Where the policy came from, for messages (`policies/default.toml` when built in).
    pub file: String,
    /// Layers without which untrusted code does not run.
    pub require: BTreeSet<Layer>,
    /// Accept a Landlock ruleset the kernel enforces only partially.
    pub allow_partial_landlock: bool,
    /// CPU bandwidth of a run under a cgroup (`cpu.max`), in CPUs.
    pub cpus: u32,
    /// The largest limits a profile may ask for.
    pub max: Limits,
    /// What may ever be granted beyond the defaults (the `[grants]` table): kinds of the
    /// user's toolchains (all by default), network hosts through the proxy and host sockets
    /// (none by default).
    pub grants: Grants,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    require: Option<Vec<Layer>>,
    allow_partial_landlock: Option<bool>,
    cpus: Option<u32>,
    max: Option<Limits>,
}

/// The built-in policy's file name, as messages name it.
pub const DEFAULT_FILE: &str = "policies/default.toml";

impl Default for SandboxPolicy {
    /// The built-in policy: the `[sandbox]` table of `policies/default.toml` (a test keeps the
    /// two equal).
    fn default() -> Self {
        SandboxPolicy {
            file: DEFAULT_FILE.into(),
            require: [Layer::Landlock, Layer::Seccomp, Layer::Rlimits].into(),
            allow_partial_landlock: false,
            cpus: 2,
            max: Limits {
                wall_s: 600,
                cpu_s: 600,
                memory_mb: 4096,
                pids: 512,
                output_kb: 16 * 1024,
                file_size_mb: 4096,
                open_files: 4096,
            },
            grants: Grants {
                // The levels with the lines of the built-in file, so refusals name them.
                levels: super::needs::GrantLevels::from_text(
                    include_str!("../../policies/default.toml"),
                    DEFAULT_FILE,
                )
                .unwrap_or_default(),
                ..Grants::default()
            },
        }
    }
}

/// What the sandbox would do on a host under a policy (for `toolsmith doctor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerPlan {
    /// The layers a run would use.
    pub layers: Vec<Layer>,
    /// Why untrusted code would not run at all, naming what to change.
    pub refused: Option<String>,
    /// One line: what runs, or why nothing does.
    pub summary: String,
}

impl SandboxPolicy {
    /// Reads the `[sandbox]` table of a policy file's text (other tables are not this module's);
    /// what it leaves out keeps the built-in values. `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<SandboxPolicy, SandboxPolicyError> {
        let syntax = |message: String| SandboxPolicyError::Syntax {
            file: file.into(),
            message,
        };
        let doc: toml::Table = toml::from_str(text).map_err(|e| syntax(e.message().into()))?;
        let mut policy = SandboxPolicy {
            file: file.into(),
            grants: Grants::from_table(&doc, file)?,
            ..SandboxPolicy::default()
        };
        policy.grants.levels = super::needs::GrantLevels::from_text(text, file)?;
        let Some(table) = doc.get("sandbox") else {
            return Ok(policy);
        };
        let raw: RawSandbox = table
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| syntax(e.message().into()))?;
        let invalid = |key: &str, message: &str| SandboxPolicyError::Invalid {
            file: file.into(),
            key: format!("sandbox.{key}"),
            message: message.into(),
        };
        if let Some(require) = raw.require {
            policy.require = require.into_iter().collect();
        }
        if let Some(partial) = raw.allow_partial_landlock {
            policy.allow_partial_landlock = partial;
        }
        if let Some(cpus) = raw.cpus {
            if cpus == 0 {
                return Err(invalid("cpus", "must be at least 1"));
            }
            policy.cpus = cpus;
        }
        if let Some(max) = raw.max {
            let values = [
                ("wall_s", max.wall_s),
                ("cpu_s", max.cpu_s),
                ("memory_mb", max.memory_mb),
                ("pids", max.pids),
                ("output_kb", max.output_kb),
                ("file_size_mb", max.file_size_mb),
                ("open_files", max.open_files),
            ];
            if let Some((key, _)) = values.iter().find(|(_, v)| *v == 0) {
                return Err(invalid(
                    &format!("max.{key}"),
                    "must be at least 1: a zero maximum would let nothing run",
                ));
            }
            policy.max = max;
        }
        Ok(policy)
    }

    /// Reads a policy file.
    pub fn load(path: &Path) -> Result<SandboxPolicy, SandboxPolicyError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SandboxPolicyError::Io {
            file: file.clone(),
            source,
        })?;
        SandboxPolicy::from_toml(&text, &file)
    }

    /// Whether the policy requires `layer`.
    pub fn requires(&self, layer: Layer) -> bool {
        self.require.contains(&layer)
    }

    /// Bounds `limits` by the policy's maxima (and raises zeros to 1); each change is named.
    pub fn clamp(&self, limits: Limits) -> (Limits, Vec<String>) {
        let mut notes = Vec::new();
        let mut bound = |key: &str, value: u32, max: u32| {
            // Not `clamp`: it panics on a maximum of 0, which a hand-built policy could hold.
            let bounded = value.min(max).max(1);
            if bounded < value {
                notes.push(format!(
                    "limit {key} = {value} lowered to {bounded}, the maximum in the policy's \
                     [sandbox.max]"
                ));
            } else if bounded > value {
                notes.push(format!("limit {key} = {value} raised to {bounded}"));
            }
            bounded
        };
        let m = &self.max;
        let clamped = Limits {
            wall_s: bound("wall_s", limits.wall_s, m.wall_s),
            cpu_s: bound("cpu_s", limits.cpu_s, m.cpu_s),
            memory_mb: bound("memory_mb", limits.memory_mb, m.memory_mb),
            pids: bound("pids", limits.pids, m.pids),
            output_kb: bound("output_kb", limits.output_kb, m.output_kb),
            file_size_mb: bound("file_size_mb", limits.file_size_mb, m.file_size_mb),
            open_files: bound("open_files", limits.open_files, m.open_files),
        };
        (clamped, notes)
    }

    /// Each limit of `limits` above the policy's maximum, as `key = asked (maximum max)`: what
    /// [`SandboxPolicy::clamp`] would lower. Validation refuses such a profile; a run and
    /// `toolsmith verify` say so.
    pub fn above_max(&self, limits: &Limits) -> Vec<String> {
        let m = &self.max;
        [
            ("wall_s", limits.wall_s, m.wall_s),
            ("cpu_s", limits.cpu_s, m.cpu_s),
            ("memory_mb", limits.memory_mb, m.memory_mb),
            ("pids", limits.pids, m.pids),
            ("output_kb", limits.output_kb, m.output_kb),
            ("file_size_mb", limits.file_size_mb, m.file_size_mb),
            ("open_files", limits.open_files, m.open_files),
        ]
        .into_iter()
        .filter(|(_, asked, max)| asked > max)
        .map(|(key, asked, max)| format!("sandbox.limits.{key} = {asked} (maximum {max})"))
        .collect()
    }

    /// The message refusing a run because `layer` is missing, naming what to change.
    pub fn refusal(&self, layer: Layer, why: &str) -> String {
        format!(
            "the policy {} requires {layer}, which is unavailable: {why}. Fix the host (see \
             `toolsmith doctor`), or remove \"{layer}\" from `require` in the policy's [sandbox] \
             table",
            self.file
        )
    }

    /// What a run would use on the probed host, or why it would refuse.
    pub fn plan(&self, host: &HostReport) -> LayerPlan {
        let namespaces = [
            &host.user_namespace,
            &host.mount_namespace,
            &host.pid_namespace,
            &host.net_namespace,
            &host.ipc_namespace,
            &host.uts_namespace,
        ];
        let missing_ns = namespaces.iter().find(|l| !l.available);
        let seccomp = host.seccomp.available && host.no_new_privs.available;
        let available = |layer: Layer| -> Result<(), String> {
            match layer {
                Layer::Namespaces => missing_ns.map_or(Ok(()), |l| Err(l.detail.clone())),
                Layer::Landlock if host.landlock.available => Ok(()),
                Layer::Landlock => Err(host.landlock.detail.clone()),
                Layer::Seccomp if seccomp => Ok(()),
                Layer::Seccomp => Err(if host.seccomp.available {
                    host.no_new_privs.detail.clone()
                } else {
                    host.seccomp.detail.clone()
                }),
                Layer::Rlimits => Ok(()),
                Layer::Cgroup if host.cgroup_v2.available => Ok(()),
                Layer::Cgroup => Err(host.cgroup_v2.detail.clone()),
            }
        };
        let mut layers = Vec::new();
        for layer in Layer::ALL {
            match available(layer) {
                Ok(()) => layers.push(layer),
                Err(why) if self.requires(layer) => {
                    let refused = self.refusal(layer, &why);
                    return LayerPlan {
                        layers: Vec::new(),
                        summary: format!("untrusted code does not run: {refused}"),
                        refused: Some(refused),
                    };
                }
                Err(_) => {}
            }
        }
        let names: Vec<String> = layers
            .iter()
            .map(|l| match (l, host.landlock_abi) {
                (Layer::Landlock, Some(abi)) => format!("landlock (ABI {abi})"),
                (l, _) => l.to_string(),
            })
            .collect();
        let lacking: Vec<&str> = Layer::ALL
            .iter()
            .filter(|l| !layers.contains(l))
            .map(|l| l.as_str())
            .collect();
        let mut summary = format!("runs tools with {}", names.join(", "));
        if !lacking.is_empty() {
            summary.push_str(&format!(" (without {})", lacking.join(", ")));
        }
        if !layers.contains(&Layer::Namespaces) {
            summary.push_str("; ");
            summary.push_str(WITHOUT_NAMESPACES);
        }
        LayerPlan {
            layers,
            refused: None,
            summary,
        }
    }
}

/// What a run lacks without namespaces (the fallback where they are refused): shown by
/// `toolsmith doctor` and in the warning of every such run. The escape battery's fallback
/// passes (`tests/sandbox_battery.rs`) hold every other protection.
pub const WITHOUT_NAMESPACES: &str = "without namespaces there is no private filesystem view: \
     Landlock alone guards the host's files, and changing a file's mode, owner, times or \
     extended attributes is refused; the run's temporary files are bounded per file, not in \
     total; network grants and host sockets are refused; and a process that leaves the \
     session can outlive a run that has no cgroup";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Layer as HostLayer;

    #[test]
    fn the_built_in_policy_is_the_default_file() {
        let text = include_str!("../../policies/default.toml");
        let from_file = SandboxPolicy::from_toml(text, DEFAULT_FILE).expect("valid");
        assert_eq!(from_file, SandboxPolicy::default());
        assert!(from_file.requires(Layer::Landlock) && from_file.requires(Layer::Seccomp));
        assert!(!from_file.requires(Layer::Namespaces));
    }

    #[test]
    fn tables_and_errors() {
        let p = SandboxPolicy::from_toml("[sandbox]\nrequire = [\"namespaces\"]\n", "p.toml")
            .expect("valid");
        assert_eq!(p.require, [Layer::Namespaces].into());
        assert_eq!(
            p.max,
            SandboxPolicy::default().max,
            "unset keys keep the defaults"
        );
        let none = SandboxPolicy::from_toml("[health]\nwindow_runs = 3\n", "p.toml").expect("ok");
        assert_eq!(none.require, SandboxPolicy::default().require);
        for (bad, expected) in [
            ("[sandbox]\nrequire = [\"magic\"]", "unknown variant"),
            ("[sandbox]\nnetwork = true", "unknown field"),
            ("[sandbox]\ncpus = 0", "sandbox.cpus: must be at least 1"),
            ("[sandbox.max]\npids = 0", "sandbox.max.pids"),
            ("[sandbox.max]\nwalls = 3", "unknown field"),
            ("[sandbox", "invalid [sandbox]"),
        ] {
            let err = SandboxPolicy::from_toml(bad, "p.toml")
                .expect_err(bad)
                .to_string();
            assert!(err.contains(expected), "{bad}: {err}");
            assert!(err.starts_with("p.toml"), "{err}");
        }
    }

    #[test]
    fn limits_are_bounded_by_the_maxima() {
        let policy = SandboxPolicy::default();
        let asked = Limits {
            wall_s: 100_000,
            memory_mb: 0,
            ..Limits::default()
        };
        let (limits, notes) = policy.clamp(asked);
        assert_eq!(limits.wall_s, 600);
        assert_eq!(limits.memory_mb, 1);
        assert_eq!(
            limits.pids,
            Limits::default().pids,
            "within bounds: unchanged"
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("wall_s = 100000 lowered to 600"),
            "{notes:?}"
        );
        assert!(notes[1].contains("memory_mb = 0 raised to 1"), "{notes:?}");
        let (same, none) = policy.clamp(Limits::default());
        assert_eq!(same, Limits::default());
        assert!(none.is_empty());
        assert_eq!(
            policy.above_max(&asked),
            ["sandbox.limits.wall_s = 100000 (maximum 600)"],
            "only what is above a maximum"
        );
        assert!(policy.above_max(&Limits::default()).is_empty());
    }

    fn host(all: bool) -> HostReport {
        let ok = |available: bool| HostLayer {
            available,
            detail: if available {
                "works"
            } else {
                "blocked by AppArmor"
            }
            .into(),
        };
        HostReport {
            kernel: "6.18".into(),
            running_as_root: false,
            landlock: ok(true),
            landlock_abi: Some(6),
            user_namespace: ok(all),
            mount_namespace: ok(all),
            pid_namespace: ok(all),
            net_namespace: ok(all),
            ipc_namespace: ok(all),
            uts_namespace: ok(all),
            seccomp: ok(true),
            no_new_privs: ok(true),
            cgroup_v2: ok(false),
            cgroup_controllers: Vec::new(),
            git: ok(true),
            sqlite: ok(true),
        }
    }

    #[test]
    fn plans_on_hosts() {
        let policy = SandboxPolicy::default();
        let full = policy.plan(&host(true));
        assert_eq!(
            full.layers,
            [
                Layer::Namespaces,
                Layer::Rlimits,
                Layer::Landlock,
                Layer::Seccomp
            ]
        );
        assert_eq!(
            full.summary,
            "runs tools with namespaces, rlimits, landlock (ABI 6), seccomp (without cgroup)"
        );
        let reduced = policy.plan(&host(false));
        assert!(reduced.refused.is_none());
        assert!(
            reduced.summary.contains("no private filesystem view"),
            "{}",
            reduced.summary
        );
        // What the fallback lacks, and what it refuses instead.
        assert!(
            reduced
                .summary
                .contains("changing a file's mode, owner, times")
                && reduced
                    .summary
                    .contains("network grants and host sockets are refused"),
            "{}",
            reduced.summary
        );
        let strict = SandboxPolicy {
            require: [Layer::Namespaces, Layer::Landlock].into(),
            ..SandboxPolicy::default()
        };
        let refused = strict.plan(&host(false));
        let why = refused.refused.expect("refused");
        assert!(
            why.contains("requires namespaces") && why.contains("AppArmor"),
            "{why}"
        );
        assert!(
            why.contains("remove \"namespaces\" from `require`"),
            "{why}"
        );
        let mut no_landlock = host(true);
        no_landlock.landlock = HostLayer {
            available: false,
            detail: "kernel without Landlock".into(),
        };
        let refused = policy.plan(&no_landlock).refused.expect("refused");
        assert!(refused.contains("requires landlock"), "{refused}");
    }
}
