/** metav1.Time: RFC 3339 in whole seconds (conditions, event timestamps). */
export function metaTime(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime: RFC 3339 with microseconds (Lease times). */
export function microTime(date: Date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
