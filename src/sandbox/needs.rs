//! What a tool needs beyond the sandbox's defaults, and at which level the policy puts each
//! kind of need: `allow` (granted without asking), `ask` (the candidate is validated as far as
//! the sandbox allows and proposed for review with the need listed; a person grants it with
//! `toolsmith approve ID --grant NEED`) or `deny` (refused, naming the policy line that denies).
//!
//! A need is written as `kind:value` — `program:curl` (a program of an `ask` capability domain),
//! `host:127.0.0.1:8080` (a network host through the proxy), `socket:/var/run/docker.sock` (a
//! host socket), `credential:~/.kube/config` (a credential file, read-only) — in the manifest's
//! `needs` and `granted`, in `toolsmith show`, in `--grant` and in the approval commit's
//! `Granted:` trailers.
//!
//! The levels of grants live in the policy's `[grants.levels]` table (the levels of capability
//! domains in `[validate.levels]`, which the validate stage reads):
//!
//! ```toml
//! [grants.levels]
//! hosts = "ask"         # a host [grants] hosts does not list
//! host_sockets = "ask"  # a socket [grants] host_sockets does not list
//! credentials = "ask"   # a credential file of a program the tool runs
//! ```

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::grants::HostPort;
use super::policy::SandboxPolicyError;

/// How the policy treats a need: granted, asked of a person at review, or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Granted without asking.
    Allow,
    /// Proposed for review; granted by `toolsmith approve --grant`.
    Ask,
    /// Refused.
    Deny,
}

impl Level {
    /// The level written `text` in a policy, or why not.
    pub fn parse(text: &str) -> Result<Level, String> {
        match text {
            "allow" => Ok(Level::Allow),
            "ask" => Ok(Level::Ask),
            "deny" => Ok(Level::Deny),
            other => Err(format!(
                "`{}` is not a level: use \"allow\", \"ask\" or \"deny\"",
                other.escape_debug()
            )),
        }
    }

    /// The name written in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Ask => "ask",
            Level::Deny => "deny",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A level and where the policy set it, so a refusal can name the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelAt {
    /// The level.
    pub level: Level,
    /// The dotted key that sets it (`grants.levels.hosts`, `validate.levels.network`).
    pub key: String,
    /// The 1-based line of the policy file that sets it; `None` for a built-in default.
    pub line: Option<usize>,
}

impl LevelAt {
    /// A built-in default.
    pub fn default_of(key: &str, level: Level) -> LevelAt {
        LevelAt {
            level,
            key: key.to_owned(),
            line: None,
        }
    }

