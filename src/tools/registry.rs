//! The tool registry: lookup, schema validation and per-tool rate limits.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::keyed_limit::KeyedLimit;
use serde_json::Value;

use super::{Tool, ToolError, WriteTool};
use crate::llm::ToolSpec;

/// A registered tool: which kind it is was decided by the method that registered it.
#[derive(Clone)]
pub enum RegisteredTool {
    /// Runs at once, read-only.
    Read(Arc<dyn Tool>),
    /// Plans a change that a person must confirm.
    Write(Arc<dyn WriteTool>),
}

impl RegisteredTool {
    /// Unique name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Read(t) => t.name(),
            Self::Write(t) => t.name(),
        }
    }

    /// What it does, for the model.
    pub fn description(&self) -> &'static str {
        match self {
            Self::Read(t) => t.description(),
            Self::Write(t) => t.description(),
        }
    }

    /// JSON Schema of the arguments.
    pub fn schema(&self) -> Value {
        match self {
            Self::Read(t) => t.schema(),
            Self::Write(t) => t.schema(),
        }
    }

    /// Whether it changes the project (and so needs confirmation).
    pub fn writes(&self) -> bool {
        matches!(self, Self::Write(_))
    }
}

struct Entry {
    tool: RegisteredTool,
    validator: jsonschema::Validator,
    /// The arguments schema and the three forms of the spec, derived once at registration:
    /// a tool's schema never changes, and deriving them per request cost more than the rest
    /// of a turn's own work.
    schema: Value,
    full: ToolSpec,
    compact: ToolSpec,
    slim: ToolSpec,
}

/// A call whose tool exists and whose arguments passed the schema.
#[derive(Clone)]
pub struct ValidatedCall {
    /// The tool.
    pub tool: RegisteredTool,
    /// Parsed, schema-valid arguments.
    pub args: Value,
}

/// The opening of a description, whitespace collapsed: its first sentence, cut before a
/// colon or parenthesis that follows the first few words (what comes after lists details).
fn first_sentence(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = sentence_ends(&text).first().copied().unwrap_or(text.len());
    let sentence = &text[..end];
    let cut = [": ", " (", "; "]
        .iter()
        .filter_map(|m| sentence.find(m))
        .filter(|i| *i >= 20)
        .min()
        .unwrap_or(sentence.len());
    sentence[..cut].trim_end_matches('.').to_string()
}

/// Byte offsets just after each sentence end: ". " outside parentheses (so "(e.g. 310.16)"
/// ends none), not after "e.g" or "i.e".
fn sentence_ends(text: &str) -> Vec<usize> {
    let mut depth = 0i32;
    let mut ends = Vec::new();
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '.' if depth <= 0
                && bytes.get(i + 1) == Some(&b' ')
                && !text[..i].ends_with("e.g")
                && !text[..i].ends_with("i.e") =>
            {
                ends.push(i + 1)
            }
            _ => {}
        }
    }
    ends
}

/// A tool description longer than this is cut at the last sentence end before it.
const DESCRIPTION_LIMIT: usize = 240;

/// The description with whitespace runs collapsed, cut to whole sentences within
/// [`DESCRIPTION_LIMIT`] (at least the first sentence): the opening sentences say what the
/// tool does; the details that follow repeat what the argument descriptions say.
fn compact_text(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.len() <= DESCRIPTION_LIMIT {
        return text;
    }
    let ends = sentence_ends(&text);
    let cut = ends
        .iter()
        .rev()
        .find(|e| **e <= DESCRIPTION_LIMIT)
        .or(ends.first())
        .copied()
        .unwrap_or(text.len());
    text[..cut].to_string()
}

/// Every tool by name, with compiled schemas and an execution rate limiter.
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, Entry>,
    /// One bucket per workspace and tool, so one busy team never starves another.
    limiter: KeyedLimit<(String, &'static str)>,
    derived: Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>,
}

impl ToolRegistry {
    /// An empty registry allowing `per_minute` executions of each tool.
    pub fn new(per_minute: u32) -> Self {
        Self {
            tools: BTreeMap::new(),
            limiter: KeyedLimit::per_minute(per_minute),
            derived: Mutex::new(HashMap::new()),
        }
    }

