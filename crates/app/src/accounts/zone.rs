//! A user's time zone: where their "today" and their daily charts begin
//! and end. An IANA name (`Europe/Paris`), checked against the time zone
//! database when set (the system's zoneinfo, else the copy built into
//! the binary); no zone set means UTC, the day the listening history's
//! buckets and the Last.fm and ListenBrainz APIs count in, so a user who
//! never sets one sees what Spindle always showed.

use jiff::tz::TimeZone;

use super::{AccountError, Accounts};

/// The zone of a user who set none.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Checks an IANA time zone name; `Err` names it back.
pub fn parse_time_zone(name: &str) -> Result<TimeZone, AccountError> {
    let name = name.trim();
    if name.is_empty() || name.len() > 64 {
        return Err(AccountError::UnknownTimeZone(
            name.chars().take(64).collect(),
        ));
    }
    TimeZone::get(name).map_err(|_| AccountError::UnknownTimeZone(name.into()))
}

impl Accounts {
    /// The user's time zone name as set, or `None` (UTC).
    pub fn time_zone_name(&self, name: &str) -> Option<String> {
        self.lookup(|d| {
            let u = d.users.get(name)?;
            (!u.timezone.is_empty()).then(|| u.timezone.clone())
        })
    }

    /// The user's time zone: the one set, else UTC (also for no such
    /// user, and for a name the database no longer knows).
    pub fn time_zone(&self, name: &str) -> TimeZone {
        self.time_zone_name(name)
            .and_then(|tz| TimeZone::get(&tz).ok())
            .unwrap_or(TimeZone::UTC)
    }

    /// Sets the user's time zone (an IANA name, checked); an empty name
    /// goes back to UTC.
    pub fn set_time_zone(&self, name: &str, zone: &str) -> Result<(), AccountError> {
        let zone = zone.trim();
        if !zone.is_empty() {
            parse_time_zone(zone)?;
        }
        self.change(|d| {
            let u = d
                .users
                .get_mut(name)
                .ok_or_else(|| AccountError::NoSuchUser(name.into()))?;
            u.timezone = zone.to_owned();
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_without_a_zone_counts_in_utc() {
        let dir = tempfile::tempdir().unwrap();
        let a = Accounts::open(dir.path()).unwrap();
        a.add_user_cheaply("ann", "pw");
        assert_eq!(a.time_zone_name("ann"), None);
        assert_eq!(a.time_zone("ann"), TimeZone::UTC);
        assert_eq!(a.time_zone("nobody"), TimeZone::UTC);
    }

    #[test]
    fn an_iana_zone_is_kept_across_a_reopen_and_a_bad_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let a = Accounts::open(dir.path()).unwrap();
            a.add_user_cheaply("ann", "pw");
            a.set_time_zone("ann", "Europe/Paris").unwrap();
            for bad in [
                "Mars/Olympus_Mons",
                "Europe/Pariss",
                "+25:00",
                "../../etc/passwd",
            ] {
                assert!(
                    matches!(
                        a.set_time_zone("ann", bad),
                        Err(AccountError::UnknownTimeZone(ref n)) if n == bad
                    ),
                    "{bad}"
                );
            }
            assert!(matches!(
                a.set_time_zone("nobody", "UTC"),
                Err(AccountError::NoSuchUser(_))
            ));
        }
        let a = Accounts::open(dir.path()).unwrap();
        assert_eq!(a.time_zone_name("ann").as_deref(), Some("Europe/Paris"));
        let paris = a.time_zone("ann");
        // 2023-11-14 23:30 UTC is already the 15th in Paris.
        let ts = jiff::Timestamp::from_second(1_700_004_600).unwrap();
        assert_eq!(
            paris.to_datetime(ts).date(),
            jiff::civil::date(2023, 11, 15)
        );
        a.set_time_zone("ann", "").unwrap();
        assert_eq!(a.time_zone_name("ann"), None, "empty: back to UTC");
    }
}
