//! Checking a fare alert: the award and cash searches of its date range through the same
//! function client and routes `search_flights` uses, and the flights within its limits as
//! matches. tool-worker runs this on a schedule and records what it returns.
//!
//! An award search covers its date ± 3 days, a cash search one day (Amadeus searches one
//! date at a time), so a range is covered in weeks: one award search per week (the whole
//! week) and one cash search on that week's middle day. A 31-day range takes at most 5 of
//! each, run a few at a time.

use std::time::Instant;

use futures::StreamExt as _;
use time::{Date, Duration};

use agent_tools::{FunctionClient, ToolContext};
use shared::domain::alert::{AlertMatch, FareAlert};
use shared::domain::flight::{FlightSearchParams, FlightSearchResult, Locale};
use shared::{Error, Result};

/// Searches of one alert that run at the same time.
const PARALLEL_SEARCHES: usize = 4;
/// Days either side of an award search's date (the flight functions' widest).
const WINDOW: i64 = FlightSearchParams::MAX_FLEXIBILITY_DAYS as i64;

/// Checks fare alerts: the flight searches of an alert's range, through the award and cash
/// search routes `search_flights` uses.
#[derive(Debug, Clone)]
pub struct FareChecker {
    functions: FunctionClient,
    award_url: String,
    cash_url: String,
}

/// One search of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Award,
    Cash,
}

impl FareChecker {
    /// A checker calling the award search at `award_url` and the cash search at `cash_url`
    /// through `functions`.
    pub fn new(functions: FunctionClient, award_url: String, cash_url: String) -> Self {
        Self {
            functions,
            award_url,
            cash_url,
        }
    }

    /// The days searched for `alert` from `today` on: the middle day of each week of what
    /// is left of its range. Empty once the range is over.
    pub fn search_days(alert: &FareAlert, today: Date) -> Vec<Date> {
        let start = alert.date_from.max(today);
        let mut days = Vec::new();
        let mut week_start = start;
        while week_start <= alert.date_to {
            let middle = (week_start + Duration::days(WINDOW)).min(alert.date_to);
            days.push(middle);
            week_start += Duration::days(2 * WINDOW + 1);
        }
        days
    }

    /// Runs `alert`'s searches for its `owner` (named to the flight functions as the user
    /// a call is for) before `deadline`, and returns the flights within its limits.
    /// A search that fails is logged and skipped; `Err` only when every search failed.
    pub async fn check(
        &self,
        owner: &str,
        alert: &FareAlert,
        today: Date,
        deadline: Instant,
    ) -> Result<Vec<AlertMatch>> {
        let days = Self::search_days(alert, today);
        let ctx = ToolContext {
            user_id: owner.to_owned(),
            chat_id: String::new(),
            session_state: Default::default(),
            memory: Default::default(),
            today,
            // Prices are read back from the English text the functions write.
            locale: Locale::En,
            deadline,
            progress: Default::default(),
            // A scheduled check belongs to no chat turn's trace.
            trace_header: None,
        };
        let searches: Vec<(Kind, Date)> = days
            .iter()
            .flat_map(|day| {
                let award = alert.max_miles.map(|_| (Kind::Award, *day));
                let cash = alert.max_price.as_ref().map(|_| (Kind::Cash, *day));
                award.into_iter().chain(cash)
            })
            .collect();
        let total = searches.len();
        let results: Vec<Result<FlightSearchResult>> = futures::stream::iter(searches)
            .map(|(kind, day)| self.search(alert, kind, day, &ctx))
            .buffer_unordered(PARALLEL_SEARCHES)
            .collect()
            .await;
        let found_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let mut failed = 0;
        let mut matches = Vec::new();
        for result in results {
            match result {
                Ok(found) => matches.extend(
                    found
                        .results
                        .flights
                        .iter()
                        .filter_map(|flight| alert.match_for(flight, &found_at)),
                ),
                Err(e) => {
                    failed += 1;
                    tracing::warn!(alert_id = %alert.id, error = %e, "an alert's flight search failed");
                }
            }
        }
        if total > 0 && failed == total {
            return Err(Error::Upstream {
                service: "flight search",
                message: format!("all {total} searches of the alert failed"),
            });
        }
        Ok(matches)
    }

    async fn search(
        &self,
        alert: &FareAlert,
        kind: Kind,
        day: Date,
        ctx: &ToolContext,
    ) -> Result<FlightSearchResult> {
        let params = FlightSearchParams {
            origin: alert.origin.clone(),
            destination: alert.destination.clone(),
            departure_date: day,
            return_date: None,
            travel_class: alert.cabin,
            adults: 1,
            children: 0,
            infants: 0,
            non_stop: false,
            flexibility: match kind {
                Kind::Award => FlightSearchParams::MAX_FLEXIBILITY_DAYS,
                Kind::Cash => 0,
            },
            use_miles: kind == Kind::Award,
            include_return_awards: false,
            max_results: FlightSearchParams::MAX_RESULTS,
            locale: Some(Locale::En),
            sources: Vec::new(),
        };
        let (service, url) = match kind {
            Kind::Award => ("seatsaero-search", &self.award_url),
            Kind::Cash => ("cash-search", &self.cash_url),
        };
        self.functions.post_json(service, url, &params, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::macros::date;

    fn alert(from: &str, to: &str) -> FareAlert {
        let args = serde_json::from_value(json!({
            "origin": "FRA", "destination": "JFK", "date_from": from, "date_to": to,
            "cabin": "BUSINESS", "max_miles": 80000
        }))
        .unwrap();
        FareAlert::new("a".into(), &args, "t".into())
    }

    #[test]
    fn a_range_is_searched_by_the_week() {
        let today = date!(2027 - 02 - 01);
        let month = alert("2027-03-01", "2027-03-31");
        assert_eq!(
            FareChecker::search_days(&month, today),
            [
                date!(2027 - 03 - 04),
                date!(2027 - 03 - 11),
                date!(2027 - 03 - 18),
                date!(2027 - 03 - 25),
                date!(2027 - 03 - 31)
            ]
        );
        let one_day = alert("2027-03-01", "2027-03-01");
        assert_eq!(
            FareChecker::search_days(&one_day, today),
            [date!(2027 - 03 - 01)]
        );
        // Days already past are not searched; a range that is over not at all.
        assert_eq!(
            FareChecker::search_days(&month, date!(2027 - 03 - 27)),
            [date!(2027 - 03 - 30)]
        );
        assert!(FareChecker::search_days(&month, date!(2027 - 04 - 01)).is_empty());
    }
}
