//! HTTP helpers shared by the functions: the error envelope and request limits.

pub mod error;
pub mod lambda;
pub mod route_access;
pub mod user_id;

pub use error::{ApiError, ErrorCode, ErrorEnvelope};

/// Request bodies above this size are refused with 413 (docs/api.md).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
