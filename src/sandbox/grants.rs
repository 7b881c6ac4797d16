//! The `[grants]` table of the policy: what of the host a tool may ever be granted beyond the
//! sandbox's defaults — which kinds of the user's toolchains may be bound (read-only), which
//! network hosts the filtering proxy may admit, which host sockets may be bound. Toolchains: every
//! kind by default; network and host sockets: nothing by default, so a user who lists nothing
//! keeps the sandbox without network and without host sockets.
//!
//! ```toml
//! [grants]
//! # Kinds of toolchain under the home directory a tool may use (read-only): rustup, pyenv,
//! # venv, nvm, local-bin. Default: all of them; [] keeps tools to the system directories.
//! toolchains = ["rustup", "pyenv", "venv", "nvm", "local-bin"]
//! # host:port pairs the filtering proxy may admit for a tool (`*.` matches any subdomain)
//! hosts = ["pypi.org:443", "files.pythonhosted.org:443", "127.0.0.1:8080"]
//! # host sockets that may be bound into a tool's sandbox (root-equivalent for container engines)
//! host_sockets = ["/run/docker.sock"]
//! ```
//!
//! A tool's manifest names what it needs (`sandbox.toolchains`, `sandbox.hosts`,
//! `sandbox.host_sockets`); a run and validation refuse what the policy does not list, naming
//! the line that would allow it ([`Grants::toolchain_refusal`], [`Grants::host_line`],
//! [`Grants::socket_line`]).

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::needs::{GrantLevels, Level, Need};
use super::policy::SandboxPolicyError;
use super::profile::{Toolchain, ToolchainKind};

/// A `host:port` pair: a name (lower case, no trailing dot) or an IP literal, and a port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct HostPort {
    /// The host name or IP literal (an IPv6 literal without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl HostPort {
    /// Parses `host:port` (`[v6]:port` for IPv6 literals). The host is lower-cased and loses a
    /// trailing dot; a name must be made of letters, digits, `-`, `_` and dots. `wildcard`
    /// allows a leading `*.` (policy patterns).
    pub fn parse(text: &str, wildcard: bool) -> Result<HostPort, String> {
        let bad = |why: &str| format!("`{text}` is not a host:port pair: {why}");
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, port) = rest
                .split_once("]:")
                .ok_or_else(|| bad("an IPv6 literal is written [address]:port"))?;
            if host.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad("the bracketed part is not an IPv6 address"));
            }
            (host.to_owned(), port)
        } else {
            let (host, port) = text
                .rsplit_once(':')
                .ok_or_else(|| bad("the port is missing (write host:443)"))?;
            (host.trim_end_matches('.').to_ascii_lowercase(), port)
        };
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
        let name = if wildcard {
            host.strip_prefix("*.").unwrap_or(&host)
        } else {
            &host
        };
        let literal = name.parse::<IpAddr>().is_ok();
        let valid_name = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !literal && !valid_name {
            return Err(bad("the host is not a DNS name or an IP address"));
        }
        if literal && name != host {
            return Err(bad("a wildcard applies to names, not IP addresses"));
        }
        Ok(HostPort { host, port })
    }

    /// Whether the host is an IP literal.
    pub fn is_ip_literal(&self) -> bool {
        self.host.parse::<IpAddr>().is_ok()
    }

    /// Whether this pattern (possibly `*.domain`) admits `target`. An IP literal is admitted
    /// only by the same literal: a name never stands for an address.
    pub fn admits(&self, target: &HostPort) -> bool {
        if self.port != target.port {
            return false;
        }
        match self.host.strip_prefix("*.") {
            Some(domain) => {
                !target.is_ip_literal()
                    && target
                        .host
                        .strip_suffix(domain)
                        .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1)
            }
            None => self.host == target.host,
        }
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// The `host:port` of an `http://` or `https://` URL (default ports 80 and 443); `None` for
/// another scheme or a URL carrying credentials.
pub fn url_host(url: &str) -> Option<HostPort> {
    let (rest, default_port) = if let Some(rest) = url.strip_prefix("https://") {
        (rest, 443)
    } else {
        (url.strip_prefix("http://")?, 80)
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let has_port = match authority.rfind(']') {
        Some(bracket) => authority[bracket..].contains(':'),
        None => authority.contains(':'),
    };
    let text = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    };
    HostPort::parse(&text, false).ok()
}

