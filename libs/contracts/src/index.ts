export * from './bus.ts';
export * from './common.ts';
export * from './permissions.ts';
export * from './records.ts';
export * from './route.ts';
export * from './openapi.ts';
export * from './routes/index.ts';
