//! `search_code`: retrieved passages of the NEC corpus and the team's documents, with citations.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::code_basis::basis_json;
use super::schema::schema_for;
use super::{parse_args, Tool, ToolContext, ToolError};
use crate::llm::untrusted;
use crate::nec::units::Edition;
use crate::rag::amendments::{amendment_sources, candidates_for, prefer_local};
use crate::rag::search::{Retriever, SearchOptions};

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// The question or keywords, in plain words; exact references like "250.122" are looked up directly.
    query: String,
    /// Passages wanted (1-10, default 5).
    #[serde(default)]
    k: Option<usize>,
    /// NEC edition, 2017, 2020 or 2023 (default: the one in force for the project).
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
        // The project's code in force decides the edition and which amendments apply.
        let code = ctx.code_in_force().await?;
        let edition = match a.edition {
            Some(e) if Edition::from_year(u16::try_from(e).unwrap_or(0)).is_some() => Some(e),
            Some(e) => {
                return Err(ToolError::InvalidArguments(format!(
                    "edition {e} is not 2017, 2020 or 2023"
                )))
            }
            None => code.as_ref().map(|c| i32::from(c.tables.year())),
        };
        let k = a.k.unwrap_or(5).clamp(1, 10);
        let amendments = amendment_sources(
            ctx.store
                .amendment_documents(ctx.workspace.as_ref())
                .await?,
        );
        let out = self
            .retriever
            .search(
                &a.query,
                &SearchOptions {
                    k: if amendments.is_empty() {
                        k
                    } else {
                        candidates_for(k)
                    },
                    edition,
                    workspace: ctx.workspace.clone(),
                },
            )
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let location = code.as_ref().and_then(|c| c.location.as_ref());
        let mut passages = prefer_local(out.passages, &amendments, location, k);
        // Retrieved text is data: fenced and labelled for the model.
        for p in &mut passages {
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
        Ok(json!({
            "trust": untrusted::LABEL,
            "method": out.method,
            "passages": passages,
            "code_in_force": basis_json(code.as_ref()),
            "note": if passages.is_empty() { "nothing relevant enough was found; say so rather than guessing" } else { "cite the sections you use; a passage with `amendment` is a local amendment: cite it as that jurisdiction's amendment, ahead of the model code where it applies" },
        }))
    }
}
