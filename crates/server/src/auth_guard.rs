//! The one door every credential check goes through: the [`Throttle`]
//! first (a client that must wait is refused before anything is
//! checked), then the check itself — an Argon2 run on the bounded
//! [`HashPool`], or a cheap comparison (sealed password, md5 token,
//! random token) on the caller's thread — then the outcome counted.
//!
//! A user name that does not exist costs what an existing one does: its
//! password is checked against a dummy hash with the stored hashes'
//! parameters on the same pool, and the caller answers it as a wrong
//! password, so neither the answer nor its time tells names apart.
//!
//! Each API maps [`Denied`] to its own error: a wrong credential as
//! before; [`Denied::Wait`] as Subsonic 40 / Last.fm 29 / AS 1.2
//! `BADAUTH` / HTTP 429 with `Retry-After`; [`Denied::Busy`] as "busy, try
//! later".

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::Params;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, Extensions, HeaderValue, StatusCode};
use axum::response::Response;

use crate::accounts::Accounts;
use crate::hash_pool::{HashPool, HashStats, Verify, HASH_QUEUE, HASH_WORKERS};
use crate::state::Clock;
use crate::throttle::{Limits, Throttle};

/// Password hashing and throttling settings (part of [`crate::Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthLimits {
    /// Argon2 checks run at once ([`HASH_WORKERS`]).
    pub hash_workers: usize,
    /// Argon2 checks waiting at most ([`HASH_QUEUE`]).
    pub hash_queue: usize,
    /// Failed-login throttling ([`crate::throttle`]).
    pub throttle: Limits,
}

impl Default for AuthLimits {
    fn default() -> Self {
        AuthLimits {
            hash_workers: HASH_WORKERS,
            hash_queue: HASH_QUEUE,
            throttle: Limits::default(),
        }
    }
}

/// Why a credential was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// Wrong, or no such user (the two are not told apart).
    Wrong,
    /// Too many failures: nothing was checked; try again after this many
    /// seconds.
    Wait { retry_after: i64 },
    /// The hashing pool is full: nothing was checked; try again shortly.
    Busy,
}

/// The guard. One per server, in [`crate::AppState`].
pub struct AuthGuard {
    pool: HashPool,
    throttle: Throttle,
    dummy_salt: [u8; 16],
}

impl AuthGuard {
    /// Starts the hashing threads (they stop when the guard is dropped).
    pub fn new(limits: &AuthLimits, clock: Arc<dyn Clock>) -> AuthGuard {
        let mut dummy_salt = [0u8; 16];
        OsRng.fill_bytes(&mut dummy_salt);
        AuthGuard {
            pool: HashPool::new(limits.hash_workers, limits.hash_queue),
            throttle: Throttle::new(limits.throttle.clone(), clock),
            dummy_salt,
        }
    }

    /// Checks `user`'s password against its Argon2 hash on the pool.
    pub async fn password(
        &self,
        accounts: &Accounts,
        ip: Option<IpAddr>,
        user: &str,
        password: &str,
        via: &'static str,
    ) -> Result<(), Denied> {
        let attempt = self.throttle.begin(ip, Some(user), via).map_err(wait)?;
        let verify = accounts
            .password_hash(user)
            .and_then(|phc| Verify::from_phc(&phc, password.as_bytes()))
            // The parameters `Accounts::add_user` hashes with.
            .unwrap_or_else(|| {
                Verify::dummy(Params::default(), &self.dummy_salt, password.as_bytes())
            });
        match self.pool.verify(verify).await {
            Ok(true) => {
                attempt.succeed();
                Ok(())
            }
            Ok(false) => {
                attempt.fail();
                Err(Denied::Wrong)
            }
            Err(_busy) => {
                attempt.abandon();
                Err(Denied::Busy)
            }
        }
    }

    /// A cheap check (a sealed password, an md5 token, a random token):
    /// `check` answers the user it proves, or `None`. `user` is the name
    /// the client claims, `None` for a bare token.
    pub fn check<T>(
        &self,
        ip: Option<IpAddr>,
        user: Option<&str>,
        via: &'static str,
        check: impl FnOnce() -> Option<T>,
    ) -> Result<T, Denied> {
        let attempt = self.throttle.begin(ip, user, via).map_err(wait)?;
        match check() {
            Some(t) => {
                attempt.succeed();
                Ok(t)
            }
            None => {
                attempt.fail();
                Err(Denied::Wrong)
            }
        }
    }

    /// The hashing pool's counters.
    pub fn hash_stats(&self) -> &HashStats {
        self.pool.stats()
    }
}

fn wait(w: crate::throttle::Wait) -> Denied {
    Denied::Wait {
        retry_after: w.retry_after.max(1),
    }
}

/// A refusal over HTTP: 401 for a wrong credential (with `wrong`), 429
/// with `Retry-After` for a wait, 503 with `Retry-After: 1` for a full
/// pool; `body` makes the response in the API's format from the status and
/// a message.
pub fn http_refusal(
    denied: Denied,
    wrong: &str,
    body: impl FnOnce(StatusCode, &str) -> Response,
) -> Response {
    let (status, msg, retry) = match denied {
        Denied::Wrong => (StatusCode::UNAUTHORIZED, wrong.to_owned(), None),
        Denied::Wait { retry_after } => (
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many failed logins; try again in {retry_after} s"),
            Some(retry_after),
        ),
        Denied::Busy => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is busy; try again shortly".to_owned(),
            Some(1),
        ),
    };
    let mut r = body(status, &msg);
    if let Some(secs) = retry {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    }
    r
}

