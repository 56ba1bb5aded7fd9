//! The managed backend (`KB_BACKEND=bedrock`): queries answered by an Amazon Bedrock
//! knowledge base's Retrieve API instead of this function's index, in the same reply shape,
//! so the tool contract does not change. Bedrock embeds the query and searches its vector
//! store (OpenSearch Serverless, Aurora, S3 Vectors, ...); nothing is loaded here.
//!
//! Each result becomes a [`Hit`]: its text, Bedrock's relevance score, and a document id
//! made like `kb-ingest`'s (the source file's name without its extension), so answers cite
//! the same ids whichever backend served them. Result texts are the corpus's, as hostile as
//! any document: the agent treats them as data, like the index's.

use std::time::Instant;

use aws_sdk_bedrockagentruntime::Client;
use aws_sdk_bedrockagentruntime::error::ProvideErrorMetadata;
use aws_sdk_bedrockagentruntime::types::{
    KnowledgeBaseQuery, KnowledgeBaseRetrievalConfiguration, KnowledgeBaseRetrievalResult,
    KnowledgeBaseVectorSearchConfiguration, RetrievalResultLocation, SearchType,
};
use aws_smithy_types::Document;
use domain::{Error, Result};

use crate::config::{BedrockKbConfig, BedrockSearchType};
use crate::index::Hit;

const SERVICE: &str = "bedrock-knowledge-base";
/// Metadata Bedrock attaches to every chunk.
const SOURCE_URI: &str = "x-amz-bedrock-kb-source-uri";
const CHUNK_ID: &str = "x-amz-bedrock-kb-chunk-id";
/// A document attribute of that name (a `.metadata.json` beside the source file) wins over
/// the id made from the file name.
const DOCUMENT_ID: &str = "document_id";

/// A client of the Agents for Amazon Bedrock Runtime API and the knowledge base to ask.
#[derive(Debug, Clone)]
pub struct BedrockKb {
    client: Client,
    config: BedrockKbConfig,
}

/// The Retrieve API's client, from the shared AWS configuration (honours
/// `AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME`).
pub fn client(sdk: &aws_config::SdkConfig) -> Client {
    Client::new(sdk)
}

/// As [`client`], reaching the API at `endpoint` (a local fake).
pub fn client_at(sdk: &aws_config::SdkConfig, endpoint: &str) -> Client {
    Client::from_conf(
        aws_sdk_bedrockagentruntime::config::Builder::from(sdk)
            .endpoint_url(endpoint)
            .build(),
    )
}

impl BedrockKb {
    pub fn new(client: Client, config: BedrockKbConfig) -> Self {
        Self { client, config }
    }

    /// The best `top_k` (at most `KB_BEDROCK_MAX_RESULTS`) chunks for `query`, best first.
    pub async fn retrieve(&self, query: &str, top_k: usize, deadline: Instant) -> Result<Vec<Hit>> {
        let wanted = top_k.clamp(1, self.config.max_results);
        let mut search = KnowledgeBaseVectorSearchConfiguration::builder()
            .number_of_results(i32::try_from(wanted).unwrap_or(i32::MAX));
        search = match self.config.search_type {
            BedrockSearchType::Auto => search,
            BedrockSearchType::Hybrid => search.override_search_type(SearchType::Hybrid),
            BedrockSearchType::Semantic => search.override_search_type(SearchType::Semantic),
        };
        let configuration = KnowledgeBaseRetrievalConfiguration::builder()
            .vector_search_configuration(search.build())
            .build();
        let query = KnowledgeBaseQuery::builder().text(query).build();
        let call = self
            .client
            .retrieve()
            // The setter, not `.knowledge_base_id(..)`: infra/tests/add-a-tool.sh copies this
            // crate renaming `knowledge_base` identifiers, which would rename the SDK's too.
            .set_knowledge_base_id(Some(self.config.knowledge_base_id.clone()))
            .retrieval_query(query)
            .retrieval_configuration(configuration)
            .send();
        let output = match tokio::time::timeout_at(deadline.into(), call).await {
            Err(_) => return Err(Error::UpstreamTimeout { service: SERVICE }),
            Ok(Err(e)) => {
                // The code names the cause (AccessDeniedException, ResourceNotFoundException,
                // ValidationException for a search type the store lacks, Throttling...); the
                // message may quote the request, so it stays out.
                let code = e.code().unwrap_or("no answer").to_owned();
                tracing::warn!(code, "Bedrock Retrieve failed");
                return Err(Error::Upstream {
                    service: SERVICE,
                    message: format!("Bedrock Retrieve failed: {code}"),
                });
            }
            Ok(Ok(output)) => output,
        };
        Ok(hits(output.retrieval_results(), wanted))
    }
}

