//! The agents toolsmith's tools reach: where each one reads Agent Skills, and where and in what
//! shape it is told of an MCP server — with the merge that adds toolsmith to a configuration
//! file the user already has, keeping everything else in it.
//!
//! Every path and shape here is the agent's own, read in its source:
//! - Claude Code: skills in `~/.claude/skills` and a project's `.claude/skills`; MCP servers in
//!   `~/.claude.json` `mcpServers` (what `claude mcp add --scope user` writes).
//! - Codex (openai/codex `codex-rs/core/src/skills/loader.rs`, `skill_roots_from_layer_stack`):
//!   `$CODEX_HOME/skills` (default `~/.codex/skills`; marked deprecated in newer builds, still
//!   read, and the only user folder of older ones), `~/.agents/skills`, and a repository's
//!   `.agents/skills`; MCP servers in `$CODEX_HOME/config.toml` `[mcp_servers.<name>]`.
//! - Gemini CLI (google-gemini/gemini-cli `packages/core/src/config/storage.ts`,
//!   `getUserSkillsDir`, `getUserAgentSkillsDir`): `~/.gemini/skills`, `~/.agents/skills`, a
//!   project's `.gemini/skills`; MCP servers in `~/.gemini/settings.json` `mcpServers`.
//! - OpenCode (sst/opencode `packages/opencode/src/skill`, `{skill,skills}/**/SKILL.md` over
//!   its config directories, plus `~/.claude/skills` and `~/.agents/skills`):
//!   `$XDG_CONFIG_HOME/opencode/skills` and a project's `.opencode/skills`; MCP servers in
//!   `opencode.json` `mcp`, each `{"type": "local", "command": [argv…], "enabled": true}`.
//! - Cursor: `~/.cursor/mcp.json` `mcpServers`.
//! - Cline (cline/cline `src/core/storage/disk.ts`, `GlobalFileNames.mcpSettings`, in the
//!   `settings` folder of its global storage): `cline_mcp_settings.json` `mcpServers`, in VS
//!   Code's global storage for the extension `saoudrizwan.claude-dev`
//!   (`Code/User/globalStorage/saoudrizwan.claude-dev/settings`) and in the CLI's
//!   `~/.cline/data/settings`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Where an agent's files are, from the environment toolsmith runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Homes {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub config: PathBuf,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex: PathBuf,
    /// Claude Code's directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`; its `.claude.json` is
    /// in `$CLAUDE_CONFIG_DIR` when that is set, else in `$HOME`.
    pub claude: PathBuf,
    /// Gemini CLI's directory: `.gemini` under `$GEMINI_CLI_HOME` (Gemini CLI's own override of
    /// its home, `packages/core/src/utils/paths.ts` `homedir()`), else under `$HOME`.
    pub gemini: PathBuf,
    /// Whether `$CLAUDE_CONFIG_DIR` moved Claude Code's files.
    pub claude_moved: bool,
}

impl Homes {
    /// From the process environment; `None` without `$HOME`.
    pub fn from_env() -> Option<Homes> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let home = PathBuf::from(var("HOME")?);
        let claude_dir = var("CLAUDE_CONFIG_DIR");
        Some(Homes {
            config: var("XDG_CONFIG_HOME").map_or_else(|| home.join(".config"), PathBuf::from),
            codex: var("CODEX_HOME").map_or_else(|| home.join(".codex"), PathBuf::from),
            claude_moved: claude_dir.is_some(),
            claude: claude_dir.map_or_else(|| home.join(".claude"), PathBuf::from),
            gemini: var("GEMINI_CLI_HOME")
                .map_or_else(|| home.clone(), PathBuf::from)
                .join(".gemini"),
            home,
        })
    }

    /// The usual places under `home`, with no agent's home moved.
    pub fn under(home: &Path, config: &Path) -> Homes {
        Homes {
            home: home.to_owned(),
            config: config.to_owned(),
            codex: home.join(".codex"),
            claude: home.join(".claude"),
            gemini: home.join(".gemini"),
            claude_moved: false,
        }
    }
}

/// An agent toolsmith knows how to reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    GeminiCli,
    /// OpenCode.
    Opencode,
    /// Cursor (its editor and CLI share `~/.cursor`).
    Cursor,
    /// Cline (the VS Code extension and its CLI).
    Cline,
}

