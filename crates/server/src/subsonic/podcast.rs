//! Podcasts and the jukebox are not built. The reading methods answer
//! honestly empty (`getPodcasts`, `getNewestPodcasts`, and
//! `getPodcastEpisode` finds nothing), every user's `podcastRole` and
//! `jukeboxRole` are false, and the methods that would change or play
//! something answer error 50, saying so.

use super::response::Node;
use super::{Ctx, SubsonicError, SyncResult};

pub(crate) fn podcasts(_c: &mut Ctx) -> SyncResult {
    Ok(Some(Node::new("podcasts").list("channel", Vec::new())))
}

pub(crate) fn newest_podcasts(_c: &mut Ctx) -> SyncResult {
    Ok(Some(
        Node::new("newestPodcasts").list("episode", Vec::new()),
    ))
}

/// `getPodcastEpisode`: no id is an episode.
pub(crate) fn no_episode(_c: &mut Ctx) -> SyncResult {
    Err(SubsonicError::NotFound("Podcast episode"))
}

/// Error 50 for a method that would change podcasts: the server has
/// none.
pub(crate) fn unsupported(c: &mut Ctx) -> SyncResult {
    Err(not_here(c.method, "podcasts"))
}

/// Error 50 for `jukeboxControl`: the server has no jukebox.
pub(crate) fn no_jukebox(c: &mut Ctx) -> SyncResult {
    Err(not_here(c.method, "a jukebox"))
}

fn not_here(method: &str, what: &str) -> SubsonicError {
    SubsonicError::Unsupported(format!(
        "{method} is not supported: Spindle has no {what} (podcastRole and jukeboxRole are false for every user)"
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

    #[tokio::test]
    async fn each_refusal_names_the_method_asked_for() {
        let k = Kit::new();
        let tail = "(podcastRole and jukeboxRole are false for every user)";
        for (method, what) in [
            ("refreshPodcasts", "podcasts"),
            ("deletePodcastEpisode", "podcasts"),
            ("jukeboxControl", "a jukebox"),
        ] {
            let r = k.api("ann", method, &[]).await;
            assert_eq!(
                r["error"]["message"],
                format!("{method} is not supported: Spindle has no {what} {tail}"),
                "{r}"
            );
        }
        let r = k.api("ann", "getPodcastEpisode", &[]).await;
        assert_eq!(r["error"]["message"], "Podcast episode not found");
    }
}
