//! What secret stores print: the output of a command that reads a secret store is a secret,
//! unless the thing read is clearly not one.
//!
//! [`super::redact_shell::output_of_command`] asks `store_prints_secret` about every command
//! of a line. The answer comes from the grammar of what agents type rather than from a list of
//! examples:
//!
//! - **Operation words.** A sub-command that names an operation on a secret prints it:
//!   `get-login-password`, `print-access-token`, `generate-db-auth-token`, `export-credentials`,
//!   `show-connection-string` (verb and object in one word, any program); `credentials:show`,
//!   `secrets:reveal`, `token create`, `secret show`, `credential fill` (object, then verb);
//!   `auth token`, `tunnel token` (a `token` asked of an authenticator). A flag that asks for the
//!   plain value does too (`--show-secrets`, `--reveal`, `--with-decryption`, `--show-token`).
//! - **Stores read by name** (`terraform output -raw NAME`, `pulumi config get NAME`, `heroku
//!   config:get NAME`, `aws configure get NAME`, `vault kv get -field=NAME`, `op read
//!   op://…/FIELD`, `aws ssm get-parameter --name …/NAME`): a secret unless the name is clearly
//!   not one (`plain_name`: `region`, `vpc_id`, `api_url`, `bucket_name`, …).
//! - **Configuration read by name** (`git config --get`, `npm config get`, `gcloud config
//!   get-value`): only when the name says it is a secret (`github.token`, `//host/:_authToken`).
//! - **Decryption to standard output** (`gpg -d`, `age -d`, `sops -d`, `ansible-vault view`,
//!   `openssl enc -d` without `-out`), **password managers** (`pass`, `gopass`, `op`, `bw`,
//!   `lpass`, `keepassxc-cli`, `security`, `secret-tool`, `kwallet-query`, `keyring`),
//!   **framework credentials** (`rails credentials:show`, `EDITOR=cat rails credentials:edit`,
//!   `dotnet user-secrets list`, `php artisan key:generate --show`, `symfony secrets:reveal`),
//!   **generators** (`openssl rand`, `pwgen`, `wg genkey`, `rails secret`, `/dev/urandom`) and
//!   **code that prints a secret** (`python -c "print(os.environ['API_TOKEN'])"`, `rails runner
//!   'puts Rails.application.credentials.x'`, `python -c 'import secrets; print(secrets.token_hex())'`).
//!
//! What is kept: listings (`pass ls`, `vault kv list`, `gh secret list`, `kubectl get
//! secrets`), output sent to a file (`gpg -d f -o out`, `age -d -o out`), help, and the
//! reads of plain names (`aws configure get region`, `terraform output vpc_id`).

use super::redact::{Keyword, classify_name};
use super::redact_shell::{Word, basename, output_of_command};

/// Sub-command words: lower-case words, maybe joined by `-`, `_` or `:` (not paths, not
/// `key=value`, not names with dots).
fn is_sub_word(w: &str) -> bool {
    let b = w.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b':')
        })
}

/// Verbs that, with a secret object in the same word, print the secret.
const READ_VERBS: &[&str] = &[
    "get", "print", "show", "reveal", "fetch", "read", "export", "decrypt", "display", "dump",
    "view", "access", "retrieve", "lookup", "cat", "unwrap", "fill", "output",
];
/// Verbs that make a new secret and print it.
const MAKE_VERBS: &[&str] = &[
    "generate",
    "create",
    "new",
    "issue",
    "mint",
    "gen",
    "rotate",
    "reset",
    "regenerate",
];

/// Objects a read verb prints as a secret (`get-secret-value`, `print-access-token`).
const READ_OBJECTS: &[&str] = &[
    "token",
    "tokens",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "secret",
    "secrets",
    "credential",
    "credentials",
    "creds",
    "sas",
    "plaintext",
    "key-string",
    "keystring",
    "connection-string",
    "connection-strings",
    "connectionstring",
    "api-key",
    "apikey",
    "access-key",
    "access-keys",
    "private-key",
    "secret-value",
    "secret-id",
    "kubeconfig",
    "login-password",
    "auth-token",
    "access-token",
    "identity-token",
    "id-token",
    "refresh-token",
    "session-token",
    "data-key",
    "unseal-keys",
    "root-token",
    "password-data",
];
/// Objects a make verb prints as a secret (`create-access-key`; not `create-secret`, which
/// takes the secret and prints its id).
const MAKE_OBJECTS: &[&str] = &[
    "token",
    "tokens",
    "password",
    "passwd",
    "credential",
    "credentials",
    "creds",
    "sas",
    "api-key",
    "apikey",
    "access-key",
    "access-token",
    "auth-token",
    "login-token",
    "db-auth-token",
    "data-key",
    "secret-id",
    "key-string",
    "app-password",
    "service-specific-credential",
];

/// Whether one sub-command word names a secret read (`get-login-password`, `auth:token`,
/// `credentials:show`, `print-access-token`).
fn word_reads_secret(word: &str) -> bool {
    let w = word.replace('_', "-");
    // `object:verb` (`credentials:show`, `secrets:reveal`, `auth:token`, `key:generate`).
    if let Some((object, verb)) = w.rsplit_once(':') {
        let object = object.rsplit(':').next().unwrap_or(object);
        if pair_reads_secret(object, verb) {
            return true;
        }
        if verb == "token" && matches!(object, "auth" | "tunnel" | "access" | "api") {
            return true;
        }
    }
    let Some((verb, object)) = w.split_once('-') else {
        return false;
    };
    if object == "credentials" && verb == "get" {
        return false; // `gcloud container clusters get-credentials`: writes a kubeconfig
    }
    let ends_in = |objects: &[&str]| {
        objects.iter().any(|o| {
            object == *o
                || object
                    .strip_suffix(o)
                    .is_some_and(|head| head.ends_with('-'))
        })
    };
    (READ_VERBS.contains(&verb) && ends_in(READ_OBJECTS))
        || (MAKE_VERBS.contains(&verb) && ends_in(MAKE_OBJECTS))
}

/// Whether `object` then `verb` (two sub-command words, or `object:verb`) reads a secret:
/// `secret show`, `secrets get`, `token create`, `credential fill`, `credentials:show`.
fn pair_reads_secret(object: &str, verb: &str) -> bool {
    let secret_object = matches!(
        object,
        "secret"
            | "secrets"
            | "credential"
            | "credentials"
            | "creds"
            | "password"
            | "passwords"
            | "kubeconfig"
            | "docker-config"
    );
    let token_object = matches!(
        object,
        "token" | "tokens" | "api-key" | "api-keys" | "apikey" | "authorization" | "authorizations"
    );
    (secret_object
        && matches!(
            verb,
            "show"
                | "get"
                | "reveal"
                | "read"
                | "access"
                | "fill"
                | "print"
                | "export"
                | "download"
                | "view"
                | "cat"
                | "dump"
                | "decrypt"
                | "reset"
                | "edit"
        ))
        || (token_object
            && matches!(
                verb,
                "create" | "new" | "issue" | "generate" | "mint" | "print" | "show" | "get"
            ))
        || (object == "key" && matches!(verb, "generate"))
}

