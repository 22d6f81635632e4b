//! Spindle's HTTP server.
//!
//! This crate owns the running server: [`Server`] opens everything a
//! data dir holds (the library, the [`Accounts`] store, the listening
//! history), scans and watches the music folders, sets up the storage
//! tiers and the stream reader, and runs every background task under one
//! shutdown signal ([`Server::run`] joins them all before it returns).
//! [`AppState`] is what handlers share: the application core ([`App`],
//! from `spindle-app`: the library, accounts, listens, an injectable
//! [`Clock`], the music side ([`Music`]: folders, the
//! [`catalog::Catalog`] of songs, albums and artists, user stars and
//! playlists, the tiers), plays, now playing), which it derefs to, and
//! the adapters' own state: [`Config`], the stream [`stream::Reader`],
//! sessions, metrics, forwarding, the cluster. The core's services
//! (`scrobble`, `loves`, `import`, `fair`, …) are re-exported here under
//! the paths they always had; [`cover`] and [`transcode`] re-export the
//! core's cover art and transcoding services and add their HTTP answers
//! (validators, 304s, ranges, a live encode's body). [`router`]
//! merges one router per API: [`lastfm`] (Last.fm 2.0 at `/2.0/`, its
//! desktop-auth approval page, Audioscrobbler 1.2 at `/?hs=true`),
//! [`listenbrainz`] (ListenBrainz at `/1/…`), [`subsonic`] (the Subsonic
//! API at `/rest/…`, streaming through [`stream`] or, with tiers,
//! [`tiered`]), the [`web`] UI (with charts drawn by [`chart_svg`]) and
//! `/metrics` (for a Spindle user). Protocol details every API shares
//! have one implementation each: [`params`] (request parameters and
//! `api_sig`), [`stream::conditional`] (ranges and conditional
//! requests), [`time`] (dates), [`xml`] (escaping).
//!
//! It is *not* the storage: the library (`spindle-store`) and the history
//! (`spindle-listens`) are synchronous crates called on blocking threads.
//! It is not the core's services either (`spindle-app`), which never
//! name this crate.
//! It is not the CLI either: the binary turns its flags into a
//! [`ServerConfig`], calls [`Server::open`] and [`Server::run`], and
//! prints.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let server = spindle_server::Server::open(spindle_server::ServerConfig::new("data")).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! server.run(listener, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod auth_guard;
// The core's services, under the paths the adapters have always used.
pub use spindle_app::{
    accounts, backup, catalog, clock, fair, hash_pool, hot, link, loves, music, pins, plays, pull,
    scrobble, similar, time, upload, userdata, worker,
};
mod banner;
pub mod body;
pub mod chart_svg;
pub mod cluster;
pub mod correction_spool;
pub mod corrections;
pub mod cors;
pub mod cover;
mod expiry;
pub mod forward;
pub mod front;
#[cfg(test)]
mod hot_tests;
pub mod http;
pub mod import;
pub mod lastfm;
pub mod listenbrainz;
pub mod m3u;
pub mod metrics;
pub mod offline;
pub mod params;
pub mod proxy;
pub mod query_budget;
mod server;
pub mod settings;
pub mod share;
mod shutdown;
mod source;
mod state;
pub mod stream;
pub mod subsonic;
pub mod throttle;
pub mod tiered;
pub mod tls;
pub mod transcode;
pub mod verb;
pub mod web;
pub mod xml;

use std::future::Future;

pub use accounts::{AccountError, Accounts};
pub use music::{Music, MusicError};
pub use server::{OpenError, Opened, Server, ServerConfig};
pub use shutdown::shutdown_signal;
pub use state::{
    App, AppState, Clock, Config, CoreConfig, ManualClock, NowPlaying, StateParts, SystemClock,
    DEFAULT_SEND_QUEUE,
};

/// Every API, merged, over `state`.
pub fn router(state: AppState) -> axum::Router {
    let config = state.config.clone();
    let cluster = state.cluster.clone();
    let cors = std::sync::Arc::new(config.cors_origins.clone());
    let app = axum::Router::new()
        .merge(lastfm::router())
        .merge(listenbrainz::router())
        .merge(subsonic::router())
        .merge(share::router())
        .merge(web::router())
        .route("/metrics", axum::routing::get(metrics::page))
        // For health checks (the container's HEALTHCHECK): no login, no data.
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        // Bodies are read by the handlers through crate::body (per-API
        // limits, deadlines, a budget for all), which answer in their
        // API's error format.
        .layer(axum::extract::DefaultBodyLimit::disable())
        // Counts every request under its API for /metrics, and answers
        // the page at `/`.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::count,
        ))
        // In a cluster, writes that reach a replica go to the primary.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            cluster::route::layer,
        ))
        // CORS for the token-authenticated APIs (never /ui/), outside
        // the rest: a preflight is answered here, on a replica too.
        .layer(axum::middleware::from_fn(move |req, next| {
            cors::layer(cors.clone(), req, next)
        }))
        .with_state(state);
    // The base path and trusted proxies, before routing.
    front::wrap(app, &config, Some(cluster))
}

/// Serves HTTP over `state` until `shutdown` resolves, then finishes the
/// requests in flight (for at most [`SHUTDOWN_GRACE`]) and waits for the
/// accepted listens to be linked. Starts and stops no background task:
/// [`Server::run`] does, around this.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, state, None, shutdown).await
}

/// [`serve`], over TLS when `tls` is given ([`tls::Tls::acceptor`]).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    state: AppState,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let settings = http::ConnSettings::from(&*state.config);
    let app = router(state.clone());
    let queries = state.queries.clone();
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let sent = state.metrics.sendfile();
    let server = http::serve_connections_with(listener, app, settings, sent, tls, async move {
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
    let st = state.clone();
    let _ = spindle_app::offload::run(move || st.flush_library_links()).await;
    Ok(())
}

/// How long a shutdown waits for requests in flight.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
