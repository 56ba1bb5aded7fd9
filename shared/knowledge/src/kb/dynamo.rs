//! [`KbStore`] on DynamoDB.
//!
//! Items (`pk`/`sk` strings): a chunk is `pk = DOC#<document>`, `sk = CHUNK#<position, 6
//! digits>` with `document_id`, `position`, `content`, `content_hash` and `embedding` (Binary,
//! little-endian f32: 1536 dimensions are 6 KiB, far below the 400 KB item limit). The
//! version marker is `pk = KB`, `sk = VERSION`, and each document's manifest sits next to it
//! as `pk = KB`, `sk = DOC#<document>`: listing the documents is then one small Query that
//! reads no chunk (a Scan for them would read, and pay for, every embedding in the table).
//! `load_all` keeps only `sk` starting with `CHUNK#`.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, PutRequest, ReturnValue, WriteRequest,
};
use futures::{StreamExt, TryStreamExt};

use super::{Chunk, DocumentManifest, KbStore, KbVersion, SnapshotRef, chunk_id};
use domain::clock::{Clock, SystemClock};
use domain::{Error, Result};
use lambda_kit::dynamo::{ConditionFailure, Item, n, rfc3339, s, sdk_error};

/// Parallel Scan segments of `load_all`/`documents`: enough to overlap round trips without
/// flooding a small table's partitions.
const SCAN_SEGMENTS: i32 = 4;
/// BatchWriteItem accepts at most 25 requests.
const BATCH_LIMIT: usize = 25;
/// Batches of one write sent at the same time.
const BATCH_CONCURRENCY: usize = 4;
/// Rounds of resending unprocessed items (throttling) before giving up.
const MAX_UNPROCESSED_ROUNDS: u32 = 8;

const CHUNK_PREFIX: &str = "CHUNK#";
const DOC_PREFIX: &str = "DOC#";
const KB_PK: &str = "KB";

/// The knowledge base in its DynamoDB table.
#[derive(Clone)]
pub struct DynamoKbStore {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
}

