//! zsh history (`~/.zsh_history`), with `EXTENDED_HISTORY` (`: <start>:<elapsed>;<command>`)
//! or plain (one command per entry, no prefix).
//!
//! How zsh writes its file (`savehistfile` in `Src/hist.c`): the metafied command text, each
//! newline in it preceded by a backslash, after the `: <start>:<elapsed>;` prefix when
//! `EXTENDED_HISTORY` is set — or, in the plain format, after a `\` when the command starts
//! with `:`. zsh escapes nothing else: a backslash in a command is written as it is.
//!
//! # What `record()` accepts, and what it makes of it
//!
//! One record of [`Framing::ZshContinuation`]: physical lines joined with `\n`, as written.
//!
//! * **Entries.** A record is one entry, except that a physical line after the first one that
//!   carries its own extended prefix starts another entry. zsh's reader joins a line ending in
//!   a backslash with the next whatever that is, so a command that itself ended with a
//!   backslash (an interrupted continuation, `vim state_db.c\`) swallows the following entry;
//!   splitting at the prefix gives back both (5 such entries in the AnaTofuZ corpus file). At
//!   most 256 entries are taken from one record; anything after the 255th split stays in the
//!   last entry.
//! * **Command text.** The backslash zsh wrote before each embedded newline is removed, which
//!   is exactly what zsh's own reader does: the command is again the multi-line text the user
//!   entered, a valid shell command line (`for …\ndo …\ndone`). A backslash the user typed as a
//!   line continuation stays, followed by its newline (`./configure \` ⏎ `--prefix=…`); a
//!   backslash that ends the entry is the user's and stays too.
//! * **Metafied bytes.** zsh stores the bytes 0x00 and 0x83–0x9f, 0xa0 and a few others as
//!   `0x83` (Meta) followed by the byte XOR 0x20. The text is unmetafied (drop each 0x83, XOR
//!   the next byte with 0x20) and then decoded as UTF-8; should that fail while the raw bytes
//!   are valid UTF-8 (a file another program wrote without metafying), the raw bytes are used,
//!   and otherwise the unmetafied bytes are decoded lossily.
//! * **Timestamps.** `<start>` gives `ts`; entries without the prefix have none (`\:` at the
//!   start of a plain entry is unescaped to `:`). `<elapsed>` is whole seconds (0 both for
//!   "under a second" and "not known"); it cannot be kept: history does not say how a command
//!   ended, so `result` is `None` (an unknown outcome must not look like a success to the error
//!   miner), and `duration_ms` exists only inside a result.
//! * **Problems.** A first line that starts like an extended prefix (`: ` and a digit) but is
//!   not one is a problem. So is a record that continues the previous one: when the framing ends
//!   a record at a line ending in an even number of backslashes (see below) and the next line
//!   has no prefix, that next line is the rest of the previous command, which has already been
//!   emitted; it is reported instead of becoming a bogus command of its own. Empty commands
//!   yield nothing.
//!
//! The framing as documented (an *odd* number of trailing backslashes continues a record)
//! differs from zsh's reader (*any* trailing backslash continues): a command line the user
//! continued with `\` is written as `\\` + newline, so with the documented rule its later lines
//! arrive as separate records (3 commands, 6 fragments in the AnaTofuZ corpus file), which this
//! parser reports as problems. With zsh's rule they arrive whole.
//!
//! Each entry becomes one action: tool `shell`, input `{"command": …}`, no cwd, `result: None`,
//! `seq` = `pos.offset << 8 | <entry index in the record>`. Sessions are cut as
//! `shell_common` describes; the parser's state is the session state plus whether the last
//! record ended with a backslash.

use std::path::Path;

use serde_json::{Map, Value};

use super::shell_common::{self, Sessions};
use crate::action::Source;
use crate::ingest::adapters::{Format, Framing, Item, Position, Problem, RecordParser};

/// zsh history files.
pub struct ZshHistory;

/// zsh's Meta byte.
const META: u8 = 0x83;

impl Format for ZshHistory {
    fn source(&self) -> Source {
        Source::Zsh
    }

    fn framing(&self) -> Framing {
        Framing::ZshContinuation
    }

