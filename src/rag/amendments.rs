//! Local amendments in retrieval: for a project, passages from its own jurisdiction's amendment
//! documents come first and are labelled as amendments; another jurisdiction's amendments are
//! left out (they do not apply there). Kept apart from the ranking itself: it reorders and
//! filters what the retriever returns.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::search::Passage;
use crate::jurisdiction::site::state_name;
use crate::jurisdiction::Location;

/// How many passages to ask the retriever for so that an amendment ranked just below the
/// cut can still be moved up.
pub fn candidates_for(k: usize) -> usize {
    (k * 3).clamp(k, 30)
}

/// Words for a jurisdiction key ("WA/Seattle" -> "Seattle, Washington").
fn place(key: &str) -> String {
    match key.split_once('/') {
        Some((state, local)) => format!("{local}, {}", state_name(state)),
        None => state_name(key).to_string(),
    }
}

/// Amendment documents by source: source -> jurisdiction key.
pub fn amendment_sources(documents: Vec<(String, String)>) -> HashMap<String, String> {
    documents.into_iter().collect()
}

/// Passages as JSON, best first, at most `k`: the location's own amendments first (labelled
/// `amendment`), other jurisdictions' amendments dropped when a location is known (and only
/// labelled when none is), everything else in the retriever's order.
pub fn prefer_local(
    passages: Vec<Passage>,
    amendments: &HashMap<String, String>,
    location: Option<&Location>,
    k: usize,
) -> Vec<Value> {
    let keys = location.map(Location::keys).unwrap_or_default();
    let mut own = Vec::new();
    let mut rest = Vec::new();
    for p in passages {
        let juris = amendments.get(&p.source).cloned();
        let mut v = serde_json::to_value(&p).unwrap_or(Value::Null);
        match juris {
            Some(j) if keys.contains(&j) => {
                v["amendment"] = json!({
                    "jurisdiction": j,
                    "applies": true,
                    "label": format!(
                        "{} local amendment: takes precedence over the model code there",
                        place(&j)
                    ),
                });
                own.push(v);
            }
            Some(_) if location.is_some() => {}
            Some(j) => {
                v["amendment"] = json!({
                    "jurisdiction": j,
                    "applies": false,
                    "label": format!(
                        "{} local amendment: applies only there (no job-site location is set)",
                        place(&j)
                    ),
                });
                rest.push(v);
            }
            None => rest.push(v),
        }
    }
    own.into_iter().chain(rest).take(k.max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(source: &str, score: f64) -> Passage {
        Passage {
            section: Some("210.8".into()),
            edition: None,
            source: source.into(),
            page: None,
            heading: String::new(),
            text: String::new(),
            score,
        }
    }

    #[test]
    fn own_amendments_first_others_dropped() {
        let amendments: HashMap<String, String> = [
            ("WA amendment: wac.md".to_string(), "WA".to_string()),
            ("OR amendment: oesc.md".to_string(), "OR".to_string()),
        ]
        .into();
        let ps = || {
            vec![
                passage("article_210.toml", 0.9),
                passage("OR amendment: oesc.md", 0.8),
                passage("WA amendment: wac.md", 0.1),
            ]
        };
        let wa: Location = "WA, Seattle".parse().unwrap();
        let out = prefer_local(ps(), &amendments, Some(&wa), 5);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["source"], "WA amendment: wac.md");
        assert_eq!(out[0]["amendment"]["applies"], true);
        assert_eq!(out[1]["source"], "article_210.toml");
        let none = prefer_local(ps(), &amendments, None, 5);
        assert_eq!(none[0]["source"], "article_210.toml");
        assert_eq!(none[1]["amendment"]["applies"], false);
        assert_eq!(prefer_local(ps(), &amendments, Some(&wa), 1).len(), 1);
    }
}
