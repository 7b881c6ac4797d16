//! The syntax tree of a line into its simple commands, in order, with the operators between them
//! and the directory `cd DIR &&` prefixes move to.

use std::cell::RefCell;

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

use super::word::{array, word};
use super::{
    Assignment, Connector, Dialect, MAX_DEPTH, RedirOp, Redirection, ShellError, SimpleCommand,
    Word, as_assignment, cd_target, resolve_dir,
};

thread_local! {
    /// One parser per dialect per thread, made on first use: building one per line would cost
    /// more than parsing it.
    static PARSERS: RefCell<[Option<Parser>; 2]> = const { RefCell::new([None, None]) };
}

/// Parser progress reports allowed per byte of input (and a constant for short lines). The
/// parser calls back about every hundred operations; a line from a log takes a few per byte,
/// so this only stops inputs that make the error recovery explode.
const PROGRESS_PER_BYTE: usize = 2;
const PROGRESS_BASE: usize = 2_000;

fn language(dialect: Dialect) -> (tree_sitter::Language, &'static str) {
    match dialect {
        Dialect::Posix => (tree_sitter_bash::LANGUAGE.into(), "bash"),
        Dialect::Fish => (tree_sitter_fish::language(), "fish"),
    }
}

/// Parses `src` (the line, possibly with a byte appended that is not part of it) with the
/// thread's parser for `dialect`.
pub(crate) fn parse_source(src: &str, dialect: Dialect) -> Result<Tree, ShellError> {
    PARSERS.with(|cell| {
        let mut parsers = cell.borrow_mut();
        let slot = &mut parsers[usize::from(dialect == Dialect::Fish)];
        if slot.is_none() {
            let (lang, name) = language(dialect);
            let mut parser = Parser::new();
            parser
                .set_language(&lang)
                .map_err(|e| ShellError::Grammar {
                    dialect: name,
                    reason: e.to_string(),
                })?;
            *slot = Some(parser);
        }
        let Some(parser) = slot.as_mut() else {
            return Err(ShellError::Grammar {
                dialect: language(dialect).1,
                reason: "no parser".into(),
            });
        };
        let mut budget = PROGRESS_BASE.saturating_add(src.len().saturating_mul(PROGRESS_PER_BYTE));
        let mut stopped_at = None;
        let mut progress = |state: &ParseState| {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                stopped_at = Some(state.current_byte_offset());
                return true;
            }
            false
        };
        let bytes = src.as_bytes();
        let tree = parser.parse_with_options(
            &mut |at: usize, _| bytes.get(at..).unwrap_or(&[]),
            None,
            Some(ParseOptions::new().progress_callback(&mut progress)),
        );
        match tree {
            Some(tree) => Ok(tree),
            None => {
                // A cancelled parse leaves state behind: the next line starts afresh.
                parser.reset();
                Err(ShellError::TooDeep {
                    at: stopped_at.unwrap_or(0).min(src.len()),
                })
            }
        }
    })
}

/// Parses `line` in `dialect` into its simple commands.
pub(super) fn parse_tree(line: &str, dialect: Dialect) -> Result<Vec<SimpleCommand>, ShellError> {
    // A line continuation that ends the line (a history line `make \⏎`) continues into
    // nothing: it is blank, though the grammar wants a word after it.
    let line = match line.strip_suffix("\\\n") {
        Some(rest) if ends_in_lone_backslash(line.get(..line.len() - 1).unwrap_or("")) => rest,
        _ => line,
    };
    // A trailing backslash escapes nothing: bash keeps it as a character, the grammar calls it
    // an error; an escaped one reads the same. fish's grammar wants a line to end in a
    // terminator. What is appended is never part of a span.
    let padded;
    let src = match dialect {
        Dialect::Posix if ends_in_lone_backslash(line) => {
            padded = format!("{line}\\");
            padded.as_str()
        }
        Dialect::Fish if !line.ends_with('\n') => {
            padded = format!("{line}\n");
            padded.as_str()
        }
        _ => line,
    };
    let tree = parse_source(src, dialect)?;
    let root = tree.root_node();
    let uncovered = check_tree(root, src, line.len())?;
    if root.has_error() {
        return Err(first_error(root, src, line.len()));
    }
    uncovered?;
    let mut walker = Walker {
        src,
        len: line.len(),
        dialect,
        out: Vec::new(),
        pending: None,
        closed_at: None,
        piped: false,
        cd: None,
        subshells: 0,
        depth: 0,
    };
    walker.sequence(root)?;
    walker.finish_pending(None);
    Ok(walker.out)
}

