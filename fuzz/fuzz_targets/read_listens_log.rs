//! Any bytes as a listens log (`listens.log`): the reader must not panic
//! or allocate beyond the input; what it keeps must be a prefix of whole
//! records that reads back the same on its own and re-encodes to the same
//! bytes; a tail it would cut holds no valid record, and damage it refuses
//! lies before one.
//!
//! The first byte picks how the rest is used: as it is (so the header and
//! checksums are fuzzed too), with every checksum made valid, or behind a
//! valid header with valid checksums (so the fuzzer spends its time in the
//! record decoder and the tail-or-damage scan rather than guessing CRCs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spindle_listens::fuzzing::{encode_log, log_header, read_log, seal_log, Refused};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = match mode % 3 {
        0 => rest.to_vec(),
        1 => seal_log(rest),
        _ => {
            let mut b = log_header();
            b.extend_from_slice(rest);
            seal_log(&b)
        }
    };
    let log = match read_log(&bytes) {
        Ok(log) => log,
        Err(Refused::Short) => {
            assert!(bytes.len() < 16);
            return;
        }
        Err(Refused::BadHeader) => return,
        Err(Refused::Damaged(offset)) => {
            let offset = offset as usize;
            assert!(
                offset >= 16 && offset < bytes.len(),
                "damage at {offset} of {}",
                bytes.len()
            );
            // What precedes the damage reads cleanly on its own.
            let prefix = read_log(&bytes[..offset]).expect("the records before the damage read");
            assert_eq!(prefix.good_end as usize, offset);
            return;
        }
    };
    let good = log.good_end as usize;
    assert!(
        good >= 16 && good <= bytes.len(),
        "good_end {good} of {}",
        bytes.len()
    );

    // The good prefix alone reads as the same events, with nothing to cut.
    let prefix = read_log(&bytes[..good]).expect("the good prefix reads");
    assert_eq!(prefix.good_end as usize, good);
    assert_eq!(prefix.events, log.events);

    // What was read encodes back to exactly the records it came from (the
    // header's reserved field is not read, so it is not compared).
    assert_eq!(encode_log(&log.events)[16..], bytes[16..good]);
});
