//! The scrobbler's configuration (`$XDG_CONFIG_HOME/spindle/scrobble.toml`),
//! where its files live, and the stored credentials.
//!
//! ```toml
//! artists = "join"          # "join" ("A, B") or "first"
//! no_length = 240           # seconds of listening, or "never"
//!
//! [players]
//! allow = []                # regexes; empty: every player
//! ignore = ["^kdeconnect"]  # regexes, matched against Identity and bus name
//! ignore_browsers = true    # Firefox, Chromium & co. (tab titles, no length)
//!
//! [[cleanup]]               # regex clean-up of metadata, in order
//! field = "title"           # title, artist or album
//! pattern = " - Remaster(ed)?( \\d{4})?$"
//! replace = ""
//!
//! [[service]]
//! name = "lastfm"
//! kind = "lastfm"
//! api_key = "…"
//! api_secret = "…"
//!
//! [[service]]
//! name = "home"
//! kind = "spindle"          # a Spindle server: Last.fm API with a key, else ListenBrainz with a token
//! url = "http://music.local:4533"
//! api_key = "…"             # from `spindle apikey add`
//! api_secret = "…"
//!
//! [[service]]
//! name = "listenbrainz"
//! kind = "listenbrainz"     # token via `spindle scrobble auth listenbrainz`
//! ```

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

use crate::session::{NoLength, Rules};
use crate::track::{ArtistStyle, Track};

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: bad regex {pattern:?}: {message}")]
    Regex {
        path: PathBuf,
        pattern: String,
        message: String,
    },
    #[error("no service named {0:?} in the configuration")]
    NoService(String),
}

/// The protocol a service speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Last.fm 2.0 (Last.fm, Libre.fm, any compatible `url`).
    Lastfm,
    /// ListenBrainz (listenbrainz.org, any compatible `url`).
    Listenbrainz,
    /// A Spindle server at `url`: its Last.fm API when `api_key` is set,
    /// else its ListenBrainz API.
    Spindle,
}

/// One `[[service]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub name: String,
    pub kind: Kind,
    #[serde(default)]
    pub url: Option<String>,
    /// Where users approve the desktop token (Last.fm: `https://www.last.fm/api/auth/`).
    #[serde(default)]
    pub auth_url: Option<String>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub api_secret: Option<String>,
    /// A ListenBrainz token written here rather than stored by `auth`.
    #[serde(default)]
    pub token: Option<String>,
}

/// Which protocol and endpoints a service resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    LastFm {
        url: String,
        auth_url: String,
        api_key: String,
        api_secret: String,
    },
    ListenBrainz {
        url: String,
    },
}

