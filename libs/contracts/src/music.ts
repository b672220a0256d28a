/** Schemas of the music area: request bodies, player state, events. */
export {};
