//! Unpacking PDF streams with a ceiling: how many bytes a stream becomes once its filters are
//! undone, found out without ever holding more than the ceiling. A few kilobytes of Flate can
//! unpack to gigabytes; the readers (pdf-extract, hayro) unpack a stream whole, so this is
//! asked first.
//!
//! Only the filters that turn bytes into more bytes are undone here. Image codecs (JPEG,
//! JPEG 2000, JBIG2, CCITT) end a chain: what they become is bounded by the image's
//! dimensions, which are checked separately.

use std::io::{Read, Write};

/// A stream unpacks to more than it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Over;

/// A filter that expands bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// zlib (or raw) deflate.
    Flate,
    /// LZW, with the early code-size change PDF uses by default.
    Lzw,
    /// ASCII base-85.
    Ascii85,
    /// Hexadecimal.
    AsciiHex,
    /// PackBits-style run lengths.
    RunLength,
}

/// `data` with `steps` undone in order, each result at most `cap` bytes. Corrupt data ends a
/// step early (the readers keep what came out before the damage, and so does this).
pub fn unpack(data: &[u8], steps: &[Step], cap: usize) -> Result<Vec<u8>, Over> {
    let mut bytes = std::borrow::Cow::Borrowed(data);
    for step in steps {
        bytes = std::borrow::Cow::Owned(one(&bytes, *step, cap)?);
    }
    if bytes.len() > cap {
        return Err(Over);
    }
    Ok(bytes.into_owned())
}

fn one(data: &[u8], step: Step, cap: usize) -> Result<Vec<u8>, Over> {
    match step {
        Step::Flate => flate(data, cap),
        Step::Lzw => lzw(data, cap),
        Step::Ascii85 => ascii85(data, cap),
        Step::AsciiHex => Ok(ascii_hex(data)),
        Step::RunLength => run_length(data, cap),
    }
}

/// Reads at most `cap + 1` bytes from `r`: one more than allowed is enough to know.
fn capped(r: impl Read, cap: usize) -> Result<Vec<u8>, Over> {
    let mut out = Vec::new();
    // An error (corrupt data) keeps what was produced before it.
    let _ = r.take((cap as u64).saturating_add(1)).read_to_end(&mut out);
    if out.len() > cap {
        return Err(Over);
    }
    Ok(out)
}

/// Deflate with a zlib header, as the specification says, or without one, as some writers do;
/// whichever yields more counts.
fn flate(data: &[u8], cap: usize) -> Result<Vec<u8>, Over> {
    let zlib = capped(flate2::read::ZlibDecoder::new(data), cap)?;
    if !zlib.is_empty() {
        return Ok(zlib);
    }
    capped(flate2::read::DeflateDecoder::new(data), cap)
}

