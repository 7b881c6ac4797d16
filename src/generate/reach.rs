//! What a tool must reach on the network, derived from the evidence — never written by a
//! model: the package index each package manager a step runs is configured with (pip's
//! `PIP_INDEX_URL` or `pip.conf`, npm's registry in the environment or `.npmrc`, crates.io for
//! cargo), the host of a git URL a step names, the hosts of the URLs an HTTP client (`curl`,
//! `wget`) is given, and a container engine's socket (`docker`). The result goes into the
//! manifest's `sandbox.hosts` and `sandbox.host_sockets`; what the policy's `[grants]` does not
//! list is a need a person grants at review (level `ask`), or refused naming the line
//! (`deny`). `toolsmith doctor` shows the indexes found ([`configured_indexes`]).

use std::path::{Path, PathBuf};

use super::spec::{Piece, StepSpec, ToolSpec};
use crate::sandbox::HostPort;
pub use crate::sandbox::grants::url_host;

/// Where the configuration is read: the environment and files (tests pass their own).
pub struct Sources<'a> {
    /// An environment variable.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// A file's text.
    pub read: &'a dyn Fn(&Path) -> Option<String>,
}

impl Sources<'_> {
    fn home(&self) -> Option<PathBuf> {
        (self.env)("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    }
}

/// The process's own environment and files.
pub fn current() -> Sources<'static> {
    Sources {
        env: &|name| std::env::var(name).ok(),
        read: &|path| std::fs::read_to_string(path).ok(),
    }
}

/// A package manager whose network use this module knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    /// pip.
    Pip,
    /// npm, pnpm, yarn.
    Npm,
    /// cargo.
    Cargo,
}

impl Manager {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Manager::Pip => "pip",
            Manager::Npm => "npm",
            Manager::Cargo => "cargo",
        }
    }
}

/// One index a package manager is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// The package manager.
    pub manager: Manager,
    /// The host and port it fetches from.
    pub host: HostPort,
    /// Where that came from (`PIP_INDEX_URL`, a file, `default`).
    pub source: String,
}

/// `key = value` lines of an INI or `.npmrc` file, any section.
fn ini_values(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_owned())
        })
        .collect()
}

/// The indexes each package manager is configured with, as the user's own shell would find
/// them (environment first, then configuration files, then the manager's default).
pub fn configured_indexes(sources: &Sources<'_>) -> Vec<Index> {
    let mut found = Vec::new();
    found.extend(pip_indexes(sources));
    found.extend(npm_indexes(sources));
    for host in ["index.crates.io:443", "static.crates.io:443"] {
        if let Ok(host) = HostPort::parse(host, false) {
            found.push(Index {
                manager: Manager::Cargo,
                host,
                source: "default".into(),
            });
        }
    }
    found
}

fn pip_indexes(sources: &Sources<'_>) -> Vec<Index> {
    let index = |host, source: &str| Index {
        manager: Manager::Pip,
        host,
        source: source.to_owned(),
    };
    let mut found = Vec::new();
    for name in ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"] {
        for url in (sources.env)(name).unwrap_or_default().split_whitespace() {
            found.extend(url_host(url).map(|h| index(h, name)));
        }
    }
    if (sources.env)("PIP_INDEX_URL").is_some() {
        return found;
    }
    let mut files: Vec<PathBuf> = vec!["/etc/pip.conf".into(), "/etc/xdg/pip/pip.conf".into()];
    if let Some(home) = sources.home() {
        files.push(home.join(".pip/pip.conf"));
        let config = (sources.env)("XDG_CONFIG_HOME")
            .filter(|c| !c.is_empty())
            .map_or_else(|| home.join(".config"), PathBuf::from);
        files.push(config.join("pip/pip.conf"));
    }
    files.extend((sources.env)("PIP_CONFIG_FILE").map(PathBuf::from));
    let mut primary = false;
    for file in files {
        let Some(text) = (sources.read)(&file) else {
            continue;
        };
        let shown = file.display().to_string();
        for url in ini_values(&text, "index-url") {
            primary = true;
            found.extend(url_host(&url).map(|h| index(h, &shown)));
        }
        for url in ini_values(&text, "extra-index-url") {
            found.extend(url_host(&url).map(|h| index(h, &shown)));
        }
    }
    if !primary {
        // PyPI serves its index and its files from two hosts.
        for host in ["pypi.org:443", "files.pythonhosted.org:443"] {
            found.extend(
                HostPort::parse(host, false)
                    .ok()
                    .map(|h| index(h, "default")),
            );
        }
    }
    found
}

