//! What a candidate needs that the policy asks a person for, and what it denies.
//!
//! A candidate whose programs, hosts, host sockets or credential files the policy puts at
//! `ask` is not failed: validation runs what the sandbox allows without the grant (its dry
//! runs and `--help`), counts none of what needs the grant as a failure, and lists the needs
//! (`Outcome::needs`, then the proposal's manifest `needs` and its `Needs:` trailers). A person
//! grants them with `toolsmith approve ID --grant NEED`; [`Levels::refusal`] refuses a grant
//! the policy now denies, naming the line. What the policy denies fails validation, naming the
//! line that denies it.

use std::path::Path;

use crate::package::manifest::Manifest;
use crate::sandbox::needs::{Level, LevelAt, Need};
use crate::sandbox::{Grants, HostPort, SandboxPolicy};
use crate::validate::policy::CodePolicy;
use crate::validate::run::{DEFAULT_POLICY, ValidatorError};

/// The credential files a program reads by default, as written from the home directory: a
/// tool running it needs them (read-only) to do what the agent did with it.
pub fn credential_files(program: &str) -> &'static [&'static str] {
    match program {
        "kubectl" | "helm" | "k9s" => &["~/.kube/config"],
        "docker" => &["~/.docker/config.json"],
        "aws" => &["~/.aws/config", "~/.aws/credentials"],
        "gcloud" => &["~/.config/gcloud"],
        "az" => &["~/.azure"],
        "gh" => &["~/.config/gh/hosts.yml"],
        _ => &[],
    }
}