    fn parser(&self, path: &Path, state: Option<Value>) -> Box<dyn RecordParser> {
        let continued = state
            .as_ref()
            .and_then(|s| s.get("continued"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Box::new(ZshParser {
            sessions: Sessions::new(Source::Zsh, path, state.as_ref()),
            continued,
        })
    }

    /// An `EXTENDED_HISTORY` file: the first non-blank line and at least half of all non-blank
    /// lines start with `: <digits>:<digits>;`. A plain zsh history looks like any other list
    /// of commands, so it is recognised by its name only (`zsh_history`, `.zhistory`,
    /// `.histfile`), provided it has no NUL bytes and does not start like JSON or fish.
    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if head.contains(&0) {
            return false;
        }
        let lines: Vec<&[u8]> = shell_common::head_lines(head)
            .filter(|l| !shell_common::is_blank(l))
            .collect();
        let extended = lines
            .iter()
            .filter(|l| extended_prefix(l).is_some())
            .count();
        if lines.first().is_some_and(|l| extended_prefix(l).is_some())
            && extended * 2 >= lines.len()
        {
            return true;
        }
        let name = shell_common::file_name_lower(path);
        let named = name.contains("zsh_history") || name == ".zhistory" || name == ".histfile";
        let foreign = lines.first().is_some_and(|l| {
            let l = l.trim_ascii_start();
            l.starts_with(b"{") || l.starts_with(b"[") || l.starts_with(b"- cmd:")
        });
        named && !foreign
    }
}

struct ZshParser {
    sessions: Sessions,
    /// Whether the last record's last line ended with a backslash.
    continued: bool,
}

impl RecordParser for ZshParser {
    fn record(&mut self, record: &[u8], pos: Position, out: &mut Vec<Item>) -> Result<(), Problem> {
        let lines: Vec<&[u8]> = record.split(|&b| b == b'\n').collect();
        let ends_continued = lines.last().is_some_and(|l| l.ends_with(b"\\"));
        let was_continued = std::mem::replace(&mut self.continued, ends_continued);
        let Some((&first, _)) = lines.split_first() else {
            return Ok(());
        };
        if shell_common::is_blank(record) {
            return Ok(());
        }
        let first_prefix = extended_prefix(first);
        if first_prefix.is_none() {
            if was_continued {
                return Err(Problem::new(
                    "continuation of the previous zsh entry, cut off from it: that entry's last \
                     line ended with an even number of backslashes",
                ));
            }
            if first.starts_with(b": ") && first.get(2).is_some_and(u8::is_ascii_digit) {
                return Err(Problem::new(
                    "malformed EXTENDED_HISTORY prefix (expected `: <start>:<elapsed>;`)",
                ));
            }
        }

        // Entry boundaries: the first line, and later lines with their own prefix.
        let mut starts = vec![0];
        for (i, line) in lines.iter().enumerate().skip(1) {
            if starts.len() < 256 && extended_prefix(line).is_some() {
                starts.push(i);
            }
        }
        for (index, &start) in starts.iter().enumerate() {
            let end = starts.get(index + 1).copied().unwrap_or(lines.len());
            let entry = lines.get(start..end).unwrap_or_default();
            let Some((&head, rest)) = entry.split_first() else {
                continue;
            };
            let (ts, body) = match extended_prefix(head) {
                Some(prefix) => prefix,
                None => (
                    None,
                    head.strip_prefix(b"\\")
                        .filter(|b| b.starts_with(b":"))
                        .unwrap_or(head),
                ),
            };
            let mut raw = body.to_vec();
            for line in rest {
                if raw.last() == Some(&b'\\') {
                    raw.pop();
                }
                raw.push(b'\n');
                raw.extend_from_slice(line);
            }
            let command = decode(&raw);
            if command.trim().is_empty() {
                continue;
            }
            let session = self.sessions.next(ts);
            out.push(Item::Action(shell_common::shell_action(
                Source::Zsh,
                session,
                shell_common::seq(pos, index),
                ts,
                shell_common::command_input(command),
            )));
        }
        Ok(())
    }

