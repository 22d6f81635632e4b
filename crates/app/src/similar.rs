//! Similar artists, computed locally from the listening history and the
//! library's genres; no outside service.
//!
//! * **Co-listening**: every (user, UTC day) of the history is a basket of
//!   the artists that user played that day. Two artists are the closer
//!   the more baskets hold both, relative to how many hold each: the
//!   cosine `both / sqrt(a * b)`, between 0 and 1.
//! * **Shared genres**: the Jaccard index of the two artists' genre sets
//!   in the catalog (shared / all), weighted by [`GENRE_WEIGHT`].
//!
//! An artist's similar artists are those with a positive sum, best first
//! (ties by name). Artists are keyed by their name lower-cased, the
//! catalog's own folding (an artist of the history is in the library when
//! [`crate::catalog::artist_id`] of its name is a catalog artist).
//!
//! [`SimilarCache`] (a field of the server's state) keeps one
//! [`Similar`] per catalog and history size, rebuilt at most every
//! [`REBUILD_EVERY`], so a request reads a ready table.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spindle_listens::{ChartKind, ChartQuery, Listens, RecentQuery};

use crate::catalog::Catalog;
use crate::sync::lock;

/// The most artists of one basket (a user's day) counted: the day's most
/// played. Pairs grow with the square of this.
pub const BASKET_MAX_ARTISTS: usize = 50;
/// The most recent days of each user's history read.
pub const MAX_DAYS_PER_USER: usize = 3650;
/// How much shared genres count beside co-listening (whose score is at
/// most 1).
pub const GENRE_WEIGHT: f64 = 0.5;
/// The most co-listened neighbours kept per artist.
pub const MAX_NEIGHBOURS: usize = 200;
/// Artists of one genre looked at as candidates, at most (a genre such as
/// "Rock" may hold thousands).
pub const MAX_GENRE_CANDIDATES: usize = 2000;
/// The shortest time between two rebuilds when new listens arrive.
pub const REBUILD_EVERY: Duration = Duration::from_secs(10);

/// The folded key of an artist name.
pub fn key(name: &str) -> String {
    name.trim().to_lowercase()
}

/// Co-listening neighbours of every artist.
#[derive(Debug, Default)]
pub struct CoListening {
    neighbours: HashMap<String, Vec<(String, f64)>>,
}

impl CoListening {
    /// From baskets of artist names (each basket one user's day).
    pub fn from_baskets(baskets: impl IntoIterator<Item = Vec<String>>) -> CoListening {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut names: Vec<String> = Vec::new();
        let mut single: Vec<u32> = Vec::new();
        let mut pairs: HashMap<(u32, u32), u32> = HashMap::new();
        for basket in baskets {
            let mut b: Vec<u32> = basket
                .iter()
                .take(BASKET_MAX_ARTISTS)
                .map(|a| {
                    let k = key(a);
                    *ids.entry(k.clone()).or_insert_with(|| {
                        names.push(k);
                        single.push(0);
                        (names.len() - 1) as u32
                    })
                })
                .collect();
            b.sort_unstable();
            b.dedup();
            for (i, &x) in b.iter().enumerate() {
                single[x as usize] += 1;
                for &y in &b[i + 1..] {
                    *pairs.entry((x, y)).or_default() += 1;
                }
            }
        }
        let mut neighbours: HashMap<String, Vec<(String, f64)>> = HashMap::new();
        for ((x, y), both) in pairs {
            let score = f64::from(both)
                / (f64::from(single[x as usize]) * f64::from(single[y as usize])).sqrt();
            let (a, b) = (&names[x as usize], &names[y as usize]);
            neighbours
                .entry(a.clone())
                .or_default()
                .push((b.clone(), score));
            neighbours
                .entry(b.clone())
                .or_default()
                .push((a.clone(), score));
        }
        for v in neighbours.values_mut() {
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(MAX_NEIGHBOURS);
        }
        CoListening { neighbours }
    }

    /// The history's baskets: for every user, each day's most played
    /// artists (read from the history's day buckets).
    pub fn from_history(listens: &Listens, users: &[String]) -> CoListening {
        let mut baskets = Vec::new();
        for u in users {
            let days = listens.per_day(u, None);
            let skip = days.len().saturating_sub(MAX_DAYS_PER_USER);
            for &(day, _) in &days[skip..] {
                let q = ChartQuery {
                    from: Some(day),
                    to: Some(day + crate::time::DAY - 1),
                    artist: None,
                    limit: BASKET_MAX_ARTISTS,
                    page: 1,
                };
                let chart = listens.chart(u, ChartKind::Artists, &q);
                if chart.rows.len() > 1 {
                    baskets.push(chart.rows.into_iter().map(|r| r.name).collect());
                }
            }
        }
        CoListening::from_baskets(baskets)
    }

