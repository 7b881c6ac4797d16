//! What is fed to a password prompt: the text a command reads on its standard input where a
//! program asks for a secret there, and the answers an `expect` script sends to a password
//! prompt.
//!
//! - **Standard input** (kind `stdin-secret`). A here-document, a here-string (`<<<`) or what
//!   `echo`/`printf`/`cat <<EOF` pipe into a program that reads a secret from its standard
//!   input: `sudo -S` (the first line), `passwd`, `chpasswd` (the part after `user:`), `htpasswd
//!   -i`, `--password-stdin`, `gh auth login --with-token`, `vault login -`, `kinit`, `op
//!   signin`, `lpass login`, `keepassxc-cli`, `openssl … -passin stdin`, `gpg --passphrase-fd
//!   0`, `cryptsetup`, `pass insert`, `secret-tool store`, `docker secret create NAME -`,
//!   `wrangler secret put`, `vercel env add`, …; `git credential approve|store` (its `password=`
//!   lines) and `fly secrets import` (its values).
//! - **Prompt answers** (kind `prompt-answer`). The lines fed to a program that asks questions
//!   (a local script, `python setup.py`, `manage.py createsuperuser`, `ssh-keygen`, `keytool`,
//!   `mysql_secure_installation`, …): a line that looks like a password (one word of mixed
//!   classes, not a path, URL, number, yes/no or identifier), or a word given twice in a row
//!   (a password and its confirmation). Code fed to an interpreter (`python3 - <<EOF`, `bash
//!   <<EOF`, `psql <<EOF`, `cat > file <<EOF`) is not answers: the other rules read it.
//! - **Expect scripts** (kind `expect-send`). In Tcl `expect` (inline `expect -c`, a
//!   here-document, a written `.exp` file) and in Python's `pexpect` (`child.expect(…)`,
//!   `sendline(…)`), telnetlib (`read_until`, `write`) and the like: the literal argument of a
//!   `send`/`sendline`/`write` that answers a pattern mentioning a password, passphrase,
//!   secret, token, PIN or one-time code. Only the secret's characters go: `send
//!   "[REDACTED:expect-send]\r"`.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;

use super::redact::{Found, Keyword, value_is_secret};
use super::redact_shell::{Command, Word, basename, program_index, split};
use super::redact_stores::says_secret;

/// How a program reads what is fed to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feed {
    /// The first line is a secret (`sudo -S`, `--password-stdin`).
    FirstLine,
    /// Every line is (`passwd`, `pass insert -m`).
    AllLines,
    /// `user:password` lines (`chpasswd`).
    UserPass,
    /// `key=value` lines whose `password=` values are secrets (`git credential approve`).
    CredentialLines,
    /// `NAME=value` lines, every value a secret (`fly secrets import`).
    EnvLines,
    /// Answers to questions: password-shaped lines only.
    Answers,
    /// A client's command script (`ftp`, `lftp`, `redis-cli`): the password of its `user NAME
    /// PASS`, `pass PASS`, `AUTH [USER] PASS` and `open -u USER,PASS` lines.
    ClientScript,
}

/// Whether a command reads a secret from its standard input (what is piped into it is then
/// consumed, not printed).
pub(super) fn reads_secret_stdin(cmd: &Command) -> bool {
    feed(cmd).is_some_and(|f| f != Feed::Answers)
}

