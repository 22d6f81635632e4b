//! In-memory credentials that expire: Last.fm `auth.getToken` tokens
//! waiting for approval ([`PendingTokens`]) and session ids that end
//! after a time without use ([`IdleSessions`]: Audioscrobbler 1.2, the
//! web UI).
//!
//! Both tables are bounded, so no client can grow the server's memory by
//! asking for more: an expired entry is dropped when it is met and by
//! sweeps that run as entries are added (amortised O(1) per insert), and
//! each table holds at most a fixed number of entries, the oldest dropped
//! first. A client whose token or session was dropped gets its
//! protocol's "expired" answer and starts again.

use std::collections::{HashMap, VecDeque};

use crate::lastfm::{PendingToken, TOKEN_TTL};

/// Most `auth.getToken` tokens waiting at once: 10,000. A desktop login
/// holds one for the minute or two a user takes to approve it, so this is
/// far more than a home server sees; past it the oldest are dropped (the
/// client asks for another), which bounds the table at about 1 MiB.
pub const MAX_PENDING_TOKENS: usize = 10_000;

/// `auth.getToken` tokens by value, with their order of creation.
/// Tokens older than [`TOKEN_TTL`] (60 minutes, Last.fm's rule) are
/// dropped on the next insert; callers still check the age of a token
/// they look up, as a token may outlive its hour until then.
#[derive(Default)]
pub(crate) struct PendingTokens {
    map: HashMap<String, PendingToken>,
    /// (created, token), oldest first; may name tokens already used.
    order: VecDeque<(i64, String)>,
}