    pub fn neighbours(&self, artist: &str) -> &[(String, f64)] {
        self.neighbours.get(artist).map_or(&[], Vec::as_slice)
    }
}

/// Similar artists and the songs to draw from them.
#[derive(Debug, Default)]
pub struct Similar {
    colistening: Arc<CoListening>,
    /// Artist key → its genres (lower-cased, sorted).
    genres: HashMap<String, Vec<String>>,
    /// Genre → artist keys.
    by_genre: HashMap<String, Vec<String>>,
    /// Artist key → songs (indexes into the catalog) where it is the
    /// artist or the album artist.
    songs: HashMap<String, Vec<usize>>,
}

impl Similar {
    /// The table over `colistening` and `cat`'s genres and songs.
    pub fn new(colistening: Arc<CoListening>, cat: &Catalog) -> Similar {
        let mut genres: HashMap<String, Vec<String>> = HashMap::new();
        let mut songs: HashMap<String, Vec<usize>> = HashMap::new();
        for (n, s) in cat.songs.iter().enumerate() {
            let (a, aa) = (key(&s.artist), key(&s.album_artist));
            for k in [&a, &aa] {
                if let Some(g) = &s.genre {
                    genres.entry(k.clone()).or_default().push(key(g));
                }
            }
            songs.entry(a.clone()).or_default().push(n);
            if aa != a {
                songs.entry(aa).or_default().push(n);
            }
        }
        let mut by_genre: HashMap<String, Vec<String>> = HashMap::new();
        for (a, g) in &mut genres {
            g.sort_unstable();
            g.dedup();
            for x in g.iter() {
                by_genre.entry(x.clone()).or_default().push(a.clone());
            }
        }
        for v in by_genre.values_mut() {
            v.sort_unstable();
        }
        Similar {
            colistening,
            genres,
            by_genre,
            songs,
        }
    }

    fn jaccard(&self, a: &str, b: &str) -> f64 {
        let (Some(x), Some(y)) = (self.genres.get(a), self.genres.get(b)) else {
            return 0.0;
        };
        let shared = x.iter().filter(|g| y.binary_search(g).is_ok()).count();
        let all = x.len() + y.len() - shared;
        if all == 0 {
            0.0
        } else {
            shared as f64 / all as f64
        }
    }

    /// Up to `limit` artists (keys) like `artist` (a key), best first.
    pub fn artists(&self, artist: &str, limit: usize) -> Vec<(String, f64)> {
        let mut cand: HashSet<&str> = HashSet::new();
        for (b, _) in self.colistening.neighbours(artist) {
            cand.insert(b);
        }
        for g in self.genres.get(artist).into_iter().flatten() {
            for b in self
                .by_genre
                .get(g)
                .into_iter()
                .flatten()
                .take(MAX_GENRE_CANDIDATES)
            {
                cand.insert(b);
            }
        }
        cand.remove(artist);
        let co: HashMap<&str, f64> = self
            .colistening
            .neighbours(artist)
            .iter()
            .map(|(b, s)| (b.as_str(), *s))
            .collect();
        let mut v: Vec<(String, f64)> = cand
            .into_iter()
            .map(|b| {
                let s = co.get(b).copied().unwrap_or(0.0) + GENRE_WEIGHT * self.jaccard(artist, b);
                (b.to_owned(), s)
            })
            .filter(|(_, s)| *s > 0.0)
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(limit);
        v
    }

    /// The songs (catalog indexes) of an artist key.
    pub fn songs_of(&self, artist: &str) -> &[usize] {
        self.songs.get(artist).map_or(&[], Vec::as_slice)
    }
}

/// The tables last built.
#[derive(Debug, Default)]
pub struct SimilarCache {
    /// Co-listening, with the listen count it was built at and when.
    colistening: Mutex<Option<(usize, Instant, Arc<CoListening>)>>,
    /// The table over a catalog and that co-listening.
    table: Mutex<Option<(Arc<Catalog>, Arc<Similar>)>>,
}

