export {
  type CallInput,
  type CallOptions,
  type CallOutput,
  type ChatClient,
  type ClientOptions,
  createClient,
  type RouteMethods,
  type TokenPair,
} from './client.ts';
export { ApiError } from './error.ts';
