import { defineConfig } from "vitest/config";

// The page is static files (dist/) plus a config.json beside index.html; `base: "./"`
// keeps every asset path relative, so it works from any folder of any static host.
export default defineConfig({
  base: "./",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { target: "es2022", sourcemap: false, reportCompressedSize: false },
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    environment: "jsdom",
  },
});
