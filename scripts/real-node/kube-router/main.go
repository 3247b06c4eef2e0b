// kube-router with its NetworkPolicy controller only, the one part the real node runs
// (../kube-router.conf: --run-firewall, no router, no service proxy), built by scripts/binaries.sh.
// It is upstream's cmd/kube-router main and the firewall's share of pkg/cmd's Run: the same flags,
// health and metrics controllers and netpol controller, on informers of the three kinds that
// controller watches. The BGP router (GoBGP), the IPVS service proxy (with Docker's and AWS's
// clients) and the load-balancer allocator it leaves out are about half of a full build's packages;
// a command line that enables any of them is refused, saying so.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/metrics"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/cloudnativelabs/kube-router/v2/pkg/utils"
	"github.com/cloudnativelabs/kube-router/v2/pkg/version"
	"github.com/spf13/pflag"
	coreinformers "k8s.io/client-go/informers/core/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s\n", err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	// As upstream's main: klog's flags, set from kube-router's.
	if err := flag.CommandLine.Parse([]string{}); err != nil {
		return fmt.Errorf("failed to parse flags: %w", err)
	}
	if err := flag.Set("logtostderr", "true"); err != nil {
		return err
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.HelpRequested {
		pflag.Usage()
		return nil
	}
	if config.Version {
		version.PrintVersion(false)
		return nil
	}
	if config.RunRouter || config.RunServiceProxy || config.RunLoadBalancer || config.CleanupConfig || !config.RunFirewall {
		return errors.New("this kube-router build runs the NetworkPolicy controller only: " +
			"pass --run-firewall=true --run-router=false --run-service-proxy=false (and no --run-loadbalancer or --cleanup-config)")
	}
	if os.Geteuid() != 0 {
		return errors.New("kube-router needs to be run with privileges to execute iptables and ipset")
	}
	version.PrintVersion(true)
	version.PrintVersionMessages(true)

	var clientConfig *rest.Config
	var err error
	if config.Master != "" || config.Kubeconfig != "" {
		clientConfig, err = clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	} else {
		clientConfig, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("failed to build the Kubernetes client's configuration: %w", err)
	}
	client, err := kubernetes.NewForConfig(clientConfig)
	if err != nil {
		return fmt.Errorf("failed to create Kubernetes client: %w", err)
	}

	var wg sync.WaitGroup
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	defer close(healthChan)
	stopCh := make(chan struct{})
	hc, err := healthcheck.NewHealthController(config)
	if err != nil {
		return fmt.Errorf("failed to create health controller: %w", err)
	}
	wg.Add(1)
	go hc.RunServer(stopCh, &wg)

	podInformer := coreinformers.NewPodInformer(client, "", 0, cache.Indexers{})
	nsInformer := coreinformers.NewNamespaceInformer(client, 0, cache.Indexers{})
	npInformer := networkinginformers.NewNetworkPolicyInformer(client, "", 0, cache.Indexers{})
	informers := []cache.SharedIndexInformer{podInformer, nsInformer, npInformer}
	for _, informer := range informers {
		go informer.Run(stopCh)
	}
	synced := make(chan bool, 1)
	go func() {
		synced <- cache.WaitForCacheSync(stopCh, podInformer.HasSynced, nsInformer.HasSynced, npInformer.HasSynced)
	}()
	select {
	case <-time.After(config.CacheSyncTimeout):
		return fmt.Errorf("failed to synchronize cache: %s timeout", config.CacheSyncTimeout)
	case <-synced:
	}
	hc.SetAlive()
	wg.Add(1)
	go hc.RunCheck(healthChan, stopCh, &wg)

	if config.MetricsPort > 0 && config.MetricsPort < 65535 {
		if err := utils.TCPAddressBindable(config.MetricsAddr, config.MetricsPort); err != nil {
			return fmt.Errorf("failed to listen on %s:%d for metrics: %w", config.MetricsAddr, config.MetricsPort, err)
		}
		config.MetricsEnabled = true
		mc, err := metrics.NewMetricsController(config)
		if err != nil {
			return fmt.Errorf("failed to create metrics controller: %w", err)
		}
		wg.Add(1)
		go mc.Run(healthChan, stopCh, &wg)
	}

	iptablesHandlers, ipSetHandlers, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return fmt.Errorf("failed to create iptables handlers: %w", err)
	}
	var ipsetMutex sync.Mutex
	npc, err := netpol.NewNetworkPolicyController(client, config, podInformer, npInformer, nsInformer,
		&ipsetMutex, iptablesHandlers, ipSetHandlers)
	if err != nil {
		return fmt.Errorf("failed to create network policy controller: %w", err)
	}
	for informer, handler := range map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		podInformer: npc.PodEventHandler, nsInformer: npc.NamespaceEventHandler, npInformer: npc.NetworkPolicyEventHandler,
	} {
		if _, err := informer.AddEventHandler(handler); err != nil {
			return fmt.Errorf("failed to add an event handler: %w", err)
		}
	}
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	klog.Infof("Shutting down the controllers")
	close(stopCh)
	wg.Wait()
	return nil
}
