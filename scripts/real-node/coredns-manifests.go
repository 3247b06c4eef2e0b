// Prints kubeadm's CoreDNS manifests, rendered as kubeadm renders them, for scripts/real-node.sh:
// the cluster's DNS runs as kubeadm clusters run it, from the templates of the Kubernetes release
// the node runs (cmd/kubeadm/app/phases/addons/dns/manifests.go), not from manifests of our own.
//
//	go run coredns-manifests.go <k8s.io/kubernetes module dir> <DNS IP> <CoreDNS image> <cluster domain>
//
// The standard library only, so `go run` compiles it in a second.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// In the order kubeadm creates them (dns.go, createCoreDNSAddon).
var order = []string{
	"CoreDNSServiceAccount",
	"CoreDNSClusterRole",
	"CoreDNSClusterRoleBinding",
	"CoreDNSConfigMap",
	"CoreDNSDeployment",
	"CoreDNSService",
}

// kubeadm sets resourceVersion "0" on the Service for its own create-or-update path. In a
// server-side apply, which real-node.sh sends, a resourceVersion is a precondition, and "0" is one
// the Service never meets once it exists: real-node.sh applies again on a running node.
var resourceVersion = regexp.MustCompile(`(?m)^  resourceVersion: "0"\n`)

func main() {
	if len(os.Args) != 5 {
		fail("usage: go run coredns-manifests.go <k8s.io/kubernetes module dir> <DNS IP> <CoreDNS image> <cluster domain>")
	}
	file := filepath.Join(os.Args[1], "cmd/kubeadm/app/phases/addons/dns/manifests.go")
	parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		fail(err.Error())
	}
	templates := map[string]string{}
	for _, decl := range parsed.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			values := spec.(*ast.ValueSpec)
			for i, name := range values.Names {
				if lit, ok := values.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					text, err := strconv.Unquote(lit.Value)
					if err != nil {
						fail(err.Error())
					}
					templates[name.Name] = text
				}
			}
		}
	}
	// The fields kubeadm fills in (dns.go); a field it adds in a later release fails the render.
	fields := map[string]any{
		"DeploymentName":       "coredns",
		"Image":                os.Args[3],
		"Replicas":             1,
		"ControlPlaneTaintKey": "node-role.kubernetes.io/control-plane",
		"DNSIP":                os.Args[2],
		"DNSDomain":            os.Args[4],
	}
	for _, name := range order {
		text, ok := templates[name]
		if !ok {
			fail(fmt.Sprintf("%s has no %s: kubeadm's CoreDNS manifests changed; update %s", file, name, os.Args[0]))
		}
		parsedTemplate, err := template.New(name).Option("missingkey=error").Parse(text)
		if err != nil {
			fail(err.Error())
		}
		var out strings.Builder
		if err := parsedTemplate.Execute(&out, fields); err != nil {
			fail(err.Error())
		}
		fmt.Printf("---%s", resourceVersion.ReplaceAllString(out.String(), ""))
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "coredns-manifests:", message)
	os.Exit(1)
}
