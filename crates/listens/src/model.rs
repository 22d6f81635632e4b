//! What the log holds: listens, love events and corrections, and their
//! byte encoding (corrections' fields in [`crate::correction`]).

use crate::correction::{decode_correction, encode_correction, encode_undo, Correction, K_UNDO};

/// One play of a track by a user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listen {
    pub user: String,
    /// When the track started playing, UNIX seconds (UTC).
    pub timestamp: i64,
    /// The artist as shown: the credit as the source wrote it ("Daft
    /// Punk feat. Pharrell Williams", or a Maloja export's names joined
    /// with `, `). With [`Listen::title`] it is the listen's identity for
    /// dedupe and for the track and album charts.
    pub artist: String,
    /// The credited artists, when the source named several: the artist
    /// chart counts the listen once for each of them. Empty (or a single
    /// name, which is stored as none) means the listen is credited to
    /// [`Listen::artist`] alone.
    pub artists: Vec<String>,
    pub title: String,
    /// Empty when unknown.
    pub album: String,
    /// Empty when unknown.
    pub album_artist: String,
    /// The recording's MusicBrainz id; empty when unknown.
    pub mbid: String,
    /// Seconds.
    pub duration: Option<u32>,
    pub track_number: Option<u32>,
    /// Who sent it: `lastfm`, `listenbrainz`, `as12`, `import`, or a
    /// client name.
    pub client: String,
}

impl Listen {
    /// A listen with the required fields; the others empty.
    pub fn new(user: &str, timestamp: i64, artist: &str, title: &str) -> Self {
        Listen {
            user: user.into(),
            timestamp,
            artist: artist.into(),
            title: title.into(),
            ..Listen::default()
        }
    }

    /// The artists the listen is credited to: [`Listen::artists`] when it
    /// holds two or more, else [`Listen::artist`] alone.
    pub fn credited(&self) -> Vec<&str> {
        if self.artists.len() >= 2 {
            self.artists.iter().map(String::as_str).collect()
        } else {
            vec![self.artist.as_str()]
        }
    }

    /// Sets the credited artists from a source's list: names trimmed,
    /// empty ones and repeats (compared normalised) left out; fewer than
    /// two names left is no list (the listen is credited to
    /// [`Listen::artist`]).
    pub fn credit<S: AsRef<str>>(&mut self, names: impl IntoIterator<Item = S>) {
        let mut seen = std::collections::HashSet::new();
        let list: Vec<String> = names
            .into_iter()
            .filter_map(|n| {
                let n = n.as_ref().trim();
                (!n.is_empty() && seen.insert(crate::normalise(n))).then(|| n.to_owned())
            })
            .collect();
        self.artists = if list.len() >= 2 { list } else { Vec::new() };
    }
}

/// A record of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Listen(Listen),
    /// `loved` false is an unlove.
    Love {
        user: String,
        artist: String,
        title: String,
        timestamp: i64,
        loved: bool,
    },
    /// A correction of `user`'s history (kinds 4 to 6).
    Correct {
        user: String,
        when: i64,
        what: Correction,
    },
    /// The correction whose id (log offset) is `id` no longer applies.
    Undo {
        user: String,
        when: i64,
        id: u64,
    },
}

const K_LISTEN: u8 = 1;
const K_LOVE: u8 = 2;
const K_UNLOVE: u8 = 3;
/// A listen with its credited artists (version 3): kind 1's fields, then
/// a u32 count (at least 2) and that many strings.
pub(crate) const K_LISTEN_CREDITED: u8 = 8;
const NONE_U32: u32 = u32::MAX;

/// A listen's credited artists, borrowed: from a [`Listen`], or from a
/// kind 8 record's bytes (`n` strings back to back, checked when the
/// record was decoded). Fewer than two is no list.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Credits<'a> {
    Names(&'a [String]),
    Encoded { n: u32, bytes: &'a [u8] },
}

impl<'a> Credits<'a> {
    pub(crate) const NONE: Credits<'static> = Credits::Names(&[]);

    /// How many names the list holds (0 or 1: no list).
    pub(crate) fn len(&self) -> usize {
        match self {
            Credits::Names(v) => v.len(),
            Credits::Encoded { n, .. } => *n as usize,
        }
    }

    /// Whether the listen has a list of credited artists (two or more).
    pub(crate) fn is_list(&self) -> bool {
        self.len() >= 2
    }

    /// The names, in order.
    pub(crate) fn iter(self) -> impl Iterator<Item = &'a str> {
        let (names, encoded) = match self {
            Credits::Names(v) => (v, None),
            Credits::Encoded { n, bytes } => (&[][..], Some((n, Reader::new(bytes)))),
        };
        let from_bytes = encoded
            .into_iter()
            .flat_map(|(n, mut r)| (0..n).map_while(move |_| r.str()));
        names.iter().map(String::as_str).chain(from_bytes)
    }
}

