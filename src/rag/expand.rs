//! Query expansion for the way the trade types: shop abbreviations ("ckt", "recep", "vd",
//! "ccc") get their full words added, and a misspelled word close to a word of the shipped
//! corpus gets that word added. The original words stay, so nothing the user typed is lost.

use std::collections::HashSet;
use std::sync::OnceLock;

/// Abbreviation -> the words the corpus uses. Lower case; matched as whole words.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("ckt", "circuit"),
    ("ckts", "circuits"),
    ("cct", "circuit"),
    ("recep", "receptacle"),
    ("receps", "receptacles"),
    ("recept", "receptacle"),
    ("recepts", "receptacles"),
    ("plug", "receptacle"),
    ("plugs", "receptacles"),
    ("outlet", "receptacle"),
    ("outlets", "receptacles"),
    ("vd", "voltage drop"),
    ("ccc", "current-carrying conductors adjustment"),
    ("cccs", "current-carrying conductors adjustment"),
    ("gfi", "gfci ground-fault"),
    ("gfis", "gfci ground-fault"),
    ("gfci", "ground-fault"),
    ("afci", "arc-fault"),
    ("afi", "afci arc-fault"),
    ("egc", "equipment grounding conductor"),
    ("gec", "grounding electrode conductor"),
    ("ocpd", "overcurrent protective device breaker"),
    ("bkr", "breaker"),
    ("brkr", "breaker"),
    ("bkrs", "breakers"),
    ("disco", "disconnect"),
    ("discos", "disconnects"),
    ("xfmr", "transformer"),
    ("xformer", "transformer"),
    ("xfrmr", "transformer"),
    ("mwbc", "multiwire branch circuit"),
    ("romex", "nm cable"),
    ("nmb", "nm cable"),
    ("jbox", "junction box"),
    ("mlo", "main lug"),
    ("mcb", "main breaker"),
    ("flc", "full-load current"),
    ("fla", "full-load current"),
    ("mca", "minimum circuit ampacity"),
    ("mocp", "maximum overcurrent protection"),
    ("pv", "photovoltaic solar"),
    ("ess", "energy storage system battery"),
    ("evse", "electric vehicle charging"),
    ("ev", "electric vehicle"),
    ("ssbj", "supply-side bonding jumper"),
    ("mbj", "main bonding jumper"),
    ("sbj", "system bonding jumper"),
    ("ufer", "concrete-encased electrode"),
    ("tr", "tamper-resistant"),
    ("wr", "weather-resistant"),
    ("grc", "rigid metal conduit rmc"),
    ("genny", "generator"),
    ("gen", "generator"),
    ("ats", "transfer switch"),
    ("rsd", "rapid shutdown"),
    ("spd", "surge protective device"),
    ("tvss", "surge protective device"),
    ("gfpe", "ground-fault protection of equipment"),
    ("aic", "interrupting rating"),
    ("sca", "short-circuit current"),
    ("poco", "utility"),
    ("hottub", "spa hot tub"),
    ("jacuzzi", "hydromassage bathtub"),
    ("wp", "weatherproof"),
    ("ga", "awg"),
    ("mcm", "kcmil"),
    ("cu", "copper"),
    ("al", "aluminum"),
    ("hp", "horsepower motor"),
    ("sqft", "square feet"),
    ("a/c", "air conditioner"),
    ("hvac", "air conditioning"),
    ("nm", "nm cable"),
    ("sub", "subpanel feeder"),
    ("subpanel", "feeder panelboard"),
    ("wire", "conductor"),
    ("wires", "conductors"),
];

/// Words of at least this length may be corrected.
const MIN_CORRECTABLE: usize = 5;

/// The corpus's words, and the same words by length (a correction differs by one or two).
struct Vocabulary {
    words: HashSet<String>,
    by_len: Vec<Vec<String>>,
}

fn vocabulary() -> &'static Vocabulary {
    static VOCAB: OnceLock<Vocabulary> = OnceLock::new();
    VOCAB.get_or_init(|| {
        let mut v = HashSet::new();
        let summaries = super::corpus::summary_chunks().unwrap_or_default();
        let tables = super::corpus::table_chunks().unwrap_or_default();
        for c in summaries.iter().chain(&tables) {
            for w in c.text.split(|c: char| !c.is_alphanumeric()) {
                if w.len() >= MIN_CORRECTABLE - 1 && w.chars().all(|c| c.is_ascii_alphabetic()) {
                    v.insert(w.to_ascii_lowercase());
                }
            }
        }
        let mut by_len: Vec<Vec<String>> = Vec::new();
        for w in &v {
            if by_len.len() <= w.len() {
                by_len.resize(w.len() + 1, Vec::new());
            }
            by_len[w.len()].push(w.clone());
        }
        Vocabulary { words: v, by_len }
    })
}

