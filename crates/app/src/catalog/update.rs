//! Bringing a catalog up to date with a few changed entries, without a
//! full build: the changed songs are read again, the albums they left or
//! joined are made again from their songs, and every other song and
//! album is kept (its indexes moved along). The result is the catalog a
//! full build of the same library makes: same songs in the same order,
//! same albums (ids, order, aggregates) and artists.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{album_of, Catalog, Song};

impl Catalog {
    /// This catalog with the songs of `changed` (entry id, its song now or
    /// `None` when it is no song any more; ascending by id, each id once)
    /// in place of their old versions.
    pub fn updated(&self, changed: Vec<(u32, Option<Song>)>) -> Catalog {
        let old = &self.songs;
        let mut songs: Vec<Arc<Song>> = Vec::with_capacity(old.len() + changed.len());
        // Old index -> new index of each song kept as it was.
        let mut moved: Vec<usize> = vec![usize::MAX; old.len()];
        // Albums that lost or gained a song, and the new songs by album.
        let mut touched: HashSet<String> = HashSet::new();
        let mut fresh: HashMap<String, Vec<usize>> = HashMap::new();
        let mut i = 0;
        let mut changed = changed.into_iter().peekable();
        loop {
            let old_id = old.get(i).map(|s| s.id);
            let new_id = changed.peek().map(|(id, _)| *id);
            let take_old = match (old_id, new_id) {
                (None, None) => break,
                (Some(o), Some(n)) => o < n,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            if take_old {
                moved[i] = songs.len();
                songs.push(old[i].clone());
                i += 1;
                continue;
            }
            let Some((id, song)) = changed.next() else {
                break;
            };
            if old_id == Some(id) {
                touched.insert(old[i].album_id.clone());
                i += 1;
            }
            if let Some(song) = song {
                touched.insert(song.album_id.clone());
                fresh
                    .entry(song.album_id.clone())
                    .or_default()
                    .push(songs.len());
                songs.push(Arc::new(song));
            }
        }

        let articles = &self.ignored_articles;
        let mut albums = Vec::with_capacity(self.albums.len() + fresh.len());
        for a in &self.albums {
            if touched.contains(&a.id) {
                continue;
            }
            let mut a = a.clone();
            for n in &mut a.songs {
                *n = moved[*n];
            }
            albums.push(a);
        }
        for id in &touched {
            let mut members: Vec<usize> = self
                .album(id)
                .map(|a| {
                    a.songs
                        .iter()
                        .map(|&n| moved[n])
                        .filter(|&n| n != usize::MAX)
                        .collect()
                })
                .unwrap_or_default();
            members.extend(fresh.get(id).into_iter().flatten());
            members.sort_unstable();
            albums.extend(album_of(&songs, &members, articles));
        }
        // A full build lists albums in the order of their first song.
        albums.sort_by_cached_key(|a| a.songs.iter().min().copied().unwrap_or(usize::MAX));

        let mut cat = Catalog {
            songs,
            albums,
            ignored_articles: self.ignored_articles.clone(),
            ..Catalog::default()
        };
        cat.finish();
        cat
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use spindle_query::Value;
    use spindle_store::{Db, Op};

    use super::super::gen::{rewrite, ROOT};
    use super::super::{read_songs, CatalogOptions};
    use super::*;

    /// The catalog `cat` brought up to date with the entries changed
    /// since `since`.
    fn catch_up(db: &Db, cat: &Catalog, since: spindle_store::ChangeStamp) -> Catalog {
        let lib = db.read();
        let ids = lib.changed_since(since).unwrap();
        let roots = [PathBuf::from(ROOT)];
        cat.updated(read_songs(&lib, &ids, &roots, &cat.ignored_articles))
    }

    #[test]
    fn an_updated_catalog_is_the_one_a_full_build_makes_after_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let roots = [PathBuf::from(ROOT)];
        let opts = CatalogOptions::default();
        let mut live: Vec<u32> = Vec::new();
        for n in 0..60 {
            let id = db.reserve_id();
            rewrite(&db, &mut rng, id, &format!("a/{n}.flac"));
            live.push(id);
        }
        let mut cat = Catalog::build_with(&db.read(), &roots, &opts);
        for step in 0..300 {
            let since = db.read().change_stamp();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..live.len());
                match rng.gen_range(0..10) {
                    // Adds, below the root or outside it.
                    0 | 1 => {
                        let id = db.reserve_id();
                        let dir = if rng.gen_bool(0.9) { "b" } else { "../x" };
                        rewrite(&db, &mut rng, id, &format!("{dir}/{step}.flac"));
                        live.push(id);
                    }
                    // Removes.
                    2 if live.len() > 5 => {
                        db.commit(vec![Op::DeleteEntry(live.swap_remove(at))])
                            .unwrap();
                    }
                    // Moves: a new path for the same entry.
                    3 => {
                        let id = live[at];
                        db.commit(vec![
                            Op::DelKey {
                                entry: id,
                                key: "url".into(),
                                source: None,
                            },
                            Op::AddProp {
                                entry: id,
                                key: "url".into(),
                                source: "plugin/test".into(),
                                value: Value::Str(format!("file://{ROOT}/m/{step}.flac")),
                            },
                        ])
                        .unwrap();
                    }
                    // A play: one value changes.
                    4 => {
                        let id = live[at];
                        db.commit(vec![
                            Op::DelKey {
                                entry: id,
                                key: "timesplayed".into(),
                                source: None,
                            },
                            Op::AddProp {
                                entry: id,
                                key: "timesplayed".into(),
                                source: "server".into(),
                                value: Value::Int(step),
                            },
                        ])
                        .unwrap();
                    }
                    // Edits: every tag anew.
                    _ => {
                        let id = live[at];
                        rewrite(&db, &mut rng, id, &format!("e/{step}.flac"));
                    }
                }
            }
            cat = catch_up(&db, &cat, since);
            let full = Catalog::build_with(&db.read(), &roots, &opts);
            assert!(cat == full, "step {step}: the updated catalog differs");
        }
        assert!(cat.albums.len() > 5 && cat.artists.len() > 2);
    }
}
