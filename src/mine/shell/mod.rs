//! Command lines found in logs, parsed with a maintained shell grammar and reduced to what mining
//! needs: the simple commands a line runs, in order, each word with its byte span in the line.
//!
//! [`parse`] turns `cd web && RUST_LOG=debug cargo test -p core 2>&1 | tail -5` into two
//! [`SimpleCommand`]s (`cargo test -p core` with its assignment, its redirection, the `|` after it
//! and `cd: Some("web")`; then `tail -5`, marked as in a pipeline). The `cd DIR` prefix is not a
//! command of its own: it is recorded as the directory the later commands run in. Every word,
//! assignment value, redirection target and command carries its `span`, the bytes of the line it
//! was read from, so a caller can rebuild the line exactly as typed.
//!
//! The grammar is tree-sitter's: `tree-sitter-bash` for sh, bash and zsh lines,
//! `tree-sitter-fish` for fish ([`Dialect::Fish`]). It was chosen over brush-parser because it
//! gives the byte range of every node (words, quotes, operators, here-document bodies), because
//! it is error-tolerant with explicit `ERROR` and `MISSING` nodes (so a bad line is told apart
//! from a good one, and where it breaks is known), and because Codex uses the same grammar to
//! analyse the commands agents run. One parser per dialect is kept per thread.
//!
//! What is read from the tree: quotes (removed in [`Word::text`], kept in [`Word::raw`]), `$'…'`,
//! escapes and line continuations, `&&`, `||`, `;`, `&`, `|`, `|&`, newlines, redirections with
//! their fd, here-documents (bodies kept apart from the words) and here-strings, leading
//! `NAME=value` assignments (and arrays), subshells, brace groups, `if`/`while`/`until`/`for`/
//! `case`, functions (their bodies' commands are kept, their keywords dropped), `[[ … ]]` and
//! `[ … ]` (as words) and `(( … ))` (dropped). Command substitutions (`$( … )`, backticks,
//! `<( … )`, fish's `( … )`), parameter expansions and arithmetic stay opaque parts of the word
//! they are in, written as they were: the word is marked as expanded and the substitution's text
//! is noted, but its commands are not part of the output.
//!
//! Input comes from untrusted logs: a line the grammar does not accept (a tree with an `ERROR` or
//! `MISSING` node), one nested deeper than [`MAX_DEPTH`], one longer than [`MAX_LINE`], or one
//! whose parse exceeds a work budget proportional to its length, is a [`ShellError`] with the
//! byte offset where it fails, never a panic. A line in another shell's language (PowerShell,
//! `cmd.exe`) is [`ShellError::ForeignShell`]: it is never read as POSIX words.

mod foreign;
mod walk;

/// The syntax tree of a line with the thread's parser for its dialect, within the work budget
/// (what [`crate::mine::line`] cuts a habit's lines with).
pub(crate) use walk::parse_source as syntax_tree;
mod word;

use thiserror::Error;

/// Deepest nesting of command substitutions, subshells and compound commands accepted before
/// giving up.
pub const MAX_DEPTH: usize = 32;

/// Longest line parsed, in bytes: a longer one (a whole file written through a here-document,
/// say) is [`ShellError::TooLong`], one opaque step.
pub const MAX_LINE: usize = 512 * 1024;

