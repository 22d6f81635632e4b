//! In-memory indexes over the log: listens by time per user (deleted ones
//! too, for dedupe), chart counters (overall totals plus 30-day buckets),
//! listens per day, loved tracks.
//! Rebuilt from the log on open, or loaded from a checkpoint (`snap.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::batch::{DedupeHasher, Key, Norms};
use crate::model::{Listen, ListenRef};
use crate::normalise::normalise;

mod counts;
mod fix;
mod snap;
mod stats;

// Chart keys are normalised names; `display` keeps the first spelling seen.
use counts::{Counts, PairK, SpanCounts};
pub(crate) use fix::Fix;

pub(crate) const DAY: i64 = 86_400;
/// The span of the chart counters kept besides the all-time ones: 30
/// days, counted from the UNIX epoch (span `n` starts at `n * SPAN`).
pub(crate) const SPAN: i64 = 30 * DAY;

/// A multiply-rotate hasher (FxHash's) for keys that are our own ids:
/// interned string numbers, days, dedupe hashes. They are not chosen by
/// clients, so the DoS resistance of SipHash buys nothing here, and the
/// counters are updated several times per listen.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }
    fn write_u128(&mut self, n: u128) {
        self.add(n as u64 ^ (n >> 64) as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        // hashbrown takes its 7 tag bits from the top: rotate the
        // well-mixed high bits down too.
        self.0.rotate_left(26)
    }
}

pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Interned strings: ids are indexes into `strs`. The table and the list
/// share one allocation per string, so that a lookup and a later read of
/// the same string touch the same memory.
#[derive(Default)]
pub(crate) struct Interner {
    ids: HashMap<Arc<str>, u32>,
    strs: Vec<Arc<str>>,
}

impl Interner {
    pub(crate) fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strs.len() as u32;
        let s: Arc<str> = s.into();
        self.strs.push(s.clone());
        self.ids.insert(s, i);
        i
    }
    /// [`Interner::id`] through a one-entry memo: the same field of
    /// consecutive listens (user, client, an empty album artist or mbid)
    /// is most often the same string, and comparing it with the last one
    /// costs less than a probe of the table.
    pub(crate) fn id_memo(&mut self, s: &str, memo: &mut Option<u32>) -> u32 {
        if let Some(i) = *memo {
            if self.str(i) == s {
                return i;
            }
        }
        let i = self.id(s);
        *memo = Some(i);
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
#[derive(Clone, Copy, PartialEq, Eq)]
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
    /// The credited artists: an index into [`Index::credits`], or
    /// [`NO_CREDITS`] for a listen credited to `artist` alone.
    credits: u32,
}

/// [`Rec::credits`] of a listen without a list of credited artists.
pub(crate) const NO_CREDITS: u32 = u32::MAX;

/// Lists of credited artists (the ids of their names as given),
/// interned: equal lists have one id, so records compare by it.
#[derive(Default)]
pub(crate) struct CreditLists {
    ids: HashMap<Box<[u32]>, u32>,
    lists: Vec<Box<[u32]>>,
}

impl CreditLists {
    /// The id of a list of at least two names; [`NO_CREDITS`] for fewer.
    pub(crate) fn id(&mut self, names: &[u32]) -> u32 {
        if names.len() < 2 {
            return NO_CREDITS;
        }
        if let Some(&i) = self.ids.get(names) {
            return i;
        }
        let i = self.lists.len() as u32;
        self.lists.push(names.into());
        self.ids.insert(names.into(), i);
        i
    }

    /// The names of list `id`; empty for [`NO_CREDITS`].
    pub(crate) fn get(&self, id: u32) -> &[u32] {
        self.lists.get(id as usize).map_or(&[], |l| l)
    }
}

