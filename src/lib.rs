//! codemcp: a "code mode" MCP gateway. Upstream MCP tools become typed Python
//! functions; agents call one tool, `execute_python`, with a snippet that uses them.

pub mod admin;
pub mod assemble;
pub mod authority;
pub mod cli;
pub mod clients;
pub mod config;
pub use codemcp_base::for_humans;
pub use codemcp_base::metrics;
pub use codemcp_exec as exec;
pub use codemcp_sdk::policy;
pub mod helpers;
pub use codemcp_base::process;
pub use codemcp_base::secret;
pub use codemcp_base::secure_file;
pub use codemcp_sdk as sdk;
pub mod server;
pub mod telemetry;
pub use codemcp_base::threads;
pub use codemcp_base::timing;
pub use codemcp_sdk::tooldef;
pub mod upstream;
