//! One-line text from upstream descriptions: summaries and collapsed whitespace.

const SUMMARY_CHARS: usize = 100;

/// Whitespace (and control characters) collapsed to single spaces, trimmed.
pub fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first sentence of `description` on one line, cut at a word to about 100 characters.
pub fn summary(description: &str) -> String {
    truncate_words(&one_line(first_sentence(description)), SUMMARY_CHARS)
}

fn first_sentence(text: &str) -> &str {
    let text = text.trim_start();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = match c {
            '.' | '!' | '?' => {
                next.is_none_or(char::is_whitespace) && !ends_with_abbreviation(&text[..i])
            }
            '\n' => {
                next == Some('\n')
                    || text[i + 1..]
                        .trim_start_matches([' ', '\t'])
                        .starts_with('\n')
            }
            _ => false,
        };
        if ends {
            let end = if c == '\n' { i } else { i + c.len_utf8() };
            return &text[..end];
        }
    }
    text
}

fn ends_with_abbreviation(before_dot: &str) -> bool {
    let word = before_dot
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    [
        "e.g", "i.e", "etc", "vs", "eg", "ie", "approx", "incl", "esp",
    ]
    .contains(&word.to_ascii_lowercase().as_str())
}

pub fn truncate_words(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    let at_word = match cut.rfind(' ') {
        Some(space) if space > cut.len() / 2 => &cut[..space],
        _ => cut.as_str(),
    };
    format!(
        "{}…",
        at_word.trim_end_matches(|c: char| c.is_whitespace() || ",;:-".contains(c))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries() {
        assert_eq!(
            summary("Adds two numbers. Returns the sum."),
            "Adds two numbers."
        );
        assert_eq!(summary("  Fetch   the\n page!  More"), "Fetch the page!");
        assert_eq!(
            summary("Find files (e.g. logs) fast. Next."),
            "Find files (e.g. logs) fast."
        );
        assert_eq!(summary("Title line\n\nBody text."), "Title line");
        assert_eq!(summary("Version 1.5 of the API"), "Version 1.5 of the API");
        assert_eq!(summary(""), "");
        let long = "word ".repeat(40);
        let s = summary(&long);
        assert!(
            s.ends_with("word…") && s.chars().count() <= SUMMARY_CHARS,
            "{s}"
        );
        assert_eq!(summary("a\u{0}b"), "a b");
    }
}
