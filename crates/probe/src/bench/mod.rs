//! `tasklatch bench http` ([`http`]): a load generator for live MCP tasks servers, and
//! ([`compare`]) the same loads against several servers side by side. A client like the
//! probe: it links no server.

pub mod compare;
pub mod http;