#[derive(Default)]
struct UserIdx {
    /// The listens that count now: (start time, number in `recs`).
    by_time: BTreeSet<(i64, u32)>,
    /// The user's deleted listens, which still make a repeat of them a
    /// duplicate.
    gone: BTreeSet<(i64, u32)>,
    total: Counts,
    /// Chart counters per [`SPAN`] (by span number), for charts of a
    /// range: the spans inside it come from here.
    spans: BTreeMap<i64, SpanCounts>,
    /// Listens per UTC day (by day number).
    days: BTreeMap<i64, u32>,
    /// (normalised artist, normalised title) → (when, artist, title) as given.
    loved: IdMap<PairK, (i64, u32, u32)>,
    /// The user's corrections, in the order applied ([`fix`]).
    fixes: Vec<Fix>,
    /// Listens a correction changed: index in `recs` → the listen as it
    /// counts now (a deleted listen is only gone from `by_time`).
    edited: IdMap<u32, Rec>,
    /// Track edits and merges in force, in order: applied to each listen
    /// recorded after them.
    rules: Vec<crate::correction::Correction>,
}

#[derive(Default)]
pub(crate) struct Index {
    pub(crate) strs: Interner,
    credits: CreditLists,
    recs: Vec<Rec>,
    users: IdMap<u32, UserIdx>,
    display: IdMap<u32, u32>,
    /// A name as given → its normalised name: what charts of part of a
    /// span count listens by, without normalising each name again. (A
    /// name not in it is normalised then.)
    norms: IdMap<u32, u32>,
    /// The ids of the last listen's raw strings, for [`Interner::id_memo`].
    memo: [Option<u32>; 7],
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

/// Which listens a chart counts, and which page of it.
#[derive(Debug, Clone, Default)]
pub struct ChartQuery<'a> {
    /// Only listens at or after this time.
    pub from: Option<i64>,
    /// Only listens at or before this time.
    pub to: Option<i64>,
    /// Only this artist's rows (its albums or tracks), matched as charts
    /// match names: normalised.
    pub artist: Option<&'a str>,
    /// Page size.
    pub limit: usize,
    /// 1-based page.
    pub page: usize,
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

/// One track of a user's history as recorded (or as corrected), with how
/// many of their listens are of it and when the latest started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackTally {
    pub mbid: String,
    pub artist: String,
    pub title: String,
    pub album: String,
    pub count: u32,
    /// UNIX seconds.
    pub last: i64,
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
    /// The id of a normalised name `norm`, remembering `raw` (trimmed)
    /// as its display spelling if it is the first seen.
    fn norm_id(&mut self, norm: &str, raw: &str) -> u32 {
        self.norm_display(norm, raw).0
    }

    /// The ids of a normalised name and of its display spelling.
    fn norm_display(&mut self, norm: &str, raw: &str) -> (u32, u32) {
        let id = self.strs.id(norm);
        if let Some(&d) = self.display.get(&id) {
            return (id, d);
        }
        let d = self.strs.id(raw.trim());
        self.display.insert(id, d);
        self.norms.insert(d, id);
        (id, d)
    }

    /// The id of a raw name whose display spelling has id `display`:
    /// usually the same string, found without a probe of the table.
    fn raw_id(&mut self, raw: &str, (norm, display): (u32, u32), memo: usize) -> u32 {
        if self.strs.str(display) == raw {
            return display;
        }
        let id = self.strs.id_memo(raw, &mut self.memo[memo]);
        self.norms.entry(id).or_insert(norm);
        id
    }

