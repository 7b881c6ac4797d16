//! Secrets that only a command line's shape gives away, and what a command's output holds.
//!
//! The pattern rules of [`super::redact`] find a secret by its shape or by a name beside it
//! (`--password=…`, `DB_PASSWORD=…`). Many commands take a secret with nothing around it that
//! says so: `aws configure set aws_secret_access_key VALUE`, `htpasswd -b FILE USER PASS`,
//! `curl --oauth2-bearer TOKEN`, `echo PASS | docker login --password-stdin`. Here a command
//! line is split into words the way a POSIX shell does, and a table of commands ([`RULES`])
//! says which word (or which part of a word) is a secret.
//!
//! The same split tells what a command's *output* is ([`output_of_command`]): the value of a
//! secret variable (`printenv DB_PASSWORD`, `echo $API_TOKEN`), a secret store's answer
//! (`pass show`, `vault kv get -field=…`, `terraform output -raw db_password`, `gpg -d`: see
//! [`super::redact_stores`]), or a credential file (`cat ~/.netrc`, `~/.pgpass`,
//! `/run/secrets/…`). The reader redacts that output accordingly (kind `secret-output`), also
//! when it arrives in a later record than the command — unless a later stage of the pipe
//! consumes it (`| docker login --password-stdin`, `| wc -c`, `| tar x`) or it goes to a file.
//! What a command feeds a password prompt on its standard input is [`super::redact_stdin`]'s
//! business (kinds `stdin-secret`, `prompt-answer`, `expect-send`).
//!
//! What is kept: a value that is a reference (`$TOKEN`, `${X}`, `$(cat f)`), stdin (`-`), a
//! file (`@file`, `file:…`), a mask or a placeholder; the options and sub-commands around a
//! secret; and every command the table does not know.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use super::redact::{Found, Keyword, Redactor, classify_name, name_kind, value_is_secret};
use super::redact_files::{self, is_secret_file};
use super::redact_stdin::reads_secret_stdin;
use super::redact_stores::{plain_name, says_secret, store_prints_secret};

/// Literals one of which every command the table knows contains; a text holding none of them
/// is not split at all. Whole words of three letters or more: a short prefix (`ch…`, `7z`)
/// would make the search stop at every other word. (Mostly the words that make a command one of the table's, rather than
/// its program, so that `git status` costs one search.)
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static COMMAND_LITERALS: LazyLock<Regex> = LazyLock::new(|| {
    let words = [
        "configure",
        "config",
        "secretsmanager",
        "put-parameter",
        "curl",
        "htpasswd",
        "openssl",
        "vault",
        "login",
        "secret",
        "secrets",
        "ldapsearch",
        "ldapadd",
        "ldapmodify",
        "ldapdelete",
        "ldapmodrdn",
        "ldapwhoami",
        "ldappasswd",
        "ldapcompare",
        "ldapexop",
        "sqlcmd",
        "bcp",
        "smbclient",
        "smbcacls",
        "smbget",
        "rpcclient",
        "rabbitmqctl",
        "keytool",
        "jarsigner",
        "zip",
        "zipcloak",
        "unzip",
        "funzip",
        "7za",
        "7zr",
        "rar",
        "unrar",
        "chpasswd",
        "chgpasswd",
        "passwd",
        "mosquitto_pub",
        "mosquitto_sub",
        "mosquitto_rr",
        "creds",
        "mysqladmin",
        "nuget",
        "twine",
        "redis-cli",
        "alias",
        "unlock",
        "auth",
        "sudo",
        "config:set",
        "setenv",
        "variables",
        "user-secrets",
        "env:set",
        "variable",
        "set-env",
        "chamber",
        "security",
        "mosquitto_passwd",
        "unseal",
        "artisan",
        "convex",
        "travis",
    ];
    let alternation = words.join("|");
    Regex::new(&format!(
        r"(?-u:\b)(?:{alternation})(?-u:\b)|--(?:from-literal|oauth2-bearer|proxy-user|password-stdin|with-token|data-file)|7z "
    ))
    .expect("command literals compile")
});

/// `ALTER USER … PASSWORD '…'`, `CREATE USER … IDENTIFIED BY '…'` (SQL, in a `psql -c`, a
/// `mysql -e` or a migration file).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static SQL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i-u:\b(?:password|identified(?:[ \t]+with[ \t]+[a-z_0-9]+)?[ \t]+by)[ \t]*=?[ \t]*)'((?:[^'\\\r\n]|''|\\.)*)'",
    )
    .expect("sql password pattern compiles")
});

/// Literals one of which a command printing a secret contains (see [`output_of_command`]).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static OUTPUT_LITERALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i-u:pass|pwd|token|secret|key|cred|auth|netrc|pgpass|printenv|security|vault|",
        r"kubectl|ssm|configure|config|output|decrypt|gpg|sops|openssl|pwgen|\bapg\b|genkey|",
        r"genpsk|/dev/u?random|credstash|berglas|teller|ejson|eyaml|blackbox|chamber|doppler|",
        r"infisical|railway|variables|artisan|console|user-secrets|phx\.gen|runner|tinker|",
        r"heroku|dokku|netlify|firebase|terraform|tofu|pulumi|keyring|kwallet|lpass|",
        r"\bop\b|\bbw\b|\bage\b|\brage\b|\beb\b|\bcf\b|\bsts\b|assume|swarm|ansible|",
        r"print|puts|\bwg\b|sas\b|connection-string|rbac|env:get|fill|get-|reveal|random|",
        r"\.env|env\.|cnf|s3cfg|boto|npmrc|pypirc|tfrc|hosts\.yml)"
    ))
    .expect("output literals compile")
});

// ---------------------------------------------------------------------------------------------
// Words

/// One word of a command line: where it is, and its value once the shell has removed quotes
/// and escapes.
#[derive(Debug, Clone)]
pub(super) struct Word {
    /// Byte range of the word in the text.
    pub start: usize,
    pub end: usize,
    /// The value, quotes removed.
    pub value: String,
    /// For each byte of `value`, its offset in the text (`None`: `value` is the text itself).
    map: Option<Vec<usize>>,
}

impl Word {
    /// The text range of `value[a..b]`.
    pub(super) fn span(&self, a: usize, b: usize) -> (usize, usize) {
        match &self.map {
            None => (self.start + a, self.start + b),
            Some(map) if a < b && b <= map.len() => (map[a], map[b - 1] + 1),
            Some(_) => (self.start, self.start),
        }
    }
}

/// One simple command: its words and how it is connected to its neighbours.
#[derive(Debug, Default)]
pub(super) struct Command {
    pub words: Vec<Word>,
    /// Its output goes through a pipe to the next command.
    pub pipes_out: bool,
    /// It reads the previous command's output through a pipe.
    pub pipes_in: bool,
    /// Its standard output goes to a file (or `/dev/null`).
    pub stdout_redirected: bool,
    /// A here-string (`<<< word`) it reads.
    pub here_string: Option<Word>,
    /// The byte ranges of the bodies of the here-documents it reads (delimiter lines out).
    pub heredocs: Vec<(usize, usize)>,
}

/// Splits `text` into simple commands the way a POSIX shell reads them (quotes, escapes,
/// `$(…)`, operators, redirections, comments, here-document bodies skipped). It never fails: an
/// unterminated quote is taken as a literal character.
pub(super) fn split(text: &str) -> Vec<Command> {
    let b = text.as_bytes();
    let mut commands = Vec::new();
    let mut cur = Command::default();
    let mut heredocs: Vec<(String, bool, usize)> = Vec::new();
    let mut i = 0;
    let end_command = |cur: &mut Command, commands: &mut Vec<Command>, pipe: bool| {
        let mut done = std::mem::take(cur);
        done.pipes_out = pipe;
        cur.pipes_in = pipe;
        commands.push(done);
    };
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\n' => {
                end_command(&mut cur, &mut commands, false);
                i += 1;
                if !heredocs.is_empty() {
                    i = skip_heredocs(text, i, &mut heredocs, &mut commands);
                }
            }
            b';' => {
                end_command(&mut cur, &mut commands, false);
                i += 1;
            }
            b'|' => {
                let pipe = b.get(i + 1) != Some(&b'|');
                end_command(&mut cur, &mut commands, pipe);
                i += if pipe && b.get(i + 1) != Some(&b'&') {
                    1
                } else {
                    2
                };
            }
            b'&' if b.get(i + 1) == Some(&b'>') => {
                i += if b.get(i + 2) == Some(&b'>') { 3 } else { 2 };
                cur.stdout_redirected = true;
                if let Some((_, next)) = read_word(text, skip_blanks(b, i)) {
                    i = next;
                }
            }
            b'&' => {
                end_command(&mut cur, &mut commands, false);
                i += if b.get(i + 1) == Some(&b'&') { 2 } else { 1 };
            }
            b'(' | b')' => {
                end_command(&mut cur, &mut commands, false);
                i += 1;
            }
            // `{ …; }` groups (a `{` in a word, `{a,b}` or JSON, is part of it).
            b'{' | b'}'
                if b.get(i + 1)
                    .is_none_or(|c| c.is_ascii_whitespace() || *c == b';') =>
            {
                end_command(&mut cur, &mut commands, false);
                i += 1;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            c if c == b'<'
                || c == b'>'
                || (c.is_ascii_digit() && matches!(b.get(i + 1), Some(b'<' | b'>'))) =>
            {
                let owner = commands.len();
                i = redirection(text, i, &mut cur, &mut heredocs, owner);
            }
            _ => match read_word(text, i) {
                Some((word, next)) => {
                    cur.words.push(word);
                    i = next;
                }
                None => i += 1,
            },
        }
    }
    commands.push(cur);
    commands.retain(|c| !c.words.is_empty() || c.here_string.is_some());
    commands
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// A redirection at `i`: records what it says about the command, returns where it ends.
fn redirection(
    text: &str,
    mut i: usize,
    cur: &mut Command,
    heredocs: &mut Vec<(String, bool, usize)>,
    owner: usize,
) -> usize {
    let b = text.as_bytes();
    let mut fd = None;
    if b[i].is_ascii_digit() {
        fd = Some(b[i]);
        i += 1;
    }
    let op_start = i;
    while i < b.len() && matches!(b[i], b'<' | b'>' | b'&' | b'|' | b'-') && i - op_start < 3 {
        i += 1;
    }
    let op = &text[op_start..i];
    let target_at = skip_blanks(b, i);
    let Some((target, next)) = read_word(text, target_at) else {
        return i;
    };
    match op {
        "<<<" => cur.here_string = Some(target),
        "<<" | "<<-" => heredocs.push((target.value.clone(), op == "<<-", owner)),
        ">&" | "<&" if target.value.bytes().all(|c| c.is_ascii_digit()) => {}
        _ if op.starts_with('>') && fd.is_none_or(|fd| fd == b'1') => {
            cur.stdout_redirected = true;
        }
        _ => {}
    }
    next
}

/// Skips the bodies of the pending here-documents, which start at `i`, noting each in the
/// command that reads it (`owner`, an index into `commands`).
fn skip_heredocs(
    text: &str,
    mut i: usize,
    heredocs: &mut Vec<(String, bool, usize)>,
    commands: &mut [Command],
) -> usize {
    for (delimiter, tabs, owner) in heredocs.drain(..) {
        let body = i;
        let mut body_end = text.len();
        while i < text.len() {
            let line_end = text[i..].find('\n').map_or(text.len(), |n| i + n);
            let line = &text[i..line_end];
            let line = if tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            let line_start = i;
            i = (line_end + 1).min(text.len());
            if line.trim_end_matches('\r') == delimiter {
                body_end = line_start;
                break;
            }
        }
        if let Some(cmd) = commands.get_mut(owner) {
            cmd.heredocs.push((body, body_end.max(body)));
        }
    }
    i
}

/// The word starting at `i`, and where it ends; `None` at an operator.
fn read_word(text: &str, start: usize) -> Option<(Word, usize)> {
    let b = text.as_bytes();
    let mut i = start;
    let mut value = String::new();
    let mut map: Vec<usize> = Vec::new();
    let mut plain = true;
    let push = |value: &mut String, map: &mut Vec<usize>, at: usize, ch: char| {
        let n = ch.len_utf8();
        value.push(ch);
        for k in 0..n {
            map.push(at + k);
        }
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | b';' | b'|' | b'&' | b'<' | b'>' | b'(' | b')' => break,
            b'\'' | b'"' => {
                let close = if c == b'\'' {
                    text[i + 1..].find('\'').map(|n| i + 1 + n)
                } else {
                    closing_double_quote(b, i + 1)
                };
                let Some(close) = close else {
                    // Unterminated: a literal quote.
                    push(&mut value, &mut map, i, c as char);
                    i += 1;
                    continue;
                };
                plain = false;
                let mut k = i + 1;
                while k < close {
                    if c == b'"'
                        && b[k] == b'\\'
                        && matches!(b.get(k + 1), Some(b'"' | b'\\' | b'$' | b'`'))
                    {
                        k += 1;
                    }
                    let ch = text[k..].chars().next().unwrap_or('\u{fffd}');
                    push(&mut value, &mut map, k, ch);
                    k += ch.len_utf8().max(1);
                }
                i = close + 1;
            }
            b'\\' => {
                plain = false;
                match text[i + 1..].chars().next() {
                    Some('\n') => i += 2,
                    Some(ch) => {
                        push(&mut value, &mut map, i + 1, ch);
                        i += 1 + ch.len_utf8();
                    }
                    None => i += 1,
                }
            }
            b'$' if matches!(b.get(i + 1), Some(b'(' | b'{')) => {
                // `$(…)`, `${…}`: kept whole, nested brackets balanced.
                let (open, close_ch) = if b[i + 1] == b'(' {
                    (b'(', b')')
                } else {
                    (b'{', b'}')
                };
                let mut depth = 0usize;
                let mut k = i + 1;
                while k < b.len() {
                    if b[k] == open {
                        depth += 1;
                    } else if b[k] == close_ch {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    k += 1;
                }
                let end = (k + 1).min(b.len());
                for (off, ch) in text[i..end].char_indices() {
                    push(&mut value, &mut map, i + off, ch);
                }
                i = end;
            }
            b'`' => {
                let end = text[i + 1..].find('`').map_or(b.len(), |n| i + n + 2);
                for (off, ch) in text[i..end].char_indices() {
                    push(&mut value, &mut map, i + off, ch);
                }
                i = end;
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                push(&mut value, &mut map, i, ch);
                i += ch.len_utf8();
            }
        }
    }
    if i == start {
        return None;
    }
    let map = (!plain).then_some(map);
    Some((
        Word {
            start,
            end: i,
            value,
            map,
        },
        i,
    ))
}

