//! Action abstraction: each [`Action`] becomes the tokens sequence mining works on.
//!
//! A shell action (an agent's `Bash`/`shell`/`exec_command` call, a history line, an OpenHands
//! `run`) is parsed with [`crate::mine::shell`] and gives one token per simple command it runs.
//! An agent tool call (`Read`, `Edit`, `Grep`, `apply_patch`, …) gives one token of the tool and
//! the kinds of its arguments. SWE-agent's own commands (`open`, `edit`, `str_replace_editor`, …)
//! are command lines and are read as such, their own command's token being a tool call (it is
//! the agent's tool, not a program: `edit 15:15` is never a shell step).
//!
//! # What a token is
//!
//! A token has a **key**, the stable canonical text used to intern it as a `u32` symbol
//! ([`Interner`]), a readable **template**, and the concrete **slots** of this occurrence. For
//! `cd web && cargo test --release -p core`, run in `/src/app`:
//!
//! ```text
//! key       cargo test --release -p <arg>
//! template  cargo test --release -p <package>
//! slots     [{kind: string, flag: "-p", position: 0, value: "core"}]
//! cwd       /src/app/web
//! ```
//!
//! **Words stay as logged.** Key and template hold the command's words in the order the agent
//! wrote them; what is known of a CLI only decides which words are literal and which are
//! slots, never where a word goes, so a tool made from a token runs the argv that was run.
//! Every slot is written `<arg>` in the key, whatever its value looks like (`main`,
//! `feature/login`, `fix-1432`, a sha): a value's shape never splits a habit. The slot keeps
//! its kind ([`classify`]), from which the parameter's type is joined across occurrences.
//!
//! How the key is built, for a shell command:
//! - **Dropped wrappers**: `time`, `nohup`, `command`, `builtin`, `exec`, `noglob`, `env` (its
//!   `NAME=value` operands become assignments), `timeout DURATION`, `nice`, `ionice`, `stdbuf`.
//!   `sudo`/`doas`, `xargs`, `watch` and the like are kept: they change what runs.
//! - **Assignments** (`RUST_LOG=debug cargo …`) come first, in order: `RUST_LOG=<arg>`.
//! - **Program**: the first word as it was written when it is a path (`./gradlew`,
//!   `./scripts/check.sh`: the project's own programs, never one looked up on `PATH`), else
//!   its name; the table entry is found by its basename. **Sub-commands** of the CLIs in the
//!   table below (`git stash pop`, `docker compose up`, `gh pr create`, `kubectl get pods`,
//!   `npm run build`, `make test`, `python -m pytest`) stay literal: they say what the command
//!   does. Runners (`uv run`, `poetry run`, `npx`, `pnpm exec`, `sudo`, `xargs`, …) are followed
//!   by the program they run, itself tokenized with its own table entry.
//! - **Flags** are kept literally, where they were, each written as it was (`-p core`,
//!   `--features=x`, `-j4`, `-am msg`), its value a slot: `-p <arg>`, `--features=<arg>`,
//!   `-j<arg>`. Which flags take a value is known per CLI; for a program the tables do not
//!   know (and after `--`), flags are literal words and every other word a positional slot, in
//!   its place (`objdump -d <arg> --start-address <arg>`): which slots are literals (the same
//!   in every occurrence) and which are parameters is decided when a pattern's occurrences are
//!   aligned (`params.rs`), and a varying value after a flag stays right after it.
//! - **Positional arguments** become slots typed by [`classify`], in order; consecutive paths
//!   and globs are one slot of the key (`git add <arg>`, [`joins_run`]) and a run in the
//!   template (`git add <path>...`), so the number of files does not split a habit. `NAME=value` arguments (`make CC=clang`) are written
//!   `NAME=<arg>`.
//! - Claude Code's commit idiom `-m "$(cat <<'EOF' … EOF)"` passes the here-document's text:
//!   that text is the word's value (when nothing in it would be expanded).
//! - **Redirections** to files are part of the key (`> <arg>`, `< <arg>`), after the words;
//!   here-documents are `<<EOF`; fd duplications (`2>&1`) and `/dev/null`-like targets are left
//!   out.
//!
//! For an agent tool, the key is the tool's name, then its named options sorted (a JSON
//! object's fields have no order: `glob=<arg>`, `output_mode=content`), then its main
//! arguments (`Grep <arg> <arg>`). Unknown tools (MCP tools and the like) get every short
//! scalar field as `name=<arg>`.
//!
//! A slot's `position` is its ordinal among the token's slots of the same flag (for positional
//! arguments, among the positional slots), so `(flag, position)` names the same role in every
//! occurrence of a key.
//!
//! # Noise
//!
//! Actions that look around rather than do something would sit between every two steps of
//! every habit, so they are dropped ([`NoiseRules::default`], configurable):
//! - programs: `cd`, `pushd`, `popd`, `pwd`, `ls`, `ll`, `tree`, `echo`, `printf`, `cat`, `head`,
//!   `tail`, `less`, `more`, `clear`, `true`, `false`, `:`, `test`, `[`, `[[`, shell builtins
//!   with no effect outside the shell (`set`, `exit`, `read`, `local`, …), `which`, `type`,
//!   `whoami`, `date`, `history`, `printenv` — **unless** the command writes a file through a
//!   redirection (`echo x > f`, `cat > f <<EOF`) or feeds a pipe (`cat f | jq .`);
//! - pipe filters that only trim output when they read from a pipe: `head`, `tail`, `less`,
//!   `more`, `cat`, `column` (`cargo test 2>&1 | tail -5` is `cargo test`);
//! - agent tools: `TodoWrite`, `TodoRead`, `update_plan`, `ExitPlanMode`, `BashOutput`,
//!   `write_stdin` (polling a running command), `think`, `LS` and SWE-agent's `goto`,
//!   `scroll_up`, `scroll_down`, `submit`;
//! - keyboard input sent to a running command (OpenHands `run` with `is_input`);
//! - empty commands and commands that are only assignments.
//!
//! A command line the shell parser rejects still yields one [`TokenKind::Unparsed`] token,
//! `<program> <unparsed>`, holding the line as its only slot: a habit is still seen, but its
//! words are not known, so it never becomes a tool.
//!
//! # Parts
//!
//! - `mod.rs`: the token types, the noise rules and the [`Tokenizer`], which sends a shell
//!   action to `line.rs` and a tool call to `agent_tools.rs`.
//! - `line.rs`: a command line into tokens, one per simple command: pipes, data written out in
//!   the line, redirections, noise.
//! - `argv.rs`: one simple command's words (wrappers, sub-commands, flags, runners) into a draft.
//! - `tables.rs`: what is known about each CLI: sub-commands, flags that take values, runners.
//! - `classify.rs`: the [`SlotKind`] of a word ([`classify`]) and the word shapes `argv.rs`
//!   reads (flags, `NAME=value`, identifiers).
//! - `draft.rs`: a token being built, rendered into its key, template and slots.
//! - `agent_tools.rs`: the tokens of agent tool calls and `apply_patch` patches.
//! - `intern.rs`: the [`Interner`] of keys into `u32` symbols.

