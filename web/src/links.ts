// Which URLs the page turns into links: the router's rule (shared/guardrails/src/links.rs,
// `LinkPolicy::allows`), applied once more where the links are made. `https` only; the host
// on the allow-list, an exact host or `.example.com` for the domain and its subdomains, and
// a plain DNS name (letters, digits, dots, hyphens: no percent-escapes); nothing in the URL
// that could make a browser read it differently (whitespace, control characters, a
// backslash). config.json's `linkHosts` replaces the list, as
// `ANSWER_LINK_HOSTS` does at the router (docs/web.md#configjson).

/** `ANSWER_LINK_HOSTS`' default, the same as the router's `DEFAULT_LINK_HOSTS` (a unit test
 * compares the two): Seats.aero, the booking sites of the programmes it searches and the airlines' own sites. */
export const DEFAULT_LINK_HOSTS =
  "seats.aero,.aa.com,.aerlingus.com,.aeromexico.com,.aircanada.com,.airfrance.com," +
  ".alaskaair.com,.ana.co.jp,.austrian.com,.britishairways.com," +
  ".brusselsairlines.com,.cathaypacific.com,.condor.com,.copaair.com,.delta.com," +
  ".emirates.com,.ethiopianairlines.com,.etihad.com,.eurowings.com,.finnair.com," +
  ".flyingblue.com,.flysas.com,.flytap.com,.iberia.com,.ita-airways.com,.jal.co.jp," +
  ".jetblue.com,.klm.com,.lifemiles.com,.lot.com,.lufthansa.com," +
  ".miles-and-more.com,.qantas.com,.qatarairways.com,.saudia.com,.singaporeair.com," +
  ".smiles.com.br,.swiss.com,.turkishairlines.com,.united.com," +
  ".velocityfrequentflyer.com,.virginatlantic.com,.voeazul.com.br";

const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (c) => c.toLowerCase());

/** Whitespace, control characters (Unicode's White_Space and Cc, as Rust's
 * `is_whitespace` and `is_control`; JavaScript's `\s` adds U+FEFF) and the backslash. */
const UNSAFE = /[\s\p{Cc}\\]/u;

/** A host the rule accepts at all: ASCII letters, digits, dots and hyphens. */
const DNS_NAME = /^[a-z0-9.-]+$/;

/** The host of an `http(s)` URL as the router reads it, ASCII lower-cased; null otherwise. */
export function urlHost(url: string): string | null {
  const rest = url.startsWith("https://") ? url.slice(8) : url.startsWith("http://") ? url.slice(7) : null;
  if (rest === null) return null;
  const authority = rest.split(/[/?#]/)[0];
  const afterAt = authority.slice(authority.lastIndexOf("@") + 1);
  return asciiLower(afterAt.split(":")[0]);
}

export class LinkPolicy {
  readonly hosts: readonly string[];

  /** `hosts`: a list, or a comma-separated string as `ANSWER_LINK_HOSTS` is. */
  constructor(hosts: string | readonly string[] = DEFAULT_LINK_HOSTS) {
    const list = typeof hosts === "string" ? hosts.split(",") : hosts;
    this.hosts = list.map((h) => asciiLower(h.trim())).filter((h) => h !== "");
  }

  private listed(host: string): boolean {
    return (
      DNS_NAME.test(host) &&
      this.hosts.some((allowed) => (allowed.startsWith(".") ? host === allowed.slice(1) || host.endsWith(allowed) : host === allowed))
    );
  }

  /** The router's rule, character for character. */
  allows(url: string): boolean {
    if (!url.startsWith("https://") || UNSAFE.test(url)) return false;
    const host = urlHost(url);
    return host !== null && this.listed(host);
  }

  /** The URL to put in an `href`, or null: allowed by the rule, and the host the browser
   * reads from it is on the list too (so no difference between the two parsers can lead
   * elsewhere). */
  href(raw: string): string | null {
    if (!this.allows(raw)) return null;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return null;
    }
    return url.protocol === "https:" && this.listed(url.hostname) ? url.href : null;
  }
}