fn ends_in_lone_backslash(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// Node kinds that nest: substitutions, subshells and compound commands.
fn nests(kind: &str) -> bool {
    matches!(
        kind,
        "command_substitution"
            | "process_substitution"
            | "subshell"
            | "compound_statement"
            | "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "function_definition"
            | "begin_statement"
            | "switch_statement"
            | "expansion"
            | "arithmetic_expansion"
    )
}

/// Node kinds whose text is not all in their children (a string's `"a $x b"` around `$x`, a
/// here-document's body around its expansions).
fn holds_text(kind: &str) -> bool {
    matches!(
        kind,
        "string"
            | "double_quote_string"
            | "single_quote_string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "heredoc_body"
            | "heredoc_content"
    )
}

/// One walk of the whole tree, with a cursor (no recursion): [`ShellError::TooDeep`] when
/// nesting goes past [`MAX_DEPTH`]; else, as `Ok(Err(…))`, the first byte of the line no node
/// covers but for blanks and line continuations (a word the grammar skipped would otherwise
/// vanish from the commands without an error).
fn check_tree(root: Node<'_>, src: &str, len: usize) -> Result<Result<(), ShellError>, ShellError> {
    let bytes = src.as_bytes();
    let mut cursor = root.walk();
    let mut covered = 0usize;
    let mut depth = 0usize;
    let mut uncovered = Ok(());
    let check = |from: usize, to: usize, leaf: Option<Node<'_>>| -> Result<(), ShellError> {
        let gap = bytes.get(from..to.min(len)).unwrap_or(&[]);
        let blank = gap.iter().enumerate().all(|(i, &b)| {
            matches!(b, b' ' | b'\t' | b'\r' | b'\n')
                || (b == b'\\' && gap.get(i + 1) == Some(&b'\n'))
        });
        if blank {
            return Ok(());
        }
        // Inside a node that holds text of its own.
        let first = from + gap.len() - gap.trim_ascii_start().len();
        let mut up = leaf;
        while let Some(node) = up {
            if holds_text(node.kind()) && node.start_byte() <= first {
                return Ok(());
            }
            up = node.parent();
        }
        // `python3 - <<'EOF'`: the grammar drops a lone `-` before a here-document; the
        // walker puts it back.
        if gap.trim_ascii() == b"-" {
            return Ok(());
        }
        Err(ShellError::UnexpectedToken {
            token: short(&String::from_utf8_lossy(gap.trim_ascii())),
            at: first,
        })
    };
    loop {
        let node = cursor.node();
        let kind = node.kind();
        if nests(kind) {
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(ShellError::TooDeep {
                    at: node.start_byte().min(len),
                });
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        // A leaf: the bytes before it.
        let start = node.start_byte();
        if start > covered && uncovered.is_ok() {
            uncovered = check(covered, start, Some(node));
        }
        covered = covered.max(node.end_byte());
        loop {
            let node = cursor.node();
            let kind = node.kind();
            if nests(kind) {
                depth = depth.saturating_sub(1);
            }
            // The end of a node holding text: its tail is its own.
            if holds_text(kind) {
                covered = covered.max(node.end_byte());
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                if len > covered && uncovered.is_ok() {
                    uncovered = check(covered, len, None);
                }
                return Ok(uncovered);
            }
        }
    }
}

/// The error of the first `ERROR` or `MISSING` node, in the line's order.
fn first_error(root: Node<'_>, src: &str, len: usize) -> ShellError {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_missing() {
            return missing(node, len);
        }
        if node.is_error() {
            return error_node(node, src, len);
        }
        // Into the first child that holds an error.
        let mut found = false;
        if cursor.goto_first_child() {
            loop {
                if cursor.node().has_error() {
                    found = true;
                    break;
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        if !found {
            return ShellError::UnexpectedToken {
                token: node.kind().to_owned(),
                at: node.start_byte().min(len),
            };
        }
    }
}

/// What a `MISSING` node says is missing.
fn missing(node: Node<'_>, len: usize) -> ShellError {
    let at = node.start_byte().min(len);
    let parent = node.parent();
    let opened = parent.map_or(at, |p| p.start_byte().min(len));
    let parent_kind = parent.map_or("", |p| p.kind());
    match node.kind() {
        quote @ ("\"" | "'") => ShellError::UnterminatedQuote {
            quote: quote.chars().next().unwrap_or('"'),
            at: opened,
        },
        "`" => ShellError::UnterminatedSubstitution { at: opened },
        ")" if matches!(parent_kind, "command_substitution" | "process_substitution") => {
            ShellError::UnterminatedSubstitution { at: opened }
        }
        ")" | "))" if parent_kind == "subshell" => ShellError::Unclosed { what: "subshell" },
        "}" if parent_kind == "expansion" => ShellError::UnterminatedExpansion { at: opened },
        "}" => ShellError::Unclosed {
            what: "brace group",
        },
        "]]" | "]" => ShellError::Unclosed { what: "[[" },
        "done" => ShellError::Unclosed { what: "loop" },
        "fi" => ShellError::Unclosed { what: "if" },
        "esac" => ShellError::Unclosed { what: "case" },
        "end" => ShellError::Unclosed { what: "fish block" },
        _ if at >= len => ShellError::UnexpectedEnd,
        other => ShellError::UnexpectedToken {
            token: other.to_owned(),
            at,
        },
    }
}

/// What an `ERROR` node says: read from its first token.
fn error_node(node: Node<'_>, src: &str, len: usize) -> ShellError {
    // The first leaf with text.
    let mut first = node;
    while let Some(child) = first.child(0) {
        first = child;
    }
    let text = src.get(first.byte_range()).unwrap_or("");
    let at = (first.start_byte() + text.len() - text.trim_start().len()).min(len);
    let text = text.trim();
    let whole = src.get(node.byte_range()).unwrap_or("").trim_start();
    if let Some(quote) = whole.chars().next().filter(|c| matches!(c, '\'' | '"')) {
        return ShellError::UnterminatedQuote { quote, at };
    }
    if whole.starts_with("$'") {
        return ShellError::UnterminatedQuote { quote: '\'', at };
    }
    match text {
        "${" => ShellError::UnterminatedExpansion { at },
        "$(" | "`" | "<(" | ">(" => ShellError::UnterminatedSubstitution { at },
        "<" | ">" | ">>" | ">|" | "<&" | ">&" | "&>" | "&>>" | "<<" | "<<-" | "<<<"
            if node.named_child_count() == 0 =>
        {
            ShellError::MissingRedirectionTarget { at }
        }
        "case" => ShellError::Unclosed { what: "case" },
        "{" => ShellError::Unclosed {
            what: "brace group",
        },
        "for" | "while" | "until" | "select" => ShellError::Unclosed { what: "loop" },
        "if" => ShellError::Unclosed { what: "if" },
        "" => ShellError::UnexpectedEnd,
        _ => ShellError::UnexpectedToken {
            token: short(text),
            at,
        },
    }
}

/// At most 40 characters of `text`, for an error message.
fn short(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Node kinds that are a statement, or hold statements.
fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "command"
            | "list"
            | "pipeline"
            | "pipe"
            | "redirected_statement"
            | "subshell"
            | "compound_statement"
            | "if_statement"
            | "elif_clause"
            | "else_clause"
            | "else_if_clause"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "do_group"
            | "case_statement"
            | "case_item"
            | "function_definition"
            | "negated_command"
            | "negated_statement"
            | "test_command"
            | "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command"
            | "conditional_execution"
            | "begin_statement"
            | "switch_statement"
            | "case_clause"
    )
}

fn is_redirect(kind: &str) -> bool {
    matches!(
        kind,
        "file_redirect" | "heredoc_redirect" | "herestring_redirect" | "stream_redirect"
    )
}

/// Words that close a compound command: as a command's program, the grammar took a stray one.
const CLOSING_WORDS: &[&str] = &["}", "fi", "done", "esac", "then", "do", "elif", "else"];

struct Walker<'s> {
    src: &'s str,
    /// The line's length: `src` may hold a byte more.
    len: usize,
    dialect: Dialect,
    out: Vec<SimpleCommand>,
    /// The last command read, waiting for the operator after it (which decides whether a `cd`
    /// folds into the directory).
    pending: Option<SimpleCommand>,
    /// The length of `out` before the compound command that just ended: an operator after it
    /// applies to its last command.
    closed_at: Option<usize>,
    /// The previous command's output goes into the next one.
    piped: bool,
    cd: Option<String>,
    subshells: usize,
    depth: usize,
}

