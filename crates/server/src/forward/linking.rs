//! Making a link: the Last.fm desktop token flow (`auth.getToken`, the
//! user approves at the service's `api/auth/` page, `auth.getSession`)
//! and the ListenBrainz token check (`/1/validate-token`), shared by the
//! web UI (`crate::web::forward`) and `spindle forward link`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use spindle_scrobble::config::{Endpoint, Kind, Service};
use spindle_scrobble::lastfm::LastFm;
use spindle_scrobble::listenbrainz::ListenBrainz;
use spindle_scrobble::outbound::Policy;
use spindle_scrobble::Client;

use super::link::{self, ForwardError, Link, LinkKind};
use super::{ForwardConfig, USER_AGENT};

/// How long `spindle forward link … lastfm` waits for the approval.
pub const APPROVAL_WAIT: Duration = Duration::from_secs(300);
/// How often it asks whether the token was approved.
pub const APPROVAL_POLL: Duration = Duration::from_secs(2);

/// A Last.fm desktop flow under way: the token waits for the user's
/// approval at [`LastFmStart::approve_url`].
#[derive(Debug, Clone)]
pub struct LastFmStart {
    pub api_url: String,
    pub api_key: String,
    pub api_secret: String,
    pub token: String,
    /// The page where the user approves the token.
    pub approve_url: String,
    /// The policy the flow's requests keep to.
    pub outbound: spindle_scrobble::outbound::Policy,
}

/// The API root and approval page of a Last.fm-compatible `url` (a root
/// or its `/2.0/`); `None`: the configured default.
pub fn lastfm_endpoints(url: Option<&str>, cfg: &ForwardConfig) -> (String, String) {
    let url = url.unwrap_or(&cfg.lastfm_url);
    let svc = Service {
        name: String::new(),
        kind: Kind::Lastfm,
        url: (url.trim_end_matches('/') != LASTFM_ROOT).then(|| url.to_owned()),
        auth_url: None,
        api_key: None,
        api_secret: None,
        token: None,
    };
    match svc.endpoint() {
        Endpoint::LastFm { url, auth_url, .. } => (url, auth_url),
        Endpoint::ListenBrainz { url } => (url.clone(), url),
    }
}

const LASTFM_ROOT: &str = "https://ws.audioscrobbler.com/2.0";

/// Asks the service for a token (`auth.getToken`). The key and secret
/// default to `[forward]`'s.
pub async fn start_lastfm(
    url: Option<&str>,
    api_key: Option<&str>,
    api_secret: Option<&str>,
    cfg: &ForwardConfig,
) -> Result<LastFmStart, ForwardError> {
    let api_key = api_key.unwrap_or(&cfg.lastfm_api_key).to_owned();
    let api_secret = api_secret.unwrap_or(&cfg.lastfm_api_secret).to_owned();
    if api_key.is_empty() || api_secret.is_empty() {
        return Err(ForwardError::NoApiKey);
    }
    let (api_url, auth_url) = lastfm_endpoints(url, cfg);
    let client = LastFm::with_policy(
        &cfg.outbound,
        &api_url,
        &api_key,
        &api_secret,
        "",
        USER_AGENT,
    )
    .map_err(svc("setting up the HTTP client"))?;
    let token = client
        .get_token()
        .await
        .map_err(svc("asking the service for a token (auth.getToken)"))?;
    let approve_url = format!("{auth_url}?api_key={api_key}&token={token}");
    Ok(LastFmStart {
        api_url,
        api_key,
        api_secret,
        token,
        approve_url,
        outbound: cfg.outbound.clone(),
    })
}

fn svc(what: &'static str) -> impl FnOnce(spindle_scrobble::SendError) -> ForwardError {
    move |source| match source {
        spindle_scrobble::SendError::Auth { code, message } => ForwardError::Refused {
            what,
            code,
            message,
        },
        source => ForwardError::Service { what, source },
    }
}

