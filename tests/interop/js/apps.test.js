// subsonic-api (the npm Subsonic/OpenSubsonic client library, in JSON, its
// default) against a fresh `spindle serve --music DIR`, replaying what
// phone and desktop apps do: the first connect and sync, browsing by tags
// and by folders, playing (ranges, covers, scrobbles, now playing, lyrics),
// rating, starring, the play queue, bookmarks, shares, playlists, search
// paging, the admin methods, radio stations, podcasts and the jukebox
// answered honestly, the video and chat methods, and the error codes.
// Every Subsonic 1.16.1 method is called at least once.
//
// Run: SPINDLE_BIN=target/release/spindle node --test tests/interop/js/

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { SubsonicAPI } from "subsonic-api";

import { PASSWORD, Server, imageSize, ok } from "./server.js";

let srv;
/** ann, the administrator, by salted token (the library's default). */
let api;
/** bob, a listener. */
let bob;
/** ids found on the way, by the step that found them. */
const ids = {};

function client(opts = {}) {
  const auth = opts.apiKey
    ? { apiKey: opts.apiKey }
    : { username: opts.user ?? "ann", password: opts.password ?? PASSWORD };
  return new SubsonicAPI({ url: srv.base, auth, post: opts.post, fetch: opts.fetch });
}

const song = (title) => srv.songs[title].id;
const titles = (list) => (list ?? []).map((x) => x.title).sort();

/** Every page of a paged list, `size` at a time, until one comes back short. */
async function allPages(size, page) {
  const all = [];
  for (let offset = 0; ; offset += size) {
    const got = await page(offset);
    assert.ok(got.length <= size, `a page of ${size} held ${got.length}`);
    all.push(...got);
    if (got.length < size) return all;
    assert.ok(offset < 1000, "paging never ended");
  }
}

before(async () => {
  srv = await Server.start();
  api = client();
  bob = client({ user: "bob" });
});

after(async () => {
  await srv?.stop();
});

