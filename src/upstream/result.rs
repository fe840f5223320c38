//! A tool result as the calling contract hands it to agent code.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use codemcp_exec::ToolFailure;

/// `structuredContent` when the tool gives one, else its text blocks joined
/// with newlines; non-text blocks come back as their JSON objects. An
/// `isError` result becomes a [`ToolFailure`] carrying the tool's own text.
pub fn tool_value(result: CallToolResult) -> Result<Value, ToolFailure> {
    if result.is_error == Some(true) {
        let text = joined_text(&result.content);
        let message = if text.is_empty() {
            "the tool reported an error without a message".to_owned()
        } else {
            text
        };
        return Err(ToolFailure { message });
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    let non_text = result
        .content
        .iter()
        .filter(|b| b.as_text().is_none())
        .count();
    if non_text == 0 {
        return Ok(Value::String(joined_text(&result.content)));
    }
    let items: Vec<Value> = result.content.iter().map(block_value).collect();
    Ok(match <[Value; 1]>::try_from(items) {
        Ok([single]) => single,
        Err(items) => Value::Array(items),
    })
}

fn joined_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn block_value(block: &ContentBlock) -> Value {
    match block.as_text() {
        Some(text) => Value::String(text.text.clone()),
        None => serde_json::to_value(block).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).expect("valid CallToolResult")
    }

    #[test]
    fn text_blocks_join_and_structured_content_wins() {
        let r = result(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(tool_value(r).ok(), Some(json!("a\nb")));
        let r = result(
            json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"t": 1}}),
        );
        assert_eq!(tool_value(r).ok(), Some(json!({"t": 1})));
    }

    #[test]
    fn errors_carry_the_upstream_text() {
        let r = result(
            json!({"content": [{"type": "text", "text": "ENOENT: no such file"}], "isError": true}),
        );
        assert_eq!(
            tool_value(r).err().map(|e| e.message),
            Some("ENOENT: no such file".into())
        );
    }

    #[test]
    fn images_come_back_as_dicts() {
        let r =
            result(json!({"content": [{"type": "image", "data": "AAA", "mimeType": "image/png"}]}));
        let v = tool_value(r).expect("ok");
        assert_eq!(v["type"], "image");
        assert_eq!(v["mimeType"], "image/png");
    }
}
