//! What is kept of a helper, and one principal's helpers as one record.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::extract::Extracted;

/// One saved version of a helper.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Helper {
    pub name: String,
    /// Its imports and functions, defined again before each run that uses it.
    pub source: String,
    pub signature: String,
    /// Its line in the type stub.
    pub stub: String,
    pub doc: String,
    /// What the agent said it is for (`save_helper(fn, description=...)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Other helpers it calls: defined with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uses_helpers: Vec<String>,
    /// 1 for the first save of the name, then one more per save.
    pub version: u32,
    /// Seconds since the epoch.
    pub saved_at: u64,
}

impl Helper {
    pub fn new(extracted: Extracted, description: Option<String>, version: u32) -> Self {
        let saved_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            name: extracted.name,
            source: extracted.source,
            signature: extracted.signature,
            stub: extracted.stub,
            doc: extracted.doc,
            description,
            uses_helpers: extracted.uses_helpers,
            version,
            saved_at,
        }
    }

    /// One line on what it does: its description, else its docstring's first line.
    pub fn summary(&self) -> String {
        let text = self.description.as_deref().unwrap_or(&self.doc);
        text.lines().next().unwrap_or_default().trim().to_owned()
    }
}

/// A helper's current version and the one it replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Versions {
    pub current: Helper,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Helper>,
}

/// Every helper of one principal: the payload of its sealed record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Library {
    pub helpers: BTreeMap<String, Versions>,
}

impl Library {
    /// Saves `helper`, keeping the version it replaces as the previous one.
    pub fn put(&mut self, mut helper: Helper) -> u32 {
        match self.helpers.remove(&helper.name) {
            Some(old) => {
                helper.version = old.current.version.saturating_add(1);
                let version = helper.version;
                self.helpers.insert(
                    helper.name.clone(),
                    Versions {
                        current: helper,
                        previous: Some(old.current),
                    },
                );
                version
            }
            None => {
                helper.version = 1;
                self.helpers.insert(
                    helper.name.clone(),
                    Versions {
                        current: helper,
                        previous: None,
                    },
                );
                1
            }
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}
