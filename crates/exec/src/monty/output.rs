//! Captured `print` output with a byte cap: past the cap output is dropped, not
//! raised, and the run reports that it was truncated. `sys.stdout` and
//! `sys.stderr` are kept apart, as Python keeps them, under one cap.

use std::borrow::Cow;

use monty_types::{MontyException, PrintStream, PrintWriterCallback};

pub struct OutputCapture {
    stdout: String,
    stderr: String,
    limit: usize,
    truncated: bool,
}

/// What a run printed, once it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub stdout: String,
    pub stderr: String,
    /// Output was dropped at the cap; `stdout` ends with a marker saying so.
    pub truncated: bool,
}

impl OutputCapture {
    pub fn new(limit: usize) -> Self {
        Self {
            stdout: String::new(),
            stderr: String::new(),
            limit,
            truncated: false,
        }
    }

    /// The captured text, with a visible marker at the end of stdout when
    /// output was dropped.
    pub fn finish(self) -> Captured {
        let mut stdout = self.stdout;
        if self.truncated {
            if !stdout.ends_with('\n') && !stdout.is_empty() {
                stdout.push('\n');
            }
            stdout.push_str(&format!("[output truncated at {} bytes]\n", self.limit));
        }
        Captured {
            stdout,
            stderr: self.stderr,
            truncated: self.truncated,
        }
    }

    /// Appends `s` to `stream`, within the cap both streams share.
    pub fn push(&mut self, stream: PrintStream, s: &str) {
        if self.truncated {
            return;
        }
        let room = self
            .limit
            .saturating_sub(self.stdout.len() + self.stderr.len());
        let text = match stream {
            PrintStream::Stderr => &mut self.stderr,
            PrintStream::Stdout => &mut self.stdout,
        };
        if s.len() <= room {
            text.push_str(s);
        } else {
            let mut cut = room;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            text.push_str(&s[..cut]);
            self.truncated = true;
        }
    }

    fn push_char(&mut self, stream: PrintStream, c: char) {
        let mut buf = [0u8; 4];
        self.push(stream, c.encode_utf8(&mut buf));
    }
}

impl PrintWriterCallback for OutputCapture {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(PrintStream::Stdout, &output);
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push_char(PrintStream::Stdout, end);
        Ok(())
    }

    fn stderr_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(PrintStream::Stderr, &output);
        Ok(())
    }

    fn stderr_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push_char(PrintStream::Stderr, end);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_cap_is_dropped_with_a_marker() {
        let mut out = OutputCapture::new(10);
        out.push(PrintStream::Stdout, "hello ");
        out.push(PrintStream::Stdout, "wörld and more");
        let captured = out.finish();
        assert!(captured.truncated);
        assert!(captured.stdout.starts_with("hello wö"), "{captured:?}");
        assert!(
            captured
                .stdout
                .ends_with("[output truncated at 10 bytes]\n"),
            "{captured:?}"
        );
    }

    #[test]
    fn stderr_is_kept_apart_under_the_same_cap() {
        let mut out = OutputCapture::new(12);
        out.stdout_write(Cow::Borrowed("out")).expect("write");
        out.stdout_push('\n').expect("push");
        out.stderr_write(Cow::Borrowed("err")).expect("write");
        out.stderr_push('\n').expect("push");
        out.stderr_write(Cow::Borrowed("past the cap"))
            .expect("write");
        out.stdout_write(Cow::Borrowed("dropped")).expect("write");
        let captured = out.finish();
        assert_eq!(captured.stderr, "err\npast");
        assert_eq!(
            captured.stdout, "out\n[output truncated at 12 bytes]\n",
            "{captured:?}"
        );
        assert!(captured.truncated);
    }
}
