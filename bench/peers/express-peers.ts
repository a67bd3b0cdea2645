/**
 * The peers that run on Express, each wired the way its documentation shows, guarding
 * {@link runPayment}. Where a peer leaves the HTTP mapping to the application (its errors are
 * exceptions, not responses), the mapping here follows its framework packages: in flight →
 * `409`, key reused with another body → `422`, key too long/missing → `400`.
 *
 * `@node-idempotency/express` is not on the registry here, so its core is wired into an Express
 * route exactly as that package does (`onRequest` before the handler, `onResponse` after).
 *
 * @module
 */
import express, { type Request, type Response } from 'express';
import { Idempotency, IdempotencyError, IdempotencyErrorCodes } from '@node-idempotency/core';
import { MemoryStorageAdapter } from '@node-idempotency/storage-adapter-memory';
import { RedisStorageAdapter } from '@node-idempotency/storage-adapter-redis';
import { getSharedIdempotencyService, idempotency as expressIdempotency } from 'express-idempotency';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { IdempotencyAlreadyInProgressError, IdempotencyValidationError } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import { createClient } from '@redis/client';
import { parsePayment, runPayment, type AppDb, type PaymentInput, type WorkOptions } from './payment.js';

/** What every peer app is built from. */
export interface PeerContext {
  readonly db: AppDb;
  readonly work: WorkOptions;
  /** Prefix of every key the peer stores, so runs and scenarios never see each other's keys. */
  readonly namespace: string;
  readonly redisUrl: string;
  /** Emulated Lambda timeout for Powertools: how long an in-progress record blocks its key. */
  readonly inProgressMs: number;
}

/**
 * The Express app every Express peer starts from: `express.json()` and `GET /executions`
 * (`executions`: what it answers; the app database's count by default).
 *
 * @example
 * ```ts
 * const app = baseApp(ctx);
 * app.post('/pay', guard, handler);
 * ```
 */
export function baseApp(ctx: PeerContext, executions: () => object | Promise<object> = () => ctx.db.count()): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '64kb' }));
  app.get('/executions', (_req, res, next) => {
    Promise.resolve(executions()).then((count) => res.json(count), next);
  });
  return app;
}

/**
 * A `400` for a body the payment handler refuses.
 *
 * @example
 * ```ts
 * if (typeof input === 'string') return invalid(res, input);
 * ```
 */
export function invalid(res: Response, detail: string): void {
  res.status(400).json({ error: detail });
}

/**
 * Whether the request asks the handler to fail as an unavailable upstream would (the
 * `x-bench-fault` header): how `oncely conform --fault-header` checks that a transient answer
 * is not stored. The handler answers `503` itself, as an app whose PSP is down does.
 *
 * @example
 * ```ts
 * if (upstreamDown(req)) return unavailable(res);
 * ```
 */
export const upstreamDown = (req: Request): boolean => req.get('x-bench-fault') !== undefined;

/**
 * The handler's `503` when {@link upstreamDown}.
 *
 * @example
 * ```ts
 * if (upstreamDown(req)) return unavailable(res);
 * ```
 */
export function unavailable(res: Response): void {
  res.status(503).set('retry-after', '1').json({ error: 'upstream unavailable' });
}

/**
 * Express with no idempotency layer: the cost floor of the Express peers.
 *
 * @example
 * ```ts
 * const app = unguardedExpress(ctx); app.listen(0);
 * ```
 */
export function unguardedExpress(ctx: PeerContext): express.Express {
  const app = baseApp(ctx);
  app.post('/pay', async (req: Request, res: Response) => {
    const input = parsePayment(req.body);
    if (typeof input === 'string') return invalid(res, input);
    res.status(201).json(await runPayment(input, ctx.db, ctx.work));
  });
  return app;
}

const NODE_IDEMPOTENCY_STATUS: Readonly<Record<string, number>> = {
  [IdempotencyErrorCodes.REQUEST_IN_PROGRESS]: 409,
  [IdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH]: 422,
  [IdempotencyErrorCodes.IDEMPOTENCY_KEY_LEN_EXEEDED]: 400,
  [IdempotencyErrorCodes.IDEMPOTENCY_KEY_MISSING]: 400,
};

/**
 * `@node-idempotency/core` with its memory or Redis storage adapter.
 *
 * @example
 * ```ts
 * const app = await nodeIdempotency(ctx, 'redis'); app.listen(0);
 * ```
 */
