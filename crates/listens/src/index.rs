//! In-memory indexes over the log: listens by time per user, chart
//! counters (overall totals plus per-day buckets), loved tracks, dedupe.
//! Rebuilt from the log on open.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::model::Listen;
use crate::normalise::normalise;

pub(crate) const DAY: i64 = 86_400;

/// Interned strings: ids are indexes into `strs`.
#[derive(Default)]
pub(crate) struct Interner {
    ids: HashMap<Box<str>, u32>,
    strs: Vec<Box<str>>,
}

impl Interner {
    pub(crate) fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strs.len() as u32;
        self.strs.push(s.into());
        self.ids.insert(s.into(), i);
        i
    }
    pub(crate) fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }
    pub(crate) fn str(&self, i: u32) -> &str {
        self.strs.get(i as usize).map_or("", |s| s)
    }
}

/// A stored listen, its strings interned.
#[derive(Clone, Copy)]
pub(crate) struct Rec {
    ts: i64,
    user: u32,
    artist: u32,
    title: u32,
    album: u32,
    album_artist: u32,
    mbid: u32,
    client: u32,
    duration: u32,
    track_number: u32,
}

/// Chart keys are normalised names; `display` keeps the first spelling seen.
type ArtistK = u32;
type PairK = (u32, u32);

#[derive(Default)]
struct Counts {
    listens: u32,
    artists: HashMap<ArtistK, u32>,
    albums: HashMap<PairK, u32>,
    tracks: HashMap<PairK, u32>,
}

impl Counts {
    fn add(&mut self, a: ArtistK, al: Option<PairK>, t: PairK) {
        self.listens += 1;
        *self.artists.entry(a).or_default() += 1;
        if let Some(al) = al {
            *self.albums.entry(al).or_default() += 1;
        }
        *self.tracks.entry(t).or_default() += 1;
    }
}

#[derive(Default)]
struct UserIdx {
    by_time: BTreeSet<(i64, u32)>,
    total: Counts,
    days: BTreeMap<i64, Counts>,
    /// (normalised artist, normalised title) → (when, artist, title) as given.
    loved: HashMap<PairK, (i64, u32, u32)>,
}

/// The dedupe key: user, timestamp, normalised artist and title.
pub(crate) type DedupeKey = (u32, i64, u32, u32);

#[derive(Default)]
pub(crate) struct Index {
    pub(crate) strs: Interner,
    recs: Vec<Rec>,
    users: HashMap<u32, UserIdx>,
    display: HashMap<u32, u32>,
    pub(crate) seen: HashSet<DedupeKey>,
}

/// Which chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    Artists,
    Albums,
    Tracks,
}

/// One row of a chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartRow {
    /// Artist, album or track name.
    pub name: String,
    /// The artist, for albums and tracks; empty for artists.
    pub artist: String,
    pub playcount: u32,
    /// 1-based rank.
    pub rank: u32,
}

/// A page of a chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    pub rows: Vec<ChartRow>,
    /// Distinct artists, albums or tracks in the period.
    pub total: usize,
}

/// Which listens `recent` returns.
#[derive(Debug, Clone, Default)]
pub struct RecentQuery {
    /// Only listens at or after this time.
    pub from: Option<i64>,
    /// Only listens at or before this time.
    pub to: Option<i64>,
    /// Page size.
    pub limit: usize,
    /// 1-based page.
    pub page: usize,
}

/// A page of listens, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub listens: Vec<Listen>,
    /// Listens matching the query (all pages).
    pub total: usize,
}

/// A loved track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loved {
    pub artist: String,
    pub title: String,
    pub timestamp: i64,
}

/// Totals for user.getInfo.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserSummary {
    pub playcount: usize,
    pub first_listen: Option<i64>,
    pub artist_count: usize,
    pub track_count: usize,
    pub album_count: usize,
}

impl Index {
    pub(crate) fn norm_id(&mut self, s: &str) -> u32 {
        let n = normalise(s);
        let id = self.strs.id(&n);
        if !self.display.contains_key(&id) {
            let d = self.strs.id(s.trim());
            self.display.insert(id, d);
        }
        id
    }

    pub(crate) fn dedupe_key(&mut self, l: &Listen) -> DedupeKey {
        let u = self.strs.id(&l.user);
        (
            u,
            l.timestamp,
            self.norm_id(&l.artist),
            self.norm_id(&l.title),
        )
    }

