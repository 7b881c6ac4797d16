//! The digest of a tool version: what `validation.digest` records, so that a reviewer (and later
//! the registry) can tell the files and the profile validated from files or a profile changed
//! since.
//!
//! Two forms, told apart by their prefix:
//!
//! - `sha256v2:<hex>` (written by validation since the approval binding): the manifest's
//!   profile — `interface`, `runtime` and `sandbox`, as canonical JSON — then every file but
//!   the manifest and `README.md`. A manifest widened after validation (a writable workspace,
//!   larger limits, another entry point) no longer matches.
//! - `sha256:<hex>` (older registries): the files only. Still read, but it never stands alone:
//!   the registry runs a version only when `main` holds exactly the tree its annotated tag
//!   approved (see `repo`), which covers the manifest too.
//!
//! Neither form is a secret: anyone who can edit a tool can recompute it. The digest tells
//! validated files from changed ones; the approval binding (the tag's tree) is what tells
//! reviewed from unreviewed.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::package::manifest::{FILE_NAME, Manifest};

/// The tool's documentation, outside the digest.
pub const README: &str = "README.md";

/// The prefix of the files-only form (older registries).
pub const V1: &str = "sha256:";

/// The prefix of the form that covers the profile too (what validation writes).
pub const V2: &str = "sha256v2:";

/// Which form a recorded digest is in, when it is one of them: `(prefix, hex)`.
pub fn form(recorded: &str) -> Option<(&'static str, &str)> {
    // V2 first: it is not a prefix of V1, nor V1 of it, but be explicit about the order.
    for prefix in [V2, V1] {
        if let Some(hex) = recorded.strip_prefix(prefix)
            && hex.len() == 64
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Some((prefix, hex));
        }
    }
    None
}

/// Hashes the files other than the manifest and `README.md` (documentation, rewritten by a
/// deprecation without touching what was validated), in name order, each as its name, its
/// length and its bytes, so that no two different sets of files hash alike by moving bytes
/// from one file to the next.
fn hash_files(hash: &mut Sha256, files: &BTreeMap<String, String>) {
    for (name, content) in files
        .iter()
        .filter(|(n, _)| n.as_str() != FILE_NAME && n.as_str() != README)
    {
        hash.update(name.as_bytes());
        hash.update([0u8]);
        hash.update((content.len() as u64).to_le_bytes());
        hash.update(content.as_bytes());
    }
}

