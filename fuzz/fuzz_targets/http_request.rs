//! Any bytes as an HTTP request to the whole server: the input picks a
//! route, whether valid credentials are attached, a query string and a
//! body, and the request runs through the real router (every API's
//! parameter parsing, signature checks, batch scrobbles, ListenBrainz JSON,
//! Subsonic ids, the web UI's forms). Errors are fine; panics and 500s are
//! not (a 500 means an input reached a path that does not check it).
#![no_main]

use libfuzzer_sys::fuzz_target;

mod router_input;

fuzz_target!(|data: &[u8]| router_input::one_request(data));
