//! The model writes Markdown; Slack shows `mrkdwn`. This converts one into the other and
//! cuts a message into Block Kit sections that fit Slack's limits.

use crate::platforms::render::split_message;

/// Slack's limit for the text of one section block.
pub const SECTION_MAX: usize = 3000;
/// What one Slack message carries before the renderer starts a new one.
pub const MESSAGE_MAX: usize = 12_000;

/// How Slack writes a mention of a user.
fn mention(id: &str) -> String {
    format!("<@{id}>")
}

/// Escapes the three characters Slack gives meaning to in message text; people the core
/// named become mentions.
pub fn escape(text: &str) -> String {
    crate::core::mention::render(&escape_only(text), mention)
}

fn escape_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Converts Markdown to Slack mrkdwn: `**bold**` to `*bold*`, `*italic*` to `_italic_`,
/// `~~strike~~` to `~strike~`, `[text](url)` to `<url|text>`, headings to bold lines and
/// list markers to bullets; `& < >` are escaped everywhere, code is otherwise left alone.
pub fn to_mrkdwn(markdown: &str) -> String {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            // Slack shows a fence's language tag as text, so it is dropped.
            let rest = trimmed.trim_start_matches('`');
            if in_code || rest.trim().is_empty() || !rest.contains("```") {
                in_code = !in_code;
                out.push("```".to_string());
                continue;
            }
        }
        if in_code {
            out.push(escape(line));
            continue;
        }
        out.push(convert_line(line));
    }
    let mut text = out.join("\n");
    if markdown.ends_with('\n') {
        text.push('\n');
    }
    crate::core::mention::render(&text, mention)
}

fn convert_line(line: &str) -> String {
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let title = trimmed[hashes..].trim().trim_matches('*').trim();
        return format!("*{}*", inline(title));
    }
    for marker in ["- ", "* ", "+ "] {
        if let Some(item) = trimmed.strip_prefix(marker) {
            return format!("{indent}• {}", inline(item));
        }
    }
    format!("{indent}{}", inline(trimmed))
}

/// Converts the inline syntax of one line (outside code blocks).
fn inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // Code spans: escaped, not converted.
        if c == '`' {
            if let Some(end) = find(&chars, i + 1, &['`']) {
                out.push('`');
                out.push_str(&escape(&collect(&chars[i + 1..end])));
                out.push('`');
                i = end + 1;
                continue;
            }
        }
        let mut converted = false;
        for (marker, slack) in [(['*', '*'], '*'), (['_', '_'], '*'), (['~', '~'], '~')] {
            if starts(&chars, i, &marker) {
                if let Some(end) = find(&chars, i + 2, &marker) {
                    if end > i + 2 {
                        out.push(slack);
                        out.push_str(&inline(&collect(&chars[i + 2..end])));
                        out.push(slack);
                        i = end + 2;
                        converted = true;
                        break;
                    }
                }
            }
        }
        if converted {
            continue;
        }
        if starts(&chars, i, &['*', '*']) || starts(&chars, i, &['~', '~']) {
            // An unmatched double marker is kept as typed.
            out.push(c);
            out.push(c);
            i += 2;
            continue;
        }
        if c == '*' && chars.get(i + 1).is_some_and(|n| !n.is_whitespace()) {
            if let Some(end) = find(&chars, i + 1, &['*']) {
                if !chars[end - 1].is_whitespace() {
                    out.push('_');
                    out.push_str(&inline(&collect(&chars[i + 1..end])));
                    out.push('_');
                    i = end + 1;
                    continue;
                }
            }
        }
        if c == '[' {
            if let Some((label, url, next)) = link(&chars, i) {
                out.push_str(&format!("<{url}|{}>", escape(&label).replace('|', "¦")));
                i = next;
                continue;
            }
        }
        if c == '<' {
            // Markdown autolink <https://...>: keep it a link.
            if let Some(end) = find(&chars, i + 1, &['>']) {
                let inner = collect(&chars[i + 1..end]);
                if is_url(&inner) {
                    out.push_str(&format!("<{inner}>"));
                    i = end + 1;
                    continue;
                }
            }
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

fn collect(chars: &[char]) -> String {
    chars.iter().collect()
}

fn starts(chars: &[char], at: usize, pat: &[char]) -> bool {
    chars.len() >= at + pat.len() && chars[at..at + pat.len()] == *pat
}

/// First index >= `from` where `pat` starts.
fn find(chars: &[char], from: usize, pat: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&j| starts(chars, j, pat))
}