impl LastFmStart {
    fn client(&self) -> Result<LastFm, ForwardError> {
        LastFm::with_policy(
            &self.outbound,
            &self.api_url,
            &self.api_key,
            &self.api_secret,
            "",
            USER_AGENT,
        )
        .map_err(svc("setting up the HTTP client"))
    }

    /// `auth.getSession` once: the link when approved, `None` while not.
    pub async fn try_finish(&self, now: i64) -> Result<Option<Link>, ForwardError> {
        let s = self
            .client()?
            .get_session(&self.token)
            .await
            .map_err(svc("getting the session (auth.getSession)"))?;
        Ok(s.map(|(user, key)| self.link(user, key, now)))
    }

    /// Waits for the approval ([`APPROVAL_POLL`], up to `limit`).
    pub async fn wait(&self, limit: Duration, now: i64) -> Result<Link, ForwardError> {
        let (user, key) = self
            .client()?
            .wait_for_session(&self.token, APPROVAL_POLL, limit)
            .await
            .map_err(svc("waiting for the approval (auth.getSession)"))?;
        Ok(self.link(user, key, now))
    }

    fn link(&self, remote_user: String, session_key: String, now: i64) -> Link {
        Link {
            kind: LinkKind::Lastfm,
            url: self.api_url.clone(),
            api_key: self.api_key.clone(),
            api_secret: self.api_secret.clone(),
            secret: session_key,
            remote_user,
            linked_at: now,
        }
    }
}

/// Checks a ListenBrainz token at `url` (default: `[forward]`'s) and
/// returns the link.
pub async fn listenbrainz(
    url: Option<&str>,
    token: &str,
    cfg: &ForwardConfig,
    now: i64,
) -> Result<Link, ForwardError> {
    let url = url
        .unwrap_or(&cfg.listenbrainz_url)
        .trim_end_matches('/')
        .to_owned();
    let remote_user = ListenBrainz::with_policy(&cfg.outbound, &url, token, USER_AGENT)
        .map_err(svc("setting up the HTTP client"))?
        .validate()
        .await
        .map_err(svc("checking the token (/1/validate-token)"))?;
    Ok(Link {
        kind: LinkKind::Listenbrainz,
        url,
        api_key: String::new(),
        api_secret: String::new(),
        secret: token.to_owned(),
        remote_user,
        linked_at: now,
    })
}

/// `spindle forward link`'s options after USER and KIND.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct LinkArgs {
    /// The link's name (default: the kind).
    #[arg(long)]
    pub name: Option<String>,
    /// The API root: a Last.fm 2.0 URL (…/2.0/) or a ListenBrainz root
    /// (default: forward.lastfm_url or forward.listenbrainz_url in the settings file).
    #[arg(long)]
    pub url: Option<String>,
    /// Last.fm API key (default: forward.lastfm_api_key).
    #[arg(long)]
    pub api_key: Option<String>,
    /// Last.fm API secret (default: forward.lastfm_api_secret).
    #[arg(long)]
    pub api_secret: Option<String>,
    /// The ListenBrainz user token.
    #[arg(long)]
    pub token: Option<String>,
    /// Seconds to wait for the Last.fm approval.
    #[arg(long, default_value_t = APPROVAL_WAIT.as_secs())]
    pub wait: u64,
}

impl LinkArgs {
    /// The link's name: `--name`, else the kind's.
    pub fn name(&self, kind: LinkKind) -> &str {
        self.name.as_deref().unwrap_or(kind.as_str())
    }

    /// Links an account at a service of `kind`: for Last.fm, `approve`
    /// gets the page where the user allows access, and this waits up to
    /// `wait` seconds for it; a ListenBrainz token is checked first.
    pub async fn link(
        &self,
        kind: LinkKind,
        cfg: &ForwardConfig,
        now: i64,
        approve: impl FnOnce(&str),
    ) -> Result<Link, ForwardError> {
        let url = self.url.as_deref();
        match kind {
            LinkKind::Lastfm => {
                let (key, secret) = (self.api_key.as_deref(), self.api_secret.as_deref());
                let flow = start_lastfm(url, key, secret, cfg).await?;
                approve(&flow.approve_url);
                flow.wait(Duration::from_secs(self.wait), now).await
            }
            LinkKind::Listenbrainz => {
                let token = self.token.as_deref().ok_or(ForwardError::NoToken)?;
                listenbrainz(url, token, cfg, now).await
            }
        }
    }
}

