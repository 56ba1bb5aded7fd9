//! `award_value`: what an award redemption is worth in cents per mile, and whether that
//! beats a target. Arithmetic on the model's arguments only: no network and no state, so it
//! fails on bad input and nothing else.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::typed::Tool;
use shared::Error;
use shared::Result;
use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;

/// The tool: no clients, no settings.
pub struct AwardValueTool;

/// Value an award redemption: cents of cash price saved per mile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    description = "Work out what an award redemption is worth in cents per mile, from the cash price of the same ticket, the miles it needs and the taxes and fees paid on the award, and whether that beats a target."
)]
pub struct AwardValueArgs {
    /// Cash price of the same ticket, in `currency`. Above 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub cash_price: f64,
    /// Currency of `cash_price` and `taxes`: a 3-letter ISO 4217 code, e.g. EUR or USD.
    #[schemars(pattern(r"^[A-Za-z]{3}$"))]
    pub currency: String,
    /// Miles (points) the award costs, at least 1.
    #[schemars(range(min = 1))]
    pub miles: u32,
    /// Taxes and fees paid on the award, in `currency`; less than `cash_price`. Defaults to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0), extend("default" = 0))]
    pub taxes: Option<f64>,
    /// Cents per mile from which a redemption counts as good. Defaults to 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0, "default" = 1.2))]
    pub target_cents_per_mile: Option<f64>,
}

impl AwardValueArgs {
    /// The target when the model gives none, in cents per mile.
    pub const DEFAULT_TARGET_CENTS_PER_MILE: f64 = 1.2;

    /// Taxes and fees, default 0.
    pub fn taxes(&self) -> f64 {
        self.taxes.unwrap_or(0.0)
    }

    /// The threshold of a good redemption, default 1.2 cents per mile.
    pub fn target_cents_per_mile(&self) -> f64 {
        self.target_cents_per_mile
            .unwrap_or(Self::DEFAULT_TARGET_CENTS_PER_MILE)
    }

    /// The domain checks: the schema's bounds (so a request built in code is held to them
    /// too) and what the schema cannot say, taxes below the cash price. Errors name the field.
    pub fn validate(&self) -> Result<(), Error> {
        if !(self.cash_price.is_finite() && self.cash_price > 0.0) {
            return Err(Error::Invalid("cash_price must be above 0".into()));
        }
        if !(self.currency.len() == 3 && self.currency.bytes().all(|b| b.is_ascii_alphabetic())) {
            return Err(Error::Invalid(format!(
                "currency must be a 3-letter code such as EUR, got {:?}",
                self.currency
            )));
        }
        if self.miles == 0 {
            return Err(Error::Invalid("miles must be at least 1".into()));
        }
        let taxes = self.taxes();
        if !(taxes >= 0.0 && taxes < self.cash_price) {
            return Err(Error::Invalid(format!(
                "taxes must be at least 0 and less than cash_price ({}), got {taxes}",
                self.cash_price
            )));
        }
        let target = self.target_cents_per_mile();
        if !(target.is_finite() && target > 0.0) {
            return Err(Error::Invalid(
                "target_cents_per_mile must be above 0".into(),
            ));
        }
        Ok(())
    }

    /// Every field set (defaults applied) and the currency upper-cased, for dedupe and
    /// execution alike.
    pub fn canonical(self) -> Self {
        Self {
            currency: self.currency.to_ascii_uppercase(),
            taxes: Some(self.taxes()),
            target_cents_per_mile: Some(self.target_cents_per_mile()),
            ..self
        }
    }
}

#[async_trait]
impl Tool for AwardValueTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("award_value"),
        label: Label {
            en: "the miles value calculator",
            de: "die Meilenwert-Berechnung",
        },
        title: Label {
            en: "Award value",
            de: "Meilenwert",
        },
        mcp: McpExposure::Served,
    };
    type Args = AwardValueArgs;
    type Request = AwardValueArgs;
    type Output = ();

    fn build(_: &ToolDeps) -> Result<Self> {
        Ok(Self)
    }

    fn prepare(&self, args: AwardValueArgs, _: &ToolContext) -> Result<AwardValueArgs> {
        args.validate()?;
        Ok(args.canonical())
    }

    async fn run(&self, ctx: &ToolContext, args: AwardValueArgs) -> Result<ToolExecutionResult> {
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
    use crate::dyn_tool::DynTool;
    use crate::typed::TypedTool;
    use shared::domain::session::SessionState;

    fn tool() -> TypedTool<AwardValueTool> {
        TypedTool::new(AwardValueTool).unwrap()
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
