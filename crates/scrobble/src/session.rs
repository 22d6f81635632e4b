//! The play-session rules for one player, as a pure state machine.
//!
//! A [`Session`] is fed [`Event`]s (what the player signalled) with the
//! time they happened, and answers with [`Action`]s (send now playing,
//! scrobble this play). It does no I/O and reads no clock: the caller
//! passes a [`Now`] to every call and asks [`Session::next_deadline`]
//! when to call [`Session::poll`] again. While nothing plays there is no
//! deadline, so an idle daemon never wakes.
//!
//! The rules (Last.fm's, <https://www.last.fm/api/scrobbling>, applied to
//! what MPRIS players report):
//! - Listened time is the sum of time spent Playing, times Rate. Paused
//!   and stopped time never counts; a seek forward is not listening.
//! - A track longer than 30 s is scrobbled once it has been listened to
//!   for half its length or 4 minutes, whichever comes first. A track of
//!   30 s or less is never scrobbled. A track with no length follows
//!   [`NoLength`] (by default: after 4 minutes of listening).
//! - The scrobble's timestamp is when the play started.
//! - A new play starts on a new track, when a track playing with
//!   LoopStatus `Track` wraps past its end, and on a seek back to the
//!   start once the current play has been scrobbled (repeat-one).
//! - Now playing is sent when a play starts (once its metadata has a
//!   title and an artist) and again every minute while it plays.
//! - Duplicate metadata signals are ignored; incomplete metadata that is
//!   filled in within [`Rules::metadata_wait`] (or later, under the same
//!   track id) refines the same play.
//! - A player that vanishes has its listened time counted up to that
//!   moment, so a qualifying play is still scrobbled.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Now;
use crate::track::Track;

/// What happens to tracks whose length the player does not report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoLength {
    /// Scrobble after this much listening (default 240 s).
    After(#[serde(with = "secs")] Duration),
    /// Never scrobble them.
    Never,
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs(u64::deserialize(d)?))
    }
}

/// The numbers of the rules; [`Rules::default`] is Last.fm's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// Tracks this long or shorter are never scrobbled (30 s).
    pub min_length: Duration,
    /// Listening that always suffices (240 s).
    pub max_wait: Duration,
    /// Tracks without a length.
    pub no_length: NoLength,
    /// How often now playing is re-sent while a play goes on (60 s).
    pub now_playing_every: Duration,
    /// How long incomplete metadata may take to be filled in (1 s).
    pub metadata_wait: Duration,
    /// A seek to a position this close to 0 is a seek "to the start" (2 s).
    pub restart_window: Duration,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            min_length: Duration::from_secs(30),
            max_wait: Duration::from_secs(240),
            no_length: NoLength::After(Duration::from_secs(240)),
            now_playing_every: Duration::from_secs(60),
            metadata_wait: Duration::from_secs(1),
            restart_window: Duration::from_secs(2),
        }
    }
}

impl Rules {
    /// The listening a track needs before it is scrobbled; `None`: never.
    pub fn threshold(&self, track: &Track) -> Option<Duration> {
        match track.length {
            Some(len) if len > self.min_length => Some((len / 2).min(self.max_wait)),
            Some(_) => None,
            None => match self.no_length {
                NoLength::After(d) => Some(d),
                NoLength::Never => None,
            },
        }
    }
}

/// MPRIS `PlaybackStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Status {
    Playing,
    Paused,
    #[default]
    Stopped,
}

/// MPRIS `LoopStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum LoopStatus {
    #[default]
    None,
    Track,
    Playlist,
}

/// Something the player said.
#[allow(
    clippy::large_enum_variant,
    reason = "events are moved once, from the bus to the session: no box needed"
)]
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `Metadata` changed; `None` for no track (`NoTrack` or empty).
    Metadata(Option<Track>),
    Status(Status),
    Rate(f64),
    Loop(LoopStatus),
    /// The `Seeked` signal: the new position.
    Seeked(Duration),
    /// A `Position` read with `Properties.Get` (no seek implied).
    Position(Duration),
    /// The player left the bus.
    Vanished,
}

/// What the session asks the daemon to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    NowPlaying(Track),
    /// Scrobble a play of `track` that started at `started` (UNIX secs).
    Scrobble {
        track: Track,
        started: i64,
    },
}