    /// Adds a listen that is on disk and not a duplicate; `n` holds its
    /// names normalised.
    pub(crate) fn add(&mut self, l: &ListenRef<'_>, n: &Norms<'_>) {
        let user = self.strs.id_memo(l.user, &mut self.memo[0]);
        let (a, a_shown) = self.norm_display(n.artist, l.artist);
        let (t, t_shown) = self.norm_display(n.title, l.title);
        let mut album_artist_norm = None;
        let mut album_shown = None;
        let album = (!n.album.is_empty()).then(|| {
            let al = if n.album_artist.is_empty() {
                a
            } else {
                let id = self.norm_id(n.album_artist, l.album_artist);
                album_artist_norm = Some(id);
                id
            };
            let (id, shown) = self.norm_display(n.album, l.album);
            album_shown = Some((id, shown));
            (al, id)
        });
        // The artist chart's keys: each credited artist, once.
        let mut many = Vec::new();
        let mut credits = NO_CREDITS;
        if l.artists.is_list() {
            let mut raw = Vec::with_capacity(l.artists.len());
            for name in l.artists.iter() {
                let id = self.norm_id(&normalise(name), name);
                if !many.contains(&id) {
                    many.push(id);
                }
                let name_id = self.strs.id(name);
                self.norms.entry(name_id).or_insert(id);
                raw.push(name_id);
            }
            credits = self.credits.id(&raw);
        }
        let artists: &[u32] = if many.is_empty() {
            std::slice::from_ref(&a)
        } else {
            &many
        };
        let artist = self.raw_id(l.artist, (a, a_shown), 1);
        let title = self.raw_id(l.title, (t, t_shown), 2);
        let album_raw = match album_shown {
            Some(shown) => self.raw_id(l.album, shown, 3),
            None => self.strs.id_memo(l.album, &mut self.memo[3]),
        };
        let [.., m_album_artist, m_mbid, m_client] = &mut self.memo;
        let album_artist = self.strs.id_memo(l.album_artist, m_album_artist);
        if let Some(norm) = album_artist_norm {
            self.norms.entry(album_artist).or_insert(norm);
        }
        let rec = Rec {
            ts: l.timestamp,
            user,
            artist,
            title,
            album: album_raw,
            album_artist,
            mbid: self.strs.id_memo(l.mbid, m_mbid),
            client: self.strs.id_memo(l.client, m_client),
            duration: l.duration,
            track_number: l.track_number,
            credits,
        };
        let idx = self.recs.len() as u32;
        self.recs.push(rec);
        if self.users.get(&user).is_some_and(|u| !u.rules.is_empty()) {
            // A user with track edits or merges: their rules first.
            if let Some(mut u) = self.users.remove(&user) {
                self.add_ruled(&mut u, idx);
                self.users.insert(user, u);
            }
            return;
        }
        let u = self.users.entry(user).or_default();
        u.by_time.insert((l.timestamp, idx));
        u.total.add(artists, album, (a, t));
        u.spans
            .entry(l.timestamp.div_euclid(SPAN))
            .or_default()
            .add(artists, album, (a, t));
        *u.days.entry(l.timestamp.div_euclid(DAY)).or_default() += 1;
    }

    pub(crate) fn love(&mut self, user: &str, artist: &str, title: &str, ts: i64, loved: bool) {
        let u = self.strs.id(user);
        let key = (
            self.norm_id(&normalise(artist), artist),
            self.norm_id(&normalise(title), title),
        );
        let (ai, ti) = (self.strs.id(artist), self.strs.id(title));
        let idx = self.users.entry(u).or_default();
        if loved {
            idx.loved.insert(key, (ts, ai, ti));
        } else {
            idx.loved.remove(&key);
        }
    }

    /// Whether `user` has a listen recorded (counting now or deleted),
    /// as recorded (not as corrected), of `k`'s track — or with
    /// `mbid_too` of its recording — starting within `w` seconds of it.
    pub(crate) fn recorded_near(
        &self,
        user: &str,
        k: &Key,
        w: i64,
        mbid_too: bool,
        h: &DedupeHasher,
    ) -> bool {
        let Some(u) = self.user(user) else {
            return false;
        };
        let lo = (k.ts.saturating_sub(w), 0);
        let hi = (k.ts.saturating_add(w), u32::MAX);
        let same = |&(_, i): &(i64, u32)| {
            let Some(r) = self.recs.get(i as usize) else {
                return false;
            };
            let s = |id| self.strs.str(id);
            h.track_key(user, s(r.artist), s(r.title)) == k.track
                || (mbid_too && k.mbid.is_some() && h.recording_key(user, s(r.mbid)) == k.mbid)
        };
        u.by_time.range(lo..=hi).any(same) || u.gone.range(lo..=hi).any(same)
    }

