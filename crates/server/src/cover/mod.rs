//! Cover art for songs, albums and artists, at the size a client asks
//! for: Subsonic's `getCoverArt` ([`crate::subsonic`]) and the web UI's
//! `/ui/cover/ID` ([`crate::web`]) both answer through `answer`.
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
//! At most [`MAX_CONCURRENT_RESIZES`] resizes run at once; the rest wait
//! their turn, so a page of 50 new covers cannot take every core or the
//! memory of 50 decodes. docs/cover-art.md describes the sources, the
//! cache's layout and the limits.

pub mod cache;
pub mod find;
pub mod initial;
pub mod resize;
mod serve;

use std::path::Path;
use std::sync::{Condvar, Mutex};

pub use cache::{DiskCache, COVER_CACHE_BUDGET, COVER_CACHE_DIR};
pub use find::{Candidate, Source};
pub use resize::{ImageError, MAX_COVER_PIXELS};
pub(crate) use serve::answer;

use crate::accounts::md5_hex;
use crate::catalog::Catalog;
use crate::music::Music;
use crate::state::lock;

/// Resizes that may run at once: 2. A resize of a JPEG cover takes a few
/// milliseconds and little memory (it is decoded at a reduced scale); a
/// large PNG can take a second and 150 MB, so two at once bound both the
/// cores and the memory covers can take.
pub const MAX_CONCURRENT_RESIZES: usize = 2;

/// How long a browser or app may reuse a cover without asking again: one
/// day. After that it revalidates with `If-None-Match` and gets a 304
/// unless the cover's files changed.
pub const COVER_MAX_AGE: u32 = 24 * 3600;

/// Changes when the covers Spindle makes change (filter, quality), so
/// ETags and cache keys of the old ones stop matching.
const RENDER_VERSION: u32 = 1;

/// Why a cover could not be sent.
#[derive(Debug, thiserror::Error)]
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

/// The cover art service: the disk cache and the resize gate. One per
/// server, in [`crate::AppState`].
pub struct Covers {
    cache: Option<DiskCache>,
    gate: Gate,
}

impl Covers {
    /// Covers resized on every request, nothing kept (tests, and a server
    /// whose cache folder cannot be used).
    pub fn without_cache() -> Covers {
        Covers {
            cache: None,
            gate: Gate::new(MAX_CONCURRENT_RESIZES),
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
            gate: Gate::new(MAX_CONCURRENT_RESIZES),
        }
    }

    /// The disk cache, if there is one.
    pub fn cache(&self) -> Option<&DiskCache> {
        self.cache.as_ref()
    }

    /// Where the cover of `id` (a song, `al-…` or `ar-…`) at `size`
    /// pixels (`None`: as it is) comes from, and its key. Stats files;
    /// reads no image. Call on a blocking thread.
    pub fn lookup(
        &self,
        music: &Music,
        cat: &Catalog,
        id: &str,
        size: Option<u32>,
    ) -> Result<Lookup, CoverError> {
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

    /// The bytes of the cover `l` describes: cached, resized, or the
    /// source as it is (see the module doc). Call on a blocking thread.
    pub fn render(&self, l: &Lookup) -> Result<Cover, CoverError> {
        if let (Some(_), Some(cache)) = (l.size, &self.cache) {
            if let Some(data) = cache.get(&l.key) {
                return Ok(Cover {
                    data,
                    mime: resize::Format::Jpeg.mime(),
                });
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
            let resized = {
                let _turn = self.gate.enter();
                resize::resize_to_jpeg(&bytes, size)
            };
            match resized {
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

/// A counting semaphore for blocking threads: at most `n` inside.
struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

struct Turn<'a>(&'a Gate);

impl Gate {
    fn new(n: usize) -> Gate {
        Gate {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    fn enter(&self) -> Turn<'_> {
        let mut free = lock(&self.free);
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Turn(self)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *lock(&self.0.free) += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests;
