// CoreDNS with the plugins the real node's Corefile uses (kubeadm's, rendered by
// ../coredns-manifests.go), built by scripts/binaries.sh: CoreDNS's own main (coredns.go) with
// those plugins in place of all of them, the build CoreDNS documents for a custom plugin set
// (plugin.cfg). The cloud, etcd, tracing and QUIC plugins it leaves out are most of a full build's
// compile time; a Corefile naming any of them fails to load, saying which.
package main

import (
	_ "github.com/coredns/caddy/onevent"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