/// A sink that refuses bytes past its cap, which stops the LZW decoder.
struct Capped {
    out: Vec<u8>,
    cap: usize,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.cap {
            return Err(std::io::ErrorKind::OutOfMemory.into());
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// LZW both with and without the early change (a stream's parameters pick one; the larger
/// result is the safe guess).
fn lzw(data: &[u8], cap: usize) -> Result<Vec<u8>, Over> {
    let early = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
    let late = weezl::decode::Decoder::new(weezl::BitOrder::Msb, 8);
    let mut best = Vec::new();
    for mut decoder in [early, late] {
        let mut sink = Capped {
            out: Vec::new(),
            cap,
        };
        let status = decoder.into_stream(&mut sink).decode_all(data).status;
        if matches!(&status, Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory) {
            return Err(Over);
        }
        if sink.out.len() > best.len() {
            best = sink.out;
        }
    }
    Ok(best)
}

fn ascii85(data: &[u8], cap: usize) -> Result<Vec<u8>, Over> {
    let mut out = Vec::new();
    let mut group = [0u8; 5];
    let mut n = 0;
    for &c in data {
        match c {
            b'~' => break,
            b'z' if n == 0 => out.extend_from_slice(&[0; 4]),
            b'!'..=b'u' => {
                group[n] = c - b'!';
                n += 1;
                if n == 5 {
                    out.extend_from_slice(&base85(&group));
                    n = 0;
                }
            }
            _ => continue,
        }
        if out.len() > cap {
            return Err(Over);
        }
    }
    if n > 1 {
        // A final partial group stands for n - 1 bytes.
        group[n..].fill(84);
        out.extend_from_slice(&base85(&group)[..n - 1]);
    }
    if out.len() > cap {
        return Err(Over);
    }
    Ok(out)
}

fn base85(group: &[u8; 5]) -> [u8; 4] {
    let v = group
        .iter()
        .fold(0u32, |v, &d| v.wrapping_mul(85).wrapping_add(u32::from(d)));
    v.to_be_bytes()
}

/// Hexadecimal never grows (two characters a byte).
fn ascii_hex(data: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> = data
        .iter()
        .take_while(|&&c| c != b'>')
        .filter_map(|&c| (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok()))
        .collect();
    digits
        .chunks(2)
        .map(|p| (p[0] << 4) | p.get(1).copied().unwrap_or(0))
        .collect()
}

/// Run lengths: a length byte below 128 copies that many plus one bytes, above 128 repeats the
/// next byte 257 minus it times, 128 ends.
fn run_length(data: &[u8], cap: usize) -> Result<Vec<u8>, Over> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&len) = data.get(i) {
        match len {
            128 => break,
            0..=127 => {
                let end = (i + 2 + usize::from(len)).min(data.len());
                out.extend_from_slice(&data[(i + 1).min(end)..end]);
                i = end;
            }
            _ => {
                let Some(&b) = data.get(i + 1) else { break };
                out.resize(out.len() + 257 - usize::from(len), b);
                i += 2;
            }
        }
        if out.len() > cap {
            return Err(Over);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).expect("compress");
        e.finish().expect("compress")
    }

    #[test]
    fn flate_unpacks_within_the_cap_and_stops_past_it() {
        let packed = zlib(&[0; 100_000]);
        assert!(packed.len() < 1000);
        assert_eq!(
            unpack(&packed, &[Step::Flate], 100_000).map(|v| v.len()),
            Ok(100_000)
        );
        assert_eq!(unpack(&packed, &[Step::Flate], 99_999), Err(Over));
        // Twice packed: the second layer is measured on what the first gave.
        let twice = zlib(&zlib(&[7; 1_000_000]));
        assert_eq!(
            unpack(&twice, &[Step::Flate, Step::Flate], 10_000),
            Err(Over)
        );
        // Damaged data keeps what came before the damage.
        let mut broken = zlib(b"BT (Panel LP-1) Tj ET");
        broken.truncate(broken.len() - 6);
        assert!(unpack(&broken, &[Step::Flate], 1000).is_ok());
    }

    #[test]
    fn lzw_ascii85_hex_and_run_length_are_measured() {
        let mut packed = Vec::new();
        weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            .into_stream(&mut packed)
            .encode_all(&[b'a'; 200_000][..])
            .status
            .expect("lzw");
        assert_eq!(
            unpack(&packed, &[Step::Lzw], 200_000).map(|v| v.len()),
            Ok(200_000)
        );
        assert_eq!(unpack(&packed, &[Step::Lzw], 1000), Err(Over));
        assert_eq!(
            unpack(b"87cURD]i,\"Ebo7~>", &[Step::Ascii85], 100),
            Ok(b"Hello World".to_vec())
        );
        assert_eq!(unpack(b"zzzz~>", &[Step::Ascii85], 15), Err(Over));
        assert_eq!(
            unpack(b"48 65 6c6C6f 7>", &[Step::AsciiHex], 100),
            Ok(b"Hellop".to_vec()),
            "a final odd digit stands for its high half"
        );
        // 129 repeats the next byte 128 times.
        let runs = [129, b'x'].repeat(100);
        assert_eq!(
            unpack(&runs, &[Step::RunLength], 12_800).map(|v| v.len()),
            Ok(12_800)
        );
        assert_eq!(unpack(&runs, &[Step::RunLength], 12_799), Err(Over));
        assert_eq!(
            unpack(&[2, b'a', b'b', b'c', 128], &[Step::RunLength], 10),
            Ok(b"abc".to_vec())
        );
    }
}
