//! Editing the hot tier's saved pins from the command line (`spindle
//! tiers pin`): a pattern is checked before it is saved and says what it
//! selects now; a pin is removed by its text or its number. The file is
//! `spindle_tiers::pins`'; the running server re-reads it
//! ([`crate::hot::pin_loop`]).

use std::path::Path;

use spindle_query::SourcePref;
use spindle_store::Db;
use spindle_tiers::pins;

/// Why a pin could not be added or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The pattern is not in the query language.
    #[error("pin {pin:?}: {message}")]
    Syntax { pin: String, message: String },
    #[error("no pin {pin:?} (see `spindle tiers pin --list`)")]
    NoSuchPin { pin: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What pinning a pattern did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinned {
    /// False when the pattern was pinned already.
    pub added: bool,
    /// How many tracks the pattern selects now; `None` when the library
    /// of the data dir cannot be opened (e.g. a server holds its lock).
    pub tracks_now: Option<usize>,
}

/// Saves `pattern` as a pin of the server at `data_dir`, once.
pub fn pin(data_dir: &Path, pattern: &str) -> Result<Pinned, PinError> {
    let parsed = spindle_query::parse(pattern).map_err(|e| PinError::Syntax {
        pin: pattern.to_owned(),
        message: e.to_string(),
    })?;
    let tracks_now = Db::open(data_dir).ok().and_then(|db| {
        let ids = db.read().query_ids(&parsed.coll, &SourcePref::default());
        Some(ids.ok()?.ids.len())
    });
    let added = pins::add(&pins::pins_path(data_dir), pattern)?;
    Ok(Pinned { added, tracks_now })
}

/// Removes the pin `pin` (its text, or its 1-based number in [`list`]);
/// returns the pattern removed.
pub fn unpin(data_dir: &Path, pin: &str) -> Result<String, PinError> {
    pins::remove(&pins::pins_path(data_dir), pin)?.ok_or_else(|| PinError::NoSuchPin {
        pin: pin.to_owned(),
    })
}

/// The saved pins, in order.
pub fn list(data_dir: &Path) -> Result<Vec<String>, PinError> {
    Ok(pins::load(&pins::pins_path(data_dir))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_says_what_it_selects_and_is_saved_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let doc = serde_json::json!([{"rating": 5}, {"rating": 4}, {"rating": 2}]);
        // Two statements: the read guard must be gone before the commit.
        let import = spindle_store::json::import_ops(&doc, &db.read()).unwrap();
        db.commit(import.ops).unwrap();
        drop(db);
        let first = pin(dir.path(), "rating>=4").unwrap();
        assert_eq!(
            first,
            Pinned {
                added: true,
                tracks_now: Some(2)
            }
        );
        assert!(!pin(dir.path(), "rating>=4").unwrap().added);
        assert_eq!(list(dir.path()).unwrap(), ["rating>=4"]);
    }

    #[test]
    fn a_pattern_that_does_not_parse_is_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        let err = pin(dir.path(), "rating>=").unwrap_err();
        assert!(matches!(err, PinError::Syntax { .. }), "{err}");
        assert!(list(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn pins_are_removed_by_number_and_an_unknown_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        pin(dir.path(), "artist:Low").unwrap();
        let err = unpin(dir.path(), "2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no pin \"2\" (see `spindle tiers pin --list`)"
        );
        assert_eq!(unpin(dir.path(), "1").unwrap(), "artist:Low");
    }
}
