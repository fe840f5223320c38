//! The recipe of the CPython worker image, carried by the binary: the Debian
//! forky .debs of CPython 3.14 pinned by pool path and SHA-256 (no apt index
//! is read), the `websockets` wheel pinned by URL and SHA-256, and the
//! Dockerfile that finishes the image. The same image as the former
//! `scripts/build-worker-image.sh` made: user 65534, bootstrap read-only at
//! /opt/codemcp/bootstrap.py, the same labels.
//!
//! The pins are data: `recipe/{amd64,arm64}.debs` and `recipe/wheels.pins`,
//! built into the binary. Updating them: `scripts/resolve-worker-debs.py`
//! prints the .deb rows from forky's `Packages` index; a wheel's URL and
//! digest are on PyPI's simple API.

use std::sync::LazyLock;

use crate::fetch::Pinned;
use crate::pins::{self, WheelPin};
use crate::{ImageError, Sources};

/// The CPython minor version Monty follows (`MONTY_CPYTHON`).
pub const PYTHON: &str = "3.14";
/// The exact CPython the pinned .debs hold, checked in the image and labelled.
pub const PYTHON_VERSION: &str = "3.14.8";
/// The wheel the worker imports, pinned in `recipe/wheels.pins`.
pub const WEBSOCKETS_WHEEL: &str = "websockets";
/// Where the .debs come from first (`CODEMCP_DEBIAN_MIRROR` overrides).
pub const DEBIAN_MIRROR: &str = "http://deb.debian.org/debian";
/// Where a pinned .deb is looked for once forky's pool has dropped it: the
/// Debian snapshot archive as of the forky Release the pins were read from
/// (Date: Fri, 30 Oct 2026 08:08:01 UTC).
pub const SNAPSHOT_MIRROR: &str = "https://snapshot.debian.org/archive/debian/20261030T090000Z";
/// Where the wheel comes from (`CODEMCP_PYPI_FILES` overrides).
pub const PYPI_FILES: &str = "https://files.pythonhosted.org";

/// Bumped when the build steps change in a way the pins do not show.
const RECIPE_FORMAT: u32 = 1;
/// The pinned .debs, one file per Debian architecture (data, not code).
const AMD64_DEBS: &str = include_str!("../recipe/amd64.debs");
const ARM64_DEBS: &str = include_str!("../recipe/arm64.debs");

/// One pinned Debian package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deb {
    pub package: &'static str,
    pub version: &'static str,
    /// Path under the mirror's root, e.g. `pool/main/d/dash/dash_0.5.12-12_amd64.deb`.
    pub path: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

/// Everything one architecture's root file system is made of.
#[derive(Debug, Clone)]
pub struct Recipe {
    /// Debian's name for it, e.g. `amd64`.
    pub arch: &'static str,
    /// In unpacking order: a later package's file wins.
    pub debs: Vec<Deb>,
    pub wheel: &'static WheelPin,
    /// libc-bin, for its static `ldconfig` alone: it writes the linker
    /// cache during the image build and is not kept (the former script ran
    /// the host's `ldconfig -r`).
    pub ldconfig: Deb,
}

/// The recipe for the machine this binary runs on, if there is one.
pub fn for_this_machine() -> Option<&'static Recipe> {
    static RECIPE: LazyLock<Option<Recipe>> = LazyLock::new(|| {
        let machine = std::env::consts::ARCH;
        match for_machine(machine) {
            Ok(recipe) => recipe,
            Err(e) => {
                tracing::error!(target: "codemcp::worker", machine, "the built-in worker recipe does not parse: {e}");
                None
            }
        }
    });
    RECIPE.as_ref()
}

/// The recipe for `machine` (`uname -m`): `Ok(None)` when there is none.
pub fn for_machine(machine: &str) -> Result<Option<Recipe>, String> {
    let (arch, table) = match machine {
        "x86_64" => ("amd64", AMD64_DEBS),
        "aarch64" => ("arm64", ARM64_DEBS),
        _ => return Ok(None),
    };
    let wheel = pins::wheel(WEBSOCKETS_WHEEL, machine)
        .ok_or_else(|| format!("no {WEBSOCKETS_WHEEL} wheel pinned for {machine}"))?;
    let (debs, ldconfig) = parse_debs(table)?;
    Ok(Some(Recipe {
        arch,
        debs,
        wheel,
        ldconfig,
    }))
}

