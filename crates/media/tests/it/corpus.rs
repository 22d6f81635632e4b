//! The test corpus: real audio of every format the scanner supports,
//! encoded by Debian's tools (sox, lame, flac, oggenc, opusenc, ffmpeg;
//! `scripts/ci.d/30-media.sh` installs them) and tagged by lofty, plus the
//! awkward cases: multi-artist tags, non-ASCII and mixed-case names,
//! missing tags, a truncated file, bogus extensions, a zero-byte file.

use std::path::{Path, PathBuf};
use std::process::Command;

use lofty::config::WriteOptions;
use lofty::prelude::{ItemKey, TagExt};
use lofty::tag::{ItemValue, Tag, TagItem, TagType};

/// The tools the corpus needs; tests that need the corpus skip with a
/// message when one is missing, and run in CI's media stage.
pub const TOOLS: &[&str] = &["sox", "lame", "flac", "oggenc", "opusenc", "ffmpeg"];

pub fn missing_tools() -> Vec<&'static str> {
    TOOLS
        .iter()
        .copied()
        .filter(|t| {
            Command::new(t)
                .arg("--version")
                .output()
                .map(|_| false)
                .unwrap_or(true)
        })
        .collect()
}

/// One file of the corpus and what a scan must find in it.
#[derive(Debug, Clone)]
pub struct Expect {
    pub rel: &'static str,
    pub source: &'static str,
    pub mime: &'static str,
    pub title: Option<&'static str>,
    pub artists: &'static [&'static str],
    pub genres: &'static [&'static str],
    pub album: Option<&'static str>,
    pub tracknr: Option<i64>,
}

/// The files that must scan, in the order they are made.
pub fn expected() -> Vec<Expect> {
    vec![
        Expect {
            rel: "MP3/ID3v2.4 Ünïcødé – Ärtist.mp3",
            source: "plugin/id3v2",
            mime: "audio/mpeg",
            title: Some("Ünïcødé Tïtle"),
            artists: &["Björk", "Thom Yorke"],
            genres: &["Electronic", "Art Pop"],
            album: Some("Vespertine"),
            tracknr: Some(3),
        },
        Expect {
            rel: "MP3/id3v23.mp3",
            source: "plugin/id3v2",
            mime: "audio/mpeg",
            title: Some("Version Three"),
            artists: &["Old Tagger"],
            genres: &["Rock"],
            album: Some("Compat"),
            tracknr: Some(7),
        },
        Expect {
            rel: "MP3/id3v1-only.MP3",
            source: "plugin/id3v1",
            mime: "audio/mpeg",
            title: Some("Ancient"),
            artists: &["Winamp Era"],
            genres: &[],
            album: Some("Old"),
            tracknr: Some(2),
        },
        Expect {
            rel: "FLAC/Mixed Case/Multi Artist.flac",
            source: "plugin/vorbis",
            mime: "audio/flac",
            title: Some("Duet"),
            artists: &["Alice", "Bob", "Çarol"],
            genres: &["Jazz", "Soul"],
            album: Some("Pairs"),
            tracknr: Some(1),
        },
        Expect {
            rel: "Ogg/vorbis.ogg",
            source: "plugin/vorbis",
            mime: "audio/ogg",
            title: Some("Vorbis Song"),
            artists: &["Xiph"],
            genres: &["Ambient"],
            album: Some("Codecs"),
            tracknr: Some(4),
        },
        Expect {
            rel: "Ogg/opus.opus",
            source: "plugin/vorbis",
            mime: "audio/opus",
            title: Some("Opus Song"),
            artists: &["Xiph", "IETF"],
            genres: &["Speech"],
            album: Some("Codecs"),
            tracknr: Some(5),
        },
        Expect {
            rel: "M4A/aac.m4a",
            source: "plugin/mp4",
            mime: "audio/mp4",
            title: Some("Apple Song"),
            artists: &["Cupertino"],
            genres: &["Pop"],
            album: Some("iTunes"),
            tracknr: Some(9),
        },
        Expect {
            rel: "WAV/riff.wav",
            source: "plugin/riff",
            mime: "audio/wav",
            title: Some("Wave Song"),
            artists: &["Microsoft"],
            genres: &["Classical"],
            album: Some("Riff"),
            tracknr: Some(11),
        },
        Expect {
            rel: "AIFF/text.aiff",
            source: "plugin/aiff",
            mime: "audio/aiff",
            title: Some("Aiff Song"),
            artists: &["Apple II"],
            genres: &[],
            album: None,
            tracknr: None,
        },
        Expect {
            rel: "untagged/NoTags.FLAC",
            source: "",
            mime: "audio/flac",
            title: None,
            artists: &[],
            genres: &[],
            album: None,
            tracknr: None,
        },
        Expect {
            rel: "odd/flac-named.mp3",
            source: "plugin/vorbis",
            mime: "audio/flac",
            title: Some("Wrong Extension"),
            artists: &["Liar"],
            genres: &[],
            album: None,
            tracknr: None,
        },
    ]
}

