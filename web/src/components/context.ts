// What the blocks can ask of the page: fetch an audit record, send a message, retry a
// failed turn, decide a call that waits for approval; and whether the flight rows they show
// can be chosen.

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

/** Whether the flight rows shown here can be chosen ("Option 2"): true but in a table older
 * than the chat's latest flight list. The router picks from the last search's list, so a
 * number chosen in an older table would name another flight. */
export const Choosable = createContext<boolean>(true);
