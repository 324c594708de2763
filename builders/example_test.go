package builders_test

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/convergo-dev/convergo/builders"
)

// A web application: its configuration, a Deployment that rolls when the configuration changes,
// and a Service in front of it. The objects are ready for apply.Applier or a graph.Graph.
func ExampleDeployment() {
	// In an operator these come from the custom resource being reconciled.
	name, namespace, replicas := "shop", "store", int32(2)

	labels := builders.Labels{
		Name: "web", Instance: name, Component: "frontend",
		PartOf: "store", ManagedBy: "store-operator", Version: "2.1.0",
	}
	config := builders.ConfigMap(name+"-config", namespace, labels, map[string]string{"LOG_LEVEL": "info"})
	secret := builders.Secret(name+"-db", namespace, labels, map[string]string{"password": "s3cret"})

	web := builders.Container("web", "registry.example.com/web:2.1.0",
		builders.WithPort("http", 8080),
		builders.WithEnv(
			builders.EnvFromConfigMap("LOG_LEVEL", config.Name, "LOG_LEVEL"),
			builders.EnvFromSecret("DB_PASSWORD", secret.Name, "password"),
		),
		builders.WithReadinessProbe(builders.HTTPProbe("/readyz", 8080)),
		builders.WithRequests("100m", "128Mi"),
		builders.WithLimits("", "256Mi"),
		builders.WithVolumeMount("tmp", "/tmp"), // the root filesystem is read-only
	)
	pod := builders.PodTemplate(labels, []corev1.Container{web},
		builders.WithVolumes(builders.EmptyDirVolume("tmp")),
		builders.WithRolloutOnChange(config, secret), // env vars are read once: roll on change
	)
	deploy := builders.Deployment(name, namespace, labels, pod, builders.WithReplicas(replicas))
	svc := builders.Service(name, namespace, labels, builders.WithServicePort("http", 80))

	printYAML(deploy)
	fmt.Println("---")
	printYAML(svc)
	// Output:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   labels:
	//     app.kubernetes.io/component: frontend
	//     app.kubernetes.io/instance: shop
	//     app.kubernetes.io/managed-by: store-operator
	//     app.kubernetes.io/name: web
	//     app.kubernetes.io/part-of: store
	//     app.kubernetes.io/version: 2.1.0
	//   name: shop
	//   namespace: store
	// spec:
	//   replicas: 2
	//   selector:
	//     matchLabels:
	//       app.kubernetes.io/component: frontend
	//       app.kubernetes.io/instance: shop
	//       app.kubernetes.io/name: web
	//   template:
	//     metadata:
	//       annotations:
	//         convergo.dev/config-hash: a110b2978876863d35b1e2593c048585de6bfcfd336e8af0d6c1ed9272fae73e
	//       labels:
	//         app.kubernetes.io/component: frontend
	//         app.kubernetes.io/instance: shop
	//         app.kubernetes.io/managed-by: store-operator
	//         app.kubernetes.io/name: web
	//         app.kubernetes.io/part-of: store
	//         app.kubernetes.io/version: 2.1.0
	//     spec:
	//       containers:
	//       - env:
	//         - name: LOG_LEVEL
	//           valueFrom:
	//             configMapKeyRef:
	//               key: LOG_LEVEL
	//               name: shop-config
	//         - name: DB_PASSWORD
	//           valueFrom:
	//             secretKeyRef:
	//               key: password
	//               name: shop-db
	//         image: registry.example.com/web:2.1.0
	//         name: web
	//         ports:
	//         - containerPort: 8080
	//           name: http
	//         readinessProbe:
	//           httpGet:
	//             path: /readyz
	//             port: 8080
	//         resources:
	//           limits:
	//             memory: 256Mi
	//           requests:
	//             cpu: 100m
	//             memory: 128Mi
	//         securityContext:
	//           allowPrivilegeEscalation: false
	//           capabilities:
	//             drop:
	//             - ALL
	//           readOnlyRootFilesystem: true
	//         volumeMounts:
	//         - mountPath: /tmp
	//           name: tmp
	//       securityContext:
	//         runAsNonRoot: true
	//         seccompProfile:
	//           type: RuntimeDefault
	//       volumes:
	//       - emptyDir: {}
	//         name: tmp
	// ---
	// apiVersion: v1
	// kind: Service
	// metadata:
	//   labels:
	//     app.kubernetes.io/component: frontend
	//     app.kubernetes.io/instance: shop
	//     app.kubernetes.io/managed-by: store-operator
	//     app.kubernetes.io/name: web
	//     app.kubernetes.io/part-of: store
	//     app.kubernetes.io/version: 2.1.0
	//   name: shop
	//   namespace: store
	// spec:
	//   ports:
	//   - name: http
	//     port: 80
	//     targetPort: http
	//   selector:
	//     app.kubernetes.io/component: frontend
	//     app.kubernetes.io/instance: shop
	//     app.kubernetes.io/name: web
}