/// Why a command line could not be parsed. Offsets are byte offsets into the line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShellError {
    /// A quote (`'`, `"`, or `$'`) was opened and never closed.
    #[error("unterminated {quote} quote starting at byte {at}")]
    UnterminatedQuote {
        /// The opening quote character.
        quote: char,
        /// Where it was opened.
        at: usize,
    },
    /// A command substitution (`$(`, backtick, `<(`, fish `(`) was never closed.
    #[error("unterminated command substitution starting at byte {at}")]
    UnterminatedSubstitution {
        /// Where it was opened.
        at: usize,
    },
    /// A `${` parameter expansion was never closed.
    #[error("unterminated parameter expansion starting at byte {at}")]
    UnterminatedExpansion {
        /// Where it was opened.
        at: usize,
    },
    /// A redirection operator with no word after it.
    #[error("redirection at byte {at} has no target")]
    MissingRedirectionTarget {
        /// Where the operator is.
        at: usize,
    },
    /// An operator or keyword where none can be (`&& x`, `a | | b`, `)` without `(`).
    #[error("unexpected `{token}` at byte {at}")]
    UnexpectedToken {
        /// The token as written.
        token: String,
        /// Where it is.
        at: usize,
    },
    /// The line ends where a command must follow (after `&&`, `||` or `|`).
    #[error("line ends where a command is expected")]
    UnexpectedEnd,
    /// A compound command (subshell, brace group, `case`, `[[`, `for`, function) is not closed.
    #[error("unclosed {what}")]
    Unclosed {
        /// What is left open.
        what: &'static str,
    },
    /// Nesting deeper than [`MAX_DEPTH`], or more parsing work than the input's length warrants.
    #[error("nesting too deep or too complex at byte {at}")]
    TooDeep {
        /// Where the limit was reached.
        at: usize,
    },
    /// The line is longer than [`MAX_LINE`].
    #[error("command line of {len} bytes is longer than the {max} bytes parsed")]
    TooLong {
        /// The line's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The line is in another shell's language, never read as POSIX words.
    #[error("command line is {shell}, not a POSIX shell")]
    ForeignShell {
        /// Which: `powershell` or `cmd`.
        shell: &'static str,
    },
    /// The shell grammar could not be loaded into the parser (a tree-sitter version mismatch at
    /// build time).
    #[error("the {dialect} grammar cannot be loaded: {reason}")]
    Grammar {
        /// `bash` or `fish`.
        dialect: &'static str,
        /// What tree-sitter said.
        reason: String,
    },
}

impl ShellError {
    /// The byte offset in the line where parsing failed, when there is one.
    pub fn at(&self) -> Option<usize> {
        match self {
            ShellError::UnterminatedQuote { at, .. }
            | ShellError::UnterminatedSubstitution { at }
            | ShellError::UnterminatedExpansion { at }
            | ShellError::MissingRedirectionTarget { at }
            | ShellError::UnexpectedToken { at, .. }
            | ShellError::TooDeep { at } => Some(*at),
            ShellError::UnexpectedEnd
            | ShellError::Unclosed { .. }
            | ShellError::TooLong { .. }
            | ShellError::ForeignShell { .. }
            | ShellError::Grammar { .. } => None,
        }
    }
}

/// Which shell's syntax a line is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// POSIX sh with the bash/zsh extensions agents use.
    #[default]
    Posix,
    /// fish.
    Fish,
}

/// The operator after a command, joining it to the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Connector {
    /// `&&`: the next runs if this one succeeded.
    And,
    /// `||`: the next runs if this one failed.
    Or,
    /// `;` or a newline.
    Seq,
    /// `&`: this one runs in the background.
    Background,
    /// `|` or `|&`: this one's output is the next one's input.
    Pipe,
}

impl Connector {
    /// The operator as written (a newline is written `;`).
    pub fn as_str(self) -> &'static str {
        match self {
            Connector::And => "&&",
            Connector::Or => "||",
            Connector::Seq => ";",
            Connector::Background => "&",
            Connector::Pipe => "|",
        }
    }
}

/// One word of a command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The value: quotes removed, escapes applied; expansions and substitutions kept as written
    /// (`$HOME/x`, `$(git rev-parse HEAD)`), since their value is not known here.
    pub text: String,
    /// The word as written in the line.
    pub raw: String,
    /// Whether any part was quoted or escaped.
    pub quoted: bool,
    /// Whether the word holds a parameter expansion, command substitution or arithmetic.
    pub expanded: bool,
    /// The text inside each command substitution of the word (`$(…)`, backticks, `<(…)`), in
    /// order: noted, not parsed into commands.
    pub substitutions: Vec<String>,
    /// The bytes of the line the word was read from (`raw` is that slice).
    pub span: std::ops::Range<usize>,
}

impl Word {
    /// A word written without quotes or expansions.
    pub fn literal(text: &str) -> Word {
        Word {
            text: text.to_owned(),
            raw: text.to_owned(),
            ..Word::default()
        }
    }

    /// Whether the word was written without quotes or expansions, so it can be a keyword.
    pub fn is_plain(&self) -> bool {
        !self.quoted && !self.expanded
    }
}

