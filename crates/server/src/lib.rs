//! Spindle's HTTP server.
//!
//! This crate owns the HTTP side: [`AppState`] (the library, the
//! [`Accounts`] store, the listening history, [`Config`], an injectable
//! [`Clock`]) and [`router`], which merges one router per API:
//! [`lastfm`] (Last.fm 2.0 at `/2.0/`), [`auth_page`] (the desktop-auth
//! approval page), [`as12`] (Audioscrobbler 1.2 at `/?hs=true`),
//! [`listenbrainz`] (ListenBrainz at `/1/…`). Later APIs (Subsonic,
//! streaming, the web UI) add their own module and merge beside these.
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
pub mod auth_page;
pub mod lastfm;
pub mod lfm_response;
mod link;
pub mod listenbrainz;
pub mod params;
pub mod scrobble;
mod state;
pub mod time;

use std::future::Future;
use std::net::SocketAddr;

pub use accounts::{AccountError, Accounts};
pub use state::{AppState, Clock, Config, ManualClock, NowPlaying, SystemClock};

/// Every API, merged.
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new()
        .merge(lastfm::router())
        .merge(auth_page::router())
        .merge(as12::router())
        .merge(listenbrainz::router())
        // Bodies are read with their own limit (config.max_body) by the
        // handlers, which answer in their API's error format.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state)
}

/// Serves until `shutdown` resolves, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state.clone());
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await?;
    state.flush_library_links();
    Ok(())
}
