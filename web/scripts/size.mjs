#!/usr/bin/env node
// The page's own bundle size: every file of web/dist that a browser loads (the page, its
// script and its style; not config.json or the example), raw and gzipped (level 9).
//
//   node web/scripts/size.mjs [--max-gz-kb 150]   (after the build; exits 1 above the limit)

import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "dist");
const limitAt = process.argv.indexOf("--max-gz-kb");
const limit = limitAt > 0 ? Number(process.argv[limitAt + 1]) : Infinity;

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? files(full) : [full];
  });
}

const loaded = files(dist).filter((f) => /\.(html|js|css)$/.test(f));
let raw = 0;
let gz = 0;
for (const file of loaded) {
  const bytes = readFileSync(file);
  const zipped = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length;
  gz += zipped;
  console.log(`${path.relative(dist, file).padEnd(36)} ${(bytes.length / 1024).toFixed(1).padStart(7)} KB  ${(zipped / 1024).toFixed(1).padStart(6)} KB gz`);
}
console.log(`${"total".padEnd(36)} ${(raw / 1024).toFixed(1).padStart(7)} KB  ${(gz / 1024).toFixed(1).padStart(6)} KB gz`);
if (gz / 1024 > limit) {
  console.error(`the page is ${(gz / 1024).toFixed(1)} KB gzipped, above ${limit} KB`);
  process.exit(1);
}