/// How `cmd` reads its standard input, if it is a program that reads a secret or answers there.
fn feed(cmd: &Command) -> Option<Feed> {
    let (Some(p), sudo_stdin) = program_index(&cmd.words) else {
        return None;
    };
    if sudo_stdin {
        return Some(Feed::FirstLine);
    }
    let program_word = cmd.words[p].value.as_str();
    let program = basename(program_word);
    let args: Vec<&str> = cmd.words[p + 1..]
        .iter()
        .map(|w| w.value.as_str())
        .collect();
    let has = |f: &str| {
        args.iter()
            .any(|a| *a == f || a.strip_prefix(f).is_some_and(|r| r.starts_with('=')))
    };
    let value = |f: &str| {
        args.iter().enumerate().find_map(|(k, a)| {
            if *a == f {
                args.get(k + 1).copied()
            } else {
                a.strip_prefix(f).and_then(|r| r.strip_prefix('='))
            }
        })
    };
    let positionals: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-') || *a == "-")
        .collect();
    let sub = |s: &[&str]| {
        s.len() <= positionals.len() && s.iter().zip(&positionals).all(|(a, b)| a == b)
    };
    let stdin_path = |v: &str| matches!(v, "-" | "/dev/stdin" | "fd:0" | "stdin" | "0");
    if has("--password-stdin")
        || has("--with-token")
        || has("--stdin-password")
        || has("--passphrase-stdin")
        || value("--passphrase-fd").is_some_and(stdin_path)
        || value("--passphrase-file").is_some_and(stdin_path)
        || value("--password-file").is_some_and(stdin_path)
        || value("--vault-password-file").is_some_and(stdin_path)
        || value("-passin").is_some_and(stdin_path)
        || value("-passout").is_some_and(stdin_path)
        || value("-pass").is_some_and(stdin_path)
        || value("--key-file").is_some_and(stdin_path) && program == "cryptsetup"
    {
        return Some(Feed::FirstLine);
    }
    // A secret-named option that reads standard input (`--secret-string file:///dev/stdin`,
    // `--token-file -`, `--from-file=key=/dev/stdin`, `password=-`).
    let reads_stdin = |v: &str| {
        let v = v.rsplit_once('=').map_or(v, |(_, v)| v);
        stdin_path(v) || v.ends_with("/dev/stdin") || v == "@/dev/stdin"
    };
    let secret_option_from_stdin = args.iter().enumerate().any(|(k, a)| {
        let (name, v) = match a.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v)),
            _ if a.starts_with("--") => (*a, args.get(k + 1).copied()),
            _ => return false,
        };
        v.is_some_and(reads_stdin)
            && (says_secret(name.trim_start_matches('-')) || name == "--from-file")
    });
    let pair_from_stdin = matches!(program, "vault" | "bao")
        && args.iter().any(|a| {
            a.split_once('=')
                .is_some_and(|(k, v)| !k.starts_with('-') && (v == "-" || v == "@/dev/stdin"))
        });
    if secret_option_from_stdin || pair_from_stdin {
        return Some(Feed::AllLines);
    }
    let feed = match program {
        "passwd" | "smbpasswd" | "pdbedit" | "mosquitto_passwd" | "vncpasswd" | "x11vnc" => {
            Feed::AllLines
        }
        "chpasswd" | "chgpasswd" | "newusers" => Feed::UserPass,
        // `htpasswd -c FILE USER` asks for the password twice (not with `-b`, `-n` alone).
        "htpasswd"
            if !args.iter().any(|a| {
                a.starts_with('-') && !a.starts_with("--") && a.contains(['b', 'D', 'v'])
            }) =>
        {
            Feed::AllLines
        }
        // Without `-p`, `-f`, `-e`, sshpass reads the password on stdin (`-d 0` too).
        "sshpass"
            if !has("-p")
                && !has("-f")
                && !has("-e")
                && !args.iter().any(|a| a.starts_with("-p")) =>
        {
            Feed::FirstLine
        }
        "ftp" | "lftp" | "sftp" | "ncftp" | "redis-cli" | "valkey-cli" | "keydb-cli" => {
            Feed::ClientScript
        }
        "telnet" => Feed::Answers,
        "gh" if sub(&["secret", "set"])
            && !has("--body")
            && !has("-b")
            && !has("--env-file")
            && !has("-f") =>
        {
            Feed::AllLines
        }
        "htpasswd"
            if args
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('i')) =>
        {
            Feed::FirstLine
        }
        "mkpasswd" if has("-s") || has("--stdin") => Feed::FirstLine,
        "openssl" if sub(&["passwd"]) && has("-stdin") => Feed::AllLines,
        "su"
        | "kinit"
        | "cryptsetup"
        | "keepassxc-cli"
        | "encfs"
        | "veracrypt"
        | "systemd-cryptenroll" => Feed::FirstLine,
        "vault" | "bao"
            if sub(&["login"])
                && positionals
                    .get(1)
                    .is_some_and(|p| *p == "-" || p.ends_with("=-")) =>
        {
            Feed::FirstLine
        }
        "vault" | "bao" if sub(&["operator", "unseal"]) && positionals.len() == 2 => {
            Feed::FirstLine
        }
        "op" if sub(&["signin"]) || sub(&["account", "add"]) => Feed::FirstLine,
        "lpass" if sub(&["login"]) => Feed::FirstLine,
        "bw" if sub(&["unlock"]) || sub(&["login"]) => Feed::FirstLine,
        "cargo" if sub(&["login"]) && positionals.len() == 1 => Feed::FirstLine,
        "pass" | "gopass" if sub(&["insert"]) || sub(&["add"]) || sub(&["set"]) => Feed::AllLines,
        "secret-tool" if sub(&["store"]) => Feed::AllLines,
        "keyring" if sub(&["set"]) => Feed::AllLines,
        "docker" | "podman"
            if sub(&["secret", "create"]) && positionals.get(3).is_some_and(|p| *p == "-") =>
        {
            Feed::AllLines
        }
        "wrangler" if sub(&["secret", "put"]) || sub(&["pages", "secret", "put"]) => Feed::AllLines,
        "vercel" if sub(&["env", "add"]) => Feed::AllLines,
        "firebase" if sub(&["functions:secrets:set"]) || sub(&["apphosting:secrets:set"]) => {
            Feed::AllLines
        }
        "circleci" if sub(&["context", "store-secret"]) => Feed::AllLines,
        "gcloud" if value("--data-file").is_some_and(stdin_path) => Feed::AllLines,
        "git"
            if sub(&["credential", "approve"])
                || sub(&["credential", "store"])
                || sub(&["credential", "reject"])
                || sub(&["credential", "fill"]) =>
        {
            Feed::CredentialLines
        }
        _ if (program.starts_with("git-credential-")
            || program.starts_with("docker-credential-"))
            && sub(&["store"]) =>
        {
            Feed::CredentialLines
        }
        // `git credential-store store`, `git credential-manager store`.
        "git"
            if positionals
                .first()
                .is_some_and(|p| p.starts_with("credential-"))
                && positionals
                    .get(1)
                    .is_some_and(|p| matches!(*p, "store" | "approve")) =>
        {
            Feed::CredentialLines
        }
        "fly" | "flyctl" if sub(&["secrets", "import"]) => Feed::EnvLines,
        "kubectl" | "oc" if value("--from-env-file").is_some_and(stdin_path) => Feed::EnvLines,
        "ansible" | "ansible-playbook" | "ansible-vault" | "ansible-pull"
            if [
                "-k",
                "-K",
                "--ask-pass",
                "--ask-become-pass",
                "--ask-vault-pass",
                "-J",
            ]
            .iter()
            .any(|f| has(f)) =>
        {
            Feed::AllLines
        }
        "ssh-keygen"
        | "keytool"
        | "mysql_secure_installation"
        | "adduser"
        | "createuser"
        | "certbot"
        | "npm"
        | "pnpm"
        | "yarn"
        | "docker"
        | "podman"
        | "mysql_config_editor" => {
            let login = sub(&["login"]) || sub(&["adduser"]) || sub(&["set"]);
            if matches!(
                program,
                "npm" | "pnpm" | "yarn" | "docker" | "podman" | "mysql_config_editor"
            ) && !login
            {
                return None;
            }
            Feed::Answers
        }
        _ if is_local_script(program_word) => Feed::Answers,
        "python" | "python3" | "ruby" | "node" | "perl" | "php" | "bash" | "sh" | "zsh"
        | "deno" | "bun" | "go" | "cargo" | "dotnet" | "java" => {
            // An interpreter given a script (or a program run) asks questions; one reading
            // its program from standard input is fed code.
            let script = positionals.first().copied().unwrap_or("");
            let runs = matches!(program, "go" | "cargo" | "dotnet") && script == "run"
                || (program == "java" && has("-jar"));
            if runs || (is_script_path(script) && !has("-c") && !has("-e")) {
                Feed::Answers
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(feed)
}

/// `./setup.sh`, `scripts/install`, `~/bin/init.py`: a script of the project, run directly.
fn is_local_script(program: &str) -> bool {
    (program.starts_with("./") || program.starts_with("../") || program.starts_with("~/"))
        || (program.contains('/')
            && !["/usr/", "/bin/", "/sbin/", "/opt/homebrew/", "/nix/"]
                .iter()
                .any(|p| program.starts_with(p))
            && is_script_path(program))
}

/// A file name with a script's extension.
fn is_script_path(word: &str) -> bool {
    let name = basename(word);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && matches!(
                ext,
                "sh" | "bash" | "py" | "rb" | "pl" | "js" | "mjs" | "ts" | "php" | "exp"
            )
    })
}

/// One line of what a command is fed: the text range of its value (`None` when the value
/// cannot be mapped back exactly, e.g. across escapes), and the value.
struct Line {
    range: (usize, usize),
    value: String,
}

