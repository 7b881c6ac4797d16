//! The hashes a template miner keys its tables by: of a word's or a line's bytes (a small
//! mum-hash, fast on short words), and the identity hasher for maps keyed by such hashes.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

// ---------------------------------------------------------------------------------------------
// Hashing

/// A hasher for keys that already are well-mixed 64-bit hashes.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; fold anything else in for completeness.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn write_u32(&mut self, n: u32) {
        // Template ids are small and sequential: a multiplication spreads them over the high
        // bits, which hash tables use too.
        self.0 = u64::from(n).wrapping_mul(K);
    }
}

/// Maps keyed by well-mixed 64-bit hashes.
pub(super) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// Maps keyed by template ids and slots (internal numbers, not chosen by the input).
pub(super) type U32Map<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

pub(super) const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// wyhash's secrets (any odd constants with well-spread bits would do).
pub(super) const S0: u64 = 0xa076_1d64_78bd_642f;

pub(super) const S1: u64 = 0xe703_7ed1_a0b4_28db;

/// The 128-bit product of `a` and `b`, its halves folded (wyhash's `mum`): a full-width mix in
/// one multiplication.
pub(super) fn mum(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// A fast non-cryptographic hash of a word, after wyhash: 16 bytes per multiplication, the
/// last 1–16 bytes read as (possibly overlapping) loads from both ends, the length mixed in,
/// then a final multiplication.
///
/// Words are short (9 bytes on average in the Loghub samples) and every word of every line is
/// hashed, so the tail is what costs: no byte-wise copy (it was a `memcpy` call per word) and
/// few dependent multiplications.
#[inline]
pub(super) fn hash_bytes(bytes: &[u8]) -> u64 {
    let n = bytes.len() as u64;
    let mut seed = S0 ^ n;
    let mut rest = bytes;
    while rest.len() > 16
        && let Some((c, r)) = rest.split_first_chunk::<16>()
    {
        let (a, b) = (read8(&c[..8]), read8(&c[8..]));
        seed = mum(a ^ S1, b ^ seed);
        rest = r;
    }
    let (a, b) = if rest.len() > 8 {
        (read8(rest), read8(&rest[rest.len() - 8..]))
    } else {
        (read_tail(rest), 0)
    };
    mum(S1 ^ n, mum(a ^ S1, b ^ seed))
}

/// The first 8 bytes of `b` (at least 8 long) as a little-endian number.
fn read8(b: &[u8]) -> u64 {
    b.first_chunk::<8>().map_or(0, |c| u64::from_le_bytes(*c))
}

/// Up to 8 bytes as one number, without a copy: two overlapping 4-byte loads from 4 bytes
/// on, the first, middle and last byte below that. Distinct for distinct inputs of one length.
fn read_tail(b: &[u8]) -> u64 {
    let n = b.len();
    if let (Some(x), Some(y)) = (b.first_chunk::<4>(), b.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*x)) | (u64::from(u32::from_le_bytes(*y)) << 32)
    } else if let (Some(&x), Some(&y)) = (b.first(), b.last()) {
        u64::from(x) | (u64::from(b[n / 2]) << 8) | (u64::from(y) << 16)
    } else {
        0
    }
}
