//! Which copy of a song a stream sends, and how: the one decision behind
//! every stream, Subsonic's `stream` and `download`, the web player's
//! `/ui/stream/ID` and a share link's `/share/TOKEN/stream/SONG`. Each
//! protocol parses its own parameters into a [`Request`] and renders its
//! own errors; [`decide`] picks the [`Source`] and [`serve`] answers it.
//!
//! - **Who** ([`Who`]): a song outside the music folders of the one who
//!   asks is as unknown as a missing one. Subsonic checks its grant
//!   before ([`crate::subsonic`]'s `access::gate`); the web player's user
//!   and a share's owner are checked here, so a share stops playing what
//!   its owner may no longer see.
//! - **What** ([`Play`]): the file as it is (a download, a share link);
//!   a Subsonic player's `format`, `maxBitRate` and `timeOffset` over the
//!   `[transcode]` rules of its user and client ([`transcode::Transcoder::plan_for`]);
//!   or the web player, which gets the same rules for its user and the
//!   client name [`crate::web::WEB_CLIENT`], and MP3 of what `<audio>`
//!   cannot decode ([`transcode::for_browser`]).
//! - **Which copy** ([`Source`]): a transcode ([`transcode::serve`]:
//!   cached copy or ffmpeg), else with storage tiers the copy
//!   [`crate::tiered`] opens, else the file in its music folder, opened
//!   through its checked open ([`crate::Music::stream_of`]) and sent by
//!   [`crate::stream::serve_opened`].
//!
//! No request parameter is ever a path: a song is found by its id in the
//! [`Catalog`].

use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use spindle_tiers::{Tiers, TrackRef};

use crate::catalog::{Catalog, Song};
use crate::state::AppState;
use crate::stream::OpenFile;
use crate::transcode::{self, format::UnknownFormat, Plan, Prepared, Target, TranscodeError};

/// One stream request, as its protocol parsed it.
pub(crate) struct Request {
    pub song: SongRef,
    pub who: Who,
    pub play: Play,
}

/// The song asked for.
pub(crate) enum SongRef {
    /// Its id as a request gives it (digits).
    Id(String),
    /// Its library entry.
    Entry(u32),
}

impl SongRef {
    fn find<'c>(&self, cat: &'c Catalog) -> Option<&'c Song> {
        match self {
            SongRef::Id(id) => cat.song(id),
            SongRef::Entry(e) => cat.song_by_entry(*e),
        }
    }
}

/// Who asks, and what is checked of them.
pub(crate) enum Who {
    /// A user whose folder grant the protocol has checked already.
    Checked(String),
    /// A user (the web player's session): the song must lie in one of
    /// their music folders.
    User(String),
    /// Whoever holds the share link with this token: the share must be
    /// live and hold the song, and its owner must still be granted the
    /// song's music folder.
    Share(String),
}

