// One tool call: its state (pending → running → succeeded / deduplicated / failed), its
// duration, progress, error, result (flight tables, knowledge-base sources) and, on
// demand, the arguments it ran with (from the audit record).

import { useContext, useState } from "preact/hooks";
import { formatDuration, PHASE_LABELS, toolLabel } from "../format";
import type { ToolCard as Card } from "../reducer";
import { Actions } from "./context";
import { FlightResults } from "./FlightTable";

interface Source {
  id?: string;
  document_id?: string;
  snippet?: string;
  score?: number;
}

function sourcesOf(metadata: Record<string, unknown>): Source[] {
  const s = metadata.sources;
  return Array.isArray(s) ? s.filter((x): x is Source => typeof x === "object" && x !== null) : [];
}

function failureText(card: Card): string | null {
  if (card.phase !== "failed") return null;
  const m = card.metadata;
  const error = typeof m.error === "string" ? m.error : null;
  if (error) return error;
  if (card.status === "rate_limited" && typeof m.reset_at === "string") return `Rate limit reached until ${m.reset_at}.`;
  if (card.jobId === null && typeof m.reason === "string") return `Not run: ${m.reason.replace(/_/g, " ")}.`;
  return card.status.replace(/_/g, " ");
}

export function ToolCardView(props: { card: Card; chatId?: string }) {
  const { card } = props;
  const actions = useContext(Actions);
  const [args, setArgs] = useState<{ state: "idle" | "loading" | "done" | "error"; value?: unknown; error?: string }>(
    card.args !== undefined ? { state: "done", value: card.args } : { state: "idle" },
  );
  const sources = sourcesOf(card.metadata);
  const failure = failureText(card);
  const retrying =
    typeof card.metadata.retry_attempt === "number" ? ` A retry (attempt ${card.metadata.retry_attempt}) is queued.` : "";
  const label = card.phase === "succeeded" && card.metadata.cached === true ? "succeeded (cached)" : PHASE_LABELS[card.phase];

  const loadArgs = async (open: boolean) => {
    if (!open || args.state !== "idle" || !card.jobId || !props.chatId) return;
    setArgs({ state: "loading" });
    try {
      const record = await actions.toolCall(props.chatId, card.jobId);
      setArgs({ state: "done", value: record.request });
    } catch (e) {
      setArgs({ state: "error", error: e instanceof Error ? e.message : String(e) });
    }
  };

  return (
    <article
      class={`tool-card ${card.phase}`}
      data-status={card.phase}
      data-tool={card.tool}
      aria-label={`${toolLabel(card.tool)}: ${label}`}
    >
      <header>
        <span class={`badge ${card.phase}`}>
          {card.phase === "running" ? <span class="spinner" aria-hidden="true" /> : null}
          {label}
        </span>
        <strong class="tool-name">{toolLabel(card.tool)}</strong>
        {card.durationMs !== undefined ? <span class="duration">{formatDuration(card.durationMs)}</span> : null}
      </header>
      {card.phase === "running" && card.progress ? <p class="progress">{card.progress}</p> : null}
      {failure ? (
        <p class="tool-error">
          {failure}
          {retrying}
        </p>
      ) : null}
      {card.phase === "succeeded" || card.phase === "deduplicated" ? <FlightResults result={card.result} /> : null}
      {sources.length ? (
        <section class="sources" aria-label="Sources">
          <h4>Sources</h4>
          <ol>
            {sources.map((s, i) => (
              <li key={s.id ?? i}>
                <strong>{s.document_id ?? s.id}</strong>
                {s.snippet ? <span class="snippet"> — {s.snippet}</span> : null}
              </li>
            ))}
          </ol>
        </section>
      ) : null}
      {card.jobId ? (
        <details onToggle={(e) => void loadArgs((e.currentTarget as HTMLDetailsElement).open)}>
          <summary>Arguments</summary>
          {args.state === "loading" ? <p class="muted">Loading…</p> : null}
          {args.state === "error" ? <p class="tool-error">{args.error}</p> : null}
          {args.state === "done" ? <pre class="args">{JSON.stringify(args.value, null, 2)}</pre> : null}
        </details>
      ) : null}
    </article>
  );
}
