import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CatalogueFileError, DEFAULT_CATALOGUE_FILE, normaliseGameName, parseCatalogue } from '../src/domain/game-catalogue.ts';

describe('normaliseGameName', () => {
  it('strips accents, case and punctuation the same way for names and queries', () => {
    expect(normaliseGameName('Pokémon: Let’s Go, Pikachu!')).toBe('pokemon let s go pikachu');
    expect(normaliseGameName('  Counter-Strike 2 ')).toBe('counter strike 2');
    expect(normaliseGameName('CS:GO')).toBe(normaliseGameName('cs go'));
    expect(normaliseGameName('!!!')).toBe('');
  });
});

describe('parseCatalogue', () => {
  it('fills the optional fields and refuses duplicates after normalisation', () => {
    expect(parseCatalogue('[{"name": "Doom", "releaseYear": 1993}]')).toEqual([
      { name: 'Doom', aliases: [], executables: [], coverUrl: null, releaseYear: 1993 },
    ]);
    expect(() => parseCatalogue('[{"name": "Doom"}, {"name": "DOOM!"}]')).toThrow(CatalogueFileError);
    expect(() => parseCatalogue('[{"name": "Doom", "releaseYear": "1993"}]')).toThrow(/releaseYear/);
    expect(() => parseCatalogue('[]')).toThrow(CatalogueFileError);
    expect(() => parseCatalogue('{')).toThrow(/not valid JSON/);
  });

  it('accepts the shipped file: at least 1,000 games, each with a release year', async () => {
    const games = parseCatalogue(await readFile(DEFAULT_CATALOGUE_FILE, 'utf8'));
    expect(games.length).toBeGreaterThanOrEqual(1000);
    expect(games.every((g) => g.releaseYear !== null && g.releaseYear >= 1970 && g.releaseYear <= 2026)).toBe(true);
  });
});
