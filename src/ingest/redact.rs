//! Secret redaction: everything ingest stores (commands, tool inputs, outputs) passes through here
//! first, so that API keys, tokens, passwords and private keys never reach the store, the miner or
//! an LLM prompt.
//!
//! A secret is replaced by `[REDACTED:<kind>]`. Where a secret sits behind a name (an assignment,
//! a flag, a header, a URL's user info), the name is kept and only the value goes, so that mining
//! still sees `export GITHUB_TOKEN=…` or `curl -H "Authorization: Bearer …"` as the same habit:
//!
//! ```text
//! export GITHUB_TOKEN=ghp_…            → export GITHUB_TOKEN=[REDACTED:github-token]
//! psql postgres://app:hunter2@db/prod  → psql postgres://app:[REDACTED:url-password]@db/prod
//! DB_PASSWORD=hunter2                  → DB_PASSWORD=[REDACTED:secret-assignment]
//! ```
//!
//! When the value behind a name is itself recognisable (a GitHub token, a JWT, a PEM block, …) the
//! placeholder names that kind rather than the generic one.
//!
//! # Kinds
//!
//! Self-identifying tokens, found anywhere by their prefix and shape:
//! `private-key` (PEM, OpenSSH, PGP blocks; also cut-short ones and ones with `\n` escapes, as
//! raw JSON text has them), `jwt`, `aws-access-key` (`AKIA`/`ASIA`), `gcp-api-key`,
//! `google-oauth` (`ya29.`, `GOCSPX-`), `github-token` (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`,
//! `github_pat_`), `gitlab-token` (`glpat-`, `gldt-`, `glrt-`), `slack-token` (`xox?-`,
//! `xapp-`), `slack-webhook`, `discord-webhook`, `stripe-key` (`sk_`/`rk_` `live`/`test`),
//! `anthropic-key` (`sk-ant-`), `openai-key` (`sk-proj-`, `sk-…T3BlbkFJ…`, and other `sk-` keys
//! that look random), `xai-key`, `groq-key`, `perplexity-key`, `nvidia-key`, `npm-token`,
//! `pypi-token`, `huggingface-token`, `sendgrid-key`, `azure-storage-key` (`AccountKey=`,
//! `SharedAccessKey=`), `digitalocean-token`, `vault-token` (`hvs.`), `dockerhub-token`.
//!
//! Rarer shapes name the kind of a value found behind a secret name (`SHOPIFY_TOKEN=shpat_…` →
//! `shopify-token`) but are not searched for on their own, to keep the prefilter fast:
//! `aws-access-key` (`ABIA`, `ACCA`), `aws-session-token`, `google-oauth` (`1//0` refresh
//! tokens), other `gitlab-token` prefixes, `huggingface-token` (`api_org_`), `twilio-key`,
//! `shopify-token`, `linear-key`, `replicate-token`, `databricks-token`, `doppler-token`,
//! `atlassian-token`, `mailgun-key`, `sentry-token`, `grafana-token`, `postman-key`,
//! `pulumi-token`, `vault-token` (`hvb.`, `hvr.`), `age-secret-key`, `tailscale-key`,
//! `terraform-token`, `telegram-bot-token`.
//!
//! Secrets found by their context: `url-password` (`scheme://user:pass@host`; user and host
//! kept), `authorization` (`Authorization:` / `Proxy-Authorization:` values; the scheme is kept),
//! `cookie` (`Cookie:` / `Set-Cookie:` values; names and attributes kept), `password-flag`
//! (`--password x`, `--password=x`, `--db-pass`, `mysql -pX`, `docker login -p X`,
//! `sshpass -p X`, `redis-cli -a X`, `mongosh -p X`, `curl -u user:X`, `openssl -passin pass:X`),
//! `secret-flag` (`--token`, `--api-key`, `--secret`, `--client-secret`, `--auth`, …),
//! `aws-secret-key` (the value of `aws_secret_access_key`, `AWS_SECRET_ACCESS_KEY`,
//! `SecretAccessKey`), and `secret-assignment` (any other `*_TOKEN=`, `*_SECRET=`, `*_KEY=`,
//! `*_PASSWORD=`, `*PASSWD=`, `export X=…`, `"api_key": "…"`, `password: …`, `token = "…"`).
//!
//! A PEM private key in base64 (kubeconfig's `client-key-data`, a Kubernetes Secret's
//! `tls.key`) is named `private-key` too.
//!
//! What only a command's shape or the rest of a session gives away (`aws configure set
//! aws_secret_access_key VALUE`, `htpasswd -b FILE USER PASS`, the output of `printenv
//! DB_PASSWORD`, a `.netrc` read with `cat`, a value seen as a secret earlier) is the business of
//! [`super::redact_shell`] and [`super::sanitize`], which add the kinds `password-file` (a
//! `.netrc` or `.pgpass` password) and `secret-output` (a line a secret-printing command
//! printed). What a file's kind or a structure's markings give away (every value of a `.env`
//! or a credentials file, a value marked `"sensitive": true`, a Kubernetes Secret's data) is
//! [`super::redact_files`]'s, with the kinds `secret-file`, `sensitive-output`,
//! `kubernetes-secret` and `prefixed-secret`. What is fed to a password prompt is
//! [`super::redact_stdin`]'s (`stdin-secret`, `prompt-answer`, `expect-send`); `secret-output`
//! also covers what a secret store prints ([`super::redact_stores`]). Every replacement reports the value it replaced ([`Found`]), so that the
//! reader can find it again.
//!
//! # What is deliberately kept
//!
//! * There is no context-free "high entropy string" rule: git SHAs, UUIDs, lock-file hashes
//!   (`sha512-…`, Cargo.lock `checksum`, go.sum `h1:…`), image digests and base64 payloads all
//!   look random and are not secrets. Randomness is only an extra gate on rules that already have
//!   a prefix or a name (e.g. `sk-` must be followed by a run with digits and mixed case, so
//!   `task-list-…` and `sk-learn-style` names survive).
//! * A name whose *last* segment is a secret word says its value is a secret (with the gates
//!   below). A secret word *inside* a name (`SECRET_KEY_BASE`, `TOKEN_SIGNING`, `secret_id`,
//!   `--client-secret-value`, `passwordHash`) says only "maybe": the value must also look like a
//!   credential — one word of 8+ characters that does not read as words, a number, a date or a
//!   version, and changes between upper case, lower case and digits three times or more (or is
//!   long and of high entropy). So `TOKEN_COUNT=5`, `TOKEN_LIMIT=4096`, `auth_mode=oauth`,
//!   `secret_name=my-app-v2`, `--password-file /p`, `--token-file`, `--password-stdin`,
//!   `max_tokens` and `input_tokens` are kept, and so are names about a secret rather than it
//!   (`private_key_id`, `token_ttl`, `secret_arn`: see `ABOUT_A_SECRET`).
//! * `*_KEY` names are redacted, except where the segment before `KEY` says that the key is not a
//!   secret: `PUBLIC_KEY`, `publishableKey`, `primary_key`, `sort_key`, `partition_key`,
//!   `cache_key`, `idempotency_key`, `routing_key`, `KMS_KEY`, `GPG_KEY` (an id; an armoured
//!   private key is caught by the PEM rule) and a few more (see `KEY_DENY`). A `*_KEY` value must
//!   also look like a key: 8+ characters with a digit, or 24+ (`STORAGE_KEY = 'todos'` and
//!   `tagKey=KSChannelID` are kept). A bare `key` (`{"key": "Enter"}`) is kept; a bare `token`,
//!   `secret` or `password` is not. Likewise a `*_TOKEN` value must be 16+ characters or mix
//!   cases or digits (`test_token = "music"` is kept); passwords and secrets have no such gate.
//! * Tokenizer and pagination tokens (`eos_token`, `pad_token`, `next_token`, `page_token`, …)
//!   are kept, as are values that are obviously not secrets: empty strings, `true`/`false`/`null`,
//!   masks (`***`), variable references (`$TOKEN`, `${X}`, `$(cmd)`, `%X%`), templates and
//!   placeholders (`{{ x }}`, `<token>`, `your_api_key_here`), paths (`/home/u/.ssh/id_rsa`,
//!   `./key.pem`), URLs (their passwords are the URL rule's business), numbers after a
//!   non-password name (`"max_token": 100`), and values that are clearly code
//!   (`token=self.token`, `api_key=get_key()`, `password: String,`, `token=Token{…}`).
//! * `password` in prose ("enter your password") has no value and is kept; after a colon, a bare
//!   value only counts when it ends the line or the quoted string (`password: hunter2` in YAML,
//!   but not `password: too short`), and `PASS: test_x` is a test verdict.
//! * `-p` is a password only for the commands that read it so (`mysql -pX` attached, `docker`/
//!   `podman`/… `login -p X`, `sshpass -p X`, `mongosh -p X`); `cargo test -p foo`, `ssh -p 22`,
//!   `mkdir -p d` and `mysql -p dbname` are kept.
//!
//! # Cost
//!
//! The rules are alternatives of one regex, but it is not run over the text: a few multi-literal
//! searches (the prefilter, `ANCHOR_GROUPS`) find the places where a match can be, and the
//! regex is tried anchored there, costing the length of the match or of the failed attempt. Text
//! with no candidate costs those literal searches (over 1 GB/s) and is returned borrowed, without
//! allocating. A test checks that the result equals that of the plain leftmost-first search of
//! the whole text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use regex::{CaptureLocations, Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde_json::Value;

/// Shared value grammar for flags and assignments: a double-quoted string (with escapes), a
/// double-quoted string escaped once or more inside a JSON string (`\"…\"`, `\\\"…\\\"`, as raw
/// JSONL has them), a single-quoted string, or a bare word up to whitespace, a quote, a backslash
/// (the start of a JSON escape such as `\n`) or a shell/URL separator.
const VALUE: &str = r#"(?P<v>"(?:[^"\\\r\n]|\\.)*"|\\(?:\\\\)*"(?:[^"\\\r\n]|\\[^"\\\r\n])*\\(?:\\\\)*"|'[^'\r\n]*'|[^\s"'\\`&;,|<>(){}\[\]]+)"#;

/// How much of a provider token must look random before it counts (on top of its prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gate {
    /// The prefix and shape are specific enough.
    None,
    /// After the first `n` bytes, at least two of upper case, lower case and digits.
    Mixed(usize),
    /// After the first `n` bytes, both a digit and a hex letter (for `prefix + hex` shapes).
    HexMixed(usize),
    /// The generic OpenAI-style `sk-…`: not glued to a word or path, and mixed-case with digits
    /// (or a 32+ lowercase hex run), so that `task-list`-like and kebab-case names survive.
    SkGeneric,
}

/// What a rule's match means and which part of it is replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handler {
    /// A self-identifying token: the `v` group if the rule has one, else the whole match.
    Token(Gate),
    /// A PEM / OpenSSH / PGP private key block, replaced whole.
    PrivateKey,
    /// `scheme://user:PASS@host`: the `v` group is the password.
    UrlPassword,
    /// `Authorization: [scheme] VALUE`: the scheme (`sch`) is kept.
    Authorization,
    /// `Cookie: a=1; b=2`: every value, not the names.
    Cookie,
    /// A command that takes a password by position (`mysql -pX`, `docker login -p X`, …); the
    /// context says what must come before the match.
    CommandPassword(Context),
    /// `--name value` / `--name=value` where the flag name ends in a secret word.
    Flag,
    /// `NAME=value`, `NAME: value`, `"name": "value"` where the name ends in a secret word.
    Assignment,
}

/// What must precede a [`Handler::CommandPassword`] match (the regex cannot look behind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Context {
    Any,
    /// `docker`, `podman`, … (`helm registry`) before `login`.
    RegistryLogin,
    /// `-passin`, `-passout` or `-pass` before `pass:` (openssl).
    OpensslPass,
}

/// One redaction rule: the kind named in the placeholder, how to handle a match, and the pattern.
/// Patterns may use the groups `v` (value), `n` (name), `s` (separator) and `sch` (scheme); the
/// strings `{VALUE}`, `{KW}` and `{KEY}` stand for [`VALUE`], [`KW`] and [`KEY`].
struct RuleDef {
    kind: &'static str,
    handler: Handler,
    /// Searched for in all text. Rules with `false` only name the kind of a value that another
    /// rule found behind a name (`VAULT_TOKEN=hvb.…` → `vault-token`): their prefixes are too
    /// rare to be worth a literal in the prefilter (see [`ANCHOR_GROUPS`]).
    scan: bool,
    pattern: &'static str,
}

