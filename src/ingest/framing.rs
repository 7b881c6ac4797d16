//! Cutting a file's bytes into records, incrementally and with a size cap.
//!
//! The tailer reads a file in chunks from its checkpoint and pushes them here. A record is
//! emitted only once it is complete (its final newline seen, and for multi-line framings the
//! next record's start or the end of the file), so a partial last line simply waits for more
//! bytes. A record larger than the cap is skipped while it streams past — never buffered whole —
//! and reported as [`Cut::Oversized`].

use super::adapters::{Framing, Position};

/// A piece of the file, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// A complete record, without its final newline (inner newlines kept, `\r\n` → `\n`).
    Record {
        /// The record.
        bytes: Vec<u8>,
        /// Where it starts.
        pos: Position,
        /// The offset just after it: where reading resumes once it is stored.
        end: u64,
    },
    /// A record over the size cap, skipped.
    Oversized {
        /// Where it starts.
        pos: Position,
        /// Its length in bytes.
        len: u64,
        /// The offset just after it.
        end: u64,
    },
}

/// The incremental record cutter of one file.
#[derive(Debug)]
pub struct Cutter {
    framing: Framing,
    max_record: usize,
    /// The current partial physical line.
    line: Vec<u8>,
    /// The current line's full length; once over the cap, `line` is dropped and only this grows.
    line_len: u64,
    /// Offset and number of the current physical line's start.
    line_start: Position,
    /// The record being assembled from complete lines (multi-line framings).
    record: Vec<u8>,
    record_start: Option<Position>,
    /// Set once the record being assembled went over the cap: only its length is tracked.
    record_len_if_oversized: Option<u64>,
    /// Offset just after the last complete physical line.
    lines_end: u64,
}

impl Cutter {
    /// A cutter starting at `start` (a record boundary, such as a checkpoint).
    pub fn new(framing: Framing, start: Position, max_record: usize) -> Self {
        Cutter {
            framing,
            max_record,
            line: Vec::new(),
            line_len: 0,
            line_start: start,
            record: Vec::new(),
            record_start: None,
            record_len_if_oversized: None,
            lines_end: start.offset,
        }
    }

