package intent

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// jsonMap parses JSON into the shape Of returns (int64 numbers).
func jsonMap(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON: %v", err)
	}
	return normaliseNumbers(m).(map[string]any)
}

func TestIntent(t *testing.T) {
	cases := map[string]struct {
		obj  client.Object
		want string
	}{
		"metadata reduced, status and creationTimestamp dropped": {
			obj: &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{
					Name: "c", Namespace: "ns", UID: "u1", ResourceVersion: "7", Generation: 3,
					CreationTimestamp: metav1.NewTime(time.Unix(100, 0)),
					Labels:            map[string]string{"a": "b"},
					Annotations:       map[string]string{HashAnnotation: "old"},
					ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "x"}},
				},
				Data: map[string]string{"k": "v", "empty": ""},
			},
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","labels":{"a":"b"}},
				"data":{"k":"v","empty":""}}`,
		},
		"deployment: empty resources and template creationTimestamp omitted, emptyDir kept": {
			obj: &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "d"},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
					Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
						MaxUnavailable: ptr.To(intstr.FromInt32(0)),
						MaxSurge:       ptr.To(intstr.FromString("25%")),
					}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
						Spec: corev1.PodSpec{
							Containers: []corev1.Container{{
								Name:      "c",
								Image:     "nginx",
								Resources: corev1.ResourceRequirements{},
								VolumeMounts: []corev1.VolumeMount{{
									Name: "tmp", MountPath: "/tmp",
								}},
							}},
							Volumes: []corev1.Volume{{
								Name:         "tmp",
								VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
							}},
						},
					},
				},
				Status: appsv1.DeploymentStatus{Replicas: 3},
			},
			want: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
				"spec":{"replicas":0,"selector":{"matchLabels":{"app":"d"}},
				  "strategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":"25%"}},
				  "template":{"metadata":{"labels":{"app":"d"}},"spec":{
				    "containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"tmp","mountPath":"/tmp"}]}],
				    "volumes":[{"name":"tmp","emptyDir":{}}]}}}}`,
		},
		"quantities, intstr and inline probe handler": {
			obj: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "c",
					Resources: corev1.ResourceRequirements{
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5")},
					},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
						PeriodSeconds: 5,
					},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				}}},
			},
			want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},
				"spec":{"containers":[{"name":"c",
				  "resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"500m"}},
				  "readinessProbe":{"httpGet":{"path":"/healthz","port":"http"},"periodSeconds":5},
				  "ports":[{"name":"http","containerPort":8080}]}]}}`,
		},
		"service: zero intstr omitted, int targetPort kept": {
			obj: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "s"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
					{Name: "a", Port: 80, TargetPort: intstr.FromInt32(8080)},
					{Name: "b", Port: 81},
				}},
			},
			want: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
				"spec":{"ports":[{"name":"a","port":80,"targetPort":8080},{"name":"b","port":81}]}}`,
		},
		"secret: data base64, stringData folded into data": {
			obj: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "s"},
				Data:       map[string][]byte{"a": []byte("x")},
				StringData: map[string]string{"b": "y"},
			},
			want: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"eA==","b":"eQ=="}}`,
		},
		"owner references and finalizers kept; omitempty false bool omitted, pointer false kept": {
			obj: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: "p", Finalizers: []string{"f"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "X", Name: "x", UID: "u", Controller: ptr.To(true)}},
				},
				Spec: corev1.PodSpec{HostNetwork: false, AutomountServiceAccountToken: ptr.To(false)},
			},
			want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","finalizers":["f"],
				"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"x","uid":"u","controller":true}]},
				"spec":{"automountServiceAccountToken":false}}`,
		},
		"unstructured: status and server metadata dropped, numbers normalised": {
			obj: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Thing",
				"metadata": map[string]any{"name": "t", "resourceVersion": "1", "creationTimestamp": nil},
				"spec":     map[string]any{"size": 3, "ratio": 1.5},
				"status":   map[string]any{"ready": true},
			}},
			want: `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t"},"spec":{"size":3,"ratio":1.5}}`,
		},
	}
	s := testScheme(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Of(tc.obj, s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonMap(t, tc.want), got); diff != "" {
				t.Errorf("intent (-want +got):\n%s", diff)
			}
			// The intent must be valid unstructured content.
			_ = runtime.DeepCopyJSON(got)
		})
	}
}

