//! Ingest: agent and shell logs in, as normalized [`crate::action::Action`]s, exactly once, with
//! secrets out.
//!
//! - [`adapters`]: one per format, turning records into items (pure functions of the bytes);
//! - [`database`]: reading an agent's SQLite database (OpenCode, Crush) read-only, in short
//!   read transactions, while the agent writes it;
//! - [`framing`]: cutting a file's bytes into records incrementally, with a size cap;
//! - [`reader`]: reading one file from its checkpoint into batches (identity checks,
//!   redaction, output capping);
//! - [`redact`], [`redact_shell`], [`redact_files`], [`redact_stores`], [`redact_stdin`],
//!   [`sanitize`]: secrets out — by pattern in any text, by a command's shape, by a file's kind
//!   or a structure's markings, by what a secret store prints, by what is fed to a password
//!   prompt, and by what came before in the file;
//! - [`store`]: applying a batch and its checkpoint in one transaction;
//! - [`formats`]: the registry of formats, by name and by sniffing;
//! - [`oneshot`]: `toolsmith ingest` — files and directories read to their end;
//! - [`tail`]: the daemon's live tailing (start-up scan, inotify, debounce, rotation).

pub mod adapters;
pub mod database;
pub mod formats;
pub mod framing;
pub mod oneshot;
pub mod reader;
pub mod redact;
pub mod redact_files;
#[cfg(test)]
mod redact_held_back;
pub mod redact_shell;
pub mod redact_stdin;
pub mod redact_stores;
pub mod sanitize;
pub mod store;
pub mod tail;
