//! Helpers as MCP skills (SEP-2640): each helper the caller may call is a
//! skill `skill://<name>/SKILL.md` saying what it does, its signature and
//! an example call in `execute_python`; the same text is a resource, for
//! clients without the extension. Skill names are the helper's name in
//! lower case with `-` for `_`, as the spec wants.

use rmcp::model::{Skill, SkillFrontmatter, SkillResource, SkillResources};

use codemcp_sdk::HelperDoc;

/// The skill name of helper `name`.
pub fn skill_name(name: &str) -> String {
    name.trim_matches('_').to_lowercase().replace('_', "-")
}

pub fn uri(doc: &HelperDoc) -> String {
    format!("skill://{}/SKILL.md", skill_name(&doc.name))
}

/// The helper whose `SKILL.md` `uri` names.
pub fn find<'a>(docs: &'a [HelperDoc], uri: &str) -> Option<&'a HelperDoc> {
    docs.iter().find(|d| self::uri(d) == uri)
}

fn description(doc: &HelperDoc) -> String {
    if doc.summary.is_empty() {
        format!("A saved codemcp helper: {}", doc.signature)
    } else {
        doc.summary.clone()
    }
}

/// The `SKILL.md` of a helper.
pub fn skill_md(doc: &HelperDoc) -> String {
    let description = description(doc).replace('\n', " ");
    let kind = if doc.shared {
        "a shared helper"
    } else {
        "your saved helper"
    };
    format!(
        "---\nname: {name}\ndescription: {description}\n---\n\n# {fn_name}\n\n{description}\n\n\
         `{fn_name}` is {kind} in codemcp: inside the `execute_python` tool it is an ordinary \
         Python function, callable by name.\n\n## Signature\n\n```python\n{signature}\n```\n\n{doc}\n\n\
         ## Example\n\nCall `execute_python` with this code:\n\n```python\nresult = {fn_name}(...)  \
         # arguments as in the signature\nresult\n```\n\n`describe_tool('{fn_name}')` shows its source.\n",
        name = skill_name(&doc.name),
        fn_name = doc.name,
        signature = doc.signature,
        doc = doc.doc,
    )
}

/// The skill of a helper.
pub fn skill(doc: &HelperDoc) -> Skill {
    let uri = uri(doc);
    let file = SkillResource::from_bytes(uri.clone(), skill_md(doc).as_bytes());
    Skill::new(
        uri,
        SkillFrontmatter::new(skill_name(&doc.name), description(doc)),
        SkillResources::Files(vec![file]),
    )
}

/// The skills of `docs` that the spec accepts (a name it refuses is left out).
pub fn skills(docs: &[HelperDoc]) -> Vec<Skill> {
    docs.iter()
        .map(skill)
        .filter(|s| s.validate().is_ok())
        .collect()
}
