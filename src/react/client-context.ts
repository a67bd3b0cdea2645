/**
 * Which oncely client the hooks use: one per app, created once at module level (never in a
 * component, or every render would open another journal) and handed down by
 * {@link OncelyProvider}.
 *
 * @module
 */
import { createContext, createElement, useContext, type ReactNode } from 'react';
import type { Client } from '../client/create-client.js';
import { ErrorCode, OncelyError } from '../errors.js';

const ClientContext = createContext<Client | undefined>(undefined);

/**
 * Props of {@link OncelyProvider}.
 *
 * @example
 * ```ts
 * const props: OncelyProviderProps = { client, children: null };
 * ```
 */
export interface OncelyProviderProps {
  /** The app's client (`createClient` from `oncely/browser`), created once, outside components. */
  readonly client: Client;
  readonly children?: ReactNode;
}

/**
 * Makes `client` the one {@link useOperation} and {@link usePendingOperations} use below it.
 *
 * @example
 * ```tsx
 * const client = createClient({ baseUrl: '/api' }); // module level: one journal per app
 * createRoot(root).render(<OncelyProvider client={client}><Checkout /></OncelyProvider>);
 * ```
 */
export function OncelyProvider({ client, children }: OncelyProviderProps): ReactNode {
  return createElement(ClientContext.Provider, { value: client }, children);
}

/**
 * The client given as an option, else the one of the nearest {@link OncelyProvider}.
 *
 * @example
 * ```ts
 * const client = useOncelyClient();
 * ```
 */
export function useOncelyClient(client?: Client): Client {
  const provided = useContext(ClientContext);
  const chosen = client ?? provided;
  if (chosen === undefined)
    throw new OncelyError(ErrorCode.Config, 'oncely/react: no client; wrap the app in <OncelyProvider client={client}> or pass `client`');
  return chosen;
}
