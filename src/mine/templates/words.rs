//! A line into words and their shapes: tokenizing on whitespace, masking the variable parts of
//! each word (numbers, hex, paths, URLs, dates, units) and hashing the shapes.

use super::hash::{K, S0, S1, hash_bytes, mum};
use super::{TemplateMinerConfig, WILDCARD};

// ---------------------------------------------------------------------------------------------
// Tokenizing and masking

/// One word of a tokenized line: its shape (a range of the line or of the scratch buffer).
#[derive(Clone, Copy)]
pub(super) struct Tok {
    pub(super) hash: u64,
    start: u32,
    pub(super) end: u32,
    in_buf: bool,
    /// The shape contains a wildcard.
    pub(super) has_var: bool,
    /// The shape is wildcards and punctuation only (see [`is_pure_var`]).
    pub(super) pure: bool,
}

/// A tokenized line: shapes that differ from the word live in `buf`.
#[derive(Default)]
pub(super) struct Tokens {
    buf: String,
    pub(super) toks: Vec<Tok>,
}

impl Tokens {
    /// The shape's text; [`wild_tok`]s (empty ranges) are [`WILDCARD`].
    pub(super) fn text<'a>(&'a self, line: &'a str, t: &Tok) -> &'a str {
        let s = if t.in_buf { &self.buf } else { line };
        match s.get(t.start as usize..t.end as usize) {
            Some(x) if !x.is_empty() => x,
            _ => WILDCARD,
        }
    }
}

/// Bytes at which a word is cut into parts for masking.
const fn is_delim(b: u8) -> bool {
    matches!(
        b,
        b'=' | b':'
            | b','
            | b';'
            | b'('
            | b')'
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'"'
            | b'\''
            | b'<'
            | b'>'
            | b'|'
            | b'.'
            | b'@'
            | b'#'
            | b'!'
            | b'?'
            | b'/'
            | b'\\'
    )
}

/// Punctuation that may wrap a path or URL (`(/tmp/x)`, `"/a/b",`); kept around the `<*>`.
fn is_wrap(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b'\'' | b'<' | b'>' | b',' | b';' | b':'
    )
}

/// The byte range of a URL or file path inside `w` (wrapping punctuation excluded), if `w` is
/// one: `scheme://…`, a rooted path (`/…`, `~/…`, `./…`, `../…`), anything with two slashes or
/// two backslashes, or a drive path (`C:\…`).
fn path_like(w: &[u8]) -> Option<(usize, usize)> {
    let mut s = 0;
    let mut e = w.len();
    while s < e && is_wrap(w[s]) {
        s += 1;
    }
    while e > s && is_wrap(w[e - 1]) {
        e -= 1;
    }
    let core = &w[s..e];
    if core.len() < 2 {
        return None;
    }
    let rooted = core[0] == b'/'
        || core.starts_with(b"~/")
        || core.starts_with(b"./")
        || core.starts_with(b"../");
    let drive =
        core.len() > 2 && core[0].is_ascii_alphabetic() && core[1] == b':' && core[2] == b'\\';
    if rooted || drive {
        return Some((s, e));
    }
    // One pass for `://`, two slashes or two backslashes.
    let (mut slashes, mut backslashes) = (0, 0);
    for (i, &b) in core.iter().enumerate() {
        let path = match b {
            b'/' => {
                slashes += 1;
                slashes >= 2
            }
            b'\\' => {
                backslashes += 1;
                backslashes >= 2
            }
            b':' => core[i + 1..].starts_with(b"//"),
            _ => false,
        };
        if path {
            return Some((s, e));
        }
    }
    None
}

/// Abbreviated month and weekday names, the words of timestamps like `Sat Jun 18 02:08:10`.
fn is_date_word(b: &[u8]) -> bool {
    const NAMES: [[u8; 3]; 19] = [
        *b"Jan", *b"Feb", *b"Mar", *b"Apr", *b"May", *b"Jun", *b"Jul", *b"Aug", *b"Sep", *b"Oct",
        *b"Nov", *b"Dec", *b"Mon", *b"Tue", *b"Wed", *b"Thu", *b"Fri", *b"Sat", *b"Sun",
    ];
    // Compared as 3-byte arrays: a few instructions each, no slice comparisons.
    <[u8; 3]>::try_from(b).is_ok_and(|w| NAMES.contains(&w))
}

