//! Incremental Server-Sent Events decoder.
//!
//! Follows the WHATWG event-stream rules that matter for model APIs: lines end with LF, CRLF
//! or CR (a CR at the end of one chunk and an LF at the start of the next count as one line
//! end), `data:` lines of one event are joined with `\n`, a blank line dispatches the event,
//! lines starting with `:` are comments, one space after the colon is dropped, and a leading
//! byte-order mark is ignored. Chunk boundaries may fall anywhere, including inside a UTF-8
//! sequence.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
    /// The `id:` field, if any.
    pub id: Option<String>,
}

/// Decodes an event stream fed in arbitrary byte chunks.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended with CR: an LF starting the next chunk belongs to it.
    after_cr: bool,
    /// Nothing has been decoded yet (a BOM may come first).
    started: bool,
    /// Data lines of the event being built.
    data: String,
    /// Whether any `data` field was seen for the event being built.
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes and returns the events completed by them, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = chunk;
        if !self.started && !bytes.is_empty() {
            // Strip a UTF-8 BOM, which may itself be split across chunks.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let mut probe = self.line.clone();
            probe.extend_from_slice(bytes);
            if probe.len() < BOM.len() && BOM.starts_with(&probe) {
                self.line = probe;
                return out;
            }
            self.started = true;
            if probe.starts_with(BOM) {
                let skip = BOM.len() - self.line.len();
                self.line.clear();
                bytes = &bytes[skip..];
            }
        }
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(ev) = self.process_line(&line) {
                        out.push(ev);
                    }
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
        out
    }

    /// Ends the stream. An event whose lines were complete but which lacked the final blank
    /// line is dispatched; an unterminated last line is discarded, as the standard requires.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.line.clear();
        self.process_line(b"")
    }

    /// Whether bytes of an unfinished event are buffered (the stream stopped mid-event).
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    fn process_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let has_data = std::mem::take(&mut self.has_data);
            let mut data = std::mem::take(&mut self.data);
            let event = self.event.take();
            if !has_data {
                return None;
            }
            if data.ends_with('\n') {
                data.pop();
            }
            return Some(SseEvent {
                event,
                data,
                id: self.id.clone(),
            });
        }
        if line[0] == b':' {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                self.has_data = true;
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => self.event = Some(value.to_string()),
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.push(c));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn lf_crlf_and_cr_line_endings() {
        for sep in ["\n", "\r\n", "\r"] {
            let text =
                format!("data: a{sep}data: b{sep}{sep}: comment{sep}event: x{sep}data:c{sep}{sep}");
            let evs = decode_all(&[text.as_bytes()]);
            assert_eq!(evs.len(), 2, "{sep:?}");
            assert_eq!(evs[0].data, "a\nb");
            assert_eq!(evs[1].data, "c");
            assert_eq!(evs[1].event.as_deref(), Some("x"));
        }
    }

    #[test]
    fn every_split_point_gives_same_events() {
        let text =
            "\u{FEFF}data: {\"é\": 1}\r\n\r\ndata: two\r\n\r\n:keepalive\n\ndata: [DONE]\n\n";
        let bytes = text.as_bytes();
        let whole = decode_all(&[bytes]);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].data, "{\"é\": 1}");
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let evs = decode_all(&[&bytes[..i], &bytes[i..j], &bytes[j..]]);
                assert_eq!(evs, whole, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn empty_data_events_and_missing_final_blank_line() {
        let evs = decode_all(&[b"event: ping\n\ndata\n\ndata: last\n"]);
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].data, "");
        assert_eq!(evs[1].data, "last");
        let mut d = SseDecoder::new();
        assert!(d.push(b"data: partial").is_empty());
        assert!(d.has_partial());
        assert_eq!(d.finish(), None);
    }
}