/// Files that must be reported unreadable.
pub const BROKEN: &[&str] = &["odd/zero.mp3", "odd/truncated.flac", "odd/text.ogg"];

/// Files the scan must ignore (no audio extension).
pub const IGNORED: &[&str] = &["FLAC/Mixed Case/cover.jpg", "odd/readme.txt"];

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sox_wav(path: &Path, freq: u32) {
    run(Command::new("sox")
        .args(["-q", "-n", "-r", "44100", "-c", "2", "-b", "16"])
        .arg(path)
        .args(["synth", "1", "sine", &freq.to_string(), "vol", "0.3"]));
}

fn text(key: ItemKey, v: &str) -> TagItem {
    TagItem::new(key, ItemValue::Text(v.to_owned()))
}

fn write_tag(path: &Path, ty: TagType, e: &Expect, extra: &[(ItemKey, &str)], v23: bool) {
    let mut tag = Tag::new(ty);
    if let Some(t) = e.title {
        tag.push(text(ItemKey::TrackTitle, t));
    }
    for a in e.artists {
        tag.push(text(ItemKey::TrackArtist, a));
    }
    for g in e.genres {
        tag.push(text(ItemKey::Genre, g));
    }
    if let Some(a) = e.album {
        tag.push(text(ItemKey::AlbumTitle, a));
    }
    if let Some(n) = e.tracknr {
        tag.push(text(ItemKey::TrackNumber, &n.to_string()));
    }
    for (k, v) in extra {
        tag.push(text(*k, v));
    }
    let mut opts = WriteOptions::default();
    if v23 {
        opts = opts.use_id3v23(true);
    }
    tag.save_to_path(path, opts)
        .unwrap_or_else(|err| panic!("tagging {}: {err}", path.display()));
}

