//! NEC section references: finding them in text and writing them one canonical way
//! ("250.122", "Table 310.16", "210.8(A)", "Chapter 9 Table 8").

use std::sync::OnceLock;

use regex::Regex;

fn reference_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?ix)
            (?P<chapter>chapter\s*9\s*,?\s*table\s*(?P<chtable>\d{1,2}[a-z]?))
            |
            (?P<table>\btable\s+)?
            \b(?P<num>[1-9]\d{1,2}\.\d{1,3})
            (?P<subs>(?:\s?\((?:[a-z]|\d{1,2}|[ivx]{1,4})\))*)
            ",
        )
        .unwrap_or_else(|e| panic!("section regex is invalid: {e}"))
    })
}

/// Canonical form of one parenthesised level: letters upper case at the first level, lower
/// case at the third ("210.8(A)(1)(a)"), digits as they are.
fn canonical_subs(subs: &str) -> String {
    let mut out = String::new();
    let mut level = 0;
    for part in subs
        .split('(')
        .map(|p| p.trim().trim_end_matches(')').trim())
        .filter(|p| !p.is_empty())
    {
        level += 1;
        let is_roman = part
            .chars()
            .all(|c| matches!(c.to_ascii_lowercase(), 'i' | 'v' | 'x'))
            && level >= 3;
        let p = if part.chars().all(|c| c.is_ascii_digit()) {
            part.to_string()
        } else if is_roman || level >= 3 {
            part.to_ascii_lowercase()
        } else {
            part.to_ascii_uppercase()
        };
        out.push('(');
        out.push_str(&p);
        out.push(')');
    }
    out
}

/// Every section reference in `text`, canonical, in order of appearance, without repeats.
pub fn find_references(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cap in reference_regex().captures_iter(text) {
        let r = if cap.name("chapter").is_some() {
            let t = cap
                .name("chtable")
                .map(|m| m.as_str().to_ascii_uppercase())
                .unwrap_or_default();
            format!("Chapter 9 Table {t}")
        } else {
            let Some(num) = cap.name("num") else { continue };
            // "210.8.1" is a version or list number, not 210.8.
            let mut after = text[num.end()..].chars();
            if after.next() == Some('.') && after.next().is_some_and(|c| c.is_ascii_digit()) {
                continue;
            }
            // Articles run from 90 to 840; "12.5 A" is a number, not a section.
            let article: u32 = num
                .as_str()
                .split('.')
                .next()
                .and_then(|a| a.parse().ok())
                .unwrap_or(0);
            if !(90..=840).contains(&article) {
                continue;
            }
            let subs = cap
                .name("subs")
                .map(|m| canonical_subs(m.as_str()))
                .unwrap_or_default();
            let base = format!("{}{}", num.as_str(), subs);
            if cap.name("table").is_some() {
                format!("Table {base}")
            } else {
                base
            }
        };
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// The canonical form of one reference, if `text` is (or contains) one.
pub fn canonical(text: &str) -> Option<String> {
    find_references(text).into_iter().next()
}

/// "Table 310.16" -> "310.16"; other references unchanged. Used to relate a table to its section.
pub fn strip_table(reference: &str) -> &str {
    reference.strip_prefix("Table ").unwrap_or(reference)
}

/// Whether `candidate` answers a question about `wanted`: equal, or the same section at a
/// coarser or finer level ("210.8" and "210.8(A)"), or the table and its section.
pub fn related(wanted: &str, candidate: &str) -> bool {
    let (w, c) = (strip_table(wanted), strip_table(candidate));
    w == c || c.starts_with(&format!("{w}(")) || w.starts_with(&format!("{c}("))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_and_canonicalised() {
        assert_eq!(
            find_references("what does table 250.122 say"),
            vec!["Table 250.122"]
        );
        assert_eq!(
            find_references("see 210.8 (a)(1) and 240.4(D)"),
            vec!["210.8(A)(1)", "240.4(D)"]
        );
        assert!(find_references("release 210.8.1 and 2.10.8").is_empty());
        assert_eq!(
            find_references("Chapter 9, Table 8 resistance"),
            vec!["Chapter 9 Table 8"]
        );
        assert_eq!(
            find_references("705.12(B)(3)(2) 120% rule"),
            vec!["705.12(B)(3)(2)"]
        );
        assert_eq!(
            find_references("Table 310.15(B)(1)(1)"),
            vec!["Table 310.15(B)(1)(1)"]
        );
        assert_eq!(find_references("210.52(C)(1)(a)"), vec!["210.52(C)(1)(a)"]);
        assert!(find_references("I need 12.5 A and 3.14159").is_empty());
        assert!(find_references("version 1.2 of the app").is_empty());
    }

    #[test]
    fn related_sections_match_across_levels() {
        assert!(related("210.8", "210.8(A)"));
        assert!(related("210.8(A)", "210.8"));
        assert!(related("Table 310.16", "310.16"));
        assert!(!related("210.8", "210.80"));
        assert!(!related("250.66", "250.122"));
    }
}
