/**
 * Which namespaces' Websites the operator reconciles: its own (the default), a list, or all of
 * them. The operator reads it from `WATCH_NAMESPACE` (operator/src/bin/config.ts), which the
 * WebsiteOperator construct sets, and the construct grants exactly that: a Role and RoleBinding in
 * each namespace of a list, or a ClusterRole and ClusterRoleBinding for all namespaces.
 *
 * `WATCH_NAMESPACE` spells them as operator-sdk does a list (`team-a,team-b`), but all namespaces
 * as `*`: operator-sdk's empty string for "all" would here be the unset default (the operator's
 * own namespace), so an empty value left by a template never widens the operator's reach.
 */

/** `WATCH_NAMESPACE` value meaning every namespace. */
export const ALL_NAMESPACES = '*';

/** A namespace name is an RFC 1123 label: lower-case alphanumerics and '-', at most 63 characters. */
const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * What is wrong with `names` as a list of namespaces to watch (each an RFC 1123 label, none twice,
 * at least one), or undefined when nothing is.
 */
export function watchNamespacesProblem(names: readonly string[]): string | undefined {
  if (names.length === 0) return 'expected at least one namespace';
  if (names.includes(ALL_NAMESPACES)) {
    return `'${ALL_NAMESPACES}' (all namespaces) cannot be combined with namespace names: use '${ALL_NAMESPACES}' alone, or list the namespaces`;
  }
  const invalid = names.filter((name) => name.length > 63 || !DNS_1123_LABEL.test(name));
  if (invalid.length > 0) {
    return `${invalid.map((name) => JSON.stringify(name)).join(', ')} ${invalid.length > 1 ? 'are not namespace names' : 'is not a namespace name'}: a namespace name is at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit`;
  }
  const duplicates = [...new Set(names.filter((name, index) => names.indexOf(name) !== index))];
  if (duplicates.length > 0)
    return `${duplicates.map((name) => JSON.stringify(name)).join(', ')} listed more than once`;
  return undefined;
}

/**
 * The namespaces a WebsiteOperator watches, for its `watchNamespaces` prop:
 * `WatchNamespaces.of('team-a', 'team-b')` or `WatchNamespaces.all()`.
 */
export class WatchNamespaces {
  /** Every namespace, granted by a ClusterRole (the Website rules) and a ClusterRoleBinding. */
  static all(): WatchNamespaces {
    return new WatchNamespaces(undefined);
  }

  /**
   * These namespaces, each granted by a Role and RoleBinding in it. Include the operator's own
   * namespace to reconcile Websites there too. Each namespace must exist before its Role can be
   * applied.
   */
  static of(...namespaces: string[]): WatchNamespaces {
    const problem = watchNamespacesProblem(namespaces);
    if (problem)
      throw new Error(`WatchNamespaces.of(${namespaces.map((name) => JSON.stringify(name)).join(', ')}): ${problem}`);
    return new WatchNamespaces(namespaces);
  }

  /** The namespaces of a list; undefined for all namespaces. */
  readonly namespaces?: string[];

  private constructor(namespaces: readonly string[] | undefined) {
    this.namespaces = namespaces ? [...namespaces] : undefined;
  }

  /** The `WATCH_NAMESPACE` value: the list joined by commas, or `*`. */
  get environmentValue(): string {
    return this.namespaces ? this.namespaces.join(',') : ALL_NAMESPACES;
  }
}
