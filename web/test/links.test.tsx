import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { render } from "preact";
import { afterEach, describe, expect, it } from "vitest";
import { FlightTable } from "../src/components/FlightTable";
import { DEFAULT_LINK_HOSTS, LinkPolicy, urlHost } from "../src/links";
import { Links, Markdown } from "../src/markdown";

let root: HTMLElement | undefined;
function mount(node: preact.ComponentChild, policy?: LinkPolicy): HTMLElement {
  root = document.createElement("div");
  document.body.append(root);
  render(policy ? <Links.Provider value={policy}>{node}</Links.Provider> : node, root);
  return root;
}
afterEach(() => {
  if (root) render(null, root);
  root?.remove();
  root = undefined;
});

/** `DEFAULT_LINK_HOSTS` as the Rust source spells it: one string literal, its lines joined
 * by `\` line continuations (which drop the line break and the next line's indent). */
function rustDefault(): string {
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../shared/guardrails/src/links.rs");
  const source = readFileSync(file, "utf8");
  const m = /pub const DEFAULT_LINK_HOSTS: &str =\s*"((?:[^"\\]|\\[\s\S])*)"\s*;/.exec(source);
  if (!m) throw new Error("shared/guardrails/src/links.rs: no `pub const DEFAULT_LINK_HOSTS: &str = \"…\";` found");
  const value = m[1].replace(/\\\r?\n[ \t\r\n]*/g, "");
  if (value.includes("\\")) throw new Error(`DEFAULT_LINK_HOSTS has an escape this test does not read: ${value}`);
  return value;
}

/** Every href in the rendered DOM, from any element. */
const hrefs = (el: HTMLElement) => [...el.querySelectorAll("[href]")].map((a) => a.getAttribute("href"));

describe("the link policy", () => {
  it("has the router's default list (shared/guardrails/src/links.rs), character for character", () => {
    expect(DEFAULT_LINK_HOSTS).toBe(rustDefault());
    expect(new LinkPolicy().hosts).toEqual(rustDefault().split(","));
  });

  it("reads hosts as the router does", () => {
    expect(urlHost("https://seats.aero@evil.example:8443/x")).toBe("evil.example");
    expect(urlHost("https://WWW.United.com/a?b#c")).toBe("www.united.com");
    expect(urlHost("ftp://x")).toBeNull();
  });

  // The router's own cases (links.rs, only_https_links_to_listed_hosts_pass), and more.
  const policy = new LinkPolicy(["seats.aero", ".united.com"]);
  it.each([
    "https://seats.aero/search?x=1",
    "https://SEATS.AERO/a",
    "https://www.united.com/book",
    "https://united.com/",
    "https://a.b.united.com/x#y",
  ])("allows %s", (url) => {
    expect(policy.allows(url)).toBe(true);
    expect(policy.href(url)).not.toBeNull();
  });

  it.each([
    "http://seats.aero/a",
    "http://www.united.com/",
    "javascript:alert(1)",
    "JavaScript:alert(1)//https://seats.aero",
    "https://seats.aero.evil.example/a",
    "https://evil.example/?seats.aero",
    "https://seats.aero@evil.example/",
    "https://notunited.com/",
    "https://united.com.evil.example/",
    "https://seats.aero\\@evil.example",
    "https://seats.aero/a b",
    "https://seats.aero/a\tb",
    "https://seats.aero/\u0000",
    "https://seats.aero/\u0085",
    "https://seats.aero/\u00a0",
    "data:text/html,hi",
    "HTTPS://seats.aero/",
    " https://seats.aero/",
    "https://united.com:evil.example/", // the router reads united.com; a browser refuses it
    "https://united%2ecom/",
    "https://seats.aero%2f@evil.example/",
    "https://evil%2eexample.united.com/",
    "https://ünited.com/",
    "https://",
  ])("refuses %s", (url) => {
    expect(policy.href(url)).toBeNull();
  });

  it("takes a host list as config.json or ANSWER_LINK_HOSTS gives it", () => {
    expect(new LinkPolicy(" Example.COM , .partner.example,, ").hosts).toEqual(["example.com", ".partner.example"]);
    const exact = new LinkPolicy(["example.com"]);
    expect(exact.allows("https://example.com/")).toBe(true);
    expect(exact.allows("https://www.example.com/")).toBe(false); // no dot, no subdomains
    expect(new LinkPolicy([]).allows("https://seats.aero/")).toBe(false);
  });
});

describe("links in an answer", () => {
  const text = [
    "Inline: [Seats.aero](https://seats.aero/search) and [elsewhere](https://evil.example/x).",
    "Autolinks: <https://www.united.com/book> and <https://evil.example/y>.",
    "Bare: https://united.com/a and https://evil.example/z and http://seats.aero/plain.",
    "Script: [click](javascript:alert(1)) <javascript:alert(2)>.",
    "Sneaky: https://seats.aero.evil.example/ and https://seats.aero@evil.example/.",
  ].join("\n\n");

  it("become links only where the policy allows, in every form", () => {
    const el = mount(<Markdown text={text} />);
    expect(hrefs(el)).toEqual(["https://seats.aero/search", "https://www.united.com/book", "https://united.com/a"]);
    for (const a of el.querySelectorAll("a")) expect(a.rel).toBe("noopener noreferrer");
    // The others stay plain text, readable and not clickable.
    const body = el.textContent!;
    expect(body).toContain("elsewhere");
    expect(body).toContain("https://evil.example/y");
    expect(body).toContain("https://evil.example/z");
    expect(body).toContain("http://seats.aero/plain");
    expect(body).toContain("https://seats.aero@evil.example/");
    expect(el.innerHTML).not.toContain("evil.example/x");
    expect(el.innerHTML).not.toMatch(/javascript:alert\(1\)"/);
  });

  it("follow config.json's linkHosts when it has them", () => {
    const el = mount(<Markdown text={text} />, new LinkPolicy(["evil.example"]));
    expect(hrefs(el)).toEqual([
      "https://evil.example/x",
      "https://evil.example/y",
      "https://evil.example/z",
      "https://seats.aero@evil.example/", // its host is evil.example
    ]);
  });

  it("in flight tables too", () => {
    const flight = { id: "1", airline: "UA", bookingLinks: { United: "https://www.united.com/x", Other: "https://evil.example/b", Plain: "http://www.united.com/p" } };
    const el = mount(<FlightTable kind="award" flights={[flight]} />);
    expect(hrefs(el)).toEqual(["https://www.united.com/x"]);
  });
});
