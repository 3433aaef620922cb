//! Tool calls a model wrote into its answer text instead of the provider's `tool_calls`.
//!
//! Small open models served by OpenAI-compatible servers (llama.cpp, Ollama, vLLM) often
//! answer a tool request with the call as text: a fenced JSON block
//! (`{"name": …, "arguments": {…}}`), a `<tool_call>` tag the server did not parse (or the
//! `<tools>` tag the template lists the tools in, which small models copy), or a bare JSON
//! object. Shown to the person, that is a page of JSON and no answer. [`TextCalls`]
//! watches the streamed text: prose streams through untouched, a line that opens such a block
//! is held back, and at the end of the turn the held text becomes tool calls when it has that
//! exact shape, or is released as text when it has not. Nothing is trusted more than a real
//! call: the registry checks the name and the arguments as it does for any other call.
//!
//! A block that is plainly a call attempt (`"name"` and `"arguments"` or `"parameters"` keys)
//! but not valid JSON (`"count": 1500 VA`, `"length": 1000 / 3.5`) is a call too, whose
//! arguments the registry refuses as not JSON: the model reads what was wrong, instead of the
//! person reading the broken call.
//!
//! Inside a call tag, a call written as XML (`<function name="…">` or `<function=…>` with
//! `<property name="k">`, `<parameter name="k">` or `<parameter=k>` elements, as the 1.5B
//! Qwen2.5-Coder writes when it copies the shape of the tool list) is a call too; each value is
//! read as JSON where it parses (`16`, `true`) and as a string otherwise.
//!
//! A `<tool_response>` block is the template's wrapper for tool results: a model that writes
//! one is echoing (or inventing) a result, never answering, so it is dropped; an answer that
//! was nothing else comes back empty and the turn asks the model again. So does an answer that
//! is nothing but JSON data, bare or fenced (a tool's result copied out as the answer): it has
//! no words for the person.

use serde_json::{Map, Value};

use super::StreamEvent;

/// The tags a call is written in: the one Qwen/Hermes-style templates ask for, and the one
/// they list the tools in (small models write calls in it too).
const TAGS: [(&str, &str); 2] = [("<tool_call>", "</tool_call>"), ("<tools>", "</tools>")];

/// The tag a template wraps tool results in: what a model writes in it is never an answer.
const ECHO: (&str, &str) = ("<tool_response>", "</tool_response>");

/// What opens a held block: a fence, one of the [`TAGS`] or the [`ECHO`] tag.
const OPENERS: [&str; 4] = ["```", TAGS[0].0, TAGS[1].0, ECHO.0];

/// A call recovered from the text: name and arguments (as JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCall {
    /// The tool name as written.
    pub name: String,
    /// The arguments object, as JSON text.
    pub arguments: String,
}

/// Filters a turn's streamed text, holding back what may be a tool call written as text.
#[derive(Debug, Default)]
pub struct TextCalls {
    /// Whether the request offered tools: only then can held text be calls.
    offers_tools: bool,
    /// Whether any text was released (a bare JSON object counts only at the very start).
    released_any: bool,
    /// Text of the current line not yet released (it may open a block).
    line: String,
    /// Everything from the first line that opened a block: held to the end of the turn.
    held: Option<String>,
}

impl TextCalls {
    /// A filter for a turn's text. In a request that offered no tools, held text is never read
    /// as calls, but data with no words is still no answer.
    pub fn new(offers_tools: bool) -> Self {
        Self {
            offers_tools,
            ..Self::default()
        }
    }

