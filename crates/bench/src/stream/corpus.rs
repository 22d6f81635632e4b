//! The corpus of `bench stream`: N WAV files (44.1 kHz, 16-bit stereo PCM)
//! of pseudo-random sizes between two bounds, each with a RIFF `LIST/INFO`
//! tag (title, artist, album, track number) so `spindle serve` scans them as
//! real songs. The samples are noise from a seeded generator: sizes matter
//! to the benchmark, content does not. Files already present with the
//! expected size are kept, so a `--corpus DIR` is built once.

use std::io::Write;
use std::path::Path;

/// One file of the corpus: its path relative to the corpus folder (ASCII,
/// no spaces, so it is also its URL path under nginx) and its size.
#[derive(Debug, Clone)]
pub struct Track {
    pub rel: String,
    pub size: u64,
}

/// A small xorshift generator: the corpus must be the same from run to
/// run (and a kept corpus stays valid, so it is not the library
/// benchmark's generator).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `lo..hi` (`lo` when the range is empty).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.next_u64() % (hi - lo)
        }
    }
}

/// The corpus for `files` files of `min..max` bytes: paths and sizes,
/// without touching the disk.
pub fn plan(files: usize, min: u64, max: u64, seed: u64) -> Vec<Track> {
    let mut rng = Rng::new(seed);
    (0..files)
        .map(|i| {
            // Whole 4-byte frames; the header and tag come on top.
            let data = rng.range(min, max.max(min + 1)) & !3;
            let (artist, album, nr) = (i / 40, i / 10, i % 10 + 1);
            Track {
                rel: format!("artist-{artist:03}/album-{album:04}/{nr:02}-track-{i:05}.wav"),
                size: wav_len(data, &tag_of(i, artist, album, nr)),
            }
        })
        .collect()
}

fn tag_of(i: usize, artist: usize, album: usize, nr: usize) -> Vec<(&'static [u8; 4], String)> {
    vec![
        (b"INAM", format!("Track {i}")),
        (b"IART", format!("Bench Artist {artist}")),
        (b"IPRD", format!("Bench Album {album}")),
        (b"ITRK", nr.to_string()),
    ]
}

/// The INFO sub-chunk bytes: id, size, NUL-terminated text, padded even.
fn info_chunk(tag: &[(&[u8; 4], String)]) -> Vec<u8> {
    let mut v = b"INFO".to_vec();
    for (id, text) in tag {
        let mut t = text.as_bytes().to_vec();
        t.push(0);
        v.extend_from_slice(*id);
        v.extend_from_slice(&(t.len() as u32).to_le_bytes());
        v.extend_from_slice(&t);
        if t.len() % 2 == 1 {
            v.push(0);
        }
    }
    v
}

fn wav_len(data: u64, tag: &[(&[u8; 4], String)]) -> u64 {
    12 + (8 + 16) + 8 + info_chunk(tag).len() as u64 + 8 + data
}

/// Writes the planned corpus under `dir`, keeping files that already have
/// the planned size. Returns how many it wrote.
pub fn build(dir: &Path, plan: &[Track], seed: u64) -> std::io::Result<usize> {
    let mut written = 0;
    for (i, t) in plan.iter().enumerate() {
        let path = dir.join(&t.rel);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == t.size) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let (artist, album, nr) = (i / 40, i / 10, i % 10 + 1);
        let info = info_chunk(&tag_of(i, artist, album, nr));
        let data = t.size - wav_len(0, &tag_of(i, artist, album, nr));
        let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
        f.write_all(b"RIFF")?;
        f.write_all(&((t.size - 8) as u32).to_le_bytes())?;
        f.write_all(b"WAVEfmt ")?;
        f.write_all(&16u32.to_le_bytes())?;
        f.write_all(&1u16.to_le_bytes())?; // PCM
        f.write_all(&2u16.to_le_bytes())?; // stereo
        f.write_all(&44_100u32.to_le_bytes())?;
        f.write_all(&(44_100u32 * 4).to_le_bytes())?;
        f.write_all(&4u16.to_le_bytes())?;
        f.write_all(&16u16.to_le_bytes())?;
        f.write_all(b"LIST")?;
        f.write_all(&(info.len() as u32).to_le_bytes())?;
        f.write_all(&info)?;
        f.write_all(b"data")?;
        f.write_all(&(data as u32).to_le_bytes())?;
        // Quiet noise: 16-bit samples in -2048..2048.
        let mut rng = Rng::new(seed ^ (i as u64 + 1));
        let mut block = vec![0u8; 1 << 16];
        let mut left = data;
        while left > 0 {
            for s in block.chunks_exact_mut(8) {
                let r = rng.next_u64();
                for (k, pair) in s.chunks_exact_mut(2).enumerate() {
                    let v = (((r >> (k * 16)) & 0xfff) as i16) - 2048;
                    pair.copy_from_slice(&v.to_le_bytes());
                }
            }
            let n = left.min(block.len() as u64) as usize;
            f.write_all(&block[..n])?;
            left -= n as u64;
        }
        f.flush()?;
        written += 1;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_files_are_written_with_their_planned_sizes_and_valid_headers() {
        let dir = std::env::temp_dir().join(format!("spindle-corpus-test-{}", std::process::id()));
        let plan = plan(3, 20_000, 40_000, 7);
        assert_eq!(build(&dir, &plan, 7).unwrap(), 3);
        for t in &plan {
            let bytes = std::fs::read(dir.join(&t.rel)).unwrap();
            assert_eq!(bytes.len() as u64, t.size);
            assert_eq!(&bytes[..4], b"RIFF");
            assert_eq!(&bytes[8..16], b"WAVEfmt ");
            let riff = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as u64;
            assert_eq!(riff + 8, t.size);
        }
        // A second build keeps them.
        assert_eq!(build(&dir, &plan, 7).unwrap(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
