//! Action abstraction: each [`Action`] becomes the tokens sequence mining works on.
//!
//! A shell action (an agent's `Bash`/`shell`/`exec_command` call, a history line, an OpenHands
//! `run`) is parsed with [`crate::mine::shell`] and gives one token per simple command it runs.
//! An agent tool call (`Read`, `Edit`, `Grep`, `apply_patch`, …) gives one token of the tool and
//! the kinds of its arguments. SWE-agent's own commands (`open`, `edit`, `str_replace_editor`, …)
//! are command lines and are read as such.
//!
//! # What a token is
//!
//! A token has a **key**, the stable canonical text used to intern it as a `u32` symbol
//! ([`Interner`]), a readable **template**, and the concrete **slots** of this occurrence. For
//! `cd web && cargo test --release -p core`, run in `/src/app`:
//!
//! ```text
//! key       cargo test --release -p <string>
//! template  cargo test --release -p <package>
//! slots     [{kind: string, flag: "-p", position: 0, value: "core"}]
//! cwd       /src/app/web
//! ```
//!
//! How the key is built, for a shell command:
//! - **Dropped wrappers**: `time`, `nohup`, `command`, `builtin`, `exec`, `noglob`, `env` (its
//!   `NAME=value` operands become assignments), `timeout DURATION`, `nice`, `ionice`, `stdbuf`.
//!   `sudo`/`doas`, `xargs`, `watch` and the like are kept: they change what runs.
//! - **Assignments** (`RUST_LOG=debug cargo …`) come first, sorted: `RUST_LOG=<string>`.
//! - **Program**: the basename of the first word. **Sub-commands** of the CLIs in the table
//!   below (`git stash pop`, `docker compose up`, `gh pr create`, `kubectl get pods`,
//!   `npm run build`, `make test`, `python -m pytest`) stay literal: they say what the command
//!   does. Runners (`uv run`, `poetry run`, `npx`, `pnpm exec`, `sudo`, `xargs`, …) are followed
//!   by the program they run, itself tokenized with its own table entry.
//! - **Flags** are kept literally and sorted, so their order does not matter; a flag's value
//!   (`-p core`, `--features=x`, `-j4`, `-am msg`) becomes a slot: `-p <string>`. Which flags
//!   take a value is known per CLI (unknown flags are taken to be boolean, except
//!   `--flag=value`). After `--`, words go to another program: flags keep their order group.
//! - **Positional arguments** become slots typed by [`classify`], in order; consecutive slots of
//!   one kind are written once with `...` (`git add <path>...`), so the number of files does not
//!   split a habit. `NAME=value` arguments (`make CC=clang`) are written `NAME=<kind>`.
//! - **Redirections** to files are part of the key (`> <path>`, `< <path>`); here-documents are
//!   `<<EOF`; fd duplications (`2>&1`) and `/dev/null`-like targets are left out.
//!
//! For an agent tool, the key is the tool's name, then its named options (`glob=<glob>`,
//! `output_mode=content`), then its main arguments (`Grep <string> <path>`). Unknown tools (MCP
//! tools and the like) get every short scalar field as `name=<kind>`.
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
//! `<program> <unparsed>`, holding the line as its only slot.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::action::placeholder::PLACEHOLDER_START;
use crate::action::{Action, Source};
use crate::mine::shell::{self, Dialect, RedirOp, SimpleCommand, Word};

/// The type of a slot value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotKind {
    /// A file or directory.
    Path,
    /// An integer or decimal number.
    Number,
    /// A hex id: a commit sha, a UUID.
    Hex,
    /// A URL (or an scp-like `git@host:path`).
    Url,
    /// A glob pattern.
    Glob,
    /// Anything else.
    String,
}

impl SlotKind {
    /// The kind's name, as written in keys (`<path>`).
    pub fn as_str(self) -> &'static str {
        match self {
            SlotKind::Path => "path",
            SlotKind::Number => "number",
            SlotKind::Hex => "hex",
            SlotKind::Url => "url",
            SlotKind::Glob => "glob",
            SlotKind::String => "string",
        }
    }
}

impl std::fmt::Display for SlotKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// Canonical text, stable across occurrences: `cargo test -p <string>`.
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
}

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
/// assert_eq!(tokens[0].key, "cargo test -p <string>");
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
];

/// SWE-agent commands whose first line is the command and the rest a text body.
const SWE_BODY_COMMANDS: &[&str] = &["edit", "insert", "append"];

/// The most programs a command line may chain through runners (`sudo xargs uv run …`).
const MAX_RUNNERS: usize = 8;

impl Tokenizer {
    /// A tokenizer dropping what `rules` calls noise.
    pub fn new(rules: &NoiseRules) -> Self {
        let set = |list: &[String]| list.iter().cloned().collect();
        Tokenizer {
            programs: set(&rules.programs),
            pipe_filters: set(&rules.pipe_filters),
            tools: set(&rules.tools),
        }
    }

    /// The tokens of an action, in order: one per simple command of a shell action (noise
    /// dropped), one for a tool call, none for a noise tool or an empty command.
    pub fn tokens(&self, action: &Action) -> Vec<Token> {
        if self.tools.contains(&action.tool)
            || action.input.get("is_input").and_then(Value::as_bool) == Some(true)
        {
            return Vec::new();
        }
        if let Some(line) = shell_line(action) {
            let dialect = if action.source == Source::Fish {
                Dialect::Fish
            } else {
                Dialect::Posix
            };
            return self.line_tokens(line, dialect, action.cwd.as_deref());
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
            return self.line_tokens(line, Dialect::Posix, action.cwd.as_deref());
        }
        tool_token(&action.tool, &action.input, action.cwd.as_deref())
            .into_iter()
            .collect()
    }

    /// The tokens of one command line.
    fn line_tokens(&self, line: &str, dialect: Dialect, cwd: Option<&str>) -> Vec<Token> {
        let commands = match shell::parse_dialect(line, dialect) {
            Ok(commands) => commands,
            Err(_) => {
                // A multi-line text whose first line is a command (SWE-agent, aider) is still
                // worth that command.
                let first = line.lines().next().unwrap_or("");
                match shell::parse_dialect(first, dialect) {
                    Ok(commands) if first.len() < line.len() => commands,
                    _ => return self.unparsed(line, cwd).into_iter().collect(),
                }
            }
        };
        let mut tokens: Vec<Token> = Vec::new();
        let mut reads_pipe = false;
        // The step of the last command of the current pipeline that has a token.
        let mut pipe_source: Option<usize> = None;
        // Text written out in the line that the next command reads through the pipe.
        let mut inline: Option<String> = None;
        for (step, cmd) in commands.iter().enumerate() {
            let from_pipe = reads_pipe;
            reads_pipe = cmd.connector == Some(shell::Connector::Pipe);
            if !from_pipe {
                pipe_source = None;
                inline = None;
            }
            // `echo '{"a":1}' | jq .a`: the data is the filter's input, not a step of its own.
            if !from_pipe
                && reads_pipe
                && commands.get(step + 1).is_some_and(is_text_filter_program)
                && let Some(data) = inline_producer(cmd)
            {
                inline = Some(data);
                continue;
            }
            match self.command_token(cmd, line, step, from_pipe, cwd) {
                Some(mut token) => {
                    if from_pipe {
                        token.pipe_from = pipe_source;
                        if let Some(data) = inline.take() {
                            token.stdin = Some(data);
                        }
                    }
                    pipe_source = Some(step);
                    tokens.push(token);
                }
                None => inline = None,
            }
        }
        tokens
    }

    fn command_token(
        &self,
        cmd: &SimpleCommand,
        line: &str,
        step: usize,
        from_pipe: bool,
        cwd: Option<&str>,
    ) -> Option<Token> {
        let cwd = match &cmd.cd {
            Some(dir) => Some(shell::resolve_dir(cwd, dir)),
            None => cwd.map(str::to_owned),
        };
        let mut draft = Draft::default();
        for a in &cmd.assignments {
            draft.assigns.push(FlagPart::assign(&a.name, &a.value.text));
        }
        let start = strip_wrappers(&cmd.words, &mut draft)?;
        let (program_word, args) = cmd.words.get(start..)?.split_first()?;
        let program = basename(&program_word.text);
        if program.is_empty() {
            return None;
        }
        if program == "apply_patch" && line.contains("*** Begin Patch") {
            return patch_token(line, cwd, step);
        }
        draft.program = program.to_owned();
        draft.segments.push(Segment::with_head(program));
        draft.innermost = program.to_owned();
        command_args(cli(program), args, &mut draft, 0);

        let mut writes_file = false;
        let mut stdin = None;
        let filter = TEXT_FILTERS.contains(&program);
        for r in &cmd.redirections {
            let target = r.target.text.as_str();
            if filter && let Some(data) = inline_redirection(r) {
                stdin = Some(data);
                continue;
            }
            match r.op {
                RedirOp::DupIn | RedirOp::DupOut
                    if target == "-" || target.bytes().all(|b| b.is_ascii_digit()) => {}
                _ if target.starts_with("/dev/") => {}
                RedirOp::HereDoc { .. } => draft.redirects.push(RedirPart {
                    op: "<<EOF".to_owned(),
                    slot: None,
                }),
                op => {
                    writes_file |= op.writes() || op == RedirOp::DupOut;
                    let fd = r.fd.map(|fd| fd.to_string()).unwrap_or_default();
                    let op_text = if op == RedirOp::DupOut {
                        "&>"
                    } else {
                        op.as_str()
                    };
                    draft.redirects.push(RedirPart {
                        op: format!("{fd}{op_text}"),
                        slot: Some((classify(target), target.to_owned())),
                    });
                }
            }
        }
        let feeds_pipe = cmd.connector == Some(shell::Connector::Pipe);
        let innermost = draft.innermost.as_str();
        if !writes_file
            && ((self.programs.contains(innermost) && !feeds_pipe)
                || (from_pipe && self.pipe_filters.contains(innermost)))
        {
            return None;
        }
        let mut token = draft.finish(TokenKind::Shell, cwd, step);
        token.stdin = stdin;
        Some(token)
    }

    /// The token of a line the parser rejected: its first word and the whole line.
    fn unparsed(&self, line: &str, cwd: Option<&str>) -> Option<Token> {
        // A broken line may start with an operator or a quote (`| sed …`, `"foo`): the program
        // is the first run of word characters.
        let start = line.trim_start_matches(|c: char| {
            !(c.is_alphanumeric() || matches!(c, '.' | '/' | '_' | '~' | '$'))
        });
        let first = start.split_whitespace().next()?;
        let end = first
            .find(|c: char| {
                matches!(
                    c,
                    '\'' | '"' | '(' | ')' | '`' | '|' | ';' | '&' | '<' | '>'
                )
            })
            .unwrap_or(first.len());
        let program = basename(first.get(..end).unwrap_or(first));
        if program.is_empty() || self.programs.contains(program) {
            return None;
        }
        Some(Token {
            kind: TokenKind::Unparsed,
            key: format!("{program} <unparsed>"),
            template: format!("{program} <unparsed>"),
            program: program.to_owned(),
            subcommand: None,
            slots: vec![SlotValue {
                kind: SlotKind::String,
                flag: None,
                position: 0,
                value: line.to_owned(),
            }],
            cwd: cwd.map(str::to_owned),
            step: 0,
            pipe_from: None,
            stdin: None,
        })
    }
}

/// Whether a command runs one of the [`TEXT_FILTERS`].
fn is_text_filter_program(cmd: &SimpleCommand) -> bool {
    cmd.words
        .first()
        .is_some_and(|w| TEXT_FILTERS.contains(&basename(&w.text)))
}

/// The text a command prints when it only writes out data given in the line: `echo` or
/// `echo -n` with plain words, `printf` with a format free of conversions (or `'%s\n'` and
/// plain words), `cat` with a here-document or here-string. `None` for anything else, and
/// for more than [`MAX_INLINE_INPUT`] bytes.
fn inline_producer(cmd: &SimpleCommand) -> Option<String> {
    let (program, args) = cmd.words.split_first()?;
    if !cmd.assignments.is_empty()
        || program.expanded
        || args
            .iter()
            .any(|w| w.expanded || !w.substitutions.is_empty())
    {
        return None;
    }
    let data = match program.text.as_str() {
        "echo" if cmd.redirections.is_empty() => {
            let (newline, words) = match args.first() {
                Some(w) if w.text == "-n" && !w.quoted => (false, &args[1..]),
                _ => (true, args),
            };
            // `-e` and friends interpret escapes: not plain data.
            if words.first().is_some_and(|w| w.text.starts_with('-')) {
                return None;
            }
            let mut text = words
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if newline {
                text.push('\n');
            }
            text
        }
        "printf" if cmd.redirections.is_empty() => {
            let (format, values) = args.split_first()?;
            if format.text == "%s\\n" && !values.is_empty() {
                values.iter().map(|w| format!("{}\n", w.text)).collect()
            } else if values.is_empty() && !format.text.contains('%') {
                printf_escapes(&format.text)?
            } else {
                return None;
            }
        }
        "cat" if args.is_empty() => match cmd.redirections.as_slice() {
            [r] => inline_redirection(r)?,
            _ => return None,
        },
        _ => return None,
    };
    (data.len() <= MAX_INLINE_INPUT).then_some(data)
}

