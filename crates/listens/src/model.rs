//! What the log holds: listens, love events and corrections, and their
//! byte encoding (corrections' fields in [`crate::correction`]).

use crate::correction::{decode_correction, encode_correction, encode_undo, Correction, K_UNDO};

/// One play of a track by a user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listen {
    pub user: String,
    /// When the track started playing, UNIX seconds (UTC).
    pub timestamp: i64,
    pub artist: String,
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
const NONE_U32: u32 = u32::MAX;

/// A listen whose strings borrow from elsewhere: from a [`Listen`] when
/// storing it, from the log's bytes when replaying it (no copies).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListenRef<'a> {
    pub user: &'a str,
    pub timestamp: i64,
    pub artist: &'a str,
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

/// Appends a listen as one framed record.
pub(crate) fn encode_listen(l: &ListenRef<'_>, out: &mut Vec<u8>) {
    framed(out, |out| {
        out.push(K_LISTEN);
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
            K_LISTEN => {
                let timestamp = r.i64()?;
                let duration = r.u32()?;
                let track_number = r.u32()?;
                EventRef::Listen(ListenRef {
                    timestamp,
                    duration,
                    track_number,
                    user: r.str()?,
                    artist: r.str()?,
                    title: r.str()?,
                    album: r.str()?,
                    album_artist: r.str()?,
                    mbid: r.str()?,
                    client: r.str()?,
                })
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
}
