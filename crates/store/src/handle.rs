//! Session handles (bearer capabilities minted here) and owners (who may use
//! a session).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// An opaque session handle: 16 bytes from the OS's CSPRNG, base64url
/// without padding (22 characters). Anyone who knows an anonymous session's
/// handle can use it, so it is as secret as a password.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Handle(String);

impl Handle {
    /// Shortest and longest handle [`Handle::parse`] accepts: minted ones are
    /// 22 characters; the range leaves room for a longer format later.
    pub const MIN_LEN: usize = 16;
    pub const MAX_LEN: usize = 32;

    /// A fresh handle.
    pub fn mint() -> Self {
        Self(URL_SAFE_NO_PAD.encode(random_bytes::<16>()))
    }

    /// A handle a client sent, if it can be one. Only URL-safe characters get
    /// through, so a handle is safe in keys, paths and logs.
    pub fn parse(text: &str) -> Option<Self> {
        let ok_len = (Self::MIN_LEN..=Self::MAX_LEN).contains(&text.len());
        let ok_chars = text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        (ok_len && ok_chars).then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first characters only, for logs: enough to correlate, too few to use.
    pub fn short(&self) -> &str {
        &self.0[..6]
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Debug shows only the prefix, so a handle in a `{:?}` log is not a capability.
impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handle({}…)", self.short())
    }
}

/// Who owns a session: a SHA-256 digest of the caller's bearer token (the
/// token itself is never stored), or nobody for loopback callers without one.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner(Option<[u8; 32]>);

impl Owner {
    pub fn of_token(token: Option<&str>) -> Self {
        Self(token.map(|token| {
            // Domain-separated, so this digest matches no other use of the token.
            let mut hash = Sha256::new();
            hash.update(b"codemcp session owner v1\0");
            hash.update(token.as_bytes());
            hash.finalize().into()
        }))
    }

    /// A principal of `CODEMCP_HTTP_TOKENS`, by name: its sessions stay its
    /// own when its token is replaced.
    pub fn of_principal(name: &str) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"codemcp principal owner v1\0");
        hash.update(name.as_bytes());
        Self(Some(hash.finalize().into()))
    }

    pub fn anonymous() -> Self {
        Self(None)
    }

    /// Who this is in logs: `anonymous`, or `token:` and the start of the
    /// token's digest (never the token).
    pub fn label(&self) -> String {
        match &self.0 {
            None => "anonymous".to_owned(),
            Some(digest) => {
                let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
                format!("token:{hex}")
            }
        }
    }

    pub fn digest(&self) -> Option<&[u8; 32]> {
        self.0.as_ref()
    }

    pub(crate) fn from_digest(digest: Option<[u8; 32]>) -> Self {
        Self(digest)
    }
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("Owner(anonymous)"),
            Some(d) => write!(
                f,
                "Owner({:02x}{:02x}{:02x}{:02x}…)",
                d[0], d[1], d[2], d[3]
            ),
        }
    }
}

/// Bytes from the OS's CSPRNG. Without one the gateway cannot mint
/// unguessable handles or keys at all, so failing here is fatal.
#[allow(clippy::expect_used)] // see above: no safe way on without randomness
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the OS random number generator failed");
    bytes
}

pub(crate) fn random_token() -> u128 {
    u128::from_le_bytes(random_bytes())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn minted_handle_is_22_url_safe_chars_and_parses_back() {
        let h = Handle::mint();
        assert_eq!(h.as_str().len(), 22);
        assert_eq!(Handle::parse(h.as_str()), Some(h.clone()));
        assert_eq!(h.to_string(), h.as_str());
    }

    #[test]
    fn handles_carry_128_random_bits() {
        // 10,000 handles: no repeat, and every base64 symbol shows up in every
        // position but the last (which holds only 2 bits: 4 symbols).
        let handles: Vec<Handle> = (0..10_000).map(|_| Handle::mint()).collect();
        let distinct: HashSet<&str> = handles.iter().map(Handle::as_str).collect();
        assert_eq!(distinct.len(), handles.len());
        for pos in 0..22 {
            let symbols: HashSet<u8> = handles.iter().map(|h| h.as_str().as_bytes()[pos]).collect();
            let expected = if pos == 21 { 4 } else { 64 };
            assert_eq!(symbols.len(), expected, "position {pos}");
        }
    }

    #[test]
    fn handle_with_path_or_key_characters_is_refused() {
        for bad in [
            "../../etc/passwd0000",
            "abcdefghijklmnop:q",
            "abcdefghijklmnop{q}",
            "abcdefghijklmnop q",
            "abcdefghijklmnop\n",
            "abcdéfghijklmnopq",
        ] {
            assert_eq!(Handle::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn handle_length_is_bounded() {
        assert!(Handle::parse(&"a".repeat(15)).is_none());
        assert!(Handle::parse(&"a".repeat(16)).is_some());
        assert!(Handle::parse(&"a".repeat(32)).is_some());
        assert!(Handle::parse(&"a".repeat(33)).is_none());
    }

    #[test]
    fn debug_output_does_not_reveal_the_handle() {
        let h = Handle::mint();
        assert!(!format!("{h:?}").contains(h.as_str()));
    }

    #[test]
    fn owner_is_a_digest_never_the_token() {
        let a = Owner::of_token(Some("secret-token"));
        assert_eq!(a, Owner::of_token(Some("secret-token")));
        assert_ne!(a, Owner::of_token(Some("other-token")));
        assert_ne!(a, Owner::anonymous());
        assert_eq!(Owner::of_token(None), Owner::anonymous());
        // A principal named like a token is not that token's owner.
        assert_ne!(Owner::of_principal("secret-token"), a);
        assert_ne!(Owner::of_principal("alice"), Owner::of_principal("bob"));
        assert!(!format!("{a:?}").contains("secret"));
    }
}
