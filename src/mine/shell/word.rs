//! A word of the syntax tree into a [`Word`]: quotes removed and escapes applied in `text`, the
//! bytes as written in `raw`, expansions and substitutions kept as written (their value is not
//! known here).

use tree_sitter::Node;

use super::{Dialect, Word};

/// How the text between the nodes of a word is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Unquoted,
    DoubleQuoted,
}

/// The word `node` spans, read from `src` (`len` bytes of which are the line: a character the
/// parser was given past them is not part of the word).
pub(super) fn word(node: Node<'_>, src: &str, len: usize, dialect: Dialect) -> Word {
    let span = node.start_byte().min(len)..node.end_byte().min(len);
    let mut w = Word {
        raw: src.get(span.clone()).unwrap_or("").to_owned(),
        span,
        ..Word::default()
    };
    let mut reader = Reader { src, dialect };
    reader.node(node, &mut w, Context::Unquoted);
    w
}

/// The words of a list of nodes joined as one (an array's items: `(a b)`).
pub(super) fn array(node: Node<'_>, src: &str, len: usize, dialect: Dialect) -> Word {
    let mut w = word(node, src, len, dialect);
    let mut items = Vec::new();
    let mut cursor = node.walk();
    let mut reader = Reader { src, dialect };
    w.quoted = false;
    w.expanded = false;
    w.substitutions.clear();
    for child in node.named_children(&mut cursor) {
        if child.kind() == "comment" {
            continue;
        }
        let mut item = Word::default();
        reader.node(child, &mut item, Context::Unquoted);
        w.quoted |= item.quoted;
        w.expanded |= item.expanded;
        w.substitutions.append(&mut item.substitutions);
        items.push(item.text);
    }
    w.text = format!("({})", items.join(" "));
    w
}

struct Reader<'s> {
    src: &'s str,
    dialect: Dialect,
}

impl Reader<'_> {
    fn text(&self, from: usize, to: usize) -> &str {
        self.src.get(from..to).unwrap_or("")
    }

    fn node(&mut self, node: Node<'_>, w: &mut Word, ctx: Context) {
        let (start, end) = (node.start_byte(), node.end_byte());
        match node.kind() {
            "raw_string" => {
                w.quoted = true;
                w.text
                    .push_str(self.text(start + 1, end.saturating_sub(1).max(start + 1)));
            }
            "single_quote_string" => {
                // fish: `\'` and `\\` are the only escapes inside single quotes.
                w.quoted = true;
                let inner = self.text(start + 1, end.saturating_sub(1).max(start + 1));
                let mut chars = inner.chars().peekable();
                while let Some(c) = chars.next() {
                    match (c, chars.peek()) {
                        ('\\', Some(&e @ ('\'' | '\\'))) => {
                            chars.next();
                            w.text.push(e);
                        }
                        _ => w.text.push(c),
                    }
                }
            }
            "string" | "double_quote_string" | "translated_string" => {
                w.quoted = true;
                self.children(node, w, Context::DoubleQuoted);
            }
            "ansi_c_string" => {
                w.quoted = true;
                ansi_c(
                    self.text(start + 2, end.saturating_sub(1).max(start + 2)),
                    w,
                );
            }
            "simple_expansion" | "expansion" | "arithmetic_expansion" | "variable_expansion" => {
                w.expanded = true;
                w.text.push_str(self.text(start, end));
            }
            "command_substitution" | "process_substitution" => {
                w.expanded = true;
                w.text.push_str(self.text(start, end));
                w.substitutions.push(self.inner(node).to_owned());
            }
            "escape_sequence" if self.dialect == Dialect::Fish => {
                w.quoted = true;
                let raw = self.text(start, end);
                w.text.push_str(raw.strip_prefix('\\').unwrap_or(raw));
            }
            "string_content" | "heredoc_content" => self.literal(start, end, w, ctx),
            _ if node.child_count() == 0 => self.literal(start, end, w, ctx),
            _ => self.children(node, w, ctx),
        }
    }

    /// The children of `node` in order, the bytes between them read as text in `ctx` (fish's
    /// `"$HOME/x"` has no node for `/x`). The quotes of a string are not text.
    fn children(&mut self, node: Node<'_>, w: &mut Word, ctx: Context) {
        let mut at = node.start_byte();
        let end = node.end_byte();
        let quoted = ctx == Context::DoubleQuoted;
        let mut cursor = node.walk();
        let mut children = node.children(&mut cursor).peekable();
        let mut first = true;
        while let Some(child) = children.next() {
            let last = children.peek().is_none();
            if quoted && child.kind() == "\"" && (first || last) {
                // The opening or closing quote.
                self.literal(at, child.start_byte(), w, ctx);
                at = child.end_byte();
                first = false;
                continue;
            }
            first = false;
            self.literal(at, child.start_byte(), w, ctx);
            self.node(child, w, ctx);
            at = child.end_byte().max(at);
        }
        self.literal(at, end, w, ctx);
    }

    /// Text written as is, escapes applied as `ctx` reads them.
    fn literal(&self, from: usize, to: usize, w: &mut Word, ctx: Context) {
        if from >= to {
            return;
        }
        let text = self.text(from, to);
        if !text.contains('\\') {
            w.text.push_str(text);
            return;
        }
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                w.text.push(c);
                continue;
            }
            match (ctx, chars.next()) {
                (_, Some('\n')) => {}
                (_, None) => w.text.push('\\'),
                (Context::Unquoted, Some(e)) => {
                    w.quoted = true;
                    w.text.push(e);
                }
                (Context::DoubleQuoted, Some(e @ ('$' | '`' | '"' | '\\'))) => w.text.push(e),
                (Context::DoubleQuoted, Some(e)) => {
                    w.text.push('\\');
                    w.text.push(e);
                }
            }
        }
    }

    /// The text inside a substitution's opening and closing tokens.
    fn inner(&self, node: Node<'_>) -> &str {
        let (mut from, mut to) = (node.start_byte(), node.end_byte());
        if let Some(open) = node.child(0).filter(|c| !c.is_named()) {
            from = open.end_byte();
        }
        if let Some(close) = node
            .child(node.child_count().saturating_sub(1))
            .filter(|c| !c.is_named() && c.start_byte() >= from)
        {
            to = close.start_byte();
        }
        self.text(from, to.max(from))
    }
}