    /// Takes a piece of streamed text; pushes what can be shown now onto `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        if let Some(held) = &mut self.held {
            held.push_str(text);
            return;
        }
        let mut release = String::new();
        let mut pos = 0;
        while pos < text.len() {
            let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
            self.line.push_str(&text[pos..end]);
            pos = end;
            let start = self.line.trim_start();
            // A bare object is a call only when it is the whole answer so far.
            let first = !self.released_any && release.trim().is_empty();
            if (first && start.starts_with('{')) || OPENERS.iter().any(|o| start.starts_with(o)) {
                let mut held = std::mem::take(&mut self.line);
                held.push_str(&text[pos..]);
                self.held = Some(held);
                break;
            }
            if self.line.ends_with('\n') || !could_open(start) {
                release.push_str(&std::mem::take(&mut self.line));
            }
        }
        if !release.is_empty() {
            self.released_any |= !release.trim().is_empty();
            out.push(StreamEvent::TextDelta(release));
        }
    }

    /// Ends the turn. Returns the calls found in the held text (none when the provider sent
    /// real calls: then everything held is text), and pushes any text left onto `out`.
    pub fn finish(&mut self, real_calls: bool, out: &mut Vec<StreamEvent>) -> Vec<TextCall> {
        let mut rest = std::mem::take(&mut self.line);
        let Some(held) = self.held.take() else {
            if !rest.is_empty() {
                out.push(StreamEvent::TextDelta(rest));
            }
            return Vec::new();
        };
        let (calls, text) = if real_calls || !self.offers_tools {
            (Vec::new(), held)
        } else {
            extract(&held)
        };
        // Nothing but data, and no words before it: no answer, with or without calls beside
        // it (a small model writes a call and copies results out in one answer).
        let text = if !self.released_any && data_only(&text) {
            String::new()
        } else {
            text
        };
        rest.insert_str(0, &text);
        if !rest.trim().is_empty() {
            out.push(StreamEvent::TextDelta(rest));
        }
        calls
    }
}

/// Whether a partial line (trimmed at the start) may still grow into an opener.
fn could_open(start: &str) -> bool {
    start.is_empty() || OPENERS.iter().any(|o| o.starts_with(start))
}

/// Splits held text into the calls it writes and the text around them. When no block is a
/// call, the whole text comes back unchanged.
pub fn extract(held: &str) -> (Vec<TextCall>, String) {
    let mut calls = Vec::new();
    let mut text = String::new();
    let mut markup_only = false;
    let mut rest = held;
    while !rest.is_empty() {
        let Some((before, block, after)) = next_block(rest) else {
            text.push_str(rest);
            break;
        };
        if block.kind == Kind::Echo {
            text.push_str(before);
            markup_only = true;
            rest = after;
            continue;
        }
        match (parse_calls(block.body), block.kind) {
            (Some(found), _) => {
                text.push_str(before);
                calls.extend(found);
            }
            // An empty tag is markup with nothing in it, not something to show.
            (None, Kind::CallTag) if block.body.trim().is_empty() => {
                text.push_str(before);
                markup_only = true;
            }
            (None, kind) => match attempted_call(block.body)
                .map(|call| vec![call])
                .or_else(|| {
                    (kind == Kind::CallTag)
                        .then(|| xml_calls(block.body))
                        .flatten()
                }) {
                Some(found) => {
                    text.push_str(before);
                    calls.extend(found);
                }
                None => text.push_str(&rest[..rest.len() - after.len()]),
            },
        }
        rest = after;
    }
    if calls.is_empty() && !markup_only {
        return (calls, held.to_string());
    }
    (calls, text.trim().to_string())
}

/// Whether `held` is nothing but JSON objects or lists, bare or fenced, none of them a call;
/// the last one may be cut off (an answer stopped at the output limit while copying a result).
fn data_only(held: &str) -> bool {
    let mut rest = held;
    let mut any = false;
    loop {
        let tail = rest.trim_start();
        let cut_off = tail.starts_with(['{', '['])
            && matches!(
                serde_json::Deserializer::from_str(tail).into_iter::<Value>().next(),
                Some(Err(e)) if e.is_eof()
            );
        if cut_off {
            return true;
        }
        let Some((before, block, after)) = next_block(rest) else {
            break;
        };
        if !before.trim().is_empty() || block.kind != Kind::Code {
            return false;
        }
        let body = block.body.trim();
        let data = body.starts_with(['{', '['])
            && serde_json::from_str::<Value>(body).map_or_else(|e| e.is_eof(), |_| true);
        if !data {
            return false;
        }
        any = true;
        rest = after;
    }
    any && rest.trim().is_empty()
}