/// A listen whose strings borrow from elsewhere: from a [`Listen`] when
/// storing it, from the log's bytes when replaying it (no copies).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListenRef<'a> {
    pub user: &'a str,
    pub timestamp: i64,
    pub artist: &'a str,
    /// The credited artists ([`Listen::artists`]).
    pub artists: Credits<'a>,
    pub title: &'a str,
    pub album: &'a str,
    pub album_artist: &'a str,
    pub mbid: &'a str,
    pub client: &'a str,
    /// `u32::MAX` when unknown, as in the log.
    pub duration: u32,
    pub track_number: u32,
}

impl Listen {
    pub(crate) fn as_ref(&self) -> ListenRef<'_> {
        ListenRef {
            user: &self.user,
            timestamp: self.timestamp,
            artist: &self.artist,
            artists: Credits::Names(&self.artists),
            title: &self.title,
            album: &self.album,
            album_artist: &self.album_artist,
            mbid: &self.mbid,
            client: &self.client,
            duration: self.duration.unwrap_or(NONE_U32),
            track_number: self.track_number.unwrap_or(NONE_U32),
        }
    }
}

impl ListenRef<'_> {
    pub(crate) fn to_owned(self) -> Listen {
        let opt = |v: u32| (v != NONE_U32).then_some(v);
        Listen {
            user: self.user.into(),
            timestamp: self.timestamp,
            artist: self.artist.into(),
            artists: if self.artists.is_list() {
                self.artists.iter().map(str::to_owned).collect()
            } else {
                Vec::new()
            },
            title: self.title.into(),
            album: self.album.into(),
            album_artist: self.album_artist.into(),
            mbid: self.mbid.into(),
            duration: opt(self.duration),
            track_number: opt(self.track_number),
            client: self.client.into(),
        }
    }
}

/// A record of the log as replay reads it, strings borrowed from the file
/// (corrections, which are rare, are read into owned values).
#[derive(Debug, Clone)]
pub(crate) enum EventRef<'a> {
    Listen(ListenRef<'a>),
    Love {
        user: &'a str,
        artist: &'a str,
        title: &'a str,
        timestamp: i64,
        loved: bool,
    },
    Correct {
        user: String,
        when: i64,
        what: Correction,
    },
    Undo {
        user: String,
        when: i64,
        id: u64,
    },
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Appends one framed record (length, CRC-32, payload) whose payload
/// `body` writes, in place: no buffer per record.
fn framed(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let head = out.len();
    out.extend_from_slice(&[0; 8]);
    body(out);
    let payload = &out[head + 8..];
    let len = (payload.len() as u32).to_le_bytes();
    let crc = crc32fast::hash(payload).to_le_bytes();
    out[head..head + 4].copy_from_slice(&len);
    out[head + 4..head + 8].copy_from_slice(&crc);
}

/// Appends a listen as one framed record: kind 1, or kind 8 when it has
/// a list of credited artists.
pub(crate) fn encode_listen(l: &ListenRef<'_>, out: &mut Vec<u8>) {
    framed(out, |out| {
        out.push(if l.artists.is_list() {
            K_LISTEN_CREDITED
        } else {
            K_LISTEN
        });
        out.extend_from_slice(&l.timestamp.to_le_bytes());
        out.extend_from_slice(&l.duration.to_le_bytes());
        out.extend_from_slice(&l.track_number.to_le_bytes());
        for s in [
            l.user,
            l.artist,
            l.title,
            l.album,
            l.album_artist,
            l.mbid,
            l.client,
        ] {
            put_str(out, s);
        }
        if l.artists.is_list() {
            out.extend_from_slice(&(l.artists.len() as u32).to_le_bytes());
            for a in l.artists.iter() {
                put_str(out, a);
            }
        }
    });
}

/// Appends a love or unlove as one framed record.
pub(crate) fn encode_love(
    user: &str,
    artist: &str,
    title: &str,
    timestamp: i64,
    loved: bool,
    out: &mut Vec<u8>,
) {
    framed(out, |out| {
        out.push(if loved { K_LOVE } else { K_UNLOVE });
        out.extend_from_slice(&timestamp.to_le_bytes());
        for s in [user, artist, title] {
            put_str(out, s);
        }
    });
}

impl Event {
    /// Appends the event as one framed record.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Event::Listen(l) => encode_listen(&l.as_ref(), out),
            Event::Love {
                user,
                artist,
                title,
                timestamp,
                loved,
            } => encode_love(user, artist, title, *timestamp, *loved, out),
            Event::Correct { user, when, what } => {
                framed(out, |out| encode_correction(user, *when, what, out))
            }
            Event::Undo { user, when, id } => framed(out, |out| encode_undo(user, *when, *id, out)),
        }
    }
}

