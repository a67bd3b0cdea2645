'use client';
/**
 * The checkout, rendered in the browser only (`ssr: false`): its module creates the oncely client,
 * whose relative `baseUrl` ('/api') is resolved against the page, and a server render has no page.
 */
import dynamic from 'next/dynamic';

export const CheckoutLoader = dynamic(() => import('./checkout').then((module) => module.Checkout), {
  ssr: false,
  loading: () => <main data-state="loading" />,
});
