//! A deterministic synthetic music library that looks like a real one.
//!
//! What it holds (so that the seven benchmark queries have something real to
//! find):
//!
//! * Albums of 1–40 tracks (mostly 8–14, a tail of long ones, so
//!   `tracknr>20` and `tracknr>30` select a few percent), each by an artist
//!   drawn from a Zipf–Mandelbrot distribution (a few artists with many
//!   albums, a long tail with one).
//! * About 50 properties per track with XMMS2's keys and sources: `server`
//!   (url, added, status, timesplayed, laststarted), `plugin/file` (size,
//!   lmod), `plugin/magic` (mime), a decoder (`plugin/mad`, `plugin/flac`,
//!   `plugin/vorbis`: duration, bitrate, samplerate, channels, …) and a tag
//!   reader (`plugin/id3v2` for MP3s: artist, album, title, tracknr, date,
//!   genre, MusicBrainz ids, replay gain, …; most albums are
//!   Picard-tagged, the rest carry only the basics); a comment on about
//!   one track in three.
//! * A second source: ratings from `client/rater` on one track in ten, and
//!   title corrections from `client/tagfix` (which win over the tag under
//!   XMMS2's default source preference).
//! * tracknr stored as a string (`"07"`, `"7/12"`) on about 1 track in 200.
//! * Metallica (a few hundred tracks on its real albums, "One" among
//!   them), Weezer, artists whose names contain "foo", and titles with and
//!   without the word "one" ("The One", "One (Live)", "Someone").
//!
//! Entry ids are 1..=N in generation order. The same (entries, seed) gives
//! the same library on every machine.

use spindle_query::Value;

use crate::rng::Rng;
use crate::words::*;

/// One property of a generated track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prop {
    pub key: &'static str,
    pub source: &'static str,
    pub value: Value,
}

/// A generated track: its entry id and properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Track {
    pub id: u32,
    pub props: Vec<Prop>,
}

pub const SERVER: &str = "server";
pub const FILE: &str = "plugin/file";
pub const MAGIC: &str = "plugin/magic";
pub const RATER: &str = "client/rater";
pub const TAGFIX: &str = "client/tagfix";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Mp3,
    Flac,
    Ogg,
}

impl Format {
    fn decoder(self) -> &'static str {
        match self {
            Format::Mp3 => "plugin/mad",
            Format::Flac => "plugin/flac",
            Format::Ogg => "plugin/vorbis",
        }
    }

    fn tagger(self) -> &'static str {
        match self {
            Format::Mp3 => "plugin/id3v2",
            Format::Flac => "plugin/flac",
            Format::Ogg => "plugin/vorbis",
        }
    }

    fn ext(self) -> &'static str {
        match self {
            Format::Mp3 => "mp3",
            Format::Flac => "flac",
            Format::Ogg => "ogg",
        }
    }

    fn mime(self) -> &'static str {
        match self {
            Format::Mp3 => "audio/mpeg",
            Format::Flac => "audio/x-flac",
            Format::Ogg => "application/ogg",
        }
    }
}

#[derive(Debug, Clone)]
struct Artist {
    name: String,
    sort: String,
    mbid: String,
    genre: &'static str,
}

/// Who an album is by, and how long it is: all the planning needs.
#[derive(Debug, Clone)]
struct AlbumPlan {
    artist: usize,
    tracks: u32,
    /// A fixed title and year (Metallica's and Weezer's real albums).
    fixed: Option<(String, u32)>,
}

/// The library generator: plans albums up front (small), then makes
/// tracks one at a time.
#[derive(Debug, Clone)]
pub struct Generator {
    entries: u32,
    rng: Rng,
    artists: Vec<Artist>,
    albums: Vec<AlbumPlan>,
}

/// The artist the indexed-equality query looks for.
pub const METALLICA: &str = "Metallica";
pub const WEEZER: &str = "Weezer";

