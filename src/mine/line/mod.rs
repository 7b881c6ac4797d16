//! A logged command line as a habit keeps it: the line itself, every byte, cut by the shell
//! grammar into **units** — the text of the grammar that says what the line does (operators,
//! keywords, program names, quotes, redirection operators, variable names) and the values it
//! passes (bare words, the text inside quotes, here-document bodies).
//!
//! A step of a habit is one such line, never a simple command cut out of it: `cd web &&`,
//! `| tail -n 20`, `2>/dev/null || echo none`, `LOG_LEVEL=debug` and here-documents are part of
//! it. [`align`] lines up the occurrences of a habit's lines unit by unit and makes a **hole**
//! of what varies — a whole value or the part of one that differs (`v{version}`,
//! `config/{env}.toml`, inside a quoted string).
//!
//! The grammar is tree-sitter-bash (the grammar Codex analyses agents' commands with): it is
//! maintained, gives the byte range of every node, so the line is kept exactly as typed, and
//! marks what it cannot read with explicit error nodes rather than guessing. A line with such a
//! node is [`LineError::Syntax`]: it stays one opaque step, never a tool.
//!
//! Input comes from untrusted logs: nothing here panics on any text; lines longer than
//! [`MAX_LINE`] are refused, and parsing goes through [`crate::mine::shell`]'s parser, with its
//! work budget.

pub mod align;
mod attach;

pub use align::ParseCache;
pub use attach::{RawOccurrence, attach};

use std::ops::Range;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use tree_sitter::Node;

use crate::action::Source;
use crate::mine::shell::{Dialect, syntax_tree};

/// Longest line aligned, in bytes: a longer one (a script pasted whole) is no habit's step.
pub const MAX_LINE: usize = 64 * 1024;

/// The shell a line was written for, whose semantics a tool made of it keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    /// bash: every agent's shell tool (`bash -c`, `bash -lc`) and bash histories.
    #[default]
    Bash,
    /// zsh: zsh histories.
    Zsh,
    /// fish: fish histories.
    Fish,
}

impl Shell {
    /// The shell an action of `source` ran its line in.
    pub fn of(source: Source) -> Shell {
        match source {
            Source::Zsh => Shell::Zsh,
            Source::Fish => Shell::Fish,
            _ => Shell::Bash,
        }
    }

    /// The program's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }
}

/// How the text of a value unit is written, which decides how a value is written into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quoting {
    /// A bare word (`build`, `--mode=prod`, `*.rs`).
    Bare,
    /// The text inside double quotes.
    Double,
    /// A single-quoted string, quotes included (`'s/a/b/'`).
    Single,
    /// An ANSI-C string, `$'…'`, quotes included.
    AnsiC,
    /// A here-document's body: `expands` when its delimiter was unquoted (`<<EOF`), so that
    /// `$`, backquotes and backslashes in it are the shell's.
    HereDoc {
        /// Whether the shell expands the body.
        expands: bool,
    },
}

/// One unit of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Its bytes in the line.
    pub range: Range<usize>,
    /// The grammar's name for it (`word`, `&&`, `string_content`, `heredoc_body`, …).
    pub kind: &'static str,
    /// For a value the line passes: how it is written. `None` for the grammar's own text,
    /// which is the same in every occurrence of a habit.
    pub value: Option<Quoting>,
}

/// A command line cut into units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The line as logged.
    pub text: String,
    /// Its units, in order; the text between two units is whitespace (or a line continuation).
    pub units: Vec<Unit>,
}

impl Line {
    /// The text of unit `i`.
    pub fn unit_text(&self, i: usize) -> &str {
        self.units
            .get(i)
            .and_then(|u| self.text.get(u.range.clone()))
            .unwrap_or("")
    }

    /// Whether the line reads a variable (`$gen`, `${HOME}`, `$?`): its value was the
    /// session's, which the log does not hold. A command substitution (`$(date +%F)`) is
    /// computed again wherever the line runs.
    pub fn reads_variables(&self) -> bool {
        self.units.iter().any(|u| matches!(u.kind, "$" | "${"))
    }

    /// What every occurrence of one step shares: the grammar's text as written, and for each
    /// value its quoting. Two lines with the same skeleton differ only in their values
    /// (and in the whitespace between units).
    pub fn skeleton(&self) -> String {
        let mut key = String::new();
        for (i, unit) in self.units.iter().enumerate() {
            if i > 0 {
                key.push(' ');
            }
            match unit.value {
                None => key.push_str(self.unit_text(i)),
                // The grammar tells `0x402000` (a number) from `0x4013b0` (a word): both are
                // bare values.
                Some(q) => {
                    key.push('\u{1}');
                    key.push_str(&format!("{q:?}"));
                }
            }
        }
        key
    }
}

