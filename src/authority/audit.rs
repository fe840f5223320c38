//! The audit log: one JSON line per upstream call that agent code makes or
//! attempts, with who asked, what was decided and how it ended. Lines go to
//! the `codemcp::audit` log target and, with `CODEMCP_AUDIT_LOG`, to an
//! append-only file created 0600 and rotated by size.
//!
//! A line is bounded ([`MAX_LINE_BYTES`]): long strings, keys, lists and
//! objects in the arguments are shortened, each with its original length,
//! so a burst of huge calls cannot rotate a recent record out of every kept
//! file: each file holds at least `max_bytes / MAX_LINE_BYTES` records.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

/// Argument strings longer than this are cut in the log.
const MAX_VALUE_CHARS: usize = 200;
/// Keys, server and tool names longer than this are cut in the log.
const MAX_NAME_CHARS: usize = 100;
/// Nesting kept in logged arguments; deeper parts are summarised.
const MAX_DEPTH: usize = 8;
/// Entries of one list or object kept in the log; the rest are counted.
const MAX_ITEMS: usize = 32;
/// Values (of any nesting) kept in one call's logged arguments; the rest
/// are counted. With the cuts above this keeps a line under ~60 KiB.
const MAX_NODES: usize = 160;
/// No audit line is longer (a line over it, which the cuts above already
/// prevent, loses its arguments but keeps the rest).
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Rotated files kept when the setting does not say.
const DEFAULT_KEEP_FILES: usize = 5;
/// Keys whose values are never written (matched case-insensitively, anywhere in the key).
const SECRET_WORDS: [&str; 6] = [
    "token",
    "password",
    "passwd",
    "secret",
    "key",
    "authorization",
];

#[derive(Debug, thiserror::Error)]
#[error("CODEMCP_AUDIT_LOG={path}: {source}")]
pub struct AuditError {
    path: PathBuf,
    source: std::io::Error,
}

/// One upstream call as the audit log records it.
#[derive(Debug, Clone, Copy)]
pub struct AuditEntry<'a> {
    pub principal: &'a str,
    pub session: Option<&'a str>,
    pub engine: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
    /// The arguments as the log shows them: [`shown_arguments`].
    pub arguments: &'a Value,
    /// `allow`, `approved`, `denied` (by the user or for want of an answer) or `deny`.
    pub decision: &'a str,
    /// `ok`, `error` or `timeout`; `none` when the call was not made.
    pub outcome: &'a str,
    pub duration_ms: u64,
    pub result_bytes: usize,
    /// The saved helper whose code made the call (see `crate::helpers`).
    pub helper: Option<&'a str>,
}

pub struct AuditLog {
    file: Option<Mutex<Rotating>>,
    /// `CODEMCP_AUDIT_KEEP_FILES`.
    keep: usize,
    /// `CODEMCP_AUDIT_REQUIRED`.
    required: bool,
}

struct Rotating {
    path: PathBuf,
    file: File,
    written: u64,
    max_bytes: u64,
}

impl AuditLog {
    /// Only the `codemcp::audit` log target.
    pub fn to_tracing_only() -> Self {
        Self {
            file: None,
            keep: DEFAULT_KEEP_FILES,
            required: false,
        }
    }

    /// Appends to `path` (created 0600), rotating at `max_bytes`.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn open(path: &Path, max_bytes: usize) -> Result<Self, AuditError> {
        let file = open_append(path)?;
        let written = file.metadata().map_or(0, |m| m.len());
        Ok(Self {
            file: Some(Mutex::new(Rotating {
                path: path.to_owned(),
                file,
                written,
                max_bytes: u64::try_from(max_bytes).unwrap_or(u64::MAX),
            })),
            keep: DEFAULT_KEEP_FILES,
            required: false,
        })
    }

    /// Keeps `files` rotated files (`PATH.1` … `PATH.files`), at least one.
    #[must_use]
    pub fn keeping(mut self, files: usize) -> Self {
        self.keep = files.max(1);
        self
    }

    /// Whether side-effecting calls need their line written first.
    #[must_use]
    pub fn requiring(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// `CODEMCP_AUDIT_REQUIRED` is on and there is a file to write.
    pub fn required(&self) -> bool {
        self.required && self.file.is_some()
    }

    /// Whether a recorded line would be read (a file, or the log shows
    /// `codemcp::audit`): when not, callers skip what only the line needs.
    pub fn wanted(&self) -> bool {
        self.file.is_some() || tracing::enabled!(target: "codemcp::audit", tracing::Level::INFO)
    }

    /// Writes the line; a failure is logged (see [`AuditLog::try_record`]).
    pub fn record(&self, entry: &AuditEntry<'_>) {
        let _ = self.try_record(entry);
    }

    /// Writes the line, and says whether the file took it; a failure is
    /// logged as well.
    ///
    /// # Errors
    /// The line could not be written to the file (or rotation failed).
    pub fn try_record(&self, entry: &AuditEntry<'_>) -> Result<(), AuditError> {
        if !self.wanted() {
            return Ok(()); // nobody would read the line
        }
        let line = line(entry, SystemTime::now());
        tracing::info!(target: "codemcp::audit", "{line}");
        let Some(file) = &self.file else {
            return Ok(());
        };
        file.lock().append(&line, self.keep).inspect_err(|e| {
            tracing::error!(
                target: "codemcp::audit",
                error = %e,
                server = %entry.server,
                tool = %entry.tool,
                "writing the audit log failed; this call has no audit record"
            );
        })
    }
}