/// The text a here-document or here-string gives its command, when it is written out: a
/// here-document whose body expands nothing (its delimiter quoted, or no `$` or backquote in
/// it), a here-string of one plain word.
fn inline_redirection(r: &shell::Redirection) -> Option<String> {
    let data = match r.op {
        RedirOp::HereDoc { .. } => {
            let body = r.body.as_ref()?;
            if !r.target.quoted && (body.contains('$') || body.contains('`')) {
                return None;
            }
            body.clone()
        }
        RedirOp::HereString if !r.target.expanded && r.target.substitutions.is_empty() => {
            format!("{}\n", r.target.text)
        }
        _ => return None,
    };
    (data.len() <= MAX_INLINE_INPUT).then_some(data)
}

/// A `printf` format without conversions, its escapes applied; `None` when it holds an
/// escape this does not know.
fn printf_escapes(format: &str) -> Option<String> {
    let mut out = String::with_capacity(format.len());
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\\' => out.push('\\'),
            '"' => out.push('"'),
            '\'' => out.push('\''),
            _ => return None,
        }
    }
    Some(out)
}

/// The command line of a shell action, if the action is one.
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

// ---------------------------------------------------------------------------------------------
// Slot kinds

/// File extensions that make a word a path.
const EXTENSIONS: &[&str] = &[
    "rs",
    "py",
    "pyi",
    "ipynb",
    "js",
    "mjs",
    "cjs",
    "jsx",
    "ts",
    "tsx",
    "mts",
    "cts",
    "json",
    "jsonl",
    "json5",
    "toml",
    "yaml",
    "yml",
    "md",
    "mdx",
    "rst",
    "txt",
    "csv",
    "tsv",
    "xml",
    "html",
    "htm",
    "css",
    "scss",
    "sass",
    "less",
    "sql",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "go",
    "java",
    "kt",
    "kts",
    "scala",
    "rb",
    "php",
    "swift",
    "m",
    "mm",
    "cs",
    "fs",
    "lua",
    "pl",
    "pm",
    "r",
    "jl",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "mli",
    "clj",
    "dart",
    "zig",
    "nim",
    "sol",
    "vue",
    "svelte",
    "astro",
    "proto",
    "graphql",
    "gql",
    "tf",
    "tfvars",
    "hcl",
    "ini",
    "cfg",
    "conf",
    "env",
    "lock",
    "log",
    "patch",
    "diff",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "webp",
    "ico",
    "pdf",
    "zip",
    "tar",
    "gz",
    "tgz",
    "bz2",
    "xz",
    "zst",
    "whl",
    "jar",
    "war",
    "so",
    "dylib",
    "dll",
    "a",
    "o",
    "wasm",
    "db",
    "sqlite",
    "sqlite3",
    "gradle",
    "properties",
    "mk",
    "cmake",
    "nix",
    "bzl",
    "mod",
    "sum",
    "tex",
    "bib",
    "out",
    "pem",
    "crt",
    "key",
    "service",
    "timer",
    "socket",
];

/// File names without an extension that are paths.
const FILE_NAMES: &[&str] = &[
    "Makefile",
    "GNUmakefile",
    "makefile",
    "Dockerfile",
    "Containerfile",
    "Justfile",
    "justfile",
    "Gemfile",
    "Rakefile",
    "Procfile",
    "Vagrantfile",
    "Jenkinsfile",
    "Pipfile",
    "Brewfile",
    "Tiltfile",
    "README",
    "LICENSE",
    "CHANGELOG",
    "CODEOWNERS",
    "BUILD",
    "WORKSPACE",
];

/// The kind of a word: url, number, hex (≥ 7 hex digits with a digit, or a UUID), glob (an
/// unescaped `*`, `?` or `[…]`), path (a `/`, a leading `.` or `~`, a known extension or file
/// name), or string. A word with whitespace is a string.
///
/// ```
/// use toolsmith::mine::token::{classify, SlotKind};
/// assert_eq!(classify("src/main.rs"), SlotKind::Path);
/// assert_eq!(classify("a1b2c3d"), SlotKind::Hex);
/// assert_eq!(classify("*.rs"), SlotKind::Glob);
/// assert_eq!(classify("main"), SlotKind::String);
/// ```
pub fn classify(word: &str) -> SlotKind {
    // A secret redacted at ingest is not a glob for its brackets: the word is classified as if
    // a plain value stood in the placeholder's place.
    if word.contains(PLACEHOLDER_START)
        && let Some(plain) = crate::action::placeholder::replace_placeholders(word, |_| "x".into())
    {
        return classify(&plain);
    }
    if word.is_empty() || word.contains(char::is_whitespace) {
        SlotKind::String
    } else if is_url(word) {
        SlotKind::Url
    } else if is_number(word) {
        SlotKind::Number
    } else if is_hex(word) {
        SlotKind::Hex
    } else if is_glob(word) {
        SlotKind::Glob
    } else if is_path(word) {
        SlotKind::Path
    } else {
        SlotKind::String
    }
}

fn is_url(word: &str) -> bool {
    if let Some((scheme, rest)) = word.split_once("://") {
        let mut chars = scheme.chars();
        return chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            && !rest.is_empty();
    }
    // scp-like `user@host.tld:path`, as git remotes are written.
    if let Some((user, rest)) = word.split_once('@')
        && let Some((host, _)) = rest.split_once(':')
    {
        let name = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        };
        return name(user) && name(host) && host.contains('.');
    }
    false
}

fn is_number(word: &str) -> bool {
    if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let digits = word.strip_prefix(['-', '+']).unwrap_or(word);
    let (int, frac) = match digits.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (digits, None),
    };
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

fn is_hex(word: &str) -> bool {
    let uuid_groups: Vec<usize> = word.split('-').map(str::len).collect();
    let all_hex = word.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if all_hex && uuid_groups == [8, 4, 4, 4, 12] {
        return true;
    }
    word.len() >= 7
        && word.bytes().all(|b| b.is_ascii_hexdigit())
        && word.bytes().any(|b| b.is_ascii_digit())
}

fn is_glob(word: &str) -> bool {
    let mut escaped = false;
    let mut open_bracket = false;
    for c in word.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' => return true,
            '[' => open_bracket = true,
            ']' if open_bracket => return true,
            _ => {}
        }
    }
    false
}

fn is_path(word: &str) -> bool {
    if word.contains('/') || word.starts_with('.') || word.starts_with('~') {
        return true;
    }
    let bytes = word.as_bytes();
    if bytes.len() > 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\' {
        return true;
    }
    if FILE_NAMES.contains(&word) {
        return true;
    }
    // A pytest node id (`test_x.py::test_y`) names a file.
    let file = word.split("::").next().unwrap_or(word);
    match file.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty() && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

/// A word that can be a sub-command, target or script name: starts with a letter, then
/// letters, digits and `_ . : @ + -`, no `/`.
fn is_identifier_like(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && word.len() <= 64
        && chars
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '@' | '+' | '-'))
}

/// Punctuation operands (`find … \( … \) !`, `{}`, `-`), kept literally; not `.` or `~`.
fn is_punct(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 2
        && !word.chars().any(|c| c.is_alphanumeric())
        && !word.starts_with(['.', '~', '/'])
}

fn is_flag(word: &str) -> bool {
    word.len() >= 2 && word.starts_with('-') && !is_number(word)
}

/// `NAME=value` with an identifier name.
fn env_like(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some((name, value))
}

// ---------------------------------------------------------------------------------------------
// Building a token

/// A flag, an assignment or a named tool option, with its values.
#[derive(Debug, Clone)]
struct FlagPart {
    /// As shown in the key: `-p`, or `NAME` for `NAME=<kind>`, or `name=value` for a literal.
    name: String,
    /// Written `NAME=<kind>` rather than `-p <kind>`.
    assign: bool,
    values: Vec<(SlotKind, String)>,
    /// The slot's name in templates.
    placeholder: String,
    /// The flag recorded in the slot values.
    slot_flag: String,
    /// Written with its value in one word (`-p<kind>`, as `mysql -pSECRET` must be).
    attached: bool,
}

impl FlagPart {
    fn boolean(name: &str) -> Self {
        FlagPart {
            name: name.to_owned(),
            assign: false,
            values: Vec::new(),
            placeholder: String::new(),
            slot_flag: name.to_owned(),
            attached: false,
        }
    }

    fn valued(name: &str, values: Vec<(SlotKind, String)>, placeholder: String) -> Self {
        FlagPart {
            name: name.to_owned(),
            assign: false,
            values,
            placeholder,
            slot_flag: name.to_owned(),
            attached: false,
        }
    }

    fn assign(name: &str, value: &str) -> Self {
        FlagPart {
            name: name.to_owned(),
            assign: true,
            values: vec![(classify(value), value.to_owned())],
            placeholder: name.to_ascii_lowercase(),
            slot_flag: name.to_owned(),
            attached: false,
        }
    }
}

#[derive(Debug, Clone)]
enum ArgPart {
    Lit(String),
    Slot {
        kind: SlotKind,
        value: String,
        /// Template name; the kind's name when `None`.
        name: Option<String>,
        /// Flag recorded in the slot value (a tool's field); `None` for positionals.
        flag: Option<String>,
    },
}

/// One program's part of a token: its literal head, flags and arguments.
#[derive(Debug, Clone, Default)]
struct Segment {
    head: Vec<String>,
    flags: Vec<FlagPart>,
    args: Vec<ArgPart>,
}

impl Segment {
    fn with_head(word: &str) -> Self {
        Segment {
            head: vec![word.to_owned()],
            ..Segment::default()
        }
    }
}

#[derive(Debug, Clone)]
struct RedirPart {
    op: String,
    slot: Option<(SlotKind, String)>,
}

/// A token being built.
#[derive(Debug, Clone, Default)]
struct Draft {
    program: String,
    /// The program that finally runs, past runners (`sudo apt` → `apt`): what noise rules see.
    innermost: String,
    assigns: Vec<FlagPart>,
    segments: Vec<Segment>,
    redirects: Vec<RedirPart>,
}

impl Draft {
    fn segment(&mut self) -> &mut Segment {
        if self.segments.is_empty() {
            self.segments.push(Segment::default());
        }
        let last = self.segments.len() - 1;
        &mut self.segments[last]
    }

    fn finish(mut self, kind: TokenKind, cwd: Option<String>, step: usize) -> Token {
        let mut key: Vec<String> = Vec::new();
        let mut template: Vec<String> = Vec::new();
        let mut slots: Vec<SlotValue> = Vec::new();
        let mut counters: HashMap<Option<String>, usize> = HashMap::new();
        let mut push_slot = |slots: &mut Vec<SlotValue>, kind, flag: Option<String>, value| {
            let counter = counters.entry(flag.clone()).or_insert(0);
            slots.push(SlotValue {
                kind,
                flag,
                position: *counter,
                value,
            });
            *counter += 1;
        };

        self.assigns.sort_by(|a, b| a.name.cmp(&b.name));
        let mut flag_groups = vec![std::mem::take(&mut self.assigns)];
        let mut subcommand = None;
        for (i, seg) in self.segments.iter_mut().enumerate() {
            if i == 0 && seg.head.len() > 1 {
                subcommand = Some(seg.head[1..].join(" "));
            }
            seg.flags.sort_by(|a, b| a.name.cmp(&b.name));
            flag_groups.push(std::mem::take(&mut seg.flags));
        }
        let mut groups = flag_groups.into_iter();
        // Assignments first, then each segment: head, sorted flags, arguments.
        for part in groups.next().unwrap_or_default() {
            render_flag(&part, &mut key, &mut template);
            for (kind, value) in part.values {
                push_slot(&mut slots, kind, Some(part.slot_flag.clone()), value);
            }
        }
        for seg in std::mem::take(&mut self.segments) {
            key.extend(seg.head.iter().cloned());
            template.extend(seg.head);
            for part in groups.next().unwrap_or_default() {
                render_flag(&part, &mut key, &mut template);
                for (kind, value) in part.values {
                    push_slot(&mut slots, kind, Some(part.slot_flag.clone()), value);
                }
            }
            let mut args = seg.args.into_iter().peekable();
            while let Some(arg) = args.next() {
                match arg {
                    ArgPart::Lit(text) => {
                        key.push(text.clone());
                        template.push(text);
                    }
                    ArgPart::Slot {
                        kind,
                        value,
                        name,
                        flag,
                    } => {
                        let label = name.unwrap_or_else(|| kind.as_str().to_owned());
                        let mut run = 1;
                        // A secret redacted at ingest is a slot of its own, never part of a run
                        // (a run is one parameter, and the words around a secret are not).
                        let collapsible = flag.is_none() && !value.contains(PLACEHOLDER_START);
                        push_slot(&mut slots, kind, flag, value);
                        while collapsible
                            && let Some(ArgPart::Slot {
                                kind: next_kind,
                                flag: None,
                                value: next_value,
                                ..
                            }) = args.peek()
                            && *next_kind == kind
                            && !next_value.contains(PLACEHOLDER_START)
                        {
                            if let Some(ArgPart::Slot { value, .. }) = args.next() {
                                push_slot(&mut slots, kind, None, value);
                            }
                            run += 1;
                        }
                        let dots = if run > 1 { "..." } else { "" };
                        key.push(format!("<{kind}>{dots}"));
                        template.push(format!("<{label}>{dots}"));
                    }
                }
            }
        }
        for r in self.redirects {
            key.push(r.op.clone());
            template.push(r.op.clone());
            if let Some((kind, value)) = r.slot {
                let name = if r.op.contains('<') {
                    "input"
                } else {
                    "output"
                };
                key.push(format!("<{kind}>"));
                template.push(format!("<{name}>"));
                push_slot(&mut slots, kind, Some(r.op), value);
            }
        }
        Token {
            kind,
            key: key.join(" "),
            template: template.join(" "),
            program: self.program,
            subcommand,
            slots,
            cwd,
            step,
            pipe_from: None,
            stdin: None,
        }
    }
}

