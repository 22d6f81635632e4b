// A web Subsonic client of another origin built on the npm library
// subsonic-api (its browser build, served by this page's own origin as
// /vendor/subsonic-api.js): salted-token login, a reload, ping again, play
// a song (a ranged stream and a scrobble), star it, make a playlist by form
// POST, as web Subsonic apps do. The outcome goes into #out as JSON.
import { SubsonicAPI } from "/vendor/subsonic-api.js";

const args = new URLSearchParams(location.search);
const config = {
  url: args.get("server"),
  auth: { username: args.get("user"), password: args.get("password") },
};
const api = new SubsonicAPI(config);
// OpenSubsonic formPost: every call a form POST to the .view URL.
const posting = new SubsonicAPI({ ...config, post: true });
// A player asks for the start of the file first.
const ranged = new SubsonicAPI({
  ...config,
  fetch: (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers || {}), Range: "bytes=0-9" } }),
});

async function run() {
  const out = {};
  if (!sessionStorage.getItem("reloaded")) {
    sessionStorage.setItem("first", (await api.ping()).status);
    sessionStorage.setItem("reloaded", "1");
    location.reload();
    return null;
  }
  out.first = sessionStorage.getItem("first");
  out.ping = (await api.ping()).status;
  const song = (await api.getRandomSongs({ size: 1 })).randomSongs.song[0];
  const stream = await ranged.stream({ id: song.id });
  out.streamStatus = stream.status;
  out.contentRange = stream.headers.get("Content-Range");
  out.bytes = (await stream.arrayBuffer()).byteLength;
  out.nowPlaying = (await api.scrobble({ id: song.id, submission: false })).status;
  out.scrobble = (await api.scrobble({ id: song.id, submission: true, time: Date.now() })).status;
  out.played = (await api.getSong({ id: song.id })).song.playCount;
  out.star = (await api.star({ id: song.id })).status;
  out.starred = ((await api.getStarred2()).starred2.song || []).map((s) => s.id).includes(song.id);
  const made = await posting.createPlaylist({ name: "from subsonic-api", songId: song.id });
  out.playlist = made.status === "ok" ? made.playlist.songCount : made.error;
  return out;
}

run()
  .then((out) => { if (out) document.getElementById("out").textContent = JSON.stringify(out); })
  .catch((e) => { document.getElementById("out").textContent = JSON.stringify({ error: String(e) }); });
