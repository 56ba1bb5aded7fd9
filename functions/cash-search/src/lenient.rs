//! Tolerant reading of upstream JSON: `null` counts as missing, and numbers may come as
//! strings (or strings as numbers), so one odd field does not sink an offer.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Removes `null` members of objects at every level, so `#[serde(default)]` covers them.
pub fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// Each item parsed on its own as `T` (its `null` members counting as missing): an item that
/// does not parse is dropped and logged as `what`, so one odd entry never sinks the rest.
pub fn parse_each<T: serde::de::DeserializeOwned>(items: Vec<Value>, what: &'static str) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter_map(|(index, mut item)| {
            drop_nulls(&mut item);
            match serde_json::from_value::<T>(item) {
                Ok(parsed) => Some(parsed),
                Err(e) => {
                    // serde's message names the field; it never quotes long values.
                    tracing::warn!(index, error = %e, what, "dropping an entry that does not parse");
                    None
                }
            }
        })
        .collect()
}

/// A string, or a number written as one (prices are decimal strings, but not always).
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    })
}

/// A non-negative count given as a number or a numeric string; anything else is unknown.
pub fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// Like [`opt_u32`], for lifetimes in seconds.
pub fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct Sample {
        #[serde(deserialize_with = "string")]
        total: String,
        #[serde(deserialize_with = "opt_u32")]
        seats: Option<u32>,
        name: String,
    }

    fn read(mut value: Value) -> Sample {
        drop_nulls(&mut value);
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn numbers_strings_and_nulls() {
        let s = read(json!({"total": 12.5, "seats": "7", "name": null, "extra": [1]}));
        assert_eq!(
            (s.total.as_str(), s.seats, s.name.as_str()),
            ("12.5", Some(7), "")
        );
        let s = read(json!({"total": "3842.10", "seats": -1}));
        assert_eq!((s.total.as_str(), s.seats), ("3842.10", None));
        let s = read(json!({"seats": "many", "total": true}));
        assert_eq!((s.total.as_str(), s.seats), ("", None));
    }
}