/// Edit distance with adjacent transpositions (optimal string alignment), stopping early
/// once it exceeds `max`.
fn distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
            row_min = row_min.min(cur[j]);
        }
        if row_min > max {
            return None;
        }
        prev2 = std::mem::replace(&mut prev, cur);
    }
    let d = prev[b.len()];
    (d <= max).then_some(d)
}

/// The words a shop abbreviation stands for ("ckt" -> "circuit").
pub(crate) fn abbreviation(word: &str) -> Option<&'static str> {
    ABBREVIATIONS
        .iter()
        .find(|(a, _)| *a == word)
        .map(|(_, full)| *full)
}

/// The corpus word closest to a word the corpus does not know, if one is close enough.
pub(crate) fn correction(word: &str) -> Option<&'static str> {
    let vocab = vocabulary();
    if word.len() < MIN_CORRECTABLE
        || !word.chars().all(|c| c.is_ascii_alphabetic())
        || vocab.words.contains(word)
    {
        return None;
    }
    let max = if word.len() >= 8 { 2 } else { 1 };
    let w = word.as_bytes();
    let longest = vocab.by_len.len().saturating_sub(1);
    let lengths = word.len().saturating_sub(max).min(longest)..=(word.len() + max).min(longest);
    vocab
        .by_len
        .get(lengths)
        .into_iter()
        .flatten()
        .flatten()
        // A typo rarely changes both of the first two letters: a cheap filter first.
        .filter(|v| {
            let b = v.as_bytes();
            b.first() == w.first() || b.get(1) == w.get(1)
        })
        .filter_map(|v| distance(word, v, max).map(|d| (d, v)))
        // Closest first; among equals the word sharing the first letter, then the shortest.
        .min_by_key(|(d, v)| {
            (
                *d,
                !v.starts_with(&word[..1]),
                v.len(),
                v.as_str().to_string(),
            )
        })
        .map(|(_, v)| v.as_str())
}

/// Whether `word` (lower case) is a shop abbreviation or a misspelling that [`expand`] adds
/// the corpus's words for, so the added words stand for it.
pub(crate) fn stands_for_others(word: &str) -> bool {
    ABBREVIATIONS.iter().any(|(a, _)| *a == word) || correction(word).is_some()
}

/// `query` with the full words of its abbreviations and the corrections of its misspellings
/// appended; unchanged when there is nothing to add.
pub fn expand(query: &str) -> String {
    let mut added: Vec<String> = Vec::new();
    let lower = query.to_lowercase();
    for raw in lower.split(|c: char| c.is_whitespace() || ",;:?!()\"'".contains(c)) {
        let word = raw.trim_matches(|c: char| c == '.' || c == '-');
        if word.is_empty() {
            continue;
        }
        if let Some((_, full)) = ABBREVIATIONS.iter().find(|(a, _)| *a == word) {
            if !lower.contains(full) && !added.iter().any(|a| a == full) {
                added.push((*full).to_string());
            }
            continue;
        }
        if let Some(fixed) = correction(word) {
            if !added.iter().any(|a| a == fixed) {
                added.push(fixed.to_string());
            }
        }
    }
    if added.is_empty() {
        query.to_string()
    } else {
        format!("{query} ({})", added.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations_gain_their_words() {
        assert_eq!(
            expand("vd on a 20a ckt"),
            "vd on a 20a ckt (voltage drop, circuit)"
        );
        assert_eq!(
            expand("gfi recep in garage"),
            "gfi recep in garage (gfci ground-fault, receptacle)"
        );
        assert_eq!(expand("voltage drop limits"), "voltage drop limits");
    }

    #[test]
    fn misspellings_gain_the_corpus_word() {
        let out = expand("recepticle in a bathrom");
        assert!(out.contains("receptacle"), "{out}");
        assert!(out.contains("bathroom"), "{out}");
        assert_eq!(distance("grouding", "grounding", 2), Some(1));
        assert_eq!(distance("ab", "ba", 1), Some(1));
        assert_eq!(distance("abcdef", "uvwxyz", 2), None);
    }
}