/// The policy's `[grants]`: what may ever be granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grants {
    /// Kinds of toolchain that may be bound into the sandbox.
    pub toolchains: BTreeSet<ToolchainKind>,
    /// `host:port` patterns the proxy may admit (`*.domain:port` matches subdomains).
    pub hosts: Vec<HostPort>,
    /// Host sockets that may be bound into a sandbox, as written (absolute paths).
    pub host_sockets: Vec<PathBuf>,
    /// What happens to a host, socket or credential file not listed (`[grants.levels]`:
    /// `ask` by default).
    pub levels: GrantLevels,
}

impl Default for Grants {
    /// Every kind of toolchain; no network host, no host socket.
    fn default() -> Self {
        Grants {
            toolchains: ToolchainKind::ALL.into_iter().collect(),
            hosts: Vec::new(),
            host_sockets: Vec::new(),
            levels: GrantLevels::default(),
        }
    }
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrants {
    toolchains: Option<Vec<String>>,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    host_sockets: Vec<PathBuf>,
    /// Read with its lines by `GrantLevels::from_text`.
    #[allow(dead_code)]
    levels: Option<toml::Value>,
}

/// Where a line of `[grants]` goes: the policy file named, or, when the built-in policy is in
/// force, a file of the user's own, since the built-in one is no file to edit.
pub fn policy_place(file: &str) -> String {
    if file == super::policy::DEFAULT_FILE {
        "a policy file of your own (the built-in policy grants none: start one with \
         `toolsmith config policy > policy.toml` and name it with `policy` under [generate] in \
         the configuration)"
            .to_owned()
    } else {
        file.to_owned()
    }
}

impl Grants {
    /// Reads the `[grants]` table of a parsed policy file (absent: the defaults — every kind of
    /// toolchain, no host, no socket). The error names the key and what to write.
    pub fn from_table(doc: &toml::Table, file: &str) -> Result<Grants, SandboxPolicyError> {
        let Some(table) = doc.get("grants") else {
            return Ok(Grants::default());
        };
        let raw: RawGrants =
            table
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| SandboxPolicyError::Syntax {
                    file: file.into(),
                    message: format!("[grants]: {}", e.message()),
                })?;
        let invalid = |key: &str, message: String| SandboxPolicyError::Invalid {
            file: file.into(),
            key: format!("grants.{key}"),
            message,
        };
        let mut toolchains: BTreeSet<ToolchainKind> = ToolchainKind::ALL.into_iter().collect();
        if let Some(kinds) = raw.toolchains {
            toolchains = BTreeSet::new();
            for name in kinds {
                let kind = ToolchainKind::from_name(&name).ok_or_else(|| {
                    invalid(
                        "toolchains",
                        format!(
                            "`{}` is not a kind of toolchain: use {}",
                            name.escape_debug(),
                            kind_list(ToolchainKind::ALL)
                        ),
                    )
                })?;
                toolchains.insert(kind);
            }
        }
        let hosts = raw
            .hosts
            .iter()
            .map(|h| HostPort::parse(h, true).map_err(|e| invalid("hosts", e)))
            .collect::<Result<Vec<_>, _>>()?;
        for socket in &raw.host_sockets {
            if !socket.is_absolute() {
                return Err(invalid(
                    "host_sockets",
                    format!("`{}` is not an absolute path", socket.display()),
                ));
            }
        }
        Ok(Grants {
            toolchains,
            hosts,
            host_sockets: raw.host_sockets,
            levels: GrantLevels::default(),
        })
    }

    /// Whether the policy grants toolchains of `kind`.
    pub fn allows(&self, kind: ToolchainKind) -> bool {
        self.toolchains.contains(&kind)
    }

    /// Why `toolchain` is refused under the policy `file`, with the exact line that would allow
    /// it; `None` when the policy grants it.
    pub fn toolchain_refusal(&self, toolchain: &Toolchain, file: &str) -> Option<String> {
        if self.allows(toolchain.kind) {
            return None;
        }
        let mut wanted = self.toolchains.clone();
        wanted.insert(toolchain.kind);
        let place = toolchain
            .paths
            .first()
            .map(|p| format!(" at {}", p.display()))
            .unwrap_or_default();
        Some(format!(
            "`{}` comes from the user's {} toolchain{place}, which the policy {file} does not \
             grant: add \"{}\" to [grants] toolchains in {} (toolchains = [{}])",
            toolchain.program,
            toolchain.kind,
            toolchain.kind,
            policy_place(file),
            kind_list(wanted)
        ))
    }