/// What a held block was written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A fence or a bare object.
    Code,
    /// One of the [`TAGS`].
    CallTag,
    /// The [`ECHO`] tag.
    Echo,
}

/// A block found in held text.
struct Block<'a> {
    body: &'a str,
    kind: Kind,
}

/// The next block in `s`: text before it, the block, and the text after it.
fn next_block(s: &str) -> Option<(&str, Block<'_>, &str)> {
    let fence = s.find("```");
    let tag = TAGS
        .iter()
        .chain(std::iter::once(&ECHO))
        .filter_map(|&(open, close)| s.find(open).map(|at| (at, open, close)))
        .min_by_key(|&(at, _, _)| at);
    let brace = s.find('{');
    let first = [fence, tag.map(|(at, _, _)| at), brace]
        .into_iter()
        .flatten()
        .min()?;
    let until = |body_start: usize, close: &str| match s[body_start..].find(close) {
        Some(i) => (body_start + i, body_start + i + close.len()),
        None => (s.len(), s.len()),
    };
    if Some(first) == fence {
        let open = first + 3;
        // The fence's language tag (json, tool_call, …) runs to the end of its line.
        let body_start = s[open..].find('\n').map_or(s.len(), |i| open + i + 1);
        let (body_end, after) = until(body_start, "```");
        let body = &s[body_start..body_end];
        let block = Block {
            body,
            kind: Kind::Code,
        };
        return Some((&s[..first], block, &s[after..]));
    }
    if let Some((at, open, close)) = tag.filter(|&(at, _, _)| at == first) {
        let body_start = at + open.len();
        let (body_end, after) = until(body_start, close);
        let body = &s[body_start..body_end];
        let kind = if open == ECHO.0 {
            Kind::Echo
        } else {
            Kind::CallTag
        };
        let block = Block { body, kind };
        return Some((&s[..first], block, &s[after..]));
    }
    // A bare object: as far as a JSON value parses from here.
    let mut values = serde_json::Deserializer::from_str(&s[first..]).into_iter::<Value>();
    match values.next() {
        Some(Ok(_)) => {
            let end = first + values.byte_offset();
            let body = &s[first..end];
            let block = Block {
                body,
                kind: Kind::Code,
            };
            Some((&s[..first], block, &s[end..]))
        }
        // Not JSON, but written as a call: the object as far as its braces balance.
        _ if looks_like_call(&s[first..]) => {
            let end = first + balanced_end(&s[first..]);
            let block = Block {
                body: &s[first..end],
                kind: Kind::Code,
            };
            Some((&s[..first], block, &s[end..]))
        }
        _ => {
            let end = first + 1;
            Some((
                &s[..end],
                Block {
                    body: "",
                    kind: Kind::Code,
                },
                &s[end..],
            ))
        }
    }
}

/// The calls a block's body writes: one call object, a list of them, or `{"tool_calls": […]}`.
fn parse_calls(body: &str) -> Option<Vec<TextCall>> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut o) if o.contains_key("tool_calls") => match o.remove("tool_calls") {
            Some(Value::Array(items)) => items,
            _ => return None,
        },
        other => vec![other],
    };
    if items.is_empty() {
        return None;
    }
    items
        .into_iter()
        .map(|item| match item {
            Value::Object(o) => call_of(o),
            _ => None,
        })
        .collect()
}