/// The current play, for `spindle scrobble status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayView {
    pub track: Track,
    pub status: Status,
    /// Listened time so far, seconds.
    pub listened: f64,
    /// Listening needed to scrobble, seconds; `None`: never.
    pub threshold: Option<f64>,
    pub scrobbled: bool,
    /// When the play started, UNIX seconds (once it has played).
    pub started: Option<i64>,
}

#[derive(Debug, Clone)]
struct Play {
    track: Track,
    /// When the play was first seen (monotonic), for the metadata wait.
    seen: Duration,
    /// Wall time the play started; set when it first plays.
    started: Option<f64>,
    /// Listened media time, seconds.
    listened: f64,
    /// Estimated position, seconds.
    position: f64,
    /// While Playing: the monotonic time up to which time is counted.
    last_tick: Option<Duration>,
    scrobbled: bool,
    now_playing_at: Option<Duration>,
}

impl Play {
    fn new(track: Track, now: Now, position: f64) -> Play {
        Play {
            track,
            seen: now.mono,
            started: None,
            listened: 0.0,
            position,
            last_tick: None,
            scrobbled: false,
            now_playing_at: None,
        }
    }
}

/// One player's play-session state machine.
#[derive(Debug, Clone)]
pub struct Session {
    rules: Rules,
    status: Status,
    rate: f64,
    looping: LoopStatus,
    /// The player's current track, kept while stopped.
    track: Option<Track>,
    play: Option<Play>,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Session {
    pub fn new(rules: Rules) -> Session {
        Session {
            rules,
            status: Status::Stopped,
            rate: 1.0,
            looping: LoopStatus::None,
            track: None,
            play: None,
        }
    }

    pub fn status(&self) -> Status {
        self.status
    }

    /// The current play, if any.
    pub fn view(&self, now: Now) -> Option<PlayView> {
        let mut s = self.clone();
        s.advance(now, &mut Vec::new());
        let p = s.play.as_ref()?;
        Some(PlayView {
            track: p.track.clone(),
            status: s.status,
            listened: p.listened,
            threshold: self.rules.threshold(&p.track).map(secs),
            scrobbled: p.scrobbled,
            started: p.started.map(|t| t.floor() as i64),
        })
    }

    /// Feeds one event that happened at `now`.
    pub fn handle(&mut self, ev: Event, now: Now) -> Vec<Action> {
        let mut out = Vec::new();
        self.advance(now, &mut out);
        // What was listened before this event may already qualify (the
        // event may end the play: a stop, a new track).
        if let Some(p) = &mut self.play {
            Self::check_scrobble(&self.rules, p, &mut out);
        }
        match ev {
            Event::Status(s) => self.set_status(s, now),
            Event::Rate(r) => {
                // MPRIS says Rate is never 0; a bad value keeps the old one.
                if r.is_finite() && r > 0.0 {
                    self.rate = r;
                }
            }
            Event::Loop(l) => self.looping = l,
            Event::Metadata(None) => {
                self.track = None;
                self.play = None;
            }
            Event::Metadata(Some(t)) => self.set_track(t, now),
            Event::Seeked(pos) => self.seeked(secs(pos), now),
            Event::Position(pos) => {
                if let Some(p) = &mut self.play {
                    p.position = secs(pos);
                }
            }
            Event::Vanished => {
                // Time up to now was counted by `advance` and a qualifying
                // play scrobbled above; forget the player.
                self.play = None;
                self.track = None;
                self.status = Status::Stopped;
                return out;
            }
        }
        self.check(now, &mut out);
        out
    }

    /// Called at (or after) [`Session::next_deadline`].
    pub fn poll(&mut self, now: Now) -> Vec<Action> {
        let mut out = Vec::new();
        self.advance(now, &mut out);
        self.check(now, &mut out);
        out
    }

    /// When [`Session::poll`] has something to do; `None` while nothing
    /// plays.
    pub fn next_deadline(&self) -> Option<Duration> {
        if self.status != Status::Playing {
            return None;
        }
        let p = self.play.as_ref()?;
        let tick = p.last_tick?;
        let after_media = |media: f64| tick + Duration::from_secs_f64((media / self.rate).max(0.0));
        let mut best: Option<Duration> = None;
        let mut consider = |d: Duration| best = Some(best.map_or(d, |b| b.min(d)));
        if !p.scrobbled && p.track.is_complete() {
            if let Some(th) = self.rules.threshold(&p.track) {
                consider(after_media(secs(th) - p.listened));
            }
        }
        if let Some(at) = p.now_playing_at {
            consider(at + self.rules.now_playing_every);
        }
        if let (LoopStatus::Track, Some(len)) = (self.looping, p.track.length) {
            if secs(len) >= 1.0 {
                consider(after_media(secs(len) - p.position));
            }
        }
        best
    }

    fn set_status(&mut self, s: Status, now: Now) {
        if s == self.status {
            return;
        }
        self.status = s;
        match s {
            Status::Playing => {
                if self.play.is_none() {
                    if let Some(t) = self.track.clone() {
                        self.play = Some(Play::new(t, now, 0.0));
                    }
                }
                let rate = self.rate;
                if let Some(p) = &mut self.play {
                    p.last_tick = Some(now.mono);
                    if p.started.is_none() {
                        p.started = Some(now.unix - p.position / rate);
                    }
                    // Back from a long pause: refresh now playing.
                    if p.now_playing_at
                        .is_some_and(|at| now.mono >= at + self.rules.now_playing_every)
                    {
                        p.now_playing_at = None;
                    }
                }
            }
            Status::Paused => {
                if let Some(p) = &mut self.play {
                    p.last_tick = None;
                }
            }
            Status::Stopped => self.play = None,
        }
    }

    fn set_track(&mut self, t: Track, now: Now) {
        if let Some(p) = &mut self.play {
            let refine = p.track.same_as(&t)
                || (!p.track.is_complete()
                    && now.mono <= p.seen + self.rules.metadata_wait
                    && (p.track.trackid.is_none() || p.track.trackid == t.trackid));
            if refine {
                // A duplicate signal, or the same track's metadata filled in.
                if p.track != t {
                    p.track = t.clone();
                    self.track = Some(t);
                }
                return;
            }
        }
        self.track = Some(t.clone());
        if self.status == Status::Stopped {
            self.play = None;
            return;
        }
        let mut p = Play::new(t, now, 0.0);
        if self.status == Status::Playing {
            p.last_tick = Some(now.mono);
            p.started = Some(now.unix);
        }
        self.play = Some(p);
    }

    fn seeked(&mut self, pos: f64, now: Now) {
        let restart = secs(self.rules.restart_window);
        let rate = self.rate;
        let playing = self.status == Status::Playing;
        let Some(p) = &mut self.play else {
            return;
        };
        if pos <= restart && p.scrobbled {
            // Repeat: the finished play stays scrobbled, a new one starts.
            let mut n = Play::new(p.track.clone(), now, pos);
            if playing {
                n.last_tick = Some(now.mono);
                n.started = Some(now.unix - pos / rate);
            }
            *p = n;
        } else {
            // Forward: skipped audio is not listened to. Backward: what
            // is played again counts as it plays.
            p.position = pos;
        }
    }

    /// Counts Playing time up to `now`, starting new plays where a
    /// repeat-one track wraps.
    fn advance(&mut self, now: Now, out: &mut Vec<Action>) {
        if self.status != Status::Playing {
            return;
        }
        let rate = self.rate;
        let Some(p) = &mut self.play else {
            return;
        };
        let Some(tick) = p.last_tick else {
            return;
        };
        let mut media = secs(now.mono.saturating_sub(tick)) * rate;
        p.last_tick = Some(now.mono.max(tick));
        if let (LoopStatus::Track, Some(len)) = (self.looping, p.track.length.map(secs)) {
            // Each wrap past the end is a new play (bounded: a day of
            // one-second loops at most).
            let mut wraps = 0;
            while len >= 1.0 && p.position + media >= len && wraps < 100_000 {
                let part = (len - p.position).max(0.0);
                p.listened += part;
                media -= part;
                Self::check_scrobble(&self.rules, p, out);
                let wall_at = now.unix - media / rate;
                let mut n = Play::new(p.track.clone(), now, 0.0);
                n.last_tick = Some(now.mono);
                n.started = Some(wall_at);
                *p = n;
                wraps += 1;
            }
        }
        p.listened += media;
        p.position += media;
    }

    fn check_scrobble(rules: &Rules, p: &mut Play, out: &mut Vec<Action>) {
        if p.scrobbled || !p.track.is_complete() {
            return;
        }
        let Some(th) = rules.threshold(&p.track) else {
            return;
        };
        // A microsecond of slack for float rounding at the deadline.
        if p.listened + 1e-6 >= secs(th) {
            p.scrobbled = true;
            out.push(Action::Scrobble {
                track: p.track.clone(),
                started: p.started.unwrap_or(0.0).floor() as i64,
            });
        }
    }

    /// Scrobbles what qualifies and sends due now-playing updates.
    fn check(&mut self, now: Now, out: &mut Vec<Action>) {
        let playing = self.status == Status::Playing;
        let every = self.rules.now_playing_every;
        let Some(p) = &mut self.play else {
            return;
        };
        if playing
            && p.track.is_complete()
            && p.now_playing_at.is_none_or(|at| now.mono >= at + every)
        {
            p.now_playing_at = Some(now.mono);
            out.push(Action::NowPlaying(p.track.clone()));
        }
        Self::check_scrobble(&self.rules, p, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: f64 = 1_700_000_000.0;

    fn at(t: f64) -> Now {
        Now {
            mono: Duration::from_secs(1000) + Duration::from_secs_f64(t),
            unix: T0 + t,
        }
    }

    fn track(title: &str, len: Option<u64>) -> Track {
        Track {
            trackid: Some(format!("/t/{title}")),
            title: title.into(),
            artists: vec!["Artist".into()],
            length: len.map(Duration::from_secs),
            ..Track::default()
        }
    }

    fn meta(title: &str, len: u64) -> Event {
        Event::Metadata(Some(track(title, Some(len))))
    }

    use Event::*;
    const PLAY: Event = Status(super::Status::Playing);
    const PAUSE: Event = Status(super::Status::Paused);
    const STOP: Event = Status(super::Status::Stopped);

    fn seek(s: f64) -> Event {
        Seeked(Duration::from_secs_f64(s))
    }

    /// Runs a script of (time, event) as the daemon would (polling at
    /// every deadline) until `end`; returns "t np TITLE" and
    /// "t scrobble TITLE @start" lines, times relative to T0.
    fn run_with(rules: Rules, script: &[(f64, Event)], end: f64, poll: bool) -> Vec<String> {
        let mut s = Session::new(rules);
        let mut log = Vec::new();
        let mut record = |t: f64, acts: Vec<Action>| {
            for a in acts {
                log.push(match a {
                    Action::NowPlaying(tr) => format!("{t} np {}", tr.title),
                    Action::Scrobble { track, started } => {
                        format!("{t} scrobble {} @{}", track.title, started - T0 as i64)
                    }
                });
            }
        };
        let drain = |s: &mut Session, until: f64, record: &mut dyn FnMut(f64, Vec<Action>)| {
            if !poll {
                return;
            }
            while let Some(d) = s.next_deadline() {
                let t = (d.as_secs_f64() - 1000.0).max(0.0);
                if t > until {
                    break;
                }
                let t = (t * 1000.0).round() / 1000.0;
                record(t, s.poll(at(t)));
            }
        };
        for (t, ev) in script {
            drain(&mut s, *t, &mut record);
            record(*t, s.handle(ev.clone(), at(*t)));
        }
        drain(&mut s, end, &mut record);
        log
    }

    fn run(script: &[(f64, Event)], end: f64) -> Vec<String> {
        run_with(Rules::default(), script, end, true)
    }

    fn scrobbles(log: &[String]) -> Vec<String> {
        log.iter()
            .filter(|l| l.contains("scrobble"))
            .cloned()
            .collect()
    }

    #[test]
    fn the_rules_table() {
        // (name, script, end, expected scrobbles)
        #[allow(
            clippy::type_complexity,
            reason = "a table of test cases, read once, right below"
        )]
        let cases: Vec<(&str, Vec<(f64, Event)>, f64, Vec<&str>)> = vec![
            (
                "half of a 40 s track",
                vec![(0.0, meta("A", 40)), (0.0, PLAY)],
                39.0,
                vec!["20 scrobble A @0"],
            ),
            (
                "4 minutes of a long track",
                vec![(0.0, PLAY), (0.0, meta("A", 900))],
                600.0,
                vec!["240 scrobble A @0"],
            ),
            (
                "a 30 s track never",
                vec![(0.0, PLAY), (0.0, meta("A", 30))],
                30.0,
                vec![],
            ),
            (
                "a 31 s track at 15.5 s",
                vec![(0.0, PLAY), (0.0, meta("A", 31))],
                31.0,
                vec!["15.5 scrobble A @0"],
            ),
            (
                "skipped before half",
                vec![(0.0, PLAY), (0.0, meta("A", 200)), (99.0, meta("B", 200))],
                150.0,
                vec![],
            ),
            (
                "paused time does not count",
                vec![
                    (0.0, PLAY),
                    (0.0, meta("A", 200)),
                    (50.0, PAUSE),
                    (500.0, PLAY),
                ],
                700.0,
                vec!["550 scrobble A @0"],
            ),
            (
                "pause and resume do not re-scrobble",
                vec![
                    (0.0, PLAY),
                    (0.0, meta("A", 200)),
                    (150.0, PAUSE),
                    (160.0, PLAY),
                    (170.0, PAUSE),
                    (171.0, PLAY),
                ],
                199.0,
                vec!["100 scrobble A @0"],
            ),
            (
                "start is when it first played",
                vec![(0.0, meta("A", 100)), (0.0, PAUSE), (10.0, PLAY)],
                99.0,
                vec!["60 scrobble A @10"],
            ),
            (
                "a seek forward is not listening",
                vec![
                    (0.0, PLAY),
                    (0.0, meta("A", 200)),
                    (10.0, seek(150.0)),
                    (60.0, meta("B", 200)),
                ],
                61.0,
                vec![],
            ),
            (
                "a seek back before the threshold is the same play",
                vec![(0.0, PLAY), (0.0, meta("A", 100)), (30.0, seek(0.0))],
                99.0,
                vec!["50 scrobble A @0"],
            ),
            (
                "a seek back to the start after the threshold is a repeat",
                vec![(0.0, PLAY), (0.0, meta("A", 40)), (38.0, seek(0.0))],
                70.0,
                vec!["20 scrobble A @0", "58 scrobble A @38"],
            ),
            (
                "a seek back to the middle is not a repeat",
                vec![(0.0, PLAY), (0.0, meta("A", 40)), (38.0, seek(10.0))],
                70.0,
                vec!["20 scrobble A @0"],
            ),
            (
                "LoopStatus Track wraps into new plays",
                vec![
                    (0.0, Loop(LoopStatus::Track)),
                    (0.0, PLAY),
                    (0.0, meta("A", 40)),
                ],
                100.0,
                vec![
                    "20 scrobble A @0",
                    "60 scrobble A @40",
                    "100 scrobble A @80",
                ],
            ),
            (
                "a wrap and the player's Seeked(0) are one repeat",
                vec![
                    (0.0, Loop(LoopStatus::Track)),
                    (0.0, PLAY),
                    (0.0, meta("A", 40)),
                    (40.05, seek(0.0)),
                    (79.9, seek(0.0)),
                ],
                100.0,
                vec![
                    "20 scrobble A @0",
                    "60 scrobble A @40",
                    "99.9 scrobble A @79",
                ],
            ),
            (
                "Rate 2 counts double",
                vec![(0.0, Rate(2.0)), (0.0, PLAY), (0.0, meta("A", 40))],
                19.0,
                vec!["10 scrobble A @0"],
            ),
            (
                "a zero Rate is ignored",
                vec![(0.0, Rate(0.0)), (0.0, PLAY), (0.0, meta("A", 40))],
                39.0,
                vec!["20 scrobble A @0"],
            ),
            (
                "no length: after 4 minutes",
                vec![(0.0, PLAY), (0.0, Metadata(Some(track("A", None))))],
                300.0,
                vec!["240 scrobble A @0"],
            ),
            (
                "no length: not at 30 s",
                vec![
                    (0.0, PLAY),
                    (0.0, Metadata(Some(track("A", None)))),
                    (100.0, meta("B", 0)),
                ],
                300.0,
                vec![],
            ),
            (
                "stop ends the play",
                vec![
                    (0.0, PLAY),
                    (0.0, meta("A", 100)),
                    (40.0, STOP),
                    (50.0, PLAY),
                ],
                120.0,
                vec!["100 scrobble A @50"],
            ),
            (
                "a vanished player's qualifying play",
                vec![(0.0, PLAY), (0.0, meta("A", 200)), (150.0, Vanished)],
                200.0,
                vec!["100 scrobble A @0"],
            ),
            (
                "a vanished player's short play",
                vec![(0.0, PLAY), (0.0, meta("A", 200)), (50.0, Vanished)],
                200.0,
                vec![],
            ),
            (
                "a paused player vanishing",
                vec![
                    (0.0, PLAY),
                    (0.0, meta("A", 200)),
                    (90.0, PAUSE),
                    (500.0, Vanished),
                ],
                600.0,
                vec![],
            ),
        ];
        for (name, script, end, want) in &cases {
            // The daemon polls at deadlines; a daemon that missed them
            // (suspended machine, vanished player) scrobbles on the next event.
            let got = scrobbles(&run(script, *end));
            assert_eq!(&got, want, "case: {name}");
        }
        let got = scrobbles(&run_with(Rules::default(), &cases[19].1, 200.0, false));
        assert_eq!(got, vec!["150 scrobble A @0"], "vanished without a poll");
    }

    #[test]
    fn no_length_policy_never() {
        let rules = Rules {
            no_length: NoLength::Never,
            ..Rules::default()
        };
        let script = [(0.0, PLAY), (0.0, Metadata(Some(track("A", None))))];
        assert!(scrobbles(&run_with(rules, &script, 1000.0, true)).is_empty());
    }

    #[test]
    fn now_playing_at_start_and_every_minute_while_playing() {
        let log = run(
            &[
                (0.0, PLAY),
                (0.0, meta("A", 600)),
                (130.0, PAUSE),
                (400.0, PLAY),
            ],
            500.0,
        );
        let np: Vec<&str> = log
            .iter()
            .filter(|l| l.contains(" np "))
            .map(String::as_str)
            .collect();
        assert_eq!(
            np,
            vec!["0 np A", "60 np A", "120 np A", "400 np A", "460 np A"]
        );
    }

    #[test]
    fn no_wakeups_while_paused() {
        let mut s = Session::new(Rules::default());
        s.handle(PLAY, at(0.0));
        s.handle(meta("A", 600), at(0.0));
        assert!(s.next_deadline().is_some());
        s.handle(PAUSE, at(5.0));
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn duplicate_metadata_signals_are_one_play() {
        let log = run(
            &[
                (0.0, PLAY),
                (0.0, meta("A", 100)),
                (0.0, meta("A", 100)),
                (0.2, meta("A", 100)),
            ],
            59.0,
        );
        assert_eq!(log, vec!["0 np A", "50 scrobble A @0"]);
    }

    #[test]
    fn incomplete_metadata_is_filled_in_without_a_new_play() {
        let empty = Track {
            length: Some(Duration::from_secs(100)),
            ..Track::default()
        };
        let mut full = track("A", Some(100));
        full.trackid = None;
        let log = run(
            &[
                (0.0, PLAY),
                (0.0, Metadata(Some(empty))),
                (0.5, Metadata(Some(full))),
            ],
            59.0,
        );
        assert_eq!(log, vec!["0.5 np A", "50 scrobble A @0"]);
    }

    #[test]
    fn metadata_without_artist_is_never_scrobbled() {
        let mut t = track("(3) Some video - YouTube", None);
        t.artists = vec![String::new()];
        let log = run(&[(0.0, PLAY), (0.0, Metadata(Some(t)))], 1000.0);
        assert!(log.is_empty(), "{log:?}");
    }

    #[test]
    fn view_shows_progress_to_the_threshold() {
        let mut s = Session::new(Rules::default());
        s.handle(PLAY, at(0.0));
        s.handle(meta("A", 100), at(0.0));
        let v = s.view(at(20.0)).expect("a play");
        assert!((v.listened - 20.0).abs() < 1e-6);
        assert_eq!(v.threshold, Some(50.0));
        assert!(!v.scrobbled);
        assert_eq!(v.started, Some(T0 as i64));
    }
}
