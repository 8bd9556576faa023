// Command pause is the pod sandbox's process on the test node (tests/kube_node.py): containerd's
// sandbox_image, built here because no registry serves registry.k8s.io/pause. As Kubernetes' own
// pause, it holds the pod's namespaces, reaps the zombies it inherits as PID 1, and exits 0 on
// SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
