import { randomBytes } from 'node:crypto';
import { minioPut } from '../references.ts';
import { defineScenario, type Scenario } from '../scenario.ts';

const MIB = 1024 * 1024;

/**
 * Uploads of one file size through the gateway and straight to media, against raw puts of the
 * same number of random bytes into MinIO. The bytes are random so that nothing compresses or
 * dedupes them; every request sends the same multipart body (a fresh file each time, stored under
 * a fresh key, in a bucket of the run's own).
 */
function upload(mib: number): Scenario {
  const bytes = mib * MIB;
  return defineScenario({
    name: `media.upload.${mib}mib`,
    summary: `POST /v1/media of a ${mib} MiB file, through the gateway and straight to media`,
    direct: 'media',
    connections: 4,
    reference: minioPut(bytes),
    setup: async (ctx) => {
      const user = await ctx.registerUser('upload');
      const boundary = `bench${randomBytes(8).toString('hex')}`;
      const body = Buffer.concat([
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\n`),
        Buffer.from('Content-Type: application/octet-stream\r\n\r\n'),
        randomBytes(bytes),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      return {
        expectStatus: 201,
        bytesPerRequest: bytes,
        requests: [
          {
            method: 'POST',
            path: '/v1/media',
            headers: { authorization: `Bearer ${user.token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
            body,
          },
        ],
      };
    },
  });
}

export const upload1Mib = upload(1);
export const upload10Mib = upload(10);
