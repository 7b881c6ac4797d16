//! Agents use the tools: the MCP server and the Agent Skills export.
//!
//! - [`server`]: `toolsmith mcp`, the registry's tools over the Model Context Protocol.
//! - [`catalog`]: which tools are offered, in which order, within the context budget.
//! - [`skills`]: each active tool as an Agent Skill (`<name>/SKILL.md`).
//! - [`requests`]: agents ask for the tools they lack (`toolsmith_request`, its status, the
//!   proposals awaiting review): caps, the session's rate, progress.
//! - [`transport`]: newline-delimited JSON-RPC on stdio that answers unreadable lines.
//! - [`agents`]: the agents reached — their skill folders, and their MCP set-up merged into
//!   their own configuration files.

pub mod agents;
pub mod catalog;
pub mod requests;
pub mod server;
pub mod skills;
pub mod transport;
