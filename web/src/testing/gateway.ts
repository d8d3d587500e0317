// Test doubles for the page tests (only tests import this): a `fetch` that answers like the demo
// gateway (routes by method and path, or a fallback function; records every call), problem+json
// bodies, an EventSource the test pushes events into, and waiting on real timers.
import { act } from '@testing-library/react';
import { vi } from 'vitest';
import type { components } from '../api/schema';

/** A list answer of the gateway (the storage locations' shape, the one with `approvals`) with
 * its items typed as the fixture needs, for fixtures. */
export type ListAnswer<T> = Omit<components['schemas']['NonAdminBackupStorageLocationList'], 'items'> & { items: T[] };

export interface FakeAnswer {
  status?: number;
  body?: unknown;
  /** Send `body` as text/plain instead of JSON. */
  text?: boolean;
}

export interface RecordedCall {
  method: string;
  /** As requested: path and query. */
  url: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: unknown;
}

export type FakeHandler = (call: RecordedCall) => FakeAnswer | undefined | Promise<FakeAnswer | undefined>;
export type FakeRoute = FakeAnswer | FakeHandler;

/** A problem+json body like the gateway's. */
export function problem(status: number, title: string, code: string, detail: string, errors?: { field: string; message: string; reason: string }[]) {
  return { type: `https://nac.openshift.io/problems/${code}`, title, status, detail, code, requestId: '0b05f157-483d-4420-96bc-6a816db2488e', ...(errors ? { errors } : {}) };
}

/** The demo's answer to a request the user may not make. */
export function forbidden(verb: string, resource: string, namespace: string): FakeAnswer {
  return { status: 403, body: problem(403, 'Forbidden', 'forbidden', `you may not ${verb} ${resource} in namespace ${namespace}`) };
}

/** The demo's 422 refusal with field errors. */
export function invalid(detail: string, errors: { field: string; message: string; reason: string }[]): FakeAnswer {
  return { status: 422, body: problem(422, 'Invalid request', 'invalid', detail, errors) };
}

/**
 * Stubs `fetch`: `routes` maps "GET /api/v1/…" (path without query) to an answer or a function of
 * the call; other calls go to `fallback`. Calls nobody answers get a 404.
 */
export function fakeGateway(routes: Record<string, FakeRoute>, fallback?: FakeHandler) {
  const calls: RecordedCall[] = [];
  const fetchMock = vi.fn(async (input: string, init: RequestInit = {}) => {
    const url = new URL(input, 'http://console.test');
    const call: RecordedCall = {
      method: init.method ?? 'GET',
      url: input,
      path: url.pathname,
      query: url.searchParams,
      headers: (init.headers ?? {}) as Record<string, string>,
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
    };
    calls.push(call);
    const route = routes[`${call.method} ${call.path}`];
    const answer = (typeof route === 'function' ? await route(call) : route) ?? (await fallback?.(call)) ?? { status: 404, body: problem(404, 'Not Found', 'not-found', `no fake for ${call.method} ${input}`) };
    const status = answer.status ?? 200;
    const contentType = answer.text ? 'text/plain; charset=utf-8' : status >= 400 ? 'application/problem+json' : 'application/json';
    const payload = answer.body === undefined ? '' : answer.text ? (typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body)) : JSON.stringify(answer.body);
    return new Response(status === 204 ? null : payload, { status, headers: { 'content-type': contentType } });
  });
  vi.stubGlobal('fetch', fetchMock);
  return { calls, fetchMock, callsTo: (path: string) => calls.filter((call) => call.path === path) };
}

type Listener = (message: MessageEvent<string>) => void;

/** An EventSource whose events the test sends with `emit`. */
export class FakeEventSource {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSED = 2;
  static instances: FakeEventSource[] = [];
  readonly url: string;
  readyState = FakeEventSource.OPEN;
  onerror: (() => void) | null = null;
  private listeners = new Map<string, Listener[]>();
  constructor(url: string) {
    this.url = url;
    FakeEventSource.instances.push(this);
  }
  addEventListener(type: string, listener: Listener) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  close() {
    this.readyState = FakeEventSource.CLOSED;
  }
  /** Delivers one event (`data` is sent as JSON). */
  emit(type: string, data: unknown = {}) {
    for (const listener of this.listeners.get(type) ?? []) listener(new MessageEvent(type, { data: JSON.stringify(data) }));
  }
  /** Installs the fake as the global EventSource. */
  static install() {
    FakeEventSource.instances = [];
    vi.stubGlobal('EventSource', FakeEventSource);
  }
}

/**
 * Retries `check` on real timeouts until it passes (testing-library's waitFor polls with
 * setInterval, which tests faking intervals freeze).
 */
export async function eventually(check: () => void, timeoutMs = 2000): Promise<void> {
  const started = performance.now();
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (performance.now() - started > timeoutMs) throw error;
      // Waiting inside act lets the answers that arrive meanwhile render without warnings.
      await act(async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
      });
    }
  }
}
