/**
 * The consumer inbox (`POST /v1/events`, `GET /v1/events/:id`): the consumer side of exactly-once.
 *
 * A delivery inserts the event id into `inbox_events` and commits the event's effect in the
 * same transaction. The insert does nothing on a duplicate `(client_id, event_id)` (`./insert-once.ts`), so of any
 * number of concurrent redeliveries exactly one inserts a row and applies the effect; the others
 * change nothing and answer `duplicate`. No read-then-write: the database arbitrates.
 *
 * @module
 */
import type { KeyStore } from '../server/store/types.js';
import { insertOnce } from './insert-once.js';

/** A validated event delivery. */
export interface InboxEvent {
  /** The producer's event id, unique per caller: 1–255 characters. */
  readonly id: string;
  /** 1–100 characters. */
  readonly type: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** How a delivery ended. */
export const DeliveryStatus = {
  Processed: 'processed',
  Duplicate: 'duplicate',
} as const;

/** One of {@link DeliveryStatus}'s values. */
export type DeliveryStatus = (typeof DeliveryStatus)[keyof typeof DeliveryStatus];

/** A processed event as `GET /v1/events/:id` reports it. */
export interface InboxRecord {
  readonly id: string;
  readonly type: string;
  /** How many effects the event produced: exactly 1, however often it was delivered. */
  readonly effects: number;
}

/** The inbox of one app. */
export interface Inbox {
  /** Records the event and applies its effect once; redeliveries change nothing. */
  deliver(clientId: string, event: InboxEvent): Promise<DeliveryStatus>;
  /** The caller's processed event, or `undefined`. */
  get(clientId: string, eventId: string): Promise<InboxRecord | undefined>;
}

/**
 * Validates an event body `{"id": string, "type": string, "data": object}`.
 *
 * @example
 * ```ts
 * parseEvent({ id: 'evt_1', type: 'invoice.paid', data: { invoice: 'inv-7' } }); // { ok: true, event: {...} }
 * ```
 */
export function parseEvent(body: unknown): { readonly ok: true; readonly event: InboxEvent } | { readonly ok: false; readonly detail: string } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, detail: 'the body must be a JSON object {"id", "type", "data"}' };
  }
  const { id, type, data } = body as Record<string, unknown>;
  if (typeof id !== 'string' || id.length < 1 || id.length > 255) return { ok: false, detail: 'id must be a string of 1-255 characters' };
  if (typeof type !== 'string' || type.length < 1 || type.length > 100) {
    return { ok: false, detail: 'type must be a string of 1-100 characters' };
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return { ok: false, detail: 'data must be a JSON object' };
  return { ok: true, event: { id, type, data: data as Record<string, unknown> } };
}

/**
 * Creates the inbox over the app's store.
 *
 * @example
 * ```ts
 * const inbox = createInbox({ store });
 * await inbox.deliver('acme', { id: 'evt_1', type: 'invoice.paid', data: {} }); // 'processed'
 * await inbox.deliver('acme', { id: 'evt_1', type: 'invoice.paid', data: {} }); // 'duplicate'
 * ```
 */
export function createInbox(options: { readonly store: KeyStore }): Inbox {
  const { store } = options;
  return {
    deliver(clientId, event) {
      return store.transaction(async (tx) => {
        const now = Date.now();
        const inserted = await insertOnce(
          tx,
          'INSERT INTO inbox_events (client_id, event_id, type, received_at) VALUES ($1, $2, $3, $4)',
          'client_id, event_id',
          [clientId, event.id, event.type, now],
        );
        if (inserted === 0) return DeliveryStatus.Duplicate;
        await tx.run('INSERT INTO inbox_effects (id, client_id, event_id, type, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
          `fx_${crypto.randomUUID()}`,
          clientId,
          event.id,
          event.type,
          JSON.stringify(event.data),
          now,
        ]);
        return DeliveryStatus.Processed;
      });
    },
    async get(clientId, eventId) {
      return store.transaction(async (tx) => {
        const row = await tx.get<{ type: string }>('SELECT type FROM inbox_events WHERE client_id = $1 AND event_id = $2', [clientId, eventId]);
        if (row === undefined) return undefined;
        const effects = await tx.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM inbox_effects WHERE client_id = $1 AND event_id = $2', [
          clientId,
          eventId,
        ]);
        return { id: eventId, type: row.type, effects: Number(effects?.n ?? 0) };
      });
    },
  };
}
