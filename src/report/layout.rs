//! Lays a [`Document`] out on pages as SVG: a header and footer on every page, blocks flowing
//! down the page, tables split between rows with their headings repeated, text wrapped with
//! the embedded font's real widths. One layout feeds both the PNG and the PDF.

use std::fmt::Write;

use super::document::{Align, Block, Document, Header, Orientation, Row, RowStyle, Table};
use super::fonts::{text_width, Weight, FAMILY};

const MARGIN: f64 = 30.0;
const BODY_SIZE: f64 = 8.5;
const CELL_SIZE: f64 = 8.0;
const LINE: f64 = 10.5;
const CELL_LINE: f64 = 9.6;
const PAD: f64 = 3.0;
const HEADING_SIZE: f64 = 11.0;
const HEADER_BOTTOM: f64 = MARGIN + 40.0;
const MAX_CELL_LINES: usize = 6;
/// Pages a document holds at most, the last one saying that it stops there. A project's
/// circuits are not capped, so neither are an inspection report's findings (2,400 of them fill
/// 129 pages). A PDF page costs about 50 ms to convert (each embeds its font subset), so
/// 200 pages stay within half the default 20 s tool timeout on a busy machine.
pub const MAX_PAGES: usize = 200;

/// Page width and height in points (SVG user units).
pub fn page_size(o: Orientation) -> (f64, f64) {
    match o {
        Orientation::Portrait => (612.0, 792.0),
        Orientation::Landscape => (792.0, 612.0),
    }
}

/// How a run of text is set: size, weight, anchor (start, middle, end) and colour.
struct Pen<'a>(f64, Weight, &'a str, &'a str);

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Control characters are not allowed in XML.
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn text(out: &mut String, x: f64, y: f64, pen: Pen, s: &str) {
    let Pen(size, weight, anchor, fill) = pen;
    let bold = if weight == Weight::Bold {
        " font-weight=\"bold\""
    } else {
        ""
    };
    let _ = write!(
        out,
        "<text x=\"{x:.2}\" y=\"{y:.2}\" font-family=\"{FAMILY}\" font-size=\"{size}\"{bold} text-anchor=\"{anchor}\" fill=\"{fill}\">{}</text>",
        esc(s)
    );
}

fn rect(out: &mut String, x: f64, y: f64, w: f64, h: f64, fill: &str) {
    let _ = write!(
        out,
        "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"{fill}\"/>"
    );
}

fn line(out: &mut String, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
    let _ = write!(
        out,
        "<line x1=\"{x1:.2}\" y1=\"{y1:.2}\" x2=\"{x2:.2}\" y2=\"{y2:.2}\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>"
    );
}

/// Breaks `s` into lines no wider than `width`; words longer than a line are cut.
pub fn wrap(s: &str, width: f64, size: f64, weight: Weight) -> Vec<String> {
    let mut lines = Vec::new();
    for para in s.split('\n') {
        let mut current = String::new();
        for word in para.split_whitespace() {
            let candidate = if current.is_empty() {
                word.to_string()
            } else {
                format!("{current} {word}")
            };
            if text_width(&candidate, size, weight) <= width {
                current = candidate;
                continue;
            }
            if !current.is_empty() {
                lines.push(std::mem::take(&mut current));
            }
            // A word wider than the line is cut by characters.
            for ch in word.chars() {
                let mut next = current.clone();
                next.push(ch);
                if text_width(&next, size, weight) > width && !current.is_empty() {
                    lines.push(std::mem::replace(&mut current, ch.to_string()));
                } else {
                    current = next;
                }
            }
        }
        lines.push(current);
    }
    lines
}

/// Caps `lines` at `max`, ending the last kept line with an ellipsis.
fn cap(mut lines: Vec<String>, max: usize, width: f64, size: f64, weight: Weight) -> Vec<String> {
    if lines.len() <= max {
        return lines;
    }
    lines.truncate(max);
    if let Some(last) = lines.last_mut() {
        while !last.is_empty() && text_width(&format!("{last}…"), size, weight) > width {
            last.pop();
        }
        last.push('…');
    }
    lines
}

