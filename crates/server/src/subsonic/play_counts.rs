//! Per-user play counts and last plays (`crate::plays`) as Subsonic
//! shows them: a song's and an album's `playCount` and `played`, and the
//! `frequent` and `recent` album lists, through the whole router.

use crate::plays::{Played, Plays};
use crate::subsonic::testkit::Kit;
use serde_json::Value;

/// Scrobbles `song` as `user`, `ago` hours before the clock's time.
async fn scrobble(k: &Kit, user: &str, song: &str, ago: i64) {
    let ms = ((k.now() - ago * 3600) * 1000).to_string();
    k.ok(user, "scrobble", &[("id", song), ("time", &ms)]).await;
}

fn album_ids(r: &Value) -> Vec<String> {
    r["albumList2"]["album"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x["id"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn each_user_sees_their_own_play_counts_last_plays_and_album_lists() {
    let k = Kit::new();
    let (x, y) = (k.songs[0].clone(), k.songs[k.songs.len() - 1].clone());
    for ago in [30, 20, 10] {
        scrobble(&k, "ann", &x, ago).await;
    }
    scrobble(&k, "bob", &x, 5).await;
    scrobble(&k, "bob", &y, 1).await;
    let ann = k.ok("ann", "getSong", &[("id", &x)]).await;
    let bob = k.ok("bob", "getSong", &[("id", &x)]).await;
    assert_eq!(ann["song"]["playCount"], 3, "{ann}");
    assert_eq!(bob["song"]["playCount"], 1, "{bob}");
    let when = |h: i64| crate::time::iso8601(k.now() - h * 3600);
    assert_eq!(ann["song"]["played"], when(10).as_str());
    assert_eq!(bob["song"]["played"], when(5).as_str());
    let album = ann["song"]["albumId"].as_str().unwrap().to_owned();
    let a = k.ok("ann", "getAlbum", &[("id", &album)]).await;
    assert_eq!(a["album"]["playCount"], 3, "{a}");
    let y_album = k.ok("bob", "getSong", &[("id", &y)]).await["song"]["albumId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(album, y_album, "the demo's first and last songs");
    for kind in ["frequent", "recent"] {
        let p = [("type", kind)];
        let ann = album_ids(&k.ok("ann", "getAlbumList2", &p).await);
        assert_eq!(
            ann,
            std::slice::from_ref(&album),
            "{kind}: ann played one album"
        );
        let bob = album_ids(&k.ok("bob", "getAlbumList2", &p).await);
        assert_eq!(bob.len(), 2, "{kind}: {bob:?}");
    }
    let recent = album_ids(&k.ok("bob", "getAlbumList2", &[("type", "recent")]).await);
    assert_eq!(recent, [y_album.clone(), album.clone()], "latest first");
    let v1 = k.ok("ann", "getAlbumList", &[("type", "frequent")]).await;
    assert_eq!(v1["albumList"]["album"][0]["playCount"], 3, "{v1}");
    // The library keeps every user's plays together.
    k.state.flush_library_links();
    let cat = k.state.music.catalog(&k.state.db);
    assert_eq!(cat.song(&x).map(|s| s.play_count), Some(4));
}

#[tokio::test]
async fn the_scrobbling_user_reads_their_new_count_in_the_answer_after() {
    let k = Kit::new();
    let x = k.songs[1].clone();
    for n in 1..=20 {
        // Back-dated, as an offline client sends them, and at once.
        scrobble(&k, "ann", &x, 100 - n).await;
        let r = k.ok("ann", "getSong", &[("id", &x)]).await;
        assert_eq!(r["song"]["playCount"], n, "read {n}: {r}");
    }
}

#[tokio::test]
async fn plays_are_built_again_from_the_history_when_the_state_opens() {
    let k = Kit::new();
    let x = k.songs[2].clone();
    scrobble(&k, "ann", &x, 3).await;
    scrobble(&k, "ann", &x, 2).await;
    scrobble(&k, "bob", &x, 1).await;
    let users = ["ann".to_owned(), "bob".to_owned(), "cy".to_owned()];
    let built = Plays::build(&k.state.listens, &k.state.db.read(), &users);
    let id: u32 = x.parse().unwrap();
    let of = |u: &str| built.of(u).map(|p| p.read().unwrap().get(id));
    let last = k.now() - 2 * 3600;
    assert_eq!(of("ann"), Some(Played { count: 2, last }));
    assert_eq!(of("bob").map(|p| p.count), Some(1));
    assert_eq!(of("cy"), None);
}