func TestIntentDoesNotModifyInput(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{HashAnnotation: "h"}}}
	before := cm.DeepCopy()
	if _, err := Of(cm, testScheme(t)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, cm); diff != "" {
		t.Errorf("input changed (-before +after):\n%s", diff)
	}
}

func TestIntentUnknownType(t *testing.T) {
	if _, err := Of(&corev1.ConfigMap{}, runtime.NewScheme()); err == nil {
		t.Fatal("want an error for a type missing from the scheme")
	}
}

func TestIntentHash(t *testing.T) {
	s := testScheme(t)
	base := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"a": "1", "b": "2"}},
			Data:       map[string]string{"x": "1", "y": "2"},
		}
	}
	hashOf := func(obj client.Object) string {
		t.Helper()
		intent, err := Of(obj, s)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Hash(intent)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	want := hashOf(base())
	for i := range 20 { // map iteration order must not matter
		if got := hashOf(base()); got != want {
			t.Fatalf("hash not stable at iteration %d: %s != %s", i, got, want)
		}
	}
	withHash := base()
	withHash.Annotations = map[string]string{HashAnnotation: "anything"}
	withServerState := base()
	withServerState.UID, withServerState.ResourceVersion = "uid", "42"
	changed := base()
	changed.Data["y"] = "3"
	removed := base()
	delete(removed.Data, "y")
	otherLabel := base()
	otherLabel.Labels["c"] = "3"
	cases := map[string]struct {
		obj  client.Object
		same bool
	}{
		"hash annotation ignored": {obj: withHash, same: true},
		"other label counted":     {obj: otherLabel, same: false},
		"server state ignored":    {obj: withServerState, same: true},
		"changed value":           {obj: changed, same: false},
		"removed field":           {obj: removed, same: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := hashOf(tc.obj) == want; got != tc.same {
				t.Errorf("same hash = %v, want %v", got, tc.same)
			}
		})
	}
}

