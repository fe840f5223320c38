//! Upstream resources and prompts: the requests behind agent code's
//! `list_resources`, `read_resource`, `list_prompts` and `get_prompt`, sent
//! only to servers that declare the capability, and their answers as the
//! values agent code gets.
//!
//! What one upstream may send is already bounded by
//! `CODEMCP_MAX_TOOL_RESULT_BYTES`; the lists are bounded here as well, in
//! pages followed, items kept and description length, since one list call
//! may gather every server's.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    ContentBlock, GetPromptRequestParams, GetPromptResult, PaginatedRequestParams, Prompt,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents,
};
use serde_json::{Map, Value, json};

use super::{Catalog, Live, Upstream, UpstreamError, service_error_text};
use codemcp_sdk::ResourceCall;
use codemcp_sdk::policy::Decision;

/// A server that keeps sending `next_cursor` is cut off here.
const MAX_PAGES: usize = 100;
/// The most items one list call hands to agent code, all servers together.
pub const MAX_LISTED: usize = 1_000;
/// Longer descriptions are cut: a list is for choosing, not reading.
const MAX_DESCRIPTION_CHARS: usize = 1_000;

/// Why a resource or prompt request failed; agent code sees the text as a
/// `ToolError`.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The server did not declare the capability (or policy denies it,
    /// which reads the same).
    #[error("upstream '{server}' offers no {what}")]
    NotOffered { server: String, what: &'static str },
    #[error("upstream '{server}', {method}: {message}")]
    Failed {
        server: String,
        method: &'static str,
        message: String,
    },
    #[error(
        "upstream '{server}', {method}: did not answer within {seconds} s (CODEMCP_TOOL_TIMEOUT_MS)"
    )]
    Timeout {
        server: String,
        method: &'static str,
        seconds: f64,
    },
}

impl ResourceError {
    /// What the server lacks for `call`, as agent code is told.
    pub fn not_offered(server: &str, call: &ResourceCall) -> Self {
        ResourceError::NotOffered {
            server: server.to_owned(),
            what: if call.is_prompt() {
                "prompts"
            } else {
                "resources"
            },
        }
    }
}

impl Catalog {
    /// The configured servers, by name.
    pub fn server_names(&self) -> Vec<String> {
        self.inner
            .all()
            .iter()
            .map(|u| u.config.name.clone())
            .collect()
    }

    /// The operator's decision on `method` (one of
    /// [`codemcp_sdk::resources::POLICY_NAMES`]) for `server`: its policy
    /// rules, else `allow`, since reading resources and prompts changes
    /// nothing. `None` for a server the gateway does not have.
    pub fn resource_policy(&self, server: &str, method: &str) -> Option<Decision> {
        let upstream = self.inner.upstream(server)?;
        Some(
            upstream
                .config
                .policy
                .decide(method)
                .unwrap_or(Decision::Allow),
        )
    }