    /// Where the level comes from, for messages: `policy.toml:12 (grants.levels.hosts =
    /// "deny")`, or the built-in default and where to change it.
    pub fn origin(&self, file: &str) -> String {
        let allow_list = self.key.ends_with("allow_domains");
        match self.line {
            // The older lists set a level by listing the domain (or, for `allow_domains`, by
            // leaving it out).
            Some(line) if allow_list && self.level == Level::Deny => {
                format!("{file}:{line} ({} does not list it)", self.key)
            }
            Some(line) if self.key.ends_with("_domains") => {
                format!("{file}:{line} ({} lists it)", self.key)
            }
            Some(line) => format!("{file}:{line} ({} = \"{}\")", self.key, self.level),
            None => format!(
                "the built-in default {} = \"{}\" (set it in {})",
                self.key,
                self.level,
                super::grants::policy_place(file)
            ),
        }
    }
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The policy's levels of grants: what happens when a tool needs a host, a host socket or a
/// credential file the policy's `[grants]` does not list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantLevels {
    /// A network host `[grants] hosts` does not list.
    pub hosts: LevelAt,
    /// A host socket `[grants] host_sockets` does not list.
    pub host_sockets: LevelAt,
    /// A credential file (read-only) of a program the tool runs.
    pub credentials: LevelAt,
}

impl Default for GrantLevels {
    /// Everything asked of a person.
    fn default() -> Self {
        GrantLevels {
            hosts: LevelAt::default_of("grants.levels.hosts", Level::Ask),
            host_sockets: LevelAt::default_of("grants.levels.host_sockets", Level::Ask),
            credentials: LevelAt::default_of("grants.levels.credentials", Level::Ask),
        }
    }
}

#[derive(Deserialize)]
struct LevelsDoc {
    grants: Option<GrantsDoc>,
}

#[derive(Deserialize)]
struct GrantsDoc {
    levels: Option<toml::Spanned<toml::Table>>,
}

impl GrantLevels {
    /// Reads `[grants.levels]` from a policy file's text (absent: everything `ask`). A bad
    /// key or value is refused naming the file, the line and what to write.
    pub fn from_text(text: &str, file: &str) -> Result<GrantLevels, SandboxPolicyError> {
        let mut levels = GrantLevels::default();
        let doc: LevelsDoc = toml::from_str(text).map_err(|e| SandboxPolicyError::Syntax {
            file: file.into(),
            message: e.message().to_owned(),
        })?;
        let Some(table) = doc.grants.and_then(|g| g.levels) else {
            return Ok(levels);
        };
        let table_line = line_at(text, table.span().start);
        for (key, value) in table.get_ref() {
            let line = value_line(text, table.span(), key).unwrap_or(table_line);
            let invalid = |message: String| SandboxPolicyError::Invalid {
                file: file.into(),
                key: format!("grants.levels.{key}"),
                message: format!("line {line}: {message}"),
            };
            let slot = match key.as_str() {
                "hosts" => &mut levels.hosts,
                "host_sockets" => &mut levels.host_sockets,
                "credentials" => &mut levels.credentials,
                other => {
                    return Err(invalid(format!(
                        "`{}` is not a kind of grant: use hosts, host_sockets or credentials",
                        other.escape_debug()
                    )));
                }
            };
            let text_value = value.as_str().ok_or_else(|| {
                invalid(format!(
                    "`{value}` is not a level: use \"allow\", \"ask\" or \"deny\""
                ))
            })?;
            slot.level = Level::parse(text_value).map_err(invalid)?;
            slot.line = Some(line);
        }
        Ok(levels)
    }

    /// The level of a need's kind (programs are the code policy's, never asked here: `None`).
    pub fn of(&self, need: &Need) -> Option<&LevelAt> {
        match need {
            Need::Host(_) => Some(&self.hosts),
            Need::Socket(_) => Some(&self.host_sockets),
            Need::Credential(_) => Some(&self.credentials),
            Need::Program(_) => None,
        }
    }
}

/// The line of `key = …` in the table whose span starts `span` of `text`: for a `[table]`,
/// the first line below its header, before the next header, that starts with the key; for
/// an inline table, its own line (toml keeps no span for a table's values).
pub fn value_line(text: &str, span: std::ops::Range<usize>, key: &str) -> Option<usize> {
    let start = span.start.min(text.len());
    let mut lines = text[start..].split_inclusive('\n');
    let first = lines.next()?;
    if !first.trim_start().starts_with('[') {
        return Some(line_at(text, start));
    }
    let mut offset = start + first.len();
    for line in lines {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            return None;
        }
        let bare = trimmed
            .strip_prefix(key)
            .or_else(|| trimmed.strip_prefix(&format!("\"{key}\"")));
        if bare.is_some_and(|rest| rest.trim_start().starts_with('=')) {
            return Some(line_at(text, offset));
        }
        offset += line.len();
    }
    None
}

/// One need of a tool beyond the sandbox's defaults.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Need {
    /// A program of a capability domain the policy asks about (`program:curl`).
    Program(String),
    /// A network host through the proxy (`host:example.org:443`).
    Host(HostPort),
    /// A host socket bound into the sandbox (`socket:/var/run/docker.sock`).
    Socket(PathBuf),
    /// A credential file, read-only, as written from the home directory
    /// (`credential:~/.kube/config`).
    Credential(String),
}

