//! Reading wheels (zip archives) that were already checked against their
//! pins: every member for a root file system, or one named file.

use std::io::Read;

use crate::unpack::UnpackError;

/// One regular file of a wheel.
pub struct Member {
    /// Its path inside the wheel, `/`-separated, checked not to leave it.
    pub path: String,
    pub bytes: Vec<u8>,
    /// Whether its Unix mode (when the wheel records one) is executable.
    pub executable: bool,
}

fn bad(wheel: &str, detail: impl ToString) -> UnpackError {
    UnpackError::Wheel {
        wheel: wheel.to_owned(),
        detail: detail.to_string(),
    }
}

/// Every regular file of `wheel` whose path `keep` accepts (directories are
/// implied by the paths). A path with `..` or a leading `/` is refused.
pub fn members(
    name: &str,
    wheel: &[u8],
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<Member>, UnpackError> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(|e| bad(name, e))?;
    let mut out = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| bad(name, e))?;
        if entry.is_dir() {
            continue;
        }
        let raw = entry.name().to_owned();
        let parts: Vec<&str> = raw
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if raw.starts_with('/') || raw.contains('\\') || parts.contains(&"..") || parts.is_empty() {
            return Err(UnpackError::UnsafePath {
                deb: name.to_owned(),
                path: raw,
            });
        }
        let path = parts.join("/");
        if !keep(&path) {
            continue;
        }
        if entry.is_symlink() {
            return Err(bad(name, format!("{path} is a symbolic link")));
        }
        let executable = entry.unix_mode().is_some_and(|m| m & 0o111 != 0);
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry.read_to_end(&mut bytes).map_err(|e| bad(name, e))?;
        out.push(Member {
            path,
            bytes,
            executable,
        });
    }
    Ok(out)
}
