//! Listing the tools on `main`: each checked from its tree (manifest, file kinds, digest —
//! cached by tree in `.git/toolsmith-tools-v2.cache`) and bound to what its version's tag
//! approved (remembered by tag object); one tool, a listed tool's manifest and README, and
//! when each version was approved.

use std::collections::BTreeMap;

use git2::{ObjectType, Oid};
use serde::Serialize;

use super::repo::{LISTING_CACHE, Registry, RegistryError, tool_path};
use crate::package::manifest::{self, Manifest};

/// A tool on `main`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ToolEntry {
    /// Its directory's name.
    pub name: String,
    /// Its version, when the manifest reads.
    pub version: Option<String>,
    /// What it does.
    pub description: String,
    /// Whether it is deprecated.
    pub deprecated: bool,
    /// Why it cannot be run, when its manifest or files are invalid.
    pub problem: Option<String>,
    /// Its tree's id: changes whenever any of its files does.
    pub tree: String,
    /// Its parameters' JSON Schema, when the manifest reads (kept as text: listings pass it
    /// through without building it).
    pub params: Option<Box<serde_json::value::RawValue>>,
    /// What it prints, when the manifest reads.
    pub output: Option<manifest::OutputKind>,
    /// The whole manifest: read by [`Registry::tool`], not kept in listings.
    #[serde(skip)]
    pub manifest: Option<Manifest>,
}

