//! fish history (`~/.local/share/fish/fish_history`), the YAML-like format of fish 2.0 and
//! later:
//!
//! ```text
//! - cmd: cd paru
//!   when: 1674334062
//!   paths:
//!     - paru
//! ```
//!
//! fish escapes the command and each path (`escape_yaml_fish_2_0`): a backslash is written as
//! `\\` and a newline as `\n`; nothing else is escaped.
//!
//! # What `record()` accepts
//!
//! One [`Framing::FishEntries`] record: a `- cmd: <command>` line and the indented lines after
//! it. It is read the way fish's own reader (`decode_item_fish_2_0`) reads it:
//!
//! * Leading `%`, `---` and `...` lines are skipped; `- cmd: - cmd: …` (what fish 1.x made of a
//!   2.0 file) keeps one `- cmd:`, and the fish 1.x artifact `- cmd:    when: …` is skipped.
//! * The command is the text after `- cmd:`, leading whitespace removed (as fish does),
//!   unescaped: `\\` → `\`, `\n` → newline. Where fish stops reading at any other escape, this
//!   parser keeps the backslash and the character — fish never writes one.
//! * The interior lines share the indentation of the first one; a line with none or another
//!   ends the entry (anything after it in the record is ignored, as fish ignores it). `when:`
//!   gives `ts` (a value that is not an integer, or that jiff cannot represent, gives `None`);
//!   `paths:` is followed by more deeply indented `- <path>` lines, unescaped like the
//!   command; other keys are ignored.
//! * A record whose first line is not `- cmd:` is a problem (the framing starts a record at
//!   any line beginning `- `). An empty command yields nothing. Invalid UTF-8 is decoded
//!   lossily.
//!
//! Each entry becomes one action: tool `shell`, input `{"command": …}` plus `"paths": […]` when
//! the entry lists paths (they are the command's file arguments that existed, not a working
//! directory: `cwd` is `None`), `result: None` (fish does not record how a command ended),
//! `seq` = `pos.offset << 8`. Sessions are cut as `shell_common` describes.

use std::path::Path;

use serde_json::{Map, Value};

use super::shell_common::{self, Sessions};
use crate::action::Source;
use crate::ingest::adapters::{Format, Framing, Item, Position, Problem, RecordParser};

/// fish history files.
pub struct FishHistory;

impl Format for FishHistory {
    fn source(&self) -> Source {
        Source::Fish
    }

    fn framing(&self) -> Framing {
        Framing::FishEntries
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(FishParser {
            sessions: Sessions::new(Source::Fish, path, state.as_ref()),
        })
    }

    /// The first non-blank line starts with `- cmd:` and the line after it with `  when:`; or
    /// the file name contains `fish_history` and the first non-blank line starts with `- cmd:`.
    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if head.contains(&0) {
            return false;
        }
        let mut lines = shell_common::head_lines(head).skip_while(|l| shell_common::is_blank(l));
        let Some(first) = lines.next() else {
            return false;
        };
        if !first.starts_with(b"- cmd:") {
            return false;
        }
        lines.next().is_some_and(|l| l.starts_with(b"  when:"))
            || shell_common::file_name_lower(path).contains("fish_history")
    }
}

struct FishParser {
    sessions: Sessions,
}

