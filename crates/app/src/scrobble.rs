//! The submit path every API shares: per-listen checks (timestamps,
//! empty, NUL or over-long fields), the durable write, now-playing, and the hand-off
//! to the library linker and, when the storage tiers are configured, to
//! their popularity ([`crate::hot`]).

use spindle_listens::{AppendError, LimitError, Listen, Submitted};

use crate::App;

/// Why a listen was not recorded (Last.fm ignoredMessage codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// 1: the artist is empty or not valid text.
    Artist,
    /// 2: the title is empty or not valid text.
    Track,
    /// 3: before the earliest accepted time.
    TooOld,
    /// 4: too far in the future.
    TooNew,
    /// 2 for the title, 1 for any other field: longer than the history
    /// keeps (`spindle_listens::limits`); `field` as [`LimitError`] names it.
    TooLong { field: &'static str },
}

impl Ignored {
    pub fn code(self) -> u32 {
        match self {
            Ignored::Artist => 1,
            Ignored::Track => 2,
            Ignored::TooOld => 3,
            Ignored::TooNew => 4,
            Ignored::TooLong { field: "title" } => 2,
            Ignored::TooLong { .. } => 1,
        }
    }
    pub fn message(self) -> &'static str {
        match self {
            Ignored::Artist => "Artist was ignored",
            Ignored::Track => "Track was ignored",
            Ignored::TooOld => "Timestamp was too old",
            Ignored::TooNew => "Timestamp was too new",
            Ignored::TooLong { field } => match field {
                "artist" => "Artist name too long (at most 1024 bytes)",
                "credited artist" => "A credited artist's name too long (at most 1024 bytes)",
                spindle_listens::limits::CREDITS_COUNT => "Too many credited artists (at most 32)",
                "list of credited artists" => {
                    "Credited artists' names too long (at most 8192 bytes together)"
                }
                "title" => "Track name too long (at most 1024 bytes)",
                "album" => "Album name too long (at most 1024 bytes)",
                "album artist" => "Album artist name too long (at most 1024 bytes)",
                "MusicBrainz id" => "MusicBrainz id too long (at most 64 bytes)",
                "client name" => "Client name too long (at most 256 bytes)",
                "user name" => "User name too long (at most 64 bytes)",
                _ => "A field is too long",
            },
        }
    }
}

/// The checks every listen passes before it is stored (or kept as
/// now-playing): names present, no NUL, every field within the history's
/// limits ([`Listen::check_limits`]), and with `timed` the time window.
pub fn check(app: &App, l: &Listen, timed: bool) -> Result<(), Ignored> {
    let bad = |s: &str| s.trim().is_empty() || s.contains('\0');
    if bad(&l.artist)
        || [&l.album, &l.album_artist, &l.mbid, &l.client]
            .into_iter()
            .chain(&l.artists)
            .any(|s| s.contains('\0'))
    {
        return Err(Ignored::Artist);
    }
    if bad(&l.title) {
        return Err(Ignored::Track);
    }
    l.check_limits()
        .map_err(|e: LimitError| Ignored::TooLong { field: e.field })?;
    if timed {
        if l.timestamp < app.config.min_timestamp {
            return Err(Ignored::TooOld);
        }
        if l.timestamp > app.now() + app.config.max_future {
            return Err(Ignored::TooNew);
        }
    }
    Ok(())
}

/// Stores listens that passed [`check`]; returns once they are on disk
/// and counted in their user's plays (`crate::plays`). The listens
/// move to a blocking thread and on to the library linker: nothing is
/// copied.
pub async fn store(app: &App, listens: Vec<Listen>) -> Result<Vec<Submitted>, AppendError> {
    let songs = listens.into_iter().map(|l| (l, None)).collect();
    store_songs(app, songs).await
}

/// [`store`] of listens of library entries the client named (Subsonic's
/// `scrobble`, the web player): those entries' play counts rise even
/// when their tags do not match the listen's names.
pub async fn store_songs(
    app: &App,
    songs: Vec<(Listen, Option<u32>)>,
) -> Result<Vec<Submitted>, AppendError> {
    let (listens, entries): (Vec<Listen>, Vec<Option<u32>>) = songs.into_iter().unzip();
    if listens.is_empty() {
        return Ok(Vec::new());
    }
    let (history, db, plays) = (app.listens.clone(), app.db.clone(), app.plays.clone());
    let out = crate::offload::run(move || {
        let out = history.submit(&listens)?;
        let lib = db.read();
        // An entry the library no longer has is as good as none.
        let fresh: Vec<(Listen, Option<u32>)> = listens
            .into_iter()
            .zip(entries)
            .zip(&out)
            .filter(|(_, s)| **s == Submitted::Accepted)
            .map(|((l, e), _)| (l, e.filter(|&e| lib.contains(e))))
            .collect();
        // Before the answer, the plays of entries the client named (a
        // Subsonic scrobble): its user reads them in the next request.
        // The others need a library lookup, which the linker makes once
        // and then counts them (`link.rs`).
        let named: Vec<(Listen, Option<u32>)> =
            fresh.iter().filter(|(_, e)| e.is_some()).cloned().collect();
        plays.record(&lib, &named);
        drop(lib);
        Ok::<_, AppendError>((out, fresh))
    })
    .await;
    let (out, fresh) = match out {
        Ok(x) => x?,
        Err(e) => return Err(AppendError::Io(format!("the writer task failed: {e}"))),
    };
    // The feeders of linked services read what is now durable.
    app.forwarding.wake();
    app.clear_now_playing_of(fresh.iter().map(|(l, _)| l));
    if let Some(feed) = &app.feed {
        feed.send(fresh.iter().map(|(l, _)| l.clone()).collect());
    }
    app.linker.send_songs(fresh);
    Ok(out)
}