impl Generator {
    pub fn new(entries: u32, seed: u64) -> Generator {
        let rng = Rng::new(seed);
        let mut plan_rng = rng.fork(1);
        let n_artists = (entries / 12).max(40) as usize;
        let mut artists: Vec<Artist> = (0..n_artists)
            .map(|i| make_artist(&mut rng.fork(1_000_000 + i as u64)))
            .collect();
        // Artists with "foo" at spread-out popularity ranks.
        let mut rank = 4usize;
        for name in FOO_ARTISTS {
            if rank >= n_artists {
                break;
            }
            artists[rank].name = (*name).to_owned();
            artists[rank].sort = sort_name(name);
            rank = rank * 2 + 7;
        }
        // A rare artist with "One" in its name.
        let one_rank = n_artists * 2 / 3;
        artists[one_rank].name = "Twenty One Engines".to_owned();
        artists[one_rank].sort = "Twenty One Engines".to_owned();
        let metallica = artists.len();
        artists.push(Artist {
            name: METALLICA.to_owned(),
            sort: METALLICA.to_owned(),
            mbid: "65f4f0c5-ef9e-490c-aee3-909e7ae6b2ab".to_owned(),
            genre: "Thrash Metal",
        });
        let weezer = artists.len();
        artists.push(Artist {
            name: WEEZER.to_owned(),
            sort: WEEZER.to_owned(),
            mbid: "6fe07aa5-fec0-4eca-a456-f29bff451b04".to_owned(),
            genre: "Alternative",
        });

        // Zipf–Mandelbrot weights over the generated artists.
        let weights: Vec<f64> = (0..n_artists)
            .map(|r| 1.0 / ((r as f64) + 10.0).powf(1.1))
            .collect();
        let total: f64 = weights.iter().sum();
        let mut cdf = Vec::with_capacity(n_artists);
        let mut acc = 0.0;
        for w in &weights {
            acc += w / total;
            cdf.push(acc);
        }

        let mut specials = Vec::new();
        let metallica_tracks = (entries / 50).clamp(20, 400);
        specials.extend(fixed_albums(
            metallica,
            METALLICA_ALBUMS,
            metallica_tracks,
            &mut plan_rng,
        ));
        let weezer_tracks = (entries / 200).clamp(10, 150);
        specials.extend(fixed_albums(
            weezer,
            WEEZER_ALBUMS,
            weezer_tracks,
            &mut plan_rng,
        ));
        let special_total: u32 = specials.iter().map(|a| a.tracks).sum();

        let mut albums = Vec::new();
        let mut planned = 0u32;
        let budget = entries.saturating_sub(special_total);
        while planned < budget {
            let u = plan_rng.unit();
            let artist = cdf.partition_point(|&c| c < u).min(n_artists - 1);
            let tracks = album_length(&mut plan_rng).min(budget - planned);
            planned += tracks;
            albums.push(AlbumPlan {
                artist,
                tracks,
                fixed: None,
            });
        }
        // Spread the special albums through the library.
        let stride = (albums.len() / (specials.len() + 1)).max(1);
        for (i, s) in specials.into_iter().enumerate() {
            let at = ((i + 1) * stride).min(albums.len());
            albums.insert(at, s);
        }
        // Trim so that the total is exactly `entries`.
        let mut total_tracks: u32 = albums.iter().map(|a| a.tracks).sum();
        while total_tracks > entries {
            let last = albums.len() - 1;
            let cut = (total_tracks - entries).min(albums[last].tracks);
            albums[last].tracks -= cut;
            total_tracks -= cut;
            if albums[last].tracks == 0 {
                albums.pop();
            }
        }
        Generator {
            entries,
            rng,
            artists,
            albums,
        }
    }

    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// Every track, ids 1..=N.
    pub fn tracks(&self) -> impl Iterator<Item = Track> + '_ {
        let mut next_id = 1u32;
        self.albums.iter().enumerate().flat_map(move |(i, plan)| {
            let first = next_id;
            next_id += plan.tracks;
            let album = self.album(i, plan);
            (0..plan.tracks).map(move |n| self.track(&album, first + n, n + 1))
        })
    }

    fn album(&self, index: usize, plan: &AlbumPlan) -> Album {
        let mut r = self.rng.fork(2_000_000 + index as u64);
        let artist = self.artists[plan.artist].clone();
        let (title, year) = match &plan.fixed {
            Some((t, y)) => (t.clone(), *y),
            None => (album_title(&mut r), r.range(1955, 2024) as u32),
        };
        let format = match r.range(0, 9) {
            0..=5 => Format::Mp3,
            6..=8 => Format::Flac,
            _ => Format::Ogg,
        };
        let various = plan.fixed.is_none() && r.chance(0.04);
        let album_artist = if various {
            Some("Various Artists".to_owned())
        } else if r.chance(0.4) {
            Some(artist.name.clone())
        } else {
            None
        };
        Album {
            index,
            artist,
            title,
            year,
            month: r.range(1, 12) as u32,
            day: r.range(1, 28) as u32,
            format,
            picard: r.chance(0.85),
            tracks: plan.tracks,
            album_artist,
            composer: r.chance(0.5).then(|| person(&mut r)),
            producer: r.chance(0.2).then(|| person(&mut r)),
            label: r.pick(LABELS),
            country: r.pick(COUNTRIES),
            release_type: r.pick(RELEASE_TYPES),
            release_format: r.pick(RELEASE_FORMATS),
            mbid: r.uuid(),
            group_mbid: r.uuid(),
            barcode: format!("{:013}", r.range(0, 9_999_999_999_999)),
            asin: format!("B{}", r.hex(9).to_uppercase()),
            catno: format!("{}-{}", &r.hex(3).to_uppercase(), r.range(100, 99_999)),
            picture: r.hex(40),
            gain: format!("{:.2}", -(r.unit() * 12.0)),
            peak: format!("{:.6}", 0.7 + r.unit() * 0.3),
            added: 1_200_000_000 + r.range(0, 500_000_000) as i64,
            disc: if r.chance(0.1) {
                r.range(1, 3) as u32
            } else {
                1
            },
            bitrate: match format {
                Format::Mp3 => r.pick(&[128_000, 192_000, 256_000, 320_000]),
                Format::Flac => r.range(600_000, 1_100_000) as i64,
                Format::Ogg => 160_000,
            },
            samplerate: r.pick(&[44_100, 44_100, 44_100, 44_100, 48_000, 96_000]),
            genre: if r.chance(0.8) {
                artist_genre(&self.artists[plan.artist])
            } else {
                r.pick(GENRES)
            },
        }
    }

    fn track(&self, a: &Album, id: u32, n: u32) -> Track {
        let mut r = self.rng.fork(10_000_000_000 + u64::from(id));
        let tag = a.format.tagger();
        let mut props = Vec::with_capacity(56);
        let mut add = |key: &'static str, source: &'static str, value: Value| {
            props.push(Prop { key, source, value });
        };

        // The title, with the word "one" now and then, and corrections.
        let mut title = track_title(&mut r);
        let mut correction = None;
        if a.artist.name == METALLICA && n == 4 && a.title.starts_with("...And Justice") {
            title = "One".to_owned();
        } else if r.chance(1.0 / 1500.0) {
            title = (r.pick(ONE_TITLES)).to_owned();
            if r.chance(0.3) {
                correction = Some(if r.chance(0.5) {
                    "Won".to_owned()
                } else {
                    format!("{title} (Remastered)")
                });
            }
        } else if r.chance(1.0 / 3000.0) {
            correction = Some("One".to_owned());
        } else if r.chance(0.02) {
            correction = Some(title.clone());
            title = title.to_lowercase();
        }

        let ms = (r.range(90, 420) * 1000 + r.range(0, 999)) as i64;
        add("url", SERVER, Value::Str(url(a, n, &title)));
        add("added", SERVER, Value::Int(a.added + i64::from(n)));
        add("status", SERVER, Value::Int(1));
        let played = if r.chance(0.4) {
            0
        } else {
            r.range(1, 60) as i64
        };
        add("timesplayed", SERVER, Value::Int(played));
        if played > 0 {
            add(
                "laststarted",
                SERVER,
                Value::Int(a.added + r.range(0, 200_000_000) as i64),
            );
        }
        add("size", FILE, Value::Int(ms * a.bitrate / 8000));
        add(
            "lmod",
            FILE,
            Value::Int(a.added - r.range(0, 5_000_000) as i64),
        );
        add("mime", MAGIC, Value::Str(a.format.mime().to_owned()));

        let dec = a.format.decoder();
        add("duration", dec, Value::Int(ms));
        add("bitrate", dec, Value::Int(a.bitrate));
        add("samplerate", dec, Value::Int(a.samplerate));
        add(
            "channels",
            dec,
            Value::Int(if r.chance(0.02) { 1 } else { 2 }),
        );
        add("sample_format", dec, Value::Str("S16".to_owned()));
        if a.format == Format::Mp3 {
            add("isvbr", dec, Value::Int(i64::from(r.chance(0.3))));
            add("encoder", tag, Value::Str("LAME3.100".to_owned()));
        }

        let artist = if a.album_artist.as_deref() == Some("Various Artists") {
            person(&mut r)
        } else {
            a.artist.name.clone()
        };
        add("artist", tag, Value::Str(artist));
        add("album", tag, Value::Str(a.title.clone()));
        add("title", tag, Value::Str(title));
        add("tracknr", tag, tracknr(&mut r, n, a.tracks));
        add("date", tag, Value::Str(a.date(a.picard)));
        add("genre", tag, Value::Str(a.genre.to_owned()));
        if r.chance(1.0 / 3.0) {
            let c = r.pick(COMMENTS);
            let c = c
                .replace("{n}", &r.range(1, 99_999_999).to_string())
                .replace("{y}", &r.range(1995, 2024).to_string());
            add("comment", tag, Value::Str(c));
        }
        if let Some(aa) = &a.album_artist {
            add("album_artist", tag, Value::Str(aa.clone()));
        }
        if let Some(c) = &a.composer {
            add("composer", tag, Value::Str(c.clone()));
        }
        if a.picard {
            add("artist_sort", tag, Value::Str(a.artist.sort.clone()));
            add("album_sort", tag, Value::Str(a.title.clone()));
            add("originaldate", tag, Value::Str(a.date(true)));
            add("totaltracks", tag, Value::Int(i64::from(a.tracks)));
            add("partofset", tag, Value::Int(i64::from(a.disc)));
            add("totalset", tag, Value::Int(i64::from(a.disc.max(1))));
            add("publisher", tag, Value::Str(a.label.to_owned()));
            add(
                "copyright",
                tag,
                Value::Str(format!("℗ {} {}", a.year, a.label)),
            );
            add("artist_id", tag, Value::Str(a.artist.mbid.clone()));
            add("album_id", tag, Value::Str(a.mbid.clone()));
            add("track_id", tag, Value::Str(r.uuid()));
            add("release_status", tag, Value::Str("official".to_owned()));
            add("release_type", tag, Value::Str(a.release_type.to_owned()));
            add("release_country", tag, Value::Str(a.country.to_owned()));
            add(
                "release_format",
                tag,
                Value::Str(a.release_format.to_owned()),
            );
            add("asin", tag, Value::Str(a.asin.clone()));
            add("barcode", tag, Value::Str(a.barcode.clone()));
            add("catalognumber", tag, Value::Str(a.catno.clone()));
            add(
                "isrc",
                tag,
                Value::Str(format!(
                    "{}{}{:02}{:05}",
                    a.country,
                    r.hex(3).to_uppercase(),
                    a.year % 100,
                    r.range(0, 99_999)
                )),
            );
            add(
                "gain_track",
                tag,
                Value::Str(format!("{:.2}", -(r.unit() * 12.0))),
            );
            add("gain_album", tag, Value::Str(a.gain.clone()));
            add(
                "peak_track",
                tag,
                Value::Str(format!("{:.6}", 0.6 + r.unit() * 0.4)),
            );
            add("peak_album", tag, Value::Str(a.peak.clone()));
            add("picture_front", tag, Value::Str(a.picture.clone()));
            add(
                "picture_front_mime",
                tag,
                Value::Str("image/jpeg".to_owned()),
            );
            add("releasegroup_id", tag, Value::Str(a.group_mbid.clone()));
            add("album_artist_id", tag, Value::Str(a.artist.mbid.clone()));
            add("acoustid_id", tag, Value::Str(r.uuid()));
            add("script", tag, Value::Str("Latn".to_owned()));
            add("language", tag, Value::Str("eng".to_owned()));
            add("originalyear", tag, Value::Int(i64::from(a.year)));
            add(
                "website_publisher",
                tag,
                Value::Str(format!(
                    "https://{}.example/",
                    a.label.to_lowercase().replace([' ', '.'], "")
                )),
            );
            if r.chance(0.4) {
                add("arranger", tag, Value::Str(person(&mut r)));
            }
            if r.chance(0.4) {
                add("mixer", tag, Value::Str(person(&mut r)));
            }
            if r.chance(0.3) {
                add("title_sort", tag, Value::Str(track_title(&mut r)));
            }
            if let Some(p) = &a.producer {
                add("producer", tag, Value::Str(p.clone()));
            }
            if r.chance(0.2) {
                add("lyricist", tag, Value::Str(person(&mut r)));
            }
            if r.chance(0.2) {
                add("performer", tag, Value::Str(person(&mut r)));
            }
            if r.chance(0.3) {
                add("bpm", tag, Value::Int(r.range(60, 200) as i64));
            }
            if r.chance(0.15) {
                add(
                    "website_artist",
                    tag,
                    Value::Str(format!(
                        "https://www.{}.example/",
                        a.artist.sort.to_lowercase().replace([' ', ','], "")
                    )),
                );
            }
            if r.chance(0.05) {
                add("grouping", tag, Value::Str(a.genre.to_owned()));
            }
            if a.album_artist.as_deref() == Some("Various Artists") {
                add("compilation", tag, Value::Int(1));
            }
        }
        if r.chance(0.1) {
            add("rating", RATER, Value::Int(r.range(1, 5) as i64));
        }
        if let Some(c) = correction {
            add("title", TAGFIX, Value::Str(c));
        }
        Track { id, props }
    }
}

