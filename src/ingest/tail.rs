//! Live tailing for the daemon: a start-up scan, then inotify (through `notify`), debounced.
//!
//! One task owns the tail state. File reading runs on a blocking thread, one round at a time, and
//! hands batches to the store's writer; each batch carries its checkpoint, so a crash at any
//! moment resumes exactly where the store says. Open handles are kept for files being read, so
//! that the unread tail of a file that was renamed (rotated) or deleted is still read.
//!
//! Only regular files are opened ([`reader::open_regular`]): a FIFO, socket or device in a
//! source is skipped and recorded (`toolsmith sources` shows it), as is a file its source's
//! format does not recognise. Rounds are driven by changes to the files (writes, creations,
//! renames, deletions, attribute changes), never by accesses: the tailer's own opens and reads
//! must not wake it, or an idle daemon holding more files than it keeps open would re-read
//! them forever.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};

use super::adapters::Format;
use super::formats;
use super::oneshot::{self, SNIFF_BYTES};
use super::reader::{self, OpenError, ReadError, ReadOptions};
use super::redact::Redactor;
use super::store::{self as ingest_store, Applied};
use crate::config::{Config, Env, ProcessEnv, SourceSetting};
use crate::events::{Event, EventBus};
use crate::store::{Store, StoreError};

/// At most this many files are kept open; the least recently read are closed first.
const MAX_OPEN_FILES: usize = 256;

/// One configured (or default) source, resolved against the file system.
#[derive(Clone)]
pub struct SourceSpec {
    /// Name shown by `toolsmith sources`.
    pub name: String,
    /// Format name.
    pub format_name: &'static str,
    /// The format.
    pub format: &'static dyn Format,
    /// The directory to watch.
    pub root: PathBuf,
    /// Which files under `root` belong to the source.
    pub matcher: FileMatcher,
}

impl std::fmt::Debug for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceSpec")
            .field("name", &self.name)
            .field("format", &self.format_name)
            .field("root", &self.root)
            .field("matcher", &self.matcher)
            .finish()
    }
}

/// How a source selects its files.
#[derive(Debug, Clone)]
pub enum FileMatcher {
    /// Exactly one file (its parent directory is watched, to see it re-created).
    File(PathBuf),
    /// Every file under the root that the format recognises.
    Tree,
    /// Files matching a glob.
    Glob(GlobMatcher),
}

impl SourceSpec {
    fn recursive(&self) -> bool {
        !matches!(self.matcher, FileMatcher::File(_))
    }

    /// Whether `path` belongs to this source by name (format sniffing comes later). A rotated
    /// file (`x.1`) belongs where the file it was (`x`) does.
    fn claims(&self, path: &Path) -> bool {
        match &self.matcher {
            FileMatcher::File(file) => path == file || *formats::unrotated(path) == **file,
            FileMatcher::Tree => path.starts_with(&self.root),
            FileMatcher::Glob(glob) => {
                glob.is_match(path) || glob.is_match(formats::unrotated(path))
            }
        }
    }
}

/// A source that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProblem {
    /// The source's name.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

fn expand_home(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    match path.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None => Some(PathBuf::from(path)),
    }
}

/// The standard locations of agents' and shells' logs, for when no source is configured,
/// with each agent's own overrides of its home read from `env` (`CLAUDE_CONFIG_DIR`,
/// `CODEX_HOME`, `XDG_DATA_HOME`, `GEMINI_CLI_HOME`, `KIMI_SHARE_DIR`, `OPENCODE_DB`).
pub fn default_sources(env: &dyn Env) -> Vec<SourceSetting> {
    let Some(home) = env.var("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    let under = |var: &str, default: &str| {
        env.var(var)
            .map_or_else(|| home.join(default), PathBuf::from)
    };
    let xdg_data = under("XDG_DATA_HOME", ".local/share");
    let claude = under("CLAUDE_CONFIG_DIR", ".claude");
    let codex = under("CODEX_HOME", ".codex");
    [
        ("claude-code", "claude-code", claude.join("projects")),
        ("codex", "codex", codex.join("sessions")),
        // Codex moves a session it archives here, whole: it resumes where it was read up to.
        ("codex-archived", "codex", codex.join("archived_sessions")),
        ("bash", "bash", home.join(".bash_history")),
        ("zsh", "zsh", home.join(".zsh_history")),
        ("fish", "fish", xdg_data.join("fish/fish_history")),
    ]
    .into_iter()
    .chain(
        agent_sources_2026(
            &home,
            env.var("KIMI_SHARE_DIR").map(PathBuf::from).as_deref(),
        )
        .into_iter()
        .chain(opencode_databases(&xdg_data.join("opencode")))
        .chain(
            opencode_override(
                env.var("OPENCODE_DB").as_deref().map(std::ffi::OsStr::new),
                &xdg_data,
            )
            .map(|db| ("opencode", db)),
        )
        .map(|(format, path)| (format, format, path)),
    )
    .map(|(name, format, path)| SourceSetting {
        name: name.to_owned(),
        format: format.to_owned(),
        path: path.display().to_string(),
        origin: crate::config::Origin::Default,
    })
    .chain(gemini_sources(
        Some(&home),
        env.var("GEMINI_CLI_HOME").map(PathBuf::from).as_deref(),
    ))
    .collect()
}

