//! What each definition means to mining: expands, interactive, or opaque.

use super::{DefKind, Definition, Meaning, ShellDefinitions};
use crate::mine::miner::{INTERACTIVE_PROGRAMS, REPL_PROGRAMS};
use crate::mine::shell::{self, SimpleCommand};

/// Builtins and programs that make a definition something a person drives, beyond
/// [`INTERACTIVE_PROGRAMS`]: moving the shell (`cd`, `pushd`, `popd`, `z`), reading the
/// keyboard (`read`, `select`), an editor or pager named by a variable.
const DRIVEN: &[&str] = &[
    "cd",
    "pushd",
    "popd",
    "read",
    "select",
    "vared",
    "z",
    "zi",
    "fzf-tmux",
    "sk",
    "peco",
    "$EDITOR",
    "${EDITOR}",
    "$VISUAL",
    "${VISUAL}",
    "$PAGER",
    "${PAGER}",
];

/// Classifies every definition: on its own first, then (a few rounds) through the definitions
/// it calls, so a function calling an interactive one is interactive too.
pub(super) fn classify_all(defs: &mut ShellDefinitions) {
    let programs: Vec<Option<Vec<Called>>> = defs
        .definitions
        .iter()
        .map(|d| body_commands(d).map(|_| called(&d.text, d.shell.dialect())))
        .collect();
    for (def, programs) in defs.definitions.iter_mut().zip(&programs) {
        def.meaning = match programs {
            None => Meaning::Opaque,
            Some(calls)
                if calls
                    .iter()
                    .any(|c| c.driven(def.kind == DefKind::Function))
                    || reads_a_choice(&def.text) =>
            {
                Meaning::Interactive
            }
            Some(_) => own_meaning(def),
        };
    }
    for _ in 0..4 {
        let mut changed = false;
        for (i, calls) in programs.iter().enumerate() {
            if defs.definitions[i].meaning == Meaning::Interactive {
                continue;
            }
            let shell = defs.definitions[i].shell;
            let reaches = calls.iter().flatten().any(|c| {
                defs.by_name[shell.index()]
                    .get(&c.program)
                    .is_some_and(|&j| {
                        j as usize != i
                            && defs.definitions[j as usize].meaning == Meaning::Interactive
                    })
            });
            if reaches {
                defs.definitions[i].meaning = Meaning::Interactive;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// One command a definition runs: its program and its arguments.
struct Called {
    program: String,
    args: Vec<String>,
}

impl Called {
    /// Whether a person drives it. `whole`: the command is all there is (a function's); an
    /// alias's last command takes the words typed after it, so a REPL it names is a script
    /// runner or a REPL depending on them, which the token decides (`py x.py`, `py`).
    fn driven(&self, whole: bool) -> bool {
        let program = self.program.rsplit('/').next().unwrap_or(&self.program);
        DRIVEN.contains(&self.program.as_str())
            || INTERACTIVE_PROGRAMS.contains(&program)
            || (whole
                && REPL_PROGRAMS.contains(&program)
                && self.args.iter().all(|a| a.starts_with('-')))
            || (program == "exec"
                && self.args.first().is_some_and(|a| {
                    let a = a.trim_matches('"');
                    a.contains("SHELL")
                        || REPL_PROGRAMS.contains(&a.rsplit('/').next().unwrap_or(a))
                }))
    }
}

/// The commands of a definition's text (an alias's value, a function's body), or `None` when
/// the text does not parse.
fn body_commands(def: &Definition) -> Option<Vec<SimpleCommand>> {
    shell::parse_dialect(&def.text, def.shell.dialect()).ok()
}

/// Every command a definition's text runs, at any depth (inside substitutions, conditions,
/// `cd DIR;` the line parser folds away), read from its syntax tree.
fn called(text: &str, dialect: shell::Dialect) -> Vec<Called> {
    // fish's grammar wants a line to end in a terminator.
    let padded;
    let text = if dialect == shell::Dialect::Fish && !text.ends_with('\n') {
        padded = format!("{text}\n");
        padded.as_str()
    } else {
        text
    };
    let Ok(tree) = shell::syntax_tree(text, dialect) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "command" {
            let words: Vec<String> = node
                .named_children(&mut node.walk())
                .filter(|n| !n.kind().contains("redirect") && n.kind() != "variable_assignment")
                .map(|n| unquote(text.get(n.byte_range()).unwrap_or("")))
                .collect();
            let mut words = words.into_iter();
            let mut program = words.next();
            // Wrappers run what follows them.
            while program.as_deref().is_some_and(|p| {
                matches!(
                    p,
                    "command" | "builtin" | "noglob" | "nocorrect" | "sudo" | "doas"
                )
            }) {
                program = words.next();
            }
            if let Some(program) = program {
                out.push(Called {
                    program,
                    args: words.collect(),
                });
            }
        }
        stack.extend(node.named_children(&mut node.walk()));
    }
    out
}

/// A word's text with its outer quotes removed (enough to name a program).
fn unquote(word: &str) -> String {
    let w = word.trim();
    for q in ['\'', '"'] {
        if let Some(inner) = w.strip_prefix(q).and_then(|w| w.strip_suffix(q)) {
            return inner.to_owned();
        }
    }
    w.to_owned()
}

/// `select` reads a choice from the keyboard; tree-sitter-bash does not know it as a keyword.
fn reads_a_choice(text: &str) -> bool {
    text.split(['\n', ';', '{', '&', '|', '('])
        .any(|part| part.trim_start().starts_with("select "))
}

/// The meaning of a definition that reaches nothing driven by hand: an alias or abbreviation
/// expands to its value; a function expands only when it is one simple command forwarding its
/// arguments (`"$@"`, fish's `$argv`) last; any other function is opaque.
fn own_meaning(def: &Definition) -> Meaning {
    match def.kind {
        DefKind::Alias | DefKind::Abbreviation => Meaning::Expands(def.text.clone()),
        DefKind::Function => forwarding(def).map_or(Meaning::Opaque, Meaning::Expands),
    }
}

/// A function's body that is one simple command ending in its arguments: the text before them.
fn forwarding(def: &Definition) -> Option<String> {
    let commands = body_commands(def)?;
    let [command] = commands.as_slice() else {
        return None;
    };
    let (last, rest) = command.words.split_last()?;
    let forwards = matches!(
        last.raw.as_str(),
        "\"$@\"" | "$@" | "$*" | "\"$*\"" | "$argv" | "\"$argv\""
    );
    let uses_args = |w: &shell::Word| {
        w.raw.contains("$@")
            || w.raw.contains("$*")
            || w.raw.contains("$argv")
            || (1..=9).any(|n| w.raw.contains(&format!("${n}")))
            || w.raw.contains("${")
    };
    if !forwards
        || rest.is_empty()
        || command.has_substitution()
        || !command.redirections.is_empty()
        || command.in_pipeline
        || rest.iter().any(uses_args)
    {
        return None;
    }
    let start = command.span.start;
    let text = def.text.get(start..last.span.start)?.trim_end();
    (!text.is_empty()).then(|| text.to_owned())
}
