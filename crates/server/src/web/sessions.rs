//! Logged-in browsers: session id → user, ending when idle
//! ([`super::SESSION_TTL`]) and capped per user
//! ([`super::MAX_SESSIONS_PER_USER`]) by [`IdleSessions`], plus what the
//! admin page lists of each (a public handle, the user, when it started
//! and was last used, the browser and address it started from). The
//! handle, not the id, names a session in a listing and a revocation:
//! the id is the credential and never leaves the cookie.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use serde::Serialize;

use super::{MAX_SESSIONS_PER_USER, SESSION_TTL};
use crate::accounts::random_hex;
use crate::expiry::IdleSessions;
use crate::state::lock;

/// The longest `User-Agent` kept for a session's listing: 200 bytes.
pub const MAX_AGENT_LEN: usize = 200;

/// A web session as the admin page lists it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SessionInfo {
    /// Names the session in listings and revocations.
    pub handle: String,
    pub user: String,
    pub created: i64,
    pub last_use: i64,
    pub agent: String,
    pub ip: Option<IpAddr>,
    /// Order of creation, for the per-user cap (oldest goes first).
    #[serde(skip)]
    seq: u64,
}

#[derive(Default)]
struct Table {
    live: IdleSessions<SESSION_TTL, MAX_SESSIONS_PER_USER>,
    info: HashMap<String, SessionInfo>,
    seq: u64,
}

/// See the module doc.
#[derive(Default)]
pub struct Sessions(Mutex<Table>);

impl Sessions {
    /// Starts a session for `user`; returns its id (the cookie's value).
    pub(crate) fn start(&self, user: &str, now: i64, agent: &str, ip: Option<IpAddr>) -> String {
        let id = random_hex();
        let mut t = lock(&self.0);
        t.live.insert(id.clone(), user, now);
        t.seq += 1;
        let mut agent = agent.to_owned();
        if agent.len() > MAX_AGENT_LEN {
            let mut cut = MAX_AGENT_LEN;
            while !agent.is_char_boundary(cut) {
                cut -= 1;
            }
            agent.truncate(cut);
        }
        let info = SessionInfo {
            handle: random_hex().chars().take(12).collect(),
            user: user.to_owned(),
            created: now,
            last_use: now,
            agent,
            ip,
            seq: t.seq,
        };
        t.info.insert(id.clone(), info);
        // The same rule IdleSessions applies: past the cap, the user's
        // oldest sessions end.
        let mut mine: Vec<(u64, String)> = t
            .info
            .iter()
            .filter(|(_, i)| i.user == user)
            .map(|(id, i)| (i.seq, id.clone()))
            .collect();
        if mine.len() > MAX_SESSIONS_PER_USER {
            mine.sort();
            for (_, old) in mine.iter().take(mine.len() - MAX_SESSIONS_PER_USER) {
                t.info.remove(old);
            }
        }
        id
    }

    /// The user of a live session (a use: it stays alive).
    pub(crate) fn user(&self, id: &str, now: i64) -> Option<String> {
        let mut t = lock(&self.0);
        match t.live.user(id, now) {
            Some(u) => {
                if let Some(i) = t.info.get_mut(id) {
                    i.last_use = i.last_use.max(now);
                }
                Some(u)
            }
            None => {
                t.info.remove(id);
                None
            }
        }
    }

    /// Ends the session with this id (a logout).
    pub(crate) fn end(&self, id: &str) {
        let mut t = lock(&self.0);
        t.live.remove(id);
        t.info.remove(id);
    }

    /// The live sessions, of `user` or of everyone, newest first.
    pub fn list(&self, user: Option<&str>, now: i64) -> Vec<SessionInfo> {
        let mut t = lock(&self.0);
        t.info
            .retain(|_, i| now.saturating_sub(i.last_use) <= SESSION_TTL);
        let mut v: Vec<SessionInfo> = t
            .info
            .values()
            .filter(|i| user.is_none_or(|u| i.user == u))
            .cloned()
            .collect();
        v.sort_by_key(|i| std::cmp::Reverse(i.seq));
        v
    }

    /// Ends the session a listing names `handle`, if `user` is `None` or
    /// owns it; whether one ended.
    pub fn revoke(&self, handle: &str, user: Option<&str>) -> bool {
        let mut t = lock(&self.0);
        let found = t
            .info
            .iter()
            .find(|(_, i)| i.handle == handle && user.is_none_or(|u| i.user == u))
            .map(|(id, _)| id.clone());
        match found {
            Some(id) => {
                t.live.remove(&id);
                t.info.remove(&id);
                true
            }
            None => false,
        }
    }

    /// Ends every session of `user` (a deleted user, a new password);
    /// how many.
    pub fn revoke_user(&self, user: &str) -> usize {
        let mut t = lock(&self.0);
        let ids: Vec<String> = t
            .info
            .iter()
            .filter(|(_, i)| i.user == user)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            t.live.remove(id);
            t.info.remove(id);
        }
        ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revoked_session_no_longer_logs_in_and_others_stay() {
        let s = Sessions::default();
        let a = s.start("ann", 10, "Firefox", None);
        let b = s.start("ann", 11, "Chromium", None);
        let c = s.start("bob", 12, "curl", None);
        let list = s.list(Some("ann"), 20);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].agent, "Chromium", "newest first");
        assert!(!s.revoke(&list[0].handle, Some("bob")), "not bob's");
        assert!(s.revoke(&list[0].handle, Some("ann")));
        assert_eq!(s.user(&b, 21), None);
        assert_eq!(s.user(&a, 21).as_deref(), Some("ann"));
        assert_eq!(s.revoke_user("bob"), 1);
        assert_eq!(s.user(&c, 22), None);
        assert_eq!(s.list(None, 22).len(), 1);
    }

    #[test]
    fn idle_sessions_leave_the_listing_and_the_cap_drops_the_oldest() {
        let s = Sessions::default();
        let first = s.start("ann", 0, "", None);
        for k in 0..MAX_SESSIONS_PER_USER {
            s.start("ann", 1 + k as i64, "", None);
        }
        assert_eq!(s.list(Some("ann"), 100).len(), MAX_SESSIONS_PER_USER);
        assert_eq!(s.user(&first, 100), None, "over the cap");
        assert!(s.list(None, 100 + SESSION_TTL + 100).is_empty());
    }

    #[test]
    fn a_long_user_agent_is_cut_at_a_character_boundary() {
        let s = Sessions::default();
        s.start("ann", 0, &"é".repeat(MAX_AGENT_LEN), None);
        let a = &s.list(None, 0)[0].agent;
        assert!(a.len() <= MAX_AGENT_LEN && a.starts_with('é'));
    }
}
