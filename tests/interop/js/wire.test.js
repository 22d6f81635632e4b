// Every Subsonic 1.16.1 method and the OpenSubsonic methods Spindle
// advertises, by plain fetch against a fresh `spindle serve --music DIR`,
// three times over: in XML by GET at /rest/METHOD, in XML by form POST
// (OpenSubsonic formPost: every parameter, credentials too, in the body)
// at /rest/METHOD.view, and in JSON by form POST at /rest/METHOD. Then
// JSONP, the extensions' endpoints, and the error codes in XML.
//
// Run: SPINDLE_BIN=target/release/spindle node --test tests/interop/js/

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { NS, Server, xmlAttr, xmlStatus } from "./server.js";

let srv;
/** Ids the calls use, and ids the calls make (playlists, shares, stations). */
let c;

before(async () => {
  srv = await Server.start();
  const idx = await srv.json("getIndexes");
  const artists = await srv.json("getArtists");
  const aurora = artists.artists.index.flatMap((i) => i.artist)
    .find((a) => a.name === "Aurora Test");
  c = {
    song: srv.songs["Runaway Signal"].id,
    lyricSong: srv.songs["Half the World"].id,
    album: srv.songs["Runaway Signal"].albumId,
    artist: aurora.id,
    dir: idx.indexes.index.flatMap((i) => i.artist)[0].id,
  };
});

after(async () => {
  await srv?.stop();
});

