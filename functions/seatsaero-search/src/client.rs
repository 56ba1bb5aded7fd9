//! The two Seats.aero partner API calls, with retries inside the deadline
//! (`lambda_kit::upstream`). The key goes in the `Partner-Authorization` header and nowhere else.

use std::time::Instant;

use domain::Result;
use domain::flight::{Cabin, IataCode};
use lambda_kit::secrets::SecretString;
use lambda_kit::upstream::{self, RetryPolicy};
use reqwest::Url;
use reqwest::header::ACCEPT;
use time::Date;

/// The name clients see in error messages ("Seats.aero is unavailable; ...").
pub(crate) const SERVICE: &str = "Seats.aero";
const AUTH_HEADER: &str = "Partner-Authorization";

/// One `GET /search`.
#[derive(Debug, Clone)]
pub(crate) struct SearchQuery<'a> {
    pub origin: &'a IataCode,
    pub destination: &'a IataCode,
    /// The cabin to filter by; `None` asks for every cabin.
    pub cabin: Option<Cabin>,
    pub start: Date,
    pub end: Date,
    pub take: u32,
    pub direct_only: bool,
    /// Programmes to search (Seats.aero source ids); empty: all.
    pub sources: &'a [String],
}

#[derive(Debug, Clone)]
pub(crate) struct SeatsAero {
    http: reqwest::Client,
    base: Url,
    retry: RetryPolicy,
}

impl SeatsAero {
    /// `base` must be able to take path segments (checked by `Config`).
    pub fn new(http: reqwest::Client, base: Url, retry: RetryPolicy) -> Self {
        Self { http, base, retry }
    }

    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            // Segments are percent-encoded: an id can never change the path.
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// The body of the reply (`payload::SearchReply::parse` reads it, borrowing from it).
    pub async fn search(
        &self,
        key: &SecretString,
        query: &SearchQuery<'_>,
        deadline: Instant,
    ) -> Result<Vec<u8>> {
        let url = self.url(&["search"]);
        let mut params = vec![
            ("origin_airport", query.origin.to_string()),
            ("destination_airport", query.destination.to_string()),
            ("start_date", query.start.to_string()),
            ("end_date", query.end.to_string()),
            ("take", query.take.to_string()),
            ("include_trips", "false".to_owned()),
            ("only_direct_flights", query.direct_only.to_string()),
        ];
        if let Some(cabin) = query.cabin {
            params.push(("cabin", cabin.seatsaero_api_value().to_owned()));
        }
        if !query.sources.is_empty() {
            params.push(("sources", query.sources.join(",")));
        }
        let response = upstream::send(SERVICE, deadline, &self.retry, || {
            self.http
                .get(url.clone())
                .query(&params)
                .header(AUTH_HEADER, key.expose().trim())
                .header(ACCEPT, "application/json")
        })
        .await?;
        upstream::read_success(SERVICE, response).await
    }

    /// The body of the reply (`payload::TripsReply::parse` reads it, borrowing from it).
    pub async fn trips(
        &self,
        key: &SecretString,
        availability_id: &str,
        deadline: Instant,
    ) -> Result<Vec<u8>> {
        let url = self.url(&["trips", availability_id]);
        let response = upstream::send(SERVICE, deadline, &self.retry, || {
            self.http
                .get(url.clone())
                .header(AUTH_HEADER, key.expose().trim())
                .header(ACCEPT, "application/json")
        })
        .await?;
        upstream::read_success(SERVICE, response).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_the_base_path_and_encode_ids() {
        let base = Url::parse("https://seats.aero/partnerapi").unwrap_or_else(|e| panic!("{e}"));
        let client = SeatsAero::new(reqwest::Client::new(), base, RetryPolicy::default());
        assert_eq!(
            client.url(&["search"]).as_str(),
            "https://seats.aero/partnerapi/search"
        );
        assert_eq!(
            client.url(&["trips", "../x?y"]).as_str(),
            "https://seats.aero/partnerapi/trips/..%2Fx%3Fy"
        );
        let slash = Url::parse("http://127.0.0.1:9/").unwrap_or_else(|e| panic!("{e}"));
        let client = SeatsAero::new(reqwest::Client::new(), slash, RetryPolicy::default());
        assert_eq!(
            client.url(&["search"]).as_str(),
            "http://127.0.0.1:9/search"
        );
    }
}