/// The closing `"` of a double-quoted string whose body starts at `i`.
fn closing_double_quote(b: &[u8], mut i: usize) -> Option<usize> {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The last `/`-separated part of a word (`/usr/bin/gpg` → `gpg`).
pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `NAME=value` before a program.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    })
}

/// The index of a command's program word, past assignments and wrappers that do not change
/// what runs; and whether `sudo -S` (which reads a password on stdin) is among them.
pub(super) fn program_index(words: &[Word]) -> (Option<usize>, bool) {
    let mut i = 0;
    let mut sudo_stdin = false;
    while let Some(w) = words.get(i) {
        let t = w.value.as_str();
        if is_assignment(t) {
            i += 1;
            continue;
        }
        let skip_flags = |mut k: usize, with_value: &[&str], sudo: &mut bool| {
            while let Some(w) = words.get(k) {
                let t = w.value.as_str();
                if !t.starts_with('-') || t == "-" || t == "--" {
                    if t == "--" {
                        k += 1;
                    }
                    break;
                }
                if t == "-S"
                    || t == "--stdin"
                    || (t.starts_with('-') && !t.starts_with("--") && t.contains('S'))
                {
                    *sudo = true;
                }
                k += if with_value.contains(&t) { 2 } else { 1 };
            }
            k
        };
        let mut ignore = false;
        let next = match basename(t) {
            "sudo" | "doas" => skip_flags(
                i + 1,
                &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
                &mut sudo_stdin,
            ),
            "env" => {
                let k = skip_flags(i + 1, &["-u", "-C", "-S"], &mut ignore);
                let mut k = k;
                while words.get(k).is_some_and(|w| is_assignment(&w.value)) {
                    k += 1;
                }
                k
            }
            "time" | "nohup" | "command" | "exec" | "builtin" | "noglob" => {
                skip_flags(i + 1, &[], &mut ignore)
            }
            "nice" => skip_flags(i + 1, &["-n"], &mut ignore),
            // Runners of a project's tools: `npx wrangler …`, `bundle exec rails …`.
            "npx" | "bunx" | "pnpx" => skip_flags(i + 1, &["-p", "--package"], &mut ignore),
            "pnpm" | "yarn" | "bun" | "bundle" | "poetry" | "pipenv" | "uv" | "pdm" | "hatch"
            | "rye"
                if words
                    .get(i + 1)
                    .is_some_and(|w| matches!(w.value.as_str(), "exec" | "run" | "dlx" | "x")) =>
            {
                skip_flags(i + 2, &[], &mut ignore)
            }
            "timeout" => skip_flags(i + 1, &["-s", "-k"], &mut ignore) + 1,
            _ => return (Some(i), sudo_stdin),
        };
        if next >= words.len() {
            return (Some(i), sudo_stdin);
        }
        i = next;
    }
    (None, sudo_stdin)
}

// ---------------------------------------------------------------------------------------------
// The table

/// How an option's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// `-p VALUE` (and `--name=VALUE` for a long name).
    Separate,
    /// `-pVALUE` only (7z, unrar).
    Attached,
    /// Either.
    Both,
}

/// Where a command's secret is.
#[derive(Clone, Copy, Debug)]
enum Secret {
    /// The value of an option.
    Option(&'static str, Form),
    /// `user:pass` (or `user%pass`) given to an option: the part after the separator.
    UserPass(&'static str, char),
    /// The positional argument at this index (after the sub-command words).
    Positional(usize),
    /// The last positional argument.
    LastPositional,
    /// `NAME VALUE` (`aws configure set`, `git config`, `npm config set`): VALUE when NAME, or
    /// one of its `.`/`:`/`/` separated parts, names a secret.
    Named,
    /// Every `KEY=VALUE` positional argument after the first `n`: the VALUE (`vault kv put
    /// PATH …`, `fly secrets set …`).
    Pairs(usize),
    /// `--option KEY=VALUE` / `--option=KEY=VALUE`: the VALUE (`--from-literal`).
    OptionPair(&'static str),
    /// A secret store's `KEY=VALUE` arguments after the first `n` (`heroku config:set`, `fly
    /// secrets set`): every VALUE, unless its KEY is clearly not a secret (`NODE_ENV`,
    /// `API_URL`; see `redact_stores::plain_name`).
    StorePairs(usize),
    /// A secret store's `NAME VALUE` (or `NAME=VALUE`) at this positional index
    /// (`dotnet user-secrets set`, `netlify env:set`): VALUE, unless NAME is clearly not a
    /// secret.
    StoreNamed(usize),
    /// `KEY VALUE` pairs after the sub-command (`rclone config create NAME TYPE k v …`, from
    /// the positional at this index): VALUE when KEY names a secret.
    SpacedPairs(usize),
    /// `htpasswd -b[cBmsp…] FILE USER PASS` / `htpasswd -nb USER PASS`.
    Htpasswd,
    /// Reads a secret on stdin: what `echo`/`printf` pipe into it, or a here-string.
    Stdin,
}

/// One entry of the table.
struct Rule {
    programs: &'static [&'static str],
    /// Positional words that must come first, in order (compared without case).
    sub: &'static [&'static str],
    /// Options that take a separate value (to count positional arguments right).
    value_flags: &'static [&'static str],
    /// An option (and its value, if not empty) that must be present.
    when: Option<(&'static str, &'static str)>,
    secrets: &'static [Secret],
    /// The placeholder's kind, unless the value names its own.
    kind: &'static str,
}

const AWS_FLAGS: &[&str] = &[
    "--profile",
    "--region",
    "--output",
    "--endpoint-url",
    "--query",
    "--color",
    "--ca-bundle",
    "--cli-read-timeout",
    "--cli-connect-timeout",
];