/// One call object: `{"name", "arguments"|"parameters"}`, possibly wrapped as
/// `{"type": "function", "function": {…}}`. Any other key means it is not a call.
fn call_of(mut o: Map<String, Value>) -> Option<TextCall> {
    if let Some(Value::Object(inner)) = o.remove("function") {
        if o.keys().any(|k| k != "type" && k != "id") {
            return None;
        }
        return call_of(inner);
    }
    if o.keys().any(|k| {
        !matches!(
            k.as_str(),
            "name" | "arguments" | "parameters" | "id" | "type"
        )
    }) {
        return None;
    }
    let name = match o.remove("name")? {
        Value::String(n) if is_tool_name(&n) => n,
        _ => return None,
    };
    let arguments = match o.remove("arguments").or_else(|| o.remove("parameters")) {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s,
        Some(args @ Value::Object(_)) => args.to_string(),
        Some(_) => return None,
    };
    Some(TextCall {
        // Some models prefix the OpenAI namespace.
        name: name.strip_prefix("functions.").unwrap_or(&name).to_string(),
        arguments,
    })
}

/// Whether text that is not JSON was still written as a call object.
fn looks_like_call(body: &str) -> bool {
    let body = body.trim_start();
    (body.starts_with('{') || body.starts_with('['))
        && body.contains("\"name\"")
        && (body.contains("\"arguments\"") || body.contains("\"parameters\""))
}

/// The length of the object that opens `s` (which starts with `{`), counting braces outside
/// strings; all of `s` when they never balance.
fn balanced_end(s: &str) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// A call written with broken JSON: named as written (made a valid tool name, so any provider
/// accepts it back in the history), with the broken text as its arguments, which the registry
/// refuses as not JSON, saying where.
fn attempted_call(body: &str) -> Option<TextCall> {
    if !looks_like_call(body) || serde_json::from_str::<Value>(body.trim()).is_ok() {
        return None;
    }
    let name = written_name(body).unwrap_or_default();
    let mut name: String = name
        .strip_prefix("functions.")
        .unwrap_or(&name)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        name = "unnamed_call".into();
    }
    Some(TextCall {
        name,
        arguments: body.trim().to_string(),
    })
}

/// The calls of a tag body written as XML, one per `<function …>` element; `None` when it
/// holds none or one is not a tool name.
fn xml_calls(body: &str) -> Option<Vec<TextCall>> {
    let mut calls = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find("<function") {
        let (name, head, inner) = element(&rest[at..], "function")?;
        if !is_tool_name(&name) {
            return None;
        }
        // `<function name="t" arguments='{…}'/>`: the arguments as one JSON attribute.
        let mut args = match attribute(head, "arguments").map(serde_json::from_str::<Value>) {
            Some(Ok(Value::Object(map))) => map,
            _ => Map::new(),
        };
        for tag in ["property", "parameter"] {
            let mut props = inner;
            while let Some(p) = props.find(&format!("<{tag}")) {
                let (key, _, value) = element(&props[p..], tag)?;
                let value = value.trim();
                let value = match serde_json::from_str::<Value>(value) {
                    Ok(
                        v
                        @ (Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_)),
                    ) => v,
                    _ => Value::String(value.to_string()),
                };
                args.insert(key, value);
                let close = format!("</{tag}>");
                props = &props[p..];
                props = props.find(&close).map_or("", |i| &props[i + close.len()..]);
            }
        }
        calls.push(TextCall {
            name: name.strip_prefix("functions.").unwrap_or(&name).to_string(),
            arguments: Value::Object(args).to_string(),
        });
        rest = &rest[at..];
        rest = rest.find("</function>").map_or("", |i| &rest[i + 11..]);
    }
    (!calls.is_empty()).then_some(calls)
}

/// The name, the rest of the opening tag and the content of the XML element `tag` that opens
/// `s`: `<tag name="n" …>…</tag>` or `<tag=n>…</tag>` (the content runs to the end when the
/// element is never closed, as a self-closing one is not).
fn element<'a>(s: &'a str, tag: &str) -> Option<(String, &'a str, &'a str)> {
    let head_end = s.find('>')?;
    let head = s[1 + tag.len()..head_end].trim();
    let name = match head.strip_prefix('=') {
        Some(n) => n.trim().trim_end_matches('/').trim(),
        None => attribute(head, "name")?,
    };
    let body = &s[head_end + 1..];
    let end = body.find(&format!("</{tag}>")).unwrap_or(body.len());
    Some((name.to_string(), head, &body[..end]))
}

