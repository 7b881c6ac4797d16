//! Reading one file from its checkpoint into batches: identity checks (truncation, rotation,
//! rewrite), framing, parsing, redaction and output capping.
//!
//! The reader does file I/O and CPU work only; storing is the caller's (the daemon sends batches
//! to the store's writer, one-shot ingest applies them directly). Memory is bounded by the batch
//! size and the record cap, whatever the file holds.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::adapters::{Format, Framing, Position};
use super::framing::{Cut, Cutter};
use super::redact::Redactor;
use super::sanitize::{FileKey, Sanitizer};
use super::store::{Batch, Checkpoint, Generation, Probe};

/// How many leading bytes identify a file's content.
pub const FINGERPRINT_BYTES: u64 = 1024;

/// How many bytes before a checkpoint its tail hash covers: the same bytes there mean the
/// content read is still in place (or, found elsewhere in a rewritten file, where it went).
pub const TAIL_BYTES: u64 = 1024;

/// Limits and behaviour of a read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Largest record parsed; larger ones are skipped and counted.
    pub max_record: usize,
    /// Largest whole-file document read.
    pub max_whole_file: u64,
    /// Output excerpts keep this many bytes (half head, half tail).
    pub output_cap: usize,
    /// A batch is handed over after this many bytes of input.
    pub batch_bytes: u64,
    /// The file is complete (one-shot ingest): a last line without newline is a record.
    pub complete: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_record: 16 << 20,
            max_whole_file: 256 << 20,
            output_cap: 16 << 10,
            batch_bytes: 4 << 20,
            complete: false,
        }
    }
}

impl ReadOptions {
    /// The options the configuration's `[ingest]` table asks for; `complete` is the caller's.
    pub fn from_settings(settings: &crate::config::IngestSettings, complete: bool) -> Self {
        ReadOptions {
            max_record: settings.max_record_kib.value as usize * 1024,
            output_cap: settings.output_cap_kib.value as usize * 1024,
            complete,
            ..ReadOptions::default()
        }
    }
}

/// A file that could not be read at all (as opposed to bad records in it).
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct ReadError {
    /// The file.
    pub path: String,
    /// The I/O error.
    pub source: std::io::Error,
}

/// Why a path was not opened for reading.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Not a regular file (a FIFO, a socket, a device, a directory): opening it could block or
    /// have side effects, so it is never opened.
    #[error(
        "{path} is {kind}, not a regular file: skipped without opening it. Logs are regular \
         files; remove it or move it out of the source's directory"
    )]
    NotRegular {
        /// The path.
        path: String,
        /// What it is, with its article ("a FIFO (named pipe)").
        kind: &'static str,
    },
    /// Looking at it or opening it failed.
    #[error(transparent)]
    Io(#[from] ReadError),
}

impl From<OpenError> for ReadError {
    fn from(err: OpenError) -> Self {
        match err {
            OpenError::Io(e) => e,
            OpenError::NotRegular { path, kind } => ReadError {
                path,
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("it is {kind}, not a regular file; logs are regular files"),
                ),
            },
        }
    }
}

/// What a non-regular file is, in words; `None` for a regular file.
pub fn special_kind(kind: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    Some(if kind.is_file() {
        return None;
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a unix socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    })
}

/// Opens `path` for reading only if it is a regular file, without ever blocking: the type is
/// checked first (`stat`, following symlinks as a reader would), the open is non-blocking (a
/// FIFO swapped in meanwhile cannot stall it), and the descriptor's own type is checked again
/// (`fstat`) before anything is read, since the path may have changed between the two.
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = || path.display().to_string();
    let io = |source| {
        OpenError::Io(ReadError {
            path: name(),
            source,
        })
    };
    let not_regular = |kind| OpenError::NotRegular { path: name(), kind };
    let meta = std::fs::metadata(path).map_err(io)?;
    if let Some(kind) = special_kind(meta.file_type()) {
        return Err(not_regular(kind));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if let Some(kind) = special_kind(meta.file_type()) {
        return Err(not_regular(kind));
    }
    // Back to blocking reads, which is what a regular file has anyway; nothing else changes.
    let flags = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL)
        .map_err(|e| io(std::io::Error::from(e)))?;
    let flags = nix::fcntl::OFlag::from_bits_truncate(flags) - nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(flags))
        .map_err(|e| io(std::io::Error::from(e)))?;
    Ok(file)
}

