//! Generation: from a ranked pattern or a request to a candidate tool's files.
//!
//! - [`llm`]: model clients (OpenAI-compatible and Anthropic), retries, cache and budget.
//! - [`contract`]: the file-block format a model must answer in, read strictly.

pub mod contract;
pub mod llm;