/// The rules, in priority order: where two can match at the same position, the earlier wins.
/// Provider tokens come before the generic contextual rules so that e.g. `AccountKey=` is named
/// `azure-storage-key`; the contextual rules ask the provider rules about their value anyway.
const RULES: &[RuleDef] = &[
    RuleDef {
        kind: "private-key",
        handler: Handler::PrivateKey,
        scan: true,
        // With an END line: everything up to the first END (headers, base64, real newlines,
        // `\n` escapes). Without one (output cut short): the following lines that are PEM/PGP
        // headers or base64 (indented or not); prose after the block, and the line break before
        // it, are kept. Headers are tried first: `Proc` alone would pass for base64.
        pattern: r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=:,.\- \t\r\n\\()]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|(?:(?:(?:\r?\n|\\r?\\n)[ \t]*)+(?:(?-u:\b)(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\r\n\\]*|[A-Za-z0-9+/=]+))*)",
    },
    RuleDef {
        kind: "jwt",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{10}[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]{10}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "aws-access-key",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)",
    },
    RuleDef {
        kind: "aws-access-key",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)(?:ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
    },
    RuleDef {
        kind: "aws-session-token",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9/+=]{50}[A-Za-z0-9/+=]*",
    },
    RuleDef {
        kind: "gcp-api-key",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{35}[0-9A-Za-z_-]*",
    },
    RuleDef {
        kind: "google-oauth",
        handler: Handler::Token(Gate::Mixed(5)),
        scan: true,
        pattern: r"(?-u:\b)(?:ya29\.|GOCSPX-)[0-9A-Za-z_-]{20}[0-9A-Za-z_-]*",
    },
    RuleDef {
        kind: "google-oauth",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: false,
        pattern: r"(?-u:\b)1//0[0-9A-Za-z_-]{40}[0-9A-Za-z_-]*",
    },
    RuleDef {
        kind: "github-token",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36}[A-Za-z0-9]*|github_pat_[A-Za-z0-9_]{40}[A-Za-z0-9_]*)",
    },
    RuleDef {
        kind: "gitlab-token",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: true,
        pattern: r"(?-u:\b)(?:glpat|gldt|glrt)-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "gitlab-token",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: false,
        pattern: r"(?-u:\b)(?:(?:glptt|glcbt|glimt|glagent|glsoat|glffct|gloas)-|GR1348941)[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "slack-token",
        handler: Handler::Token(Gate::Mixed(5)),
        scan: true,
        pattern: r"(?-u:\b)(?:xox[abposre](?:\.xox[bp])?-[A-Za-z0-9-]{10}[A-Za-z0-9-]*|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[A-Za-z0-9]+)",
    },
    RuleDef {
        kind: "slack-webhook",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9/_-]{20}[A-Za-z0-9/_-]*)",
    },
    RuleDef {
        kind: "discord-webhook",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<v>[A-Za-z0-9_-]{30}[A-Za-z0-9_-]*)",
    },
    RuleDef {
        kind: "stripe-key",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16}|whsec_[A-Za-z0-9]{24})[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "anthropic-key",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "openai-key",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)(?:sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}[A-Za-z0-9]*)",
    },
    RuleDef {
        kind: "openai-key",
        handler: Handler::Token(Gate::SkGeneric),
        scan: true,
        pattern: r"(?-u:\b)sk-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "xai-key",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: true,
        pattern: r"(?-u:\b)xai-[A-Za-z0-9]{40}[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "groq-key",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: true,
        pattern: r"(?-u:\b)gsk_[A-Za-z0-9]{40}[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "perplexity-key",
        handler: Handler::Token(Gate::Mixed(5)),
        scan: true,
        pattern: r"(?-u:\b)pplx-[A-Za-z0-9]{40}[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "nvidia-key",
        handler: Handler::Token(Gate::Mixed(6)),
        scan: true,
        pattern: r"(?-u:\b)nvapi-[A-Za-z0-9_-]{40}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "npm-token",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: true,
        pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "pypi-token",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)pypi-AgE[A-Za-z0-9_-]{50}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "huggingface-token",
        handler: Handler::Token(Gate::Mixed(3)),
        scan: true,
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{30}[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "huggingface-token",
        handler: Handler::Token(Gate::Mixed(8)),
        scan: false,
        pattern: r"(?-u:\b)api_org_[A-Za-z0-9]{30}[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "sendgrid-key",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
    },
    RuleDef {
        kind: "twilio-key",
        handler: Handler::Token(Gate::HexMixed(2)),
        scan: false,
        pattern: r"(?-u:\b)SK[0-9a-f]{32}(?-u:\b)",
    },
    RuleDef {
        kind: "azure-storage-key",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)(?:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{20}[A-Za-z0-9+/=]*)",
    },
    RuleDef {
        kind: "digitalocean-token",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)do[por]_v1_[a-f0-9]{64}(?-u:\b)",
    },
    RuleDef {
        kind: "vault-token",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: true,
        pattern: r"(?-u:\b)hvs\.[A-Za-z0-9_-]{24}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "vault-token",
        handler: Handler::Token(Gate::Mixed(4)),
        scan: false,
        pattern: r"(?-u:\b)hv[br]\.[A-Za-z0-9_-]{24}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "dockerhub-token",
        handler: Handler::Token(Gate::None),
        scan: true,
        pattern: r"(?-u:\b)dckr_pat_[A-Za-z0-9_-]{27}[A-Za-z0-9_-]*",
    },
    RuleDef {
        kind: "shopify-token",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}(?-u:\b)",
    },
    RuleDef {
        kind: "linear-key",
        handler: Handler::Token(Gate::Mixed(8)),
        scan: false,
        pattern: r"(?-u:\b)lin_(?:api|oauth)_[A-Za-z0-9]{40}(?-u:\b)",
    },
    RuleDef {
        kind: "replicate-token",
        handler: Handler::Token(Gate::Mixed(3)),
        scan: false,
        pattern: r"(?-u:\b)r8_[A-Za-z0-9]{37}(?-u:\b)",
    },
    RuleDef {
        kind: "databricks-token",
        handler: Handler::Token(Gate::HexMixed(4)),
        scan: false,
        pattern: r"(?-u:\b)dapi[a-f0-9]{32}(?:-[0-9])?(?-u:\b)",
    },
    RuleDef {
        kind: "doppler-token",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40}[A-Za-z0-9]*",
    },
    RuleDef {
        kind: "atlassian-token",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)ATATT3[A-Za-z0-9_=-]{50}[A-Za-z0-9_=-]*",
    },
    RuleDef {
        kind: "mailgun-key",
        handler: Handler::Token(Gate::HexMixed(4)),
        scan: false,
        pattern: r"(?-u:\b)key-[0-9a-f]{32}(?-u:\b)",
    },
    RuleDef {
        kind: "sentry-token",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)sntr[ysu]_[A-Za-z0-9+/=_-]{40}[A-Za-z0-9+/=_-]*",
    },
    RuleDef {
        kind: "grafana-token",
        handler: Handler::Token(Gate::Mixed(5)),
        scan: false,
        pattern: r"(?-u:\b)(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}(?-u:\b)|glc_[A-Za-z0-9+/=]{32}[A-Za-z0-9+/=]*)",
    },
    RuleDef {
        kind: "postman-key",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)PMAK-[a-f0-9]{24}-[a-f0-9]{34}(?-u:\b)",
    },
    RuleDef {
        kind: "pulumi-token",
        handler: Handler::Token(Gate::HexMixed(4)),
        scan: false,
        pattern: r"(?-u:\b)pul-[a-f0-9]{40}(?-u:\b)",
    },
    RuleDef {
        kind: "age-secret-key",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}(?-u:\b)",
    },
    RuleDef {
        kind: "tailscale-key",
        handler: Handler::Token(Gate::Mixed(6)),
        scan: false,
        pattern: r"(?-u:\b)tskey-[a-z]+-[A-Za-z0-9]{10}[A-Za-z0-9-]*",
    },
    RuleDef {
        kind: "terraform-token",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60}[A-Za-z0-9_=-]*",
    },
    RuleDef {
        kind: "telegram-bot-token",
        handler: Handler::Token(Gate::None),
        scan: false,
        pattern: r"(?-u:\b)[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?-u:\b)",
    },
    RuleDef {
        kind: "url-password",
        handler: Handler::UrlPassword,
        scan: true,
        // The password may contain a raw `@`: greedy, so the last `@` before the host wins.
        pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://(?P<n>[^\s:/?#@"'<>\\]*):(?P<v>[^\s/?#"'<>\\]+)@[A-Za-z0-9\[]"#,
    },
    RuleDef {
        kind: "authorization",
        handler: Handler::Authorization,
        scan: true,
        pattern: r#"(?-u:\b)(?:[Pp]roxy-|PROXY-)?(?:[Aa]uthorization|AUTHORIZATION)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?(?:(?P<sch>(?i-u:bearer|basic|token|digest|negotiate|ntlm|apikey|api-key|key|jwt|dpop|hmac|sso-key|bot|aws4-hmac-sha256|gtoken|oauth))[ \t]+)?(?P<v>[A-Za-z0-9._~+/=:-]+)"#,
    },
    RuleDef {
        kind: "cookie",
        handler: Handler::Cookie,
        scan: true,
        pattern: r#"(?-u:\b)(?:[Ss]et-|SET-)?(?:[Cc]ookie|COOKIE)(?:\\?["'])?[ \t]*:[ \t]*(?:\\?["'])?(?P<v>[A-Za-z0-9_.!#$%&*+^`|~-]+=[^\r\n"'\\]*)"#,
    },
    RuleDef {
        kind: "password-flag",
        handler: Handler::CommandPassword(Context::Any),
        scan: true,
        // mysql and friends read `-pSECRET` (attached only: `-p dbname` prompts and names a db).
        pattern: r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)(?:[ \t]+[^ \t\r\n|;&]+)*?[ \t]+-p(?P<v>"[^"\r\n]*"|'[^'\r\n]*'|[^ \t\r\n"'\\|;&]+)"#,
    },
    RuleDef {
        kind: "password-flag",
        handler: Handler::CommandPassword(Context::RegistryLogin),
        scan: true,
        pattern: r"(?-u:\b)login(?:[ \t]+[^ \t\r\n|;&]+)*?[ \t]+-p[ \t]+{VALUE}",
    },
    RuleDef {
        kind: "password-flag",
        handler: Handler::CommandPassword(Context::Any),
        scan: true,
        pattern: r"(?-u:\b)(?:sshpass[ \t]+-p[ \t]*|redis-cli(?:[ \t]+[^ \t\r\n|;&]+)*?[ \t]+-a[ \t]+|mongo(?:sh|dump|restore|export|import)?(?:[ \t]+[^ \t\r\n|;&]+)*?[ \t]+-p[ \t]+){VALUE}",
    },
    RuleDef {
        kind: "password-flag",
        handler: Handler::CommandPassword(Context::OpensslPass),
        scan: true,
        pattern: r"(?-u:\b)pass:{VALUE}",
    },
    RuleDef {
        kind: "password-flag",
        handler: Handler::CommandPassword(Context::Any),
        scan: true,
        pattern: r#"(?-u:\b)curl(?:[ \t]+[^ \t\r\n|;&]+)*?[ \t]+(?:-u|--user)(?:[ \t]+|=)["']?(?P<n>[^:\s"'\\]*):(?P<v>[^\s"'\\]+)"#,
    },
    RuleDef {
        kind: "secret-flag",
        handler: Handler::Flag,
        scan: true,
        // The secret word may be followed by more of the name (`--secret-id`): the value must
        // then look like a credential (see `inner_secret_word`).
        pattern: r"(?P<n>--?(?:[A-Za-z0-9]+[-_])*[A-Za-z0-9]*(?:{KW}|{KEY})(?:[-_][A-Za-z0-9]+)*)(?P<s>=|[ \t]+){VALUE}",
    },
    RuleDef {
        kind: "secret-assignment",
        handler: Handler::Assignment,
        scan: true,
        // A bare `key` is too common (`{"key": "Enter"}`) to count, so `key` needs a prefix.
        // The name may go on after the secret word (`SECRET_KEY_BASE`, `tokenSigning`): see
        // `inner_secret_word`.
        pattern: r#"(?P<n>(?:[A-Za-z0-9_.-]*{KW}|[A-Za-z0-9_.-]+{KEY})(?:(?:[_.-]|[A-Z])[A-Za-z0-9_.-]*)?)(?:\\?["'])?[ \t]*(?P<s>:=|=>|=|:)[ \t]*{VALUE}"#,
    },
];

/// The secret words of flag and assignment names, spelt in exactly the case variants the
/// prefilter's [`ANCHOR_GROUPS`] look for (lower, Capitalised, UPPER), so that the prefilter never
/// skips a line a rule would match.
const KW: &str = r"(?:(?:pass|Pass|PASS)(?i-u:word|wd|phrase)?|pwd|Pwd|PWD|[Tt]oken|TOKEN|[Ss]ecret|SECRET|auth|Auth|AUTH|[Cc]redentials?|CREDENTIALS?)";

/// `key` as the last word of a name (never bare; see the assignment rule), or before `-data`
/// (kubeconfig's `client-key-data`, a base64 private key).
const KEY: &str = r"(?:key|Key|KEY)(?:-data)?";

/// Group indices of one scanning rule inside the combined regex.
#[derive(Clone, Copy, Debug)]
struct Groups {
    /// Index into [`RULES`].
    rule: usize,
    whole: usize,
    v: Option<usize>,
    n: Option<usize>,
    s: Option<usize>,
    sch: Option<usize>,
}

/// One replacement decided for a match.
struct Edit {
    start: usize,
    end: usize,
    replacement: String,
    /// The secrets it replaces.
    found: Vec<Found>,
}

/// A secret that was replaced: its value as it stood in the text, and the kind its placeholder
/// names. The reader remembers these to find the same value again later in a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The secret.
    pub value: String,
    /// The kind, as in `[REDACTED:<kind>]`.
    pub kind: &'static str,
}

/// When a literal found by the prefilter is worth trying the rules around.
#[derive(Clone, Copy, Debug)]
enum Anchor {
    /// Always.
    Plain,
    /// When it starts a word (the rules put `\b` before it).
    WordStart,
    /// A secret word of a flag or assignment name: when `pre` (if not empty) holds the byte
    /// before it and, after one of `suffixes` (ASCII case-insensitive), comes what a rule needs
    /// there: a `=`/`:` separator (after an optional quote), or a flag's `=`/blank with a `-`
    /// earlier in the name. A suffix in `accept` is enough by itself (`auth` + `orization`).
    Word {
        pre: &'static [u8],
        suffixes: &'static [&'static str],
        accept: &'static [&'static str],
    },
}

const PASS_SUFFIXES: &[&str] = &["word", "wd", "phrase", ""];
const NO_SUFFIX: &[&str] = &[""];
const KEY_SUFFIXES: &[&str] = &["", "-data"];
const fn word(pre: &'static [u8], suffixes: &'static [&'static str]) -> Anchor {
    Anchor::Word {
        pre,
        suffixes,
        accept: &[],
    }
}

/// The prefilter: literals at least one of which every scanning rule's match contains, each with
/// a cheap check of its surroundings; only next to an accepted literal is the big regex tried
/// (see [`Redactor::redact_counted`]).
///
/// The literals are split into small groups, one multi-literal (Teddy) search each: one search
/// over all of them is several times slower than these few, since its buckets collide. Rarer
/// providers are recognised only as values behind a name (`scan: false` rules) to keep the
/// groups small.
const ANCHOR_GROUPS: &[&[(&str, Anchor)]] = &[
    // Secret words: lower, Capitalised and UPPER case, as the `KW`/`KEY` fragments spell them.
    &[
        ("pass", word(&[], PASS_SUFFIXES)),
        ("Pass", word(&[], PASS_SUFFIXES)),
        ("PASS", word(&[], PASS_SUFFIXES)),
        ("pwd", word(&[], NO_SUFFIX)),
        ("Pwd", word(&[], NO_SUFFIX)),
        ("PWD", word(&[], NO_SUFFIX)),
        ("oken", word(b"tT", NO_SUFFIX)),
        ("OKEN", word(b"T", NO_SUFFIX)),
        ("ecret", word(b"sS", NO_SUFFIX)),
        ("ECRET", word(b"S", NO_SUFFIX)),
    ],
    &[
        ("redential", word(b"cC", &["s", ""])),
        ("REDENTIAL", word(b"C", &["s", ""])),
        ("key", word(&[], KEY_SUFFIXES)),
        ("Key", word(&[], KEY_SUFFIXES)),
        ("KEY", word(&[], KEY_SUFFIXES)),
        ("ookie", word(b"cC", NO_SUFFIX)),
        ("OOKIE", word(b"C", NO_SUFFIX)),
        ("auth", AUTH),
        ("Auth", AUTH),
        ("AUTH", AUTH),
    ],
    // Structure, and commands that take a password by position.
    &[
        ("-----BEGIN", Anchor::Plain),
        ("://", Anchor::Plain),
        ("eyJ", Anchor::WordStart),
        ("mysql", Anchor::Plain),
        ("mariadb", Anchor::Plain),
        ("mongo", Anchor::Plain),
        ("sshpass", Anchor::Plain),
        ("redis-cli", Anchor::Plain),
        ("login", Anchor::WordStart),
        ("curl", Anchor::WordStart),
    ],
    // Provider prefixes.
    &[
        ("AKIA", Anchor::WordStart),
        ("ASIA", Anchor::WordStart),
        ("AIza", Anchor::WordStart),
        ("ya29.", Anchor::WordStart),
        ("GOCSPX-", Anchor::WordStart),
        ("ghp_", Anchor::WordStart),
        ("gho_", Anchor::WordStart),
        ("ghu_", Anchor::WordStart),
        ("ghs_", Anchor::WordStart),
        ("ghr_", Anchor::WordStart),
        ("github_pat_", Anchor::WordStart),
        ("glpat-", Anchor::WordStart),
        ("gldt-", Anchor::WordStart),
        ("glrt-", Anchor::WordStart),
        ("xox", Anchor::WordStart),
        ("xapp-", Anchor::WordStart),
    ],
    &[
        ("hooks.slack.com", Anchor::Plain),
        ("discord", Anchor::Plain),
        ("k_live_", Anchor::Plain),
        ("k_test_", Anchor::Plain),
        ("whsec_", Anchor::WordStart),
        ("sk-", Anchor::WordStart),
        ("xai-", Anchor::WordStart),
        ("gsk_", Anchor::WordStart),
        ("pplx-", Anchor::WordStart),
        ("nvapi-", Anchor::WordStart),
        ("npm_", Anchor::WordStart),
        ("pypi-AgE", Anchor::WordStart),
        ("hf_", Anchor::WordStart),
        ("SG.", Anchor::WordStart),
        ("_v1_", Anchor::Plain),
        ("hvs.", Anchor::WordStart),
        ("dckr_pat_", Anchor::WordStart),
    ],
];

/// `auth`: an `Authorization` header, or a name ending in `auth`.
const AUTH: Anchor = Anchor::Word {
    pre: &[],
    suffixes: NO_SUFFIX,
    accept: &["orization"],
};

/// Whether the prefilter literal `start..end` in `text` is a candidate (see [`Anchor`]).
fn anchor_ok(anchor: Anchor, text: &[u8], start: usize, end: usize) -> bool {
    let before = start.checked_sub(1).map(|i| text[i]);
    match anchor {
        Anchor::Plain => true,
        Anchor::WordStart => !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_'),
        Anchor::Word {
            pre,
            suffixes,
            accept,
        } => {
            if !pre.is_empty() && !before.is_some_and(|b| pre.contains(&b)) {
                return false;
            }
            let has_suffix = |suffix: &str| {
                text.get(end..end + suffix.len())
                    .is_some_and(|t| t.eq_ignore_ascii_case(suffix.as_bytes()))
            };
            if accept.iter().any(|s| has_suffix(s)) {
                return true;
            }
            suffixes.iter().any(|s| {
                has_suffix(s) && {
                    let e = end + s.len();
                    let go_on = name_goes_on(text, e);
                    separator_follows(text, e)
                        || flag_value_follows(text, start, e)
                        || (go_on > e
                            && (separator_follows(text, go_on)
                                || flag_value_follows(text, start, go_on))
                            && value_may_be_credential(text, go_on))
                }
            })
        }
    }
}

/// Where a name that goes on after a secret word at `i` ends (`SECRET|_KEY_BASE=`,
/// `token|Signing:`): after a `_`, `.`, `-` or upper-case letter, the run of name characters
/// (at most [`MAX_BACK`] bytes); `i` itself when the name does not go on.
fn name_goes_on(text: &[u8], i: usize) -> usize {
    if !matches!(text.get(i), Some(b'_' | b'.' | b'-' | b'A'..=b'Z')) {
        return i;
    }
    let mut j = i;
    while j < text.len() && j - i < MAX_BACK && is_back(text[j]) && text[j] != b'+' {
        j += 1;
    }
    j
}

/// Whether the value after a name ending at `i` is long enough to look like a credential. A
/// secret word inside a name (`TOKEN_SIGNING=`) makes its value a secret only when the value
/// looks like one ([`credential_shaped`]: 8 characters or more, no blank), and code is full of
/// `token_count = 0` and `secret_name: "db"`: those are not tried. A superset of
/// [`credential_shaped`]'s length test (a run up to a blank or a quote).
fn value_may_be_credential(text: &[u8], i: usize) -> bool {
    let mut j = i;
    while j < text.len() && matches!(text[j], b'\\' | b'"' | b'\'' | b' ' | b'\t' | b':' | b'=') {
        j += 1;
    }
    let run = text[j..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\''))
        .count();
    run >= 8
}