/// How the song is played.
pub(crate) enum Play {
    /// The file as it is; with `attachment`, as a download named after
    /// the file (`Content-Disposition`).
    Original { attachment: bool },
    /// A player that asks for a format, a bitrate limit or a seek
    /// (Subsonic's `stream`), under the rules for its user and `client`;
    /// `estimate`: a live transcode gets an estimated `Content-Length`.
    /// A transcode prepares the album's next track.
    Player {
        client: String,
        ask: transcode::Ask,
        estimate: bool,
    },
    /// A browser's `<audio>` (client name `client` for the rules): the
    /// rules' transcode, else MP3 of what browsers cannot decode.
    Browser { client: &'static str },
}

/// What [`decide`] chose.
pub(crate) enum Source {
    /// A transcode of the song to `target`, queued for an encode slot as
    /// `queued_as`; `next`, the album's next track, to prepare.
    Transcode {
        prepared: Prepared,
        target: Target,
        next: Option<Prepared>,
        estimate: bool,
        queued_as: String,
    },
    /// The song through the storage tiers (its music folder is one copy
    /// among several). `attachment`: the file name of a download.
    Tiered {
        tiers: Arc<Tiers>,
        track: TrackRef,
        content_type: String,
        attachment: Option<String>,
    },
    /// The song's file in its music folder, opened.
    File {
        file: OpenFile,
        content_type: String,
        attachment: Option<String>,
    },
}

/// Why there is nothing to stream.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// Unknown, outside the folders of who asks, or not in a live share.
    #[error("no such song")]
    NoSong,
    /// The song's file does not open (gone, or refused by its folder's
    /// checked open).
    #[error("the song's file does not open")]
    NoFile,
    /// A seek at or past the end of the song: nothing to play from there.
    #[error("timeOffset {seek} s is at or past the end of the song ({duration} s)")]
    PastTheEnd { seek: f64, duration: i64 },
    #[error(transparent)]
    Format(#[from] UnknownFormat),
    /// The blocking task of the lookup failed.
    #[error("lookup failed")]
    Lookup,
}

/// Decides what `req` streams. `cat`: a catalog the caller has (current
/// enough for it); without one the lookup builds or checks one.
///
/// With a catalog that holds the song and nothing more to check (the
/// grant checked by the caller), the decision is a map access and an
/// open: done on this thread, it saves a hop to the blocking pool per
/// stream. A grant or a share is checked on a blocking thread (the
/// accounts and the shares may be read from disk), as is a song the
/// catalog lacks.
pub(crate) async fn decide(
    st: &AppState,
    cat: Option<Arc<Catalog>>,
    req: Request,
) -> Result<Source, Refused> {
    let inline = matches!(req.who, Who::Checked(_))
        && cat.as_ref().is_some_and(|c| req.song.find(c).is_some());
    if let (true, Some(cat)) = (inline, &cat) {
        return decide_in(st, cat, req);
    }
    let st = st.clone();
    spindle_app::offload::run(move || {
        let cat = cat.unwrap_or_else(|| st.music.catalog(&st.db));
        decide_in(&st, &cat, req)
    })
    .await
    .map_err(|_| Refused::Lookup)?
}

/// [`decide`] over `cat` (may block: rules may read the library, the
/// grant the accounts).
fn decide_in(st: &AppState, cat: &Catalog, req: Request) -> Result<Source, Refused> {
    let Request { song, who, play } = req;
    let s = song.find(cat).ok_or(Refused::NoSong)?;
    let user = match who {
        Who::Checked(u) => u,
        Who::User(u) if crate::web::may_see(st, &u, s) => u,
        Who::User(_) => return Err(Refused::NoSong),
        Who::Share(token) => {
            crate::share::live_with(st, &token, s.id)
                .filter(|share| crate::web::may_see(st, &share.owner, s))
                .ok_or(Refused::NoSong)?
                .owner
        }
    };
    let plan = match &play {
        Play::Original { .. } => Plan::Original,
        Play::Player { client, ask, .. } => {
            past_the_end(ask.offset, s.duration)?;
            st.transcoder.plan_for(&st.db, &user, client, s, ask)?
        }
        Play::Browser { client } => {
            let ruled =
                st.transcoder
                    .plan_for(&st.db, &user, client, s, &transcode::Ask::default())?;
            for_browser(ruled, s)
        }
    };
    if let Plan::Transcode(target) = plan {
        let (next, estimate) = match play {
            Play::Player { estimate, .. } => (
                transcode::prepare::next_in_album(&st.music, cat, s),
                estimate,
            ),
            _ => (None, false),
        };
        return Ok(Source::Transcode {
            prepared: Prepared::of(&st.music, s),
            target,
            next,
            estimate,
            queued_as: user,
        });
    }
    let attachment = match play {
        Play::Original { attachment: true } => Some(file_name(s)),
        _ => None,
    };
    let content_type = s.content_type.clone();
    let music = &st.music;
    Ok(match music.tiers() {
        Some(tiers) => Source::Tiered {
            tiers: tiers.clone(),
            track: crate::Music::track_of(s),
            content_type,
            attachment,
        },
        None => Source::File {
            file: music
                .stream_of(&st.reader, s)
                .map_err(|_| Refused::NoFile)?,
            content_type,
            attachment,
        },
    })
}

/// The web player's plan: the rules' plan `ruled` (a browser asks for
/// nothing itself), unless that sends a file `<audio>` cannot decode,
/// which becomes MP3 ([`transcode::for_browser`]). A format a rule names
/// is the rule's (docs/transcoding.md: not every browser plays Ogg).
fn for_browser(ruled: Plan, s: &Song) -> Plan {
    match ruled {
        Plan::Original => transcode::for_browser(s).map_or(Plan::Original, Plan::Transcode),
        t => t,
    }
}

/// A seek at or past the end of a song of `duration` seconds is refused.
fn past_the_end(seek: f64, duration: Option<i64>) -> Result<(), Refused> {
    match duration {
        #[allow(
            clippy::cast_precision_loss,
            reason = "a song's length in seconds is far below 2^52"
        )]
        Some(d) if seek > 0.0 && seek >= d as f64 => Err(Refused::PastTheEnd { seek, duration: d }),
        _ => Ok(()),
    }
}

