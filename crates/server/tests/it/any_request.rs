//! Seeded random requests through the whole router, with and without
//! valid credentials, on every API: errors are fine, a panic or a 500 is
//! not (a 500 means an input reached a path that does not check it).
//!
//! The request an input describes is built by the `http_request` fuzz
//! target's own code (fuzz/fuzz_targets/router_input.rs), so this test and
//! the coverage-guided fuzzer send the same kind of request. The fuzzer
//! needs a nightly, instrumented build of the whole server, which CI does
//! not make; this test runs in the ordinary build. The inputs mix the
//! fuzzer's dictionary (fuzz/dicts/http_request.dict) with random bytes.
//! Seeded: `SPINDLE_SEED` replays a run; the seed is printed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "../../../../fuzz/fuzz_targets/router_input.rs"]
mod router_input;

const DICT: &str = include_str!("../../../../fuzz/dicts/http_request.dict");

/// How many requests a run sends (each a few microseconds to a
/// millisecond).
const REQUESTS: usize = 20_000;

fn seed() -> u64 {
    let seed = std::env::var("SPINDLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("seed {seed} (replay with SPINDLE_SEED={seed})");
    seed
}

/// The quoted values of a libFuzzer dictionary (`"..."` or `name="..."`,
/// with `\\`, `\"` and `\xNN` escapes).
fn dictionary(text: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some(start) = line.find('"') else {
            continue;
        };
        let quoted = &line[start + 1..line.len() - 1];
        let mut v = Vec::new();
        let b = quoted.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match (b[i], b.get(i + 1)) {
                (b'\\', Some(b'x')) => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    v.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 4;
                }
                (b'\\', Some(&c)) => {
                    v.push(c);
                    i += 2;
                }
                (c, _) => {
                    v.push(c);
                    i += 1;
                }
            }
        }
        out.push(v);
    }
    out
}

/// One input: a route byte, a credentials byte, then dictionary words,
/// separators and random bytes, sometimes a 0xff and a body.
fn input(rng: &mut SmallRng, dict: &[Vec<u8>]) -> Vec<u8> {
    let mut data = vec![rng.gen(), rng.gen()];
    for _ in 0..rng.gen_range(0..12) {
        match rng.gen_range(0..6) {
            0..=2 => data.extend_from_slice(&dict[rng.gen_range(0..dict.len())]),
            3 => data.push(b'&'),
            4 => data.push(0xff),
            _ => {
                for _ in 0..rng.gen_range(1..16) {
                    data.push(rng.gen());
                }
            }
        }
    }
    data
}

#[test]
fn no_request_makes_the_router_panic_or_answer_500() {
    let dict = dictionary(DICT);
    assert!(
        dict.len() > 20,
        "the dictionary reads as {} words",
        dict.len()
    );
    let seed = seed();
    let mut rng = SmallRng::seed_from_u64(seed);
    for n in 0..REQUESTS {
        let data = input(&mut rng, &dict);
        let r = std::panic::catch_unwind(|| router_input::one_request(&data));
        assert!(
            r.is_ok(),
            "request {n} of seed {seed} failed: input {data:?} (replay with SPINDLE_SEED={seed})"
        );
    }
}
