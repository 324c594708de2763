package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kustomization is the subset of kustomize's Kustomization that Load understands: resources and the
// images transformer. Any other field is an error, so that a tree this package cannot render exactly is
// refused instead of being applied half-transformed.
type kustomization struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Images     []Image  `json:"images,omitempty"`
}

// Image is one entry of a kustomization's images transformer: containers whose image is Name (with any
// tag or digest) get NewName (default: Name) and NewTag or Digest.
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// Load renders the kustomize tree whose kustomization.yaml is in dir, as `kustomize build` does for the
// subset of kustomize the examples use: resources (YAML files and directories holding a
// kustomization.yaml, recursively) and images (applied to every container and init container of the
// objects of the kustomization that lists them, those of the directories it includes among them). Any
// other kustomization field is an error
// that says to use kubectl apply -k instead. Objects come out in install order (InstallOrder), each
// once: the same object twice is an error, as it is for kustomize.
func Load(dir string) ([]*unstructured.Unstructured, error) {
	objs, err := load(dir, nil)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, o := range objs {
		id := objectID(o)
		if _, dup := seen[id]; dup {
			return nil, fmt.Errorf("%s: %s appears twice: remove one of the resources that declare it", dir, id)
		}
		seen[id] = ""
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return installRank(a.GetKind()) - installRank(b.GetKind())
	})
	return objs, nil
}

// load renders dir; stack holds the directories being rendered, to refuse cycles.
func load(dir string, stack []string) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if slices.Contains(stack, abs) {
		return nil, fmt.Errorf("load %s: the kustomizations include each other (%s)", dir, strings.Join(append(stack, abs), " -> "))
	}
	stack = append(stack, abs)
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w (want a kustomize directory with a kustomization.yaml)", dir, err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w: only resources and images are supported here; render this tree with kubectl apply -k", path, err)
	}
	if len(k.Resources) == 0 {
		return nil, fmt.Errorf("%s lists no resources", path)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		if strings.Contains(r, "://") {
			return nil, fmt.Errorf("%s: remote resource %s is not supported here; render this tree with kubectl apply -k", path, r)
		}
		rp := filepath.Join(dir, r)
		info, err := os.Stat(rp)
		if err != nil {
			return nil, fmt.Errorf("%s: resource %s: %w", path, r, err)
		}
		var more []*unstructured.Unstructured
		if info.IsDir() {
			more, err = load(rp, stack)
		} else {
			more, err = readObjects(rp)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	for _, img := range k.Images {
		if img.Name == "" {
			return nil, fmt.Errorf("%s: an images entry has no name", path)
		}
		if img.NewTag != "" && img.Digest != "" {
			return nil, fmt.Errorf("%s: image %s has both newTag and digest; keep one", path, img.Name)
		}
		for _, o := range objs {
			setImages(o.Object, img)
		}
	}
	return objs, nil
}

// readObjects parses the objects of a multi-document YAML file. Every document must name its
// apiVersion, kind and name; empty documents are skipped.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: a document lacks apiVersion, kind or metadata.name", path)
		}
		out = append(out, u)
	}
}

// setImages applies img to every "image" of a container or init container list found anywhere in obj
// (a Deployment's pod template, a CronJob's job template, a Pod).
func setImages(obj any, img Image) {
	switch v := obj.(type) {
	case map[string]any:
		for key, val := range v {
			if key == "containers" || key == "initContainers" {
				if list, ok := val.([]any); ok {
					for _, c := range list {
						if cm, ok := c.(map[string]any); ok {
							if image, ok := cm["image"].(string); ok && imageName(image) == img.Name {
								cm["image"] = newImage(image, img)
							}
						}
					}
				}
				continue
			}
			setImages(val, img)
		}
	case []any:
		for _, val := range v {
			setImages(val, img)
		}
	}
}

// imageName returns an image reference without its tag or digest.
func imageName(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i:], "/") {
		ref = ref[:i]
	}
	return ref
}

// newImage returns ref transformed by img, keeping its tag or digest unless img sets one.
func newImage(ref string, img Image) string {
	name := img.Name
	if img.NewName != "" {
		name = img.NewName
	}
	suffix := strings.TrimPrefix(ref, imageName(ref))
	switch {
	case img.Digest != "":
		suffix = "@" + img.Digest
	case img.NewTag != "":
		suffix = ":" + img.NewTag
	}
	return name + suffix
}

// installOrder is kustomize's legacy order of kinds (what `kustomize build` and kubectl apply -k emit):
// namespaces and definitions first, then identities and permissions, then configuration, services and
// workloads. Other kinds come after these, in their original order.
var installOrder = []string{
	"Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
	"PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap", "Secret",
	"Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
	"Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
}

// installRank is the position of kind in installOrder, after every listed kind when it is not listed.
func installRank(kind string) int {
	if i := slices.Index(installOrder, kind); i >= 0 {
		return i
	}
	return len(installOrder)
}

// objectID names an object for messages: Kind/namespace/name or Kind/name, with its API group.
func objectID(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	kind := gvk.GroupKind().String()
	if o.GetNamespace() != "" {
		return kind + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	return kind + "/" + o.GetName()
}

// crdGroupKind is the GroupKind of CustomResourceDefinitions.
var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
