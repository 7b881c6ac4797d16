//! The layering of the crate's top-level modules, as ARCHITECTURE.md states it ("Layers"):
//! every `crate::…` path in `src/` must point to a module in a lower layer. A module that
//! imports one in its own layer or above, or two modules that import each other, fail the test
//! with the file and the path.
//!
//! What counts: `use crate::…` (grouped too: `use crate::{a, b::c}`) and inline paths such as
//! `crate::x::y(…)`, in code. What does not: comments and doc comments (`//`, `///`, `//!`,
//! `/* */`), string and character literals, and `#[cfg(test)]` modules (unit tests may reach
//! any stage to set up their case).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may import modules of the layers below its own, never
/// one of its own layer or above. Keep this list and ARCHITECTURE.md's "Layers" the same.
const LAYERS: &[&[&str]] = &[
    &["store", "events", "host", "exit", "logging", "quote"],
    &["action", "sandbox", "control", "schedule"],
    &["config"],
    &["package"],
    &["invoke"],
    &["ingest", "mine", "registry"],
    &["validate"],
    &["generate"],
    &["health"],
    &["run", "stats"],
    &["mcp"],
    &["daemon"],
    &["cli"],
];

/// One `crate::…` path found in code: the top-level module it names and the path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Import {
    module: String,
    path: String,
}

