// Command gitops-health computes the health of Kubernetes objects the way Flux and Argo CD compute it,
// with their own code, so that kafka-balancer's tests check what those tools really report.
//
//	gitops-health live --kubeconfig K [--kustomization F] [--argocd DIR] [--timeout D] GROUP/KIND/NAMESPACE/NAME...
//	gitops-health argocd-test DIR
//
// live reads each object from the API server and prints one JSON document: per object, the default
// kstatus result (sigs.k8s.io/cli-utils), the status Flux's kustomize-controller polls without and with
// the Kustomization's healthCheckExprs (github.com/fluxcd/cli-utils and github.com/fluxcd/pkg/runtime/cel),
// and Argo CD's health from the health.lua under DIR; then what a Kustomization with `wait: true` reports
// for the whole set (github.com/fluxcd/pkg/ssa's WaitForSet, fail-fast as kustomize-controller runs it).
//
// argocd-test runs every health_test.yaml under DIR (Argo CD's resource_customizations layout) the way
// Argo CD's util/lua TestLuaHealthScript does, and prints one JSON line per case; it exits 1 when a
// case fails.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gitops-health live|argocd-test ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "live":
		err = runLive(os.Args[2:])
	case "argocd-test":
		err = runArgoTests(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (live, argocd-test)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops-health:", err)
		os.Exit(1)
	}
}