impl RecordParser for FishParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        let mut lines = record.split(|&b| b == b'\n').peekable();
        let mut first = loop {
            match lines.next() {
                None => return Ok(()),
                Some(line) if is_yaml_noise(line) => continue,
                Some(line) => break line,
            }
        };
        while first.starts_with(b"- cmd: - cmd: ") {
            first = first.get(7..).unwrap_or_default();
        }
        if first.starts_with(b"- cmd:    when:") {
            return Ok(());
        }
        let Some(value) = first.strip_prefix(b"- cmd:") else {
            return Err(Problem::new(
                "fish history entry does not start with `- cmd:`",
            ));
        };
        let command = String::from_utf8_lossy(&unescape(value.trim_ascii_start())).into_owned();

        let mut indent = None;
        let mut when = None;
        let mut paths = Vec::new();
        while let Some(line) = lines.next() {
            let (spaces, body) = split_indent(line);
            let indent = *indent.get_or_insert(spaces);
            if spaces == 0 || spaces != indent {
                break;
            }
            let Some(colon) = body.iter().position(|&b| b == b':') else {
                break;
            };
            let (key, value) = body.split_at(colon);
            let value = value.get(1..).unwrap_or_default().trim_ascii();
            match key {
                b"when" => when = shell_common::parse_epoch(value),
                b"paths" => {
                    while let Some(path) = lines.peek().and_then(|l| {
                        let (spaces, body) = split_indent(l);
                        (spaces > indent).then_some(body)?.strip_prefix(b"- ")
                    }) {
                        paths.push(Value::String(
                            String::from_utf8_lossy(&unescape(path)).into_owned(),
                        ));
                        lines.next();
                    }
                }
                _ => {}
            }
        }

        if command.trim().is_empty() {
            return Ok(());
        }
        let mut input = shell_common::command_input(command);
        if !paths.is_empty() {
            input.insert("paths".into(), Value::Array(paths));
        }
        let session = self.sessions.next(when);
        out.push(Item::Action(shell_common::shell_action(
            Source::Fish,
            session,
            shell_common::seq(pos, 0),
            when,
            input,
        )));
        Ok(())
    }

    fn state(&self) -> Value {
        let mut state = Map::new();
        self.sessions.save(&mut state);
        Value::Object(state)
    }
}

/// Lines fish skips between entries.
fn is_yaml_noise(line: &[u8]) -> bool {
    shell_common::is_blank(line)
        || line.starts_with(b"%")
        || line.starts_with(b"---")
        || line.starts_with(b"...")
}

/// The number of leading spaces, and the rest of the line.
fn split_indent(line: &[u8]) -> (usize, &[u8]) {
    let spaces = line.iter().take_while(|&&b| b == b' ').count();
    (spaces, line.get(spaces..).unwrap_or_default())
}

