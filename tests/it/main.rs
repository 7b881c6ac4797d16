//! The integration tests, one binary with a module per area: linking the crate and its
//! dependencies (git2, bundled SQLite, rustls, rmcp) once instead of once per file.
//!
//! Each module spawns the real binaries with temporary directories (`common`). Run one area with
//! `cargo test --test it AREA::` (e.g. `cargo test --test it registry::`). The escape battery
//! (`tests/sandbox_battery.rs`) is a binary of its own: it aims real escapes at its own test
//! process and runs floods under an outer guard, which other tests must not share.

// Tests may panic on what they set up themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod aliases;
mod approved_tree;
mod architecture;
mod bad_input;
mod cli;
mod control_timeouts;
mod cross_agent;
mod daemon;
mod demo;
mod edit;
mod gemini;
mod generate;
mod globs;
mod habits;
mod heal;
mod health;
mod ingest;
mod ingest_quiet;
mod install;
mod keep_rate;
mod lines;
mod llm;
mod llm_real;
mod mcp;
mod mine;
mod needs;
mod network;
mod notices;
mod planted;
mod prefixspan_golden;
mod readers_2026;
mod registry;
mod sandbox;
mod secrets;
mod secrets_by_rule;
mod soak;
mod spec_review;
mod startup;
mod stats;
mod systemd_units;
mod toolchains;
mod ui;