impl Agent {
    /// Every agent, in the order they are listed.
    pub const ALL: [Agent; 6] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::GeminiCli,
        Agent::Opencode,
        Agent::Cursor,
        Agent::Cline,
    ];

    /// Its name, as toolsmith's sources name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::GeminiCli => "gemini-cli",
            Agent::Opencode => "opencode",
            Agent::Cursor => "cursor",
            Agent::Cline => "cline",
        }
    }

    /// The directories whose presence says the agent is used here.
    pub fn config_dirs(self, h: &Homes) -> Vec<PathBuf> {
        match self {
            Agent::ClaudeCode => vec![h.claude.clone()],
            Agent::Codex => vec![h.codex.clone()],
            Agent::GeminiCli => vec![h.gemini.clone()],
            Agent::Opencode => vec![h.config.join("opencode")],
            Agent::Cursor => vec![h.home.join(".cursor")],
            Agent::Cline => vec![
                h.config
                    .join("Code/User/globalStorage/saoudrizwan.claude-dev"),
                h.home.join(".cline/data"),
            ],
        }
    }

    /// Whether one of its directories exists.
    pub fn found(self, h: &Homes) -> bool {
        self.config_dirs(h).iter().any(|d| d.is_dir())
    }

    /// The folders it reads skills from, for one user: its own first (the one toolsmith
    /// writes), then the shared ones it also reads. Empty for an agent without skills.
    pub fn user_skill_dirs(self, h: &Homes) -> Vec<PathBuf> {
        let shared = h.home.join(".agents/skills");
        match self {
            Agent::ClaudeCode => vec![h.claude.join("skills")],
            Agent::Codex => vec![h.codex.join("skills"), shared],
            Agent::GeminiCli => vec![h.gemini.join("skills"), shared],
            Agent::Opencode => vec![
                h.config.join("opencode/skills"),
                h.home.join(".claude/skills"),
                shared,
            ],
            Agent::Cursor | Agent::Cline => Vec::new(),
        }
    }

    /// The folder a project's skills are in, relative to the project.
    pub fn project_skill_dir(self) -> Option<&'static str> {
        match self {
            Agent::ClaudeCode => Some(".claude/skills"),
            Agent::Codex => Some(".agents/skills"),
            Agent::GeminiCli => Some(".gemini/skills"),
            Agent::Opencode => Some(".opencode/skills"),
            Agent::Cursor | Agent::Cline => None,
        }
    }

    /// The configuration files it reads MCP servers from (the first that exists, or the first).
    fn mcp_files(self, h: &Homes) -> Vec<PathBuf> {
        match self {
            Agent::ClaudeCode => vec![if h.claude_moved {
                h.claude.join(".claude.json")
            } else {
                h.home.join(".claude.json")
            }],
            Agent::Codex => vec![h.codex.join("config.toml")],
            Agent::GeminiCli => vec![h.gemini.join("settings.json")],
            Agent::Opencode => vec![h.config.join("opencode/opencode.json")],
            Agent::Cursor => vec![h.home.join(".cursor/mcp.json")],
            Agent::Cline => vec![
                h.config.join(
                    "Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
                ),
                h.home.join(".cline/data/settings/cline_mcp_settings.json"),
            ],
        }
    }

    /// toolsmith's MCP server as this agent describes a server: `toolsmith mcp` over stdio.
    pub fn mcp_entry(self, toolsmith: &Path) -> Value {
        let program = toolsmith.display().to_string();
        match self {
            Agent::ClaudeCode => {
                json!({"type": "stdio", "command": program, "args": ["mcp"], "env": {}})
            }
            Agent::Opencode => {
                json!({"type": "local", "command": [program, "mcp"], "enabled": true})
            }
            Agent::Cline => json!({"command": program, "args": ["mcp"], "disabled": false}),
            Agent::Codex | Agent::GeminiCli | Agent::Cursor => {
                json!({"command": program, "args": ["mcp"]})
            }
        }
    }
}

/// The name toolsmith's server has in every agent's configuration.
pub const SERVER_NAME: &str = "toolsmith";

/// Where toolsmith's skills go for the agents found: each found agent's own user folder, once
/// (an OpenCode that also reads `~/.claude/skills` finds them there when Claude Code's folder
/// is written, and is not given a second copy of each).
pub fn skill_targets(h: &Homes, found: &[Agent]) -> Vec<(Agent, PathBuf)> {
    let mut targets: Vec<(Agent, PathBuf)> = Vec::new();
    for &agent in found {
        let dirs = agent.user_skill_dirs(h);
        let Some(own) = dirs.first() else { continue };
        if dirs.iter().any(|d| targets.iter().any(|(_, t)| t == d)) {
            continue;
        }
        targets.push((agent, own.clone()));
    }
    targets
}

/// The MCP set-up of one agent: the file, the entry, and the words saying it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct McpSetup {
    /// The agent.
    pub agent: Agent,
    /// The configuration file toolsmith's entry goes in.
    pub file: PathBuf,
    /// Where in it (`mcpServers.toolsmith`, `[mcp_servers.toolsmith]`, `mcp.toolsmith`).
    pub at: String,
    /// The entry, as the file holds it.
    pub text: String,
    /// A command of the agent's own that does the same, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip)]
    entry: Value,
}

/// The MCP set-up of `agent`, running `toolsmith` (an absolute path) as its server.
pub fn mcp_setup(agent: Agent, h: &Homes, toolsmith: &Path) -> McpSetup {
    let files = agent.mcp_files(h);
    let file = files
        .iter()
        .find(|f| f.is_file())
        .or_else(|| {
            files
                .iter()
                .find(|f| f.parent().and_then(Path::parent).is_some_and(Path::is_dir))
        })
        .or(files.first())
        .cloned()
        .unwrap_or_default();
    let entry = agent.mcp_entry(toolsmith);
    let (at, text) = if agent == Agent::Codex {
        (
            format!("[mcp_servers.{SERVER_NAME}]"),
            toml_entry(&entry).unwrap_or_default(),
        )
    } else {
        let key = json_container(agent);
        let text = serde_json::to_string_pretty(&json!({ key: { SERVER_NAME: entry } }))
            .unwrap_or_default();
        (format!("{key}.{SERVER_NAME}"), text)
    };
    let command = (agent == Agent::ClaudeCode).then(|| {
        format!(
            "claude mcp add --scope user {SERVER_NAME} -- {} mcp",
            crate::quote::shell_quote(&toolsmith.display().to_string())
        )
    });
    McpSetup {
        agent,
        file,
        at,
        text,
        command,
        entry,
    }
}

