//! What is shown of each link: on the settings page and in `spindle
//! forward status` (from the files, so it works with the server
//! stopped), and in `/metrics` (from the running queues).

use std::fmt::Write;
use std::path::Path;

use serde::Serialize;
use spindle_scrobble::ServiceState;

use super::link::{self, LinkKind};
use super::Forward;

/// One link's state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkStatus {
    pub user: String,
    pub name: String,
    pub kind: LinkKind,
    pub url: String,
    /// The user name at the service.
    pub remote_user: String,
    pub linked_at: i64,
    /// Listens in the journal, not yet acknowledged by the service.
    pub pending: usize,
    /// Listens the service acknowledged (since the server started, or as
    /// last saved when it is stopped).
    pub sent: u64,
    pub now_playing_sent: u64,
    /// Loves and unloves the service acknowledged.
    pub loves_sent: u64,
    /// Loves and unloves the service cannot take, passed over
    /// (ListenBrainz-type: the track has no recording MBID).
    pub loves_skipped: u64,
    /// The service refused the credential: link it again.
    pub needs_auth: bool,
    pub last_error: Option<String>,
    /// Seconds from the moment of the request until the next retry, when
    /// waiting (running server only).
    pub retry_in: Option<f64>,
    /// Whether a running server forwards it now (from the files: whether
    /// the server runs, see [`server_running`]).
    pub running: bool,
}

impl std::fmt::Display for LinkStatus {
    /// One line, tab-separated: user, name, kind, URL, `as REMOTE`,
    /// `pending N`, `sent N`, the state (`ok`, `retrying: ERROR` or
    /// `NEEDS RE-LINKING`) and `loves sent N` (with `, skipped N` when
    /// some were), as `spindle forward status` prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\t{}\t{}\t{}\tas {}\tpending {}\tsent {}\t",
            self.user,
            self.name,
            self.kind.as_str(),
            self.url,
            self.remote_user,
            self.pending,
            self.sent
        )?;
        match (&self.last_error, self.needs_auth) {
            (_, true) => f.write_str("NEEDS RE-LINKING"),
            (Some(e), false) => write!(f, "retrying: {e}"),
            (None, false) => f.write_str("ok"),
        }?;
        write!(f, "\tloves sent {}", self.loves_sent)?;
        if self.loves_skipped > 0 {
            write!(f, ", skipped {}", self.loves_skipped)?;
        }
        Ok(())
    }
}

/// The running links summed ([`Forward::totals`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub links: usize,
    pub pending: usize,
    pub sent: u64,
    pub needs_auth: usize,
}

/// Every link under `root` (of `user` only, if given), from the files.
pub fn from_files(root: &Path, user: Option<&str>) -> Vec<LinkStatus> {
    let mut out = Vec::new();
    for (u, name, dir) in link::list(root) {
        if user.is_some_and(|x| x != u) {
            continue;
        }
        let Ok(l) = link::load(&dir) else {
            continue;
        };
        let saved = link::read_status(&dir);
        let pending = spindle_scrobble::Journal::peek(&dir).map_or(0, |v| v.len());
        out.push(LinkStatus {
            user: u,
            name,
            kind: l.kind,
            url: l.url,
            remote_user: l.remote_user,
            linked_at: l.linked_at,
            pending,
            sent: saved.sent,
            now_playing_sent: saved.now_playing_sent,
            loves_sent: saved.loves_sent,
            loves_skipped: saved.loves_skipped,
            needs_auth: link::needs_auth(&dir),
            last_error: saved.last_error,
            retry_in: None,
            running: false,
        });
    }
    out
}

/// Whether `spindle serve` runs on `data_dir`: it holds the library's
/// lock the whole time it runs.
pub fn server_running(data_dir: &Path) -> bool {
    let Ok(f) = std::fs::File::open(data_dir.join(spindle_store::LOCK_FILE)) else {
        return false;
    };
    match f.try_lock_shared() {
        Ok(()) => {
            let _ = f.unlock();
            false
        }
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(_)) => false,
    }
}

