//! One "loved" fact per user and track, whichever API set it: a Subsonic
//! star of a song is a Last.fm love of its track, a Last.fm love of a
//! library track stars its song, ListenBrainz feedback loves and takes
//! back a love by recording MSID or MBID and lists it, and none of it is
//! seen by another user.

use std::sync::Arc;

use crate::common::Setup;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use spindle_server::params::Params;
use spindle_server::{AppState, Config, ManualClock};

use crate::common;

const PW: &str = "pw for tests";
const NOW: i64 = 1_750_000_000;

struct Fixture {
    app: axum::Router,
    state: AppState,
    clock: Arc<ManualClock>,
    _data: Setup,
}

fn fixture() -> Fixture {
    let d = Setup::demo().user("ann", PW).user("bob", PW);
    let clock = Arc::new(ManualClock::new(NOW));
    let state = d.state(Config::default(), clock.clone());
    Fixture {
        app: spindle_server::router(state.clone()),
        state,
        clock,
        _data: d,
    }
}

/// Two songs of different tracks: (id, artist, title).
fn two_songs(f: &Fixture) -> [(String, String, String); 2] {
    let cat = f.state.music.catalog(&f.state.db);
    let first = &cat.songs[0];
    let other = cat.songs.iter().find(|s| s.title != first.title).unwrap();
    [first, other].map(|s| (s.id.to_string(), s.artist.clone(), s.title.clone()))
}

async fn send(f: &Fixture, req: Request<Body>) -> (StatusCode, String) {
    let (status, _, body) = common::send(&f.app, req).await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn json_of(f: &Fixture, req: Request<Body>) -> (StatusCode, Value) {
    let (status, text) = send(f, req).await;
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, v)
}

