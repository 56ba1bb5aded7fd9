// One tool call: its state in plain words (waiting, working, done, didn't work), its
// duration, progress, result (flight tables, knowledge-base sources). The debug view adds
// the router's status words, the call id, the error text and, on demand, the arguments it
// ran with (from the audit record).

import { useContext, useState } from "preact/hooks";
import { clockTime, formatDuration, toolLabel } from "../format";
import { Debug, type Texts, Words } from "../i18n";
import type { ToolCard as Card } from "../reducer";
import { Actions } from "./context";
import { FlightResults } from "./FlightTable";

interface Source {
  id?: string;
  document_id?: string;
  title?: string;
  section?: string;
  lang?: string;
  snippet?: string;
  score?: number;
}

function sourcesOf(metadata: Record<string, unknown>): Source[] {
  const s = metadata.sources;
  return Array.isArray(s) ? s.filter((x): x is Source => typeof x === "object" && x !== null) : [];
}

/** One document of the sources: its title, the sections found in it and the best
 * passage's snippet. */
export interface SourceDocument {
  key: string;
  title: string;
  sections: string[];
  lang?: string;
  snippet?: string;
}

/** The sources by document, in the search's order: a document found in four passages is
 * one entry. A title is what people read; a record from before titles has its document id
 * written as words ("stopovers-and-open-jaws" → "Stopovers and open jaws"). */
export function sourceDocuments(sources: Source[]): SourceDocument[] {
  const byKey = new Map<string, SourceDocument>();
  for (const s of sources) {
    const key = s.document_id ?? s.title ?? s.id ?? "";
    const doc = byKey.get(key) ?? { key, title: s.title ?? words(s.document_id ?? s.id ?? ""), sections: [], lang: s.lang, snippet: s.snippet };
    if (s.section && !doc.sections.includes(s.section)) doc.sections.push(s.section);
    byKey.set(key, doc);
  }
  return [...byKey.values()];
}

const words = (id: string) => {
  const text = id.replace(/#.*$/, "").replace(/[-_]+/g, " ").trim();
  return text.charAt(0).toUpperCase() + text.slice(1);
};

/** What a failed call's card says: plain words by default; the router's status, reason and
 * error text in the debug view. */
function failureText(card: Card, t: Texts, debug: boolean): string | null {
  if (card.phase !== "failed") return null;
  const m = card.metadata;
  if (debug) {
    const raw = [m.error, m.message, m.reason].find((x): x is string => typeof x === "string");
    return `${card.status}${raw ? `: ${raw}` : ""}`;
  }
  if (card.status === "rate_limited" && typeof m.reset_at === "string") return t.limited(clockTime(m.reset_at, t));
  if (card.status === "timeout") return t.tookTooLong;
  if (card.jobId === null || card.status === "skipped") return t.notRun;
  return t.failed;
}

/** The card's state in a word or two: what did not happen for a call the user declined
 * ("Not created"), and a call that waits for their approval says so. */
function phaseLabel(card: Card, t: Texts): string {
  if (card.phase === "declined") return t.notDone[card.tool] ?? t.phases.declined;
  if (card.phase === "pending" && card.status === "awaiting_approval") return t.awaitingApproval;
  return t.phases[card.phase];
}

export function ToolCardView(props: { card: Card; chatId?: string }) {
  const { card } = props;
  const actions = useContext(Actions);
  const t = useContext(Words);
  const debug = useContext(Debug);
  const [args, setArgs] = useState<{ state: "idle" | "loading" | "done" | "error"; value?: unknown; error?: string }>(
    card.args !== undefined ? { state: "done", value: card.args } : { state: "idle" },
  );
  const sources = sourcesOf(card.metadata);
  const failure = failureText(card, t, debug);
  const retrying = typeof card.metadata.retry_attempt === "number" ? t.retryQueued(card.metadata.retry_attempt) : "";
  const label = phaseLabel(card, t);
  // For developers: the router's own words for the call (deduplicated, a cached result).
  const internals = debug
    ? [card.status, card.deduped ? "deduplicated" : "", card.metadata.cached === true ? "cached" : "", card.jobId ?? ""].filter(Boolean).join(" · ")
    : "";
  const name = toolLabel(card.tool, t);

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
      aria-label={`${name}: ${label}`}
    >
      <header>
        <span class={`badge ${card.phase}`}>
          {card.phase === "running" ? <span class="spinner" aria-hidden="true" /> : null}
          {label}
        </span>
        <strong class="tool-name">{name}</strong>
        {card.durationMs !== undefined ? <span class="duration">{formatDuration(card.durationMs, t)}</span> : null}
      </header>
      {internals ? <p class="debug-line muted">{internals}</p> : null}
      {card.phase === "running" && card.progress ? <p class="progress">{card.progress}</p> : null}
      {failure ? (
        <p class="tool-error">
          {failure}
          {retrying}
        </p>
      ) : null}
      {card.phase === "declined" && card.status === "expired" ? <p class="muted">{t.expiredCall}</p> : null}
      {card.phase === "succeeded" || card.phase === "deduplicated" ? <FlightResults result={card.result} /> : null}
      {sources.length ? (
        <section class="sources" aria-label={t.sources}>
          <h4>{t.sources}</h4>
          <ol>
            {sourceDocuments(sources).map((d) => (
              <li key={d.key} lang={d.lang}>
                <strong>{d.title}</strong>
                {d.sections.length ? <span class="sections"> › {d.sections.join(" · ")}</span> : null}
                {d.lang && d.lang !== t.lang ? <span class="muted"> ({t.languageName[d.lang] ?? d.lang})</span> : null}
                {d.snippet ? <span class="snippet"> — {d.snippet}</span> : null}
                {debug && d.key ? <code class="muted"> {d.key}</code> : null}
              </li>
            ))}
          </ol>
        </section>
      ) : null}
      {debug && card.jobId ? (
        <details onToggle={(e) => void loadArgs((e.currentTarget as HTMLDetailsElement).open)}>
          <summary>Arguments</summary>
          {args.state === "loading" ? <p class="muted">{t.loading}</p> : null}
          {args.state === "error" ? <p class="tool-error">{args.error}</p> : null}
          {args.state === "done" ? <pre class="args">{JSON.stringify(args.value, null, 2)}</pre> : null}
        </details>
      ) : null}
    </article>
  );
}
