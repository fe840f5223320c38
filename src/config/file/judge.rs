//! Judging one server entry: what it asks for, or why it is skipped (the
//! `Err` of every function here is that reason, in words for the user). One
//! unusable entry never blocks the others.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::fields::{bool_field, kind_of, str_field, str_list_field, str_map_field};
use super::layout::{Dialect, RawEntry};
use super::oauth::oauth_field;
use super::{DEFAULT_HANDSHAKE_TIMEOUT, OAuthConfig, Start, Transport, start};
use crate::config::interpolate::{expand_home, interpolate};

pub(super) const SSE_REASON: &str = "SSE transport is not supported; use a Streamable HTTP URL";

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

enum Kind {
    Local,
    Remote,
}

pub(super) fn build(
    entry: &RawEntry,
    env: Env<'_>,
) -> Result<(Transport, Duration, OAuthConfig, Start), String> {
    if entry.name.trim().is_empty() {
        return Err("the server name is empty".to_owned());
    }
    if codemcp_base::for_humans::has_hidden(&entry.name) {
        // It is shown in approval questions and logs, where such characters forge or hide text.
        return Err("the server name has control, bidi or invisible characters".to_owned());
    }
    let Value::Object(fields) = &entry.value else {
        return Err(format!(
            "the entry must be an object, found {}",
            kind_of(&entry.value)
        ));
    };
    let transport = match entry.dialect {
        Dialect::Common => common_entry(fields, env)?,
        Dialect::OpenCode => opencode_entry(fields, env)?,
    };
    let timeout = timeout(fields)?.unwrap_or(DEFAULT_HANDSHAKE_TIMEOUT);
    let oauth = match transport {
        Transport::Http { .. } => oauth_field(fields, &|text| {
            interpolate(text, env).map_err(|e| e.to_string())
        })?,
        Transport::Stdio { .. } => OAuthConfig::default(),
    };
    let start = start::start_field(fields)?;
    Ok((transport, timeout, oauth, start))
}

/// Whether the entry turns its server off: `"disabled": true`, or
/// opencode's `"enabled": false`.
pub(super) fn switched_off(entry: &RawEntry) -> Result<bool, String> {
    let Value::Object(fields) = &entry.value else {
        return Ok(false);
    };
    Ok(match entry.dialect {
        Dialect::Common => bool_field(fields, "disabled")? == Some(true),
        Dialect::OpenCode => bool_field(fields, "enabled")? == Some(false),
    })
}

fn common_entry(fields: &Map<String, Value>, env: Env<'_>) -> Result<Transport, String> {
    let declared = match str_field(fields, "type")? {
        None => None,
        Some(t) => match t.to_ascii_lowercase().as_str() {
            "stdio" => Some((Kind::Local, t)),
            "http" | "streamable-http" | "streamablehttp" => Some((Kind::Remote, t)),
            "sse" => return Err(SSE_REASON.to_owned()),
            _ => {
                return Err(format!(
                    "unknown \"type\" \"{t}\"; expected \"stdio\" or \"http\""
                ));
            }
        },
    };
    match kind(fields, declared)? {
        Kind::Local => {
            let command = str_field(fields, "command")?.unwrap_or_default();
            let args = str_list_field(fields, "args")?.unwrap_or_default();
            stdio(command, &args, fields, "env", env)
        }
        Kind::Remote => http(fields, env),
    }
}

fn opencode_entry(fields: &Map<String, Value>, env: Env<'_>) -> Result<Transport, String> {
    let declared = match str_field(fields, "type")? {
        None => None,
        Some(t @ "local") => Some((Kind::Local, t)),
        Some(t @ "remote") => Some((Kind::Remote, t)),
        Some(t) => {
            return Err(format!(
                "unknown \"type\" \"{t}\"; expected \"local\" or \"remote\""
            ));
        }
    };
    match kind(fields, declared)? {
        Kind::Local => {
            // opencode's `command` is the whole argv; a plain string is
            // accepted as a program without arguments.
            let argv = match fields.get("command") {
                Some(Value::String(command)) => vec![command.clone()],
                _ => str_list_field(fields, "command")?.unwrap_or_default(),
            };
            let Some((program, program_args)) = argv.split_first() else {
                return Err("\"command\" is an empty list".to_owned());
            };
            stdio(program, program_args, fields, "environment", env)
        }
        Kind::Remote => http(fields, env),
    }
}

