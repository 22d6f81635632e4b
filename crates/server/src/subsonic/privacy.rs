//! The privacy rule of listening (`docs/security.md`, "Privacy") as
//! Subsonic applies it: a user's listening — now playing, plays, the
//! charts of their history — is shown to another user only when it is
//! public. Play counts and last plays are the asking user's own
//! ([`crate::plays`]); `getNowPlaying` and `getTopSongs` go through
//! [`sees_listening_of`]. Administrators follow the same rule: being an
//! administrator gives no view into another user's listening.

use super::Ctx;

/// Whether the asking user may see `user`'s listening.
pub(crate) fn sees_listening_of(c: &Ctx, user: &str) -> bool {
    user == c.user || c.state.music.listens_public(user)
}

#[cfg(test)]
mod tests {
    use super::super::testkit::Kit;

    #[tokio::test]
    async fn another_user_sees_a_private_users_now_playing_only_once_it_is_public() {
        let k = Kit::new();
        let x = k.songs[0].clone();
        k.ok("bob", "scrobble", &[("id", &x), ("submission", "false")])
            .await;
        let mine = k.ok("bob", "getNowPlaying", &[]).await;
        assert_eq!(mine["nowPlaying"]["entry"][0]["username"], "bob", "{mine}");
        // ann is the administrator: private is private for her too.
        let theirs = k.ok("ann", "getNowPlaying", &[]).await;
        assert!(
            theirs["nowPlaying"]["entry"]
                .as_array()
                .is_none_or(|a| a.is_empty()),
            "{theirs}"
        );
        k.state.music.set_listens_public("bob", true).unwrap();
        let now = k.ok("ann", "getNowPlaying", &[]).await;
        assert_eq!(now["nowPlaying"]["entry"][0]["username"], "bob", "{now}");
    }

    #[tokio::test]
    async fn top_songs_count_only_the_askers_and_public_users_plays() {
        let k = Kit::new();
        let x = k.songs[0].clone();
        let ms = ((k.now() - 60) * 1000).to_string();
        k.ok("bob", "scrobble", &[("id", &x), ("time", &ms)]).await;
        let artist = k.ok("bob", "getSong", &[("id", &x)]).await["song"]["artist"]
            .as_str()
            .unwrap()
            .to_owned();
        let top = |r: &serde_json::Value| r["topSongs"]["song"].as_array().map_or(0, |a| a.len());
        let p = [("artist", artist.as_str())];
        assert_eq!(top(&k.ok("bob", "getTopSongs", &p).await), 1);
        assert_eq!(top(&k.ok("ann", "getTopSongs", &p).await), 0);
        k.state.music.set_listens_public("bob", true).unwrap();
        assert_eq!(top(&k.ok("ann", "getTopSongs", &p).await), 1);
    }
}