/// The host sockets and network hosts of a manifest's profile checked against the policy:
/// the needs the policy asks for, and a refusal for each it denies (naming the line that denies
/// it and the line that would allow it).
pub fn reach_needs(manifest: &Manifest, policy: &SandboxPolicy) -> (Vec<Need>, Vec<String>) {
    let (grants, file) = (&policy.grants, policy.file.as_str());
    let mut needs = Vec::new();
    let mut problems = Vec::new();
    for text in &manifest.sandbox.hosts {
        let target = match HostPort::parse(text, false) {
            Ok(t) => t,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let need = Need::Host(target.clone());
        match grants.unlisted_level(&need) {
            None => {}
            Some(level) if level.level == Level::Deny => problems.push(format!(
                "the tool needs the network host {target}, which the policy does not grant \
                 ({}): {}",
                level.origin(file),
                Grants::host_line(&target, file)
            )),
            Some(_) => needs.push(need),
        }
    }
    for socket in &manifest.sandbox.host_sockets {
        if !socket.is_absolute() {
            problems.push(format!(
                "the host socket `{}` is not an absolute path",
                socket.display()
            ));
            continue;
        }
        let need = Need::Socket(socket.clone());
        match grants.unlisted_level(&need) {
            None => {}
            Some(level) if level.level == Level::Deny => problems.push(format!(
                "the tool needs the host socket {}, which the policy does not grant ({}): {}",
                socket.display(),
                level.origin(file),
                Grants::socket_line(socket, file)
            )),
            Some(_) => needs.push(need),
        }
    }
    (needs, problems)
}

/// The credential files of `programs` (those the code policy does not deny), checked against
/// the policy's `credentials` level: the needs it asks for, the refusals it denies.
pub fn credential_needs(
    programs: &[String],
    code: &CodePolicy,
    policy: &SandboxPolicy,
) -> (Vec<Need>, Vec<String>) {
    let level = &policy.grants.levels.credentials;
    let mut needs = Vec::new();
    let mut problems = Vec::new();
    for program in programs {
        if code.level_of(code.domain_of(program)).level == Level::Deny {
            continue;
        }
        for file in credential_files(program) {
            let need = Need::Credential((*file).to_owned());
            match level.level {
                Level::Allow => {}
                Level::Ask => {
                    if !needs.contains(&need) {
                        needs.push(need);
                    }
                }
                Level::Deny => problems.push(format!(
                    "`{program}` reads the credential file {file}, which the policy denies: {}",
                    level.origin(&policy.file)
                )),
            }
        }
    }
    (needs, problems)
}

/// The policy's levels, for decisions made after validation (approval).
#[derive(Debug, Clone)]
pub struct Levels {
    /// The code policy (capability domains).
    pub code: CodePolicy,
    /// The sandbox policy (grants).
    pub sandbox: SandboxPolicy,
}

impl Levels {
    /// The levels of the policy file at `path`, or of the built-in policy.
    pub fn load(path: Option<&Path>) -> Result<Levels, ValidatorError> {
        let (text, file) = match path {
            Some(path) => {
                let file = path.display().to_string();
                let text =
                    std::fs::read_to_string(path).map_err(|source| ValidatorError::Read {
                        file: file.clone(),
                        source,
                    })?;
                (text, file)
            }
            None => (
                DEFAULT_POLICY.to_owned(),
                crate::sandbox::policy::DEFAULT_FILE.to_owned(),
            ),
        };
        Ok(Levels {
            code: CodePolicy::from_toml(&text, &file)?,
            sandbox: SandboxPolicy::from_toml(&text, &file)?,
        })
    }

    /// The level of a need, with where the policy set it (`None`: the policy lists it, so no
    /// person needs to grant it).
    pub fn level_of(&self, need: &Need) -> Option<LevelAt> {
        match need {
            Need::Program(p) => Some(self.code.level_of(self.code.domain_of(p))),
            other => self.sandbox.grants.unlisted_level(other).cloned(),
        }
    }

    /// Why granting `need` is refused: the policy denies it, and the line that does.
    pub fn refusal(&self, need: &Need) -> Option<String> {
        let level = self.level_of(need)?;
        (level.level == Level::Deny).then(|| {
            let what = match need {
                Need::Program(p) => {
                    format!("`{p}` is in the `{}` domain, which", self.code.domain_of(p))
                }
                other => format!("{other} is a need which"),
            };
            format!(
                "{what} the policy denies: {}",
                level.origin(&self.sandbox.file)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(text: &str) -> Levels {
        Levels {
            code: CodePolicy::from_toml(text, "/p.toml").expect("code"),
            sandbox: SandboxPolicy::from_toml(text, "/p.toml").expect("sandbox"),
        }
    }

    #[test]
    fn a_denied_grant_is_refused_naming_the_line() {
        let deny =
            levels("[validate.levels]\nnetwork = \"deny\"\n\n[grants.levels]\nhosts = \"deny\"\n");
        let curl = Need::parse("program:curl").expect("need");
        assert_eq!(
            deny.refusal(&curl).as_deref(),
            Some(
                "`curl` is in the `network` domain, which the policy denies: /p.toml:2 \
                 (validate.levels.network = \"deny\")"
            )
        );
        let host = Need::parse("host:127.0.0.1:8080").expect("need");
        assert!(
            deny.refusal(&host)
                .is_some_and(|r| r.contains("/p.toml:5 (grants.levels.hosts = \"deny\")"))
        );
        let ask = levels("");
        assert_eq!(ask.refusal(&curl), None);
        assert_eq!(ask.level_of(&curl).map(|l| l.level), Some(Level::Ask));
        assert_eq!(ask.refusal(&host), None);
        let listed = levels("[grants]\nhosts = [\"127.0.0.1:8080\"]\n");
        assert_eq!(
            listed.level_of(&host),
            None,
            "listed: nobody needs to grant it"
        );
    }

    #[test]
    fn credentials_follow_the_programs_and_their_level() {
        let programs = vec!["kubectl".to_owned(), "git".to_owned()];
        let l = levels("");
        let (needs, problems) = credential_needs(&programs, &l.code, &l.sandbox);
        assert_eq!(needs, [Need::Credential("~/.kube/config".into())]);
        assert!(problems.is_empty());
        let deny = levels("[grants.levels]\ncredentials = \"deny\"\n");
        let (needs, problems) = credential_needs(&programs, &deny.code, &deny.sandbox);
        assert!(needs.is_empty());
        assert!(problems[0].contains("/p.toml:2 (grants.levels.credentials = \"deny\")"));
    }
}