/// The lines a command is fed: its here-string, its here-documents, and the literal text
/// `echo`/`printf`/`cat <<EOF` pipe into it.
fn fed_lines(text: &str, commands: &[Command], ci: usize) -> Vec<Line> {
    let cmd = &commands[ci];
    let mut lines = Vec::new();
    if let Some(w) = &cmd.here_string {
        word_lines(text, w, false, &mut lines);
    }
    for &(a, b) in &cmd.heredocs {
        body_lines(text, a, b, &mut lines);
    }
    if cmd.pipes_in
        && let Some(producer) = ci.checked_sub(1).map(|i| &commands[i])
        && producer.pipes_out
    {
        producer_lines(text, producer, &mut lines);
    }
    lines
}

/// The lines of a here-document body.
fn body_lines(text: &str, a: usize, b: usize, out: &mut Vec<Line>) {
    let mut at = a;
    for raw in text[a..b].split_inclusive('\n') {
        let body = raw.trim_end_matches(['\n', '\r']);
        let lead = body.len() - body.trim_start().len();
        let value = body.trim();
        out.push(Line {
            range: (at + lead, at + lead + value.len()),
            value: value.to_owned(),
        });
        at += raw.len();
    }
}

/// The lines of one word (split at real line breaks and, when `escapes` or in an ANSI-C
/// string `$'…'`, at `\n`).
fn word_lines(text: &str, w: &Word, escapes: bool, out: &mut Vec<Line>) {
    let v = &w.value;
    let ansi = text.get(w.start..).is_some_and(|t| t.starts_with("$'")) && v.starts_with('$');
    let escapes = escapes || ansi;
    let mut start = usize::from(ansi);
    let mut i = 0;
    let b = v.as_bytes();
    let push = |a: usize, e: usize, out: &mut Vec<Line>| {
        let piece = &v[a..e];
        let trimmed = piece.trim_end_matches('\r');
        if !trimmed.is_empty() {
            let (s, t) = w.span(a, a + trimmed.len());
            out.push(Line {
                range: (s, t),
                value: trimmed.to_owned(),
            });
        }
    };
    while i < b.len() {
        if b[i] == b'\n' {
            push(start, i, out);
            i += 1;
            start = i;
        } else if escapes && b[i] == b'\\' && matches!(b.get(i + 1), Some(b'n' | b'r')) {
            push(start, i, out);
            i += 2;
            if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'n') {
                i += 2;
            }
            start = i;
        } else {
            i += 1;
        }
    }
    push(start, b.len(), out);
}

/// What `echo`, `printf` and `cat <<EOF` write into a pipe.
fn producer_lines(text: &str, producer: &Command, out: &mut Vec<Line>) {
    let (Some(p), _) = program_index(&producer.words) else {
        return;
    };
    let args = &producer.words[p + 1..];
    match basename(&producer.words[p].value) {
        "echo" => {
            let mut escapes = false;
            for w in args {
                match w.value.as_str() {
                    "-e" | "-ne" | "-en" => escapes = true,
                    "-n" | "-E" => {}
                    _ => word_lines(text, w, escapes || w.value.contains("\\n"), out),
                }
            }
        }
        "printf" => {
            let args: Vec<&Word> = args.iter().filter(|w| w.value != "--").collect();
            match args.split_first() {
                Some((format, rest)) if format.value.contains('%') => {
                    for w in rest {
                        word_lines(text, w, true, out);
                    }
                }
                Some((format, _)) => word_lines(text, format, true, out),
                None => {}
            }
        }
        "yes" => {
            if let Some(w) = args.first() {
                word_lines(text, w, false, out);
            }
        }
        "cat" if args.is_empty() || args.iter().all(|w| w.value == "-") => {
            for &(a, b) in &producer.heredocs {
                body_lines(text, a, b, out);
            }
        }
        _ => {}
    }
}

/// Whether an answer line looks like a password: one word of 6+ characters, letters with
/// digits or symbols and mixed classes; not a path, URL, e-mail address, host name, version,
/// number or identifier. A 16+ character run of letters and digits (a token) counts too.
pub(super) fn looks_like_password(v: &str) -> bool {
    let n = v.chars().count();
    if !(6..=200).contains(&n) || v.chars().any(char::is_whitespace) || !v.is_ascii() {
        return false;
    }
    if v.starts_with(['/', '~', '.', '$', '-', '<', '{', '['])
        || v.contains("://")
        || v.contains("${")
        || v.contains("$(")
        || v.starts_with("[REDACTED")
    {
        return false;
    }
    let upper = v.bytes().any(|c| c.is_ascii_uppercase());
    let lower = v.bytes().any(|c| c.is_ascii_lowercase());
    let digit = v.bytes().any(|c| c.is_ascii_digit());
    let symbol = v
        .bytes()
        .any(|c| !c.is_ascii_alphanumeric() && !matches!(c, b'_' | b'-' | b'.'));
    let letters = upper || lower;
    // `me@example.com`, `db.example.com`, `1.2.3`, `2024-01-01`, `v1.2`.
    let dotted = v.contains('.')
        && v.split('.').all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'@' || c == b'_')
        });
    if dotted && !symbol || v.contains('@') && v.contains('.') && !v.ends_with('.') {
        return false;
    }
    if !letters {
        return false;
    }
    // `user_1`, `my-app`, `MyProject`: identifiers; `Hunter2`, `hunter2!`, `s3cr3T`: not.
    let random_run = n >= 16
        && digit
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    random_run || (symbol && (digit || upper)) || (upper && lower && digit) || (symbol && n >= 8)
}

/// A plausible password given twice in a row (a password and its confirmation): one word of
/// 4+ characters, not yes/no, not a number.
fn plausible_repeated(v: &str) -> bool {
    v.len() >= 4
        && !v.chars().any(char::is_whitespace)
        && !v.bytes().all(|c| c.is_ascii_digit())
        && !matches!(
            v.to_ascii_lowercase().as_str(),
            "yes" | "no" | "y" | "n" | "true" | "false" | "skip" | "none" | "default"
        )
        && !v.starts_with(['$', '/', '~'])
        && !v.contains("://")
        && !v.starts_with("[REDACTED")
}

