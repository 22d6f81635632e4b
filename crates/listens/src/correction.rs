//! Corrections of the history: what they are, and their records in the
//! log (kinds 4 to 7, `docs/listens-format.md`). The log stays
//! append-only: a correction is a record after the listens it changes,
//! and an undo is a record naming the correction it takes back.

use crate::limits::field as check;
use crate::limits::{LimitError, MAX_ALBUM, MAX_ARTIST, MAX_TITLE, MAX_USER};
use crate::model::put_str;

pub(crate) const K_EDIT: u8 = 4;
pub(crate) const K_DELETE: u8 = 5;
pub(crate) const K_MERGE: u8 = 6;
pub(crate) const K_UNDO: u8 = 7;

/// Which listens an edit changes. Names are compared normalised
/// ([`crate::normalise`]), as they are now (after earlier corrections).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// One listen: its start time and names.
    Listen {
        timestamp: i64,
        artist: String,
        title: String,
    },
    /// Every listen of a track, those recorded later included.
    Track { artist: String, title: String },
}

/// The new names an edit gives; `None` keeps a field as it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Changes {
    pub artist: Option<String>,
    pub title: Option<String>,
    /// `Some("")` clears the album.
    pub album: Option<String>,
}

/// One correction of a user's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Correction {
    /// New names for one listen or every listen of a track.
    Edit { target: Target, changes: Changes },
    /// One listen no longer counts.
    Delete {
        timestamp: i64,
        artist: String,
        title: String,
    },
    /// Artist name `from` counts as `to` (as artist and album artist), in
    /// the listens so far and those recorded later.
    MergeArtist { from: String, to: String },
}

/// A correction as [`crate::Listens::corrections`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrectionInfo {
    /// The byte offset of its record in the log: unique, stable, and what
    /// [`crate::Listens::undo`] takes.
    pub id: u64,
    /// When it was made, UNIX seconds.
    pub when: i64,
    pub what: Correction,
    /// Whether an undo took it back.
    pub undone: bool,
}

/// What changed in a user's counted listens: each listen that stopped
/// counting as it was, and each that counts now in its new form (an edit
/// is one of each). The server moves the library's play counts and the
/// hot tier's popularity by it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Corrected {
    /// The correction's id (its log offset).
    pub id: u64,
    pub removed: Vec<crate::Listen>,
    pub added: Vec<crate::Listen>,
}

/// `the listen of ARTIST – TITLE at TIMESTAMP`: what an edit of one
/// listen and a delete name.
fn the_listen(
    f: &mut std::fmt::Formatter<'_>,
    at: i64,
    artist: &str,
    title: &str,
) -> std::fmt::Result {
    write!(f, "the listen of {artist} – {title} at {at}")
}

impl std::fmt::Display for Target {
    /// `the listen of ARTIST – TITLE at TIMESTAMP` or `every listen of
    /// ARTIST – TITLE`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Listen {
                timestamp,
                artist,
                title,
            } => the_listen(f, *timestamp, artist, title),
            Target::Track { artist, title } => write!(f, "every listen of {artist} – {title}"),
        }
    }
}

impl std::fmt::Display for Changes {
    /// The fields set, as `artist A, title T, album "B"` (the album
    /// quoted, so that clearing it shows as `album ""`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut sep = "";
        for (name, value) in [("artist", &self.artist), ("title", &self.title)] {
            if let Some(v) = value {
                write!(f, "{sep}{name} {v}")?;
                sep = ", ";
            }
        }
        if let Some(album) = &self.album {
            write!(f, "{sep}album {album:?}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Correction {
    /// What it does, in a sentence's words: `edit every listen of A – T:
    /// title T2`, `delete the listen of A – T at 5`, `merge A into B`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Correction::Edit { target, changes } => write!(f, "edit {target}: {changes}"),
            Correction::Delete {
                timestamp,
                artist,
                title,
            } => {
                f.write_str("delete ")?;
                the_listen(f, *timestamp, artist, title)
            }
            Correction::MergeArtist { from, to } => write!(f, "merge {from} into {to}"),
        }
    }
}

