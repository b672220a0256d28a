/** Whole numbers, except below 100 (uploads, logins), where a decimal still means something. */
export function perSecond(rate: number): number {
  return rate < 100 ? Math.round(rate * 10) / 10 : Math.round(rate);
}
