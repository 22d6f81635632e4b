//! Corrections applied to the indexes: a listen edited or deleted, every
//! listen of a track edited, an artist merged into another; and undo,
//! which rebuilds the user's indexes from their listens and the
//! corrections still in force. A child of the index module: it moves
//! listens between the counters directly.
//!
//! How a user's history is corrected, the same on replay, live, and in a
//! rebuild: corrections apply in order to the listens as they are at the
//! time; a track edit and a merge also stay as rules, applied in order to
//! each listen recorded later.

use super::{Index, Rec, UserIdx, DAY, NO_CREDITS, SPAN};
use crate::correction::{Changes, Corrected, Correction, CorrectionInfo, Target};
use crate::error::CorrectionError;
use crate::normalise::normalise;

/// A correction as the index keeps it.
pub(crate) struct Fix {
    pub(super) id: u64,
    pub(super) when: i64,
    pub(super) what: Correction,
    pub(super) undone: bool,
    /// How many listens (of every user) the index held when it applied:
    /// a rebuild applies it after those.
    pub(super) after: u32,
}

/// Whether a listen matches a correction's names (normalised).
struct Names {
    artist: String,
    title: String,
}

impl Names {
    fn new(artist: &str, title: &str) -> Names {
        Names {
            artist: normalise(artist),
            title: normalise(title),
        }
    }
}

impl Index {
    fn norm_of(&self, id: u32) -> String {
        normalise(self.strs.str(id))
    }

    fn matches(&self, r: &Rec, n: &Names) -> bool {
        self.norm_of(r.artist) == n.artist && self.norm_of(r.title) == n.title
    }

    /// The listen of `u` at `ts` with these names, as it counts now.
    fn find(&self, u: &UserIdx, ts: i64, n: &Names) -> Option<u32> {
        u.by_time
            .range((ts, 0)..=(ts, u32::MAX))
            .map(|&(_, i)| i)
            .find(|&i| self.view(u, i).is_some_and(|r| self.matches(r, n)))
    }

    /// `r` with `changes` made. A new artist replaces the credit too: the
    /// listen is credited to it alone.
    fn changed(&mut self, r: &Rec, changes: &Changes) -> Rec {
        let mut out = *r;
        if let Some(a) = &changes.artist {
            out.artist = self.strs.id(a.trim());
            out.credits = NO_CREDITS;
        }
        if let Some(t) = &changes.title {
            out.title = self.strs.id(t.trim());
        }
        if let Some(al) = &changes.album {
            out.album = self.strs.id(al.trim());
        }
        out
    }

    /// `r` with artist `from` (normalised) counted as `to`: as its
    /// artist, album artist, and each credited artist.
    fn merged(&mut self, r: &Rec, from: &str, to: &str) -> Rec {
        let mut out = *r;
        let to = self.strs.id(to.trim());
        if self.norm_of(r.artist) == from {
            out.artist = to;
        }
        if self.norm_of(r.album_artist) == from {
            out.album_artist = to;
        }
        let credited = self.credits.get(r.credits);
        if credited.iter().any(|&c| self.norm_of(c) == from) {
            let list: Vec<u32> = credited
                .iter()
                .map(|&c| if self.norm_of(c) == from { to } else { c })
                .collect();
            out.credits = self.credits.id(&list);
        }
        out
    }

    /// Whether `r` names artist `from` (normalised): as its artist, album
    /// artist or a credited artist.
    fn names_artist(&self, r: &Rec, from: &str) -> bool {
        self.norm_of(r.artist) == from
            || self.norm_of(r.album_artist) == from
            || self
                .credits
                .get(r.credits)
                .iter()
                .any(|&c| self.norm_of(c) == from)
    }

