// A web Subsonic client of another origin, written by hand with fetch:
// token login (salt + md5), a reload, ping again, star a song, make a
// playlist, read a stream's Content-Range; and a read of the web UI's API,
// which must be refused. The outcome goes into #out as JSON.

// MD5 (RFC 1321) of a UTF-8 string, as hex: browsers have none built in.
function md5(str) {
  const s = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
  const k = [];
  for (let i = 0; i < 64; i++) k[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0;
  const bytes = new TextEncoder().encode(str);
  const n = ((bytes.length + 8) >>> 6) + 1;
  const w = new Uint32Array(n * 16);
  bytes.forEach((b, i) => { w[i >> 2] |= b << ((i % 4) * 8); });
  w[bytes.length >> 2] |= 0x80 << ((bytes.length % 4) * 8);
  w[n * 16 - 2] = bytes.length * 8;
  let [a0, b0, c0, d0] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
  for (let j = 0; j < w.length; j += 16) {
    let [A, B, C, D] = [a0, b0, c0, d0];
    for (let i = 0; i < 64; i++) {
      let F, g;
      if (i < 16) { F = (B & C) | (~B & D); g = i; }
      else if (i < 32) { F = (D & B) | (~D & C); g = (5 * i + 1) % 16; }
      else if (i < 48) { F = B ^ C ^ D; g = (3 * i + 5) % 16; }
      else { F = C ^ (B | ~D); g = (7 * i) % 16; }
      F = (F + A + k[i] + w[j + g]) >>> 0;
      const r = s[(i >> 4) * 4 + (i % 4)];
      [A, D, C] = [D, C, B];
      B = (B + ((F << r) | (F >>> (32 - r)))) >>> 0;
    }
    a0 = (a0 + A) >>> 0; b0 = (b0 + B) >>> 0; c0 = (c0 + C) >>> 0; d0 = (d0 + D) >>> 0;
  }
  return [a0, b0, c0, d0]
    .map((x) => [0, 8, 16, 24].map((sh) => ((x >>> sh) & 255).toString(16).padStart(2, "0")).join(""))
    .join("");
}

const args = new URLSearchParams(location.search);
const server = args.get("server");

function auth() {
  const salt = Math.random().toString(36).slice(2, 10);
  return { u: args.get("user"), s: salt, t: md5(args.get("password") + salt), v: "1.16.1", c: "cors-page", f: "json" };
}

async function call(method, params = {}) {
  const q = new URLSearchParams({ ...auth(), ...params });
  const r = await fetch(`${server}/rest/${method}.view?${q}`);
  return (await r.json())["subsonic-response"];
}

async function post(method, params) {
  // A form POST, as OpenSubsonic's formPost clients send.
  const r = await fetch(`${server}/rest/${method}.view`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...auth(), ...params }),
  });
  return (await r.json())["subsonic-response"];
}

async function run() {
  const out = { md5abc: md5("abc") };
  if (!sessionStorage.getItem("reloaded")) {
    out.first = (await call("ping")).status;
    sessionStorage.setItem("first", out.first);
    sessionStorage.setItem("reloaded", "1");
    location.reload();
    return;
  }
  out.first = sessionStorage.getItem("first");
  out.ping = (await call("ping")).status;
  const song = (await call("getRandomSongs", { size: "1" })).randomSongs.song[0];
  // A custom header forces a real preflight.
  const starred = await fetch(`${server}/rest/star?${new URLSearchParams({ ...auth(), id: song.id })}`, {
    headers: { "X-Client": "cors-page" },
  });
  out.star = (await starred.json())["subsonic-response"].status;
  out.starred = ((await call("getStarred2")).starred2.song || []).map((s) => s.id).includes(song.id);
  const made = await post("createPlaylist", { name: "from another origin", songId: song.id });
  out.playlist = made.status === "ok" ? made.playlist.songCount : made.error;
  const stream = await fetch(`${server}/rest/stream?${new URLSearchParams({ ...auth(), id: song.id })}`, {
    headers: { Range: "bytes=0-9" },
  });
  out.streamStatus = stream.status;
  out.contentRange = stream.headers.get("Content-Range");
  out.bytes = (await stream.arrayBuffer()).byteLength;
  try {
    await fetch(`${server}/ui/api/me`);
    out.webUi = "readable";
  } catch (e) {
    out.webUi = "refused";
  }
  return out;
}

run()
  .then((out) => { if (out) document.getElementById("out").textContent = JSON.stringify(out); })
  .catch((e) => { document.getElementById("out").textContent = JSON.stringify({ error: String(e) }); });
