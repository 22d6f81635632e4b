//! The file the sweep reads: a test file it creates (and removes, also on
//! error), or an existing file or device it only reads.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{BenchConfig, Progress, Target};
use crate::error::BenchError;

const DEFAULT_SIZE: u64 = 1 << 30;

pub(crate) struct TestFile {
    path: PathBuf,
    size: u64,
    readonly: bool,
    /// Whether we created it and must remove it.
    owned: bool,
}

impl TestFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn readonly(&self) -> bool {
        self.readonly
    }

    pub fn describe(&self) -> String {
        if self.owned {
            format!(
                "test file in {}",
                self.path.parent().unwrap_or(Path::new(".")).display()
            )
        } else {
            format!("{} (read-only)", self.path.display())
        }
    }

    /// Removes the test file (if ours) and says so.
    pub fn finish(mut self, progress: &mut dyn FnMut(Progress<'_>)) -> Result<(), BenchError> {
        if self.owned {
            self.owned = false;
            std::fs::remove_file(&self.path).map_err(|source| BenchError::Other {
                context: format!("removing the test file {}", self.path.display()),
                source,
            })?;
            progress(Progress::Note(format!("removed {}", self.path.display())));
        }
        Ok(())
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        if self.owned {
            // Best effort on the error path; `finish` reports failures.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

pub(crate) fn prepare(
    cfg: &BenchConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TestFile, BenchError> {
    match &cfg.target {
        Target::ReadOnly(path) => open_existing(path, cfg),
        Target::TempFileIn(dir) => create(dir, cfg, progress),
    }
}

fn round_down(size: u64, bs: usize) -> u64 {
    size - size % bs as u64
}

fn open_existing(path: &Path, cfg: &BenchConfig) -> Result<TestFile, BenchError> {
    let other = |context: String| move |source| BenchError::Other { context, source };
    let mut f =
        File::open(path).map_err(other(format!("cannot open {} for reading", path.display())))?;
    // Seeking to the end gives the size of block devices too.
    let actual = f
        .seek(SeekFrom::End(0))
        .map_err(other(format!("cannot find the size of {}", path.display())))?;
    let wanted = cfg.size.unwrap_or(actual);
    if wanted > actual {
        return Err(BenchError::TooShort {
            path: path.to_path_buf(),
            actual,
            wanted,
        });
    }
    let size = round_down(wanted, cfg.bs);
    if size == 0 {
        return Err(BenchError::TooShort {
            path: path.to_path_buf(),
            actual,
            wanted: cfg.bs as u64,
        });
    }
    Ok(TestFile {
        path: path.to_path_buf(),
        size,
        readonly: true,
        owned: false,
    })
}

fn create(
    dir: &Path,
    cfg: &BenchConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TestFile, BenchError> {
    if dir.is_file() || is_block_device(dir) {
        return Err(BenchError::Config(format!(
            "{} is a file or device; iobench creates its own test file in a directory. \
             To read an existing file or device instead, add --device-readonly",
            dir.display()
        )));
    }
    let size = round_down(cfg.size.unwrap_or(DEFAULT_SIZE), cfg.bs);
    if size == 0 {
        return Err(BenchError::Config(format!(
            "--size must be at least one block (--bs {})",
            cfg.bs
        )));
    }
    let path = dir.join(format!("spindle-iobench-{}.dat", std::process::id()));
    let create_err = |source| BenchError::CreateTestFile {
        dir: dir.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(create_err)?;
    // From here on the guard removes the file whatever happens.
    let file = TestFile {
        path,
        size,
        readonly: false,
        owned: true,
    };
    progress(Progress::Note(format!(
        "writing a {} test file {}",
        crate::units::format_size(size),
        file.path.display()
    )));
    let t0 = Instant::now();
    let chunk = 1 << 20;
    let mut buf = vec![0u8; chunk];
    let mut written = 0u64;
    while written < size {
        let n = chunk.min((size - written) as usize);
        // Non-zero, block-distinct data, so no layer can shortcut zeroes.
        for (i, block) in buf[..n].chunks_mut(8).enumerate() {
            let v = (written / 8 + i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            block.copy_from_slice(&v.to_le_bytes()[..block.len()]);
        }
        f.write_all(&buf[..n]).map_err(create_err)?;
        written += n as u64;
    }
    f.sync_all().map_err(create_err)?;
    progress(Progress::Note(format!(
        "test file written in {:.1}s",
        t0.elapsed().as_secs_f64()
    )));
    Ok(file)
}

fn is_block_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
}