    /// Every resource `server` lists; `None` when it declares no resources.
    ///
    /// # Errors
    /// The server is unknown or down, or the request failed.
    pub async fn list_resources(
        &self,
        server: &str,
    ) -> Result<Option<Vec<Resource>>, ResourceError> {
        let Some((upstream, live)) = self.offering(server, false).await? else {
            return Ok(None);
        };
        let mut items = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let sent = live.peer.list_resources(Some(params));
            let page = self
                .answer(&upstream, &live, "resources/list", sent)
                .await?;
            items.extend(page.resources);
            cursor = page.next_cursor;
            if cursor.is_none() || items.len() >= MAX_LISTED {
                break;
            }
        }
        Ok(Some(items))
    }

    /// Every prompt `server` lists; `None` when it declares no prompts.
    ///
    /// # Errors
    /// The server is unknown or down, or the request failed.
    pub async fn list_prompts(&self, server: &str) -> Result<Option<Vec<Prompt>>, ResourceError> {
        let Some((upstream, live)) = self.offering(server, true).await? else {
            return Ok(None);
        };
        let mut items = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let sent = live.peer.list_prompts(Some(params));
            let page = self.answer(&upstream, &live, "prompts/list", sent).await?;
            items.extend(page.prompts);
            cursor = page.next_cursor;
            if cursor.is_none() || items.len() >= MAX_LISTED {
                break;
            }
        }
        Ok(Some(items))
    }

    /// One resource of `server`.
    ///
    /// # Errors
    /// The server offers no resources, is unknown or down, or answered an
    /// error (an unknown URI, say).
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, ResourceError> {
        let (upstream, live) =
            self.offering(server, false)
                .await?
                .ok_or_else(|| ResourceError::NotOffered {
                    server: server.to_owned(),
                    what: "resources",
                })?;
        let sent = live.peer.read_resource(ReadResourceRequestParams::new(uri));
        self.answer(&upstream, &live, "resources/read", sent).await
    }

    /// One prompt of `server`, filled in with `arguments`.
    ///
    /// # Errors
    /// The server offers no prompts, is unknown or down, or answered an
    /// error (an unknown prompt or a missing argument, say).
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, ResourceError> {
        let (upstream, live) =
            self.offering(server, true)
                .await?
                .ok_or_else(|| ResourceError::NotOffered {
                    server: server.to_owned(),
                    what: "prompts",
                })?;
        let params = GetPromptRequestParams::new(name).with_arguments(arguments);
        let sent = live.peer.get_prompt(params);
        self.answer(&upstream, &live, "prompts/get", sent).await
    }

    /// `call`, addressed to one server, as the value agent code gets: a
    /// list for a server that offers nothing is empty.
    ///
    /// # Errors
    /// As the request's, and [`ResourceError::NotOffered`] for a read or
    /// get the server does not offer.
    pub async fn resource_value(
        &self,
        server: &str,
        call: &ResourceCall,
    ) -> Result<Value, ResourceError> {
        Ok(match call {
            ResourceCall::ListResources { .. } => {
                let listed = self.list_resources(server).await?.unwrap_or_default();
                Value::Array(listed.iter().map(|r| resource_item(server, r)).collect())
            }
            ResourceCall::ListPrompts { .. } => {
                let listed = self.list_prompts(server).await?.unwrap_or_default();
                Value::Array(listed.iter().map(|p| prompt_item(server, p)).collect())
            }
            ResourceCall::ReadResource { uri, .. } => {
                contents_value(self.read_resource(server, uri).await?.contents)
            }
            ResourceCall::GetPrompt {
                name, arguments, ..
            } => prompt_value(self.get_prompt(server, name, arguments.clone()).await?),
        })
    }

    /// A live connection to `server` when it declares resources (or, with
    /// `prompts`, prompts); `None` when it does not.
    async fn offering(
        &self,
        server: &str,
        prompts: bool,
    ) -> Result<Option<(Arc<Upstream>, Live)>, ResourceError> {
        let upstream = self
            .inner
            .upstream(server)
            .ok_or_else(|| UpstreamError::UnknownServer(server.to_owned()))?;
        let live = self.inner.peer(&upstream).await?;
        let declared = live.peer.peer_info().is_some_and(|info| {
            let capabilities = &info.capabilities;
            if prompts {
                capabilities.prompts.is_some()
            } else {
                capabilities.resources.is_some()
            }
        });
        Ok(declared.then_some((upstream, live)))
    }

    /// The answer to one request, under the per-call timeout; a request
    /// that found the connection gone marks the server down, as a tool call does.
    async fn answer<T>(
        &self,
        upstream: &Upstream,
        live: &Live,
        method: &'static str,
        sent: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, ResourceError> {
        let server = upstream.config.name.clone();
        let timeout = self.inner.tool_timeout;
        let failure = match tokio::time::timeout(timeout, sent).await {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(failure)) => failure,
            Err(_) => {
                return Err(ResourceError::Timeout {
                    server,
                    method,
                    seconds: timeout.as_secs_f64(),
                });
            }
        };
        let message = service_error_text(&failure);
        let closed =
            live.peer.is_transport_closed() || live.liveness.as_ref().is_some_and(|l| l.is_lost());
        if closed {
            self.inner
                .mark_down(upstream, live.generation, &message)
                .await;
        }
        Err(ResourceError::Failed {
            server,
            method,
            message,
        })
    }
}

/// Runs `one` for every server concurrently and joins the lists they give,
/// in server order, at most [`MAX_LISTED`] items. A server whose part
/// failed (down, or its user declined) is left out: the others still list.
pub async fn list_everywhere<F, Fut, E>(servers: Vec<String>, one: F) -> Value
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Value, E>>,
    E: std::fmt::Display,
{
    let parts = futures::future::join_all(servers.iter().map(|s| one(s.clone()))).await;
    let mut items = Vec::new();
    for (server, part) in servers.iter().zip(parts) {
        match part {
            Ok(Value::Array(listed)) => items.extend(listed),
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(target: "codemcp::upstream", %server, error = %e, "left out of a list of every server's");
            }
        }
    }
    if items.len() > MAX_LISTED {
        tracing::warn!(target: "codemcp::upstream", listed = items.len(), "a list of resources or prompts was cut to {MAX_LISTED} items");
        items.truncate(MAX_LISTED);
    }
    Value::Array(items)
}

/// `text`, cut to [`MAX_DESCRIPTION_CHARS`] with a `…` where it was cut.
fn description(text: &str) -> Value {
    match text.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        Some((cut, _)) => Value::String(format!("{}…", &text[..cut])),
        None => Value::String(text.to_owned()),
    }
}

/// A listed resource as agent code sees it, tagged with its server.
pub fn resource_item(server: &str, resource: &Resource) -> Value {
    let mut item = Map::new();
    item.insert("server".into(), json!(server));
    item.insert("uri".into(), json!(resource.uri));
    item.insert("name".into(), json!(resource.name));
    if let Some(title) = &resource.title {
        item.insert("title".into(), description(title));
    }
    if let Some(text) = &resource.description {
        item.insert("description".into(), description(text));
    }
    if let Some(mime) = &resource.mime_type {
        item.insert("mimeType".into(), json!(mime));
    }
    if let Some(size) = resource.size {
        item.insert("size".into(), json!(size));
    }
    Value::Object(item)
}

