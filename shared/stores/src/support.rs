//! Where requests for a person (`contact_support`) wait for the operator: items in the chats
//! table, one partition sorted by when they were made, so the operator lists the newest
//! with one `Query`; they carry no TTL (the operator deletes a request once answered).
//!
//! | item | pk | sk |
//! | --- | --- | --- |
//! | a request | `SUPPORT_REQUESTS` | `<created, sortable UTC>#<id>` |
//!
//! The user's summary is their own words: the operator reads it as such, nothing acts on it.

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};

use crate::Result;
use domain::support::SupportRequest;
use lambda_kit::dynamo::{from_item, s, sdk_error, to_item};

/// Partition key of the requests.
const PK: &str = "SUPPORT_REQUESTS";

/// Requests for a person, as the operator sees them.
#[async_trait]
pub trait SupportRequests: Send + Sync {
    /// Keeps `request` for the operator.
    async fn record(&self, request: &SupportRequest) -> Result<()>;

    /// The newest `limit` requests, newest first.
    async fn newest(&self, limit: i32) -> Result<Vec<SupportRequest>>;
}

#[derive(Serialize, Deserialize)]
struct RequestItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    request: SupportRequest,
}

/// [`SupportRequests`] on the chats table.
#[derive(Clone)]
pub struct DynamoSupportRequests {
    client: Client,
    table: String,
}

impl DynamoSupportRequests {
    /// `table` is the chats table.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

#[async_trait]
impl SupportRequests for DynamoSupportRequests {
    async fn record(&self, request: &SupportRequest) -> Result<()> {
        let item = RequestItem {
            pk: PK.to_owned(),
            sk: format!("{}#{}", request.created_at, request.id),
            request: request.clone(),
        };
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(&item)?))
            // A request id is new; never overwrite one.
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    async fn newest(&self, limit: i32) -> Result<Vec<SupportRequest>> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(PK))
            .scan_index_forward(false)
            .limit(limit)
            .send()
            .await
            .map_err(|e| sdk_error("Query", e))?;
        out.items()
            .iter()
            .map(|item| from_item::<RequestItem>(item.clone()).map(|i| i.request))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::PK;

    /// The template's pipe forwards exactly these records: the same partition key, new
    /// items only, from the chats table's stream to the support topic.
    #[test]
    fn the_templates_pipe_forwards_new_support_requests_to_the_topic() {
        let template = include_str!("../../../template.yaml");
        let pipe = template
            .split("\n  SupportPipe:\n")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap_or_default();
        let filter = format!(
            r#"'{{"eventName":["INSERT"],"dynamodb":{{"Keys":{{"pk":{{"S":["{PK}"]}}}}}}}}'"#
        );
        for part in [
            "Source: !GetAtt ChatsTable.StreamArn",
            filter.as_str(),
            "Target: !Ref SupportTopic",
            "<$.dynamodb.NewImage.id.S>",
            "<$.dynamodb.NewImage.summary.S>",
        ] {
            assert!(pipe.contains(part), "{part} not in SupportPipe:\n{pipe}");
        }
    }
}
