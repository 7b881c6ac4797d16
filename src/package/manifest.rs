//! The tool manifest, `tools/<name>/tool.yaml`: what a tool is, how it is called, how it runs,
//! where it came from and how it was validated.
//!
//! Manifests are written by toolsmith but may be edited by hand, merged from a teammate's
//! registry or produced from a model's output, so reading one is reading untrusted input: every
//! field is checked, unknown keys are errors, and each error names the file, the place in it, the
//! key and what to do.
//!
//! ```yaml
//! apiVersion: toolsmith/v1
//! name: cargo-failing-tests
//! version: 1.0.0
//! description: Run the tests of one package and print only the failures.
//! interface:
//!   params:
//!     type: object
//!     properties:
//!       package: { type: string, description: crate name }
//!     required: [package]
//!   output: text
//! runtime: { language: sh, entrypoint: run.sh, requires: [cargo] }
//! sandbox:
//!   workspace: read
//!   network: false
//!   limits: { wall_s: 120, cpu_s: 120, memory_mb: 1024, pids: 256, output_kb: 1024 }
//! provenance:
//!   origin: mined-sequence
//!   pattern: p-3f2a9c
//!   support: 7
//!   generator: template/sh@1
//!   created: 2026-11-20T10:00:00Z
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sandbox::{Need, SandboxProfile};

/// The only `apiVersion` this build reads and writes.
pub const API_VERSION: &str = "toolsmith/v1";

/// The manifest's file name inside a tool's directory.
pub const FILE_NAME: &str = "tool.yaml";

/// Largest manifest read, in bytes: a manifest is a few KiB; more is not one.
pub const MAX_BYTES: usize = 256 * 1024;

/// A manifest that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The YAML is malformed or does not have the manifest's shape (the message carries the
    /// location and a snippet).
    #[error("{file}: not a valid tool manifest: {message}")]
    Syntax {
        /// The manifest file (or where the text came from).
        file: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A field has a value the manifest does not allow.
    #[error("{file}: `{key}`: {problem}")]
    Invalid {
        /// The manifest file.
        file: String,
        /// The dotted key, e.g. `interface.params.properties.package.type`.
        key: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// The file could not be read.
    #[error("cannot read the manifest {file}: {source}")]
    Io {
        /// The manifest file.
        file: String,
        /// The error.
        source: std::io::Error,
    },
}

/// A tool's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// The tool's name: 2–64 lowercase letters, digits and single hyphens.
    pub name: String,
    /// Semantic version of this tool version.
    pub version: semver::Version,
    /// One or two sentences: what the tool does.
    pub description: String,
    /// How the tool is called.
    pub interface: Interface,
    /// What runs.
    pub runtime: Runtime,
    /// The sandbox profile it needs.
    #[serde(default)]
    pub sandbox: SandboxProfile,
    /// Where the tool came from.
    pub provenance: Provenance,
    /// How the version was validated (written by validation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Validation>,
    /// Set when the tool is deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<Deprecation>,
    /// What the tool needs that the policy asks a person to grant (`program:curl`,
    /// `host:HOST:PORT`, `socket:/PATH`, `credential:~/PATH`), written by validation; outside
    /// the digest, like `validation`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<Need>,
    /// What a person granted at approval (`toolsmith approve --grant`): exactly `needs`,
    /// recorded in the approval commit's `Granted:` trailers. Runs get these and nothing more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub granted: Vec<Need>,
}

/// How a tool is called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interface {
    /// JSON Schema of the input: an object schema whose properties are the parameters.
    pub params: Value,
    /// What the tool prints.
    pub output: OutputKind,
    /// For `json` output, an optional JSON Schema of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// What a tool prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// Text for a person or an agent to read.
    Text,
    /// One JSON document.
    Json,
}

/// The implementation's language and entry point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    /// The language.
    pub language: Language,
    /// The file run, in the tool's directory.
    pub entrypoint: String,
    /// Host programs the tool calls (checked before it runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
}

/// Languages tools are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// POSIX sh.
    Sh,
    /// bash: a shell tool that needs what POSIX sh lacks (`**` matching any depth of
    /// directories, for a pattern typed in zsh or fish).
    Bash,
    /// Python 3.
    Python,
}

impl Language {
    /// The interpreter that runs an entry point of this language.
    pub fn interpreter(self) -> &'static str {
        match self {
            Language::Sh => "/bin/sh",
            Language::Bash => "bash",
            Language::Python => "python3",
        }
    }
}