fn render_flag(part: &FlagPart, key: &mut Vec<String>, template: &mut Vec<String>) {
    if part.assign {
        let kind = part.values.first().map_or(SlotKind::String, |v| v.0);
        key.push(format!("{}=<{kind}>", part.name));
        template.push(format!("{}=<{}>", part.name, part.placeholder));
        return;
    }
    if part.attached
        && let [(kind, _)] = part.values.as_slice()
    {
        key.push(format!("{}<{kind}>", part.name));
        template.push(format!("{}<{}>", part.name, part.placeholder));
        return;
    }
    key.push(part.name.clone());
    template.push(part.name.clone());
    for (kind, _) in &part.values {
        key.push(format!("<{kind}>"));
        template.push(format!("<{}>", part.placeholder));
    }
}

// ---------------------------------------------------------------------------------------------
// Shell commands

/// Skips the wrappers that do not change what runs; returns the index of the program's word.
fn strip_wrappers(words: &[Word], draft: &mut Draft) -> Option<usize> {
    let mut i = 0;
    // Each pass consumes at least one word, so this ends.
    while let Some(word) = words.get(i) {
        let rest = &words[i + 1..];
        let skipped = match word.text.as_str() {
            "time" | "nohup" | "builtin" | "exec" | "noglob" | "nocorrect" => {
                1 + count_flags(rest, &[])
            }
            // `command -v x` asks where x is: not a wrapper then.
            "command" if rest.first().is_some_and(|w| !w.text.starts_with('-')) => 1,
            "env" => {
                let mut n = 1;
                while let Some(w) = words.get(i + n) {
                    let t = w.text.as_str();
                    if matches!(
                        t,
                        "-u" | "--unset" | "-C" | "--chdir" | "-S" | "--split-string"
                    ) {
                        n += 2;
                    } else if t.starts_with('-') {
                        n += 1;
                    } else if let Some((name, value)) = env_like(t) {
                        draft.assigns.push(FlagPart::assign(name, value));
                        n += 1;
                    } else {
                        break;
                    }
                }
                n
            }
            "timeout" => {
                let n = 1 + count_flags(rest, &["-s", "--signal", "-k", "--kill-after"]);
                n + 1 // the duration
            }
            "nice" => 1 + count_flags(rest, &["-n", "--adjustment"]),
            "ionice" => 1 + count_flags(rest, &["-c", "--class", "-n", "--classdata", "-p"]),
            "stdbuf" => 1 + count_flags(rest, &["-i", "-o", "-e"]),
            _ => 0,
        };
        if skipped == 0 {
            return Some(i);
        }
        if i + skipped >= words.len() {
            // Nothing after the wrapper: the wrapper itself is the program.
            return Some(i);
        }
        i += skipped;
    }
    None
}

/// How many leading words are flags (with the values of `with_value`).
fn count_flags(words: &[Word], with_value: &[&str]) -> usize {
    let mut n = 0;
    while let Some(w) = words.get(n) {
        let t = w.text.as_str();
        if !t.starts_with('-') || t == "-" {
            break;
        }
        n += if with_value.contains(&t) { 2 } else { 1 };
    }
    n
}

/// Whether a CLI's first positional argument is a sub-command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// No sub-commands.
    None,
    /// The first positional is a sub-command (`git commit`).
    First,
    /// The first positional is a program to run with the rest (`sudo`, `xargs`, `npx`).
    Runner,
}

/// What is known about one CLI.
#[derive(Debug)]
struct Cli {
    names: &'static [&'static str],
    sub: Sub,
    /// Flags that take a value.
    value: &'static [&'static str],
    /// Flags that take a value only after one sub-command.
    sub_value: &'static [(&'static str, &'static [&'static str])],
    /// Flags that take two values.
    value2: &'static [&'static str],
    /// Flags whose value is taken only when the next word is a number (`make -j 4`), or
    /// attached (`-j4`).
    optional_number: &'static [&'static str],
    /// Flags whose value can only be attached (`mysql -pSECRET`).
    attached: &'static [&'static str],
    /// Sub-commands followed by a second-level verb (`git stash pop`); `*`: all of them.
    nested: &'static [&'static str],
    /// How many positionals after the sub-command (`""`: without one) stay literal.
    literal: &'static [(&'static str, usize)],
    /// Sub-commands (nested ones written `tool run`) whose next positional is a program.
    runners: &'static [&'static str],
    /// A flag whose value is a module run with the remaining arguments (`python -m`).
    module_flag: Option<&'static str>,
    /// The first positional is a pattern or script (grep, sed, jq): always a string.
    pattern_first: bool,
    /// Flags that give the pattern instead, making the first positional an operand.
    pattern_flags: &'static [&'static str],
    /// Flags taking every word up to `;` or `+` (`find -exec`).
    until_semicolon: &'static [&'static str],
    /// After the first positional, flags belong to the script it names (`python x.py -m`).
    script_host: bool,
    /// Words starting with `+` before the sub-command are toolchains (`cargo +nightly`).
    plus_toolchain: bool,
    /// Long names of short flags, for template placeholders.
    long: &'static [(&'static str, &'static str)],
}

const GENERIC: Cli = Cli {
    names: &[],
    sub: Sub::None,
    value: &[],
    sub_value: &[],
    value2: &[],
    optional_number: &[],
    attached: &[],
    nested: &[],
    literal: &[],
    runners: &[],
    module_flag: None,
    pattern_first: false,
    pattern_flags: &[],
    until_semicolon: &[],
    script_host: false,
    plus_toolchain: false,
    long: &[],
};

/// Programs whose positionals are all targets or goals, literal (`make test`, `mvn package`).
const ALL_LITERAL: &[(&str, usize)] = &[("", usize::MAX)];

