// The state of a create form sent to the gateway (restore, schedule, storage location): the
// values, which fields were touched, the error shown at each field (the server's first, else the
// client's once touched), one Idempotency-Key per distinct request, and a refusal's field errors
// placed on their fields; and the namespace's policy every create form shows.
import { useRef, useState } from 'react';
import { api } from '../api/client';
import type { FieldError } from '../api/types';
import { useLoad } from '../hooks';
import { idempotencyKeyFor, newIdempotencyKey, refusalToFieldErrors } from '../lib/fields';

/** The namespace's policy (the administrator's rules the forms show and check). */
export function usePolicy(namespace: string) {
  return useLoad((signal) => api.get('/api/v1/namespaces/{namespace}/policy', { path: { namespace }, signal }), namespace);
}

export type FieldErrors<F extends string> = Partial<Record<F, string>>;

/**
 * `S` is the form's values (or `T | null` while they wait for the policy); `F` its error fields.
 * `fieldOfPath` places the server's 422 errors, `nameField` gets a 409 "already exists".
 */
export function useCreateForm<S extends object | null, F extends string>(initial: S | (() => S), fieldOfPath: (path: string) => F | null, nameField: F) {
  const [form, setForm] = useState<S>(initial);
  const [touched, setTouched] = useState<Set<F>>(new Set());
  const [serverErrors, setServerErrors] = useState<FieldErrors<F>>({});
  const [unplaced, setUnplaced] = useState<FieldError[]>([]);
  const [submitError, setSubmitError] = useState<unknown>(null);
  const [submitting, setSubmitting] = useState(false);
  const keyRef = useRef<{ body: string; key: string } | null>(null);

  /** The error shown at `field`: the server's, else the client's once the field was touched. */
  const shown = (field: F, clientErrors: FieldErrors<F>): string | undefined => serverErrors[field] ?? (touched.has(field) ? clientErrors[field] : undefined);

  /** Sets one value; its field (`field`, by default the value's own name) counts as touched and loses its server error. */
  const update = <K extends keyof NonNullable<S>>(key: K, value: NonNullable<S>[K], field: F = key as unknown as F) => {
    setForm((current) => (current ? ({ ...current, [key]: value }) : current));
    setTouched((current) => new Set(current).add(field));
    setServerErrors((current) => {
      if (!(field in current)) return current;
      const next = { ...current };
      delete next[field];
      return next;
    });
  };

  /** Before sending: shows every client error; true when there is one. */
  const showErrors = (clientErrors: FieldErrors<F>): boolean => {
    const fields = Object.keys(clientErrors) as F[];
    if (fields.length) setTouched(new Set(fields));
    return fields.length > 0;
  };

  /**
   * Sends `request` through `post` with its Idempotency-Key (the same while the request is the
   * same). A refusal's field errors go to their fields and are returned; other failures are kept
   * in `submitError` (null is returned).
   */
  const send = async (request: unknown, post: (idempotencyKey: string) => Promise<void>): Promise<FieldErrors<F> | null> => {
    keyRef.current = idempotencyKeyFor(keyRef.current, JSON.stringify(request), newIdempotencyKey);
    setSubmitting(true);
    setSubmitError(null);
    setUnplaced([]);
    try {
      await post(keyRef.current.key);
      return null;
    } catch (error) {
      setSubmitting(false);
      const placed = refusalToFieldErrors(error, fieldOfPath, nameField);
      if (!placed) {
        setSubmitError(error);
        return null;
      }
      setServerErrors(placed.byField);
      setUnplaced(placed.unplaced);
      setSubmitError(placed.unplaced.length ? error : null);
      return placed.byField;
    }
  };

  return { form, setForm, update, shown, touched, serverErrors, unplaced, submitError, submitting, showErrors, send };
}

/** What a form's footer shows of the last send. */
export interface SendState {
  serverErrors: object;
  unplaced: FieldError[];
  submitError: unknown;
  submitting: boolean;
}
