//! `spindle serve`'s side of the settings: its flags ([`Flags`], each one
//! also a key of the settings file, which it overrides), the settings
//! file they name ([`settings_path`]), their resolution over the
//! environment and the file ([`Flags::settings`]), and the music folder
//! served when none is set ([`Settings::music_folders`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::values::{self, LogFormat};
use super::{Layer, Settings, SettingsError};

/// The variable that names the settings file when `--config` does not.
pub const CONFIG_ENV: &str = "SPINDLE_SERVER_CONFIG";

/// `spindle serve`'s flags; each one also a key of the settings file
/// (docs/configuration.md), which it overrides.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Flags {
    /// The settings file (default: $SPINDLE_SERVER_CONFIG, else
    /// $XDG_CONFIG_HOME/spindle/server.toml if it exists). `spindle config
    /// print-default` prints a documented one.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A music folder to serve (repeatable). (settings file: server.music)
    #[arg(long, value_name = "DIR")]
    pub music: Vec<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:4533]. (settings file: server.listen)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// How streams read files: tokio, psync, uring or uring-sqpoll
    /// (io_uring falls back to psync where it is unavailable) [default:
    /// uring]. (settings file: server.io_engine)
    #[arg(long, value_name = "ENGINE")]
    pub io_engine: Option<String>,
    /// The most a connection keeps queued in the kernel beyond what the
    /// client's TCP window takes, in KiB (TCP_NOTSENT_LOWAT); 0 leaves the
    /// kernel's default [default: 128]. The cap keeps thousands of slow
    /// listeners from exhausting TCP memory. (settings file: server.send_queue)
    #[arg(long, value_name = "KIB")]
    pub send_queue_kib: Option<u32>,
    /// The log on stderr: text (`spindle: …` lines) or json (one object per
    /// line) [default: text]. SPINDLE_LOG (else RUST_LOG) filters it, e.g.
    /// `debug` or `info,spindle_tiers=debug`; the default is info. (settings file: log.format)
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Serve every route under this URL path, e.g. /music. (settings file: server.base_path)
    #[arg(long, value_name = "PATH")]
    pub base_path: Option<String>,
    /// The URL clients reach the server by, e.g. `https://example.org/music`.
    /// (settings file: server.public_url)
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// PEM certificate chain: serve HTTPS (with --tls-key). (settings file: tls.cert)
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert. (settings file: tls.key)
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// A reverse proxy whose X-Forwarded-*/Forwarded headers are believed:
    /// an address or CIDR block (repeatable). (settings file: proxy.trusted)
    #[arg(long, value_name = "ADDR")]
    pub trusted_proxy: Vec<String>,
}

/// The process environment, as the settings read it.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The settings file: `flag` (`--config`), else `$SPINDLE_SERVER_CONFIG`,
/// else the default path when that file exists.
pub fn settings_path(flag: Option<&Path>) -> Option<PathBuf> {
    find_file(flag, &env_var)
}

fn find_file(flag: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    flag.map(Path::to_owned)
        .or_else(|| env(CONFIG_ENV).filter(|p| !p.is_empty()).map(PathBuf::from))
        .or_else(|| spindle_tiers::config::default_config_path().filter(|p| p.is_file()))
}

/// A flag's value read by its type's `FromStr`; an error names the flag.
fn parse<T: std::str::FromStr<Err = String>>(
    flag: &'static str,
    v: &str,
) -> Result<T, SettingsError> {
    v.parse()
        .map_err(|message| SettingsError::Flag { flag, message })
}

/// [`parse`] of a flag that may be absent.
fn parse_opt<T: std::str::FromStr<Err = String>>(
    flag: &'static str,
    v: Option<&str>,
) -> Result<Option<T>, SettingsError> {
    v.map(|v| parse(flag, v)).transpose()
}