    fn user(&self, user: &str) -> Option<&UserIdx> {
        self.users.get(&self.strs.get(user)?)
    }

    /// Listen `i` of `u` as it counts now: as recorded, or as corrected.
    fn view<'a>(&'a self, u: &'a UserIdx, i: u32) -> Option<&'a Rec> {
        if !u.edited.is_empty() {
            if let Some(r) = u.edited.get(&i) {
                return Some(r);
            }
        }
        self.recs.get(i as usize)
    }

    fn listen(&self, r: &Rec) -> Listen {
        let s = |i| self.strs.str(i).to_owned();
        let opt = |v: u32| (v != u32::MAX).then_some(v);
        Listen {
            user: s(r.user),
            timestamp: r.ts,
            artist: s(r.artist),
            artists: self.credits.get(r.credits).iter().map(|&i| s(i)).collect(),
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
        // `range` panics on a start past the end (`from` after `to`).
        if lo > hi {
            return Page {
                listens: Vec::new(),
                total: 0,
            };
        }
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
            .filter_map(|&(_, i)| self.view(u, i).map(|r| self.listen(r)))
            .collect();
        Page { listens, total }
    }

    /// A chart since `since` (everything when `None`).
    pub(crate) fn top(
        &self,
        user: &str,
        kind: ChartKind,
        since: Option<i64>,
        limit: usize,
        page: usize,
    ) -> Chart {
        self.chart(
            user,
            kind,
            &ChartQuery {
                from: since,
                limit,
                page,
                ..ChartQuery::default()
            },
        )
    }

    /// A chart of the listens in `[q.from, q.to]`: whole spans inside the
    /// range come from the span counters; the parts of the first and last
    /// spans are counted from the time index (at most two spans of
    /// listens). With `q.artist`, only that artist's keys count.
    pub(crate) fn chart(&self, user: &str, kind: ChartKind, q: &ChartQuery<'_>) -> Chart {
        let empty = Chart {
            rows: Vec::new(),
            total: 0,
        };
        let Some(u) = self.user(user) else {
            return empty;
        };
        let only = match q.artist {
            Some(a) => match self.strs.get(&normalise(a)) {
                Some(id) => Some(id),
                None => return empty,
            },
            None => None,
        };
        let keep = |k: &(u32, u32)| only.is_none_or(|a| k.0 == a);
        let mut counts: Vec<((u32, u32), u32)> = match (q.from, q.to) {
            (None, None) => {
                let mut v = Vec::new();
                u.total.each(kind, |k, n| {
                    if keep(&k) {
                        v.push((k, n));
                    }
                });
                v
            }
            (from, to) => {
                let lo = from.unwrap_or(i64::MIN);
                let hi = to.unwrap_or(i64::MAX);
                let mut acc: IdMap<(u32, u32), u32> = IdMap::default();
                let mut from_recs = |a: i64, b: i64| {
                    for &(_, i) in u.by_time.range((a, 0)..=(b, u32::MAX)) {
                        if let Some(r) = self.view(u, i) {
                            self.chart_keys(r, kind, |k| {
                                if keep(&k) {
                                    *acc.entry(k).or_default() += 1;
                                }
                            });
                        }
                    }
                };
                if lo <= hi {
                    // Spans d with d*SPAN >= lo and (d+1)*SPAN - 1 <= hi.
                    let first_full = lo.div_euclid(SPAN) + i64::from(lo.rem_euclid(SPAN) != 0);
                    let last_full = hi.saturating_add(1).div_euclid(SPAN) - 1;
                    if first_full > last_full {
                        from_recs(lo, hi);
                    } else {
                        if lo < first_full * SPAN {
                            from_recs(lo, first_full * SPAN - 1);
                        }
                        if (last_full + 1) * SPAN <= hi {
                            from_recs((last_full + 1) * SPAN, hi);
                        }
                        for (_, c) in u.spans.range(first_full..=last_full) {
                            c.each(kind, |k, n| {
                                if keep(&k) {
                                    *acc.entry(k).or_default() += n;
                                }
                            });
                        }
                    }
                }
                acc.into_iter().collect()
            }
        };
        let (limit, page) = (q.limit, q.page);
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

    /// Calls `f` with each key listen `r` counts under in a chart of
    /// `kind`: one per credited artist for artists, one (or none, without
    /// an album) for the others.
    fn chart_keys(&self, r: &Rec, kind: ChartKind, mut f: impl FnMut((u32, u32))) {
        let n = |i: u32| {
            self.norms
                .get(&i)
                .copied()
                .or_else(|| self.strs.get(&normalise(self.strs.str(i))))
        };
        let Some(a) = n(r.artist) else {
            return;
        };
        match kind {
            ChartKind::Artists => {
                let credited = self.credits.get(r.credits);
                if credited.is_empty() {
                    return f((a, a));
                }
                let mut done = Vec::with_capacity(credited.len());
                for c in credited.iter().filter_map(|&c| n(c)) {
                    if !done.contains(&c) {
                        done.push(c);
                        f((c, c));
                    }
                }
            }
            ChartKind::Tracks => {
                if let Some(t) = n(r.title) {
                    f((a, t));
                }
            }
            ChartKind::Albums => {
                if self.strs.str(r.album).trim().is_empty() {
                    return;
                }
                let aa = if self.strs.str(r.album_artist).trim().is_empty() {
                    Some(a)
                } else {
                    n(r.album_artist)
                };
                if let (Some(aa), Some(al)) = (aa, n(r.album)) {
                    f((aa, al));
                }
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
        u.days.range(first..).map(|(d, &n)| (d * DAY, n)).collect()
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
        // Loves of the same second by name: the same order whatever order
        // the table holds them in (it differs between a replay and a
        // checkpoint's load).
        v.sort_by(|a, b| {
            (b.timestamp, &a.artist, &a.title).cmp(&(a.timestamp, &b.artist, &b.title))
        });
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

    /// Every distinct (MusicBrainz id, artist, title, album) of a user's
    /// listens as they count now, tallied: one pass over the user's
    /// listens, one allocation per distinct track.
    pub(crate) fn track_tallies(&self, user: &str) -> Vec<TrackTally> {
        let Some(u) = self.user(user) else {
            return Vec::new();
        };
        let mut tally: IdMap<(u32, u32, u32, u32), (u32, i64)> = IdMap::default();
        for &(_, i) in &u.by_time {
            if let Some(r) = self.view(u, i) {
                let e = tally
                    .entry((r.mbid, r.artist, r.title, r.album))
                    .or_insert((0, i64::MIN));
                e.0 += 1;
                e.1 = e.1.max(r.ts);
            }
        }
        let s = |i: u32| self.strs.str(i).to_owned();
        tally
            .into_iter()
            .map(|((m, a, t, al), (count, last))| TrackTally {
                mbid: s(m),
                artist: s(a),
                title: s(t),
                album: s(al),
                count,
                last,
            })
            .collect()
    }

    pub(crate) fn summary(&self, user: &str) -> UserSummary {
        let Some(u) = self.user(user) else {
            return UserSummary::default();
        };
        UserSummary {
            playcount: u.by_time.len(),
            first_listen: u.by_time.first().map(|&(ts, _)| ts),
            artist_count: counts::Tally::len(&u.total.artists),
            album_count: counts::Tally::len(&u.total.albums),
            track_count: counts::Tally::len(&u.total.tracks),
        }
    }
}