export async function nodeIdempotency(ctx: PeerContext, storage: 'memory' | 'redis'): Promise<express.Express> {
  let adapter: MemoryStorageAdapter | RedisStorageAdapter;
  if (storage === 'redis') {
    const redis = new RedisStorageAdapter({ url: ctx.redisUrl });
    await redis.connect();
    adapter = redis;
  } else {
    adapter = new MemoryStorageAdapter();
  }
  const idempotency = new Idempotency(adapter, { cacheKeyPrefix: ctx.namespace, enforceIdempotency: true });
  const app = baseApp(ctx);
  app.post('/pay', async (req: Request, res: Response) => {
    const params = { headers: req.headers, path: req.path, method: req.method, body: req.body as Record<string, unknown> };
    try {
      const stored = await idempotency.onRequest(params);
      if (stored) {
        res.status(Number(stored.additional?.['status'] ?? 200)).json(stored.body);
        return;
      }
    } catch (error) {
      if (error instanceof IdempotencyError) {
        res.status(NODE_IDEMPOTENCY_STATUS[error.code] ?? 500).json({ error: error.message });
        return;
      }
      throw error;
    }
    const input = parsePayment(req.body);
    if (typeof input === 'string') return invalid(res, input);
    if (upstreamDown(req)) return unavailable(res);
    const payment = await runPayment(input, ctx.db, ctx.work);
    await idempotency.onResponse(params, { body: payment, additional: { status: 201 } });
    res.status(201).json(payment);
  });
  return app;
}

/**
 * `express-idempotency` with its default (in-memory) data adapter — the only adapter it ships;
 * a MongoDB adapter is a separate package.
 *
 * @example
 * ```ts
 * const app = expressIdempotencyApp(ctx); app.listen(0);
 * ```
 */
export function expressIdempotencyApp(ctx: PeerContext): express.Express {
  const app = baseApp(ctx);
  app.post('/pay', expressIdempotency(), async (req: Request, res: Response) => {
    // The middleware calls next() for hits too; the route must ask whether it already answered.
    if (getSharedIdempotencyService().isHit(req)) return;
    const input = parsePayment(req.body);
    if (typeof input === 'string') return invalid(res, input);
    if (upstreamDown(req)) return unavailable(res);
    res.status(201).json(await runPayment(input, ctx.db, ctx.work));
  });
  return app;
}

/**
 * AWS Powertools idempotency (`makeIdempotent`) with its cache persistence layer on Redis,
 * wrapped in an Express route. The Lambda context it expects is emulated with a fixed
 * remaining time: without one, every in-progress record counts as orphaned at once and a
 * concurrent duplicate runs the handler again (Powertools logs a warning saying so).
 *
 * @example
 * ```ts
 * const app = await powertools(ctx); app.listen(0);
 * ```
 */
export async function powertools(ctx: PeerContext, validatePayload = true): Promise<express.Express> {
  const client = await createClient({ url: ctx.redisUrl }).connect();
  const persistenceStore = new CachePersistenceLayer({ client });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'key',
    ...(validatePayload ? { payloadValidationJmesPath: 'body' } : {}),
    expiresAfterSeconds: 24 * 3600,
  });
  config.registerLambdaContext({ getRemainingTimeInMillis: () => ctx.inProgressMs } as Parameters<IdempotencyConfig['registerLambdaContext']>[0]);
  const pay = makeIdempotent(
    async (event: { key: string; body: PaymentInput; down: boolean }) => {
      // A throw is how a Powertools handler fails: the record is deleted, the key freed.
      if (event.down) throw new Error('upstream unavailable');
      return runPayment(event.body, ctx.db, ctx.work);
    },
    { persistenceStore, config, keyPrefix: ctx.namespace },
  );
  const app = baseApp(ctx);
  app.post('/pay', async (req: Request, res: Response) => {
    const input = parsePayment(req.body);
    if (typeof input === 'string') return invalid(res, input);
    const key = req.get('idempotency-key');
    if (!key) return invalid(res, 'Idempotency-Key is required');
    try {
      res.status(201).json(await pay({ key, body: input, down: upstreamDown(req) }));
    } catch (error) {
      if (error instanceof IdempotencyAlreadyInProgressError) res.status(409).json({ error: error.message });
      else if (error instanceof IdempotencyValidationError) res.status(422).json({ error: error.message });
      else if (upstreamDown(req)) unavailable(res);
      else throw error;
    }
  });
  return app;
}
