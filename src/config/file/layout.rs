//! The file's layout: the top level and its two sections (`mcpServers`,
//! `mcp`). They are read with serde visitors so that shape errors and
//! duplicate names carry a position; each server entry is kept as a `Value`
//! and judged on its own (see `judge`).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::entry::Entry;
use codemcp_sdk::policy::Rules;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// `mcpServers`: Claude Desktop, Claude Code, Cursor.
    Common,
    /// `mcp`: opencode.
    OpenCode,
}

impl Dialect {
    fn from_key(key: &str) -> Option<Self> {
        match key {
            "mcpServers" => Some(Dialect::Common),
            "mcp" => Some(Dialect::OpenCode),
            _ => None,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Dialect::Common => "mcpServers",
            Dialect::OpenCode => "mcp",
        }
    }
}

pub(super) struct RawEntry {
    pub name: String,
    pub dialect: Dialect,
    pub value: Value,
    /// Read apart from `value`, so that a malformed policy is an error with
    /// its position rather than a skipped server.
    pub policy: Rules,
}

#[derive(Default)]
pub(super) struct RawFile {
    pub entries: Vec<RawEntry>,
    pub sections: usize,
    pub other_keys: usize,
}

impl<'de> Deserialize<'de> for RawFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FileVisitor)
    }
}

struct FileVisitor;

impl<'de> Visitor<'de> for FileVisitor {
    type Value = RawFile;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object with an \"mcpServers\" or \"mcp\" key")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFile, A::Error> {
        let mut file = RawFile::default();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(dialect) = Dialect::from_key(&key) {
                file.sections += 1;
                map.next_value_seed(Section {
                    dialect,
                    entries: &mut file.entries,
                })?;
            } else {
                file.other_keys += 1;
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(file)
    }
}

struct Section<'a> {
    dialect: Dialect,
    entries: &'a mut Vec<RawEntry>,
}

impl<'de> DeserializeSeed<'de> for Section<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Section<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "\"{}\" to be an object mapping server names to their settings",
            self.dialect.key()
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // A set, not a scan of `entries` per name: that made loading (and
        // `import`, which loads what it would write) quadratic.
        let mut seen: std::collections::HashSet<String> = self
            .entries
            .iter()
            .map(|entry| entry.name.clone())
            .collect();
        while let Some(name) = map.next_key::<String>()? {
            if !seen.insert(name.clone()) {
                return Err(de::Error::custom(format_args!(
                    "duplicate server name \"{name}\""
                )));
            }
            let Entry { value, policy } = map.next_value::<Entry>()?;
            self.entries.push(RawEntry {
                name,
                dialect: self.dialect,
                value,
                policy,
            });
        }
        Ok(())
    }
}
