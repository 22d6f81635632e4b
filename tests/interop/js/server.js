// A fresh `spindle serve --music DIR --data-dir TMP` on a free loopback
// port (the server binds port 0 and prints its URL), over FLAC files made
// with sox and tagged with metaflac, with two accounts made by the CLI as a
// user would: ann (the first, so the administrator) and bob (a listener).
//
// SPINDLE_BIN names the binary (default: target/release/spindle).

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const BIN = process.env.SPINDLE_BIN || join(ROOT, "target/release/spindle");
export const PASSWORD = "s3cret horse";
export const NS = "http://subsonic.org/restapi";

/** The corpus: artist, album, title, track, year, genre, Hz, extras. */
export const TRACKS = [
  ["Aurora Test", "Northern Lights", "Runaway Signal", 1, 2015, "Pop", 440, { cover: "embedded" }],
  ["Aurora Test", "Northern Lights", "Half the World", 2, 2015, "Pop", 550, { lyrics: "embedded" }],
  ["Aurora Test", "Southern Dark", "Murder Song", 1, 2016, "Pop", 660, { lyrics: "lrc" }],
  ["Björk Sample", "Homogenic Tones", "Jóga", 1, 1997, "Electronic", 330, {}],
  ["Björk Sample", "Homogenic Tones", "Bachelorette", 2, 1997, "Electronic", 370, {}],
  ["Björk Sample", "Homogenic Tones", "Hunter", 3, 1997, "Pop", 410, {}],
];

export const EMBEDDED_LYRICS = "[00:00.50]First embedded line\n[00:01.20]Second embedded line\n";
export const LRC_LYRICS = "[ar:Aurora Test]\n[ti:Murder Song]\n[00:00.00]Sidecar one\n[00:02.00]Sidecar two\n";

function run(cmd, args, input) {
  const r = spawnSync(cmd, args, { input, encoding: "utf8" });
  if (r.error) throw new Error(`${cmd} could not start: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

/** Makes the FLAC files under `music`; answers { title: path }. */
export function makeCorpus(music) {
  const files = {};
  for (const [artist, album, title, nr, year, genre, hz, extra] of TRACKS) {
    const dir = join(music, artist, album);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${String(nr).padStart(2, "0")} ${title}.flac`);
    run("sox", ["-n", "-r", "22050", "-c", "1", path, "synth", "3", "sine", String(hz)]);
    const tags = [
      `--set-tag=ARTIST=${artist}`, `--set-tag=ALBUM=${album}`, `--set-tag=TITLE=${title}`,
      `--set-tag=TRACKNUMBER=${nr}`, `--set-tag=DATE=${year}`, `--set-tag=GENRE=${genre}`,
    ];
    if (extra.lyrics === "embedded") tags.push(`--set-tag=LYRICS=${EMBEDDED_LYRICS}`);
    run("metaflac", ["--remove-all-tags", ...tags, path]);
    if (extra.lyrics === "lrc") writeFileSync(path.replace(/\.flac$/, ".lrc"), LRC_LYRICS);
    if (extra.cover === "embedded") {
      // A real PNG: the spectrogram sox draws of the file itself.
      const png = join(music, "embedded-cover.png");
      run("sox", [path, "-n", "spectrogram", "-x", "120", "-y", "129", "-o", png]);
      run("metaflac", [`--import-picture-from=3|image/png|||${png}`, path]);
      rmSync(png);
    }
    files[title] = path;
  }
  // Folder art for one album: cover.png beside its files.
  const homogenic = join(music, "Björk Sample", "Homogenic Tones");
  run("sox", [files["Jóga"], "-n", "spectrogram", "-x", "200", "-y", "129", "-o",
    join(homogenic, "cover.png")]);
  return files;
}

export function cli(dataDir, args, input) {
  return run(BIN, ["--data-dir", dataDir, ...args], input);
}

export class Server {
  /** Starts the server over a new corpus and makes the accounts. */
  static async start() {
    const s = new Server();
    s.dataDir = mkdtempSync(join(tmpdir(), "spindle-js-data-"));
    s.music = mkdtempSync(join(tmpdir(), "spindle-js-music-"));
    s.files = makeCorpus(s.music);
    s.proc = spawn(BIN, ["--data-dir", s.dataDir, "serve", "--listen", "127.0.0.1:0",
      "--music", s.music], { stdio: ["ignore", "pipe", "inherit"] });
    s.exited = new Promise((ok) => s.proc.on("exit", ok));
    const lines = createInterface({ input: s.proc.stdout });
    s.base = await new Promise((ok, fail) => {
      const timer = setTimeout(() => fail(new Error("the server printed no URL in 20 s")), 20_000);
      lines.on("line", (line) => {
        const m = /serving (http:\/\/[0-9.]+:\d+)\//.exec(line);
        if (m) { clearTimeout(timer); ok(m[1]); }
      });
      s.proc.on("exit", (code) => fail(new Error(`the server exited with ${code}`)));
    });
    // The first account made administers the server.
    cli(s.dataDir, ["user", "add", "ann"], `${PASSWORD}\n`);
    cli(s.dataDir, ["user", "add", "bob"], `${PASSWORD}\n`);
    s.apiKey = cli(s.dataDir, ["user", "token", "ann"]).trim();
    await s.waitForLibrary(TRACKS.length);
    return s;
  }

