//! Retrieval evaluation on the repository's question set: recall@1, recall@5 and MRR.

use serde::{Deserialize, Serialize};

use super::search::{Retriever, SearchError, SearchOptions};
use super::sections::related;

/// The evaluation questions shipped in the repository.
pub const QUESTIONS: &str = include_str!("eval/questions.toml");

/// One question and the sections that answer it.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// As a person would type it.
    pub text: String,
    /// Canonical references that answer it.
    pub sections: Vec<String>,
}

#[derive(Deserialize)]
struct QuestionFile {
    question: Vec<Question>,
}

/// Parses the shipped question set.
pub fn questions() -> Result<Vec<Question>, String> {
    toml::from_str::<QuestionFile>(QUESTIONS)
        .map(|f| f.question)
        .map_err(|e| format!("eval/questions.toml: {e}"))
}

/// Scores of one retriever.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Retrieval method reported by the retriever.
    pub method: String,
    /// Questions asked.
    pub questions: usize,
    /// Share with a relevant passage first.
    pub recall_at_1: f64,
    /// Share with a relevant passage in the top 5.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the first relevant passage (top 10).
    pub mrr: f64,
    /// Questions missed at 5, for inspection.
    pub misses: Vec<String>,
}

/// Runs every question through `retriever`.
pub async fn evaluate(
    retriever: &Retriever,
    questions: &[Question],
) -> Result<EvalReport, SearchError> {
    let (mut r1, mut r5, mut mrr) = (0usize, 0usize, 0.0f64);
    let mut misses = Vec::new();
    let mut method = String::new();
    for q in questions {
        let out = retriever
            .search(
                &q.text,
                &SearchOptions {
                    k: 10,
                    ..Default::default()
                },
            )
            .await?;
        method = out.method.clone();
        let rank = out.passages.iter().position(|p| {
            p.section
                .as_deref()
                .is_some_and(|s| q.sections.iter().any(|w| related(w, s)))
        });
        match rank {
            Some(0) => {
                r1 += 1;
                r5 += 1;
            }
            Some(r) if r < 5 => r5 += 1,
            _ => misses.push(q.text.clone()),
        }
        if let Some(r) = rank {
            mrr += 1.0 / (r as f64 + 1.0);
        }
    }
    let n = questions.len().max(1) as f64;
    Ok(EvalReport {
        method,
        questions: questions.len(),
        recall_at_1: r1 as f64 / n,
        recall_at_5: r5 as f64 / n,
        mrr: mrr / n,
        misses,
    })
}
