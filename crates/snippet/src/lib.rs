//! What a snippet does, read before any engine runs it: its outline
//! (imports, bindings, carriable definitions), which of its calls want a
//! future, which imports it may make, and the pre-flight check of its tool
//! calls. Depends only on the ground floor and the SDK, never on engines.

pub mod call_sites;
#[rustfmt::skip]
pub mod cpython_tables;
pub mod definitions;
pub mod facts;
pub mod imports;
pub mod laziness;
pub mod preflight;
pub mod syntax;

pub use facts::{Analysis, Facts};
