//! The compact text block of an `execute_python` result: what the model reads.
//! Empty parts are left out; `structuredContent` carries every field anyway.

use serde_json::Value;

use crate::exec::Execution;

pub fn render_text(execution: &Execution) -> String {
    let mut text = String::new();
    if let Some(reason) = &execution.escalated {
        text.push_str(&format!("[ran in {}: {reason}]\n", execution.engine));
    }
    text.push_str(&execution.stdout);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if let Some(result) = &execution.result {
        match result {
            Value::String(s) => text.push_str(&format!("result: {s}\n")),
            other => text.push_str(&format!("result: {other}\n")),
        }
    }
    if let Some(error) = &execution.error {
        text.push_str(&format!("{}: {}\n", error.exc_type, error.message));
        if let Some(traceback) = &error.traceback {
            text.push_str("Traceback (innermost last):\n");
            text.push_str(traceback);
        }
        if let Some(hint) = &error.hint {
            text.push_str(&format!("hint: {hint}\n"));
        }
    }
    if text.is_empty() {
        text.push_str("(no output)\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{ErrorKind, RunError};

    fn execution() -> Execution {
        Execution {
            stdout: String::new(),
            result: None,
            error: None,
            engine: "monty",
            escalated: None,
            elapsed_ms: 1,
            tool_calls: 0,
            truncated: false,
        }
    }

    #[test]
    fn empty_parts_are_omitted() {
        let mut e = execution();
        e.stdout = "3\n".into();
        assert_eq!(render_text(&e), "3\n");
        e.result = Some(serde_json::json!({"a": 1}));
        assert_eq!(render_text(&e), "3\nresult: {\"a\":1}\n");
        assert_eq!(render_text(&execution()), "(no output)\n");
    }

    #[test]
    fn errors_show_type_message_and_hint() {
        let mut e = execution();
        e.error = Some(
            RunError::new(ErrorKind::Python, "ZeroDivisionError", "division by zero")
                .with_hint("check b"),
        );
        let text = render_text(&e);
        assert!(
            text.contains("ZeroDivisionError: division by zero\n"),
            "{text}"
        );
        assert!(text.contains("hint: check b"), "{text}");
    }
}
