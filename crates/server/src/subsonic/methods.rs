//! Every Subsonic method this server answers, one row each: its name, how
//! a cluster serves it, how its folder grants are checked, and what runs
//! it. Dispatch ([`find`]), the list of methods ([`TABLE`], which the
//! folder-access test walks) and the cluster's routing
//! ([`crate::cluster::route::classify`]) are all read from this table, so
//! adding a method is adding a row.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::http::HeaderMap;
use axum::response::Response;

use crate::cluster::route::Class::{self, Local, Memory, Write};
use Async::{Avatar, Cover, Scrobble, Stream};
use Grant::{Gate, Handler};
use Ids::{Covers, Songs};

use super::response::Node;
use super::{
    admin, auth, browse, cover, file_playlists, folders, info, lists, lyrics, media, misc, podcast,
    queue, radio, rating, scan, shares, user, Ctx, SubsonicError, SyncResult,
};

/// What runs a method.
#[derive(Clone, Copy)]
pub(crate) enum Run {
    /// Answered to anyone, without credentials.
    Open(fn() -> Node),
    /// Synchronous, on the blocking pool (the stores are synchronous).
    Sync(fn(&mut Ctx) -> SyncResult),
    /// On the executor: its answer is a file, a picture, or waits on a
    /// write ([`Async::run`]).
    Async(Async),
}

/// The methods that run on the executor.
#[derive(Clone, Copy)]
pub(crate) enum Async {
    /// `stream` or `download` ([`media::stream`]).
    Stream { download: bool },
    /// `getCoverArt`.
    Cover,
    /// `getAvatar`.
    Avatar,
    /// `scrobble` (its named entries are recorded before it answers).
    Scrobble,
}

impl Async {
    /// The answer, for the request `c` with these `headers` (`head`: a
    /// HEAD request).
    pub(crate) async fn run(
        self,
        c: Ctx,
        headers: &HeaderMap,
        head: bool,
    ) -> Result<Response, SubsonicError> {
        match self {
            Stream { download } => media::stream(c, headers, head, download).await,
            Cover => cover::cover_art(c, headers).await,
            Avatar => misc::avatar(c).await,
            Scrobble => media::scrobble(c).await,
        }
    }
}

/// How a method keeps to the user's music-folder grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Its `id`s are checked against the grants before it runs
    /// (`access::gate`).
    Gate(Ids),
    /// It reads only what the grants allow itself (`Ctx::access`), or no
    /// library entry at all.
    Handler,
}

