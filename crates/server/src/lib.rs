//! Spindle's HTTP server.
//!
//! This crate owns the HTTP side: [`AppState`] (the library, the
//! [`Accounts`] store, the listening history, [`Config`], an injectable
//! [`Clock`]) and [`router`], which merges one router per API:
//! [`lastfm`] (Last.fm 2.0 at `/2.0/`), [`auth_page`] (the desktop-auth
//! approval page), [`as12`] (Audioscrobbler 1.2 at `/?hs=true`),
//! [`listenbrainz`] (ListenBrainz at `/1/…`), [`subsonic`] (the Subsonic
//! API at `/rest/…`, streaming through [`stream`]), the [`web`] UI (with
//! [`charts`] drawn as SVG) and `/metrics` (for a Spindle user). The
//! music side — folders, the [`catalog::Catalog`] of songs, albums and
//! artists, user stars and playlists — is a [`Music`] passed to
//! [`router_with`] / [`serve_with`].
//!
//! It is *not* the storage: the library (`spindle-store`) and the history
//! (`spindle-listens`) are synchronous crates called on blocking threads.
//! It is not the CLI either; the binary builds a [`Config`] and calls
//! [`serve`].
//!
//! ```no_run
//! # async fn f(state: spindle_server::AppState) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! spindle_server::serve(listener, state, std::future::pending()).await
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod accounts;
pub mod as12;
pub mod auth_guard;
pub mod auth_page;
pub mod body;
pub mod catalog;
pub mod charts;
mod expiry;
pub mod hash_pool;
pub mod http;
pub mod lastfm;
pub mod lfm_response;
mod link;
pub mod listenbrainz;
pub mod metrics;
pub mod music;
pub mod params;
pub mod query_budget;
pub mod scrobble;
mod state;
pub mod stream;
pub mod subsonic;
pub mod throttle;
pub mod tiered;
pub mod time;
pub mod userdata;
pub mod web;

use std::future::Future;
use std::sync::Arc;

pub use accounts::{AccountError, Accounts};
pub use music::{Music, MusicError};
pub use state::{
    AppState, Clock, Config, ManualClock, NowPlaying, SystemClock, DEFAULT_SEND_QUEUE,
};

/// Every API, merged, with no music folders.
pub fn router(state: AppState) -> axum::Router {
    router_with(state, Arc::new(Music::none()))
}

/// Every API, merged, serving the music of `music`.
pub fn router_with(state: AppState, music: Arc<Music>) -> axum::Router {
    axum::Router::new()
        .merge(lastfm::router())
        .merge(auth_page::router())
        .merge(as12::router())
        .merge(listenbrainz::router())
        .merge(subsonic::router())
        .merge(web::router())
        .route("/metrics", axum::routing::get(metrics::page))
        // Bodies are read by the handlers through crate::body (per-API
        // limits, deadlines, a budget for all), which answer in their
        // API's error format.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn(web::index_or_next))
        // Counts every request under its API for /metrics.
        .layer(axum::middleware::from_fn(metrics::count))
        .layer(axum::Extension(music))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, state, Arc::new(Music::none()), shutdown).await
}

/// [`serve`] with music folders: streaming and the Subsonic API.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    state: AppState,
    music: Arc<Music>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let settings = http::ConnSettings::from(&*state.config);
    let app = router_with(state.clone(), music);
    let queries = state.queries.clone();
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let server = http::serve_connections(listener, app, settings, async move {
        shutdown.await;
        // Running searches stop now, not at the end of their budget.
        queries.cancel_all();
        let _ = stopping_tx.send(());
    });
    // In-flight requests get SHUTDOWN_GRACE to finish; streams to clients
    // that read slowly (or not at all) are cut after that.
    let grace = async move {
        if stopping_rx.await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        r = server => r?,
        () = grace => {}
    }
    state.flush_library_links();
    Ok(())
}

/// How long a shutdown waits for requests in flight.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
