//! Agent Skills export: each active tool as `<dir>/<name>/SKILL.md`, for `~/.claude/skills`,
//! `.agents/skills` and the like.
//!
//! A skill's frontmatter follows the Agent Skills rules: `name` is the directory's name,
//! kebab-case, at most 64 characters; `description` at most 1024 characters, without angle
//! brackets. The body says when to use the tool and how to call it through `toolsmith run`.
//! Exported skills carry `metadata.generated-by: toolsmith`; re-exporting updates them and
//! removes those whose tool is gone, and never touches a skill toolsmith did not write.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::invoke;
use crate::package::manifest::{Manifest, valid_name};

/// The marker in an exported skill's frontmatter.
pub const MARKER: &str = "generated-by: toolsmith";

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExportReport {
    /// Skills written or rewritten.
    pub written: Vec<String>,
    /// Skills already up to date.
    pub unchanged: Vec<String>,
    /// Exported skills removed because their tool is gone.
    pub removed: Vec<String>,
    /// Directories left alone because toolsmith did not write them.
    pub skipped: Vec<String>,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot export skills to {path}: {source}")]
pub struct ExportError {
    /// Where.
    pub path: PathBuf,
    /// The error.
    pub source: std::io::Error,
}

/// A description fit for the rules: angle brackets replaced, cut to 1024 characters.
fn skill_description(m: &Manifest) -> String {
    let mut text = m
        .description
        .replace('<', "‹")
        .replace('>', "›")
        .replace('\n', " ");
    let hint = format!(" Run it with `toolsmith run {}`.", m.name);
    if text.chars().count() + hint.chars().count() <= 1024 {
        text.push_str(&hint);
    }
    text.chars().take(1024).collect()
}

/// A YAML double-quoted scalar.
fn yaml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The SKILL.md of a tool.
pub fn skill_md(m: &Manifest) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "---");
    let _ = writeln!(out, "name: {}", m.name);
    let _ = writeln!(out, "description: {}", yaml_string(&skill_description(m)));
    let _ = writeln!(out, "metadata:");
    let _ = writeln!(out, "  {MARKER}");
    let _ = writeln!(out, "  version: {}", yaml_string(&m.version.to_string()));
    let _ = writeln!(out, "---\n");
    let _ = writeln!(out, "# {}\n", m.name);
    let _ = writeln!(out, "{}\n", m.description);
    let _ = writeln!(out, "## When to use it\n");
    let why = match m.provenance.origin {
        crate::package::manifest::Origin::MinedSequence => {
            "Instead of typing the same sequence of commands by hand: this tool runs them in one \
             step, checked and in the sandbox."
        }
        crate::package::manifest::Origin::ErrorRecovery => {
            "When the command it wraps fails with the error it knows: it applies the usual fix and \
             retries."
        }
        crate::package::manifest::Origin::SlowOperation => {
            "Instead of running the slow command it wraps by hand."
        }
        _ => "Whenever its description matches what you are about to do by hand.",
    };
    let _ = writeln!(out, "{why}\n");
    let _ = writeln!(out, "## How to call it\n");
    let params = m.params();
    let required = m.required_params();
    let mut example = format!("toolsmith run {}", m.name);
    for name in &required {
        let _ = write!(example, " --param {name}=…");
    }
    let _ = writeln!(out, "```sh\n{example}\n```\n");
    if params.is_empty() {
        let _ = writeln!(out, "It takes no parameters.\n");
    } else {
        let _ = writeln!(out, "| parameter | type | required | description |");
        let _ = writeln!(out, "|---|---|---|---|");
        for (name, schema) in &params {
            let kind = schema
                .get("type")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("string");
            let description = schema
                .get("description")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .replace('|', "\\|");
            let _ = writeln!(
                out,
                "| `{name}` | {kind} | {} | {description} |",
                if required.contains(name) { "yes" } else { "no" }
            );
        }
        let _ = writeln!(
            out,
            "\nParameters may also be given as JSON: `toolsmith run {} --json '{{…}}'`. The tool \
             itself takes them as options (`{}`).\n",
            m.name,
            params
                .keys()
                .map(|n| invoke::option_name(n))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(
        out,
        "It runs in toolsmith's sandbox (workspace access: {}; no network; at most {} s).",
        m.sandbox.workspace, m.sandbox.limits.wall_s
    );
    out
}

/// Whether the SKILL.md at `path` was written by toolsmith.
fn ours(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| {
        let front = text.split("\n---").next().unwrap_or("");
        front.lines().any(|l| l.trim() == MARKER)
    })
}

