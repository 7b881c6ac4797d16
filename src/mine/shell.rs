//! A POSIX shell lexer and parser for command lines found in logs, reduced to what mining needs:
//! the simple commands a line runs, in order.
//!
//! [`parse`] turns `cd web && RUST_LOG=debug cargo test -p core 2>&1 | tail -5` into two
//! [`SimpleCommand`]s (`cargo test -p core` with its assignment, its redirection, the `|` after it
//! and `cd: Some("web")`; then `tail -5`, marked as in a pipeline). The `cd DIR` prefix is not a
//! command of its own: it is recorded as the directory the later commands run in.
//!
//! What is understood: single quotes, double quotes (with the backslash escapes they allow),
//! `$'…'`, backslash escapes and line continuations, `&&`, `||`, `;`, `&`, `|`, `|&`, newlines,
//! redirections (`<`, `>`, `>>`, `>|`, `<>`, `<&`, `>&`, `&>`, `&>>`, `<<<`, here-documents
//! `<<EOF` / `<<-EOF` whose bodies are kept apart from the words, each with an optional fd such as `2>`), leading
//! `NAME=value` assignments (and `NAME=(…)` arrays), comments, subshells `( … )`, brace groups,
//! `if`/`while`/`until`/`for`/`select`/`case` (their keywords are dropped, the commands inside
//! them kept), function definitions (the body's commands are kept), `[[ … ]]` and `(( … ))`.
//! Command substitutions (`$( … )`, backticks, `<( … )`, `>( … )`) and parameter expansions stay
//! opaque parts of the word they are in, written as they were: the word is marked as expanded and
//! the substitution's text is noted, but its commands are not part of the output. `$(( … ))` is
//! arithmetic, also opaque.
//!
//! With [`Dialect::Fish`], `( … )` inside or at the start of a word is fish's command
//! substitution, `\'` and `\\` are escapes inside single quotes, and fish's `and`/`or`/`not`,
//! `begin`/`end`, `switch`/`case` and `function` are keywords.
//!
//! Input comes from untrusted logs: every malformed line (an unterminated quote, a dangling `&&`,
//! an unbalanced parenthesis, nesting deeper than [`MAX_DEPTH`]) is a [`ShellError`], never a
//! panic, and the work is linear in the input (scans that look ahead share a budget proportional
//! to its length).

use thiserror::Error;

/// Deepest nesting of command substitutions and subshells accepted before giving up.
pub const MAX_DEPTH: usize = 32;

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
    /// Nesting deeper than [`MAX_DEPTH`], or more look-ahead than the input's length warrants.
    #[error("nesting too deep or too complex at byte {at}")]
    TooDeep {
        /// Where the limit was reached.
        at: usize,
    },
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
/// assert!(cmds[1].in_pipeline);
/// ```
pub fn parse(line: &str) -> Result<Vec<SimpleCommand>, ShellError> {
    parse_dialect(line, Dialect::Posix)
}

/// Parses a command line in the given dialect into its simple commands.
pub fn parse_dialect(line: &str, dialect: Dialect) -> Result<Vec<SimpleCommand>, ShellError> {
    let mut lexer = Lexer::new(line, dialect);
    let mut commands = Parser::new(&mut lexer, None).run()?;
    // The bodies were read in the order their here-documents were met; a count that differs
    // means one was inside a substitution, and then no body is given rather than a wrong one.
    let heredocs = commands
        .iter_mut()
        .flat_map(|c| c.redirections.iter_mut())
        .filter(|r| matches!(r.op, RedirOp::HereDoc { .. }));
    let heredocs: Vec<&mut Redirection> = heredocs.collect();
    if heredocs.len() == lexer.bodies.len() {
        for (r, body) in heredocs.into_iter().zip(lexer.bodies.drain(..)) {
            r.body = Some(body);
        }
    }
    Ok(commands)
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

// ---------------------------------------------------------------------------------------------
// Lexer

/// A lexical token.
#[derive(Debug)]
enum Tok {
    Word(Word),
    Op(Op),
    Redir(Redirection),
    /// A whole `(( … ))` arithmetic command.
    Arith,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Semi,
    /// `;;`, `;&` or `;;&`: the end of a `case` item.
    CaseEnd,
    Amp,
    Pipe,
    Newline,
    LParen,
    RParen,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::And => "&&",
            Op::Or => "||",
            Op::Semi => ";",
            Op::CaseEnd => ";;",
            Op::Amp => "&",
            Op::Pipe => "|",
            Op::Newline => "newline",
            Op::LParen => "(",
            Op::RParen => ")",
        }
    }
}

