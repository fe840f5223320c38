//! Python names for upstream tools and their parameters.
//!
//! Function names are `normalize(server) + "_" + normalize(tool)`: camelCase and acronyms are
//! split, everything that is not an ASCII letter or digit becomes `_`, all lower case. A name
//! that would start with a digit gets the prefix `n` (`3dprint` → `n3dprint`), so every name is
//! a valid ASCII identifier. Parameter names keep the upstream's spelling whenever it is already
//! a valid identifier, because the upstream expects that spelling back.
//!
//! Two servers' tools can map to one name (`gh` + `issues_create` and `gh_issues` + `create`
//! are both `gh_issues_create`). Then neither has it: each of them is named
//! `normalize(server) + "__" + normalize(tool)` (`gh__issues_create`, `gh_issues__create`),
//! whatever the order of the config or of the tools. Normalized parts never hold `__`, so these
//! names cannot meet a plain name or each other, and they depend only on the tool's own server:
//! adding a server leaves every other function's name as it was, except that a plain name a new
//! server's tool also maps to is withdrawn (a call of it fails; it never reaches the newcomer).

use std::collections::{BTreeSet, HashMap};

use super::RESERVED_NAMES;

/// Python keywords, plus `__debug__`, which Python refuses as a parameter or assignment target.
const PY_KEYWORDS: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "__debug__",
];

/// Prefix for names that would otherwise start with a digit.
const DIGIT_PREFIX: char = 'n';

pub fn is_keyword(name: &str) -> bool {
    PY_KEYWORDS.contains(&name)
}

/// `[A-Za-z_][A-Za-z0-9_]*`: Python identifiers restricted to ASCII.
pub fn is_ascii_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An identifier usable anywhere a Python name is bound (not a keyword, not `__debug__`).
pub fn is_bindable_identifier(name: &str) -> bool {
    is_ascii_identifier(name) && !is_keyword(name)
}

/// snake_case words of `raw`; empty when `raw` has no ASCII letters or digits.
pub fn words(raw: &str) -> Vec<String> {
    let chars: Vec<char> = raw.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            flush(&mut words, &mut current);
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p))
            && starts_new_word(prev, c, chars.get(i + 1).copied())
        {
            flush(&mut words, &mut current);
        }
        current.push(c.to_ascii_lowercase());
    }
    flush(&mut words, &mut current);
    words
}

fn flush(words: &mut Vec<String>, current: &mut String) {
    if !current.is_empty() {
        words.push(std::mem::take(current));
    }
}

/// Word boundaries inside an alphanumeric run: `fetchUser`, `HTTPServer`, `V2Data`.
fn starts_new_word(prev: char, c: char, next: Option<char>) -> bool {
    if !c.is_ascii_uppercase() {
        return false;
    }
    if prev.is_ascii_lowercase() || prev.is_ascii_digit() {
        return true;
    }
    // End of an acronym: the last capital of `HTTPServer` starts `Server`.
    prev.is_ascii_uppercase() && next.is_some_and(|n| n.is_ascii_lowercase())
}

/// snake_case form of `raw`, `tool` when nothing is left, never starting with a digit.
pub fn normalize(raw: &str) -> String {
    let joined = words(raw).join("_");
    if joined.is_empty() {
        return "tool".to_owned();
    }
    prefix_digit(joined)
}

fn prefix_digit(name: String) -> String {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("{DIGIT_PREFIX}{name}")
    } else {
        name
    }
}

/// The base function name for one tool, before collision suffixes.
pub fn function_base_name(server: &str, tool: &str) -> String {
    format!("{}_{}", normalize(server), normalize(tool))
}

/// The name of a tool whose plain name another server's tool maps to as well.
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("{}__{}", normalize(server), normalize(tool))
}

/// Function names for `tools` (`(server, tool)`, in their deterministic order), each with the
/// plain name it lost when more than one server's tools map to that name.
pub fn function_names(tools: &[(&str, &str)]) -> Vec<(String, Option<String>)> {
    let plain: Vec<String> = tools
        .iter()
        .map(|(server, tool)| function_base_name(server, tool))
        .collect();
    let mut servers: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for (name, (server, _)) in plain.iter().zip(tools) {
        servers.entry(name.as_str()).or_default().insert(server);
    }
    let contested = |name: &str| servers.get(name).is_some_and(|s| s.len() > 1);
    let bases: Vec<String> = plain
        .iter()
        .zip(tools)
        .map(|(name, (server, tool))| {
            if contested(name) {
                qualified_name(server, tool)
            } else {
                name.clone()
            }
        })
        .collect();
    assign_unique(&bases)
        .into_iter()
        .zip(plain.iter())
        .map(|(name, plain)| {
            let lost = contested(plain).then(|| plain.clone());
            (name, lost)
        })
        .collect()
}

