//! The Last.fm side: the 2.0 API at `/2.0/` (GET and POST, query and
//! form merged; this file), answering XML by default and JSON for
//! `format=json` ([`response`]); the desktop-auth approval page at
//! `/api/auth/` ([`auth_page`]); and the older Audioscrobbler 1.2
//! protocol at `/?hs=true` ([`as12`]). Requests are signed with
//! `api_sig` ([`crate::params::Params::signature_ok`]). The routes are
//! the rows of `routes::ROUTES`, the 2.0 methods those of
//! [`methods::TABLE`]; errors are [`LfmError`]s (2.0) and
//! `as12::As12Error`s. Tokens and 1.2 sessions live in the adapter's
//! substate ([`LastfmState`]).
//!
//! A session key works only with the API key it was issued under. The
//! `user.*` read methods (getInfo, getRecentTracks, getTopArtists,
//! getTopAlbums, getTopTracks, getLovedTracks, the weekly charts of
//! `charts.rs`) and `library.getArtists` reveal a listening history,
//! so they follow the user's privacy setting: a private history is read
//! by its owner only, with their session key in a signed call; anyone
//! else gets error 17 with [`PRIVATE`], the same answer as for a user
//! that does not exist.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use spindle_listens::{ChartKind, Listen, RecentQuery};

use crate::accounts::random_hex;
use crate::auth_guard::Denied;
use crate::music::{history_readable, Music};
use crate::params::Params;
use crate::scrobble::{self, Ignored};
use crate::state::AppState;
use crate::time::lastfm_date;
pub use error::LfmError;
pub(crate) use error::{err, missing};
use live::Exchange;
use methods::Op;
use response::{ok_body, respond, Fmt, Node};

pub mod as12;
pub mod auth_page;
mod charts;
mod error;
mod live;
pub mod methods;
pub mod response;
pub mod routes;

pub use live::{LastfmState, PendingToken};

/// Most scrobbles in one `track.scrobble` call.
pub const MAX_BATCH: usize = 50;
/// How long an `auth.getToken` token can be approved and exchanged.
pub const TOKEN_TTL: i64 = 3600;

/// The 2.0 API, the desktop-auth page and Audioscrobbler 1.2: the routes
/// of `routes::ROUTES`.
pub fn router() -> Router<AppState> {
    routes::router()
}

/// `/2.0/`: the call's format, then its answer or its error in that
/// format.
async fn handle(State(st): State<AppState>, req: Request) -> Response {
    let ip = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let query = req.uri().query().map(str::to_owned);
    // Until the body is read, the query says the format (no callback).
    let fmt = Fmt {
        json: query
            .as_deref()
            .is_some_and(|q| Params::parse(Some(q), b"").get("format") == Some("json")),
        callback: None,
    };
    // The credentials are in the body: its size, deadline and the body
    // budget are what bound an unauthenticated client (crate::body).
    let limit = crate::body::SCROBBLE_FORM_MAX;
    let body = match crate::body::read_body(req.into_body(), limit, &st.bodies).await {
        Ok(b) => b,
        Err(e) => return LfmError::from(e).render(&fmt),
    };
    let p = Params::parse(query.as_deref(), &body);
    let fmt = Fmt {
        json: p.get("format") == Some("json"),
        callback: p
            .get("callback")
            .filter(|c| {
                !c.is_empty()
                    && c.chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '$'))
            })
            .map(str::to_owned),
    };
    match rated_call(&st, &p, ip).await {
        Ok(node) => respond(&fmt, StatusCode::OK, ok_body(node.as_ref(), fmt.json)),
        Err(e) => e.render(&fmt),
    }
}

/// [`call`] within the client's rate limit (error 29 past it).
async fn rated_call(
    st: &AppState,
    p: &Params,
    ip: Option<IpAddr>,
) -> Result<Option<Node>, LfmError> {
    if !st.rate(ip).allowed {
        return Err(err(
            29,
            "Rate Limit Exceeded - Your IP has made too many requests in a short period",
        ));
    }
    call(st, p, Some(&st.music), ip).await
}

fn is_scrobble_field(name: &str) -> bool {
    let base = name.split('[').next().unwrap_or(name);
    matches!(
        base,
        "artist"
            | "track"
            | "album"
            | "albumArtist"
            | "mbid"
            | "timestamp"
            | "duration"
            | "trackNumber"
            | "context"
            | "streamId"
            | "streamID"
            | "chosenByUser"
    )
}