struct Pager {
    width: f64,
    height: f64,
    pages: Vec<String>,
    current: String,
    y: f64,
    /// Pages of content at most (the page after them says the document stops).
    max_content: usize,
    /// The content pages are used up: the rest is counted, not drawn.
    full: bool,
    rows_left_out: usize,
}

impl Pager {
    fn new(o: Orientation, max_pages: usize) -> Self {
        let (width, height) = page_size(o);
        Self {
            width,
            height,
            pages: Vec::new(),
            current: String::new(),
            y: HEADER_BOTTOM,
            max_content: max_pages.saturating_sub(1).max(1),
            full: false,
            rows_left_out: 0,
        }
    }

    fn body_width(&self) -> f64 {
        self.width - 2.0 * MARGIN
    }

    fn bottom(&self) -> f64 {
        self.height - MARGIN - 14.0
    }

    fn new_page(&mut self) {
        if self.pages.len() + 2 > self.max_content {
            self.full = true;
            return;
        }
        self.pages.push(std::mem::take(&mut self.current));
        self.y = HEADER_BOTTOM;
    }

    /// The page that says the document stops short, after the last page of content.
    fn stop_notice(&mut self, max_pages: usize) {
        self.pages.push(std::mem::take(&mut self.current));
        self.y = HEADER_BOTTOM;
        self.full = false;
        self.heading("The document stops here");
        self.notes(&[format!(
            "This document reached the limit of {max_pages} pages: {} more table rows are left \
             out. Narrow the request (one panel, one category) to see them.",
            self.rows_left_out
        )]);
    }

    /// Starts a new page unless `h` more points fit (an empty page always takes it).
    fn ensure(&mut self, h: f64) {
        if self.y + h > self.bottom() && self.y > HEADER_BOTTOM {
            self.new_page();
        }
    }

    fn heading(&mut self, s: &str) {
        // Keep a heading with at least a few lines of what follows.
        self.ensure(22.0 + 4.0 * LINE);
        if self.full {
            return;
        }
        self.y += 6.0;
        text(
            &mut self.current,
            MARGIN,
            self.y + HEADING_SIZE,
            Pen(HEADING_SIZE, Weight::Bold, "start", "#1a1a1a"),
            s,
        );
        self.y += HEADING_SIZE + 4.0;
        let right = MARGIN + self.body_width();
        line(
            &mut self.current,
            MARGIN,
            self.y,
            right,
            self.y,
            "#1f4e79",
            0.8,
        );
        self.y += 6.0;
    }

    fn facts(&mut self, facts: &[(String, String)]) {
        let cols = if self.width > self.height { 3 } else { 2 };
        let col_w = self.body_width() / cols as f64;
        for chunk in facts.chunks(cols) {
            let laid: Vec<(String, Vec<String>, f64)> = chunk
                .iter()
                .map(|(label, value)| {
                    let label = format!("{label}:");
                    let lw = text_width(&label, BODY_SIZE, Weight::Bold) + 4.0;
                    let lines = wrap(
                        value,
                        (col_w - lw - 8.0).max(20.0),
                        BODY_SIZE,
                        Weight::Regular,
                    );
                    (label, lines, lw)
                })
                .collect();
            let rows = laid.iter().map(|(_, l, _)| l.len()).max().unwrap_or(1);
            let h = rows as f64 * LINE + 2.0;
            self.ensure(h);
            if self.full {
                return;
            }
            for (i, (label, lines, lw)) in laid.iter().enumerate() {
                let x = MARGIN + i as f64 * col_w;
                text(
                    &mut self.current,
                    x,
                    self.y + BODY_SIZE,
                    Pen(BODY_SIZE, Weight::Bold, "start", "#333333"),
                    label,
                );
                for (j, l) in lines.iter().enumerate() {
                    text(
                        &mut self.current,
                        x + lw,
                        self.y + BODY_SIZE + j as f64 * LINE,
                        Pen(BODY_SIZE, Weight::Regular, "start", "#000000"),
                        l,
                    );
                }
            }
            self.y += h;
        }
        self.y += 4.0;
    }