// One entry per CLI, flags packed on a line: the table is read and extended by CLI, not by flag.
#[rustfmt::skip]
static CLIS: &[Cli] = &[
    Cli {
        names: &["git", "hub"],
        sub: Sub::First,
        value: &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
        sub_value: &[
            ("commit", &["-m", "--message", "-F", "--file", "-C", "--reuse-message", "-c", "--reedit-message", "--author", "--date", "--fixup", "--squash", "-t", "--template", "--cleanup"]),
            ("log", &["-n", "--max-count", "--author", "--committer", "--since", "--until", "--after", "--before", "--grep", "--format", "--pretty", "--skip", "-S", "-G", "-L", "--date"]),
            ("show", &["--format", "--pretty"]),
            ("checkout", &["-b", "-B", "--orphan"]),
            ("switch", &["-c", "-C", "--orphan"]),
            ("branch", &["-u", "--set-upstream-to"]),
            ("clone", &["--depth", "-b", "--branch", "-o", "--origin", "--reference", "-c", "--config", "--filter", "-j", "--jobs", "--shallow-since"]),
            ("fetch", &["--depth", "--deepen", "--shallow-since", "-j", "--jobs"]),
            ("pull", &["--depth", "-s", "--strategy", "-X", "--strategy-option"]),
            ("push", &["-o", "--push-option", "--repo"]),
            ("merge", &["-m", "-F", "-s", "--strategy", "-X", "--strategy-option"]),
            ("rebase", &["--onto", "-x", "--exec", "-s", "--strategy", "-X", "--strategy-option"]),
            ("tag", &["-m", "--message", "-F", "--file", "-u"]),
            ("stash", &["-m", "--message"]),
            ("grep", &["-e", "-f", "-A", "-B", "-C", "--max-depth", "-m"]),
            ("blame", &["-L"]),
            ("format-patch", &["-o", "--output-directory", "-v"]),
            ("worktree", &["-b", "-B"]),
            ("cherry-pick", &["-m", "--mainline"]),
            ("revert", &["-m", "--mainline"]),
            ("diff", &["-U", "--diff-filter"]),
            ("restore", &["-s", "--source"]),
            ("config", &["--file", "-f"]),
            ("remote", &["-t", "-m"]),
            ("rev-list", &["-n", "--max-count"]),
        ],
        nested: &["stash", "remote", "submodule", "worktree", "bisect", "notes", "lfs", "sparse-checkout", "maintenance"],
        long: &[("-m", "message"), ("-C", "dir"), ("-b", "branch"), ("-n", "count"), ("-c", "config")],
        ..GENERIC
    },
    Cli {
        names: &["hg", "svn", "jj", "fossil", "bzr"],
        sub: Sub::First,
        value: &["-m", "--message", "-r", "--rev", "--revision", "-R", "--repository", "-b", "--branch", "-l", "--limit", "-u", "--user", "-d", "--date", "--cwd"],
        nested: &["git", "op", "bookmark", "branch", "workspace", "file", "util"],
        long: &[("-m", "message"), ("-r", "rev")],
        ..GENERIC
    },
    Cli {
        names: &["cargo"],
        sub: Sub::First,
        plus_toolchain: true,
        value: &["-p", "--package", "--bin", "--example", "--test", "--bench", "--features", "-F", "--target", "--target-dir", "--manifest-path", "-j", "--jobs", "--profile", "--exclude", "--message-format", "--color", "--config", "-Z", "--registry", "--index", "--git", "--branch", "--tag", "--rev", "--path", "--root", "--name", "--edition", "--vcs", "--rename", "--lockfile-path", "-C"],
        sub_value: &[("install", &["--version", "--vers"]), ("add", &["--vers"])],
        nested: &["nextest", "sqlx", "insta", "llvm-cov"],
        long: &[("-p", "package"), ("-F", "features"), ("-j", "jobs")],
        ..GENERIC
    },
    Cli {
        names: &["npm"],
        sub: Sub::First,
        value: &["--prefix", "-w", "--workspace", "--registry", "--tag", "--otp", "--cache", "--loglevel"],
        nested: &["config", "cache", "pkg", "dist-tag", "owner", "access", "team", "token", "profile", "org", "hook"],
        literal: &[("run", 1), ("run-script", 1)],
        runners: &["exec", "x"],
        long: &[("-w", "workspace")],
        ..GENERIC
    },
    Cli {
        names: &["pnpm"],
        sub: Sub::First,
        value: &["-C", "--dir", "--filter", "-F", "--reporter"],
        nested: &["store", "env", "config"],
        literal: &[("run", 1)],
        runners: &["exec", "dlx"],
        long: &[("-C", "dir"), ("-F", "filter")],
        ..GENERIC
    },
    Cli {
        names: &["yarn"],
        sub: Sub::First,
        value: &["--cwd"],
        nested: &["cache", "config", "workspaces", "plugin", "constraints"],
        literal: &[("run", 1), ("workspace", 2)],
        runners: &["dlx", "exec"],
        ..GENERIC
    },
    Cli {
        names: &["bun"],
        sub: Sub::First,
        value: &["--cwd", "--filter"],
        literal: &[("run", 1)],
        runners: &["x", "exec"],
        ..GENERIC
    },
    Cli {
        names: &["deno"],
        sub: Sub::First,
        value: &["--config", "-c", "--import-map", "--env-file", "--filter"],
        ..GENERIC
    },
    Cli {
        names: &["npx", "bunx", "pnpx"],
        sub: Sub::Runner,
        value: &["-p", "--package", "-c", "--call"],
        ..GENERIC
    },
    Cli {
        names: &["uvx"],
        sub: Sub::Runner,
        value: &["--from", "--with", "-p", "--python"],
        ..GENERIC
    },
    Cli {
        names: &["sudo", "doas"],
        sub: Sub::Runner,
        value: &["-u", "--user", "-g", "--group", "-U", "--other-user", "-C", "--close-from", "-h", "--host", "-p", "--prompt", "-D", "--chdir", "-r", "--role", "-t", "--type", "-T", "--command-timeout"],
        ..GENERIC
    },
    Cli {
        names: &["xargs"],
        sub: Sub::Runner,
        value: &["-I", "-n", "--max-args", "-P", "--max-procs", "-d", "--delimiter", "-L", "--max-lines", "-s", "--max-chars", "-E", "-a", "--arg-file"],
        ..GENERIC
    },
    Cli {
        names: &["screen"],
        sub: Sub::Runner,
        value: &["-S", "-c", "-t", "-p", "-X", "-L", "-Logfile"],
        ..GENERIC
    },
    Cli {
        names: &["watch"],
        sub: Sub::Runner,
        value: &["-n", "--interval"],
        ..GENERIC
    },
    Cli {
        names: &["docker", "podman", "nerdctl"],
        sub: Sub::First,
        value: &["-H", "--host", "--context", "--config", "-l", "--log-level"],
        sub_value: &[
            ("run", &["-p", "--publish", "-e", "--env", "--env-file", "-v", "--volume", "-w", "--workdir", "--name", "--network", "--net", "--platform", "-u", "--user", "--entrypoint", "--mount", "--label", "-l", "--add-host", "--cpus", "-m", "--memory", "--restart", "--hostname", "-h", "--device", "--gpus", "--shm-size", "--ulimit", "--pull", "--expose", "--ipc", "--pid", "--security-opt", "--cap-add", "--cap-drop", "--tmpfs", "--runtime"]),
            ("create", &["-p", "--publish", "-e", "--env", "--env-file", "-v", "--volume", "-w", "--workdir", "--name", "--network", "--platform", "-u", "--user", "--entrypoint", "--mount"]),
            ("exec", &["-e", "--env", "-w", "--workdir", "-u", "--user", "--env-file"]),
            ("build", &["-t", "--tag", "-f", "--file", "--build-arg", "--target", "--platform", "--cache-from", "--cache-to", "--progress", "-o", "--output", "--secret", "--ssh", "--label", "--network", "--iidfile", "--builder"]),
            ("buildx", &["-t", "--tag", "-f", "--file", "--build-arg", "--target", "--platform", "--cache-from", "--cache-to", "--progress", "-o", "--output", "--builder"]),
            ("compose", &["-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory", "--tail", "-e", "--env", "-w", "--workdir", "-u", "--user"]),
            ("logs", &["-n", "--tail", "--since", "--until"]),
            ("ps", &["-f", "--filter", "--format", "-n", "--last"]),
            ("images", &["-f", "--filter", "--format"]),
            ("inspect", &["-f", "--format"]),
            ("stop", &["-t", "--time"]),
            ("push", &["--platform"]),
            ("pull", &["--platform"]),
        ],
        nested: &["compose", "container", "image", "volume", "network", "system", "buildx", "builder", "context", "manifest", "plugin", "swarm", "service", "stack", "secret", "config", "node", "trust", "scout"],
        ..GENERIC
    },
    Cli {
        names: &["docker-compose", "podman-compose"],
        sub: Sub::First,
        value: &["-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory"],
        sub_value: &[("logs", &["--tail"]), ("exec", &["-e", "--env", "-w", "--workdir", "-u", "--user"]), ("run", &["-e", "--env", "-w", "--workdir", "-u", "--user", "--name"])],
        ..GENERIC
    },
    Cli {
        names: &["kubectl", "oc", "microk8s.kubectl"],
        sub: Sub::First,
        value: &["-n", "--namespace", "--context", "--kubeconfig", "-l", "--selector", "-o", "--output", "--cluster", "--user", "-c", "--container", "--field-selector", "--sort-by", "--timeout"],
        sub_value: &[
            ("apply", &["-f", "--filename", "-k", "--kustomize"]),
            ("create", &["-f", "--filename", "-k", "--kustomize", "--from-literal", "--from-file", "--image"]),
            ("delete", &["-f", "--filename", "-k", "--kustomize"]),
            ("replace", &["-f", "--filename"]),
            ("diff", &["-f", "--filename", "-k", "--kustomize"]),
            ("logs", &["--since", "--tail", "--since-time"]),
            ("patch", &["-p", "--patch", "--type"]),
            ("scale", &["--replicas"]),
            ("rollout", &["--to-revision"]),
            ("port-forward", &["--address"]),
            ("run", &["--image", "--port", "--env"]),
            ("expose", &["--port", "--target-port", "--type", "--name"]),
        ],
        nested: &["rollout", "config", "auth", "certificate", "top", "set", "create", "plugin"],
        literal: &[("get", 1), ("describe", 1), ("delete", 1), ("edit", 1), ("explain", 1), ("label", 1), ("annotate", 1), ("patch", 1), ("scale", 1), ("expose", 1), ("wait", 1)],
        long: &[("-n", "namespace"), ("-l", "selector"), ("-o", "output"), ("-f", "filename"), ("-c", "container")],
        ..GENERIC
    },
    Cli {
        names: &["helm"],
        sub: Sub::First,
        value: &["-n", "--namespace", "-f", "--values", "--set", "--set-string", "--set-file", "--version", "--kube-context", "-o", "--output", "--repo", "--timeout", "--description"],
        nested: &["repo", "plugin", "dependency", "registry", "get", "show", "search"],
        long: &[("-n", "namespace"), ("-f", "values")],
        ..GENERIC
    },
    Cli {
        names: &["go"],
        sub: Sub::First,
        value: &["-o", "-run", "-bench", "-tags", "-ldflags", "-gcflags", "-asmflags", "-count", "-timeout", "-p", "-coverprofile", "-covermode", "-coverpkg", "-cpu", "-benchtime", "-mod", "-C", "-exec", "-modfile", "-skip", "-fuzz", "-fuzztime", "-parallel", "-shuffle", "-outputdir", "-cpuprofile", "-memprofile", "-blockprofile", "-trace", "-vet"],
        nested: &["mod", "work"],
        literal: &[("tool", 1)],
        ..GENERIC
    },
    Cli {
        names: &["python", "python3", "python2", "py", "pypy", "pypy3"],
        value: &["-c", "-W", "-X"],
        module_flag: Some("-m"),
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["node", "nodejs"],
        value: &["-e", "--eval", "-p", "--print", "-r", "--require", "--import", "--loader", "--env-file"],
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["ruby", "perl", "php", "bash", "sh", "zsh", "dash", "fish", "ksh", "lua", "Rscript"],
        value: &["-e", "-c", "-I", "-r", "-E"],
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["pip", "pip3"],
        sub: Sub::First,
        value: &["-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url", "-t", "--target", "--prefix", "-f", "--find-links", "--platform", "--root", "--python-version", "--only-binary", "--no-binary", "--upgrade-strategy", "--log", "--cache-dir", "--python"],
        long: &[("-r", "requirement"), ("-e", "editable"), ("-i", "index_url")],
        ..GENERIC
    },
    Cli {
        names: &["uv"],
        sub: Sub::First,
        value: &["-p", "--python", "--with", "--with-requirements", "--extra", "--group", "--only-group", "--no-group", "-r", "--requirement", "--index-url", "--extra-index-url", "--index", "--directory", "--project", "--package", "-e", "--editable", "--from", "--python-platform", "-c", "--constraint", "-o", "--output-file", "--upgrade-package", "-P", "--refresh-package", "--env-file", "--script"],
        nested: &["pip", "python", "tool", "cache", "self"],
        runners: &["run", "tool run"],
        long: &[("-p", "python"), ("-r", "requirement"), ("-o", "output_file")],
        ..GENERIC
    },
    Cli {
        names: &["poetry"],
        sub: Sub::First,
        value: &["-C", "--directory", "-E", "--extras", "--with", "--without", "--only", "-G", "--group", "-P", "--project"],
        nested: &["env", "self", "cache", "source", "debug"],
        runners: &["run"],
        ..GENERIC
    },
    Cli {
        names: &["pipx"],
        sub: Sub::First,
        value: &["--spec", "--python", "--pip-args"],
        runners: &["run"],
        ..GENERIC
    },
    Cli {
        names: &["conda", "mamba", "micromamba"],
        sub: Sub::First,
        value: &["-n", "--name", "-p", "--prefix", "-c", "--channel", "-f", "--file"],
        nested: &["env"],
        runners: &["run"],
        long: &[("-n", "name"), ("-c", "channel"), ("-f", "file")],
        ..GENERIC
    },
    Cli {
        names: &["pytest", "py.test"],
        value: &["-k", "-m", "-p", "-c", "--maxfail", "-n", "--cov", "--cov-report", "--cov-config", "--rootdir", "--tb", "--junitxml", "--junit-xml", "--deselect", "--ignore", "--ignore-glob", "--durations", "-o", "--override-ini", "--log-level", "--log-cli-level", "--basetemp", "--confcutdir", "-W", "--timeout", "--reruns", "--dist", "--import-mode"],
        long: &[("-k", "keyword"), ("-m", "marker"), ("-n", "workers")],
        ..GENERIC
    },
    Cli {
        names: &["ruff"],
        sub: Sub::First,
        value: &["--select", "--ignore", "--extend-select", "--extend-ignore", "--config", "--target-version", "--line-length", "--exclude", "--extend-exclude", "--output-format", "--per-file-ignores"],
        ..GENERIC
    },
    Cli {
        names: &["black", "isort", "flake8", "mypy", "pylint", "pyright", "pyflakes", "autopep8", "bandit", "pydocstyle"],
        value: &["--config", "--exclude", "--include", "--line-length", "-l", "--target-version", "--max-line-length", "--select", "--ignore", "--extend-ignore", "--rcfile", "--disable", "--enable", "-p", "--package", "-m", "--module", "--python-version", "--cache-dir", "--settings-path", "--profile", "-j", "--jobs"],
        ..GENERIC
    },
    Cli {
        names: &["make", "gmake", "bmake"],
        value: &["-C", "--directory", "-f", "--file", "--makefile", "-o", "-W", "-I", "--include-dir"],
        optional_number: &["-j", "-l"],
        literal: ALL_LITERAL,
        long: &[("-C", "dir"), ("-f", "makefile"), ("-j", "jobs")],
        ..GENERIC
    },
    Cli {
        names: &["ninja"],
        value: &["-C", "-f", "-t", "-k", "-l", "-d"],
        optional_number: &["-j"],
        literal: ALL_LITERAL,
        ..GENERIC
    },
    Cli {
        names: &["just"],
        value: &["-f", "--justfile", "-d", "--working-directory"],
        value2: &["--set"],
        literal: &[("", 1)],
        ..GENERIC
    },
    Cli {
        names: &["task", "mvn", "mvnw", "gradle", "gradlew", "rake", "ant"],
        value: &["-d", "--dir", "-t", "--taskfile", "-f", "--file", "-P", "--activate-profiles", "-pl", "--projects", "-rf", "-T", "--threads", "-s", "--settings", "-D", "-p", "--project-dir", "-x", "--exclude-task", "--tests", "--buildfile"],
        literal: ALL_LITERAL,
        ..GENERIC
    },
    Cli {
        names: &["systemctl"],
        sub: Sub::First,
        value: &["-H", "--host", "-M", "--machine", "-t", "--type", "--state", "-p", "--property", "-n", "--lines", "-o", "--output", "-s", "--signal", "--kill-whom", "--root"],
        ..GENERIC
    },
    Cli {
        names: &["journalctl"],
        value: &["-u", "--unit", "-n", "--lines", "--since", "--until", "-p", "--priority", "-o", "--output", "-t", "--identifier", "-g", "--grep", "--user-unit", "-M", "-D", "--directory", "--file", "-S", "-U"],
        long: &[("-u", "unit"), ("-n", "lines"), ("-p", "priority"), ("-o", "output")],
        ..GENERIC
    },
    Cli {
        names: &["apt", "apt-get", "apt-cache", "aptitude", "dnf", "yum", "zypper", "snap", "apk", "port"],
        sub: Sub::First,
        value: &["-o", "--option", "-t", "--target-release", "-c", "--enablerepo", "--disablerepo", "-x", "--exclude", "--repository", "-X"],
        ..GENERIC
    },
    Cli {
        names: &["brew"],
        sub: Sub::First,
        nested: &["services", "bundle"],
        ..GENERIC
    },
    Cli {
        names: &["gh", "glab"],
        sub: Sub::First,
        value: &["-R", "--repo", "-t", "--title", "-b", "--body", "-F", "--body-file", "--field", "-f", "--raw-field", "-B", "--base", "-H", "--head", "--header", "-l", "--label", "-a", "--assignee", "-m", "--milestone", "-L", "--limit", "--json", "-q", "--jq", "-T", "--template", "-X", "--method", "-s", "--state", "-r", "--reviewer", "--workflow", "--branch", "--job", "--author", "--search", "--commit", "-p", "--project", "--name", "-e", "--env"],
        nested: &["*"],
        long: &[("-R", "repo"), ("-t", "title"), ("-b", "body"), ("-B", "base"), ("-H", "head"), ("-L", "limit"), ("-q", "jq"), ("-l", "label"), ("-X", "method"), ("-F", "field"), ("-f", "raw_field")],
        ..GENERIC
    },
    Cli {
        names: &["rustup"],
        sub: Sub::First,
        value: &["--toolchain", "--target", "--profile", "-c", "--component", "-t"],
        nested: &["toolchain", "target", "component", "override", "self", "set", "show"],
        ..GENERIC
    },
    Cli {
        names: &["rustc"],
        value: &["-o", "--edition", "--crate-type", "--crate-name", "-C", "--cfg", "-L", "-l", "--target", "--emit", "--out-dir", "-A", "-W", "-D", "-F", "--cap-lints", "--explain"],
        ..GENERIC
    },
    Cli {
        names: &["tsc"],
        value: &["-p", "--project", "--outDir", "--outFile", "--target", "-t", "--module", "-m", "--lib", "--jsx", "--rootDir", "--baseUrl", "--declarationDir"],
        long: &[("-p", "project")],
        ..GENERIC
    },
    Cli {
        names: &["next", "vite", "nuxt", "nuxi", "astro", "ng", "nx", "turbo", "expo", "tauri", "nest", "storybook", "react-scripts", "vue-cli-service", "remix", "lerna", "changeset", "electron-builder"],
        sub: Sub::First,
        value: &["--port", "-p", "--host", "--hostname", "-H", "--config", "-c", "--mode", "-m", "--filter", "--project", "--scope", "--base", "--outDir", "--out-dir", "--target"],
        long: &[("-p", "port"), ("-H", "hostname"), ("-c", "config"), ("-m", "mode")],
        ..GENERIC
    },
    Cli {
        names: &["pyenv", "rbenv", "nodenv", "goenv", "plenv", "jenv", "nvm", "fnm", "volta", "asdf", "mise", "rtx", "sdk", "gem", "cpanm", "direnv"],
        sub: Sub::First,
        value: &["-v", "--version"],
        runners: &["exec"],
        ..GENERIC
    },
    Cli {
        names: &["eslint", "prettier", "biome", "stylelint"],
        value: &["-c", "--config", "--ext", "--format", "-f", "-o", "--output-file", "--rule", "--parser", "--max-warnings", "--ignore-path", "--ignore-pattern", "--plugin"],
        ..GENERIC
    },
    Cli {
        names: &["vitest", "jest"],
        value: &["-t", "--testNamePattern", "-c", "--config", "--testPathPattern", "--maxWorkers", "-w", "--coverageDirectory", "--reporters", "--reporter", "--selectProjects", "--shard", "--project", "--dir", "--root", "--environment", "--pool"],
        literal: &[("", 1)],
        long: &[("-t", "test_name"), ("-c", "config")],
        ..GENERIC
    },
    Cli {
        names: &["grep", "egrep", "fgrep", "zgrep"],
        value: &["-e", "--regexp", "-f", "--file", "-m", "--max-count", "-A", "--after-context", "-B", "--before-context", "-C", "--context", "--include", "--exclude", "--exclude-dir", "--label", "-d", "--directories", "-D", "--devices"],
        pattern_first: true,
        pattern_flags: &["-e", "--regexp", "-f", "--file"],
        long: &[("-e", "pattern"), ("-m", "max_count"), ("-A", "after"), ("-B", "before"), ("-C", "context")],
        ..GENERIC
    },
    Cli {
        names: &["rg", "ag", "ack"],
        value: &["-e", "--regexp", "-f", "--file", "-m", "--max-count", "-A", "--after-context", "-B", "--before-context", "-C", "--context", "-t", "--type", "-T", "--type-not", "-g", "--glob", "--iglob", "-r", "--replace", "-j", "--threads", "-M", "--max-columns", "--max-depth", "--max-filesize", "--sort", "--sortr", "--type-add", "--engine", "--pre", "-G", "--file-search-regex", "--ignore", "--depth"],
        pattern_first: true,
        pattern_flags: &["-e", "--regexp", "-f", "--file"],
        long: &[("-e", "pattern"), ("-t", "type"), ("-g", "glob"), ("-r", "replace"), ("-A", "after"), ("-B", "before"), ("-C", "context")],
        ..GENERIC
    },
    Cli {
        names: &["find", "gfind"],
        value: &["-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-type", "-xtype", "-maxdepth", "-mindepth", "-newer", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-user", "-group", "-perm", "-printf", "-fprint", "-wholename", "-iwholename", "-samefile", "-links", "-inum", "-fstype", "-newermt", "-used", "-uid", "-gid", "-regextype"],
        until_semicolon: &["-exec", "-execdir", "-ok", "-okdir"],
        ..GENERIC
    },
    Cli {
        names: &["fd", "fdfind"],
        value: &["-e", "--extension", "-t", "--type", "-E", "--exclude", "-d", "--max-depth", "--min-depth", "-x", "--exec", "-X", "--exec-batch", "-S", "--size", "--changed-within", "--changed-before", "-j", "--threads", "-c", "--color", "--base-directory", "--search-path", "-o", "--owner"],
        pattern_first: true,
        ..GENERIC
    },
    Cli {
        names: &["sed", "gsed"],
        value: &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
        pattern_first: true,
        pattern_flags: &["-e", "--expression", "-f", "--file"],
        ..GENERIC
    },
    Cli {
        names: &["awk", "gawk", "mawk", "nawk"],
        value: &["-F", "--field-separator", "-v", "--assign", "-f", "--file"],
        pattern_first: true,
        pattern_flags: &["-f", "--file"],
        ..GENERIC
    },
    Cli {
        names: &["jq", "yq", "gojq", "jaq"],
        value: &["--indent", "-f", "--from-file", "-o", "--output-format", "-p", "--input-format"],
        value2: &["--arg", "--argjson", "--slurpfile", "--rawfile"],
        pattern_first: true,
        pattern_flags: &["-f", "--from-file"],
        ..GENERIC
    },
    Cli {
        names: &["curl"],
        value: &["-X", "--request", "-H", "--header", "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json", "-o", "--output", "-u", "--user", "-A", "--user-agent", "-F", "--form", "-b", "--cookie", "-c", "--cookie-jar", "-e", "--referer", "-m", "--max-time", "--connect-timeout", "-w", "--write-out", "-x", "--proxy", "--retry", "--retry-delay", "-T", "--upload-file", "--cacert", "--cert", "--key", "-r", "--range", "-K", "--config", "--resolve", "--interface", "--limit-rate", "-C", "--continue-at", "--url"],
        long: &[("-X", "method"), ("-H", "header"), ("-d", "data"), ("-o", "output"), ("-u", "user"), ("-F", "form"), ("-w", "write_out"), ("-m", "max_time"), ("-A", "user_agent")],
        ..GENERIC
    },
    Cli {
        names: &["wget"],
        value: &["-O", "--output-document", "-o", "--output-file", "-P", "--directory-prefix", "--header", "-t", "--tries", "-T", "--timeout", "--user", "--password", "-U", "--user-agent", "--post-data", "--post-file", "-e", "--execute", "-i", "--input-file", "-l", "--level", "-A", "--accept", "-R", "--reject"],
        long: &[("-O", "output"), ("-P", "directory")],
        ..GENERIC
    },
    Cli {
        names: &["ssh"],
        value: &["-i", "-p", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-b", "-c", "-E", "-W", "-S", "-O", "-Q", "-m", "-w", "-B"],
        script_host: true,
        long: &[("-i", "identity"), ("-p", "port"), ("-l", "login")],
        ..GENERIC
    },
    Cli {
        names: &["scp", "sftp"],
        value: &["-i", "-P", "-o", "-F", "-J", "-l", "-c", "-S"],
        ..GENERIC
    },
    Cli {
        names: &["rsync"],
        value: &["-e", "--rsh", "--exclude", "--include", "--exclude-from", "--include-from", "--filter", "-f", "--files-from", "--chmod", "--chown", "--port", "--password-file", "--log-file", "--backup-dir", "--suffix", "--timeout", "--bwlimit", "--max-size", "--min-size", "--partial-dir", "--temp-dir", "-T", "--link-dest", "--compare-dest", "--copy-dest", "--info", "--debug"],
        ..GENERIC
    },
    Cli {
        names: &["tar", "bsdtar", "gtar"],
        value: &["-f", "--file", "-C", "--directory", "--exclude", "-T", "--files-from", "-X", "--exclude-from", "--strip-components", "--transform", "--owner", "--group", "--mode", "--mtime", "--format", "-b", "--blocking-factor", "-I", "--use-compress-program", "--xform"],
        ..GENERIC
    },
    Cli {
        names: &["unzip"],
        value: &["-d", "-x"],
        ..GENERIC
    },
    Cli {
        names: &["head", "tail"],
        value: &["-n", "--lines", "-c", "--bytes", "--pid", "-s", "--sleep-interval"],
        long: &[("-n", "lines"), ("-c", "bytes")],
        ..GENERIC
    },
    Cli {
        names: &["sort"],
        value: &["-k", "--key", "-t", "--field-separator", "-o", "--output", "-T", "--temporary-directory", "-S", "--buffer-size", "--parallel"],
        ..GENERIC
    },
    Cli {
        names: &["uniq"],
        value: &["-f", "--skip-fields", "-s", "--skip-chars", "-w", "--check-chars"],
        ..GENERIC
    },
    Cli {
        names: &["cut"],
        value: &["-d", "--delimiter", "-f", "--fields", "-c", "--characters", "-b", "--bytes", "--output-delimiter"],
        long: &[("-d", "delimiter"), ("-f", "fields")],
        ..GENERIC
    },
    Cli {
        names: &["cp", "mv", "ln", "install", "mkdir", "touch", "rm", "rmdir", "chmod", "chown", "chgrp"],
        value: &["-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group", "--reference", "-d", "--date"],
        ..GENERIC
    },
    Cli {
        names: &["du", "df"],
        value: &["-d", "--max-depth", "-t", "--type", "-B", "--block-size", "--exclude"],
        ..GENERIC
    },
    Cli {
        names: &["ps"],
        value: &["-o", "-p", "-u", "-C", "--sort", "-U", "-G"],
        ..GENERIC
    },
    Cli {
        names: &["kill"],
        value: &["-s", "-n"],
        ..GENERIC
    },
    Cli {
        names: &["pkill", "pgrep"],
        value: &["-u", "-g", "-P", "-s", "-t", "-U", "-G", "--signal"],
        pattern_first: true,
        ..GENERIC
    },
    Cli {
        names: &["lsof"],
        value: &["-p", "-u", "-c", "-g", "-d"],
        ..GENERIC
    },
    Cli {
        names: &["terraform", "tofu", "terragrunt"],
        sub: Sub::First,
        value: &["-var", "-var-file", "-target", "-out", "-parallelism", "-lock-timeout", "-backend-config", "-replace", "-state"],
        nested: &["state", "workspace", "providers"],
        ..GENERIC
    },
    Cli {
        names: &["aws"],
        sub: Sub::First,
        value: &["--region", "--profile", "--output", "--query", "--endpoint-url", "--bucket", "--key", "--function-name", "--stack-name", "--instance-ids", "--filters", "--cluster", "--service", "--name", "--payload", "--log-group-name", "--template-file", "--parameter-overrides", "--capabilities", "--cli-binary-format", "--body", "--secret-id", "--table-name", "--repository-name"],
        nested: &["*"],
        ..GENERIC
    },
    Cli {
        names: &["gcloud", "az"],
        sub: Sub::First,
        value: &["--project", "--region", "--zone", "--format", "--filter", "--limit", "--account", "--configuration", "--image", "--source", "--platform", "--service-account", "--machine-type", "--memory", "--set-env-vars", "-g", "--resource-group", "-n", "--name", "-l", "--location", "--subscription", "-o", "--output", "--query", "--sku"],
        nested: &["*"],
        ..GENERIC
    },
    Cli {
        names: &["firebase", "vercel", "netlify", "fly", "flyctl", "heroku", "wrangler", "supabase"],
        sub: Sub::First,
        value: &["--only", "--project", "-P", "--app", "-a", "--config", "-c", "--region", "--scope", "--env", "--token", "--site", "--dir"],
        nested: &["*"],
        ..GENERIC
    },
    Cli {
        names: &["tmux"],
        sub: Sub::First,
        value: &["-t", "-s", "-n", "-c", "-S", "-L", "-f", "-x", "-y", "-F"],
        ..GENERIC
    },
    Cli {
        names: &["dotnet"],
        sub: Sub::First,
        value: &["-c", "--configuration", "-f", "--framework", "-o", "--output", "-p", "--project", "-r", "--runtime", "--filter", "-v", "--verbosity", "-s", "--source", "-n", "--name"],
        nested: &["ef", "tool", "nuget", "workload", "sln", "user-secrets", "dev-certs"],
        literal: &[("new", 1)],
        ..GENERIC
    },
    Cli {
        names: &["swift"],
        sub: Sub::First,
        value: &["-c", "--configuration", "--product", "--filter"],
        nested: &["package"],
        ..GENERIC
    },
    Cli {
        names: &["mix", "composer", "bundle", "rails", "cabal", "stack", "dune", "opam", "zig", "nix", "flutter", "dart", "perf", "adb", "pre-commit", "hatch", "pdm", "rye", "toolsmith"],
        sub: Sub::First,
        value: &["-e", "--environment", "-d", "--working-dir", "-s", "--hook-stage", "--state", "--config"],
        nested: &["generate", "g", "destroy", "flake", "profile", "env"],
        runners: &["exec", "shell"],
        ..GENERIC
    },
    Cli {
        names: &["psql"],
        value: &["-h", "--host", "-p", "--port", "-U", "--username", "-d", "--dbname", "-c", "--command", "-f", "--file", "-v", "--set", "-o", "--output", "-F", "-R", "-P"],
        long: &[("-h", "host"), ("-p", "port"), ("-U", "user"), ("-d", "database"), ("-c", "command"), ("-f", "file")],
        ..GENERIC
    },
    Cli {
        names: &["mysql", "mariadb"],
        value: &["-u", "--user", "-h", "--host", "-P", "--port", "-D", "--database", "-e", "--execute"],
        attached: &["-p"],
        ..GENERIC
    },
    Cli {
        names: &["redis-cli"],
        value: &["-h", "-p", "-a", "-n", "-u"],
        ..GENERIC
    },
    Cli {
        names: &["openssl"],
        sub: Sub::First,
        value: &["-in", "-out", "-key", "-passin", "-passout", "-subj", "-days", "-newkey", "-keyout", "-CA", "-CAkey", "-config", "-name", "-connect", "-servername", "-inform", "-outform", "-certfile", "-extfile"],
        ..GENERIC
    },
    Cli {
        names: &["gcc", "g++", "clang", "clang++", "cc", "c++"],
        value: &["-o", "-I", "-L", "-D", "-U", "-include", "-x", "-MF", "-MT", "-isystem"],
        attached: &["-l", "-O", "-W", "-f", "-m", "-g"],
        ..GENERIC
    },
    Cli {
        names: &["cmake"],
        value: &["-S", "-B", "-G", "-D", "-C", "-T", "-A", "--build", "--target", "-t", "--config", "--preset", "--install", "--prefix", "--component", "-P"],
        optional_number: &["-j", "--parallel"],
        ..GENERIC
    },
    Cli {
        names: &["ctest"],
        value: &["-R", "-E", "-L", "--test-dir", "-C", "--timeout", "--output-junit", "--repeat"],
        optional_number: &["-j", "--parallel"],
        ..GENERIC
    },
    Cli {
        names: &["java"],
        value: &["-cp", "-classpath", "--class-path", "-jar", "-p", "--module-path", "-m", "--module"],
        attached: &["-D", "-X"],
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["javac"],
        value: &["-d", "-cp", "-classpath", "-sourcepath", "-source", "-target", "--release"],
        ..GENERIC
    },
    Cli {
        names: &["str_replace_editor"],
        sub: Sub::First,
        value: &["--old_str", "--new_str", "--file_text", "--insert_line"],
        value2: &["--view_range"],
        ..GENERIC
    },
];

static CLI_INDEX: LazyLock<HashMap<&'static str, &'static Cli>> = LazyLock::new(|| {
    let mut index = HashMap::new();
    for cli in CLIS {
        for name in cli.names {
            index.entry(*name).or_insert(cli);
        }
    }
    index
});

/// What is known about a program, by its basename; versioned names (`python3.12`, `pip3`) and
/// `pkg@version` fall back to the plain name.
fn cli(program: &str) -> Option<&'static Cli> {
    let index = &*CLI_INDEX;
    if let Some(cli) = index.get(program) {
        return Some(*cli);
    }
    let unversioned = program
        .split('@')
        .next()
        .unwrap_or(program)
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    index.get(unversioned).copied()
}

impl Cli {
    fn takes_value(&self, sub: Option<&str>, flag: &str) -> bool {
        self.value.contains(&flag)
            || sub.is_some_and(|sub| {
                self.sub_value
                    .iter()
                    .any(|(s, flags)| *s == sub && flags.contains(&flag))
            })
    }

    fn nests(&self, sub: &str) -> bool {
        self.nested.iter().any(|n| *n == "*" || *n == sub)
    }

    fn literal_after(&self, sub: &str) -> usize {
        self.literal
            .iter()
            .find(|(s, _)| *s == sub)
            .map_or(0, |(_, n)| *n)
    }

    fn long_name(&self, flag: &str) -> String {
        match self.long.iter().find(|(short, _)| *short == flag) {
            Some((_, long)) => (*long).to_owned(),
            None => flag.trim_start_matches('-').replace(['-', '.'], "_"),
        }
    }
}

/// Adds the arguments of a program to the draft's last segment (and more segments for `--`,
/// modules and programs run by runners).
fn command_args(known: Option<&Cli>, args: &[Word], draft: &mut Draft, depth: usize) {
    let spec = known.unwrap_or(&GENERIC);
    let mut sub: Option<String> = None;
    let mut expect_sub = spec.sub == Sub::First;
    let mut runner_next = spec.sub == Sub::Runner;
    let mut nested_next = false;
    let mut literal_left = spec.literal_after("");
    let mut dashdash = false;
    let mut known_flags = true;
    let mut positionals = 0usize;
    let mut pattern_given = false;
    let mut k = 0;
    while let Some(w) = args.get(k) {
        let t = w.text.as_str();
        if !dashdash && t == "--" {
            draft.segments.push(Segment::with_head("--"));
            dashdash = true;
            known_flags = false;
            k += 1;
            continue;
        }
        // After `--` flags are still flags, of the program the words are passed to, whose
        // table is unknown: `cargo test -- --nocapture`.
        if is_flag(t) {
            if known_flags
                && spec.module_flag == Some(t)
                && let Some(module) = args.get(k + 1)
                && depth < MAX_RUNNERS
            {
                let name = module.text.as_str();
                let seg = draft.segment();
                seg.head.push(t.to_owned());
                seg.head.push(name.to_owned());
                draft.innermost = name.to_owned();
                draft.segments.push(Segment::default());
                command_args(cli_of_module(name), &args[k + 2..], draft, depth + 1);
                return;
            }
            let spec_for_flags = if known_flags { spec } else { &GENERIC };
            k += flag(
                spec_for_flags,
                sub.as_deref(),
                args,
                k,
                draft,
                &mut pattern_given,
            );
            continue;
        }
        // A positional argument.
        if expect_sub {
            expect_sub = false;
            if spec.plus_toolchain && t.starts_with('+') && !t.contains('/') {
                draft.segment().head.push(t.to_owned());
                expect_sub = true;
                k += 1;
                continue;
            }
            if is_identifier_like(t) {
                draft.segment().head.push(t.to_owned());
                nested_next = spec.nests(t);
                literal_left = spec.literal_after(t);
                runner_next = spec.runners.contains(&t);
                sub = Some(t.to_owned());
                k += 1;
                continue;
            }
        }
        if nested_next {
            nested_next = false;
            if is_identifier_like(t) {
                draft.segment().head.push(t.to_owned());
                let joined = format!("{} {t}", sub.as_deref().unwrap_or(""));
                literal_left = literal_left.max(spec.literal_after(&joined));
                runner_next = spec.runners.contains(&joined.as_str());
                k += 1;
                continue;
            }
        }
        if runner_next && depth < MAX_RUNNERS && classify(t) != SlotKind::Path {
            let program = basename(t);
            draft.innermost = program.to_owned();
            draft.segments.push(Segment::with_head(program));
            command_args(cli(program), &args[k + 1..], draft, depth + 1);
            return;
        }
        runner_next = false;
        if literal_left > 0 && is_identifier_like(t) {
            // Right after the sub-command, a target or script name reads as part of it
            // (`make test -j4`, `kubectl get pods -n x`).
            let seg = draft.segment();
            if seg.args.is_empty() {
                seg.head.push(t.to_owned());
            } else {
                seg.args.push(ArgPart::Lit(t.to_owned()));
            }
            literal_left -= 1;
        } else if is_punct(t) {
            draft.segment().args.push(ArgPart::Lit(t.to_owned()));
        } else if let Some((name, value)) = env_like(t) {
            draft.segment().flags.push(FlagPart::assign(name, value));
        } else {
            let kind = if spec.pattern_first && positionals == 0 && !pattern_given && known_flags {
                SlotKind::String
            } else {
                classify(t)
            };
            draft.segment().args.push(ArgPart::Slot {
                kind,
                value: t.to_owned(),
                name: None,
                flag: None,
            });
        }
        positionals += 1;
        k += 1;
        if spec.script_host && known_flags {
            // `python x.py -m y`: what follows the script is the script's, in its own group.
            known_flags = false;
            draft.segments.push(Segment::default());
        }
    }
}

/// The table entry for a Python module run with `-m` (`pip`, `pytest`, …).
fn cli_of_module(module: &str) -> Option<&'static Cli> {
    cli(module.split('.').next().unwrap_or(module))
}

