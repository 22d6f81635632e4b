//! Little-endian fixed ints, LEB128 varints and length-prefixed strings.

use crate::error::FormatError;

#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }

    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// Zig-zag encoded signed varint.
    pub fn ivarint(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        if self.buf.len() - self.pos < n {
            return Err(FormatError::new(format!(
                "record ends early: needed {n} more bytes at offset {}",
                self.pos
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, FormatError> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(FormatError::new(format!(
                "record ends early at offset {}",
                self.pos
            ))),
        }
    }

    pub fn fixed_u32(&mut self) -> Result<u32, FormatError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn fixed_u64(&mut self) -> Result<u64, FormatError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    #[inline]
    pub fn varint(&mut self) -> Result<u64, FormatError> {
        // Fast paths: one and two bytes cover keys, sources, small ints
        // and string numbers below 16384.
        if let Some(&b0) = self.buf.get(self.pos) {
            if b0 < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b0));
            }
            if let Some(&b1) = self.buf.get(self.pos + 1) {
                if b1 < 0x80 {
                    self.pos += 2;
                    return Ok(u64::from(b0 & 0x7f) | (u64::from(b1) << 7));
                }
            }
        }
        self.varint_slow()
    }

    #[cold]
    fn varint_slow(&mut self) -> Result<u64, FormatError> {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift >= 64 || (shift == 63 && b > 1) {
                return Err(FormatError::new("varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A varint that must fit a u32 (entry ids, counts).
    #[inline]
    pub fn u32(&mut self) -> Result<u32, FormatError> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| FormatError::new(format!("value {v} does not fit 32 bits")))
    }

    #[inline]
    pub fn ivarint(&mut self) -> Result<i64, FormatError> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], FormatError> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| FormatError::new("length does not fit memory"))?;
        self.take(n)
    }

    pub fn str(&mut self) -> Result<&'a str, FormatError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| FormatError::new("string is not valid UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let mut w = Writer::new();
        let ints = [0i64, 1, -1, 63, -64, 300, i64::MAX, i64::MIN];
        for i in ints {
            w.ivarint(i);
        }
        w.varint(u64::MAX);
        let b = w.into_inner();
        let mut r = Reader::new(&b);
        for i in ints {
            assert_eq!(r.ivarint().unwrap(), i);
        }
        assert_eq!(r.varint().unwrap(), u64::MAX);
        assert!(r.varint().is_err());
    }
}
