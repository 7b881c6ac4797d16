//! Secrets that a file's kind or a structure's own markings give away.
//!
//! * **Secret files** ([`is_secret_file`]): in a `.env` file, an AWS `credentials` file, a
//!   `.git-credentials`, a `.my.cnf`, a `secrets.yaml`, … every value is a secret, whatever its
//!   name. When such a file is read (`cat .env.production`, a `Read` call, `sed -n 1,20p`) or
//!   written (a `Write`/`write_file` call, `cat > .env <<EOF`, `echo "K=V" >> .env`, a patch
//!   that adds or changes it), each `NAME=value` / `name: value` / `"name": "value"` line loses
//!   its value: `[REDACTED:secret-file]`. Values that cannot be secrets are kept: empty ones,
//!   `true`/`false`, short numbers (ports), references (`${X}`), paths, URLs (their passwords
//!   are the URL rule's), addresses, and a plain word under a name without a secret word
//!   (`NODE_ENV=production`). Examples and templates (`.env.example`, `.env.sample`,
//!   `.env.template`) are meant to be shared and are not secret files.
//! * **Structured output that marks its secrets** ([`redact_structured`]): a JSON object with
//!   `"sensitive": true` (`terraform output -json`, `terraform show -json`) loses every string
//!   of its `value` (`[REDACTED:sensitive-output]`); a Kubernetes `Secret` (YAML or JSON, from
//!   `kubectl get -o yaml`, a manifest written or applied) loses every value of its `data` and
//!   `stringData` (`[REDACTED:kubernetes-secret]`); an XML element named like a secret
//!   (`<password>…</password>` in Maven's `settings.xml`) loses its text.
//! * **Values that name themselves** ([`redact_structured`] too): a random run after a prefix of
//!   words one of which is `secret`, `token` or `private` (`acme_secret_…`, `TOKEN-…`;
//!   `AGE-SECRET-KEY-1…` has a rule of its own in [`super::redact`]) is
//!   `[REDACTED:prefixed-secret]`; the prefix is kept.
//!
//! Names and structure are kept, so a tool still sees which file was read or which key was
//! set; only the values go, and each is reported ([`Found`]) so that the sanitizer finds it again
//! wherever it comes back.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;

use super::redact::{
    Found, Keyword, credential_shaped, is_literal_word, is_mask, is_placeholder_text,
    looks_like_path, name_secret, reads_as_words,
};

/// The kind of a value of a secret file.
const SECRET_FILE: &str = "secret-file";
/// The kind of a value its structure marks as sensitive.
const SENSITIVE: &str = "sensitive-output";
/// The kind of a value of a Kubernetes Secret.
const KUBERNETES_SECRET: &str = "kubernetes-secret";
/// The kind of a value whose own prefix names it a secret.
const SELF_NAMED_KIND: &str = "prefixed-secret";

/// Whether every value of the file at `path` is a secret (see the module documentation).
pub fn is_secret_file(path: &str) -> bool {
    let path = path.trim().trim_matches(['"', '\'']);
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    const SHARED: &[&str] = &[
        "example", "sample", "template", "dist", "defaults", "schema",
    ];
    let shared = lower
        .split(['.', '-', '_'])
        .any(|part| SHARED.contains(&part));
    if shared || lower.is_empty() {
        return false;
    }
    // `.env`, `.env.local`, `.env.production`, `prod.env`, `app.env`.
    let dotenv = lower == ".env" || lower.starts_with(".env.") || lower.ends_with(".env");
    let named = matches!(
        lower.as_str(),
        ".git-credentials"
            | "git-credentials"
            | ".my.cnf"
            | "my.cnf"
            | ".mylogin.cnf"
            | ".s3cfg"
            | ".boto"
            | ".pypirc"
            | ".npmrc"
            | ".yarnrc.yml"
            | ".htpasswd"
            | ".dockercfg"
            | "credentials.tfrc.json"
            | ".terraformrc"
            | "application_default_credentials.json"
            | "hosts.yml"
    );
    // `~/.aws/credentials`, `credentials.toml` (Cargo), `client_secret.json`, `secrets.yaml`,
    // `db-credentials.env`, `vault.secret`.
    let stem_words = lower.split(['.', '-', '_']).collect::<Vec<_>>();
    let secret_word = stem_words.iter().any(|w| {
        matches!(
            *w,
            "credentials" | "credential" | "secret" | "secrets" | "passwords" | "tokens"
        )
    });
    // Code and docs named after secrets (`secrets.py`, `credentials.md`) are not secret files.
    let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
    let data = matches!(
        ext,
        "" | "env"
            | "json"
            | "yaml"
            | "yml"
            | "toml"
            | "ini"
            | "cfg"
            | "conf"
            | "properties"
            | "txt"
            | "secret"
            | "secrets"
            | "credentials"
            | "tfvars"
    );
    // Files whose generic name is a credential store only where the tool keeps it (the path is
    // looked at only for those names: this runs on every file a command names).
    let placed_name = matches!(
        lower.as_str(),
        "config.json"
            | "config"
            | "hosts.yml"
            | "hub"
            | "accesstokens.json"
            | "msal_token_cache.json"
            | "credentials"
            | "rclone.conf"
    );
    let lower_path = if placed_name {
        path.to_ascii_lowercase().replace('\\', "/")
    } else {
        String::new()
    };
    let placed = placed_name
        && [
            ".docker/config.json",
            ".kube/config",
            ".config/gh/hosts.yml",
            ".config/hub",
            ".azure/accesstokens.json",
            ".azure/msal_token_cache.json",
            ".gem/credentials",
            ".config/rclone/rclone.conf",
        ]
        .iter()
        .any(|suffix| {
            lower_path.ends_with(suffix)
                && (lower_path.len() == suffix.len()
                    || lower_path.as_bytes()[lower_path.len() - suffix.len() - 1] == b'/')
        });
    dotenv || named || placed || (secret_word && data)
}