/// Whether a part (between delimiters) is a variable: it has a digit, or it is a long run of
/// hex letters (`ffffffff`: a hash or mask without digits).
fn part_is_var(p: &[u8]) -> bool {
    p.iter().any(u8::is_ascii_digit) || (p.len() >= 8 && p.iter().all(u8::is_ascii_hexdigit))
}

/// Byte classes (bit flags), so that one pass over a word tells which masks may apply.
const C_SPACE: u8 = 1;

const C_DIGIT: u8 = 2;

const C_SLASH: u8 = 4;

const C_LT: u8 = 8;

const C_HEX_LETTER: u8 = 16;

/// A delimiter other than `.` (see [`is_delim`]): cuts a word into segments.
const C_CUT: u8 = 32;

/// An ASCII letter or digit: a shape with one outside its wildcards is not a pure variable.
const C_ALNUM: u8 = 64;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        let mut f = 0;
        if c.is_ascii_whitespace() {
            f |= C_SPACE;
        }
        if c.is_ascii_digit() {
            f |= C_DIGIT;
        }
        if c == b'/' || c == b'\\' {
            f |= C_SLASH;
        }
        if c == b'<' {
            f |= C_LT;
        }
        if c.is_ascii_hexdigit() && !c.is_ascii_digit() {
            f |= C_HEX_LETTER;
        }
        if is_delim(c) && c != b'.' {
            f |= C_CUT;
        }
        if c.is_ascii_alphanumeric() {
            f |= C_ALNUM;
        }
        t[i] = f;
        i += 1;
    }
    t
};

fn class_of(c: u8) -> u8 {
    CLASS[usize::from(c)]
}

/// Writes the masked shape of `w` into `out`. Returns `None` (writing nothing) when the shape
/// is the word itself, else whether the shape is a pure variable (see [`is_pure_var`]).
///
/// The word is cut at delimiters other than `.` into segments; a segment is a variable when any
/// of its `.`-separated parts is one, so `10.0.0.1`, `1.16`, `5.36.59.76.dsl.example.net` and
/// `v6.1.7601` each become one `<*>` while `com.example.Foo` stays.
///
/// `class` is the OR of the word's byte classes ([`CLASS`]). Callers skip words that
/// [`may_mask`] rules out; the answer is the same for them, only slower.
///
/// Kept out of line: inlined into the tokenizer's word loop, it made the whole miner 2–6%
/// slower on the Loghub benchmark (`cargo bench --bench loghub_accuracy`).
#[inline(never)]
fn mask_word(w: &str, class: u8, out: &mut String) -> Option<bool> {
    let b = w.as_bytes();
    if b.len() == 3 && is_date_word(b) {
        out.push_str(WILDCARD);
        return Some(true);
    }
    if class & C_SLASH != 0
        && let Some((s, e)) = path_like(b)
    {
        // Only wrapping punctuation is left around the `<*>`: a pure variable.
        out.push_str(&w[..s]);
        out.push_str(WILDCARD);
        out.push_str(&w[e..]);
        return Some(true);
    }
    // Most words are plain: no digit and no long run of hex letters.
    if class & C_DIGIT == 0 && (class & C_HEX_LETTER == 0 || b.len() < 8 || !has_hex_run(b)) {
        return None;
    }
    if class & (C_CUT | C_DIGIT) == C_DIGIT {
        // One segment with a digit (`1234`, `blk_-42`, `10.0.0.1`): a variable by the rule
        // below.
        out.push_str(WILDCARD);
        return Some(true);
    }
    // Constant text is copied in one piece when the next wildcard (or the end) comes, not
    // segment by segment: one or two copies per word instead of one per delimiter.
    let mut lit = 0;
    let mut lit_class = 0;
    let mut masked = false;
    let mut i = 0;
    while i < b.len() {
        if class_of(b[i]) & C_CUT != 0 {
            i += 1;
            continue;
        }
        let seg_start = i;
        let mut seg_class = 0;
        while i < b.len() {
            let c = class_of(b[i]);
            if c & C_CUT != 0 {
                break;
            }
            seg_class |= c;
            i += 1;
        }
        let seg = &b[seg_start..i];
        let var = seg_class & C_DIGIT != 0
            || (seg_class & C_HEX_LETTER != 0
                && seg.len() >= 8
                && seg.split(|&c| c == b'.').any(part_is_var));
        if var {
            // Both ends are at ASCII bytes (a delimiter or the word's ends): char boundaries.
            out.push_str(&w[lit..seg_start]);
            out.push_str(WILDCARD);
            lit = i;
            masked = true;
        } else {
            lit_class |= seg_class;
        }
    }
    if !masked {
        return None;
    }
    out.push_str(&w[lit..]);
    // Delimiters are not alphanumeric, so the copied text is alphanumeric only where a
    // constant segment is: `<*>:<*>` and `(<*>)` are pure, `uid=<*>` is not.
    Some(lit_class & C_ALNUM == 0)
}

