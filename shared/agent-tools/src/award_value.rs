//! `award_value`: what an award redemption is worth in cents per mile, and whether that
//! beats a target. Arithmetic on the model's arguments only: no network and no state, so it
//! fails on bad input and nothing else.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolSchema};
use crate::catalog::{Label, McpExposure, ToolInfo};
use crate::{Error, Result};
use shared::domain::flight::Locale;
use shared::domain::tool_args::AwardValueArgs;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;

pub struct AwardValueTool {
    schema: ToolSchema,
}

impl AwardValueTool {
    pub fn new() -> Result<Self> {
        Ok(Self {
            schema: ToolSchema::of::<AwardValueArgs>(ToolName::AWARD_VALUE)?,
        })
    }
}

impl AwardValueTool {
    pub const INFO: ToolInfo = ToolInfo {
        name: ToolName::AWARD_VALUE,
        label: Label {
            en: "the miles value calculator",
            de: "die Meilenwert-Berechnung",
        },
        mcp: McpExposure::Served,
    };
}

#[async_trait]
impl Tool for AwardValueTool {
    fn name(&self) -> ToolName {
        Self::INFO.name
    }

    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn prepare(&self, args: Value, _: &ToolContext) -> Result<Value> {
        let args: AwardValueArgs = self.schema.parse(&args)?;
        args.validate()?;
        Ok(args.canonical())
    }

    async fn execute(&self, ctx: &ToolContext, request: &Value) -> Result<ToolExecutionResult> {
        let args: AwardValueArgs = serde_json::from_value(request.clone())
            .map_err(|e| Error::Invalid(format!("stored award_value request: {e}")))?;
        args.validate()?;
        let value = Valuation::of(&args);
        let message = value.message(&args, ctx.locale);
        Ok(ToolExecutionResult::succeeded(message).with_raw(value.raw(&args)))
    }
}

/// The result of one valuation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Valuation {
    /// (cash_price − taxes) / miles × 100, rounded to 2 decimals.
    pub cents_per_mile: f64,
    /// At or above the target.
    pub good: bool,
}

impl Valuation {
    /// Values a validated request.
    pub fn of(args: &AwardValueArgs) -> Self {
        let saved = args.cash_price - args.taxes();
        let cents_per_mile = round2(saved / f64::from(args.miles) * 100.0);
        Self {
            cents_per_mile,
            good: cents_per_mile >= args.target_cents_per_mile(),
        }
    }

    /// One sentence for the model, in the user's language.
    fn message(&self, args: &AwardValueArgs, locale: Locale) -> String {
        let cpm = number(locale, self.cents_per_mile, 2);
        let target = number(locale, args.target_cents_per_mile(), 2);
        let miles = number(locale, f64::from(args.miles), 0);
        let cash = number(locale, args.cash_price, 2);
        let taxes = number(locale, args.taxes(), 2);
        let currency = &args.currency;
        match locale {
            Locale::En => {
                let verdict = if self.good { "a good" } else { "not a good" };
                format!(
                    "{miles} miles plus {taxes} {currency} taxes instead of {cash} {currency} \
                     cash give {cpm} cents per mile: {verdict} redemption (target {target})."
                )
            }
            Locale::De => {
                let verdict = if self.good { "eine gute" } else { "keine gute" };
                format!(
                    "{miles} Meilen plus {taxes} {currency} Steuern statt {cash} {currency} bar \
                     ergeben {cpm} Cent pro Meile: {verdict} Einlösung (Ziel {target})."
                )
            }
        }
    }