/// A leading `NAME=value` of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The variable's name.
    pub name: String,
    /// Its value (an array assignment `NAME=(a b)` keeps the parentheses in `text`).
    pub value: Word,
    /// Whether it was `NAME+=value`.
    pub append: bool,
}

/// A redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedirOp {
    /// `<`
    Read,
    /// `>`
    Write,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `<>`
    ReadWrite,
    /// `<&`
    DupIn,
    /// `>&`
    DupOut,
    /// `&>`: stdout and stderr to a file.
    WriteAll,
    /// `&>>`
    AppendAll,
    /// `<<` or, when `strip_tabs`, `<<-`: a here-document; the target is its delimiter.
    HereDoc {
        /// `<<-`: leading tabs of the body are removed.
        strip_tabs: bool,
    },
    /// `<<<`: a here-string.
    HereString,
}

impl RedirOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            RedirOp::Read => "<",
            RedirOp::Write => ">",
            RedirOp::Append => ">>",
            RedirOp::Clobber => ">|",
            RedirOp::ReadWrite => "<>",
            RedirOp::DupIn => "<&",
            RedirOp::DupOut => ">&",
            RedirOp::WriteAll => "&>",
            RedirOp::AppendAll => "&>>",
            RedirOp::HereDoc { strip_tabs: false } => "<<",
            RedirOp::HereDoc { strip_tabs: true } => "<<-",
            RedirOp::HereString => "<<<",
        }
    }

    /// Whether the operator writes its target (a file, unless the target is an fd).
    pub fn writes(self) -> bool {
        matches!(
            self,
            RedirOp::Write
                | RedirOp::Append
                | RedirOp::Clobber
                | RedirOp::ReadWrite
                | RedirOp::WriteAll
                | RedirOp::AppendAll
        )
    }
}

/// A redirection of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirection {
    /// The file descriptor written before the operator (`2` in `2>&1`), if any.
    pub fd: Option<u32>,
    /// The operator.
    pub op: RedirOp,
    /// The file, fd (`1` in `2>&1`), here-document delimiter or here-string.
    pub target: Word,
    /// A here-document's body, each line ending in a newline (tabs stripped for `<<-`); `None`
    /// for other redirections, and for a body that could not be told apart (one inside a
    /// command substitution).
    pub body: Option<String>,
}

/// One simple command: assignments, words and redirections, as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// Leading `NAME=value` assignments.
    pub assignments: Vec<Assignment>,
    /// The words: the program, then its arguments. Empty for a command that is only
    /// assignments or redirections.
    pub words: Vec<Word>,
    /// Redirections, in order.
    pub redirections: Vec<Redirection>,
    /// The operator after this command, `None` for the last one (or the last one of a subshell).
    pub connector: Option<Connector>,
    /// Whether the command reads from or writes to a pipe.
    pub in_pipeline: bool,
    /// Whether the command runs inside a `( … )` subshell.
    pub in_subshell: bool,
    /// The directory an earlier `cd DIR &&` (or `cd DIR;`) of the same line moved to, relative to
    /// where the line started unless absolute (`~` is kept as written). Consecutive `cd`s are
    /// joined and normalized (`cd a && cd ../b` gives `b`).
    pub cd: Option<String>,
    /// The bytes of the line the command was read from: assignments, words and redirections
    /// (here-document bodies included), not the operator after it.
    pub span: std::ops::Range<usize>,
}

impl SimpleCommand {
    /// The program's word as written after quote removal, if the command has words.
    pub fn program(&self) -> Option<&str> {
        self.words.first().map(|w| w.text.as_str())
    }

    /// Whether any word, assignment or redirection target holds a command substitution.
    pub fn has_substitution(&self) -> bool {
        self.words
            .iter()
            .chain(self.assignments.iter().map(|a| &a.value))
            .chain(self.redirections.iter().map(|r| &r.target))
            .any(|w| !w.substitutions.is_empty())
    }
}