/// Adds the flag at `args[k]` (and its values) to the draft; returns how many words it used.
fn flag(
    spec: &Cli,
    sub: Option<&str>,
    args: &[Word],
    k: usize,
    draft: &mut Draft,
    pattern_given: &mut bool,
) -> usize {
    let t = args.get(k).map_or("", |w| w.text.as_str());
    let next = args.get(k + 1).map(|w| w.text.as_str());
    let value_kind = |flag: &str, value: &str| {
        if spec.pattern_flags.contains(&flag) {
            SlotKind::String
        } else {
            classify(value)
        }
    };
    let mut add = |flag: &str, values: Vec<&str>, draft: &mut Draft| {
        if spec.pattern_flags.contains(&flag) {
            *pattern_given = true;
        }
        let part = if values.is_empty() {
            FlagPart::boolean(flag)
        } else {
            let values = values
                .into_iter()
                .map(|v| (value_kind(flag, v), v.to_owned()))
                .collect();
            FlagPart::valued(flag, values, spec.long_name(flag))
        };
        draft.segment().flags.push(part);
    };

    // `-p[REDACTED:password-flag]`: a value redacted at ingest, attached to its flag, is that
    // flag's value (a slot), whatever the table says of the flag, and stays attached (`mysql
    // -p X` would prompt, and take X for a database).
    if let Some(at) = t.find(PLACEHOLDER_START)
        && at >= 2
        && !t.starts_with("--")
        && !t[..at].contains('=')
    {
        let (name, value) = t.split_at(at);
        let mut part = FlagPart::valued(
            name,
            vec![(classify(value), value.to_owned())],
            spec.long_name(name),
        );
        part.attached = true;
        draft.segment().flags.push(part);
        return 1;
    }
    // `--name=value`, and single-dash long flags written `-name=value` (go).
    if let Some((name, value)) = t.split_once('=')
        && (t.starts_with("--") || name.len() > 2)
    {
        add(name, vec![value], draft);
        return 1;
    }
    if spec.until_semicolon.contains(&t) {
        let rest = args.get(k + 1..).unwrap_or(&[]);
        let len = rest
            .iter()
            .position(|w| w.text == ";" || w.text == "+")
            .unwrap_or(rest.len());
        let command: Vec<&str> = rest[..len].iter().map(|w| w.text.as_str()).collect();
        add(t, vec![&command.join(" ")], draft);
        // The words, and the `;` or `+` that ends them.
        return 1 + (len + 1).min(rest.len());
    }
    if spec.value2.contains(&t) {
        let values: Vec<&str> = args
            .get(k + 1..)
            .unwrap_or(&[])
            .iter()
            .take(2)
            .map(|w| w.text.as_str())
            .collect();
        let used = values.len();
        add(t, values, draft);
        return 1 + used;
    }
    if spec.takes_value(sub, t) {
        return match next {
            Some(value) => {
                add(t, vec![value], draft);
                2
            }
            None => {
                add(t, vec![], draft);
                1
            }
        };
    }
    if spec.optional_number.contains(&t)
        && let Some(value) = next.filter(|v| is_number(v))
    {
        add(t, vec![value], draft);
        return 2;
    }
    if !t.starts_with("--")
        && let (Some(short), Some(rest)) = (t.get(..2), t.get(2..))
        && !rest.is_empty()
    {
        // `-j4`, `-pcore`, `-n5`: a value flag with its value attached.
        if spec.takes_value(sub, short)
            || spec.optional_number.contains(&short)
            || spec.attached.contains(&short)
        {
            add(short, vec![rest], draft);
            return 1;
        }
        // `-am msg`, `-xzf file.tgz`: a cluster whose last letter takes the next word.
        if let Some(last) = t.chars().last()
            && spec.takes_value(sub, &format!("-{last}"))
            && let Some(value) = next
        {
            add(t, vec![value], draft);
            return 2;
        }
    }
    add(t, vec![], draft);
    1
}