/// The kind of a unit standing for a run of files written one after another (`git add a.rs
/// b.rs`): the number of files varies between occurrences of one habit.
pub const FILES: &str = "files";

/// Whether a bare value names a file or a pattern of them (`src/a.rs`, `notes.md`, `*.py`):
/// such values make a run.
fn file_like(text: &str) -> bool {
    !text.starts_with('-')
        && !text.contains('=')
        && (text.contains('/')
            || text.contains('*')
            || (text.contains('.') && !text.chars().all(|c| c.is_ascii_digit() || c == '.')))
}

impl Line {
    /// The line with each run of files (bare values naming files, one after another) as one
    /// unit of kind [`FILES`], spanning the run: `git add a.rs` and `git add a.rs b.rs` then
    /// have one skeleton.
    pub fn with_runs(&self) -> Line {
        let mut units: Vec<Unit> = Vec::with_capacity(self.units.len());
        let mut in_run = false;
        for (i, unit) in self.units.iter().enumerate() {
            let file = unit.value == Some(Quoting::Bare) && file_like(self.unit_text(i));
            match units.last_mut() {
                Some(last) if file && in_run => last.range.end = unit.range.end,
                _ => {
                    let mut unit = unit.clone();
                    if file {
                        unit.kind = FILES;
                    }
                    units.push(unit);
                }
            }
            in_run = file;
        }
        Line {
            text: self.text.clone(),
            units,
        }
    }
}

/// The kind of a unit standing for the operands a command ends with (`brew upgrade wget jq`),
/// joined where their number varies between occurrences of one habit: a list of values.
pub const LIST: &str = "list";

/// Whether a unit with no value of its own ends the operands before it: an operator between
/// commands, the end of a group, a redirection.
fn ends_operands(text: &str) -> bool {
    matches!(
        text,
        "|" | "|&" | "&&" | "||" | ";" | "&" | ")" | "}" | ";;"
    ) || text.contains(['>', '<'])
}

impl Line {
    /// The units of each run of operands a simple command ends with, in order: bare values
    /// that are no flag or assignment (a run of files counts as its words), followed by an
    /// operator, a redirection or the end of the line.
    pub fn operand_runs(&self) -> Vec<Range<usize>> {
        let mut runs = Vec::new();
        let mut start: Option<usize> = None;
        for (i, unit) in self.units.iter().enumerate() {
            let text = self.unit_text(i);
            let operand =
                unit.value == Some(Quoting::Bare) && !text.starts_with('-') && !text.contains('=');
            if operand {
                start.get_or_insert(i);
                continue;
            }
            if let Some(s) = start.take()
                && unit.value.is_none()
                && ends_operands(text)
            {
                runs.push(s..i);
            }
        }
        if let Some(s) = start {
            runs.push(s..self.units.len());
        }
        runs
    }

    /// How many values the operands of `run` are (a run of files counts its words).
    pub fn run_items(&self, run: &Range<usize>) -> usize {
        run.clone()
            .map(|i| self.unit_text(i).split_whitespace().count())
            .sum()
    }

    /// The line with each run of operands (the `k`-th of [`Line::operand_runs`]) that `join[k]`
    /// says joined into one unit of kind [`LIST`], spanning the run.
    pub fn with_lists(&self, join: &[bool]) -> Line {
        let runs = self.operand_runs();
        let mut units: Vec<Unit> = Vec::with_capacity(self.units.len());
        let mut i = 0;
        while i < self.units.len() {
            let joined = runs
                .iter()
                .enumerate()
                .find(|(k, r)| r.start == i && join.get(*k).copied().unwrap_or(false));
            match joined {
                Some((_, run)) => {
                    let mut unit = self.units[run.start].clone();
                    unit.range.end = self.units[run.end - 1].range.end;
                    unit.kind = LIST;
                    units.push(unit);
                    i = run.end;
                }
                None => {
                    units.push(self.units[i].clone());
                    i += 1;
                }
            }
        }
        Line {
            text: self.text.clone(),
            units,
        }
    }
}

