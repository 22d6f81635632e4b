//! A hash map keyed by track ids with a cheap multiplicative hash (ids are
//! not attacker-chosen: they come from the library).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap<u64, V>` with `IdHasher`.
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// Fibonacci hashing with the high half folded into the low half, so both
/// the bucket index (low bits) and the control byte (high bits) vary.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        let h = (x ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

/// A 64-bit mix of `x` with a seed (SplitMix64's finaliser).
pub(crate) fn mix64(x: u64, seed: u64) -> u64 {
    let mut z = x ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