/// The JSON key an agent's servers are under.
fn json_container(agent: Agent) -> &'static str {
    match agent {
        Agent::Opencode => "mcp",
        _ => "mcpServers",
    }
}

/// `[mcp_servers.toolsmith]` and its keys, as TOML text.
fn toml_entry(entry: &Value) -> Option<String> {
    let table: toml::Table = serde_json::from_value(entry.clone()).ok()?;
    let body = toml::to_string(&table).ok()?;
    Some(format!("[mcp_servers.{SERVER_NAME}]\n{body}"))
}

/// Why an agent's configuration was not changed.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The file does not parse: it is never overwritten.
    #[error(
        "{path} does not parse as {format} ({reason}); it is left as it is: fix it, or add the \
         entry by hand"
    )]
    Unparsable {
        /// The file.
        path: PathBuf,
        /// JSON or TOML.
        format: &'static str,
        /// What the parser said.
        reason: String,
    },
    /// The file parses but its shape leaves no sound place for the entry.
    #[error("{path}: {why}; it is left as it is: add the entry by hand")]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is in the way.
        why: String,
    },
    /// Reading, backing up or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What [`merge`] did to a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Merged {
    /// The entry was there already, as it would be written: nothing changed.
    Unchanged,
    /// The file did not exist and holds the entry alone now.
    Created,
    /// The entry was added or replaced; the file as it was is kept at `backup`.
    Updated {
        /// The copy of the file before.
        backup: PathBuf,
    },
}

/// Writes `setup`'s entry into its file, keeping every other byte of it; idempotent. A file
/// that does not parse is refused, and a changed one is backed up first.
pub fn merge(setup: &McpSetup) -> Result<Merged, MergeError> {
    let path = &setup.file;
    let io = |source| MergeError::Io {
        path: path.clone(),
        source,
    };
    let old = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    let text = old.clone().unwrap_or_default();
    let new = if setup.agent == Agent::Codex {
        merge_toml(path, &text, &setup.entry)?
    } else {
        merge_json(path, &text, json_container(setup.agent), &setup.entry)?
    };
    let Some(new) = new else {
        return Ok(Merged::Unchanged);
    };
    write_merged(path, old.as_deref(), &new)
}

/// Writes `new` over `path` (whose text was `old`), backing up the old text first.
fn write_merged(path: &Path, old: Option<&str>, new: &str) -> Result<Merged, MergeError> {
    let io = |source| MergeError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let backup = match &old {
        Some(_) => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(format!(".{stamp}.toolsmith-backup"));
            let backup = path.with_file_name(name);
            std::fs::copy(path, &backup).map_err(io)?;
            Some(backup)
        }
        None => None,
    };
    // Written beside it and renamed over it: the file is whole at every instant, and keeps its
    // permissions (a `~/.claude.json` holding tokens stays private).
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".toolsmith-tmp");
    let tmp = path.with_file_name(tmp_name);
    std::fs::write(&tmp, new).map_err(io)?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(&tmp, meta.permissions()).map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(match backup {
        Some(backup) => Merged::Updated { backup },
        None => Merged::Created,
    })
}

/// An agent's hook running `toolsmith notices --session-start` when a session starts, so the
/// person reads what awaits review where they are. Claude Code (`settings.json`), Gemini CLI
/// (`settings.json`) and Codex (`hooks.json` in its home, openai/codex
/// `codex-rs/hooks/src/engine/discovery.rs`) read the same shape:
/// `hooks.SessionStart[] = {"hooks": [{"type": "command", "command": …}]}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HookSetup {
    /// The agent.
    pub agent: Agent,
    /// The file the hook goes in.
    pub file: PathBuf,
    /// The command it runs (a shell line).
    pub command: String,
}

/// The words a toolsmith session-start hook's command ends with (a hook whose command ends so
/// and names toolsmith is toolsmith's, with an older path: it is replaced, not doubled).
const HOOK_ARGS: &str = " notices --session-start";

/// The session-start hook of `agent`, running `toolsmith` (an absolute path); `None` for an
/// agent without command hooks at session start (OpenCode's are JavaScript plugins, Cursor's
/// and Cline's have no session-start event toolsmith can rely on).
pub fn session_start_hook(agent: Agent, h: &Homes, toolsmith: &Path) -> Option<HookSetup> {
    let file = match agent {
        Agent::ClaudeCode => h.claude.join("settings.json"),
        Agent::GeminiCli => h.gemini.join("settings.json"),
        Agent::Codex => h.codex.join("hooks.json"),
        Agent::Opencode | Agent::Cursor | Agent::Cline => return None,
    };
    Some(HookSetup {
        agent,
        file,
        command: format!(
            "{}{HOOK_ARGS}",
            crate::quote::shell_quote(&toolsmith.display().to_string())
        ),
    })
}