// ---------------------------------------------------------------------------------------------
// Agent tools

/// How a tool's input field appears in its token.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// A main argument, written positionally (`Read <path>`); with a fixed kind or classified.
    Arg(Option<SlotKind>),
    /// An option, written `name=<kind>`.
    Named(Option<SlotKind>),
    /// An option whose value is part of the key (`output_mode=content`).
    Literal,
}

/// One input field of a tool.
#[derive(Debug)]
struct Field {
    /// The input keys it may be under, by preference.
    keys: &'static [&'static str],
    /// Its name in templates.
    name: &'static str,
    role: Role,
}

const PATH_ARG: Field = Field {
    keys: &["file_path", "path", "notebook_path", "filename"],
    name: "path",
    role: Role::Arg(Some(SlotKind::Path)),
};

/// Known tools: names (Claude Code, Codex, OpenHands, aider) and their fields. Fields not
/// listed (contents, old and new strings, offsets, prompts) are left out of tokens.
static TOOLS: &[(&[&str], &[Field])] = &[
    (
        &["Read", "read", "NotebookRead", "view_image", "View"],
        &[PATH_ARG],
    ),
    (
        &["Write", "write", "MultiEdit", "NotebookEdit"],
        &[PATH_ARG],
    ),
    (
        &[
            "Edit",
            "edit",
            "str_replace_based_edit_tool",
            "str_replace_editor",
        ],
        &[
            Field {
                keys: &["command"],
                name: "command",
                role: Role::Literal,
            },
            PATH_ARG,
        ],
    ),
    (
        &["Grep", "grep"],
        &[
            Field {
                keys: &["pattern"],
                name: "pattern",
                role: Role::Arg(Some(SlotKind::String)),
            },
            Field {
                keys: &["path"],
                name: "path",
                role: Role::Arg(Some(SlotKind::Path)),
            },
            Field {
                keys: &["glob"],
                name: "glob",
                role: Role::Named(Some(SlotKind::Glob)),
            },
            Field {
                keys: &["type"],
                name: "type",
                role: Role::Literal,
            },
            Field {
                keys: &["output_mode"],
                name: "output_mode",
                role: Role::Literal,
            },
            Field {
                keys: &["-i"],
                name: "-i",
                role: Role::Literal,
            },
            Field {
                keys: &["multiline"],
                name: "multiline",
                role: Role::Literal,
            },
        ],
    ),
    (
        &["Glob", "glob"],
        &[
            Field {
                keys: &["pattern"],
                name: "pattern",
                role: Role::Arg(Some(SlotKind::Glob)),
            },
            Field {
                keys: &["path"],
                name: "path",
                role: Role::Arg(Some(SlotKind::Path)),
            },
        ],
    ),
    (
        &["WebFetch", "web_fetch", "browse", "fetch"],
        &[Field {
            keys: &["url"],
            name: "url",
            role: Role::Arg(Some(SlotKind::Url)),
        }],
    ),
    (
        &["WebSearch", "web_search"],
        &[Field {
            keys: &["query"],
            name: "query",
            role: Role::Arg(Some(SlotKind::String)),
        }],
    ),
    (
        &["Task", "Agent"],
        &[Field {
            keys: &["subagent_type"],
            name: "subagent_type",
            role: Role::Literal,
        }],
    ),
    (&["run_ipython", "KillShell", "KillBash"], &[]),
];