/// `text` without comments, string and character literals (each replaced by a space, so that
/// tokens on either side stay apart).
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        let prev_ident = i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_');
        // Raw strings: r"…", r#"…"#, br"…".
        if (c == 'r' || (c == 'b' && next == Some('r'))) && !prev_ident {
            let mut j = if c == 'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push(' ');
                i = j;
                continue;
            }
        }
        if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                if b[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            out.push(' ');
            i = j + 1;
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\''), else a lifetime or label.
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                out.push(' ');
                i = j + 1;
                continue;
            }
            if b.get(i + 2) == Some(&'\'') {
                out.push(' ');
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `code` (already stripped) without its `#[cfg(test)]` modules.
fn without_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let is_module = trimmed.starts_with("mod ") || trimmed.starts_with("pub(crate) mod ");
        let open = trimmed.find(['{', ';']);
        match (is_module, open) {
            (true, Some(o)) if trimmed.as_bytes()[o] == b'{' => {
                out.push_str(&rest[..at]);
                let body_start = at + "#[cfg(test)]".len() + (after.len() - trimmed.len()) + o;
                let mut depth = 0;
                let mut end = rest.len();
                for (k, ch) in rest[body_start..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = body_start + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &rest[end..];
            }
            _ => {
                out.push_str(&rest[..at + "#[cfg(test)]".len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The `crate::…` paths in `text` (Rust source), in order.
fn imports(text: &str) -> Vec<Import> {
    let code = without_test_modules(&strip(text));
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(n) = code[from..].find("crate::") {
        let at = from + n;
        from = at + "crate::".len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // `other_crate::`
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // Split the group at its top-level commas; each part names a module first.
            let mut depth = 0;
            let mut part = String::new();
            let mut parts = Vec::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        parts.push(std::mem::take(&mut part));
                        continue;
                    }
                    _ => {}
                }
                part.push(ch);
            }
            parts.push(part);
            for p in parts {
                let p: String = p.split_whitespace().collect::<Vec<_>>().join(" ");
                let module = ident_at(&p);
                if !module.is_empty() {
                    found.push(Import {
                        module: module.to_owned(),
                        path: format!("crate::{{{p}}}"),
                    });
                }
            }
        } else {
            let module = ident_at(rest);
            if module.is_empty() {
                continue;
            }
            let mut path = format!("crate::{module}");
            let mut tail = &rest[module.len()..];
            while let Some(t) = tail.strip_prefix("::") {
                let seg = ident_at(t);
                if seg.is_empty() {
                    break;
                }
                path.push_str("::");
                path.push_str(seg);
                tail = &t[seg.len()..];
            }
            found.push(Import {
                module: module.to_owned(),
                path,
            });
        }
    }
    found
}

/// The layer of each module named in `layers`.
fn ranks(layers: &[&[&str]]) -> BTreeMap<String, usize> {
    let mut rank = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for m in *layer {
            rank.insert((*m).to_owned(), i);
        }
    }
    rank
}

/// What breaks the layering among `files` (each: its path, its top-level module, its text):
/// an import of a module not below the importer, or of a module the layers do not name, and
/// pairs of modules that import each other. Empty when the layering holds.
fn violations(layers: &[&[&str]], files: &[(String, String, String)]) -> Vec<String> {
    let rank = ranks(layers);
    let mut problems = Vec::new();
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for (file, module, text) in files {
        let Some(&own) = rank.get(module) else {
            problems.push(format!(
                "{file}: module `{module}` is in no layer: add it to LAYERS (tests/it/architecture.rs) and to ARCHITECTURE.md"
            ));
            continue;
        };
        for import in imports(text) {
            if import.module == *module {
                continue;
            }
            let Some(&theirs) = rank.get(&import.module) else {
                // `crate::` followed by something that is not a module of ours (a macro
                // argument, a crate-root item): nothing to order.
                continue;
            };
            edges
                .entry((module.clone(), import.module.clone()))
                .or_insert_with(|| format!("{file}: `{}`", import.path));
            if theirs >= own {
                let how = if theirs == own {
                    "its sibling in the same layer"
                } else {
                    "a module in a higher layer"
                };
                problems.push(format!(
                    "{file}: `{}` — `{module}` (layer {own}) imports `{}` (layer {theirs}), {how}",
                    import.path, import.module
                ));
            }
        }
    }
    for ((a, b), at) in &edges {
        if a < b
            && let Some(back) = edges.get(&(b.clone(), a.clone()))
        {
            problems.push(format!("`{a}` and `{b}` import each other: {at}; {back}"));
        }
    }
    problems
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every source file of a top-level module: (path shown, module, text). The crate root and
/// the binaries sit above every module and are left out.
fn crate_files() -> Vec<(String, String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let rel = path.strip_prefix(&src).expect("under src");
        let first = rel
            .components()
            .next()
            .expect("a component")
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        if first == "bin" || first == "lib.rs" || first == "main.rs" {
            continue;
        }
        let module = first.trim_end_matches(".rs").to_owned();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let shown = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        files.push((shown, module, text));
    }
    files
}

#[test]
fn modules_import_only_the_layers_below_them() {
    let files = crate_files();
    assert!(
        files.len() > 50,
        "found only {} source files: is src/ there?",
        files.len()
    );
    let problems = violations(LAYERS, &files);
    assert!(
        problems.is_empty(),
        "the layering in ARCHITECTURE.md (\"Layers\") is broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_module_is_in_exactly_one_layer() {
    let modules: BTreeSet<String> = crate_files().into_iter().map(|(_, m, _)| m).collect();
    let mut listed = BTreeSet::new();
    for m in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(listed.insert((*m).to_owned()), "`{m}` is in LAYERS twice");
    }
    assert_eq!(
        modules, listed,
        "the modules of src/ and the modules of LAYERS differ"
    );
}

#[test]
fn grouped_uses_and_inline_paths_are_read() {
    let text = "use crate::{a, b::c, d::{e, f::G}};\nuse crate::h::I;\nfn x() { crate::k::l(); }\n";
    let got: Vec<(String, String)> = imports(text)
        .into_iter()
        .map(|i| (i.module, i.path))
        .collect();
    let want = [
        ("a", "crate::{a}"),
        ("b", "crate::{b::c}"),
        ("d", "crate::{d::{e, f::G}}"),
        ("h", "crate::h::I"),
        ("k", "crate::k::l"),
    ];
    assert_eq!(
        got,
        want.iter()
            .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn multi_line_groups_are_read() {
    let text = "use crate::{\n    alpha::{self, B},\n    beta,\n};\n";
    let modules: Vec<String> = imports(text).into_iter().map(|i| i.module).collect();
    assert_eq!(modules, ["alpha", "beta"]);
}

#[test]
fn comments_strings_and_test_modules_are_not_imports() {
    let text = r##"
//! See [`crate::doc_link`].
/// Uses [`crate::other`].
// crate::line_comment
/* crate::block /* nested crate::inner */ still crate::comment */
const S: &str = "crate::in_string \" crate::escaped";
const R: &str = r#"crate::raw "quoted" crate::raw2"#;
const C: char = '"';
fn f<'a>(x: &'a str) -> &'a str { crate::real::f(x) }
#[cfg(test)]
mod tests {
    use crate::from_tests;
    fn g() { let _ = '}'; }
}
fn after() { crate::after::g(); }
"##;
    let modules: Vec<String> = imports(text).into_iter().map(|i| i.module).collect();
    assert_eq!(modules, ["real", "after"]);
}

#[test]
fn other_crates_paths_are_not_ours_and_macros_paths_are() {
    let text = "use my_crate::z;\nfn f() { other_crate::q(); }\n";
    assert!(imports(text).is_empty(), "{:?}", imports(text));
    // In a macro of this crate, `$crate::x` is this crate's module `x`.
    let text = "macro_rules! m { () => { $crate::x::y() } }\n";
    let modules: Vec<String> = imports(text).into_iter().map(|i| i.module).collect();
    assert_eq!(modules, ["x"]);
}

#[test]
fn an_upward_import_fails_naming_the_file_and_the_path() {
    let layers: &[&[&str]] = &[&["low"], &["mid_a", "mid_b"], &["high"]];
    let file = |path: &str, module: &str, text: &str| {
        (path.to_owned(), module.to_owned(), text.to_owned())
    };
    // Downward only: fine.
    let good = [
        file(
            "src/high.rs",
            "high",
            "use crate::mid_a::X;\nuse crate::low::Y;\n",
        ),
        file("src/mid_a/mod.rs", "mid_a", "use crate::low::Z;\n"),
        file("src/low.rs", "low", "use crate::low::inner;\n"),
    ];
    assert_eq!(violations(layers, &good), Vec::<String>::new());
    // Up, sideways, and a pair importing each other.
    let bad = [
        file("src/low.rs", "low", "fn f() { crate::high::run(); }\n"),
        file("src/mid_a/x.rs", "mid_a", "use crate::{mid_b::Q};\n"),
        file("src/high.rs", "high", "use crate::low::f;\n"),
    ];
    let problems = violations(layers, &bad);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].starts_with("src/low.rs: `crate::high::run`")
            && problems[0].contains("a module in a higher layer"),
        "{problems:#?}"
    );
    assert!(
        problems[1].starts_with("src/mid_a/x.rs: `crate::{mid_b::Q}`")
            && problems[1].contains("its sibling in the same layer"),
        "{problems:#?}"
    );
    assert!(
        problems[2].starts_with("`high` and `low` import each other"),
        "{problems:#?}"
    );
    // A module no layer names.
    let stray = [file("src/stray.rs", "stray", "use crate::low::f;\n")];
    let problems = violations(layers, &stray);
    assert!(
        problems[0].contains("module `stray` is in no layer"),
        "{problems:#?}"
    );
}
