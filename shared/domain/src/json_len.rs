//! The length of a JSON value as text, counted as it is written rather than written out.

/// The length of `value` serialised as compact JSON (`serde_json::to_vec(value).len()`),
/// without building the text: the tools' schemas are counted at every model call, a tool's
/// response at every stored result.
pub fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` cannot fail, and `Count` never does.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_what_serialising_writes() {
        for value in [
            json!(null),
            json!({"a": [1, 2.5, "é\"\n"], "b": {"c": true}}),
            json!("\u{1F600} \\ \u{7}"),
        ] {
            assert_eq!(json_len(&value), value.to_string().len());
        }
    }
}
