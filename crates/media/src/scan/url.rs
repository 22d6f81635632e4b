//! `file://` URLs for paths, percent-encoded.
//!
//! Every byte outside the unreserved set and `/` is percent-encoded, so a
//! path that is not UTF-8 still gets a URL, and a URL names exactly one
//! path. `url:file:///music/*` style queries keep working because `/` stays.

use std::path::{Path, PathBuf};

use percent_encoding::{percent_decode, percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Bytes left as they are: RFC 3986 unreserved characters and `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The `file://` URL of an absolute path.
pub fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    format!("file://{}", percent_encode(bytes, PATH))
}

/// The path a `file://` URL names, if it is one.
pub fn url_path(url: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let rest = url.strip_prefix("file://")?;
    let bytes: Vec<u8> = percent_decode(rest.as_bytes()).collect();
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_encode_spaces_and_non_ascii_and_round_trip() {
        let cases = [
            (
                "/music/a b/Ünïcødé #1?.flac",
                "file:///music/a%20b/%C3%9Cn%C3%AFc%C3%B8d%C3%A9%20%231%3F.flac",
            ),
            ("/m/AC%DC.mp3", "file:///m/AC%25DC.mp3"),
            ("/plain/x-y_z.~.ogg", "file:///plain/x-y_z.~.ogg"),
        ];
        for (path, url) in cases {
            assert_eq!(file_url(Path::new(path)), url);
            assert_eq!(url_path(url).unwrap(), Path::new(path));
        }
        assert_eq!(url_path("http://x/y"), None);
    }
}
