//! Comparing secrets (bearer tokens, worker tokens) without leaking them.

/// Compares in time independent of the contents, so timing does not reveal a
/// token prefix. A length mismatch answers at once: the length alone does not
/// help guess a token.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_exact_match_is_equal() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
    }
}
