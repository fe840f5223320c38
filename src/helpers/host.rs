//! The tools of one run with the caller's helpers: the SDK shows them
//! (search, describe, stub), and `save_helper` / `list_helpers` /
//! `delete_helper` are answered here. Tool calls pass through unchanged to
//! the caller's own guarded tools, so a helper never has more power than
//! the code that calls it.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::prelude::{Prelude, prelude};
use super::record::Helper;
use super::{HelperCall, Helpers, Visible};
use codemcp_exec::helpers::{Assembly, SnippetFacts};
use codemcp_exec::{ToolFailure, ToolHost};
use codemcp_sdk::{ResourceCall, Sdk};
use codemcp_store::Owner;

pub struct HelperHost {
    inner: Arc<dyn ToolHost>,
    helpers: Arc<Helpers>,
    owner: Owner,
    /// The snippet as its caller sent it: what `save_helper` cuts from.
    code: Arc<str>,
    /// Its analysis, once the executor has read it (see `SnippetFacts`).
    facts: SnippetFacts,
    sdk: Arc<Sdk>,
    /// The tools without helpers: what a helper's names are checked against.
    plain: Arc<Sdk>,
    names: BTreeSet<String>,
    /// The helpers defined for this run: the sources that may make a call.
    defined: Vec<(String, String)>,
}

/// The snippet a run is assembled for.
pub enum Snippet<'a> {
    /// A new run of this code: the helpers it names are defined first.
    New(&'a str),
    /// A parked run going on: its helpers were defined when it began.
    Resumed {
        code: &'a str,
        prelude: Option<&'a Prelude>,
    },
}

/// What one run needs from the gateway's helpers, run or resumed alike:
/// `inner` (the caller's guarded tools) with `owner`'s helpers around them,
/// and for a new run the helpers its snippet uses, to define first; `inner`
/// alone when the gateway keeps no helpers.
pub async fn assemble(
    helpers: Option<&Arc<Helpers>>,
    owner: Owner,
    snippet: Snippet<'_>,
    inner: Arc<dyn ToolHost>,
) -> Assembly {
    let Some(helpers) = helpers.cloned() else {
        return Assembly::tools(inner);
    };
    let Visible {
        current,
        docs,
        problem,
    } = helpers.visible(&owner).await;
    let plain = inner.sdk();
    let sdk = Arc::new(plain.as_ref().clone().with_helpers(docs));
    let (code, prelude, names) = match snippet {
        Snippet::New(code) => {
            let prelude = prelude(code, &current);
            let names = prelude.as_ref().map(|p| p.names.clone());
            (code, prelude, names)
        }
        Snippet::Resumed { code, prelude } => (code, None, prelude.map(|p| p.names.clone())),
    };
    // A resumed run's helpers are the versions it began with; their
    // sources now are as near as the audit line can tell.
    let defined = names
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| current.get(&n).map(|h| (n, h.source.clone())))
        .collect();
    let facts = SnippetFacts::default();
    let host = HelperHost {
        defined,
        inner,
        helpers,
        owner,
        code: Arc::from(code),
        facts: facts.clone(),
        sdk,
        plain,
        names: current.keys().cloned().collect(),
    };
    Assembly {
        tools: Arc::new(host),
        prelude,
        warnings: problem
            .map(|p| format!("your saved helpers are not available: {p}"))
            .into_iter()
            .collect(),
        snippet: facts,
    }
}

impl HelperHost {
    /// The helper a call of `server`'s `tool` comes from, as far as the
    /// code tells: only a helper defined for the run names its function,
    /// and the snippet itself does not.
    fn caller_of(&self, server: &str, tool: &str) -> Option<String> {
        if self.defined.is_empty() {
            return None;
        }
        let function = self
            .plain
            .functions()
            .iter()
            .find(|f| f.server == server && f.tool == tool)?;
        let name = function.py_name.as_str();
        if super::prelude::mentions(&self.code, name) {
            return None;
        }
        let mut callers = self
            .defined
            .iter()
            .filter(|(_, source)| super::prelude::mentions(source, name));
        match (callers.next(), callers.next()) {
            (Some((helper, _)), None) => Some(helper.clone()),
            _ => None,
        }
    }
}

impl ToolHost for HelperHost {
    fn sdk(&self) -> Arc<Sdk> {
        self.sdk.clone()
    }

    fn call_tool(
        &self,
        engine: &'static str,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let helper = self.caller_of(server, tool);
        self.inner
            .call_tool_via(engine, server, tool, args, helper.as_deref())
    }

    fn resource_call(
        &self,
        engine: &'static str,
        call: ResourceCall,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        self.inner.resource_call(engine, call)
    }

    fn parks(&self, server: &str, tool: &str) -> bool {
        self.inner.parks(server, tool)
    }

