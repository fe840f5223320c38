//! The compact text block of an `execute_python` result: what the model reads.
//! Empty parts are left out; `structuredContent` carries every field anyway.

use serde_json::{Map, Value};

use crate::config::settings::OutputFormat;
use codemcp_exec::Execution;

/// The text block in the format `CODEMCP_OUTPUT` picks.
pub fn render(execution: &Execution, format: OutputFormat) -> String {
    match format {
        OutputFormat::Compact => render_text(execution),
        OutputFormat::Json => render_json(execution),
    }
}

/// One JSON object with the fields the model acts on, empty ones left out; run metadata
/// (`engine`, `elapsed_ms`, `tool_calls`) stays in `structuredContent`. The
/// snippet's value is kept whenever there is one, `false`, `0` and `""` too.
pub fn render_json(execution: &Execution) -> String {
    const METADATA: &[&str] = &["engine", "elapsed_ms", "tool_calls"];
    let Ok(Value::Object(fields)) = serde_json::to_value(execution) else {
        return render_text(execution);
    };
    let kept: Map<String, Value> = fields
        .into_iter()
        .filter(|(key, value)| match key.as_str() {
            "result" => !value.is_null(),
            key => {
                !METADATA.contains(&key)
                    && !matches!(value, Value::Null | Value::Bool(false))
                    && value.as_str() != Some("")
            }
        })
        .collect();
    Value::Object(kept).to_string()
}

/// The compact text: printed output, then what went to stderr under a
/// `[stderr]` line, `result: …`, the error; each only when present.
pub fn render_text(execution: &Execution) -> String {
    let mut text = String::new();
    if let Some(reason) = &execution.escalated {
        text.push_str(&format!("[ran in {}: {reason}]\n", execution.engine));
    }
    text.push_str(&execution.stdout);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !execution.stderr.is_empty() {
        text.push_str("[stderr]\n");
        text.push_str(&execution.stderr);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if let Some(result) = &execution.result {
        match result {
            Value::String(s) => text.push_str(&format!("result: {s}\n")),
            other => text.push_str(&format!("result: {other}\n")),
        }
    }
    if let Some(why) = &execution.result_unavailable {
        text.push_str(&format!("result: {why}\n"));
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
    for warning in &execution.warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    if let Some(session) = &execution.session {
        text.push_str(&format!("[session: {session}]\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemcp_exec::{ErrorKind, RunError};

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
            side_effects: 0,
            ..Execution::default()
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
    fn json_output_keeps_only_non_empty_fields() {
        let mut e = execution();
        assert_eq!(render(&e, OutputFormat::Json), "{}");
        e.stdout = "3\n".into();
        e.result = Some(serde_json::json!([1, 2]));
        assert_eq!(
            render(&e, OutputFormat::Json),
            r#"{"stdout":"3\n","result":[1,2]}"#
        );
        assert_eq!(render(&e, OutputFormat::Compact), "3\nresult: [1,2]\n");
    }

    #[test]
    fn falsy_results_survive_json_output() {
        for value in [
            serde_json::json!(false),
            serde_json::json!(0),
            serde_json::json!(""),
            serde_json::json!([]),
            serde_json::json!({}),
        ] {
            let mut e = execution();
            e.result = Some(value.clone());
            let rendered: Value =
                serde_json::from_str(&render(&e, OutputFormat::Json)).expect("JSON");
            assert_eq!(rendered, serde_json::json!({ "result": value }));
        }
    }

    #[test]
    fn stderr_follows_stdout_under_a_label_and_json_keeps_it_apart() {
        let mut e = execution();
        e.stdout = "out".into();
        e.stderr = "careful\n".into();
        e.result = Some(serde_json::json!(1));
        assert_eq!(
            render(&e, OutputFormat::Compact),
            "out\n[stderr]\ncareful\nresult: 1\n"
        );
        assert_eq!(
            render(&e, OutputFormat::Json),
            r#"{"stdout":"out","stderr":"careful\n","result":1}"#
        );
    }

    #[test]
    fn a_value_without_json_form_is_said_in_place_of_the_result() {
        let mut e = execution();
        e.stdout = "printed\n".into();
        e.result_unavailable = Some(codemcp_exec::not_returned(
            "a 'Foo' instance has no JSON form",
        ));
        let text = render_text(&e);
        assert!(
            text.starts_with("printed\nresult: the value was not returned: a 'Foo' instance"),
            "{text}"
        );
        assert!(text.contains("return a dict, list, str"), "{text}");
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