impl Flags {
    /// The flags as a settings layer over `data_dir` (`--data-dir`); a
    /// bad value is an error naming its flag.
    pub fn layer(&self, data_dir: Option<&Path>) -> Result<Layer, SettingsError> {
        let mut l = Layer {
            data_dir: data_dir.map(Path::to_owned),
            ..Layer::default()
        };
        let s = &mut l.server;
        s.listen.clone_from(&self.listen);
        s.music = Some(self.music.clone()).filter(|m| !m.is_empty());
        s.io_engine = parse_opt("io-engine", self.io_engine.as_deref())?;
        s.send_queue = self
            .send_queue_kib
            .map(|k| values::Size(u64::from(k) * 1024));
        s.base_path = parse_opt("base-path", self.base_path.as_deref())?;
        s.public_url = parse_opt("public-url", self.public_url.as_deref())?;
        l.log.format = self.log_format;
        l.tls.cert.clone_from(&self.tls_cert);
        l.tls.key.clone_from(&self.tls_key);
        if !self.trusted_proxy.is_empty() {
            let trusted = self.trusted_proxy.iter();
            let trusted = trusted.map(|v| parse("trusted-proxy", v));
            l.proxy.trusted = Some(trusted.collect::<Result<_, _>>()?);
        }
        Ok(l)
    }

    /// The flags over the environment over the settings file
    /// ([`settings_path`]) over the defaults.
    pub fn settings(&self, data_dir: Option<&Path>) -> Result<Settings, SettingsError> {
        self.settings_in(data_dir, &env_var)
    }

    /// [`Flags::settings`] with the environment `env`.
    pub fn settings_in(
        &self,
        data_dir: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let file = find_file(self.config.as_deref(), env);
        super::load(file.as_deref(), env, self.layer(data_dir)?)
    }

    /// The log format in effect, for the log set up before anything else;
    /// text when the settings do not load (serving then reports why).
    pub fn log_format(&self) -> LogFormat {
        self.settings(None)
            .map(|s| s.log_format)
            .unwrap_or_default()
    }
}

impl Settings {
    /// The music folders to serve, and the XDG music folder when it is
    /// the one: the folders set (each must be a folder), else the XDG music
    /// folder if it exists, else none (the server then generates a demo
    /// library).
    pub fn music_folders(&self) -> Result<(Vec<PathBuf>, Option<PathBuf>), SettingsError> {
        if let Some(d) = self.music.iter().find(|d| !d.is_dir()) {
            return Err(SettingsError::NotAFolder { path: d.clone() });
        }
        if !self.music.is_empty() {
            return Ok((self.music.clone(), None));
        }
        match xdg_music_dir().filter(|d| d.is_dir()) {
            Some(d) => Ok((vec![d.clone()], Some(d))),
            None => Ok((Vec::new(), None)),
        }
    }
}

/// `$XDG_MUSIC_DIR`, else the music folder of the user's
/// `$XDG_CONFIG_HOME/user-dirs.dirs` (read by the `directories` crate),
/// else `~/Music`.
pub fn xdg_music_dir() -> Option<PathBuf> {
    music_dir(&|name| std::env::var_os(name))
}