/// The commands whose secrets only their shape gives away.
const RULES: &[Rule] = &[
    Rule {
        programs: &["aws"],
        sub: &["configure", "set"],
        value_flags: AWS_FLAGS,
        when: None,
        secrets: &[Secret::Named],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["aws"],
        sub: &["secretsmanager"],
        value_flags: AWS_FLAGS,
        when: None,
        secrets: &[
            Secret::Option("--secret-string", Form::Separate),
            Secret::Option("--secret-binary", Form::Separate),
        ],
        kind: "secret-flag",
    },
    Rule {
        programs: &["aws"],
        sub: &["ssm", "put-parameter"],
        value_flags: AWS_FLAGS,
        when: Some(("--type", "SecureString")),
        secrets: &[Secret::Option("--value", Form::Separate)],
        kind: "secret-flag",
    },
    Rule {
        programs: &["curl"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[
            Secret::Option("--oauth2-bearer", Form::Separate),
            Secret::UserPass("-U", ':'),
            Secret::UserPass("--proxy-user", ':'),
        ],
        kind: "secret-flag",
    },
    Rule {
        programs: &["htpasswd"],
        sub: &[],
        value_flags: &["-C", "-r"],
        when: None,
        secrets: &[Secret::Htpasswd],
        kind: "password-flag",
    },
    Rule {
        programs: &["git"],
        sub: &["config"],
        value_flags: &["-C", "-c", "--file", "-f", "--blob", "--type", "--default"],
        when: None,
        secrets: &[Secret::Named],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["npm", "yarn", "pnpm"],
        sub: &["config", "set"],
        value_flags: &["--location", "-L", "--workspace", "-w"],
        when: None,
        secrets: &[Secret::Named],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["kubectl", "oc"],
        sub: &["create", "secret"],
        value_flags: &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "-o",
            "--type",
        ],
        when: None,
        secrets: &[Secret::OptionPair("--from-literal")],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["openssl"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-k", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["openssl"],
        sub: &["passwd"],
        value_flags: &["-salt", "-in"],
        when: None,
        secrets: &[Secret::LastPositional],
        kind: "password-flag",
    },
    Rule {
        programs: &["vault"],
        sub: &["kv", "put"],
        value_flags: &["-mount", "-address", "-namespace", "-cas", "-format"],
        when: None,
        secrets: &[Secret::Pairs(1)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["vault"],
        sub: &["kv", "patch"],
        value_flags: &["-mount", "-address", "-namespace", "-cas", "-format"],
        when: None,
        secrets: &[Secret::Pairs(1)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["vault"],
        sub: &["login"],
        value_flags: &["-method", "-address", "-namespace", "-path", "-format"],
        when: None,
        secrets: &[Secret::Positional(0)],
        kind: "vault-token",
    },
    Rule {
        programs: &["az"],
        sub: &["login"],
        value_flags: &["-u", "--username", "-t", "--tenant", "--scope"],
        when: None,
        secrets: &[Secret::Option("-p", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["gh"],
        sub: &["secret", "set"],
        value_flags: &[
            "-R",
            "--repo",
            "-e",
            "--env",
            "-o",
            "--org",
            "-a",
            "--app",
            "-f",
            "--env-file",
            "-v",
            "--visibility",
            "-r",
            "--repos",
        ],
        when: None,
        secrets: &[
            Secret::Option("-b", Form::Both),
            Secret::Option("--body", Form::Separate),
        ],
        kind: "secret-flag",
    },
    Rule {
        programs: &[
            "ldapsearch",
            "ldapadd",
            "ldapmodify",
            "ldapdelete",
            "ldapmodrdn",
            "ldapwhoami",
            "ldappasswd",
            "ldapcompare",
            "ldapexop",
        ],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-w", Form::Both)],
        kind: "password-flag",
    },
    Rule {
        programs: &["ldappasswd"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-s", Form::Both)],
        kind: "password-flag",
    },
    Rule {
        programs: &["sqlcmd", "bcp"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-P", Form::Both)],
        kind: "password-flag",
    },
    Rule {
        programs: &["smbclient", "rpcclient", "smbcacls", "smbget"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::UserPass("-U", '%'), Secret::UserPass("--user", '%')],
        kind: "password-flag",
    },
    Rule {
        programs: &["rabbitmqctl"],
        sub: &["add_user"],
        value_flags: &["-n", "--node"],
        when: None,
        secrets: &[Secret::Positional(1)],
        kind: "password-flag",
    },
    Rule {
        programs: &["rabbitmqctl"],
        sub: &["change_password"],
        value_flags: &["-n", "--node"],
        when: None,
        secrets: &[Secret::Positional(1)],
        kind: "password-flag",
    },
    Rule {
        programs: &["rabbitmqctl"],
        sub: &["authenticate_user"],
        value_flags: &["-n", "--node"],
        when: None,
        secrets: &[Secret::Positional(1)],
        kind: "password-flag",
    },
    Rule {
        programs: &["keytool", "jarsigner"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[
            Secret::Option("-storepass", Form::Separate),
            Secret::Option("-keypass", Form::Separate),
            Secret::Option("-srcstorepass", Form::Separate),
            Secret::Option("-deststorepass", Form::Separate),
            Secret::Option("-srckeypass", Form::Separate),
            Secret::Option("-destkeypass", Form::Separate),
            Secret::Option("-new", Form::Separate),
        ],
        kind: "password-flag",
    },
    Rule {
        programs: &["zip", "zipcloak"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[
            Secret::Option("-P", Form::Separate),
            Secret::Option("--password", Form::Separate),
        ],
        kind: "password-flag",
    },
    Rule {
        programs: &["unzip", "funzip"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-P", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["7z", "7za", "7zr", "rar", "unrar"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[
            Secret::Option("-p", Form::Attached),
            Secret::Option("-hp", Form::Attached),
        ],
        kind: "password-flag",
    },
    Rule {
        programs: &["cargo"],
        sub: &["login"],
        value_flags: &["--registry", "--config", "-Z"],
        when: None,
        secrets: &[Secret::Positional(0), Secret::Stdin],
        kind: "secret-flag",
    },
    Rule {
        programs: &["poetry", "composer", "bundle", "pdm", "hatch"],
        sub: &["config"],
        value_flags: &["-d", "--directory", "--working-dir"],
        when: None,
        secrets: &[Secret::Named],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["chpasswd", "chgpasswd"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Stdin],
        kind: "password-flag",
    },
    Rule {
        programs: &["passwd"],
        sub: &[],
        value_flags: &[],
        when: Some(("--stdin", "")),
        secrets: &[Secret::Stdin],
        kind: "password-flag",
    },
    Rule {
        programs: &["mosquitto_pub", "mosquitto_sub", "mosquitto_rr"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[
            Secret::Option("-P", Form::Separate),
            Secret::Option("--pw", Form::Separate),
        ],
        kind: "password-flag",
    },
    Rule {
        programs: &["skopeo", "podman", "buildah", "crane", "regctl"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[
            Secret::UserPass("--creds", ':'),
            Secret::UserPass("--src-creds", ':'),
            Secret::UserPass("--dest-creds", ':'),
            Secret::UserPass("--screds", ':'),
            Secret::UserPass("--dcreds", ':'),
        ],
        kind: "password-flag",
    },
    Rule {
        programs: &["fly", "flyctl", "doppler", "supabase", "infisical"],
        sub: &["secrets", "set"],
        value_flags: &[
            "-a",
            "--app",
            "-c",
            "--config",
            "-p",
            "--project",
            "--project-ref",
            "--env",
            "--path",
        ],
        when: None,
        secrets: &[Secret::StorePairs(0)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["mysqladmin"],
        sub: &["password"],
        value_flags: &[
            "-u", "-h", "-P", "-S", "--user", "--host", "--port", "--socket",
        ],
        when: None,
        secrets: &[Secret::Positional(0)],
        kind: "password-flag",
    },
    Rule {
        programs: &["dotnet"],
        sub: &["nuget", "add"],
        value_flags: &["-n", "--name", "-u", "--username", "--configfile"],
        when: None,
        secrets: &[Secret::Option("-p", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["dotnet"],
        sub: &["nuget", "update"],
        value_flags: &["-n", "--name", "-u", "--username", "--configfile"],
        when: None,
        secrets: &[Secret::Option("-p", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["twine"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-p", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["redis-cli"],
        sub: &["auth"],
        value_flags: &["-h", "-p", "-n", "-u", "--user", "-s", "--tls", "-c"],
        when: None,
        secrets: &[Secret::LastPositional],
        kind: "password-flag",
    },
    Rule {
        programs: &["rclone"],
        sub: &["config", "create"],
        value_flags: &["--config"],
        when: None,
        secrets: &[Secret::SpacedPairs(2)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["rclone"],
        sub: &["config", "update"],
        value_flags: &["--config"],
        when: None,
        secrets: &[Secret::SpacedPairs(1)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["mc", "mcli"],
        sub: &["alias", "set"],
        value_flags: &["--api", "--path"],
        when: None,
        secrets: &[Secret::Positional(3)],
        kind: "secret-flag",
    },
    Rule {
        programs: &["bw"],
        sub: &["unlock"],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Positional(0)],
        kind: "password-flag",
    },
    Rule {
        programs: &["bw"],
        sub: &["login"],
        value_flags: &["--method", "--code"],
        when: None,
        secrets: &[Secret::Positional(1)],
        kind: "password-flag",
    },
    Rule {
        programs: &["doctl"],
        sub: &["auth", "init"],
        value_flags: &["--context"],
        when: None,
        secrets: &[
            Secret::Option("-t", Form::Separate),
            Secret::Option("--access-token", Form::Separate),
        ],
        kind: "secret-flag",
    },
    // Secret stores that set a value given by position.
    Rule {
        programs: &["heroku"],
        sub: &["config:set"],
        value_flags: &["-a", "--app", "-r", "--remote"],
        when: None,
        secrets: &[Secret::StorePairs(0)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["dokku"],
        sub: &["config:set"],
        value_flags: &[],
        when: None,
        secrets: &[Secret::StorePairs(1)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["eb"],
        sub: &["setenv"],
        value_flags: &["-e", "--environment", "--profile", "--region"],
        when: None,
        secrets: &[Secret::StorePairs(0)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["railway"],
        sub: &["variables", "set"],
        value_flags: &["-s", "--service", "-e", "--environment"],
        when: None,
        secrets: &[Secret::StorePairs(0)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["railway"],
        sub: &[],
        value_flags: &[],
        when: None,
        secrets: &[Secret::OptionPair("--set")],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["dotnet"],
        sub: &["user-secrets", "set"],
        value_flags: &["--project", "-p", "--id", "-c", "--configuration"],
        when: None,
        secrets: &[Secret::StoreNamed(0)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["netlify", "ntl", "convex", "travis"],
        sub: &["env:set"],
        value_flags: &["--context", "--scope", "--filter"],
        when: None,
        secrets: &[Secret::StoreNamed(0)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["convex", "travis"],
        sub: &["env", "set"],
        value_flags: &["-r", "--repo"],
        when: None,
        secrets: &[Secret::StoreNamed(0)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["glab"],
        sub: &["variable", "set"],
        value_flags: &[
            "-R", "--repo", "-s", "--scope", "-g", "--group", "-t", "--type",
        ],
        when: None,
        secrets: &[
            Secret::StoreNamed(0),
            Secret::Option("-v", Form::Separate),
            Secret::Option("--value", Form::Separate),
        ],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["cf"],
        sub: &["set-env"],
        value_flags: &[],
        when: None,
        secrets: &[Secret::StoreNamed(1)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["pulumi"],
        sub: &["config", "set"],
        value_flags: &["-s", "--stack", "-C", "--cwd", "--path", "--config-file"],
        when: Some(("--secret", "")),
        secrets: &[Secret::Positional(1)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["pulumi"],
        sub: &["config", "set"],
        value_flags: &["-s", "--stack", "-C", "--cwd", "--path", "--config-file"],
        when: None,
        secrets: &[Secret::Named],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["chamber"],
        sub: &["write"],
        value_flags: &["-b", "--backend"],
        when: None,
        secrets: &[Secret::Positional(2)],
        kind: "secret-assignment",
    },
    Rule {
        programs: &["az"],
        sub: &["keyvault", "secret", "set"],
        value_flags: &["--vault-name", "-n", "--name", "--subscription"],
        when: None,
        secrets: &[Secret::Option("--value", Form::Separate)],
        kind: "secret-flag",
    },
    Rule {
        programs: &["security"],
        sub: &["add-generic-password"],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-w", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["security"],
        sub: &["add-internet-password"],
        value_flags: &[],
        when: None,
        secrets: &[Secret::Option("-w", Form::Separate)],
        kind: "password-flag",
    },
    Rule {
        programs: &["conjur"],
        sub: &["variable", "set"],
        value_flags: &["-i", "--id"],
        when: None,
        secrets: &[
            Secret::Option("-v", Form::Separate),
            Secret::Option("--value", Form::Separate),
        ],
        kind: "secret-flag",
    },
    Rule {
        programs: &["mosquitto_passwd"],
        sub: &[],
        value_flags: &[],
        when: Some(("-b", "")),
        secrets: &[Secret::LastPositional],
        kind: "password-flag",
    },
    Rule {
        programs: &["vault", "bao"],
        sub: &["operator", "unseal"],
        value_flags: &["-address", "-namespace"],
        when: None,
        secrets: &[Secret::Positional(0)],
        kind: "secret-flag",
    },
    Rule {
        programs: &["php"],
        sub: &["artisan"],
        value_flags: &["--env", "--cipher"],
        when: None,
        secrets: &[Secret::Option("--key", Form::Separate)],
        kind: "secret-flag",
    },
    // Registry logins and other commands that read a secret on stdin when told so.
    Rule {
        programs: &["*"],
        sub: &[],
        value_flags: &[],
        when: Some(("--password-stdin", "")),
        secrets: &[Secret::Stdin],
        kind: "password-flag",
    },
    Rule {
        programs: &["gh"],
        sub: &["auth", "login"],
        value_flags: &[],
        when: Some(("--with-token", "")),
        secrets: &[Secret::Stdin],
        kind: "secret-flag",
    },
    Rule {
        programs: &["htpasswd"],
        sub: &[],
        value_flags: &[],
        when: Some(("-i", "")),
        secrets: &[Secret::Stdin],
        kind: "password-flag",
    },
    Rule {
        programs: &["gcloud"],
        sub: &["secrets"],
        value_flags: &[],
        when: Some(("--data-file", "-")),
        secrets: &[Secret::Stdin],
        kind: "secret-flag",
    },
];

/// Where a secret was found in a command: a part of one of its words.
struct Hit<'w> {
    word: &'w Word,
    /// Byte range in `word.value`.
    a: usize,
    b: usize,
    kind: &'static str,
    /// The name that says it is a secret, if any (for the kind).
    name: Option<&'w str>,
    /// How much the value must look like a secret: a password (anything but a reference, a
    /// path, a mask), or, for a value whose key does not say, random enough (`Weak`).
    gate: Keyword,
}

/// The flags and positional arguments of a command's arguments.
struct Args<'w> {
    /// (index into the words, value).
    positionals: Vec<(usize, &'w str)>,
}

fn parse_args<'w>(args: &'w [Word], value_flags: &[&str]) -> Args<'w> {
    let mut positionals = Vec::new();
    let mut k = 0;
    let mut flags_done = false;
    while let Some(w) = args.get(k) {
        let t = w.value.as_str();
        if !flags_done && t == "--" {
            flags_done = true;
            k += 1;
            continue;
        }
        if !flags_done && t.len() > 1 && t.starts_with('-') {
            k += if value_flags.contains(&t) { 2 } else { 1 };
            continue;
        }
        positionals.push((k, t));
        k += 1;
    }
    Args { positionals }
}

/// Whether a positional argument list starts with `sub` (without case).
fn starts_with_sub(args: &Args<'_>, sub: &[&str]) -> bool {
    sub.len() <= args.positionals.len()
        && sub
            .iter()
            .zip(&args.positionals)
            .all(|(want, (_, got))| want.eq_ignore_ascii_case(got))
}

/// Whether a name (`aws_secret_access_key`, `profile.ci.aws_session_token`,
/// `//registry.npmjs.org/:_authToken`, `github-oauth.github.com`) names a secret, and how.
fn secret_name(name: &str) -> Option<Keyword> {
    const EXTRA: &[&str] = &[
        "github-oauth",
        "gitlab-oauth",
        "gitlab-token",
        "bitbucket-oauth",
        "bearer",
        "http-basic",
    ];
    if let Some(kw) = classify_name(name, false) {
        return Some(kw);
    }
    // `github:token`, `Stripe:ApiKey`: a namespace, then the name.
    if let Some((_, last)) = name.rsplit_once(':')
        && let Some(kw) = classify_name(last, false)
    {
        return Some(kw);
    }
    // `pypi-token.pypi`, `github-oauth.github.com`: a section named for a secret, then the
    // host or repository it is for (`credential.helper` is a setting, not a credential).
    let first = name.split('.').next().unwrap_or(name);
    if EXTRA.contains(&first.to_ascii_lowercase().as_str()) {
        return Some(Keyword::Secret);
    }
    classify_name(first, false).filter(|kw| *kw != Keyword::Weak)
}

/// Finds a rule's secrets in one command (`args` are the words after the program).
fn rule_hits<'w>(
    rule: &Rule,
    args: &'w [Word],
    parsed: &Args<'w>,
    previous: Option<&'w Command>,
    here: Option<&'w Word>,
    hits: &mut Vec<Hit<'w>>,
) {
    let after_sub: Vec<(usize, &str)> = parsed.positionals[rule.sub.len()..].to_vec();
    for secret in rule.secrets {
        match *secret {
            Secret::Option(name, form) => {
                let mut k = 0;
                while let Some(w) = args.get(k) {
                    let t = w.value.as_str();
                    if t == "--" {
                        break;
                    }
                    if t == name && form != Form::Attached {
                        if let Some(v) = args.get(k + 1) {
                            hits.push(Hit {
                                word: v,
                                a: 0,
                                b: v.value.len(),
                                kind: rule.kind,
                                name: None,
                                gate: Keyword::Password,
                            });
                        }
                        k += 2;
                        continue;
                    }
                    if let Some(rest) = t.strip_prefix(name) {
                        let attached = !rest.is_empty()
                            && match form {
                                Form::Attached | Form::Both => !name.starts_with("--"),
                                Form::Separate => false,
                            };
                        let inline = name.starts_with("--") || name.len() > 2;
                        if let Some(v) = rest.strip_prefix('=').filter(|_| inline) {
                            let a = t.len() - v.len();
                            hits.push(Hit {
                                word: w,
                                a,
                                b: t.len(),
                                kind: rule.kind,
                                name: None,
                                gate: Keyword::Password,
                            });
                        } else if attached {
                            hits.push(Hit {
                                word: w,
                                a: name.len(),
                                b: t.len(),
                                kind: rule.kind,
                                name: None,
                                gate: Keyword::Password,
                            });
                        }
                    }
                    k += 1;
                }
            }
            Secret::UserPass(name, sep) => {
                for (k, w) in args.iter().enumerate() {
                    let t = w.value.as_str();
                    let (word, offset, value) = if t == name {
                        match args.get(k + 1) {
                            Some(v) => (v, 0, v.value.as_str()),
                            None => continue,
                        }
                    } else if let Some(v) = t
                        .strip_prefix(name)
                        .and_then(|r| r.strip_prefix('='))
                        .filter(|_| name.starts_with("--"))
                    {
                        (w, t.len() - v.len(), v)
                    } else {
                        continue;
                    };
                    if let Some(at) = value.find(sep) {
                        hits.push(Hit {
                            word,
                            a: offset + at + 1,
                            b: offset + value.len(),
                            kind: rule.kind,
                            name: None,
                            gate: Keyword::Password,
                        });
                    }
                }
            }
            Secret::Positional(n) => {
                if let Some(&(k, _)) = after_sub.get(n) {
                    let w = &args[k];
                    if !w.value.contains('=') {
                        hits.push(Hit {
                            word: w,
                            a: 0,
                            b: w.value.len(),
                            kind: rule.kind,
                            name: None,
                            gate: Keyword::Password,
                        });
                    }
                }
            }
            Secret::LastPositional => {
                if let Some(&(k, _)) = after_sub.last() {
                    let w = &args[k];
                    hits.push(Hit {
                        word: w,
                        a: 0,
                        b: w.value.len(),
                        kind: rule.kind,
                        name: None,
                        gate: Keyword::Password,
                    });
                }
            }
            Secret::Named => {
                if let [(_, name), (k, _), ..] = after_sub.as_slice()
                    && let Some(gate) = secret_name(name)
                {
                    let w = &args[*k];
                    // `poetry config http-basic.pypi USER PASS`: the password comes last.
                    let w = if name.starts_with("http-basic") {
                        after_sub.get(2).map_or(w, |(k, _)| &args[*k])
                    } else {
                        w
                    };
                    hits.push(Hit {
                        word: w,
                        a: 0,
                        b: w.value.len(),
                        kind: rule.kind,
                        name: Some(name),
                        gate,
                    });
                }
            }
            Secret::Pairs(skip) => {
                for &(k, t) in after_sub.iter().skip(skip) {
                    if let Some((key, value)) = t.split_once('=')
                        && !key.is_empty()
                    {
                        // `user=app` is part of a secret's data, but only what a key names or
                        // what looks random is taken for a secret.
                        let w = &args[k];
                        hits.push(Hit {
                            word: w,
                            a: t.len() - value.len(),
                            b: t.len(),
                            kind: rule.kind,
                            name: Some(key),
                            gate: secret_name(key).unwrap_or(Keyword::Weak),
                        });
                    }
                }
            }
            Secret::OptionPair(name) => {
                for (k, w) in args.iter().enumerate() {
                    let t = w.value.as_str();
                    let (word, offset, pair) = if t == name {
                        match args.get(k + 1) {
                            Some(v) => (v, 0, v.value.as_str()),
                            None => continue,
                        }
                    } else if let Some(p) = t.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                        (w, t.len() - p.len(), p)
                    } else {
                        continue;
                    };
                    if let Some((key, value)) = pair.split_once('=') {
                        hits.push(Hit {
                            word,
                            a: offset + pair.len() - value.len(),
                            b: offset + pair.len(),
                            kind: rule.kind,
                            name: Some(key),
                            gate: secret_name(key).unwrap_or(Keyword::Weak),
                        });
                    }
                }
            }
            Secret::StorePairs(skip) => {
                for &(k, t) in after_sub.iter().skip(skip) {
                    // `railway variables set VAT_RATE=0.15 ALGORITHM=HS256`: a store of
                    // variables holds settings too; plain values under plain names are kept.
                    if let Some((key, value)) = t.split_once('=')
                        && !key.is_empty()
                        && !plain_name(key)
                        && !redact_files::keeps(key, value)
                    {
                        let w = &args[k];
                        hits.push(Hit {
                            word: w,
                            a: t.len() - value.len(),
                            b: t.len(),
                            kind: rule.kind,
                            name: Some(key),
                            gate: Keyword::Password,
                        });
                    }
                }
            }
            Secret::StoreNamed(at) => {
                if let Some(&(k, name)) = after_sub.get(at) {
                    let (word, a, name) = match name.split_once('=') {
                        Some((key, _)) => (&args[k], key.len() + 1, key),
                        None => match after_sub.get(at + 1) {
                            Some(&(v, _)) => (&args[v], 0, name),
                            None => continue,
                        },
                    };
                    if !plain_name(name) {
                        hits.push(Hit {
                            word,
                            a,
                            b: word.value.len(),
                            kind: rule.kind,
                            name: Some(name),
                            gate: Keyword::Password,
                        });
                    }
                }
            }
            Secret::SpacedPairs(from) => {
                let rest = after_sub.get(from..).unwrap_or(&[]);
                let mut i = 0;
                while i < rest.len() {
                    let (_, key) = rest[i];
                    if let Some((name, value)) = key.split_once('=') {
                        if let Some(gate) = secret_name(name) {
                            let w = &args[rest[i].0];
                            hits.push(Hit {
                                word: w,
                                a: key.len() - value.len(),
                                b: key.len(),
                                kind: rule.kind,
                                name: Some(name),
                                gate,
                            });
                        }
                        i += 1;
                        continue;
                    }
                    if let Some(&(k, _)) = rest.get(i + 1)
                        && let Some(gate) = secret_name(key)
                    {
                        let w = &args[k];
                        hits.push(Hit {
                            word: w,
                            a: 0,
                            b: w.value.len(),
                            kind: rule.kind,
                            name: Some(key),
                            gate,
                        });
                    }
                    i += 2;
                }
            }
            Secret::Htpasswd => {
                let flags: String = args
                    .iter()
                    .map(|w| w.value.as_str())
                    .take_while(|t| t.starts_with('-') && !t.starts_with("--"))
                    .filter(|t| *t != "-C" && *t != "-r")
                    .flat_map(|t| t.chars().skip(1))
                    .collect();
                if flags.contains('b') {
                    let at = if flags.contains('n') { 1 } else { 2 };
                    if let Some(&(k, _)) = parsed.positionals.get(at) {
                        let w = &args[k];
                        hits.push(Hit {
                            word: w,
                            a: 0,
                            b: w.value.len(),
                            kind: rule.kind,
                            name: None,
                            gate: Keyword::Password,
                        });
                    }
                }
            }
            Secret::Stdin => {
                if let Some(word) = here {
                    hits.push(Hit {
                        word,
                        a: 0,
                        b: word.value.len(),
                        kind: rule.kind,
                        name: None,
                        gate: Keyword::Password,
                    });
                }
                if let Some(producer) = previous.filter(|p| p.pipes_out) {
                    producer_hits(producer, rule.kind, hits);
                }
            }
        }
    }
}

/// The literal text `echo`/`printf` write into a pipe.
fn producer_hits<'w>(producer: &'w Command, kind: &'static str, hits: &mut Vec<Hit<'w>>) {
    let (Some(p), _) = program_index(&producer.words) else {
        return;
    };
    let program = basename(&producer.words[p].value);
    let args = &producer.words[p + 1..];
    let words: Vec<&Word> = match program {
        "echo" => args
            .iter()
            .skip_while(|w| matches!(w.value.as_str(), "-n" | "-e" | "-ne" | "-en" | "-E"))
            .collect(),
        "printf" => {
            let args: Vec<&Word> = args.iter().skip_while(|w| w.value == "--").collect();
            match args.split_first() {
                Some((format, rest)) if format.value.contains('%') => rest.to_vec(),
                Some((format, _)) => vec![*format],
                None => Vec::new(),
            }
        }
        _ => Vec::new(),
    };
    for w in words {
        hits.push(Hit {
            word: w,
            a: 0,
            b: w.value.len(),
            kind,
            name: None,
            gate: Keyword::Password,
        });
    }
}

/// Whether a rule applies to a command (program, sub-command, condition).
fn rule_applies(rule: &Rule, program: &str, args: &[Word], parsed: &Args<'_>) -> bool {
    (rule.programs == ["*"] || rule.programs.contains(&program))
        && starts_with_sub(parsed, rule.sub)
        && rule.when.is_none_or(|(flag, value)| {
            args.iter().enumerate().any(|(k, w)| {
                let t = w.value.as_str();
                if value.is_empty() {
                    return t == flag;
                }
                (t == flag && args.get(k + 1).is_some_and(|v| v.value == value))
                    || t.strip_prefix(flag)
                        .and_then(|r| r.strip_prefix('='))
                        .is_some_and(|v| v == value)
            })
        })
}

/// Redacts the secrets that commands in `text` take by position or by an option the pattern
/// rules do not know (see the module documentation). `text` is a command line, a script, or
/// any tool input; text with no known command costs one literal search.
pub(super) fn redact_commands<'a>(
    redactor: &Redactor,
    text: &'a str,
    found: &mut Vec<Found>,
) -> Cow<'a, str> {
    let text: Cow<'a, str> = match redact_sql(text, found) {
        Some(sql) => Cow::Owned(sql),
        None => Cow::Borrowed(text),
    };
    if !COMMAND_LITERALS.is_match(&text) {
        return text;
    }
    let redacted = match &text {
        Cow::Borrowed(t) => redact_command_lines(redactor, t, found),
        Cow::Owned(t) => Cow::Owned(redact_command_lines(redactor, t, found).into_owned()),
    };
    match redacted {
        Cow::Owned(o) => Cow::Owned(o),
        Cow::Borrowed(_) => text,
    }
}

/// The SQL password literals in `text`, redacted; `None` when there is none.
fn redact_sql(text: &str, found: &mut Vec<Found>) -> Option<String> {
    let hint = |w: &str| text.contains(w);
    if !text.contains('\'')
        || !(hint("assword") || hint("ASSWORD") || hint("dentified") || hint("DENTIFIED"))
    {
        return None;
    }
    let mut out = String::new();
    let mut last = 0;
    for c in SQL_PASSWORD.captures_iter(text) {
        let Some(m) = c.get(1) else {
            continue;
        };
        if !value_is_secret(Keyword::Password, m.as_str()) {
            continue;
        }
        found.push(Found {
            value: m.as_str().to_owned(),
            kind: "password-flag",
        });
        out.push_str(&text[last..m.start()]);
        out.push_str("[REDACTED:password-flag]");
        last = m.end();
    }
    if last == 0 {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// [`redact_commands`] past the SQL and the prefilter.
fn redact_command_lines<'a>(
    redactor: &Redactor,
    text: &'a str,
    found: &mut Vec<Found>,
) -> Cow<'a, str> {
    // A patch's added lines are commands too once their `+` is off, in the scripts it writes.
    if text.contains("*** Begin Patch") {
        let mut out = String::with_capacity(text.len());
        let mut changed = false;
        let mut script = false;
        for line in text.split_inclusive('\n') {
            for header in ["*** Add File: ", "*** Update File: ", "*** Move to: "] {
                if let Some(path) = line.strip_prefix(header) {
                    script = is_script(path.trim());
                }
            }
            match line.strip_prefix('+') {
                Some(body) if script && COMMAND_LITERALS.is_match(body) => {
                    let r = redact_command_lines(redactor, body, found);
                    changed |= matches!(r, Cow::Owned(_));
                    out.push('+');
                    out.push_str(&r);
                }
                _ => out.push_str(line),
            }
        }
        return if changed {
            Cow::Owned(out)
        } else {
            Cow::Borrowed(text)
        };
    }
    // Only the lines around a literal of the table are read as commands: a long file an agent
    // writes is mostly something else, and splitting it all would cost more than the rest of
    // its redaction.
    let mut out: Option<String> = None;
    let mut last = 0;
    let mut next_from = 0;
    for m in COMMAND_LITERALS.find_iter(text) {
        if m.start() < next_from {
            continue;
        }
        let (a, b) = logical_line(text, m.start());
        next_from = b;
        if let Cow::Owned(r) = redact_region(redactor, &text[a..b], found) {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[last..a]);
            o.push_str(&r);
            last = b;
        }
    }
    match out {
        Some(mut o) => {
            o.push_str(&text[last..]);
            Cow::Owned(o)
        }
        None => Cow::Borrowed(text),
    }
}

/// How many lines a command may be continued over (`\`, a trailing `|`, `&&`, `||`).
const MAX_CONTINUED: usize = 16;

/// The line holding byte `at`, with the lines it continues and that continue it.
fn logical_line(text: &str, at: usize) -> (usize, usize) {
    let continues = |line: &str| {
        let t = line.trim_end();
        t.ends_with('\\') || t.ends_with('|') || t.ends_with("&&")
    };
    let line_start = |i: usize| text[..i].rfind('\n').map_or(0, |n| n + 1);
    let line_end = |i: usize| text[i..].find('\n').map_or(text.len(), |n| i + n);
    let mut start = line_start(at);
    for _ in 0..MAX_CONTINUED {
        if start == 0 {
            break;
        }
        let previous = line_start(start - 1);
        if !continues(&text[previous..start - 1]) {
            break;
        }
        start = previous;
    }
    let mut end = line_end(at);
    for _ in 0..MAX_CONTINUED {
        if end >= text.len() || !continues(&text[line_start(end)..end]) {
            break;
        }
        end = line_end(end + 1);
    }
    (start, end)
}

/// [`redact_command_lines`] on one logical line (or a few).
fn redact_region<'a>(redactor: &Redactor, text: &'a str, found: &mut Vec<Found>) -> Cow<'a, str> {
    let commands = split(text);
    let mut hits: Vec<Hit<'_>> = Vec::new();
    for (ci, cmd) in commands.iter().enumerate() {
        let (Some(p), sudo_stdin) = program_index(&cmd.words) else {
            continue;
        };
        let program = basename(&cmd.words[p].value);
        let args = &cmd.words[p + 1..];
        let previous = ci
            .checked_sub(1)
            .map(|i| &commands[i])
            .filter(|_| cmd.pipes_in);
        if sudo_stdin && let Some(producer) = previous {
            producer_hits(producer, "password-flag", &mut hits);
        }
        for rule in RULES {
            if rule.programs != ["*"] && !rule.programs.contains(&program) {
                continue;
            }
            let parsed = parse_args(args, rule.value_flags);
            if rule_applies(rule, program, args, &parsed) {
                rule_hits(
                    rule,
                    args,
                    &parsed,
                    previous,
                    cmd.here_string.as_ref(),
                    &mut hits,
                );
            }
        }
    }
    apply_hits(redactor, text, hits, found)
}

/// Replaces the hits that hold a secret, in text order.
fn apply_hits<'a>(
    redactor: &Redactor,
    text: &'a str,
    hits: Vec<Hit<'_>>,
    found: &mut Vec<Found>,
) -> Cow<'a, str> {
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for hit in hits {
        let Some(value) = hit.word.value.get(hit.a..hit.b) else {
            continue;
        };
        if value.contains("[REDACTED:") {
            continue; // redacted before: what is left around it is not the secret
        }
        // `chpasswd`, `echo user:password |`: the user is kept.
        let (a, value) = match value.split_once(':') {
            Some((user, pass))
                if hit.kind == "password-flag"
                    && hit.a == 0
                    && hit.b == hit.word.value.len()
                    && !pass.is_empty()
                    && !value.contains("://")
                    && !user.is_empty()
                    && user
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')) =>
            {
                (hit.a + user.len() + 1, pass)
            }
            _ => (hit.a, value),
        };
        if !value_is_secret(hit.gate, value) || value.starts_with('@') || value.starts_with("file:")
        {
            continue;
        }
        let kind = redactor
            .value_kind(value)
            .unwrap_or_else(|| match hit.name {
                Some(name) if name_kind(name) != "secret-assignment" => name_kind(name),
                _ => hit.kind,
            });
        let (start, end) = hit.word.span(a, a + value.len());
        if start >= end || text.get(start..end) != Some(value) && hit.word.map.is_none() {
            continue;
        }
        found.push(Found {
            value: value.to_owned(),
            kind,
        });
        edits.push((start, end, format!("[REDACTED:{kind}]")));
    }
    if edits.is_empty() {
        return Cow::Borrowed(text);
    }
    edits.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1)));
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, replacement) in edits {
        if start < last {
            continue; // overlaps an earlier edit
        }
        out.push_str(&text[last..start]);
        out.push_str(&replacement);
        last = end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

// ---------------------------------------------------------------------------------------------
// What a command's output holds

/// What an action's output holds besides what the pattern rules find in any text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputKind {
    /// The output is a secret: every line of it (`printenv DB_PASSWORD`, `pass show x`).
    pub secret: bool,
    /// It holds a `.netrc` file.
    pub netrc: bool,
    /// It holds a `.pgpass` file.
    pub pgpass: bool,
    /// It holds a file whose every value is a secret (`.env`, a credentials file: see
    /// [`super::redact_files`]).
    pub secret_file: bool,
}

impl OutputKind {
    /// Whether there is anything to do.
    pub fn any(self) -> bool {
        self.secret || self.netrc || self.pgpass || self.secret_file
    }

    fn or(self, other: OutputKind) -> OutputKind {
        OutputKind {
            secret: self.secret || other.secret,
            netrc: self.netrc || other.netrc,
            pgpass: self.pgpass || other.pgpass,
            secret_file: self.secret_file || other.secret_file,
        }
    }

    /// A compact name for the reader's persisted state.
    pub fn code(self) -> u8 {
        u8::from(self.secret)
            | (u8::from(self.netrc) << 1)
            | (u8::from(self.pgpass) << 2)
            | (u8::from(self.secret_file) << 3)
    }

    /// Reads [`OutputKind::code`].
    pub fn from_code(code: u64) -> OutputKind {
        OutputKind {
            secret: code & 1 != 0,
            netrc: code & 2 != 0,
            pgpass: code & 4 != 0,
            secret_file: code & 8 != 0,
        }
    }
}

/// Whether a file holds commands a shell (or a CI runner, or a database) runs: what an agent
/// writes there is read with the command table (other files, code and prose, are not: splitting
/// them would cost more than it finds).
pub fn is_script(path: &str) -> bool {
    let name = basename(path.trim()).to_ascii_lowercase();
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    matches!(
        ext,
        "sh" | "bash"
            | "zsh"
            | "fish"
            | "ksh"
            | "command"
            | "ps1"
            | "bat"
            | "cmd"
            | "sql"
            | "yml"
            | "yaml"
            | "mk"
            | "just"
            | "envrc"
            | "bashrc"
            | "zshrc"
            | "profile"
    ) || matches!(
        name.as_str(),
        "dockerfile"
            | "containerfile"
            | "makefile"
            | "gnumakefile"
            | "justfile"
            | "procfile"
            | ".bashrc"
            | ".zshrc"
            | ".profile"
            | ".bash_profile"
            | ".envrc"
            | "taskfile"
    ) || name.starts_with("dockerfile.")
}

/// What a file holds, by its path.
pub fn file_kind(path: &str) -> OutputKind {
    let path = path.trim();
    let name = basename(path);
    let lower = name.to_ascii_lowercase();
    let mut kind = OutputKind {
        netrc: lower == ".netrc" || lower == "_netrc" || lower == "netrc",
        pgpass: lower == ".pgpass" || lower == "pgpass.conf" || lower == "pgpass",
        secret: false,
        secret_file: false,
    };
    if kind.netrc || kind.pgpass {
        return kind; // structured: only its passwords go
    }
    kind.secret_file = is_secret_file(path);
    if path.contains("/run/secrets/") {
        kind.secret = !name.is_empty();
    }
    // `db_password`, `api_token.txt`, `.vault-token`: a file that holds one secret.
    let (stem, ext) = match lower.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem, ext),
        _ => (lower.as_str(), ""),
    };
    let stem = stem.trim_start_matches('.');
    if matches!(ext, "" | "txt" | "token" | "secret" | "pass" | "password")
        && !stem.is_empty()
        && (classify_name(stem, false).is_some_and(|kw| kw != Keyword::Weak)
            || matches!(ext, "token" | "secret" | "password"))
    {
        kind.secret = true;
    }
    kind
}

/// Programs that print a file (or a part of it) as it is.
const READERS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "bat", "batcat", "nl", "tac", "sed", "awk", "grep",
    "rg", "strings", "cut", "sort", "xxd", "od", "base64", "view", "type",
];

/// Whether what the first command of `pipeline` prints reaches the output: no later stage of
/// its pipe consumes it silently, and the last one writes to the terminal.
fn printed_through(pipeline: &[Command]) -> bool {
    let mut i = 0;
    while pipeline[i].pipes_out && i + 1 < pipeline.len() {
        i += 1;
        if consumes_silently(&pipeline[i]) || reads_secret_stdin(&pipeline[i]) {
            return false;
        }
    }
    !pipeline[i].stdout_redirected
}

/// Whether a word of `echo`/`printf` holds a command substitution whose command prints a
/// secret (`echo "$(pass show db)"`).
fn substitution_prints_secret(word: &str) -> bool {
    let mut rest = word;
    while let Some(at) = rest.find("$(").or_else(|| rest.find('`')) {
        let open = if rest[at..].starts_with("$(") { 2 } else { 1 };
        let inner = &rest[at + open..];
        let end = inner.rfind([')', '`']).unwrap_or(inner.len());
        if output_of_command(&inner[..end]).secret {
            return true;
        }
        rest = &inner[end.min(inner.len())..];
        if rest.len() <= 1 {
            break;
        }
    }
    false
}

/// Programs after which a printed secret is no longer printed.
fn consumes_silently(cmd: &Command) -> bool {
    let (Some(p), _) = program_index(&cmd.words) else {
        return false;
    };
    let program = basename(&cmd.words[p].value);
    let args: Vec<&str> = cmd.words[p + 1..]
        .iter()
        .map(|w| w.value.as_str())
        .collect();
    let stdin_arg = args.iter().any(|a| matches!(*a, "-" | "/dev/stdin"));
    matches!(
        program,
        "tar"
            | "sh"
            | "bash"
            | "zsh"
            | "source"
            | "eval"
            | "pbcopy"
            | "xclip"
            | "xsel"
            | "wl-copy"
            | "clip.exe"
            | "ssh-add"
            | "crontab"
    ) || (matches!(program, "kubectl" | "oc") && stdin_arg)
        || (matches!(program, "gpg" | "gpg2") && args.contains(&"--import"))
        || matches!(
            program,
            "wc" | "md5sum"
                | "sha1sum"
                | "sha256sum"
                | "sha512sum"
                | "shasum"
                | "cksum"
                | "b2sum"
                | "true"
                | "test"
        )
        || (program == "grep"
            && args
                .iter()
                .any(|a| a.starts_with('-') && (a.contains('q') || a.contains('c'))))
}

/// Whether a word of `echo`/`printf` expands a variable whose name says it holds a secret.
fn expands_secret_variable(word: &str) -> bool {
    let b = word.as_bytes();
    let mut i = 0;
    while let Some(at) = word[i..].find('$').map(|n| i + n) {
        let rest = &word[at + 1..];
        let name: &str = if let Some(inner) = rest.strip_prefix('{') {
            if inner.starts_with('#') {
                i = at + 1;
                continue; // `${#X}`: its length
            }
            let end = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            &inner[..end]
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        };
        if !name.is_empty() && (classify_name(name, false).is_some() || says_secret(name)) {
            return true;
        }
        i = at + 1;
        if i >= b.len() {
            break;
        }
    }
    false
}

/// What the output of a shell command line holds (see [`OutputKind`]).
pub fn output_of_command(line: &str) -> OutputKind {
    let mut kind = OutputKind::default();
    if !OUTPUT_LITERALS.is_match(line) {
        return kind;
    }
    let commands = split(line);
    for (ci, cmd) in commands.iter().enumerate() {
        let (Some(p), _) = program_index(&cmd.words) else {
            continue;
        };
        let program = basename(&cmd.words[p].value);
        let args = &cmd.words[p + 1..];
        let words: Vec<&str> = args.iter().map(|w| w.value.as_str()).collect();
        let positionals: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| !w.starts_with('-'))
            .collect();
        let mut here = OutputKind::default();
        match program {
            "printenv" => {
                here.secret = words.iter().any(|w| {
                    !w.starts_with('-') && (classify_name(w, false).is_some() || says_secret(w))
                });
            }
            "echo" | "printf" | "print" => {
                here.secret = args.iter().any(|w| {
                    // Single-quoted text is not expanded.
                    let quoted_single = w.map.is_some()
                        && line.get(w.start..w.start + 1) == Some("'")
                        && line.get(w.end - 1..w.end) == Some("'");
                    !quoted_single
                        && (expands_secret_variable(&w.value)
                            || substitution_prints_secret(&w.value))
                });
            }
            _ if READERS.contains(&program) => {
                // grep's, sed's and awk's first operand is a pattern or a script.
                let skip = usize::from(matches!(program, "grep" | "rg" | "sed" | "awk"));
                for w in positionals.iter().skip(skip) {
                    here = here.or(file_kind(w));
                    here.secret |= matches!(*w, "/dev/urandom" | "/dev/random");
                }
            }
            // `jq -r '.auths[…].auth' ~/.docker/config.json`: a value taken out of a secret
            // file is printed bare, without the name that would say what it is.
            "jq" | "yq" | "gojq" | "jaq" => {
                for w in positionals.iter().skip(1) {
                    let file = file_kind(w);
                    here = here.or(file);
                    here.secret |= file.secret_file;
                }
            }
            _ if program == "tr" || program == "dd" => {
                // `tr -dc A-Za-z0-9 < /dev/urandom | head -c 32`: a fresh secret.
                here.secret = line.contains("/dev/urandom") || line.contains("/dev/random");
            }
            _ => here.secret = store_prints_secret(&cmd.words, p),
        }
        if here.secret && (cmd.stdout_redirected || !printed_through(&commands[ci..])) {
            here.secret = false;
        }
        if cmd.stdout_redirected {
            here.netrc = false;
            here.pgpass = false;
            here.secret_file = false;
        }
        kind = kind.or(here);
    }
    kind
}

/// What an agent tool call's output holds: a shell command's (see [`output_of_command`]) or
/// a file read by the `Read`-like tools.
pub fn output_of_call(tool: &str, input: &serde_json::Value) -> OutputKind {
    let text = |k: &str| input.get(k).and_then(serde_json::Value::as_str);
    if let Some(line) = text("command").or_else(|| text("cmd")) {
        return output_of_command(line);
    }
    if let Some(cmd) = input.get("command").and_then(serde_json::Value::as_array) {
        let words: Vec<&str> = cmd.iter().filter_map(serde_json::Value::as_str).collect();
        // Codex's `["bash", "-lc", "…"]`.
        if let Some(line) = words.iter().rev().find(|w| w.contains(' ')) {
            return output_of_command(line);
        }
        return output_of_command(&words.join(" "));
    }
    // Every agent's file-reading tool: `Read`, `read_file`, `read`, `ReadFile`, `view`, …
    let squashed: String = tool
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let reads = matches!(
        squashed.as_str(),
        "read"
            | "view"
            | "viewfile"
            | "notebookread"
            | "readfile"
            | "readmanyfiles"
            | "strreplaceeditor"
            | "strreplacebasededittool"
    );
    if reads {
        return input_file_kind(input);
    }
    OutputKind::default()
}

/// The members in which agents' file tools name their files: Claude Code's `file_path`, Gemini
/// CLI's `file_path`/`absolute_path`/`paths`, OpenCode's `filePath`, Cline's, Kimi's and Cursor's
/// `path`, Cursor's `target_file`.
pub const FILE_KEYS: &[&str] = &[
    "file_path",
    "filePath",
    "absolute_path",
    "path",
    "paths",
    "filename",
    "notebook_path",
    "target_file",
];

/// What the files an agent's write-like call names hold (its content is then redacted as
/// such a file).
pub fn input_file_kind(input: &serde_json::Value) -> OutputKind {
    let mut kind = OutputKind::default();
    for key in FILE_KEYS {
        match input.get(*key) {
            Some(serde_json::Value::String(path)) => kind = kind.or(file_kind(path)),
            Some(serde_json::Value::Array(paths)) => {
                for path in paths.iter().filter_map(serde_json::Value::as_str) {
                    kind = kind.or(file_kind(path));
                }
            }
            _ => {}
        }
    }
    kind
}

// ---------------------------------------------------------------------------------------------
// Credential file formats

/// `.netrc`: the values after `password` and `account` (whitespace-separated tokens, on one
/// line or several; a line may carry a `cat -n`-style number).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static NETRC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s→"'])(?:password|passwd|account)[ \t\r\n]+([^\s"'\\]+)"#)
        .expect("netrc pattern compiles")
});

/// `.pgpass`: `host:port:database:user:password` (a `\:` escapes a colon), one per line, maybe
/// after a line number or a patch's `+`; or one such word in a command line (`echo 'h:5432:…'
/// >> ~/.pgpass`).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static PGPASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)(?:^[ \t]*(?:[0-9]+(?:→|\t))?\+?|[\s"'])(?:\[[0-9A-Fa-f:.]*\]|(?:[^:\s#"'\\]|\\:)*):(?:[0-9]{1,5}|\*):(?:[^:\s"'\\]|\\:)+:(?:[^:\s"'\\]|\\:)+:((?:[^\r\n"'\\]|\\[:\\])+?)(?:[ \t]*$|["'])"#,
    )
    .expect("pgpass pattern compiles")
});

/// Redacts what a credential file of `kind` holds, in its text (or in a command that writes
/// one).
pub fn redact_file_formats<'a>(
    text: &'a str,
    kind: OutputKind,
    found: &mut Vec<Found>,
) -> Cow<'a, str> {
    let mut edits: Vec<(usize, usize, &'static str)> = Vec::new();
    if kind.netrc {
        for c in NETRC.captures_iter(text) {
            if let Some(m) = c.get(1)
                && value_is_secret(Keyword::Password, m.as_str())
            {
                edits.push((m.start(), m.end(), "password-file"));
            }
        }
    }
    if kind.pgpass {
        for c in PGPASS.captures_iter(text) {
            if let Some(m) = c.get(1)
                && value_is_secret(Keyword::Password, m.as_str().trim())
            {
                let value = m.as_str().trim_end();
                edits.push((m.start(), m.start() + value.len(), "password-file"));
            }
        }
    }
    redact_files::apply(text, edits, found)
}

