/**
 * Sets `key` in a map kept to at most `capacity` entries: a new key past the bound first drops the
 * oldest one (a Map iterates in insertion order). For the caches a process keeps in memory.
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, capacity: number): void {
  if (!map.has(key) && map.size >= capacity) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