fn npm_indexes(sources: &Sources<'_>) -> Vec<Index> {
    let index = |host, source: &str| Index {
        manager: Manager::Npm,
        host,
        source: source.to_owned(),
    };
    for name in ["NPM_CONFIG_REGISTRY", "npm_config_registry"] {
        if let Some(host) = (sources.env)(name).as_deref().and_then(url_host) {
            return vec![index(host, name)];
        }
    }
    if let Some(home) = sources.home() {
        let file = home.join(".npmrc");
        if let Some(text) = (sources.read)(&file)
            && let Some(host) = ini_values(&text, "registry")
                .first()
                .and_then(|u| url_host(u))
        {
            return vec![index(host, &file.display().to_string())];
        }
    }
    HostPort::parse("registry.npmjs.org:443", false)
        .map(|h| vec![index(h, "default")])
        .unwrap_or_default()
}

/// A step's literal words (a parameter's word is `None`).
fn words(step: &StepSpec) -> Vec<Option<String>> {
    step.words
        .iter()
        .map(|word| match word.as_slice() {
            [Piece::Literal(t)] => Some(t.clone()),
            _ => None,
        })
        .collect()
}

/// The package manager a command fetches with, if it does: `pip install`, `python -m pip
/// download`, `npm install`, `cargo fetch`, …
fn fetching_manager(argv: &[Option<String>]) -> Option<Manager> {
    let word = |i: usize| argv.get(i).and_then(|w| w.as_deref());
    let program = word(0)?.rsplit('/').next()?;
    let (manager, rest) = match program {
        "pip" | "pip3" => (Manager::Pip, 1),
        p if p.starts_with("python") && word(1) == Some("-m") && word(2) == Some("pip") => {
            (Manager::Pip, 3)
        }
        "npm" | "pnpm" | "yarn" => (Manager::Npm, 1),
        "cargo" => (Manager::Cargo, 1),
        _ => return None,
    };
    let sub = (rest..argv.len()).find_map(|i| word(i).filter(|w| !w.starts_with('-')))?;
    let fetches = match manager {
        Manager::Pip => ["install", "download", "wheel", "index"].contains(&sub),
        Manager::Npm => ["install", "i", "add", "ci", "update", "upgrade"].contains(&sub),
        Manager::Cargo => [
            "fetch",
            "update",
            "install",
            "add",
            "generate-lockfile",
            "search",
        ]
        .contains(&sub),
    };
    fetches.then_some(manager)
}

/// The hosts of `http(s)://` URLs a git command that talks to a remote names.
fn git_hosts(argv: &[Option<String>]) -> Vec<HostPort> {
    let word = |i: usize| argv.get(i).and_then(|w| w.as_deref());
    if word(0).and_then(|p| p.rsplit('/').next()) != Some("git") {
        return Vec::new();
    }
    let remote = argv.iter().flatten().any(|w| {
        ["clone", "fetch", "pull", "push", "ls-remote", "submodule"].contains(&w.as_str())
    });
    if !remote {
        return Vec::new();
    }
    argv.iter().flatten().filter_map(|w| url_host(w)).collect()
}

/// The hosts of the `http(s)://` URLs an HTTP client (`curl`, `wget`, …) is given.
fn client_hosts(argv: &[Option<String>]) -> Vec<HostPort> {
    let program = argv
        .first()
        .and_then(|w| w.as_deref())
        .and_then(|p| p.rsplit('/').next());
    if !program.is_some_and(|p| ["curl", "wget", "http", "https", "xh"].contains(&p)) {
        return Vec::new();
    }
    argv.iter().flatten().filter_map(|w| url_host(w)).collect()
}