fn hex(hash: Sha256) -> String {
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `sha256:<hex>` of a tool's files other than its manifest and its `README.md`: the older,
/// files-only form.
///
/// ```
/// use std::collections::BTreeMap;
/// use toolsmith::package::digest::digest;
/// let mut files = BTreeMap::new();
/// files.insert("run.sh".to_owned(), "echo hi\n".to_owned());
/// let d = digest(&files);
/// assert!(d.starts_with("sha256:") && d.len() == 71);
/// files.insert("tool.yaml".to_owned(), "name: x\n".to_owned());
/// assert_eq!(digest(&files), d, "the manifest is not part of it");
/// ```
pub fn digest(files: &BTreeMap<String, String>) -> String {
    let mut hash = Sha256::new();
    hash_files(&mut hash, files);
    format!("{V1}{}", hex(hash))
}

/// The profile of a manifest as the digest covers it: `interface`, `runtime` and `sandbox`, as
/// canonical JSON (keys sorted at every level, no spaces). What a deprecation or a proposal
/// rewrites (version, deprecation, provenance, the validation record) is outside it.
pub fn profile(manifest: &Manifest) -> String {
    let value = serde_json::json!({
        "interface": manifest.interface,
        "runtime": manifest.runtime,
        "sandbox": manifest.sandbox,
    });
    let mut out = String::new();
    canonical(&value, &mut out);
    out
}

/// JSON with object keys in byte order at every level, whatever order the map kept them in.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `sha256v2:<hex>` of a tool version: its manifest's [`profile`], then its files as
/// [`digest`] hashes them. What validation records.
///
/// ```
/// use std::collections::BTreeMap;
/// use toolsmith::package::digest::{digest_v2, V2};
/// use toolsmith::package::manifest::Manifest;
/// use toolsmith::sandbox::WorkspaceAccess;
/// let yaml = "apiVersion: toolsmith/v1\nname: say-hi\nversion: 1.0.0\n\
///             description: Say hi.\ninterface: {params: {type: object}, output: text}\n\
///             runtime: {language: sh, entrypoint: run.sh}\n\
///             provenance: {origin: request, generator: human, created: 2026-11-20T10:00:00Z}\n";
/// let mut m = Manifest::parse(yaml, "tool.yaml").unwrap();
/// let mut files = BTreeMap::new();
/// files.insert("run.sh".to_owned(), "echo hi\n".to_owned());
/// let d = digest_v2(&files, &m);
/// assert!(d.starts_with(V2));
/// m.version = semver::Version::new(1, 0, 1);
/// assert_eq!(digest_v2(&files, &m), d, "the version is not part of it");
/// m.sandbox.workspace = WorkspaceAccess::Write;
/// assert_ne!(digest_v2(&files, &m), d, "the profile is");
/// ```
pub fn digest_v2(files: &BTreeMap<String, String>, manifest: &Manifest) -> String {
    let mut hash = Sha256::new();
    hash.update(b"toolsmith tool digest v2\0");
    let profile = profile(manifest);
    hash.update((profile.len() as u64).to_le_bytes());
    hash.update(profile.as_bytes());
    hash_files(&mut hash, files);
    format!("{V2}{}", hex(hash))
}

/// The digest of `files` in the form of `recorded` (so the two can be compared), or `None`
/// when `recorded` is in no known form.
pub fn recompute(
    recorded: &str,
    files: &BTreeMap<String, String>,
    manifest: &Manifest,
) -> Option<String> {
    match form(recorded)?.0 {
        V2 => Some(digest_v2(files, manifest)),
        _ => Some(digest(files)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::manifest::tests_support::manifest;
    use crate::package::manifest::{Language, OutputKind};
    use crate::sandbox::WorkspaceAccess;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(n, c)| ((*n).to_owned(), (*c).to_owned()))
            .collect()
    }

    #[test]
    fn contents_and_names_both_count() {
        let a = digest(&files(&[("a", "xy"), ("b", "z")]));
        assert_ne!(a, digest(&files(&[("a", "x"), ("b", "yz")])));
        assert_ne!(a, digest(&files(&[("a", "xy"), ("c", "z")])));
        assert_eq!(a, digest(&files(&[("b", "z"), ("a", "xy")])));
    }

    #[test]
    fn the_second_form_covers_every_part_of_the_profile() {
        let base = manifest();
        let f = files(&[("run.sh", "echo hi\n"), ("README.md", "docs")]);
        let d = digest_v2(&f, &base);
        assert_eq!(form(&d).map(|(p, _)| p), Some(V2));
        assert_ne!(d, digest(&f), "the forms differ");
        // What a proposal or a deprecation rewrites is outside it.
        let mut same = base.clone();
        same.version = semver::Version::new(2, 0, 0);
        same.description = "Another description.".into();
        same.provenance.generator = "human".into();
        assert_eq!(digest_v2(&f, &same), d);
        let mut readme = f.clone();
        readme.insert("README.md".into(), "other docs".into());
        assert_eq!(digest_v2(&readme, &base), d);
        // Every part of the profile is inside it.
        type Change = Box<dyn Fn(&mut Manifest)>;
        let changes: Vec<Change> = vec![
            Box::new(|m| m.sandbox.workspace = WorkspaceAccess::Write),
            Box::new(|m| m.sandbox.limits.memory_mb += 1),
            Box::new(|m| m.sandbox.limits.wall_s += 1),
            Box::new(|m| m.runtime.entrypoint = "other.sh".into()),
            Box::new(|m| m.runtime.requires.push("curl".into())),
            Box::new(|m| m.runtime.language = Language::Python),
            Box::new(|m| {
                m.interface.params["properties"]["package"]["description"] = "x".into();
            }),
            Box::new(|m| m.interface.output = OutputKind::Json),
            Box::new(|m| m.sandbox.hosts.push("pypi.org:443".into())),
            Box::new(|m| m.sandbox.host_sockets.push("/run/docker.sock".into())),
            Box::new(|m| {
                m.sandbox.toolchains.push(crate::sandbox::Toolchain {
                    program: "cargo".into(),
                    kind: crate::sandbox::ToolchainKind::Rustup,
                    paths: vec!["/home/a/.rustup/toolchains/stable".into()],
                    env: Default::default(),
                });
            }),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut m = base.clone();
            change(&mut m);
            assert_ne!(digest_v2(&f, &m), d, "change {i} is not covered");
        }
        let mut code = f.clone();
        code.insert("run.sh".into(), "echo pwned\n".into());
        assert_ne!(digest_v2(&code, &base), d);
    }

    /// A tool made before toolchains existed keeps its digest: an empty list is not written,
    /// so neither its YAML nor its profile changes.
    #[test]
    fn a_profile_without_toolchains_is_what_it_was() {
        let m = manifest();
        let profile = profile(&m);
        assert!(!profile.contains("toolchains"), "{profile}");
        assert!(!m.to_yaml().contains("toolchains"));
        assert!(
            profile.contains(r#""sandbox":{"limits":{"#)
                && profile.contains(r#""network":false,"workspace":"read"}"#),
            "{profile}"
        );
    }

    #[test]
    fn a_manifest_without_grants_keeps_the_profile_it_always_had() {
        // The profile as a build before `sandbox.hosts` and `sandbox.host_sockets` wrote it:
        // empty grants are left out, so an approved tool's digest still verifies.
        let m = manifest();
        let sandbox = serde_json::to_value(&m.sandbox).expect("json");
        let keys: Vec<&String> = sandbox.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["limits", "network", "workspace"]);
        let canonical = profile(&m);
        let sandbox = &canonical[canonical.find(r#""sandbox":"#).expect("sandbox")..];
        assert!(
            sandbox.starts_with(r#""sandbox":{"limits":{"#)
                && sandbox.ends_with(r#""network":false,"workspace":"read"}}"#),
            "{sandbox}"
        );
        assert!(!m.to_yaml().contains("hosts"));
        let mut granted = m.clone();
        granted.sandbox.hosts.push("pypi.org:443".into());
        assert!(profile(&granted).contains(r#""hosts":["pypi.org:443"]"#));
    }

    #[test]
    fn the_profile_is_canonical_whatever_the_key_order() {
        let mut a = manifest();
        let mut b = manifest();
        a.interface.params = serde_json::from_str(
            r#"{"type":"object","properties":{"x":{"type":"string","description":"d"}}}"#,
        )
        .expect("json");
        b.interface.params = serde_json::from_str(
            r#"{"properties":{"x":{"description":"d","type":"string"}},"type":"object"}"#,
        )
        .expect("json");
        assert_eq!(profile(&a), profile(&b));
        // A manifest read back from its own YAML has the same profile.
        let again = Manifest::parse(&a.to_yaml(), "t").expect("round trip");
        assert_eq!(profile(&again), profile(&a));
    }

    #[test]
    fn recorded_forms_are_recognised_strictly() {
        let hex = "a".repeat(64);
        assert_eq!(form(&format!("sha256:{hex}")).map(|f| f.0), Some(V1));
        assert_eq!(form(&format!("sha256v2:{hex}")).map(|f| f.0), Some(V2));
        for bad in [
            format!("sha512:{hex}"),
            format!("sha256v2:{}", "a".repeat(63)),
            format!("sha256:{}", "g".repeat(64)),
            String::new(),
        ] {
            assert!(form(&bad).is_none(), "{bad}");
        }
    }
}