/// Undoes fish's escaping: `\\` → `\`, `\n` → newline; any other backslash is kept.
pub fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut iter = text.iter().copied().peekable();
    while let Some(b) = iter.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match iter.peek() {
            Some(b'\\') => out.push(b'\\'),
            Some(b'n') => out.push(b'\n'),
            _ => {
                out.push(b'\\');
                continue;
            }
        }
        iter.next();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shell_common::file_id;
    use super::shell_common::testkit::{self, ZshRule};
    use super::*;
    use crate::action::Action;

    const KIMHYR: &str = "shell-history/fish__Kimhyr-home.fish_history";
    const DRMINGDRMER: &str = "shell-history/fish__drmingdrmer-homefolder.fish_history";

    fn command(action: &Action) -> &str {
        action.input["command"].as_str().expect("command")
    }

    fn paths(action: &Action) -> Vec<&str> {
        action
            .input
            .get("paths")
            .and_then(Value::as_array)
            .map_or(Vec::new(), |p| {
                p.iter().map(|v| v.as_str().expect("path")).collect()
            })
    }

    #[test]
    fn corpus_counts() {
        for (file, entries, with_paths, sessions) in
            [(KIMHYR, 1435, 608, 37), (DRMINGDRMER, 182, 6, 4)]
        {
            let Some((path, bytes)) = testkit::corpus(file) else {
                return;
            };
            let run = testkit::run(&FishHistory, ZshRule::AnyBackslash, &path, &bytes);
            assert!(run.problems.is_empty(), "{file}: {:?}", run.problems);
            assert_eq!(run.actions.len(), entries, "{file}");
            assert_eq!(
                run.actions
                    .iter()
                    .filter(|a| a.input.get("paths").is_some())
                    .count(),
                with_paths,
                "{file}"
            );
            assert!(
                run.actions
                    .iter()
                    .all(|a| a.ts.is_some() && a.result.is_none())
            );
            assert!(
                run.actions
                    .iter()
                    .all(|a| a.cwd.is_none() && a.tool == "shell")
            );
            assert!(run.actions.windows(2).all(|w| w[0].seq < w[1].seq));
            let mut ids: Vec<&str> = run.actions.iter().map(|a| a.session.as_str()).collect();
            ids.dedup();
            assert_eq!(ids.len(), sessions, "{file}");
            assert_eq!(ids[0], format!("fish:{}:0", file_id(&path)));
            testkit::assert_resume_equivalent(&FishHistory, ZshRule::AnyBackslash, &path, &bytes);
        }
    }

    #[test]
    fn corpus_entries_decode_exactly() {
        let Some((path, bytes)) = testkit::corpus(KIMHYR) else {
            return;
        };
        let run = testkit::run(&FishHistory, ZshRule::AnyBackslash, &path, &bytes);
        let first = &run.actions[0];
        assert_eq!(command(first), "power");
        assert_eq!(
            first.ts.map(|t| t.to_string()),
            Some("2023-01-21T20:47:11Z".into())
        );
        assert_eq!(first.input, serde_json::json!({"command": "power"}));
        let cd = &run.actions[8];
        assert_eq!(
            cd.input,
            serde_json::json!({"command": "cd paru", "paths": ["paru"]})
        );
        assert_eq!(cd.seq, 366 << 8, "byte offset of line 17");
        let multi = run
            .actions
            .iter()
            .find(|a| command(a).starts_with("curl -L http://get.oh-my.fish"))
            .expect("multi-line");
        assert_eq!(
            command(multi),
            "curl -L http://get.oh-my.fish > install\nfish install --uninstall"
        );
        let discord = run
            .actions
            .iter()
            .find(|a| command(a).starts_with("rm -rf BetterDiscord"))
            .expect("escaped backslash");
        assert_eq!(
            command(discord),
            "rm -rf BetterDiscord BetterDiscord\\ Installer/ discord/"
        );
        assert_eq!(
            paths(discord),
            vec!["BetterDiscord", "BetterDiscord\\ Installer/", "discord/"]
        );
        let hg = run
            .actions
            .iter()
            .find(|a| command(a).starts_with("hg clone"))
            .expect("trailing newline");
        assert_eq!(
            command(hg),
            "hg clone https://hg.sr.ht/~scoopta/wlrobs\ncd wlrobs\nmeson build\nninja -C build\n"
        );
        assert_eq!(
            run.actions
                .iter()
                .filter(|a| command(a).contains('\n'))
                .count(),
            bytes
                .split(|&b| b == b'\n')
                .filter(|l| l.starts_with(b"- cmd:") && l.windows(2).any(|w| w == b"\\n"))
                .count()
        );
    }

    const FIXTURE: &str = "---\n\
        - cmd: printf 'a\\\\nb\\n'\n  \
          when: 1700000000\n  \
          paths:\n    \
            - dir\\\\ with\\\\\\\\slash\n    \
            - two\\nlines\n\
        - cmd: - cmd: ls\n  \
          when: 1700000010\n  \
          first_added: 1600000000\n\
        - cmd:    when: 1700000011\n\
        - cmd: odd \\t escape \\\n  \
          when: not-a-number\n\
        - cmd:\n  \
          when: 1700000020\n\
        - cmd:   leading   \n   \
          when: 1700009999\n   \
          paths:\n     \
            - p\n  \
          when: 1\n\
        ...\n\
        - not an entry\n";

    #[test]
    fn fixture_escapes_paths_and_quirks() {
        let path = Path::new("/home/u/.local/share/fish/fish_history");
        let run = testkit::run(
            &FishHistory,
            ZshRule::AnyBackslash,
            path,
            FIXTURE.as_bytes(),
        );
        assert_eq!(run.problems.len(), 1, "{:?}", run.problems);
        assert_eq!(run.problems[0].0.line, 21);
        let got: Vec<(String, Vec<String>, Option<String>)> = run
            .actions
            .iter()
            .map(|a| {
                (
                    command(a).to_string(),
                    paths(a).into_iter().map(str::to_string).collect(),
                    a.ts.map(|t| t.to_string()),
                )
            })
            .collect();
        let expected: Vec<(&str, Vec<&str>, Option<&str>)> = vec![
            (
                "printf 'a\\nb\n'",
                vec!["dir\\ with\\\\slash", "two\nlines"],
                Some("2023-11-14T22:13:20Z"),
            ),
            ("ls", vec![], Some("2023-11-14T22:13:30Z")),
            ("odd \\t escape \\", vec![], None),
            ("leading   ", vec!["p"], Some("2023-11-15T00:59:59Z")),
        ];
        let expected: Vec<(String, Vec<String>, Option<String>)> = expected
            .into_iter()
            .map(|(c, p, t)| {
                (
                    c.to_string(),
                    p.into_iter().map(str::to_string).collect(),
                    t.map(str::to_string),
                )
            })
            .collect();
        assert_eq!(got, expected);
        let id = file_id(path);
        let sessions: Vec<&str> = run.actions.iter().map(|a| a.session.as_str()).collect();
        let s0 = format!("fish:{id}:0");
        let s1 = format!("fish:{id}:1");
        assert_eq!(sessions, vec![&s0, &s0, &s0, &s1]);
        assert_eq!(run.actions[0].seq, 4 << 8, "the entry starts after `---`");
        testkit::assert_resume_equivalent(
            &FishHistory,
            ZshRule::AnyBackslash,
            path,
            FIXTURE.as_bytes(),
        );
    }

    #[test]
    fn unescape_rules() {
        assert_eq!(unescape(b"a\\\\b"), b"a\\b");
        assert_eq!(unescape(b"a\\nb"), b"a\nb");
        assert_eq!(unescape(b"\\\\n"), b"\\n");
        assert_eq!(unescape(b"\\x\\"), b"\\x\\");
        assert_eq!(unescape(b""), b"");
    }

    #[test]
    fn hostile_records_do_not_panic() {
        let mut parser = FishHistory.parser(Path::new("/h"), Some(serde_json::json!({"run": "x"})));
        let pos = Position { offset: 1, line: 1 };
        let mut out = Vec::new();
        let mut big = b"- cmd: ".to_vec();
        big.extend(vec![b'\\'; 1 << 20]);
        let mut many_paths = b"- cmd: x\n  when: 5\n  paths:\n".to_vec();
        for _ in 0..50_000 {
            many_paths.extend(b"    - p\n");
        }
        for record in [
            big,
            many_paths,
            b"- cmd: x\n  when: 99999999999999999999999".to_vec(),
            b"- cmd: x\n  when:".to_vec(),
            b"- cmd: x\n  when".to_vec(),
            b"- cmd: x\n\n  when: 5".to_vec(),
            b"- cmd: \xff\xfe\n  when: 1\n  paths:\n    - \xc3".to_vec(),
            b"- cmd".to_vec(),
            b"".to_vec(),
            b"\0\0\0".to_vec(),
            b"---\n...\n%YAML".to_vec(),
        ] {
            let _ = parser.record(&record, pos, &mut out);
        }
        assert_eq!(out.len(), 7);
        let _ = parser.state();
    }

    #[test]
    fn sniff_claims_fish_histories_only() {
        let files = testkit::corpus_files();
        if files.is_empty() {
            let _ = testkit::corpus("shell-history");
            return;
        }
        for file in files {
            let name = file.to_string_lossy();
            // The 2026 formats folder keeps a fish history of its own, beside the older ones.
            let expected =
                name.contains("/shell-history/fish__") || name.contains("/formats-2026/fish/");
            assert_eq!(
                FishHistory.sniff(&file, &testkit::head(&file)),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn sniff_fixtures() {
        let sniff = |name: &str, content: &[u8]| FishHistory.sniff(Path::new(name), content);
        assert!(sniff("/tmp/x", b"\n- cmd: ls\n  when: 1\n"));
        assert!(sniff("/tmp/fish_history", b"- cmd: ls\n  paths:\n"));
        assert!(!sniff("/tmp/x", b"- cmd: ls\n  paths:\n"));
        assert!(!sniff("/tmp/fish_history", b"ls\n"));
        assert!(!sniff("/tmp/x", b"- 1131566461 2005.11.09 dn228\n"));
        assert!(!sniff("/tmp/x", b""));
    }
}
