//! The files the user's shells read, and the definitions in each: read as text and parsed,
//! never sourced or run.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use tree_sitter::Node;

use super::{DefKind, DefShell, Definition, Meaning, ShellDefinitions};
use crate::mine::shell::{self, Dialect};

/// Largest file read, in bytes (a bigger one is skipped with a note).
const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most files read in one discovery.
const MAX_FILES: usize = 256;
/// How deep `source FILE` is followed.
const MAX_SOURCE_DEPTH: usize = 4;
/// Most definitions kept.
const MAX_DEFINITIONS: usize = 50_000;
/// Claude Code snapshots read, the newest.
const MAX_SNAPSHOTS: usize = 8;

/// Where the user's shells find their files: the variables they read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeEnv {
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `ZDOTDIR`: where zsh reads `.zshenv` and `.zshrc` (default `HOME`).
    pub zdotdir: Option<PathBuf>,
    /// `ZSH`: oh-my-zsh's directory (default `~/.oh-my-zsh`).
    pub zsh: Option<PathBuf>,
    /// `ZSH_CUSTOM` (default `$ZSH/custom`).
    pub zsh_custom: Option<PathBuf>,
    /// `XDG_CONFIG_HOME` (default `~/.config`): fish reads `fish/` there.
    pub xdg_config_home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`: Claude Code's directory besides `~/.claude`.
    pub claude_config_dir: Option<PathBuf>,
}

impl HomeEnv {
    /// The variables from `get` (absolute paths only: a relative one names no file for sure).
    pub fn new(get: &dyn Fn(&str) -> Option<String>) -> HomeEnv {
        let dir = |name: &str| get(name).filter(|v| v.starts_with('/')).map(PathBuf::from);
        HomeEnv {
            home: dir("HOME"),
            zdotdir: dir("ZDOTDIR"),
            zsh: dir("ZSH"),
            zsh_custom: dir("ZSH_CUSTOM"),
            xdg_config_home: dir("XDG_CONFIG_HOME"),
            claude_config_dir: dir("CLAUDE_CONFIG_DIR"),
        }
    }

    /// This process's variables.
    pub fn from_process() -> HomeEnv {
        HomeEnv::new(&|name| std::env::var(name).ok())
    }
}

/// Reads the definitions of every shell the user has files for. A file that cannot be read or
/// parsed is a note in [`ShellDefinitions::notes`], never an error.
pub fn discover(env: &HomeEnv) -> ShellDefinitions {
    let mut reader = Reader {
        env: env.clone(),
        found: Vec::new(),
        notes: Vec::new(),
        seen: HashSet::new(),
        plugins: Vec::new(),
    };
    if let Some(home) = env.home.clone() {
        for name in [".profile", ".bash_profile", ".bashrc", ".bash_aliases"] {
            reader.read_file(&home.join(name), DefShell::Bash, 0, false);
        }
    }
    reader.read_zsh();
    reader.read_fish();
    reader.read_snapshots();
    ShellDefinitions::new(reader.found, reader.notes)
}

struct Reader {
    env: HomeEnv,
    found: Vec<Definition>,
    notes: Vec<String>,
    seen: HashSet<PathBuf>,
    /// oh-my-zsh's `plugins=(…)`, as the zsh files set it.
    plugins: Vec<String>,
}

impl Reader {
    fn read_zsh(&mut self) {
        let Some(dot) = self.env.zdotdir.clone().or_else(|| self.env.home.clone()) else {
            return;
        };
        let own_start = self.found.len();
        for name in [".zshenv", ".zshrc"] {
            self.read_file(&dot.join(name), DefShell::Zsh, 0, false);
        }
        let own: Vec<Definition> = self.found.drain(own_start..).collect();
        // oh-my-zsh is sourced from `.zshrc`, which may redefine what it defines after: its
        // definitions come first.
        let omz = self
            .env
            .zsh
            .clone()
            .or_else(|| self.env.home.as_ref().map(|h| h.join(".oh-my-zsh")));
        if let Some(omz) = omz.filter(|d| d.is_dir()) {
            for file in sorted_files(&omz.join("lib"), ".zsh") {
                self.read_file(&file, DefShell::Zsh, 0, false);
            }
            let custom = self
                .env
                .zsh_custom
                .clone()
                .unwrap_or_else(|| omz.join("custom"));
            for plugin in std::mem::take(&mut self.plugins) {
                if plugin.contains('/') || plugin.starts_with('.') {
                    continue;
                }
                let file = format!("{plugin}.plugin.zsh");
                let mine = custom.join("plugins").join(&plugin).join(&file);
                let path = if mine.is_file() {
                    mine
                } else {
                    omz.join("plugins").join(&plugin).join(&file)
                };
                self.read_file(&path, DefShell::Zsh, 0, true);
            }
            for file in sorted_files(&custom, ".zsh") {
                self.read_file(&file, DefShell::Zsh, 0, false);
            }
        }
        self.read_prezto(&dot);
        self.found.extend(own);
    }

    /// Prezto (`$ZDOTDIR/.zprezto`, sourced from `.zshrc`): the modules `.zpreztorc` loads
    /// (`zstyle ':prezto:load' pmodule 'git' …`), each module's `alias.zsh` and `init.zsh`
    /// (the git module keeps `gia`, `gc`, `gp` in its `alias.zsh`), in the order loaded.
    fn read_prezto(&mut self, dot: &Path) {
        let prezto = dot.join(".zprezto");
        if !prezto.is_dir() {
            return;
        }
        let rc = dot.join(".zpreztorc");
        let text = match read_bounded(&rc) {
            Ok(Some(text)) => text,
            // Prezto loads none of its modules without one.
            Ok(None) => return,
            Err(why) => {
                self.notes.push(format!(
                    "{}: not read ({why}); Prezto's modules are not known",
                    rc.display()
                ));
                return;
            }
        };
        for module in prezto_modules(&text) {
            if module.contains('/') || module.starts_with('.') {
                continue;
            }
            let dir = prezto.join("modules").join(&module);
            if !dir.is_dir() {
                self.notes.push(format!(
                    "{}: Prezto module `{module}` is loaded by {} but not installed",
                    dir.display(),
                    rc.display()
                ));
                continue;
            }
            for name in ["init.zsh", "alias.zsh"] {
                let file = dir.join(name);
                if file.is_file() {
                    self.read_file(&file, DefShell::Zsh, 0, false);
                }
            }
        }
    }

    fn read_fish(&mut self) {
        let Some(config) = self
            .env
            .xdg_config_home
            .clone()
            .or_else(|| self.env.home.as_ref().map(|h| h.join(".config")))
        else {
            return;
        };
        let fish = config.join("fish");
        for file in sorted_files(&fish.join("functions"), ".fish") {
            self.read_file(&file, DefShell::Fish, 0, false);
        }
        for file in sorted_files(&fish.join("conf.d"), ".fish") {
            self.read_file(&file, DefShell::Fish, 0, false);
        }
        self.read_file(&fish.join("config.fish"), DefShell::Fish, 0, false);
    }

    fn read_snapshots(&mut self) {
        let mut dirs = Vec::new();
        if let Some(dir) = &self.env.claude_config_dir {
            dirs.push(dir.join("shell-snapshots"));
        }
        if let Some(home) = &self.env.home {
            dirs.push(home.join(".claude").join("shell-snapshots"));
        }
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = dirs
            .iter()
            .flat_map(|d| sorted_files(d, ".sh"))
            .filter(|f| {
                f.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("snapshot-"))
            })
            .map(|f| {
                let at = std::fs::metadata(&f)
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (at, f)
            })
            .collect();
        // The newest last: its definitions are the ones kept.
        files.sort();
        let skip = files.len().saturating_sub(MAX_SNAPSHOTS);
        for (_, file) in files.into_iter().skip(skip) {
            self.read_file(&file, DefShell::Snapshot, 0, false);
        }
    }

    /// Reads one file's definitions (`must`: a note when it is missing, as for a plugin named
    /// in `plugins=(…)`).
    fn read_file(&mut self, path: &Path, shell: DefShell, depth: usize, must: bool) {
        let key = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        if self.seen.contains(&key) {
            return;
        }
        if self.seen.len() >= MAX_FILES {
            self.notes.push(format!(
                "{}: not read, {MAX_FILES} shell files were read already",
                path.display()
            ));
            return;
        }
        self.seen.insert(key);
        let text = match read_bounded(path) {
            Ok(Some(text)) => text,
            Ok(None) => {
                if must {
                    self.notes.push(format!("{}: not found", path.display()));
                }
                return;
            }
            Err(why) => {
                self.notes
                    .push(format!("{}: skipped, {why}", path.display()));
                return;
            }
        };
        self.read_text(&text, path, shell, depth, None);
    }

    /// The definitions in `text`, read from `file`; `at`: the line they all are on (a
    /// snapshot's encoded function).
    fn read_text(
        &mut self,
        text: &str,
        file: &Path,
        shell: DefShell,
        depth: usize,
        at: Option<usize>,
    ) {
        let dialect = shell.dialect();
        let tree = match shell::syntax_tree(text, dialect) {
            Ok(tree) => tree,
            Err(e) => {
                self.notes.push(format!(
                    "{}: skipped, it does not parse as {} ({e})",
                    file.display(),
                    if dialect == Dialect::Fish {
                        "fish"
                    } else {
                        "sh"
                    }
                ));
                return;
            }
        };
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if self.found.len() >= MAX_DEFINITIONS {
                self.notes.push(format!(
                    "{}: definitions past the first {MAX_DEFINITIONS} are not read",
                    file.display()
                ));
                return;
            }
            let line = at.unwrap_or(node.start_position().row + 1);
            match node.kind() {
                "function_definition" if !node.has_error() => {
                    self.function(node, text, file, shell, line);
                }
                "command" if !node.has_error() => {
                    self.command(node_text(node, text), file, shell, depth, line);
                }
                "variable_assignment" if !node.has_error() => {
                    self.assignment(node_text(node, text));
                }
                // A region the grammar could not read (zsh's own syntax, say) is looked
                // into: the definitions whole within it still count, the broken ones not.
                _ => {
                    let mut cursor = node.walk();
                    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                    // Popped in order: the file's later definitions replace its earlier ones.
                    stack.extend(children.into_iter().rev());
                }
            }
        }
    }

    fn function(&mut self, node: Node<'_>, text: &str, file: &Path, shell: DefShell, line: usize) {
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        let name = node_text(name, text).trim_matches(['\'', '"']).to_owned();
        if name.is_empty() || node.has_error() {
            return;
        }
        self.push(
            name,
            DefKind::Function,
            node_text(node, text),
            file,
            shell,
            line,
        );
    }

    fn push(
        &mut self,
        name: String,
        kind: DefKind,
        text: &str,
        file: &Path,
        shell: DefShell,
        line: usize,
    ) {
        if name.is_empty() || name.contains(['/', ' ', '\t', '\n', '=']) {
            return;
        }
        self.found.push(Definition {
            name,
            kind,
            text: text.to_owned(),
            file: file.to_owned(),
            line,
            shell,
            meaning: Meaning::Opaque,
        });
    }

    /// oh-my-zsh's `plugins=(git fzf)`.
    fn assignment(&mut self, text: &str) {
        let Some(list) = text.strip_prefix("plugins=(") else {
            return;
        };
        let list = list.trim_end().trim_end_matches(')');
        self.plugins = list
            .split_whitespace()
            .filter(|w| !w.starts_with('#'))
            .map(|w| w.trim_matches(['\'', '"']).to_owned())
            .collect();
    }

    fn command(&mut self, text: &str, file: &Path, shell: DefShell, depth: usize, line: usize) {
        let Ok(commands) = shell::parse_dialect(text, shell.dialect()) else {
            return;
        };
        let Some(command) = commands.first() else {
            return;
        };
        let words: Vec<&str> = command.words.iter().map(|w| w.text.as_str()).collect();
        match (words.first().copied(), shell) {
            (Some("alias"), DefShell::Fish) => self.fish_alias(&words[1..], file, line),
            (Some("alias"), _) => {
                let mut operands = &words[1..];
                if operands.first() == Some(&"--") {
                    operands = &operands[1..];
                    // Claude Code wrote `alias -- -- NAME=…` for a name starting with `-`.
                    while operands.first() == Some(&"--") {
                        operands = &operands[1..];
                    }
                } else if operands.first().is_some_and(|o| o.starts_with('-')) {
                    // `alias -g`, `alias -s` (zsh's global and suffix aliases), `alias -p`.
                    return;
                }
                for operand in operands {
                    if let Some((name, value)) = operand.split_once('=') {
                        self.push(name.to_owned(), DefKind::Alias, value, file, shell, line);
                    }
                }
            }
            (Some("abbr"), DefShell::Fish) => self.fish_abbr(&words[1..], file, line),
            (Some("source" | "."), _) if depth < MAX_SOURCE_DEPTH => {
                if let [_, path] = command.words.as_slice()
                    && let Some(path) = self.literal_path(&path.raw, file)
                {
                    self.read_file(&path, shell, depth + 1, true);
                }
            }
            (Some("eval"), DefShell::Snapshot) => {
                if let Some(decoded) = encoded_body(text) {
                    self.read_text(&decoded, file, shell, depth + 1, Some(line));
                }
            }
            _ => {}
        }
    }

    /// fish: `alias NAME VALUE…` or `alias NAME=VALUE`.
    fn fish_alias(&mut self, words: &[&str], file: &Path, line: usize) {
        let operands: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| !w.starts_with('-'))
            .collect();
        self.push_fish(&operands, DefKind::Alias, file, line);
    }

    /// fish: `abbr [-a|--add] [options] NAME EXPANSION…`; other modes (`--erase`, `--list`,
    /// …), a regex or a function's abbreviation are not definitions read here.
    fn fish_abbr(&mut self, words: &[&str], file: &Path, line: usize) {
        let mut operands = Vec::new();
        let mut words = words.iter().copied();
        while let Some(word) = words.next() {
            match word {
                "-a" | "--add" | "-g" | "--global" | "-U" | "--universal" | "--set-cursor" => {}
                "--" => operands.extend(words.by_ref()),
                "-p" | "--position" => {
                    words.next();
                }
                w if w.starts_with("--position=") || w.starts_with("--set-cursor=") => {}
                // Another mode (`--erase`, `--list`…), a regex or a function's expansion.
                w if w.starts_with('-') && operands.is_empty() => return,
                w => operands.push(w),
            }
        }
        self.push_fish(&operands, DefKind::Abbreviation, file, line);
    }

    /// fish's `NAME=VALUE` or `NAME VALUE…` operands of `alias` and `abbr`, as one definition.
    fn push_fish(&mut self, operands: &[&str], kind: DefKind, file: &Path, line: usize) {
        match operands {
            [one] => {
                if let Some((name, value)) = one.split_once('=') {
                    self.push(name.to_owned(), kind, value, file, DefShell::Fish, line);
                }
            }
            [name, value @ ..] if !value.is_empty() => {
                let value = value.join(" ");
                self.push((*name).to_owned(), kind, &value, file, DefShell::Fish, line);
            }
            _ => {}
        }
    }

    /// A `source` operand that names one file whatever the shell's state: absolute, `~/…` or
    /// `$HOME/…`, or beside the file sourcing it when it starts with `./`.
    fn literal_path(&self, raw: &str, file: &Path) -> Option<PathBuf> {
        let raw = raw.trim_matches('"');
        let home = self.env.home.as_deref();
        let path = if let Some(rest) = raw.strip_prefix("~/") {
            home?.join(rest)
        } else if let Some(rest) = raw
            .strip_prefix("$HOME/")
            .or_else(|| raw.strip_prefix("${HOME}/"))
        {
            home?.join(rest)
        } else if let Some(rest) = raw.strip_prefix("./") {
            file.parent()?.join(rest)
        } else if raw.starts_with('/') {
            PathBuf::from(raw)
        } else {
            return None;
        };
        let literal = path
            .to_str()
            .is_some_and(|p| !p.contains(['$', '`', '*', '?', '[', '\'', '"']));
        literal.then_some(path)
    }
}

