//! Cover art for songs, albums and artists, at the size a client asks
//! for: the [`Covers`] service (its disk cache, resize pool and lookup).
//! Subsonic's `getCoverArt` and the web UI's `/ui/cover/ID` both answer
//! through it; the HTTP side (validators, 304s, ranges) is the server's.
//!
//! A request goes in two steps, both on a blocking thread:
//!
//! 1. [`Covers::lookup`] finds the places the cover may come from, best
//!    first ([`find`]: the embedded picture, folder images, artist
//!    images), and hashes their identity (path, inode, length,
//!    modification time) with the size into a key. The key is the strong
//!    ETag and the name of the resized cover in the disk cache, so an
//!    `If-None-Match` is answered 304 from a few `stat`s, without reading
//!    an image, and a changed file changes both.
//! 2. [`Covers::render`] makes the bytes: from the disk cache
//!    ([`cache`]) when this size was made before; else the first
//!    candidate that is an image Spindle can decode, resized ([`resize`]:
//!    longer side = size, aspect kept, never scaled up, JPEG out) and
//!    stored in the cache. Without a size, or with one at least the
//!    source's, the source is sent as it is. A candidate that cannot be
//!    decoded (a corrupt embedded picture, a file over
//!    [`resize::MAX_COVER_PIXELS`]) is logged and the next one tried;
//!    without a size, a folder image is sent unchecked (as the user keeps
//!    it), an embedded picture only when its header reads.
//!
//! A size asked is first snapped up to one of [`SNAPPED_COVER_SIZES`]
//! ([`snap`]), so a client asking every size from 100 to 699 makes seven
//! covers, not six hundred.
//!
//! Step 1, a cached cover and a cover sent as it is (no size) run on
//! tokio's blocking threads: a few `stat`s and one file read. A cover to
//! make runs on the covers' own pool ([`crate::fair::pool`]: at most
//! [`MAX_CONCURRENT_RESIZES`] at once, one user's share of them and of the
//! [`COVER_QUEUE`], round-robin by user, given up after
//! [`COVER_QUEUE_DEADLINE`]), so a flood of resizes never takes the
//! blocking threads every other request needs. Concurrent requests for
//! the same cover (sources and size) wait for one resize
//! ([`Covers::make`]). docs/cover-art.md describes the sources, the
//! cache's layout and the limits.

pub mod cache;
pub mod find;
pub mod initial;
pub mod resize;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

pub use cache::{DiskCache, COVER_CACHE_BUDGET, COVER_CACHE_DIR};
pub use find::{Candidate, Source};
pub use resize::{ImageError, MAX_COVER_PIXELS};

use crate::accounts::md5_hex;
use crate::catalog::Catalog;
use crate::fair::pool::{Pool, Refused};
use crate::fair::Limits;
use crate::music::Music;
use crate::sync::lock;

/// Resizes that may run at once, each on a thread of the covers' own
/// pool: 2. A resize of a JPEG cover takes a few milliseconds and little
/// memory (it is decoded at a reduced scale); a large PNG can take a
/// second and 150 MB, so two at once bound both the cores and the memory
/// covers can take. One user runs at most one of them
/// ([`crate::fair::USER_SLOTS_PERCENT`]).
pub const MAX_CONCURRENT_RESIZES: usize = 2;

/// Covers waiting to be made, all users together: 64; one user's share
/// is half of it, 32 ([`crate::fair::USER_QUEUE_PERCENT`]). Beyond
/// either a request is answered busy at once.
pub const COVER_QUEUE: usize = 64;

/// How long a cover waits for a resize worker before it is answered busy
/// (HTTP 503 with `Retry-After`, Subsonic error 0): 10 seconds.
pub const COVER_QUEUE_DEADLINE: Duration = Duration::from_secs(10);

/// How long a client refused as busy is asked to wait (`Retry-After`).
pub const COVER_RETRY_AFTER_SECS: u64 = 5;

/// The sizes covers are made at. A size asked is served at the first of
/// these at least as large (100 → 128, 500 → 512); above the last the
/// source is sent as it is. They are what apps ask: the web UI's 40, 96,
/// 128, 160 and 300, and the 32–1024 steps of Subsonic apps.
pub const SNAPPED_COVER_SIZES: [u32; 10] = [32, 64, 128, 160, 256, 300, 512, 600, 1024, 2048];

/// The size a cover asked at `size` is made at ([`SNAPPED_COVER_SIZES`]);
/// `None`: the source as it is.
pub fn snap(size: Option<u32>) -> Option<u32> {
    let size = size?;
    SNAPPED_COVER_SIZES.iter().copied().find(|&s| s >= size)
}