/// A Subsonic call as `user`, answered in JSON: its `subsonic-response`.
async fn subsonic(f: &Fixture, user: &str, method: &str, query: &str) -> Value {
    let uri = format!(
        "/rest/{method}?u={user}&p={}&v=1.16.1&c=t&f=json&{query}",
        enc(PW)
    );
    let (_, v) = json_of(f, common::get(uri)).await;
    let r = v["subsonic-response"].clone();
    assert_eq!(r["status"], "ok", "{method}: {r}");
    r
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A signed Last.fm 2.0 call as `user`, answered in JSON.
async fn lastfm(f: &Fixture, user: &str, params: &[(&str, &str)]) -> Value {
    let acc = &f.state.accounts;
    let (key, secret) = acc.add_api_key(user, NOW).unwrap();
    let sk = acc.new_session(user, &key, NOW).unwrap();
    let mut p = Params(
        params
            .iter()
            .chain(&[("api_key", key.as_str()), ("sk", sk.as_str())])
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let sig = p.signature(&secret);
    p.0.push(("api_sig".into(), sig));
    p.0.push(("format".into(), "json".into()));
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&p.0)
        .finish();
    let req = Request::post("/2.0/")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap();
    let (_, v) = json_of(f, req).await;
    assert!(v.get("error").is_none(), "{params:?}: {v}");
    v
}

/// The titles of `user`'s loved tracks, as Last.fm shows them.
async fn loved_titles(f: &Fixture, user: &str) -> Vec<String> {
    let v = lastfm(
        f,
        user,
        &[("method", "user.getLovedTracks"), ("user", user)],
    )
    .await;
    let tracks = &v["lovedtracks"]["track"];
    let list = match tracks {
        Value::Array(a) => a.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    };
    list.iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The ids of the songs `user` starred, as `getStarred2` shows them.
async fn starred_songs(f: &Fixture, user: &str) -> Vec<String> {
    let r = subsonic(f, user, "getStarred2", "").await;
    r["starred2"]["song"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn token(f: &Fixture, user: &str) -> String {
    f.state.accounts.user_token(user).unwrap()
}

async fn feedback(f: &Fixture, user: &str, body: Value) -> (StatusCode, Value) {
    let req = Request::post("/1/feedback/recording-feedback")
        .header("authorization", format!("Token {}", token(f, user)))
        .body(Body::from(body.to_string()))
        .unwrap();
    json_of(f, req).await
}

async fn get_feedback(f: &Fixture, name: &str, as_user: &str, query: &str) -> (StatusCode, Value) {
    let req = Request::get(format!("/1/feedback/user/{name}/get-feedback?{query}"))
        .header("authorization", format!("Token {}", token(f, as_user)))
        .body(Body::empty())
        .unwrap();
    json_of(f, req).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subsonic_star_is_a_lastfm_love_and_a_lastfm_love_stars_the_song() {
    let f = fixture();
    let [(id1, _, title1), (id2, artist2, title2)] = two_songs(&f);

    // Subsonic star → Last.fm love.
    subsonic(&f, "ann", "star", &format!("id={id1}")).await;
    assert_eq!(loved_titles(&f, "ann").await, [title1.as_str()]);
    assert_eq!(starred_songs(&f, "ann").await, [id1.as_str()]);
    // The song's own node says so too.
    let song = subsonic(&f, "ann", "getSong", &format!("id={id1}")).await;
    assert!(song["song"]["starred"].is_string(), "{song}");

    // Last.fm love → Subsonic star.
    lastfm(
        &f,
        "ann",
        &[
            ("method", "track.love"),
            ("artist", &artist2.to_uppercase()),
            ("track", &title2),
        ],
    )
    .await;
    let mut want = vec![id1.clone(), id2.clone()];
    want.sort();
    let mut got = starred_songs(&f, "ann").await;
    got.sort();
    assert_eq!(got, want);

    // Unstar and unlove take each other's back.
    subsonic(&f, "ann", "unstar", &format!("id={id2}")).await;
    assert_eq!(loved_titles(&f, "ann").await, [title1.as_str()]);
    lastfm(
        &f,
        "ann",
        &[
            ("method", "track.unlove"),
            (
                "artist",
                &f.state
                    .music
                    .catalog(&f.state.db)
                    .song(&id1)
                    .unwrap()
                    .artist,
            ),
            ("track", &title1),
        ],
    )
    .await;
    assert!(starred_songs(&f, "ann").await.is_empty());
    assert!(loved_titles(&f, "ann").await.is_empty());

    // Nothing of it is bob's.
    subsonic(&f, "ann", "star", &format!("id={id2}")).await;
    assert!(starred_songs(&f, "bob").await.is_empty());
    assert!(loved_titles(&f, "bob").await.is_empty());
    let (_, v) = get_feedback(&f, "bob", "bob", "").await;
    assert_eq!(v["total_count"], 0, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listenbrainz_feedback_loves_by_msid_or_mbid_and_lists_the_loves_to_their_owner_only() {
    let f = fixture();
    let [(id1, artist1, title1), _] = two_songs(&f);

    // A love made by Last.fm is feedback with an MSID.
    lastfm(
        &f,
        "ann",
        &[
            ("method", "track.love"),
            ("artist", &artist1),
            ("track", &title1),
        ],
    )
    .await;
    let (status, v) = get_feedback(&f, "ann", "ann", "metadata=true").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (v["total_count"].as_u64(), v["count"].as_u64()),
        (Some(1), Some(1)),
        "{v}"
    );
    let item = &v["feedback"][0];
    assert_eq!(item["score"], 1);
    assert_eq!(item["user_id"], "ann");
    assert_eq!(item["track_metadata"]["track_name"], title1.as_str());
    let msid = item["recording_msid"].as_str().unwrap().to_owned();

    // Score 0 by that MSID takes the love (and the star) back.
    let (status, v) = feedback(&f, "ann", json!({"recording_msid": msid, "score": 0})).await;
    assert_eq!(
        (status, &v["status"]),
        (StatusCode::OK, &json!("ok")),
        "{v}"
    );
    assert!(starred_songs(&f, "ann").await.is_empty());
    let (_, v) = get_feedback(&f, "ann", "ann", "").await;
    assert_eq!(v["total_count"], 0, "{v}");

    // Score 1 by MSID stars the song.
    let (status, v) = feedback(&f, "ann", json!({"recording_msid": msid, "score": 1})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(starred_songs(&f, "ann").await, [id1.as_str()]);

    // By MBID: a recording of ann's listens.
    let mbid = "0f6c1a8e-1111-4222-8333-444455556666";
    let listen = json!({"listen_type": "single", "payload": [{"listened_at": NOW - 100,
        "track_metadata": {"artist_name": "Elsewhere", "track_name": "Far",
            "additional_info": {"recording_mbid": mbid}}}]});
    let req = Request::post("/1/submit-listens")
        .header("authorization", format!("Token {}", token(&f, "ann")))
        .body(Body::from(listen.to_string()))
        .unwrap();
    assert_eq!(send(&f, req).await.0, StatusCode::OK);
    f.clock.advance(10);
    let (status, v) = feedback(&f, "ann", json!({"recording_mbid": mbid, "score": 1})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (_, v) = get_feedback(&f, "ann", "ann", "score=1&count=1").await;
    assert_eq!(
        (v["total_count"].as_u64(), v["count"].as_u64()),
        (Some(2), Some(1)),
        "{v}"
    );
    assert_eq!(
        v["feedback"][0]["recording_mbid"], mbid,
        "newest first: {v}"
    );
    let mut loved = loved_titles(&f, "ann").await;
    loved.sort();
    let mut want = vec!["Far".to_owned(), title1.clone()];
    want.sort();
    assert_eq!(loved, want);

    // For recordings: loved or not.
    let req = Request::get(format!(
        "/1/feedback/user/ann/get-feedback-for-recordings?recording_mbids={mbid},00000000-0000-4000-8000-000000000000"
    ))
    .header("authorization", format!("Token {}", token(&f, "ann")))
    .body(Body::empty())
    .unwrap();
    let (_, v) = json_of(&f, req).await;
    let scores: Vec<i64> = v["feedback"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["score"].as_i64().unwrap())
        .collect();
    assert_eq!(scores, [1, 0], "{v}");

    // Hate is refused, and so is an id of nothing known.
    let (status, v) = feedback(&f, "ann", json!({"recording_msid": msid, "score": -1})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"].as_str().unwrap().contains("hate"), "{v}");
    let unknown = json!({"recording_mbid": "00000000-0000-4000-8000-000000000000", "score": 1});
    assert_eq!(
        feedback(&f, "ann", unknown).await.0,
        StatusCode::BAD_REQUEST
    );

    // Private: bob cannot read ann's feedback, and has none of his own.
    let (status, _) = get_feedback(&f, "ann", "bob", "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, v) = get_feedback(&f, "bob", "bob", "").await;
    assert_eq!(v["total_count"], 0, "{v}");
    assert!(starred_songs(&f, "bob").await.is_empty());
    // Without a token: no write.
    let req = Request::post("/1/feedback/recording-feedback")
        .body(Body::from(
            json!({"recording_msid": msid, "score": 1}).to_string(),
        ))
        .unwrap();
    assert_eq!(send(&f, req).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listens_carry_the_msid_that_feedback_takes() {
    let f = fixture();
    let listen = json!({"listen_type": "single", "payload": [{"listened_at": NOW - 100,
        "track_metadata": {"artist_name": "Some Band", "track_name": "A Song"}}]});
    let req = Request::post("/1/submit-listens")
        .header("authorization", format!("Token {}", token(&f, "ann")))
        .body(Body::from(listen.to_string()))
        .unwrap();
    assert_eq!(send(&f, req).await.0, StatusCode::OK);
    let req = Request::get("/1/user/ann/listens")
        .header("authorization", format!("Token {}", token(&f, "ann")))
        .body(Body::empty())
        .unwrap();
    let (_, v) = json_of(&f, req).await;
    let l = &v["payload"]["listens"][0];
    let msid = l["recording_msid"].as_str().unwrap().to_owned();
    assert_eq!(
        l["track_metadata"]["additional_info"]["recording_msid"],
        msid.as_str()
    );
    let (status, _) = feedback(&f, "ann", json!({"recording_msid": msid, "score": 1})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(loved_titles(&f, "ann").await, ["A Song"]);
}