/// The host sockets `spec`'s commands talk to: a container engine's (`docker`: the socket of
/// `DOCKER_HOST` when it names one, else `/var/run/docker.sock`; `podman`:
/// `/run/podman/podman.sock`); sorted, without repeats.
pub fn sockets(spec: &ToolSpec, sources: &Sources<'_>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for argv in commands(spec) {
        let program = argv
            .first()
            .and_then(|w| w.as_deref())
            .and_then(|p| p.rsplit('/').next());
        let socket = match program {
            Some("docker") => (sources.env)("DOCKER_HOST")
                .and_then(|h| h.strip_prefix("unix://").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("/var/run/docker.sock")),
            Some("podman") => PathBuf::from("/run/podman/podman.sock"),
            _ => continue,
        };
        if !found.contains(&socket) {
            found.push(socket);
        }
    }
    found.sort();
    found
}

/// Every command of `spec`: its steps' literal words, and the commands its occurrences logged.
fn commands(spec: &ToolSpec) -> Vec<Vec<Option<String>>> {
    let mut commands: Vec<Vec<Option<String>>> = spec
        .steps
        .iter()
        .chain(spec.trigger_step.as_ref())
        .map(words)
        .collect();
    for occurrence in &spec.occurrences {
        commands.extend(
            occurrence
                .logged
                .iter()
                .map(|argv| argv.iter().cloned().map(Some).collect()),
        );
        // A habit of command lines: every command of each line as logged.
        for line in &occurrence.lines {
            if let Ok(parsed) = crate::mine::shell::parse(line) {
                commands.extend(
                    parsed
                        .iter()
                        .map(|c| c.words.iter().map(|w| Some(w.text.clone())).collect()),
                );
            }
        }
    }
    commands
}

