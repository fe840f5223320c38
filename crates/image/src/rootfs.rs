//! The CPython worker's root file system as a directory, for a sandbox that
//! mounts it read-only as `/` (bubblewrap): the worker image's pinned .debs
//! and `websockets` wheel, unpacked once into the data directory
//! (`~/.local/share/codemcp/python-root/<key>/root`), with `worker/bootstrap.py`
//! at `/opt/codemcp/bootstrap.py` as in the image.
//!
//! Made atomically: assembled in a temporary directory beside its final name
//! and renamed into place, so a reader never sees half a tree and two
//! gateways making it at once both end with the same one (the second
//! rename fails; its copy is removed). A `manifest` beside the tree lists
//! every path with its kind, mode, size and SHA-256; reusing a tree checks
//! it against the manifest (types, modes, sizes and link targets: a stat of
//! each path; [`Verify::Full`] also hashes every file). A tree that fails is
//! moved aside and made again.
//!
//! Differences from the image: no linker cache (Debian's loader searches
//! the multiarch directories without one), no compiled bytecode (the
//! sandbox can point `PYTHONPYCACHEPREFIX` at a writable directory), and no
//! `/tmp`, `/proc` or `/dev` contents (the sandbox mounts its own).

use std::io::{BufRead, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::fetch::{self, Fetched};
use crate::place::{Temporary, discard, remove_stale_temporaries};
use crate::recipe::{self, Downloads, Recipe};
use crate::unpack::{Kind, RootFs, read_only};
use crate::{ImageError, Sources, cache_dir, data_dir, sha256_hex};

/// Bumped when the tree is made differently in a way the recipe does not show.
const ROOT_FORMAT: u32 = 1;
/// Under the data directory.
const PARENT: &str = "python-root";
const MANIFEST: &str = "manifest";
const TREE: &str = "root";
/// Where the worker's code sits in the tree (as in the image).
pub const BOOTSTRAP_IN_ROOT: &str = "opt/codemcp/bootstrap.py";

/// How closely a tree being reused is checked against its manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Kinds, modes, sizes and link targets of every path, and no path more.
    Quick,
    /// Also the SHA-256 of every file.
    Full,
}

/// A verified root file system directory.
#[derive(Debug, Clone)]
pub struct PythonRoot {
    /// The tree: mount it read-only as the sandbox's `/`.
    pub root: PathBuf,
    /// Names the recipe, the bootstrap and the format the tree was made from.
    pub key: String,
    /// Whether this call made it (else it was there and verified).
    pub made: bool,
}

/// The root file system for this machine's recipe and `bootstrap`, made on
/// first need from the pinned downloads (cached in [`cache_dir`]) under
/// [`data_dir`].
pub async fn python_root(
    sources: &Sources,
    bootstrap: &str,
    verify: Verify,
) -> Result<PythonRoot, ImageError> {
    let recipe = recipe::for_this_machine().ok_or(ImageError::NoRecipe(std::env::consts::ARCH))?;
    python_root_in(
        &data_dir(),
        &cache_dir(),
        recipe,
        sources,
        bootstrap,
        verify,
    )
    .await
}

/// [`python_root`] with every place and input named (tests, other layouts).
pub async fn python_root_in(
    data: &Path,
    cache: &Path,
    recipe: &Recipe,
    sources: &Sources,
    bootstrap: &str,
    verify: Verify,
) -> Result<PythonRoot, ImageError> {
    let key = root_key(recipe, bootstrap);
    let parent = data.join(PARENT);
    let home = parent.join(&key[..16]);
    if let Some(found) = reuse(&home, &key, verify)? {
        return Ok(found);
    }
    let items = recipe::downloads(recipe, sources, false);
    let Fetched { files, downloaded } = fetch::fetch_all(&fetch::client()?, cache, &items).await?;
    tracing::info!(target: "codemcp::worker", downloaded, cached = items.len() - downloaded, "every pinned file is here and matches its SHA-256; unpacking the root file system");
    let (recipe, bootstrap) = (recipe.clone(), bootstrap.to_owned());
    tokio::task::spawn_blocking(move || {
        make(&parent, &home, &key, &recipe, files, &bootstrap, verify)
    })
    .await
    .map_err(|e| root_error(data, e))?
}