/// `NAME=value`, `NAME: value`, `"name": "value"`, `name = value` at the start of a line, after
/// what tools put before a file's lines: the file and line number of a search over several files
/// (`rg -n`'s `.env.local:3:`, group `gp`), a line number (`cat -n`'s `   3\t`, `Read`'s `   3→`,
/// OpenCode's `00003| `, `grep -n`'s `3:`), a patch's `+`/`-`/` `, YAML's `- `, `export `, or an
/// `echo`/`printf` writing the line.
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static SECRET_FILE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)^(?:(?P<gp>[^\s:]*[^\s:0-9][^\s:]*):(?:[0-9]+:)?)?[ \t]*(?:[0-9]+(?:→|\t|\| ?|:)[ \t]*)?(?:[+ -][ \t]*)?(?:- )?(?:(?:echo|printf)(?:[ \t]+-[A-Za-z]+)*[ \t]+["']?)?(?:export[ \t]+)?["']?(?P<k>[A-Za-z_][A-Za-z0-9_.\-]*)["']?[ \t]*(?:=|:)[ \t]*(?P<v>[^\r\n]*)"#,
    )
    .expect("secret file line pattern compiles")
});

/// The value at the start of `rest` (what follows a name's separator): a quoted string's inside,
/// or a bare word up to a blank, a comment, a trailing comma or the end. Returns its range in
/// `rest`.
fn value_range(rest: &str) -> Option<(usize, usize)> {
    let b = rest.as_bytes();
    match b.first()? {
        q @ (b'"' | b'\'') => {
            let mut i = 1;
            while i < b.len() && b[i] != *q {
                if b[i] == b'\\' && *q == b'"' {
                    i += 1;
                }
                i += 1;
            }
            (i < b.len() || i > 1).then_some((1, i.min(b.len())))
        }
        _ => {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '\'' || c == '"')
                .unwrap_or(rest.len());
            let end = rest[..end].trim_end_matches(',').len();
            (end > 0).then_some((0, end))
        }
    }
}

/// Whether a value of a secret file (or of a variable store's `NAME=value`), under `name`, is
/// kept: it cannot be a secret, or is plain and its name says nothing of secrets.
pub(super) fn keeps(name: &str, value: &str) -> bool {
    let v = value.trim();
    if v.is_empty()
        || v.starts_with("[REDACTED")
        || is_literal_word(v)
        || is_mask(v)
        || is_placeholder_text(v)
        || looks_like_path(v)
        || matches!(v, "{" | "[" | "|" | ">" | "|-" | ">-" | "{}" | "[]")
    {
        return true;
    }
    if v.len() <= 12 && v.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
        return true; // ports, counts, versions, addresses
    }
    if v.contains("://") && !v.contains('@') {
        return true; // a URL without user info: its passwords are the URL rule's
    }
    // In a secret file a secret word in the name settles it (`SECRET_VALUE=sunshine`), but for
    // `auth` and `credential` inside the name (`AUTH_RATE_LIMIT=10/minute`) the value decides.
    match name_secret(name, false) {
        Some((kw, inner)) if !inner || kw != Keyword::Weak || credential_shaped(v) => {
            return false;
        }
        _ => {}
    }
    // Public by its name (`NEXT_PUBLIC_…`, `EXPO_PUBLIC_…`, `PUBLIC_…`): shipped to browsers.
    if name
        .split(['_', '-', '.'])
        .any(|w| w.eq_ignore_ascii_case("public"))
    {
        return true;
    }
    // Plain words under a name that says nothing of secrets: `NODE_ENV=production`,
    // `region = eu-west-1`, `kind: Secret`, `TIMEZONE=Africa/Johannesburg`, `LIMIT=10/minute`.
    let plain = v.len() <= 24
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c));
    !credential_shaped(v) && (plain || (v.len() <= 48 && reads_as_words(v)))
}

/// Redacts every value of a secret file's lines in `text` (the file's content, a read of it, or
/// lines written into it).
pub fn redact_secret_file<'a>(text: &'a str, found: &mut Vec<Found>) -> Cow<'a, str> {
    let mut edits = Vec::new();
    secret_file_edits(text, 0, &mut edits);
    apply(text, edits, found)
}

/// The values of the secret-file lines of `part` (which starts at `base` in the whole text).
fn secret_file_edits(part: &str, base: usize, edits: &mut Vec<(usize, usize, &'static str)>) {
    for c in SECRET_FILE_LINE.captures_iter(part) {
        let (Some(k), Some(v)) = (c.name("k"), c.name("v")) else {
            continue;
        };
        // A search over several files: only the secret files' lines.
        if c.name("gp").is_some_and(|f| !is_secret_file(f.as_str())) {
            continue;
        }
        let Some((a, b)) = value_range(v.as_str()) else {
            continue;
        };
        if !keeps(k.as_str(), &v.as_str()[a..b]) {
            edits.push((base + v.start() + a, base + v.start() + b, SECRET_FILE));
        }
    }
}

/// The literals one of which every name [`is_secret_file`] takes holds, in the cases file names
/// write them (`.env`, `prod.ENV`, `Secrets.yaml`). A set of literals searched together (an
/// automaton, not a case-insensitive regex, which would run over every byte).
// A constant set of literals: `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static SECRET_FILE_NAME_LITERALS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let mut literals: Vec<String> = Vec::new();
    for word in ["env", "cred", "secret", "passwords", "tokens", "cnf"] {
        let capitalized = format!("{}{}", word[..1].to_ascii_uppercase(), &word[1..]);
        literals.extend([word.to_owned(), capitalized, word.to_ascii_uppercase()]);
    }
    literals.extend(
        [
            "npmrc",
            "pypirc",
            "s3cfg",
            "boto",
            "htpasswd",
            "dockercfg",
            "tfrc",
            "terraformrc",
            "yarnrc",
            "hosts.yml",
            "docker/config",
            "kube/config",
            "config/hub",
            "accessTokens",
            "msal_token",
            "rclone.conf",
        ]
        .map(String::from),
    );
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(literals)
        .expect("secret file name literals build")
});