/// Last segments of names that are clearly not secrets (`region`, `vpc_id`, `api_url`,
/// `bucket_name`, `max_attempts`): what a store read of such a name prints is kept.
const PLAIN_TAILS: &[&str] = &[
    "region",
    "regions",
    "zone",
    "zones",
    "location",
    "az",
    "output",
    "outputs",
    "format",
    "endpoint",
    "endpoints",
    "url",
    "urls",
    "uri",
    "uris",
    "host",
    "hostname",
    "hosts",
    "domain",
    "domains",
    "fqdn",
    "dns",
    "port",
    "ports",
    "ip",
    "ips",
    "ipv4",
    "ipv6",
    "address",
    "addresses",
    "addr",
    "cidr",
    "cidrs",
    "subnet",
    "subnets",
    "vpc",
    "arn",
    "arns",
    "id",
    "ids",
    "name",
    "names",
    "project",
    "projects",
    "account",
    "accounts",
    "tenant",
    "subscription",
    "org",
    "organization",
    "user",
    "username",
    "users",
    "login",
    "email",
    "owner",
    "role",
    "roles",
    "profile",
    "bucket",
    "buckets",
    "cluster",
    "clusters",
    "namespace",
    "env",
    "environment",
    "stage",
    "version",
    "versions",
    "tag",
    "tags",
    "image",
    "images",
    "repo",
    "repository",
    "branch",
    "path",
    "paths",
    "file",
    "dir",
    "directory",
    "bundle",
    "mode",
    "level",
    "type",
    "kind",
    "size",
    "count",
    "timeout",
    "seconds",
    "attempts",
    "retries",
    "pager",
    "color",
    "style",
    "enabled",
    "disabled",
    "process",
    "serial",
    "region_name",
    "fingerprint",
    "thumbprint",
    "expiration",
    "expiry",
    "expires",
    "date",
    "time",
    "status",
    "state",
    "ca",
    "cert",
    "certificate",
    "instance",
    "instances",
    "node",
    "nodes",
    "replicas",
    "group",
    "groups",
    "service",
    "services",
    "queue",
    "topic",
    "table",
    "database",
    "db",
    "schema",
    "editor",
    "shell",
    "lang",
    "locale",
    "timezone",
    "tz",
    "ami",
    "sg",
    "sgs",
    "concurrency",
    "workers",
    "threads",
    "limit",
    "limits",
    "memory",
    "cpu",
    "disk",
    "pool",
    "sku",
    "tier",
    "plan",
    "language",
    "runtime",
    "handler",
    "function",
    "lambda",
    "stack",
    "app",
    "application",
    "site",
    "website",
    "link",
    "links",
    "dashboard",
    "console",
    "key_id",
    "keyid",
    "kid",
    "public_key",
    "publickey",
    "pubkey",
    "public_ip",
    "private_ip",
    "default",
    "debug",
    "verbose",
    "loglevel",
    "helper",
    "usehttppath",
];
/// First segments that make a name a setting rather than a secret (`max_concurrent_requests`).
const PLAIN_HEADS: &[&str] = &[
    "max", "min", "num", "use", "enable", "disable", "is", "has", "default",
];

/// Whether a name read from a store is clearly not a secret: it does not name one, and its last
/// segment (after `_`, `-`, `.`, `:`, `/`, or a camelCase hump) is a plain word.
pub(super) fn plain_name(name: &str) -> bool {
    let name = name.trim_matches(|c: char| c == '"' || c == '\'' || c == '[' || c == ']');
    if name.is_empty() || says_secret(name) {
        return false;
    }
    let lower = camel_to_snake(name);
    let segments: Vec<&str> = lower
        .split(['_', '-', '.', ':', '/'])
        .filter(|s| !s.is_empty())
        .collect();
    let Some(last) = segments.last() else {
        return false;
    };
    if PLAIN_TAILS.contains(last) {
        return true;
    }
    if segments.len() >= 2 {
        let two = format!("{}_{}", segments[segments.len() - 2], last);
        if PLAIN_TAILS.contains(&two.as_str()) {
            return true;
        }
    }
    segments.first().is_some_and(|f| PLAIN_HEADS.contains(f)) && segments.len() > 1
}

/// Whether a name says it is a secret: its last segment is a secret word (the rules' own
/// test), or a segment anywhere is `secret`, `token`, `password`, … (`secret_key_base`,
/// `token_signing`, `db_password_prod`).
pub(super) fn says_secret(name: &str) -> bool {
    if classify_name(name, false).is_some_and(|kw| kw != Keyword::Weak) {
        return true;
    }
    let lower = camel_to_snake(name);
    let segments: Vec<&str> = lower.split(['_', '-', '.', ':', '/']).collect();
    // `credential.helper`, `token_url`: the last word says what the value is.
    if segments.last().is_some_and(|l| {
        matches!(
            *l,
            "helper"
                | "url"
                | "uri"
                | "host"
                | "hostname"
                | "port"
                | "id"
                | "name"
                | "username"
                | "user"
                | "email"
                | "region"
                | "endpoint"
                | "path"
                | "file"
                | "dir"
                | "type"
                | "mode"
                | "enabled"
                | "count"
                | "timeout"
                | "expiration"
                | "expires"
                | "length"
        )
    }) {
        return false;
    }
    segments.iter().any(|s| {
        matches!(
            *s,
            "secret"
                | "secrets"
                | "password"
                | "passwd"
                | "passphrase"
                | "pwd"
                | "pw"
                | "token"
                | "apikey"
                | "privatekey"
                | "credential"
                | "credentials"
                | "creds"
                | "authtoken"
                | "sas"
                | "pat"
        )
    }) || lower.contains("api_key")
        || lower.contains("private_key")
        || lower.contains("access_key")
        || lower.contains("connection_string")
        || lower.contains("secret")
        || lower.contains("password")
}

