//! The kind of a word: what a slot holds (a path, a number, a sha, a URL, a glob or a string),
//! and the word shapes `argv.rs` goes by (flags, `NAME=value`, identifiers, punctuation).

use serde::{Deserialize, Serialize};

use super::Globbing;
use crate::action::placeholder::PLACEHOLDER_START;
use crate::mine::shell::Word;

/// The type of a slot value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotKind {
    /// A file or directory.
    Path,
    /// An integer or decimal number.
    Number,
    /// A hex id: a commit sha, a UUID.
    Hex,
    /// A URL (or an scp-like `git@host:path`).
    Url,
    /// A glob pattern.
    Glob,
    /// Anything else.
    String,
}

impl SlotKind {
    /// The kind's name, as written in templates (`<path>`).
    pub fn as_str(self) -> &'static str {
        match self {
            SlotKind::Path => "path",
            SlotKind::Number => "number",
            SlotKind::Hex => "hex",
            SlotKind::Url => "url",
            SlotKind::Glob => "glob",
            SlotKind::String => "string",
        }
    }
}

impl std::fmt::Display for SlotKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// File extensions that make a word a path.
const EXTENSIONS: &[&str] = &[
    "rs",
    "py",
    "pyi",
    "ipynb",
    "js",
    "mjs",
    "cjs",
    "jsx",
    "ts",
    "tsx",
    "mts",
    "cts",
    "json",
    "jsonl",
    "json5",
    "toml",
    "yaml",
    "yml",
    "md",
    "mdx",
    "rst",
    "txt",
    "csv",
    "tsv",
    "xml",
    "html",
    "htm",
    "css",
    "scss",
    "sass",
    "less",
    "sql",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "go",
    "java",
    "kt",
    "kts",
    "scala",
    "rb",
    "php",
    "swift",
    "m",
    "mm",
    "cs",
    "fs",
    "lua",
    "pl",
    "pm",
    "r",
    "jl",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "mli",
    "clj",
    "dart",
    "zig",
    "nim",
    "sol",
    "vue",
    "svelte",
    "astro",
    "proto",
    "graphql",
    "gql",
    "tf",
    "tfvars",
    "hcl",
    "ini",
    "cfg",
    "conf",
    "env",
    "lock",
    "log",
    "patch",
    "diff",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "webp",
    "ico",
    "pdf",
    "zip",
    "tar",
    "gz",
    "tgz",
    "bz2",
    "xz",
    "zst",
    "whl",
    "jar",
    "war",
    "so",
    "dylib",
    "dll",
    "a",
    "o",
    "wasm",
    "db",
    "sqlite",
    "sqlite3",
    "gradle",
    "properties",
    "mk",
    "cmake",
    "nix",
    "bzl",
    "mod",
    "sum",
    "tex",
    "bib",
    "out",
    "pem",
    "crt",
    "key",
    "service",
    "timer",
    "socket",
];

/// File names without an extension that are paths.
const FILE_NAMES: &[&str] = &[
    "Makefile",
    "GNUmakefile",
    "makefile",
    "Dockerfile",
    "Containerfile",
    "Justfile",
    "justfile",
    "Gemfile",
    "Rakefile",
    "Procfile",
    "Vagrantfile",
    "Jenkinsfile",
    "Pipfile",
    "Brewfile",
    "Tiltfile",
    "README",
    "LICENSE",
    "CHANGELOG",
    "CODEOWNERS",
    "BUILD",
    "WORKSPACE",
];

