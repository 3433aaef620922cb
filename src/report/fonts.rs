//! The typeface every report uses, compiled into the binary so a document looks the same on
//! every machine (no system fonts are consulted), and the text measurement the layout needs.

use std::sync::{Arc, OnceLock};

use resvg::usvg;

/// DejaVu Sans Condensed (Bitstream Vera licence, see `assets/fonts/LICENSE-DejaVu.txt`).
const REGULAR: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansCondensed.ttf");
/// Its bold face.
const BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansCondensed-Bold.ttf");

/// The family name the SVG asks for; it must match the embedded faces.
pub const FAMILY: &str = "DejaVu Sans";

/// Font weight of a run of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// Body text.
    Regular,
    /// Headings and totals.
    Bold,
}

struct Metrics {
    regular: ttf_parser::Face<'static>,
    bold: ttf_parser::Face<'static>,
}

fn metrics() -> Option<&'static Metrics> {
    static M: OnceLock<Option<Metrics>> = OnceLock::new();
    M.get_or_init(|| {
        Some(Metrics {
            regular: ttf_parser::Face::parse(REGULAR, 0).ok()?,
            bold: ttf_parser::Face::parse(BOLD, 0).ok()?,
        })
    })
    .as_ref()
}

/// Width of `text` set at `size` points, from the font's advance widths.
pub fn text_width(text: &str, size: f64, weight: Weight) -> f64 {
    let Some(m) = metrics() else {
        // Unreachable with the shipped fonts; a generous estimate keeps text inside its box.
        return text.chars().count() as f64 * size * 0.6;
    };
    let face = match weight {
        Weight::Regular => &m.regular,
        Weight::Bold => &m.bold,
    };
    let upem = f64::from(face.units_per_em());
    let units: f64 = text
        .chars()
        .map(|c| {
            face.glyph_index(c)
                .and_then(|g| face.glyph_hor_advance(g))
                .map(f64::from)
                .unwrap_or(upem * 0.6)
        })
        .sum();
    units / upem * size
}

/// The font database usvg resolves `font-family` against: the embedded faces only.
pub fn database() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(REGULAR.to_vec());
        db.load_font_data(BOLD.to_vec());
        db.set_sans_serif_family(FAMILY);
        Arc::new(db)
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_faces_parse_and_carry_the_family_the_svg_names() {
        assert!(metrics().is_some());
        let db = database();
        assert_eq!(db.len(), 2);
        let families: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
            .collect();
        assert!(families.iter().any(|f| f == FAMILY), "{families:?}");
    }

    #[test]
    fn bold_is_wider_and_width_scales_with_size() {
        let r = text_width("Panel schedule", 10.0, Weight::Regular);
        let b = text_width("Panel schedule", 10.0, Weight::Bold);
        assert!(b > r && r > 30.0 && r < 100.0, "{r} {b}");
        let r2 = text_width("Panel schedule", 20.0, Weight::Regular);
        assert!((r2 - 2.0 * r).abs() < 1e-9);
    }
}
