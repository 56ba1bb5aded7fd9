import { defineConfig } from "vitest/config";

// The end-to-end tests: one Chromium, one file, in order, against a running stack
// (infra/local/web.sh e2e sets WEB_URL, JWT_SECRET_FILE, WEB_E2E_DIR and CHROMIUM).
export default defineConfig({
  test: {
    include: ["e2e/**/*.e2e.ts"],
    environment: "node",
    fileParallelism: false,
    testTimeout: 90_000,
    hookTimeout: 60_000,
  },
});
