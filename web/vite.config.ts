import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// The server serves dist/ (index.html as the app shell, dist/assets/ with hashed names and a year's cache).
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    emptyOutDir: true,
    // Chromium, Firefox and Safari all support <link rel=modulepreload>; the polyfill would be dead weight.
    modulePreload: { polyfill: false },
    // Inlined assets would need data: in the CSP; everything stays a file.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