/// How long a browser or app may reuse a cover without asking again: one
/// day. After that it revalidates with `If-None-Match` and gets a 304
/// unless the cover's files changed.
pub const COVER_MAX_AGE: u32 = 24 * 3600;

/// Changes when the covers Spindle makes change (filter, quality), so
/// ETags and cache keys of the old ones stop matching.
const RENDER_VERSION: u32 = 1;

/// Why a cover could not be sent.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CoverError {
    #[error("no song, album or artist has the id {0:?}")]
    NoSuchId(String),
    #[error(
        "no cover art for {0}: no picture embedded in its songs and no cover image in its folder"
    )]
    NotFound(String),
    #[error("the cover art of {id} cannot be used: {source}")]
    Unusable {
        id: String,
        #[source]
        source: ImageError,
    },
    #[error("the cover lookup failed inside the server")]
    Task,
    #[error("the server is making as many covers as it can ({0}); retry in a few seconds")]
    Busy(String),
}

/// A cover's bytes and type.
#[derive(Debug, Clone)]
pub struct Cover {
    pub data: Vec<u8>,
    pub mime: &'static str,
}

/// Where the cover of one id at one size comes from, and its key
/// ([`Covers::lookup`]).
#[derive(Debug, Clone)]
pub struct Lookup {
    id: String,
    size: Option<u32>,
    candidates: Vec<Candidate>,
    key: String,
}

impl Lookup {
    /// The strong entity tag of the cover, quotes included.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.key)
    }

    /// The places the cover may come from, best first.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }
}

/// The outcome of a cover being made, for the requests waiting for it.
type Making = watch::Receiver<Option<Result<Cover, CoverError>>>;

/// The cover art service: the disk cache, the resize pool and the covers
/// being made. One per server, shared by every adapter that sends covers.
pub struct Covers {
    cache: Option<DiskCache>,
    pool: Pool,
    /// Covers being made, by key: later requests for one wait for it.
    making: Mutex<HashMap<String, Making>>,
}

fn resize_pool() -> Pool {
    Pool::new(
        "spindle-cover",
        Limits::shared(MAX_CONCURRENT_RESIZES, COVER_QUEUE),
        COVER_QUEUE_DEADLINE,
    )
}

impl Covers {
    /// Covers resized on every request, nothing kept (tests, and a server
    /// whose cache folder cannot be used).
    pub fn without_cache() -> Covers {
        Covers {
            cache: None,
            pool: resize_pool(),
            making: Mutex::new(HashMap::new()),
        }
    }

    /// Covers with the disk cache in `dir` (made if missing) within
    /// `budget` bytes. A cache that cannot be opened is logged, and covers
    /// are then resized on every request.
    pub fn open(dir: &Path, budget: u64) -> Covers {
        let cache = DiskCache::open(dir, budget)
            .inspect_err(|e| {
                tracing::warn!(
                    "cover cache {}: {e}; covers will be resized on every request",
                    dir.display()
                );
            })
            .ok();
        Covers {
            cache,
            pool: resize_pool(),
            making: Mutex::new(HashMap::new()),
        }
    }

    /// The disk cache, if there is one.
    pub fn cache(&self) -> Option<&DiskCache> {
        self.cache.as_ref()
    }

    /// Where the cover of `id` (a song, `al-…` or `ar-…`) at `size`
    /// pixels (`None`: as it is; a size is [`snap`]ped) comes from, and
    /// its key. Stats files; reads no image. Call on a blocking thread.
    pub fn lookup(
        &self,
        music: &Music,
        cat: &Catalog,
        id: &str,
        size: Option<u32>,
    ) -> Result<Lookup, CoverError> {
        let size = snap(size);
        let candidates = find::candidates(music, cat, id)?;
        if candidates.is_empty() {
            return Err(CoverError::NotFound(id.to_owned()));
        }
        let mut ident = format!("spindle-cover {RENDER_VERSION}\n{size:?}\n");
        for c in &candidates {
            ident.push_str(&c.identity);
            ident.push('\n');
        }
        Ok(Lookup {
            id: id.to_owned(),
            size,
            candidates,
            key: md5_hex(ident.as_bytes()),
        })
    }

    /// The cover `l` describes when it needs no resize: from the disk
    /// cache, or the source as it is when no size is asked (`None`: it is
    /// to be made, [`Covers::make`]). Call on a blocking thread.
    pub fn ready(&self, l: &Lookup) -> Result<Option<Cover>, CoverError> {
        if l.size.is_none() {
            return self.render(l).map(Some);
        }
        Ok(self.cached(l))
    }

