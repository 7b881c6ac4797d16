//! Validation: every check a candidate passes before it is proposed for review.
//!
//! - [`policy`]: policy gating of the code (capability domains and rules with ids).

pub mod policy;
