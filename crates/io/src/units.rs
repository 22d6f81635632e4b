//! Sizes and durations as people type them: `4k`, `1G`, `512MiB`, `5s`,
//! `500ms`, `1m`.

use std::time::Duration;

/// Parses a size in bytes with an optional binary suffix (`k`, `m`, `g`,
/// `t`, optionally followed by `i`/`b`/`ib`, any case): `4k` is 4096.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits);
    if num.is_empty() {
        return Err(format!("'{s}' is not a size; expected e.g. 4k, 64M or 1G"));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is too large a size"))?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" | "ki" => 10,
        "m" | "mb" | "mib" | "mi" => 20,
        "g" | "gb" | "gib" | "gi" => 30,
        "t" | "tb" | "tib" | "ti" => 40,
        _ => {
            return Err(format!(
                "'{s}' has an unknown unit '{suffix}'; use k, M, G or T (powers of 1024)"
            ))
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}' is too large a size"))
}

/// Parses a duration: a number with `ms`, `s`, `m` or `h` (no unit means
/// seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration; expected e.g. 500ms, 5s or 1m"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "'{s}' has an unknown unit '{unit}'; use ms, s, m or h"
            ))
        }
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("'{s}' must be a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats bytes with a binary unit: `4 KiB`, `1 GiB`, `1.5 MiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_powers_of_1024() {
        let table = [
            ("4k", 4096),
            ("4K", 4096),
            ("1G", 1 << 30),
            ("512MiB", 512 << 20),
            ("100", 100),
            ("2t", 2 << 40),
        ];
        for (s, want) in table {
            assert_eq!(parse_size(s), Ok(want), "{s}");
        }
        assert!(parse_size("4x").unwrap_err().contains("unknown unit"));
        assert!(parse_size("k").is_err());
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn sizes_format_readably() {
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(1 << 30), "1 GiB");
        assert_eq!(format_size(1536 << 10), "1.5 MiB");
    }
}
