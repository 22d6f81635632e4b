//! The one checked way to open a file under a music folder.
//!
//! Everything that opens a file below a music folder on behalf of the
//! network — streams, folder cover images, embedded covers, later lyrics
//! and playlists — and the scanner go through a [`MusicRoot`]. Its
//! [`MusicRoot::open`] gives a regular file whose path, once every symlink
//! is resolved, stays inside the folder:
//!
//! - Symlinks that stay inside the folder are followed (people link albums
//!   around inside their library); ones that lead out of it are refused,
//!   as is any `..` in the path asked for.
//! - Only regular files: `/dev/zero`, FIFOs, sockets and directories are
//!   refused (the file is opened non-blocking, so a FIFO cannot hang the
//!   caller, and checked with `fstat` before a byte is read).
//! - On Linux the file is opened by `openat2(2)` with `RESOLVE_BENEATH |
//!   RESOLVE_NO_MAGICLINKS` below the folder, so the kernel does the
//!   check as it resolves the path. Where `openat2` is missing (kernels
//!   before 5.6, container filters) or refuses a link the kernel cannot
//!   judge (`RESOLVE_BENEATH` refuses every absolute symlink, even one
//!   that points back inside), the path is made canonical, checked to lie
//!   under the canonical folder, opened without following a last symlink,
//!   and the opened descriptor is checked again (where it really is, per
//!   `/proc/self/fd`, or else that its device and inode are those of the
//!   canonical path), so a link swapped in between cannot lead out.
//!
//! A music folder may itself be a symlink: it is made canonical once, when
//! the [`MusicRoot`] is made.
//!
//! It lives in this crate, the lowest one, because the scanner
//! (`spindle-media`, which re-exports it), the server and the storage
//! tiers' folder devices (`spindle-tiers`) all open files under a folder
//! and must do it the same way.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

/// The largest cover image served or read, whether a file in the album's
/// folder or a picture embedded in a song: 16 MiB. A front cover is a few
/// hundred KiB, a very large scan a few MiB; lofty refuses single
/// allocations above the same value, so embedded and folder images share
/// one limit. A larger image is skipped, not served.
pub const COVER_CAP: u64 = 16 << 20;

/// The largest sidecar file read (lyrics `.lrc`, playlists `.m3u`): 1 MiB.
/// A long song's synchronised lyrics or a playlist of thousands of tracks
/// is tens of KiB; anything near the cap is not a sidecar.
pub const SIDECAR_CAP: u64 = 1 << 20;