/// The kind of a word: url, number, hex (≥ 7 hex digits with a digit, or a UUID), glob (an
/// unescaped `*`, `?` or `[…]`), path (a `/`, a leading `.` or `~`, a known extension or file
/// name), or string. A word with whitespace is a string.
///
/// ```
/// use toolsmith::mine::token::{classify, SlotKind};
/// assert_eq!(classify("src/main.rs"), SlotKind::Path);
/// assert_eq!(classify("a1b2c3d"), SlotKind::Hex);
/// assert_eq!(classify("*.rs"), SlotKind::Glob);
/// assert_eq!(classify("main"), SlotKind::String);
/// ```
pub fn classify(word: &str) -> SlotKind {
    // A secret redacted at ingest is not a glob for its brackets: the word is classified as if
    // a plain value stood in the placeholder's place.
    if word.contains(PLACEHOLDER_START)
        && let Some(plain) = crate::action::placeholder::replace_placeholders(word, |_| "x".into())
    {
        return classify(&plain);
    }
    if word.is_empty() || word.contains(char::is_whitespace) {
        SlotKind::String
    } else if is_url(word) {
        SlotKind::Url
    } else if is_number(word) {
        SlotKind::Number
    } else if is_hex(word) {
        SlotKind::Hex
    } else if is_glob(word) {
        SlotKind::Glob
    } else if is_path(word) {
        SlotKind::Path
    } else {
        SlotKind::String
    }
}

fn is_url(word: &str) -> bool {
    if let Some((scheme, rest)) = word.split_once("://") {
        let mut chars = scheme.chars();
        return chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            && !rest.is_empty();
    }
    // scp-like `user@host.tld:path`, as git remotes are written.
    if let Some((user, rest)) = word.split_once('@')
        && let Some((host, _)) = rest.split_once(':')
    {
        let name = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        };
        return name(user) && name(host) && host.contains('.');
    }
    false
}

pub(super) fn is_number(word: &str) -> bool {
    if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let digits = word.strip_prefix(['-', '+']).unwrap_or(word);
    let (int, frac) = match digits.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (digits, None),
    };
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

fn is_hex(word: &str) -> bool {
    let uuid_groups: Vec<usize> = word.split('-').map(str::len).collect();
    let all_hex = word.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if all_hex && uuid_groups == [8, 4, 4, 4, 12] {
        return true;
    }
    word.len() >= 7
        && word.bytes().all(|b| b.is_ascii_hexdigit())
        && word.bytes().any(|b| b.is_ascii_digit())
}

/// Whether the shell whose rules are `globbing` expanded `word` as a pathname pattern: written
/// without any quote or escape and without an expansion (`$VAR/*.c` holds a value unknown
/// here), holding a pattern character of that shell (`*`, `?`, `[…]`; fish only knows `*`).
/// A word partly quoted (`'a b'/*.c`) is left literal: its quoted part would have to be kept
/// apart from its pattern, which the template does not write.
pub(super) fn expanded_glob(word: &Word, globbing: Globbing) -> bool {
    // A secret redacted at ingest stands where a value was: its brackets are not a pattern.
    if word.quoted
        || word.expanded
        || !word.substitutions.is_empty()
        || word.text.contains(PLACEHOLDER_START)
    {
        return false;
    }
    match globbing {
        Globbing::Fish => word.text.contains('*'),
        Globbing::Sh | Globbing::Zsh => is_glob(&word.text),
    }
}

fn is_glob(word: &str) -> bool {
    let mut escaped = false;
    let mut open_bracket = false;
    for c in word.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' => return true,
            '[' => open_bracket = true,
            ']' if open_bracket => return true,
            _ => {}
        }
    }
    false
}

fn is_path(word: &str) -> bool {
    if word.contains('/') || word.starts_with('.') || word.starts_with('~') {
        return true;
    }
    let bytes = word.as_bytes();
    if bytes.len() > 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\' {
        return true;
    }
    names_a_file(word)
}

/// Whether a word names a file by itself: its last component has a known extension or is a
/// known file name (`src/lib.rs`, `Makefile`, `test_x.py::test_y`) — a stronger sign than a
/// slash, which a branch (`feature/login`) has too.
pub fn names_a_file(word: &str) -> bool {
    let name = word.rsplit('/').next().unwrap_or(word);
    if FILE_NAMES.contains(&name) {
        return true;
    }
    // A pytest node id (`test_x.py::test_y`) names a file.
    let file = name.split("::").next().unwrap_or(name);
    match file.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty() && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

/// A word that can be a sub-command, target or script name: starts with a letter, then
/// letters, digits and `_ . : @ + -`, no `/`.
pub(super) fn is_identifier_like(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && word.len() <= 64
        && chars
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '@' | '+' | '-'))
}

