//! Scoring: a case's expectation against what the model's first step did, check by check,
//! each saying what was expected and what came.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::Date;

use crate::case::{ArgMatcher, Case};

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedCall {
    /// The tool's name.
    pub name: String,
    /// The arguments' JSON text, as the model wrote it.
    pub arguments: String,
}

/// What the model's first step did with a case's message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// Its tool calls, in order.
    pub calls: Vec<ObservedCall>,
    /// Its text (the answer when it called no tool).
    pub text: String,
    /// The turn's error code when it failed before the model answered (e.g. `llm_error`).
    pub error: Option<String>,
}

/// Tools a first step may call beside any expectation: quick replies decorate an answer.
const DECORATIONS: [&str; 1] = ["suggest_replies"];

/// One check of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What is checked: `tool`, `never`, `args.<name>`.
    pub what: String,
    /// Whether it held.
    pub ok: bool,
    /// What was expected, in words.
    pub expected: String,
    /// What came.
    pub actual: String,
}

/// A case's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every check held.
    pub passed: bool,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

impl Verdict {
    /// The failed checks, one line each.
    pub fn explain(&self) -> String {
        self.checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: expected {}, got {}", c.what, c.expected, c.actual))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Scores `observed` against `case` on the day `today`.
pub fn score(case: &Case, observed: &Observed, today: Date) -> Verdict {
    let mut checks = Vec::new();
    if let Some(error) = &observed.error {
        checks.push(Check {
            what: "turn".into(),
            ok: false,
            expected: "a model answer".into(),
            actual: format!("the turn failed ({error})"),
        });
        return Verdict {
            passed: false,
            checks,
        };
    }
    let calls: Vec<&ObservedCall> = observed
        .calls
        .iter()
        .filter(|c| !DECORATIONS.contains(&c.name.as_str()))
        .collect();
    let called = || {
        if calls.is_empty() {
            "no tool call".to_owned()
        } else {
            calls
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    if let Some(expected) = &case.expect.tool {
        if expected.is_none() {
            checks.push(Check {
                what: "tool".into(),
                ok: calls.is_empty(),
                expected: "no tool call".into(),
                actual: called(),
            });
        } else {
            let call = calls.iter().find(|c| expected.accepts(&c.name));
            checks.push(Check {
                what: "tool".into(),
                ok: call.is_some(),
                expected: expected.to_string(),
                actual: called(),
            });
            if let Some(call) = call {
                check_args(case, call, today, &mut checks);
            }
        }
    }
    if !case.expect.never.is_empty() {
        let forbidden: Vec<&str> = calls
            .iter()
            .map(|c| c.name.as_str())
            .filter(|n| case.expect.never.iter().any(|f| f == n))
            .collect();
        checks.push(Check {
            what: "never".into(),
            ok: forbidden.is_empty(),
            expected: format!("no call of {}", case.expect.never.join(", ")),
            actual: if forbidden.is_empty() {
                called()
            } else {
                forbidden.join(", ")
            },
        });
    }
    Verdict {
        passed: checks.iter().all(|c| c.ok),
        checks,
    }
}

fn check_args(case: &Case, call: &ObservedCall, today: Date, checks: &mut Vec<Check>) {
    if case.expect.args.is_empty() {
        return;
    }
    let args: Value = match serde_json::from_str(&call.arguments) {
        Ok(args) => args,
        Err(_) => {
            checks.push(Check {
                what: "args".into(),
                ok: false,
                expected: "a JSON object".into(),
                actual: "arguments that are not JSON".into(),
            });
            return;
        }
    };
    for (name, matcher) in &case.expect.args {
        let actual = lookup(&args, name);
        let (ok, expected) = matches(matcher, actual, today);
        checks.push(Check {
            what: format!("args.{name}"),
            ok,
            expected,
            actual: actual.map_or_else(|| "nothing".to_owned(), Value::to_string),
        });
    }
}

/// The value at a dotted path; `None` for absent or null.
fn lookup<'a>(args: &'a Value, path: &str) -> Option<&'a Value> {
    let mut value = args;
    for key in path.split('.') {
        value = value.get(key)?;
    }
    (!value.is_null()).then_some(value)
}

/// Text as compared: lower case, spaces, `-` and `_` as one space, trimmed.
fn folded(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether two values are equal as a case means it.
fn same(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(e), Value::String(a)) => folded(e) == folded(a),
        (Value::Number(e), Value::Number(a)) => e.as_f64() == a.as_f64(),
        // A number the model quoted is still the number.
        (Value::Number(e), Value::String(a)) => a.trim().parse::<f64>().ok() == e.as_f64(),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len()
                && e.iter().all(|x| a.iter().any(|y| same(x, y)))
                && a.iter().all(|y| e.iter().any(|x| same(x, y)))
        }
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len() && e.iter().all(|(k, x)| a.get(k).is_some_and(|y| same(x, y)))
        }
        _ => expected == actual,
    }
}

fn contains(actual: &Value, piece: &str) -> bool {
    let piece = folded(piece);
    match actual {
        Value::String(s) => folded(s).contains(&piece),
        Value::Array(items) => items.iter().any(|i| contains(i, &piece)),
        _ => false,
    }
}

