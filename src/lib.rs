//! toolsmith: watches coding agents' logs, mines the habits they repeat, and turns each into a
//! sandboxed, reviewed, versioned tool.
//!
//! See `ARCHITECTURE.md` for the shape of the code: one module per pipeline stage, the daemon
//! wiring them together, the CLI talking to it over the control socket.

pub mod action;
pub mod cli;
pub mod config;
pub mod control;
pub mod daemon;
pub mod events;
pub mod exit;
pub mod generate;
pub mod health;
pub mod host;
pub mod ingest;
pub mod invoke;
pub mod logging;
pub mod mcp;
pub mod mine;
pub mod package;
pub mod quote;
pub mod registry;
pub mod run;
pub mod sandbox;
pub mod schedule;
pub mod stats;
pub mod store;
pub mod validate;
