//! The cover pipeline over a real music folder: WAV files tagged by
//! lofty (some with embedded pictures), folder images, a scan into a
//! library, and the catalog the server builds from it.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use image::{DynamicImage, ImageFormat, RgbImage};
use lofty::config::WriteOptions;
use lofty::picture::{MimeType, Picture, PictureType};
use lofty::prelude::{Accessor, ItemKey, TagExt};
use lofty::tag::{Tag, TagType};
use spindle_store::Db;

use super::*;

fn picture(w: u32, h: u32, format: ImageFormat, shade: u8) -> Vec<u8> {
    let img = RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([shade, (x * 255 / w) as u8, (y * 255 / h) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(img)
        .write_to(&mut out, format)
        .unwrap();
    out.into_inner()
}

/// A tagged WAV at `root/rel`, with `pic` embedded as its front cover.
fn song(root: &Path, rel: &str, artist: &str, album: &str, pic: Option<Vec<u8>>) -> PathBuf {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    spindle_media::demo::write_wav(&path, 440.0, 0.2).unwrap();
    let mut tag = Tag::new(TagType::Id3v2);
    tag.set_title(rel.into());
    tag.set_artist(artist.into());
    tag.set_album(album.into());
    tag.insert_text(ItemKey::AlbumArtist, artist.into());
    if let Some(data) = pic {
        tag.push_picture(
            Picture::unchecked(data)
                .pic_type(PictureType::CoverFront)
                .mime_type(MimeType::Jpeg)
                .build(),
        );
    }
    tag.save_to_path(&path, WriteOptions::default()).unwrap();
    path
}

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: PathBuf,
    data: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let data = tempfile::tempdir().unwrap();
        let music = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(music.path()).unwrap();
        Fixture {
            root,
            data: data.path().to_owned(),
            _dirs: (data, music),
        }
    }

    /// Scans the music folder and returns the music side and its catalog.
    fn scan(&self) -> (Music, Arc<Catalog>) {
        let db = Db::open(self.data.join("lib")).unwrap();
        spindle_media::scan::scan(
            &db,
            std::slice::from_ref(&self.root),
            &spindle_media::scan::ScanOptions::default(),
            &mut spindle_media::scan::Quiet,
        )
        .unwrap();
        let music = Music::new(std::slice::from_ref(&self.root), &self.data).unwrap();
        let cat = music.catalog(&db);
        (music, cat)
    }

    fn covers(&self) -> Covers {
        Covers::open(&self.data.join(COVER_CACHE_DIR), COVER_CACHE_BUDGET)
    }
}

fn song_id(cat: &Catalog, file_name: &str) -> String {
    cat.songs
        .iter()
        .find(|s| s.file.file_name().is_some_and(|n| n == file_name))
        .map(|s| s.id.to_string())
        .unwrap()
}

fn dims(c: &Cover) -> (u32, u32) {
    let p = resize::probe(&c.data).unwrap();
    (p.width, p.height)
}

#[test]
fn a_corrupt_embedded_picture_falls_back_to_the_folder_image() {
    let f = Fixture::new();
    song(
        &f.root,
        "A/Broken/01.wav",
        "A",
        "Broken",
        Some(b"\xFF\xD8\xFFnot really a jpeg".to_vec()),
    );
    let folder_png = picture(600, 400, ImageFormat::Png, 10);
    std::fs::write(f.root.join("A/Broken/Folder.PNG"), &folder_png).unwrap();
    let (music, cat) = f.scan();
    let covers = f.covers();
    let id = song_id(&cat, "01.wav");

    let l = covers.lookup(&music, &cat, &id, Some(300)).unwrap();
    let c = covers.render(&l).unwrap();
    assert_eq!((c.mime, dims(&c)), ("image/jpeg", (300, 200)));
    // Without a size, the folder image as it is.
    let l = covers.lookup(&music, &cat, &id, None).unwrap();
    let c = covers.render(&l).unwrap();
    assert_eq!((c.mime, c.data == folder_png), ("image/png", true));
}

