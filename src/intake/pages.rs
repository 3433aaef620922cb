//! Pages of a scanned PDF as pictures, for a model that reads images. A scan has no text
//! layer, so its pages are rendered (hayro, pure Rust, no system library) and encoded as PNG.
//!
//! Scans are pictures of paper: no fonts are embedded here, so the rare text a scan carries is
//! not drawn; the scanned image is.

use hayro::hayro_interpret::InterpreterSettings;
use hayro::hayro_syntax::Pdf;
use hayro::vello_cpu::color::palette::css::WHITE;
use hayro::{PixmapSettings, RenderCache, RenderSettings};

/// Longest side of a rendered page, pixels: enough for a handwritten directory, within what
/// both providers take without downscaling much.
const LONG_SIDE_PX: f32 = 2000.0;

/// A scan rendered to page images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPages {
    /// PNG of each rendered page, first page first.
    pub pngs: Vec<Vec<u8>>,
    /// Pages in the file (more than rendered when over the limit).
    pub total: usize,
}

/// Renders up to `max_pages` pages of `pdf` as PNG; `None` when the file cannot be rendered.
/// A renderer panic on a malformed file is contained here.
pub fn render(pdf: &[u8], max_pages: usize) -> Option<RenderedPages> {
    let data = pdf.to_vec();
    std::panic::catch_unwind(move || render_inner(data, max_pages))
        .ok()
        .flatten()
}

fn render_inner(data: Vec<u8>, max_pages: usize) -> Option<RenderedPages> {
    let pdf = Pdf::new(data).ok()?;
    let pages = pdf.pages();
    let cache = RenderCache::new();
    let settings = InterpreterSettings::default();
    let mut pngs = Vec::new();
    for page in pages.iter().take(max_pages) {
        let (w, h) = page.render_dimensions();
        if !(w > 0.0 && h > 0.0) {
            return None;
        }
        let scale = LONG_SIDE_PX / w.max(h);
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
        pngs.push(to_png(
            pixmap.width(),
            pixmap.height(),
            pixmap.data_as_u8_slice(),
        )?);
    }
    if pngs.is_empty() {
        return None;
    }
    Some(RenderedPages {
        pngs,
        total: pages.len(),
    })
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
    fn a_scanned_page_renders_to_a_png_with_its_picture() {
        // A page with a dark rectangle and no text, like a scan.
        let pdf = crate::report::output::to_pdf(
            &["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"612\" height=\"792\"><rect x=\"50\" y=\"50\" width=\"500\" height=\"600\" fill=\"#202020\"/></svg>".to_string()],
            "scan",
        )
        .expect("pdf");
        let pages = render(&pdf, 4).expect("rendered");
        assert_eq!(pages.total, 1);
        assert_eq!(pages.pngs.len(), 1);
        let png = resvg::tiny_skia::Pixmap::decode_png(&pages.pngs[0]).expect("a PNG");
        assert_eq!(png.height(), 2000, "the long side");
        assert_eq!(png.width(), (612.0_f32 * 2000.0 / 792.0) as u32);
        // Inside the rectangle dark, outside white.
        let at = |x: u32, y: u32| png.pixel(x, y).expect("pixel");
        let inside = at(png.width() / 2, png.height() / 2);
        assert!(inside.red() < 60, "{inside:?}");
        let corner = at(5, 5);
        assert!(corner.red() > 240 && corner.alpha() == 255, "{corner:?}");
    }

    #[test]
    fn garbage_is_not_rendered_and_does_not_panic() {
        assert_eq!(render(b"%PDF-1.7\nnot really", 4), None);
        assert_eq!(render(b"", 4), None);
    }
}
