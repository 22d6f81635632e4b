//! The indexes written to and read from a checkpoint (its layout in
//! `docs/listens-format.md`): every structure as it is in memory, so
//! that loading is one pass over the bytes, with no normalising, hashing
//! of names or counting. A child of the index module: it reads and
//! builds the private fields directly.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::counts::{ArtistK, Counts, PairK, Tally};
use super::{CreditLists, Fix, IdMap, Index, Interner, Rec, UserIdx};
use crate::checkpoint::codec::{In, Out};
use crate::correction::{decode_correction, encode_correction, Correction};

/// The bytes of a [`Rec`].
const REC_LEN: usize = 48;

fn put_rec(o: &mut Out, r: &Rec) {
    o.i64(r.ts);
    for v in [
        r.user,
        r.artist,
        r.title,
        r.album,
        r.album_artist,
        r.mbid,
        r.client,
        r.duration,
        r.track_number,
        r.credits,
    ] {
        o.u32(v);
    }
}

fn get_rec(i: &mut In<'_>) -> Option<Rec> {
    Some(Rec {
        ts: i.i64()?,
        user: i.u32()?,
        artist: i.u32()?,
        title: i.u32()?,
        album: i.u32()?,
        album_artist: i.u32()?,
        mbid: i.u32()?,
        client: i.u32()?,
        duration: i.u32()?,
        track_number: i.u32()?,
        credits: i.u32()?,
    })
}

/// A correction as the log encodes it (its kind byte first), without its
/// user: the log's own encoding, so the two cannot drift apart.
fn put_correction(o: &mut Out, when: i64, what: &Correction) {
    let mut b = Vec::new();
    encode_correction("", when, what, &mut b);
    o.bytes(&b);
}

fn get_correction(i: &mut In<'_>) -> Option<(i64, Correction)> {
    let b = i.bytes()?;
    let (&kind, rest) = b.split_first()?;
    let mut r = crate::model::Reader::new(rest);
    let (_, when, what) = decode_correction(kind, &mut r)?;
    Some((when, what))
}

fn put_counts<A: Tally<ArtistK>, P: Tally<PairK>>(o: &mut Out, c: &Counts<A, P>) {
    o.u32(c.listens);
    o.len(c.artists.len());
    c.artists.each(|k, n| {
        o.u32(k);
        o.u32(n);
    });
    for m in [&c.albums, &c.tracks] {
        o.len(m.len());
        m.each(|(a, b), n| {
            o.u32(a);
            o.u32(b);
            o.u32(n);
        });
    }
}

fn get_counts<A: Tally<ArtistK>, P: Tally<PairK>>(i: &mut In<'_>) -> Option<Counts<A, P>> {
    let listens = i.u32()?;
    let n = i.len(8)?;
    let mut artists = Vec::with_capacity(n);
    for _ in 0..n {
        artists.push((i.u32()?, i.u32()?));
    }
    let mut pairs = || -> Option<P> {
        let n = i.len(12)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(((i.u32()?, i.u32()?), i.u32()?));
        }
        P::from_pairs(v)
    };
    let albums = pairs()?;
    let tracks = pairs()?;
    Some(Counts {
        listens,
        artists: A::from_pairs(artists)?,
        albums,
        tracks,
    })
}

fn put_user(o: &mut Out, u: &UserIdx) {
    o.len(u.by_time.len());
    for &(ts, i) in &u.by_time {
        o.i64(ts);
        o.u32(i);
    }
    o.len(u.gone.len());
    for &(ts, i) in &u.gone {
        o.i64(ts);
        o.u32(i);
    }
    put_counts(o, &u.total);
    o.len(u.spans.len());
    for (&d, c) in &u.spans {
        o.i64(d);
        put_counts(o, c);
    }
    o.len(u.days.len());
    for (&d, &n) in &u.days {
        o.i64(d);
        o.u32(n);
    }
    o.len(u.loved.len());
    for (&(a, t), &(ts, ai, ti)) in &u.loved {
        o.u32(a);
        o.u32(t);
        o.i64(ts);
        o.u32(ai);
        o.u32(ti);
    }
    o.len(u.fixes.len());
    for f in &u.fixes {
        o.u64(f.id);
        o.u8(u8::from(f.undone));
        o.u32(f.after);
        put_correction(o, f.when, &f.what);
    }
    o.len(u.edited.len());
    for (&i, r) in &u.edited {
        o.u32(i);
        put_rec(o, r);
    }
    o.len(u.rules.len());
    for r in &u.rules {
        put_correction(o, 0, r);
    }
}