#[test]
fn the_embedded_picture_comes_before_the_folder_image() {
    let f = Fixture::new();
    let embedded = picture(500, 500, ImageFormat::Jpeg, 200);
    song(
        &f.root,
        "A/Good/01.wav",
        "A",
        "Good",
        Some(embedded.clone()),
    );
    std::fs::write(
        f.root.join("A/Good/cover.jpg"),
        picture(80, 80, ImageFormat::Jpeg, 0),
    )
    .unwrap();
    let (music, cat) = f.scan();
    let covers = f.covers();
    let album = cat.albums[0].id.clone();
    let c = covers
        .render(&covers.lookup(&music, &cat, &album, None).unwrap())
        .unwrap();
    assert!(
        c.data == embedded,
        "the album's cover is its song's picture"
    );
    let c = covers
        .render(&covers.lookup(&music, &cat, &album, Some(64)).unwrap())
        .unwrap();
    assert_eq!(dims(&c), (64, 64));
}

#[test]
fn folder_images_are_found_caselessly_in_their_order() {
    let f = Fixture::new();
    song(&f.root, "B/X/01.wav", "B", "X", None);
    let cover = picture(90, 60, ImageFormat::Jpeg, 1);
    std::fs::write(
        f.root.join("B/X/front.webp"),
        picture(10, 10, ImageFormat::WebP, 2),
    )
    .unwrap();
    std::fs::write(f.root.join("B/X/COVER.Jpeg"), &cover).unwrap();
    std::fs::write(
        f.root.join("B/X/cover.png"),
        picture(20, 20, ImageFormat::Png, 3),
    )
    .unwrap();
    std::fs::write(f.root.join("B/X/notes.jpg"), b"not a cover").unwrap();
    let (music, cat) = f.scan();
    let covers = Covers::without_cache();
    let l = covers
        .lookup(&music, &cat, &song_id(&cat, "01.wav"), None)
        .unwrap();
    let names: Vec<String> = l
        .candidates()
        .iter()
        .filter_map(|c| match &c.source {
            Source::File(p) => Some(p.file_name().unwrap().to_string_lossy().into_owned()),
            Source::Embedded(_) => None,
        })
        .collect();
    assert_eq!(names, ["COVER.Jpeg", "cover.png", "front.webp"]);
    assert!(covers.render(&l).unwrap().data == cover);
}

#[test]
fn a_disc_folder_uses_the_album_folder_cover() {
    let f = Fixture::new();
    song(&f.root, "C/Double/CD1/01.wav", "C", "Double", None);
    song(&f.root, "C/Double/CD2/01b.wav", "C", "Double", None);
    let cover = picture(50, 50, ImageFormat::Png, 4);
    std::fs::write(f.root.join("C/Double/cover.png"), &cover).unwrap();
    let (music, cat) = f.scan();
    let covers = Covers::without_cache();
    for file in ["01.wav", "01b.wav"] {
        let l = covers
            .lookup(&music, &cat, &song_id(&cat, file), None)
            .unwrap();
        assert!(covers.render(&l).unwrap().data == cover, "{file}");
    }
}

#[test]
fn an_artist_id_gets_the_artist_image_else_an_album_cover() {
    let f = Fixture::new();
    song(&f.root, "Dee/One/01.wav", "Dee", "One", None);
    song(&f.root, "Dee/Two/01c.wav", "Dee", "Two", None);
    song(&f.root, "Eve/Solo/01d.wav", "Eve", "Solo", None);
    let dee = picture(120, 80, ImageFormat::Jpeg, 5);
    std::fs::write(f.root.join("Dee/Artist.jpg"), &dee).unwrap();
    std::fs::write(
        f.root.join("Dee/One/cover.jpg"),
        picture(30, 30, ImageFormat::Jpeg, 6),
    )
    .unwrap();
    let eve = picture(70, 70, ImageFormat::Png, 7);
    // Eve has one album: her image is in the folder above it.
    std::fs::write(f.root.join("Eve/artist.png"), &eve).unwrap();
    let eve_cover = picture(40, 40, ImageFormat::Png, 8);
    std::fs::write(f.root.join("Eve/Solo/cover.png"), &eve_cover).unwrap();
    let (music, cat) = f.scan();
    let covers = Covers::without_cache();
    let render = |id: &str| covers.render(&covers.lookup(&music, &cat, id, None).unwrap());
    assert!(render(&crate::catalog::artist_id("Dee")).unwrap().data == dee);
    assert!(render(&crate::catalog::artist_id("Eve")).unwrap().data == eve);
    // The album keeps its own cover.
    let solo = cat
        .albums
        .iter()
        .find(|a| a.name == "Solo")
        .unwrap()
        .id
        .clone();
    assert!(render(&solo).unwrap().data == eve_cover);
    // Without an artist image, the first album's cover.
    std::fs::remove_file(f.root.join("Eve/artist.png")).unwrap();
    assert!(render(&crate::catalog::artist_id("Eve")).unwrap().data == eve_cover);
}

