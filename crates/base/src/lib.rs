//! codemcp's ground floor: small helpers the gateway's rooms share. Nothing
//! here imports from any other codemcp crate.

pub mod for_humans;
pub mod metrics;
pub mod process;
pub mod secret;
pub mod secure_file;
pub mod threads;
pub mod timing;
