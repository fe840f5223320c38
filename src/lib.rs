//! codemcp: a "code mode" MCP gateway. Upstream MCP tools become typed Python
//! functions; agents call one tool, `execute_python`, with a snippet that uses them.

pub mod admin;
pub mod audit;
pub mod cli;
pub mod clients;
pub mod config;
pub mod exec;
pub mod for_humans;
pub mod metrics;
pub mod policy;
pub mod principals;
pub mod process;
pub mod sdk;
pub mod secret;
pub use codemcp_base::secure_file;
pub mod server;
pub mod telemetry;
pub mod threads;
pub mod timing;
pub mod tooldef;
pub mod upstream;
