//! The tool package format that generation, validation, the registry and the MCP server all
//! speak: a tool's manifest and the digest of a version's profile and files.
//!
//! - [`manifest`]: `tools/<name>/tool.yaml`, read as untrusted input;
//! - [`digest`]: the digest of a tool version's profile and files.

pub mod digest;
pub mod manifest;
