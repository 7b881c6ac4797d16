//! Generation: from a ranked pattern or a request to a candidate tool's files.
//!
//! - [`candidates`]: candidates and their persisted state machine;
//! - [`from_pattern`]: a `ToolSpec` from a mined pattern or a request;
//! - [`pipeline`]: the generation loop, from an opportunity to a validated candidate;
//! - [`llm`]: model clients (OpenAI-compatible and Anthropic), retries, cache and budget.
//! - [`logged`]: what the log recorded for each occurrence, which the derived tests expect;
//! - [`spec`]: `ToolSpec`, what a tool must do;
//! - [`template`]: the offline generator (POSIX sh, bash where a pattern's `**` must match at
//!   any depth) and the tests derived from evidence;
//! - [`template_py`]: the offline Python generator, for pure text transformations;
//! - [`prompt`]: prompts per origin and the repair turn;
//! - [`reach`]: the network hosts a tool needs, derived from the evidence (package indexes,
//!   git remotes), never from a model;
//! - [`staging`]: each attempt's files and diagnostics, kept;
//! - [`review`]: review decisions (approval, rejection) recorded in the git registry and in the
//!   store, for candidates and the patterns they came from;
//! - [`notices`]: the notices of proposals awaiting review, each given once per channel;
//! - [`contract`]: the file-block format a model must answer in, read strictly.

pub mod candidates;
pub mod contract;
pub mod from_pattern;
pub mod lines;
pub mod llm;
pub mod logged;
pub mod notices;
pub mod pipeline;
pub mod prompt;
pub mod reach;
pub mod review;
pub mod spec;
pub mod staging;
pub mod template;
pub mod template_py;