mod agent_tools;
mod argv;
mod classify;
mod draft;
mod intern;
mod line;
mod tables;

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::action::{Action, Source};
use crate::mine::defs::{Expanded, ShellDefinitions};
use crate::mine::shell::{self, Dialect};

use agent_tools::tool_token;
pub use classify::{SlotKind, classify, names_a_file};
pub use draft::joins_run;
pub use intern::{InternError, Interner};
pub use tables::{known_program, looks_around, shuffles_files};

/// The concrete value of one slot in one occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotValue {
    /// The slot's type.
    pub kind: SlotKind,
    /// The flag the value belongs to (`-p`), the variable (`RUST_LOG`), the redirection (`>`) or
    /// the tool's input field (`file_path`); `None` for a positional argument.
    pub flag: Option<String>,
    /// The ordinal of this slot among the token's slots with the same `flag`.
    pub position: usize,
    /// The value as the program received it (quotes removed).
    pub value: String,
    /// When the shell that ran the command expanded this word as a pathname pattern (written
    /// unquoted, with no expansion, holding `*`, `?` or `[…]`): that shell's rules. The
    /// program then received the matching files, not `value`; a tool must expand it the same
    /// way. `None` for a word that reached the program as written (quoted, escaped — also a
    /// word only partly quoted, `src/'a b'/*.c`, kept literal for simplicity —, holding a
    /// `$VAR` or `$(…)` whose value is unknown here, or part of a larger word, `--include=*.h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<Globbing>,
}

/// How the shell that ran a command expanded a pathname pattern (`*.c`, `**/*.h`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Globbing {
    /// sh and bash (shell histories of bash, every agent's `bash -c`): `**` is `*`, and a
    /// pattern matching nothing reaches the program as written.
    #[default]
    Sh,
    /// zsh: `**/` matches any depth of directories, and a pattern matching nothing stops the
    /// command (`zsh: no matches found: PATTERN`, status 1).
    Zsh,
    /// fish: `*` and `**` only (`?` and `[…]` are literal), `**` matches any depth, and a
    /// pattern matching nothing stops the command (`No matches for wildcard`, status 124).
    Fish,
}

impl Globbing {
    /// The rules of the shell an action of `source` ran in.
    pub fn of(source: Source) -> Globbing {
        match source {
            Source::Zsh => Globbing::Zsh,
            Source::Fish => Globbing::Fish,
            _ => Globbing::Sh,
        }
    }

    /// Whether `**` matches files at any depth under these rules (zsh's `**/`, fish's `**`).
    pub fn recursive(self) -> bool {
        self != Globbing::Sh
    }

    /// Whether a pattern matching nothing stops the command instead of reaching it as written.
    pub fn fails_unmatched(self) -> bool {
        self != Globbing::Sh
    }
}

