// Package deps pins the module's dependencies while the packages that use them are written.
package deps

import (
	_ "github.com/go-logr/logr"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apimachinery/pkg/api/meta"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/pod-security-admission/policy"
	_ "k8s.io/utils/ptr"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/controller-runtime/pkg/client/fake"
	_ "sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	_ "sigs.k8s.io/controller-runtime/pkg/metrics"
	_ "sigs.k8s.io/controller-runtime/pkg/log/zap"
	_ "sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	_ "sigs.k8s.io/yaml"
	_ "k8s.io/apimachinery/pkg/util/json"
	_ "github.com/evanphx/json-patch/v5"
)