/// Writes the corpus under `dir` and returns what must be found.
pub fn generate(dir: &Path) -> Vec<Expect> {
    let exp = expected();
    let wav = dir.join("src.wav");
    std::fs::create_dir_all(dir).unwrap();
    sox_wav(&wav, 440);
    for e in &exp {
        let path = dir.join(e.rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    }
    let p = |i: usize| dir.join(exp[i].rel);
    let tmp = |name: &str| dir.join(name);
    // MP3s
    for i in 0..3 {
        run(Command::new("lame")
            .args(["--silent", "-b", "64"])
            .arg(&wav)
            .arg(p(i)));
    }
    write_tag(
        &p(0),
        TagType::Id3v2,
        &exp[0],
        &[
            (ItemKey::AlbumArtist, "Björk"),
            (ItemKey::TrackTotal, "10"),
            (ItemKey::DiscNumber, "1"),
            (ItemKey::RecordingDate, "2001-08-27"),
            (ItemKey::Composer, "Björk"),
            (ItemKey::Comment, "multi-artist ID3v2.4"),
            (
                ItemKey::MusicBrainzRecordingId,
                "0f5b5a2e-0000-4000-8000-000000000001",
            ),
            (
                ItemKey::MusicBrainzReleaseId,
                "0f5b5a2e-0000-4000-8000-000000000002",
            ),
        ],
        false,
    );
    write_tag(
        &p(1),
        TagType::Id3v2,
        &exp[1],
        &[(ItemKey::RecordingDate, "1999")],
        true,
    );
    write_tag(
        &p(2),
        TagType::Id3v1,
        &exp[2],
        &[(ItemKey::Year, "1998")],
        false,
    );
    // FLAC
    run(Command::new("flac")
        .args(["--silent", "-f", "-o"])
        .arg(p(3))
        .arg(&wav));
    write_tag(
        &p(3),
        TagType::VorbisComments,
        &exp[3],
        &[
            (ItemKey::RecordingDate, "2010-01-02"),
            (ItemKey::OriginalReleaseDate, "1960"),
        ],
        false,
    );
    // Ogg Vorbis, Opus
    run(Command::new("oggenc")
        .args(["-Q", "-q", "0", "-o"])
        .arg(p(4))
        .arg(&wav));
    write_tag(&p(4), TagType::VorbisComments, &exp[4], &[], false);
    run(Command::new("opusenc")
        .args(["--quiet", "--bitrate", "32"])
        .arg(&wav)
        .arg(p(5)));
    write_tag(&p(5), TagType::VorbisComments, &exp[5], &[], false);
    // M4A (AAC)
    run(Command::new("ffmpeg")
        .args(["-loglevel", "error", "-y", "-i"])
        .arg(&wav)
        .args(["-c:a", "aac", "-b:a", "64k"])
        .arg(p(6)));
    write_tag(&p(6), TagType::Mp4Ilst, &exp[6], &[], false);
    // WAV, AIFF
    std::fs::copy(&wav, p(7)).unwrap();
    write_tag(&p(7), TagType::RiffInfo, &exp[7], &[], false);
    run(Command::new("sox")
        .args(["-q", "-n", "-r", "22050", "-c", "1", "-b", "16"])
        .arg(p(8))
        .args(["synth", "1", "sine", "330"]));
    write_tag(&p(8), TagType::AiffText, &exp[8], &[], false);
    // No tags at all (sox writes none into FLAC).
    run(Command::new("sox")
        .args(["-q", "-n", "-r", "48000", "-c", "1"])
        .arg(p(9))
        .args(["synth", "1", "sine", "550"]));
    // A FLAC file with an .mp3 name.
    let f = tmp("lying.flac");
    run(Command::new("flac")
        .args(["--silent", "-f", "-o"])
        .arg(&f)
        .arg(&wav));
    write_tag(&f, TagType::VorbisComments, &exp[10], &[], false);
    std::fs::rename(&f, p(10)).unwrap();
    // Broken and ignored files.
    std::fs::write(dir.join(BROKEN[0]), b"").unwrap();
    let full = std::fs::read(p(3)).unwrap();
    std::fs::write(dir.join(BROKEN[1]), &full[..60]).unwrap();
    std::fs::write(
        dir.join(BROKEN[2]),
        b"this is a text file, not Ogg Vorbis\n",
    )
    .unwrap();
    std::fs::write(dir.join(IGNORED[0]), b"\xff\xd8\xff not really a jpeg").unwrap();
    std::fs::write(dir.join(IGNORED[1]), b"hello").unwrap();
    std::fs::remove_file(&wav).unwrap();
    exp
}

/// A fresh corpus in a temp dir, or `None` (with a note) when the tools
/// are missing.
pub fn corpus() -> Option<(tempfile::TempDir, PathBuf, Vec<Expect>)> {
    let missing = missing_tools();
    if !missing.is_empty() {
        assert!(
            std::env::var_os("SPINDLE_REQUIRE_MEDIA_TOOLS").is_none(),
            "corpus tools missing: {missing:?}"
        );
        eprintln!(
            "skipping: corpus tools missing: {missing:?} (scripts/ci.d/30-media.sh installs them)"
        );
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("Music");
    let exp = generate(&dir);
    Some((tmp, dir, exp))
}
