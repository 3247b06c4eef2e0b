// The Website operator as a Go team writes it with controller-runtime: the Go peer of the website
// operator in `npm run bench` (bench/go-operator.ts; docs/measure/benchmarks.md). It does the same
// job as ours, the way controller-runtime's book does it: the same Website (web.example.com/v1)
// into the same Deployment and Service `website-<name>` with a controller owner reference, the
// finalizer websites.<group>/cleanup, an event per change, and the same status (the Ready
// condition for the generation, availableReplicas, url, observedGeneration), leader election on.
//
// The children come from the template the benchmark renders with renderWorkload, the construct
// our operator renders with (harness/go-operator/template.ts), so both write the same objects: this
// program only fills in a Website's name, namespace, uid, replicas and page.
//
// scripts/binaries.sh builds it (`scripts/binaries.sh go-website-operator`), keyed by a hash of this
// folder, from sigs.k8s.io/controller-runtime at the newest release the Go module proxy serves.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Placeholders of the template (harness/go-operator/template.ts), each replaced by a JSON-escaped value.
const (
	placeholderName       = "go-placeholder-name"
	placeholderNamespace  = "go-placeholder-ns"
	placeholderUID        = "go-placeholder-uid"
	placeholderText       = "go-placeholder-text"
	placeholderBackground = "go-placeholder-background"
	placeholderForeground = "go-placeholder-foreground"
)

const defaultColor = "#2196F3"

// The template file: the Deployment and Service of a placeholder Website.
type template struct {
	Deployment json.RawMessage `json:"deployment"`
	Service    json.RawMessage `json:"service"`
}

type websiteReconciler struct {
	client.Client
	recorder   record.EventRecorder
	template   template
	gvk        schema.GroupVersionKind
	finalizer  string
	fieldOwner client.FieldOwner
}

// The page's escaping, as lib/workload/page.ts escapeHtml does it.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// textColorOn is lib/workload/page.ts's: black or white, whichever reads better (WCAG relative luminance).
func textColorOn(color string) string {
	hex := strings.TrimPrefix(color, "#")
	if len(hex) == 3 {
		hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
	}
	linear := func(i int) float64 {
		b, _ := strconv.ParseUint(hex[i:i+2], 16, 8)
		c := float64(b) / 255
		if c <= 0.03928 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	l := 0.2126*linear(0) + 0.7152*linear(2) + 0.0722*linear(4)
	if 1.05/(l+0.05) >= (l+0.05)/0.05 {
		return "#ffffff"
	}
	return "#000000"
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// render fills the template in for one Website.
func (r *websiteReconciler) render(website *unstructured.Unstructured, title, color string, replicas int32) (*appsv1.Deployment, *corev1.Service, error) {
	fill := strings.NewReplacer(
		placeholderName, jsonText(website.GetName()),
		placeholderNamespace, jsonText(website.GetNamespace()),
		placeholderUID, jsonText(string(website.GetUID())),
		placeholderText, jsonText(htmlEscaper.Replace(title)),
		placeholderBackground, jsonText(color),
		placeholderForeground, jsonText(textColorOn(color)),
	)
	deployment := &appsv1.Deployment{}
	if err := json.Unmarshal([]byte(fill.Replace(string(r.template.Deployment))), deployment); err != nil {
		return nil, nil, fmt.Errorf("the Deployment template: %w", err)
	}
	deployment.Spec.Replicas = &replicas
	service := &corev1.Service{}
	if err := json.Unmarshal([]byte(fill.Replace(string(r.template.Service))), service); err != nil {
		return nil, nil, fmt.Errorf("the Service template: %w", err)
	}
	return deployment, service, nil
}

func (r *websiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	website := &unstructured.Unstructured{}
	website.SetGroupVersionKind(r.gvk)
	if err := r.Get(ctx, req.NamespacedName, website); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if website.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, r.finalize(ctx, website)
	}
	if !controllerutil.ContainsFinalizer(website, r.finalizer) {
		patch := client.MergeFromWithOptions(website.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(website, r.finalizer)
		if err := r.Patch(ctx, website, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	title, _, _ := unstructured.NestedString(website.Object, "spec", "title")
	color, found, _ := unstructured.NestedString(website.Object, "spec", "color")
	if !found {
		color = defaultColor
	}
	replicas, _, _ := unstructured.NestedInt64(website.Object, "spec", "replicas")
	desiredDeployment, desiredService, err := r.render(website, title, color, int32(replicas))
	if err != nil {
		return ctrl.Result{}, err
	}

	var created, updated []string
	deployment := &appsv1.Deployment{}
	change, err := r.ensure(ctx, website, desiredDeployment, deployment, func() bool {
		return equality.Semantic.DeepDerivative(desiredDeployment.Spec, deployment.Spec) &&
			equality.Semantic.DeepDerivative(desiredDeployment.Labels, deployment.Labels)
	})
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, website, err)
	}
	note(change, "Deployment "+desiredDeployment.Name, &created, &updated)
	service := &corev1.Service{}
	change, err = r.ensure(ctx, website, desiredService, service, func() bool {
		return equality.Semantic.DeepDerivative(desiredService.Spec, service.Spec) &&
			equality.Semantic.DeepDerivative(desiredService.Labels, service.Labels)
	})
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, website, err)
	}
	note(change, "Service "+desiredService.Name, &created, &updated)
	if len(created) > 0 {
		r.recorder.Event(website, corev1.EventTypeNormal, "Created", "Created "+strings.Join(created, " and "))
	}
	if len(updated) > 0 {
		r.recorder.Event(website, corev1.EventTypeNormal, "Updated", "Updated "+strings.Join(updated, " and "))
	}

	available := deployment.Status.AvailableReplicas
	wanted := int32(replicas)
	ready := available >= wanted && deployment.Status.ObservedGeneration >= deployment.Generation &&
		deployment.Status.UpdatedReplicas >= wanted
	condition := metav1.Condition{
		Type:               "Ready",
		Status:             metav1.ConditionFalse,
		ObservedGeneration: website.GetGeneration(),
		Reason:             "Progressing",
		Message:            fmt.Sprintf("%d/%d replicas available", available, wanted),
	}
	if ready {
		condition.Status, condition.Reason = metav1.ConditionTrue, "Available"
	} else if available >= wanted {
		condition.Message += ", rolling out the current spec"
	}
	url := fmt.Sprintf("http://%s.%s.svc.cluster.local", desiredService.Name, website.GetNamespace())
	return ctrl.Result{}, r.writeStatus(ctx, website, condition, map[string]any{
		"availableReplicas":  int64(available),
		"url":                url,
		"observedGeneration": website.GetGeneration(),
	})
}

