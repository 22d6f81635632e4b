//! Helpers shared by the store's integration tests.

use std::collections::{BTreeMap, BTreeSet};

use spindle_store::{Db, Value};

/// One entry's properties, as (key, source, value).
pub type Props = BTreeSet<(String, String, Value)>;

/// Every property of every entry.
pub type State = BTreeMap<u32, Props>;

/// The whole library as a [`State`].
pub fn dump(db: &Db) -> State {
    let lib = db.read();
    lib.ids()
        .map(|id| {
            let props = lib
                .properties(id)
                .into_iter()
                .map(|(k, v, s)| (k.to_owned(), s.to_owned(), v.to_value()))
                .collect();
            (id, props)
        })
        .collect()
}
