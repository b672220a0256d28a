export * from './backing.ts';
export * from './database.ts';
export * from './platform.ts';
export * from './runtime.ts';
export * from './tokens.ts';
