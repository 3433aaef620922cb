//! Utility pack: calculator, current time, and the project's punch list (tasks).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::plan_preview::plan_item;
use super::schema::schema_for;
use super::{
    parse_args, to_value, ActionPreview, Tool, ToolContext, ToolError, ToolPlan, ToolRegistry,
    WriteTool,
};
use crate::project::plan::Change;
use crate::project::TaskSpec;

/// Registers the utility tools.
pub fn register(r: &mut ToolRegistry) {
    r.register(Calculator);
    r.register(CurrentTime);
    r.register(ListTasks);
    r.register_write(CreateTask);
    r.register_write(CompleteTask);
}

#[derive(Deserialize, JsonSchema)]
struct CalcArgs {
    /// Arithmetic expression, e.g. "2*12.9*16*150/6530" or "sqrt(3)*480*0.9".
    expression: String,
}

/// Safe arithmetic: a small parser, no code execution.
pub struct Calculator;

#[async_trait]
impl Tool for Calculator {
    fn name(&self) -> &'static str {
        "calculator"
    }
    fn description(&self) -> &'static str {
        "Evaluate an arithmetic expression exactly (+ - * / ^ %, parentheses, sqrt, abs, ln, log10, \
         sin/cos/tan in degrees, min, max, round, pi, e). Use it instead of doing arithmetic in your head."
    }
    fn schema(&self) -> Value {
        schema_for::<CalcArgs>()
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: CalcArgs = parse_args(&args)?;
        let value = evaluate(&a.expression).map_err(ToolError::InvalidArguments)?;
        Ok(json!({ "expression": a.expression, "value": value }))
    }
}

/// Evaluates an arithmetic expression; the error says where it went wrong.
pub fn evaluate(expr: &str) -> Result<f64, String> {
    if expr.len() > 1000 {
        return Err("expression is longer than 1000 characters".into());
    }
    let mut p = Parser {
        s: expr.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.expr()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!(
            "unexpected '{}' at position {}",
            p.s[p.i] as char,
            p.i + 1
        ));
    }
    if !v.is_finite() {
        return Err("the result is not a finite number (division by zero?)".into());
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expr(&mut self) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("expression is nested too deeply".into());
        }
        let mut v = self.term()?;
        loop {
            if self.eat(b'+') {
                v += self.term()?;
            } else if self.eat(b'-') {
                v -= self.term()?;
            } else {
                break;
            }
        }
        self.depth -= 1;
        Ok(v)
    }
    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        loop {
            if self.eat(b'*') {
                v *= self.power()?;
            } else if self.eat(b'/') {
                let d = self.power()?;
                if d == 0.0 {
                    return Err("division by zero".into());
                }
                v /= d;
            } else if self.eat(b'%') {
                let d = self.power()?;
                if d == 0.0 {
                    return Err("modulo by zero".into());
                }
                v %= d;
            } else {
                break;
            }
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.eat(b'^') {
            // Right-associative.
            let exp = self.power()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }
    fn unary(&mut self) -> Result<f64, String> {
        if self.eat(b'-') {
            return Ok(-self.unary()?);
        }
        if self.eat(b'+') {
            return self.unary();
        }
        self.atom()
    }
    fn atom(&mut self) -> Result<f64, String> {
        self.ws();
        if self.eat(b'(') {
            let v = self.expr()?;
            if !self.eat(b')') {
                return Err(format!("missing ')' at position {}", self.i + 1));
            }
            return Ok(v);
        }
        let start = self.i;
        match self.s.get(self.i) {
            Some(c) if c.is_ascii_digit() || *c == b'.' => {
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                if self.i < self.s.len() && (self.s[self.i] == b'e' || self.s[self.i] == b'E') {
                    let save = self.i;
                    self.i += 1;
                    if self.i < self.s.len() && (self.s[self.i] == b'-' || self.s[self.i] == b'+') {
                        self.i += 1;
                    }
                    if self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                            self.i += 1;
                        }
                    } else {
                        self.i = save;
                    }
                }
                let text =
                    std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
                text.parse::<f64>()
                    .map_err(|_| format!("'{text}' is not a number"))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                let name = std::str::from_utf8(&self.s[start..self.i])
                    .map_err(|e| e.to_string())?
                    .to_ascii_lowercase();
                match name.as_str() {
                    "pi" => return Ok(std::f64::consts::PI),
                    "e" => return Ok(std::f64::consts::E),
                    _ => {}
                }
                if !FUNCTIONS.contains(&name.as_str()) {
                    return Err(format!("unknown function or name '{name}'"));
                }
                if !self.eat(b'(') {
                    return Err(format!("{name} needs arguments in parentheses"));
                }
                let mut args = vec![self.expr()?];
                while self.eat(b',') {
                    args.push(self.expr()?);
                }
                if !self.eat(b')') {
                    return Err(format!("missing ')' after arguments of {name}"));
                }
                apply(&name, &args)
            }
            Some(c) => Err(format!(
                "unexpected '{}' at position {}",
                *c as char,
                self.i + 1
            )),
            None => Err("the expression ends too early".into()),
        }
    }
}

