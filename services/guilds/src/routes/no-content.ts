/** Awaits a command whose route answers 204: the handler's body is `undefined` by its contract. */
export async function noContent(work: Promise<unknown>): Promise<undefined> {
  await work;
  return undefined;
}
