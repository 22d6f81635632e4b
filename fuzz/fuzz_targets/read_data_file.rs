//! Any bytes as a data file: the reader must refuse or load them without
//! panicking or allocating beyond the input (entry slots are capped for
//! the fuzzer), and a loaded file must be self-consistent.
//!
//! The first byte picks how the rest is used: as it is, with every chunk
//! checksum made valid, behind a valid header with valid checksums (so
//! the fuzzer reaches the chunk decoders instead of guessing CRCs), or as
//! byte patches to a real data file (`seeds/library.spdb`: entries,
//! sources, an index, a saved collection), checksums then made valid, so
//! the fuzzer starts from files that get as far as the end marker.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spindle_store::fuzzing::{data_header, read_data_file, seal_data_file, MAX_SLOTS};

const SEED: &[u8] = include_bytes!("../seeds/library.spdb");

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = match mode % 4 {
        0 => rest.to_vec(),
        1 => seal_data_file(rest),
        2 => {
            let mut b = data_header(u64::from(mode));
            b.extend_from_slice(rest);
            seal_data_file(&b)
        }
        _ => {
            // (offset u16, byte) patches; a last odd byte cuts the file.
            let mut b = SEED.to_vec();
            let mut patches = rest.chunks_exact(3);
            for p in &mut patches {
                let at = usize::from(u16::from_le_bytes([p[0], p[1]])) % b.len();
                b[at] = p[2];
            }
            if let Some(&cut) = patches.remainder().first() {
                b.truncate(usize::from(cut) * b.len() / 256);
            }
            seal_data_file(&b)
        }
    };
    let Ok(file) = read_data_file(&bytes) else {
        return;
    };
    assert!(file.entries < file.next_id as usize, "{file:?}");
    assert!(u64::from(file.next_id) <= MAX_SLOTS, "{file:?}");
    // Every property is at least a few bytes of the file.
    assert!(file.properties <= bytes.len(), "{file:?}");
});
