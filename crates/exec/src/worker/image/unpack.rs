//! Unpacks .debs into a root file system held in memory, as `dpkg-deb -x`
//! into one directory does (no maintainer scripts), and writes it out as one
//! tar for the build context. Nothing touches the host's disk: writing a
//! 60 MB tree of small files to ext4 and reading it back costs seconds.
//!
//! A .deb is an `ar` archive whose `data.tar.xz` (or `.zst`, or plain
//! `data.tar`) holds the files.

use std::collections::BTreeMap;
use std::io::Read;

/// Unpacked but left out of the image, as the former script removed them.
const LEFT_OUT: &[&str] = &[
    "usr/share/doc",
    "usr/share/man",
    "usr/share/lintian",
    "usr/share/locale",
];
/// Top-level directories that are links into /usr (merged /usr).
const MERGED: &[&str] = &["bin", "sbin", "lib", "lib64"];

#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("{deb} is not a .deb archive: {detail}")]
    NotADeb { deb: String, detail: String },
    #[error("{deb} has no data.tar member")]
    NoData { deb: String },
    #[error("{deb}: cannot decompress {member}: {detail}")]
    Decompress {
        deb: String,
        member: String,
        detail: String,
    },
    #[error("{deb}: bad data.tar: {source}")]
    Tar { deb: String, source: std::io::Error },
    #[error("{deb}: refusing the path {path:?} (it leaves the root)")]
    UnsafePath { deb: String, path: String },
    #[error("writing the root file system tar: {0}")]
    Write(std::io::Error),
}

/// What one path of the root file system is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File(Vec<u8>),
    Symlink(String),
}

#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    pub mode: u32,
    pub mtime: u64,
}

/// A root file system being assembled: a later entry for a path replaces an
/// earlier one. Every file is owned by root (the former script's
/// `tar --owner=0 --group=0`).
#[derive(Debug, Default)]
pub struct RootFs {
    nodes: BTreeMap<String, Node>,
}

impl RootFs {
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The bytes of every regular file.
    pub fn file_bytes(&self) -> u64 {
        self.nodes
            .values()
            .map(|n| match &n.kind {
                Kind::File(data) => data.len() as u64,
                _ => 0,
            })
            .sum()
    }

    pub fn dir(&mut self, path: &str, mode: u32) {
        self.put(path, Kind::Dir, mode, 0);
    }

    pub fn file(&mut self, path: &str, mode: u32, data: Vec<u8>) {
        self.put(path, Kind::File(data), mode, 0);
    }

    pub fn symlink(&mut self, path: &str, target: &str) {
        self.put(path, Kind::Symlink(target.to_owned()), 0o777, 0);
    }

    fn put(&mut self, path: &str, kind: Kind, mode: u32, mtime: u64) {
        self.nodes
            .insert(path.to_owned(), Node { kind, mode, mtime });
    }