struct PendingHeredoc {
    delimiter: String,
    strip_tabs: bool,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    dialect: Dialect,
    heredocs: Vec<PendingHeredoc>,
    /// The here-document bodies read so far, in order.
    bodies: Vec<String>,
    /// Current nesting of command substitutions and subshells.
    depth: usize,
    /// Characters look-ahead scans may still examine: keeps pathological input linear.
    budget: usize,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str, dialect: Dialect) -> Self {
        Lexer {
            src,
            pos: 0,
            dialect,
            heredocs: Vec::new(),
            bodies: Vec::new(),
            depth: 0,
            budget: src.len().saturating_mul(8).saturating_add(4096),
        }
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// The byte `n` bytes ahead; operators are ASCII, so comparing bytes is exact.
    fn byte_at(&self, n: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + n).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.src.get(from..to).unwrap_or("")
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.byte_at(0) {
                Some(b' ' | b'\t' | b'\r') => self.pos += 1,
                Some(b'\\') if self.byte_at(1) == Some(b'\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    fn next(&mut self) -> Result<(Tok, usize), ShellError> {
        loop {
            self.skip_blanks();
            let at = self.pos;
            let Some(b) = self.byte_at(0) else {
                return Ok((Tok::End, at));
            };
            let tok = match b {
                b'#' => {
                    let rest = self.slice(self.pos, self.src.len());
                    self.pos += rest.find('\n').unwrap_or(rest.len());
                    continue;
                }
                b'\n' => {
                    self.pos += 1;
                    self.skip_heredoc_bodies();
                    Tok::Op(Op::Newline)
                }
                b';' => {
                    if self.rest().starts_with(";;&") {
                        self.pos += 3;
                        Tok::Op(Op::CaseEnd)
                    } else if matches!(self.byte_at(1), Some(b';' | b'&')) {
                        self.pos += 2;
                        Tok::Op(Op::CaseEnd)
                    } else {
                        self.pos += 1;
                        Tok::Op(Op::Semi)
                    }
                }
                b'&' => match self.byte_at(1) {
                    Some(b'&') => {
                        self.pos += 2;
                        Tok::Op(Op::And)
                    }
                    Some(b'>') if self.byte_at(2) == Some(b'>') => {
                        self.pos += 3;
                        self.redirection(None, RedirOp::AppendAll, at)?
                    }
                    Some(b'>') => {
                        self.pos += 2;
                        self.redirection(None, RedirOp::WriteAll, at)?
                    }
                    _ => {
                        self.pos += 1;
                        Tok::Op(Op::Amp)
                    }
                },
                b'|' => match self.byte_at(1) {
                    Some(b'|') => {
                        self.pos += 2;
                        Tok::Op(Op::Or)
                    }
                    Some(b'&') => {
                        self.pos += 2;
                        Tok::Op(Op::Pipe)
                    }
                    _ => {
                        self.pos += 1;
                        Tok::Op(Op::Pipe)
                    }
                },
                b'<' | b'>' if self.byte_at(1) == Some(b'(') && self.dialect == Dialect::Posix => {
                    Tok::Word(self.word()?)
                }
                b'<' | b'>' => self.redirection_op(None, at)?,
                b'(' if self.dialect == Dialect::Fish => Tok::Word(self.word()?),
                b'(' => {
                    if self.byte_at(1) == Some(b'(') && self.arithmetic_command()? {
                        Tok::Arith
                    } else {
                        self.pos += 1;
                        Tok::Op(Op::LParen)
                    }
                }
                b')' => {
                    self.pos += 1;
                    Tok::Op(Op::RParen)
                }
                b'0'..=b'9' => {
                    let digits = self.rest().bytes().take_while(u8::is_ascii_digit).count();
                    match self.byte_at(digits) {
                        Some(b'<' | b'>') if self.byte_at(digits + 1) != Some(b'(') => {
                            let fd = self.slice(self.pos, self.pos + digits).parse().ok();
                            self.pos += digits;
                            self.redirection_op(fd, at)?
                        }
                        _ => Tok::Word(self.word()?),
                    }
                }
                _ => Tok::Word(self.word()?),
            };
            return Ok((tok, at));
        }
    }

    /// Reads a `<…` or `>…` operator at the cursor, then its target.
    fn redirection_op(&mut self, fd: Option<u32>, at: usize) -> Result<Tok, ShellError> {
        let rest = self.rest();
        let (op, len) = if rest.starts_with("<<<") {
            (RedirOp::HereString, 3)
        } else if rest.starts_with("<<-") {
            (RedirOp::HereDoc { strip_tabs: true }, 3)
        } else if rest.starts_with("<<") {
            (RedirOp::HereDoc { strip_tabs: false }, 2)
        } else if rest.starts_with("<&") {
            (RedirOp::DupIn, 2)
        } else if rest.starts_with("<>") {
            (RedirOp::ReadWrite, 2)
        } else if rest.starts_with('<') {
            (RedirOp::Read, 1)
        } else if rest.starts_with(">>") {
            (RedirOp::Append, 2)
        } else if rest.starts_with(">&") {
            (RedirOp::DupOut, 2)
        } else if rest.starts_with(">|") {
            (RedirOp::Clobber, 2)
        } else {
            (RedirOp::Write, 1)
        };
        self.pos += len;
        self.redirection(fd, op, at)
    }

    /// Reads the target word of a redirection whose operator was just consumed.
    fn redirection(&mut self, fd: Option<u32>, op: RedirOp, at: usize) -> Result<Tok, ShellError> {
        self.skip_blanks();
        let starts_word = match self.byte_at(0) {
            None | Some(b'\n' | b';' | b'&' | b'|' | b')') => false,
            Some(b'(') => self.dialect == Dialect::Fish,
            Some(b'<' | b'>') => self.byte_at(1) == Some(b'(') && self.dialect == Dialect::Posix,
            Some(_) => true,
        };
        if !starts_word {
            return Err(ShellError::MissingRedirectionTarget { at });
        }
        let target = self.word()?;
        if let RedirOp::HereDoc { strip_tabs } = op {
            self.heredocs.push(PendingHeredoc {
                delimiter: target.text.clone(),
                strip_tabs,
            });
        }
        Ok(Tok::Redir(Redirection {
            fd,
            op,
            target,
            body: None,
        }))
    }

    /// After a newline: reads the bodies of the here-documents started on the line that ended,
    /// keeping them for their redirections, and steps over them.
    /// A body missing its delimiter runs to the end of the input, as bash reads it.
    fn skip_heredoc_bodies(&mut self) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while self.pos < self.src.len() {
                let rest = self.slice(self.pos, self.src.len());
                let len = rest.find('\n').unwrap_or(rest.len());
                let line = rest.get(..len).unwrap_or("");
                self.pos = (self.pos + len + 1).min(self.src.len());
                let line = line.strip_suffix('\r').unwrap_or(line);
                let line = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == heredoc.delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            self.bodies.push(body);
        }
    }

    /// At `((`: consumes a whole `(( … ))` arithmetic command and returns true, or returns false
    /// (consuming nothing) when the parentheses are nested subshells instead.
    fn arithmetic_command(&mut self) -> Result<bool, ShellError> {
        let inner = self.pos + 1;
        match self.matching_paren(inner)? {
            Some(close) if self.src.as_bytes().get(close + 1) == Some(&b')') => {
                self.pos = close + 2;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The offset of the `)` matching the `(` at `open`, skipping quoted text; `None` if there
    /// is none. Charged to the look-ahead budget.
    fn matching_paren(&mut self, open: usize) -> Result<Option<usize>, ShellError> {
        let bytes = self.src.as_bytes();
        let mut depth = 0usize;
        let mut i = open;
        let mut quote: Option<u8> = None;
        while let Some(&b) = bytes.get(i) {
            self.budget = self
                .budget
                .checked_sub(1)
                .ok_or(ShellError::TooDeep { at: open })?;
            match (quote, b) {
                (Some(b'\''), b'\'') => quote = None,
                (Some(b'\''), _) => {}
                (_, b'\\') => i += 1,
                (Some(_), b'"') => quote = None,
                (Some(_), _) => {}
                (None, b'\'' | b'"') => quote = Some(b),
                (None, b'(') => depth += 1,
                (None, b')') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(Some(i));
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Ok(None)
    }

    /// Reads one word starting at the cursor, which is not at a metacharacter (except `<(`,
    /// `>(`, and fish's `(`, which start words).
    fn word(&mut self) -> Result<Word, ShellError> {
        let start = self.pos;
        let mut w = Word::default();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | ')' => break,
                '<' | '>' => {
                    if self.pos == start
                        && self.byte_at(1) == Some(b'(')
                        && self.dialect == Dialect::Posix
                    {
                        self.pos += 2;
                        self.substitution(&mut w, start, 2)?;
                    } else {
                        break;
                    }
                }
                '(' => {
                    if self.dialect == Dialect::Fish {
                        let at = self.pos;
                        self.pos += 1;
                        self.substitution(&mut w, at, 1)?;
                    } else {
                        break;
                    }
                }
                '\'' => self.single_quoted(&mut w)?,
                '"' => self.double_quoted(&mut w)?,
                '\\' => {
                    self.pos += 1;
                    match self.bump() {
                        Some('\n') => {}
                        Some(c) => {
                            w.quoted = true;
                            w.text.push(c);
                        }
                        // A trailing backslash has nothing to escape: it is the user's.
                        None => w.text.push('\\'),
                    }
                }
                '$' => self.dollar(&mut w, false)?,
                '`' => self.backtick(&mut w)?,
                _ => {
                    w.text.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        w.raw = self.slice(start, self.pos).to_owned();
        Ok(w)
    }

    fn single_quoted(&mut self, w: &mut Word) -> Result<(), ShellError> {
        let at = self.pos;
        self.pos += 1;
        w.quoted = true;
        loop {
            match self.bump() {
                None => return Err(ShellError::UnterminatedQuote { quote: '\'', at }),
                Some('\'') => return Ok(()),
                Some('\\') if self.dialect == Dialect::Fish => match self.peek() {
                    Some(c @ ('\'' | '\\')) => {
                        self.pos += 1;
                        w.text.push(c);
                    }
                    _ => w.text.push('\\'),
                },
                Some(c) => w.text.push(c),
            }
        }
    }

    fn double_quoted(&mut self, w: &mut Word) -> Result<(), ShellError> {
        let at = self.pos;
        self.pos += 1;
        w.quoted = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(ShellError::UnterminatedQuote { quote: '"', at });
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(());
                }
                '\\' => {
                    self.pos += 1;
                    match self.bump() {
                        Some('\n') => {}
                        Some(e @ ('$' | '`' | '"' | '\\')) => w.text.push(e),
                        Some(e) => {
                            w.text.push('\\');
                            w.text.push(e);
                        }
                        None => return Err(ShellError::UnterminatedQuote { quote: '"', at }),
                    }
                }
                '$' => self.dollar(w, true)?,
                '`' if self.dialect == Dialect::Posix => self.backtick(w)?,
                _ => {
                    w.text.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// At `$`: an expansion, a substitution, `$'…'`, or a literal dollar sign.
    fn dollar(&mut self, w: &mut Word, in_double_quotes: bool) -> Result<(), ShellError> {
        let at = self.pos;
        match self.byte_at(1) {
            Some(b'(') => {
                // `$((…))` is arithmetic unless the parentheses turn out to be a subshell
                // inside a command substitution (`$((cd a); b)`).
                if self.byte_at(2) == Some(b'(')
                    && let Some(close) = self.matching_paren(at + 2)?
                    && self.src.as_bytes().get(close + 1) == Some(&b')')
                {
                    self.pos = close + 2;
                    w.text.push_str(self.slice(at, self.pos));
                    w.expanded = true;
                    return Ok(());
                }
                self.pos += 2;
                self.substitution(w, at, 2)
            }
            Some(b'{') => {
                self.pos += 2;
                self.braced_parameter(at)?;
                w.text.push_str(self.slice(at, self.pos));
                w.expanded = true;
                Ok(())
            }
            Some(b'\'') if !in_double_quotes && self.dialect == Dialect::Posix => {
                self.pos += 2;
                self.ansi_c_quoted(w, at)
            }
            Some(b'"') if !in_double_quotes && self.dialect == Dialect::Posix => {
                // `$"…"` is a translatable string: for our purpose, a double-quoted one.
                self.pos += 1;
                self.double_quoted(w)
            }
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                self.pos += 1;
                let len = self
                    .rest()
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    .count();
                self.pos += len;
                w.text.push_str(self.slice(at, self.pos));
                w.expanded = true;
                Ok(())
            }
            Some(b'0'..=b'9' | b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') => {
                self.pos += 2;
                w.text.push_str(self.slice(at, self.pos));
                w.expanded = true;
                Ok(())
            }
            _ => {
                self.pos += 1;
                w.text.push('$');
                Ok(())
            }
        }
    }

    /// After `${`: skips to the matching `}`.
    fn braced_parameter(&mut self, at: usize) -> Result<(), ShellError> {
        let mut depth = 1usize;
        let mut quote: Option<char> = None;
        while let Some(c) = self.bump() {
            self.budget = self
                .budget
                .checked_sub(1)
                .ok_or(ShellError::TooDeep { at })?;
            match (quote, c) {
                (Some('\''), '\'') => quote = None,
                (Some('\''), _) => {}
                (_, '\\') => {
                    self.bump();
                }
                (Some(_), '"') => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '{') => depth += 1,
                (None, '}') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        Err(ShellError::UnterminatedExpansion { at })
    }

    /// After `$'`: an ANSI-C quoted string.
    fn ansi_c_quoted(&mut self, w: &mut Word, at: usize) -> Result<(), ShellError> {
        w.quoted = true;
        loop {
            match self.bump() {
                None => return Err(ShellError::UnterminatedQuote { quote: '\'', at }),
                Some('\'') => return Ok(()),
                Some('\\') => {
                    let Some(e) = self.bump() else {
                        return Err(ShellError::UnterminatedQuote { quote: '\'', at });
                    };
                    match e {
                        'n' => w.text.push('\n'),
                        't' => w.text.push('\t'),
                        'r' => w.text.push('\r'),
                        'a' => w.text.push('\x07'),
                        'b' => w.text.push('\x08'),
                        'e' | 'E' => w.text.push('\x1b'),
                        'f' => w.text.push('\x0c'),
                        'v' => w.text.push('\x0b'),
                        '\\' | '\'' | '"' | '?' => w.text.push(e),
                        'x' => self.push_code(w, 16, 2, "\\x"),
                        'u' => self.push_code(w, 16, 4, "\\u"),
                        'U' => self.push_code(w, 16, 8, "\\U"),
                        '0'..='7' => {
                            self.pos -= 1;
                            self.push_code(w, 8, 3, "\\");
                        }
                        other => {
                            w.text.push('\\');
                            w.text.push(other);
                        }
                    }
                }
                Some(c) => w.text.push(c),
            }
        }
    }

    /// Reads up to `max` digits in `radix` and pushes the character they encode; with no
    /// digits (or no such character) the escape stays as written.
    fn push_code(&mut self, w: &mut Word, radix: u32, max: usize, escape: &str) {
        let digits: String = self
            .rest()
            .chars()
            .take(max)
            .take_while(|c| c.is_digit(radix))
            .collect();
        self.pos += digits.len();
        match u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32)
        {
            Some(c) if !digits.is_empty() => w.text.push(c),
            _ => {
                w.text.push_str(escape);
                w.text.push_str(&digits);
            }
        }
    }

    /// At a backtick: an old-style command substitution, opaque.
    fn backtick(&mut self, w: &mut Word) -> Result<(), ShellError> {
        let at = self.pos;
        self.pos += 1;
        loop {
            match self.bump() {
                None => return Err(ShellError::UnterminatedSubstitution { at }),
                Some('\\') => {
                    self.bump();
                }
                Some('`') => break,
                Some(_) => {}
            }
        }
        w.text.push_str(self.slice(at, self.pos));
        w.substitutions
            .push(self.slice(at + 1, self.pos - 1).to_owned());
        w.expanded = true;
        Ok(())
    }

    /// After an opening `$(`, `<(`, `>(` or fish `(` of `open_len` bytes at `at`: parses the
    /// inside (so quotes, here-documents and `case` patterns in it cannot fool the search for
    /// the closing parenthesis) and adds the whole substitution to the word.
    fn substitution(&mut self, w: &mut Word, at: usize, open_len: usize) -> Result<(), ShellError> {
        if self.depth >= MAX_DEPTH {
            return Err(ShellError::TooDeep { at });
        }
        self.depth += 1;
        let inner = at + open_len;
        let result = Parser::new(self, Some(at)).run();
        self.depth -= 1;
        result?;
        w.text.push_str(self.slice(at, self.pos));
        w.substitutions
            .push(self.slice(inner, self.pos.saturating_sub(1)).to_owned());
        w.expanded = true;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Parser

/// A compound command that must be closed.
enum Ctx {
    Subshell { saved_cd: Option<String> },
    Brace,
    Case,
}

/// What the parser expects next, beyond ordinary commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Normal,
    /// After `for`/`select`: the variable.
    ForName,
    /// After the variable: `in`, `do` or a separator.
    ForAfterName,
    /// Words to skip up to the next `;` or newline (a `for` list, a fish `case` or `function`);
    /// what they belong to, for the error when the line ends first.
    SkipToSeparator(&'static str),
    /// After `case`: the subject.
    CaseSubject,
    /// After the subject: `in`.
    CaseIn,
    /// Patterns of a `case` item, up to `)`.
    CasePattern,
    /// After `function`: the name.
    FunctionName,
    /// After the name: optional `()`.
    FunctionParens,
    /// After `name(`: the `)`.
    FunctionClose,
    /// Inside `[[ … ]]`.
    Cond,
}

#[derive(Default)]
struct Builder {
    assignments: Vec<Assignment>,
    words: Vec<Word>,
    redirections: Vec<Redirection>,
}

impl Builder {
    fn is_empty(&self) -> bool {
        self.assignments.is_empty() && self.words.is_empty() && self.redirections.is_empty()
    }

    fn at_command_start(&self) -> bool {
        self.assignments.is_empty() && self.words.is_empty()
    }
}

struct Parser<'l, 'a> {
    lx: &'l mut Lexer<'a>,
    /// Inside a command substitution opened at this offset: an unmatched `)` ends it.
    nested: Option<usize>,
    out: Vec<SimpleCommand>,
    cur: Builder,
    ctx: Vec<Ctx>,
    state: State,
    /// After `&&`, `||` or `|`: a command must follow.
    need_command: bool,
    /// A compound command just ended: an operator may follow without a simple command.
    closed: bool,
    /// The previous command's output goes into the next one.
    piped: bool,
    cd: Option<String>,
}

/// Whether a token was used by a state, or must be handled as in [`State::Normal`].
enum Flow {
    Consumed,
    Normal(Tok, usize),
}

impl<'l, 'a> Parser<'l, 'a> {
    fn new(lx: &'l mut Lexer<'a>, nested: Option<usize>) -> Self {
        Parser {
            lx,
            nested,
            out: Vec::new(),
            cur: Builder::default(),
            ctx: Vec::new(),
            state: State::Normal,
            need_command: false,
            closed: false,
            piped: false,
            cd: None,
        }
    }

    fn run(mut self) -> Result<Vec<SimpleCommand>, ShellError> {
        loop {
            let (tok, at) = self.lx.next()?;
            let (tok, at) = match self.in_state(tok, at)? {
                Flow::Consumed => continue,
                Flow::Normal(tok, at) => (tok, at),
            };
            match tok {
                Tok::End => {
                    self.end()?;
                    return Ok(self.out);
                }
                Tok::Word(w) => self.word(w, at)?,
                Tok::Redir(r) => {
                    // A redirection of a whole compound command (`done < file`) applies to
                    // commands already emitted; it is dropped.
                    if !(self.cur.is_empty() && self.closed) {
                        self.cur.redirections.push(r);
                        self.need_command = false;
                    }
                }
                Tok::Arith => {
                    if !self.cur.is_empty() {
                        return Err(unexpected("((", at));
                    }
                    self.closed = true;
                    self.need_command = false;
                }
                Tok::Op(op) => {
                    if self.op(op, at)? {
                        return Ok(self.out);
                    }
                }
            }
        }
    }

    /// Handles a token in the states other than [`State::Normal`].
    fn in_state(&mut self, tok: Tok, at: usize) -> Result<Flow, ShellError> {
        let plain_word =
            |tok: &Tok, text: &str| matches!(tok, Tok::Word(w) if w.is_plain() && w.text == text);
        match self.state {
            State::Normal => return Ok(Flow::Normal(tok, at)),
            State::ForName => match tok {
                Tok::Word(_) => self.state = State::ForAfterName,
                Tok::Arith | Tok::Op(Op::Newline | Op::Semi) => self.state = State::Normal,
                Tok::End => return Err(ShellError::Unclosed { what: "for loop" }),
                other => return Err(unexpected_tok(&other, at)),
            },
            State::ForAfterName => {
                if plain_word(&tok, "in") {
                    self.state = State::SkipToSeparator("for loop");
                } else if plain_word(&tok, "do") {
                    self.state = State::Normal;
                } else {
                    match tok {
                        Tok::Op(Op::Newline | Op::Semi) => self.state = State::Normal,
                        Tok::End => return Err(ShellError::Unclosed { what: "for loop" }),
                        other => return Err(unexpected_tok(&other, at)),
                    }
                }
            }
            State::SkipToSeparator(what) => match tok {
                Tok::Word(_) | Tok::Redir(_) => {}
                Tok::Op(Op::Newline | Op::Semi) => self.state = State::Normal,
                Tok::End => return Err(ShellError::Unclosed { what }),
                other => return Err(unexpected_tok(&other, at)),
            },
            State::CaseSubject => match tok {
                Tok::Word(_) => self.state = State::CaseIn,
                Tok::Op(Op::Newline) => {}
                Tok::End => return Err(ShellError::Unclosed { what: "case" }),
                other => return Err(unexpected_tok(&other, at)),
            },
            State::CaseIn => {
                if plain_word(&tok, "in") {
                    self.ctx.push(Ctx::Case);
                    self.state = State::CasePattern;
                } else {
                    match tok {
                        Tok::Op(Op::Newline) => {}
                        Tok::End => return Err(ShellError::Unclosed { what: "case" }),
                        other => return Err(unexpected_tok(&other, at)),
                    }
                }
            }
            State::CasePattern => {
                if plain_word(&tok, "esac") {
                    if let Some(Ctx::Case) = self.ctx.last() {
                        self.ctx.pop();
                    }
                    self.state = State::Normal;
                    self.closed = true;
                } else {
                    match tok {
                        Tok::Word(_) | Tok::Op(Op::Pipe | Op::LParen | Op::Newline | Op::Semi) => {}
                        Tok::Op(Op::RParen) => self.state = State::Normal,
                        Tok::End => return Err(ShellError::Unclosed { what: "case" }),
                        other => return Err(unexpected_tok(&other, at)),
                    }
                }
            }
            State::FunctionName => match tok {
                Tok::Word(_) => self.state = State::FunctionParens,
                Tok::End => return Err(ShellError::Unclosed { what: "function" }),
                other => return Err(unexpected_tok(&other, at)),
            },
            State::FunctionParens => match tok {
                Tok::Op(Op::LParen) => self.state = State::FunctionClose,
                Tok::Op(Op::Newline) => {}
                Tok::End => return Err(ShellError::Unclosed { what: "function" }),
                other => {
                    self.state = State::Normal;
                    return Ok(Flow::Normal(other, at));
                }
            },
            State::FunctionClose => match tok {
                Tok::Op(Op::RParen) => self.state = State::Normal,
                Tok::End => return Err(ShellError::Unclosed { what: "function" }),
                other => return Err(unexpected_tok(&other, at)),
            },
            State::Cond => match tok {
                Tok::Word(w) => {
                    let end = w.is_plain() && w.text == "]]";
                    self.cur.words.push(w);
                    if end {
                        self.state = State::Normal;
                    }
                }
                Tok::Op(Op::Newline) => {}
                Tok::Op(op @ (Op::And | Op::Or | Op::LParen | Op::RParen | Op::Pipe)) => {
                    self.cur.words.push(Word::literal(op.as_str()));
                }
                Tok::Redir(r) => {
                    // `<` and `>` compare strings inside `[[ ]]`.
                    self.cur.words.push(Word::literal(r.op.as_str()));
                    self.cur.words.push(r.target);
                }
                Tok::End => return Err(ShellError::Unclosed { what: "[[" }),
                other => return Err(unexpected_tok(&other, at)),
            },
        }
        Ok(Flow::Consumed)
    }

    fn word(&mut self, w: Word, at: usize) -> Result<(), ShellError> {
        if self.cur.at_command_start() && w.is_plain() && self.keyword(&w.text, at)? {
            return Ok(());
        }
        if self.cur.words.is_empty()
            && let Some(mut assignment) = as_assignment(&w)
        {
            if w.raw.ends_with('=') && self.lx.byte_at(0) == Some(b'(') {
                assignment.value = self.array_value()?;
            }
            self.cur.assignments.push(assignment);
        } else {
            if self.closed && self.cur.is_empty() {
                // `(a) b`, `fi x`: a word cannot follow a compound command.
                return Err(unexpected(&w.raw, at));
            }
            self.cur.words.push(w);
        }
        self.need_command = false;
        self.closed = false;
        Ok(())
    }

    /// Handles a reserved word at the start of a command; false if `text` is not one.
    fn keyword(&mut self, text: &str, at: usize) -> Result<bool, ShellError> {
        let fish = self.lx.dialect == Dialect::Fish;
        match text {
            "if" | "while" | "until" | "!" => {}
            "then" | "do" | "elif" if !fish => {}
            "else" => {}
            "fi" | "done" if !fish => self.close_compound(),
            "end" if fish => self.close_compound(),
            "{" if !fish => {
                self.ctx.push(Ctx::Brace);
                self.need_command = false;
            }
            "}" if !fish => {
                if let Some(Ctx::Brace) = self.ctx.last() {
                    self.ctx.pop();
                    self.close_compound();
                } else {
                    return Err(unexpected("}", at));
                }
            }
            "esac" if !fish => {
                if let Some(Ctx::Case) = self.ctx.last() {
                    self.ctx.pop();
                    self.close_compound();
                } else {
                    return Err(unexpected("esac", at));
                }
            }
            "for" | "select" => self.state = State::ForName,
            "case" if !fish => self.state = State::CaseSubject,
            "function" if !fish => self.state = State::FunctionName,
            "[[" if !fish => {
                self.cur.words.push(Word::literal("[["));
                self.state = State::Cond;
                self.need_command = false;
            }
            "not" | "begin" if fish => {}
            "and" | "or" if fish => {
                // `a; and b` is fish for `a && b`.
                if let Some(last) = self.out.last_mut()
                    && last.connector == Some(Connector::Seq)
                {
                    last.connector = Some(if text == "and" {
                        Connector::And
                    } else {
                        Connector::Or
                    });
                }
            }
            "switch" | "case" | "function" if fish => {
                self.state = State::SkipToSeparator("fish block");
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn close_compound(&mut self) {
        self.closed = true;
        self.need_command = false;
    }

    /// After `NAME=` with `(` next: the array's words up to `)`.
    fn array_value(&mut self) -> Result<Word, ShellError> {
        let (open, at) = self.lx.next()?;
        if !matches!(open, Tok::Op(Op::LParen)) {
            return Err(unexpected_tok(&open, at));
        }
        let start = self.lx.pos.saturating_sub(1);
        let mut items = Vec::new();
        let mut w = Word::default();
        loop {
            match self.lx.next()? {
                (Tok::Word(item), _) => {
                    w.quoted |= item.quoted;
                    w.expanded |= item.expanded;
                    w.substitutions.extend(item.substitutions);
                    items.push(item.text);
                }
                (Tok::Op(Op::Newline), _) => {}
                (Tok::Op(Op::RParen), _) => break,
                (Tok::End, _) => return Err(ShellError::Unclosed { what: "array" }),
                (other, at) => return Err(unexpected_tok(&other, at)),
            }
        }
        w.text = format!("({})", items.join(" "));
        w.raw = self.lx.slice(start, self.lx.pos).to_owned();
        Ok(w)
    }

    /// Handles an operator; true when it ends the command substitution being parsed.
    fn op(&mut self, op: Op, at: usize) -> Result<bool, ShellError> {
        match op {
            Op::And | Op::Or | Op::Pipe => {
                let connector = match op {
                    Op::And => Connector::And,
                    Op::Or => Connector::Or,
                    _ => Connector::Pipe,
                };
                if !self.cur.is_empty() {
                    self.emit(Some(connector));
                } else if self.closed {
                    self.attach(connector);
                } else {
                    return Err(unexpected(op.as_str(), at));
                }
                self.need_command = true;
                self.closed = false;
            }
            Op::Semi | Op::Newline | Op::Amp => {
                if self.need_command {
                    if op == Op::Newline {
                        return Ok(false);
                    }
                    return Err(unexpected(op.as_str(), at));
                }
                let connector = if op == Op::Amp {
                    Connector::Background
                } else {
                    Connector::Seq
                };
                if !self.cur.is_empty() {
                    self.emit(Some(connector));
                } else if self.closed {
                    self.attach(connector);
                } else if op == Op::Amp {
                    return Err(unexpected("&", at));
                }
                self.closed = false;
            }
            Op::CaseEnd => {
                if !matches!(self.ctx.last(), Some(Ctx::Case)) || self.need_command {
                    return Err(unexpected(op.as_str(), at));
                }
                if !self.cur.is_empty() {
                    self.emit(Some(Connector::Seq));
                }
                self.state = State::CasePattern;
                self.closed = false;
            }
            Op::LParen => {
                if self.cur.is_empty() && !self.closed {
                    if self.ctx.len() + self.lx.depth >= MAX_DEPTH {
                        return Err(ShellError::TooDeep { at });
                    }
                    self.ctx.push(Ctx::Subshell {
                        saved_cd: self.cd.clone(),
                    });
                    self.need_command = false;
                } else if self.cur.words.len() == 1
                    && self.cur.assignments.is_empty()
                    && self.cur.redirections.is_empty()
                {
                    // `name() { …; }`: a function definition; its body's commands follow.
                    self.cur = Builder::default();
                    self.state = State::FunctionClose;
                } else {
                    return Err(unexpected("(", at));
                }
            }
            Op::RParen => {
                if self.need_command {
                    return Err(unexpected(")", at));
                }
                if let Some(Ctx::Subshell { .. }) = self.ctx.last() {
                    if !self.cur.is_empty() {
                        self.emit(None);
                    }
                    if let Some(Ctx::Subshell { saved_cd }) = self.ctx.pop() {
                        self.cd = saved_cd;
                    }
                    self.closed = true;
                } else if self.nested.is_some() && self.ctx.is_empty() {
                    if !self.cur.is_empty() {
                        self.emit(None);
                    }
                    return Ok(true);
                } else {
                    return Err(unexpected(")", at));
                }
            }
        }
        Ok(false)
    }

    /// Ends the current command with `connector`; a `cd DIR` that leads into more commands is
    /// recorded as their directory instead.
    fn emit(&mut self, connector: Option<Connector>) {
        let b = std::mem::take(&mut self.cur);
        let in_pipeline = self.piped || connector == Some(Connector::Pipe);
        self.piped = connector == Some(Connector::Pipe);
        if !in_pipeline
            && matches!(connector, Some(Connector::And | Connector::Seq))
            && b.assignments.is_empty()
            && b.redirections.is_empty()
            && let Some(dir) = cd_target(&b.words)
        {
            self.cd = Some(resolve_dir(self.cd.as_deref(), &dir));
            return;
        }
        let in_subshell = self.ctx.iter().any(|c| matches!(c, Ctx::Subshell { .. }));
        self.out.push(SimpleCommand {
            assignments: b.assignments,
            words: b.words,
            redirections: b.redirections,
            connector,
            in_pipeline,
            in_subshell,
            cd: self.cd.clone(),
        });
    }

    /// An operator after a compound command applies to the last command inside it.
    fn attach(&mut self, connector: Connector) {
        if let Some(last) = self.out.last_mut()
            && last.connector.is_none()
        {
            last.connector = Some(connector);
            if connector == Connector::Pipe {
                last.in_pipeline = true;
            }
        }
        self.piped = connector == Connector::Pipe;
    }

    fn end(&mut self) -> Result<(), ShellError> {
        if let Some(at) = self.nested {
            return Err(ShellError::UnterminatedSubstitution { at });
        }
        if self.need_command {
            return Err(ShellError::UnexpectedEnd);
        }
        if let Some(ctx) = self.ctx.last() {
            let what = match ctx {
                Ctx::Subshell { .. } => "subshell",
                Ctx::Brace => "brace group",
                Ctx::Case => "case",
            };
            return Err(ShellError::Unclosed { what });
        }
        if !self.cur.is_empty() {
            self.emit(None);
        }
        Ok(())
    }
}

fn unexpected(token: &str, at: usize) -> ShellError {
    ShellError::UnexpectedToken {
        token: token.to_owned(),
        at,
    }
}

fn unexpected_tok(tok: &Tok, at: usize) -> ShellError {
    match tok {
        Tok::Word(w) => unexpected(&w.raw, at),
        Tok::Op(op) => unexpected(op.as_str(), at),
        Tok::Redir(r) => unexpected(r.op.as_str(), at),
        Tok::Arith => unexpected("((", at),
        Tok::End => ShellError::UnexpectedEnd,
    }
}

/// `NAME=value` or `NAME+=value` with an unquoted valid name.
fn as_assignment(w: &Word) -> Option<Assignment> {
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
        },
        append,
    })
}

/// The directory of a foldable `cd`/`pushd` command: `cd`, `cd DIR`, `cd -P DIR`; not `cd -`.
fn cd_target(words: &[Word]) -> Option<String> {
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
mod tests {
    use super::*;

    fn words(cmd: &SimpleCommand) -> Vec<&str> {
        cmd.words.iter().map(|w| w.text.as_str()).collect()
    }

    fn argvs(line: &str) -> Vec<Vec<String>> {
        parse(line)
            .unwrap_or_else(|e| panic!("{line:?}: {e}"))
            .iter()
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .collect()
    }

    #[test]
    fn words_and_quotes_table() {
        let cases: &[(&str, &[&str])] = &[
            ("cargo test -p foo", &["cargo", "test", "-p", "foo"]),
            ("echo 'a b' \"c d\"", &["echo", "a b", "c d"]),
            ("echo a\\ b", &["echo", "a b"]),
            (r#"echo "a \"q\" \$x \\ \n""#, &["echo", r#"a "q" $x \ \n"#]),
            ("echo 'it''s'", &["echo", "its"]),
            ("echo \"it's\"", &["echo", "it's"]),
            ("echo pre'mid'\"post\"", &["echo", "premidpost"]),
            ("echo $'a\\tb\\x41\\u00e9\\101'", &["echo", "a\tbAéA"]),
            (
                "echo $HOME/x ${A:-b} $1 $?",
                &["echo", "$HOME/x", "${A:-b}", "$1", "$?"],
            ),
            ("echo $ a$", &["echo", "$", "a$"]),
            ("echo a#b # comment", &["echo", "a#b"]),
            ("echo a\\\nb", &["echo", "ab"]),
            ("echo one \\\n two", &["echo", "one", "two"]),
            ("echo é ü 日本", &["echo", "é", "ü", "日本"]),
            ("grep -n \"fn (\" src", &["grep", "-n", "fn (", "src"]),
            ("echo {a,b}.rs", &["echo", "{a,b}.rs"]),
            ("echo trailing\\", &["echo", "trailing\\"]),
        ];
        for (line, expected) in cases {
            let got = argvs(line);
            assert_eq!(got.len(), 1, "{line:?}: {got:?}");
            assert_eq!(&got[0], expected, "{line:?}");
        }
    }

    #[test]
    fn quoting_and_expansion_flags() {
        let cmds = parse("echo plain 'q' $V \"$(date)\" `id` <(sort a)").unwrap();
        let flags: Vec<(bool, bool)> = cmds[0]
            .words
            .iter()
            .map(|w| (w.quoted, w.expanded))
            .collect();
        assert_eq!(
            flags,
            [
                (false, false),
                (false, false),
                (true, false),
                (false, true),
                (true, true),
                (false, true),
                (false, true)
            ]
        );
        let subs: Vec<&[String]> = cmds[0]
            .words
            .iter()
            .map(|w| w.substitutions.as_slice())
            .collect();
        assert_eq!(subs[4], ["date"]);
        assert_eq!(subs[5], ["id"]);
        assert_eq!(subs[6], ["sort a"]);
        assert_eq!(cmds[0].words[4].text, "$(date)");
        assert!(cmds[0].has_substitution());
        assert!(!parse("echo a").unwrap()[0].has_substitution());
    }

    #[test]
    fn operators_connectors_and_pipelines() {
        let cmds = parse("a && b || c; d & e | f |& g\nh").unwrap();
        let got: Vec<(&str, Option<Connector>, bool)> = cmds
            .iter()
            .map(|c| (c.words[0].text.as_str(), c.connector, c.in_pipeline))
            .collect();
        assert_eq!(
            got,
            [
                ("a", Some(Connector::And), false),
                ("b", Some(Connector::Or), false),
                ("c", Some(Connector::Seq), false),
                ("d", Some(Connector::Background), false),
                ("e", Some(Connector::Pipe), true),
                ("f", Some(Connector::Pipe), true),
                ("g", Some(Connector::Seq), true),
                ("h", None, false),
            ]
        );
        // No spaces needed around operators; a newline may follow `&&`.
        assert_eq!(argvs("a&&b|c"), [["a"], ["b"], ["c"]]);
        assert_eq!(argvs("a &&\n  b"), [["a"], ["b"]]);
    }

    #[test]
    fn redirections_table() {
        let cases: &[(&str, Option<u32>, RedirOp, &str)] = &[
            ("cmd > out.txt", None, RedirOp::Write, "out.txt"),
            ("cmd >> log", None, RedirOp::Append, "log"),
            ("cmd < in", None, RedirOp::Read, "in"),
            ("cmd 2> err", Some(2), RedirOp::Write, "err"),
            ("cmd 2>&1", Some(2), RedirOp::DupOut, "1"),
            ("cmd >&2", None, RedirOp::DupOut, "2"),
            ("cmd &> all", None, RedirOp::WriteAll, "all"),
            ("cmd &>> all", None, RedirOp::AppendAll, "all"),
            (
                "cmd <<< 'some text'",
                None,
                RedirOp::HereString,
                "some text",
            ),
            ("cmd >| f", None, RedirOp::Clobber, "f"),
            ("cmd <> f", None, RedirOp::ReadWrite, "f"),
            ("cmd 0<&3", Some(0), RedirOp::DupIn, "3"),
            ("cmd 2>/dev/null", Some(2), RedirOp::Write, "/dev/null"),
            ("cmd >\"a b\"", None, RedirOp::Write, "a b"),
        ];
        for (line, fd, op, target) in cases {
            let cmds = parse(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
            assert_eq!(cmds.len(), 1, "{line:?}");
            assert_eq!(words(&cmds[0]), ["cmd"], "{line:?}");
            let r = &cmds[0].redirections[0];
            assert_eq!(
                (r.fd, r.op, r.target.text.as_str()),
                (*fd, *op, *target),
                "{line:?}"
            );
        }
        // A number not touching the operator is an argument.
        let cmds = parse("head -n 2 > x").unwrap();
        assert_eq!(words(&cmds[0]), ["head", "-n", "2"]);
        assert!(RedirOp::Append.writes() && !RedirOp::Read.writes());
    }

    #[test]
    fn here_documents_are_kept_apart_from_the_words() {
        let line = "cat > types/state.ts << 'EOF'\nimport { x } from './y';\n(unbalanced \"quote\nEOF\nnpx tsc --noEmit";
        let cmds = parse(line).unwrap();
        assert_eq!(words(&cmds[0]), ["cat"]);
        assert_eq!(cmds[0].redirections.len(), 2);
        assert_eq!(
            cmds[0].redirections[1].op,
            RedirOp::HereDoc { strip_tabs: false }
        );
        assert_eq!(cmds[0].redirections[1].target.text, "EOF");
        assert_eq!(
            cmds[0].redirections[1].body.as_deref(),
            Some("import { x } from './y';\n(unbalanced \"quote\n")
        );
        assert_eq!(cmds[0].redirections[0].body, None);
        assert_eq!(words(&cmds[1]), ["npx", "tsc", "--noEmit"]);

        // `<<-` strips tabs before the delimiter; two here-documents on one line.
        let cmds = parse("a <<-X <<Y\n\tbody\n\tX\nbody 2\nY\nb").unwrap();
        assert_eq!(argvs_of(&cmds), [vec!["a"], vec!["b"]]);
        let bodies: Vec<_> = cmds[0]
            .redirections
            .iter()
            .map(|r| r.body.as_deref())
            .collect();
        assert_eq!(bodies, [Some("body\n"), Some("body 2\n")]);

        // A here-document inside a command substitution inside double quotes.
        let line = "git commit -m \"$(cat <<'EOF'\nFix (it's broken\n\nEOF\n)\" && git push";
        let cmds = parse(line).unwrap();
        assert_eq!(cmds.len(), 2);
        assert_eq!(words(&cmds[0])[..3], ["git", "commit", "-m"]);
        assert!(cmds[0].words[3].text.starts_with("$(cat <<'EOF'"));
        assert!(cmds[0].redirections.is_empty());
        assert_eq!(words(&cmds[1]), ["git", "push"]);

        // A body without its delimiter runs to the end.
        let cmds = parse("cat <<EOF\nno end here").unwrap();
        assert_eq!(cmds.len(), 1);
        assert_eq!(
            cmds[0].redirections[0].body.as_deref(),
            Some("no end here\n")
        );
    }

    fn argvs_of(cmds: &[SimpleCommand]) -> Vec<Vec<&str>> {
        cmds.iter().map(words).collect()
    }

    #[test]
    fn assignments_lead_commands() {
        let cmds = parse("RUST_LOG=debug A+=1 B= cargo test X=1").unwrap();
        let c = &cmds[0];
        let names: Vec<(&str, &str, bool)> = c
            .assignments
            .iter()
            .map(|a| (a.name.as_str(), a.value.text.as_str(), a.append))
            .collect();
        assert_eq!(
            names,
            [
                ("RUST_LOG", "debug", false),
                ("A", "1", true),
                ("B", "", false)
            ]
        );
        // After the program, `X=1` is an ordinary argument.
        assert_eq!(words(c), ["cargo", "test", "X=1"]);
        let cmds = parse("V=\"a b\" cmd").unwrap();
        assert_eq!(cmds[0].assignments[0].value.text, "a b");
        assert!(cmds[0].assignments[0].value.quoted);
        // Not assignments: a quoted name, a name starting with a digit.
        assert_eq!(words(&parse("'A'=1 x").unwrap()[0]), ["A=1", "x"]);
        assert_eq!(words(&parse("1A=1 x").unwrap()[0]), ["1A=1", "x"]);
        // Assignment-only command and array assignment.
        let cmds = parse("arr=(a \"b c\") ; echo").unwrap();
        assert!(cmds[0].words.is_empty());
        assert_eq!(cmds[0].assignments[0].value.text, "(a b c)");
        assert_eq!(words(&cmds[1]), ["echo"]);
    }

    #[test]
    fn cd_prefixes_become_the_directory() {
        let cmds = parse("cd /path/to/app && npx tsc --noEmit").unwrap();
        assert_eq!(cmds.len(), 1);
        assert_eq!(cmds[0].cd.as_deref(), Some("/path/to/app"));

        let cmds = parse("cd a && cd ../b; make && cd c && make test").unwrap();
        assert_eq!(argvs_of(&cmds), [vec!["make"], vec!["make", "test"]]);
        assert_eq!(cmds[0].cd.as_deref(), Some("b"));
        assert_eq!(cmds[1].cd.as_deref(), Some("b/c"));

        // A subshell's cd does not outlive it.
        let cmds = parse("(cd web && npm test) && npm run lint").unwrap();
        assert_eq!(cmds[0].cd.as_deref(), Some("web"));
        assert!(cmds[0].in_subshell);
        assert_eq!(cmds[1].cd, None);
        assert!(!cmds[1].in_subshell);

        // Kept as commands: a lone cd, `cd -`, cd in a pipeline, cd followed by `||`.
        assert_eq!(argvs("cd foo"), [["cd", "foo"]]);
        assert_eq!(parse("cd - && ls").unwrap().len(), 2);
        assert_eq!(parse("cd x || exit 1").unwrap().len(), 2);
        let cmds = parse("cd && ls").unwrap();
        assert_eq!(cmds[0].cd.as_deref(), Some("~"));
        let cmds = parse("cd -P \"my dir\"; ls").unwrap();
        assert_eq!(cmds[0].cd.as_deref(), Some("my dir"));
    }

    #[test]
    fn compound_commands_keep_inner_commands() {
        let cases: &[(&str, &[&[&str]])] = &[
            (
                "if cargo test; then echo ok; else echo no; fi",
                &[&["cargo", "test"], &["echo", "ok"], &["echo", "no"]],
            ),
            (
                "for f in *.rs; do wc -l \"$f\"; done",
                &[&["wc", "-l", "$f"]],
            ),
            ("for f in a b\ndo\n  echo $f\ndone", &[&["echo", "$f"]]),
            (
                "for ((i=0; i<3; i++)); do echo $i; done",
                &[&["echo", "$i"]],
            ),
            (
                "while read l; do echo \"$l\"; done < in.txt",
                &[&["read", "l"], &["echo", "$l"]],
            ),
            (
                "{ make; make install; } > log",
                &[&["make"], &["make", "install"]],
            ),
            (
                "case $x in a|b) echo ab;; (c) echo c;& *) echo other;; esac",
                &[&["echo", "ab"], &["echo", "c"], &["echo", "other"]],
            ),
            (
                "case $1 in\n  start) run ;;\nesac && done_it",
                &[&["run"], &["done_it"]],
            ),
            ("f() { echo hi; }; f", &[&["echo", "hi"], &["f"]]),
            ("function g { ls; }", &[&["ls"]]),
            (
                "[[ -f a && $b < c ]] && echo yes",
                &[
                    &["[[", "-f", "a", "&&", "$b", "<", "c", "]]"],
                    &["echo", "yes"],
                ],
            ),
            ("(( x > 2 )) && echo big", &[&["echo", "big"]]),
            ("! grep -q x f", &[&["grep", "-q", "x", "f"]]),
            ("echo $((1 + (2 * 3)))", &[&["echo", "$((1 + (2 * 3)))"]]),
            ("x=$(case a in a) echo A;; esac) && y", &[&[], &["y"]]),
            ("echo done fi then", &[&["echo", "done", "fi", "then"]]),
            ("((cd a && make) ; (cd b))", &[&["make"], &["cd", "b"]]),
        ];
        for (line, expected) in cases {
            let got = argvs(line);
            assert_eq!(&got, expected, "{line:?}");
        }
        let cmds = parse("(a; b) | c").unwrap();
        assert_eq!(cmds[1].connector, Some(Connector::Pipe));
        assert!(cmds[2].in_pipeline);
        let cmds = parse("if a; then b; fi && c").unwrap();
        assert_eq!(argvs_of(&cmds), [vec!["a"], vec!["b"], vec!["c"]]);
    }

    #[test]
    fn fish_dialect() {
        let cmds = parse_dialect("git commit -m (date +%s); and git push", Dialect::Fish).unwrap();
        assert_eq!(words(&cmds[0]), ["git", "commit", "-m", "(date +%s)"]);
        assert_eq!(cmds[0].words[3].substitutions, ["date +%s"]);
        assert_eq!(cmds[0].connector, Some(Connector::And));
        assert_eq!(words(&cmds[1]), ["git", "push"]);
        let cmds = parse_dialect("echo 'it\\'s' a\\\\b", Dialect::Fish).unwrap();
        assert_eq!(words(&cmds[0]), ["echo", "it's", "a\\b"]);
        let cmds = parse_dialect(
            "for f in *.fish; source $f; end; if test -d x; cd x; end",
            Dialect::Fish,
        )
        .unwrap();
        // `cd x;` leads into more commands: it is folded, not a command.
        assert_eq!(
            argvs_of(&cmds),
            [vec!["source", "$f"], vec!["test", "-d", "x"]]
        );
        // The same line is an error in POSIX syntax.
        assert!(parse("git commit -m (date)").is_err());
    }

    #[test]
    fn errors_table() {
        let cases: &[(&str, ShellError)] = &[
            (
                "echo 'abc",
                ShellError::UnterminatedQuote { quote: '\'', at: 5 },
            ),
            (
                "echo \"abc",
                ShellError::UnterminatedQuote { quote: '"', at: 5 },
            ),
            (
                "echo $'abc",
                ShellError::UnterminatedQuote { quote: '\'', at: 5 },
            ),
            (
                "echo $(date",
                ShellError::UnterminatedSubstitution { at: 5 },
            ),
            ("echo `date", ShellError::UnterminatedSubstitution { at: 5 }),
            (
                "echo \"$(date\"",
                ShellError::UnterminatedQuote { quote: '"', at: 12 },
            ),
            ("echo ${HOME", ShellError::UnterminatedExpansion { at: 5 }),
            ("cat >", ShellError::MissingRedirectionTarget { at: 4 }),
            ("cat > | x", ShellError::MissingRedirectionTarget { at: 4 }),
            (
                "&& ls",
                ShellError::UnexpectedToken {
                    token: "&&".into(),
                    at: 0,
                },
            ),
            (
                "ls && && pwd",
                ShellError::UnexpectedToken {
                    token: "&&".into(),
                    at: 6,
                },
            ),
            (
                "ls | ; pwd",
                ShellError::UnexpectedToken {
                    token: ";".into(),
                    at: 5,
                },
            ),
            (
                "ls )",
                ShellError::UnexpectedToken {
                    token: ")".into(),
                    at: 3,
                },
            ),
            (
                "echo a (b)",
                ShellError::UnexpectedToken {
                    token: "(".into(),
                    at: 7,
                },
            ),
            (
                "(a) b",
                ShellError::UnexpectedToken {
                    token: "b".into(),
                    at: 4,
                },
            ),
            (
                "a ;; b",
                ShellError::UnexpectedToken {
                    token: ";;".into(),
                    at: 2,
                },
            ),
            (
                "}",
                ShellError::UnexpectedToken {
                    token: "}".into(),
                    at: 0,
                },
            ),
            (
                "& ls",
                ShellError::UnexpectedToken {
                    token: "&".into(),
                    at: 0,
                },
            ),
            ("ls &&", ShellError::UnexpectedEnd),
            ("ls |", ShellError::UnexpectedEnd),
            ("(ls", ShellError::Unclosed { what: "subshell" }),
            (
                "{ ls;",
                ShellError::Unclosed {
                    what: "brace group",
                },
            ),
            ("case x in a) b;;", ShellError::Unclosed { what: "case" }),
            ("[[ -f x", ShellError::Unclosed { what: "[[" }),
            ("for x in a b", ShellError::Unclosed { what: "for loop" }),
        ];
        for (line, expected) in cases {
            assert_eq!(parse(line).as_ref(), Err(expected), "{line:?}");
        }
        // Errors render a message.
        assert_eq!(
            ShellError::UnexpectedEnd.to_string(),
            "line ends where a command is expected"
        );
    }

    #[test]
    fn empty_and_blank_lines_have_no_commands() {
        for line in ["", "   ", "\n\n", "# only a comment", ";", " ; ; "] {
            assert_eq!(parse(line), Ok(vec![]), "{line:?}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "$(".repeat(10_000);
        assert!(matches!(
            parse(&format!("echo {deep}")),
            Err(ShellError::TooDeep { .. })
        ));
        let parens = "(".repeat(10_000);
        assert!(matches!(parse(&parens), Err(ShellError::TooDeep { .. })));
        let fish = "(".repeat(10_000);
        assert!(matches!(
            parse_dialect(&format!("echo {fish}"), Dialect::Fish),
            Err(ShellError::TooDeep { .. })
        ));
        // Within the limit, nesting works.
        let ok = format!("echo {}x{}", "$(".repeat(20), ")".repeat(20));
        assert_eq!(parse(&ok).unwrap().len(), 1);
    }

    #[test]
    fn pathological_look_ahead_stays_linear() {
        // Every `((` looks for its `))`; the shared budget keeps this from going quadratic.
        let line = "echo $((".repeat(5_000);
        let started = std::time::Instant::now();
        assert!(parse(&line).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn resolve_dir_table() {
        let cases: &[(Option<&str>, &str, &str)] = &[
            (None, "a", "a"),
            (None, "a/./b/", "a/b"),
            (None, "../x", "../x"),
            (None, "a/..", "."),
            (Some("/w"), "sub", "/w/sub"),
            (Some("/w/"), "./sub/../other", "/w/other"),
            (Some("/w"), "../../..", "/"),
            (Some("/w"), "~/p", "~/p"),
            (Some("~"), "..", "~"),
            (Some("rel"), "x", "rel/x"),
            (Some(""), "x", "x"),
        ];
        for (base, dir, expected) in cases {
            assert_eq!(resolve_dir(*base, dir), *expected, "{base:?} + {dir:?}");
        }
    }

    /// A small deterministic generator, so the fuzz test needs no extra crate.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Random strings over shell-significant pieces, and random mutations of real lines: every
    /// one must parse or fail with an error, never panic or hang.
    #[test]
    fn garbage_never_panics() {
        const PIECES: &[&str] = &[
            " ", "\t", "\n", "'", "\"", "\\", "$", "$(", "${", "$((", "`", "(", ")", "((", "))",
            "{", "}", "[[", "]]", "&", "&&", "|", "||", ";", ";;", ";&", "<", ">", ">>", "<<",
            "<<-", "<<<", "2>&1", "&>", "<(", ">(", "#", "=", "a", "cd", "EOF", "case", "in",
            "esac", "for", "do", "done", "if", "fi", "function", "x=", "é", "\r", "\u{0}", "-",
        ];
        const SEEDS: &[&str] = &[
            "cd /a && RUST_LOG=1 cargo test -p x -- --nocapture 2>&1 | tail -5",
            "cat > f << 'EOF'\nbody (\nEOF\ngit commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)\"",
            "for f in *.rs; do case $f in a) echo \"$f\";; esac; done > out",
            "x=(a b) f() { [[ -n ${x[0]} ]] && echo `id`; }; (cd b; make) &",
        ];
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for round in 0..6_000 {
            let line = if round % 2 == 0 {
                let len = rng.below(40);
                (0..len)
                    .map(|_| PIECES[rng.below(PIECES.len())])
                    .collect::<String>()
            } else {
                let mut chars: Vec<char> = SEEDS[rng.below(SEEDS.len())].chars().collect();
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(chars.len() + 1);
                    match rng.below(3) {
                        0 if at < chars.len() => {
                            chars.remove(at);
                        }
                        1 => chars.truncate(at),
                        _ => {
                            let piece = PIECES[rng.below(PIECES.len())];
                            for (k, c) in piece.chars().enumerate() {
                                chars.insert((at + k).min(chars.len()), c);
                            }
                        }
                    }
                }
                chars.into_iter().collect()
            };
            for dialect in [Dialect::Posix, Dialect::Fish] {
                if let Err(e) = parse_dialect(&line, dialect) {
                    // Offsets in errors point into the line.
                    let at = match e {
                        ShellError::UnterminatedQuote { at, .. }
                        | ShellError::UnterminatedSubstitution { at }
                        | ShellError::UnterminatedExpansion { at }
                        | ShellError::MissingRedirectionTarget { at }
                        | ShellError::UnexpectedToken { at, .. }
                        | ShellError::TooDeep { at } => at,
                        ShellError::UnexpectedEnd | ShellError::Unclosed { .. } => 0,
                    };
                    assert!(at <= line.len(), "{line:?}: {e}");
                }
            }
        }
        // Arbitrary bytes, decoded lossily as the ingest layer would.
        for _ in 0..2_000 {
            let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
            let line = String::from_utf8_lossy(&bytes);
            let _ = parse(&line);
            let _ = parse_dialect(&line, Dialect::Fish);
        }
    }
}