async fn call(
    st: &AppState,
    p: &Params,
    music: Option<&Music>,
    ip: Option<IpAddr>,
) -> Result<Option<Node>, LfmError> {
    let method = p.nonempty("method").ok_or_else(|| missing("method"))?;
    throttle_session_key(st, p, ip)?;
    let method = method.to_ascii_lowercase();
    if let Some(name) = p.nul_in() {
        // NULs inside scrobble fields are judged per scrobble.
        if !(method == "track.scrobble" && is_scrobble_field(name)) {
            return Err(err(6, format!("Invalid parameters - NUL byte in '{name}'")));
        }
    }
    let Some(m) = methods::find(&method) else {
        return Err(err(
            3,
            "Invalid Method - No method with that name in this package",
        ));
    };
    match m.op {
        Op::GetToken => {
            let key = signed(st, p)?;
            let token = random_hex();
            st.lastfm.add_token(token.clone(), key, st.now());
            Ok(Some(Node::text("token", token)))
        }
        Op::GetSession => {
            let key = signed(st, p)?;
            let token = p.nonempty("token").ok_or_else(|| missing("token"))?;
            let user = match st.lastfm.exchange(token, &key, st.now()) {
                Exchange::Approved(user) => user,
                Exchange::Unapproved => {
                    return Err(err(
                        14,
                        "Unauthorized Token - This token has not been authorized",
                    ))
                }
                Exchange::Expired => {
                    return Err(err(15, "Unauthorized Token - This token has expired"))
                }
            };
            session_node(st, &user, &key).await
        }
        Op::GetMobileSession => {
            let key = signed(st, p)?;
            let user = p.nonempty("username").ok_or_else(|| missing("username"))?;
            let checked = match (p.get("password"), p.get("authToken")) {
                (Some(pw), _) => st.guard.password(&st.accounts, ip, user, pw, VIA).await,
                (None, Some(t)) => st.guard.check(ip, Some(user), VIA, || {
                    st.accounts.check_auth_token(user, t).then_some(())
                }),
                (None, None) => return Err(missing("password")),
            };
            checked.map_err(login_refused)?;
            session_node(st, user, &key).await
        }
        Op::UpdateNowPlaying => {
            let user = authed(st, p)?;
            let mut l = listen_from(p, &user).ok_or_else(|| missing("artist, track"))?;
            l.timestamp = st.now();
            let ig = scrobble::check(st, &l, false).err();
            if ig.is_none() {
                st.set_now_playing(l.clone());
            }
            let code = ig.map_or(0, Ignored::code);
            Ok(Some(
                Node::new("nowplaying")
                    .child(Node::text("track", &l.title).attr("corrected", "0"))
                    .child(Node::text("artist", &l.artist).attr("corrected", "0"))
                    .child(Node::text("album", &l.album).attr("corrected", "0"))
                    .child(Node::text("albumArtist", &l.album_artist).attr("corrected", "0"))
                    .child(
                        Node::text("ignoredMessage", ig.map_or("", Ignored::message))
                            .attr("code", code.to_string()),
                    ),
            ))
        }
        Op::Scrobble => {
            let user = authed(st, p)?;
            scrobble_batch(st, p, &user).await.map(Some)
        }
        Op::Love(on) => {
            let user = authed(st, p)?;
            let artist = p.nonempty("artist").ok_or_else(|| missing("artist"))?;
            let track = p.nonempty("track").ok_or_else(|| missing("track"))?;
            scrobble::love(st, user, artist.into(), track.into(), on)
                .await
                .map_err(|e| match e.is_refusal() {
                    true => err(6, format!("Invalid parameters - {e}")),
                    false => err(16, format!("Temporary error - {e}")),
                })?;
            Ok(None)
        }
        Op::UserInfo => {
            let user = target_user(st, p, music)?;
            let s = st.listens.summary(&user);
            let reg = st.accounts.user_created(&user).unwrap_or(0);
            Ok(Some(
                Node::new("user")
                    .child(Node::text("name", &user))
                    .child(Node::text("realname", ""))
                    .child(Node::text("url", ""))
                    .child(Node::text("country", ""))
                    .child(Node::text("age", "0"))
                    .child(Node::text("gender", "n"))
                    .child(Node::text("subscriber", "0"))
                    .child(Node::text("playcount", s.playcount.to_string()))
                    .child(Node::text("artist_count", s.artist_count.to_string()))
                    .child(Node::text("track_count", s.track_count.to_string()))
                    .child(Node::text("album_count", s.album_count.to_string()))
                    .child(Node::text("playlists", "0"))
                    .child(Node::text("bootstrap", "0"))
                    .child(
                        Node::text("registered", reg.to_string()).attr("unixtime", reg.to_string()),
                    )
                    .child(Node::text("type", "user")),
            ))
        }
        Op::RecentTracks => recent_tracks(st, p, music),
        Op::WeeklyChartList => charts::weekly_chart_list(st, p, music),
        Op::WeeklyChart(kind) => charts::weekly_chart(st, p, kind, music),
        Op::LibraryArtists => charts::library_artists(st, p, music),
        Op::Info(kind) => charts::info(st, p, kind, music),
        Op::Top(kind) => top(st, p, kind, music),
        Op::LovedTracks => {
            let user = target_user(st, p, music)?;
            let (limit, page) = paging(p, 50)?;
            let all = st.listens.loved(&user);
            let total = all.len();
            let rows = all
                .into_iter()
                .skip((page - 1).saturating_mul(limit))
                .take(limit)
                .map(|l| {
                    Node::new("track")
                        .child(Node::text("name", &l.title))
                        .child(Node::text("mbid", ""))
                        .child(Node::text("url", ""))
                        .child(date_node(l.timestamp))
                        .child(
                            Node::new("artist")
                                .child(Node::text("name", &l.artist))
                                .child(Node::text("mbid", ""))
                                .child(Node::text("url", "")),
                        )
                });
            Ok(Some(
                list_attrs(Node::new("lovedtracks"), &user, page, limit, total).children(rows),
            ))
        }
    }
}