/// What every track of an album shares.
#[derive(Debug, Clone)]
struct Album {
    index: usize,
    artist: Artist,
    title: String,
    year: u32,
    month: u32,
    day: u32,
    format: Format,
    picard: bool,
    tracks: u32,
    album_artist: Option<String>,
    composer: Option<String>,
    producer: Option<String>,
    label: &'static str,
    country: &'static str,
    release_type: &'static str,
    release_format: &'static str,
    mbid: String,
    group_mbid: String,
    barcode: String,
    asin: String,
    catno: String,
    picture: String,
    gain: String,
    peak: String,
    added: i64,
    disc: u32,
    bitrate: i64,
    samplerate: i64,
    genre: &'static str,
}

impl Album {
    fn date(&self, full: bool) -> String {
        if full {
            format!("{}-{:02}-{:02}", self.year, self.month, self.day)
        } else {
            self.year.to_string()
        }
    }
}

fn artist_genre(a: &Artist) -> &'static str {
    a.genre
}

fn make_artist(r: &mut Rng) -> Artist {
    let name = match r.range(0, 9) {
        0..=3 => person(r),
        4..=6 => {
            let adj = r.pick(BAND_ADJECTIVES);
            let noun = r.pick(BAND_NOUNS);
            if r.chance(0.5) {
                format!("The {adj} {noun}")
            } else {
                format!("{adj} {noun}")
            }
        }
        _ => {
            let n = r.range(2, 3);
            let mut w: String = (0..n).map(|_| r.pick(SYLLABLES)).collect();
            w[..1].make_ascii_uppercase();
            w
        }
    };
    Artist {
        sort: sort_name(&name),
        name,
        mbid: r.uuid(),
        genre: r.pick(GENRES),
    }
}

