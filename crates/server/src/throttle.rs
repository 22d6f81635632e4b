//! Throttling of failed logins, shared by every authentication path.
//!
//! Failures are counted under three keys: the client address with the
//! account (a *pair*), the address alone (every account it tries) and the
//! account alone (from every address). Past a number of free failures
//! each key waits a growing delay (1 s, 2 s, 4 s … capped) before its next
//! attempt is even looked at; pairs and addresses are then locked for a
//! while. Accounts are only slowed, never locked, and a pair that logged
//! in before skips the account's delay, so a stranger cannot keep a user
//! out from elsewhere. While a key waits, an attempt is refused without
//! checking the credential: no CPU is spent and a right guess is not
//! revealed. A failure is forgotten after [`FORGET_AFTER`] seconds without
//! another; a success clears its pair. Every failure and lock is logged as
//! one line fail2ban can match:
//!
//! ```text
//! spindle: auth failure for user 'ann' from 192.0.2.7 via subsonic
//! spindle: auth failure for a token from 192.0.2.7 via listenbrainz
//! spindle: auth lock for 192.0.2.7 (user 'ann') for 900 s
//! spindle: auth lock for 192.0.2.7 (every user) for 900 s
//! spindle: auth slowdown for user 'ann' for 1 s (11 failures from any address)
//! ```
//!
//! IPv6 clients are counted by their /64, which one host usually owns
//! whole. Time comes from the injected [`Clock`], so the tests run in
//! microseconds. Each table holds at most [`MAX_TRACKED`] keys; beyond
//! that the forgotten and then the least recently seen go first.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::state::{lock, Clock};

/// Failures of one address with one account before any delay: 5 (a few
/// typos).
pub const PAIR_FREE_FAILURES: u32 = 5;
/// Failures of one address with one account that lock the pair: 20.
pub const PAIR_LOCK_AFTER: u32 = 20;
/// Failures of one address over every account before any delay: 20 (a
/// household or office behind one address).
pub const ADDRESS_FREE_FAILURES: u32 = 20;
/// Failures of one address over every account that lock the address: 100.
pub const ADDRESS_LOCK_AFTER: u32 = 100;
/// How long a lock lasts, seconds: 900 (15 minutes). Once locked, each
/// further failure locks again, so a guesser gets one try per lock.
pub const LOCK_SECS: i64 = 900;
/// The longest delay of a pair or an address, seconds: 60.
pub const MAX_DELAY: i64 = 60;
/// Failures of one account from every address before it is slowed: 10.
pub const ACCOUNT_FREE_FAILURES: u32 = 10;
/// The longest delay of an account, seconds: 30. Short, and never a lock:
/// this key is the one a stranger can push from anywhere.
pub const ACCOUNT_MAX_DELAY: i64 = 30;
/// Failures are forgotten after this long without another, seconds: 3600.
/// Longer than a lock, so a lock's end does not restore the free tries.
pub const FORGET_AFTER: i64 = 3600;
/// How long an address that logged in to an account skips that account's
/// slowdown, seconds: 30 days.
pub const TRUST_SECS: i64 = 30 * 24 * 3600;
/// Keys each table (pairs, addresses, accounts, trusted pairs) holds at
/// most: 16,384, about 3 MB each, so a spray of random names or addresses
/// cannot grow the server.
pub const MAX_TRACKED: usize = 16_384;
/// Bytes of a user name kept as a key or logged: 64 (the longest valid
/// name); longer names cannot exist and are cut.
pub const MAX_NAME: usize = 64;

/// How one key is throttled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Failures before any delay.
    pub free: u32,
    /// The longest delay, seconds; failure `free + n` waits 2^(n-1) s.
    pub max_delay: i64,
    /// Failures that lock the key for `lock_secs`; `None` never locks.
    pub lock_after: Option<u32>,
    pub lock_secs: i64,
}

