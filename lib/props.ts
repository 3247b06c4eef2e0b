/**
 * A feature set by a flag and its options, the jsii way of `boolean | Options` (a union jsii cannot
 * express in Python, Java or Go): `feature: false` turns it off, `featureOptions` tunes it, and
 * giving options turns it on. Returns the options to build the feature with, or undefined when it
 * is off. Options with the flag false contradict each other: an error naming both, not a guess.
 */
export function optionalFeature<T extends object>(
  where: string,
  flag: string,
  enabled: boolean | undefined,
  options: T | undefined,
  enabledByDefault: boolean,
): T | undefined {
  if (enabled === false && options !== undefined)
    throw new Error(`${where}: ${flag} is false but ${flag}Options is set: remove one of the two`);
  return (enabled ?? (options !== undefined || enabledByDefault)) ? (options ?? ({} as T)) : undefined;
}

/**
 * Throws, naming the prop and the values it takes, when `value` is not one of `allowed`. TypeScript
 * apps meet these as string-literal types at compile time; Python, Java and Go apps pass plain
 * strings (jsii has no literal types), so the construct checks them at synth.
 */
export function assertOneOf(where: string, prop: string, value: string | undefined, allowed: readonly string[]): void {
  if (value !== undefined && !allowed.includes(value))
    throw new Error(`${where}: ${prop} is '${value}'; give one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
}