/// The value of the inside of `$'…'`.
fn ansi_c(inner: &str, w: &mut Word) {
    let mut rest = inner;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        if c != '\\' {
            w.text.push(c);
            continue;
        }
        let Some(e) = rest.chars().next() else {
            w.text.push('\\');
            break;
        };
        rest = &rest[e.len_utf8()..];
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
            'x' => rest = code(rest, 16, 2, "\\x", w),
            'u' => rest = code(rest, 16, 4, "\\u", w),
            'U' => rest = code(rest, 16, 8, "\\U", w),
            '0'..='7' => {
                // The digit is the code's first.
                let digits = 1 + rest
                    .bytes()
                    .take(2)
                    .take_while(|b| (b'0'..=b'7').contains(b))
                    .count();
                let start = inner.len() - rest.len() - 1;
                let all = inner.get(start..start + digits).unwrap_or("");
                match u32::from_str_radix(all, 8).ok().and_then(char::from_u32) {
                    Some(ch) => w.text.push(ch),
                    None => {
                        w.text.push('\\');
                        w.text.push_str(all);
                    }
                }
                rest = rest.get(digits - 1..).unwrap_or("");
            }
            other => {
                w.text.push('\\');
                w.text.push(other);
            }
        }
    }
}

/// Reads up to `max` digits in `radix` from `rest` and pushes the character they encode; with no
/// digits (or no such character) the escape stays as written. Returns what follows.
fn code<'r>(rest: &'r str, radix: u32, max: usize, escape: &str, w: &mut Word) -> &'r str {
    let len = rest
        .chars()
        .take(max)
        .take_while(|c| c.is_digit(radix))
        .count();
    let digits = rest.get(..len).unwrap_or("");
    match u32::from_str_radix(digits, radix)
        .ok()
        .and_then(char::from_u32)
    {
        Some(c) if !digits.is_empty() => w.text.push(c),
        _ => {
            w.text.push_str(escape);
            w.text.push_str(digits);
        }
    }
    rest.get(len..).unwrap_or("")
}
