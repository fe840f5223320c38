//! How each kind of setting is read, from its flag or its `CODEMCP_*`
//! variable alike.
//!
//! [`Lenient`] wraps every parser: surrounding whitespace is trimmed, a value
//! that is empty or only whitespace takes the setting's default, and a value
//! that is not valid Unicode is read with its bad bytes replaced by U+FFFD, so
//! a number or size holding them is rejected rather than ignored. A rejected
//! value fails with [`Expected`], which says what the value should have been.

use std::ffi::OsStr;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::{Decision, Fallback, Isolation, MontyPlacement, OutputFormat};
use crate::config::ConfigError;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The longest duration any setting accepts. Far beyond any sensible limit,
/// and small enough that adding it to an `Instant` cannot overflow.
const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// What a rejected value should have looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected(pub String);

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}", self.0)
    }
}

impl std::error::Error for Expected {}

fn expected(text: impl Into<String>) -> Expected {
    Expected(text.into())
}

/// The value parser of one setting: `parse` sees the trimmed text, or the
/// setting's default when the value is blank.
#[derive(Clone, Copy)]
pub struct Lenient<T> {
    parse: fn(&str) -> Result<T, Expected>,
    blank: fn(&str) -> bool,
    trim: bool,
}

impl<T> Lenient<T> {
    pub fn new(parse: fn(&str) -> Result<T, Expected>) -> Self {
        Lenient {
            parse,
            blank: |text| text.trim().is_empty(),
            trim: true,
        }
    }

    /// For comma-separated lists, which are blank when every entry is.
    pub fn list(parse: fn(&str) -> Result<T, Expected>) -> Self {
        Lenient {
            blank: |text| text.split(',').all(|entry| entry.trim().is_empty()),
            ..Lenient::new(parse)
        }
    }

    /// Hands `parse` the value as given, surrounding whitespace included.
    pub fn untrimmed(parse: fn(&str) -> Result<T, Expected>) -> Self {
        Lenient {
            trim: false,
            ..Lenient::new(parse)
        }
    }
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Lenient<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let raw = value.to_string_lossy();
        let text = if (self.blank)(&raw) {
            arg.and_then(|arg| arg.get_default_values().first())
                .map(|default| default.to_string_lossy().into_owned())
                .unwrap_or_default()
        } else if self.trim {
            raw.trim().to_owned()
        } else {
            raw.to_string()
        };
        let parse = self.parse;
        // clap's own parser for closures builds the error, so it carries the
        // flag, the raw value and our `Expected` as its source.
        let checked = move |_: &str| parse(&text);
        checked.parse_ref(cmd, arg, OsStr::new(raw.as_ref()))
    }
}

/// A value one of the settings' parsers rejected, as a clap error names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The `CODEMCP_*` variable.
    pub var: String,
    /// The flag, such as `--exec-timeout-ms`.
    pub flag: String,
    /// The value as given (Unicode errors replaced).
    pub value: String,
    /// What it should have been.
    pub expected: String,
}

impl Rejected {
    /// The rejected setting behind `err`; `None` for any other error.
    pub fn from_clap(err: &clap::Error) -> Option<Rejected> {
        if err.kind() != ErrorKind::ValueValidation {
            return None;
        }
        let context = |kind| match err.get(kind) {
            Some(ContextValue::String(text)) => Some(text.clone()),
            _ => None,
        };
        let shown = context(ContextKind::InvalidArg)?;
        let value = context(ContextKind::InvalidValue)?;
        let expected = std::error::Error::source(err)?.downcast_ref::<Expected>()?;
        // clap shows the argument as `--exec-timeout-ms <MS>`.
        let flag = shown.split_whitespace().next()?;
        let command = super::Settings::command();
        let arg = command.get_arguments().find(|arg| {
            arg.get_long()
                .is_some_and(|long| flag.strip_prefix("--") == Some(long))
        })?;
        Some(Rejected {
            var: arg.get_env()?.to_string_lossy().into_owned(),
            flag: flag.to_owned(),
            value,
            expected: expected.0.clone(),
        })
    }
}

impl From<Rejected> for ConfigError {
    fn from(rejected: Rejected) -> ConfigError {
        ConfigError::BadEnv {
            var: rejected.var,
            value: rejected.value,
            expected: rejected.expected,
        }
    }
}

/// Whole milliseconds, zero rejected.
pub fn millis(text: &str) -> Result<Duration, Expected> {
    duration(text, true, "milliseconds", Duration::from_millis)
}

/// Whole milliseconds, zero allowed.
pub fn millis_or_zero(text: &str) -> Result<Duration, Expected> {
    duration(text, false, "milliseconds", Duration::from_millis)
}

/// Whole seconds, zero rejected.
pub fn secs(text: &str) -> Result<Duration, Expected> {
    duration(text, true, "seconds", Duration::from_secs)
}

fn duration(
    text: &str,
    reject_zero: bool,
    unit: &str,
    from: fn(u64) -> Duration,
) -> Result<Duration, Expected> {
    let whole = if reject_zero {
        format!("a whole number of {unit} greater than zero")
    } else {
        format!("a whole number of {unit}")
    };
    let parsed = text.parse::<u64>().map_err(|_| expected(&whole))?;
    if parsed == 0 && reject_zero {
        return Err(expected(whole));
    }
    let duration = from(parsed);
    if duration > MAX_DURATION {
        let most = MAX_DURATION.as_secs() * if unit == "seconds" { 1 } else { 1000 };
        return Err(expected(format!("at most {most} {unit} (365 days)")));
    }
    Ok(duration)
}

