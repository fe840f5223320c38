//! Arbitrary `execute_python` arguments through the real MCP handler (no
//! upstreams). Must never panic or hang.
#![no_main]

#[path = "limits.rs"]
mod limits;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use codemcp::config::{OutputFormat, UpstreamConfig};
use codemcp_exec::{Executor, RunControl};
use codemcp_exec::monty::memory::CountingAllocator;
use codemcp_exec::monty::MontyEngine;
use codemcp::authority::{Asker, Identity};
use codemcp::server::{Caller, Gateway, GatewayState};
use codemcp::upstream::{Catalog, UpstreamLimits};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn world() -> &'static (tokio::runtime::Runtime, Gateway) {
    static WORLD: OnceLock<(tokio::runtime::Runtime, Gateway)> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let gateway = runtime.block_on(async {
            let config = UpstreamConfig::default();
            let upstream_limits = UpstreamLimits { tool_timeout: Duration::from_secs(1), max_message: 1 << 20, policy_default: codemcp_sdk::policy::Decision::Allow, startup_wait: Duration::ZERO, startup_concurrency: 4, lazy_idle: Duration::from_secs(60), state_dir: None, description_budget: 8000 };
            let catalog = Catalog::connect(&config, upstream_limits).await;
            let engine = MontyEngine::new(limits::small());
            Gateway::new_session(GatewayState::new(catalog, Executor::in_memory(Arc::new(engine), limits::checks()).expect("memory store"), 24_000, OutputFormat::Compact, codemcp::authority::Authority::default()))
        });
        (runtime, gateway)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let (runtime, gateway) = world();
    let arguments = value.as_object().cloned();
    let caller = Caller { identity: Identity::of_token(None), lasting: true, asker: Asker::Nobody, park: false };
    let _ = runtime.block_on(gateway.execute(arguments.as_ref(), caller, RunControl::default()));
});