  /** Waits until search3 with an empty query finds `n` songs. */
  async waitForLibrary(n) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await this.json("search3", { query: "", songCount: 500 });
      const songs = r.searchResult3?.song ?? [];
      if (songs.length >= n) {
        this.songs = Object.fromEntries(songs.map((x) => [x.title, x]));
        return;
      }
      if (Date.now() > deadline) throw new Error(`the library has ${songs.length} of ${n} songs`);
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }

  async stop() {
    this.proc.kill("SIGTERM");
    await this.exited;
    rmSync(this.dataDir, { recursive: true, force: true });
    rmSync(this.music, { recursive: true, force: true });
  }

  file(title) {
    return readFileSync(this.files[title]);
  }

  /**
   * One request by plain fetch. `opts`: post (a form POST with every
   * parameter in the body), view (the `.view` suffix), user/password,
   * noAuth, headers. Parameters with array values repeat.
   */
  async request(method, params = {}, opts = {}) {
    const form = new URLSearchParams();
    if (!opts.noAuth) {
      form.set("u", opts.user ?? "ann");
      form.set("p", opts.password ?? PASSWORD);
    }
    form.set("v", "1.16.1");
    form.set("c", "spindle-js");
    for (const [k, v] of Object.entries(params)) {
      if (v === undefined || v === null) continue;
      for (const one of Array.isArray(v) ? v : [v]) form.append(k, String(one));
    }
    const url = `${this.base}/rest/${method}${opts.view ? ".view" : ""}`;
    if (opts.post) {
      return fetch(url, {
        method: "POST", body: form.toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...opts.headers },
      });
    }
    return fetch(`${url}?${form}`, { headers: opts.headers });
  }

  /** The `subsonic-response` of a JSON answer. */
  async json(method, params = {}, opts = {}) {
    const r = await this.request(method, { ...params, f: "json" }, opts);
    const text = await r.text();
    try {
      return JSON.parse(text)["subsonic-response"];
    } catch {
      throw new Error(`${method}: HTTP ${r.status}, not JSON: ${text.slice(0, 300)}`);
    }
  }

  /** The text of an XML answer. */
  async xml(method, params = {}, opts = {}) {
    const r = await this.request(method, params, opts);
    return r.text();
  }
}

/** The status, error code and message of an XML answer. */
export function xmlStatus(text) {
  const root = /<subsonic-response\b([^>]*)>/.exec(text);
  if (!root) return { status: undefined };
  const attrs = root[1];
  const status = /\bstatus="([^"]*)"/.exec(attrs)?.[1];
  const ns = /\bxmlns="([^"]*)"/.exec(attrs)?.[1];
  const err = /<error\b[^>]*>/.exec(text)?.[0] ?? "";
  const code = /\bcode="(\d+)"/.exec(err)?.[1];
  const message = /\bmessage="([^"]*)"/.exec(err)?.[1];
  return { status, ns, code: code === undefined ? undefined : Number(code), message };
}

/** An attribute of the first `<element …>` in an XML answer. */
export function xmlAttr(text, element, attr) {
  const el = new RegExp(`<${element}\\b[^>]*>`).exec(text);
  if (!el) return undefined;
  return new RegExp(`\\b${attr}="([^"]*)"`).exec(el[0])?.[1];
}

/** Throws with the server's answer unless a JSON response is "ok". */
export function ok(res, what = "") {
  if (res?.status !== "ok") {
    const e = res?.error;
    throw new Error(`${what} failed: ${e ? `error ${e.code}: ${e.message}` : JSON.stringify(res)}`);
  }
  return res;
}

/** The width and height of a PNG or JPEG. */
export function imageSize(buf) {
  if (buf.subarray(0, 8).equals(Buffer.from("89504e470d0a1a0a", "hex"))) {
    return { type: "png", width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  }
  if (buf[0] === 0xff && buf[1] === 0xd8) {
    let i = 2;
    while (i + 9 < buf.length) {
      if (buf[i] !== 0xff) { i += 1; continue; }
      const marker = buf[i + 1];
      const len = buf.readUInt16BE(i + 2);
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { type: "jpeg", height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
      }
      i += 2 + len;
    }
  }
  return { type: "unknown" };
}
