//! Every Subsonic method this server answers, one row each: its name, how
//! a cluster serves it, how its folder grants are checked, and what runs
//! it. Dispatch ([`find`]), the list of methods
//! ([`super::METHODS`]) and the cluster's routing
//! ([`crate::cluster::route::classify`]) are all read from this table, so
//! adding a method is adding a row.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::cluster::route::Class::{self, Local, Memory, Write};

use super::response::Node;
use super::{
    admin, auth, browse, file_playlists, folders, info, lists, lyrics, misc, podcast, queue, radio,
    rating, scan, shares, user, Ctx, SyncResult,
};

/// What runs a method.
#[derive(Clone, Copy)]
pub(crate) enum Run {
    /// Answered to anyone, without credentials.
    Open(fn() -> Node),
    /// Synchronous, on a blocking thread (the stores are synchronous).
    Sync(fn(&mut Ctx) -> SyncResult),
    /// `stream` or `download` (`crate::subsonic::media::stream`).
    Stream { download: bool },
    /// `getCoverArt`.
    Cover,
    /// `getAvatar`.
    Avatar,
    /// `scrobble` (its named entries are recorded before it answers).
    Scrobble,
}

/// How a method keeps to the user's music-folder grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Its `id` is checked against the grants before it runs
    /// (`access::gate`).
    Gate,
    /// It reads only what the grants allow itself (`Ctx::access`), or no
    /// library entry at all.
    Handler,
}

/// One method: a row of [`TABLE`].
pub struct Method {
    /// The name, without `.view`.
    pub name: &'static str,
    /// How a cluster serves it: any node, the primary's memory, or a
    /// write the primary ships.
    pub class: Class,
    pub grant: Grant,
    pub(crate) run: Run,
}

const fn row(name: &'static str, class: Class, grant: Grant, run: Run) -> Method {
    Method {
        name,
        class,
        grant,
        run,
    }
}

