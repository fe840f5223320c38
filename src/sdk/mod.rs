// TEMPORARY STUB: replaced by the real sdk module.
use serde_json::Value;
pub struct Sdk { fns: Vec<SdkFunction> }
pub struct SdkFunction { pub py_name: String, pub server: String, pub tool: String, pub summary: String }
#[derive(serde::Serialize)]
pub struct SearchHit { pub name: String }
#[derive(Debug, thiserror::Error)]
#[error("bind")]
pub struct BindError;
impl Sdk {
    pub fn build(_t: &[crate::tooldef::ToolDef]) -> Sdk { Sdk { fns: vec![] } }
    pub fn get(&self, n: &str) -> Option<&SdkFunction> { self.fns.iter().find(|f| f.py_name == n) }
    pub fn search(&self, _q: &str, _l: usize) -> Vec<SearchHit> { vec![] }
    pub fn describe(&self, _n: &str) -> Option<Value> { None }
    pub fn description(&self, _b: usize) -> String { String::new() }
    pub fn stub(&self) -> String { String::new() }
}
impl SdkFunction {
    pub fn bind_args(&self, _p: Vec<Value>, _k: Vec<(String, Value)>) -> Result<serde_json::Map<String, Value>, BindError> { Ok(Default::default()) }
}
