//! A run parked at a call that waits for the user's approval (2026-07-28
//! clients, SEP-2322): the engine stops the run there and gives back its
//! suspended state; the gateway keeps it in the session store under a
//! handle of its own, so the client's retry with the answer may reach any
//! gateway that shares the store, which resumes the run at that very call.
//!
//! Only engines that can dump a suspended run park (Monty, both placements);
//! the others wait for the answer in memory.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The call a run stopped at, as the engine reports it.
#[derive(Debug, Clone)]
pub struct ParkedCall {
    pub server: String,
    pub tool: String,
    pub args: Map<String, Value>,
    /// The handle the parked run is stored under, once it is.
    pub state: Option<String>,
}

/// What a parked run's record holds besides the engine's dump.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parked {
    /// The handle of the session the run belongs to.
    pub session: String,
    /// The session's stored version when the run began: the run resumes only
    /// if nothing else ran in the session meanwhile.
    pub base: u64,
    /// When it parked, in ms since the Unix epoch.
    pub at_ms: u64,
    /// The snippet, for what engines do at its end (`result`).
    pub code: String,
    /// The saved helpers run before it (records from before it was kept
    /// have them at the start of `code`, not told apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prelude: Option<crate::helpers::Prelude>,
    /// What the run printed, and the tool calls it made, before it parked.
    pub stdout: String,
    /// …and wrote to stderr (absent in records kept before it existed).
    #[serde(default)]
    pub stderr: String,
    pub tool_calls: u32,
    pub server: String,
    pub tool: String,
    pub args: Map<String, Value>,
}

impl Parked {
    pub fn new(session: String, base: u64, code: String, call: ParkedCall) -> Self {
        Self {
            session,
            base,
            at_ms: now_ms(),
            code,
            prelude: None,
            stdout: String::new(),
            stderr: String::new(),
            tool_calls: 0,
            server: call.server,
            tool: call.tool,
            args: call.args,
        }
    }

    /// How long ago it parked.
    pub fn age(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.at_ms))
    }

    /// The record's payload: the header's length, the header, the dump.
    pub fn encode(&self, dump: &[u8]) -> Vec<u8> {
        let header = serde_json::to_vec(self).unwrap_or_default();
        let length = u32::try_from(header.len()).unwrap_or(u32::MAX);
        let mut payload = Vec::with_capacity(4 + header.len() + dump.len());
        payload.extend_from_slice(&length.to_be_bytes());
        payload.extend_from_slice(&header);
        payload.extend_from_slice(dump);
        payload
    }

    /// The header and the dump of a payload [`encode`](Self::encode) made.
    /// Only sealed records (our own bytes) get here.
    pub fn decode(payload: &[u8]) -> Option<(Self, Vec<u8>)> {
        let length = u32::from_be_bytes(payload.get(..4)?.try_into().ok()?);
        let end = 4usize.checked_add(usize::try_from(length).ok()?)?;
        let header = serde_json::from_slice(payload.get(4..end)?).ok()?;
        Some((header, payload.get(end..)?.to_vec()))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parked_record_reads_back_and_a_cut_one_does_not() {
        let call = ParkedCall {
            server: "fs".into(),
            tool: "write_file".into(),
            args: Map::new(),
            state: None,
        };
        let parked = Parked::new("h".into(), 3, "x = 1".into(), call);
        let payload = parked.encode(b"DUMP");
        let (back, dump) = Parked::decode(&payload).unwrap();
        assert_eq!((back.session.as_str(), back.base), ("h", 3));
        assert_eq!(dump, b"DUMP");
        assert!(Parked::decode(&payload[..6]).is_none());
        assert!(Parked::decode(&[0xff, 0xff, 0xff, 0xff, b'{']).is_none());
    }
}
