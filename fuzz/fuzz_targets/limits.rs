//! Limits shared by the fuzz targets that run snippets: small and fast, so a
//! hostile input ends quickly.

use std::time::Duration;

use codemcp_exec::RunChecks;
use codemcp_exec::monty::MontyLimits;

pub fn small() -> MontyLimits {
    MontyLimits {
        exec_timeout: Duration::from_millis(200),
        max_output_bytes: 64 << 10,
        max_result_bytes: 64 << 10,
        max_tool_calls: 20,
        max_recursion_depth: 100,
        max_sleep_total: Duration::from_millis(10),
        memory_limit: 64 << 20,
        session_idle: Duration::from_secs(60),
        max_sessions: 4,
    }
}

/// The checks made before an engine sees a run, as small as `small()`.
#[allow(dead_code)] // not every target that shares this file runs snippets through an Executor
pub fn checks() -> RunChecks {
    RunChecks {
        exec_timeout: Duration::from_millis(200),
        max_source_bytes: 64 << 10,
    }
}
