//! The requests of `bench scrobble`, built before the clock starts: the
//! generated scrobbles, `track.scrobble` parameters, form bodies signed
//! the Last.fm way, and the split of requests over the clients.

/// Scrobbles per request: Last.fm's `track.scrobble` maximum.
pub const BATCH: usize = 50;

fn enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => o.push(b as char),
            _ => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}

/// A form body, signed the Last.fm way (`api_sig`, by
/// [`spindle_lastfm_sig::api_sig`] as the scrobbler signs) when `secret`
/// is given.
pub fn form_body(params: &[(String, String)], secret: Option<&str>) -> String {
    let mut body: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    if let Some(secret) = secret {
        let sig = spindle_lastfm_sig::api_sig(
            params.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            secret,
        );
        body.push(format!("api_sig={sig}"));
    }
    body.join("&")
}

/// The n-th generated scrobble: artist, track, album, timestamp (distinct
/// timestamps: Maloja keys scrobbles by time).
pub fn nth(n: usize, base: i64) -> (String, String, String, i64) {
    (
        format!("Artist {}", n % 997),
        format!("Track {}", n % 5003),
        format!("Album {}", n % 1999),
        base + n as i64 * 20,
    )
}

/// `track.scrobble` parameters for scrobbles `from..to`: indexed names,
/// or plain ones for a single scrobble when `indexed` is false.
pub fn scrobble_params(from: usize, to: usize, base: i64, indexed: bool) -> Vec<(String, String)> {
    let mut p = Vec::new();
    for (i, n) in (from..to).enumerate() {
        let (artist, track, album, ts) = nth(n, base);
        let name = |f: &str| {
            if indexed {
                format!("{f}[{i}]")
            } else {
                f.to_owned()
            }
        };
        p.push((name("artist"), artist));
        p.push((name("track"), track));
        p.push((name("album"), album));
        p.push((name("timestamp"), ts.to_string()));
    }
    p
}

/// Splits requests `0..count` (of `per` scrobbles each) over the clients.
pub fn spread(
    count: usize,
    per: usize,
    clients: usize,
    mut make: impl FnMut(usize, usize) -> Vec<u8>,
) -> Vec<Vec<Vec<u8>>> {
    let mut out = vec![Vec::new(); clients.max(1)];
    for (r, from) in (0..count).step_by(per).enumerate() {
        let n = out.len();
        out[r % n].push(make(from, (from + per).min(count)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_encoded_and_signed_over_sorted_parameters() {
        let p = vec![
            ("method".to_owned(), "track.scrobble".to_owned()),
            ("artist[0]".to_owned(), "A & B".to_owned()),
        ];
        assert_eq!(
            form_body(&p, None),
            "method=track.scrobble&artist%5B0%5D=A%20%26%20B"
        );
        let signed = form_body(&p, Some("s"));
        let want = spindle_server::accounts::md5_hex(b"artist[0]A & Bmethodtrack.scrobbles");
        assert!(signed.ends_with(&format!("&api_sig={want}")), "{signed}");
    }

    #[test]
    fn requests_cover_every_scrobble_once_round_robin() {
        let reqs = spread(120, BATCH, 2, |from, to| {
            format!("{from}-{to}").into_bytes()
        });
        let text: Vec<Vec<String>> = reqs
            .iter()
            .map(|c| {
                c.iter()
                    .map(|r| String::from_utf8_lossy(r).into_owned())
                    .collect()
            })
            .collect();
        assert_eq!(text, [vec!["0-50", "100-120"], vec!["50-100"]]);
        let p = scrobble_params(3, 5, 1000, true);
        assert_eq!(p[0], ("artist[0]".to_owned(), "Artist 3".to_owned()));
        assert_eq!(p[7], ("timestamp[1]".to_owned(), "1080".to_owned()));
        assert_eq!(scrobble_params(0, 1, 0, false)[1].0, "track");
    }
}
