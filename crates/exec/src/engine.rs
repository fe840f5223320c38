//! The interface every engine implements.

use std::sync::Arc;

use crate::{Execution, Run, RunControl, SessionId, ToolHost};

/// Runs snippets for MCP sessions. Every engine keeps the same calling contract
/// and limits; they differ in where the code runs. Engines get only runs that
/// passed [`Executor`](crate::Executor)'s checks.
#[async_trait::async_trait]
pub trait Engine: Send + Sync + 'static {
    /// The name results carry in `engine` (`monty`, `cpython`, `cpython-docker`).
    fn name(&self) -> &'static str;
    /// One line for `codemcp check` and logs.
    fn describe(&self) -> String;
    async fn run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution;
    /// Whether this engine holds `session`'s state at `version` now, so a
    /// run need not load it from the store.
    fn holds(&self, session: SessionId, version: u64) -> bool {
        let _ = (session, version);
        false
    }
    /// The MCP session ended: drop its state.
    fn end_session(&self, session: SessionId);
    /// Drop sessions that have been idle too long.
    fn expire_idle(&self);
    /// Stops what outlives a run (worker processes, containers) before the
    /// gateway exits.
    async fn shutdown(&self) {}
}
