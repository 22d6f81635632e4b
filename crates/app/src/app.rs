//! The core's state, in one [`App`]: the library, accounts, listens, the
//! core's settings ([`CoreConfig`]), the clock, the music side
//! ([`Music`]), per-user plays, the library linker, the storage tiers'
//! listen feed, similar artists, now playing, the hook to forwarding
//! ([`Forwarding`]) and the import spool. Every service of the core takes an `&App` (or the
//! part of it it needs); a protocol adapter's state holds one and adds
//! what only that adapter uses. Background threads it starts (the
//! library linker, the tiers' listen feed, the catalog's refresher) stop
//! in [`App::stop_background`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use spindle_listens::{Listen, Listens};
use spindle_store::Db;

use crate::accounts::Accounts;
use crate::clock::Clock;
use crate::hot::TierFeed;
use crate::link::Linker;
use crate::music::Music;
use crate::plays::Plays;
use crate::similar::SimilarCache;
use crate::sync::lock;

/// The settings the core's services read (the server's settings file
/// holds them beside its own, in the same sections as always).
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// Earliest scrobble timestamp accepted (ListenBrainz's
    /// `LISTEN_MINIMUM_TS`, 2002-10-01).
    pub min_timestamp: i64,
    /// How far into the future a scrobble may be, seconds.
    pub max_future: i64,
    /// How long a now-playing lasts when the client sent no duration.
    pub now_playing_ttl: i64,
    /// Listens of the same track by the same user starting this many
    /// seconds apart or less (or a tenth of the track's length) are one
    /// play sent twice (`[listens] dedupe_window_secs`).
    pub dedupe_window: u64,
    /// Leading words sort names leave out ("The Beatles" sorts as
    /// "Beatles"), compared caselessly
    /// ([`crate::catalog::DEFAULT_IGNORED_ARTICLES`]); Subsonic's
    /// `ignoredArticles` and every `sortName` follow it.
    pub ignored_articles: Vec<String>,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            min_timestamp: 1_033_430_400,
            max_future: 3600,
            now_playing_ttl: 600,
            dedupe_window: spindle_listens::DEFAULT_DEDUPE_WINDOW.as_secs(),
            ignored_articles: crate::catalog::DEFAULT_IGNORED_ARTICLES
                .iter()
                .map(|a| (*a).to_owned())
                .collect(),
        }
    }
}

/// What the core tells forwarding to linked services (the server's
/// `forward`, which implements it): the history grew, a user plays
/// something now. The core never names the forwarding itself.
pub trait Forwarding: Send + Sync {
    /// The listens log has grown (after a durable write): the feeders
    /// read what is new.
    fn wake(&self);
    /// `listen.user` plays `listen` now (once per track).
    fn now_playing(&self, listen: &Listen);
}

/// No forwarding: what an [`App`] starts with.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoForwarding;

impl Forwarding for NoForwarding {
    fn wake(&self) {}
    fn now_playing(&self, _listen: &Listen) {}
}

/// Something a user is playing now, whichever API reported it. There is
/// one per user (a new report replaces it) and one rule for how long it
/// lasts: from the report, the track's length (at least 30 s) when it is
/// known, else [`CoreConfig::now_playing_ttl`]; a scrobble of the same
/// track by the same user ends it sooner.
#[derive(Debug, Clone)]
pub struct NowPlaying {
    pub listen: Listen,
    /// The library song (entry id), when the report named one (Subsonic
    /// and the web player do): Subsonic's `getNowPlaying` lists these.
    pub song: Option<u32>,
    /// When it was reported, UNIX seconds.
    pub since: i64,
    pub expires: i64,
}

