/**
 * The e2e suite's Next.js app: nothing fetched at build or run time (no next/font, no image
 * optimizer). Nothing here for oncely: Next bundles it (so oncely/react shares the app's React
 * when the checkout renders on the server), and leaves better-sqlite3 and pg to Node by default.
 * @type {import('next').NextConfig}
 */
const config = {
  images: { unoptimized: true },
  poweredByHeader: false,
};
export default config;
