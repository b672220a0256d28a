/** Schemas of the guilds area: request bodies, events and RPC messages. */
export {};