    fn notes(&mut self, notes: &[String]) {
        let indent = 10.0;
        for n in notes {
            let lines = wrap(n, self.body_width() - indent, BODY_SIZE, Weight::Regular);
            for (i, l) in lines.iter().enumerate() {
                self.ensure(LINE);
                if self.full {
                    return;
                }
                if i == 0 {
                    text(
                        &mut self.current,
                        MARGIN,
                        self.y + BODY_SIZE,
                        Pen(BODY_SIZE, Weight::Regular, "start", "#000000"),
                        "•",
                    );
                }
                text(
                    &mut self.current,
                    MARGIN + indent,
                    self.y + BODY_SIZE,
                    Pen(BODY_SIZE, Weight::Regular, "start", "#000000"),
                    l,
                );
                self.y += LINE;
            }
        }
        self.y += 4.0;
    }

    fn table(&mut self, t: &Table) {
        let total: f64 = t.columns.iter().map(|c| c.width).sum::<f64>().max(1e-9);
        let widths: Vec<f64> = t
            .columns
            .iter()
            .map(|c| c.width / total * self.body_width())
            .collect();
        let head = Row::new(t.columns.iter().map(|c| c.title.clone()).collect());
        let head_cells = self.cells(&head, &widths, Weight::Bold);
        let head_h = row_height(&head_cells);
        self.ensure(head_h + 2.0 * CELL_LINE);
        if self.full {
            self.rows_left_out += t.rows.len();
            return;
        }
        self.draw_row(t, &head_cells, &widths, head_h, Weight::Bold, "#dce6f1");
        for (i, row) in t.rows.iter().enumerate() {
            let weight = if row.style == RowStyle::Total {
                Weight::Bold
            } else {
                Weight::Regular
            };
            let cells = self.cells(row, &widths, weight);
            let h = row_height(&cells);
            if self.y + h > self.bottom() {
                self.new_page();
                if self.full {
                    self.rows_left_out += t.rows.len() - i;
                    return;
                }
                self.draw_row(t, &head_cells, &widths, head_h, Weight::Bold, "#dce6f1");
            }
            let fill = match row.style {
                RowStyle::Alert => "#f8d7d7",
                RowStyle::Total => "#eeeeee",
                RowStyle::Muted => "#ffffff",
                RowStyle::Normal if i % 2 == 1 => "#f5f8fb",
                RowStyle::Normal => "#ffffff",
            };
            let color = if row.style == RowStyle::Muted {
                "#777777"
            } else {
                "#000000"
            };
            self.draw_row_colored(t, &cells, &widths, h, weight, fill, color);
        }
        self.y += 8.0;
    }

    fn cells(&self, row: &Row, widths: &[f64], weight: Weight) -> Vec<Vec<String>> {
        widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let s = row.cells.get(i).map(String::as_str).unwrap_or("");
                let inner = (w - 2.0 * PAD).max(4.0);
                cap(
                    wrap(s, inner, CELL_SIZE, weight),
                    MAX_CELL_LINES,
                    inner,
                    CELL_SIZE,
                    weight,
                )
            })
            .collect()
    }

    fn draw_row(
        &mut self,
        t: &Table,
        cells: &[Vec<String>],
        widths: &[f64],
        h: f64,
        weight: Weight,
        fill: &str,
    ) {
        self.draw_row_colored(t, cells, widths, h, weight, fill, "#000000");
    }

    #[allow(clippy::too_many_arguments)]
    fn draw_row_colored(
        &mut self,
        t: &Table,
        cells: &[Vec<String>],
        widths: &[f64],
        h: f64,
        weight: Weight,
        fill: &str,
        color: &str,
    ) {
        let bw = self.body_width();
        rect(&mut self.current, MARGIN, self.y, bw, h, fill);
        let mut x = MARGIN;
        for (i, lines) in cells.iter().enumerate() {
            let w = widths[i];
            let align = t.columns.get(i).map_or(Align::Left, |c| c.align);
            let (tx, anchor) = match align {
                Align::Left => (x + PAD, "start"),
                Align::Right => (x + w - PAD, "end"),
                Align::Center => (x + w / 2.0, "middle"),
            };
            for (j, l) in lines.iter().enumerate() {
                if l.is_empty() {
                    continue;
                }
                text(
                    &mut self.current,
                    tx,
                    self.y + PAD + CELL_SIZE + j as f64 * CELL_LINE - 1.0,
                    Pen(CELL_SIZE, weight, anchor, color),
                    l,
                );
            }
            x += w;
        }
        line(
            &mut self.current,
            MARGIN,
            self.y + h,
            MARGIN + bw,
            self.y + h,
            "#c8c8c8",
            0.5,
        );
        self.y += h;
    }
}

