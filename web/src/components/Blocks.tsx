// A turn's (or a reloaded chat's) blocks, in order.

import { useContext, useState } from "preact/hooks";
import { clockTime } from "../format";
import { Debug, type Texts, Words } from "../i18n";
import { Markdown } from "../markdown";
import { type Block, FINAL_ERRORS } from "../reducer";
import { Actions, Choosable } from "./context";
import { type Flight, flightLists, FlightTable } from "./FlightTable";
import { ToolCardView } from "./ToolCard";

/** Tools whose result the page shows as quick replies or flight cards. */
const UI_SKILLS: ReadonlySet<string> = new Set(["suggest_replies", "show_flight_options"]);

/** Whether the blocks show a flight list: a flight search's tables, or offered flights. */
export function listsFlights(blocks: Block[]): boolean {
  return blocks.some(
    (b) =>
      b.kind === "flight_options" ||
      (b.kind === "tool" && (b.card.phase === "succeeded" || b.card.phase === "deduplicated") && flightLists(b.card.result) !== null),
  );
}

/** An approval's outcome: `approved`, `declined` (the user's decision, live or stored) or
 * `status:<call status>` (a stored call that no longer waits, e.g. expired). */
function decidedText(decided: string, t: Texts): string {
  if (decided === "approved") return t.approved;
  if (decided === "declined") return t.declined;
  return t.callEnded(decided.replace(/^status:/, ""));
}

/** Copies an answer's text; says so for two seconds. */
function CopyButton(props: { text: string }) {
  const t = useContext(Words);
  const [copied, setCopied] = useState(false);
  if (typeof navigator === "undefined" || !navigator.clipboard) return null;
  return (
    <button
      type="button"
      class="small copy"
      onClick={() =>
        void navigator.clipboard.writeText(props.text).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 2000);
        })
      }
    >
      {copied ? t.copied : t.copy}
    </button>
  );
}

export function Blocks(props: {
  blocks: Block[];
  chatId?: string;
  turnKey?: string;
  /** Quick replies and approval buttons work in the latest turn only. */
  latest?: boolean;
  /** A later turn shows a newer flight list: this one's rows can no longer be chosen. */
  olderFlights?: boolean;
}) {
  const actions = useContext(Actions);
  const t = useContext(Words);
  const debug = useContext(Debug);
  // Regenerate asks the turn's question again, as a new turn of the chat.
  const question = props.blocks.find((b) => b.kind === "user")?.text;
  const lastText = [...props.blocks].reverse().find((b) => b.kind === "text");
  return (
    <Choosable.Provider value={!props.olderFlights}>
      {props.blocks.map((b) => {
        switch (b.kind) {
          case "user":
            return (
              <div key={b.key} class="msg user">
                <span class="visually-hidden">{t.you}</span>
                <p>{b.text}</p>
              </div>
            );
          case "text":
            return (
              <div key={b.key} class="msg assistant">
                <span class="visually-hidden">{t.assistant}</span>
                <Markdown text={b.text} />
                {b.stopped ? <p class="stopped-note muted">{t.stopped}</p> : null}
                <div class="msg-actions">
                  <CopyButton text={b.text} />
                  {props.latest && b === lastText && question ? (
                    <button type="button" class="small regenerate" disabled={actions.busy} onClick={() => actions.send(question)}>
                      {t.regenerate}
                    </button>
                  ) : null}
                </div>
              </div>
            );
          case "tool":
            // A UI skill's result is its replies or cards, shown as such: its call is no news
            // unless it failed (or in the debug view).
            if (UI_SKILLS.has(b.card.tool) && b.card.phase !== "failed" && !debug) return null;
            return <ToolCardView key={b.key} card={b.card} chatId={props.chatId} />;
          case "handoff":
            return (
              <p key={b.key} class="handoff">
                → {t.handedTo(t.agents[b.to] ?? b.to)}
                {debug ? <span class="debug-line muted"> {b.from} → {b.to}{b.reason ? `: “${b.reason}”` : ""}</span> : null}
              </p>
            );
          case "quick_replies":
            return (
              <div key={b.key} class="quick-replies" role="group" aria-label={t.suggested}>
                {b.replies.map((r) => (
                  <button type="button" key={r} disabled={actions.busy || !props.latest} onClick={() => actions.send(r)}>
                    {r}
                  </button>
                ))}
              </div>
            );
          case "flight_options":
            return (
              <FlightTable
                key={b.key}
                kind="award"
                flights={b.flights
                  .map((o) => o as { option?: number; flight?: Flight })
                  .filter((o) => typeof o.flight === "object" && o.flight !== null)
                  .map((o) => ({ ...o.flight, option: o.option ?? o.flight?.option }))}
              />
            );
          case "approval": {
            const waiting = !b.decided;
            return (
              <div key={b.key} class="approval" role="group" aria-label={t.approvalNeeded}>
                <p>
                  <strong>{t.approveQ}</strong> {b.request.summary}
                </p>
                {waiting ? (
                  <div class="buttons">
                    <button type="button" class="primary" disabled={actions.busy} onClick={() => actions.decide(b.request.job_id, "approve")}>
                      {t.approve}
                    </button>
                    <button type="button" disabled={actions.busy} onClick={() => actions.decide(b.request.job_id, "deny")}>
                      {t.deny}
                    </button>
                  </div>
                ) : (
                  <p class="muted">{decidedText(b.decided ?? "", t)}</p>
                )}
              </div>
            );
          }
          case "error": {
            // The code in the reader's words; the router's own text (English) in the debug
            // view only, and not where it is the answer shown just above.
            const previous = props.blocks[props.blocks.indexOf(b) - 1];
            const repeated = previous?.kind === "text" && previous.text === b.message;
            return (
              <div key={b.key} class="error-box" role="alert" data-code={b.code}>
                <p>
                  <strong>{t.errors[b.code] ?? t.somethingWrong}</strong>
                  {b.until ? ` ${t.possibleAgain(clockTime(b.until, t))}` : null}
                  {b.detail ? ` ${b.detail}` : null}
                </p>
                {debug ? (
                  <p class="muted">
                    {b.message && !repeated ? <span class="server-message">{b.message} · </span> : null}
                    code: <code class="code">{b.code}</code>
                  </p>
                ) : null}
                {props.turnKey && props.latest && !FINAL_ERRORS.has(b.code) ? (
                  <button type="button" class="retry" disabled={actions.busy} onClick={() => actions.retry(props.turnKey!)}>
                    {t.retry}
                  </button>
                ) : null}
              </div>
            );
          }
        }
      })}
    </Choosable.Provider>
  );
}
