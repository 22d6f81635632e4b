//! The crate's errors: one enum per operation whose callers react
//! differently (setting an engine up, submitting a request, waiting,
//! benchmarking).

use std::io;
use std::path::PathBuf;

/// Setting up an engine or registering a file failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// io_uring could not be set up: an old kernel, `kernel.io_uring_disabled`,
    /// or a seccomp filter (containers often block it).
    #[error(
        "io_uring is unavailable here ({source}); the kernel may be older than 5.6, \
         io_uring may be disabled by the sysctl kernel.io_uring_disabled, or a seccomp \
         filter may block it. Use the psync engine instead"
    )]
    UringUnavailable {
        #[source]
        source: io::Error,
    },
    /// io_uring was switched off by configuration.
    #[error("io_uring is disabled ({reason}); using it was not allowed")]
    UringDisabled { reason: String },
    /// SQPOLL could not be set up (before Linux 5.11 it needs CAP_SYS_NICE).
    #[error("io_uring SQPOLL could not be set up ({source}); before Linux 5.11 it needs CAP_SYS_NICE. Use the uring engine without SQPOLL")]
    SqpollUnavailable {
        #[source]
        source: io::Error,
    },
    /// A depth or buffer size out of range.
    #[error("invalid engine configuration: {0}")]
    Config(String),
    /// The engine's registered-file table is full.
    #[error("the engine already has {capacity} files registered; raise EngineConfig::max_files")]
    TooManyFiles { capacity: u32 },
    /// Opening a file failed.
    #[error("cannot open {path}: {source}{hint}")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
        /// Extra advice, e.g. about O_DIRECT on tmpfs.
        hint: &'static str,
    },
    /// Registering a file with io_uring failed.
    #[error("registering a file with io_uring failed: {source}")]
    Register {
        #[source]
        source: io::Error,
    },
}

/// A request was refused before it reached the disk.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubmitError {
    /// O_DIRECT needs offset, length (and buffer, which the engine aligns)
    /// to be multiples of the alignment.
    #[error("O_DIRECT needs offset and length aligned to {align} bytes; got offset {offset}, length {len}")]
    Misaligned {
        align: usize,
        offset: u64,
        len: usize,
    },
    /// The request is longer than the engine's buffers.
    #[error("a request of {len} bytes does not fit the engine's {buf_size}-byte buffers; raise EngineConfig::buf_size")]
    TooLong { len: usize, buf_size: usize },
    /// A zero-length request.
    #[error("a request of 0 bytes does nothing; ask for at least one block")]
    Empty,
    /// The slot is out of range.
    #[error("slot {slot} does not exist; the engine has {depth} slots (its depth)")]
    NoSuchSlot { slot: usize, depth: usize },
    /// The slot already has a request in flight.
    #[error("slot {slot} already has a request in flight; wait for its completion first")]
    SlotBusy { slot: usize },
    /// The file id was never registered.
    #[error("file id {id} is not registered with this engine")]
    UnknownFile { id: u32 },
    /// A file removed while a request on it is in flight.
    #[error("file id {id} has a request in flight; wait for it before removing the file")]
    FileBusy { id: u32 },
    /// A write to a file registered read-only.
    #[error("file id {id} was registered read-only; writes to it are refused")]
    ReadOnly { id: u32 },
    /// The kernel refused to take the request.
    #[error("submitting to the kernel failed: {message}")]
    Kernel { message: String },
}

/// Waiting for completions failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// `io_uring_enter` failed.
    #[error("waiting for io_uring completions failed: {source}")]
    Enter {
        #[source]
        source: io::Error,
    },
}

/// The benchmark could not run or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// Invalid settings.
    #[error("{0}")]
    Config(String),
    /// The test file could not be created.
    #[error("cannot create the test file in {dir}: {source}; pass a writable directory, or an existing file or device with --device-readonly")]
    CreateTestFile {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file or device to read is shorter than asked.
    #[error("{path} holds {actual} bytes, shorter than the {wanted} bytes asked for (--size); pass a smaller --size or leave it out to use the whole file")]
    TooShort {
        path: PathBuf,
        actual: u64,
        wanted: u64,
    },
    /// An engine could not be set up.
    #[error("engine {engine}: {source}")]
    Setup {
        engine: &'static str,
        #[source]
        source: SetupError,
    },
    /// A request was refused.
    #[error("engine {engine}: {source}")]
    Submit {
        engine: &'static str,
        #[source]
        source: SubmitError,
    },
    /// Waiting failed.
    #[error("engine {engine}: {source}")]
    Wait {
        engine: &'static str,
        #[source]
        source: WaitError,
    },
    /// An IO failed or came back short during the run.
    #[error("engine {engine}: {op} of {len} bytes at offset {offset} {what}")]
    Io {
        engine: &'static str,
        op: &'static str,
        offset: u64,
        len: usize,
        what: String,
    },
    /// fio is not installed.
    #[error("fio was not found ({source}); install it (Debian: apt-get install fio) or run without --fio")]
    FioMissing {
        #[source]
        source: io::Error,
    },
    /// fio ran but failed.
    #[error("fio failed ({status}): {stderr}")]
    FioFailed { status: String, stderr: String },
    /// fio's JSON output could not be understood.
    #[error("cannot parse fio's JSON output: {0}")]
    FioParse(String),
    /// Writing the chart failed.
    #[error("writing the chart {path}: {source}")]
    Chart {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Drawing the PNG chart failed.
    #[error("rendering the PNG chart: {0}")]
    ChartRender(String),
    /// Other IO (reading sysfs, the test file).
    #[error("{context}: {source}")]
    Other {
        context: String,
        #[source]
        source: io::Error,
    },
}
