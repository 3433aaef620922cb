//! PDFs built byte by byte for the tests of the reading limits: each a few kilobytes on disk
//! that would unpack or allocate far beyond that (the shapes black-box testing reported, and
//! one no check of the file can catch).

/// One object: its dictionary (for a stream, the entries inside `<< >>` besides `/Length`) and
/// its stream data, if it is a stream.
pub type Obj = (String, Option<Vec<u8>>);

/// A PDF of `objects`, numbered from 1 (object 1 is the catalog), with a correct xref table.
pub fn pdf(objects: &[Obj]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (i, (dict, stream)) in objects.iter().enumerate() {
        offsets.push(out.len());
        match stream {
            None => out.extend(format!("{} 0 obj\n{dict}\nendobj\n", i + 1).bytes()),
            Some(data) => {
                let head = format!(
                    "{} 0 obj\n<<{dict} /Length {}>>\nstream\n",
                    i + 1,
                    data.len()
                );
                out.extend(head.bytes());
                out.extend(data);
                out.extend(b"\nendstream\nendobj\n");
            }
        }
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for o in offsets {
        out.extend(format!("{o:010} 00000 n \n").bytes());
    }
    let trailer = format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    );
    out.extend(trailer.bytes());
    out
}

/// zlib data that inflates to `block` repeated `times` times, built from one compressed copy
/// of the block (each copy a fully flushed deflate block, so copies stand alone): 144 MB of
/// zeros are made in milliseconds.
pub fn repeated_zlib(block: &[u8], times: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let mut c = Compress::new(Compression::best(), false);
    let mut one = Vec::with_capacity(block.len() / 100 + 1024);
    c.compress_vec(block, &mut one, FlushCompress::Full)
        .expect("deflate");
    let mut end = Vec::with_capacity(64);
    let mut c = Compress::new(Compression::best(), false);
    c.compress_vec(&[], &mut end, FlushCompress::Finish)
        .expect("deflate");
    let mut out = vec![0x78, 0xDA];
    for _ in 0..times {
        out.extend_from_slice(&one);
    }
    out.extend_from_slice(&end);
    out.extend_from_slice(&adler32_repeated(block, times).to_be_bytes());
    out
}

/// Adler-32 of `block` repeated `times` times: one pass over the block, then each copy in
/// constant time (a copy adds its byte sum to `a`, and `len·a + its weighted sum` to `b`).
fn adler32_repeated(block: &[u8], times: usize) -> u32 {
    const M: u64 = 65521;
    let len = block.len() as u64;
    let (mut sum, mut weighted) = (0u64, 0u64);
    for (j, &x) in block.iter().enumerate() {
        sum = (sum + u64::from(x)) % M;
        weighted = (weighted + (len - j as u64) % M * u64::from(x)) % M;
    }
    let (mut a, mut b) = (1u64, 0u64);
    for _ in 0..times {
        b = (b + len % M * a + weighted) % M;
        a = (a + sum) % M;
    }
    ((b << 16) | a) as u32
}

fn catalog_and_pages(kids: &str, count: usize) -> Vec<Obj> {
    vec![
        ("<< /Type /Catalog /Pages 2 0 R >>".into(), None),
        (
            format!("<< /Type /Pages /Kids [{kids}] /Count {count} >>"),
            None,
        ),
    ]
}

const PAGE: &str = "/Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]";
const FONT: &str = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";