/// FNV-1a, 64-bit: a fingerprint that must stay the same across builds and Rust versions.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Keeps the head and the tail of `text` within `cap` bytes, marking what was cut.
///
/// ```
/// use toolsmith::ingest::reader::cap_excerpt;
/// let log = format!("start\n{}\nerror: the end", "noise ".repeat(1000));
/// let excerpt = cap_excerpt(&log, 40);
/// assert!(excerpt.starts_with("start\n"));
/// assert!(excerpt.ends_with("error: the end"));
/// assert!(excerpt.contains("bytes omitted"));
/// ```
pub fn cap_excerpt(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let half = cap / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes omitted …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

/// What a read did, besides the batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadSummary {
    /// Bytes consumed.
    pub bytes: u64,
    /// Batches handed over.
    pub batches: u64,
    /// Whether the file was read from the start again (truncated, rewritten or replaced).
    pub reset: bool,
}

/// The generations read before (under other paths) that a file may hold, by its [`Probe`]:
/// the store's answer to [`super::store::known_generations`], or nothing.
pub type Known<'k, E> = &'k mut dyn FnMut(&Probe<'_>) -> Result<Vec<Checkpoint>, E>;

/// A [`Known`] for a read that has no store to ask (every unknown file is new).
pub fn nothing_known<E>(_: &Probe<'_>) -> Result<Vec<Checkpoint>, E> {
    Ok(Vec::new())
}

/// Reads `path` from `previous` (its stored checkpoint, if any) to the end, handing batches to
/// `sink`. A batch is complete by itself: storing it with its checkpoint is always consistent.
/// `known` is asked only when the file is not the one `previous` describes: a rotated or copied
/// file resumes where its content was read up to (see [`read_from`]).
#[allow(clippy::too_many_arguments)]
pub fn read_file<E: From<ReadError>>(
    path: &Path,
    source: &str,
    format: &dyn Format,
    previous: Option<&Checkpoint>,
    known: Known<'_, E>,
    options: &ReadOptions,
    redactor: &Redactor,
    sink: impl FnMut(Batch) -> Result<(), E>,
) -> Result<ReadSummary, E> {
    if format.framing() == Framing::Database {
        return super::database::read_database(
            path, source, format, previous, options, redactor, sink,
        );
    }
    let mut file = open_regular(path).map_err(ReadError::from)?;
    read_from(
        &mut file, path, source, format, previous, known, options, redactor, sink,
    )
}

/// Where a read starts, and in which generation.
struct Plan {
    generation: Generation,
    /// The checkpoint resumed from (offset, line, parser state), if any.
    from: Option<Checkpoint>,
    /// Whether what was read of the path before is no longer what it holds.
    reset: bool,
}

/// Whether `file` holds, at `prev`'s place, the bytes `prev` was read up to: its first bytes
/// (fingerprint) and the bytes just before its offset (tail hash) are the same.
fn holds(file: &File, prev: &Checkpoint, size: u64, head: &[u8]) -> std::io::Result<bool> {
    if size < prev.offset || (prev.fingerprint_len as usize) > head.len() {
        return Ok(false);
    }
    if fnv1a(&head[..prev.fingerprint_len as usize]) != prev.fingerprint {
        return Ok(false);
    }
    Ok(prev.tail_len == 0 || tail_hash(file, prev.offset, prev.tail_len)? == prev.tail_hash)
}

/// FNV-1a of the `len` bytes of `file` before `end`.
fn tail_hash(file: &File, end: u64, len: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let len = len.min(end);
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, end - len)?;
    Ok(fnv1a(&bytes))
}

