//! codemcp: a "code mode" MCP gateway. Upstream MCP tools become typed Python
//! functions; agents call one tool, `execute_python`, with a snippet that uses them.

pub mod admin;
pub mod assemble;
pub mod authority;
pub mod cli;
pub mod clients;
pub mod config;
pub mod helpers;
pub mod server;
pub mod telemetry;
pub mod upstream;
