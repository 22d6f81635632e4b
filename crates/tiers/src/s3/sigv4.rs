//! AWS Signature Version 4 for S3 requests (the `Authorization` header
//! form), as the AWS S3 API reference describes it: canonical request →
//! string to sign → HMAC-SHA256 chain of date, region, service. Pure
//! functions, tested against the documented examples.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The SHA-256 of an empty payload, hex.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length; new_from_slice cannot fail.
    let mut m = HmacSha256::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// URI-encodes as SigV4 wants: unreserved characters (`A-Z a-z 0-9 - . _ ~`)
/// stay, everything else becomes `%XX`; `/` stays when `keep_slash`.
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~')
            || (keep_slash && b == b'/');
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One request to sign.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The path, not yet encoded (e.g. `/bucket/key with space`).
    pub path: &'a str,
    /// Query parameters, not yet encoded.
    pub query: &'a [(&'a str, &'a str)],
    /// Headers to sign (name, value); must include `host` and
    /// `x-amz-date`; names in any case.
    pub headers: &'a [(&'a str, &'a str)],
    /// Hex SHA-256 of the body, or `UNSIGNED-PAYLOAD`.
    pub payload_hash: &'a str,
}

/// Credentials and scope.
#[derive(Debug, Clone)]
pub struct Signer<'a> {
    pub access_key: &'a str,
    pub secret_key: &'a str,
    pub region: &'a str,
    pub service: &'a str,
}

/// The canonical query string: encoded, sorted by key then value.
pub fn canonical_query(query: &[(&str, &str)]) -> String {
    let mut q: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    q.sort();
    q.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

impl Signer<'_> {
    /// The canonical request and the signed-headers list.
    pub fn canonical_request(&self, r: &Request<'_>) -> (String, String) {
        let mut h: Vec<(String, String)> = r
            .headers
            .iter()
            .map(|(k, v)| {
                let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
                (k.to_ascii_lowercase(), v)
            })
            .collect();
        h.sort();
        let signed: Vec<&str> = h.iter().map(|(k, _)| k.as_str()).collect();
        let signed = signed.join(";");
        let mut canon_headers = String::new();
        for (k, v) in &h {
            canon_headers.push_str(k);
            canon_headers.push(':');
            canon_headers.push_str(v);
            canon_headers.push('\n');
        }
        let cr = format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            r.method,
            uri_encode(r.path, true),
            canonical_query(r.query),
            canon_headers,
            signed,
            r.payload_hash
        );
        (cr, signed)
    }

    /// The `Authorization` header value for `r` at `amz_date`
    /// (`YYYYMMDDTHHMMSSZ`).
    pub fn authorization(&self, r: &Request<'_>, amz_date: &str) -> String {
        let (cr, signed) = self.canonical_request(r);
        let day = &amz_date[..8.min(amz_date.len())];
        let scope = format!("{day}/{}/{}/aws4_request", self.region, self.service);
        let sts = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            sha256_hex(cr.as_bytes())
        );
        let k = hmac(
            format!("AWS4{}", self.secret_key).as_bytes(),
            day.as_bytes(),
        );
        let k = hmac(&k, self.region.as_bytes());
        let k = hmac(&k, self.service.as_bytes());
        let k = hmac(&k, b"aws4_request");
        let sig = hex(&hmac(&k, sts.as_bytes()));
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope},SignedHeaders={signed},Signature={sig}",
            self.access_key
        )
    }
}

/// `YYYYMMDDTHHMMSSZ` for a UNIX time (past the year 9999, that year's end).
pub fn amz_date(unix: u64) -> String {
    let at = i64::try_from(unix)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or(jiff::Timestamp::MAX);
    at.strftime("%Y%m%dT%H%M%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The examples of the S3 API reference, "Signature Calculations for
    // the Authorization Header: Transferring Payload in a Single Chunk".
    const SIGNER: Signer<'static> = Signer {
        access_key: "AKIAIOSFODNN7EXAMPLE",
        secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1",
        service: "s3",
    };
    const DATE: &str = "20130524T000000Z";
    const HOST: &str = "examplebucket.s3.amazonaws.com";

    fn sig(auth: &str) -> &str {
        auth.rsplit("Signature=").next().unwrap()
    }

    #[test]
    fn get_object_with_range_matches_the_aws_example() {
        let r = Request {
            method: "GET",
            path: "/test.txt",
            query: &[],
            headers: &[
                ("Host", HOST),
                ("Range", "bytes=0-9"),
                ("x-amz-content-sha256", EMPTY_SHA256),
                ("x-amz-date", DATE),
            ],
            payload_hash: EMPTY_SHA256,
        };
        let a = SIGNER.authorization(&r, DATE);
        assert_eq!(
            a,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,\
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn put_object_matches_the_aws_example() {
        let body = b"Welcome to Amazon S3.";
        let h = sha256_hex(body);
        assert_eq!(
            h,
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        );
        let r = Request {
            method: "PUT",
            path: "/test$file.text",
            query: &[],
            headers: &[
                ("Host", HOST),
                ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-date", DATE),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                ("x-amz-content-sha256", &h),
            ],
            payload_hash: &h,
        };
        assert_eq!(
            sig(&SIGNER.authorization(&r, DATE)),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        );
    }

    #[test]
    fn get_bucket_lifecycle_and_list_objects_match_the_aws_examples() {
        let headers = [
            ("Host", HOST),
            ("x-amz-date", DATE),
            ("x-amz-content-sha256", EMPTY_SHA256),
        ];
        let r = Request {
            method: "GET",
            path: "/",
            query: &[("lifecycle", "")],
            headers: &headers,
            payload_hash: EMPTY_SHA256,
        };
        assert_eq!(
            sig(&SIGNER.authorization(&r, DATE)),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
        );
        let r = Request {
            method: "GET",
            path: "/",
            query: &[("prefix", "J"), ("max-keys", "2")],
            headers: &headers,
            payload_hash: EMPTY_SHA256,
        };
        assert_eq!(
            sig(&SIGNER.authorization(&r, DATE)),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        );
    }

    #[test]
    fn keys_are_encoded_per_segment() {
        assert_eq!(uri_encode("/a b/ü+x~y", true), "/a%20b/%C3%BC%2Bx~y");
        assert_eq!(uri_encode("a/b", false), "a%2Fb");
        assert_eq!(canonical_query(&[("b", "2"), ("a", "x y")]), "a=x%20y&b=2");
    }

    #[test]
    fn dates_format_in_utc() {
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        assert_eq!(amz_date(0), "19700101T000000Z");
        assert_eq!(amz_date(951_782_400 + 3661), "20000229T010101Z");
    }
}
