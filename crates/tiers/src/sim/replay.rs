//! Reading the server's access log (format in `docs/tiers-policy.md`):
//! one stream request a line, `unix_ms<TAB>track_id<TAB>file_bytes`,
//! optionally `<TAB>sent_bytes`; blank lines and lines starting with `#`
//! are skipped.

use std::collections::HashMap;
use std::io::BufRead;

use super::workload::Trace;

/// An access log that cannot be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error("reading the access log: {0}")]
    Io(#[from] std::io::Error),
    #[error("access log line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("the access log has no requests")]
    Empty,
}

/// One parsed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLine {
    pub unix_ms: u64,
    pub track: u64,
    pub file_bytes: u64,
    pub sent_bytes: Option<u64>,
}

/// Parses one line; `Ok(None)` for blank and comment lines.
pub fn parse_line(line: &str) -> Result<Option<LogLine>, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let fields: Vec<&str> = line.split('\t').collect();
    if !(3..=4).contains(&fields.len()) {
        return Err(format!(
            "expected 3 or 4 tab-separated fields (unix_ms, track_id, file_bytes[, sent_bytes]), found {}",
            fields.len()
        ));
    }
    let num = |i: usize, what: &str| -> Result<u64, String> {
        fields[i].parse::<u64>().map_err(|_| {
            format!(
                "field {} ({what}) is not a whole number: {:?}",
                i + 1,
                fields[i]
            )
        })
    };
    Ok(Some(LogLine {
        unix_ms: num(0, "unix_ms")?,
        track: num(1, "track_id")?,
        file_bytes: num(2, "file_bytes")?,
        sent_bytes: if fields.len() == 4 {
            Some(num(3, "sent_bytes")?)
        } else {
            None
        },
    }))
}

/// Reads a whole access log into a trace. A track's size is the largest
/// `file_bytes` logged for it.
pub fn read(r: impl BufRead) -> Result<Trace, ReplayError> {
    let mut dense: HashMap<u64, u32> = HashMap::new();
    let mut sizes = Vec::new();
    let mut ids = Vec::new();
    let mut sent = Vec::new();
    let mut any_sent = false;
    for (n, line) in r.lines().enumerate() {
        let line = line?;
        let Some(l) = parse_line(&line).map_err(|message| ReplayError::Parse {
            line: n + 1,
            message,
        })?
        else {
            continue;
        };
        let next = sizes.len() as u32;
        let d = *dense.entry(l.track).or_insert(next);
        if d == next {
            sizes.push(l.file_bytes);
        } else {
            let s = &mut sizes[d as usize];
            *s = (*s).max(l.file_bytes);
        }
        ids.push(d);
        any_sent |= l.sent_bytes.is_some();
        sent.push(l.sent_bytes.unwrap_or(l.file_bytes));
    }
    if ids.is_empty() {
        return Err(ReplayError::Empty);
    }
    Ok(Trace {
        workload: "replay".into(),
        exponent: None,
        ids,
        sizes,
        sent: any_sent.then_some(sent),
        popularity: None,
        history: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lines_with_and_without_sent_bytes() {
        let log = "# spindle access log\n1700000000000\t42\t5000000\n\n1700000000500\t7\t3000000\t65536\n1700000001000\t42\t5000000\n";
        let t = read(log.as_bytes()).unwrap();
        assert_eq!(t.ids, vec![0, 1, 0]);
        assert_eq!(t.sizes, vec![5_000_000, 3_000_000]);
        assert_eq!(t.sent, Some(vec![5_000_000, 65_536, 5_000_000]));
    }

    #[test]
    fn names_the_line_and_field_of_a_bad_line() {
        let err = read("1\t2\t3\n1\tx\t3\n".as_bytes()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "access log line 2: field 2 (track_id) is not a whole number: \"x\""
        );
        let err = read("1 2 3\n".as_bytes()).unwrap_err();
        assert!(err.to_string().contains("found 1"), "{err}");
        assert!(matches!(
            read("# nothing\n".as_bytes()),
            Err(ReplayError::Empty)
        ));
    }
}