/// "The Foo" → "Foo, The"; "John Smith" → "Smith, John".
fn sort_name(name: &str) -> String {
    if let Some(rest) = name.strip_prefix("The ") {
        return format!("{rest}, The");
    }
    let words: Vec<&str> = name.split(' ').collect();
    if words.len() == 2 && FIRST_NAMES.contains(&words[0]) {
        return format!("{}, {}", words[1], words[0]);
    }
    name.to_owned()
}

fn person(r: &mut Rng) -> String {
    format!("{} {}", r.pick(FIRST_NAMES), r.pick(LAST_NAMES))
}

fn album_title(r: &mut Rng) -> String {
    if r.chance(1.0 / 2000.0) {
        return "Volume One".to_owned();
    }
    let pat = r.pick(ALBUM_PATTERNS);
    let mut out = String::new();
    let mut rest = pat;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let word = match &rest[i..i + 3] {
            "{a}" => r.pick(BAND_ADJECTIVES),
            "{p}" => r.pick(PLACES),
            _ => r.pick(TITLE_WORDS),
        };
        out.push_str(word);
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    out
}

fn track_title(r: &mut Rng) -> String {
    let n = r.range(1, 4);
    let mut words: Vec<&str> = Vec::with_capacity(n as usize * 2);
    for i in 0..n {
        if i > 0 && r.chance(0.3) {
            words.push(r.pick(TITLE_JOINERS));
        }
        words.push(r.pick(TITLE_WORDS));
    }
    let mut t = words.join(" ");
    if r.chance(0.03) {
        t.push_str(" (Live)");
    }
    t
}