const FUNCTIONS: &[&str] = &[
    "sqrt", "abs", "ln", "log10", "log", "sin", "cos", "tan", "acos", "round", "min", "max",
];

fn apply(name: &str, args: &[f64]) -> Result<f64, String> {
    let one = |f: fn(f64) -> f64| -> Result<f64, String> {
        match args {
            [x] => Ok(f(*x)),
            _ => Err(format!("{name} takes one argument")),
        }
    };
    match name {
        "sqrt" => match args {
            [x] if *x < 0.0 => Err("sqrt of a negative number".into()),
            _ => one(f64::sqrt),
        },
        "abs" => one(f64::abs),
        "ln" => one(f64::ln),
        "log10" | "log" => one(f64::log10),
        "sin" => one(|d| d.to_radians().sin()),
        "cos" => one(|d| d.to_radians().cos()),
        "tan" => one(|d| d.to_radians().tan()),
        "acos" => one(|x| x.acos().to_degrees()),
        "round" => match args {
            [x] => Ok(x.round()),
            [x, d] if (0.0..=12.0).contains(d) => {
                let f = 10f64.powi(*d as i32);
                Ok((x * f).round() / f)
            }
            _ => Err("round takes a value and optionally 0-12 decimals".into()),
        },
        "min" if !args.is_empty() => Ok(args.iter().copied().fold(f64::INFINITY, f64::min)),
        "max" if !args.is_empty() => Ok(args.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        _ => Err(format!("unknown function '{name}'")),
    }
}

#[derive(Deserialize, JsonSchema)]
struct TimeArgs {
    /// IANA time zone, e.g. "America/Chicago". Defaults to UTC.
    #[serde(default)]
    time_zone: Option<String>,
}

/// The current date and time in a time zone.
pub struct CurrentTime;

#[async_trait]
impl Tool for CurrentTime {
    fn name(&self) -> &'static str {
        "current_time"
    }
    fn description(&self) -> &'static str {
        "Current date and time in an IANA time zone (e.g. America/New_York)."
    }
    fn schema(&self) -> Value {
        schema_for::<TimeArgs>()
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: TimeArgs = parse_args(&args)?;
        let name = a.time_zone.unwrap_or_else(|| "UTC".into());
        let tz: chrono_tz::Tz = name.trim().parse().map_err(|_| {
            ToolError::InvalidArguments(format!(
                "'{name}' is not an IANA time zone (e.g. America/Denver)"
            ))
        })?;
        let now = chrono::Utc::now().with_timezone(&tz);
        Ok(json!({
            "time_zone": tz.name(),
            "iso8601": now.to_rfc3339(),
            "local": now.format("%A %-d %B %Y, %H:%M %Z").to_string(),
        }))
    }
}

#[derive(Deserialize, JsonSchema)]
struct ListTasksArgs {
    /// Include completed tasks.
    #[serde(default)]
    include_done: bool,
}

/// The project's punch list.
pub struct ListTasks;

