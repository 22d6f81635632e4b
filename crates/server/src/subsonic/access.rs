//! Per-user music folder access: what one request may see.
//!
//! An account may be granted some music folders only
//! ([`crate::Accounts::folders_of`]: `None` is every folder). Every method
//! asks [`Ctx::access`] (or [`Ctx::scope`], which also applies the
//! `musicFolderId` parameter) for an [`Access`] and shows nothing outside
//! it: a song is visible when its file lies in a granted folder, an album
//! when one of its songs is, an artist when one of its albums is. An
//! album or artist that is partly visible is shown as its visible part
//! ([`Access::album_view`], [`Access::artist_view`]): song count,
//! duration and plays are those of the visible songs.
//!
//! A hidden song, album, artist or folder answers exactly as an unknown
//! id does (error 70, "… not found"), so its existence does not leak; a
//! `musicFolderId` outside the grant answers as an unknown folder does
//! (error 70, "Music folder not found").

use std::borrow::Cow;

use super::folders::Dir;
use super::methods::Ids;
use super::{Ctx, SubsonicError};
use crate::catalog::{Album, Artist, Catalog, Song};
use crate::state::AppState;

/// The music folders one request may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Access {
    /// By music folder index; `None`: every folder.
    folders: Option<Vec<bool>>,
}

impl Access {
    /// The folders `user` is granted, of the server's music folders. An
    /// unknown user sees nothing.
    pub fn of(state: &AppState, user: &str) -> Access {
        let n = state.music.roots().len();
        Access::from_grant(state.accounts.folders_of(user), n)
    }

    /// The access of a grant (Subsonic folder ids, 1-based; `None`: all)
    /// over `n` music folders.
    pub fn from_grant(grant: Option<Vec<u32>>, n: usize) -> Access {
        let folders = grant.map(|ids| {
            let mut v = vec![false; n];
            for id in ids {
                if let Some(slot) = (id as usize).checked_sub(1).and_then(|i| v.get_mut(i)) {
                    *slot = true;
                }
            }
            v
        });
        Access { folders }
    }

    /// True when nothing is hidden.
    pub fn is_everything(&self) -> bool {
        self.folders.is_none()
    }

    /// Whether the music folder with index `f` is visible.
    pub fn folder(&self, f: usize) -> bool {
        match &self.folders {
            None => true,
            Some(v) => v.get(f).copied().unwrap_or(false),
        }
    }

    /// This access narrowed to the one music folder `f`.
    pub fn only(&self, f: usize, n: usize) -> Access {
        let mut v = vec![false; n];
        if let Some(slot) = v.get_mut(f) {
            *slot = self.folder(f);
        }
        Access { folders: Some(v) }
    }

    pub fn sees_song(&self, s: &Song) -> bool {
        self.folder(s.folder)
    }

    pub fn sees_album(&self, cat: &Catalog, a: &Album) -> bool {
        self.is_everything() || a.songs.iter().any(|&n| self.sees_song(&cat.songs[n]))
    }

    pub fn sees_artist(&self, cat: &Catalog, a: &Artist) -> bool {
        self.is_everything()
            || a.albums
                .iter()
                .any(|&n| self.sees_album(cat, &cat.albums[n]))
    }

    pub fn sees_dir(&self, d: &Dir) -> bool {
        self.folder(d.folder)
    }

    /// The song of a client's id; a hidden one is not found.
    pub fn song<'c>(&self, cat: &'c Catalog, id: &str) -> Result<&'c Song, SubsonicError> {
        cat.song(id)
            .filter(|s| self.sees_song(s))
            .ok_or(SubsonicError::NotFound("Song"))
    }

    /// The album of a client's id; a hidden one is not found.
    pub fn album<'c>(&self, cat: &'c Catalog, id: &str) -> Result<&'c Album, SubsonicError> {
        cat.album(id)
            .filter(|a| self.sees_album(cat, a))
            .ok_or(SubsonicError::NotFound("Album"))
    }

    /// The artist of a client's id; a hidden one is not found.
    pub fn artist<'c>(&self, cat: &'c Catalog, id: &str) -> Result<&'c Artist, SubsonicError> {
        cat.artist(id)
            .filter(|a| self.sees_artist(cat, a))
            .ok_or(SubsonicError::NotFound("Artist"))
    }

    /// The visible song of a library entry id (playlists, queues).
    pub fn entry<'c>(&self, cat: &'c Catalog, entry: u32) -> Option<&'c Song> {
        cat.song_by_entry(entry).filter(|s| self.sees_song(s))
    }

    /// Whether `id` names a song, album or artist of the catalog that
    /// this access hides (an unknown id is not hidden: it is unknown).
    pub fn hides(&self, cat: &Catalog, id: &str) -> bool {
        if self.is_everything() {
            return false;
        }
        if let Some(a) = cat.artist(id) {
            return !self.sees_artist(cat, a);
        }
        if let Some(a) = cat.album(id) {
            return !self.sees_album(cat, a);
        }
        cat.song(id).is_some_and(|s| !self.sees_song(s))
    }

    /// Whether `id` names a visible song, album or artist.
    pub fn sees_id(&self, cat: &Catalog, id: &str) -> bool {
        let known = cat.song(id).is_some() || cat.album(id).is_some() || cat.artist(id).is_some();
        known && !self.hides(cat, id)
    }

    /// `a` as this access shows it: its visible songs only, with their
    /// count, duration, plays and dates.
    pub fn album_view<'c>(&self, cat: &Catalog, a: &'c Album) -> Cow<'c, Album> {
        if self.is_everything() || a.songs.iter().all(|&n| self.sees_song(&cat.songs[n])) {
            return Cow::Borrowed(a);
        }
        let mut v = a.clone();
        v.songs.retain(|&n| self.sees_song(&cat.songs[n]));
        let songs = || v.songs.iter().map(|&n| &cat.songs[n]);
        v.duration = songs().map(|s| s.duration.unwrap_or(0)).sum();
        v.play_count = songs().map(|s| s.play_count).sum();
        v.last_played = songs().map(|s| s.last_played).max().unwrap_or(0);
        v.created = songs().map(|s| s.added).min().unwrap_or(a.created);
        Cow::Owned(v)
    }

    /// `a` as this access shows it: its visible albums only.
    pub fn artist_view<'c>(&self, cat: &Catalog, a: &'c Artist) -> Cow<'c, Artist> {
        if self.is_everything()
            || a.albums
                .iter()
                .all(|&n| self.sees_album(cat, &cat.albums[n]))
        {
            return Cow::Borrowed(a);
        }
        let mut v = a.clone();
        v.albums.retain(|&n| self.sees_album(cat, &cat.albums[n]));
        Cow::Owned(v)
    }
}

