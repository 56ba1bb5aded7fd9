//! What every function needs to run on Lambda, besides its own domain: the AWS SDK's
//! configuration and the TLS roots of every HTTPS client, the Secrets Manager cache, upstream
//! HTTP calls with retries, configuration from the environment, logging and metrics, the
//! runtime loop, the HTTP error envelope and request helpers, the access gate of the tool
//! functions (`http::route_access`), the concerns every tool function's handler shares as
//! `tower` layers (`layers`) and the one DynamoDB table helper with the rate limiter
//! it counts with (`dynamo`, `companion`, `limits`).
//!
//! Errors are the domain's [`Error`]: the kit fails the ways the calls it wraps do.

#![deny(missing_docs)]

pub mod aws;
pub mod bootstrap;
pub mod companion;
pub mod config;
pub mod dynamo;
pub mod http;
pub mod layers;
pub mod limits;
pub mod metrics;
pub mod observability;
mod otlp;
pub mod runtime_loop;
mod runtime_socket;
pub mod sdk_spans;
pub mod secrets;
mod span_recorder;
pub mod telemetry;
pub mod tls;
pub mod upstream;

pub use domain::{Error, Result};
pub use dynamo::MAX_TRANSIENT_ROUNDS;