impl Registry {
    /// The tools on `main`, by name; a tool that cannot be run — its manifest does not read,
    /// a file is not a regular file, its files do not match its digest, or its directory is not
    /// what its version's tag approved — is listed with its problem.
    pub fn tools(&self) -> Result<Vec<ToolEntry>, RegistryError> {
        let main = self.main_commit()?;
        let tree = self.git("read main", main.tree())?;
        let Some(tools) = self.subtree_id(&tree, "tools") else {
            return Ok(Vec::new());
        };
        let tools = self.git("read tools/", self.repo.find_tree(tools))?;
        // A tool's entry depends only on its name and its tree: entries are cached by both, one
        // line each (`<name> <tree>\t<entry JSON>`), new ones appended, so listing ten thousand
        // tools parses only the manifests that changed and writes only their lines.
        let cache_path = self.repo.path().join(LISTING_CACHE);
        let text = std::fs::read_to_string(&cache_path).unwrap_or_default();
        let mut cache: std::collections::HashMap<&str, &str> = text
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .collect();
        let lines = text.lines().count();
        let mut out = Vec::with_capacity(tools.len());
        let mut fresh_lines = String::new();
        for entry in tools.iter() {
            if entry.kind() != Some(ObjectType::Tree) {
                continue;
            }
            let Ok(name) = entry.name() else {
                continue;
            };
            let key = format!("{name} {}", entry.id());
            let hit = cache
                .remove(key.as_str())
                .and_then(|json| serde_json::from_str::<ToolEntry>(json).ok());
            match hit {
                Some(hit) => out.push(hit),
                None => {
                    let mut fresh = self.entry(name, entry.id());
                    fresh.manifest = None;
                    if let Ok(json) = serde_json::to_string(&fresh) {
                        fresh_lines.push_str(&format!("{key}\t{json}\n"));
                    }
                    out.push(fresh);
                }
            }
        }
        // Lines for trees no longer on main pile up as tools change: rewritten when they
        // outnumber the live ones.
        if lines > 2 * out.len() + 64 {
            let mut all = String::new();
            for e in &out {
                if let Ok(json) = serde_json::to_string(e) {
                    all.push_str(&format!("{} {}\t{json}\n", e.name, e.tree));
                }
            }
            let tmp = cache_path.with_extension("tmp");
            if std::fs::write(&tmp, all).is_ok() {
                let _ = std::fs::rename(&tmp, &cache_path);
            }
        } else if !fresh_lines.is_empty() {
            use std::io::Write as _;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&cache_path)
            {
                let _ = f.write_all(fresh_lines.as_bytes());
            }
        }
        // Then what depends on more than the tree, never cached with it: whether main's tree is
        // what the version's tag approved (what a tag approved is remembered, by tag object).
        let known = self.known();
        let mut memo = super::approval::Memo::load(self);
        for e in out.iter_mut().filter(|e| e.problem.is_none()) {
            let (Some(version), Ok(tree)) = (e.version.clone(), Oid::from_str(&e.tree)) else {
                continue;
            };
            if let Err(problem) = self.bind(&e.name, &version, tree, &known, Some(&mut memo)) {
                e.problem = Some(problem);
                e.params = None;
            }
        }
        memo.save(self.repo.path());
        Ok(out)
    }

    /// Why `name`'s files on disk are not `main`'s, as [`Registry::runnable`] refuses them
    /// (`None` when they are, or when `main` is not checked out): for lists of what can be
    /// called now (MCP `tools/list` and `toolsmith_search`), which check only the tools they
    /// offer — a listing reads git alone, and a registry of thousands is not hashed for a list.
    pub fn disk_problem_now(&self, name: &str) -> Result<Option<String>, RegistryError> {
        if !self.main_is_checked_out() {
            return Ok(None);
        }
        let main = self.main_commit()?.id();
        self.disk_problem(name, main)
    }

    /// A tool's entry from its tree alone: its manifest read and checked, its files' kinds and
    /// its digest. Whether the tree is an approved version is not in it (see
    /// [`Registry::bind`]).
    pub(super) fn entry(&self, name: &str, tree: Oid) -> ToolEntry {
        let read = || -> Result<Manifest, String> {
            let t = self
                .repo
                .find_tree(tree)
                .map_err(|e| e.message().to_owned())?;
            let entry = t
                .get_name(manifest::FILE_NAME)
                .ok_or_else(|| "it has no tool.yaml".to_owned())?;
            let blob = self
                .repo
                .find_blob(entry.id())
                .map_err(|e| e.message().to_owned())?;
            let text = std::str::from_utf8(blob.content())
                .map_err(|_| "tool.yaml is not UTF-8".to_owned())?;
            let file = format!("tools/{name}/{}", manifest::FILE_NAME);
            let m = Manifest::parse(text, &file).map_err(|e| e.to_string())?;
            m.check(&file).map_err(|e| e.to_string())?;
            if m.name != name {
                return Err(format!(
                    "its manifest names it `{}`; a tool's directory and name must match",
                    m.name
                ));
            }
            let Some(validation) = &m.validation else {
                return Err("its manifest has no validation record: it was never validated".into());
            };
            let files = self.tool_files(name, tree).map_err(|e| match e {
                RegistryError::Invalid { problem, .. } => problem,
                other => other.to_string(),
            })?;
            // `check` accepted the recorded digest's form, so there is one to compare with.
            let found = crate::package::digest::recompute(&validation.digest, &files, &m)
                .unwrap_or_default();
            if found != validation.digest {
                return Err(format!(
                    "its files do not match the digest it was validated with ({} recorded, \
                     {found} found): they were changed after validation; roll back \
                     (`toolsmith rollback {name}`) or have it reviewed as a candidate \
                     (`toolsmith adopt {name}`)",
                    validation.digest
                ));
            }
            Ok(m)
        };
        match read() {
            Ok(m) => ToolEntry {
                name: name.to_owned(),
                version: Some(m.version.to_string()),
                description: m.description.clone(),
                deprecated: m.deprecated.is_some(),
                problem: None,
                tree: tree.to_string(),
                params: serde_json::value::to_raw_value(&m.interface.params).ok(),
                output: Some(m.interface.output),
                manifest: Some(m),
            },
            Err(problem) => ToolEntry {
                name: name.to_owned(),
                version: None,
                description: String::new(),
                deprecated: false,
                problem: Some(problem),
                tree: tree.to_string(),
                params: None,
                output: None,
                manifest: None,
            },
        }
    }

    /// One tool on `main`, checked as [`Registry::tools`] lists it (read from git, no cache).
    pub fn tool(&self, name: &str) -> Result<ToolEntry, RegistryError> {
        let main = self.main_commit()?;
        let tree = self.git("read main", main.tree())?;
        let id = self
            .subtree_id(&tree, &tool_path(name))
            .ok_or_else(|| RegistryError::NoSuchTool(name.to_owned()))?;
        let mut entry = self.entry(name, id);
        if entry.problem.is_none()
            && let Some(version) = entry.version.clone()
            && let Err(problem) = self.bind(name, &version, id, &self.known(), None)
        {
            entry.problem = Some(problem);
            entry.manifest = None;
            entry.params = None;
        }
        Ok(entry)
    }

    /// The manifest of an entry [`Registry::tools`] listed without a problem, read from its
    /// tree as it is: for what a listing shows (MCP definitions, search results, skills), not
    /// for running — [`Registry::runnable`] checks everything again, from git.
    pub fn listed_manifest(&self, entry: &ToolEntry) -> Option<Manifest> {
        if entry.problem.is_some() {
            return None;
        }
        let tree = self.repo.find_tree(Oid::from_str(&entry.tree).ok()?).ok()?;
        let blob = self
            .repo
            .find_blob(tree.get_name(manifest::FILE_NAME)?.id())
            .ok()?;
        Manifest::parse(
            std::str::from_utf8(blob.content()).ok()?,
            manifest::FILE_NAME,
        )
        .ok()
    }

    /// The `README.md` of a tool on `main`.
    pub fn tool_readme(&self, name: &str) -> Result<Option<String>, RegistryError> {
        let main = self.main_commit()?;
        let tree = self.git("read main", main.tree())?;
        self.blob_text(&tree, &format!("tools/{name}/README.md"))
    }

    /// When each approved version was tagged: `(name, version)` → Unix milliseconds of its
    /// annotated tag (lightweight or unreadable tags are left out). `known` keeps the times
    /// read before, by tag object: a long-lived caller peels only the tags made since.
    pub fn approval_times(
        &self,
        known: &mut std::collections::HashMap<Oid, i64>,
    ) -> BTreeMap<(String, String), i64> {
        let mut times = BTreeMap::new();
        let Ok(refs) = self.repo.references_glob("refs/tags/*/v*") else {
            return times;
        };
        for reference in refs.flatten() {
            let (Ok(short), Some(target)) = (reference.shorthand(), reference.target()) else {
                continue;
            };
            let Some((name, version)) = short.split_once("/v") else {
                continue;
            };
            let time = match known.get(&target) {
                Some(t) => Some(*t),
                None => {
                    let t = self
                        .repo
                        .find_tag(target)
                        .ok()
                        .and_then(|t| t.tagger().map(|s| s.when().seconds() * 1000));
                    if let Some(t) = t {
                        known.insert(target, t);
                    }
                    t
                }
            };
            if let Some(t) = time {
                times.insert((name.to_owned(), version.to_owned()), t);
            }
        }
        times
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, git};
    use super::*;

    #[test]
    fn approved_tools_are_listed_with_what_their_manifest_says() {
        let (_dir, registry) = fixture::registry();
        assert!(registry.tools().expect("tools").is_empty());
        fixture::approved(&registry, "c-1", "beta", "#!/bin/sh\necho b\n");
        fixture::approved(&registry, "c-2", "alpha", "#!/bin/sh\necho a\n");
        // Proposals awaiting review are not tools.
        fixture::propose(&registry, "c-3", "gamma", "#!/bin/sh\necho c\n");
        let tools = registry.tools().expect("tools");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta"]);
        let alpha = &tools[0];
        assert_eq!(alpha.problem, None);
        assert_eq!(alpha.version.as_deref(), Some("1.0.0"));
        assert_eq!(
            alpha.description,
            "Run the tests of one package and print only the failures."
        );
        assert!(!alpha.deprecated);
        let params = alpha.params.as_ref().expect("params").get();
        assert!(params.contains("\"package\""), "{params}");
        assert_eq!(alpha.output, Some(manifest::OutputKind::Text));
        let listed = registry.listed_manifest(alpha).expect("manifest");
        assert_eq!(listed.name, "alpha");
        // Listed again from the cache: the same.
        let again = registry.tools().expect("tools");
        assert_eq!(
            serde_json::to_value(&again).expect("json"),
            serde_json::to_value(&tools).expect("json")
        );
        let one = registry.tool("beta").expect("beta");
        assert_eq!(one.problem, None);
        assert_eq!(one.manifest.expect("read whole").name, "beta");
        assert_eq!(
            registry.tool_readme("beta").expect("readme").as_deref(),
            Some("# beta\n")
        );
        assert!(matches!(
            registry.tool("gamma"),
            Err(RegistryError::NoSuchTool(_))
        ));
    }

    #[test]
    fn a_tool_changed_after_validation_is_listed_with_its_problem() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        assert_eq!(registry.tools().expect("tools")[0].problem, None, "cached");
        std::fs::write(registry.root().join("tools/demo/run.sh"), "echo changed\n").expect("w");
        git(registry.root(), &["commit", "-q", "-am", "by hand"]);
        let tools = registry.tools().expect("tools");
        let problem = tools[0].problem.as_deref().expect("a problem");
        assert!(
            problem.contains("do not match the digest") && problem.contains("toolsmith adopt demo"),
            "{problem}"
        );
        assert!(tools[0].params.is_none());
        assert!(registry.listed_manifest(&tools[0]).is_none());
        assert_eq!(
            registry.tool("demo").expect("demo").problem,
            tools[0].problem
        );
    }

    #[test]
    fn a_listing_binds_each_tool_to_its_tag_whatever_it_cached() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        assert_eq!(registry.tools().expect("tools")[0].problem, None);
        // The tree is the same, and cached as valid; the approval is gone.
        registry
            .repo
            .tag_delete("demo/v1.0.0")
            .expect("delete the tag");
        let problem = registry.tools().expect("tools")[0].problem.clone();
        assert!(problem.is_some(), "listed as approved without its tag");
        assert_eq!(registry.tool("demo").expect("demo").problem, problem);
    }

    #[test]
    fn approval_times_come_from_the_tags() {
        let (_dir, registry) = fixture::registry();
        fixture::approved(&registry, "c-1", "demo", "#!/bin/sh\necho 1\n");
        let mut known = std::collections::HashMap::new();
        let times = registry.approval_times(&mut known);
        let key = ("demo".to_owned(), "1.0.0".to_owned());
        let tag = registry.repo.revparse_single("demo/v1.0.0").expect("tag");
        let tagged = tag.as_tag().expect("annotated").tagger().expect("tagger");
        assert_eq!(times.get(&key), Some(&(tagged.when().seconds() * 1000)));
        assert_eq!(known.len(), 1, "remembered by tag object");
        // A lightweight tag approves nothing and has no time.
        git(registry.root(), &["tag", "demo/v2.0.0"]);
        let times = registry.approval_times(&mut known);
        assert_eq!(times.len(), 1, "{times:?}");
    }
}