    /// Feeds the next bytes of the file.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Cut>) {
        while !chunk.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    self.extend_line(&chunk[..i]);
                    chunk = &chunk[i + 1..];
                    self.complete_line(out);
                }
                None => {
                    self.extend_line(chunk);
                    chunk = &[];
                }
            }
        }
    }

    /// Called when no more bytes are available for now. Multi-line records that end with the
    /// last complete line are emitted (their writers write whole entries at once); a partial
    /// last line keeps waiting.
    pub fn flush_at_eof(&mut self, out: &mut Vec<Cut>) {
        if matches!(self.framing, Framing::FishEntries) && self.line_len == 0 {
            self.emit_record(out);
        }
    }

    /// Called when the file is known to be complete (one-shot ingest of a finished file): a
    /// final line without a newline is a record too.
    pub fn finish(&mut self, out: &mut Vec<Cut>) {
        if self.line_len > 0 {
            self.complete_line_without_newline(out);
        }
        self.emit_record(out);
    }

    fn extend_line(&mut self, bytes: &[u8]) {
        self.line_len += bytes.len() as u64;
        if self.line_len <= self.max_record as u64 {
            self.line.extend_from_slice(bytes);
        } else if !self.line.is_empty() {
            self.line = Vec::new();
        }
    }

    fn complete_line(&mut self, out: &mut Vec<Cut>) {
        let end = self.line_start.offset + self.line_len + 1;
        self.take_line(end, out);
    }

    fn complete_line_without_newline(&mut self, out: &mut Vec<Cut>) {
        let end = self.line_start.offset + self.line_len;
        self.take_line(end, out);
    }

    fn take_line(&mut self, end: u64, out: &mut Vec<Cut>) {
        let start = self.line_start;
        let full_len = self.line_len;
        let oversized = full_len > self.max_record as u64;
        let mut line = std::mem::take(&mut self.line);
        self.line_len = 0;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        self.line_start = Position {
            offset: end,
            line: start.line + 1,
        };
        self.lines_end = end;
        match self.framing {
            // A database is never cut into records from bytes (see `ingest::database`).
            Framing::Lines | Framing::WholeFile | Framing::Database => {
                if oversized {
                    out.push(Cut::Oversized {
                        pos: start,
                        len: full_len,
                        end,
                    });
                } else if !line.iter().all(u8::is_ascii_whitespace) {
                    out.push(Cut::Record {
                        bytes: line,
                        pos: start,
                        end,
                    });
                }
            }
            Framing::BashTimestamped => {
                let is_stamp =
                    line.len() > 1 && line[0] == b'#' && line[1..].iter().all(u8::is_ascii_digit);
                self.append_to_record(start, &line, oversized, full_len);
                if !is_stamp {
                    self.emit_record(out);
                }
            }
            Framing::ZshContinuation => {
                // zsh's own rule (readhistline): any trailing backslash continues the entry.
                let continues = line.last() == Some(&b'\\');
                self.append_to_record(start, &line, oversized, full_len);
                if !continues {
                    self.emit_record(out);
                }
            }
            Framing::FishEntries => {
                let starts_entry = line.starts_with(b"- ");
                if starts_entry {
                    // The previous entry ended where this line starts.
                    self.emit_record_ending_at(start.offset, out);
                }
                if starts_entry || self.record_start.is_some() {
                    self.append_to_record(start, &line, oversized, full_len);
                }
            }
        }
    }

    fn append_to_record(&mut self, start: Position, line: &[u8], oversized: bool, full_len: u64) {
        let separator = u64::from(self.record_start.is_some());
        if self.record_start.is_none() {
            self.record_start = Some(start);
        }
        let new_len = self.record.len() as u64 + separator + full_len;
        if oversized || self.record_len_if_oversized.is_some() || new_len > self.max_record as u64 {
            let previous = self
                .record_len_if_oversized
                .unwrap_or(self.record.len() as u64);
            self.record_len_if_oversized = Some(previous + separator + full_len);
            self.record = Vec::new();
            return;
        }
        if separator == 1 {
            self.record.push(b'\n');
        }
        self.record.extend_from_slice(line);
    }

    fn emit_record(&mut self, out: &mut Vec<Cut>) {
        self.emit_record_ending_at(self.lines_end, out);
    }

    fn emit_record_ending_at(&mut self, end: u64, out: &mut Vec<Cut>) {
        let Some(pos) = self.record_start.take() else {
            return;
        };
        let record = std::mem::take(&mut self.record);
        match self.record_len_if_oversized.take() {
            Some(len) => out.push(Cut::Oversized { pos, len, end }),
            None if record.iter().all(u8::is_ascii_whitespace) => {}
            None => out.push(Cut::Record {
                bytes: record,
                pos,
                end,
            }),
        }
    }

    /// The offset before which every byte belongs to an emitted record: a restart resumes here.
    pub fn resume_point(&self) -> Position {
        match self.record_start {
            Some(pos) => pos,
            None => self.line_start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: Position = Position { offset: 0, line: 1 };

    fn cut(framing: Framing, input: &[u8], chunk: usize, max: usize, eof: bool) -> Vec<Cut> {
        let mut cutter = Cutter::new(framing, START, max);
        let mut out = Vec::new();
        for piece in input.chunks(chunk.max(1)) {
            cutter.push(piece, &mut out);
        }
        if eof {
            cutter.finish(&mut out);
        } else {
            cutter.flush_at_eof(&mut out);
        }
        out
    }

    fn records(cuts: &[Cut]) -> Vec<(String, u64, u64, u64)> {
        cuts.iter()
            .map(|c| match c {
                Cut::Record { bytes, pos, end } => (
                    String::from_utf8_lossy(bytes).into_owned(),
                    pos.offset,
                    pos.line,
                    *end,
                ),
                Cut::Oversized { pos, len, end } => {
                    (format!("<{len}>"), pos.offset, pos.line, *end)
                }
            })
            .collect()
    }

    #[test]
    fn lines_wait_for_their_newline_whatever_the_chunking() {
        let input = b"{\"a\":1}\r\n\n{\"b\":2}\npartial";
        for chunk in [1, 2, 3, 7, 100] {
            let got = records(&cut(Framing::Lines, input, chunk, 1000, false));
            assert_eq!(
                got,
                vec![
                    ("{\"a\":1}".into(), 0, 1, 9),
                    ("{\"b\":2}".into(), 10, 3, 18),
                ],
                "chunk {chunk}"
            );
        }
        let got = records(&cut(Framing::Lines, input, 5, 1000, true));
        assert_eq!(got.last(), Some(&("partial".into(), 18, 4, 25)));
    }

    #[test]
    fn oversized_lines_are_skipped_with_their_length() {
        let mut input = b"ok\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 10_000));
        input.extend(b"\nnext\n");
        for chunk in [1, 64, 4096, 20_000] {
            let got = records(&cut(Framing::Lines, &input, chunk, 100, false));
            assert_eq!(
                got,
                vec![
                    ("ok".into(), 0, 1, 3),
                    ("<10000>".into(), 3, 2, 10_004),
                    ("next".into(), 10_004, 3, 10_009),
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn bash_timestamps_attach_to_the_next_line() {
        let input = b"#1700000000\nls -la\n# a comment\n#1700000005\ngit status\n#1700000009\n";
        let got = records(&cut(Framing::BashTimestamped, input, 3, 1000, false));
        assert_eq!(
            got,
            vec![
                ("#1700000000\nls -la".into(), 0, 1, 19),
                ("# a comment".into(), 19, 3, 31),
                ("#1700000005\ngit status".into(), 31, 4, 54),
            ]
        );
    }

    #[test]
    fn zsh_lines_ending_in_a_backslash_continue() {
        // As zsh reads its own file: any trailing backslash joins the next line (the parser
        // splits again where a continued line turns out to start a new `: <ts>:<d>;` entry).
        let input = b": 1:0;echo a \\\nb\n: 2:0;echo c\\\\\nd\n: 3:0;x\n";
        let got = records(&cut(Framing::ZshContinuation, input, 4, 1000, false));
        assert_eq!(
            got,
            vec![
                (": 1:0;echo a \\\nb".into(), 0, 1, 17),
                (": 2:0;echo c\\\\\nd".into(), 17, 3, 34),
                (": 3:0;x".into(), 34, 5, 42),
            ]
        );
    }

    #[test]
    fn fish_entries_end_at_the_next_entry_or_when_the_writer_pauses() {
        let input = b"- cmd: ls\n  when: 1\n  paths:\n    - a\n- cmd: pwd\n  when: 2\n";
        let got = records(&cut(Framing::FishEntries, input, 5, 1000, false));
        assert_eq!(
            got,
            vec![
                ("- cmd: ls\n  when: 1\n  paths:\n    - a".into(), 0, 1, 37),
                ("- cmd: pwd\n  when: 2".into(), 37, 5, 58),
            ]
        );
        // Without the pause, the last entry could still grow: it waits.
        let mut cutter = Cutter::new(Framing::FishEntries, START, 1000);
        let mut out = Vec::new();
        cutter.push(input, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            cutter.resume_point(),
            Position {
                offset: 37,
                line: 5
            }
        );
    }

    #[test]
    fn oversized_multi_line_records_are_skipped_whole() {
        let mut input = b": 1:0;a\\\n".to_vec();
        input.extend(std::iter::repeat_n(b'y', 500));
        input.extend(b"\n: 2:0;b\n");
        let got = records(&cut(Framing::ZshContinuation, &input, 7, 100, false));
        assert_eq!(
            got,
            vec![("<509>".into(), 0, 1, 510), (": 2:0;b".into(), 510, 3, 518)]
        );
    }

    #[test]
    fn resume_point_is_a_record_boundary() {
        let mut cutter = Cutter::new(
            Framing::BashTimestamped,
            Position {
                offset: 100,
                line: 7,
            },
            50,
        );
        let mut out = Vec::new();
        cutter.push(b"pwd\n#1700000000\n", &mut out);
        assert_eq!(out.len(), 1);
        // The timestamp line waits for its command: a restart must re-read it.
        assert_eq!(
            cutter.resume_point(),
            Position {
                offset: 104,
                line: 8
            }
        );
    }
}