    /// Adds the files of one .deb (`name` is for errors); returns how many.
    pub fn add_deb(&mut self, name: &str, deb: &[u8]) -> Result<usize, UnpackError> {
        let data = data_tar(name, deb)?;
        let tar_error = |source| UnpackError::Tar {
            deb: name.to_owned(),
            source,
        };
        let mut archive = tar::Archive::new(data.as_slice());
        let mut added = 0;
        for entry in archive.entries().map_err(tar_error)? {
            let mut entry = entry.map_err(tar_error)?;
            let raw = entry
                .path()
                .map_err(tar_error)?
                .to_string_lossy()
                .into_owned();
            let Some(path) = normalise(name, &raw)? else {
                continue;
            };
            if LEFT_OUT
                .iter()
                .any(|out| path == *out || path.starts_with(&format!("{out}/")))
            {
                continue;
            }
            let header = entry.header();
            let mode = header.mode().map_err(tar_error)? & 0o7777;
            let mtime = header.mtime().unwrap_or(0);
            let kind = match header.entry_type() {
                tar::EntryType::Directory => Kind::Dir,
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
                    entry.read_to_end(&mut bytes).map_err(tar_error)?;
                    Kind::File(bytes)
                }
                tar::EntryType::Symlink => {
                    let target = entry.link_name().map_err(tar_error)?.unwrap_or_default();
                    Kind::Symlink(target.to_string_lossy().into_owned())
                }
                // A copy of the file it names (already unpacked: tar order),
                // so the output needs no ordering of links after targets.
                tar::EntryType::Link => {
                    let target = entry.link_name().map_err(tar_error)?.unwrap_or_default();
                    let target = normalise(name, &target.to_string_lossy())?;
                    match target.and_then(|t| self.nodes.get(&t)) {
                        Some(node) => node.kind.clone(),
                        None => continue,
                    }
                }
                other => {
                    tracing::debug!(target: "codemcp::worker", deb = name, path, kind = ?other, "skipping a special file");
                    continue;
                }
            };
            self.put(&path, kind, mode, mtime);
            added += 1;
        }
        Ok(added)
    }

    /// The whole tree as one tar, parents before children.
    pub fn to_tar(&self) -> Result<Vec<u8>, UnpackError> {
        let mut out = tar::Builder::new(Vec::with_capacity(self.file_bytes() as usize + (1 << 20)));
        for (path, node) in &self.nodes {
            let mut header = tar::Header::new_gnu();
            header.set_mode(node.mode);
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(node.mtime);
            match &node.kind {
                Kind::Dir => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_size(0);
                    out.append_data(&mut header, format!("{path}/"), std::io::empty())
                }
                Kind::File(data) => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_size(data.len() as u64);
                    out.append_data(&mut header, path, data.as_slice())
                }
                Kind::Symlink(target) => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_size(0);
                    out.append_link(&mut header, path, target)
                }
            }
            .map_err(UnpackError::Write)?;
        }
        out.into_inner().map_err(UnpackError::Write)
    }
}

/// `./usr/bin/x` → `usr/bin/x`; `./bin/x` → `usr/bin/x` (merged /usr); the
/// root itself → `None`; a path with `..` is refused.
fn normalise(deb: &str, raw: &str) -> Result<Option<String>, UnpackError> {
    let mut parts: Vec<&str> = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(UnpackError::UnsafePath {
                    deb: deb.to_owned(),
                    path: raw.to_owned(),
                });
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    if parts.len() > 1 && MERGED.contains(&parts[0]) {
        parts.insert(0, "usr");
    }
    Ok(Some(parts.join("/")))
}

/// The decompressed `data.tar` member of a .deb.
fn data_tar(name: &str, deb: &[u8]) -> Result<Vec<u8>, UnpackError> {
    let not_a_deb = |detail: String| UnpackError::NotADeb {
        deb: name.to_owned(),
        detail,
    };
    let mut archive = ar::Archive::new(deb);
    while let Some(entry) = archive.next_entry() {
        let mut entry = entry.map_err(|e| not_a_deb(e.to_string()))?;
        let member = String::from_utf8_lossy(entry.header().identifier())
            .trim_end_matches('/')
            .to_owned();
        if !member.starts_with("data.tar") {
            continue;
        }
        let mut packed = Vec::new();
        entry
            .read_to_end(&mut packed)
            .map_err(|e| not_a_deb(e.to_string()))?;
        let failed = |detail: String| UnpackError::Decompress {
            deb: name.to_owned(),
            member: member.clone(),
            detail,
        };
        return match member.as_str() {
            "data.tar" => Ok(packed),
            "data.tar.xz" => {
                let mut out = Vec::with_capacity(packed.len() * 4);
                lzma_rs::xz_decompress(&mut packed.as_slice(), &mut out)
                    .map_err(|e| failed(format!("{e:?}")))?;
                Ok(out)
            }
            "data.tar.zst" => {
                let mut out = Vec::with_capacity(packed.len() * 4);
                ruzstd::decoding::StreamingDecoder::new(packed.as_slice())
                    .map_err(|e| failed(e.to_string()))?
                    .read_to_end(&mut out)
                    .map_err(|e| failed(e.to_string()))?;
                Ok(out)
            }
            _ => Err(failed("an unsupported compression".into())),
        };
    }
    Err(UnpackError::NoData {
        deb: name.to_owned(),
    })
}

#[cfg(test)]
#[path = "unpack_tests.rs"]
mod tests;
