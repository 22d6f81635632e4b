//! The import spool's folders, `DATA_DIR/imports/`:
//!
//! | path | what |
//! |---|---|
//! | `incoming/ID.json` | a job handed in ([`super::Job`], state `queued`) |
//! | `incoming/ID.data` | its export file, moved in before the job |
//! | `ID.json` | a job the server took: its progress, rewritten after every step |
//! | `ID.data` | the export it imports, removed once it is done |
//!
//! Whoever hands a job in (`spindle listens import` beside a running
//! server, the admin page's upload) writes the data first and the job
//! last, each under a temporary name (starting with `.`) renamed into
//! place, so the server never takes half a job. The server's task
//! ([`super::worker`]) takes what is in `incoming/` every second.
//!
//! Exports hold a user's whole listening history: the folders are made
//! mode 0700 and the files 0600 ([`DIR_MODE`], [`FILE_MODE`]).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::job::{valid_id, Job};

/// The spool's folder under the data dir.
pub const IMPORTS_DIR: &str = "imports";
/// Where jobs are handed in, under [`IMPORTS_DIR`].
pub const INCOMING_DIR: &str = "incoming";

/// The mode of the spool's folders: the owner's only.
pub const DIR_MODE: u32 = 0o700;
/// The mode of the spool's files: the owner's only.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and its missing parents, mode [`DIR_MODE`].
pub fn make_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// Creates (or truncates) `path`, mode [`FILE_MODE`] when new.
pub fn create_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
}

/// The spool of one data dir. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Spool {
    root: PathBuf,
}

impl Spool {
    /// The spool of `data_dir` (nothing is created yet).
    pub fn new(data_dir: &Path) -> Spool {
        Spool {
            root: data_dir.join(IMPORTS_DIR),
        }
    }

    /// `DATA_DIR/imports/incoming`.
    pub fn incoming(&self) -> PathBuf {
        self.root.join(INCOMING_DIR)
    }

    /// A taken job's progress file.
    pub fn job_path(&self, id: &str) -> PathBuf {
        self.root.join(format!("{id}.json"))
    }

    /// A taken job's export file.
    pub fn data_path(&self, id: &str) -> PathBuf {
        self.root.join(format!("{id}.data"))
    }

    /// Where an upload is written while it arrives; [`Spool::hand_in_part`]
    /// hands it in.
    pub fn part_path(&self, id: &str) -> std::io::Result<PathBuf> {
        make_dir(&self.incoming())?;
        Ok(self.incoming().join(format!(".{id}.part")))
    }

    /// Hands in `job` (a pull, or a file whose data is in place).
    pub fn hand_in(&self, job: &Job) -> std::io::Result<()> {
        let dir = self.incoming();
        make_dir(&dir)?;
        write_json(&dir, &format!("{}.json", job.id), job)
    }