/// A listed prompt as agent code sees it, tagged with its server.
pub fn prompt_item(server: &str, prompt: &Prompt) -> Value {
    let mut item = Map::new();
    item.insert("server".into(), json!(server));
    item.insert("name".into(), json!(prompt.name));
    if let Some(title) = &prompt.title {
        item.insert("title".into(), description(title));
    }
    if let Some(text) = &prompt.description {
        item.insert("description".into(), description(text));
    }
    let arguments: Vec<Value> = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| {
            let mut arg = Map::new();
            arg.insert("name".into(), json!(a.name));
            arg.insert("required".into(), json!(a.required.unwrap_or(false)));
            if let Some(text) = &a.description {
                arg.insert("description".into(), description(text));
            }
            Value::Object(arg)
        })
        .collect();
    item.insert("arguments".into(), Value::Array(arguments));
    Value::Object(item)
}

/// A read resource: its text as a `str`, binary as `{"mimeType", "base64"}`,
/// several contents as a list of those.
pub fn contents_value(contents: Vec<ResourceContents>) -> Value {
    let mut items: Vec<Value> = contents.into_iter().map(content_value).collect();
    if items.len() == 1 {
        items.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(items)
    }
}

fn content_value(content: ResourceContents) -> Value {
    match content {
        ResourceContents::TextResourceContents { text, .. } => Value::String(text),
        ResourceContents::BlobResourceContents {
            mime_type, blob, ..
        } => json!({"mimeType": mime_type, "base64": blob}),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// A filled-in prompt: `{"description"?, "messages": [{"role", "content"}]}`,
/// text content as a `str`, any other block as the upstream sent it.
pub fn prompt_value(result: GetPromptResult) -> Value {
    let messages: Vec<Value> = result
        .messages
        .into_iter()
        .map(|m| {
            let content = match &m.content {
                ContentBlock::Text(text) => Value::String(text.text.clone()),
                other => serde_json::to_value(other).unwrap_or(Value::Null),
            };
            let role = serde_json::to_value(&m.role).unwrap_or(Value::Null);
            json!({"role": role, "content": content})
        })
        .collect();
    let mut value = Map::new();
    if let Some(text) = result.description {
        value.insert("description".into(), Value::String(text));
    }
    value.insert("messages".into(), Value::Array(messages));
    Value::Object(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).expect("valid MCP JSON")
    }

    #[test]
    fn one_text_is_a_str_one_blob_a_dict_several_a_list() {
        let text: ResourceContents = from(json!({"uri": "a", "text": "hello"}));
        let blob: ResourceContents =
            from(json!({"uri": "b", "mimeType": "image/png", "blob": "AAE="}));
        assert_eq!(contents_value(vec![text.clone()]), json!("hello"));
        assert_eq!(
            contents_value(vec![blob.clone()]),
            json!({"mimeType": "image/png", "base64": "AAE="})
        );
        assert_eq!(
            contents_value(vec![text, blob]),
            json!(["hello", {"mimeType": "image/png", "base64": "AAE="}])
        );
        assert_eq!(contents_value(vec![]), json!([]));
    }

    #[test]
    fn listed_items_carry_their_server_and_no_icons() {
        let resource: Resource = from(json!({
            "uri": "demo://x", "name": "x", "mimeType": "text/plain",
            "icons": [{"src": "data:,"}], "description": "d".repeat(5_000)
        }));
        let item = resource_item("everything", &resource);
        assert_eq!(item["server"], "everything");
        assert_eq!(item["uri"], "demo://x");
        assert!(item.get("icons").is_none());
        let shown = item["description"].as_str().unwrap_or_default();
        assert!(
            shown.chars().count() <= MAX_DESCRIPTION_CHARS + 1,
            "{}",
            shown.len()
        );
        let prompt: Prompt = from(json!({
            "name": "args-prompt",
            "arguments": [{"name": "city", "required": true}, {"name": "state"}]
        }));
        assert_eq!(
            prompt_item("everything", &prompt),
            json!({"server": "everything", "name": "args-prompt", "arguments": [
                {"name": "city", "required": true}, {"name": "state", "required": false}
            ]})
        );
    }

    #[test]
    fn prompt_messages_give_text_as_str() {
        let result: GetPromptResult = from(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}},
            {"role": "assistant", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}}
        ]}));
        let value = prompt_value(result);
        assert_eq!(
            value["messages"][0],
            json!({"role": "user", "content": "hi"})
        );
        assert_eq!(value["messages"][1]["role"], "assistant");
        assert_eq!(value["messages"][1]["content"]["type"], "image");
    }

    #[tokio::test]
    async fn a_list_of_everything_leaves_out_failures_and_is_capped() {
        let servers = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let joined = list_everywhere(servers, |s| async move {
            match s.as_str() {
                "a" => Ok(json!(["a1", "a2"])),
                "b" => Err("down"),
                _ => Ok(Value::Array(vec![json!("c"); MAX_LISTED])),
            }
        })
        .await;
        let items = joined.as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), MAX_LISTED);
        assert_eq!(items[..3], [json!("a1"), json!("a2"), json!("c")]);
    }
}
