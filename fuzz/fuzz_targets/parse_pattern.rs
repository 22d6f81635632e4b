//! Any UTF-8 pattern: the parser must not panic, and whatever parses and
//! prints must parse back to the same tree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spindle_query::{parse, to_pattern};

fuzz_target!(|pattern: &str| {
    let Ok(parsed) = parse(pattern) else { return };
    let Some(printed) = to_pattern(&parsed.coll) else {
        return;
    };
    match parse(&printed) {
        Ok(again) => assert_eq!(
            again.coll, parsed.coll,
            "{pattern:?} printed as {printed:?} parses to a different tree"
        ),
        Err(e) => panic!("{pattern:?} printed as {printed:?}, which does not parse: {e}"),
    }
});