/// `dbPasswordProd` → `db_password_prod` (lower case; other separators kept).
fn camel_to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let b = name.as_bytes();
    for (i, ch) in name.char_indices() {
        if ch.is_ascii_uppercase()
            && i > 0
            && (b[i - 1].is_ascii_lowercase() || b[i - 1].is_ascii_digit())
        {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

/// A command's arguments, as the store rules read them.
struct Args<'a> {
    words: Vec<&'a str>,
    /// Sub-command and operand words: the arguments that are not flags (flag values are
    /// skipped for the flags a rule says take one).
    positionals: Vec<&'a str>,
}

impl<'a> Args<'a> {
    fn new(words: &'a [Word], value_flags: &[&str]) -> Self {
        let words: Vec<&str> = words.iter().map(|w| w.value.as_str()).collect();
        let mut positionals = Vec::new();
        let mut k = 0;
        let mut done = false;
        while let Some(t) = words.get(k) {
            if !done && *t == "--" {
                done = true;
            } else if !done && t.len() > 1 && t.starts_with('-') {
                if value_flags.contains(t) {
                    k += 1;
                }
            } else {
                positionals.push(*t);
            }
            k += 1;
        }
        Args { words, positionals }
    }

    /// `--flag`, `--flag=…`, or (for `-x`) a cluster of one-letter flags holding it when
    /// `clusters`.
    fn has(&self, flag: &str, clusters: bool) -> bool {
        self.words.iter().any(|w| {
            *w == flag
                || w.strip_prefix(flag).is_some_and(|r| r.starts_with('='))
                || (clusters
                    && flag.len() == 2
                    && !flag.starts_with("--")
                    && w.len() > 2
                    && w.starts_with('-')
                    && !w.starts_with("--")
                    && w[1..].bytes().all(|c| c.is_ascii_alphabetic())
                    && w[1..].contains(&flag[1..]))
        })
    }

    fn any(&self, flags: &[&str]) -> bool {
        flags.iter().any(|f| self.has(f, false))
    }

    /// The value of `--flag VALUE` / `--flag=VALUE` / `-fVALUE`.
    fn value(&self, flag: &str) -> Option<&'a str> {
        for (k, w) in self.words.iter().enumerate() {
            if *w == flag {
                return self.words.get(k + 1).copied();
            }
            if let Some(v) = w.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
        }
        None
    }

    /// Whether `flag` sends the output to a file (`-o out`; not `-o -` or `/dev/stdout`).
    fn to_file(&self, flag: &str) -> bool {
        self.value(flag)
            .is_some_and(|v| !matches!(v, "-" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"))
            || (flag.len() == 2
                && self.words.iter().any(|w| {
                    w.len() > 2
                        && w.starts_with(flag)
                        && !w.starts_with("--")
                        && !w.contains('=')
                        && !matches!(&w[2..], "-")
                }))
    }

    /// Whether the positionals start with `sub` (without case).
    fn sub(&self, sub: &[&str]) -> bool {
        sub.len() <= self.positionals.len()
            && sub
                .iter()
                .zip(&self.positionals)
                .all(|(want, got)| want.eq_ignore_ascii_case(got))
    }

    /// The positional after the sub-command words.
    fn operand(&self, after: usize, n: usize) -> Option<&'a str> {
        self.positionals.get(after + n).copied()
    }
}

/// Whether a key's path says it holds a secret: one of its segments does
/// (`secret/payments/db_password`, `/secrets/api/signing`, `app:session:token`).
fn path_says_secret(key: &str) -> bool {
    key.split(['/', ':'])
        .filter(|s| !s.is_empty())
        .any(|segment| says_secret(segment) && !plain_name(segment))
}

/// Whether an output template (`-o jsonpath='{.users[0].user.token}'`, `--template
/// '{{.data.password}}'`) prints a value whose name says it is a secret.
fn template_names_secret(word: &str) -> bool {
    if !(word.contains("jsonpath")
        || word.contains("template")
        || word.contains("{{")
        || word.contains("{."))
    {
        return false;
    }
    word.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .filter(|s| !s.is_empty())
        .any(|name| {
            !matches!(
                name,
                "jsonpath" | "go-template" | "template" | "o" | "output"
            ) && (says_secret(name) || name.ends_with("key-data"))
        })
}

/// A name read from a store: a secret unless it is plain; no name: the whole store, a secret.
fn named(name: Option<&str>) -> bool {
    name.is_none_or(|n| !plain_name(last_path_segment(n)))
}

/// `op://vault/item/password` → `password`; `/app/prod/db_host` → `db_host`;
/// `secret/data/app` → `app`.
fn last_path_segment(name: &str) -> &str {
    let name = name.trim_end_matches('/');
    name.rsplit('/').next().unwrap_or(name)
}

/// Flags that ask a command for the plain value of what it would otherwise mask.
const REVEAL_FLAGS: &[&str] = &[
    "--show-secrets",
    "--show-secret",
    "--reveal",
    "--show-token",
    "--show-protected",
    "--show-password",
    "--show-passwords",
    "--with-decryption",
    "--plaintext",
    "--show-values",
    "--unmask",
    "--expose-token",
    "--decrypt",
];

/// Flags that send a command's output to a file.
const OUTPUT_FLAGS: &[&str] = &[
    "-o",
    "--output",
    "--out",
    "-out",
    "--out-file",
    "--output-file",
    "--outfile",
];

/// Global options of the cloud CLIs that take a value (so that the sub-command is found).
const CLOUD_FLAGS: &[&str] = &[
    "--profile",
    "--region",
    "--output",
    "-o",
    "--endpoint-url",
    "--query",
    "--color",
    "--ca-bundle",
    "--project",
    "--account",
    "--configuration",
    "--format",
    "--subscription",
    "-g",
    "--resource-group",
    "--vault-name",
    "-n",
    "--name",
    "--namespace",
    "--context",
    "--kubeconfig",
    "-a",
    "--app",
    "-c",
    "--config",
    "-p",
    "-e",
    "--env",
    "--stack",
    "-s",
    "--environment",
    "--cwd",
    "--team",
    "--scope",
    "--org",
    "-R",
    "--repo",
    "--hostname",
];

/// Whether the output of this command (its program at `words[p]`) is a secret a store holds.
pub(super) fn store_prints_secret(words: &[Word], p: usize) -> bool {
    let program = basename(&words[p].value);
    let rest = &words[p + 1..];
    // `EDITOR=cat rails credentials:edit`: the "editor" prints the decrypted file.
    let editor_prints = words[..p].iter().any(|w| {
        ["EDITOR=", "VISUAL="].iter().any(|pre| {
            w.value.strip_prefix(pre).is_some_and(|e| {
                matches!(
                    basename(e.split_whitespace().next().unwrap_or("")),
                    "cat" | "more" | "less" | "head" | "tail" | "bat" | "batcat" | "tee" | "echo"
                )
            })
        })
    });
    let a = Args::new(rest, CLOUD_FLAGS);
    if a.any(&["--help", "-help"]) || a.positionals.first() == Some(&"help") {
        return false;
    }
    if wrapped_prints_secret(program, rest) {
        return true;
    }
    if let Some(answer) = by_program(program, &a, rest, editor_prints) {
        return answer;
    }
    // `./bin/print-token`, `get-db-password.sh`: a script named for what it prints.
    let stem = program.rsplit_once('.').map_or(program, |(stem, _)| stem);
    (is_sub_word(stem) && stem.contains('-') && word_reads_secret(stem)) || generic(program, &a)
}

/// Programs that run another command given after `--` or as one string (`doppler run --
/// printenv X`, `kubectl exec pod -- printenv X`, `ssh host 'pass show db'`, `bash -c '…'`,
/// `fly ssh console -C '…'`): whether that command prints a secret.
fn wrapped_prints_secret(program: &str, rest: &[Word]) -> bool {
    const WRAPPERS: &[&str] = &[
        "doppler",
        "op",
        "infisical",
        "aws-vault",
        "envchain",
        "dotenv",
        "dotenvx",
        "chamber",
        "sops",
        "teller",
        "summon",
        "berglas",
        "kubectl",
        "oc",
        "docker",
        "podman",
        "ssh",
        "bash",
        "sh",
        "zsh",
        "su",
        "fly",
        "flyctl",
        "heroku",
        "gcloud",
        "vagrant",
        "railway",
        "eval",
        "runuser",
        "nix-shell",
        "with-contenv",
        "env-cmd",
        "varlock",
        "uv",
        "poetry",
    ];
    if !WRAPPERS.contains(&program) {
        return false;
    }
    if let Some(at) = rest.iter().position(|w| w.value == "--") {
        let inner: Vec<&str> = rest[at + 1..].iter().map(|w| w.value.as_str()).collect();
        if !inner.is_empty() && output_of_command(&inner.join(" ")).secret {
            return true;
        }
    }
    // `docker exec -it app printenv X`: the command after the container.
    if matches!(program, "docker" | "podman") && rest.first().is_some_and(|w| w.value == "exec") {
        let args = Args::new(
            &rest[1..],
            &["-e", "--env", "-u", "--user", "-w", "--workdir"],
        );
        if args.positionals.len() > 1 {
            let inner = args.positionals[1..].join(" ");
            if output_of_command(&inner).secret {
                return true;
            }
        }
    }
    rest.iter()
        .any(|w| w.value.contains(' ') && output_of_command(&w.value).secret)
}

/// The operation words and reveal flags of any command (see the module documentation).
fn generic(program: &str, a: &Args<'_>) -> bool {
    // Tools whose arguments are names of the project's own things (`cargo test get_token`,
    // `make print-token`, `git log --grep get-password`): not operations of a store.
    const NAMES_ARE_THE_PROJECTS: &[&str] = &[
        "cargo",
        "go",
        "make",
        "just",
        "pytest",
        "jest",
        "vitest",
        "rspec",
        "gradle",
        "gradlew",
        "mvn",
        "bazel",
        "tox",
        "nox",
        "git",
        "grep",
        "rg",
        "ag",
        "fd",
        "find",
        "code",
        "vim",
        "nvim",
        "nano",
        "emacs",
        "less",
        "man",
        "tldr",
        "which",
        "type",
        "ls",
        "touch",
        "mkdir",
        "rm",
        "mv",
        "cp",
        "chmod",
        "echo",
        "printf",
        "sed",
        "awk",
        "tree",
        "wc",
        "diff",
        "tsc",
        "eslint",
        "prettier",
        "ruff",
        "mypy",
        "black",
        "clippy",
        "rustc",
        "node",
        "python",
        "python3",
        "deno",
        "bun",
        "npm",
        "yarn",
        "pnpm",
        "npx",
        "mix",
        "dotnet",
        "swift",
        "xcodebuild",
        "gh",
        "glab",
        "jq",
        "yq",
        "curl",
        "wget",
        "http",
        "xargs",
    ];
    if NAMES_ARE_THE_PROJECTS.contains(&program) {
        return false;
    }
    // Sub-commands of command-line tools are kebab-case (`get-login-password`); snake_case
    // words are the names of functions and tests.
    let subs: Vec<&str> = a
        .positionals
        .iter()
        .copied()
        .take(4)
        .take_while(|w| is_sub_word(w) && !w.contains('_'))
        .collect();
    if subs.iter().any(|w| word_reads_secret(w)) {
        return true;
    }
    for pair in subs.windows(2) {
        if pair_reads_secret(pair[0], pair[1])
            || (matches!(pair[1], "token" | "password")
                && matches!(
                    pair[0],
                    "auth" | "tunnel" | "access" | "api" | "session" | "login"
                ))
        {
            return true;
        }
    }
    a.any(REVEAL_FLAGS) && !OUTPUT_FLAGS.iter().any(|f| a.to_file(f))
}

/// The families whose grammar is their own; `None`: ask `generic`.
fn by_program(program: &str, a: &Args<'_>, rest: &[Word], editor_prints: bool) -> Option<bool> {
    let to_file = |flags: &[&str]| flags.iter().any(|f| a.to_file(f));
    let answer = match program {
        "aws" => aws(a),
        "gcloud" => {
            if a.sub(&["config", "get-value"]) || a.sub(&["config", "get"]) {
                a.operand(2, 0).is_some_and(says_secret)
            } else if a.sub(&["secrets", "versions", "access"])
                || a.sub(&["config", "config-helper"])
            {
                true
            } else if a.sub(&["kms", "decrypt"]) {
                a.value("--plaintext-file")
                    .is_some_and(|v| v == "-" || v == "/dev/stdout")
            } else if a
                .positionals
                .iter()
                .take(4)
                .any(|w| *w == "get-credentials")
            {
                false
            } else {
                return None;
            }
        }
        "az" => {
            let sub_has = |w: &str| a.positionals.iter().take(5).any(|p| *p == w);
            if a.sub(&["config", "get"]) {
                a.operand(2, 0).is_some_and(says_secret)
            } else if a.sub(&["account", "get-access-token"])
                || (sub_has("keys") && sub_has("list"))
                || sub_has("list-keys")
                || sub_has("list-connection-strings")
                || sub_has("list-publishing-credentials")
                || sub_has("create-for-rbac")
                || a.sub(&["keyvault", "secret", "show"])
            {
                true
            } else if a.sub(&["aks", "get-credentials"]) {
                a.value("--file")
                    .or(a.value("-f"))
                    .is_some_and(|v| v == "-")
            } else {
                return None;
            }
        }
        "terraform" | "tofu" | "terragrunt" | "terramate" => {
            // Without a name, the table masks sensitive values (`-json` is the structured
            // rules' business); with one, the value is printed as it is.
            let args = Args::new(rest, &["-state", "-chdir"]);
            if args.sub(&["output"]) {
                args.operand(1, 0).is_some_and(|n| !plain_name(n))
            } else {
                return None;
            }
        }
        "pulumi" => {
            let args = Args::new(
                rest,
                &["-s", "--stack", "-C", "--cwd", "--path", "--config-file"],
            );
            if args.sub(&["config", "get"]) {
                named(args.operand(2, 0))
            } else if args.sub(&["stack", "output"]) {
                args.has("--show-secrets", false) && named(args.operand(2, 0))
            } else if args.sub(&["config"]) || args.sub(&["stack", "export"]) {
                args.has("--show-secrets", false)
            } else {
                return None;
            }
        }
        "heroku" => {
            let args = Args::new(rest, &["-a", "--app", "-r", "--remote"]);
            if args.sub(&["config:get"]) {
                named(args.operand(1, 0))
            } else if args.sub(&["config"]) && args.positionals.len() == 1 {
                true // every config var, values and all
            } else {
                return None;
            }
        }
        "dokku" => {
            if a.sub(&["config:get"]) {
                named(a.operand(1, 1))
            } else if a.sub(&["config:show"])
                || a.sub(&["config:export"])
                || (a.sub(&["config"]) && a.positionals.len() <= 2)
            {
                true
            } else {
                return None;
            }
        }
        "netlify" | "ntl" => {
            if a.sub(&["env:get"]) {
                named(a.operand(1, 0))
            } else if a.sub(&["env:list"]) {
                a.any(&["--plain", "--json"])
            } else {
                return None;
            }
        }
        "firebase" => {
            if a.sub(&["functions:config:get"]) {
                named(a.operand(1, 0))
            } else if a.sub(&["functions:secrets:access"]) || a.sub(&["apphosting:secrets:access"])
            {
                true
            } else {
                return None;
            }
        }
        "railway" => {
            (a.sub(&["variables"]) || a.sub(&["vars"]) || a.sub(&["variable"]))
                && !a.any(&["--set", "-s"])
                && !a.sub(&["variables", "set"])
        }
        "eb" => a.sub(&["printenv"]),
        "cf" => a.sub(&["env"]),
        "chamber" => {
            if a.sub(&["read"]) {
                named(a.operand(1, 1))
            } else {
                a.sub(&["export"])
            }
        }
        "doppler" => {
            if a.sub(&["secrets", "get"]) {
                true
            } else if a.sub(&["secrets", "download"]) {
                a.has("--no-file", false)
            } else if a.sub(&["secrets"]) && a.positionals.len() == 1 {
                !a.has("--only-names", false)
            } else if a.sub(&["configure", "get"]) {
                a.operand(2, 0).is_some_and(says_secret)
            } else {
                return None;
            }
        }
        "infisical" => {
            (a.sub(&["secrets", "get"])
                || (a.sub(&["secrets"]) && a.positionals.len() == 1)
                || a.sub(&["export"]))
                && !to_file(&["--output-file"])
        }
        "vault" | "bao" => {
            let field = a.words.iter().find_map(|w| {
                w.strip_prefix("-field=")
                    .or_else(|| w.strip_prefix("--field="))
            });
            if a.sub(&["kv", "get"]) || a.sub(&["read"]) {
                named(field)
            } else if a.sub(&["token", "create"])
                || a.sub(&["operator", "init"])
                || a.sub(&["operator", "generate-root"])
                || a.sub(&["print", "token"])
                || a.sub(&["token", "lookup"])
            {
                true
            } else if a.sub(&["write"]) {
                a.operand(1, 0).is_some_and(|path| {
                    let last = last_path_segment(path);
                    matches!(last, "secret-id" | "creds" | "login" | "token")
                        || path.contains("/creds/")
                })
            } else {
                return None;
            }
        }
        "kubectl" | "oc" => {
            let output = a.words.iter().any(|w| {
                w.contains("jsonpath")
                    || w.contains("go-template")
                    || matches!(*w, "yaml" | "json")
                    || w.ends_with("=yaml")
                    || w.ends_with("=json")
                    || *w == "-oyaml"
                    || *w == "-ojson"
            });
            if a.sub(&["get", "secret"]) || a.sub(&["get", "secrets"]) {
                output
            } else if a
                .positionals
                .first()
                .is_some_and(|w| w.starts_with("secret/") || w.starts_with("secrets/"))
            {
                false
            } else if a.sub(&["get"])
                && a.positionals
                    .get(1)
                    .is_some_and(|w| w.starts_with("secret/") || w.starts_with("secrets/"))
            {
                output
            } else if a.sub(&["create", "token"]) || a.sub(&["view-secret"]) {
                true
            } else if a.sub(&["config", "view"]) && a.any(&["--raw", "--flatten"]) {
                // The kubeconfig with its credentials: as YAML the name rule finds them
                // (`token:`, `client-key-data:`); a template prints one value bare.
                a.words.iter().any(|w| template_names_secret(w))
            } else {
                return None;
            }
        }
        "doctl" if a.sub(&["registry", "docker-config"]) => true,
        // Key-value stores read by key: a secret when the key's path says so
        // (`secret/payments/db_password`, `/secrets/api/signing`), not `config/app/log_level`.
        "consul" if a.sub(&["kv", "get"]) => a.operand(2, 0).is_some_and(path_says_secret),
        "etcdctl" if a.sub(&["get"]) => a.operand(1, 0).is_some_and(path_says_secret),
        "redis-cli" | "valkey-cli" | "keydb-cli" => {
            let get = a.positionals.iter().position(|w| {
                ["get", "hget", "getdel"]
                    .iter()
                    .any(|g| w.eq_ignore_ascii_case(g))
            });
            match get {
                Some(at) => a.positionals[at + 1..]
                    .iter()
                    .take(2)
                    .any(|k| path_says_secret(k)),
                None => return None,
            }
        }
        "kubeadm" | "k3s" | "rke2" => {
            a.sub(&["token"])
                && a.positionals
                    .get(1)
                    .is_some_and(|w| matches!(*w, "create" | "list" | "generate"))
        }
        "docker" | "podman" if a.sub(&["swarm", "join-token"]) => true,
        "gh" | "glab" => {
            if a.sub(&["auth", "token"]) {
                true
            } else if a.sub(&["auth", "status"]) {
                a.any(&["--show-token", "-t"])
            } else if a.sub(&["config", "get"]) {
                a.operand(2, 0).is_some_and(says_secret)
            } else {
                return None;
            }
        }
        "git" => {
            let args = Args::new(
                rest,
                &[
                    "-C",
                    "-c",
                    "--file",
                    "-f",
                    "--blob",
                    "--type",
                    "--default",
                    "--git-dir",
                    "--work-tree",
                ],
            );
            if args.sub(&["credential", "fill"]) {
                true
            } else if args.sub(&["config"]) {
                let get = args.any(&["--get", "--get-all", "--get-regexp"])
                    || args.sub(&["config", "get"]);
                let name = if args.sub(&["config", "get"]) {
                    args.operand(2, 0)
                } else {
                    args.operand(1, 0)
                };
                let one_operand = args.positionals.len() == 2
                    && !args.any(&["--unset", "--unset-all", "-l", "--list", "-e", "--edit"]);
                (get || one_operand) && name.is_some_and(says_secret)
            } else {
                return None;
            }
        }
        "npm" | "yarn" | "pnpm" | "pip" | "pip3" | "poetry" | "composer" | "cargo" | "bundle"
        | "conda" => {
            let args = Args::new(
                rest,
                &[
                    "--location",
                    "-L",
                    "--workspace",
                    "-w",
                    "-d",
                    "--directory",
                    "--working-dir",
                    "--global",
                ],
            );
            if args.sub(&["config", "get"]) {
                args.operand(2, 0).is_some_and(says_secret)
            } else if args.sub(&["config"])
                && args.positionals.len() == 2
                && !args.any(&["--unset", "--list"])
            {
                args.operand(1, 0).is_some_and(says_secret)
            } else if args.sub(&["token", "create"]) {
                true
            } else if args.sub(&["token"]) || args.sub(&["config"]) {
                false
            } else {
                return None;
            }
        }
        "pass" | "gopass" => {
            let first = a.positionals.first().copied();
            let reads = match first {
                None => false, // the tree of names
                Some("show" | "cat" | "otp") => true,
                Some(p) => !matches!(
                    p,
                    "ls" | "list"
                        | "find"
                        | "search"
                        | "grep"
                        | "init"
                        | "git"
                        | "insert"
                        | "generate"
                        | "rm"
                        | "mv"
                        | "cp"
                        | "edit"
                        | "help"
                        | "version"
                        | "sync"
                        | "setup"
                        | "config"
                        | "mounts"
                        | "recipients"
                        | "audit"
                        | "fsck"
                        | "create"
                        | "new"
                        | "templates"
                        | "completion"
                        | "clone"
                        | "update"
                        | "fscopy"
                        | "link"
                        | "age"
                        | "env"
                        | "tree"
                ),
            };
            reads && !a.any(&["-c", "--clip", "-q", "--qr"])
        }
        "op" => {
            if a.sub(&["read"]) {
                named(a.operand(1, 0)) && !to_file(&["-o", "--out-file"])
            } else if a.sub(&["item", "get"]) {
                if let Some(fields) = a.value("--fields").or(a.value("--field")) {
                    fields.split(',').any(|f| {
                        let f = f
                            .trim()
                            .trim_start_matches("label=")
                            .trim_start_matches("type=");
                        !plain_name(f)
                    })
                } else {
                    a.any(&["--reveal", "--otp"])
                }
            } else if a.sub(&["inject"]) || a.sub(&["document", "get"]) {
                !to_file(&["-o", "--out-file"])
            } else if a.sub(&["signin"]) {
                a.has("--raw", false)
            } else {
                return None;
            }
        }
        "bw" => {
            if a.sub(&["get"]) {
                a.positionals.get(1).is_some_and(|w| {
                    matches!(
                        *w,
                        "password" | "totp" | "notes" | "item" | "exposed" | "send" | "attachment"
                    )
                }) && !to_file(&["--output"])
            } else if a.sub(&["list", "items"]) {
                true
            } else if a.sub(&["unlock"]) || a.sub(&["login"]) {
                a.has("--raw", false)
            } else if a.sub(&["export"]) {
                a.has("--raw", false) || a.value("--output").is_some_and(|v| v == "/dev/stdout")
            } else {
                return None;
            }
        }
        "lpass" => {
            a.sub(&["show"])
                && !a.any(&[
                    "--username",
                    "--url",
                    "--name",
                    "--id",
                    "--field=username",
                    "-c",
                    "--clip",
                ])
                || a.sub(&["export"])
        }
        "keepassxc-cli" => {
            if a.sub(&["show"]) {
                a.has("-s", true)
                    || a.has("-t", true)
                    || a.any(&["--show-protected", "--totp"])
                    || a.value("-a")
                        .or(a.value("--attributes"))
                        .is_some_and(|v| !plain_name(v))
            } else {
                a.sub(&["export"]) && !to_file(&["-o", "--output"])
            }
        }
        "security" => {
            ((a.sub(&["find-generic-password"]) || a.sub(&["find-internet-password"]))
                && (a.has("-w", true) || a.has("-g", true)))
                || (a.sub(&["dump-keychain"]) && a.has("-d", false))
        }
        "secret-tool" => a.sub(&["lookup"]),
        "kwallet-query" => a.any(&["-r", "--read-password"]),
        "keyring" => a.sub(&["get"]),
        "credstash" | "berglas" | "teller" | "ejson" | "eyaml" | "blackbox_cat" => {
            a.positionals.first().is_some_and(|w| {
                matches!(
                    *w,
                    "get" | "getall" | "access" | "show" | "export" | "decrypt" | "env"
                )
            }) || program == "blackbox_cat"
        }
        "aws-vault" => a.sub(&["export"]),
        "dotenvx" => {
            if a.sub(&["get"]) {
                named(a.operand(1, 0))
            } else {
                a.sub(&["decrypt"]) && a.has("--stdout", false)
            }
        }
        "gpg" | "gpg2" => {
            let decrypt = a.has("--decrypt", false) || a.has("-d", true);
            let export = a.any(&["--export-secret-keys", "--export-secret-subkeys"]);
            (decrypt || export) && !to_file(&["-o", "--output"]) && !a.has("--list-packets", false)
        }
        "age" | "rage" => {
            (a.has("--decrypt", false) || a.has("-d", true)) && !to_file(&["-o", "--output"])
        }
        "age-keygen" | "rage-keygen" => !to_file(&["-o", "--output"]) && !a.has("-y", false),
        "sops" => {
            (a.has("--decrypt", false) || a.has("-d", false) || a.sub(&["decrypt"]))
                && !to_file(&["--output"])
                && !a.any(&["-i", "--in-place"])
        }
        "ansible-vault" => {
            a.sub(&["view"])
                || (a.sub(&["decrypt"])
                    && a.value("--output")
                        .is_some_and(|v| v == "-" || v == "/dev/stdout"))
        }
        "openssl" => {
            let op = a.positionals.first().copied().unwrap_or("");
            let no_out = !a.to_file("-out");
            match op {
                "enc" | "aes-256-cbc" | "aes-128-cbc" | "des3" | "bf" => {
                    a.has("-d", false) && no_out
                }
                "rsautl" | "pkeyutl" | "smime" | "cms" => a.has("-decrypt", false) && no_out,
                "rand" => no_out,
                _ if op.starts_with("aes") || op.starts_with("chacha") => {
                    a.has("-d", false) && no_out
                }
                _ => false,
            }
        }
        "pwgen" | "apg" | "makepasswd" | "xkcdpass" | "diceware" => true,
        "wg" => a.sub(&["genkey"]) || a.sub(&["genpsk"]),
        "rails" | "rake" => {
            a.sub(&["credentials:show"])
                || a.sub(&["encrypted:show"])
                || a.sub(&["secret"])
                || (editor_prints && (a.sub(&["credentials:edit"]) || a.sub(&["encrypted:edit"])))
                || ((a.sub(&["runner"]) || a.sub(&["r"]))
                    && a.operand(1, 0).is_some_and(code_prints_secret))
        }
        "mix" => a.sub(&["phx.gen.secret"]) || a.sub(&["guardian.gen.secret"]),
        "dotnet" => a.sub(&["user-secrets", "list"]),
        "php" => {
            let args = Args::new(rest, &["--env"]);
            let tool = args.positionals.first().copied().unwrap_or("");
            let tool = basename(tool);
            if tool == "artisan" {
                (args.sub(&["artisan", "key:generate"]) && args.has("--show", false))
                    || (args.sub(&["artisan", "tinker"])
                        && args.value("--execute").is_some_and(code_prints_secret))
            } else if tool == "console" {
                args.sub(&[args.positionals[0], "secrets:reveal"])
                    || (args.sub(&[args.positionals[0], "secrets:list"])
                        && args.has("--reveal", false))
            } else if let Some(code) = args.value("-r") {
                code_prints_secret(code)
            } else {
                return None;
            }
        }
        "symfony" => {
            a.sub(&["console", "secrets:reveal"])
                || (a.sub(&["console", "secrets:list"]) && a.has("--reveal", false))
        }
        "python" | "python3" | "python2" | "py" | "node" | "nodejs" | "ruby" | "perl" | "deno"
        | "bun" => {
            let code = ["-c", "-e", "--eval", "-p", "--print", "-E"]
                .iter()
                .find_map(|f| a.value(f));
            if let Some(code) = code {
                code_prints_secret(code)
                    || (matches!(program, "node" | "nodejs" | "bun" | "deno")
                        && a.any(&["-p", "--print"])
                        && names_secret_unmasked(code))
            } else if a.value("-m") == Some("keyring") {
                a.positionals.get(1) == Some(&"get")
            } else if a.positionals.iter().any(|w| w.ends_with("manage.py"))
                && a.positionals.contains(&"shell")
            {
                a.value("-c")
                    .or(a.value("--command"))
                    .is_some_and(code_prints_secret)
            } else {
                return None;
            }
        }
        _ if program.starts_with("docker-credential-")
            || program.starts_with("git-credential-") =>
        {
            a.sub(&["get"])
        }
        _ => return None,
    };
    Some(answer)
}

/// AWS: what an operation prints, then what `--query` keeps of it.
fn aws(a: &Args<'_>) -> bool {
    if a.sub(&["configure", "get"]) {
        return named(a.operand(2, 0));
    }
    if a.sub(&["configure", "export-credentials"]) {
        return true;
    }
    let op = a.positionals.get(1).copied().unwrap_or("");
    let prints = match op {
        "get-parameter" | "get-parameters" | "get-parameters-by-path" | "get-parameter-history" => {
            a.has("--with-decryption", false)
                && a.value("--name")
                    .is_none_or(|n| !plain_name(last_path_segment(n)))
        }
        "get-credentials" => false,
        "assume-role"
        | "assume-role-with-web-identity"
        | "assume-role-with-saml"
        | "get-federation-token"
        | "get-session-token"
        | "get-role-credentials"
        | "generate-db-auth-token"
        | "get-token"
        | "decrypt"
        | "generate-random"
        | "get-cluster-credentials"
        | "get-cluster-credentials-with-iam"
        | "get-login-password"
        | "get-authorization-token"
        | "create-access-key"
        | "create-service-specific-credential"
        | "reset-service-specific-credential"
        | "get-secret-value"
        | "batch-get-secret-value"
        | "get-instance-access-details"
        | "initiate-auth"
        | "admin-initiate-auth"
        | "respond-to-auth-challenge"
        | "get-id"
        | "get-credentials-for-identity"
        | "get-open-id-token" => op != "get-id",
        _ => word_reads_secret(op),
    };
    if !prints {
        return false;
    }
    // `--query Credentials.Expiration`, `--query Account`: only plain fields are printed.
    match a.value("--query") {
        Some(query) => {
            // The fields printed: not the parents of a path (`Credentials` in
            // `Credentials.Expiration`).
            let mut fields: Vec<&str> = Vec::new();
            let mut start = None;
            for (i, c) in query.char_indices().chain([(query.len(), ' ')]) {
                if c.is_ascii_alphanumeric() || c == '_' {
                    start.get_or_insert(i);
                    continue;
                }
                if let Some(s) = start.take()
                    && !matches!(c, '.' | '[')
                    && query[s..i].starts_with(|c: char| c.is_ascii_alphabetic())
                {
                    fields.push(&query[s..i]);
                }
            }
            let last = fields.last().copied().unwrap_or("");
            fields.iter().any(|f| {
                says_secret(f) || *f == "Plaintext" || *f == "Value" || *f == "SecretString"
            }) || !plain_name(last)
        }
        None => true,
    }
}

/// Whether a one-liner of code (`python -c`, `ruby -e`, `rails runner`, `tinker --execute`)
/// prints a secret: it makes a random secret and prints, or what one of its print calls prints
/// names a secret (`print(os.environ['API_TOKEN'])`, `puts Rails.application.credentials.x`),
/// unmasked (`console.log(process.env.DB_PASSWORD ? 'set' : 'missing')` prints no secret).
pub(super) fn code_prints_secret(code: &str) -> bool {
    const PRINTS: &[&str] = &[
        "print(",
        "print ",
        "puts ",
        "puts(",
        "console.log(",
        "echo ",
        "p(",
        "pp ",
        "say ",
        "System.out.println(",
        "fmt.Println(",
        "var_dump(",
        "dump(",
        "println!(",
        "printf(",
        "Write-Output ",
        "dd(",
        "process.stdout.write(",
        "console.info(",
        "console.error(",
    ];
    const MAKES: &[&str] = &[
        "token_hex",
        "token_urlsafe",
        "token_bytes",
        "randomBytes",
        "urandom",
        "get_random_secret_key",
        "SecureRandom",
        "generate_key",
        "randbytes",
        "random_bytes",
        "openssl_random",
        "getRandomValues",
    ];
    let mut prints = false;
    for p in PRINTS {
        let mut from = 0;
        while let Some(at) = code[from..].find(p).map(|n| from + n) {
            from = at + p.len();
            // `sprint(`, `output(`: another function.
            if code[..at]
                .bytes()
                .next_back()
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                continue;
            }
            prints = true;
            let arg = print_argument(&code[from..]);
            if names_secret_unmasked(arg) {
                return true;
            }
        }
    }
    prints && MAKES.iter().any(|m| code.contains(m))
}

