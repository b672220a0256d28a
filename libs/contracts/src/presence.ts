import { z } from 'zod';

/** What others see: `offline` when no session of the user is connected or the chosen status is invisible. */
export const SeenStatus = z.enum(['online', 'idle', 'dnd', 'offline']);
export type SeenStatus = z.infer<typeof SeenStatus>;
/** What a user chooses to show (auth stores it); invisible is seen as offline. */
export const ChosenStatus = z.enum(['online', 'idle', 'dnd', 'invisible']);
export type ChosenStatus = z.infer<typeof ChosenStatus>;