impl std::fmt::Display for CorrectionInfo {
    /// One row of a list: `ID\tat WHEN\tWHAT`, and ` (undone)` once an
    /// undo took it back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.undone { " (undone)" } else { "" };
        write!(f, "{}\tat {}\t{}{state}", self.id, self.when, self.what)
    }
}

impl Corrected {
    /// How many listens it changed: an edit removes and adds each one, a
    /// delete only removes, its undo only adds.
    pub fn changed(&self) -> usize {
        self.removed.len().max(self.added.len())
    }
}

impl Correction {
    /// Whether every name is within the limits listens have
    /// ([`crate::limits`]); the user's name too.
    pub fn check_limits(&self, user: &str) -> Result<(), LimitError> {
        check("user name", user, MAX_USER)?;
        match self {
            Correction::Edit { target, changes } => {
                let (artist, title) = match target {
                    Target::Listen { artist, title, .. } | Target::Track { artist, title } => {
                        (artist, title)
                    }
                };
                check("artist", artist, MAX_ARTIST)?;
                check("title", title, MAX_TITLE)?;
                check(
                    "artist",
                    changes.artist.as_deref().unwrap_or(""),
                    MAX_ARTIST,
                )?;
                check("title", changes.title.as_deref().unwrap_or(""), MAX_TITLE)?;
                check("album", changes.album.as_deref().unwrap_or(""), MAX_ALBUM)
            }
            Correction::Delete { artist, title, .. } => {
                check("artist", artist, MAX_ARTIST)?;
                check("title", title, MAX_TITLE)
            }
            Correction::MergeArtist { from, to } => {
                check("artist", from, MAX_ARTIST)?;
                check("artist", to, MAX_ARTIST)
            }
        }
    }
}

/// The largest payload a correction within the limits encodes to: an
/// edit of one listen with every field at its limit.
pub const MAX_CORRECTION_PAYLOAD: usize =
    1 + 8 + 1 + 8 + 1 + 6 * 4 + MAX_USER + 2 * MAX_ARTIST + 2 * MAX_TITLE + MAX_ALBUM;

// As for listens: far below the reader's record limit.
const _: () = assert!(MAX_CORRECTION_PAYLOAD * 64 <= crate::log::MAX_RECORD as usize);

const SCOPE_LISTEN: u8 = 0;
const SCOPE_TRACK: u8 = 1;
const SET_ARTIST: u8 = 1;
const SET_TITLE: u8 = 2;
const SET_ALBUM: u8 = 4;

/// The payload of a correction record (kinds 4 to 6).
pub(crate) fn encode_correction(user: &str, when: i64, what: &Correction, out: &mut Vec<u8>) {
    match what {
        Correction::Edit { target, changes } => {
            out.push(K_EDIT);
            out.extend_from_slice(&when.to_le_bytes());
            let (scope, ts, artist, title) = match target {
                Target::Listen {
                    timestamp,
                    artist,
                    title,
                } => (SCOPE_LISTEN, *timestamp, artist, title),
                Target::Track { artist, title } => (SCOPE_TRACK, 0, artist, title),
            };
            out.push(scope);
            out.extend_from_slice(&ts.to_le_bytes());
            let set = [
                (SET_ARTIST, &changes.artist),
                (SET_TITLE, &changes.title),
                (SET_ALBUM, &changes.album),
            ];
            out.push(
                set.iter()
                    .filter(|(_, v)| v.is_some())
                    .fold(0, |m, (b, _)| m | b),
            );
            for s in [user, artist, title] {
                put_str(out, s);
            }
            for (_, v) in set {
                put_str(out, v.as_deref().unwrap_or(""));
            }
        }
        Correction::Delete {
            timestamp,
            artist,
            title,
        } => {
            out.push(K_DELETE);
            out.extend_from_slice(&when.to_le_bytes());
            out.extend_from_slice(&timestamp.to_le_bytes());
            for s in [user, artist, title] {
                put_str(out, s);
            }
        }
        Correction::MergeArtist { from, to } => {
            out.push(K_MERGE);
            out.extend_from_slice(&when.to_le_bytes());
            for s in [user, from, to] {
                put_str(out, s);
            }
        }
    }
}

