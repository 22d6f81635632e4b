//! The catalog saved at a stop and loaded at the next start
//! (`crate::catalog::saved`), so the first requests after a start are
//! served from it while the refresher brings it up to date.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use spindle_store::Db;

use crate::catalog::saved::{self, SavedOf};
use crate::catalog::Catalog;
use crate::sync::lock;

use super::cache::{Built, Cache, Stamp};

impl Cache {
    /// What a catalog saved now, or loaded now, must be of.
    fn saved_of(&self, at: &spindle_store::Position) -> SavedOf {
        SavedOf::new(at, &self.roots, &self.opts.ignored_articles)
    }

    /// The saved catalog, when there is one of the library as it was
    /// opened: it becomes the current catalog (the refresher then brings
    /// in what changed since the library was opened). Whatever else is
    /// saved is ignored. Returns whether one was loaded.
    pub fn load_saved(&self, db: &Db) -> bool {
        let Some(path) = &self.saved else {
            return false;
        };
        let started = Instant::now();
        let opened = db.opened_at();
        let songs = match std::fs::read(path) {
            Ok(bytes) => saved::decode(&bytes, &self.saved_of(&opened)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
            Err(e) => {
                tracing::warn!(
                    "could not read the saved catalog {} ({e}); building it",
                    path.display()
                );
                return false;
            }
        };
        let Some(songs) = songs else {
            tracing::info!(
                "the saved catalog {} is not of this library as it opened (or is damaged); building it",
                path.display()
            );
            return false;
        };
        let cat = Catalog::from_songs(songs, self.opts.ignored_articles.clone());
        *lock(&self.saved_as) = Some(self.saved_of(&opened));
        tracing::info!(
            "catalog of {} songs loaded in {:.2} s",
            cat.songs.len(),
            started.elapsed().as_secs_f64()
        );
        let mut s = lock(&self.slot);
        if s.current.is_none() {
            s.current = Some(Built {
                stamp: Stamp {
                    version: self.version.load(Ordering::SeqCst),
                    changes: opened.changes,
                    entries: opened.entries,
                    properties: opened.properties,
                },
                checked: Instant::now(),
                cat: Arc::new(cat),
            });
        }
        true
    }

    /// Brings the catalog up to date and saves it, unless the library is
    /// read-only or the file already holds it. Call with no refresher
    /// running.
    pub fn save(&self, db: &Db) {
        let Some(path) = &self.saved else { return };
        if db.is_read_only() {
            return;
        }
        let cat = self.refresh(Some(db), None);
        let at = match db.position() {
            Ok(at) => at,
            Err(e) => {
                tracing::warn!(
                    "the catalog was not saved: the library's log could not be flushed ({e})"
                );
                return;
            }
        };
        let current = lock(&self.slot).current.as_ref().map(|b| b.stamp.changes);
        if current != Some(at.changes) {
            // A commit came between: the next start builds it.
            tracing::info!("the catalog was not saved: the library changed meanwhile");
            return;
        }
        let of = self.saved_of(&at);
        if lock(&self.saved_as).as_ref() == Some(&of) {
            return;
        }
        match saved::write(path, &saved::encode(&cat, &of)) {
            Ok(()) => *lock(&self.saved_as) = Some(of),
            Err(e) => tracing::warn!("could not save the catalog to {} ({e})", path.display()),
        }
    }
}