    fn state(&self) -> Value {
        let mut state = Map::new();
        self.sessions.save(&mut state);
        state.insert("continued".into(), Value::Bool(self.continued));
        Value::Object(state)
    }
}

/// Splits `: <start>:<elapsed>;` off a line: the start time (`None` when it does not fit) and
/// the command text. `None` when the line has no such prefix.
fn extended_prefix(line: &[u8]) -> Option<(Option<i64>, &[u8])> {
    let rest = line.strip_prefix(b": ")?;
    let (start, rest) = number(rest)?;
    let rest = rest.strip_prefix(b":")?;
    let (_elapsed, rest) = number(rest)?;
    let body = rest.strip_prefix(b";")?;
    Some((shell_common::parse_epoch(start), body))
}

/// An optionally negative run of digits at the start of `bytes`, and what follows it.
fn number(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let sign = usize::from(bytes.first() == Some(&b'-'));
    let digits = bytes
        .iter()
        .skip(sign)
        .take_while(|b| b.is_ascii_digit())
        .count();
    (digits > 0).then(|| bytes.split_at(sign + digits))
}

/// Undoes zsh's metafication: each Meta byte is dropped and the byte after it XORed with 0x20.
/// A Meta byte at the very end is kept.
pub fn unmetafy(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut iter = bytes.iter();
    while let Some(&b) = iter.next() {
        if b == META {
            match iter.next() {
                Some(&next) => out.push(next ^ 0x20),
                None => out.push(b),
            }
        } else {
            out.push(b);
        }
    }
    out
}

/// The command text of zsh's raw bytes (see the module documentation).
fn decode(raw: &[u8]) -> String {
    if !raw.contains(&META) {
        return String::from_utf8_lossy(raw).into_owned();
    }
    match String::from_utf8(unmetafy(raw)) {
        Ok(text) => text,
        Err(err) => match std::str::from_utf8(raw) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::shell_common::file_id;
    use super::shell_common::testkit::{self, ZshRule};
    use super::*;
    use crate::action::Action;

    const ANATOFUZ: &str = "shell-history/zsh__AnaTofuZ-Dotfiles.zsh_history";
    const BBISCHOF: &str = "shell-history/zsh__BBischof-dotfiles.zsh_history";

    fn command(action: &Action) -> &str {
        action.input["command"].as_str().expect("command")
    }

    fn ts(action: &Action) -> Option<String> {
        action.ts.map(|t| t.to_string())
    }

    fn find<'a>(actions: &'a [Action], text: &str) -> &'a Action {
        actions
            .iter()
            .find(|a| command(a) == text)
            .unwrap_or_else(|| panic!("no command {text:?}"))
    }

