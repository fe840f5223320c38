//! codemcp's pinned artifacts: files fetched from a mirror or PyPI, each
//! pinned by size and SHA-256 and checked before anything uses it, cached by
//! digest, and unpacked: Debian .debs into a root file system, wheels into
//! it or onto disk. Nothing here runs what it fetched.
//!
//! What the rest of codemcp uses:
//! - [`docker`]: the CPython worker image, built by the binary with no
//!   registry (`codemcp setup docker`, or the first Docker escalation);
//! - [`rootfs::python_root`]: the same CPython root file system as a
//!   read-only directory in the data directory, for a sandbox that mounts
//!   it (bubblewrap);
//! - [`monty_worker::provision`]: the Monty pool worker out of PyPI's
//!   `pydantic-monty-runtime` wheel, for a build that is not its own worker;
//! - [`pins`]: the pinned wheels, one table shared with the gateway image
//!   build (`packaging/container/build.sh`).
//!
//! Pins are data: `recipe/*.debs` and `recipe/wheels.pins`.

pub mod docker;
pub mod fetch;
pub mod monty_worker;
pub mod pins;
mod place;
pub mod recipe;
pub mod rootfs;
#[cfg(test)]
mod test_server;
pub mod unpack;
mod wheel;

use std::path::PathBuf;

use sha2::Digest;

pub use fetch::FetchError;
pub use unpack::UnpackError;

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(
        "the worker image recipe has no packages for this machine ({0}); build an image elsewhere and name it with CODEMCP_DOCKER_IMAGE"
    )]
    NoRecipe(&'static str),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Unpack(#[from] UnpackError),
    #[error("the Docker engine: {0}")]
    Engine(String),
    #[error("the image build failed: {0}")]
    Build(String),
    #[error("the built image failed its check: {0}")]
    Check(String),
    #[error("the root file system {path}: {detail}")]
    Root { path: PathBuf, detail: String },
}

/// Where pinned files come from (`CODEMCP_DEBIAN_MIRROR`, `CODEMCP_PYPI_FILES`).
#[derive(Debug, Clone)]
pub struct Sources {
    pub debian_mirror: String,
    pub pypi_files: String,
}

impl Default for Sources {
    fn default() -> Self {
        Self {
            debian_mirror: recipe::DEBIAN_MIRROR.to_owned(),
            pypi_files: recipe::PYPI_FILES.to_owned(),
        }
    }
}

/// Where verified downloads are kept: `$XDG_CACHE_HOME/codemcp/worker-image`
/// (`~/.cache/...`), else under the state directory's fallback.
pub fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .map(|d| d.join("codemcp"))
        .unwrap_or_else(|| std::env::temp_dir().join("codemcp-state").join("cache"))
        .join("worker-image")
}

/// Where unpacked artifacts live: `$XDG_DATA_HOME/codemcp`
/// (`~/.local/share/codemcp`), else a directory under the temporary one.
pub fn data_dir() -> PathBuf {
    dirs::data_dir()
        .map(|d| d.join("codemcp"))
        .unwrap_or_else(|| std::env::temp_dir().join("codemcp-data"))
}

/// Lower-case hex SHA-256, as pins and image labels write it.
pub fn sha256_hex(data: &[u8]) -> String {
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