/// Writes `tools` as skills under `dir`, and removes exported skills not among them.
pub fn export(dir: &Path, tools: &[Manifest]) -> Result<ExportReport, ExportError> {
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| ExportError { path, source }
    };
    std::fs::create_dir_all(dir).map_err(fail(dir))?;
    let mut report = ExportReport::default();
    for m in tools {
        if !valid_name(&m.name) {
            continue;
        }
        let skill_dir = dir.join(&m.name);
        let file = skill_dir.join("SKILL.md");
        if file.exists() && !ours(&file) {
            report.skipped.push(m.name.clone());
            continue;
        }
        let text = skill_md(m);
        if std::fs::read_to_string(&file).is_ok_and(|old| old == text) {
            report.unchanged.push(m.name.clone());
            continue;
        }
        std::fs::create_dir_all(&skill_dir).map_err(fail(&skill_dir))?;
        let tmp = skill_dir.join(".SKILL.md.tmp");
        std::fs::write(&tmp, &text).map_err(fail(&tmp))?;
        std::fs::rename(&tmp, &file).map_err(fail(&file))?;
        report.written.push(m.name.clone());
    }
    let entries = std::fs::read_dir(dir).map_err(fail(dir))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if tools.iter().any(|m| m.name == name) {
            continue;
        }
        let file = entry.path().join("SKILL.md");
        if entry.file_type().is_ok_and(|t| t.is_dir()) && ours(&file) {
            std::fs::remove_file(&file).map_err(fail(&file))?;
            // Only an emptied directory goes: files a person added beside it stay.
            let _ = std::fs::remove_dir(entry.path());
            report.removed.push(name);
        }
    }
    report.written.sort();
    report.removed.sort();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str, description: &str) -> Manifest {
        let text = format!(
            r#"apiVersion: toolsmith/v1
name: {name}
version: 1.2.0
description: {description}
interface:
  params:
    type: object
    properties:
      package: {{ type: string, description: "the crate | package" }}
      release: {{ type: boolean }}
    required: [package]
  output: text
runtime: {{ language: sh, entrypoint: run.sh }}
provenance: {{ origin: mined-sequence, generator: template/sh@1, created: 2026-11-22T10:00:00Z }}
"#
        );
        Manifest::parse(&text, "t").expect("manifest")
    }

    /// The Agent Skills rules, checked on an exported file.
    fn check_rules(text: &str, dir_name: &str) {
        let front = text
            .strip_prefix("---\n")
            .and_then(|t| t.split("\n---\n").next())
            .expect("frontmatter");
        let doc: serde_json::Value = serde_saphyr::from_str(front).expect("YAML frontmatter");
        let name = doc["name"].as_str().expect("name");
        assert_eq!(name, dir_name);
        assert!(name.len() <= 64 && valid_name(name));
        let description = doc["description"].as_str().expect("description");
        assert!(!description.is_empty() && description.chars().count() <= 1024);
        assert!(!description.contains('<') && !description.contains('>'));
    }

    #[test]
    fn skills_follow_the_rules_and_say_how_to_call_the_tool() {
        let m = manifest("cargo-test-one", "Run the tests of one package.");
        let text = skill_md(&m);
        check_rules(&text, "cargo-test-one");
        assert!(text.contains("toolsmith run cargo-test-one --param package=…"));
        assert!(text.contains("| `package` | string | yes | the crate \\| package |"));
        assert!(text.contains("--package, --release"));
        // A long description is cut to the limit.
        let mut long = m.clone();
        long.description = "word ".repeat(400);
        check_rules(&skill_md(&long), "cargo-test-one");
    }

    #[test]
    fn export_updates_removes_and_leaves_other_skills_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = manifest("tool-a", "A.");
        let b = manifest("tool-b", "B.");
        let r = export(dir.path(), &[a.clone(), b.clone()]).expect("export");
        assert_eq!(r.written, ["tool-a", "tool-b"]);
        // A skill of the user's own, with the same layout.
        std::fs::create_dir_all(dir.path().join("my-skill")).expect("mkdir");
        std::fs::write(
            dir.path().join("my-skill/SKILL.md"),
            "---\nname: my-skill\n---\n",
        )
        .expect("write");
        let r = export(dir.path(), std::slice::from_ref(&a)).expect("again");
        assert_eq!(r.unchanged, ["tool-a"]);
        assert_eq!(r.removed, ["tool-b"]);
        assert!(!dir.path().join("tool-b").exists());
        assert!(dir.path().join("my-skill/SKILL.md").exists());
        let mut a2 = a.clone();
        a2.description = "A, better.".into();
        let r = export(dir.path(), &[a2]).expect("update");
        assert_eq!(r.written, ["tool-a"]);
        let text = std::fs::read_to_string(dir.path().join("tool-a/SKILL.md")).expect("read");
        assert!(text.contains("A, better."));
        // A user's skill with a tool's name is not overwritten.
        let r = export(dir.path(), &[manifest("my-skill", "Mine.")]).expect("export");
        assert_eq!(r.skipped, ["my-skill"]);
    }
}
