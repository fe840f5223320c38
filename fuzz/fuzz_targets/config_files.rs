//! Arbitrary config files through the parser (both formats, interpolation,
//! comments). Must never panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let env = |name: &str| (name.len() % 2 == 0).then(|| format!("value-of-{name}"));
    let _ = codemcp::config::parse(text, Path::new("fuzz.json"), &env);
});