/// The API's name in log lines.
const VIA: &str = "lastfm";

/// A login's refusal in Last.fm's words (a wait as error 29, which
/// clients back off from).
fn login_refused(d: Denied) -> LfmError {
    match d {
        Denied::Wrong => err(4, "Authentication Failed - Invalid username or password"),
        Denied::Wait { retry_after } => err(
            29,
            format!("Rate Limit Exceeded - too many failed logins; try again in {retry_after} s"),
        ),
        Denied::Busy => err(
            16,
            "There was a temporary error processing your request - the server is busy",
        ),
    }
}

/// A session key is a credential: an unknown one counts as a failure of
/// the client's address, and an address that must wait is refused before
/// any key is looked at. The method itself answers an unknown key (error
/// 9), as before.
fn throttle_session_key(st: &AppState, p: &Params, ip: Option<IpAddr>) -> Result<(), LfmError> {
    let Some(sk) = p.nonempty("sk") else {
        return Ok(());
    };
    match st.guard.check(ip, None, VIA, || st.accounts.session(sk)) {
        Err(d @ Denied::Wait { .. }) => Err(login_refused(d)),
        _ => Ok(()),
    }
}

async fn session_node(st: &AppState, user: &str, key: &str) -> Result<Option<Node>, LfmError> {
    let (u, k, now) = (user.to_owned(), key.to_owned(), st.now());
    // An fsyncing write of the accounts: on the blocking pool.
    let sk = st
        .call(move |st| st.accounts.new_session(&u, &k, now))
        .await
        .map_err(|e| err(16, format!("Temporary error - {e}")))?
        .map_err(|e| err(16, format!("Temporary error - {e}")))?;
    Ok(Some(
        Node::new("session")
            .child(Node::text("name", user))
            .child(Node::text("key", sk))
            .child(Node::text("subscriber", "0")),
    ))
}

/// The API key's secret; the key must exist.
fn api_secret(st: &AppState, p: &Params) -> Result<(String, String), LfmError> {
    let key = p.nonempty("api_key").ok_or_else(|| missing("api_key"))?;
    let secret = st
        .accounts
        .api_secret(key)
        .ok_or_else(|| err(10, "Invalid API key - You must be granted a valid key"))?;
    Ok((key.to_owned(), secret))
}

/// A call that must be signed: returns its API key.
fn signed(st: &AppState, p: &Params) -> Result<String, LfmError> {
    let (key, secret) = api_secret(st, p)?;
    if p.get("api_sig").is_none() {
        return Err(missing("api_sig"));
    }
    if !p.signature_ok(&secret) {
        return Err(err(13, "Invalid method signature supplied"));
    }
    Ok(key)
}