impl Ctx {
    /// What the asking user may see.
    pub fn access(&self) -> Access {
        Access::of(&self.state, &self.user)
    }

    /// [`Ctx::access`] narrowed by the `musicFolderId` parameter; a
    /// folder that does not exist or is not granted is error 70.
    pub fn scope(&self) -> Result<Access, SubsonicError> {
        let access = self.access();
        let n = self.state.music.roots().len();
        match self.int("musicFolderId")? {
            None => Ok(access),
            Some(id) if id >= 1 && (id as usize) <= n && access.folder(id as usize - 1) => {
                Ok(access.only(id as usize - 1, n))
            }
            Some(_) => Err(SubsonicError::NotFound("Music folder")),
        }
    }
}

/// For the methods answered outside `dispatch` (`stream`, `download`,
/// `scrobble`, `getCoverArt`): error 70 when an `id` names something the
/// user may not see, exactly as for an unknown id. Nothing is looked up
/// for a user who sees every folder. Call on a blocking thread (it may
/// build the catalog).
pub(crate) fn gate(c: &mut Ctx, ids: Ids) -> Result<(), SubsonicError> {
    let access = c.access();
    if access.is_everything() {
        return Ok(());
    }
    let cat = c.cat();
    for id in c.all("id") {
        let visible = match ids {
            Ids::Covers => access.sees_id(&cat, id),
            Ids::Songs => access.song(&cat, id).is_ok(),
        };
        if !visible {
            return Err(SubsonicError::NotFound(match ids {
                Ids::Covers => "Cover art",
                Ids::Songs => "Song",
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_app::testlib;

    fn two_folders() -> Catalog {
        let mut cat = testlib::catalog(&[
            ("a/1.flac", "Ann", "Shared", "open", "Rock", 0),
            ("a/2.flac", "Ann", "Shared", "hidden", "Rock", 0),
            ("b/1.flac", "Bob", "Secret", "alone", "Jazz", 0),
        ]);
        // Folder 2 holds the second and third songs.
        std::sync::Arc::make_mut(&mut cat.songs[1]).folder = 1;
        std::sync::Arc::make_mut(&mut cat.songs[2]).folder = 1;
        cat
    }

    #[test]
    fn a_grant_of_folder_one_sees_only_what_lies_in_it() {
        let cat = two_folders();
        let a = Access::from_grant(Some(vec![1]), 2);
        assert!(a.sees_song(&cat.songs[0]) && !a.sees_song(&cat.songs[1]));
        let shared = cat.album(&cat.songs[0].album_id).unwrap();
        let secret = cat.album(&cat.songs[2].album_id).unwrap();
        assert!(a.sees_album(&cat, shared) && !a.sees_album(&cat, secret));
        assert_eq!(
            a.album_view(&cat, shared).songs.len(),
            1,
            "the visible part"
        );
        assert!(a.hides(&cat, &secret.id) && a.hides(&cat, &cat.songs[2].id.to_string()));
        assert!(!a.hides(&cat, "al-unknown"), "unknown is not hidden");
        assert_eq!(
            a.song(&cat, &cat.songs[1].id.to_string())
                .unwrap_err()
                .code(),
            70
        );
        let bob = cat.artist(&cat.songs[2].artist_id).unwrap();
        assert!(!a.sees_artist(&cat, bob));
    }

    #[test]
    fn no_grant_list_sees_everything_and_an_empty_one_nothing() {
        let cat = two_folders();
        let all = Access::from_grant(None, 2);
        assert!(all.is_everything() && cat.songs.iter().all(|s| all.sees_song(s)));
        let none = Access::from_grant(Some(vec![]), 2);
        assert!(cat.songs.iter().all(|s| !none.sees_song(s)));
        let out_of_range = Access::from_grant(Some(vec![0, 9]), 2);
        assert!(!out_of_range.folder(0) && !out_of_range.folder(1));
    }

    #[test]
    fn narrowing_to_a_folder_outside_the_grant_sees_nothing() {
        let a = Access::from_grant(Some(vec![1]), 2);
        assert!(!a.only(1, 2).folder(1) && !a.only(1, 2).folder(0));
        assert!(a.only(0, 2).folder(0));
    }
}
