/**
 * The interceptor behind `@Idempotent()`: PROTOCOL.md's response matrix around a Nest route, one
 * guard (`guard.ts`) per route's options.
 *
 * Nest runs interceptors after its body parser and before the route's pipes and handler. Admitted,
 * the handler runs and whatever Nest then sends (the handler's result, an exception filter's
 * answer) is held on the Node response until it is stored (`node-response.ts`, as `oncely/express`
 * holds it); the guard's own answer (a replay, `409`, `422`, …) is sent instead of the route's, and
 * the handler does not run.
 *
 * @module
 * @internal
 */
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { of, type Observable } from 'rxjs';
import { createGuard, type Guard, type GuardContext, type GuardOptions } from './guard.js';
import { nestEdge } from './nestjs-edge.js';
import { answerInstead, capture, send } from './node-response.js';

/** The DI token of the options given to `OncelyModule.forRoot`. */
export const ONCELY_OPTIONS = Symbol('oncely:options');

/** The metadata key of a route's `@Idempotent(overrides)`. */
export const ROUTE_OPTIONS = 'oncely:route';

/** What `@Idempotent()` may set for its route over the module's options. */
export type IdempotentOverrides = Pick<
  GuardOptions,
  'transaction' | 'leaseMs' | 'inFlightWaitMs' | 'keyMissing' | 'methods' | 'maxBodyBytes' | 'maxResponseBytes'
>;

/** The options of the module as the interceptor reads them. */
export interface ResolvedModuleOptions extends GuardOptions {
  readonly clientId: (request: never) => string | null | undefined | Promise<string | null | undefined>;
}

/** The request object Nest hands over, with the context the interceptor sets on it. */
type Carrier = { oncely?: GuardContext };

// Nest's own metadata (route parameters, `@Res({ passthrough })`): a handler with `@Res()` or
// `@Next()` sends its response itself, and Nest then sends nothing after it.
const ROUTE_ARGS = '__routeArguments__';
const PASSTHROUGH = '__responsePassthrough__';
const RESPONSE_PARAM = /^[12]:/; // RouteParamtypes.RESPONSE, RouteParamtypes.NEXT

function handlerSends(context: ExecutionContext): boolean {
  const host = context.getClass();
  const method = context.getHandler().name;
  const params = (Reflect.getMetadata(ROUTE_ARGS, host, method) ?? {}) as Record<string, unknown>;
  return Object.keys(params).some((key) => RESPONSE_PARAM.test(key)) && Reflect.getMetadata(PASSTHROUGH, host, method) !== true;
}

/** See the module comment. */
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly reflector = new Reflector();
  /** One guard per route's options (its in-flight marks and replay cache with it). */
  private readonly guards = new WeakMap<object, Guard>();
  private readonly moduleGuard: Guard;

  constructor(private readonly options: ResolvedModuleOptions) {
    this.moduleGuard = createGuard(options);
  }

  private guardOf(context: ExecutionContext): Guard {
    const handler = context.getHandler();
    let guard = this.guards.get(handler);
    if (guard === undefined) {
      const route = this.reflector.getAllAndOverride<IdempotentOverrides | undefined>(ROUTE_OPTIONS, [handler, context.getClass()]);
      guard = route === undefined || Object.keys(route).length === 0 ? this.moduleGuard : createGuard({ ...this.options, ...route });
      this.guards.set(handler, guard);
    }
    return guard;
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() !== 'http') return next.handle();
    const guard = this.guardOf(context);
    const http = context.switchToHttp();
    const request = http.getRequest<object & Carrier>();
    const edge = nestEdge(request, http.getResponse<object>(), guard.maxBodyBytes);
    if (!guard.guards(edge.request.method)) return next.handle();
    const clientId = (await this.options.clientId(request as never)) ?? null;
    const decision = await guard.decide({ clientId, ...edge.request });
    if (decision.kind === 'pass') return next.handle();
    if (decision.kind === 'answer') {
      // Nest sends the route's result after this, unless the handler sends its own (`@Res()`).
      if (handlerSends(context)) send(edge.raw, decision.response, edge.before);
      else answerInstead(edge.raw, decision.response, edge.before);
      return of(undefined);
    }
    const { execution } = decision;
    request.oncely = execution.context;
    capture(edge.raw, execution, edge.before, (error) => {
      this.options.onError?.(error, execution.context);
      edge.raw.destroy();
    });
    return next.handle();
  }
}

// Applied as calls, not as `@` syntax: the library compiles without `experimentalDecorators`,
// and Nest reads the same metadata either way. The token is named because no
// `emitDecoratorMetadata` type is there to find it by.
Inject(ONCELY_OPTIONS)(IdempotencyInterceptor, undefined, 0);
Injectable()(IdempotencyInterceptor);
