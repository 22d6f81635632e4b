//! What the library already knows about files, read once per scan.
//!
//! One pass over the library builds `url → (id, size, lmod, missing)` for
//! every entry with a `file://` url written by the scanner; a no-change
//! rescan then only stats files and compares. Fingerprints are read only
//! for the entries whose file went missing (the candidates of a move).

use std::collections::HashMap;

use spindle_store::{Library, ValueRef};

use crate::tags::SCAN_SOURCE;

/// `status` value of an entry whose file is gone (XMMS2's
/// `XMMS_MEDIALIB_ENTRY_STATUS_NOT_AVAILABLE`).
pub const STATUS_MISSING: i64 = 3;

/// What the library says about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub id: u32,
    pub size: Option<i64>,
    pub lmod: Option<i64>,
    /// Marked missing by an earlier scan.
    pub missing: bool,
    pub fingerprint: Option<String>,
}

/// The scanner's view of the library.
#[derive(Debug, Default)]
pub struct State {
    pub by_url: HashMap<String, Known>,
}

impl State {
    /// Reads every entry's scanner properties.
    pub fn load(lib: &Library) -> State {
        let mut by_url = HashMap::with_capacity(lib.len());
        for id in lib.ids() {
            let mut url = None;
            let mut k = Known {
                id,
                size: None,
                lmod: None,
                missing: false,
                fingerprint: None,
            };
            for (key, value, source) in lib.properties(id) {
                if source != SCAN_SOURCE {
                    continue;
                }
                match (key, value) {
                    ("url", ValueRef::Str(s)) if s.starts_with("file://") => {
                        url = Some(s.to_owned())
                    }
                    ("size", ValueRef::Int(i)) => k.size = Some(i),
                    ("lmod", ValueRef::Int(i)) => k.lmod = Some(i),
                    ("status", ValueRef::Int(i)) => k.missing = i == STATUS_MISSING,
                    ("fingerprint", ValueRef::Str(s)) => k.fingerprint = Some(s.to_owned()),
                    _ => {}
                }
            }
            if let Some(url) = url {
                by_url.insert(url, k);
            }
        }
        State { by_url }
    }
}
