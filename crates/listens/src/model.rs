//! What the log holds: listens and love events, and their byte encoding.

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
}

const K_LISTEN: u8 = 1;
const K_LOVE: u8 = 2;
const K_UNLOVE: u8 = 3;
const NONE_U32: u32 = u32::MAX;

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl Event {
    /// The payload of one record (without the length and CRC frame).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Event::Listen(l) => {
                out.push(K_LISTEN);
                out.extend_from_slice(&l.timestamp.to_le_bytes());
                out.extend_from_slice(&l.duration.unwrap_or(NONE_U32).to_le_bytes());
                out.extend_from_slice(&l.track_number.unwrap_or(NONE_U32).to_le_bytes());
                for s in [
                    &l.user,
                    &l.artist,
                    &l.title,
                    &l.album,
                    &l.album_artist,
                    &l.mbid,
                    &l.client,
                ] {
                    put_str(out, s);
                }
            }
            Event::Love {
                user,
                artist,
                title,
                timestamp,
                loved,
            } => {
                out.push(if *loved { K_LOVE } else { K_UNLOVE });
                out.extend_from_slice(&timestamp.to_le_bytes());
                for s in [user, artist, title] {
                    put_str(out, s);
                }
            }
        }
    }

    /// Decodes a payload whose CRC already matched; `None` if it is not a
    /// record this version knows.
    pub(crate) fn decode(b: &[u8]) -> Option<Event> {
        let mut r = Reader { b, at: 0 };
        let kind = r.u8()?;
        let ev = match kind {
            K_LISTEN => {
                let timestamp = r.i64()?;
                let duration = r.u32()?;
                let track_number = r.u32()?;
                let opt = |v: u32| (v != NONE_U32).then_some(v);
                Event::Listen(Listen {
                    timestamp,
                    duration: opt(duration),
                    track_number: opt(track_number),
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
                Event::Love {
                    timestamp,
                    user: r.str()?,
                    artist: r.str()?,
                    title: r.str()?,
                    loved: kind == K_LOVE,
                }
            }
            _ => return None,
        };
        (r.at == b.len()).then_some(ev)
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
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
            assert_eq!(Event::decode(&b), Some(ev.clone()));
            assert_eq!(Event::decode(&b[..b.len() - 1]), None);
        }
    }
}
