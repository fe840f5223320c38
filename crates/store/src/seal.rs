//! The stored record format: a session snapshot authenticated with
//! HMAC-SHA256 over the record and the handle it belongs to.
//!
//! ```text
//! offset  size  field
//!  0       8    MAGIC "CMCPSESS"
//!  8       1    FORMAT (1)
//!  9       1    kind: 1 Monty, 2 CPython
//! 10       1    owner: 0 anonymous, 1 token digest
//! 11      32    owner digest (zeros when anonymous)
//! 43       8    version, big-endian
//! 51       1    n = length of the Monty version string (≤ 32)
//! 52       n    Monty version string, e.g. "monty 1.4.0 dump 14"
//! 52+n     …    payload
//! end-32  32    tag = HMAC-SHA256(key, DOMAIN | len(handle) | handle | all bytes above)
//! ```
//!
//! [`unseal`] checks, in this order and before copying anything: length
//! bounds, magic, tag (constant time), format, then the fields. Nothing past
//! the magic is interpreted before the tag verified.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::key::SealKey;
use super::{Handle, Owner, Snapshot, SnapshotKind, Stored};

const MAGIC: &[u8; 8] = b"CMCPSESS";
const FORMAT: u8 = 1;
const DOMAIN: &[u8] = b"codemcp session record\0";
const TAG_LEN: usize = 32;
const FIXED_HEADER: usize = 52;
const MAX_VERSION_STRING: usize = 32;
/// The largest header a record can have.
pub const MAX_HEADER: usize = FIXED_HEADER + MAX_VERSION_STRING;
/// The largest payload the format carries (the size limits stay far below).
pub const MAX_PAYLOAD: usize = 1 << 30;
const MIN_RECORD: usize = FIXED_HEADER + TAG_LEN;

/// The `monty` release pinned in Cargo.toml (the crate exports no version
/// constant; a test checks the two agree).
const MONTY_RELEASE: &str = "1.4.0";

/// Names the Monty build whose dumps this gateway reads. A dump from another
/// build is refused rather than handed to a loader that may misread it.
pub fn monty_version() -> String {
    format!("monty {MONTY_RELEASE} dump {}", monty::DUMP_VERSION)
}

/// Why a stored record was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    TooLarge {
        size: usize,
        max: usize,
    },
    Truncated,
    /// Does not start like a session record at all.
    NotARecord,
    /// The tag does not match: changed, moved to another handle, or sealed
    /// with another key.
    Tampered,
    /// Authentic, but in a record format this build does not know.
    UnknownFormat(u8),
    /// Authentic, but the Monty dump was written by another Monty build.
    OtherMontyVersion(String),
    /// Authentic but inconsistent: only a bug in the writer can cause this.
    Malformed(&'static str),
    /// Authentic, but not the version the store holds for the session: an
    /// older record put back (a replay or a rollback).
    Stale {
        record: u64,
        store: u64,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::TooLarge { size, max } => write!(f, "too large ({size} bytes, limit {max})"),
            Reason::Truncated => f.write_str("truncated"),
            Reason::NotARecord => f.write_str("not a session record"),
            Reason::Tampered => f.write_str("tampered (or sealed with another key)"),
            Reason::UnknownFormat(v) => write!(f, "unknown record format {v}"),
            Reason::OtherMontyVersion(v) => write!(f, "written by another Monty version ({v})"),
            Reason::Malformed(what) => write!(f, "malformed ({what})"),
            Reason::Stale { record, store } => write!(
                f,
                "version {record} while the store holds version {store} of this session (an older record put back)"
            ),
        }
    }
}

/// The largest record a store may hand to [`unseal`] under `max_payload`.
/// Stores check a record's length against this before fetching it.
pub fn max_record_len(max_payload: usize) -> usize {
    max_payload + MAX_HEADER + TAG_LEN
}

/// The record for `snapshot` under `handle`. The caller has bounded the payload.
pub fn seal(
    key: &SealKey,
    handle: &Handle,
    owner: &Owner,
    version: u64,
    snapshot: &Snapshot,
) -> Vec<u8> {
    let monty = monty_version();
    let mut body = Vec::with_capacity(MAX_HEADER + snapshot.payload.len() + TAG_LEN);
    body.extend_from_slice(MAGIC);
    body.push(FORMAT);
    body.push(match snapshot.kind {
        SnapshotKind::Monty => 1,
        SnapshotKind::Cpython => 2,
        SnapshotKind::Parked => 3,
    });
    body.push(u8::from(owner.digest().is_some()));
    body.extend_from_slice(owner.digest().unwrap_or(&[0; 32]));
    body.extend_from_slice(&version.to_be_bytes());
    body.push(monty.len() as u8);
    body.extend_from_slice(monty.as_bytes());
    body.extend_from_slice(&snapshot.payload);
    authenticate(key, handle, body)
}

/// Appends the tag of `body` under `handle`. Public for the fuzz target, which
/// needs records with a valid tag to reach the checks behind it.
pub fn authenticate(key: &SealKey, handle: &Handle, mut body: Vec<u8>) -> Vec<u8> {
    let tag = mac(key, handle, &body).finalize().into_bytes();
    body.extend_from_slice(&tag);
    body
}

