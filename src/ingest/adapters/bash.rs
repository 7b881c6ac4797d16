//! bash history (`~/.bash_history`), plain or with `HISTTIMEFORMAT` timestamps.
//!
//! One format covers both: its framing is [`Framing::BashTimestamped`], and a plain file simply
//! has no timestamp lines. A timestamp line is `#` followed by one or more ASCII digits and
//! nothing else ([`is_timestamp_line`], the framing's rule); a `#` line with anything else (`#
//! a comment`, `#12ab`) is an ordinary history line — bash saves a comment typed at the prompt
//! like any command, and it becomes an action like any command.
//!
//! # What `record()` accepts
//!
//! Zero or more timestamp lines, then the command: `ls -la`, `#1700000000\nls -la`, or
//! `#1699999999\n#1700000000\nls -la` (consecutive stamps: the last one, nearest the command,
//! wins). Everything after the stamps is the command, kept as logged (lines after the first are
//! kept with their `\n`, should a framing ever group a multi-line command). A record with no
//! command after its stamps (a stamp at the end of the file, or before an empty line), or only
//! whitespace, yields nothing. Invalid UTF-8 is decoded lossily: history files contain such
//! bytes, and a command is still a command. There is no record bash's format rejects.
//!
//! Each command becomes one action: tool `shell`, input `{"command": …}`, `ts` from the stamp
//! (an epoch jiff cannot represent gives `None`), no cwd, `result: None` (bash does not record
//! the outcome, and an unknown outcome must not look like a success). `seq` is
//! `pos.offset << 8`. Sessions are cut as `shell_common` describes: at gaps of over 30 minutes
//! between stamps, and every 100 entries without time information — which, in a plain history,
//! is every 100 entries.

use std::path::Path;

use serde_json::{Map, Value};

use super::shell_common::{self, Sessions};
use crate::action::Source;
use crate::ingest::adapters::{Format, Framing, Item, Position, Problem, RecordParser};

/// bash history files.
pub struct BashHistory;

/// Whether `line` is a `HISTTIMEFORMAT` timestamp line: `#` and one or more ASCII digits.
pub fn is_timestamp_line(line: &[u8]) -> bool {
    match line.split_first() {
        Some((b'#', digits)) => !digits.is_empty() && digits.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

impl Format for BashHistory {
    fn source(&self) -> Source {
        Source::Bash
    }

    fn framing(&self) -> Framing {
        Framing::BashTimestamped
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        Box::new(BashParser {
            sessions: Sessions::new(Source::Bash, path, state.as_ref()),
        })
    }

    /// A bash history is plain text lines, so it is recognised conservatively: never a file
    /// with NUL bytes, whose first line opens JSON, or that zsh or fish recognise, nor another
    /// program's history (python, node, psql, …, aider); yes for a name containing
    /// `bash_history`; otherwise only when the name has no extension or contains `history`
    /// *and* the content looks like a command history: at least 20 non-blank lines, 90 % of
    /// the non-stamp ones shaped like a command (a short first word without `=`, `,` or a
    /// trailing `:`, no `#` comment, no `[section]`, no C-like line ending), a median of at
    /// most 40 bytes and 5 words, at most 5 % carrying a clock time (logs) or invalid UTF-8, and
    /// first words repeating (at most half of them distinct).
    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if head.contains(&0) {
            return false;
        }
        let first = shell_common::head_lines(head).find(|l| !shell_common::is_blank(l));
        if let Some(first) = first {
            let first = first.trim_ascii_start();
            if first.starts_with(b"{") || first.starts_with(b"[") {
                return false;
            }
        }
        let name = shell_common::file_name_lower(path);
        if OTHER_HISTORIES.iter().any(|other| name.contains(other)) {
            return false;
        }
        if super::zsh::ZshHistory.sniff(path, head) || super::fish::FishHistory.sniff(path, head) {
            return false;
        }
        if name.contains("bash_history") {
            return true;
        }
        let plain_name = path.extension().is_none() || name.contains("history");
        plain_name && looks_like_history(head)
    }
}

/// Parts of file names of other programs' line histories.
const OTHER_HISTORIES: [&str; 12] = [
    "zsh_history",
    "zhistory",
    "histfile",
    "fish_history",
    "python_history",
    "node_repl_history",
    "psql_history",
    "mysql_history",
    "sqlite_history",
    "irb_history",
    "rediscli_history",
    "aider",
];

struct BashParser {
    sessions: Sessions,
}

impl RecordParser for BashParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        let mut rest = record;
        let mut stamp = None;
        loop {
            let (line, tail) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            if !is_timestamp_line(line) {
                break;
            }
            stamp = Some(line.get(1..).and_then(shell_common::parse_epoch));
            match tail {
                Some(tail) => rest = tail,
                None => return Ok(()),
            }
        }
        if shell_common::is_blank(rest) {
            return Ok(());
        }
        let ts = stamp.flatten();
        let command = String::from_utf8_lossy(rest).into_owned();
        let session = self.sessions.next(ts);
        out.push(Item::Action(shell_common::shell_action(
            Source::Bash,
            session,
            shell_common::seq(pos, 0),
            ts,
            shell_common::command_input(command),
        )));
        Ok(())
    }

    fn state(&self) -> Value {
        let mut state = Map::new();
        self.sessions.save(&mut state);
        Value::Object(state)
    }
}