/// Where a command writes: the file after `>`, `>>` or `tee [-a]`.
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static WRITE_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:>>?|(?-u:\b)tee(?:[ \t]+-a)?)[ \t]*["']?(?P<f>[^\s"'|;&<>()]+)"#)
        .expect("write target pattern compiles")
});

/// The headers of a patch that name its files: `*** Add File: path` / `*** Update File: path` /
/// `*** Delete File: path` (Codex's `apply_patch`) and a unified diff's `+++ b/path`, each as the
/// header's range and its path's range. A scan from each `*** ` and `+++ ` at a line's start.
fn patch_headers(text: &str) -> Vec<((usize, usize), (usize, usize))> {
    static FINDERS: LazyLock<[memchr::memmem::Finder<'static>; 2]> = LazyLock::new(|| {
        [
            memchr::memmem::Finder::new("*** "),
            memchr::memmem::Finder::new("+++ "),
        ]
    });
    let mut headers = Vec::new();
    for (marker, finder) in ["*** ", "+++ "].into_iter().zip(FINDERS.iter()) {
        for at in finder.find_iter(text.as_bytes()) {
            if at > 0 && text.as_bytes()[at - 1] != b'\n' {
                continue;
            }
            let line_end = text[at..].find(['\r', '\n']).map_or(text.len(), |n| at + n);
            let rest = &text[at + marker.len()..line_end];
            let path = if marker == "*** " {
                ["Add File: ", "Update File: ", "Delete File: "]
                    .iter()
                    .find_map(|h| rest.strip_prefix(h))
            } else {
                Some(rest.strip_prefix("b/").unwrap_or(rest))
            };
            if let Some(path) = path.filter(|p| !p.is_empty()) {
                headers.push(((at, line_end), (line_end - path.len(), line_end)));
            }
        }
    }
    headers.sort_unstable();
    headers
}

/// Redacts what a command line or a patch writes into secret files: a heredoc's or an `echo`'s
/// lines when the command writes to one (`cat > .env <<EOF`, `echo "K=V" >> .env.local`), the
/// sections of a patch that add or change one.
pub fn redact_file_writes<'a>(text: &'a str, found: &mut Vec<Found>) -> Cow<'a, str> {
    let mut sections: Vec<(usize, usize)> = Vec::new();
    // A patch names its files in its headers: only those are looked at.
    let patch = patch_headers(text);
    for (i, ((_, header_end), (f_start, f_end))) in patch.iter().enumerate() {
        if is_secret_file(&text[*f_start..*f_end]) {
            let end = patch.get(i + 1).map_or(text.len(), |((next, _), _)| *next);
            sections.push((*header_end, end));
        }
    }
    if patch.is_empty() {
        // Every secret file's name holds one of these literals: only the lines holding one
        // can write to such a file.
        let mut searched_to = 0;
        for hit in SECRET_FILE_NAME_LITERALS.find_iter(text) {
            if hit.start() < searched_to {
                continue;
            }
            let line_start = text[..hit.start()].rfind('\n').map_or(0, |n| n + 1);
            let line_end = text[hit.end()..]
                .find('\n')
                .map_or(text.len(), |n| hit.end() + n);
            searched_to = line_end;
            let line = &text[line_start..line_end];
            let writes_secret = WRITE_TARGET
                .captures_iter(line)
                .filter_map(|c| c.name("f"))
                .any(|f| is_secret_file(f.as_str()));
            if !writes_secret {
                continue;
            }
            // This line, and a heredoc it opens up to its terminator.
            let mut end = line_end;
            if let Some(tag) = heredoc_tag(line) {
                let body = (line_end + 1).min(text.len());
                end = text[body..]
                    .lines()
                    .scan(body, |at, l| {
                        let start = *at;
                        *at += l.len() + 1;
                        Some((start, l))
                    })
                    .find(|(_, l)| l.trim() == tag)
                    .map_or(text.len(), |(start, _)| start);
            }
            sections.push((line_start, end));
        }
    }
    if sections.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut edits = Vec::new();
    for (start, end) in sections {
        secret_file_edits(&text[start..end], start, &mut edits);
    }
    apply(text, edits, found)
}

/// The starts of the lines of `text`.
fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1))
}

/// The terminator of a heredoc a line opens (`<<EOF`, `<<-'EOF'`, `<< "END"`).
fn heredoc_tag(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    if rest.starts_with('<') {
        return None; // a here-string
    }
    let tag: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!tag.is_empty()).then_some(tag)
}

