//! Files for `spindle bench scan`: N small, tagged, valid MP3 files made
//! without any encoder (silent MPEG-1 Layer III frames) and tagged with
//! ID3v2.4 by lofty.

use std::path::Path;

use lofty::config::WriteOptions;
use lofty::prelude::{Accessor, TagExt};
use lofty::tag::{Tag, TagType};

/// One silent MPEG-1 Layer III frame, 128 kbit/s, 44.1 kHz, joint stereo.
fn silent_frame() -> Vec<u8> {
    let mut f = vec![0u8; 417];
    f[..4].copy_from_slice(&[0xFF, 0xFB, 0x90, 0x44]);
    f
}

/// Writes `n` tagged MP3s (about 0.5 s each) under `dir` in folders of 100.
pub fn generate_mp3s(dir: &Path, n: usize) -> std::io::Result<()> {
    let frame = silent_frame();
    let audio: Vec<u8> = (0..20).flat_map(|_| frame.iter().copied()).collect();
    for i in 0..n {
        let sub = dir.join(format!("Artist {:03}/Album {:03}", i / 1000, i / 100));
        std::fs::create_dir_all(&sub)?;
        let path = sub.join(format!("{:02} Track {i}.mp3", i % 100 + 1));
        std::fs::write(&path, &audio)?;
        let mut tag = Tag::new(TagType::Id3v2);
        tag.set_title(format!("Track {i}"));
        tag.set_artist(format!("Artist {:03}", i / 1000));
        tag.set_album(format!("Album {:03}", i / 100));
        tag.set_track((i % 100 + 1) as u32);
        tag.set_genre("Benchmark".into());
        tag.save_to_path(&path, WriteOptions::default())
            .map_err(std::io::Error::other)?;
    }
    Ok(())
}