fn file_name(s: &Song) -> String {
    s.file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Answers `source` for a `GET` (or, with `head`, a `HEAD`) with the
/// request headers `req`: ranges and conditional requests for a file or
/// a tiered copy, a live or cached transcode; counts what was sent in
/// the stream metrics (a 2xx answer). A transcode that cannot be served
/// (no encode slot, ffmpeg failed, no copy to read) is the caller's to
/// render.
pub(crate) async fn serve(
    st: &AppState,
    source: Source,
    req: &HeaderMap,
    head: bool,
) -> Result<Response, TranscodeError> {
    let ((mut resp, sent), attachment) = match source {
        Source::Transcode {
            prepared,
            target,
            next,
            estimate,
            queued_as,
        } => {
            let answer =
                transcode::serve(st, prepared, target, req, head, estimate, &queued_as, next);
            (answer.await?, None)
        }
        Source::Tiered {
            tiers,
            track,
            content_type,
            attachment,
        } => {
            let answer =
                crate::tiered::serve_track(&tiers, &st.reader, &track, &content_type, req, head);
            (answer.await, attachment)
        }
        Source::File {
            file,
            content_type,
            attachment,
        } => {
            let answer = crate::stream::serve_opened(&st.reader, file, &content_type, req, head);
            (answer.await, attachment)
        }
    };
    if sent.status < 300 {
        st.metrics.stream(sent.bytes);
    }
    if let Some(v) = attachment.as_deref().and_then(disposition) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

/// `attachment; filename="NAME"`, the name's characters other than
/// printable ASCII (and `"`, `\`) replaced by `_`.
fn disposition(name: &str) -> Option<HeaderValue> {
    let ascii: String = name
        .chars()
        .map(|ch| {
            if ch.is_ascii_graphic() && ch != '"' && ch != '\\' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    HeaderValue::from_str(&format!("attachment; filename=\"{ascii}\"")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcode::Format;
    use spindle_app::testlib;

    #[test]
    fn the_web_player_gets_the_rules_plan_unless_that_sends_what_browsers_cannot_decode() {
        let cat = testlib::catalog(&[
            ("a/1.wv", "Ann", "Packed", "one", "", 0),
            ("a/2.flac", "Ann", "Plain", "two", "", 0),
        ]);
        let of = |suffix: &str| cat.songs.iter().find(|s| s.suffix == suffix).unwrap();
        let (wv, flac) = (of("wv"), of("flac"));
        let opus = Plan::Transcode(Target {
            format: Format::Opus,
            bitrate: 96,
            offset: 0.0,
        });
        assert_eq!(for_browser(opus, wv), opus);
        assert_eq!(for_browser(opus, flac), opus);
        assert_eq!(for_browser(Plan::Original, flac), Plan::Original);
        let mp3 = Plan::Transcode(Target {
            format: Format::Mp3,
            bitrate: transcode::BROWSER_BITRATE,
            offset: 0.0,
        });
        assert_eq!(for_browser(Plan::Original, wv), mp3);
    }
}
