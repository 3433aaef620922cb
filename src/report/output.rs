//! Renders laid-out SVG pages: PNG through resvg (the first pages stacked, for a preview in
//! the chat) and PDF through svg2pdf (one PDF page per SVG page, text kept as text with the
//! embedded font subset, so the file is searchable).

use std::collections::HashMap;

use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, TextStr};
use resvg::tiny_skia;
use resvg::usvg;

use super::fonts;
use super::ReportError;

/// Pixels per point in the PNG (1.5 × 72 = 108 dpi: legible in a chat preview).
pub const PNG_SCALE: f32 = 1.5;
/// Gap between stacked pages in the PNG, in points.
const PAGE_GAP: f32 = 12.0;
/// Pages a PNG stacks at most. A Letter page at [`PNG_SCALE`] is 918 × 1188 px, 4.4 MB of
/// RGBA while it is drawn: ten pages stay under 45 MB, where the 129 pages of a 2,400-finding
/// inspection report would need 570 MB, and seconds of a core, for an image no chat shows
/// legibly. The PDF keeps every page.
pub const MAX_PNG_PAGES: usize = 10;
/// Pixels a PNG may hold (50 MB of RGBA): a guard should a page ever be larger than Letter.
const MAX_PNG_PIXELS: u64 = 50_000_000 / 4;

fn options() -> usvg::Options<'static> {
    usvg::Options {
        font_family: fonts::FAMILY.to_string(),
        fontdb: fonts::database(),
        ..usvg::Options::default()
    }
}

fn parse(svg: &str, opt: &usvg::Options) -> Result<usvg::Tree, ReportError> {
    usvg::Tree::from_str(svg, opt).map_err(|e| ReportError::Render(format!("layout: {e}")))
}

/// The first [`MAX_PNG_PAGES`] pages as one PNG, top to bottom.
pub fn to_png(pages: &[String]) -> Result<Vec<u8>, ReportError> {
    to_png_or_stop(pages, &|| false)
}

/// [`to_png`], giving up between pages once `stop` says so.
pub fn to_png_or_stop(pages: &[String], stop: &dyn Fn() -> bool) -> Result<Vec<u8>, ReportError> {
    let opt = options();
    let shown = &pages[..pages.len().min(MAX_PNG_PAGES)];
    let trees = shown
        .iter()
        .map(|p| parse(p, &opt))
        .collect::<Result<Vec<_>, _>>()?;
    let width = trees
        .iter()
        .map(|t| t.size().width())
        .fold(0.0f32, f32::max);
    let height: f32 = trees.iter().map(|t| t.size().height()).sum::<f32>()
        + PAGE_GAP * trees.len().saturating_sub(1) as f32;
    let w = (width * PNG_SCALE).ceil() as u32;
    let h = (height * PNG_SCALE).ceil() as u32;
    if u64::from(w) * u64::from(h) > MAX_PNG_PIXELS {
        return Err(ReportError::Render(format!(
            "a {w}×{h} image is too large for a preview; ask for the PDF"
        )));
    }
    let mut pixmap = tiny_skia::Pixmap::new(w.max(1), h.max(1))
        .ok_or_else(|| ReportError::Render(format!("cannot allocate a {w}×{h} image")))?;
    pixmap.fill(tiny_skia::Color::from_rgba8(0xb0, 0xb0, 0xb0, 0xff));
    let mut y = 0.0f32;
    for t in &trees {
        if stop() {
            return Err(ReportError::Stopped);
        }
        let transform =
            tiny_skia::Transform::from_scale(PNG_SCALE, PNG_SCALE).pre_translate(0.0, y);
        resvg::render(t, transform, &mut pixmap.as_mut());
        y += t.size().height() + PAGE_GAP;
    }
    pixmap
        .encode_png()
        .map_err(|e| ReportError::Render(format!("PNG encoding: {e}")))
}

/// All pages as one PDF.
pub fn to_pdf(pages: &[String], title: &str) -> Result<Vec<u8>, ReportError> {
    to_pdf_or_stop(pages, title, &|| false)
}

/// [`to_pdf`], giving up between pages once `stop` says so.
pub fn to_pdf_or_stop(
    pages: &[String],
    title: &str,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<u8>, ReportError> {
    let opt = options();
    let mut alloc = Ref::new(1);
    let catalog = alloc.bump();
    let tree_ref = alloc.bump();
    let info = alloc.bump();
    let mut pdf = Pdf::new();
    let mut page_refs = Vec::new();
    let mut chunks = Vec::new();
    for svg in pages {
        if stop() {
            return Err(ReportError::Stopped);
        }
        let tree = parse(svg, &opt)?;
        let (chunk, root) = svg2pdf::to_chunk(&tree, svg2pdf::ConversionOptions::default())
            .map_err(|e| ReportError::Render(format!("PDF conversion: {e}")))?;
        let mut map = HashMap::new();
        let chunk = chunk.renumber(|old| *map.entry(old).or_insert_with(|| alloc.bump()));
        let xobject = map
            .get(&root)
            .copied()
            .ok_or_else(|| ReportError::Render("PDF conversion lost the page object".into()))?;
        let page = alloc.bump();
        let content = alloc.bump();
        let (w, h) = (tree.size().width(), tree.size().height());
        let mut c = Content::new();
        // The XObject is 1 × 1 pt; scale it to the page.
        c.transform([w, 0.0, 0.0, h, 0.0, 0.0])
            .x_object(Name(b"P0"));
        pdf.stream(content, &c.finish());
        let mut pg = pdf.page(page);
        pg.media_box(Rect::new(0.0, 0.0, w, h))
            .parent(tree_ref)
            .contents(content);
        pg.resources().x_objects().pair(Name(b"P0"), xobject);
        pg.finish();
        page_refs.push(page);
        chunks.push(chunk);
    }
    for c in &chunks {
        pdf.extend(c);
    }
    pdf.catalog(catalog).pages(tree_ref);
    let count = i32::try_from(page_refs.len()).unwrap_or(i32::MAX);
    pdf.pages(tree_ref).kids(page_refs).count(count);
    pdf.document_info(info)
        .title(TextStr(title))
        .producer(TextStr("Sparky"));
    Ok(pdf.finish())
}