/// Why a tool was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A repeated command sequence.
    MinedSequence,
    /// A recurring error and its fix.
    ErrorRecovery,
    /// A slow operation that recurs.
    SlowOperation,
    /// A person asked for it.
    Request,
    /// A repair of an existing tool.
    Heal,
}

impl Origin {
    /// The name written in manifests and commit trailers.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::MinedSequence => "mined-sequence",
            Origin::ErrorRecovery => "error-recovery",
            Origin::SlowOperation => "slow-operation",
            Origin::Request => "request",
            Origin::Heal => "heal",
        }
    }
}

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Why it was made.
    pub origin: Origin,
    /// The mined pattern's id, for mined tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// In how many sessions the pattern was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<u32>,
    /// Where the pattern was seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// What wrote it: `template/sh@1`, `llm:<model>`, `human`.
    pub generator: String,
    /// When it was made.
    pub created: jiff::Timestamp,
}

/// One occurrence of a pattern: a session and the range of actions in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The session.
    pub session: String,
    /// First action's seq.
    pub first_seq: u64,
    /// Last action's seq.
    pub last_seq: u64,
}

/// How a tool version was validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// The checks that passed, by name (`manifest`, `sh -n`, `shellcheck`, `policy`, …).
    #[serde(default)]
    pub checks: Vec<String>,
    /// Test results.
    pub tests: TestCounts,
    /// Total runtime of the tests in the sandbox, ms.
    pub runtime_ms: u64,
    /// Peak memory of a test run, KiB, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_kb: Option<u64>,
    /// `sha256v2:<hex>` of the manifest's profile and the tool's files other than this manifest
    /// and the README (`sha256:<hex>`, files only, in older registries); see `package::digest`.
    pub digest: String,
}

/// Passed and failed test counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCounts {
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed.
    pub failed: u32,
}

/// A deprecation notice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deprecation {
    /// The version that deprecated the tool.
    pub since: semver::Version,
    /// The tool to use instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
    /// Why.
    pub reason: String,
}

/// Whether `name` is a valid tool name: 2–64 characters of lowercase letters, digits and
/// hyphens, starting with a letter, without a trailing or doubled hyphen. Such a name is safe as
/// a file name, a git ref component and an Agent Skills name.
///
/// ```
/// use toolsmith::package::manifest::valid_name;
/// assert!(valid_name("cargo-failing-tests"));
/// assert!(!valid_name("Cargo"));
/// assert!(!valid_name("../etc"));
/// assert!(!valid_name("a--b"));
/// ```
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (2..=64).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The kinds of value a parameter may have.
const PARAM_TYPES: [&str; 5] = ["string", "integer", "number", "boolean", "array"];

