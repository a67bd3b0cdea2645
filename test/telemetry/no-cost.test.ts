/**
 * No cost when tracing is off: no entry reaches `@opentelemetry/*` (oncely never imports it;
 * the application passes its own copy), so no bundle and no process loads it on oncely's behalf.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundleBrowserEntry } from '../bundle/bundle-browser-entry.js';
import { tracingOf } from '../../src/telemetry/spans.js';

const entry = (path: string): string => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));
const otel = (inputs: readonly string[]): string[] => inputs.filter((input) => input.includes('@opentelemetry'));

describe('telemetry when not enabled', () => {
  it('no entry bundles @opentelemetry: the browser client, the neutral server and the Hono middleware', async () => {
    const bundles = await Promise.all([
      bundleBrowserEntry(),
      bundleBrowserEntry({ entry: entry('server/index.ts') }),
      bundleBrowserEntry({ entry: entry('server/middleware/hono.ts'), external: ['hono'] }),
    ]);
    for (const bundle of bundles) {
      expect(bundle.inputs.length).toBeGreaterThan(5);
      expect(otel(bundle.inputs)).toEqual([]);
    }
  });

  it('resolves to nothing without the option, and refuses something that is not the API with a message naming it', () => {
    expect(tracingOf(undefined)).toBeUndefined();
    expect(() => tracingOf({ api: {} as never })).toThrow(/telemetry\.api must be the @opentelemetry\/api module/);
  });
});