/// Gemini CLI's sessions, for when no source is configured: under `<home>/.gemini/tmp`, where
/// `home` is `$GEMINI_CLI_HOME` when set (Gemini CLI's own override of its home,
/// `packages/core/src/utils/paths.ts` `homedir()`), else `$HOME`. Globs, so that only the
/// `chats/` session files are read (JSONL sessions and sub-agents' sessions in `chats/<parent>/`,
/// and the `session-*.json` documents of versions before 0.39), not Gemini CLI's other files
/// there (`logs.json`, checkpoints, shell history).
pub fn gemini_sources(home: Option<&Path>, gemini_home: Option<&Path>) -> Vec<SourceSetting> {
    let Some(tmp) = gemini_home.or(home).map(|h| h.join(".gemini/tmp")) else {
        return Vec::new();
    };
    [
        ("gemini-cli", tmp.join("*/chats/**/*.jsonl")),
        ("gemini-cli-json", tmp.join("*/chats/session-*.json")),
    ]
    .into_iter()
    .map(|(format, path)| SourceSetting {
        name: format.to_owned(),
        format: format.to_owned(),
        path: path.display().to_string(),
        origin: crate::config::Origin::Default,
    })
    .collect()
}

/// The part of a source's path before its first glob character's component: what must exist
/// for the source to be watched.
fn literal_root(path: &str) -> PathBuf {
    Path::new(path)
        .components()
        .take_while(|c| {
            !c.as_os_str()
                .to_string_lossy()
                .contains(['*', '?', '[', '{'])
        })
        .collect()
}

/// OpenCode's databases in its data directory: `opencode.db`, and `opencode-<channel>.db` for
/// the other release channels (as OpenCode v1.18 names them, `packages/core/src/database/
/// database.ts` `path()`).
fn opencode_databases(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut found = vec![("opencode", dir.join("opencode.db"))];
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut channels: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("opencode-") && n.ends_with(".db"))
            })
            .collect();
        channels.sort();
        found.extend(channels.into_iter().map(|p| ("opencode", p)));
    }
    found
}

/// The database OpenCode's `OPENCODE_DB` names (`value`): an absolute path, or one under its
/// data directory `<data>/opencode` (OpenCode v1.18, `packages/core/src/database/database.ts`
/// `path()`); `:memory:` names none.
fn opencode_override(value: Option<&std::ffi::OsStr>, data: &Path) -> Option<PathBuf> {
    let value = Path::new(value?);
    if value.as_os_str().is_empty() || value.as_os_str() == ":memory:" {
        return None;
    }
    Some(if value.is_absolute() {
        value.to_owned()
    } else {
        data.join("opencode").join(value)
    })
}

/// The Crush databases (`<project>/.crush/crush.db`) of the projects toolsmith has seen agents
/// work in (`projects`: the working directories of stored actions), as sources: the daemon's
/// defaults when no source is configured.
pub fn seen_project_sources(projects: &[String]) -> Vec<SourceSpec> {
    projects
        .iter()
        .map(|p| Path::new(p).join(".crush/crush.db"))
        .filter(|db| db.is_file())
        .filter_map(|db| {
            let setting = SourceSetting {
                name: "crush".to_owned(),
                format: "crush".to_owned(),
                path: db.display().to_string(),
                origin: crate::config::Origin::Default,
            };
            resolve_one(&setting, None).ok()
        })
        .collect()
}

/// Where Kimi CLI, Cline and Cursor's CLI agent keep their logs under `home`; `kimi_share` is
/// Kimi's moved share directory (`~` in it is the home, as Kimi expands it).
fn agent_sources_2026(home: &Path, kimi_share: Option<&Path>) -> Vec<(&'static str, PathBuf)> {
    let kimi = match kimi_share {
        Some(dir) => match dir.strip_prefix("~") {
            Ok(rest) => home.join(rest),
            Err(_) => dir.to_owned(),
        },
        None => home.join(".kimi"),
    };
    let mut sources = vec![("kimi-cli", kimi.join("sessions"))];
    // Cline's task folders in each VS Code build's global storage (Linux), and the Cline CLI's.
    for editor in ["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"] {
        sources.push((
            "cline",
            home.join(".config")
                .join(editor)
                .join("User/globalStorage/saoudrizwan.claude-dev/tasks"),
        ));
    }
    sources.push(("cline", home.join(".cline/data/tasks")));
    sources.push(("cursor", home.join(".cursor/projects")));
    sources
}

/// Resolves the configured sources (or the defaults) into specs. Sources whose path does not
/// exist are reported, not fatal: they are looked at again on reload.
pub fn resolve_sources(config: &Config) -> (Vec<SourceSpec>, Vec<SourceProblem>) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let settings = if config.sources.is_empty() {
        default_sources(&ProcessEnv)
            .into_iter()
            .filter(|s| literal_root(&s.path).exists())
            .collect()
    } else {
        config.sources.clone()
    };
    // toolsmith's own log of tool runs is always read: it is how the miner sees tools in use.
    let runs = config.paths.state.value.join(crate::config::RUNS_DIR);
    let settings =
        settings.into_iter().chain(
            std::fs::create_dir_all(&runs)
                .is_ok()
                .then(|| SourceSetting {
                    name: "toolsmith-runs".to_owned(),
                    format: "native".to_owned(),
                    path: runs.display().to_string(),
                    origin: crate::config::Origin::Default,
                }),
        );
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    for setting in settings {
        match resolve_one(&setting, home.as_deref()) {
            Ok(spec) => specs.push(spec),
            Err(reason) => problems.push(SourceProblem {
                name: setting.name.clone(),
                reason,
            }),
        }
    }
    (specs, problems)
}