/// Where the bytes `prev`'s tail hash covers end in `file` now, at a line's end, with the line
/// number there: the first such place. A history rewritten in place (its oldest lines
/// trimmed, new ones appended) keeps what was read before that place and only adds after it.
fn find_tail(file: &File, prev: &Checkpoint, size: u64) -> std::io::Result<Option<(u64, u64)>> {
    use std::os::unix::fs::FileExt;
    let want = prev.tail_len as usize;
    if want == 0 || size < prev.tail_len {
        return Ok(None);
    }
    // `window` holds the bytes from `start` on; at most `want` carried over from the last chunk.
    let mut window: Vec<u8> = Vec::with_capacity(want + 64 * 1024);
    let mut start = 0u64;
    let mut at = 0u64;
    let mut lines = 1u64;
    let mut chunk = vec![0u8; 64 * 1024];
    while at < size {
        let n = file.read_at(&mut chunk, at)?;
        if n == 0 {
            break;
        }
        let scanned = window.len();
        window.extend_from_slice(&chunk[..n]);
        at += n as u64;
        for i in scanned..window.len() {
            if window[i] != b'\n' {
                continue;
            }
            lines += 1;
            let end = i + 1;
            if end >= want && fnv1a(&window[end - want..end]) == prev.tail_hash {
                return Ok(Some((start + end as u64, lines)));
            }
        }
        let keep = window.len().min(want);
        let cut = window.len() - keep;
        window.drain(..cut);
        start += cut as u64;
    }
    Ok(None)
}

/// Decides where to read `file` from: on from `previous` if it still holds what was read; else
/// on from a generation read before under another path that it holds (a renamed or copied
/// rotation); else, for a rewritten file, on from where the bytes read last are now; else from
/// its start, as a new generation.
#[allow(clippy::too_many_arguments)]
fn plan<E: From<ReadError>>(
    file: &File,
    name: &str,
    format: &dyn Format,
    previous: Option<&Checkpoint>,
    known: Known<'_, E>,
    meta: &std::fs::Metadata,
    head: &[u8],
    fingerprint: u64,
) -> Result<Plan, E> {
    let fail = |source| ReadError {
        path: name.to_owned(),
        source,
    };
    let size = meta.len();
    if let Some(prev) = previous
        && holds(file, prev, size, head).map_err(fail)?
    {
        return Ok(Plan {
            generation: Generation::Continue,
            from: Some(prev.clone()),
            reset: false,
        });
    }
    let reset = previous.is_some();
    if format.framing() == Framing::WholeFile && previous.is_some() {
        // A whole document is read again when it changes, in the same generation: the same
        // calls in it are the same actions.
        return Ok(Plan {
            generation: Generation::Continue,
            from: None,
            reset,
        });
    }
    let probe = Probe {
        path: name,
        dev: meta.dev(),
        inode: meta.ino(),
        fingerprint,
    };
    // Only what this format read (another format's places mean something else), and only the
    // file itself moved (same inode) or a rotation of a log (`x.1`, as logrotate copies it):
    // any other copy may go on growing apart from its original, and two files growing in one
    // generation would give different actions the same places. Such a copy is read as a new
    // generation (its calls with ids are still stored once).
    let rotated = super::formats::rotation(Path::new(name)).is_some();
    let mut candidates = known(&probe)?;
    candidates.retain(|c| {
        c.format == format.source().as_str()
            && (rotated || (c.dev, c.inode) == (meta.dev(), meta.ino()))
    });
    candidates.sort_by_key(|c| std::cmp::Reverse(c.offset));
    for candidate in &candidates {
        if holds(file, candidate, size, head).map_err(fail)? {
            return Ok(Plan {
                generation: Generation::Adopt(candidate.rank),
                from: Some(candidate.clone()),
                reset,
            });
        }
    }
    // A copy still being made (a new file with the generation's first bytes, not yet all it was
    // read up to) is read from its start in that generation: what it repeats is stored already,
    // under the same keys. A file that was read before and changed is no copy in the making.
    if let Some(partial) = candidates.iter().find(|c| {
        previous.is_none()
            && c.fingerprint_len > 0
            && c.fingerprint_len as usize <= head.len()
            && size < c.offset
            && fnv1a(&head[..c.fingerprint_len as usize]) == c.fingerprint
    }) {
        return Ok(Plan {
            generation: Generation::Adopt(partial.rank),
            from: None,
            reset,
        });
    }
    if let Some(prev) = previous
        && format.framing() != Framing::WholeFile
        && let Some((offset, line)) = find_tail(file, prev, size).map_err(fail)?
    {
        return Ok(Plan {
            generation: Generation::New,
            from: Some(Checkpoint {
                offset,
                line,
                ..prev.clone()
            }),
            reset,
        });
    }
    Ok(Plan {
        generation: Generation::New,
        from: None,
        reset,
    })
}

