//! Any bytes as a log file: the reader must not panic or allocate beyond
//! the input, must keep a prefix of whole records, and what it keeps must
//! encode and decode back to the same transactions.
//!
//! The first byte picks how the rest is used: as it is (so the header and
//! checksums are fuzzed too), with every checksum made valid, or behind a
//! valid header with valid checksums (so the fuzzer spends its time in the
//! record and op decoders rather than guessing CRCs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spindle_store::fuzzing::{encode_log, log_header, read_log, seal_log};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = match mode % 3 {
        0 => rest.to_vec(),
        1 => seal_log(rest),
        _ => {
            let mut b = log_header(u64::from(mode));
            b.extend_from_slice(rest);
            seal_log(&b)
        }
    };
    let Ok(log) = read_log(&bytes) else { return };
    let good = log.good_len as usize;
    assert!(good >= 24 && good <= bytes.len(), "good_len {good} of {}", bytes.len());
    assert_eq!(log.dropped_tail, good < bytes.len(), "a tail is dropped iff there is one");

    // The good prefix alone reads as the same transactions, cleanly.
    let prefix = read_log(&bytes[..good]).expect("the good prefix has a good header");
    assert!(!prefix.dropped_tail);
    assert_eq!(prefix.txns, log.txns);

    // Sequence numbers ascend.
    assert!(log.txns.windows(2).all(|w| w[0].0 < w[1].0));

    // What was read encodes back to a log that reads the same.
    let again = encode_log(log.generation, &log.txns).expect("records read fit a record");
    let reread = read_log(&again).expect("an encoded log reads");
    assert!(!reread.dropped_tail);
    assert_eq!(reread.generation, log.generation);
    assert_eq!(reread.txns, log.txns);
});
