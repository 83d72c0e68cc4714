//! The transition table of MCP 2025-11-25, checked exhaustively.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use tasklatch::contract::TaskStatus::{self, *};

#[test]
fn legal_transitions_are_exactly_the_spec_table() {
    let legal: &[(TaskStatus, TaskStatus)] = &[
        (Working, InputRequired),
        (InputRequired, Working),
        (Working, Completed),
        (Working, Failed),
        (Working, Cancelled),
        (InputRequired, Completed),
        (InputRequired, Failed),
        (InputRequired, Cancelled),
    ];
    for from in TaskStatus::ALL {
        for to in TaskStatus::ALL {
            assert_eq!(
                from.can_transition_to(to),
                legal.contains(&(from, to)),
                "{from} -> {to}"
            );
        }
    }
}

#[test]
fn terminal_statuses_are_final() {
    for from in TaskStatus::ALL.into_iter().filter(|s| s.is_terminal()) {
        for to in TaskStatus::ALL {
            assert!(
                !from.can_transition_to(to),
                "{from} -> {to} must be illegal"
            );
        }
    }
    let terminal: Vec<_> = TaskStatus::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .collect();
    assert_eq!(terminal, [Completed, Failed, Cancelled]);
}

#[test]
fn statuses_serialise_as_the_wire_strings() {
    for status in TaskStatus::ALL {
        let json = serde_json::to_string(&status).unwrap();
        assert_eq!(json, format!("\"{}\"", status.as_str()));
        assert_eq!(serde_json::from_str::<TaskStatus>(&json).unwrap(), status);
    }
    assert_eq!(InputRequired.as_str(), "input_required");
    assert!(serde_json::from_str::<TaskStatus>("\"done\"").is_err());
}