/// Longest value a literal field may have to be part of a key.
const MAX_LITERAL: usize = 40;

/// Longest string an unknown tool's field may have to become a slot.
const MAX_GENERIC_VALUE: usize = 200;

/// The token of an agent tool call.
fn tool_token(tool: &str, input: &Value, cwd: Option<&str>) -> Option<Token> {
    if tool.is_empty() {
        return None;
    }
    if tool == "apply_patch" {
        let text = ["patch", "input", "command"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .unwrap_or("");
        return patch_token(text, cwd.map(str::to_owned), 0);
    }
    let mut draft = Draft {
        program: tool.to_owned(),
        innermost: tool.to_owned(),
        ..Draft::default()
    };
    draft.segments.push(Segment::with_head(tool));
    match TOOLS.iter().find(|(names, _)| names.contains(&tool)) {
        Some((_, fields)) => {
            for field in *fields {
                let Some((key, value)) = field
                    .keys
                    .iter()
                    .find_map(|k| input.get(*k).and_then(scalar).map(|v| (*k, v)))
                else {
                    continue;
                };
                add_field(&mut draft, key, field.name, field.role, value);
            }
        }
        None => {
            let Some(object) = input.as_object() else {
                return Some(draft.finish(TokenKind::Tool, cwd.map(str::to_owned), 0));
            };
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            for key in keys {
                let Some(value) = object.get(key) else {
                    continue;
                };
                let role = match value {
                    Value::Bool(_) => Role::Literal,
                    Value::Number(_) => Role::Named(Some(SlotKind::Number)),
                    Value::String(s) if s.len() <= MAX_GENERIC_VALUE && !s.contains('\n') => {
                        Role::Named(None)
                    }
                    _ => continue,
                };
                if let Some(value) = scalar(value) {
                    add_field(&mut draft, key, key, role, value);
                }
            }
        }
    }
    Some(draft.finish(TokenKind::Tool, cwd.map(str::to_owned), 0))
}

/// A JSON scalar as text.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn add_field(draft: &mut Draft, key: &str, name: &str, role: Role, value: String) {
    let seg = draft.segment();
    match role {
        Role::Arg(kind) => seg.args.push(ArgPart::Slot {
            kind: kind.unwrap_or_else(|| classify(&value)),
            value,
            name: Some(name.to_owned()),
            flag: Some(key.to_owned()),
        }),
        Role::Named(kind) => {
            let kind = kind.unwrap_or_else(|| classify(&value));
            let mut part = FlagPart::valued(name, vec![(kind, value)], name.to_owned());
            part.assign = true;
            part.slot_flag = key.to_owned();
            seg.flags.push(part);
        }
        Role::Literal
            if value.len() <= MAX_LITERAL
                && !value.contains(char::is_whitespace)
                && !value.contains(PLACEHOLDER_START) =>
        {
            seg.flags
                .push(FlagPart::boolean(&format!("{name}={value}")));
        }
        Role::Literal => {
            let mut part = FlagPart::valued(name, vec![(SlotKind::String, value)], name.to_owned());
            part.assign = true;
            part.slot_flag = key.to_owned();
            seg.flags.push(part);
        }
    }
}

/// The token of an `apply_patch` patch: the files it adds, updates, deletes and moves.
fn patch_token(text: &str, cwd: Option<String>, step: usize) -> Option<Token> {
    let mut draft = Draft {
        program: "apply_patch".to_owned(),
        innermost: "apply_patch".to_owned(),
        ..Draft::default()
    };
    draft.segments.push(Segment::with_head("apply_patch"));
    for line in text.lines() {
        let line = line.trim_end();
        let found = [
            ("*** Add File: ", "add"),
            ("*** Update File: ", "update"),
            ("*** Delete File: ", "delete"),
            ("*** Move to: ", "move_to"),
        ]
        .into_iter()
        .find_map(|(prefix, op)| line.strip_prefix(prefix).map(|path| (op, path.trim())));
        if let Some((op, path)) = found {
            draft.segment().flags.push(FlagPart::valued(
                op,
                vec![(SlotKind::Path, path.to_owned())],
                op.to_owned(),
            ));
        }
    }
    Some(draft.finish(TokenKind::Tool, cwd, step))
}

// ---------------------------------------------------------------------------------------------
// Interning

/// Why a key could not be interned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InternError {
    /// Every `u32` is already in use.
    #[error("more than {} distinct tokens", u32::MAX)]
    Full,
}

/// Maps token keys to dense `u32` symbols (0, 1, 2, … in first-seen order) and back.
#[derive(Debug, Clone, Default)]
pub struct Interner {
    ids: HashMap<String, u32>,
    keys: Vec<String>,
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Self {
        Interner::default()
    }

    /// The symbol of `key`, assigning the next one if the key is new.
    pub fn intern(&mut self, key: &str) -> Result<u32, InternError> {
        if let Some(&id) = self.ids.get(key) {
            return Ok(id);
        }
        let id = u32::try_from(self.keys.len()).map_err(|_| InternError::Full)?;
        self.ids.insert(key.to_owned(), id);
        self.keys.push(key.to_owned());
        Ok(id)
    }

    /// The symbol of `key`, if it was interned.
    pub fn get(&self, key: &str) -> Option<u32> {
        self.ids.get(key).copied()
    }

    /// The key of a symbol.
    pub fn resolve(&self, id: u32) -> Option<&str> {
        self.keys.get(usize::try_from(id).ok()?).map(String::as_str)
    }

    /// How many keys are interned.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is interned.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Every interned key, indexed by symbol.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn action(source: Source, tool: &str, input: Value, cwd: Option<&str>) -> Action {
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

    fn bash(command: &str) -> Vec<Token> {
        tokens_of(&action(
            Source::ClaudeCode,
            "Bash",
            json!({ "command": command }),
            Some("/w"),
        ))
    }

    fn keys(command: &str) -> Vec<String> {
        bash(command).into_iter().map(|t| t.key).collect()
    }

    #[test]
    fn data_written_in_the_line_is_a_text_filters_input() {
        let one = |command: &str| {
            let tokens = bash(command);
            assert_eq!(tokens.len(), 1, "{command}: {tokens:#?}");
            (tokens[0].key.clone(), tokens[0].stdin.clone())
        };
        let cases: &[(&str, &str, &str)] = &[
            ("echo '{\"a\": 1}' | jq .a", "jq <string>", "{\"a\": 1}\n"),
            ("echo -n a b | tr a-z A-Z", "tr <string>...", "a b"),
            ("printf 'b\\na\\n' | sort", "sort", "b\na\n"),
            ("printf '%s\\n' b a b | sort -u", "sort -u", "b\na\nb\n"),
            (
                "jq -r .name <<< '{\"name\":\"x\"}'",
                "jq -r <string>",
                "{\"name\":\"x\"}\n",
            ),
            (
                "jq .a <<'EOF'\n{\"a\": \"$HOME\"}\nEOF",
                "jq <string>",
                "{\"a\": \"$HOME\"}\n",
            ),
            ("cat <<EOF | wc -l\none\ntwo\nEOF", "wc -l", "one\ntwo\n"),
        ];
        for (command, key, stdin) in cases {
            assert_eq!(
                one(command),
                ((*key).to_owned(), Some((*stdin).to_owned())),
                "{command}"
            );
        }
        // Not written out: expansions, an unquoted here-document that expands, escapes `echo
        // -e` would interpret, a program that is not a text filter.
        for command in [
            "echo \"$X\" | jq .a",
            "jq .a <<EOF\n{\"a\": \"$HOME\"}\nEOF",
            "echo -e 'a\\tb' | sort",
            "printf '%d\\n' 3 | sort",
        ] {
            assert!(bash(command).iter().all(|t| t.stdin.is_none()), "{command}");
        }
        let tokens = bash("echo y | apt-get install x");
        assert_eq!(tokens.len(), 2);
        assert!(tokens.iter().all(|t| t.stdin.is_none()));
        assert_eq!(tokens[1].pipe_from, Some(0));

        // The whole pipeline reads the data; later filters read the one before.
        let tokens = bash("echo '[3,1]' | jq '.[]' | sort -n | uniq -c");
        let shape: Vec<_> = tokens
            .iter()
            .map(|t| (t.key.as_str(), t.pipe_from, t.stdin.as_deref()))
            .collect();
        assert_eq!(
            shape,
            [
                ("jq <string>", None, Some("[3,1]\n")),
                ("sort -n", Some(1), None),
                ("uniq -c", Some(2), None)
            ]
        );
        // A trimming filter dropped in between: the next one reads the last kept command.
        let tokens = bash("cargo test 2>&1 | tail -5 | grep FAIL; git status");
        let shape: Vec<_> = tokens
            .iter()
            .map(|t| (t.program.as_str(), t.pipe_from))
            .collect();
        assert_eq!(shape, [("cargo", None), ("grep", Some(0)), ("git", None)]);
    }

    #[test]
    fn classify_table() {
        use SlotKind::*;
        let cases: &[(&str, SlotKind)] = &[
            ("https://github.com/o/r", Url),
            ("http://localhost:3000/api?x=1", Url),
            ("git@github.com:o/r.git", Url),
            ("file:///tmp/x", Url),
            ("42", Number),
            ("-5", Number),
            ("+1", Number),
            ("3.14", Number),
            ("0x1F", Number),
            ("1234567", Number),
            ("a1b2c3d", Hex),
            ("4f2a9c1e8b7d", Hex),
            ("0123456789abcdef0123456789abcdef01234567", Hex),
            ("550e8400-e29b-41d4-a716-446655440000", Hex),
            ("deadbeef", String),
            ("abc123", String),
            ("*.rs", Glob),
            ("src/**/*.ts", Glob),
            ("file?.txt", Glob),
            ("[abc].md", Glob),
            ("a[b", String),
            ("src/main.rs", Path),
            ("./x", Path),
            ("../y", Path),
            (".", Path),
            ("~/.bashrc", Path),
            (".env", Path),
            ("Cargo.toml", Path),
            ("Makefile", Path),
            ("test_x.py::test_y", Path),
            ("C:\\Users\\x", Path),
            ("\\*.rs", Path),
            ("origin/main", Path),
            ("main", String),
            ("fix the bug", String),
            ("fix src/a.rs", String),
            ("", String),
            ("-", String),
            ("example.com", String),
            ("1.2.3", String),
            ("v1.0.0", String),
            ("create-next-app@latest", String),
            ("user@example.com", String),
        ];
        for (word, kind) in cases {
            assert_eq!(classify(word), *kind, "{word:?}");
        }
    }