fn resolve_one(setting: &SourceSetting, home: Option<&Path>) -> Result<SourceSpec, String> {
    let (format_name, format) = formats::FORMATS
        .iter()
        .find(|(n, _)| *n == setting.format)
        .map(|(n, f)| (*n, *f))
        .ok_or_else(|| format!("unknown format `{}`", setting.format))?;
    let path = expand_home(&setting.path, home)
        .ok_or_else(|| format!("{} needs $HOME, which is not set", setting.path))?;
    let text = path.display().to_string();
    let spec = |root: PathBuf, matcher| SourceSpec {
        name: setting.name.clone(),
        format_name,
        format,
        root,
        matcher,
    };
    if text.contains(['*', '?', '[', '{']) {
        let glob = Glob::new(&text)
            .map_err(|e| format!("invalid glob {text}: {e}"))?
            .compile_matcher();
        // Watch the deepest directory without glob characters.
        return Ok(spec(literal_root(&text), FileMatcher::Glob(glob)));
    }
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Ok(spec(path, FileMatcher::Tree)),
        Ok(_) => {
            let parent = path
                .parent()
                .map_or_else(|| PathBuf::from("/"), Path::to_owned);
            Ok(spec(parent, FileMatcher::File(path)))
        }
        Err(e) => Err(format!("{text}: {e}")),
    }
}

/// Counters the daemon reports in `status`.
#[derive(Debug, Default)]
pub struct TailStats {
    /// Files read at least once.
    pub files: AtomicU64,
    /// Actions stored.
    pub actions: AtomicU64,
    /// Results stored with their calls (see [`super::store::Applied::joined`]).
    pub results: AtomicU64,
    /// Bad records met.
    pub problems: AtomicU64,
    /// Bytes consumed.
    pub bytes: AtomicU64,
    /// Reading rounds done.
    pub rounds: AtomicU64,
    /// Times the change queue overflowed and a full rescan replaced it.
    pub rescans: AtomicU64,
    /// Files opened (to sniff their format or to read them). Idle, this stays still.
    pub opens: AtomicU64,
    /// Files found not to be read (not regular files, not of their source's format,
    /// unreadable), counted once per file and reason; `toolsmith sources` lists them.
    pub skipped: AtomicU64,
    /// Reads whose batch the store could not take (a full disk, an I/O error): nothing of it
    /// was stored, not even its checkpoint, so the file is read again from there later.
    pub write_failures: AtomicU64,
    /// Files waiting to be read again after such a failure.
    pub retrying: AtomicU64,
    /// The last such failure, in words.
    pub last_write_failure: Mutex<Option<String>>,
}

/// The first wait before files whose batch the store refused are read again; it doubles with
/// each failed retry up to [`RETRY_MAX`], so a full disk costs a few reads a minute, not a loop.
const RETRY_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between retries.
const RETRY_MAX: Duration = Duration::from_secs(60);

/// What a store failure means for whoever reads `status`, and what to do about it.
fn write_failure_words(err: &StoreError) -> String {
    use rusqlite::ErrorCode;
    let code = match err {
        StoreError::Query(rusqlite::Error::SqliteFailure(e, _)) => Some(e.code),
        _ => None,
    };
    match code {
        Some(ErrorCode::DiskFull) => format!(
            "the disk holding the state store is full ({err}); free space there: ingest \
             retries by itself and loses nothing"
        ),
        Some(ErrorCode::SystemIoFailure) => format!(
            "the state store could not be written ({err}); check the disk holding it: ingest \
             retries by itself and loses nothing"
        ),
        _ => format!("the state store refused a batch ({err}); ingest retries it"),
    }
}

struct OpenFile {
    file: File,
    dev: u64,
    ino: u64,
    last_used: u64,
}

/// The state of reading: owned by one round at a time.
struct TailState {
    store: Store,
    specs: Vec<SourceSpec>,
    options: ReadOptions,
    redactor: Arc<Redactor>,
    open: HashMap<PathBuf, OpenFile>,
    /// Files a source's format did not recognise, with the size they had: looked at again
    /// only when their size changes.
    rejected: HashMap<PathBuf, u64>,
    /// The source each file was found to belong to.
    held_spec: HashMap<PathBuf, SourceSpec>,
    /// Files recorded in the store as skipped, with the reason recorded.
    reported: HashMap<PathBuf, String>,
    clock: u64,
    stats: Arc<TailStats>,
    stop: Arc<AtomicBool>,
    /// The file being read now, for the message when a read outlives the shutdown grace.
    reading: Arc<Mutex<Option<PathBuf>>>,
    /// Files whose last batch the store refused, to be read again.
    retry: BTreeSet<PathBuf>,
}

/// Which source a file belongs to, as far as can be told.
enum Claim {
    /// Read it as this source.
    Read(SourceSpec),
    /// It belongs to this source but cannot be read, for this reason.
    Skip(SourceSpec, String),
    /// No source wants it (or it is empty: not written yet), nothing to report.
    Nothing,
}

/// Why a non-regular file is skipped, without its path (`toolsmith sources` prints that).
fn not_regular(kind: &str) -> String {
    format!(
        "{kind}, not a regular file: skipped without opening it (reading it could block). \
         Logs are regular files; remove it or move it out of the source's directory"
    )
}

#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("stopping")]
    Stopping,
}

impl TailState {
    /// Every file of every source, as found now.
    fn scan(&self) -> BTreeSet<PathBuf> {
        let mut found = BTreeSet::new();
        for spec in &self.specs {
            match &spec.matcher {
                FileMatcher::File(path) => {
                    // Whatever it is: a FIFO where the file should be is reported, not hidden.
                    if path.exists() {
                        found.insert(path.clone());
                    }
                    // Its rotations beside it (`.bash_history.1`).
                    if let Ok(entries) = std::fs::read_dir(&spec.root) {
                        for entry in entries.flatten() {
                            let sibling = entry.path();
                            if formats::rotation(&sibling).is_some() && spec.claims(&sibling) {
                                found.insert(sibling);
                            }
                        }
                    }
                }
                _ => walk(&spec.root, &mut |p| {
                    if spec.claims(p) {
                        found.insert(p.to_owned());
                    }
                }),
            }
        }
        found
    }

