//! What the Last.fm side keeps in memory only, on the primary of a
//! cluster (`crate::cluster::route`): the `auth.getToken` tokens waiting
//! for a user's approval and the Audioscrobbler 1.2 session ids. Both
//! expire and are bounded ([`crate::expiry`]); the core never sees them.

use std::sync::Mutex;

use super::{as12, TOKEN_TTL};
use crate::expiry::PendingTokens;
use crate::state::lock;

/// The Last.fm adapter's substate (`StateParts::lastfm`).
#[derive(Default)]
pub struct LastfmState {
    /// `auth.getToken` tokens, expiring and capped.
    tokens: Mutex<PendingTokens>,
    /// AS 1.2 session ids → user, expiring when idle and capped per user.
    as12_sessions: Mutex<as12::Sessions>,
}

/// An `auth.getToken` token waiting for approval.
#[derive(Debug, Clone)]
pub struct PendingToken {
    pub api_key: String,
    pub created: i64,
    pub approved_by: Option<String>,
}

/// What `auth.getSession` finds for a token.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Exchange {
    /// Approved by this user; the token is used up.
    Approved(String),
    /// Waiting for approval; the token stays.
    Unapproved,
    /// Unknown, expired or made for another API key (an expired or
    /// foreign one is dropped).
    Expired,
}

impl LastfmState {
    /// Keeps a new token made at `now` for `api_key`.
    pub(crate) fn add_token(&self, token: String, api_key: String, now: i64) {
        lock(&self.tokens).insert(
            token,
            PendingToken {
                api_key,
                created: now,
                approved_by: None,
            },
        );
    }

    /// `auth.getSession`'s look at `token`, asked with `api_key` at `now`.
    pub(crate) fn exchange(&self, token: &str, api_key: &str, now: i64) -> Exchange {
        let mut tokens = lock(&self.tokens);
        let Some(t) = tokens.get(token).cloned() else {
            return Exchange::Expired;
        };
        if t.created + TOKEN_TTL < now || t.api_key != api_key {
            tokens.remove(token);
            return Exchange::Expired;
        }
        let Some(user) = t.approved_by else {
            return Exchange::Unapproved;
        };
        tokens.remove(token);
        Exchange::Approved(user)
    }

    /// For the approval page: the token exists, is fresh, and belongs to
    /// the key; it is then approved by `user`.
    pub(crate) fn approve(&self, api_key: &str, token: &str, user: &str, now: i64) -> bool {
        let mut tokens = lock(&self.tokens);
        match tokens.get_mut(token) {
            Some(t) if t.api_key == api_key && t.created + TOKEN_TTL >= now => {
                t.approved_by = Some(user.to_owned());
                true
            }
            _ => false,
        }
    }

    /// Whether a token is waiting for approval.
    pub(crate) fn pending(&self, api_key: &str, token: &str, now: i64) -> bool {
        lock(&self.tokens)
            .get(token)
            .is_some_and(|t| t.api_key == api_key && t.created + TOKEN_TTL >= now)
    }

    /// Starts an AS 1.2 session `sid` of `user` at `now`.
    pub(crate) fn add_session(&self, sid: String, user: &str, now: i64) {
        lock(&self.as12_sessions).insert(sid, user, now);
    }

    /// The user of the AS 1.2 session `sid`, which counts as used at `now`.
    pub(crate) fn session_user(&self, sid: &str, now: i64) -> Option<String> {
        lock(&self.as12_sessions).user(sid, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_exchanged_once_approved_and_only_under_its_key_within_the_hour() {
        let s = LastfmState::default();
        s.add_token("t".into(), "k".into(), 1000);
        assert!(s.pending("k", "t", 1000));
        assert!(!s.pending("other", "t", 1000));
        assert_eq!(s.exchange("t", "k", 1001), Exchange::Unapproved);
        assert!(s.approve("k", "t", "ann", 1002));
        assert_eq!(s.exchange("t", "k", 1003), Exchange::Approved("ann".into()));
        assert_eq!(s.exchange("t", "k", 1004), Exchange::Expired, "used up");

        s.add_token("u".into(), "k".into(), 1000);
        assert!(s.approve("k", "u", "ann", 1000));
        assert_eq!(s.exchange("u", "other", 1001), Exchange::Expired);
        assert_eq!(s.exchange("u", "k", 1001), Exchange::Expired, "dropped");

        s.add_token("v".into(), "k".into(), 1000);
        assert!(!s.approve("k", "v", "ann", 1000 + TOKEN_TTL + 1));
        assert!(!s.pending("k", "v", 1000 + TOKEN_TTL + 1));
    }
}
