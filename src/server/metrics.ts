/**
 * Counters of the idempotency layer, rendered as Prometheus text for `GET /metrics`.
 *
 * @module
 */

/**
 * How a keyed request ended, as PROTOCOL.md's `/metrics` names it.
 *
 * @example
 * ```ts
 * metrics.snapshot().requests[RequestOutcome.Replayed]; // replays served so far
 * ```
 */
export const RequestOutcome = {
  /** Executed now (including a stored refusal such as a decline). */
  Executed: 'executed',
  /** A finished key replayed. */
  Replayed: 'replayed',
  /** `409`: another owner holds the key. */
  InFlight: 'in_flight',
  /** `422`: the key was used for another request. */
  Mismatch: 'mismatch',
  /** `400`, `401`, `413`: refused before admission. */
  Invalid: 'invalid',
  /** `202`: outcome unknown, parked. */
  Pending: 'pending',
  /** `503`: transient failure, nothing final stored. */
  Transient: 'transient',
} as const;

/** One of {@link RequestOutcome}'s values. */
export type RequestOutcome = (typeof RequestOutcome)[keyof typeof RequestOutcome];

/**
 * Counters outside the per-request outcome.
 *
 * @example
 * ```ts
 * metrics.add(ServerEvent.KeysReaped, removed);
 * ```
 */
export const ServerEvent = {
  /** Rows the recovery worker brought to `finished`. */
  Recoveries: 'recoveries',
  /** Finished keys deleted after their retention window. */
  KeysReaped: 'keys_reaped',
  /** Successful takeovers of a row whose lease had expired or been released. */
  LeaseTakeovers: 'lease_takeovers',
  /** Fenced writes refused because another owner had taken the row over. */
  LeasesLost: 'leases_lost',
} as const;

/** One of {@link ServerEvent}'s values. */
export type ServerEvent = (typeof ServerEvent)[keyof typeof ServerEvent];

const EVENT_HELP: Record<ServerEvent, string> = {
  recoveries: 'Rows the recovery worker brought to finished.',
  keys_reaped: 'Finished keys deleted after their retention window.',
  lease_takeovers: 'Rows taken over after their lease expired or was released.',
  leases_lost: 'Attempts stopped because another owner took their row over.',
};

/** Counters shared by the handler, the recovery worker and the reaper. */
export interface ServerMetrics {
  /** Counts one keyed request by how it ended. */
  request(outcome: RequestOutcome): void;
  /** Adds `by` (default 1) to an event counter. */
  add(event: ServerEvent, by?: number): void;
  /** The current values. */
  snapshot(): { readonly requests: Readonly<Record<RequestOutcome, number>>; readonly events: Readonly<Record<ServerEvent, number>> };
  /** Prometheus text exposition format (version 0.0.4). */
  render(): string;
}

/**
 * Creates an empty set of counters. Pass one instance to the handler, the worker and the reaper
 * so `/metrics` shows them together.
 *
 * @example
 * ```ts
 * const metrics = createServerMetrics();
 * const handler = createIdempotencyHandler({ store, operations, authenticate, metrics });
 * new Response(metrics.render(), { headers: { 'content-type': 'text/plain; version=0.0.4' } });
 * ```
 */
export function createServerMetrics(): ServerMetrics {
  const requests = Object.fromEntries(Object.values(RequestOutcome).map((o) => [o, 0])) as Record<RequestOutcome, number>;
  const events = Object.fromEntries(Object.values(ServerEvent).map((e) => [e, 0])) as Record<ServerEvent, number>;
  return {
    request(outcome) {
      requests[outcome] += 1;
    },
    add(event, by = 1) {
      events[event] += by;
    },
    snapshot: () => ({ requests: { ...requests }, events: { ...events } }),
    render() {
      const lines = [
        '# HELP oncely_requests_total Keyed requests by outcome.',
        '# TYPE oncely_requests_total counter',
        ...Object.entries(requests).map(([outcome, n]) => `oncely_requests_total{outcome="${outcome}"} ${n}`),
      ];
      for (const [event, n] of Object.entries(events)) {
        lines.push(`# HELP oncely_${event}_total ${EVENT_HELP[event as ServerEvent]}`, `# TYPE oncely_${event}_total counter`, `oncely_${event}_total ${n}`);
      }
      return `${lines.join('\n')}\n`;
    },
  };
}