describe("first connect and sync", () => {
  it("ping answers ok as an OpenSubsonic server", async () => {
    const r = ok(await api.ping(), "ping");
    assert.equal(r.openSubsonic, true);
    assert.equal(r.version, "1.16.1");
    assert.equal(typeof r.type, "string");
    assert.equal(typeof r.serverVersion, "string");
  });

  it("getLicense is valid", async () => {
    assert.equal(ok(await api.getLicense(), "getLicense").license.valid, true);
  });

  it("getOpenSubsonicExtensions lists what the server honours", async () => {
    const r = ok(await api.getOpenSubsonicExtensions(), "getOpenSubsonicExtensions");
    const names = r.openSubsonicExtensions.map((e) => e.name);
    for (const n of ["apiKeyAuthentication", "formPost", "songLyrics", "indexBasedQueue"]) {
      assert.ok(names.includes(n), `${n} missing from ${names}`);
    }
    for (const e of r.openSubsonicExtensions) assert.ok(e.versions.length > 0, e.name);
  });

  it("getMusicFolders has the one music folder", async () => {
    const r = ok(await api.getMusicFolders(), "getMusicFolders");
    assert.equal(r.musicFolders.musicFolder.length, 1);
    ids.folder = r.musicFolders.musicFolder[0].id;
  });

  it("getIndexes lists the artist folders, and nothing when unchanged since", async () => {
    const r = ok(await api.getIndexes({ musicFolderId: ids.folder }), "getIndexes");
    const names = r.indexes.index.flatMap((i) => i.artist.map((a) => a.name)).sort();
    assert.deepEqual(names, ["Aurora Test", "Björk Sample"]);
    assert.ok(r.indexes.lastModified > 0);
    const since = ok(await api.getIndexes({ ifModifiedSince: r.indexes.lastModified + 1 }),
      "getIndexes ifModifiedSince");
    assert.equal((since.indexes?.index ?? []).length, 0, "unchanged, yet indexes came back");
  });

  it("getArtists lists both artists with their album counts", async () => {
    const r = ok(await api.getArtists(), "getArtists");
    const artists = r.artists.index.flatMap((i) => i.artist);
    const counts = Object.fromEntries(artists.map((a) => [a.name, a.albumCount]));
    assert.deepEqual(counts, { "Aurora Test": 2, "Björk Sample": 1 });
    for (const a of artists) ids[a.name] = a.id;
  });

  const TYPES = ["random", "newest", "highest", "frequent", "recent", "alphabeticalByName",
    "alphabeticalByArtist", "starred", "byYear", "byGenre"];
  const extra = { byYear: { fromYear: 1990, toYear: 2000 }, byGenre: { genre: "Electronic" } };

  // A random list never runs out: one page of more than there are.
  const pager = (type) => (type === "random" ? (page) => page(0) : (page) => allPages(2, page));

  it("getAlbumList2 pages through every type", async () => {
    for (const type of TYPES) {
      const albums = await pager(type)(async (offset) => {
        const size = type === "random" ? 10 : 2;
        const r = ok(await api.getAlbumList2({ type, size, offset, ...extra[type] }),
          `getAlbumList2 type=${type} offset=${offset}`);
        return r.albumList2.album ?? [];
      });
      const names = albums.map((a) => a.name);
      if (type === "alphabeticalByName") {
        assert.deepEqual(names, ["Homogenic Tones", "Northern Lights", "Southern Dark"]);
      } else if (type === "alphabeticalByArtist") {
        assert.deepEqual(names, ["Northern Lights", "Southern Dark", "Homogenic Tones"]);
      } else if (type === "newest" || type === "random") {
        assert.deepEqual([...names].sort(),
          ["Homogenic Tones", "Northern Lights", "Southern Dark"], type);
      } else if (type === "byYear" || type === "byGenre") {
        assert.deepEqual(names, ["Homogenic Tones"], type);
      } else {
        // Nothing played, rated or starred yet.
        assert.deepEqual(names, [], type);
      }
      for (const a of albums) ids[a.name] = a.id;
    }
  });

  it("getAlbumList (v1, folders) pages through every type", async () => {
    for (const type of TYPES) {
      const albums = await pager(type)(async (offset) => {
        const size = type === "random" ? 10 : 2;
        const r = ok(await api.getAlbumList({ type, size, offset, ...extra[type] }),
          `getAlbumList type=${type} offset=${offset}`);
        return r.albumList.album ?? [];
      });
      if (type === "alphabeticalByName") {
        assert.deepEqual(albums.map((a) => a.title),
          ["Homogenic Tones", "Northern Lights", "Southern Dark"]);
        for (const a of albums) assert.equal(a.isDir, true);
      }
    }
  });

  it("getStarred2 and getPlaylists answer empty", async () => {
    const s = ok(await api.getStarred2(), "getStarred2").starred2;
    assert.equal((s.song ?? []).length + (s.album ?? []).length + (s.artist ?? []).length, 0);
    assert.deepEqual(ok(await api.getPlaylists(), "getPlaylists").playlists.playlist ?? [], []);
  });

  it("getGenres counts songs and albums per genre", async () => {
    const r = ok(await api.getGenres(), "getGenres");
    const g = Object.fromEntries(r.genres.genre.map((x) => [x.value, x.songCount]));
    assert.deepEqual(g, { Pop: 4, Electronic: 2 });
  });

  it("getScanStatus has counted every song", async () => {
    const r = ok(await api.getScanStatus(), "getScanStatus");
    assert.equal(r.scanStatus.scanning, false);
    assert.equal(r.scanStatus.count, 6);
  });
});