/// Every throttling setting (part of [`crate::Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub pair: Rule,
    pub address: Rule,
    pub account: Rule,
    pub forget_after: i64,
    pub trust_secs: i64,
    pub max_tracked: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            pair: Rule {
                free: PAIR_FREE_FAILURES,
                max_delay: MAX_DELAY,
                lock_after: Some(PAIR_LOCK_AFTER),
                lock_secs: LOCK_SECS,
            },
            address: Rule {
                free: ADDRESS_FREE_FAILURES,
                max_delay: MAX_DELAY,
                lock_after: Some(ADDRESS_LOCK_AFTER),
                lock_secs: LOCK_SECS,
            },
            account: Rule {
                free: ACCOUNT_FREE_FAILURES,
                max_delay: ACCOUNT_MAX_DELAY,
                lock_after: None,
                lock_secs: 0,
            },
            forget_after: FORGET_AFTER,
            trust_secs: TRUST_SECS,
            max_tracked: MAX_TRACKED,
        }
    }
}

impl Limits {
    /// No throttling at all (for tests of other things).
    pub fn off() -> Limits {
        let free = Rule {
            free: u32::MAX,
            max_delay: 0,
            lock_after: None,
            lock_secs: 0,
        };
        Limits {
            pair: free,
            address: free,
            account: free,
            ..Limits::default()
        }
    }
}

/// A client address as the throttle counts it: IPv4 whole (IPv4-mapped
/// IPv6 too), IPv6 by its /64; `None` when the server does not know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Net(Option<IpAddr>);

impl Net {
    fn of(ip: Option<IpAddr>) -> Net {
        Net(ip.map(|ip| match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
            v4 => v4,
        }))
    }
}

/// A user name as a key or in a log line: at most [`MAX_NAME`] bytes, and
/// anything outside a valid name's alphabet shown as `?`, so a name
/// cannot forge a log line.
pub fn clean_name(name: &str) -> String {
    name.chars()
        .take(MAX_NAME)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '?'
            }
        })
        .collect()
}

