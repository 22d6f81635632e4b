//! The settings file's keys, declared once: each section's struct (every
//! key optional, unknown keys refused), its documentation, its example,
//! and the environment variable of each key. A [`Layer`] is one source of
//! settings (the file, the environment, the flags); layers are laid over
//! each other ([`Layer::overlay`]) and the result resolved with the
//! defaults ([`super::Settings::resolve`]).
//!
//! To add a key: one line in the `sections!` call below (its doc comment
//! is what `spindle config print-default` prints above it), then read it in
//! `Settings::resolve` and write its default in `Settings::to_layer`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::values::{BasePath, Engine, HeaderName, LogFormat, PublicUrl, Size};
use crate::proxy::Cidr;

/// One key, for the default file, the docs and the environment.
#[derive(Debug, Clone, Copy)]
pub struct KeyDoc {
    /// The section (`server`, `tls`, …); empty for a top-level key.
    pub section: &'static str,
    pub key: &'static str,
    /// What the key does, one or more lines.
    pub doc: &'static str,
    /// A value to show, as TOML, for a key without a default.
    pub example: &'static str,
}

impl KeyDoc {
    /// `SPINDLE_<SECTION>_<KEY>`, upper case (`SPINDLE_DATA_DIR` for the
    /// top-level `data_dir`).
    pub fn env_var(&self) -> String {
        let mut v = String::from("SPINDLE_");
        if !self.section.is_empty() {
            v.push_str(self.section);
            v.push('_');
        }
        v.push_str(self.key);
        v.to_ascii_uppercase()
    }
}

/// Declares the sections: `field "name" Struct { /// doc  key: Type = "example", … }`.
macro_rules! sections {
    ($( $field:ident $name:literal $ty:ident {
        $( $(#[doc = $doc:literal])+ $key:ident : $t:ty = $example:literal ),* $(,)?
    } )*) => {
        $(
            #[doc = concat!("The `[", $name, "]` section.")]
            #[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
            #[serde(deny_unknown_fields)]
            pub struct $ty {
                $(
                    $(#[doc = $doc])+
                    #[serde(default, skip_serializing_if = "Option::is_none")]
                    pub $key: Option<$t>,
                )*
            }

            impl $ty {
                /// Every key of the section.
                pub const KEYS: &'static [KeyDoc] = &[$(KeyDoc {
                    section: $name,
                    key: stringify!($key),
                    doc: concat!($($doc, "\n"),+),
                    example: $example,
                }),*];

                fn overlay(&mut self, top: $ty) {
                    $(if top.$key.is_some() { self.$key = top.$key; })*
                }
            }
        )*

        /// One source of settings: every key optional.
        #[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct Layer {
            /// Where the library, listens, accounts and tiers' state live.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub data_dir: Option<PathBuf>,
            $(
                #[serde(default)]
                pub $field: $ty,
            )*
            /// Storage tiers (`docs/tiers.md`), read by `spindle-tiers`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub tiers: Option<toml::Table>,
            /// Transcoding (`docs/transcoding.md`), read by
            /// [`crate::transcode::TranscodeConfig::parse`].
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub transcode: Option<toml::Table>,
            /// The cluster (`docs/cluster.md`), read by
            /// [`crate::cluster::ClusterConfig::parse`].
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub cluster: Option<toml::Table>,
        }

        impl Layer {
            /// The section names, in file order.
            pub const SECTIONS: &'static [&'static str] = &[$($name),*];

            /// Every key, in file order (the top-level `data_dir` first).
            pub fn keys() -> Vec<KeyDoc> {
                let mut v = vec![DATA_DIR];
                $(v.extend_from_slice($ty::KEYS);)*
                v
            }

            /// `top`'s keys replace this layer's.
            pub fn overlay(&mut self, top: Layer) {
                if top.data_dir.is_some() {
                    self.data_dir = top.data_dir;
                }
                $(self.$field.overlay(top.$field);)*
                if top.tiers.is_some() {
                    self.tiers = top.tiers;
                }
                if top.transcode.is_some() {
                    self.transcode = top.transcode;
                }
                if top.cluster.is_some() {
                    self.cluster = top.cluster;
                }
            }

            /// The layer of one key set to `value` (`Err`: the reader's
            /// message).
            pub(super) fn of_key(section: &str, key: &str, value: toml::Value) -> Result<Layer, String> {
                let mut t = toml::Table::new();
                t.insert(key.to_owned(), value);
                let mut l = Layer::default();
                match section {
                    "" => {
                        l = Layer::deserialize(toml::Value::Table(t)).map_err(|e| e.message().to_owned())?;
                    }
                    $($name => {
                        l.$field = $ty::deserialize(toml::Value::Table(t)).map_err(|e| e.message().to_owned())?;
                    })*
                    _ => return Err(format!("no section [{section}]")),
                }
                Ok(l)
            }
        }
    };
}

