//! Any UTF-8 text as relaxed JSON, then as a collection and as a fetch
//! specification: errors are fine, panics are not; strict JSON must read
//! the same as serde_json reads it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spindle_query::{coll_from_json, fetch_from_json, parse_relaxed_json, to_pattern};

fuzz_target!(|text: &str| {
    let Ok(value) = parse_relaxed_json(text) else {
        return;
    };
    if let Ok(strict) = serde_json::from_str::<serde_json::Value>(text) {
        assert_eq!(strict, value, "{text:?}");
    }
    if let Ok(coll) = coll_from_json(&value) {
        let _ = to_pattern(&coll);
    }
    let _ = fetch_from_json(&value);
});