/// Whether `actual` passes `matcher`, and the expectation in words.
fn matches(matcher: &ArgMatcher, actual: Option<&Value>, today: Date) -> (bool, String) {
    match matcher {
        ArgMatcher::Exact(expected) => (
            actual.is_some_and(|a| same(expected, a)),
            expected.to_string(),
        ),
        ArgMatcher::AnyOf { any_of } => (
            actual.is_some_and(|a| any_of.iter().any(|e| same(e, a))),
            format!(
                "one of {}",
                any_of
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        ArgMatcher::Contains { contains: pieces } => (
            actual.is_some_and(|a| pieces.iter().all(|p| contains(a, p))),
            format!("a value containing {}", pieces.join(" and ")),
        ),
        ArgMatcher::OrAbsent { or_absent } => (
            actual.is_none_or(|a| same(or_absent, a)),
            format!("{or_absent} or nothing"),
        ),
        ArgMatcher::Absent { .. } => (actual.is_none(), "nothing".into()),
        ArgMatcher::Date { date } => match crate::dates::resolve(date, today) {
            Ok(dates) => {
                let words: Vec<String> = dates.iter().map(ToString::to_string).collect();
                let ok = actual
                    .and_then(Value::as_str)
                    .is_some_and(|a| words.iter().any(|d| d == a.trim()));
                (ok, format!("{} ({date})", words.join(" or ")))
            }
            Err(e) => (false, e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Category, Expect, Lang};
    use serde_json::json;
    use time::macros::date;

    const TODAY: Date = date!(2027 - 03 - 14);

    fn case(expect: &str) -> Case {
        let expect: Expect = toml::from_str(expect).unwrap();
        Case {
            id: "c".into(),
            category: Category::Arguments,
            lang: Lang::En,
            agent: None,
            message: "m".into(),
            expect,
        }
    }

    fn called(name: &str, args: Value) -> Observed {
        Observed {
            calls: vec![ObservedCall {
                name: name.into(),
                arguments: args.to_string(),
            }],
            ..Observed::default()
        }
    }

    #[test]
    fn arguments_compare_tolerantly_and_failures_say_what_differs() {
        let c = case(
            r#"
            tool = "search_flights"
            [args]
            origin = "FRA"
            destination = { any_of = ["JFK", "EWR", "NYC"] }
            depart_date = { date = "fri|fri+7" }
            cabin = "premium economy"
            pax = { or_absent = 1 }
            loyalty_programs = { contains = ["miles"] }
            "max_price.amount" = 800
            "#,
        );
        let good = called(
            "search_flights",
            json!({"origin": "fra", "destination": "EWR", "depart_date": "2027-03-26",
                   "cabin": "PREMIUM_ECONOMY", "loyalty_programs": ["Miles & More"],
                   "max_price": {"amount": "800", "currency": "EUR"}}),
        );
        let verdict = score(&c, &good, TODAY);
        assert!(verdict.passed, "{}", verdict.explain());

        let bad = called(
            "search_flights",
            json!({"origin": "FRA", "destination": "BOS", "depart_date": "2027-03-20",
                   "cabin": "economy", "pax": 2, "loyalty_programs": ["Flying Blue"],
                   "max_price": {"amount": 900}}),
        );
        let verdict = score(&c, &bad, TODAY);
        assert!(!verdict.passed);
        let explained = verdict.explain();
        for piece in [
            "args.destination: expected one of \"JFK\", \"EWR\", \"NYC\", got \"BOS\"",
            "args.depart_date: expected 2027-03-19 or 2027-03-26 (fri|fri+7), got \"2027-03-20\"",
            "args.pax: expected 1 or nothing, got 2",
            "args.max_price.amount: expected 800, got 900",
        ] {
            assert!(explained.contains(piece), "{piece} in {explained}");
        }
    }

    #[test]
    fn tool_choice_none_and_never() {
        let none = case("tool = \"none\"");
        assert!(score(&none, &Observed::default(), TODAY).passed);
        // Quick replies beside an answer are no tool call in this sense.
        assert!(score(&none, &called("suggest_replies", json!({})), TODAY).passed);
        let verdict = score(&none, &called("ask_gpt", json!({})), TODAY);
        assert_eq!(
            verdict.explain(),
            "tool: expected no tool call, got ask_gpt"
        );

        let never = case("never = [\"contact_support\"]");
        assert!(score(&never, &called("search_flights", json!({})), TODAY).passed);
        let verdict = score(&never, &called("contact_support", json!({})), TODAY);
        assert_eq!(
            verdict.explain(),
            "never: expected no call of contact_support, got contact_support"
        );

        let any = case("tool = { any_of = [\"search_knowledge_base\", \"transfer_to_support\"] }");
        assert!(score(&any, &called("transfer_to_support", json!({})), TODAY).passed);
        let verdict = score(&any, &Observed::default(), TODAY);
        assert_eq!(
            verdict.explain(),
            "tool: expected one of search_knowledge_base, transfer_to_support, got no tool call"
        );
    }

    #[test]
    fn a_failed_turn_and_unparsable_arguments_fail_with_a_reason() {
        let c = case("tool = \"search_flights\"\nargs = { origin = \"FRA\" }");
        let failed = Observed {
            error: Some("llm_error".into()),
            ..Observed::default()
        };
        assert_eq!(
            score(&c, &failed, TODAY).explain(),
            "turn: expected a model answer, got the turn failed (llm_error)"
        );
        let garbled = Observed {
            calls: vec![ObservedCall {
                name: "search_flights".into(),
                arguments: "{origin".into(),
            }],
            ..Observed::default()
        };
        assert_eq!(
            score(&c, &garbled, TODAY).explain(),
            "args: expected a JSON object, got arguments that are not JSON"
        );
    }
}