/// The core's shared state. Cheap to clone (every part is shared); the
/// server keeps one in an `Arc`.
#[derive(Clone)]
pub struct App {
    pub db: Arc<Db>,
    pub accounts: Arc<Accounts>,
    pub listens: Arc<Listens>,
    pub config: Arc<CoreConfig>,
    pub clock: Arc<dyn Clock>,
    /// The music folders, the catalog cache, user data and the storage
    /// tiers ([`App::set_music`]; none by default).
    pub music: Arc<Music>,
    /// Play counts and last plays per user ([`crate::plays`]).
    pub plays: Arc<Plays>,
    /// Links accepted listens to library entries ([`crate::link`]).
    pub linker: Arc<Linker>,
    /// Where accepted listens raise popularity, when the music side has
    /// storage tiers ([`crate::hot`]).
    pub feed: Option<Arc<TierFeed>>,
    /// Similar artists from co-listening and genres, per catalog and
    /// history size.
    pub similar: Arc<SimilarCache>,
    /// user → what they play now (see [`NowPlaying`] for how long).
    pub now_playing: Arc<Mutex<HashMap<String, NowPlaying>>>,
    /// Forwarding to each user's linked services ([`NoForwarding`] until
    /// [`App::set_forwarding`]).
    pub forwarding: Arc<dyn Forwarding>,
    /// The import spool (`DATA_DIR/imports/`, [`crate::import`]); none
    /// until [`App::set_import_spool`].
    pub imports: Option<Arc<crate::import::Spool>>,
    /// The thread writing the history's checkpoints
    /// (`docs/listens-checkpoint.md`), while the core runs.
    checkpoints: Arc<Mutex<Option<spindle_listens::Checkpointer>>>,
}

impl App {
    /// The core over an open library, accounts and listens, with no
    /// music folders (user data in memory) and no forwarding. Builds
    /// every user's plays from the history. Starts no thread: the owner
    /// of the lifecycle calls [`App::start`] once the core is set up and
    /// [`App::stop_background`] at the end.
    pub fn new(
        db: Arc<Db>,
        accounts: Arc<Accounts>,
        listens: Arc<Listens>,
        config: CoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let plays = Arc::new(Plays::build(&listens, &db.read(), &accounts.user_names()));
        let linker = Arc::new(crate::link::linker(db.clone(), plays.clone()));
        App {
            db,
            accounts,
            listens,
            config: Arc::new(config),
            clock,
            music: Arc::new(Music::none()),
            plays,
            linker,
            feed: None,
            similar: Arc::default(),
            now_playing: Arc::default(),
            forwarding: Arc::new(NoForwarding),
            imports: None,
            checkpoints: Arc::default(),
        }
    }

    /// Serves `music`: its folders, user data and, when it has storage
    /// tiers, feeds every accepted listen to their popularity
    /// ([`TierFeed`]). Call before the core is shared and started.
    pub fn set_music(&mut self, music: Music) {
        if let Some(old) = self.feed.take() {
            old.stop();
        }
        self.feed = music.tiers().map(|t| {
            Arc::new(crate::hot::feed(
                self.db.clone(),
                t.clone(),
                music.roots().to_vec(),
            ))
        });
        self.music = Arc::new(music);
    }

    /// [`App::set_music`], for a builder.
    pub fn with_music(mut self, music: Music) -> Self {
        self.set_music(music);
        self
    }

    /// Tells `forwarding` of every durable write and now playing.
    pub fn set_forwarding(&mut self, forwarding: Arc<dyn Forwarding>) {
        self.forwarding = forwarding;
    }

