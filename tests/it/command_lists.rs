//! The command lists people read (the README's Discord and Slack sections, the Slack app
//! manifest's usage hint, the help text) and the one Discord registers name every command of
//! the core's table, so none is left out of one of them.

use sparky::core::commands::{help_text, COMMAND_LIST};

const README: &str = include_str!("../../README.md");

/// The words of `list` as a string of `a|b|c` alternatives, split into names.
fn alternatives(text: &str) -> Vec<String> {
    text.split(['|', ' ', '`', ',', '"', '\n', ':'])
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether `text` lists `command` ("project set" as `project …|set|…`).
fn lists(text: &str, command: &str) -> bool {
    let words: Vec<&str> = command.split(' ').collect();
    match words.as_slice() {
        [one] => alternatives(text).iter().any(|w| w == one),
        [group, sub] => text.split(&format!("{group} ")[..]).skip(1).any(|after| {
            let head = after.split(['`', '"']).next().unwrap_or("");
            alternatives(head).iter().any(|w| w == sub)
        }),
        _ => false,
    }
}

fn section(start: &str, end: &str) -> &'static str {
    let from = README
        .find(start)
        .unwrap_or_else(|| panic!("README has {start:?}"));
    let rest = &README[from..];
    let to = rest.find(end).unwrap_or(rest.len());
    &README[from..from + to]
}

#[test]
fn every_list_names_every_command() {
    let discord_readme = section("Commands: `/sparky ask", "#### 4. Run");
    let manifest = section("usage_hint:", "should_escape");
    let slack_readme = section("* `/sparky` commands:", "any other text is a question");
    let help = help_text();
    for command in COMMAND_LIST {
        assert!(
            lists(discord_readme, command),
            "README (Discord) misses {command}"
        );
        assert!(lists(manifest, command), "Slack manifest misses {command}");
        // `ask`, `spec` and `help` are how a conversation starts; the rest are listed.
        assert!(
            lists(slack_readme, command) || ["ask", "spec"].contains(command),
            "README (Slack) misses {command}"
        );
        assert!(
            lists(&help, command) || ["ask", "spec", "help"].contains(command),
            "help misses {command}"
        );
    }
}

#[test]
fn discord_registers_every_command() {
    let def = serde_json::to_value(sparky::platforms::discord::commands::definition())
        .expect("the definition serialises");
    let options = def["options"].as_array().expect("options");
    for command in COMMAND_LIST {
        let mut words = command.split(' ');
        let top = words.next().unwrap_or_default();
        let group = options
            .iter()
            .find(|o| o["name"] == top)
            .unwrap_or_else(|| panic!("Discord registration misses {top}"));
        if let Some(sub) = words.next() {
            let subs = group["options"].as_array().expect("sub-commands");
            assert!(
                subs.iter().any(|o| o["name"] == sub),
                "Discord registration misses {command}"
            );
        }
    }
    assert_eq!(
        options.len(),
        COMMAND_LIST.iter().filter(|c| !c.contains(' ')).count() + 1
    );
}
