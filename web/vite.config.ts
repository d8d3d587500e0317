/// <reference types="vitest/config" />
// Vite builds the console into dist/ (embedded by the gateway); `npm run dev` proxies the API to
// a running `nac demo`.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const gateway = process.env.NAC_GATEWAY ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: process.env.NAC_WEB_OUT_DIR ?? 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2048,
  },
  server: {
    proxy: {
      '/api': gateway,
      '/graphql': gateway,
    },
  },
  test: {
    environment: 'jsdom',
    globals: true,
    include: ['src/**/*.test.{ts,tsx}'],
    setupFiles: ['src/test-setup.ts'],
    css: false,
    // On two shared cores a jsdom render of a big view can pass vitest's 5 s default while
    // the machine is busy (seen with the Rust suites running beside it).
    testTimeout: 20_000,
  },
});
