//! Captured `print` output with a byte cap: past the cap output is dropped, not
//! raised, and the run reports that it was truncated.

use std::borrow::Cow;

use monty_types::{MontyException, PrintWriterCallback};

pub struct OutputCapture {
    text: String,
    limit: usize,
    truncated: bool,
}

impl OutputCapture {
    pub fn new(limit: usize) -> Self {
        Self {
            text: String::new(),
            limit,
            truncated: false,
        }
    }

    /// The captured text, with a visible marker when output was dropped.
    pub fn finish(self) -> (String, bool) {
        let mut text = self.text;
        if self.truncated {
            if !text.ends_with('\n') && !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!("[output truncated at {} bytes]\n", self.limit));
        }
        (text, self.truncated)
    }

    pub fn push_text(&mut self, s: &str) {
        if self.truncated {
            return;
        }
        let room = self.limit.saturating_sub(self.text.len());
        if s.len() <= room {
            self.text.push_str(s);
        } else {
            let mut cut = room;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.push_str(&s[..cut]);
            self.truncated = true;
        }
    }
}

impl PrintWriterCallback for OutputCapture {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push_text(&output);
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        let mut buf = [0u8; 4];
        self.push_text(end.encode_utf8(&mut buf));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_cap_is_dropped_with_a_marker() {
        let mut out = OutputCapture::new(10);
        out.push_text("hello ");
        out.push_text("wörld and more");
        let (text, truncated) = out.finish();
        assert!(truncated);
        assert!(text.starts_with("hello wö"), "{text}");
        assert!(text.ends_with("[output truncated at 10 bytes]\n"), "{text}");
    }
}
