//! The server's settings: one TOML file (`server.toml`), an environment
//! variable `SPINDLE_<SECTION>_<KEY>` for every key, and the flags of
//! `spindle serve`, resolved into what [`crate::Server`] needs
//! ([`Settings`], which makes a [`ServerConfig`]). Precedence: a flag over
//! the environment over the file over the default. `docs/configuration.md`
//! lists every key; `spindle config print-default` prints the file with
//! each key's documentation ([`default_file`]).
//!
//! Everything is checked at start: an unknown key or a value of the wrong
//! type in the file is an error naming the key and its line (the TOML
//! reader's spans); in the environment, one naming the variable. The
//! `[tiers]` section is `spindle-tiers`'s (`docs/tiers.md`) and checked by
//! it.
//!
//! `spindle serve`'s flags are [`Flags`] (flags.rs), which find the file
//! and lay themselves over it and the environment ([`Flags::settings`]).

pub mod flags;
mod layer;
mod render;
pub mod values;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use flags::{env_var, settings_path, Flags};
pub use layer::{KeyDoc, Layer};
pub use render::{default_file, render};
pub use values::LogFormat;

use crate::proxy::ProxyConfig;
use crate::server::ServerConfig;
use crate::state::Config;
use crate::stream::ReadEngine;
use crate::tls::TlsFiles;

/// The listen address without a setting: loopback only, Navidrome's port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:4533";

/// Why the settings could not be used. Each message names the file and
/// line, or the variable, or the keys involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    #[error("reading the settings file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The TOML reader's message: the line, the column, the key.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    #[error("environment variable {var}={value:?}: {message}")]
    Env {
        var: String,
        value: String,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
    /// A music folder set that is not a folder (a typo, an unmounted
    /// disk).
    #[error("music folder {}: not a folder", path.display())]
    NotAFolder { path: PathBuf },
    /// A flag of `spindle serve` with a bad value ([`Flags`]).
    #[error("--{flag}: {message}")]
    Flag { flag: &'static str, message: String },
    #[error(transparent)]
    Tiers(#[from] spindle_tiers::config::ConfigError),
    #[error(transparent)]
    Transcode(#[from] crate::transcode::config::ConfigError),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::config::ConfigError),
}

/// Every setting, resolved.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Settings {
    /// The file read, if any.
    pub file: Option<PathBuf>,
    /// The data dir, if set anywhere (else the binary's default).
    pub data_dir: Option<PathBuf>,
    pub listen: String,
    /// Music folders; empty: the XDG music folder, else a demo library
    /// ([`Settings::music_folders`]).
    pub music: Vec<PathBuf>,
    pub engine: ReadEngine,
    pub log_format: LogFormat,
    /// Certificate and key: the server speaks HTTPS.
    pub tls: Option<TlsFiles>,
    /// HTTP settings and limits (base path, proxies included).
    pub http: Config,
    pub tiers: Option<spindle_tiers::TiersConfig>,
    /// The `[cluster]` section (docs/cluster.md), if any.
    pub cluster: Option<crate::cluster::ClusterConfig>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            file: None,
            data_dir: None,
            listen: DEFAULT_LISTEN.to_owned(),
            music: Vec::new(),
            engine: ReadEngine::parse(crate::stream::DEFAULT_ENGINE).unwrap_or(ReadEngine::Tokio),
            log_format: LogFormat::Text,
            tls: None,
            http: Config::default(),
            tiers: None,
            cluster: None,
        }
    }
}

/// Reads `file` (if any), the environment through `env` (a variable's
/// value, or `None`), and lays `flags` over both.
pub fn load(
    file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    flags: Layer,
) -> Result<Settings, SettingsError> {
    let mut merged = Layer::default();
    let mut tiers = None;
    let mut transcode = None;
    let mut cluster = None;
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
            path: path.to_owned(),
            source,
        })?;
        merged = parse_file(&text, path)?;
        tiers = spindle_tiers::TiersConfig::parse(&text, path)?;
        transcode = Some(crate::transcode::TranscodeConfig::parse(&text, path)?);
        cluster = crate::cluster::ClusterConfig::parse(&text, path, tiers.as_ref())?;
    }
    merged.overlay(env_layer(env)?);
    merged.overlay(flags);
    let mut s = Settings::resolve(merged)?;
    s.file = file.map(Path::to_owned);
    s.tiers = tiers;
    s.cluster = cluster;
    if let Some(t) = transcode {
        s.http.transcode = t;
    }
    Ok(s)
}

/// The file's layer; an unknown key or a bad value is an error with its
/// line.
pub fn parse_file(text: &str, path: &Path) -> Result<Layer, SettingsError> {
    toml::from_str(text).map_err(|e| SettingsError::File {
        path: path.to_owned(),
        message: e.to_string().trim_end().to_owned(),
    })
}

