//! The registry of formats: by name, and by sniffing a file's first bytes.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::adapters::Format;
use super::adapters::{
    aider::Aider, bash::BashHistory, claude_code::ClaudeCode, cline::Cline, codex::Codex,
    crush::Crush, cursor::Cursor, fish::FishHistory, gemini_cli::GeminiCli,
    gemini_cli::GeminiCliJson, kimi::KimiCli, native::Native, opencode::Opencode,
    opencode_json::OpencodeJson, openhands::OpenHands, openhands::OpenHandsResolver,
    swe_agent::SweAgent, zsh::ZshHistory,
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
    ("kimi-cli", &KimiCli),
    ("cline", &Cline),
    ("cursor", &Cursor),
    ("aider", &Aider),
    ("gemini-cli", &GeminiCli),
    ("gemini-cli-json", &GeminiCliJson),
    ("opencode", &Opencode),
    ("opencode-json", &OpencodeJson),
    ("crush", &Crush),
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

/// The first format that recognises the file, with its name. A rotated file (`x.jsonl.1`) is
/// recognised as the file it was (see [`unrotated`]).
pub fn sniff(path: &Path, head: &[u8]) -> Option<(&'static str, &'static dyn Format)> {
    let path = unrotated(path);
    FORMATS
        .iter()
        .find(|(_, format)| format.sniff(&path, head))
        .map(|(name, format)| (*name, *format))
}

/// What `path` is when it is a file an agent keeps among its logs that is not a log (see
/// [`Format::companion`]); `None` otherwise.
pub fn companion(path: &Path) -> Option<&'static str> {
    FORMATS
        .iter()
        .find_map(|(_, format)| format.companion(path))
}

/// The number of a rotated file (`x.jsonl.1` is 1, `.bash_history.12` is 12), as logrotate and
/// most loggers name them; `None` for a file that is not one.
pub fn rotation(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let (stem, number) = name.rsplit_once('.')?;
    let digits =
        !number.is_empty() && number.len() <= 4 && number.bytes().all(|b| b.is_ascii_digit());
    (digits && !stem.is_empty())
        .then(|| number.parse().ok())
        .flatten()
}

/// The file a rotated file was (`x.jsonl.1` → `x.jsonl`): it is read as that file's format,
/// with the same sessions. Any other path is itself.
///
/// ```
/// use std::path::Path;
/// use toolsmith::ingest::formats::unrotated;
/// assert_eq!(unrotated(Path::new("/l/s.jsonl.1")), Path::new("/l/s.jsonl"));
/// assert_eq!(unrotated(Path::new("/h/.bash_history")), Path::new("/h/.bash_history"));
/// ```
pub fn unrotated(path: &Path) -> Cow<'_, Path> {
    match (rotation(path), path.file_name().and_then(|n| n.to_str())) {
        (Some(_), Some(name)) => {
            let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
            Cow::Owned(path.with_file_name(stem))
        }
        _ => Cow::Borrowed(path),
    }
}

/// Extensions of compressed files, as rotations leave them (`x.log.2.gz`).
const COMPRESSED: &[&str] = &[
    "gz", "bz2", "xz", "zst", "lz4", "lzma", "z", "lz", "zip", "7z",
];

/// Why a compressed file (a compressed rotation: `x.jsonl.2.gz`) is not read; `None` for any
/// other file.
pub fn compressed(path: &Path) -> Option<String> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    COMPRESSED.contains(&extension.as_str()).then(|| {
        format!(
            "a compressed file (.{extension}), as log rotation leaves older logs: not read, \
             since its content was read before it was compressed if toolsmith was following \
             the log then. To read it, decompress it beside the log (e.g. `gzip -dk`)"
        )
    })
}

/// Orders files so that a log's rotations come before the log, oldest (highest number) first:
/// a session spanning them is then read, and ranked, in the order it was written. A session's
/// file also comes before the files in the folder named after it (Claude Code's
/// `<session>.jsonl` before `<session>/subagents/agent-*.jsonl`), so the calls a compaction
/// transcript repeats are stored as the parent session's, where they were made.
pub fn rotation_order(paths: &mut [PathBuf]) {
    paths.sort_by_cached_key(|p| {
        let path = unrotated(p);
        // `dir/stem\0ext` sorts before `dir/stem/…`: NUL is below every other byte.
        let mut key = path.parent().map_or_else(Vec::new, |d| {
            let mut k = d.as_os_str().as_encoded_bytes().to_vec();
            k.push(b'/');
            k
        });
        match (path.file_stem(), path.extension()) {
            (Some(stem), Some(ext)) => {
                key.extend_from_slice(stem.as_encoded_bytes());
                key.push(0);
                key.extend_from_slice(ext.as_encoded_bytes());
            }
            _ => key.extend_from_slice(path.file_name().map_or(&[][..], |n| n.as_encoded_bytes())),
        }
        (
            key,
            std::cmp::Reverse(rotation(p).map_or(0, |n| u64::from(n) + 1)),
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_are_named_and_ordered_oldest_first() {
        assert_eq!(rotation(Path::new("/l/s.jsonl.1")), Some(1));
        assert_eq!(rotation(Path::new("/l/.bash_history.12")), Some(12));
        assert_eq!(rotation(Path::new("/l/s.jsonl")), None);
        assert_eq!(rotation(Path::new("/l/v1.2")), Some(2));
        assert_eq!(rotation(Path::new("/l/.1")), None);
        assert!(compressed(Path::new("/l/s.jsonl.2.gz")).is_some());
        assert!(compressed(Path::new("/l/s.jsonl.2")).is_none());
        let mut paths: Vec<PathBuf> = ["/l/s.jsonl", "/l/s.jsonl.1", "/l/a.jsonl", "/l/s.jsonl.2"]
            .iter()
            .map(PathBuf::from)
            .collect();
        rotation_order(&mut paths);
        let names: Vec<_> = paths.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            names,
            ["/l/a.jsonl", "/l/s.jsonl.2", "/l/s.jsonl.1", "/l/s.jsonl"]
        );
        let mut paths: Vec<PathBuf> = [
            "/p/s1/subagents/agent-acompact-1.jsonl",
            "/p/s1/subagents/agent-a2.jsonl",
            "/p/s1.jsonl",
            "/p/s0.jsonl",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        rotation_order(&mut paths);
        let names: Vec<_> = paths.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "/p/s0.jsonl",
                "/p/s1.jsonl",
                "/p/s1/subagents/agent-a2.jsonl",
                "/p/s1/subagents/agent-acompact-1.jsonl"
            ]
        );
    }
}