    /// The source a file belongs to: a source naming exactly this file wins; otherwise the
    /// first directory or glob source whose format recognises the file (sniffed once;
    /// rejections are looked at again when the file's size changes, since a new file may be
    /// empty when first seen).
    fn spec_for(&mut self, path: &Path, size: u64) -> Claim {
        let exact = self
            .specs
            .iter()
            .find(|s| matches!(&s.matcher, FileMatcher::File(f) if f == path));
        if let Some(spec) = exact {
            return Claim::Read(spec.clone());
        }
        if let Some(why) = formats::compressed(path)
            && let Some(spec) = self.specs.iter().find(|s| s.claims(path))
        {
            return Claim::Skip(spec.clone(), why);
        }
        let candidates: Vec<SourceSpec> = self
            .specs
            .iter()
            .filter(|s| s.claims(path))
            .cloned()
            .collect();
        let Some(first) = candidates.first().cloned() else {
            return Claim::Nothing;
        };
        // An agent's own bookkeeping beside its logs: not a log, and not worth a warning.
        if candidates
            .iter()
            .any(|s| s.format.companion(path).is_some())
        {
            return Claim::Nothing;
        }
        if self.rejected.get(path) == Some(&size) {
            return Claim::Nothing;
        }
        self.stats.opens.fetch_add(1, Ordering::Relaxed);
        let head = match oneshot::read_head(path) {
            Ok(head) => head,
            Err(OpenError::NotRegular { kind, .. }) => {
                return Claim::Skip(first, not_regular(kind));
            }
            Err(OpenError::Io(e)) if e.source.kind() == std::io::ErrorKind::NotFound => {
                return Claim::Nothing;
            }
            Err(OpenError::Io(e)) => return Claim::Skip(first, unreadable(&e)),
        };
        // A rotated file is recognised as the file it was.
        let logical = formats::unrotated(path);
        if let Some(spec) = candidates
            .into_iter()
            .find(|spec| spec.format.sniff(&logical, &head))
        {
            self.rejected.remove(path);
            return Claim::Read(spec);
        }
        self.rejected.insert(path.to_owned(), size);
        if size == 0 {
            return Claim::Nothing;
        }
        let format = first.format_name;
        Claim::Skip(
            first,
            format!(
                "not recognised as a {format} log: no {format} record in its first {} KiB; \
                 looked at again when its size changes. If it is one, name it in a [[source]] \
                 of its own (path = the file, format = \"{format}\"), which reads it unsniffed",
                SNIFF_BYTES / 1024
            ),
        )
    }

    /// Records that `path` is not read, and why, once per reason.
    fn skip(&mut self, path: &Path, spec: &SourceSpec, reason: String) {
        if self.reported.get(path) == Some(&reason) {
            return;
        }
        tracing::warn!(source = %spec.name, path = %path.display(), "log file not read: {reason}");
        self.stats.skipped.fetch_add(1, Ordering::Relaxed);
        let (file, source, format, why) = (
            path.display().to_string(),
            spec.name.clone(),
            spec.format_name,
            reason.clone(),
        );
        let recorded = self.store.call_blocking(move |conn| {
            ingest_store::record_skipped(conn, &file, &source, format, &why)
        });
        if let Err(err) = recorded {
            tracing::warn!(path = %path.display(), "cannot record a skipped file: {err}");
        }
        self.reported.insert(path.to_owned(), reason);
    }

    /// Forgets that `path` was skipped: it was read, or it is gone.
    fn unskip(&mut self, path: &Path) {
        if self.reported.remove(path).is_none() {
            return;
        }
        let file = path.display().to_string();
        if let Err(err) = self
            .store
            .call_blocking(move |conn| ingest_store::forget_skipped(conn, &file))
        {
            tracing::warn!(path = %path.display(), "cannot update a skipped file: {err}");
        }
    }