fn get_user(i: &mut In<'_>) -> Option<UserIdx> {
    let n = i.len(12)?;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        times.push((i.i64()?, i.u32()?));
    }
    // Written in order: a bulk build, not n inserts.
    let by_time: BTreeSet<(i64, u32)> = times.into_iter().collect();
    let n = i.len(12)?;
    let mut gone = Vec::with_capacity(n);
    for _ in 0..n {
        gone.push((i.i64()?, i.u32()?));
    }
    let gone: BTreeSet<(i64, u32)> = gone.into_iter().collect();
    let total = get_counts(i)?;
    let n = i.len(12)?;
    let mut spans = BTreeMap::new();
    for _ in 0..n {
        let d = i.i64()?;
        spans.insert(d, get_counts(i)?);
    }
    let n = i.len(12)?;
    let mut days = Vec::with_capacity(n);
    for _ in 0..n {
        days.push((i.i64()?, i.u32()?));
    }
    let days: BTreeMap<i64, u32> = days.into_iter().collect();
    let n = i.len(24)?;
    let mut loved = IdMap::with_capacity_and_hasher(n, Default::default());
    for _ in 0..n {
        let k = (i.u32()?, i.u32()?);
        loved.insert(k, (i.i64()?, i.u32()?, i.u32()?));
    }
    let n = i.len(21)?;
    let mut fixes = Vec::with_capacity(n);
    for _ in 0..n {
        let id = i.u64()?;
        let undone = match i.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let after = i.u32()?;
        let (when, what) = get_correction(i)?;
        fixes.push(Fix {
            id,
            when,
            what,
            undone,
            after,
        });
    }
    let n = i.len(4 + REC_LEN)?;
    let mut edited = IdMap::with_capacity_and_hasher(n, Default::default());
    for _ in 0..n {
        edited.insert(i.u32()?, get_rec(i)?);
    }
    let n = i.len(9)?;
    let mut rules = Vec::with_capacity(n);
    for _ in 0..n {
        rules.push(get_correction(i)?.1);
    }
    Some(UserIdx {
        by_time,
        gone,
        total,
        spans,
        days,
        loved,
        fixes,
        edited,
        rules,
    })
}

impl Index {
    /// Appends the whole index to `o`.
    pub(crate) fn save(&self, o: &mut Out) {
        o.len(self.strs.strs.len());
        for s in &self.strs.strs {
            o.str(s);
        }
        o.len(self.credits.lists.len());
        for l in &self.credits.lists {
            o.len(l.len());
            for &id in l.iter() {
                o.u32(id);
            }
        }
        for map in [&self.display, &self.norms] {
            o.len(map.len());
            for (&k, &v) in map {
                o.u32(k);
                o.u32(v);
            }
        }
        o.len(self.recs.len());
        for r in &self.recs {
            put_rec(o, r);
        }
        o.len(self.users.len());
        for (&id, u) in &self.users {
            o.u32(id);
            put_user(o, u);
        }
    }

    /// Reads what [`Index::save`] wrote; `None` if the bytes are not such
    /// an index.
    pub(crate) fn load(i: &mut In<'_>) -> Option<Index> {
        let n = i.len(8)?;
        let mut strs = Interner {
            ids: std::collections::HashMap::with_capacity(n),
            strs: Vec::with_capacity(n),
        };
        for _ in 0..n {
            let s: Arc<str> = i.str()?.into();
            let id = strs.strs.len() as u32;
            // Each string once: a repeat would give two ids one name.
            if strs.ids.insert(s.clone(), id).is_some() {
                return None;
            }
            strs.strs.push(s);
        }
        let n = i.len(8)?;
        let mut credits = CreditLists::default();
        for _ in 0..n {
            let k = i.len(4)?;
            let mut l = Vec::with_capacity(k);
            for _ in 0..k {
                l.push(i.u32()?);
            }
            let l: Box<[u32]> = l.into();
            let id = credits.lists.len() as u32;
            credits.ids.insert(l.clone(), id);
            credits.lists.push(l);
        }
        let mut pairs = || -> Option<IdMap<u32, u32>> {
            let n = i.len(8)?;
            let mut map = IdMap::with_capacity_and_hasher(n, Default::default());
            for _ in 0..n {
                map.insert(i.u32()?, i.u32()?);
            }
            Some(map)
        };
        let display = pairs()?;
        let norms = pairs()?;
        let n = i.len(REC_LEN)?;
        let mut recs = Vec::with_capacity(n);
        for _ in 0..n {
            recs.push(get_rec(i)?);
        }
        let n = i.len(4)?;
        let mut users = IdMap::with_capacity_and_hasher(n, Default::default());
        for _ in 0..n {
            let id = i.u32()?;
            users.insert(id, get_user(i)?);
        }
        Some(Index {
            strs,
            credits,
            recs,
            users,
            display,
            norms,
            memo: [None; 7],
        })
    }
}