/// The password in one line of a client's script: `user NAME PASS`, `pass PASS`, `AUTH
/// [USER] PASS`, `open -u USER,PASS HOST` (its range in the text, and the value).
fn client_script_password(l: &Line) -> Option<((usize, usize), String)> {
    if l.range.1 - l.range.0 != l.value.len() {
        return None; // escapes between the text and the value: no exact place
    }
    let words: Vec<(usize, &str)> = l
        .value
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - l.value.as_ptr() as usize, w))
        .collect();
    let first = words.first()?.1.to_ascii_lowercase();
    let (at, v) = match first.as_str() {
        "user" if words.len() >= 3 => words[2],
        "pass" | "password" if words.len() == 2 => words[1],
        "auth" if words.len() >= 2 => *words.last()?,
        "open" | "lftp" => {
            let k = words.iter().position(|(_, w)| *w == "-u")?;
            let (at, cred) = words.get(k + 1)?;
            let (user, pass) = cred.split_once(',')?;
            (at + user.len() + 1, pass)
        }
        _ => return None,
    };
    Some(((l.range.0 + at, l.range.0 + at + v.len()), v.to_owned()))
}

/// Which lines of `lines` are secrets for a feed, and the range of each secret.
fn secret_lines(feed: Feed, lines: &[Line]) -> Vec<((usize, usize), String, &'static str)> {
    let mut out = Vec::new();
    let password = |v: &str| {
        !v.contains("[REDACTED:") && !v.starts_with('$') && value_is_secret(Keyword::Password, v)
    };
    let content: Vec<&Line> = lines.iter().filter(|l| !l.value.is_empty()).collect();
    match feed {
        Feed::FirstLine => {
            if let Some(l) = content.first()
                && password(&l.value)
            {
                out.push((l.range, l.value.clone(), "stdin-secret"));
            }
        }
        Feed::AllLines => {
            for l in &content {
                if password(&l.value) {
                    out.push((l.range, l.value.clone(), "stdin-secret"));
                }
            }
        }
        Feed::UserPass | Feed::CredentialLines | Feed::EnvLines => {
            for l in &content {
                let sep = if feed == Feed::UserPass { ':' } else { '=' };
                let Some((key, v)) = l.value.split_once(sep) else {
                    continue;
                };
                let wanted = match feed {
                    Feed::CredentialLines => {
                        matches!(key, "password" | "oauth_refresh_token" | "credential")
                    }
                    Feed::EnvLines => key.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'),
                    _ => true,
                };
                let v = v.trim_matches(['"', '\'']);
                if wanted && password(v) && l.range.1 - l.range.0 == l.value.len() {
                    let at = l.value.len() - l.value[key.len() + 1..].len()
                        + l.value[key.len() + 1..].find(v).unwrap_or(0);
                    out.push((
                        (l.range.0 + at, l.range.0 + at + v.len()),
                        v.to_owned(),
                        "stdin-secret",
                    ));
                }
            }
        }
        Feed::ClientScript => {
            for l in &content {
                if let Some((range, v)) = client_script_password(l)
                    && password(&v)
                {
                    out.push((range, v, "stdin-secret"));
                }
            }
        }
        Feed::Answers => {
            for (k, l) in content.iter().enumerate() {
                let twice = content.get(k + 1).is_some_and(|n| n.value == l.value)
                    || k.checked_sub(1)
                        .is_some_and(|p| content[p].value == l.value);
                if (looks_like_password(&l.value) || (twice && plausible_repeated(&l.value)))
                    && !l.value.contains("[REDACTED:")
                {
                    out.push((l.range, l.value.clone(), "prompt-answer"));
                }
            }
        }
    }
    out
}

/// The literals the prompt rules start from: a script's waits (`expect`, `read_until`) and
/// answers (`send`, `.write`), a child's `input=`, and — in a command line — a heredoc or
/// here-string (`<<`) and the programs that pipe an answer (`echo …|`, `printf`, `cat`, `yes`).
/// Literal sets searched together (an automaton: the regex engine ran its own over every byte).
// A constant set of literals: `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static PROMPT_MARKS: LazyLock<[AhoCorasick; 2]> = LazyLock::new(|| {
    const SCRIPTS: &[&str] = &[
        "stdin.write(",
        "communicate(",
        "input=",
        "xpect",
        "read_until",
        "send",
        ".write",
    ];
    const FEEDS: &[&str] = &["<<", "echo", "printf", "cat", "yes"];
    let build = |literals: Vec<&str>| {
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(literals)
            .expect("prompt marks build")
    };
    [
        build(SCRIPTS.to_vec()),
        build(SCRIPTS.iter().chain(FEEDS).copied().collect()),
    ]
});

/// Redacts what commands in `text` feed to a password prompt on their standard input
/// (`commands`: `text` is a command line or a script), and what `expect`-like scripts send to
/// one (any text). Text without `<<`, a pipe from `echo`/`printf`/`cat`/`yes`, an `expect`-like
/// script or a child's `input=` costs one literal search.
pub(super) fn redact_prompts<'a>(
    text: &'a str,
    commands: bool,
    found: &mut Vec<Found>,
) -> Cow<'a, str> {
    // One pass over the text says which scanners have anything to look at.
    let (mut feeds, mut waits, mut sends, mut inputs) = (false, false, false, false);
    // Only a command line feeds a prompt: other text (an output, a file's content) is searched
    // for scripts alone.
    let marks = &PROMPT_MARKS[usize::from(commands)];
    let b = text.as_bytes();
    let word_byte = |i: usize| {
        b.get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    for m in marks.find_iter(text) {
        match &text[m.start()..m.end()] {
            "stdin.write(" | "communicate(" | "input=" => inputs = true,
            "xpect" | "read_until" => waits = true,
            "send" | ".write" => sends = true,
            "<<" => feeds = true,
            // `echo …|`, `printf …|`, `cat …|`, `yes …|`: the program as a word, a pipe after it
            // on its line.
            _ => {
                let line_end = text[m.end()..]
                    .find('\n')
                    .map_or(text.len(), |n| m.end() + n);
                feeds |= !word_byte(m.start().wrapping_sub(1))
                    && !word_byte(m.end())
                    && text[m.end()..line_end].contains('|');
            }
        }
        if feeds && waits && sends && inputs {
            break;
        }
    }
    let scripts = waits && sends;
    let mut edits: Vec<(usize, usize, String, &'static str)> = Vec::new();
    if commands && feeds {
        stdin_edits(text, &mut edits);
    }
    if scripts {
        expect_edits(text, &mut edits);
    }
    if inputs {
        program_input_edits(text, &mut edits);
    }
    apply(text, edits, found)
}

fn stdin_edits(text: &str, edits: &mut Vec<(usize, usize, String, &'static str)>) {
    let commands = split(text);
    for ci in 0..commands.len() {
        let cmd = &commands[ci];
        let piped = cmd.pipes_in && ci > 0 && commands[ci - 1].pipes_out;
        if cmd.here_string.is_none() && cmd.heredocs.is_empty() && !piped {
            continue;
        }
        let Some(feed) = feed(cmd) else {
            continue;
        };
        let lines = fed_lines(text, &commands, ci);
        for ((a, b), value, kind) in secret_lines(feed, &lines) {
            if a < b && text.get(a..b).is_some() {
                edits.push((a, b, value, kind));
            }
        }
    }
}

/// Where a script waits for output and where it answers. Tcl: `expect "Password:"` then
/// `send "…\r"`; Python's pexpect (and the like): `child.expect('Password')` then
/// `child.sendline('…')`; telnetlib: `tn.read_until(b"Password: ")` then `tn.write(b"…\n")`.
/// Bare `expect(` (a test assertion) is not a wait; a method answer needs its parenthesis.
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static EXPECT_MARKS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?m)(?P<wait>(?:^|[\s;{\[])(?:exp_)?expect(?:_before|_after)?[ \t]+|\.(?:expect|expect_exact|expect_list)\s*\()"#,
        r#"|(?P<until>\.(?:read_until|readuntil|wait_for|waitFor)\s*\()"#,
        r#"|(?P<send>(?:^|[\s;{\[])(?:exp_)?send(?:[ \t]+-(?:-|s|h|i[ \t]+\S+|raw))*[ \t]+)"#,
        r#"|(?P<sendline>\.(?:sendline|send|send_slow)\s*\(\s*)"#,
        r#"|(?P<write>\.write\s*\(\s*)"#,
    ))
    .expect("expect marks compile")
});