impl PendingTokens {
    /// Adds a token made at `t.created`, first dropping the expired ones
    /// and, at [`MAX_PENDING_TOKENS`], the oldest.
    pub fn insert(&mut self, token: String, t: PendingToken) {
        let now = t.created;
        while let Some((created, _)) = self.order.front() {
            if created.saturating_add(TOKEN_TTL) >= now {
                break;
            }
            if let Some((_, old)) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
        while self.map.len() >= MAX_PENDING_TOKENS {
            match self.order.pop_front() {
                Some((_, old)) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
        // Tokens exchanged or refused leave their name in `order`; keep it
        // within twice the table.
        if self.order.len() >= 2 * MAX_PENDING_TOKENS {
            let map = &self.map;
            self.order.retain(|(_, k)| map.contains_key(k));
        }
        self.order.push_back((now, token.clone()));
        self.map.insert(token, t);
    }

    pub fn get(&self, token: &str) -> Option<&PendingToken> {
        self.map.get(token)
    }

    pub fn get_mut(&mut self, token: &str) -> Option<&mut PendingToken> {
        self.map.get_mut(token)
    }

    pub fn remove(&mut self, token: &str) -> Option<PendingToken> {
        self.map.remove(token)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// Session ids → user, each ending `IDLE` seconds after its last use; a
/// user holds at most `PER_USER` of them (a new login drops that user's
/// oldest). Only an authenticated user gets a session, so the table holds
/// at most `PER_USER` × the number of accounts.
#[derive(Default)]
pub(crate) struct IdleSessions<const IDLE: i64, const PER_USER: usize> {
    by_id: HashMap<String, Entry>,
    /// Each user's session ids, oldest first.
    by_user: HashMap<String, VecDeque<String>>,
    added_since_sweep: usize,
}

struct Entry {
    user: String,
    last_use: i64,
}

impl<const IDLE: i64, const PER_USER: usize> IdleSessions<IDLE, PER_USER> {
    /// Starts a session for `user` at `now`.
    pub fn insert(&mut self, id: String, user: &str, now: i64) {
        // A sweep costs the table's size and runs once per half a table
        // of inserts: O(1) per insert, and idle sessions do not pile up.
        self.added_since_sweep += 1;
        if self.added_since_sweep > self.by_id.len() / 2 {
            self.sweep(now);
        }
        let ids = self.by_user.entry(user.to_owned()).or_default();
        while ids.len() >= PER_USER.max(1) {
            if let Some(old) = ids.pop_front() {
                self.by_id.remove(&old);
            }
        }
        ids.push_back(id.clone());
        self.by_id.insert(
            id,
            Entry {
                user: user.to_owned(),
                last_use: now,
            },
        );
    }

    /// The user of a live session, which counts as a use; `None` for an
    /// unknown or ended one (an ended one is dropped).
    pub fn user(&mut self, id: &str, now: i64) -> Option<String> {
        let e = self.by_id.get_mut(id)?;
        if now.saturating_sub(e.last_use) > IDLE {
            let user = e.user.clone();
            self.forget(id, &user);
            return None;
        }
        e.last_use = e.last_use.max(now);
        Some(e.user.clone())
    }

    /// Ends a session; false when there was none.
    pub fn remove(&mut self, id: &str) -> bool {
        match self.by_id.get(id).map(|e| e.user.clone()) {
            Some(user) => {
                self.forget(id, &user);
                true
            }
            None => false,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_id.len()
    }

    fn forget(&mut self, id: &str, user: &str) {
        self.by_id.remove(id);
        if let Some(ids) = self.by_user.get_mut(user) {
            ids.retain(|i| i != id);
            if ids.is_empty() {
                self.by_user.remove(user);
            }
        }
    }

    fn sweep(&mut self, now: i64) {
        self.by_id
            .retain(|_, e| now.saturating_sub(e.last_use) <= IDLE);
        let live = &self.by_id;
        self.by_user.retain(|_, ids| {
            ids.retain(|i| live.contains_key(i));
            !ids.is_empty()
        });
        self.added_since_sweep = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(created: i64) -> PendingToken {
        PendingToken {
            api_key: "k".into(),
            created,
            approved_by: None,
        }
    }

    #[test]
    fn tokens_older_than_an_hour_are_dropped_by_the_next_insert() {
        let mut t = PendingTokens::default();
        for i in 0..100 {
            t.insert(format!("old{i}"), token(1000));
        }
        t.get_mut("old0").unwrap().approved_by = Some("ann".into());
        assert!(t.remove("old1").is_some());
        t.insert("new".into(), token(1000 + TOKEN_TTL + 1));
        assert_eq!(t.len(), 1);
        assert!(t.get("old0").is_none() && t.get("new").is_some());
    }

    #[test]
    fn pending_tokens_never_exceed_the_cap_and_the_oldest_go_first() {
        let mut t = PendingTokens::default();
        for i in 0..MAX_PENDING_TOKENS + 500 {
            t.insert(format!("t{i}"), token(1000));
        }
        assert_eq!(t.len(), MAX_PENDING_TOKENS);
        assert!(t.get("t499").is_none(), "the oldest tokens were dropped");
        assert!(t.get("t500").is_some());
        // Tokens used up leave no trail: the order stays bounded too.
        let mut t = PendingTokens::default();
        for i in 0..3 * MAX_PENDING_TOKENS {
            t.insert(format!("u{i}"), token(1000));
            t.remove(&format!("u{i}"));
        }
        assert_eq!(t.len(), 0);
        assert!(t.order.len() <= 2 * MAX_PENDING_TOKENS);
    }

    type S = IdleSessions<100, 3>;

    #[test]
    fn a_session_ends_after_its_idle_time_and_use_extends_it() {
        let mut s = S::default();
        s.insert("a".into(), "ann", 0);
        assert_eq!(s.user("a", 90).as_deref(), Some("ann"));
        assert_eq!(s.user("a", 190).as_deref(), Some("ann"));
        assert_eq!(s.user("a", 291), None);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn a_user_keeps_only_their_newest_sessions() {
        let mut s = S::default();
        for i in 0..10 {
            s.insert(format!("s{i}"), "ann", i);
        }
        s.insert("b".into(), "bob", 10);
        assert_eq!(s.len(), 4);
        assert_eq!(s.user("s6", 11), None);
        assert_eq!(s.user("s9", 11).as_deref(), Some("ann"));
        assert!(s.remove("s9") && !s.remove("s9"));
    }

    #[test]
    fn idle_sessions_are_swept_as_new_ones_arrive() {
        let mut s = IdleSessions::<100, 1000>::default();
        for i in 0..50 {
            s.insert(format!("old{i}"), &format!("u{i}"), 0);
        }
        for i in 0..50 {
            s.insert(format!("new{i}"), "ann", 1000);
        }
        assert_eq!(s.len(), 50, "no session of the first 50 was used again");
        assert_eq!(s.by_user.len(), 1);
    }
}