/// Whether word `w`, whose byte classes are `class`, may have a shape other than itself: a
/// month or weekday name, a path, a digit, or a long run of hex letters. A cheap test on what
/// the scan already knows, so that plain words skip [`mask_word`].
fn may_mask(w: &[u8], class: u8) -> bool {
    class & (C_SLASH | C_DIGIT) != 0
        || (class & C_HEX_LETTER != 0 && w.len() >= 8)
        || (w.len() == 3 && is_date_word(w))
}

/// Whether `b` holds a run of 8 or more hex digits (`ffffffff`: a hash or mask).
///
/// Many plain words are that long and have hex letters (`received`, `exceeded`), so this is
/// asked often: every run of 8 covers one of the positions 7, 15, 23, …, so only the runs
/// through those are measured.
fn has_hex_run(b: &[u8]) -> bool {
    let hex = |c: &&u8| c.is_ascii_hexdigit();
    let mut p = 7;
    while let Some(c) = b.get(p) {
        if c.is_ascii_hexdigit() {
            let left = b[..p].iter().rev().take_while(hex).count();
            let right = b[p + 1..].iter().take_while(hex).count();
            if left + 1 + right >= 8 {
                return true;
            }
        }
        p += 8;
    }
    false
}

/// A shape made of wildcards and punctuation only (`<*>`, `<*>:<*>`, `(<*>)`): a value with no
/// constant text, whose width in words may vary between lines.
fn is_pure_var(shape: &str) -> bool {
    let b = shape.as_bytes();
    let mut i = 0;
    let mut any = false;
    while i < b.len() {
        if b[i..].starts_with(WILDCARD.as_bytes()) {
            any = true;
            i += WILDCARD.len();
        } else if b[i].is_ascii_alphanumeric() {
            return false;
        } else {
            i += 1;
        }
    }
    any
}

/// Whether a shape holds a wildcard (a hand-rolled `contains`, cheaper on short words).
fn has_wildcard(b: &[u8]) -> bool {
    b.windows(WILDCARD.len()).any(|w| w == WILDCARD.as_bytes())
}

/// Unit words that belong to the number before them (`5.2 KB`, `3 ms`).
fn is_unit(w: &str) -> bool {
    matches!(
        w,
        "B" | "KB"
            | "kB"
            | "MB"
            | "GB"
            | "TB"
            | "KiB"
            | "MiB"
            | "GiB"
            | "TiB"
            | "ms"
            | "us"
            | "ns"
            | "s"
            | "sec"
            | "secs"
    )
}

fn shape_tok(shape: &str, start: usize, end: usize, in_buf: bool) -> Tok {
    // Shapes in the buffer were masked, so they hold a wildcard; other words only if they
    // contain a literal `<*>`.
    let has_var = in_buf || has_wildcard(shape.as_bytes());
    Tok {
        hash: hash_bytes(shape.as_bytes()),
        start: start as u32,
        end: end as u32,
        in_buf,
        has_var,
        pure: has_var && is_pure_var(shape),
    }
}

/// The token standing for an over-long word or the rest of an over-long line.
fn wild_tok() -> Tok {
    Tok {
        hash: hash_bytes(WILDCARD.as_bytes()),
        start: 0,
        end: 0,
        in_buf: false,
        has_var: true,
        pure: true,
    }
}

/// Bytes of a line that are looked at; a longer line ends in a `<*>` for the rest. Also keeps
/// offsets within `u32`.
const MAX_LINE_BYTES: usize = 1 << 20;