/// `use package version size sha256 path` lines; `#` starts a comment.
fn parse_debs(table: &'static str) -> Result<(Vec<Deb>, Deb), String> {
    let mut debs = Vec::new();
    let mut ldconfig = None;
    for (n, line) in pins::rows(table) {
        let [role, package, version, size, sha256, path] = line[..] else {
            return Err(format!("line {n}: expected 6 fields, found {}", line.len()));
        };
        let deb = Deb {
            package,
            version,
            path,
            size: size
                .parse()
                .map_err(|_| format!("line {n}: bad size {size:?}"))?,
            sha256: pins::digest(sha256).ok_or_else(|| format!("line {n}: bad sha256"))?,
        };
        match role {
            "root" => debs.push(deb),
            "ldconfig" if ldconfig.is_none() => ldconfig = Some(deb),
            other => return Err(format!("line {n}: unexpected use {other:?}")),
        }
    }
    let ldconfig = ldconfig.ok_or("no ldconfig line")?;
    Ok((debs, ldconfig))
}

/// Every file of `recipe` to fetch, with the sources to try in order: the
/// .debs, the wheel, then (for the image build) libc-bin.
pub fn downloads(recipe: &Recipe, sources: &Sources, with_ldconfig: bool) -> Vec<Pinned> {
    let mirror = sources.debian_mirror.trim_end_matches('/');
    let deb = |d: &Deb| {
        let mut urls = vec![format!("{mirror}/{}", d.path)];
        // A mirror the operator chose is the only one asked (air-gapped
        // sites, and tests that must stay on loopback).
        if mirror == DEBIAN_MIRROR {
            urls.push(format!("{SNAPSHOT_MIRROR}/{}", d.path));
        }
        Pinned {
            name: file_name(d.path).to_owned(),
            urls,
            size: d.size,
            sha256: d.sha256.to_owned(),
        }
    };
    let mut items: Vec<Pinned> = recipe.debs.iter().map(deb).collect();
    items.push(wheel_download(recipe.wheel, sources));
    if with_ldconfig {
        items.push(deb(&recipe.ldconfig));
    }
    items
}

