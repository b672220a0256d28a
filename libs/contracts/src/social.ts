/** Schemas of the social area: request bodies, events and RPC messages. */
export {};
