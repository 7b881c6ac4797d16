//! Validation: every check a candidate passes before it is proposed for review.
//!
//! - [`needs`]: what a candidate needs that the policy asks a person to grant, or denies;
//! - [`policy`]: policy gating of the code (capability domains and rules with ids);
//! - [`cases`]: a tool's test cases and the comparison of runs with them;
//! - [`report`]: what an attempt's checks found ([`report::Diagnostics`]);
//! - [`run`]: the validation runner, every layer in order, tests in the sandbox.

pub mod cases;
pub mod needs;
pub mod policy;
pub mod report;
pub mod run;