/// The client's address, as the connection loop recorded it; `None` for a
/// request that did not come through it (a router called in-process).
pub fn client_ip(ext: &Extensions) -> Option<IpAddr> {
    ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}

/// Extracts [`client_ip`].
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(client_ip(&parts.extensions)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ManualClock;

    fn accounts() -> (Accounts, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let a = Accounts::open(dir.path()).unwrap();
        a.add_user("ann", "s3cret", 0).unwrap();
        (a, dir)
    }

    fn guard() -> AuthGuard {
        AuthGuard::new(
            &AuthLimits::default(),
            Arc::new(ManualClock::new(1_000_000)),
        )
    }

    #[tokio::test]
    async fn the_right_password_passes_and_an_unknown_user_costs_one_hash_too() {
        let (acc, _dir) = accounts();
        let g = guard();
        let ip = Some("192.0.2.1".parse().unwrap());
        assert_eq!(g.password(&acc, ip, "ann", "s3cret", "test").await, Ok(()));
        assert_eq!(g.hash_stats().done(), 1);
        assert_eq!(
            g.password(&acc, ip, "ann", "wrong", "test").await,
            Err(Denied::Wrong)
        );
        assert_eq!(g.hash_stats().done(), 2);
        assert_eq!(
            g.password(&acc, ip, "nobody", "s3cret", "test").await,
            Err(Denied::Wrong)
        );
        assert_eq!(g.hash_stats().done(), 3);
    }

    /// The real router over a user "ann" (password "s3cret", hashed with
    /// cheap parameters so fifty checks take milliseconds).
    fn app(auth: AuthLimits) -> (axum::Router, crate::AppState, tempfile::TempDir) {
        let data = tempfile::tempdir().unwrap();
        let db = Arc::new(spindle_store::Db::open(data.path().join("lib")).unwrap());
        let accounts = Accounts::open(&data.path().join("accounts")).unwrap();
        accounts.add_user_cheaply("ann", "s3cret");
        let (listens, _) = spindle_listens::Listens::open(&data.path().join("listens")).unwrap();
        let config = crate::Config {
            auth,
            ..crate::Config::default()
        };
        let state = crate::AppState::new(
            db,
            Arc::new(accounts),
            Arc::new(listens),
            config,
            Arc::new(crate::SystemClock),
        );
        (crate::router(state.clone()), state, data)
    }

    fn from(
        mut req: axum::http::Request<axum::body::Body>,
        i: u8,
    ) -> axum::http::Request<axum::body::Body> {
        let addr = SocketAddr::from(([10, 0, 0, i], 40000));
        req.extensions_mut().insert(ConnectInfo(addr));
        req
    }

    fn web_login(user: &str, password: &str) -> axum::http::Request<axum::body::Body> {
        axum::http::Request::post("/ui/login")
            .header("x-spindle-csrf", "1")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(
                serde_json::json!({ "user": user, "password": password }).to_string(),
            ))
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn fifty_concurrent_failed_logins_run_no_more_hashes_at_once_than_the_pool_has() {
        use tower::ServiceExt;
        // Throttling off: this is about the pool alone.
        let (router, state, _dir) = app(AuthLimits {
            throttle: Limits::off(),
            ..AuthLimits::default()
        });
        let mut tasks = Vec::new();
        for i in 0..50u8 {
            let req = if i % 2 == 0 {
                web_login("ann", &format!("guess{i}"))
            } else {
                // "ann:wrong", HTTP Basic on /metrics.
                axum::http::Request::get("/metrics")
                    .header("authorization", "Basic YW5uOndyb25n")
                    .body(axum::body::Body::empty())
                    .unwrap()
            };
            let router = router.clone();
            tasks.push(tokio::spawn(async move {
                router.oneshot(from(req, i)).await.unwrap().status()
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), axum::http::StatusCode::UNAUTHORIZED);
        }
        let stats = state.guard.hash_stats();
        assert_eq!(stats.done(), 50);
        assert!(
            (1..=HASH_WORKERS).contains(&stats.peak()),
            "{} hashes ran at once",
            stats.peak()
        );
        assert_eq!(stats.running(), 0);
    }

    #[tokio::test]
    async fn an_unknown_user_runs_one_hash_as_a_known_one_does_and_gets_the_same_answer() {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let (router, state, _dir) = app(AuthLimits::default());
        let mut answers = Vec::new();
        for (i, user) in [(1, "ann"), (2, "nobody")] {
            let before = state.guard.hash_stats().done();
            let r = router
                .clone()
                .oneshot(from(web_login(user, "x"), i))
                .await
                .unwrap();
            let status = r.status();
            let body = r.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(state.guard.hash_stats().done(), before + 1, "{user}");
            answers.push((status, body));
        }
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[0].0, axum::http::StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn a_waiting_client_is_refused_without_a_hash() {
        let (acc, _dir) = accounts();
        let g = guard();
        let ip = Some("192.0.2.1".parse().unwrap());
        for _ in 0..=crate::throttle::PAIR_FREE_FAILURES {
            let _ = g.check(ip, Some("ann"), "test", || None::<()>);
        }
        let before = g.hash_stats().done();
        assert_eq!(
            g.password(&acc, ip, "ann", "s3cret", "test").await,
            Err(Denied::Wait { retry_after: 1 })
        );
        assert_eq!(g.hash_stats().done(), before);
    }
}