/// Where a token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// A simple command of a shell command line.
    Shell,
    /// An agent tool call.
    Tool,
    /// A command line the shell parser rejected.
    Unparsed,
}

/// One abstracted step: what was done, with the concrete values of this occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    /// Where it came from.
    pub kind: TokenKind,
    /// Canonical text, stable across occurrences, the words in logged order: `cargo test -p
    /// <arg>`.
    pub key: String,
    /// The key with slots named rather than typed: `cargo test -p <package>`.
    pub template: String,
    /// The program (basename) or the tool's name.
    pub program: String,
    /// The literal words after the program that say what it does (`test`, `stash pop`,
    /// `-m pytest`), if any.
    pub subcommand: Option<String>,
    /// This occurrence's values, in the order the key shows them.
    pub slots: Vec<SlotValue>,
    /// The working directory: the action's, with a `cd DIR &&` prefix applied.
    pub cwd: Option<String>,
    /// Index of the simple command within the action's command line (0 for tool calls).
    pub step: usize,
    /// The `step` of the command whose output this one reads through a pipe, when that
    /// command has a token of its own.
    pub pipe_from: Option<usize>,
    /// Text the line gave this command as its whole input, written out in the line: a
    /// here-document or here-string, or a leading `echo`/`printf`/`cat <<EOF` feeding it
    /// through a pipe. Kept for [`TEXT_FILTERS`] only, so that what they made of it can be
    /// replayed as a test.
    pub stdin: Option<String>,
    /// Whether a word of the command has a value its shell computed as it ran (`$dirfile`,
    /// `"$(git merge-base HEAD main)"`, `$HOME/x`): the log does not hold that value, so no
    /// tool can reproduce the command from it. (A flag, not the word: tokens are kept for
    /// every distinct command, and this one fits where the others leave room.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub computed: bool,
    /// Whether a `cd DIR` of its line moved it to another directory first: the line is then
    /// two commands, whatever the tokens say.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub moved: bool,
    /// Whether its program word is one of the user's own definitions that no tool can take:
    /// one reaching something driven by hand (`cd`, an editor, a fuzzy finder) or a function
    /// whose work is not guessed ([`crate::mine::defs::Meaning`]). Mining treats it as it
    /// treats an interactive program: a boundary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_hand: bool,
}

/// What became of an action's shell command line, for the counts a mining run reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineParse {
    /// The action is not a shell command line (a tool call, a noise tool).
    NoLine,
    /// The line parsed into its commands.
    Parsed,
    /// The shell grammar rejected the line: it is one opaque [`TokenKind::Unparsed`] step (or
    /// none, when its first word is noise or it has none), never a tool.
    Unparsed,
    /// The line is PowerShell or `cmd.exe`: one opaque step, as for [`LineParse::Unparsed`].
    Foreign,
}

/// How a key ends for a command line the shell parser rejected: `git <unparsed>`.
pub const UNPARSED: &str = " <unparsed>";

/// Programs that only transform text: they read stdin or the files they are given and write
/// stdout.
pub const TEXT_FILTERS: [&str; 11] = [
    "jq", "sed", "awk", "grep", "sort", "uniq", "cut", "tr", "head", "tail", "wc",
];

/// Most bytes of inline input kept with a token.
pub const MAX_INLINE_INPUT: usize = 64 * 1024;

/// Which actions and commands are dropped as noise. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoiseRules {
    /// Programs dropped unless they write a file or feed a pipe.
    pub programs: Vec<String>,
    /// Programs dropped when they read from a pipe (unless they write a file).
    pub pipe_filters: Vec<String>,
    /// Agent tools dropped entirely.
    pub tools: Vec<String>,
}

impl Default for NoiseRules {
    fn default() -> Self {
        let strings = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        NoiseRules {
            programs: strings(&[
                "cd", "pushd", "popd", "pwd", "ls", "ll", "la", "dir", "tree", "echo", "printf",
                "cat", "head", "tail", "less", "more", "clear", "true", "false", ":", "test", "[",
                "[[", "set", "unset", "exit", "return", "break", "continue", "shift", "wait",
                "read", "local", "declare", "typeset", "shopt", "alias", "unalias", "trap",
                "history", "which", "type", "whoami", "date", "printenv", "hash", "command",
            ]),
            pipe_filters: strings(&["head", "tail", "less", "more", "cat", "column"]),
            tools: strings(&[
                "TodoWrite",
                "TodoRead",
                "update_plan",
                "ExitPlanMode",
                "BashOutput",
                "write_stdin",
                "think",
                "LS",
                "goto",
                "scroll_up",
                "scroll_down",
                "submit",
            ]),
        }
    }
}

/// Turns actions into tokens under a set of [`NoiseRules`].
#[derive(Debug, Clone)]
pub struct Tokenizer {
    programs: HashSet<String>,
    pipe_filters: HashSet<String>,
    tools: HashSet<String>,
    /// The user's aliases and functions, applied to the lines of the shells that read them.
    definitions: Option<Arc<ShellDefinitions>>,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer::new(&NoiseRules::default())
    }
}