    fn round(&mut self, paths: BTreeSet<PathBuf>) -> Applied {
        let mut total = Applied::default();
        // A log's rotations before the log, oldest first: the order it was written in.
        let mut paths: Vec<PathBuf> = paths.into_iter().collect();
        formats::rotation_order(&mut paths);
        for path in paths {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            if let Ok(mut reading) = self.reading.lock() {
                *reading = Some(path.clone());
            }
            match self.read_path(&path) {
                Ok(applied) => {
                    self.retry.remove(&path);
                    total.inserted += applied.inserted;
                    total.joined += applied.joined;
                }
                Err(RoundError::Stopping) => break,
                Err(RoundError::Store(StoreError::Closed)) => break,
                Err(RoundError::Store(err)) => {
                    let words = write_failure_words(&err);
                    tracing::warn!(path = %path.display(), "ingest: {words}");
                    self.stats.write_failures.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut last) = self.stats.last_write_failure.lock() {
                        *last = Some(words);
                    }
                    self.retry.insert(path);
                }
                Err(err) => tracing::warn!(path = %path.display(), "ingest failed: {err}"),
            }
            // Within the round too: a first scan of ten thousand sessions must not hold ten
            // thousand descriptors (past the usual limit of 1024) until it ends.
            self.close_idle();
        }
        if let Ok(mut reading) = self.reading.lock() {
            *reading = None;
        }
        self.stats
            .retrying
            .store(self.retry.len() as u64, Ordering::Relaxed);
        self.stats.rounds.fetch_add(1, Ordering::Relaxed);
        total
    }

    fn read_path(&mut self, path: &Path) -> Result<Applied, RoundError> {
        // What is at the path now: a regular file to read, something never to open, or nothing
        // (gone, or a directory, which the run loop walks itself).
        let (current, special) = match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => (Some(meta), None),
            Ok(meta) if meta.is_dir() => (None, None),
            Ok(meta) => (None, reader::special_kind(meta.file_type())),
            Err(_) => (None, None),
        };
        let spec = match self.held_spec.get(path).cloned() {
            Some(spec) => spec,
            None if special.is_some() || current.is_none() => {
                let first = self.specs.iter().find(|s| s.claims(path)).cloned();
                match (special, first) {
                    (Some(kind), Some(spec)) => self.skip(path, &spec, not_regular(kind)),
                    _ => self.unskip(path),
                }
                return Ok(Applied::default());
            }
            None => {
                let size = current.as_ref().map_or(0, |m| m.len());
                match self.spec_for(path, size) {
                    Claim::Read(spec) => spec,
                    Claim::Skip(spec, reason) => {
                        self.skip(path, &spec, reason);
                        return Ok(Applied::default());
                    }
                    Claim::Nothing => return Ok(Applied::default()),
                }
            }
        };
        let mut applied = Applied::default();
        // A file we hold that is no longer at this path (rotated or deleted): finish it first.
        let replaced = self.open.get(path).is_some_and(|held| {
            current
                .as_ref()
                .is_none_or(|m| (m.dev(), m.ino()) != (held.dev, held.ino))
        });
        if replaced && let Some(mut held) = self.open.remove(path) {
            let a = self.read_open(&spec, path, &mut held.file)?;
            applied.inserted += a.inserted;
            applied.joined += a.joined;
        }
        let Some(_) = current else {
            self.held_spec.remove(path);
            match special {
                Some(kind) => self.skip(path, &spec, not_regular(kind)),
                None => self.unskip(path),
            }
            return Ok(applied);
        };
        self.held_spec.insert(path.to_owned(), spec.clone());
        let mut held = match self.open.remove(path) {
            Some(held) => held,
            None => {
                self.stats.opens.fetch_add(1, Ordering::Relaxed);
                let file = match reader::open_regular(path) {
                    Ok(file) => file,
                    // Swapped for something else since it was looked at.
                    Err(OpenError::NotRegular { kind, .. }) => {
                        self.held_spec.remove(path);
                        self.skip(path, &spec, not_regular(kind));
                        return Ok(applied);
                    }
                    Err(OpenError::Io(e)) if e.source.kind() == std::io::ErrorKind::NotFound => {
                        self.held_spec.remove(path);
                        return Ok(applied);
                    }
                    Err(OpenError::Io(e)) => {
                        self.held_spec.remove(path);
                        self.skip(path, &spec, unreadable(&e));
                        return Ok(applied);
                    }
                };
                // The descriptor's identity, not the path's: the path may have moved on.
                let meta = file.metadata().map_err(|source| ReadError {
                    path: path.display().to_string(),
                    source,
                })?;
                self.stats.files.fetch_add(1, Ordering::Relaxed);
                OpenFile {
                    file,
                    dev: meta.dev(),
                    ino: meta.ino(),
                    last_used: 0,
                }
            }
        };
        let result = self.read_open(&spec, path, &mut held.file);
        self.clock += 1;
        held.last_used = self.clock;
        self.open.insert(path.to_owned(), held);
        let a = result?;
        self.unskip(path);
        applied.inserted += a.inserted;
        applied.joined += a.joined;
        Ok(applied)
    }

    fn read_open(
        &mut self,
        spec: &SourceSpec,
        path: &Path,
        file: &mut File,
    ) -> Result<Applied, RoundError> {
        let key = path.display().to_string();
        let previous = self
            .store
            .call_blocking(move |conn| ingest_store::checkpoint(conn, &key))?;
        let mut applied = Applied::default();
        let stats = &self.stats;
        let stop = &self.stop;
        let store = &self.store;
        let mut known = |probe: &ingest_store::Probe<'_>| {
            oneshot::known_generations::<RoundError>(store, probe)
        };
        let mut writer = ingest_store::BatchWriter::new(&self.store);
        let mut count = |a: Applied| {
            stats.actions.fetch_add(a.inserted, Ordering::Relaxed);
            stats.results.fetch_add(a.joined, Ordering::Relaxed);
            applied.inserted += a.inserted;
            applied.joined += a.joined;
        };
        let read = reader::read_from::<RoundError>(
            file,
            path,
            &spec.name,
            spec.format,
            previous.as_ref(),
            &mut known,
            &self.options,
            &self.redactor,
            |batch| {
                stats
                    .problems
                    .fetch_add(batch.problems.len() as u64, Ordering::Relaxed);
                stats.bytes.fetch_add(batch.bytes, Ordering::Relaxed);
                count(writer.push(batch)?);
                // Between batches is a safe place to stop: the store is consistent.
                if stop.load(Ordering::Relaxed) {
                    return Err(RoundError::Stopping);
                }
                Ok(())
            },
        );
        // The batch in flight counts whether or not reading went on after it.
        let last = writer.finish();
        if let Ok(a) = last {
            count(a);
        }
        read?;
        last?;
        Ok(applied)
    }

    fn close_idle(&mut self) {
        if self.open.len() <= MAX_OPEN_FILES {
            return;
        }
        let mut by_age: Vec<(u64, PathBuf)> = self
            .open
            .iter()
            .map(|(p, f)| (f.last_used, p.clone()))
            .collect();
        by_age.sort();
        for (_, path) in by_age.into_iter().take(self.open.len() - MAX_OPEN_FILES) {
            self.open.remove(&path);
        }
    }
}

/// Why a file that should be read cannot be opened, without its path.
fn unreadable(err: &ReadError) -> String {
    format!(
        "cannot be opened: {}; fix its permissions (it is read again when it changes)",
        err.source
    )
}