/// What decides the tree: the recipe (its digest), the bootstrap, the format.
pub fn root_key(recipe: &Recipe, bootstrap: &str) -> String {
    sha256_hex(
        format!(
            "python-root {ROOT_FORMAT}\nrecipe {}\nbootstrap {}\n",
            recipe::recipe_sha256(recipe),
            sha256_hex(bootstrap.as_bytes())
        )
        .as_bytes(),
    )
}

fn root_error(path: &Path, detail: impl ToString) -> ImageError {
    ImageError::Root {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

/// The tree at `home` when it is there and passes its manifest; a tree that
/// does not is moved aside and removed (`None`: make it again).
fn reuse(home: &Path, key: &str, verify: Verify) -> Result<Option<PythonRoot>, ImageError> {
    if !home.exists() {
        return Ok(None);
    }
    match check(home, key, verify) {
        Ok(()) => Ok(Some(PythonRoot {
            root: home.join(TREE),
            key: key.to_owned(),
            made: false,
        })),
        Err(why) => {
            tracing::warn!(target: "codemcp::worker", path = %home.display(), "the CPython root file system fails its manifest ({why}); making it again");
            discard(home).map_err(|e| root_error(home, e))?;
            Ok(None)
        }
    }
}

/// Assembles, writes, renames into place.
fn make(
    parent: &Path,
    home: &Path,
    key: &str,
    recipe: &Recipe,
    files: Vec<Vec<u8>>,
    bootstrap: &str,
    verify: Verify,
) -> Result<PythonRoot, ImageError> {
    let io = |e: std::io::Error| root_error(parent, e);
    std::fs::create_dir_all(parent).map_err(io)?;
    remove_stale_temporaries(parent);
    let Downloads { debs, wheel, .. } = Downloads::split(recipe, files)?;
    let mut root = base(debs, bootstrap)?;
    root.add_wheel(recipe.wheel.file_name(), &wheel, recipe::SITE_PACKAGES)?;
    let temp = Temporary::new(parent).map_err(io)?;
    root.write_to(&temp.path.join(TREE))?;
    write_manifest(&temp.path.join(MANIFEST), key, &root).map_err(io)?;
    match std::fs::rename(&temp.path, home) {
        Ok(()) => {
            temp.disarm();
            tracing::info!(target: "codemcp::worker", path = %home.display(), paths = root.len(), mb = root.file_bytes() / 1_000_000, "made the CPython root file system");
            Ok(PythonRoot {
                root: home.join(TREE),
                key: key.to_owned(),
                made: true,
            })
        }
        // Another process renamed its tree into place first: use that one.
        Err(e) if home.exists() => {
            tracing::debug!(target: "codemcp::worker", error = %e, "another process made the root file system first");
            drop(temp);
            check(home, key, verify).map_err(|why| root_error(home, why))?;
            Ok(PythonRoot {
                root: home.join(TREE),
                key: key.to_owned(),
                made: false,
            })
        }
        Err(e) => Err(io(e)),
    }
}

/// The recipe's .debs in order, then what the former image script did after
/// unpacking: the merged-/usr links, the `python3` and `sh` links, the
/// users, the mount points, the bootstrap (read-only) and site-packages.
pub(crate) fn base(
    debs: Vec<(&'static str, Vec<u8>)>,
    bootstrap: &str,
) -> Result<RootFs, ImageError> {
    let mut root = RootFs::default();
    // A later package's file wins, as with dpkg-deb -x.
    for (package, bytes) in debs {
        root.add_deb(package, &bytes)?;
    }
    for dir in [
        "usr",
        "usr/bin",
        "usr/sbin",
        "usr/lib",
        "usr/lib64",
        "etc",
        "opt",
    ] {
        if root.get(dir).is_none() {
            root.dir(dir, 0o755);
        }
    }
    for top in ["bin", "sbin", "lib", "lib64"] {
        root.symlink(top, &format!("usr/{top}"));
    }
    root.symlink("usr/bin/python3", &format!("python{}", recipe::PYTHON));
    root.symlink("usr/bin/sh", "dash");
    root.dir("tmp", 0o1777);
    for dir in ["proc", "sys", "dev"] {
        root.dir(dir, 0o755);
    }
    root.file(
        "etc/passwd",
        0o644,
        b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            .to_vec(),
    );
    root.file(
        "etc/group",
        0o644,
        b"root:x:0:\nnogroup:x:65534:\n".to_vec(),
    );
    root.dir("opt/codemcp", 0o555);
    root.file(BOOTSTRAP_IN_ROOT, 0o444, bootstrap.as_bytes().to_vec());
    let mut path = String::new();
    for part in recipe::SITE_PACKAGES.split('/') {
        path = if path.is_empty() {
            part.to_owned()
        } else {
            format!("{path}/{part}")
        };
        if root.get(&path).is_none() {
            root.dir(&path, 0o755);
        }
    }
    Ok(root)
}

/// One line per path, tab-separated: `d MODE PATH`, `f MODE SIZE SHA256
/// PATH`, `l TARGET PATH`; the first line names the key.
fn write_manifest(at: &Path, key: &str, root: &RootFs) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(at)?);
    writeln!(out, "codemcp-python-root\t{key}")?;
    for (path, node) in root.nodes() {
        let mode = read_only(node.mode);
        let unsafe_text = |t: &str| t.contains(['\t', '\n']);
        if unsafe_text(path) || matches!(&node.kind, Kind::Symlink(t) if unsafe_text(t)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a path with a tab or newline: {path:?}"),
            ));
        }
        match &node.kind {
            Kind::Dir => writeln!(out, "d\t{mode:o}\t{path}")?,
            Kind::File(bytes) => writeln!(
                out,
                "f\t{mode:o}\t{}\t{}\t{path}",
                bytes.len(),
                sha256_hex(bytes)
            )?,
            Kind::Symlink(target) => writeln!(out, "l\t{target}\t{path}")?,
        }
    }
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.set_permissions(std::fs::Permissions::from_mode(0o444))?;
    file.sync_all()
}

