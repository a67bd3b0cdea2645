/**
 * `oncely/react`: a checkout's payment in React — prepared and journaled once (StrictMode and
 * remounts included), sent once however often Pay is pressed, followed for the UI, and found
 * again after a reload. Built on the framework-neutral `Operation.state`, `subscribe()` and
 * `settled()`; React (>= 18) is an optional peer dependency.
 *
 * Nothing here runs on the server: the hooks read the journal in effects, which server
 * rendering never runs, so IndexedDB is only touched in the browser.
 *
 * @module
 */
export { OncelyProvider, useOncelyClient, type OncelyProviderProps } from './client-context.js';
export { useOperation, type OperationView, type UseOperationOptions, type UseOperationResult } from './use-operation.js';
export { usePendingOperations } from './use-pending-operations.js';
export type { OperationInProgress } from './in-progress-store.js';
export { oncelyMutationFn, type MutationRequest } from './mutation.js';