/// Loves or unloves, durably (and so stars or unstars the library's
/// songs of the track, [`crate::loves`]), then wakes the forwarding
/// feeders. A name over its limit is refused with
/// [`AppendError::TooLarge`] (see [`AppendError::is_refusal`]) before
/// anything is written.
pub async fn love(
    app: &App,
    user: String,
    artist: String,
    title: String,
    loved: bool,
) -> Result<(), AppendError> {
    spindle_listens::check_love_limits(&user, &artist, &title)?;
    let app = app.clone();
    crate::offload::run(move || crate::loves::set(&app, &user, &artist, &title, loved))
        .await
        .map_err(|e| AppendError::Io(format!("the writer task failed: {e}")))?
}

/// What [`App::import`] did with the listens it was given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportCounts {
    /// New, and stored.
    pub added: u64,
    /// Not stored: there already (the same play within the dedupe
    /// window), or refused (an empty name, a field over its limit).
    pub already: u64,
    /// Not stored: before the config's `min_timestamp`, or more than
    /// `max_future` ahead.
    pub outside_window: u64,
}

impl App {
    /// Stores listens from an export or a pull — the one import path,
    /// whether the server runs (the spool's task) or not (`spindle
    /// listens import` on a stopped server runs the same job here) —
    /// with the checks of [`check`] including the time window (the
    /// config's `min_timestamp` and `max_future`: a listen outside it is
    /// skipped, as a scrobble would be, and counted apart), the history's
    /// dedupe window, and links them to the library.
    pub fn import(&self, listens: Vec<Listen>) -> Result<ImportCounts, AppendError> {
        let mut counts = ImportCounts::default();
        let mut ok = Vec::with_capacity(listens.len());
        for l in listens {
            match check(self, &l, true) {
                Ok(()) => ok.push(l),
                Err(Ignored::TooOld | Ignored::TooNew) => counts.outside_window += 1,
                Err(_) => counts.already += 1,
            }
        }
        for chunk in ok.chunks(10_000) {
            let out = self.listens.submit(chunk)?;
            self.forwarding.wake();
            let fresh: Vec<Listen> = chunk
                .iter()
                .zip(&out)
                .filter(|(_, s)| **s == Submitted::Accepted)
                .map(|(l, _)| l.clone())
                .collect();
            counts.added += fresh.len() as u64;
            counts.already += (chunk.len() - fresh.len()) as u64;
            // The linker counts them in their users' plays once matched.
            self.linker.send(fresh);
        }
        self.flush_library_links();
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_750_000_000;

    /// A core over an empty library in `data`, its listens in `data/l`,
    /// at [`NOW`].
    fn state(data: &std::path::Path) -> App {
        App::in_dir(data, NOW)
    }

    #[test]
    fn a_field_over_its_limit_is_ignored_with_a_message_naming_the_limit() {
        use spindle_listens::limits::*;
        let data = tempfile::tempdir().unwrap();
        let state = state(data.path());
        type Set = fn(&mut Listen, String);
        let fields: [(&str, usize, Set, u32); 6] = [
            ("artist", MAX_ARTIST, |l, v| l.artist = v, 1),
            ("title", MAX_TITLE, |l, v| l.title = v, 2),
            ("album", MAX_ALBUM, |l, v| l.album = v, 1),
            (
                "album artist",
                MAX_ALBUM_ARTIST,
                |l, v| l.album_artist = v,
                1,
            ),
            ("MusicBrainz id", MAX_MBID, |l, v| l.mbid = v, 1),
            ("client name", MAX_CLIENT, |l, v| l.client = v, 1),
        ];
        for (name, max, set, code) in fields {
            let mut l = Listen::new("ann", NOW, "A", "T");
            set(&mut l, "ü".repeat(max / 2));
            assert_eq!(check(&state, &l, true), Ok(()), "{name} at its limit");
            set(&mut l, "x".repeat(max + 1));
            let ig = check(&state, &l, true).unwrap_err();
            assert_eq!(ig, Ignored::TooLong { field: name });
            assert_eq!(ig.code(), code, "{name}");
            assert!(ig.message().contains(&max.to_string()), "{}", ig.message());
        }
    }

    #[tokio::test]
    async fn a_love_with_an_over_long_name_is_refused_before_the_log() {
        let data = tempfile::tempdir().unwrap();
        let state = state(data.path());
        let log = data.path().join("l").join(spindle_listens::LOG_FILE);
        let before = std::fs::read(&log).unwrap();
        let e = love(&state, "ann".into(), "a".repeat(3 << 19), "t".into(), true)
            .await
            .unwrap_err();
        assert!(e.is_refusal(), "{e}");
        assert_eq!(std::fs::read(&log).unwrap(), before);
    }
}