/// The table. Unsupported podcast and jukebox methods answer their own
/// error (`podcast::unsupported`), so they are listed too.
pub static TABLE: &[Method] = &[
    row(
        "getOpenSubsonicExtensions",
        Local,
        Grant::Handler,
        Run::Open(browse::extensions),
    ),
    row(
        "stream",
        Local,
        Grant::Gate,
        Run::Stream { download: false },
    ),
    row(
        "download",
        Local,
        Grant::Gate,
        Run::Stream { download: true },
    ),
    row("getCoverArt", Local, Grant::Gate, Run::Cover),
    row("scrobble", Write, Grant::Gate, Run::Scrobble),
    row("getAvatar", Local, Grant::Handler, Run::Avatar),
    row("ping", Local, Grant::Handler, Run::Sync(|_| Ok(None))),
    row("getLicense", Local, Grant::Handler, Run::Sync(license)),
    row(
        "getMusicFolders",
        Local,
        Grant::Handler,
        Run::Sync(browse::music_folders),
    ),
    row(
        "getIndexes",
        Local,
        Grant::Handler,
        Run::Sync(folders::indexes),
    ),
    row(
        "getArtists",
        Local,
        Grant::Handler,
        Run::Sync(browse::artists),
    ),
    row(
        "getArtist",
        Local,
        Grant::Handler,
        Run::Sync(browse::artist),
    ),
    row("getAlbum", Local, Grant::Handler, Run::Sync(browse::album)),
    row("getSong", Local, Grant::Handler, Run::Sync(browse::song)),
    row(
        "getLyrics",
        Local,
        Grant::Handler,
        Run::Sync(lyrics::get_lyrics),
    ),
    row(
        "getLyricsBySongId",
        Local,
        Grant::Handler,
        Run::Sync(lyrics::get_lyrics_by_song_id),
    ),
    row(
        "getMusicDirectory",
        Local,
        Grant::Handler,
        Run::Sync(folders::directory),
    ),
    row(
        "getGenres",
        Local,
        Grant::Handler,
        Run::Sync(browse::genres),
    ),
    row(
        "getAlbumList2",
        Local,
        Grant::Handler,
        Run::Sync(lists::album_list2),
    ),
    row(
        "getRandomSongs",
        Local,
        Grant::Handler,
        Run::Sync(lists::random_songs),
    ),
    row("search3", Local, Grant::Handler, Run::Sync(lists::search3)),
    row(
        "getAlbumList",
        Local,
        Grant::Handler,
        Run::Sync(lists::album_list),
    ),
    row("search2", Local, Grant::Handler, Run::Sync(lists::search2)),
    row(
        "getStarred",
        Local,
        Grant::Handler,
        Run::Sync(lists::starred),
    ),
    row(
        "getSongsByGenre",
        Local,
        Grant::Handler,
        Run::Sync(lists::songs_by_genre),
    ),
    row(
        "getTopSongs",
        Local,
        Grant::Handler,
        Run::Sync(info::top_songs),
    ),
    row(
        "getSimilarSongs",
        Local,
        Grant::Handler,
        Run::Sync(info::similar_songs1),
    ),
    row(
        "getSimilarSongs2",
        Local,
        Grant::Handler,
        Run::Sync(info::similar_songs2),
    ),
    row(
        "getArtistInfo",
        Local,
        Grant::Handler,
        Run::Sync(info::artist_info1),
    ),
    row(
        "getArtistInfo2",
        Local,
        Grant::Handler,
        Run::Sync(info::artist_info2),
    ),
    row(
        "getAlbumInfo",
        Local,
        Grant::Handler,
        Run::Sync(info::album_info1),
    ),
    row(
        "getAlbumInfo2",
        Local,
        Grant::Handler,
        Run::Sync(info::album_info1),
    ),
    row(
        "star",
        Write,
        Grant::Handler,
        Run::Sync(|c| user::star(c, true)),
    ),
    row(
        "unstar",
        Write,
        Grant::Handler,
        Run::Sync(|c| user::star(c, false)),
    ),
    row(
        "getStarred2",
        Local,
        Grant::Handler,
        Run::Sync(user::starred2),
    ),
    row(
        "getPlaylists",
        Local,
        Grant::Handler,
        Run::Sync(user::playlists),
    ),
    row(
        "getPlaylist",
        Local,
        Grant::Handler,
        Run::Sync(get_playlist),
    ),
    row(
        "createPlaylist",
        Write,
        Grant::Handler,
        Run::Sync(user::create_playlist),
    ),
    row(
        "updatePlaylist",
        Write,
        Grant::Handler,
        Run::Sync(update_playlist),
    ),
    row(
        "deletePlaylist",
        Write,
        Grant::Handler,
        Run::Sync(delete_playlist),
    ),
    row(
        "getNowPlaying",
        Memory,
        Grant::Handler,
        Run::Sync(user::now_playing),
    ),
    row("getUser", Local, Grant::Handler, Run::Sync(admin::get_user)),
    row(
        "getUsers",
        Local,
        Grant::Handler,
        Run::Sync(admin::get_users),
    ),
    row(
        "createUser",
        Write,
        Grant::Handler,
        Run::Sync(admin::create_user),
    ),
    row(
        "updateUser",
        Write,
        Grant::Handler,
        Run::Sync(admin::update_user),
    ),
    row(
        "deleteUser",
        Write,
        Grant::Handler,
        Run::Sync(admin::delete_user),
    ),
    row(
        "changePassword",
        Write,
        Grant::Handler,
        Run::Sync(admin::change_password),
    ),
    row(
        "setRating",
        Write,
        Grant::Handler,
        Run::Sync(rating::set_rating),
    ),
    row(
        "savePlayQueue",
        Write,
        Grant::Handler,
        Run::Sync(queue::save_play_queue),
    ),
    row(
        "getPlayQueue",
        Local,
        Grant::Handler,
        Run::Sync(queue::get_play_queue),
    ),
    row(
        "savePlayQueueByIndex",
        Write,
        Grant::Handler,
        Run::Sync(queue::save_play_queue_by_index),
    ),
    row(
        "getPlayQueueByIndex",
        Local,
        Grant::Handler,
        Run::Sync(queue::get_play_queue_by_index),
    ),
    row(
        "createBookmark",
        Write,
        Grant::Handler,
        Run::Sync(queue::create_bookmark),
    ),
    row(
        "getBookmarks",
        Local,
        Grant::Handler,
        Run::Sync(queue::get_bookmarks),
    ),
    row(
        "deleteBookmark",
        Write,
        Grant::Handler,
        Run::Sync(queue::delete_bookmark),
    ),
    row(
        "getScanStatus",
        Memory,
        Grant::Handler,
        Run::Sync(scan::get_scan_status),
    ),
    row(
        "startScan",
        Write,
        Grant::Handler,
        Run::Sync(scan::start_scan),
    ),
    row(
        "tokenInfo",
        Local,
        Grant::Handler,
        Run::Sync(auth::token_info),
    ),
    row(
        "getInternetRadioStations",
        Local,
        Grant::Handler,
        Run::Sync(radio::stations),
    ),
    row(
        "createInternetRadioStation",
        Write,
        Grant::Handler,
        Run::Sync(radio::create),
    ),
    row(
        "updateInternetRadioStation",
        Write,
        Grant::Handler,
        Run::Sync(radio::update),
    ),
    row(
        "deleteInternetRadioStation",
        Write,
        Grant::Handler,
        Run::Sync(radio::delete),
    ),
    row(
        "createShare",
        Write,
        Grant::Handler,
        Run::Sync(shares::create),
    ),
    row("getShares", Local, Grant::Handler, Run::Sync(shares::list)),
    row(
        "updateShare",
        Write,
        Grant::Handler,
        Run::Sync(shares::update),
    ),
    row(
        "deleteShare",
        Write,
        Grant::Handler,
        Run::Sync(shares::delete),
    ),
    row(
        "getPodcasts",
        Local,
        Grant::Handler,
        Run::Sync(podcast::podcasts),
    ),
    row(
        "getNewestPodcasts",
        Local,
        Grant::Handler,
        Run::Sync(podcast::newest_podcasts),
    ),
    row("search", Local, Grant::Handler, Run::Sync(misc::search)),
    row("getVideos", Local, Grant::Handler, Run::Sync(misc::videos)),
    row(
        "getVideoInfo",
        Local,
        Grant::Handler,
        Run::Sync(misc::no_video),
    ),
    row(
        "getCaptions",
        Local,
        Grant::Handler,
        Run::Sync(misc::no_video),
    ),
    row("hls.m3u8", Local, Grant::Handler, Run::Sync(misc::hls)),
    row("hls", Local, Grant::Handler, Run::Sync(misc::hls)),
    row(
        "getChatMessages",
        Memory,
        Grant::Handler,
        Run::Sync(misc::chat_messages),
    ),
    row(
        "addChatMessage",
        Memory,
        Grant::Handler,
        Run::Sync(misc::add_chat_message),
    ),
    row(
        "createPodcastChannel",
        Write,
        Grant::Handler,
        Run::Sync(|_| podcast::unsupported("createPodcastChannel")),
    ),
    row(
        "deletePodcastChannel",
        Write,
        Grant::Handler,
        Run::Sync(|_| podcast::unsupported("deletePodcastChannel")),
    ),
    row(
        "deletePodcastEpisode",
        Write,
        Grant::Handler,
        Run::Sync(|_| podcast::unsupported("deletePodcastEpisode")),
    ),
    row(
        "downloadPodcastEpisode",
        Write,
        Grant::Handler,
        Run::Sync(|_| podcast::unsupported("downloadPodcastEpisode")),
    ),
    row(
        "refreshPodcasts",
        Write,
        Grant::Handler,
        Run::Sync(|_| podcast::unsupported("refreshPodcasts")),
    ),
    row(
        "jukeboxControl",
        Write,
        Grant::Handler,
        Run::Sync(|_| podcast::unsupported("jukeboxControl")),
    ),
    row(
        "getPodcastEpisode",
        Local,
        Grant::Handler,
        Run::Sync(|_| podcast::unsupported("getPodcastEpisode")),
    ),
];

