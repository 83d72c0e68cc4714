//! The pure policy core: task statuses and legal transitions, the admission record, the
//! decision vocabulary, the guard functions and the request digest.
//!
//! Pure means: no IO, no clock reads, no randomness. Time (`now_ms`), task ids and secrets
//! are arguments. Everything else in tasklatch — stores, runtime, MCP server, simulation —
//! asks this module for its decisions, so there is one policy with several enforcements.

mod cursor;
mod decision;
mod digest;
mod era;
mod guard;
mod negotiation;
mod record;
mod status;

pub use cursor::{CURSOR_BYTES_MAX, check_cursor, decode_cursor, encode_cursor};
pub use decision::{Decision, Surface};
pub use digest::{
    DigestInputError, RequestDigest, canonical_json, digest_of_message, hex_lower, request_digest,
    sha256_hex,
};
pub use era::Era;
pub(crate) use guard::latched;
pub use guard::{
    CreateRequest, CursorCheck, ListPosition, TransitionRequest, guard_cancel, guard_create,
    guard_get, guard_input, guard_list, guard_result, guard_transition, visible_tasks,
};
pub use negotiation::{Negotiated, TaskSupport};
pub use record::{Admission, InputMap, TaskOutcome, TaskRecord};
pub use status::TaskStatus;