fn node_text<'t>(node: Node<'_>, text: &'t str) -> &'t str {
    text.get(node.byte_range()).unwrap_or("")
}

/// The regular files of `dir` whose names end in `suffix`, sorted by name (as a shell's glob
/// gives them).
fn sorted_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix))
        })
        .collect();
    files.sort();
    files.truncate(MAX_FILES);
    files
}

/// A file's text, `None` when it does not exist; an error naming why it was not read (not a
/// regular file, too large, unreadable). Opened without blocking, so a FIFO never hangs it.
fn read_bounded(path: &Path) -> Result<Option<String>, String> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "it holds {} bytes, more than the {MAX_FILE_BYTES} read",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The text a Claude Code snapshot encodes in `eval "$(echo 'BASE64' | base64 -d)"`, decoded as
/// data (never run).
fn encoded_body(command: &str) -> Option<String> {
    if !(command.contains("base64 -d") || command.contains("base64 --decode")) {
        return None;
    }
    let start = command.find("echo '")? + "echo '".len();
    let len = command.get(start..)?.find('\'')?;
    let bytes = decode_base64(command.get(start..start + len)?)?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Standard base64, blanks and line breaks ignored; `None` on any other byte.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in text.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b' ' | b'\n' | b'\r' | b'\t' | b'\\' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
pub(super) fn decode_for_test(text: &str) -> Option<Vec<u8>> {
    decode_base64(text)
}

#[cfg(test)]
pub(super) const MAX_FILE_BYTES_FOR_TEST: u64 = MAX_FILE_BYTES;

/// The modules a `.zpreztorc` loads: the words after `zstyle ':prezto:load' pmodule`, over
/// continued lines.
pub(super) fn prezto_modules(text: &str) -> Vec<String> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix("zstyle")?.trim_start();
            let rest = rest
                .strip_prefix("':prezto:load'")
                .or_else(|| rest.strip_prefix("\":prezto:load\""))?
                .trim_start();
            rest.strip_prefix("pmodule")
        })
        .flat_map(|rest| {
            rest.split_whitespace()
                .take_while(|w| !w.starts_with('#'))
                .map(|w| w.trim_matches(['\'', '"']).to_owned())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
}