/// The literals the structured rules start from: the secret words of [`SELF_NAMED`] with the
/// separator after them (first: `Secret_` is one, not the `Secret` of a kind), a Kubernetes
/// kind, `"sensitive"`, and the closing tags of elements named like secrets — by the secret word
/// that ends the name (`password>`, `apiKey>`) or starts it (`</secretValue`). Not every `</`:
/// a literal of two bytes makes the search test most positions of a web page.
// A constant set of literals: `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static STRUCTURE_MARKS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let mut literals = Vec::new();
    for word in [
        "SECRET", "Secret", "secret", "TOKEN", "Token", "token", "PRIVATE", "Private", "private",
    ] {
        literals.push(format!("{word}_"));
        literals.push(format!("{word}-"));
    }
    literals.extend(["Secret", "\"sensitive\""].map(String::from));
    // The words `classify_name` takes at a name's end, in the three cases a name writes them.
    for word in [
        "passphrase",
        "password",
        "passwd",
        "credentials",
        "credential",
        "secret",
        "token",
        "auth",
        "pass",
        "pwd",
        "key",
    ] {
        let capitalized = format!("{}{}", word[..1].to_ascii_uppercase(), &word[1..]);
        for case in [word.to_owned(), capitalized, word.to_ascii_uppercase()] {
            literals.push(format!("{case}>"));
        }
    }
    for word in [
        "secret",
        "token",
        "password",
        "passwd",
        "pwd",
        "credential",
        "auth",
    ] {
        literals.push(format!("</{word}"));
    }
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(literals)
        .expect("structure marks build")
});

/// What [`STRUCTURE_MARKS`] found in a text, checked: where each rule has something to look at.
#[derive(Default)]
struct StructureMarks {
    /// `"sensitive": true`.
    sensitive: bool,
    /// `kind: Secret` (YAML or JSON).
    secret_kind: bool,
    /// Closing tags of elements whose name holds a secret word: where their `<` is.
    closings: Vec<usize>,
    /// Secret words with a separator after them: their ranges.
    words: Vec<(usize, usize)>,
}

impl StructureMarks {
    fn of(text: &str) -> Self {
        let b = text.as_bytes();
        let mut marks = StructureMarks::default();
        let blank = |c: &u8| matches!(c, b' ' | b'\t');
        for m in STRUCTURE_MARKS.find_iter(text) {
            let (start, end) = (m.start(), m.end());
            match &b[start..end] {
                tag if tag.starts_with(b"</") => marks.closings.push(start),
                tag if tag.ends_with(b">") => {
                    // The name the word ends, and the `</` before it.
                    let name_start = b[..end - 1]
                        .iter()
                        .rposition(|c| {
                            !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-'))
                        })
                        .map_or(0, |i| i + 1);
                    if name_start >= 2 && &b[name_start - 2..name_start] == b"</" {
                        marks.closings.push(name_start - 2);
                    }
                }
                b"\"sensitive\"" => {
                    let rest = &b[end..];
                    let rest = &rest[rest.iter().take_while(|c| blank(c)).count()..];
                    if let Some(rest) = rest.strip_prefix(b":") {
                        let rest = &rest[rest.iter().take_while(|c| blank(c)).count()..];
                        marks.sensitive |= rest.starts_with(b"true");
                    }
                }
                b"Secret" => {
                    // `kind: Secret`, `"kind": "Secret"`, not `SecretManager`.
                    let ends_word = b
                        .get(end)
                        .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'));
                    let before = text[..start]
                        .trim_end_matches('"')
                        .trim_end_matches([' ', '\t']);
                    let before = before.strip_suffix(':').unwrap_or("");
                    let before = before.trim_end_matches([' ', '\t']).trim_end_matches('"');
                    marks.secret_kind |= ends_word && before.ends_with("kind");
                }
                _ => marks.words.push((start, end)),
            }
        }
        // `</secretToken>` is found by its start and by its end.
        marks.closings.dedup();
        marks
    }
}

/// A value whose own prefix says it is a secret (`AGE-SECRET-KEY-1…`, `acme_secret_…`,
/// `TOKEN-…`, `private-…`): words joined by `-`/`_`, one of them a secret word, then a random
/// run of 24 characters or more (group `v`).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static SELF_NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u:\b)(?:[A-Za-z0-9]+[-_])*(?:SECRET|Secret|secret|TOKEN|Token|token|PRIVATE|Private|private)(?:[-_][A-Za-z]+)*[-_](?P<v>[A-Za-z0-9]{24,})(?-u:\b)",
    )
    .expect("self-named secret pattern compiles")
});

/// Whether a run behind a secret-named prefix is random: a credential's shape, with digits
/// and letters mixed four times or more (`ProviderFactory2024` is a name, not a key).
fn random_run(v: &str) -> bool {
    let b = v.as_bytes();
    let mixes = b
        .windows(2)
        .filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit())
        .count();
    mixes >= 4 && credential_shaped(v)
}

/// Redacts what a structure marks as secret, and values that name themselves secrets (see the
/// module documentation).
pub fn redact_structured<'a>(text: &'a str, found: &mut Vec<Found>) -> Cow<'a, str> {
    // One search says which rules have anything to look at, and where.
    let marks = StructureMarks::of(text);
    let mut edits = Vec::new();
    self_named(text, &marks.words, &mut edits);
    if marks.sensitive {
        sensitive_values(text, &mut edits);
    }
    if marks.secret_kind {
        kubernetes_secret_yaml(text, &mut edits);
        kubernetes_secret_json(text, &mut edits);
    }
    xml_elements(text, &marks.closings, &mut edits);
    apply(text, edits, found)
}

