//! What `spindle serve` says once the server is open: the log lines of
//! what opening found ([`Opened::log`]) and the two lines it prints on
//! stdout once it listens ([`Server::banner`]): the URL, then the next
//! step (create the first user, or log in). Scripts and tests read the
//! first stdout line, `spindle: serving URL (…)`: its text is an
//! interface.

use std::net::SocketAddr;
use std::path::Path;

use crate::{Opened, Server};

impl Opened {
    /// Logs what opening found: repairs, where the music comes from
    /// (`xdg`: the XDG music folder, served because no folder was set),
    /// the scan, the tiers, and the IO engine running (`engine`) when it
    /// is not the one asked for.
    pub fn log(&self, xdg: Option<&Path>, engine: &str) {
        for w in &self.warnings {
            tracing::warn!("{w}");
        }
        if let Some(d) = xdg {
            tracing::info!("no --music given; serving {}", d.display());
        }
        if let Some(d) = &self.demo {
            tracing::info!(
                "no --music given and no music folder found; serving a demo library in {}",
                d.display()
            );
        }
        let s = &self.scanned;
        for (path, reason) in &s.failed {
            tracing::warn!(path = %path.display(), "cannot read {}: {reason}", path.display());
        }
        tracing::info!(
            "scanned {} files in {:.2}s: {} added, {} updated, {} unchanged, {} removed, {} unreadable",
            s.files,
            s.elapsed.as_secs_f64(),
            s.added,
            s.updated,
            s.unchanged,
            s.removed,
            s.failed.len()
        );
        if let Some(st) = &self.tiers {
            if let Some(h) = &st.hot {
                tracing::info!(
                    "tiers: hot folder {} holds {} copies ({} of {} bytes); {} unfinished or damaged copies removed",
                    h.path, h.files, h.used, h.budget, h.recovered_dropped
                );
            }
            let names: Vec<String> = st
                .devices
                .iter()
                .map(|d| format!("{} ({}, {})", d.name, d.kind, d.state))
                .collect();
            tracing::info!("tiers: devices {}", names.join(", "));
        }
        if let Some(why) = &self.engine_fell_back {
            tracing::info!("streaming reads use {engine}: {why}");
        }
    }
}

impl Server {
    /// The URL of the server listening on `addr`: its scheme, the base
    /// path, and a trailing `/`.
    pub fn url(&self, addr: SocketAddr) -> String {
        let scheme = if self.tls().is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{addr}{}/", self.state().config.base_path)
    }

    /// The two lines `spindle serve` prints once it listens on `addr`:
    /// `spindle: serving URL (library …; Subsonic API at URLrest/)`, then
    /// how to create the first user (with the setup code) or how many
    /// users there are.
    pub fn banner(&self, addr: SocketAddr) -> [String; 2] {
        let st = self.state();
        let folders: Vec<String> = st
            .music
            .roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        let next = match st.setup_code() {
            Some(code) => Next::Setup(code),
            None => Next::Users(st.accounts.user_names().len()),
        };
        banner(
            &self.url(addr),
            st.db.stats().entries,
            self.opened().listens,
            &folders,
            next,
        )
    }
}

/// The step after start-up.
enum Next {
    /// No user yet: the administrator is created in the web UI, from
    /// another machine with this setup code.
    Setup(String),
    /// This many users: log in.
    Users(usize),
}

fn banner(
    url: &str,
    entries: usize,
    listens: usize,
    folders: &[String],
    next: Next,
) -> [String; 2] {
    let serving = format!(
        "spindle: serving {url} (library {entries} entries, {listens} listens; music: {}; Subsonic API at {url}rest/)",
        folders.join(", ")
    );
    let next = match next {
        Next::Setup(code) => format!(
            "spindle: no users yet: open {url} to create the administrator (from another machine, give the setup code {code})"
        ),
        Next::Users(n) => {
            let s = if n == 1 { "" } else { "s" };
            format!("spindle: {n} user{s}; open {url} to log in")
        }
    };
    [serving, next]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_gives_the_url_the_library_and_the_subsonic_api() {
        let [serving, _] = banner(
            "http://127.0.0.1:4533/music/",
            12,
            3,
            &["/a".into(), "/b".into()],
            Next::Users(2),
        );
        assert_eq!(
            serving,
            "spindle: serving http://127.0.0.1:4533/music/ (library 12 entries, 3 listens; \
             music: /a, /b; Subsonic API at http://127.0.0.1:4533/music/rest/)"
        );
    }

    #[test]
    fn the_second_line_gives_the_setup_code_or_the_number_of_users() {
        let url = "http://h:1/";
        let next = |n| banner(url, 0, 0, &[], n)[1].clone();
        assert_eq!(
            next(Next::Setup("AB12-CD34".into())),
            "spindle: no users yet: open http://h:1/ to create the administrator \
             (from another machine, give the setup code AB12-CD34)"
        );
        assert_eq!(
            next(Next::Users(1)),
            "spindle: 1 user; open http://h:1/ to log in"
        );
        assert_eq!(
            next(Next::Users(3)),
            "spindle: 3 users; open http://h:1/ to log in"
        );
    }
}
