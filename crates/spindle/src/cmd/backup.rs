//! `spindle backup DIR` and `spindle restore DIR`: the binary's side of
//! [`spindle_server::backup`] (design: docs/backup.md).

use std::path::Path;

use anyhow::Context;

use super::now;

/// `spindle backup DIR`: a consistent copy of the data dir, also while a
/// server runs on it.
pub fn run_backup(data_dir: &Path, dest: &Path) -> anyhow::Result<()> {
    let m = spindle_server::backup::backup(data_dir, dest, now())
        .with_context(|| format!("backing up {} to {}", data_dir.display(), dest.display()))?;
    let bytes: u64 = m.files.iter().map(|(_, n)| n).sum();
    println!(
        "backup in {}: {} library entries, {} listens, {} users ({} files, {} bytes)",
        dest.display(),
        m.entries,
        m.listens,
        m.users,
        m.files.len(),
        bytes
    );
    Ok(())
}

/// `spindle restore DIR`: the backup into `--data-dir`, which must be new
/// or empty.
pub fn run_restore(data_dir: &Path, src: &Path) -> anyhow::Result<()> {
    let m = spindle_server::backup::restore(src, data_dir)
        .with_context(|| format!("restoring {} into {}", src.display(), data_dir.display()))?;
    println!(
        "restored into {}: {} library entries, {} listens, {} users; start it with `spindle --data-dir {} serve`",
        data_dir.display(),
        m.entries,
        m.listens,
        m.users,
        data_dir.display()
    );
    Ok(())
}
