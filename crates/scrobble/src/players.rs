//! Several players at once: one [`Session`] per player, keyed by the
//! player's well-known bus name.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::clock::Now;
use crate::session::{Action, Event, PlayView, Rules, Session};

/// The sessions of every player seen.
#[derive(Debug, Default)]
pub struct Players {
    rules: Rules,
    sessions: BTreeMap<String, Session>,
}

impl Players {
    pub fn new(rules: Rules) -> Players {
        Players {
            rules,
            sessions: BTreeMap::new(),
        }
    }

    /// Feeds `player`'s event; a vanished player is forgotten.
    pub fn handle(&mut self, player: &str, ev: Event, now: Now) -> Vec<Action> {
        let vanished = ev == Event::Vanished;
        if vanished && !self.sessions.contains_key(player) {
            return Vec::new();
        }
        let rules = self.rules;
        let s = self
            .sessions
            .entry(player.to_owned())
            .or_insert_with(|| Session::new(rules));
        let out = s.handle(ev, now);
        if vanished {
            self.sessions.remove(player);
        }
        out
    }

    /// Polls every player whose deadline has passed.
    pub fn poll(&mut self, now: Now) -> Vec<(String, Action)> {
        let mut out = Vec::new();
        for (name, s) in &mut self.sessions {
            if s.next_deadline().is_some_and(|d| d <= now.mono) {
                out.extend(s.poll(now).into_iter().map(|a| (name.clone(), a)));
            }
        }
        out
    }

    /// The earliest deadline of any player.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.sessions
            .values()
            .filter_map(Session::next_deadline)
            .min()
    }

    /// The players and their current plays.
    pub fn view(&self, now: Now) -> Vec<(String, Option<PlayView>)> {
        self.sessions
            .iter()
            .map(|(n, s)| (n.clone(), s.view(now)))
            .collect()
    }

    pub fn session(&self, player: &str) -> Option<&Session> {
        self.sessions.get(player)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Status;
    use crate::track::Track;

    fn at(t: f64) -> Now {
        Now {
            mono: Duration::from_secs_f64(t),
            unix: 1_700_000_000.0 + t,
        }
    }

    fn meta(title: &str, len: u64) -> Event {
        Event::Metadata(Some(Track {
            title: title.into(),
            artists: vec!["X".into()],
            length: Some(Duration::from_secs(len)),
            ..Track::default()
        }))
    }

    fn titles(acts: &[(String, Action)]) -> Vec<String> {
        acts.iter()
            .map(|(p, a)| match a {
                Action::NowPlaying(t) => format!("{p} np {}", t.title),
                Action::Scrobble { track, started } => {
                    format!("{p} scrobble {} @{}", track.title, started - 1_700_000_000)
                }
            })
            .collect()
    }

    #[test]
    fn two_players_keep_their_own_plays() {
        let mut ps = Players::new(Rules::default());
        let mut all: Vec<(String, Action)> = Vec::new();
        let script = [
            (0.0, "mpv", Event::Status(Status::Playing)),
            (0.0, "mpv", meta("A", 100)),
            (10.0, "vlc", Event::Status(Status::Playing)),
            (10.0, "vlc", meta("B", 60)),
            (20.0, "mpv", Event::Status(Status::Paused)),
        ];
        for (t, p, ev) in script {
            all.extend(
                ps.handle(p, ev, at(t))
                    .into_iter()
                    .map(|a| (p.to_owned(), a)),
            );
        }
        // vlc's deadline (30 s listened, at t=40) comes first; paused mpv has none.
        assert_eq!(ps.next_deadline(), Some(Duration::from_secs(40)));
        all.extend(ps.poll(at(40.0)));
        assert_eq!(
            ps.next_deadline(),
            Some(Duration::from_secs(70)),
            "vlc's now-playing refresh"
        );
        all.extend(
            ps.handle("mpv", Event::Status(Status::Playing), at(100.0))
                .into_iter()
                .map(|a| ("mpv".to_owned(), a)),
        );
        // mpv had 20 s; it needs 30 more.
        all.extend(ps.poll(at(129.0)));
        all.extend(ps.poll(at(130.0)));
        let t: Vec<String> = titles(&all)
            .into_iter()
            .filter(|l| l.contains("scrobble"))
            .collect();
        assert_eq!(t, vec!["vlc scrobble B @10", "mpv scrobble A @0"]);
    }

    #[test]
    fn a_vanished_player_is_forgotten_after_its_scrobble() {
        let mut ps = Players::new(Rules::default());
        ps.handle("mpv", Event::Status(Status::Playing), at(0.0));
        ps.handle("mpv", meta("A", 100), at(0.0));
        let out = ps.handle("mpv", Event::Vanished, at(70.0));
        assert!(
            matches!(
                &out[..],
                [Action::Scrobble {
                    started: 1_700_000_000,
                    ..
                }]
            ),
            "{out:?}"
        );
        assert!(ps.session("mpv").is_none());
        assert_eq!(ps.next_deadline(), None);
        assert!(ps.handle("gone", Event::Vanished, at(71.0)).is_empty());
    }
}