    /// Adds a read-only tool.
    ///
    /// A write tool is not a [`Tool`], so it cannot be registered here:
    ///
    /// ```compile_fail
    /// use serde_json::Value;
    /// use sparky::tools::{ToolContext, ToolError, ToolPlan, ToolRegistry, WriteTool};
    ///
    /// struct RemoveEverything;
    ///
    /// #[async_trait::async_trait]
    /// impl WriteTool for RemoveEverything {
    ///     fn name(&self) -> &'static str { "remove_everything" }
    ///     fn description(&self) -> &'static str { "removes everything" }
    ///     fn schema(&self) -> Value { serde_json::json!({"type": "object"}) }
    ///     async fn plan(&self, _: &Value, _: &ToolContext) -> Result<ToolPlan, ToolError> {
    ///         Err(ToolError::Failed("not here".into()))
    ///     }
    /// }
    ///
    /// let mut registry = ToolRegistry::new(10);
    /// registry.register(RemoveEverything); // does not compile: a write tool is not a Tool
    /// ```
    ///
    /// The same tool registered as what it is compiles:
    ///
    /// ```
    /// use serde_json::Value;
    /// use sparky::tools::{ToolContext, ToolError, ToolPlan, ToolRegistry, WriteTool};
    ///
    /// struct RemoveEverything;
    ///
    /// #[async_trait::async_trait]
    /// impl WriteTool for RemoveEverything {
    ///     fn name(&self) -> &'static str { "remove_everything" }
    ///     fn description(&self) -> &'static str { "removes everything" }
    ///     fn schema(&self) -> Value { serde_json::json!({"type": "object"}) }
    ///     async fn plan(&self, _: &Value, _: &ToolContext) -> Result<ToolPlan, ToolError> {
    ///         Err(ToolError::Failed("not here".into()))
    ///     }
    /// }
    ///
    /// let mut registry = ToolRegistry::new(10);
    /// registry.register_write(RemoveEverything);
    /// assert!(registry.get("remove_everything").unwrap().writes());
    /// ```
    ///
    /// # Panics
    /// When the tool's own schema is not a valid JSON Schema: that is a programming error
    /// caught by the registry tests.
    pub fn register(&mut self, tool: impl Tool + 'static) {
        self.insert(RegisteredTool::Read(Arc::new(tool)));
    }

    /// Adds a tool that changes the project: it plans, and the confirmation gate applies.
    ///
    /// # Panics
    /// When the tool's own schema is not a valid JSON Schema.
    pub fn register_write(&mut self, tool: impl WriteTool + 'static) {
        self.insert(RegisteredTool::Write(Arc::new(tool)));
    }

    fn insert(&mut self, tool: RegisteredTool) {
        let schema = tool.schema();
        let validator = match jsonschema::validator_for(&schema) {
            Ok(v) => v,
            Err(e) => panic!("tool {} has an invalid schema: {e}", tool.name()),
        };
        let spec = |description: String, parameters: Value| ToolSpec {
            name: tool.name().to_string(),
            description,
            parameters: parameters.into(),
        };
        let full = spec(tool.description().to_string(), schema.clone());
        let compact = spec(
            compact_text(tool.description()),
            super::schema::compact(&schema),
        );
        let slim = spec(
            first_sentence(tool.description()),
            super::schema::slim(&schema),
        );
        self.derived
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.tools.insert(
            tool.name(),
            Entry {
                tool,
                validator,
                schema,
                full,
                compact,
                slim,
            },
        );
    }