func note(change, what string, created, updated *[]string) {
	switch change {
	case "Created":
		*created = append(*created, what)
	case "Updated":
		*updated = append(*updated, what)
	}
}

// ensure makes the child match desired: created when absent from the cache, applied server-side
// when it differs. actual receives the child as the cache or the API server has it.
func (r *websiteReconciler) ensure(ctx context.Context, website *unstructured.Unstructured, desired, actual client.Object, matches func() bool) (string, error) {
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	err := r.Get(ctx, client.ObjectKeyFromObject(desired), actual)
	if apierrors.IsNotFound(err) {
		if err := r.Create(ctx, desired, r.fieldOwner); err != nil {
			return "", fmt.Errorf("could not create %s %s: %w", kind, desired.GetName(), err)
		}
		reflectInto(desired, actual)
		return "Created", nil
	}
	if err != nil {
		return "", fmt.Errorf("could not read %s %s: %w", kind, desired.GetName(), err)
	}
	if !metav1.IsControlledBy(actual, website) {
		return "", reconcileTerminal(fmt.Errorf("%s %s already exists and is not owned by Website %s", kind, desired.GetName(), website.GetName()))
	}
	if matches() {
		return "", nil
	}
	//nolint:staticcheck // client.Apply with a typed object: the book's way before ApplyConfigurations.
	if err := r.Patch(ctx, desired, client.Apply, r.fieldOwner, client.ForceOwnership); err != nil {
		return "", fmt.Errorf("could not apply %s %s: %w", kind, desired.GetName(), err)
	}
	reflectInto(desired, actual)
	return "Updated", nil
}

// reflectInto copies what the API server answered (desired, after Create or Patch) into actual.
func reflectInto(from, to client.Object) {
	switch f := from.(type) {
	case *appsv1.Deployment:
		f.DeepCopyInto(to.(*appsv1.Deployment))
	case *corev1.Service:
		f.DeepCopyInto(to.(*corev1.Service))
	}
}

type terminalError struct{ error }

func reconcileTerminal(err error) error { return terminalError{err} }

// failed records a failed reconcile as ours does: a Warning event and the Ready condition False.
// Retried with backoff unless retrying cannot help.
func (r *websiteReconciler) failed(ctx context.Context, website *unstructured.Unstructured, err error) error {
	if apierrors.IsConflict(err) {
		return err
	}
	r.recorder.Event(website, corev1.EventTypeWarning, "ReconcileFailed", err.Error())
	condition := metav1.Condition{
		Type:               "Ready",
		Status:             metav1.ConditionFalse,
		ObservedGeneration: website.GetGeneration(),
		Reason:             "ReconcileFailed",
		Message:            err.Error(),
	}
	if statusErr := r.writeStatus(ctx, website, condition, nil); statusErr != nil {
		ctrl.LoggerFrom(ctx).Error(statusErr, "could not record the failure in status")
	}
	var terminal terminalError
	if errors.As(err, &terminal) {
		ctrl.LoggerFrom(ctx).Error(err, "not retried: retrying cannot help")
		return nil
	}
	return err
}

