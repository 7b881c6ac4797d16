//! Semantic versions from the interface diff: what a caller of the tool has to change decides
//! how the version moves.
//!
//! - **major**: a parameter removed, a parameter newly required (an existing optional one, or a
//!   new one), a parameter's type changed, or the output changed (its kind or its schema);
//! - **minor**: optional parameters added, nothing else of the above;
//! - **patch**: the interface unchanged (the implementation, tests or docs changed).
//!
//! What the tool may reach moves the version too ([`widening`]): a toolchain it did not have
//! bound before (or one bound at more paths, or of another kind), a network host or a host
//! socket granted, is **major**, so a reviewer and the auto-approval rules see the wider reach
//! as the largest change.

use serde_json::Value;

use crate::package::manifest::Interface;
use crate::sandbox::SandboxProfile;

/// How far a version moves.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Bump {
    /// The interface is unchanged.
    Patch,
    /// Optional parameters were added.
    Minor,
    /// Callers may break.
    Major,
}

impl Bump {
    /// The name written in commit messages and shown: `patch`, `minor`, `major`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bump::Patch => "patch",
            Bump::Minor => "minor",
            Bump::Major => "major",
        }
    }

    /// Parses [`Bump::as_str`]'s names.
    pub fn from_name(name: &str) -> Option<Bump> {
        [Bump::Patch, Bump::Minor, Bump::Major]
            .into_iter()
            .find(|b| b.as_str() == name)
    }

    /// `version` moved by this bump.
    pub fn apply(self, version: &semver::Version) -> semver::Version {
        match self {
            Bump::Patch => semver::Version::new(version.major, version.minor, version.patch + 1),
            Bump::Minor => semver::Version::new(version.major, version.minor + 1, 0),
            Bump::Major => semver::Version::new(version.major + 1, 0, 0),
        }
    }
}

/// The bump from `old` to `new`, with the reasons, for the commit message.
pub fn bump(old: &Interface, new: &Interface) -> (Bump, Vec<String>) {
    let mut reasons = Vec::new();
    let mut level = Bump::Patch;
    let mut raise = |to: Bump, why: String, level: &mut Bump| {
        *level = (*level).max(to);
        reasons.push(why);
    };
    let (old_props, old_required) = shape(&old.params);
    let (new_props, new_required) = shape(&new.params);
    for (name, schema) in &old_props {
        match new_props.iter().find(|(n, _)| n == name) {
            None => raise(
                Bump::Major,
                format!("parameter `{name}` removed"),
                &mut level,
            ),
            Some((_, new_schema)) if type_of(schema) != type_of(new_schema) => raise(
                Bump::Major,
                format!("parameter `{name}` changed type"),
                &mut level,
            ),
            Some(_) => {}
        }
    }
    for name in &new_required {
        if !old_required.contains(name) {
            let existed = old_props.iter().any(|(n, _)| n == name);
            let why = if existed {
                format!("parameter `{name}` became required")
            } else {
                format!("required parameter `{name}` added")
            };
            raise(Bump::Major, why, &mut level);
        }
    }
    for (name, _) in &new_props {
        if !old_props.iter().any(|(n, _)| n == name) && !new_required.contains(name) {
            raise(
                Bump::Minor,
                format!("optional parameter `{name}` added"),
                &mut level,
            );
        }
    }
    if old.output != new.output || old.output_schema != new.output_schema {
        raise(Bump::Major, "the output changed".to_owned(), &mut level);
    }
    (level, reasons)
}

/// What `new` may reach that `old` could not, one reason a line: toolchains added, or bound at
/// paths they were not, or of another kind; network hosts and host sockets granted. Each is a
/// major change, whatever the interface did: widening a tool's reach is a new decision.
pub fn widening(old: &SandboxProfile, new: &SandboxProfile) -> Vec<String> {
    let mut reasons = Vec::new();
    for t in &new.toolchains {
        let before: Vec<_> = old
            .toolchains
            .iter()
            .filter(|o| o.kind == t.kind)
            .flat_map(|o| &o.paths)
            .collect();
        let added: Vec<String> = t
            .paths
            .iter()
            .filter(|p| !before.contains(p))
            .map(|p| p.display().to_string())
            .collect();
        if !added.is_empty() {
            reasons.push(format!(
                "the {} toolchain of `{}` is bound at {} (the sandbox reaches further)",
                t.kind,
                t.program,
                added.join(", ")
            ));
        }
    }
    for host in new.hosts.iter().filter(|h| !old.hosts.contains(h)) {
        reasons.push(format!("network host {host} granted"));
    }
    for socket in new
        .host_sockets
        .iter()
        .filter(|s| !old.host_sockets.contains(s))
    {
        reasons.push(format!("host socket {} granted", socket.display()));
    }
    reasons
}

