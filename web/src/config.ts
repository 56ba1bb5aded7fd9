// The page's settings come from `config.json` beside index.html (docs/web.md#configjson):
//
//   {"routerUrl": "https://<id>.lambda-url.<region>.on.aws", "auth": {"type": "bearer"}}
//
// and optionally `linkHosts` (the hosts answers may link to, as the router's
// `ANSWER_LINK_HOSTS`; default the router's default) and `timeouts` (seconds the page waits
// for a turn's first byte and for any other call).
//
// `auth.type` "bearer": the user pastes a bearer token (an ID token of the identity
// provider), kept in this tab's sessionStorage only. "dev": the local stack's page server
// puts a freshly minted dev token into the config it serves (never into a file), and mints
// a new one when the page asks again after a 401.

import { DEFAULT_TIMEOUTS, type TimeLimits, type TokenSource, withTimeout } from "./api";

export interface PageConfig {
  /** The chat-router's base URL; relative to the page when not absolute. */
  routerUrl: string;
  auth: { type: "bearer" } | { type: "dev"; token: string; user?: string };
  /** Hosts links may point to (`.example.com`: the domain and its subdomains); absent: the
   * router's default list. */
  linkHosts?: string[];
  timeouts: TimeLimits;
}

export class ConfigError extends Error {}

/** The longest wait config.json may set, in seconds. */
const MAX_TIMEOUT_SECONDS = 600;

function parseLinkHosts(raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw) || !raw.every((h) => typeof h === "string")) {
    throw new ConfigError("config.json: linkHosts must be a list of host names");
  }
  return raw as string[];
}

function parseTimeouts(raw: unknown): TimeLimits {
  if (raw === undefined) return { ...DEFAULT_TIMEOUTS };
  if (typeof raw !== "object" || raw === null) throw new ConfigError("config.json: timeouts must be an object");
  const t = raw as Record<string, unknown>;
  const seconds = (name: string, fallback: number): number => {
    const v = t[name];
    if (v === undefined) return fallback;
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0 || v > MAX_TIMEOUT_SECONDS) {
      throw new ConfigError(`config.json: timeouts.${name} must be seconds, more than 0 and at most ${MAX_TIMEOUT_SECONDS}`);
    }
    return v * 1000;
  };
  return {
    firstByteMs: seconds("firstByteSeconds", DEFAULT_TIMEOUTS.firstByteMs),
    requestMs: seconds("requestSeconds", DEFAULT_TIMEOUTS.requestMs),
  };
}

export function parseConfig(raw: unknown, pageUrl: string): PageConfig {
  if (typeof raw !== "object" || raw === null) throw new ConfigError("config.json is not a JSON object");
  const c = raw as Record<string, unknown>;
  if (typeof c.routerUrl !== "string" || !c.routerUrl.trim()) {
    throw new ConfigError("config.json needs routerUrl: the chat-router's URL");
  }
  const url = new URL(c.routerUrl, pageUrl);
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new ConfigError("routerUrl must be an http(s) URL");
  const auth = (c.auth ?? { type: "bearer" }) as Record<string, unknown>;
  const routerUrl = url.href.replace(/\/+$/, "");
  const rest = { linkHosts: parseLinkHosts(c.linkHosts), timeouts: parseTimeouts(c.timeouts) };
  if (auth.type === "dev" && typeof auth.token === "string") {
    return { routerUrl, auth: { type: "dev", token: auth.token, user: typeof auth.user === "string" ? auth.user : undefined }, ...rest };
  }
  if (auth.type === undefined || auth.type === "bearer") return { routerUrl, auth: { type: "bearer" }, ...rest };
  throw new ConfigError(`config.json: unknown auth.type ${JSON.stringify(auth.type)}`);
}

export async function loadConfig(
  fetchImpl: typeof fetch = fetch,
  pageUrl = location.href,
  timeoutMs = DEFAULT_TIMEOUTS.requestMs,
): Promise<PageConfig> {
  const body = await withTimeout(timeoutMs, undefined, async (signal) => {
    const response = await fetchImpl(new URL("config.json", pageUrl).href, { cache: "no-store", signal });
    if (!response.ok) throw new ConfigError(`config.json: HTTP ${response.status}`);
    return (await response.json()) as unknown;
  });
  return parseConfig(body, pageUrl);
}

const PASTED = "chat.bearer";

/** The pasted token (this tab only) first, else the dev token. */
export class Tokens implements TokenSource {
  private dev: string | null;

  constructor(
    private config: PageConfig,
    private readonly storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> = sessionStorage,
    private readonly reload: () => Promise<PageConfig> = () => loadConfig(fetch, location.href, config.timeouts.requestMs),
  ) {
    this.dev = config.auth.type === "dev" ? config.auth.token : null;
  }

  token(): string | null {
    return this.storage.getItem(PASTED) ?? this.dev;
  }

  get mode(): "bearer" | "dev" {
    return this.config.auth.type;
  }

  get user(): string | undefined {
    return this.config.auth.type === "dev" ? this.config.auth.user : undefined;
  }

  get pasted(): boolean {
    return this.storage.getItem(PASTED) !== null;
  }

  paste(token: string): void {
    const t = token.trim().replace(/^Bearer\s+/i, "");
    if (t) this.storage.setItem(PASTED, t);
  }

  forget(): void {
    this.storage.removeItem(PASTED);
  }

  /** After a 401: a dev page gets a new token; a pasted one cannot be renewed here. */
  async refresh(): Promise<boolean> {
    if (this.pasted || this.config.auth.type !== "dev") return false;
    try {
      this.config = await this.reload();
    } catch {
      return false;
    }
    const next = this.config.auth.type === "dev" ? this.config.auth.token : null;
    const changed = next !== null && next !== this.dev;
    this.dev = next;
    return changed;
  }
}