fn is_url(s: &str) -> bool {
    (s.starts_with("http://") || s.starts_with("https://") || s.starts_with("mailto:"))
        && !s.contains(char::is_whitespace)
        && !s.contains(['|', '<', '>'])
}

/// `[label](url)` starting at `at`: the label, the URL and the index after it.
fn link(chars: &[char], at: usize) -> Option<(String, String, usize)> {
    let close = find(chars, at + 1, &[']'])?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = find(chars, close + 2, &[')'])?;
    let url = collect(&chars[close + 2..end]);
    if !is_url(&url) {
        return None;
    }
    Some((collect(&chars[at + 1..close]), url, end + 1))
}

/// Cuts one message's Markdown into mrkdwn sections of at most [`SECTION_MAX`] characters,
/// at paragraph, line or word boundaries, keeping code blocks closed in every section.
pub fn sections(markdown: &str) -> Vec<String> {
    sections_within(markdown, SECTION_MAX - 200)
}

fn sections_within(markdown: &str, budget: usize) -> Vec<String> {
    let mut out = Vec::new();
    for piece in split_message(markdown, budget) {
        let converted = to_mrkdwn(&piece);
        if converted.chars().count() <= SECTION_MAX || budget <= 200 {
            // At a 200-character budget escaping cannot outgrow the limit; truncation is
            // the last resort for pathological input.
            out.push(truncate(&converted, SECTION_MAX));
        } else {
            // Escaping made it longer than Slack allows: cut this piece finer.
            out.extend(sections_within(&piece, budget * 2 / 3));
        }
    }
    out
}

/// At most `max` characters of `text`, ending in "…" when cut.
pub use crate::platforms::render::clip as truncate;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_common_markdown() {
        assert_eq!(to_mrkdwn("**Use 8 AWG** copper"), "*Use 8 AWG* copper");
        assert_eq!(to_mrkdwn("an *italic* word"), "an _italic_ word");
        assert_eq!(to_mrkdwn("~~old~~ new"), "~old~ new");
        assert_eq!(
            to_mrkdwn("see [NEC 310.16](https://example.com/310?a=1&b=2)"),
            "see <https://example.com/310?a=1&b=2|NEC 310.16>"
        );
        assert_eq!(to_mrkdwn("## Result"), "*Result*");
        assert_eq!(to_mrkdwn("- one\n  - two"), "• one\n  • two");
        assert_eq!(to_mrkdwn("I < 30 A & V > 2"), "I &lt; 30 A &amp; V &gt; 2");
        assert_eq!(to_mrkdwn("2 * 3 * 4"), "2 * 3 * 4");
        assert_eq!(to_mrkdwn("`a<b` and **x & y**"), "`a&lt;b` and *x &amp; y*");
        assert_eq!(to_mrkdwn("<https://nfpa.org>"), "<https://nfpa.org>");
    }

    #[test]
    fn code_blocks_are_escaped_but_not_converted() {
        let md = "```rust\nlet x = **y** < 3;\n```\nafter **b**";
        assert_eq!(to_mrkdwn(md), "```\nlet x = **y** &lt; 3;\n```\nafter *b*");
    }

    #[test]
    fn sections_fit_the_limit_even_when_escaping_grows_text() {
        let md = "a < b & c > d ".repeat(1500);
        let parts = sections(&md);
        assert!(parts.len() > 2);
        assert!(parts.iter().all(|p| p.chars().count() <= SECTION_MAX));
        assert!(parts.iter().all(|p| !p.contains("&amp;lt;")));
    }
}
