//! Ingest: agent and shell logs in, as normalized [`action::Action`]s, exactly once, with
//! secrets out.
//!
//! [`adapters`] turn the records of each format into items; [`framing`] cuts a file's bytes into
//! records incrementally.

pub mod action;
pub mod adapters;
pub mod framing;
