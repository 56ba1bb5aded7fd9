// The page's own words in English and German. The page's frame (list, buttons, sign-in)
// speaks the browser's language; each turn speaks the language the router chose for it
// (`init.language`, stored with the answer as `language`), so its cards, tables and notes
// match the answer's text. Words the router writes (prices, stops, answers) come localised
// from the router.

import { createContext } from "preact";
import { toolTitles } from "./generated/toolTitles";

export type Lang = "en" | "de";

/** `de`, `de-AT`, `de_CH` → "de"; anything else → "en" (the page's two languages). */
export function langOf(tag: string | null | undefined): Lang {
  return typeof tag === "string" && /^de(?:[-_]|$)/i.test(tag.trim()) ? "de" : "en";
}

/** The browser's first language the page speaks, else English. */
export function browserLang(): Lang {
  const tags = typeof navigator === "undefined" ? [] : (navigator.languages ?? [navigator.language]);
  for (const tag of tags) if (/^(de|en)(?:[-_]|$)/i.test(tag)) return langOf(tag);
  return "en";
}

/** The tools' headings in `lang`, by name, as the router's tool catalog declares them. */
function titles(lang: Lang): Record<string, string> {
  return Object.fromEntries(Object.entries(toolTitles).map(([name, title]) => [name, title[lang]]));
}

const en = {
  locale: "en-GB",
  chats: "Chats",
  yourChats: "Your chats",
  newChat: "+ New chat",
  newChatTitle: "New chat",
  chat: "Chat",
  loadingChats: "Loading chats…",
  chatsFailed: "Chats could not be loaded.",
  retry: "Retry",
  noChats: "No chats yet.",
  untitled: "New chat",
  rename: "Rename",
  renameLabel: "New title of the chat",
  save: "Save",
  cancel: "Cancel",
  delete: "Delete",
  deleteQ: "Delete this chat for good?",
  chatActionFailed: (why: string) => `That did not work: ${why}`,
  copy: "Copy",
  copied: "Copied",
  regenerate: "Regenerate",
  loadingChat: "Loading the chat…",
  chatFailed: "The chat could not be loaded:",
  earlier: "Earlier messages",
  empty: "Ask for flights (“Business class from Frankfurt to New York on 15 March”) or a question about miles and status.",
  answer: "Answer",
  sending: "Sending…",
  stopping: "Stopping…",
  demo: "Demo mode: answers come from an offline stand-in and sample data, not live fares.",
  connectionLost: (n: number, resuming: boolean) => `Connection lost; ${resuming ? "resuming" : "sending again"} (${n})…`,
  stopFailed: (why: string) => `Stop failed: ${why}`,
  noAnswerWithin: (seconds: number) => `No answer from the server within ${seconds.toLocaleString("en-GB")} seconds.`,
  timedOutRetry: " Retry asks for the same answer again; the message is not run twice.",
  message: "Message",
  placeholder: "Message (Enter sends, Shift+Enter for a new line)",
  stop: "Stop",
  send: "Send",
  skip: "Skip to the message box",
  signOut: "Sign out",
  pastedToken: "signed in with a pasted token",
  devUser: (user: string) => `local dev user ${user}`,
  agent: "Agent",
  agentOwn: "agent: chat's own",
  signIn: "Sign in",
  tokenLabel: "Bearer token (your identity provider's ID token)",
  tokenKept: "Kept in this browser tab only (sessionStorage), sent only to the chat-router.",
  useToken: "Use this token",
  you: "You: ",
  assistant: "Assistant: ",
  stopped: "Stopped",
  handedTo: (to: string) => `Handed over to the ${to}.`,
  agents: { travel: "travel assistant", support: "support team", flights: "flight specialist", chat: "general assistant" } as Record<string, string>,
  suggested: "Suggested replies",
  approvalNeeded: "Approval needed",
  approve: "Approve",
  approveQ: "Approve?",
  deny: "Deny",
  approved: "You approved this.",
  declined: "You declined this.",
  callEnded: (status: string) => `This request is ${CALL_STATUS.en[status] ?? "closed"}.`,
  somethingWrong: "Something went wrong.",
  errors: {
    guardrail: "A safety check stopped this answer.",
    invalid_tool_call: "The assistant could not do this.",
    internal: "Something went wrong on the server.",
    not_found: "This chat does not exist (any more).",
    conflict: "The chat changed at the same time.",
    llm_error: "The assistant could not be reached.",
    rate_limited: "Too many messages for now.",
    turn_in_progress: "Another message of this chat is still being answered.",
    interrupted: "The answer was cut off before it finished.",
    connection_lost: "The connection to the server was lost.",
    timeout: "The server did not answer in time.",
    unauthorized: "Your sign-in is not valid (any more).",
  } as Record<string, string>,
  tools: titles("en"),
  otherTool: "Assistant tool",
  phases: { pending: "Waiting", running: "Working…", succeeded: "Done", deduplicated: "Done", failed: "Didn't work" },
  limited: (until: string) => `Too many requests; possible again at ${until}.`,
  notRun: "This step was skipped.",
  retryQueued: (n: number) => ` Trying again in the background (attempt ${n}).`,
  failed: "This step did not work.",
  tookTooLong: "This took too long.",
  sources: "Sources",
  details: "Details",
  loading: "Loading…",
  award: "Award flights (miles)",
  cash: "Cash fares",
  option: "Number",
  programme: "Programme",
  carrier: "Carrier",
  route: "Route",
  duration: "Duration",
  stops: "Stops",
  miles: "Miles",
  price: "Price",
  notes: "Notes",
  book: "Book",
  perPerson: (p: string) => `${p} per person`,
  alsoVia: "Also via:",
  noFlights: "No flights found.",
  roundTrip: "round trip",
  oneWay: "one-way",
  seats: (n: number) => (n === 1 ? "1 seat" : `${n} seats`),
  seatsUnknown: "seats unknown",
  seenMin: (n: number) => `seen ${n} min ago`,
  seenH: (n: number) => `seen ${n} h ago`,
  seenDays: (n: number) => `seen ${n} days ago`,
  justNow: "just now",
  minAgo: (n: number) => `${n} min ago`,
  hAgo: (n: number) => `${n} h ago`,
  pageNotSetUp: "The page is not set up",
  pageConfig: "It reads config.json beside index.html; see docs/web.md.",
};

