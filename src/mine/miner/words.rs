//! The user's shell around the patterns: the definitions each pattern's commands were typed
//! through, and the short command words nothing on the machine defines.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::{INTERACTIVE_PROGRAMS, REPL_PROGRAMS};
use crate::mine::defs::ShellDefinitions;
use crate::mine::pattern::Pattern;
use crate::mine::token::{TEXT_FILTERS, known_program};
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

/// Shell builtins and keywords of sh, bash, zsh and fish (and short programs every system has).
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
            // A program the crate knows (`rg`, `jq`, `gh`) is a real one even where this
            // machine lacks it: validation says so. The rule is for shorthands.
            if word.chars().count() > SHORT_WORD
                || word.contains('/')
                || word.starts_with('<')
                || BUILTINS.contains(&word)
                || known_program(word)
                || TEXT_FILTERS.contains(&word)
                || INTERACTIVE_PROGRAMS.contains(&word)
                || REPL_PROGRAMS.contains(&word)
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::test_support::*;
    use super::super::{MineOptions, mine, mine_for};
    use super::*;
    use crate::mine::defs::{DefKind, DefShell, Definition, Meaning};

    /// A snapshot's definition (Claude Code's Bash commands read through it), classified when
    /// the set is made.
    fn def(name: &str, kind: DefKind, text: &str, line: usize) -> Definition {
        Definition {
            name: name.to_owned(),
            kind,
            text: text.to_owned(),
            file: PathBuf::from("/home/u/.claude/shell-snapshots/snapshot-zsh-1-a.sh"),
            line,
            shell: DefShell::Snapshot,
            meaning: Meaning::Opaque,
        }
    }

    fn git_aliases() -> Arc<ShellDefinitions> {
        Arc::new(ShellDefinitions::new(
            vec![
                def("gia", DefKind::Alias, "git add", 3),
                def("gc", DefKind::Alias, "git commit", 4),
                def("gp", DefKind::Alias, "git push", 5),
                def(
                    "g",
                    DefKind::Function,
                    "g () {\n  cd \"$(ghq list | fzf)\"\n}",
                    6,
                ),
            ],
            Vec::new(),
        ))
    }

    /// Six sessions commit through the aliases, three spell the commands out; `g` sits between
    /// every two steps of half of them, and after `cargo build` in all.
    fn sessions() -> Vec<(String, String)> {
        let mut calls = Vec::new();
        for i in 0..9 {
            let s = format!("s{i}");
            let typed = i < 6;
            let (add, commit, push) = if typed {
                ("gia", "gc", "gp")
            } else {
                ("git add", "git commit", "git push")
            };
            calls.push((s.clone(), "cargo build".to_owned()));
            calls.push((s.clone(), "g".to_owned()));
            calls.push((s.clone(), format!("{add} src/m{i}.rs")));
            calls.push((s.clone(), format!("{commit} -m 'change {i}'")));
            calls.push((s.clone(), push.to_owned()));
            calls.push((s.clone(), "g".to_owned()));
            calls.push((s.clone(), "cargo fmt".to_owned()));
        }
        calls
    }

    #[test]
    fn aliases_expand_into_one_habit_and_an_interactive_function_is_a_boundary() {
        let calls = sessions();
        let calls: Vec<Call<'_>> = calls.iter().map(|(s, c)| ran(s, c)).collect();
        let (_dir, conn) = store(&calls);
        let user = UserShell {
            definitions: git_aliases(),
            programs: None,
        };
        let report = mine_for(&conn, &MineOptions::default(), &user).expect("the run");
        let best = &report.patterns[0];
        assert_eq!(
            best.templates,
            [
                "git add src/<src>.rs",
                "git commit -m 'change <change>'",
                "git push"
            ],
            "{:#?}",
            fold_summary(&report)
        );
        // Whichever way it was typed: one habit, in every session.
        assert_eq!(best.support, 9);
        // Its lines are what the shell ran.
        let lines: Vec<String> = best
            .evidence
            .iter()
            .flat_map(|e| e.commands.clone())
            .collect();
        assert!(lines.contains(&"git add src/m0.rs".to_owned()), "{lines:?}");
        assert!(!lines.iter().any(|l| l.starts_with("gia")), "{lines:?}");
        let named: Vec<(&str, &str, &str)> = best
            .expansions
            .iter()
            .map(|e| (e.name.as_str(), e.text.as_str(), e.defined_at.as_str()))
            .collect();
        let at = "/home/u/.claude/shell-snapshots/snapshot-zsh-1-a.sh";
        assert_eq!(
            named,
            [
                ("gia", "git add", format!("{at}:3").as_str()),
                ("gc", "git commit", format!("{at}:4").as_str()),
                ("gp", "git push", format!("{at}:5").as_str()),
            ]
        );
        // `g` moves the shell through a fuzzy finder: no habit crosses it, so `cargo build`
        // never pairs with `git add`, nor `git push` with `cargo fmt`.
        for p in &report.patterns {
            assert!(
                !p.templates.iter().any(|t| t.starts_with("g ") || t == "g"),
                "{:?}",
                p.templates
            );
            assert!(
                !(p.templates.iter().any(|t| t.starts_with("cargo"))
                    && p.templates.iter().any(|t| t.starts_with("git"))),
                "{:?}",
                p.templates
            );
        }
        assert_eq!(report.shell_definitions, 4);
    }

    #[test]
    fn without_the_definitions_the_short_words_are_unknown_and_not_proposed() {
        let calls = sessions();
        let calls: Vec<Call<'_>> = calls.iter().map(|(s, c)| ran(s, c)).collect();
        let (_dir, conn) = store(&calls);
        let bin = tempfile::tempdir().expect("a PATH directory");
        let user = UserShell {
            definitions: Arc::default(),
            programs: Some(UserEnv {
                path: bin.path().display().to_string(),
                origin: "test".into(),
                home: None,
                vars: Default::default(),
                cwd: None,
            }),
        };
        let report = mine_for(&conn, &MineOptions::default(), &user).expect("the run");
        // The habit is seen, then refused: every pattern through `gia` names it.
        let typed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.steps.iter().any(|s| s.key.starts_with("gia ")))
            .collect();
        assert!(!typed.is_empty(), "{:#?}", fold_summary(&report));
        for p in typed {
            assert!(p.unknown_programs.contains(&"gia".to_owned()), "{p:#?}");
            assert!(p.unknown_program().is_some());
            assert!(p.expansions.is_empty());
        }
        // `g` too is unknown: as a word it is no boundary (a habit is seen through it).
        assert!(
            report
                .patterns
                .iter()
                .any(|p| p.unknown_programs.contains(&"g".to_owned())),
            "{:#?}",
            fold_summary(&report)
        );
        // `git` and `cargo` are not on this PATH either, but they are no short words.
        let spelled = starting_with(&report, "git add <path>");
        assert!(spelled.iter().all(|p| p.unknown_programs.is_empty()));
        // Without a PATH to look in, no word is called unknown (the unit tests' default).
        let plain = mine(&conn, &MineOptions::default()).expect("the run");
        assert!(plain.patterns.iter().all(|p| p.unknown_programs.is_empty()));
    }
}