fn row_height(cells: &[Vec<String>]) -> f64 {
    let lines = cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
    lines as f64 * CELL_LINE + 2.0 * PAD
}

fn frame(h: &Header, o: Orientation, body: &str, page: usize, pages: usize) -> String {
    let (w, ht) = page_size(o);
    let mut s = String::with_capacity(body.len() + 2048);
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{ht}\" viewBox=\"0 0 {w} {ht}\">"
    );
    rect(&mut s, 0.0, 0.0, w, ht, "#ffffff");
    text(
        &mut s,
        MARGIN,
        MARGIN + 14.0,
        Pen(15.0, Weight::Bold, "start", "#1f4e79"),
        &h.title,
    );
    let right = w - MARGIN;
    text(
        &mut s,
        right,
        MARGIN + 8.0,
        Pen(BODY_SIZE, Weight::Bold, "end", "#000000"),
        &format!("Project: {}", h.project),
    );
    text(
        &mut s,
        right,
        MARGIN + 8.0 + LINE,
        Pen(BODY_SIZE, Weight::Regular, "end", "#000000"),
        &format!(
            "{} · issued {} · requested by {}",
            h.edition, h.date, h.requested_by
        ),
    );
    line(
        &mut s,
        MARGIN,
        MARGIN + 26.0,
        right,
        MARGIN + 26.0,
        "#1f4e79",
        1.2,
    );
    s.push_str(body);
    let fy = ht - MARGIN;
    line(&mut s, MARGIN, fy - 10.0, right, fy - 10.0, "#c8c8c8", 0.5);
    text(
        &mut s,
        MARGIN,
        fy,
        Pen(7.5, Weight::Regular, "start", "#555555"),
        &format!("Sparky · {} · {}", h.title, h.project),
    );
    text(
        &mut s,
        right,
        fy,
        Pen(7.5, Weight::Regular, "end", "#555555"),
        &format!("Page {page} of {pages}"),
    );
    s.push_str("</svg>");
    s
}

/// A document laid out on pages.
#[derive(Debug, Clone, PartialEq)]
pub struct Laid {
    /// One SVG per page.
    pub pages: Vec<String>,
    /// Table rows left out because the document reached its page limit.
    pub rows_left_out: usize,
}

/// The document as one SVG per page, at most [`MAX_PAGES`] of them.
pub fn layout(doc: &Document) -> Vec<String> {
    paginate(doc, MAX_PAGES).pages
}