/// Why a file under a music folder was not opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenRefused {
    /// The music folder itself cannot be used.
    #[error("music folder {}: {source}", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path, or a symlink on it, leads out of the music folder.
    #[error("{} leads outside the music folder {}{}", path.display(), root.display(),
        target.as_ref().map(|t| format!(" (to {})", t.display())).unwrap_or_default())]
    Outside {
        path: PathBuf,
        root: PathBuf,
        /// Where it leads, when known.
        target: Option<PathBuf>,
    },
    /// Not a regular file: a directory, a device, a FIFO or a socket.
    #[error("{} is not a regular file (it is a {kind})", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// Larger than the cap its kind of file has.
    #[error("{} is larger than {cap} bytes, the limit for this kind of file", path.display())]
    TooLarge { path: PathBuf, cap: u64 },
    /// Opening or reading failed (missing, no permission, …).
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl OpenRefused {
    /// The file is simply not there (as opposed to refused or unreadable).
    pub fn is_missing(&self) -> bool {
        matches!(self, OpenRefused::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// A music folder, through which files below it are opened. Cheap to
/// clone.
#[derive(Debug, Clone)]
pub struct MusicRoot {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The folder as given, made absolute (it may be a symlink).
    given: PathBuf,
    /// The folder with every symlink resolved.
    canonical: PathBuf,
}

/// Flags of every open: read-only, and non-blocking so a FIFO cannot
/// hang the open (cleared again once the file is known to be regular).
const READ: OFlags = OFlags::RDONLY
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY)
    .union(OFlags::NONBLOCK);

/// Whether `openat2` may work here; cleared the first time it says ENOSYS.
#[cfg(target_os = "linux")]
static OPENAT2: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

impl MusicRoot {
    /// The music folder at `path` (a directory, or a symlink to one).
    pub fn new(path: &Path) -> Result<MusicRoot, OpenRefused> {
        let root_err = |source| OpenRefused::Root {
            path: path.to_owned(),
            source,
        };
        let canonical = std::fs::canonicalize(path).map_err(root_err)?;
        if !canonical.is_dir() {
            return Err(root_err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a directory",
            )));
        }
        let given = std::path::absolute(path).map_err(root_err)?;
        Ok(MusicRoot {
            inner: Arc::new(Inner { given, canonical }),
        })
    }

    /// The folder, canonical.
    pub fn path(&self) -> &Path {
        &self.inner.canonical
    }

    /// `path` (relative to the folder, or absolute under it) as a path
    /// relative to the folder, made only of names: `..`, and absolute
    /// paths elsewhere, are refused.
    pub fn relative(&self, path: &Path) -> Result<PathBuf, OpenRefused> {
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.inner.canonical)
                .or_else(|_| path.strip_prefix(&self.inner.given))
                .map_err(|_| self.outside(path, None))?
        } else {
            path
        };
        let mut out = PathBuf::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(self.outside(path, None))
                }
            }
        }
        Ok(out)
    }

    /// Opens the regular file at `path` (relative to the folder, or
    /// absolute under it), following only symlinks that stay inside the
    /// folder. Returns the file and its metadata (from the open file).
    pub fn open(&self, path: &Path) -> Result<(File, Metadata), OpenRefused> {
        let rel = self.relative(path)?;
        let shown = self.inner.canonical.join(&rel);
        if rel.as_os_str().is_empty() {
            return Err(OpenRefused::NotRegular {
                path: shown,
                kind: "directory",
            });
        }
        let fd = self.open_fd(&rel, &shown)?;
        regular(fd, &shown)
    }

    /// The whole file at `path`, opened as [`MusicRoot::open`] does, if it
    /// holds at most `cap` bytes. At most `cap + 1` bytes are read whatever
    /// the file's size claims, so a file that grows meanwhile cannot make
    /// this allocate more.
    pub fn read_capped(&self, path: &Path, cap: u64) -> Result<Vec<u8>, OpenRefused> {
        let (file, meta) = self.open(path)?;
        let shown = || {
            self.inner
                .canonical
                .join(self.relative(path).unwrap_or_default())
        };
        if meta.len() > cap {
            return Err(OpenRefused::TooLarge { path: shown(), cap });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| OpenRefused::Io {
                path: shown(),
                source,
            })?;
        if bytes.len() as u64 > cap {
            return Err(OpenRefused::TooLarge { path: shown(), cap });
        }
        Ok(bytes)
    }

    /// Whether the file at `path` (absolute, under the folder), once every
    /// symlink is resolved, still lies inside the folder; `Err` names why
    /// not. Opens nothing (for the scanner's walk, which only lists).
    pub fn check_inside(&self, path: &Path) -> Result<PathBuf, OpenRefused> {
        let rel = self.relative(path)?;
        let shown = self.inner.canonical.join(&rel);
        let real = std::fs::canonicalize(&shown).map_err(|source| OpenRefused::Io {
            path: shown.clone(),
            source,
        })?;
        if !real.starts_with(&self.inner.canonical) {
            return Err(self.outside(&shown, Some(real)));
        }
        Ok(real)
    }

    fn outside(&self, path: &Path, target: Option<PathBuf>) -> OpenRefused {
        OpenRefused::Outside {
            path: path.to_owned(),
            root: self.inner.canonical.clone(),
            target,
        }
    }

    #[cfg(target_os = "linux")]
    fn open_fd(&self, rel: &Path, shown: &Path) -> Result<OwnedFd, OpenRefused> {
        use rustix::fs::ResolveFlags;
        use rustix::io::Errno;
        use std::sync::atomic::Ordering;
        if OPENAT2.load(Ordering::Relaxed) {
            let dir = rustix::fs::open(
                &self.inner.canonical,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| OpenRefused::Root {
                path: self.inner.canonical.clone(),
                source: e.into(),
            })?;
            let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&dir, rel, READ, Mode::empty(), how) {
                Ok(fd) => return Ok(fd),
                Err(Errno::NOSYS) => OPENAT2.store(false, Ordering::Relaxed),
                // EXDEV: a link leaves, or is absolute (and may point back
                // inside); ELOOP: a magic link or a loop; EAGAIN: a rename
                // raced; EPERM: a container's filter. The canonical path
                // decides these.
                Err(Errno::XDEV | Errno::LOOP | Errno::AGAIN | Errno::PERM) => {}
                Err(e) => {
                    return Err(OpenRefused::Io {
                        path: shown.to_owned(),
                        source: e.into(),
                    })
                }
            }
        }
        self.open_canonical(rel, shown)
    }

    #[cfg(not(target_os = "linux"))]
    fn open_fd(&self, rel: &Path, shown: &Path) -> Result<OwnedFd, OpenRefused> {
        self.open_canonical(rel, shown)
    }

    /// The portable way: canonical path checked, opened without following
    /// a final symlink, the opened descriptor checked again.
    fn open_canonical(&self, rel: &Path, shown: &Path) -> Result<OwnedFd, OpenRefused> {
        let io = |source| OpenRefused::Io {
            path: shown.to_owned(),
            source,
        };
        let real = self.check_inside(rel)?;
        let fd = rustix::fs::open(&real, READ | OFlags::NOFOLLOW, Mode::empty())
            .map_err(|e| io(e.into()))?;
        // A directory on the path may have been swapped for a link between
        // the check and the open: look where the descriptor really is.
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            if let Ok(at) = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
                if !at.starts_with(&self.inner.canonical) {
                    return Err(self.outside(shown, Some(at)));
                }
                return Ok(fd);
            }
        }
        let file = File::from(fd);
        let opened = file.metadata().map_err(io)?;
        let named = std::fs::metadata(&real).map_err(io)?;
        if (opened.dev(), opened.ino()) != (named.dev(), named.ino()) {
            return Err(self.outside(shown, None));
        }
        Ok(OwnedFd::from(file))
    }
}

