//! `codemcp sdk`: the `execute_python` description and the SDK type stub,
//! as an agent would see them.

use crate::config::Settings;
use crate::server;
use crate::upstream::Catalog;

pub(super) fn sdk(catalog: &Catalog, settings: &Settings) {
    let sdk = catalog.sdk();
    println!("{}", sdk.description(settings.description_budget));
    println!("\n# ---- {} ----\n", server::SDK_URI);
    println!("{}", sdk.stub());
}