/// Parses a POSIX (bash/zsh) command line into its simple commands.
///
/// ```
/// use toolsmith::mine::shell::{parse, Connector};
/// let cmds = parse("cd web && npm run build 2>&1 | tail -5").unwrap();
/// assert_eq!(cmds.len(), 2);
/// assert_eq!(cmds[0].program(), Some("npm"));
/// assert_eq!(cmds[0].cd.as_deref(), Some("web"));
/// assert_eq!(cmds[0].connector, Some(Connector::Pipe));
/// assert_eq!(cmds[0].words[0].span, 10..13);
/// assert!(cmds[1].in_pipeline);
/// ```
pub fn parse(line: &str) -> Result<Vec<SimpleCommand>, ShellError> {
    parse_dialect(line, Dialect::Posix)
}

/// Parses a command line in the given dialect into its simple commands.
pub fn parse_dialect(line: &str, dialect: Dialect) -> Result<Vec<SimpleCommand>, ShellError> {
    if line.len() > MAX_LINE {
        return Err(ShellError::TooLong {
            len: line.len(),
            max: MAX_LINE,
        });
    }
    if let Some(shell) = foreign::foreign_shell(line) {
        return Err(ShellError::ForeignShell { shell });
    }
    if line
        .bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b';'))
    {
        // Only separators: nothing runs (the grammar wants a command before a `;`).
        return Ok(Vec::new());
    }
    walk::parse_tree(line, dialect)
}

/// Joins `dir` onto `base` the way `cd` would and normalizes `.` and `..` lexically: an absolute
/// or `~` directory replaces the base; `..` never climbs above `/` or `~`.
///
/// ```
/// use toolsmith::mine::shell::resolve_dir;
/// assert_eq!(resolve_dir(Some("/home/u/proj"), "../other/./src"), "/home/u/other/src");
/// assert_eq!(resolve_dir(Some("/w"), "/tmp"), "/tmp");
/// assert_eq!(resolve_dir(None, "a/../b"), "b");
/// ```
pub fn resolve_dir(base: Option<&str>, dir: &str) -> String {
    let joined = match base {
        Some(base) if !(dir.starts_with('/') || dir.starts_with('~') || base.is_empty()) => {
            format!("{}/{dir}", base.trim_end_matches('/'))
        }
        _ => dir.to_owned(),
    };
    let (root, rest) = if let Some(rest) = joined.strip_prefix('/') {
        ("/", rest)
    } else if joined == "~" || joined.starts_with("~/") {
        ("~", joined.get(1..).unwrap_or(""))
    } else {
        ("", joined.as_str())
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if root.is_empty() {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let body = parts.join("/");
    match root {
        "/" => format!("/{body}"),
        "~" if body.is_empty() => "~".to_owned(),
        "~" => format!("~/{body}"),
        _ if body.is_empty() => ".".to_owned(),
        _ => body,
    }
}

/// `NAME=value` or `NAME+=value` with an unquoted valid name.
pub(crate) fn as_assignment(w: &Word) -> Option<Assignment> {
    let eq = w.raw.find('=')?;
    let (name, append) = match w.raw[..eq].strip_suffix('+') {
        Some(name) => (name, true),
        None => (&w.raw[..eq], false),
    };
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || first == '_')
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    // The name is unquoted, so it starts the text just as it starts the raw word.
    let value_text = w.text.get(eq + 1..).unwrap_or("").to_owned();
    let value_raw = w.raw.get(eq + 1..).unwrap_or("").to_owned();
    Some(Assignment {
        name: name.to_owned(),
        value: Word {
            text: value_text,
            quoted: value_raw.contains(['\'', '"', '\\']),
            raw: value_raw,
            expanded: w.expanded,
            substitutions: w.substitutions.clone(),
            span: (w.span.start + eq + 1).min(w.span.end)..w.span.end,
        },
        append,
    })
}

/// The directory of a foldable `cd`/`pushd` command: `cd`, `cd DIR`, `cd -P DIR`; not `cd -`.
pub(crate) fn cd_target(words: &[Word]) -> Option<String> {
    let (program, args) = words.split_first()?;
    if !program.is_plain() || !matches!(program.text.as_str(), "cd" | "pushd") {
        return None;
    }
    let operands: Vec<&Word> = args
        .iter()
        .skip_while(|w| w.is_plain() && matches!(w.text.as_str(), "-L" | "-P" | "-e" | "-@"))
        .collect();
    match operands.as_slice() {
        [] => Some("~".to_owned()),
        [dir] if dir.text != "-" && !dir.text.is_empty() => Some(dir.text.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
