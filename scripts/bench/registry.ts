import { readdir } from 'node:fs/promises';
import type { Scenario } from './scenario.ts';

const DIR = new URL('./scenarios/', import.meta.url);

/**
 * Every scenario exported by a file in scenarios/, in name order. Adding a scenario is adding a
 * file (or an export made with defineScenario): nothing else lists them, so engineers never edit
 * a shared file to add one.
 */
export async function loadScenarios(): Promise<Scenario[]> {
  const files = (await readdir(DIR)).filter((f) => f.endsWith('.ts')).sort();
  const found: Scenario[] = [];
  for (const file of files) {
    const module = (await import(new URL(file, DIR).href)) as Record<string, unknown>;
    found.push(...Object.values(module).filter(isScenario));
  }
  const names = found.map((s) => s.name);
  const duplicate = names.find((name, i) => names.indexOf(name) !== i);
  if (duplicate) throw new Error(`two scenarios are named ${duplicate}`);
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** The scenarios a filter selects: comma-separated names or name prefixes (`users.` selects users.*); all when empty. */
export function selectScenarios(all: Scenario[], filter: string[]): Scenario[] {
  if (filter.length === 0) return all;
  const selected = all.filter((s) => filter.some((f) => s.name === f || (f.endsWith('.') && s.name.startsWith(f))));
  const unmatched = filter.filter((f) => !all.some((s) => s.name === f || (f.endsWith('.') && s.name.startsWith(f))));
  if (unmatched.length > 0) throw new Error(`no scenario matches ${unmatched.join(', ')}; known: ${all.map((s) => s.name).join(', ')}`);
  return selected;
}

function isScenario(value: unknown): value is Scenario {
  const v = value as Partial<Scenario> | null;
  return typeof v === 'object' && v !== null && typeof v.name === 'string' && typeof v.setup === 'function';
}
