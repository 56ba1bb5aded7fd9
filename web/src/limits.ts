// What the chat-router accepts, beside the types generated from docs/openapi.json. The
// OpenAPI document names the message limit (`ChatRequest.message`: "at most
// `MAX_MESSAGE_CHARS` characters") but carries no `maxLength` for it: the router reads it
// from its environment. This is the router's default (docs/configuration.md,
// `MAX_MESSAGE_CHARS`); test/composer.test.tsx fails when the router's default, or a
// `maxLength` the document may gain, says otherwise. A deployment with a lower limit still
// refuses longer messages with 413 `payload_too_large`, which the page says in its words.

import type { components } from "./generated/api";

/** The longest message `POST /chat` takes, in characters after the router's normalising. */
export const MAX_MESSAGE_CHARS = 8000;

/** The counter under the message box shows from this share of the limit on. */
export const COUNT_FROM = 0.8;

/** The message field as the generated types have it: the limit belongs to this field. */
export type MessageField = components["schemas"]["ChatRequest"]["message"];

/** Zero-width and joiner characters, bidi controls, the BOM, the soft hyphen and tag
 * characters: the router removes them (shared/guardrails/src/input.rs). */
const INVISIBLE = /[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|\uDB40[\uDC00-\uDC7F]/g;
/** Control characters but tabs and line breaks. */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g;

/** The message's length as the router counts it: invisible and control characters removed,
 * CR and CRLF as LF, NFKC, trimmed, in Unicode characters (not UTF-16 units). */
export function messageLength(text: MessageField): number {
  const normal = text.replace(INVISIBLE, "").replace(CONTROL, "").replace(/\r\n?/g, "\n").normalize("NFKC").trim();
  let n = 0;
  for (const _ of normal) n++;
  return n;
}

/** Whether the counter shows, and whether the message may be sent. */
export function messageBudget(text: string, max = MAX_MESSAGE_CHARS): { length: number; show: boolean; over: boolean } {
  const length = messageLength(text);
  return { length, show: length >= Math.ceil(max * COUNT_FROM), over: length > max };
}
