//! Podcasts and the jukebox are not built. The reading methods answer
//! honestly empty (`getPodcasts`, `getNewestPodcasts`, and
//! `getPodcastEpisode` finds nothing), every user's `podcastRole` and
//! `jukeboxRole` are false, and the methods that would change or play
//! something answer error 50, saying so.

use super::response::Node;
use super::{not_found, Ctx, Fail, SyncResult};

pub(crate) fn podcasts(_c: &mut Ctx) -> SyncResult {
    Ok(Some(Node::new("podcasts").list("channel", Vec::new())))
}

pub(crate) fn newest_podcasts(_c: &mut Ctx) -> SyncResult {
    Ok(Some(
        Node::new("newestPodcasts").list("episode", Vec::new()),
    ))
}

/// Error 50 for `method`: the server has no podcasts or jukebox.
pub(crate) fn unsupported(method: &str) -> SyncResult {
    if method == "getPodcastEpisode" {
        return Err(not_found("Podcast episode"));
    }
    let what = if method == "jukeboxControl" {
        "a jukebox"
    } else {
        "podcasts"
    };
    Err(Fail(
        50,
        format!("{method} is not supported: Spindle has no {what} (podcastRole and jukeboxRole are false for every user)"),
    ))
}

#[cfg(test)]
mod tests {
    use crate::subsonic::testkit::Kit;

    #[tokio::test]
    async fn podcasts_are_empty_and_the_jukebox_is_refused() {
        let k = Kit::new();
        let p = k.ok("ann", "getPodcasts", &[]).await;
        assert_eq!(p["podcasts"]["channel"], serde_json::json!([]));
        let n = k.ok("ann", "getNewestPodcasts", &[]).await;
        assert_eq!(n["newestPodcasts"]["episode"], serde_json::json!([]));
        assert_eq!(
            k.code("ann", "jukeboxControl", &[("action", "status")])
                .await,
            50
        );
        assert_eq!(
            k.code(
                "ann",
                "createPodcastChannel",
                &[("url", "http://x.example/")]
            )
            .await,
            50
        );
        assert_eq!(k.code("ann", "getPodcastEpisode", &[("id", "1")]).await, 70);
    }
}