#[test]
fn the_etag_is_stable_and_changes_with_the_size_and_the_files() {
    let f = Fixture::new();
    song(&f.root, "F/G/01.wav", "F", "G", None);
    let path = f.root.join("F/G/cover.jpg");
    std::fs::write(&path, picture(400, 400, ImageFormat::Jpeg, 9)).unwrap();
    let (music, cat) = f.scan();
    let covers = Covers::without_cache();
    let id = song_id(&cat, "01.wav");
    let tag = |size| covers.lookup(&music, &cat, &id, size).unwrap().etag();
    let first = tag(Some(300));
    assert!(first.starts_with('"') && first.ends_with('"') && first.len() == 34);
    assert_eq!(tag(Some(300)), first);
    assert_ne!(tag(Some(64)), first);
    assert_ne!(tag(None), first);
    // A new cover image (new inode, length or time) is a new tag.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, picture(400, 401, ImageFormat::Jpeg, 9)).unwrap();
    assert_ne!(tag(Some(300)), first);
}

#[test]
fn a_resized_cover_is_kept_in_the_disk_cache() {
    let f = Fixture::new();
    song(&f.root, "H/I/01.wav", "H", "I", None);
    std::fs::write(
        f.root.join("H/I/cover.png"),
        picture(900, 900, ImageFormat::Png, 11),
    )
    .unwrap();
    let (music, cat) = f.scan();
    let covers = f.covers();
    let id = song_id(&cat, "01.wav");
    let l = covers.lookup(&music, &cat, &id, Some(300)).unwrap();
    let made = covers.render(&l).unwrap();
    let cache = covers.cache().unwrap();
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.bytes(), made.data.len() as u64);
    // The second request is the cached file: replace it to prove it.
    let key = l.etag().trim_matches('"').to_owned();
    cache.put(&key, b"cached bytes").unwrap();
    assert_eq!(covers.render(&l).unwrap().data, b"cached bytes");
    // Sizes at or above the source's are the source itself, not cached.
    let l = covers.lookup(&music, &cat, &id, Some(2000)).unwrap();
    let c = covers.render(&l).unwrap();
    assert_eq!((c.mime, dims(&c)), ("image/png", (900, 900)));
    assert_eq!(cache.len(), 1);
}

#[test]
fn unknown_ids_and_songs_without_art_are_told_apart() {
    let f = Fixture::new();
    song(&f.root, "J/K/01.wav", "J", "K", None);
    let (music, cat) = f.scan();
    let covers = Covers::without_cache();
    assert!(matches!(
        covers.lookup(&music, &cat, "al-0000000000000000", None),
        Err(CoverError::NoSuchId(_))
    ));
    let id = song_id(&cat, "01.wav");
    // The song itself is a candidate (it may hold a picture) but has none.
    let l = covers.lookup(&music, &cat, &id, None).unwrap();
    assert!(matches!(covers.render(&l), Err(CoverError::NotFound(_))));
}

