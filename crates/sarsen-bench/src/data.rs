//! Deterministic benchmark data: key formatting, value bytes and random key orders.

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

/// Keys are the key index in zero-padded decimal, `key_size` digits wide
/// (`%016d` at the default 16), so byte order equals numeric order.
#[derive(Clone, Copy, Debug)]
pub struct KeyFormat {
    size: usize,
}

impl KeyFormat {
    /// A format for keys of `size` bytes.
    pub fn new(size: usize) -> Self {
        KeyFormat { size }
    }

    /// Key length in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Decimal digits needed to write `max`.
    pub fn digits_needed(max: u64) -> usize {
        let mut digits = 1;
        let mut x = max / 10;
        while x > 0 {
            digits += 1;
            x /= 10;
        }
        digits
    }

    /// Writes the key of `idx` into `out` (which must be `size` bytes long).
    #[inline]
    pub fn write(&self, idx: u64, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.size);
        let mut x = idx;
        for b in out.iter_mut().rev() {
            *b = b'0' + (x % 10) as u8;
            x /= 10;
        }
    }

    /// The key of `idx` as a new vector.
    #[cfg(test)]
    pub fn key(&self, idx: u64) -> Vec<u8> {
        let mut k = vec![0; self.size];
        self.write(idx, &mut k);
        k
    }

    /// The index a key encodes, if it is well formed.
    pub fn parse(&self, key: &[u8]) -> Option<u64> {
        if key.len() != self.size {
            return None;
        }
        key.iter().try_fold(0u64, |acc, &b| {
            b.is_ascii_digit()
                .then(|| acc.checked_mul(10)?.checked_add(u64::from(b - b'0')))
                .flatten()
        })
    }
}

/// SplitMix64 finalizer: a fast, well-mixing bijection on u64.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Values are slices of a pool of seeded random bytes; the slice depends on the key
/// index and a generation (0 for fills, a write counter for overwrites), so a value
/// written by a fill can be recomputed to verify it.
pub struct Values {
    pool: Vec<u8>,
    size: usize,
    seed: u64,
}

impl Values {
    /// A pool for values of `size` bytes, filled from `seed`.
    pub fn new(size: usize, seed: u64) -> Self {
        let mut pool = vec![0u8; (1 << 20).max(size * 4)];
        StdRng::seed_from_u64(seed).fill_bytes(&mut pool);
        Values { pool, size, seed }
    }

    /// Value length in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The value of key `idx` at `generation`.
    #[inline]
    pub fn get(&self, idx: u64, generation: u64) -> &[u8] {
        let span = (self.pool.len() - self.size + 1) as u64;
        let h = mix64(idx ^ self.seed ^ generation.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let off = (h % span) as usize;
        &self.pool[off..off + self.size]
    }
}

/// A seeded pseudo-random permutation of `0..n` computed in O(1) memory: a bijective
/// mix on the smallest power-of-two domain holding `n`, with cycle walking.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `0..n` (`n >= 1`) chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(1);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        let mut keys = [0; 4];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = mix64(seed.wrapping_add(0x632b_e59b_d9b4_e019u64.wrapping_mul(i as u64 + 1)));
        }
        Permutation {
            n,
            mask,
            shift: bits.div_ceil(2),
            keys,
        }
    }

    #[inline]
    fn round(&self, mut x: u64) -> u64 {
        for k in self.keys {
            x = x.wrapping_add(k) & self.mask;
            x = x.wrapping_mul(k | 1) & self.mask;
            x ^= x >> self.shift;
        }
        x
    }

    /// The `i`-th element (`i < n`).
    #[inline]
    pub fn get(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = i;
        loop {
            x = self.round(x);
            if x < self.n {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_numerically() {
        let f = KeyFormat::new(16);
        assert_eq!(f.key(42), b"0000000000000042");
        assert_eq!(f.parse(&f.key(123_456)), Some(123_456));
        assert!(f.key(9) < f.key(10));
        assert_eq!(KeyFormat::new(4).key(7), b"0007");
        assert_eq!(f.parse(b"00000000000000x2"), None);
        assert_eq!(KeyFormat::digits_needed(0), 1);
        assert_eq!(KeyFormat::digits_needed(999_999), 6);
        assert_eq!(KeyFormat::digits_needed(1_000_000), 7);
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 8, 9, 1000, 4097] {
            let p = Permutation::new(n, 301);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.get(i) as usize;
                assert!(!seen[x], "n={n} repeats {x}");
                seen[x] = true;
            }
        }
        let p = Permutation::new(1000, 1);
        let moved = (0..1000).filter(|&i| p.get(i) != i).count();
        assert!(moved > 900);
    }

    #[test]
    fn values_are_deterministic() {
        let a = Values::new(100, 7);
        let b = Values::new(100, 7);
        assert_eq!(a.get(5, 0), b.get(5, 0));
        assert_eq!(a.get(5, 0).len(), 100);
        assert_ne!(a.get(5, 0), a.get(5, 1));
        assert_eq!(Values::new(0, 1).get(3, 0), b"");
    }
}
