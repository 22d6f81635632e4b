use axum::http::StatusCode;

use crate::subsonic::testkit::Kit;

/// Ann (the administrator, who may share) shares the first two demo
/// songs; the token.
async fn shared(k: &Kit, expires_in: Option<i64>) -> String {
    let exp = expires_in.map(|s| ((k.now() + s) * 1000).to_string());
    let mut p = vec![
        ("id", k.songs[0].as_str()),
        ("id", k.songs[1].as_str()),
        ("description", "Tones <for> you"),
    ];
    if let Some(e) = &exp {
        p.push(("expires", e));
    }
    let r = k.ok("ann", "createShare", &p).await;
    let s = &r["shares"]["share"][0];
    let token = s["id"].as_str().unwrap().to_owned();
    assert_eq!(
        s["url"],
        format!("http://music.example:4533/share/{token}"),
        "the URL follows the Host header"
    );
    assert_eq!(s["entry"].as_array().unwrap().len(), 2);
    token
}

#[tokio::test]
async fn a_share_page_lists_its_songs_and_streams_only_them() {
    let k = Kit::new();
    let token = shared(&k, None).await;
    let (status, h, body) = k.get(&format!("/share/{token}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(h["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        html.contains("<title>Tones &lt;for&gt; you</title>"),
        "{html}"
    );
    assert!(html.contains(&format!("src=\"{token}/stream/{}\"", k.songs[0])));
    assert_eq!(html.matches("<li>").count(), 2);
    let (status, _, audio) = k
        .get(&format!("/share/{token}/stream/{}", k.songs[1]))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(audio.len() > 1000, "a whole song");
    let (status, _, _) = k
        .get(&format!("/share/{token}/stream/{}", k.songs[2]))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a song not shared");
    let (status, _, js) = k.get(&format!("/share/{token}/player.js")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(std::str::from_utf8(&js)
        .unwrap()
        .contains("addEventListener"));
    let shares = k.ok("ann", "getShares", &[]).await;
    assert_eq!(shares["shares"]["share"][0]["visitCount"], 1);
}

#[tokio::test]
async fn an_expired_or_deleted_share_answers_404_and_plays_nothing() {
    let k = Kit::new();
    let token = shared(&k, Some(60)).await;
    let song = format!("/share/{token}/stream/{}", k.songs[0]);
    assert_eq!(k.get(&song).await.0, StatusCode::OK);
    k.clock.advance(60);
    assert_eq!(
        k.get(&format!("/share/{token}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(k.get(&song).await.0, StatusCode::NOT_FOUND);
    // Renewed (0: never expires), then deleted.
    k.ok("ann", "updateShare", &[("id", &token), ("expires", "0")])
        .await;
    assert_eq!(k.get(&song).await.0, StatusCode::OK);
    k.ok("ann", "deleteShare", &[("id", &token)]).await;
    assert_eq!(
        k.get(&format!("/share/{token}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(k.get(&song).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        k.get("/share/nonsense/stream/1").await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn sharing_needs_the_share_role_and_changing_a_share_its_owner() {
    let k = Kit::new();
    let token = shared(&k, None).await;
    assert_eq!(
        k.code("bob", "createShare", &[("id", &k.songs[0])]).await,
        50
    );
    assert_eq!(k.code("bob", "deleteShare", &[("id", &token)]).await, 50);
    let bob_sees = k.ok("bob", "getShares", &[]).await;
    assert_eq!(bob_sees["shares"]["share"].as_array().unwrap().len(), 0);
    assert_eq!(k.code("ann", "createShare", &[]).await, 10);
    assert_eq!(
        k.code("ann", "createShare", &[("id", "al-nothing")]).await,
        70
    );
    let past = ((k.now() - 5) * 1000).to_string();
    assert_eq!(
        k.code(
            "ann",
            "createShare",
            &[("id", &k.songs[0]), ("expires", &past)]
        )
        .await,
        0
    );
}

#[test]
fn a_share_is_classed_by_its_route_whatever_the_method() {
    use crate::cluster::route::{classify, Class};
    use axum::http::Method;
    for (path, want) in [
        ("/share/abc", Class::Write),
        ("/share/abc/player.js", Class::Local),
        ("/share/abc/stream/4", Class::Local),
        // No route: a 404 any node gives.
        ("/share/", Class::Local),
        ("/share/abc/", Class::Local),
        ("/share/abc/other", Class::Local),
    ] {
        for m in [Method::GET, Method::HEAD, Method::POST] {
            assert_eq!(classify(&m, path, None), want, "{m} {path}");
        }
    }
    for r in super::TABLE {
        assert_eq!(r.auth, crate::web::routes::Auth::Public, "{}", r.path);
        let p = r.path.replace("{token}", "t").replace("{song}", "1");
        assert_eq!(super::class_of(&p), r.class, "{p}");
    }
}

#[tokio::test]
async fn the_share_router_serves_every_row_to_anyone() {
    let k = Kit::new();
    let token = shared(&k, None).await;
    for r in super::TABLE {
        let p = r
            .path
            .replace("{token}", &token)
            .replace("{song}", &k.songs[0]);
        let (status, _, _) = k.get(&p).await;
        assert_eq!(status, StatusCode::OK, "{p}");
    }
}
