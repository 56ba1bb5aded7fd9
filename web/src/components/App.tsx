// The page: the user's chats, the open chat (its history, then the turns sent from this
// page, live), and the message box with Send and Stop.

import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { type Api, ApiError, type ChatBody, type ChatSummary, type StoredMessage, TimedOut, type ToolCallRecord } from "../api";
import type { Tokens } from "../config";
import { relativeTime } from "../format";
import { historyBlocks } from "../history";
import { type Block, newTurn, reduce, refused, type TurnView } from "../reducer";
import { StreamBroken, streamTurn } from "../stream";
import { Blocks } from "./Blocks";
import { Actions, type PageActions } from "./context";

const AGENTS = ["travel", "support", "flights", "chat"];
const PENDING = "chat.pending";

/** The chat list: loading, loaded, or failed (then with Retry, never an empty list). */
type ChatList = { state: "loading" } | { state: "loaded"; items: ChatSummary[] } | { state: "failed"; error: string; items?: ChatSummary[] };

/** A turn's `POST /chat`, kept to ask again for the same turn (same body, same key). */
interface Post {
  body: ChatBody;
  idempotencyKey: string;
}

interface Pending {
  chatId: string;
  turnId: string;
  message?: string;
}

function chatFromHash(): string | null {
  const m = /^#\/chat\/([^/?#]+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

function newKey(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function timezone(): string | undefined {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || undefined;
  } catch {
    return undefined;
  }
}

function readPending(): Pending | null {
  try {
    const p = JSON.parse(sessionStorage.getItem(PENDING) ?? "null") as Pending | null;
    return p && typeof p.chatId === "string" && typeof p.turnId === "string" ? p : null;
  } catch {
    return null;
  }
}

async function allPages<T>(load: (cursor?: string) => Promise<{ items: T[]; next_cursor?: string | null }>, max = 5) {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < max; i++) {
    const page = await load(cursor);
    items.push(...page.items);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return items;
}

/** Whether the pending turn is still missing its answer in the stored history. */
function stillRunning(messages: StoredMessage[], pending: Pending): { running: boolean; cut: number } {
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user") {
      lastUser = i;
      break;
    }
  }
  if (lastUser < 0 || (pending.message !== undefined && messages[lastUser].content !== pending.message)) {
    return { running: true, cut: messages.length }; // its message is not stored yet
  }
  const answered = messages
    .slice(lastUser + 1)
    .some((m) => m.role === "assistant" && !(m.tool_calls && m.tool_calls.length));
  return { running: !answered, cut: lastUser };
}

