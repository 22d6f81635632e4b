//! Any text as a `Range` header against any body length: a partial answer
//! always lies inside the body (start <= end < len), so no request can make
//! the server seek or read past a file's end; and `Params::parse` (the
//! Last.fm/Subsonic query and form parser) with its signature never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spindle_server::params::Params;
use spindle_server::stream::conditional::{parse_range, RangeReq};

fuzz_target!(|input: (&str, u64, &[u8])| {
    let (value, len, form) = input;
    match parse_range(value, len) {
        RangeReq::Partial { start, end } => {
            assert!(start <= end && end < len, "{value:?} len {len}: {start}-{end}");
        }
        RangeReq::Full | RangeReq::Unsatisfiable => {}
    }
    let p = Params::parse(Some(value), form);
    let sig = p.signature("secret");
    assert_eq!(sig.len(), 32);
    let _ = p.signature_ok("secret");
    let _ = p.nul_in();
});
