//! Pages of a scanned PDF as pictures, for a model that reads images: drawn by a reader
//! process ([`crate::pdf::render`] inside [`crate::pdf::worker`]) within the attachment
//! budget, so an image of 12,000 × 12,000 pixels is refused before it is decoded, and a
//! rendering that runs away is stopped at its memory or time limit.

use crate::pdf::reader::{Job, Output};
pub use crate::pdf::render::RenderedPages;

use super::{read_pdf, IntakeError, Limits};

/// Renders up to `limits.max_scan_pages` pages of the scan `name`. `Ok(None)` when the
/// renderer cannot draw it; `Err` with the limit hit when drawing it would cost too much.
pub async fn read(
    name: &str,
    bytes: Vec<u8>,
    limits: &Limits,
) -> Result<Option<RenderedPages>, IntakeError> {
    let job = Job::Pages {
        max_pages: limits.max_scan_pages,
    };
    match read_pdf(name, job, bytes, &limits.pdf).await {
        Ok(Output::Pages(pages)) => Ok(Some(pages)),
        Ok(_) | Err(IntakeError::Unsupported { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use crate::pdf::render::render;
    use crate::pdf::PdfBudget;

    #[test]
    fn a_scanned_page_renders_to_a_png_with_its_picture() {
        // A page with a dark rectangle and no text, like a scan.
        let pdf = crate::report::output::to_pdf(
            &["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"612\" height=\"792\"><rect x=\"50\" y=\"50\" width=\"500\" height=\"600\" fill=\"#202020\"/></svg>".to_string()],
            "scan",
        )
        .expect("pdf");
        let pages = render(&pdf, 4, &PdfBudget::attachment())
            .expect("within the budget")
            .expect("rendered");
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
}