fn music_dir(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(d) = env("XDG_MUSIC_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let dirs = directories::UserDirs::new()?;
    Some(
        dirs.audio_dir()
            .map_or_else(|| dirs.home_dir().join("Music"), |d| d.to_path_buf()),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn a_bad_flag_value_is_an_error_naming_the_flag() {
        let cases = [
            (
                Flags {
                    io_engine: Some("fast".into()),
                    ..Flags::default()
                },
                "--io-engine: ",
            ),
            (
                Flags {
                    base_path: Some("music".into()),
                    ..Flags::default()
                },
                "--base-path: ",
            ),
            (
                Flags {
                    public_url: Some("example.org".into()),
                    ..Flags::default()
                },
                "--public-url: ",
            ),
            (
                Flags {
                    trusted_proxy: vec!["10.0.0.1".into(), "10.0.0.0/33".into()],
                    ..Flags::default()
                },
                "--trusted-proxy: ",
            ),
        ];
        for (flags, start) in cases {
            let err = flags.layer(None).unwrap_err().to_string();
            assert!(err.starts_with(start), "{err}");
        }
    }

    #[test]
    fn every_flag_lands_on_its_key() {
        let flags = Flags {
            music: vec!["/m".into()],
            listen: Some("0.0.0.0:1".into()),
            send_queue_kib: Some(2),
            log_format: Some(LogFormat::Json),
            base_path: Some("/music/".into()),
            trusted_proxy: vec!["10.0.0.0/8".into()],
            ..Flags::default()
        };
        let l = flags.layer(Some(Path::new("/d"))).unwrap();
        assert_eq!(l.data_dir.as_deref(), Some(Path::new("/d")));
        assert_eq!(l.server.music, Some(vec![PathBuf::from("/m")]));
        assert_eq!(l.server.listen.as_deref(), Some("0.0.0.0:1"));
        assert_eq!(l.server.send_queue, Some(values::Size(2048)));
        assert_eq!(l.server.base_path.map(|b| b.0).as_deref(), Some("/music"));
        assert_eq!(l.log.format, Some(LogFormat::Json));
        assert_eq!(l.proxy.trusted.map(|t| t.len()), Some(1));
        // No flags: an empty layer, which changes nothing it is laid over.
        assert_eq!(Flags::default().layer(None).unwrap(), Layer::default());
    }

    #[test]
    fn the_flags_are_laid_over_the_environment_and_the_file_they_name() {
        let (_dir, path) = crate::settings::tests::file(
            "[server]\nlisten = \"127.0.0.1:1\"\nbase_path = \"/file\"\npublic_url = \"http://file.example\"\n",
        );
        let env = env_of(&[
            ("SPINDLE_SERVER_BASE_PATH", "/env"),
            ("SPINDLE_SERVER_PUBLIC_URL", "http://env.example"),
        ]);
        let flags = Flags {
            config: Some(path.clone()),
            public_url: Some("http://flag.example".into()),
            ..Flags::default()
        };
        let s = flags.settings_in(None, &env).unwrap();
        assert_eq!(s.file.as_deref(), Some(path.as_path()));
        assert_eq!(s.listen, "127.0.0.1:1");
        assert_eq!(s.http.base_path, "/env");
        assert_eq!(s.http.public_url.as_deref(), Some("http://flag.example"));
    }

    #[test]
    fn the_config_flag_beats_the_variable_naming_the_file() {
        let env = env_of(&[(CONFIG_ENV, "/from/env.toml")]);
        assert_eq!(
            find_file(Some(Path::new("/from/flag.toml")), &env),
            Some(PathBuf::from("/from/flag.toml"))
        );
        assert_eq!(find_file(None, &env), Some(PathBuf::from("/from/env.toml")));
    }

    #[test]
    fn xdg_music_dir_wins_and_an_empty_one_is_ignored() {
        let set = |v: &'static str| move |n: &str| (n == "XDG_MUSIC_DIR").then(|| v.into());
        assert_eq!(
            music_dir(&set("/srv/tunes")),
            Some(PathBuf::from("/srv/tunes"))
        );
        assert_ne!(music_dir(&set("")), Some(PathBuf::new()));
    }

    #[test]
    fn a_music_setting_that_is_not_a_folder_is_refused_and_a_folder_is_served() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let mut s = Settings {
            music: vec![file.clone()],
            ..Settings::default()
        };
        let err = s.music_folders().unwrap_err().to_string();
        assert_eq!(
            err,
            format!("music folder {}: not a folder", file.display())
        );
        s.music = vec![dir.path().to_owned()];
        assert_eq!(
            s.music_folders().unwrap(),
            (vec![dir.path().to_owned()], None)
        );
    }
}
