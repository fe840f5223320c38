//! JSONC (JSON with comments, as opencode writes it) turned into plain JSON.
//!
//! Comments, trailing commas and a byte-order mark are overwritten with
//! spaces rather than removed, so every remaining byte keeps its offset and
//! `serde_json`'s line and column numbers point into the file the user wrote.

/// Returns `text` with `//` and `/* */` comments, trailing commas before `}`
/// or `]`, and a leading byte-order mark replaced by spaces. Newlines inside
/// block comments are kept. An unterminated block comment is left alone so
/// that the JSON parser reports it at its position.
pub(crate) fn blank_out(text: &str) -> Vec<u8> {
    let mut out = text.as_bytes().to_vec();
    if out.starts_with(b"\xEF\xBB\xBF") {
        out[..3].fill(b' ');
    }
    blank_comments(&mut out);
    blank_trailing_commas(&mut out);
    out
}

fn blank_comments(out: &mut [u8]) {
    let mut i = 0;
    while i < out.len() {
        match (out[i], out.get(i + 1)) {
            (b'"', _) => i = string_end(out, i),
            (b'/', Some(b'/')) => {
                let end = out[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(out.len(), |n| i + n);
                blank(&mut out[i..end]);
                i = end;
            }
            (b'/', Some(b'*')) => {
                let Some(close) = out[i + 2..].windows(2).position(|w| w == b"*/") else {
                    return;
                };
                let end = i + 2 + close + 2;
                blank(&mut out[i..end]);
                i = end;
            }
            _ => i += 1,
        }
    }
}

fn blank_trailing_commas(out: &mut [u8]) {
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            b'"' => i = string_end(out, i),
            b',' => {
                let next = out[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
                if matches!(next, Some(b'}' | b']')) {
                    out[i] = b' ';
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// Overwrites everything but line breaks with spaces.
fn blank(bytes: &mut [u8]) {
    for b in bytes.iter_mut().filter(|b| !matches!(b, b'\n' | b'\r')) {
        *b = b' ';
    }
}

/// The index just past the string literal that opens at `start`, or the end
/// of the input when the string is unterminated.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::blank_out;
    use proptest::prelude::*;

    fn cleaned(text: &str) -> String {
        String::from_utf8(blank_out(text)).expect("blanking keeps UTF-8 valid")
    }

    #[test]
    fn line_comments_become_spaces() {
        assert_eq!(cleaned("{} // hi\n"), "{}      \n");
    }

    #[test]
    fn block_comments_keep_their_newlines() {
        assert_eq!(cleaned("/* a\nb */{}"), "    \n    {}");
    }

    #[test]
    fn comment_markers_inside_strings_are_text() {
        let text = r#"{"url": "http://x/*y*/", "s": "a // b", "q": "\"//"}"#;
        assert_eq!(cleaned(text), text);
    }

    #[test]
    fn trailing_commas_go_but_others_stay() {
        assert_eq!(cleaned("[1, 2,\n]"), "[1, 2 \n]");
        assert_eq!(cleaned(r#"{"a": 1, /* x */ }"#), r#"{"a": 1          }"#);
        assert_eq!(cleaned(r#"{"a": ",}"}"#), r#"{"a": ",}"}"#);
    }

    #[test]
    fn byte_order_mark_is_blanked() {
        assert_eq!(cleaned("\u{FEFF}{}"), "   {}");
    }

    #[test]
    fn unterminated_block_comment_is_left_for_the_parser() {
        assert_eq!(cleaned("{} /* open"), "{} /* open");
    }

    #[test]
    fn non_ascii_comment_keeps_byte_offsets() {
        let text = "// é ü\n{}";
        assert_eq!(blank_out(text).len(), text.len());
    }

    proptest! {
        #[test]
        fn length_and_line_breaks_are_preserved(text in "[ -~\n\u{e9}]{0,80}") {
            let out = blank_out(&text);
            prop_assert_eq!(out.len(), text.len());
            for (a, b) in text.bytes().zip(out.iter()) {
                prop_assert_eq!(a == b'\n', *b == b'\n');
            }
        }

        #[test]
        fn plain_json_without_trailing_commas_is_unchanged(
            value in proptest::collection::btree_map("[a-z/*,]{0,6}", "[ -~]{0,8}", 0..5)
        ) {
            let text = serde_json::to_string_pretty(&value).expect("a map of strings serializes");
            prop_assert_eq!(cleaned(&text), text);
        }
    }
}