#[allow(clippy::expect_used)] // HMAC accepts every key length
fn mac(key: &SealKey, handle: &Handle, body: &[u8]) -> Hmac<Sha256> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(key.bytes()).expect("HMAC takes keys of any length");
    mac.update(DOMAIN);
    // Handles are at most 32 bytes; the length byte keeps handle and body apart.
    mac.update(&[handle.as_str().len() as u8]);
    mac.update(handle.as_str().as_bytes());
    mac.update(body);
    mac
}

/// The session in `record`, if `record` is an authentic record of `handle`
/// whose payload is at most `max_payload` bytes.
pub fn unseal(
    key: &SealKey,
    handle: &Handle,
    record: &[u8],
    max_payload: usize,
) -> Result<Stored, Reason> {
    let max = max_record_len(max_payload);
    if record.len() > max {
        return Err(Reason::TooLarge {
            size: record.len(),
            max,
        });
    }
    if record.len() < MIN_RECORD {
        return Err(if record.starts_with(MAGIC) || MAGIC.starts_with(record) {
            Reason::Truncated
        } else {
            Reason::NotARecord
        });
    }
    if &record[..MAGIC.len()] != MAGIC {
        return Err(Reason::NotARecord);
    }
    let (body, tag) = record.split_at(record.len() - TAG_LEN);
    mac(key, handle, body)
        .verify_slice(tag)
        .map_err(|_| Reason::Tampered)?;
    decode_body(body, max_payload)
}