const DATA_DIR: KeyDoc = KeyDoc {
    section: "",
    key: "data_dir",
    doc: " Where the library, the listening history, the accounts and the\n tiers' state live (default: $XDG_DATA_HOME/spindle, i.e.\n ~/.local/share/spindle). Flag: --data-dir.\n",
    example: "\"/var/lib/spindle\"",
};

sections! {
    server "server" Server {
        /// The address to listen on: IP:PORT, or HOST:PORT. Flag: --listen.
        listen: String = "\"0.0.0.0:4533\"",
        /// Music folders to serve. None: the XDG music folder if it exists,
        /// else a demo library in the data dir. Flag: --music (repeatable);
        /// environment: comma-separated, or a TOML array.
        music: Vec<PathBuf> = "[\"/srv/music\"]",
        /// Serve every route under this URL path, e.g. "/music" behind a
        /// reverse proxy at https://example.org/music/. Empty: the root.
        /// Flag: --base-path.
        base_path: BasePath = "\"/music\"",
        /// The URL clients reach the server by, base path included
        /// (https://example.org/music). Used for the Audioscrobbler 1.2
        /// handshake's URLs; an https:// URL makes the web session cookie
        /// Secure. Unset: taken from each request. Flag: --public-url.
        public_url: PublicUrl = "\"https://music.example.org\"",
        /// Origins whose web pages may call the Subsonic, ListenBrainz and
        /// Last.fm APIs (CORS): "*" any (they carry their own credentials),
        /// or a list such as ["https://app.example.org"]; [] none. Never the
        /// web UI's routes.
        cors_origins: Vec<String> = "[\"*\"]",
        /// How streams read files: tokio, psync, uring or uring-sqpoll
        /// (io_uring falls back to psync where it is unavailable).
        /// Flag: --io-engine.
        io_engine: Engine = "\"psync\"",
        /// The most a connection keeps queued in the kernel beyond what the
        /// client's TCP window takes (TCP_NOTSENT_LOWAT); 0 leaves the
        /// kernel's default. Flag: --send-queue-kib.
        send_queue: Size = "\"128KiB\"",
        /// Seconds a client may take to send a request's head; also how long
        /// an idle keep-alive connection stays open.
        header_timeout_secs: u64 = "30",
        /// Seconds a response may wait on a client that reads nothing before
        /// the connection is closed.
        write_timeout_secs: u64 = "60",
    }
    log "log" Log {
        /// The log on stderr: "text" (spindle: … lines) or "json" (one object
        /// per line). The level filter is the environment variable
        /// SPINDLE_LOG (else RUST_LOG), e.g. "debug". Flag: --log-format.
        format: LogFormat = "\"json\"",
    }
    tls "tls" Tls {
        /// PEM file of the certificate chain (server certificate first).
        /// With key set, the server speaks HTTPS only; SIGHUP reloads both
        /// files (new connections get the new certificate). Flag: --tls-cert.
        cert: PathBuf = "\"/etc/spindle/tls/fullchain.pem\"",
        /// PEM file of the certificate's private key (PKCS#8, PKCS#1 or
        /// SEC1). Flag: --tls-key.
        key: PathBuf = "\"/etc/spindle/tls/privkey.pem\"",
    }
    proxy "proxy" Proxy {
        /// Reverse proxies trusted to say who the client is: addresses or
        /// CIDR blocks. From these peers only, X-Forwarded-For, -Proto, -Host
        /// and Forwarded (RFC 7239) are believed. Flag: --trusted-proxy
        /// (repeatable); environment: comma-separated.
        trusted: Vec<Cidr> = "[\"127.0.0.1\", \"10.0.0.0/8\"]",
        /// A header a trusted proxy sets to the name of the user it
        /// authenticated (single sign-on), e.g. "Remote-User". Requests from
        /// trusted proxies with it are logged in as that user (who must
        /// exist) in the web UI and the Subsonic API. Unset: off.
        user_header: HeaderName = "\"Remote-User\"",
    }
    limits "limits" Limits {
        /// Largest ListenBrainz submit body.
        max_body: Size = "\"4MiB\"",
        /// The most bytes of request bodies buffered at once, all
        /// connections together.
        body_budget: Size = "\"64MiB\"",
        /// Seconds a request body may take to arrive, whole.
        body_timeout_secs: u64 = "30",
        /// Seconds a request body may pause with no bytes.
        body_idle_timeout_secs: u64 = "10",
        /// Milliseconds one search from the network may run.
        query_time_ms: u64 = "2000",
        /// Scrobble API requests allowed per client address per window.
        rate_limit: u32 = "20000",
        /// Length of a rate-limit window, seconds.
        rate_window_secs: i64 = "10",
    }
    auth "auth" Auth {
        /// Password (Argon2) checks run at once.
        hash_workers: usize = "2",
        /// Password checks waiting at most; more are answered "busy".
        hash_queue: usize = "64",
    }
    library "library" Library {
        /// Leading words sort names leave out ("The Beatles" sorts as
        /// "Beatles"), compared caselessly; Subsonic's ignoredArticles.
        ignored_articles: Vec<String> = "[\"The\", \"A\", \"An\", \"El\", \"La\", \"Las\", \"Le\", \"Les\", \"Los\", \"Die\", \"Das\", \"Der\"]",
    }
    listens "listens" Listens {
        /// Earliest scrobble timestamp accepted, UNIX seconds (2002-10-01).
        min_timestamp: i64 = "1033430400",
        /// How far into the future a scrobble may be, seconds.
        max_future_secs: i64 = "3600",
        /// How long a now-playing lasts when the client sent no duration,
        /// seconds.
        now_playing_ttl_secs: i64 = "600",
        /// Listens of the same track (same MusicBrainz id, or same artist
        /// and title) by the same user that start at most this many
        /// seconds apart, or a tenth of the track's length when longer
        /// (but under half of it, so a track on repeat counts each time),
        /// are one play sent twice (by two players, say); 0: only the same
        /// second.
        dedupe_window_secs: u64 = "30",
    }
    forward "forward" Forward {
        /// The Last.fm API key of the desktop flow that links a user's
        /// Last.fm-compatible account, when the link names none (make one at
        /// https://www.last.fm/api/account/create; for another Spindle
        /// server, `spindle apikey add` there).
        lastfm_api_key: String = "\"0123456789abcdef0123456789abcdef\"",
        /// The secret of lastfm_api_key.
        lastfm_api_secret: String = "\"fedcba9876543210fedcba9876543210\"",
        /// The Last.fm-compatible API a link goes to when it names none.
        lastfm_url: String = "\"https://ws.audioscrobbler.com/2.0/\"",
        /// The ListenBrainz-compatible API a link goes to when it names none.
        listenbrainz_url: String = "\"https://api.listenbrainz.org\"",
    }
    outbound "outbound" Outbound {
        /// Hosts and address ranges that URLs users give (forwarding
        /// links, pulls) may reach although they are not on the public
        /// internet: host names as written in the URL, addresses, or CIDR
        /// ranges. Everything else that is loopback, private, link-local,
        /// unique-local, multicast or this machine is refused.
        allow: Vec<String> = "[\"maloja.lan\", \"192.168.1.0/24\"]",
    }
}
