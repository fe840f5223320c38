//! The pinned wheels (`recipe/wheels.pins`): one table the binary builds in
//! and `packaging/container/build.sh` reads, so the gateway image and the
//! binary fetch the very same bytes. Also the reading of such tables.

use std::sync::LazyLock;

/// The table, as shipped.
pub const WHEELS: &str = include_str!("../recipe/wheels.pins");

/// One wheel pinned for one machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelPin {
    /// The distribution's name, e.g. `pydantic-monty-runtime`.
    pub name: &'static str,
    pub version: &'static str,
    /// `uname -m`: `x86_64` or `aarch64`.
    pub machine: &'static str,
    pub size: u64,
    pub sha256: &'static str,
    /// Path under the PyPI files host.
    pub path: &'static str,
}

impl WheelPin {
    /// The wheel's file name (the last part of its path).
    pub fn file_name(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }
}

/// Every pinned wheel (empty, with an error logged, if the table did not
/// parse: a test keeps that from shipping).
pub fn wheels() -> &'static [WheelPin] {
    static TABLE: LazyLock<Vec<WheelPin>> = LazyLock::new(|| match parse_wheels(WHEELS) {
        Ok(table) => table,
        Err(e) => {
            tracing::error!(target: "codemcp::worker", "the built-in wheel pins do not parse: {e}");
            Vec::new()
        }
    });
    &TABLE
}

/// The pin of `name` for `machine`, if there is one.
pub fn wheel(name: &str, machine: &str) -> Option<&'static WheelPin> {
    wheels()
        .iter()
        .find(|w| w.name == name && w.machine == machine)
}

fn parse_wheels(table: &'static str) -> Result<Vec<WheelPin>, String> {
    rows(table)
        .map(|(n, line)| {
            let [name, version, machine, size, sha256, path] = line[..] else {
                return Err(format!("line {n}: expected 6 fields, found {}", line.len()));
            };
            Ok(WheelPin {
                name,
                version,
                machine,
                size: size
                    .parse()
                    .map_err(|_| format!("line {n}: bad size {size:?}"))?,
                sha256: digest(sha256).ok_or_else(|| format!("line {n}: bad sha256"))?,
                path,
            })
        })
        .collect()
}

/// The rows of a whitespace-separated table, with their line numbers
/// (from 1); blank lines and `#` comments are skipped.
pub(crate) fn rows(table: &'static str) -> impl Iterator<Item = (usize, Vec<&'static str>)> {
    table.lines().enumerate().filter_map(|(i, line)| {
        let line = line.split('#').next().unwrap_or_default().trim();
        (!line.is_empty()).then(|| (i + 1, line.split_whitespace().collect()))
    })
}

/// `text` when it is a SHA-256 in lower-case hex.
pub(crate) fn digest(text: &'static str) -> Option<&'static str> {
    (text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_wheel_is_pinned_for_both_machines() {
        assert_eq!(parse_wheels(WHEELS).unwrap().len(), wheels().len());
        for name in ["websockets", "pydantic-monty-runtime"] {
            for machine in ["x86_64", "aarch64"] {
                let pin = wheel(name, machine).unwrap();
                assert!(pin.file_name().ends_with(".whl"), "{pin:?}");
                assert!(pin.file_name().contains(machine), "{pin:?}");
                assert!(
                    pin.file_name().starts_with(&format!(
                        "{}-{}-",
                        name.replace('-', "_"),
                        pin.version
                    )),
                    "{pin:?}"
                );
                assert!(pin.path.starts_with("packages/"));
            }
        }
    }

    #[test]
    fn a_digest_must_be_64_lower_case_hex_digits() {
        assert!(digest("ab").is_none());
        assert!(digest(&*"A".repeat(64).leak()).is_none());
        assert!(digest(&*"a".repeat(64).leak()).is_some());
        let bad = "w 1 x86_64 10 abc packages/w-1-x86_64.whl\n";
        assert!(parse_wheels(bad).unwrap_err().contains("line 1"));
    }
}