export function App(props: { api: Api; tokens: Tokens; title?: string }) {
  const { api, tokens } = props;
  const [signedIn, setSignedIn] = useState(tokens.token() !== null);
  const [chatList, setChatList] = useState<ChatList>({ state: "loading" });
  const chats = chatList.state === "loading" ? [] : (chatList.items ?? []);
  const [chatId, setChatId] = useState<string | null>(chatFromHash());
  const [history, setHistory] = useState<{ blocks: Block[]; loading: boolean; error?: string }>({
    blocks: [],
    loading: false,
  });
  const [turns, setTurns] = useState<TurnView[]>([]);
  const [busy, setBusy] = useState(false);
  const [draft, setDraft] = useState("");
  const [agent, setAgent] = useState("");
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [reconnecting, setReconnecting] = useState<string | null>(null);

  const chatRef = useRef<string | null>(chatId);
  const running = useRef<{ controller: AbortController; turnKey: string } | null>(null);
  const requests = useRef(new Map<string, string>());
  const posts = useRef(new Map<string, Post>());
  const scroller = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const stick = useRef(true);

  const updateTurn = useCallback((key: string, change: (t: TurnView) => TurnView) => {
    setTurns((ts) => ts.map((t) => (t.key === key ? change(t) : t)));
  }, []);

  const refreshChats = useCallback(async () => {
    try {
      const { items } = await api.listChats();
      setChatList({ state: "loaded", items });
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      // Chats shown before stay; a list never loaded shows the failure, not "no chats".
      setChatList((old) => ({ state: "failed", error, items: old.state === "loading" ? undefined : old.items }));
    }
  }, [api]);

  const retryChats = useCallback(() => {
    setChatList((old) => (old.state === "failed" && !old.items ? { state: "loading" } : old));
    void refreshChats();
  }, [refreshChats]);

  /** Reads a stream into turn `turnKey` until `done` (or until the page leaves the chat). */
  const run = useCallback(
    async (turnKey: string, start: (signal: AbortSignal) => Promise<Response>, resendable: boolean) => {
      running.current?.controller.abort();
      const controller = new AbortController();
      running.current = { controller, turnKey };
      setBusy(true);
      let followed: string | null = null;
      try {
        await streamTurn({
          start,
          resendable,
          resume: (c, t, after, signal) => api.resume(c, t, after, signal),
          signal: controller.signal,
          firstByteMs: api.timeouts.firstByteMs,
          onRetry: (n, what) => setReconnecting(`Connection lost; ${what === "resume" ? "resuming" : "sending again"} (${n})…`),
          onEvent: (event) => {
            setReconnecting(null);
            const now = performance.now();
            if (event.type === "init") {
              if (chatRef.current !== event.chat_id) {
                chatRef.current = event.chat_id;
                setChatId(event.chat_id);
                window.history.replaceState(null, "", `#/chat/${encodeURIComponent(event.chat_id)}`);
              }
              const pending: Pending = { chatId: event.chat_id, turnId: event.turn_id, message: requests.current.get(turnKey) };
              sessionStorage.setItem(PENDING, JSON.stringify(pending));
            }
            if (event.type === "done") sessionStorage.removeItem(PENDING);
            updateTurn(turnKey, (t) => reduce(t, event, now));
          },
        });
      } catch (e) {
        const code =
          e instanceof ApiError ? e.code : e instanceof TimedOut ? "timeout" : e instanceof StreamBroken ? "connection_lost" : "internal";
        let message = e instanceof Error ? e.message : String(e);
        if (e instanceof TimedOut && resendable) message += " Retry asks for the same answer again; the message is not run twice.";
        updateTurn(turnKey, (t) => refused(t, code, message));
        if (e instanceof ApiError && e.code === "unauthorized" && tokens.mode === "bearer") setSignedIn(false);
        if (e instanceof ApiError && e.code === "turn_in_progress" && typeof e.details?.turn_id === "string") {
          followed = e.details.turn_id;
        }
      } finally {
        setReconnecting(null);
        if (running.current?.controller === controller) {
          running.current = null;
          setBusy(false);
        }
      }
      void refreshChats();
      const chat = chatRef.current;
      if (followed && chat) {
        // README rule 3: follow the running turn; the refused message can be retried after.
        const key = newKey();
        setTurns((ts) => [...ts, { ...newTurn(key), chatId: chat, turnId: followed! }]);
        await run(key, (signal) => api.resume(chat, followed!, undefined, signal), true);
      }
    },
    [api, refreshChats, tokens, updateTurn],
  );

  const send = useCallback(
    (text: string) => {
      const message = text.trim();
      if (!message || running.current) return;
      const key = newKey();
      const idempotencyKey = newKey();
      requests.current.set(key, message);
      setTurns((ts) => [...ts, newTurn(key, message)]);
      stick.current = true;
      const body: ChatBody = {
        message,
        chat_id: chatRef.current ?? undefined,
        agent: agent || undefined,
        timezone: timezone(),
      };
      posts.current.set(key, { body, idempotencyKey });
      void run(key, (signal) => api.postChat(body, idempotencyKey, signal), true);
    },
    [agent, api, run],
  );

  const stop = useCallback(async () => {
    const current = running.current;
    if (!current) return;
    const turn = turns.find((t) => t.key === current.turnKey);
    if (!turn?.chatId || !turn.turnId) return;
    updateTurn(turn.key, (t) => ({ ...t, cancelRequested: true }));
    try {
      await api.cancelTurn(turn.chatId, turn.turnId);
    } catch (e) {
      updateTurn(turn.key, (t) => ({ ...t, cancelRequested: false }));
      setReconnecting(`Stop failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }, [api, turns, updateTurn]);

  const decide = useCallback(
    (jobId: string, decision: "approve" | "deny") => {
      const chat = chatRef.current;
      if (!chat || running.current) return;
      const mark = (b: Block): Block =>
        b.kind === "approval" && b.request.job_id === jobId
          ? { ...b, decided: decision === "approve" ? "You approved this." : "You declined this." }
          : b;
      setHistory((h) => ({ ...h, blocks: h.blocks.map(mark) }));
      const key = newKey();
      setTurns((ts) => [...ts.map((t) => ({ ...t, blocks: t.blocks.map(mark) })), newTurn(key)]);
      void run(key, (signal) => api.decide(chat, jobId, decision, undefined, signal), false);
    },
    [api, run],
  );

  const openChat = useCallback(
    async (id: string | null) => {
      running.current?.controller.abort(); // the turn goes on at the router; only reading stops
      running.current = null;
      setBusy(false);
      chatRef.current = id;
      setChatId(id);
      setTurns([]);
      setSidebarOpen(false);
      stick.current = true;
      if (!id) {
        setHistory({ blocks: [], loading: false });
        return;
      }
      setHistory({ blocks: [], loading: true });
      try {
        const [messages, records] = await Promise.all([
          allPages((c) => api.messages(id, c)),
          allPages((c) => api.toolCalls(id, c), 3),
        ]);
        if (chatRef.current !== id) return;
        messages.reverse();
        const byId = new Map<string, ToolCallRecord>(records.map((r) => [r.id, r]));
        const pending = readPending();
        let shown = messages;
        let resume: Pending | null = null;
        if (pending && pending.chatId === id) {
          const { running: live, cut } = stillRunning(messages, pending);
          if (live) {
            shown = messages.slice(0, cut);
            resume = pending;
          } else {
            sessionStorage.removeItem(PENDING);
          }
        }
        const blocks = historyBlocks(shown, byId).map((b) => {
          if (b.kind !== "approval") return b;
          const status = byId.get(b.request.job_id)?.status;
          return status && status !== "awaiting_approval" ? { ...b, decided: `This call is ${status.replace(/_/g, " ")}.` } : b;
        });
        setHistory({ blocks, loading: false });
        if (resume) {
          const key = newKey();
          if (resume.message) requests.current.set(key, resume.message);
          setTurns([{ ...newTurn(key, resume.message), chatId: id, turnId: resume.turnId, phase: "streaming" }]);
          const { turnId } = resume;
          void run(key, (signal) => api.resume(id, turnId, undefined, signal), true);
        }
      } catch (e) {
        if (chatRef.current !== id) return;
        setHistory({ blocks: [], loading: false, error: e instanceof Error ? e.message : String(e) });
      }
    },
    [api, run],
  );

  useEffect(() => {
    if (!signedIn) return;
    void refreshChats();
    void openChat(chatFromHash());
    const onHash = () => {
      if (location.hash && !location.hash.startsWith("#/")) return; // not a route
      const id = chatFromHash();
      if (id !== chatRef.current) void openChat(id);
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, [signedIn]);

  // Follow the answer while the reader is at the bottom; leave them be when they scrolled up.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [turns, history]);
  const onScroll = () => {
    const el = scroller.current;
    if (el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };

  const retry = useCallback(
    (turnKey: string) => {
      const message = requests.current.get(turnKey);
      const turn = turns.find((t) => t.key === turnKey);
      if (!message || !turn || running.current) return;
      // The router ended that turn (its `done` came, with an error): a new turn, new key.
      if (turn.ended) return send(message);
      // Otherwise its fate is unknown (no answer in time, the connection lost, or refused
      // before it began): ask again for the same turn, never start a second one. Its events
      // from the start, into a clean view.
      const { chatId: chat, turnId } = turn;
      const post = posts.current.get(turnKey);
      let start: ((signal: AbortSignal) => Promise<Response>) | null = null;
      if (chat && turnId) start = (signal) => api.resume(chat, turnId, undefined, signal);
      else if (post) start = (signal) => api.postChat(post.body, post.idempotencyKey, signal);
      if (!start) return send(message);
      stick.current = true;
      updateTurn(turnKey, () => newTurn(turnKey, message));
      void run(turnKey, start, true);
    },
    [api, run, send, turns, updateTurn],
  );

  const actions = useMemo<PageActions>(
    () => ({ toolCall: (c, id) => api.toolCall(c, id), send, retry, decide, busy }),
    [api, send, retry, decide, busy],
  );

  if (!signedIn) {
    return <SignIn onToken={(t) => { tokens.paste(t); setSignedIn(true); }} />;
  }

  const current = turns.find((t) => t.key === running.current?.turnKey);
  const canStop = busy && !!current?.turnId && !current.cancelRequested;
  const title = chats.find((c) => c.chat_id === chatId)?.title ?? (chatId ? "Chat" : "New chat");
  const lastTurn = turns[turns.length - 1];

  return (
    <Actions.Provider value={actions}>
      <div class={`app ${sidebarOpen ? "sidebar-open" : ""}`}>
        <a
          class="skip"
          href="#composer-input"
          onClick={(e) => {
            e.preventDefault(); // the hash is the page's route
            input.current?.focus();
          }}
        >
          Skip to the message box
        </a>
        <header class="top">
          <button
            type="button"
            class="menu"
            aria-expanded={sidebarOpen}
            aria-controls="sidebar"
            onClick={() => setSidebarOpen(!sidebarOpen)}
          >
            Chats
          </button>
          <h1>{props.title ?? "Travel chat"}</h1>
          <span class="who">
            {tokens.pasted ? "signed in with a pasted token" : tokens.user ? `local dev user ${tokens.user}` : ""}
            {tokens.pasted || tokens.mode === "bearer" ? (
              <button type="button" class="link" onClick={() => { tokens.forget(); setSignedIn(tokens.token() !== null); location.reload(); }}>
                Sign out
              </button>
            ) : null}
          </span>
        </header>
        <nav id="sidebar" class="sidebar" aria-label="Your chats">
          <button type="button" class="new-chat" onClick={() => { window.history.replaceState(null, "", "#/"); void openChat(null); input.current?.focus(); }}>
            + New chat
          </button>
          {chatList.state === "loading" ? <p class="muted" role="status">Loading chats…</p> : null}
          {chatList.state === "failed" ? (
            <div class="tool-error chats-error" role="alert">
              <p>
                <strong>Chats could not be loaded.</strong> <span class="muted">{chatList.error}</span>
              </p>
              <button type="button" class="retry" onClick={retryChats}>
                Retry
              </button>
            </div>
          ) : null}
          {chatList.state === "loaded" && !chats.length ? <p class="muted">No chats yet.</p> : null}
          <ul class="chat-list">
            {chats.map((c) => (
              <li key={c.chat_id}>
                <a
                  href={`#/chat/${encodeURIComponent(c.chat_id)}`}
                  aria-current={c.chat_id === chatId ? "page" : undefined}
                >
                  <span class="title">{c.title || "(no message yet)"}</span>
                  <span class="meta">
                    {c.message_count} messages · {relativeTime(c.active_at)}
                  </span>
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <main class="main" aria-labelledby="chat-title">
          <h2 id="chat-title" class="chat-title">{title}</h2>
          <div class="conversation" ref={scroller} onScroll={onScroll}>
            {history.loading ? <p class="muted">Loading the chat…</p> : null}
            {history.error ? (
              <div class="error-box" role="alert">
                <p>The chat could not be loaded: {history.error}</p>
                <button type="button" onClick={() => void openChat(chatId)}>Retry</button>
              </div>
            ) : null}
            {history.blocks.length ? (
              <section class="history" aria-label="Earlier messages">
                <Blocks blocks={history.blocks} chatId={chatId ?? undefined} latest={!turns.length} />
              </section>
            ) : null}
            {!history.loading && !history.blocks.length && !turns.length ? (
              <p class="empty">Ask for flights (“Business class from Frankfurt to New York on 15 March”) or a question about miles and status.</p>
            ) : null}
            <div class="live" role="log" aria-live="polite" aria-busy={busy} aria-label="Answer">
              {turns.map((t) => (
                <section key={t.key} class="turn" data-phase={t.phase} data-turn-id={t.turnId}>
                  <Blocks blocks={t.blocks} chatId={t.chatId ?? chatId ?? undefined} turnKey={requests.current.has(t.key) ? t.key : undefined} latest={t === lastTurn} />
                  {t.phase === "sending" ? <p class="muted">Sending…</p> : null}
                  {t.streaming || (t.phase === "streaming" && !t.blocks.some((b) => b.kind !== "user")) ? (
                    <p class="typing muted" aria-hidden="true">…</p>
                  ) : null}
                  {t.cancelRequested && t.phase === "streaming" ? <p class="muted">Stopping…</p> : null}
                  {t.notice ? <p class="notice">{t.notice}</p> : null}
                </section>
              ))}
            </div>
            {reconnecting ? <p class="notice" role="status">{reconnecting}</p> : null}
          </div>
          <form
            class="composer"
            onSubmit={(e) => {
              e.preventDefault();
              send(draft);
              setDraft("");
            }}
          >
            <label class="visually-hidden" for="composer-input">
              Message
            </label>
            <textarea
              id="composer-input"
              ref={input}
              rows={2}
              value={draft}
              placeholder="Message (Enter sends, Shift+Enter for a new line)"
              onInput={(e) => setDraft((e.currentTarget as HTMLTextAreaElement).value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
                  e.preventDefault();
                  if (!busy) {
                    send(draft);
                    setDraft("");
                  }
                }
                if (e.key === "Escape" && canStop) void stop();
              }}
            />
            <div class="composer-row">
              <label>
                <span class="visually-hidden">Agent</span>
                <select value={agent} onChange={(e) => setAgent((e.currentTarget as HTMLSelectElement).value)} title="Agent profile">
                  <option value="">agent: chat's own</option>
                  {AGENTS.map((a) => (
                    <option key={a} value={a}>
                      agent: {a}
                    </option>
                  ))}
                </select>
              </label>
              {busy ? (
                <button type="button" class="stop" disabled={!canStop} onClick={() => void stop()}>
                  Stop
                </button>
              ) : null}
              <button type="submit" class="primary send" disabled={busy || !draft.trim()}>
                Send
              </button>
            </div>
          </form>
        </main>
      </div>
    </Actions.Provider>
  );
}

function SignIn(props: { onToken: (token: string) => void }) {
  const [value, setValue] = useState("");
  return (
    <main class="sign-in">
      <h1>Sign in</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) props.onToken(value);
        }}
      >
        <label for="token">Bearer token (your identity provider's ID token)</label>
        <textarea id="token" rows={4} value={value} onInput={(e) => setValue((e.currentTarget as HTMLTextAreaElement).value)} />
        <p class="muted">Kept in this browser tab only (sessionStorage), sent only to the chat-router.</p>
        <button type="submit" class="primary">
          Use this token
        </button>
      </form>
    </main>
  );
}