/// The values whose own prefix names them secret ([`SELF_NAMED`]), looked for only around
/// the secret words followed by a separator that [`STRUCTURE_MARKS`] found (`words`): the full
/// pattern has no literal to start from.
fn self_named(text: &str, words: &[(usize, usize)], edits: &mut Vec<(usize, usize, &'static str)>) {
    let b = text.as_bytes();
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    let mut searched_to = 0;
    for &(word_start, word_end) in words {
        if word_start < searched_to {
            continue;
        }
        // The run of word characters and separators around the word holds the whole match.
        let mut start = word_start;
        while start > 0 && is_word(b[start - 1]) {
            start -= 1;
        }
        let mut end = word_end;
        while end < b.len() && is_word(b[end]) {
            end += 1;
        }
        searched_to = end;
        for c in SELF_NAMED.captures_iter(&text[start..end]) {
            if let Some(v) = c.name("v")
                && random_run(v.as_str())
            {
                edits.push((start + v.start(), start + v.end(), SELF_NAMED_KIND));
            }
        }
    }
}

/// A JSON string at the start of `text` (`"…"` with escapes): its inside's range.
fn json_string(text: &str) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some((1, i)),
            _ => i += 1,
        }
    }
    None
}

/// The end of the JSON value starting at `text[0]` (object, array, string or scalar), counting
/// brackets outside strings; the end of `text` when it is cut short.
fn json_value_end(text: &str) -> usize {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => match json_string(&text[i..]) {
                Some((_, close)) => {
                    i += close + 1;
                    if depth == 0 {
                        return i;
                    }
                    continue;
                }
                None => return b.len(),
            },
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth <= 1 {
                    return i + 1;
                }
                depth -= 1;
            }
            b',' | b'\n' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// Every string inside the JSON value `text[start..end]`, as ranges of their insides.