/// Appends a correction as one framed record.
pub(crate) fn encode_fix(user: &str, when: i64, what: &Correction, out: &mut Vec<u8>) {
    framed(out, |out| encode_correction(user, when, what, out));
}

/// Appends an undo as one framed record.
pub(crate) fn encode_unfix(user: &str, when: i64, id: u64, out: &mut Vec<u8>) {
    framed(out, |out| encode_undo(user, when, id, out));
}

impl<'a> EventRef<'a> {
    /// Decodes a payload whose CRC already matched; `None` if it is not a
    /// record this version knows.
    pub(crate) fn decode(b: &'a [u8]) -> Option<EventRef<'a>> {
        let mut r = Reader::new(b);
        let kind = r.u8()?;
        let ev = match kind {
            K_LISTEN | K_LISTEN_CREDITED => {
                let timestamp = r.i64()?;
                let duration = r.u32()?;
                let track_number = r.u32()?;
                let mut l = ListenRef {
                    timestamp,
                    duration,
                    track_number,
                    user: r.str()?,
                    artist: r.str()?,
                    artists: Credits::NONE,
                    title: r.str()?,
                    album: r.str()?,
                    album_artist: r.str()?,
                    mbid: r.str()?,
                    client: r.str()?,
                };
                if kind == K_LISTEN_CREDITED {
                    let n = r.u32()?;
                    // Canonical: a list of fewer than two is written as
                    // kind 1.
                    if n < 2 {
                        return None;
                    }
                    let start = r.at;
                    for _ in 0..n {
                        r.str()?;
                    }
                    l.artists = Credits::Encoded {
                        n,
                        bytes: b.get(start..r.at)?,
                    };
                }
                EventRef::Listen(l)
            }
            K_LOVE | K_UNLOVE => {
                let timestamp = r.i64()?;
                EventRef::Love {
                    timestamp,
                    user: r.str()?,
                    artist: r.str()?,
                    title: r.str()?,
                    loved: kind == K_LOVE,
                }
            }
            K_UNDO => {
                let when = r.i64()?;
                let id = r.u64()?;
                EventRef::Undo {
                    when,
                    id,
                    user: r.str()?.to_owned(),
                }
            }
            _ => {
                let (user, when, what) = decode_correction(kind, &mut r)?;
                EventRef::Correct { user, when, what }
            }
        };
        (r.at == b.len()).then_some(ev)
    }

    /// The oldest log version that holds this record (see
    /// [`crate::log::VERSION`]).
    pub(crate) fn version(&self) -> u32 {
        match self {
            EventRef::Listen(l) if l.artists.is_list() => crate::log::VERSION_CREDITS,
            EventRef::Listen(_) | EventRef::Love { .. } => crate::log::VERSION_1,
            EventRef::Correct { .. } | EventRef::Undo { .. } => crate::log::VERSION_CORRECTIONS,
        }
    }

    pub(crate) fn into_owned(self) -> Event {
        match self {
            EventRef::Listen(l) => Event::Listen(l.to_owned()),
            EventRef::Love {
                user,
                artist,
                title,
                timestamp,
                loved,
            } => Event::Love {
                user: user.into(),
                artist: artist.into(),
                title: title.into(),
                timestamp,
                loved,
            },
            EventRef::Correct { user, when, what } => Event::Correct { user, when, what },
            EventRef::Undo { user, when, id } => Event::Undo { user, when, id },
        }
    }
}

pub(crate) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(crate) fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip() {
        let mut l = Listen::new("u", -5, "A", "T");
        l.duration = Some(200);
        l.album = "Al".into();
        let evs = [
            Event::Listen(l),
            Event::Listen(Listen::new("", 0, "", "")),
            Event::Love {
                user: "u".into(),
                artist: "a".into(),
                title: "t".into(),
                timestamp: 9,
                loved: false,
            },
        ];
        for ev in evs {
            let mut b = Vec::new();
            ev.encode(&mut b);
            // The frame: payload length and its CRC, then the payload.
            let payload = &b[8..];
            assert_eq!(b[..4], (payload.len() as u32).to_le_bytes());
            assert_eq!(b[4..8], crc32fast::hash(payload).to_le_bytes());
            assert_eq!(
                EventRef::decode(payload).map(EventRef::into_owned),
                Some(ev.clone())
            );
            assert!(EventRef::decode(&payload[..payload.len() - 1]).is_none());
        }
    }