static DEFAULT: LazyLock<Tokenizer> = LazyLock::new(Tokenizer::default);

/// The tokens of an action under the default [`NoiseRules`]; see [`Tokenizer::tokens`].
///
/// ```
/// use serde_json::json;
/// use toolsmith::action::{Action, Source};
/// use toolsmith::mine::token::tokens_of;
/// let action = Action {
///     session: "s".into(), seq: 1, ts: None, source: Source::ClaudeCode,
///     cwd: Some("/src/app".into()), tool: "Bash".into(),
///     input: json!({"command": "cd web && cargo test -p core 2>&1 | tail -5"}),
///     call_id: None, parent_session: None, result: None,
/// };
/// let tokens = tokens_of(&action);
/// assert_eq!(tokens.len(), 1);
/// assert_eq!(tokens[0].key, "cargo test -p <arg>");
/// assert_eq!(tokens[0].template, "cargo test -p <package>");
/// assert_eq!(tokens[0].slots[0].value, "core");
/// assert_eq!(tokens[0].cwd.as_deref(), Some("/src/app/web"));
/// ```
pub fn tokens_of(action: &Action) -> Vec<Token> {
    DEFAULT.tokens(action)
}

/// Tool names whose input's `command` (or `cmd`) is a shell command line.
const SHELL_TOOLS: &[&str] = &[
    "Bash",
    "bash",
    "shell",
    "exec_command",
    "shell_command",
    "container.exec",
    "local_shell",
    "execute_bash",
    "run_shell_command",
    "run_terminal_cmd",
    "Shell",
    "execute_command",
];

/// SWE-agent commands whose first line is the command and the rest a text body.
const SWE_BODY_COMMANDS: &[&str] = &["edit", "insert", "append"];

impl Tokenizer {
    /// A tokenizer dropping what `rules` calls noise.
    pub fn new(rules: &NoiseRules) -> Self {
        let set = |list: &[String]| list.iter().cloned().collect();
        Tokenizer {
            programs: set(&rules.programs),
            pipe_filters: set(&rules.pipe_filters),
            tools: set(&rules.tools),
            definitions: None,
        }
    }

    /// The same, reading command lines through the user's shell definitions: `gia x` is the
    /// `git add x` its shell ran, and a command whose word is an interactive or opaque
    /// definition is a by-hand step ([`Token::by_hand`]).
    pub fn with_definitions(mut self, definitions: Arc<ShellDefinitions>) -> Self {
        self.definitions = (!definitions.is_empty()).then_some(definitions);
        self
    }

    /// The definitions it reads lines through, if any.
    pub fn definitions(&self) -> Option<&ShellDefinitions> {
        self.definitions.as_deref()
    }

    /// An action's command line as its shell ran it, when a definition of the user's applies to
    /// it; `None` when none does (the line is then as logged).
    pub fn expanded_line(&self, action: &Action) -> Option<Expanded> {
        let defs = self.definitions.as_ref()?;
        defs.expand_line(action.source, shell_line(action)?)
    }

    /// The tokens of an action, in order: one per simple command of a shell action (noise
    /// dropped), one for a tool call, none for a noise tool or an empty command.
    pub fn tokens(&self, action: &Action) -> Vec<Token> {
        self.tokens_and_parse(action).0
    }

    /// [`Tokenizer::tokens`], and what became of the action's command line.
    pub fn tokens_and_parse(&self, action: &Action) -> (Vec<Token>, LineParse) {
        if self.tools.contains(&action.tool)
            || action.input.get("is_input").and_then(Value::as_bool) == Some(true)
        {
            return (Vec::new(), LineParse::NoLine);
        }
        if let Some(line) = shell_line(action) {
            // A line the log says ran in PowerShell or cmd.exe is never read as sh, whatever
            // its words look like.
            if action
                .input
                .get("shell")
                .and_then(Value::as_str)
                .and_then(crate::action::foreign_shell)
                .is_some()
            {
                let tokens = self.unparsed(line, action.cwd.as_deref());
                return (tokens.into_iter().collect(), LineParse::Foreign);
            }
            let dialect = if action.source == Source::Fish {
                Dialect::Fish
            } else {
                Dialect::Posix
            };
            let globbing = Globbing::of(action.source);
            let expanded = self.expanded_line(action);
            let line = expanded.as_ref().map_or(line, |e| e.line.as_str());
            let (mut tokens, parse) =
                self.line_tokens(line, dialect, globbing, action.cwd.as_deref());
            if let Some(defs) = &self.definitions {
                for token in &mut tokens {
                    let word = token.key.split(' ').find(|w| !w.contains('='));
                    token.by_hand = token.kind != TokenKind::Tool
                        && word == Some(token.program.as_str())
                        && defs.is_boundary(action.source, &token.program);
                }
            }
            // An aider slash command (`/add src/x.py`, `/ask …`) read as a command line (from an
            // input history) is the agent's command, not a program at the root.
            if let Some(first) = tokens.first_mut()
                && first.kind == TokenKind::Shell
                && aider_command(line).is_some_and(|name| name == first.program)
            {
                first.kind = TokenKind::Tool;
            }
            return (tokens, parse);
        }
        if action.source == Source::SweAgent
            && let Some(line) = action.input.get("command").and_then(Value::as_str)
        {
            // `edit 10:20⏎<body>⏎end_of_edit` is a command line and a text body; the newer
            // `edit 'search' 'replace'` is one command whose quotes span lines.
            let whole = || matches!(shell::parse(line), Ok(commands) if commands.len() == 1);
            let line = if SWE_BODY_COMMANDS.contains(&action.tool.as_str()) && !whole() {
                line.lines().next().unwrap_or("")
            } else {
                line
            };
            let (mut tokens, parse) =
                self.line_tokens(line, Dialect::Posix, Globbing::Sh, action.cwd.as_deref());
            // The adapter names the action after SWE-agent's own command (`edit`, `open`,
            // `create`, `find_file`, …): that command is the agent's tool, not a program, so a
            // pattern holding it is kept but no tool is made of it.
            for token in &mut tokens {
                if token.kind == TokenKind::Shell && token.program == action.tool {
                    token.kind = TokenKind::Tool;
                }
            }
            return (tokens, parse);
        }
        let tokens = tool_token(&action.tool, &action.input, action.cwd.as_deref())
            .into_iter()
            .collect();
        (tokens, LineParse::NoLine)
    }
}