fn json_strings(
    text: &str,
    start: usize,
    end: usize,
    edits: &mut Vec<(usize, usize, &'static str)>,
    kind: &'static str,
) {
    let mut i = start;
    while i < end {
        if text.as_bytes()[i] == b'"'
            && let Some((a, b)) = json_string(&text[i..end])
        {
            let (a, b) = (i + a, i + b);
            // A key (`"name":`) is structure, not a value.
            let is_key = text[b + 1..end].trim_start().starts_with(':');
            if !is_key && b > a {
                edits.push((a, b, kind));
            }
            i = b + 1;
            continue;
        }
        i += 1;
    }
}

/// `{"sensitive": true, "type": …, "value": …}`, in any order: the object around each
/// `"sensitive": true` is found by its braces, and every string of its `"value"` goes.
fn sensitive_values(text: &str, edits: &mut Vec<(usize, usize, &'static str)>) {
    static SENSITIVE_TRUE: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#""sensitive"[ \t]*:[ \t]*true"#).ok());
    static VALUE_KEY: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#""value"[ \t\r\n]*:[ \t\r\n]*"#).ok());
    let (Some(marker), Some(value_key)) = (SENSITIVE_TRUE.as_ref(), VALUE_KEY.as_ref()) else {
        return;
    };
    for m in marker.find_iter(text) {
        let Some(open) = enclosing_brace(text, m.start()) else {
            continue;
        };
        let close = open + json_value_end(&text[open..]);
        // Only this object's own `"value"`, not one of an object nested in it.
        for v in value_key.find_iter(&text[open..close]) {
            let at = open + v.start();
            if enclosing_brace(text, at) != Some(open) {
                continue;
            }
            let value_start = open + v.end();
            let value_end = value_start + json_value_end(&text[value_start..close]);
            json_strings(text, value_start, value_end.min(close), edits, SENSITIVE);
        }
    }
}

/// The `{` of the innermost object holding position `at` (strings skipped roughly: braces in
/// strings are rare in the output this reads).
fn enclosing_brace(text: &str, at: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = at;
    while i > 0 {
        i -= 1;
        match b[i] {
            b'}' | b']' => depth += 1,
            b'{' if depth == 0 => return Some(i),
            b'[' if depth == 0 => return None,
            b'{' | b'[' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// YAML documents of `kind: Secret`: the values of the keys under `data:` and `stringData:`.
fn kubernetes_secret_yaml(text: &str, edits: &mut Vec<(usize, usize, &'static str)>) {
    // Documents are cut at `---` lines; a document is a Secret if a line says `kind: Secret`.
    let mut doc_start = 0;
    let mut docs = Vec::new();
    for start in line_starts(text) {
        let line = text[start..].lines().next().unwrap_or("");
        if line.trim_end() == "---" {
            docs.push((doc_start, start));
            doc_start = start + line.len();
        }
    }
    docs.push((doc_start, text.len()));
    for (ds, de) in docs {
        let doc = &text[ds..de];
        let is_secret = doc.lines().any(|l| {
            let l = strip_line_number(l).trim();
            l == "kind: Secret" || l == "kind: \"Secret\""
        });
        if !is_secret {
            continue;
        }
        let mut block: Option<usize> = None; // indentation of the `data:` line
        let mut at = ds;
        for line in doc.split_inclusive('\n') {
            let line_start = at;
            at += line.len();
            let content = line.trim_end_matches(['\n', '\r']);
            let body = strip_line_number(content);
            let offset = content.len() - body.len();
            let indent = body.len() - body.trim_start().len();
            let trimmed = body.trim();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(data_indent) = block {
                if indent > data_indent {
                    if let Some((key, value)) = trimmed.split_once(':') {
                        let value_trim = value.trim();
                        if !key.contains(' ')
                            && !value_trim.is_empty()
                            && !is_placeholder_text(value_trim.trim_matches(['"', '\'']))
                        {
                            let v_off = body.len() - body.trim_start().len() + key.len() + 1;
                            let lead = value.len() - value.trim_start().len();
                            let quoted =
                                value_trim.starts_with(['"', '\'']) && value_trim.len() >= 2;
                            let (a, len) = if quoted {
                                (lead + 1, value_trim.len() - 2)
                            } else {
                                (lead, value_trim.len())
                            };
                            let start = line_start + offset + v_off + a;
                            if len > 0 {
                                edits.push((start, start + len, KUBERNETES_SECRET));
                            }
                        }
                    }
                    continue;
                }
                block = None;
            }
            if trimmed == "data:" || trimmed == "stringData:" {
                block = Some(indent);
            }
        }
    }
}

/// A line without the number a reading tool put before it (`   3→`, `   3\t`, `00003| `).
fn strip_line_number(line: &str) -> &str {
    let t = line.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return line;
    }
    let rest = &t[digits..];
    for sep in ["→", "\t", "| ", "|"] {
        if let Some(r) = rest.strip_prefix(sep) {
            return r;
        }
    }
    line
}

/// JSON Secrets: in an object with `"kind": "Secret"`, the strings of its `"data"` and
/// `"stringData"` objects.
fn kubernetes_secret_json(text: &str, edits: &mut Vec<(usize, usize, &'static str)>) {
    static KIND: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#""kind"[ \t\r\n]*:[ \t\r\n]*"Secret""#).ok());
    static DATA: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#""(?:data|stringData)"[ \t\r\n]*:[ \t\r\n]*\{"#).ok());
    let (Some(kind), Some(data)) = (KIND.as_ref(), DATA.as_ref()) else {
        return;
    };
    for m in kind.find_iter(text) {
        let Some(open) = enclosing_brace(text, m.start()) else {
            continue;
        };
        let close = open + json_value_end(&text[open..]);
        for d in data.find_iter(&text[open..close]) {
            let obj = open + d.end() - 1;
            if enclosing_brace(text, obj) != Some(open) {
                continue;
            }
            let end = obj + json_value_end(&text[obj..]);
            json_strings(text, obj, end.min(close), edits, KUBERNETES_SECRET);
        }
    }
}

/// `<password>…</password>`, `<apiToken>…</apiToken>`: an element named like a secret, holding
/// text only.
fn xml_elements(text: &str, closings: &[usize], edits: &mut Vec<(usize, usize, &'static str)>) {
    let b = text.as_bytes();
    let name_char = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-');
    // From each closing tag [`STRUCTURE_MARKS`] found back to its opening tag on the same line.
    for &at in closings {
        let rest = &b[at + 2..];
        let len = rest.iter().take_while(|c| name_char(c)).count();
        if len == 0
            || !(rest[0].is_ascii_alphabetic() || rest[0] == b'_')
            || rest.get(len) != Some(&b'>')
        {
            continue;
        }
        let name = &text[at + 2..at + 2 + len];
        let Some((_, inner)) = name_secret(name, false) else {
            continue;
        };
        let line_start = text[..at].rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let open = format!("<{name}>");
        let Some(open_at) = text[line_start..at].rfind(&open) else {
            continue;
        };
        let v_start = line_start + open_at + open.len();
        let raw = &text[v_start..at];
        if raw.is_empty() || raw.len() > 512 || raw.contains(['<', '>']) {
            continue;
        }
        let value = raw.trim();
        if value.is_empty()
            || is_placeholder_text(value)
            || is_literal_word(value)
            || is_mask(value)
            || (inner && !credential_shaped(value))
        {
            continue;
        }
        let lead = raw.len() - raw.trim_start().len();
        edits.push((
            v_start + lead,
            v_start + lead + value.len(),
            "secret-assignment",
        ));
    }
}

/// Applies non-overlapping edits `(start, end, kind)` (sorted here; an overlapping or
/// already redacted one is passed over), reporting each replaced value.
pub(super) fn apply<'a>(
    text: &'a str,
    mut edits: Vec<(usize, usize, &'static str)>,
    found: &mut Vec<Found>,
) -> Cow<'a, str> {
    if edits.is_empty() {
        return Cow::Borrowed(text);
    }
    edits.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1)));
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut changed = false;
    for (start, end, kind) in edits {
        let Some(value) = text.get(start..end) else {
            continue;
        };
        if start < last || value.is_empty() || value.starts_with("[REDACTED") {
            continue;
        }
        out.push_str(&text[last..start]);
        out.push_str("[REDACTED:");
        out.push_str(kind);
        out.push(']');
        found.push(Found {
            value: value.to_owned(),
            kind,
        });
        last = end;
        changed = true;
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: &str = "q8Zr2mW4kT9xLp3Hs7Nv";
    const S2: &str = "Yb7c1Kd9Qe3Wf5Rg8Th2";

    fn secret_file(text: &str) -> String {
        redact_secret_file(text, &mut Vec::new()).into_owned()
    }

    #[test]
    fn which_files_hold_only_secrets() {
        for path in [
            ".env",
            "/srv/app/.env.production",
            "./.env.local",
            "config/prod.env",
            "/home/dev/.aws/credentials",
            "~/.cargo/credentials.toml",
            "client_secret.json",
            "deploy/secrets.yaml",
            "/home/dev/.git-credentials",
            "~/.my.cnf",
            ".npmrc",
            "'.env.staging'",
        ] {
            assert!(is_secret_file(path), "{path}");
        }
        for path in [
            ".env.example",
            ".env.sample",
            "env.template",
            "src/secrets.py",
            "docs/credentials.md",
            "environment.ts",
            ".envrc.d/README",
            "Cargo.toml",
            "src/env.rs",
        ] {
            assert!(!is_secret_file(path), "{path}");
        }
    }

    #[test]
    fn every_value_of_a_secret_file_goes_whatever_its_name() {
        let text = format!(
            "# app settings\nNODE_ENV=production\nPORT=3000\nDATABASE_URL=postgres://db.internal:5432/app\n\
             SESSION_SIGNATURE={S1}\nexport STRIPE_WEBHOOK=\"{S2}\"\nDEBUG=false\nREDIS_HOST=10.0.0.7\n\
             EMPTY=\nFROM_ENV=${{OTHER}}\nMAILER_USER=postmaster\n"
        );
        let want = "# app settings\nNODE_ENV=production\nPORT=3000\nDATABASE_URL=postgres://db.internal:5432/app\n\
             SESSION_SIGNATURE=[REDACTED:secret-file]\nexport STRIPE_WEBHOOK=\"[REDACTED:secret-file]\"\nDEBUG=false\nREDIS_HOST=10.0.0.7\n\
             EMPTY=\nFROM_ENV=${OTHER}\nMAILER_USER=postmaster\n";
        assert_eq!(secret_file(&text), want);
        // A plain word under a secret name goes too.
        assert_eq!(
            secret_file("SECRET_VALUE=sunshine\n"),
            "SECRET_VALUE=[REDACTED:secret-file]\n"
        );
        // As reading tools print it: line numbers of `cat -n`, Read, OpenCode, `grep -n`.
        for (prefix, sep) in [
            ("     1", "\t"),
            ("     1", "→"),
            ("00001", "| "),
            ("1", ":"),
        ] {
            let line = format!("{prefix}{sep}APP_SIGNATURE={S1}\n");
            assert_eq!(
                secret_file(&line),
                format!("{prefix}{sep}APP_SIGNATURE=[REDACTED:secret-file]\n")
            );
        }
        // A search over several files: only the secret files' lines lose their values.
        let search = format!(
            ".env.example:3:HOOK={S2}\n.env.local:3:HOOK={S1}\nsrc/app.ts:12:const HOOK = process.env.HOOK;\n"
        );
        assert_eq!(
            secret_file(&search),
            format!(
                ".env.example:3:HOOK={S2}\n.env.local:3:HOOK=[REDACTED:secret-file]\nsrc/app.ts:12:const HOOK = process.env.HOOK;\n"
            )
        );
        // Public by name, and plain words, are kept.
        let kept = format!(
            "NEXT_PUBLIC_MINT={S1}\nTIMEZONE=Africa/Johannesburg\nAUTH_RATE_LIMIT=10/minute\n"
        );
        assert_eq!(secret_file(&kept), kept);
        // INI, YAML and JSON credential files.
        let ini = format!(
            "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\nregion = eu-west-1\nsigning = {S1}\n"
        );
        assert_eq!(
            secret_file(&ini),
            "[default]\naws_access_key_id = [REDACTED:secret-file]\nregion = eu-west-1\nsigning = [REDACTED:secret-file]\n"
        );
        let json = format!(
            "{{\n  \"client_id\": \"1234.apps.example.com\",\n  \"refresh\": \"{S2}\",\n  \"port\": 8080\n}}\n"
        );
        assert_eq!(
            secret_file(&json),
            "{\n  \"client_id\": \"1234.apps.example.com\",\n  \"refresh\": \"[REDACTED:secret-file]\",\n  \"port\": 8080\n}\n"
        );
    }

    #[test]
    fn what_a_command_or_a_patch_writes_into_a_secret_file() {
        let heredoc = format!(
            "cat > .env.production <<'EOF'\nAPP_SIGNATURE={S1}\nLOG_LEVEL=info\nEOF\nnpm run build"
        );
        assert_eq!(
            redact_file_writes(&heredoc, &mut Vec::new()),
            "cat > .env.production <<'EOF'\nAPP_SIGNATURE=[REDACTED:secret-file]\nLOG_LEVEL=info\nEOF\nnpm run build"
        );
        let echo = format!("echo \"HOOK_SIGNATURE={S2}\" >> .env && npm start");
        assert_eq!(
            redact_file_writes(&echo, &mut Vec::new()),
            "echo \"HOOK_SIGNATURE=[REDACTED:secret-file]\" >> .env && npm start"
        );
        let patch = format!(
            "*** Begin Patch\n*** Add File: .env.local\n+VALUE_ONE={S1}\n+PORT=8080\n*** Update File: src/app.ts\n@@\n-const a = \"{S2}\";\n+const a = 1;\n*** End Patch"
        );
        let out = redact_file_writes(&patch, &mut Vec::new());
        assert!(
            out.contains("+VALUE_ONE=[REDACTED:secret-file]\n+PORT=8080\n"),
            "{out}"
        );
        // The source file's section is not a secret file's: left to the other rules.
        assert!(out.contains(&format!("-const a = \"{S2}\";")), "{out}");
        // Writing elsewhere, or reading a secret file into a command, changes nothing here.
        for kept in [
            format!("cat > notes.txt <<EOF\nVALUE={S1}\nEOF"),
            "cp .env.example .env".to_string(),
            "grep -c KEY .env".to_string(),
        ] {
            assert_eq!(redact_file_writes(&kept, &mut Vec::new()), kept);
        }
    }

    #[test]
    fn terraform_values_marked_sensitive() {
        let output = format!(
            "{{\n  \"db_password\": {{\n    \"sensitive\": true,\n    \"type\": \"string\",\n    \"value\": \"{S1}\"\n  }},\n  \
             \"endpoints\": {{\n    \"sensitive\": false,\n    \"type\": \"string\",\n    \"value\": \"db.internal\"\n  }},\n  \
             \"admin\": {{\n    \"value\": {{\"user\": \"root\", \"pass\": \"{S2}\"}},\n    \"type\": [\"object\", {{}}],\n    \"sensitive\": true\n  }}\n}}\n"
        );
        let mut found = Vec::new();
        let out = redact_structured(&output, &mut found);
        assert!(!out.contains(S1) && !out.contains(S2), "{out}");
        assert!(
            out.contains("\"value\": \"[REDACTED:sensitive-output]\""),
            "{out}"
        );
        assert!(out.contains("\"value\": \"db.internal\""), "{out}");
        assert!(
            out.contains("\"user\": \"[REDACTED:sensitive-output]\""),
            "{out}"
        );
        assert_eq!(found.len(), 3);
    }

    #[test]
    fn kubernetes_secrets_lose_their_data() {
        let yaml = format!(
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  mode: fast\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n\
             type: Opaque\ndata:\n  username: YWRtaW4=\n  password: {S1}\nstringData:\n  dsn: \"postgres://u:{S2}@db/app\"\n"
        );
        let out = redact_structured(&yaml, &mut Vec::new());
        assert!(out.contains("mode: fast"), "{out}");
        assert!(out.contains("  username: [REDACTED:kubernetes-secret]\n  password: [REDACTED:kubernetes-secret]\n"), "{out}");
        assert!(
            out.contains("  dsn: \"[REDACTED:kubernetes-secret]\""),
            "{out}"
        );
        assert!(out.contains("metadata:\n  name: db\n"), "{out}");
        let json = format!(
            "{{\"apiVersion\": \"v1\", \"data\": {{\"token\": \"{S1}\", \"ca.crt\": \"{S2}\"}}, \"kind\": \"Secret\", \"metadata\": {{\"name\": \"sa\"}}}}"
        );
        let out = redact_structured(&json, &mut Vec::new());
        assert!(!out.contains(S1) && !out.contains(S2), "{out}");
        assert!(out.contains("\"name\": \"sa\""), "{out}");
        // A Read of a manifest: numbered lines.
        let read = format!("     1→kind: Secret\n     2→stringData:\n     3→  api: {S1}\n");
        assert_eq!(
            redact_structured(&read, &mut Vec::new()),
            "     1→kind: Secret\n     2→stringData:\n     3→  api: [REDACTED:kubernetes-secret]\n"
        );
    }

    #[test]
    fn xml_elements_named_like_secrets() {
        let xml = format!(
            "<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{S1}</password>\n  <privateKey>${{user.home}}/.ssh/id_rsa</privateKey>\n</server>"
        );
        let out = redact_structured(&xml, &mut Vec::new());
        assert!(
            out.contains("<password>[REDACTED:secret-assignment]</password>"),
            "{out}"
        );
        assert!(out.contains("<username>deploy</username>"), "{out}");
        assert!(
            out.contains("<privateKey>${user.home}/.ssh/id_rsa</privateKey>"),
            "{out}"
        );
        // Found by the secret word that ends the name, in any case, or that starts it.
        for name in [
            "apiKey",
            "DB_PASSWORD",
            "secretToken",
            "secretValue",
            "tokenSigning",
        ] {
            let xml = format!("<conf>\n  <{name}>{S1}</{name}>\n</conf>");
            let out = redact_structured(&xml, &mut Vec::new());
            assert!(
                out.contains(&format!("<{name}>[REDACTED:secret-assignment]</{name}>")),
                "{out}"
            );
        }
        // A page of markup without such elements is left as it is.
        let page = "<div><p>token count</p><span>key</span></div>\n<b>pass</b>";
        assert_eq!(redact_structured(page, &mut Vec::new()), page);
    }

    #[test]
    fn values_that_name_themselves_secrets() {
        let run = "K7x2Qm9Tz4Lp8Vb3Nc6Wd1Hf5Rj0Ys";
        for (text, want) in [
            (
                format!("echo acme_secret_{run} > key"),
                "echo acme_secret_[REDACTED:prefixed-secret] > key".to_string(),
            ),
            (
                format!("Your token: TOKEN-LIVE-{run}"),
                "Your token: TOKEN-LIVE-[REDACTED:prefixed-secret]".to_string(),
            ),
        ] {
            assert_eq!(redact_structured(&text, &mut Vec::new()), want);
        }
        for kept in [
            "secret_manager_ProviderFactoryImpl2024Version",
            "token_validation_request_handler_factory",
            "private-registry-2026-11-28-build-1234",
        ] {
            assert_eq!(redact_structured(kept, &mut Vec::new()), kept);
        }
    }

    #[test]
    fn look_alikes_of_structure_are_kept() {
        for text in [
            "{\"sensitive\": true, \"type\": \"string\"}",
            "\"sensitive\": true",
            "kind: Secret\nmetadata:\n  name: x\ntype: Opaque\n",
            "kind: Deployment\ndata:\n  key: value\n",
            "<token>{{ .Values.token }}</token>",
            "<b>password</b> is required",
            "grep -n 'kind: Secret' k8s/*.yaml",
        ] {
            assert_eq!(redact_structured(text, &mut Vec::new()), text);
        }
    }
}
