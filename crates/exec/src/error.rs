//! How a run fails: the kind of failure and the error the agent reads.

use serde::Serialize;

/// What kind of failure a run ended with; tells the agent what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// An exception in the agent's code (including tool errors it did not catch).
    Python,
    /// A resource limit fired; never retried elsewhere.
    Limit,
    /// Valid Python the engine cannot run.
    Unsupported,
    /// The request itself was unusable (empty or oversized code).
    Input,
    /// Calls that cannot work, found before running: nothing ran, and the
    /// session is as it was.
    Preflight,
    /// The client cancelled the run.
    Cancelled,
    /// A fault of the gateway, not of the code.
    Internal,
}

impl ErrorKind {
    /// The kind as metrics and logs label it.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Python => "python_error",
            ErrorKind::Limit => "limit",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Input => "input_error",
            ErrorKind::Preflight => "preflight",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal_error",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunError {
    pub kind: ErrorKind,
    /// Python exception type, e.g. `ZeroDivisionError`.
    #[serde(rename = "type")]
    pub exc_type: String,
    pub message: String,
    /// A short traceback, innermost frame last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// What the agent can do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The session's variables were discarded because of this error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub session_reset: bool,
}

/// Error messages longer than this are cut: neither the output nor the result
/// cap covers an exception's text, and agents can make it arbitrarily large.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 8 * 1024;

fn capped(mut message: String) -> String {
    if message.len() > MAX_ERROR_MESSAGE_BYTES {
        let mut cut = MAX_ERROR_MESSAGE_BYTES;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = message.len();
        message.truncate(cut);
        message.push_str(&format!("… [message truncated: {total} bytes]"));
    }
    message
}

impl RunError {
    pub fn new(kind: ErrorKind, exc_type: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind,
            exc_type: exc_type.into(),
            message: capped(message.into()),
            traceback: None,
            hint: None,
            session_reset: false,
        }
    }

    /// Sets the traceback, cut like the message.
    pub fn with_traceback(mut self, traceback: Option<String>) -> Self {
        self.traceback = traceback.map(capped);
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl From<codemcp_snippet::preflight::Rejection> for RunError {
    fn from(rejection: codemcp_snippet::preflight::Rejection) -> Self {
        RunError::new(ErrorKind::Preflight, rejection.exc_type, rejection.message)
            .with_hint(rejection.hint)
    }
}

/// The client cancelled the run.
pub(crate) fn cancelled() -> RunError {
    RunError::new(
        ErrorKind::Cancelled,
        "KeyboardInterrupt",
        "the run was cancelled by the client",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_error_messages_are_cut_at_a_char_boundary() {
        let error = RunError::new(ErrorKind::Python, "ValueError", "é".repeat(1_000_000));
        assert!(error.message.len() < MAX_ERROR_MESSAGE_BYTES + 100);
        assert!(
            error
                .message
                .ends_with("[message truncated: 2000000 bytes]"),
            "{}",
            &error.message[error.message.len() - 60..]
        );
    }
}
