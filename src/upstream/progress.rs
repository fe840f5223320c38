//! Upstream requests without the progress token rmcp adds to every one.
//!
//! Nothing here reads an upstream's progress. A server given a token does
//! bookkeeping for it, may answer later, and may send notifications that
//! would only be dropped; so the token goes, on every kind of transport.

use rmcp::RoleClient;
use rmcp::model::{GetExtensions, JsonRpcMessage, RequestMetaObject};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// The `_meta` key of a request's progress token (MCP spec, utilities/progress).
const PROGRESS_TOKEN: &str = "progressToken";

/// `T`, whose outgoing requests lose rmcp's progress token.
pub struct WithoutProgressToken<T>(pub T);

impl<T: Transport<RoleClient>> Transport<RoleClient> for WithoutProgressToken<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.0.send(without_progress_token(item))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// The request's `_meta` without the token; without `_meta` when nothing
/// else was in it. Other keys (the trace context) stay.
fn without_progress_token(mut item: TxJsonRpcMessage<RoleClient>) -> TxJsonRpcMessage<RoleClient> {
    if let JsonRpcMessage::Request(request) = &mut item {
        let extensions = request.request.extensions_mut();
        if let Some(meta) = extensions.get_mut::<RequestMetaObject>() {
            meta.remove(PROGRESS_TOKEN);
            if meta.is_empty() {
                extensions.remove::<RequestMetaObject>();
            }
        }
    }
    item
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        CallToolRequestParams, ClientRequest, GetMeta, JsonRpcRequest, NumberOrString,
        ProgressToken, Request, RequestId,
    };
    use serde_json::{Value, json};

    use super::*;

    fn call_request(meta: &[(&str, Value)]) -> TxJsonRpcMessage<RoleClient> {
        let mut request =
            ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("t")));
        request
            .get_meta_mut()
            .set_progress_token(ProgressToken(NumberOrString::Number(7)));
        for (key, value) in meta {
            request.get_meta_mut().insert((*key).into(), value.clone());
        }
        JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(1), request))
    }

    #[test]
    fn upstream_requests_go_without_rmcps_progress_token() {
        let sent = serde_json::to_value(without_progress_token(call_request(&[]))).unwrap();
        assert_eq!(sent["params"].get("_meta"), None, "{sent}");
        assert_eq!(sent["params"]["name"], "t");
    }

    #[test]
    fn other_request_meta_stays_when_the_progress_token_goes() {
        let traced = [("traceparent", json!("00-ab-cd-01"))];
        let sent = serde_json::to_value(without_progress_token(call_request(&traced))).unwrap();
        assert_eq!(
            sent["params"]["_meta"],
            json!({"traceparent": "00-ab-cd-01"})
        );
    }
}
