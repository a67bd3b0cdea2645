/**
 * `oncely/nestjs`: makes a Nest route idempotent in Nest's own idiom, on
 * `@nestjs/platform-express` and `@nestjs/platform-fastify` alike.
 *
 * ```ts
 * @Module({ imports: [OncelyModule.forRoot({ store, clientId: (req: Request) => req.user.id })], controllers: [OrdersController] })
 * class AppModule {}
 *
 * @Post('orders') @Idempotent({ transaction: true })
 * create(@Body() body: NewOrder, @OncelyTx() tx: Tx) { … }
 * ```
 *
 * The handler runs unchanged. What Nest sends for it (its result, or an exception filter's answer)
 * is stored before it is sent; a replay gets the same status, headers and bytes with
 * `Idempotency-Replay: true`. Nest parses the body before interceptors run, so the fingerprint
 * hashes the parsed JSON's canonical form (equal to the raw text's, PROTOCOL.md), or the bytes
 * themselves when the app keeps them (`NestFactory.create(AppModule, { rawBody: true })`).
 *
 * @module
 */
import { Module, SetMetadata, UseInterceptors, applyDecorators, createParamDecorator, type DynamicModule, type ExecutionContext } from '@nestjs/common';
import { MiddlewareOrderError } from '../errors/middleware-order-error.js';
import type { Tx } from '../store/types.js';
import type { GuardContext, GuardOptions } from './guard.js';
import { IdempotencyInterceptor, ONCELY_OPTIONS, ROUTE_OPTIONS, type IdempotentOverrides } from './nestjs-interceptor.js';

export type { GuardContext, GuardOptions } from './guard.js';
export type { IdempotentOverrides } from './nestjs-interceptor.js';
export type { Tx } from '../store/types.js';
export { InvalidOptionError } from '../errors/invalid-option-error.js';
export { LeaseExpiredError } from '../errors/lease-expired-error.js';
export { MiddlewareOrderError } from '../errors/middleware-order-error.js';
export { ResponseTooLargeError } from '../errors/response-too-large-error.js';

/** The request as `clientId` sees it by default: what Express's and Fastify's requests both have. */
export interface NestRequestLike {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** Options of {@link OncelyModule.forRoot}: every `@Idempotent()` route's, unless the route overrides them. */
export interface OncelyModuleOptions<R = NestRequestLike> extends GuardOptions {
  /**
   * The caller whose keys these are (`(req) => req.user.id`), from the platform's request (Express's
   * `req` or Fastify's `request`; name its type: `forRoot<Request>({ … })`): keys of two callers never
   * meet. `null`/`undefined` answers `401`. Required, as for every framework's `idempotent()`.
   */
  readonly clientId: (request: R) => string | null | undefined | Promise<string | null | undefined>;
}

/** Options of {@link OncelyModule.forRootAsync}: the options made by a factory of injected providers (a config service). */
export interface OncelyModuleAsyncOptions<R = NestRequestLike> {
  /** Modules whose providers the factory injects. */
  readonly imports?: DynamicModule['imports'];
  /** Tokens of the providers given to `useFactory`, in order. */
  readonly inject?: ReadonlyArray<string | symbol | (abstract new (...args: never[]) => unknown)>;
  readonly useFactory: (...args: never[]) => OncelyModuleOptions<R> | Promise<OncelyModuleOptions<R>>;
}

/**
 * The module that holds the options of every `@Idempotent()` route (global: import it once).
 *
 * @example
 * ```ts
 * import { Module } from '@nestjs/common';
 * import { OncelyModule } from 'oncely/nestjs';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 *
 * const store = sqliteKeyStore({ path: 'keys.db' });
 * await store.migrate();
 *
 * @Module({ imports: [OncelyModule.forRoot({ store, clientId: (req) => String(req.headers['x-account-id'] ?? '') || null })] })
 * class AppModule {}
 * ```
 */
export class OncelyModule {
  /** The module with `options`. */
  static forRoot<R = NestRequestLike>(options: OncelyModuleOptions<R>): DynamicModule {
    return {
      module: OncelyModule,
      global: true,
      providers: [{ provide: ONCELY_OPTIONS, useValue: options }, IdempotencyInterceptor],
      exports: [ONCELY_OPTIONS, IdempotencyInterceptor],
    };
  }