/// A signed call with a session key: returns the user.
fn authed(st: &AppState, p: &Params) -> Result<String, LfmError> {
    let key = signed(st, p)?;
    let sk = p.nonempty("sk").ok_or_else(|| missing("sk"))?;
    session_user(st, sk, &key)
}

/// The user of a session key, which must have been issued under `api_key`
/// (a key leaked from one application is no use with another's).
fn session_user(st: &AppState, sk: &str, api_key: &str) -> Result<String, LfmError> {
    st.accounts
        .session(sk)
        .filter(|s| s.api_key == api_key)
        .map(|s| s.user)
        .ok_or_else(|| err(9, "Invalid session key - Please re-authenticate"))
}

/// The error 17 message of a history read the caller may not make, for a
/// private user and a user that does not exist alike.
pub const PRIVATE: &str = "Login: User required to be logged in - the listening history \
of this user is private, or there is no such user";

/// Who makes a call: the user of its session key when the call is signed
/// with the key's secret, else nobody (an unsigned session key proves
/// nothing: anyone may copy it).
fn viewer(st: &AppState, p: &Params) -> Result<Option<String>, LfmError> {
    let (key, secret) = api_secret(st, p)?;
    let signed = match p.get("api_sig") {
        Some(_) if !p.signature_ok(&secret) => {
            return Err(err(13, "Invalid method signature supplied"))
        }
        Some(_) => true,
        None => false,
    };
    match (p.nonempty("sk"), signed) {
        (Some(sk), true) => Ok(Some(session_user(st, sk, &key)?)),
        _ => Ok(None),
    }
}

/// The user a read call is about (`user`, else the session's user), once
/// the caller may read their history: anyone when it is public, else only
/// the user, by a session key (issued under this API key) in a call
/// signed with the key's secret. Refused with error 17 ([`PRIVATE`]),
/// whether the user is private or does not exist.
fn target_user(st: &AppState, p: &Params, music: Option<&Music>) -> Result<String, LfmError> {
    let viewer = viewer(st, p)?;
    let user = match (p.nonempty("user"), &viewer) {
        (Some(u), _) => u.to_owned(),
        (None, Some(v)) => v.clone(),
        (None, None) => return Err(missing("user")),
    };
    if !history_readable(&st.accounts, music, &user, viewer.as_deref()) {
        return Err(err(17, PRIVATE));
    }
    Ok(user)
}

fn paging(p: &Params, default_limit: usize) -> Result<(usize, usize), LfmError> {
    let num = |name: &str, default: usize| -> Result<usize, LfmError> {
        match p.nonempty(name) {
            None => Ok(default),
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| err(6, format!("Invalid parameters - '{name}' is not a number"))),
        }
    };
    let limit = num("limit", default_limit)?.clamp(1, 1000);
    let page = num("page", 1)?.max(1);
    Ok((limit, page))
}

fn list_attrs(n: Node, user: &str, page: usize, limit: usize, total: usize) -> Node {
    n.attr("user", user)
        .attr("page", page.to_string())
        .attr("perPage", limit.to_string())
        .attr("totalPages", total.div_ceil(limit).to_string())
        .attr("total", total.to_string())
}

fn date_node(ts: i64) -> Node {
    Node::text("date", lastfm_date(ts)).attr("uts", ts.to_string())
}

fn track_node(l: &Listen, now_playing: bool) -> Node {
    let mut n = Node::new("track");
    if now_playing {
        n = n.attr("nowplaying", "true");
    }
    n = n
        .child(Node::text("artist", &l.artist).attr("mbid", ""))
        .child(Node::text("streamable", "0"))
        .child(Node::text("name", &l.title))
        .child(Node::text("mbid", &l.mbid))
        .child(Node::text("album", &l.album).attr("mbid", ""))
        .child(Node::text("url", ""));
    if !now_playing {
        n = n.child(date_node(l.timestamp));
    }
    n
}

