//! The data file: a full snapshot of the library, rewritten by
//! compaction to `<file>.tmp` and renamed over the old one.
//!
//! ```text
//! header : magic "SPNDLDAT" | version u32 | generation u64 | crc32 u32
//! chunk* : tag u8 | len u32 | payload | crc32(tag, len, payload) u32
//! ```
//!
//! Chunks, in order: KEYS, SOURCES, STRINGS (several), ENTRIES (several),
//! INDEXES, COLLECTIONS, END. See `docs/store-format.md` for payloads.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::codec::{Reader, Writer};
use crate::error::FormatError;
use crate::model::{Library, Prop, Val};

pub(crate) const DATA_MAGIC: &[u8; 8] = b"SPNDLDAT";
pub(crate) const DATA_VERSION: u32 = 1;
const HEADER_LEN: usize = 24;

const C_KEYS: u8 = 1;
const C_SOURCES: u8 = 2;
const C_STRINGS: u8 = 3;
const C_ENTRIES: u8 = 4;
const C_INDEXES: u8 = 5;
const C_COLLECTIONS: u8 = 6;
const C_END: u8 = 0xFF;

/// Target size of one chunk's payload.
const CHUNK_TARGET: usize = 1 << 20;

struct ChunkWriter<W: Write> {
    out: W,
    chunks: u64,
}

impl<W: Write> ChunkWriter<W> {
    fn chunk(&mut self, tag: u8, payload: &[u8]) -> std::io::Result<()> {
        let len = u32::try_from(payload.len())
            .map_err(|_| std::io::Error::other("chunk larger than 4 GiB"))?;
        let mut h = crc32fast::Hasher::new();
        h.update(&[tag]);
        h.update(&len.to_le_bytes());
        h.update(payload);
        self.out.write_all(&[tag])?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(payload)?;
        self.out.write_all(&h.finalize().to_le_bytes())?;
        self.chunks += 1;
        Ok(())
    }
}

