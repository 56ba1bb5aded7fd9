// A small Markdown renderer that is safe by construction: it builds elements, never HTML
// text, so nothing in an answer can become markup or script. It knows what the answers
// use: paragraphs, headings, lists, code, quotes, rules, **strong**, *emphasis*, `code`
// and links. A URL becomes a link only when the link policy allows it (src/links.ts: the
// router's rule and host list), in each form: `[text](url)`, `<url>` and a bare URL; any
// other stays text, with no href anywhere.

import { type ComponentChildren, createContext, type VNode } from "preact";
import { useContext } from "preact/hooks";
import { LinkPolicy } from "./links";

/** The page's link policy (config.json's `linkHosts`, else the router's default list). */
export const Links = createContext<LinkPolicy>(new LinkPolicy());

export function ExternalLink(props: { href: string; children: ComponentChildren }): VNode {
  return (
    <a href={props.href} target="_blank" rel="noopener noreferrer">
      {props.children}
    </a>
  );
}

const INLINE = /(\*\*|__)(?=\S)([\s\S]*?\S)\1|(\*|_)(?=\S)([\s\S]*?\S)\3|`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)|<(https?:\/\/[^>\s]+)>|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/;

/** Inline markup of one paragraph's text. */
export function inline(text: string, links: LinkPolicy, key = "i"): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  let rest = text;
  let n = 0;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) {
      out.push(rest);
      break;
    }
    if (m.index > 0) out.push(rest.slice(0, m.index));
    const k = `${key}.${n++}`;
    if (m[2] !== undefined) {
      out.push(<strong key={k}>{inline(m[2], links, k)}</strong>);
    } else if (m[4] !== undefined) {
      // `snake_case_words` and `2*3*4` are not emphasis: an underscore needs word edges.
      const before = m.index > 0 ? rest[m.index - 1] : " ";
      if (m[3] === "_" && /\w/.test(before)) {
        out.push(m[0][0]);
        rest = rest.slice(m.index + 1);
        continue;
      }
      out.push(<em key={k}>{inline(m[4], links, k)}</em>);
    } else if (m[5] !== undefined) {
      out.push(<code key={k}>{m[5]}</code>);
    } else if (m[6] !== undefined) {
      const href = links.href(m[7]);
      out.push(
        href ? (
          <ExternalLink key={k} href={href}>
            {inline(m[6], links, k)}
          </ExternalLink>
        ) : (
          m[6]
        ),
      );
    } else {
      const raw = m[8] ?? m[9];
      const href = links.href(raw);
      out.push(href ? <ExternalLink key={k} href={href}>{raw}</ExternalLink> : raw);
    }
    rest = rest.slice(m.index + m[0].length);
  }
  return out;
}

const LIST_ITEM = /^(\s*)([-*+]|\d{1,3}[.)])\s+(.*)$/;

/** Block structure: the text split into paragraphs, headings, lists, code and quotes. */
export function markdown(text: string, links: LinkPolicy): VNode[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const out: VNode[] = [];
  let i = 0;
  let n = 0;
  const key = () => `b${n++}`;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++; // the closing fence (or the end of an unfinished, still streaming one)
      out.push(
        <pre key={key()}>
          <code>{body.join("\n")}</code>
        </pre>,
      );
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      // Answers sit inside a page that has its own h1/h2: their headings start at h3.
      const level = Math.min(6, heading[1].length + 2);
      const Tag = `h${level}` as "h3";
      out.push(<Tag key={key()}>{inline(heading[2].replace(/\s+#+\s*$/, ""), links)}</Tag>);
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push(<hr key={key()} />);
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
      out.push(<blockquote key={key()}>{markdown(body.join("\n"), links)}</blockquote>);
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      const ordered = /\d/.test(item[2]);
      const start = ordered ? parseInt(item[2], 10) : undefined;
      const items: string[][] = [];
      while (i < lines.length) {
        const m = LIST_ITEM.exec(lines[i]);
        if (m && /\d/.test(m[2]) === ordered && m[1].length < 2) {
          items.push([m[3]]);
          i++;
        } else if (items.length && lines[i].trim() && /^\s+/.test(lines[i])) {
          items[items.length - 1].push(lines[i].trim()); // a continuation line of the item
          i++;
        } else {
          break;
        }
      }
      const children = items.map((parts, j) => <li key={j}>{inline(parts.join("\n"), links, `l${j}`)}</li>);
      out.push(
        ordered ? (
          <ol key={key()} start={start !== 1 ? start : undefined}>
            {children}
          </ol>
        ) : (
          <ul key={key()}>{children}</ul>
        ),
      );
      continue;
    }
    const para: string[] = [];
    while (
      i < lines.length &&
      lines[i].trim() &&
      !LIST_ITEM.test(lines[i]) &&
      !/^(#{1,6})\s/.test(lines[i]) &&
      !/^\s*(```|~~~|>)/.test(lines[i])
    ) {
      para.push(lines[i++]);
    }
    const k = key();
    const parts: ComponentChildren[] = [];
    para.forEach((p, j) => {
      if (j > 0) parts.push(<br key={`${k}br${j}`} />);
      parts.push(...inline(p, links, `${k}.${j}`));
    });
    out.push(<p key={k}>{parts}</p>);
  }
  return out;
}

export function Markdown(props: { text: string }): VNode {
  return <div class="md">{markdown(props.text, useContext(Links))}</div>;
}
