//! The normalized event every adapter produces: one tool call and its result, joined. Ingest
//! writes actions, mining and generation read them; the type sits below all three.
//!
//! - [`placeholder`]: the `[REDACTED:<kind>]` placeholders redaction leaves in an action's text.
//! - [`stored`]: the `actions` table, every query of it (ingest writes, mining and health read).

pub mod placeholder;
pub mod stored;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The program that wrote a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Claude Code (`~/.claude/projects/<dir>/<session>.jsonl`).
    ClaudeCode,
    /// OpenAI Codex CLI (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
    /// SWE-agent trajectories (`.traj`).
    SweAgent,
    /// OpenHands trajectories (event lists).
    Openhands,
    /// aider chat history (`.aider.chat.history.md`).
    Aider,
    /// bash history.
    Bash,
    /// zsh history.
    Zsh,
    /// fish history.
    Fish,
    /// toolsmith's own JSON Lines format (also what `toolsmith run` logs).
    Native,
    /// Gemini CLI (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, older `session-*.json`).
    GeminiCli,
    /// OpenCode (`~/.local/share/opencode/opencode.db`, older JSON under `storage/`).
    Opencode,
    /// Crush (`<project>/.crush/crush.db`).
    Crush,
    /// Kimi CLI (`~/.kimi/sessions/<hash>/<session>/wire.jsonl`).
    KimiCli,
    /// Cline (task folders under the editor's global storage).
    Cline,
    /// Cursor's CLI agent (`~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl`).
    Cursor,
}

impl Source {
    /// The name used in the config (`format = "…"`), the store and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::ClaudeCode => "claude-code",
            Source::Codex => "codex",
            Source::SweAgent => "swe-agent",
            Source::Openhands => "openhands",
            Source::Aider => "aider",
            Source::Bash => "bash",
            Source::Zsh => "zsh",
            Source::Fish => "fish",
            Source::Native => "native",
            Source::GeminiCli => "gemini-cli",
            Source::Opencode => "opencode",
            Source::Crush => "crush",
            Source::KimiCli => "kimi-cli",
            Source::Cline => "cline",
            Source::Cursor => "cursor",
        }
    }

    /// Whether the program's call ids are unique beyond one session (Claude Code's `toolu_…`,
    /// Codex's `call_…`), so that a call repeated in a sub-agent's transcript (a compaction copy
    /// repeats its parent's calls under their ids) is the same call: such calls are keyed by
    /// their root session (the parent's) and id. Other formats' ids (a native log's own) may be
    /// reused by another session, so they are keyed by their own session.
    pub fn call_ids_span_sessions(self) -> bool {
        matches!(self, Source::ClaudeCode | Source::Codex)
    }

    /// Every source, in a stable order.
    pub const ALL: [Source; 15] = [
        Source::ClaudeCode,
        Source::Codex,
        Source::SweAgent,
        Source::Openhands,
        Source::Aider,
        Source::Bash,
        Source::Zsh,
        Source::Fish,
        Source::Native,
        Source::GeminiCli,
        Source::Opencode,
        Source::Crush,
        Source::KimiCli,
        Source::Cline,
        Source::Cursor,
    ];

    /// Parses a name as written by [`Source::as_str`].
    ///
    /// ```
    /// use toolsmith::action::Source;
    /// assert_eq!(Source::from_name("claude-code"), Some(Source::ClaudeCode));
    /// assert_eq!(Source::from_name("Claude Code"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a call produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResult {
    /// Whether the call succeeded (no error flag, exit code 0 where known).
    pub ok: bool,
    /// The process exit code, when the log says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Output excerpt as logged (capped and redacted later, before storage).
    #[serde(default)]
    pub output: String,
    /// How long the call took, when the log says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// One call an agent or a shell made, with its result when known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Stable id of the agent session or shell session.
    pub session: String,
    /// Ordering key within the session and the file: increasing in log order, not necessarily
    /// contiguous (the store puts the file generation's rank above it: see
    /// [`stored::stored_seq`]). Deterministic for the same bytes, so re-reading a file yields
    /// the same keys.
    pub seq: u64,
    /// When the call was made (RFC 3339), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<jiff::Timestamp>,
    /// Which program wrote the log.
    pub source: Source,
    /// Working directory, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Agent tool name (`Bash`, `Read`, `Edit`, `apply_patch`, …), or `shell` for history lines.
    pub tool: String,
    /// The call's input as a JSON object, e.g. `{"command": "cargo test -p foo"}`.
    pub input: Value,
    /// The agent's id for the call, joining a result that arrives later (tool_use id, call_id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// For a sub-agent's session, the session that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// The result, or `None` while it has not been seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ActionResult>,
}

/// The canonical name of a shell that is not POSIX (`powershell`, `cmd`), from a program name
/// or path (`pwsh`, `C:\\…\\powershell.exe`, `cmd.exe`); `None` for sh-like shells and anything
/// else. Ingest marks such a command's input with it; mining never reads its line as sh.
///
/// ```
/// use toolsmith::action::foreign_shell;
/// assert_eq!(foreign_shell("pwsh.exe"), Some("powershell"));
/// assert_eq!(foreign_shell("/bin/zsh"), None);
/// ```
pub fn foreign_shell(program: &str) -> Option<&'static str> {
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let base = base.to_ascii_lowercase();
    let base = base.strip_suffix(".exe").unwrap_or(&base);
    match base {
        "powershell" | "pwsh" | "windows powershell" => Some("powershell"),
        "cmd" => Some("cmd"),
        _ => None,
    }
}

/// Parses "Exit code N" / "Exit code: N" (as Claude Code and Codex write it) from output text.
///
/// ```
/// use toolsmith::action::exit_code_from_text;
/// assert_eq!(exit_code_from_text("Exit code 2\nerror[E0425]: cannot find value"), Some(2));
/// assert_eq!(exit_code_from_text("Exit code: 0\nWall time: 0.4 seconds"), Some(0));
/// assert_eq!(exit_code_from_text("all good"), None);
/// ```
pub fn exit_code_from_text(text: &str) -> Option<i32> {
    for marker in ["Exit code: ", "Exit code ", "exit code: ", "exit code "] {
        if let Some(at) = text.find(marker) {
            let rest = &text[at + marker.len()..];
            let digits: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(code) = digits.parse() {
                return Some(code);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_round_trip() {
        for source in Source::ALL {
            assert_eq!(Source::from_name(source.as_str()), Some(source));
            let json = serde_json::to_string(&source).expect("serialize");
            assert_eq!(json, format!("\"{}\"", source.as_str()));
        }
        assert_eq!(Source::from_name("emacs"), None);
    }

    #[test]
    fn exit_codes_are_read_from_text() {
        assert_eq!(exit_code_from_text("Exit code 1\nerror: x"), Some(1));
        assert_eq!(exit_code_from_text("Exit code: 0\nWall time: 1s"), Some(0));
        assert_eq!(
            exit_code_from_text("Process exited. exit code 127"),
            Some(127)
        );
        assert_eq!(exit_code_from_text("no code here"), None);
        assert_eq!(exit_code_from_text("Exit code: abc"), None);
    }
}