describe("browse by tags", () => {
  it("getArtist, getAlbum and getSong walk down to a song", async () => {
    const ar = ok(await api.getArtist({ id: ids["Aurora Test"] }), "getArtist").artist;
    assert.deepEqual(ar.album.map((a) => a.name).sort(), ["Northern Lights", "Southern Dark"]);
    const al = ok(await api.getAlbum({ id: ids["Northern Lights"] }), "getAlbum").album;
    assert.deepEqual(al.song.map((s) => s.title), ["Runaway Signal", "Half the World"]);
    assert.equal(al.songCount, 2);
    const s = ok(await api.getSong({ id: al.song[0].id }), "getSong").song;
    assert.equal(s.title, "Runaway Signal");
    assert.equal(s.album, "Northern Lights");
    assert.equal(s.suffix, "flac");
  });

  it("getArtistInfo2 and getArtistInfo answer locally, with similar artists", async () => {
    const r = ok(await api.getArtistInfo2({ id: ids["Aurora Test"] }), "getArtistInfo2");
    // Both artists have Pop songs.
    const similar = (r.artistInfo2.similarArtist ?? []).map((a) => a.name);
    assert.ok(similar.includes("Björk Sample"), `similar: ${similar}`);
    ok(await api.getArtistInfo({ id: ids["Aurora Test"] }), "getArtistInfo");
  });

  it("getAlbumInfo2 and getAlbumInfo answer", async () => {
    ok(await api.getAlbumInfo2({ id: ids["Northern Lights"] }), "getAlbumInfo2");
    ok(await api.getAlbumInfo({ id: ids["Northern Lights"] }), "getAlbumInfo");
  });

  it("getTopSongs answers for an artist", async () => {
    const r = ok(await api.getTopSongs({ artist: "Aurora Test", count: 10 }), "getTopSongs");
    assert.ok(r.topSongs, "no topSongs");
  });

  it("getSimilarSongs2 and getSimilarSongs find songs of other artists", async () => {
    const r = ok(await api.getSimilarSongs2({ id: ids["Aurora Test"], count: 10 }),
      "getSimilarSongs2");
    const songs = r.similarSongs2.song ?? [];
    assert.ok(songs.length > 0, "no similar songs");
    ok(await api.getSimilarSongs({ id: song("Runaway Signal"), count: 10 }), "getSimilarSongs");
  });
});

describe("browse by folders", () => {
  it("getIndexes and getMusicDirectory follow the folder tree down to the files", async () => {
    const r = ok(await api.getIndexes(), "getIndexes");
    const aurora = r.indexes.index.flatMap((i) => i.artist).find((a) => a.name === "Aurora Test");
    const top = ok(await api.getMusicDirectory({ id: aurora.id }), "getMusicDirectory artist");
    const albums = top.directory.child;
    assert.deepEqual(albums.map((c) => c.title).sort(), ["Northern Lights", "Southern Dark"]);
    assert.ok(albums.every((c) => c.isDir));
    const north = albums.find((c) => c.title === "Northern Lights");
    const dir = ok(await api.getMusicDirectory({ id: north.id }), "getMusicDirectory album");
    assert.deepEqual(dir.directory.child.map((c) => c.title), ["Runaway Signal", "Half the World"]);
    assert.ok(dir.directory.child.every((c) => !c.isDir));
    assert.equal(dir.directory.parent, aurora.id);
  });
});