/// Adds `setup`'s hook to its file, keeping every other byte of it and the user's other hooks;
/// idempotent. A file that does not parse is refused, and a changed one is backed up first.
pub fn merge_hook(setup: &HookSetup) -> Result<Merged, MergeError> {
    let path = &setup.file;
    let old = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(MergeError::Io {
                path: path.clone(),
                source: e,
            });
        }
    };
    match merge_hook_json(path, old.as_deref().unwrap_or_default(), &setup.command)? {
        None => Ok(Merged::Unchanged),
        Some(new) => write_merged(path, old.as_deref(), &new),
    }
}

/// Whether `command` is a toolsmith session-start hook (this one or one of an older path).
fn is_toolsmith_hook(command: &str) -> bool {
    command.ends_with(HOOK_ARGS) && command.contains("toolsmith")
}

/// `text` (a JSON object, or nothing) with a `hooks.SessionStart` group running `command`;
/// `None` when one runs it already. Inserted into the text as [`merge_json`] does, checked to
/// parse as the old document plus the hook.
fn merge_hook_json(path: &Path, text: &str, command: &str) -> Result<Option<String>, MergeError> {
    const EVENT: &str = "SessionStart";
    let unparsable = |reason: String| MergeError::Unparsable {
        path: path.to_owned(),
        format: "JSON",
        reason,
    };
    let shape = |why: String| MergeError::Shape {
        path: path.to_owned(),
        why,
    };
    let blank = text.trim().is_empty();
    let old: Value = if blank {
        json!({})
    } else {
        serde_json::from_str(text).map_err(|e| unparsable(e.to_string()))?
    };
    let Some(doc) = old.as_object() else {
        return Err(shape("the document is not a JSON object".into()));
    };
    let group = json!({"hooks": [{"type": "command", "command": command}]});
    let hooks = match doc.get("hooks") {
        None => None,
        Some(Value::Object(h)) => Some(h),
        Some(_) => return Err(shape("`hooks` is not an object".into())),
    };
    let groups = match hooks.and_then(|h| h.get(EVENT)) {
        None => None,
        Some(Value::Array(g)) => Some(g),
        Some(_) => return Err(shape(format!("`hooks.{EVENT}` is not an array"))),
    };
    let commands: Vec<&str> = groups
        .into_iter()
        .flatten()
        .filter_map(|g| g.get("hooks")?.as_array())
        .flatten()
        .filter_map(|h| h.get("command")?.as_str())
        .collect();
    if commands.contains(&command) {
        return Ok(None);
    }
    let stale = commands.iter().find(|c| is_toolsmith_hook(c)).copied();
    let mut expected = old.clone();
    if let Some(map) = expected.as_object_mut() {
        let hooks = map.entry("hooks").or_insert_with(|| json!({}));
        if let Some(hooks) = hooks.as_object_mut() {
            let groups = hooks.entry(EVENT).or_insert_with(|| json!([]));
            if let Some(groups) = groups.as_array_mut() {
                match stale {
                    Some(stale) => {
                        for h in groups
                            .iter_mut()
                            .filter_map(|g| g.get_mut("hooks")?.as_array_mut())
                            .flatten()
                        {
                            if h.get("command").and_then(Value::as_str) == Some(stale) {
                                h["command"] = json!(command);
                            }
                        }
                    }
                    None => groups.push(group.clone()),
                }
            }
        }
    }
    let new = if blank {
        let mut t = serde_json::to_string_pretty(&expected).unwrap_or_default();
        t.push('\n');
        t
    } else if let Some(stale) = stale {
        let old_json = serde_json::to_string(stale).unwrap_or_default();
        let new_json = serde_json::to_string(command).unwrap_or_default();
        text.replace(&old_json, &new_json)
    } else {
        let top = json_scan::first_object(text).ok_or_else(|| shape("no object found".into()))?;
        let members = json_scan::members(text, top).ok_or_else(|| shape("unreadable".into()))?;
        match members.iter().find(|m| m.key == "hooks") {
            None => {
                json_scan::insert_member(text, top, &members, "hooks", &json!({ EVENT: [group] }))
            }
            Some(hooks) => {
                let inner = json_scan::members(text, hooks.value.0)
                    .ok_or_else(|| shape("`hooks` unreadable".into()))?;
                match inner.iter().find(|m| m.key == EVENT) {
                    None => json_scan::insert_member(
                        text,
                        hooks.value.0,
                        &inner,
                        EVENT,
                        &json!([group]),
                    ),
                    Some(event) => json_scan::push_element(text, event.value, &group)
                        .ok_or_else(|| shape(format!("`hooks.{EVENT}` unreadable")))?,
                }
            }
        }
    };
    let check: Value = serde_json::from_str(&new).map_err(|e| {
        shape(format!(
            "the merged text would not parse ({e}): nothing written"
        ))
    })?;
    if check != expected {
        return Err(shape(
            "merging would change more than toolsmith's hook (a duplicate key?)".into(),
        ));
    }
    Ok(Some(new))
}

