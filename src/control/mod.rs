//! The control socket: JSON-RPC 2.0, one object per line, over a Unix socket.
//!
//! [`protocol`] holds the message types, [`server`] the daemon side (framing, peer checks,
//! limits, event streams), [`client`] the blocking client the CLI uses.

pub mod client;
pub mod protocol;
pub mod server;

pub use client::{Client, ClientError};
pub use protocol::RpcError;
