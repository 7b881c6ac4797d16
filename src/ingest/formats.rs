//! The registry of formats: by name, and by sniffing a file's first bytes.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::adapters::Format;
use super::adapters::{
    aider::Aider, bash::BashHistory, claude_code::ClaudeCode, codex::Codex, crush::Crush,
    fish::FishHistory, native::Native, opencode::Opencode, opencode_json::OpencodeJson,
    openhands::OpenHands, openhands::OpenHandsResolver, swe_agent::SweAgent, zsh::ZshHistory,
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
/// a session spanning them is then read, and ranked, in the order it was written.
pub fn rotation_order(paths: &mut [PathBuf]) {
    paths.sort_by(|a, b| {
        let key = |p: &PathBuf| {
            (
                unrotated(p).into_owned(),
                std::cmp::Reverse(rotation(p).map_or(0, |n| u64::from(n) + 1)),
            )
        };
        key(a).cmp(&key(b))
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
    }
}