describe("play", () => {
  it("stream answers a range byte for byte, and the whole file", async () => {
    const ranged = client({
      fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, Range: "bytes=100-1099" } }),
    });
    const r = await ranged.stream({ id: song("Runaway Signal") });
    assert.equal(r.status, 206);
    const file = srv.file("Runaway Signal");
    assert.deepEqual(Buffer.from(await r.arrayBuffer()), file.subarray(100, 1100));
    const whole = await api.stream({ id: song("Runaway Signal") });
    assert.equal(whole.status, 200);
    assert.deepEqual(Buffer.from(await whole.arrayBuffer()), file);
    const dl = await api.download({ id: song("Jóga") });
    assert.equal(dl.status, 200);
    assert.deepEqual(Buffer.from(await dl.arrayBuffer()), srv.file("Jóga"));
  });

  it("getCoverArt sends the embedded cover and a resized folder cover", async () => {
    const emb = await api.getCoverArt({ id: song("Runaway Signal") });
    assert.equal(emb.status, 200);
    assert.match(emb.headers.get("content-type"), /^image\//);
    assert.deepEqual(imageSize(Buffer.from(await emb.arrayBuffer())),
      { type: "png", width: 264, height: 207 });
    const folder = await api.getCoverArt({ id: ids["Homogenic Tones"], size: 64 });
    assert.equal(folder.status, 200);
    const size = imageSize(Buffer.from(await folder.arrayBuffer()));
    assert.ok(size.width <= 64 && size.height <= 64, `size=64 gave ${JSON.stringify(size)}`);
  });

  it("scrobble submission=false shows in getNowPlaying; submission=true counts a play", async () => {
    const id = song("Runaway Signal");
    ok(await api.scrobble({ id, submission: false }), "scrobble submission=false");
    const now = ok(await api.getNowPlaying(), "getNowPlaying").nowPlaying.entry ?? [];
    const mine = now.find((e) => e.id === id);
    assert.ok(mine, `not playing: ${JSON.stringify(now)}`);
    assert.equal(mine.username, "ann");
    ok(await api.scrobble({ id, submission: true, time: Date.now() }), "scrobble submission=true");
    const top = ok(await api.getTopSongs({ artist: "Aurora Test" }), "getTopSongs").topSongs;
    assert.equal(top.song?.[0]?.id, id, `top songs: ${JSON.stringify(top)}`);
    const played = ok(await api.getSong({ id }), "getSong").song;
    assert.equal(played.playCount, 1);
    const recent = ok(await api.getAlbumList2({ type: "recent" }), "getAlbumList2 recent");
    assert.deepEqual(recent.albumList2.album.map((a) => a.name), ["Northern Lights"]);
    const freq = ok(await api.getAlbumList2({ type: "frequent" }), "getAlbumList2 frequent");
    assert.deepEqual(freq.albumList2.album.map((a) => a.name), ["Northern Lights"]);
  });

  it("getLyricsBySongId answers synced lines, embedded and from a .lrc file", async () => {
    const emb = ok(await api.getLyricsBySongId({ id: song("Half the World") }),
      "getLyricsBySongId embedded").lyricsList.structuredLyrics;
    assert.equal(emb.length, 1);
    assert.equal(emb[0].synced, true);
    assert.deepEqual(emb[0].line.map((l) => [l.start, l.value]),
      [[500, "First embedded line"], [1200, "Second embedded line"]]);
    const lrc = ok(await api.getLyricsBySongId({ id: song("Murder Song") }),
      "getLyricsBySongId .lrc").lyricsList.structuredLyrics;
    assert.deepEqual(lrc[0].line.map((l) => [l.start, l.value]),
      [[0, "Sidecar one"], [2000, "Sidecar two"]]);
    const none = ok(await api.getLyricsBySongId({ id: song("Jóga") }), "getLyricsBySongId none");
    assert.deepEqual(none.lyricsList.structuredLyrics ?? [], []);
  });

  it("getLyrics (v1) finds lyrics by artist and title", async () => {
    const r = ok(await api.getLyrics({ artist: "Aurora Test", title: "Half the World" }),
      "getLyrics").lyrics;
    assert.match(r.value, /First embedded line/);
  });
});

describe("rate", () => {
  it("setRating rates songs and albums, shown as userRating and in highest", async () => {
    ok(await api.setRating({ id: song("Bachelorette"), rating: 5 }), "setRating song");
    assert.equal(ok(await api.getSong({ id: song("Bachelorette") })).song.userRating, 5);
    ok(await api.setRating({ id: ids["Homogenic Tones"], rating: 4 }), "setRating album");
    assert.equal(ok(await api.getAlbum({ id: ids["Homogenic Tones"] })).album.userRating, 4);
    // Rated albums first, best first (the played ones follow).
    const hi = ok(await api.getAlbumList2({ type: "highest" }), "getAlbumList2 highest");
    assert.equal(hi.albumList2.album[0].name, "Homogenic Tones");
  });

  it("setRating refuses 7 with a message, and 0 removes a rating", async () => {
    const bad = await api.setRating({ id: song("Bachelorette"), rating: 7 });
    assert.equal(bad.status, "failed");
    assert.ok(bad.error.message.length > 0);
    ok(await api.setRating({ id: song("Bachelorette"), rating: 0 }), "setRating 0");
    assert.equal(ok(await api.getSong({ id: song("Bachelorette") })).song.userRating ?? 0, 0);
  });
});