/// Redacts every line of an output that is a secret, keeping blank lines. A JSON document
/// (`aws sts get-session-token`, `vault kv get -format=json`) keeps its shape: only its string
/// values go, but those of plain keys (`"Expiration"`, `"Arn"`, `"request_id"`).
pub fn redact_secret_output<'a>(text: &'a str, found: &mut Vec<Found>) -> Cow<'a, str> {
    if let Some(json) = redact_secret_json(text, found) {
        return Cow::Owned(json);
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let trimmed = body.trim();
        let ending = &line[body.len()..];
        if trimmed.is_empty()
            || trimmed.starts_with("[REDACTED:")
            || !trimmed.chars().any(char::is_alphanumeric)
        {
            out.push_str(line);
            continue;
        }
        let lead = &body[..body.len() - body.trim_start().len()];
        out.push_str(lead);
        out.push_str("[REDACTED:secret-output]");
        out.push_str(ending);
        found.push(Found {
            value: trimmed.to_owned(),
            kind: "secret-output",
        });
        changed = true;
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

// ---------------------------------------------------------------------------------------------
// Credentials given to a client as one `user:password` word

/// `-a USER:PASS`, `-u USER,PASS`, `--auth=USER:PASS`, `--basic-auth USER%PASS`: the option
/// names of clients that take a user and a password in one word (httpie `-a`, lftp `-u`,
/// `--user`, …), whatever the program (group `p` is the password).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static CREDENTIAL_FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?P<f>-a|-u|-U|--user|--auth|--basic-auth|--credentials|--creds|--userpass|--login)(?:[ \t]+|=)(?P<q>["']?)(?P<u>[A-Za-z0-9._+\-\\]+)[:,%](?P<p>[^\s"'`;&|<>()]+)"#,
    )
    .expect("credential flag pattern compiles")
});

