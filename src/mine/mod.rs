//! Mining: finding what agents keep doing by hand, with the evidence, ranked.
//!
//! - [`shell`] parses command lines into simple commands; [`token`] abstracts actions into
//!   tokens (program, sub-command, flags, typed slots) with their concrete values.
//! - [`sequences`] finds the token sequences repeated across sessions (gap-constrained
//!   PrefixSpan, closed, folded).
//! - [`templates`] groups error output lines into templates (a Drain-like online miner);
//!   [`recovery`] finds the error→recovery habits built on them.
//! - [`defs`] reads the user's shell aliases and functions, so a command typed through one is
//!   read as what the shell ran.
//! - [`params`] aligns a pattern's occurrences into literals, parameters and internal variables.
//! - [`score`] ranks patterns; [`pattern`] is the result and its storage; [`miner`] runs it all.

pub mod chance;
pub mod defs;
pub mod line;
pub mod miner;
pub mod params;
pub mod pattern;
pub mod recovery;
pub mod score;
pub mod sequences;
pub mod shell;
pub mod templates;
pub mod token;
