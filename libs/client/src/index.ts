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
export {
  ChatSocket,
  type Dispatch,
  type DispatchListener,
  defaultWebSocketFactory,
  type SocketOptions,
  type SocketStatus,
  type WebSocketFactory,
  type WebSocketLike,
} from './socket.ts';