static BY_NAME: LazyLock<HashMap<&'static str, &'static Method>> =
    LazyLock::new(|| TABLE.iter().map(|m| (m.name, m)).collect());

/// The method named `name` (without `.view`).
pub fn find(name: &str) -> Option<&'static Method> {
    BY_NAME.get(name).copied()
}

/// How a cluster serves the method `name`; an unknown name is answered
/// by any node (with its error).
pub fn class_of(name: &str) -> Class {
    find(name).map_or(Local, |m| m.class)
}

fn license(_: &mut Ctx) -> SyncResult {
    Ok(Some(
        Node::new("license")
            .b("valid", true)
            .s("email", "")
            .s("licenseExpires", "2099-12-31T00:00:00.000Z"),
    ))
}

/// A playlist id is a stored playlist's or a playlist file's
/// (`file_playlists`); the files cannot be changed through the API.
fn get_playlist(c: &mut Ctx) -> SyncResult {
    if file_playlists::is_file_id(c.p.get("id")) {
        file_playlists::playlist(c)
    } else {
        user::playlist(c)
    }
}

fn update_playlist(c: &mut Ctx) -> SyncResult {
    if file_playlists::is_file_id(c.p.get("playlistId")) {
        file_playlists::refuse_change(c)
    } else {
        user::update_playlist(c)
    }
}

fn delete_playlist(c: &mut Ctx) -> SyncResult {
    if file_playlists::is_file_id(c.p.get("id")) {
        file_playlists::refuse_change(c)
    } else {
        user::delete_playlist(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_is_in_the_table_once_and_found_by_its_name() {
        let mut seen = std::collections::HashSet::new();
        for m in TABLE {
            assert!(seen.insert(m.name), "{} is twice in the table", m.name);
            assert!(
                find(m.name).is_some_and(|f| std::ptr::eq(f, m)),
                "{}",
                m.name
            );
        }
        assert!(find("noSuchMethod").is_none());
        assert_eq!(class_of("noSuchMethod"), Local);
    }

    #[test]
    fn unsupported_podcast_methods_are_rows_that_answer_their_error() {
        for name in [
            "createPodcastChannel",
            "deletePodcastChannel",
            "deletePodcastEpisode",
            "downloadPodcastEpisode",
            "refreshPodcasts",
            "jukeboxControl",
            "getPodcastEpisode",
        ] {
            assert!(find(name).is_some(), "{name} has no row");
        }
    }

    #[test]
    fn only_methods_that_take_a_song_or_cover_id_are_gated_before_they_run() {
        let gated: Vec<&str> = TABLE
            .iter()
            .filter(|m| m.grant == Grant::Gate)
            .map(|m| m.name)
            .collect();
        assert_eq!(gated, ["stream", "download", "getCoverArt", "scrobble"]);
    }
}