/// `(?:\\?["'])?[ \t]*[:=]` at `i` (a superset: the backslash may come without a quote).
fn separator_follows(text: &[u8], mut i: usize) -> bool {
    if text.get(i) == Some(&b'\\') {
        i += 1;
    }
    if matches!(text.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    while matches!(text.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    matches!(text.get(i), Some(b':' | b'='))
}

/// A flag's value separator at `end`, and a `-` in the name run before `start`.
fn flag_value_follows(text: &[u8], start: usize, end: usize) -> bool {
    matches!(text.get(end), Some(b'=' | b' ' | b'\t'))
        && text[..start]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
            .any(|b| *b == b'-')
}

/// The redaction engine: the scanning rules compiled once into one anchored leftmost-first
/// regex, a literal prefilter that says where to try it, and an anchored set of the
/// provider-token rules used to name the kind of a value found by context.
///
/// Build it once and share it (it is `Send + Sync`); [`redact`] uses a process-wide instance.
#[derive(Debug)]
pub struct Redactor {
    /// `^(?s:.)(?:rule|rule|…)`: all scanning rules, tried at one position, with the character
    /// before it as context so that `\b` sees the real text.
    at: Regex,
    /// `^(?:rule|rule|…)`, for position 0.
    at_start: Regex,
    groups: Vec<Groups>,
    /// One multi-literal regex per group of [`ANCHOR_GROUPS`].
    prefilters: Vec<Regex>,
    /// All the literals in one regex: one call instead of one per group, which is quicker for
    /// short texts (most strings in a log), where the cost of a call outweighs that of a byte.
    any_literal: Regex,
    /// `^(?:pattern)$` of each self-identifying token rule, for [`Redactor::value_kind`].
    token_set: RegexSet,
    /// Rule index of each pattern in `token_set`.
    token_rules: Vec<usize>,
    /// The secrets seen in each file up to where its last read ended, in this process only,
    /// so that the tailer's next round over a growing file need not read it again to find them
    /// (see [`super::sanitize`]).
    pub(super) resumes: std::sync::Mutex<super::sanitize::Resumes>,
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new()
    }
}

/// The process-wide redactor behind [`redact`].
static SHARED: LazyLock<Redactor> = LazyLock::new(Redactor::new);

/// Redacts secrets in `text` with a shared [`Redactor`]; see [`Redactor::redact`].
pub fn redact(text: &str) -> Cow<'_, str> {
    SHARED.redact(text)
}

fn rule_pattern(rule: &RuleDef) -> String {
    rule.pattern
        .replace("{VALUE}", VALUE)
        .replace("{KW}", KW)
        .replace("{KEY}", KEY)
}

/// The alternation of all scanning rules, each in a group `r_<index>` with its inner groups
/// renamed `v_<index>`, … so that one set of captures says which rule matched and where.
fn combined_pattern() -> String {
    let mut combined = String::new();
    for (i, rule) in RULES.iter().enumerate().filter(|(_, r)| r.scan) {
        if !combined.is_empty() {
            combined.push('|');
        }
        let mut pat = rule_pattern(rule);
        for g in ["v", "n", "s", "sch"] {
            pat = pat.replace(&format!("(?P<{g}>"), &format!("(?P<{g}_{i}>"));
        }
        combined.push_str(&format!("(?P<r_{i}>{pat})"));
    }
    combined
}

fn build_big(pattern: &str) -> Result<Regex, regex::Error> {
    // The combined automaton is big; give the lazy DFA room so that it does not thrash and fall
    // back to the slower engines.
    RegexBuilder::new(pattern)
        .size_limit(64 << 20)
        .dfa_size_limit(16 << 20)
        .build()
}

/// Captures of one match, as positions in the whole text.
struct Spans<'l> {
    locs: &'l CaptureLocations,
    base: usize,
}

impl Spans<'_> {
    fn get(&self, group: Option<usize>) -> Option<(usize, usize)> {
        let (a, b) = self.locs.get(group?)?;
        Some((a + self.base, b + self.base))
    }
}

/// Where each prefilter group stands: its next literal at or after the position it was searched
/// from, or nothing left.
#[derive(Clone, Copy)]
enum Cursor {
    Unsearched,
    At(usize, usize),
    Done,
}

/// Texts up to this length are first checked for any literal with one search.
const SHORT_TEXT: usize = 1024;

/// Backing over a name or scheme stops after this many bytes (see [`Redactor::redact_counted`]).
const MAX_BACK: usize = 256;

/// Characters that can stand between the start of a match and its first anchor literal: name,
/// flag and scheme characters.
fn is_back(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-')
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Redactor {
    /// Compiles the rules. This takes a few milliseconds; hold on to the result.
    ///
    /// The patterns are constants of this module (a unit test compiles each of them), so a failure
    /// here is a bug in this file, not a condition of the input.
    // The patterns are constants (see above): `expect` cannot fail on any input.
    #[allow(clippy::expect_used)]
    pub fn new() -> Self {
        Self::try_new().expect("built-in redaction patterns compile")
    }

    fn try_new() -> Result<Self, regex::Error> {
        let combined = combined_pattern();
        let at = build_big(&format!("^(?s:.)(?:{combined})"))?;
        let at_start = build_big(&format!("^(?:{combined})"))?;
        let groups = rule_groups(&at)?;
        let alternation = |group: &[(&str, Anchor)]| {
            group
                .iter()
                .map(|(lit, _)| regex::escape(lit))
                .collect::<Vec<_>>()
                .join("|")
        };
        let prefilters = ANCHOR_GROUPS
            .iter()
            .map(|group| Regex::new(&alternation(group)))
            .collect::<Result<Vec<_>, _>>()?;
        let all: Vec<(&str, Anchor)> = ANCHOR_GROUPS
            .iter()
            .flat_map(|g| g.iter().copied())
            .collect();
        let any_literal = Regex::new(&alternation(&all))?;
        let mut token_patterns = Vec::new();
        let mut token_rules = Vec::new();
        for (i, rule) in RULES.iter().enumerate() {
            if matches!(rule.handler, Handler::Token(_)) && !rule.pattern.contains("(?P<v>") {
                token_patterns.push(format!("^(?:{})$", rule.pattern));
                token_rules.push(i);
            }
        }
        let token_set = RegexSetBuilder::new(&token_patterns)
            .size_limit(64 << 20)
            .build()?;
        Ok(Self {
            at,
            at_start,
            groups,
            prefilters,
            any_literal,
            token_set,
            token_rules,
            resumes: Default::default(),
        })
    }

    /// Returns `text` with every secret replaced by `[REDACTED:<kind>]`, borrowed when nothing was
    /// found (the common case, which costs a few literal searches and no allocation).
    ///
    /// Redacting an already redacted text changes nothing.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_counted(text).0
    }

    /// Like [`Redactor::redact`], also returning how many secrets were replaced.
    pub fn redact_counted<'a>(&self, text: &'a str) -> (Cow<'a, str>, usize) {
        let (out, found) = self.redact_found(text);
        (out, found.len())
    }

    /// Like [`Redactor::redact`], also returning the secrets replaced (no allocation when there
    /// is none).
    pub fn redact_found<'a>(&self, text: &'a str) -> (Cow<'a, str>, Vec<Found>) {
        // The result is that of searching the whole text leftmost-first with the alternation of
        // all rules (`redact_unfiltered`, which a test compares against), but the big regex only
        // runs where a match can start:
        //
        // * Every match contains an anchor literal that passes its check ([`ANCHOR_GROUPS`]), and
        //   between the match's start and its first such literal there are only name, flag or
        //   scheme characters ([`is_back`]). So the next match, if any, starts in the run of those
        //   characters just before the next accepted literal, at its first position or at a
        //   position after a separator or a word boundary (a rule that can start inside a word
        //   can start at the beginning of it too: the name classes are closed over the run).
        // * There the regex is run anchored, which costs the length of the match (or of the
        //   failed attempt), not of the rest of the text.
        //
        // A run longer than `MAX_BACK` is entered at that distance: the match then starts there,
        // inside the name, and redacts the same value.
        if text.len() <= SHORT_TEXT && !self.any_literal.is_match(text) {
            return (Cow::Borrowed(text), Vec::new());
        }
        let bytes = text.as_bytes();
        let mut out = Scan::new(text);
        let mut cursors = [Cursor::Unsearched; ANCHOR_GROUPS.len()];
        let mut locs: Option<CaptureLocations> = None;
        let mut pos = 0; // no match starts before this (other than those already applied)
        let mut look = 0; // where the next anchor literal is looked for
        'anchors: while let Some(lit_start) = self.next_anchor(text, look, &mut cursors) {
            let floor = pos.max(lit_start.saturating_sub(MAX_BACK));
            let mut w = lit_start;
            while w > floor && is_back(bytes[w - 1]) {
                w -= 1;
            }
            let locs = locs.get_or_insert_with(|| self.at.capture_locations());
            for p in w..=lit_start {
                let candidate = p == w
                    || p == lit_start
                    || matches!(bytes[p - 1], b'-' | b'+' | b'.' | b'_')
                    || is_word(bytes[p - 1]) != is_word(bytes[p]);
                if !candidate {
                    continue;
                }
                let Some((g, spans)) = self.try_at(text, p, locs) else {
                    continue;
                };
                let Some((start, end)) = spans.get(Some(g.whole)) else {
                    continue;
                };
                match self.decide(g, &spans, text, start, end) {
                    Some(edit) => {
                        // Go on right after the replaced part: the rest of the match (a URL's
                        // host, a closing quote) may begin another secret.
                        pos = edit.end;
                        look = pos;
                        out.apply(edit);
                    }
                    None => {
                        // Not a secret after all: go on from its value, so that a token inside
                        // a rejected value (`TOKEN=$(echo ghp_…)`) is still found; the same
                        // literal is taken again if that is before it.
                        pos = self.reject(g, &spans, text, (start, end), &mut out);
                        look = look.max(pos);
                    }
                }
                continue 'anchors;
            }
            // No match starts in the run before this literal, nor at it.
            pos = next_char(text, lit_start);
            look = pos;
        }
        out.finish()
    }

    /// The start of the next anchor literal at or after `look` that passes its check.
    fn next_anchor(&self, text: &str, mut look: usize, cursors: &mut [Cursor]) -> Option<usize> {
        let bytes = text.as_bytes();
        loop {
            let mut best: Option<(usize, usize, usize)> = None; // (start, end, group)
            for (gi, cursor) in cursors.iter_mut().enumerate() {
                // `look` never decreases, so a literal found from an earlier position is still
                // the first one unless it lies before `look`, and `Done` stays done.
                let stale = match *cursor {
                    Cursor::Unsearched => true,
                    Cursor::At(s, _) => s < look,
                    Cursor::Done => false,
                };
                if stale {
                    *cursor = match self.prefilters[gi].find_at(text, look) {
                        Some(m) => Cursor::At(m.start(), m.end()),
                        None => Cursor::Done,
                    };
                }
                if let Cursor::At(s, e) = *cursor
                    && best.is_none_or(|(bs, _, _)| s < bs)
                {
                    best = Some((s, e, gi));
                }
            }
            let (s, e, gi) = best?;
            let anchor = ANCHOR_GROUPS[gi]
                .iter()
                .find(|(l, _)| l.as_bytes() == &bytes[s..e])
                .map_or(Anchor::Plain, |(_, a)| *a);
            if anchor_ok(anchor, bytes, s, e) {
                return Some(s);
            }
            look = next_char(text, s);
        }
    }

    /// The match of the scanning rules that starts exactly at `p`, if any.
    fn try_at<'l>(
        &self,
        text: &str,
        p: usize,
        locs: &'l mut CaptureLocations,
    ) -> Option<(&Groups, Spans<'l>)> {
        let (re, base) = match text[..p].chars().next_back() {
            None => (&self.at_start, 0),
            Some(prev) => (&self.at, p - prev.len_utf8()),
        };
        let hay = &text[base..];
        // Find the end with the lazy DFA first (anchored, so it stops where the match or the
        // attempt does), then resolve the groups on that span plus one character of look-ahead
        // context: the capture engines cost in proportion to their haystack, which here would
        // otherwise be the rest of the text, for every attempt.
        let end = re.find(hay)?.end();
        let limit = next_char(hay, end);
        re.captures_read(locs, &hay[..limit])?;
        if locs.get(0).map(|(_, e)| e) != Some(end) {
            // The cut changed a look-around: resolve on the whole text (never seen in practice).
            re.captures_read(locs, hay)?;
        }
        let locs: &'l CaptureLocations = locs;
        let g = self.groups.iter().find(|g| locs.get(g.whole).is_some())?;
        Some((g, Spans { locs, base }))
    }

    /// Where the search goes on after a rejected match: at its value (a secret may hide inside a
    /// value that as a whole is not one), else at its second character. The part passed over
    /// (a name, a command's other arguments, a URL's user) is redacted on its own:
    /// `curl -H "Authorization: Bearer …" -u user:$PASS` must still lose the bearer token.
    ///
    /// A match that holds or touches a placeholder is passed over whole, as the earlier pass that
    /// made the placeholder did (it went on after its edit): looking inside it again could find
    /// matches that the placeholder, standing where a separator was, lets run on.
    fn reject(
        &self,
        g: &Groups,
        spans: &Spans<'_>,
        text: &str,
        (start, end): (usize, usize),
        out: &mut Scan<'_>,
    ) -> usize {
        if touches_placeholder(text, start, end) {
            return end;
        }
        let next = next_char(text, start);
        let Some((value_start, _)) = spans.get(g.v).filter(|&(s, _)| s > next) else {
            return next;
        };
        let (skipped, found) = self.redact_found(&text[start..value_start]);
        if let Cow::Owned(replacement) = skipped {
            out.apply(Edit {
                start,
                end: value_start,
                replacement,
                found,
            });
        }
        value_start
    }

    /// The same redaction without the prefilter: `re` (the unanchored alternation of all rules)
    /// searched over the whole text. Slower; kept to check that the prefilter changes nothing.
    #[cfg(test)]
    fn redact_unfiltered<'a>(&self, re: &Regex, text: &'a str) -> (Cow<'a, str>, usize) {
        let (out, found) = self.redact_unfiltered_found(re, text);
        (out, found.len())
    }

    #[cfg(test)]
    fn redact_unfiltered_found<'a>(&self, re: &Regex, text: &'a str) -> (Cow<'a, str>, Vec<Found>) {
        let mut out = Scan::new(text);
        let mut locs = re.capture_locations();
        let mut pos = 0;
        while pos < text.len() {
            if re.captures_read_at(&mut locs, text, pos).is_none() {
                break;
            }
            let Some(g) = self.groups.iter().find(|g| locs.get(g.whole).is_some()) else {
                break;
            };
            let spans = Spans {
                locs: &locs,
                base: 0,
            };
            let Some((start, end)) = spans.get(Some(g.whole)) else {
                break;
            };
            match self.decide(g, &spans, text, start, end) {
                Some(edit) => {
                    pos = edit.end;
                    out.apply(edit);
                }
                None => pos = self.reject(g, &spans, text, (start, end), &mut out),
            }
        }
        out.finish()
    }

    /// Redacts every string inside `value` in place; object keys are kept.
    ///
    /// An object member whose key is a secret name (`"api_key"`, `"GITHUB_TOKEN"`,
    /// `"password"`, `"Authorization"`, `"Cookie"`, …) has its string value replaced as a whole,
    /// since the key that gives it away is not part of the string. Numbers and booleans are kept.
    pub fn redact_json(&self, value: &mut Value) {
        self.redact_json_counted(value);
    }

    /// Like [`Redactor::redact_json`], returning how many secrets were replaced.
    pub fn redact_json_counted(&self, value: &mut Value) -> usize {
        let mut found = Vec::new();
        self.redact_json_found(value, &mut found);
        found.len()
    }

    /// Like [`Redactor::redact_json`], adding the secrets replaced to `found`.
    pub fn redact_json_found(&self, value: &mut Value, found: &mut Vec<Found>) {
        match value {
            Value::String(s) => self.redact_string_in_place(s, found),
            Value::Array(items) => {
                for v in items {
                    self.redact_json_found(v, found);
                }
            }
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if let Value::String(s) = v
                        && self.redact_keyed(key, s, found)
                    {
                        continue;
                    }
                    self.redact_json_found(v, found);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn redact_string_in_place(&self, s: &mut String, found: &mut Vec<Found>) {
        let (r, f) = self.redact_found(s);
        if let Cow::Owned(o) = r {
            *s = o;
        }
        found.extend(f);
    }

    /// Redacts the value of a JSON member named `key` because of its key; false when the key
    /// says nothing and the string is to be scanned as text.
    fn redact_keyed(&self, key: &str, s: &mut String, found: &mut Vec<Found>) -> bool {
        if key.eq_ignore_ascii_case("authorization")
            || key.eq_ignore_ascii_case("proxy-authorization")
        {
            let (scheme, rest) = match s.split_once(' ') {
                Some((a, b)) if is_auth_scheme(a) => (Some(a), b.trim_start()),
                _ => (None, s.as_str()),
            };
            if rest.is_empty() || is_placeholder(rest, Quote::Json) || is_mask(rest) {
                return true;
            }
            let kind = self.value_kind(rest).unwrap_or("authorization");
            found.push(Found {
                value: rest.to_owned(),
                kind,
            });
            *s = match scheme {
                Some(scheme) => format!("{scheme} {}", placeholder(kind)),
                None => placeholder(kind),
            };
            return true;
        }
        if key.eq_ignore_ascii_case("cookie") || key.eq_ignore_ascii_case("set-cookie") {
            let (replacement, f) = self.redact_cookie_pairs(s);
            *s = replacement;
            found.extend(f);
            return true;
        }
        let Some((kw, inner)) = name_secret(key, false) else {
            return false;
        };
        let cx = ValueCtx {
            name_has_lower: key_has_lower(key),
            ..ValueCtx::plain(kw, Quote::Json)
        };
        let Some((a, b)) = secret_span(s, cx) else {
            return false;
        };
        if inner && !credential_shaped(&s[a..b]) {
            return false;
        }
        let kind = self.value_kind(&s[a..b]).unwrap_or_else(|| name_kind(key));
        found.push(Found {
            value: s[a..b].to_owned(),
            kind,
        });
        *s = placeholder(kind);
        true
    }

    /// Redacts the values of `name=value` pairs of a cookie header value (except
    /// [`plain_cookie`]s), keeping names and the
    /// cookie attributes (`Path`, `Expires`, …).
    fn redact_cookie_pairs(&self, header: &str) -> (String, Vec<Found>) {
        const ATTRS: &[&str] = &[
            "path",
            "domain",
            "expires",
            "max-age",
            "samesite",
            "secure",
            "httponly",
            "partitioned",
            "priority",
            "version",
            "comment",
        ];
        let mut out = String::with_capacity(header.len());
        let mut found = Vec::new();
        for (i, part) in header.split(';').enumerate() {
            if i > 0 {
                out.push(';');
            }
            match part.split_once('=') {
                Some((name, value))
                    if !ATTRS.iter().any(|a| a.eq_ignore_ascii_case(name.trim()))
                        && !value.trim().is_empty()
                        && !is_placeholder(value.trim(), Quote::None)
                        && !is_mask(value.trim())
                        && !plain_cookie(name.trim(), value.trim()) =>
                {
                    let (name, f) = self.redact_found(name);
                    found.extend(f);
                    out.push_str(&name);
                    out.push('=');
                    let kind = self.value_kind(value.trim()).unwrap_or("cookie");
                    out.push_str(&placeholder(kind));
                    found.push(Found {
                        value: value.trim().to_owned(),
                        kind,
                    });
                }
                _ => {
                    // Names and attributes are passed over by the search; scan them here.
                    let (part, f) = self.redact_found(part);
                    out.push_str(&part);
                    found.extend(f);
                }
            }
        }
        (out, found)
    }

    /// The provider kind of a whole value (`ghp_…` → `github-token`, PEM → `private-key`), if it is
    /// one of the self-identifying shapes.
    pub(super) fn value_kind(&self, value: &str) -> Option<&'static str> {
        if value.contains("-----BEGIN") && value.contains("PRIVATE KEY") {
            return Some("private-key");
        }
        if value.starts_with("LS0tLS1CRUdJTi") && base64_head(value).contains("PRIVATE KEY") {
            return Some("private-key"); // a PEM private key in base64 (kubeconfig, Secrets)
        }
        for i in self.token_set.matches(value).iter() {
            let rule = &RULES[self.token_rules[i]];
            if let Handler::Token(gate) = rule.handler
                && gate_ok(gate, value, None)
            {
                return Some(rule.kind);
            }
        }
        None
    }

    /// Decides what a match of a rule (`g`) at `start..end` replaces, if anything.
    fn decide(
        &self,
        g: &Groups,
        spans: &Spans<'_>,
        text: &str,
        start: usize,
        end: usize,
    ) -> Option<Edit> {
        // A match that holds or touches a placeholder is one that an earlier pass did not take,
        // or took part of: the placeholder changed its context (`https://[REDACTED:github-token]@
        // host` has the shape of `user:password@`, a placeholder where a separator was lets a
        // command's arguments run on). Taking it now would break idempotence.
        if touches_placeholder(text, start, end) {
            return None;
        }
        let edit = self.decide_rule(g, spans, text, start, end)?;
        if edit.start <= start {
            return Some(edit);
        }
        // The part of the match before the secret (a name, a command's other arguments, a URL's
        // user) is passed over by the search, which goes on after the secret: redact it on its
        // own, or what it holds (`curl -H "Authorization: …" -u user:pw`, a token as the user of
        // a URL) would be left.
        let (before, mut found) = self.redact_found(&text[start..edit.start]);
        found.extend(edit.found);
        Some(Edit {
            start,
            end: edit.end,
            replacement: format!("{before}{}", edit.replacement),
            found,
        })
    }

    fn decide_rule(
        &self,
        g: &Groups,
        spans: &Spans<'_>,
        text: &str,
        start: usize,
        end: usize,
    ) -> Option<Edit> {
        let def = &RULES[g.rule];
        let span = |idx: Option<usize>| spans.get(idx);
        let v = span(g.v);
        match def.handler {
            Handler::Token(gate) => {
                let (a, b) = v.unwrap_or((start, end));
                let prev = text[..a].chars().next_back();
                if !gate_ok(gate, &text[a..b], prev) {
                    return None;
                }
                Some(edit(text, a, b, def.kind))
            }
            Handler::PrivateKey => {
                // The body: after the BEGIN line's closing dashes, up to an END line if any.
                let block = &text[start..end];
                let body = block
                    .get("-----BEGIN".len()..)
                    .and_then(|rest| rest.split_once("-----"))
                    .map_or("", |(_, body)| body);
                let body = body.split("-----END").next().unwrap_or(body);
                let body_len = body
                    .bytes()
                    .filter(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
                    .count();
                // `grep "-----BEGIN RSA PRIVATE KEY-----"` or a doc's `…` body holds no secret.
                if body_len < 16 {
                    return None;
                }
                Some(edit(text, start, end, def.kind))
            }
            Handler::UrlPassword => {
                let (a, b) = v?;
                let pass = &text[a..b];
                if is_placeholder(pass, Quote::None) || is_mask(pass) {
                    return None;
                }
                Some(edit(text, a, b, self.value_kind(pass).unwrap_or(def.kind)))
            }
            Handler::Authorization => {
                let (a, b) = v?;
                let value = &text[a..b];
                if span(g.sch).is_none() {
                    // Without a scheme, accept only a lone token that ends the header (not
                    // "Authorization: Bearer" split by code, nor prose after a colon).
                    if value.len() < 8 || is_auth_scheme(value) || !ends_value(text, b) {
                        return None;
                    }
                }
                if is_mask(value) {
                    return None;
                }
                Some(edit(text, a, b, self.value_kind(value).unwrap_or(def.kind)))
            }
            Handler::Cookie => {
                let (a, b) = v?;
                let (replacement, found) = self.redact_cookie_pairs(&text[a..b]);
                if found.is_empty() {
                    return None;
                }
                Some(Edit {
                    start: a,
                    end: b,
                    replacement,
                    found,
                })
            }
            Handler::CommandPassword(context) => {
                if !context_ok(context, &text[..start]) {
                    return None;
                }
                let (a, b) = v?;
                let (ia, ib) = secret_span(
                    &text[a..b],
                    ValueCtx::plain(Keyword::Password, Quote::Detect),
                )?;
                let (a, b) = (a + ia, a + ib);
                Some(edit(
                    text,
                    a,
                    b,
                    self.value_kind(&text[a..b]).unwrap_or(def.kind),
                ))
            }
            Handler::Flag => {
                let (na, nb) = span(g.n)?;
                let (a, b) = v?;
                // `access-token header` in prose: a flag starts a word. (A `]` is the end of a
                // placeholder, which replaced a word: idempotence.)
                if text[..na]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ']'))
                {
                    return None;
                }
                let name = &text[na..nb];
                let (kw, inner) = name_secret(name, true)?;
                let raw = &text[a..b];
                let spaced = span(g.s).is_some_and(|(sa, sb)| &text[sa..sb] != "=");
                if spaced && raw.starts_with('-') {
                    return None; // `--token --other`: the flag has no value here.
                }
                if kw == Keyword::Secret && is_docker_secret_spec(raw) {
                    return None;
                }
                let (ia, ib) = secret_span(raw, ValueCtx::plain(kw, Quote::Detect))?;
                let (a, b) = (a + ia, a + ib);
                if inner && !credential_shaped(&text[a..b]) {
                    return None;
                }
                let kind = self.value_kind(&text[a..b]).unwrap_or(match kw {
                    Keyword::Password | Keyword::Pass => "password-flag",
                    _ => "secret-flag",
                });
                Some(edit(text, a, b, kind))
            }
            Handler::Assignment => {
                let (na, nb) = span(g.n)?;
                let (sa, sb) = span(g.s)?;
                let (a, b) = v?;
                let name = &text[na..nb];
                let (kw, inner) = name_secret(name, false)?;
                let sep = &text[sa..sb];
                if kw == Keyword::Pass && sep == ":" && name.eq_ignore_ascii_case("pass") {
                    return None; // `PASS: test_foo` is a test runner's verdict.
                }
                // `expect "Enter password:"; send …`: the name and its separator end a quoted
                // string, and the quote after them closes it (an odd number of those quotes
                // stands before the name on its line); what follows is not its value.
                if sa == nb
                    && sb == a
                    && let Some(q) = text[a..].chars().next().filter(|q| matches!(q, '"' | '\''))
                {
                    let line = &text[text[..na].rfind('\n').map_or(0, |i| i + 1)..na];
                    let quotes = line.matches(q).count() - line.matches(&format!("\\{q}")).count();
                    if quotes % 2 == 1 {
                        return None;
                    }
                }
                let after = text.as_bytes().get(b).copied();
                let cx = ValueCtx {
                    kw,
                    quote: Quote::Detect,
                    after,
                    colon: sep == ":",
                    gap: sb < a,
                    name_has_lower: key_has_lower(name),
                };
                let (ia, ib) = secret_span(&text[a..b], cx)?;
                let (a, b) = (a + ia, a + ib);
                if inner && !credential_shaped(&text[a..b]) {
                    return None;
                }
                let kind = self
                    .value_kind(&text[a..b])
                    .unwrap_or_else(|| name_kind(name));
                Some(edit(text, a, b, kind))
            }
        }
    }
}