/// The open `fd` as a blocking [`File`] with its metadata, if it is a
/// regular file.
fn regular(fd: OwnedFd, shown: &Path) -> Result<(File, Metadata), OpenRefused> {
    let io = |source| OpenRefused::Io {
        path: shown.to_owned(),
        source,
    };
    let file = File::from(fd);
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(OpenRefused::NotRegular {
            path: shown.to_owned(),
            kind: kind_of(&meta),
        });
    }
    let mut flags = rustix::fs::fcntl_getfl(&file).map_err(|e| io(e.into()))?;
    flags.remove(OFlags::NONBLOCK);
    rustix::fs::fcntl_setfl(&file, flags).map_err(|e| io(e.into()))?;
    Ok((file, meta))
}

fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "directory"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A music folder `music/` with `a/song.mp3`, beside `secret.txt`
    /// outside it.
    fn setup() -> (tempfile::TempDir, MusicRoot) {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("music/a")).unwrap();
        std::fs::write(d.path().join("music/a/song.mp3"), b"music").unwrap();
        std::fs::write(d.path().join("secret.txt"), b"secret").unwrap();
        let root = MusicRoot::new(&d.path().join("music")).unwrap();
        (d, root)
    }

    /// Opens through the kernel's check and through the portable one; both
    /// must agree.
    fn both(root: &MusicRoot, path: &str) -> Vec<Result<Vec<u8>, OpenRefused>> {
        let read = |r: Result<OwnedFd, OpenRefused>, shown: &Path| {
            let (mut f, _) = regular(r?, shown)?;
            let mut v = Vec::new();
            f.read_to_end(&mut v).unwrap();
            Ok(v)
        };
        let rel = match root.relative(Path::new(path)) {
            Ok(rel) => rel,
            Err(e) => return vec![Err(e)],
        };
        let shown = root.path().join(&rel);
        vec![
            root.open(Path::new(path)).map(|(mut f, _)| {
                let mut v = Vec::new();
                f.read_to_end(&mut v).unwrap();
                v
            }),
            read(root.open_canonical(&rel, &shown), &shown),
        ]
    }

    #[test]
    fn a_file_and_a_symlink_that_stays_inside_open() {
        let (d, root) = setup();
        symlink("a/song.mp3", d.path().join("music/rel.mp3")).unwrap();
        std::fs::create_dir(d.path().join("music/b")).unwrap();
        symlink(
            d.path().join("music/a/song.mp3"),
            d.path().join("music/b/abs.mp3"),
        )
        .unwrap();
        symlink("../a", d.path().join("music/b/linked")).unwrap();
        for p in ["a/song.mp3", "rel.mp3", "b/abs.mp3", "b/linked/song.mp3"] {
            for r in both(&root, p) {
                assert_eq!(r.unwrap(), b"music", "{p}");
            }
        }
        let abs = root.path().join("a/song.mp3");
        assert_eq!(root.read_capped(&abs, 5).unwrap(), b"music");
    }

    #[test]
    fn a_symlink_that_leads_outside_is_refused() {
        let (d, root) = setup();
        symlink("../../secret.txt", d.path().join("music/a/cover.jpg")).unwrap();
        symlink(d.path().join("secret.txt"), d.path().join("music/abs.jpg")).unwrap();
        symlink(d.path(), d.path().join("music/up")).unwrap();
        for p in ["a/cover.jpg", "abs.jpg", "up/secret.txt"] {
            for r in both(&root, p) {
                assert!(matches!(r, Err(OpenRefused::Outside { .. })), "{p}: {r:?}");
            }
        }
        let e = root.open(Path::new("a/cover.jpg")).unwrap_err().to_string();
        assert!(e.contains("cover.jpg") && e.contains("outside"), "{e}");
    }

    #[test]
    fn dot_dot_and_absolute_paths_elsewhere_are_refused() {
        let (d, root) = setup();
        for p in ["../secret.txt", "a/../../secret.txt", "a/../a/song.mp3"] {
            let r = root.open(Path::new(p));
            assert!(matches!(r, Err(OpenRefused::Outside { .. })), "{p}: {r:?}");
        }
        let r = root.open(&d.path().join("secret.txt"));
        assert!(matches!(r, Err(OpenRefused::Outside { .. })), "{r:?}");
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_without_blocking() {
        let (d, root) = setup();
        symlink("/dev/zero", d.path().join("music/zero.jpg")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.path().join("music/fifo.jpg"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let started = std::time::Instant::now();
        // /dev/zero is outside the folder as well as not a regular file.
        for r in both(&root, "zero.jpg") {
            assert!(matches!(r, Err(OpenRefused::Outside { .. })), "{r:?}");
        }
        for (p, kind) in [("fifo.jpg", "FIFO"), ("a", "directory"), ("", "directory")] {
            match root.open(Path::new(p)) {
                Err(OpenRefused::NotRegular { kind: k, .. }) => assert_eq!(k, kind, "{p}"),
                other => panic!("{p}: {other:?}"),
            }
            let r = root.read_capped(Path::new(p), COVER_CAP);
            assert!(matches!(r, Err(OpenRefused::NotRegular { .. })), "{p}");
        }
        // A device inside the folder, where the test may make one (root).
        let dev = d.path().join("music/null.jpg");
        let null = rustix::fs::makedev(1, 3);
        let mode = Mode::from_raw_mode(0o600);
        if rustix::fs::mknodat(
            rustix::fs::CWD,
            &dev,
            rustix::fs::FileType::CharacterDevice,
            mode,
            null,
        )
        .is_ok()
        {
            for r in both(&root, "null.jpg") {
                assert!(
                    matches!(
                        r,
                        Err(OpenRefused::NotRegular {
                            kind: "character device",
                            ..
                        })
                    ),
                    "{r:?}"
                );
            }
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn a_music_folder_that_is_itself_a_symlink_works() {
        let (d, _) = setup();
        symlink(d.path().join("music"), d.path().join("link")).unwrap();
        let root = MusicRoot::new(&d.path().join("link")).unwrap();
        assert_eq!(root.path(), d.path().join("music").canonicalize().unwrap());
        for p in [
            PathBuf::from("a/song.mp3"),
            d.path().join("link/a/song.mp3"),
            root.path().join("a/song.mp3"),
        ] {
            assert_eq!(root.read_capped(&p, 100).unwrap(), b"music", "{p:?}");
        }
    }

    #[test]
    fn a_file_over_its_cap_is_refused() {
        let (d, root) = setup();
        std::fs::write(d.path().join("music/big.jpg"), vec![0u8; 101]).unwrap();
        let r = root.read_capped(Path::new("big.jpg"), 100);
        assert!(
            matches!(r, Err(OpenRefused::TooLarge { cap: 100, .. })),
            "{r:?}"
        );
        assert_eq!(
            root.read_capped(Path::new("big.jpg"), 101).unwrap().len(),
            101
        );
        let missing = root.open(Path::new("nope.jpg")).unwrap_err();
        assert!(missing.is_missing(), "{missing:?}");
    }

    #[test]
    fn a_missing_or_plain_file_root_is_an_error() {
        let (d, _) = setup();
        assert!(matches!(
            MusicRoot::new(&d.path().join("nope")),
            Err(OpenRefused::Root { .. })
        ));
        assert!(matches!(
            MusicRoot::new(&d.path().join("secret.txt")),
            Err(OpenRefused::Root { .. })
        ));
    }
}
