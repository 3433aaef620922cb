//! Whether a question is about the code at all when no embedding model is available.
//!
//! Full text always finds some passage sharing a word with a question ("height", "pipe",
//! "water"), so without vectors it cannot refuse by meaning. What it can measure is how much of
//! the question a passage accounts for: each word of the question weighs its rarity in the
//! shipped NEC corpus (a word the corpus never uses, like "pex" or "handrail", weighs the
//! most), and a passage covers the words it contains. A question about plumbing or stairs
//! shares only a common word or two with any passage; a code question, typed however, shares
//! its rare words with the passage that answers it.
//!
//! Both measures are also asked for more when the question names nothing electrical (see
//! [`in_scope`] and [`super::domain`]).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use super::expand::stands_for_others;

/// Below this share of a question's weight covered by its best full-text passage, the
/// question is treated as outside the code (full-text-only mode). Chosen on the chat set
/// (`eval/chat.toml`, docs/retrieval.md).
pub const MIN_COVERAGE: f64 = 0.37;
/// The share a question that names nothing electrical needs: most of its weight.
pub const MIN_COVERAGE_UNNAMED: f64 = 0.5;
/// A question whose closest passage is below this cosine similarity is outside the corpus
/// (all-MiniLM-L6-v2; chosen on the chat set, see docs/retrieval.md).
pub const MIN_QUESTION_COSINE: f64 = 0.37;
/// The similarity a question that names nothing electrical needs: the bar at which a passage
/// is relevant on meaning alone (`search::MIN_COSINE`).
pub const MIN_UNNAMED_COSINE: f64 = super::search::MIN_COSINE;

/// What the search found that says whether a question is about the code.
#[derive(Debug, Clone, Copy)]
pub enum Evidence {
    /// The cosine similarity of the closest passage (vectors available).
    Vector(f64),
    /// The share of the question's weight its best full-text passage covers
    /// ([`coverage`]; `None` when the question has no searchable word).
    Text(Option<f64>),
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Vector(c) => write!(f, "nearest cosine {c:.3}"),
            Self::Text(Some(c)) => write!(f, "coverage {c:.3}"),
            Self::Text(None) => write!(f, "no searchable word"),
        }
    }
}

/// Whether a question is about the code: close enough to the corpus, by meaning or by words,
/// and closer still when it names nothing electrical ([`super::domain`]). Other trades share
/// the code's measurements and equipment ("height", "condenser", "water heater"), so a
/// question that names no circuit, conductor, device or unit must match a passage on meaning
/// alone (cosine 0.45, the bar a vector-only hit needs to be shown) or with most of its words.
pub fn in_scope(question: &str, evidence: Evidence) -> bool {
    // A question naming another trade's standard (OSHA, Manual J) asks about that standard,
    // however close its words are to the code's.
    if super::domain::names_other_standard(question) {
        return false;
    }
    let electrical = super::domain::is_electrical(question);
    match evidence {
        Evidence::Vector(best) => {
            best >= if electrical {
                MIN_QUESTION_COSINE
            } else {
                MIN_UNNAMED_COSINE
            }
        }
        Evidence::Text(None) => true,
        Evidence::Text(Some(share)) => {
            share
                >= if electrical {
                    MIN_COVERAGE
                } else {
                    MIN_COVERAGE_UNNAMED
                }
        }
    }
}

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
    fn questions_naming_nothing_electrical_need_closer_evidence() {
        // Between the two bars: kept when it names something electrical, refused otherwise.
        let between = Evidence::Vector((MIN_QUESTION_COSINE + MIN_UNNAMED_COSINE) / 2.0);
        assert!(in_scope("gfi on a garage recep", between));
        assert!(!in_scope("what seer rating for a new condenser", between));
        assert!(in_scope(
            "what seer rating for a new condenser",
            Evidence::Vector(MIN_UNNAMED_COSINE)
        ));
        assert!(!in_scope("gfi on a garage recep", Evidence::Vector(0.3)));
        let share = Evidence::Text(Some((MIN_COVERAGE + MIN_COVERAGE_UNNAMED) / 2.0));
        assert!(in_scope("breaker for a 30a dryer circuit", share));
        assert!(!in_scope("drywall screw spacing on a ceiling", share));
        assert!(in_scope("drywall screw spacing", Evidence::Text(Some(0.9))));
        assert!(in_scope("the of", Evidence::Text(None)));
        // Another trade's standard, however close: refused, unless the NEC is named too.
        assert!(!in_scope(
            "manual j load calc for a 2400 sq ft two story",
            Evidence::Vector(0.9)
        ));
        assert!(!in_scope("osha ladder rules", Evidence::Text(Some(1.0))));
        assert!(in_scope(
            "osha vs nec gfci on a temp pole",
            Evidence::Vector(MIN_QUESTION_COSINE)
        ));
    }

    #[test]
    fn plurals_meet_singulars() {
        assert_eq!(normal("receptacles"), "receptacle");
        assert_eq!(normal("batteries"), "battery");
        assert_eq!(normal("class"), "class");
    }
}