/// Decides local or remote from `type` (with the spelling the user wrote)
/// and which of `command` and `url` are present.
fn kind(fields: &Map<String, Value>, declared: Option<(Kind, &str)>) -> Result<Kind, String> {
    let has = |key: &str| fields.get(key).is_some_and(|v| !v.is_null());
    match (declared, has("command"), has("url")) {
        (_, true, true) => Err(
            "has both \"command\" and \"url\"; a server is either a local command or a URL"
                .to_owned(),
        ),
        (Some((Kind::Local, t)), false, _) => {
            Err(format!("\"type\" is \"{t}\" but there is no \"command\""))
        }
        (Some((Kind::Remote, t)), _, false) => {
            Err(format!("\"type\" is \"{t}\" but there is no \"url\""))
        }
        (_, true, false) => Ok(Kind::Local),
        (_, false, true) => Ok(Kind::Remote),
        (None, false, false) => Err("has neither \"command\" nor \"url\"".to_owned()),
    }
}

fn stdio(
    command: &str,
    args: &[String],
    fields: &Map<String, Value>,
    env_key: &str,
    env: Env<'_>,
) -> Result<Transport, String> {
    let expand = |text: &str| interpolate(text, env).map_err(|err| err.to_string());
    let home = |text: String| expand_home(text, env).map_err(|err| err.to_string());
    let command = home(expand(command)?)?;
    if command.trim().is_empty() {
        return Err("\"command\" is empty".to_owned());
    }
    let args = args
        .iter()
        .map(|arg| expand(arg))
        .collect::<Result<Vec<_>, _>>()?;
    let env_vars = str_map_field(fields, env_key)?
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| Ok((name, expand(&value)?)))
        .collect::<Result<BTreeMap<_, _>, String>>()?;
    let cwd = match str_field(fields, "cwd")? {
        Some(cwd) => Some(PathBuf::from(home(expand(cwd)?)?)),
        None => None,
    };
    Ok(Transport::Stdio {
        command,
        args,
        env: env_vars,
        cwd,
    })
}

fn http(fields: &Map<String, Value>, env: Env<'_>) -> Result<Transport, String> {
    let expand = |text: &str| interpolate(text, env).map_err(|err| err.to_string());
    let url = expand(str_field(fields, "url")?.unwrap_or_default())?;
    let scheme_ok = ["http://", "https://"].iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
    });
    if !scheme_ok {
        return Err(format!(
            "\"url\" must start with http:// or https://, found \"{url}\""
        ));
    }
    let headers = str_map_field(fields, "headers")?
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| Ok((name, expand(&value)?)))
        .collect::<Result<BTreeMap<_, _>, String>>()?;
    Ok(Transport::Http { url, headers })
}

/// The entry's `timeout`. opencode documents milliseconds, but people also
/// write seconds, so a value of 1000 or more is read as milliseconds and a
/// smaller one as seconds (`5000` and `5` both mean five seconds). The same
/// rule applies to the `mcpServers` form, where clients disagree on the unit.
fn timeout(fields: &Map<String, Value>) -> Result<Option<Duration>, String> {
    let value = match fields.get("timeout") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64(),
        Some(other) => {
            return Err(format!(
                "\"timeout\" must be a number, found {}",
                kind_of(other)
            ));
        }
    };
    let seconds = match value {
        Some(v) if v >= 1000.0 => v / 1000.0,
        Some(v) if v > 0.0 => v,
        _ => return Err("\"timeout\" must be greater than zero".to_owned()),
    };
    Duration::try_from_secs_f64(seconds)
        .map(Some)
        .map_err(|_| "\"timeout\" is too large".to_owned())
}
