import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh, empty database per test file, so tests never see each other's data. */
export async function createTestDatabase(adminUrl: string, label: string): Promise<TestDatabase> {
  // The name goes into SQL unquoted: keep it to lower-case letters, digits and underscores.
  const name = `t_${label.toLowerCase().replace(/[^a-z0-9_]/g, '_')}_${randomBytes(5).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function adminQuery(adminUrl: string, sql: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A bus namespace of its own for one test file: subjects, streams and consumers stay apart. */
export function testNamespace(label: string): string {
  return `t${label}${randomBytes(4).toString('hex')}`.toLowerCase().replace(/[^a-z0-9]/g, '');
}