/// Why a line cannot be a habit's step.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LineError {
    /// Nothing but whitespace and comments.
    #[error("the line is empty")]
    Empty,
    /// Longer than [`MAX_LINE`].
    #[error("the line is {len} bytes, more than the {MAX_LINE} a step may have")]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// The grammar could not read it (an unterminated quote, a dangling operator, another
    /// shell's language).
    #[error("the shell grammar cannot read the line at byte {at}")]
    Syntax {
        /// Where the first unreadable part starts.
        at: usize,
    },
}

/// Parses `text` with the bash grammar into its units.
pub fn parse(text: &str) -> Result<Line, LineError> {
    if text.len() > MAX_LINE {
        return Err(LineError::TooLong { len: text.len() });
    }
    // A secret redaction left (`[REDACTED:kind]`) is one word wherever it stands: the grammar
    // reads a copy where its brackets and colon are letters (offsets unchanged).
    let masked = mask_placeholders(text);
    let text_for_grammar = masked.as_deref().unwrap_or(text);
    let tree = syntax_tree(text_for_grammar, Dialect::Posix).map_err(|e| LineError::Syntax {
        at: e.at().unwrap_or(0),
    })?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(LineError::Syntax {
            at: first_error(root).unwrap_or(0),
        });
    }
    let mut units = Vec::new();
    collect(root, text, &mut units);
    if units.iter().all(|u| u.kind == "comment") {
        return Err(LineError::Empty);
    }
    Ok(Line {
        text: text.to_owned(),
        units,
    })
}

/// Whether two lines say the same to the shell: the same units with the same text, whatever
/// the whitespace between them. Lines the grammar cannot read are the same only when equal.
pub fn same_line(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (parse(a), parse(b)) {
        (Ok(x), Ok(y)) => {
            x.units.len() == y.units.len()
                && (0..x.units.len()).all(|i| {
                    let (a, b) = (&x.units[i], &y.units[i]);
                    let same_kind = match (a.value, b.value) {
                        (Some(p), Some(q)) => p == q,
                        (None, None) => a.kind == b.kind,
                        _ => false,
                    };
                    same_kind && x.unit_text(i) == y.unit_text(i)
                })
        }
        _ => false,
    }
}

/// Where `got` first says something else than `want` to the shell, for a person: `line 2 word
/// 3: expected `-C`, got `core``. `None` when they are the same ([`same_line`]).
pub fn first_difference(want: &str, got: &str) -> Option<String> {
    if same_line(want, got) {
        return None;
    }
    let (Ok(w), Ok(g)) = (parse(want), parse(got)) else {
        return Some("the printed lines are not shell the grammar can read".to_owned());
    };
    let position = |line: &Line, i: usize| {
        let start = line.units.get(i).map_or(line.text.len(), |u| u.range.start);
        let row = line.text[..start].matches('\n').count() + 1;
        let row_start = line.text[..start].rfind('\n').map_or(0, |n| n + 1);
        let word = line
            .units
            .iter()
            .filter(|u| u.range.start >= row_start && u.range.start <= start)
            .count();
        (row, word)
    };
    let n = w.units.len().max(g.units.len());
    (0..n).find_map(|i| {
        let (a, b) = (w.units.get(i), g.units.get(i));
        let same = match (a, b) {
            (Some(_), Some(_)) => w.unit_text(i) == g.unit_text(i),
            _ => false,
        };
        if same {
            return None;
        }
        let (row, word) = position(&w, i);
        Some(match (a, b) {
            (Some(_), Some(_)) => format!(
                "line {row} word {word}: expected `{}`, got `{}`",
                w.unit_text(i),
                g.unit_text(i)
            ),
            (Some(_), None) => format!("line {row} word {word}: `{}` is missing", w.unit_text(i)),
            _ => format!("line {row}: `{}` was added", g.unit_text(i)),
        })
    })
}

/// `text` with each redaction placeholder's `[`, `:` and `]` made `_`, or `None` when it has
/// none.
fn mask_placeholders(text: &str) -> Option<String> {
    use crate::action::placeholder::PLACEHOLDER_START;
    if !text.contains(PLACEHOLDER_START) {
        return None;
    }
    let mut out = text.to_owned().into_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find(PLACEHOLDER_START) {
        let start = from + at;
        let Some(len) = text[start..].find(']') else {
            break;
        };
        for b in &mut out[start..=start + len] {
            if matches!(*b, b'[' | b']' | b':') {
                *b = b'_';
            }
        }
        from = start + len + 1;
    }
    String::from_utf8(out).ok()
}