/// The value of `key="…"` or `key='…'` in an opening tag's text.
fn attribute<'a>(head: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = head[from..].find(key) {
        let at = from + i;
        from = at + key.len();
        // A whole attribute name, not the end of another ("data-name").
        if !head[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
        {
            continue;
        }
        let Some(value) = head[from..].trim_start().strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start();
        let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let value = &value[1..];
        return value.find(quote).map(|end| &value[..end]);
    }
    None
}

/// The string after the first `"name":` of a text, as written.
fn written_name(body: &str) -> Option<String> {
    let after = &body[body.find("\"name\"")? + 6..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let rest = after.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pieces: &[&str]) -> (String, Vec<TextCall>) {
        run_as(true, false, pieces)
    }

    /// The text shown and the calls read, for a request that offered tools or not and an
    /// answer that came with real calls or not.
    fn run_as(offers_tools: bool, real_calls: bool, pieces: &[&str]) -> (String, Vec<TextCall>) {
        let mut f = TextCalls::new(offers_tools);
        let mut out = Vec::new();
        for p in pieces {
            f.push(p, &mut out);
        }
        let calls = f.finish(real_calls, &mut out);
        let text = out
            .into_iter()
            .map(|e| match e {
                StreamEvent::TextDelta(t) => t,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        (text, calls)
    }

    #[test]
    fn a_fenced_call_becomes_a_call_and_no_text() {
        // What Qwen2.5-Coder 0.5B answered to a voltage-drop question, split as it streamed.
        let (text, calls) = run(&[
            "``",
            "`json\n{\n  \"name\": \"calculate_voltage_drop\",\n",
            "  \"arguments\": {\n    \"conductor_size\": \"12\",\n    \"current_amps\": 16\n  }\n}\n``",
            "`",
        ]);
        assert_eq!(text, "");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "calculate_voltage_drop");
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args["current_amps"], 16);
    }

    #[test]
    fn a_call_written_with_broken_json_is_a_call_the_registry_refuses() {
        // What Qwen2.5-Coder 0.5B answered to "available fault current 45kva xfmr 208v 3ph
        // 3.5% z" (shortened): a fenced call whose JSON holds arithmetic.
        let fenced = "```json\n{\n  \"name\": \"calculate_short_circuit\",\n  \"arguments\": {\n    \"kva\": 45,\n    \"impedance_ohms_per_1000ft\": 1000 / 3.5\n  }\n}\n```";
        // And to a voltage-drop question: a bare object with units in its numbers.
        let bare = "{\n  \"name\": \"calculate_box_fill\",\n  \"arguments\": {\n    \"conductors\": [{\"count\": 1500 VA, \"size\": \"14\"}]\n  }\n}";
        for (written, name) in [
            (fenced, "calculate_short_circuit"),
            (bare, "calculate_box_fill"),
        ] {
            let (text, calls) = run(&[written]);
            assert_eq!(text, "", "the broken call is not shown: {written}");
            assert_eq!(calls.len(), 1, "{written}");
            assert_eq!(calls[0].name, name);
            let refused = serde_json::from_str::<Value>(&calls[0].arguments);
            assert!(refused.is_err(), "the arguments stay broken: {calls:?}");
        }
        // A name that is no tool name is made one (a provider refuses anything else back in
        // the history), and the registry then says which tools there are.
        let (text, calls) = run(&[
            "```json\n{\"name\": \"gec size for 3/0 cu\", \"arguments\": {\"size\": 3/0}}\n```",
        ]);
        assert_eq!(text, "");
        assert_eq!(calls[0].name, "gec_size_for_3_0_cu");
        // Prose before a broken call stays; broken JSON that is no call stays text.
        let (text, calls) = run(&[
            "The drop:\n",
            "```\n{\"name\": \"calculator\", \"arguments\": {\"expression\": 2*3}}\n```",
        ]);
        assert_eq!((text.as_str(), calls.len()), ("The drop:\n", 1));
        let not_a_call = "```\n{\"volts\": 120 V}\n```";
        assert_eq!(run(&[not_a_call]), (not_a_call.to_string(), vec![]));
    }

    #[test]
    fn a_call_written_as_xml_in_a_call_tag_is_a_call() {
        // What Qwen2.5-Coder 1.5B answered to a voltage-drop question (routed, 0921bab).
        let (text, calls) = run(&[
            "<tools>\n  <function name=\"calculate_voltage_drop\">\n    <arguments>\n",
            "      <property name=\"circuit_length\">100</property>\n",
            "      <property name=\"conductor_size\">12</property>\n",
            "      <property name=\"conductor_type\">copper</property>\n",
            "    </arguments>\n  </function>\n</tools>",
        ]);
        assert_eq!(text, "");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "calculate_voltage_drop");
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(
            args,
            serde_json::json!({"circuit_length": 100, "conductor_size": 12, "conductor_type": "copper"})
        );
        // The `<function=…>` form, two calls, prose before them.
        let (text, calls) = run(&[
            "Checking.\n<tool_call>\n<function=calculator>\n<parameter=expression>\n2 * 3\n",
            "</parameter>\n</function>\n<function=search_code><parameter name='query'>garage GFCI",
            "</parameter></function>\n</tool_call>",
        ]);
        assert_eq!(text, "Checking.\n");
        let found: Vec<(&str, Value)> = calls
            .iter()
            .map(|c| (c.name.as_str(), serde_json::from_str(&c.arguments).unwrap()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("calculator", serde_json::json!({"expression": "2 * 3"})),
                ("search_code", serde_json::json!({"query": "garage GFCI"})),
            ]
        );
        // The arguments as one JSON attribute of a self-closing element (the 1.5B model's
        // answer to code-02 at 1d6a22d).
        let (text, calls) = run(&[
            "<tools>\n  <function name=\"search_code\" arguments='{\"edition\": 2023, \"k\": 1, ",
            "\"query\": \"afci required in bedrooms?\"}'/>\n</tools>",
        ]);
        assert_eq!(text, "");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "search_code");
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(
            args,
            serde_json::json!({"edition": 2023, "k": 1, "query": "afci required in bedrooms?"})
        );
        // XML that names no tool stays text; so does XML outside a call tag.
        let prose = "<tools><function name=\"not a tool\"></function></tools>";
        assert_eq!(run(&[prose]), (prose.to_string(), vec![]));
        let outside = "```xml\n<function name=\"calculator\"></function>\n```";
        assert_eq!(run(&[outside]), (outside.to_string(), vec![]));
    }

    #[test]
    fn an_answer_of_nothing_but_json_data_is_no_answer() {
        // What Qwen2.5-Coder 0.5B answered after the lighting tool ran: its result, copied
        // out as the answer (fenced, bare, or repeated).
        let result = "{\"watts\": 1800, \"va_per_sq_ft\": 3, \"citations\": [\"220.12\"]}";
        for written in [
            format!("```json\n{result}\n```"),
            result.to_string(),
            format!("{result}\n{result}\n"),
            format!("```\n[{result}]\n```\n\n```json\n{result}\n```"),
        ] {
            assert_eq!(run(&[&written]), (String::new(), vec![]), "{written}");
        }
        // Words around the data make it an answer, shown as written.
        let with_words = format!("```json\n{result}\n```\nThat is 1,800 W for the floor.");
        assert_eq!(run(&[&with_words]), (with_words.clone(), vec![]));
        // Cut off at the output limit while copying it out, bare or fenced: still no words.
        let cut = &result[..result.len() / 2];
        for written in [
            format!("{result}\n\n{result}\n\n{cut}"),
            format!("```json\n{result}\n```\n```json\n{cut}"),
            cut.to_string(),
        ] {
            assert_eq!(run(&[&written]), (String::new(), vec![]), "{written}");
        }
        // A lone number or string is not data of that kind.
        assert_eq!(run(&["```\n1800\n```"]), ("```\n1800\n```".into(), vec![]));
    }

    #[test]
    fn prose_streams_at_once_and_a_later_block_is_held() {
        let mut f = TextCalls::new(true);
        let mut out = Vec::new();
        f.push("Checking the drop.\n", &mut out);
        assert_eq!(
            out,
            vec![StreamEvent::TextDelta("Checking the drop.\n".into())]
        );
        f.push("<tool_call>\n{\"name\": \"lookup_ampacity\", \"arguments\": {\"conductor_size\": \"6\"}}\n</tool_call>", &mut out);
        assert_eq!(out.len(), 1, "the tag is held");
        let calls = f.finish(false, &mut out);
        assert_eq!(calls[0].name, "lookup_ampacity");
        assert_eq!(out.len(), 1, "nothing left to show");
    }

    #[test]
    fn a_call_in_the_tools_tag_is_a_call_and_an_empty_tag_is_nothing() {
        // What Qwen2.5-Coder 1.5B answered to "gec size for 3/0 cu service conductors": the
        // tag the template lists the tools in, around a call.
        let (text, calls) = run(&[
            "<tools>\n{\"name\": \"size_grounding_electrode_conductor\", ",
            "\"arguments\": {\"material\": \"copper\", \"size\": \"3/0\"}}\n</tools>",
        ]);
        assert_eq!(text, "");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "size_grounding_electrode_conductor");
        // And to an off-topic question: the empty tag, which is no answer at all.
        let (text, calls) = run(&["<tools></tools>"]);
        assert_eq!((text.as_str(), calls.len()), ("", 0));
        // A tools tag around anything but a call stays text, as written.
        let copied = "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"search_code\", \"description\": \"Search\"}}\n</tools>";
        let (text, calls) = run(&[copied]);
        assert_eq!((text.as_str(), calls.len()), (copied, 0));
    }

    #[test]
    fn an_echoed_tool_response_is_never_shown() {
        // What Qwen2.5-Coder 1.5B answered after a refused call: the refusal echoed back in
        // the template's result tag, as if it were the answer.
        let echo = "<tool_response>\n{\"error\":\"not found: there is no tool named 'calculate_conductor_sizing'\"}\n</tool_response>";
        assert_eq!(run(&[echo]), (String::new(), vec![]));
        // Split as it streamed, after prose that stays, and before a real call that runs.
        let (text, calls) = run(&[
            "The ampacity is in Table 310.16.\n<tool_res",
            "ponse>\n{\"ampacity\": 65}\n</tool_response>\n",
            "<tool_call>\n{\"name\": \"lookup_table\", \"arguments\": {}}\n</tool_call>",
        ]);
        assert_eq!(text, "The ampacity is in Table 310.16.\n");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "lookup_table");
    }

    #[test]
    fn several_calls_in_a_list_or_as_bare_objects() {
        let (text, calls) = run(&[
            "{\"name\": \"a_tool\", \"parameters\": {\"x\": 1}}\n{\"type\": \"function\", \"function\": {\"name\": \"functions.b_tool\", \"arguments\": \"{\\\"y\\\": 2}\"}}",
        ]);
        assert_eq!(text, "");
        let names: Vec<_> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a_tool", "b_tool"]);
        assert_eq!(calls[1].arguments, "{\"y\": 2}");
        let (_, calls) =
            run(&["```json\n[{\"name\": \"a\"}, {\"name\": \"b\", \"arguments\": {}}]\n```"]);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, "{}");
    }

    #[test]
    fn code_that_is_not_a_call_is_shown_as_written() {
        let answer = "Use this:\n```json\n{\"name\": \"LP-1\", \"breaker\": 20}\n```\nDone.";
        assert_eq!(run(&[answer]), (answer.to_string(), vec![]));
        let table = "```\n| a | b |\n```";
        assert_eq!(run(&[table]), (table.to_string(), vec![]));
        // A brace later in prose is prose.
        let prose = "Table 310.16 gives {75 C} 65 A.";
        assert_eq!(run(&[prose]), (prose.to_string(), vec![]));
    }

    #[test]
    fn text_around_a_call_is_kept() {
        let (text, calls) = run(&[
            "I will compute it.\n```json\n{\"name\": \"calc\", \"arguments\": {}}\n```\nOne moment.",
        ]);
        assert_eq!(calls.len(), 1);
        assert_eq!(text, "I will compute it.\nOne moment.");
    }

    #[test]
    fn real_calls_leave_the_text_alone() {
        let written = "```json\n{\"name\": \"calc\"}\n```\nComputing.";
        assert_eq!(run_as(true, true, &[written]), (written.into(), vec![]));
        // Data with no words is dropped beside real calls too.
        let data = "{\"demand_va\": 13000.0}";
        assert_eq!(run_as(true, true, &[data]), (String::new(), vec![]));
    }

    #[test]
    fn a_call_written_among_copied_results_runs_and_the_copies_are_dropped() {
        // Qwen2.5-Coder 0.5B on light-01: the lighting tool's result copied out, and a call.
        let result = "{\"demand_va\": 13000.0, \"sizing_a\": 67.7}";
        let written = format!(
            "{result}\n{result}\n{{\"name\": \"calculate_lighting_load\", \"arguments\": {{}}}}\n{result}"
        );
        let (text, calls) = run(&[&written]);
        assert_eq!(text, "");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "calculate_lighting_load");
    }

    #[test]
    fn without_tools_nothing_is_a_call_and_data_is_still_no_answer() {
        let written = "```json\n{\"name\": \"calc\", \"arguments\": {}}\n```\nThat call is next.";
        assert_eq!(run_as(false, false, &[written]), (written.into(), vec![]));
        // A result copied out until the output limit, in a request that offers no tools.
        let copied = "{\"demand_va\": 13000.0}\n\n{\"demand_va\": 130";
        assert_eq!(run_as(false, false, &[copied]), (String::new(), vec![]));
        // Prose streams at once, as with tools.
        let mut f = TextCalls::new(false);
        let mut out = Vec::new();
        f.push("The demand is 13 kVA.\n", &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn a_broken_block_is_text_unless_it_was_written_as_a_call() {
        // A call cut off mid-arguments goes back to the model, refused as not JSON.
        let cut = "```json\n{\"name\": \"calc\", \"arguments\": {\"a\": \n```";
        let (text, calls) = run(&[cut]);
        assert_eq!((text.as_str(), calls.len()), ("", 1));
        assert_eq!(calls[0].name, "calc");
        assert!(serde_json::from_str::<Value>(&calls[0].arguments).is_err());
        // Data cut off is no answer (no words); other broken text that names no call is the
        // model's answer, shown as written.
        let cut_data = "```json\n{\"volts\": 120, \"drop\": \n```";
        assert_eq!(run(&[cut_data]), (String::new(), vec![]));
        let answer = "The drop:\n```json\n{\"volts\": 120, \"drop\": \n```";
        assert_eq!(run(&[answer]), (answer.to_string(), vec![]));
        // Words before complete data keep the data too: it is part of that answer.
        let shown = "The results:\n```json\n{\"volts\": 120}\n```";
        assert_eq!(
            run(&["The results:\n", &shown[13..]]),
            (shown.to_string(), vec![])
        );
        let unclosed = "{ not json";
        assert_eq!(run(&[unclosed]), (unclosed.to_string(), vec![]));
    }
}
