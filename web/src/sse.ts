// Incremental Server-Sent Events parser, as the HTML standard's "event stream
// interpretation" describes it. Bytes may arrive split anywhere, even inside a UTF-8
// character or between the CR and LF of a line end: the decoder is streaming, and a CR at
// the end of a chunk waits for the next one before it ends a line.

/** One dispatched event: its name (`message` without an `event:` line), its `data` (the
 * `data:` lines joined with `\n`) and the `id:` of its own block, if it had one. */
export interface SseMessage {
  event: string;
  data: string;
  id: string | undefined;
}

export class SseParser {
  private readonly decoder = new TextDecoder("utf-8");
  private buffer = "";
  /** Where the next line-end search starts in `buffer` (all before it is one open line). */
  private scanned = 0;
  private data: string[] = [];
  private hasData = false;
  private eventName = "";
  private id: string | undefined;

  /** Adds bytes; returns the events they complete, in order. */
  push(chunk: Uint8Array): SseMessage[] {
    return this.feed(this.decoder.decode(chunk, { stream: true }), false);
  }

  /** The stream ended: a last line without its line end still counts, but an event whose
   * blank line never came is dropped (the standard's rule for an unterminated event). */
  end(): SseMessage[] {
    return this.feed(this.decoder.decode(), true);
  }

  private feed(text: string, final: boolean): SseMessage[] {
    this.buffer += text;
    const out: SseMessage[] = [];
    let start = 0;
    let i = this.scanned;
    const buffer = this.buffer;
    while (i < buffer.length) {
      const c = buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) {
        i++;
        continue;
      }
      if (c === 13 && i === buffer.length - 1 && !final) {
        break; // CR last: it may be the first half of CRLF
      }
      this.line(buffer.slice(start, i), out);
      i += c === 13 && buffer.charCodeAt(i + 1) === 10 ? 2 : 1;
      start = i;
    }
    this.buffer = buffer.slice(start);
    this.scanned = i - start;
    if (final) {
      if (this.buffer.length > 0) this.line(this.buffer, out);
      this.buffer = "";
      this.scanned = 0;
      this.reset();
    }
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === "") {
      if (this.hasData) {
        out.push({ event: this.eventName || "message", data: this.data.join("\n"), id: this.id });
      }
      this.reset();
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' */) return; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventName = value;
        break;
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      default: // `retry` and unknown fields: the client decides its own pauses
        break;
    }
  }

  private reset(): void {
    this.data = [];
    this.hasData = false;
    this.eventName = "";
    this.id = undefined;
  }
}