/// aider's own commands (`aider/commands.py`), typed as `/name` in its chat.
const AIDER_COMMANDS: &[&str] = &[
    "add",
    "architect",
    "ask",
    "chat-mode",
    "clear",
    "code",
    "commit",
    "context",
    "copy",
    "copy-context",
    "diff",
    "drop",
    "edit",
    "editor",
    "editor-model",
    "exit",
    "help",
    "lint",
    "load",
    "ls",
    "map",
    "map-refresh",
    "model",
    "models",
    "multiline-mode",
    "paste",
    "quit",
    "read-only",
    "reasoning-effort",
    "report",
    "reset",
    "save",
    "settings",
    "think-tokens",
    "tokens",
    "undo",
    "voice",
    "weak-model",
    "web",
];

/// The aider command a command line starts with (`/add x` → `add`), if it does.
fn aider_command(line: &str) -> Option<&str> {
    let word = line.split_whitespace().next()?;
    let name = word.strip_prefix('/')?;
    AIDER_COMMANDS.contains(&name).then_some(name)
}

/// The command line of a shell action, if the action is one.
/// The command line of a shell action (an agent's shell tool call, an OpenHands `run`, a
/// history line); `None` for any other action.
pub fn command_line(action: &Action) -> Option<&str> {
    shell_line(action)
}

fn shell_line(action: &Action) -> Option<&str> {
    let tool = action.tool.as_str();
    let is_shell = SHELL_TOOLS.contains(&tool)
        || (tool == "run" && action.source == Source::Openhands)
        || matches!(action.source, Source::Bash | Source::Zsh | Source::Fish);
    if !is_shell {
        return None;
    }
    action
        .input
        .get("command")
        .or_else(|| action.input.get("cmd"))
        .and_then(Value::as_str)
}

/// The last path component of a program word (`/usr/bin/git` → `git`).
fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Actions and command lines for the unit tests of every part.
#[cfg(test)]
mod testing {
    use serde_json::{Value, json};

    use super::{Token, tokens_of};
    use crate::action::{Action, Source};

    pub(super) fn action(source: Source, tool: &str, input: Value, cwd: Option<&str>) -> Action {
        Action {
            session: "s".into(),
            seq: 0,
            ts: None,
            source,
            cwd: cwd.map(str::to_owned),
            tool: tool.into(),
            input,
            call_id: None,
            parent_session: None,
            result: None,
        }
    }

    pub(super) fn bash(command: &str) -> Vec<Token> {
        tokens_of(&action(
            Source::ClaudeCode,
            "Bash",
            json!({ "command": command }),
            Some("/w"),
        ))
    }