export type Texts = typeof en;

const CALL_STATUS: Record<Lang, Record<string, string>> = {
  en: { succeeded: "done", failed: "closed", expired: "expired", canceled: "cancelled", rejected: "declined", running: "running" },
  de: { succeeded: "erledigt", failed: "abgeschlossen", expired: "abgelaufen", canceled: "abgebrochen", rejected: "abgelehnt", running: "in Arbeit" },
};

const de: Texts = {
  locale: "de-DE",
  chats: "Chats",
  yourChats: "Deine Chats",
  newChat: "+ Neuer Chat",
  newChatTitle: "Neuer Chat",
  chat: "Chat",
  loadingChats: "Chats werden geladen…",
  chatsFailed: "Die Chats konnten nicht geladen werden.",
  retry: "Erneut versuchen",
  noChats: "Noch keine Chats.",
  untitled: "Neuer Chat",
  rename: "Umbenennen",
  renameLabel: "Neuer Titel des Chats",
  save: "Speichern",
  cancel: "Abbrechen",
  delete: "Löschen",
  deleteQ: "Diesen Chat endgültig löschen?",
  chatActionFailed: (why) => `Das hat nicht geklappt: ${why}`,
  copy: "Kopieren",
  copied: "Kopiert",
  regenerate: "Neu antworten",
  loadingChat: "Der Chat wird geladen…",
  chatFailed: "Der Chat konnte nicht geladen werden:",
  earlier: "Frühere Nachrichten",
  empty: "Frag nach Flügen („Business Class von Frankfurt nach New York am 15.03.“) oder nach Meilen und Status.",
  answer: "Antwort",
  sending: "Wird gesendet…",
  stopping: "Wird angehalten…",
  demo: "Demo-Modus: Die Antworten kommen von einem Offline-Platzhalter und aus Beispieldaten, nicht aus echten Tarifen.",
  connectionLost: (n, resuming) => `Verbindung unterbrochen; ${resuming ? "wird fortgesetzt" : "wird erneut gesendet"} (${n})…`,
  stopFailed: (why) => `Anhalten fehlgeschlagen: ${why}`,
  noAnswerWithin: (seconds) => `Keine Antwort vom Server innerhalb von ${seconds.toLocaleString("de-DE")} Sekunden.`,
  timedOutRetry: " „Erneut versuchen“ fragt dieselbe Antwort noch einmal ab; die Nachricht läuft nicht doppelt.",
  message: "Nachricht",
  placeholder: "Nachricht (Enter sendet, Umschalt+Enter für eine neue Zeile)",
  stop: "Stopp",
  send: "Senden",
  skip: "Zum Nachrichtenfeld springen",
  signOut: "Abmelden",
  pastedToken: "mit eingefügtem Token angemeldet",
  devUser: (user) => `lokaler Entwickler ${user}`,
  agent: "Assistent",
  agentOwn: "Assistent: wie im Chat",
  signIn: "Anmelden",
  tokenLabel: "Bearer-Token (das ID-Token deines Identitätsanbieters)",
  tokenKept: "Nur in diesem Browser-Tab gespeichert (sessionStorage) und nur an den Chat-Router gesendet.",
  useToken: "Dieses Token verwenden",
  you: "Du: ",
  assistant: "Assistent: ",
  stopped: "Angehalten",
  handedTo: (to) => `Weitergegeben an: ${to}.`,
  agents: { travel: "Reiseassistent", support: "Support-Team", flights: "Flugspezialist", chat: "allgemeiner Assistent" },
  suggested: "Antwortvorschläge",
  approvalNeeded: "Bestätigung nötig",
  approve: "Bestätigen",
  approveQ: "Bestätigen?",
  deny: "Ablehnen",
  approved: "Du hast das bestätigt.",
  declined: "Du hast das abgelehnt.",
  callEnded: (status) => `Diese Anfrage ist ${CALL_STATUS.de[status] ?? "abgeschlossen"}.`,
  somethingWrong: "Etwas ist schiefgegangen.",
  errors: {
    guardrail: "Eine Sicherheitsprüfung hat diese Antwort angehalten.",
    invalid_tool_call: "Das konnte der Assistent nicht erledigen.",
    internal: "Auf dem Server ist etwas schiefgegangen.",
    not_found: "Diesen Chat gibt es nicht (mehr).",
    conflict: "Der Chat wurde gleichzeitig geändert.",
    llm_error: "Der Assistent war nicht erreichbar.",
    rate_limited: "Gerade zu viele Nachrichten.",
    turn_in_progress: "Eine andere Nachricht dieses Chats wird noch beantwortet.",
    interrupted: "Die Antwort wurde abgebrochen, bevor sie fertig war.",
    connection_lost: "Die Verbindung zum Server ist abgebrochen.",
    timeout: "Der Server hat nicht rechtzeitig geantwortet.",
    unauthorized: "Deine Anmeldung ist nicht (mehr) gültig.",
  },
  tools: titles("de"),
  otherTool: "Werkzeug des Assistenten",
  phases: { pending: "Wartet", running: "Läuft…", succeeded: "Fertig", deduplicated: "Fertig", failed: "Hat nicht geklappt" },
  limited: (until) => `Zu viele Anfragen; wieder möglich um ${until}.`,
  notRun: "Dieser Schritt wurde übersprungen.",
  retryQueued: (n) => ` Wird im Hintergrund erneut versucht (Versuch ${n}).`,
  failed: "Dieser Schritt hat nicht geklappt.",
  tookTooLong: "Das hat zu lange gedauert.",
  sources: "Quellen",
  details: "Details",
  loading: "Wird geladen…",
  award: "Prämienflüge (Meilen)",
  cash: "Tarife",
  option: "Nummer",
  programme: "Programm",
  carrier: "Airline",
  route: "Strecke",
  duration: "Dauer",
  stops: "Stopps",
  miles: "Meilen",
  price: "Preis",
  notes: "Hinweise",
  book: "Buchen",
  perPerson: (p) => `${p} pro Person`,
  alsoVia: "Auch über:",
  noFlights: "Keine Flüge gefunden.",
  roundTrip: "Hin- und Rückflug",
  oneWay: "einfach",
  seats: (n) => (n === 1 ? "1 Platz" : `${n} Plätze`),
  seatsUnknown: "Plätze unbekannt",
  seenMin: (n) => `vor ${n} min gesehen`,
  seenH: (n) => `vor ${n} h gesehen`,
  seenDays: (n) => `vor ${n} Tagen gesehen`,
  justNow: "gerade eben",
  minAgo: (n) => `vor ${n} Min.`,
  hAgo: (n) => `vor ${n} Std.`,
  pageNotSetUp: "Die Seite ist nicht eingerichtet",
  pageConfig: "Sie liest config.json neben index.html; siehe docs/web.md.",
};

export function textsFor(lang: Lang): Texts {
  return lang === "de" ? de : en;
}

/** The words of what is being rendered: the page's, or inside a turn the turn's. */
export const Words = createContext<Texts>(en);

/** Whether the page shows its debug view (`?debug` in the address): ids, status words,
 * arguments, handoff reasons and the agent choice, for developers. */
export const Debug = createContext<boolean>(false);

export function debugRequested(): boolean {
  try {
    return new URLSearchParams(location.search).has("debug");
  } catch {
    return false;
  }
}