fn key_name(name: &str) -> String {
    let mut end = name.len().min(MAX_NAME);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

#[derive(Debug, Default, Clone)]
struct Entry {
    failures: u32,
    last_failure: i64,
    /// No attempt before this time.
    until: i64,
    /// Attempts admitted and not yet finished.
    inflight: u32,
    touched: i64,
}

impl Entry {
    /// Forgets old failures.
    fn age(&mut self, now: i64, forget_after: i64) {
        if self.failures > 0 && self.until <= now && now - self.last_failure >= forget_after {
            self.failures = 0;
        }
    }

    /// Seconds an attempt must wait, 0 when it may go. Past the free
    /// failures only one attempt is in flight at a time, so concurrent
    /// guesses cannot all slip in before the first failure is counted.
    fn wait(&self, now: i64, rule: &Rule) -> i64 {
        if self.until > now {
            self.until - now
        } else if self.inflight > 0 && self.failures.saturating_add(self.inflight) >= rule.free {
            1
        } else {
            0
        }
    }

    /// Counts a failure: `Some((seconds, locked))` when a wait starts.
    fn fail(&mut self, now: i64, rule: &Rule) -> Option<(i64, bool)> {
        self.failures = self.failures.saturating_add(1);
        self.last_failure = now;
        if rule.lock_after.is_some_and(|l| self.failures >= l) {
            self.until = self.until.max(now + rule.lock_secs);
            return Some((rule.lock_secs, true));
        }
        if self.failures > rule.free {
            let n = (self.failures - rule.free - 1).min(30);
            let delay = (1i64 << n).min(rule.max_delay);
            self.until = self.until.max(now + delay);
            return Some((delay, false));
        }
        None
    }

    fn idle(&self, now: i64) -> bool {
        self.failures == 0 && self.inflight == 0 && self.until <= now
    }
}

struct Table<K> {
    map: HashMap<K, Entry>,
}

impl<K: Hash + Eq + Clone> Table<K> {
    fn new() -> Self {
        Table {
            map: HashMap::new(),
        }
    }

    fn wait(&mut self, k: &K, now: i64, rule: &Rule, forget_after: i64) -> i64 {
        match self.map.get_mut(k) {
            Some(e) => {
                e.age(now, forget_after);
                e.wait(now, rule)
            }
            None => 0,
        }
    }

    /// The key's entry, made room for when the table is full.
    fn entry(&mut self, k: &K, now: i64, limits: &Limits) -> &mut Entry {
        if !self.map.contains_key(k) && self.map.len() >= limits.max_tracked {
            self.make_room(now, limits);
        }
        let e = self.map.entry(k.clone()).or_default();
        e.touched = now;
        e
    }

    /// Drops forgotten keys; if that is not enough, the least recently
    /// seen eighth of those not in flight.
    fn make_room(&mut self, now: i64, limits: &Limits) {
        self.map.retain(|_, e| {
            e.age(now, limits.forget_after);
            !e.idle(now)
        });
        if self.map.len() < limits.max_tracked {
            return;
        }
        let mut ages: Vec<(i64, K)> = self
            .map
            .iter()
            .filter(|(_, e)| e.inflight == 0)
            .map(|(k, e)| (e.touched, k.clone()))
            .collect();
        ages.sort_unstable_by_key(|(t, _)| *t);
        let n = (limits.max_tracked / 8).max(1);
        for (_, k) in ages.into_iter().take(n) {
            self.map.remove(&k);
        }
    }

    /// An admitted attempt ends without counting.
    fn release(&mut self, k: &K, now: i64) {
        if let Some(e) = self.map.get_mut(k) {
            e.inflight = e.inflight.saturating_sub(1);
            e.touched = now;
            if e.idle(now) {
                self.map.remove(k);
            }
        }
    }

    fn fail(&mut self, k: &K, now: i64, rule: &Rule, limits: &Limits) -> Option<(i64, bool)> {
        let e = self.entry(k, now, limits);
        e.inflight = e.inflight.saturating_sub(1);
        e.age(now, limits.forget_after);
        e.fail(now, rule)
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}

struct Tables {
    pairs: Table<(Net, String)>,
    addresses: Table<Net>,
    accounts: Table<String>,
    /// Pairs that logged in, and when.
    trusted: HashMap<(Net, String), i64>,
}

/// The throttle. One per server, shared by every API.
pub struct Throttle {
    limits: Limits,
    clock: Arc<dyn Clock>,
    tables: Mutex<Tables>,
}

/// An attempt refused without a check: try again after `retry_after`
/// seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    pub retry_after: i64,
}

impl Throttle {
    pub fn new(limits: Limits, clock: Arc<dyn Clock>) -> Throttle {
        Throttle {
            limits,
            clock,
            tables: Mutex::new(Tables {
                pairs: Table::new(),
                addresses: Table::new(),
                accounts: Table::new(),
                trusted: HashMap::new(),
            }),
        }
    }

    /// Admits an attempt from `ip` at `user` (`None` for a bare token),
    /// or says how long to wait. `via` names the API in log lines. The
    /// attempt counts as a failure unless [`Attempt::succeed`] or
    /// [`Attempt::abandon`] is called, also when it is dropped half-way
    /// (a client that hangs up during the check).
    pub fn begin(
        &self,
        ip: Option<IpAddr>,
        user: Option<&str>,
        via: &'static str,
    ) -> Result<Attempt<'_>, Wait> {
        let now = self.clock.now();
        let l = &self.limits;
        let net = Net::of(ip);
        let user = user.map(key_name);
        let mut t = lock(&self.tables);
        let mut wait = t.addresses.wait(&net, now, &l.address, l.forget_after);
        if let Some(u) = &user {
            let pair = (net, u.clone());
            wait = wait.max(t.pairs.wait(&pair, now, &l.pair, l.forget_after));
            let trusted = t
                .trusted
                .get(&pair)
                .is_some_and(|&at| now - at < l.trust_secs);
            if !trusted {
                wait = wait.max(t.accounts.wait(u, now, &l.account, l.forget_after));
            }
        }
        if wait > 0 {
            return Err(Wait { retry_after: wait });
        }
        t.addresses.entry(&net, now, l).inflight += 1;
        if let Some(u) = &user {
            t.pairs.entry(&(net, u.clone()), now, l).inflight += 1;
            t.accounts.entry(u, now, l).inflight += 1;
        }
        Ok(Attempt {
            throttle: self,
            ip,
            net,
            user,
            via,
            done: false,
        })
    }

    /// Keys tracked, over all tables.
    pub fn tracked(&self) -> usize {
        let t = lock(&self.tables);
        t.pairs.len() + t.addresses.len() + t.accounts.len() + t.trusted.len()
    }
}

