/** Names the operator's manifests and its runtime agree on. */
export const OPERATOR_NAME = 'website-operator';
export const OPERATOR_NAMESPACE = 'website-system';
export const WEBHOOK_SERVICE_NAME = 'website-operator-webhook';
export const LEASE_NAME = 'website-operator';

/** Container ports of the operator. */
export const OPERATOR_PORTS = { metrics: 8080, health: 8081, webhook: 9443 } as const;

/** Labels shared by every object of the operator's deployment. */
export function operatorLabels(component: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': OPERATOR_NAME,
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/part-of': 'website-stack',
  };
}