    fn approve_helper_save(
        &self,
        engine: &'static str,
        name: &str,
        source: &str,
    ) -> BoxFuture<'static, Result<(), ToolFailure>> {
        self.inner.approve_helper_save(engine, name, source)
    }

    fn helper_call(
        &self,
        engine: &'static str,
        call: HelperCall,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let op = Op {
            inner: self.inner.clone(),
            helpers: self.helpers.clone(),
            owner: self.owner,
            code: self.code.clone(),
            facts: self.facts.clone(),
            plain: self.plain.clone(),
            names: self.names.clone(),
            engine,
        };
        Box::pin(async move {
            match call.function.as_str() {
                "save_helper" => op.save(call).await,
                "list_helpers" => op.list().await,
                "delete_helper" => op.delete(call).await,
                other => Err(failure(format!("{other}() is not a helper function"))),
            }
        })
    }
}

/// One helper function call, with what it needs.
struct Op {
    inner: Arc<dyn ToolHost>,
    helpers: Arc<Helpers>,
    owner: Owner,
    code: Arc<str>,
    facts: SnippetFacts,
    plain: Arc<Sdk>,
    names: BTreeSet<String>,
    engine: &'static str,
}

fn failure(message: String) -> ToolFailure {
    ToolFailure { message }
}

/// Argument `index` or keyword `key`.
fn argument<'a>(call: &'a HelperCall, index: usize, key: &str) -> Option<&'a Value> {
    call.args.get(index).or_else(|| call.kwargs.get(key))
}

impl Op {
    /// Helper `name` cut from the snippet as the run's analysis read it
    /// (its pre-flight check passed: the run ran); read here only when the
    /// run has none (its check was skipped).
    fn extract(
        &self,
        name: &str,
        others: &BTreeSet<String>,
        max_bytes: usize,
    ) -> Result<super::extract::Extracted, super::Refusal> {
        let analysed = self.facts.get().filter(|(code, _)| *code == self.code);
        match analysed
            .as_ref()
            .and_then(|(_, f)| f.definitions.as_deref())
        {
            Some(top) => super::extract::Cut {
                code: &self.code,
                top,
                sdk: Some(&self.plain),
                helpers: others,
                max_bytes,
                checked: true,
            }
            .extract(name),
            None => super::extract::extract(&self.code, name, Some(&self.plain), others, max_bytes),
        }
    }

    async fn save(self, call: HelperCall) -> Result<Value, ToolFailure> {
        let Some(name) = argument(&call, 0, "fn").and_then(Value::as_str) else {
            return Err(failure(
                "save_helper(fn, description=None) needs a function this snippet defines".into(),
            ));
        };
        let description = match argument(&call, 1, "description") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => return Err(failure("save_helper(): description must be a str".into())),
        };
        let bounds = self.helpers.bounds();
        let mut others = self.names.clone();
        others.remove(name);
        let extracted = self
            .extract(name, &others, bounds.max_bytes)
            .map_err(|refusal| failure(format!("save_helper('{name}') refused: {refusal}")))?;
        self.inner
            .approve_helper_save(self.engine, name, &extracted.source)
            .await?;
        let helper = Helper::new(extracted, description, 1);
        let (signature, bytes) = (helper.signature.clone(), helper.source.len());
        let saved = self
            .helpers
            .store()
            .update(&self.owner, |library| {
                if !library.helpers.contains_key(name) && library.helpers.len() >= bounds.max_count {
                    return Err(format!(
                        "save_helper('{name}') refused: you keep {} helpers, the limit (CODEMCP_HELPERS_MAX_COUNT); delete_helper(name) one first",
                        library.helpers.len()
                    ));
                }
                let version = library.put(helper);
                let size = super::LibraryStore::sealed_len(library);
                if size > bounds.max_total_bytes {
                    return Err(format!(
                        "save_helper('{name}') refused: your helpers would take {size} bytes, over the {} bytes allowed (CODEMCP_HELPERS_MAX_TOTAL_BYTES)",
                        bounds.max_total_bytes
                    ));
                }
                Ok(version)
            })
            .await
            .map_err(|e| failure(format!("save_helper('{name}') failed: {e}")))?
            .map_err(failure)?;
        Ok(json!({"name": name, "version": saved, "signature": signature, "bytes": bytes}))
    }

    async fn list(self) -> Result<Value, ToolFailure> {
        let visible = self.helpers.visible(&self.owner).await;
        if let Some(problem) = visible.problem {
            return Err(failure(format!("list_helpers() failed: {problem}")));
        }
        let listed: Vec<Value> = visible
            .docs
            .iter()
            .map(|d| {
                json!({"name": d.name, "signature": d.signature, "summary": d.summary,
                       "version": d.version, "shared": d.shared})
            })
            .collect();
        Ok(Value::Array(listed))
    }

    async fn delete(self, call: HelperCall) -> Result<Value, ToolFailure> {
        let Some(name) = argument(&call, 0, "name").and_then(Value::as_str) else {
            return Err(failure(
                "delete_helper(name: str) needs a helper name".into(),
            ));
        };
        let unknown = format!("no helper named '{name}'; list_helpers() lists yours");
        let removed = self
            .helpers
            .store()
            .update(&self.owner, |library| {
                library.helpers.remove(name).map(|_| ()).ok_or(())
            })
            .await
            .map_err(|e| failure(format!("delete_helper('{name}') failed: {e}")))?;
        match removed {
            Ok(()) => Ok(json!({"deleted": name})),
            Err(()) => Err(failure(unknown)),
        }
    }
}

#[cfg(test)]
mod tests;
