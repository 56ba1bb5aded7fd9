// The page: the user's chats, the open chat (its history, then the turns sent from this
// page, live), the message box with Send and Stop, and the fare alerts.

import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { type Api, ApiError, type ChatBody, type ChatSummary, type StoredMessage, TimedOut, type ToolCallRecord } from "../api";
import type { Tokens } from "../config";
import { errorText, formatNumber, retryAt, type RouteOfChat, routeOf } from "../format";
import { type HistoryTurn, historyTurns } from "../history";
import { browserLang, Debug, debugRequested, type Lang, type Texts, textsFor, Words } from "../i18n";
import { MAX_MESSAGE_CHARS, messageBudget } from "../limits";
import { type Block, newTurn, reduce, refused, settleCalls, type TurnView } from "../reducer";
import { StreamBroken, streamTurn } from "../stream";
import { AlertsPanel } from "./Alerts";
import { Blocks, listsFlights } from "./Blocks";
import { ChatRow } from "./ChatRow";
import { Actions, type PageActions } from "./context";

const AGENTS = ["travel", "support", "flights", "chat"];
const PENDING = "chat.pending";
/** Set once an answer said the stack runs on sample data: the page says so once, on top. */
const DEMO = "chat.demo";
/** Each chat's last flight search this tab saw (its history, or a turn's `final`), for the
 * chat list: `GET /chats` has only the start of the first message as a title. */
const ROUTES = "chat.routes";
const MAX_ROUTES = 200;

function readRoutes(): Record<string, RouteOfChat> {
  try {
    const routes = JSON.parse(sessionStorage.getItem(ROUTES) ?? "{}") as unknown;
    return typeof routes === "object" && routes !== null ? (routes as Record<string, RouteOfChat>) : {};
  } catch {
    return {};
  }
}

/** The chat's last flight search among its audit records. */
function lastSearch(records: ToolCallRecord[]): RouteOfChat | null {
  const searches = records
    .filter((r) => r.tool === "search_flights" && r.status === "succeeded")
    .sort((a, b) => a.created_at.localeCompare(b.created_at));
  for (let i = searches.length - 1; i >= 0; i--) {
    const route = routeOf(searches[i].request);
    if (route) return route;
  }
  return null;
}

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