fn is_taken(name: &str, used: &BTreeSet<String>) -> bool {
    used.contains(name) || RESERVED_NAMES.contains(&name) || is_keyword(name)
}

/// Hands out `base`, `base_2`, `base_3`, … remembering where each base's count stands, so
/// many duplicates of one base cost linear time.
#[derive(Default)]
struct Suffixes {
    next: HashMap<String, u64>,
}

impl Suffixes {
    fn claim(&mut self, base: &str, used: &mut BTreeSet<String>) -> String {
        let n = self.next.entry(base.to_owned()).or_insert(2);
        let mut candidate = format!("{base}_{n}");
        while is_taken(&candidate, used) {
            *n += 1;
            candidate = format!("{base}_{n}");
        }
        *n += 1;
        used.insert(candidate.clone());
        candidate
    }
}

/// Unique names for `bases` (already in their deterministic order). The first holder of each
/// free base keeps it; later duplicates get `_2`, `_3`, … skipping every name in use.
pub fn assign_unique(bases: &[String]) -> Vec<String> {
    let mut used = BTreeSet::new();
    let mut kept: Vec<Option<String>> = bases
        .iter()
        .map(|base| (!is_taken(base, &used) && used.insert(base.clone())).then(|| base.clone()))
        .collect();
    let mut suffixes = Suffixes::default();
    for (slot, base) in kept.iter_mut().zip(bases) {
        if slot.is_none() {
            *slot = Some(suffixes.claim(base, &mut used));
        }
    }
    kept.into_iter().flatten().collect()
}

/// Python names for parameters given their wire names (in schema order). Valid identifiers are
/// kept as they are; the rest are normalized, and keywords get a trailing `_`.
pub fn param_names(wire_names: &[&str]) -> Vec<String> {
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut names: Vec<Option<String>> = wire_names
        .iter()
        .map(|w| {
            (is_bindable_identifier(w) && used.insert((*w).to_owned())).then(|| (*w).to_owned())
        })
        .collect();
    let mut suffixes = Suffixes::default();
    for (slot, wire) in names.iter_mut().zip(wire_names) {
        if slot.is_none() {
            let base = param_base_name(wire);
            let name = if is_taken(&base, &used) {
                suffixes.claim(&base, &mut used)
            } else {
                used.insert(base.clone());
                base
            };
            *slot = Some(name);
        }
    }
    names.into_iter().flatten().collect()
}

fn param_base_name(wire: &str) -> String {
    if is_keyword(wire) {
        return format!("{wire}_");
    }
    if is_ascii_identifier(wire) {
        return wire.to_owned();
    }
    let joined = words(wire).join("_");
    let base = if joined.is_empty() {
        "arg".to_owned()
    } else {
        prefix_digit(joined)
    };
    if is_keyword(&base) {
        format!("{base}_")
    } else {
        base
    }
}

