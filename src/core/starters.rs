//! The questions offered when a conversation opens (Slack's suggested prompts), chosen from
//! what the project holds: its first panel, its longest circuit, the edition in force, its
//! punch list. Without a project, questions anyone can ask.

use crate::domain::digest::clip;
use crate::project::ProjectData;

/// Most prompts offered at once (Slack shows four).
pub const MAX_STARTERS: usize = 4;

/// Longest name from the project taken into a prompt's title.
const MAX_NAME: usize = 30;

/// One question offered: the short title shown and the message it sends when picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starter {
    /// What the button says.
    pub title: String,
    /// What is asked when it is picked.
    pub message: String,
}

/// The questions offered in a new conversation and the heading they go under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starters {
    /// The heading ("Project Shop · NEC 2023").
    pub heading: String,
    /// At most [`MAX_STARTERS`] questions.
    pub prompts: Vec<Starter>,
}

fn starter(title: impl Into<String>, message: impl Into<String>) -> Starter {
    Starter {
        title: title.into(),
        message: message.into(),
    }
}

/// A name from the project, on one line and shortened for a title.
fn short(name: &str) -> String {
    clip(
        &name.split_whitespace().collect::<Vec<_>>().join(" "),
        MAX_NAME,
    )
}

/// The questions for a conversation about `project` (`None`: no project is bound).
pub fn for_project(project: Option<&ProjectData>) -> Starters {
    let Some(data) = project else {
        return Starters {
            heading: "Try asking".into(),
            prompts: vec![
                starter(
                    "Size a conductor",
                    "What size copper conductor do I need for a 45 A continuous load with 75 °C terminals?",
                ),
                starter(
                    "Grounding conductor for 60 A",
                    "What size equipment grounding conductor does a 60 A circuit need?",
                ),
                starter(
                    "What edition applies here?",
                    "Which NEC edition is in force where I work, and how do I tell Sparky my job site?",
                ),
                starter(
                    "Set up a project",
                    "How do I set up a project for this channel so you can check its panels and circuits?",
                ),
            ],
        };
    };
    let p = &data.project;
    let in_force = crate::jurisdiction::for_project(p);
    let mut prompts = Vec::new();
    if let Some(panel) = data.panels.first() {
        let name = short(&panel.spec.name);
        prompts.push(starter(
            format!("Check panel {name}"),
            format!(
                "Check panel {}: is its load within its rating, and is anything wrong with its circuits?",
                panel.spec.name
            ),
        ));
    }
    let longest = data
        .circuits
        .iter()
        .filter_map(|c| c.spec.length.map(|l| (l, c)))
        .max_by(|a, b| a.0.value().total_cmp(&b.0.value()));
    if let Some((length, circuit)) = longest {
        let panel = data
            .panels
            .iter()
            .find(|p| p.id == circuit.panel_id)
            .map(|p| p.spec.name.as_str())
            .unwrap_or("its panel");
        prompts.push(starter(
            "Voltage drop on the longest circuit",
            format!(
                "What is the voltage drop on circuit {} of panel {} ({}, {length} one way), and is it within 3 %?",
                circuit.spec.number, panel, circuit.spec.description
            ),
        ));
    } else if !data.circuits.is_empty() {
        prompts.push(starter(
            "Inspect the project",
            format!(
                "Run an inspection of project {} and list what needs fixing.",
                p.name
            ),
        ));
    }
    prompts.push(starter(
        "What edition applies here?",
        format!("Which NEC edition applies to project {}, and why?", p.name),
    ));
    if data.tasks.iter().any(|t| t.completed_at.is_none()) {
        prompts.push(starter(
            "What is left on the punch list?",
            format!(
                "What is still open on the punch list of project {}?",
                p.name
            ),
        ));
    }
    if data.service.is_some() {
        prompts.push(starter(
            "Is the service big enough?",
            format!(
                "Is the service of project {} big enough for its load?",
                p.name
            ),
        ));
    }
    if prompts.len() < MAX_STARTERS {
        prompts.push(starter(
            "Grounding conductor for 60 A",
            "What size equipment grounding conductor does a 60 A circuit need?",
        ));
    }
    prompts.truncate(MAX_STARTERS);
    let edition = in_force
        .edition
        .map_or_else(|| in_force.tables.to_string(), |e| e.to_string());
    Starters {
        heading: format!("Project {} · NEC {edition}", short(&p.name)),
        prompts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_project_the_questions_are_general() {
        let s = for_project(None);
        assert_eq!(s.prompts.len(), MAX_STARTERS);
        assert!(s
            .prompts
            .iter()
            .all(|p| !p.title.is_empty() && !p.message.is_empty()));
    }

    #[test]
    fn long_names_are_cut_for_titles() {
        assert_eq!(short("LP-1"), "LP-1");
        let cut = short(&"A".repeat(100));
        assert_eq!(cut.chars().count(), MAX_NAME + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(short("Main\n  panel"), "Main panel");
    }
}