/// Files under `dir` — regular ones and those that are not (FIFOs, sockets, devices, which are
/// reported, never opened) — without following symlinks to directories.
fn walk(dir: &Path, found: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            walk(&path, found);
        } else if !kind.is_symlink() {
            // A database's writes land in its `-wal`: the database is what is read.
            found(&super::database::main_file(&path));
        }
    }
}

/// Whether a change is one that can give the tailer something to read. Accesses (opens,
/// reads, closes) are not — the tailer's own opens would otherwise start the next round, and
/// the next, forever, once a source holds more files than are kept open; a write is seen as
/// a modification, so the close after it adds nothing either.
fn worth_a_round(kind: &notify::EventKind) -> bool {
    !matches!(kind, notify::EventKind::Access(_))
}

/// The daemon's tailer.
pub struct Tailer {
    state: TailState,
    debounce: Duration,
    grace: Duration,
    events: EventBus,
}

impl Tailer {
    /// A tailer over `specs`. On shutdown, a read still under way after `grace` is left
    /// behind (reads stop between batches, so this only happens to a read stuck in the kernel).
    pub fn new(
        store: Store,
        specs: Vec<SourceSpec>,
        options: ReadOptions,
        debounce: Duration,
        grace: Duration,
        events: EventBus,
        stats: Arc<TailStats>,
    ) -> Self {
        Tailer {
            state: TailState {
                store,
                specs,
                options,
                redactor: Arc::new(Redactor::new()),
                open: HashMap::new(),
                rejected: HashMap::new(),
                held_spec: HashMap::new(),
                reported: HashMap::new(),
                clock: 0,
                stats,
                stop: Arc::new(AtomicBool::new(false)),
                reading: Arc::default(),
                retry: BTreeSet::new(),
            },
            debounce,
            grace,
            events,
        }
    }

