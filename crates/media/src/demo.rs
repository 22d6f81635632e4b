//! A small demo library for a fresh machine: short WAV files of
//! synthesised tones (no encoder needed), tagged with ID3v2 by lofty, so
//! `spindle serve` has something real to browse and play before the user
//! points it at their music.

use std::io::Write;
use std::path::{Path, PathBuf};

use lofty::config::WriteOptions;
use lofty::prelude::{Accessor, ItemKey, TagExt};
use lofty::tag::{Tag, TagType};

const RATE: u32 = 22_050;

/// Writes a mono 16-bit PCM WAV of a sine tone with a short fade in and out.
pub fn write_wav(path: &Path, freq: f64, secs: f64) -> std::io::Result<()> {
    let n = (f64::from(RATE) * secs) as u32;
    let data_len = n * 2;
    let mut buf = Vec::with_capacity(44 + data_len as usize);
    buf.extend_from_slice(b"RIFF");
    buf.extend_from_slice(&(36 + data_len).to_le_bytes());
    buf.extend_from_slice(b"WAVEfmt ");
    buf.extend_from_slice(&16u32.to_le_bytes());
    buf.extend_from_slice(&1u16.to_le_bytes()); // PCM
    buf.extend_from_slice(&1u16.to_le_bytes()); // mono
    buf.extend_from_slice(&RATE.to_le_bytes());
    buf.extend_from_slice(&(RATE * 2).to_le_bytes());
    buf.extend_from_slice(&2u16.to_le_bytes());
    buf.extend_from_slice(&16u16.to_le_bytes());
    buf.extend_from_slice(b"data");
    buf.extend_from_slice(&data_len.to_le_bytes());
    let fade = f64::from(RATE) * 0.05;
    for i in 0..n {
        let t = f64::from(i) / f64::from(RATE);
        let env = (f64::from(i) / fade).min(f64::from(n - i) / fade).min(1.0);
        let s = (t * freq * std::f64::consts::TAU).sin() * env * 0.3;
        buf.extend_from_slice(&((s * f64::from(i16::MAX)) as i16).to_le_bytes());
    }
    let mut f = std::fs::File::create(path)?;
    f.write_all(&buf)?;
    f.sync_all()
}

/// One demo track: artist, album, year, title, tone frequency.
type Track = (&'static str, &'static str, u32, &'static str, f64);

const TRACKS: &[Track] = &[
    (
        "The Sine Waves",
        "Pure Tones",
        2021,
        "A Above Middle C",
        440.0,
    ),
    ("The Sine Waves", "Pure Tones", 2021, "Middle C", 261.63),
    ("The Sine Waves", "Pure Tones", 2021, "E Flat", 311.13),
    ("The Sine Waves", "Overtones", 2023, "Low G", 196.0),
    ("The Sine Waves", "Overtones", 2023, "High B", 987.77),
    ("Björk Generator", "Oscillator Suite", 2019, "Hum", 110.0),
    (
        "Björk Generator",
        "Oscillator Suite",
        2019,
        "Whistle",
        1318.5,
    ),
    ("Björk Generator", "Oscillator Suite", 2019, "Chime", 659.25),
];

/// Writes the demo library under `dir` (Artist/Album/NN Title.wav) and
/// returns the files written. Files already there are kept as they are.
pub fn generate_demo(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut tracknr = std::collections::HashMap::<&str, u32>::new();
    for &(artist, album, year, title, freq) in TRACKS {
        let nr = tracknr.entry(album).or_insert(0);
        *nr += 1;
        let sub = dir.join(artist).join(album);
        std::fs::create_dir_all(&sub)?;
        let path = sub.join(format!("{nr:02} {title}.wav"));
        if !path.exists() {
            write_wav(&path, freq, 4.0)?;
            let mut tag = Tag::new(TagType::Id3v2);
            tag.set_title(title.into());
            tag.set_artist(artist.into());
            tag.set_album(album.into());
            tag.insert_text(ItemKey::AlbumArtist, artist.into());
            tag.set_track(*nr);
            tag.insert_text(ItemKey::RecordingDate, year.to_string());
            tag.set_genre("Demo".into());
            tag.save_to_path(&path, WriteOptions::default())
                .map_err(std::io::Error::other)?;
        }
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{scan, Quiet, ScanOptions};

    #[test]
    fn the_demo_library_scans_into_tagged_entries() {
        let dir = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let files = generate_demo(dir.path()).unwrap();
        assert_eq!(files.len(), TRACKS.len());
        let db = spindle_store::Db::open(data.path()).unwrap();
        let r = scan(
            &db,
            &[dir.path().to_owned()],
            &ScanOptions::default(),
            &mut Quiet,
        )
        .unwrap();
        assert_eq!(r.added as usize, TRACKS.len(), "{:?}", r.failed);
        let lib = db.read();
        let pref = spindle_query::SourcePref::default();
        let mut titles: Vec<String> = lib
            .ids()
            .filter_map(|id| lib.get(id, "title", &pref).first().map(|v| v.to_string()))
            .collect();
        titles.sort();
        assert!(titles.contains(&"Middle C".to_string()), "{titles:?}");
        let id = lib.ids().next().unwrap();
        assert!(!lib.get(id, "album_artist", &pref).is_empty());
        assert!(!lib.get(id, "duration", &pref).is_empty());
    }
}