/// An admitted attempt; see [`Throttle::begin`].
pub struct Attempt<'a> {
    throttle: &'a Throttle,
    ip: Option<IpAddr>,
    net: Net,
    user: Option<String>,
    via: &'static str,
    done: bool,
}

impl Attempt<'_> {
    /// The credential was right: the pair's failures are cleared and the
    /// pair skips the account's slowdown from now on.
    pub fn succeed(mut self) {
        self.done = true;
        let th = self.throttle;
        let (now, l) = (th.clock.now(), &th.limits);
        let mut t = lock(&th.tables);
        t.addresses.release(&self.net, now);
        if let Some(u) = &self.user {
            let pair = (self.net, u.clone());
            t.pairs.map.remove(&pair);
            t.accounts.release(u, now);
            if !t.trusted.contains_key(&pair) && t.trusted.len() >= l.max_tracked {
                t.trusted.retain(|_, at| now - *at < l.trust_secs);
                if t.trusted.len() >= l.max_tracked {
                    let mut ages: Vec<(i64, (Net, String))> =
                        t.trusted.iter().map(|(k, at)| (*at, k.clone())).collect();
                    ages.sort_unstable_by_key(|(at, _)| *at);
                    for (_, k) in ages.into_iter().take((l.max_tracked / 8).max(1)) {
                        t.trusted.remove(&k);
                    }
                }
            }
            t.trusted.insert(pair, now);
        }
    }

    /// The check did not run (the hashing pool was full): nothing counts.
    pub fn abandon(mut self) {
        self.done = true;
        let th = self.throttle;
        let now = th.clock.now();
        let mut t = lock(&th.tables);
        t.addresses.release(&self.net, now);
        if let Some(u) = &self.user {
            t.pairs.release(&(self.net, u.clone()), now);
            t.accounts.release(u, now);
        }
    }

    /// The credential was wrong: counted, and logged. Returns the lines
    /// logged, as the text log shows them.
    pub fn fail(mut self) -> Vec<String> {
        self.done = true;
        self.count_failure()
    }

    fn count_failure(&mut self) -> Vec<String> {
        let th = self.throttle;
        let (now, l) = (th.clock.now(), &th.limits);
        let from = match self.ip {
            Some(ip) => ip.to_canonical().to_string(),
            None => "an unknown address".to_owned(),
        };
        let who = self.user.as_deref().map(clean_name);
        let failure = match &who {
            Some(u) => format!("auth failure for user '{u}' from {from} via {}", self.via),
            None => format!("auth failure for a token from {from} via {}", self.via),
        };
        let (mut address_lock, mut pair_lock, mut slowdown) = (None, None, None);
        let mut t = lock(&th.tables);
        if let Some((secs, true)) = t.addresses.fail(&self.net, now, &l.address, l) {
            address_lock = Some(secs);
        }
        if let (Some(u), Some(_)) = (&self.user, &who) {
            if let Some((secs, true)) = t.pairs.fail(&(self.net, u.clone()), now, &l.pair, l) {
                pair_lock = Some(secs);
            }
            let slowed = t.accounts.fail(u, now, &l.account, l);
            let first = t
                .accounts
                .map
                .get(u)
                .is_some_and(|e| e.failures == l.account.free.saturating_add(1));
            if let (Some((secs, _)), true) = (slowed, first) {
                slowdown = Some(secs);
            }
        }
        drop(t);
        // One line each, for fail2ban (docs/security.md); the fields
        // repeat what the line says, for the JSON log.
        let user = who.as_deref();
        tracing::info!(user, addr = %from, via = self.via, "{failure}");
        let mut lines = vec![failure];
        if let Some(secs) = address_lock {
            let m = format!("auth lock for {from} (every user) for {secs} s");
            tracing::info!(addr = %from, secs, "{m}");
            lines.push(m);
        }
        if let (Some(secs), Some(name)) = (pair_lock, user) {
            let m = format!("auth lock for {from} (user '{name}') for {secs} s");
            tracing::info!(user = name, addr = %from, secs, "{m}");
            lines.push(m);
        }
        if let (Some(secs), Some(name)) = (slowdown, user) {
            let failures = l.account.free.saturating_add(1);
            let m = format!(
                "auth slowdown for user '{name}' for {secs} s ({failures} failures from any address)"
            );
            tracing::info!(user = name, secs, failures, "{m}");
            lines.push(m);
        }
        lines.into_iter().map(|m| format!("spindle: {m}")).collect()
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.count_failure();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ManualClock;

    const A: &str = "192.0.2.7";
    const B: &str = "198.51.100.9";

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    fn throttle(limits: Limits) -> (Throttle, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(1_000_000));
        (Throttle::new(limits, clock.clone()), clock)
    }

    /// Fails once, or says how long it had to wait.
    fn fail(t: &Throttle, from: &str, user: &str) -> Result<Vec<String>, i64> {
        match t.begin(ip(from), Some(user), "test") {
            Ok(a) => Ok(a.fail()),
            Err(w) => Err(w.retry_after),
        }
    }

    #[test]
    fn delays_grow_after_the_free_failures_then_the_pair_locks() {
        let (t, clock) = throttle(Limits::default());
        for _ in 0..PAIR_FREE_FAILURES {
            fail(&t, A, "ann").unwrap();
        }
        // The sixth failure starts a 1 s wait, then 2, 4, 8 …
        let mut waits = Vec::new();
        for _ in PAIR_FREE_FAILURES..PAIR_LOCK_AFTER - 1 {
            fail(&t, A, "ann").unwrap();
            let w = fail(&t, A, "ann").unwrap_err();
            waits.push(w);
            clock.advance(w);
        }
        assert_eq!(&waits[..7], &[1, 2, 4, 8, 16, 32, 60]);
        assert!(waits.iter().all(|&w| w <= MAX_DELAY));
        let lines = fail(&t, A, "ann").unwrap();
        assert_eq!(
            lines.last().unwrap(),
            "spindle: auth lock for 192.0.2.7 (user 'ann') for 900 s"
        );
        assert_eq!(fail(&t, A, "ann"), Err(LOCK_SECS));
        clock.advance(LOCK_SECS - 1);
        assert_eq!(fail(&t, A, "ann"), Err(1));
        clock.advance(1);
        // After the lock one try, and a wrong one locks again.
        let lines = fail(&t, A, "ann").unwrap();
        assert!(lines.iter().any(|l| l.contains("auth lock")), "{lines:?}");
        assert_eq!(fail(&t, A, "ann"), Err(LOCK_SECS));
    }

    #[test]
    fn a_waiting_pair_is_refused_even_with_the_right_credential() {
        let (t, _) = throttle(Limits::default());
        for _ in 0..=PAIR_FREE_FAILURES {
            fail(&t, A, "ann").unwrap();
        }
        assert_eq!(
            t.begin(ip(A), Some("ann"), "test").err(),
            Some(Wait { retry_after: 1 })
        );
    }

    #[test]
    fn a_success_clears_the_pair() {
        let (t, clock) = throttle(Limits::default());
        for _ in 0..=PAIR_FREE_FAILURES {
            fail(&t, A, "ann").unwrap();
        }
        clock.advance(1);
        t.begin(ip(A), Some("ann"), "test").unwrap().succeed();
        // Five free failures again.
        for _ in 0..PAIR_FREE_FAILURES {
            fail(&t, A, "ann").unwrap();
        }
    }

    #[test]
    fn failures_are_forgotten_after_a_quiet_hour() {
        let (t, clock) = throttle(Limits::default());
        for _ in 0..PAIR_LOCK_AFTER {
            let _ = fail(&t, A, "ann");
            clock.advance(MAX_DELAY);
        }
        clock.advance(FORGET_AFTER + LOCK_SECS);
        for _ in 0..PAIR_FREE_FAILURES {
            fail(&t, A, "ann").unwrap();
        }
    }

    #[test]
    fn an_address_trying_many_accounts_is_locked_for_all_of_them() {
        let (t, clock) = throttle(Limits::default());
        let mut locked = None;
        for i in 0..ADDRESS_LOCK_AFTER {
            clock.advance(MAX_DELAY);
            let lines = fail(&t, A, &format!("user{i}")).unwrap();
            if let Some(l) = lines.iter().find(|l| l.contains("every user")) {
                locked = Some((i, l.clone()));
            }
        }
        assert_eq!(
            locked,
            Some((
                ADDRESS_LOCK_AFTER - 1,
                "spindle: auth lock for 192.0.2.7 (every user) for 900 s".to_owned()
            ))
        );
        assert_eq!(fail(&t, A, "someone-new"), Err(LOCK_SECS));
        // Another address is not affected.
        fail(&t, B, "someone-new").unwrap();
    }

    #[test]
    fn an_account_attacked_from_many_addresses_is_slowed_but_not_locked_for_its_owner() {
        let (t, clock) = throttle(Limits::default());
        // The owner logged in from B before.
        t.begin(ip(B), Some("ann"), "test").unwrap().succeed();
        let mut max_wait = 0;
        for i in 0..200u32 {
            let from = format!("203.0.113.{}", i % 250);
            match fail(&t, &from, "ann") {
                Ok(_) => {}
                Err(w) => {
                    max_wait = max_wait.max(w);
                    clock.advance(w);
                }
            }
        }
        assert!(max_wait > 0 && max_wait <= ACCOUNT_MAX_DELAY, "{max_wait}");
        // One more failure, so the account is waiting now.
        let _ = fail(&t, "203.0.113.250", "ann");
        // A fresh address waits; the owner's known address goes straight in.
        assert!(fail(&t, "203.0.113.251", "ann").is_err());
        t.begin(ip(B), Some("ann"), "test").unwrap().succeed();
    }

    #[test]
    fn past_the_free_failures_only_one_attempt_is_in_flight() {
        let (t, _) = throttle(Limits::default());
        for _ in 0..PAIR_FREE_FAILURES - 1 {
            fail(&t, A, "ann").unwrap();
        }
        let first = t.begin(ip(A), Some("ann"), "test").unwrap();
        assert_eq!(
            t.begin(ip(A), Some("ann"), "test").err(),
            Some(Wait { retry_after: 1 })
        );
        first.abandon();
        assert!(t.begin(ip(A), Some("ann"), "test").is_ok());
    }

    #[test]
    fn an_attempt_dropped_half_way_counts_as_a_failure() {
        let (t, _) = throttle(Limits::default());
        for _ in 0..=PAIR_FREE_FAILURES {
            drop(t.begin(ip(A), Some("ann"), "test").unwrap());
        }
        assert!(t.begin(ip(A), Some("ann"), "test").is_err());
    }

    #[test]
    fn a_spray_of_names_and_addresses_keeps_the_tables_bounded() {
        let limits = Limits {
            max_tracked: 100,
            ..Limits::default()
        };
        let (t, clock) = throttle(limits);
        for i in 0..5_000u32 {
            clock.advance(1);
            let from = format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255);
            let _ = fail(&t, &from, &format!("name{i}"));
        }
        assert!(t.tracked() <= 3 * 100, "{}", t.tracked());
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_slash_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            Net::of(ip("2001:db8:1:2:aaaa::1")),
            Net::of(ip("2001:db8:1:2:bbbb::9"))
        );
        assert_ne!(
            Net::of(ip("2001:db8:1:2::1")),
            Net::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(Net::of(ip("::ffff:192.0.2.7")), Net::of(ip(A)));
        assert_ne!(
            Net::of(ip("::ffff:192.0.2.7")),
            Net::of(ip("::ffff:192.0.2.8"))
        );
    }

    #[test]
    fn a_user_name_cannot_forge_a_log_line() {
        let (t, _) = throttle(Limits::default());
        let lines = fail(&t, A, "x' from 203.0.113.1 via web\nspindle: auth").unwrap();
        assert_eq!(
            lines,
            ["spindle: auth failure for user 'x??from?203.0.113.1?via?web?spindle??auth' from 192.0.2.7 via test"]
        );
        let lines = t.begin(ip(A), None, "listenbrainz").unwrap().fail();
        assert_eq!(
            lines,
            ["spindle: auth failure for a token from 192.0.2.7 via listenbrainz"]
        );
    }

    #[test]
    fn limits_off_never_wait() {
        let (t, _) = throttle(Limits::off());
        for _ in 0..1000 {
            fail(&t, A, "ann").unwrap();
        }
    }
}
