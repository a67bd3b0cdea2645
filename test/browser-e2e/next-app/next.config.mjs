/**
 * The e2e suite's Next.js app: nothing fetched at build or run time (no next/font, no image
 * optimizer), better-sqlite3 loaded by Node rather than bundled.
 * @type {import('next').NextConfig}
 */
const config = {
  serverExternalPackages: ['oncely', 'better-sqlite3'],
  images: { unoptimized: true },
  poweredByHeader: false,
};
export default config;
