//! Backend-neutral pieces of retrieval: turning user text into a safe FTS5 query (SQLite) and
//! exact cosine similarity over stored little-endian f32 vectors.

/// English stop words, as in Postgres' `english` text-search dictionary, so both backends
/// drop the same words from a query.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (lower case) is an English stop word.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// One term of a query: a quoted FTS5 string (a word or a phrase of words).
fn term(words: &[String]) -> Option<String> {
    if words.is_empty() {
        return None;
    }
    // Words hold only alphanumerics, so quoting cannot be escaped from.
    Some(format!("\"{}\"", words.join(" ")))
}

/// Splits text into lower-case alphanumeric words (the way FTS5's unicode61 tokenizer does).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[derive(Default)]
struct Group {
    include: Vec<String>,
    exclude: Vec<String>,
}

/// Converts free user text into an FTS5 query with the meaning of Postgres'
/// `websearch_to_tsquery`: words are ANDed, `"quoted text"` is a phrase, `or` separates
/// alternatives and `-word` excludes. Stop words are dropped. Every term is quoted, so no
/// user text can produce an FTS5 syntax error. `None` when nothing searchable remains.
pub fn fts5_query(input: &str) -> Option<String> {
    let mut groups = vec![Group::default()];
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let negate = c == '-';
        if negate {
            chars.next();
        }
        let phrase = chars.peek() == Some(&'"');
        let mut raw = String::new();
        if phrase {
            chars.next();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                raw.push(c);
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '"' {
                    break;
                }
                raw.push(c);
                chars.next();
            }
        }
        if !phrase && !negate && raw.eq_ignore_ascii_case("or") {
            groups.push(Group::default());
            continue;
        }
        let mut ws = words(&raw);
        // A lone stop word carries no meaning; inside a phrase it keeps the words adjacent.
        if ws.len() == 1 && is_stop_word(&ws[0]) {
            ws.clear();
        }
        let Some(t) = term(&ws) else { continue };
        let Some(group) = groups.last_mut() else {
            continue;
        };
        if negate {
            group.exclude.push(t);
        } else {
            group.include.push(t);
        }
    }
    let parts: Vec<String> = groups
        .into_iter()
        .filter(|g| !g.include.is_empty())
        .map(|g| {
            let mut s = format!("({})", g.include.join(" AND "));
            for ex in g.exclude {
                s = format!("({s} NOT {ex})");
            }
            s
        })
        .collect();
    if parts.is_empty() {
        None
    } else {
        Some(parts.join(" OR "))
    }
}

/// An FTS5 query matching any of the words of free text (stop words dropped, repeats
/// removed); a dotted reference such as "250.122" stays one phrase. Every term is quoted, so no
/// user text can produce an FTS5 syntax error. `None` when nothing searchable remains.
pub fn fts5_any_word(input: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for token in input.split(|c: char| !(c.is_alphanumeric() || c == '.')) {
        let ws = words(token);
        if ws.is_empty() || (ws.len() == 1 && is_stop_word(&ws[0])) {
            continue;
        }
        if let Some(t) = term(&ws) {
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
    }
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// Encodes a vector as little-endian f32 bytes (the SQLite BLOB format).
pub fn embedding_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes little-endian f32 bytes; `None` when the length is not a multiple of 4.
pub fn embedding_from_bytes(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// A query vector prepared for repeated cosine comparisons.
pub struct CosineQuery {
    v: Vec<f32>,
    norm: f64,
}

impl CosineQuery {
    /// Prepares `v`; `None` for a zero or non-finite vector (no direction to compare).
    pub fn new(v: &[f32]) -> Option<Self> {
        let norm = v
            .iter()
            .map(|x| f64::from(*x) * f64::from(*x))
            .sum::<f64>()
            .sqrt();
        (norm.is_finite() && norm > 0.0).then(|| Self {
            v: v.to_vec(),
            norm,
        })
    }

    /// Cosine similarity with a stored little-endian f32 vector of the same length; `None` on
    /// a length mismatch or a zero vector.
    pub fn similarity_le_bytes(&self, bytes: &[u8]) -> Option<f64> {
        if bytes.len() != self.v.len() * 4 {
            return None;
        }
        let (mut dot, mut norm) = (0f64, 0f64);
        for (q, b) in self.v.iter().zip(bytes.chunks_exact(4)) {
            let x = f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            dot += f64::from(*q) * x;
            norm += x * x;
        }
        let norm = norm.sqrt();
        (norm > 0.0).then(|| dot / (self.norm * norm))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_are_anded_without_stop_words() {
        assert_eq!(
            fts5_query("What size is the grounding conductor?").as_deref(),
            Some("(\"size\" AND \"grounding\" AND \"conductor\")")
        );
    }

    #[test]
    fn section_numbers_become_phrases() {
        assert_eq!(
            fts5_query("table 250.122").as_deref(),
            Some("(\"table\" AND \"250 122\")")
        );
    }

    #[test]
    fn or_phrases_and_negation() {
        assert_eq!(
            fts5_query("\"voltage drop\" or ampacity -aluminum").as_deref(),
            Some("(\"voltage drop\") OR ((\"ampacity\") NOT \"aluminum\")")
        );
    }

    #[test]
    fn hostile_input_is_neutralised() {
        for q in [
            "\"",
            "NEAR(a b)",
            "a AND OR NOT",
            "col:value*",
            "^start",
            "((((",
            "-",
            "or or",
            "\u{0}",
        ] {
            if let Some(s) = fts5_query(q) {
                assert!(s.starts_with('('), "{q:?} -> {s}");
            }
        }
        assert_eq!(fts5_query("the of and"), None);
        assert_eq!(fts5_query(""), None);
        assert_eq!(fts5_query("-only"), None);
    }

    #[test]
    fn any_word_queries_keep_references_whole() {
        assert_eq!(
            fts5_any_word("What size EGC for a 60 A circuit, per 250.122?").as_deref(),
            Some("\"size\" OR \"egc\" OR \"60\" OR \"circuit\" OR \"per\" OR \"250 122\"")
        );
        // Operators lose their meaning: "NEAR(" is only the word near, quoted.
        assert_eq!(
            fts5_any_word("the of \" NEAR( -").as_deref(),
            Some("\"near\"")
        );
        assert_eq!(fts5_any_word("the of \" -"), None);
        assert_eq!(fts5_any_word("gfci gfci GFCI").as_deref(), Some("\"gfci\""));
    }

    #[test]
    fn cosine_of_bytes() {
        let q = CosineQuery::new(&[1.0, 0.0]).expect("non-zero");
        let same = embedding_to_bytes(&[2.0, 0.0]);
        let ortho = embedding_to_bytes(&[0.0, 3.0]);
        assert!((q.similarity_le_bytes(&same).unwrap_or(0.0) - 1.0).abs() < 1e-9);
        assert!(q.similarity_le_bytes(&ortho).unwrap_or(1.0).abs() < 1e-9);
        assert_eq!(q.similarity_le_bytes(&embedding_to_bytes(&[1.0])), None);
        assert!(CosineQuery::new(&[0.0, 0.0]).is_none());
        assert_eq!(
            embedding_from_bytes(&embedding_to_bytes(&[1.5, -2.0])),
            Some(vec![1.5, -2.0])
        );
    }
}