/// Punctuation operands (`find … \( … \) !`, `{}`, `-`), kept literally; not `.` or `~`.
pub(super) fn is_punct(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 2
        && !word.chars().any(|c| c.is_alphanumeric())
        && !word.starts_with(['.', '~', '/'])
}

pub(super) fn is_flag(word: &str) -> bool {
    word.len() >= 2 && word.starts_with('-') && !is_number(word)
}

/// `NAME=value` with an identifier name.
pub(super) fn env_like(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_table() {
        use SlotKind::*;
        let cases: &[(&str, SlotKind)] = &[
            ("https://github.com/o/r", Url),
            ("http://localhost:3000/api?x=1", Url),
            ("git@github.com:o/r.git", Url),
            ("file:///tmp/x", Url),
            ("42", Number),
            ("-5", Number),
            ("+1", Number),
            ("3.14", Number),
            ("0x1F", Number),
            ("1234567", Number),
            ("a1b2c3d", Hex),
            ("4f2a9c1e8b7d", Hex),
            ("0123456789abcdef0123456789abcdef01234567", Hex),
            ("550e8400-e29b-41d4-a716-446655440000", Hex),
            ("deadbeef", String),
            ("abc123", String),
            ("*.rs", Glob),
            ("src/**/*.ts", Glob),
            ("file?.txt", Glob),
            ("[abc].md", Glob),
            ("a[b", String),
            ("src/main.rs", Path),
            ("./x", Path),
            ("../y", Path),
            (".", Path),
            ("~/.bashrc", Path),
            (".env", Path),
            ("Cargo.toml", Path),
            ("Makefile", Path),
            ("test_x.py::test_y", Path),
            ("C:\\Users\\x", Path),
            ("\\*.rs", Path),
            ("origin/main", Path),
            ("main", String),
            ("fix the bug", String),
            ("fix src/a.rs", String),
            ("", String),
            ("-", String),
            ("example.com", String),
            ("1.2.3", String),
            ("v1.0.0", String),
            ("create-next-app@latest", String),
            ("user@example.com", String),
        ];
        for (word, kind) in cases {
            assert_eq!(classify(word), *kind, "{word:?}");
        }
    }

    #[test]
    fn a_redacted_secret_is_classified_as_a_plain_value() {
        // Its brackets would make it a glob.
        assert_eq!(classify("[REDACTED:aws-secret-key]"), SlotKind::String);
        assert_eq!(classify("[ab].rs"), SlotKind::Glob);
        assert_eq!(classify("/home/[REDACTED:user-path]/x"), SlotKind::Path);
    }

    #[test]
    fn word_shapes_the_argument_reader_goes_by() {
        assert!(is_flag("-p") && is_flag("--release") && is_flag("-j4"));
        assert!(!is_flag("-") && !is_flag("-5") && !is_flag("p"));
        assert_eq!(env_like("CC=clang"), Some(("CC", "clang")));
        assert_eq!(env_like("_X="), Some(("_X", "")));
        assert_eq!(env_like("1X=1"), None);
        assert_eq!(env_like("--features=x"), None);
        assert_eq!(env_like("plain"), None);
        assert!(is_identifier_like("stash") && is_identifier_like("create-next-app@latest"));
        assert!(!is_identifier_like("src/x") && !is_identifier_like("1st"));
        assert!(!is_identifier_like(&"a".repeat(65)));
        assert!(is_punct("{}") && is_punct("(") && is_punct("!") && is_punct("-"));
        assert!(!is_punct(".") && !is_punct("~") && !is_punct("a") && !is_punct("..."));
        assert_eq!(SlotKind::Hex.to_string(), "hex");
    }
}