fn recent_tracks(
    st: &AppState,
    p: &Params,
    music: Option<&Music>,
) -> Result<Option<Node>, LfmError> {
    let user = target_user(st, p, music)?;
    let (limit, page) = paging(p, 50)?;
    let time = |name: &str| -> Result<Option<i64>, LfmError> {
        p.nonempty(name)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| err(6, format!("Invalid parameters - '{name}' is not a number")))
            })
            .transpose()
    };
    let q = RecentQuery {
        from: time("from")?,
        to: time("to")?,
        limit,
        page,
    };
    let res = st.listens.recent(&user, &q);
    let mut n = list_attrs(Node::new("recenttracks"), &user, page, limit, res.total);
    if page == 1 && q.to.is_none() {
        if let Some(np) = st.now_playing(&user) {
            n = n.child(track_node(&np, true));
        }
    }
    Ok(Some(n.children(
        res.listens.iter().map(|l| track_node(l, false)),
    )))
}

/// The start of a chart period, `None` for overall.
pub fn period_start(period: &str, now: i64) -> Option<Option<i64>> {
    let days = match period {
        "overall" | "" => return Some(None),
        "7day" => 7,
        "1month" => 30,
        "3month" => 90,
        "6month" => 180,
        "12month" => 365,
        _ => return None,
    };
    Some(Some(now - days * 86_400))
}

fn top(
    st: &AppState,
    p: &Params,
    kind: ChartKind,
    music: Option<&Music>,
) -> Result<Option<Node>, LfmError> {
    let user = target_user(st, p, music)?;
    let (limit, page) = paging(p, 50)?;
    let period = p.get("period").unwrap_or("overall");
    let since = period_start(period, st.now()).ok_or_else(|| {
        err(
            6,
            "Invalid parameters - period must be overall, 7day, 1month, 3month, 6month or 12month",
        )
    })?;
    let chart = st.listens.top(&user, kind, since, limit, page);
    let (outer, inner) = match kind {
        ChartKind::Artists => ("topartists", "artist"),
        ChartKind::Albums => ("topalbums", "album"),
        ChartKind::Tracks => ("toptracks", "track"),
    };
    let rows = chart.rows.iter().map(|r| {
        let mut n = Node::new(inner)
            .attr("rank", r.rank.to_string())
            .child(Node::text("name", &r.name))
            .child(Node::text("playcount", r.playcount.to_string()))
            .child(Node::text("mbid", ""))
            .child(Node::text("url", ""));
        if kind != ChartKind::Artists {
            n = n.child(
                Node::new("artist")
                    .child(Node::text("name", &r.artist))
                    .child(Node::text("mbid", ""))
                    .child(Node::text("url", "")),
            );
        }
        n
    });
    Ok(Some(
        list_attrs(Node::new(outer), &user, page, limit, chart.total)
            .attr("type", period)
            .children(rows),
    ))
}

/// The fields of one scrobble a listen is built from, by slot.
const FIELDS: [&str; 8] = [
    "artist",
    "track",
    "album",
    "albumArtist",
    "mbid",
    "timestamp",
    "duration",
    "trackNumber",
];
const ARTIST: usize = 0;
const TRACK: usize = 1;
const ALBUM: usize = 2;
const ALBUM_ARTIST: usize = 3;
const MBID: usize = 4;
const TIMESTAMP: usize = 5;
const DURATION: usize = 6;
const TRACK_NUMBER: usize = 7;

/// One scrobble's fields, borrowed from the request's parameters.
type Fields<'a> = [Option<&'a str>; FIELDS.len()];

fn slot(name: &str) -> Option<usize> {
    FIELDS.iter().position(|f| *f == name)
}

/// The now-playing listen named by the plain parameters.
fn listen_from(p: &Params, user: &str) -> Option<Listen> {
    let mut f: Fields = [None; FIELDS.len()];
    for (i, name) in FIELDS.iter().enumerate() {
        f[i] = p.get(name);
    }
    listen_from_fields(&f, user)
}

fn listen_from_fields(f: &Fields, user: &str) -> Option<Listen> {
    let text = |i: usize| f[i].unwrap_or("").to_owned();
    let num = |i: usize| f[i].and_then(|d| d.trim().parse().ok());
    Some(Listen {
        user: user.to_owned(),
        timestamp: 0,
        artist: f[ARTIST]?.to_owned(),
        artists: Vec::new(),
        title: f[TRACK]?.to_owned(),
        album: text(ALBUM),
        album_artist: text(ALBUM_ARTIST),
        mbid: text(MBID),
        duration: num(DURATION),
        track_number: num(TRACK_NUMBER),
        client: "lastfm".into(),
    })
}