/** The first value named `name` anywhere in a JSON answer (the first of a list). */
function jsonFind(obj, name) {
  if (obj === null || typeof obj !== "object") return undefined;
  if (name in obj) return Array.isArray(obj[name]) ? obj[name][0] : obj[name];
  for (const v of Object.values(obj)) {
    const found = jsonFind(v, name);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Status, code and message of an answer in either format, plus a picker. */
async function answer(r, format) {
  const type = r.headers.get("content-type") ?? "";
  const body = Buffer.from(await r.arrayBuffer());
  const text = body.toString("utf8");
  const base = { http: r.status, type, body, text };
  if (format === "json" && type.includes("json")) {
    const res = JSON.parse(text)["subsonic-response"];
    return { ...base, status: res.status, code: res.error?.code, message: res.error?.message,
      pick: (el, attr) => jsonFind(res, el)?.[attr], res };
  }
  if (type.includes("xml")) {
    const s = xmlStatus(text);
    assert.equal(s.ns, NS, "the XML answer is in the Subsonic namespace");
    return { ...base, ...s, pick: (el, attr) => xmlAttr(text, el, attr) };
  }
  return base;
}

const said = (a) => `HTTP ${a.http} ${a.type}: ${a.text.slice(0, 300)}`;

// Expectations.
const OK = (a) => assert.equal(a.status, "ok", said(a));
const code = (n) => (a) => assert.equal(a.code, n, said(a));
const okOr = (n) => (a) => { if (a.status !== "ok") code(n)(a); };
const binary = (prefix) => (a) => {
  assert.equal(a.http, 200, said(a));
  assert.ok(!/xml|json/.test(a.type), said(a));
  if (prefix) assert.deepEqual(a.body.subarray(0, prefix.length), Buffer.from(prefix));
};
const imageOr = (n) => (a) => (/^image\//.test(a.type) ? undefined : code(n)(a));
const playlistOr = (n) => (a) => (a.text.startsWith("#EXTM3U") ? undefined : code(n)(a));
const wrongMethod = (a) => assert.ok(!(a.code === 0 && /Unknown method/i.test(a.message ?? "")),
  `the server does not know it: ${said(a)}`);

/**
 * The calls, in an order that makes what later calls use. Each: method,
 * parameters from `c`, expectation, and what to keep from the answer.
 */
const CALLS = [
  // System
  ["ping", () => ({}), OK],
  ["getLicense", () => ({}), OK],
  ["getOpenSubsonicExtensions", () => ({}), OK],
  // Browsing
  ["getMusicFolders", () => ({}), OK],
  ["getIndexes", () => ({ musicFolderId: 1 }), OK],
  ["getMusicDirectory", () => ({ id: c.dir }), OK],
  ["getGenres", () => ({}), OK],
  ["getArtists", () => ({}), OK],
  ["getArtist", () => ({ id: c.artist }), OK],
  ["getAlbum", () => ({ id: c.album }), OK],
  ["getSong", () => ({ id: c.song }), OK],
  ["getVideos", () => ({}), OK],
  ["getVideoInfo", () => ({ id: c.song }), code(70)],
  ["getArtistInfo", () => ({ id: c.artist }), OK],
  ["getArtistInfo2", () => ({ id: c.artist }), OK],
  ["getAlbumInfo", () => ({ id: c.album }), OK],
  ["getAlbumInfo2", () => ({ id: c.album }), OK],
  ["getSimilarSongs", () => ({ id: c.song }), OK],
  ["getSimilarSongs2", () => ({ id: c.artist }), OK],
  ["getTopSongs", () => ({ artist: "Aurora Test" }), OK],
  // Album and song lists
  ["getAlbumList", () => ({ type: "newest" }), OK],
  ["getAlbumList2", () => ({ type: "alphabeticalByName", size: 2, offset: 1 }), OK],
  ["getRandomSongs", () => ({ size: 3 }), OK],
  ["getSongsByGenre", () => ({ genre: "Pop", count: 2 }), OK],
  ["getNowPlaying", () => ({}), OK],
  ["getStarred", () => ({}), OK],
  ["getStarred2", () => ({}), OK],
  // Searching
  ["search", () => ({ any: "Runaway" }), OK],
  ["search2", () => ({ query: "Runaway" }), OK],
  ["search3", () => ({ query: "" }), OK],
  // Playlists
  ["createPlaylist", () => ({ name: "Wire", songId: [c.song, c.lyricSong] }), OK,
    ["playlist", "playlist", "id"]],
  ["getPlaylists", () => ({}), OK],
  ["getPlaylist", () => ({ id: c.playlist }), OK],
  ["updatePlaylist", () => ({ playlistId: c.playlist, name: "Wire 2", songIndexToRemove: 0 }), OK],
  ["deletePlaylist", () => ({ id: c.playlist }), OK],
  // Media retrieval
  ["stream", () => ({ id: c.song }), binary("fLaC")],
  ["download", () => ({ id: c.song }), binary("fLaC")],
  ["hls.m3u8", () => ({ id: c.song }), playlistOr(50)],
  ["getCaptions", () => ({ id: c.song }), code(70)],
  ["getCoverArt", () => ({ id: c.song }), binary([0x89, 0x50, 0x4e, 0x47])],
  ["getLyrics", () => ({ artist: "Aurora Test", title: "Half the World" }), OK],
  ["getLyricsBySongId", () => ({ id: c.lyricSong }), OK],
  ["getAvatar", () => ({ username: "ann" }), imageOr(70)],
  // Media annotation
  ["star", () => ({ id: c.song, albumId: c.album }), OK],
  ["unstar", () => ({ id: c.song, albumId: c.album }), OK],
  ["setRating", () => ({ id: c.song, rating: 3 }), OK],
  ["scrobble", () => ({ id: c.song, submission: "false" }), OK],
  // Sharing
  ["createShare", () => ({ id: c.song, description: "wire" }), OK, ["share", "share", "id"]],
  ["getShares", () => ({}), OK],
  ["updateShare", () => ({ id: c.share, description: "wire 2" }), OK],
  ["deleteShare", () => ({ id: c.share }), OK],
  // Podcasts: honestly none
  ["getPodcasts", () => ({}), OK],
  ["getNewestPodcasts", () => ({}), OK],
  ["getPodcastEpisode", () => ({ id: "1" }), code(70)],
  ["refreshPodcasts", () => ({}), code(50)],
  ["createPodcastChannel", () => ({ url: "https://pod.example/feed" }), code(50)],
  ["deletePodcastChannel", () => ({ id: "1" }), code(50)],
  ["deletePodcastEpisode", () => ({ id: "1" }), code(50)],
  ["downloadPodcastEpisode", () => ({ id: "1" }), code(50)],
  // Jukebox: honestly none
  ["jukeboxControl", () => ({ action: "status" }), code(50)],
  // Internet radio
  ["createInternetRadioStation", () => ({ streamUrl: "https://radio.example/a.mp3", name: "Wire" }), OK],
  ["getInternetRadioStations", () => ({}), OK, ["radio", "internetRadioStation", "id"]],
  ["updateInternetRadioStation", () => ({ id: c.radio, streamUrl: "https://radio.example/b.mp3",
    name: "Wire 2" }), OK],
  ["deleteInternetRadioStation", () => ({ id: c.radio }), OK],
  // Chat
  ["addChatMessage", () => ({ message: "hello" }), okOr(50)],
  ["getChatMessages", () => ({}), OK],
  // User management
  ["getUser", () => ({ username: "ann" }), OK],
  ["getUsers", () => ({}), OK],
  ["createUser", (pass) => ({ username: `wire${pass}`, password: "pw", email: "w@example.org" }), OK],
  ["updateUser", (pass) => ({ username: `wire${pass}`, downloadRole: true }), OK],
  ["changePassword", (pass) => ({ username: `wire${pass}`, password: "pw2" }), OK],
  ["deleteUser", (pass) => ({ username: `wire${pass}` }), OK],
  // Bookmarks and the play queue
  ["createBookmark", () => ({ id: c.song, position: 1000 }), OK],
  ["getBookmarks", () => ({}), OK],
  ["deleteBookmark", () => ({ id: c.song }), OK],
  ["savePlayQueue", () => ({ id: [c.song, c.lyricSong], current: c.lyricSong, position: 10 }), OK],
  ["getPlayQueue", () => ({}), OK],
  ["savePlayQueueByIndex", () => ({ id: [c.song, c.song], currentIndex: 1 }), OK],
  ["getPlayQueueByIndex", () => ({}), OK],
  // Media library scanning
  ["getScanStatus", () => ({}), OK],
  ["startScan", () => ({}), OK],
  // OpenSubsonic apiKeyAuthentication
  ["tokenInfo", () => ({ apiKey: srv.apiKey }), OK, null, { noAuth: true }],
];

/** The 76 methods of Subsonic 1.16.1 (http://www.subsonic.org/pages/api.jsp). */
const SUBSONIC_1_16_1 = `ping getLicense getMusicFolders getIndexes getMusicDirectory getGenres
  getArtists getArtist getAlbum getSong getVideos getVideoInfo getArtistInfo getArtistInfo2
  getAlbumInfo getAlbumInfo2 getSimilarSongs getSimilarSongs2 getTopSongs getAlbumList
  getAlbumList2 getRandomSongs getSongsByGenre getNowPlaying getStarred getStarred2 search
  search2 search3 getPlaylists getPlaylist createPlaylist updatePlaylist deletePlaylist stream
  download hls.m3u8 getCaptions getCoverArt getLyrics getAvatar star unstar setRating scrobble
  getShares createShare updateShare deleteShare getPodcasts getNewestPodcasts refreshPodcasts
  createPodcastChannel deletePodcastChannel deletePodcastEpisode downloadPodcastEpisode
  jukeboxControl getInternetRadioStations createInternetRadioStation updateInternetRadioStation
  deleteInternetRadioStation getChatMessages addChatMessage getUser getUsers createUser
  updateUser deleteUser changePassword getBookmarks createBookmark deleteBookmark getPlayQueue
  savePlayQueue getScanStatus startScan`.split(/\s+/).filter(Boolean);

it("the table calls every Subsonic 1.16.1 method", () => {
  assert.equal(SUBSONIC_1_16_1.length, 76);
  const called = new Set(CALLS.map(([m]) => m));
  assert.deepEqual(SUBSONIC_1_16_1.filter((m) => !called.has(m)), []);
});

const PASSES = [
  { name: "XML, GET /rest/METHOD", format: "xml", post: false, view: false },
  { name: "XML, form POST /rest/METHOD.view", format: "xml", post: true, view: true },
  { name: "JSON, form POST /rest/METHOD", format: "json", post: true, view: false },
];

for (const [n, pass] of PASSES.entries()) {
  describe(pass.name, () => {
    for (const [method, params, expect, keep, opts = {}] of CALLS) {
      it(method, async () => {
        const p = params(n);
        if (pass.format === "json") p.f = "json";
        // hls has its own suffix (.m3u8), so never .view.
        const view = pass.view && !method.includes(".");
        const r = await srv.request(method, p, { ...opts, post: pass.post, view });
        const a = await answer(r, pass.format);
        expect(a);
        if (keep) {
          const [key, el, attr] = keep;
          c[key] = a.pick(el, attr);
          assert.ok(c[key], `no ${el} ${attr} in ${said(a)}`);
        }
      });
    }
  });
}

describe("JSONP", () => {
  it("f=jsonp wraps the JSON answer in the callback", async () => {
    const r = await srv.request("getAlbum", { id: c.album, f: "jsonp", callback: "cb" });
    const text = await r.text();
    assert.match(r.headers.get("content-type"), /javascript/);
    const m = /^cb\(([\s\S]*)\);?\s*$/.exec(text);
    assert.ok(m, text.slice(0, 200));
    assert.equal(JSON.parse(m[1])["subsonic-response"].album.id, c.album);
  });
});

/** Each extension's endpoints (https://opensubsonic.netlify.app/docs/extensions/). */
const EXTENSION_METHODS = {
  apiKeyAuthentication: ["tokenInfo"],
  songLyrics: ["getLyricsBySongId"],
  indexBasedQueue: ["savePlayQueueByIndex", "getPlayQueueByIndex"],
  getPodcastEpisode: ["getPodcastEpisode"],
  playbackReport: ["reportPlayback"],
  transcoding: ["getTranscodeDecision", "getTranscodeStream"],
  sonicSimilarity: ["getSonicSimilarTracks", "findSonicPath"],
};

describe("OpenSubsonic", () => {
  it("getOpenSubsonicExtensions answers without credentials", async () => {
    const r = await srv.json("getOpenSubsonicExtensions", {}, { noAuth: true });
    assert.equal(r.status, "ok");
    assert.equal(r.openSubsonic, true);
  });

  it("the server knows every endpoint of every extension it advertises", async () => {
    const r = await srv.json("getOpenSubsonicExtensions");
    for (const { name } of r.openSubsonicExtensions) {
      for (const m of EXTENSION_METHODS[name] ?? []) {
        const a = await answer(await srv.request(m, { f: "json" }), "json");
        wrongMethod(a);
      }
    }
  });

  it("an API key together with u is error 43", async () => {
    const r = await srv.request("ping", { apiKey: srv.apiKey, u: "ann" }, { noAuth: true });
    assert.equal(xmlStatus(await r.text()).code, 43);
  });

  it("a wrong API key is error 44", async () => {
    const r = await srv.request("ping", { apiKey: "nope" }, { noAuth: true });
    assert.equal(xmlStatus(await r.text()).code, 44);
  });
});

describe("error codes in XML, by GET and by POST", () => {
  for (const post of [false, true]) {
    const how = post ? "POST" : "GET";
    const xml = async (m, p, o = {}) => xmlStatus(await srv.xml(m, p, { ...o, post }));
    it(`a missing parameter is 10 (${how})`, async () => {
      assert.equal((await xml("getAlbum", {})).code, 10);
    });
    it(`a wrong password is 40 (${how})`, async () => {
      assert.equal((await xml("ping", {}, { password: "wrong" })).code, 40);
    });
    it(`no credentials at all is 10 (${how})`, async () => {
      assert.equal((await xml("ping", {}, { noAuth: true })).code, 10);
    });
    it(`a listener calling an admin method is 50 (${how})`, async () => {
      const p = { username: "eve", password: "x", email: "e@example.org" };
      assert.equal((await xml("createUser", p, { user: "bob" })).code, 50);
      assert.equal((await xml("deleteUser", { username: "ann" }, { user: "bob" })).code, 50);
    });
    it(`an unknown id is 70 (${how})`, async () => {
      assert.equal((await xml("getAlbum", { id: "al-nothing" })).code, 70);
      assert.equal((await xml("getMusicDirectory", { id: "nothing" })).code, 70);
      assert.equal((await xml("getPlaylist", { id: "999999" })).code, 70);
    });
  }
});
