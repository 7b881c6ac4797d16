//! Issue 29's bad input: a command line that does not parse stays one opaque step, is never a
//! tool and is counted; nothing panics. Random bytes (seeded) and every command line of the
//! real corpus (`../shared/corpus`, read through the ingest formats) go through the shell
//! parser and the tokenizer.

use std::path::{Path, PathBuf};

use serde_json::json;
use toolsmith::action::{Action, Source};
use toolsmith::ingest::adapters::Item;
use toolsmith::ingest::reader::{self, ReadError, ReadOptions};
use toolsmith::ingest::redact::Redactor;
use toolsmith::ingest::{formats, oneshot};
use toolsmith::mine::shell::{self, Dialect, ShellError};
use toolsmith::mine::token::{LineParse, NoiseRules, TokenKind, Tokenizer, UNPARSED};

/// A tokenizer that drops nothing as noise: every unparsable line with a word has its token.
fn tokenizer() -> Tokenizer {
    Tokenizer::new(&NoiseRules {
        programs: Vec::new(),
        pipe_filters: Vec::new(),
        tools: Vec::new(),
    })
}

fn bash_action(line: &str, source: Source) -> Action {
    Action {
        session: "s".into(),
        seq: 0,
        ts: None,
        source,
        cwd: Some("/w".into()),
        tool: "Bash".into(),
        input: json!({ "command": line }),
        call_id: None,
        parent_session: None,
        result: None,
    }
}

/// Whether the line has a word the unparsed token can be named after.
fn has_word(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .is_some_and(|w| w.chars().any(char::is_alphanumeric))
        && line.chars().next().is_some_and(char::is_alphanumeric)
}

/// Checks one command line: the parser answers (an error's offset inside the line), and a line
/// it rejects gives the tokenizer's one opaque step, counted, never a program's step.
fn check(tokenizer: &Tokenizer, line: &str, source: Source) -> bool {
    let dialect = if source == Source::Fish {
        Dialect::Fish
    } else {
        Dialect::Posix
    };
    let parsed = shell::parse_dialect(line, dialect);
    if let Err(e) = &parsed {
        assert!(e.at().is_none_or(|at| at <= line.len()), "{line:?}: {e}");
    }
    let (tokens, parse) = tokenizer.tokens_and_parse(&bash_action(line, source));
    match parsed {
        Ok(_) => {
            assert_eq!(parse, LineParse::Parsed, "{line:?}");
            assert!(
                tokens.iter().all(|t| t.kind != TokenKind::Unparsed),
                "{line:?}: {tokens:?}"
            );
            true
        }
        Err(e) => {
            let expected = if matches!(e, ShellError::ForeignShell { .. }) {
                LineParse::Foreign
            } else {
                LineParse::Unparsed
            };
            // A multi-line text whose first line parses is worth that line's commands.
            let first = line.lines().next().unwrap_or("");
            if expected == LineParse::Unparsed
                && first.len() < line.len()
                && shell::parse_dialect(first, dialect).is_ok()
            {
                assert_eq!(parse, LineParse::Parsed, "{line:?}");
                return false;
            }
            assert_eq!(parse, expected, "{line:?}: {e}");
            assert!(tokens.len() <= 1, "{line:?}: {tokens:?}");
            if has_word(line) {
                assert_eq!(tokens.len(), 1, "{line:?}: {e}");
            }
            for t in &tokens {
                assert_eq!(t.kind, TokenKind::Unparsed, "{line:?}");
                assert!(t.key.ends_with(UNPARSED), "{line:?}: {}", t.key);
                assert_eq!(t.slots[0].value, line, "the whole line, as logged");
            }
            false
        }
    }
}

/// xorshift64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_bytes_never_panic_and_bad_lines_are_one_opaque_step() {
    let tokenizer = tokenizer();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    const PIECES: &[&str] = &[
        " ", "'", "\"", "\\", "$(", "${", "`", "(", ")", "{", "}", "&&", "|", ";", "<<", "EOF",
        "\n", "cd", "git", "-m", "Get-Item", "$env:X", "%PATH%", "=", "é", "#", "2>&1", "<(",
    ];
    let mut rejected = 0;
    for round in 0..4_000 {
        let line = if round % 2 == 0 {
            let bytes: Vec<u8> = (0..rng.below(80)).map(|_| rng.next() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            (0..rng.below(30))
                .map(|_| PIECES[rng.below(PIECES.len())])
                .collect()
        };
        let source = if round % 7 == 0 {
            Source::Fish
        } else {
            Source::ClaudeCode
        };
        if !check(&tokenizer, &line, source) {
            rejected += 1;
        }
    }
    // The generator makes mostly broken lines: the check above ran on them.
    assert!(rejected > 1_000, "{rejected}");
}