/// The client a link sends with, keeping to `policy`.
pub fn client(l: &Link, policy: &Policy) -> Result<Client, ForwardError> {
    let c = match l.kind {
        LinkKind::Lastfm => Client::LastFm(
            LastFm::with_policy(
                policy,
                &l.url,
                &l.api_key,
                &l.api_secret,
                &l.secret,
                USER_AGENT,
            )
            .map_err(svc("setting up the HTTP client"))?,
        ),
        LinkKind::Listenbrainz => Client::ListenBrainz(
            ListenBrainz::with_policy(policy, &l.url, &l.secret, USER_AGENT)
                .map_err(svc("setting up the HTTP client"))?,
        ),
    };
    Ok(c)
}

/// Saves `link` as `user`'s link `name` under `root`, its cursor (when
/// new) at `cursor`; returns its folder. A new name is refused when the
/// user has [`link::MAX_LINKS_PER_USER`] links already
/// ([`ForwardError::TooManyLinks`]).
pub fn save(
    root: &Path,
    user: &str,
    name: &str,
    l: &Link,
    cursor: u64,
) -> Result<PathBuf, ForwardError> {
    link::check_name(name)?;
    link::check_room(root, user, name)?;
    let dir = link::link_dir(root, user, name);
    link::save(&dir, l, cursor)?;
    Ok(dir)
}

/// `DATA_DIR/forward`.
pub fn root(data_dir: &Path) -> PathBuf {
    data_dir.join(super::FORWARD_DIR)
}

/// Where a link made by another process than the server starts: the end
/// of the last whole record of the listens log.
pub fn log_end(data_dir: &Path) -> Result<u64, ForwardError> {
    let log = data_dir.join("listens").join(spindle_listens::LOG_FILE);
    Ok(spindle_listens::tail::log_end_of_file(&log)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spindle_root_gets_its_api_and_approval_page() {
        let cfg = ForwardConfig::default();
        assert_eq!(
            lastfm_endpoints(Some("http://127.0.0.1:9/2.0/"), &cfg),
            (
                "http://127.0.0.1:9/2.0/".to_owned(),
                "http://127.0.0.1:9/api/auth/".to_owned()
            )
        );
        assert_eq!(
            lastfm_endpoints(None, &cfg),
            (
                "https://ws.audioscrobbler.com/2.0/".to_owned(),
                "https://www.last.fm/api/auth/".to_owned()
            )
        );
    }

    fn lb_link() -> Link {
        Link {
            kind: LinkKind::Listenbrainz,
            url: "http://127.0.0.1:9".into(),
            api_key: String::new(),
            api_secret: String::new(),
            secret: "tok".into(),
            remote_user: "ann".into(),
            linked_at: 1,
        }
    }

    #[test]
    fn saving_a_new_link_beyond_the_limit_is_refused_but_a_relink_is_not() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for i in 0..link::MAX_LINKS_PER_USER {
            save(root, "ann", &format!("l{i}"), &lb_link(), 0).unwrap();
        }
        let e = save(root, "ann", "ninth", &lb_link(), 0).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ForwardError::TooManyLinks { .. }), "{msg}");
        assert!(msg.contains("spindle forward unlink"), "{msg}");
        assert!(!link::link_dir(root, "ann", "ninth").exists());
        let mut again = lb_link();
        again.secret = "new".into();
        let dir = save(root, "ann", "l0", &again, 0).unwrap();
        assert_eq!(link::load(&dir).unwrap().secret, "new");
    }
}
