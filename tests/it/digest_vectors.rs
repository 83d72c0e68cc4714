//! `fixtures/digest-vectors.json`: request digests against values computed by the
//! independent Python `rfc8785` implementation.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use serde_json::Value;
use tasklatch::contract::{canonical_json, digest_of_message, sha256_hex};

fn vectors() -> Vec<Value> {
    let text = std::fs::read_to_string("fixtures/digest-vectors.json").expect("vectors file");
    let document: Value = serde_json::from_str(&text).expect("vectors file is JSON");
    assert_eq!(document["schema"], "tasklatch.digest-vectors/v1");
    document["vectors"]
        .as_array()
        .expect("vectors array")
        .clone()
}

#[test]
fn every_vector_matches_its_canonical_form_and_digest() {
    let vectors = vectors();
    assert!(
        vectors.len() >= 12,
        "at least 12 vectors, found {}",
        vectors.len()
    );
    for vector in &vectors {
        let name = vector["name"].as_str().unwrap();
        let message: Value = serde_json::from_str(vector["message"].as_str().unwrap())
            .unwrap_or_else(|error| panic!("{name}: message is not JSON: {error}"));
        let params = &message["params"];
        let digested = serde_json::json!({
            "method": message["method"],
            "name": params["name"],
            "arguments": params.get("arguments").cloned().unwrap_or_else(|| serde_json::json!({})),
        });
        let canonical = canonical_json(&digested);
        assert_eq!(
            canonical,
            vector["canonical"].as_str().unwrap(),
            "{name}: canonical form"
        );
        let digest = digest_of_message(&message).unwrap();
        assert_eq!(
            digest.as_str(),
            vector["digest"].as_str().unwrap(),
            "{name}: digest"
        );
        assert_eq!(
            digest.as_str(),
            format!("sha256:{}", sha256_hex(canonical.as_bytes()))
        );
    }
}

#[test]
fn vectors_that_name_a_twin_share_its_digest_and_the_rest_are_distinct() {
    let vectors = vectors();
    let digest_of = |name: &str| {
        vectors
            .iter()
            .find(|vector| vector["name"] == name)
            .unwrap_or_else(|| panic!("no vector {name}"))["digest"]
            .clone()
    };
    let mut twins = 0;
    for vector in &vectors {
        if let Some(twin) = vector.get("same_as").and_then(Value::as_str) {
            assert_eq!(
                vector["digest"],
                digest_of(twin),
                "{} vs {twin}",
                vector["name"]
            );
            twins += 1;
        }
    }
    assert!(twins >= 4);
    let mut distinct: Vec<&str> = vectors
        .iter()
        .filter(|vector| vector.get("same_as").is_none())
        .map(|vector| vector["digest"].as_str().unwrap())
        .collect();
    let before = distinct.len();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), before, "unrelated vectors must not collide");
}

#[test]
fn messages_without_method_or_name_have_no_digest() {
    assert!(digest_of_message(&serde_json::json!({"params": {"name": "x"}})).is_err());
    assert!(digest_of_message(&serde_json::json!({"method": "tools/call", "params": {}})).is_err());
    assert!(digest_of_message(&serde_json::json!({"method": "tools/call"})).is_err());
}
