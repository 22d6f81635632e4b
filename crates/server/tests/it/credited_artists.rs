//! A listen credited to several artists, submitted by a ListenBrainz
//! client with `additional_info.artist_names`: each artist's statistics
//! (ListenBrainz and Last.fm) count it, and the listens read back carry
//! the names.

use std::sync::Arc;

use crate::common::Setup;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::Value;
use spindle_server::{Config, ManualClock, Music};

use crate::common;

const NOW: i64 = 1_700_000_000;

async fn json(app: &axum::Router, req: Request<Body>) -> Value {
    let (status, _, body) = common::send(app, req).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::OK, "{text}");
    serde_json::from_str(&text).unwrap()
}

fn with_token(req: axum::http::request::Builder, token: &str) -> axum::http::request::Builder {
    req.header(header::AUTHORIZATION, format!("Token {token}"))
}

#[tokio::test]
async fn a_listenbrainz_listen_with_artist_names_counts_for_each_artist_in_the_stats() {
    let d = Setup::empty().user("ann", "pw");
    let (key, _) = d.accounts.add_api_key("tests", 0).unwrap();
    let token = d.token("ann");
    let state = d.state(Config::default(), Arc::new(ManualClock::new(NOW)));
    let state = state
        .with_music(Music::new(&[], d.path()).unwrap())
        .started();
    // Public, so that Last.fm's read below needs no session.
    state.music.set_listens_public("ann", true).unwrap();
    let app = spindle_server::router(state);
    let listen = |ts: i64, artist: &str, title: &str, names: &str| {
        format!(
            r#"{{"listened_at":{ts},"track_metadata":{{"artist_name":"{artist}","track_name":"{title}","additional_info":{{"artist_names":[{names}]}}}}}}"#
        )
    };
    let doc = format!(
        r#"{{"listen_type":"import","payload":[{},{},{}]}}"#,
        listen(NOW - 900, "Daft Punk", "One More Time", ""),
        listen(NOW - 600, "Daft Punk", "Aerodynamic", r#""Daft Punk""#),
        listen(
            NOW - 300,
            "Daft Punk feat. Pharrell Williams",
            "Get Lucky",
            r#""Daft Punk","Pharrell Williams""#
        ),
    );
    let req = with_token(Request::post("/1/submit-listens"), &token)
        .body(Body::from(doc))
        .unwrap();
    assert_eq!(json(&app, req).await["status"], "ok");

    // ListenBrainz's artist statistics: each credited artist, whole.
    let req = with_token(
        Request::get("/1/stats/user/ann/artists?range=all_time"),
        &token,
    )
    .body(Body::empty())
    .unwrap();
    let stats = json(&app, req).await;
    let mut rows: Vec<(String, u64)> = stats["payload"]["artists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["artist_name"].as_str().unwrap().to_owned(),
                a["listen_count"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    let want = vec![
        ("Daft Punk".to_owned(), 3),
        ("Pharrell Williams".to_owned(), 1),
    ];
    assert_eq!(rows, want);
    assert_eq!(stats["payload"]["total_artist_count"], 2);

    // Last.fm's user.getTopArtists reads the same chart.
    let uri = format!("/2.0/?method=user.gettopartists&user=ann&api_key={key}&format=json");
    let top = json(&app, common::get(uri)).await;
    let mut rows: Vec<(String, u64)> = top["topartists"]["artist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_owned(),
                a["playcount"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(rows, want);

    // The listens read back name the credited artists when there are
    // several, and only then.
    let req = with_token(Request::get("/1/user/ann/listens"), &token)
        .body(Body::empty())
        .unwrap();
    let page = json(&app, req).await;
    let listens = page["payload"]["listens"].as_array().unwrap();
    let info = |i: usize| &listens[i]["track_metadata"]["additional_info"];
    assert_eq!(
        info(0)["artist_names"],
        serde_json::json!(["Daft Punk", "Pharrell Williams"])
    );
    assert_eq!(
        listens[0]["track_metadata"]["artist_name"],
        "Daft Punk feat. Pharrell Williams"
    );
    assert!(info(1).get("artist_names").is_none(), "{}", info(1));
}