/// The content test of [`BashHistory::sniff`] for files without the name hint.
fn looks_like_history(head: &[u8]) -> bool {
    let lines: Vec<&[u8]> = shell_common::head_lines(head)
        .filter(|l| !shell_common::is_blank(l))
        .collect();
    if lines.len() < 20 {
        return false;
    }
    let commands: Vec<&[u8]> = lines
        .into_iter()
        .filter(|l| !is_timestamp_line(l))
        .collect();
    if commands.len() < 10 {
        return false;
    }
    let n = commands.len();
    let share = |count: usize| count * 100 / n;
    let command_like = commands.iter().filter(|l| is_command_like(l)).count();
    let clocked = commands.iter().filter(|l| has_clock_time(l)).count();
    let invalid = commands
        .iter()
        .filter(|l| std::str::from_utf8(l).is_err())
        .count();
    let mut lengths: Vec<usize> = commands.iter().map(|l| l.len()).collect();
    let mut words: Vec<usize> = commands
        .iter()
        .map(|l| {
            l.split(u8::is_ascii_whitespace)
                .filter(|w| !w.is_empty())
                .count()
        })
        .collect();
    let mut firsts: Vec<&[u8]> = commands
        .iter()
        .filter_map(|l| l.split(u8::is_ascii_whitespace).find(|w| !w.is_empty()))
        .collect();
    firsts.sort_unstable();
    firsts.dedup();
    share(command_like) >= 90
        && median(&mut lengths) <= 40
        && median(&mut words) <= 5
        && share(clocked) <= 5
        && share(invalid) <= 5
        && share(firsts.len()) <= 50
}

fn median(values: &mut [usize]) -> usize {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// Whether a line is shaped like a command line (for sniffing only).
fn is_command_like(line: &[u8]) -> bool {
    if line.len() > 300 || line.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return false;
    }
    let Some(&first) = line.first() else {
        return false;
    };
    if !(first.is_ascii_alphanumeric() || b"./~_$!(\\\"'".contains(&first)) {
        return false;
    }
    let word = line
        .split(u8::is_ascii_whitespace)
        .next()
        .unwrap_or_default();
    if first == b'.' && !(word == b"." || word.starts_with(b"./") || word.starts_with(b"../")) {
        return false;
    }
    if word.contains(&b'=') || word.contains(&b',') || word.ends_with(b":") {
        return false;
    }
    !matches!(
        line.trim_ascii_end().last(),
        Some(b';' | b'{' | b'}' | b',')
    )
}

/// Whether a line contains a clock time `dd:dd:dd`.
fn has_clock_time(line: &[u8]) -> bool {
    line.windows(8).any(|w| {
        let d = |i: usize| w.get(i).is_some_and(u8::is_ascii_digit);
        d(0) && d(1)
            && w.get(2) == Some(&b':')
            && d(3)
            && d(4)
            && w.get(5) == Some(&b':')
            && d(6)
            && d(7)
    })
}

#[cfg(test)]
mod tests {
    use super::shell_common::file_id;
    use super::shell_common::testkit::{self, ZshRule};
    use super::*;

    const PLAIN_5NIK7: &str = "shell-history/bash__5nik7-dotfiles.bash_history";
    const PLAIN_0EFB6: &str = "shell-history/bash__0EFB6-SH_CONFIG.bash_history";

    fn run(path: &str, bytes: &[u8]) -> testkit::Run {
        testkit::run(&BashHistory, ZshRule::AnyBackslash, Path::new(path), bytes)
    }

    fn command(action: &crate::action::Action) -> &str {
        action.input["command"].as_str().expect("command")
    }