/// `text` (a JSON object, or nothing) with `entry` at `container.toolsmith`; `None` when it is
/// there already. Everything else keeps its bytes: the entry is inserted into the text, and the
/// result is checked to parse as the old document plus the entry, or refused.
fn merge_json(
    path: &Path,
    text: &str,
    container: &str,
    entry: &Value,
) -> Result<Option<String>, MergeError> {
    let unparsable = |reason: String| MergeError::Unparsable {
        path: path.to_owned(),
        format: "JSON",
        reason,
    };
    let shape = |why: String| MergeError::Shape {
        path: path.to_owned(),
        why,
    };
    let blank = text.trim().is_empty();
    let old: Value = if blank {
        json!({})
    } else {
        serde_json::from_str(text).map_err(|e| unparsable(e.to_string()))?
    };
    let Some(doc) = old.as_object() else {
        return Err(shape("the document is not a JSON object".into()));
    };
    let mut expected = old.clone();
    match doc.get(container) {
        Some(Value::Object(servers)) if servers.get(SERVER_NAME) == Some(entry) => {
            return Ok(None);
        }
        Some(Value::Object(_)) | None => {}
        Some(_) => return Err(shape(format!("`{container}` is not an object"))),
    }
    if let Some(map) = expected.as_object_mut() {
        let servers = map.entry(container).or_insert_with(|| json!({}));
        if let Some(servers) = servers.as_object_mut() {
            servers.insert(SERVER_NAME.to_owned(), entry.clone());
        }
    }
    let new = if blank {
        let mut t = serde_json::to_string_pretty(&expected).unwrap_or_default();
        t.push('\n');
        t
    } else {
        let top = json_scan::first_object(text).ok_or_else(|| shape("no object found".into()))?;
        let members = json_scan::members(text, top).ok_or_else(|| shape("unreadable".into()))?;
        match members.iter().find(|m| m.key == container) {
            Some(servers) => {
                let inner = json_scan::members(text, servers.value.0)
                    .ok_or_else(|| shape(format!("`{container}` unreadable")))?;
                match inner.iter().find(|m| m.key == SERVER_NAME) {
                    // Replaced in place: a changed path to toolsmith, an edited entry.
                    Some(old_entry) => {
                        let indent = json_scan::indent_of(text, old_entry.key_start);
                        format!(
                            "{}{}{}",
                            &text[..old_entry.value.0],
                            pretty(entry, &indent),
                            &text[old_entry.value.1..]
                        )
                    }
                    None => {
                        json_scan::insert_member(text, servers.value.0, &inner, SERVER_NAME, entry)
                    }
                }
            }
            None => json_scan::insert_member(
                text,
                top,
                &members,
                container,
                &json!({ SERVER_NAME: entry }),
            ),
        }
    };
    let check: Value = serde_json::from_str(&new).map_err(|e| {
        shape(format!(
            "the merged text would not parse ({e}): nothing written"
        ))
    })?;
    if check != expected {
        return Err(shape(
            "merging would change more than toolsmith's entry (a duplicate key?)".into(),
        ));
    }
    Ok(Some(new))
}

/// `value` as pretty JSON whose lines after the first are indented by `indent`.
fn pretty(value: &Value, indent: &str) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(indent);
        }
        out.push_str(line);
    }
    out
}

/// `text` (Codex's `config.toml`) with `[mcp_servers.toolsmith]` set to `entry`; `None` when it
/// is so already. The table is appended (or its own section replaced); the result is checked
/// to parse as the old document plus the entry, or refused.
fn merge_toml(path: &Path, text: &str, entry: &Value) -> Result<Option<String>, MergeError> {
    let shape = |why: String| MergeError::Shape {
        path: path.to_owned(),
        why,
    };
    let old: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| MergeError::Unparsable {
            path: path.to_owned(),
            format: "TOML",
            reason: e.message().to_owned(),
        })?;
    let wanted: toml::Table = serde_json::from_value(entry.clone())
        .map_err(|e| shape(format!("the entry is no TOML table: {e}")))?;
    let servers = match old.get("mcp_servers") {
        None => None,
        Some(toml::Value::Table(t)) => Some(t),
        Some(_) => return Err(shape("`mcp_servers` is not a table".into())),
    };
    let current = servers.and_then(|s| s.get(SERVER_NAME));
    if current == Some(&toml::Value::Table(wanted.clone())) {
        return Ok(None);
    }
    let mut expected = old.clone();
    if let toml::Value::Table(s) = expected
        .entry("mcp_servers")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
    {
        s.insert(SERVER_NAME.to_owned(), toml::Value::Table(wanted));
    }
    let section = toml_entry(entry).ok_or_else(|| shape("unwritable entry".into()))?;
    let header = format!("[mcp_servers.{SERVER_NAME}]");
    let new = if current.is_some() {
        // Its own section, up to the next header: replaced whole.
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let start = lines
            .iter()
            .position(|l| l.trim() == header)
            .ok_or_else(|| {
                shape(format!(
                    "`mcp_servers.{SERVER_NAME}` is not written as a `{header}` section"
                ))
            })?;
        let end = lines
            .iter()
            .skip(start + 1)
            .position(|l| l.trim_start().starts_with('['))
            .map_or(lines.len(), |i| start + 1 + i);
        let mut t: String = lines[..start].concat();
        t.push_str(&section);
        if end < lines.len() {
            t.push('\n');
        }
        t.push_str(&lines[end..].concat());
        t
    } else {
        let sep = match text {
            "" => "",
            t if t.ends_with("\n\n") => "",
            t if t.ends_with('\n') => "\n",
            _ => "\n\n",
        };
        format!("{text}{sep}{section}")
    };
    let check: toml::Table = new
        .parse()
        .map_err(|e: toml::de::Error| shape(format!("the merged text would not parse: {e}")))?;
    if check != expected {
        return Err(shape(
            "merging would change more than toolsmith's entry".into(),
        ));
    }
    Ok(Some(new))
}