    fn payload(l: &Listen) -> Vec<u8> {
        let mut b = Vec::new();
        encode_listen(&l.as_ref(), &mut b);
        b[8..].to_vec()
    }

    #[test]
    fn a_listen_with_credited_artists_is_kind_8_and_round_trips() {
        let mut l = Listen::new("u", 7, "Daft Punk, Pharrell Williams", "Get Lucky");
        l.album = "RAM".into();
        l.artists = vec!["Daft Punk".into(), "Pharrell Williams".into()];
        let p = payload(&l);
        assert_eq!(p[0], K_LISTEN_CREDITED);
        // Kind 1's fields, then the count and the names.
        let mut plain = l.clone();
        plain.artists.clear();
        let kind1 = payload(&plain);
        assert_eq!(p[1..kind1.len()], kind1[1..]);
        let mut tail = 2u32.to_le_bytes().to_vec();
        for a in ["Daft Punk", "Pharrell Williams"] {
            put_str(&mut tail, a);
        }
        assert_eq!(p[kind1.len()..], tail[..]);
        let back = EventRef::decode(&p).map(EventRef::into_owned);
        assert_eq!(back, Some(Event::Listen(l)));
        for cut in 1..p.len() {
            assert!(EventRef::decode(&p[..cut]).is_none(), "cut at {cut}");
        }
    }

    #[test]
    fn a_listen_without_a_list_or_with_one_name_stays_kind_1_byte_for_byte() {
        let plain = Listen::new("u", 7, "Björk", "Jóga");
        let mut one = plain.clone();
        one.artists = vec!["Björk".into()];
        // The bytes kind 1 always had: kind, i64, two u32 unknowns, seven
        // strings.
        let mut want = vec![K_LISTEN];
        want.extend_from_slice(&7i64.to_le_bytes());
        want.extend_from_slice(&[0xFF; 8]);
        for s in ["u", "Björk", "Jóga", "", "", "", ""] {
            put_str(&mut want, s);
        }
        assert_eq!(payload(&plain), want);
        assert_eq!(payload(&one), want);
        assert_eq!(
            EventRef::decode(&want).map(EventRef::into_owned),
            Some(Event::Listen(plain))
        );
    }

    #[test]
    fn a_kind_8_record_with_fewer_than_two_names_does_not_decode() {
        let mut l = Listen::new("u", 7, "A", "T");
        l.artists = vec!["A".into(), "B".into()];
        let p = payload(&l);
        let count_at = p.len() - (4 + 4 + 1 + 4 + 1);
        for (n, names) in [(0u32, &[][..]), (1, &["A"][..])] {
            let mut q = p[..count_at].to_vec();
            q.extend_from_slice(&n.to_le_bytes());
            for a in names {
                put_str(&mut q, a);
            }
            assert!(EventRef::decode(&q).is_none(), "{n} names");
        }
        // More names than the count, or fewer: not a record either.
        let mut q = p.clone();
        put_str(&mut q, "C");
        assert!(EventRef::decode(&q).is_none());
    }

    #[test]
    fn credit_keeps_distinct_names_and_drops_a_list_of_one() {
        let mut l = Listen::new("u", 1, "A & B", "T");
        l.credit([" A ", "", "a", "B"]);
        assert_eq!(l.artists, ["A", "B"]);
        assert_eq!(l.credited(), ["A", "B"]);
        l.credit(["A", " a"]);
        assert!(l.artists.is_empty());
        assert_eq!(l.credited(), ["A & B"]);
    }
}
