//! Which store to use, as written in settings (`CODEMCP_SESSION_STORE`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::StoreError;
use super::key::state_dir;

/// `memory`, `file`, `file:PATH`, `redis://[:PASSWORD@]HOST[:PORT][/DB]` or
/// `rediss://…` (TLS). Debug and Display never show a password.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSpec {
    Memory,
    File(PathBuf),
    Redis(String),
}

impl StoreSpec {
    /// The SQLite file `file` alone means.
    pub fn default_file() -> PathBuf {
        state_dir().join("sessions.sqlite3")
    }
}

impl FromStr for StoreSpec {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Self, StoreError> {
        let text = text.trim();
        if text == "memory" {
            return Ok(Self::Memory);
        }
        if text == "file" {
            return Ok(Self::File(Self::default_file()));
        }
        if let Some(path) = text.strip_prefix("file:") {
            if path.is_empty() {
                return Err(StoreError::Config(
                    "`file:` needs a path, e.g. file:/var/lib/codemcp/sessions.sqlite3".into(),
                ));
            }
            return Ok(Self::File(PathBuf::from(path)));
        }
        if text.starts_with("redis://") || text.starts_with("rediss://") {
            return check_redis_url(text).map(|()| Self::Redis(text.to_owned()));
        }
        Err(StoreError::Config(format!(
            "unknown session store `{}`: use memory, file, file:PATH or redis://HOST:PORT[/DB]",
            redact_url(text)
        )))
    }
}

fn check_redis_url(url: &str) -> Result<(), StoreError> {
    use redis::IntoConnectionInfo;
    url.into_connection_info().map(drop).map_err(|e| {
        StoreError::Config(format!(
            "bad Redis URL `{}`: {}",
            redact_url(url),
            e.detail().unwrap_or("invalid")
        ))
    })
}

/// `url` with any password replaced by `***`.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = userinfo.split_once(':').map_or("", |(user, _)| user);
    format!("{scheme}://{user}:***@{host}{tail}")
}

impl fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory => f.write_str("memory"),
            Self::File(path) => write!(f, "file:{}", path.display()),
            Self::Redis(url) => f.write_str(&redact_url(url)),
        }
    }
}

impl fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreSpec({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<StoreSpec, String> {
        text.parse::<StoreSpec>().map_err(|e| e.to_string())
    }

    #[test]
    fn store_specs_parse() {
        assert_eq!(parse("memory"), Ok(StoreSpec::Memory));
        assert_eq!(
            parse("file"),
            Ok(StoreSpec::File(StoreSpec::default_file()))
        );
        assert_eq!(
            parse("file:/tmp/s.db"),
            Ok(StoreSpec::File("/tmp/s.db".into()))
        );
        assert_eq!(
            parse("redis://127.0.0.1:6379/2"),
            Ok(StoreSpec::Redis("redis://127.0.0.1:6379/2".into()))
        );
        assert!(matches!(
            parse("rediss://cache.example:6380"),
            Ok(StoreSpec::Redis(_))
        ));
    }

    #[test]
    fn bad_specs_get_a_clear_error() {
        assert!(
            parse("postgres://x")
                .unwrap_err()
                .contains("use memory, file")
        );
        assert!(parse("file:").unwrap_err().contains("needs a path"));
        assert!(
            parse("redis://h:notaport")
                .unwrap_err()
                .contains("bad Redis URL")
        );
    }

    #[test]
    fn passwords_never_show() {
        let spec = parse("redis://:hunter2@10.0.0.1:6379/0").expect("parses");
        assert_eq!(spec.to_string(), "redis://:***@10.0.0.1:6379/0");
        assert!(!format!("{spec:?}").contains("hunter2"));
        assert_eq!(redact_url("rediss://app:p@ss@h/1"), "rediss://app:***@h/1");
        let err = parse("mysql://root:hunter2@h").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        let err = parse("redis://u:hunter2@h:badport").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }
}
