//! Health: how registered tools fare in use.
//!
//! - [`executions`]: every run recorded (tool, version, caller, outcome, error class, duration),
//!   and each version's health computed from its recent runs;
//! - [`classify`]: the error class of a failed run;
//! - [`score`]: the documented score formula, statuses, and the policy's `[health]` table;
//! - [`heal`]: what a repair is made from (new evidence, regression cases) and the status the
//!   health stage's own actions give a tool;
//! - [`repair`]: a repair made and proposed (healing, in one place), through generation;
//! - [`actions`]: what the health stage did about each tool, kept for its history and bounds;
//! - [`check`]: the scheduled pass: regressions rolled back, failing tools repaired, sprawl
//!   proposed away.

pub mod actions;
pub mod check;
pub mod classify;
pub mod executions;
pub mod heal;
pub mod repair;
pub mod score;
