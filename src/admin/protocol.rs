//! The admin socket's protocol: one JSON [`Request`] per line, one JSON
//! [`Answer`] per line back.

use serde::{Deserialize, Serialize};

use crate::upstream::Reconfigured;

/// The longest request line a gateway reads.
pub const MAX_LINE: u64 = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Who the gateway is ([`Reply::Info`]).
    Info,
    /// Its upstream servers ([`Reply::List`]).
    List,
    /// Turns a configured server on; with `make_default`, in the file too.
    Enable { name: String, make_default: bool },
    /// Turns a server off; with `make_default`, in the file too.
    Disable { name: String, make_default: bool },
    /// Reads the config file again.
    Reload,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Ok(Box<Reply>),
    /// A message for the user; the gateway is unchanged.
    Err(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Info(InstanceInfo),
    List(Listing),
    Changed(Change),
}

/// One running gateway, as `codemcp instances` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceInfo {
    pub pid: u32,
    /// `stdio`, or `http ADDR`.
    pub transport: String,
    /// The config file (absolute), if there is one.
    pub config: Option<String>,
    /// The program that started it: its parent's command line.
    pub launcher: String,
    /// `serve --label NAME`.
    pub label: Option<String>,
}

/// The gateway's servers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listing {
    pub config: Option<String>,
    /// The last reload that failed (the gateway kept its last good config).
    pub config_error: Option<String>,
    pub servers: Vec<ServerLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerLine {
    pub name: String,
    /// `connected`, `connecting`, `down`, `disabled` or `skipped`.
    pub state: String,
    pub tools: usize,
    /// The error or skip reason, or where a runtime switch came from.
    pub note: Option<String>,
}

/// What an enable, disable or reload did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Change {
    pub done: Reconfigured,
    /// With `--make-default`: the file written and its backup.
    pub saved: Option<Saved>,
    pub listing: Listing,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saved {
    pub path: String,
    pub backup: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_one_json_object_each() {
        let line = serde_json::to_string(&Request::Enable {
            name: "fs".into(),
            make_default: true,
        })
        .expect("serializes");
        assert_eq!(line, r#"{"op":"enable","name":"fs","make_default":true}"#);
        let back: Request = serde_json::from_str(&line).expect("parses");
        assert!(matches!(
            back,
            Request::Enable {
                make_default: true,
                ..
            }
        ));
        assert!(serde_json::from_str::<Request>(r#"{"op":"format_disk"}"#).is_err());
    }
}