/// Mostly 8–14 tracks, some singles and EPs, a tail of long albums.
fn album_length(r: &mut Rng) -> u32 {
    let u = r.unit();
    (if u < 0.10 {
        r.range(1, 5)
    } else if u < 0.85 {
        r.range(8, 14)
    } else if u < 0.985 {
        r.range(15, 22)
    } else {
        r.range(25, 40)
    }) as u32
}

/// Fixed albums of one artist, cycled (as remasters) until `total` tracks.
fn fixed_albums(artist: usize, list: &[(&str, u32)], total: u32, r: &mut Rng) -> Vec<AlbumPlan> {
    let mut out = Vec::new();
    let mut left = total;
    let mut round = 0;
    while left > 0 {
        for (title, year) in list {
            if left == 0 {
                break;
            }
            let long = title.starts_with("S&M") || title.starts_with("Live Shit");
            let n = if long {
                r.range(20, 32)
            } else {
                r.range(8, 13)
            } as u32;
            let n = n.min(left);
            left -= n;
            let title = if round == 0 {
                (*title).to_owned()
            } else {
                format!("{title} (Remastered {})", 2015 + round)
            };
            out.push(AlbumPlan {
                artist,
                tracks: n,
                fixed: Some((title, year + round * 30)),
            });
        }
        round += 1;
    }
    out
}