impl Need {
    /// Parses `kind:value`, or says what a need looks like.
    pub fn parse(text: &str) -> Result<Need, String> {
        let bad = || {
            format!(
                "`{}` is not a need: write program:NAME, host:HOST:PORT, socket:/PATH or \
                 credential:~/PATH",
                text.escape_debug()
            )
        };
        let (kind, value) = text.split_once(':').ok_or_else(bad)?;
        match kind {
            "program"
                if !value.is_empty()
                    && !value.contains('/')
                    && !value.chars().any(char::is_whitespace) =>
            {
                Ok(Need::Program(value.to_owned()))
            }
            "host" => HostPort::parse(value, false)
                .map(Need::Host)
                .map_err(|e| format!("{e}; {}", bad())),
            "socket" if value.starts_with('/') => Ok(Need::Socket(PathBuf::from(value))),
            "credential" if value.starts_with("~/") && !value.contains("..") => {
                Ok(Need::Credential(value.to_owned()))
            }
            _ => Err(bad()),
        }
    }

    /// The kind, as written before the colon.
    pub fn kind(&self) -> &'static str {
        match self {
            Need::Program(_) => "program",
            Need::Host(_) => "host",
            Need::Socket(_) => "socket",
            Need::Credential(_) => "credential",
        }
    }
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Need::Program(p) => write!(f, "program:{p}"),
            Need::Host(h) => write!(f, "host:{h}"),
            Need::Socket(s) => write!(f, "socket:{}", s.display()),
            Need::Credential(c) => write!(f, "credential:{c}"),
        }
    }
}

impl Serialize for Need {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Need {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Need, D::Error> {
        let text = String::deserialize(deserializer)?;
        Need::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `a, b, c`: needs as messages list them.
pub fn list(needs: &[Need]) -> String {
    needs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_parse_and_print_back() {
        for text in [
            "program:curl",
            "host:127.0.0.1:8080",
            "host:pypi.org:443",
            "socket:/var/run/docker.sock",
            "credential:~/.kube/config",
        ] {
            let need = Need::parse(text).expect(text);
            assert_eq!(need.to_string(), text);
        }
        for bad in [
            "curl",
            "program:",
            "program:/usr/bin/curl",
            "host:pypi.org",
            "socket:run/x.sock",
            "credential:/etc/shadow",
            "credential:~/../etc/shadow",
            "file:x",
        ] {
            let err = Need::parse(bad).expect_err(bad);
            assert!(err.contains("program:NAME"), "{bad}: {err}");
        }
    }

    #[test]
    fn grant_levels_default_to_ask_and_are_read_with_their_lines() {
        assert_eq!(
            GrantLevels::from_text("", "p.toml").expect("empty"),
            GrantLevels::default()
        );
        let text =
            "[grants]\nhosts = []\n\n[grants.levels]\nhosts = \"deny\"\ncredentials = \"allow\"\n";
        let levels = GrantLevels::from_text(text, "p.toml").expect("valid");
        assert_eq!(levels.hosts.level, Level::Deny);
        assert_eq!(levels.hosts.line, Some(5));
        assert_eq!(levels.credentials.level, Level::Allow);
        assert_eq!(levels.credentials.line, Some(6));
        assert_eq!(levels.host_sockets.level, Level::Ask);
        assert_eq!(
            levels.hosts.origin("p.toml"),
            "p.toml:5 (grants.levels.hosts = \"deny\")"
        );
        assert!(
            levels
                .host_sockets
                .origin("p.toml")
                .contains("built-in default"),
            "{}",
            levels.host_sockets.origin("p.toml")
        );
    }

    #[test]
    fn bad_grant_levels_name_the_file_and_the_line() {
        for (text, expect) in [
            (
                "[grants.levels]\nhosts = \"maybe\"\n",
                "line 2: `maybe` is not a level",
            ),
            (
                "[grants.levels]\n\nhosts = 1\n",
                "line 3: `1` is not a level",
            ),
            (
                "[grants.levels]\nnetwork = \"ask\"\n",
                "line 2: `network` is not a kind of grant",
            ),
        ] {
            let err = GrantLevels::from_text(text, "/etc/p.toml").expect_err(text);
            let message = err.to_string();
            assert!(
                message.starts_with("/etc/p.toml: grants.levels.") && message.contains(expect),
                "{text}: {message}"
            );
        }
    }
}