/// The environment's layer: each key's `SPINDLE_…` variable, when set and
/// not empty. A value is read as TOML (`true`, `42`, `["a", "b"]`), else
/// as a string, else as a comma-separated list.
pub fn env_layer(env: &dyn Fn(&str) -> Option<String>) -> Result<Layer, SettingsError> {
    let mut out = Layer::default();
    for k in Layer::keys() {
        let var = k.env_var();
        let Some(raw) = env(&var).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let literal = toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"));
        let list = toml::Value::Array(
            raw.split(',')
                .map(|p| toml::Value::String(p.trim().to_owned()))
                .collect(),
        );
        let as_string = Layer::of_key(k.section, k.key, toml::Value::String(raw.clone()));
        let layer = literal
            .and_then(|v| Layer::of_key(k.section, k.key, v).ok())
            .map(Ok)
            .unwrap_or(as_string)
            .or_else(|e| Layer::of_key(k.section, k.key, list).map_err(|_| e));
        match layer {
            Ok(l) => out.overlay(l),
            Err(message) => {
                return Err(SettingsError::Env {
                    var,
                    value: raw,
                    message,
                })
            }
        }
    }
    Ok(out)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

impl Settings {
    /// The defaults with `l`'s keys laid over them, checked together.
    pub fn resolve(l: Layer) -> Result<Settings, SettingsError> {
        let mut s = Settings::default();
        let c = &mut s.http;
        s.data_dir = l.data_dir;
        let sv = l.server;
        if let Some(v) = sv.listen {
            s.listen = v;
        }
        s.music = sv.music.unwrap_or_default();
        if let Some(v) = sv.base_path {
            c.base_path = v.0;
        }
        c.public_url = sv.public_url.map(|u| u.0);
        if let Some(v) = sv.cors_origins {
            for o in &v {
                crate::cors::check_origin(o)
                    .map_err(|m| SettingsError::Invalid(format!("[server] cors_origins: {m}")))?;
            }
            c.cors_origins = crate::cors::CorsOrigins::from_list(&v);
        }
        if let Some(v) = sv.io_engine {
            s.engine = v.0;
        }
        if let Some(v) = sv.send_queue {
            c.send_queue = u32::try_from(v.0).map_err(|_| {
                SettingsError::Invalid(format!("[server] send_queue = {}: at most 4GiB", v.0))
            })?;
        }
        if let Some(v) = sv.header_timeout_secs {
            c.header_timeout = secs(v.max(1));
        }
        if let Some(v) = sv.write_timeout_secs {
            c.write_timeout = secs(v.max(1));
        }
        if let Some(v) = l.log.format {
            s.log_format = v;
        }
        s.tls = match (l.tls.cert, l.tls.key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            (Some(_), None) => return Err(SettingsError::Invalid(
                "[tls] cert is set but key is not: HTTPS needs both (SPINDLE_TLS_KEY, --tls-key)"
                    .into(),
            )),
            (None, Some(_)) => return Err(SettingsError::Invalid(
                "[tls] key is set but cert is not: HTTPS needs both (SPINDLE_TLS_CERT, --tls-cert)"
                    .into(),
            )),
        };
        c.proxy = ProxyConfig {
            trusted: l.proxy.trusted.unwrap_or_default(),
            user_header: l.proxy.user_header.map(|h| h.0),
        };
        if c.proxy.user_header.is_some() && c.proxy.trusted.is_empty() {
            return Err(SettingsError::Invalid(
                "[proxy] user_header is set but [proxy] trusted is empty: name the proxy \
                 addresses the header may come from"
                    .into(),
            ));
        }
        let lim = l.limits;
        if let Some(v) = lim.max_body {
            c.max_body = usize::try_from(v.0).unwrap_or(usize::MAX);
        }
        if let Some(v) = lim.body_budget {
            c.body_budget = usize::try_from(v.0).unwrap_or(usize::MAX);
        }
        if let Some(v) = lim.body_timeout_secs {
            c.body_timeout = secs(v.max(1));
        }
        if let Some(v) = lim.body_idle_timeout_secs {
            c.body_idle_timeout = secs(v.max(1));
        }
        if let Some(v) = lim.query_time_ms {
            c.query_time = Duration::from_millis(v.max(1));
        }
        if let Some(v) = lim.rate_limit {
            c.rate_limit = v;
        }
        if let Some(v) = lim.rate_window_secs {
            if v < 1 {
                return Err(SettingsError::Invalid(format!(
                    "[limits] rate_window_secs = {v}: a window lasts at least 1 second"
                )));
            }
            c.rate_window = v;
        }
        if let Some(v) = l.auth.hash_workers {
            if v < 1 {
                return Err(SettingsError::Invalid(
                    "[auth] hash_workers = 0: no password could ever be checked".into(),
                ));
            }
            c.auth.hash_workers = v;
        }
        if let Some(v) = l.auth.hash_queue {
            c.auth.hash_queue = v;
        }
        if let Some(v) = l.library.ignored_articles {
            c.ignored_articles = v;
        }
        let li = l.listens;
        if let Some(v) = li.min_timestamp {
            c.min_timestamp = v;
        }
        if let Some(v) = li.max_future_secs {
            c.max_future = v;
        }
        if let Some(v) = li.now_playing_ttl_secs {
            c.now_playing_ttl = v;
        }
        if let Some(v) = li.dedupe_window_secs {
            c.dedupe_window = v;
        }
        let fw = l.forward;
        c.forward.lastfm_api_key = fw.lastfm_api_key.unwrap_or_default();
        c.forward.lastfm_api_secret = fw.lastfm_api_secret.unwrap_or_default();
        if let Some(v) = fw.lastfm_url {
            c.forward.lastfm_url = v;
        }
        if let Some(v) = fw.listenbrainz_url {
            c.forward.listenbrainz_url = v;
        }
        c.forward.outbound =
            spindle_scrobble::outbound::Policy::guarded(&l.outbound.allow.unwrap_or_default())
                .map_err(|e| SettingsError::Invalid(format!("[outbound] allow: {e}")))?;
        Ok(s)
    }

    /// Every key with its value (the tiers excepted): what
    /// [`default_file`] prints for the defaults and `spindle config check`
    /// for the settings in effect.
    pub fn to_layer(&self) -> Layer {
        let c = &self.http;
        let mut l = Layer {
            data_dir: self.data_dir.clone(),
            ..Layer::default()
        };
        let sv = &mut l.server;
        sv.listen = Some(self.listen.clone());
        sv.music = Some(self.music.clone());
        sv.base_path = Some(values::BasePath(c.base_path.clone()));
        sv.public_url = c.public_url.clone().map(values::PublicUrl);
        sv.cors_origins = Some(c.cors_origins.to_list());
        sv.io_engine = Some(values::Engine(self.engine));
        sv.send_queue = Some(values::Size(u64::from(c.send_queue)));
        sv.header_timeout_secs = Some(c.header_timeout.as_secs());
        sv.write_timeout_secs = Some(c.write_timeout.as_secs());
        l.log.format = Some(self.log_format);
        if let Some(t) = &self.tls {
            l.tls.cert = Some(t.cert.clone());
            l.tls.key = Some(t.key.clone());
        }
        l.proxy.trusted = Some(c.proxy.trusted.clone());
        l.proxy.user_header = c.proxy.user_header.clone().map(values::HeaderName);
        let lim = &mut l.limits;
        lim.max_body = Some(values::Size(c.max_body as u64));
        lim.body_budget = Some(values::Size(c.body_budget as u64));
        lim.body_timeout_secs = Some(c.body_timeout.as_secs());
        lim.body_idle_timeout_secs = Some(c.body_idle_timeout.as_secs());
        lim.query_time_ms = Some(c.query_time.as_millis() as u64);
        lim.rate_limit = Some(c.rate_limit);
        lim.rate_window_secs = Some(c.rate_window);
        l.auth.hash_workers = Some(c.auth.hash_workers);
        l.auth.hash_queue = Some(c.auth.hash_queue);
        l.library.ignored_articles = Some(c.ignored_articles.clone());
        l.listens.min_timestamp = Some(c.min_timestamp);
        l.listens.max_future_secs = Some(c.max_future);
        l.listens.now_playing_ttl_secs = Some(c.now_playing_ttl);
        l.listens.dedupe_window_secs = Some(c.dedupe_window);
        let fw = &c.forward;
        l.forward.lastfm_api_key = Some(fw.lastfm_api_key.clone()).filter(|v| !v.is_empty());
        l.forward.lastfm_api_secret = Some(fw.lastfm_api_secret.clone()).filter(|v| !v.is_empty());
        l.forward.lastfm_url = Some(fw.lastfm_url.clone());
        l.forward.listenbrainz_url = Some(fw.listenbrainz_url.clone());
        l.outbound.allow = Some(fw.outbound.allowed());
        l
    }

    /// What [`crate::Server::open`] takes, over `data_dir` and `music`
    /// (the binary's choice when none was set).
    /// Transcodes are cached in `data_dir/transcode-cache` unless the
    /// `[transcode]` section says otherwise.
    pub fn server_config(&self, data_dir: &Path, music: Vec<PathBuf>) -> ServerConfig {
        ServerConfig {
            music,
            engine: self.engine,
            http: crate::transcode::with_cache_under(self.http.clone(), data_dir),
            tiers: self.tiers.clone(),
            cluster: self.cluster.clone(),
            tls: self.tls.clone(),
            ..ServerConfig::new(data_dir)
        }
    }
}

#[cfg(test)]
mod tests;
