//! Reading JSON files with positions: every loader of a file a user writes (the HTTP
//! tokens file here; fixtures, scenarios and failure records in the harness) reports a
//! mistake as `PATH:LINE:COLUMN: FIELD: message`, never a panic.

/// Deserialises `text` (read from `path`), or says where it went wrong:
/// `PATH:LINE:COLUMN: FIELD: message`.
pub fn from_json_at<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    text: &str,
) -> Result<T, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let inner = error.inner();
        format!(
            "{}:{}:{}: {}: {}",
            path.display(),
            inner.line(),
            inner.column(),
            error.path(),
            strip_position(inner)
        )
    })
}

/// serde_json appends " at line L column C"; the position is reported separately.
pub fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}
