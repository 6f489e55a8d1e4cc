// Package k8s validates collector-config/k8s strictly against the
// Kubernetes API types of the oldest supported release (k8s.io/api v0.27 =
// Kubernetes 1.27): every field must exist there (so nothing newer, such as
// the 1.30 appArmorProfile field, slips in), then checks what makes the set
// deployable. Offline: kubeconform needs JSON schemas this machine cannot
// download; the API's own Go types are the schema here.
package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var dir = filepath.Join("..", "..", "collector-config", "k8s")

type kustomization struct {
	APIVersion         string   `json:"apiVersion"`
	Kind               string   `json:"kind"`
	Namespace          string   `json:"namespace"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"configMapGenerator"`
	GeneratorOptions map[string]any `json:"generatorOptions"`
}

// strict decodes YAML into out, refusing unknown and duplicate fields.
func strict(doc []byte, out any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	return d.Decode(out)
}

type objects struct {
	daemonsets   []appsv1.DaemonSet
	deployments  []appsv1.Deployment
	services     []corev1.Service
	accounts     []corev1.ServiceAccount
	namespaces   []corev1.Namespace
	roles        []rbacv1.ClusterRole
	bindings     []rbacv1.ClusterRoleBinding
	configmapRef map[string]bool
}

func load(t *testing.T) (kustomization, objects) {
	t.Helper()
	var k kustomization
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := strict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	var o objects
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatalf("resource %s: %v", r, err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s #%d: %v", r, i, err)
			}
			var err error
			where := fmt.Sprintf("%s #%d (%s %s)", r, i, meta.APIVersion, meta.Kind)
			switch meta.APIVersion + "/" + meta.Kind {
			case "apps/v1/DaemonSet":
				var x appsv1.DaemonSet
				err = strict(doc, &x)
				o.daemonsets = append(o.daemonsets, x)
			case "apps/v1/Deployment":
				var x appsv1.Deployment
				err = strict(doc, &x)
				o.deployments = append(o.deployments, x)
			case "v1/Service":
				var x corev1.Service
				err = strict(doc, &x)
				o.services = append(o.services, x)
			case "v1/ServiceAccount":
				var x corev1.ServiceAccount
				err = strict(doc, &x)
				o.accounts = append(o.accounts, x)
			case "v1/Namespace":
				var x corev1.Namespace
				err = strict(doc, &x)
				o.namespaces = append(o.namespaces, x)
			case "rbac.authorization.k8s.io/v1/ClusterRole":
				var x rbacv1.ClusterRole
				err = strict(doc, &x)
				o.roles = append(o.roles, x)
			case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
				var x rbacv1.ClusterRoleBinding
				err = strict(doc, &x)
				o.bindings = append(o.bindings, x)
			default:
				t.Fatalf("%s: kind not covered by this test", where)
			}
			if err != nil {
				t.Errorf("%s: not valid for Kubernetes 1.27: %v", where, err)
			}
		}
	}
	o.configmapRef = map[string]bool{}
	for _, g := range k.ConfigMapGenerator {
		o.configmapRef[g.Name] = true
		for _, f := range g.Files {
			src := f[strings.IndexByte(f, '=')+1:]
			if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
				t.Errorf("configMapGenerator %s: %v", g.Name, err)
			}
		}
	}
	return k, o
}

func TestStrictSchema(t *testing.T) {
	_, o := load(t)
	if len(o.daemonsets) != 1 || len(o.deployments) != 1 || len(o.services) != 1 {
		t.Fatalf("want an agent DaemonSet, a gateway Deployment and its Service; got %d, %d, %d",
			len(o.daemonsets), len(o.deployments), len(o.services))
	}
}

// imageArchitectures: those `make image-oci` puts under the image's tag
// (TestImageLayout checks the layout has exactly these).
var imageArchitectures = []string{"amd64", "arm64"}

// podArchitectures: the kubernetes.io/arch values a pod can be scheduled
// on, from its nodeSelector and required node affinity (nil: any).
func podArchitectures(spec corev1.PodSpec) []string {
	var set []string
	if a, ok := spec.NodeSelector["kubernetes.io/arch"]; ok {
		set = []string{a}
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil ||
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return set
	}
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var union []string
	for _, term := range terms {
		var termSet []string
		restricted := false
		for _, e := range term.MatchExpressions {
			if e.Key == "kubernetes.io/arch" && e.Operator == corev1.NodeSelectorOpIn {
				termSet, restricted = append([]string(nil), e.Values...), true
			}
		}
		if !restricted {
			return set // a term open to every architecture
		}
		union = append(union, termSet...)
	}
	if set != nil {
		var both []string
		for _, a := range union {
			if a == set[0] {
				both = append(both, a)
			}
		}
		union = both
	}
	sort.Strings(union)
	return union
}

