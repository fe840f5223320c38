//! What agent code may do with each upstream tool: `allow` (call it), `ask`
//! (ask the human first) or `deny` (the tool does not exist for the agent).
//!
//! A server entry's `"policy"` maps tool names or globs, as the upstream spells
//! them, to a decision; the most specific rule wins (an exact name over any
//! glob, then the glob with more literal characters). A tool no rule matches
//! follows the annotations its server sent, else the gateway's default.
//!
//! The same rules govern a server's resources and prompts by the MCP method
//! names `resources/list`, `resources/read`, `prompts/list` and `prompts/get`
//! (`"resources/*": "deny"`); with no rule matching they are allowed, as
//! reading them changes nothing.

use std::fmt;
use std::str::FromStr;

use globset::{GlobBuilder, GlobMatcher};
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// The policy names a server's `"policy"` rules can match, one per MCP method
/// (`"resources/*": "deny"` turns a server's resources off).
pub const POLICY_NAMES: &[&str] = &[
    "resources/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
];

/// One decision, as the config file and `CODEMCP_POLICY_DEFAULT` spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Decision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "allow" => Ok(Decision::Allow),
            "ask" => Ok(Decision::Ask),
            "deny" => Ok(Decision::Deny),
            other => Err(format!(
                "unknown policy \"{other}\"; expected \"allow\", \"ask\" or \"deny\""
            )),
        }
    }
}

/// One rule of a server's policy.
#[derive(Debug, Clone)]
struct Rule {
    pattern: String,
    /// `None` for an exact name.
    glob: Option<GlobMatcher>,
    decision: Decision,
}

impl Rule {
    fn new(pattern: String, decision: Decision) -> Result<Self, String> {
        let is_glob = pattern.contains(['*', '?', '[', '{']);
        let glob = is_glob
            .then(|| {
                GlobBuilder::new(&pattern)
                    .literal_separator(false)
                    .build()
                    .map(|g| g.compile_matcher())
                    .map_err(|e| format!("policy pattern \"{pattern}\": {}", e.kind()))
            })
            .transpose()?;
        Ok(Self {
            pattern,
            glob,
            decision,
        })
    }

    fn matches(&self, tool: &str) -> bool {
        match &self.glob {
            Some(glob) => glob.is_match(tool),
            None => self.pattern == tool,
        }
    }

    /// Higher wins: an exact name, then more literal characters.
    fn specificity(&self) -> (bool, usize) {
        let literal = self
            .pattern
            .chars()
            .filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | ','))
            .count();
        (self.glob.is_none(), literal)
    }
}

/// A server's `"policy"` object.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    rules: Vec<Rule>,
}

impl PartialEq for Rules {
    fn eq(&self, other: &Self) -> bool {
        self.rules.len() == other.rules.len()
            && self
                .rules
                .iter()
                .zip(&other.rules)
                .all(|(a, b)| a.pattern == b.pattern && a.decision == b.decision)
    }
}

impl Eq for Rules {}

impl Rules {
    /// Rules from `(pattern, decision)` pairs.
    ///
    /// # Errors
    /// A pattern that is not a valid glob.
    pub fn new(pairs: impl IntoIterator<Item = (String, Decision)>) -> Result<Self, String> {
        let rules = pairs
            .into_iter()
            .map(|(pattern, decision)| Rule::new(pattern, decision))
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The decision of the most specific rule matching `tool`, if any.
    pub fn decide(&self, tool: &str) -> Option<Decision> {
        self.rules
            .iter()
            .filter(|rule| rule.matches(tool))
            .max_by_key(|rule| rule.specificity())
            .map(|rule| rule.decision)
    }

    /// The patterns that match none of `tools` (worth a warning: a typo).
    /// The resource and prompt methods (`resources/read`, …) always count
    /// as there: what a server offers is only known when it is asked.
    pub fn unmatched<'a>(&'a self, tools: &[&str]) -> Vec<&'a str> {
        let methods = POLICY_NAMES;
        self.rules
            .iter()
            .filter(|rule| !tools.iter().chain(methods).any(|tool| rule.matches(tool)))
            .map(|rule| rule.pattern.as_str())
            .collect()
    }
}

/// One principal's rules over the operator's, by server name: a rule that
/// matches decides, else the server's own policy does.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Overrides {
    servers: std::collections::BTreeMap<String, Rules>,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        self.servers.values().all(Rules::is_empty)
    }

    /// `server.tool`'s decision for this principal, given the operator's.
    pub fn apply(&self, server: &str, tool: &str, operator: Decision) -> Decision {
        self.servers
            .get(server)
            .and_then(|rules| rules.decide(tool))
            .unwrap_or(operator)
    }

    /// The servers named, to warn about ones the gateway does not have.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }
}

/// What the server's annotations say, when no rule matched: read-only tools
/// are allowed, tools that declare themselves destructive are asked about,
/// and every other tool gets `default` (the spec's own defaults would call
/// every unannotated tool destructive).
pub fn effective(
    rules: &Rules,
    tool: &str,
    read_only: bool,
    destructive: bool,
    default: Decision,
) -> Decision {
    rules.decide(tool).unwrap_or(if read_only {
        Decision::Allow
    } else if destructive {
        Decision::Ask
    } else {
        default
    })
}

