// What the blocks can ask of the page: fetch an audit record, send a message, retry a
// failed turn, decide a call that waits for approval.

import { createContext } from "preact";
import type { ToolCallRecord } from "../api";

export interface PageActions {
  toolCall(chatId: string, callId: string): Promise<ToolCallRecord>;
  send(message: string): void;
  retry(turnKey: string): void;
  decide(jobId: string, decision: "approve" | "deny"): void;
  /** A turn is running: sending is off until it ends. */
  busy: boolean;
}

export const Actions = createContext<PageActions>({
  toolCall: () => Promise.reject(new Error("no page")),
  send: () => undefined,
  retry: () => undefined,
  decide: () => undefined,
  busy: false,
});
