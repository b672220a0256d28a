import type {
  Ban as BanSchema,
  Category as CategorySchema,
  Channel as ChannelSchema,
  PermissionOverride as OverrideSchema,
  Server as ServerSchema,
} from '@chat/contracts';
import type { z } from 'zod';

/** Types of the shared records (libs/contracts/src/records.ts exports only the schemas). */
export type Server = z.infer<typeof ServerSchema>;
export type Channel = z.infer<typeof ChannelSchema>;
export type Category = z.infer<typeof CategorySchema>;
export type PermissionOverride = z.infer<typeof OverrideSchema>;
export type Ban = z.infer<typeof BanSchema>;
