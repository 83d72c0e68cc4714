//! # tasklatch-contract
//!
//! The pure policy core of MCP tasks: task statuses and legal transitions, the admission
//! record, the decision vocabulary, the guard functions and their precedence, the request
//! digest (RFC 8785 + SHA-256) and caller-bound list cursors.
//!
//! Pure means: no IO, no clock reads, no randomness. Time (`now_ms`), task ids and secrets
//! are arguments. Everything else in tasklatch — stores, runtime, MCP server, simulation —
//! asks this crate for its decisions, so there is one policy with several enforcements.
//! Its dependencies show it: serde, SHA-256 and HMAC, and the mutant switch, a leaf; no
//! async runtime, database, OS randomness or HTTP (checked by `tests/it/layers.rs`).

#![warn(missing_docs)]

// The mutant switch under the name every guard has always used.
use tasklatch_mutants as mutants;

mod cursor;
mod decision;
mod digest;
mod era;
mod guard;
mod negotiation;
mod record;
mod status;

pub use cursor::{CURSOR_BYTES_MAX, LIST_LIMIT_MAX, check_cursor, decode_cursor, encode_cursor};
pub use decision::{Decision, Surface};
pub use digest::{
    DigestInputError, RequestDigest, canonical_json, digest_of_message, hex_lower, request_digest,
    sha256_hex,
};
pub use era::Era;
pub use guard::{
    CreateRequest, CursorCheck, ListPosition, TransitionRequest, guard_cancel, guard_create,
    guard_get, guard_input, guard_list, guard_result, guard_transition, latched, visible_tasks,
};
pub use negotiation::{Negotiated, TaskSupport};
pub use record::{Admission, InputMap, TaskOutcome, TaskRecord};
pub use status::TaskStatus;
