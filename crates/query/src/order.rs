//! Sorting and windowing a collection in the terms of the command line:
//! `--order artist,-year,id,random`, `--offset`, `--limit`.

use crate::ast::{Coll, OrderBy};

/// An `--order` key that is not a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad key '{0}'")]
pub struct OrderError(pub String);

impl Coll {
    /// `self` sorted by `keys`, comma-separated, the first key first: a
    /// key's values (`-key` descending), `id`, or `random` (shuffled by
    /// `seed`). Empty keys are skipped.
    pub fn ordered_by(self, keys: &str, seed: u64) -> Result<Coll, OrderError> {
        let keys: Vec<&str> = keys.split(',').filter(|k| !k.is_empty()).collect();
        // Stable sorts applied from the last key to the first.
        keys.iter().rev().try_fold(self, |coll, key| {
            let (descending, key) = match key.strip_prefix('-') {
                Some(k) => (true, k),
                None => (false, *key),
            };
            let by = match key {
                "id" => OrderBy::Id,
                "random" => OrderBy::Random(seed),
                k if k.contains(char::is_whitespace) => return Err(OrderError(k.to_owned())),
                k => OrderBy::Value(vec![k.to_owned()]),
            };
            Ok(Coll::Order {
                by,
                descending,
                operand: Box::new(coll),
            })
        })
    }

    /// `length` entries of `self` from `start` (0-based); `self` itself
    /// when that is all of it.
    pub fn window(self, start: usize, length: Option<usize>) -> Coll {
        if start == 0 && length.is_none() {
            return self;
        }
        Coll::Limit {
            start,
            length,
            operand: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(by: OrderBy, descending: bool, operand: Coll) -> Coll {
        Coll::Order {
            by,
            descending,
            operand: Box::new(operand),
        }
    }

    #[test]
    fn the_first_key_sorts_last_so_it_wins() {
        let c = Coll::Universe.ordered_by("artist,-year,,id", 0).unwrap();
        let want = order(
            OrderBy::Value(vec!["artist".into()]),
            false,
            order(
                OrderBy::Value(vec!["year".into()]),
                true,
                order(OrderBy::Id, false, Coll::Universe),
            ),
        );
        assert_eq!(c, want);
        assert_eq!(
            Coll::Universe.ordered_by("-random", 9),
            Ok(order(OrderBy::Random(9), true, Coll::Universe))
        );
        assert_eq!(Coll::Universe.ordered_by("", 0), Ok(Coll::Universe));
    }

    #[test]
    fn a_key_with_a_space_is_refused() {
        let e = Coll::Universe.ordered_by("artist,-my key", 0).unwrap_err();
        assert_eq!(e.to_string(), "bad key 'my key'");
    }

    #[test]
    fn a_window_of_everything_is_no_window() {
        assert_eq!(Coll::Universe.window(0, None), Coll::Universe);
        assert_eq!(
            Coll::Universe.window(2, Some(3)),
            Coll::Limit {
                start: 2,
                length: Some(3),
                operand: Box::new(Coll::Universe)
            }
        );
    }
}
