//! The submit path every API shares: per-listen checks (timestamps,
//! empty or NUL fields), the durable write, now-playing, and the hand-off
//! to the library linker.

use spindle_listens::{AppendError, Listen, Submitted};

use crate::state::AppState;

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
}

impl Ignored {
    pub fn code(self) -> u32 {
        match self {
            Ignored::Artist => 1,
            Ignored::Track => 2,
            Ignored::TooOld => 3,
            Ignored::TooNew => 4,
        }
    }
    pub fn message(self) -> &'static str {
        match self {
            Ignored::Artist => "Artist was ignored",
            Ignored::Track => "Track was ignored",
            Ignored::TooOld => "Timestamp was too old",
            Ignored::TooNew => "Timestamp was too new",
        }
    }
}

/// The checks every listen passes before it is stored.
pub fn check(state: &AppState, l: &Listen, timed: bool) -> Result<(), Ignored> {
    let bad = |s: &str| s.trim().is_empty() || s.contains('\0');
    if bad(&l.artist)
        || [&l.album, &l.album_artist, &l.mbid, &l.client]
            .iter()
            .any(|s| s.contains('\0'))
    {
        return Err(Ignored::Artist);
    }
    if bad(&l.title) {
        return Err(Ignored::Track);
    }
    if timed {
        if l.timestamp < state.config.min_timestamp {
            return Err(Ignored::TooOld);
        }
        if l.timestamp > state.now() + state.config.max_future {
            return Err(Ignored::TooNew);
        }
    }
    Ok(())
}

/// Stores listens that passed [`check`]; returns once they are on disk.
/// The listens move to a blocking thread and on to the library linker:
/// nothing is copied.
pub async fn store(state: &AppState, listens: Vec<Listen>) -> Result<Vec<Submitted>, AppendError> {
    if listens.is_empty() {
        return Ok(Vec::new());
    }
    let st = state.clone();
    let out = tokio::task::spawn_blocking(move || {
        let res = st.listens.submit(&listens);
        (res, listens)
    })
    .await;
    let (res, listens) = match out {
        Ok(x) => x,
        Err(e) => return Err(AppendError::Io(format!("the writer task failed: {e}"))),
    };
    let out = res?;
    let fresh: Vec<Listen> = listens
        .into_iter()
        .zip(&out)
        .filter(|(_, s)| **s == Submitted::Accepted)
        .map(|(l, _)| l)
        .collect();
    state.clear_now_playing_of(&fresh);
    state.linker.send(fresh);
    Ok(out)
}

/// Loves or unloves, durably.
pub async fn love(
    state: &AppState,
    user: String,
    artist: String,
    title: String,
    loved: bool,
) -> Result<(), AppendError> {
    let st = state.clone();
    let now = state.now();
    tokio::task::spawn_blocking(move || st.listens.love(&user, &artist, &title, now, loved))
        .await
        .map_err(|e| AppendError::Io(format!("the writer task failed: {e}")))?
}

impl AppState {
    /// Stores listens from an export (no time-window checks beyond empty
    /// fields) and links them to the library; returns how many were new.
    pub fn import(&self, listens: Vec<Listen>) -> Result<usize, AppendError> {
        let ok: Vec<Listen> = listens
            .into_iter()
            .filter(|l| check(self, l, false).is_ok())
            .collect();
        let mut added = 0;
        for chunk in ok.chunks(10_000) {
            let out = self.listens.submit(chunk)?;
            let fresh: Vec<Listen> = chunk
                .iter()
                .zip(&out)
                .filter(|(_, s)| **s == Submitted::Accepted)
                .map(|(l, _)| l.clone())
                .collect();
            added += fresh.len();
            self.linker.send(fresh);
        }
        self.flush_library_links();
        Ok(added)
    }
}