describe("star and unstar", () => {
  it("star marks a song, an album and an artist; unstar clears them", async () => {
    ok(await api.star({ id: song("Hunter"), albumId: ids["Southern Dark"],
      artistId: ids["Björk Sample"] }), "star");
    const s = ok(await api.getStarred2(), "getStarred2").starred2;
    assert.deepEqual([titles(s.song), (s.album ?? []).map((a) => a.name),
      (s.artist ?? []).map((a) => a.name)], [["Hunter"], ["Southern Dark"], ["Björk Sample"]]);
    assert.ok(s.song[0].starred instanceof Date, "starred is a date");
    const v1 = ok(await api.getStarred(), "getStarred").starred;
    assert.deepEqual(titles(v1.song), ["Hunter"]);
    const list = ok(await api.getAlbumList2({ type: "starred" }), "getAlbumList2 starred");
    assert.deepEqual(list.albumList2.album.map((a) => a.name), ["Southern Dark"]);
    ok(await api.unstar({ id: song("Hunter"), albumId: ids["Southern Dark"],
      artistId: ids["Björk Sample"] }), "unstar");
    const after = ok(await api.getStarred2(), "getStarred2").starred2;
    assert.equal((after.song ?? []).length + (after.album ?? []).length
      + (after.artist ?? []).length, 0);
  });
});

describe("save the queue", () => {
  it("savePlayQueue and getPlayQueue keep the queue, current song, position and client", async () => {
    const q = [song("Jóga"), song("Hunter"), song("Jóga")];
    ok(await api.savePlayQueue({ id: q, current: q[1], position: 12345 }), "savePlayQueue");
    const r = ok(await api.getPlayQueue(), "getPlayQueue").playQueue;
    assert.deepEqual(r.entry.map((e) => e.id), q);
    assert.equal(r.current, q[1]);
    assert.equal(r.position, 12345);
    assert.equal(r.username, "ann");
    assert.equal(r.changedBy, "subsonic-api");
    assert.deepEqual(ok(await bob.getPlayQueue(), "bob's getPlayQueue").playQueue?.entry ?? [], []);
  });

  it("savePlayQueueByIndex and getPlayQueueByIndex (indexBasedQueue)", async () => {
    const q = [song("Jóga"), song("Hunter"), song("Jóga")];
    ok(await api.customJSON("savePlayQueueByIndex", { id: q, currentIndex: 2, position: 500 }),
      "savePlayQueueByIndex");
    const r = ok(await api.customJSON("getPlayQueueByIndex", {}), "getPlayQueueByIndex")
      .playQueueByIndex;
    assert.equal(r.currentIndex, 2);
    assert.equal(r.position, 500);
    assert.deepEqual(r.entry.map((e) => e.id), q);
  });
});

describe("bookmark", () => {
  it("createBookmark, getBookmarks and deleteBookmark", async () => {
    const id = song("Murder Song");
    ok(await api.createBookmark({ id, position: 1500, comment: "the middle" }), "createBookmark");
    const marks = ok(await api.getBookmarks(), "getBookmarks").bookmarks.bookmark;
    assert.deepEqual(marks.map((b) => [b.entry.id, b.position, b.comment]),
      [[id, 1500, "the middle"]]);
    ok(await api.deleteBookmark({ id }), "deleteBookmark");
    assert.deepEqual(ok(await api.getBookmarks()).bookmarks.bookmark ?? [], []);
  });
});

describe("share", () => {
  it("createShare, getShares, updateShare and deleteShare; the link plays without an account", async () => {
    const r = ok(await api.createShare({ id: ids["Northern Lights"], description: "For you",
      expires: Date.now() + 3_600_000 }), "createShare");
    const share = r.shares.share[0];
    assert.ok(share.expires instanceof Date);
    assert.deepEqual(share.entry.map((e) => e.title), ["Runaway Signal", "Half the World"]);
    const page = await fetch(share.url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /For you/);
    const listed = ok(await api.getShares(), "getShares").shares.share;
    assert.deepEqual(listed.map((s) => s.id), [share.id]);
    ok(await api.updateShare({ id: share.id, description: "Renamed" }), "updateShare");
    const renamed = ok(await api.getShares()).shares.share[0];
    assert.equal(renamed.description, "Renamed");
    ok(await api.deleteShare({ id: share.id }), "deleteShare");
    assert.deepEqual(ok(await api.getShares()).shares.share ?? [], []);
    assert.equal((await fetch(share.url)).status, 404);
  });
});

