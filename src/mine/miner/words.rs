//! The user's shell around the patterns: the definitions each pattern's commands were typed
//! through, and the short command words nothing on the machine defines.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::mine::defs::ShellDefinitions;
use crate::mine::pattern::Pattern;
use crate::sandbox::toolchain::{self, Resolution, UserEnv};

/// What a run knows of the user's shell.
#[derive(Debug, Clone, Default)]
pub struct UserShell {
    /// Their aliases, abbreviations and functions ([`crate::mine::defs::discover`]).
    pub definitions: Arc<ShellDefinitions>,
    /// Where their programs are looked up; `None`: they are not, and no word is called
    /// unknown (a run on another machine's logs, the unit tests).
    pub programs: Option<UserEnv>,
}

impl UserShell {
    /// The shell of the user the configuration is for: their definitions read from their
    /// home (`HOME`, `ZDOTDIR`, `ZSH`, `ZSH_CUSTOM`, `XDG_CONFIG_HOME`, `CLAUDE_CONFIG_DIR` of
    /// this process) unless `[mine] shell_definitions = false`, and their programs looked up
    /// on their `PATH` ([`crate::config::Config::user_env`]).
    pub fn from_config(config: &crate::config::Config) -> UserShell {
        let definitions = if config.mine.shell_definitions.value {
            crate::mine::defs::discover(&crate::mine::defs::HomeEnv::from_process())
        } else {
            ShellDefinitions::default()
        };
        UserShell {
            definitions: Arc::new(definitions),
            programs: Some(config.user_env()),
        }
    }
}

/// Longest command word taken for an abbreviation someone typed (`gc`, `gp`, `g`): a longer
/// unknown word is far more likely a program of another machine or a script than a shorthand.
pub const SHORT_WORD: usize = 3;

/// Shell builtins and keywords of sh, bash, zsh and fish that are short words.
const BUILTINS: &[&str] = &[
    ".", ":", "[", "[[", "!", "{", "}", "cd", "bg", "fg", "let", "set", "pwd", "for", "if", "do",
    "fi", "in", "end", "and", "or", "not", "fc", "r", "ulimit", "umask", "wait", "exec", "eval",
    "echo", "read", "test", "type", "hash", "kill", "jobs", "exit", "time", "case", "esac", "then",
    "else", "elif", "done", "while", "until", "function", "source", "alias",
];

/// Per action (session, seq): the definitions its command line was expanded with.
pub(super) type Used = HashMap<String, BTreeMap<u64, Vec<u32>>>;

/// Records on each pattern the definitions its evidence's commands were typed through.
pub(super) fn record_expansions(patterns: &mut [Pattern], used: &Used, defs: &ShellDefinitions) {
    if used.is_empty() {
        return;
    }
    for pattern in patterns {
        let mut taken = BTreeSet::new();
        for e in &pattern.evidence {
            let Some(actions) = used.get(&e.session) else {
                continue;
            };
            if e.first_seq > e.last_seq {
                continue;
            }
            for indices in actions.range(e.first_seq..=e.last_seq).map(|(_, i)| i) {
                taken.extend(indices.iter().copied());
            }
        }
        let mut expansions: Vec<_> = taken
            .into_iter()
            .filter_map(|i| defs.expansion(i))
            .collect();
        expansions.dedup();
        pattern.expansions = expansions;
    }
}

/// Which short command words name something on the user's machine, each looked up once a run.
pub(super) struct Programs<'u> {
    user: &'u UserShell,
    known: HashMap<String, bool>,
}

impl<'u> Programs<'u> {
    pub(super) fn new(user: &'u UserShell) -> Self {
        Programs {
            user,
            known: HashMap::new(),
        }
    }

    /// Records on `pattern` the short command words of its steps that are no program on the
    /// user's `PATH`, no builtin and none of their definitions.
    pub(super) fn mark(&mut self, pattern: &mut Pattern) {
        let Some(env) = &self.user.programs else {
            return;
        };
        let mut unknown: Vec<String> = Vec::new();
        let steps = pattern
            .trigger
            .iter()
            .map(|t| &t.step)
            .chain(&pattern.steps)
            .filter(|s| !s.agent_tool);
        for step in steps {
            let Some(word) = step.key.split(' ').find(|w| !w.contains('=')) else {
                continue;
            };
            if word.chars().count() > SHORT_WORD
                || word.contains('/')
                || word.starts_with('<')
                || BUILTINS.contains(&word)
                || unknown.iter().any(|u| u == word)
            {
                continue;
            }
            let definitions = &self.user.definitions;
            let found = *self.known.entry(word.to_owned()).or_insert_with(|| {
                definitions.defines(word)
                    || toolchain::resolve(word, env, false) != Resolution::NotFound
            });
            if !found {
                unknown.push(word.to_owned());
            }
        }
        pattern.unknown_programs = unknown;
    }
}
