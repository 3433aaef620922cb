//! Whether a question is about the code at all when no embedding model is available.
//!
//! Full text always finds some passage sharing a word with a question ("height", "pipe",
//! "water"), so without vectors it cannot refuse by meaning. What it can measure is how much of
//! the question a passage accounts for: each word of the question weighs its rarity in the
//! shipped NEC corpus (a word the corpus never uses, like "pex" or "handrail", weighs the
//! most), and a passage covers the words it contains. A question about plumbing or stairs
//! shares only a common word or two with any passage; a code question, typed however, shares
//! its rare words with the passage that answers it.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use super::expand::stands_for_others;

/// Below this share of a question's weight covered by its best full-text passage, the
/// question is treated as outside the code (full-text-only mode). Chosen on the chat set
/// (`eval/chat.toml`); `eval/heldout.toml` checks it (docs/retrieval.md).
pub const MIN_COVERAGE: f64 = 0.37;

/// Document frequencies of the shipped corpus's words.
struct Weights {
    passages: f64,
    df: HashMap<String, usize>,
}

fn weights() -> &'static Weights {
    static WEIGHTS: OnceLock<Weights> = OnceLock::new();
    WEIGHTS.get_or_init(|| {
        let summaries = super::corpus::summary_chunks().unwrap_or_default();
        let tables = super::corpus::table_chunks().unwrap_or_default();
        let mut df: HashMap<String, usize> = HashMap::new();
        let mut passages = 0usize;
        for c in summaries.iter().chain(&tables) {
            passages += 1;
            for w in terms_of(&c.text) {
                *df.entry(w).or_default() += 1;
            }
        }
        Weights {
            passages: passages.max(1) as f64,
            df,
        }
    })
}

/// A word reduced so plural and singular meet ("receptacles" and "receptacle").
fn normal(word: &str) -> String {
    let w = word.to_lowercase();
    if w.len() > 4 && w.ends_with("ies") {
        format!("{}y", &w[..w.len() - 3])
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w[..w.len() - 1].to_string()
    } else {
        w
    }
}

/// The distinct searchable words of a text: alphabetic, not stop words.
fn terms_of(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1 && w.chars().all(|c| c.is_alphabetic()))
        .map(str::to_lowercase)
        .filter(|w| !crate::store::search::is_stop_word(w))
        .map(|w| normal(&w))
        .collect()
}

/// The weighted words of a question: its expanded form (abbreviations and misspellings
/// replaced by the corpus's words), numbers and stop words dropped.
fn question_terms(expanded: &str) -> Vec<(String, f64)> {
    let w = weights();
    let mut seen = HashSet::new();
    expanded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.len() > 1 && t.chars().all(|c| c.is_alphabetic()))
        .map(str::to_lowercase)
        .filter(|t| !crate::store::search::is_stop_word(t) && !stands_for_others(t))
        .map(|t| normal(&t))
        .filter(|t| seen.insert(t.clone()))
        .map(|t| {
            let df = w.df.get(&t).copied().unwrap_or(0) as f64;
            let idf = (1.0 + (w.passages - df + 0.5) / (df + 0.5)).ln();
            (t, idf)
        })
        .collect()
}

/// The largest share of the question's weight that one of `passages` contains (0 to 1);
/// `None` when the question has no searchable word.
pub fn coverage<'a>(expanded: &str, passages: impl IntoIterator<Item = &'a str>) -> Option<f64> {
    let terms = question_terms(expanded);
    let total: f64 = terms.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return None;
    }
    Some(
        passages
            .into_iter()
            .map(|p| {
                let have = terms_of(p);
                terms
                    .iter()
                    .filter(|(t, _)| have.contains(t))
                    .map(|(_, w)| w)
                    .sum::<f64>()
                    / total
            })
            .fold(0.0, f64::max),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rare_shared_words_cover_more_than_common_ones() {
        let passage = "Ground-fault circuit-interrupter protection for receptacles in garages";
        let code = coverage("gfci receptacles garage", [passage]).unwrap_or(0.0);
        assert!(code > 0.9, "{code}");
        // "height" is in the passage's vocabulary; "handrail" and "staircase" are not.
        let stairs = coverage(
            "handrail height on a staircase",
            ["Working space height is 6 1/2 ft"],
        )
        .unwrap_or(1.0);
        assert!(stairs < MIN_COVERAGE, "{stairs}");
        assert_eq!(coverage("the of 20", [passage]), None);
        assert_eq!(coverage("receptacle", std::iter::empty()), Some(0.0));
    }

    #[test]
    fn plurals_meet_singulars() {
        assert_eq!(normal("receptacles"), "receptacle");
        assert_eq!(normal("batteries"), "battery");
        assert_eq!(normal("class"), "class");
    }
}
