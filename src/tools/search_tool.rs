//! `search_code`: retrieved passages of the NEC corpus and the team's documents, with citations.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::schema::schema_for;
use super::{parse_args, to_value, Tool, ToolContext, ToolError};
use crate::core::untrusted;
use crate::rag::search::{Retriever, SearchOptions};

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// The question or keywords, in plain words; exact references like "250.122" are looked up directly.
    query: String,
    /// Passages wanted (1-10, default 5).
    #[serde(default)]
    k: Option<usize>,
    /// NEC edition, 2020 or 2023 (default: the project's).
    #[serde(default)]
    edition: Option<i32>,
}

/// Searches the code corpus.
pub struct SearchCode {
    retriever: Retriever,
}

impl SearchCode {
    /// The tool over a retriever.
    pub fn new(retriever: Retriever) -> Self {
        Self { retriever }
    }
}

#[async_trait]
impl Tool for SearchCode {
    fn name(&self) -> &'static str {
        "search_code"
    }
    fn description(&self) -> &'static str {
        "Search the NEC knowledge base (section summaries, NEC tables, the team's own documents) and \
         return passages with their section references. Use it before stating any code requirement, \
         and cite the sections it returns."
    }
    fn schema(&self) -> Value {
        schema_for::<SearchArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: SearchArgs = parse_args(&args)?;
        if a.query.trim().is_empty() {
            return Err(ToolError::InvalidArguments("the query is empty".into()));
        }
        let edition = match a.edition {
            Some(e) if e == 2020 || e == 2023 => Some(e),
            Some(e) => {
                return Err(ToolError::InvalidArguments(format!(
                    "edition {e} is not 2020 or 2023"
                )))
            }
            None => match ctx.project_id {
                Some(p) => ctx
                    .store
                    .project(p)
                    .await?
                    .map(|p| i32::from(p.edition.year())),
                None => None,
            },
        };
        let out = self
            .retriever
            .search(
                &a.query,
                &SearchOptions {
                    k: a.k.unwrap_or(5).clamp(1, 10),
                    edition,
                    workspace: ctx.workspace.clone(),
                },
            )
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let mut passages = to_value(&out.passages)?;
        // Retrieved text is data: fenced and labelled for the model.
        if let Some(list) = passages.as_array_mut() {
            for p in list {
                let source = p
                    .get("source")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if let Some(text) = p.get_mut("text") {
                    let fenced = untrusted::delimit(&source, text.as_str().unwrap_or(""));
                    *text = Value::String(fenced);
                }
            }
        }
        Ok(json!({
            "trust": untrusted::LABEL,
            "method": out.method,
            "passages": passages,
            "note": if out.passages.is_empty() { "nothing relevant enough was found; say so rather than guessing" } else { "cite the sections you use" },
        }))
    }
}
