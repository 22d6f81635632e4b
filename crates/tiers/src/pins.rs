//! Saved pins: query patterns whose tracks always stay hot. A text file,
//! `DATA/tiers/pins`, one pattern per line in the query language
//! (`rating>=4`, `artist:Low`); blank lines and lines starting with `#`
//! are ignored. The server re-reads it when it changes and evaluates each
//! pattern against the library; the CLI (`spindle tiers pin`) edits it.

use std::path::{Path, PathBuf};

/// The pins file of a data dir.
pub fn pins_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tiers").join("pins")
}

/// The saved patterns, in order.
pub fn load(path: &Path) -> std::io::Result<Vec<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn save(path: &Path, pins: &[String]) -> std::io::Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    let mut text = String::from("# Spindle hot-tier pins: one query pattern per line.\n");
    for p in pins {
        text.push_str(p);
        text.push('\n');
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Adds `pattern` (once); returns whether it was new. Patterns hold no
/// newline.
pub fn add(path: &Path, pattern: &str) -> std::io::Result<bool> {
    let pattern = pattern.trim();
    if pattern.is_empty() || pattern.contains(['\n', '\r']) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a pin is one non-empty line",
        ));
    }
    let mut pins = load(path)?;
    if pins.iter().any(|p| p == pattern) {
        return Ok(false);
    }
    pins.push(pattern.to_owned());
    save(path, &pins)?;
    Ok(true)
}

/// Removes `pattern`, or the pin numbered `pattern` (1-based, as
/// `--list` prints); returns the removed pattern.
pub fn remove(path: &Path, pattern: &str) -> std::io::Result<Option<String>> {
    let mut pins = load(path)?;
    let at = pins.iter().position(|p| p == pattern.trim()).or_else(|| {
        pattern
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n >= 1 && n <= pins.len())
            .map(|n| n - 1)
    });
    let Some(i) = at else {
        return Ok(None);
    };
    let gone = pins.remove(i);
    save(path, &pins)?;
    Ok(Some(gone))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_added_once_listed_and_removed_by_text_or_number() {
        let d = tempfile::tempdir().unwrap();
        let p = pins_path(d.path());
        assert!(load(&p).unwrap().is_empty());
        assert!(add(&p, "rating>=4").unwrap());
        assert!(!add(&p, " rating>=4 ").unwrap());
        assert!(add(&p, "artist:Low").unwrap());
        assert!(add(&p, "a\nb").is_err());
        assert_eq!(load(&p).unwrap(), ["rating>=4", "artist:Low"]);
        assert_eq!(remove(&p, "2").unwrap().as_deref(), Some("artist:Low"));
        assert_eq!(remove(&p, "nope").unwrap(), None);
        assert_eq!(
            remove(&p, "rating>=4").unwrap().as_deref(),
            Some("rating>=4")
        );
        assert!(load(&p).unwrap().is_empty());
    }
}
