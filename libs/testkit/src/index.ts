export * from './backing.ts';
export * from './build.ts';
export * from './database.ts';
export * from './media-stand-in.ts';
export * from './minio.ts';
export * from './platform.ts';
export * from './runtime.ts';
export * from './tokens.ts';
