//! The documents and chunks the retrieval store tests share.

use std::sync::Arc;

use sparky::store::{ChunkFilter, NewChunk, NewDocument, Store};

pub const DIMS: usize = 384;

pub fn doc(source: &str, workspace: Option<&str>, hash: &str) -> NewDocument {
    NewDocument {
        source: source.to_string(),
        title: format!("Title of {source}"),
        workspace: workspace.map(|w| w.parse().expect("PLATFORM:ID")),
        content_hash: hash.to_string(),
    }
}

pub fn chunk(section: Option<&str>, edition: Option<i32>, heading: &str, text: &str) -> NewChunk {
    NewChunk {
        section: section.map(str::to_string),
        edition,
        page: Some(7),
        heading: heading.to_string(),
        text: text.to_string(),
        content_hash: format!("h:{text}"),
    }
}

/// A 384-dimension vector with the given leading components.
pub fn vec384(head: &[f32]) -> Vec<f32> {
    let mut v = vec![0.0; DIMS];
    v[..head.len()].copy_from_slice(head);
    v
}

pub fn filter(edition: Option<i32>, workspace: Option<&str>) -> ChunkFilter {
    ChunkFilter {
        edition,
        workspace: workspace.map(|w| w.parse().expect("PLATFORM:ID")),
    }
}

/// The corpus the search tests share; chunk ids in the order listed.
pub struct Corpus {
    /// 250.122, 2023, global.
    pub egc_2023: i64,
    /// 250.122, 2020, global.
    pub egc_2020: i64,
    /// 310.16, no edition, global.
    pub ampacity: i64,
    /// 210.8, 2023, workspace T1.
    pub gfci_t1: i64,
    /// no section, 2023, workspace T2.
    pub spec_t2: i64,
}

pub async fn corpus(store: &Arc<dyn Store>) -> Corpus {
    let (global, _) = store
        .upsert_document(&doc("sparky:summaries", None, "g1"))
        .await
        .expect("global doc");
    let (t1, _) = store
        .upsert_document(&doc("team-notes.md", Some("slack:T1"), "t1"))
        .await
        .expect("t1 doc");
    let (t2, _) = store
        .upsert_document(&doc("team-notes.md", Some("slack:T2"), "t2"))
        .await
        .expect("t2 doc");
    let g = store
        .replace_chunks(
            global.id,
            &[
                chunk(
                    Some("250.122"),
                    Some(2023),
                    "Size of equipment grounding conductors",
                    "The equipment grounding conductor is sized from Table 250.122 by the \
                     rating of the overcurrent device ahead of it.",
                ),
                chunk(
                    Some("250.122"),
                    Some(2020),
                    "Size of equipment grounding conductors (2020)",
                    "2020 edition: equipment grounding conductors are sized per Table 250.122.",
                ),
                chunk(
                    Some("310.16"),
                    None,
                    "Ampacities of insulated conductors",
                    "Table 310.16 lists allowable ampacities for insulated conductors rated up \
                     to 2000 volts.",
                ),
            ],
        )
        .await
        .expect("global chunks");
    let a = store
        .replace_chunks(
            t1.id,
            &[chunk(
                Some("210.8"),
                Some(2023),
                "GFCI protection",
                "Ground-fault circuit-interrupter protection in kitchens. Team note: the \
                 equipment grounding conductor must be continuous.",
            )],
        )
        .await
        .expect("t1 chunks");
    let b = store
        .replace_chunks(
            t2.id,
            &[chunk(
                None,
                Some(2023),
                "Other team's spec",
                "Equipment grounding conductor specification of team two.",
            )],
        )
        .await
        .expect("t2 chunks");
    Corpus {
        egc_2023: g[0],
        egc_2020: g[1],
        ampacity: g[2],
        gfci_t1: a[0],
        spec_t2: b[0],
    }
}

pub fn ids(results: &[sparky::store::ScoredChunk]) -> Vec<i64> {
    results.iter().map(|r| r.chunk.id).collect()
}