#[test]
fn a_cover_too_large_to_decode_is_a_clear_error() {
    let f = Fixture::new();
    song(&f.root, "L/M/01.wav", "L", "M", None);
    let mut jpeg = picture(8, 8, ImageFormat::Jpeg, 0);
    let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    jpeg[sof + 5..sof + 7].copy_from_slice(&30_000u16.to_be_bytes());
    jpeg[sof + 7..sof + 9].copy_from_slice(&30_000u16.to_be_bytes());
    std::fs::write(f.root.join("L/M/cover.jpg"), &jpeg).unwrap();
    let (music, cat) = f.scan();
    let covers = Covers::without_cache();
    let l = covers
        .lookup(&music, &cat, &song_id(&cat, "01.wav"), Some(300))
        .unwrap();
    let err = covers.render(&l).unwrap_err();
    assert!(
        matches!(
            err,
            CoverError::Unusable {
                source: ImageError::TooLarge { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("30000×30000"), "{err}");
}

#[test]
fn sizes_snap_up_to_the_standard_ones_and_share_one_cover() {
    assert_eq!(snap(None), None);
    assert_eq!(snap(Some(1)), Some(32));
    assert_eq!(snap(Some(100)), Some(128));
    assert_eq!(snap(Some(128)), Some(128));
    assert_eq!(snap(Some(129)), Some(160));
    assert_eq!(snap(Some(699)), Some(1024));
    assert_eq!(snap(Some(2049)), None, "above the largest: the source");
    let f = Fixture::new();
    song(&f.root, "S/N/01.wav", "S", "N", None);
    std::fs::write(
        f.root.join("S/N/cover.png"),
        picture(900, 900, ImageFormat::Png, 5),
    )
    .unwrap();
    let (music, cat) = f.scan();
    let covers = Covers::without_cache();
    let id = song_id(&cat, "01.wav");
    let l = |size| covers.lookup(&music, &cat, &id, Some(size)).unwrap();
    assert_eq!(l(100).etag(), l(128).etag());
    assert_ne!(l(100).etag(), l(129).etag());
    let c = covers.render(&l(250)).unwrap();
    assert_eq!((c.mime, dims(&c)), ("image/jpeg", (256, 256)));
}

#[tokio::test]
async fn concurrent_requests_for_one_cover_wait_for_one_resize() {
    let f = Fixture::new();
    song(&f.root, "D/E/01.wav", "D", "E", None);
    std::fs::write(
        f.root.join("D/E/cover.png"),
        picture(900, 900, ImageFormat::Png, 7),
    )
    .unwrap();
    let (music, cat) = f.scan();
    let covers = Arc::new(Covers::without_cache());
    let id = song_id(&cat, "01.wav");
    let l = covers.lookup(&music, &cat, &id, Some(300)).unwrap();
    // Both workers busy: the requests below can only queue.
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let mut blockers = Vec::new();
    for user in ["x", "y"] {
        let (c, g) = (covers.clone(), gate.clone());
        blockers.push(tokio::spawn(async move {
            c.pool
                .run(user, move || {
                    let mut open = lock(&g.0);
                    while !*open {
                        open = g.1.wait(open).unwrap();
                    }
                })
                .await
        }));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while covers.load() != (2, 0) {
        assert!(std::time::Instant::now() < deadline, "{:?}", covers.load());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let mut asks = Vec::new();
    for user in ["ann", "bob", "ann", "cid", "bob"] {
        let (c, l) = (covers.clone(), l.clone());
        asks.push(tokio::spawn(async move { c.make(l, user).await }));
    }
    while lock(&covers.making).len() != 1 || covers.load() != (2, 1) {
        assert!(std::time::Instant::now() < deadline, "{:?}", covers.load());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    // Let every request arrive: still one resize queued.
    tokio::task::yield_now().await;
    assert_eq!(covers.load(), (2, 1));
    *lock(&gate.0) = true;
    gate.1.notify_all();
    let mut made = Vec::new();
    for a in asks {
        made.push(a.await.unwrap().unwrap().data);
    }
    assert!(made.windows(2).all(|w| w[0] == w[1]));
    for b in blockers {
        b.await.unwrap().unwrap();
    }
    assert!(lock(&covers.making).is_empty());
}