/// Reads a body whose tag verified.
fn decode_body(body: &[u8], max_payload: usize) -> Result<Stored, Reason> {
    if body[8] != FORMAT {
        return Err(Reason::UnknownFormat(body[8]));
    }
    let kind = match body[9] {
        1 => SnapshotKind::Monty,
        2 => SnapshotKind::Cpython,
        3 => SnapshotKind::Parked,
        _ => return Err(Reason::Malformed("snapshot kind")),
    };
    let digest: [u8; 32] = body[11..43]
        .try_into()
        .map_err(|_| Reason::Malformed("owner"))?;
    let owner = match body[10] {
        0 if digest == [0; 32] => Owner::anonymous(),
        1 => Owner::from_digest(Some(digest)),
        _ => return Err(Reason::Malformed("owner")),
    };
    let version = u64::from_be_bytes(
        body[43..51]
            .try_into()
            .map_err(|_| Reason::Malformed("version"))?,
    );
    let n = usize::from(body[51]);
    let payload_at = FIXED_HEADER + n;
    if n > MAX_VERSION_STRING || payload_at > body.len() {
        return Err(Reason::Malformed("Monty version"));
    }
    let monty = std::str::from_utf8(&body[FIXED_HEADER..payload_at])
        .map_err(|_| Reason::Malformed("Monty version"))?;
    // A CPython payload is JSON, which does not depend on the Monty build.
    if matches!(kind, SnapshotKind::Monty | SnapshotKind::Parked) && monty != monty_version() {
        return Err(Reason::OtherMontyVersion(monty.to_owned()));
    }
    let payload = &body[payload_at..];
    if payload.len() > max_payload {
        return Err(Reason::TooLarge {
            size: payload.len(),
            max: max_payload,
        });
    }
    Ok(Stored {
        snapshot: Snapshot {
            kind,
            payload: payload.to_vec(),
        },
        owner,
        version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1 << 16;

    fn fixture() -> (SealKey, Handle, Vec<u8>) {
        let key = SealKey::ephemeral();
        let handle = Handle::mint();
        let snap = Snapshot {
            kind: SnapshotKind::Monty,
            payload: b"dump bytes".to_vec(),
        };
        let record = seal(&key, &handle, &Owner::of_token(Some("t0k")), 7, &snap);
        (key, handle, record)
    }

    #[test]
    fn sealed_record_opens_to_what_went_in() {
        let (key, handle, record) = fixture();
        let stored = unseal(&key, &handle, &record, MAX).expect("opens");
        assert_eq!(stored.snapshot.payload, b"dump bytes");
        assert_eq!(stored.snapshot.kind, SnapshotKind::Monty);
        assert_eq!(stored.owner, Owner::of_token(Some("t0k")));
        assert_eq!(stored.version, 7);
    }

    #[test]
    fn flipped_byte_is_refused() {
        let (key, handle, record) = fixture();
        for i in 0..record.len() {
            let mut bad = record.clone();
            bad[i] ^= 0x01;
            let err = unseal(&key, &handle, &bad, MAX).expect_err("flipped byte accepted");
            let want = if i < MAGIC.len() {
                Reason::NotARecord
            } else {
                Reason::Tampered
            };
            assert_eq!(err, want, "byte {i}");
        }
    }

    #[test]
    fn truncated_record_is_refused() {
        let (key, handle, record) = fixture();
        for len in 0..record.len() {
            let err =
                unseal(&key, &handle, &record[..len], MAX).expect_err("truncated record accepted");
            if len < MIN_RECORD {
                assert_eq!(err, Reason::Truncated, "length {len}");
            } else {
                assert_eq!(err, Reason::Tampered, "length {len}");
            }
        }
    }

    #[test]
    fn record_moved_to_another_handle_is_refused() {
        let (key, _, record) = fixture();
        assert_eq!(
            unseal(&key, &Handle::mint(), &record, MAX),
            Err(Reason::Tampered)
        );
    }

    #[test]
    fn wrong_key_is_refused() {
        let (_, handle, record) = fixture();
        assert_eq!(
            unseal(&SealKey::ephemeral(), &handle, &record, MAX),
            Err(Reason::Tampered)
        );
    }

    /// A validly tagged record claiming another Monty build: what an old
    /// gateway's sessions look like to a new one.
    fn record_from_monty(key: &SealKey, handle: &Handle, kind: u8, monty: &str) -> Vec<u8> {
        let (_, _, good) = fixture();
        let mut body = good[..43].to_vec();
        body[9] = kind;
        body[10] = 0;
        body[11..43].fill(0);
        body.extend_from_slice(&1u64.to_be_bytes());
        body.push(monty.len() as u8);
        body.extend_from_slice(monty.as_bytes());
        body.extend_from_slice(b"payload");
        authenticate(key, handle, body)
    }

    #[test]
    fn other_monty_version_is_refused() {
        let key = SealKey::ephemeral();
        let handle = Handle::mint();
        let old = record_from_monty(&key, &handle, 1, "monty 1.3.0 dump 13");
        let err = unseal(&key, &handle, &old, MAX).expect_err("old dump accepted");
        assert_eq!(err, Reason::OtherMontyVersion("monty 1.3.0 dump 13".into()));
        assert!(err.to_string().contains("written by another Monty version"));
        // CPython variables are JSON, readable whatever Monty wrote beside them.
        let json = record_from_monty(&key, &handle, 2, "monty 1.3.0 dump 13");
        assert_eq!(
            unseal(&key, &handle, &json, MAX).map(|s| s.snapshot.payload),
            Ok(b"payload".to_vec())
        );
    }

    #[test]
    fn oversized_record_is_refused_before_reading() {
        let key = SealKey::ephemeral();
        let handle = Handle::mint();
        // All zeros: not even the magic matches, so only the length check can
        // have refused it; the result proves it ran first.
        let huge = vec![0u8; max_record_len(MAX) + 1];
        assert!(matches!(
            unseal(&key, &handle, &huge, MAX),
            Err(Reason::TooLarge { .. })
        ));
        // A payload within the record bound but over the limit is refused too.
        let snap = Snapshot {
            kind: SnapshotKind::Cpython,
            payload: vec![b'x'; MAX + 10],
        };
        let record = seal(&key, &handle, &Owner::anonymous(), 1, &snap);
        assert!(matches!(
            unseal(&key, &handle, &record, MAX),
            Err(Reason::TooLarge { .. })
        ));
    }

    #[test]
    fn authentic_garbage_is_refused_without_panic() {
        let key = SealKey::ephemeral();
        let handle = Handle::mint();
        let (_, _, good) = fixture();
        let cases: [(usize, u8); 4] = [(8, 9), (9, 7), (10, 5), (51, 200)];
        for (at, value) in cases {
            let mut body = good[..good.len() - TAG_LEN].to_vec();
            body[at] = value;
            let record = authenticate(&key, &handle, body);
            assert!(
                unseal(&key, &handle, &record, MAX).is_err(),
                "byte {at} = {value}"
            );
        }
    }

    proptest::proptest! {
        /// The fuzz target's property, on every `cargo test`: hostile bytes,
        /// with or without a valid tag, never panic, and whatever opens
        /// seals back to the same session.
        #[test]
        fn any_bytes_are_refused_or_round_trip(
            limit in 0usize..512,
            magic in proptest::bool::ANY,
            tail in proptest::collection::vec(0u8..=255, 0..400),
        ) {
            let key = SealKey::ephemeral();
            let handle = Handle::mint();
            // Half the inputs look like a record, so the checks behind the tag run.
            let mut body = if magic { b"CMCPSESS\x01".to_vec() } else { Vec::new() };
            body.extend_from_slice(&tail);
            let _ = unseal(&key, &handle, &body, limit);
            let signed = authenticate(&key, &handle, body);
            if let Ok(stored) = unseal(&key, &handle, &signed, limit) {
                let resealed = seal(&key, &handle, &stored.owner, stored.version, &stored.snapshot);
                proptest::prop_assert_eq!(unseal(&key, &handle, &resealed, limit), Ok(stored));
            }
        }
    }

    #[test]
    fn monty_release_matches_the_pinned_crate() {
        let manifest = include_str!("../../../Cargo.toml");
        assert!(
            manifest.contains(&format!("monty = \"={MONTY_RELEASE}\"")),
            "update MONTY_RELEASE in seal.rs"
        );
    }
}