    #[test]
    fn corpus_anatofuz_with_zsh_reader_rule() {
        let Some((path, bytes)) = testkit::corpus(ANATOFUZ) else {
            return;
        };
        let run = testkit::run(&ZshHistory, ZshRule::AnyBackslash, &path, &bytes);
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        // 11330 entries, one of them empty: line 5890 is `: 1560318924:0;\` and a blank
        // line, what zsh writes for a command that is a lone newline.
        let prefixed = bytes
            .split(|&b| b == b'\n')
            .filter(|l| extended_prefix(l).is_some());
        assert_eq!(prefixed.count(), 11330);
        assert_eq!(run.actions.len(), 11329);
        let stamps: BTreeSet<i64> = run
            .actions
            .iter()
            .map(|a| a.ts.expect("every entry is timestamped").as_second())
            .collect();
        assert_eq!(stamps.len(), 3881);
        // PROVENANCE's "123 backslash-continued" counts the physical lines ending in a
        // backslash: 118 of them continue an entry (61 multi-line entries, one of them the
        // empty one), 5 end an entry whose command itself ends with a backslash.
        let physical = bytes
            .split(|&b| b == b'\n')
            .filter(|l| l.ends_with(b"\\"))
            .count();
        assert_eq!(physical, 123);
        let multi: Vec<&Action> = run
            .actions
            .iter()
            .filter(|a| command(a).contains('\n'))
            .collect();
        assert_eq!(multi.len(), 60);
        assert_eq!(
            multi
                .iter()
                .map(|a| command(a).matches('\n').count())
                .sum::<usize>(),
            117
        );
        assert_eq!(
            run.actions
                .iter()
                .filter(|a| command(a).ends_with('\\'))
                .count(),
            5
        );
        // Metafied bytes decode to the right characters, and nothing is left undecodable.
        assert!(run.actions.iter().all(|a| !command(a).contains('\u{fffd}')));
        assert!(run.actions.iter().all(|a| !command(a).contains('\u{83}')));
        let grep = find(&run.actions, "grep くれぐれも pattern/*");
        assert_eq!(ts(grep), Some("2019-06-12T08:57:21Z".into()));
        find(&run.actions, "ojichat ゆず | pbcopy");
        find(&run.actions, "open ~/Documents/Books/実践Rust.pdf");
        find(
            &run.actions,
            "mv ~/Desktop/Appleショッピングクレジット【OricoWebクレジット】.pdf .",
        );
        // A continued command line comes back as typed: backslash, newline, next line.
        let configure = run
            .actions
            .iter()
            .find(|a| {
                command(a).starts_with("../CbC_gcc/configure")
                    && a.ts.is_some_and(|t| t.as_second() == 1_561_859_430)
            })
            .expect("configure");
        assert_eq!(
            command(configure),
            "../CbC_gcc/configure CFLAGS=\"-g3 -O0\" --prefix=$PWD \\\n    \
             --disable-nls --disable-bootstrap --enable-languages=c \\\n    \
             --enable-checking=tree,rtl,assert,types"
        );
        // An embedded newline zsh escaped becomes a newline (a JSON document typed as an
        // argument, with metafied Japanese inside).
        let json = run
            .actions
            .iter()
            .find(|a| command(a).starts_with("mv hatena.pl {"))
            .expect("json");
        assert!(command(json).contains("\n      \"title\": \"GitHubアカウント\",\n"));
        assert!(!command(json).contains("\\\n"));
        // An entry ending with a backslash does not swallow the next one.
        let pos = run
            .actions
            .iter()
            .position(|a| command(a) == "vim state_db.c\\")
            .expect("interrupted entry");
        assert_eq!(command(&run.actions[pos + 1]), "vim state_db.c");
        assert_eq!(
            ts(&run.actions[pos + 1]),
            Some("2019-06-25T10:33:02Z".into())
        );
        assert_eq!(
            run.actions[pos].seq + 1,
            run.actions[pos + 1].seq,
            "same record, index 1"
        );
        assert!(run.actions.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(
            run.actions
                .iter()
                .all(|a| a.result.is_none() && a.tool == "shell")
        );

        // Sessions: 30-minute gaps, and the 5297 entries imported under one timestamp are cut
        // into runs of 100.
        let id = file_id(&path);
        assert_eq!(run.actions[0].session, format!("zsh:{id}:0"));
        assert_eq!(run.actions[100].session, format!("zsh:{id}:1"));
        let mut sessions: Vec<&str> = run.actions.iter().map(|a| a.session.as_str()).collect();
        sessions.dedup();
        let distinct: BTreeSet<&str> = sessions.iter().copied().collect();
        assert_eq!(sessions.len(), distinct.len(), "sessions are contiguous");
        assert_eq!(sessions.len(), 165);
        testkit::assert_resume_equivalent(&ZshHistory, ZshRule::AnyBackslash, &path, &bytes);
    }

    #[test]
    fn corpus_anatofuz_with_the_documented_framing() {
        let Some((path, bytes)) = testkit::corpus(ANATOFUZ) else {
            return;
        };
        let run = testkit::run(&ZshHistory, ZshRule::OddBackslashes, &path, &bytes);
        assert_eq!(run.actions.len(), 11329);
        let lines: Vec<u64> = run.problems.iter().map(|(pos, _)| pos.line).collect();
        assert_eq!(lines, vec![5498, 5499, 5505, 5506, 11226, 11227]);
        assert!(
            run.problems[0]
                .1
                .reason
                .contains("even number of backslashes")
        );
        // The first line of each such command is all that arrives of it.
        find(
            &run.actions,
            "../CbC_gcc/configure CFLAGS=\"-g3 -O0\" --prefix=$PWD \\\\",
        );
        testkit::assert_resume_equivalent(&ZshHistory, ZshRule::OddBackslashes, &path, &bytes);
    }

    #[test]
    fn corpus_bbischof() {
        let Some((path, bytes)) = testkit::corpus(BBISCHOF) else {
            return;
        };
        let run = testkit::run(&ZshHistory, ZshRule::AnyBackslash, &path, &bytes);
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        assert_eq!(run.actions.len(), 298);
        assert_eq!(command(&run.actions[0]), "ll");
        assert_eq!(ts(&run.actions[0]), Some("2022-12-19T18:39:56Z".into()));
        let ps1 = find(
            &run.actions,
            "PS1='%(?.%F{green}√.%F{red}?%?)%f %B%F{240}%1~%f%b %# '",
        );
        assert_eq!(ts(ps1), Some("2022-12-13T06:35:37Z".into()));
        assert!(run.actions.iter().all(|a| !command(a).contains('\u{fffd}')));
        testkit::assert_resume_equivalent(&ZshHistory, ZshRule::AnyBackslash, &path, &bytes);
    }

    /// Entries as zsh writes them: `echo c\\` is a command ending in two backslashes (zsh
    /// escapes no backslash), `echo a \` + newline is a command with a newline in it, and
    /// `./configure \\` + newline is a user's line continuation.
    const FIXTURE: &[u8] = b": 1700000000:0;echo a \\\nb\n\
        : 1700000001:2;echo c\\\\\n\
        : 1700000002:0;x\n\
        : 1700000003:0;./configure \\\\\n  --prefix=/usr\n\
        : 1700000004:0;vim main.c\\\n\
        : 1700000005:0;vim main.c\n\
        \\:colon first\n\
        plain \xe3\x82\x83\xa6 meta\n\
        : 1700009999:0;late\n";

    fn fixture(rule: ZshRule) -> testkit::Run {
        testkit::run(
            &ZshHistory,
            rule,
            Path::new("/home/u/.zsh_history"),
            FIXTURE,
        )
    }

    #[test]
    fn fixture_with_either_continuation_rule() {
        let expected_zsh: Vec<(&str, Option<&str>)> = vec![
            ("echo a \nb", Some("2023-11-14T22:13:20Z")),
            ("echo c\\\\", Some("2023-11-14T22:13:21Z")),
            ("x", Some("2023-11-14T22:13:22Z")),
            (
                "./configure \\\n  --prefix=/usr",
                Some("2023-11-14T22:13:23Z"),
            ),
            ("vim main.c\\", Some("2023-11-14T22:13:24Z")),
            ("vim main.c", Some("2023-11-14T22:13:25Z")),
            (":colon first", None),
            ("plain ゆ meta", None),
            ("late", Some("2023-11-15T00:59:59Z")),
        ];
        let got = |run: &testkit::Run| -> Vec<(String, Option<String>)> {
            run.actions
                .iter()
                .map(|a| (command(a).to_string(), ts(a)))
                .collect()
        };
        let owned = |v: &[(&str, Option<&str>)]| -> Vec<(String, Option<String>)> {
            v.iter()
                .map(|(c, t)| (c.to_string(), t.map(str::to_string)))
                .collect()
        };

        let zsh = fixture(ZshRule::AnyBackslash);
        assert!(zsh.problems.is_empty(), "{:?}", zsh.problems);
        assert_eq!(got(&zsh), owned(&expected_zsh));
        let id = file_id(Path::new("/home/u/.zsh_history"));
        let sessions: Vec<&str> = zsh.actions.iter().map(|a| a.session.as_str()).collect();
        assert_eq!(sessions[7], format!("zsh:{id}:0"));
        assert_eq!(sessions[8], format!("zsh:{id}:1"), "2.8 hours later");

        // The documented framing: `echo c\\` ends its record too (an even number), but the
        // continued `./configure` line is cut off from its continuation, which is reported.
        let odd = fixture(ZshRule::OddBackslashes);
        assert_eq!(odd.problems.len(), 1);
        assert_eq!(odd.problems[0].0.line, 6);
        let mut expected_odd = expected_zsh.clone();
        expected_odd[3].0 = "./configure \\\\";
        assert_eq!(got(&odd), owned(&expected_odd));

        for rule in [ZshRule::AnyBackslash, ZshRule::OddBackslashes] {
            testkit::assert_resume_equivalent(
                &ZshHistory,
                rule,
                Path::new("/home/u/.zsh_history"),
                FIXTURE,
            );
        }
    }

    #[test]
    fn unmetafy_and_decode() {
        assert_eq!(unmetafy(b"a\x83\xa3b"), b"a\x83b");
        assert_eq!(unmetafy(b"\x83 "), b"\0");
        assert_eq!(unmetafy(b"end\x83"), b"end\x83");
        // ゆ = E3 82 86: zsh writes E3 82 83 A6.
        assert_eq!(decode(b"\xe3\x82\x83\xa6"), "ゆ");
        // Valid UTF-8 that was never metafied is kept (ャ = E3 83 A3).
        assert_eq!(decode("ャ".as_bytes()), "ャ");
        assert_eq!(decode(b"\xff\x83\xa3"), "\u{fffd}\u{fffd}");
    }

    #[test]
    fn malformed_and_hostile_records() {
        let mut parser = ZshHistory.parser(Path::new("/h"), None);
        let pos = Position { offset: 0, line: 1 };
        let mut out = Vec::new();
        assert!(parser.record(b": 1700000000:0", pos, &mut out).is_err());
        assert!(parser.record(b": 17x:0;ls", pos, &mut out).is_err());
        assert!(parser.record(b": 1700000000:0;", pos, &mut out).is_ok());
        assert!(parser.record(b"", pos, &mut out).is_ok());
        assert!(parser.record(b"  ", pos, &mut out).is_ok());
        assert!(out.is_empty());
        // `: ` followed by something else is the `:` builtin, a command.
        parser.record(b": > file", pos, &mut out).expect("ok");
        parser
            .record(b": 99999999999999999999:0;big", pos, &mut out)
            .expect("ok");
        parser.record(b": -5:-1;neg", pos, &mut out).expect("ok");
        let got: Vec<(String, Option<jiff::Timestamp>)> = out
            .iter()
            .map(|i| match i {
                Item::Action(a) => (command(a).to_string(), a.ts),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got[0], (": > file".to_string(), None));
        assert_eq!(got[1], ("big".to_string(), None));
        assert_eq!(got[2].1.map(|t| t.as_second()), Some(-5));

        let mut parser = ZshHistory.parser(Path::new("/h"), Some(serde_json::json!("junk")));
        let mut many = Vec::new();
        for i in 0..1000 {
            many.extend(format!(": {i}:0;c{i}\\\n").as_bytes());
        }
        many.extend(b"end");
        let mut out = Vec::new();
        parser.record(&many, pos, &mut out).expect("ok");
        assert_eq!(out.len(), 256, "at most 256 entries from one record");
        let seqs: Vec<u64> = out
            .iter()
            .map(|i| match i {
                Item::Action(a) => a.seq,
                _ => 0,
            })
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        for record in [
            vec![b'y'; 1 << 20],
            vec![0x83; 1 << 20],
            vec![b'\\'; 1 << 20],
            vec![0xff, 0, b'\n', b'\\', b'\n'],
            b"\n\n\n".to_vec(),
        ] {
            let _ = parser.record(&record, pos, &mut out);
        }
        let _ = parser.state();
    }

    #[test]
    fn sniff_claims_zsh_histories_only() {
        let files = testkit::corpus_files();
        if files.is_empty() {
            let _ = testkit::corpus("shell-history");
            return;
        }
        for file in files {
            let name = file.to_string_lossy();
            let expected = name.contains("/shell-history/zsh__");
            assert_eq!(
                ZshHistory.sniff(&file, &testkit::head(&file)),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn sniff_fixtures() {
        let sniff = |name: &str, content: &[u8]| ZshHistory.sniff(Path::new(name), content);
        assert!(sniff("/tmp/anything", FIXTURE));
        assert!(sniff("/home/u/.zsh_history", b"ls\ncd /\n"));
        assert!(sniff("/home/u/.histfile", b""));
        assert!(!sniff("/tmp/anything", b"ls\ncd /\n"));
        assert!(!sniff("/home/u/.zsh_history", b"{\"a\":1}\n"));
        assert!(!sniff("/tmp/x", b": 1:0;a\nb\nc\nd\n"), "mostly unprefixed");
        assert!(!sniff("/tmp/x", b": 1:0;a\0\n"));
    }
}
