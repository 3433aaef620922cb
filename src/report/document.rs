//! What a report says, independent of how it is drawn: a header and a list of blocks
//! (headings, facts, tables, notes). The layout turns it into pages.

/// Page orientation (US Letter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    /// 612 × 792 pt.
    Portrait,
    /// 792 × 612 pt.
    Landscape,
}

/// Who and what the document is for; printed on every page.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Document title ("Panel schedule LP-1").
    pub title: String,
    /// Project name.
    pub project: String,
    /// NEC edition in force ("NEC 2023").
    pub edition: String,
    /// Date of issue (ISO date).
    pub date: String,
    /// Who asked for it.
    pub requested_by: String,
}

/// Horizontal alignment of a table column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
    /// Short codes.
    Center,
}

/// A table column: title, share of the table width, alignment.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Heading.
    pub title: String,
    /// Relative width (the widths of a table are scaled to the page).
    pub width: f64,
    /// Alignment of the cells.
    pub align: Align,
}

impl Column {
    /// A column.
    pub fn new(title: &str, width: f64, align: Align) -> Self {
        Self {
            title: title.into(),
            width,
            align,
        }
    }
}

/// How a row stands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowStyle {
    /// Ordinary row.
    Normal,
    /// Totals (bold).
    Total,
    /// Attention (shaded red): a failed check, a violation.
    Alert,
    /// Muted: spare spaces, informational rows.
    Muted,
}

/// One table row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// One text per column.
    pub cells: Vec<String>,
    /// Its style.
    pub style: RowStyle,
}

impl Row {
    /// An ordinary row.
    pub fn new(cells: Vec<String>) -> Self {
        Self {
            cells,
            style: RowStyle::Normal,
        }
    }

    /// The same row in another style.
    pub fn styled(mut self, style: RowStyle) -> Self {
        self.style = style;
        self
    }
}

/// A table; its column headings repeat on every page it spans.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Columns.
    pub columns: Vec<Column>,
    /// Rows.
    pub rows: Vec<Row>,
}

/// One part of the body.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A section heading.
    Heading(String),
    /// Label and value pairs, laid out in columns.
    Facts(Vec<(String, String)>),
    /// A table.
    Table(Table),
    /// Paragraphs (wrapped), each a bullet.
    Notes(Vec<String>),
}

/// A whole document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Printed on every page.
    pub header: Header,
    /// Page orientation.
    pub orientation: Orientation,
    /// Body, top to bottom.
    pub blocks: Vec<Block>,
}

/// Formats a number with thousands separators and `places` decimals ("12,480", "3.25").
pub fn num(v: f64, places: usize) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let s = format!("{:.*}", places, v.abs());
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if v < 0.0 && s.chars().any(|c| c != '0' && c != '.') {
        "-"
    } else {
        ""
    };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::num;

    #[test]
    fn numbers_are_grouped_and_rounded() {
        assert_eq!(num(12480.0, 0), "12,480");
        assert_eq!(num(1234567.891, 2), "1,234,567.89");
        assert_eq!(num(-1500.0, 0), "-1,500");
        assert_eq!(num(-0.001, 1), "0.0");
        assert_eq!(num(999.0, 0), "999");
        assert_eq!(num(f64::NAN, 0), "-");
    }
}