    fn cached(&self, l: &Lookup) -> Option<Cover> {
        let data = self.cache.as_ref()?.get(&l.key)?;
        Some(Cover {
            data,
            mime: resize::Format::Jpeg.mime(),
        })
    }

    /// Makes the cover `l` describes on the resize pool in `user`'s turn
    /// ([`Covers::render`]); requests for a cover already being made wait
    /// for that one instead. [`CoverError::Busy`] when the pool's queue,
    /// or this user's share of it, is full, or the wait was too long.
    pub async fn make(self: &Arc<Self>, l: Lookup, user: &str) -> Result<Cover, CoverError> {
        loop {
            let (tx, mut rx) = {
                let mut making = lock(&self.making);
                match making.get(&l.key) {
                    Some(rx) => (None, rx.clone()),
                    None => {
                        let (tx, rx) = watch::channel(None);
                        making.insert(l.key.clone(), rx.clone());
                        (Some(tx), rx)
                    }
                }
            };
            let Some(tx) = tx else {
                // Another request makes it: its outcome is ours. If that
                // request went away first, start over (maybe as the maker).
                if let Ok(v) = rx.wait_for(Option::is_some).await {
                    if let Some(r) = v.as_ref() {
                        return r.clone();
                    }
                }
                continue;
            };
            let _done = Unlist(self, &l.key);
            let me = self.clone();
            let l2 = l.clone();
            let r = match self.pool.run(user, move || me.render(&l2)).await {
                Ok(r) => r,
                Err(Refused::Lost) => Err(CoverError::Task),
                Err(e) => Err(CoverError::Busy(e.to_string())),
            };
            tx.send_replace(Some(r.clone()));
            return r;
        }
    }

    /// Covers being made and waiting to be (tests, metrics).
    pub fn load(&self) -> (usize, usize) {
        self.pool.load()
    }

    /// The bytes of the cover `l` describes: cached, resized, or the
    /// source as it is (see the module doc). Call on a blocking thread
    /// (a resize: on the resize pool, through [`Covers::make`]).
    pub fn render(&self, l: &Lookup) -> Result<Cover, CoverError> {
        if l.size.is_some() {
            if let Some(c) = self.cached(l) {
                return Ok(c);
            }
        }
        let mut first_error = None;
        for c in &l.candidates {
            let Some(bytes) = find::load(c) else {
                continue;
            };
            let unusable = |e: ImageError, first: &mut Option<ImageError>| {
                tracing::warn!("cover art of {}: skipping {}: {e}", l.id, c.describe());
                first.get_or_insert(e);
            };
            let probe = resize::probe(&bytes);
            if let (None, Source::File(path)) = (l.size, &c.source) {
                // Without a size, a folder image goes out as the user keeps
                // it; only embedded pictures (which taggers do break) are
                // checked first.
                let mime = probe.map_or_else(|_| find::mime_by_name(path), |p| p.format.mime());
                return Ok(Cover { data: bytes, mime });
            }
            let probe = match probe {
                Ok(p) => p,
                Err(e) => {
                    unusable(e, &mut first_error);
                    continue;
                }
            };
            let size = match l.size {
                Some(s) if s < probe.width.max(probe.height) => s,
                _ => {
                    return Ok(Cover {
                        data: bytes,
                        mime: probe.format.mime(),
                    })
                }
            };
            match resize::resize_to_jpeg(&bytes, size) {
                Ok(r) => {
                    if let Some(cache) = &self.cache {
                        if let Err(e) = cache.put(&l.key, &r.data) {
                            tracing::warn!("cover cache: cannot store a cover: {e}");
                        }
                    }
                    return Ok(Cover {
                        data: r.data,
                        mime: resize::Format::Jpeg.mime(),
                    });
                }
                Err(e) => unusable(e, &mut first_error),
            }
        }
        Err(match first_error {
            Some(source) => CoverError::Unusable {
                id: l.id.clone(),
                source,
            },
            None => CoverError::NotFound(l.id.clone()),
        })
    }
}

impl Candidate {
    /// The candidate, for a log line.
    fn describe(&self) -> String {
        match &self.source {
            Source::Embedded(p) => format!("the picture embedded in {}", p.display()),
            Source::File(p) => p.display().to_string(),
        }
    }
}

/// Takes a cover off the list of those being made when its maker is
/// done (or went away).
struct Unlist<'a>(&'a Covers, &'a str);

impl Drop for Unlist<'_> {
    fn drop(&mut self) {
        lock(&self.0.making).remove(self.1);
    }
}

#[cfg(test)]
mod tests;
