/** Schemas of the messages area: request bodies, events and RPC messages. */
export {};