impl DynamoKbStore {
    /// The store in `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self::with_clock(client, table, Arc::new(SystemClock))
    }

    /// The store in `table`, dating its writes by `clock`.
    pub fn with_clock(client: Client, table: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            table: table.into(),
            clock,
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn doc_pk(document_id: &str) -> AttributeValue {
        s(format!("{DOC_PREFIX}{document_id}"))
    }

    fn manifest_key(document_id: &str) -> Item {
        Item::from([
            ("pk".to_owned(), s(KB_PK)),
            ("sk".to_owned(), s(format!("{DOC_PREFIX}{document_id}"))),
        ])
    }

    fn chunk_sk(position: u32) -> String {
        format!("{CHUNK_PREFIX}{position:06}")
    }

    fn version_key() -> Item {
        Item::from([("pk".to_owned(), s(KB_PK)), ("sk".to_owned(), s("VERSION"))])
    }

    /// Every item of a Scan filtered by `filter`, its segments read in parallel.
    async fn scan_all(&self, filter: &str, values: &[(&str, &str)]) -> Result<Vec<Item>> {
        let segments = (0..SCAN_SEGMENTS).map(|segment| self.scan_segment(segment, filter, values));
        let pages = futures::future::try_join_all(segments).await?;
        Ok(pages.into_iter().flatten().collect())
    }

    async fn scan_segment(
        &self,
        segment: i32,
        filter: &str,
        values: &[(&str, &str)],
    ) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut scan = self
                .client
                .scan()
                .table_name(&self.table)
                .segment(segment)
                .total_segments(SCAN_SEGMENTS)
                .filter_expression(filter)
                .set_exclusive_start_key(start.take());
            for (name, value) in values {
                scan = scan.expression_attribute_values(*name, s(*value));
            }
            let out = scan.send().await.map_err(|e| sdk_error("Scan", e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    /// Every item of partition `pk` whose `sk` starts with `sk_prefix`.
    async fn query_prefix(
        &self,
        pk: AttributeValue,
        sk_prefix: &str,
        keys_only: bool,
    ) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .expression_attribute_values(":pk", pk.clone())
                .expression_attribute_values(":prefix", s(sk_prefix))
                .consistent_read(true)
                .set_exclusive_start_key(start.take());
            if keys_only {
                query = query.projection_expression("pk, sk");
            }
            let out = query.send().await.map_err(|e| sdk_error("Query", e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    /// Sends `requests` in BatchWriteItem calls of 25, a few at a time, resending what
    /// DynamoDB leaves unprocessed with a growing pause.
    async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<()> {
        let batches: Vec<Vec<WriteRequest>> = requests
            .chunks(BATCH_LIMIT)
            .map(<[WriteRequest]>::to_vec)
            .collect();
        futures::stream::iter(batches)
            .map(|batch| self.write_batch(batch))
            .buffer_unordered(BATCH_CONCURRENCY)
            .try_collect::<()>()
            .await
    }

    async fn write_batch(&self, mut batch: Vec<WriteRequest>) -> Result<()> {
        for round in 0..=MAX_UNPROCESSED_ROUNDS {
            if round > 0 {
                let cap_ms = 10u64.saturating_mul(2u64.pow(round.min(7))).min(1000);
                tokio::time::sleep(Duration::from_millis(fastrand::u64(cap_ms / 2..=cap_ms))).await;
            }
            let out = self
                .client
                .batch_write_item()
                .request_items(&self.table, batch)
                .send()
                .await
                .map_err(|e| sdk_error("BatchWriteItem", e))?;
            batch = out
                .unprocessed_items
                .and_then(|mut m| m.remove(&self.table))
                .unwrap_or_default();
            if batch.is_empty() {
                return Ok(());
            }
        }
        Err(Error::Dynamo {
            op: "BatchWriteItem",
            message: format!(
                "{} items still unprocessed after {MAX_UNPROCESSED_ROUNDS} retries",
                batch.len()
            ),
        })
    }

    fn delete_request(key: Item) -> Result<WriteRequest> {
        let delete = DeleteRequest::builder()
            .set_key(Some(key))
            .build()
            .map_err(|e| Error::Corrupt(format!("delete request: {e}")))?;
        Ok(WriteRequest::builder().delete_request(delete).build())
    }

    fn key_of(item: &Item) -> Item {
        item.iter()
            .filter(|(k, _)| k.as_str() == "pk" || k.as_str() == "sk")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

fn chunk_item(chunk: &Chunk) -> Item {
    let mut item = Item::from([
        ("pk".to_owned(), DynamoKbStore::doc_pk(&chunk.document_id)),
        ("sk".to_owned(), s(DynamoKbStore::chunk_sk(chunk.position))),
        ("document_id".to_owned(), s(&chunk.document_id)),
        ("position".to_owned(), n(chunk.position)),
        ("content".to_owned(), s(&chunk.content)),
        ("content_hash".to_owned(), s(&chunk.content_hash)),
    ]);
    if let Some(embedding) = &chunk.embedding {
        item.insert(
            "embedding".to_owned(),
            AttributeValue::B(encode_embedding(embedding)),
        );
    }
    item
}

fn manifest_item(manifest: &DocumentManifest) -> Item {
    let mut item = DynamoKbStore::manifest_key(&manifest.document_id);
    item.extend([
        ("document_id".to_owned(), s(&manifest.document_id)),
        ("content_hash".to_owned(), s(&manifest.content_hash)),
        ("chunk_count".to_owned(), n(manifest.chunk_count)),
        ("source_path".to_owned(), s(&manifest.source_path)),
        ("chunking".to_owned(), s(&manifest.chunking)),
        ("updated_at".to_owned(), s(&manifest.updated_at)),
    ]);
    if let Some(model) = &manifest.embedding_model {
        item.insert("embedding_model".to_owned(), s(model));
    }
    if let Some(dimensions) = manifest.dimensions {
        item.insert("dimensions".to_owned(), n(dimensions));
    }
    item
}

/// Little-endian f32 bytes: exact round trip, a quarter of the size of a JSON list.
fn encode_embedding(embedding: &[f32]) -> Blob {
    Blob::new(
        embedding
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
}

fn decode_embedding(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::Corrupt(format!(
            "embedding of {} bytes is not a list of f32",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn opt_string(item: &Item, name: &str) -> Result<Option<String>> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(_) => Err(Error::Corrupt(format!("{name} is not a string"))),
    }
}

fn string(item: &Item, name: &str) -> Result<String> {
    opt_string(item, name)?.ok_or_else(|| Error::Corrupt(format!("{name} is missing")))
}

fn opt_number<T: FromStr>(item: &Item, name: &str) -> Result<Option<T>> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse()
            .map(Some)
            .map_err(|_| Error::Corrupt(format!("{name}={v:?} is not the expected number"))),
        Some(_) => Err(Error::Corrupt(format!("{name} is not a number"))),
    }
}

fn number<T: FromStr>(item: &Item, name: &str) -> Result<T> {
    opt_number(item, name)?.ok_or_else(|| Error::Corrupt(format!("{name} is missing")))
}

fn parse_chunk(item: &Item) -> Result<Chunk> {
    let document_id = string(item, "document_id")?;
    let position = number(item, "position")?;
    let embedding = match item.get("embedding") {
        None | Some(AttributeValue::Null(_)) => None,
        Some(AttributeValue::B(blob)) => Some(decode_embedding(blob.as_ref())?),
        Some(_) => return Err(Error::Corrupt("embedding is not binary".into())),
    };
    Ok(Chunk {
        id: chunk_id(&document_id, position),
        document_id,
        position,
        content: string(item, "content")?,
        content_hash: string(item, "content_hash")?,
        embedding,
    })
}

fn parse_manifest(item: &Item) -> Result<DocumentManifest> {
    Ok(DocumentManifest {
        document_id: string(item, "document_id")?,
        content_hash: string(item, "content_hash")?,
        chunk_count: number(item, "chunk_count")?,
        source_path: opt_string(item, "source_path")?.unwrap_or_default(),
        chunking: opt_string(item, "chunking")?.unwrap_or_default(),
        embedding_model: opt_string(item, "embedding_model")?,
        dimensions: opt_number(item, "dimensions")?,
        updated_at: opt_string(item, "updated_at")?.unwrap_or_default(),
    })
}

fn parse_version(item: &Item) -> Result<KbVersion> {
    Ok(KbVersion {
        version: number(item, "version")?,
        embedding_model: opt_string(item, "embedding_model")?,
        dimensions: opt_number(item, "dimensions")?,
        updated_at: opt_string(item, "updated_at")?.unwrap_or_default(),
        snapshot: opt_string(item, "snapshot_key")?
            .map(|index_key| {
                Ok::<_, Error>(SnapshotRef {
                    index_key,
                    rescore_key: opt_string(item, "rescore_key")?,
                })
            })
            .transpose()?,
    })
}

/// Position encoded in a chunk's sort key (`CHUNK#000012` → 12).
fn sk_position(item: &Item) -> Option<u32> {
    match item.get("sk") {
        Some(AttributeValue::S(sk)) => sk.strip_prefix(CHUNK_PREFIX)?.parse().ok(),
        _ => None,
    }
}

#[async_trait]
impl KbStore for DynamoKbStore {
    async fn version(&self) -> Result<Option<KbVersion>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::version_key()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        out.item.as_ref().map(parse_version).transpose()
    }

    async fn load_all(&self) -> Result<Vec<Chunk>> {
        let items = self
            .scan_all(
                "begins_with(pk, :doc) AND begins_with(sk, :chunk)",
                &[(":doc", DOC_PREFIX), (":chunk", CHUNK_PREFIX)],
            )
            .await?;
        let mut chunks = items.iter().map(parse_chunk).collect::<Result<Vec<_>>>()?;
        chunks.sort_by(|a, b| {
            (a.document_id.as_str(), a.position).cmp(&(b.document_id.as_str(), b.position))
        });
        Ok(chunks)
    }

    async fn documents(&self) -> Result<Vec<DocumentManifest>> {
        let items = self.query_prefix(s(KB_PK), DOC_PREFIX, false).await?;
        let mut manifests = items
            .iter()
            .map(parse_manifest)
            .collect::<Result<Vec<_>>>()?;
        manifests.sort_by(|a, b| a.document_id.cmp(&b.document_id));
        Ok(manifests)
    }

    async fn document_chunks(&self, document_id: &str) -> Result<Vec<Chunk>> {
        let items = self
            .query_prefix(Self::doc_pk(document_id), CHUNK_PREFIX, false)
            .await?;
        let mut chunks = items.iter().map(parse_chunk).collect::<Result<Vec<_>>>()?;
        chunks.sort_by_key(|c| c.position);
        Ok(chunks)
    }

    async fn replace_document(&self, manifest: &DocumentManifest, chunks: &[Chunk]) -> Result<()> {
        let id = &manifest.document_id;
        if let Some(stray) = chunks.iter().find(|c| &c.document_id != id) {
            return Err(Error::Invalid(format!(
                "chunk {} does not belong to document {id}",
                stray.id
            )));
        }
        let count = u32::try_from(chunks.len())
            .map_err(|_| Error::Invalid(format!("document {id} has too many chunks")))?;
        let puts = chunks
            .iter()
            .map(|chunk| {
                PutRequest::builder()
                    .set_item(Some(chunk_item(chunk)))
                    .build()
                    .map(|put| WriteRequest::builder().put_request(put).build())
                    .map_err(|e| Error::Corrupt(format!("put request: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        self.batch_write(puts).await?;

        // Whatever sits beyond the new end (a shorter version, or leftovers of an
        // interrupted write) goes, found by a key-only query rather than the old manifest.
        let stale = self
            .query_prefix(Self::doc_pk(id), CHUNK_PREFIX, true)
            .await?
            .into_iter()
            .filter(|item| sk_position(item).is_none_or(|p| p >= count))
            .map(|item| Self::delete_request(Self::key_of(&item)))
            .collect::<Result<Vec<_>>>()?;
        self.batch_write(stale).await?;

        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(manifest_item(manifest)))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    async fn remove_document(&self, document_id: &str) -> Result<()> {
        let chunks = self
            .query_prefix(Self::doc_pk(document_id), CHUNK_PREFIX, true)
            .await?
            .iter()
            .map(|item| Self::delete_request(Self::key_of(item)))
            .collect::<Result<Vec<_>>>()?;
        self.batch_write(chunks).await?;
        // The manifest goes last, so an interrupted removal is retried by the next prune.
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(Self::manifest_key(document_id)))
            .send()
            .await
            .map_err(|e| sdk_error("DeleteItem", e))?;
        Ok(())
    }

    async fn set_snapshot(&self, version: u64, snapshot: &SnapshotRef) -> Result<bool> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::version_key()))
            .condition_expression("version = :version")
            .expression_attribute_values(":version", n(version))
            .expression_attribute_values(":key", s(&snapshot.index_key));
        let expression = match &snapshot.rescore_key {
            Some(key) => {
                update = update.expression_attribute_values(":rescore", s(key));
                "SET snapshot_key = :key, rescore_key = :rescore"
            }
            None => "SET snapshot_key = :key REMOVE rescore_key",
        };
        match update.update_expression(expression).send().await {
            Ok(_) => Ok(true),
            Err(e) if e.condition_failed_item().is_some() => Ok(false),
            Err(e) => Err(sdk_error("UpdateItem", e)),
        }
    }

    async fn bump_version(
        &self,
        embedding_model: Option<&str>,
        dimensions: Option<u32>,
    ) -> Result<KbVersion> {
        let mut set = vec!["updated_at = :now"];
        // The new version's snapshot is not written yet; the old one's no longer fits.
        let mut remove = vec!["snapshot_key", "rescore_key"];
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::version_key()))
            .expression_attribute_values(":now", rfc3339(self.clock.now()))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew);
        match embedding_model {
            Some(model) => {
                set.push("embedding_model = :model");
                update = update.expression_attribute_values(":model", s(model));
            }
            None => remove.push("embedding_model"),
        }
        match dimensions {
            Some(d) => {
                set.push("dimensions = :dims");
                update = update.expression_attribute_values(":dims", n(d));
            }
            None => remove.push("dimensions"),
        }
        let expression = format!(
            "SET {} ADD version :one REMOVE {}",
            set.join(", "),
            remove.join(", ")
        );
        let out = update
            .update_expression(expression)
            .send()
            .await
            .map_err(|e| sdk_error("UpdateItem", e))?;
        let item = out
            .attributes
            .ok_or_else(|| Error::Corrupt("UpdateItem returned no version".into()))?;
        parse_version(&item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_round_trip_bit_exact() {
        let v = vec![0.1f32, -3.5e-8, f32::MIN_POSITIVE, 1.0e30, -0.0];
        let back = decode_embedding(encode_embedding(&v).as_ref()).unwrap_or_default();
        let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&v));
        assert!(decode_embedding(&[1, 2, 3]).is_err());
    }

    #[test]
    fn sort_keys_are_zero_padded() {
        assert_eq!(DynamoKbStore::chunk_sk(7), "CHUNK#000007");
        let item = Item::from([("sk".to_owned(), s("CHUNK#000042"))]);
        assert_eq!(sk_position(&item), Some(42));
    }
}
