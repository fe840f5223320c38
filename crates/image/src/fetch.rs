//! Downloads pinned files, each checked against its pinned SHA-256 and
//! size, into a cache named by digest: a second build downloads nothing. A
//! file whose digest differs is refused at once, not retried elsewhere: a
//! mirror serving other bytes under a pinned name is tampered or broken, and
//! the operator should hear about it. A missing file (HTTP 404, say: the
//! version left forky's pool) is looked for at the next source.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};

use crate::sha256_hex;

/// Downloads at once: a few, to be kind to the mirror.
const PARALLEL_DOWNLOADS: usize = 4;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest image file is under 3 MB; the Monty worker's wheel is 15 MB.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// A host that sends nothing for this long is given up on.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(
        "{name}: the download from {url} has SHA-256 {got}, but the recipe pins {expected}: refused (the mirror served other bytes under this name: tampered or corrupt)"
    )]
    Digest {
        name: String,
        url: String,
        expected: String,
        got: String,
    },
    #[error(
        "{name}: {url} sent more than the {size} bytes the recipe pins: refused (tampered or corrupt)"
    )]
    TooBig {
        name: String,
        url: String,
        size: u64,
    },
    #[error("{name}: could not be downloaded ({tried})")]
    Unavailable { name: String, tried: String },
    #[error("the download cache {path}: {source}")]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make an HTTP client: {0}")]
    Client(String),
}

/// One file to fetch: where from (in order), and what it must be.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// The file name, for messages and the cache.
    pub name: String,
    pub urls: Vec<String>,
    pub size: u64,
    pub sha256: String,
}

/// Where a pinned file is kept once verified.
pub fn cached_path(cache: &Path, item: &Pinned) -> PathBuf {
    cache.join(format!("{}-{}", &item.sha256[..16], item.name))
}

/// Whether the cache already holds `item` (verified when it was written).
pub fn is_cached(cache: &Path, item: &Pinned) -> bool {
    cached_path(cache, item).is_file()
}

/// How long a download may take: to connect, between two reads (a stalled
/// host), and in all.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub read: Duration,
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: CONNECT_TIMEOUT,
            read: READ_TIMEOUT,
            total: REQUEST_TIMEOUT,
        }
    }
}

/// A client with the default [`Timeouts`].
pub fn client() -> Result<reqwest::Client, FetchError> {
    client_with(Timeouts::default())
}

/// Redirects are followed (PyPI's files host may send one): whatever host
/// the bytes come from, they are checked against the pin all the same.
pub fn client_with(timeouts: Timeouts) -> Result<reqwest::Client, FetchError> {
    // reqwest is built without a default TLS provider; main installs one,
    // a library caller may not have.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.read)
        .timeout(timeouts.total)
        .user_agent(concat!("codemcp/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| FetchError::Client(e.to_string()))
}

/// Every file of `items`, in their order, a few downloads at a time.
pub struct Fetched {
    pub files: Vec<Vec<u8>>,
    /// How many were downloaded (the others came from the cache).
    pub downloaded: usize,
}

/// Fetches every one of `items` (see [`fetch`]); the first failure stops it.
pub async fn fetch_all(
    client: &reqwest::Client,
    cache: &Path,
    items: &[Pinned],
) -> Result<Fetched, FetchError> {
    let total = items.len();
    let mut files: Vec<(usize, Vec<u8>)> = Vec::with_capacity(total);
    let mut downloaded = 0;
    // Owned values: a borrowing stream would not be `Send` for every lifetime
    // (callers run this on spawned tasks).
    let mut fetches = futures::stream::iter(items.iter().cloned().enumerate())
        .map(|(i, item)| {
            let (client, cache) = (client.clone(), cache.to_path_buf());
            async move { fetch(&client, &cache, &item).await.map(|got| (i, got)) }
        })
        .buffer_unordered(PARALLEL_DOWNLOADS);
    while let Some((i, (bytes, fresh))) = fetches.try_next().await? {
        if fresh {
            downloaded += 1;
            tracing::info!(target: "codemcp::worker", file = %items[i].name, kb = bytes.len() / 1024, "downloaded ({}/{total})", files.len() + 1);
        }
        files.push((i, bytes));
    }
    drop(fetches);
    files.sort_by_key(|(i, _)| *i);
    Ok(Fetched {
        files: files.into_iter().map(|(_, bytes)| bytes).collect(),
        downloaded,
    })
}

/// The bytes of `item`, from the cache or downloaded; `Ok((bytes, true))`
/// when they were downloaded.
pub async fn fetch(
    client: &reqwest::Client,
    cache: &Path,
    item: &Pinned,
) -> Result<(Vec<u8>, bool), FetchError> {
    let path = cached_path(cache, item);
    let cache_error = |source| FetchError::Cache {
        path: path.clone(),
        source,
    };
    // Checked again on read: a cache file changed on disk is not trusted.
    if let Ok(bytes) = tokio::fs::read(&path).await {
        if sha256_hex(&bytes) == item.sha256 {
            return Ok((bytes, false));
        }
        tracing::warn!(target: "codemcp::worker", path = %path.display(), "a cached download no longer matches its pin; downloading it again");
        let _ = tokio::fs::remove_file(&path).await;
    }
    let mut tried = Vec::new();
    for url in &item.urls {
        match download(client, url, item).await {
            Ok(bytes) => {
                let got = sha256_hex(&bytes);
                if got != item.sha256 {
                    return Err(FetchError::Digest {
                        name: item.name.clone(),
                        url: url.clone(),
                        expected: item.sha256.clone(),
                        got,
                    });
                }
                store(cache, &path, &bytes).map_err(cache_error)?;
                return Ok((bytes, true));
            }
            Err(Attempt::Refused(e)) => return Err(e),
            Err(Attempt::Failed(why)) => {
                tracing::debug!(target: "codemcp::worker", url, why, "download failed; trying the next source");
                tried.push(format!("{url}: {why}"));
            }
        }
    }
    Err(FetchError::Unavailable {
        name: item.name.clone(),
        tried: tried.join("; "),
    })
}

enum Attempt {
    /// Try the next source.
    Failed(String),
    /// Stop: the bytes cannot be right.
    Refused(FetchError),
}

async fn download(client: &reqwest::Client, url: &str, item: &Pinned) -> Result<Vec<u8>, Attempt> {
    let failed = |e: reqwest::Error| Attempt::Failed(error_chain(&e));
    let mut response = client.get(url).send().await.map_err(failed)?;
    let status = response.status();
    if !status.is_success() {
        return Err(Attempt::Failed(format!("HTTP {status}")));
    }
    let too_big = || {
        Attempt::Refused(FetchError::TooBig {
            name: item.name.clone(),
            url: url.to_owned(),
            size: item.size,
        })
    };
    let mut bytes = Vec::with_capacity(usize::try_from(item.size).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if (bytes.len() + chunk.len()) as u64 > item.size {
            return Err(too_big());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// reqwest's message and its causes ("error sending request" alone says little).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Written whole under a temporary name, then renamed: a builder killed
/// mid-write or a second one at the same time leaves no half file.
fn store(cache: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(cache)?;
    let mut tmp = tempfile::NamedTempFile::new_in(cache)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
