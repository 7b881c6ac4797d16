//! `TOOLS.md`, the registry's index: one table row per tool on `main`, sorted by name, rewritten
//! in the same commit as any change to a tool.
//!
//! A change touches one row, so the file is updated row by row rather than rebuilt from every
//! manifest: approving into a registry of ten thousand tools reads one file, not ten thousand.

use std::fmt::Write as _;

/// The index's file name, at the root of the registry.
pub const FILE_NAME: &str = "TOOLS.md";

const HEADER: &str = "# Tools\n\nThe approved tools of this registry, one per directory under `tools/`. \
toolsmith rewrites this file in the same commit as any change to a tool.\n\n\
| Tool | Version | Description |\n|---|---|---|\n";

/// One tool's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The tool's name.
    pub name: String,
    /// Its version on `main`.
    pub version: String,
    /// What it does.
    pub description: String,
    /// Whether it is deprecated.
    pub deprecated: bool,
}

impl Row {
    fn render(&self) -> String {
        let description: String = self
            .description
            .split(|c: char| c.is_control())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|");
        let note = if self.deprecated {
            " *(deprecated)*"
        } else {
            ""
        };
        format!(
            "| [{name}](tools/{name}/README.md) | {} | {description}{note} |",
            self.version,
            name = self.name
        )
    }
}

/// The name a row is about, if the line is a tool row.
fn row_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("| [")?;
    let end = rest.find(']')?;
    Some(&rest[..end])
}

/// `text` (the current index, possibly empty or edited by hand) with `name`'s row replaced by
/// `row`, or removed when `row` is `None`. Rows stay sorted by name; lines that are not rows are
/// dropped, since the file is generated.
pub fn update(text: &str, name: &str, row: Option<&Row>) -> String {
    let mut lines: Vec<(String, String)> = text
        .lines()
        .filter_map(|line| row_name(line).map(|n| (n.to_owned(), line.to_owned())))
        .filter(|(n, _)| n != name)
        .collect();
    if let Some(row) = row {
        lines.push((row.name.clone(), row.render()));
    }
    write_rows(lines)
}

/// A whole index of `rows` (for a registry written at once; changes go through [`update`]).
pub fn render(rows: &[Row]) -> String {
    write_rows(rows.iter().map(|r| (r.name.clone(), r.render())).collect())
}

/// The file: the header, then the rows sorted by name, one per tool.
fn write_rows(mut lines: Vec<(String, String)>) -> String {
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    lines.dedup_by(|a, b| a.0 == b.0);
    let mut out = String::with_capacity(HEADER.len() + lines.len() * 80);
    out.push_str(HEADER);
    for (_, line) in lines {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The names the index lists.
pub fn names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(row_name)
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, version: &str) -> Row {
        Row {
            name: name.into(),
            version: version.into(),
            description: "Does | things\nwell.".into(),
            deprecated: false,
        }
    }

    #[test]
    fn rows_are_replaced_kept_sorted_and_removed() {
        let one = update("", "b-tool", Some(&row("b-tool", "1.0.0")));
        let two = update(&one, "a-tool", Some(&row("a-tool", "1.0.0")));
        assert_eq!(names(&two), ["a-tool", "b-tool"]);
        assert!(
            two.contains("| [b-tool](tools/b-tool/README.md) | 1.0.0 | Does \\| things well. |")
        );
        let mut newer = row("b-tool", "1.1.0");
        newer.deprecated = true;
        let three = update(&two, "b-tool", Some(&newer));
        assert_eq!(names(&three), ["a-tool", "b-tool"]);
        assert!(three.contains("| 1.1.0 |") && three.contains("*(deprecated)*"));
        assert!(!three.contains("[b-tool](tools/b-tool/README.md) | 1.0.0"));
        assert_eq!(
            render(&[row("b-tool", "1.1.0"), row("a-tool", "1.0.0")]),
            update(
                &update("", "b-tool", Some(&row("b-tool", "1.1.0"))),
                "a-tool",
                Some(&row("a-tool", "1.0.0"))
            )
        );
        let four = update(&three, "a-tool", None);
        assert_eq!(names(&four), ["b-tool"]);
        // Hand edits outside the rows are dropped; a garbled file still yields a valid index.
        let edited = format!("{four}\nsome note\n| [c-tool broken");
        assert_eq!(names(&update(&edited, "x", None)), ["b-tool"]);
    }
}