impl SimilarCache {
    /// The table for `cat` and the history of `users` in `listens`.
    /// Co-listening is rebuilt when the history grew, at most every
    /// [`REBUILD_EVERY`]; the rest when the catalog is a new one. Builds
    /// on the caller's (blocking) thread.
    pub fn get(&self, cat: &Arc<Catalog>, listens: &Listens, users: &[String]) -> Arc<Similar> {
        let q = RecentQuery {
            limit: 0,
            page: 1,
            ..RecentQuery::default()
        };
        let total: usize = users.iter().map(|u| listens.recent(u, &q).total).sum();
        let cached = lock(&self.colistening)
            .as_ref()
            .filter(|(n, built, _)| *n == total || built.elapsed() < REBUILD_EVERY)
            .map(|(_, _, co)| co.clone());
        let co = match cached {
            Some(co) => co,
            None => {
                let co = Arc::new(CoListening::from_history(listens, users));
                *lock(&self.colistening) = Some((total, Instant::now(), co.clone()));
                co
            }
        };
        if let Some((c, s)) = lock(&self.table).as_ref() {
            if Arc::ptr_eq(c, cat) && Arc::ptr_eq(&s.colistening, &co) {
                return s.clone();
            }
        }
        let s = Arc::new(Similar::new(co, cat));
        *lock(&self.table) = Some((cat.clone(), s.clone()));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basket(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn artists_played_on_the_same_days_are_each_others_nearest() {
        let co = CoListening::from_baskets([
            basket(&["Metal A", "Metal B"]),
            basket(&["Metal A", "Metal B", "Pop C"]),
            basket(&["Pop C", "Pop D"]),
            basket(&["Pop C", "Pop D"]),
            basket(&["Metal B", "Metal A"]),
        ]);
        let a = co.neighbours("metal a");
        assert_eq!(a[0].0, "metal b");
        assert!(a[0].1 > 0.99, "{a:?}");
        assert_eq!(co.neighbours("pop d")[0].0, "pop c");
        assert!(co
            .neighbours("pop d")
            .iter()
            .all(|(b, _)| !b.starts_with("metal")));
        assert!(co.neighbours("nobody").is_empty());
    }

    #[test]
    fn shared_genres_make_artists_similar_without_any_history() {
        let cat = crate::testlib::catalog(&[
            ("a/1.flac", "Alpha", "A1", "t1", "Jazz", 0),
            ("b/1.flac", "Beta", "B1", "t2", "Jazz", 0),
            ("c/1.flac", "Gamma", "C1", "t3", "Noise", 0),
        ]);
        let s = Similar::new(Arc::default(), &cat);
        let v = s.artists("alpha", 10);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0, "beta");
        assert!(s.artists("gamma", 10).is_empty());
        assert_eq!(s.songs_of("beta").len(), 1);
    }

    #[test]
    fn co_listening_outranks_a_genre_alone() {
        let cat = crate::testlib::catalog(&[
            ("a/1.flac", "Alpha", "A1", "t1", "Jazz", 0),
            ("b/1.flac", "Beta", "B1", "t2", "Jazz", 0),
            ("c/1.flac", "Gamma", "C1", "t3", "Noise", 0),
        ]);
        let co = CoListening::from_baskets(vec![basket(&["Alpha", "Gamma"]); 3]);
        let s = Similar::new(Arc::new(co), &cat);
        let v: Vec<String> = s.artists("alpha", 10).into_iter().map(|x| x.0).collect();
        assert_eq!(v, ["gamma", "beta"]);
    }

    #[test]
    fn the_history_makes_baskets_of_each_users_days() {
        let dir = tempfile::tempdir().unwrap();
        let (l, _) = Listens::open(dir.path()).unwrap();
        let day = 1_700_000_000 / 86_400 * 86_400;
        let mut v = Vec::new();
        for (user, d, artist) in [
            ("ann", 0, "X"),
            ("ann", 0, "Y"),
            ("bob", 1, "X"),
            ("bob", 1, "Y"),
            ("bob", 2, "Z"),
            ("ann", 3, "Z"),
            ("ann", 4, "W"),
        ] {
            v.push(spindle_listens::Listen::new(
                user,
                day + d * 86_400 + v.len() as i64,
                artist,
                "song",
            ));
        }
        l.submit(&v).unwrap();
        let co = CoListening::from_history(&l, &["ann".into(), "bob".into()]);
        assert_eq!(co.neighbours("x").len(), 1);
        assert_eq!(co.neighbours("x")[0].0, "y");
        assert!(co.neighbours("z").is_empty());
    }
}