/// The start of the first error or missing node, depth first (an explicit stack: nesting
/// comes from untrusted text).
fn first_error(node: Node<'_>) -> Option<usize> {
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            return Some(node.start_byte());
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node
            .children(&mut cursor)
            .filter(|c| c.has_error())
            .collect();
        stack.extend(children.into_iter().rev());
    }
    None
}

/// Nodes kept whole as one unit: their inside is a value written in one quoting.
const WHOLE: &[&str] = &["raw_string", "ansi_c_string", "heredoc_body"];

/// Ancestors under which a word is code rather than a value (`${A:-b}`, `$((n+1))`).
const CODE: &[&str] = &[
    "expansion",
    "arithmetic_expansion",
    "subscript",
    "command_name",
    "regex",
    "extglob_pattern",
];

/// What a node's ancestors say of its leaves, carried down the walk (asking a node for its
/// parent walks the tree from its root again).
#[derive(Clone, Copy)]
struct Context {
    /// Under code rather than a value (`${A:-b}`, `$((n+1))`, a program's name).
    in_code: bool,
    /// The parent is a redirection to a file descriptor or a file.
    in_redirect: bool,
    /// The previous sibling duplicates a descriptor (`>&`): this is its number.
    after_dup: bool,
    /// For a here-document's body: whether its delimiter was quoted.
    heredoc_quoted: bool,
}

