//! The user's own shell aliases, abbreviations and functions, read from the files their shells
//! read (never run), so that mining reads `gia src/x.rs` as the `git add src/x.rs` the shell ran.
//!
//! - `read.rs`: which files (bash, zsh with oh-my-zsh, fish, Claude Code's shell snapshots) and
//!   the definitions in each, found in the file's syntax tree ([`crate::mine::shell`]'s
//!   grammars); a snapshot's base64-encoded function bodies are decoded as data.
//! - `classify.rs`: what each definition means to mining ([`Meaning`]): an alias to a program
//!   expands to its words; one reaching something a person drives (`cd`, an editor, a fuzzy
//!   finder, a REPL, `read`) is a boundary, as interactive programs are; any other function is
//!   opaque, also a boundary: what it runs is never guessed.
//!
//! [`ShellDefinitions::expand_line`] applies them to a logged command line with the shell's
//! rules: only a command's first word (unquoted) is looked up, expansion is recursive and stops
//! at a name already being expanded, and a value ending in a blank expands the next word too.
//! A history line is expanded with its shell's definitions, a Claude Code command with its
//! snapshots' (Claude Code sources one before each command); other agents run a
//! non-interactive shell with no aliases.

mod classify;
mod read;

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::action::Source;
use crate::mine::shell::{self, Dialect};

pub use read::{HomeEnv, discover};

/// What a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefKind {
    /// `alias name=value` (bash, zsh, a snapshot) or fish's `alias name value`.
    Alias,
    /// A shell function.
    Function,
    /// fish's `abbr --add name value`.
    Abbreviation,
}

impl DefKind {
    /// The word a review shows.
    pub fn as_str(self) -> &'static str {
        match self {
            DefKind::Alias => "alias",
            DefKind::Function => "function",
            DefKind::Abbreviation => "abbreviation",
        }
    }
}

/// Which shell's commands a definition applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefShell {
    /// Read by bash (`~/.bashrc`, …): bash histories.
    Bash,
    /// Read by zsh (`.zshrc`, oh-my-zsh): zsh histories.
    Zsh,
    /// Read by fish: fish histories.
    Fish,
    /// Recorded by Claude Code's shell snapshots: its Bash tool's commands.
    Snapshot,
}

impl DefShell {
    /// The definitions a command of `source` ran with, if any.
    pub fn of(source: Source) -> Option<DefShell> {
        match source {
            Source::Bash => Some(DefShell::Bash),
            Source::Zsh => Some(DefShell::Zsh),
            Source::Fish => Some(DefShell::Fish),
            Source::ClaudeCode => Some(DefShell::Snapshot),
            _ => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn dialect(self) -> Dialect {
        match self {
            DefShell::Fish => Dialect::Fish,
            _ => Dialect::Posix,
        }
    }
}

/// What a definition means to mining.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meaning {
    /// The command word is replaced by this text (an alias, an abbreviation, a function that
    /// is one simple command forwarding its arguments), before any further expansion.
    Expands(String),
    /// It reaches something a person drives (`cd`, an editor, a fuzzy finder, `read`…): no
    /// tool can take it, so no habit crosses it.
    Interactive,
    /// A function doing more than forwarding its arguments: what it runs is not guessed, so no
    /// habit crosses it either.
    Opaque,
}

/// One definition as the user's files hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The name typed.
    pub name: String,
    /// Alias, function or abbreviation.
    pub kind: DefKind,
    /// Its text: an alias's value, a function's whole definition.
    pub text: String,
    /// The file it is in.
    pub file: PathBuf,
    /// Its line in that file (1-based).
    pub line: usize,
    /// Which shell reads it.
    pub shell: DefShell,
    /// What it means to mining.
    pub meaning: Meaning,
}

/// One definition a pattern's commands were expanded with, as the review shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Expansion {
    /// The word typed (`gia`).
    pub name: String,
    /// `alias`, `function` or `abbreviation`.
    pub kind: String,
    /// What it stands for (`git add`).
    pub text: String,
    /// Where it is defined: `file:line`.
    pub defined_at: String,
}

/// A command line with the user's definitions applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    /// The line as the shell ran it.
    pub line: String,
    /// The definitions used (indices into [`ShellDefinitions::definitions`]), in order.
    pub used: Vec<u32>,
}

/// Deepest alias expansion followed (a chain longer than this is left as it stands).
const MAX_EXPANSION_DEPTH: usize = 16;

/// Longest expansion of one command word, in bytes.
const MAX_EXPANSION_LEN: usize = 64 * 1024;

/// Every definition read, by shell and name (the one a shell would use: the last read).
#[derive(Debug, Clone, Default)]
pub struct ShellDefinitions {
    definitions: Vec<Definition>,
    /// Per [`DefShell`]: name → index into `definitions`.
    by_name: [HashMap<String, u32>; 4],
    /// Per definition that expands: its value with the definitions it reaches expanded, and
    /// the definitions that took.
    expanded: HashMap<u32, (String, Vec<u32>)>,
    /// What could not be read, one note per file or definition.
    pub notes: Vec<String>,
}

impl ShellDefinitions {
    /// The definitions `found`, later ones replacing earlier ones of the same shell and name
    /// (as a shell reading the files in order does); `notes` say what was skipped.
    pub fn new(found: Vec<Definition>, notes: Vec<String>) -> ShellDefinitions {
        let mut defs = ShellDefinitions {
            definitions: Vec::new(),
            by_name: Default::default(),
            expanded: HashMap::new(),
            notes,
        };
        for def in found {
            let index = defs.definitions.len() as u32;
            defs.by_name[def.shell.index()].insert(def.name.clone(), index);
            defs.definitions.push(def);
        }
        classify::classify_all(&mut defs);
        for index in 0..defs.definitions.len() as u32 {
            if let Some(done) = defs.expand_definition(index) {
                defs.expanded.insert(index, done);
            }
        }
        defs
    }