    #[test]
    fn shell_keys_table() {
        let cases: &[(&str, &[&str])] = &[
            ("cargo test -p foo", &["cargo test -p <string>"]),
            (
                "cargo test --release -p foo",
                &["cargo test --release -p <string>"],
            ),
            (
                "cargo test -p foo --release",
                &["cargo test --release -p <string>"],
            ),
            (
                "cargo +nightly build --features=a,b -j4",
                &["cargo +nightly build --features <string> -j <number>"],
            ),
            (
                "cargo clippy --all-targets -- -D warnings",
                &["cargo clippy --all-targets -- -D <string>"],
            ),
            (
                "cd web && RUST_LOG=debug cargo test 2>&1 | tail -5",
                &["RUST_LOG=<string> cargo test"],
            ),
            ("git commit -am 'fix bug'", &["git commit -am <string>"]),
            (
                "git -C ../repo log -n 5 --oneline",
                &["git log --oneline -C <path> -n <number>"],
            ),
            ("git checkout a1b2c3d", &["git checkout <hex>"]),
            ("git checkout -b feature/x", &["git checkout -b <path>"]),
            ("git stash pop", &["git stash pop"]),
            (
                "git add src/a.rs src/b.rs README.md",
                &["git add <path>..."],
            ),
            ("git push -u origin main", &["git push -u <string>..."]),
            ("npm run build", &["npm run build"]),
            ("npm run test -- src/a.test.ts", &["npm run test -- <path>"]),
            ("pnpm --filter web build", &["pnpm build --filter <string>"]),
            ("npx tsc --noEmit", &["npx tsc --noEmit"]),
            (
                "npx -y create-next-app@latest app --typescript",
                &["npx -y create-next-app@latest --typescript <string>"],
            ),
            ("uv run pytest -x tests/", &["uv run pytest -x <path>"]),
            ("uv run script.py", &["uv run <path>"]),
            (
                "poetry run python -m pytest -k slow",
                &["poetry run python -m pytest -k <string>"],
            ),
            (
                "python3 -m pip install -r requirements.txt",
                &["python3 -m pip install -r <path>"],
            ),
            (
                "python scripts/gen.py -m fast",
                &["python <path> -m <string>"],
            ),
            ("make -j8 test", &["make test -j <number>"]),
            (
                "make -j 8 build CC=clang",
                &["make build -j <number> CC=<string>"],
            ),
            (
                "docker compose -f dev.yml up -d",
                &["docker compose up -d -f <path>"],
            ),
            ("docker logs -f web", &["docker logs -f <string>"]),
            (
                "kubectl get pods -n prod",
                &["kubectl get pods -n <string>"],
            ),
            (
                "kubectl rollout status deployment/api",
                &["kubectl rollout status <path>"],
            ),
            (
                "gh pr create --title 'x' --body y",
                &["gh pr create --body <string> --title <string>"],
            ),
            (
                "sudo apt-get install -y curl",
                &["sudo apt-get install -y <string>"],
            ),
            ("time cargo build", &["cargo build"]),
            ("timeout 30 npm test", &["npm test"]),
            ("env -i FOO=1 make", &["FOO=<number> make"]),
            ("nohup ./server --port 8080 &", &["server --port <number>"]),
            ("grep -rn 'fn main' src/", &["grep -rn <string> <path>"]),
            (
                "grep -e 'a.*' -e b *.rs",
                &["grep -e <string> -e <string> <glob>"],
            ),
            ("rg -t rust TODO", &["rg -t <string> <string>"]),
            (
                "find . -name '*.rs' -exec wc -l {} \\;",
                &["find -exec <string> -name <glob> <path>"],
            ),
            (
                "find . \\( -name a -o -name b \\) -type f",
                &["find -name <string> -name <string> -o -type <string> <path> ( )"],
            ),
            (
                "jq -r '.items[] | .name' data.json",
                &["jq -r <string> <path>"],
            ),
            (
                "jq --arg n 1 '.x' f.json",
                &["jq --arg <string> <number> <string> <path>"],
            ),
            (
                "curl -s -X POST -H 'Content-Type: application/json' https://api.x.com/v1",
                &["curl -H <string> -X <string> -s <url>"],
            ),
            ("tar -czf out.tgz src", &["tar -czf <path> <string>"]),
            (
                "head -20 src/main.rs | wc -l",
                &["head <number> <path>", "wc -l"],
            ),
            ("ls | wc -l", &["ls", "wc -l"]),
            ("cargo test 2>/dev/null | head -20", &["cargo test"]),
            ("cargo test > out.txt 2>&1", &["cargo test > <path>"]),
            (
                "cat > types/state.ts << 'EOF'\nexport type X = 1;\nEOF",
                &["cat > <path> <<EOF"],
            ),
            ("echo hi >> notes.md", &["echo <string> >> <path>"]),
            ("sort < in.txt", &["sort < <path>"]),
            ("xargs -I{} rm {}", &["xargs -I <string> rm {}"]),
            (
                "mysql -uroot -psecret db",
                &["mysql -p <string> -u <string> <string>"],
            ),
            (
                "git commit -m \"$(cat <<'EOF'\nFix it\nEOF\n)\" && git push",
                &["git commit -m <string>", "git push"],
            ),
            (
                "for f in *.rs; do rustfmt \"$f\"; done",
                &["rustfmt <string>"],
            ),
            ("/usr/bin/python3.12 -V", &["python3.12 -V"]),
            ("hub pull-request -m x", &["hub pull-request -m <string>"]),
            (
                "hg commit -m 'x' && jj git push",
                &["hg commit -m <string>", "jj git push"],
            ),
            (
                "npx next dev --port 3000",
                &["npx next dev --port <number>"],
            ),
            ("pyenv install 3.12.1", &["pyenv install <string>"]),
            ("screen -S build make all", &["screen -S <string> make all"]),
        ];
        for (command, expected) in cases {
            assert_eq!(&keys(command), expected, "{command:?}");
        }
    }

    #[test]
    fn noise_is_dropped() {
        for command in [
            "ls -la",
            "pwd",
            "echo done",
            "cd src",
            "cat README.md",
            "head -50 src/lib.rs",
            "[ -f x ] && echo yes",
            "clear; true",
            "",
            "   ",
            "FOO=1",
            "# comment",
            "command -v cargo",
            "which git",
        ] {
            assert_eq!(keys(command), Vec::<String>::new(), "{command:?}");
        }
        // Kept: writing a file, feeding a pipe.
        assert_eq!(
            keys("echo '{\"a\": 1}' > config.json"),
            ["echo <string> > <path>"]
        );
        assert_eq!(
            keys("cat data.json | jq .name"),
            ["cat <path>", "jq <string>"]
        );
        // A pipe filter that writes a file is kept.
        assert_eq!(
            keys("make 2>&1 | tail -5 > last.log"),
            ["make", "tail <number> > <path>"]
        );
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
    fn slots_carry_values_in_key_order() {
        let tokens = bash("cargo test -p foo --features x -p bar src/lib.rs");
        let t = &tokens[0];
        assert_eq!(
            t.key,
            "cargo test --features <string> -p <string> -p <string> <path>"
        );
        assert_eq!(
            t.template,
            "cargo test --features <features> -p <package> -p <package> <path>"
        );
        assert_eq!(t.program, "cargo");
        assert_eq!(t.subcommand.as_deref(), Some("test"));
        let slots: Vec<(Option<&str>, usize, &str, SlotKind)> = t
            .slots
            .iter()
            .map(|s| (s.flag.as_deref(), s.position, s.value.as_str(), s.kind))
            .collect();
        assert_eq!(
            slots,
            [
                (Some("--features"), 0, "x", SlotKind::String),
                (Some("-p"), 0, "foo", SlotKind::String),
                (Some("-p"), 1, "bar", SlotKind::String),
                (None, 0, "src/lib.rs", SlotKind::Path),
            ]
        );
        // Collapsed runs keep one slot per value.
        let t = &bash("git add a.rs b.rs")[0];
        assert_eq!(t.key, "git add <path>...");
        assert_eq!(t.template, "git add <path>...");
        let positions: Vec<(usize, &str)> = t
            .slots
            .iter()
            .map(|s| (s.position, s.value.as_str()))
            .collect();
        assert_eq!(positions, [(0, "a.rs"), (1, "b.rs")]);
        // Assignments and redirections are slots too.
        let t = &bash("RUST_LOG=debug cargo run > out.log")[0];
        assert_eq!(t.template, "RUST_LOG=<rust_log> cargo run > <output>");
        let flags: Vec<Option<&str>> = t.slots.iter().map(|s| s.flag.as_deref()).collect();
        assert_eq!(flags, [Some("RUST_LOG"), Some(">")]);
        // Different values, same key.
        assert_eq!(
            bash("cargo test -p a")[0].key,
            bash("cargo test -p b")[0].key
        );
    }

    #[test]
    fn cwd_and_steps() {
        let tokens = bash("cd sub && make && cd ../other && make test");
        let got: Vec<(&str, Option<&str>, usize)> = tokens
            .iter()
            .map(|t| (t.key.as_str(), t.cwd.as_deref(), t.step))
            .collect();
        assert_eq!(
            got,
            [
                ("make", Some("/w/sub"), 0),
                ("make test", Some("/w/other"), 1)
            ]
        );
        // Without a known cwd, a relative cd stays relative.
        let history = action(
            Source::Bash,
            "shell",
            json!({"command": "cd proj && make"}),
            None,
        );
        assert_eq!(tokens_of(&history)[0].cwd.as_deref(), Some("proj"));
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
                Source::Fish,
                "shell",
                json!({"command": "git commit -m (date); and git push"}),
                &["git commit -m <string>", "git push"],
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
                &["python <path>"],
            ),
            (
                Source::SweAgent,
                "open",
                json!({"command": "open src/x.py 100"}),
                &["open <path> <number>"],
            ),
            (
                Source::SweAgent,
                "edit",
                json!({"command": "edit 10:20\n    x = 'unbalanced\nend_of_edit"}),
                &["edit <string>"],
            ),
            (
                Source::SweAgent,
                "edit",
                json!({"command": "edit 10:12\nfoo()\nend_of_edit"}),
                &["edit <string>"],
            ),
            (
                Source::SweAgent,
                "edit",
                json!({"command": "edit 'return a\n' '# rounded\nreturn b'"}),
                &["edit <string>..."],
            ),
            (
                Source::SweAgent,
                "str_replace_editor",
                json!({"command": "str_replace_editor view /r/a.py --view_range 1 50"}),
                &["str_replace_editor view --view_range <number> <number> <path>"],
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
                &["Read <path>"],
            ),
            (
                Source::ClaudeCode,
                "Write",
                json!({"file_path": "/w/a.ts", "content": "x"}),
                &["Write <path>"],
            ),
            (
                Source::ClaudeCode,
                "Edit",
                json!({"file_path": "/w/a.rs", "old_string": "a", "new_string": "b"}),
                &["Edit <path>"],
            ),
            (
                Source::ClaudeCode,
                "Grep",
                json!({"pattern": "fn main", "path": "src", "glob": "*.rs", "output_mode": "content"}),
                &["Grep glob=<glob> output_mode=content <string> <path>"],
            ),
            (
                Source::ClaudeCode,
                "Glob",
                json!({"pattern": "**/*.md"}),
                &["Glob <glob>"],
            ),
            (
                Source::ClaudeCode,
                "WebFetch",
                json!({"url": "https://docs.rs/x", "prompt": "summarize"}),
                &["WebFetch <url>"],
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
                &["read <path>"],
            ),
            (
                Source::Openhands,
                "edit",
                json!({"path": "/r/a.py", "command": "str_replace"}),
                &["edit command=str_replace <path>"],
            ),
            (
                Source::Openhands,
                "browse",
                json!({"url": "http://localhost:8000"}),
                &["browse <url>"],
            ),
            (Source::Aider, "Edit", json!({}), &["Edit"]),
            (
                Source::Native,
                "mcp__github__create_issue",
                json!({"owner": "o", "repo": "r", "title": "Bug", "body": "long\ntext", "draft": false, "n": 3}),
                &[
                    "mcp__github__create_issue draft=false n=<number> owner=<string> repo=<string> title=<string>",
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

    #[test]
    fn apply_patch_lists_its_files() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: src/b.rs\n+new\n*** Update File: src/c.rs\n*** End Patch";
        let codex = action(
            Source::Codex,
            "apply_patch",
            json!({ "patch": patch }),
            None,
        );
        let t = &tokens_of(&codex)[0];
        assert_eq!(t.key, "apply_patch add <path> update <path> update <path>");
        let values: Vec<(&str, usize, &str)> = t
            .slots
            .iter()
            .map(|s| {
                (
                    s.flag.as_deref().unwrap_or(""),
                    s.position,
                    s.value.as_str(),
                )
            })
            .collect();
        assert_eq!(
            values,
            [
                ("add", 0, "src/b.rs"),
                ("update", 0, "src/a.rs"),
                ("update", 1, "src/c.rs")
            ]
        );
        // The same patch sent through the shell, as older Codex did.
        let shell = action(
            Source::Codex,
            "shell",
            json!({ "command": format!("apply_patch <<'EOF'\n{patch}\nEOF") }),
            None,
        );
        assert_eq!(tokens_of(&shell)[0].key, t.key);
    }

    #[test]
    fn unparsable_lines_still_give_a_token() {
        let tokens = bash("git commit -m 'unterminated");
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].kind, TokenKind::Unparsed);
        assert_eq!(tokens[0].key, "git <unparsed>");
        assert_eq!(tokens[0].slots[0].value, "git commit -m 'unterminated");
        // Noise stays noise.
        assert!(bash("echo 'unterminated").is_empty());
        // The program of a broken line is its first word, past operators and quotes.
        assert_eq!(keys("| sed s/i//g\""), ["sed <unparsed>"]);
        assert_eq!(keys("\"foo(bar"), ["foo <unparsed>"]);
        assert!(keys("'(((").is_empty());
        // A multi-line text whose first line parses gives that line's command.
        assert_eq!(keys("make test\nthen 'junk"), ["make test"]);
    }

    #[test]
    fn interner_assigns_dense_ids() {
        let mut interner = Interner::new();
        assert!(interner.is_empty());
        let a = interner.intern("cargo test -p <string>").unwrap();
        let b = interner.intern("git status").unwrap();
        assert_eq!((a, b), (0, 1));
        assert_eq!(interner.intern("cargo test -p <string>"), Ok(0));
        assert_eq!(interner.get("git status"), Some(1));
        assert_eq!(interner.get("nope"), None);
        assert_eq!(interner.resolve(1), Some("git status"));
        assert_eq!(interner.resolve(2), None);
        assert_eq!(interner.len(), 2);
        assert_eq!(interner.keys(), ["cargo test -p <string>", "git status"]);
    }

    #[test]
    fn token_serializes() {
        let t = &bash("cargo test -p foo")[0];
        let json = serde_json::to_value(t).unwrap();
        assert_eq!(json["kind"], "shell");
        assert_eq!(json["slots"][0]["kind"], "string");
        let back: Token = serde_json::from_value(json).unwrap();
        assert_eq!(&back, t);
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
}