/// The text the first 64 base64 characters of `value` stand for (invalid bytes left out).
fn base64_head(value: &str) -> String {
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in value.bytes().take(64) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => break,
        };
        bits = (bits << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `value`, the value of a name that says `kw`, is a secret worth redacting (the
/// same gates as a value found behind a name in text: not a reference, a path, a mask, a
/// placeholder, a short number; long or random enough for a token or a key).
pub(super) fn value_is_secret(kw: Keyword, value: &str) -> bool {
    !value.starts_with("[REDACTED")
        && secret_span(value, ValueCtx::plain(kw, Quote::Json)).is_some()
}

/// Whether the match `start..end` holds a placeholder or touches one.
fn touches_placeholder(text: &str, start: usize, end: usize) -> bool {
    text[start..end].contains("[REDACTED:")
        || ends_with_placeholder(&text[..start])
        || text[end..].starts_with("[REDACTED:")
}

/// Whether `text` ends with a placeholder (`[REDACTED:kind]`).
fn ends_with_placeholder(text: &str) -> bool {
    text.strip_suffix(']')
        .map(|t| t.trim_end_matches(|c: char| c.is_ascii_lowercase() || c == '-'))
        .is_some_and(|t| t.ends_with("[REDACTED:"))
}

/// The group indices of every scanning rule in `re` (built from [`combined_pattern`]).
fn rule_groups(re: &Regex) -> Result<Vec<Groups>, regex::Error> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (idx, name) in re.capture_names().enumerate() {
        if let Some(name) = name {
            names.insert(name, idx);
        }
    }
    let mut groups = Vec::new();
    for (i, _) in RULES.iter().enumerate().filter(|(_, r)| r.scan) {
        let get = |g: &str| names.get(format!("{g}_{i}").as_str()).copied();
        let whole =
            get("r").ok_or_else(|| regex::Error::Syntax(format!("rule {i} lost its group")))?;
        groups.push(Groups {
            rule: i,
            whole,
            v: get("v"),
            n: get("n"),
            s: get("s"),
            sch: get("sch"),
        });
    }
    Ok(groups)
}

/// Whether the text before a command-password match names a command that reads it so.
fn context_ok(context: Context, before: &str) -> bool {
    let before = before.trim_end_matches([' ', '\t']);
    // A `]` before the command is the end of a placeholder, which replaced a word.
    let word_ends = |w: &str| {
        before.ends_with(w)
            && !before[..before.len() - w.len()]
                .bytes()
                .next_back()
                .is_some_and(|b| is_word(b) || b == b']')
    };
    match context {
        Context::Any => true,
        Context::RegistryLogin => [
            "docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "crane", "registry",
        ]
        .iter()
        .any(|w| word_ends(w)),
        Context::OpensslPass => ["-passin", "-passout", "-pass"]
            .iter()
            .any(|w| word_ends(w)),
    }
}

/// The output of a redaction pass: the text, copied only once something is replaced.
struct Scan<'a> {
    text: &'a str,
    out: Option<String>,
    last: usize,
    found: Vec<Found>,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            out: None,
            last: 0,
            found: Vec::new(),
        }
    }

    /// Replaces `edit.start..edit.end`; edits come in order and do not overlap.
    fn apply(&mut self, edit: Edit) {
        let text = self.text;
        let out = self
            .out
            .get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[self.last..edit.start]);
        out.push_str(&edit.replacement);
        self.last = edit.end;
        self.found.extend(edit.found);
    }

    fn finish(self) -> (Cow<'a, str>, Vec<Found>) {
        match self.out {
            Some(mut out) => {
                out.push_str(&self.text[self.last..]);
                (Cow::Owned(out), self.found)
            }
            None => (Cow::Borrowed(self.text), self.found),
        }
    }
}

fn placeholder(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

fn edit(text: &str, start: usize, end: usize, kind: &'static str) -> Edit {
    Edit {
        start,
        end,
        replacement: placeholder(kind),
        found: vec![Found {
            value: text[start..end].to_owned(),
            kind,
        }],
    }
}

/// The byte offset of the character after the one at `i`.
fn next_char(text: &str, i: usize) -> usize {
    text[i..]
        .chars()
        .next()
        .map_or(text.len(), |c| i + c.len_utf8())
}

/// Whether the value ending at `end` ends its line, string or object: end of text, a line break,
/// a JSON escape (`\n`, `\"`), a closing quote or brace.
fn ends_value(text: &str, end: usize) -> bool {
    matches!(
        text.as_bytes().get(end),
        None | Some(b'\r' | b'\n' | b'\\' | b'"' | b'\'' | b'}')
    )
}

fn is_auth_scheme(word: &str) -> bool {
    const SCHEMES: &[&str] = &[
        "bearer",
        "basic",
        "token",
        "digest",
        "negotiate",
        "ntlm",
        "apikey",
        "api-key",
        "key",
        "jwt",
        "dpop",
        "hmac",
        "sso-key",
        "bot",
        "aws4-hmac-sha256",
        "gtoken",
        "oauth",
    ];
    SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(word))
}

/// `docker build --secret id=npm,src=$HOME/.npmrc` names a secret; it is not one.
fn is_docker_secret_spec(raw: &str) -> bool {
    let raw = raw.trim_matches(['"', '\'']);
    ["id=", "src=", "source=", "env=", "type="]
        .iter()
        .any(|p| raw.starts_with(p))
}

/// The secret word a name ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keyword {
    /// password, passwd, passphrase, pwd
    Password,
    /// pass (also a test verdict, hence separate)
    Pass,
    Token,
    Secret,
    Key,
    /// auth, credential(s): often a mode or a path rather than a secret, so the value must look
    /// like one.
    Weak,
}

