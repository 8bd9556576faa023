package main

// live: the objects as they are in the API server, through each tool's own code path.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	fluxpoll "github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/event"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/apis/kustomize"
	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	fluxclient "github.com/fluxcd/pkg/runtime/client"
	"github.com/fluxcd/pkg/runtime/statusreaders"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// verdict is one tool's answer for one object.
type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

type objectReport struct {
	Kstatus         verdict  `json:"kstatus"`                   // sigs.k8s.io/cli-utils status.Compute
	Flux            verdict  `json:"flux"`                      // kustomize-controller's poller, no healthCheckExprs
	FluxExprs       *verdict `json:"fluxExprs,omitempty"`       // the same poller with the Kustomization's healthCheckExprs
	ArgoCD          *verdict `json:"argocd,omitempty"`          // health.lua, standard libraries open (built-in)
	ArgoCDConfigMap *verdict `json:"argocdConfigMap,omitempty"` // health.lua, standard libraries closed (argocd-cm)
}

// report: per object, and what `wait: true` makes of the whole set ("" = the health check passed,
// else kustomize-controller's error message).
type report struct {
	Objects   map[string]objectReport `json:"objects"`
	Wait      string                  `json:"wait"`
	WaitExprs *string                 `json:"waitExprs,omitempty"`
}

type liveOptions struct {
	kubeconfig, kustomization, argocd string
	timeout                           time.Duration
	objects                           []string
}

func parseLive(args []string) (*liveOptions, error) {
	flags := flag.NewFlagSet("live", flag.ContinueOnError)
	opts := &liveOptions{}
	flags.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	flags.StringVar(&opts.kustomization, "kustomization", "", "a Flux Kustomization manifest: its spec.healthCheckExprs")
	flags.StringVar(&opts.argocd, "argocd", "", "a resource_customizations directory (Argo CD's layout)")
	flags.DurationVar(&opts.timeout, "timeout", 3*time.Second, "the Kustomization's timeout: how long wait: true waits")
	if err := flags.Parse(args); err != nil {
		return nil, err
	}
	opts.objects = flags.Args()
	if opts.kubeconfig == "" || len(opts.objects) == 0 {
		return nil, errors.New("usage: gitops-health live --kubeconfig K [--kustomization F] [--argocd DIR] GROUP/KIND/NAMESPACE/NAME...")
	}
	return opts, nil
}

// objectID parses GROUP/KIND/NAMESPACE/NAME (GROUP empty for the core API).
func objectID(text string) (object.ObjMetadata, error) {
	parts := strings.Split(text, "/")
	if len(parts) != 4 {
		return object.ObjMetadata{}, fmt.Errorf("%q is not GROUP/KIND/NAMESPACE/NAME", text)
	}
	return object.ObjMetadata{GroupKind: schema.GroupKind{Group: parts[0], Kind: parts[1]}, Namespace: parts[2], Name: parts[3]}, nil
}