describe("playlists", () => {
  it("createPlaylist, getPlaylist, updatePlaylist, getPlaylists and deletePlaylist", async () => {
    const r = ok(await api.createPlaylist({ name: "Road", songId: [song("Jóga"), song("Hunter")] }),
      "createPlaylist");
    const id = r.playlist.id;
    assert.equal(r.playlist.songCount, 2);
    ok(await api.updatePlaylist({ playlistId: id, name: "Road trip", comment: "long",
      songIdToAdd: song("Murder Song"), songIndexToRemove: 0 }), "updatePlaylist");
    const p = ok(await api.getPlaylist({ id }), "getPlaylist").playlist;
    assert.equal(p.name, "Road trip");
    assert.equal(p.comment, "long");
    assert.deepEqual(p.entry.map((e) => e.title), ["Hunter", "Murder Song"]);
    const all = ok(await api.getPlaylists(), "getPlaylists").playlists.playlist;
    assert.deepEqual(all.map((x) => x.name), ["Road trip"]);
    ok(await api.deletePlaylist({ id }), "deletePlaylist");
    assert.equal((await api.getPlaylist({ id })).error?.code, 70);
  });
});

describe("search, random songs and genres", () => {
  it("search3 with an empty query pages through every song, album and artist", async () => {
    const songs = await allPages(2, async (songOffset) => ok(await api.search3({ query: "",
      songCount: 2, songOffset, albumCount: 0, artistCount: 0 }), "search3").searchResult3.song ?? []);
    assert.equal(new Set(songs.map((s) => s.id)).size, 6);
    assert.equal(songs.length, 6);
    const albums = await allPages(2, async (albumOffset) => ok(await api.search3({ query: "",
      songCount: 0, albumCount: 2, albumOffset, artistCount: 0 }), "search3").searchResult3.album ?? []);
    assert.equal(albums.length, 3);
    const artists = await allPages(1, async (artistOffset) => ok(await api.search3({ query: "",
      songCount: 0, albumCount: 0, artistCount: 1, artistOffset }), "search3").searchResult3.artist ?? []);
    assert.equal(artists.length, 2);
    const word = ok(await api.search3({ query: "Runaway" }), "search3 word").searchResult3;
    assert.deepEqual(titles(word.song), ["Runaway Signal"]);
  });

  it("search2 with an empty query pages through every song", async () => {
    const songs = await allPages(4, async (songOffset) => ok(await api.search2({ query: "",
      songCount: 4, songOffset }), "search2").searchResult2.song ?? []);
    assert.equal(new Set(songs.map((s) => s.id)).size, 6);
    const word = ok(await api.search2({ query: "Bachelorette" }), "search2 word").searchResult2;
    assert.deepEqual(titles(word.song), ["Bachelorette"]);
  });

  it("search (v1, deprecated) finds a song by any field", async () => {
    const r = ok(await api.customJSON("search", { any: "Runaway", count: 10 }), "search");
    assert.deepEqual(titles(r.searchResult.match), ["Runaway Signal"]);
  });

  it("getRandomSongs draws distinct songs, within a genre when asked", async () => {
    const r = ok(await api.getRandomSongs({ size: 4 }), "getRandomSongs").randomSongs.song;
    assert.equal(new Set(r.map((s) => s.id)).size, 4);
    const el = ok(await api.getRandomSongs({ size: 10, genre: "Electronic" }),
      "getRandomSongs genre").randomSongs.song;
    assert.deepEqual(titles(el), ["Bachelorette", "Jóga"]);
  });

  it("getSongsByGenre pages through a genre", async () => {
    const songs = await allPages(3, async (offset) => ok(await api.getSongsByGenre({
      genre: "Pop", count: 3, offset }), "getSongsByGenre").songsByGenre.song ?? []);
    assert.deepEqual(titles(songs), ["Half the World", "Hunter", "Murder Song", "Runaway Signal"]);
  });
});