/// Bedrock's results as hits, in its order; results without text are left out.
pub fn hits(results: &[KnowledgeBaseRetrievalResult], limit: usize) -> Vec<Hit> {
    results
        .iter()
        .filter_map(|result| {
            let text = result.content().map(|c| c.text()).unwrap_or_default();
            (!text.trim().is_empty()).then_some((result, text))
        })
        .take(limit)
        .enumerate()
        .map(|(rank, (result, text))| {
            let metadata = |key: &str| match result.metadata().and_then(|m| m.get(key)) {
                Some(Document::String(value)) if !value.trim().is_empty() => Some(value.as_str()),
                _ => None,
            };
            let uri = metadata(SOURCE_URI).or_else(|| result.location().and_then(location_uri));
            let document_id = metadata(DOCUMENT_ID)
                .map(str::to_owned)
                .or_else(|| uri.and_then(document_id_from_uri))
                .unwrap_or_else(|| "unknown".to_owned());
            let id = metadata(CHUNK_ID)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("{document_id}#{}", rank + 1));
            Hit {
                id,
                document_id,
                content: text.to_owned(),
                score: result.score().unwrap_or(0.0) as f32,
                bm25: None,
                vector: None,
            }
        })
        .collect()
}

/// Where a result came from, for the kinds of data source that name one.
fn location_uri(location: &RetrievalResultLocation) -> Option<&str> {
    location
        .s3_location()
        .and_then(|s3| s3.uri())
        .or_else(|| location.web_location().and_then(|web| web.url()))
        .or_else(|| location.confluence_location().and_then(|c| c.url()))
        .or_else(|| location.share_point_location().and_then(|s| s.url()))
        .or_else(|| location.salesforce_location().and_then(|s| s.url()))
        .or_else(|| location.custom_document_location().and_then(|c| c.id()))
}

/// `s3://bucket/help/award-basics.md` → `award-basics`: the last path segment without its
/// extension, as `kb-ingest` names a document after its file.
pub fn document_id_from_uri(uri: &str) -> Option<String> {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let name = path.trim_end_matches('/').rsplit('/').next()?;
    let stem = match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => name,
    };
    (!stem.is_empty() && !stem.contains(':')).then(|| stem.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_bedrockagentruntime::types::{
        RetrievalResultContent, RetrievalResultLocationType, RetrievalResultS3Location,
    };
    use std::collections::HashMap;

    fn result(
        text: &str,
        uri: Option<&str>,
        metadata: &[(&str, &str)],
    ) -> KnowledgeBaseRetrievalResult {
        let mut builder = KnowledgeBaseRetrievalResult::builder()
            .content(RetrievalResultContent::builder().text(text).build())
            .score(0.5);
        if let Some(uri) = uri {
            builder = builder.location(
                RetrievalResultLocation::builder()
                    .r#type(RetrievalResultLocationType::S3)
                    .s3_location(RetrievalResultS3Location::builder().uri(uri).build())
                    .build()
                    .expect("type is set"),
            );
        }
        let metadata: HashMap<String, Document> = metadata
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Document::String((*v).to_owned())))
            .collect();
        builder.set_metadata(Some(metadata)).build()
    }

    #[test]
    fn document_ids_are_file_stems() {
        let id = document_id_from_uri;
        assert_eq!(
            id("s3://b/help/award-basics.md").as_deref(),
            Some("award-basics")
        );
        assert_eq!(id("s3://b/help/faq.de.md").as_deref(), Some("faq.de"));
        assert_eq!(
            id("https://example.com/help/baggage?x=1#top").as_deref(),
            Some("baggage")
        );
        assert_eq!(id("s3://b/help/README").as_deref(), Some("README"));
        assert_eq!(id("https://example.com/docs/").as_deref(), Some("docs"));
        assert_eq!(id("s3://"), None);
    }

    #[test]
    fn results_become_hits() {
        let results = [
            result(
                "Miles expire after 24 months.",
                Some("s3://b/kb/miles-expiry.md"),
                &[
                    (SOURCE_URI, "s3://b/kb/miles-expiry.md"),
                    (CHUNK_ID, "1%3A0%3Aabc"),
                ],
            ),
            result("   ", Some("s3://b/kb/empty.md"), &[]),
            result(
                "Baggage rules.",
                Some("s3://b/kb/baggage.md"),
                &[(DOCUMENT_ID, "help-baggage")],
            ),
            result("No location.", None, &[]),
        ];
        let hits = hits(&results, 10);
        let ids: Vec<(&str, &str)> = hits
            .iter()
            .map(|h| (h.id.as_str(), h.document_id.as_str()))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("1%3A0%3Aabc", "miles-expiry"),
                ("help-baggage#2", "help-baggage"),
                ("unknown#3", "unknown"),
            ]
        );
        assert_eq!(hits[0].content, "Miles expire after 24 months.");
        assert!((hits[0].score - 0.5).abs() < 1e-6);
        assert!(hits.iter().all(|h| h.bm25.is_none() && h.vector.is_none()));
        assert_eq!(super::hits(&results, 1).len(), 1);
    }
}