// TestShapeHash: the annotation's value follows which keys an intent sets and its lists, items and all,
// not the values of its other scalars, for built-in kinds and for kinds without a schema alike.
func TestShapeHash(t *testing.T) {
	s := testScheme(t)
	deployment := func(mutate func(d *appsv1.Deployment)) client.Object {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"app": "web"},
				Annotations: map[string]string{HashAnnotation: "ignored"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "web", Image: "nginx:1", Args: []string{"-a", "-b"},
						Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
					}},
					Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				}},
			},
		}
		if mutate != nil {
			mutate(d)
		}
		return d
	}
	widget := func(mutate func(m map[string]any)) client.Object {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.convergo.dev/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "ns"},
			"spec": map[string]any{
				"data": map[string]any{"k": "v"}, "size": int64(1),
				"items": []any{map[string]any{"a": int64(1), "b": int64(2)}},
			},
		}}
		if mutate != nil {
			mutate(u.Object)
		}
		return u
	}
	hashOf := func(obj client.Object) string {
		t.Helper()
		intent, err := Of(obj, s)
		if err != nil {
			t.Fatal(err)
		}
		h, err := shapeHash(intent)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != shapeLen {
			t.Errorf("shape hash %q has %d hex digits, want %d", h, len(h), shapeLen)
		}
		return h
	}
	container := func(f func(c *corev1.Container)) func(d *appsv1.Deployment) {
		return func(d *appsv1.Deployment) { f(&d.Spec.Template.Spec.Containers[0]) }
	}
	cases := map[string]struct {
		base, obj client.Object
		same      bool
	}{
		"new replicas":                           {base: deployment(nil), obj: deployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](2) }), same: true},
		"new label value":                        {base: deployment(nil), obj: deployment(func(d *appsv1.Deployment) { d.Labels["app"] = "other" }), same: true},
		"the annotation itself":                  {base: deployment(nil), obj: deployment(func(d *appsv1.Deployment) { d.Annotations[HashAnnotation] = "other" }), same: true},
		"new image (inside the containers list)": {base: deployment(nil), obj: deployment(container(func(c *corev1.Container) { c.Image = "nginx:2" })), same: false},
		"other arguments":                        {base: deployment(nil), obj: deployment(container(func(c *corev1.Container) { c.Args = []string{"-c"} })), same: false},
		"removed replicas":                       {base: deployment(nil), obj: deployment(func(d *appsv1.Deployment) { d.Spec.Replicas = nil }), same: false},
		"removed label":                          {base: deployment(nil), obj: deployment(func(d *appsv1.Deployment) { d.Labels = nil }), same: false},
		"removed env var":                        {base: deployment(nil), obj: deployment(container(func(c *corev1.Container) { c.Env = c.Env[:1] })), same: false},
		"field removed from an item of an atomic list": {base: deployment(nil), obj: deployment(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Tolerations[0].Effect = ""
		}), same: false},
		"no schema, new value": {base: widget(nil), obj: widget(func(m map[string]any) {
			m["spec"].(map[string]any)["size"] = int64(2)
		}), same: true},
		"no schema, removed key": {base: widget(nil), obj: widget(func(m map[string]any) {
			delete(m["spec"].(map[string]any)["data"].(map[string]any), "k")
		}), same: false},
		"no schema, field removed from a list item": {base: widget(nil), obj: widget(func(m map[string]any) {
			m["spec"].(map[string]any)["items"] = []any{map[string]any{"a": int64(1)}}
		}), same: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := hashOf(tc.obj) == hashOf(tc.base); got != tc.same {
				t.Errorf("same shape hash = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestIsSubset(t *testing.T) {
	cases := map[string]struct {
		intent, live string
		quantities   bool // the intent of an unstructured object
		want         bool
		path         string
	}{
		"equal":                           {intent: `{"a":1}`, live: `{"a":1}`, want: true},
		"live has more fields":            {intent: `{"a":{"b":1}}`, live: `{"a":{"b":1,"c":2},"d":3}`, want: true},
		"missing field":                   {intent: `{"a":{"b":1}}`, live: `{"a":{}}`, path: ".a.b"},
		"changed scalar":                  {intent: `{"a":"x"}`, live: `{"a":"y"}`, path: ".a"},
		"int vs float":                    {intent: `{"a":1}`, live: `{"a":1.0}`, want: true},
		"float differs":                   {intent: `{"a":1.5}`, live: `{"a":1}`, path: ".a"},
		"quantity millis":                 {intent: `{"cpu":"1000m"}`, live: `{"cpu":"1"}`, quantities: true, want: true},
		"quantity binary":                 {intent: `{"m":"1024Mi"}`, live: `{"m":"1Gi"}`, quantities: true, want: true},
		"quantity differs":                {intent: `{"m":"1Gi"}`, live: `{"m":"1G"}`, quantities: true, path: ".m"},
		"only the held form matches":      {intent: `{"m":"1Gi"}`, live: `{"m":"1024Mi"}`, quantities: true, path: ".m"},
		"version-like string":             {intent: `{"v":"1.10"}`, live: `{"v":"1.1"}`, quantities: true, path: ".v"},
		"typed intent strings as written": {intent: `{"cpu":"1000m"}`, live: `{"cpu":"1"}`, path: ".cpu"},
		"number vs string":                {intent: `{"a":1}`, live: `{"a":"1"}`, path: ".a"},
		"list subsequence":                {intent: `{"l":[{"n":"a"},{"n":"c"}]}`, live: `{"l":[{"n":"a","x":1},{"n":"b"},{"n":"c"}]}`, want: true},
		"list order matters":              {intent: `{"l":["c","a"]}`, live: `{"l":["a","c"]}`, path: ".l[1]"},
		"list element missing":            {intent: `{"l":["a","z"]}`, live: `{"l":["a","b"]}`, path: ".l[1]"},
		"list vs map":                     {intent: `{"l":["a"]}`, live: `{"l":{"a":1}}`, path: ".l"},
		"bool":                            {intent: `{"b":false}`, live: `{"b":false}`, want: true},
		"bool differs":                    {intent: `{"b":false}`, live: `{"b":true}`, path: ".b"},
		"null intent, absent live":        {intent: `{"a":null}`, live: `{}`, want: true},
		"empty map intent, map live":      {intent: `{"e":{}}`, live: `{"e":{"medium":""}}`, want: true},
		"empty map intent, absent live":   {intent: `{"e":{}}`, live: `{}`, path: ".e"},
		"duplicate intent elements need":  {intent: `{"l":["a","a"]}`, live: `{"l":["a"]}`, path: ".l[1]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, path := isSubset(jsonMap(t, tc.intent), jsonMap(t, tc.live), tc.quantities)
			if got != tc.want || path != tc.path {
				t.Errorf("isSubset = %v at %q, want %v at %q", got, path, tc.want, tc.path)
			}
		})
	}
}

// FuzzIntentSubset checks the properties of the drift comparison on arbitrary JSON documents:
// a document is a subset of itself, adding live-only fields keeps it a subset, changing a leaf
// breaks it.
func FuzzIntentSubset(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":["x","y"],"d":true}}`, "extra")
	f.Add(`{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, "status")
	f.Add(`{"l":[{"k":"v"},{"k":"w"}],"q":"1Gi"}`, "z")
	f.Add(`{"n":1.5,"s":"","e":{}}`, "n2")
	f.Fuzz(func(t *testing.T, doc, extraKey string) {
		var intent map[string]any
		if err := json.Unmarshal([]byte(doc), &intent); err != nil || intent == nil {
			t.Skip()
		}
		intent = normaliseNumbers(intent).(map[string]any)
		if ok, path := isSubset(intent, intent, true); !ok {
			t.Fatalf("document is not a subset of itself (at %s): %s", path, doc)
		}
		live := runtime.DeepCopyJSON(intent)
		if _, exists := live[extraKey]; !exists {
			live[extraKey] = map[string]any{"added": "by the server"}
			if ok, path := isSubset(intent, live, true); !ok {
				t.Fatalf("adding live-only field %q breaks the subset (at %s): %s", extraKey, path, doc)
			}
		}
		changed := runtime.DeepCopyJSON(intent)
		if changeLeaf(changed) {
			if ok, _ := isSubset(intent, changed, true); ok {
				t.Fatalf("changing a leaf keeps the subset: %s", doc)
			}
		}
	})
}

// changeLeaf changes the first leaf found in a deterministic walk (sorted keys) to a value of
// another type, which can never compare equal. It reports whether it found a leaf.
func changeLeaf(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch e := v[k].(type) {
			case map[string]any, []any:
				if changeLeaf(e) {
					return true
				}
			default:
				v[k] = []any{"changed"}
				return true
			}
		}
	case []any:
		// Only a single-element list guarantees that a changed element cannot match another one.
		if len(v) == 1 {
			switch e := v[0].(type) {
			case map[string]any, []any:
				return changeLeaf(e)
			default:
				v[0] = map[string]any{"changed": true}
				return true
			}
		}
	}
	return false
}

// Types for TestEncodeStructFields: every way encodeFields treats a struct field.
type encEmbedded struct {
	A string `json:"a,omitempty"`
}

type encStamp struct{ s string }

func (e encStamp) MarshalJSON() ([]byte, error) { return []byte(`"stamp-` + e.s + `"`), nil }

type encFields struct {
	encEmbedded                  // embedded: its fields are ours
	*encPointed `json:",inline"` // inlined through a pointer: nothing when nil
	Stamp       *encStamp        `json:",inline"` // inline, but with its own encoding: a field
	Skipped     string           `json:"-"`
	hidden      string
	NoTag       int
	Zero        int    `json:"zero,omitempty"`
	Kept        int    `json:"kept"`
	Empty       string `json:"empty,omitzero"`
}

type encPointed struct {
	B string `json:"b"`
}

// TestEncodeStructFields: embedded and inlined structs (through a pointer too), a field inlined that
// has its own encoding, skipped, unexported, untagged and omitempty fields.
func TestEncodeStructFields(t *testing.T) {
	tests := []struct {
		name string
		in   encFields
		want any
	}{
		{name: "nil inlined pointers", in: encFields{encEmbedded: encEmbedded{A: "a"}, Skipped: "x", hidden: "y", NoTag: 1},
			want: map[string]any{"a": "a", "NoTag": int64(1), "kept": int64(0)}},
		{name: "inlined pointers set", in: encFields{encPointed: &encPointed{B: "b"}, Stamp: &encStamp{s: "1"}, Zero: 2, Empty: "e"},
			want: map[string]any{"b": "b", "Stamp": "stamp-1", "NoTag": int64(0), "zero": int64(2), "kept": int64(0), "empty": "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := encodeStruct(reflect.ValueOf(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("encodeStruct (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeErrorNamesThePath: an encoding error names the field it is about, built on the way back
// up, through struct fields, map keys and list elements.
func TestEncodeErrorNamesThePath(t *testing.T) {
	type leaf struct {
		C chan int `json:"c"`
	}
	type holder struct {
		Items []map[string]leaf `json:"items"`
	}
	in := holder{Items: []map[string]leaf{{}, {"k": {C: make(chan int)}}}}
	_, _, err := encodeStruct(reflect.ValueOf(in))
	want := ".items[1].k.c: unsupported type chan int"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}