/// One page whose content stream unpacks to `mb` MB of `0 0 Td` (text moves, the operator
/// pdf-extract parses into 85 bytes each): 48 kB on the wire for 16 MB.
pub fn content_bomb(mb: usize) -> Vec<u8> {
    let block = "0 0 Td\n".repeat(1_000_000 / 7);
    let mut objects = catalog_and_pages("3 0 R", 1);
    objects.push((
        format!("<< {PAGE} /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
        None,
    ));
    let data = repeated_zlib(block.as_bytes(), mb * 1_000_000 / block.len());
    objects.push((" /Filter /FlateDecode".into(), Some(data)));
    objects.push((FONT.into(), None));
    pdf(&objects)
}

/// `pages` pages, each drawing `mb` MB of content: every page within the page limit, together
/// past the file's. With `shared`, all pages draw one stream (a file may), which is stored
/// once but parsed once a page.
pub fn spread_bomb(pages: usize, mb: usize, shared: bool) -> Vec<u8> {
    // Objects: 1 catalog, 2 page tree, 3 font, then the pages, then their streams.
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", i + 4)).collect();
    let mut objects = catalog_and_pages(&kids.join(" "), pages);
    objects.push((FONT.into(), None));
    for i in 0..pages {
        let contents = 4 + pages + if shared { 0 } else { i };
        objects.push((
            format!("<< {PAGE} /Contents {contents} 0 R /Resources << /Font << /F1 3 0 R >> >> >>"),
            None,
        ));
    }
    let block = "0 0 Td\n".repeat(1_000_000 / 7);
    let data = repeated_zlib(block.as_bytes(), mb * 1_000_000 / block.len());
    for _ in 0..if shared { 1 } else { pages } {
        objects.push((" /Filter /FlateDecode".to_string(), Some(data.clone())));
    }
    pdf(&objects)
}

/// One page drawing a `side` × `side` grey image of zeros: 141 kB on the wire for
/// 12,000 × 12,000 (144 MB decoded).
pub fn image_bomb(side: usize) -> Vec<u8> {
    let mut objects = catalog_and_pages("3 0 R", 1);
    objects.push((
        format!("<< {PAGE} /Contents 4 0 R /Resources << /XObject << /Im1 5 0 R >> >> >>"),
        None,
    ));
    objects.push((
        String::new(),
        Some(b"q 612 0 0 792 0 0 cm /Im1 Do Q".to_vec()),
    ));
    let row_block = vec![0u8; side * 100];
    let data = repeated_zlib(&row_block, side / 100);
    let dict = format!(
        " /Type /XObject /Subtype /Image /Width {side} /Height {side} /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode"
    );
    objects.push((dict, Some(data)));
    pdf(&objects)
}

/// `n` pages of one line of text each.
pub fn many_pages(n: usize) -> Vec<u8> {
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", i + 4)).collect();
    let mut objects = catalog_and_pages(&kids.join(" "), n);
    objects.push((FONT.into(), None));
    for i in 0..n {
        objects.push((
            format!(
                "<< {PAGE} /Contents {} 0 R /Resources << /Font << /F1 3 0 R >> >> >>",
                4 + n + i
            ),
            None,
        ));
    }
    for i in 0..n {
        let text =
            format!("BT /F1 12 Tf 72 720 Td (Page {i}: circuit 1 kitchen receptacles 20 A) Tj ET");
        objects.push((String::new(), Some(text.into_bytes())));
    }
    pdf(&objects)
}

/// 860 bytes whose font maps the character codes 0 to 16,777,215 one by one: pdf-extract fills
/// a map entry for each (3.7 GB and 39 s when measured). Nothing unpacks; only a limit on the
/// reader's memory stops it.
pub fn cmap_bomb() -> Vec<u8> {
    let cmap = "/CIDInit /ProcSet findresource begin 12 dict begin begincmap \
        1 begincodespacerange <00> <FF> endcodespacerange \
        1 beginbfrange <0000> <FFFFFF> <00000041> endbfrange endcmap end end";
    let mut objects = catalog_and_pages("3 0 R", 1);
    objects.push((
        format!("<< {PAGE} /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
        None,
    ));
    objects.push((
        String::new(),
        Some(b"BT /F1 12 Tf 72 720 Td (Panel LP-1 circuit 1 kitchen) Tj ET".to_vec()),
    ));
    objects.push((
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>".into(),
        None,
    ));
    objects.push((String::new(), Some(cmap.as_bytes().to_vec())));
    pdf(&objects)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    #[test]
    fn repeated_zlib_is_a_valid_zlib_stream_of_the_repeats() {
        let z = super::repeated_zlib(b"0 0 Td\n", 1000);
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(&z[..])
            .read_to_end(&mut out)
            .expect("valid, checksum included");
        assert_eq!(out, b"0 0 Td\n".repeat(1000));
    }
}