/// The payload of an undo record (kind 7).
pub(crate) fn encode_undo(user: &str, when: i64, id: u64, out: &mut Vec<u8>) {
    out.push(K_UNDO);
    out.extend_from_slice(&when.to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
    put_str(out, user);
}

/// Reads the fields after a correction's kind byte. Strict: a field a
/// writer leaves out must be empty, so every record that decodes
/// re-encodes to the same bytes.
pub(crate) fn decode_correction(
    kind: u8,
    r: &mut crate::model::Reader<'_>,
) -> Option<(String, i64, Correction)> {
    let when = r.i64()?;
    let own = |s: &str| s.to_owned();
    match kind {
        K_EDIT => {
            let scope = r.u8()?;
            let ts = r.i64()?;
            let set = r.u8()?;
            if set & !(SET_ARTIST | SET_TITLE | SET_ALBUM) != 0 {
                return None;
            }
            let (user, artist, title) = (r.str()?, r.str()?, r.str()?);
            let mut field = |bit: u8| -> Option<Option<String>> {
                let s = r.str()?;
                match (set & bit != 0, s.is_empty()) {
                    (true, _) => Some(Some(own(s))),
                    (false, true) => Some(None),
                    (false, false) => None,
                }
            };
            let changes = Changes {
                artist: field(SET_ARTIST)?,
                title: field(SET_TITLE)?,
                album: field(SET_ALBUM)?,
            };
            let target = match (scope, ts) {
                (SCOPE_LISTEN, timestamp) => Target::Listen {
                    timestamp,
                    artist: own(artist),
                    title: own(title),
                },
                (SCOPE_TRACK, 0) => Target::Track {
                    artist: own(artist),
                    title: own(title),
                },
                _ => return None,
            };
            Some((own(user), when, Correction::Edit { target, changes }))
        }
        K_DELETE => {
            let timestamp = r.i64()?;
            let (user, artist, title) = (r.str()?, r.str()?, r.str()?);
            Some((
                own(user),
                when,
                Correction::Delete {
                    timestamp,
                    artist: own(artist),
                    title: own(title),
                },
            ))
        }
        K_MERGE => {
            let (user, from, to) = (r.str()?, r.str()?, r.str()?);
            Some((
                own(user),
                when,
                Correction::MergeArtist {
                    from: own(from),
                    to: own(to),
                },
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Event, EventRef};

    #[test]
    fn every_correction_and_undo_round_trips_through_its_record() {
        let ch = |a: Option<&str>, t: Option<&str>, al: Option<&str>| Changes {
            artist: a.map(Into::into),
            title: t.map(Into::into),
            album: al.map(Into::into),
        };
        let evs = [
            Event::Correct {
                user: "u".into(),
                when: 7,
                what: Correction::Edit {
                    target: Target::Listen {
                        timestamp: -3,
                        artist: "A".into(),
                        title: "T".into(),
                    },
                    changes: ch(Some("B"), None, Some("")),
                },
            },
            Event::Correct {
                user: "u".into(),
                when: 8,
                what: Correction::Edit {
                    target: Target::Track {
                        artist: "A".into(),
                        title: "T".into(),
                    },
                    changes: ch(None, Some("T2"), None),
                },
            },
            Event::Correct {
                user: "u".into(),
                when: 9,
                what: Correction::Delete {
                    timestamp: 5,
                    artist: "A".into(),
                    title: "T".into(),
                },
            },
            Event::Correct {
                user: "u".into(),
                when: 10,
                what: Correction::MergeArtist {
                    from: "Beatles".into(),
                    to: "The Beatles".into(),
                },
            },
            Event::Undo {
                user: "u".into(),
                when: 11,
                id: 1234,
            },
        ];
        for ev in evs {
            let mut b = Vec::new();
            ev.encode(&mut b);
            let payload = &b[8..];
            assert_eq!(
                EventRef::decode(payload).map(EventRef::into_owned),
                Some(ev.clone())
            );
            assert!(EventRef::decode(&payload[..payload.len() - 1]).is_none());
        }
    }

    #[test]
    fn an_edit_at_every_limit_encodes_to_the_largest_payload() {
        let what = Correction::Edit {
            target: Target::Listen {
                timestamp: 1,
                artist: "a".repeat(MAX_ARTIST),
                title: "t".repeat(MAX_TITLE),
            },
            changes: Changes {
                artist: Some("b".repeat(MAX_ARTIST)),
                title: Some("u".repeat(MAX_TITLE)),
                album: Some("c".repeat(MAX_ALBUM)),
            },
        };
        let user = "u".repeat(MAX_USER);
        assert_eq!(what.check_limits(&user), Ok(()));
        let mut b = Vec::new();
        encode_correction(&user, 0, &what, &mut b);
        assert_eq!(b.len(), MAX_CORRECTION_PAYLOAD);
        assert_eq!(MAX_CORRECTION_PAYLOAD, 5227);
        let e = what.check_limits(&format!("{user}x")).unwrap_err();
        assert_eq!(e.field, "user name");
    }

    #[test]
    fn a_field_left_out_but_not_empty_does_not_decode() {
        let mut b = Vec::new();
        Event::Correct {
            user: "u".into(),
            when: 1,
            what: Correction::Edit {
                target: Target::Track {
                    artist: "A".into(),
                    title: "T".into(),
                },
                changes: Changes {
                    artist: Some("B".into()),
                    ..Changes::default()
                },
            },
        }
        .encode(&mut b);
        let mut payload = b[8..].to_vec();
        // Clear the "artist set" bit: the new artist is then a stray.
        payload[1 + 8 + 1 + 8] = 0;
        assert!(EventRef::decode(&payload).is_none());
    }

    #[test]
    fn each_correction_reads_as_the_sentence_the_cli_lists() {
        let edit = |target, album: Option<&str>| CorrectionInfo {
            id: 42,
            when: 1_700_000_000,
            what: Correction::Edit {
                target,
                changes: Changes {
                    artist: Some("Cher".into()),
                    title: None,
                    album: album.map(Into::into),
                },
            },
            undone: false,
        };
        let one = Target::Listen {
            timestamp: 5,
            artist: "Abba".into(),
            title: "SOS".into(),
        };
        assert_eq!(
            edit(one, Some("")).to_string(),
            "42\tat 1700000000\tedit the listen of Abba – SOS at 5: artist Cher, album \"\""
        );
        let all = Target::Track {
            artist: "Abba".into(),
            title: "SOS".into(),
        };
        let mut info = edit(all, None);
        info.undone = true;
        assert_eq!(
            info.to_string(),
            "42\tat 1700000000\tedit every listen of Abba – SOS: artist Cher (undone)"
        );
        let only_album = Changes {
            album: Some("Arrival".into()),
            ..Changes::default()
        };
        assert_eq!(only_album.to_string(), "album \"Arrival\"");
        let del = Correction::Delete {
            timestamp: 7,
            artist: "A".into(),
            title: "T".into(),
        };
        assert_eq!(del.to_string(), "delete the listen of A – T at 7");
        let merge = Correction::MergeArtist {
            from: "Beatles".into(),
            to: "The Beatles".into(),
        };
        assert_eq!(merge.to_string(), "merge Beatles into The Beatles");
    }

    #[test]
    fn an_edit_counts_each_listen_changed_once() {
        let l = crate::Listen::new("u", 1, "A", "T");
        let edit = Corrected {
            id: 1,
            removed: vec![l.clone(), l.clone()],
            added: vec![l.clone(), l.clone()],
        };
        assert_eq!(edit.changed(), 2);
        let undo_of_delete = Corrected {
            id: 2,
            removed: Vec::new(),
            added: vec![l],
        };
        assert_eq!(undo_of_delete.changed(), 1);
    }
}