/// A positive whole number that fits `T`.
pub fn count<T: TryFrom<u64>>(text: &str) -> Result<T, Expected> {
    text.parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| expected("a whole number greater than zero"))
}

/// A positive size in bytes, see [`parse_size`].
pub fn size(text: &str) -> Result<usize, Expected> {
    parse_size(text)
        .filter(|&n| n > 0)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            expected(
                "a size greater than zero in bytes, or with a suffix such as 64k, 512MiB or 1G",
            )
        })
}

/// Bytes, optionally followed by `k`, `m` or `g` (any case, optionally with
/// `b` or `ib`); every multiple is binary.
pub fn parse_size(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..digits].parse().ok()?;
    let multiplier = match text[digits..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

/// A positive number of CPUs, fractions allowed, as billionths.
pub fn cpus(text: &str) -> Result<u64, Expected> {
    text.parse::<f64>()
        .ok()
        .filter(|cpus| cpus.is_finite() && (0.01..=1024.0).contains(cpus))
        .map(|cpus| (cpus * 1e9).round() as u64)
        .ok_or_else(|| expected("a number of CPUs from 0.01 to 1024, such as 1 or 0.5"))
}

/// Host names, lower-cased.
pub fn hosts(text: &str) -> Result<Vec<String>, Expected> {
    list(
        text,
        "a comma-separated list of host names such as localhost,127.0.0.1,::1",
        |host| {
            let ok = !host.contains(['/', '@']) && !host.contains(char::is_whitespace);
            ok.then(|| host.to_ascii_lowercase())
        },
    )
}

/// `http://` or `https://` origins, lower-cased, without a trailing slash.
pub fn origins(text: &str) -> Result<Vec<String>, Expected> {
    list(
        text,
        "a comma-separated list of origins such as http://localhost:8080",
        |origin| {
            let origin = origin.trim_end_matches('/').to_ascii_lowercase();
            let rest = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))?;
            let ok = !rest.is_empty()
                && !rest.contains(['/', '@'])
                && !rest.contains(char::is_whitespace);
            ok.then_some(origin)
        },
    )
}

/// A comma-separated list, empty entries skipped; `item` normalises one
/// entry or rejects it.
fn list(
    text: &str,
    what: &str,
    item: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, Expected> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| item(entry).ok_or_else(|| expected(what)))
        .collect()
}

/// One of a fixed set of words, case-insensitive.
fn choice<T: Copy>(text: &str, options: &[(&str, T)], what: &str) -> Result<T, Expected> {
    let text = text.to_ascii_lowercase();
    options
        .iter()
        .find(|(word, _)| *word == text)
        .map(|(_, value)| *value)
        .ok_or_else(|| expected(what))
}

pub fn boolean(text: &str) -> Result<bool, Expected> {
    let options = [
        ("true", true),
        ("1", true),
        ("yes", true),
        ("on", true),
        ("false", false),
        ("0", false),
        ("no", false),
        ("off", false),
    ];
    choice(text, &options, "true or false")
}

pub fn isolation(text: &str) -> Result<Isolation, Expected> {
    let options = [
        ("monty", Isolation::Monty),
        ("sandbox", Isolation::Sandbox),
        ("docker", Isolation::Docker),
        ("host_system", Isolation::HostSystem),
    ];
    choice(text, &options, "one of monty, sandbox, docker, host_system")
}

pub fn decision(text: &str) -> Result<Decision, Expected> {
    let options = [
        ("allow", Decision::Allow),
        ("ask", Decision::Ask),
        ("deny", Decision::Deny),
    ];
    choice(text, &options, "one of allow, ask, deny")
}

pub fn fallback(text: &str) -> Result<Fallback, Expected> {
    let options = [
        ("auto", Fallback::Auto),
        ("sandbox", Fallback::Sandbox),
        ("docker", Fallback::Docker),
        ("host-unsandboxed", Fallback::Host),
        ("host", Fallback::Host),
        ("none", Fallback::None),
    ];
    choice(
        text,
        &options,
        "one of auto, sandbox, docker, host-unsandboxed (or host), none",
    )
}

pub fn output(text: &str) -> Result<OutputFormat, Expected> {
    let options = [
        ("compact", OutputFormat::Compact),
        ("json", OutputFormat::Json),
    ];
    choice(text, &options, "compact or json")
}

/// `None` when unset or blank.
pub fn placement(text: &str) -> Result<Option<MontyPlacement>, Expected> {
    if text.is_empty() {
        return Ok(None);
    }
    let options = [
        ("inprocess", MontyPlacement::InProcess),
        ("in-process", MontyPlacement::InProcess),
        ("in_process", MontyPlacement::InProcess),
        ("pool", MontyPlacement::Pool),
    ];
    choice(text, &options, "inprocess or pool").map(Some)
}

/// `None` when unset or blank.
pub fn path(text: &str) -> Result<Option<PathBuf>, Expected> {
    Ok((!text.is_empty()).then(|| PathBuf::from(text)))
}

/// `None` when unset or blank; otherwise the value as given.
pub fn token(text: &str) -> Result<Option<String>, Expected> {
    Ok((!text.is_empty()).then(|| text.to_owned()))
}

pub fn text(text: &str) -> Result<String, Expected> {
    Ok(text.to_owned())
}