/// Redacts the password of a `user:password` word given to a client's credential option (see
/// [`CREDENTIAL_FLAG`]). Kept: references (`$PASS`), paths and hosts (`rsync -a host:dir/`),
/// `uid:gid` numbers, and after `-u`/`-U`/`--user` a plain lower-case word (`-u app:staff` is a
/// user and a group).
pub fn redact_credential_flags<'a>(text: &'a str, found: &mut Vec<Found>) -> Cow<'a, str> {
    if !text.contains(" -") {
        return Cow::Borrowed(text);
    }
    let mut edits = Vec::new();
    // The option starts a word: checked here rather than in the pattern, so that the pattern
    // starts with its options' literals and the search skips to them.
    let mut at = 0;
    while let Some(c) = CREDENTIAL_FLAG.captures_at(text, at) {
        let (Some(whole), Some(flag), Some(pass)) = (c.get(0), c.name("f"), c.name("p")) else {
            break;
        };
        let starts_word = text[..flag.start()]
            .chars()
            .next_back()
            .is_none_or(|b| b.is_whitespace() || matches!(b, ';' | '&' | '|' | '('));
        if !starts_word {
            at = flag.start() + 1;
            continue;
        }
        at = whole.end();
        let quote = c.name("q").map_or("", |q| q.as_str());
        let mut value = pass.as_str();
        if !quote.is_empty() {
            value = value.trim_end_matches(quote);
        }
        let user_like = matches!(flag.as_str(), "-u" | "-U" | "--user");
        let group_like = value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'_');
        if value.is_empty()
            || value.contains("[REDACTED")
            || value.contains('/')
            || value.contains('@')
            || value.bytes().all(|b| b.is_ascii_digit())
            || (user_like && group_like)
            || !value_is_secret(Keyword::Password, value)
        {
            continue;
        }
        edits.push((pass.start(), pass.start() + value.len(), "password-flag"));
    }
    redact_files::apply(text, edits, found)
}

