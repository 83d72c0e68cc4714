//! Opaque `tasks/list` cursors bound to the caller.
//!
//! A cursor carries a keyset position and an HMAC-SHA256 tag over the position *and the
//! caller's authorization key*, under a server secret. The caller is not written into the
//! cursor: decoding recomputes the tag for the presenting caller, so another caller's
//! cursor, an edited one or garbage all fail the same way (`BLOCK_BAD_CURSOR`, `-32602`).
//! The secret is an argument: the contract holds no key material of its own.

use super::digest::hex_lower;
use super::guard::{CursorCheck, ListPosition};
use hmac::{KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

const PREFIX: &str = "c1";
const TAG_BYTES: usize = 16;
/// Bound on an accepted cursor's length, checked before any work is done on it.
pub const CURSOR_BYTES_MAX: usize = 1024;
/// The largest page a store returns, whatever the caller asks for.
pub const LIST_LIMIT_MAX: usize = 1_000;

fn mac_for(secret: &[u8], caller: &str, position: &ListPosition) -> HmacSha256 {
    // Any key length is valid for HMAC, so this cannot fail.
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(b"tasklatch.list-cursor.v1\0");
    mac.update(caller.as_bytes());
    mac.update(b"\0");
    mac.update(&position.created_at_ms.to_be_bytes());
    mac.update(position.task_id.as_bytes());
    mac
}

fn tag(secret: &[u8], caller: &str, position: &ListPosition) -> [u8; TAG_BYTES] {
    let full = mac_for(secret, caller, position).finalize().into_bytes();
    let mut out = [0u8; TAG_BYTES];
    out.copy_from_slice(&full[..TAG_BYTES]);
    out
}

/// Encodes `position` as a cursor only `caller` can use: `c1.<ms>.<hex id>.<hex tag>`.
pub fn encode_cursor(secret: &[u8], caller: &str, position: &ListPosition) -> String {
    format!(
        "{PREFIX}.{}.{}.{}",
        position.created_at_ms,
        hex_lower(position.task_id.as_bytes()),
        hex_lower(&tag(secret, caller, position))
    )
}

/// What a list request's cursor is worth to `caller`: the list guard's [`CursorCheck`]
/// and, when valid, the position to resume after.
pub fn check_cursor(
    secret: &[u8],
    caller: &str,
    cursor: Option<&str>,
) -> (CursorCheck, Option<ListPosition>) {
    match cursor.map(|cursor| decode_cursor(secret, caller, cursor)) {
        None => (CursorCheck::Absent, None),
        Some(Some(position)) => (CursorCheck::Valid, Some(position)),
        Some(None) => (CursorCheck::Invalid, None),
    }
}

/// Decodes a cursor presented by `caller`. `None` for anything not issued to this caller.
pub fn decode_cursor(secret: &[u8], caller: &str, cursor: &str) -> Option<ListPosition> {
    if cursor.len() > CURSOR_BYTES_MAX {
        return None;
    }
    let mut parts = cursor.split('.');
    let (prefix, ms, id_hex, tag_hex) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if prefix != PREFIX || parts.next().is_some() {
        return None;
    }
    let position = ListPosition {
        created_at_ms: ms.parse().ok()?,
        task_id: String::from_utf8(hex_decode(id_hex)?).ok()?,
    };
    let presented = hex_decode(tag_hex)?;
    if presented.len() != TAG_BYTES {
        return None;
    }
    // Constant-time comparison of the truncated tag.
    mac_for(secret, caller, &position)
        .verify_truncated_left(&presented)
        .ok()?;
    Some(position)
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}