    /// Hands in `job` with a copy of the export `file`.
    pub fn hand_in_file(&self, job: &Job, file: &Path) -> std::io::Result<()> {
        let part = self.part_path(&job.id)?;
        let copied = std::fs::File::open(file)
            .and_then(|mut from| std::io::copy(&mut from, &mut create_file(&part)?));
        if let Err(e) = copied {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
        self.hand_in_part(job, &part)
    }

    /// Places `job` as taken, with a copy of the export `file` beside it:
    /// for a job run here, the server being stopped.
    pub fn place_file(&self, job: &Job, file: &Path) -> std::io::Result<()> {
        make_dir(&self.root)?;
        let data = self.data_path(&job.id);
        let copied = std::fs::File::open(file)
            .and_then(|mut from| std::io::copy(&mut from, &mut create_file(&data)?));
        if let Err(e) = copied {
            let _ = std::fs::remove_file(&data);
            return Err(e);
        }
        self.save(job)
    }

    /// Hands in `job` with the export at `part` (from [`Spool::part_path`]).
    pub fn hand_in_part(&self, job: &Job, part: &Path) -> std::io::Result<()> {
        std::fs::File::open(part)?.sync_all()?;
        std::fs::rename(part, self.incoming().join(format!("{}.data", job.id)))?;
        self.hand_in(job)
    }

    /// Saves a taken job's progress.
    pub fn save(&self, job: &Job) -> std::io::Result<()> {
        make_dir(&self.root)?;
        write_json(&self.root, &format!("{}.json", job.id), job)
    }

    /// The job `id`, taken or still handed in; `None` if there is none.
    pub fn read(&self, id: &str) -> std::io::Result<Option<Job>> {
        if !valid_id(id) {
            return Ok(None);
        }
        for path in [
            self.job_path(id),
            self.incoming().join(format!("{id}.json")),
        ] {
            match std::fs::read(&path) {
                Ok(b) => {
                    return serde_json::from_slice(&b)
                        .map(Some)
                        .map_err(bad_json(&path))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Takes every handed-in job: its data moves beside it and its
    /// progress file is written (state unchanged, `queued`). A job file
    /// that does not parse is renamed `ID.json.bad` and logged.
    pub fn take_incoming(&self) -> std::io::Result<Vec<Job>> {
        let mut taken = Vec::new();
        for id in json_ids(&self.incoming())? {
            let path = self.incoming().join(format!("{id}.json"));
            let data = self.incoming().join(format!("{id}.data"));
            if self.job_path(&id).exists() {
                // Taken before a crash cut the hand-over short.
                std::fs::remove_file(&path)?;
                continue;
            }
            let mut job: Job = match std::fs::read(&path)
                .and_then(|b| serde_json::from_slice(&b).map_err(bad_json(&path)))
            {
                Ok(j) => j,
                Err(e) => {
                    tracing::warn!("import job {}: {e}; renamed .bad", path.display());
                    std::fs::rename(&path, path.with_extension("json.bad"))?;
                    continue;
                }
            };
            job.id = id.clone();
            if data.exists() {
                std::fs::rename(&data, self.data_path(&id))?;
            }
            self.save(&job)?;
            std::fs::remove_file(&path)?;
            taken.push(job);
        }
        Ok(taken)
    }

    /// Every taken job not yet done or failed, oldest first (to resume
    /// at start).
    pub fn unfinished(&self) -> std::io::Result<Vec<Job>> {
        Ok(self
            .list()?
            .into_iter()
            .rev()
            .filter(|j| !j.state.finished())
            .collect())
    }

    /// Every taken job, newest first; one that does not parse is left out.
    pub fn list(&self) -> std::io::Result<Vec<Job>> {
        let mut jobs: Vec<Job> = json_ids(&self.root)?
            .iter()
            .filter_map(|id| std::fs::read(self.job_path(id)).ok())
            .filter_map(|b| serde_json::from_slice(&b).ok())
            .collect();
        jobs.sort_by(|a: &Job, b: &Job| (b.created, &b.id).cmp(&(a.created, &a.id)));
        Ok(jobs)
    }

    /// Removes the partial uploads (`incoming/.ID.part`) a crash left;
    /// returns how many. Call at start, before anything uploads.
    pub fn remove_stale_parts(&self) -> std::io::Result<usize> {
        let rd = match std::fs::read_dir(self.incoming()) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut removed = 0;
        for entry in rd {
            let name = entry?.file_name();
            let Some(n) = name.to_str() else { continue };
            if n.starts_with('.') && n.ends_with(".part") {
                std::fs::remove_file(self.incoming().join(n))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes a job's export once it is imported, or failed.
    pub fn remove_data(&self, id: &str) {
        if let Err(e) = std::fs::remove_file(self.data_path(id)) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(
                    "removing the imported {}: {e}",
                    self.data_path(id).display()
                );
            }
        }
    }
}

fn bad_json(path: &Path) -> impl Fn(serde_json::Error) -> std::io::Error + '_ {
    move |e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    }
}

/// The ids of the `ID.json` files in `dir` (none if it does not exist).
pub fn json_ids(dir: &Path) -> std::io::Result<Vec<String>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut ids = Vec::new();
    for entry in rd {
        let name = entry?.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if valid_id(id) {
            ids.push(id.to_owned());
        }
    }
    ids.sort();
    Ok(ids)
}

/// Writes `value` as `dir/name` through a temporary file renamed over it.
pub fn write_json<T: serde::Serialize>(dir: &Path, name: &str, value: &T) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = create_file(&tmp)?;
    serde_json::to_writer_pretty(&mut f, value).map_err(std::io::Error::other)?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::job::{JobState, Source};

    #[test]
    fn a_handed_in_file_is_taken_once_with_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path());
        let export = dir.path().join("export.log");
        std::fs::write(&export, "#AUDIOSCROBBLER/1.1\n").unwrap();
        let job = Job::new(
            "ann",
            Source::File {
                name: "export.log".into(),
            },
            10,
        );
        spool.hand_in_file(&job, &export).unwrap();
        assert_eq!(
            spool.read(&job.id).unwrap().unwrap().state,
            JobState::Queued
        );
        let taken = spool.take_incoming().unwrap();
        assert_eq!(taken, vec![job.clone()]);
        assert!(spool.data_path(&job.id).exists());
        assert!(spool.take_incoming().unwrap().is_empty());
        assert_eq!(spool.unfinished().unwrap(), vec![job]);
    }

    #[test]
    fn the_spool_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path());
        let export = dir.path().join("export.log");
        std::fs::write(&export, "#AUDIOSCROBBLER/1.1\n").unwrap();
        std::fs::set_permissions(&export, std::fs::Permissions::from_mode(0o644)).unwrap();
        let job = Job::new("ann", Source::File { name: "x".into() }, 10);
        spool.hand_in_file(&job, &export).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join(IMPORTS_DIR)), 0o700);
        assert_eq!(mode(&spool.incoming()), 0o700);
        let data = spool.incoming().join(format!("{}.data", job.id));
        assert_eq!(mode(&data), 0o600);
        assert_eq!(
            mode(&spool.incoming().join(format!("{}.json", job.id))),
            0o600
        );
        spool.take_incoming().unwrap();
        assert_eq!(mode(&spool.job_path(&job.id)), 0o600);
        assert_eq!(mode(&spool.data_path(&job.id)), 0o600);
    }

    #[test]
    fn partial_uploads_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path());
        assert_eq!(spool.remove_stale_parts().unwrap(), 0);
        let part = spool.part_path("1-abc").unwrap();
        std::fs::write(&part, "half").unwrap();
        let kept = spool.incoming().join("2-def.data");
        std::fs::write(&kept, "whole").unwrap();
        assert_eq!(spool.remove_stale_parts().unwrap(), 1);
        assert!(!part.exists());
        assert!(kept.exists());
    }

    #[test]
    fn a_job_file_that_does_not_parse_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path());
        std::fs::create_dir_all(spool.incoming()).unwrap();
        std::fs::write(spool.incoming().join("1-bad.json"), "{").unwrap();
        assert!(spool.take_incoming().unwrap().is_empty());
        assert!(spool.incoming().join("1-bad.json.bad").exists());
    }
}
