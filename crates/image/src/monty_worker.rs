//! The Monty pool worker, provisioned by the binary itself when it has none
//! of its own: the `monty` program out of PyPI's `pydantic-monty-runtime`
//! wheel of the linked Monty's version, pinned by SHA-256 per machine in
//! `recipe/wheels.pins` (the gateway image takes the same bytes).
//!
//! The wheel is checked against its pin before anything is unpacked (it is
//! kept in the download cache, checked again on every read); the binary is
//! unpacked into a temporary directory beside its final place and renamed
//! into place (`~/.local/share/codemcp/monty-worker/1.4.0-<sha8>/monty`), so
//! two gateways provisioning at once both end with one whole binary. Beside
//! it, `monty.sha256` holds the binary's digest as unpacked from the checked
//! wheel; reusing it hashes the binary again (a few tens of milliseconds),
//! and a binary that differs is moved aside and provisioned again.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::fetch::{self, FetchError};
use crate::pins::{self, WheelPin};
use crate::place::{Temporary, discard, remove_stale_temporaries};
use crate::unpack::UnpackError;
use crate::{recipe, sha256_hex, wheel};

/// The distribution the worker comes in.
pub const WHEEL: &str = "pydantic-monty-runtime";
/// Under the data directory.
const PARENT: &str = "monty-worker";
const BINARY: &str = "monty";
const STAMP: &str = "monty.sha256";
/// Where the binary sits in the wheel (`<name>-<version>.data/scripts/monty`).
const MEMBER_SUFFIX: &str = ".data/scripts/monty";

