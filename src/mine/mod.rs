//! Mining: finding what agents keep doing by hand.
//!
//! [`templates`] groups error output lines into templates (a Drain-like online miner).

pub mod templates;
