//! The registry: approved tools in a git repository, and the manifest format they are
//! described by.
//!
//! - [`auto`]: auto-approval, only by explicit policy rules;
//! - [`manifest`]: `tools/<name>/tool.yaml`, read as untrusted input;
//! - [`digest`]: the digest of a tool version's files;
//! - [`repo`]: the git repository — proposals, approval, rejection, rollback, deprecation,
//!   verification, and what a crash or plain git left behind;
//! - [`review`]: approval and rejection recorded in git and in the store;
//! - [`run`]: an approved tool run in the sandbox and recorded;
//! - [`sync`]: sharing through a git remote;
//! - [`versions`]: semantic versions from the interface diff;
//! - [`index`]: `TOOLS.md`, rewritten with every change.

pub mod auto;
pub mod digest;
pub mod index;
pub mod manifest;
pub mod repo;
pub mod review;
pub mod run;
pub mod sync;
pub mod versions;
