//! Helpers the operator publishes to every principal: a directory of `.py`
//! files, each defining (at least) the function its file name names.
//! Trusted like the config: their calls are not checked against a catalog.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::extract::Extracted;
use super::extract::extract;
use super::record::Helper;

/// Every helper of `dir` that can be read; the others are logged and skipped.
pub fn read_dir(dir: &Path, max_bytes: usize) -> BTreeMap<String, Helper> {
    let mut helpers = BTreeMap::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(target: "codemcp", dir = %dir.display(), error = %e, "shared helpers directory unreadable");
            return helpers;
        }
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    paths.sort();
    for path in paths {
        match read_one(&path, max_bytes) {
            Ok(helper) => {
                helpers.insert(helper.name.clone(), helper);
            }
            Err(why) => {
                tracing::warn!(target: "codemcp", file = %path.display(), error = %why, "shared helper skipped");
            }
        }
    }
    helpers
}

/// The helper one file defines.
pub fn read_one(path: &Path, max_bytes: usize) -> Result<Helper, String> {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("file name is not UTF-8")?
        .to_owned();
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > max_bytes as u64 {
        return Err(format!(
            "{} bytes, over CODEMCP_HELPERS_MAX_BYTES",
            meta.len()
        ));
    }
    let code = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let extracted: Extracted =
        extract(&code, &name, None, &BTreeSet::new(), max_bytes).map_err(|e| e.to_string())?;
    Ok(Helper::new(extracted, None, 1))
}

/// The latest modification time of `dir` and its `.py` files.
pub fn latest_change(dir: &Path) -> Option<std::time::SystemTime> {
    let mut latest = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    for entry in std::fs::read_dir(dir).ok()?.filter_map(Result::ok) {
        let modified = entry.metadata().and_then(|m| m.modified()).ok();
        latest = latest.max(modified);
    }
    latest
}
