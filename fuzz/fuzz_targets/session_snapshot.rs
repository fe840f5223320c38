//! Arbitrary bytes as stored session records: first as they are (a hostile
//! store: almost all fail the tag), then signed with the key (as if the key
//! had leaked or the writer had a bug), which reaches the checks behind the
//! tag. Must never panic, and what opens must seal back to the same session.
//!
//! Input: one byte that picks the size limit, then the record body.
#![no_main]

use std::path::Path;
use std::sync::LazyLock;

use codemcp_store::{Handle, SealKey, seal};
use libfuzzer_sys::fuzz_target;

static KEY: LazyLock<SealKey> = LazyLock::new(|| {
    SealKey::from_setting(Some("fuzz-session-key-0123456789abcdefghij"), Path::new("/")).expect("key")
});
static HANDLE: LazyLock<Handle> = LazyLock::new(|| Handle::parse("fuzzfuzzfuzzfuzzfuzz00").expect("handle"));

fuzz_target!(|data: &[u8]| {
    let Some((&limit, body)) = data.split_first() else { return };
    let max_payload = usize::from(limit) * 16;
    let _ = seal::unseal(&KEY, &HANDLE, body, max_payload);
    let signed = seal::authenticate(&KEY, &HANDLE, body.to_vec());
    let Ok(stored) = seal::unseal(&KEY, &HANDLE, &signed, max_payload) else { return };
    assert!(stored.snapshot.payload.len() <= max_payload);
    let resealed = seal::seal(&KEY, &HANDLE, &stored.owner, stored.version, &stored.snapshot);
    assert_eq!(seal::unseal(&KEY, &HANDLE, &resealed, max_payload).as_ref(), Ok(&stored));
});
