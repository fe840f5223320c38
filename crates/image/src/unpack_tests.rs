#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use super::*;

/// netbase 6.6 from forky, byte for byte the .deb the recipe pins.
const NETBASE: &[u8] = include_bytes!("testdata/netbase_6.6_all.deb");

fn has_dpkg_deb() -> bool {
    Command::new("dpkg-deb").arg("--version").output().is_ok()
}

/// Every regular file under `root`, relative path → (bytes, mode).
fn files_under(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                let rel = entry
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let bytes = std::fs::read(entry.path()).unwrap();
                found.insert(rel, (bytes, meta.permissions().mode() & 0o7777));
            }
        }
    }
    found
}

#[test]
fn the_pinned_netbase_deb_unpacks_as_its_recipe_says() {
    let pin = crate::recipe::for_this_machine()
        .and_then(|r| r.debs.iter().find(|d| d.package == "netbase"))
        .expect("netbase is pinned");
    assert_eq!(crate::sha256_hex(NETBASE), pin.sha256);
    let mut root = RootFs::default();
    let added = root.add_deb("netbase", NETBASE).expect("unpacks");
    assert!(added >= 5, "{added}");
    let Some(Node {
        kind: Kind::File(services),
        mode,
        ..
    }) = root.get("etc/services")
    else {
        panic!("no etc/services");
    };
    assert_eq!(*mode, 0o644);
    assert!(String::from_utf8_lossy(services).contains("http\t\t80/tcp"));
    // Documentation is left out, as the former script's rm -rf did.
    assert!(root.get("usr/share/doc/netbase/copyright").is_none());
    assert!(root.get("usr/share/doc").is_none());
}

#[test]
fn the_unpacked_files_are_what_dpkg_deb_extracts() {
    if !has_dpkg_deb() {
        eprintln!("SKIPPED: no dpkg-deb to compare with");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let deb = dir.path().join("netbase.deb");
    std::fs::write(&deb, NETBASE).unwrap();
    let out = dir.path().join("x");
    let status = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let mut root = RootFs::default();
    root.add_deb("netbase", NETBASE).unwrap();
    for (path, (bytes, mode)) in files_under(&out) {
        if path.starts_with("usr/share/doc/") {
            continue;
        }
        let node = root.get(&path).unwrap_or_else(|| panic!("{path} missing"));
        assert_eq!(node.kind, Kind::File(bytes), "{path}");
        assert_eq!(node.mode, mode, "{path}");
    }
}

/// A .deb made by dpkg-deb with zstd, holding a pre-merged-/usr path, a hard
/// link, a symlink and documentation.
fn built_deb(dir: &Path, compression: &str) -> Vec<u8> {
    let pkg = dir.join(format!("pkg-{compression}"));
    std::fs::create_dir_all(pkg.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    std::fs::create_dir_all(pkg.join("usr/share/doc/t")).unwrap();
    std::fs::write(
        pkg.join("DEBIAN/control"),
        "Package: t\nVersion: 1\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n",
    )
    .unwrap();
    std::fs::write(pkg.join("bin/tool"), b"#!/bin/sh\necho tool\n").unwrap();
    std::fs::set_permissions(pkg.join("bin/tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::hard_link(pkg.join("bin/tool"), pkg.join("bin/tool2")).unwrap();
    std::os::unix::fs::symlink("tool", pkg.join("bin/alias")).unwrap();
    std::fs::write(pkg.join("usr/share/doc/t/README"), b"doc").unwrap();
    let deb = dir.join(format!("t-{compression}.deb"));
    let out = Command::new("dpkg-deb")
        .args(["--root-owner-group", &format!("-Z{compression}"), "--build"])
        .arg(&pkg)
        .arg(&deb)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&deb).unwrap()
}

#[test]
fn zstd_and_xz_debs_unpack_into_merged_usr_with_links() {
    if !has_dpkg_deb() {
        eprintln!("SKIPPED: no dpkg-deb to build test packages");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for compression in ["zstd", "xz", "none"] {
        let deb = built_deb(dir.path(), compression);
        let mut root = RootFs::default();
        root.add_deb(compression, &deb).unwrap();
        let tool = root
            .get("usr/bin/tool")
            .unwrap_or_else(|| panic!("{compression}"));
        assert_eq!(tool.kind, Kind::File(b"#!/bin/sh\necho tool\n".to_vec()));
        assert_eq!(tool.mode, 0o755);
        assert_eq!(
            root.get("usr/bin/tool2").unwrap().kind,
            tool.kind,
            "{compression}"
        );
        assert_eq!(
            root.get("usr/bin/alias").unwrap().kind,
            Kind::Symlink("tool".into())
        );
        assert!(root.get("bin/tool").is_none());
        assert!(root.get("usr/share/doc/t/README").is_none());
    }
}

#[test]
fn a_path_leaving_the_root_is_refused() {
    let mut data = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..12].copy_from_slice(b"./../../evil");
    header.set_size(1);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    data.append(&header, &b"x"[..]).unwrap();
    let data = data.into_inner().unwrap();
    let mut deb = ar::Builder::new(Vec::new());
    deb.append(
        &ar::Header::new(b"debian-binary".to_vec(), 4),
        &b"2.0\n"[..],
    )
    .unwrap();
    deb.append(
        &ar::Header::new(b"data.tar".to_vec(), data.len() as u64),
        data.as_slice(),
    )
    .unwrap();
    let deb = deb.into_inner().unwrap();
    let mut root = RootFs::default();
    let err = root.add_deb("evil", &deb).unwrap_err();
    assert!(matches!(err, UnpackError::UnsafePath { .. }), "{err}");
    assert!(root.is_empty());
}

#[test]
fn something_that_is_not_a_deb_is_refused() {
    let mut root = RootFs::default();
    let err = root.add_deb("html", b"<html>Not Found</html>").unwrap_err();
    assert!(matches!(err, UnpackError::NotADeb { .. }), "{err}");
}

#[test]
fn the_tar_holds_every_path_owned_by_root() {
    let mut root = RootFs::default();
    root.add_deb("netbase", NETBASE).unwrap();
    root.dir("opt/codemcp", 0o555);
    root.file("opt/codemcp/bootstrap.py", 0o444, b"print(1)\n".to_vec());
    root.symlink("usr/bin/python3", "python3.14");
    let tar = root.to_tar().unwrap();
    let mut archive = tar::Archive::new(tar.as_slice());
    let mut seen = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let entry = entry.unwrap();
        let h = entry.header();
        assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
        let path = entry
            .path()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches('/')
            .to_owned();
        seen.insert(path, (h.entry_type(), h.mode().unwrap()));
    }
    assert_eq!(seen.len(), root.len());
    assert_eq!(seen["opt/codemcp"], (tar::EntryType::Directory, 0o555));
    assert_eq!(
        seen["opt/codemcp/bootstrap.py"],
        (tar::EntryType::Regular, 0o444)
    );
    assert_eq!(seen["usr/bin/python3"].0, tar::EntryType::Symlink);
    assert_eq!(seen["etc/protocols"], (tar::EntryType::Regular, 0o644));
}