/// Segment words before `KEY` that make the key not a secret.
const KEY_DENY: &[&str] = &[
    "public",
    "pub",
    "publishable",
    "primary",
    "foreign",
    "sort",
    "partition",
    "cache",
    "hash",
    "range",
    "row",
    "idempotency",
    "dedup",
    "dedupe",
    "lookup",
    "map",
    "group",
    "hot",
    "short",
    "shortcut",
    "composite",
    "unique",
    "index",
    "object",
    "routing",
    "i18n",
    "translation",
    "message",
    "label",
    "field",
    "column",
    "attribute",
    "prop",
    "property",
    "option",
    "param",
    "query",
    "search",
    "item",
    "entry",
    "node",
    "next",
    "last",
    "first",
    "start",
    "end",
    "shard",
    "order",
    "dict",
    "json",
    "yaml",
    "toml",
    "config",
    "setting",
    "kms",
    "gpg",
    "pgp",
    "host",
    "ssh-public",
    "react",
    "list",
    "table",
    "sign-in",
    "hotkey",
    "keyboard",
    "foreign-key",
];

/// Segment words before `TOKEN` for tokens that are not credentials (tokenizers, pagination,
/// parsers, design systems).
const TOKEN_DENY: &[&str] = &[
    "next",
    "page",
    "continuation",
    "cancellation",
    "cancel",
    "sync",
    "eos",
    "bos",
    "pad",
    "unk",
    "sep",
    "cls",
    "mask",
    "special",
    "start",
    "end",
    "stop",
    "max",
    "min",
    "num",
    "last",
    "first",
    "input",
    "output",
    "total",
    "prompt",
    "completion",
    "cached",
    "cache",
    "reasoning",
    "thinking",
    "lex",
    "parse",
    "syntax",
    "ast",
    "design",
    "css",
    "color",
    "theme",
    "word",
    "text",
    "string",
    "char",
    "source",
    "expected",
    "unexpected",
    "current",
    "prev",
    "previous",
    "peek",
    "cursor",
    "resume",
    "pagination",
];

/// Segment words before a password-ish word for names that are switches, not passwords.
const PASSWORD_DENY: &[&str] = &[
    "ask", "no", "prompt", "use", "require", "requires", "forgot", "show", "hide", "reset", "with",
    "without", "skip", "read", "stdin", "change",
];

/// Segment words before `SECRET`/`AUTH`/`CREDENTIALS` for switches.
const SWITCH_DENY: &[&str] = &[
    "no", "use", "with", "without", "require", "requires", "skip", "disable", "enable", "is", "has",
];

/// Lower-case words glued in front of the secret word that still make a secret name
/// (`APIKEY`, `dbpassword`, `accesstoken`).
const COMPOUND: &[&str] = &[
    "api",
    "access",
    "secret",
    "private",
    "auth",
    "refresh",
    "bearer",
    "session",
    "client",
    "master",
    "account",
    "oauth",
    "app",
    "db",
    "admin",
    "root",
    "user",
    "login",
    "bot",
    "id",
    "encryption",
    "signing",
    "sudo",
    "mysql",
    "pg",
    "redis",
    "smtp",
    "ftp",
    "wifi",
    "service",
    "identity",
    "registry",
];

/// Whether `name` (an env variable, a JSON/YAML key, a header, a flag when `flag`) names a secret,
/// and which word says so.
///
/// The secret word must be the last segment of the name: after `_`, `-`, `.`, a camelCase hump, or
/// a known compound word (`APIKEY`), so `monkey`, `bypass`, `OLDPWD` and `TOKEN_COUNT` are not
/// secret names.
pub(super) fn classify_name(name: &str, flag: bool) -> Option<Keyword> {
    const WORDS: &[(&str, Keyword)] = &[
        ("passphrase", Keyword::Password),
        ("password", Keyword::Password),
        ("passwd", Keyword::Password),
        ("credentials", Keyword::Weak),
        ("credential", Keyword::Weak),
        ("secret", Keyword::Secret),
        ("token", Keyword::Token),
        ("auth", Keyword::Weak),
        ("pass", Keyword::Pass),
        ("pwd", Keyword::Password),
        ("key", Keyword::Key),
    ];
    let base = if flag {
        name.trim_start_matches('-')
    } else {
        name
    };
    let base = base.trim_end_matches(['"', '\'', '\\']);
    // `client-key-data`: the data is the key.
    let base = match base.len().checked_sub(5).and_then(|at| base.get(at..)) {
        Some(tail) if tail.eq_ignore_ascii_case("-data") => {
            let head = &base[..base.len() - 5];
            if head.len() >= 3 && head[head.len() - 3..].eq_ignore_ascii_case("key") {
                head
            } else {
                base
            }
        }
        _ => base,
    };
    let bytes = base.as_bytes();
    let (word, kw) = WORDS.iter().copied().find(|(w, _)| {
        bytes.len() >= w.len() && bytes[bytes.len() - w.len()..].eq_ignore_ascii_case(w.as_bytes())
    })?;
    let split = base.len() - word.len();
    let prefix = &base[..split];
    let Some(&last) = prefix.as_bytes().last() else {
        // A bare `key` is too common to mean anything; a bare `token`/`password` counts.
        return (kw != Keyword::Key).then_some(kw);
    };
    let first_of_word = bytes[split];
    let prev_segment: String = if matches!(last, b'_' | b'-' | b'.') {
        last_segment(prefix.trim_end_matches(['_', '-', '.']))
    } else if (last.is_ascii_lowercase() || last.is_ascii_digit())
        && first_of_word.is_ascii_uppercase()
    {
        last_segment(prefix)
    } else {
        let lower = prefix.to_ascii_lowercase();
        let compound = COMPOUND.iter().find(|c| {
            lower.ends_with(*c) && {
                let before = &prefix.as_bytes()[..prefix.len() - c.len()];
                match before.last() {
                    None => true,
                    Some(b'_' | b'-' | b'.') => true,
                    Some(b) => {
                        (b.is_ascii_lowercase() || b.is_ascii_digit())
                            && prefix.as_bytes()[prefix.len() - c.len()].is_ascii_uppercase()
                    }
                }
            }
        })?;
        (*compound).to_string()
    };
    let deny: &[&str] = match kw {
        Keyword::Key => KEY_DENY,
        Keyword::Token => TOKEN_DENY,
        Keyword::Password | Keyword::Pass => PASSWORD_DENY,
        Keyword::Secret | Keyword::Weak => SWITCH_DENY,
    };
    if deny.contains(&prev_segment.as_str()) {
        return None;
    }
    Some(kw)
}

/// Whether `name` names a secret, and whether only by a word inside it (then its value must
/// also look like a credential: [`credential_shaped`]).
pub(super) fn name_secret(name: &str, flag: bool) -> Option<(Keyword, bool)> {
    match classify_name(name, flag) {
        Some(kw) => Some((kw, false)),
        None => inner_secret_word(name, flag).map(|kw| (kw, true)),
    }
}

/// The words of a name, lower-cased: split at `_`, `-`, `.` and camelCase humps
/// (`SECRET_KEY_BASE` → secret, key, base; `tokenSigning` → token, signing).
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split(['_', '-', '.', ':', '/']) {
        let b = part.as_bytes();
        let mut start = 0;
        for i in 1..b.len() {
            if b[i].is_ascii_uppercase()
                && (b[i - 1].is_ascii_lowercase() || b[i - 1].is_ascii_digit())
            {
                words.push(part[start..i].to_ascii_lowercase());
                start = i;
            }
        }
        if start < part.len() {
            words.push(part[start..].to_ascii_lowercase());
        }
    }
    words
}

/// A secret word *inside* a name, not at its end (the end is [`classify_name`]'s business):
/// `SECRET_KEY_BASE`, `TOKEN_SIGNING`, `secret_id`, `api_key_v2`, `--client-secret-file`,
/// `passwordHash`. A `key` counts only after a word that makes it a secret key (`api`,
/// `private`, `session`, …), and `pass` not at all (`pass_through`). The name says "maybe":
/// only a value that looks like a credential is one ([`credential_shaped`]), so that
/// `TOKEN_COUNT=5`, `auth_mode=oauth`, `secret_name=prod-db` and `token_url=https://…` stay.
fn inner_secret_word(name: &str, flag: bool) -> Option<Keyword> {
    const KEY_OWNERS: &[&str] = &[
        "api",
        "private",
        "secret",
        "session",
        "access",
        "signing",
        "encryption",
        "master",
        "client",
        "account",
        "auth",
        "app",
        "license",
        "webhook",
        "shared",
        "storage",
    ];
    let base = if flag {
        name.trim_start_matches('-')
    } else {
        name
    };
    let words = name_words(base.trim_end_matches(['"', '\'', '\\']));
    // `spl_token_2022-398ac718a3f0127b.d`: a build artefact's file name, not a variable.
    let hashed = |w: &String| {
        w.len() >= 8
            && w.bytes().all(|c| c.is_ascii_hexdigit())
            && w.bytes().any(|c| c.is_ascii_digit())
    };
    if words.iter().any(hashed) {
        return None;
    }
    let last = words.len().checked_sub(1)?;
    words[..last].iter().enumerate().find_map(|(i, w)| {
        let previous = i.checked_sub(1).map(|p| words[p].as_str());
        let kw = match w.as_str() {
            "password" | "passwd" | "passphrase" | "pwd" => Keyword::Password,
            "secret" | "secrets" => Keyword::Secret,
            "token" => Keyword::Token,
            "apikey" | "privatekey" | "secretkey" | "sessionkey" | "accesskey" | "signingkey"
            | "masterkey" => Keyword::Key,
            "key" if previous.is_some_and(|p| KEY_OWNERS.contains(&p)) => Keyword::Key,
            "credential" | "credentials" | "auth" => Keyword::Weak,
            _ => return None,
        };
        let deny: &[&str] = match kw {
            Keyword::Token => TOKEN_DENY,
            Keyword::Password | Keyword::Pass => PASSWORD_DENY,
            Keyword::Secret | Keyword::Weak => SWITCH_DENY,
            Keyword::Key => &[],
        };
        // `private_key_id`, `access_key_fingerprint`, `token_ttl`: about the secret, not it.
        let next = words[i + 1].as_str();
        let about = ABOUT_A_SECRET.contains(&next) || (kw == Keyword::Key && next == "id");
        (!about && !previous.is_some_and(|p| deny.contains(&p))).then_some(kw)
    })
}

/// Words after a secret word that make a name about the secret rather than it.
const ABOUT_A_SECRET: &[&str] = &[
    "name",
    "names",
    "path",
    "file",
    "dir",
    "type",
    "kind",
    "url",
    "uri",
    "arn",
    "alias",
    "fingerprint",
    "length",
    "len",
    "count",
    "ttl",
    "expiry",
    "expires",
    "expiration",
    "version",
    "field",
    "prefix",
    "suffix",
    "format",
    "env",
    "var",
    "source",
    "ref",
    "policy",
    "rotation",
    "header",
    "param",
    "location",
    "store",
    "manager",
    "provider",
    "endpoint",
    "hint",
    "mode",
    "domain",
    "host",
    "hostname",
    "server",
    "realm",
    "issuer",
    "audience",
    "scope",
    "scopes",
    "method",
    "scheme",
    "callback",
    "redirect",
    "expire",
];

/// The shape test for a value behind a name that only *contains* a secret word: a credential is
/// one word of 8 characters or more that does not read as words (`prod-db`, `my-app-v2`,
/// `SecretsManagerReadWrite`), a number, a date or a version, and mixes character classes the
/// way random text does (three changes or more between upper case, lower case and digits), or is
/// long and of high entropy.
pub(super) fn credential_shaped(v: &str) -> bool {
    let v = v.trim();
    if v.chars().count() < 8 || v.chars().any(char::is_whitespace) || v.contains(":/") {
        return false; // also `1:/Users/…` (a line of `grep -n`), `s3://…`
    }
    if v.bytes()
        .all(|c| c.is_ascii_digit() || b"-:.TZ+/ ".contains(&c))
    {
        return false; // numbers, dates, times, versions
    }
    if reads_as_words(v) {
        return false;
    }
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Upper,
        Lower,
        Digit,
    }
    let mut changes = 0;
    let mut last: Option<Class> = None;
    for c in v.bytes() {
        let class = match c {
            b'A'..=b'Z' => Class::Upper,
            b'a'..=b'z' => Class::Lower,
            b'0'..=b'9' => Class::Digit,
            _ => continue,
        };
        if last.is_some_and(|l| l != class) {
            changes += 1;
        }
        last = Some(class);
    }
    changes >= 3 || (v.len() >= 20 && entropy(v) >= 3.5)
}

/// Every piece between `-`, `_`, `.`, `:`, `/`, `@` is a word (lower case, Capitalised,
/// camelCase or UPPER, maybe with a short number after it) or a short number.
pub(super) fn reads_as_words(v: &str) -> bool {
    v.split(['-', '_', '.', ':', '/', '@']).all(|piece| {
        let letters = piece.trim_end_matches(|c: char| c.is_ascii_digit());
        let digits = piece.len() - letters.len();
        if letters.is_empty() {
            return digits <= 4;
        }
        if digits > 2 || !letters.bytes().all(|c| c.is_ascii_alphabetic()) {
            return false;
        }
        let b = letters.as_bytes();
        let upper = b.iter().all(u8::is_ascii_uppercase);
        // camelCase / Capitalised: every upper-case letter is followed by a lower-case one.
        let humps = (0..b.len()).all(|i| {
            !b[i].is_ascii_uppercase() || b.get(i + 1).is_some_and(u8::is_ascii_lowercase)
        });
        upper || humps
    })
}