/// Write the library as a data file at `path` (which should be a
/// temporary name), fsynced.
pub(crate) fn write(lib: &Library, generation: u64, path: &Path) -> std::io::Result<u64> {
    let file = crate::perms::create_file(path)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut h = Writer::new();
    h.raw(DATA_MAGIC);
    h.u32(DATA_VERSION);
    h.u64(generation);
    let crc = crc32fast::hash(h.as_slice());
    h.u32(crc);
    out.write_all(h.as_slice())?;
    let mut cw = ChunkWriter { out, chunks: 0 };

    // Renumber live strings, keys and sources densely, in first-use order.
    let mut str_map: HashMap<u32, u32> = HashMap::new();
    let mut strs: Vec<u32> = Vec::new();
    let mut key_map: HashMap<u32, u32> = HashMap::new();
    let mut keys: Vec<u32> = Vec::new();
    let mut src_map: HashMap<u16, u32> = HashMap::new();
    let mut srcs: Vec<u16> = Vec::new();
    for props in lib.entries.iter().flatten() {
        for p in props {
            key_map.entry(p.key).or_insert_with(|| {
                keys.push(p.key);
                keys.len() as u32 - 1
            });
            src_map.entry(p.src).or_insert_with(|| {
                srcs.push(p.src);
                srcs.len() as u32 - 1
            });
            if let Val::Str(s) = p.val {
                str_map.entry(s).or_insert_with(|| {
                    strs.push(s);
                    strs.len() as u32 - 1
                });
            }
        }
    }
    let mut w = Writer::new();
    w.varint(keys.len() as u64);
    for k in &keys {
        w.str(lib.keys.resolve(*k));
    }
    cw.chunk(C_KEYS, w.as_slice())?;
    w.clear();
    w.varint(srcs.len() as u64);
    for s in &srcs {
        w.str(lib.sources.resolve(u32::from(*s)));
    }
    cw.chunk(C_SOURCES, w.as_slice())?;

    let mut batch = Writer::with_capacity(CHUNK_TARGET + 4096);
    let mut count = 0u64;
    let flush = |cw: &mut ChunkWriter<_>, tag, batch: &mut Writer, count: &mut u64| {
        if *count == 0 {
            return Ok(());
        }
        let mut w = Writer::with_capacity(batch.len() + 10);
        w.varint(*count);
        w.raw(batch.as_slice());
        batch.clear();
        *count = 0;
        cw.chunk(tag, w.as_slice())
    };
    for s in &strs {
        batch.str(lib.strings.resolve(*s));
        count += 1;
        if batch.len() >= CHUNK_TARGET {
            flush(&mut cw, C_STRINGS, &mut batch, &mut count)?;
        }
    }
    flush(&mut cw, C_STRINGS, &mut batch, &mut count)?;

    let mut last_id = 0u32;
    let mut total_entries = 0u64;
    let mut total_props = 0u64;
    for (id, props) in lib.entries.iter().enumerate() {
        let Some(props) = props else { continue };
        let id = id as u32;
        // Ids are delta-encoded within a chunk.
        batch.varint(u64::from(id - last_id));
        last_id = id;
        batch.varint(props.len() as u64);
        for p in props {
            batch.varint(u64::from(key_map[&p.key]));
            batch.varint(u64::from(src_map[&p.src]));
            match p.val {
                Val::Int(i) => {
                    batch.u8(0);
                    batch.ivarint(i);
                }
                Val::Str(s) => {
                    batch.u8(1);
                    batch.varint(u64::from(str_map[&s]));
                }
            }
        }
        count += 1;
        total_entries += 1;
        total_props += props.len() as u64;
        if batch.len() >= CHUNK_TARGET {
            // A new chunk restarts the id deltas from 0.
            flush(&mut cw, C_ENTRIES, &mut batch, &mut count)?;
            last_id = 0;
        }
    }
    flush(&mut cw, C_ENTRIES, &mut batch, &mut count)?;

    w.clear();
    let idx = lib.indexed_keys();
    w.varint(idx.len() as u64);
    for k in &idx {
        w.str(k);
    }
    cw.chunk(C_INDEXES, w.as_slice())?;
    w.clear();
    w.varint(lib.collections.len() as u64);
    for (name, json) in &lib.collections {
        w.str(name);
        w.str(json);
    }
    cw.chunk(C_COLLECTIONS, w.as_slice())?;
    w.clear();
    w.u64(total_entries);
    w.u64(total_props);
    w.u64(cw.chunks);
    w.u32(lib.next_id());
    cw.chunk(C_END, w.as_slice())?;
    let out = cw.out.into_inner().map_err(|e| e.into_error())?;
    out.sync_all()?;
    Ok(out.metadata()?.len())
}

/// What opening a data file can fail with.
pub(crate) enum ReadError {
    Magic,
    Version(u32),
    Corrupt(String),
}

impl From<FormatError> for ReadError {
    fn from(e: FormatError) -> Self {
        ReadError::Corrupt(e.0)
    }
}

/// No limit on entry slots: the library's entry table has one 24-byte
/// slot per id up to the highest, and a real library needs all of them.
pub(crate) const NO_SLOT_LIMIT: u64 = 1 << 32;

/// The strings the STRINGS chunks declare, and their payload bytes: a
/// first pass over the chunk headers only. Stops quietly at anything
/// malformed; the real reading reports it.
fn string_totals(mut rest: &[u8]) -> (usize, usize) {
    let (mut n, mut bytes) = (0usize, 0usize);
    while rest.len() >= 5 {
        let len = u32::from_le_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let Some(payload) = rest.get(5..5usize.saturating_add(len)) else {
            break;
        };
        if rest[0] == C_STRINGS {
            if let Ok(count) = Reader::new(payload).varint() {
                n = n.saturating_add(usize::try_from(count).unwrap_or(usize::MAX));
                bytes = bytes.saturating_add(len);
            }
        }
        rest = rest.get(5 + len + 4..).unwrap_or(&[]);
    }
    (n, bytes)
}

