//! The registry: approved tools in a git repository, and the manifest format they are
//! described by.
//!
//! - [`manifest`]: `tools/<name>/tool.yaml`, read as untrusted input;
//! - [`digest`]: the digest of a tool version's files.

pub mod digest;
pub mod manifest;