/// A JSON string token (with its quotes).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static JSON_STRING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""(?:[^"\\\r\n]|\\.)*""#).expect("json string compiles"));

/// [`redact_secret_output`] for an output that is one JSON document; `None` when it is not
/// one, or holds no string to redact.
fn redact_secret_json(text: &str, found: &mut Vec<Found>) -> Option<String> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('['))
        || serde_json::from_str::<serde_json::Value>(trimmed).is_err()
    {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut key: Option<&str> = None;
    for m in JSON_STRING.find_iter(text) {
        let next = text[m.end()..].trim_start().as_bytes().first().copied();
        let inner = &text[m.start() + 1..m.end() - 1];
        if next == Some(b':') {
            key = Some(inner);
            continue;
        }
        let before = text[..m.start()].trim_end().as_bytes().last().copied();
        // After `"key":`, the key decides; an array's elements are secrets.
        let plain = before == Some(b':') && key.is_some_and(plain_name);
        if plain
            || inner.is_empty()
            || !inner.chars().any(char::is_alphanumeric)
            || inner.starts_with("[REDACTED:")
        {
            continue;
        }
        out.push_str(&text[last..m.start() + 1]);
        out.push_str("[REDACTED:secret-output]");
        found.push(Found {
            value: inner.to_owned(),
            kind: "secret-output",
        });
        last = m.end() - 1;
    }
    if last == 0 {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake secret of `n` characters (xorshift; mixed case and digits), never a real one.
    fn fake(seed: u64, n: usize) -> String {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut x = seed | 1;
        loop {
            let s: String = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    ALNUM[(x % ALNUM.len() as u64) as usize] as char
                })
                .collect();
            if s.bytes().any(|b| b.is_ascii_digit())
                && s.bytes().any(|b| b.is_ascii_uppercase())
                && s.bytes().any(|b| b.is_ascii_lowercase())
            {
                return s;
            }
        }
    }

    #[test]
    fn user_and_password_in_one_word_of_any_client() {
        let pw = fake(71, 14);
        for (line, want) in [
            (
                format!("http -a admin:{pw} POST https://api.example.com/deploy"),
                "http -a admin:[REDACTED:password-flag] POST https://api.example.com/deploy",
            ),
            (
                format!("lftp -u deploy,{pw} sftp://files.example.com"),
                "lftp -u deploy,[REDACTED:password-flag] sftp://files.example.com",
            ),
            (
                format!("xh --auth='ci:{pw}' get api.example.com"),
                "xh --auth='ci:[REDACTED:password-flag]' get api.example.com",
            ),
        ] {
            assert_eq!(redact_credential_flags(&line, &mut Vec::new()), want);
        }
        for kept in [
            "docker run -u 1000:1000 alpine id",
            "docker run -u app:staff alpine id",
            "rsync -a backup:data/ ./data",
            "http -a admin:$API_PASSWORD POST https://api.example.com",
            "lftp -u deploy, sftp://files.example.com",
        ] {
            assert_eq!(redact_credential_flags(kept, &mut Vec::new()), kept);
        }
    }

    /// What the reader does to a string of a tool call's input.
    fn redact_input(r: &Redactor, text: &str) -> (String, Vec<Found>) {
        let (once, mut found) = r.redact_found(text);
        let out = redact_commands(r, &once, &mut found).into_owned();
        (out, found)
    }

    /// Commands whose secret only the table finds: `{S}` is the secret, and the redacted
    /// command must be the same text with its placeholder there, every other word kept.
    const COMMAND_CASES: &[(&str, &str)] = &[
        (
            "aws configure set aws_secret_access_key {S}",
            "aws-secret-key",
        ),
        (
            "aws configure set aws_session_token {S}",
            "aws-session-token",
        ),
        (
            "aws configure set profile.ci.aws_secret_access_key {S} --profile ci",
            "aws-secret-key",
        ),
        (
            "aws --region eu-west-1 configure set aws_secret_access_key '{S}'",
            "aws-secret-key",
        ),
        (
            "aws secretsmanager put-secret-value --secret-id db --secret-string {S}",
            "secret-flag",
        ),
        (
            "aws ssm put-parameter --name /db/pw --value {S} --type SecureString",
            "secret-flag",
        ),
        (
            "curl --oauth2-bearer {S} https://api.example.com",
            "secret-flag",
        ),
        (
            "curl --oauth2-bearer=\"{S}\" https://api.example.com",
            "secret-flag",
        ),
        ("curl -U proxy:{S} https://example.com", "secret-flag"),
        ("htpasswd -b users.db alice {S}", "password-flag"),
        ("htpasswd -cb users.db alice {S}", "password-flag"),
        ("htpasswd -nbB alice {S}", "password-flag"),
        ("htpasswd -b -C 10 users.db alice {S}", "password-flag"),
        ("git config --global github.token {S}", "secret-assignment"),
        (
            "git -C repo config user.password \"{S}\"",
            "secret-assignment",
        ),
        (
            "npm config set //registry.example.com/:_authToken {S}",
            "secret-assignment",
        ),
        (
            "pnpm config set //npm.pkg.github.com/:_authToken {S}",
            "secret-assignment",
        ),
        ("yarn config set npmAuthToken {S}", "secret-assignment"),
        (
            "kubectl create secret generic app --from-literal=api={S}",
            "secret-assignment",
        ),
        (
            "kubectl -n prod create secret generic app --from-literal token={S}",
            "secret-assignment",
        ),
        (
            "oc create secret generic app --from-literal=password={S}",
            "secret-assignment",
        ),
        (
            "openssl enc -aes-256-cbc -k {S} -in a -out b",
            "password-flag",
        ),
        ("openssl passwd -6 -salt abcd {S}", "password-flag"),
        (
            "vault kv put secret/app api={S} user=app",
            "secret-assignment",
        ),
        (
            "vault kv patch -mount=secret app token={S}",
            "secret-assignment",
        ),
        ("vault login {S}", "vault-token"),
        ("az login -u me@example.com -p {S}", "password-flag"),
        ("gh secret set API --body {S}", "secret-flag"),
        ("gh secret set API -b{S} --repo acme/app", "secret-flag"),
        (
            "ldapsearch -x -D cn=admin -w {S} -b dc=example",
            "password-flag",
        ),
        ("ldapwhoami -x -D cn=admin -w{S}", "password-flag"),
        (
            "ldappasswd -x -D cn=admin -W -s {S} uid=bob",
            "password-flag",
        ),
        ("sqlcmd -S db -U sa -P {S}", "password-flag"),
        ("bcp dbo.t out t.dat -S db -U sa -P{S} -c", "password-flag"),
        ("smbclient -L fs -U admin%{S}", "password-flag"),
        ("rabbitmqctl add_user app {S}", "password-flag"),
        (
            "rabbitmqctl -n rabbit@h change_password app {S}",
            "password-flag",
        ),
        (
            "keytool -genkeypair -alias k -keystore k.jks -storepass {S} -keypass {S}",
            "password-flag",
        ),
        (
            "jarsigner -keystore k.jks -storepass {S} app.jar k",
            "password-flag",
        ),
        ("zip -r -P {S} a.zip dir", "password-flag"),
        ("unzip -P {S} a.zip", "password-flag"),
        ("7za x -p{S} a.7z", "password-flag"),
        ("unrar x -p{S} a.rar", "password-flag"),
        ("cargo login {S}", "secret-flag"),
        ("cargo login --registry corp {S}", "secret-flag"),
        ("poetry config pypi-token.pypi {S}", "secret-assignment"),
        ("poetry config http-basic.corp ci {S}", "secret-assignment"),
        (
            "composer config -g github-oauth.github.com {S}",
            "secret-assignment",
        ),
        ("mosquitto_sub -h b -u u -P {S} -t x", "password-flag"),
        (
            "skopeo inspect --creds ci:{S} docker://r.example/x",
            "password-flag",
        ),
        ("podman pull --creds=ci:{S} r.example/x", "password-flag"),
        ("fly secrets set API={S}", "secret-assignment"),
        (
            "doppler secrets set STRIPE={S} -p shop",
            "secret-assignment",
        ),
        ("mysqladmin -u root password {S}", "password-flag"),
        (
            "dotnet nuget add source https://n.example/v3 -n corp -u ci -p {S}",
            "password-flag",
        ),
        ("twine upload -u ci -p {S} dist/*", "password-flag"),
        ("redis-cli -h cache AUTH {S}", "password-flag"),
        ("redis-cli -h cache auth default {S}", "password-flag"),
        (
            "rclone config create s3x s3 provider AWS secret_access_key {S}",
            "aws-secret-key",
        ),
        (
            "mc alias set local http://localhost:9000 minio {S}",
            "secret-flag",
        ),
        ("bw unlock {S}", "password-flag"),
        ("bw login me@example.com {S}", "password-flag"),
        ("doctl auth init -t {S}", "secret-flag"),
        (
            "echo {S} | docker login -u ci --password-stdin",
            "password-flag",
        ),
        (
            "echo -n \"{S}\" | podman login --password-stdin -u ci r.example",
            "password-flag",
        ),
        (
            "printf '%s\\n' {S} | helm registry login r.example -u ci --password-stdin",
            "password-flag",
        ),
        (
            "printf {S} | oras login r.example -u ci --password-stdin",
            "password-flag",
        ),
        (
            "docker login -u ci --password-stdin <<< {S}",
            "password-flag",
        ),
        ("echo {S} | gh auth login --with-token", "secret-flag"),
        ("echo 'bob:{S}' | chpasswd", "password-flag"),
        (
            "echo {S} | sudo -S systemctl restart nginx",
            "password-flag",
        ),
        ("echo '{S}' | passwd --stdin bob", "password-flag"),
        (
            "echo -n {S} | gcloud secrets create api --data-file=-",
            "secret-flag",
        ),
        (
            "psql -c \"CREATE ROLE app LOGIN PASSWORD '{S}'\"",
            "password-flag",
        ),
        (
            "mysql -e \"ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '{S}'\"",
            "password-flag",
        ),
        (
            "sudo -u postgres psql -c \"ALTER USER app WITH PASSWORD '{S}';\"",
            "password-flag",
        ),
        ("rabbitmqctl authenticate_user app {S}", "password-flag"),
        (
            "dotnet nuget update source corp -u ci -p {S}",
            "password-flag",
        ),
        (
            "rclone config update s3x secret_access_key {S}",
            "aws-secret-key",
        ),
        (
            "cd app && aws configure set aws_secret_access_key {S} && aws s3 ls",
            "aws-secret-key",
        ),
        (
            "env AWS_PROFILE=x aws configure set aws_session_token {S}",
            "aws-session-token",
        ),
        ("( htpasswd -nb admin {S} ) > .htpasswd", "password-flag"),
        // Secret stores that set a value given by position.
        (
            "heroku config:set STRIPE_KEY={S} -a shop",
            "secret-assignment",
        ),
        (
            "heroku config:set NODE_ENV=production SIGNING={S}",
            "secret-assignment",
        ),
        ("dokku config:set shop MAILER={S}", "secret-assignment"),
        ("eb setenv RDS_PW={S} -e prod", "secret-assignment"),
        ("railway variables set SENTRY_DSN={S}", "secret-assignment"),
        ("railway variables --set OPENAI={S}", "secret-assignment"),
        ("supabase secrets set RESEND={S}", "secret-assignment"),
        (
            "infisical secrets set WEBHOOK={S} --env prod",
            "secret-assignment",
        ),
        (
            "dotnet user-secrets set \"ConnectionStrings:Default\" \"{S}\" --project src/Api",
            "secret-assignment",
        ),
        (
            "dotnet user-secrets set Stripe:ApiKey {S}",
            "secret-assignment",
        ),
        (
            "netlify env:set FAUNA {S} --context production",
            "secret-assignment",
        ),
        ("npx convex env set CLERK {S}", "secret-assignment"),
        ("travis env set DEPLOY {S}", "secret-assignment"),
        ("glab variable set DEPLOY {S} --masked", "secret-assignment"),
        ("glab variable set DEPLOY -v {S}", "secret-assignment"),
        ("cf set-env shop SMTP {S}", "secret-assignment"),
        (
            "pulumi config set dbPassword {S} --secret",
            "secret-assignment",
        ),
        ("pulumi config set github:token {S}", "secret-assignment"),
        ("chamber write shop stripe {S}", "secret-assignment"),
        (
            "az keyvault secret set --vault-name kv -n db --value {S}",
            "secret-flag",
        ),
        (
            "security add-generic-password -a ann -s smtp -w {S}",
            "password-flag",
        ),
        (
            "security add-internet-password -a ann -s git.example.com -w {S}",
            "password-flag",
        ),
        ("conjur variable set -i prod/db -v {S}", "secret-flag"),
        ("mosquitto_passwd -b passwd ann {S}", "password-flag"),
        ("vault operator unseal {S}", "secret-flag"),
        ("php artisan env:decrypt --key={S}", "secret-flag"),
    ];

    #[test]
    fn commands_give_their_secrets_away_by_their_shape() {
        let r = Redactor::new();
        let mut failures = Vec::new();
        for (i, (template, kind)) in COMMAND_CASES.iter().enumerate() {
            let secret = fake(i as u64 * 7919 + 1, 24);
            let text = template.replace("{S}", &secret);
            let want = template.replace("{S}", &format!("[REDACTED:{kind}]"));
            let (out, found) = redact_input(&r, &text);
            if out != want {
                failures.push(format!("{text}\n  -> {out}\n  want {want}"));
                continue;
            }
            if !found.iter().any(|f| f.value == secret) {
                failures.push(format!("{text}: {secret} not reported in {found:?}"));
            }
            let (again, more) = redact_input(&r, &out);
            if again != out || !more.is_empty() {
                failures.push(format!("not idempotent: {out}\n  -> {again}"));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} failed:\n{}",
            failures.len(),
            COMMAND_CASES.len(),
            failures.join("\n")
        );
    }

    /// Commands of the table's programs that hold no secret: they must come out unchanged.
    const COMMAND_SURVIVORS: &[&str] = &[
        "aws configure set region eu-west-1",
        "aws configure set default.s3.max_concurrent_requests 20",
        "aws configure set aws_access_key_id test --profile localstack",
        "aws configure get aws_session_token",
        "aws secretsmanager list-secrets --max-results 10",
        "aws ssm put-parameter --name /app/mode --value debug --type String",
        "aws ssm put-parameter --name /db/pw --value \"$DB_PW\" --type SecureString",
        "curl --oauth2-bearer \"$(gh auth token)\" https://api.example.com",
        "curl -U proxyuser https://example.com",
        "htpasswd -c users.db alice",
        "htpasswd -D users.db alice",
        "htpasswd -v users.db alice",
        "htpasswd -b users.db alice",
        "git config --global user.name 'Ann Example'",
        "git config --global credential.helper 'cache --timeout=3600'",
        "git config --get github.token",
        "git config --global core.editor vim",
        "npm config set registry https://registry.example.com/",
        "npm config set //registry.example.com/:_authToken ${NPM_TOKEN}",
        "npm config get //registry.example.com/:_authToken",
        "yarn config set npmRegistryServer https://npm.example.com",
        "kubectl create secret generic app --from-file=./secrets/",
        "kubectl create secret generic app --from-env-file=.env",
        "kubectl create configmap app --from-literal=LOG_LEVEL=debug",
        "kubectl get secret app -n prod",
        "openssl req -x509 -newkey rsa:2048 -keyout k.pem -out c.pem -days 365 -nodes",
        "openssl enc -d -aes256 -in a.enc -kfile key.txt",
        "openssl s_client -connect example.com:443 -key client.key",
        "vault kv put secret/app @data.json",
        "vault kv put secret/app token=-",
        "vault kv get -format=json secret/app",
        "vault login -method=userpass username=ann",
        "vault login -method=github",
        "az login --use-device-code",
        "az login --identity",
        "gh secret set API < api.txt",
        "gh secret set API --body \"$API_TOKEN\"",
        "gh secret list",
        "ldapsearch -x -LLL -b dc=example -s sub uid=bob",
        "ldapsearch -x -D cn=admin -W -b dc=example",
        "sqlcmd -S db -E -Q 'select 1'",
        "smbclient -L fs -U admin",
        "rabbitmqctl list_users",
        "rabbitmqctl add_vhost staging",
        "keytool -list -keystore k.jks",
        "keytool -importkeystore -srckeystore a.p12 -storepass:env KS_PASS -destkeystore b.jks",
        "zip -r a.zip dir -x '*.log'",
        "unzip -o a.zip -d out",
        "7z a -mx9 a.7z dir",
        "7z x a.7z -p-",
        "unrar x -p- a.rar",
        "cargo login",
        "cargo build --release -p core",
        "poetry config virtualenvs.in-project true",
        "composer config --list",
        "mosquitto_pub -h b -t x -m 21",
        "skopeo inspect docker://r.example/x",
        "podman run --rm -it alpine sh",
        "fly secrets list",
        "fly secrets set API=\"$API\"",
        "mysqladmin -u root -p status",
        "dotnet build -p:Configuration=Release",
        "dotnet run -p src/App.csproj",
        "dotnet nuget list source",
        "twine upload dist/*",
        "twine check dist/*",
        "redis-cli -h cache ping",
        "rclone config create s3x s3 provider AWS env_auth true",
        "mc alias list",
        "bw sync",
        "doctl auth list",
        "docker login -u ci --password-stdin r.example < pw.txt",
        "cat pw.txt | docker login -u ci --password-stdin r.example",
        "echo \"$CR_PAT\" | docker login ghcr.io -u ci --password-stdin",
        "echo building | tee build.log",
        "echo done && docker login r.example",
        "sudo systemctl restart nginx",
        "echo y | sudo apt-get install -y jq",
        "psql -c \"ALTER TABLE users ADD COLUMN password_hash text NOT NULL DEFAULT ''\"",
        "psql -c \"SELECT 'password' AS word\"",
        "grep -rn \"PASSWORD '\" migrations/",
        "echo 'it''s fine' && git status",
        "git commit -m \"don't keep the token in config\"",
        "for f in *.zip; do unzip -l \"$f\"; done",
        "make test -j4",
        "ls -la ~/.config",
        "heroku config:set NODE_ENV=production API_URL=https://api.example.com",
        "heroku config:set STRIPE_KEY=$STRIPE_KEY",
        "dotnet user-secrets set Logging:LogLevel:Default Debug",
        "dotnet user-secrets list",
        "netlify env:set API_URL https://api.example.com",
        "pulumi config set aws:region eu-west-1",
        "pulumi config set replicas 3",
        "security find-generic-password -w -s smtp",
        "vault operator unseal",
        "php artisan env:encrypt",
        "railway variables --set PORT=8080",
        "railway variables set VAT_RATE=0.15 ALGORITHM=HS256 REFRESH_TOKEN_EXPIRE_DAYS=7",
        "fly secrets set LOG_LEVEL=debug",
    ];

    #[test]
    fn commands_without_secrets_are_kept() {
        let r = Redactor::new();
        let failures: Vec<String> = COMMAND_SURVIVORS
            .iter()
            .filter_map(|text| {
                let (out, found) = redact_input(&r, text);
                (out != *text || !found.is_empty()).then(|| format!("{text}\n  -> {out}"))
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn the_table_holds_every_form_of_the_issue() {
        // Each program of the table has a case above; a rule nobody tests is a rule nobody
        // knows works.
        for rule in RULES {
            let tested = COMMAND_CASES.iter().any(|(c, _)| {
                let words: Vec<&str> = c
                    .split(|ch: char| ch.is_whitespace() || "|;&(".contains(ch))
                    .collect();
                rule.programs.iter().any(|p| *p == "*" || words.contains(p))
                    && rule
                        .sub
                        .iter()
                        .all(|s| words.iter().any(|w| w.eq_ignore_ascii_case(s)))
            });
            assert!(tested, "no case for {:?} {:?}", rule.programs, rule.sub);
        }
    }

    #[test]
    fn words_are_split_the_way_the_shell_reads_them() {
        let line = "A=1 sudo -u bob env X=2 cmd 'a b' \"c \\\"d\\\"\" e\\ f $(g h) `i j` \
                    | tail -n1 >out.txt 2>&1 && other <<< 'here' ; x #comment\nnext <<EOF\n\
                    body line | not a command\nEOF\nlast";
        let commands = split(line);
        let words: Vec<Vec<&str>> = commands
            .iter()
            .map(|c| c.words.iter().map(|w| w.value.as_str()).collect())
            .collect();
        assert_eq!(
            words,
            [
                vec![
                    "A=1", "sudo", "-u", "bob", "env", "X=2", "cmd", "a b", "c \"d\"", "e f",
                    "$(g h)", "`i j`"
                ],
                vec!["tail", "-n1"],
                vec!["other"],
                vec!["x"],
                vec!["next"],
                vec!["last"],
            ]
        );
        assert!(commands[0].pipes_out && commands[1].pipes_in);
        assert!(commands[1].stdout_redirected && !commands[0].stdout_redirected);
        assert_eq!(
            commands[2].here_string.as_ref().map(|w| w.value.as_str()),
            Some("here")
        );
        let (p, _) = program_index(&commands[0].words);
        assert_eq!(p.map(|p| commands[0].words[p].value.as_str()), Some("cmd"));
        // Where each value byte stands in the text, through the quotes.
        let w = &commands[0].words[8];
        let (a, b) = w.span(2, 5);
        assert_eq!(&line[a..b], "\"d\\\"");
        // Never fails, whatever the text.
        for text in [
            "'unterminated",
            "\"open",
            "$(",
            "a | | b",
            "<<",
            "x >",
            "\\",
            "é'ü",
        ] {
            let _ = split(text);
        }
    }

    /// Command lines, and what their output holds.
    #[test]
    fn what_a_command_prints() {
        let secret = OutputKind {
            secret: true,
            ..OutputKind::default()
        };
        let netrc = OutputKind {
            netrc: true,
            ..OutputKind::default()
        };
        let pgpass = OutputKind {
            pgpass: true,
            ..OutputKind::default()
        };
        let none = OutputKind::default();
        let secret_file = OutputKind {
            secret_file: true,
            ..none
        };
        let cases: &[(&str, OutputKind)] = &[
            ("printenv DB_PASSWORD", secret),
            ("printenv HOME PATH", none),
            ("printenv", none),
            ("echo $API_TOKEN", secret),
            ("echo \"token: ${GITHUB_TOKEN}\"", secret),
            ("echo ${#API_TOKEN}", none),
            ("echo '$API_TOKEN'", none),
            ("echo $HOME $TOKEN_COUNT", none),
            ("printf '%s' \"$AWS_SECRET_ACCESS_KEY\"", secret),
            ("echo $DB_PASSWORD | wc -c", none),
            ("echo $DB_PASSWORD | base64", secret),
            ("echo $DB_PASSWORD > pw.txt", none),
            ("test -n \"$DB_PASSWORD\" && echo set", none),
            ("cat ~/.netrc", netrc),
            ("sed -n 1,3p /home/u/.netrc", netrc),
            ("cat ~/.pgpass", pgpass),
            ("grep prod ~/.pgpass", pgpass),
            ("grep -rn password src/", none),
            ("cat /run/secrets/db_password", secret),
            (
                "cat /var/run/secrets/kubernetes.io/serviceaccount/token",
                secret,
            ),
            ("cat api_token.txt", secret),
            ("cat src/token.rs README.md", none),
            ("cat .env", secret_file),
            ("cat .env.example", none),
            ("cat .env > /tmp/backup", none),
            ("pass show infra/db", secret),
            ("pass ls", none),
            ("gopass show -o web/site", secret),
            ("op read op://vault/item/password", secret),
            ("op item list", none),
            ("security find-generic-password -s svc -w", secret),
            ("security find-generic-password -s svc", none),
            ("secret-tool lookup service smtp", secret),
            ("vault kv get -field=password secret/app", secret),
            ("vault kv get secret/app", secret),
            ("vault status", none),
            ("aws secretsmanager get-secret-value --secret-id db", secret),
            ("aws ecr get-login-password --region eu-west-1", secret),
            (
                "aws ssm get-parameter --name /db/pw --with-decryption",
                secret,
            ),
            ("aws ssm get-parameter --name /app/mode", none),
            ("gcloud secrets versions access latest --secret=db", secret),
            ("gcloud auth print-access-token", secret),
            ("az keyvault secret show --vault-name v --name db", secret),
            (
                "kubectl get secret app -o jsonpath='{.data.password}' | base64 -d",
                secret,
            ),
            ("kubectl get secret app -o yaml", secret),
            ("kubectl get secrets", none),
            ("kubectl create token ci", secret),
            ("gh auth token", secret),
            ("gh auth status", none),
            ("doppler secrets get API --plain", secret),
            ("bw get password github", secret),
        ];
        let mut failures = Vec::new();
        for (line, want) in cases {
            let got = output_of_command(line);
            if got != *want {
                failures.push(format!("{line}: {got:?}, want {want:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // Agent tools that read a file.
        let read = |path: &str| output_of_call("Read", &serde_json::json!({"file_path": path}));
        assert_eq!(read("/home/u/.netrc"), netrc);
        assert_eq!(read("/home/u/.pgpass"), pgpass);
        assert_eq!(read("/home/u/app/src/main.rs"), none);
        assert_eq!(
            output_of_call(
                "shell",
                &serde_json::json!({"command": ["bash", "-lc", "printenv DB_PASSWORD"]})
            ),
            secret
        );
        for kind in [secret, netrc, pgpass, none] {
            assert_eq!(OutputKind::from_code(u64::from(kind.code())), kind);
        }
    }

    #[test]
    fn credential_files_lose_their_passwords_and_keep_the_rest() {
        let (a, b) = (fake(3, 16), fake(5, 20));
        let netrc = OutputKind {
            netrc: true,
            ..OutputKind::default()
        };
        let pgpass = OutputKind {
            pgpass: true,
            ..OutputKind::default()
        };
        let cases: Vec<(OutputKind, String, String)> = vec![
            (
                netrc,
                format!("machine a.example.com\n  login bob\n  password {a}\nmachine b login c password {b}\n"),
                "machine a.example.com\n  login bob\n  password [REDACTED:password-file]\nmachine b login c password [REDACTED:password-file]\n".into(),
            ),
            (
                netrc,
                format!("     1→default login anon password {a} account {b}"),
                "     1→default login anon password [REDACTED:password-file] account [REDACTED:password-file]".into(),
            ),
            (
                netrc,
                format!("echo \"machine x login y password {a}\" >> ~/.netrc"),
                "echo \"machine x login y password [REDACTED:password-file]\" >> ~/.netrc".into(),
            ),
            (
                pgpass,
                format!("# hostname:port:database:username:password\ndb.internal:5432:prod:app:{a}\n*:*:*:postgres:{b}\n"),
                "# hostname:port:database:username:password\ndb.internal:5432:prod:app:[REDACTED:password-file]\n*:*:*:postgres:[REDACTED:password-file]\n".into(),
            ),
            (
                pgpass,
                format!("     1→localhost:5432:*:app:{a}\n     2→[::1]:5432:*:app:{b}"),
                "     1→localhost:5432:*:app:[REDACTED:password-file]\n     2→[::1]:5432:*:app:[REDACTED:password-file]".into(),
            ),
            (
                pgpass,
                format!("echo 'db:5432:prod:app:{a}' >> ~/.pgpass && chmod 600 ~/.pgpass"),
                "echo 'db:5432:prod:app:[REDACTED:password-file]' >> ~/.pgpass && chmod 600 ~/.pgpass".into(),
            ),
        ];
        for (kind, text, want) in cases {
            let mut found = Vec::new();
            let out = redact_file_formats(&text, kind, &mut found);
            assert_eq!(out, want, "{text}");
            assert!(!found.is_empty());
            let mut more = Vec::new();
            assert_eq!(redact_file_formats(&out, kind, &mut more), out);
        }
        // Not in such a file, nothing changes: a grep's `file:line:col:` output survives.
        let mut found = Vec::new();
        let grep = "src/lib.rs:12:5:pub:fn main\nReset your password from the settings page.";
        assert_eq!(
            redact_file_formats(grep, OutputKind::default(), &mut found),
            grep
        );
        // Inside a `.netrc`, the word after `password` is the password, whatever it is.
        assert_eq!(
            redact_file_formats("password reset-me-9", netrc, &mut found),
            "password [REDACTED:password-file]",
        );
    }

    #[test]
    fn scripts_are_read_as_commands_and_code_is_not() {
        for path in [
            "deploy.sh",
            "/srv/app/scripts/Setup.BASH",
            "Dockerfile",
            "Dockerfile.prod",
            ".github/workflows/ci.yml",
            "Makefile",
            "migrations/0001_users.sql",
            "~/.zshrc",
        ] {
            assert!(is_script(path), "{path}");
        }
        for path in [
            "src/main.rs",
            "README.md",
            "app/config.ts",
            "notes.txt",
            ".env",
        ] {
            assert!(!is_script(path), "{path}");
        }
        // In a patch, only the sections of scripts are.
        let r = Redactor::new();
        let secret = fake(77, 20);
        let patch = format!(
            "*** Begin Patch\n*** Update File: src/cli.rs\n+    // htpasswd -b users admin {secret}\n\
             *** Add File: bin/setup.sh\n+htpasswd -b users admin {secret}\n*** End Patch\n"
        );
        let mut found = Vec::new();
        let out = redact_commands(&r, &patch, &mut found);
        assert_eq!(
            out,
            format!(
                "*** Begin Patch\n*** Update File: src/cli.rs\n+    // htpasswd -b users admin {secret}\n\
                 *** Add File: bin/setup.sh\n+htpasswd -b users admin [REDACTED:password-flag]\n*** End Patch\n"
            )
        );
    }

    #[test]
    fn a_secret_json_output_keeps_its_shape_and_plain_values() {
        let (a, b, c) = (fake(11, 20), fake(12, 40), fake(13, 60));
        let text = format!(
            "{{\n    \"Credentials\": {{\n        \"AccessKeyId\": \"ASIA{a}\",\n        \"SecretAccessKey\": \"{b}\",\n        \"SessionToken\": \"{c}\",\n        \"Expiration\": \"2026-01-10T12:00:00+00:00\"\n    }},\n    \"AssumedRoleUser\": {{\"Arn\": \"arn:aws:sts::1:assumed-role/ci/s\"}}\n}}\n"
        );
        let mut found = Vec::new();
        let out = redact_secret_output(&text, &mut found);
        assert_eq!(
            out,
            format!(
                "{{\n    \"Credentials\": {{\n        \"AccessKeyId\": \"ASIA{a}\",\n        \"SecretAccessKey\": \"[REDACTED:secret-output]\",\n        \"SessionToken\": \"[REDACTED:secret-output]\",\n        \"Expiration\": \"2026-01-10T12:00:00+00:00\"\n    }},\n    \"AssumedRoleUser\": {{\"Arn\": \"arn:aws:sts::1:assumed-role/ci/s\"}}\n}}\n"
            )
        );
        assert_eq!(found.len(), 2);
        // An array of values (`--query 'Credentials.[AccessKeyId,SecretAccessKey]'`): all go.
        let mut found = Vec::new();
        let array = format!("[\n    \"{a}\",\n    \"{b}\"\n]\n");
        let out = redact_secret_output(&array, &mut found);
        assert_eq!(
            out,
            "[\n    \"[REDACTED:secret-output]\",\n    \"[REDACTED:secret-output]\"\n]\n"
        );
    }

    #[test]
    fn a_secret_output_loses_every_line() {
        let mut found = Vec::new();
        let out = redact_secret_output("s3cr3tValue\n\n  other-line\n---\n", &mut found);
        assert_eq!(
            out,
            "[REDACTED:secret-output]\n\n  [REDACTED:secret-output]\n---\n"
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].value, "other-line");
    }
}