impl Service {
    pub fn endpoint(&self) -> Endpoint {
        let root = self
            .url
            .as_deref()
            .map(|u| u.trim_end_matches('/').to_owned());
        let lastfm = |url: String, auth: String| Endpoint::LastFm {
            url,
            auth_url: self.auth_url.clone().unwrap_or(auth),
            api_key: self.api_key.clone().unwrap_or_default(),
            api_secret: self.api_secret.clone().unwrap_or_default(),
        };
        match self.kind {
            Kind::Lastfm => match root {
                None => lastfm(
                    "https://ws.audioscrobbler.com/2.0/".into(),
                    "https://www.last.fm/api/auth/".into(),
                ),
                Some(r) => {
                    let host = r.trim_end_matches("/2.0").to_owned();
                    lastfm(format!("{host}/2.0/"), format!("{host}/api/auth/"))
                }
            },
            Kind::Listenbrainz => Endpoint::ListenBrainz {
                url: root.unwrap_or_else(|| "https://api.listenbrainz.org".into()),
            },
            Kind::Spindle => {
                let r = root.unwrap_or_else(|| "http://127.0.0.1:4533".into());
                if self.api_key.is_some() {
                    lastfm(format!("{r}/2.0/"), format!("{r}/api/auth/"))
                } else {
                    Endpoint::ListenBrainz { url: r }
                }
            }
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlayersRaw {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ignore: Vec<String>,
    #[serde(default)]
    ignore_browsers: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CleanupRaw {
    field: Field,
    pattern: String,
    #[serde(default)]
    replace: String,
}

/// Which metadata field a clean-up rule rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Title,
    Artist,
    Album,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum NoLengthRaw {
    Secs(u64),
    Word(String),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    artists: Option<ArtistStyle>,
    #[serde(default)]
    no_length: Option<NoLengthRaw>,
    #[serde(default)]
    players: PlayersRaw,
    #[serde(default)]
    cleanup: Vec<CleanupRaw>,
    #[serde(default)]
    service: Vec<Service>,
}

/// The configuration, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub artists: ArtistStyle,
    pub rules: Rules,
    pub filter: PlayerFilter,
    pub cleanup: Vec<(Field, Regex, String)>,
    pub services: Vec<Service>,
}

/// Browsers' MPRIS players: tab titles as titles, empty artists, no length.
const BROWSERS: &str = r"(?i)^(firefox|mozilla firefox|librewolf|chromium|chrome|google chrome|google-chrome|brave|vivaldi|opera|microsoft edge|msedge|edge|epiphany|plasma-browser-integration|falkon|qutebrowser)\b";

/// Allow and ignore lists, matched against a player's Identity and its
/// bus name without the `.instanceN` suffix.
#[derive(Debug, Clone)]
pub struct PlayerFilter {
    allow: Vec<Regex>,
    ignore: Vec<Regex>,
}

/// `org.mpris.MediaPlayer2.vlc.instance7389` → `vlc`.
pub fn player_short_name(bus_name: &str) -> &str {
    let s = bus_name
        .strip_prefix("org.mpris.MediaPlayer2.")
        .unwrap_or(bus_name);
    match s.find(".instance") {
        Some(i) => &s[..i],
        None => s,
    }
}

impl PlayerFilter {
    /// Whether to scrobble the player with this bus name and Identity.
    pub fn allows(&self, bus_name: &str, identity: &str) -> bool {
        let short = player_short_name(bus_name);
        let hit = |r: &Regex| r.is_match(short) || (!identity.is_empty() && r.is_match(identity));
        if self.ignore.iter().any(hit) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(hit)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::from_toml("", Path::new("(defaults)")).unwrap_or_else(|_| unreachable!())
    }
}

impl Config {
    /// Parses the TOML text of `path`.
    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let raw: Raw = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let re = |p: &str| {
            Regex::new(p).map_err(|e| ConfigError::Regex {
                path: path.to_owned(),
                pattern: p.to_owned(),
                message: e.to_string(),
            })
        };
        let mut ignore = raw
            .players
            .ignore
            .iter()
            .map(|p| re(p))
            .collect::<Result<Vec<_>, _>>()?;
        if raw.players.ignore_browsers.unwrap_or(true) {
            ignore.push(re(BROWSERS)?);
        }
        let allow = raw
            .players
            .allow
            .iter()
            .map(|p| re(p))
            .collect::<Result<Vec<_>, _>>()?;
        let no_length = match raw.no_length {
            None => NoLength::After(Duration::from_secs(240)),
            Some(NoLengthRaw::Secs(s)) if s > 30 => NoLength::After(Duration::from_secs(s)),
            Some(NoLengthRaw::Word(w)) if w == "never" => NoLength::Never,
            Some(other) => {
                return Err(ConfigError::Parse {
                    path: path.to_owned(),
                    message: format!(
                        "no_length must be a number of seconds above 30 or \"never\", not {other:?}"
                    ),
                })
            }
        };
        let cleanup = raw
            .cleanup
            .iter()
            .map(|c| Ok((c.field, re(&c.pattern)?, c.replace.clone())))
            .collect::<Result<Vec<_>, ConfigError>>()?;
        let mut names = std::collections::HashSet::new();
        for s in &raw.service {
            if s.name.is_empty()
                || !s
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                || !names.insert(s.name.clone())
            {
                return Err(ConfigError::Parse {
                    path: path.to_owned(),
                    message: format!(
                        "service name {:?} must be unique and made of letters, digits, - and _",
                        s.name
                    ),
                });
            }
        }
        Ok(Config {
            artists: raw.artists.unwrap_or_default(),
            rules: Rules {
                no_length,
                ..Rules::default()
            },
            filter: PlayerFilter { allow, ignore },
            cleanup,
            services: raw.service,
        })
    }

    /// Reads `path`; a missing file is the defaults (and no services).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match fs::read_to_string(path) {
            Ok(t) => Config::from_toml(&t, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::from_toml("", path),
            Err(source) => Err(ConfigError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    pub fn service(&self, name: &str) -> Result<&Service, ConfigError> {
        self.services
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| ConfigError::NoService(name.to_owned()))
    }

    /// Applies the clean-up rules to a track's title, artists and album.
    pub fn clean(&self, t: &mut Track) {
        for (field, re, with) in &self.cleanup {
            let apply = |s: &mut String| {
                let new = re.replace_all(s, with.as_str()).trim().to_owned();
                *s = new;
            };
            match field {
                Field::Title => apply(&mut t.title),
                Field::Album => apply(&mut t.album),
                Field::Artist => t.artists.iter_mut().for_each(apply),
            }
        }
    }
}

/// Where the scrobbler's files live.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `$XDG_CONFIG_HOME/spindle`: `scrobble.toml` and the credentials.
    pub config_dir: PathBuf,
    /// `$XDG_STATE_HOME/spindle/scrobble`: journals, status, pid.
    pub state_dir: PathBuf,
}

impl Paths {
    /// From the XDG base directories (the `directories` crate reads
    /// `XDG_CONFIG_HOME` and `XDG_STATE_HOME`, else `~/.config` and
    /// `~/.local/state`); relative to the working folder when there is
    /// no home.
    pub fn from_env() -> Paths {
        match directories::ProjectDirs::from("", "", "spindle") {
            Some(d) => Paths {
                config_dir: d.config_dir().to_path_buf(),
                state_dir: d
                    .state_dir()
                    .unwrap_or_else(|| d.data_local_dir())
                    .join("scrobble"),
            },
            None => Paths {
                config_dir: Path::new(".").join(".config/spindle"),
                state_dir: Path::new(".").join(".local/state/spindle/scrobble"),
            },
        }
    }
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("scrobble.toml")
    }
    pub fn credential_file(&self, service: &str) -> PathBuf {
        self.config_dir.join(format!("scrobble-{service}.key"))
    }
    pub fn journal_dir(&self, service: &str) -> PathBuf {
        self.state_dir.join(service)
    }
    pub fn needs_auth_file(&self, service: &str) -> PathBuf {
        self.journal_dir(service).join("needs-auth")
    }
    pub fn status_file(&self) -> PathBuf {
        self.state_dir.join("status.json")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.state_dir.join("daemon.pid")
    }

    /// The stored session key or token of a service, if any.
    pub fn read_credential(&self, service: &str) -> Option<String> {
        let s = fs::read_to_string(self.credential_file(service)).ok()?;
        let s = s.trim().to_owned();
        (!s.is_empty()).then_some(s)
    }

    /// Stores a session key or token, readable by the user only (0600).
    pub fn write_credential(&self, service: &str, secret: &str) -> std::io::Result<PathBuf> {
        fs::create_dir_all(&self.config_dir)?;
        let path = self.credential_file(service);
        let tmp = path.with_extension("tmp");
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(secret.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))?;
        fs::rename(&tmp, &path)?;
        let _ = fs::remove_file(self.needs_auth_file(service));
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_suffixes_are_removed() {
        assert_eq!(
            player_short_name("org.mpris.MediaPlayer2.vlc.instance7389"),
            "vlc"
        );
        assert_eq!(
            player_short_name("org.mpris.MediaPlayer2.firefox.instance_1_371"),
            "firefox"
        );
        assert_eq!(
            player_short_name("org.mpris.MediaPlayer2.Spotube.instance4761"),
            "Spotube"
        );
        assert_eq!(player_short_name("org.mpris.MediaPlayer2.mpv"), "mpv");
    }

    #[test]
    fn browsers_are_ignored_by_default_and_lists_match_name_or_identity() {
        let c = Config::default();
        assert!(!c.filter.allows(
            "org.mpris.MediaPlayer2.firefox.instance_1_371",
            "Mozilla Firefox"
        ));
        assert!(!c
            .filter
            .allows("org.mpris.MediaPlayer2.plasma-browser-integration", ""));
        assert!(c
            .filter
            .allows("org.mpris.MediaPlayer2.mpv", "mpv Media Player"));
        let c = Config::from_toml(
            "[players]\nallow = [\"^(mpv|Spotube)$\"]\nignore_browsers = false\n",
            Path::new("t"),
        )
        .expect("parse");
        assert!(c
            .filter
            .allows("org.mpris.MediaPlayer2.Spotube.instance4761", "x"));
        assert!(!c
            .filter
            .allows("org.mpris.MediaPlayer2.vlc", "VLC media player"));
        let c = Config::from_toml(
            "[players]\nignore = [\"(?i)^gnome music$\"]\n",
            Path::new("t"),
        )
        .expect("parse");
        assert!(!c
            .filter
            .allows("org.mpris.MediaPlayer2.org.gnome.Music", "GNOME Music"));
    }

    #[test]
    fn services_resolve_to_endpoints() {
        let c = Config::from_toml(
            r#"
no_length = "never"
artists = "first"
[[service]]
name = "lastfm"
kind = "lastfm"
api_key = "k"
api_secret = "s"
[[service]]
name = "libre"
kind = "lastfm"
url = "https://libre.fm/2.0/"
[[service]]
name = "home"
kind = "spindle"
url = "http://127.0.0.1:4533/"
api_key = "k"
api_secret = "s"
[[service]]
name = "home-lb"
kind = "spindle"
url = "http://127.0.0.1:4533"
"#,
            Path::new("t"),
        )
        .expect("parse");
        assert_eq!(c.rules.no_length, NoLength::Never);
        assert_eq!(c.artists, ArtistStyle::First);
        let ep: Vec<Endpoint> = c.services.iter().map(Service::endpoint).collect();
        assert!(
            matches!(&ep[0], Endpoint::LastFm { url, auth_url, .. } if url == "https://ws.audioscrobbler.com/2.0/" && auth_url == "https://www.last.fm/api/auth/")
        );
        assert!(
            matches!(&ep[1], Endpoint::LastFm { url, auth_url, .. } if url == "https://libre.fm/2.0/" && auth_url == "https://libre.fm/api/auth/")
        );
        assert!(
            matches!(&ep[2], Endpoint::LastFm { url, .. } if url == "http://127.0.0.1:4533/2.0/")
        );
        assert_eq!(
            ep[3],
            Endpoint::ListenBrainz {
                url: "http://127.0.0.1:4533".into()
            }
        );
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        let e = Config::from_toml("no_length = 30", Path::new("t")).expect_err("30 s");
        assert!(e.to_string().contains("above 30"), "{e}");
        let e = Config::from_toml("[players]\nallow = [\"(\"]", Path::new("t")).expect_err("regex");
        assert!(e.to_string().contains("bad regex"), "{e}");
        let e = Config::from_toml(
            "[[service]]\nname = \"a b\"\nkind = \"lastfm\"",
            Path::new("t"),
        )
        .expect_err("name");
        assert!(e.to_string().contains("unique"), "{e}");
    }

    #[test]
    fn cleanup_rules_rewrite_fields() {
        let c = Config::from_toml(
            "[[cleanup]]\nfield = \"title\"\npattern = \" - Remaster(ed)?( \\\\d{4})?$\"\n[[cleanup]]\nfield = \"artist\"\npattern = \"^The \"\n",
            Path::new("t"),
        )
        .expect("parse");
        let mut t = Track {
            title: "Song - Remastered 2011".into(),
            artists: vec!["The Band".into()],
            ..Track::default()
        };
        c.clean(&mut t);
        assert_eq!(t.title, "Song");
        assert_eq!(t.artists, ["Band"]);
    }

    #[test]
    fn credentials_are_stored_for_the_user_only() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = Paths {
            config_dir: d.path().join("cfg"),
            state_dir: d.path().join("state"),
        };
        let f = p.write_credential("lastfm", "sk123").expect("write");
        let mode = fs::metadata(&f).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(p.read_credential("lastfm").as_deref(), Some("sk123"));
    }
}