describe("users and the admin methods", () => {
  it("getUser and getUsers show the roles; podcasts and the jukebox are off", async () => {
    const me = ok(await api.getUser({ username: "ann" }), "getUser").user;
    assert.equal(me.adminRole, true);
    assert.equal(me.podcastRole, false);
    assert.equal(me.jukeboxRole, false);
    const all = ok(await api.getUsers(), "getUsers").users.user;
    assert.deepEqual(Object.fromEntries(all.map((u) => [u.username, u.adminRole])),
      { ann: true, bob: false });
  });

  it("createUser, updateUser, changePassword and deleteUser", async () => {
    ok(await api.createUser({ username: "cy", password: "cy pass", email: "cy@example.org",
      shareRole: true }), "createUser");
    ok(await client({ user: "cy", password: "cy pass" }).ping(), "ping as cy");
    ok(await api.updateUser({ username: "cy", shareRole: false, downloadRole: true }), "updateUser");
    const cy = ok(await api.getUser({ username: "cy" })).user;
    assert.equal(cy.shareRole, false);
    assert.equal(cy.downloadRole, true);
    assert.equal(cy.email, "cy@example.org");
    ok(await client({ user: "cy", password: "cy pass" }).changePassword({ username: "cy",
      password: "newer" }), "changePassword by cy");
    ok(await client({ user: "cy", password: "newer" }).ping(), "ping with the new password");
    ok(await api.deleteUser({ username: "cy" }), "deleteUser");
    assert.equal((await client({ user: "cy", password: "newer" }).ping()).error?.code, 40);
  });
});

describe("scanning", () => {
  it("startScan rescans and getScanStatus counts the songs", async () => {
    const r = ok(await api.startScan(), "startScan");
    assert.ok("scanning" in r.scanStatus);
    const deadline = Date.now() + 30_000;
    let st;
    do {
      st = ok(await api.getScanStatus(), "getScanStatus").scanStatus;
      assert.ok(Date.now() < deadline, "the scan never ended");
    } while (st.scanning);
    assert.equal(st.count, 6);
  });
});

describe("internet radio", () => {
  it("create, list, update and delete a station", async () => {
    const url = "https://radio.example/live.mp3";
    ok(await api.createInternetRadioStation({ streamUrl: url, name: "Live",
      homepageUrl: "https://radio.example/" }), "createInternetRadioStation");
    const [st] = ok(await bob.getInternetRadioStations(), "getInternetRadioStations")
      .internetRadioStations.internetRadioStation;
    assert.deepEqual([st.name, st.streamUrl, st.homePageUrl],
      ["Live", url, "https://radio.example/"]);
    ok(await api.updateInternetRadioStation({ id: st.id, streamUrl: url, name: "Live 2" }),
      "updateInternetRadioStation");
    assert.equal(ok(await api.getInternetRadioStations()).internetRadioStations
      .internetRadioStation[0].name, "Live 2");
    ok(await api.deleteInternetRadioStation({ id: st.id }), "deleteInternetRadioStation");
    assert.deepEqual(ok(await api.getInternetRadioStations()).internetRadioStations
      .internetRadioStation ?? [], []);
  });
});

describe("podcasts and the jukebox, answered honestly", () => {
  it("getPodcasts and getNewestPodcasts are empty; getPodcastEpisode finds nothing", async () => {
    assert.deepEqual(ok(await api.getPodcasts(), "getPodcasts").podcasts.channel ?? [], []);
    assert.deepEqual(ok(await api.getNewestPodcasts(), "getNewestPodcasts").newestPodcasts
      .episode ?? [], []);
    assert.equal((await api.getPodcastEpisode({ id: "1" })).error?.code, 70);
  });

  it("the podcast write methods and jukeboxControl answer 50, not supported", async () => {
    const calls = {
      refreshPodcasts: () => api.refreshPodcasts(),
      createPodcastChannel: () => api.createPodcastChannel({ url: "https://pod.example/feed" }),
      deletePodcastChannel: () => api.deletePodcastChannel({ id: "1" }),
      deletePodcastEpisode: () => api.deletePodcastEpisode({ id: "1" }),
      downloadPodcastEpisode: () => api.customJSON("downloadPodcastEpisode", { id: "1" }),
      jukeboxControl: () => api.jukeboxControl({ action: "status" }),
    };
    for (const [name, call] of Object.entries(calls)) {
      const r = await call();
      assert.equal(r.error?.code, 50, `${name}: ${JSON.stringify(r)}`);
      assert.match(r.error.message, /not supported/, name);
    }
  });
});