/// Every file of the corpus an ingest format recognises, read as ingest reads it.
fn corpus_actions(root: &Path) -> Vec<Action> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("corpus dir readable") {
            let path: PathBuf = entry.expect("entry").path();
            if path.is_dir() {
                // loghub holds system logs, not command lines.
                if path.file_name().is_some_and(|n| n != "loghub") {
                    dirs.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut actions = Vec::new();
    for path in files {
        let Ok(head) = oneshot::read_head(&path) else {
            continue;
        };
        let Some((name, format)) = formats::sniff(&path, &head) else {
            continue;
        };
        let read = reader::read_file::<ReadError>(
            &path,
            name,
            format,
            None,
            &mut reader::nothing_known::<ReadError>,
            &ReadOptions::default(),
            &Redactor::new(),
            |batch| {
                for item in batch.items {
                    if let Item::Action(action) = item {
                        actions.push(action);
                    }
                }
                Ok(())
            },
        );
        assert!(read.is_ok(), "{}: {:?}", path.display(), read.err());
    }
    actions
}

#[test]
fn every_corpus_command_line_parses_or_is_one_opaque_counted_step() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !root.is_dir() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "corpus not found at {} (required under CI=true)",
            root.display()
        );
        eprintln!("skipped: corpus not found at {}", root.display());
        return;
    }
    let tokenizer = tokenizer();
    let actions = corpus_actions(&root);
    let mut lines = 0;
    let mut rejected = Vec::new();
    for action in &actions {
        let Some(line) = ["command", "cmd"]
            .iter()
            .find_map(|k| action.input.get(*k).and_then(|v| v.as_str()))
        else {
            continue;
        };
        lines += 1;
        if !check(&tokenizer, line, action.source) {
            rejected.push(line);
        }
    }
    assert!(lines > 2_000, "only {lines} command lines in the corpus");
    // No real line comes near the parser's work budget or nesting limit.
    for line in &rejected {
        let e = shell::parse(line).err();
        assert!(
            !matches!(e, Some(ShellError::TooDeep { .. })),
            "{line:?}: {e:?}"
        );
    }
    // The grammar reads almost every real line; what it rejects is listed for a look.
    let share = rejected.len() as f64 / lines as f64;
    eprintln!(
        "{lines} corpus command lines, {} not parsed ({:.2}%)",
        rejected.len(),
        share * 100.0
    );
    for line in rejected.iter().take(40) {
        eprintln!(
            "  not parsed: {:?}",
            line.chars().take(160).collect::<String>()
        );
    }
    assert!(
        share < 0.05,
        "{:.2}% of corpus lines not parsed",
        share * 100.0
    );

    // Codex on Windows runs PowerShell: recognised, never mined as POSIX.
    let windows = root.join("recent/codex/Solsmile__codex-session.jsonl");
    if !windows.is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{} not found (required under CI=true)",
            windows.display()
        );
        eprintln!("skipped: {} not found", windows.display());
        return;
    }
    let windows_lines: Vec<&str> = actions
        .iter()
        .filter(|a| a.session.starts_with("019f2241"))
        .filter_map(|a| a.input.get("command").and_then(|v| v.as_str()))
        .collect();
    let foreign = windows_lines
        .iter()
        .filter(|l| {
            tokenizer.tokens_and_parse(&bash_action(l, Source::Codex)).1 == LineParse::Foreign
        })
        .count();
    assert!(
        foreign * 2 > windows_lines.len(),
        "{foreign} of {} Windows Codex lines recognised as PowerShell: {windows_lines:#?}",
        windows_lines.len()
    );
    let line = "Get-ChildItem -Force";
    assert!(windows_lines.contains(&line), "{line} not in the session");
    let (tokens, parse) = tokenizer.tokens_and_parse(&bash_action(line, Source::Codex));
    assert_eq!(parse, LineParse::Foreign, "{line}");
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0].kind, TokenKind::Unparsed);
}
