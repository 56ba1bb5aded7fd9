//! OpenAI-compatible embeddings client. (in progress)