/// The document on at most `max_pages` pages: when it needs more, the last page says that it
/// stops there and how many table rows are left out.
pub fn paginate(doc: &Document, max_pages: usize) -> Laid {
    let mut p = Pager::new(doc.orientation, max_pages);
    for block in &doc.blocks {
        match block {
            Block::Table(t) if p.full => p.rows_left_out += t.rows.len(),
            _ if p.full => {}
            Block::Heading(s) => p.heading(s),
            Block::Facts(f) => p.facts(f),
            Block::Table(t) => p.table(t),
            Block::Notes(n) => p.notes(n),
        }
    }
    if p.full {
        p.stop_notice(max_pages);
    }
    p.pages.push(std::mem::take(&mut p.current));
    let n = p.pages.len();
    let pages = p
        .pages
        .iter()
        .enumerate()
        .map(|(i, body)| frame(&doc.header, doc.orientation, body, i + 1, n))
        .collect();
    Laid {
        pages,
        rows_left_out: p.rows_left_out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::document::Column;

    fn header() -> Header {
        Header {
            title: "T <&>".into(),
            project: "P".into(),
            edition: "NEC 2023".into(),
            date: "2026-01-02".into(),
            requested_by: "alice".into(),
        }
    }

    #[test]
    fn wrap_keeps_every_word_within_the_width() {
        let s = "Replace the 20 A breaker with a 15 A breaker or upsize the conductors to 10 AWG copper supercalifragilisticexpialidocious";
        let lines = wrap(s, 80.0, 8.0, Weight::Regular);
        assert!(lines.len() > 3);
        assert!(
            lines
                .iter()
                .all(|l| text_width(l, 8.0, Weight::Regular) <= 80.0 + 1e-9),
            "{lines:?}"
        );
        assert_eq!(lines.concat().replace(' ', ""), s.replace(' ', ""));
    }

    #[test]
    fn long_tables_page_with_repeated_headings_and_page_numbers() {
        let rows = (0..120)
            .map(|i| Row::new(vec![format!("row{i}"), format!("{i}")]))
            .collect();
        let doc = Document {
            header: header(),
            orientation: Orientation::Portrait,
            blocks: vec![Block::Table(Table {
                columns: vec![
                    Column::new("Name", 3.0, Align::Left),
                    Column::new("Value", 1.0, Align::Right),
                ],
                rows,
            })],
        };
        let pages = layout(&doc);
        assert!(pages.len() >= 2, "{}", pages.len());
        let n = pages.len();
        for (i, p) in pages.iter().enumerate() {
            assert!(p.contains(&format!("Page {} of {n}", i + 1)));
            assert!(
                p.contains(">Name</text>"),
                "heading repeated on page {}",
                i + 1
            );
            assert!(p.contains("T &lt;&amp;&gt;"));
        }
        let all = pages.concat();
        for i in 0..120 {
            assert_eq!(all.matches(&format!(">row{i}</text>")).count(), 1);
        }
    }

    #[test]
    fn a_document_past_the_page_limit_stops_with_a_notice() {
        let rows = (0..600)
            .map(|i| Row::new(vec![format!("row{i}"), format!("{i}")]))
            .collect();
        let doc = Document {
            header: header(),
            orientation: Orientation::Portrait,
            blocks: vec![
                Block::Table(Table {
                    columns: vec![
                        Column::new("Name", 3.0, Align::Left),
                        Column::new("Value", 1.0, Align::Right),
                    ],
                    rows,
                }),
                Block::Heading("Afterwards".into()),
                Block::Table(Table {
                    columns: vec![Column::new("More", 1.0, Align::Left)],
                    rows: vec![Row::new(vec!["late".into()]); 7],
                }),
            ],
        };
        let whole = paginate(&doc, 1000);
        assert_eq!(whole.rows_left_out, 0);
        assert!(whole.pages.len() > 5, "{}", whole.pages.len());

        let cut = paginate(&doc, 5);
        assert_eq!(cut.pages.len(), 5);
        assert!(cut.pages[4].contains("The document stops here"));
        assert!(cut.pages[4].contains("Page 5 of 5"));
        let shown = cut.pages.concat().matches(">row").count();
        assert_eq!(cut.rows_left_out, 600 - shown + 7, "{shown} shown");
        assert!(cut.pages[4].contains(&format!("{} more table rows", cut.rows_left_out)));
        assert!(!cut.pages.concat().contains("Afterwards"));
    }
}
