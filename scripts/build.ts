import { buildBundles, DIST_DIR } from '@chat/testkit';

// `npm run build`: the JavaScript bundle each process runs in production (dist/<process>/main.mjs).
// The platform launcher, the end-to-end tests and the bench build before they start processes.
const started = performance.now();
await buildBundles();
console.log(`bundles written to ${DIST_DIR} in ${Math.round(performance.now() - started)} ms`);