pub(super) fn tokenize(line: &str, cfg: &TemplateMinerConfig, out: &mut Tokens) {
    out.buf.clear();
    out.toks.clear();
    let max_tokens = cfg.max_tokens.max(1);
    let cut = line.len() > MAX_LINE_BYTES;
    let line = &line[..line.floor_char_boundary(MAX_LINE_BYTES)];
    tokenize_words(line, cfg, max_tokens, out);
    if cut && out.toks.len() < max_tokens {
        out.toks.push(wild_tok());
    }
}

fn tokenize_words(line: &str, cfg: &TemplateMinerConfig, max_tokens: usize, out: &mut Tokens) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // A hand-rolled `split_ascii_whitespace` that also collects the word's byte classes:
        // the iterator adaptors cost more than the masking on typical lines.
        while i < bytes.len() && class_of(bytes[i]) & C_SPACE != 0 {
            i += 1;
        }
        let off = i;
        i = word_end(bytes, i);
        if off == i {
            break;
        }
        // No early exit, so this compiles to a short unrolled loop.
        let class = bytes[off..i].iter().fold(0, |c, &b| c | class_of(b));
        // Cut at ASCII bytes, so both ends are char boundaries.
        let w = &line[off..i];
        if out.toks.len() + 1 == max_tokens {
            // The last slot stands for the rest of the line, this word included.
            out.toks.push(wild_tok());
            return;
        }
        if w.len() > cfg.max_token_len {
            out.toks.push(wild_tok());
            continue;
        }
        // A unit after a masked number joins it: `(1.16 KB)` has the shape `(<*>)`.
        if let Some(prev) = out.toks.last_mut()
            && prev.pure
            && prev.in_buf
            && prev.end as usize == out.buf.len()
            && out.buf.ends_with(WILDCARD)
        {
            // The word less its trailing delimiters (ASCII, so the cut is a char boundary).
            let core_len = w.bytes().rposition(|c| !is_delim(c)).map_or(0, |p| p + 1);
            let core = &w[..core_len];
            if core.len() <= 4 && is_unit(core) {
                out.buf.push_str(&w[core.len()..]);
                let start = prev.start as usize;
                *prev = shape_tok(&out.buf[start..], start, out.buf.len(), true);
                continue;
            }
        }
        let start = out.buf.len();
        let masked = if may_mask(w.as_bytes(), class) {
            mask_word(w, class, &mut out.buf)
        } else {
            None
        };
        if let Some(pure) = masked {
            // A masked shape holds a wildcard; `mask_word` told whether it is pure.
            out.toks.push(Tok {
                hash: hash_bytes(&out.buf.as_bytes()[start..]),
                start: start as u32,
                end: out.buf.len() as u32,
                in_buf: true,
                has_var: true,
                pure,
            });
        } else if class & C_LT == 0 {
            // No `<`, so no literal `<*>`: a constant word.
            out.toks.push(Tok {
                hash: hash_bytes(w.as_bytes()),
                start: off as u32,
                end: i as u32,
                in_buf: false,
                has_var: false,
                pure: false,
            });
        } else {
            out.toks.push(shape_tok(w, off, i, false));
        }
    }
}

/// Where the word starting at `i` ends: the first ASCII whitespace byte at or after `i`, or
/// the end.
///
/// Looks at 8 bytes at a time for a byte at most `0x20` (SWAR: the high bit of each byte of
/// `t` is set when that byte, less its own high bit, is above `0x20`); such a byte is a space
/// or a control character, which the byte-class table then tells apart. The last bytes of
/// the line, fewer than 8, are looked at one by one.
fn word_end(bytes: &[u8], mut i: usize) -> usize {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let x = u64::from_le_bytes(*chunk);
        let t = (x & LOW7) + 0x5f5f_5f5f_5f5f_5f5f;
        // High bit set for bytes below 0x80 that are at most 0x20 (no carry between bytes:
        // each sum is at most 0x7f + 0x5f).
        let low = !(t | x) & HIGH;
        if low == 0 {
            i += 8;
            continue;
        }
        let at = i + (low.trailing_zeros() / 8) as usize;
        if bytes.get(at).is_some_and(|&b| class_of(b) & C_SPACE != 0) {
            return at;
        }
        // A control character inside the word: go on after it.
        i = at + 1;
    }
    while let Some(&b) = bytes.get(i) {
        if class_of(b) & C_SPACE != 0 {
            break;
        }
        i += 1;
    }
    i
}

