//! The request digest: `sha256:<hex>` of the RFC 8785 (JCS) canonical JSON of
//! `{"method", "name", "arguments"}`.
//!
//! Never digested: the `task` param, `_meta` (so neither the idempotency key nor the
//! progress token), and the JSON-RPC `id`. Two retries of one logical request therefore
//! share a digest however their transport dressed them.
//!
//! Why not the `serde_jcs` crate: 0.1 sorts object members by their escaped UTF-8 bytes
//! (RFC 8785 §3.2.3 sorts by UTF-16 code units: `"\n"` must precede `"1"`, and U+1F600
//! must precede U+FB33), writes integers above 2^53 verbatim instead of as IEEE-754
//! doubles, and panics (`todo!`) on 128-bit numbers. The canonicaliser below is short;
//! number formatting, the only hard part, comes from `ryu-js` (ECMAScript
//! `Number.prototype.toString`), and `fixtures/digest-vectors.json` pins it against the
//! independent Python `rfc8785` implementation.

use serde_json::Value;
use sha2::{Digest as _, Sha256};
use std::fmt::Write as _;

/// A request digest, always written `sha256:<64 lower-case hex digits>`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct RequestDigest(String);

impl RequestDigest {
    /// The digest as stored and compared: `sha256:` and 64 lower-case hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses a stored digest, checking its shape (not its pre-image, which is unknown).
    pub fn parse(text: &str) -> Option<RequestDigest> {
        let hex = text.strip_prefix("sha256:")?;
        let ok = hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        ok.then(|| RequestDigest(text.to_owned()))
    }
}

impl std::fmt::Display for RequestDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Digest of the wrapped request. Absent `arguments` digest like `{}`: the tool receives
/// no arguments either way, and a client that drops an empty object on retry must still
/// replay its task rather than collide with it.
pub fn request_digest(method: &str, name: &str, arguments: Option<&Value>) -> RequestDigest {
    // The canonical form of `{"method", "name", "arguments"}`, written directly rather than
    // through a copy of the arguments: the members in RFC 8785 order (`arguments` <
    // `method` < `name`), absent arguments as `{}`.
    let mut canonical = String::with_capacity(128);
    canonical.push('{');
    write_string("arguments", &mut canonical);
    canonical.push(':');
    match arguments {
        Some(arguments) => write_canonical(arguments, &mut canonical),
        None => canonical.push_str("{}"),
    }
    canonical.push(',');
    write_string("method", &mut canonical);
    canonical.push(':');
    write_string(method, &mut canonical);
    canonical.push(',');
    write_string("name", &mut canonical);
    canonical.push(':');
    write_string(name, &mut canonical);
    canonical.push('}');
    RequestDigest(format!("sha256:{}", sha256_hex(canonical.as_bytes())))
}

/// Why a JSON-RPC message has no request digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestInputError {
    /// Not an object with a string `method`.
    NoMethod,
    /// `params.name` missing or not a string.
    NoName,
}

impl std::fmt::Display for DigestInputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DigestInputError::NoMethod => f.write_str("message has no string `method`"),
            DigestInputError::NoName => f.write_str("`params.name` is missing or not a string"),
        }
    }
}

/// Digest of a whole JSON-RPC request message (`{"jsonrpc","id","method","params":{…}}`):
/// picks `method`, `params.name` and `params.arguments`, ignores everything else.
pub fn digest_of_message(message: &Value) -> Result<RequestDigest, DigestInputError> {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .ok_or(DigestInputError::NoMethod)?;
    let params = message.get("params");
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or(DigestInputError::NoName)?;
    let arguments = params.and_then(|p| p.get("arguments"));
    Ok(request_digest(method, name, arguments))
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex_lower(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex_lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0x0f)] as char);
    }
    out
}

/// RFC 8785 canonical form of `value`.
///
/// serde_json has already enforced I-JSON's string rules on input (no lone surrogates),
/// and JSON has no NaN or infinity, so every `Value` has a canonical form.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            // RFC 8785 §3.2.3: members sorted by their names as arrays of UTF-16 code units.
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (index, (name, member)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
    }
}

/// RFC 8785 §3.2.2.3: every number is an IEEE-754 double printed as ECMAScript does.
/// Integers beyond 2^53 therefore lose precision exactly as a JavaScript peer's would.
fn write_number(number: &serde_json::Number, out: &mut String) {
    // as_f64 rounds u64/i64 to nearest, as ECMAScript parsing of the same literal does.
    let double = number.as_f64().unwrap_or(f64::NAN);
    debug_assert!(double.is_finite(), "serde_json numbers are finite");
    if double == 0.0 {
        out.push('0'); // covers -0, which ECMAScript prints as "0"
    } else {
        out.push_str(ryu_js::Buffer::new().format_finite(double));
    }
}

/// RFC 8785 §3.2.2.2 (ECMAScript `JSON.stringify` string rules).
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{09}' => out.push_str("\\t"),
            '\u{0A}' => out.push_str("\\n"),
            '\u{0C}' => out.push_str("\\f"),
            '\u{0D}' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    /// The digest as first written: the canonical JSON of a built `{method, name, arguments}`.
    fn digest_of_built_object(method: &str, name: &str, arguments: Option<&Value>) -> String {
        let mut digested = Map::new();
        digested.insert("method".into(), Value::String(method.to_owned()));
        digested.insert("name".into(), Value::String(name.to_owned()));
        let arguments = arguments
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        digested.insert("arguments".into(), arguments);
        let canonical = canonical_json(&Value::Object(digested));
        format!("sha256:{}", sha256_hex(canonical.as_bytes()))
    }

    #[test]
    fn the_direct_digest_equals_the_digest_of_the_built_object() {
        let arguments = [
            None,
            Some(json!({})),
            Some(json!({ "tenant": 2, "n": 6, "altered": true })),
            Some(json!({ "\n": [1.5e300, -0.0, null, "é\u{1F600}"], "1": { "b": {}, "a": [] } })),
            Some(json!([1, 2])),
            Some(json!("text")),
        ];
        for arguments in &arguments {
            for (method, name) in [("tools/call", "export"), ("m\"x", "n\\é")] {
                assert_eq!(
                    request_digest(method, name, arguments.as_ref()).as_str(),
                    digest_of_built_object(method, name, arguments.as_ref())
                );
            }
        }
    }
}