impl Rotating {
    fn append(&mut self, line: &str, keep: usize) -> Result<(), AuditError> {
        let bytes = line.len() as u64 + 1;
        if self.written > 0 && self.written + bytes > self.max_bytes {
            self.rotate(keep)?;
        }
        let fail = |source| AuditError {
            path: self.path.clone(),
            source,
        };
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .map_err(fail)?;
        self.written += bytes;
        Ok(())
    }

    /// `PATH.N-1` becomes `PATH.N` (the oldest, `PATH.keep`, goes), …,
    /// `PATH` becomes `PATH.1`; a new `PATH` starts.
    fn rotate(&mut self, keep: usize) -> Result<(), AuditError> {
        let numbered = |n: usize| {
            let mut name = self.path.clone().into_os_string();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        let fail = |path: PathBuf| move |source| AuditError { path, source };
        for n in (1..keep).rev() {
            match std::fs::rename(numbered(n), numbered(n + 1)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(fail(numbered(n))(e));
                }
                _ => {}
            }
        }
        std::fs::rename(&self.path, numbered(1)).map_err(fail(self.path.clone()))?;
        self.file = open_append(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

/// The record of who did what is only worth keeping where nobody else could
/// rewrite it: a directory only you (or root) can change, or a sticky one
/// (as `/tmp`), and a regular file of yours, never a symlink or a FIFO.
const AUDIT_RULES: codemcp_base::secure_file::Rules = codemcp_base::secure_file::Rules {
    what: "the audit log",
    max_bytes: u64::MAX, // appended to, never read
    follow_symlink: false,
    owner: codemcp_base::secure_file::Owner::Me,
    private_writes: true,
};

fn open_append(path: &Path) -> Result<File, AuditError> {
    let unsafe_file = |e| AuditError {
        path: path.to_owned(),
        source: std::io::Error::other(e),
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    codemcp_base::secure_file::check_dir(dir, "the audit log's directory").map_err(unsafe_file)?;
    let mut options = OpenOptions::new();
    options.create(true).append(true).mode(0o600);
    codemcp_base::secure_file::open_trusted(path, &AUDIT_RULES, &mut options).map_err(unsafe_file)
}

/// The length of `value` as JSON, without writing it anywhere.
pub fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

/// A call's arguments as the log shows them: values of secret-looking keys
/// replaced, long strings, keys, lists and objects cut (each with its
/// original length). Small whatever the arguments' size, so the caller can
/// keep this and send the original on without a copy.
pub fn shown_arguments(args: &Map<String, Value>) -> Value {
    let mut nodes = MAX_NODES;
    redacted_map(args, 0, &mut nodes)
}

/// The JSON line for `entry`: at most [`MAX_LINE_BYTES`], hidden characters
/// `\u` escaped so a terminal shows them (see [`codemcp_base::for_humans`]).
fn line(entry: &AuditEntry<'_>, at: SystemTime) -> String {
    let full = codemcp_base::for_humans::json_escaped(&line_with(entry, at, entry.arguments));
    if full.len() <= MAX_LINE_BYTES {
        return full;
    }
    let dropped = Value::String(format!(
        "… [{} bytes of arguments]",
        json_len(entry.arguments)
    ));
    codemcp_base::for_humans::json_escaped(&line_with(entry, at, &dropped))
}

fn line_with(entry: &AuditEntry<'_>, at: SystemTime, arguments: &Value) -> String {
    let mut line = json!({
        "time": humantime::format_rfc3339_millis(at).to_string(),
        "principal": cut(entry.principal, MAX_NAME_CHARS),
        "session": entry.session.map(|s| cut(s, MAX_NAME_CHARS)),
        "engine": entry.engine,
        "server": cut(entry.server, MAX_NAME_CHARS),
        "tool": cut(entry.tool, MAX_NAME_CHARS),
        "arguments": arguments,
        "decision": entry.decision,
        "outcome": entry.outcome,
        "duration_ms": entry.duration_ms,
        "result_bytes": entry.result_bytes,
    });
    if let Some(helper) = entry.helper {
        line["helper"] = Value::String(cut(helper, MAX_NAME_CHARS));
    }
    line.to_string()
}

/// `s`, or its first `max` characters and its length.
fn cut(s: &str, max: usize) -> String {
    if s.chars().nth(max).is_none() {
        return s.to_owned();
    }
    let kept: String = s.chars().take(max).collect();
    format!("{kept}… [{} chars]", s.chars().count())
}

/// `value` with secret-looking keys' values replaced and long strings cut;
/// `nodes` is what is left of the whole call's budget of values.
fn redacted(value: &Value, depth: usize, nodes: &mut usize) -> Value {
    *nodes = nodes.saturating_sub(1);
    match value {
        Value::String(s) => Value::String(cut(s, MAX_VALUE_CHARS)),
        Value::Object(_) | Value::Array(_) if depth >= MAX_DEPTH => Value::String("…".into()),
        Value::Object(map) => redacted_map(map, depth, nodes),
        Value::Array(items) => {
            let mut shown = Vec::new();
            for item in items {
                if shown.len() == MAX_ITEMS || *nodes == 0 {
                    shown.push(Value::String(format!("… [{} items]", items.len())));
                    break;
                }
                shown.push(redacted(item, depth + 1, nodes));
            }
            Value::Array(shown)
        }
        other => other.clone(),
    }
}

fn redacted_map(map: &Map<String, Value>, depth: usize, nodes: &mut usize) -> Value {
    let mut shown = Map::new();
    for (key, item) in map {
        if shown.len() == MAX_ITEMS || *nodes == 0 {
            shown.insert("…".into(), Value::String(format!("[{} keys]", map.len())));
            break;
        }
        let value = if is_secret(key) {
            *nodes = nodes.saturating_sub(1);
            Value::String("<redacted>".into())
        } else {
            redacted(item, depth + 1, nodes)
        };
        shown.insert(cut(key, MAX_NAME_CHARS), value);
    }
    Value::Object(shown)
}

fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| key.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(arguments: &Value) -> AuditEntry<'_> {
        AuditEntry {
            principal: "anonymous",
            session: Some("h"),
            engine: "monty",
            server: "fs",
            tool: "write_file",
            arguments,
            decision: "allow",
            outcome: "ok",
            duration_ms: 3,
            result_bytes: 10,
            helper: None,
        }
    }

    #[test]
    fn json_len_is_the_length_of_the_json() {
        let value = json!({"content": [{"type": "text", "text": "The sum of 1 and 2 is 3. é"}]});
        assert_eq!(json_len(&value), value.to_string().len());
    }

    #[test]
    fn secrets_are_redacted_and_long_values_cut() {
        let args = json!({"path": "/tmp/x", "api_key": "hunter2", "nested": {"Authorization": "Bearer x"},
                          "content": "y".repeat(1000)});
        let Value::Object(args) = args else {
            unreachable!()
        };
        let line: Value = serde_json::from_str(&line(
            &entry(&shown_arguments(&args)),
            SystemTime::UNIX_EPOCH,
        ))
        .unwrap();
        assert_eq!(line["arguments"]["api_key"], "<redacted>");
        assert_eq!(line["arguments"]["nested"]["Authorization"], "<redacted>");
        assert_eq!(line["arguments"]["path"], "/tmp/x");
        assert!(
            line["arguments"]["content"]
                .as_str()
                .unwrap()
                .ends_with("[1000 chars]")
        );
        assert_eq!(line["time"], "1970-01-01T00:00:00.000Z");
        assert!(!line.to_string().contains("hunter2"));
    }

    #[test]
    fn the_file_is_private_append_only_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "earlier\n").unwrap();
        let log = AuditLog::open(&path, 600).unwrap();
        let args = shown_arguments(&Map::new());
        for _ in 0..4 {
            log.record(&entry(&args));
        }
        let mode = std::fs::metadata(&path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        let rotated = std::fs::read_to_string(dir.path().join("audit.jsonl.1")).unwrap();
        assert!(
            rotated.starts_with("earlier\n"),
            "kept what was there: {rotated}"
        );
        let current = std::fs::read_to_string(&path).unwrap();
        let lines = rotated.lines().count() + current.lines().count();
        assert_eq!(lines, 5, "no line lost in rotation");
        assert!(current.len() <= 600);
    }
}
