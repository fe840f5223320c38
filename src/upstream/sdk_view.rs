//! The catalog's SDK: built from every server's tools, the remembered ones
//! included, and rebuilt on the next read after any change, so a burst of
//! changes (dozens of servers joining at start) costs one build per read.

use std::sync::Arc;
use std::time::Instant;

use super::{Catalog, Inner, read, write};
use codemcp_sdk::Sdk;
use codemcp_sdk::policy::{Decision, Overrides};
use codemcp_sdk::tooldef::ToolDef;

impl Catalog {
    /// The SDK for the tools known right now.
    pub fn sdk(&self) -> Arc<Sdk> {
        self.inner.current_sdk()
    }

    /// Which build of the SDK [`Catalog::sdk`] returns now.
    pub fn generation(&self) -> u64 {
        self.inner
            .generation
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// The SDK as one principal sees it: their overrides decide which tools
    /// are denied (and so do not exist for them).
    pub fn sdk_with(&self, overrides: &Overrides) -> Arc<Sdk> {
        if overrides.is_empty() {
            return self.sdk();
        }
        self.inner
            .build_sdk(|server, tool| overrides.apply(server, &tool.name, tool.policy))
    }
}

impl Inner {
    pub(super) fn current_sdk(&self) -> Arc<Sdk> {
        use std::sync::atomic::Ordering;
        if self.sdk_stale.load(Ordering::Acquire) {
            let _building = self.sdk_building.lock();
            // A change marks the SDK stale after it changed the tools, so a
            // build that starts after this swap sees at least that change.
            if self.sdk_stale.swap(false, Ordering::AcqRel) {
                let started = Instant::now();
                let sdk = self.build_sdk(|_, tool| tool.policy);
                tracing::debug!(target: "codemcp::upstream", functions = sdk.functions().len(), took_ms = started.elapsed().as_millis(), "SDK built");
                *write(&self.sdk) = sdk;
            }
        }
        read(&self.sdk).clone()
    }

    /// The SDK is to be rebuilt from every server's tools (by the next read);
    /// with `notify`, tells listeners (their tool description changed).
    pub(super) fn rebuild_sdk(&self, notify: bool) {
        self.sdk_stale
            .store(true, std::sync::atomic::Ordering::Release);
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if notify {
            self.announce();
        }
    }

    /// An SDK of every tool whose `decide(server, tool)` is not `Deny`:
    /// denied tools do not exist for the agent.
    pub(super) fn build_sdk(&self, decide: impl Fn(&str, &ToolDef) -> Decision) -> Arc<Sdk> {
        let tools: Vec<ToolDef> = self
            .all()
            .iter()
            .flat_map(|u| {
                let mut tools = read(&u.tools).clone();
                for tool in &mut tools {
                    tool.policy = decide(&u.config.name, tool);
                }
                tools
            })
            .filter(|t| t.policy != Decision::Deny)
            .collect();
        let about = self
            .all()
            .iter()
            .filter_map(|u| Some((u.config.name.clone(), read(&u.about).clone()?)))
            .collect();
        Arc::new(
            Sdk::build(&tools)
                .with_about(about)
                .with_connecting(self.connecting()),
        )
    }
}
