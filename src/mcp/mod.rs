//! Agents use the tools: the MCP server and the Agent Skills export.
//!
//! - [`skills`]: each active tool as an Agent Skill (`<name>/SKILL.md`).

pub mod skills;
