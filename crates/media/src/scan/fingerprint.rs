//! A content fingerprint that finds a file again after it moved.
//!
//! The fingerprint is the file's size and a CRC-32 of its first and of its
//! last 64 KiB: `v1:SIZE:HEAD:TAIL` in hex. It reads at most 128 KiB per
//! file, so it costs little beside reading the tags, and it does not
//! change when a file is renamed or moved to another folder — which is all
//! it is for. Two different recordings share a fingerprint only if they
//! agree in size and in 128 KiB of audio; a retagged file (its head
//! changed) counts as a different file, which is the safe side.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How many bytes are hashed at each end.
pub const WINDOW: u64 = 64 * 1024;

/// The fingerprint of the file at `path`.
pub fn fingerprint(path: &Path) -> std::io::Result<String> {
    fingerprint_opened(&File::open(path)?)
}

/// The fingerprint of an opened file (read from its start, whatever its
/// position).
pub fn fingerprint_opened(mut f: &File) -> std::io::Result<String> {
    let size = f.metadata()?.len();
    f.seek(SeekFrom::Start(0))?;
    let mut buf = Vec::with_capacity(WINDOW as usize);
    (&mut f).take(WINDOW).read_to_end(&mut buf)?;
    let head = crc32fast::hash(&buf);
    let tail = if size > WINDOW {
        buf.clear();
        f.seek(SeekFrom::Start(size.saturating_sub(WINDOW).max(WINDOW)))?;
        f.take(WINDOW).read_to_end(&mut buf)?;
        crc32fast::hash(&buf)
    } else {
        0
    };
    Ok(format!("v1:{size:x}:{head:08x}:{tail:08x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_content_elsewhere_has_the_same_fingerprint_and_other_content_not() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let a = dir.path().join("a.mp3");
        let b = dir.path().join("sub-b.flac");
        std::fs::write(&a, &data).unwrap();
        std::fs::write(&b, &data).unwrap();
        assert_eq!(fingerprint(&a).unwrap(), fingerprint(&b).unwrap());
        let mut other = data.clone();
        let last = other.len() - 1;
        other[last] ^= 1;
        std::fs::write(&b, &other).unwrap();
        assert_ne!(fingerprint(&a).unwrap(), fingerprint(&b).unwrap());
        let small = dir.path().join("small");
        std::fs::write(&small, b"abc").unwrap();
        assert!(fingerprint(&small).unwrap().starts_with("v1:3:"));
    }
}