/// The hosts `spec`'s commands reach: each fetching package manager's configured indexes, the
/// hosts of the git URLs its steps and logged commands name, and those of the URLs its HTTP
/// clients are given; sorted, without repeats.
pub fn hosts(spec: &ToolSpec, sources: &Sources<'_>) -> Vec<String> {
    let commands = commands(spec);
    let mut managers = Vec::new();
    let mut found: Vec<HostPort> = Vec::new();
    for argv in &commands {
        if let Some(manager) = fetching_manager(argv)
            && !managers.contains(&manager)
        {
            managers.push(manager);
        }
        found.extend(git_hosts(argv));
        found.extend(client_hosts(argv));
        // `pip install -i URL` / `--index-url URL`, `npm --registry URL`: the URL the
        // command names itself.
        if fetching_manager(argv).is_some() {
            for pair in argv.windows(2) {
                if let [Some(flag), Some(value)] = pair
                    && ["-i", "--index-url", "--extra-index-url", "--registry"]
                        .contains(&flag.as_str())
                {
                    found.extend(url_host(value));
                }
            }
        }
    }
    if !managers.is_empty() {
        let indexes = configured_indexes(sources);
        for manager in managers {
            found.extend(
                indexes
                    .iter()
                    .filter(|i| i.manager == manager)
                    .map(|i| i.host.clone()),
            );
        }
    }
    let mut hosts: Vec<String> = found.iter().map(ToString::to_string).collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn sources<'a>(
        env: &'a dyn Fn(&str) -> Option<String>,
        read: &'a dyn Fn(&Path) -> Option<String>,
    ) -> Sources<'a> {
        Sources { env, read }
    }

    fn step(words: &[&str]) -> StepSpec {
        StepSpec {
            line: Default::default(),
            words: words
                .iter()
                .map(|w| vec![Piece::Literal((*w).to_owned())])
                .collect(),
            globs: Vec::new(),
            captures: None,
            piped: false,
        }
    }

    fn spec(steps: Vec<StepSpec>) -> ToolSpec {
        let mut spec = crate::generate::template::tests_support::sequence_spec();
        spec.steps = steps;
        spec.trigger_step = None;
        spec.occurrences.clear();
        spec
    }

    #[test]
    fn pip_uses_the_index_it_is_configured_with() {
        let env =
            |n: &str| (n == "PIP_INDEX_URL").then(|| "http://127.0.0.1:8080/simple".to_owned());
        let none = |_: &Path| None;
        let s = spec(vec![
            step(&["pytest"]),
            step(&["pip", "install", "requests"]),
        ]);
        assert_eq!(hosts(&s, &sources(&env, &none)), ["127.0.0.1:8080"]);
        let no_env = |n: &str| (n == "HOME").then(|| "/home/a".to_owned());
        assert_eq!(
            hosts(&s, &sources(&no_env, &none)),
            ["files.pythonhosted.org:443", "pypi.org:443"]
        );
        let files: BTreeMap<PathBuf, String> = [(
            PathBuf::from("/home/a/.config/pip/pip.conf"),
            "[global]\nindex-url = https://pypi.corp.example/simple\n".to_owned(),
        )]
        .into();
        let read = |p: &Path| files.get(p).cloned();
        assert_eq!(
            hosts(&s, &sources(&no_env, &read)),
            ["pypi.corp.example:443"]
        );
        let m = spec(vec![step(&["python3", "-m", "pip", "download", "x"])]);
        assert_eq!(hosts(&m, &sources(&env, &none)), ["127.0.0.1:8080"]);
    }

    #[test]
    fn npm_cargo_and_git_remotes() {
        let env = |n: &str| (n == "HOME").then(|| "/home/a".to_owned());
        let files: BTreeMap<PathBuf, String> = [(
            PathBuf::from("/home/a/.npmrc"),
            "registry=https://npm.corp.example:8443/\n".to_owned(),
        )]
        .into();
        let read = |p: &Path| files.get(p).cloned();
        let src = sources(&env, &read);
        assert_eq!(
            hosts(&spec(vec![step(&["npm", "install", "left-pad"])]), &src),
            ["npm.corp.example:8443"]
        );
        assert_eq!(
            hosts(&spec(vec![step(&["cargo", "fetch"])]), &src),
            ["index.crates.io:443", "static.crates.io:443"]
        );
        assert_eq!(
            hosts(
                &spec(vec![step(&["git", "clone", "https://github.com/o/r.git"])]),
                &src
            ),
            ["github.com:443"]
        );
        // What only reads or builds locally needs nothing.
        for quiet in [
            vec!["npm", "test"],
            vec!["cargo", "build"],
            vec!["pip", "list"],
            vec!["git", "status"],
            vec!["git", "log", "https://example.org/"],
        ] {
            assert!(
                hosts(&spec(vec![step(&quiet)]), &src).is_empty(),
                "{quiet:?}"
            );
        }
    }

    #[test]
    fn http_clients_reach_the_hosts_of_their_urls_and_docker_its_socket() {
        let env = |n: &str| (n == "HOME").then(|| "/home/a".to_owned());
        let none = |_: &Path| None;
        let src = sources(&env, &none);
        let s = spec(vec![
            step(&["curl", "-fsS", "http://127.0.0.1:8080/health"]),
            step(&["wget", "-q", "https://example.org/x"]),
            step(&["echo", "https://not.reached.example/"]),
        ]);
        assert_eq!(hosts(&s, &src), ["127.0.0.1:8080", "example.org:443"]);
        assert!(sockets(&s, &src).is_empty());
        let d = spec(vec![step(&["docker", "ps"])]);
        assert_eq!(sockets(&d, &src), [PathBuf::from("/var/run/docker.sock")]);
        let custom =
            |n: &str| (n == "DOCKER_HOST").then(|| "unix:///run/user/1/docker.sock".to_owned());
        assert_eq!(
            sockets(&d, &sources(&custom, &none)),
            [PathBuf::from("/run/user/1/docker.sock")]
        );
    }

    #[test]
    fn urls_give_their_host_and_port() {
        assert_eq!(
            url_host("https://pypi.org/simple").map(|h| h.to_string()),
            Some("pypi.org:443".into())
        );
        assert_eq!(
            url_host("http://127.0.0.1:8080/simple/").map(|h| h.to_string()),
            Some("127.0.0.1:8080".into())
        );
        assert_eq!(url_host("https://u:p@host/"), None);
        assert_eq!(url_host("git@github.com:o/r.git"), None);
    }
}
