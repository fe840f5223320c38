//! What earlier snippets of a session bound, as far as this gateway saw:
//! a later snippet may call a helper an earlier one defined with a name
//! like a tool's (`everything_total()`), or redefine a tool function.

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;

/// Sessions remembered; past it the least recently used is forgotten.
const MAX_SESSIONS: usize = 4_096;
/// Names remembered per session; past it the session is not checked again.
const MAX_NAMES: usize = 256;

/// Per session handle, the names its snippets bound that read like tools'.
/// Only sessions that bound such a name have an entry, so it stays small.
#[derive(Default)]
pub struct EarlierNames {
    sessions: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    used: Instant,
    /// `None`: too many to keep; the session's snippets are not checked.
    names: Option<Vec<String>>,
}

impl EarlierNames {
    /// The names `session`'s earlier snippets bound; `None` when they are
    /// too many to know, and the check must be skipped.
    pub fn of(&self, session: &str) -> Option<Vec<String>> {
        let mut sessions = self.sessions.lock();
        match sessions.get_mut(session) {
            Some(entry) => {
                entry.used = Instant::now();
                entry.names.clone()
            }
            None => Some(Vec::new()),
        }
    }

    /// Remembers `names` as bound by a snippet of `session`.
    pub fn add(&self, session: &str, names: Vec<String>) {
        if names.is_empty() {
            return;
        }
        let mut sessions = self.sessions.lock();
        if !sessions.contains_key(session) && sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(handle, _)| handle.clone());
            if let Some(oldest) = oldest {
                sessions.remove(&oldest);
            }
        }
        let entry = sessions.entry(session.to_owned()).or_insert(Entry {
            used: Instant::now(),
            names: Some(Vec::new()),
        });
        entry.used = Instant::now();
        if let Some(known) = &mut entry.names {
            for name in names {
                if !known.contains(&name) {
                    known.push(name);
                }
            }
            if known.len() > MAX_NAMES {
                entry.names = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_remembered_per_session_until_there_are_too_many() {
        let earlier = EarlierNames::default();
        earlier.add("a", vec!["everything_total".into()]);
        earlier.add("a", vec!["everything_total".into(), "fs_walk".into()]);
        assert_eq!(
            earlier.of("a"),
            Some(vec!["everything_total".into(), "fs_walk".into()])
        );
        assert_eq!(earlier.of("b"), Some(Vec::new()));
        let many: Vec<String> = (0..=MAX_NAMES).map(|i| format!("fs_{i}")).collect();
        earlier.add("b", many);
        assert_eq!(earlier.of("b"), None);
    }

    #[test]
    fn the_least_recently_used_session_is_forgotten_first() {
        let earlier = EarlierNames::default();
        for i in 0..MAX_SESSIONS {
            earlier.add(&format!("s{i}"), vec!["fs_x".into()]);
        }
        let _ = earlier.of("s0");
        earlier.add("new", vec!["fs_y".into()]);
        assert_eq!(earlier.of("s0"), Some(vec!["fs_x".into()]));
        assert_eq!(earlier.of("s1"), Some(Vec::new()));
        assert_eq!(earlier.sessions.lock().len(), MAX_SESSIONS);
    }
}