impl Manifest {
    /// Reads and checks `dir/tool.yaml`.
    pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(FILE_NAME);
        let file = path.display().to_string();
        let meta = std::fs::symlink_metadata(&path).map_err(|source| ManifestError::Io {
            file: file.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(ManifestError::Invalid {
                file,
                key: FILE_NAME.into(),
                problem: "is not a regular file (a symlink or directory is never followed)".into(),
            });
        }
        if meta.len() > MAX_BYTES as u64 {
            return Err(ManifestError::Invalid {
                file,
                key: FILE_NAME.into(),
                problem: format!("is {} bytes; a manifest is at most {MAX_BYTES}", meta.len()),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|source| ManifestError::Io {
            file: file.clone(),
            source,
        })?;
        Manifest::parse(&text, &file)
    }

    /// Parses and checks a manifest's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Manifest, ManifestError> {
        if text.len() > MAX_BYTES {
            return Err(ManifestError::Invalid {
                file: file.into(),
                key: FILE_NAME.into(),
                problem: format!("is {} bytes; a manifest is at most {MAX_BYTES}", text.len()),
            });
        }
        let manifest: Manifest =
            serde_saphyr::from_str(text).map_err(|e| ManifestError::Syntax {
                file: file.into(),
                message: e.to_string(),
            })?;
        manifest.check(file)?;
        Ok(manifest)
    }

    /// The manifest as YAML, in a stable layout.
    pub fn to_yaml(&self) -> String {
        // Serializing plain data with string keys cannot fail; if it ever did, the JSON form
        // (which is valid YAML) still says everything.
        serde_saphyr::to_string(self)
            .unwrap_or_else(|_| serde_json::to_string_pretty(self).unwrap_or_default())
    }

    /// The parameters: name → property schema, in name order.
    pub fn params(&self) -> BTreeMap<&str, &Value> {
        self.interface
            .params
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }

    /// The names of the required parameters.
    pub fn required_params(&self) -> Vec<&str> {
        self.interface
            .params
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Checks everything the types do not: names, versions, schema shape, paths, bounds.
    pub fn check(&self, file: &str) -> Result<(), ManifestError> {
        let invalid = |key: &str, problem: String| ManifestError::Invalid {
            file: file.into(),
            key: key.into(),
            problem,
        };
        if self.api_version != API_VERSION {
            return Err(invalid(
                "apiVersion",
                format!(
                    "`{}` is not supported; this toolsmith reads `{API_VERSION}`",
                    self.api_version
                ),
            ));
        }
        if !valid_name(&self.name) {
            return Err(invalid(
                "name",
                format!(
                    "`{}` is not a tool name: use 2–64 lowercase letters, digits and single \
                     hyphens, starting with a letter",
                    self.name.escape_debug()
                ),
            ));
        }
        let description = self.description.trim();
        if description.is_empty() || description.chars().count() > 1024 {
            return Err(invalid(
                "description",
                "must say in 1 to 1024 characters what the tool does".into(),
            ));
        }
        if description.contains(['<', '>']) {
            return Err(invalid(
                "description",
                "must not contain `<` or `>` (agents read it as markup)".into(),
            ));
        }
        self.check_params(file)?;
        if let Some(schema) = &self.interface.output_schema {
            if self.interface.output != OutputKind::Json {
                return Err(invalid(
                    "interface.output_schema",
                    "is only meaningful with `output: json`".into(),
                ));
            }
            if !schema.is_object() {
                return Err(invalid(
                    "interface.output_schema",
                    "must be a JSON Schema object".into(),
                ));
            }
        }
        let entry = &self.runtime.entrypoint;
        let plain_file = !entry.is_empty()
            && entry.len() <= 64
            && entry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            && !entry.starts_with('.')
            && entry != FILE_NAME;
        if !plain_file {
            return Err(invalid(
                "runtime.entrypoint",
                format!(
                    "`{}` must be a plain file name in the tool's directory (letters, digits, \
                     `.`, `_`, `-`; not hidden, not tool.yaml)",
                    entry.escape_debug()
                ),
            ));
        }
        for (i, program) in self.runtime.requires.iter().enumerate() {
            let ok = !program.is_empty()
                && program.len() <= 64
                && program
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
            if !ok {
                return Err(invalid(
                    &format!("runtime.requires[{i}]"),
                    format!(
                        "`{}` must be a program name looked up on PATH (no paths, no spaces)",
                        program.escape_debug()
                    ),
                ));
            }
        }
        if self.sandbox.network {
            return Err(invalid(
                "sandbox.network",
                "must be false: tools never get direct network access (the hosts a tool may \
                 reach through toolsmith's proxy are listed in sandbox.hosts)"
                    .into(),
            ));
        }
        for (i, toolchain) in self.sandbox.toolchains.iter().enumerate() {
            crate::sandbox::toolchain::check_entry(toolchain)
                .map_err(|problem| invalid(&format!("sandbox.toolchains[{i}]"), problem))?;
        }
        for (i, host) in self.sandbox.hosts.iter().enumerate() {
            if let Err(e) = crate::sandbox::HostPort::parse(host, false) {
                return Err(invalid(&format!("sandbox.hosts[{i}]"), e));
            }
        }
        for (i, socket) in self.sandbox.host_sockets.iter().enumerate() {
            let ok = socket.is_absolute()
                && socket.to_str().is_some_and(|s| {
                    s.len() <= 256 && !s.contains(['\n', '\0']) && !s.split('/').any(|c| c == "..")
                });
            if !ok {
                return Err(invalid(
                    &format!("sandbox.host_sockets[{i}]"),
                    format!(
                        "`{}` must be an absolute path without `..`",
                        socket.display()
                    ),
                ));
            }
        }
        for (key, value, max) in self.sandbox.limits.bounds() {
            if value == 0 || value > max {
                return Err(invalid(
                    &format!("sandbox.limits.{key}"),
                    format!("{value} is out of range: use 1 to {max}"),
                ));
            }
        }
        if let Some(pattern) = &self.provenance.pattern
            && (pattern.is_empty()
                || pattern.len() > 64
                || !pattern
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        {
            return Err(invalid(
                "provenance.pattern",
                "must be a pattern id (letters, digits, hyphens)".into(),
            ));
        }
        if self.provenance.generator.trim().is_empty() || self.provenance.generator.len() > 128 {
            return Err(invalid(
                "provenance.generator",
                "must name what wrote the tool, e.g. template/sh@1".into(),
            ));
        }
        if let Some(v) = &self.validation
            && crate::package::digest::form(&v.digest).is_none()
        {
            return Err(invalid(
                "validation.digest",
                "must be `sha256v2:` (or, from older registries, `sha256:`) and 64 hex digits"
                    .into(),
            ));
        }
        if let Some(d) = &self.deprecated
            && let Some(other) = &d.replaced_by
            && (!valid_name(other) || *other == self.name)
        {
            return Err(invalid(
                "deprecated.replaced_by",
                format!("`{}` is not another tool's name", other.escape_debug()),
            ));
        }
        Ok(())
    }

    fn check_params(&self, file: &str) -> Result<(), ManifestError> {
        let invalid = |key: String, problem: &str| ManifestError::Invalid {
            file: file.into(),
            key,
            problem: problem.into(),
        };
        let params = &self.interface.params;
        let Some(schema) = params.as_object() else {
            return Err(invalid(
                "interface.params".into(),
                "must be a JSON Schema object with `type: object`",
            ));
        };
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(invalid(
                "interface.params.type".into(),
                "must be `object`: parameters are named",
            ));
        }
        let properties = match schema.get("properties") {
            None => serde_json::Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => {
                return Err(invalid(
                    "interface.params.properties".into(),
                    "must map parameter names to schemas",
                ));
            }
        };
        for (name, prop) in &properties {
            let key = format!("interface.params.properties.{name}");
            let ok_name = !name.is_empty()
                && name.len() <= 64
                && name.as_bytes()[0].is_ascii_lowercase()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !ok_name {
                return Err(invalid(
                    key,
                    "parameter names are lowercase snake_case (they become environment \
                     variables)",
                ));
            }
            let kind = prop.get("type").and_then(Value::as_str);
            if !kind.is_some_and(|k| PARAM_TYPES.contains(&k)) {
                return Err(invalid(
                    format!("{key}.type"),
                    "must be one of string, integer, number, boolean, array",
                ));
            }
        }
        match schema.get("required") {
            None => {}
            Some(Value::Array(required)) => {
                for (i, name) in required.iter().enumerate() {
                    let Some(name) = name.as_str() else {
                        return Err(invalid(
                            format!("interface.params.required[{i}]"),
                            "must be a parameter name",
                        ));
                    };
                    if !properties.contains_key(name) {
                        return Err(invalid(
                            format!("interface.params.required[{i}]"),
                            "names a parameter that is not in `properties`",
                        ));
                    }
                }
            }
            Some(_) => {
                return Err(invalid(
                    "interface.params.required".into(),
                    "must be a list of parameter names",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    /// The design's example manifest, for tests elsewhere.
    pub(crate) fn manifest() -> super::Manifest {
        super::Manifest::parse(super::tests::GOOD, "tool.yaml").expect("the example parses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{Limits, ToolchainKind, WorkspaceAccess};

    pub(super) const GOOD: &str = r#"apiVersion: toolsmith/v1
name: cargo-failing-tests
version: 1.0.0
description: Run the tests of one package and print only the failures.
interface:
  params:
    type: object
    properties:
      package: { type: string, description: crate name }
    required: [package]
  output: text
runtime: { language: sh, entrypoint: run.sh, requires: [cargo] }
sandbox:
  workspace: read
  network: false
  limits: { wall_s: 120, cpu_s: 120, memory_mb: 1024, pids: 256, output_kb: 1024 }
provenance:
  origin: mined-sequence
  pattern: p-3f2a9c
  support: 7
  evidence:
    - { session: s1, first_seq: 3, last_seq: 5 }
  generator: template/sh@1
  created: 2026-11-20T10:00:00Z
"#;

    fn error(text: &str) -> String {
        match Manifest::parse(text, "tools/x/tool.yaml") {
            Ok(m) => panic!("accepted: {m:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_design_example_parses_and_round_trips() {
        let m = Manifest::parse(GOOD, "t").expect("valid");
        assert_eq!(m.name, "cargo-failing-tests");
        assert_eq!(m.version, semver::Version::new(1, 0, 0));
        assert_eq!(m.sandbox.workspace, WorkspaceAccess::Read);
        assert_eq!(m.sandbox.limits.wall_s, 120);
        // Limits not written take their defaults.
        assert_eq!(m.sandbox.limits.open_files, Limits::default().open_files);
        assert_eq!(m.params().keys().copied().collect::<Vec<_>>(), ["package"]);
        assert_eq!(m.required_params(), ["package"]);
        assert_eq!(m.provenance.origin, Origin::MinedSequence);
        let again = Manifest::parse(&m.to_yaml(), "t").expect("own output parses");
        assert_eq!(again, m);
    }

    #[test]
    fn toolchains_parse_round_trip_and_are_checked() {
        let with = GOOD.replacen(
            "  network: false\n",
            "  network: false\n  toolchains:\n    - program: cargo\n      kind: rustup\n      \
             paths: [/home/a/.rustup/toolchains/stable-x86_64-unknown-linux-gnu, \
             /home/a/.cargo/bin]\n      env: { CARGO_HOME: /work/.cargo }\n",
            1,
        );
        let m = Manifest::parse(&with, "t").expect("valid");
        let t = &m.sandbox.toolchains[0];
        assert_eq!(
            (t.program.as_str(), t.kind),
            ("cargo", ToolchainKind::Rustup)
        );
        assert_eq!(t.paths.len(), 2);
        assert_eq!(Manifest::parse(&m.to_yaml(), "t").expect("again"), m);
        for (from, to, expect) in [
            ("kind: rustup", "kind: conda", "kind"),
            (
                "/home/a/.cargo/bin]",
                "/home/a/../b]",
                "`sandbox.toolchains[0]`",
            ),
            ("/home/a/.cargo/bin]", "/etc]", "`sandbox.toolchains[0]`"),
            ("CARGO_HOME:", "LD_PRELOAD:", "LD_PRELOAD"),
        ] {
            let err = error(&with.replacen(from, to, 1));
            assert!(err.contains(expect), "{to}: {err}");
        }
    }

    #[test]
    fn each_bad_field_is_named_with_what_to_do() {
        let cases = [
            ("name: cargo-failing-tests", "name: ../../etc", "`name`"),
            ("name: cargo-failing-tests", "name: Cargo", "lowercase"),
            (
                "apiVersion: toolsmith/v1",
                "apiVersion: toolsmith/v2",
                "`apiVersion`",
            ),
            ("version: 1.0.0", "version: one", "version"),
            (
                "entrypoint: run.sh",
                "entrypoint: ../run.sh",
                "`runtime.entrypoint`",
            ),
            (
                "entrypoint: run.sh",
                "entrypoint: tool.yaml",
                "`runtime.entrypoint`",
            ),
            (
                "requires: [cargo]",
                "requires: [/usr/bin/cargo]",
                "`runtime.requires[0]`",
            ),
            ("network: false", "network: true", "`sandbox.network`"),
            (
                "network: false",
                "network: false\n  hosts: [pypi.org]",
                "`sandbox.hosts[0]`",
            ),
            (
                "network: false",
                "network: false\n  host_sockets: [run/docker.sock]",
                "`sandbox.host_sockets[0]`",
            ),
            ("wall_s: 120", "wall_s: 0", "`sandbox.limits.wall_s`"),
            (
                "memory_mb: 1024",
                "memory_mb: 999999",
                "`sandbox.limits.memory_mb`",
            ),
            ("type: string,", "type: object,", "properties.package.type"),
            (
                "required: [package]",
                "required: [pkg]",
                "`interface.params.required[0]`",
            ),
            ("output: text", "output: yaml", "output"),
            ("origin: mined-sequence", "origin: magic", "origin"),
            (
                "  pattern: p-3f2a9c",
                "  pattern: 'p 1; rm'",
                "`provenance.pattern`",
            ),
            (
                "description: Run the tests",
                "description: Run <script> the tests",
                "`description`",
            ),
        ];
        for (from, to, expect) in cases {
            assert!(GOOD.contains(from), "{from}");
            let text = GOOD.replacen(from, to, 1);
            let err = error(&text);
            assert!(err.contains(expect), "{to}: {err}");
            assert!(err.contains("tools/x/tool.yaml"), "{to}: {err}");
        }
    }

    #[test]
    fn unknown_keys_are_errors_with_a_location() {
        let err = error(&GOOD.replace("  output: text", "  output: text\n  outptu: json"));
        assert!(err.contains("outptu"), "{err}");
        let err = error(&format!("{GOOD}extra: 1\n"));
        assert!(err.contains("extra"), "{err}");
    }

    #[test]
    fn hostile_text_is_an_error_not_a_panic() {
        for text in [
            "",
            "null",
            "[1, 2]",
            "apiVersion: [",
            "{{{{",
            "a: &a [*a]",
            "\u{0}\u{1}",
            &"- ".repeat(10_000),
            &format!("{GOOD}{}", "#".repeat(MAX_BYTES)),
        ] {
            assert!(Manifest::parse(text, "t").is_err(), "{text:.40}");
        }
    }

    #[test]
    fn names() {
        for good in ["ab", "cargo-test", "a1", &"a".repeat(64)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "a",
            "-a",
            "a-",
            "a--b",
            "1a",
            "A",
            "a_b",
            "a.b",
            "a/b",
            &"a".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