    /// The arguments schema of `name`, as registered (derived once, not per call).
    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.tools.get(name).map(|e| &e.schema)
    }

    /// Data derived from the registered tools (e.g. a routing index), built by `build` on
    /// first use under `key` and kept until a tool is added. `key` must name one type.
    ///
    /// # Panics
    /// When `key` was used before for a value of another type (a programming error).
    pub fn derived<T, F>(&self, key: &str, build: F) -> Arc<T>
    where
        T: Any + Send + Sync,
        F: FnOnce(&Self) -> T,
    {
        if let Some(hit) = self
            .derived
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
        {
            if let Ok(v) = hit.downcast::<T>() {
                return v;
            }
            panic!("registry data {key} was derived with another type");
        }
        // Built outside the lock: two first uses at once build twice, harmlessly.
        let value = Arc::new(build(self));
        self.derived
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), value.clone());
        value
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<RegisteredTool> {
        self.tools.get(name).map(|e| e.tool.clone())
    }

    /// Every tool, by name.
    pub fn all(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.values().map(|e| &e.tool)
    }

    /// Specs for the tools named in `names` (unknown names are skipped).
    pub fn specs(&self, names: &[&str]) -> Vec<ToolSpec> {
        names
            .iter()
            .filter_map(|n| self.tools.get(n))
            .map(|e| e.full.clone())
            .collect()
    }

    /// Specs for the tools named in `names`, with their schemas compacted for the model
    /// ([`super::schema::compact`]); validation still uses the full schemas.
    pub fn compact_specs(&self, names: &[&str]) -> Vec<ToolSpec> {
        names
            .iter()
            .filter_map(|n| self.tools.get(n))
            .map(|e| e.compact.clone())
            .collect()
    }

    /// Specs in their shortest useful form ([`super::schema::slim`], first sentence of the
    /// description), for tools offered without detail.
    pub fn slim_specs(&self, names: &[&str]) -> Vec<ToolSpec> {
        names
            .iter()
            .filter_map(|n| self.tools.get(n))
            .map(|e| e.slim.clone())
            .collect()
    }

    /// Looks up `name` and validates the raw argument text against its schema. Every failure
    /// is a message for the model, never a crash.
    pub fn validate(&self, name: &str, raw_arguments: &str) -> Result<ValidatedCall, ToolError> {
        let entry = self.tools.get(name).ok_or_else(|| {
            ToolError::NotFound(format!(
                "there is no tool named '{name}'; available tools: {}",
                self.tools.keys().copied().collect::<Vec<_>>().join(", ")
            ))
        })?;
        let text = if raw_arguments.trim().is_empty() {
            "{}"
        } else {
            raw_arguments
        };
        let args: Value = serde_json::from_str(text).map_err(|e| {
            ToolError::InvalidArguments(format!("arguments are not valid JSON ({e})"))
        })?;
        if !args.is_object() {
            return Err(ToolError::InvalidArguments(
                "arguments must be a JSON object".into(),
            ));
        }
        // Unknown keys first, each with the names allowed; the validator's own report of
        // them (where the schema forbids extra keys) would only repeat it without the names.
        let mut problems = super::schema::unknown_arguments(&entry.schema, &args);
        let schema_problems = entry
            .validator
            .iter_errors(&args)
            .filter(|e| {
                !matches!(
                    e.kind(),
                    jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
                )
            })
            .map(|e| {
                let path = e.instance_path().to_string();
                let mut text = e.to_string();
                // The path as evaluated, through each `$ref` (`schema_path` is where the
                // keyword sits once references are resolved).
                if let Some(values) =
                    super::schema::allowed_values(&entry.schema, &e.evaluation_path().to_string())
                {
                    let listed: Vec<String> = values
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                        .collect();
                    text = format!(
                        "{} is not an allowed value; allowed: {}",
                        e.instance(),
                        listed.join(", ")
                    );
                }
                if path.is_empty() {
                    text
                } else {
                    format!("{path}: {text}")
                }
            });
        problems.extend(schema_problems);
        if !problems.is_empty() {
            return Err(ToolError::InvalidArguments(problems.join("; ")));
        }
        Ok(ValidatedCall {
            tool: entry.tool.clone(),
            args,
        })
    }

    /// Takes one execution slot of `name` for `workspace` (`None`: a run outside any
    /// workspace, such as the local CLI); the error says how long to wait.
    pub fn check_rate(
        &self,
        workspace: Option<&crate::domain::workspace::Workspace>,
        name: &str,
    ) -> Result<(), ToolError> {
        let Some((tool, _)) = self.tools.get_key_value(name) else {
            return Ok(());
        };
        let key = (
            workspace.map(ToString::to_string).unwrap_or_default(),
            *tool,
        );
        self.limiter.check(&key).map_err(|wait| {
            ToolError::RateLimited(format!(
                "{name} is being called too often; try again in {} s",
                wait.as_secs().max(1)
            ))
        })
    }
}

impl ToolRegistry {
    /// Keys the limiter holds (workspaces and tools with recent calls).
    pub fn limited_keys(&self) -> usize {
        self.limiter.len()
    }
}

