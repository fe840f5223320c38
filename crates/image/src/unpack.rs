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
    #[error("{wheel} is not a readable wheel: {detail}")]
    Wheel { wheel: String, detail: String },
    #[error("writing {path}: {source}")]
    WriteDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to write {path:?}: it lies below the symbolic link {link:?}")]
    BelowLink { path: String, link: String },
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

    /// Every path and what it is, parents before children.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.nodes.iter().map(|(p, n)| (p.as_str(), n))
    }

    /// Adds a wheel's files under `prefix` (a site-packages directory), as
    /// `zipfile.extractall` does; returns how many.
    pub fn add_wheel(
        &mut self,
        name: &str,
        wheel: &[u8],
        prefix: &str,
    ) -> Result<usize, UnpackError> {
        let members = crate::wheel::members(name, wheel, |_| true)?;
        let added = members.len();
        for m in members {
            let path = format!("{prefix}/{}", m.path);
            let mut parent = path.as_str();
            while let Some((up, _)) = parent.rsplit_once('/') {
                if self.nodes.contains_key(up) {
                    break;
                }
                self.dir(up, 0o755);
                parent = up;
            }
            self.file(&path, if m.executable { 0o755 } else { 0o644 }, m.bytes);
        }
        Ok(added)
    }

    /// Writes the tree into `dir` (made here; its parent must exist), every
    /// file and directory without write permission and without set-id bits.
    /// A path below one of the tree's symbolic links is refused: writing it
    /// would follow the link out of `dir`.
    pub fn write_to(&self, dir: &std::path::Path) -> Result<(), UnpackError> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let failed =
            |path: std::path::PathBuf| move |source| UnpackError::WriteDir { path, source };
        std::fs::create_dir(dir).map_err(failed(dir.to_path_buf()))?;
        let mut dirs = Vec::new();
        for (path, node) in &self.nodes {
            let mut up = path.as_str();
            while let Some((parent, _)) = up.rsplit_once('/') {
                if let Some(Node {
                    kind: Kind::Symlink(_),
                    ..
                }) = self.nodes.get(parent)
                {
                    return Err(UnpackError::BelowLink {
                        path: path.clone(),
                        link: parent.to_owned(),
                    });
                }
                up = parent;
            }
            let at = dir.join(path);
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent).map_err(failed(parent.to_path_buf()))?;
            }
            match &node.kind {
                Kind::Dir => {
                    std::fs::create_dir_all(&at).map_err(failed(at.clone()))?;
                    dirs.push((at, read_only(node.mode)));
                }
                Kind::File(bytes) => {
                    use std::io::Write;
                    let mut file = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&at)
                        .map_err(failed(at.clone()))?;
                    file.write_all(bytes).map_err(failed(at.clone()))?;
                    file.set_permissions(std::fs::Permissions::from_mode(read_only(node.mode)))
                        .map_err(failed(at.clone()))?;
                }
                Kind::Symlink(target) => {
                    std::os::unix::fs::symlink(target, &at).map_err(failed(at.clone()))?;
                }
            }
        }
        // Children first: a directory without write permission takes no entries.
        for (at, mode) in dirs.into_iter().rev() {
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode))
                .map_err(failed(at.clone()))?;
        }
        Ok(())
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

/// `mode` as written to disk: no write permission, no set-id or sticky bits.
pub fn read_only(mode: u32) -> u32 {
    mode & 0o555
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
