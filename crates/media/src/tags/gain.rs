//! ReplayGain values as tags write them, and Opus's R128 gains turned into
//! ReplayGain.
//!
//! ReplayGain tags hold text such as `-6.48 dB` (gain) or `0.988556`
//! (peak, a linear sample value where 1.0 is full scale). Opus files carry
//! `R128_TRACK_GAIN`/`R128_ALBUM_GAIN` instead (RFC 7845 §5.2.1): an integer
//! in Q7.8 fixed point (1/256 dB) relative to -23 LUFS (EBU R128), where
//! ReplayGain 2's reference is -18 LUFS, so the ReplayGain gain is the R128
//! gain plus 5 dB.

/// How many dB louder ReplayGain's reference level (-18 LUFS) is than
/// R128's (-23 LUFS).
pub const R128_TO_REPLAYGAIN_DB: f64 = 5.0;

/// The most a gain may be, either way, in dB, before it is taken for
/// garbage (a tagger's -inf or a misread field).
pub const MAX_GAIN_DB: f64 = 64.0;

/// The highest peak accepted (32-bit float audio can exceed 1.0; a peak
/// of 100 is nonsense).
pub const MAX_PEAK: f64 = 100.0;

/// The number of `text`, read as a ReplayGain tag writes it: a decimal
/// with an optional sign and unit (`-6.48 dB`, `+1.2dB`, `0.98`); a comma
/// as decimal separator is accepted.
fn number(text: &str) -> Option<f64> {
    let t = text.trim();
    let t = t
        .strip_suffix("dB")
        .or_else(|| t.strip_suffix("db"))
        .or_else(|| t.strip_suffix("DB"))
        .unwrap_or(t)
        .trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let v: f64 = t.replace(',', ".").parse().ok()?;
    v.is_finite().then_some(v)
}

/// A ReplayGain gain in dB.
pub fn parse_gain(text: &str) -> Option<f64> {
    number(text).filter(|g| g.abs() <= MAX_GAIN_DB)
}

/// A ReplayGain peak (linear, positive).
pub fn parse_peak(text: &str) -> Option<f64> {
    number(text).filter(|p| *p >= 0.0 && *p <= MAX_PEAK)
}

/// The ReplayGain gain (dB) of an R128 gain tag (Q7.8, relative to -23
/// LUFS).
pub fn r128_to_replaygain(text: &str) -> Option<f64> {
    let q: i32 = text.trim().parse().ok()?;
    let db = f64::from(q) / 256.0 + R128_TO_REPLAYGAIN_DB;
    (db.abs() <= MAX_GAIN_DB).then_some(db)
}

/// A gain as the store keeps it: dB with two decimals (`-6.48`).
pub fn format_gain(db: f64) -> String {
    format!("{db:.2}")
}

/// A peak as the store keeps it: six decimals (`0.988556`).
pub fn format_peak(p: f64) -> String {
    format!("{p:.6}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gains_read_with_units_signs_and_commas() {
        for (s, v) in [
            ("-6.48 dB", Some(-6.48)),
            ("+1.20 dB", Some(1.2)),
            ("2.5dB", Some(2.5)),
            ("-3,5 dB", Some(-3.5)),
            ("0", Some(0.0)),
            ("loud", None),
            ("-inf dB", None),
            ("900 dB", None),
        ] {
            assert_eq!(parse_gain(s), v, "{s:?}");
        }
    }

    #[test]
    fn peaks_are_positive_linear_values() {
        assert_eq!(parse_peak("0.988556"), Some(0.988556));
        assert_eq!(parse_peak("1.2"), Some(1.2));
        assert_eq!(parse_peak("-0.5"), None);
        assert_eq!(parse_peak("nan"), None);
    }

    #[test]
    fn r128_gains_become_replaygain_five_db_louder() {
        // 0 dB relative to -23 LUFS is +5 dB relative to -18 LUFS.
        assert_eq!(r128_to_replaygain("0"), Some(5.0));
        // -2560/256 = -10 dB (R128) = -5 dB (ReplayGain).
        assert_eq!(r128_to_replaygain("-2560"), Some(-5.0));
        assert_eq!(r128_to_replaygain(" 384 "), Some(6.5));
        assert_eq!(r128_to_replaygain("-6.5"), None);
    }

    #[test]
    fn stored_forms_are_fixed_decimals() {
        assert_eq!(format_gain(-6.484), "-6.48");
        assert_eq!(format_gain(5.0), "5.00");
        assert_eq!(format_peak(0.98855612), "0.988556");
    }
}
