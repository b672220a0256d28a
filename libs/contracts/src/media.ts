/** Schemas of the media area: request bodies, events and RPC messages. */
export {};