export function App(props: { api: Api; tokens: Tokens; title?: string; lang?: Lang; debug?: boolean }) {
  const { api, tokens } = props;
  const lang = props.lang ?? browserLang();
  const t = textsFor(lang);
  const debug = props.debug ?? debugRequested();
  const [demo, setDemo] = useState(() => sessionStorage.getItem(DEMO) === "1");
  const [signedIn, setSignedIn] = useState(tokens.token() !== null);
  const [chatList, setChatList] = useState<ChatList>({ state: "loading" });
  const chats = chatList.state === "loading" ? [] : (chatList.items ?? []);
  const [chatId, setChatId] = useState<string | null>(chatFromHash());
  const [history, setHistory] = useState<{ turns: HistoryTurn[]; loading: boolean; error?: string }>({
    turns: [],
    loading: false,
  });
  const [turns, setTurns] = useState<TurnView[]>([]);
  const [busy, setBusy] = useState(false);
  const [draft, setDraft] = useState("");
  const [agent, setAgent] = useState("");
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [alertsOpen, setAlertsOpen] = useState(false);
  const [reconnecting, setReconnecting] = useState<string | null>(null);
  const [routes, setRoutes] = useState<Record<string, RouteOfChat>>(readRoutes);
  const budget = useMemo(() => messageBudget(draft), [draft]);

  const chatRef = useRef<string | null>(chatId);
  const running = useRef<{ controller: AbortController; turnKey: string } | null>(null);
  const requests = useRef(new Map<string, string>());
  /** Turns whose message was typed in the box: it goes back there when the turn fails. */
  const typed = useRef(new Set<string>());
  const posts = useRef(new Map<string, Post>());
  const scroller = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const stick = useRef(true);

  const updateTurn = useCallback((key: string, change: (t: TurnView) => TurnView) => {
    setTurns((ts) => ts.map((t) => (t.key === key ? change(t) : t)));
  }, []);

  const rememberRoute = useCallback((chat: string, route: RouteOfChat | null) => {
    if (!route) return;
    setRoutes((old) => {
      const same = old[chat];
      if (same && same.origin === route.origin && same.destination === route.destination && same.date === route.date) return old;
      const next = { ...old, [chat]: route };
      const keys = Object.keys(next);
      for (const k of keys.slice(0, Math.max(0, keys.length - MAX_ROUTES))) delete next[k];
      try {
        sessionStorage.setItem(ROUTES, JSON.stringify(next));
      } catch {
        // storage full or off: the list shows the titles
      }
      return next;
    });
  }, []);

  /** A failed turn's message goes back into the box (unless the user typed something new),
   * so nothing typed is lost. */
  const keepText = useCallback((turnKey: string) => {
    const message = requests.current.get(turnKey);
    if (message === undefined || !typed.current.has(turnKey)) return;
    setDraft((d) => (d.trim() ? d : message));
  }, []);

  const refreshChats = useCallback(async () => {
    try {
      const { items } = await api.listChats();
      setChatList({ state: "loaded", items });
    } catch (e) {
      const error = errorText(e, t);
      // Chats shown before stay; a list never loaded shows the failure, not "no chats".
      setChatList((old) => ({ state: "failed", error, items: old.state === "loading" ? undefined : old.items }));
    }
  }, [api, t]);

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
          onRetry: (n, what) => setReconnecting(t.connectionLost(n, what === "resume")),
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
            if (event.type === "final" && event.metadata?.notice) {
              sessionStorage.setItem(DEMO, "1");
              setDemo(true);
            }
            if (event.type === "final" && chatRef.current) rememberRoute(chatRef.current, routeOf(event.session_state.last_flight_request));
            if (event.type === "error") keepText(turnKey);
            updateTurn(turnKey, (t) => reduce(t, event, now));
          },
        });
      } catch (e) {
        const code =
          e instanceof ApiError ? e.code : e instanceof TimedOut ? "timeout" : e instanceof StreamBroken ? "connection_lost" : "internal";
        // The page says each code in its words (Blocks); the router's own text, in English,
        // is for the debug view. A timeout gets the page's words on how long it waited.
        const message = e instanceof ApiError || debug ? (e instanceof Error ? e.message : String(e)) : "";
        const detail = e instanceof TimedOut ? t.noAnswerWithin(+(e.ms / 1000).toFixed(2)) + (resendable ? t.timedOutRetry : "") : undefined;
        const until = e instanceof ApiError && e.code === "rate_limited" ? retryAt(e) : undefined;
        updateTurn(turnKey, (t) => refused(t, code, message, { detail, until }));
        keepText(turnKey);
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
    [api, debug, keepText, refreshChats, rememberRoute, t, tokens, updateTurn],
  );

  /** Sends a message as a new turn: typed in the box, or a quick reply, Regenerate or a
   * Retry. False when it was not sent (empty, too long, or a turn is running). */
  const send = useCallback(
    (text: string, fromBox = false): boolean => {
      const message = text.trim();
      if (!message || running.current || messageBudget(message).over) return false;
      const key = newKey();
      const idempotencyKey = newKey();
      requests.current.set(key, message);
      if (fromBox) typed.current.add(key);
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
      return true;
    },
    [agent, api, run],
  );

  const submitDraft = () => {
    if (busy || budget.over) return;
    if (send(draft, true)) setDraft("");
  };

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
      setReconnecting(t.stopFailed(errorText(e, t)));
    }
  }, [api, t, turns, updateTurn]);

  const decide = useCallback(
    (jobId: string, decision: "approve" | "deny") => {
      const chat = chatRef.current;
      if (!chat || running.current) return;
      const mark = (b: Block): Block =>
        b.kind === "approval" && b.request.job_id === jobId
          ? { ...b, decided: decision === "approve" ? "approved" : "declined" }
          : b;
      setHistory((h) => ({ ...h, turns: h.turns.map((ht) => ({ ...ht, blocks: ht.blocks.map(mark) })) }));
      const key = newKey();
      setTurns((ts) => [...ts.map((tv) => ({ ...tv, blocks: tv.blocks.map(mark) })), newTurn(key)]);
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
      setAlertsOpen(false);
      stick.current = true;
      if (!id) {
        setHistory({ turns: [], loading: false });
        return;
      }
      setHistory({ turns: [], loading: true });
      try {
        const [messages, records] = await Promise.all([
          allPages((c) => api.messages(id, c)),
          allPages((c) => api.toolCalls(id, c), 3),
        ]);
        if (chatRef.current !== id) return;
        messages.reverse();
        const byId = new Map<string, ToolCallRecord>(records.map((r) => [r.id, r]));
        rememberRoute(id, lastSearch(records));
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
        setHistory({ turns: historyTurns(shown, byId), loading: false });
        if (resume) {
          const key = newKey();
          if (resume.message) requests.current.set(key, resume.message);
          setTurns([{ ...newTurn(key, resume.message), chatId: id, turnId: resume.turnId, phase: "streaming" }]);
          const { turnId } = resume;
          void run(key, (signal) => api.resume(id, turnId, undefined, signal), true);
        }
      } catch (e) {
        if (chatRef.current !== id) return;
        setHistory({ turns: [], loading: false, error: errorText(e, t) });
      }
    },
    [api, rememberRoute, run, t],
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
      // The message went back into the box when the turn failed: it is being sent again.
      setDraft((d) => (d === message ? "" : d));
      // The router ended that turn (its `done` came, with an error): a new turn, new key.
      if (turn.ended) return void send(message);
      // Otherwise its fate is unknown (no answer in time, the connection lost, or refused
      // before it began): ask again for the same turn, never start a second one. Its events
      // from the start, into a clean view.
      const { chatId: chat, turnId } = turn;
      const post = posts.current.get(turnKey);
      let start: ((signal: AbortSignal) => Promise<Response>) | null = null;
      if (chat && turnId) start = (signal) => api.resume(chat, turnId, undefined, signal);
      else if (post) start = (signal) => api.postChat(post.body, post.idempotencyKey, signal);
      if (!start) return void send(message);
      stick.current = true;
      updateTurn(turnKey, () => newTurn(turnKey, message));
      void run(turnKey, start, true);
    },
    [api, run, send, turns, updateTurn],
  );

  const renameChat = useCallback(
    async (id: string, title: string) => {
      await api.renameChat(id, title);
      await refreshChats();
    },
    [api, refreshChats],
  );

  const deleteChat = useCallback(
    async (id: string) => {
      await api.deleteChat(id);
      if (chatRef.current === id) {
        window.history.replaceState(null, "", "#/");
        await openChat(null);
      }
      await refreshChats();
    },
    [api, openChat, refreshChats],
  );

  const actions = useMemo<PageActions>(
    () => ({ toolCall: (c, id) => api.toolCall(c, id), send: (m) => void send(m), retry, decide, busy }),
    [api, send, retry, decide, busy],
  );

  // A call decided in a later turn is shown once, where it was asked for (reducer.ts).
  const settled = useMemo(() => {
    const groups = settleCalls([...history.turns.map((ht) => ht.blocks), ...turns.map((tv) => tv.blocks)]);
    return { history: groups.slice(0, history.turns.length), live: groups.slice(history.turns.length) };
  }, [history.turns, turns]);
  // Flight rows can be chosen in the chat's latest flight list only: the router picks "Option
  // 2" from the last search's list, which an older table's row 2 is not.
  const flightsTurn = useMemo(() => {
    const groups = [...settled.history, ...settled.live];
    for (let i = groups.length - 1; i >= 0; i--) if (listsFlights(groups[i])) return i;
    return -1;
  }, [settled]);

  if (!signedIn) {
    return <SignIn t={t} onToken={(token) => { tokens.paste(token); setSignedIn(true); }} />;
  }

  const current = turns.find((tv) => tv.key === running.current?.turnKey);
  const canStop = busy && !!current?.turnId && !current.cancelRequested;
  const title = chats.find((c) => c.chat_id === chatId)?.title ?? (chatId ? t.chat : t.newChatTitle);
  const lastTurn = turns[turns.length - 1];
  /** A turn's words: its own language's, else the page's. */
  const wordsOf = (language: Lang | undefined) => (language ? textsFor(language) : t);

  return (
    <Actions.Provider value={actions}>
      <Debug.Provider value={debug}>
      <Words.Provider value={t}>
      <div class={`app ${sidebarOpen ? "sidebar-open" : ""}`}>
        <a
          class="skip"
          href="#composer-input"
          onClick={(e) => {
            e.preventDefault(); // the hash is the page's route
            input.current?.focus();
          }}
        >
          {t.skip}
        </a>
        <header class="top">
          <button
            type="button"
            class="menu"
            aria-expanded={sidebarOpen}
            aria-controls="sidebar"
            onClick={() => setSidebarOpen(!sidebarOpen)}
          >
            {t.chats}
          </button>
          <h1 title={props.title ?? t.appTitle}>{props.title ?? t.appTitle}</h1>
          <button
            type="button"
            class="alerts-toggle"
            aria-expanded={alertsOpen}
            aria-controls="alerts-panel"
            onClick={() => {
              setAlertsOpen(!alertsOpen);
              setSidebarOpen(false);
            }}
          >
            {t.alerts}
          </button>
          <span class="who">
            {tokens.pasted ? t.pastedToken : tokens.user ? t.devUser(tokens.user) : ""}
            {tokens.pasted || tokens.mode === "bearer" ? (
              <button type="button" class="link" onClick={() => { tokens.forget(); sessionStorage.removeItem(ROUTES); setSignedIn(tokens.token() !== null); location.reload(); }}>
                {t.signOut}
              </button>
            ) : null}
          </span>
        </header>
        <nav id="sidebar" class="sidebar" aria-label={t.yourChats}>
          <button type="button" class="new-chat" onClick={() => { window.history.replaceState(null, "", "#/"); void openChat(null); input.current?.focus(); }}>
            {t.newChat}
          </button>
          {chatList.state === "loading" ? <p class="muted" role="status">{t.loadingChats}</p> : null}
          {chatList.state === "failed" ? (
            <div class="tool-error chats-error" role="alert">
              <p>
                <strong>{t.chatsFailed}</strong> <span class="muted">{chatList.error}</span>
              </p>
              <button type="button" class="retry" onClick={retryChats}>
                {t.retry}
              </button>
            </div>
          ) : null}
          {chatList.state === "loaded" && !chats.length ? <p class="muted">{t.noChats}</p> : null}
          <ul class="chat-list">
            {chats.map((c) => (
              <ChatRow
                key={c.chat_id}
                chat={c}
                current={c.chat_id === chatId}
                route={routes[c.chat_id]}
                onRename={(title) => renameChat(c.chat_id, title)}
                onDelete={() => deleteChat(c.chat_id)}
              />
            ))}
          </ul>
        </nav>
        <main class="main" aria-labelledby={alertsOpen ? "alerts-title" : "chat-title"}>
          {alertsOpen ? <AlertsPanel api={api} onClose={() => setAlertsOpen(false)} /> : null}
          <h2 id="chat-title" class="chat-title" hidden={alertsOpen}>{title}</h2>
          <div class="conversation" ref={scroller} onScroll={onScroll} hidden={alertsOpen}>
            {demo ? <p class="notice demo-notice">{t.demo}</p> : null}
            {history.loading ? <p class="muted">{t.loadingChat}</p> : null}
            {history.error ? (
              <div class="error-box" role="alert">
                <p>{t.chatFailed} {history.error}</p>
                <button type="button" onClick={() => void openChat(chatId)}>{t.retry}</button>
              </div>
            ) : null}
            {history.turns.length ? (
              <section class="history" aria-label={t.earlier}>
                {history.turns.map((ht, i) => (
                  <div key={ht.key} class="history-turn" lang={ht.language}>
                    <Words.Provider value={wordsOf(ht.language)}>
                      <Blocks blocks={settled.history[i] ?? ht.blocks} chatId={chatId ?? undefined} latest={!turns.length && i === history.turns.length - 1} olderFlights={i < flightsTurn} />
                    </Words.Provider>
                  </div>
                ))}
              </section>
            ) : null}
            {!history.loading && !history.turns.length && !turns.length ? <p class="empty">{t.empty}</p> : null}
            <div class="live" role="log" aria-live="polite" aria-busy={busy} aria-label={t.answer}>
              {turns.map((tv, i) => (
                <section key={tv.key} class="turn" data-phase={tv.phase} data-turn-id={tv.turnId} lang={tv.language}>
                  <Words.Provider value={wordsOf(tv.language)}>
                    <Blocks blocks={settled.live[i] ?? tv.blocks} chatId={tv.chatId ?? chatId ?? undefined} turnKey={requests.current.has(tv.key) ? tv.key : undefined} latest={tv === lastTurn} olderFlights={history.turns.length + i < flightsTurn} />
                    {tv.phase === "sending" ? <p class="muted">{t.sending}</p> : null}
                    {tv.streaming || (tv.phase === "streaming" && !tv.blocks.some((b) => b.kind !== "user")) ? (
                      <p class="typing muted" aria-hidden="true">…</p>
                    ) : null}
                    {tv.cancelRequested && tv.phase === "streaming" ? <p class="muted">{wordsOf(tv.language).stopping}</p> : null}
                    {debug && tv.notice ? <p class="notice debug-line">{tv.notice}</p> : null}
                    {debug && tv.trace ? (
                      <p class="debug-line trace">
                        {tv.trace.url ? (
                          <a href={tv.trace.url} target="_blank" rel="noopener noreferrer">
                            trace {tv.trace.id}
                          </a>
                        ) : (
                          <>trace {tv.trace.id}</>
                        )}
                      </p>
                    ) : null}
                  </Words.Provider>
                </section>
              ))}
            </div>
            {reconnecting ? <p class="notice" role="status">{reconnecting}</p> : null}
          </div>
          <form
            class="composer"
            hidden={alertsOpen}
            onSubmit={(e) => {
              e.preventDefault();
              submitDraft();
            }}
          >
            <label class="visually-hidden" for="composer-input">
              {t.message}
            </label>
            <textarea
              id="composer-input"
              ref={input}
              rows={2}
              value={draft}
              placeholder={t.placeholder}
              aria-invalid={budget.over}
              aria-describedby={budget.show ? "composer-count" : undefined}
              onInput={(e) => setDraft((e.currentTarget as HTMLTextAreaElement).value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
                  e.preventDefault();
                  submitDraft();
                }
                if (e.key === "Escape" && canStop) void stop();
              }}
            />
            {budget.over ? (
              <p class="too-long" role="alert">
                {t.tooLong(formatNumber(MAX_MESSAGE_CHARS, t))}
              </p>
            ) : null}
            <div class="composer-row">
              {budget.show ? (
                <p id="composer-count" class={`char-count${budget.over ? " over" : ""}`}>
                  {formatNumber(budget.length, t)} / {formatNumber(MAX_MESSAGE_CHARS, t)}{" "}
                  <span class="visually-hidden">{t.characters}</span>
                </p>
              ) : null}
              {debug ? (
                <label>
                  <span class="visually-hidden">{t.agent}</span>
                  <select value={agent} onChange={(e) => setAgent((e.currentTarget as HTMLSelectElement).value)} title="Agent profile">
                    <option value="">{t.agentOwn}</option>
                    {AGENTS.map((a) => (
                      <option key={a} value={a}>
                        agent: {a}
                      </option>
                    ))}
                  </select>
                </label>
              ) : null}
              {busy ? (
                <button type="button" class="stop" disabled={!canStop} onClick={() => void stop()}>
                  {t.stop}
                </button>
              ) : null}
              <button type="submit" class="primary send" disabled={busy || !draft.trim() || budget.over}>
                {t.send}
              </button>
            </div>
          </form>
        </main>
      </div>
      </Words.Provider>
      </Debug.Provider>
    </Actions.Provider>
  );
}

function SignIn(props: { t: Texts; onToken: (token: string) => void }) {
  const { t } = props;
  const [value, setValue] = useState("");
  return (
    <main class="sign-in">
      <h1>{t.signIn}</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) props.onToken(value);
        }}
      >
        <label for="token">{t.tokenLabel}</label>
        <textarea id="token" rows={4} value={value} onInput={(e) => setValue((e.currentTarget as HTMLTextAreaElement).value)} />
        <p class="muted">{t.tokenKept}</p>
        <button type="submit" class="primary">
          {t.useToken}
        </button>
      </form>
    </main>
  );
}
