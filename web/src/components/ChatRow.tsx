// One chat of the list: its link, and for the open chat Rename (inline, Enter saves, Escape
// cancels) and Delete (asked once more, inline). Chats that start alike ("Business class
// from Frankfurt to …") tell apart by their title on up to two lines (the whole of it on
// hover) and, when this tab saw it, the chat's last flight search ("FRA → JFK · 26 Feb"):
// `GET /chats` has no more than the title, the start of the chat's first message.

import { useContext, useState } from "preact/hooks";
import type { ChatSummary } from "../api";
import { errorText, relativeTime, type RouteOfChat, routeLabel } from "../format";
import { Words } from "../i18n";

type Mode = { kind: "idle" } | { kind: "renaming"; draft: string } | { kind: "deleting" } | { kind: "busy" };

export function ChatRow(props: {
  chat: ChatSummary;
  current: boolean;
  /** The chat's last flight search, when known. */
  route?: RouteOfChat;
  onRename: (title: string) => Promise<void>;
  onDelete: () => Promise<void>;
}) {
  const t = useContext(Words);
  const { chat } = props;
  const [mode, setMode] = useState<Mode>({ kind: "idle" });
  const [failure, setFailure] = useState<string | null>(null);
  const title = chat.title || t.untitled;

  const run = async (work: () => Promise<void>) => {
    setMode({ kind: "busy" });
    setFailure(null);
    try {
      await work();
      setMode({ kind: "idle" });
    } catch (e) {
      setFailure(t.chatActionFailed(errorText(e, t)));
      setMode({ kind: "idle" });
    }
  };

  if (mode.kind === "renaming") {
    const save = () => {
      const next = mode.draft.trim();
      if (!next || next === chat.title) return setMode({ kind: "idle" });
      void run(() => props.onRename(next));
    };
    return (
      <li class="chat-row renaming">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            save();
          }}
        >
          <input
            class="rename-input"
            aria-label={t.renameLabel}
            value={mode.draft}
            maxLength={80}
            ref={(el) => el?.focus()}
            onInput={(e) => setMode({ kind: "renaming", draft: (e.currentTarget as HTMLInputElement).value })}
            onKeyDown={(e) => {
              if (e.key === "Escape") setMode({ kind: "idle" });
            }}
          />
          <div class="row-actions">
            <button type="submit" class="primary">{t.save}</button>
            <button type="button" onClick={() => setMode({ kind: "idle" })}>{t.cancel}</button>
          </div>
        </form>
      </li>
    );
  }

  return (
    <li class="chat-row">
      <a href={`#/chat/${encodeURIComponent(chat.chat_id)}`} aria-current={props.current ? "page" : undefined} title={title}>
        <span class="title">{title}</span>
        <span class="meta">
          {props.route ? <span class="route">{routeLabel(props.route, t)}</span> : null}
          {props.route ? " · " : null}
          {relativeTime(chat.active_at, t)}
        </span>
      </a>
      {props.current && mode.kind === "deleting" ? (
        <div class="row-actions confirm" role="group" aria-label={t.deleteQ}>
          <span>{t.deleteQ}</span>
          <button type="button" class="danger" onClick={() => void run(props.onDelete)}>
            {t.delete}
          </button>
          <button type="button" onClick={() => setMode({ kind: "idle" })}>{t.cancel}</button>
        </div>
      ) : props.current ? (
        <div class="row-actions">
          <button type="button" class="small" disabled={mode.kind === "busy"} onClick={() => setMode({ kind: "renaming", draft: chat.title ?? "" })}>
            {t.rename}
          </button>
          <button type="button" class="small" disabled={mode.kind === "busy"} onClick={() => setMode({ kind: "deleting" })}>
            {t.delete}
          </button>
        </div>
      ) : null}
      {failure ? <p class="tool-error" role="alert">{failure}</p> : null}
    </li>
  );
}
