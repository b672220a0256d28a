/** A PCM WAV file of `seconds` of silence: 8 kHz, mono, 16 bit. */
export function silentWav(seconds: number): Buffer {
  const rate = 8000;
  const data = Buffer.alloc(rate * 2 * seconds);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

/**
 * The header of a DSF (DSD stream) file, which file-type calls audio/x-dsf and whose length
 * music-metadata reads as sampleCount / samplingFrequency, whatever those claim.
 */
export function dsf(sampleCount: bigint, samplingFrequency: number): Buffer {
  const b = Buffer.alloc(28 + 52 + 12 + 16);
  b.write('DSD ', 0);
  b.writeBigUInt64LE(28n, 4);
  b.writeBigUInt64LE(BigInt(b.length), 12);
  b.write('fmt ', 28);
  b.writeBigUInt64LE(52n, 32);
  const fmt = 40;
  b.writeInt32LE(1, fmt); // format version
  b.writeInt32LE(0, fmt + 4); // DSD raw
  b.writeInt32LE(2, fmt + 8); // stereo
  b.writeInt32LE(2, fmt + 12); // channels
  b.writeInt32LE(samplingFrequency, fmt + 16);
  b.writeInt32LE(1, fmt + 20); // bits per sample
  b.writeBigInt64LE(sampleCount, fmt + 24);
  b.writeInt32LE(4096, fmt + 32); // block size per channel
  b.write('data', 80);
  b.writeBigUInt64LE(28n, 84);
  return b;
}