    pub(super) fn keys(command: &str) -> Vec<String> {
        bash(command).into_iter().map(|t| t.key).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{action, bash};
    use super::*;
    use serde_json::json;

    #[test]
    fn token_serializes() {
        let t = &bash("cargo test -p foo")[0];
        let json = serde_json::to_value(t).unwrap();
        assert_eq!(json["kind"], "shell");
        assert_eq!(json["slots"][0]["kind"], "string");
        let back: Token = serde_json::from_value(json).unwrap();
        assert_eq!(&back, t);
    }

    #[test]
    fn a_line_its_log_says_ran_in_powershell_is_never_read_as_sh() {
        let tokenizer = Tokenizer::new(&NoiseRules::default());
        for (shell, line) in [
            ("powershell", "ls -la"),
            ("powershell", "Get-ChildItem -Force"),
            (
                "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
                "cat a.txt",
            ),
            ("pwsh", "git status"),
            ("cmd", "dir /s"),
        ] {
            let a = action(
                Source::Codex,
                "shell_command",
                json!({ "command": line, "shell": shell }),
                Some("/w"),
            );
            let (tokens, parse) = tokenizer.tokens_and_parse(&a);
            assert_eq!(parse, LineParse::Foreign, "{shell}: {line}");
            assert!(
                tokens.len() <= 1,
                "{shell}: {line}: one opaque step at most"
            );
        }
        let posix = action(
            Source::Codex,
            "shell_command",
            json!({ "command": "git status", "shell": "/bin/zsh" }),
            Some("/w"),
        );
        assert_ne!(tokenizer.tokens_and_parse(&posix).1, LineParse::Foreign);
    }

    #[test]
    fn noise_rules_are_configurable() {
        let mut rules = NoiseRules::default();
        rules.programs.retain(|p| p != "ls");
        rules.programs.push("cargo".into());
        rules.tools.retain(|t| t != "TodoWrite");
        let tokenizer = Tokenizer::new(&rules);
        let run = |command: &str| {
            tokenizer
                .tokens(&action(
                    Source::Zsh,
                    "shell",
                    json!({ "command": command }),
                    None,
                ))
                .into_iter()
                .map(|t| t.key)
                .collect::<Vec<_>>()
        };
        assert_eq!(run("ls -la && cargo build"), ["ls -la"]);
        let todo = action(Source::ClaudeCode, "TodoWrite", json!({"todos": []}), None);
        assert_eq!(tokenizer.tokens(&todo)[0].key, "TodoWrite");
        assert!(tokens_of(&todo).is_empty());
    }

    #[test]
    fn swe_agents_own_commands_are_tool_calls_not_programs() {
        let kinds = |tool: &str, command: &str| -> Vec<(String, TokenKind)> {
            tokens_of(&action(
                Source::SweAgent,
                tool,
                json!({ "command": command }),
                None,
            ))
            .into_iter()
            .map(|t| (t.program, t.kind))
            .collect()
        };
        for (tool, command) in [
            ("edit", "edit 15:15\n    return x\nend_of_edit"),
            ("open", "open src/x.py 100"),
            ("create", "create reproduce.py"),
            ("find_file", "find_file setup.py"),
            ("search_dir", "search_dir TODO src"),
            ("str_replace_editor", "str_replace_editor view /r/a.py"),
        ] {
            assert_eq!(
                kinds(tool, command),
                [(tool.to_owned(), TokenKind::Tool)],
                "{command}"
            );
        }
        // aider's slash commands, read from an input history, are its own commands too.
        let aider = |line: &str| -> Vec<(String, TokenKind)> {
            tokens_of(&action(
                Source::Bash,
                "shell",
                json!({ "command": line }),
                None,
            ))
            .into_iter()
            .map(|t| (t.program, t.kind))
            .collect()
        };
        assert_eq!(
            aider("/add src/x.py"),
            [("add".to_owned(), TokenKind::Tool)]
        );
        assert_eq!(
            aider("/usr/bin/make test"),
            [("make".to_owned(), TokenKind::Shell)]
        );
        // A command run with it stays a command; a shell action stays one.
        assert_eq!(
            kinds("create", "create x.py && python x.py"),
            [
                ("create".to_owned(), TokenKind::Tool),
                ("python".to_owned(), TokenKind::Shell)
            ]
        );
        assert_eq!(
            kinds("shell", "python reproduce.py"),
            [("python".to_owned(), TokenKind::Shell)]
        );
    }

    #[test]
    fn shell_sources_and_tools() {
        let cases: &[(Source, &str, Value, &[&str])] = &[
            (
                Source::Codex,
                "shell_command",
                json!({"command": "cargo build"}),
                &["cargo build"],
            ),
            (
                Source::Codex,
                "exec_command",
                json!({"cmd": "git status"}),
                &["git status"],
            ),
            (
                Source::Openhands,
                "run",
                json!({"command": "ls && make"}),
                &["make"],
            ),
            (
                Source::Openhands,
                "run",
                json!({"command": "y", "is_input": true}),
                &[],
            ),
            (
                Source::Zsh,
                "shell",
                json!({"command": "git pull"}),
                &["git pull"],
            ),
            (
                Source::KimiCli,
                "Shell",
                json!({"command": "git fetch origin && git checkout main"}),
                &["git fetch <arg>", "git checkout <arg>"],
            ),
            (
                Source::Cursor,
                "Shell",
                json!({"command": "bash --version | head -n 1", "description": "x"}),
                &["bash --version"],
            ),
            (
                Source::Cline,
                "execute_command",
                json!({"command": "npm run build", "requires_approval": false}),
                &["npm run build"],
            ),
            (
                Source::Fish,
                "shell",
                json!({"command": "git commit -m (date); and git push"}),
                &["git commit -m <arg>", "git push"],
            ),
            (
                Source::Aider,
                "shell",
                json!({"command": "pytest -q"}),
                &["pytest -q"],
            ),
            (
                Source::SweAgent,
                "shell",
                json!({"command": "python reproduce.py"}),
                &["python <arg>"],
            ),
            (
                Source::SweAgent,
                "open",
                json!({"command": "open src/x.py 100"}),
                &["open <arg>"],
            ),
            (
                Source::SweAgent,
                "edit",
                json!({"command": "edit 10:20\n    x = 'unbalanced\nend_of_edit"}),
                &["edit <arg>"],
            ),
            (
                Source::SweAgent,
                "edit",
                json!({"command": "edit 10:12\nfoo()\nend_of_edit"}),
                &["edit <arg>"],
            ),
            (
                Source::SweAgent,
                "edit",
                json!({"command": "edit 'return a\n' '# rounded\nreturn b'"}),
                &["edit <arg>"],
            ),
            (
                Source::SweAgent,
                "str_replace_editor",
                json!({"command": "str_replace_editor view /r/a.py --view_range 1 50"}),
                &["str_replace_editor view <arg> --view_range <arg> <arg>"],
            ),
            (Source::SweAgent, "goto", json!({"command": "goto 50"}), &[]),
            (
                Source::SweAgent,
                "submit",
                json!({"command": "submit"}),
                &[],
            ),
            (
                Source::ClaudeCode,
                "Read",
                json!({"file_path": "/w/src/main.rs", "offset": 10}),
                &["Read <arg>"],
            ),
            (
                Source::ClaudeCode,
                "Write",
                json!({"file_path": "/w/a.ts", "content": "x"}),
                &["Write <arg>"],
            ),
            (
                Source::ClaudeCode,
                "Edit",
                json!({"file_path": "/w/a.rs", "old_string": "a", "new_string": "b"}),
                &["Edit <arg>"],
            ),
            (
                Source::ClaudeCode,
                "Grep",
                json!({"pattern": "fn main", "path": "src", "glob": "*.rs", "output_mode": "content"}),
                &["Grep glob=<arg> output_mode=content <arg> <arg>"],
            ),
            (
                Source::ClaudeCode,
                "Glob",
                json!({"pattern": "**/*.md"}),
                &["Glob <arg>"],
            ),
            (
                Source::ClaudeCode,
                "WebFetch",
                json!({"url": "https://docs.rs/x", "prompt": "summarize"}),
                &["WebFetch <arg>"],
            ),
            (
                Source::ClaudeCode,
                "Task",
                json!({"subagent_type": "general-purpose", "prompt": "long text"}),
                &["Task subagent_type=general-purpose"],
            ),
            (
                Source::ClaudeCode,
                "TodoWrite",
                json!({"todos": [{"content": "x"}]}),
                &[],
            ),
            (
                Source::ClaudeCode,
                "BashOutput",
                json!({"bash_id": "1"}),
                &[],
            ),
            (
                Source::Openhands,
                "read",
                json!({"path": "/r/a.py", "start": 0}),
                &["read <arg>"],
            ),
            (
                Source::Openhands,
                "edit",
                json!({"path": "/r/a.py", "command": "str_replace"}),
                &["edit command=str_replace <arg>"],
            ),
            (
                Source::Openhands,
                "browse",
                json!({"url": "http://localhost:8000"}),
                &["browse <arg>"],
            ),
            (Source::Aider, "Edit", json!({}), &["Edit"]),
            (
                Source::Native,
                "mcp__github__create_issue",
                json!({"owner": "o", "repo": "r", "title": "Bug", "body": "long\ntext", "draft": false, "n": 3}),
                &[
                    "mcp__github__create_issue draft=false n=<arg> owner=<arg> repo=<arg> title=<arg>",
                ],
            ),
            (
                Source::Native,
                "custom",
                json!("not an object"),
                &["custom"],
            ),
        ];
        for (source, tool, input, expected) in cases {
            let tokens = tokens_of(&action(*source, tool, input.clone(), Some("/w")));
            let got: Vec<&str> = tokens.iter().map(|t| t.key.as_str()).collect();
            assert_eq!(&got, expected, "{tool} {input}");
        }
        let read = &tokens_of(&action(
            Source::ClaudeCode,
            "Read",
            json!({"file_path": "/w/a.rs"}),
            Some("/w"),
        ))[0];
        assert_eq!(read.kind, TokenKind::Tool);
        assert_eq!(read.template, "Read <path>");
        assert_eq!(read.slots[0].flag.as_deref(), Some("file_path"));
        assert_eq!(read.cwd.as_deref(), Some("/w"));
    }

    /// Random command lines and tool inputs never panic.
    #[test]
    fn garbage_never_panics() {
        const PIECES: &[&str] = &[
            " ",
            "-",
            "--",
            "-p",
            "=",
            "'",
            "\"",
            "\\",
            "$(",
            ")",
            "(",
            "|",
            "&&",
            ";",
            ">",
            "<<",
            "2>&1",
            "cd",
            "sudo",
            "env",
            "time",
            "timeout",
            "npx",
            "uv",
            "run",
            "python",
            "-m",
            "git",
            "stash",
            "cargo",
            "+",
            "find",
            "-exec",
            "\\;",
            "make",
            "-j",
            "jq",
            "--arg",
            "x=1",
            "é",
            "*.rs",
            "a/b",
            "\n",
            "EOF",
            "apply_patch",
            "*** Update File: ",
            "xargs",
            "docker",
            "compose",
            "gh",
            "pr",
            "{}",
            "#",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for round in 0..4_000 {
            let len = next(24);
            let line: String = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
            let source = [Source::ClaudeCode, Source::Fish, Source::SweAgent][round % 3];
            let tool = ["Bash", "edit", "apply_patch", "Grep", "mystery"][next(5)];
            let input = match next(3) {
                0 => json!({ "command": line }),
                1 => json!({ "patch": line, "pattern": line, "x": [line] }),
                _ => json!(line),
            };
            for token in tokens_of(&action(source, tool, input, Some("/w"))) {
                assert!(!token.key.is_empty());
                assert!(token.slots.iter().all(|s| !s.kind.as_str().is_empty()));
            }
        }
    }

    /// The pathname expansion of each slot of the first token of `command` run by `source`.
    fn globs(source: Source, command: &str) -> Vec<(String, Option<Globbing>)> {
        let tool = if source == Source::ClaudeCode {
            "Bash"
        } else {
            "shell"
        };
        let tokens = tokens_of(&action(source, tool, json!({ "command": command }), None));
        tokens[0]
            .slots
            .iter()
            .map(|s| (s.value.clone(), s.glob))
            .collect()
    }

    #[test]
    fn issue_20_a_word_the_shell_expanded_as_a_pattern_is_marked_with_its_rules() {
        let g = |v: &str, glob: Option<Globbing>| (v.to_owned(), glob);
        // Typed unquoted in zsh: zsh's rules; the pattern given to grep is quoted there.
        assert_eq!(
            globs(Source::Zsh, "grep -l foo **/*.h"),
            [g("foo", None), g("**/*.h", Some(Globbing::Zsh))]
        );
        // An agent's command ran under `bash -c`; bash history too.
        for source in [Source::ClaudeCode, Source::Bash] {
            assert_eq!(
                globs(source, "grep foo *.c src/[ab].c x?.rs"),
                [
                    g("foo", None),
                    g("*.c", Some(Globbing::Sh)),
                    g("src/[ab].c", Some(Globbing::Sh)),
                    g("x?.rs", Some(Globbing::Sh)),
                ]
            );
        }
        // fish knows `*` only.
        assert_eq!(
            globs(Source::Fish, "grep foo **.h x?.rs"),
            [
                g("foo", None),
                g("**.h", Some(Globbing::Fish)),
                g("x?.rs", None)
            ]
        );
        // Quoted or escaped: the program got the pattern as written.
        assert_eq!(
            globs(
                Source::Zsh,
                r#"find . -name '*.rs' -o -name "*.md" -o -name \*.h"#
            )
            .into_iter()
            .map(|(_, glob)| glob)
            .collect::<Vec<_>>(),
            [None, None, None, None]
        );
        assert_eq!(globs(Source::Bash, "git add '*.md'"), [g("*.md", None)]);
        // Partly quoted: kept literal (the template writes a pattern whole or not at all).
        assert_eq!(
            globs(Source::Bash, "wc 'my dir'/*.c"),
            [g("my dir/*.c", None)]
        );
        // A variable's value is not known here: literal.
        assert_eq!(
            globs(Source::Bash, "grep foo $SRC/*.c"),
            [g("foo", None), g("$SRC/*.c", None)]
        );
        // A flag's value written apart is a word of its own; `--include=*.h` is part of one.
        assert_eq!(
            globs(Source::Bash, "grep -r --include=*.h -e foo -f *.pat ."),
            [
                g("*.h", None),
                g("foo", None),
                g("*.pat", Some(Globbing::Sh)),
                g(".", None)
            ]
        );
        // A secret redacted at ingest holds brackets, never a pattern.
        assert_eq!(
            globs(Source::Bash, "login [REDACTED:password]"),
            [g("[REDACTED:password]", None)]
        );
    }

    #[test]
    fn a_slot_stored_before_patterns_were_marked_still_loads() {
        let old = json!({"kind": "glob", "flag": null, "position": 0, "value": "*.c"});
        let slot: SlotValue = serde_json::from_value(old).unwrap();
        assert_eq!(slot.glob, None);
        let t = &tokens_of(&action(
            Source::Zsh,
            "shell",
            json!({"command": "wc -l **/*.h"}),
            None,
        ))[0];
        assert_eq!(t.slots[0].glob, Some(Globbing::Zsh));
        assert_eq!(serde_json::to_value(&t.slots[0]).unwrap()["glob"], "zsh");
    }
}
