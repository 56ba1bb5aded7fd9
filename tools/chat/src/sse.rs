//! Incremental Server-Sent Events parser. Chunks may split anywhere, even inside a UTF-8
//! character, so bytes are buffered and only whole events are decoded.

use serde_json::Value;

/// One event: its name (`message` when the block has no `event:` line), its `id:` (the
/// router's sequence number in the turn; `None` when the block has none or it is not a whole
/// number) and its data, parsed as JSON (or kept as a string when it is not JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub name: String,
    pub id: Option<u64>,
    pub data: Value,
}

/// Buffers bytes until a blank line ends an event.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
}

impl SseParser {
    /// Adds bytes; returns the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, separator)) = block_end(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end + separator).collect();
            if let Some(event) = parse_block(&String::from_utf8_lossy(&block[..end])) {
                events.push(event);
            }
        }
        events
    }
}

/// Start and length of the first blank-line separator (`\n\n` or, from other servers,
/// `\r\n\r\n`).
fn block_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let find = |needle: &[u8]| buffer.windows(needle.len()).position(|w| w == needle);
    match (find(b"\n\n"), find(b"\r\n\r\n")) {
        (Some(lf), Some(crlf)) if crlf < lf => Some((crlf, 4)),
        (Some(lf), _) => Some((lf, 2)),
        (None, crlf) => crlf.map(|at| (at, 4)),
    }
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let mut name = None;
    let mut id = None;
    let mut data: Option<String> = None;
    for line in block.lines() {
        if let Some(value) = line.strip_prefix("event:") {
            name = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("id:") {
            id = value.trim().parse::<u64>().ok();
        } else if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    if name.is_none() && data.is_none() {
        return None; // a comment or keep-alive
    }
    let data = data.unwrap_or_default();
    let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
    Some(SseEvent {
        name: name.unwrap_or_else(|| "message".to_owned()),
        id,
        data,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const STREAM: &str = "id: 0\nevent: init\ndata: {\"chat_id\":\"c1\",\"created\":true,\"turn_id\":\"t1\"}\n\n: keep-alive\n\nid: 1\nevent: assistant_token\ndata: {\"content\":\"Grüße → ✈\"}\n\nid: 12\nevent: done\ndata: {}\n\n";

    #[test]
    fn events_survive_any_split() {
        let whole = SseParser::default().push(STREAM.as_bytes());
        let names: Vec<&str> = whole.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["init", "assistant_token", "done"]);
        let ids: Vec<Option<u64>> = whole.iter().map(|e| e.id).collect();
        assert_eq!(ids, [Some(0), Some(1), Some(12)]);
        assert_eq!(whole[1].data["content"], "Grüße → ✈");
        let bytes = STREAM.as_bytes();
        for split in 1..bytes.len() {
            let mut parser = SseParser::default();
            let mut events = parser.push(&bytes[..split]);
            events.extend(parser.push(&bytes[split..]));
            assert_eq!(events, whole, "split at {split}");
        }
    }

    #[test]
    fn events_survive_byte_by_byte_delivery() {
        let whole = SseParser::default().push(STREAM.as_bytes());
        let mut parser = SseParser::default();
        let events: Vec<SseEvent> = STREAM
            .as_bytes()
            .iter()
            .flat_map(|b| parser.push(&[*b]))
            .collect();
        assert_eq!(events, whole);
    }

    #[test]
    fn crlf_multiline_and_incomplete_events() {
        let mut parser = SseParser::default();
        let events =
            parser.push(b"event: a\r\ndata: {\"x\":\r\ndata: 1}\r\n\r\nevent: b\ndata: plain");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].name, "a");
        assert_eq!(events[0].data, json!({"x": 1}));
        let events = parser.push(b"\n\n");
        assert_eq!(events[0].data, json!("plain"));
        assert_eq!(events[0].id, None);
    }

    #[test]
    fn ids_are_kept_per_event() {
        let mut parser = SseParser::default();
        // An event the router writes outside the turn's log has no `id:`; an id that is not
        // a whole number is no id. The id line may come anywhere in the block.
        let events = parser.push(
            b"id:7\nevent: a\ndata: {}\n\nevent: error\ndata: {}\n\nid: x\ndata: 1\n\nevent: b\ndata: 2\nid: 8\r\n\r\n",
        );
        let ids: Vec<Option<u64>> = events.iter().map(|e| e.id).collect();
        assert_eq!(ids, [Some(7), None, None, Some(8)]);
        assert_eq!(events[2].name, "message");
    }
}