    /// The numbers, for the ledger and the client.
    fn raw(&self, args: &AwardValueArgs) -> Value {
        json!({
            "cents_per_mile": self.cents_per_mile,
            "good": self.good,
            "target_cents_per_mile": args.target_cents_per_mile(),
            "cash_price": args.cash_price,
            "taxes": args.taxes(),
            "currency": args.currency,
            "miles": args.miles,
        })
    }
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// A non-negative `value` with `decimals` places: `2,000.00` in English, `2.000,00` in German.
fn number(locale: Locale, value: f64, decimals: usize) -> String {
    let (group, point) = match locale {
        Locale::En => (',', '.'),
        Locale::De => ('.', ','),
    };
    let text = format!("{value:.decimals$}");
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut out = String::with_capacity(text.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(group);
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push(point);
        out.push_str(frac);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use shared::domain::session::SessionState;

    fn tool() -> AwardValueTool {
        AwardValueTool::new().unwrap()
    }

    fn ctx(locale: Locale) -> ToolContext {
        ToolContext {
            user_id: "u1".into(),
            chat_id: "c1".into(),
            session_state: SessionState::default(),
            memory: Default::default(),
            today: time::macros::date!(2027 - 03 - 01),
            locale,
            deadline: Instant::now() + Duration::from_secs(2),
            progress: Default::default(),
            trace_header: None,
        }
    }

    /// The worked example: 2,000.00 EUR cash, 60,000 miles, 150.00 EUR taxes.
    fn example() -> Value {
        json!({"cash_price": 2000, "currency": "eur", "miles": 60000, "taxes": 150})
    }

    #[test]
    fn prepare_applies_defaults_and_upper_cases_the_currency() {
        let request = tool()
            .prepare(
                json!({"cash_price": 2000, "currency": "eur", "miles": 60000}),
                &ctx(Locale::En),
            )
            .unwrap();
        assert_eq!(
            request,
            json!({
                "cash_price": 2000.0,
                "currency": "EUR",
                "miles": 60000,
                "taxes": 0.0,
                "target_cents_per_mile": 1.2,
            })
        );
    }

    #[tokio::test]
    async fn worked_example_is_a_good_redemption() {
        let tool = tool();
        let request = tool.prepare(example(), &ctx(Locale::En)).unwrap();
        let result = tool.execute(&ctx(Locale::En), &request).await.unwrap();
        assert!(result.is_success());
        let raw = result.raw.unwrap();
        assert_eq!(raw["cents_per_mile"], json!(3.08));
        assert_eq!(raw["good"], json!(true));
        assert_eq!(
            result.message,
            "60,000 miles plus 150.00 EUR taxes instead of 2,000.00 EUR cash give 3.08 cents \
             per mile: a good redemption (target 1.20)."
        );
    }

    #[test]
    fn below_the_target_is_not_good() {
        let args: AwardValueArgs = serde_json::from_value(json!({
            "cash_price": 300, "currency": "USD", "miles": 50000, "taxes": 100,
            "target_cents_per_mile": 1.5
        }))
        .unwrap();
        assert_eq!(
            Valuation::of(&args),
            Valuation {
                cents_per_mile: 0.4,
                good: false
            }
        );
    }

    #[test]
    fn invalid_input_names_the_field() {
        let tool = tool();
        for (field, bad) in [
            ("cash_price", json!(0)),
            ("currency", json!("EURO")),
            ("miles", json!(0)),
            ("taxes", json!(-1)),
            ("taxes", json!(2000)), // not below cash_price: a domain check, not the schema's
            ("target_cents_per_mile", json!(0)),
            ("miles", Value::Null), // missing
        ] {
            let mut args = example();
            args[field] = bad;
            if args[field].is_null() {
                args.as_object_mut().unwrap().remove(field);
            }
            let err = tool.prepare(args, &ctx(Locale::En)).unwrap_err();
            assert!(
                matches!(&err, Error::Invalid(message) if message.contains(field)),
                "{field}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn the_message_is_german_for_a_german_user() {
        let tool = tool();
        let request = tool.prepare(example(), &ctx(Locale::En)).unwrap();
        let result = tool.execute(&ctx(Locale::De), &request).await.unwrap();
        assert_eq!(
            result.message,
            "60.000 Meilen plus 150,00 EUR Steuern statt 2.000,00 EUR bar ergeben 3,08 Cent pro \
             Meile: eine gute Einlösung (Ziel 1,20)."
        );
    }
}
