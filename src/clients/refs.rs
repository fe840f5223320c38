//! Environment references, turned from each client's syntax into one that
//! codemcp's loader expands (`${VAR}`, `${VAR:-default}`, `{env:VAR}`; see
//! `config::interpolate`). Nothing is ever expanded here: a reference stays a
//! reference, a literal stays a literal.

/// How a client writes references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `${VAR}` or `{env:VAR}`, which codemcp reads as they are (Claude
    /// Code, opencode, codemcp itself; Claude Desktop expands nothing).
    Native,
    /// VS Code, Cursor and Windsurf: `${env:VAR}`, `${userHome}`, and
    /// VS Code's `${input:ID}` prompts.
    Editor,
    /// Gemini CLI: `$VAR` or `${VAR}`.
    Shell,
}

/// Rewrites the references in `text` into codemcp's syntax; what changed
/// in a way the user should know is pushed to `notes`.
pub fn translate(text: &str, style: Style, notes: &mut Vec<String>) -> String {
    match style {
        Style::Native => text.to_owned(),
        Style::Editor => editor(text, notes),
        Style::Shell => shell(text),
    }
}

/// Whether `text` holds a reference codemcp would expand.
#[must_use]
pub fn has_reference(text: &str) -> bool {
    // Every reference, expanded to nothing, changes the text; nothing else does.
    crate::config::interpolate::interpolate(text, &|_| Some(String::new())).as_deref() != Ok(text)
}

/// The names of the variables `text` refers to, in order.
#[must_use]
pub fn variables(text: &str) -> Vec<String> {
    let seen = std::cell::RefCell::new(Vec::new());
    let _ = crate::config::interpolate::interpolate(text, &|name| {
        seen.borrow_mut().push(name.to_owned());
        Some(String::new())
    });
    seen.into_inner()
}

fn editor(text: &str, notes: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        out.push_str(&editor_variable(inner, notes));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn editor_variable(inner: &str, notes: &mut Vec<String>) -> String {
    if let Some(var) = inner.strip_prefix("env:") {
        return format!("${{{var}}}");
    }
    if inner == "userHome" {
        return "${HOME}".to_owned();
    }
    if let Some(id) = inner.strip_prefix("input:") {
        let var = env_name(id);
        notes.push(format!(
            "${{input:{id}}} (a VS Code prompt) becomes ${{{var}}}: set {var} in codemcp's environment"
        ));
        return format!("${{{var}}}");
    }
    notes.push(format!(
        "${{{inner}}} is kept as written: codemcp reads it as the environment variable {inner} \
         (the server is skipped at start while that is unset)"
    ));
    format!("${{{inner}}}")
}

/// An input id as an environment variable name: `github-token` → `GITHUB_TOKEN`.
fn env_name(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) || name.is_empty() {
        format!("_{name}")
    } else {
        name
    }
}

/// `$VAR` → `${VAR}`; `${VAR}` and everything else stay.
fn shell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..len];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&format!("${{{name}}}"));
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn editor_text(text: &str) -> (String, Vec<String>) {
        let mut notes = Vec::new();
        (translate(text, Style::Editor, &mut notes), notes)
    }

    #[test]
    fn editor_references_become_codemcp_references() {
        assert_eq!(
            editor_text("Bearer ${env:GH_TOKEN}").0,
            "Bearer ${GH_TOKEN}"
        );
        assert_eq!(editor_text("${userHome}/bin").0, "${HOME}/bin");
        let (text, notes) = editor_text("${input:github-token}");
        assert_eq!(text, "${GITHUB_TOKEN}");
        assert!(notes[0].contains("set GITHUB_TOKEN"), "{notes:?}");
        let (text, notes) = editor_text("${workspaceFolder}/x");
        assert_eq!(text, "${workspaceFolder}/x");
        assert_eq!(notes.len(), 1);
        assert_eq!(editor_text("plain $5 {x}").0, "plain $5 {x}");
    }

    #[test]
    fn shell_references_get_braces() {
        assert_eq!(shell("$TOKEN"), "${TOKEN}");
        assert_eq!(shell("a${TOKEN}b $X_1/c"), "a${TOKEN}b ${X_1}/c");
        assert_eq!(shell("cost $5 $"), "cost $5 $");
    }

    #[test]
    fn references_are_recognised_and_literals_are_not() {
        assert!(has_reference("Bearer ${TOKEN}"));
        assert!(has_reference("{env:TOKEN}"));
        assert!(!has_reference("ghp_literal"));
        assert!(!has_reference("$TOKEN"));
        assert_eq!(variables("${A}:{env:B}/${C:-x}$D"), ["A", "B", "C"]);
    }
}