/// A pinned wheel, fetched from the PyPI files host of `sources`.
pub fn wheel_download(wheel: &WheelPin, sources: &Sources) -> Pinned {
    Pinned {
        name: wheel.file_name().to_owned(),
        urls: vec![format!(
            "{}/{}",
            sources.pypi_files.trim_end_matches('/'),
            wheel.path
        )],
        size: wheel.size,
        sha256: wheel.sha256.to_owned(),
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// What [`downloads`] fetched, sorted back into its parts.
pub struct Downloads {
    /// Each .deb's package name and bytes, in the recipe's order.
    pub debs: Vec<(&'static str, Vec<u8>)>,
    pub wheel: Vec<u8>,
    pub ldconfig: Option<Vec<u8>>,
}

impl Downloads {
    /// `files` as [`downloads`] listed them.
    pub fn split(recipe: &Recipe, files: Vec<Vec<u8>>) -> Result<Self, ImageError> {
        let mut files = files.into_iter();
        let debs: Vec<_> = recipe
            .debs
            .iter()
            .map(|d| d.package)
            .zip(files.by_ref())
            .collect();
        let wheel = files.next();
        match (debs.len() == recipe.debs.len(), wheel) {
            (true, Some(wheel)) => Ok(Self {
                debs,
                wheel,
                ldconfig: files.next(),
            }),
            _ => Err(ImageError::Build(
                "fewer files than the recipe lists".into(),
            )),
        }
    }
}

/// Where the wheel is unpacked (`FINISH_PY`), and where the build leaves it meanwhile.
pub const SITE_PACKAGES: &str = "usr/local/lib/python3.14/dist-packages";
pub const WHEEL_IN_IMAGE: &str = "tmp/codemcp-build/websockets.whl";
pub const LDCONFIG_IN_IMAGE: &str = "tmp/codemcp-build/ldconfig";

/// Run by the image's own CPython during the build (the image has no
/// coreutils): unpacks the wheel, removes the build's leftovers, compiles the
/// bytecode (the root is read-only at run time, so without .pyc files every
/// worker would compile asyncio and websockets again on start; a few test
/// modules do not compile, as with the former script), then checks this is
/// the pinned CPython with websockets importable.
pub const FINISH_PY: &str = r#"import shutil, subprocess, sys, zipfile
zipfile.ZipFile("/tmp/codemcp-build/websockets.whl").extractall("/usr/local/lib/python3.14/dist-packages")
shutil.rmtree("/var", ignore_errors=True)  # ldconfig's aux cache; the image has no /var
subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "/usr/lib/python3.14",
                "/usr/local/lib/python3.14/dist-packages", "/opt/codemcp"], stdout=subprocess.DEVNULL)
import websockets, websockets.asyncio.client
assert sys.version.split()[0] == "3.14.8", sys.version
shutil.rmtree("/tmp/codemcp-build")
"#;
pub const FINISH_IN_IMAGE: &str = "tmp/codemcp-build/finish.py";

/// Finishes the image from the unpacked .debs (`rootfs.tar`): the linker
/// cache (libc-bin's static ldconfig), then `FINISH_PY`.
pub fn dockerfile() -> String {
    format!(
        r#"FROM scratch
ADD rootfs.tar /
RUN /{LDCONFIG_IN_IMAGE} && python{PYTHON} /{FINISH_IN_IMAGE}
USER 65534:65534
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
CMD ["python3", "-u", "/opt/codemcp/bootstrap.py"]
"#
    )
}

/// `package=version,...` sorted by package, for the `codemcp.debs` label.
pub fn deb_versions(recipe: &Recipe) -> String {
    let mut pairs: Vec<String> = recipe
        .debs
        .iter()
        .map(|d| format!("{}={}", d.package, d.version))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// The SHA-256 of everything that decides the image but the bootstrap (which
/// has its own label): this is `codemcp.recipe.sha256`.
pub fn recipe_sha256(recipe: &Recipe) -> String {
    let mut text = format!("format {RECIPE_FORMAT}\narch {}\n", recipe.arch);
    for d in recipe.debs.iter().chain([&recipe.ldconfig]) {
        text.push_str(&format!("deb {} {} {}\n", d.path, d.size, d.sha256));
    }
    let w = recipe.wheel;
    text.push_str(&format!("wheel {} {} {}\n", w.path, w.size, w.sha256));
    text.push_str(&dockerfile());
    text.push_str(FINISH_PY);
    crate::sha256_hex(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pin_is_a_full_sha256_and_a_pool_path() {
        for machine in ["x86_64", "aarch64"] {
            let recipe = for_machine(machine).unwrap().unwrap();
            assert!(recipe.debs.len() > 20, "{machine}");
            for d in recipe.debs.iter().chain([&recipe.ldconfig]) {
                assert!(d.path.starts_with("pool/main/") && d.path.ends_with(".deb"));
                assert!(d.path.contains(&format!("/{}_", d.package)), "{}", d.path);
                assert!(
                    d.path.contains(&format!("_{}.deb", recipe.arch))
                        || d.path.ends_with("_all.deb"),
                    "{}",
                    d.path
                );
            }
            assert_eq!(recipe.ldconfig.package, "libc-bin");
            assert!(recipe.wheel.path.contains("cp314-cp314"));
            assert!(recipe.wheel.path.contains(machine));
        }
        assert!(for_machine("riscv64").unwrap().is_none());
    }

    #[test]
    fn a_malformed_row_is_refused_with_its_line() {
        let bad = "# comment\nroot dash 1 12 abc pool/main/d/dash/dash_1_all.deb\n";
        let err = parse_debs(bad).unwrap_err();
        assert!(err.contains("line 2") && err.contains("sha256"), "{err}");
        let short = "root dash 1 12\n";
        assert!(parse_debs(short).unwrap_err().contains("6 fields"));
    }

    #[test]
    fn the_recipe_hash_changes_with_a_pin() {
        let recipe = for_machine("x86_64").unwrap().unwrap();
        let mut changed = recipe.clone();
        changed.debs[0].sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
        assert_ne!(recipe_sha256(&recipe), recipe_sha256(&changed));
        assert_eq!(recipe_sha256(&recipe), recipe_sha256(&recipe));
    }
}