    /// Whether the policy may grant `target`: `[grants] hosts` lists it, or hosts are at
    /// level `allow`.
    pub fn allows_host(&self, target: &HostPort) -> bool {
        self.levels.hosts.level == Level::Allow
            || self.hosts.iter().any(|pattern| pattern.admits(target))
    }

    /// Whether the policy names `socket` (compared as written, then canonical on both sides),
    /// or host sockets are at level `allow`.
    pub fn allows_socket(&self, socket: &Path) -> bool {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        self.levels.host_sockets.level == Level::Allow
            || self
                .host_sockets
                .iter()
                .any(|s| s == socket || canonical(s) == canonical(socket))
    }

    /// The level of a host or socket need the policy does not list (`None`: it lists it, or
    /// the need is not of those kinds).
    pub fn unlisted_level(&self, need: &Need) -> Option<&super::needs::LevelAt> {
        match need {
            Need::Host(h) if !self.allows_host(h) => Some(&self.levels.hosts),
            Need::Socket(s) if !self.allows_socket(s) => Some(&self.levels.host_sockets),
            Need::Credential(_) => Some(&self.levels.credentials),
            _ => None,
        }
    }

    /// These grants widened by what a person granted a tool at approval (its manifest's
    /// `granted`): each host and socket granted is admitted for this run, unless the policy
    /// now puts its kind at `deny` — then the refusal names the line that denies it.
    pub fn with_approved(&self, granted: &[Need], file: &str) -> Result<Grants, String> {
        let mut grants = self.clone();
        for need in granted {
            let Some(level) = self.unlisted_level(need) else {
                continue;
            };
            if level.level == Level::Deny {
                return Err(format!(
                    "{need} was granted at approval, but the policy now denies it: {}",
                    level.origin(file)
                ));
            }
            match need {
                Need::Host(h) => grants.hosts.push(h.clone()),
                Need::Socket(s) => grants.host_sockets.push(s.clone()),
                Need::Program(_) | Need::Credential(_) => {}
            }
        }
        Ok(grants)
    }

    /// The policy line that would allow `target`, for refusals.
    pub fn host_line(target: &HostPort, file: &str) -> String {
        format!(
            "add \"{target}\" to [grants] hosts in {}",
            policy_place(file)
        )
    }

    /// The policy line that would allow `socket`, for refusals.
    pub fn socket_line(socket: &Path, file: &str) -> String {
        format!(
            "add \"{}\" to [grants] host_sockets in {} (it gives root-equivalent power over \
             the host for a container engine's socket)",
            socket.display(),
            policy_place(file)
        )
    }

    /// The hosts of `asked` (a manifest's `sandbox.hosts`) parsed, each checked against the
    /// policy: the refusal names the line that would allow the first one not granted.
    pub fn check_hosts(&self, asked: &[String], file: &str) -> Result<Vec<HostPort>, String> {
        let mut granted = Vec::new();
        for text in asked {
            let target = HostPort::parse(text, false)?;
            if !self.allows_host(&target) {
                return Err(format!(
                    "the tool needs the network host {target}, which the policy does not \
                     grant: {}",
                    Grants::host_line(&target, file)
                ));
            }
            if !granted.contains(&target) {
                granted.push(target);
            }
        }
        Ok(granted)
    }

    /// The sockets of `asked` (a manifest's `sandbox.host_sockets`), each checked against the
    /// policy.
    pub fn check_sockets(&self, asked: &[PathBuf], file: &str) -> Result<Vec<PathBuf>, String> {
        for socket in asked {
            if !socket.is_absolute() {
                return Err(format!(
                    "the host socket `{}` is not an absolute path",
                    socket.display()
                ));
            }
            if !self.allows_socket(socket) {
                return Err(format!(
                    "the tool needs the host socket {}, which the policy does not grant: {}",
                    socket.display(),
                    Grants::socket_line(socket, file)
                ));
            }
        }
        Ok(asked.to_vec())
    }
}