/// `everything_get_sum` → `EverythingGetSum`.
pub fn camel_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fname(server: &str, tool: &str) -> String {
        function_base_name(server, tool)
    }

    #[test]
    fn design_examples() {
        assert_eq!(fname("everything", "get-sum"), "everything_get_sum");
        assert_eq!(
            fname("catalog", "fetchUserProfile"),
            "catalog_fetch_user_profile"
        );
        assert_eq!(fname("catalog", "v2.lookup"), "catalog_v2_lookup");
        assert_eq!(fname("catalog", "Send_Email"), "catalog_send_email");
    }

    #[test]
    fn camel_case_and_acronyms() {
        assert_eq!(normalize("fetchUserProfile"), "fetch_user_profile");
        assert_eq!(normalize("HTTPServer"), "http_server");
        assert_eq!(normalize("getV2Data"), "get_v2_data");
        assert_eq!(normalize("getHTTPResponseCode"), "get_http_response_code");
        assert_eq!(normalize("parseURL"), "parse_url");
        assert_eq!(normalize("OAuth2Token"), "o_auth2_token");
        assert_eq!(normalize("list__items--now"), "list_items_now");
        assert_eq!(normalize("__private__"), "private");
        assert_eq!(normalize("ALLCAPS"), "allcaps");
    }

    #[test]
    fn unicode_and_empty() {
        assert_eq!(normalize("météo"), "m_t_o");
        assert_eq!(normalize("天气"), "tool");
        assert_eq!(normalize(""), "tool");
        assert_eq!(normalize("---"), "tool");
        assert_eq!(fname("", ""), "tool_tool");
        assert_eq!(fname("srv", "🚀launch"), "srv_launch");
    }

    #[test]
    fn leading_digit_gets_prefix() {
        assert_eq!(normalize("3dPrint"), "n3d_print");
        assert_eq!(fname("1password", "get"), "n1password_get");
        assert!(is_ascii_identifier(&fname("1password", "get")));
    }

    #[test]
    fn collisions_get_suffixes() {
        let bases: Vec<String> = ["a_b", "a_b", "a_b_2", "c", "a_b"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            assign_unique(&bases),
            ["a_b", "a_b_3", "a_b_2", "c", "a_b_4"]
        );
    }

    #[test]
    fn reserved_names_and_keywords_are_never_produced() {
        let bases: Vec<String> = [
            "search_tools",
            "describe_tool",
            "ToolError",
            "None",
            "class",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            assign_unique(&bases),
            [
                "search_tools_2",
                "describe_tool_2",
                "ToolError_2",
                "None_2",
                "class_2"
            ]
        );
        assert_eq!(fname("search", "tools"), "search_tools");
    }

    #[test]
    fn param_names_keep_valid_identifiers() {
        assert_eq!(
            param_names(&["userId", "user-id", "a b"]),
            ["userId", "user_id", "a_b"]
        );
        assert_eq!(param_names(&["_private", "X"]), ["_private", "X"]);
    }

    #[test]
    fn param_keywords_get_trailing_underscore() {
        assert_eq!(
            param_names(&["from", "class", "lambda", "None", "True", "__debug__"]),
            ["from_", "class_", "lambda_", "None_", "True_", "__debug___"]
        );
        assert_eq!(param_names(&["match", "type", "_"]), ["match", "type", "_"]);
    }

    #[test]
    fn param_collisions_prefer_the_original_spelling() {
        assert_eq!(
            param_names(&["user-id", "user_id"]),
            ["user_id_2", "user_id"]
        );
        assert_eq!(param_names(&["from", "from_"]), ["from__2", "from_"]);
        assert_eq!(param_names(&["", "-", "arg"]), ["arg_2", "arg_3", "arg"]);
        assert_eq!(param_names(&["2fa", "é"]), ["n2fa", "arg"]);
    }

    #[test]
    fn many_duplicates_are_cheap() {
        let bases = vec!["same".to_owned(); 20_000];
        let names = assign_unique(&bases);
        assert_eq!(names.last().map(String::as_str), Some("same_20000"));
        let wires = vec![""; 20_000];
        assert_eq!(
            param_names(&wires).last().map(String::as_str),
            Some("arg_20000")
        );
    }

    #[test]
    fn contested_names_go_to_no_server() {
        let tools = [
            ("gh", "issues_create"),
            ("gh_issues", "create"),
            ("gh", "list"),
        ];
        let lost = Some("gh_issues_create".to_owned());
        assert_eq!(
            function_names(&tools),
            [
                ("gh__issues_create".to_owned(), lost.clone()),
                ("gh_issues__create".to_owned(), lost),
                ("gh_list".to_owned(), None),
            ]
        );
        // One server's own duplicates keep the plain name and suffixes.
        assert_eq!(
            function_names(&[("a", "b-c"), ("a", "b_c")]),
            [("a_b_c".to_owned(), None), ("a_b_c_2".to_owned(), None)]
        );
    }

    #[test]
    fn camel_case_class_names() {
        assert_eq!(camel_case("everything_get_sum"), "EverythingGetSum");
        assert_eq!(camel_case("n3d_print_2"), "N3dPrint2");
    }
}