/// Shannon entropy of the characters of `v`, in bits per character.
fn entropy(v: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in v.bytes() {
        counts[b as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// The last word of a name, lower-cased: after the last `_`/`-`/`.`, or the last camelCase hump.
fn last_segment(prefix: &str) -> String {
    let seg = prefix.rsplit(['_', '-', '.']).next().unwrap_or(prefix);
    let b = seg.as_bytes();
    let mut start = 0;
    for i in 1..b.len() {
        if b[i].is_ascii_uppercase() && (b[i - 1].is_ascii_lowercase() || b[i - 1].is_ascii_digit())
        {
            start = i;
        }
    }
    seg[start..].to_ascii_lowercase()
}

/// Whether a name contains a lower-case letter (code and JSON keys do; env variables do not).
fn key_has_lower(name: &str) -> bool {
    name.bytes().any(|b| b.is_ascii_lowercase())
}

/// The kind of a secret found by its name, when its value is not recognisable by itself.
pub(super) fn name_kind(name: &str) -> &'static str {
    let squashed: String = name
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(|b| b.to_ascii_lowercase() as char)
        .collect();
    if squashed.ends_with("secretaccesskey")
        || (squashed.contains("aws") && squashed.contains("secret"))
    {
        "aws-secret-key"
    } else if squashed.contains("aws") && squashed.ends_with("sessiontoken") {
        "aws-session-token"
    } else if squashed == "accountkey" || squashed == "sharedaccesskey" {
        "azure-storage-key"
    } else {
        "secret-assignment"
    }
}

/// How a value is quoted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quote {
    /// Look at the first characters.
    Detect,
    /// A JSON string value (already unescaped, no quotes).
    Json,
    /// Bare text (URL user info, cookie value).
    None,
}

/// What is known about a value besides its text.
#[derive(Clone, Copy, Debug)]
struct ValueCtx {
    kw: Keyword,
    quote: Quote,
    /// The byte after a bare value in the text (`None` at its end).
    after: Option<u8>,
    /// The separator was `:` (YAML, headers, JSON, but also prose and type annotations).
    colon: bool,
    /// Blanks stood between the separator and the value.
    gap: bool,
    /// The name has lower-case letters (code, JSON), unlike an environment variable.
    name_has_lower: bool,
}

impl ValueCtx {
    /// A value with no surroundings to judge by (a flag's, a JSON member's).
    fn plain(kw: Keyword, quote: Quote) -> Self {
        Self {
            kw,
            quote,
            after: None,
            colon: false,
            gap: false,
            name_has_lower: true,
        }
    }
}

/// The part of `raw` (a value as matched, quotes included) that is a secret, as a byte range into
/// `raw`, or `None` when the value is clearly not one.
fn secret_span(raw: &str, cx: ValueCtx) -> Option<(usize, usize)> {
    let ValueCtx {
        kw,
        quote,
        after,
        colon,
        gap,
        name_has_lower,
    } = cx;
    let (a, b, q) = match quote {
        Quote::Json => (0, raw.len(), Quote::Json),
        Quote::None => (0, raw.len(), Quote::None),
        Quote::Detect => {
            if let Some((open, close)) = escaped_quotes(raw) {
                (open, close, Quote::Json)
            } else if raw.len() >= 2
                && ((raw.starts_with('"') && raw.ends_with('"'))
                    || (raw.starts_with('\'') && raw.ends_with('\'')))
            {
                (
                    1,
                    raw.len() - 1,
                    if raw.starts_with('\'') {
                        Quote::None
                    } else {
                        Quote::Json
                    },
                )
            } else {
                (0, raw.len(), Quote::Detect)
            }
        }
    };
    let inner = &raw[a..b];
    let bare = q == Quote::Detect;
    if inner.is_empty() || is_placeholder(inner, q) || is_mask(inner) || is_literal_word(inner) {
        return None;
    }
    if inner.is_ascii() && !inner.bytes().any(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    if !matches!(kw, Keyword::Password)
        && inner.len() <= 12
        && inner.bytes().all(|c| c.is_ascii_digit())
    {
        return None; // `"max_token": 100`, `pass=5`
    }
    if looks_like_path(inner) || is_url(inner) || is_object_ref(inner) {
        return None;
    }
    if ["file:", "env:", "fd:"]
        .iter()
        .any(|p| inner.starts_with(p))
    {
        return None; // where openssl and others read a pass phrase from, not the phrase
    }
    if bare {
        if inner.starts_with(['=', ':']) {
            return None; // `token == x`, `token::Kind`
        }
        if gap && next_assignment(inner, after) {
            return None; // `PASSWORD= DB_HOST=db`: empty, then the next variable
        }
        let identifier = inner
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.');
        if identifier && matches!(after, Some(b'(' | b'[' | b'{')) {
            return None; // `api_key=get_key()`, `token = parts[1]`, `token=Token{78af589}`
        }
        if is_dotted_path(inner) {
            return None; // `token=self.token`, `apiKey: process.env.API_KEY`
        }
        if name_has_lower && is_code_identifier_naming_secret(inner) {
            return None; // `password=password`, `token=access_token`
        }
        if colon {
            // After a colon a bare value must end its line/string (YAML `password: hunter2`),
            // so prose ("password: too short") and types (`password: String,`) survive.
            if !matches!(
                after,
                None | Some(b'\r' | b'\n' | b'\\' | b'"' | b'\'' | b'}')
            ) {
                return None;
            }
            const TYPES: &[&str] = &[
                "String",
                "string",
                "str",
                "bool",
                "boolean",
                "number",
                "int",
                "Option",
                "Secret",
                "SecretString",
                "SecretBox",
                "any",
                "unknown",
                "None",
                "Text",
                "Vec",
            ];
            if TYPES.contains(&inner) {
                return None;
            }
        }
    }
    if kw == Keyword::Weak && !looks_random(inner, 8) {
        return None; // `auth: basic`, `"credentials": "include"`
    }
    if kw == Keyword::Token && !(inner.len() >= 16 || looks_random(inner, 8)) {
        // `test_token = "music"` (a tokenizer's token): credentials are long and random.
        return None;
    }
    if kw == Keyword::Key
        && !(inner.len() >= 24 || (inner.len() >= 8 && inner.bytes().any(|c| c.is_ascii_digit())))
    {
        // `STORAGE_KEY = 'todos'`, `tagKey=KSChannelID`: keys are long and random, and a random
        // run of that length has digits.
        return None;
    }
    Some((a, b))
}

/// The inside of a value quoted with escaped quotes (`\"…\"`, `\\\"…\\\"`): the byte range between
/// the opening run of backslashes and its quote and the closing one.
fn escaped_quotes(raw: &str) -> Option<(usize, usize)> {
    if !raw.starts_with('\\') || !raw.ends_with('"') {
        return None;
    }
    let open = raw.find('"')? + 1;
    let body = raw[..raw.len() - 1].trim_end_matches('\\');
    let close = body.len();
    (close >= open && raw.len() - 1 > close).then_some((open, close))
}

/// `NAME=…` (or `NAME=` before a quote): an assignment of its own rather than a value.
fn next_assignment(v: &str, after: Option<u8>) -> bool {
    v.split_once('=').is_some_and(|(name, rest)| {
        !name.is_empty()
            && (!rest.is_empty() || matches!(after, Some(b'"' | b'\'')))
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    })
}

/// `$VAR`, `${VAR}`, `$(cmd)`, `%VAR%`, `{{ x }}`, `{x}`, `<token>`, `[REDACTED:…]`: a reference
/// to a secret, not the secret. Inside single quotes (`quote == None` for those) `$` is literal.
fn is_placeholder(v: &str, quote: Quote) -> bool {
    if v.starts_with("[REDACTED") {
        return true;
    }
    if quote != Quote::None && v.starts_with('$') {
        let rest = &v[1..];
        let var = rest.starts_with(['{', '('])
            || (rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && rest.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
        if var {
            return true;
        }
    }
    let lower = v.to_ascii_lowercase();
    if (lower.starts_with("your") && v[4..].starts_with(['_', '-', ' ', '.']))
        || lower.ends_with("_here")
        || lower.ends_with("-here")
    {
        return true; // `your_api_key_here`, `YOUR-TOKEN`
    }
    (v.starts_with('<') && v.ends_with('>'))
        || (v.starts_with('{') && v.ends_with('}'))
        || (v.len() >= 3 && v.starts_with('%') && v.ends_with('%'))
        || v.starts_with("%(")
        || v == "%s"
}

/// A reference or a placeholder standing where a secret would (`${X}`, `<token>`,
/// `your_api_key_here`, `{{ x }}`), in text where `$` expands.
pub(super) fn is_placeholder_text(v: &str) -> bool {
    is_placeholder(v, Quote::Json)
}

/// `***`, `xxxxxxxx`, `…`, `••••`: a masked value.
pub(super) fn is_mask(v: &str) -> bool {
    let mask = |c: char| matches!(c, '*' | 'x' | 'X' | '•' | '·' | '.' | '…' | '#' | '-' | '_');
    v.chars().all(mask) && (v.chars().count() >= 3 || v.chars().all(|c| c == '*' || c == '…'))
}

/// Words that stand where a secret would but are settings or prompts.
/// A cookie that holds a preference, not a session: a short lower-case word (`theme=dark`,
/// `lang=en`, `consent=yes`) under a name that says nothing of a session or a secret.
fn plain_cookie(name: &str, value: &str) -> bool {
    const SESSION_WORDS: &[&str] = &[
        "sess", "sid", "auth", "token", "secret", "key", "pass", "login", "remember", "csrf",
        "xsrf", "jwt", "id", "user", "account", "sig",
    ];
    let name = name.to_ascii_lowercase();
    value.len() <= 10
        && value.bytes().all(|c| c.is_ascii_lowercase() || c == b'-')
        && !SESSION_WORDS.iter().any(|w| name.contains(w))
}

pub(super) fn is_literal_word(v: &str) -> bool {
    const WORDS: &[&str] = &[
        "true",
        "false",
        "null",
        "none",
        "nil",
        "yes",
        "no",
        "on",
        "off",
        "undefined",
        "required",
        "optional",
        "redacted",
        "hidden",
        "masked",
        "empty",
        "~",
    ];
    WORDS.iter().any(|w| w.eq_ignore_ascii_case(v))
}

/// `/home/u/.ssh/id_rsa`, `./key.pem`, `~/.config/gh/hosts.yml`: a file, not its contents. A
/// base64 run that happens to start with `/` (mixed case and digits, no `.`, `-`, `_`) is not a
/// path.
pub(super) fn looks_like_path(v: &str) -> bool {
    let rooted =
        v.starts_with('/') || v.starts_with("./") || v.starts_with("../") || v.starts_with("~/");
    if !rooted
        || !v
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._/~@-".contains(&c))
    {
        return false;
    }
    let plain = !v.bytes().any(|c| matches!(c, b'.' | b'-' | b'_'));
    !(plain && v.len() >= 24 && looks_random(v, 24))
}

/// `https://…`: a URL, whose user-info password, if any, the `url-password` rule handles.
fn is_url(v: &str) -> bool {
    v.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"+.-".contains(&c))
    })
}

/// `android.os.BinderProxy@2bd79ce`: a Java-style object reference in a log line.
fn is_object_ref(v: &str) -> bool {
    v.split_once('@').is_some_and(|(class, id)| {
        class.contains('.')
            && class
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"._$".contains(&c))
            && !id.is_empty()
            && id.bytes().all(|c| c.is_ascii_hexdigit())
    })
}

/// `self.token`, `process.env.API_KEY`, `os.environ`: a member access.
fn is_dotted_path(v: &str) -> bool {
    let mut parts = v.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let ident = |s: &str| {
        !s.is_empty()
            && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    };
    let rest: Vec<&str> = parts.collect();
    ident(first)
        && first.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && !rest.is_empty()
        && rest.iter().all(|p| ident(p))
}

/// A lower-case identifier that itself names a secret (`password=password`,
/// `token=access_token`): a variable passed along, in code.
fn is_code_identifier_naming_secret(v: &str) -> bool {
    v.bytes().all(|c| c.is_ascii_lowercase() || c == b'_')
        && ["pass", "pwd", "token", "secret", "key", "auth", "cred"]
            .iter()
            .any(|w| v.contains(w))
}

/// At least `min_len` long with at least two of upper case, lower case and digits (or base64
/// punctuation).
fn looks_random(v: &str, min_len: usize) -> bool {
    if v.len() < min_len {
        return false;
    }
    let classes = [
        v.bytes().any(|c| c.is_ascii_uppercase()),
        v.bytes().any(|c| c.is_ascii_lowercase()),
        v.bytes().any(|c| c.is_ascii_digit()),
        v.bytes().any(|c| matches!(c, b'+' | b'/' | b'=')),
    ];
    classes.iter().filter(|&&c| c).count() >= 2
}