    #[test]
    fn corpus_plain_histories_give_one_action_per_non_blank_line() {
        for (file, lines, blank, sessions) in
            [(PLAIN_5NIK7, 1117, 5, 12), (PLAIN_0EFB6, 2000, 3, 20)]
        {
            let Some((path, bytes)) = testkit::corpus(file) else {
                return;
            };
            // PROVENANCE counts lines; blank lines are not commands.
            assert_eq!(
                bytes.iter().filter(|&&b| b == b'\n').count(),
                lines,
                "{file}"
            );
            let run = testkit::run(&BashHistory, ZshRule::AnyBackslash, &path, &bytes);
            assert!(run.problems.is_empty(), "{file}: {:?}", run.problems);
            assert_eq!(run.actions.len(), lines - blank, "{file}");
            assert!(
                run.actions
                    .iter()
                    .all(|a| a.ts.is_none() && a.result.is_none())
            );
            assert!(
                run.actions
                    .iter()
                    .all(|a| a.tool == "shell" && a.cwd.is_none())
            );
            assert!(run.actions.iter().all(|a| a.source == Source::Bash));
            // No timestamps: runs of 100 entries.
            let mut ids: Vec<&str> = run.actions.iter().map(|a| a.session.as_str()).collect();
            ids.dedup();
            assert_eq!(ids.len(), sessions, "{file}");
            let id = file_id(&path);
            assert_eq!(ids[0], format!("bash:{id}:0"));
            assert_eq!(run.actions[99].session, format!("bash:{id}:0"));
            assert_eq!(run.actions[100].session, format!("bash:{id}:1"));
            assert!(run.actions.windows(2).all(|w| w[0].seq < w[1].seq));
            testkit::assert_resume_equivalent(&BashHistory, ZshRule::AnyBackslash, &path, &bytes);
        }
    }

    #[test]
    fn corpus_commands_are_kept_as_typed() {
        let Some((path, bytes)) = testkit::corpus(PLAIN_5NIK7) else {
            return;
        };
        let run = testkit::run(&BashHistory, ZshRule::AnyBackslash, &path, &bytes);
        assert_eq!(command(&run.actions[0]), "pwd");
        assert_eq!(run.actions[0].seq, 0);
        assert_eq!(run.actions[1].seq, 4 << 8, "offset of line 2, shifted");
        let rustup = run
            .actions
            .iter()
            .find(|a| command(a).starts_with("curl --proto"))
            .expect("the rustup line");
        assert_eq!(
            command(rustup),
            "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"
        );
        assert_eq!(rustup.input.as_object().map(|o| o.len()), Some(1));

        let Some((path, bytes)) = testkit::corpus(PLAIN_0EFB6) else {
            return;
        };
        let run = testkit::run(&BashHistory, ZshRule::AnyBackslash, &path, &bytes);
        // Trailing spaces are part of what was typed.
        assert_eq!(command(&run.actions[12]), "cpulive ");
    }

    const STAMPED: &str = "#1700000000\n\
        ls -la\n\
        # a comment, not a stamp\n\
        #1700000005\n\
        git status\n\
        #12ab\n\
        #1700000009\n\
        #1700000010\n\
        cargo test\n\
        \n\
        echo no stamp\n\
        #1700003000\n\
        make\n\
        #99999999999999999999\n\
        weird stamp\n\
        #1700003001\n";

    #[test]
    fn timestamped_fixture() {
        let run = run("/home/u/.bash_history", STAMPED.as_bytes());
        assert!(run.problems.is_empty());
        let got: Vec<(&str, Option<String>)> = run
            .actions
            .iter()
            .map(|a| (command(a), a.ts.map(|t| t.to_string())))
            .collect();
        assert_eq!(
            got,
            vec![
                ("ls -la", Some("2023-11-14T22:13:20Z".into())),
                ("# a comment, not a stamp", None),
                ("git status", Some("2023-11-14T22:13:25Z".into())),
                ("#12ab", None),
                ("cargo test", Some("2023-11-14T22:13:30Z".into())),
                ("echo no stamp", None),
                ("make", Some("2023-11-14T23:03:20Z".into())),
                ("weird stamp", None),
            ]
        );
        let id = file_id(Path::new("/home/u/.bash_history"));
        let sessions: Vec<&str> = run.actions.iter().map(|a| a.session.as_str()).collect();
        let s0 = format!("bash:{id}:0");
        let s1 = format!("bash:{id}:1");
        // `make` comes 49 minutes after `cargo test`: a new session.
        assert_eq!(sessions, vec![&s0, &s0, &s0, &s0, &s0, &s0, &s1, &s1]);
        assert_eq!(run.actions[0].seq, 0);
        assert_eq!(run.actions[1].seq, 19 << 8);
        assert!(run.actions.iter().all(|a| a.result.is_none()));
        testkit::assert_resume_equivalent(
            &BashHistory,
            ZshRule::AnyBackslash,
            Path::new("/home/u/.bash_history"),
            STAMPED.as_bytes(),
        );
    }

