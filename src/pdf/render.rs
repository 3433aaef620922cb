//! Pages of a scanned PDF as pictures, for a model that reads images. A scan has no text
//! layer, so its pages are rendered (hayro, pure Rust, no system library) and encoded as PNG.
//!
//! Scans are pictures of paper: no fonts are embedded here, so the rare text a scan carries is
//! not drawn; the scanned image is. Run inside the reader process ([`super::worker`]).

use hayro::hayro_interpret::InterpreterSettings;
use hayro::hayro_syntax::Pdf;
use hayro::vello_cpu::color::palette::css::WHITE;
use hayro::{PixmapSettings, RenderCache, RenderSettings};
use serde::{Deserialize, Serialize};

use super::budget::{self, Breach, PdfBudget};

/// Longest side of a rendered page, pixels: enough for a handwritten directory, within what
/// both providers take without downscaling much.
const LONG_SIDE_PX: f32 = 2000.0;

/// A scan rendered to page images.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderedPages {
    /// PNG of each rendered page, first page first (base64 on the way out of the reader).
    #[serde(with = "base64_list")]
    pub pngs: Vec<Vec<u8>>,
    /// Pages in the file (more than rendered when over the limit).
    pub total: usize,
}

/// Byte strings as base64 text: a third larger than the bytes, where a JSON array of numbers
/// would be three to four times larger.
mod base64_list {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(list: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(list.iter().map(|b| STANDARD.encode(b)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| STANDARD.decode(s).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// Renders up to `max_pages` pages of `pdf` as PNG within `budget`: the file's images and each
/// page's pixmap are checked before anything is drawn. `Ok(None)` when the file cannot be
/// rendered; a renderer panic on a malformed file is contained here.
pub fn render(
    pdf: &[u8],
    max_pages: usize,
    budget: &PdfBudget,
) -> Result<Option<RenderedPages>, Breach> {
    budget::survey(pdf, budget, true)?;
    let data = pdf.to_vec();
    let budget = *budget;
    std::panic::catch_unwind(move || render_inner(data, max_pages, &budget)).unwrap_or(Ok(None))
}

fn render_inner(
    data: Vec<u8>,
    max_pages: usize,
    budget: &PdfBudget,
) -> Result<Option<RenderedPages>, Breach> {
    let Ok(pdf) = Pdf::new(data) else {
        return Ok(None);
    };
    let pages = pdf.pages();
    let cache = RenderCache::new();
    let settings = InterpreterSettings::default();
    let mut pngs = Vec::new();
    for page in pages.iter().take(max_pages) {
        let (w, h) = page.render_dimensions();
        if !(w > 0.0 && h > 0.0) {
            return Ok(None);
        }
        let scale = LONG_SIDE_PX / w.max(h);
        check_pixmap(w * scale, h * scale, budget)?;
        let pixmap = hayro::render(
            page,
            &cache,
            &settings,
            &RenderSettings::default(),
            &PixmapSettings {
                x_scale: scale,
                y_scale: scale,
                bg_color: WHITE,
            },
        );
        let Some(png) = to_png(pixmap.width(), pixmap.height(), pixmap.data_as_u8_slice()) else {
            return Ok(None);
        };
        pngs.push(png);
    }
    if pngs.is_empty() {
        return Ok(None);
    }
    Ok(Some(RenderedPages {
        pngs,
        total: pages.len(),
    }))
}

/// The page as drawn must fit the pixel limit too (the long side is fixed, so only a limit
/// set below 2000 × 2000 can refuse one; the check keeps the two limits from drifting apart).
fn check_pixmap(width: f32, height: f32, budget: &PdfBudget) -> Result<(), Breach> {
    let (width, height) = (width.ceil() as u64, height.ceil() as u64);
    if width.saturating_mul(height) > budget.max_pixels {
        return Err(Breach::Pixels {
            width,
            height,
            max: budget.max_pixels,
        });
    }
    Ok(())
}

/// Premultiplied RGBA8 (what the renderer produces, as tiny-skia stores it) to PNG.
fn to_png(width: u16, height: u16, rgba: &[u8]) -> Option<Vec<u8>> {
    let size = resvg::tiny_skia::IntSize::from_wh(u32::from(width), u32::from(height))?;
    resvg::tiny_skia::Pixmap::from_vec(rgba.to_vec(), size)?
        .encode_png()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_drawn_past_the_pixel_limit_is_refused() {
        let small = PdfBudget {
            max_pixels: 1_000_000,
            ..PdfBudget::attachment()
        };
        assert_eq!(
            check_pixmap(1545.5, 2000.0, &small),
            Err(Breach::Pixels {
                width: 1546,
                height: 2000,
                max: 1_000_000
            })
        );
        assert!(check_pixmap(1545.5, 2000.0, &PdfBudget::attachment()).is_ok());
    }

    #[test]
    fn garbage_is_not_rendered_and_does_not_panic() {
        let b = PdfBudget::attachment();
        assert_eq!(render(b"%PDF-1.7\nnot really", 4, &b), Ok(None));
        assert_eq!(render(b"", 4, &b), Ok(None));
    }
}
