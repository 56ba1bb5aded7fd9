//! The knowledge base: chunks, manifests and the version marker on DynamoDB, the heading-aware
//! chunker, index snapshots in S3 (feature `kb-snapshots`) and the embeddings clients
//! (OpenAI-compatible; Amazon Bedrock's Titan behind the feature `bedrock`). kb-ingest writes
//! it, kb-retrieve reads it.

#![deny(missing_docs)]

pub mod embeddings;
pub mod kb;

pub use domain::{Error, Result};
