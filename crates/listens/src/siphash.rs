//! SipHash-1-3 with a key of our own: the dedupe keys are kept in the
//! checkpoint, so the hash must be one whose algorithm and key this
//! crate controls (the standard library's `RandomState` draws a key it
//! does not hand out, and does not promise its algorithm across Rust
//! releases).

/// A keyed SipHash-1-3 of a byte stream.
pub(crate) struct Sip13 {
    v: [u64; 4],
    /// Bytes not yet folded in (fewer than 8) and how many.
    tail: u64,
    ntail: usize,
    len: usize,
}

impl Sip13 {
    pub(crate) fn new(k0: u64, k1: u64) -> Sip13 {
        Sip13 {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            ntail: 0,
            len: 0,
        }
    }

    #[inline]
    fn round(&mut self) {
        let v = &mut self.v;
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }

    #[inline]
    fn word(&mut self, m: u64) {
        self.v[3] ^= m;
        self.round();
        self.v[0] ^= m;
    }

    pub(crate) fn write(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len();
        while self.ntail > 0 && !bytes.is_empty() {
            self.tail |= u64::from(bytes[0]) << (8 * self.ntail);
            self.ntail += 1;
            bytes = &bytes[1..];
            if self.ntail == 8 {
                let m = self.tail;
                self.word(m);
                self.tail = 0;
                self.ntail = 0;
            }
        }
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.word(u64::from_le_bytes(b));
        }
        for (i, &b) in chunks.remainder().iter().enumerate() {
            self.tail |= u64::from(b) << (8 * i);
            self.ntail = i + 1;
        }
    }

    /// A string, prefixed by its length so that field boundaries count.
    pub(crate) fn write_str(&mut self, s: &str) {
        self.write(&(s.len() as u32).to_le_bytes());
        self.write(s.as_bytes());
    }

    pub(crate) fn finish(mut self) -> u64 {
        let b = ((self.len as u64 & 0xff) << 56) | self.tail;
        self.word(b);
        self.v[2] ^= 0xff;
        self.round();
        self.round();
        self.round();
        self.v[0] ^ self.v[1] ^ self.v[2] ^ self.v[3]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference vectors of SipHash-1-3 (key 00..0f, messages of
    /// 0 to 16 bytes 00 01 02 …).
    #[test]
    fn matches_the_reference_vectors_however_the_bytes_are_split() {
        let k0 = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let k1 = u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]);
        let expect: [[u8; 8]; 17] = [
            [0xdc, 0xc4, 0x0f, 0x05, 0x58, 0x01, 0xac, 0xab],
            [0x93, 0xca, 0x57, 0x7d, 0xf3, 0x9b, 0xf4, 0xc9],
            [0x4d, 0xd4, 0xc7, 0x4d, 0x02, 0x9b, 0xcb, 0x82],
            [0xfb, 0xf7, 0xdd, 0xe7, 0xb8, 0x0a, 0xf8, 0x8b],
            [0x28, 0x83, 0xd3, 0x88, 0x60, 0x57, 0x75, 0xcf],
            [0x67, 0x3b, 0x53, 0x49, 0x2f, 0xd5, 0xf9, 0xde],
            [0xa7, 0x22, 0x9f, 0xc5, 0x50, 0x2b, 0x0d, 0xc5],
            [0x40, 0x11, 0xb1, 0x9b, 0x98, 0x7d, 0x92, 0xd3],
            [0x8e, 0x9a, 0x29, 0x8d, 0x11, 0x95, 0x90, 0x36],
            [0xe4, 0x3d, 0x06, 0x6c, 0xb3, 0x8e, 0xa4, 0x25],
            [0x7f, 0x09, 0xff, 0x92, 0xee, 0x85, 0xde, 0x79],
            [0x52, 0xc3, 0x4d, 0xf9, 0xc1, 0x18, 0xc1, 0x70],
            [0xa2, 0xd9, 0xb4, 0x57, 0xb1, 0x84, 0xa3, 0x78],
            [0xa7, 0xff, 0x29, 0x12, 0x0c, 0x76, 0x6f, 0x30],
            [0x34, 0x5d, 0xf9, 0xc0, 0x11, 0xa1, 0x5a, 0x60],
            [0x56, 0x99, 0x51, 0x2a, 0x6d, 0xd8, 0x20, 0xd3],
            [0x66, 0x8b, 0x90, 0x7d, 0x1a, 0xdd, 0x4f, 0xcc],
        ];
        let msg: Vec<u8> = (0..17).collect();
        for (n, want) in expect.iter().enumerate() {
            let mut h = Sip13::new(k0, k1);
            h.write(&msg[..n]);
            assert_eq!(h.finish().to_le_bytes(), *want, "{n} bytes");
        }
        let long: Vec<u8> = (0..61).collect();
        let mut whole = Sip13::new(k0, k1);
        whole.write(&long);
        let whole = whole.finish();
        for cut in [1, 3, 7, 8, 9, 17, 60] {
            let mut h = Sip13::new(k0, k1);
            h.write(&long[..cut]);
            h.write(&long[cut..]);
            assert_eq!(h.finish(), whole, "cut at {cut}");
        }
    }
}