// The visitors refuse a bad value while the reader is still at it, so the
// error's line and column point at the value itself.
impl<'de> serde::Deserialize<'de> for Decision {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(DecisionVisitor)
    }
}

struct DecisionVisitor;

impl Visitor<'_> for DecisionVisitor {
    type Value = Decision;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"allow\", \"ask\" or \"deny\"")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Decision, E> {
        text.parse().map_err(E::custom)
    }
}

/// A rule's pattern, checked as it is read.
struct Pattern(String, Option<GlobMatcher>);

impl<'de> serde::Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(PatternVisitor)
    }
}

struct PatternVisitor;

impl Visitor<'_> for PatternVisitor {
    type Value = Pattern;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool name or glob")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Pattern, E> {
        if text.is_empty() {
            return Err(E::custom("a policy rule names an empty tool pattern"));
        }
        let rule = Rule::new(text.to_owned(), Decision::Allow).map_err(E::custom)?;
        Ok(Pattern(rule.pattern, rule.glob))
    }
}

/// Reads `{"pattern": "decision", ...}`.
impl<'de> serde::Deserialize<'de> for Rules {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RulesVisitor)
    }
}

struct RulesVisitor;

impl<'de> Visitor<'de> for RulesVisitor {
    type Value = Rules;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"policy\" to be an object mapping tool names or globs to \"allow\", \"ask\" or \"deny\"")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Rules, A::Error> {
        let mut rules = Vec::new();
        while let Some(Pattern(pattern, glob)) = map.next_key()? {
            let decision: Decision = map.next_value()?;
            rules.push(Rule {
                pattern,
                glob,
                decision,
            });
        }
        Ok(Rules { rules })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(pairs: &[(&str, Decision)]) -> Rules {
        Rules::new(pairs.iter().map(|(p, d)| ((*p).to_owned(), *d))).unwrap()
    }

    #[test]
    fn the_most_specific_rule_wins() {
        let r = rules(&[
            ("*", Decision::Deny),
            ("write_*", Decision::Ask),
            ("write_file", Decision::Allow),
            ("read_*", Decision::Allow),
        ]);
        assert_eq!(r.decide("write_file"), Some(Decision::Allow));
        assert_eq!(r.decide("write_other"), Some(Decision::Ask));
        assert_eq!(r.decide("read_text"), Some(Decision::Allow));
        assert_eq!(r.decide("delete"), Some(Decision::Deny));
        assert_eq!(rules(&[]).decide("x"), None);
        // Resource and prompt methods by their MCP names; `*` spans the `/`.
        assert_eq!(r.decide("resources/read"), Some(Decision::Deny));
        let methods = rules(&[
            ("resources/*", Decision::Deny),
            ("prompts/get", Decision::Ask),
        ]);
        assert_eq!(methods.decide("resources/list"), Some(Decision::Deny));
        assert_eq!(methods.decide("prompts/get"), Some(Decision::Ask));
        assert_eq!(methods.decide("prompts/list"), None);
    }

    #[test]
    fn a_principals_override_wins_only_where_it_matches() {
        let o: Overrides =
            serde_json::from_str(r#"{"fs": {"write_*": "deny", "read_file": "allow"}}"#).unwrap();
        assert_eq!(o.apply("fs", "write_file", Decision::Allow), Decision::Deny);
        assert_eq!(o.apply("fs", "read_file", Decision::Deny), Decision::Allow);
        assert_eq!(o.apply("fs", "list", Decision::Ask), Decision::Ask);
        assert_eq!(o.apply("git", "write_x", Decision::Allow), Decision::Allow);
        assert!(!o.is_empty());
        assert!(Overrides::default().is_empty());
    }

    #[test]
    fn annotations_decide_only_where_no_rule_matches() {
        let none = rules(&[]);
        assert_eq!(
            effective(&none, "t", true, false, Decision::Ask),
            Decision::Allow
        );
        assert_eq!(
            effective(&none, "t", false, true, Decision::Allow),
            Decision::Ask
        );
        assert_eq!(
            effective(&none, "t", false, false, Decision::Deny),
            Decision::Deny
        );
        let allow = rules(&[("t", Decision::Allow)]);
        assert_eq!(
            effective(&allow, "t", false, true, Decision::Deny),
            Decision::Allow
        );
    }

    #[test]
    fn a_misspelt_decision_or_glob_is_refused_with_its_position() {
        let err = serde_json::from_str::<Rules>("{\n  \"x\": \"alow\"\n}").unwrap_err();
        assert_eq!(
            (err.line(), err.to_string().contains("expected \"allow\"")),
            (2, true)
        );
        let err = serde_json::from_str::<Rules>("{\n\n \"a[\": \"deny\"}").unwrap_err();
        assert_eq!(err.line(), 3, "{err}");
        assert!(err.to_string().contains("policy pattern \"a[\""), "{err}");
        assert!(serde_json::from_str::<Rules>("[\"x\"]").is_err());
    }

    #[test]
    fn rules_that_match_no_tool_are_named() {
        let r = rules(&[
            ("read_*", Decision::Allow),
            ("wirte_file", Decision::Deny),
            ("resources/*", Decision::Deny),
            ("prompts/get", Decision::Ask),
        ]);
        assert_eq!(r.unmatched(&["read_text", "write_file"]), ["wirte_file"]);
    }
}