describe("video, avatar and chat methods", () => {
  it("getVideos is empty; getVideoInfo and getCaptions find no video", async () => {
    const v = ok(await api.getVideos(), "getVideos");
    assert.deepEqual(v.videos.video ?? [], []);
    assert.equal((await api.getVideoInfo({ id: song("Jóga") })).error?.code, 70, "getVideoInfo");
    const cap = await api.getCaptions({ id: song("Jóga") });
    assert.equal(JSON.parse(await cap.text())["subsonic-response"].error?.code, 70, "getCaptions");
  });

  it("hls.m3u8 answers a playlist or refuses with error 50", async () => {
    const r = await api.hls({ id: song("Jóga") });
    const text = await r.text();
    if (text.startsWith("#EXTM3U")) return;
    const err = JSON.parse(text)["subsonic-response"].error;
    assert.equal(err?.code, 50, `hls: ${text}`);
  });

  it("getAvatar answers an image or error 70", async () => {
    const r = await api.getAvatar({ username: "ann" });
    if (/^image\//.test(r.headers.get("content-type") ?? "")) return;
    const text = await r.text();
    assert.equal(JSON.parse(text)["subsonic-response"].error?.code, 70, `getAvatar: ${text}`);
  });

  it("getChatMessages lists; addChatMessage adds or answers 50", async () => {
    const add = await api.addChatMessage({ message: "hello" });
    const list = ok(await api.getChatMessages(), "getChatMessages").chatMessages;
    if (add.status === "ok") {
      assert.deepEqual((list.chatMessage ?? []).map((m) => m.message), ["hello"]);
    } else {
      assert.equal(add.error?.code, 50, `addChatMessage: ${JSON.stringify(add)}`);
      assert.deepEqual(list.chatMessage ?? [], []);
    }
  });
});

describe("authentication and form POST", () => {
  it("an API key works (apiKeyAuthentication) and tokenInfo names its user", async () => {
    const k = client({ apiKey: srv.apiKey });
    ok(await k.ping(), "ping by apiKey");
    const info = ok(await k.customJSON("tokenInfo", {}), "tokenInfo");
    assert.equal(info.tokenInfo.username, "ann");
  });

  it("the library's POST mode (formPost) browses as GET does", async () => {
    const p = client({ post: true });
    const al = ok(await p.getAlbum({ id: ids["Northern Lights"] }), "getAlbum by POST").album;
    assert.equal(al.song.length, 2);
    ok(await p.star({ id: song("Jóga") }), "star by POST");
    ok(await p.unstar({ id: song("Jóga") }), "unstar by POST");
  });
});

describe("error codes", () => {
  it("a missing parameter is 10", async () => {
    assert.equal((await api.getAlbum({})).error?.code, 10);
    assert.equal((await api.getSong({})).error?.code, 10);
  });

  it("a wrong password is 40", async () => {
    const r = await client({ password: "wrong" }).ping();
    assert.equal(r.status, "failed");
    assert.equal(r.error.code, 40);
  });

  it("a listener calling createUser is 50", async () => {
    const r = await bob.createUser({ username: "eve", password: "x", email: "e@example.org" });
    assert.equal(r.error?.code, 50);
  });

  it("an unknown id is 70", async () => {
    assert.equal((await api.getAlbum({ id: "al-nothing" })).error?.code, 70);
    assert.equal((await api.getSong({ id: "999999" })).error?.code, 70);
    assert.equal((await api.getArtist({ id: "ar-nothing" })).error?.code, 70);
  });
});