    /// The artist chart's keys of `r`: each credited artist once, or its
    /// artist `a` (already normalised and registered).
    fn credited_ids(&mut self, r: &Rec, a: u32) -> Vec<u32> {
        let mut ids = Vec::new();
        let names: Vec<u32> = self.credits.get(r.credits).to_vec();
        for c in names {
            let raw = self.strs.str(c).to_owned();
            let id = self.norm_id(&normalise(&raw), &raw);
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        if ids.is_empty() {
            ids.push(a);
        }
        ids
    }

    /// Adds (`sign` 1) or takes away (−1) listen `i`, counted as `r`.
    fn count(&mut self, u: &mut UserIdx, i: u32, r: &Rec, sign: i32) {
        let a = self.norm_id(
            &self.norm_of(r.artist),
            self.strs.str(r.artist).to_owned().as_str(),
        );
        let t = self.norm_id(
            &self.norm_of(r.title),
            self.strs.str(r.title).to_owned().as_str(),
        );
        let album = if self.strs.str(r.album).trim().is_empty() {
            None
        } else {
            let al = if self.strs.str(r.album_artist).trim().is_empty() {
                a
            } else {
                let raw = self.strs.str(r.album_artist).to_owned();
                self.norm_id(&normalise(&raw), &raw)
            };
            let raw = self.strs.str(r.album).to_owned();
            Some((al, self.norm_id(&normalise(&raw), &raw)))
        };
        let artists = self.credited_ids(r, a);
        let (span, day) = (r.ts.div_euclid(SPAN), r.ts.div_euclid(DAY));
        if sign > 0 {
            u.by_time.insert((r.ts, i));
            u.total.add(&artists, album, (a, t));
            u.spans
                .entry(span)
                .or_default()
                .add(&artists, album, (a, t));
            *u.days.entry(day).or_default() += 1;
        } else {
            u.by_time.remove(&(r.ts, i));
            u.total.sub(&artists, album, (a, t));
            if let Some(c) = u.spans.get_mut(&span) {
                c.sub(&artists, album, (a, t));
                if c.listens == 0 {
                    u.spans.remove(&span);
                }
            }
            if let Some(n) = u.days.get_mut(&day) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    u.days.remove(&day);
                }
            }
        }
    }

    /// Listen `i` of `u` counts as `new` from now on instead of as it did.
    fn replace(&mut self, u: &mut UserIdx, i: u32, new: Rec, delta: &mut Option<&mut Corrected>) {
        let Some(old) = self.view(u, i).copied() else {
            return;
        };
        if old == new {
            return;
        }
        self.count(u, i, &old, -1);
        if self.recs.get(i as usize) == Some(&new) {
            u.edited.remove(&i);
        } else {
            u.edited.insert(i, new);
        }
        self.count(u, i, &new, 1);
        if let Some(d) = delta {
            d.removed.push(self.listen(&old));
            d.added.push(self.listen(&new));
        }
    }

    /// A listen about to be counted for `u`, with the rules of `u`'s
    /// track edits and merges made.
    pub(super) fn ruled(&mut self, u: &UserIdx, r: Rec) -> Rec {
        let mut r = r;
        for rule in &u.rules {
            match rule {
                Correction::Edit {
                    target: Target::Track { artist, title },
                    changes,
                } if self.matches(&r, &Names::new(artist, title)) => {
                    r = self.changed(&r, changes);
                }
                Correction::MergeArtist { from, to } => r = self.merged(&r, &normalise(from), to),
                _ => {}
            }
        }
        r
    }

    /// Counts listen `i` (in `recs`) for `u`, after `u`'s rules: a listen
    /// recorded after them, or one a rebuild replays.
    pub(super) fn add_ruled(&mut self, u: &mut UserIdx, i: u32) {
        let Some(raw) = self.recs.get(i as usize).copied() else {
            return;
        };
        let r = self.ruled(u, raw);
        if r != raw {
            u.edited.insert(i, r);
        }
        self.count(u, i, &r, 1);
    }

    /// Applies `what` to `u`.
    fn apply(&mut self, u: &mut UserIdx, what: &Correction, mut delta: Option<&mut Corrected>) {
        match what {
            Correction::Delete {
                timestamp,
                artist,
                title,
            } => {
                if let Some(i) = self.find(u, *timestamp, &Names::new(artist, title)) {
                    if let Some(old) = self.view(u, i).copied() {
                        self.count(u, i, &old, -1);
                        u.gone.insert((old.ts, i));
                        u.edited.remove(&i);
                        if let Some(d) = delta {
                            d.removed.push(self.listen(&old));
                        }
                    }
                }
            }
            Correction::Edit {
                target:
                    Target::Listen {
                        timestamp,
                        artist,
                        title,
                    },
                changes,
            } => {
                if let Some(i) = self.find(u, *timestamp, &Names::new(artist, title)) {
                    if let Some(old) = self.view(u, i).copied() {
                        let new = self.changed(&old, changes);
                        self.replace(u, i, new, &mut delta);
                    }
                }
            }
            Correction::Edit {
                target: Target::Track { artist, title },
                changes,
            } => {
                let n = Names::new(artist, title);
                for i in self.listens_of(u) {
                    if let Some(old) = self.view(u, i).copied() {
                        if self.matches(&old, &n) {
                            let new = self.changed(&old, changes);
                            self.replace(u, i, new, &mut delta);
                        }
                    }
                }
                u.rules.push(what.clone());
            }
            Correction::MergeArtist { from, to } => {
                let from = normalise(from);
                for i in self.listens_of(u) {
                    if let Some(old) = self.view(u, i).copied() {
                        let new = self.merged(&old, &from, to);
                        self.replace(u, i, new, &mut delta);
                    }
                }
                u.rules.push(what.clone());
            }
        }
    }

    fn listens_of(&self, u: &UserIdx) -> Vec<u32> {
        u.by_time.iter().map(|&(_, i)| i).collect()
    }

    /// Whether `what` would change something of `user`'s history; the
    /// reason it would not, otherwise (nothing is written then).
    pub(crate) fn check(&self, user: &str, what: &Correction) -> Result<(), CorrectionError> {
        let invalid = |reason: &'static str| Err(CorrectionError::Invalid { reason });
        let u = self.user(user);
        let listen_there = |timestamp: i64, artist: &str, title: &str| {
            if u.is_some_and(|u| {
                self.find(u, timestamp, &Names::new(artist, title))
                    .is_some()
            }) {
                return Ok(());
            }
            Err(CorrectionError::NoSuchListen {
                user: user.into(),
                timestamp,
                artist: artist.into(),
                title: title.into(),
            })
        };
        let any = |f: &dyn Fn(&Rec) -> bool| {
            u.is_some_and(|u| {
                u.by_time
                    .iter()
                    .any(|&(_, i)| self.view(u, i).is_some_and(f))
            })
        };
        match what {
            Correction::Edit { target, changes } => {
                if changes.artist.is_none() && changes.title.is_none() && changes.album.is_none() {
                    return invalid("the edit changes nothing: give a new artist, title or album");
                }
                if changes
                    .artist
                    .as_deref()
                    .is_some_and(|a| a.trim().is_empty())
                    || changes
                        .title
                        .as_deref()
                        .is_some_and(|t| t.trim().is_empty())
                {
                    return invalid("a listen's artist and title cannot be empty");
                }
                match target {
                    Target::Listen {
                        timestamp,
                        artist,
                        title,
                    } => listen_there(*timestamp, artist, title)?,
                    Target::Track { artist, title } => {
                        let n = Names::new(artist, title);
                        if !any(&|r| self.matches(r, &n)) {
                            return Err(CorrectionError::NoSuchTrack {
                                user: user.into(),
                                artist: artist.clone(),
                                title: title.clone(),
                            });
                        }
                    }
                }
            }
            Correction::Delete {
                timestamp,
                artist,
                title,
            } => listen_there(*timestamp, artist, title)?,
            Correction::MergeArtist { from, to } => {
                let (nf, nt) = (normalise(from), normalise(to));
                if nt.is_empty() {
                    return invalid("the artist to merge into cannot be empty");
                }
                if nf == nt {
                    return invalid("an artist cannot be merged into itself");
                }
                if !any(&|r| self.names_artist(r, &nf)) {
                    return Err(CorrectionError::NoSuchArtist {
                        user: user.into(),
                        artist: from.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Applies a correction of `user` with id `id` (its log offset),
    /// written at `when`; with `delta`, notes the listens it changed.
    pub(crate) fn correct(
        &mut self,
        user: &str,
        id: u64,
        when: i64,
        what: Correction,
        delta: Option<&mut Corrected>,
    ) {
        let uid = self.strs.id(user);
        let mut u = self.users.remove(&uid).unwrap_or_default();
        self.apply(&mut u, &what, delta);
        u.fixes.push(Fix {
            id,
            when,
            what,
            undone: false,
            after: self.recs.len() as u32,
        });
        self.users.insert(uid, u);
    }

    /// Whether `user` has a correction `id` in force.
    pub(crate) fn check_undo(&self, user: &str, id: u64) -> Result<(), CorrectionError> {
        match self
            .user(user)
            .and_then(|u| u.fixes.iter().find(|f| f.id == id))
        {
            None => Err(CorrectionError::NoSuchCorrection {
                user: user.into(),
                id,
            }),
            Some(f) if f.undone => Err(CorrectionError::AlreadyUndone { id }),
            Some(_) => Ok(()),
        }
    }

    /// Takes correction `id` of `user` back: marks it undone and, unless
    /// `defer` (replay, which rebuilds once at the end), rebuilds the
    /// user's indexes, noting in `delta` what changed. Returns whether
    /// there was such a correction in force.
    pub(crate) fn undo(
        &mut self,
        user: &str,
        id: u64,
        defer: bool,
        delta: Option<&mut Corrected>,
    ) -> bool {
        let Some(uid) = self.strs.get(user) else {
            return false;
        };
        let Some(u) = self.users.get_mut(&uid) else {
            return false;
        };
        let Some(f) = u.fixes.iter_mut().find(|f| f.id == id && !f.undone) else {
            return false;
        };
        f.undone = true;
        if !defer {
            self.rebuild(user, delta);
        }
        true
    }

    /// Rebuilds `user`'s listens and counters from their listens and the
    /// corrections in force, replayed in the order they came; with
    /// `delta`, notes each listen that counts differently now.
    pub(crate) fn rebuild(&mut self, user: &str, delta: Option<&mut Corrected>) {
        let Some(uid) = self.strs.get(user) else {
            return;
        };
        let Some(mut old) = self.users.remove(&uid) else {
            return;
        };
        let mut u = UserIdx {
            loved: std::mem::take(&mut old.loved),
            ..UserIdx::default()
        };
        let fixes = std::mem::take(&mut old.fixes);
        let mut next = 0;
        let apply_upto = |ix: &mut Index, u: &mut UserIdx, next: &mut usize, upto: u32| {
            while let Some(f) = fixes.get(*next).filter(|f| f.after <= upto) {
                if !f.undone {
                    ix.apply(u, &f.what, None);
                }
                *next += 1;
            }
        };
        for i in 0..self.recs.len() as u32 {
            apply_upto(self, &mut u, &mut next, i);
            if self.recs[i as usize].user == uid {
                self.add_ruled(&mut u, i);
            }
        }
        apply_upto(self, &mut u, &mut next, u32::MAX);
        u.fixes = fixes;
        for (i, r) in self.recs.iter().enumerate() {
            if r.user == uid && !u.by_time.contains(&(r.ts, i as u32)) {
                u.gone.insert((r.ts, i as u32));
            }
        }
        if let Some(d) = delta {
            for i in 0..self.recs.len() as u32 {
                let r = &self.recs[i as usize];
                if r.user != uid {
                    continue;
                }
                let was = old
                    .by_time
                    .contains(&(r.ts, i))
                    .then(|| old.edited.get(&i).unwrap_or(r))
                    .copied();
                let now = u
                    .by_time
                    .contains(&(r.ts, i))
                    .then(|| u.edited.get(&i).unwrap_or(r))
                    .copied();
                if was != now {
                    if let Some(w) = was {
                        d.removed.push(self.listen(&w));
                    }
                    if let Some(n) = now {
                        d.added.push(self.listen(&n));
                    }
                }
            }
        }
        self.users.insert(uid, u);
    }

    /// `user`'s corrections, oldest first.
    pub(crate) fn corrections(&self, user: &str) -> Vec<CorrectionInfo> {
        self.user(user).map_or_else(Vec::new, |u| {
            u.fixes
                .iter()
                .map(|f| CorrectionInfo {
                    id: f.id,
                    when: f.when,
                    what: f.what.clone(),
                    undone: f.undone,
                })
                .collect()
        })
    }
}
