//! An MCP client session over Streamable HTTP (rmcp with reqwest).

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use super::{Ran, init_tls, unpack};

/// An MCP client session over Streamable HTTP.
pub type HttpClient = RunningService<RoleClient, ()>;

pub async fn http_connect(url: &str) -> HttpClient {
    init_tls();
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        );
    ().serve(rmcp::transport::StreamableHttpClientTransport::from_config(
        config,
    ))
    .await
    .expect("MCP over HTTP")
}

pub async fn http_exec(client: &HttpClient, code: &str) -> Ran {
    let args = json!({"code": code})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new("execute_python").with_arguments(args))
        .await
        .expect("tools/call");
    unpack(result)
}