/// Read a data file into a library (indexes are rebuilt by the caller).
/// Returns the library, the file's generation and the indexed keys.
///
/// `max_slots` bounds the entry table (ids and next id); the fuzz targets
/// pass a small one so a crafted file cannot ask for gigabytes.
pub(crate) fn read(bytes: &[u8], max_slots: u64) -> Result<(Library, u64, Vec<String>), ReadError> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != DATA_MAGIC {
        return Err(ReadError::Magic);
    }
    let mut r = Reader::new(&bytes[8..HEADER_LEN]);
    let version = r.fixed_u32()?;
    if version != DATA_VERSION {
        return Err(ReadError::Version(version));
    }
    let generation = r.fixed_u64()?;
    if r.fixed_u32()? != crc32fast::hash(&bytes[..20]) {
        return Err(ReadError::Corrupt("header checksum mismatch".into()));
    }
    let mut lib = Library::new();
    // Size the string table once: the STRINGS chunks say how many strings
    // they hold (a string takes at least one byte, which bounds what a
    // damaged count can ask for).
    let (nstrings, string_bytes) = string_totals(&bytes[HEADER_LEN..]);
    lib.strings.reserve(
        nstrings.saturating_add(nstrings / 4).min(bytes.len()),
        string_bytes.min(bytes.len()),
    );
    let mut keys: Vec<u32> = Vec::new();
    let mut srcs: Vec<u16> = Vec::new();
    let mut strs: Vec<u32> = Vec::new();
    let mut indexes = Vec::new();
    let mut pos = HEADER_LEN;
    let mut chunks = 0u64;
    let mut ended = false;
    // Ids ascend through the whole file (each ENTRIES chunk restarts its
    // deltas from 0, but not the order).
    let mut last_id = 0u32;
    while pos < bytes.len() {
        let truncated = || ReadError::Corrupt(format!("truncated chunk at offset {pos}"));
        let head = bytes.get(pos..pos + 5).ok_or_else(truncated)?;
        let tag = head[0];
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| (pos + 5).checked_add(l))
            .ok_or_else(truncated)?;
        let crc = bytes
            .get(end..end.saturating_add(4))
            .ok_or_else(truncated)?;
        let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32fast::hash(&bytes[pos..end]) != crc {
            return Err(ReadError::Corrupt(format!(
                "chunk checksum mismatch at offset {pos}"
            )));
        }
        let mut r = Reader::new(&bytes[pos + 5..end]);
        match tag {
            C_KEYS => {
                for _ in 0..r.varint()? {
                    keys.push(lib.keys.intern(r.str()?));
                }
            }
            C_SOURCES => {
                for _ in 0..r.varint()? {
                    let s = lib.sources.intern(r.str()?);
                    srcs.push(
                        u16::try_from(s)
                            .map_err(|_| ReadError::Corrupt("too many sources".into()))?,
                    );
                }
            }
            C_STRINGS => {
                let n = r.varint()?;
                // A string takes at least its one-byte length.
                strs.reserve(n.min(r.remaining() as u64) as usize);
                for _ in 0..n {
                    strs.push(lib.strings.intern(r.str()?));
                }
            }
            C_ENTRIES => {
                let n = r.varint()?;
                let mut id = 0u32;
                for _ in 0..n {
                    id = id
                        .checked_add(r.u32()?)
                        .ok_or_else(|| ReadError::Corrupt("entry id overflow".into()))?;
                    if id <= last_id {
                        return Err(ReadError::Corrupt(format!(
                            "entry {id} out of order (after {last_id})"
                        )));
                    }
                    if u64::from(id) >= max_slots {
                        return Err(ReadError::Corrupt(format!(
                            "entry id {id} exceeds the limit of {max_slots}"
                        )));
                    }
                    last_id = id;
                    let np = r.varint()?;
                    // A property takes at least four bytes.
                    let mut props = Vec::with_capacity(np.min(r.remaining() as u64 / 4) as usize);
                    for _ in 0..np {
                        let k = *keys
                            .get(r.varint()? as usize)
                            .ok_or_else(|| ReadError::Corrupt("bad key number".into()))?;
                        let s = *srcs
                            .get(r.varint()? as usize)
                            .ok_or_else(|| ReadError::Corrupt("bad source number".into()))?;
                        let val = match r.u8()? {
                            0 => Val::Int(r.ivarint()?),
                            1 => {
                                Val::Str(*strs.get(r.varint()? as usize).ok_or_else(|| {
                                    ReadError::Corrupt("bad string number".into())
                                })?)
                            }
                            t => return Err(ReadError::Corrupt(format!("bad value tag {t}"))),
                        };
                        props.push(Prop {
                            key: k,
                            src: s,
                            val,
                        });
                    }
                    props.sort_unstable();
                    props.dedup();
                    let i = id as usize;
                    if lib.entries.len() <= i {
                        lib.entries.resize_with(i + 1, || None);
                    }
                    lib.live += 1;
                    lib.props += props.len();
                    lib.entries[i] = Some(props);
                }
            }
            C_INDEXES => {
                for _ in 0..r.varint()? {
                    indexes.push(r.str()?.to_owned());
                }
            }
            C_COLLECTIONS => {
                for _ in 0..r.varint()? {
                    let name = r.str()?.to_owned();
                    let json = r.str()?.to_owned();
                    lib.collections.insert(name, json);
                }
            }
            C_END => {
                let entries = r.fixed_u64()?;
                let props = r.fixed_u64()?;
                let n = r.fixed_u64()?;
                let next_id = r.fixed_u32()?;
                if !r.is_empty() {
                    return Err(ReadError::Corrupt(
                        "trailing bytes in the end marker".into(),
                    ));
                }
                if entries != lib.live as u64 || props != lib.props as u64 || n != chunks {
                    return Err(ReadError::Corrupt(format!(
                        "end marker says {entries} entries, {props} properties, {n} chunks; read {}, {}, {chunks}",
                        lib.live, lib.props
                    )));
                }
                // Keep the slots of deleted entries at the end, so their
                // ids are not handed out again (a replayed log keeps them
                // the same way).
                let slots = u64::from(next_id).max(u64::from(last_id) + 1);
                if slots > max_slots {
                    return Err(ReadError::Corrupt(format!(
                        "next entry id {next_id} exceeds the limit of {max_slots}"
                    )));
                }
                lib.entries.resize_with(slots as usize, || None);
                ended = true;
                pos = end + 4;
                break;
            }
            t => return Err(ReadError::Corrupt(format!("unknown chunk tag {t}"))),
        }
        chunks += 1;
        pos = end + 4;
    }
    if !ended {
        return Err(ReadError::Corrupt(
            "data file ends before its end marker".into(),
        ));
    }
    if pos != bytes.len() {
        return Err(ReadError::Corrupt("bytes after the end marker".into()));
    }
    Ok((lib, generation, indexes))
}

/// Build the library's indexes for `keys`.
/// Indexes of different keys are built in parallel.
pub(crate) fn build_indexes(lib: &mut Library, keys: &[String]) {
    let key_ids: Vec<u32> = keys.iter().map(|k| lib.keys.intern(k)).collect();
    let shared: &Library = lib;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let built: Vec<(u32, crate::index::KeyIndex)> = std::thread::scope(|scope| {
        let chunks: Vec<Vec<u32>> = (0..threads)
            .map(|t| key_ids.iter().copied().skip(t).step_by(threads).collect())
            .collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|ks| {
                scope.spawn(move || {
                    ks.into_iter()
                        .map(|k| (k, crate::index::KeyIndex::build(shared, k)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    for (k, idx) in built {
        lib.indexes.insert(k, idx);
    }
}