impl Walker<'_> {
    fn text(&self, node: Node<'_>) -> &str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn span(&self, node: Node<'_>) -> std::ops::Range<usize> {
        node.start_byte().min(self.len)..node.end_byte().min(self.len)
    }

    fn word(&self, node: Node<'_>) -> Word {
        word(node, self.src, self.len, self.dialect)
    }

    /// The statements among `node`'s children, in order, with the operators between them.
    fn sequence(&mut self, node: Node<'_>) -> Result<(), ShellError> {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            let kind = child.kind();
            if is_statement(kind) {
                self.statement(child)?;
            } else if !child.is_named() {
                self.operator(child)?;
            }
        }
        Ok(())
    }

    fn statement(&mut self, node: Node<'_>) -> Result<(), ShellError> {
        // A statement after another with no operator between them: a newline.
        self.finish_pending(Some(Connector::Seq));
        match node.kind() {
            "command" => {
                let cmd = self.command(node)?;
                self.start(cmd);
            }
            "variable_assignment" | "variable_assignments" => {
                let mut cmd = SimpleCommand {
                    span: self.span(node),
                    ..SimpleCommand::default()
                };
                if node.kind() == "variable_assignment" && !self.valid_name(node) {
                    cmd.words.push(self.word(node));
                } else if node.kind() == "variable_assignment" {
                    cmd.assignments.push(self.assignment(node));
                } else {
                    let mut cursor = node.walk();
                    for child in node.named_children(&mut cursor) {
                        cmd.assignments.push(self.assignment(child));
                    }
                }
                self.start(cmd);
            }
            "test_command" | "declaration_command" | "unset_command" => {
                let mut cmd = SimpleCommand {
                    span: self.span(node),
                    ..SimpleCommand::default()
                };
                self.leaf_words(node, &mut cmd.words, 0)?;
                self.start(cmd);
            }
            "redirected_statement" => self.redirected(node)?,
            "list" => self.list(node)?,
            "pipeline"
            | "pipe"
            | "conditional_execution"
            | "negated_command"
            | "negated_statement" => self.sequence(node)?,
            "compound_statement"
                if node
                    .child(0)
                    .is_some_and(|c| c.kind() == "((" || c.kind() == "$((") =>
            {
                // `(( … ))`: arithmetic, no command.
                self.closed_at = Some(self.out.len());
            }
            "c_style_for_statement" => {
                // `for ((i = 0; …))`: only the body runs commands.
                let mark = self.out.len();
                let mut cursor = node.walk();
                let body = node
                    .children(&mut cursor)
                    .find(|c| matches!(c.kind(), "do_group" | "compound_statement"));
                if let Some(body) = body {
                    self.depth += 1;
                    let result = self.statement(body);
                    self.depth -= 1;
                    result?;
                }
                self.finish_pending(Some(Connector::Seq));
                self.closed_at = Some(mark);
            }
            "subshell" => {
                let saved = self.cd.clone();
                let mark = self.out.len();
                self.subshells += 1;
                let result = self.nested(node);
                self.subshells -= 1;
                result?;
                self.finish_pending(None);
                self.cd = saved;
                self.closed_at = Some(mark);
            }
            _ => {
                let mark = self.out.len();
                self.nested(node)?;
                // `{ a; b; }`, `if …; fi`: the last command inside was ended by its `;`.
                self.finish_pending(Some(Connector::Seq));
                self.closed_at = Some(mark);
            }
        }
        Ok(())
    }

    fn nested(&mut self, node: Node<'_>) -> Result<(), ShellError> {
        if self.depth >= MAX_DEPTH {
            return Err(ShellError::TooDeep {
                at: node.start_byte().min(self.len),
            });
        }
        self.depth += 1;
        let result = self.sequence(node);
        self.depth -= 1;
        result
    }

    /// `a && b || c`: the grammar nests lists to the left, one level per operator; they are
    /// read with a loop, so a long line costs no stack.
    fn list(&mut self, node: Node<'_>) -> Result<(), ShellError> {
        let mut spine = vec![node];
        let mut head = node;
        while let Some(first) = head.child(0).filter(|c| c.kind() == "list") {
            spine.push(first);
            head = first;
        }
        for (i, list) in spine.iter().rev().enumerate() {
            let mut cursor = list.walk();
            for (k, child) in list.children(&mut cursor).enumerate() {
                if k == 0 && i > 0 {
                    // The inner list, already read.
                    continue;
                }
                if is_statement(child.kind()) {
                    self.statement(child)?;
                } else if !child.is_named() {
                    self.operator(child)?;
                }
            }
        }
        Ok(())
    }

    fn operator(&mut self, node: Node<'_>) -> Result<(), ShellError> {
        let connector = match node.kind() {
            "&&" => Connector::And,
            "||" => Connector::Or,
            "|" | "|&" => Connector::Pipe,
            "&" => Connector::Background,
            ";" | "\n" | ";;" | ";&" | ";;&" => {
                if node.kind().starts_with(";;") || node.kind() == ";&" {
                    let in_case = node.parent().is_some_and(|p| p.kind() == "case_item");
                    if !in_case {
                        return Err(ShellError::UnexpectedToken {
                            token: node.kind().to_owned(),
                            at: node.start_byte().min(self.len),
                        });
                    }
                }
                Connector::Seq
            }
            "and" | "or" => {
                // fish's `a; and b` is `a && b`.
                if let Some(last) = self.out.last_mut()
                    && last.connector == Some(Connector::Seq)
                {
                    last.connector = Some(if node.kind() == "and" {
                        Connector::And
                    } else {
                        Connector::Or
                    });
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        if self.pending.is_some() {
            self.finish_pending(Some(connector));
        } else if let Some(mark) = self.closed_at.take() {
            if self.out.len() > mark
                && let Some(last) = self.out.last_mut()
                && last.connector.is_none()
            {
                last.connector = Some(connector);
                if connector == Connector::Pipe {
                    last.in_pipeline = true;
                }
            }
            self.piped = connector == Connector::Pipe;
        }
        Ok(())
    }

    /// A command read: it waits for the operator after it.
    fn start(&mut self, cmd: SimpleCommand) {
        self.start_keeping_pipe(cmd, false);
    }

    /// [`Walker::start`] of a command taken back from pending (`keep`): whether it reads a
    /// pipe was settled when it was first read.
    fn start_keeping_pipe(&mut self, mut cmd: SimpleCommand, keep: bool) {
        if !keep {
            cmd.in_pipeline = self.piped;
        }
        cmd.in_subshell = self.subshells > 0;
        self.piped = false;
        self.closed_at = None;
        self.pending = Some(cmd);
    }

    /// Ends the pending command with `connector`; a `cd DIR` that leads into more commands is
    /// recorded as their directory instead.
    fn finish_pending(&mut self, connector: Option<Connector>) {
        let Some(mut cmd) = self.pending.take() else {
            return;
        };
        let in_pipeline = cmd.in_pipeline || connector == Some(Connector::Pipe);
        self.piped = connector == Some(Connector::Pipe);
        if !in_pipeline
            && matches!(connector, Some(Connector::And | Connector::Seq))
            && cmd.assignments.is_empty()
            && cmd.redirections.is_empty()
            && let Some(dir) = cd_target(&cmd.words)
        {
            self.cd = Some(resolve_dir(self.cd.as_deref(), &dir));
            return;
        }
        cmd.connector = connector;
        cmd.in_pipeline = in_pipeline;
        cmd.cd = self.cd.clone();
        self.out.push(cmd);
    }

    fn redirected(&mut self, node: Node<'_>) -> Result<(), ShellError> {
        let body = node.child_by_field_name("body");
        let body_kind = body.map_or("", |b| b.kind());
        if !matches!(
            body_kind,
            "" | "command" | "pipeline" | "list" | "negated_command"
        ) {
            // A redirection of a compound command (`done < file`, `{ …; } > log`) applies to
            // the commands inside: it is dropped.
            if let Some(body) = body {
                self.statement(body)?;
            }
            return Ok(());
        }
        let mut cmd = match body {
            Some(body) if body_kind == "command" => self.command(body)?,
            Some(body) => {
                // `a | b > f`: the grammar puts the redirection on the pipeline; it is the
                // last command's.
                self.statement(body)?;
                match self.pending.take() {
                    Some(cmd) if cmd.span.start >= body.start_byte() => cmd,
                    other => {
                        self.pending = other;
                        return Ok(());
                    }
                }
            }
            None => SimpleCommand::default(),
        };
        let mut end = node.end_byte().min(self.len);
        let mut after = body.map_or(node.start_byte(), |b| b.end_byte());
        let mut continuations = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if !is_redirect(child.kind()) {
                continue;
            }
            // `python3 - <<'EOF'`: the grammar leaves the `-` out of the command.
            let gap = self.src.get(after..child.start_byte()).unwrap_or("");
            if gap.trim() == "-" {
                let at = after + gap.find('-').unwrap_or(0);
                let mut w = Word::literal("-");
                w.span = at..at + 1;
                cmd.words.push(w);
            }
            after = child.end_byte();
            let before = cmd.redirections.len();
            self.redirection(child, &mut cmd.redirections);
            fd_from_last_word(&mut cmd, before, child.start_byte());
            if child.kind() == "heredoc_redirect" {
                // `cat <<EOF | wc -l`: what follows the delimiter on its line is inside the
                // here-document's node.
                let mut inner = child.walk();
                for part in child.children(&mut inner) {
                    let is_operator = !part.is_named()
                        && matches!(part.kind(), "&&" | "||" | "|" | "|&" | ";" | "&");
                    if is_statement(part.kind()) || is_operator {
                        end = end.min(part.start_byte());
                        continuations.push(part);
                    }
                }
            }
        }
        let start = if body.is_some() {
            cmd.span.start
        } else {
            node.start_byte()
        };
        let end = self
            .src
            .get(..end)
            .map_or(end, |s| s.trim_end().len())
            .max(start);
        cmd.span = start.min(self.len)..end.min(self.len);
        if body_kind == "command" || body.is_none() {
            self.finish_pending(Some(Connector::Seq));
        }
        self.start_keeping_pipe(cmd, body_kind != "command" && body.is_some());
        for part in continuations {
            if !part.is_named() {
                self.operator(part)?;
            } else if matches!(part.kind(), "pipeline" | "list")
                && part.child(0).is_some_and(|c| !c.is_named())
            {
                // `| wc -l`: a pipeline that starts with its operator.
                self.sequence(part)?;
            } else {
                self.statement(part)?;
            }
        }
        Ok(())
    }

    fn command(&mut self, node: Node<'_>) -> Result<SimpleCommand, ShellError> {
        let mut cmd = SimpleCommand {
            span: self.span(node),
            ..SimpleCommand::default()
        };
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "variable_assignment" if cmd.words.is_empty() && self.valid_name(child) => {
                    cmd.assignments.push(self.assignment(child));
                }
                "comment" => {}
                kind if is_redirect(kind) => {
                    let before = cmd.redirections.len();
                    self.redirection(child, &mut cmd.redirections);
                    fd_from_last_word(&mut cmd, before, child.start_byte());
                }
                _ => {
                    let w = self.word(child);
                    // fish (and a quoted-name-free bash word the grammar left as one): a
                    // leading `NAME=value` is an assignment.
                    if cmd.words.is_empty()
                        && self.dialect == Dialect::Fish
                        && let Some(a) = as_assignment(&w)
                    {
                        cmd.assignments.push(a);
                        continue;
                    }
                    if cmd.words.is_empty()
                        && w.is_plain()
                        && CLOSING_WORDS.contains(&w.raw.as_str())
                        && self.dialect == Dialect::Posix
                    {
                        return Err(ShellError::UnexpectedToken {
                            token: w.raw.clone(),
                            at: w.span.start,
                        });
                    }
                    self.push_word(&mut cmd.words, w);
                }
            }
        }
        Ok(cmd)
    }

    /// Adds `w` to `words`, joined to the word before when only a line continuation stands
    /// between them (`a\⏎b` is the word `ab`; the grammar reads it as two).
    fn push_word(&self, words: &mut Vec<Word>, w: Word) {
        if let Some(prev) = words.last_mut()
            && prev.span.end + 2 == w.span.start
            && self.src.get(prev.span.end..w.span.start) == Some("\\\n")
        {
            prev.text.push_str(&w.text);
            prev.span.end = w.span.end;
            prev.raw = self.src.get(prev.span.clone()).unwrap_or("").to_owned();
            prev.quoted |= w.quoted;
            prev.expanded |= w.expanded;
            prev.substitutions.extend(w.substitutions);
            return;
        }
        words.push(w);
    }

    /// Whether an assignment's name is one bash accepts (the grammar also takes `1A=1`).
    fn valid_name(&self, node: Node<'_>) -> bool {
        let name = node
            .child_by_field_name("name")
            .map_or("", |n| self.text(n));
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    }

    fn assignment(&self, node: Node<'_>) -> Assignment {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n).to_owned())
            .unwrap_or_default();
        let mut append = false;
        let mut value = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "+=" => append = true,
                "=" => {}
                _ if Some(child) == node.child_by_field_name("name") => {}
                _ if value.is_none() => value = Some(child),
                _ => {}
            }
        }
        let value = match value {
            Some(v) if v.kind() == "array" => array(v, self.src, self.len, self.dialect),
            Some(v) => self.word(v),
            None => Word {
                span: node.end_byte().min(self.len)..node.end_byte().min(self.len),
                ..Word::default()
            },
        };
        Assignment {
            name,
            value,
            append,
        }
    }

    /// The words of `[[ … ]]`, `[ … ]`, `export A=1 B`: each leaf, a word node read whole.
    fn leaf_words(
        &self,
        node: Node<'_>,
        out: &mut Vec<Word>,
        depth: usize,
    ) -> Result<(), ShellError> {
        if depth > MAX_DEPTH * 4 {
            return Err(ShellError::TooDeep {
                at: node.start_byte().min(self.len),
            });
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            let kind = child.kind();
            let whole = matches!(
                kind,
                "word"
                    | "string"
                    | "raw_string"
                    | "ansi_c_string"
                    | "translated_string"
                    | "concatenation"
                    | "simple_expansion"
                    | "expansion"
                    | "arithmetic_expansion"
                    | "command_substitution"
                    | "process_substitution"
                    | "number"
                    | "test_operator"
                    | "regex"
                    | "extglob_pattern"
                    | "variable_name"
                    | "variable_assignment"
            );
            if kind == "comment" {
                continue;
            }
            if whole || child.child_count() == 0 {
                out.push(self.word(child));
            } else {
                self.leaf_words(child, out, depth + 1)?;
            }
        }
        Ok(())
    }

    fn redirection(&self, node: Node<'_>, out: &mut Vec<Redirection>) {
        if node.kind() == "stream_redirect" && node.child_count() == 0 {
            // fish's `2>&1`, one token.
            let text = self.text(node);
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            let (op, tail) = redir_op(text.get(digits..).unwrap_or(""));
            if let Some(op) = op {
                let end = node.end_byte().min(self.len);
                let mut target = Word::literal(tail);
                target.span = end.saturating_sub(tail.len())..end;
                out.push(Redirection {
                    fd: text.get(..digits).and_then(|d| d.parse().ok()),
                    op,
                    target,
                    body: None,
                });
            }
            return;
        }
        let mut fd = None;
        let mut op = None;
        let mut target = None;
        let mut body = None;
        let mut strip_tabs = false;
        let mut heredoc = None;
        let mut nested = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            let kind = child.kind();
            match kind {
                "file_descriptor" => fd = self.text(child).parse().ok(),
                "heredoc_start" => {
                    let mut w = self.word(child);
                    w.text = w.text.replace(['\'', '"', '\\'], "");
                    w.quoted = w.raw.contains(['\'', '"', '\\']);
                    target = Some(w);
                }
                "heredoc_body" => body = Some(child),
                "heredoc_end" => {
                    let from = body.map_or(child.start_byte(), |b| b.start_byte());
                    heredoc = Some(self.heredoc_body(from, child.start_byte(), strip_tabs));
                }
                // `cat <<EOF > out.txt`: the grammar nests the later redirection.
                kind if is_redirect(kind) => self.redirection(child, &mut nested),
                // `cat <<EOF | wc -l`: read by the caller.
                kind if is_statement(kind) => {}
                "direction" => {
                    // fish: `2>`, `>>` as one token.
                    let text = self.text(child);
                    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
                    fd = text.get(..digits).and_then(|d| d.parse().ok());
                    op = redir_op(text.get(digits..).unwrap_or("")).0;
                }
                _ if !child.is_named() && op.is_none() => {
                    let (o, tail) = redir_op(kind);
                    op = o;
                    strip_tabs = kind == "<<-";
                    if !tail.is_empty() {
                        // `>&-`: the operator holds its target.
                        let mut w = Word::literal(tail);
                        let end = child.end_byte().min(self.len);
                        w.span = end.saturating_sub(tail.len())..end;
                        target = Some(w);
                    }
                }
                _ if !child.is_named() => {}
                _ if target.is_none() => target = Some(self.word(child)),
                _ => {}
            }
        }
        if node.kind() == "heredoc_redirect" {
            out.push(Redirection {
                fd,
                op: RedirOp::HereDoc { strip_tabs },
                target: target.unwrap_or_default(),
                body: heredoc,
            });
            out.append(&mut nested);
            return;
        }
        let op = if node.kind() == "herestring_redirect" {
            Some(RedirOp::HereString)
        } else {
            op
        };
        if let (Some(op), Some(target)) = (op, target) {
            out.push(Redirection {
                fd,
                op,
                target,
                body: None,
            });
        }
    }

    /// The body of a here-document: the lines from the one `from` is on up to the line
    /// `end` (the delimiter) is on, each ending in a newline, tabs stripped for `<<-`.
    fn heredoc_body(&self, from: usize, end: usize, strip_tabs: bool) -> String {
        let bytes = self.src.as_bytes();
        let line_start = |at: usize| {
            bytes
                .get(..at)
                .and_then(|b| b.iter().rposition(|&c| c == b'\n'))
                .map_or(0, |p| p + 1)
        };
        let start = line_start(from.min(end));
        let stop = line_start(end);
        let text = self.src.get(start..stop.max(start)).unwrap_or("");
        let mut body = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let line = line.strip_suffix('\n').unwrap_or(line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            body.push_str(if strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line
            });
            body.push('\n');
        }
        body
    }
}

