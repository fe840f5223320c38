//! A case of the corpus: its steps and the verdict each mode must give, parsed
//! from the header of its file in `sandbox-tests/` (format:
//! `sandbox-tests/README.md`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{CLASSES, MODES, support};

#[derive(Debug, Clone)]
pub(crate) enum Verdict {
    /// The final step ends in an error whose `"Type: message"` matches.
    Blocked {
        kind: Option<String>,
        pattern: Pattern,
    },
    /// The final step succeeds and its stdout matches.
    Contained { pattern: Pattern },
}

#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) session: String,
    /// Intermediate steps must succeed unless marked `(error)`.
    pub(crate) expect_error: bool,
    pub(crate) code: String,
}

#[derive(Debug)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) class: String,
    /// Any one of a mode's verdicts is acceptable.
    pub(crate) verdicts: BTreeMap<String, Vec<Verdict>>,
    pub(crate) steps: Vec<Step>,
}

impl Case {
    pub(crate) fn sessions(&self) -> usize {
        let mut labels: Vec<&str> = self.steps.iter().map(|s| s.session.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        labels.len()
    }
}

pub(crate) fn corpus_dir() -> PathBuf {
    support::repo().join("sandbox-tests")
}

pub(crate) fn load_corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("sandbox-tests/ exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    entries.sort();
    for path in entries {
        let text = std::fs::read_to_string(&path).expect("read case");
        cases.push(parse_case(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    }
    cases
}

pub(crate) fn parse_case(path: &Path, text: &str) -> Result<Case, String> {
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("bad file name")?
        .to_owned();
    let (class, rest) = name
        .split_once("__")
        .ok_or("the name must be <class>__<case>.py")?;
    if !CLASSES.contains(&class) || rest.is_empty() {
        return Err(format!("unknown class '{class}' (known: {CLASSES:?})"));
    }
    let class = class.to_owned();
    let mut verdicts: BTreeMap<String, Vec<Verdict>> = BTreeMap::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.peek() {
        let Some(comment) = line.strip_prefix('#') else {
            break;
        };
        if comment.starts_with(" ---") {
            break;
        }
        if let Some((key, value)) = comment.trim().split_once(": ")
            && key.chars().all(|c| c.is_ascii_uppercase())
            && !key.is_empty()
        {
            verdicts
                .entry(key.to_owned())
                .or_default()
                .push(parse_verdict(value.trim())?);
        }
        lines.next();
    }
    for mode in MODES {
        if !verdicts.contains_key(mode.name)
            && let Some(like) = mode.verdicts_like.and_then(|m| verdicts.get(m)).cloned()
        {
            verdicts.insert(mode.name.to_owned(), like);
        }
        if !verdicts.contains_key(mode.name) {
            return Err(format!("no '# {}: ...' verdict in the header", mode.name));
        }
    }
    if let Some(unknown) = verdicts
        .keys()
        .find(|k| !MODES.iter().any(|m| m.name == *k))
    {
        return Err(format!("verdict for unknown mode {unknown}"));
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut current = Step {
        session: "A".into(),
        expect_error: false,
        code: String::new(),
    };
    for line in lines {
        if let Some(marker) = line.strip_prefix("# --- session ") {
            if !current.code.trim().is_empty() {
                steps.push(current);
            }
            let (label, flag) = marker.split_once(' ').unwrap_or((marker, ""));
            current = Step {
                session: label.to_owned(),
                expect_error: match flag.trim() {
                    "" => false,
                    "(error)" => true,
                    other => return Err(format!("unknown step flag {other}")),
                },
                code: String::new(),
            };
        } else {
            current.code.push_str(line);
            current.code.push('\n');
        }
    }
    if current.code.trim().is_empty() {
        return Err("no code".into());
    }
    steps.push(current);
    Ok(Case {
        name,
        class,
        verdicts,
        steps,
    })
}

pub(crate) fn parse_verdict(text: &str) -> Result<Verdict, String> {
    let (word, rest) = text
        .split_once(' ')
        .ok_or("expected 'blocked' or 'contained'")?;
    let (kind, rest) = match rest.split_once(' ') {
        Some((k, r)) if !k.starts_with('/') => (Some(k.to_owned()), r),
        _ => (None, rest),
    };
    let body = rest
        .strip_prefix('/')
        .and_then(|r| r.strip_suffix('/'))
        .ok_or_else(|| format!("pattern must be /.../: {rest}"))?;
    let pattern = Pattern::new(body)?;
    match (word, kind) {
        ("blocked", kind) => Ok(Verdict::Blocked { kind, pattern }),
        ("contained", None) => Ok(Verdict::Contained { pattern }),
        _ => Err(format!("bad verdict: {text}")),
    }
}

/// A header's `/RE/`: `regex` syntax, searched anywhere in the text, with `^`
/// and `$` at line boundaries (multi-line mode), since the checks are on whole
/// lines of stdout.
#[derive(Debug, Clone)]
pub(crate) struct Pattern(regex::Regex);

impl Pattern {
    pub(crate) fn new(source: &str) -> Result<Self, String> {
        regex::RegexBuilder::new(source)
            .multi_line(true)
            .build()
            .map(Self)
            .map_err(|e| format!("bad pattern /{source}/: {e}"))
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

/// What the headers rely on: multi-line anchors, `.` short of a newline, and
/// escaped punctuation (`\/` in `/.../`).
#[test]
fn header_patterns_are_multi_line_regular_expressions() {
    let cases = [
        ("PermissionError|not supported", "x not supported y", true),
        ("^kept$", "a\nkept\n", true),
        ("^kept$", "kept it", false),
        ("^3(\\.0)?$", "3.0\n", true),
        ("^searched \\d+$", "searched 12", true),
        (
            "(ToolError|RuntimeError): .*(Access denied|outside allowed)",
            "ToolError: Error: Access denied - x",
            true,
        ),
        ("^\\[1\\]$", "[1]\n", true),
        ("[^a]b", "ab", false),
        ("a.b", "a\nb", false),
        ("^\\/$", "/\n", true),
        ("a.*c", &format!("a{}c", "b".repeat(100_000)), true),
    ];
    for (pattern, text, expected) in cases {
        assert_eq!(
            Pattern::new(pattern).expect("parses").is_match(text),
            expected,
            "/{pattern}/ on {text:.40}"
        );
    }
}