    /// Scans every source, then follows changes until `shutdown`.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let Tailer {
            state,
            debounce,
            grace,
            events,
        } = self;
        let stop = Arc::clone(&state.stop);
        let reading = Arc::clone(&state.reading);
        // What was skipped is found again by the scan below, under the sources in force now.
        if let Err(err) = state
            .store
            .call(|conn| ingest_store::forget_all_skipped(conn))
            .await
        {
            tracing::warn!("cannot clear the skipped files of the last run: {err}");
        }
        let overflow = Arc::new(AtomicBool::new(false));
        let (tx, mut rx) = mpsc::channel::<PathBuf>(8192);
        let watcher = {
            let overflow = Arc::clone(&overflow);
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event) if !worth_a_round(&event.kind) => {}
                Ok(event) => {
                    for path in event.paths {
                        // An agent's database changes through its `-wal` (and `-shm`).
                        let path = super::database::main_file(&path).into_owned();
                        if tx.try_send(path).is_err() {
                            overflow.store(true, Ordering::Relaxed);
                        }
                    }
                }
                Err(_) => overflow.store(true, Ordering::Relaxed),
            })
        };
        let mut watcher = match watcher {
            Ok(w) => Some(w),
            Err(err) => {
                tracing::error!("cannot watch log files ({err}); reading them at start-up only");
                None
            }
        };
        if let Some(w) = watcher.as_mut() {
            for spec in &state.specs {
                let mode = if spec.recursive() {
                    RecursiveMode::Recursive
                } else {
                    RecursiveMode::NonRecursive
                };
                if let Err(err) = w.watch(&spec.root, mode) {
                    tracing::warn!(source = %spec.name, root = %spec.root.display(), "cannot watch: {err}");
                }
            }
        }
        tracing::info!(sources = state.specs.len(), "ingest: reading sources");

        let mut state = Some(state);
        let mut dirty = state.as_ref().map(TailState::scan).unwrap_or_default();
        // Directories seen: an event naming one of them (its metadata changed as a file in it
        // was created) is not a reason to read every file in it again.
        let mut seen_dirs: std::collections::HashSet<PathBuf> = dirty
            .iter()
            .filter_map(|p| p.parent().map(Path::to_owned))
            .collect();
        // Files the store refused a batch of are read again after a wait that grows with each
        // failure: a timer, never a loop.
        let mut retry_wait = RETRY_FIRST;
        // When they are read again: kept across events, which must not put the retry off.
        let mut retry_at: Option<tokio::time::Instant> = None;
        loop {
            if !dirty.is_empty() {
                let Some(mut owned) = state.take() else { break };
                let paths = std::mem::take(&mut dirty);
                let mut round = tokio::task::spawn_blocking(move || {
                    let applied = owned.round(paths);
                    (owned, applied)
                });
                let joined = tokio::select! {
                    joined = &mut round => joined,
                    _ = async { let _ = shutdown.wait_for(|s| *s).await; } => {
                        // Reads stop between batches; one stuck in the kernel (a hung network
                        // file system) is left behind after the grace, so the daemon can stop.
                        stop.store(true, Ordering::Relaxed);
                        match tokio::time::timeout(grace, &mut round).await {
                            Ok(joined) => joined,
                            Err(_) => {
                                let path = reading
                                    .lock()
                                    .ok()
                                    .and_then(|p| p.clone())
                                    .map_or_else(|| "?".into(), |p| p.display().to_string());
                                tracing::error!(
                                    path,
                                    "ingest: a read did not return within the shutdown grace \
                                     (daemon.shutdown_grace_s); stopping without it. Check the \
                                     file system holding this file"
                                );
                                break;
                            }
                        }
                    }
                };
                match joined {
                    Ok((owned, applied)) => {
                        state = Some(owned);
                        if applied.inserted > 0 || applied.joined > 0 {
                            events.publish(Event::IngestActions {
                                new: applied.inserted,
                                results: applied.joined,
                            });
                        }
                    }
                    Err(err) => {
                        tracing::error!("ingest round failed: {err}");
                        break;
                    }
                }
            }
            if *shutdown.borrow() {
                break;
            }
            let retry = state.as_ref().map(|s| s.retry.clone()).unwrap_or_default();
            if retry.is_empty() {
                retry_wait = RETRY_FIRST;
                retry_at = None;
            } else if retry_at.is_none() {
                retry_at = Some(tokio::time::Instant::now() + retry_wait);
                retry_wait = (retry_wait * 2).min(RETRY_MAX);
            }
            let retry_deadline = retry_at.unwrap_or_else(tokio::time::Instant::now);
            tokio::select! {
                _ = tokio::time::sleep_until(retry_deadline), if retry_at.is_some() => {
                    retry_at = None;
                    dirty.extend(retry);
                    continue;
                }
                first = rx.recv() => {
                    let Some(first) = first else { break };
                    dirty.insert(first);
                    // Debounce: gather what else changes in the next moment.
                    let deadline = tokio::time::Instant::now() + debounce;
                    while let Ok(Some(path)) = tokio::time::timeout_at(deadline, rx.recv()).await {
                        dirty.insert(path);
                    }
                }
                _ = async { let _ = shutdown.wait_for(|s| *s).await; } => break,
            }
            if overflow.swap(false, Ordering::Relaxed) {
                if let Some(s) = state.as_ref() {
                    s.stats.rescans.fetch_add(1, Ordering::Relaxed);
                    dirty = s.scan();
                }
            } else if let Some(s) = state.as_ref() {
                // A new directory (Codex's dated folders) may hold files created before its
                // watch was in place: look inside it.
                let mut extra = BTreeSet::new();
                for path in &dirty {
                    // A directory that went may come back, holding files made before its watch.
                    if !path.exists() {
                        seen_dirs.remove(path);
                    }
                    if path.is_dir() && seen_dirs.insert(path.clone()) {
                        walk(path, &mut |p| {
                            if s.specs.iter().any(|spec| spec.claims(p)) {
                                extra.insert(p.to_owned());
                            }
                        });
                    }
                }
                dirty.retain(|p| s.specs.iter().any(|spec| spec.claims(p)));
                dirty.extend(extra);
            }
        }
        stop.store(true, Ordering::Relaxed);
        drop(watcher);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment of the given variables only.
    struct TestEnv(Vec<(&'static str, String)>);

    impl Env for TestEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        }
        fn is_root(&self) -> bool {
            false
        }
    }

    #[test]
    fn default_sources_are_the_standard_locations() {
        struct Vars(&'static [(&'static str, &'static str)]);
        impl Env for Vars {
            fn var(&self, name: &str) -> Option<String> {
                self.0
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
            fn is_root(&self) -> bool {
                false
            }
        }
        let paths = |vars| {
            default_sources(&Vars(vars))
                .into_iter()
                .map(|s| (s.format, s.path))
                .collect::<Vec<_>>()
        };
        let has = |paths: &[(String, String)], format: &str, path: &str| {
            paths.iter().any(|(f, p)| f == format && p == path)
        };
        let plain = paths(&[("HOME", "/home/u")]);
        assert!(has(&plain, "claude-code", "/home/u/.claude/projects"));
        assert!(has(&plain, "codex", "/home/u/.codex/sessions"));
        assert!(has(&plain, "codex", "/home/u/.codex/archived_sessions"));
        assert!(has(
            &plain,
            "fish",
            "/home/u/.local/share/fish/fish_history"
        ));
        // Each agent's own override of its home (Codex: `codex-rs/core/src/config.rs`,
        // `find_codex_home`; Claude Code: `CLAUDE_CONFIG_DIR`).
        let moved = paths(&[
            ("HOME", "/home/u"),
            ("CODEX_HOME", "/srv/codex"),
            ("CLAUDE_CONFIG_DIR", "/srv/claude"),
            ("XDG_DATA_HOME", "/d"),
        ]);
        assert!(has(&moved, "codex", "/srv/codex/sessions"));
        assert!(has(&moved, "codex", "/srv/codex/archived_sessions"));
        assert!(has(&moved, "claude-code", "/srv/claude/projects"));
        assert!(has(&moved, "fish", "/d/fish/fish_history"));
        assert!(paths(&[]).is_empty());
    }

    #[test]
    fn gemini_sessions_are_found_where_gemini_cli_writes_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let moved = dir.path().join("gemini-home");
        let sources = gemini_sources(Some(&home), None);
        assert_eq!(sources.len(), 2);
        assert!(
            sources[0]
                .path
                .starts_with(&*home.join(".gemini/tmp").to_string_lossy())
        );
        // GEMINI_CLI_HOME moves Gemini CLI's home, and so its sessions.
        let sources = gemini_sources(Some(&home), Some(&moved));
        assert_eq!(literal_root(&sources[0].path), moved.join(".gemini/tmp"));
        assert!(gemini_sources(None, None).is_empty());
        let tmp = moved.join(".gemini/tmp");
        let specs: Vec<SourceSpec> = sources
            .iter()
            .map(|s| resolve_one(s, None).expect("a glob resolves"))
            .collect();
        let claims = |rel: &str| -> Vec<&str> {
            specs
                .iter()
                .filter(|s| s.claims(&tmp.join(rel)))
                .map(|s| s.format_name)
                .collect()
        };
        assert_eq!(
            claims("proj/chats/session-2026-05-01T10-00-5d1e8f3a.jsonl"),
            ["gemini-cli"]
        );
        assert_eq!(
            claims("proj/chats/5d1e8f3a-0c2b/sub-7.jsonl"),
            ["gemini-cli"]
        );
        assert_eq!(
            claims("proj/chats/session-2025-12-01T09-00-0a1b2c3d.json"),
            ["gemini-cli-json"]
        );
        assert!(claims("proj/logs.json").is_empty());
        assert!(claims("proj/checkpoint-x.json").is_empty());
        assert!(claims("proj/shell_history").is_empty());
    }

    #[test]
    fn the_agents_of_2026_have_their_default_places() {
        let home = Path::new("/home/u");
        let sources = agent_sources_2026(home, None);
        let has = |format: &str, path: &str| {
            sources
                .iter()
                .any(|(f, p)| *f == format && p == Path::new(path))
        };
        assert!(has("kimi-cli", "/home/u/.kimi/sessions"));
        assert!(has(
            "cline",
            "/home/u/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"
        ));
        assert!(has(
            "cline",
            "/home/u/.config/VSCodium/User/globalStorage/saoudrizwan.claude-dev/tasks"
        ));
        assert!(has("cline", "/home/u/.cline/data/tasks"));
        assert!(has("cursor", "/home/u/.cursor/projects"));
        // KIMI_SHARE_DIR moves Kimi's sessions, with `~` as the home.
        let moved = agent_sources_2026(home, Some(Path::new("/data/kimi")));
        assert!(moved.contains(&("kimi-cli", PathBuf::from("/data/kimi/sessions"))));
        let tilde = agent_sources_2026(home, Some(Path::new("~/k")));
        assert!(tilde.contains(&("kimi-cli", PathBuf::from("/home/u/k/sessions"))));
        // Every one is a known format.
        for (format, _) in &sources {
            assert!(formats::by_name(format).is_some(), "{format}");
        }
    }

    #[test]
    fn opencode_is_found_under_xdg_data_home_with_its_channels() {
        let data = tempfile::tempdir().expect("tempdir");
        let dir = data.path().join("opencode");
        std::fs::create_dir_all(&dir).expect("mkdir");
        for name in [
            "opencode.db",
            "opencode-beta.db",
            "opencode.db-wal",
            "auth.json",
        ] {
            std::fs::write(dir.join(name), b"").expect("write");
        }
        let data_home = data.path().display().to_string();
        let sources = default_sources(&TestEnv(vec![
            ("HOME", "/home/u".into()),
            ("XDG_DATA_HOME", data_home),
        ]));
        let opencode: Vec<_> = sources
            .iter()
            .filter(|s| s.format == "opencode")
            .map(|s| s.path.clone())
            .collect();
        assert_eq!(
            opencode,
            [
                dir.join("opencode.db").display().to_string(),
                dir.join("opencode-beta.db").display().to_string()
            ]
        );
    }

    #[test]
    fn opencode_db_names_a_database_absolute_or_under_the_data_directory() {
        use std::ffi::OsStr;
        let data = Path::new("/home/u/.local/share");
        assert_eq!(
            opencode_override(Some(OsStr::new("/srv/oc.db")), data),
            Some(PathBuf::from("/srv/oc.db"))
        );
        assert_eq!(
            opencode_override(Some(OsStr::new("work.db")), data),
            Some(PathBuf::from("/home/u/.local/share/opencode/work.db"))
        );
        assert_eq!(opencode_override(Some(OsStr::new(":memory:")), data), None);
        assert_eq!(opencode_override(None, data), None);
    }

    #[test]
    fn crush_databases_of_the_projects_seen_are_sources() {
        let home = tempfile::tempdir().expect("tempdir");
        let with = home.path().join("app");
        let without = home.path().join("other");
        std::fs::create_dir_all(with.join(".crush")).expect("mkdir");
        std::fs::create_dir_all(&without).expect("mkdir");
        std::fs::write(with.join(".crush/crush.db"), b"").expect("write");
        let projects = [with.display().to_string(), without.display().to_string()];
        let specs = seen_project_sources(&projects);
        assert_eq!(specs.len(), 1, "{specs:?}");
        assert_eq!(specs[0].format_name, "crush");
        assert!(specs[0].claims(&with.join(".crush/crush.db")));
    }

    #[test]
    fn sources_resolve_to_files_trees_and_globs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("hist");
        std::fs::write(&file, "ls\n").expect("write");
        let setting = |format: &str, path: String| SourceSetting {
            name: "s".into(),
            format: format.into(),
            path,
            origin: crate::config::Origin::Default,
        };
        let spec = resolve_one(&setting("bash", file.display().to_string()), None).expect("file");
        assert!(matches!(spec.matcher, FileMatcher::File(_)));
        assert_eq!(spec.root, dir.path());
        assert!(spec.claims(&file));
        assert!(!spec.claims(&dir.path().join("other")));

        let spec =
            resolve_one(&setting("codex", dir.path().display().to_string()), None).expect("tree");
        assert!(matches!(spec.matcher, FileMatcher::Tree));
        assert!(spec.claims(&dir.path().join("2026/11/22/rollout-x.jsonl")));

        let glob = format!("{}/**/*.jsonl", dir.path().display());
        let spec = resolve_one(&setting("native", glob), None).expect("glob");
        assert_eq!(spec.root, dir.path());
        assert!(spec.claims(&dir.path().join("a/b.jsonl")));
        assert!(!spec.claims(&dir.path().join("a/b.json")));

        let missing = resolve_one(&setting("bash", "/nonexistent/x".into()), None);
        assert!(missing.is_err());
        let home = resolve_one(&setting("bash", "~/h".into()), None);
        assert!(home.is_err_and(|e| e.contains("$HOME")));
    }
}
