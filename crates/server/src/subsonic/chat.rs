//! The chat of Subsonic's `addChatMessage` and `getChatMessages`: one
//! room every user of the server shares, kept in memory only (a restart
//! empties it) as a ring of the last [`CHAT_MAX_MESSAGES`] messages, at
//! most [`CHAT_MAX_MESSAGES_PER_USER`] of them one user's, each at most
//! [`CHAT_MAX_MESSAGE_CHARS`] characters. A field of
//! [`super::SubsonicState`].

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::state::lock;

/// How many messages the chat keeps; adding one more drops the oldest.
pub const CHAT_MAX_MESSAGES: usize = 1_000;

/// How many of the kept messages one user's may be; a user's message
/// past it drops their own oldest.
pub const CHAT_MAX_MESSAGES_PER_USER: usize = 100;

/// The longest message accepted, in characters.
pub const CHAT_MAX_MESSAGE_CHARS: usize = 1_000;

/// One message: who wrote it, when (milliseconds since the UNIX epoch, as
/// Subsonic gives times in the chat) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    pub username: String,
    pub time_ms: i64,
    pub message: String,
}

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    #[error("The message is empty: write something")]
    Empty,
    #[error("The message has {chars} characters; at most {max} are allowed: shorten it")]
    TooLong { chars: usize, max: usize },
}

/// The server's chat room.
#[derive(Debug, Default)]
pub struct Chat {
    /// Oldest first.
    messages: Mutex<VecDeque<ChatMessage>>,
}

impl Chat {
    /// Adds `message` (trimmed) by `username` at `time_ms`, dropping the
    /// oldest message when the ring is full.
    pub fn add(&self, username: &str, time_ms: i64, message: &str) -> Result<(), ChatError> {
        let message = message.trim();
        if message.is_empty() {
            return Err(ChatError::Empty);
        }
        let chars = message.chars().count();
        if chars > CHAT_MAX_MESSAGE_CHARS {
            return Err(ChatError::TooLong {
                chars,
                max: CHAT_MAX_MESSAGE_CHARS,
            });
        }
        let mut m = lock(&self.messages);
        // A user at their share makes room with their own oldest message,
        // so one user cannot push everyone else's out of the room.
        let theirs = m.iter().filter(|x| x.username == username).count();
        if theirs >= CHAT_MAX_MESSAGES_PER_USER {
            if let Some(i) = m.iter().position(|x| x.username == username) {
                m.remove(i);
            }
        }
        while m.len() >= CHAT_MAX_MESSAGES {
            m.pop_front();
        }
        m.push_back(ChatMessage {
            username: username.to_owned(),
            time_ms,
            message: message.to_owned(),
        });
        Ok(())
    }

    /// The messages written after `since_ms` (every one kept when
    /// `None`), newest first.
    pub fn since(&self, since_ms: Option<i64>) -> Vec<ChatMessage> {
        lock(&self.messages)
            .iter()
            .rev()
            .filter(|m| since_ms.is_none_or(|s| m.time_ms > s))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_back_newest_first_and_since_leaves_out_older_ones() {
        let chat = Chat::default();
        chat.add("ann", 1_000, "first").unwrap();
        chat.add("bob", 2_000, "  second  ").unwrap();
        let all: Vec<_> = chat.since(None).into_iter().map(|m| m.message).collect();
        assert_eq!(all, ["second", "first"]);
        let newer = chat.since(Some(1_000));
        assert_eq!(newer.len(), 1);
        assert_eq!(newer[0].username, "bob");
        assert_eq!(newer[0].time_ms, 2_000);
    }

    #[test]
    fn the_ring_keeps_only_the_newest_messages() {
        let chat = Chat::default();
        for n in 0..CHAT_MAX_MESSAGES + 5 {
            let user = format!("u{}", n % 20);
            chat.add(&user, n as i64, &format!("m{n}")).unwrap();
        }
        let all = chat.since(None);
        assert_eq!(all.len(), CHAT_MAX_MESSAGES);
        assert_eq!(all[0].message, format!("m{}", CHAT_MAX_MESSAGES + 4));
        assert_eq!(all[CHAT_MAX_MESSAGES - 1].message, "m5");
    }

    #[test]
    fn empty_and_overlong_messages_are_refused() {
        let chat = Chat::default();
        assert_eq!(chat.add("ann", 1, "   "), Err(ChatError::Empty));
        let long = "x".repeat(CHAT_MAX_MESSAGE_CHARS + 1);
        assert!(matches!(
            chat.add("ann", 1, &long),
            Err(ChatError::TooLong { .. })
        ));
        chat.add("ann", 1, &"é".repeat(CHAT_MAX_MESSAGE_CHARS))
            .unwrap();
        assert_eq!(chat.since(None).len(), 1);
    }

    #[test]
    fn one_user_flooding_the_room_drops_their_own_messages_only() {
        let chat = Chat::default();
        chat.add("bob", 0, "hello").unwrap();
        for n in 1..=CHAT_MAX_MESSAGES as i64 {
            chat.add("ann", n, "spam").unwrap();
        }
        let all = chat.since(None);
        assert_eq!(all.len(), CHAT_MAX_MESSAGES_PER_USER + 1);
        assert_eq!(all.last().map(|m| m.message.as_str()), Some("hello"));
    }
}