#[cfg(test)]
mod tests {
    /// One workspace using up a tool's quota leaves every other workspace's quota whole.
    #[test]
    fn each_workspace_has_its_own_tool_limit() {
        use crate::domain::workspace::Workspace;
        let (t1, t2) = (Workspace::new("slack", "T1"), Workspace::new("slack", "T2"));
        // The same team id on another platform is another workspace.
        let discord_t1 = Workspace::new("discord", "T1");
        let registry = super::super::default_registry(2);
        for _ in 0..2 {
            assert!(registry.check_rate(Some(&t1), "calculator").is_ok());
        }
        let e = registry
            .check_rate(Some(&t1), "calculator")
            .expect_err("the busy workspace is limited");
        assert!(
            e.to_string()
                .contains("calculator is being called too often"),
            "{e}"
        );
        assert!(registry.check_rate(Some(&t2), "calculator").is_ok());
        assert!(registry.check_rate(Some(&discord_t1), "calculator").is_ok());
        assert!(registry.check_rate(None, "calculator").is_ok());
        assert!(registry.check_rate(Some(&t1), "lookup_table").is_ok());
        assert_eq!(registry.limited_keys(), 5);
        // A prune keeps a limited key limited.
        registry.limiter.prune_now();
        assert!(registry.check_rate(Some(&t1), "calculator").is_err());
    }

    /// A value outside a documented enum names the allowed values, wherever the enum sits
    /// (nested object, `Option`, `$ref`), so the model can correct it in one step.
    #[test]
    fn an_invalid_enum_value_lists_the_allowed_values() {
        let registry = super::super::default_registry(60);
        let Err(e) = registry.validate(
            "update_circuit",
            r#"{"panel":"LP-1","number":3,"changes":{"appliance":{"kind":"stove","va":8000}}}"#,
        ) else {
            panic!("\"stove\" passed the schema");
        };
        let text = e.to_string();
        assert!(text.contains("\"stove\""), "{text}");
        for kind in ["range", "cooktop", "wall_oven", "dryer", "water_heater"] {
            assert!(text.contains(kind), "{kind} missing from: {text}");
        }
        assert!(!text.contains("oneOf"), "{text}");

        let Err(e) = registry.validate(
            "update_circuit",
            r#"{"panel":"LP-1","number":3,"clear":["colour"]}"#,
        ) else {
            panic!("\"colour\" passed the schema");
        };
        let text = e.to_string();
        assert!(
            text.contains("conductor_size") && text.contains("appliance"),
            "{text}"
        );
    }

    /// Every tool, the write tools above all, refuses an argument it does not know, naming it
    /// and the names it takes, whatever its schema says about extra keys: the model corrects
    /// it in one step instead of seeing a value silently dropped.
    #[test]
    fn every_tool_refuses_an_unknown_argument_with_the_allowed_names() {
        let registry = super::super::default_registry(60);
        let mut checked = 0;
        for tool in registry.all() {
            let name = tool.name();
            let Some(props) = registry
                .schema(name)
                .and_then(|s| s.get("properties"))
                .and_then(serde_json::Value::as_object)
            else {
                continue;
            };
            let Err(e) = registry.validate(name, r#"{"zzz_bogus": 1}"#) else {
                panic!("{name} accepted an unknown argument");
            };
            let text = e.to_string();
            assert!(
                text.contains("unknown argument 'zzz_bogus'"),
                "{name}: {text}"
            );
            for allowed in props.keys() {
                assert!(
                    text.contains(allowed.as_str()),
                    "{name}: {allowed} missing from {text}"
                );
            }
            checked += 1;
        }
        assert!(checked > 20, "only {checked} tools checked");
        // Nested objects too, and a known argument is not reported.
        let Err(e) = registry.validate(
            "add_circuit",
            r#"{"panel":"LP-1","description":"x","load_va":100,"motor":{"hp":1,"phase":"single","voltage":115,"colour":"red"}}"#,
        ) else {
            panic!("an unknown motor argument passed");
        };
        let text = e.to_string();
        assert!(text.contains("'motor.colour'"), "{text}");
        assert!(!text.contains("'panel'"), "{text}");
    }
}
