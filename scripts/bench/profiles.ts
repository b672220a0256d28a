import { formatProfileSummary, summarizeProfiles } from './profile-summary.ts';

// `npm run bench:profiles -- <dir> [top]`: where each process of a profiled bench run
// (`npm run bench -- --profile`) spent its samples, without a browser's profiler.
const [dir, top] = process.argv.slice(2);
if (!dir) {
  console.error('usage: npm run bench:profiles -- <profiles dir> [rows per list]');
  process.exit(2);
}
const summaries = await summarizeProfiles(dir, top ? Number(top) : undefined);
console.log(
  Object.entries(summaries)
    .map(([name, summary]) => formatProfileSummary(name, summary))
    .join('\n\n'),
);