/// [`bump`] of the interfaces, raised to major when the sandbox profile widens.
pub fn bump_manifest(
    old: &crate::package::manifest::Manifest,
    new: &crate::package::manifest::Manifest,
) -> (Bump, Vec<String>) {
    let (mut level, mut reasons) = bump(&old.interface, &new.interface);
    let wider = widening(&old.sandbox, &new.sandbox);
    if !wider.is_empty() {
        level = Bump::Major;
        reasons.extend(wider);
    }
    (level, reasons)
}

/// The properties (name, schema) and required names of a parameter schema.
fn shape(params: &Value) -> (Vec<(String, Value)>, Vec<String>) {
    let props = params
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let required = params
        .get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    (props, required)
}

fn type_of(schema: &Value) -> Option<&Value> {
    schema.get("type")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toolchain_added_or_moved_is_major() {
        use crate::sandbox::{Toolchain, ToolchainKind};
        let cargo = |path: &str| Toolchain {
            program: "cargo".into(),
            kind: ToolchainKind::Rustup,
            paths: vec![path.into()],
            env: Default::default(),
        };
        let none = SandboxProfile::default();
        let mut stable = none.clone();
        stable
            .toolchains
            .push(cargo("/h/.rustup/toolchains/stable"));
        let reasons = widening(&none, &stable);
        assert_eq!(reasons.len(), 1);
        assert!(
            reasons[0].contains("/h/.rustup/toolchains/stable"),
            "{reasons:?}"
        );
        assert!(widening(&stable, &stable).is_empty());
        assert!(
            widening(&stable, &none).is_empty(),
            "narrowing is no widening"
        );
        let mut nightly = none.clone();
        nightly
            .toolchains
            .push(cargo("/h/.rustup/toolchains/nightly"));
        assert_eq!(widening(&stable, &nightly).len(), 1);
    }
    use crate::package::manifest::OutputKind;
    use serde_json::json;

    fn interface(params: Value) -> Interface {
        Interface {
            params,
            output: OutputKind::Text,
            output_schema: None,
        }
    }

    #[test]
    fn the_interface_diff_decides_the_bump() {
        let base = interface(json!({"type": "object",
            "properties": {"package": {"type": "string"}, "verbose": {"type": "boolean"}},
            "required": ["package"]}));
        let cases: &[(Value, Bump, &str)] = &[
            (base.params.clone(), Bump::Patch, ""),
            (
                json!({"type": "object", "properties": {"package": {"type": "string"},
                    "verbose": {"type": "boolean"}, "jobs": {"type": "integer"}},
                    "required": ["package"]}),
                Bump::Minor,
                "optional parameter `jobs` added",
            ),
            (
                json!({"type": "object", "properties": {"package": {"type": "string"}},
                    "required": ["package"]}),
                Bump::Major,
                "parameter `verbose` removed",
            ),
            (
                json!({"type": "object", "properties": {"package": {"type": "string"},
                    "verbose": {"type": "boolean"}}, "required": ["package", "verbose"]}),
                Bump::Major,
                "parameter `verbose` became required",
            ),
            (
                json!({"type": "object", "properties": {"package": {"type": "string"},
                    "verbose": {"type": "boolean"}, "dir": {"type": "string"}},
                    "required": ["package", "dir"]}),
                Bump::Major,
                "required parameter `dir` added",
            ),
            (
                json!({"type": "object", "properties": {"package": {"type": "integer"},
                    "verbose": {"type": "boolean"}}, "required": ["package"]}),
                Bump::Major,
                "parameter `package` changed type",
            ),
        ];
        for (params, want, why) in cases {
            let (got, reasons) = bump(&base, &interface(params.clone()));
            assert_eq!(got, *want, "{params}");
            if !why.is_empty() {
                assert!(reasons.iter().any(|r| r == why), "{reasons:?}");
            }
        }
        let mut json_out = base.clone();
        json_out.output = OutputKind::Json;
        assert_eq!(bump(&base, &json_out).0, Bump::Major);
        let v = semver::Version::new(1, 2, 3);
        assert_eq!(Bump::Patch.apply(&v).to_string(), "1.2.4");
        assert_eq!(Bump::Minor.apply(&v).to_string(), "1.3.0");
        assert_eq!(Bump::Major.apply(&v).to_string(), "2.0.0");
        for b in [Bump::Patch, Bump::Minor, Bump::Major] {
            assert_eq!(Bump::from_name(b.as_str()), Some(b));
        }
    }

    #[test]
    fn widening_what_a_tool_reaches_is_named() {
        let old = SandboxProfile {
            hosts: vec!["pypi.org:443".into()],
            ..SandboxProfile::default()
        };
        assert!(widening(&old, &old).is_empty());
        assert!(
            widening(&old, &SandboxProfile::default()).is_empty(),
            "narrowed"
        );
        let wider = SandboxProfile {
            hosts: vec!["pypi.org:443".into(), "files.pythonhosted.org:443".into()],
            host_sockets: vec!["/run/docker.sock".into()],
            ..SandboxProfile::default()
        };
        assert_eq!(
            widening(&old, &wider),
            [
                "network host files.pythonhosted.org:443 granted",
                "host socket /run/docker.sock granted"
            ]
        );
    }
}