/// The scrobbles of a `track.scrobble` call by index (`artist[i]`, …, in
/// index order), or the one given by plain names. A later duplicate of a
/// name is ignored, as in `Params::get`.
fn scrobble_fields(p: &Params) -> Result<Vec<Fields<'_>>, LfmError> {
    let mut items: Vec<Option<Fields>> = Vec::new();
    let mut plain: Fields = [None; FIELDS.len()];
    for (k, v) in &p.0 {
        if let Some((name, rest)) = k.split_once('[') {
            let Some(idx) = rest.strip_suffix(']') else {
                continue;
            };
            if !is_scrobble_field(name) {
                continue;
            }
            let Ok(i) = idx.parse::<usize>() else {
                return Err(err(6, format!("Invalid parameters - bad index in '{k}'")));
            };
            if i >= MAX_BATCH {
                return Err(err(
                    6,
                    format!("Invalid parameters - at most {MAX_BATCH} scrobbles per call (got index {i})"),
                ));
            }
            if items.len() <= i {
                items.resize(i + 1, None);
            }
            let item = items[i].get_or_insert([None; FIELDS.len()]);
            if let Some(s) = slot(name) {
                item[s].get_or_insert(v.as_str());
            }
        } else if let Some(s) = slot(k) {
            plain[s].get_or_insert(v.as_str());
        }
    }
    let items: Vec<Fields> = items.into_iter().flatten().collect();
    if !items.is_empty() {
        return Ok(items);
    }
    if plain[ARTIST].is_none() && plain[TRACK].is_none() {
        return Err(missing("artist[i], track[i], timestamp[i]"));
    }
    Ok(vec![plain])
}

async fn scrobble_batch(st: &AppState, p: &Params, user: &str) -> Result<Node, LfmError> {
    // Judge each scrobble.
    let mut verdicts: Vec<(Listen, Option<Ignored>)> = Vec::with_capacity(MAX_BATCH);
    for f in scrobble_fields(p)? {
        let verdict = match listen_from_fields(&f, user) {
            None => {
                let mut l = Listen::new(user, 0, "", "");
                l.client = "lastfm".into();
                let ig = if f[ARTIST].is_none() {
                    Ignored::Artist
                } else {
                    Ignored::Track
                };
                (l, Some(ig))
            }
            Some(mut l) => match f[TIMESTAMP].map(|t| t.trim().parse::<i64>()) {
                Some(Ok(ts)) => {
                    l.timestamp = ts;
                    let v = scrobble::check(st, &l, true).err();
                    (l, v)
                }
                _ => (l, Some(Ignored::TooOld)),
            },
        };
        verdicts.push(verdict);
    }
    // The answer only depends on the verdicts: build it now, then move the
    // valid listens into the store (no copies).
    let accepted = verdicts.iter().filter(|(_, v)| v.is_none()).count();
    let ignored = verdicts.len() - accepted;
    let rows: Vec<Node> = verdicts
        .iter()
        .map(|(l, v)| {
            let clean = |s: &str| {
                if s.contains('\0') {
                    s.replace('\0', "")
                } else {
                    s.to_owned()
                }
            };
            Node::new("scrobble")
                .child(Node::text("track", clean(&l.title)).attr("corrected", "0"))
                .child(Node::text("artist", clean(&l.artist)).attr("corrected", "0"))
                .child(Node::text("album", clean(&l.album)).attr("corrected", "0"))
                .child(Node::text("albumArtist", clean(&l.album_artist)).attr("corrected", "0"))
                .child(Node::text("timestamp", l.timestamp.to_string()))
                .child(
                    Node::text("ignoredMessage", v.map_or("", Ignored::message))
                        .attr("code", v.map_or(0, Ignored::code).to_string()),
                )
        })
        .collect();
    let valid: Vec<Listen> = verdicts
        .into_iter()
        .filter(|(_, v)| v.is_none())
        .map(|(l, _)| l)
        .collect();
    scrobble::store(st, valid)
        .await
        .map_err(|e| match e.is_refusal() {
            true => err(6, format!("Invalid parameters - {e}")),
            false => err(16, format!("Temporary error, please retry - {e}")),
        })?;
    Ok(Node::new("scrobbles")
        .attr("accepted", accepted as u64)
        .attr("ignored", ignored as u64)
        .children(rows))
}
