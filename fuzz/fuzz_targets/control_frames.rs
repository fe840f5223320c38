//! Arbitrary frames from a hostile worker on the control channel: every
//! message type's parser. Must never panic.
#![no_main]

use codemcp_exec::worker::protocol::{CallToolParams, DescribeToolParams, Frame, RunResult, SearchToolsParams};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = serde_json::from_slice::<Frame>(data) else { return };
    if let Some(params) = frame.params.clone() {
        let _ = serde_json::from_value::<CallToolParams>(params.clone());
        let _ = serde_json::from_value::<SearchToolsParams>(params.clone());
        let _ = serde_json::from_value::<DescribeToolParams>(params);
    }
    if let Some(result) = frame.result.clone() {
        let _ = serde_json::from_value::<RunResult>(result);
    }
    let _ = serde_json::to_string(&frame);
});
