//! One-shot ingest: read given files or directories to their end into a store, without the
//! daemon (`toolsmith ingest`).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::adapters::Format;
use super::formats;
use super::reader::{self, OpenError, ReadError, ReadOptions};
use super::redact::Redactor;
use super::store::{self as ingest_store, Applied};
use crate::store::{Store, StoreError};

/// How many leading bytes are given to format sniffing.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// Why a one-shot ingest stopped.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A path given on the command line does not exist or cannot be listed.
    #[error("cannot read {path}: {source}")]
    Path {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `--format` names no format.
    #[error("unknown format `{name}`; known formats: {}", formats::names().join(", "))]
    UnknownFormat {
        /// The name given.
        name: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// What happened to one file.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// The format used, or `None` when the file was skipped.
    pub format: Option<&'static str>,
    /// Why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Bytes consumed.
    pub bytes: u64,
    /// New actions stored.
    pub actions: u64,
    /// Results stored with their calls during this read (see [`Applied::joined`]).
    pub results: u64,
    /// Problems met (bad records).
    pub problems: u64,
}

/// How far a one-shot ingest has got, after each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advance {
    /// Files read.
    pub files_done: usize,
    /// Files to read.
    pub files: usize,
    /// Bytes of the files read (their size when listed).
    pub bytes_done: u64,
    /// Bytes of all the files.
    pub bytes: u64,
    /// New actions stored so far.
    pub actions: u64,
}

/// Ingests `paths` (files, or directories walked recursively) into `store`. With `format`, every
/// file is read as that format; otherwise each file's format is sniffed and unrecognised files
/// are skipped (and reported).
pub fn ingest_paths(
    store: &Store,
    paths: &[PathBuf],
    format: Option<&str>,
    options: &ReadOptions,
) -> Result<Vec<FileReport>, IngestError> {
    ingest_paths_reporting(store, paths, format, options, &mut |_| {})
}

/// [`ingest_paths`], telling `advance` how far it got after each file (for a progress bar).
pub fn ingest_paths_reporting(
    store: &Store,
    paths: &[PathBuf],
    format: Option<&str>,
    options: &ReadOptions,
    advance: &mut dyn FnMut(Advance),
) -> Result<Vec<FileReport>, IngestError> {
    let forced = format
        .map(|name| {
            formats::FORMATS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(n, f)| (*n, *f))
                .ok_or_else(|| IngestError::UnknownFormat {
                    name: name.to_owned(),
                })
        })
        .transpose()?;
    let mut files = Vec::new();
    let mut specials = Vec::new();
    for path in paths {
        collect_files(path, &mut files, &mut specials)?;
    }
    // A log's rotations before the log, oldest first: the order it was written in.
    formats::rotation_order(&mut files);
    let redactor = Redactor::new();
    let mut reports = Vec::with_capacity(files.len() + specials.len());
    // Never opened: a FIFO would block the read, a device could have side effects.
    for (path, kind) in specials {
        reports.push(skipped(
            path,
            format!("{kind}, not a regular file; logs are regular files"),
        ));
    }
    let sizes: Vec<u64> = files
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .collect();
    let mut progress = Advance {
        files_done: 0,
        files: files.len(),
        bytes_done: 0,
        bytes: sizes.iter().sum(),
        actions: 0,
    };
    for (path, size) in files.into_iter().zip(sizes) {
        progress.files_done += 1;
        progress.bytes_done += size;
        if let Some(why) = formats::compressed(&path) {
            reports.push(skipped(path, why));
            advance(progress);
            continue;
        }
        let chosen = match forced {
            Some(f) => Some(f),
            None => match read_head(&path) {
                Ok(head) => formats::sniff(&path, &head),
                // Replaced by something else since it was listed.
                Err(OpenError::NotRegular { kind, .. }) => {
                    reports.push(skipped(
                        path,
                        format!("{kind}, not a regular file; logs are regular files"),
                    ));
                    advance(progress);
                    continue;
                }
                Err(OpenError::Io(e)) => {
                    return Err(IngestError::Path {
                        path,
                        source: e.source,
                    });
                }
            },
        };
        let Some((name, format)) = chosen else {
            let why = match formats::companion(&path) {
                Some(what) => format!("{what}, not a log"),
                None => "no known format recognises this file; pass --format".into(),
            };
            reports.push(skipped(path, why));
            advance(progress);
            continue;
        };
        let report = ingest_file(store, &path, name, format, options, &redactor)?;
        progress.actions += report.actions;
        reports.push(report);
        advance(progress);
    }
    Ok(reports)
}

