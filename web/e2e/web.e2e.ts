// The web chat in a real Chromium against the local stack (`make dev`, then
// `make web-e2e`): the page, its server's proxy, the chat-router, the tools and the offline
// LLM stand-in, nothing faked in between. A screenshot of each step goes to WEB_E2E_DIR.
//
// The tests run as a user of their own (a token minted like the page server's, pasted into
// the page's session), so they never touch a developer's chats or rate limits; the first
// test checks the page's own dev sign-in without sending anything.

import { createHmac } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const WEB_URL = process.env.WEB_URL ?? "http://127.0.0.1:5173/";
const SECRET_FILE = process.env.JWT_SECRET_FILE ?? path.resolve("..", ".local/run/jwt-secret");
const SHOTS = process.env.WEB_E2E_DIR ?? path.resolve("..", ".local/run/web-e2e");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const USER = `web-e2e-${Date.now().toString(36)}`;

function token(user: string): string {
  const secret = readFileSync(SECRET_FILE, "utf8").trim();
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const head = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ sub: user, iss: "http://127.0.0.1/dev", aud: "local-dev", iat: now, exp: now + 3600 })}`;
  return `${head}.${createHmac("sha256", secret).update(head).digest("base64url")}`;
}

/** A date the stand-in reads and the flight search accepts, 90 to 239 days ahead: another
 * run's search of the same day (the demo, the smoke and contract checks search 60 days
 * ahead) would come from the result cache at once. */
const DATE = new Date(Date.now() + (90 + Math.floor(Math.random() * 150)) * 86_400_000).toISOString().slice(0, 10);
const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)];
/** And a route of its own, for the same reason. */
const [FROM, FROM_CODE] = pick([["Frankfurt", "FRA"], ["Munich", "MUC"], ["Vienna", "VIE"], ["Zurich", "ZRH"]]);
const [TO] = pick([["New York"], ["Boston"], ["Chicago"], ["Tokyo"]]);
const FLIGHT_QUESTION = `Business class from ${FROM} to ${TO} on ${DATE}`;

/** The fake Seats.aero of the stack (FAKES_PORT_BASE + 2), if it runs one. */
const SEATSAERO_FAKE = process.env.SEATSAERO_FAKE_URL;

/** Asks the fake Seats.aero to take its time with the next search, so the page shows the
 * running card for a while (tools/dev-stack: `/__fake/latency`). With a real Seats.aero it
 * is slow enough on its own. */
async function slowNextAwardSearch(ms: number): Promise<void> {
  if (!SEATSAERO_FAKE) return;
  try {
    await fetch(`${SEATSAERO_FAKE}/__fake/latency`, { method: "POST", body: JSON.stringify({ delay_ms: ms, searches: 1 }) });
  } catch {
    // no fake there: the real service answers
  }
}

/** How long a poll waits: a knowledge-base answer streams for seconds. */
const PATIENT = { timeout: 30_000, interval: 100 };

let browser: Browser;
let context: BrowserContext;
let page: Page;
let flightChatUrl = "";

async function shot(name: string, target: Page = page) {
  await target.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

/** Records every status each tool card shows, however briefly, from the page's start. */
function recordCardStatuses() {
  const seen: string[] = [];
  (window as unknown as { __cardStatuses: string[] }).__cardStatuses = seen;
  new MutationObserver((records) => {
    for (const r of records) {
      const nodes = r.type === "attributes" ? [r.target] : [...r.addedNodes];
      for (const n of nodes) {
        if (!(n instanceof Element)) continue;
        for (const card of [n, ...n.querySelectorAll(".tool-card")]) {
          if (card.classList.contains("tool-card")) seen.push(`${card.getAttribute("data-tool")}:${card.getAttribute("data-status")}`);
        }
      }
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-status"] });
}

async function newPage(viewport = { width: 1280, height: 900 }, locale = "en-GB", user = USER): Promise<Page> {
  context = await browser.newContext({ viewport, locale, timezoneId: "Europe/Berlin" });
  const bearer = token(user);
  await context.addInitScript((t: string) => sessionStorage.setItem("chat.bearer", t), bearer);
  await context.addInitScript(recordCardStatuses);
  const p = await context.newPage();
  p.on("pageerror", (e) => console.error(`[page error] ${e.message}`));
  return p;
}

async function send(text: string, target: Page = page) {
  const box = target.locator("#composer-input"); // labelled in the page's language
  await box.fill(text);
  await box.press("Enter");
}

/** Words the page must never show a user: status words, tool ids, texts written for the
 * model, setting names. The debug view (`?debug`) is where ids and internals go. */
const INTERNAL_WORDS = [
  "succeeded",
  "deduplicated",
  "(cached)",
  "search_flights",
  "search_knowledge_base",
  "ask_gpt",
  "[rejected]",
  "Correct them",
  "Invalid arguments",
  "OPENAI_API_KEY",
  "SEATSAERO_API_KEY",
  "DUFFEL_TOKEN",
  "STACK_NOTICE",
  "agent:",
  "llm_error",
  " messages ·",
];

async function assertNoInternalWords(target: Page = page) {
  const text = await target.evaluate(() => document.body.innerText);
  for (const word of INTERNAL_WORDS) expect(text, `"${word}" on screen`).not.toContain(word);
}

/** The newest turn section of the page. */
const lastTurn = (target: Page = page) => target.locator(".live .turn").last();

/** The first flight row's booking control (its first link, else its cell) lies inside the
 * window and inside the visible part of its table, whose wrapper is not scrolled: no
 * sideways scrolling needed to book. */
async function assertBookOnScreen(card: Locator) {
  const at = await card.locator("table.flights").first().evaluate((table) => {
    const wrap = table.closest(".table-wrap") ?? table;
    const cell = table.querySelector("tbody tr td.book");
    const control = cell?.querySelector("a") ?? cell;
    if (!control) return null;
    const w = wrap.getBoundingClientRect();
    const b = control.getBoundingClientRect();
    return { scrollLeft: wrap.scrollLeft, left: b.left, right: b.right, wrapLeft: w.left, wrapRight: w.right, inner: window.innerWidth };
  });
  expect(at, "a booking cell in the first row").not.toBeNull();
  expect(at!.scrollLeft).toBe(0);
  expect(at!.left).toBeGreaterThanOrEqual(Math.max(0, at!.wrapLeft) - 1);
  expect(at!.right).toBeLessThanOrEqual(Math.min(at!.inner, at!.wrapRight) + 1);
}

/** Nothing of the page is wider than the window: not the page, not the conversation (which
 * would scroll sideways inside), no tool card (nor anything sticking out of one), no flight
 * card, no cell of one (nor its text cut off inside it). The page's own scroll width alone
 * would not tell: the page never scrolls, its conversation does. */
async function assertFitsWidth(target: Page = page) {
  const fit = await target.evaluate(() => {
    const box = (e: Element) => e.getBoundingClientRect();
    const conversation = document.querySelector(".conversation")!;
    return {
      inner: window.innerWidth,
      scrollWidth: document.documentElement.scrollWidth,
      conversation: conversation.scrollWidth - conversation.clientWidth,
      cards: [...document.querySelectorAll(".tool-card")].map((c) => ({ left: box(c).left, right: box(c).right, overflow: c.scrollWidth - c.clientWidth })),
      rows: [...document.querySelectorAll("table.flights tbody tr")].map((r) => ({ left: box(r).left, right: box(r).right, width: box(r).width })),
      cells: [...document.querySelectorAll<HTMLElement>("table.flights tbody td")]
        .filter((td) => getComputedStyle(td).display !== "none")
        .map((td) => ({
          name: td.className,
          right: box(td).right,
          // the card (or, for offered flights outside one, the conversation) it belongs to
          frame: box(td.closest(".tool-card") ?? conversation).right,
          cut: td.scrollWidth - td.clientWidth,
        })),
    };
  });
  expect(fit.scrollWidth).toBeLessThanOrEqual(fit.inner);
  expect(fit.conversation, "the conversation scrolls sideways").toBeLessThanOrEqual(0);
  expect(fit.rows.length).toBeGreaterThan(0);
  for (const c of fit.cards) {
    expect(c.right, "a tool card").toBeLessThanOrEqual(fit.inner);
    expect(c.overflow, "something sticks out of a tool card").toBeLessThanOrEqual(1);
  }
  for (const r of fit.rows) {
    expect(r.width, "a flight card").toBeLessThanOrEqual(fit.inner);
    expect(r.left, "a flight card").toBeGreaterThanOrEqual(0);
    expect(r.right, "a flight card").toBeLessThanOrEqual(fit.inner);
  }
  for (const c of fit.cells) {
    expect(c.right, c.name).toBeLessThanOrEqual(fit.inner);
    expect(c.right, `${c.name} sticks out of its card`).toBeLessThanOrEqual(c.frame + 1);
    expect(c.cut, `${c.name}: text cut off`).toBeLessThanOrEqual(1);
  }
}

/** A fare alert the offline stand-in makes (`create_fare_alert`, which waits for approval). */
const ALERT_QUESTION = "Alert me when business class FRA to JFK in March drops below 60,000 miles";

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-component-update"],
  });
});

afterAll(async () => {
  await browser?.close();
});

describe("the web chat against the local stack", () => {
  it("signs in with the stack's dev token and lists the dev user's chats", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await ctx.newPage();
    await p.goto(WEB_URL);
    await expect.poll(() => p.locator(".who").textContent(), PATIENT).toContain("local dev user dev-user");
    await p.waitForLoadState("networkidle");
    expect(await p.locator(".sidebar .tool-error").count()).toBe(0);
    await shot("01-dev-sign-in", p);
    await ctx.close();
  });

  it("shows a flight search's running card, then the flight tables, then the streamed answer", async () => {
    page = await newPage();
    await page.goto(WEB_URL);
    await slowNextAwardSearch(2500);
    await send(FLIGHT_QUESTION);
    const card = page.locator('.tool-card[data-tool="search_flights"]');
    await page.locator('.tool-card[data-tool="search_flights"][data-status="running"]').waitFor();
    await shot("02-flight-running");
    await page.locator('.tool-card[data-tool="search_flights"][data-status="succeeded"] table.flights').first().waitFor();
    await lastTurn().locator(".msg.assistant").waitFor();
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");

    const statuses = await page.evaluate(() => (window as unknown as { __cardStatuses: string[] }).__cardStatuses);
    const flightStatuses = statuses.filter((s) => s.startsWith("search_flights:"));
    expect(flightStatuses[0]).toBe("search_flights:running");
    expect(flightStatuses.at(-1)).toBe("search_flights:succeeded");
    // In the page's order: the card (with its tables) before the answer's text.
    const kinds = await lastTurn().locator(":scope > *").evaluateAll((els) => els.map((e) => e.className));
    expect(kinds.findIndex((k) => k.includes("tool-card"))).toBeLessThan(kinds.findIndex((k) => k.includes("assistant")));
    const answer = await lastTurn().locator(".msg.assistant").textContent();
    expect(answer).toContain(FROM_CODE);
    expect(await card.locator("table.flights tbody tr").count()).toBeGreaterThan(0);
    expect(await card.locator(".duration").textContent()).toMatch(/\d/);
    // The answer does not repeat the table: it names rows by the numbers the table shows.
    expect(answer).not.toMatch(/^\s*\d+\. /m);
    const named = [...(answer ?? "").matchAll(/#(\d+)/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(0);
    const shown = await card.locator("tbody td.option").allTextContents();
    for (const n of named) expect(shown).toContain(n);
    // Every award row names its programme, and each itinerary is one row.
    const award = card.locator('table[data-kind="award"]');
    expect(await award.locator("thead th.option .visually-hidden").textContent()).toBe("Number");
    expect(await award.locator("thead th").nth(1).textContent()).toBe("Programme");
    const programmes = await award.locator("tbody td.programme").allTextContents();
    expect(programmes.length).toBeGreaterThan(0);
    expect(programmes.every((p) => p.trim() !== "" && p.trim() !== "—")).toBe(true);
    const itineraries = await award
      .locator("tbody tr")
      .evaluateAll((rows) => rows.map((r) => `${r.querySelector("td.carrier")?.textContent} ${r.querySelector("td.route")?.textContent}`));
    expect(new Set(itineraries).size).toBe(itineraries.length);

    // At 1280 × 900 Book is on screen without scrolling sideways.
    await assertBookOnScreen(card);

    // The table sorts; the card speaks plain words.
    await card.locator('table[data-kind="award"] button[data-sort="duration"]').click();
    expect(await card.locator('table[data-kind="award"] th[aria-sort="ascending"]').textContent()).toContain("Duration");
    expect(await card.locator(".badge").textContent()).toBe("Done");
    expect(await card.locator(".tool-name").textContent()).toBe("Flight search");
    expect(await card.locator("summary", { hasText: "Arguments" }).count()).toBe(0);
    await assertNoInternalWords();
    await shot("03-flight-done");
    flightChatUrl = page.url();
    expect(flightChatUrl).toMatch(/#\/chat\/[0-9A-Z]+$/);
  });

  it("shows a knowledge-base answer with its sources", async () => {
    await send("How do miles upgrades work?");
    const card = lastTurn().locator('.tool-card[data-tool="search_knowledge_base"]');
    await card.locator(".sources li").first().waitFor();
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await card.getAttribute("data-status")).toBe("succeeded");
    expect(await card.locator(".sources li").count()).toBeGreaterThan(0);
    await card.locator(".sources").scrollIntoViewIfNeeded();
    await shot("04-kb-sources");
  });

  it("shows the same chat, its history and stored tool results after a reload", async () => {
    await page.reload();
    const history = page.locator(".history");
    await history.locator('.tool-card[data-tool="search_flights"][data-status="succeeded"] table.flights').first().waitFor();
    expect(page.url()).toBe(flightChatUrl);
    expect(await history.locator(".msg.user").first().textContent()).toContain(FLIGHT_QUESTION);
    expect(await history.locator('.tool-card[data-tool="search_knowledge_base"] .sources li').count()).toBeGreaterThan(0);
    expect(await history.locator(".tool-card .duration").count()).toBeGreaterThan(0);
    const current = page.locator('.chat-list a[aria-current="page"]');
    expect(await current.textContent()).toContain(`Business class from ${FROM}`);
    await shot("05-reloaded");
  });

  it("follows a turn through a reload (a lost page does not stop it), and Stop cancels it", async () => {
    await page.locator(".new-chat").click();
    const started = Date.now();
    await send("Tell me a long story #slow");
    await lastTurn().locator(".msg.assistant").waitFor(); // it streams, slowly
    const turnId = await lastTurn().getAttribute("data-turn-id");
    await page.reload();
    // The page follows the same turn from its start; the router kept it going meanwhile.
    await page.locator(`.live .turn[data-turn-id="${turnId}"] .msg.assistant`).waitFor();
    expect(await lastTurn().locator(".msg.user").textContent()).toContain("Tell me a long story");
    await shot("06-resumed-after-reload");
    const stop = page.getByRole("button", { name: "Stop" });
    await expect.poll(() => stop.isEnabled(), PATIENT).toBe(true);
    await stop.click();
    await expect.poll(() => lastTurn().getAttribute("data-phase"), { timeout: 15_000 }).toBe("done");
    // What it had said stays, marked as stopped; a stop is no error.
    expect(await lastTurn().locator(".error-box").count()).toBe(0);
    const kept = (await lastTurn().locator(".msg.assistant .md").last().textContent()) ?? "";
    expect(kept.length).toBeGreaterThan(0);
    expect(kept).not.toBe("Stopped at your request.");
    expect(await lastTurn().locator(".msg.assistant .stopped-note").textContent()).toBe("Stopped");
    // The slow answer alone takes about ten seconds; the stop ended it well before.
    expect(Date.now() - started).toBeLessThan(9_000);
    await shot("07-stopped");
  });

  it("shows an upstream failure with its code, and retry works", async () => {
    await page.locator(".new-chat").click();
    await send(`Hello #fail-once ${Date.now()}`);
    const error = lastTurn().locator(".error-box");
    await error.waitFor();
    expect(await error.getAttribute("data-code")).toBe("llm_error");
    expect(await error.textContent()).toContain("The assistant could not be reached.");
    await shot("08-upstream-error");
    await error.getByRole("button", { name: "Retry" }).click();
    await expect.poll(() => page.locator(".live .turn").count(), PATIENT).toBe(2);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await lastTurn().locator(".msg.assistant").textContent()).toContain("offline stand-in");
    await shot("09-retried");
  });

  it("shows ids, status words and a call's arguments in the debug view only", async () => {
    await page.goto(`${WEB_URL}?debug${new URL(flightChatUrl).hash}`);
    const card = page.locator('.history .tool-card[data-tool="search_flights"]').first();
    await card.locator("table.flights").first().waitFor(PATIENT);
    expect(await card.locator(".debug-line").textContent()).toMatch(/succeeded · .*tc_[0-9a-f]{32}/);
    await card.locator("summary", { hasText: "Arguments" }).click();
    await expect.poll(() => card.locator("pre.args").textContent(), PATIENT).toContain(`"origin": "${FROM_CODE}"`);
    expect(await page.locator(".composer select").count()).toBe(1); // the agent choice
    await shot("09b-debug-view");
    await page.goto(`${WEB_URL}${new URL(flightChatUrl).hash}`);
    await page.locator(".history .tool-card table.flights").first().waitFor(PATIENT);
    expect(await page.locator(".composer select").count()).toBe(0);
    expect(await page.locator(".debug-line").count()).toBe(0);
    await assertNoInternalWords();
    await context.close();
  });

  it("answers each turn in its message's language, labels and formats included, in an English and a German browser", async () => {
    // An English browser, a German message: a German turn in an English frame.
    page = await newPage(undefined, "en-GB", `${USER}-lang`);
    await page.goto(WEB_URL);
    const date = new Date(Date.parse(DATE) + 86_400_000).toISOString().slice(0, 10);
    await send(`Business Class von ${FROM} nach ${TO} am ${date} bitte`);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await lastTurn().getAttribute("lang")).toBe("de");
    const card = lastTurn().locator('.tool-card[data-tool="search_flights"]');
    expect(await card.locator(".badge").textContent()).toBe("Fertig");
    expect(await card.locator(".tool-name").textContent()).toBe("Flugsuche");
    expect(await card.locator("table.flights caption").first().textContent()).toContain("Prämienflüge (Meilen)");
    expect(await card.locator('table[data-kind="award"] thead th.option .visually-hidden').textContent()).toBe("Nummer");
    expect(await card.locator('table[data-kind="award"] thead th').nth(1).textContent()).toBe("Programm");
    const prices = (await card.locator("td.price").allTextContents()).join(" ");
    expect(prices).toMatch(/Meilen/);
    expect(prices).not.toMatch(/\bUSD\b|\$\d/); // "41,74 $", never "41,74 USD" or "$41.74"
    const stops = (await card.locator("td.leg-stops").allTextContents()).join(" ");
    expect(stops).not.toMatch(/\bstops?\b/);
    // Dates and durations in German: "26. Feb. 2027", "8 Std. 15 Min.", no ISO dates.
    const dates = await card.locator("td.route .date").allTextContents();
    expect(dates.length).toBeGreaterThan(0);
    for (const d of dates) expect(d).toMatch(/^\d{1,2}\.\s\S+\s\d{4}$/);
    const durations = (await card.locator("td.leg-duration").allTextContents()).join(" ");
    expect(durations).toMatch(/Std\.|Min\./);
    expect(durations).not.toMatch(/\d+h\b|\d+m\b/);
    await assertBookOnScreen(card);
    expect(await lastTurn().locator(".msg.assistant").textContent()).toMatch(/Ich habe|gefunden|Flüge/);
    expect(await page.locator(".new-chat").textContent()).toBe("+ New chat"); // the frame: English
    await shot("11-german-turn-english-browser");
    // Then an English question in the same chat: an English turn.
    await send("How do miles upgrades work?");
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await lastTurn().getAttribute("lang")).toBe("en");
    expect(await lastTurn().locator(".tool-card .tool-name").first().textContent()).toBe("Knowledge base");
    expect(await lastTurn().locator(".tool-card .sources h4").first().textContent()).toBe("Sources");
    const chatUrl = page.url();
    await context.close();

    // A German browser: the frame is German; an English message gets an English turn; the
    // reloaded chat keeps each turn's language.
    page = await newPage(undefined, "de-DE", `${USER}-lang`);
    await page.goto(WEB_URL);
    expect(await page.locator(".new-chat").textContent()).toBe("+ Neuer Chat");
    expect(await page.evaluate(() => document.documentElement.lang)).toBe("de");
    await send(`Business class from ${FROM} to ${TO} on ${date}`);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await lastTurn().getAttribute("lang")).toBe("en");
    expect(await lastTurn().locator(".tool-card .badge").first().textContent()).toBe("Done");
    await send("danke");
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await lastTurn().getAttribute("lang")).toBe("en"); // "danke" alone: the chat's language
    await shot("12-english-turn-german-browser");
    await page.goto(chatUrl);
    const turns = page.locator(".history .history-turn");
    await turns.first().locator(".tool-card").first().waitFor(PATIENT);
    expect(await turns.first().getAttribute("lang")).toBe("de");
    expect(await turns.first().locator(".tool-card .tool-name").first().textContent()).toBe("Flugsuche");
    expect(await turns.nth(1).getAttribute("lang")).toBe("en");
    await shot("13-reloaded-per-turn-language");
    await assertNoInternalWords();
    await context.close();
  });

  it("finds the German document that answers an English question (local hybrid search)", async () => {
    const WAITLIST_TITLE = "Wartelisten für Prämienflüge";
    page = await newPage(undefined, "en-GB", `${USER}-kb`);
    await page.goto(WEB_URL);
    await send("Can I queue for a sold-out redemption and get confirmed if someone cancels?");
    const card = lastTurn().locator('.tool-card[data-tool="search_knowledge_base"]');
    await card.locator(".sources li").first().waitFor(PATIENT);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    // Sources by their titles, the German one marked as German; never a document id.
    const sources = await card.locator(".sources li strong").allTextContents();
    expect(sources).toContain(WAITLIST_TITLE);
    expect(await card.locator(".sources").textContent()).not.toContain("warteliste-fuer-praemienfluege");
    expect(await card.locator(".sources li", { hasText: WAITLIST_TITLE }).textContent()).toContain("(in German)");
    await card.locator(".sources").scrollIntoViewIfNeeded();
    await shot("19-cross-lingual-kb");
    await context.close();
  });

  it("keeps the page in place after 20 turns and wheel-scrolling past the end", async () => {
    // A user of its own: 20 turns are a minute's allowance (USER_TURNS_PER_MINUTE).
    page = await newPage(undefined, "en-GB", `${USER}-long`);
    await page.goto(WEB_URL);
    for (let i = 0; i < 20; i++) {
      await send(`thanks ${i}`);
      await expect.poll(() => page.locator('.live .turn[data-phase="done"]').count(), PATIENT).toBe(i + 1);
    }
    await page.mouse.move(640, 400);
    for (let i = 0; i < 10; i++) await page.mouse.wheel(0, 2000);
    await page.waitForTimeout(300);
    const page_ = await page.evaluate(() => ({
      scrollTop: document.scrollingElement?.scrollTop ?? -1,
      scrollHeight: document.documentElement.scrollHeight,
      innerHeight,
      composerBottom: document.querySelector(".composer")?.getBoundingClientRect().bottom ?? -1,
      headerTop: document.querySelector(".top")?.getBoundingClientRect().top ?? -1,
    }));
    expect(page_.scrollTop).toBe(0);
    expect(page_.scrollHeight).toBeLessThanOrEqual(page_.innerHeight);
    expect(page_.headerTop).toBe(0);
    expect(page_.composerBottom).toBeLessThanOrEqual(page_.innerHeight);
    expect(await page.locator('link[rel="icon"]').count()).toBe(1);
    expect(await page.locator(".top h1").evaluate((h) => getComputedStyle(h).textOverflow)).toBe("ellipsis");
    await shot("14-after-20-turns");
    await context.close();
  });

  it("works with the keyboard alone on a phone-sized screen, the answer in a live region", async () => {
    page = await newPage({ width: 390, height: 844 });
    await page.goto(WEB_URL);
    await page.getByLabel("Message", { exact: true }).waitFor(); // the page is up
    await page.keyboard.press("Tab"); // the skip link
    expect(await page.evaluate(() => document.activeElement?.textContent)).toContain("Skip to the message box");
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("composer-input");
    await page.keyboard.type("Hello there");
    await page.keyboard.press("Enter");
    const live = page.locator('[aria-live="polite"]');
    await expect.poll(() => live.locator(".turn").last().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await live.locator(".msg.assistant").textContent()).toContain("Hello!");
    expect(await live.getAttribute("aria-busy")).toBe("false");
    // The chat list is behind a button on a small screen, reachable by keyboard too.
    const menu = page.getByRole("button", { name: "Chats" });
    await menu.focus();
    await page.keyboard.press("Enter");
    expect(await menu.getAttribute("aria-expanded")).toBe("true");
    await page.locator(".chat-list a").first().waitFor();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await shot("10-phone-keyboard");
    await context.close();
  });

  it("copies an answer, regenerates it, renames and deletes the chat", async () => {
    page = await newPage(undefined, "en-GB", `${USER}-manage`);
    await context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await page.goto(WEB_URL);
    await send("How do fuel surcharges work?");
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    const answer = lastTurn().locator(".msg.assistant").last();
    const text = (await answer.locator(".md").textContent()) ?? "";
    await answer.getByRole("button", { name: "Copy" }).click();
    await answer.getByRole("button", { name: "Copied" }).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    // The answer as written (Markdown), of which the page shows the rendered text.
    expect(copied.length).toBeGreaterThanOrEqual(text.trim().length * 0.8);
    expect(copied).toContain(text.trim().slice(0, 30));

    await answer.getByRole("button", { name: "Regenerate" }).click();
    await expect.poll(() => page.locator(".live .turn").count(), PATIENT).toBe(2);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await lastTurn().locator(".msg.user").textContent()).toContain("How do fuel surcharges work?");
    expect(await page.locator(".live .turn").first().getByRole("button", { name: "Regenerate" }).count()).toBe(0); // the latest only
    await shot("16-copied-and-regenerated");

    const row = page.locator('.chat-list li:has(a[aria-current="page"])');
    await row.getByRole("button", { name: "Rename" }).click();
    const input = page.getByLabel("New title of the chat");
    await input.fill("Fuel surcharges, explained");
    await input.press("Enter");
    await page.locator(".chat-list a", { hasText: "Fuel surcharges, explained" }).waitFor(PATIENT);
    expect(await page.locator(".chat-title").textContent()).toBe("Fuel surcharges, explained");
    const chatUrl = page.url();
    await page.reload();
    await page.locator('.chat-list a[aria-current="page"]', { hasText: "Fuel surcharges, explained" }).waitFor(PATIENT);
    await shot("17-renamed");

    await row.getByRole("button", { name: "Delete" }).click();
    await row.getByRole("group").getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => page.locator(".chat-list a", { hasText: "Fuel surcharges" }).count(), PATIENT).toBe(0);
    expect(new URL(page.url()).hash).toBe("#/");
    await page.goto(chatUrl);
    await page.locator(".conversation .error-box").waitFor(PATIENT);
    expect(await page.locator(".conversation .error-box").textContent()).toContain("The chat could not be loaded");
    await shot("18-deleted");
    await context.close();
  });

  it("shows flights as cards on a phone, price and booking on screen", async () => {
    page = await newPage({ width: 390, height: 844 });
    await page.goto(WEB_URL);
    await send(FLIGHT_QUESTION);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    const row = lastTurn().locator("table.flights tbody tr").first();
    expect(await row.evaluate((r) => getComputedStyle(r).display)).toBe("grid");
    for (const cell of ["td.price", "td.route", "td.book"]) {
      const box = await row.locator(cell).boundingBox();
      expect(box, cell).not.toBeNull();
      expect(box!.x + box!.width, cell).toBeLessThanOrEqual(390);
    }
    // The route on one or two lines (it wrapped into eight in a table), the price beside
    // the carrier on at most two lines, broken only between its parts (miles / + taxes).
    expect((await row.locator("td.route").boundingBox())!.height).toBeLessThan(50);
    const price = row.locator("td.price");
    const lineHeight = await price.evaluate((td) => parseFloat(getComputedStyle(td).lineHeight) || 24);
    expect((await price.boundingBox())!.height).toBeLessThan(2 * lineHeight + 20);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await row.scrollIntoViewIfNeeded();
    await shot("15-phone-flight-cards");
    await context.close();
  });

  it("fits flight results on a 360 px phone in English and German, and on a 1024 px screen in German (the widest table): nothing wider than the screen", async () => {
    for (const [width, locale, lang, question] of [
      [360, "en-GB", "en", `Business class from ${FROM} to ${TO} on ${DATE}`],
      [360, "de-DE", "de", `Business Class von ${FROM} nach ${TO} am ${DATE} bitte`],
      [1024, "de-DE", "de", `Business Class von ${FROM} nach ${TO} am ${DATE} bitte`],
    ] as const) {
      page = await newPage({ width, height: 800 }, locale, `${USER}-narrow-${width}-${lang}`);
      await page.goto(WEB_URL);
      await send(question);
      await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
      expect(await lastTurn().getAttribute("lang")).toBe(lang);
      await lastTurn().locator("table.flights tbody tr").first().waitFor();
      await assertFitsWidth();
      // Price, stops and booking of each card in full on screen.
      const row = lastTurn().locator("table.flights tbody tr").first();
      for (const cell of ["td.price", "td.leg-stops", "td.book"]) {
        const box = await row.locator(cell).boundingBox();
        expect(box, cell).not.toBeNull();
        expect(box!.x + box!.width, cell).toBeLessThanOrEqual(width);
      }
      // Nothing scrolls sideways inside the results either.
      for (const wrap of await lastTurn().locator(".table-wrap").all()) {
        expect(await wrap.evaluate((w) => w.scrollWidth - w.clientWidth), `${width} px ${lang}`).toBeLessThanOrEqual(1);
      }
      await row.scrollIntoViewIfNeeded();
      await shot(width === 360 ? `20-phone-360-${lang}` : `27-desktop-${width}-${lang}`);
      await context.close();
    }
  });

  it("chooses a flight with one click: Choose sends “Option 2” as if typed, in English at 1280 px and in German on a 360 px phone", async () => {
    for (const [viewport, locale, lang, question, name, picked] of [
      [{ width: 1280, height: 900 }, "en-GB", "en", `Business class from ${FROM} to ${TO} on ${DATE}`, "Choose flight 2", "You picked option 2"],
      [{ width: 360, height: 800 }, "de-DE", "de", `Business Class von ${FROM} nach ${TO} am ${DATE} bitte`, "Flug 2 auswählen", "Du hast Option 2 gewählt"],
    ] as const) {
      page = await newPage(viewport, locale, `${USER}-choose-${lang}`);
      await page.goto(WEB_URL);
      await send(question);
      await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
      expect(await lastTurn().getAttribute("lang")).toBe(lang);
      // The search's turn, found by position: lastTurn() moves on to the pick's turn.
      const search = page.locator(".live .turn").first();
      const choose = search.getByRole("button", { name, exact: true });
      expect(await choose.count()).toBe(1);
      await expect.poll(() => choose.isEnabled(), PATIENT).toBe(true);
      await choose.scrollIntoViewIfNeeded();
      const box = await choose.boundingBox();
      expect(box, name).not.toBeNull();
      expect(box!.x + box!.width, `${name} on screen without scrolling sideways`).toBeLessThanOrEqual(viewport.width);
      await choose.click();
      await expect.poll(() => page.locator(".live .turn").count(), PATIENT).toBe(2);
      await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
      // Sent as if typed: the user's message of a new turn, in the chat's language.
      expect(await lastTurn().locator(".msg.user p").textContent()).toBe("Option 2");
      expect(await lastTurn().getAttribute("lang")).toBe(lang);
      const answer = lastTurn().locator(".msg.assistant").last();
      expect(await answer.textContent()).toContain(picked);
      if (lang === "en") {
        const links = await answer.locator("a[href]").allTextContents();
        expect(links.some((l) => l.startsWith("Book with")), links.join(" | ")).toBe(true);
      }
      await answer.scrollIntoViewIfNeeded();
      await shot(`26-chose-flight-${lang}`);
      await context.close();
    }
  });

  it("counts a long message's characters near the limit and keeps it unsent above it, in English and German", async () => {
    // 8,100 characters, as if pasted: the router takes 8,000 (MAX_MESSAGE_CHARS).
    const text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(150).slice(0, 8099) + ".";
    for (const [locale, count, tooLong] of [
      ["en-GB", "8,100 / 8,000", "Too long: at most 8,000 characters."],
      ["de-DE", "8.100 / 8.000", "Zu lang: höchstens 8.000 Zeichen."],
    ] as const) {
      page = await newPage(undefined, locale, `${USER}-paste`);
      await page.goto(WEB_URL);
      const box = page.locator("#composer-input");
      await box.waitFor();
      await box.focus();
      await page.keyboard.insertText(text); // what a paste does: one input event
      expect(await page.locator(".composer .char-count").textContent()).toContain(count);
      expect(await page.locator(".composer .too-long").textContent()).toContain(tooLong);
      expect(await page.locator(".composer button.send").isDisabled()).toBe(true);
      await box.press("Enter");
      await page.waitForTimeout(500);
      expect(await page.locator(".live .turn").count()).toBe(0);
      expect(await box.inputValue()).toBe(text);
      await shot(`21-long-message-${locale}`);
      // One character under the limit, the counter stays and sending is possible again.
      await box.fill(text.slice(0, 8000));
      expect(await page.locator(".composer .too-long").count()).toBe(0);
      expect(await page.locator(".composer button.send").isEnabled()).toBe(true);
      await context.close();
    }
  });

  it("shows a denied fare alert as not created, also after a reload, and lists and deletes an approved one in Fare alerts", async () => {
    page = await newPage(undefined, "en-GB", `${USER}-alerts`);
    await page.goto(WEB_URL);
    const open = page.getByRole("button", { name: "Fare alerts", exact: true });
    const panel = page.locator("#alerts-panel");
    await open.click();
    await panel.locator(".empty-alerts").waitFor(PATIENT);
    expect(await panel.locator("h2").textContent()).toBe("Fare alerts");
    expect(await panel.locator(".empty-alerts").textContent()).toContain("No fare alerts yet.");
    await panel.getByRole("button", { name: "Back to the chat" }).click();
    expect(await panel.count()).toBe(0);

    // Denied: the card that waited for approval says "Not created", neutrally, once.
    await send(ALERT_QUESTION);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    const card = page.locator('.tool-card[data-tool="create_fare_alert"]');
    expect(await card.locator(".badge").textContent()).toBe("Waiting for your approval");
    await lastTurn().locator(".approval").getByRole("button", { name: "Deny" }).click();
    await expect.poll(() => page.locator(".live .turn").count(), PATIENT).toBe(2);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await card.count()).toBe(1);
    expect(await card.getAttribute("data-status")).toBe("declined");
    expect(await card.locator(".badge").textContent()).toBe("Not created");
    expect(await card.locator(".tool-error").count()).toBe(0);
    expect(await page.locator(".conversation").textContent()).not.toContain("Didn't work");
    expect(await page.locator(".approval").textContent()).toContain("You declined this.");
    await shot("22-alert-denied");
    await page.reload();
    await page.locator('.history .tool-card[data-tool="create_fare_alert"]').waitFor(PATIENT);
    expect(await card.count()).toBe(1);
    expect(await card.locator(".badge").textContent()).toBe("Not created");
    expect(await page.locator(".conversation").textContent()).not.toContain("Didn't work");
    expect(await page.locator(".history .approval").textContent()).toContain("You declined this.");
    await shot("23-alert-denied-reloaded");

    // Approved, in a new chat: the card says Done; the panel lists the alert and deletes it
    // after a second Delete.
    await page.locator(".new-chat").click();
    await send(ALERT_QUESTION);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    await lastTurn().locator(".approval").getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => page.locator(".live .turn").count(), PATIENT).toBe(2);
    await expect.poll(() => lastTurn().getAttribute("data-phase"), PATIENT).toBe("done");
    expect(await card.locator(".badge").textContent()).toBe("Done");
    await open.click();
    const item = panel.locator(".alert-item", { hasText: "FRA → JFK" });
    await item.waitFor(PATIENT);
    expect(await item.locator(".alert-terms").textContent()).toContain("Business · at most 60,000 miles");
    expect(await item.locator(".alert-found").textContent()).toMatch(/Nothing found yet\.|Found \d+ flights?:/);
    await shot("24-fare-alerts-panel");
    await item.getByRole("button", { name: "Delete" }).click();
    expect(await item.getByRole("group").textContent()).toContain("Delete this fare alert?");
    await item.getByRole("group").getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => panel.locator(".alert-item").count(), PATIENT).toBe(0);
    await context.close();

    // The panel in German.
    page = await newPage(undefined, "de-DE", `${USER}-alerts`);
    await page.goto(WEB_URL);
    await page.getByRole("button", { name: "Preisalarme", exact: true }).click();
    await page.locator("#alerts-panel .empty-alerts").waitFor(PATIENT);
    expect(await page.locator("#alerts-panel h2").textContent()).toBe("Preisalarme");
    expect(await page.locator("#alerts-panel .empty-alerts").textContent()).toContain("Noch keine Preisalarme.");
    await shot("25-fare-alerts-panel-de");
    await context.close();
  });
});