    /// The storage tiers, if the music side has them.
    pub fn tiers(&self) -> Option<&Arc<spindle_tiers::Tiers>> {
        self.music.tiers()
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// Waits until every listen accepted so far has been linked to the
    /// library and fed to the storage tiers (for tests and shutdown).
    pub fn flush_library_links(&self) {
        self.linker.flush();
        if let Some(feed) = &self.feed {
            feed.flush();
        }
    }

    /// Starts the core's background threads: the library linker, the
    /// tiers' listen feed, the catalog's refresher (which builds the
    /// first catalog at once) and the history's checkpoints (so the next
    /// start loads them instead of replaying the whole log). What was sent to the linker and the feed
    /// before is handled first. Until then listens are stored and queued
    /// but not linked, and requests build the catalog themselves.
    /// Starting twice does nothing.
    pub fn start(&self) {
        self.linker.start();
        if let Some(feed) = &self.feed {
            feed.start();
        }
        self.music.start_refresher(self.db.clone());
        let mut cp = lock(&self.checkpoints);
        if cp.is_none() {
            match self
                .listens
                .start_checkpoints(spindle_listens::CheckpointPolicy::default())
            {
                Ok(c) => *cp = Some(c),
                Err(e) => tracing::warn!(
                    "could not start the history's checkpoint thread ({e}); the next start replays the whole log"
                ),
            }
        }
    }

    /// Stops the background threads [`App::start`] started (the catalog's
    /// refresher, the library linker, the tiers' listen feed) once they
    /// have handled every listen sent so far, and joins them. Listens
    /// accepted afterwards are stored but no longer linked. Blocks: call
    /// from a blocking thread, once nothing submits any more.
    pub fn stop_background(&self) {
        self.music.stop_refresher();
        self.linker.stop();
        if let Some(feed) = &self.feed {
            feed.stop();
        }
        // Last: a checkpoint of everything the history took.
        let cp = lock(&self.checkpoints).take();
        if let Some(e) = cp.and_then(spindle_listens::Checkpointer::stop) {
            tracing::warn!("the history's last checkpoint was not written ({e}); the next start replays more of the log");
        }
    }

    /// Records what `listen.user` plays now, replacing what they played
    /// before.
    pub fn set_now_playing(&self, listen: Listen) {
        self.put_now_playing(listen, None);
    }

    /// [`App::set_now_playing`] of a library song (entry id `song`):
    /// Subsonic's and the web player's reports, which `getNowPlaying` lists.
    pub fn set_now_playing_song(&self, listen: Listen, song: u32) {
        self.put_now_playing(listen, Some(song));
    }

    fn put_now_playing(&self, listen: Listen, song: Option<u32>) {
        let ttl = listen
            .duration
            .map_or(self.config.now_playing_ttl, |d| i64::from(d).max(30));
        let since = self.now();
        let np = NowPlaying {
            song,
            since,
            expires: since + ttl,
            listen,
        };
        let old = lock(&self.now_playing).insert(np.listen.user.clone(), np.clone());
        // Forwarded once per track: a repeat of the same one (a player's
        // refresh, or the echo of two servers linked to each other) is not.
        let repeat = old.is_some_and(|o| {
            o.expires > since
                && o.listen.artist == np.listen.artist
                && o.listen.title == np.listen.title
        });
        if !repeat {
            self.forwarding.now_playing(&np.listen);
        }
    }

    /// What `user` plays now, if it has not expired.
    pub fn now_playing(&self, user: &str) -> Option<Listen> {
        let now = self.now();
        let mut np = lock(&self.now_playing);
        match np.get(user) {
            Some(p) if p.expires > now => Some(p.listen.clone()),
            Some(_) => {
                np.remove(user);
                None
            }
            None => None,
        }
    }

    /// Every user's unexpired now-playing that names a library song,
    /// sorted by user (Subsonic's `getNowPlaying`).
    pub fn now_playing_songs(&self) -> Vec<NowPlaying> {
        let now = self.now();
        let mut np = lock(&self.now_playing);
        np.retain(|_, p| p.expires > now);
        let mut v: Vec<NowPlaying> = np.values().filter(|p| p.song.is_some()).cloned().collect();
        v.sort_by(|a, b| a.listen.user.cmp(&b.listen.user));
        v
    }

    /// A scrobble ends the now-playing of the same track (one lock for a
    /// batch).
    pub fn clear_now_playing_of<'a>(&self, listens: impl IntoIterator<Item = &'a Listen>) {
        let mut np = lock(&self.now_playing);
        if np.is_empty() {
            return;
        }
        for l in listens {
            if let Some(p) = np.get(&l.user) {
                if p.listen.artist == l.artist && p.listen.title == l.title {
                    np.remove(&l.user);
                }
            }
        }
    }
}

#[cfg(any(test, feature = "testkit"))]
impl App {
    /// A core for tests over an empty library, accounts and listens in
    /// `data` (`lib`, `accounts`, `l`), its clock at `now`.
    #[allow(clippy::unwrap_used, reason = "a test fixture")]
    pub fn in_dir(data: &std::path::Path, now: i64) -> App {
        let (listens, _) = Listens::open(&data.join("l")).unwrap();
        App::new(
            Arc::new(Db::open(data.join("lib")).unwrap()),
            Arc::new(Accounts::open(&data.join("accounts")).unwrap()),
            Arc::new(listens),
            CoreConfig::default(),
            Arc::new(crate::clock::ManualClock::new(now)),
        )
        .started()
    }

    /// [`App::start`], for a test's builder.
    pub fn started(self) -> App {
        self.start();
        self
    }
}