/// Reads one file from its checkpoint to its end into the store.
pub fn ingest_file(
    store: &Store,
    path: &Path,
    name: &'static str,
    format: &'static dyn Format,
    options: &ReadOptions,
    redactor: &Redactor,
) -> Result<FileReport, IngestError> {
    let key = path.display().to_string();
    let previous = store.call_blocking(move |conn| ingest_store::checkpoint(conn, &key))?;
    let mut report = FileReport {
        path: path.to_owned(),
        format: Some(name),
        skipped: None,
        bytes: 0,
        actions: 0,
        results: 0,
        problems: 0,
    };
    let mut writer = ingest_store::BatchWriter::new(store);
    let add = |report: &mut FileReport, applied: Applied| {
        report.actions += applied.inserted;
        report.results += applied.joined;
    };
    let mut known = |probe: &ingest_store::Probe<'_>| known_generations(store, probe);
    let summary = reader::read_file::<IngestError>(
        path,
        name,
        format,
        previous.as_ref(),
        &mut known,
        options,
        redactor,
        |batch| {
            report.problems += batch.problems.len() as u64;
            let applied = writer.push(batch)?;
            add(&mut report, applied);
            Ok(())
        },
    );
    let last = writer.finish();
    if let Ok(applied) = last {
        add(&mut report, applied);
    }
    let summary = summary?;
    last?;
    report.bytes = summary.bytes;
    Ok(report)
}

/// The generations read before that a file may be a rotated or copied form of (see
/// [`ingest_store::known_generations`]), asked of `store`.
pub fn known_generations<E: From<StoreError>>(
    store: &Store,
    probe: &ingest_store::Probe<'_>,
) -> Result<Vec<ingest_store::Checkpoint>, E> {
    let path = probe.path.to_owned();
    let probe = ingest_store::Probe { path: "", ..*probe };
    Ok(store.call_blocking(move |conn| {
        ingest_store::known_generations(
            conn,
            &ingest_store::Probe {
                path: &path,
                ..probe
            },
        )
    })?)
}

fn skipped(path: PathBuf, why: String) -> FileReport {
    FileReport {
        path,
        format: None,
        skipped: Some(why),
        bytes: 0,
        actions: 0,
        results: 0,
        problems: 0,
    }
}

/// The first bytes of a regular file, for sniffing (never opening anything else).
pub fn read_head(path: &Path) -> Result<Vec<u8>, OpenError> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    reader::open_regular(path)?
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|source| ReadError {
            path: path.display().to_string(),
            source,
        })?;
    Ok(head)
}

/// Regular files under `path`, sorted, without following directory symlinks (no loops); other
/// kinds of files (FIFOs, sockets, devices) go to `specials`, with what they are.
fn collect_files(
    path: &Path,
    out: &mut Vec<PathBuf>,
    specials: &mut Vec<(PathBuf, &'static str)>,
) -> Result<(), IngestError> {
    let fail = |source| IngestError::Path {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(fail)?;
    if meta.is_file() {
        out.push(path.to_owned());
        return Ok(());
    }
    if !meta.is_dir() {
        if let Some(kind) = reader::special_kind(meta.file_type()) {
            specials.push((path.to_owned(), kind));
        }
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .map_err(fail)?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let child = entry.path();
        if kind.is_dir() {
            collect_files(&child, out, specials)?;
        } else if kind.is_file() || (kind.is_symlink() && child.is_file()) {
            out.push(child);
        } else if let Some(special) = reader::special_kind(kind).filter(|_| !kind.is_symlink()) {
            specials.push((child, special));
        }
    }
    Ok(())
}