/// A metric of the running links: its name, help, type, and its value
/// for one link.
type Metric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ServiceState) -> u64,
);

/// What `/metrics` shows of each running link.
const METRICS: [Metric; 3] = [
    (
        "spindle_forward_pending",
        "Listens queued for a linked service, not yet acknowledged.",
        "gauge",
        |st| st.pending as u64,
    ),
    (
        "spindle_forward_sent_total",
        "Listens a linked service acknowledged since the server started.",
        "counter",
        |st| st.sent,
    ),
    (
        "spindle_forward_needs_auth",
        "1 while a linked service refuses the credential (link it again).",
        "gauge",
        |st| u64::from(st.needs_auth),
    ),
];

impl Forward {
    /// Every link (of `user` only, if given): the files, with the running
    /// queues' live counters over them.
    pub fn statuses(&self, user: Option<&str>) -> Vec<LinkStatus> {
        let Some(root) = self.root() else {
            return Vec::new();
        };
        let mut out = from_files(root, user);
        let live = self.lock();
        for s in &mut out {
            if let Some(q) = live.get(&(s.user.clone(), s.name.clone())) {
                let st = q.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
                s.pending = st.pending;
                s.sent = st.sent;
                s.now_playing_sent = st.now_playing_sent;
                s.loves_sent = st.loves_sent;
                s.loves_skipped = st.loves_skipped;
                s.needs_auth = st.needs_auth;
                s.retry_in = st.retry_in_now();
                s.last_error = st.last_error;
                s.running = true;
            }
        }
        out
    }

    /// The running links together: how many, listens queued, listens
    /// acknowledged since the server started (a cheap poll: no files).
    pub fn totals(&self) -> Totals {
        let live = self.lock();
        let mut t = Totals {
            links: live.len(),
            ..Totals::default()
        };
        for q in live.values() {
            let st = q.state.lock().unwrap_or_else(|e| e.into_inner());
            t.pending += st.pending;
            t.sent += st.sent;
            t.needs_auth += usize::from(st.needs_auth);
        }
        t
    }

    /// The running links' gauges and counters in Prometheus' text format.
    pub fn metrics(&self) -> String {
        let mut rows: Vec<(String, String, ServiceState)> = self
            .lock()
            .iter()
            .map(|((u, n), q)| {
                let st = q.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
                (u.clone(), n.clone(), st)
            })
            .collect();
        rows.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let mut s = String::new();
        let label = |u: &str, n: &str| {
            format!(
                "user=\"{}\",service=\"{}\"",
                u.replace('\\', "\\\\").replace('"', "\\\""),
                n
            )
        };
        for (name, help, kind, value) in METRICS {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (u, n, st) in &rows {
                let _ = writeln!(s, "{name}{{{}}} {}", label(u, n), value(st));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_says_whether_the_link_is_ok_retrying_or_needs_relinking() {
        let mut s = LinkStatus {
            user: "ann".into(),
            name: "lb".into(),
            kind: LinkKind::Listenbrainz,
            url: "https://api.listenbrainz.org".into(),
            remote_user: "annie".into(),
            linked_at: 1,
            pending: 3,
            sent: 40,
            now_playing_sent: 2,
            loves_sent: 0,
            loves_skipped: 0,
            needs_auth: false,
            last_error: None,
            retry_in: None,
            running: false,
        };
        let head =
            "ann\tlb\tlistenbrainz\thttps://api.listenbrainz.org\tas annie\tpending 3\tsent 40\t";
        let tail = "\tloves sent 0";
        assert_eq!(s.to_string(), format!("{head}ok{tail}"));
        s.last_error = Some("HTTP 503".into());
        assert_eq!(s.to_string(), format!("{head}retrying: HTTP 503{tail}"));
        s.needs_auth = true;
        assert_eq!(s.to_string(), format!("{head}NEEDS RE-LINKING{tail}"));
        (s.loves_sent, s.loves_skipped) = (2, 1);
        assert!(s.to_string().ends_with("\tloves sent 2, skipped 1"));
    }
}