// A database with one volume per replica and the headless Service that gives its pods stable
// DNS names (db-0.db.store.svc, ...).
func ExampleStatefulSet() {
	labels := builders.Labels{Name: "postgres", Instance: "db", Component: "database", ManagedBy: "store-operator"}
	postgres := builders.Container("postgres", "registry.example.com/postgres:17",
		builders.WithPort("postgres", 5432),
		builders.WithEnv(builders.EnvLiteral("PGDATA", "/var/lib/postgresql/data/pgdata")),
		builders.WithReadinessProbe(builders.ExecProbe("pg_isready")),
		builders.WithVolumeMount("data", "/var/lib/postgresql/data"),
		builders.WithVolumeMount("run", "/var/run/postgresql"),
		builders.WithVolumeMount("tmp", "/tmp"),
	)
	pod := builders.PodTemplate(labels, []corev1.Container{postgres},
		builders.WithRunAsUser(999), builders.WithRunAsGroup(999), builders.WithFSGroup(999),
		builders.WithVolumes(builders.EmptyDirVolume("run"), builders.EmptyDirVolume("tmp")),
	)
	headless := builders.Service("db", "store", labels, builders.WithHeadless(), builders.WithServicePort("postgres", 5432))
	sts := builders.StatefulSet("db", "store", labels, pod,
		builders.WithStatefulSetReplicas(3),
		builders.WithServiceName(headless.Name),
		builders.WithVolumeClaimTemplates(builders.VolumeClaim("data", "10Gi")),
	)

	fmt.Println("service clusterIP:", headless.Spec.ClusterIP)
	fmt.Println("statefulset serviceName:", sts.Spec.ServiceName, "replicas:", *sts.Spec.Replicas)
	printYAML(sts.Spec.VolumeClaimTemplates[0])
	// Output:
	// service clusterIP: None
	// statefulset serviceName: db replicas: 3
	// metadata:
	//   name: data
	// spec:
	//   accessModes:
	//   - ReadWriteOnce
	//   resources:
	//     requests:
	//       storage: 10Gi
}

// Readiness checks go to graph.Graph: graph.Add("web", deploy).ReadyWhen(builders.DeploymentAvailable).
// Here they are called on live objects as the graph would see them.
func ExampleDeploymentAvailable() {
	live := &appsv1.Deployment{}
	live.Generation = 2
	live.Spec.Replicas = ptr.To[int32](3)
	live.Status = appsv1.DeploymentStatus{ObservedGeneration: 1}
	fmt.Println(builders.DeploymentAvailable(live))

	live.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}
	fmt.Println(builders.DeploymentAvailable(live))

	live.Status.AvailableReplicas = 3
	fmt.Println(builders.DeploymentAvailable(live))
	// Output:
	// false waiting for observedGeneration 2 (at 1)
	// false 2/3 replicas available
	// true
}

// ConditionsReady works for any object that reports kstatus conditions, such as a custom resource
// of another operator read as unstructured.
func ExampleConditionsReady() {
	var widget unstructured.Unstructured
	if err := json.Unmarshal([]byte(`{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": {"name": "w", "namespace": "store", "generation": 4},
		"status": {"observedGeneration": 4, "conditions": [
			{"type": "Reconciling", "status": "True", "reason": "Progressing", "message": "creating the cache", "observedGeneration": 4},
			{"type": "Ready", "status": "False", "reason": "Progressing", "message": "creating the cache", "observedGeneration": 4}
		]}
	}`), &widget); err != nil {
		panic(err)
	}
	fmt.Println(builders.ConditionsReady(&widget))

	_ = unstructured.SetNestedSlice(widget.Object, []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled", "observedGeneration": int64(4)},
	}, "status", "conditions")
	fmt.Println(builders.ConditionsReady(&widget))
	// Output:
	// false reconciling: Progressing: creating the cache
	// true
}

// Labels: every object carries All; selectors use the stable Selector subset.
func ExampleLabels() {
	labels := builders.Labels{Name: "memcached", Instance: "cache-1", ManagedBy: "memcached-operator", Version: "1.6.38"}
	fmt.Println(labels.Selector())
	fmt.Println(labels.Validate())

	// A version taken from an image tag may not be a valid label value: check before applying.
	err := builders.Labels{Name: "memcached", Instance: "cache-1", Version: "1.6.38+build.7"}.Validate()
	fmt.Println(err != nil)
	// Output:
	// map[app.kubernetes.io/instance:cache-1 app.kubernetes.io/name:memcached]
	// <nil>
	// true
}

// A custom option is a function literal with the typed object in hand.
func ExampleContainerOption() {
	withWorkingDir := func(dir string) builders.ContainerOption {
		return func(c *corev1.Container) { c.WorkingDir = dir }
	}
	c := builders.Container("app", "registry.example.com/app:1", withWorkingDir("/srv"), builders.WithWritableRootFilesystem())
	printYAML(c)
	// Output:
	// image: registry.example.com/app:1
	// name: app
	// securityContext:
	//   allowPrivilegeEscalation: false
	//   capabilities:
	//     drop:
	//     - ALL
	// workingDir: /srv
}

// printYAML prints obj as the applier sends it: without status and without the empty structs a
// typed object carries (strategy: {}, resources: {}).
func printYAML(obj any) {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var content map[string]any
	if err := json.Unmarshal(b, &content); err != nil {
		panic(err)
	}
	delete(content, "status")
	out, err := yaml.Marshal(pruneEmpty(content))
	if err != nil {
		panic(err)
	}
	fmt.Print(string(out))
}