// checkPod: what a pod of the set must have to be deployable and kept alive.
func checkPod(t *testing.T, name string, spec corev1.PodSpec, o objects) {
	t.Helper()
	if got := podArchitectures(spec); !reflect.DeepEqual(got, imageArchitectures) {
		t.Errorf("%s: schedulable on architectures %v, want exactly those of the image index %v", name, got, imageArchitectures)
	}
	sa := false
	for _, a := range o.accounts {
		sa = sa || a.Name == spec.ServiceAccountName
	}
	if !sa {
		t.Errorf("%s: service account %q not in the set", name, spec.ServiceAccountName)
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && !o.configmapRef[v.ConfigMap.Name] {
			t.Errorf("%s: configMap %q is not generated", name, v.ConfigMap.Name)
		}
		if v.HostPath != nil && (strings.HasPrefix(v.HostPath.Path, "/sys/kernel/debug") || strings.HasPrefix(v.HostPath.Path, "/sys/kernel/tracing")) {
			t.Errorf("%s: mounts %s, which nothing uses (perf_event and raw tracepoints only)", name, v.HostPath.Path)
		}
	}
	for _, c := range spec.Containers {
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		for what, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("%s/%s: no %s probe on health_check", name, c.Name, what)
				continue
			}
			if !ports[p.HTTPGet.Port.String()] {
				t.Errorf("%s/%s: %s probe port %q is not a container port", name, c.Name, what, p.HTTPGet.Port.String())
			}
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				t.Errorf("%s/%s: no %s request", name, c.Name, r)
			}
			if _, ok := c.Resources.Limits[r]; !ok {
				t.Errorf("%s/%s: no %s limit", name, c.Name, r)
			}
		}
		if !strings.Contains(strings.Join(c.Args, " "), "+service.profilesSupport") {
			t.Errorf("%s/%s: profiles pipelines need --feature-gates=+service.profilesSupport: %v", name, c.Name, c.Args)
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			(sc.Privileged != nil && *sc.Privileged) || sc.Capabilities == nil || len(sc.Capabilities.Drop) == 0 {
			t.Errorf("%s/%s: securityContext must drop capabilities, forbid privilege escalation and not be privileged", name, c.Name)
		}
	}
}

func TestAgentDaemonSet(t *testing.T) {
	k, o := load(t)
	if len(o.daemonsets) != 1 {
		t.Fatal("no DaemonSet")
	}
	ds := o.daemonsets[0]
	spec := ds.Spec.Template.Spec
	checkPod(t, "agent", spec, o)
	if !spec.HostPID {
		t.Error("agent: hostPID is needed to see the node's processes")
	}
	c := spec.Containers[0]
	caps := map[corev1.Capability]bool{}
	for _, x := range c.SecurityContext.Capabilities.Add {
		caps[x] = true
	}
	for _, want := range []corev1.Capability{"BPF", "PERFMON", "SYS_ADMIN"} {
		if !caps[want] {
			t.Errorf("agent: capability %s missing", want)
		}
	}
	if ds.Spec.Template.Annotations["container.apparmor.security.beta.kubernetes.io/"+c.Name] != "unconfined" {
		t.Errorf("agent: AppArmor must be set through the annotation (works on 1.27-1.29 and later)")
	}
	// The agent reaches the gateway's Service in the kustomization's namespace.
	svc := o.services[0]
	want := fmt.Sprintf("%s.%s.svc:%d", svc.Name, k.Namespace, svc.Spec.Ports[0].Port)
	found := false
	for _, e := range c.Env {
		found = found || (e.Name == "OTLP_ENDPOINT" && e.Value == want)
	}
	if !found {
		t.Errorf("agent: OTLP_ENDPOINT must be %s", want)
	}
	// RBAC: bound to the agent's account, in the namespace it runs in.
	bound := false
	for _, b := range o.bindings {
		for _, s := range b.Subjects {
			bound = bound || (s.Name == spec.ServiceAccountName && s.Namespace == k.Namespace)
		}
	}
	if !bound || len(o.roles) == 0 {
		t.Errorf("agent: no ClusterRoleBinding for %s in %s", spec.ServiceAccountName, k.Namespace)
	}
	// The agent's pipeline derives metrics (profilingmetrics connector).
	cfg, err := os.ReadFile(filepath.Join(dir, "collector-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var col struct {
		Service struct {
			Extensions []string `json:"extensions"`
			Pipelines  map[string]struct {
				Receivers []string `json:"receivers"`
				Exporters []string `json:"exporters"`
			} `json:"pipelines"`
		} `json:"service"`
	}
	if err := yaml.Unmarshal(cfg, &col); err != nil {
		t.Fatal(err)
	}
	if p := col.Service.Pipelines["profiles"]; !strings.Contains(strings.Join(p.Exporters, ","), "profilingmetrics") {
		t.Errorf("agent: profiles pipeline does not feed the profilingmetrics connector: %v", p.Exporters)
	}
	if p := col.Service.Pipelines["metrics"]; !strings.Contains(strings.Join(p.Receivers, ","), "profilingmetrics") {
		t.Errorf("agent: no metrics pipeline from the profilingmetrics connector")
	}
	if !strings.Contains(strings.Join(col.Service.Extensions, ","), "health_check") {
		t.Errorf("agent: health_check extension not enabled (the probes need it)")
	}
}

func TestGatewayDeploymentAndService(t *testing.T) {
	_, o := load(t)
	if len(o.deployments) != 1 || len(o.services) != 1 {
		t.Fatal("no gateway Deployment/Service")
	}
	d, svc := o.deployments[0], o.services[0]
	checkPod(t, "gateway", d.Spec.Template.Spec, o)
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("gateway Service selector %s=%s does not match the pods", k, v)
		}
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("gateway Deployment selector %s=%s does not match its template", k, v)
		}
	}
	ports := map[string]bool{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = true
	}
	for _, p := range svc.Spec.Ports {
		if !ports[p.TargetPort.String()] {
			t.Errorf("gateway Service targetPort %s is not a container port", p.TargetPort.String())
		}
	}
}
