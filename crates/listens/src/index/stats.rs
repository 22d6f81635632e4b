//! Queries for statistics (the ListenBrainz and Last.fm stats APIs, the
//! web UI's year in review) that the chart counters cannot answer: when
//! each listen of a span was, and how long it lasted. A child of the
//! index module, so it reads the time index directly, without building a
//! [`Listen`](crate::Listen) per row.

use super::Index;
use crate::store::Listens;

impl Index {
    /// (timestamp, duration in seconds if known) of `user`'s listens in
    /// `[from, to]` (either end open), oldest first.
    pub(crate) fn plays(
        &self,
        user: &str,
        from: Option<i64>,
        to: Option<i64>,
    ) -> Vec<(i64, Option<u32>)> {
        let Some(u) = self.user(user) else {
            return Vec::new();
        };
        let lo = (from.unwrap_or(i64::MIN), 0);
        let hi = (to.unwrap_or(i64::MAX), u32::MAX);
        // `range` panics on a start past the end.
        if lo > hi {
            return Vec::new();
        }
        u.by_time
            .range(lo..=hi)
            .map(|&(ts, i)| {
                // As corrected (`view`): a deleted listen is not in `by_time`.
                let d = self.view(u, i).map_or(u32::MAX, |r| r.duration);
                (ts, (d != u32::MAX).then_some(d))
            })
            .collect()
    }
}

impl Listens {
    /// When each of `user`'s listens in `[from, to]` (either end open)
    /// was, and its duration in seconds when known: (timestamp,
    /// duration), oldest first. For counts by hour, weekday or local day
    /// and for listening time.
    pub fn plays(&self, user: &str, from: Option<i64>, to: Option<i64>) -> Vec<(i64, Option<u32>)> {
        self.index().plays(user, from, to)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Listen, Listens};

    #[test]
    fn plays_lists_a_span_oldest_first_with_known_durations() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Listens::open(dir.path()).unwrap();
        let mut a = Listen::new("ann", 300, "A", "x");
        a.duration = Some(180);
        let b = Listen::new("ann", 100, "A", "y");
        let c = Listen::new("ann", 200, "B", "z");
        let other = Listen::new("bob", 150, "A", "x");
        store.submit(&[a, b, c, other]).unwrap();
        assert_eq!(
            store.plays("ann", None, None),
            vec![(100, None), (200, None), (300, Some(180))]
        );
        assert_eq!(
            store.plays("ann", Some(150), Some(300)),
            vec![(200, None), (300, Some(180))]
        );
        assert!(store.plays("ann", Some(301), Some(100)).is_empty());
        assert!(store.plays("nobody", None, None).is_empty());
    }
}