/// Like [`read_file`], on a file already open — possibly one that was renamed or deleted since
/// it was opened (its unread tail is still worth reading).
#[allow(clippy::too_many_arguments)]
pub fn read_from<E: From<ReadError>>(
    file: &mut File,
    path: &Path,
    source: &str,
    format: &dyn Format,
    previous: Option<&Checkpoint>,
    known: Known<'_, E>,
    options: &ReadOptions,
    redactor: &Redactor,
    mut sink: impl FnMut(Batch) -> Result<(), E>,
) -> Result<ReadSummary, E> {
    if format.framing() == Framing::Database {
        // Rows, not bytes: the descriptor held open only keeps the tailer's bookkeeping alike.
        let _ = (file, known);
        return super::database::read_database(
            path, source, format, previous, options, redactor, sink,
        );
    }
    let name = path.display().to_string();
    // A rotated file (`x.jsonl.1`) is parsed as the file it was (`x.jsonl`): the same sessions.
    let logical = super::formats::unrotated(path);
    let parse_as: &Path = &logical;
    let fail = |source| ReadError {
        path: name.clone(),
        source,
    };
    let meta = file.metadata().map_err(fail)?;
    file.seek(SeekFrom::Start(0)).map_err(fail)?;
    let size = meta.len();
    let mtime_ns = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
    let fp_len = size.min(FINGERPRINT_BYTES);
    let mut head = vec![0u8; fp_len as usize];
    file.read_exact(&mut head).map_err(fail)?;
    let fingerprint = fnv1a(&head);

    let mut checkpoint = Checkpoint {
        source: source.to_owned(),
        format: format.source().as_str().to_owned(),
        path: name.clone(),
        dev: meta.dev(),
        inode: meta.ino(),
        fingerprint,
        fingerprint_len: fp_len,
        offset: 0,
        line: 1,
        size_seen: size,
        mtime_ns,
        parser_state: None,
        rank: 0,
        tail_hash: 0,
        tail_len: 0,
    };
    let Plan {
        generation,
        from,
        reset,
    } = plan(
        file,
        &name,
        format,
        previous,
        known,
        &meta,
        &head,
        fingerprint,
    )?;
    let resume = from.as_ref();
    let mut sanitizer = Sanitizer::new(redactor, options.output_cap);
    let file_key = FileKey {
        path: name.clone(),
        dev: meta.dev(),
        inode: meta.ino(),
    };
    if let Some(prev) = resume {
        checkpoint.offset = prev.offset;
        checkpoint.line = prev.line;
        let (adapter_state, secrets) = sanitizer.unwrap_state(prev.parser_state.clone());
        checkpoint.parser_state = adapter_state;
        if secrets > 0
            && format.framing() != Framing::WholeFile
            && !sanitizer.resume(&file_key, prev.offset)
        {
            // The secrets seen before the checkpoint are not stored: find them again.
            let mut replayed = Sanitizer::new(redactor, options.output_cap);
            replay(file, parse_as, format, prev.offset, options, &mut replayed).map_err(fail)?;
            sanitizer.take_memory(replayed);
        }
    }

    if format.framing() == Framing::WholeFile {
        return read_whole(
            file,
            previous,
            generation == Generation::Continue && !reset,
            checkpoint,
            format,
            options,
            redactor,
            Batch {
                reset,
                generation,
                ..Batch::default()
            },
            sink,
        );
    }

    let start = Position {
        offset: checkpoint.offset,
        line: checkpoint.line,
    };
    file.seek(SeekFrom::Start(start.offset)).map_err(fail)?;
    let mut parser = format.parser(parse_as, checkpoint.parser_state.take());
    let mut cutter = Cutter::new(format.framing(), start, options.max_record);
    let mut summary = ReadSummary {
        reset,
        ..ReadSummary::default()
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut cuts = Vec::new();
    let mut pending = Batch {
        reset,
        ..Batch::default()
    };
    let mut consumed_from = start.offset;
    loop {
        let n = file.read(&mut buf).map_err(fail)?;
        if n == 0 {
            if options.complete {
                cutter.finish(&mut cuts);
            } else {
                cutter.flush_at_eof(&mut cuts);
            }
        } else {
            cutter.push(&buf[..n], &mut cuts);
        }
        for cut in cuts.drain(..) {
            pending.records += 1;
            match cut {
                Cut::Record { bytes, pos, .. } => {
                    let before = pending.items.len();
                    if let Err(problem) = parser.record(&bytes, pos, &mut pending.items) {
                        pending.problems.push((pos.line, problem.reason));
                    }
                    // The tailer knows where each record starts: its items carry it to the
                    // store without the adapter saying.
                    pending.lines.resize(pending.items.len(), pos.line);
                    for item in &mut pending.items[before..] {
                        sanitizer.item(item);
                    }
                }
                Cut::Oversized { pos, len, .. } => pending.problems.push((
                    pos.line,
                    format!(
                        "record of {len} bytes exceeds the {} byte limit; skipped",
                        options.max_record
                    ),
                )),
            }
        }
        let point = cutter.resume_point();
        let at_end = n == 0;
        if at_end || point.offset - consumed_from >= options.batch_bytes {
            let mut batch = std::mem::take(&mut pending);
            batch.bytes = point.offset - consumed_from;
            batch.reset = summary.batches == 0 && reset;
            if summary.batches == 0 {
                batch.generation = generation;
            }
            let tail_len = point.offset.min(TAIL_BYTES);
            batch.checkpoint = Checkpoint {
                offset: point.offset,
                line: point.line,
                parser_state: Some(sanitizer.wrap_state(parser.state())).filter(|s| !s.is_null()),
                tail_hash: tail_hash(file, point.offset, tail_len).map_err(fail)?,
                tail_len,
                ..checkpoint.clone()
            };
            consumed_from = point.offset;
            summary.bytes += batch.bytes;
            summary.batches += 1;
            sink(batch)?;
            sanitizer.keep_for_resume(&file_key, point.offset);
        }
        if at_end {
            return Ok(summary);
        }
    }
}

/// Reads `file`'s records before `end` again, from its start with a fresh parser, through
/// `sanitizer` (whose items are discarded): the secrets seen before a checkpoint are found again
/// the way they were found the first time.
fn replay(
    file: &mut File,
    path: &Path,
    format: &dyn Format,
    end: u64,
    options: &ReadOptions,
    sanitizer: &mut Sanitizer<'_>,
) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let start = Position { offset: 0, line: 1 };
    let mut parser = format.parser(path, None);
    let mut cutter = Cutter::new(format.framing(), start, options.max_record);
    let mut buf = vec![0u8; 64 * 1024];
    let mut cuts = Vec::new();
    let mut items = Vec::new();
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            cutter.finish(&mut cuts);
        } else {
            cutter.push(&buf[..n], &mut cuts);
        }
        for cut in cuts.drain(..) {
            if let Cut::Record { bytes, pos, .. } = cut {
                if pos.offset >= end {
                    return Ok(());
                }
                items.clear();
                // A record that was a problem the first time is one again: nothing to find.
                let _ = parser.record(&bytes, pos, &mut items);
                sanitizer.replay(&mut items);
            }
        }
        if n == 0 || cutter.resume_point().offset >= end {
            return Ok(());
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn read_whole<E: From<ReadError>>(
    file: &mut File,
    previous: Option<&Checkpoint>,
    same_file: bool,
    mut checkpoint: Checkpoint,
    format: &dyn Format,
    options: &ReadOptions,
    redactor: &Redactor,
    mut batch: Batch,
    mut sink: impl FnMut(Batch) -> Result<(), E>,
) -> Result<ReadSummary, E> {
    let unchanged = same_file
        && previous.is_some_and(|p| {
            p.size_seen == checkpoint.size_seen && p.mtime_ns == checkpoint.mtime_ns
        });
    if unchanged {
        return Ok(ReadSummary::default());
    }
    let size = checkpoint.size_seen;
    let reset = batch.reset;
    batch.records = 1;
    batch.bytes = size;
    if size > options.max_whole_file {
        batch.problems.push((
            1,
            format!(
                "file of {size} bytes exceeds the {} byte limit for whole-file formats; skipped",
                options.max_whole_file
            ),
        ));
    } else {
        let mut bytes = Vec::with_capacity(size as usize);
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut bytes))
            .map_err(|source| ReadError {
                path: checkpoint.path.clone(),
                source,
            })?;
        // A document still being written (JSON that stops short) is left for the next change,
        // with no checkpoint and no problem recorded; a finished file is parsed whatever it holds.
        let cut_short = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
            .err()
            .is_some_and(|e| e.is_eof());
        if cut_short && !options.complete {
            return Ok(ReadSummary::default());
        }
        let path = super::formats::unrotated(Path::new(&checkpoint.path)).into_owned();
        let mut parser = format.parser(&path, None);
        let pos = Position { offset: 0, line: 1 };
        if let Err(problem) = parser.record(&bytes, pos, &mut batch.items) {
            batch.problems.push((1, problem.reason));
        }
        let mut sanitizer = Sanitizer::new(redactor, options.output_cap);
        for item in &mut batch.items {
            sanitizer.item(item);
        }
    }
    checkpoint.offset = size;
    batch.checkpoint = checkpoint;
    sink(batch)?;
    Ok(ReadSummary {
        bytes: size,
        batches: 1,
        reset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::adapters::Item;

    #[test]
    fn excerpts_keep_head_and_tail_on_char_boundaries() {
        assert_eq!(cap_excerpt("short", 10), "short");
        let long = "é".repeat(100);
        let capped = cap_excerpt(&long, 21);
        assert!(capped.starts_with("éééé"));
        assert!(capped.ends_with("éééé"));
        assert!(capped.contains("bytes omitted"));
    }

    #[test]
    fn whole_files_wait_until_their_document_is_complete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.traj");
        let doc = r#"{"trajectory":[{"action":"ls -la","observation":"total 0","response":"","thought":""}],"history":[],"info":{}}"#;
        let format = crate::ingest::formats::by_name("swe-agent").expect("format");
        let redactor = Redactor::new();
        let live = ReadOptions::default();
        let read = |opts: &ReadOptions| {
            let mut batches = Vec::new();
            read_file::<ReadError>(
                &path,
                "s",
                format,
                None,
                &mut nothing_known,
                opts,
                &redactor,
                |b| {
                    batches.push(b);
                    Ok(())
                },
            )
            .expect("read");
            batches
        };
        std::fs::write(&path, &doc[..doc.len() / 2]).expect("write half");
        assert!(read(&live).is_empty(), "half a document is not read");
        std::fs::write(&path, doc).expect("write all");
        let batches = read(&live);
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].items.len(), 1);
        assert!(batches[0].problems.is_empty());
        // A finished file that is cut short is a problem, not a wait.
        std::fs::write(&path, &doc[..doc.len() / 2]).expect("write half");
        let done = ReadOptions {
            complete: true,
            ..ReadOptions::default()
        };
        let batches = read(&done);
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].problems.len(), 1, "{:?}", batches[0].problems);
    }

    #[test]
    fn a_resumed_read_still_knows_the_secrets_seen_before_its_checkpoint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agent.jsonl");
        let secret = "Qm7xK2vL9pR4tW8zN3sB";
        let line = |command: &str, output: &str| {
            format!(
                "{}\n",
                serde_json::json!({"v": 1, "session": "s", "tool": "Bash",
                    "input": {"command": command}, "ok": true, "output": output})
            )
        };
        // More than a KiB before the secret, so that the fingerprint does not see it.
        let mut first = line("echo start", &"x".repeat(1500));
        first.push_str(&line(&format!("export DB_PASSWORD={secret}"), ""));
        // And more than a KiB after it, so that the checkpoint's tail hash does not either.
        first.push_str(&line("echo filler", &"z".repeat(1500)));
        let later = line("./probe", &format!("password is {secret}"));
        let format = crate::ingest::formats::by_name("native").expect("format");
        let options = ReadOptions::default();
        let read = |redactor: &Redactor, previous: Option<&Checkpoint>| {
            let mut batches = Vec::new();
            read_file::<ReadError>(
                &path,
                "s",
                format,
                previous,
                &mut nothing_known,
                &options,
                redactor,
                |b| {
                    batches.push(b);
                    Ok(())
                },
            )
            .expect("read");
            batches
        };
        let outputs = |batches: &[Batch]| -> String {
            batches
                .iter()
                .flat_map(|b| &b.items)
                .filter_map(|i| match i {
                    Item::Action(a) => a.result.as_ref().map(|r| r.output.clone()),
                    _ => None,
                })
                .collect()
        };
        std::fs::write(&path, &first).expect("write");
        let tailer = Redactor::new();
        let checkpoint = read(&tailer, None).remove(0).checkpoint;
        let state = checkpoint
            .parser_state
            .clone()
            .unwrap_or_default()
            .to_string();
        assert!(!state.contains(secret), "{state}");
        std::fs::write(&path, format!("{first}{later}")).expect("append");
        // A new process (a new redactor) reads the start again to find the secret.
        let restarted = read(&Redactor::new(), Some(&checkpoint));
        assert_eq!(
            outputs(&restarted),
            "password is [REDACTED:secret-assignment]"
        );
        // The tailer's next round knows it without reading the start: shown by a start that
        // no longer holds it (same length, past the fingerprint).
        let changed = first.replace(secret, &"y".repeat(secret.len()));
        std::fs::write(&path, format!("{changed}{later}")).expect("rewrite");
        let resumed = read(&tailer, Some(&checkpoint));
        assert_eq!(
            outputs(&resumed),
            "password is [REDACTED:secret-assignment]"
        );
        let replayed = read(&Redactor::new(), Some(&checkpoint));
        assert_eq!(outputs(&replayed), format!("password is {secret}"));
    }

    #[test]
    fn copies_resume_in_the_generation_they_hold_and_rewrites_start_a_new_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let format = crate::ingest::formats::by_name("native").expect("format");
        let redactor = Redactor::new();
        let options = ReadOptions::default();
        let line = |i: usize| {
            format!(
                "{}\n",
                serde_json::json!({"v": 1, "session": "s", "tool": "shell",
                    "input": {"command": format!("make target-{i:04}")}})
            )
        };
        let text = |range: std::ops::Range<usize>| range.map(line).collect::<String>();
        let read = |path: &Path, previous: Option<&Checkpoint>, known: &[Checkpoint]| {
            let mut batches = Vec::new();
            let known = known.to_vec();
            let mut lookup = |_: &Probe<'_>| Ok::<_, ReadError>(known.clone());
            read_file::<ReadError>(
                path,
                "s",
                format,
                previous,
                &mut lookup,
                &options,
                &redactor,
                |b| {
                    batches.push(b);
                    Ok(())
                },
            )
            .expect("read");
            batches
        };
        let commands = |batches: &[Batch]| -> Vec<String> {
            batches
                .iter()
                .flat_map(|b| &b.items)
                .filter_map(|i| match i {
                    Item::Action(a) => a.input["command"].as_str().map(str::to_owned),
                    _ => None,
                })
                .collect()
        };
        let log = dir.path().join("agent.jsonl");
        std::fs::write(&log, text(0..40)).expect("write");
        let first = read(&log, None, &[]);
        assert_eq!(first[0].generation, Generation::New);
        let read_up_to = Checkpoint {
            rank: 5,
            ..first.last().expect("batch").checkpoint.clone()
        };

        // A rotated copy holding more than was read resumes where reading stopped.
        let rotated = dir.path().join("agent.jsonl.1");
        std::fs::write(&rotated, text(0..50)).expect("write");
        let copy = read(&rotated, None, std::slice::from_ref(&read_up_to));
        assert_eq!(copy[0].generation, Generation::Adopt(5));
        assert_eq!(commands(&copy).len(), 10);
        assert_eq!(commands(&copy)[0], "make target-0040");

        // A copy still being made is read from its start in that generation.
        std::fs::write(&rotated, text(0..20)).expect("write");
        let partial = read(&rotated, None, std::slice::from_ref(&read_up_to));
        assert_eq!(partial[0].generation, Generation::Adopt(5));
        assert_eq!(commands(&partial).len(), 20);

        // The log itself rewritten in place, same size, same first KiB, another line after
        // it: its content is not what was read, and it is no copy of anything.
        let mut changed = text(0..40);
        let at = changed.rfind("target-0039").expect("last line");
        changed.replace_range(at..at + 11, "target-9999");
        std::fs::write(&log, &changed).expect("rewrite");
        let rewritten = read(&log, Some(&read_up_to), std::slice::from_ref(&read_up_to));
        assert_eq!(rewritten[0].generation, Generation::New);
        assert!(rewritten[0].reset);
        assert_eq!(commands(&rewritten).len(), 40);

        // Trimmed at its head and appended to: read on from where the last bytes read are.
        std::fs::write(&log, text(10..45)).expect("trim");
        let trimmed = read(&log, Some(&read_up_to), &[]);
        assert_eq!(trimmed[0].generation, Generation::New);
        assert_eq!(
            commands(&trimmed),
            (40..45)
                .map(|i| format!("make target-{i:04}"))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn fingerprint_is_stable() {
        // Persisted in the store: it must never change between builds.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