fn gate_ok(gate: Gate, token: &str, prev: Option<char>) -> bool {
    match gate {
        Gate::None => true,
        Gate::Mixed(skip) => token.get(skip..).is_some_and(|t| {
            let classes = [
                t.bytes().any(|c| c.is_ascii_uppercase()),
                t.bytes().any(|c| c.is_ascii_lowercase()),
                t.bytes().any(|c| c.is_ascii_digit()),
            ];
            classes.iter().filter(|&&c| c).count() >= 2
        }),
        Gate::HexMixed(skip) => token.get(skip..).is_some_and(|t| {
            t.bytes().any(|c| c.is_ascii_digit()) && t.bytes().any(|c| c.is_ascii_alphabetic())
        }),
        Gate::SkGeneric => {
            // A `]` before it is the end of a placeholder: what came before was redacted
            // without it, so it must stay so (idempotence).
            if prev.is_some_and(|c| matches!(c, '-' | '.' | '/' | '\\' | ']')) {
                return false;
            }
            let body = token.get(3..).unwrap_or("");
            let digit = body.bytes().any(|c| c.is_ascii_digit());
            let upper = body.bytes().any(|c| c.is_ascii_uppercase());
            let lower = body.bytes().any(|c| c.is_ascii_lowercase());
            let hex =
                body.len() >= 32 && body.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
            digit && ((upper && lower) || hex)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic fake secrets (xorshift over an alphabet): the right shape, never a real key,
    /// and not written out in the source where a secret scanner would trip over them.
    struct Fake(u64);

    const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const UPPER_DIGIT: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const HEX: &str = "0123456789abcdef";
    const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    impl Fake {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn s(&mut self, alphabet: &str, n: usize) -> String {
            let a: Vec<char> = alphabet.chars().collect();
            (0..n)
                .map(|_| a[(self.next() % a.len() as u64) as usize])
                .collect()
        }

        /// A run of `alphabet` that has upper case, lower case and digits where the alphabet
        /// has them (what a real random token of that length has).
        fn mixed(&mut self, alphabet: &str, n: usize) -> String {
            loop {
                let s = self.s(alphabet, n);
                let has = |f: fn(&u8) -> bool| {
                    !alphabet.bytes().any(|b| f(&b)) || s.bytes().any(|b| f(&b))
                };
                if has(u8::is_ascii_uppercase)
                    && has(u8::is_ascii_lowercase)
                    && has(u8::is_ascii_digit)
                {
                    return s;
                }
            }
        }

        fn pem_body(&mut self, lines: usize, sep: &str) -> String {
            (0..lines)
                .map(|_| self.mixed(B64, 64))
                .collect::<Vec<_>>()
                .join(sep)
        }
    }

    struct Case {
        /// The text, with `{S}` where the secret goes.
        context: String,
        secret: String,
        kind: &'static str,
    }

    fn case(context: &str, secret: String, kind: &'static str) -> Case {
        Case {
            context: context.to_string(),
            secret,
            kind,
        }
    }

    fn secret_cases() -> Vec<Case> {
        let mut f = Fake(0xDEAD_BEEF);
        let jwt = format!(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{}.{}",
            f.mixed(B64URL, 60),
            f.mixed(B64URL, 43)
        );
        let jwt2 = format!(
            "eyJhbGciOiJSUzI1NiJ9.eyJ{}.{}",
            f.mixed(B64URL, 80),
            f.mixed(B64URL, 86)
        );
        let rsa_body = f.pem_body(6, "\n");
        let ossh_body = format!("b3BlbnNzaC1rZXktdjEAAAAA{}", f.pem_body(4, "\n"));
        let pgp_body = f.pem_body(5, "\n");
        let sa_body = f.pem_body(5, "\\n");
        vec![
            case(
                "export AWS_ACCESS_KEY_ID={S}",
                format!("AKIA{}", f.s(UPPER_DIGIT, 16)),
                "aws-access-key",
            ),
            case(
                "export AWS_SECRET_ACCESS_KEY={S}",
                f.mixed(B64, 40),
                "aws-secret-key",
            ),
            case(
                "[default]\naws_access_key_id = AKIAEXAMPLEFAKE\naws_secret_access_key = {S}\nregion = eu-west-1",
                f.mixed(B64, 40),
                "aws-secret-key",
            ),
            case(
                "{\"Credentials\": {\"AccessKeyId\": \"ASIAQ\", \"SessionToken\": \"{S}\"}}",
                format!("IQoJb3JpZ2luX2Vj{}", f.mixed(B64, 180)),
                "aws-session-token",
            ),
            case(
                "curl 'https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={S}'",
                format!("AIza{}", f.mixed(B64URL, 35)),
                "gcp-api-key",
            ),
            case(
                "{\"type\": \"service_account\", \"project_id\": \"demo\", \"private_key_id\": \"0a1b2c\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{S}\\n-----END PRIVATE KEY-----\\n\"}",
                sa_body,
                "private-key",
            ),
            case(
                "git remote set-url origin https://{S}@github.com/acme/app.git",
                format!("ghp_{}", f.mixed(ALNUM, 36)),
                "github-token",
            ),
            case(
                "GH_TOKEN={S} gh pr list --state open",
                format!("gho_{}", f.mixed(ALNUM, 36)),
                "github-token",
            ),
            case(
                "git clone https://x-access-token:{S}@github.com/acme/app.git",
                format!("ghs_{}", f.mixed(ALNUM, 36)),
                "github-token",
            ),
            case(
                "{\"env\": {\"GITHUB_TOKEN\": \"{S}\"}}",
                format!("github_pat_{}_{}", f.mixed(ALNUM, 22), f.mixed(ALNUM, 59)),
                "github-token",
            ),
            case(
                "Logged in. Token: {S} (expires in 8h)",
                format!("ghu_{}", f.mixed(ALNUM, 36)),
                "github-token",
            ),
            case(
                "git clone https://oauth2:{S}@gitlab.example.com/group/project.git",
                format!("glpat-{}", f.mixed(ALNUM, 20)),
                "gitlab-token",
            ),
            case(
                "curl --header \"PRIVATE-TOKEN: {S}\" https://gitlab.example.com/api/v4/projects",
                format!("glpat-{}", f.mixed(ALNUM, 20)),
                "gitlab-token",
            ),
            case(
                "SLACK_BOT_TOKEN={S}",
                format!(
                    "xoxb-{}-{}-{}",
                    f.s("0123456789", 12),
                    f.s("0123456789", 13),
                    f.mixed(ALNUM, 24)
                ),
                "slack-token",
            ),
            case(
                "  \"ok\": true, \"access_token\": \"{S}\", \"scope\": \"chat:write\"",
                format!(
                    "xoxp-{}-{}-{}-{}",
                    f.s("0123456789", 11),
                    f.s("0123456789", 11),
                    f.s("0123456789", 13),
                    f.s(HEX, 32)
                ),
                "slack-token",
            ),
            case(
                "curl -X POST -H 'Content-type: application/json' --data '{\"text\":\"deploy done\"}' https://hooks.slack.com/services/{S}",
                format!(
                    "T{}/B{}/{}",
                    f.s(UPPER_DIGIT, 8),
                    f.s(UPPER_DIGIT, 10),
                    f.mixed(ALNUM, 24)
                ),
                "slack-webhook",
            ),
            case(
                "stripe.api_key = \"{S}\"",
                format!("sk_live_{}", f.mixed(ALNUM, 24)),
                "stripe-key",
            ),
            case(
                "curl https://api.stripe.com/v1/charges -u {S}: -d amount=2000",
                format!("sk_test_{}", f.mixed(ALNUM, 24)),
                "stripe-key",
            ),
            case(
                "Restricted key created: {S}",
                format!("rk_live_{}", f.mixed(ALNUM, 24)),
                "stripe-key",
            ),
            case(
                "export OPENAI_API_KEY={S}",
                format!("sk-proj-{}", f.mixed(B64URL, 120)),
                "openai-key",
            ),
            case(
                "client = OpenAI(api_key=\"{S}\")",
                format!("sk-{}T3BlbkFJ{}", f.mixed(ALNUM, 20), f.mixed(ALNUM, 20)),
                "openai-key",
            ),
            case(
                "ANTHROPIC_API_KEY={S} claude -p 'hello'",
                format!("sk-ant-api03-{}AA", f.mixed(B64URL, 93)),
                "anthropic-key",
            ),
            case(
                "//registry.npmjs.org/:_authToken={S}",
                format!("npm_{}", f.mixed(ALNUM, 36)),
                "npm-token",
            ),
            case(
                "twine upload -u __token__ -p {S} dist/*",
                format!("pypi-AgEIcHlwaS5vcmc{}", f.mixed(B64URL, 70)),
                "pypi-token",
            ),
            case(
                "huggingface-cli login --token {S}",
                format!("hf_{}", f.mixed(LETTERS, 34)),
                "huggingface-token",
            ),
            case(
                "SENDGRID_API_KEY='{S}'",
                format!("SG.{}.{}", f.mixed(B64URL, 22), f.mixed(B64URL, 43)),
                "sendgrid-key",
            ),
            case("TWILIO_AUTH_TOKEN={S}", f.s(HEX, 32), "secret-assignment"),
            case(
                "TWILIO_API_KEY={S}",
                format!("SK{}", f.s(HEX, 32)),
                "twilio-key",
            ),
            case(
                "curl -H \"Authorization: Bearer {S}\" https://www.googleapis.com/drive/v3/files",
                format!("ya29.{}", f.mixed(B64URL, 120)),
                "google-oauth",
            ),
            case(
                "{\"web\": {\"client_id\": \"123-abc.apps.googleusercontent.com\", \"client_secret\": \"{S}\"}}",
                format!("GOCSPX-{}", f.mixed(B64URL, 28)),
                "google-oauth",
            ),
            case(
                "AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={S};EndpointSuffix=core.windows.net\"",
                format!("{}==", f.mixed(B64, 86)),
                "azure-storage-key",
            ),
            case(
                "$ cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{S}\n-----END RSA PRIVATE KEY-----\n$ ls",
                rsa_body,
                "private-key",
            ),
            case(
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{S}\n-----END OPENSSH PRIVATE KEY-----",
                ossh_body,
                "private-key",
            ),
            case(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{S}\n=Xr7q\n-----END PGP PRIVATE KEY BLOCK-----",
                pgp_body,
                "private-key",
            ),
            case(
                "curl -H \"Authorization: Bearer {S}\" https://api.example.com/v1/me",
                jwt,
                "jwt",
            ),
            case("Set-Cookie: id_token={S}; Path=/; HttpOnly", jwt2, "jwt"),
            case(
                "psql postgres://app:{S}@db.internal:5432/prod -c 'select 1'",
                f.mixed(ALNUM, 16),
                "url-password",
            ),
            case(
                "mongosh \"mongodb+srv://admin:{S}@cluster0.abcde.mongodb.net/test\"",
                format!("{}!{}", f.mixed(ALNUM, 10), f.s(ALNUM, 4)),
                "url-password",
            ),
            case(
                "REDIS_URL=redis://:{S}@cache:6379/0",
                f.mixed(ALNUM, 24),
                "url-password",
            ),
            case(
                "curl -H 'Authorization: Basic {S}' https://registry.example.com/v2/",
                format!("{}=", f.mixed(B64, 31)),
                "authorization",
            ),
            case(
                "curl -sS -H \"Authorization: token {S}\" https://git.example.com/api",
                f.s(HEX, 40),
                "authorization",
            ),
            case(
                "mysql --password={S} -u root shop",
                f.mixed(ALNUM, 14),
                "password-flag",
            ),
            case(
                "docker login -u deploy -p {S} registry.example.com",
                f.mixed(ALNUM, 20),
                "password-flag",
            ),
            case(
                "mysql -uroot -p{S} shop < dump.sql",
                f.mixed(ALNUM, 12),
                "password-flag",
            ),
            case(
                "sshpass -p '{S}' ssh deploy@10.0.0.5",
                format!("{}#{}", f.mixed(ALNUM, 8), f.s(ALNUM, 4)),
                "password-flag",
            ),
            case(
                "curl -u admin:{S} https://jenkins.example.com/api/json",
                f.mixed(ALNUM, 18),
                "password-flag",
            ),
            case(
                "redis-cli -h cache -a {S} ping",
                f.mixed(ALNUM, 20),
                "password-flag",
            ),
            case(
                "openssl pkcs12 -in cert.p12 -passin pass:{S} -nokeys",
                f.mixed(ALNUM, 12),
                "password-flag",
            ),
            case(
                "vercel deploy --prod --token {S}",
                f.mixed(ALNUM, 24),
                "secret-flag",
            ),
            case(
                "./bin/sync --api-key={S} --dry-run",
                f.mixed(ALNUM, 32),
                "secret-flag",
            ),
            case(
                "# .env\nDB_HOST=localhost\nDB_PASSWORD={S}\nDB_PORT=5432",
                f.mixed(ALNUM, 16),
                "secret-assignment",
            ),
            case(
                "export JWT_SECRET=\"{S}\"",
                f.mixed(ALNUM, 48),
                "secret-assignment",
            ),
            case(
                "database:\n  user: app\n  password: {S}\n  host: db",
                f.mixed(ALNUM, 14),
                "secret-assignment",
            ),
            case(
                "{\n  \"api_key\": \"{S}\",\n  \"region\": \"eu\"\n}",
                f.mixed(ALNUM, 32),
                "secret-assignment",
            ),
            case(
                "PGPASSWORD={S} psql -h db -U app -d prod",
                f.mixed(ALNUM, 12),
                "secret-assignment",
            ),
            case(
                "[client]\nuser = root\npassword = {S}\n",
                f.mixed(ALNUM, 12),
                "secret-assignment",
            ),
            case(
                "[auth]\ntoken = \"{S}\"",
                f.mixed(ALNUM, 40),
                "secret-assignment",
            ),
            case(
                "Server=db;Database=shop;User Id=sa;Password={S};TrustServerCertificate=True",
                f.mixed(ALNUM, 16),
                "secret-assignment",
            ),
            case(
                "curl -H 'X-API-Key: {S}' https://api.example.com/items",
                f.mixed(ALNUM, 32),
                "secret-assignment",
            ),
            case(
                "curl -b cookies.txt -H 'Cookie: sessionid={S}; theme=dark' https://app.example.com/",
                f.mixed(ALNUM, 32),
                "cookie",
            ),
            case(
                "VAULT_TOKEN={S} vault kv get secret/app",
                format!("hvs.{}", f.mixed(B64URL, 90)),
                "vault-token",
            ),
            case(
                "echo {S} | docker login -u acme --password-stdin",
                format!("dckr_pat_{}", f.mixed(B64URL, 27)),
                "dockerhub-token",
            ),
            case(
                "doctl auth init -t {S}",
                format!("dop_v1_{}", f.s(HEX, 64)),
                "digitalocean-token",
            ),
            case(
                "GROQ_API_KEY={S}",
                format!("gsk_{}", f.mixed(ALNUM, 52)),
                "groq-key",
            ),
            case(
                "const client = new Client({ apiKey: \"{S}\" });",
                format!("xai-{}", f.mixed(ALNUM, 80)),
                "xai-key",
            ),
            case(
                "SHOPIFY_ACCESS_TOKEN={S}",
                format!("shpat_{}", f.s(HEX, 32)),
                "shopify-token",
            ),
            case(
                "users:\n- name: admin\n  user:\n    client-key-data: {S}\n",
                format!(
                    "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo{}",
                    f.mixed(B64, 400)
                ),
                "private-key",
            ),
            case(
                "{\"users\": [{\"user\": {\"client-key-data\": \"{S}\"}}]}",
                format!(
                    "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1J{}",
                    f.mixed(B64, 300)
                ),
                "private-key",
            ),
            case(
                "{\"auths\": {\"registry.example.com\": {\"identitytoken\": \"{S}\"}}}",
                f.mixed(ALNUM, 40),
                "secret-assignment",
            ),
            case(
                "{\"registrytoken\": \"{S}\"}",
                f.mixed(ALNUM, 32),
                "secret-assignment",
            ),
        ]
    }

    /// Text that must come out unchanged.
    fn survivors() -> Vec<String> {
        [
            "git show 3f786850e387550fdab836ed7e6dc881de23001b --stat",
            "commit 9c1185a5c5e9fc54612808977ee8f548b2258d31\nAuthor: Ann Example <ann@example.com>\nDate:   Mon Sep 8 10:00:00 2025 +0200",
            "a1b2c3d fix(parser): keep spans\n9e8f7a6 feat: add --json output",
            "git rev-parse HEAD^{tree} -> b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
            "{\"sessionId\":\"5c0375b4-57a5-4f26-b12d-d022ee4e51b7\",\"uuid\":\"fe5e1c67-53e7-4862-81ae-d0e013e3270b\"}",
            "[[package]]\nname = \"regex\"\nversion = \"1.12.2\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"843bc0191f75f3e22651ae5f1e72939ab2f72a4bc30fa80a066bd66edefc24d4\"",
            "\"node_modules/left-pad\": {\"version\": \"1.3.0\", \"resolved\": \"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz\", \"integrity\": \"sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQ2JwMjxSH5ziqAkzG2iG3yVOh3QZ6tLEojo7bR9tmkbgIw==\"}",
            "golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ=\ngolang.org/x/text v0.14.0/go.mod h1:18ZOQIKpY8NJVqYksKHtTdi31H5itFRjB5/qKTNYzSU=",
            "docker pull nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
            "hash = \"sha256:5b0b3f2f0a4c1e8b9d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c\"",
            "<script src=\"https://cdn.example.com/lib.js\" integrity=\"sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC\" crossorigin=\"anonymous\"></script>",
            "Read /home/dev/projects/very-long-directory-name-with-many-parts/src/components/dashboard/SomethingVeryLongComponentName.test.tsx",
            "echo \"$CR_PAT\" | docker login ghcr.io -u octocat --password-stdin",
            "pg_dump --password-file /run/secrets/db_password shop > shop.sql",
            "Please enter your password to continue.",
            "TOKEN_LIMIT=4096 TOKEN_COUNT=5 KEY_ID=42 cargo run",
            "- [ ] task-list-items-and-more-things-here-done-properly-now",
            "pip install ghp-import && ghp-import -n -p -f _build/html",
            "AKIA1234 is too short to be an access key",
            "2025-09-07T09:52:03.071Z INFO started in 12ms",
            "listening on [2001:db8::1]:8080 and fe80::1ff:fe23:4567:890a",
            "bumped version 1.0.108 -> v0.14.0-rc.1+build.5",
            "cargo test -p toolsmith --lib -- --nocapture",
            "ssh -p 2222 deploy@10.0.0.5 'mkdir -p /srv/app'",
            "mysql -u root -p shop",
            "mysql -u root -p<password> shop",
            "{\"usage\":{\"input_tokens\":4,\"cache_creation_input_tokens\":5,\"output_tokens\":9}}",
            "{\"model\": \"claude\", \"max_tokens\": 4096, \"temperature\": 0}",
            "{\"private_key_id\": \"6f1e0b3c9d\", \"client_email\": \"bot@demo.iam.gserviceaccount.com\"}",
            "PUBLIC_KEY=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGqKn8h9T0Vb7m3eYc2xQwzR4nUj5pLs6dFa1Ko8Hv2 dev@laptop",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
            "{\"key\": \"Enter\", \"code\": \"Enter\"}",
            "{\"eos_token\": \"</s>\", \"pad_token\": \"<pad>\", \"nextPageToken\": \"CAUQAA\"}",
            "export GITHUB_TOKEN=$(gh auth token)",
            "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com",
            "pub struct Login {\n    pub user: String,\n    pub password: String,\n}",
            "client = Client(token=self.token, api_key=os.environ[\"OPENAI_API_KEY\"])",
            "git clone git@github.com:acme/app.git && ssh git@github.com",
            "curl http://localhost:3000/api/users?page=2",
            "https://user@example.com/path and postgres://app@db/prod",
            "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">",
            "error: invalid password: too short (minimum is 12 characters)",
            "PASS: tests/test_parser.py::test_roundtrip",
            "test result: ok. 12 passed; 0 failed; 0 ignored",
            "monkey=1 hotkey: ctrl+k bypass=true",
            "docker build --secret id=npmrc,src=$HOME/.npmrc -t app .",
            "pip install scikit-learn && python -c 'import sklearn'  # sk-1234 too short",
            "{\"signature\": \"EqQBCkYIBRgCKkBfake0signature0of0thinking0block0AAAAAAAAAAAAAAA\", \"requestId\": \"req_011CSjZ9Ba4ATgWkgzEqZLVF\"}",
            "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in your environment, then AWS_REGION=us-east-1.",
            "npm_config_cache=/tmp/npm-cache npm ci",
            "from huggingface_hub import hf_hub_download",
            "llm --max-tokens 1024 --model small",
            "PASSWORD= DB_PASSWORD=\"\" API_KEY=${API_KEY} SECRET=<secret>",
            "Missing Authorization header; the token endpoint returned 401",
            "const STORAGE_KEY = 'todos';",
            "def get_token_embedding(self, token: str) -> np.ndarray:",
            "ssh-keygen -t ed25519 -f ~/.ssh/id_ed25519 -C dev@laptop",
            "export SSH_KEY=~/.ssh/id_rsa GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/sa.json",
            "password: ********\ntoken: [REDACTED:github-token]",
            "grep -rn \"BEGIN RSA PRIVATE KEY\" . && grep -- '-----BEGIN OPENSSH PRIVATE KEY-----' notes.md",
            "日本語のテキスト：パスワードを入力してください。token は含まれません。",
            // From the shared corpus (loghub, aider): names that say key/token, values that are not.
            "tagPath=/Applications/Google Chrome.app/Contents/Info.plist tagKey=KSChannelID brandKey=KSBrandID",
            "UserInfo={NSErrorFailingURLStringKey=https://gsp-ssl.ls.apple.com/dispatcher.arpc, NSErrorFailingURLKey=https://gsp-ssl.ls.apple.com/dispatcher.arpc}",
            "V WindowManager: Skipping AppWindowToken{df0798e token=Token{78af589 ActivityRecord{3b04890 u0 com.tencent.qt.qtl/.activity.info.NewsDetailXmlActivity t761}}} -- going to hide",
            "W ActivityManager: Bad activity token: android.os.BinderProxy@6c8e3b1",
            "    OPENAI_API_KEY=\"your_actual_openai_api_key_here\"",
            "{\"api_key\": null, \"client\": \"openai\"}\napi_key=os.getenv(\"OPENAI_API_KEY\")",
            "openssl enc -d -aes-256-cbc -in a.enc -out a -pass file:/run/secrets/backup",
            "openssl rsa -in k.pem -passin env:KEY_PASS -out k2.pem -passout fd:3",
            "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURCVENDQWUyZ0F3SUJBZ0lJ",
            "{\"identity\": \"bob\", \"registry\": \"ghcr.io\", \"cache-key-data\": \"v2\"}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn unfiltered() -> Regex {
        build_big(&combined_pattern()).expect("combined pattern compiles")
    }

    #[test]
    fn every_pattern_compiles_on_its_own() {
        for (i, rule) in RULES.iter().enumerate() {
            if let Err(e) = Regex::new(&rule_pattern(rule)) {
                panic!("rule {i} ({}) does not compile: {e}", rule.kind);
            }
        }
        let r = Redactor::try_new();
        assert!(r.is_ok(), "{:?}", r.err());
        let total: usize = ANCHOR_GROUPS.iter().map(|g| g.len()).sum();
        assert!(total < 64, "the prefilter slows down past 64 literals");
    }

    #[test]
    fn secrets_are_redacted() {
        let r = Redactor::new();
        let re = unfiltered();
        let cases = secret_cases();
        let distinct: std::collections::HashSet<&str> =
            cases.iter().map(|c| c.secret.as_str()).collect();
        assert!(
            distinct.len() >= 40,
            "only {} distinct secrets",
            distinct.len()
        );
        let mut failures = Vec::new();
        for c in &cases {
            let text = c.context.replace("{S}", &c.secret);
            let (out, n) = r.redact_counted(&text);
            let want = format!("[REDACTED:{}]", c.kind);
            if out.contains(&c.secret) || !out.contains(&want) || n == 0 {
                failures.push(format!("{text:?}\n  -> {out:?}\n  want {want}"));
                continue;
            }
            let (again, n2) = r.redact_counted(&out);
            if again != out || n2 != 0 {
                failures.push(format!("not idempotent: {out:?}\n  -> {again:?}"));
            }
            let (plain, _) = r.redact_unfiltered(&re, &text);
            if plain != out {
                failures.push(format!(
                    "prefilter changed {text:?}\n  {out:?}\n  {plain:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn look_alikes_survive() {
        let r = Redactor::new();
        let re = unfiltered();
        let list = survivors();
        assert!(list.len() >= 40);
        let mut failures = Vec::new();
        for text in &list {
            let out = r.redact(text);
            if out != text.as_str() || matches!(out, Cow::Owned(_)) {
                failures.push(format!("{text:?}\n  -> {out:?}"));
            }
            let (plain, _) = r.redact_unfiltered(&re, text);
            if plain != text.as_str() {
                failures.push(format!("(unfiltered) {text:?}\n  -> {plain:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn names_are_kept_and_values_replaced() {
        let r = Redactor::new();
        let mut f = Fake(7);
        let gh = format!("ghp_{}", f.mixed(ALNUM, 36));
        let pw = f.mixed(ALNUM, 12);
        let cases = [
            (
                format!("export GITHUB_TOKEN={gh}"),
                "export GITHUB_TOKEN=[REDACTED:github-token]".to_string(),
            ),
            (
                format!("psql postgres://app:{pw}@db/prod"),
                "psql postgres://app:[REDACTED:url-password]@db/prod".to_string(),
            ),
            (
                format!("DB_PASSWORD={pw}"),
                "DB_PASSWORD=[REDACTED:secret-assignment]".to_string(),
            ),
            (
                format!("mysql --password='{pw}' shop"),
                "mysql --password='[REDACTED:password-flag]' shop".to_string(),
            ),
            (
                format!("curl -H \"Authorization: Bearer {pw}\" x"),
                "curl -H \"Authorization: Bearer [REDACTED:authorization]\" x".to_string(),
            ),
            (
                format!("{{\"password\": \"{pw}\", \"user\": \"app\"}}"),
                "{\"password\": \"[REDACTED:secret-assignment]\", \"user\": \"app\"}".to_string(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(r.redact(&input), want);
        }
    }

    /// Issue 32: a secret word anywhere in the name, with the value's shape deciding.
    #[test]
    fn a_secret_word_inside_a_name_counts_when_the_value_looks_like_a_credential() {
        let r = Redactor::new();
        let re = unfiltered();
        let mut f = Fake(32);
        let hex = f.mixed(HEX, 64);
        let key = f.mixed(ALNUM, 28);
        let pw = format!("{}!{}", f.mixed(ALNUM, 9), f.mixed(ALNUM, 4));
        let uuid = format!(
            "{}-{}-4{}-a{}-{}",
            f.s(HEX, 8),
            f.s(HEX, 4),
            f.s(HEX, 3),
            f.s(HEX, 3),
            f.mixed(HEX, 12)
        );
        let redacted = [
            (
                format!("SECRET_KEY_BASE={hex}"),
                "SECRET_KEY_BASE=[REDACTED:secret-assignment]",
            ),
            (
                format!("export TOKEN_SIGNING='{key}'"),
                "export TOKEN_SIGNING='[REDACTED:secret-assignment]'",
            ),
            (
                format!("vault write auth/approle/login role_id=app secret_id={uuid}"),
                "vault write auth/approle/login role_id=app secret_id=[REDACTED:secret-assignment]",
            ),
            (
                format!("tokenSigning: \"{key}\""),
                "tokenSigning: \"[REDACTED:secret-assignment]\"",
            ),
            (
                format!("app --client-secret-value {key} --verbose"),
                "app --client-secret-value [REDACTED:secret-flag] --verbose",
            ),
            (
                format!("API_KEY_V2={key}"),
                "API_KEY_V2=[REDACTED:secret-assignment]",
            ),
            (
                format!("DB_PASSWORD_PROD={pw}"),
                "DB_PASSWORD_PROD=[REDACTED:secret-assignment]",
            ),
            (
                format!("{{\"session_key_primary\": \"{key}\"}}"),
                "{\"session_key_primary\": \"[REDACTED:secret-assignment]\"}",
            ),
        ];
        for (input, want) in &redacted {
            assert_eq!(r.redact(input), *want, "{input}");
            assert_eq!(
                r.redact_unfiltered(&re, input).0,
                *want,
                "(unfiltered) {input}"
            );
        }
        let mut json: Value = serde_json::json!({"secret_id": uuid, "auth_mode": "oauth"});
        r.redact_json(&mut json);
        assert_eq!(json["secret_id"], "[REDACTED:secret-assignment]");
        assert_eq!(json["auth_mode"], "oauth");
        for kept in [
            "TOKEN_COUNT=5",
            "max_tokens=4096",
            "auth_mode=oauth",
            "secret_name=my-app-secret-v2",
            "SECRET_NAME=ProdDatabaseCredentials",
            "token_url=https://auth.example.com/oauth/token",
            "PASSWORD_MIN_LENGTH=12",
            "password_file=/run/secrets/db",
            "--token-file ./ci/token.txt",
            "TOKEN_EXPIRES_AT=2026-11-28T10:00:00Z",
            "private_key_id=6f1e0b3c9d4a2b7e",
            "AWS_ACCESS_KEY_FINGERPRINT=ab:cd:ef:01:23:45:67:89",
            "monkey_patch=enabled",
            "tokenizer=cl100k_base",
            "expect -c 'spawn ./install.sh; expect \"Password:\"; send \"$pw\\r\"; interact'",
            "expect -c 'spawn x; expect \"Enter password:\"; send \"$pw\\r\"'",
            "deps/spl_token_2022-398ac718a3f0127b.d:1:/Users/dev/target/deps/x.so:",
            "auth_provider=GitHubEnterprise",
            "authDomain: \"wcr-entanglement-3f9a2.firebaseapp.com\"",
        ] {
            assert_eq!(r.redact(kept), kept);
            assert_eq!(r.redact_unfiltered(&re, kept).0, kept, "(unfiltered)");
        }
    }

    #[test]
    fn secrets_inside_other_matches_are_not_passed_over() {
        let r = Redactor::new();
        let mut f = Fake(19);
        let gh = format!("ghp_{}", f.mixed(ALNUM, 36));
        let bearer = f.mixed(ALNUM, 32);
        let pw = f.mixed(ALNUM, 12);
        let pw2 = f.mixed(ALNUM, 12);
        let sk = format!("sk-proj-{}", f.mixed(B64URL, 40));
        for text in [
            format!("curl -H \"Authorization: Bearer {bearer}\" -u admin:{pw} https://x.example"),
            format!("git clone https://{gh}:x-oauth-basic@github.com/acme/app.git"),
            format!("mysql -h db --password={pw2} -u root -p{pw} shop"),
            format!("curl -H 'Cookie: {sk}=1; sid={pw}' https://x.example"),
            format!("docker login -u deploy --password {pw2} -p {pw} registry.example.com"),
        ] {
            let out = r.redact(&text);
            for secret in [&gh, &bearer, &pw, &pw2, &sk] {
                assert!(!out.contains(secret.as_str()), "{secret} left in {out:?}");
            }
            assert_eq!(r.redact(&out), out, "idempotent");
        }
    }

    #[test]
    fn multi_line_private_keys() {
        let r = Redactor::new();
        let mut f = Fake(11);
        let body = f.pem_body(8, "\n");
        // Literal newlines, in a tool output.
        let text = format!(
            "$ cat key.pem\n-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----\n$ echo done"
        );
        assert_eq!(
            r.redact(&text),
            "$ cat key.pem\n[REDACTED:private-key]\n$ echo done"
        );
        // `\n` escapes, as raw JSON text has them.
        let escaped = body.replace('\n', "\\n");
        let json_text = format!(
            "{{\"tool\":\"Bash\",\"output\":\"-----BEGIN PRIVATE KEY-----\\n{escaped}\\n-----END PRIVATE KEY-----\\n\"}}"
        );
        let out = r.redact(&json_text);
        assert_eq!(
            out,
            "{\"tool\":\"Bash\",\"output\":\"[REDACTED:private-key]\\n\"}"
        );
        assert!(serde_json::from_str::<Value>(&out).is_ok());
        // Cut short by an output cap: no END line, still redacted, the note after it kept.
        let cut = format!(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n{}\n[output truncated]",
            &body[..200]
        );
        assert_eq!(r.redact(&cut), "[REDACTED:private-key]\n[output truncated]");
        // Indented in YAML.
        let yaml = format!(
            "tls:\n  key: |\n    -----BEGIN PRIVATE KEY-----\n    {}\n    -----END PRIVATE KEY-----\n  cert: ok",
            body.replace('\n', "\n    ")
        );
        assert_eq!(
            r.redact(&yaml),
            "tls:\n  key: |\n    [REDACTED:private-key]\n  cert: ok"
        );
    }

    #[test]
    fn json_values() {
        let r = Redactor::new();
        let mut f = Fake(13);
        let pw = f.mixed(ALNUM, 16);
        let gh = format!("ghp_{}", f.mixed(ALNUM, 36));
        let body = f.pem_body(4, "\n");
        let jwt = format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
            f.mixed(B64URL, 40),
            f.mixed(B64URL, 43)
        );
        let mut v = serde_json::json!({
            "command": format!("export GITHUB_TOKEN={gh} && git push"),
            "env": {"DB_PASSWORD": pw, "TOKEN_COUNT": "5", "PATH": "/usr/bin"},
            "headers": {"Authorization": format!("Bearer {jwt}"), "Accept": "*/*"},
            "private_key": format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n"),
            "items": [format!("postgres://u:{pw}@h/db"), 3, true, null],
            "max_tokens": 4096,
            "password": "",
        });
        let n = r.redact_json_counted(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "command": "export GITHUB_TOKEN=[REDACTED:github-token] && git push",
                "env": {"DB_PASSWORD": "[REDACTED:secret-assignment]", "TOKEN_COUNT": "5", "PATH": "/usr/bin"},
                "headers": {"Authorization": "Bearer [REDACTED:jwt]", "Accept": "*/*"},
                "private_key": "[REDACTED:private-key]",
                "items": ["postgres://u:[REDACTED:url-password]@h/db", 3, true, null],
                "max_tokens": 4096,
                "password": "",
            })
        );
        assert_eq!(n, 5);
        let before = v.clone();
        r.redact_json(&mut v);
        assert_eq!(v, before, "redact_json is idempotent");
    }

    #[test]
    fn raw_json_text_stays_json_and_agrees_with_redact_json() {
        let r = Redactor::new();
        let mut f = Fake(17);
        let pw = f.mixed(ALNUM, 16);
        let npm = format!("npm_{}", f.mixed(ALNUM, 36));
        let body = f.pem_body(3, "\n");
        let original = serde_json::json!({
            "type": "tool_use",
            "input": {"command": format!("NPM_TOKEN={npm} npm publish && echo \"DB_PASSWORD=\\\"{pw}\\\"\"")},
            "headers": {"Authorization": format!("Basic {}", f.mixed(B64, 24))},
            "config": {"password": pw, "private_key": format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")},
        });
        let line = original.to_string();
        let redacted_line = r.redact(&line);
        let parsed: Value = match serde_json::from_str(&redacted_line) {
            Ok(v) => v,
            Err(e) => panic!("{e}: {redacted_line}"),
        };
        let mut expected = original.clone();
        r.redact_json(&mut expected);
        assert_eq!(parsed, expected);
        assert!(!redacted_line.contains(&pw) && !redacted_line.contains(&npm));
    }

    #[test]
    fn shared_instance_and_borrowing() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Redactor>();
        let text = "cargo build --release && ./target/release/app --port 8080";
        assert!(matches!(redact(text), Cow::Borrowed(_)));
        assert_eq!(redact(""), "");
        assert_eq!(
            redact("password=hunter2"),
            "password=[REDACTED:secret-assignment]"
        );
    }

    #[test]
    fn a_cookie_that_holds_a_preference_is_kept() {
        let r = Redactor::new();
        let sid = "Zq8vR2mW4kT9xLp3Hs7N";
        let line =
            format!("curl -H 'Cookie: theme=dark; lang=en; sessionid={sid}; flag=abcdefgh' x");
        let (out, _) = r.redact_found(&line);
        assert!(out.contains("theme=dark; lang=en;"), "{out}");
        assert!(!out.contains(sid), "{out}");
        // A short word under a session's name is still its value.
        let (out, _) = r.redact_found("curl -H 'Cookie: sid=abcdefgh' x");
        assert!(!out.contains("abcdefgh"), "{out}");
    }

    #[test]
    fn random_text_does_not_panic_and_matches_the_unfiltered_search() {
        let r = Redactor::new();
        let re = unfiltered();
        let mut f = Fake(0xDEAD_BEEF);
        let tokens = [
            format!("ghp_{}", f.mixed(ALNUM, 36)),
            format!("AKIA{}", f.s(UPPER_DIGIT, 16)),
            format!("sk-proj-{}", f.mixed(B64URL, 40)),
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
                f.mixed(B64URL, 20),
                f.mixed(B64URL, 20)
            ),
            f.mixed(B64, 40),
        ];
        let mut fragments: Vec<&str> = vec![
            "password",
            "=",
            ":",
            " ",
            "\"",
            "'",
            "\\",
            "\\n",
            "\n",
            "-",
            "--token",
            "-p",
            "_KEY",
            "TOKEN",
            "Token",
            "secret",
            "Authorization: Bearer ",
            "Cookie: ",
            "://",
            "@",
            "u:p",
            "-----BEGIN RSA PRIVATE KEY-----",
            "-----END RSA PRIVATE KEY-----",
            "ghp_",
            "sk-",
            "AKIA",
            "eyJ",
            ".",
            "mysql ",
            "docker login ",
            "curl -u ",
            "pass:",
            "$",
            "{",
            "}",
            "[REDACTED:jwt]",
            "é",
            "日本",
            "🙂",
            "\t",
            "abc",
            "XYZ",
            "0123",
            "/",
            "+",
            ";",
            "&",
        ];
        fragments.extend(tokens.iter().map(String::as_str));
        fragments.extend([
            "https://",
            " -u ",
            " -p",
            "Bearer ",
            "export ",
            "=\"",
            "\\\"",
            "_TOKEN=",
            "--password ",
            "Set-Cookie: a=",
            "login",
            "redis-cli",
            "sshpass",
            "-passin ",
        ]);
        for _ in 0..3000 {
            let mut s = String::new();
            for _ in 0..(f.next() % 24) {
                match f.next() % 4 {
                    0 => {
                        let n = (f.next() % 50) as usize + 3;
                        s.push_str(&f.mixed(ALNUM, n));
                    }
                    1 => {
                        // Bytes turned into a string, as a log with broken encoding would be.
                        let bytes: Vec<u8> = (0..f.next() % 12).map(|_| f.next() as u8).collect();
                        s.push_str(&String::from_utf8_lossy(&bytes));
                    }
                    _ => s.push_str(fragments[(f.next() % fragments.len() as u64) as usize]),
                }
            }
            let (once, _) = r.redact_counted(&s);
            let (plain, _) = r.redact_unfiltered(&re, &s);
            assert_eq!(once, plain, "prefilter changed the result for {s:?}");
            let twice = r.redact(&once);
            assert_eq!(twice, once, "not idempotent for {s:?}");
        }
    }

    #[test]
    fn name_classification() {
        for name in [
            "GITHUB_TOKEN",
            "api_key",
            "apiKey",
            "APIKEY",
            "x-api-key",
            "DB_PASSWORD",
            "dbPassword",
            "MYSQL_PWD",
            "client_secret",
            "_authToken",
            "AccountKey",
            "SMTP_PASS",
            "passphrase",
            "token",
            "password",
            "secret",
            "--api-key",
            "--db-password",
            "client-key-data",
            "identitytoken",
        ] {
            let flag = name.starts_with('-');
            assert!(classify_name(name, flag).is_some(), "{name} names a secret");
        }
        for name in [
            "key",
            "monkey",
            "hotkey",
            "bypass",
            "OLDPWD",
            "PUBLIC_KEY",
            "publishableKey",
            "primary_key",
            "sort_key",
            "eos_token",
            "nextPageToken",
            "max_token",
            "passkey",
            "--ask-pass",
            "--no-password",
            "--key",
            "client-certificate-data",
            "cache-key-data",
            "identity",
        ] {
            let flag = name.starts_with('-');
            assert!(
                classify_name(name, flag).is_none(),
                "{name} does not name a secret"
            );
        }
    }
}