/// Just enough of a JSON reader to find where members are in a text already known to parse.
mod json_scan {
    use serde_json::Value;

    /// One member of an object: its key, where its key starts, and its value's byte span.
    pub(super) struct Member {
        pub(super) key: String,
        pub(super) key_start: usize,
        pub(super) value: (usize, usize),
    }

    fn ws(b: &[u8], mut i: usize) -> usize {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    }

    /// The end (exclusive) of the string starting at `i` (a `"`).
    fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
        i += 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }

    /// The end (exclusive) of the value starting at `i`.
    fn value_end(b: &[u8], i: usize) -> Option<usize> {
        match b.get(i)? {
            b'"' => string_end(b, i),
            b'{' | b'[' => {
                let mut depth = 0usize;
                let mut j = i;
                while j < b.len() {
                    match b[j] {
                        b'"' => {
                            j = string_end(b, j)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(j + 1);
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                None
            }
            _ => {
                let mut j = i;
                while j < b.len()
                    && !matches!(b[j], b',' | b'}' | b']')
                    && !b[j].is_ascii_whitespace()
                {
                    j += 1;
                }
                Some(j)
            }
        }
    }

    /// Where the document's object starts.
    pub(super) fn first_object(text: &str) -> Option<usize> {
        let b = text.as_bytes();
        let i = ws(b, 0);
        (b.get(i) == Some(&b'{')).then_some(i)
    }

    /// The members of the object whose `{` is at `open`.
    pub(super) fn members(text: &str, open: usize) -> Option<Vec<Member>> {
        let b = text.as_bytes();
        if b.get(open) != Some(&b'{') {
            return None;
        }
        let mut out = Vec::new();
        let mut i = ws(b, open + 1);
        if b.get(i) == Some(&b'}') {
            return Some(out);
        }
        loop {
            let key_start = i;
            let key_end = string_end(b, i)?;
            let key: String = serde_json::from_str(&text[key_start..key_end]).ok()?;
            i = ws(b, key_end);
            if b.get(i) != Some(&b':') {
                return None;
            }
            let start = ws(b, i + 1);
            let end = value_end(b, start)?;
            out.push(Member {
                key,
                key_start,
                value: (start, end),
            });
            i = ws(b, end);
            match b.get(i)? {
                b',' => i = ws(b, i + 1),
                b'}' => return Some(out),
                _ => return None,
            }
        }
    }

    /// The whitespace a line starting at the line of `at` is indented by.
    pub(super) fn indent_of(text: &str, at: usize) -> String {
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        text[line_start..at]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect()
    }

    /// `text` with `value` appended to the array spanning `span` (its `[` to after its `]`),
    /// indented as its elements are.
    pub(super) fn push_element(text: &str, span: (usize, usize), value: &Value) -> Option<String> {
        let (open, end) = span;
        let b = text.as_bytes();
        if b.get(open) != Some(&b'[') || end == 0 || b.get(end - 1) != Some(&b']') {
            return None;
        }
        let close = end - 1;
        let first = ws(b, open + 1);
        let outer = indent_of(text, open);
        if first == close {
            let inner = format!("{outer}  ");
            return Some(format!(
                "{}[\n{inner}{}\n{outer}]{}",
                &text[..open],
                super::pretty(value, &inner),
                &text[end..]
            ));
        }
        let last = text[..close].trim_end().len();
        let multiline = text[open..first].contains('\n');
        let (lead, indent) = if multiline {
            let indent = indent_of(text, first);
            (format!("\n{indent}"), indent)
        } else {
            (" ".to_owned(), String::new())
        };
        Some(format!(
            "{},{lead}{}{}",
            &text[..last],
            super::pretty(value, &indent),
            &text[last..]
        ))
    }

    /// `text` with `"key": value` added first in the object whose `{` is at `open`, indented as
    /// its first member is.
    pub(super) fn insert_member(
        text: &str,
        open: usize,
        members: &[Member],
        key: &str,
        value: &Value,
    ) -> String {
        let key_json = serde_json::to_string(key).unwrap_or_default();
        match members.first() {
            Some(first) => {
                let multiline = text[open..first.key_start].contains('\n');
                let indent = indent_of(text, first.key_start);
                let (lead, body_indent) = if multiline {
                    (format!("\n{indent}"), indent.clone())
                } else {
                    (" ".to_owned(), String::new())
                };
                format!(
                    "{}{lead}{key_json}: {},{}",
                    &text[..=open],
                    super::pretty(value, &body_indent),
                    &text[open + 1..]
                )
            }
            None => {
                // An empty object: `{}` or `{ }` becomes the member on a line of its own.
                let close = text[open..].find('}').map_or(open + 1, |c| open + c);
                let outer = indent_of(text, open);
                let inner = format!("{outer}  ");
                format!(
                    "{}{{\n{inner}{key_json}: {}\n{outer}{}",
                    &text[..open],
                    super::pretty(value, &inner),
                    &text[close..]
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn homes(dir: &Path) -> Homes {
        Homes::under(&dir.join("home"), &dir.join("home/.config"))
    }

    fn setup(agent: Agent, dir: &Path) -> McpSetup {
        mcp_setup(agent, &homes(dir), Path::new("/opt/bin/toolsmith"))
    }

    #[test]
    fn session_start_hook_is_added_beside_the_users_replaced_when_stale_and_never_doubled() {
        let path = Path::new("/h/.claude/settings.json");
        let ours = "/opt/bin/toolsmith notices --session-start";
        let group = json!({"hooks": [{"type": "command", "command": ours}]});
        // Nothing there: the hook alone.
        let new = merge_hook_json(path, "", ours)
            .expect("merge")
            .expect("changed");
        let doc: Value = serde_json::from_str(&new).expect("json");
        assert_eq!(doc, json!({"hooks": {"SessionStart": [group.clone()]}}));
        assert_eq!(merge_hook_json(path, &new, ours).expect("again"), None);
        // An empty list, and a one-line list of the user's: appended, the rest kept.
        for (text, before) in [
            ("{\"hooks\": {\"SessionStart\": []}}", json!([])),
            (
                "{\"hooks\": {\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"x\"}]}]}}",
                json!([{"hooks": [{"type": "command", "command": "x"}]}]),
            ),
        ] {
            let new = merge_hook_json(path, text, ours)
                .expect("merge")
                .expect("changed");
            let doc: Value = serde_json::from_str(&new).expect("json");
            let mut groups = before.as_array().cloned().expect("array");
            groups.push(group.clone());
            assert_eq!(doc["hooks"]["SessionStart"], Value::Array(groups), "{new}");
        }
        // An older toolsmith's path: replaced in place, not doubled.
        let old = "{\"hooks\": {\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"/old/toolsmith notices --session-start\"}]}]}}";
        let new = merge_hook_json(path, old, ours)
            .expect("merge")
            .expect("changed");
        assert_eq!(new, old.replace("/old/toolsmith", "/opt/bin/toolsmith"));
        // What does not parse, or is shaped otherwise, is refused.
        assert!(matches!(
            merge_hook_json(path, "{\"hooks\": ", ours),
            Err(MergeError::Unparsable { .. })
        ));
        assert!(matches!(
            merge_hook_json(path, "{\"hooks\": {\"SessionStart\": {}}}", ours),
            Err(MergeError::Shape { .. })
        ));
    }

    #[test]
    fn json_merge_keeps_every_other_byte_and_is_idempotent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = setup(Agent::GeminiCli, dir.path());
        let path = s.file.clone();
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let before = "{\n    \"theme\": \"GitHub\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"}\n    },\n    \"z\":   [1,2]\n}\n";
        std::fs::write(&path, before).expect("write");
        let merged = merge(&s).expect("merge");
        let Merged::Updated { backup } = merged else {
            panic!("{merged:?}")
        };
        assert_eq!(std::fs::read_to_string(&backup).expect("backup"), before);
        let after = std::fs::read_to_string(&path).expect("after");
        // Only the entry is new: removing its text gives the old text back.
        let entry_text = format!(
            "\n        \"toolsmith\": {},",
            pretty(
                &Agent::GeminiCli.mcp_entry(Path::new("/opt/bin/toolsmith")),
                "        "
            )
        );
        assert_eq!(after.replacen(&entry_text, "", 1), before, "{after}");
        let doc: Value = serde_json::from_str(&after).expect("json");
        assert_eq!(doc["mcpServers"]["toolsmith"]["args"], json!(["mcp"]));
        assert_eq!(merge(&s).expect("again"), Merged::Unchanged);
        assert_eq!(std::fs::read_to_string(&path).expect("same"), after);
    }

    #[test]
    fn json_merge_adds_the_container_replaces_a_stale_entry_and_refuses_broken_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = setup(Agent::Opencode, dir.path());
        std::fs::create_dir_all(s.file.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &s.file,
            "{\"$schema\": \"https://opencode.ai/config.json\"}",
        )
        .expect("w");
        merge(&s).expect("merge");
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&s.file).expect("r")).expect("json");
        assert_eq!(
            doc["mcp"]["toolsmith"],
            json!({"type": "local", "command": ["/opt/bin/toolsmith", "mcp"], "enabled": true})
        );
        assert_eq!(doc["$schema"], "https://opencode.ai/config.json");
        // A toolsmith that moved: its entry is replaced, nothing else.
        let moved = mcp_setup(
            Agent::Opencode,
            &homes(dir.path()),
            Path::new("/new/toolsmith"),
        );
        assert!(matches!(merge(&moved), Ok(Merged::Updated { .. })));
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&s.file).expect("r")).expect("json");
        assert_eq!(doc["mcp"]["toolsmith"]["command"][0], "/new/toolsmith");
        assert_eq!(doc.as_object().map(|o| o.len()), Some(2));

        let broken = "{\"mcpServers\": {\"a\": 1,}";
        let c = setup(Agent::Cursor, dir.path());
        std::fs::create_dir_all(c.file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&c.file, broken).expect("w");
        let err = merge(&c).expect_err("refused");
        assert!(err.to_string().contains("does not parse as JSON"), "{err}");
        assert_eq!(std::fs::read_to_string(&c.file).expect("r"), broken);
        // Not an object where servers go: refused too.
        std::fs::write(&c.file, "{\"mcpServers\": []}").expect("w");
        assert!(matches!(merge(&c), Err(MergeError::Shape { .. })));
    }

    #[test]
    fn toml_merge_appends_the_table_keeps_the_rest_and_refuses_broken_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = setup(Agent::Codex, dir.path());
        std::fs::create_dir_all(s.file.parent().expect("parent")).expect("mkdir");
        let before = "model = \"gpt-5\" # mine\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        std::fs::write(&s.file, before).expect("w");
        merge(&s).expect("merge");
        let after = std::fs::read_to_string(&s.file).expect("r");
        assert!(after.starts_with(before), "{after}");
        assert!(
            after.ends_with(
                "\n[mcp_servers.toolsmith]\nargs = [\"mcp\"]\ncommand = \"/opt/bin/toolsmith\"\n"
            ),
            "{after}"
        );
        assert_eq!(merge(&s).expect("again"), Merged::Unchanged);
        // Moved: its own section replaced, the others kept.
        let moved = mcp_setup(
            Agent::Codex,
            &homes(dir.path()),
            Path::new("/new/toolsmith"),
        );
        merge(&moved).expect("moved");
        let moved_text = std::fs::read_to_string(&s.file).expect("r");
        assert!(moved_text.starts_with(before), "{moved_text}");
        assert!(moved_text.contains("command = \"/new/toolsmith\""));
        assert!(!moved_text.contains("/opt/bin"));

        std::fs::write(&s.file, "model = \n").expect("w");
        let err = merge(&s).expect_err("refused");
        assert!(err.to_string().contains("does not parse as TOML"), "{err}");
        assert_eq!(std::fs::read_to_string(&s.file).expect("r"), "model = \n");
    }

    #[test]
    fn agents_moved_homes_are_followed() {
        let h = Homes {
            claude: PathBuf::from("/c"),
            claude_moved: true,
            gemini: PathBuf::from("/g/.gemini"),
            codex: PathBuf::from("/x"),
            ..Homes::under(Path::new("/h"), Path::new("/h/.config"))
        };
        let file = |a| mcp_setup(a, &h, Path::new("/t")).file;
        assert_eq!(file(Agent::ClaudeCode), Path::new("/c/.claude.json"));
        assert_eq!(
            file(Agent::GeminiCli),
            Path::new("/g/.gemini/settings.json")
        );
        assert_eq!(file(Agent::Codex), Path::new("/x/config.toml"));
        assert_eq!(
            Agent::ClaudeCode.user_skill_dirs(&h)[0],
            Path::new("/c/skills")
        );
        // OpenCode reads `~/.claude/skills` itself, wherever Claude Code's home is.
        assert_eq!(
            Agent::Opencode.user_skill_dirs(&h)[1],
            Path::new("/h/.claude/skills")
        );
    }

    #[test]
    fn skill_folders_are_the_agents_own() {
        let h = homes(Path::new("/h"));
        // Claude Code: ~/.claude/skills.
        assert_eq!(
            Agent::ClaudeCode.user_skill_dirs(&h)[0],
            Path::new("/h/home/.claude/skills")
        );
        // openai/codex codex-rs/core/src/skills/loader.rs: `$CODEX_HOME/skills` and
        // `$HOME/.agents/skills` for the user, `.agents/skills` in a repository.
        assert_eq!(
            Agent::Codex.user_skill_dirs(&h),
            [
                Path::new("/h/home/.codex/skills"),
                Path::new("/h/home/.agents/skills")
            ]
        );
        assert_eq!(Agent::Codex.project_skill_dir(), Some(".agents/skills"));
        // google-gemini/gemini-cli packages/core/src/config/storage.ts: getUserSkillsDir
        // (`~/.gemini/skills`), getUserAgentSkillsDir (`~/.agents/skills`).
        assert_eq!(
            Agent::GeminiCli.user_skill_dirs(&h)[0],
            Path::new("/h/home/.gemini/skills")
        );
        // sst/opencode packages/opencode/src/skill: `{skill,skills}/**/SKILL.md` in its config
        // directories (`$XDG_CONFIG_HOME/opencode`), and `~/.claude/skills`.
        assert_eq!(
            Agent::Opencode.user_skill_dirs(&h)[0],
            Path::new("/h/home/.config/opencode/skills")
        );
        // With Claude Code, OpenCode reads the skills from ~/.claude/skills: one copy each.
        let targets = skill_targets(&h, &[Agent::ClaudeCode, Agent::Opencode, Agent::Codex]);
        assert_eq!(
            targets,
            [
                (Agent::ClaudeCode, PathBuf::from("/h/home/.claude/skills")),
                (Agent::Codex, PathBuf::from("/h/home/.codex/skills")),
            ]
        );
    }
}