/// `cmd 0<&3`: the grammar reads the fd before `<&` as the command's last argument. When the
/// redirection added at `index` has no fd and a word of digits ends right where it starts (and
/// is not the program), that word is its fd.
fn fd_from_last_word(cmd: &mut SimpleCommand, index: usize, start: usize) {
    let fd = match cmd.words.as_slice() {
        [_, .., last]
            if last.span.end == start
                && !last.raw.is_empty()
                && last.raw.bytes().all(|b| b.is_ascii_digit()) =>
        {
            last.raw.parse::<u32>().ok()
        }
        _ => None,
    };
    if let Some(fd) = fd
        && let Some(r) = cmd.redirections.get_mut(index)
        && r.fd.is_none()
    {
        r.fd = Some(fd);
        cmd.words.pop();
    }
}

/// The redirection operator `text` starts with, and what follows it.
fn redir_op(text: &str) -> (Option<RedirOp>, &str) {
    const OPS: &[(&str, RedirOp)] = &[
        ("&>>", RedirOp::AppendAll),
        ("<<<", RedirOp::HereString),
        ("<<-", RedirOp::HereDoc { strip_tabs: true }),
        ("<<", RedirOp::HereDoc { strip_tabs: false }),
        ("&>", RedirOp::WriteAll),
        (">>", RedirOp::Append),
        (">&", RedirOp::DupOut),
        (">|", RedirOp::Clobber),
        ("<&", RedirOp::DupIn),
        ("<>", RedirOp::ReadWrite),
        (">?", RedirOp::Write),
        ("<", RedirOp::Read),
        (">", RedirOp::Write),
    ];
    for (written, op) in OPS {
        if let Some(rest) = text.strip_prefix(written) {
            return (Some(*op), rest);
        }
    }
    (None, text)
}
