// The Argo CD components the tests run (harness/argocd/argocd.ts): the application controller, the
// repo server and the ApplicationSet controller, with the git credential helper the repo server
// calls. One binary dispatching on the name it is started as, as Argo CD's own multi-call
// cmd/main.go does, with the same commands; scripts/binaries.sh builds it inside its copy of the
// Argo CD module. Without the API server, the CLI, Dex, notifications and the commit and plugin
// servers, which the tests never start, it compiles in less than half the time.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	applicationset "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	// As upstream's main: klog uses the configured log level and format.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	name := filepath.Base(os.Args[0])
	if value := os.Getenv("ARGOCD_BINARY_NAME"); value != "" {
		name = value
	}
	var command *cobra.Command
	switch name {
	case "argocd-application-controller":
		command = appcontroller.NewCommand()
	case "argocd-repo-server":
		command = reposerver.NewCommand()
	case "argocd-applicationset-controller":
		command = applicationset.NewCommand()
	case "argocd-git-ask-pass":
		command = gitaskpass.NewCommand()
	default:
		fmt.Fprintf(os.Stderr, "%s: this build holds argocd-application-controller, argocd-repo-server, argocd-applicationset-controller and argocd-git-ask-pass only: start it through a link of one of those names\n", name)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}
