//! rmcp's `ServerHandler` for [`Gateway`]: the MCP methods. Each is a thin
//! door; running `execute_python` is the gateway's own (see `call_execute`).

#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetSkillRequestParams, GetSkillResult, Implementation,
    ListResourcesResult, ListSkillsResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscriptionFilter,
    Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::broadcast;

use super::arguments::input_schema;
use super::{Gateway, SDK_URI, TOOL_NAME};
use crate::authority::identity::Identity;
use codemcp_base::timing;

impl ServerHandler for Gateway {
    #[allow(deprecated)] // logging: see set_level
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_logging()
                .enable_skills()
                .build(),
        )
        .with_server_info(Implementation::new("codemcp", env!("CARGO_PKG_VERSION")))
        // Also `server/discover`'s (rmcp builds it from here). A pure function
        // of the configured catalog: `initialize` does not wait for servers.
        .with_instructions(
            self.shared
                .catalog
                .sdk()
                .instructions(self.shared.description_budget),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Bounded by CODEMCP_STARTUP_WAIT_MS; late upstreams join with list_changed.
        self.upstreams_ready(&context).await?;
        let identity = Identity::of_request(&context);
        let Some(helpers) = self.shared.helpers.clone() else {
            return Ok(ListToolsResult::with_all_items(vec![self.tool(&identity)]));
        };
        // The caller's saved helpers are named in its description.
        let sdk = identity.sdk(&self.shared.catalog);
        let sdk = crate::helpers::sdk_for(Some(&helpers), &identity.owner, sdk).await;
        let description = sdk.description(self.shared.description_budget);
        let tool = Tool::new(TOOL_NAME, description, input_schema());
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // No request here to say who asks; the schema is everyone's.
        (name == TOOL_NAME).then(|| self.tool(&Identity::of_token(None)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        timing::REQUEST_READ.log_since("request read");
        let started = timing::start();
        let meta = context.meta.0.clone();
        let response =
            crate::telemetry::traced_request(&meta, self.call_execute(request, context)).await;
        timing::since("handler done", started);
        timing::RESPONSE_READY.set();
        response
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = Resource::new(SDK_URI, "sdk.pyi")
            .with_description(
                "Type stub of every upstream tool as a Python function, with full docs",
            )
            .with_mime_type("text/x-python");
        let mut resources = vec![resource];
        // Each saved helper's SKILL.md, for clients without the skills extension.
        for doc in self.helper_docs(&context).await {
            let uri = crate::helpers::skills::uri(&doc);
            resources.push(
                Resource::new(uri, format!("{} (SKILL.md)", doc.name))
                    .with_description(doc.summary.clone())
                    .with_mime_type("text/markdown"),
            );
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let docs = self.helper_docs(&context).await;
        Ok(ListSkillsResult::with_all_items(
            crate::helpers::skills::skills(&docs),
        ))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let docs = self.helper_docs(&context).await;
        match crate::helpers::skills::find(&docs, &request.uri) {
            Some(doc) => Ok(GetSkillResult::new(crate::helpers::skills::skill(doc))),
            None => Err(ErrorData::invalid_params(
                format!("no skill at '{}'", request.uri),
                None,
            )),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.upstreams_ready(&context).await?;
        if request.uri.starts_with("skill://") {
            let docs = self.helper_docs(&context).await;
            if let Some(doc) = crate::helpers::skills::find(&docs, &request.uri) {
                let text = crate::helpers::skills::skill_md(doc);
                let contents =
                    ResourceContents::text(text, request.uri).with_mime_type("text/markdown");
                return Ok(ReadResourceResult::new(vec![contents]).into());
            }
        }
        if request.uri != SDK_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource '{}'", request.uri),
                None,
            ));
        }
        let identity = Identity::of_request(&context);
        let sdk = identity.sdk(&self.shared.catalog);
        let helpers = self.shared.helpers.clone();
        let stub = crate::helpers::sdk_for(helpers.as_ref(), &identity.owner, sdk)
            .await
            .stub();
        let contents = ResourceContents::text(stub, SDK_URI).with_mime_type("text/x-python");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577, still used by 2025-era clients
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tracing::debug!(target: "codemcp::server", level = ?request.level, "client set log level");
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // `initialize` is answered: the servers may take the CPU now.
        self.shared.catalog.launch();
        self.shared.legacy_peers().push(context.peer.clone());
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.catalog.subscribe_changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if context.accepted().tools_list_changed == Some(true) {
                            let _ = context.sink().notify_tool_list_changed().await;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}