/// A track number: an integer, or on 1 track in 200 a string as some
/// taggers write it.
fn tracknr(r: &mut Rng, n: u32, total: u32) -> Value {
    if r.chance(0.005) {
        Value::Str(match r.range(0, 2) {
            0 => format!("{n:02}"),
            1 => n.to_string(),
            _ => format!("{n}/{total}"),
        })
    } else {
        Value::Int(i64::from(n))
    }
}

fn url(a: &Album, n: u32, title: &str) -> String {
    let path = format!(
        "/home/user/Music/{}/{} ({})/{:02} - {}.{}",
        a.artist.name,
        a.title,
        a.year,
        n,
        title,
        a.format.ext()
    );
    let mut out = String::with_capacity(path.len() + 16);
    out.push_str("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    // Distinct even when two tracks share artist, album and title.
    out.push_str(&format!("?album={}", a.index));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn str_of<'a>(t: &'a Track, key: &str) -> Vec<&'a Value> {
        t.props
            .iter()
            .filter(|p| p.key == key)
            .map(|p| &p.value)
            .collect()
    }

    #[test]
    fn same_seed_same_library_and_exact_size() {
        let a: Vec<Track> = Generator::new(3000, 42).tracks().collect();
        let b: Vec<Track> = Generator::new(3000, 42).tracks().collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 3000);
        assert!(a.iter().enumerate().all(|(i, t)| t.id == i as u32 + 1));
        let c: Vec<Track> = Generator::new(3000, 43).tracks().take(50).collect();
        assert_ne!(a[..50], c[..]);
    }

    #[test]
    fn looks_like_the_library_the_queries_expect() {
        let tracks: Vec<Track> = Generator::new(10_000, 1).tracks().collect();
        let props: usize = tracks.iter().map(|t| t.props.len()).sum();
        let per = props as f64 / tracks.len() as f64;
        assert!((44.0..56.0).contains(&per), "{per} properties per entry");

        let artist_is = |t: &Track, name: &str| {
            str_of(t, "artist")
                .iter()
                .any(|v| matches!(v, Value::Str(s) if s == name))
        };
        let metallica = tracks.iter().filter(|t| artist_is(t, METALLICA)).count();
        assert!((150..=400).contains(&metallica), "{metallica}");
        assert!(tracks.iter().any(|t| artist_is(t, WEEZER)));
        let foo = tracks
            .iter()
            .filter(|t| {
                str_of(t, "artist")
                    .iter()
                    .any(|v| matches!(v, Value::Str(s) if s.to_lowercase().contains("foo")))
            })
            .count();
        assert!(foo > 20, "{foo}");
        let comments = tracks
            .iter()
            .filter(|t| !str_of(t, "comment").is_empty())
            .count();
        assert!((2800..3900).contains(&comments), "{comments}");
        let string_nr = tracks
            .iter()
            .filter(|t| matches!(str_of(t, "tracknr")[0], Value::Str(_)))
            .count();
        assert!((10..150).contains(&string_nr), "{string_nr}");
        let long = tracks
            .iter()
            .filter(|t| matches!(str_of(t, "tracknr")[0], Value::Int(n) if *n > 20))
            .count();
        assert!((50..600).contains(&long), "{long}");
        let corrected = tracks
            .iter()
            .filter(|t| t.props.iter().any(|p| p.source == TAGFIX))
            .count();
        assert!(corrected > 50, "{corrected}");
        // One value per (key, source), as XMMS2's unique index demands.
        for t in &tracks {
            let mut seen = std::collections::HashSet::new();
            for p in &t.props {
                assert!(seen.insert((p.key, p.source)), "{t:?}");
            }
        }
    }

    #[test]
    fn names_sort_and_urls_escape() {
        assert_eq!(sort_name("The Silver Harbor"), "Silver Harbor, The");
        assert_eq!(sort_name("John Smith"), "Smith, John");
        assert_eq!(sort_name("Metallica"), "Metallica");
        let g = Generator::new(100, 3);
        let t = g.tracks().next().unwrap();
        let Value::Str(u) = &str_of(&t, "url")[0] else {
            panic!()
        };
        assert!(
            u.starts_with("file:///home/user/Music/") && !u.contains(' '),
            "{u}"
        );
    }
}