#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("no {WHEEL} {version} wheel is pinned for this machine ({machine})")]
    NoPin {
        version: String,
        machine: &'static str,
    },
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Unpack(#[from] UnpackError),
    #[error("{wheel} holds no `monty` program")]
    NoProgram { wheel: String },
    #[error("installing the Monty worker into {path}: {source}")]
    Install {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A provisioned worker, checked against its digest.
#[derive(Debug, Clone)]
pub struct Provisioned {
    pub binary: PathBuf,
    pub version: &'static str,
    /// Whether this call unpacked it (else it was there and checked).
    pub made: bool,
}

/// The pinned wheel of Monty `version` for this machine.
pub fn pin(version: &str) -> Result<&'static WheelPin, ProvisionError> {
    let machine = std::env::consts::ARCH;
    pins::wheels()
        .iter()
        .find(|w| w.name == WHEEL && w.machine == machine && w.version == version)
        .ok_or_else(|| ProvisionError::NoPin {
            version: version.to_owned(),
            machine,
        })
}

/// Where `pin`'s worker lives under the data directory `data`.
pub fn home(data: &Path, pin: &WheelPin) -> PathBuf {
    data.join(PARENT)
        .join(format!("{}-{}", pin.version, &pin.sha256[..8]))
}

/// The worker `pin` names, when it is installed under `data` and its bytes
/// are still the ones unpacked: `Ok(None)` when it is not installed,
/// `Err(why)` when it is but fails the check.
pub fn installed(data: &Path, pin: &WheelPin) -> Result<Option<PathBuf>, String> {
    check(&home(data, pin))
}

fn check(home: &Path) -> Result<Option<PathBuf>, String> {
    let binary = home.join(BINARY);
    if !home.exists() {
        return Ok(None);
    }
    let expected = std::fs::read_to_string(home.join(STAMP))
        .map_err(|e| format!("{}: {e}", home.join(STAMP).display()))?;
    let bytes = std::fs::read(&binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let mode = std::fs::metadata(&binary)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0);
    if sha256_hex(&bytes) != expected.trim() {
        return Err(format!(
            "{} no longer has the SHA-256 it was unpacked with",
            binary.display()
        ));
    }
    if mode != 0o555 {
        return Err(format!("{} has mode {mode:o}, not 555", binary.display()));
    }
    Ok(Some(binary))
}

/// The worker of Monty `version`: the installed one when it passes its
/// check, else fetched from `pypi_files` (through the download cache
/// `cache`), checked and unpacked under `data`.
pub async fn provision(
    data: &Path,
    cache: &Path,
    pypi_files: &str,
    version: &str,
    timeouts: fetch::Timeouts,
) -> Result<Provisioned, ProvisionError> {
    provision_pin(data, cache, pypi_files, pin(version)?, timeouts).await
}

/// [`provision`] of a given pin (tests pin wheels of their own).
pub async fn provision_pin(
    data: &Path,
    cache: &Path,
    pypi_files: &str,
    pin: &'static WheelPin,
    timeouts: fetch::Timeouts,
) -> Result<Provisioned, ProvisionError> {
    let home = home(data, pin);
    match installed(data, pin) {
        Ok(Some(binary)) => {
            return Ok(Provisioned {
                binary,
                version: pin.version,
                made: false,
            });
        }
        Ok(None) => {}
        Err(why) => {
            tracing::warn!(target: "codemcp::worker", "the provisioned Monty worker fails its check ({why}); provisioning it again");
            discard(&home).map_err(|source| ProvisionError::Install {
                path: home.clone(),
                source,
            })?;
        }
    }
    let sources = crate::Sources {
        pypi_files: pypi_files.to_owned(),
        ..crate::Sources::default()
    };
    let item = recipe::wheel_download(pin, &sources);
    tracing::info!(target: "codemcp::worker", "provisioning the Monty pool worker: {WHEEL} {} ({:.1} MB) from {}", pin.version, pin.size as f64 / 1e6, item.urls.join(", "));
    let client = fetch::client_with(timeouts)?;
    let (bytes, downloaded) = fetch::fetch(&client, cache, &item).await?;
    tracing::info!(target: "codemcp::worker", downloaded, "{} matches its pinned SHA-256; unpacking the worker", item.name);
    let name = item.name.clone();
    tokio::task::spawn_blocking(move || install(&home, &name, &bytes, pin))
        .await
        .map_err(|e| ProvisionError::Install {
            path: data.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?
}

/// Unpacks the program from the checked wheel and renames it into place.
fn install(
    home: &Path,
    name: &str,
    wheel_bytes: &[u8],
    pin: &'static WheelPin,
) -> Result<Provisioned, ProvisionError> {
    let program = wheel::members(name, wheel_bytes, |p| {
        p.ends_with(MEMBER_SUFFIX) && !p[..p.len() - MEMBER_SUFFIX.len()].contains('/')
    })?
    .into_iter()
    .next()
    .ok_or_else(|| ProvisionError::NoProgram {
        wheel: name.to_owned(),
    })?;
    let parent = home.parent().unwrap_or(home);
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ProvisionError::Install { path, source }
    };
    std::fs::create_dir_all(parent).map_err(failed(parent))?;
    remove_stale_temporaries(parent);
    let temp = Temporary::new(parent).map_err(failed(parent))?;
    let binary = temp.path.join(BINARY);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&binary)
        .map_err(failed(&binary))?;
    file.write_all(&program.bytes).map_err(failed(&binary))?;
    file.sync_all().map_err(failed(&binary))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o555))
        .map_err(failed(&binary))?;
    drop(file);
    let stamp = temp.path.join(STAMP);
    std::fs::write(&stamp, format!("{}\n", sha256_hex(&program.bytes))).map_err(failed(&stamp))?;
    std::fs::set_permissions(&stamp, std::fs::Permissions::from_mode(0o444))
        .map_err(failed(&stamp))?;
    let made = match std::fs::rename(&temp.path, home) {
        Ok(()) => {
            temp.disarm();
            true
        }
        // Another gateway put its own in place first: that one is used
        // (checked below); ours goes with `temp`.
        Err(_) if home.exists() => false,
        Err(e) => return Err(failed(home)(e)),
    };
    match check(home) {
        Ok(Some(binary)) => {
            if made {
                tracing::info!(target: "codemcp::worker", path = %binary.display(), "the Monty pool worker is installed");
            }
            Ok(Provisioned {
                binary,
                version: pin.version,
                made,
            })
        }
        Ok(None) | Err(_) => Err(failed(home)(std::io::Error::other(
            "the installed worker does not pass its check",
        ))),
    }
}

#[cfg(test)]
#[path = "monty_worker_tests.rs"]
mod tests;
