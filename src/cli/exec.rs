//! `codemcp exec CODE`: one snippet against the configured upstreams, under
//! the same policy as an agent's, its result printed.

use std::process::ExitCode;
use std::sync::Arc;

use crate::assemble::{self, Transport};
use crate::authority::{Asker, Authority, CallContext, GuardedTools, Identity};
use crate::config::Settings;
use crate::config::settings::OutputFormat;
use crate::server;
use crate::upstream::Catalog;
use codemcp_exec::{RunControl, RunRequest, ToolHost};
use codemcp_store::Owner;

/// Builds the engines, runs `code` once and shuts them down again.
pub(super) async fn exec(
    settings: &Settings,
    catalog: Catalog,
    code: String,
) -> Result<ExitCode, String> {
    let assembled = assemble::build(settings, Transport::Stdio)
        .await
        .map_err(|e| e.to_string())?;
    let executor = &assembled.executor;
    let code = exec_once(
        catalog,
        &assembled,
        Authority::from_settings(settings).map_err(|e| e.to_string())?,
        code,
        settings.output,
    )
    .await;
    executor.shutdown().await;
    Ok(code)
}

async fn exec_once(
    catalog: Catalog,
    assembled: &assemble::Assembled,
    authority: Authority,
    code: String,
    output: OutputFormat,
) -> ExitCode {
    // The same policy as for an agent; nobody can be asked, so `ask` is denied.
    let identity = Identity {
        owner: Owner::anonymous(),
        label: "cli".to_owned(),
        principal: None,
    };
    let context = CallContext::new(identity, None, Asker::Nobody, Default::default());
    let host: Arc<dyn ToolHost> =
        Arc::new(GuardedTools::new(catalog, Arc::new(authority), context));
    // Assembled as the gateway assembles a run (`GatewayState::assemble`),
    // in one store budget with the run.
    let execution = codemcp_store::one_call(async move {
        let snippet = crate::helpers::Snippet::New(&code);
        let helpers = assembled.helpers.as_ref();
        let assembly = crate::helpers::assemble(helpers, Owner::anonymous(), snippet, host).await;
        let request = RunRequest {
            code,
            timeout: None,
            session: None,
        };
        let control = RunControl::default();
        assembled
            .executor
            .run(Owner::anonymous(), request, assembly, control)
            .await
    })
    .await;
    print!("{}", server::render(&execution, output));
    if execution.error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