    /// Every definition read.
    pub fn definitions(&self) -> &[Definition] {
        &self.definitions
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.definitions.is_empty()
    }

    /// The definition of `name` for `shell`.
    pub fn get(&self, shell: DefShell, name: &str) -> Option<&Definition> {
        self.by_name[shell.index()]
            .get(name)
            .and_then(|&i| self.definitions.get(i as usize))
    }

    /// Whether `name` is defined for any shell.
    pub fn defines(&self, name: &str) -> bool {
        self.by_name.iter().any(|m| m.contains_key(name))
    }

    /// Whether a command whose program word is `name`, run by `source`, is a boundary: a
    /// definition that is interactive or opaque.
    pub fn is_boundary(&self, source: Source, name: &str) -> bool {
        DefShell::of(source)
            .and_then(|shell| self.get(shell, name))
            .is_some_and(|d| !expands(d))
    }

    /// The review's record of definition `index`.
    pub fn expansion(&self, index: u32) -> Option<Expansion> {
        let def = self.definitions.get(index as usize)?;
        let text = match &def.meaning {
            Meaning::Expands(text) => text.clone(),
            _ => def.text.clone(),
        };
        Some(Expansion {
            name: def.name.clone(),
            kind: def.kind.as_str().to_owned(),
            text,
            defined_at: format!("{}:{}", def.file.display(), def.line),
        })
    }

    /// `line`, run by `source`, with the definitions its shell had applied; `None` when none
    /// applies (or the line does not parse: it is then read as it was logged).
    pub fn expand_line(&self, source: Source, line: &str) -> Option<Expanded> {
        let shell = DefShell::of(source)?;
        let names = &self.by_name[shell.index()];
        if names.is_empty() {
            return None;
        }
        // Most lines use no definition: a look at their words spares the parse.
        let mentions = line
            .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')' | '`'))
            .any(|w| names.contains_key(w));
        if !mentions {
            return None;
        }
        let commands = shell::parse_dialect(line, shell.dialect()).ok()?;
        let mut edits: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
        let mut used = Vec::new();
        for command in &commands {
            for word in &command.words {
                let Some(&index) = names.get(word.text.as_str()) else {
                    break;
                };
                if !word.is_plain() {
                    break;
                }
                let Some((text, took)) = self.expanded.get(&index) else {
                    break;
                };
                let blank = text.ends_with([' ', '\t']);
                // `sudo ` before a word already apart from it: one blank is enough.
                let apart = line
                    .get(word.span.end..)
                    .is_some_and(|r| r.starts_with([' ', '\t']));
                let text = if blank && apart {
                    text.trim_end()
                } else {
                    text.as_str()
                };
                edits.push((word.span.clone(), text));
                used.extend_from_slice(took);
                // A value ending in a blank makes the next word a command word too.
                if !blank {
                    break;
                }
            }
        }
        if edits.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(line.len() + 32);
        let mut at = 0;
        edits.sort_by_key(|(span, _)| span.start);
        for (span, text) in edits {
            if span.start < at || span.end > line.len() {
                return None;
            }
            out.push_str(line.get(at..span.start)?);
            out.push_str(text);
            at = span.end;
        }
        out.push_str(line.get(at..)?);
        Some(Expanded { line: out, used })
    }

    /// Definition `index`'s value with every definition it reaches expanded, recursively (a
    /// name already being expanded stays as it is, as in the shell), and the definitions used.
    fn expand_definition(&self, index: u32) -> Option<(String, Vec<u32>)> {
        let def = self.definitions.get(index as usize)?;
        let Meaning::Expands(value) = &def.meaning else {
            return None;
        };
        let mut seen = vec![index];
        let text = self.expand_text(def.shell, value, &mut seen, 0);
        Some((text, seen))
    }

    fn expand_text(
        &self,
        shell: DefShell,
        value: &str,
        seen: &mut Vec<u32>,
        depth: usize,
    ) -> String {
        if depth >= MAX_EXPANSION_DEPTH {
            return value.to_owned();
        }
        let Ok(commands) = shell::parse_dialect(value, shell.dialect()) else {
            return value.to_owned();
        };
        let names = &self.by_name[shell.index()];
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for command in &commands {
            for word in &command.words {
                let Some(&index) = names.get(word.text.as_str()) else {
                    break;
                };
                let Some(def) = self.definitions.get(index as usize) else {
                    break;
                };
                let Meaning::Expands(inner) = &def.meaning else {
                    break;
                };
                if !word.is_plain() || seen.contains(&index) {
                    break;
                }
                seen.push(index);
                let text = self.expand_text(shell, inner, seen, depth + 1);
                let blank = text.ends_with([' ', '\t']);
                let apart = value
                    .get(word.span.end..)
                    .is_some_and(|r| r.starts_with([' ', '\t']));
                let text = if blank && apart {
                    text.trim_end().to_owned()
                } else {
                    text
                };
                edits.push((word.span.clone(), text));
                if !blank {
                    break;
                }
            }
        }
        let mut out = String::new();
        let mut at = 0;
        for (span, text) in edits {
            let (Some(before), true) = (value.get(at..span.start), span.start >= at) else {
                return value.to_owned();
            };
            out.push_str(before);
            out.push_str(&text);
            at = span.end;
        }
        out.push_str(value.get(at..).unwrap_or(""));
        if out.len() > MAX_EXPANSION_LEN {
            return value.to_owned();
        }
        out
    }
}

fn expands(def: &Definition) -> bool {
    matches!(def.meaning, Meaning::Expands(_))
}

#[cfg(test)]
mod tests;
