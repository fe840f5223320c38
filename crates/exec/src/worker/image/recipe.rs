//! The recipe of the CPython worker image, carried by the binary: the Debian
//! forky .debs of CPython 3.14 pinned by pool path and SHA-256 (no apt index
//! is read), the `websockets` wheel pinned by URL and SHA-256, and the
//! Dockerfile that finishes the image. The same image as the former
//! `scripts/build-worker-image.sh` made: user 65534, bootstrap read-only at
//! /opt/codemcp/bootstrap.py, the same labels.
//!
//! Updating it: `scripts/resolve-worker-debs.py` prints the rows from forky's
//! `Packages` index; the wheel's URL and digest are on PyPI's simple API.

/// The CPython minor version Monty follows (`MONTY_CPYTHON`).
pub const PYTHON: &str = "3.14";
/// The exact CPython the pinned .debs hold, checked in the image and labelled.
pub const PYTHON_VERSION: &str = "3.14.8";
/// Label value, as the former script wrote it.
pub const WEBSOCKETS: &str = "websockets==17.4";
/// Where the .debs come from first (`CODEMCP_DEBIAN_MIRROR` overrides).
pub const DEBIAN_MIRROR: &str = "http://deb.debian.org/debian";
/// Where a pinned .deb is looked for once forky's pool has dropped it: the
/// Debian snapshot archive as of the forky Release the pins were read from
/// (Date: Fri, 30 Oct 2026 08:08:01 UTC).
pub const SNAPSHOT_MIRROR: &str = "https://snapshot.debian.org/archive/debian/20261030T090000Z";
/// Where the wheel comes from (`CODEMCP_PYPI_FILES` overrides).
pub const PYPI_FILES: &str = "https://files.pythonhosted.org";
/// Bumped when the build steps change in a way the tables do not show.
const RECIPE_FORMAT: u32 = 1;