/// How far after its wait a send may be and still answer it.
const ANSWER_WITHIN: usize = 400;

/// A prompt that asks for a secret.
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static SECRET_PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)assw(?:or)?d|assphrase|ass phrase|passcode|(?-u:\bpin\b)|secret|token|api[ _-]?key|(?-u:\botp\b)|one[- ]time|verification code|(?-u:\b2fa\b)|(?-u:\bmfa\b)|retype|re-?enter|repeat|unlock",
    )
    .expect("secret prompt compiles")
});

/// The literal argument at `at`: a quoted string (Tcl `"…"`/`{…}`, Python `'…'`/`"…"` with an
/// optional `b`/`r`/`u` prefix) or a bare Tcl word; its inner range, without a trailing `\r`
/// or `\n`.
fn literal_at(text: &str, at: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut i = at;
    while i < b.len() && matches!(b[i], b'b' | b'r' | b'u' | b'B' | b'R' | b'U') && i < at + 2 {
        i += 1;
    }
    if !matches!(b.get(i), Some(b'"' | b'\'' | b'{')) {
        i = at;
    }
    // `\"…\"`: a string inside a double-quoted shell word (`python3 -c "…"`).
    if b.get(i) == Some(&b'\\') && matches!(b.get(i + 1), Some(b'"' | b'\'')) {
        let q = &text[i..i + 2];
        let close = text[i + 2..].find(q)? + i + 2;
        if text[i + 2..close].contains('\n') {
            return None;
        }
        return Some(trim_line_end(text, i + 2, close));
    }
    let (start, end) = match b.get(i)? {
        b'"' | b'\'' => {
            let q = b[i];
            let mut k = i + 1;
            while k < b.len() && b[k] != q && b[k] != b'\n' {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            if k >= b.len() || b[k] != q {
                return None;
            }
            (i + 1, k)
        }
        b'{' => {
            let close = text[i + 1..].find(['}', '\n'])? + i + 1;
            if b[close] != b'}' {
                return None;
            }
            (i + 1, close)
        }
        c if c.is_ascii_alphanumeric() || matches!(c, b'!' | b'#' | b'%' | b'^' | b'*' | b'@') => {
            // A bare Tcl word; Python identifiers (`pw`, `password`) are variables.
            let end = text[i..]
                .find(|c: char| c.is_whitespace() || matches!(c, ';' | ']' | '}' | ')' | ','))
                .map_or(text.len(), |n| i + n);
            if text[..at].trim_end().ends_with('(') {
                return None;
            }
            (i, end)
        }
        _ => return None,
    };
    Some(trim_line_end(text, start, end))
}

/// `start..end` without the `\r`/`\n` (escapes or characters) a send ends with.
fn trim_line_end(text: &str, start: usize, end: usize) -> (usize, usize) {
    let mut e = end;
    loop {
        let inner = &text[start..e];
        if let Some(rest) = inner
            .strip_suffix("\\r")
            .or_else(|| inner.strip_suffix("\\n"))
            .or_else(|| inner.strip_suffix('\r'))
            .or_else(|| inner.strip_suffix('\n'))
        {
            e = start + rest.len();
        } else {
            break;
        }
    }
    (start, e)
}

fn expect_edits(text: &str, edits: &mut Vec<(usize, usize, String, &'static str)>) {
    // The last mark (a wait or an answer), and the kind of the last wait.
    let mut last_mark: Option<usize> = None;
    let mut last_wait: Option<(usize, &str)> = None;
    let mut answered: Vec<String> = Vec::new();
    for c in EXPECT_MARKS.captures_iter(text) {
        let Some(m) = c.get(0) else {
            continue;
        };
        let wait = if c.name("wait").is_some() {
            Some("expect")
        } else if c.name("until").is_some() {
            Some("until")
        } else {
            None
        };
        if let Some(w) = wait {
            last_wait = Some((m.start(), w));
            last_mark = Some(m.start());
            continue;
        }
        let region_start = last_mark.unwrap_or(m.start());
        last_mark = Some(m.end());
        let Some((wait_at, wait_kind)) = last_wait else {
            continue;
        };
        // A Tcl `send`, a pexpect `sendline(` after an `expect`; a `write(` after a
        // `read_until(`.
        let fits = if c.name("write").is_some() {
            wait_kind == "until"
        } else {
            true
        };
        if !fits || m.start().saturating_sub(wait_at) > ANSWER_WITHIN {
            continue;
        }
        let method = c.name("sendline").is_some() || c.name("write").is_some();
        // `send "$pw\r"`, `child.sendline(password)`: the literal the variable was set to.
        if let Some(var) = variable_at(text, m.end(), method) {
            let prompt = &text[region_start..m.start()];
            if SECRET_PROMPT.is_match(prompt)
                && let Some((a, b)) = assignment_of(text, var, m.start(), method)
            {
                let value = &text[a..b];
                if !value.contains("[REDACTED:")
                    && !value.starts_with(['$', '['])
                    && value_is_secret(Keyword::Password, value)
                {
                    answered.push(value.to_owned());
                    edits.push((a, b, value.to_owned(), "expect-send"));
                }
            }
            continue;
        }
        let Some((a, b)) = literal_at(text, m.end()) else {
            continue;
        };
        // A method's bare argument is a variable, not a literal.
        if method
            && !matches!(
                text.as_bytes().get(m.end()),
                Some(b'"' | b'\'' | b'b' | b'r' | b'u' | b'B' | b'R' | b'U' | b'\\')
            )
        {
            continue;
        }
        let value = &text[a..b];
        let prompt = &text[region_start..m.start()];
        let asked = SECRET_PROMPT.is_match(prompt) || answered.iter().any(|v| v == value);
        if !asked
            || value.is_empty()
            || value.contains("[REDACTED:")
            || value.starts_with('$')
            || value.starts_with('[')
            || !value_is_secret(Keyword::Password, value)
        {
            continue;
        }
        answered.push(value.to_owned());
        edits.push((a, b, value.to_owned(), "expect-send"));
    }
}

/// The variable a send sends: Tcl `$pw`, `"$pw\r"`, `"${pw}\r"`; a method's bare identifier
/// (`sendline(password)`).
fn variable_at(text: &str, at: usize, method: bool) -> Option<&str> {
    let rest = &text[at..];
    let ident = |s: &str| -> Option<usize> {
        let n = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        (n > 0 && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')).then_some(n)
    };
    if method {
        let n = ident(rest)?;
        return rest[n..].trim_start().starts_with(')').then(|| &rest[..n]);
    }
    let r = rest.strip_prefix('"').unwrap_or(rest);
    let r = r.strip_prefix('$')?;
    let r = r.strip_prefix('{').unwrap_or(r);
    let n = ident(r)?;
    Some(&r[..n])
}

/// The literal last assigned to `var` before `before`: Tcl `set var "…"`, Python/JS `var =
/// "…"`.
fn assignment_of(text: &str, var: &str, before: usize, method: bool) -> Option<(usize, usize)> {
    let head = &text[..before];
    let mut found = None;
    let mut from = 0;
    while let Some(at) = head[from..].find(var).map(|n| from + n) {
        from = at + var.len();
        let word_start = head[..at]
            .bytes()
            .next_back()
            .is_none_or(|b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'.'));
        let word_end = head[from..]
            .bytes()
            .next()
            .is_some_and(|b| !(b.is_ascii_alphanumeric() || b == b'_'));
        if !word_start || !word_end {
            continue;
        }
        let value_at = if method {
            let after = head[from..].trim_start();
            let Some(v) = after.strip_prefix('=').filter(|v| !v.starts_with('=')) else {
                continue;
            };
            head.len() - v.trim_start().len()
        } else {
            let lead = head[..at].trim_end();
            let Some(before_set) = lead.strip_suffix("set") else {
                continue;
            };
            if before_set.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let after = &head[from..];
            head.len() - after.trim_start().len()
        };
        if method && !matches!(text.as_bytes().get(value_at), Some(b'"' | b'\'')) {
            continue;
        }
        if let Some(lit) = literal_at(text, value_at) {
            found = Some(lit);
        }
    }
    found
}

/// Where a program's code feeds a child process's standard input (`subprocess.run(…,
/// input="…")`, `p.communicate(b"…")`, `p.stdin.write("…")`).
// A constant pattern (the unit tests compile it): `expect` cannot fail on any input.
#[allow(clippy::expect_used)]
static INPUT_MARKS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:(?-u:\b)input\s*=\s*|\.communicate\(\s*(?:input\s*=\s*)?|(?-u:\b)stdin\.write\(\s*)",
    )
    .expect("input marks compile")
});

