//! Generation: from a ranked pattern or a request to a candidate tool's files.
//!
//! - [`llm`]: model clients (OpenAI-compatible and Anthropic), retries, cache and budget.

pub mod llm;