/// What the `id`s of a gated method name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ids {
    /// Songs: a hidden one is "Song not found".
    Songs,
    /// Songs, albums or artists whose cover is asked for: a hidden one is
    /// "Cover art not found".
    Covers,
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
/// error (`podcast`), so they are listed too.
#[rustfmt::skip]
pub static TABLE: &[Method] = &[
    row("getOpenSubsonicExtensions", Local, Handler, Run::Open(browse::extensions)),
    row("stream", Local, Gate(Songs), Run::Async(Stream { download: false })),
    row("download", Local, Gate(Songs), Run::Async(Stream { download: true })),
    row("getCoverArt", Local, Gate(Covers), Run::Async(Cover)),
    row("scrobble", Write, Gate(Songs), Run::Async(Scrobble)),
    row("getAvatar", Local, Handler, Run::Async(Avatar)),
    row("ping", Local, Handler, Run::Sync(|_| Ok(None))),
    row("getLicense", Local, Handler, Run::Sync(license)),
    row("getMusicFolders", Local, Handler, Run::Sync(browse::music_folders)),
    row("getIndexes", Local, Handler, Run::Sync(folders::indexes)),
    row("getArtists", Local, Handler, Run::Sync(browse::artists)),
    row("getArtist", Local, Handler, Run::Sync(browse::artist)),
    row("getAlbum", Local, Handler, Run::Sync(browse::album)),
    row("getSong", Local, Handler, Run::Sync(browse::song)),
    row("getLyrics", Local, Handler, Run::Sync(lyrics::get_lyrics)),
    row("getLyricsBySongId", Local, Handler, Run::Sync(lyrics::get_lyrics_by_song_id)),
    row("getMusicDirectory", Local, Handler, Run::Sync(folders::directory)),
    row("getGenres", Local, Handler, Run::Sync(browse::genres)),
    row("getAlbumList2", Local, Handler, Run::Sync(lists::album_list2)),
    row("getRandomSongs", Local, Handler, Run::Sync(lists::random_songs)),
    row("search3", Local, Handler, Run::Sync(lists::search3)),
    row("getAlbumList", Local, Handler, Run::Sync(lists::album_list)),
    row("search2", Local, Handler, Run::Sync(lists::search2)),
    row("getStarred", Local, Handler, Run::Sync(lists::starred)),
    row("getSongsByGenre", Local, Handler, Run::Sync(lists::songs_by_genre)),
    row("getTopSongs", Local, Handler, Run::Sync(info::top_songs)),
    row("getSimilarSongs", Local, Handler, Run::Sync(info::similar_songs1)),
    row("getSimilarSongs2", Local, Handler, Run::Sync(info::similar_songs2)),
    row("getArtistInfo", Local, Handler, Run::Sync(info::artist_info1)),
    row("getArtistInfo2", Local, Handler, Run::Sync(info::artist_info2)),
    row("getAlbumInfo", Local, Handler, Run::Sync(info::album_info1)),
    row("getAlbumInfo2", Local, Handler, Run::Sync(info::album_info1)),
    row("star", Write, Handler, Run::Sync(|c| user::star(c, true))),
    row("unstar", Write, Handler, Run::Sync(|c| user::star(c, false))),
    row("getStarred2", Local, Handler, Run::Sync(user::starred2)),
    row("getPlaylists", Local, Handler, Run::Sync(user::playlists)),
    row("getPlaylist", Local, Handler, Run::Sync(get_playlist)),
    row("createPlaylist", Write, Handler, Run::Sync(user::create_playlist)),
    row("updatePlaylist", Write, Handler, Run::Sync(update_playlist)),
    row("deletePlaylist", Write, Handler, Run::Sync(delete_playlist)),
    row("getNowPlaying", Memory, Handler, Run::Sync(user::now_playing)),
    row("getUser", Local, Handler, Run::Sync(admin::get_user)),
    row("getUsers", Local, Handler, Run::Sync(admin::get_users)),
    row("createUser", Write, Handler, Run::Sync(admin::create_user)),
    row("updateUser", Write, Handler, Run::Sync(admin::update_user)),
    row("deleteUser", Write, Handler, Run::Sync(admin::delete_user)),
    row("changePassword", Write, Handler, Run::Sync(admin::change_password)),
    row("setRating", Write, Handler, Run::Sync(rating::set_rating)),
    row("savePlayQueue", Write, Handler, Run::Sync(queue::save_play_queue)),
    row("getPlayQueue", Local, Handler, Run::Sync(queue::get_play_queue)),
    row("savePlayQueueByIndex", Write, Handler, Run::Sync(queue::save_play_queue_by_index)),
    row("getPlayQueueByIndex", Local, Handler, Run::Sync(queue::get_play_queue_by_index)),
    row("createBookmark", Write, Handler, Run::Sync(queue::create_bookmark)),
    row("getBookmarks", Local, Handler, Run::Sync(queue::get_bookmarks)),
    row("deleteBookmark", Write, Handler, Run::Sync(queue::delete_bookmark)),
    row("getScanStatus", Memory, Handler, Run::Sync(scan::get_scan_status)),
    row("startScan", Write, Handler, Run::Sync(scan::start_scan)),
    row("tokenInfo", Local, Handler, Run::Sync(auth::token_info)),
    row("getInternetRadioStations", Local, Handler, Run::Sync(radio::stations)),
    row("createInternetRadioStation", Write, Handler, Run::Sync(radio::create)),
    row("updateInternetRadioStation", Write, Handler, Run::Sync(radio::update)),
    row("deleteInternetRadioStation", Write, Handler, Run::Sync(radio::delete)),
    row("createShare", Write, Handler, Run::Sync(shares::create)),
    row("getShares", Local, Handler, Run::Sync(shares::list)),
    row("updateShare", Write, Handler, Run::Sync(shares::update)),
    row("deleteShare", Write, Handler, Run::Sync(shares::delete)),
    row("getPodcasts", Local, Handler, Run::Sync(podcast::podcasts)),
    row("getNewestPodcasts", Local, Handler, Run::Sync(podcast::newest_podcasts)),
    row("search", Local, Handler, Run::Sync(misc::search)),
    row("getVideos", Local, Handler, Run::Sync(misc::videos)),
    row("getVideoInfo", Local, Handler, Run::Sync(misc::no_video)),
    row("getCaptions", Local, Handler, Run::Sync(misc::no_video)),
    row("hls.m3u8", Local, Handler, Run::Sync(misc::hls)),
    row("hls", Local, Handler, Run::Sync(misc::hls)),
    row("getChatMessages", Memory, Handler, Run::Sync(misc::chat_messages)),
    row("addChatMessage", Memory, Handler, Run::Sync(misc::add_chat_message)),
    row("createPodcastChannel", Write, Handler, Run::Sync(podcast::unsupported)),
    row("deletePodcastChannel", Write, Handler, Run::Sync(podcast::unsupported)),
    row("deletePodcastEpisode", Write, Handler, Run::Sync(podcast::unsupported)),
    row("downloadPodcastEpisode", Write, Handler, Run::Sync(podcast::unsupported)),
    row("refreshPodcasts", Write, Handler, Run::Sync(podcast::unsupported)),
    row("jukeboxControl", Write, Handler, Run::Sync(podcast::no_jukebox)),
    row("getPodcastEpisode", Local, Handler, Run::Sync(podcast::no_episode)),
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
            .filter(|m| matches!(m.grant, Grant::Gate(_)))
            .map(|m| m.name)
            .collect();
        assert_eq!(gated, ["stream", "download", "getCoverArt", "scrobble"]);
    }
}