    #[test]
    fn records_of_every_shape() {
        let mut parser = BashHistory.parser(Path::new("/h"), None);
        let pos = Position { offset: 7, line: 2 };
        let mut out = Vec::new();
        for record in [
            &b""[..],
            b"   \t",
            b"#1700000000",
            b"#1700000000\n",
            b"#1700000000\n   ",
            b"#1\n#2\n",
        ] {
            parser
                .record(record, pos, &mut out)
                .expect("never a problem");
        }
        assert!(out.is_empty(), "{out:?}");
        parser
            .record(b"#1700000000\nline one\nline two", pos, &mut out)
            .expect("ok");
        parser
            .record(b"caf\xc3\xa9 \xff\xfe", pos, &mut out)
            .expect("ok");
        parser.record(b"#", pos, &mut out).expect("ok");
        let commands: Vec<String> = out
            .iter()
            .map(|item| match item {
                Item::Action(a) => command(a).to_string(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            commands,
            vec!["line one\nline two", "café \u{fffd}\u{fffd}", "#"]
        );
    }

    #[test]
    fn hostile_records_do_not_panic() {
        let mut parser = BashHistory.parser(Path::new(""), Some(serde_json::json!([1])));
        let mut out = Vec::new();
        let pos = Position {
            offset: u64::MAX,
            line: u64::MAX,
        };
        let big = vec![b'x'; 1 << 20];
        let mut stamped_big = b"#1700000000\n".to_vec();
        stamped_big.extend(&big);
        let mut many_stamps = Vec::new();
        for _ in 0..10_000 {
            many_stamps.extend(b"#1700000000\n");
        }
        for record in [
            big.clone(),
            stamped_big,
            many_stamps,
            vec![0xff; 1000],
            vec![0; 10],
            b"#-1\n#\n#\n".to_vec(),
            b"\n\n\n".to_vec(),
        ] {
            let _ = parser.record(&record, pos, &mut out);
        }
        assert_eq!(out.len(), 5);
        let _ = parser.state();
    }

    #[test]
    fn sniff_claims_bash_histories_only() {
        let files = testkit::corpus_files();
        if files.is_empty() {
            let _ = testkit::corpus("shell-history");
            return;
        }
        for file in files {
            let name = file.to_string_lossy();
            let expected = name.contains("/shell-history/bash__");
            assert_eq!(
                BashHistory.sniff(&file, &testkit::head(&file)),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn sniff_fixtures() {
        let sniff = |name: &str, content: &[u8]| BashHistory.sniff(Path::new(name), content);
        assert!(sniff("/home/u/.bash_history", b""));
        assert!(sniff("/home/u/.bash_history", STAMPED.as_bytes()));
        assert!(sniff("/home/u/.bash_history", b"ls\n\xff\xfe odd bytes\n"));
        assert!(!sniff("/home/u/.bash_history", b"{\"type\":\"x\"}\n"));
        assert!(!sniff("/home/u/.bash_history", b": 1700000000:0;ls\n"));
        assert!(!sniff("/home/u/.bash_history", b"ls\0\n"));
        assert!(!sniff("/home/u/.zsh_history", b"ls\ncd\n"));
        assert!(!sniff("/home/u/.python_history", b"import os\n"));

        // Without the name hint: the content must look like a history.
        let mut history = String::new();
        for i in 0..30 {
            history.push_str(&format!("#17000000{i:02}\n"));
            history.push_str(["ls", "cd src", "git status", "cargo build"][i % 4]);
            history.push('\n');
        }
        assert!(sniff("/tmp/saved-history", history.as_bytes()));
        assert!(sniff("/tmp/hist", history.as_bytes()));
        assert!(!sniff("/tmp/hist.vim", history.as_bytes()), "an extension");
        assert!(
            !sniff("/tmp/hist", &history.as_bytes()[..100]),
            "too few lines"
        );
        let mut log = String::new();
        for i in 0..30 {
            log.push_str(&format!("sshd 10:00:{i:02} ok\n"));
        }
        assert!(!sniff("/tmp/hist", log.as_bytes()), "clock times");
        let mut config = String::new();
        for i in 0..30 {
            config.push_str(&format!("key{i}=value\n"));
        }
        assert!(!sniff("/tmp/hist", config.as_bytes()), "assignments");
        let mut prose = String::new();
        for i in 0..30 {
            prose.push_str(&format!(
                "Word{i} is a line of prose that goes on for a while.\n"
            ));
        }
        assert!(!sniff("/tmp/hist", prose.as_bytes()), "prose");
    }
}
