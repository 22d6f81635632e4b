//! The library's files are private to the user Spindle runs as, whatever
//! the umask: files are created with mode 0600, directories the store
//! creates with 0700, and a file made before (say 0644) is narrowed to
//! 0600 when the database is opened for writing.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of the data file, the log and the lock file: owner read/write.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of a directory the store creates: owner only.
pub(crate) const DIR_MODE: u32 = 0o700;

/// Creates (or truncates) a file for writing, mode 0600.
pub(crate) fn create_file(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    make_private(&f)?;
    Ok(f)
}

/// Narrows an open file to mode 0600 if it is wider (or otherwise
/// different): the umask, or an older Spindle, may have left it readable.
pub(crate) fn make_private(f: &File) -> io::Result<()> {
    if f.metadata()?.permissions().mode() & 0o777 != FILE_MODE {
        f.set_permissions(Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

/// Creates `dir` and any missing parents, each mode 0700.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_database_has_private_files_in_a_private_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data").join("lib");
        let db = crate::Db::open(&dir).unwrap();
        db.commit(vec![crate::Op::CreateEntry(1)]).unwrap();
        db.compact().unwrap();
        db.commit(vec![crate::Op::CreateEntry(2)]).unwrap();
        assert_eq!(mode(&dir), DIR_MODE);
        assert_eq!(mode(&tmp.path().join("data")), DIR_MODE);
        for f in [crate::DATA_FILE, crate::LOG_FILE, crate::LOCK_FILE] {
            assert_eq!(mode(&dir.join(f)), FILE_MODE, "{f}");
        }
    }

    #[test]
    fn files_made_readable_by_others_are_narrowed_on_open() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let db = crate::Db::open(dir).unwrap();
        db.commit(vec![crate::Op::CreateEntry(1)]).unwrap();
        db.compact().unwrap();
        drop(db);
        for f in [crate::DATA_FILE, crate::LOG_FILE, crate::LOCK_FILE] {
            std::fs::set_permissions(dir.join(f), Permissions::from_mode(0o644)).unwrap();
        }
        drop(crate::Db::open(dir).unwrap());
        for f in [crate::DATA_FILE, crate::LOG_FILE, crate::LOCK_FILE] {
            assert_eq!(mode(&dir.join(f)), FILE_MODE, "{f}");
        }
    }
}
