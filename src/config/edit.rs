//! `--make-default`: switching one server on or off in the config file
//! itself, with every comment and all formatting kept. The file is edited as
//! a concrete syntax tree (`jsonc-parser`'s CST), never re-serialized; the
//! previous file is copied to `FILE.codemcp-backup` first (`config::write`), and the new one replaces it
//! in one rename.
//!
//! Each layout keeps its own spelling: `"disabled": true` / `false` in
//! `mcpServers`, `"enabled": false` / `true` in opencode's `mcp`.

use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstObject, CstRootNode};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}; not changed")]
    Unsafe(#[from] codemcp_base::secure_file::UnsafeFile),
    #[error("{path}: {message}; not changed")]
    Parse { path: PathBuf, message: String },
    #[error("{path} has no server entry '{name}' under \"mcpServers\" or \"mcp\"; not changed")]
    NotFound { path: PathBuf, name: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Turns server `name` on or off in the file at `path`. Returns the backup's path.
///
/// # Errors
/// [`EditError`]; the file is unchanged then.
pub fn set_enabled(path: &Path, name: &str, on: bool) -> Result<PathBuf, EditError> {
    // A symlinked config stays a symlink: the file it points to is replaced.
    let path = std::fs::canonicalize(path).map_err(|source| EditError::Read {
        path: path.to_owned(),
        source,
    })?;
    let text = codemcp_base::secure_file::read_trusted_text(&path, &super::CONFIG_FILE)?;
    let edited = edit_text(&text, name, on).map_err(|e| match e {
        Miss::Parse(message) => EditError::Parse {
            path: path.clone(),
            message,
        },
        Miss::Entry => EditError::NotFound {
            path: path.clone(),
            name: name.to_owned(),
        },
    })?;
    let backup =
        super::write::back_up(&path).map_err(|(path, source)| EditError::Write { path, source })?;
    super::write::replace_atomically(&path, &edited).map_err(|source| EditError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(backup)
}

enum Miss {
    Parse(String),
    Entry,
}

/// The text with the entry's switch set, everything else byte for byte.
fn edit_text(text: &str, name: &str, on: bool) -> Result<String, Miss> {
    let root = CstRootNode::parse(text, &ParseOptions::default())
        .map_err(|e| Miss::Parse(e.to_string()))?;
    let top = root
        .object_value()
        .ok_or_else(|| Miss::Parse("the top level is not an object".into()))?;
    let entry = |section: &str| top.object_value(section)?.object_value(name);
    if let Some(entry) = entry("mcpServers") {
        set_flag(&entry, "disabled", !on, false);
    } else if let Some(entry) = entry("mcp") {
        set_flag(&entry, "enabled", on, true);
    } else {
        return Err(Miss::Entry);
    }
    Ok(root.to_string())
}

/// Sets `key` to `value`, adding it only when the default would not do.
fn set_flag(entry: &CstObject, key: &str, value: bool, default: bool) {
    match entry.get(key) {
        Some(prop) => prop.set_value(value.into()),
        None if value != default => {
            entry.append(key, value.into());
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMON: &str = r#"{
  // my servers
  "mcpServers": {
    "fs": {"command": "x"}, /* keep */
    "gh": {
      "command": "y",
      "disabled": true, // off for now
    },
  },
}
"#;

    fn edit(text: &str, name: &str, on: bool) -> String {
        match edit_text(text, name, on) {
            Ok(text) => text,
            Err(Miss::Parse(m)) => panic!("parse: {m}"),
            Err(Miss::Entry) => panic!("no entry {name}"),
        }
    }

    #[test]
    fn disabling_adds_the_flag_and_keeps_comments() {
        let out = edit(COMMON, "fs", false);
        assert!(
            out.contains("// my servers") && out.contains("/* keep */"),
            "{out}"
        );
        let parsed = super::super::parse(&out, Path::new("m.json"), &|_| None).expect("valid");
        assert!(parsed.servers.is_empty(), "{out}");
        assert_eq!(parsed.disabled.len(), 2);
    }

    #[test]
    fn enabling_flips_the_existing_flag_in_place() {
        let out = edit(COMMON, "gh", true);
        assert_eq!(
            out,
            COMMON.replace("\"disabled\": true", "\"disabled\": false")
        );
    }

    #[test]
    fn opencode_entries_use_enabled() {
        let text = "{\"mcp\": {\"a\": {\"type\": \"local\", \"command\": [\"x\"]}}}";
        let off = edit(text, "a", false);
        let parsed = super::super::parse(&off, Path::new("o.json"), &|_| None).expect("valid");
        assert_eq!(parsed.skipped[0].reason, "disabled", "{off}");
        assert_eq!(edit(&off, "a", true), off.replace("false", "true"));
    }

    #[test]
    fn a_missing_entry_or_broken_file_is_refused() {
        assert!(matches!(edit_text(COMMON, "nope", true), Err(Miss::Entry)));
        assert!(matches!(
            edit_text("{\"mcpServers\": {", "fs", true),
            Err(Miss::Parse(_))
        ));
    }
}