    pub(crate) fn add(&mut self, l: &Listen) {
        let user = self.strs.id(&l.user);
        let a = self.norm_id(&l.artist);
        let t = self.norm_id(&l.title);
        let album = (!l.album.trim().is_empty()).then(|| {
            let al = if l.album_artist.trim().is_empty() {
                a
            } else {
                self.norm_id(&l.album_artist)
            };
            (al, self.norm_id(&l.album))
        });
        let rec = Rec {
            ts: l.timestamp,
            user,
            artist: self.strs.id(&l.artist),
            title: self.strs.id(&l.title),
            album: self.strs.id(&l.album),
            album_artist: self.strs.id(&l.album_artist),
            mbid: self.strs.id(&l.mbid),
            client: self.strs.id(&l.client),
            duration: l.duration.unwrap_or(u32::MAX),
            track_number: l.track_number.unwrap_or(u32::MAX),
        };
        let idx = self.recs.len() as u32;
        self.recs.push(rec);
        self.seen.insert((user, l.timestamp, a, t));
        let u = self.users.entry(user).or_default();
        u.by_time.insert((l.timestamp, idx));
        u.total.add(a, album, (a, t));
        u.days
            .entry(l.timestamp.div_euclid(DAY))
            .or_default()
            .add(a, album, (a, t));
    }

    pub(crate) fn love(&mut self, user: &str, artist: &str, title: &str, ts: i64, loved: bool) {
        let u = self.strs.id(user);
        let key = (self.norm_id(artist), self.norm_id(title));
        let (ai, ti) = (self.strs.id(artist), self.strs.id(title));
        let idx = self.users.entry(u).or_default();
        if loved {
            idx.loved.insert(key, (ts, ai, ti));
        } else {
            idx.loved.remove(&key);
        }
    }

    fn user(&self, user: &str) -> Option<&UserIdx> {
        self.users.get(&self.strs.get(user)?)
    }

    fn listen(&self, r: &Rec) -> Listen {
        let s = |i| self.strs.str(i).to_owned();
        let opt = |v: u32| (v != u32::MAX).then_some(v);
        Listen {
            user: s(r.user),
            timestamp: r.ts,
            artist: s(r.artist),
            title: s(r.title),
            album: s(r.album),
            album_artist: s(r.album_artist),
            mbid: s(r.mbid),
            duration: opt(r.duration),
            track_number: opt(r.track_number),
            client: s(r.client),
        }
    }

    pub(crate) fn recent(&self, user: &str, q: &RecentQuery) -> Page {
        let Some(u) = self.user(user) else {
            return Page {
                listens: Vec::new(),
                total: 0,
            };
        };
        let lo = (q.from.unwrap_or(i64::MIN), 0);
        let hi = (q.to.unwrap_or(i64::MAX), u32::MAX);
        let range = || u.by_time.range(lo..=hi);
        let total = if q.from.is_none() && q.to.is_none() {
            u.by_time.len()
        } else {
            range().count()
        };
        let skip = q.page.saturating_sub(1).saturating_mul(q.limit);
        let listens = range()
            .rev()
            .skip(skip)
            .take(q.limit)
            .filter_map(|&(_, i)| self.recs.get(i as usize).map(|r| self.listen(r)))
            .collect();
        Page { listens, total }
    }

