//! The write tool a request to add, change or remove something in the project asks for.
//!
//! Ranking by shared words misses the plainest requests: "need a new 20a ckt in LP-1 for the
//! breakroom recepts" shares few words with `add_circuit`'s description, and a model not
//! offered the tool answers without making the change. A verb of changing followed by a
//! project object names the tool outright, whatever the ranking says.

/// What the person wants done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Add,
    Change,
    Remove,
}

/// What of the project it is done to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Object {
    Circuit,
    Panel,
    Feeder,
    Transformer,
    Load,
    Service,
    Charger,
}

/// Words of each action, as electricians type them (inflections listed: no stemming, so
/// "adds" and "added" are here and "address" is not).
const VERBS: &[(Action, &[&str])] = &[
    (
        Action::Add,
        &[
            "add",
            "adds",
            "adding",
            "added",
            "new",
            "install",
            "installing",
            "put",
            "putting",
            "create",
            "another",
            "extra",
            "addition",
        ],
    ),
    (
        Action::Change,
        &[
            "change", "changing", "update", "updating", "upsize", "upsizing", "downsize", "resize",
            "swap", "swapping", "move", "moving", "bump", "increase", "decrease", "reduce",
            "replace", "modify", "edit", "upgrade", "rename", "make", "set", "switch", "convert",
            "relocate",
        ],
    ),
    (
        Action::Remove,
        &[
            "remove",
            "removing",
            "delete",
            "deleting",
            "drop",
            "dropping",
            "pull",
            "pulling",
            "kill",
            "eliminate",
            "abandon",
            "scrap",
            "ditch",
            "demo",
            "demolish",
            "rid",
        ],
    ),
];

/// Words of each object.
const OBJECTS: &[(Object, &[&str])] = &[
    (
        Object::Circuit,
        &[
            "circuit", "circuits", "ckt", "ckts", "cct", "ccts", "breaker", "breakers", "branch",
            "homerun",
        ],
    ),
    (
        Object::Panel,
        &["panel", "panels", "panelboard", "subpanel", "loadcenter"],
    ),
    (Object::Feeder, &["feeder", "feeders"]),
    (
        Object::Transformer,
        &[
            "transformer",
            "transformers",
            "xfmr",
            "xfmrs",
            "xformer",
            "xfrmr",
        ],
    ),
    (Object::Load, &["load", "loads"]),
    (Object::Service, &["service", "utility"]),
    (
        Object::Charger,
        &["charger", "charging", "solar", "alternator", "generator"],
    ),
];

/// The tool for an action on an object, where the project has one.
fn tool(action: Action, object: Object) -> Option<&'static str> {
    use Action::*;
    use Object::*;
    Some(match (action, object) {
        (Add, Circuit) => "add_circuit",
        (Change, Circuit) => "update_circuit",
        (Remove, Circuit) => "remove_circuit",
        (Add, Panel) => "add_panel",
        (Add, Feeder) => "add_feeder",
        (Add, Transformer) => "add_transformer",
        (Add, Load) => "add_load_item",
        (Add | Change, Service) => "set_service",
        (Add, Charger) => "add_charging_source",
        _ => return None,
    })
}

/// The write tools `text` asks for, in the order asked: each verb of changing with the first
/// object named after it (or, when none follows, the first named anywhere: "circuit 12 can
/// go, delete it").
pub fn tools(text: &str) -> Vec<&'static str> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let first_object = words.iter().find_map(|w| object_of(w));
    let mut out = Vec::new();
    for i in 0..words.len() {
        let Some(action) = action_at(&words, i) else {
            continue;
        };
        let object = words[i + 1..]
            .iter()
            .find_map(|w| object_of(w))
            .or(first_object);
        if let Some(t) = object.and_then(|o| tool(action, o)) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// Verbs that are nouns after these words: "voltage drop", "service drop".
const NOUN_AFTER: &[(&str, &[&str])] = &[("drop", &["voltage", "service", "vd"])];

/// The action of the `i`th word, if it is a verb of changing there.
fn action_at(words: &[String], i: usize) -> Option<Action> {
    let word = words[i].as_str();
    let before = i.checked_sub(1).map(|b| words[b].as_str());
    let noun = NOUN_AFTER
        .iter()
        .any(|(w, after)| *w == word && before.is_some_and(|b| after.contains(&b)));
    if noun {
        return None;
    }
    action_of(word)
}

fn action_of(word: &str) -> Option<Action> {
    VERBS
        .iter()
        .find(|(_, words)| words.contains(&word))
        .map(|(a, _)| *a)
}

fn object_of(word: &str) -> Option<Object> {
    OBJECTS
        .iter()
        .find(|(_, words)| words.contains(&word))
        .map(|(o, _)| *o)
}

/// Requests to change the project as electricians type them, with the write tool each needs
/// (shared by this module's tests and the router's).
#[cfg(test)]
pub(crate) const CHANGE_REQUESTS: &[(&str, &str)] = &[
    (
        "add a 20A circuit to panel LP-1 for the break room receptacles",
        "add_circuit",
    ),
    (
        "need a new 20a ckt in LP-1 for the breakroom recepts",
        "add_circuit",
    ),
    (
        "put a 30 amp 2 pole breaker in LP-1 for the dryer",
        "add_circuit",
    ),
    ("LP-1 needs another circuit for the copier", "add_circuit"),
    ("swap ckt 7 to a 30A 2-pole", "update_circuit"),
    (
        "upsize circuit 3 on MP to #10 for the longer run",
        "update_circuit",
    ),
    ("move ckt 14 over to LP-2", "update_circuit"),
    ("pull circuit 12 out of panel A", "remove_circuit"),
    (
        "circuit 12 on LP-1 is abandoned, delete it",
        "remove_circuit",
    ),
    ("drop ckt 9 from MP, the sign is gone", "remove_circuit"),
    ("add a 225A panel LP-2 fed from MDP", "add_panel"),
    ("install a 45 kVA xfmr T1 fed from MDP", "add_transformer"),
    ("add a feeder from MDP to LP-2, 3 sets of 4/0", "add_feeder"),
    ("upgrade the service to 400A 120/208 3ph", "set_service"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_to_change_the_project_name_their_write_tool() {
        for (text, want) in CHANGE_REQUESTS {
            let got = tools(text);
            assert_eq!(got.first(), Some(want), "{text}: {got:?}");
        }
    }

    #[test]
    fn questions_that_change_nothing_name_no_write_tool() {
        for text in [
            "what size wire for a 30 amp circuit?",
            "What's the voltage drop on MP circuit 12?",
            "How loaded is MP?",
            "describe panel LP-1",
            "is the service drop big enough for 200 A?",
        ] {
            assert_eq!(tools(text), Vec::<&str>::new(), "{text}");
        }
    }
}
