//! Action abstraction: each action becomes the tokens sequence mining works on (being split by
//! concern; see `tables.rs`).

mod tables;

pub use tables::*;