func healthChecks(path string) ([]kustomize.CustomHealthCheck, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var manifest struct {
		Spec struct {
			HealthCheckExprs []kustomize.CustomHealthCheck `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(text, &manifest); err != nil { // only the field that matters here
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(manifest.Spec.HealthCheckExprs) == 0 {
		return nil, fmt.Errorf("%s has no spec.healthCheckExprs", path)
	}
	return manifest.Spec.HealthCheckExprs, nil
}

type cluster struct {
	client client.Client
	mapper meta.RESTMapper
}

func connect(kubeconfig string) (*cluster, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// kustomize-controller's defaults (--kube-api-qps, --kube-api-burst): client-go's own (5, 10) would
	// throttle the poller's requests and end a wait with the rate limiter's error instead of its verdict.
	config.QPS, config.Burst = 50, 300
	mapper, err := fluxclient.NewDynamicRESTMapper(config)
	if err != nil {
		return nil, err
	}
	c, err := client.New(config, client.Options{Mapper: mapper})
	if err != nil {
		return nil, err
	}
	return &cluster{client: c, mapper: mapper}, nil
}

// poller is kustomize-controller's status poller: its custom Job reader first, then the CEL reader of
// the Kustomization's healthCheckExprs (when it has some), then cli-utils' own readers.
func (c *cluster) poller(exprs []kustomize.CustomHealthCheck) (*fluxpoll.StatusPoller, error) {
	readers := []engine.StatusReader{statusreaders.NewCustomJobStatusReader(c.mapper)}
	if len(exprs) > 0 {
		newReader, err := fluxcel.NewStatusReader(exprs)
		if err != nil {
			return nil, err
		}
		readers = append(readers, newReader(c.mapper))
	}
	return fluxpoll.NewStatusPoller(c.client, c.mapper, fluxpoll.Options{CustomStatusReaders: readers}), nil
}

// firstPoll is the status each object has at the poller's first reading.
func firstPoll(ctx context.Context, poller *fluxpoll.StatusPoller, ids object.ObjMetadataSet) (map[object.ObjMetadata]verdict, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := map[object.ObjMetadata]verdict{}
	for e := range poller.Poll(ctx, ids, fluxpoll.PollOptions{PollInterval: 500 * time.Millisecond}) {
		switch e.Type {
		case event.ErrorEvent:
			return nil, e.Error
		case event.ResourceUpdateEvent:
			v := verdict{Status: e.Resource.Status.String(), Message: e.Resource.Message}
			if e.Resource.Error != nil {
				v.Error = e.Resource.Error.Error()
			}
			seen[e.Resource.Identifier] = v
			if len(seen) == len(ids) {
				return seen, nil
			}
		}
	}
	return nil, errors.New("the poller stopped before reading every object")
}

// wait is what a Kustomization with `wait: true` reports: kustomize-controller's health check, polling
// every 5 s with fail-fast on (its settings). The first poll is at once; with a timeout under 5 s no
// poll is under way at the deadline (one that is ends the wait with the client's rate-limiter error
// instead of the verdict, in Flux as here).
func (c *cluster) wait(ctx context.Context, poller *fluxpoll.StatusPoller, ids object.ObjMetadataSet, timeout time.Duration) string {
	manager := ssa.NewResourceManager(c.client, poller, ssa.Owner{Field: "kustomize-controller", Group: "kustomize.toolkit.fluxcd.io"})
	err := manager.WaitForSetWithContext(ctx, ids, ssa.WaitOptions{Interval: 5 * time.Second, Timeout: timeout, FailFast: true})
	if err != nil {
		return err.Error()
	}
	return ""
}

func (c *cluster) get(ctx context.Context, id object.ObjMetadata) (*unstructured.Unstructured, error) {
	mapping, err := c.mapper.RESTMapping(id.GroupKind)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	err = c.client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	return obj, err
}

func runLive(args []string) error {
	opts, err := parseLive(args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	c, err := connect(opts.kubeconfig)
	if err != nil {
		return err
	}
	ids := object.ObjMetadataSet{}
	for _, text := range opts.objects {
		id, err := objectID(text)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	var exprs []kustomize.CustomHealthCheck
	if opts.kustomization != "" {
		if exprs, err = healthChecks(opts.kustomization); err != nil {
			return err
		}
	}
	var tree *customizations
	if opts.argocd != "" {
		if tree, err = loadCustomizations(opts.argocd); err != nil {
			return err
		}
	}
	out := report{Objects: map[string]objectReport{}}
	for i, id := range ids {
		obj, err := c.get(ctx, id)
		if err != nil {
			return fmt.Errorf("%s: %w", opts.objects[i], err)
		}
		out.Objects[opts.objects[i]] = objectReport{Kstatus: computeKstatus(obj), ArgoCD: argo(tree, obj, true), ArgoCDConfigMap: argo(tree, obj, false)}
	}
	if err := c.flux(ctx, opts, ids, exprs, &out); err != nil {
		return err
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	return encoder.Encode(out)
}

// flux fills in the poller's readings and the waits, without and with the healthCheckExprs; the two
// waits run side by side (each may last the whole timeout).
func (c *cluster) flux(ctx context.Context, opts *liveOptions, ids object.ObjMetadataSet, exprs []kustomize.CustomHealthCheck, out *report) error {
	variants := [][]kustomize.CustomHealthCheck{nil}
	if len(exprs) > 0 {
		variants = append(variants, exprs)
	}
	polled := make([]map[object.ObjMetadata]verdict, len(variants))
	waited := make([]string, len(variants))
	errs := make([]error, len(variants))
	var group sync.WaitGroup
	for i, variant := range variants {
		group.Go(func() {
			poller, err := c.poller(variant)
			if err == nil {
				polled[i], err = firstPoll(ctx, poller, ids)
			}
			if err == nil {
				waited[i] = c.wait(ctx, poller, ids, opts.timeout)
			}
			errs[i] = err
		})
	}
	group.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, id := range ids {
		entry := out.Objects[opts.objects[i]]
		entry.Flux = polled[0][id]
		if len(variants) > 1 {
			withExprs := polled[1][id]
			entry.FluxExprs = &withExprs
		}
		out.Objects[opts.objects[i]] = entry
	}
	out.Wait = waited[0]
	if len(variants) > 1 {
		out.WaitExprs = &waited[1]
	}
	return nil
}

func computeKstatus(obj *unstructured.Unstructured) verdict {
	result, err := kstatus.Compute(obj)
	if err != nil {
		return verdict{Status: "Unknown", Error: err.Error()}
	}
	return verdict{Status: result.Status.String(), Message: result.Message}
}

func argo(tree *customizations, obj *unstructured.Unstructured, openLibs bool) *verdict {
	if tree == nil {
		return nil
	}
	health, _, err := tree.health(obj.Object, openLibs)
	if err != nil {
		return &verdict{Status: "Error", Error: err.Error()}
	}
	return &verdict{Status: health.Status, Message: health.Message}
}