// writeStatus patches status (merge) unless it already holds these fields and condition.
func (r *websiteReconciler) writeStatus(ctx context.Context, website *unstructured.Unstructured, condition metav1.Condition, fields map[string]any) error {
	original := website.DeepCopy()
	status, _, _ := unstructured.NestedMap(website.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	for k, v := range fields {
		status[k] = v
	}
	var conditions []metav1.Condition
	if raw, ok := status["conditions"].([]any); ok {
		for _, item := range raw {
			var c metav1.Condition
			if m, ok := item.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
				conditions = append(conditions, c)
			}
		}
	}
	meta.SetStatusCondition(&conditions, condition)
	list := make([]any, 0, len(conditions))
	for i := range conditions {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conditions[i])
		if err != nil {
			return err
		}
		list = append(list, m)
	}
	status["conditions"] = list
	if err := unstructured.SetNestedMap(website.Object, status, "status"); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(original.Object["status"], website.Object["status"]) {
		return nil
	}
	return client.IgnoreNotFound(r.Status().Patch(ctx, website, client.MergeFrom(original)))
}

// finalize deletes the children (unless the Website is deleted with --cascade=orphan) and removes
// the finalizer, as ours does.
func (r *websiteReconciler) finalize(ctx context.Context, website *unstructured.Unstructured) error {
	if !controllerutil.ContainsFinalizer(website, r.finalizer) {
		return nil
	}
	name := "website-" + website.GetName()
	if !controllerutil.ContainsFinalizer(website, "orphan") {
		for _, child := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			err := r.Get(ctx, client.ObjectKey{Namespace: website.GetNamespace(), Name: name}, child)
			if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(child, website)) {
				continue
			}
			if err != nil {
				return err
			}
			uid := child.GetUID()
			err = r.Delete(ctx, child, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	r.recorder.Event(website, corev1.EventTypeNormal, "Deleted",
		fmt.Sprintf("Deleted Deployment and Service %s; removing finalizer %s", name, r.finalizer))
	patch := client.MergeFromWithOptions(website.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(website, r.finalizer)
	return client.IgnoreNotFound(r.Patch(ctx, website, patch))
}

func main() {
	var namespace, group, templatePath, metricsAddr, probeAddr string
	var leaderElect bool
	flag.StringVar(&namespace, "namespace", "", "the namespace whose Websites it reconciles (and where its Lease is)")
	flag.StringVar(&group, "group", "web.example.com", "API group of the Website resource")
	flag.StringVar(&templatePath, "template", "", "the Deployment and Service template (harness/go-operator/template.ts)")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "where Prometheus metrics are served")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "where /healthz and /readyz are served")
	flag.BoolVar(&leaderElect, "leader-elect", true, "elect a leader through a Lease")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")
	fail := func(err error, message string) {
		log.Error(err, message)
		os.Exit(1)
	}
	if namespace == "" || templatePath == "" {
		fail(errors.New("--namespace and --template are required"), "bad flags")
	}
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		fail(err, "cannot read the template")
	}
	var tmpl template
	if err := json.Unmarshal(raw, &tmpl); err != nil || tmpl.Deployment == nil || tmpl.Service == nil {
		fail(err, "the template must be JSON with a deployment and a service")
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fail(err, "scheme")
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: scheme,
		Cache:  cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		// Websites are read as unstructured objects (no generated types): from the cache too, as a
		// typed Website would be; controller-runtime's default reads unstructured ones from the API.
		Client:                  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "go-website-operator",
		LeaderElectionNamespace: namespace,
	})
	if err != nil {
		fail(err, "cannot create the manager")
	}
	gvk := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Website"}
	website := &unstructured.Unstructured{}
	website.SetGroupVersionKind(gvk)
	reconciler := &websiteReconciler{
		Client:     mgr.GetClient(),
		recorder:   mgr.GetEventRecorderFor("go-website-operator"), //nolint:staticcheck // core/v1 Events, as ours writes
		template:   tmpl,
		gvk:        gvk,
		finalizer:  "websites." + group + "/cleanup",
		fieldOwner: client.FieldOwner("go-website-operator"),
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("website").
		For(website).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Complete(reconciler)
	if err != nil {
		fail(err, "cannot create the controller")
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		fail(err, "healthz")
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		fail(err, "readyz")
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fail(err, "the manager stopped")
	}
}
