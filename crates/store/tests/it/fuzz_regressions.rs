//! Inputs the fuzz targets once crashed on, replayed the way each target
//! builds its file, so they stay fixed.

use spindle_store::fuzzing::{data_header, read_data_file, seal_data_file};

/// read_data_file, mode 2 (a valid header, then the fuzzer's chunks):
/// a STRINGS chunk declaring 2^64−1 strings overflowed the sum that
/// sizes the string table before anything was read.
#[test]
fn a_strings_chunk_declaring_u64_max_strings_is_refused_without_a_panic() {
    let input: &[u8] = &[
        0x06, 0x03, 0x15, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xe7,
        0xe7, 0xe7, 0xe7, 0xe7, 0xe7, 0xe7, 0x51, 0xdd,
    ];
    let (&mode, rest) = input.split_first().unwrap();
    assert_eq!(mode % 4, 2);
    let mut b = data_header(u64::from(mode));
    b.extend_from_slice(rest);
    let bytes = seal_data_file(&b);
    assert!(read_data_file(&bytes).is_err());
}
