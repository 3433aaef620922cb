//! JSON Schemas for tool arguments, derived from typed argument structs.

use schemars::JsonSchema;
use serde_json::Value;

/// The arguments schema of `T`, inlined (no `$ref`) so every provider accepts it.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    value
}

/// The schema as the model needs it: what to send and what it means, without the generator's
/// bookkeeping. Optional fields stop advertising `null` (leaving them out means the same),
/// `default: null`, numeric `format`s and the bounds implied by unsigned integer formats go,
/// and so do `additionalProperties: false` and the root `description` (the tool's own
/// description says it). Arguments are still validated against the full schema, so nothing
/// the model sends is accepted that the full schema would refuse, and nothing is refused
/// that it accepts.
pub fn compact(schema: &Value) -> Value {
    let mut v = compact_node(schema);
    if let Some(obj) = v.as_object_mut() {
        obj.remove("description");
        obj.remove("title");
        obj.remove("$schema");
    }
    v
}

/// The shortest useful form of a schema, for tools offered without detail: the compact schema
/// without the arguments' descriptions (names, types, enums and required stay).
pub fn slim(schema: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("description");
                if let Some(Value::Object(props)) = map.get_mut("properties") {
                    props.values_mut().for_each(strip);
                }
                for (k, child) in map.iter_mut() {
                    if k != "properties" {
                        strip(child);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = compact(schema);
    strip(&mut v);
    v
}

fn compact_node(node: &Value) -> Value {
    match node {
        Value::Object(map) => {
            // `anyOf: [X, {type: null}]` is how an optional enum or struct is written: keep X.
            if let Some(Value::Array(variants)) = map.get("anyOf") {
                let non_null: Vec<&Value> = variants.iter().filter(|v| !is_null_type(v)).collect();
                if non_null.len() == 1 && variants.len() == 2 {
                    let mut merged = compact_node(non_null[0]);
                    if let Some(obj) = merged.as_object_mut() {
                        for (k, v) in map {
                            if k != "anyOf" && k != "default" {
                                obj.insert(k.clone(), compact_node(v));
                            }
                        }
                    }
                    return merged;
                }
            }
            // A documented enum (`oneOf` of constants) compacts to a plain `enum` of its values;
            // what each value means stays in the full schema.
            if let Some(values) = map.get("oneOf").and_then(const_values) {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    if k != "oneOf" {
                        out.insert(k.clone(), v.clone());
                    }
                }
                let mut merged = compact_node(&Value::Object(out));
                if let Some(obj) = merged.as_object_mut() {
                    obj.insert("enum".into(), Value::Array(values.0));
                    if let Some(t) = values.1 {
                        obj.entry("type").or_insert(Value::String(t));
                    }
                }
                return merged;
            }
            let unsigned = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("uint"));
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                match k.as_str() {
                    "format" | "additionalProperties" | "$schema" | "title" => continue,
                    "default" if v.is_null() => continue,
                    "minimum" if unsigned && v.as_f64() == Some(0.0) => continue,
                    "maximum" if unsigned && is_type_max(v) => continue,
                    "type" => {
                        out.insert(k.clone(), without_null_type(v));
                    }
                    "enum" => {
                        let items: Vec<Value> = v
                            .as_array()
                            .map(|a| a.iter().filter(|x| !x.is_null()).cloned().collect())
                            .unwrap_or_default();
                        out.insert(k.clone(), Value::Array(items));
                    }
                    "description" => {
                        let text = v.as_str().unwrap_or_default();
                        out.insert(
                            k.clone(),
                            Value::String(text.split_whitespace().collect::<Vec<_>>().join(" ")),
                        );
                    }
                    // Property names are data, not schema keywords: only their values compact.
                    "properties" => {
                        let props = v
                            .as_object()
                            .map(|m| {
                                m.iter()
                                    .map(|(name, s)| (name.clone(), compact_node(s)))
                                    .collect()
                            })
                            .unwrap_or_default();
                        out.insert(k.clone(), Value::Object(props));
                    }
                    _ => {
                        out.insert(k.clone(), compact_node(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(compact_node).collect()),
        other => other.clone(),
    }
}

/// Arguments `args` holds that `schema` does not name, at every depth where the schema lists
/// an object's properties, each as a message naming the key and the allowed names. A schema
/// that says nothing about extra keys refuses them too: an argument the model invented is a
/// mistake to correct, not a detail to drop (serde would drop it silently). Only a schema
/// that allows extra keys outright (`additionalProperties` true or a schema,
/// `patternProperties`) takes them.
pub(crate) fn unknown_arguments(schema: &Value, args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    unknown_at(schema, args, "", &mut out, 0);
    out
}

fn unknown_at(schema: &Value, args: &Value, path: &str, out: &mut Vec<String>, depth: usize) {
    let Some(node) = object_node(schema, depth) else {
        return;
    };
    match args {
        Value::Object(given) => {
            let Some(props) = node.get("properties").and_then(Value::as_object) else {
                return;
            };
            let open = node.get("patternProperties").is_some()
                || !matches!(
                    node.get("additionalProperties"),
                    None | Some(Value::Bool(false))
                );
            for (key, value) in given {
                match props.get(key) {
                    Some(sub) => unknown_at(sub, value, &format!("{path}{key}."), out, depth + 1),
                    None if !open => out.push(unknown_message(path, key, props)),
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.get("items") {
                let base = path.trim_end_matches('.');
                for (i, item) in items.iter().enumerate() {
                    unknown_at(item_schema, item, &format!("{base}[{i}]."), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The node describing a value: itself, or the one non-null variant of an optional value
/// (`anyOf`/`oneOf` of it and `null`). Several variants (a tagged enum) are left to the
/// validator.
fn object_node(schema: &Value, depth: usize) -> Option<&serde_json::Map<String, Value>> {
    let map = schema.as_object()?;
    if depth > 8 || map.contains_key("properties") || map.contains_key("items") {
        return Some(map);
    }
    let variants = map.get("anyOf").or_else(|| map.get("oneOf"))?.as_array()?;
    let mut non_null = variants.iter().filter(|v| !is_null_type(v));
    match (non_null.next(), non_null.next()) {
        (Some(only), None) => object_node(only, depth + 1),
        _ => None,
    }
}

fn unknown_message(path: &str, key: &str, props: &serde_json::Map<String, Value>) -> String {
    let names: Vec<&str> = props.keys().map(String::as_str).collect();
    let at = path.trim_end_matches('.');
    let allowed = if names.is_empty() {
        "it takes no arguments".to_string()
    } else {
        format!("allowed: {}", names.join(", "))
    };
    if at.is_empty() {
        format!("unknown argument '{key}'; {allowed}")
    } else {
        format!("unknown argument '{at}.{key}' in {at}; {allowed}")
    }
}

/// What each argument of `schema` takes, in words (type, allowed values, bounds): told to a
/// model that sent an argument wrong, so it can correct it without guessing.
pub fn allowed_arguments(schema: &Value) -> serde_json::Map<String, Value> {
    let Some(props) = object_node(schema, 0)
        .and_then(|n| n.get("properties"))
        .and_then(Value::as_object)
    else {
        return serde_json::Map::new();
    };
    props
        .iter()
        .map(|(name, sub)| (name.clone(), Value::String(describe(schema, sub))))
        .collect()
}

/// One argument's schema in words: "one of: 1, 2, 3", "integer from 1 to 3", "text".
fn describe(root: &Value, node: &Value) -> String {
    let node = single_variant(node).unwrap_or(node);
    let mut values = Vec::new();
    collect_values(root, node, &mut values, 0);
    if !values.is_empty() {
        let listed: Vec<String> = values.iter().map(value_text).collect();
        return format!("one of: {}", listed.join(", "));
    }
    let ty = node
        .get("type")
        .map(without_null_type)
        .and_then(|t| t.as_str().map(str::to_string))
        .unwrap_or_else(|| "value".into());
    let (min, max) = (node.get("minimum"), node.get("maximum"));
    let bounds = match (min, max) {
        (Some(lo), Some(hi)) if !is_type_max(hi) => format!(" from {lo} to {hi}"),
        (Some(lo), _) => format!(" of at least {lo}"),
        (None, Some(hi)) => format!(" of at most {hi}"),
        (None, None) => String::new(),
    };
    match ty.as_str() {
        "string" => "text".into(),
        "boolean" => "true or false".into(),
        "object" => match node.get("properties").and_then(Value::as_object) {
            Some(p) => format!(
                "object with: {}",
                p.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            None => "object".into(),
        },
        "array" => "list".into(),
        other => format!("{other}{bounds}"),
    }
}

/// The non-null variant of an optional value's `anyOf`/`oneOf` of it and `null`.
fn single_variant(node: &Value) -> Option<&Value> {
    let variants = node
        .get("anyOf")
        .or_else(|| node.get("oneOf"))?
        .as_array()?;
    let mut non_null = variants.iter().filter(|v| !is_null_type(v));
    match (non_null.next(), non_null.next()) {
        (Some(only), None) if variants.len() == 2 => Some(only),
        _ => None,
    }
}

fn value_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Arguments valid for `schema` as far as each value goes: every required argument, and every
/// known one `given` set, with `given`'s value where the schema takes it and else the first
/// allowed value, the lower bound or a placeholder. Built for a model that keeps sending the
/// same wrong call: its own call, corrected.
pub fn example_arguments(schema: &Value, given: &Value) -> Value {
    example_at(schema, schema, Some(given), 0)
}

fn example_at(root: &Value, node: &Value, given: Option<&Value>, depth: usize) -> Value {
    let node = single_variant(node).unwrap_or(node);
    if depth > 6 {
        return Value::Null;
    }
    let mut values = Vec::new();
    collect_values(root, node, &mut values, 0);
    if !values.is_empty() {
        return given
            .filter(|g| values.contains(g))
            .or(values.first())
            .cloned()
            .unwrap_or(Value::Null);
    }
    let ty = node.get("type").map(without_null_type);
    match ty.as_ref().and_then(Value::as_str) {
        Some("object") | None if node.get("properties").is_some() => {
            example_object(root, node, given, depth)
        }
        Some("integer" | "number") => example_number(node, given),
        Some("boolean") => given
            .filter(|g| g.is_boolean())
            .cloned()
            .unwrap_or(Value::Bool(false)),
        Some("array") => given
            .filter(|g| g.is_array())
            .cloned()
            .unwrap_or(Value::Array(vec![])),
        _ => given
            .filter(|g| g.is_string())
            .cloned()
            .unwrap_or_else(|| Value::String("...".into())),
    }
}

fn example_object(root: &Value, node: &Value, given: Option<&Value>, depth: usize) -> Value {
    let props = node.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let given = given.and_then(Value::as_object);
    let mut out = serde_json::Map::new();
    for (name, sub) in props.into_iter().flatten() {
        let set = given.and_then(|g| g.get(name));
        if required.contains(&name.as_str()) || set.is_some() {
            out.insert(name.clone(), example_at(root, sub, set, depth + 1));
        }
    }
    Value::Object(out)
}

/// `given` when it is a number within the bounds, else the lower bound (or 1).
fn example_number(node: &Value, given: Option<&Value>) -> Value {
    let min = node.get("minimum").and_then(Value::as_f64);
    let max = node.get("maximum").and_then(Value::as_f64);
    let within = |x: f64| min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m);
    if let Some(g) = given.filter(|g| g.as_f64().is_some_and(within)) {
        return g.clone();
    }
    let pick = min
        .unwrap_or(1.0)
        .max(if within(1.0) { 1.0 } else { f64::MIN });
    let pick = max.map_or(pick, |m| pick.min(m));
    if pick.fract() == 0.0 && pick.abs() < 1e15 {
        Value::from(pick as i64)
    } else {
        Value::from(pick)
    }
}

/// The values a failed `oneOf`/`anyOf`/`enum` keyword allows, found at `schema_path` (a JSON
/// pointer from a validation error, `$ref`s followed from `root`): what an error must list so the
/// model can correct a value without guessing. `None` when the keyword is not a list of values.
pub(crate) fn allowed_values(root: &Value, schema_path: &str) -> Option<Vec<Value>> {
    let mut node = root;
    let mut keyword = None;
    for raw in schema_path.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        if segment == "$ref" {
            node = resolve_ref(root, node)?;
            continue;
        }
        if matches!(segment.as_str(), "oneOf" | "anyOf" | "enum") && keyword.is_none() {
            // The failing keyword is the last segment; anything before is the path to it.
            keyword = Some(segment.clone());
        } else {
            keyword = None;
        }
        node = match node {
            Value::Object(map) => map.get(&segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    let mut values = Vec::new();
    match (keyword?.as_str(), node) {
        // The failing `enum` keyword's own list.
        ("enum", Value::Array(items)) => {
            values.extend(items.iter().filter(|v| !v.is_null()).cloned())
        }
        _ => collect_values(root, node, &mut values, 0),
    }
    (!values.is_empty()).then_some(values)
}

fn resolve_ref<'a>(root: &'a Value, node: &'a Value) -> Option<&'a Value> {
    let target = node.get("$ref")?.as_str()?.strip_prefix('#')?;
    root.pointer(target)
}

/// Constants reachable from an `enum`, a `oneOf`/`anyOf` list or a `$ref` to one.
fn collect_values(root: &Value, node: &Value, out: &mut Vec<Value>, depth: usize) {
    if depth > 4 {
        return;
    }
    match node {
        Value::Array(items) => {
            for item in items {
                collect_values(root, item, out, depth + 1);
            }
        }
        Value::Object(map) => {
            if let Some(c) = map.get("const") {
                out.push(c.clone());
            } else if let Some(Value::Array(e)) = map.get("enum") {
                out.extend(e.iter().filter(|v| !v.is_null()).cloned());
            } else if let Some(target) = resolve_ref(root, node) {
                collect_values(root, target, out, depth + 1);
            } else {
                for k in ["oneOf", "anyOf"] {
                    if let Some(v) = map.get(k) {
                        collect_values(root, v, out, depth + 1);
                    }
                }
            }
        }
        _ => {}
    }
}

/// The values of a `oneOf` whose every variant is a constant of one type, with that type.
fn const_values(variants: &Value) -> Option<(Vec<Value>, Option<String>)> {
    let variants = variants.as_array()?;
    let mut values = Vec::with_capacity(variants.len());
    let mut ty: Option<String> = None;
    for v in variants {
        values.push(v.get("const")?.clone());
        let t = v.get("type").and_then(Value::as_str).map(str::to_string);
        if ty.is_some() && t != ty {
            return None;
        }
        ty = t;
    }
    (!values.is_empty()).then_some((values, ty))
}

fn is_null_type(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
}

/// The largest value of an unsigned integer format (u8, u16, u32, u64).
fn is_type_max(v: &Value) -> bool {
    v.as_f64().is_some_and(|m| {
        [255.0, 65535.0, 4294967295.0, 18446744073709551615.0]
            .iter()
            .any(|max| (m - max).abs() < 0.5)
    })
}

/// `["number", "null"]` becomes `"number"`; anything else stays.
fn without_null_type(v: &Value) -> Value {
    match v.as_array() {
        Some(types) => {
            let kept: Vec<&Value> = types
                .iter()
                .filter(|t| t.as_str() != Some("null"))
                .collect();
            match kept.as_slice() {
                [one] => (*one).clone(),
                _ => Value::Array(kept.into_iter().cloned().collect()),
            }
        }
        None => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nec::tables::{MotorOcpdType, MotorType};
    use crate::nec::units::{Amps, ConductorSize, Material};

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Example {
        /// A current.
        current: Amps,
        size: Option<ConductorSize>,
        material: Material,
    }

    /// The schema's spelling of each engine enum is the engine's serde spelling.
    #[test]
    fn motor_enum_spellings_match_the_engine() {
        for (schema, ser) in [
            (
                schema_for::<Vec<MotorType>>(),
                serde_json::to_value([
                    MotorType::SinglePhase,
                    MotorType::SquirrelCage,
                    MotorType::DesignBEnergyEfficient,
                    MotorType::Synchronous,
                    MotorType::WoundRotor,
                    MotorType::Dc,
                ])
                .unwrap(),
            ),
            (
                schema_for::<Vec<MotorOcpdType>>(),
                serde_json::to_value([
                    MotorOcpdType::NonTimeDelayFuse,
                    MotorOcpdType::DualElementFuse,
                    MotorOcpdType::InstantaneousTripBreaker,
                    MotorOcpdType::InverseTimeBreaker,
                ])
                .unwrap(),
            ),
        ] {
            assert_eq!(schema["items"]["enum"], ser);
        }
    }

    #[test]
    fn schemas_are_inline_objects_without_refs() {
        let s = schema_for::<Example>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["current"]["type"], "number");
        assert_eq!(s["properties"]["material"]["enum"][0], "copper");
        let text = s.to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert!(!text.contains("$schema"), "{text}");
        let required = s["required"].as_array().unwrap();
        assert!(required.iter().any(|v| v == "current"));
        assert!(!required.iter().any(|v| v == "size"));
    }

    #[test]
    fn compact_schemas_keep_meaning_and_drop_bookkeeping() {
        let s = schema_for::<Example>();
        let c = compact(&s);
        // Optional fields no longer advertise null, but keep their type and description.
        assert_eq!(c["properties"]["size"]["type"], "string");
        assert!(c["properties"]["size"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("kcmil")));
        assert_eq!(c["properties"]["current"]["description"], "A current.");
        assert_eq!(c["required"], s["required"]);
        let text = c.to_string();
        assert!(!text.contains("null"), "{text}");
        assert!(!text.contains("additionalProperties"), "{text}");
        assert!(text.len() < s.to_string().len());
        let slim = slim(&s);
        assert_eq!(slim["properties"]["material"]["enum"][1], "aluminum");
        assert_eq!(slim["properties"]["current"]["type"], "number");
        assert!(!slim.to_string().contains("description"), "{slim}");
        assert_eq!(slim["required"], s["required"]);
    }

    #[test]
    fn every_compact_tool_schema_accepts_what_the_model_is_told() {
        let r = crate::tools::default_registry(10);
        let names: Vec<&str> = r.all().map(|t| t.name()).collect();
        let full = r.specs(&names);
        let compact = r.compact_specs(&names);
        let full_len = serde_json::to_string(&full).map(|t| t.len()).unwrap_or(0);
        let compact_len = serde_json::to_string(&compact)
            .map(|t| t.len())
            .unwrap_or(0);
        println!("compact tool specs: {compact_len} of {full_len} bytes");
        assert!(
            compact_len * 10 < full_len * 8,
            "{compact_len} of {full_len} bytes"
        );
        // Every tool keeps at least its first sentence.
        for (f, c) in full.iter().zip(&compact) {
            assert!(c.description.len() >= 20, "{}: {}", f.name, c.description);
            let first = f.description.split(". ").next().unwrap_or_default();
            assert!(
                c.description
                    .starts_with(first.split_whitespace().next().unwrap_or_default()),
                "{}",
                f.name
            );
        }
        for (f, c) in full.iter().zip(&compact) {
            assert_eq!(f.name, c.name);
            // Every property and every required name survives, with its type.
            let props = f.parameters["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for (name, schema) in &props {
                let kept = &c.parameters["properties"][name];
                assert!(kept.is_object(), "{}: {name} lost", f.name);
                if schema.get("enum").is_some() {
                    assert!(
                        kept.get("enum").is_some(),
                        "{}: {name} lost its values",
                        f.name
                    );
                }
            }
            assert_eq!(
                f.parameters["required"], c.parameters["required"],
                "{}",
                f.name
            );
            // The compact schema is still a valid JSON Schema.
            assert!(
                jsonschema::validator_for(&c.parameters).is_ok(),
                "{}",
                f.name
            );
        }
    }
}