/// `"a", "b"`: kinds as the policy writes them.
fn kind_list(kinds: impl IntoIterator<Item = ToolchainKind>) -> String {
    kinds
        .into_iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The plain warning shown at review and in `toolsmith show` for a granted host socket.
pub fn socket_warning(socket: &Path) -> String {
    format!(
        "WARNING: this tool is granted the host socket {}: whatever it sends there acts with \
         the power of the service behind it — for a container engine (Docker, Podman) that is \
         root-equivalent power over the host",
        socket.display()
    )
}

/// What a tool may reach beyond the sandbox's defaults, as the review commit, `toolsmith
/// show` and `toolsmith review` show it: network hosts through the proxy, and each host socket
/// with a plain warning.
pub fn reach_lines(profile: &super::SandboxProfile) -> Vec<String> {
    let mut lines = Vec::new();
    if !profile.hosts.is_empty() {
        lines.push(format!(
            "Network: may reach {} through toolsmith's filtering proxy, nothing else.",
            profile.hosts.join(", ")
        ));
    }
    for socket in &profile.host_sockets {
        lines.push(socket_warning(socket));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(text: &str) -> HostPort {
        HostPort::parse(text, false).unwrap()
    }

    #[test]
    fn host_ports_parse_and_print() {
        assert_eq!(
            hp("PyPI.org.:443"),
            HostPort {
                host: "pypi.org".into(),
                port: 443
            }
        );
        assert_eq!(hp("[::1]:8080").to_string(), "[::1]:8080");
        assert_eq!(hp("127.0.0.1:80").to_string(), "127.0.0.1:80");
        for bad in [
            "pypi.org",
            "pypi.org:0",
            "pypi.org:x",
            "a b:1",
            ":443",
            "[::1:80",
        ] {
            assert!(HostPort::parse(bad, false).is_err(), "{bad}");
        }
        assert!(HostPort::parse("*.example.org:443", false).is_err());
        assert!(HostPort::parse("*.example.org:443", true).is_ok());
        assert!(HostPort::parse("*.10.0.0.1:443", true).is_err());
    }

    #[test]
    fn patterns_admit_exact_hosts_subdomains_and_literal_addresses_only() {
        let exact = HostPort::parse("pypi.org:443", true).unwrap();
        assert!(exact.admits(&hp("pypi.org:443")));
        assert!(!exact.admits(&hp("pypi.org:80")), "another port");
        assert!(!exact.admits(&hp("evil.pypi.org:443")));
        let wild = HostPort::parse("*.example.org:443", true).unwrap();
        assert!(wild.admits(&hp("a.example.org:443")));
        assert!(!wild.admits(&hp("example.org:443")));
        assert!(!wild.admits(&hp("badexample.org:443")));
        let literal = hp("127.0.0.1:8080");
        assert!(literal.admits(&hp("127.0.0.1:8080")));
        assert!(
            !literal.admits(&hp("localhost:8080")),
            "a name is not an address"
        );
        assert!(
            !exact.admits(&hp("151.101.0.223:443")),
            "nor an address a name"
        );
    }

    #[test]
    fn the_table_is_read_and_refusals_name_the_line() {
        let doc: toml::Table = toml::from_str(
            "[grants]\nhosts = [\"pypi.org:443\"]\nhost_sockets = [\"/run/docker.sock\"]\n",
        )
        .unwrap();
        let grants = Grants::from_table(&doc, "/p.toml").unwrap();
        assert_eq!(grants.hosts, vec![hp("pypi.org:443")]);
        assert_eq!(
            grants.check_hosts(&["pypi.org:443".into()], "/p.toml"),
            Ok(vec![hp("pypi.org:443")])
        );
        let err = grants
            .check_hosts(&["files.pythonhosted.org:443".into()], "/p.toml")
            .unwrap_err();
        assert!(
            err.ends_with("add \"files.pythonhosted.org:443\" to [grants] hosts in /p.toml"),
            "{err}"
        );
        assert!(grants.allows_socket(Path::new("/run/docker.sock")));
        let err = grants
            .check_sockets(&[PathBuf::from("/run/podman.sock")], "/p.toml")
            .unwrap_err();
        assert!(err.contains("add \"/run/podman.sock\" to [grants] host_sockets in /p.toml"));
        assert_eq!(
            Grants::from_table(&toml::Table::new(), "x").unwrap(),
            Grants::default()
        );
        for bad in [
            "[grants]\nhosts = [\"pypi.org\"]\n",
            "[grants]\nhost_sockets = [\"run/x.sock\"]\n",
            "[grants]\nnetwork = true\n",
        ] {
            let doc: toml::Table = toml::from_str(bad).unwrap();
            assert!(Grants::from_table(&doc, "x").is_err(), "{bad}");
        }
    }

    fn grants(text: &str) -> Result<Grants, SandboxPolicyError> {
        let doc: toml::Table = toml::from_str(text).expect("toml");
        Grants::from_table(&doc, "/p.toml")
    }

    #[test]
    fn every_kind_by_default_and_narrowed_by_the_policy() {
        let all = Grants::from_table(&toml::Table::new(), "/p.toml").expect("default");
        assert!(ToolchainKind::ALL.iter().all(|k| all.allows(*k)));
        assert!(all.hosts.is_empty() && all.host_sockets.is_empty());
        let some = grants("[grants]\ntoolchains = [\"rustup\"]\n").expect("valid");
        assert!(some.allows(ToolchainKind::Rustup));
        assert!(!some.allows(ToolchainKind::Pyenv));
        let none = grants("[grants]\ntoolchains = []\n").expect("ok");
        assert!(none.toolchains.is_empty());
        let hosts_only = grants("[grants]\nhosts = [\"pypi.org:443\"]\n").expect("ok");
        assert!(
            ToolchainKind::ALL.iter().all(|k| hosts_only.allows(*k)),
            "granting hosts leaves the toolchains' default alone"
        );
    }

    #[test]
    fn what_a_person_granted_widens_one_run_unless_the_policy_now_denies_it() {
        let host = Need::parse("host:127.0.0.1:8080").expect("need");
        let socket = Need::parse("socket:/run/x.sock").expect("need");
        let curl = Need::parse("program:curl").expect("need");
        let ask = grants_of("");
        assert!(
            !ask.allows_host(&hp("127.0.0.1:8080")),
            "asked: not granted by itself"
        );
        let widened = ask
            .with_approved(&[host.clone(), socket.clone(), curl], "/p.toml")
            .expect("ask");
        assert!(widened.allows_host(&hp("127.0.0.1:8080")));
        assert!(!widened.allows_host(&hp("127.0.0.1:8081")), "nothing more");
        assert!(widened.allows_socket(Path::new("/run/x.sock")));
        let deny = grants_of("[grants.levels]\nhosts = \"deny\"\n");
        let err = deny.with_approved(&[host], "/p.toml").expect_err("denied");
        assert!(
            err.contains("/p.toml:2 (grants.levels.hosts = \"deny\")"),
            "{err}"
        );
        let allow = grants_of("[grants.levels]\nhost_sockets = \"allow\"\n");
        assert!(allow.allows_socket(Path::new("/run/any.sock")));
        assert!(!allow.allows_host(&hp("127.0.0.1:8080")));
    }

    /// The grants of a policy file's text.
    fn grants_of(text: &str) -> Grants {
        crate::sandbox::SandboxPolicy::from_toml(text, "/p.toml")
            .expect("policy")
            .grants
    }

    #[test]
    fn unknown_kinds_and_keys_are_named() {
        match grants("[grants]\ntoolchains = [\"conda\"]\n").expect_err("unknown kind") {
            SandboxPolicyError::Invalid { key, message, .. } => {
                assert_eq!(key, "grants.toolchains");
                assert!(message.contains("`conda`") && message.contains("\"local-bin\""));
            }
            other => panic!("{other:?}"),
        }
        let typo = grants("[grants]\ntoolchain = []\n").expect_err("typo");
        let message = typo.to_string();
        assert!(
            message.contains("[grants]") && message.contains("toolchain"),
            "{message}"
        );
    }

    #[test]
    fn a_refusal_gives_the_line_that_allows_it() {
        let grants = grants("[grants]\ntoolchains = [\"rustup\"]\n").expect("valid");
        let python = Toolchain {
            program: "python".into(),
            kind: ToolchainKind::Pyenv,
            paths: vec!["/home/a/.pyenv/versions/3.11.7".into()],
            env: Default::default(),
        };
        let why = grants
            .toolchain_refusal(&python, "/etc/toolsmith/policy.toml")
            .expect("refused");
        assert!(
            why.contains(
                "add \"pyenv\" to [grants] toolchains in /etc/toolsmith/policy.toml \
                 (toolchains = [\"rustup\", \"pyenv\"])"
            ),
            "{why}"
        );
        assert!(why.contains("/home/a/.pyenv/versions/3.11.7"), "{why}");
        let cargo = Toolchain {
            kind: ToolchainKind::Rustup,
            ..python
        };
        assert_eq!(grants.toolchain_refusal(&cargo, "p.toml"), None);
    }
}
