//! The bucket of knowledge-base index snapshots (kb-retrieve's `snapshot.rs` has the
//! format). `kb-ingest` writes a version's objects under a key of their own, then points
//! the version marker at them ([`super::KbStore::set_snapshot`]), so a reader sees either
//! the old snapshot or the whole new one. Objects of no current snapshot are tagged
//! [`SUPERSEDED_TAG`] by the next publish and deleted by a publish after the grace period
//! (a warm function may still be reading them), counted from that tag; the bucket's
//! lifecycle rule expires tagged objects too, so they go even if no ingest runs again.

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use time::OffsetDateTime;

use super::SnapshotRef;
use domain::{Error, Result};

/// Tag (key, value) of an object that belongs to no current snapshot; the template's
/// lifecycle rule filters on it.
pub const SUPERSEDED_TAG: (&str, &str) = ("kb-snapshot", "superseded");
/// Tag holding when the object was found superseded (Unix seconds): the grace counts
/// from then, not from when it was written.
pub const SUPERSEDED_AT_TAG: &str = "kb-superseded-at";

/// The snapshot bucket and the prefix under which the objects sit.
#[derive(Clone)]
pub struct S3Snapshots {
    client: Client,
    bucket: String,
    prefix: String,
}

/// What [`S3Snapshots::get`] read.
pub enum Fetched {
    /// The object, whole.
    Bytes(Vec<u8>),
    /// The object is larger than the caller's limit; its body was not read.
    TooLarge(u64),
}

fn s3_error(op: &str, e: impl std::error::Error) -> Error {
    Error::Upstream {
        service: "s3",
        message: format!("{op}: {}", aws_sdk_s3::error::DisplayErrorContext(e)),
    }
}

