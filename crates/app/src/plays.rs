//! Play counts and last plays per user: what Subsonic shows as a song's
//! or album's `playCount` and `played`, and what orders a user's
//! `getAlbumList` `frequent` and `recent`. The library's own
//! `timesplayed` ([`crate::link`]) counts every user's listens together
//! and stays for the hot tier and administrators.
//!
//! An index in memory, user → library entry → (plays, last start), built
//! once from the listening history when the state opens ([`Plays::build`]:
//! one pass over each user's listens, one library lookup per distinct
//! track) and kept current by the same listens that feed the library:
//! [`crate::scrobble::store_songs`] records a scrobble's plays before its
//! answer is sent (so the scrobbling user reads their own write), imports
//! record theirs, and a correction of a user's history rebuilds that
//! user's part. A listen is matched to an entry as the linker matches it
//! ([`crate::link::find_entry`]); a Subsonic scrobble names its entry.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use spindle_listens::{Listen, Listens};
use spindle_store::Library;

/// How often a user played an entry and when the last play started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Played {
    pub count: i64,
    /// UNIX seconds; 0 when never played.
    pub last: i64,
}

impl Played {
    fn add(&mut self, other: Played) {
        self.count += other.count;
        self.last = self.last.max(other.last);
    }
}

/// One user's plays by library entry.
#[derive(Debug, Default)]
pub struct UserPlays {
    songs: HashMap<u32, Played>,
}

impl UserPlays {
    /// The plays of an entry (zero when never played).
    pub fn get(&self, entry: u32) -> Played {
        self.songs.get(&entry).copied().unwrap_or_default()
    }

    /// Every entry played at least once, with its plays.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Played)> + '_ {
        self.songs
            .iter()
            .filter(|(_, p)| p.count > 0)
            .map(|(&e, &p)| (e, p))
    }

    /// The sum of the plays of `entries` (the songs of an album).
    pub fn sum(&self, entries: impl IntoIterator<Item = u32>) -> Played {
        let mut out = Played::default();
        for e in entries {
            out.add(self.get(e));
        }
        out
    }
}

/// One user's part of the index, shared with the answers reading it.
pub type SharedPlays = Arc<RwLock<UserPlays>>;

/// The index; see the module doc.
#[derive(Default)]
pub struct Plays {
    users: RwLock<HashMap<String, SharedPlays>>,
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Finds entries for listens, asking the library once per distinct track.
struct Resolver<'a> {
    lib: &'a Library,
    memo: HashMap<(String, String, String, String), Option<u32>>,
}

impl<'a> Resolver<'a> {
    fn new(lib: &'a Library) -> Self {
        Resolver {
            lib,
            memo: HashMap::new(),
        }
    }

    fn entry(&mut self, mbid: &str, artist: &str, title: &str, album: &str) -> Option<u32> {
        let key = (
            mbid.to_owned(),
            artist.to_owned(),
            title.to_owned(),
            album.to_owned(),
        );
        if let Some(&id) = self.memo.get(&key) {
            return id;
        }
        let mut l = Listen::new("", 0, artist, title);
        l.mbid = mbid.to_owned();
        l.album = album.to_owned();
        let id = crate::link::find_entry(self.lib, &l);
        self.memo.insert(key, id);
        id
    }
}

impl Plays {
    /// The index of every user of `users` from their history in
    /// `listens`, matched to `lib`. Call from a blocking thread.
    pub fn build(listens: &Listens, lib: &Library, users: &[String]) -> Plays {
        let plays = Plays::default();
        if lib.is_empty() {
            return plays;
        }
        let mut r = Resolver::new(lib);
        for user in users {
            let songs = tally(listens, &mut r, user);
            if !songs.is_empty() {
                write(&plays.users)
                    .insert(user.clone(), Arc::new(RwLock::new(UserPlays { songs })));
            }
        }
        plays
    }

    /// The user's part, if they played anything.
    pub fn of(&self, user: &str) -> Option<SharedPlays> {
        read(&self.users).get(user).cloned()
    }

    fn user(&self, user: &str) -> SharedPlays {
        if let Some(u) = self.of(user) {
            return u;
        }
        write(&self.users)
            .entry(user.to_owned())
            .or_default()
            .clone()
    }

    /// Counts accepted listens, each of the entry given or else of the
    /// one its names match. Call from a blocking thread (a library
    /// lookup per listen without an entry).
    pub fn record(&self, lib: &Library, listens: &[(Listen, Option<u32>)]) {
        let mut r = Resolver::new(lib);
        for (l, entry) in listens {
            let id = match entry.filter(|&e| lib.contains(e)) {
                Some(e) => Some(e),
                None => r.entry(&l.mbid, &l.artist, &l.title, &l.album),
            };
            if let Some(id) = id {
                let u = self.user(&l.user);
                write(&u).songs.entry(id).or_default().add(Played {
                    count: 1,
                    last: l.timestamp,
                });
            }
        }
    }

    /// Builds one user's part again from their history (after a
    /// correction of it). Call from a blocking thread.
    pub fn rebuild_user(&self, listens: &Listens, lib: &Library, user: &str) {
        let songs = tally(listens, &mut Resolver::new(lib), user);
        let u = self.user(user);
        write(&u).songs = songs;
    }

    /// Forgets a deleted user's plays.
    pub fn forget_user(&self, user: &str) {
        write(&self.users).remove(user);
    }
}

impl crate::App {
    /// Counts in the users' plays what a replica applied of its primary's
    /// log: each new listen one play, and each user a correction touched
    /// rebuilt. Call from a blocking thread.
    pub fn count_shipped_plays(&self, applied: &spindle_listens::Applied) {
        let lib = self.db.read();
        let fresh: Vec<(Listen, Option<u32>)> =
            applied.listens.iter().map(|l| (l.clone(), None)).collect();
        self.plays.record(&lib, &fresh);
        let mut users: Vec<&str> = applied
            .corrected
            .iter()
            .flat_map(|c| c.removed.iter().chain(&c.added))
            .map(|l| l.user.as_str())
            .collect();
        users.sort_unstable();
        users.dedup();
        for u in users {
            self.plays.rebuild_user(&self.listens, &lib, u);
        }
    }
}

/// A user's plays by entry, from their history.
fn tally(listens: &Listens, r: &mut Resolver<'_>, user: &str) -> HashMap<u32, Played> {
    let mut songs: HashMap<u32, Played> = HashMap::new();
    for t in listens.track_tallies(user) {
        if let Some(id) = r.entry(&t.mbid, &t.artist, &t.title, &t.album) {
            songs.entry(id).or_default().add(Played {
                count: i64::from(t.count),
                last: t.last,
            });
        }
    }
    songs
}
