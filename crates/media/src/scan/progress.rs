//! How a scan tells its caller what it is doing. The library knows no
//! terminal: the binary draws a progress bar or prints log lines from
//! these calls.

use std::path::Path;

/// The stages of a scan, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Walking the folders and comparing size and mtime with the library.
    Walking,
    /// Reading the tags of `total` new or changed files.
    Reading { total: u64 },
    /// Marking or removing the entries of files that are gone.
    Finishing,
}

/// Receives a scan's progress. Called from the scanning thread only
/// (tags are read in parallel, but reported in order).
pub trait ScanObserver {
    /// A new phase begins.
    fn phase(&mut self, _phase: Phase) {}
    /// `n` more files of the current phase are done.
    fn advance(&mut self, _n: u64) {}
    /// A file could not be read; the scan goes on.
    fn failed(&mut self, _path: &Path, _reason: &str) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl ScanObserver for Quiet {}