/// The hash of a line's shapes: the key of the exact lookup.
pub(super) fn line_hash(toks: &[Tok]) -> u64 {
    // Each word's term is independent of the others' (its position is mixed in), so they are
    // computed side by side rather than one after the other.
    toks.iter()
        .enumerate()
        .fold(S0 ^ toks.len() as u64, |h, (i, t)| {
            h ^ mum(t.hash ^ S1, (i as u64) ^ K)
        })
}

/// Merges two words into the text shown for a generalized position: the punctuation-separated
/// parts they start and end with in common are kept, the middle becomes `<*>` (`user=root`,
/// `user=git` → `user=<*>`). Without a common word part the whole word is `<*>`. Display only:
/// a generalized position accepts any word.
pub(super) fn merge_display(a: &str, b: &str) -> Box<str> {
    fn parts(s: &str) -> Vec<&str> {
        let mut v = Vec::new();
        let mut start = 0;
        for (i, c) in s.bytes().enumerate() {
            // `<` and `>` are left in, so that `<*>` stays one part.
            if is_delim(c) && c != b'<' && c != b'>' {
                v.push(&s[start..i]);
                v.push(&s[i..=i]);
                start = i + 1;
            }
        }
        v.push(&s[start..]);
        v
    }
    let (pa, pb) = (parts(a), parts(b));
    let max = pa.len().min(pb.len());
    let pre = pa.iter().zip(&pb).take_while(|(x, y)| x == y).count();
    let suf = pa
        .iter()
        .rev()
        .zip(pb.iter().rev())
        .take(max - pre)
        .take_while(|(x, y)| x == y)
        .count();
    let kept = pa[..pre].iter().chain(&pa[pa.len() - suf..]);
    if !kept
        .clone()
        .any(|p| p.bytes().any(|c| c.is_ascii_alphanumeric()))
    {
        return WILDCARD.into();
    }
    let mut out: String = pa[..pre].concat();
    if pre + suf < pa.len() || pre + suf < pb.len() {
        out.push_str(WILDCARD);
    }
    out.push_str(&pa[pa.len() - suf..].concat());
    while out.contains("<*><*>") {
        out = out.replace("<*><*>", WILDCARD);
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::super::xorshift;
    use super::*;

    fn shape(w: &str) -> String {
        let mut out = String::new();
        let class = w.bytes().fold(0, |f, c| f | class_of(c));
        if mask_word(w, class, &mut out).is_some() {
            out
        } else {
            w.to_string()
        }
    }

    #[test]
    fn masks_general_variables() {
        let cases = [
            ("1234", "<*>"),
            ("-42", "<*>"),
            ("+3.25", "<*>"),
            ("0x7fed806eb5d", "<*>"),
            ("ffffffff", "<*>"),
            ("deadbeefcafe", "<*>"),
            ("10.251.43.21:50010", "<*>:<*>"),
            ("[173.234.31.186]", "[<*>]"),
            ("b9000564-fe1a-409b-b8cc-1e88b294cd1d", "<*>"),
            ("blk_-6952295868487656571", "<*>"),
            ("(HWID=1973)", "(HWID=<*>)"),
            ("uid=0", "uid=<*>"),
            ("/var/lib/ganglia/rrds/x.rrd", "<*>"),
            ("(/etc/httpd/conf/workers2.properties),", "(<*>),"),
            ("https://example.com/a?b=1", "<*>"),
            (r"C:\Windows\winsxs\cbscore.dll", "<*>"),
            // One slash and not rooted: a relative file name stays, its position is masked.
            ("src/main.rs:12:5", "src/main.rs:<*>:<*>"),
            ("5.36.59.76.dsl.example.net", "<*>"),
            ("core.1234", "<*>"),
            ("Jun", "<*>"),
            // Plain words, class names and punctuation stay.
            ("failed", "failed"),
            ("com.example.Foo", "com.example.Foo"),
            ("I/O", "I/O"),
            ("[preauth]", "[preauth]"),
            ("****", "****"),
            ("décembre", "décembre"),
        ];
        for (word, want) in cases {
            assert_eq!(shape(word), want, "shape of {word:?}");
        }
    }

    #[test]
    fn generalized_words_keep_their_common_parts() {
        assert_eq!(&*merge_display("user=root", "user=git"), "user=<*>");
        assert_eq!(
            &*merge_display("rhost=<*>", "rhost=a.example.org"),
            "rhost=<*>"
        );
        assert_eq!(
            &*merge_display("(uid=<*>)", "LOGIN(uid=<*>)"),
            "<*>(uid=<*>)"
        );
        assert_eq!(&*merge_display("alice", "bob"), "<*>");
        assert_eq!(&*merge_display("(<*>)", "()"), "<*>");
    }

    #[test]
    fn word_hashes_tell_words_apart() {
        // Every word over a small alphabet up to 5 bytes, and longer words differing in one
        // byte at each position (the overlapping loads of the tail included).
        let alphabet = [b'a', b'b', b'0', b'.'];
        let mut words: Vec<Vec<u8>> = vec![Vec::new()];
        let mut layer: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..5 {
            layer = layer
                .iter()
                .flat_map(|w| {
                    alphabet.iter().map(move |&c| {
                        let mut v = w.clone();
                        v.push(c);
                        v
                    })
                })
                .collect();
            words.extend(layer.iter().cloned());
        }
        for len in 6..=40 {
            let base = vec![b'x'; len];
            words.push(base.clone());
            for i in 0..len {
                let mut v = base.clone();
                v[i] = b'y';
                words.push(v);
            }
        }
        let hashes: std::collections::HashSet<u64> = words.iter().map(|w| hash_bytes(w)).collect();
        assert_eq!(hashes.len(), words.len());
    }

    /// Pseudo-random words over letters, digits, hex letters, delimiters, whitespace, control
    /// and multi-byte characters.
    fn random_words(count: usize) -> Vec<String> {
        const PIECES: [&str; 24] = [
            "a", "f", "z", "Q", "7", "0", "=", ":", ".", "/", "\\", "(", "<", "*", ">", "-", " ",
            "\t", "\u{b}", "\u{1}", "é", "日本", "deadbeef", "KB",
        ];
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        (0..count)
            .map(|_| (0..next(24)).map(|_| PIECES[next(PIECES.len())]).collect())
            .collect()
    }

    #[test]
    fn word_ends_are_ascii_whitespace() {
        for line in random_words(5000) {
            let bytes = line.as_bytes();
            let mut words = Vec::new();
            let mut i = 0;
            loop {
                while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                    i += 1;
                }
                if i == bytes.len() {
                    break;
                }
                let end = word_end(bytes, i);
                words.push(&line[i..end]);
                i = end;
            }
            let want: Vec<&str> = line.split_ascii_whitespace().collect();
            assert_eq!(words, want, "{line:?}");
        }
    }

    #[test]
    fn hex_runs_are_found_by_probing() {
        let naive = |b: &[u8]| {
            b.split(|c| !c.is_ascii_hexdigit())
                .any(|run| run.len() >= 8)
        };
        for w in random_words(5000) {
            assert_eq!(has_hex_run(w.as_bytes()), naive(w.as_bytes()), "{w:?}");
        }
        for w in [
            "deadbeef",
            "xdeadbeef",
            "deadbeefx",
            "dead.beef",
            "0123456",
            "01234567",
        ] {
            assert_eq!(has_hex_run(w.as_bytes()), naive(w.as_bytes()), "{w:?}");
        }
    }

    #[test]
    fn masking_tells_pure_variables() {
        // What `mask_word` says of the shape it wrote is what reading the shape says, and the
        // words `may_mask` rules out are the words `mask_word` leaves alone.
        for w in random_words(5000)
            .iter()
            .flat_map(|l| l.split_ascii_whitespace())
        {
            let class = w.bytes().fold(0, |f, c| f | class_of(c));
            let mut out = String::new();
            let masked = mask_word(w, class, &mut out);
            if !may_mask(w.as_bytes(), class) {
                assert_eq!(masked, None, "{w:?}: skipped by may_mask, yet masked");
            }
            if let Some(pure) = masked {
                assert!(has_wildcard(out.as_bytes()), "{w:?} -> {out:?}");
                assert_eq!(pure, is_pure_var(&out), "{w:?} -> {out:?}");
            } else {
                assert!(out.is_empty());
            }
        }
    }
}
