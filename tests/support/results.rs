//! What every MCP client of the tests shares: one `execute_python` result
//! unpacked, and the TLS provider reqwest (the HTTP transport) needs.

use rmcp::model::CallToolResult;
use serde_json::Value;

/// reqwest is built without a default TLS provider; install ring once.
pub fn init_tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// One `execute_python` result, unpacked.
#[derive(Debug)]
pub struct Ran {
    pub text: String,
    pub structured: Value,
    pub is_error: bool,
}

impl Ran {
    pub fn result(&self) -> &Value {
        &self.structured["result"]
    }

    pub fn stdout(&self) -> &str {
        self.structured["stdout"].as_str().unwrap_or_default()
    }

    pub fn error_type(&self) -> &str {
        self.structured["error"]["type"]
            .as_str()
            .unwrap_or_default()
    }

    pub fn error_message(&self) -> &str {
        self.structured["error"]["message"]
            .as_str()
            .unwrap_or_default()
    }
}

pub fn unpack(result: CallToolResult) -> Ran {
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    Ran {
        text,
        structured: result.structured_content.unwrap_or(Value::Null),
        is_error: result.is_error == Some(true),
    }
}
