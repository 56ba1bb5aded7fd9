// A turn's (or a reloaded chat's) blocks, in order.

import { useContext } from "preact/hooks";
import { Markdown } from "../markdown";
import type { Block } from "../reducer";
import { Actions } from "./context";
import { type Flight, FlightTable } from "./FlightTable";
import { ToolCardView } from "./ToolCard";

const ERROR_HINTS: Record<string, string> = {
  guardrail: "A safety check stopped this answer.",
  invalid_tool_call: "The assistant could not do this.",
  internal: "Something went wrong on the server.",
  not_found: "This chat does not exist (any more).",
  conflict: "The chat changed at the same time.",
  llm_error: "The language model could not be reached.",
  rate_limited: "Too many messages for now.",
  turn_in_progress: "Another message of this chat is still being answered.",
  interrupted: "The turn was cut off before it finished.",
  connection_lost: "The connection to the server was lost.",
  timeout: "The server did not answer in time.",
  unauthorized: "Your sign-in is not valid (any more).",
};

export function Blocks(props: {
  blocks: Block[];
  chatId?: string;
  turnKey?: string;
  /** Quick replies and approval buttons work in the latest turn only. */
  latest?: boolean;
}) {
  const actions = useContext(Actions);
  return (
    <>
      {props.blocks.map((b) => {
        switch (b.kind) {
          case "user":
            return (
              <div key={b.key} class="msg user">
                <span class="visually-hidden">You: </span>
                <p>{b.text}</p>
              </div>
            );
          case "text":
            return (
              <div key={b.key} class="msg assistant">
                <span class="visually-hidden">Assistant: </span>
                <Markdown text={b.text} />
                {b.stopped ? <p class="stopped-note muted">Stopped</p> : null}
              </div>
            );
          case "tool":
            return <ToolCardView key={b.key} card={b.card} chatId={props.chatId} />;
          case "handoff":
            return (
              <p key={b.key} class="handoff">
                → handed to <strong>{b.to}</strong>
                {b.from ? <> by {b.from}</> : null}
                {b.reason ? <span class="reason"> (the model's reason: “{b.reason}”)</span> : null}
              </p>
            );
          case "quick_replies":
            return (
              <div key={b.key} class="quick-replies" role="group" aria-label="Suggested replies">
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
                  .map((o) => (o as { flight?: Flight }).flight)
                  .filter((f): f is Flight => typeof f === "object" && f !== null)}
              />
            );
          case "approval": {
            const waiting = !b.decided;
            return (
              <div key={b.key} class="approval" role="group" aria-label="Approval needed">
                <p>
                  <strong>Approve?</strong> {b.request.summary}
                </p>
                {waiting ? (
                  <div class="buttons">
                    <button type="button" class="primary" disabled={actions.busy} onClick={() => actions.decide(b.request.job_id, "approve")}>
                      Approve
                    </button>
                    <button type="button" disabled={actions.busy} onClick={() => actions.decide(b.request.job_id, "deny")}>
                      Deny
                    </button>
                  </div>
                ) : (
                  <p class="muted">{b.decided}</p>
                )}
              </div>
            );
          }
          case "error": {
            // Where the message is the answer shown just above, it is not repeated.
            const previous = props.blocks[props.blocks.indexOf(b) - 1];
            const repeated = previous?.kind === "text" && previous.text === b.message;
            return (
              <div key={b.key} class="error-box" role="alert">
                <p>
                  <strong>{ERROR_HINTS[b.code] ?? "Something went wrong."}</strong> {repeated ? null : b.message}
                </p>
                <p class="muted">
                  code: <code class="code">{b.code}</code>
                </p>
                {props.turnKey && props.latest ? (
                  <button type="button" class="retry" disabled={actions.busy} onClick={() => actions.retry(props.turnKey!)}>
                    Retry
                  </button>
                ) : null}
              </div>
            );
          }
        }
      })}
    </>
  );
}