impl S3Snapshots {
    /// Snapshots in `bucket` under `prefix`.
    pub fn new(client: Client, bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            prefix: prefix.into(),
        }
    }

    /// A client for the SDK configuration; path-style addressing when an endpoint is set
    /// (`AWS_ENDPOINT_URL_S3`: the local emulator serves buckets by path, not by host).
    pub fn client(config: &aws_config::SdkConfig) -> Client {
        let local = std::env::var_os("AWS_ENDPOINT_URL_S3").is_some()
            || std::env::var_os("AWS_ENDPOINT_URL").is_some();
        let s3 = aws_sdk_s3::config::Builder::from(config).force_path_style(local);
        Client::from_conf(s3.build())
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The keys of `version`'s objects: a folder per version and write (`written_at`), so a
    /// second publish of one version never overwrites what a reader may be fetching.
    pub fn keys(&self, version: u64, written_at: OffsetDateTime, rescore: bool) -> SnapshotRef {
        let folder = format!(
            "{}v{version:012}-{}",
            self.prefix,
            written_at.unix_timestamp_nanos() / 1_000_000
        );
        SnapshotRef {
            index_key: format!("{folder}/index.kbs"),
            rescore_key: rescore.then(|| format!("{folder}/rescore.kbs")),
        }
    }

    /// Writes `bytes` under `key` (below the prefix).
    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/octet-stream")
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| s3_error("PutObject", e))?;
        Ok(())
    }

    /// The object at `key` in one streamed GET, into one buffer of its announced size; not
    /// read when it is larger than `max_bytes`.
    pub async fn get(&self, key: &str, max_bytes: Option<u64>) -> Result<Fetched> {
        let out = self.get_object(key).await?;
        let announced = out.content_length().and_then(|n| u64::try_from(n).ok());
        if let (Some(size), Some(max)) = (announced, max_bytes)
            && size > max
        {
            return Ok(Fetched::TooLarge(size));
        }
        let capacity = announced
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(capacity);
        let mut body = out.body;
        while let Some(part) = body
            .try_next()
            .await
            .map_err(|e| s3_error("GetObject body", e))?
        {
            bytes.extend_from_slice(&part);
        }
        Ok(Fetched::Bytes(bytes))
    }

    /// Opens the object at `key` for reading as it arrives: its size and a reader, which
    /// must be read on a blocking thread (`spawn_blocking`) of the runtime that opened it.
    pub async fn open(&self, key: &str) -> Result<(Option<u64>, ObjectReader)> {
        let out = self.get_object(key).await?;
        let size = out.content_length().and_then(|n| u64::try_from(n).ok());
        let reader = ObjectReader {
            runtime: tokio::runtime::Handle::current(),
            body: out.body,
            part: bytes::Bytes::new(),
        };
        Ok((size, reader))
    }

    async fn get_object(
        &self,
        key: &str,
    ) -> Result<aws_sdk_s3::operation::get_object::GetObjectOutput> {
        self.client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| s3_error("GetObject", e))
    }

    /// Cleans up after a publish: an object under the prefix that belongs to no snapshot in
    /// `keep` is tagged superseded (at `now`) the first time it is seen, and deleted once it
    /// has been superseded for more than `grace` (with a zero grace: at once). An object of
    /// `keep` loses such a tag (a concurrent publish may have tagged it before it was named
    /// in the marker). Returns how many went.
    pub async fn remove_stale(
        &self,
        keep: &[&SnapshotRef],
        grace: Duration,
        now: OffsetDateTime,
    ) -> Result<usize> {
        let kept = |key: &str| {
            keep.iter()
                .any(|k| key == k.index_key || k.rescore_key.as_deref() == Some(key))
        };
        let now_secs = now.unix_timestamp();
        let cutoff = now_secs.saturating_sub(i64::try_from(grace.as_secs()).unwrap_or(i64::MAX));
        let (mut others, mut current) = (Vec::new(), Vec::new());
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(&self.prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| s3_error("ListObjectsV2", e))?;
            for key in page.contents().iter().filter_map(|object| object.key()) {
                if kept(key) {
                    current.push(key.to_owned());
                } else {
                    others.push(key.to_owned());
                }
            }
        }
        for key in &current {
            if self.superseded_at(key).await?.is_some() {
                self.client
                    .delete_object_tagging()
                    .bucket(&self.bucket)
                    .key(key)
                    .send()
                    .await
                    .map_err(|e| s3_error("DeleteObjectTagging", e))?;
            }
        }
        let mut removed = 0;
        for key in &others {
            match self.superseded_at(key).await? {
                Some(at) if at <= cutoff => {}
                None if now_secs <= cutoff => {}
                Some(_) => continue,
                None => {
                    self.mark_superseded(key, now_secs).await?;
                    continue;
                }
            }
            self.client
                .delete_object()
                .bucket(&self.bucket)
                .key(key)
                .send()
                .await
                .map_err(|e| s3_error("DeleteObject", e))?;
            removed += 1;
        }
        Ok(removed)
    }

    /// When the object at `key` was tagged superseded; `None` if it was not (or the tag is
    /// not a number: it is tagged again).
    pub async fn superseded_at(&self, key: &str) -> Result<Option<i64>> {
        let tags = self
            .client
            .get_object_tagging()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| s3_error("GetObjectTagging", e))?;
        Ok(tags
            .tag_set()
            .iter()
            .find(|tag| tag.key() == SUPERSEDED_AT_TAG)
            .and_then(|tag| tag.value().parse().ok()))
    }

    async fn mark_superseded(&self, key: &str, at: i64) -> Result<()> {
        let tag = |key: &str, value: &str| {
            aws_sdk_s3::types::Tag::builder()
                .key(key)
                .value(value)
                .build()
                .map_err(|e| s3_error("Tag", e))
        };
        let tagging = aws_sdk_s3::types::Tagging::builder()
            .tag_set(tag(SUPERSEDED_TAG.0, SUPERSEDED_TAG.1)?)
            .tag_set(tag(SUPERSEDED_AT_TAG, &at.to_string())?)
            .build()
            .map_err(|e| s3_error("Tagging", e))?;
        self.client
            .put_object_tagging()
            .bucket(&self.bucket)
            .key(key)
            .tagging(tagging)
            .send()
            .await
            .map_err(|e| s3_error("PutObjectTagging", e))?;
        Ok(())
    }
}

/// An object's body as [`std::io::Read`], pulled part by part as the reader asks: a
/// decoder reads it straight into its own structures, without the whole object in memory.
pub struct ObjectReader {
    runtime: tokio::runtime::Handle,
    body: ByteStream,
    part: bytes::Bytes,
}

impl std::io::Read for ObjectReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.part.is_empty() {
            match self.runtime.block_on(self.body.try_next()) {
                Ok(Some(part)) => self.part = part,
                Ok(None) => return Ok(0),
                Err(e) => return Err(std::io::Error::other(e)),
            }
        }
        let n = out.len().min(self.part.len());
        out[..n].copy_from_slice(&self.part.split_to(n));
        Ok(n)
    }
}