/// One pinned Debian package.
#[derive(Debug, Clone, Copy)]
pub struct Deb {
    pub package: &'static str,
    pub version: &'static str,
    /// Path under the mirror's root, e.g. `pool/main/d/dash/dash_0.5.12-12_amd64.deb`.
    pub path: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

const fn deb(
    package: &'static str,
    version: &'static str,
    path: &'static str,
    size: u64,
    sha256: &'static str,
) -> Deb {
    Deb {
        package,
        version,
        path,
        size,
        sha256,
    }
}

/// The pinned wheel for one architecture.
#[derive(Debug, Clone, Copy)]
pub struct Wheel {
    /// Path under the PyPI files host.
    pub path: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

/// Everything one architecture's image is made of.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    /// Debian's name for it, e.g. `amd64`.
    pub arch: &'static str,
    pub debs: &'static [Deb],
    pub wheel: Wheel,
    /// libc-bin, for its static `ldconfig` alone: it writes the linker
    /// cache during the build and is not kept (the former script ran the
    /// host's `ldconfig -r`).
    pub ldconfig: Deb,
}

/// The closure of python3.14-minimal + libpython3.14-stdlib + dash in forky
/// (`apt-cache depends --recurse`, less debconf and the installer's libraries).
const AMD64_DEBS: &[Deb] = &[
    deb(
        "libc6",
        "2.43-7",
        "pool/main/g/glibc/libc6_2.43-7_amd64.deb",
        1866392,
        "5c71715c51103beb4fbba9fe9f8dff604af6610dfa71c70bff342f54a7860803",
    ),
    deb(
        "libc-gconv-modules-extra",
        "2.43-7",
        "pool/main/g/glibc/libc-gconv-modules-extra_2.43-7_amd64.deb",
        1102928,
        "8abae40b5e2bfca58fbc838329b48f525c98463e930b8d3ed075d0c9e960a57a",
    ),
    deb(
        "libgcc-s1",
        "16.2.0-3",
        "pool/main/g/gcc-16/libgcc-s1_16.2.0-3_amd64.deb",
        74048,
        "e716dc8baad27e884c45ff83a76955047a7a9e33a80e94f9459ee996ebb800b0",
    ),
    deb(
        "gcc-16-base",
        "16.2.0-3",
        "pool/main/g/gcc-16/gcc-16-base_16.2.0-3_amd64.deb",
        38676,
        "7dcc6404b44ad8a9d58e83c1e987eecb4d6a24623a92438eeb11829ed1129635",
    ),
    deb(
        "zlib1g",
        "1:1.3.dfsg+really1.3.2-3",
        "pool/main/z/zlib/zlib1g_1.3.dfsg+really1.3.2-3_amd64.deb",
        90912,
        "52c585b07bea72ef36df9ddd5d1937f4739d3caec057d827954baec256292651",
    ),
    deb(
        "libexpat1",
        "2.9.0-1",
        "pool/main/e/expat/libexpat1_2.9.0-1_amd64.deb",
        133152,
        "190d7f5e45f070c42a12f708fe417d6636cb45fae71175203168bb5c3695081b",
    ),
    deb(
        "libssl3t64",
        "3.6.5-1",
        "pool/main/o/openssl/libssl3t64_3.6.5-1_amd64.deb",
        2620984,
        "0a0ec84fe860c5c93c74d53cbb071aea0793327a3761b483080e9d7b73c21b37",
    ),
    deb(
        "openssl-provider-legacy",
        "3.6.5-1",
        "pool/main/o/openssl/openssl-provider-legacy_3.6.5-1_amd64.deb",
        329396,
        "82b7c056f7dfd91e4eedb1a0738d655867b6e13bd25ce03406e9cf464e9345ad",
    ),
    deb(
        "libffi8",
        "3.8.0-2",
        "pool/main/libf/libffi/libffi8_3.8.0-2_amd64.deb",
        32472,
        "8f52979b2f3831088c419aae858f10fd3ad7e42cc6c1d28967bae996a98223a4",
    ),
    deb(
        "libbz2-1.0",
        "1.0.8-6+b2",
        "pool/main/b/bzip2/libbz2-1.0_1.0.8-6+b2_amd64.deb",
        39948,
        "04c7528234a6a4a8a2c2470f1470a7a616d90904fe8cdccf4c2c655540cdc61f",
    ),
    deb(
        "liblzma5",
        "5.8.4-1",
        "pool/main/x/xz-utils/liblzma5_5.8.4-1_amd64.deb",
        354284,
        "2dd166f61cb2a32c50f1a4dd3cd34f5f18a4ff97a6ff23665b9a57537fd60625",
    ),
    deb(
        "libzstd1",
        "1.5.7+dfsg-4",
        "pool/main/libz/libzstd/libzstd1_1.5.7+dfsg-4_amd64.deb",
        304040,
        "93e7930e4c25b918f1dd980cc1c6d4487654a248f5fa71eacb976ed7bbe954bd",
    ),
    deb(
        "libsqlite3-0",
        "3.53.4-2",
        "pool/main/s/sqlite3/libsqlite3-0_3.53.4-2_amd64.deb",
        974044,
        "bbf13c9326764d05e37e6590debdaa6f33af6bd822e3ca1204789d9d1dc23b11",
    ),
    deb(
        "libuuid1",
        "2.42.4-1",
        "pool/main/u/util-linux/libuuid1_2.42.4-1_amd64.deb",
        34456,
        "bdef15911ca5748219f5257bf4f1e81444fb40966499c02b1176bfbbcd9a2d08",
    ),
    deb(
        "libncursesw6",
        "6.6+20260608-2",
        "pool/main/n/ncurses/libncursesw6_6.6+20260608-2_amd64.deb",
        137064,
        "91dbb5e4ebe44a010703f916b4c4675aa3f54516601bbffe6612bd07e92d2071",
    ),
    deb(
        "libtinfo6",
        "6.6+20260608-2",
        "pool/main/n/ncurses/libtinfo6_6.6+20260608-2_amd64.deb",
        352696,
        "14682d1f6e35df22df0fe1eb2c09418aff0e29e2ea5a7bc0aa1bcd37192ba5a7",
    ),
    deb(
        "libreadline8t64",
        "8.3-4",
        "pool/main/r/readline/libreadline8t64_8.3-4_amd64.deb",
        180660,
        "1b65e285f312f9073dc4f0dafe44143d986bd8914e4a03af3ca59d68f238d02c",
    ),
    deb(
        "readline-common",
        "8.3-4",
        "pool/main/r/readline/readline-common_8.3-4_all.deb",
        74828,
        "0fbae1769293deda3cf2a349c472bc50302225812d8900def5c9dfa02404ad6d",
    ),
    deb(
        "libdb5.3t64",
        "5.3.28+dfsg2-11+b1",
        "pool/main/d/db5.3/libdb5.3t64_5.3.28+dfsg2-11+b1_amd64.deb",
        709352,
        "d263910f67130b11763a0164bac9ee94dafa482cc5ed7301703bbb6520183985",
    ),
    deb(
        "media-types",
        "14.0.0",
        "pool/main/m/media-types/media-types_14.0.0_all.deb",
        30760,
        "c835983e7cfeac12fc5db143d5de009444e800ddc40eeb439fb556a6b9e99243",
    ),
    deb(
        "netbase",
        "6.6",
        "pool/main/n/netbase/netbase_6.6_all.deb",
        10344,
        "7bc354cb841d2e35cd8b581cfdf7383fbe6cfec95c54a619f756499ee3e10a4b",
    ),
    deb(
        "libpython3.14-minimal",
        "3.14.8-1",
        "pool/main/p/python3.14/libpython3.14-minimal_3.14.8-1_amd64.deb",
        902020,
        "149d1ff143259f6a5a405522d40143595fdedbf6d8e01123ea798603f895c93d",
    ),
    deb(
        "libpython3.14-stdlib",
        "3.14.8-1",
        "pool/main/p/python3.14/libpython3.14-stdlib_3.14.8-1_amd64.deb",
        2366832,
        "abfa1b45e311461a4f8ee110d203efbc18808fada340af7036235b0d0c4cfd9a",
    ),
    deb(
        "python3.14-minimal",
        "3.14.8-1",
        "pool/main/p/python3.14/python3.14-minimal_3.14.8-1_amd64.deb",
        2715148,
        "06e82c1b5c9d6f3ff6a25e0eb4c136fb10cedd93d51ec378ff163c9bee584270",
    ),
    deb(
        "dash",
        "0.5.12-12",
        "pool/main/d/dash/dash_0.5.12-12_amd64.deb",
        98504,
        "a8902cb6d8650134764a25fb80aec8589d858ef71ece1680a62e84816c37bb04",
    ),
];

/// As `AMD64_DEBS`; dash is a binNMU there. Not tried on an arm64 machine.
const ARM64_DEBS: &[Deb] = &[
    deb(
        "libc6",
        "2.43-7",
        "pool/main/g/glibc/libc6_2.43-7_arm64.deb",
        1458588,
        "2315e75157bf67622bb435724de8be3c4c6f5bb33f3f26e8310842ea66093c74",
    ),
    deb(
        "libc-gconv-modules-extra",
        "2.43-7",
        "pool/main/g/glibc/libc-gconv-modules-extra_2.43-7_arm64.deb",
        1128656,
        "e6193371b9722624aa46ed45bca12ee219d092cf70b464f037645dfeb92bedd9",
    ),
    deb(
        "libgcc-s1",
        "16.2.0-3",
        "pool/main/g/gcc-16/libgcc-s1_16.2.0-3_arm64.deb",
        53248,
        "0b64848c56954c919709a045dc77972d5787922e3585795bfe2fcb1009647bad",
    ),
    deb(
        "gcc-16-base",
        "16.2.0-3",
        "pool/main/g/gcc-16/gcc-16-base_16.2.0-3_arm64.deb",
        38700,
        "c9c21cce3ac88d1e8bcf1b990c9589cb6ed7cf4cfb84d6eb7efd35a79896251a",
    ),
    deb(
        "zlib1g",
        "1:1.3.dfsg+really1.3.2-3",
        "pool/main/z/zlib/zlib1g_1.3.dfsg+really1.3.2-3_arm64.deb",
        87884,
        "a77a1a137da4f6e440fa638b00a60dc3d7124e9678402ea5335bc02e75bf267e",
    ),
    deb(
        "libexpat1",
        "2.9.0-1",
        "pool/main/e/expat/libexpat1_2.9.0-1_arm64.deb",
        115420,
        "810a63c52c8ff78f30f04da8c78f133a34c24504caed3f9e673ddda0c878f53d",
    ),
    deb(
        "libssl3t64",
        "3.6.5-1",
        "pool/main/o/openssl/libssl3t64_3.6.5-1_arm64.deb",
        2793584,
        "76770c099cfb06cd48cb0764ac3a7771c8b38e17d25780010d55772dce6b36f8",
    ),
    deb(
        "openssl-provider-legacy",
        "3.6.5-1",
        "pool/main/o/openssl/openssl-provider-legacy_3.6.5-1_arm64.deb",
        324052,
        "d20c164b2d206a1295df5c8b5cefe9b84846b1e3cfa057639b632245f867d426",
    ),
    deb(
        "libffi8",
        "3.8.0-2",
        "pool/main/libf/libffi/libffi8_3.8.0-2_arm64.deb",
        25888,
        "b6e6930ad3b9423237fb64bcf5fb65fdd36890613b7f083094fcf16041c5e851",
    ),
    deb(
        "libbz2-1.0",
        "1.0.8-6+b2",
        "pool/main/b/bzip2/libbz2-1.0_1.0.8-6+b2_arm64.deb",
        36632,
        "cca22caf6bcf0a547ee3d866aad175c88aab979065c179aa845b77724911c4bd",
    ),
    deb(
        "liblzma5",
        "5.8.4-1",
        "pool/main/x/xz-utils/liblzma5_5.8.4-1_arm64.deb",
        342208,
        "7f154b61a6dbeb833e8dcc8e0bce2fb3ba0e30a61e4c46179ee5fdbee05a9c41",
    ),
    deb(
        "libzstd1",
        "1.5.7+dfsg-4",
        "pool/main/libz/libzstd/libzstd1_1.5.7+dfsg-4_arm64.deb",
        257980,
        "e99e6e244d6c80f1c8e96cb68bb04bffc6848b12e3dcc5a35f6a775e4332e936",
    ),
    deb(
        "libsqlite3-0",
        "3.53.4-2",
        "pool/main/s/sqlite3/libsqlite3-0_3.53.4-2_arm64.deb",
        900900,
        "e417fb0642502c090d84a6f5fce1a2e5961dfe18644415ddce77a1a67cd2fc89",
    ),
    deb(
        "libuuid1",
        "2.42.4-1",
        "pool/main/u/util-linux/libuuid1_2.42.4-1_arm64.deb",
        33092,
        "a328012faba3f0ce224a61571a77b0798dbd783303aa436277c7909ed77800a9",
    ),
    deb(
        "libncursesw6",
        "6.6+20260608-2",
        "pool/main/n/ncurses/libncursesw6_6.6+20260608-2_arm64.deb",
        125308,
        "a27d49cd2f7c3b02caf56b59d2c52f7bbf9d18dcbc8f96c412cf767b6b36c43e",
    ),
    deb(
        "libtinfo6",
        "6.6+20260608-2",
        "pool/main/n/ncurses/libtinfo6_6.6+20260608-2_arm64.deb",
        345352,
        "2ba77e68fbadd96dd7aa83399ab681593d5b48e951ae63e69a7a0650dfdfaf76",
    ),
    deb(
        "libreadline8t64",
        "8.3-4",
        "pool/main/r/readline/libreadline8t64_8.3-4_arm64.deb",
        167636,
        "c8f93840910ad4db3778e3b730193e8f50ad947a9f6c978fa941cb6202e934b6",
    ),
    deb(
        "readline-common",
        "8.3-4",
        "pool/main/r/readline/readline-common_8.3-4_all.deb",
        74828,
        "0fbae1769293deda3cf2a349c472bc50302225812d8900def5c9dfa02404ad6d",
    ),
    deb(
        "libdb5.3t64",
        "5.3.28+dfsg2-11+b1",
        "pool/main/d/db5.3/libdb5.3t64_5.3.28+dfsg2-11+b1_arm64.deb",
        625772,
        "b1a647dcbbab145d20dceba0253256b05cbda683bc7b4d9ce74ed6d1b5e80643",
    ),
    deb(
        "media-types",
        "14.0.0",
        "pool/main/m/media-types/media-types_14.0.0_all.deb",
        30760,
        "c835983e7cfeac12fc5db143d5de009444e800ddc40eeb439fb556a6b9e99243",
    ),
    deb(
        "netbase",
        "6.6",
        "pool/main/n/netbase/netbase_6.6_all.deb",
        10344,
        "7bc354cb841d2e35cd8b581cfdf7383fbe6cfec95c54a619f756499ee3e10a4b",
    ),
    deb(
        "libpython3.14-minimal",
        "3.14.8-1",
        "pool/main/p/python3.14/libpython3.14-minimal_3.14.8-1_arm64.deb",
        894364,
        "83e298ea45ba9a0d497108f27d5096a1d73ca39f90f6807ee5b73ccc214c983f",
    ),
    deb(
        "libpython3.14-stdlib",
        "3.14.8-1",
        "pool/main/p/python3.14/libpython3.14-stdlib_3.14.8-1_arm64.deb",
        2230888,
        "9b9848c221ad036d80514872f860df3212de50799354ac426d652680bb657751",
    ),
    deb(
        "python3.14-minimal",
        "3.14.8-1",
        "pool/main/p/python3.14/python3.14-minimal_3.14.8-1_arm64.deb",
        2402136,
        "67a04b6550697a85c417544b58f24c8285e28209226dfe56c92581a2fe5f2b53",
    ),
    deb(
        "dash",
        "0.5.12-12+b1",
        "pool/main/d/dash/dash_0.5.12-12+b1_arm64.deb",
        95612,
        "162f2e04e74793fd1512e426b7d5f03b202fc8069959143f0bd8e55c61b90128",
    ),
];

const AMD64: Recipe = Recipe {
    arch: "amd64",
    debs: AMD64_DEBS,
    ldconfig: deb(
        "libc-bin",
        "2.43-7",
        "pool/main/g/glibc/libc-bin_2.43-7_amd64.deb",
        620708,
        "159e07254924fdec81a7677c983a2ace1fb7aa05933abfb9aa6aa037844da18a",
    ),
    wheel: Wheel {
        path: "packages/c1/24/d203439f909ffbf37260ca28a3432381412d2e79912ebf98be572e63055e/websockets-17.4-cp314-cp314-manylinux1_x86_64.manylinux_2_28_x86_64.manylinux_2_5_x86_64.whl",
        size: 226_449,
        sha256: "ef03fb4b3685df0ed9dc6a074a090f030345cad2c23c61818da3e08e693a9caa",
    },
};

const ARM64: Recipe = Recipe {
    arch: "arm64",
    debs: ARM64_DEBS,
    ldconfig: deb(
        "libc-bin",
        "2.43-7",
        "pool/main/g/glibc/libc-bin_2.43-7_arm64.deb",
        530248,
        "b38dff2bf08857153314c693506debbafef4ea3dec921335e22cc14c59456563",
    ),
    wheel: Wheel {
        path: "packages/4b/17/3ae5d9486a170a222dd0437b4f2bc02ecf324177498a942dcac200e65d05/websockets-17.4-cp314-cp314-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
        size: 227_695,
        sha256: "c5e970d3996c597186c9dbb6e77a8048737a834ac03cb13186a54999e0e1c31e",
    },
};

/// The recipe for the machine this binary runs on, if there is one.
pub fn for_this_machine() -> Option<&'static Recipe> {
    match std::env::consts::ARCH {
        "x86_64" => Some(&AMD64),
        "aarch64" => Some(&ARM64),
        _ => None,
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
    super::super::sha256_hex(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pin_is_a_full_sha256_and_a_pool_path() {
        for recipe in [&AMD64, &ARM64] {
            for d in recipe.debs {
                assert_eq!(d.sha256.len(), 64, "{}", d.package);
                assert!(d.sha256.bytes().all(|b| b.is_ascii_hexdigit()));
                assert!(d.path.starts_with("pool/main/") && d.path.ends_with(".deb"));
                assert!(d.path.contains(&format!("/{}_", d.package)), "{}", d.path);
            }
            assert!(recipe.wheel.path.contains("cp314-cp314"));
            assert_eq!(recipe.wheel.sha256.len(), 64);
        }
    }

    #[test]
    fn the_recipe_hash_changes_with_a_pin() {
        let mut debs = AMD64_DEBS.to_vec();
        debs[0].sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
        let leaked: &'static [Deb] = Box::leak(debs.into_boxed_slice());
        let changed = Recipe {
            debs: leaked,
            ..AMD64
        };
        assert_ne!(recipe_sha256(&AMD64), recipe_sha256(&changed));
        assert_eq!(recipe_sha256(&AMD64), recipe_sha256(&AMD64));
    }
}
