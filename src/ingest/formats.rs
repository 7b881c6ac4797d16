//! The registry of formats: by name, and by sniffing a file's first bytes.

use std::path::Path;

use super::adapters::Format;
use super::adapters::{
    aider::Aider, bash::BashHistory, claude_code::ClaudeCode, codex::Codex, fish::FishHistory,
    native::Native, openhands::OpenHands, openhands::OpenHandsResolver, swe_agent::SweAgent,
    zsh::ZshHistory,
};

/// Every format with its name, in sniffing order: specific formats first, bash (the most
/// permissive) last.
pub static FORMATS: &[(&str, &dyn Format)] = &[
    ("claude-code", &ClaudeCode),
    ("codex", &Codex),
    ("native", &Native),
    ("swe-agent", &SweAgent),
    ("openhands", &OpenHands),
    ("openhands-resolver", &OpenHandsResolver),
    ("aider", &Aider),
    ("zsh", &ZshHistory),
    ("fish", &FishHistory),
    ("bash", &BashHistory),
];

/// The names accepted by `--format` and `format = "…"`.
pub fn names() -> Vec<&'static str> {
    FORMATS.iter().map(|(name, _)| *name).collect()
}

/// The format called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Format> {
    FORMATS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The first format that recognises the file, with its name.
pub fn sniff(path: &Path, head: &[u8]) -> Option<(&'static str, &'static dyn Format)> {
    FORMATS
        .iter()
        .find(|(_, format)| format.sniff(path, head))
        .map(|(name, format)| (*name, *format))
}