    /// A chart since `since` (everything when `None`): whole days come
    /// from the day buckets; the part of the first day after `since` is
    /// counted from the time index (at most one day of listens).
    pub(crate) fn top(
        &self,
        user: &str,
        kind: ChartKind,
        since: Option<i64>,
        limit: usize,
        page: usize,
    ) -> Chart {
        let Some(u) = self.user(user) else {
            return Chart {
                rows: Vec::new(),
                total: 0,
            };
        };
        let mut counts: Vec<((u32, u32), u32)> = match since {
            None => collect(&u.total, kind),
            Some(since) => {
                let first_day = since.div_euclid(DAY);
                let mut acc: HashMap<(u32, u32), u32> = HashMap::new();
                for (_, c) in u.days.range(first_day + 1..) {
                    for (k, n) in collect(c, kind) {
                        *acc.entry(k).or_default() += n;
                    }
                }
                let end = (first_day + 1) * DAY;
                for &(_, i) in u.by_time.range((since, 0)..(end, 0)) {
                    if let Some(r) = self.recs.get(i as usize) {
                        if let Some(k) = self.chart_key(r, kind) {
                            *acc.entry(k).or_default() += 1;
                        }
                    }
                }
                acc.into_iter().collect()
            }
        };
        let total = counts.len();
        let skip = page.saturating_sub(1).saturating_mul(limit);
        let want = skip.saturating_add(limit).min(total);
        let by_rank = |a: &((u32, u32), u32), b: &((u32, u32), u32)| {
            b.1.cmp(&a.1)
                .then_with(|| self.name(a.0 .1).cmp(self.name(b.0 .1)))
        };
        if want < counts.len() && want > 0 {
            counts.select_nth_unstable_by(want - 1, by_rank);
            counts.truncate(want);
        }
        counts.sort_unstable_by(by_rank);
        let rows = counts
            .into_iter()
            .enumerate()
            .skip(skip)
            .take(limit)
            .map(|(i, ((a, n), c))| ChartRow {
                name: self.name(n).to_owned(),
                artist: if kind == ChartKind::Artists {
                    String::new()
                } else {
                    self.name(a).to_owned()
                },
                playcount: c,
                rank: i as u32 + 1,
            })
            .collect();
        Chart { rows, total }
    }

    fn chart_key(&self, r: &Rec, kind: ChartKind) -> Option<(u32, u32)> {
        let n = |i: u32| self.strs.get(&normalise(self.strs.str(i)));
        let a = n(r.artist)?;
        match kind {
            ChartKind::Artists => Some((a, a)),
            ChartKind::Tracks => Some((a, n(r.title)?)),
            ChartKind::Albums => {
                if self.strs.str(r.album).trim().is_empty() {
                    return None;
                }
                let aa = if self.strs.str(r.album_artist).trim().is_empty() {
                    a
                } else {
                    n(r.album_artist)?
                };
                Some((aa, n(r.album)?))
            }
        }
    }

    fn name(&self, norm: u32) -> &str {
        self.strs
            .str(self.display.get(&norm).copied().unwrap_or(norm))
    }

    pub(crate) fn per_day(&self, user: &str, since: Option<i64>) -> Vec<(i64, u32)> {
        let Some(u) = self.user(user) else {
            return Vec::new();
        };
        let first = since.map_or(i64::MIN, |s| s.div_euclid(DAY));
        u.days
            .range(first..)
            .map(|(d, c)| (d * DAY, c.listens))
            .collect()
    }

    pub(crate) fn loved(&self, user: &str) -> Vec<Loved> {
        let Some(u) = self.user(user) else {
            return Vec::new();
        };
        let mut v: Vec<Loved> = u
            .loved
            .values()
            .map(|&(ts, a, t)| Loved {
                artist: self.strs.str(a).to_owned(),
                title: self.strs.str(t).to_owned(),
                timestamp: ts,
            })
            .collect();
        v.sort_by_key(|l| std::cmp::Reverse(l.timestamp));
        v
    }

    pub(crate) fn is_loved(&self, user: &str, artist: &str, title: &str) -> bool {
        let (Some(u), Some(a), Some(t)) = (
            self.user(user),
            self.strs.get(&normalise(artist)),
            self.strs.get(&normalise(title)),
        ) else {
            return false;
        };
        u.loved.contains_key(&(a, t))
    }

    pub(crate) fn summary(&self, user: &str) -> UserSummary {
        let Some(u) = self.user(user) else {
            return UserSummary::default();
        };
        UserSummary {
            playcount: u.by_time.len(),
            first_listen: u.by_time.first().map(|&(ts, _)| ts),
            artist_count: u.total.artists.len(),
            album_count: u.total.albums.len(),
            track_count: u.total.tracks.len(),
        }
    }
}

fn collect(c: &Counts, kind: ChartKind) -> Vec<((u32, u32), u32)> {
    match kind {
        ChartKind::Artists => c.artists.iter().map(|(&a, &n)| ((a, a), n)).collect(),
        ChartKind::Albums => c.albums.iter().map(|(&k, &n)| (k, n)).collect(),
        ChartKind::Tracks => c.tracks.iter().map(|(&k, &n)| (k, n)).collect(),
    }
}
