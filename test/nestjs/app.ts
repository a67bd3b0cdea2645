/**
 * A small order API written as a Nest user would, on either HTTP platform: the tests and the crash
 * child start it. Dependencies are injected by named token (`@Inject(SCRIPT)`), so the app runs
 * the same whether or not the compiler emitted decorator metadata (tsx does not).
 *
 * Routes:
 * - `POST /orders/:id`: `@Idempotent()`; its status and delay come from the script;
 * - `POST /tx/orders`: `@Idempotent({ transaction: true })`, INSERTs through `@OncelyTx()`;
 * - `POST /derived`: answers the `@OncelyContext()`'s derived key for `charge`;
 * - `POST /open`: not guarded.
 */
import 'reflect-metadata';
import { Body, Controller, Header, HttpException, Inject, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { Idempotent, OncelyContext, OncelyModule, OncelyTx, type GuardContext, type OncelyModuleOptions, type Tx } from '../../src/server/middleware/nestjs.js';

export type Platform = 'express' | 'fastify';
export const PLATFORMS: readonly Platform[] = ['express', 'fastify'];

/** What the handlers do; the test changes it between requests. */
export interface Script {
  status: number;
  delayMs: number;
  /** Executions of `POST /orders/:id`, in order: the parsed body and the context. */
  readonly runs: Array<{ readonly body: unknown; readonly oncely: GuardContext }>;
  /** Called inside `POST /tx/orders` after its INSERT (the crash child kills itself there). */
  afterInsert: (oncely: GuardContext) => void;
}

export const SCRIPT = Symbol('script');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

@Controller()
class OrdersController {
  constructor(@Inject(SCRIPT) private readonly script: Script) {}

  @Post('orders/:id')
  @Idempotent()
  @Header('location', '/orders/7')
  async create(@Param('id') id: string, @Body() body: unknown, @OncelyContext() oncely: GuardContext) {
    this.script.runs.push({ body, oncely });
    if (this.script.delayMs > 0) await sleep(this.script.delayMs);
    if (this.script.status >= 400) throw new HttpException({ failed: this.script.status }, this.script.status);
    return { id, body, run: this.script.runs.length };
  }

  @Post('tx/orders')
  @Idempotent({ transaction: true })
  async createInTx(@Body() body: { item: string }, @OncelyTx() tx: Tx, @OncelyContext() oncely: GuardContext) {
    await tx.run('INSERT INTO orders (key, item, pid) VALUES ($1, $2, $3)', [oncely.key, body.item, process.pid]);
    this.script.afterInsert(oncely);
    if (this.script.status >= 400) throw new HttpException({ failed: this.script.status }, this.script.status);
    return { key: oncely.key, item: body.item, pid: process.pid };
  }

  @Post('derived')
  @Idempotent()
  derived(@OncelyContext() oncely: GuardContext) {
    return { charge: oncely.deriveKey('charge') };
  }

  @Post('open')
  open(@Body() body: unknown) {
    return { body };
  }
}

export const ORDERS_TABLE = {
  sqlite: 'CREATE TABLE IF NOT EXISTS orders (key TEXT NOT NULL, item TEXT NOT NULL, pid INTEGER NOT NULL)',
  postgres: 'CREATE TABLE IF NOT EXISTS orders (key text NOT NULL, item text NOT NULL, pid integer NOT NULL)',
};

/** The app's root module: oncely's, with `options`, and the orders controller. */
export function appModule(options: OncelyModuleOptions, script: Script): new () => object {
  @Module({ imports: [OncelyModule.forRoot(options)], controllers: [OrdersController], providers: [{ provide: SCRIPT, useValue: script }] })
  class AppModule {}
  return AppModule;
}

export const newScript = (): Script => ({ status: 201, delayMs: 0, runs: [], afterInsert: () => {} });

/** Listens on loopback; resolves to the app's URL. */
export async function listen(app: INestApplication): Promise<string> {
  await app.listen(0, '127.0.0.1');
  return (await app.getUrl()).replace('[::1]', '127.0.0.1');
}
