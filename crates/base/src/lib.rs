//! codemcp's ground floor: small helpers the gateway's rooms share. Nothing
//! here imports from any other codemcp crate.

pub mod secure_file;