/// The argument of a print call whose text starts at `rest`: up to its closing bracket, or
/// the end of the statement.
fn print_argument(rest: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    return &rest[..i];
                }
            }
            ';' | '\n' if depth <= 0 => return &rest[..i],
            _ => {}
        }
    }
    rest
}

/// Whether printed code names a secret (a compound identifier or key such as `API_TOKEN`,
/// `apiKey`, `SECRET_KEY`, or `credentials`), without masking it (a test, a length, a
/// slice).
fn names_secret_unmasked(arg: &str) -> bool {
    const MASKS: &[&str] = &[
        "?",
        " if ",
        "len(",
        ".length",
        "bool(",
        "!!",
        " is not None",
        " in os.environ",
        "Boolean(",
        ".slice(",
        "substring",
        "[:",
        "present?",
        ".nil?",
        "isset(",
        "!empty",
        "startswith",
        "startsWith",
        "hash",
        "sha256",
        "md5",
    ];
    if MASKS.iter().any(|m| arg.contains(m)) {
        return false;
    }
    if arg.contains("credentials") || arg.contains("Credentials") {
        return true;
    }
    // Configuration paths: `config("services.stripe.secret")`, `config('app.key')`.
    let path_secret = arg
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-')))
        .any(|t| (t.contains('.') || t.contains(':')) && t.len() > 3 && says_secret(t));
    if path_secret {
        return true;
    }
    let b = arg.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let ident = &arg[start..i];
            // A bare `token` or `password` is a variable of any kind; a compound name says
            // what it holds.
            let compound = ident.contains('_')
                || ident
                    .as_bytes()
                    .windows(2)
                    .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
            if compound && says_secret(ident) {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_clearly_not_secrets() {
        for name in [
            "region",
            "vpc_id",
            "api_url",
            "bucket_name",
            "cluster_endpoint",
            "aws:region",
            "max_concurrent_requests",
            "default.s3.max_concurrent_requests",
            "dbHost",
            "public_ip",
            "sso_start_url",
            "output",
            "instance_ids",
            "role_arn",
        ] {
            assert!(plain_name(name), "{name}");
        }
        for name in [
            "db_password",
            "aws_secret_access_key",
            "dbPassword",
            "secret_key_base",
            "kubeconfig",
            "admin_pw",
            "connection_string",
            "api_key",
            "token_signing",
            "stripe",
            "DATABASE_URL_WITH_PASSWORD",
            "jwt_secret",
            "session_token",
            "apiToken",
        ] {
            assert!(!plain_name(name), "{name}");
        }
    }

    #[test]
    fn operation_words_that_print_a_secret() {
        for w in [
            "get-login-password",
            "print-access-token",
            "get-secret-value",
            "generate-db-auth-token",
            "export-credentials",
            "show-connection-string",
            "get-authorization-token",
            "create-access-key",
            "auth:token",
            "credentials:show",
            "secrets:reveal",
            "print-identity-token",
            "get-session-token",
            "fetch-token",
            "reveal-secret",
        ] {
            assert!(word_reads_secret(w), "{w}");
        }
        for w in [
            "get-credentials",
            "list-secrets",
            "create-secret",
            "delete-token",
            "get-caller-identity",
            "describe-secret",
            "list-access-keys",
            "put-secret-value",
            "get-parameter",
            "config:set",
            "rotate",
            "token",
            "status",
        ] {
            assert!(!word_reads_secret(w), "{w}");
        }
    }

    /// Command lines whose output a secret store fills: every one must be read as printing a
    /// secret.
    const STORE_READS: &[&str] = &[
        // Key-value stores read by a key whose path names a secret.
        "consul kv get -stale app/prod/api_token",
        "etcdctl --endpoints=http://127.0.0.1:2379 get /config/billing/stripe_secret",
        "redis-cli -n 2 GET session:admin:token",
        // The kubeconfig with its credentials, one value printed bare.
        "kubectl config view --flatten -o go-template='{{range .users}}{{.user.password}}{{end}}'",
        // A value taken out of a credential file by a JSON/YAML query.
        "yq '.users[0].user.token' ~/.kube/config",
        "jq '.auths' /home/dev/.docker/config.json",
        // Cloud CLIs.
        "aws configure get aws_secret_access_key",
        "aws configure get profile.ci.aws_session_token",
        "aws --profile prod configure get aws_secret_access_key",
        "aws configure export-credentials --profile dev --format env",
        "aws sts get-session-token --duration-seconds 3600",
        "aws sts assume-role --role-arn arn:aws:iam::1:role/x --role-session-name s --query 'Credentials.[AccessKeyId,SecretAccessKey,SessionToken]' --output text",
        "aws codeartifact get-authorization-token --domain d --query authorizationToken --output text",
        "aws rds generate-db-auth-token --hostname db --port 5432 --username app",
        "aws ecr get-login-password --region eu-west-1",
        "aws kms decrypt --ciphertext-blob fileb://x --query Plaintext --output text",
        "aws ssm get-parameters-by-path --path /prod --with-decryption",
        "aws iam create-access-key --user-name ci",
        "aws eks get-token --cluster-name prod",
        "gcloud auth print-access-token",
        "gcloud auth application-default print-access-token",
        "gcloud secrets versions access latest --secret=db",
        "gcloud sql generate-login-token",
        "gcloud config config-helper --format=json",
        "az account get-access-token --resource https://management.azure.com",
        "az storage account keys list -g rg -n acct",
        "az storage account show-connection-string -n acct",
        "az storage container generate-sas --account-name a -n c --permissions r",
        "az acr login --name reg --expose-token",
        "az ad sp create-for-rbac --name ci",
        "doctl auth token",
        "heroku auth:token",
        "fly auth token",
        "flyctl tokens create deploy",
        "cloudflared tunnel token my-tunnel",
        "openstack token issue",
        "kubeadm token create --print-join-command",
        "docker swarm join-token worker",
        // Password managers.
        "pass show infra/db",
        "pass infra/db",
        "gopass cat web/site",
        "op read op://Private/github/token",
        "op item get github --fields password --reveal",
        "op inject -i config.tpl",
        "bw get password github",
        "bw list items --search github",
        "lpass show work/db",
        "keepassxc-cli show -s vault.kdbx github",
        "keepassxc-cli show -a Password vault.kdbx github",
        "security find-generic-password -s svc -w",
        "security find-internet-password -s git.example.com -g",
        "secret-tool lookup service smtp",
        "kwallet-query -r github kdewallet",
        "keyring get system ann",
        // Decryption to standard output.
        "gpg -d secrets.txt.gpg",
        "gpg --batch --quiet --decrypt .env.gpg",
        "gpg -qd notes.asc",
        "gpg --export-secret-keys --armor ann@example.com",
        "age -d -i key.txt secrets.age",
        "age --decrypt -i ~/.age/key.txt creds.age",
        "sops -d secrets.enc.yaml",
        "sops decrypt --extract '[\"db\"][\"password\"]' secrets.yaml",
        "ansible-vault view group_vars/all/vault.yml",
        "ansible-vault decrypt --output - vault.yml",
        "openssl enc -d -aes-256-cbc -pbkdf2 -in secrets.enc -pass file:key",
        "openssl pkeyutl -decrypt -inkey k.pem -in msg.bin",
        "openssl rand -base64 32",
        "pwgen -s 32 1",
        "wg genkey",
        "age-keygen",
        "head -c 32 /dev/urandom | base64",
        "tr -dc A-Za-z0-9 < /dev/urandom | head -c 40",
        // Framework credentials.
        "rails credentials:show",
        "bin/rails credentials:show --environment production",
        "bundle exec rails credentials:show",
        "EDITOR=cat rails credentials:edit",
        "VISUAL=cat bin/rails encrypted:edit config/ci.yml.enc",
        "rails secret",
        "bin/rails runner 'puts Rails.application.credentials.dig(:aws, :secret_access_key)'",
        "dotnet user-secrets list --project src/Api",
        "php artisan key:generate --show",
        "php artisan tinker --execute 'echo config(\"services.stripe.secret\");'",
        "php bin/console secrets:reveal DATABASE_PASSWORD",
        "symfony console secrets:list --reveal",
        "mix phx.gen.secret",
        "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'",
        "python -c \"import os; print(os.environ['STRIPE_SECRET_KEY'])\"",
        "node -e 'console.log(process.env.API_TOKEN)'",
        "python manage.py shell -c 'from django.conf import settings; print(settings.SECRET_KEY)'",
        "echo \"$(pass show infra/db)\"",
        // Infrastructure stores.
        "terraform output -raw db_password",
        "terraform output admin_pw",
        "terraform -chdir=infra output -raw kubeconfig",
        "tofu output -json db_connection_string",
        "pulumi config get dbPassword",
        "pulumi stack output --show-secrets",
        "pulumi stack output apiKey --show-secrets",
        "heroku config:get STRIPE_SECRET_KEY -a shop",
        "heroku config -a shop",
        "dokku config:get shop STRIPE_KEY",
        "netlify env:get STRIPE_SECRET",
        "firebase functions:config:get",
        "railway variables",
        "vault kv get -field=password secret/app",
        "vault read database/creds/readonly",
        "vault token create -policy=ci",
        "vault operator init",
        "vault write -f auth/approle/role/ci/secret-id",
        "chamber read shop stripe_key",
        "chamber export shop",
        "doppler secrets get STRIPE_KEY --plain",
        "doppler secrets",
        "infisical secrets get DB_PASSWORD",
        "kubectl get secret app -o jsonpath='{.data.password}'",
        "kubectl get secret/app -o yaml",
        "kubectl view-secret app password",
        "docker-credential-desktop get",
        "git credential fill",
        "git config --get github.token",
        "git config --global github.token",
        "npm config get //registry.npmjs.org/:_authToken",
        "gh auth status --show-token",
        "glab config get token",
        "mytool get-api-key --env prod",
        "./bin/print-token",
        "doppler run -- printenv STRIPE_SECRET_KEY",
        "kubectl exec -n prod deploy/api -- printenv DB_PASSWORD",
        "docker exec -it api printenv JWT_SECRET",
        "ssh prod 'pass show infra/db'",
        "fly ssh console -C 'printenv SECRET_KEY_BASE'",
        "security find-generic-password -ws smtp",
        "keepassxc-cli show -sa password vault.kdbx github",
        "op item get Stripe --field credential",
        "python3 -m keyring get smtp ann",
        "heroku authorizations:create",
        "doctl registry docker-config",
        "az ad app credential reset --id 123",
        "rails runner \"puts ENV['SECRET_KEY_BASE']\"",
        "node -e \"console.log(require('crypto').randomBytes(32).toString('hex'))\"",
        "php -r 'echo bin2hex(random_bytes(32));'",
        "dd if=/dev/urandom bs=32 count=1 | base64",
    ];

    /// Reads of stores that print no secret: listings, plain names, output to a file.
    const STORE_LOOK_ALIKES: &[&str] = &[
        "consul kv get config/app/feature_flags",
        "etcdctl get /registry/services/endpoints --prefix --keys-only",
        "redis-cli GET cache:homepage",
        "kubectl config view --minify",
        "kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}'",
        "jq .name package.json",
        "yq '.services.web.image' docker-compose.yml",
        "aws configure get region",
        "aws configure get output --profile prod",
        "aws configure get sso_start_url",
        "aws configure get default.s3.max_concurrent_requests",
        "aws configure list",
        "aws sts get-caller-identity",
        "aws sts assume-role --role-arn arn:aws:iam::1:role/x --role-session-name s --query Credentials.Expiration",
        "aws ssm get-parameter --name /app/db/host --with-decryption",
        "aws secretsmanager list-secrets",
        "aws iam list-access-keys",
        "gcloud config get-value project",
        "gcloud container clusters get-credentials prod --zone europe-west1-b",
        "az account show",
        "az aks get-credentials -g rg -n prod",
        "terraform output",
        "terraform output vpc_id",
        "terraform output -raw alb_dns_name",
        "terraform plan -out tf.plan",
        "pulumi config get aws:region",
        "pulumi stack output bucketName --show-secrets",
        "pulumi stack output",
        "heroku config:get NODE_ENV -a shop",
        "heroku config:get DATABASE_URL -a shop",
        "pass ls",
        "pass",
        "pass show -c infra/db",
        "gopass list",
        "op item list",
        "op read op://Private/github/username",
        "bw get username github",
        "bw sync",
        "lpass ls",
        "lpass show --username work/db",
        "keepassxc-cli show vault.kdbx github",
        "keepassxc-cli ls vault.kdbx",
        "security find-generic-password -s svc",
        "gpg --list-keys",
        "gpg --list-secret-keys",
        "gpg -d backup.tar.gpg -o backup.tar",
        "gpg --output notes.txt --decrypt notes.txt.gpg",
        "gpg -d backup.tar.gpg | tar xz",
        "age -d -i key.txt -o secrets.env secrets.age",
        "age-keygen -o key.txt",
        "sops -d -i secrets.yaml",
        "sops -d secrets.yaml --output plain.yaml",
        "ansible-vault encrypt vault.yml",
        "ansible-vault decrypt vault.yml",
        "openssl enc -d -aes-256-cbc -in a.enc -out a.txt -pass file:k",
        "openssl rand -hex 16 -out seed.bin",
        "openssl x509 -in cert.pem -noout -text",
        "rails credentials:edit",
        "rails db:migrate",
        "dotnet user-secrets init",
        "php artisan key:generate",
        "php artisan migrate",
        "vault kv list secret/",
        "vault kv get -field=username secret/app",
        "vault status",
        "doppler secrets --only-names",
        "kubectl get secrets",
        "kubectl get secret app",
        "kubectl describe secret app",
        "gh secret list",
        "gh auth status",
        "npm token list",
        "git config --get user.email",
        "docker-credential-desktop list",
        "aws ecr get-login-password | docker login --username AWS --password-stdin 1.dkr.ecr.eu-west-1.amazonaws.com",
        "gcloud auth print-access-token > token.txt",
        "pass show infra/db | wc -c",
        "gh auth token | gh auth login --with-token",
        "python3 -c 'print(1 + 1)'",
        "node -e 'console.log(process.env.NODE_ENV)'",
        "wg show",
        "echo \"$(date)\"",
        "uuidgen",
        "git config --get-all credential.helper",
        "doppler run -- npm start",
        "kubectl exec -n prod deploy/api -- ls /app",
        "ssh prod 'systemctl status api'",
        "wg genkey | tee privatekey | wg pubkey > publickey",
        "cargo test get_token -- --nocapture",
        "pytest -k test_get_password tests/",
        "make print-token-docs",
        "mycli run get_secret_value_test",
        // Code that names a secret but prints none of it (from the shared corpus).
        "node -e \"require('dotenv').config(); console.log('pass:', process.env.DB_PASSWORD ? '[set]' : '[missing]');\"",
        "node -e \"const pool = new Pool({ user: 'app', password: 'x' }); pool.query('SELECT 1').then(r => { console.log('OK'); });\"",
        "node -e \"const {NATIVE_MINT_2022}=require('@solana/spl-token'); console.log(NATIVE_MINT_2022.toBase58())\"",
        "python3 -c 'import os; print(len(os.environ[\"API_TOKEN\"]))'",
    ];

    #[test]
    fn what_secret_stores_print() {
        use crate::ingest::redact_shell::output_of_command;
        let mut failures = Vec::new();
        for line in STORE_READS {
            if !output_of_command(line).secret {
                failures.push(format!("not read as a secret: {line}"));
            }
        }
        for line in STORE_LOOK_ALIKES {
            if output_of_command(line).secret {
                failures.push(format!("read as a secret: {line}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