#[async_trait]
impl Tool for ListTasks {
    fn name(&self) -> &'static str {
        "list_tasks"
    }
    fn description(&self) -> &'static str {
        "List the project's punch-list tasks (open ones unless include_done)."
    }
    fn schema(&self) -> Value {
        schema_for::<ListTasksArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: ListTasksArgs = parse_args(&args)?;
        let project = ctx.project().await?;
        let tasks: Vec<_> = project
            .tasks
            .iter()
            .filter(|t| a.include_done || t.completed_at.is_none())
            .collect();
        Ok(json!({ "count": tasks.len(), "tasks": to_value(&tasks)? }))
    }
}

/// Adds a task to the punch list (a write: confirmed first).
pub struct CreateTask;

#[async_trait]
impl WriteTool for CreateTask {
    fn name(&self) -> &'static str {
        "create_task"
    }
    fn description(&self) -> &'static str {
        "Add a task to the project's punch list. Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<TaskSpec>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let t: TaskSpec = parse_args(args)?;
        if t.title.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "the task title is empty".into(),
            ));
        }
        let project = ctx.project().await?;
        let open = project
            .tasks
            .iter()
            .filter(|t| t.completed_at.is_none())
            .count();
        Ok(ToolPlan {
            preview: ActionPreview {
                summary: format!("Add task \"{}\"", t.title),
                details: vec![
                    format!("Assignee: {}", t.assignee.as_deref().unwrap_or("nobody")),
                    format!("Open tasks after: {}", open + 1),
                ],
            },
            item: plan_item(
                vec![Change::CreateTask {
                    spec: t,
                    created_by: ctx.user.clone(),
                }],
                json!({}),
            ),
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct CompleteTaskArgs {
    /// Task id from list_tasks.
    task_id: i64,
}

/// Marks a task done (a write: confirmed first).
pub struct CompleteTask;

#[async_trait]
impl WriteTool for CompleteTask {
    fn name(&self) -> &'static str {
        "complete_task"
    }
    fn description(&self) -> &'static str {
        "Mark a punch-list task as done (use the id from list_tasks). Needs confirmation."
    }
    fn schema(&self) -> Value {
        schema_for::<CompleteTaskArgs>()
    }
    async fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<ToolPlan, ToolError> {
        let a: CompleteTaskArgs = parse_args(args)?;
        let project = ctx.project().await?;
        let task = project
            .tasks
            .iter()
            .find(|t| t.id == a.task_id)
            .ok_or_else(|| {
                ToolError::NotFound(format!("task {} is not in this project", a.task_id))
            })?;
        if task.completed_at.is_some() {
            return Err(ToolError::Conflict(format!(
                "task {} is already done",
                a.task_id
            )));
        }
        Ok(ToolPlan {
            preview: ActionPreview {
                summary: format!("Mark task {} \"{}\" done", task.id, task.spec.title),
                details: vec![],
            },
            item: plan_item(
                vec![Change::CompleteTask {
                    task_id: task.id,
                    title: task.spec.title.clone(),
                }],
                json!({}),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn calculator_follows_precedence_and_functions() {
        assert_eq!(evaluate("2+3*4").unwrap(), 14.0);
        assert_eq!(evaluate("(2+3)*4").unwrap(), 20.0);
        assert_eq!(evaluate("2^3^2").unwrap(), 512.0);
        assert_eq!(evaluate("-2^2").unwrap(), 4.0);
        assert!((evaluate("sqrt(3)*480").unwrap() - 831.384).abs() < 1e-3);
        assert!((evaluate("2*12.9*16*150/6530").unwrap() - 9.4824).abs() < 1e-3);
        assert_eq!(evaluate("max(1, 7, 3)").unwrap(), 7.0);
        assert_eq!(evaluate("round(2.345, 2)").unwrap(), 2.35);
        assert!((evaluate("cos(60)").unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(evaluate("1.5e3").unwrap(), 1500.0);
    }

    #[test]
    fn calculator_rejects_bad_input_with_a_reason() {
        assert!(evaluate("1/0").unwrap_err().contains("division by zero"));
        assert!(evaluate("2+").is_err());
        assert!(evaluate("system(\"rm\")")
            .unwrap_err()
            .contains("unknown function"));
        assert!(evaluate("(1+2").unwrap_err().contains("missing ')'"));
        assert!(evaluate(&"(".repeat(200)).is_err());
        assert!(evaluate("sqrt(-1)").is_err());
    }
}