/// What a child process that reads a secret on stdin says on its command line.
const STDIN_READERS: &[&str] = &[
    "\"-S\"",
    "'-S'",
    "sudo -S",
    "passwd",
    "--password-stdin",
    "--with-token",
    "kinit",
    "chpasswd",
    "--passphrase-fd",
    "-passin",
    "--stdin",
];

/// The literal a program feeds to a child that reads a secret on stdin (`subprocess.run(["sudo",
/// "-S", …], input="…")`): the child's command must be in the 300 bytes before.
fn program_input_edits(text: &str, edits: &mut Vec<(usize, usize, String, &'static str)>) {
    for m in INPUT_MARKS.find_iter(text) {
        let mut from = m.start().saturating_sub(300);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let before = &text[from..m.start()];
        if !STDIN_READERS.iter().any(|r| before.contains(r)) {
            continue;
        }
        let Some((a, b)) = literal_at(text, m.end()) else {
            continue;
        };
        if !matches!(
            text.as_bytes().get(m.end()),
            Some(b'"' | b'\'' | b'b' | b'B' | b'\\')
        ) {
            continue;
        }
        let value = &text[a..b];
        if value.contains("[REDACTED:")
            || value.starts_with(['$', '{'])
            || !value_is_secret(Keyword::Password, value)
        {
            continue;
        }
        edits.push((a, b, value.to_owned(), "stdin-secret"));
    }
}

/// Applies the edits (in text order, overlaps dropped) and reports the values.
fn apply<'a>(
    text: &'a str,
    mut edits: Vec<(usize, usize, String, &'static str)>,
    found: &mut Vec<Found>,
) -> Cow<'a, str> {
    if edits.is_empty() {
        return Cow::Borrowed(text);
    }
    edits.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1)));
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (a, b, value, kind) in edits {
        if a < last || !text.is_char_boundary(a) || !text.is_char_boundary(b) {
            continue;
        }
        out.push_str(&text[last..a]);
        out.push_str("[REDACTED:");
        out.push_str(kind);
        out.push(']');
        found.push(Found { value, kind });
        last = b;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::redact::Redactor;
    use crate::ingest::redact_shell::redact_commands;

    /// A fake secret of `n` characters (xorshift; mixed case and digits), never a real one.
    fn fake(seed: u64, n: usize) -> String {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
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

    /// What the sanitizer does to a command string: the pattern rules, the command table, then
    /// this module.
    fn redact_command(r: &Redactor, text: &str) -> (String, Vec<Found>) {
        let (once, mut found) = r.redact_found(text);
        let twice = redact_commands(r, &once, &mut found).into_owned();
        let out = redact_prompts(&twice, true, &mut found).into_owned();
        (out, found)
    }

    /// Commands and scripts that feed a secret to a prompt: `{S}` is the secret (every
    /// occurrence), and the redacted text must be the same text with the placeholder there.
    const PROMPT_CASES: &[(&str, &str)] = &[
        // Here-strings, here-documents and pipes into programs that read a secret on stdin.
        ("sudo -S apt-get install -y nginx <<< '{S}'", "stdin-secret"),
        (
            "sudo -S -u deploy systemctl restart app <<EOF\n{S}\nEOF",
            "stdin-secret",
        ),
        ("cat <<EOF | sudo -S whoami\n{S}\nEOF", "stdin-secret"),
        ("passwd <<EOF\n{S}\n{S}\nEOF", "stdin-secret"),
        ("sudo passwd deploy <<< $'{S}\\n{S}'", "stdin-secret"),
        ("printf '{S}\\n{S}\\n' | passwd deploy", "stdin-secret"),
        ("echo -e \"{S}\\n{S}\" | sudo passwd ann", "stdin-secret"),
        ("chpasswd <<EOF\nann:{S}\nEOF", "stdin-secret"),
        ("htpasswd -ci .htpasswd admin <<< \"{S}\"", "stdin-secret"),
        (
            "docker login ghcr.io -u ci --password-stdin <<EOF\n{S}\nEOF",
            "stdin-secret",
        ),
        ("gh auth login --with-token <<< {S}", "secret-flag"),
        ("vault login - <<< {S}", "stdin-secret"),
        ("kinit admin@CORP.EXAMPLE <<< '{S}'", "stdin-secret"),
        ("echo '{S}' | kinit admin@CORP.EXAMPLE", "stdin-secret"),
        ("echo {S} | op signin --raw", "stdin-secret"),
        (
            "echo {S} | LPASS_DISABLE_PINENTRY=1 lpass login --trust ann@example.com",
            "stdin-secret",
        ),
        (
            "echo {S} | keepassxc-cli show -s vault.kdbx github",
            "stdin-secret",
        ),
        (
            "openssl rsa -in key.pem -passin stdin -out plain.pem <<< {S}",
            "stdin-secret",
        ),
        (
            "gpg --batch --passphrase-fd 0 -d backup.gpg <<< {S} > backup.tar",
            "stdin-secret",
        ),
        (
            "echo -n {S} | cryptsetup luksOpen /dev/sdb1 vault -",
            "stdin-secret",
        ),
        ("pass insert -m infra/db <<EOF\n{S}\nEOF", "stdin-secret"),
        (
            "printf '%s' {S} | docker secret create db_password -",
            "stdin-secret",
        ),
        (
            "echo {S} | npx wrangler secret put API_TOKEN",
            "stdin-secret",
        ),
        (
            "echo -n {S} | vercel env add STRIPE_KEY production",
            "stdin-secret",
        ),
        (
            "secret-tool store --label=smtp service smtp user ann <<< {S}",
            "stdin-secret",
        ),
        (
            "git credential approve <<EOF\nprotocol=https\nhost=git.example.com\nusername=ci\npassword={S}\nEOF",
            "secret-assignment",
        ),
        (
            "printf 'protocol=https\\nhost=github.com\\nusername=bot\\npassword={S}\\n' | git credential approve",
            "stdin-secret",
        ),
        (
            "fly secrets import <<EOF\nDATABASE_DSN={S}\nEOF",
            "stdin-secret",
        ),
        ("ansible-playbook site.yml -K <<< {S}", "stdin-secret"),
        ("yes {S} | sudo -S true", "stdin-secret"),
        (
            "htpasswd -c /etc/nginx/.htpasswd admin <<EOF\n{S}\n{S}\nEOF",
            "stdin-secret",
        ),
        ("sshpass ssh deploy@web1 uptime <<< {S}", "stdin-secret"),
        (
            "ftp -n files.example.com <<EOF\nuser ann {S}\nbinary\nput build.tar\nbye\nEOF",
            "stdin-secret",
        ),
        (
            "lftp <<EOF\nopen -u ann,{S} sftp://files.example.com\nmirror -R dist /www\nEOF",
            "stdin-secret",
        ),
        (
            "redis-cli -h cache <<EOF\nAUTH {S}\nFLUSHDB\nEOF",
            "stdin-secret",
        ),
        (
            "gh secret set STRIPE_KEY --repo acme/shop <<< {S}",
            "stdin-secret",
        ),
        (
            "echo -n {S} | kubectl create secret generic api --from-file=token=/dev/stdin",
            "stdin-secret",
        ),
        (
            "aws secretsmanager put-secret-value --secret-id db --secret-string file:///dev/stdin <<< {S}",
            "stdin-secret",
        ),
        ("vault kv put secret/app api_key=- <<< {S}", "stdin-secret"),
        (
            "git credential-store --file ~/.git-credentials store <<EOF\nprotocol=https\nhost=git.example.com\nusername=ci\npassword={S}\nEOF",
            "secret-assignment",
        ),
        (
            "telnet switch1 <<EOF\nadmin\n{S}\nshow run\nEOF",
            "prompt-answer",
        ),
        (
            "python3 -c \"import subprocess; subprocess.run(['sudo', '-S', 'apt-get', 'update'], input='{S}\\n', text=True)\"",
            "stdin-secret",
        ),
        (
            "p = subprocess.Popen(['sudo', '-S', 'reboot'], stdin=subprocess.PIPE)\np.communicate(b'{S}\\n')",
            "stdin-secret",
        ),
        // Answers to a script's prompts: the password-shaped lines.
        (
            "./setup.sh <<EOF\nadmin\nadmin@example.com\n{S}\n{S}\ny\nEOF",
            "prompt-answer",
        ),
        ("printf 'ann\\n{S}\\n' | ./bin/bootstrap", "prompt-answer"),
        (
            "python manage.py createsuperuser <<EOF\nadmin\nadmin@example.com\n{S}\n{S}\nEOF",
            "prompt-answer",
        ),
        ("bash install.sh <<< $'y\\n{S}'", "prompt-answer"),
        (
            "ssh-keygen -t ed25519 -f deploy_key <<EOF\n{S}\n{S}\nEOF",
            "prompt-answer",
        ),
        // Expect scripts.
        (
            "expect -c 'spawn ssh admin@db; expect \"assword:\"; send \"{S}\\r\"; interact'",
            "expect-send",
        ),
        (
            "expect <<'EOF'\nspawn sudo -k true\nexpect \"\\[sudo\\] password for ann:\"\nsend -- \"{S}\\r\"\nexpect eof\nEOF",
            "expect-send",
        ),
        (
            "cat > login.exp <<'EOF'\n#!/usr/bin/expect -f\nspawn ftp files.example.com\nexpect \"Name*:\"\nsend \"ann\\r\"\nexpect \"Password:\"\nsend \"{S}\\r\"\nexpect \"ftp>\"\nsend \"bye\\r\"\nEOF",
            "expect-send",
        ),
        (
            "expect -c 'spawn ssh-add key; expect { \"yes/no\" { send \"yes\\r\"; exp_continue } \"passphrase\" { send \"{S}\\r\" } }'",
            "expect-send",
        ),
        (
            "python3 - <<'EOF'\nimport pexpect\nchild = pexpect.spawn('psql -h db -U app')\nchild.expect('Password for user app:')\nchild.sendline('{S}')\nchild.interact()\nEOF",
            "expect-send",
        ),
        (
            "python3 -c \"import pexpect; c = pexpect.spawn('vault login -method=userpass username=ann'); c.expect('Password'); c.sendline(\\\"{S}\\\"); print(c.read())\"",
            "expect-send",
        ),
        (
            "expect <<'EOF'\nset pw \"{S}\"\nspawn ssh root@db\nexpect \"*assword*\"\nsend \"$pw\\r\"\ninteract\nEOF",
            "expect-send",
        ),
        (
            "import pexpect\nroot_pw = '{S}'\nc = pexpect.spawn('ssh root@db')\nc.expect('password:')\nc.sendline(root_pw)\n",
            "expect-send",
        ),
        (
            "python3 - <<'EOF'\nimport telnetlib\ntn = telnetlib.Telnet('switch1')\ntn.read_until(b'Username: ')\ntn.write(b'admin\\n')\ntn.read_until(b'Password: ')\ntn.write(b'{S}\\n')\nEOF",
            "expect-send",
        ),
    ];

    #[test]
    fn what_is_fed_to_a_password_prompt_is_redacted() {
        let r = Redactor::new();
        let mut failures = Vec::new();
        for (i, (template, kind)) in PROMPT_CASES.iter().enumerate() {
            let secret = fake(i as u64 * 7919 + 3, 20);
            let text = template.replace("{S}", &secret);
            let want = template.replace("{S}", &format!("[REDACTED:{kind}]"));
            let (out, found) = redact_command(&r, &text);
            if out != want {
                failures.push(format!("{text}\n  -> {out}\n  want {want}"));
                continue;
            }
            if !found.iter().any(|f| f.value == secret) {
                failures.push(format!("{text}: {secret} not reported"));
            }
            let (again, more) = redact_command(&r, &out);
            if again != out || !more.is_empty() {
                failures.push(format!("not idempotent: {out}\n  -> {again}"));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} failed:\n{}",
            failures.len(),
            PROMPT_CASES.len(),
            failures.join("\n")
        );
    }

    /// Look-alikes: code and data fed to programs, answers that are not secrets, expect
    /// scripts answering other prompts. They must come out unchanged.
    const PROMPT_SURVIVORS: &[&str] = &[
        "python3 - <<'EOF'\nimport os\nprint(os.getcwd())\nx = 'Abc123!def'\nEOF",
        "bash <<EOF\nset -e\ncd /srv/app && ./deploy.sh Release42\nEOF",
        "psql -h db -U app <<EOF\nSELECT 'Build42x!' AS tag;\nEOF",
        "cat > notes.txt <<EOF\nRelease Tr0ub4dor!\nEOF",
        "cat <<EOF > .config\nname=Abc123XYZ\nEOF",
        "sudo -S apt-get install -y jq <<< \"$SUDO_PASSWORD\"",
        "echo \"$PW\" | sudo -S true",
        "sudo apt-get install -y nginx <<< y",
        "./setup.sh <<EOF\nadmin\nadmin@example.com\nyes\n/srv/app\nhttps://example.com\n8080\neu-west-1\nEOF",
        "./configure.sh <<< $'y\\nn\\ny'",
        "printf 'y\\n' | ./install.sh",
        "echo 3.2.1 | ./bump-version.sh",
        "sort <<EOF\nZeta9!x\nAlpha1!y\nEOF",
        "grep -c Release <<< \"Release42 done\"",
        "echo done | tee -a log.txt",
        "git credential approve <<EOF\nprotocol=https\nhost=github.com\nusername=ci\npassword=$GH_TOKEN\nEOF",
        "passwd -S ann",
        "expect -c 'spawn ssh host; expect \"yes/no\"; send \"yes\\r\"; expect \"$ \"; send \"uptime\\r\"'",
        "expect -c 'spawn ssh admin@db; expect \"assword:\"; send \"$env(DB_PASS)\\r\"; interact'",
        "child.expect('Password:')\nchild.sendline(password)",
        "expect(screen.getByLabelText('Password')).toBeInTheDocument();\nawait user.type(input, 'Abc123!x');",
        "ssh-keygen -t ed25519 -f key -N '' <<< y",
        "expect(screen.getByText('Password')).toBeVisible();\nclient.sendMessage(session.id, 'Abc123!x');",
        "let pw = read_password().expect(\"password prompt failed\");\nfile.write(b\"Abc123!xyz\")?;",
        "child.expect('Password:')\nchild.sendline(user_password)",
        "const token = res.expect('token');\nsocket.send(JSON.stringify(msg));",
        "subprocess.run(['git', 'commit', '-F', '-'], input='Fix: Abc123!x', text=True)",
        "redis-cli -h cache <<EOF\nSET user:1 Abc123!x\nEOF",
        "ftp -n files.example.com <<EOF\nuser ann $FTP_PASSWORD\nbye\nEOF",
        "htpasswd -nbB admin \"$PW\"",
    ];

    #[test]
    fn look_alikes_of_prompts_are_kept() {
        let r = Redactor::new();
        let failures: Vec<String> = PROMPT_SURVIVORS
            .iter()
            .filter_map(|text| {
                let mut found = Vec::new();
                let out = redact_prompts(text, true, &mut found);
                (out != *text || !found.is_empty()).then(|| format!("{text}\n  -> {out}"))
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // Through every rule, too (the pattern rules must not take them either).
        let _ = r;
    }

    #[test]
    fn password_shapes() {
        for v in [
            "Tr0ub4dor&3",
            "hunter2!",
            "S3cretPass",
            "xK9#mP2$",
            "a8f3k2m9q0w7e6r5t4y3",
        ] {
            assert!(looks_like_password(v), "{v}");
        }
        for v in [
            "admin",
            "user_1",
            "my-app",
            "MyProject",
            "admin@example.com",
            "db.example.com",
            "1.2.3",
            "2024-01-01",
            "/srv/app",
            "https://example.com",
            "8080",
            "yes",
            "$PASSWORD",
            "eu-west-1",
            "hunter2",
        ] {
            assert!(!looks_like_password(v), "{v}");
        }
    }
}
