//! `kb-ingest`: Markdown and text files into the knowledge-base table.
//!
//! [`files`] finds the documents, [`scan`] looks for prompt-injection text in them,
//! [`ingest`] compares them with the stored manifests and writes what changed (chunks from
//! `shared::kb::chunker`, embeddings from `shared::embeddings`), [`cli`] parses arguments
//! and wires the clients, [`publish`] uploads the index snapshot kb-retrieve loads,
//! [`progress`] shows it. `main.rs` only parses, runs and prints.

pub mod cli;
pub mod files;
pub mod ingest;
pub mod progress;
pub mod publish;
pub mod scan;

pub use cli::{Args, run};
pub use files::SourceFile;
pub use ingest::{IngestOptions, IngestReport, ingest};
pub use progress::Progress;
pub use scan::Suspicion;
