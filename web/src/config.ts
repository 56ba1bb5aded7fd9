// The page's settings come from `config.json` beside index.html (docs/web.md#configjson):
//
//   {"routerUrl": "https://<id>.lambda-url.<region>.on.aws", "auth": {"type": "bearer"}}
//
// `auth.type` "bearer": the user pastes a bearer token (an ID token of the identity
// provider), kept in this tab's sessionStorage only. "dev": the local stack's page server
// puts a freshly minted dev token into the config it serves (never into a file), and mints
// a new one when the page asks again after a 401.

import type { TokenSource } from "./api";

export interface PageConfig {
  /** The chat-router's base URL; relative to the page when not absolute. */
  routerUrl: string;
  auth: { type: "bearer" } | { type: "dev"; token: string; user?: string };
}

export class ConfigError extends Error {}

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
  if (auth.type === "dev" && typeof auth.token === "string") {
    return { routerUrl, auth: { type: "dev", token: auth.token, user: typeof auth.user === "string" ? auth.user : undefined } };
  }
  if (auth.type === undefined || auth.type === "bearer") return { routerUrl, auth: { type: "bearer" } };
  throw new ConfigError(`config.json: unknown auth.type ${JSON.stringify(auth.type)}`);
}

export async function loadConfig(fetchImpl: typeof fetch = fetch, pageUrl = location.href): Promise<PageConfig> {
  const response = await fetchImpl(new URL("config.json", pageUrl).href, { cache: "no-store" });
  if (!response.ok) throw new ConfigError(`config.json: HTTP ${response.status}`);
  return parseConfig(await response.json(), pageUrl);
}

const PASTED = "chat.bearer";

/** The pasted token (this tab only) first, else the dev token. */
export class Tokens implements TokenSource {
  private dev: string | null;

  constructor(
    private config: PageConfig,
    private readonly storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> = sessionStorage,
    private readonly reload: () => Promise<PageConfig> = () => loadConfig(),
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