fn collect(node: Node<'_>, text: &str, units: &mut Vec<Unit>) {
    // An explicit stack: nesting comes from untrusted text.
    let top = Context {
        in_code: false,
        in_redirect: false,
        after_dup: false,
        heredoc_quoted: false,
    };
    let mut stack = vec![(node, top)];
    while let Some((node, context)) = stack.pop() {
        let kind = node.kind();
        if node.child_count() == 0 || WHOLE.contains(&kind) {
            if node.start_byte() == node.end_byte() {
                continue;
            }
            units.push(Unit {
                range: node.byte_range(),
                kind,
                value: value_quoting(kind, context),
            });
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let heredoc_quoted = children
            .iter()
            .find(|c| c.kind() == "heredoc_start")
            .and_then(|c| text.get(c.byte_range()))
            .map_or(context.heredoc_quoted, |start| {
                start.contains(['\'', '"', '\\'])
            });
        let mut previous: Option<&str> = None;
        let mut pushed = Vec::with_capacity(children.len());
        for child in &children {
            pushed.push((
                *child,
                Context {
                    in_code: context.in_code || CODE.contains(&kind),
                    in_redirect: kind == "file_redirect",
                    after_dup: matches!(previous, Some(">&" | "<&" | ">&-" | "<&-")),
                    heredoc_quoted,
                },
            ));
            previous = Some(child.kind());
        }
        stack.extend(pushed.into_iter().rev());
    }
    // tree-sitter-bash places a here-document's body after the rest of its line's nodes in
    // some trees: units are kept in the order of the text.
    units.sort_by_key(|u| u.range.start);
}

/// How a leaf (or a [`WHOLE`] node) is written when it is a value; `None` for the grammar's
/// own text.
fn value_quoting(kind: &str, context: Context) -> Option<Quoting> {
    if context.in_code {
        return None;
    }
    match kind {
        // `2>&1`: the duplicated descriptor is the redirection's own text.
        "word" | "number" => (!(context.in_redirect && context.after_dup)).then_some(Quoting::Bare),
        "string_content" => Some(Quoting::Double),
        "raw_string" => Some(Quoting::Single),
        "ansi_c_string" => Some(Quoting::AnsiC),
        "heredoc_body" => Some(Quoting::HereDoc {
            expands: !context.heredoc_quoted,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(line: &str) -> Vec<(&str, Quoting)> {
        let parsed = parse(line).expect("parses");
        let mut out = Vec::new();
        for (i, u) in parsed.units.iter().enumerate() {
            if let Some(q) = u.value {
                let text = &line[parsed.units[i].range.clone()];
                out.push((text, q));
            }
        }
        out
    }

    #[test]
    fn every_byte_of_the_line_is_a_unit_or_whitespace_between_units() {
        for line in [
            "cd frontend && LOG=debug pnpm run build --mode=prod 2>&1 | tail -n 20 || echo failed",
            "git commit -m \"$(cat <<'EOF'\nFix it\n\nbody\nEOF\n)\"",
            "for f in *.c; do gcc \"$f\" -o \"${f%.c}\"; done",
            "curl -fsS localhost:8080/health | jq -r .status",
        ] {
            let parsed = parse(line).expect("parses");
            let mut at = 0;
            for u in &parsed.units {
                assert!(u.range.start >= at, "{line}: units overlap");
                assert!(
                    line[at..u.range.start].trim().is_empty()
                        || line[at..u.range.start].trim() == "\\",
                    "{line}: text between units is dropped: {:?}",
                    &line[at..u.range.start]
                );
                at = u.range.end;
            }
            assert!(line[at..].trim().is_empty(), "{line}: tail dropped");
        }
    }

    #[test]
    fn values_are_told_from_the_grammar_s_own_text() {
        assert_eq!(
            values("cd web && LOG=debug pnpm run build --mode=prod 2>&1 | tail -n 20"),
            vec![
                ("web", Quoting::Bare),
                ("debug", Quoting::Bare),
                ("run", Quoting::Bare),
                ("build", Quoting::Bare),
                ("--mode=prod", Quoting::Bare),
                ("-n", Quoting::Bare),
                ("20", Quoting::Bare),
            ]
        );
        assert_eq!(
            values("git tag -a v1.4.2 -m \"Release 1.4.2 $X\" && sed -i 's/a/b/' f"),
            vec![
                ("tag", Quoting::Bare),
                ("-a", Quoting::Bare),
                ("v1.4.2", Quoting::Bare),
                ("-m", Quoting::Bare),
                ("Release 1.4.2 ", Quoting::Double),
                ("-i", Quoting::Bare),
                ("'s/a/b/'", Quoting::Single),
                ("f", Quoting::Bare),
            ]
        );
        let heredoc = "git commit -m \"$(cat <<'EOF'\nFix it\nEOF\n)\"";
        assert_eq!(
            values(heredoc).last(),
            Some(&("Fix it\n", Quoting::HereDoc { expands: false }))
        );
        // Code inside an expansion is no value; a program's name is the grammar's.
        assert_eq!(values("echo ${A:-b}"), vec![]);
    }

    #[test]
    fn lines_the_grammar_cannot_read_are_errors_not_panics() {
        assert!(matches!(parse("echo 'open"), Err(LineError::Syntax { .. })));
        assert!(matches!(parse("a && && b"), Err(LineError::Syntax { .. })));
        assert_eq!(parse("   "), Err(LineError::Empty));
        // Deep nesting is refused or read, never a stack overflow.
        for deep in [
            "$(".repeat(20_000),
            "(".repeat(20_000) + &")".repeat(20_000),
        ] {
            let _ = parse(&deep);
            let _ = same_line(&deep, "x");
        }
        let long = "a".repeat(MAX_LINE + 1);
        assert!(matches!(parse(&long), Err(LineError::TooLong { .. })));
    }

    #[test]
    fn random_bytes_and_broken_lines_never_panic() {
        // xorshift64*, seeded: the same cases every run.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let pieces = [
            "git",
            " ",
            "'",
            "\"",
            "$(",
            ")",
            "`",
            "<<'EOF'\n",
            "\nEOF\n",
            "<<EOF\n",
            "&&",
            "||",
            "|",
            ";",
            "\\",
            "${",
            "}",
            "[REDACTED:token]",
            "[REDACTED:",
            "-f12",
            "0x4013b0",
            "2026-10-01",
            "v1.4.2",
            "é",
            "\n",
            "#",
            "(",
            "*",
            "$'",
            "2>&1",
            ">",
            "cd x",
        ];
        let mut parsed = 0;
        for _ in 0..3000 {
            let len = (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect();
            let bytes: Vec<u8> = (0..(next() % 40)).map(|_| (next() % 256) as u8).collect();
            let noise = String::from_utf8_lossy(&bytes).into_owned();
            for line in [&text, &noise] {
                if let Ok(l) = parse(line) {
                    parsed += 1;
                    let runs = l.with_runs();
                    let _ = (l.skeleton(), runs.skeleton(), l.reads_variables());
                    for i in 0..l.units.len() {
                        let _ = l.unit_text(i);
                    }
                }
                let _ = first_difference(line, &text);
                let _ = align::align_lines(&[vec![line.clone()], vec![text.clone()]]);
            }
        }
        assert!(
            parsed > 100,
            "the generator makes some readable lines: {parsed}"
        );
    }

    #[test]
    fn the_same_line_is_the_same_whatever_the_spacing() {
        assert!(same_line("a  &&  b -x 1", "a && b -x 1"));
        assert!(!same_line("a && b -x 1", "a && b -x 2"));
        assert!(!same_line("a 'x y'", "a \"x y\""));
    }
}
