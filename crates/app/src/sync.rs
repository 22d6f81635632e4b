//! Small helpers for the standard library's locks.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, going on with its data when a thread panicked holding it
/// (every lock in Spindle guards data that stays consistent between
/// statements).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