  /** The module with options made by `useFactory` once its injected providers are ready (the store migrated there, say). */
  static forRootAsync<R = NestRequestLike>(options: OncelyModuleAsyncOptions<R>): DynamicModule {
    return {
      module: OncelyModule,
      global: true,
      imports: options.imports ?? [],
      providers: [{ provide: ONCELY_OPTIONS, useFactory: options.useFactory, inject: [...(options.inject ?? [])] }, IdempotencyInterceptor],
      exports: [ONCELY_OPTIONS, IdempotencyInterceptor],
    };
  }
}
Module({})(OncelyModule);

/**
 * Makes a route (or every route of a controller) idempotent: a request with `Idempotency-Key`
 * runs the handler once; its retries get the stored response. `overrides` change the module's
 * options for this route (`{ transaction: true }` to get {@link OncelyTx}).
 *
 * @example
 * ```ts
 * import { Body, Controller, Post } from '@nestjs/common';
 * import { Idempotent } from 'oncely/nestjs';
 *
 * @Controller('orders')
 * class OrdersController {
 *   @Post()
 *   @Idempotent()
 *   create(@Body() body: { item: string }) {
 *     return { id: `ord_${Date.now()}`, item: body.item };
 *   }
 * }
 * ```
 */
export function Idempotent(overrides: IdempotentOverrides = {}): MethodDecorator & ClassDecorator {
  return applyDecorators(SetMetadata(ROUTE_OPTIONS, overrides), UseInterceptors(IdempotencyInterceptor));
}

const contextOf = (where: string, context: ExecutionContext): GuardContext => {
  const oncely = context.switchToHttp().getRequest<{ oncely?: GuardContext }>().oncely;
  if (oncely === undefined) throw new MiddlewareOrderError(`oncely/nestjs: ${where} is used on a route without @Idempotent()`);
  return oncely;
};

/**
 * The guarded request's context as a handler parameter: the caller, the key, `deriveKey(name)` for
 * a downstream call, and the transaction (`transaction: true`).
 *
 * @example
 * ```ts
 * import { Controller, Post } from '@nestjs/common';
 * import { Idempotent, OncelyContext, type GuardContext } from 'oncely/nestjs';
 *
 * @Controller('payments')
 * class PaymentsController {
 *   @Post()
 *   @Idempotent()
 *   async pay(@OncelyContext() oncely: GuardContext) {
 *     // The provider's own Idempotency-Key: the same on every run of this request.
 *     const charge = await fetch('https://rail.example/charges', { method: 'POST', headers: { 'idempotency-key': oncely.deriveKey('charge') } });
 *     return { charged: charge.ok };
 *   }
 * }
 * ```
 */
export const OncelyContext: () => ParameterDecorator = createParamDecorator((_data: unknown, context: ExecutionContext) =>
  contextOf('@OncelyContext()', context),
);

/**
 * The transaction the route's response is stored in, as a handler parameter: what the handler
 * writes through it commits with the key, or not at all. The route must be
 * `@Idempotent({ transaction: true })` (or the module's `transaction: true`).
 *
 * @example
 * ```ts
 * import { Body, Controller, Post } from '@nestjs/common';
 * import { Idempotent, OncelyTx, type Tx } from 'oncely/nestjs';
 *
 * @Controller('orders')
 * class OrdersController {
 *   @Post()
 *   @Idempotent({ transaction: true })
 *   async create(@Body() body: { item: string }, @OncelyTx() tx: Tx) {
 *     await tx.run('INSERT INTO orders (item) VALUES ($1)', [body.item]);
 *     return { item: body.item };
 *   }
 * }
 * ```
 */
export const OncelyTx: () => ParameterDecorator = createParamDecorator((_data: unknown, context: ExecutionContext): Tx => {
  const { tx } = contextOf('@OncelyTx()', context);
  if (tx === undefined) throw new MiddlewareOrderError('oncely/nestjs: @OncelyTx() needs the route to be @Idempotent({ transaction: true })');
  return tx;
});
