//! Preparing ahead: while a track of an album is transcoded for a
//! client, the album's next track is transcoded into the cache with the
//! same target, so that the next request finds it hot.
//!
//! Only with spare capacity: a preparation takes an encode slot only when
//! one is free and nobody waits ([`super::gate::Gate::try_acquire`]), and
//! it is kept only if the cache's policy admits it (the preparation
//! counts as one request of the next track: it is likely to be played).
//! The tasks are tracked by the [`super::Transcoder`]; its `shutdown`
//! stops them (their ffmpeg killed and reaped) and waits for them.

use std::sync::Arc;

use spindle_tiers::Tiers;

use super::{ffmpeg, Prepared, Target, Transcoder};
use crate::catalog::{Catalog, Song};
use crate::music::Music;
use crate::sync::lock;

/// The song after `song` on its album, if any, opened for a transcode
/// through `music` (blocking).
pub fn next_in_album(music: &Music, cat: &Catalog, song: &Song) -> Option<Prepared> {
    let album = cat.album(&song.album_id)?;
    let at = album
        .songs
        .iter()
        .position(|&i| cat.songs[i].id == song.id)?;
    let next = &cat.songs[*album.songs.get(at + 1)?];
    Some(Prepared::of(music, next))
}

/// Transcodes `next` to `t` into `tc`'s cache (the hot tier's when there
/// are `tiers`) in the background, when a slot is free and the cache
/// wants it.
pub fn spawn(tc: &Arc<Transcoder>, tiers: Option<Arc<Tiers>>, next: Prepared, t: Target) {
    if tc.stopping.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let me = tc.clone();
    let job = async move {
        let tc = me;
        let Some(cache) = tc.cache(tiers.as_ref()).await else {
            return;
        };
        let key = next.key(&t);
        let estimated = next.estimate(&t);
        let secs = next.secs(&t);
        if cache.hot().contains(&key).is_some() {
            return;
        }
        let Some(permit) = tc.gate.try_acquire() else {
            return;
        };
        let Some(file) = next.file else {
            return;
        };
        if !cache.access(&key, estimated).keep {
            return;
        }
        let Some(w) = cache.writer(&key, estimated) else {
            return;
        };
        let input = ffmpeg::Input::File(file);
        let started = match ffmpeg::start(&tc.cfg.ffmpeg, input, &t, permit, &next.path, secs).await
        {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("preparing {}: {e}", next.path.display());
                return;
            }
        };
        let mut rx = ffmpeg::pump(started, Some((cache.clone(), w)), None);
        while let Some(Ok(_)) = rx.recv().await {}
        tracing::debug!("prepared {} as {}", next.path.display(), t.variant());
    };
    let mut tasks = lock(&tc.tasks);
    // Finished preparations leave the set here.
    while tasks.try_join_next().is_some() {}
    tasks.spawn(job);
}
