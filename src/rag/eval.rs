//! Retrieval evaluation: recall@1, recall@5 and MRR on a question set, and how often questions
//! outside the NEC get nothing at all.
//!
//! The sets ship with the binary: `corpus` (written with the summaries), `chat` (written apart
//! from them, the way electricians type: abbreviations, misspellings, out-of-scope
//! questions), the held-out sets of the same kind, and `gaps` (the articles the corpus once
//! lacked); docs/retrieval.md says how each was written and what it may be used for.

use serde::{Deserialize, Serialize};

use super::search::{Retriever, SearchError, SearchOptions};
use super::sections::related;

/// The evaluation questions written with the corpus.
pub const QUESTIONS: &str = include_str!("eval/questions.toml");
/// The chat-style evaluation questions, written apart from the corpus.
pub const CHAT_QUESTIONS: &str = include_str!("eval/chat.toml");
/// A held-out chat-style set, never used to choose thresholds.
pub const HELDOUT_QUESTIONS: &str = include_str!("eval/heldout.toml");
/// A second held-out set, written before the current scope rule and never used to tune it.
pub const HELDOUT2_QUESTIONS: &str = include_str!("eval/heldout2.toml");
/// A third held-out set, written before the full-text scope change it measures.
pub const HELDOUT3_QUESTIONS: &str = include_str!("eval/heldout3.toml");
/// Questions on the articles the corpus lacked and look-alike out-of-scope questions,
/// written before the summaries that answer them.
pub const GAPS_QUESTIONS: &str = include_str!("eval/gaps.toml");

/// One question and the sections that answer it.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// As a person would type it.
    pub text: String,
    /// Canonical references that answer it.
    pub sections: Vec<String>,
}

/// A question outside the code, which should get no passage.
#[derive(Debug, Clone, Deserialize)]
pub struct OutOfScope {
    /// As a person would type it.
    pub text: String,
}

/// A question set.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct QuestionSet {
    /// Answerable questions.
    #[serde(default, rename = "question")]
    pub questions: Vec<Question>,
    /// Questions that must get nothing.
    #[serde(default)]
    pub out_of_scope: Vec<OutOfScope>,
}

/// Which shipped set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalSet {
    /// `eval/questions.toml`.
    Corpus,
    /// `eval/chat.toml`.
    Chat,
    /// `eval/heldout.toml`.
    Heldout,
    /// `eval/heldout2.toml`.
    Heldout2,
    /// `eval/heldout3.toml`.
    Heldout3,
    /// `eval/gaps.toml`.
    Gaps,
}

impl std::str::FromStr for EvalSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "corpus" => Ok(Self::Corpus),
            "chat" => Ok(Self::Chat),
            "heldout" => Ok(Self::Heldout),
            "heldout2" => Ok(Self::Heldout2),
            "heldout3" => Ok(Self::Heldout3),
            "gaps" => Ok(Self::Gaps),
            other => Err(format!(
                "unknown question set {other:?} (corpus, chat, heldout, heldout2, heldout3 or gaps)"
            )),
        }
    }
}

/// Parses a shipped set.
pub fn load(set: EvalSet) -> Result<QuestionSet, String> {
    let (name, text) = match set {
        EvalSet::Corpus => ("eval/questions.toml", QUESTIONS),
        EvalSet::Chat => ("eval/chat.toml", CHAT_QUESTIONS),
        EvalSet::Heldout => ("eval/heldout.toml", HELDOUT_QUESTIONS),
        EvalSet::Heldout2 => ("eval/heldout2.toml", HELDOUT2_QUESTIONS),
        EvalSet::Heldout3 => ("eval/heldout3.toml", HELDOUT3_QUESTIONS),
        EvalSet::Gaps => ("eval/gaps.toml", GAPS_QUESTIONS),
    };
    toml::from_str::<QuestionSet>(text).map_err(|e| format!("{name}: {e}"))
}

/// Parses the corpus set's answerable questions.
pub fn questions() -> Result<Vec<Question>, String> {
    load(EvalSet::Corpus).map(|s| s.questions)
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
    /// Questions missed at 5, with the rank of the first relevant passage (if any in the
    /// top 10) and what the scope rule weighed, for inspection.
    pub misses: Vec<String>,
    /// Out-of-scope questions asked.
    pub out_of_scope: usize,
    /// Out-of-scope questions that got nothing (as they should).
    pub refused: usize,
    /// Out-of-scope questions that got passages, with the first passage's section and what
    /// the scope rule weighed.
    pub noise: Vec<String>,
}

/// Runs every answerable question through `retriever`.
pub async fn evaluate(
    retriever: &Retriever,
    questions: &[Question],
) -> Result<EvalReport, SearchError> {
    evaluate_set(
        retriever,
        &QuestionSet {
            questions: questions.to_vec(),
            out_of_scope: Vec::new(),
        },
    )
    .await
}