/// Whether the tree under `home` is what its manifest says (`Err`: why not).
pub fn check(home: &Path, key: &str, verify: Verify) -> Result<(), String> {
    let manifest =
        std::fs::File::open(home.join(MANIFEST)).map_err(|e| format!("no manifest: {e}"))?;
    let mut lines = std::io::BufReader::new(manifest).lines();
    let header = lines.next().and_then(Result::ok).unwrap_or_default();
    if header != format!("codemcp-python-root\t{key}") {
        return Err("its manifest names another recipe".into());
    }
    let tree = home.join(TREE);
    let mut listed = 0usize;
    for line in lines {
        let line = line.map_err(|e| format!("reading the manifest: {e}"))?;
        check_entry(&tree, &line, verify)?;
        listed += 1;
    }
    let on_disk = count_entries(&tree).map_err(|e| format!("walking the tree: {e}"))?;
    if on_disk != listed {
        return Err(format!("{on_disk} paths on disk, {listed} in the manifest"));
    }
    Ok(())
}

fn check_entry(tree: &Path, line: &str, verify: Verify) -> Result<(), String> {
    let fields: Vec<&str> = line.split('\t').collect();
    let path = fields.last().copied().unwrap_or_default();
    let at = tree.join(path);
    let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("{path}: {e}"))?;
    let mode = |text: &str| u32::from_str_radix(text, 8).unwrap_or(u32::MAX);
    let ok = match fields[..] {
        ["d", m, _] => meta.is_dir() && meta.mode() & 0o7777 == mode(m),
        ["f", m, size, sha, _] => {
            meta.is_file()
                && meta.mode() & 0o7777 == mode(m)
                && meta.len().to_string() == size
                && (verify == Verify::Quick
                    || std::fs::read(&at).is_ok_and(|bytes| sha256_hex(&bytes) == sha))
        }
        ["l", target, _] => {
            meta.file_type().is_symlink()
                && std::fs::read_link(&at).is_ok_and(|t| t.as_os_str() == target)
        }
        _ => return Err(format!("a malformed manifest line: {line:?}")),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{path} differs from the manifest"))
    }
}

fn count_entries(dir: &Path) -> std::io::Result<usize> {
    let mut count = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        count += 1;
        if entry.file_type()?.is_dir() {
            count += count_entries(&entry.path())?;
        }
    }
    Ok(count)
}

#[cfg(test)]
#[path = "rootfs_tests.rs"]
mod tests;
