//! Health: how registered tools fare in use.
//!
//! - [`executions`]: every run recorded (tool, version, caller, outcome, error class, duration),
//!   and each version's health computed from its recent runs;
//! - [`classify`]: the error class of a failed run;
//! - [`score`]: the documented score formula, statuses, and the policy's `[health]` table.

pub mod classify;
pub mod executions;
pub mod score;