/// Runs a whole set through `retriever`.
pub async fn evaluate_set(
    retriever: &Retriever,
    set: &QuestionSet,
) -> Result<EvalReport, SearchError> {
    let (mut r1, mut r5, mut mrr) = (0usize, 0usize, 0.0f64);
    let mut misses = Vec::new();
    let mut method = String::new();
    let opts = SearchOptions {
        k: 10,
        ..Default::default()
    };
    for q in &set.questions {
        let out = retriever.search(&q.text, &opts).await?;
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
            Some(r) => misses.push(format!("{} (rank {}, {})", q.text, r + 1, out.evidence)),
            None if out.passages.is_empty() => {
                misses.push(format!("{} (nothing, {})", q.text, out.evidence))
            }
            None => misses.push(format!("{} (not in the top 10, {})", q.text, out.evidence)),
        }
        if let Some(r) = rank {
            mrr += 1.0 / (r as f64 + 1.0);
        }
    }
    let mut refused = 0;
    let mut noise = Vec::new();
    for q in &set.out_of_scope {
        let out = retriever.search(&q.text, &opts).await?;
        match out.passages.first() {
            None => refused += 1,
            Some(p) => noise.push(format!(
                "{} -> {} ({})",
                q.text,
                p.section.as_deref().unwrap_or(&p.heading),
                out.evidence
            )),
        }
    }
    let n = set.questions.len().max(1) as f64;
    Ok(EvalReport {
        method,
        questions: set.questions.len(),
        recall_at_1: r1 as f64 / n,
        recall_at_5: r5 as f64 / n,
        mrr: mrr / n,
        misses,
        out_of_scope: set.out_of_scope.len(),
        refused,
        noise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every section a set expects exists in the shipped corpus, so a miss is a retrieval
    /// failure and never a typo in the set.
    #[test]
    fn both_sets_parse_and_name_shipped_sections() {
        let mut shipped: Vec<String> = super::super::corpus::summaries()
            .expect("summaries")
            .into_iter()
            .map(|s| s.section)
            .collect();
        shipped.extend(
            super::super::corpus::table_chunks()
                .expect("tables")
                .into_iter()
                .filter_map(|c| c.section),
        );
        for set in [
            EvalSet::Corpus,
            EvalSet::Chat,
            EvalSet::Heldout,
            EvalSet::Heldout2,
            EvalSet::Heldout3,
            EvalSet::Gaps,
        ] {
            let s = load(set).expect("parses");
            assert!(!s.questions.is_empty());
            for q in &s.questions {
                for want in &q.sections {
                    assert!(
                        shipped.iter().any(|s| related(want, s)),
                        "{set:?}: {want} of {:?} is not in the corpus",
                        q.text
                    );
                }
            }
        }
        let chat = load(EvalSet::Chat).expect("chat");
        assert!(chat.questions.len() >= 80, "{}", chat.questions.len());
        assert!(chat.out_of_scope.len() >= 10);
        let heldout = load(EvalSet::Heldout).expect("heldout");
        assert!(heldout.questions.len() >= 20, "{}", heldout.questions.len());
        assert!(heldout.out_of_scope.len() >= 20);
        // Held out means no question of it is also in the tuning set.
        for q in heldout.questions.iter().map(|q| &q.text) {
            assert!(chat.questions.iter().all(|c| &c.text != q), "{q}");
        }
        for q in heldout.out_of_scope.iter().map(|q| &q.text) {
            assert!(chat.out_of_scope.iter().all(|c| &c.text != q), "{q}");
        }
        // The second held-out set is larger and shares no question with the other sets.
        let heldout2 = load(EvalSet::Heldout2).expect("heldout2");
        assert!(
            heldout2.questions.len() >= 40,
            "{}",
            heldout2.questions.len()
        );
        assert!(heldout2.out_of_scope.len() >= 40);
        let earlier: Vec<String> = [EvalSet::Corpus, EvalSet::Chat, EvalSet::Heldout]
            .iter()
            .flat_map(|&s| {
                let s = load(s).expect("parses");
                s.questions
                    .into_iter()
                    .map(|q| q.text)
                    .chain(s.out_of_scope.into_iter().map(|q| q.text))
                    .collect::<Vec<_>>()
            })
            .collect();
        for q in heldout2
            .questions
            .iter()
            .map(|q| &q.text)
            .chain(heldout2.out_of_scope.iter().map(|q| &q.text))
        {
            assert!(!earlier.contains(q), "{q}");
        }
        // The third one shares no question with any earlier set either.
        let heldout3 = load(EvalSet::Heldout3).expect("heldout3");
        assert!(heldout3.questions.len() >= 60);
        assert!(heldout3.out_of_scope.len() >= 40);
        let earlier: Vec<String> = earlier
            .into_iter()
            .chain(heldout2.questions.iter().map(|q| q.text.clone()))
            .chain(heldout2.out_of_scope.iter().map(|q| q.text.clone()))
            .collect();
        for q in heldout3
            .questions
            .iter()
            .map(|q| &q.text)
            .chain(heldout3.out_of_scope.iter().map(|q| &q.text))
        {
            assert!(!earlier.contains(q), "{q}");
        }
        // The gaps set shares no question with any earlier set either.
        let gaps = load(EvalSet::Gaps).expect("gaps");
        assert!(gaps.questions.len() >= 30);
        assert!(gaps.out_of_scope.len() >= 20);
        let earlier: Vec<String> = earlier
            .into_iter()
            .chain(heldout3.questions.iter().map(|q| q.text.clone()))
            .chain(heldout3.out_of_scope.iter().map(|q| q.text.clone()))
            .collect();
        for q in gaps
            .questions
            .iter()
            .map(|q| &q.text)
            .chain(gaps.out_of_scope.iter().map(|q| &q.text))
        {
            assert!(!earlier.contains(q), "{q}");
        }
        assert_eq!("gaps".parse::<EvalSet>(), Ok(EvalSet::Gaps));
        assert_eq!("heldout3".parse::<EvalSet>(), Ok(EvalSet::Heldout3));
        assert_eq!("heldout2".parse::<EvalSet>(), Ok(EvalSet::Heldout2));
        assert_eq!("chat".parse::<EvalSet>(), Ok(EvalSet::Chat));
        assert_eq!("heldout".parse::<EvalSet>(), Ok(EvalSet::Heldout));
        assert!("other".parse::<EvalSet>().is_err());
    }
}
